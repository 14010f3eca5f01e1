//! The run's side of a worker: start it, hand it its round, read its reports with deadlines,
//! pass on a signal, and kill and reap it in every case ([`Worker`]'s `Drop`).

use super::layout::Layout;
use super::protocol::{self, Report, Request};
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use sys::reap::Reaped;

/// How to start a worker: a program and its arguments (osprim's own binary and
/// [`super::WORKER_ARG`]; tests use a script that plays a worker).
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Launcher {
    /// osprim's own binary as a worker, or why it cannot be found.
    pub fn current() -> std::io::Result<Launcher> {
        let program = std::env::current_exe()?;
        Ok(Launcher { program, args: vec![super::WORKER_ARG.into()] })
    }
}

/// The longest report line read (an outcome with every sample of a long round fits many
/// times).
const MAX_LINE: usize = 256 << 20;

/// What reading a worker gave.
#[derive(Debug)]
pub enum Event {
    /// A report.
    Report(Report),
    /// A line that is not a report (what went wrong reading it).
    Unreadable(String),
    /// Nothing within the wait.
    Quiet,
    /// The worker ended (its stdout closed, or the process is gone) and every line it wrote
    /// was read.
    Ended,
}

/// A running worker; killed (`SIGKILL`) and reaped on drop if it is still there.
pub struct Worker {
    child: Child,
    stdout: ChildStdout,
    buffered: Vec<u8>,
    /// Where its stderr goes: a file without a name in the run's scratch directory
    /// (`O_TMPFILE`), gone with its last descriptor.
    stderr: std::fs::File,
    /// Writes the request to its stdin (a thread, so a large request never blocks the run).
    writer: Option<std::thread::JoinHandle<()>>,
    status: Option<Reaped>,
    /// Reaped (here, or by a second signal's clean-up).
    reaped: bool,
    eof: bool,
}

impl Worker {
    /// Starts a worker with `layout`, its stderr in `scratch`, and hands it `request`.
    pub fn start(launcher: &Launcher, layout: &Layout, scratch: &Path, request: &Request) -> std::io::Result<Worker> {
        let line = serde_json::to_vec(request).map_err(std::io::Error::other)?;
        let stderr = tempfile::tempfile_in(scratch)?;
        let err_file = stderr.try_clone()?;
        let mut cmd = Command::new(&launcher.program);
        cmd.args(&launcher.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(err_file);
        for (k, v) in layout.env() {
            cmd.env(k, v);
        }
        sys::worker::worker_command(&mut cmd);
        let mut child = platform::interrupt::spawn_worker(&mut cmd)?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            sys::reap::kill_and_reap(child.id() as libc::pid_t);
            platform::interrupt::forget_worker(child.id());
            return Err(std::io::Error::other("the worker's pipes were not set up"));
        };
        let writer = std::thread::Builder::new().name("osprim-request".into()).spawn(move || {
            use std::io::Write;
            // A worker that is gone makes this fail (EPIPE): its end is read elsewhere.
            let _ = stdin.write_all(&line);
        });
        let mut w = Worker {
            child,
            stdout,
            buffered: Vec::new(),
            stderr,
            writer: None,
            status: None,
            reaped: false,
            eof: false,
        };
        w.writer = Some(writer?);
        Ok(w)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its process id, as the system calls take it. It is reaped through `sys::reap` alone
    /// (never through `std`'s `Child`), so this pid stays ours until then.
    fn pid_t(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Sends it `signal` (the run was asked to stop).
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        if self.status.is_none()
            && let Ok(pid) = i32::try_from(self.child.id())
        {
            // Our own unreaped child: its pid cannot have been reused.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
        }
    }

    /// The next event, waiting at most `wait`.
    pub fn next(&mut self, wait: Duration) -> Event {
        let until = Instant::now() + wait;
        loop {
            if let Some(end) = self.buffered.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffered.drain(..=end).collect();
                return match protocol::decode(&line[..end]) {
                    Ok(r) => Event::Report(r),
                    Err(e) => Event::Unreadable(e.to_string()),
                };
            }
            if self.eof {
                return Event::Ended;
            }
            if self.buffered.len() > MAX_LINE {
                self.buffered.clear();
                return Event::Unreadable(format!("a line longer than {} MiB", MAX_LINE >> 20));
            }
            // Once the worker is gone, what is left in the pipe is read without waiting (a
            // process it started may hold the pipe open after it).
            if self.status.is_none() {
                self.status = sys::reap::try_wait(self.pid_t()).ok().flatten().map(|s| Reaped::from_status(s, false));
            }
            let gone = self.status.is_some();
            let left = until.saturating_duration_since(Instant::now());
            let ms = if gone { 0 } else { left.as_millis().clamp(1, 50) as u16 };
            match self.read_some(ms) {
                Ok(true) => continue,
                Ok(false) if gone => {
                    self.eof = true;
                }
                Ok(false) => {
                    if Instant::now() >= until {
                        return Event::Quiet;
                    }
                }
                Err(_) => self.eof = true,
            }
        }
    }

