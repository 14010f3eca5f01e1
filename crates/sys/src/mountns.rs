//! A file system of osprim's own, mounted in a private mount namespace that no other process
//! sees: how osprim reads kernel tracepoints on a machine where tracefs is not mounted
//! ([`super::tracefs::Tracefs::open`]).
//!
//! **How.** [`PrivateMount::new`] forks a helper child, which asks to die with the thread that
//! forked it (`PR_SET_PDEATHSIG` = `SIGKILL`), ignores Ctrl-C (osprim handles it and ends the
//! helper itself), then `unshare(CLONE_NEWNS)` — a new mount namespace, a copy of osprim's —
//! makes every mount of that copy private (`MS_REC | MS_PRIVATE` on `/`, so that nothing
//! mounted in it propagates back to the namespace it was copied from), mounts the file system
//! with no options on a directory of that copy (`/sys/kernel/tracing`, tracefs's own place,
//! empty where tracefs is not mounted), says so through a pipe, and waits in `pause`. The
//! helper is forked rather than the calling process unshared because `unshare(CLONE_NEWNS)`
//! fails (`EINVAL`) in a process whose threads share its file-system context (`CLONE_FS`), as
//! every osprim process with more than one thread does; a forked child has one thread.
//! osprim reaches the mount through the helper's root, `/proc/<helper>/root/<directory>`
//! (proc(5): a path under it is resolved in the helper's mount namespace), which needs the
//! right to inspect the helper (root, osprim's own child).
//!
//! **Nothing left behind, nothing changed outside.** The mount exists only in the helper's
//! namespace: the machine's mount table (`/proc/self/mountinfo` of any other process) never
//! shows it, and the directory it covers is unchanged outside. Dropping the
//! [`PrivateMount`] kills and reaps the helper ([`crate::process::Child`]); its namespace ends
//! with its last process, and the kernel unmounts everything in it. If osprim is killed, the
//! helper dies with it (`PR_SET_PDEATHSIG`), with the same effect. No directory is created.
//! What the mounted file system itself holds is global kernel state, though: tracefs has one
//! superblock, so a trace instance made through a private mount is the kernel's, and
//! [`super::tracefs::Instance`] removes its own (see there).
//!
//! **Unprivileged.** `unshare(CLONE_NEWNS)` and `mount` need `CAP_SYS_ADMIN`; without it the
//! error says so, and the caller goes on without the mount.
//!
//! # Safety
//! The helper is forked from a process that may have other threads, so the child calls only
//! async-signal-safe functions (`prctl`, `getppid`, `sigaction`, `unshare`, `mount`, `write`,
//! `pause`, `_exit`) on data prepared before the fork, and never returns into the parent's code.
#![allow(unsafe_code)]

use crate::process::{self, Child};
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the helper may take to mount and report.
const READY_DEADLINE: Duration = Duration::from_secs(5);

/// A file system mounted in a helper's private mount namespace; unmounted (the helper ended)
/// on drop (module doc).
#[derive(Debug)]
pub struct PrivateMount {
    child: Child,
    root: PathBuf,
}

/// The steps of the helper, as it reports a failure.
const STEPS: [&str; 4] =
    ["", "unshare(CLONE_NEWNS)", "making the new namespace's mounts private (mount / MS_REC|MS_PRIVATE)", "mount"];

