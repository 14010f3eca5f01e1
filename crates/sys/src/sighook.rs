//! One `sigaction` that installs a handler, and nothing else, for `signal.install`.
//!
//! RightSpeed's "install message hook" is the install alone, so this is the one `sigaction`
//! that does not go through [`super::disposition`] (whose guard is the restore). Two counting handlers ([`Hook::A`], [`Hook::B`]) are installed
//! in turn, so every install really replaces the handler in place; the disposition found at
//! the start is put back by the [`Saved`] guard.
//!
//! # Safety
//! The handlers only add to an atomic counter (async-signal-safe). The only dispositions a
//! caller can install are these two hooks, built here, and the one read from the kernel by
//! [`save`], which its guard puts back.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

static DELIVERED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

extern "C" fn hook_a(_: libc::c_int) {
    DELIVERED[0].fetch_add(1, Ordering::Relaxed);
}

extern "C" fn hook_b(_: libc::c_int) {
    DELIVERED[1].fetch_add(1, Ordering::Relaxed);
}

/// One of the two counting handlers, with its disposition built before any clock starts.
#[derive(Clone, Copy)]
pub struct Hook {
    action: libc::sigaction,
    which: usize,
}

impl Hook {
    /// The first handler.
    pub const A: usize = 0;
    /// The second handler.
    pub const B: usize = 1;

    /// Handler `which` (0 or 1), with `SA_RESTART` and an empty mask.
    pub fn new(which: usize) -> Hook {
        let handler: extern "C" fn(libc::c_int) = if which == Hook::A { hook_a } else { hook_b };
        let action = super::disposition::action(handler as libc::sighandler_t, libc::SA_RESTART);
        Hook { action, which: which.min(1) }
    }

    /// The handler's address, as `sigaction` reports it.
    pub fn address(&self) -> libc::sighandler_t {
        self.action.sa_sigaction
    }

    /// Signals this handler has received.
    pub fn delivered(&self) -> u64 {
        DELIVERED[self.which].load(Ordering::Relaxed)
    }
}

/// Installs `hook` for `sig` with one `sigaction` (no old action asked for). Returns success.
#[inline(always)]
pub fn install(sig: libc::c_int, hook: &Hook) -> bool {
    // SAFETY: `hook.action` is a valid disposition whose handler is async-signal-safe; no old
    // action pointer, so the kernel writes nothing back.
    unsafe { libc::sigaction(sig, &hook.action, std::ptr::null_mut()) == 0 }
}

/// The handler in place for `sig`, or `None` (the one query, [`super::disposition::handler_of`]).
pub use super::disposition::handler_of as installed;

/// The disposition `sig` had when [`save`] read it; put back on drop.
pub type Saved = super::disposition::Disposition;

/// Reads `sig`'s disposition (without changing it), to be restored when the guard drops.
pub fn save(sig: libc::c_int) -> std::io::Result<Saved> {
    Saved::save(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_alternate_and_the_original_comes_back() {
        let sig = libc::SIGWINCH;
        let before = installed(sig).expect("query");
        {
            let _saved = save(sig).expect("save");
            let (a, b) = (Hook::new(Hook::A), Hook::new(Hook::B));
            assert_ne!(a.address(), b.address());
            assert!(install(sig, &a));
            assert_eq!(installed(sig), Some(a.address()));
            assert!(install(sig, &b));
            assert_eq!(installed(sig), Some(b.address()));
            let n = b.delivered();
            nix::sys::signal::raise(nix::sys::signal::Signal::SIGWINCH).expect("raise");
            assert_eq!(b.delivered(), n + 1);
        }
        assert_eq!(installed(sig), Some(before));
    }
}
