//! osprim's interposer: an `LD_PRELOAD` library that wraps the event-receive call `read`, as
//! RightSpeed's message hook wraps an application's message loop, for `interpose.preload`.
//!
//! Each `read` is passed to the C library's own (found once with `dlsym(RTLD_NEXT, "read")`
//! by a constructor, or on the first call), and the event it returned is inspected: the call
//! is counted and the first byte received is added to a running sum. The helper that measures
//! reads both through [`osprim_interpose_reads`] and [`osprim_interpose_first_bytes`], so the
//! benchmark can prove every timed `read` went through here. Single-threaded use is assumed
//! (the helper has one thread): the counters are plain loads and stores, no locked adds.
//!
//! **User-interface messages** (`interpose.ui`): when `OSPRIM_INTERPOSE_UI` is set at load,
//! every event received is a user-interface message, and the wrapper handles it as RightSpeed's
//! hook did: it ends the current task and begins another, telling the kernel with one
//! `sched_setattr(0, …)` of the calling thread — alternately task A's and task B's hint, so
//! each call changes something. `OSPRIM_INTERPOSE_UI=uclamp`: the utilisation clamp (A
//! 512–1024, B 256–768, as `task.uclamp`); `OSPRIM_INTERPOSE_UI=nice <a> <b>`: the nice value
//! (`task.setattr`'s nearest). The constructor reads the thread's attributes (to keep its
//! policy, nice and reset-on-fork flag) and begins task A. In this mode an event's first byte
//! is added to the sum only when its handling succeeded, so the sum equal to the bytes read
//! proves every event was both intercepted and handled. A mode it cannot set up aborts the
//! process at load, so a wrong set-up never measures plain interception.
#![no_std]

use core::ffi::{c_char, c_int, c_long, c_void};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

/// glibc's `RTLD_NEXT`: the next object after this one in the search order.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

#[link(name = "c")]
unsafe extern "C" {
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn abort() -> !;
    fn getenv(name: *const c_char) -> *const c_char;
    fn syscall(n: c_long, ...) -> c_long;
}

#[cfg(target_arch = "x86_64")]
const SYS_SCHED_SETATTR: c_long = 314;
#[cfg(target_arch = "x86_64")]
const SYS_SCHED_GETATTR: c_long = 315;
#[cfg(target_arch = "aarch64")]
const SYS_SCHED_SETATTR: c_long = 274;
#[cfg(target_arch = "aarch64")]
const SYS_SCHED_GETATTR: c_long = 275;

/// `struct sched_attr` (`SCHED_ATTR_SIZE_VER1`, 56 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

const ATTR_SIZE: u32 = 56;
/// An attribute asking for nothing, of the right size.
const EMPTY: SchedAttr = SchedAttr {
    size: ATTR_SIZE,
    policy: 0,
    flags: 0,
    nice: 0,
    priority: 0,
    runtime: 0,
    deadline: 0,
    period: 0,
    util_min: 0,
    util_max: 0,
};
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
const SCHED_FLAG_UTIL_CLAMP: u64 = 0x20 | 0x40;

/// No handling (plain interception), the clamp, the nice value.
const UI_NONE: u32 = 0;
const UI_UCLAMP: u32 = 1;
const UI_NICE: u32 = 2;

static UI: AtomicU32 = AtomicU32::new(UI_NONE);
/// The thread's policy, nice value and reset-on-fork flag, read at load.
static POLICY: AtomicU32 = AtomicU32::new(0);
static NICE0: AtomicI32 = AtomicI32::new(0);
static KEEP_FLAGS: AtomicU64 = AtomicU64::new(0);
/// Task A's and task B's nice values (`nice` mode).
static NICE_A: AtomicI32 = AtomicI32::new(0);
static NICE_B: AtomicI32 = AtomicI32::new(0);
/// Which task runs now: 0 A, 1 B.
static TASK: AtomicU32 = AtomicU32::new(0);
/// Task A's and B's clamps (`uclamp` mode).
const CLAMP_A: (u32, u32) = (512, 1024);
const CLAMP_B: (u32, u32) = (256, 768);

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

