//! The one signal-disposition guard: a signal's disposition read from the kernel (or replaced
//! by one a module of this crate vouches for) and put back when the guard drops, and the query
//! of the handler in place. See sigaction(2).
//!
//! # Safety
//! A NULL new action only reads the disposition. The only dispositions installed are those
//! read from the kernel (put back on drop) and, through the crate-private
//! [`Disposition::replace`], actions whose handlers the calling module of `sys` documents as
//! async-signal-safe.
#![allow(unsafe_code)]

use std::io;

/// `sig`'s disposition as it was when the guard was made; put back on drop.
pub struct Disposition {
    sig: libc::c_int,
    saved: libc::sigaction,
}

fn zeroed_action() -> libc::sigaction {
    // SAFETY: `sigaction` is a plain C struct for which all zeroes is valid (SIG_DFL, no mask).
    unsafe { std::mem::zeroed() }
}

impl Disposition {
    /// Reads `sig`'s disposition without changing it, to be restored when the guard drops.
    pub fn save(sig: libc::c_int) -> io::Result<Disposition> {
        let mut saved = zeroed_action();
        // SAFETY: a NULL new action only reads the disposition into `saved`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Disposition { sig, saved })
    }

    /// Installs `action` for `sig`; the disposition it replaced comes back on drop.
    ///
    /// # Safety
    /// `action`'s handler, if any, is async-signal-safe and stays valid while installed.
    pub(crate) unsafe fn replace(sig: libc::c_int, action: &libc::sigaction) -> io::Result<Disposition> {
        let mut saved = zeroed_action();
        // SAFETY: the caller vouches for `action`; `saved` receives the disposition replaced.
        if unsafe { libc::sigaction(sig, action, &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Disposition { sig, saved })
    }
}

impl Disposition {
    /// Installs `handler` for `sig` with `flags` (`SA_*`; no `SA_SIGINFO`) and an empty mask;
    /// the disposition it replaced comes back on drop.
    ///
    /// # Safety
    /// `handler` is async-signal-safe.
    pub(crate) unsafe fn handle(
        sig: libc::c_int,
        handler: extern "C" fn(libc::c_int),
        flags: libc::c_int,
    ) -> io::Result<Disposition> {
        let mut action = zeroed_action();
        action.sa_sigaction = handler as *const () as libc::sighandler_t;
        action.sa_flags = flags;
        // SAFETY: the caller vouches for `handler`, a function that lives for ever.
        unsafe { Disposition::replace(sig, &action) }
    }
}

impl Drop for Disposition {
    fn drop(&mut self) {
        // SAFETY: puts back a disposition the process had.
        unsafe { libc::sigaction(self.sig, &self.saved, std::ptr::null_mut()) };
    }
}

/// The handler in place for `sig` (`SIG_DFL` is 0), or `None` when the query fails.
pub fn handler_of(sig: libc::c_int) -> Option<libc::sighandler_t> {
    let mut old = zeroed_action();
    // SAFETY: a NULL new action only reads the disposition into `old`.
    (unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0).then_some(old.sa_sigaction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_disposition_comes_back_on_drop() {
        let sig = libc::SIGURG;
        let before = handler_of(sig).expect("query");
        {
            let _saved = Disposition::save(sig).expect("save");
            let mut ignore = zeroed_action();
            ignore.sa_sigaction = libc::SIG_IGN;
            // SAFETY: ignoring installs no handler code.
            let _inner = unsafe { Disposition::replace(sig, &ignore) }.expect("ignore");
            assert_eq!(handler_of(sig), Some(libc::SIG_IGN));
        }
        assert_eq!(handler_of(sig), Some(before));
    }
}
