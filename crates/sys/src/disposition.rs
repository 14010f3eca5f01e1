//! The one signal-disposition guard: a signal's disposition read from the kernel (or replaced
//! by a handler its caller vouches for, or by `SIG_IGN`) and put back when the guard drops;
//! the dispositions set for good (a forked child's [`ignore`] and [`reset`], the run's
//! ignored `SIGXFSZ`); and the query of the handler in place. Every `sigaction` of osprim is
//! made here, except the one `signal.install` times ([`super::sighook`]), the separate
//! helper programs' (`bench/probe`, which link no crate of osprim) and the ending signals
//! that `platform::interrupt` takes through `signal-hook`. See sigaction(2).
//!
//! # Safety
//! A NULL new action only reads the disposition. The only dispositions installed are those
//! read from the kernel (put back on drop), `SIG_IGN` and `SIG_DFL` (no code), and, through
//! the `unsafe` constructors, handlers their callers document as async-signal-safe.
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
    unsafe fn replace(sig: libc::c_int, action: &libc::sigaction) -> io::Result<Disposition> {
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
    pub unsafe fn handle(
        sig: libc::c_int,
        handler: extern "C" fn(libc::c_int),
        flags: libc::c_int,
    ) -> io::Result<Disposition> {
        // SAFETY: the caller vouches for `handler`, a function that lives for ever.
        unsafe { Disposition::replace(sig, &action(handler as *const () as libc::sighandler_t, flags)) }
    }

    /// Installs `handler` for `sig` as an `SA_SIGINFO` handler with `flags` besides and an
    /// empty mask; the disposition it replaced comes back on drop.
    ///
    /// # Safety
    /// `handler` is async-signal-safe.
    pub(crate) unsafe fn handle_info(
        sig: libc::c_int,
        handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void),
        flags: libc::c_int,
    ) -> io::Result<Disposition> {
        let action = action(handler as *const () as libc::sighandler_t, flags | libc::SA_SIGINFO);
        // SAFETY: the caller vouches for `handler`, which takes the arguments SA_SIGINFO passes.
        unsafe { Disposition::replace(sig, &action) }
    }

    /// Ignores `sig` (`SIG_IGN`) until the guard drops.
    pub fn ignoring(sig: libc::c_int) -> io::Result<Disposition> {
        // SAFETY: ignoring installs no handler code.
        unsafe { Disposition::replace(sig, &action(libc::SIG_IGN, 0)) }
    }

    /// The disposition the guard will put back.
    pub(crate) fn saved(&self) -> &libc::sigaction {
        &self.saved
    }

    /// Drops the guard without putting anything back: the disposition now in place stays.
    pub fn keep_current(self) {
        std::mem::forget(self);
    }
}

/// An action running `handler` (or `SIG_DFL`/`SIG_IGN`) with `flags` and an empty mask.
pub(crate) fn action(handler: libc::sighandler_t, flags: libc::c_int) -> libc::sigaction {
    let mut action = zeroed_action();
    action.sa_sigaction = handler;
    action.sa_flags = flags;
    action
}

/// Sets `sig` to `handler` (`SIG_IGN` or `SIG_DFL`) for good. Async-signal-safe.
fn set_plain(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: SIG_IGN and SIG_DFL install no handler code; nothing is read back.
    if unsafe { libc::sigaction(sig, &action(handler, 0), std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Ignores `sig` for good (nothing puts it back): a forked child's set-up, or `SIGXFSZ` for
/// the whole run. Async-signal-safe.
pub fn ignore(sig: libc::c_int) -> io::Result<()> {
    set_plain(sig, libc::SIG_IGN)
}

/// Ignores `SIGXFSZ` for good, so that a write past the file-size limit (`ulimit -f`) fails
/// with `EFBIG` — an error osprim reports — instead of killing the run.
pub fn ignore_file_size_signal() -> io::Result<()> {
    ignore(libc::SIGXFSZ)
}

/// Gives `sig` its default disposition for good (a forked child's set-up). Async-signal-safe.
pub fn reset(sig: libc::c_int) -> io::Result<()> {
    set_plain(sig, libc::SIG_DFL)
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
