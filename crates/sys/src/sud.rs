//! Counting the system calls a piece of code makes, from inside the process and without
//! ptrace or seccomp: Linux's *syscall user dispatch* (`prctl(PR_SET_SYSCALL_USER_DISPATCH)`,
//! x86_64, Linux ≥ 5.11). While it is on for the calling thread and the selector byte says
//! "block", every system call the thread makes from outside one allowed address range is not
//! run but turned into a `SIGSYS`; [`count_syscalls`]'s handler counts it, notes its number,
//! makes the call itself (selector set to "allow" for that moment) and puts the result in the
//! interrupted code's `rax`, so the code runs on as if the kernel had served it directly.
//!
//! The allowed range is glibc's signal-return trampoline (`sa_restorer`, read back from the
//! `SIGSYS` disposition just installed): every handler installed through glibc returns
//! through it, so the handler's own return (and a `SIGSEGV` handler's) is never intercepted.
//! A `SIGSEGV` handler running inside the counted code (write detection) has an empty mask, so
//! its `mprotect` is counted like any other call.
//!
//! For tests and validation, not for timing (each call becomes a signal delivery).
//!
//! # Safety
//! The handler is async-signal-safe: atomics and one raw system call. It re-issues exactly the
//! call the kernel rolled back, with the six argument registers the kernel's ABI defines, and
//! writes its raw result (a value or −errno) where the kernel would have. Calls that cannot be
//! re-issued from a handler (`clone`, `fork`, `exit`, `rt_sigreturn` from elsewhere, `vfork`)
//! must not be made by the counted code; the counted code must not block `SIGSYS`.
#![allow(unsafe_code)]

use super::disposition::Disposition;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};

const PR_SET_SYSCALL_USER_DISPATCH: i64 = 59;
const PR_SYS_DISPATCH_OFF: i64 = 0;
const PR_SYS_DISPATCH_ON: i64 = 1;
const ALLOW: u8 = 0;
const BLOCK: u8 = 1;
/// Numbers kept of the calls counted (the count goes on beyond).
const KEPT: usize = 64;

/// The selector byte the kernel reads at each system call of the dispatching thread.
static SELECTOR: AtomicU8 = AtomicU8::new(ALLOW);
static COUNT: AtomicU64 = AtomicU64::new(0);
static NUMBERS: [AtomicI64; KEPT] = [const { AtomicI64::new(0) }; KEPT];
/// One counting at a time (the statics above are process-wide).
static ONE: Mutex<()> = Mutex::new(());

/// What [`count_syscalls`] saw.
#[derive(Debug)]
pub struct Counted<R> {
    /// The closure's result.
    pub value: R,
    /// System calls the closure made on the calling thread.
    pub syscalls: u64,
    /// Their numbers, in order (the first 64).
    pub numbers: Vec<i64>,
}

