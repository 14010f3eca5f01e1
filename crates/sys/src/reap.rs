//! The one child reaper: the crates' waits for their children go through here (the binary's
//! round workers are `std::process::Child`ren it waits for itself). [`reap_by`] waits for a
//! child to end by itself until a deadline, then kills (`SIGKILL`) and reaps it;
//! [`kill_and_reap`] ends one at once; both say how it ended ([`Reaped`]). Timed regions (the
//! `process.*` benchmarks time fork → exit → wait) call [`wait_child`], built on the same
//! `#[inline(always)]` primitive ([`waitpid`], the one `waitpid` call), whose deadline comes
//! from a [`Watchdog`] thread instead of polling: when a wait outlasts it, the watchdog sends
//! [`deadline_signal`] (a real-time signal osprim uses for nothing else, handled without
//! `SA_RESTART`) to the waiting thread, whose `waitpid` returns `EINTR`; the waiter then kills
//! the child and reaps it. Nothing is sent while the waits keep their deadline, so the measured
//! path carries no signal. See waitpid(2).
//!
//! # Safety
//! - A pid given here must be our own child not yet reaped, so it cannot have been reused
//!   before `kill` and `waitpid` name it (every caller holds its child that way).
//! - `waitpid` writes only the status on this stack. The deadline handler stores to one
//!   atomic; `tgkill` takes no pointers and the waiting thread outlives its watchdog.
#![allow(unsafe_code)]

use crate::disposition::Disposition;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The signal a [`Watchdog`] sends to a wait that outlasted its deadline: `SIGRTMIN + 7`, a
/// real-time signal osprim uses for nothing else.
pub fn deadline_signal() -> libc::c_int {
    libc::SIGRTMIN() + 7
}

static DEADLINE_HIT: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_deadline(_: libc::c_int) {
    DEADLINE_HIT.fetch_add(1, Ordering::Relaxed);
}

/// What the watchdog thread and the waiting thread share.
struct WatchState {
    /// Deadline in ns since `epoch`; 0: disarmed.
    deadline_ns: AtomicU64,
    overdue: AtomicBool,
    done: AtomicBool,
    epoch: Instant,
    tgid: libc::pid_t,
    tid: libc::pid_t,
}

/// A thread that interrupts the calling thread's waits once they outlast a deadline (module
/// doc). Installs the handler for [`deadline_signal`] (no `SA_RESTART`); stops its thread and
/// restores the handler on drop.
pub struct Watchdog {
    state: Arc<WatchState>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The handler's installation; the disposition it replaced comes back when this drops,
    /// after [`Watchdog`]'s own drop has stopped the thread.
    _handler: Disposition,
}

/// How often the watchdog looks at the deadline.
const WATCH_PERIOD: Duration = Duration::from_millis(20);

impl Watchdog {
    /// Starts watching for the calling thread; the watchdog thread runs on `cpus` (the CPUs
    /// the measurement does not use, when there are any).
    pub fn start(cpus: &[usize]) -> io::Result<Watchdog> {
        // No SA_RESTART: a blocked waitpid returns EINTR.
        // SAFETY: the handler only bumps an atomic.
        let handler = unsafe { Disposition::handle(deadline_signal(), on_deadline, 0) }?;
        let state = Arc::new(WatchState {
            deadline_ns: AtomicU64::new(0),
            overdue: AtomicBool::new(false),
            done: AtomicBool::new(false),
            epoch: Instant::now(),
            tgid: std::process::id() as libc::pid_t,
            tid: nix::unistd::gettid().as_raw(),
        });
        let s = Arc::clone(&state);
        let cpus = cpus.to_vec();
        let thread = std::thread::Builder::new().name("osprim-deadline".into()).spawn(move || {
            if !cpus.is_empty() {
                let _ = super::cpu::set_affinity(&cpus);
            }
            watch(&s)
        });
        // On an error `handler` drops here and puts the disposition back.
        Ok(Watchdog { state, thread: Some(thread?), _handler: handler })
    }

    /// Sets the deadline `within` from now and clears an earlier overrun.
    pub fn arm(&self, within: Duration) {
        let at = self.state.epoch.elapsed() + within;
        self.state.overdue.store(false, Ordering::Relaxed);
        self.state.deadline_ns.store((at.as_nanos() as u64).max(1), Ordering::Release);
    }

    /// No deadline until the next [`Watchdog::arm`].
    pub fn disarm(&self) {
        self.state.deadline_ns.store(0, Ordering::Release);
    }

