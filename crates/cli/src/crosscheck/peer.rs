//! Running a peer tool: found on `PATH` (or named with the Debian package that provides it),
//! started in its own process group, its stdout and stderr captured through pipes (no
//! temporary file, at most [`KEEP`] bytes), and waited for with a deadline. On the deadline,
//! Ctrl-C or a flood the group is told to stop, then killed and the peer reaped; nothing of its
//! group outlives the call, and a process it moved out of its group cannot keep osprim waiting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Ctrl-C (or another ending signal): it was stopped.
    #[error("{0} was stopped by Ctrl-C")]
    Interrupted(String),
    /// It printed more than [`KEEP`] bytes, and was stopped.
    #[error("{0} printed more than {1} KiB and was stopped (osprim keeps at most that much of a peer's output)")]
    Flood(String, usize),
}

/// What a finished peer printed.
#[derive(Debug, Clone)]
pub struct Output {
    /// stdout then stderr.
    pub text: String,
    /// The exit status (`None`: killed by a signal).
    pub status: Option<i32>,
}

/// The most of a peer's output kept (stdout and stderr together): a peer that prints more is
/// stopped (the figures osprim reads are a few lines).
pub const KEEP: usize = 1 << 20;

/// How long the pipes are read on after the peer itself exited: a process it left behind
/// outside its group (`setsid`) may hold them open for ever.
const AFTER_EXIT: Duration = Duration::from_millis(500);

/// How long a peer told to stop (SIGINT, as Ctrl-C would; cyclictest cleans up on it) has
/// before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

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

/// Runs `cmd` in a new process group, capturing stdout and stderr (at most [`KEEP`] bytes),
/// until it ends, the deadline passes, `interrupt` is set or it floods its pipes; then the
/// group is told to stop (SIGINT), killed after a grace period, and the peer reaped. The pipes
/// are never waited on without a deadline: once the peer exited, they are read for
/// [`AFTER_EXIT`] at most (a `setsid` grandchild holding them open is left to itself). A
/// `/dev/shm/cyclictest<pid>` the peer left is removed (see [`remove_shm_leftover`]).
pub fn run(mut cmd: Command, deadline: Duration, interrupt: &AtomicBool) -> Result<Output, RunError> {
    use std::os::unix::process::CommandExt;
    let name = format!("{:?}", cmd.get_program()).trim_matches('"').to_string()
        + &cmd.get_args().map(|a| format!(" {}", a.to_string_lossy())).collect::<String>();
    cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| RunError::Start(name.clone(), e))?;
    let pid = Pid::from_raw(child.id() as i32);
    let mut pipes = Pipes::new(child.stdout.take(), child.stderr.take());
    let began = Instant::now();
    let mut exited: Option<Instant> = None;
    let mut stopped = None;
    loop {
        if exited.is_none() && has_exited(pid) {
            // The leader is a zombie, not yet reaped: its pid (the group's id) cannot be reused,
            // so what is left of its group can be killed safely.
            let _ = killpg(pid, Signal::SIGKILL);
            exited = Some(Instant::now());
        }
        if pipes.closed() || exited.is_some_and(|t| t.elapsed() > AFTER_EXIT) {
            break;
        }
        if exited.is_none() {
            let why = if interrupt.load(Ordering::Relaxed) {
                Some(RunError::Interrupted(name.clone()))
            } else if began.elapsed() > deadline {
                Some(RunError::Deadline(name.clone(), deadline.as_secs()))
            } else if pipes.kept >= KEEP {
                Some(RunError::Flood(name.clone(), KEEP / 1024))
            } else {
                None
            };
            if let Some(why) = why {
                stopped = Some(why);
                stop(pid);
                break;
            }
        }
        // Wakes every 100 ms at most, so the peer on its CPU is hardly disturbed.
        pipes.read_some(Duration::from_millis(100));
    }
    let status = child.wait().ok();
    remove_shm_leftover(pid.as_raw() as u32);
    match stopped {
        Some(e) => Err(e),
        None => {
            let text = String::from_utf8_lossy(&pipes.out).into_owned() + &String::from_utf8_lossy(&pipes.err);
            Ok(Output { text, status: status.and_then(|s| s.code()) })
        }
    }
}

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Whether the child `pid` has exited (left unreaped: `WNOWAIT`).
fn has_exited(pid: Pid) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        Err(nix::errno::Errno::EINTR) => false,
        // ECHILD: not our child any more (reaped): it has exited.
        Err(_) => true,
    }
}

