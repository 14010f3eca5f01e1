//! Timers and scheduling policy for `notify.timer` and `sched.*`: a POSIX timer that signals
//! one thread (`timer_create` with `SIGEV_THREAD_ID`), the thread's signal mask while it takes
//! that signal with `sigtimedwait`, and the thread's policy (`SCHED_FIFO` at a priority, as
//! `cyclictest -p`), each in a guard that puts back what was there. See timer_create(2),
//! sigtimedwait(2), sched_setscheduler(2).
//!
//! # Safety
//! Every call passes pointers to values that live on the caller's stack (or in `self`) for the
//! duration of the call; `timer_t` handles are only used between `timer_create` and the one
//! `timer_delete` in `drop`. The signal is blocked on the calling thread before the timer can
//! fire, and drained before it is unblocked, so it is never delivered to a default action.
#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

/// A thread's scheduling policy and priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// `SCHED_OTHER`, `SCHED_FIFO`, …
    pub policy: libc::c_int,
    /// The static priority (0 for the non-real-time policies).
    pub priority: libc::c_int,
}

impl Policy {
    /// The policy's name, as `chrt` prints it.
    pub fn name(self) -> String {
        let p = match self.policy {
            libc::SCHED_OTHER => "SCHED_OTHER",
            libc::SCHED_FIFO => "SCHED_FIFO",
            libc::SCHED_RR => "SCHED_RR",
            libc::SCHED_BATCH => "SCHED_BATCH",
            libc::SCHED_IDLE => "SCHED_IDLE",
            _ => "unknown",
        };
        if self.priority > 0 { format!("{p} {}", self.priority) } else { p.into() }
    }
}

/// The calling thread's policy and priority.
pub fn current_policy() -> io::Result<Policy> {
    // SAFETY: no pointer arguments; 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` lives on the stack for the call.
    if unsafe { libc::sched_getparam(0, &mut param) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Policy { policy, priority: param.sched_priority })
}

/// Sets the calling thread's policy and priority.
pub fn set_policy(p: Policy) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: p.priority };
    // SAFETY: `param` lives on the stack for the call; 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, p.policy, &param) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread's previous policy back on drop. Must be dropped on the thread that
/// made it (it is not `Send`).
pub struct PolicyGuard {
    previous: Policy,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl PolicyGuard {
    /// Switches the calling thread to `p`; `Err` (the thread unchanged) when not permitted.
    pub fn switch(p: Policy) -> io::Result<PolicyGuard> {
        let previous = current_policy()?;
        set_policy(p)?;
        Ok(PolicyGuard { previous, _not_send: std::marker::PhantomData })
    }

    /// The policy that will be restored.
    pub fn previous(&self) -> Policy {
        self.previous
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        let _ = set_policy(self.previous);
    }
}

/// The real-time signal the timers of this module send: `SIGRTMIN + 3`, which nothing else in
/// osprim uses (glibc keeps the first two for itself).
pub fn timer_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

/// `signo` blocked on the calling thread; on drop, any pending instance is taken (so none is
/// ever delivered to the default action, which would end the process) and the previous mask is
/// restored. Not `Send`: a thread's mask belongs to the thread.
pub struct BlockedSignal {
    signo: libc::c_int,
    previous: libc::sigset_t,
    _not_send: std::marker::PhantomData<*const ()>,
}

fn sigset_of(signo: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set it is given, which lives on this stack.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; sigaddset writes into the same set.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
    }
    set
}

impl BlockedSignal {
    /// Blocks `signo` on the calling thread.
    pub fn block(signo: libc::c_int) -> io::Result<BlockedSignal> {
        let set = sigset_of(signo);
        // SAFETY: zeroed is a valid sigset_t; pthread_sigmask fills it.
        let mut previous: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: both sets live on this stack for the call.
        let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(BlockedSignal { signo, previous, _not_send: std::marker::PhantomData })
    }

    /// Waits up to `timeout` for the signal: `Ok(true)` when it came, `Ok(false)` on timeout.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let set = sigset_of(self.signo);
        let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: timeout.subsec_nanos() as _ };
        loop {
            // SAFETY: zeroed is a valid siginfo_t for the kernel to fill.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: the set, the info and the timeout live on this stack for the call.
            let rc = unsafe { libc::sigtimedwait(&set, &mut info, &ts) };
            if rc == self.signo {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(false),
                Some(libc::EINTR) => continue,
                _ => return Err(e),
            }
        }
    }

    /// Whether `signo` is blocked on the calling thread.
    pub fn is_blocked(signo: libc::c_int) -> bool {
        // SAFETY: zeroed is a valid sigset_t; pthread_sigmask fills it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set lives on this stack; a null new set only reads the mask.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0
                && libc::sigismember(&set, signo) == 1
        }
    }

    /// Whether the signal is pending on this thread (or the process).
    pub fn pending(&self) -> bool {
        // SAFETY: zeroed is a valid sigset_t; sigpending fills it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set lives on this stack.
        unsafe { libc::sigpending(&mut set) == 0 && libc::sigismember(&set, self.signo) == 1 }
    }
}

