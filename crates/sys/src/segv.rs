//! The one process-wide SIGSEGV handler. Memory that osprim protects on purpose registers here
//! ([`register`]) with the address range it owns and an owner ([`SegvOwner`]) that resolves a
//! fault in it: the timing catcher of `fault.user.sigsegv` ([`super::fault::SegvCatcher`]) and
//! the write detection of `rvm` ([`super::wprotect`]). See sigaction(2).
//!
//! - The handler is installed when the first range registers, with `SA_SIGINFO | SA_RESTART`;
//!   the disposition it replaced is saved, and put back when the last range goes, but only if
//!   ours is still the current one (otherwise that would remove a handler installed over ours
//!   since). Not `SA_ONSTACK`: on the alternate signal stack, the first fault a thread takes
//!   also faults in that stack's pages, a kernel page fault inside the timed access of
//!   `fault.user.sigsegv`, whose check requires none. The price: a stack overflow while a range
//!   is registered kills the process with SIGSEGV without Rust's "stack overflow" message.
//! - A fault is dispatched by its address (`si_addr`) to the owner whose range holds it. If no
//!   range holds it, or its owner declines it, it is chained to the saved disposition: a
//!   handler function is called as what `sigaction` said it is (`SA_SIGINFO` or not);
//!   `SIG_DFL` or `SIG_IGN` set the default action back and the handler returns, so the
//!   retried instruction faults again and the process dies of it as it would have without
//!   osprim. Another SIGSEGV handler installed over ours must likewise pass on what it does not
//!   own, to ours as its previous one.
//! - A registration may ask for a clock reading at the handler's very entry
//!   ([`EntryClock`]), handed to the owner in [`Fault::entry`]: the first thing the handler
//!   does, so what the timing catcher calls "trap" ends where the handler begins.
//! - On x86-64 the fault's kind (read or write) comes from the page-fault error code in the
//!   signal context ([`Fault::write`]); `rvm`'s read tracking needs it to tell the two apart at
//!   the first fault on a `PROT_NONE` page.
//!
//! # Safety
//! - The handler is async-signal-safe: it reads the cycle counter or `clock_gettime`, atomics,
//!   the signal context's error code and the saved disposition, calls the owner's `resolve` (async-signal-safe by the contract
//!   of the unsafe trait [`SegvOwner`]) and `sigaction`; it allocates nothing and takes no lock.
//! - The table is a fixed array of slots of atomics, each guarded by a sequence number (a
//!   seqlock): the handler reads a slot's range, owner and resolve function and uses them only
//!   if the sequence number was even and unchanged around the reads, so it never combines the
//!   range of one registration with the owner of another. Slots are written only with the
//!   registration lock held.
//! - A [`Registration`] holds its owner (an `Arc`) and clears its slot before releasing it.
//!   A handler already running for an address in the range may still use the owner after the
//!   slot is cleared; that needs a thread to touch the owner's memory while the owner drops its
//!   registration, which the owners exclude (the memory is accessed only through the owner,
//!   which is held exclusively or borrowed while it drops).
//! - The saved disposition is written only with the lock held while our handler is not
//!   installed, so the handler never reads it while it changes.
#![allow(unsafe_code)]

use crate::disposition::{self, Disposition};
use std::cell::UnsafeCell;
use std::io;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex};

/// A fault handed to its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The faulting address (`si_addr`).
    pub addr: usize,
    /// Why it faulted (`si_code`: `SEGV_MAPERR` 1, `SEGV_ACCERR` 2, …).
    pub code: i32,
    /// The clock at the handler's entry, if a registration asked for one ([`EntryClock`]); else 0.
    pub entry: u64,
    /// Whether the faulting access was a write, where the CPU says so: on x86-64 the page-fault
    /// error code the kernel puts in the signal context (`REG_ERR`, bit 1); `None` elsewhere
    /// ([`access_kind_known`]).
    pub write: Option<bool>,
}

/// Whether [`Fault::write`] is known on this architecture (x86-64), so an owner can tell a
/// read from a write at the first fault on a `PROT_NONE` page.
pub const fn access_kind_known() -> bool {
    cfg!(target_arch = "x86_64")
}