/// Syscall user dispatch on for the calling thread, intercepting nothing until
/// [`intercept`]`(true)`; off again (and the `SIGSYS` disposition restored) on drop. One at a
/// time per process (the selector and the count are process-wide).
pub struct Dispatch {
    _restore: Disposition,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl Dispatch {
    /// Installs the `SIGSYS` handler and turns dispatch on. `Err` says why it is unavailable
    /// here (not x86_64, or the kernel refuses syscall user dispatch).
    pub fn start() -> Result<Dispatch, String> {
        if !cfg!(target_arch = "x86_64") {
            return Err("syscall user dispatch is used on x86_64 only".into());
        }
        let one = ONE.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: `on_sigsys` is async-signal-safe (module doc) and lives for ever.
        let restore = unsafe { Disposition::handle_info(libc::SIGSYS, on_sigsys, 0) }
            .map_err(|e| format!("installing the SIGSYS handler: {e}"))?;
        let restorer = restorer_of(libc::SIGSYS).ok_or("glibc set no signal-return trampoline for SIGSYS")?;
        SELECTOR.store(ALLOW, Ordering::SeqCst);
        // SAFETY: turns dispatch on for this thread: the selector is a static byte, the range is
        // the trampoline's first 16 bytes (its `mov` and `syscall`); no memory is written.
        let on = unsafe {
            super::raw::syscall5(
                libc::SYS_prctl,
                PR_SET_SYSCALL_USER_DISPATCH,
                PR_SYS_DISPATCH_ON,
                restorer as i64,
                16,
                SELECTOR.as_ptr() as i64,
            )
        };
        super::raw::check(on).map_err(|e| format!("prctl(PR_SET_SYSCALL_USER_DISPATCH): {e}"))?;
        COUNT.store(0, Ordering::SeqCst);
        Ok(Dispatch { _restore: restore, _one: one })
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        SELECTOR.store(ALLOW, Ordering::SeqCst);
        // SAFETY: turns dispatch off for this thread (selector "allow": not intercepted).
        let _ = unsafe {
            super::raw::syscall5(libc::SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0)
        };
    }
}

/// Whether the dispatching thread's calls are intercepted from now on (the selector byte the
/// kernel reads at each call: no system call is made to change it).
#[inline(always)]
pub fn intercept(on: bool) {
    SELECTOR.store(if on { BLOCK } else { ALLOW }, Ordering::SeqCst);
}

/// Calls intercepted since dispatch was started.
pub fn intercepted() -> u64 {
    COUNT.load(Ordering::SeqCst)
}

/// Runs `f` on the calling thread and counts the system calls it makes (other threads' calls
/// are not seen). `Err` says why counting is unavailable here (not x86_64, or the kernel
/// refuses syscall user dispatch). `f` must not fork, clone, exit the thread or block `SIGSYS`
/// (see the module doc).
pub fn count_syscalls<R>(f: impl FnOnce() -> R) -> Result<Counted<R>, String> {
    let dispatch = Dispatch::start()?;
    intercept(true);
    let value = f();
    intercept(false);
    let syscalls = intercepted();
    drop(dispatch);
    let numbers = NUMBERS[..(syscalls as usize).min(KEPT)].iter().map(|n| n.load(Ordering::SeqCst)).collect();
    Ok(Counted { value, syscalls, numbers })
}

/// The `sa_restorer` glibc installed with `sig`'s handler.
fn restorer_of(sig: libc::c_int) -> Option<usize> {
    // SAFETY: all zeroes is a valid `sigaction`; a NULL new action only reads.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut act) } != 0 {
        return None;
    }
    act.sa_restorer.map(|f| f as usize)
}

#[cfg(target_arch = "x86_64")]
extern "C" fn on_sigsys(_: libc::c_int, _: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: with SA_SIGINFO the third argument is the interrupted thread's `ucontext_t`.
    let gregs = unsafe { &mut (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    let reg = |r: libc::c_int| gregs[r as usize];
    // The kernel rolled the call back: rax holds its number again.
    let nr = reg(libc::REG_RAX);
    let n = COUNT.fetch_add(1, Ordering::SeqCst) as usize;
    if n < KEPT {
        NUMBERS[n].store(nr, Ordering::SeqCst);
    }
    SELECTOR.store(ALLOW, Ordering::SeqCst);
    // SAFETY: the very call the interrupted code made, with its own arguments (module doc).
    let ret = unsafe {
        super::raw::syscall6(
            nr,
            reg(libc::REG_RDI),
            reg(libc::REG_RSI),
            reg(libc::REG_RDX),
            reg(libc::REG_R10),
            reg(libc::REG_R8),
            reg(libc::REG_R9),
        )
    };
    SELECTOR.store(BLOCK, Ordering::SeqCst);
    gregs[libc::REG_RAX as usize] = ret;
}

#[cfg(not(target_arch = "x86_64"))]
extern "C" fn on_sigsys(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn counts_each_call_and_passes_results_through() {
        let _serial = crate::testing::serial();
        let dir = std::env::temp_dir();
        let got = count_syscalls(|| {
            let a = super::super::raw::getppid();
            let b = super::super::raw::getppid();
            // glibc's wrapper, with an error result passed back as errno.
            // SAFETY: close of an invalid descriptor only fails.
            let bad = unsafe { libc::close(-1) };
            let err = std::io::Error::last_os_error().raw_os_error();
            let md = std::fs::metadata(&dir).is_ok();
            (a, b, bad, err, md)
        });
        let got = match got {
            Ok(g) => g,
            Err(why) => {
                eprintln!("syscall user dispatch unavailable: {why}");
                return;
            }
        };
        let (a, b, bad, err, md) = got.value;
        assert_eq!(a, b);
        assert_eq!(a, i64::from(std::os::unix::process::parent_id()));
        assert_eq!((bad, err), (-1, Some(libc::EBADF)));
        assert!(md, "statx went through");
        assert_eq!(got.syscalls, 4, "{:?}", got.numbers);
        assert_eq!(got.numbers[..3], [libc::SYS_getppid, libc::SYS_getppid, libc::SYS_close]);
        // Off again: calls after it are not counted, and SIGSYS is ours no more.
        let again = count_syscalls(|| ()).expect("a second counting");
        assert_eq!(again.syscalls, 0);
    }
}
