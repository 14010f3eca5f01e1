//! An array of libc `pthread_mutex_t`s with default attributes, for `lock.*`: locked and
//! unlocked through guards, so a mutex is only ever unlocked by the thread that locked it.
//! See pthread_mutex_lock(3p), pthread_mutex_trylock(3p).
//!
//! Each mutex sits in its own 64-byte cache line, so two of them never share one.
//!
//! # Safety
//! - A `pthread_mutex_t` is made to be shared between threads: the array is `Sync`, and each
//!   mutex lives in an `UnsafeCell` at a fixed heap address (the boxed slice never moves or
//!   shrinks while it lives), initialised with `PTHREAD_MUTEX_INITIALIZER`.
//! - Only a [`Locked`] guard unlocks, and only the mutexes its own `pthread_mutex_lock` calls
//!   acquired; the guard is neither `Send` nor `Sync`, so the unlock happens on the locking
//!   thread. [`MutexArray::probe`] unlocks only a mutex its own `trylock` just acquired.
//! - Locking a mutex the caller already holds is, for the default type, undefined in POSIX; in
//!   glibc the default type *is* `PTHREAD_MUTEX_NORMAL`, for which it deadlocks. The
//!   benchmarks never do it.
//! - The mutexes are not destroyed: `pthread_mutex_destroy` of a default mutex does nothing in
//!   glibc, and skipping it means a guard leaked with `mem::forget` cannot make the drop of
//!   the array destroy a locked mutex.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;

#[repr(C, align(64))]
struct Slot(UnsafeCell<libc::pthread_mutex_t>);

/// Mutexes with default attributes, one per cache line.
pub struct MutexArray {
    slots: Box<[Slot]>,
}

// SAFETY: pthread mutexes are designed to be locked from any thread; all access goes through
// the pthread functions (see the module doc).
unsafe impl Sync for MutexArray {}
// SAFETY: as above; moving the array moves only the box pointer, never the mutexes.
unsafe impl Send for MutexArray {}

/// What [`MutexArray::probe`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `trylock` returned `EBUSY`: someone holds it.
    Busy,
    /// `trylock` acquired it (and the probe released it at once): it was free.
    Free,
    /// `trylock` returned another error.
    Error(i32),
}

impl MutexArray {
    /// `n` unlocked mutexes.
    pub fn new(n: usize) -> MutexArray {
        let slots = (0..n).map(|_| Slot(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER))).collect();
        MutexArray { slots }
    }

    /// How many mutexes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    #[inline(always)]
    fn ptr(&self, i: usize) -> *mut libc::pthread_mutex_t {
        self.slots[i].0.get()
    }

    /// Locks the mutexes of `range` in order with `pthread_mutex_lock`, stopping at the first
    /// call that fails. Blocks while one is held by another thread.
    #[inline(always)]
    pub fn lock_range(&self, range: Range<usize>) -> Locked<'_> {
        let _ = &self.slots[range.clone()]; // bounds, once, before any lock
        let mut end = range.start;
        let mut error = 0;
        while end < range.end {
            // SAFETY: an initialised mutex at a fixed address (module doc); the guard returned
            // records it as held by this thread.
            let rc = unsafe { libc::pthread_mutex_lock(self.ptr(end)) };
            if rc != 0 {
                error = rc;
                break;
            }
            end += 1;
        }
        Locked { array: self, start: range.start, end, error, _local: PhantomData }
    }

    /// Locks mutex `i`.
    #[inline(always)]
    pub fn lock(&self, i: usize) -> Locked<'_> {
        self.lock_range(i..i + 1)
    }

    /// Whether mutex `i` is held, asked with `pthread_mutex_trylock`; a mutex it finds free
    /// it acquires and releases at once. Meant for a thread other than the holder.
    pub fn probe(&self, i: usize) -> Probe {
        // SAFETY: an initialised mutex at a fixed address.
        match unsafe { libc::pthread_mutex_trylock(self.ptr(i)) } {
            0 => {
                // SAFETY: this thread acquired it just now.
                let rc = unsafe { libc::pthread_mutex_unlock(self.ptr(i)) };
                if rc == 0 { Probe::Free } else { Probe::Error(rc) }
            }
            libc::EBUSY => Probe::Busy,
            e => Probe::Error(e),
        }
    }

    /// Whether a thread waits (or is about to wait) in the kernel for mutex `i`: glibc's lock
    /// word (the first `int` of a `pthread_mutex_t`) is 2, "locked, with waiters", from the
    /// moment a `pthread_mutex_lock` finds it held until an unlock wakes a waiter. `None`
    /// where the layout is not glibc's.
    pub fn has_waiters(&self, i: usize) -> Option<bool> {
        if !cfg!(all(target_os = "linux", target_env = "gnu")) {
            return None;
        }
        let word = self.ptr(i).cast::<std::sync::atomic::AtomicI32>();
        // SAFETY: glibc's `pthread_mutex_t` begins with the `int __lock` it changes only with
        // atomic instructions; the slot is 64-byte aligned and lives as long as `self`.
        let v = unsafe { &*word }.load(std::sync::atomic::Ordering::Acquire);
        Some(v == 2)
    }
}

/// Mutexes `start..end` of an array, locked by this thread; unlocked by [`Locked::unlock`]
/// or on drop.
pub struct Locked<'a> {
    array: &'a MutexArray,
    start: usize,
    end: usize,
    error: i32,
    /// Neither `Send` nor `Sync`: the unlock happens on the locking thread.
    _local: PhantomData<*const ()>,
}

impl Locked<'_> {
    /// How many mutexes were locked.
    pub fn count(&self) -> usize {
        self.end - self.start
    }

    /// The error of the `pthread_mutex_lock` that stopped the range early, if one did.
    pub fn error(&self) -> Option<i32> {
        (self.error != 0).then_some(self.error)
    }

    /// Unlocks them in order. Returns how many `pthread_mutex_unlock` calls failed.
    #[inline(always)]
    pub fn unlock(mut self) -> u64 {
        self.release()
    }

    #[inline(always)]
    fn release(&mut self) -> u64 {
        let mut failed = 0;
        for i in self.start..self.end {
            // SAFETY: mutex `i` was locked by this thread (the guard is not `Send`) and not yet
            // unlocked.
            failed += u64::from(unsafe { libc::pthread_mutex_unlock(self.array.ptr(i)) } != 0);
        }
        self.end = self.start;
        failed
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_is_busy_to_another_thread_and_free_after_unlock() {
        let m = MutexArray::new(4);
        let held = m.lock_range(0..3);
        assert_eq!(held.count(), 3);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert_eq!((0..3).map(|i| m.probe(i)).collect::<Vec<_>>(), [Probe::Busy; 3]);
                assert_eq!(m.probe(3), Probe::Free);
            });
        });
        assert_eq!(held.unlock(), 0);
        std::thread::scope(|s| {
            s.spawn(|| assert!((0..4).all(|i| m.probe(i) == Probe::Free)));
        });
        if cfg!(target_env = "gnu") {
            assert_eq!(m.has_waiters(0), Some(false));
        }
    }
}