/// Whether the fault whose signal context is `uctx` was a write (x86-64: bit 1 of the page-fault
/// error code, `REG_ERR`); `None` where that is not known.
#[inline(always)]
fn access_is_write(uctx: *mut libc::c_void) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        if uctx.is_null() {
            return None;
        }
        // SAFETY: with SA_SIGINFO the third argument is the interrupted thread's `ucontext_t`,
        // valid for the handler's duration; for SIGSEGV from a page fault the kernel stores the
        // fault's error code in `gregs[REG_ERR]`.
        let err = unsafe { (*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_ERR as usize] };
        Some(err & 2 != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = uctx;
        None
    }
}

/// `si_code` of a fault on a mapped page without the needed permission (`<asm/siginfo.h>`).
pub const SEGV_ACCERR: i32 = 2;

/// Which clock the handler reads first thing, for [`Fault::entry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryClock {
    /// None (`entry` is 0).
    None,
    /// The cycle counter (`crate::tsc::start`).
    Cycles,
    /// `CLOCK_MONOTONIC_RAW` in nanoseconds.
    MonotonicRaw,
}

/// Resolves faults in a registered range.
///
/// # Safety
/// [`SegvOwner::resolve`] runs inside the SIGSEGV handler, on whatever thread faulted, at any
/// point of that thread's work: it must be async-signal-safe (atomics, plain reads and writes
/// of memory no one else is using, async-signal-safe system calls; no allocation, lock,
/// formatting or panic), and leave `errno` as it found it. Whatever it touches must stay valid
/// while memory of the range can still be accessed (see the module's safety notes).
pub unsafe trait SegvOwner: Send + Sync + 'static {
    /// Resolves `fault` (an address inside the owner's range) so that the faulting access
    /// succeeds when retried, and returns true; or returns false to pass it on to the
    /// disposition in force before osprim's.
    fn resolve(&self, fault: &Fault) -> bool;
}

