//! osprim's helper executable: the fresh processes that `interpose.preload` and
//! `lib.dlopen.init` measure in. osprim carries it inside itself, writes it to the run's private
//! directory and starts it with `exec`, so each child begins as a new program: nothing mapped
//! but what its own start-up maps.
//!
//! `osprim_helper <timer> read-loop` — times `read` of 1 byte from a pipe it owns, two ways in
//! alternating blocks: through the symbol `read` (the interposer's wrapper when started with
//! `LD_PRELOAD`) and through the C library's own `read` (looked up in `libc.so.6` itself, so
//! the wrapper never sees it); both are called through a function pointer, alike. It says
//! `ready <hooked>` on stdout (1 when the interposer's counters are visible), then for each
//! 8-byte command (0: leave; bit 63 set: the direct block first) takes `n` (the low bits) reads
//! each way: for each block it refills its pipe (untimed, up to 4096 bytes at a time) and times
//! each chunk of 1-byte reads, reading its own CPU time (`CLOCK_THREAD_CPUTIME_ID`) around each
//! chunk. It replies with ten little-endian u64: ticks through the symbol, ticks direct (each
//! summed over its chunks), the CPU ns charged over those chunks (symbol, direct), reads made
//! each way, reads that returned the wrong byte (both ways), the interposer's count of reads
//! and its sum of first bytes over the symbol's chunks, its count over the direct chunks
//! (which must stay 0), and the sum of the bytes read each way. Commands are read and replies
//! written with the bare `read`/`write` system calls, so the interposer never sees them.
//!
//! `osprim_helper <timer> dlopen-init <library>` — checks the library is not mapped yet, times
//! one `dlopen(RTLD_NOW | RTLD_LOCAL)` of it, and prints one line of `key=value`s: `ticks`,
//! `premapped` (0/1, read from `/proc/self/maps` before the open), `opened`, `state` and
//! `complete` (what the constructor says it did), `hook` (1 when the SIGIO handler in place is
//! the library's), `file_bytes`, `name_len` and `name_expected` (the length of this program's
//! own `readlink("/proc/self/exe")`).
//!
//! `<timer>` is `counter` (the CPU's cycle counter, read as osprim reads it) or `clock`
//! (`CLOCK_MONOTONIC_RAW` in ns), so the ticks are in the unit of osprim's run.

use std::ffi::{CString, c_char, c_int, c_long, c_void};
use std::io::Write;

#[repr(C)]
struct SigAction {
    handler: usize,
    mask: [u64; 16],
    flags: c_int,
    restorer: usize,
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: c_long,
}

const RTLD_NOW: c_int = 2;
const RTLD_NOLOAD: c_int = 4;
const CLOCK_THREAD_CPUTIME_ID: c_int = 3;
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();
const SIGIO: c_int = 29;
const CLOCK_MONOTONIC_RAW: c_int = 4;
const O_CLOEXEC: c_int = 0o2_000_000;
const CHUNK: u64 = 4096;
/// The command bit that puts the direct block first.
const DIRECT_FIRST: u64 = 1 << 63;

type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;

