//! Making and ending threads and processes, one at a time, for `thread.*` and `process.*`
//! ([`bench::lifecycle`]): raw `pthread_create`/`pthread_timedjoin_np` of threads whose
//! body only counts (or stamps the clock), and five ways to start a child — glibc's `fork`
//! (the child `_exit`s, or `execve`s a program), `vfork` + `execve` and a bare `clone3` (both
//! in a few lines of assembly whose child never returns to Rust), and `posix_spawn` — plus the
//! parent's touched memory ([`Touched`]). See pthread_create(3), pthread_tryjoin_np(3),
//! fork(2), vfork(2), clone(2) (`clone3`), posix_spawn(3), execve(2).
//!
//! These children do not go through [`super::process::Child`]: its children do set-up work
//! first (`prctl`, signal dispositions) and its reaping polls with sleeps, and both would be
//! inside the clock here.
//!
//! Every child made here is unreaped until [`crate::reap::wait_child`] reaps it (inside the
//! clock, with a [`crate::reap::Watchdog`]'s deadline), so its pid cannot be reused before
//! that.
//!
//! # Safety
//! - A forked child (glibc's `fork`, or a `posix_spawn`/`vfork` child before its `execve`)
//!   runs in a copy of a process that may have other threads: it calls only `_exit` and
//!   `execve`, which are async-signal-safe, with arguments prepared before the fork
//!   ([`ExecArgs`]).
//! - [`vfork_exec`] and [`clone3_exit`] issue the system calls from one `asm!` block: the child
//!   runs only the instructions after the `syscall` (an `execve` and an `exit_group`, or an
//!   `exit_group`), never leaves the block and writes no memory — a `vfork` child shares the
//!   parent's memory and stack, so this is what keeps the parent's frame intact, and the
//!   compiler never sees a function that returns twice. (This is why these two write their own
//!   `syscall` instructions instead of calling [`crate::raw`]'s functions, the home of every
//!   other raw system call: a call would return into compiled code in the child.) The signals
//!   that could run a handler in a `vfork` child are blocked by the caller
//!   ([`SignalMask::block_all_but`]).
//! - A thread made here runs [`count_body`] or [`stamp_body`], which touch only the [`Slot`]
//!   the [`Thread`] guard borrows; the guard joins the thread before the borrow ends (in
//!   [`Thread::join`], or on drop), so the slot outlives every access.
//! - `mmap`/`madvise`/`mincore`/`munmap` of [`Touched`] act on its own mapping only.
#![allow(unsafe_code)]

use crate::clock::Timer;
use std::ffi::{CString, c_char, c_void};
use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------

/// What a thread's body writes: how many bodies ran, and the last body's clock stamp and CPU.
/// One cache line, shared by the creator and the threads it makes one at a time.
#[repr(C, align(64))]
pub struct Slot {
    /// Bodies that ran to their end.
    pub ran: AtomicU64,
    /// The clock read as the first thing in [`stamp_body`] (0: not yet).
    pub stamp: AtomicU64,
    /// The CPU [`stamp_body`] ran on (−1: unknown).
    pub cpu: AtomicI32,
    timer: Timer,
}

impl Slot {
    /// A slot whose stamping body reads `timer`.
    pub fn new(timer: Timer) -> Slot {
        Slot { ran: AtomicU64::new(0), stamp: AtomicU64::new(0), cpu: AtomicI32::new(-1), timer }
    }
}

/// Which body a thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Adds one to [`Slot::ran`] and ends.
    Count,
    /// Reads the clock first, then stores it, its CPU, and adds one to [`Slot::ran`].
    Stamp,
}

