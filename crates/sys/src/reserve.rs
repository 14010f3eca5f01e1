//! The memory reserve: the global allocator is the system's, with a reserve of address space
//! held back, so that running out of memory (an address-space limit such as `ulimit -v`, or a
//! cgroup without overcommit) ends a run cleanly instead of aborting it.
//!
//! [`arm`] maps [`RESERVE_BYTES`] of inaccessible address space (`PROT_NONE`: no memory, but
//! it counts against `RLIMIT_AS`). When an allocation fails, the reserve is unmapped, the
//! allocation tried again, and [`short`] turns true: the run stops at the next benchmark,
//! analyses and saves what it has, and says why, with the reserve's room to do so. A second
//! failure after that aborts as Rust always does ("memory allocation of N bytes failed").
//!
//! # Safety
//! [`ReserveAlloc`] passes every call to [`System`] unchanged; it only retries a failed
//! allocation once, after unmapping a region no Rust object lives in (the reserve is never
//! handed out). `mmap`/`munmap` are async-signal-safe and take no lock, so calling them from
//! inside the allocator cannot deadlock.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Address space held back for finishing a run once memory runs short.
pub const RESERVE_BYTES: usize = 16 << 20;

/// The reserve's address, or null when there is none (not armed, or spent).
static RESERVE: AtomicPtr<libc::c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Whether an allocation failed and the reserve was spent.
static SHORT: AtomicBool = AtomicBool::new(false);

/// The system allocator with the reserve (module doc).
pub struct ReserveAlloc;

/// Maps the reserve (once). Without it, running out of memory aborts as usual.
pub fn arm() -> std::io::Result<()> {
    if !RESERVE.load(Ordering::Acquire).is_null() {
        return Ok(());
    }
    // SAFETY: a new private anonymous mapping at an address the kernel chooses; it overlaps
    // nothing and nothing is stored in it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            RESERVE_BYTES,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    if RESERVE.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // SAFETY: `p` is the mapping just made, which nobody else knows of.
        unsafe { libc::munmap(p, RESERVE_BYTES) };
    }
    Ok(())
}

/// Whether `bytes` of address space can still be mapped: a probe mapping, unmapped at once.
/// A thread needs its stack and then, as it starts, a signal stack that Rust's runtime cannot
/// do without (it aborts the process if that mapping fails): a caller about to start a
/// thread asks first, so that an address-space limit ends thread creation with an error
/// instead of an abort.
pub fn room_for(bytes: usize) -> bool {
    // SAFETY: a new private anonymous mapping at an address the kernel chooses; it overlaps
    // nothing, nothing is stored in it, and it is unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `p` is the mapping of `bytes` just made, known to no one else.
    unsafe { libc::munmap(p, bytes) };
    true
}

/// Whether memory ran short and the reserve was spent: the run should stop.
pub fn short() -> bool {
    SHORT.load(Ordering::Relaxed)
}

/// Unmaps the reserve; true if there was one to give back.
fn release() -> bool {
    let p = RESERVE.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if p.is_null() {
        return false;
    }
    // SAFETY: `p` is the reserve mapped by `arm`, of `RESERVE_BYTES`; the swap above made
    // this the only call that unmaps it, and no object was ever placed in it.
    unsafe { libc::munmap(p, RESERVE_BYTES) };
    SHORT.store(true, Ordering::Relaxed);
    true
}

// SAFETY: every method forwards to `System` with the caller's arguments, so `System`'s
// guarantees hold; a null result is retried once after `release`, which touches no memory
// handed out by this allocator.
unsafe impl GlobalAlloc for ReserveAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        // SAFETY: as above.
        if p.is_null() && release() { unsafe { System.alloc(layout) } } else { p }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract, passed on unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        // SAFETY: as above.
        if p.is_null() && release() { unsafe { System.alloc_zeroed(layout) } } else { p }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract; `ptr` came from `System`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        // SAFETY: on failure `ptr` is still valid and unchanged, so it may be passed again.
        if p.is_null() && release() { unsafe { System.realloc(ptr, layout, new_size) } } else { p }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arming_twice_keeps_one_reserve_and_release_spends_it() {
        arm().unwrap();
        let first = RESERVE.load(Ordering::Acquire);
        arm().unwrap();
        assert_eq!(RESERVE.load(Ordering::Acquire), first);
        // The test binary's allocator is the system's, so spending the reserve here changes
        // nothing else; the allocator path itself is tested through the binary (tests/cli.rs).
        assert!(release());
        assert!(short());
        assert!(!release());
    }
}
