//! Helper programs started with `exec` (osprim's own helper executable, for the benchmarks that
//! need a fresh process or one started with `LD_PRELOAD`): the guard that kills and reaps them,
//! and reads of their replies that give up at a deadline.
//!
//! A [`Helper`] is spawned through `std::process::Command` with stdin and stdout piped and
//! stderr discarded. Between `fork` and `exec` the child asks to be killed when its parent
//! thread dies (`PR_SET_PDEATHSIG`), leaves at once if the parent is already gone, and ignores
//! Ctrl-C (osprim handles it and kills its helpers), as [`super::process::fork_peer`]'s
//! children do. Dropping the guard kills (`SIGKILL`) and reaps the child unless it was
//! already reaped; [`Helper::finish`] waits for it to leave by itself, with a deadline. Both
//! go through [`crate::reap`], the one reaper (never `std`'s `Child::wait`).
//!
//! # Safety
//! The `pre_exec` hook runs in the forked child of a process that may have other threads, so
//! it calls only async-signal-safe functions (`prctl`, `getppid`, `signal`, `_exit`).
#![allow(unsafe_code)]

use crate::reap::{self, Reaped};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running helper program; killed and reaped on drop.
pub struct Helper {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    reaped: bool,
    buffered: Vec<u8>,
}

/// How many times a spawn is retried when the executable is busy (`ETXTBSY`): another thread
/// forked while the file was open for writing, and its child still holds the descriptor.
const BUSY_RETRIES: u32 = 100;

impl Helper {
    /// Starts `cmd` (stdin and stdout piped, stderr discarded).
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Helper> {
        let parent = std::process::id() as libc::pid_t;
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        // SAFETY: the hook calls only async-signal-safe functions (module doc).
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                let _ = crate::disposition::ignore(libc::SIGINT);
                Ok(())
            })
        };
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < BUSY_RETRIES => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other?,
            }
        };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            reap::kill_and_reap(child.id() as libc::pid_t);
            return Err(std::io::Error::other("the helper's pipes were not set up"));
        };
        Ok(Helper { child, stdin: Some(stdin), stdout, reaped: false, buffered: Vec::new() })
    }

    /// The helper's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` to the helper's stdin.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.stdin {
            Some(s) => s.write_all(bytes),
            None => Err(std::io::Error::other("the helper's stdin is closed")),
        }
    }

    /// Waits until stdout is readable or `deadline` passes.
    fn wait_readable(&self, deadline: Instant) -> std::io::Result<()> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the helper did not answer in time"));
            }
            let ms = PollTimeout::try_from(left.as_millis().clamp(1, 60_000) as i32).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(self.stdout.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, ms) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads exactly `buf.len()` bytes from the helper's stdout, giving up at `deadline`.
    pub fn recv_exact(&mut self, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
        let mut got = self.buffered.len().min(buf.len());
        buf[..got].copy_from_slice(&self.buffered[..got]);
        self.buffered.drain(..got);
        while got < buf.len() {
            self.wait_readable(deadline)?;
            match self.stdout.read(&mut buf[got..]) {
                Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the helper ended")),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reads one line (without its `\n`) from the helper's stdout, giving up at `deadline`.
    pub fn recv_line(&mut self, deadline: Instant) -> std::io::Result<String> {
        loop {
            if let Some(end) = self.buffered.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffered.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            if self.buffered.len() > 64 * 1024 {
                return Err(std::io::Error::other("the helper's line is too long"));
            }
            self.wait_readable(deadline)?;
            let mut chunk = [0u8; 512];
            match self.stdout.read(&mut chunk) {
                Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the helper ended")),
                Ok(n) => self.buffered.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Closes stdin, waits up to `timeout` for the helper to leave by itself, then kills it;
    /// reaps it either way ([`reap::reap_by`]), and says how it ended.
    pub fn finish(mut self, timeout: Duration) -> Reaped {
        self.stdin = None;
        self.reaped = true;
        reap::reap_by(self.pid() as libc::pid_t, Instant::now() + timeout)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        if !self.reaped {
            // Our own unreaped child: its pid cannot have been reused.
            reap::kill_and_reap(self.pid() as libc::pid_t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_answers_and_is_reaped() {
        let _serial = crate::testing::serial(); // a fork disturbs fault counting
        let mut h = Helper::spawn(Command::new("cat").arg("-u")).expect("spawn cat");
        h.send(b"hello\nab").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        assert_eq!(h.recv_line(deadline).unwrap(), "hello");
        let mut two = [0u8; 2];
        h.recv_exact(&mut two, deadline).unwrap();
        assert_eq!(&two, b"ab");
        assert!(h.finish(Duration::from_secs(5)).success());
    }

    #[test]
    fn a_silent_helper_times_out_and_is_killed_on_drop() {
        let _serial = crate::testing::serial(); // a fork disturbs fault counting
        let mut h = Helper::spawn(Command::new("sleep").arg("30")).expect("spawn sleep");
        let pid = h.pid();
        let mut b = [0u8; 1];
        let e = h.recv_exact(&mut b, Instant::now() + Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        drop(h);
        assert!(reap::is_gone(pid as libc::pid_t), "reaped: no longer our child");
    }
}