extern "C" fn count_body(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Slot` the creating `Thread` guard borrows until it has joined us.
    let slot = unsafe { &*(arg as *const Slot) };
    slot.ran.fetch_add(1, Ordering::Release);
    std::ptr::null_mut()
}

extern "C" fn stamp_body(arg: *mut c_void) -> *mut c_void {
    // SAFETY: as in `count_body`.
    let slot = unsafe { &*(arg as *const Slot) };
    let t = slot.timer.stop();
    slot.stamp.store(t, Ordering::Release);
    // SAFETY: sched_getcpu takes no arguments.
    slot.cpu.store(unsafe { libc::sched_getcpu() }, Ordering::Release);
    slot.ran.fetch_add(1, Ordering::Release);
    std::ptr::null_mut()
}

/// Thread attributes: glibc's defaults, optionally with a CPU to run on
/// (`pthread_attr_setaffinity_np`: glibc then starts the thread stopped and sets its affinity
/// from the creating thread before letting it run).
pub struct ThreadAttr {
    attr: Box<libc::pthread_attr_t>,
}

impl ThreadAttr {
    /// Default attributes, pinned to `cpu` if given.
    pub fn new(cpu: Option<usize>) -> io::Result<ThreadAttr> {
        // SAFETY: pthread_attr_t is plain data, initialised by pthread_attr_init below.
        let mut attr: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `attr` points to writable storage of the right type.
        let rc = unsafe { libc::pthread_attr_init(&mut *attr) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let mut out = ThreadAttr { attr };
        if let Some(cpu) = cpu {
            if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            }
            // SAFETY: cpu_set_t is plain data.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            // SAFETY: `cpu` is within the set (checked above).
            unsafe { libc::CPU_SET(cpu, &mut set) };
            // SAFETY: `attr` was initialised; `set` is a valid cpu_set_t of the size passed.
            let rc = unsafe {
                libc::pthread_attr_setaffinity_np(&mut *out.attr, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
        }
        Ok(out)
    }

    /// The stack size threads made with these attributes get (bytes).
    pub fn stack_size(&self) -> usize {
        let mut size = 0usize;
        // SAFETY: `attr` is initialised; `size` is a valid out-pointer.
        unsafe { libc::pthread_attr_getstacksize(&*self.attr, &mut size) };
        size
    }
}

impl Drop for ThreadAttr {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, destroyed once.
        unsafe { libc::pthread_attr_destroy(&mut *self.attr) };
    }
}

/// A thread running a [`Body`] on a borrowed [`Slot`]; joined (blocking) on drop if
/// [`Thread::join`] did not join it.
pub struct Thread<'a> {
    handle: libc::pthread_t,
    joined: bool,
    _slot: PhantomData<&'a Slot>,
}

/// Why a join did not end a thread.
#[derive(Debug, PartialEq, Eq)]
pub enum JoinError {
    /// The deadline passed first.
    TimedOut,
    /// Another error (its errno).
    Errno(i32),
}

/// Creates a thread with `attr` running `body` on `slot`. Kept small and inlined: it sits
/// inside timed regions.
#[inline(always)]
pub fn create<'a>(attr: &ThreadAttr, body: Body, slot: &'a Slot) -> Result<Thread<'a>, i32> {
    let f: extern "C" fn(*mut c_void) -> *mut c_void = match body {
        Body::Count => count_body,
        Body::Stamp => stamp_body,
    };
    let mut handle: libc::pthread_t = 0;
    // SAFETY: `attr` is initialised; the body reads only `slot`, which the returned guard
    // borrows until the thread is joined.
    let rc = unsafe { libc::pthread_create(&mut handle, &*attr.attr, f, slot as *const Slot as *mut c_void) };
    if rc != 0 {
        return Err(rc);
    }
    Ok(Thread { handle, joined: false, _slot: PhantomData })
}

/// A `CLOCK_REALTIME` instant `within` from now, for [`Thread::join`].
pub fn realtime_deadline(within: Duration) -> libc::timespec {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let total = now.tv_nsec as u128 + within.as_nanos();
    libc::timespec {
        tv_sec: now.tv_sec.saturating_add((total / 1_000_000_000) as libc::time_t),
        tv_nsec: (total % 1_000_000_000) as libc::c_long,
    }
}

impl<'a> Thread<'a> {
    /// Joins the thread, giving up at `deadline` (`CLOCK_REALTIME`, from [`realtime_deadline`]):
    /// `pthread_timedjoin_np`, glibc's `pthread_join` with a futex timeout.
    #[inline(always)]
    pub fn join(mut self, deadline: &libc::timespec) -> Result<(), (Thread<'a>, JoinError)> {
        // SAFETY: `handle` is a joinable thread of ours not yet joined.
        let rc = unsafe { libc::pthread_timedjoin_np(self.handle, std::ptr::null_mut(), deadline) };
        match rc {
            0 => {
                self.joined = true;
                Ok(())
            }
            libc::ETIMEDOUT => Err((self, JoinError::TimedOut)),
            e => Err((self, JoinError::Errno(e))),
        }
    }
}

impl Drop for Thread<'_> {
    fn drop(&mut self) {
        if !self.joined {
            // The body is a few stores, so the thread ends; the slot it uses must outlive it,
            // so this waits without a deadline (reached only after a timed join gave up).
            // SAFETY: `handle` is a joinable thread of ours not yet joined.
            unsafe { libc::pthread_join(self.handle, std::ptr::null_mut()) };
        }
    }
}

// ---------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------

/// A program and its arguments, laid out for `execve` before any fork: the path, a
/// null-terminated `argv` whose first entry is the path, and an empty environment.
pub struct ExecArgs {
    path: CString,
    _args: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: [*const c_char; 1],
}

impl ExecArgs {
    /// `path` with extra arguments `args` (after `argv[0]`, which is `path`).
    pub fn new(path: &std::path::Path, args: &[&str]) -> io::Result<ExecArgs> {
        use std::os::unix::ffi::OsStrExt;
        let bad = |_| io::Error::from(io::ErrorKind::InvalidInput);
        let path = CString::new(path.as_os_str().as_bytes()).map_err(bad)?;
        let args: Vec<CString> = args.iter().map(|a| CString::new(*a).map_err(bad)).collect::<Result<_, _>>()?;
        let mut argv = vec![path.as_ptr()];
        argv.extend(args.iter().map(|a| a.as_ptr()));
        argv.push(std::ptr::null());
        Ok(ExecArgs { path, _args: args, argv, envp: [std::ptr::null()] })
    }
}

/// glibc's `fork`; the child `_exit(0)`s at once. The child's pid.
#[inline(always)]
pub fn fork_exit() -> io::Result<libc::pid_t> {
    // SAFETY: the child calls only `_exit` (module doc).
    match unsafe { libc::fork() } {
        // SAFETY: the child leaves at once, running nothing of the parent's.
        0 => unsafe { libc::_exit(0) },
        -1 => Err(io::Error::last_os_error()),
        pid => Ok(pid),
    }
}

/// glibc's `fork`; the child `execve`s `args` (and `_exit(127)`s if that fails).
#[inline(always)]
pub fn fork_exec(args: &ExecArgs) -> io::Result<libc::pid_t> {
    // SAFETY: the child calls only `execve` and `_exit`, with pointers made before the fork.
    match unsafe { libc::fork() } {
        // SAFETY: as above: arrays made by `ExecArgs::new`, null-terminated.
        0 => unsafe {
            libc::execve(args.path.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr());
            libc::_exit(127)
        },
        -1 => Err(io::Error::last_os_error()),
        pid => Ok(pid),
    }
}

/// `posix_spawn` of `args` (no file actions, default attributes): glibc's
/// `clone(CLONE_VM | CLONE_VFORK)` on a separate stack, all signals blocked around it.
#[inline(always)]
pub fn posix_spawn(args: &ExecArgs) -> io::Result<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    // SAFETY: the pointers are valid, null-terminated arrays made by `ExecArgs::new`.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            args.path.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            args.argv.as_ptr() as *const *mut c_char,
            args.envp.as_ptr() as *const *mut c_char,
        )
    };
    if rc != 0 { Err(io::Error::from_raw_os_error(rc)) } else { Ok(pid) }
}

/// Whether [`vfork_exec`] and [`clone3_exit`] exist on this architecture.
pub const RAW_SPAWN_AVAILABLE: bool = cfg!(target_arch = "x86_64");

/// `vfork` + `execve` of `args` (`exit_group(127)` if the exec fails), in one `asm!` block:
/// the parent is suspended until the child has exec'd or exited. The caller blocks signals
/// around it ([`SignalMask::block_all_but`]), so no handler runs in the child on the shared
/// stack.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn vfork_exec(args: &ExecArgs, _mask: &SignalMask) -> io::Result<libc::pid_t> {
    let ret: i64;
    // SAFETY: module doc. vfork (58) takes no arguments and keeps rdi/rsi/rdx, so the child
    // finds execve's arguments (59) in place; it then only issues exit_group (231). The parent
    // resumes after the child's exec or exit, on the path that skips the child's
    // instructions, with every register but rax/rcx/r11 as it was.
    unsafe {
        core::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, 59",
            "syscall",
            "mov edi, 127",
            "mov eax, 231",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") 58i64 => ret,
            in("rdi") args.path.as_ptr(),
            in("rsi") args.argv.as_ptr(),
            in("rdx") args.envp.as_ptr(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 { Err(io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret as libc::pid_t) }
}

/// Fallback on other architectures: not available ([`RAW_SPAWN_AVAILABLE`]).
#[cfg(not(target_arch = "x86_64"))]
pub fn vfork_exec(_args: &ExecArgs, _mask: &SignalMask) -> io::Result<libc::pid_t> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// `struct clone_args` up to `tls` (`CLONE_ARGS_SIZE_VER0`, 64 bytes).
#[repr(C)]
#[derive(Default)]
pub struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
}

impl CloneArgs {
    /// A plain fork: no flags, `SIGCHLD` to the parent at exit.
    pub fn fork_like() -> CloneArgs {
        CloneArgs { exit_signal: libc::SIGCHLD as u64, ..CloneArgs::default() }
    }
}

/// The bare `clone3` system call (no flags: a copy of the process, as `fork` makes without
/// glibc's work around it); the child issues `exit_group(0)` at once, without leaving the
/// `asm!` block. `Err(errno)` on failure (`ENOSYS` where the kernel or a seccomp filter lacks it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn clone3_exit(args: &CloneArgs) -> Result<libc::pid_t, i32> {
    let ret: i64;
    // SAFETY: module doc. clone3 (435) reads `args` (64 bytes, valid for the call); the child
    // (rax = 0) runs only exit_group(0) (231) on its copy of the registers and memory.
    unsafe {
        core::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor edi, edi",
            "mov eax, 231",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") 435i64 => ret,
            in("rdi") args as *const CloneArgs,
            in("rsi") std::mem::size_of::<CloneArgs>(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 { Err(-ret as i32) } else { Ok(ret as libc::pid_t) }
}

/// Fallback on other architectures: `ENOSYS` ([`RAW_SPAWN_AVAILABLE`]).
#[cfg(not(target_arch = "x86_64"))]
pub fn clone3_exit(_args: &CloneArgs) -> Result<libc::pid_t, i32> {
    Err(libc::ENOSYS)
}

/// The calling thread's signal mask with everything blocked but one signal (the reaper's
/// [`crate::reap::deadline_signal`]) (and the
/// signals that cannot be blocked); the previous mask comes back on drop.
pub struct SignalMask {
    previous: libc::sigset_t,
}

impl SignalMask {
    /// Blocks all signals but `keep` in the calling thread.
    pub fn block_all_but(keep: libc::c_int) -> io::Result<SignalMask> {
        // SAFETY: sigset_t is plain data, filled by sigfillset / pthread_sigmask.
        let (mut set, mut previous): (libc::sigset_t, libc::sigset_t) = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to sets on this stack.
        let rc = unsafe {
            libc::sigfillset(&mut set);
            libc::sigdelset(&mut set, keep);
            libc::pthread_sigmask(libc::SIG_SETMASK, &set, &mut previous)
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(SignalMask { previous })
    }
}

impl Drop for SignalMask {
    fn drop(&mut self) {
        // SAFETY: restores the mask read in `block_all_but`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// The calling thread's unreaped children (`/proc/thread-self/children`, which needs
/// `CONFIG_PROC_CHILDREN`); `None` when it cannot be read.
pub fn thread_children() -> Option<Vec<i32>> {
    let text = std::fs::read_to_string("/proc/thread-self/children").ok()?;
    Some(text.split_whitespace().filter_map(|p| p.parse().ok()).collect())
}

// ---------------------------------------------------------------------------------------
// The parent's touched memory
// ---------------------------------------------------------------------------------------

/// Anonymous private memory the process has written (every page backed), with transparent
/// huge pages disabled (`MADV_NOHUGEPAGE`: 4 KiB pages, one page-table entry each); unmapped
/// on drop.
pub struct Touched {
    addr: usize,
    len: usize,
}

impl Touched {
    /// Maps `len` bytes (whole pages) and writes them: `MADV_POPULATE_WRITE` (Linux 5.14), or a
    /// write to each page where that advice is unknown.
    pub fn new(len: usize) -> io::Result<Touched> {
        let page = super::fault::page_size();
        let len = len.div_ceil(page).max(1) * page;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let t = Touched { addr: p as usize, len };
        // SAFETY: advice on our own mapping; it changes policy, not contents.
        let rc = unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: populating our own writable mapping, as writes would.
        if unsafe { libc::madvise(p, len, libc::MADV_POPULATE_WRITE) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(e); // ENOMEM, EFAULT: the memory is not there to be had
            }
            for off in (0..len).step_by(page) {
                // SAFETY: inside our own writable mapping; no reference to it exists.
                unsafe { std::ptr::write_volatile((t.addr + off) as *mut u8, 1) };
            }
        }
        Ok(t)
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pages resident now (`mincore`), and pages in all.
    pub fn resident(&self) -> io::Result<(usize, usize)> {
        let page = super::fault::page_size();
        let pages = self.len / page;
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is our mapping; `vec` has one byte per page of it.
        if unsafe { libc::mincore(self.addr as *mut c_void, self.len, vec.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((vec.iter().filter(|&&b| b & 1 == 1).count(), pages))
    }
}

impl Drop for Touched {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe { libc::munmap(self.addr as *mut c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reap::{Reaped, Watchdog, deadline_signal, wait_child};
    use std::time::Instant;

    fn helper_like() -> ExecArgs {
        ExecArgs::new(std::path::Path::new("/bin/sh"), &["-c", "exit 42"]).unwrap()
    }

    #[test]
    fn every_way_of_starting_a_child_is_reaped_with_its_status() {
        let _serial = crate::testing::serial();
        let wd = Watchdog::start(&[]).unwrap();
        wd.arm(Duration::from_secs(10));
        let args = helper_like();
        assert_eq!(wait_child(fork_exit().unwrap(), &wd), Reaped::Exited(0));
        assert_eq!(wait_child(fork_exec(&args).unwrap(), &wd), Reaped::Exited(42));
        assert_eq!(wait_child(posix_spawn(&args).unwrap(), &wd), Reaped::Exited(42));
        if RAW_SPAWN_AVAILABLE {
            let mask = SignalMask::block_all_but(deadline_signal()).unwrap();
            assert_eq!(wait_child(vfork_exec(&args, &mask).unwrap(), &wd), Reaped::Exited(42));
            drop(mask);
            match clone3_exit(&CloneArgs::fork_like()) {
                Ok(pid) => assert_eq!(wait_child(pid, &wd), Reaped::Exited(0)),
                Err(e) => assert!(e == libc::ENOSYS || e == libc::EPERM, "clone3: {e}"),
            }
        }
        let missing = ExecArgs::new(std::path::Path::new("/nonexistent/osprim"), &[]).unwrap();
        assert_eq!(wait_child(fork_exec(&missing).unwrap(), &wd), Reaped::Exited(127));
        assert_eq!(thread_children(), Some(vec![]));
    }

    #[test]
    fn an_overdue_child_is_killed_and_reaped() {
        let _serial = crate::testing::serial();
        let wd = Watchdog::start(&[]).unwrap();
        let sleeper = ExecArgs::new(std::path::Path::new("/bin/sleep"), &["30"]).unwrap();
        wd.arm(Duration::from_millis(100));
        let began = Instant::now();
        let r = wait_child(fork_exec(&sleeper).unwrap(), &wd);
        assert_eq!(r, Reaped::Signaled { signal: libc::SIGKILL, killed: true });
        assert!(began.elapsed() < Duration::from_secs(10));
        assert_eq!(thread_children(), Some(vec![]));
    }

    #[test]
    fn threads_run_their_body_and_are_joined() {
        // The fallback clock: stamps are nanoseconds, whatever the counter of this machine.
        let timer = Timer::with_scale(model::TimerKind::MonotonicRaw, 1.0);
        let slot = Slot::new(timer);
        let attr = ThreadAttr::new(None).unwrap();
        let deadline = realtime_deadline(Duration::from_secs(10));
        for _ in 0..3 {
            create(&attr, Body::Count, &slot).unwrap().join(&deadline).map_err(|(_, e)| e).unwrap();
        }
        create(&attr, Body::Stamp, &slot).unwrap().join(&deadline).map_err(|(_, e)| e).unwrap();
        assert_eq!(slot.ran.load(Ordering::Acquire), 4);
        assert_ne!(slot.stamp.load(Ordering::Acquire), 0);
        assert!(slot.cpu.load(Ordering::Acquire) >= 0);
        assert!(attr.stack_size() > 0);
    }

    #[test]
    fn touched_memory_is_resident() {
        let t = Touched::new(1 << 20).unwrap();
        let (resident, pages) = t.resident().unwrap();
        assert_eq!(resident, pages);
        assert_eq!(t.len(), 1 << 20);
    }
}
