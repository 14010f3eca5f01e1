//! Memory shared between the two ends of an IPC benchmark: an anonymous `MAP_SHARED` mapping,
//! created before `fork`, so a forked peer shares it too. Nothing is named, so nothing can be
//! left behind when a process dies.
//!
//! The mapping is an array of slots, one per cache line pair (128 bytes apart, so that two
//! words written by different CPUs never share a line or an adjacent-line prefetch). A slot is
//! used either as an `AtomicU64` or as an `AtomicU32` (a futex word), never both.
//!
//! # Safety
//! The mapping is page-aligned, zero-filled by the kernel, lives until `drop`, and is only ever
//! accessed through atomics, which are valid for any bit pattern and for concurrent access from
//! other threads and processes.
#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Bytes between two slots.
const SLOT_BYTES: usize = 128;

/// A shared anonymous mapping of atomic slots.
pub struct SharedMem {
    base: NonNull<u8>,
    slots: usize,
}

// SAFETY: the memory is only accessed through atomics (see the module doc).
unsafe impl Send for SharedMem {}
// SAFETY: as above.
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Maps `slots` zeroed slots shared with any process forked afterwards.
    pub fn new(slots: usize) -> std::io::Result<SharedMem> {
        let len = (slots * SLOT_BYTES).max(1);
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SharedMem { base, slots })
    }

    fn slot_ptr(&self, slot: usize) -> *mut u8 {
        assert!(slot < self.slots, "slot {slot} out of {} shared slots", self.slots);
        // SAFETY: in bounds of the mapping (checked above).
        unsafe { self.base.as_ptr().add(slot * SLOT_BYTES) }
    }

    /// Slot `slot` as a 64-bit atomic.
    pub fn u64(&self, slot: usize) -> &AtomicU64 {
        // SAFETY: the slot is 128-byte aligned inside a live mapping; atomics accept any bits.
        unsafe { &*self.slot_ptr(slot).cast::<AtomicU64>() }
    }

    /// Slot `slot` as a 32-bit atomic (a futex word).
    pub fn u32(&self, slot: usize) -> &AtomicU32 {
        // SAFETY: as for `u64`.
        unsafe { &*self.slot_ptr(slot).cast::<AtomicU32>() }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; no reference outlives `self`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), (self.slots * SLOT_BYTES).max(1)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn slots_start_zero_and_are_independent() {
        let m = SharedMem::new(4).unwrap();
        assert_eq!(m.u64(0).load(Ordering::Relaxed), 0);
        m.u64(1).store(7, Ordering::Relaxed);
        m.u32(2).store(9, Ordering::Relaxed);
        assert_eq!(m.u64(0).load(Ordering::Relaxed), 0);
        assert_eq!(m.u64(1).load(Ordering::Relaxed), 7);
        assert_eq!(m.u32(2).load(Ordering::Relaxed), 9);
    }
}