impl Drop for BlockedSignal {
    fn drop(&mut self) {
        while self.pending() {
            if !matches!(self.wait(Duration::ZERO), Ok(true)) {
                break;
            }
        }
        // SAFETY: restores the mask saved in `block`; the set lives in `self`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// A POSIX timer on `CLOCK_MONOTONIC` that sends a signal ([`timer_signal`], or any the
/// caller handles) to one thread (`SIGEV_THREAD_ID`); deleted on drop. The one POSIX timer of
/// osprim: `notify.timer` and `notify.signal` both use it.
pub struct PosixTimer {
    id: libc::timer_t,
}

// SAFETY: a `timer_t` is a kernel timer id; `timer_settime`, `timer_getoverrun` and
// `timer_delete` may be called from any thread of the process.
unsafe impl Send for PosixTimer {}
// SAFETY: as above; the methods take `&self` and the kernel serialises settime calls.
unsafe impl Sync for PosixTimer {}

impl PosixTimer {
    /// A timer that signals thread `tid` (of this process) with `signo`.
    pub fn to_thread(tid: libc::pid_t, signo: libc::c_int) -> io::Result<PosixTimer> {
        // SAFETY: zeroed is a valid sigevent; the fields we use are set below.
        let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
        ev.sigev_notify = libc::SIGEV_THREAD_ID;
        ev.sigev_signo = signo;
        ev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `ev` and `id` live on this stack; the kernel copies `ev`.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixTimer { id })
    }

    /// Arms the timer once, to expire at `at` on `CLOCK_MONOTONIC` (absolute).
    #[inline(always)]
    pub fn arm_at(&self, at: libc::timespec) -> io::Result<()> {
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: at };
        // SAFETY: `spec` lives on this stack; `self.id` is live until drop.
        if unsafe { libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// [`PosixTimer::arm_at`] with the time in nanoseconds of `CLOCK_MONOTONIC`.
    #[inline(always)]
    pub fn arm_at_ns(&self, at_ns: u64) -> io::Result<()> {
        self.arm_at(libc::timespec {
            tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
        })
    }

    /// Expiries merged into the last signal delivered (`timer_getoverrun`): 0 when every
    /// expiry was its own signal.
    pub fn overrun(&self) -> i32 {
        // SAFETY: `self.id` is live until drop.
        unsafe { libc::timer_getoverrun(self.id) }
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: deletes the timer made in `to_thread`, once.
        unsafe { libc::timer_delete(self.id) };
    }
}

impl PosixTimer {
    /// A timer that signals the process with `signo` (`SIGEV_SIGNAL`): the kernel delivers it
    /// to any thread that does not block it.
    pub fn to_process(signo: libc::c_int) -> io::Result<PosixTimer> {
        // SAFETY: zeroed is a valid sigevent; the fields we use are set below.
        let mut ev: libc::sigevent = unsafe { std::mem::zeroed() };
        ev.sigev_notify = libc::SIGEV_SIGNAL;
        ev.sigev_signo = signo;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `ev` and `id` live on this stack; the kernel copies `ev`.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixTimer { id })
    }

    /// Arms the timer to expire every `period`, the first time one `period` from now.
    pub fn arm_every(&self, period: Duration) -> io::Result<()> {
        let ts = libc::timespec { tv_sec: period.as_secs() as libc::time_t, tv_nsec: period.subsec_nanos() as _ };
        let spec = libc::itimerspec { it_interval: ts, it_value: ts };
        // SAFETY: `spec` lives on this stack; `self.id` is live until drop.
        if unsafe { libc::timer_settime(self.id, 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Signals the [`Ticker`]'s handler counted, in the whole process.
static TICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// Signals the [`Ticker`]'s handler counted on this thread (`const`-initialised, no
    /// destructor: the handler may touch it).
    static THREAD_TICKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Expiries merged into the signals counted (the timer fired while its signal was still
/// pending: `timer_getoverrun`).
static OVERRUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// The running [`Ticker`]'s timer (null: none), for its handler's `timer_getoverrun`.
static TICKER_TIMER: std::sync::atomic::AtomicPtr<libc::c_void> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// The [`Ticker`]'s handler: three counts, nothing else (async-signal-safe; so is
/// `timer_getoverrun`).
extern "C" fn count_tick(_: libc::c_int) {
    TICKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    THREAD_TICKS.with(|t| t.set(t.get().wrapping_add(1)));
    let id = TICKER_TIMER.load(std::sync::atomic::Ordering::Acquire);
    if !id.is_null() {
        // SAFETY: a timer id of this process; once deleted (a race with the ticker's drop) the
        // call fails with EINVAL and changes nothing. errno is saved and restored.
        let n = unsafe {
            let errno = *libc::__errno_location();
            let n = libc::timer_getoverrun(id);
            *libc::__errno_location() = errno;
            n
        };
        if n > 0 {
            OVERRUNS.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A periodic signal to the whole process (the stress test's 1 kHz timer, Go!'s timer
/// interrupt): a [`PosixTimer::to_process`] whose signal a counting handler takes, landing on
/// whichever thread runs. On drop the timer is deleted, any pending signal discarded (the
/// disposition set to `SIG_IGN` for a moment) and the disposition it replaced put back.
pub struct Ticker {
    timer: Option<PosixTimer>,
    disposition: Option<crate::disposition::Disposition>,
    signo: libc::c_int,
}

impl Ticker {
    /// Installs the counting handler for `signo` (`SA_RESTART`) and starts a timer sending it
    /// to the process every `period`.
    pub fn start(signo: libc::c_int, period: Duration) -> io::Result<Ticker> {
        // SAFETY: `count_tick` only adds to an atomic and a const thread-local.
        let disposition = unsafe { crate::disposition::Disposition::handle(signo, count_tick, libc::SA_RESTART) }?;
        let mut t = Ticker { timer: None, disposition: Some(disposition), signo };
        let timer = PosixTimer::to_process(signo)?;
        TICKER_TIMER.store(timer.id, std::sync::atomic::Ordering::Release);
        timer.arm_every(period)?;
        t.timer = Some(timer);
        Ok(t)
    }

    /// Signals counted in the process since it started (by every ticker).
    pub fn ticks() -> u64 {
        TICKS.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Expiries merged into those signals (the signal was still pending when the timer fired
    /// again), since the process started.
    pub fn overruns() -> u64 {
        OVERRUNS.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Signals counted on the calling thread since it started.
    pub fn thread_ticks() -> u64 {
        THREAD_TICKS.with(std::cell::Cell::get)
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        TICKER_TIMER.store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
        drop(self.timer.take());
        // Setting SIG_IGN discards a pending instance (POSIX), so none reaches the default
        // action (which ends the process) once the old disposition is back.
        if let Ok(ignoring) = crate::disposition::Disposition::ignoring(self.signo) {
            ignoring.keep_current();
        }
        drop(self.disposition.take());
    }
}

/// How many POSIX timers this process owns now (the `/proc/self/timers` entries), for tests
/// that prove timers are deleted; `None` when the file cannot be read.
pub fn posix_timers_now() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/timers").ok()?;
    Some(text.lines().filter(|l| l.starts_with("ID:")).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_timer_signals_its_thread_and_is_deleted() {
        let _s = crate::testing::serial();
        let before = posix_timers_now();
        let tid = nix::unistd::gettid().as_raw();
        let block = BlockedSignal::block(timer_signal()).unwrap();
        assert!(BlockedSignal::is_blocked(timer_signal()));
        {
            let t = PosixTimer::to_thread(tid, timer_signal()).unwrap();
            let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
            let at = libc::timespec { tv_sec: now.tv_sec(), tv_nsec: now.tv_nsec() };
            t.arm_at(at).unwrap();
            assert!(block.wait(Duration::from_secs(2)).unwrap());
            assert_eq!(t.overrun(), 0);
            assert!(!block.wait(Duration::from_millis(5)).unwrap(), "one expiry, one signal");
            if let (Some(b), Some(d)) = (before, posix_timers_now()) {
                assert_eq!(d, b + 1);
            }
        }
        assert_eq!(posix_timers_now(), before, "deleted on drop");
        drop(block);
        // The mask is back: the signal is no longer blocked.
        assert!(!BlockedSignal::is_blocked(timer_signal()));
    }

    #[test]
    fn a_ticker_ticks_and_leaves_nothing_behind() {
        let _s = crate::testing::serial();
        let sig = libc::SIGRTMIN() + 5;
        let before = (posix_timers_now(), crate::disposition::handler_of(sig));
        {
            let _t = Ticker::start(sig, Duration::from_millis(1)).unwrap();
            let t0 = Ticker::ticks();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while Ticker::ticks() < t0 + 20 && std::time::Instant::now() < deadline {
                std::hint::spin_loop();
            }
            assert!(Ticker::ticks() >= t0 + 20, "a 1 kHz ticker ticks");
        }
        assert_eq!((posix_timers_now(), crate::disposition::handler_of(sig)), before);
    }

    #[test]
    fn a_policy_guard_restores_the_policy() {
        let before = current_policy().unwrap();
        match PolicyGuard::switch(Policy { policy: libc::SCHED_FIFO, priority: 10 }) {
            Ok(g) => {
                assert_eq!(current_policy().unwrap(), Policy { policy: libc::SCHED_FIFO, priority: 10 });
                assert_eq!(g.previous(), before);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "only a lack of privilege may refuse"),
        }
        assert_eq!(current_policy().unwrap(), before);
        assert_eq!(Policy { policy: libc::SCHED_FIFO, priority: 95 }.name(), "SCHED_FIFO 95");
    }
}
