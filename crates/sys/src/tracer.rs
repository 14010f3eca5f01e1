//! A tracer that stops a process at every system call and resumes it at once: what strace
//! does per call, without printing (`PTRACE_SEIZE` with `PTRACE_O_TRACESYSGOOD` and
//! `PTRACE_O_EXITKILL`, then `PTRACE_SYSCALL` after every stop, reading each stop's
//! `PTRACE_GET_SYSCALL_INFO` as a tracer that looks at the calls does). See ptrace(2).
//!
//! [`trace`] runs in the tracer's own process (a child the tracee forked: a parent may be
//! traced by its child where no Yama policy forbids it, and root may always), for as long as the
//! tracee lives. `PTRACE_O_EXITKILL` kills the tracee if the tracer dies, so a tracee is never
//! left stopped with nobody to resume it.
//!
//! # Safety
//! The one `unsafe` reads the union of a `ptrace_syscall_info` the kernel filled, choosing the
//! member its `op` names.
#![allow(unsafe_code)]

use nix::sys::ptrace::{self, Options};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// Seizes `pid`, calls `attached` once every system call of `pid` stops, and serves the
/// stops until `pid` ends, calling `on_entry` with the number of each call at its entry stop,
/// before it resumes the tracee. `Err` says what failed (a refused seize, a lost tracee).
pub fn trace(pid: i32, attached: impl FnOnce(), mut on_entry: impl FnMut(i64)) -> Result<(), String> {
    let pid = Pid::from_raw(pid);
    ptrace::seize(pid, Options::PTRACE_O_TRACESYSGOOD | Options::PTRACE_O_EXITKILL)
        .map_err(|e| format!("PTRACE_SEIZE: {e}"))?;
    ptrace::interrupt(pid).map_err(|e| format!("PTRACE_INTERRUPT: {e}"))?;
    // The interrupt's stop, then every call stops from here on.
    match waitpid(pid, Some(WaitPidFlag::__WALL)) {
        Ok(WaitStatus::PtraceEvent(..) | WaitStatus::Stopped(..)) => {}
        other => return Err(format!("waiting for the tracee's first stop: {other:?}")),
    }
    ptrace::syscall(pid, None).map_err(|e| format!("PTRACE_SYSCALL: {e}"))?;
    attached();
    loop {
        let resume_with = match waitpid(pid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::PtraceSyscall(_)) => {
                if let Some(nr) = entry_of(pid) {
                    on_entry(nr);
                }
                None
            }
            // A signal for the tracee: deliver it.
            Ok(WaitStatus::Stopped(_, sig)) => Some(sig),
            Ok(WaitStatus::PtraceEvent(..)) => None,
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => return Ok(()),
            Ok(_) => None,
            Err(nix::errno::Errno::ECHILD) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("waitpid: {e}")),
        };
        match ptrace::syscall(pid, resume_with) {
            Ok(()) => {}
            // The tracee died between the stop and the resume (SIGKILL).
            Err(nix::errno::Errno::ESRCH) => return Ok(()),
            Err(e) => return Err(format!("PTRACE_SYSCALL: {e}")),
        }
    }
}

/// The call number of an entry stop; `None` for an exit stop.
fn entry_of(pid: Pid) -> Option<i64> {
    let info = ptrace::syscall_info(pid).ok()?;
    if info.op != libc::PTRACE_SYSCALL_INFO_ENTRY {
        return None;
    }
    // SAFETY: `op` says the kernel filled the `entry` member.
    Some(unsafe { info.u.entry.nr } as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::fork_peer;
    use crate::shm::SharedMem;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    #[test]
    fn the_tracer_sees_every_call_and_the_tracee_runs_on() {
        let shared = Arc::new(SharedMem::new(4).unwrap());
        let sh = shared.clone();
        let mut tracee = fork_peer(move || {
            let me = std::process::id() as i32;
            let sh2 = sh.clone();
            let Ok(tracer) = fork_peer(move || {
                // Counted in shared memory as they come: this tracer dies with the tracee.
                let ok = trace(
                    me,
                    || sh2.u64(0).store(1, Ordering::Release),
                    |nr| {
                        sh2.u64(2).fetch_add(1, Ordering::Release);
                        if nr == libc::SYS_getppid {
                            sh2.u64(1).fetch_add(1, Ordering::Release);
                        }
                    },
                );
                i32::from(ok.is_err())
            }) else {
                return 2;
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while sh.u64(0).load(Ordering::Acquire) == 0 {
                if Instant::now() > deadline || tracer.has_ended() {
                    return 3;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let answers: Vec<i64> = (0..5).map(|_| crate::raw::getppid()).collect();
            let ok = answers.iter().all(|&a| a == answers[0]) && answers[0] > 0;
            // Let the tracer see this process go, then leave.
            std::mem::forget(tracer);
            if ok { 0 } else { 4 }
        })
        .unwrap();
        assert!(tracee.finish(Duration::from_secs(20)).success());
        assert_eq!(shared.u64(1).load(Ordering::Acquire), 5, "one entry stop per getppid");
        assert!(shared.u64(2).load(Ordering::Acquire) >= 5);
    }
}