unsafe extern "C" {
    fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    fn syscall(n: c_long, ...) -> c_long;
    fn dlopen(path: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn sigaction(sig: c_int, act: *const SigAction, old: *mut SigAction) -> c_int;
    fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
}

#[cfg(target_arch = "x86_64")]
const SYS_READ: c_long = 0;
#[cfg(target_arch = "x86_64")]
const SYS_WRITE: c_long = 1;
#[cfg(target_arch = "aarch64")]
const SYS_READ: c_long = 63;
#[cfg(target_arch = "aarch64")]
const SYS_WRITE: c_long = 64;

#[derive(Clone, Copy, PartialEq)]
enum Timer {
    Counter,
    Clock,
}

impl Timer {
    #[inline(always)]
    fn start(self) -> u64 {
        if self == Timer::Clock { clock_ns() } else { counter_start() }
    }
    #[inline(always)]
    fn stop(self) -> u64 {
        if self == Timer::Clock { clock_ns() } else { counter_stop() }
    }
}

#[inline(never)]
fn clock_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { clock_gettime(CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn counter_start() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: lfence; rdtsc write only eax/edx.
    unsafe { std::arch::asm!("lfence", "rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn counter_stop() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdtscp writes eax/edx/ecx; lfence nothing.
    unsafe {
        std::arch::asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _,
            options(nomem, nostack, preserves_flags))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn counter_start() -> u64 {
    let v: u64;
    // SAFETY: reads cntvct_el0 after an isb.
    unsafe { std::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack)) };
    v
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn counter_stop() -> u64 {
    let v: u64;
    // SAFETY: as counter_start, with a trailing isb.
    unsafe { std::arch::asm!("isb", "mrs {v}, cntvct_el0", "isb", v = out(reg) v, options(nomem, nostack)) };
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let timer = match args.get(1).map(String::as_str) {
        Some("counter") => Timer::Counter,
        Some("clock") => Timer::Clock,
        _ => fail("usage: osprim_helper counter|clock read-loop | dlopen-init <library>"),
    };
    match (args.get(2).map(String::as_str), args.get(3)) {
        (Some("read-loop"), None) => read_loop(timer),
        (Some("dlopen-init"), Some(lib)) => dlopen_init(timer, lib),
        _ => fail("usage: osprim_helper counter|clock read-loop | dlopen-init <library>"),
    }
}

fn fail(why: &str) -> ! {
    eprintln!("osprim_helper: {why}");
    std::process::exit(2)
}

/// The interposer's counter functions, when it is loaded.
fn hook_counters() -> Hook {
    // SAFETY: the names are NUL-terminated; RTLD_DEFAULT searches the loaded objects.
    let reads = unsafe { dlsym(RTLD_DEFAULT, c"osprim_interpose_reads".as_ptr()) };
    // SAFETY: as above.
    let bytes = unsafe { dlsym(RTLD_DEFAULT, c"osprim_interpose_first_bytes".as_ptr()) };
    if reads.is_null() || bytes.is_null() {
        return None;
    }
    // SAFETY: the interposer defines both as `extern "C" fn() -> u64`.
    unsafe {
        Some((
            std::mem::transmute::<*mut c_void, extern "C" fn() -> u64>(reads),
            std::mem::transmute::<*mut c_void, extern "C" fn() -> u64>(bytes),
        ))
    }
}

fn raw_read_exact(fd: c_int, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the rest of `buf` is valid for writing.
        let n = unsafe { syscall(SYS_READ, fd, buf[got..].as_mut_ptr(), buf.len() - got) };
        if n <= 0 {
            if n == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        got += n as usize;
    }
    true
}

fn raw_write_all(fd: c_int, buf: &[u8]) -> bool {
    let mut put = 0;
    while put < buf.len() {
        // SAFETY: the rest of `buf` is valid for reading.
        let n = unsafe { syscall(SYS_WRITE, fd, buf[put..].as_ptr(), buf.len() - put) };
        if n <= 0 {
            return false;
        }
        put += n as usize;
    }
    true
}

/// The byte the `i`th read of a chunk should return: never 0, varying.
fn event_byte(i: u64) -> u8 {
    (i % 251) as u8 + 1
}

/// This thread's CPU time, ns (the kernel's account).
fn cpu_ns() -> u64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.sec as u64 * 1_000_000_000 + ts.nsec as u64
}

/// Times `count` 1-byte reads from `fd` through `f`, whose pipe holds exactly the bytes they
/// should get.
#[inline(never)]
fn timed_reads(timer: Timer, fd: c_int, count: u64, f: ReadFn, wrong: &mut u64) -> u64 {
    let f = std::hint::black_box(f);
    let mut b = [0u8; 1];
    let t0 = timer.start();
    for i in 0..count {
        // SAFETY: `b` is valid for 1 byte; `f` is a `read`.
        let n = unsafe { f(fd, b.as_mut_ptr().cast(), 1) };
        if n != 1 || b[0] != event_byte(i) {
            *wrong += 1;
        }
    }
    let t1 = timer.stop();
    t1.wrapping_sub(t0)
}

/// What one block of reads one way measured.
#[derive(Default)]
struct Block {
    ticks: u64,
    cpu_ns: u64,
    hook_reads: u64,
    hook_bytes: u64,
    bytes: u64,
}

/// `n` reads through `f` in chunks, each refilled before and timed alone.
fn block(timer: Timer, fds: [c_int; 2], chunk: &[u8], n: u64, f: ReadFn, hook: Hook, wrong: &mut u64) -> Block {
    let mut out = Block::default();
    let mut left = n;
    while left > 0 {
        let k = left.min(CHUNK);
        // SAFETY: `chunk` is valid for `k` ≤ its length bytes; the pipe has room for them
        // (it is empty: the last chunk's reads took everything).
        if unsafe { write(fds[1], chunk.as_ptr().cast(), k as usize) } != k as isize {
            fail("refilling the pipe failed");
        }
        let before = hook.map(|(r, b)| (r(), b()));
        let c0 = cpu_ns();
        out.ticks += timed_reads(timer, fds[0], k, f, wrong);
        out.cpu_ns += cpu_ns().saturating_sub(c0);
        if let (Some((r, b)), Some((r0, b0))) = (hook, before) {
            out.hook_reads += r() - r0;
            out.hook_bytes += b() - b0;
        }
        out.bytes += chunk[..k as usize].iter().map(|&x| u64::from(x)).sum::<u64>();
        left -= k;
    }
    out
}

type Hook = Option<(extern "C" fn() -> u64, extern "C" fn() -> u64)>;

/// The C library's own `read`, from `libc.so.6` itself (not the first `read` in the search
/// order, which is the interposer's when it is preloaded).
fn libc_read() -> Option<ReadFn> {
    // SAFETY: the name is NUL-terminated; RTLD_NOLOAD only finds the loaded C library.
    let h = unsafe { dlopen(c"libc.so.6".as_ptr(), RTLD_NOW | RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    // SAFETY: `h` is a live handle; the name is NUL-terminated.
    let f = unsafe { dlsym(h, c"read".as_ptr()) };
    // SAFETY: libc's `read` has this signature.
    (!f.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, ReadFn>(f) })
}

fn read_loop(timer: Timer) {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) } != 0 {
        fail("pipe2 failed");
    }
    let hook = hook_counters();
    let direct = libc_read().unwrap_or_else(|| fail("the C library's own read (libc.so.6) was not found"));
    // The symbol `read` as this program binds it: the wrapper when the interposer is preloaded.
    let symbol: ReadFn = read;
    let chunk: Vec<u8> = (0..CHUNK).map(event_byte).collect();
    if !raw_write_all(1, format!("ready {}\n", u8::from(hook.is_some())).as_bytes()) {
        return;
    }
    let mut cmd = [0u8; 8];
    while raw_read_exact(0, &mut cmd) {
        let word = u64::from_le_bytes(cmd);
        let n = word & !DIRECT_FIRST;
        if n == 0 {
            return;
        }
        let mut wrong = 0u64;
        let (with, without) = if word & DIRECT_FIRST != 0 {
            let o = block(timer, fds, &chunk, n, direct, hook, &mut wrong);
            (block(timer, fds, &chunk, n, symbol, hook, &mut wrong), o)
        } else {
            let w = block(timer, fds, &chunk, n, symbol, hook, &mut wrong);
            (w, block(timer, fds, &chunk, n, direct, hook, &mut wrong))
        };
        let words =
            [with.ticks, without.ticks, with.cpu_ns, without.cpu_ns, n, wrong, with.hook_reads, with.hook_bytes];
        let mut reply = [0u8; 80];
        for (i, v) in words.into_iter().chain([without.hook_reads, with.bytes]).enumerate() {
            reply[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
        }
        debug_assert_eq!(with.bytes, without.bytes);
        if !raw_write_all(1, &reply) {
            return;
        }
    }
}

fn dlopen_init(timer: Timer, lib: &str) {
    let path = CString::new(lib).unwrap_or_else(|_| fail("library path contains NUL"));
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    // SAFETY: `path` is NUL-terminated; RTLD_NOLOAD only looks.
    let noload = unsafe { dlopen(path.as_ptr(), RTLD_NOW | RTLD_NOLOAD) };
    let premapped = maps.lines().any(|l| l.ends_with(lib)) || !noload.is_null();
    let t0 = timer.start();
    // SAFETY: the library is osprim's own init library, whose constructor is safe to run.
    let h = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
    let t1 = timer.stop();
    let ticks = t1.wrapping_sub(t0);
    let call = |name: &std::ffi::CStr| -> Option<u64> {
        if h.is_null() {
            return None;
        }
        // SAFETY: `h` is a live handle; `name` is NUL-terminated.
        let f = unsafe { dlsym(h, name.as_ptr()) };
        if f.is_null() {
            return None;
        }
        // SAFETY: every function looked up this way is `extern "C" fn() -> u64`.
        Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> u64>(f) }())
    };
    let state = call(c"osprim_init_state");
    let complete = call(c"osprim_init_complete");
    let file_bytes = call(c"osprim_init_file_bytes");
    let name_len = call(c"osprim_init_name_len");
    let hook_fn = if h.is_null() {
        std::ptr::null_mut()
    } else {
        // SAFETY: `h` is a live handle; the name is NUL-terminated.
        unsafe { dlsym(h, c"osprim_init_hook".as_ptr()) }
    };
    let mut old = SigAction { handler: 0, mask: [0; 16], flags: 0, restorer: 0 };
    // SAFETY: a NULL action only queries; `old` is a valid out-pointer.
    let queried = unsafe { sigaction(SIGIO, std::ptr::null(), &mut old) } == 0;
    let hook = queried && !hook_fn.is_null() && old.handler == hook_fn as usize;
    let name_expected = std::fs::read_link("/proc/self/exe").map(|p| p.as_os_str().len()).unwrap_or(0);
    let show = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
    let line = format!(
        "ticks={ticks} premapped={} opened={} state={} complete={} hook={} file_bytes={} name_len={} name_expected={name_expected}\n",
        u8::from(premapped),
        u8::from(!h.is_null()),
        show(state),
        show(complete),
        u8::from(hook),
        show(file_bytes),
        show(name_len),
    );
    let mut out = std::io::stdout().lock();
    if out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_err() {
        std::process::exit(1);
    }
}
