//! Installing and restoring a signal handler, the cost of `signal.install`.
//!
//! # Safety
//! The handler installed does nothing but bump an atomic counter, which is async-signal-safe;
//! the previous disposition is always restored before the caller returns. The functions that
//! install a disposition take only the counting one ([`CountingAction`], made here alone) or
//! one read from the kernel ([`SavedAction`]), so a safe caller cannot install arbitrary
//! handler code.
#![allow(unsafe_code)]

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use std::sync::atomic::{AtomicU64, Ordering};

static DELIVERED: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_delivery(_: libc::c_int) {
    DELIVERED.fetch_add(1, Ordering::Relaxed);
}

/// Signals delivered to the counting handler so far.
pub fn delivered() -> u64 {
    DELIVERED.load(Ordering::Relaxed)
}

/// The counting handler's disposition; only [`counting_action`] makes one.
#[derive(Clone, Copy, Debug)]
pub struct CountingAction(SigAction);

/// A disposition the process had, as [`current_action`] read it.
#[derive(Clone, Copy, Debug)]
pub struct SavedAction(SigAction);

/// The counting handler's action.
pub fn counting_action() -> CountingAction {
    CountingAction(SigAction::new(SigHandler::Handler(count_delivery), SaFlags::SA_RESTART, SigSet::empty()))
}

/// Installs `action` for `sig`, then restores `previous`. Returns whether the disposition that
/// the restore replaced was `action` (the install really took effect).
#[inline(always)]
pub fn install_and_restore(sig: Signal, action: &CountingAction, previous: &SavedAction) -> bool {
    // SAFETY: `action` runs only the async-signal-safe counting handler; the original
    // disposition is put back at once.
    let installed = unsafe { sigaction(sig, &action.0) }.is_ok();
    // SAFETY: restores a disposition the process had (read by `current_action`).
    let replaced = unsafe { sigaction(sig, &previous.0) };
    installed && matches!(replaced, Ok(old) if same_handler(old.handler(), action.0.handler()))
}

/// Reads the current disposition of `sig` without changing it.
pub fn current_action(sig: Signal) -> nix::Result<SavedAction> {
    let probe = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: briefly sets the default disposition and puts the old one straight back; no
    // signal is raised in between by this process.
    let old = unsafe { sigaction(sig, &probe) }?;
    // SAFETY: restores what was there.
    unsafe { sigaction(sig, &old) }?;
    Ok(SavedAction(old))
}

/// Runs `f` with `action` installed for `sig`, then restores the previous disposition.
pub fn with_action<R>(sig: Signal, action: &CountingAction, f: impl FnOnce() -> R) -> R {
    // SAFETY: `action` is the counting handler (async-signal-safe); restored below.
    let old = unsafe { sigaction(sig, &action.0) };
    let r = f();
    if let Ok(old) = old {
        // SAFETY: puts back the disposition that was there before.
        let _ = unsafe { sigaction(sig, &old) };
    }
    r
}

fn same_handler(a: SigHandler, b: SigHandler) -> bool {
    match (a, b) {
        (SigHandler::Handler(x), SigHandler::Handler(y)) => std::ptr::fn_addr_eq(x, y),
        (SigHandler::SigAction(x), SigHandler::SigAction(y)) => std::ptr::fn_addr_eq(x, y),
        (SigHandler::SigDfl, SigHandler::SigDfl) | (SigHandler::SigIgn, SigHandler::SigIgn) => true,
        _ => false,
    }
}

/// Ignores `SIGXFSZ`, so that a write past the file-size limit (`ulimit -f`) fails with
/// `EFBIG` — an error osprim reports — instead of killing the run.
pub fn ignore_file_size_signal() -> nix::Result<()> {
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: ignoring a signal installs no handler code at all; nothing can run
    // asynchronously because of it.
    unsafe { sigaction(Signal::SIGXFSZ, &ignore) }.map(drop)
}