/// The hint that makes task `task` (0 A, 1 B) the current one.
#[inline(always)]
fn hint(task: u32) -> SchedAttr {
    let mut a = SchedAttr {
        policy: POLICY.load(Ordering::Relaxed),
        flags: KEEP_FLAGS.load(Ordering::Relaxed),
        nice: NICE0.load(Ordering::Relaxed),
        ..EMPTY
    };
    if UI.load(Ordering::Relaxed) == UI_UCLAMP {
        a.flags |= SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS | SCHED_FLAG_UTIL_CLAMP;
        (a.util_min, a.util_max) = if task == 0 { CLAMP_A } else { CLAMP_B };
    } else {
        a.flags |= SCHED_FLAG_KEEP_POLICY;
        a.nice = if task == 0 { NICE_A.load(Ordering::Relaxed) } else { NICE_B.load(Ordering::Relaxed) };
    }
    a
}

/// `sched_setattr(0, hint(task), 0)`: whether it succeeded.
#[inline(always)]
fn set_task(task: u32) -> bool {
    let a = hint(task);
    // SAFETY: `a` is a valid sched_attr of the size it says; the kernel only reads it.
    unsafe { syscall(SYS_SCHED_SETATTR, 0 as c_long, &a as *const SchedAttr, 0 as c_long) == 0 }
}

/// Parses an optionally signed decimal integer.
fn parse_int(s: &[u8]) -> Option<i32> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 3 {
        return None;
    }
    let mut v = 0i32;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i32::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}

/// Reads `OSPRIM_INTERPOSE_UI` and sets the handling up (aborting on a mode it cannot set up).
fn set_up_ui() {
    // SAFETY: the name is NUL-terminated; getenv returns NULL or a NUL-terminated string.
    let v = unsafe { getenv(c"OSPRIM_INTERPOSE_UI".as_ptr()) };
    if v.is_null() {
        return;
    }
    // SAFETY: a non-NULL getenv result is a NUL-terminated string.
    let v = unsafe { core::ffi::CStr::from_ptr(v) }.to_bytes();
    let mut words = v.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let mode = match words.next() {
        Some(b"uclamp") => UI_UCLAMP,
        Some(b"nice") => {
            let (a, b) = match (words.next().and_then(parse_int), words.next().and_then(parse_int)) {
                (Some(a), Some(b)) => (a, b),
                // SAFETY: abort takes nothing; a malformed mode must not measure anything.
                _ => unsafe { abort() },
            };
            NICE_A.store(a, Ordering::Relaxed);
            NICE_B.store(b, Ordering::Relaxed);
            UI_NICE
        }
        // SAFETY: as above.
        _ => unsafe { abort() },
    };
    let mut cur = EMPTY;
    // SAFETY: `cur` is valid for ATTR_SIZE bytes, which is what the kernel is told.
    if unsafe { syscall(SYS_SCHED_GETATTR, 0 as c_long, &mut cur as *mut SchedAttr, ATTR_SIZE as c_long, 0 as c_long) }
        != 0
    {
        // SAFETY: abort takes nothing.
        unsafe { abort() }
    }
    POLICY.store(cur.policy, Ordering::Relaxed);
    NICE0.store(cur.nice, Ordering::Relaxed);
    KEEP_FLAGS.store(cur.flags & SCHED_FLAG_RESET_ON_FORK, Ordering::Relaxed);
    UI.store(mode, Ordering::Relaxed);
    // Task A begins before the first message.
    TASK.store(0, Ordering::Relaxed);
    if !set_task(0) {
        // SAFETY: abort takes nothing.
        unsafe { abort() }
    }
}

/// A user-interface message arrived: end the current task, begin the other.
#[inline(always)]
fn end_and_begin() -> bool {
    let next = TASK.load(Ordering::Relaxed) ^ 1;
    TASK.store(next, Ordering::Relaxed);
    set_task(next)
}

extern "C" fn resolve() {
    real_read();
    set_up_ui();
}

/// Runs when the library is loaded: resolves the real `read` (and sets up the handling of
/// user-interface messages, if asked) before any event arrives.
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
        let handled = UI.load(Ordering::Relaxed) == UI_NONE || end_and_begin();
        if handled {
            FIRST_BYTES.store(FIRST_BYTES.load(Ordering::Relaxed) + u64::from(first), Ordering::Relaxed);
        }
    }
    n
}

/// The task now current (0 A, 1 B) in user-interface mode.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_interpose_task() -> u64 {
    u64::from(TASK.load(Ordering::Relaxed))
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
