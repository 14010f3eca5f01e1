//! Running a peer tool: found on `PATH` (or named with the Debian package that provides it),
//! started in its own process group, its stdout and stderr captured through pipes (no
//! temporary file), and waited for with a deadline. On the deadline or Ctrl-C the whole group
//! is killed, then reaped; nothing of it outlives the call.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A tool osprim compares with, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The executable's name.
    pub program: &'static str,
    /// The Debian package.
    pub package: &'static str,
}

/// `perf`.
pub const PERF: Tool = Tool { program: "perf", package: "linux-perf" };
/// `cyclictest`.
pub const CYCLICTEST: Tool = Tool { program: "cyclictest", package: "rt-tests" };
/// `taskset`, which pins each peer.
pub const TASKSET: Tool = Tool { program: "taskset", package: "util-linux" };

/// The executable `program` on the search path `path` (a `PATH` value), if any.
pub fn find_in(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The tool's path on `PATH`, or a line naming the package that provides it.
pub fn locate(tool: Tool, path: Option<&std::ffi::OsStr>) -> Result<PathBuf, String> {
    find_in(tool.program, path)
        .ok_or_else(|| format!("{} is not installed (Debian package {})", tool.program, tool.package))
}

/// Why a peer gave no output to read.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started.
    #[error("cannot start {0}: {1}")]
    Start(String, std::io::Error),
    /// It outlasted its deadline and was killed.
    #[error("{0} took longer than {1} s and was stopped")]
    Deadline(String, u64),
    /// Ctrl-C: it was stopped.
    #[error("{0} was stopped by Ctrl-C")]
    Interrupted(String),
}

/// What a finished peer printed.
#[derive(Debug, Clone)]
pub struct Output {
    /// stdout then stderr.
    pub text: String,
    /// The exit status (`None`: killed by a signal).
    pub status: Option<i32>,
}

/// Runs `program args…` pinned to `cpu` through `taskset -c cpu`, with a deadline.
pub fn run_pinned(
    taskset: &Path,
    cpu: usize,
    program: &Path,
    args: &[String],
    deadline: Duration,
    interrupt: &AtomicBool,
) -> Result<Output, RunError> {
    let mut cmd = Command::new(taskset);
    cmd.arg("-c").arg(cpu.to_string()).arg(program).args(args);
    run(cmd, deadline, interrupt)
}

/// Runs `cmd` in a new process group, capturing stdout and stderr, until it ends, the
/// deadline passes or `interrupt` is set (then the group is killed and reaped).
pub fn run(mut cmd: Command, deadline: Duration, interrupt: &AtomicBool) -> Result<Output, RunError> {
    use std::os::unix::process::CommandExt;
    let name = format!("{:?}", cmd.get_program()).trim_matches('"').to_string()
        + &cmd.get_args().map(|a| format!(" {}", a.to_string_lossy())).collect::<String>();
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| RunError::Start(name.clone(), e))?;
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let readers = [child.stdout.take().map(reader), child.stderr.take().map(reader)];
    // The waiter reaps the child; this thread wakes every 100 ms at most, so the peer on its
    // CPU is hardly disturbed.
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let began = Instant::now();
    let mut stopped = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(status) => break status.ok(),
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let late = began.elapsed() > deadline;
        if stopped.is_none() && (late || interrupt.load(Ordering::Relaxed)) {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            stopped = Some(if late {
                RunError::Deadline(name.clone(), deadline.as_secs())
            } else {
                RunError::Interrupted(name.clone())
            });
        }
    };
    let _ = waiter.join();
    // A grandchild left behind may hold the pipes open: kill the group before reading on
    // (its leader's pid stays reserved while the group has members; an empty group: ESRCH).
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    let text: String = readers.into_iter().flatten().map(|r| r.join().unwrap_or_default()).collect();
    match stopped {
        Some(e) => Err(e),
        None => Ok(Output { text, status: status.and_then(|s| s.code()) }),
    }
}

fn reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_tool_is_named_with_its_package() {
        let empty = tempfile::tempdir().unwrap();
        let path = std::ffi::OsString::from(empty.path());
        assert_eq!(locate(PERF, Some(&path)).unwrap_err(), "perf is not installed (Debian package linux-perf)");
        assert_eq!(
            locate(CYCLICTEST, Some(&path)).unwrap_err(),
            "cyclictest is not installed (Debian package rt-tests)"
        );
        assert!(locate(PERF, None).is_err());
        assert!(find_in("sh", Some(std::ffi::OsStr::new("/usr/bin:/bin"))).is_some());
    }

    #[test]
    fn output_is_captured_and_a_deadline_kills_the_group() {
        let never = AtomicBool::new(false);
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let out = run(cmd, Duration::from_secs(10), &never).unwrap();
        assert_eq!((out.text.as_str(), out.status), ("out\nerr\n", Some(3)));
        // A grandchild holding the pipe open must die with the group, or this would hang.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let began = Instant::now();
        assert!(matches!(run(cmd, Duration::from_millis(300), &never), Err(RunError::Deadline(..))));
        assert!(began.elapsed() < Duration::from_secs(10));
        let stop = AtomicBool::new(true);
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        assert!(matches!(run(cmd, Duration::from_secs(60), &stop), Err(RunError::Interrupted(..))));
    }
}
