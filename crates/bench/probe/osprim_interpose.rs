//! osprim's interposer: an `LD_PRELOAD` library that wraps the event-receive call `read`, as
//! RightSpeed's message hook wraps an application's message loop, for `interpose.preload`.
//!
//! Each `read` is passed to the C library's own (found once with `dlsym(RTLD_NEXT, "read")`
//! by a constructor, or on the first call), and the event it returned is inspected: the call
//! is counted and the first byte received is added to a running sum. The helper that measures
//! reads both through [`osprim_interpose_reads`] and [`osprim_interpose_first_bytes`], so the
//! benchmark can prove every timed `read` went through here. Single-threaded use is assumed
//! (the helper has one thread): the counters are plain loads and stores, no locked adds.
#![no_std]

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

/// glibc's `RTLD_NEXT`: the next object after this one in the search order.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

#[link(name = "c")]
unsafe extern "C" {
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn abort() -> !;
}

static REAL_READ: AtomicUsize = AtomicUsize::new(0);
static READS: AtomicU64 = AtomicU64::new(0);
static FIRST_BYTES: AtomicU64 = AtomicU64::new(0);

/// The C library's `read`, looked up once.
#[inline(always)]
fn real_read() -> ReadFn {
    let mut f = REAL_READ.load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: the name is NUL-terminated; RTLD_NEXT is valid in a preloaded object.
        f = unsafe { dlsym(RTLD_NEXT, c"read".as_ptr()) } as usize;
        if f == 0 {
            // SAFETY: abort takes nothing; without the real read nothing can go on.
            unsafe { abort() }
        }
        REAL_READ.store(f, Ordering::Relaxed);
    }
    // SAFETY: `f` is the address of libc's `read`, which has this signature.
    unsafe { core::mem::transmute::<usize, ReadFn>(f) }
}

extern "C" fn resolve() {
    real_read();
}

/// Runs when the library is loaded: resolves the real `read` before any event arrives.
#[used]
#[unsafe(link_section = ".init_array")]
static RESOLVE: extern "C" fn() = resolve;

/// The wrapper: receive the event through the real `read`, then look at it.
///
/// # Safety
/// The caller's contract is `read(2)`'s: `buf` is valid for `count` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    // SAFETY: passed through unchanged under the caller's contract.
    let n = unsafe { real_read()(fd, buf, count) };
    READS.store(READS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    if n > 0 {
        // SAFETY: the real read wrote at least one byte at `buf`.
        let first = unsafe { *buf.cast::<u8>() };
        FIRST_BYTES.store(FIRST_BYTES.load(Ordering::Relaxed) + u64::from(first), Ordering::Relaxed);
    }
    n
}

/// Calls of the wrapper so far.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_interpose_reads() -> u64 {
    READS.load(Ordering::Relaxed)
}

/// Sum of the first bytes of the events received so far.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_interpose_first_bytes() -> u64 {
    FIRST_BYTES.load(Ordering::Relaxed)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: abort takes nothing.
    unsafe { abort() }
}