impl PrivateMount {
    /// Mounts `fstype` (source name `fstype`, no options, `nosuid,nodev,noexec`) on `target`, an
    /// existing directory, in a private mount namespace of a helper child; fails with the
    /// reason (the step and its error; a missing privilege named as such).
    pub fn new(fstype: &str, target: &Path) -> Result<PrivateMount, String> {
        if !target.is_dir() {
            return Err(format!("{} is not a directory to mount {fstype} on", target.display()));
        }
        let c = |s: &str| CString::new(s).map_err(|_| format!("a NUL byte in '{s}'"));
        let fs = c(fstype)?;
        let dir = c(target.to_str().ok_or_else(|| format!("{} is not UTF-8", target.display()))?)?;
        let slash = c("/")?;
        let (ready_r, ready_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe for the mount helper: {e}"))?;
        let report = ready_w.as_raw_fd();
        let parent = std::process::id() as libc::pid_t;
        let body = || {
            // SAFETY: async-signal-safe calls only (module doc), on C strings and a pipe made
            // before the fork, and on this frame's two-word message.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                let say = |step: i32, errno: i32| {
                    let msg = [step, errno];
                    libc::write(report, msg.as_ptr().cast(), std::mem::size_of_val(&msg));
                };
                let fail = |step: i32| {
                    say(step, *libc::__errno_location());
                    libc::_exit(2)
                };
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    fail(1);
                }
                let none = std::ptr::null();
                if libc::mount(none, slash.as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0 {
                    fail(2);
                }
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                if libc::mount(fs.as_ptr(), dir.as_ptr(), fs.as_ptr(), flags, std::ptr::null()) != 0 {
                    fail(3);
                }
                say(0, 0);
                loop {
                    libc::pause();
                }
            }
        };
        // SAFETY: the child calls only async-signal-safe functions and never returns (above);
        // it asks for PR_SET_PDEATHSIG itself.
        let child = unsafe { process::fork_survivor(body) }.map_err(|e| format!("fork the mount helper: {e}"))?;
        drop(ready_w);
        let (step, errno) = read_report(&ready_r, Instant::now() + READY_DEADLINE)?;
        if step != 0 {
            let e = std::io::Error::from_raw_os_error(errno);
            let step_name = STEPS.get(step as usize).copied().unwrap_or("an unknown step");
            let hint = match errno {
                libc::EPERM => " (a private mount namespace and a mount need root: CAP_SYS_ADMIN)",
                libc::ENODEV if step == 3 => " (this kernel has no such file system)",
                _ => "",
            };
            let what = if step == 3 { format!("mount -t {fstype} on {}", target.display()) } else { step_name.into() };
            return Err(format!("{what}: {e}{hint}"));
        }
        let root = Path::new(&format!("/proc/{}/root", child.pid())).join(target.strip_prefix("/").unwrap_or(target));
        Ok(PrivateMount { child, root })
    }

    /// The mount's root as osprim reaches it: `/proc/<helper>/root/<target>`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The helper's pid (its mount namespace is `/proc/<pid>/ns/mnt`).
    pub fn pid(&self) -> i32 {
        self.child.pid()
    }
}

/// The helper's report, two native-endian `i32`s (step, errno), read before `deadline`.
fn read_report(fd: &impl AsFd, deadline: Instant) -> Result<(i32, i32), String> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("the mount helper did not report within {READY_DEADLINE:?}"));
        }
        let ms = PollTimeout::try_from(left.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, ms) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(format!("waiting for the mount helper: {e}")),
        }
        match nix::unistd::read(fd, &mut buf[got..]) {
            Ok(0) => return Err("the mount helper ended without a report".into()),
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(format!("reading the mount helper's report: {e}")),
        }
    }
    let word = |i: usize| i32::from_ne_bytes(buf[i..i + 4].try_into().unwrap_or_default());
    Ok((word(0), word(4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracefs_lines() -> usize {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" - tracefs "))
            .count()
    }

    /// Where root may mount: the mount is seen through the helper, never in this process's
    /// mount table, and the helper is gone after the drop. Otherwise the reason is printed.
    #[test]
    fn a_private_mount_is_invisible_outside_and_ends_with_its_guard() {
        let _s = crate::testing::serial();
        let before = tracefs_lines();
        let target = Path::new("/sys/kernel/tracing");
        let m = match PrivateMount::new("tracefs", target) {
            Ok(m) => m,
            Err(why) => {
                eprintln!("no private tracefs here: {why}");
                return;
            }
        };
        let pid = m.pid();
        assert!(m.root().join("trace_clock").is_file(), "{}", m.root().display());
        assert_eq!(tracefs_lines(), before, "the mount is not in this process's mount table");
        let theirs = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
        assert!(theirs.lines().any(|l| l.contains(" - tracefs ")), "the helper's namespace has it");
        let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/mnt")).unwrap();
        assert_ne!(ns(&pid.to_string()), ns("self"), "a namespace of its own");
        drop(m);
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the helper is reaped");
        assert_eq!(tracefs_lines(), before);
    }

    #[test]
    fn a_missing_target_is_refused_with_the_reason() {
        let err = PrivateMount::new("tracefs", Path::new("/nonexistent/osprim-target")).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
    }
}