/// Why a range could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum SegvError {
    /// Every slot of the table is in use.
    #[error("too many SIGSEGV-handled ranges at once (at most {0})")]
    Full(usize),
    /// `sigaction` failed.
    #[error("sigaction ({what}): {source}")]
    Sigaction {
        /// What the call was for.
        what: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// How the handler calls an owner: `owner` is the `Arc<T>`'s pointer, cast to `*const ()`.
type Resolve = unsafe fn(owner: *const (), fault: &Fault) -> bool;

/// # Safety
/// `owner` must point to a live `T`.
unsafe fn resolve_as<T: SegvOwner>(owner: *const (), fault: &Fault) -> bool {
    // SAFETY: the caller passes the pointer registered with this function, that of a live `T`.
    unsafe { &*owner.cast::<T>() }.resolve(fault)
}

/// Ranges at once: enough for the stress test's 10,000 protection domains (each registers
/// its data region). A fault scans the slots up to the highest in use, so a process with few
/// ranges pays for few; the table is 40 bytes a slot of zeroed statics.
pub const SLOTS: usize = 16 * 1024;

struct Slot {
    /// Even: stable; odd: being written. A slot with `len` 0 is free.
    seq: AtomicUsize,
    base: AtomicUsize,
    len: AtomicUsize,
    /// A [`Resolve`] as an address.
    resolve: AtomicUsize,
    owner: AtomicPtr<()>,
}

impl Slot {
    const fn free() -> Slot {
        Slot {
            seq: AtomicUsize::new(0),
            base: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            resolve: AtomicUsize::new(0),
            owner: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Writes the slot (the registration lock held).
    fn write(&self, base: usize, len: usize, resolve: usize, owner: *mut ()) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.base.store(base, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.resolve.store(resolve, Ordering::Relaxed);
        self.owner.store(owner, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The slot's resolve function and owner if it is stable and its range holds `addr`
    /// (async-signal-safe).
    #[inline(always)]
    fn lookup(&self, addr: usize) -> Option<(usize, *mut ())> {
        let s = self.seq.load(Ordering::Acquire);
        if s & 1 == 1 {
            return None;
        }
        let (base, len) = (self.base.load(Ordering::Relaxed), self.len.load(Ordering::Relaxed));
        let (resolve, owner) = (self.resolve.load(Ordering::Relaxed), self.owner.load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != s || len == 0 || addr.wrapping_sub(base) >= len {
            return None;
        }
        Some((resolve, owner))
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::free() }; SLOTS];
/// One past the highest slot in use: the handler looks no further.
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// What the handler reads on entry: 0 nothing, 1 cycles, 2 `CLOCK_MONOTONIC_RAW`.
static CLOCK: AtomicU8 = AtomicU8::new(0);
/// Faults no range held, passed on.
static STRAY: AtomicU64 = AtomicU64::new(0);
/// Ranges registered (the handler is installed while positive); the registration lock.
static LIVE: Mutex<usize> = Mutex::new(0);
/// The disposition before ours, for chaining and restoring.
static PREVIOUS: Previous = Previous { action: UnsafeCell::new(MaybeUninit::uninit()), valid: AtomicBool::new(false) };

struct Previous {
    action: UnsafeCell<MaybeUninit<Disposition>>,
    valid: AtomicBool,
}

// SAFETY: `action` is written only with `LIVE` locked while our handler is not installed (so
// the handler cannot be reading it), and `valid` publishes it.
unsafe impl Sync for Previous {}

/// A registered range; dropping it unregisters the range, and the last one uninstalls the
/// handler.
pub struct Registration {
    slot: usize,
    sets_clock: bool,
    _owner: Arc<dyn Send + Sync>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("slot", &self.slot).finish_non_exhaustive()
    }
}

/// Registers `len` bytes at `base`, whose faults `owner` resolves; installs the handler if this
/// is the first range. `clock`: read at the handler's entry for this owner's faults (it is
/// read for every fault while the registration lives; the last registration asking for one
/// sets which).
pub fn register<T: SegvOwner>(
    owner: Arc<T>,
    base: usize,
    len: usize,
    clock: EntryClock,
) -> Result<Registration, SegvError> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let slot = TABLE.iter().position(|s| s.len.load(Ordering::Relaxed) == 0).ok_or(SegvError::Full(SLOTS))?;
    if *live == 0 {
        install()?;
    }
    *live += 1;
    let resolve = resolve_as::<T> as Resolve as usize;
    TABLE[slot].write(base, len.max(1), resolve, Arc::as_ptr(&owner).cast_mut().cast());
    HIGH.fetch_max(slot + 1, Ordering::Release);
    let sets_clock = clock != EntryClock::None;
    if sets_clock {
        CLOCK.store(if clock == EntryClock::Cycles { 1 } else { 2 }, Ordering::Release);
    }
    Ok(Registration { slot, sets_clock, _owner: owner })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        TABLE[self.slot].write(0, 0, 0, ptr::null_mut());
        let high = TABLE.iter().rposition(|s| s.len.load(Ordering::Relaxed) != 0).map_or(0, |i| i + 1);
        HIGH.store(high, Ordering::Release);
        if self.sets_clock {
            CLOCK.store(0, Ordering::Release);
        }
        *live -= 1;
        if *live == 0 {
            restore();
        }
    }
}

/// SIGSEGVs that no registered range held, since the process started.
pub fn stray_faults() -> u64 {
    STRAY.load(Ordering::Relaxed)
}

/// Saves the current disposition and installs ours (`LIVE` locked, no range registered).
fn install() -> Result<(), SegvError> {
    let saved = Disposition::save(libc::SIGSEGV)
        .map_err(|source| SegvError::Sigaction { what: "read the SIGSEGV disposition", source })?;
    // SAFETY: our handler is not installed (the caller holds LIVE and no range is registered),
    // so nothing reads PREVIOUS meanwhile.
    unsafe { (*PREVIOUS.action.get()).write(saved) };
    PREVIOUS.valid.store(true, Ordering::Release);
    // SAFETY: `dispatch` is async-signal-safe (module safety notes) and takes the three
    // arguments SA_SIGINFO promises.
    match unsafe { Disposition::handle_info(libc::SIGSEGV, dispatch, libc::SA_RESTART) } {
        // What it replaced is what PREVIOUS holds; `restore` puts that back.
        Ok(installed) => installed.keep_current(),
        Err(source) => {
            PREVIOUS.valid.store(false, Ordering::Release);
            // SAFETY: written above; our handler was not installed, so nothing reads it.
            unsafe { (*PREVIOUS.action.get()).assume_init_read() }.keep_current();
            return Err(SegvError::Sigaction { what: "install the SIGSEGV handler", source });
        }
    }
    Ok(())
}

/// Puts the saved disposition back, unless another handler was installed over ours since
/// (`LIVE` locked, the last range gone).
fn restore() {
    if !PREVIOUS.valid.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: valid (flag), written by `install`, and taken out once (the flag is cleared
    // below); a copy of plain data, so the handler may go on reading it until then.
    let previous = unsafe { (*PREVIOUS.action.get()).assume_init_read() };
    if disposition::handler_of(libc::SIGSEGV) == Some(dispatch as *const () as libc::sighandler_t) {
        drop(previous); // puts back the disposition ours replaced
    } else {
        previous.keep_current();
    }
    PREVIOUS.valid.store(false, Ordering::Release);
}

#[inline(always)]
fn entry_clock() -> u64 {
    match CLOCK.load(Ordering::Relaxed) {
        0 => 0,
        1 => crate::tsc::start(),
        _ => crate::clock::monotonic_raw_ns(),
    }
}

extern "C" fn dispatch(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let entry = entry_clock();
    if !info.is_null() {
        // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo; for SIGSEGV `si_addr` is
        // the fault address.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        let high = HIGH.load(Ordering::Acquire).min(SLOTS);
        for slot in &TABLE[..high] {
            if let Some((resolve, owner)) = slot.lookup(addr) {
                // SAFETY: `resolve` was stored from a `Resolve` (`resolve_as::<T>`) together
                // with `owner`, a live `T` held by its registration (seqlock: both from the same
                // registration); a fault in its range means its memory is in use, so the
                // registration is not being dropped (module safety notes).
                let handled = unsafe {
                    let resolve = std::mem::transmute::<usize, Resolve>(resolve);
                    resolve(owner, &Fault { addr, code, entry, write: access_is_write(uctx) })
                };
                if handled {
                    return;
                }
                chain(sig, info, uctx);
                return;
            }
        }
    }
    STRAY.fetch_add(1, Ordering::Relaxed);
    chain(sig, info, uctx);
}

/// Hands a fault that is not ours to the previous disposition.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    if !PREVIOUS.valid.load(Ordering::Acquire) {
        reset_to_default(sig);
        return;
    }
    // SAFETY: valid (flag above) and not written while our handler is installed.
    let prev = unsafe { (*PREVIOUS.action.get()).assume_init_ref() }.saved();
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // Returning re-executes the faulting instruction, which now gets the default action.
        reset_to_default(sig);
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO, sa_sigaction is a three-argument handler, called with the
        // arguments the kernel gave us.
        let f = unsafe {
            std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)>(
                h,
            )
        };
        f(sig, info, uctx);
    } else {
        // SAFETY: without SA_SIGINFO, sa_sigaction is a one-argument handler.
        let f = unsafe { std::mem::transmute::<libc::sighandler_t, extern "C" fn(libc::c_int)>(h) };
        f(sig);
    }
}

