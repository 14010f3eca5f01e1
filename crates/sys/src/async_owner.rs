//! A file's asynchronous notification (`O_ASYNC`): the owner thread and the signal it gets
//! (`F_SETOWN_EX`, `F_SETSIG`), set in a guard that clears them, for `notify.signal`'s pipe.
//! See fcntl(2).
//!
//! # Safety
//! [`AsyncOwner`] borrows the descriptor it sets up and clears `O_ASYNC` and the owner on
//! drop. Every `fcntl` gets an int or a pointer to a local `f_owner_ex` that outlives it.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, BorrowedFd};

/// `fcntl` commands and values glibc's headers have and the `libc` crate lacks (Linux, all
/// architectures).
const F_SETSIG: libc::c_int = 10;
const F_GETSIG: libc::c_int = 11;
const F_SETOWN_EX: libc::c_int = 15;
const F_GETOWN_EX: libc::c_int = 16;
const F_OWNER_TID: libc::c_int = 0;
/// `si_code` of a signal for input available on a file (`POLL_IN`).
pub const POLL_IN: i32 = 1;

#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// `O_ASYNC` on a file with thread `tid` as owner and `sig` as the signal (`F_SETSIG`, so the
/// signal carries `si_fd` and `si_code`); cleared on drop (flag off, owner 0, signal 0).
pub struct AsyncOwner<'fd> {
    fd: BorrowedFd<'fd>,
}

impl<'fd> AsyncOwner<'fd> {
    /// Sets the owner, the signal, then `O_ASYNC | O_NONBLOCK`.
    pub fn set(fd: BorrowedFd<'fd>, sig: libc::c_int, tid: libc::pid_t) -> std::io::Result<AsyncOwner<'fd>> {
        let raw = fd.as_raw_fd();
        let owner = FOwnerEx { kind: F_OWNER_TID, pid: tid };
        // The guard first, so a failure below still clears what was set.
        let guard = AsyncOwner { fd };
        // SAFETY: `owner` outlives the call; F_SETOWN_EX reads one f_owner_ex.
        check(unsafe { libc::fcntl(raw, F_SETOWN_EX, &owner as *const FOwnerEx) })?;
        // SAFETY: F_SETSIG takes an int.
        check(unsafe { libc::fcntl(raw, F_SETSIG, sig) })?;
        // SAFETY: F_GETFL takes no argument.
        let flags = check(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
        // SAFETY: F_SETFL takes an int.
        check(unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_ASYNC | libc::O_NONBLOCK) })?;
        Ok(guard)
    }
}

impl Drop for AsyncOwner<'_> {
    fn drop(&mut self) {
        let raw = self.fd.as_raw_fd();
        // SAFETY: F_GETFL takes no argument; F_SETFL and F_SETSIG take an int; F_SETOWN_EX
        // reads one f_owner_ex from a local.
        unsafe {
            let flags = libc::fcntl(raw, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(raw, libc::F_SETFL, flags & !libc::O_ASYNC);
            }
            let none = FOwnerEx { kind: F_OWNER_TID, pid: 0 };
            libc::fcntl(raw, F_SETOWN_EX, &none as *const FOwnerEx);
            libc::fcntl(raw, F_SETSIG, 0);
        }
    }
}

/// A file's asynchronous-notification state: (`O_ASYNC` set, owner id, signal).
pub fn async_state(fd: BorrowedFd<'_>) -> std::io::Result<(bool, libc::pid_t, libc::c_int)> {
    let raw = fd.as_raw_fd();
    let mut owner = FOwnerEx { kind: 0, pid: 0 };
    // SAFETY: F_GETFL and F_GETSIG take no argument; F_GETOWN_EX writes one f_owner_ex into a
    // local.
    let (flags, sig) = unsafe {
        let flags = check(libc::fcntl(raw, libc::F_GETFL))?;
        check(libc::fcntl(raw, F_GETOWN_EX, &mut owner as *mut FOwnerEx))?;
        (flags, check(libc::fcntl(raw, F_GETSIG))?)
    };
    Ok((flags & libc::O_ASYNC != 0, owner.pid, sig))
}

fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(rc) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn the_owner_is_set_and_cleared() {
        let (r, _w) = nix::unistd::pipe().unwrap();
        let tid = crate::process::gettid();
        let sig = libc::SIGRTMIN() + 5;
        {
            let _o = AsyncOwner::set(r.as_fd(), sig, tid).unwrap();
            assert_eq!(async_state(r.as_fd()).unwrap(), (true, tid, sig));
        }
        assert_eq!(async_state(r.as_fd()).unwrap(), (false, 0, 0));
    }
}