    /// Whether the armed deadline has passed.
    #[inline(always)]
    pub fn overdue(&self) -> bool {
        self.state.overdue.load(Ordering::Acquire)
    }
}

fn watch(s: &WatchState) {
    while !s.done.load(Ordering::Acquire) {
        std::thread::sleep(WATCH_PERIOD);
        let d = s.deadline_ns.load(Ordering::Acquire);
        if d != 0 && s.epoch.elapsed().as_nanos() as u64 > d {
            s.overdue.store(true, Ordering::Release);
            // Repeated every period until disarmed: one sent just before the waiter blocks
            // would be missed.
            // SAFETY: tgkill takes no pointers; the waiting thread outlives this watchdog.
            unsafe {
                crate::raw::syscall3(
                    libc::SYS_tgkill,
                    i64::from(s.tgid),
                    i64::from(s.tid),
                    i64::from(deadline_signal()),
                )
            };
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state.deadline_ns.store(0, Ordering::Release);
        self.state.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How a child's wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (`killed`: by the reaper, after the deadline).
    Signaled { signal: i32, killed: bool },
    /// `waitpid` failed (errno), e.g. `ECHILD` when something else reaped it.
    Lost(i32),
}

impl Reaped {
    /// How a wait status (from `waitpid`) ended; `killed` if the reaper sent the kill.
    #[inline(always)]
    pub fn from_status(status: libc::c_int, killed: bool) -> Reaped {
        if libc::WIFEXITED(status) {
            Reaped::Exited(libc::WEXITSTATUS(status))
        } else {
            Reaped::Signaled { signal: libc::WTERMSIG(status), killed }
        }
    }

    /// `Err` when the child could not be reaped ([`Reaped::Lost`]), else how it ended.
    pub fn ok(self) -> io::Result<Reaped> {
        match self {
            Reaped::Lost(errno) => Err(io::Error::from_raw_os_error(errno)),
            other => Ok(other),
        }
    }

    /// Whether the child exited with status 0.
    pub fn success(&self) -> bool {
        *self == Reaped::Exited(0)
    }

    /// "exited with status 3", "killed by SIGKILL", "lost (ECHILD: …)".
    pub fn describe(&self) -> String {
        match *self {
            Reaped::Exited(code) => format!("exited with status {code}"),
            Reaped::Signaled { signal, .. } => match nix::sys::signal::Signal::try_from(signal) {
                Ok(s) => format!("killed by {s}"),
                Err(_) => format!("killed by signal {signal}"),
            },
            Reaped::Lost(errno) => format!("not reaped: {}", io::Error::from_raw_os_error(errno)),
        }
    }
}

/// `waitpid(pid, status, flags)`, its result as the kernel gives it (`pid`, 0 under `WNOHANG`
/// while the child runs, or −1 with `errno`): the one `waitpid` of osprim, which every wait here
/// is built on, and the call a timed region makes (through [`wait_child`]).
#[inline(always)]
pub fn waitpid(pid: libc::pid_t, status: &mut libc::c_int, flags: libc::c_int) -> libc::pid_t {
    // SAFETY: `status` is a valid out-pointer; `pid` names one of our own children (module doc).
    unsafe { libc::waitpid(pid, status, flags) }
}

/// The calling thread's `errno`.
#[inline(always)]
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// One blocking wait for child `pid`: its status, or the errno (`EINTR` when a signal
/// interrupted it).
pub fn wait(pid: libc::pid_t) -> Result<libc::c_int, i32> {
    let mut status: libc::c_int = 0;
    if waitpid(pid, &mut status, 0) == pid { Ok(status) } else { Err(errno()) }
}

/// A wait for child `pid` that does not block (`WNOHANG`): `Ok(None)` while the child runs.
pub fn try_wait(pid: libc::pid_t) -> Result<Option<libc::c_int>, i32> {
    let mut status: libc::c_int = 0;
    match waitpid(pid, &mut status, libc::WNOHANG) {
        0 => Ok(None),
        r if r == pid => Ok(Some(status)),
        _ => Err(errno()),
    }
}

/// Whether `pid` is no child of ours to wait for (reaped already, or never ours): `ECHILD`.
pub fn is_gone(pid: libc::pid_t) -> bool {
    try_wait(pid) == Err(libc::ECHILD)
}

/// `waitid(P_PID, pid, WEXITED | WNOWAIT | flags)`: whether the child has ended, leaving it
/// unreaped.
fn peek(pid: libc::pid_t, flags: libc::c_int) -> Result<bool, i32> {
    // SAFETY: `siginfo_t` is a plain C struct, valid all zeroes, for the kernel to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves the child unreaped.
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT | flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: si_pid is valid to read after waitid filled the struct (0 if none ended).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Whether child `pid` has ended (looked at without reaping it).
pub fn has_ended(pid: libc::pid_t) -> bool {
    peek(pid, libc::WNOHANG) == Ok(true)
}

/// Blocks until child `pid` has ended (or is no child of ours), without reaping it.
pub fn wait_ended(pid: libc::pid_t) {
    while peek(pid, 0) == Err(libc::EINTR) {}
}

/// Kills child `pid` (`SIGKILL`) and reaps it, however long that takes (a killed child ends
/// at once). `pid` must be our own unreaped child, so that it cannot have been reused.
pub fn kill_and_reap(pid: libc::pid_t) -> Reaped {
    // SAFETY: kill takes no pointers; `pid` is our unreaped child (the caller's contract).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    loop {
        match wait(pid) {
            Ok(status) => return Reaped::from_status(status, true),
            Err(libc::EINTR) => {}
            Err(errno) => return Reaped::Lost(errno),
        }
    }
}

/// How often [`reap_by`] looks at a child that has not ended yet.
const POLL_PERIOD: Duration = Duration::from_micros(100);

/// Waits for child `pid` to end by itself until `deadline` (polling without blocking), then
/// kills and reaps it ([`kill_and_reap`]); how it ended either way.
pub fn reap_by(pid: libc::pid_t, deadline: Instant) -> Reaped {
    loop {
        match try_wait(pid) {
            Ok(Some(status)) => return Reaped::from_status(status, false),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL_PERIOD),
            Ok(None) => return kill_and_reap(pid),
            Err(libc::EINTR) => {}
            Err(errno) => return Reaped::Lost(errno),
        }
    }
}

/// Reaps child `pid` with blocking waits ([`waitpid`]); once `watchdog` says the deadline passed,
/// kills it (`SIGKILL`) and reaps it. Made for timed regions: while the deadline holds it is
/// one `waitpid`.
#[inline(always)]
pub fn wait_child(pid: libc::pid_t, watchdog: &Watchdog) -> Reaped {
    let mut status: libc::c_int = 0;
    let mut killed = false;
    loop {
        if waitpid(pid, &mut status, 0) == pid {
            return Reaped::from_status(status, killed);
        }
        let errno = errno();
        if errno != libc::EINTR {
            return Reaped::Lost(errno);
        }
        if watchdog.overdue() && !killed {
            // SAFETY: `pid` is not reaped yet (waitpid did not return it), so it is still ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork_exiting(code: i32, after: Duration) -> libc::pid_t {
        // SAFETY: the child only sleeps (nanosleep) and leaves with `_exit`.
        match unsafe { libc::fork() } {
            // SAFETY: as above; `ts` lives on the child's stack.
            0 => unsafe {
                let ts = libc::timespec { tv_sec: after.as_secs() as libc::time_t, tv_nsec: 0 };
                libc::nanosleep(&ts, std::ptr::null_mut());
                libc::_exit(code)
            },
            pid => {
                assert!(pid > 0, "fork");
                pid
            }
        }
    }

    #[test]
    fn a_child_that_ends_in_time_is_reaped_with_its_status() {
        let _serial = crate::testing::serial();
        let pid = fork_exiting(3, Duration::ZERO);
        assert_eq!(reap_by(pid, Instant::now() + Duration::from_secs(10)), Reaped::Exited(3));
        assert!(is_gone(pid));
        assert_eq!(Reaped::Exited(3).describe(), "exited with status 3");
    }

    #[test]
    fn an_overrunning_child_is_killed_and_reaped() {
        let _serial = crate::testing::serial();
        let pid = fork_exiting(0, Duration::from_secs(30));
        let began = Instant::now();
        let r = reap_by(pid, Instant::now() + Duration::from_millis(50));
        assert_eq!(r, Reaped::Signaled { signal: libc::SIGKILL, killed: true });
        assert!(began.elapsed() < Duration::from_secs(10));
        assert!(is_gone(pid));
        assert_eq!(r.describe(), "killed by SIGKILL");
        assert_eq!(kill_and_reap(pid), Reaped::Lost(libc::ECHILD));
    }
}
