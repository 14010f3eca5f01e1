//! The stamping signal handler of `notify.signal` and its disposition guard; the benchmark
//! aims the signal with [`super::timer::PosixTimer`] or [`super::async_owner::AsyncOwner`].
//!
//! The handler ([`on_notify`]) reads the clock on entry, notes the loop's last stamp before it
//! was interrupted, the signal's `si_code` and `si_fd`, and whether it runs on the receiver
//! thread (a thread-local flag the receiver sets), reads the clock again and returns. It
//! publishes a run by bumping a counter last (release), so a reader that sees the count
//! (acquire) sees that run's fields. Only one `notify.signal` runs at a time (the benchmark
//! holds a lock), so the fields are global.
//!
//! # Safety
//! The handler touches only atomics, a `const`-initialised thread-local `Cell<bool>` (no lazy
//! initialisation, no destructor) and the counter read of `timer::tsc` or the vDSO clock:
//! all async-signal-safe. It reads the `siginfo_t` the kernel passes, through a `#[repr(C)]`
//! view of the kernel's 64-bit layout, only on 64-bit targets. [`Installed`] saves the
//! disposition it replaces and puts it back on drop. Every other call passes pointers to
//! locals that outlive it.
#![allow(unsafe_code)]

use super::disposition::Disposition;
use std::cell::Cell;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64};

/// The stamping clock: the cycle counter (as `Timer::start`) or `CLOCK_MONOTONIC_RAW`.
static COUNTER: AtomicBool = AtomicBool::new(true);
/// The receiver loop's latest stamp.
pub static LAST: AtomicU64 = AtomicU64::new(0);
static RUNS: AtomicU64 = AtomicU64::new(0);
static ON_RECEIVER: AtomicU64 = AtomicU64::new(0);
static ENTRY: AtomicU64 = AtomicU64::new(0);
static EXIT: AtomicU64 = AtomicU64::new(0);
static LAST_AT_ENTRY: AtomicU64 = AtomicU64::new(0);
static SI_CODE: AtomicI32 = AtomicI32::new(0);
static SI_FD: AtomicI32 = AtomicI32::new(-1);

thread_local! {
    static RECEIVER: Cell<bool> = const { Cell::new(false) };
}

/// Chooses the stamping clock (the run's timer kind) and zeroes the handler's counts.
pub fn reset(counter: bool) {
    COUNTER.store(counter, Relaxed);
    for a in [&LAST, &RUNS, &ON_RECEIVER, &ENTRY, &EXIT, &LAST_AT_ENTRY] {
        a.store(0, Relaxed);
    }
    SI_CODE.store(0, Relaxed);
    SI_FD.store(-1, Release);
}

/// Marks the calling thread as the receiver (the handler counts runs on it).
pub fn mark_receiver() {
    RECEIVER.with(|r| r.set(true));
}

/// Reads the stamping clock the way `Timer::start` does.
#[inline(always)]
pub fn stamp() -> u64 {
    if COUNTER.load(Relaxed) { crate::tsc::start() } else { crate::clock::monotonic_raw_ns() }
}

/// Handler runs so far (acquire: the latest run's fields are visible after this).
#[inline(always)]
pub fn runs() -> u64 {
    RUNS.load(Acquire)
}

/// Handler runs on the receiver thread so far.
pub fn runs_on_receiver() -> u64 {
    ON_RECEIVER.load(Acquire)
}

/// What the latest handler run recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HandlerRun {
    /// Stamp at handler entry.
    pub entry: u64,
    /// Stamp just before the handler returns.
    pub exit: u64,
    /// The receiver loop's last stamp before the handler ran.
    pub last_before: u64,
    /// The signal's `si_code`.
    pub si_code: i32,
    /// Its `si_fd` (`-1` where not read).
    pub si_fd: i32,
}

/// The latest run's fields (read after [`runs`] showed it).
pub fn last_run() -> HandlerRun {
    HandlerRun {
        entry: ENTRY.load(Relaxed),
        exit: EXIT.load(Relaxed),
        last_before: LAST_AT_ENTRY.load(Relaxed),
        si_code: SI_CODE.load(Relaxed),
        si_fd: SI_FD.load(Relaxed),
    }
}