    /// Reads what is there within `ms` ms: whether something (or the end) came.
    fn read_some(&mut self, ms: u16) -> std::io::Result<bool> {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let mut fds = [PollFd::new(self.stdout.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(false),
            Ok(_) => {}
            Err(e) => return Err(e.into()),
        }
        let mut chunk = vec![0u8; 64 * 1024];
        match self.stdout.read(&mut chunk) {
            Ok(0) => {
                self.eof = true;
                Ok(true)
            }
            Ok(n) => {
                self.buffered.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Waits up to `grace` for it to leave by itself, then kills it; reaps it either way.
    pub fn finish(mut self, grace: Duration) -> Ended {
        // Reaped elsewhere (a second signal's clean-up): how it ended is not known here.
        let status = self
            .status
            .or_else(|| Some(sys::reap::reap_by(self.pid_t(), Instant::now() + grace)))
            .filter(|r| !matches!(r, Reaped::Lost(_)));
        let killed = matches!(status, Some(Reaped::Signaled { killed: true, .. }));
        self.status = status;
        self.reaped = true;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let stderr = read_tail(&mut self.stderr);
        let last = String::from_utf8_lossy(&stderr).lines().rev().find(|l| !l.trim().is_empty()).map(|l| {
            let l = l.trim();
            l.strip_prefix("error: ").unwrap_or(l).chars().take(300).collect::<String>()
        });
        Ended {
            status: status.map_or_else(|| "unknown".to_string(), describe),
            clean: !killed && status.is_some_and(|s| s.success()),
            killed,
            stderr: last,
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.reaped && self.status.is_none() {
            // Our own unreaped child: its pid cannot have been reused.
            sys::reap::kill_and_reap(self.pid_t());
        }
        platform::interrupt::forget_worker(self.child.id());
    }
}

/// The last 4 KiB a worker wrote to its stderr.
fn read_tail(file: &mut std::fs::File) -> Vec<u8> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata().map_or(0, |m| m.len());
    let mut tail = Vec::new();
    if file.seek(SeekFrom::Start(len.saturating_sub(4096))).is_ok() {
        let _ = file.by_ref().take(4096).read_to_end(&mut tail);
    }
    tail
}

/// How a worker ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    /// `exit 0`, `killed by signal 9 (SIGKILL)`, ….
    pub status: String,
    /// It exited 0 by itself.
    pub clean: bool,
    /// The run killed it (it did not leave within its grace).
    pub killed: bool,
    /// The last line it wrote to stderr, if any.
    pub stderr: Option<String>,
}

/// `exit N` or `killed by signal N (SIGNAME)`.
pub fn describe(status: Reaped) -> String {
    match status {
        Reaped::Exited(c) => format!("exit {c}"),
        Reaped::Signaled { signal: s, .. } => match nix::sys::signal::Signal::try_from(s) {
            Ok(sig) => format!("killed by signal {s} ({sig})"),
            Err(_) => format!("killed by signal {s}"),
        },
        Reaped::Lost(_) => "ended".to_string(),
    }
}
