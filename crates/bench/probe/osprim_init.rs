//! osprim's initialising library, for `lib.dlopen.init`: a shared object whose constructor
//! does what RightSpeed's RSLib did when it was linked into a starting application.
//!
//! The constructor (an `.init_array` entry, run by the dynamic loader inside `dlopen`):
//! 1. installs a message hook: a handler for `SIGIO` (the "an event arrived" signal) with one
//!    `sigaction`;
//! 2. reads the two task-type group files — the system-wide and the per-application one —
//!    whose paths it finds in `OSPRIM_INIT_FILE_1` and `OSPRIM_INIT_FILE_2` (each `open`,
//!    `read` to the end, `close`);
//! 3. gets the program's name: `readlink("/proc/self/exe")`.
//!
//! What it managed is kept for the measuring helper to read back: a bitmask of the steps done
//! ([`osprim_init_state`], all four bits = [`osprim_init_complete`]), the bytes read from the
//! two files and the length of the name.
#![no_std]

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// glibc's `struct sigaction` on x86_64 and aarch64 (handler, 1024-bit mask, flags, restorer).
#[repr(C)]
struct SigAction {
    handler: usize,
    mask: [u64; 16],
    flags: c_int,
    restorer: usize,
}

const SIGIO: c_int = 29;
const SA_RESTART: c_int = 0x1000_0000;
const O_RDONLY_CLOEXEC: c_int = 0o2_000_000;

#[link(name = "c")]
unsafe extern "C" {
    fn abort() -> !;
    fn getenv(name: *const c_char) -> *const c_char;
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
    fn readlink(path: *const c_char, buf: *mut c_char, size: usize) -> isize;
    fn sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
}

const HOOK_INSTALLED: u32 = 1;
const FILE_1_READ: u32 = 2;
const FILE_2_READ: u32 = 4;
const NAME_READ: u32 = 8;

static STATE: AtomicU32 = AtomicU32::new(0);
static EVENTS: AtomicU64 = AtomicU64::new(0);
static FILE_BYTES: AtomicU64 = AtomicU64::new(0);
static NAME_LEN: AtomicU64 = AtomicU64::new(0);

/// The message hook: counts events (async-signal-safe: one atomic).
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_hook(_sig: c_int) {
    EVENTS.fetch_add(1, Ordering::Relaxed);
}

/// Reads the file named by environment variable `var` to its end; its size, or `None`.
fn read_file(var: &core::ffi::CStr) -> Option<u64> {
    // SAFETY: `var` is NUL-terminated; getenv returns NULL or a NUL-terminated string.
    let path = unsafe { getenv(var.as_ptr()) };
    if path.is_null() {
        return None;
    }
    // SAFETY: `path` is a NUL-terminated string from the environment.
    let fd = unsafe { open(path, O_RDONLY_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 4096];
    let mut total = 0u64;
    let ok = loop {
        // SAFETY: `buf` is valid for its length; `fd` is open.
        let n = unsafe { read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => break true,
            n if n > 0 => total += n as u64,
            _ => break false,
        }
    };
    // SAFETY: closes the descriptor opened above, once.
    unsafe { close(fd) };
    ok.then_some(total)
}

extern "C" fn initialise() {
    let mut state = 0;
    let hook = SigAction { handler: osprim_init_hook as *const () as usize, mask: [0; 16], flags: SA_RESTART, restorer: 0 };
    // SAFETY: `hook` is a valid action whose handler only bumps an atomic; no old action asked.
    if unsafe { sigaction(SIGIO, &hook, core::ptr::null_mut()) } == 0 {
        state |= HOOK_INSTALLED;
    }
    let mut bytes = 0;
    if let Some(n) = read_file(c"OSPRIM_INIT_FILE_1") {
        state |= FILE_1_READ;
        bytes += n;
    }
    if let Some(n) = read_file(c"OSPRIM_INIT_FILE_2") {
        state |= FILE_2_READ;
        bytes += n;
    }
    let mut name = [0 as c_char; 4096];
    // SAFETY: the path is NUL-terminated; `name` is valid for its length.
    let len = unsafe { readlink(c"/proc/self/exe".as_ptr(), name.as_mut_ptr(), name.len()) };
    if len > 0 {
        state |= NAME_READ;
        NAME_LEN.store(len as u64, Ordering::Relaxed);
    }
    FILE_BYTES.store(bytes, Ordering::Relaxed);
    STATE.store(state, Ordering::Release);
}

/// The constructor, run by the dynamic loader when the library is loaded.
#[used]
#[unsafe(link_section = ".init_array")]
static INITIALISE: extern "C" fn() = initialise;

/// The steps the constructor completed (bits: 1 hook, 2 first file, 4 second file, 8 name).
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_state() -> u64 {
    u64::from(STATE.load(Ordering::Acquire))
}

/// The state of a constructor that did everything.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_complete() -> u64 {
    u64::from(HOOK_INSTALLED | FILE_1_READ | FILE_2_READ | NAME_READ)
}

/// Bytes the constructor read from the two files.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_file_bytes() -> u64 {
    FILE_BYTES.load(Ordering::Relaxed)
}

/// Length of the program name the constructor read.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_name_len() -> u64 {
    NAME_LEN.load(Ordering::Relaxed)
}

/// Events the hook has counted.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_init_events() -> u64 {
    EVENTS.load(Ordering::Relaxed)
}


#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: abort takes nothing.
    unsafe { abort() }
}
