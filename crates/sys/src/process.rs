//! Forked children and IPC peers: the one fork-and-reap guard ([`Child`], killed and reaped on
//! drop), made by [`fork_peer`] (a child running a closure: an IPC benchmark's peer) or
//! [`Child::fork_paused`] (a child that only waits to be killed: `fault.cow`, `space.process`);
//! and the wake-up signal that interrupts a blocked measuring thread when its peer ends.
//! Every `fork` of osprim goes through here, except the timed ones of `process.*`
//! ([`super::lifecycle`]), whose children only exit or exec and are reaped inside the clock.
//! See fork(2), waitpid(2), prctl(2) (`PR_SET_PDEATHSIG`).
//!
//! The wake-up signal is `SIGCHLD`, which the kernel sends anyway when a forked peer dies; a
//! thread peer (or a process peer that hit an error) sends it on purpose with `tgkill`. While a
//! [`WakeOnPeerEnd`] guard lives, its handler only sets a flag, and is installed without
//! `SA_RESTART`, so a blocking `read`, `msgrcv` or futex wait returns `EINTR` and the caller
//! can look at why.
//!
//! # Safety
//! - osprim has other threads when it forks, and one of them may hold a lock (the allocator's,
//!   stdio's) at that moment; the child has only the forking thread. So the child runs only
//!   code that takes no such lock, and leaves with `_exit`, never unwinding into or running the
//!   parent's destructors. [`Child::fork_paused`]'s child calls only async-signal-safe
//!   functions; [`fork_peer`] runs a caller's safe closure, sound in the child for the reason
//!   its doc gives (the worst it can meet is a hang, which the guard's deadline ends).
//! - A [`Child`] is our own unreaped child until it is reaped (by [`crate::reap`], the one
//!   reaper), so its pid cannot be reused before `kill` and `waitpid` name it.
//! - The signal handler touches one atomic. `tgkill` takes no pointers.
#![allow(unsafe_code)]

use crate::disposition::{self, Disposition};
use crate::reap::{self, Reaped};
use nix::sys::signal::{self, SigSet};
use nix::unistd::Pid;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static WOKEN: AtomicBool = AtomicBool::new(false);

extern "C" fn on_wake(_: libc::c_int) {
    WOKEN.store(true, Ordering::Relaxed);
}

/// Whether the wake-up signal arrived since the last [`clear_woken`].
pub fn woken() -> bool {
    WOKEN.load(Ordering::Relaxed)
}

/// Forgets earlier wake-ups.
pub fn clear_woken() {
    WOKEN.store(false, Ordering::Relaxed);
}

/// Installs the wake-up handler for `SIGCHLD` (no `SA_RESTART`); restores the previous
/// disposition on drop.
pub struct WakeOnPeerEnd {
    _handler: Disposition,
}

impl WakeOnPeerEnd {
    /// Installs the handler.
    pub fn install() -> std::io::Result<WakeOnPeerEnd> {
        clear_woken();
        // SAFETY: the handler only stores to an atomic.
        let handler = unsafe { Disposition::handle(libc::SIGCHLD, on_wake, libc::SA_NOCLDSTOP) }?;
        Ok(WakeOnPeerEnd { _handler: handler })
    }
}

/// Sends the wake-up signal to thread `tid` of this process (or of process `tgid`).
pub fn wake_thread(tgid: i32, tid: i32) {
    // SAFETY: tgkill takes no pointers; a stale tid at worst fails with ESRCH.
    unsafe { crate::raw::syscall3(libc::SYS_tgkill, i64::from(tgid), i64::from(tid), i64::from(libc::SIGCHLD)) };
}

