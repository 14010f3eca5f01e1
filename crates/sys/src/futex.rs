//! `futex(2)` wait and wake on a 32-bit word, shared between processes (no
//! `FUTEX_PRIVATE_FLAG`, so the same call serves threads and forked processes alike).
//!
//! # Safety
//! Both calls pass the address of a live `AtomicU32` (valid and aligned for the duration of
//! the call) and, for a wait, a timeout that lives on the caller's stack.
#![allow(unsafe_code)]

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `*word == expected`, at most `timeout`. Returns `Ok` when woken or when the
/// word already differs; `TimedOut` or `Interrupted` errors tell the caller to check again.
#[inline(always)]
pub fn wait(word: &AtomicU32, expected: u32, timeout: &libc::timespec) -> std::io::Result<()> {
    // SAFETY: see the module doc.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            timeout as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Ok(()),
        Some(libc::ETIMEDOUT) => Err(std::io::ErrorKind::TimedOut.into()),
        _ => Err(e),
    }
}

/// Wakes up to `n` waiters on `word`. Returns how many were woken.
#[inline(always)]
pub fn wake(word: &AtomicU32, n: i32) -> std::io::Result<usize> {
    // SAFETY: see the module doc.
    let rc = unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n, 0usize, 0usize, 0u32) };
    if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(rc as usize) }
}

/// A relative timeout for [`wait`].
pub fn timeout(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn wait_returns_when_value_differs_and_times_out_otherwise() {
        let w = AtomicU32::new(1);
        assert!(wait(&w, 0, &timeout(Duration::from_millis(10))).is_ok());
        let e = wait(&w, 1, &timeout(Duration::from_millis(5))).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(wake(&w, 1).unwrap(), 0);
    }

    #[test]
    fn wake_releases_a_waiter() {
        let w = std::sync::Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                let _ = wait(&w2, 0, &timeout(Duration::from_secs(5)));
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        w.store(1, Ordering::Release);
        wake(&w, 1).unwrap();
        t.join().unwrap();
    }
}
