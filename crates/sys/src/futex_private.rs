//! `futex(FUTEX_WAIT | FUTEX_PRIVATE_FLAG)` on a word that does not hold the expected value,
//! with no timeout, through glibc's `syscall()` as `perf bench futex hash` makes it: the
//! kernel looks the word up in its futex hash, reads it, finds it differs and returns
//! `EAGAIN` without sleeping.
//!
//! # Safety
//! The call passes the address of a live `AtomicU32` (valid and aligned for the duration of
//! the call) and a null timeout; the kernel only reads the word. [`wait_mismatch`] refuses a
//! word that holds the expected value, so the call can never sleep (a null timeout would
//! sleep for ever).
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU32, Ordering};

/// One private `FUTEX_WAIT` on `word`, which must not hold `expected`; returns the error
/// number (`EAGAIN` expected), 0 when the call returned 0, or `EINVAL` without calling when
/// `word` holds `expected`.
#[inline(always)]
pub fn wait_mismatch(word: &AtomicU32, expected: u32) -> i32 {
    if word.load(Ordering::Relaxed) == expected {
        return libc::EINVAL;
    }
    // SAFETY: see the module doc.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == 0 { 0 } else { std::io::Error::last_os_error().raw_os_error().unwrap_or(-1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_differing_word_returns_eagain_and_a_matching_one_is_refused() {
        let w = AtomicU32::new(0);
        assert_eq!(wait_mismatch(&w, 1234), libc::EAGAIN);
        w.store(1234, Ordering::Relaxed);
        assert_eq!(wait_mismatch(&w, 1234), libc::EINVAL);
    }
}