/// The calling thread's scheduling policy (`SCHED_OTHER`, `SCHED_BATCH`, …).
pub fn sched_policy() -> libc::c_int {
    // SAFETY: no pointer arguments; 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// Sets the calling thread's policy to `policy`, a non-real-time one (priority 0), which needs
/// no privilege.
pub fn set_sched_policy(policy: libc::c_int) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` lives on the stack for the call; 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// A thread that waits for a peer process to end and then keeps waking the measuring thread
/// (every 5 ms) until told it was noticed: one `SIGCHLD` can arrive just before the measuring
/// thread blocks and be missed; a repeated one cannot. Dropping it only raises its flag; the
/// thread ends when the peer does, which the [`Child`] guard guarantees.
pub struct DeathWatch {
    noticed: std::sync::Arc<AtomicBool>,
}

impl DeathWatch {
    /// Starts watching `pid`, to wake thread `tid` of this process.
    pub fn start(pid: i32, tid: i32) -> std::io::Result<DeathWatch> {
        let noticed = std::sync::Arc::new(AtomicBool::new(false));
        let flag = noticed.clone();
        let tgid = std::process::id() as i32;
        std::thread::Builder::new().name("osprim-watch".into()).spawn(move || {
            // This thread must not take the SIGCHLD meant for the measuring thread.
            let _ = signal::pthread_sigmask(signal::SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None);
            reap::wait_ended(pid);
            while !flag.load(Ordering::Acquire) {
                wake_thread(tgid, tid);
                std::thread::sleep(Duration::from_millis(5));
            }
        })?;
        Ok(DeathWatch { noticed })
    }
}

impl Drop for DeathWatch {
    fn drop(&mut self) {
        self.noticed.store(true, Ordering::Release);
    }
}

/// The one guard for a forked child (an IPC peer, a copy-on-write sharer, a process whose
/// memory is counted): killed with `SIGKILL` and reaped when dropped, unless already reaped.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    status: Option<Reaped>,
}

/// Forks; the child runs `in_child` and then `_exit`s (127 if `in_child` returns), and the
/// parent gets its guard.
///
/// # Safety
/// `in_child` runs in a copy of a process that may have other threads, any of which may have
/// held a lock (the allocator's, stdio's, a `Mutex`) at the fork: it must not wait for such a
/// lock, which means calling only async-signal-safe functions unless the lock is known to be
/// reset in the child, and it must not unwind.
unsafe fn fork_with(in_child: impl FnOnce(libc::pid_t)) -> std::io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child runs only `in_child`, whose contract the caller upholds, and never
    // returns into the parent's code.
    match unsafe { nix::unistd::fork() }.map_err(std::io::Error::from)? {
        nix::unistd::ForkResult::Parent { child } => Ok(Child { pid: child, status: None }),
        nix::unistd::ForkResult::Child => {
            in_child(parent);
            // SAFETY: should `in_child` return, leave without running the parent's destructors.
            unsafe { libc::_exit(127) }
        }
    }
}

/// In the child: asks to be killed when the parent dies (`PR_SET_PDEATHSIG`), and leaves at
/// once if the parent already has. Async-signal-safe.
fn die_with(parent: libc::pid_t) {
    // SAFETY: prctl and getppid take no pointers; _exit leaves without running any of the
    // parent's destructors.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != parent {
            libc::_exit(1); // the parent died before prctl took effect
        }
    }
}

/// Forks; the child runs `body` and exits with its return value (101 if it panics). The child
/// dies with the parent (`PR_SET_PDEATHSIG`) and ignores Ctrl-C, which the parent handles.
///
/// A safe function, though `body` runs in the forked child of a process that may have other
/// threads: in the child every other thread is as if paused for ever at the instant of the
/// fork, and safe Rust is sound under any pause of any thread (its locks, `OnceLock`s and
/// atomics never let a paused holder's half-done work be seen; glibc's `fork` resets the
/// `malloc` and stdio locks). So the worst `body` can meet is a lock held by a thread that is
/// gone, which blocks the child for ever: a hang, never undefined behaviour — and one that
/// ends, since the child dies with the parent and the returned [`Child`] kills and reaps it
/// (at [`Child::finish`]'s deadline, or on drop). Memory osprim maps is never
/// `MADV_DONTFORK`, so everything `body` can reach is in the child. Peers should still
/// prepare all they need before the fork and report failures as numbers, so that they never
/// wait on such a lock.
pub fn fork_peer(body: impl FnOnce() -> i32) -> std::io::Result<Child> {
    let in_child = |parent| {
        die_with(parent);
        let _ = disposition::ignore(libc::SIGINT);
        let _ = disposition::ignore(libc::SIGTERM);
        let _ = disposition::reset(libc::SIGCHLD);
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
        // SAFETY: leaves without running destructors or atexit handlers of the parent's state.
        unsafe { libc::_exit(code) }
    };
    // SAFETY: the child sets its signal dispositions (async-signal-safe), runs `body` (safe
    // code, sound in the child: see above) and leaves with `_exit`.
    unsafe { fork_with(in_child) }
}

/// Forks a child that may outlive the parent (no `PR_SET_PDEATHSIG`), for work that must be
/// done even after osprim is killed (removing a System V queue); the child runs `body` and
/// `_exit`s. The guard still kills and reaps it if it is dropped before the child has ended.
///
/// # Safety
/// As [`fork_peer`]: `body` runs in the forked child of a process that may have other threads,
/// so it may call only async-signal-safe functions, and it must not unwind.
pub unsafe fn fork_survivor(body: impl FnOnce()) -> std::io::Result<Child> {
    // SAFETY: the caller upholds `fork_with`'s contract for `body`.
    unsafe { fork_with(|_parent| body()) }
}

impl Child {
    /// Forks a child that does nothing but wait to be killed: it shares the parent's memory
    /// copy-on-write (`fault.cow`) and costs what a process costs (`space.process`). Returns
    /// once the child has started waiting (it says so through a pipe just before it calls
    /// `pause`), so that its start-up is over.
    pub fn fork_paused() -> std::io::Result<Child> {
        let (ready_r, ready_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let ready = ready_w.as_raw_fd();
        let in_child = |parent| {
            die_with(parent);
            let byte = 1u8;
            // SAFETY: writes one byte from this frame to the pipe; pause takes nothing.
            unsafe {
                libc::write(ready, (&byte as *const u8).cast(), 1);
                loop {
                    libc::pause();
                }
            }
        };
        // SAFETY: the child calls only async-signal-safe functions (prctl, getppid, write,
        // pause, _exit) and touches only its own stack.
        let child = unsafe { fork_with(in_child) }?;
        drop(ready_w);
        let mut byte = [0u8; 1];
        loop {
            match nix::unistd::read(&ready_r, &mut byte) {
                Ok(1) => return Ok(child),
                Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => return Err(std::io::Error::other("the child exited before it was ready")),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    /// Whether the child has ended (looked at without reaping it).
    pub fn has_ended(&self) -> bool {
        if self.status.is_some() {
            return true;
        }
        reap::has_ended(self.pid.as_raw())
    }

    /// Waits (polling `/proc/<pid>/stat`, at most `timeout`) until the child sleeps (in
    /// `pause`, for [`Child::fork_paused`]); returns whether it does.
    pub fn wait_asleep(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
            if stat_state(&stat) == Some('S') {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Waits up to `timeout` for the child to exit by itself, then kills it; reaps it either
    /// way ([`reap::reap_by`]), and says how it ended.
    pub fn finish(&mut self, timeout: Duration) -> Reaped {
        *self.status.get_or_insert_with(|| reap::reap_by(self.pid.as_raw(), Instant::now() + timeout))
    }

    /// Kills the child (`SIGKILL`) and reaps it; how it ended.
    pub fn kill_and_reap(mut self) -> Reaped {
        self.reap()
    }

    fn reap(&mut self) -> Reaped {
        // Our own unreaped child until `status` is set: the pid cannot have been reused.
        *self.status.get_or_insert_with(|| reap::kill_and_reap(self.pid.as_raw()))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.reap();
    }
}

/// The scheduler state letter of `/proc/<pid>/stat` (`S` sleeping, `R` running, `Z` zombie):
/// the field after the command name, which is in parentheses and may contain anything.
pub fn stat_state(stat: &str) -> Option<char> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().next()?.chars().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_exit_status_is_reported_and_reaped() {
        let _serial = crate::testing::serial();
        let mut c = fork_peer(|| 7).unwrap();
        assert_eq!(c.finish(Duration::from_secs(5)), Reaped::Exited(7));
        assert!(c.has_ended());
    }

    #[test]
    fn batch_policy_can_be_set_and_undone_unprivileged() {
        let _serial = crate::testing::serial();
        std::thread::spawn(|| {
            let before = sched_policy();
            set_sched_policy(libc::SCHED_BATCH).unwrap();
            assert_eq!(sched_policy(), libc::SCHED_BATCH);
            set_sched_policy(before).unwrap();
            assert_eq!(sched_policy(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_stuck_child_is_killed_on_drop() {
        let _serial = crate::testing::serial();
        let body = || loop {
            // SAFETY: pause takes no arguments.
            unsafe { libc::pause() };
        };
        let c = fork_peer(body).unwrap();
        let pid = c.pid();
        assert!(!c.has_ended());
        drop(c);
        // Reaped: the pid is no longer our child.
        assert!(reap::is_gone(pid));
    }

    #[test]
    fn stat_state_survives_odd_names() {
        assert_eq!(stat_state("42 (a) b) S 1 42 42 0"), Some('S'));
        assert_eq!(stat_state("42 (osprim) Z 1"), Some('Z'));
        assert_eq!(stat_state("garbage"), None);
    }

    #[test]
    fn paused_child_sleeps_and_is_reaped() {
        let _serial = crate::testing::serial(); // a fork disturbs fault counting
        let c = Child::fork_paused().expect("fork");
        assert!(c.wait_asleep(Duration::from_secs(5)));
        let pid = c.pid();
        assert_eq!(c.kill_and_reap(), Reaped::Signaled { signal: libc::SIGKILL, killed: true });
        assert!(reap::is_gone(pid), "no longer our child");
    }
}