fn reset_to_default(sig: libc::c_int) {
    let _ = disposition::reset(sig);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{Prot, Region};

    /// Unprotects the faulting page and counts.
    struct Unprotect {
        region: Region,
        resolved: AtomicU64,
    }

    // SAFETY: `resolve` calls only mprotect (async-signal-safe, leaves errno alone on
    // success; the page index is inside the region, as the dispatcher hands over only
    // addresses in the range, so `protect` allocates no error) and an atomic add; the region
    // lives in the owner, kept by the registration.
    unsafe impl SegvOwner for Unprotect {
        fn resolve(&self, fault: &Fault) -> bool {
            let page = self.region.len() / self.region.pages();
            let i = (fault.addr - self.region.page_addr(0)) / page;
            if self.region.protect(i, 1, Prot::ReadWrite).is_err() {
                return false;
            }
            self.resolved.fetch_add(1, Ordering::Relaxed);
            true
        }
    }

    fn current_handler() -> libc::sighandler_t {
        disposition::handler_of(libc::SIGSEGV).expect("sigaction query")
    }

    #[test]
    fn faults_go_to_the_owner_of_the_address_and_the_last_one_uninstalls() {
        let _serial = crate::testing::serial();
        let before = current_handler();
        let owner = |pages| {
            let region = Region::anon(pages).expect("mmap");
            region.protect(0, pages, Prot::None).expect("mprotect");
            Arc::new(Unprotect { region, resolved: AtomicU64::new(0) })
        };
        let (a, b) = (owner(2), owner(3));
        let ra = register(Arc::clone(&a), a.region.page_addr(0), a.region.len(), EntryClock::None).expect("a");
        let rb = register(Arc::clone(&b), b.region.page_addr(0), b.region.len(), EntryClock::Cycles).expect("b");
        assert_eq!(current_handler(), dispatch as *const () as libc::sighandler_t);
        b.region.write(2, 5);
        a.region.write(1, 4);
        assert_eq!(b.region.read(2), 5);
        assert_eq!((a.resolved.load(Ordering::Relaxed), b.resolved.load(Ordering::Relaxed)), (1, 1));
        drop(rb);
        assert_eq!(current_handler(), dispatch as *const () as libc::sighandler_t, "a is still registered");
        drop(ra);
        assert_eq!(current_handler(), before, "the previous disposition is back");
    }

    static PREVIOUS_HITS: AtomicU64 = AtomicU64::new(0);

    /// A handler that was there before osprim's: makes the faulting page writable.
    extern "C" fn previous_handler(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: SA_SIGINFO: the kernel (or the dispatcher, passing on what it got) gives a
        // valid siginfo; mprotect of the faulting page is async-signal-safe.
        unsafe {
            let page = crate::fault::page_size();
            let addr = (*info).si_addr() as usize & !(page - 1);
            libc::mprotect(addr as *mut libc::c_void, page, libc::PROT_READ | libc::PROT_WRITE);
        }
        PREVIOUS_HITS.fetch_add(1, Ordering::Relaxed);
    }

    const CHILD_ENV: &str = "OSPRIM_SEGV_CHAIN_CHILD";

    /// Runs only in the fresh process started by the test below (it changes the process's
    /// SIGSEGV disposition for good).
    #[test]
    fn faults_nobody_owns_go_to_the_previous_handler() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return;
        }
        // SAFETY: installs the async-signal-safe handler above, for good (this process only).
        unsafe { Disposition::handle_info(libc::SIGSEGV, previous_handler, 0) }.expect("sigaction").keep_current();
        let owned = Region::anon(1).expect("mmap");
        owned.protect(0, 1, Prot::None).expect("mprotect");
        let owner = Arc::new(Unprotect { region: owned, resolved: AtomicU64::new(0) });
        let stray = Region::anon(1).expect("mmap");
        stray.protect(0, 1, Prot::None).expect("mprotect");
        let strays = stray_faults();
        let r = register(Arc::clone(&owner), owner.region.page_addr(0), owner.region.len(), EntryClock::None)
            .expect("register");
        stray.write(0, 1);
        assert_eq!(PREVIOUS_HITS.load(Ordering::Relaxed), 1, "the previous handler got the stray fault");
        assert_eq!(stray_faults() - strays, 1);
        owner.region.write(0, 1);
        assert_eq!(owner.resolved.load(Ordering::Relaxed), 1);
        assert_eq!(PREVIOUS_HITS.load(Ordering::Relaxed), 1, "the owned fault stayed ours");
        drop(r);
        assert_eq!(current_handler(), previous_handler as *const () as libc::sighandler_t);
    }

    #[test]
    fn chaining_works_in_a_fresh_process() {
        let exe = std::env::current_exe().expect("test binary");
        let out = std::process::Command::new(exe)
            .args(["--exact", "segv::tests::faults_nobody_owns_go_to_the_previous_handler", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .output()
            .expect("run the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