/// Stops the group led by `pid` (an unreaped child): SIGINT first, as Ctrl-C would, so that a
/// peer cleans up (cyclictest removes its shared memory); SIGKILL after [`STOP_GRACE`], or at
/// once once the leader is gone. Leaves the leader unreaped.
fn stop(pid: Pid) {
    let _ = killpg(pid, Signal::SIGINT);
    let asked = Instant::now();
    while !has_exited(pid) && asked.elapsed() < STOP_GRACE {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(pid, Signal::SIGKILL);
}

/// Removes `/dev/shm/cyclictest<pid>`, which cyclictest killed before its clean-up leaves:
/// only that exact name for the pid osprim started, only a regular file (never through a
/// symbolic link) owned by this user.
pub fn remove_shm_leftover(pid: u32) {
    use std::os::unix::fs::MetadataExt;
    let path = PathBuf::from(format!("/dev/shm/cyclictest{pid}"));
    if let Ok(meta) = std::fs::symlink_metadata(&path)
        && meta.file_type().is_file()
        && std::fs::metadata("/proc/self").is_ok_and(|me| me.uid() == meta.uid())
    {
        let _ = std::fs::remove_file(&path);
    }
}

/// A peer's stdout and stderr, read with a deadline.
struct Pipes {
    fds: [Option<std::os::fd::OwnedFd>; 2],
    out: Vec<u8>,
    err: Vec<u8>,
    /// Bytes kept, both together.
    kept: usize,
}

impl Pipes {
    fn new(out: Option<std::process::ChildStdout>, err: Option<std::process::ChildStderr>) -> Pipes {
        Pipes { fds: [out.map(Into::into), err.map(Into::into)], out: Vec::new(), err: Vec::new(), kept: 0 }
    }

    fn closed(&self) -> bool {
        self.fds.iter().all(Option::is_none)
    }

    /// Waits up to `wait` for output and reads what there is (once per ready pipe), up to
    /// [`KEEP`] bytes in all; beyond, the pipes are still drained, what they hold dropped.
    fn read_some(&mut self, wait: Duration) {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        let open: Vec<usize> = (0..2).filter(|&i| self.fds[i].is_some()).collect();
        if open.is_empty() {
            std::thread::sleep(wait);
            return;
        }
        let ready: Vec<bool> = {
            let mut polled: Vec<PollFd> = open
                .iter()
                .filter_map(|&i| self.fds[i].as_ref().map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)))
                .collect();
            let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
            if poll(&mut polled, PollTimeout::from(ms)).is_err() {
                return;
            }
            polled.iter().map(|p| p.revents().is_some_and(|r| !r.is_empty())).collect()
        };
        let mut buf = [0u8; 65536];
        for (&i, ready) in open.iter().zip(ready) {
            if !ready {
                continue;
            }
            let Some(fd) = &self.fds[i] else { continue };
            // Ready: one read does not block.
            match nix::unistd::read(fd, &mut buf) {
                Ok(0) => self.fds[i] = None,
                Ok(n) => {
                    let room = KEEP.saturating_sub(self.kept).min(n);
                    let to = if i == 0 { &mut self.out } else { &mut self.err };
                    to.extend_from_slice(&buf[..room]);
                    self.kept += room;
                    if room < n {
                        self.kept = KEEP;
                    }
                }
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                Err(_) => self.fds[i] = None,
            }
        }
    }
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

    #[test]
    fn a_setsid_grandchild_holding_the_pipe_does_not_keep_us_waiting() {
        // The grandchild leaves the group (setsid) and holds stdout for 30 s; its pid is
        // written down so that the test can end it.
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let never = AtomicBool::new(false);
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("setsid sh -c 'echo $$ > {}; exec sleep 30' & echo '0.2 usecs/op'", pids.display()));
        let began = Instant::now();
        let out = run(cmd, Duration::from_secs(60), &never).unwrap();
        assert!(began.elapsed() < Duration::from_secs(20), "waited for the grandchild");
        assert!(out.text.contains("0.2 usecs/op"), "{}", out.text);
        assert_eq!(out.status, Some(0));
        for _ in 0..50 {
            if let Ok(pid) = std::fs::read_to_string(&pids)
                && let Ok(pid) = pid.trim().parse::<i32>()
            {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn a_flooding_peer_is_stopped_and_what_is_kept_is_bounded() {
        let never = AtomicBool::new(false);
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exec yes 0123456789012345678901234567890123456789"]);
        let began = Instant::now();
        let e = run(cmd, Duration::from_secs(60), &never).unwrap_err();
        assert!(matches!(e, RunError::Flood(..)), "{e}");
        assert!(e.to_string().contains("printed more than 1024 KiB"), "{e}");
        assert!(began.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn a_stopped_peer_is_asked_with_sigint_first() {
        // A peer that cleans up on SIGINT (as cyclictest does) gets the chance to.
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("cleaned");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("trap 'echo yes > {}; exit 0' INT; while :; do sleep 0.05; done", mark.display()));
        let never = AtomicBool::new(false);
        assert!(matches!(run(cmd, Duration::from_millis(300), &never), Err(RunError::Deadline(..))));
        assert_eq!(std::fs::read_to_string(&mark).unwrap_or_default().trim(), "yes");
    }

    #[test]
    fn a_cyclictest_leftover_of_our_pid_is_removed_and_nothing_else() {
        use std::os::unix::fs::symlink;
        if !Path::new("/dev/shm").is_dir() {
            return;
        }
        // A pid that is surely not ours to clean: this test's own, named as cyclictest's would be.
        let pid = std::process::id();
        let ours = PathBuf::from(format!("/dev/shm/cyclictest{pid}"));
        std::fs::write(&ours, b"x").unwrap();
        remove_shm_leftover(pid);
        assert!(!ours.exists());
        // A symbolic link of that name is left alone, and so is what it points to.
        let target = tempfile::NamedTempFile::new().unwrap();
        symlink(target.path(), &ours).unwrap();
        remove_shm_leftover(pid);
        assert!(std::fs::symlink_metadata(&ours).is_ok() && target.path().exists());
        std::fs::remove_file(&ours).unwrap();
    }
}
