//! Thread identity calls that nix does not wrap without allocation.
//!
//! # Safety
//! Each function passes a buffer it owns, of the length it states, to one libc call.
#![allow(unsafe_code)]

use std::ffi::CStr;

/// `prctl(PR_GET_NAME)`: the calling thread's name (comm) into a 16-byte buffer.
/// Returns the length of the name, or `None` on failure.
#[inline(always)]
pub fn get_comm(buf: &mut [u8; 16]) -> Option<usize> {
    // SAFETY: PR_GET_NAME writes at most 16 bytes (NUL included) into the buffer we pass,
    // which is exactly 16 bytes long.
    let rc = unsafe { libc::prctl(libc::PR_GET_NAME, buf.as_mut_ptr() as libc::c_ulong, 0, 0, 0) };
    (rc == 0).then(|| buf.iter().position(|&b| b == 0).unwrap_or(16))
}

/// `readlink(path)` into a caller-provided buffer. Returns the length written, or `None`.
#[inline(always)]
pub fn readlink_into(path: &CStr, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `path` is NUL-terminated; readlink writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::readlink(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    usize::try_from(n).ok()
}

/// `ioctl(fd, FIONREAD)`: bytes waiting to be read on `fd`, or `None` on failure.
#[inline(always)]
pub fn fionread(fd: std::os::fd::BorrowedFd<'_>) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int into the pointer we pass, which points to `n`.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    (rc == 0).then_some(n)
}