/// The kernel's `siginfo_t` head and its `_sigpoll` member, 64-bit layout.
#[repr(C)]
struct SigPollView {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    pad: libc::c_int,
    band: libc::c_long,
    fd: libc::c_int,
}

extern "C" fn on_notify(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let entry = stamp();
    let last = LAST.load(Relaxed);
    let (code, fd) = read_info(info);
    if RECEIVER.with(Cell::get) {
        ON_RECEIVER.fetch_add(1, Relaxed);
    }
    ENTRY.store(entry, Relaxed);
    LAST_AT_ENTRY.store(last, Relaxed);
    SI_CODE.store(code, Relaxed);
    SI_FD.store(fd, Relaxed);
    EXIT.store(stamp(), Relaxed);
    RUNS.fetch_add(1, Release);
}

#[inline(always)]
fn read_info(info: *const libc::siginfo_t) -> (i32, i32) {
    if info.is_null() {
        return (0, -1);
    }
    #[cfg(target_pointer_width = "64")]
    {
        // SAFETY: the kernel passes a full siginfo_t (128 bytes); the view covers its first
        // 28 bytes in the 64-bit layout (`_sigpoll` starts at offset 16).
        let v = unsafe { &*info.cast::<SigPollView>() };
        let _ = (v.signo, v.errno, v.pad, v.band);
        (v.code, v.fd)
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        // SAFETY: as above; only the head, laid out alike everywhere.
        (unsafe { (*info).si_code }, -1)
    }
}

/// The handler `sig` has now (`SIG_DFL` is 0), or `None` when the query fails.
pub use super::disposition::handler_of as disposition;

/// A real-time signal nobody in this process handles (its disposition is `SIG_DFL`), away
/// from both ends of the range (glibc and other libraries take the lowest ones).
pub fn unused_signal() -> Option<libc::c_int> {
    (libc::SIGRTMIN() + 4..=libc::SIGRTMAX() - 4).find(|&s| disposition(s) == Some(libc::SIG_DFL))
}

/// The stamping handler installed for a signal; the disposition it replaced comes back on drop
/// (the one guard, [`Disposition`]).
pub struct Installed {
    _restore: Disposition,
}

impl Installed {
    /// Installs [`on_notify`] for `sig` (`SA_SIGINFO | SA_RESTART`, nothing masked).
    pub fn new(sig: libc::c_int) -> std::io::Result<Installed> {
        // SAFETY: the handler is async-signal-safe (module doc) and a static function.
        Ok(Installed { _restore: unsafe { Disposition::handle_info(sig, on_notify, libc::SA_RESTART) }? })
    }

    /// The handler's address, as [`disposition`] reports it while installed.
    pub fn handler() -> libc::sighandler_t {
        on_notify as *const () as libc::sighandler_t
    }
}

/// Blocks (`true`) or unblocks `sig` for the calling thread.
pub fn set_blocked(sig: libc::c_int, blocked: bool) -> std::io::Result<()> {
    // SAFETY: an empty set is initialised by sigemptyset before use; both live on this stack.
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        let how = if blocked { libc::SIG_BLOCK } else { libc::SIG_UNBLOCK };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut())
    };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::from_raw_os_error(rc)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_signal_reaches_the_handler_and_everything_comes_back() {
        let _s = crate::testing::serial();
        let sig = unused_signal().expect("a free real-time signal");
        let before = disposition(sig);
        let tid = crate::process::gettid();
        reset(true);
        mark_receiver();
        {
            let _h = Installed::new(sig).unwrap();
            assert_eq!(disposition(sig), Some(Installed::handler()));
            set_blocked(sig, false).unwrap();
            let t = crate::timer::PosixTimer::to_thread(tid, sig).unwrap();
            let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
            let now_ns = now.tv_sec() as u64 * 1_000_000_000 + now.tv_nsec() as u64;
            t.arm_at_ns(now_ns + 200_000).unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while runs() == 0 && std::time::Instant::now() < deadline {
                LAST.store(stamp(), Relaxed);
            }
            assert_eq!(runs(), 1);
            assert_eq!(runs_on_receiver(), 1);
            let r = last_run();
            assert_eq!(r.si_code, libc::SI_TIMER);
            assert!(r.entry <= r.exit && r.last_before <= r.entry, "{r:?}");
        }
        assert_eq!(disposition(sig), before);
    }
}
