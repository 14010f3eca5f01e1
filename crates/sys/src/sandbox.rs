//! A sandbox for a forked child that makes system calls with random arguments (Go!'s error
//! test on today's Linux, `osprim errortest`): [`enter`] confines the calling process and
//! returns a [`Jail`], whose [`Jail::call`] issues one raw system call.
//!
//! What [`enter`] does, in this order (each step's failure is a [`SetupError`] naming it):
//! 1. `chdir` into the scratch directory the parent made (owned by the child's user);
//! 2. standard input, output and error on `/dev/null`, every other descriptor closed
//!    (`close_range`), so no file of the parent's can be reached;
//! 3. every standard signal's disposition back to the default (an inherited handler could not
//!    restore the default under the filter), then `SIGPIPE` and `SIGXFSZ` ignored (a refusal,
//!    not a death), `SIGALRM` caught by a handler that does nothing, every signal unblocked,
//!    and an interval timer ([`Config::alarm`]) so that a call that would block for ever
//!    returns `EINTR` instead;
//! 4. resource limits, soft and hard: no core dump, CPU seconds, address space, descriptors,
//!    file size, no new process (`RLIMIT_NPROC` 0), nothing locked, no message queue; and
//!    not dumpable;
//! 5. as root: no supplementary groups, then group and user `nobody` (65534, real, effective
//!    and saved), which drops every capability; if any of it fails, or a 0 remains, setup
//!    fails and no call is made;
//! 6. the parent-death signal (`SIGKILL`; set after the user change, which clears it), and an
//!    exit if the parent is already gone;
//! 7. no new privileges (`PR_SET_NO_NEW_PRIVS`);
//! 8. the scratch memory: [`Config::scratch_bytes`] read-write followed by as many
//!    inaccessible, within one 4 GiB-aligned window (the filter compares 32-bit halves);
//! 9. the seccomp filter ([`allow_list`]): the architecture must be x86_64, the number one of
//!    the list's, and its arguments within the entry's [`Rule`], or the call fails with
//!    `ENOSYS` (not listed) or `EPERM` (listed, arguments refused) — an errno, never a kill,
//!    so the test counts refusals. No call in the list names a path, another process, a
//!    socket, a new process or program, or memory outside the scratch mapping (the memory
//!    calls are bounded to it), and none writes through a pointer it reads from memory.
//!    The kernel runs two numbers without asking any filter ([`FILTER_EXEMPT`]).
//!
//! # Safety
//! - [`enter`] is for a freshly forked, single-threaded child: it changes the whole process
//!   (descriptors, limits, credentials, signal dispositions, the filter). It calls `libc` with
//!   pointers to its own locals only, and maps memory it owns for the rest of the process.
//! - [`Jail::call`] is safe because of what [`enter`] set up and what it checks: under the
//!   filter no call reaches a file, another process or memory the child did not map for it;
//!   `rt_sigreturn` (which would load the registers from the stack) is refused; and every
//!   argument the kernel may write through is a value that, read as an address, lies in the scratch mapping or
//!   where this process has no memory of its own (below 64 KiB, or at or above 2^47, which
//!   Linux never hands out unless asked by such a hint, so only the random calls themselves
//!   can put a mapping there). So whatever the kernel writes lands in the scratch mapping or
//!   in memory the random calls mapped, never in the caller's own.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::path::Path;
use std::time::Duration;

/// The user and group the child drops to when it starts as root.
pub const NOBODY: u32 = 65534;

/// Whether this process runs as root (effective user 0): the sandbox then drops to
/// [`NOBODY`], and the scratch directory must be nobody's.
pub fn is_root() -> bool {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Below this an argument cannot be this process's memory (Linux's `mmap_min_addr` is 4 KiB
/// or 64 KiB, and nothing is mapped low unless asked).
const LOW: u64 = 1 << 16;
/// From here on an argument cannot be this process's memory (the top of the 4-level user
/// address space).
const HIGH: u64 = 1 << 47;

/// What an allowed call's arguments must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Anything.
    Any,
    /// Argument `i` is 0 (a query, or "this process").
    Zero(usize),
    /// The address (argument 0) lies in the first half of the scratch mapping and the
    /// length (argument 1) is at most that half's: the range stays inside the mapping.
    Scratch,
    /// `mmap` without `MAP_FIXED` (a new mapping, never over an old one).
    Mmap,
    /// `mremap` of the scratch mapping ([`Rule::Scratch`]) without `MREMAP_FIXED` or
    /// `MREMAP_DONTUNMAP`.
    Mremap,
    /// `kill(self, 0)`: whether this process exists.
    KillSelf,
    /// `tgkill(self, self, 0)`.
    TgkillSelf,
    /// `fcntl` with a command that neither names an owner for signals nor leases nor
    /// watches: duplicate, flags, pipe size, seals.
    Fcntl,
    /// `futex` waits and wakes (no requeue, no priority inheritance, which name other
    /// tasks).
    Futex,
}

/// One entry of the allow-list.
#[derive(Clone, Copy, Debug)]
pub struct Allowed {
    /// The system call number.
    pub nr: i64,
    /// Its name.
    pub name: &'static str,
    /// What its arguments must be.
    pub rule: Rule,
    /// The arguments the kernel may write through, a bit each (bit 0: the first): those
    /// [`Jail::call`] checks ([`Jail::harmless`]).
    pub out: u8,
}

macro_rules! allowed {
    ($($name:ident $rule:expr, $out:literal;)*) => {
        &[$(Allowed { nr: libc::$name, name: stringify!($name), rule: $rule, out: $out }),*]
    };
}

/// The allow-list (x86_64 numbers): calls that cannot touch the user's files or other
/// processes (and `exit`, `exit_group`: a process may end itself; `rt_sigreturn`: the way
/// back from a signal handler, the alarm's), each with the arguments
/// the kernel writes through (a bit per argument: [`Allowed::out`]). Empty on other
/// architectures (the sandbox is x86_64 only).
#[cfg(target_arch = "x86_64")]
pub fn allow_list() -> &'static [Allowed] {
    use Rule::*;
    allowed![
        SYS_read Any, 0b10; SYS_write Any, 0; SYS_close Any, 0; SYS_fstat Any, 0b10;
        SYS_lseek Any, 0; SYS_mmap Mmap, 0; SYS_mprotect Scratch, 0; SYS_munmap Scratch, 0;
        SYS_brk Zero(0), 0; SYS_rt_sigaction Zero(1), 0b100; SYS_pread64 Any, 0b10;
        SYS_pwrite64 Any, 0; SYS_writev Any, 0; SYS_pipe Any, 0b1; SYS_sched_yield Any, 0;
        SYS_mremap Mremap, 0; SYS_msync Scratch, 0; SYS_mincore Scratch, 0b100;
        SYS_madvise Scratch, 0; SYS_dup Any, 0; SYS_dup2 Any, 0; SYS_pause Any, 0;
        SYS_nanosleep Any, 0b10; SYS_getitimer Any, 0b10; SYS_getpid Any, 0;
        SYS_kill KillSelf, 0; SYS_uname Any, 0b1; SYS_fcntl Fcntl, 0; SYS_fsync Any, 0;
        SYS_fdatasync Any, 0; SYS_ftruncate Any, 0; SYS_getcwd Any, 0b1; SYS_umask Any, 0;
        SYS_gettimeofday Any, 0b11; SYS_getrlimit Any, 0b10; SYS_getrusage Any, 0b10;
        SYS_sysinfo Any, 0b1; SYS_times Any, 0b1; SYS_getuid Any, 0; SYS_getgid Any, 0;
        SYS_geteuid Any, 0; SYS_getegid Any, 0; SYS_getppid Any, 0; SYS_getpgrp Any, 0;
        SYS_getgroups Any, 0b10; SYS_getresuid Any, 0b111; SYS_getresgid Any, 0b111;
        SYS_gettid Any, 0; SYS_time Any, 0b1; SYS_futex Futex, 0;
        SYS_sched_getaffinity Zero(0), 0b100; SYS_clock_gettime Any, 0b10;
        SYS_clock_getres Any, 0b10; SYS_clock_nanosleep Any, 0b1000; SYS_tgkill TgkillSelf, 0;
        SYS_eventfd2 Any, 0; SYS_pipe2 Any, 0b1; SYS_dup3 Any, 0; SYS_prlimit64 Zero(0), 0b1000;
        SYS_getrandom Any, 0b1; SYS_memfd_create Any, 0; SYS_poll Any, 0b1;
        SYS_getcpu Any, 0b111; SYS_splice Any, 0b1010; SYS_tee Any, 0; SYS_exit Any, 0;
        SYS_exit_group Any, 0; SYS_rt_sigreturn Any, 0;
    ]
}

/// The allow-list: empty where the sandbox is not built.
#[cfg(not(target_arch = "x86_64"))]
pub fn allow_list() -> &'static [Allowed] {
    &[]
}

/// Numbers the kernel runs without consulting any seccomp filter (x86_64, Linux 6.11 and
/// later): `uretprobe` (335) and `uprobe` (336), the uprobe trampolines' own calls. Outside a
/// trampoline `uprobe` fails with `ENXIO` and `uretprobe` kills the caller with `SIGILL`, so
/// they reach nothing; a filter simply cannot refuse them.
pub const FILTER_EXEMPT: [i64; 2] = [335, 336];

/// The entry for `nr`, if it is allowed.
pub fn allowed(nr: i64) -> Option<&'static Allowed> {
    allow_list().iter().find(|a| a.nr == nr)
}

/// Resource limits of the child (soft and hard alike).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// CPU seconds (`SIGXCPU` after them, `SIGKILL` a second later).
    pub cpu_s: u64,
    /// Address space, bytes (set it above what the forked process already maps).
    pub address_space: u64,
    /// Open descriptors.
    pub nofile: u64,
    /// Largest file (a memfd) in bytes.
    pub fsize: u64,
}

/// How to confine the child.
#[derive(Clone, Debug)]
pub struct Config<'a> {
    /// The scratch directory (the child's working directory; made by the parent, owned by
    /// [`NOBODY`] when the parent is root).
    pub scratch_dir: &'a Path,
    /// Bytes of read-write scratch memory (page multiple); as many inaccessible follow.
    pub scratch_bytes: usize,
    /// The limits.
    pub limits: Limits,
    /// The interval timer that interrupts a blocking call.
    pub alarm: Duration,
    /// The parent's pid (the child leaves if it is gone).
    pub parent: i32,
    /// Numbers the filter lets through whatever their arguments, beside the list (at most 4
    /// are honoured): for a test that the escape check sees a leak. Empty in a real run.
    pub leak: &'a [i64],
}

/// Which step of [`enter`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `chdir` into the scratch directory.
    Chdir = 1,
    /// Descriptors.
    Fds,
    /// Signal dispositions and the timer.
    Signals,
    /// Resource limits.
    Limits,
    /// Dropping root.
    Privileges,
    /// The parent-death signal.
    DeathSignal,
    /// No new privileges.
    NoNewPrivs,
    /// The scratch memory.
    Memory,
    /// The seccomp filter.
    Filter,
    /// Not built for this architecture.
    Architecture,
}

impl Stage {
    /// All stages, in order.
    pub const ALL: [Stage; 10] = [
        Stage::Chdir,
        Stage::Fds,
        Stage::Signals,
        Stage::Limits,
        Stage::Privileges,
        Stage::DeathSignal,
        Stage::NoNewPrivs,
        Stage::Memory,
        Stage::Filter,
        Stage::Architecture,
    ];

    /// Its number (1…), for a word shared with the parent.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// The stage numbered `code`.
    pub fn from_code(code: u64) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.code() == code)
    }

    /// What it does, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Chdir => "chdir into the scratch directory",
            Stage::Fds => "descriptors on /dev/null, the rest closed",
            Stage::Signals => "signal dispositions and the interval timer",
            Stage::Limits => "resource limits",
            Stage::Privileges => "dropping root to nobody",
            Stage::DeathSignal => "the parent-death signal",
            Stage::NoNewPrivs => "no new privileges",
            Stage::Memory => "the scratch memory",
            Stage::Filter => "the seccomp filter",
            Stage::Architecture => "an x86_64 build",
        }
    }
}

/// A failed step of [`enter`] and its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupError {
    /// The step.
    pub stage: Stage,
    /// Its errno (0: a check, not a call, failed).
    pub errno: i32,
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed", self.stage.describe())?;
        if self.errno != 0 {
            write!(f, ": {}", std::io::Error::from_raw_os_error(self.errno))?;
        }
        Ok(())
    }
}

/// A confined process ([`enter`]): its scratch memory and its pid.
#[derive(Debug)]
pub struct Jail {
    lo: u64,
    len: u64,
    pid: i32,
    /// The numbers [`Config::leak`] let through (all their arguments are checked).
    leak: [i64; 4],
}

/// A call [`Jail::call`] refused to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsafe {
    /// An argument the kernel may write through could address this process's own memory.
    Argument {
        /// Which argument.
        index: usize,
        /// Its value.
        value: u64,
    },
    /// `rt_sigreturn` outside a signal handler: it would load every register from whatever
    /// the stack holds.
    Number(i64),
}

impl Jail {
    /// The scratch memory: `len` read-write bytes at `base`, then `len` inaccessible ones.
    pub fn scratch(&self) -> (u64, u64) {
        (self.lo, self.len)
    }

    /// The confined process's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether `value`, read as an address, can only reach memory the jail lets calls touch:
    /// the scratch mapping (both halves), or where this process has nothing (module doc).
    pub fn harmless(&self, value: u64) -> bool {
        !(LOW..HIGH).contains(&value) || (self.lo..self.lo + 2 * self.len).contains(&value)
    }

    /// System call `nr` with `args`: the raw result (a value, or −errno); refused
    /// ([`Unsafe`]) if the kernel may write through an argument that could address this
    /// process's own memory ([`Jail::harmless`]; an allowed call's [`Allowed::out`]
    /// arguments, every argument of a leaked number, none of a number the filter refuses), and
    /// for `rt_sigreturn`.
    pub fn call(&self, nr: i64, args: [u64; 6]) -> Result<i64, Unsafe> {
        if nr == libc::SYS_rt_sigreturn {
            return Err(Unsafe::Number(nr));
        }
        let out = match allowed(nr) {
            Some(a) => a.out,
            None if nr != -1 && self.leak.contains(&nr) => 0x3f,
            None => 0,
        };
        if let Some(index) = (0..6).find(|&i| out & (1 << i) != 0 && !self.harmless(args[i])) {
            return Err(Unsafe::Argument { index, value: args[index] });
        }
        let a = args.map(|v| v as i64);
        // SAFETY: the module's safety notes: the filter bounds what the call can touch, and
        // every argument is harmless as an address.
        Ok(unsafe { crate::raw::syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
    }
}

/// `Err(errno)` of a libc call that returned −1.
fn libc_check(rc: libc::c_int, stage: Stage) -> Result<(), SetupError> {
    if rc == -1 { Err(SetupError { stage, errno: errno() }) } else { Ok(()) }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

extern "C" fn on_alarm(_: libc::c_int) {}

/// Confines the calling process (a freshly forked, single-threaded child) as the module doc
/// says; the [`Jail`] to make calls in, or the step that failed (the process is then partly
/// confined, and must exit).
pub fn enter(cfg: &Config) -> Result<Jail, SetupError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(SetupError { stage: Stage::Architecture, errno: 0 });
    }
    let dir = CString::new(cfg.scratch_dir.as_os_str().as_encoded_bytes())
        .map_err(|_| SetupError { stage: Stage::Chdir, errno: libc::EINVAL })?;
    // SAFETY: a NUL-terminated path owned by this frame.
    libc_check(unsafe { libc::chdir(dir.as_ptr()) }, Stage::Chdir)?;
    descriptors()?;
    signals(cfg.alarm)?;
    limits(&cfg.limits)?;
    drop_root()?;
    // SAFETY: prctl and getppid take no pointers.
    unsafe {
        libc_check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0), Stage::DeathSignal)?;
        if libc::getppid() != cfg.parent {
            libc::_exit(1);
        }
        libc_check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), Stage::NoNewPrivs)?;
    }
    let (lo, len) = scratch_memory(cfg.scratch_bytes)?;
    // SAFETY: getpid takes nothing.
    let pid = unsafe { libc::getpid() };
    let program = filter(lo, len as u64, pid, &cfg.leak[..cfg.leak.len().min(4)]);
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    // SAFETY: `prog` points at `program`, live across the call, which copies it.
    let rc =
        unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog as *const libc::sock_fprog) };
    libc_check(rc as libc::c_int, Stage::Filter)?;
    let mut leak = [-1; 4];
    for (slot, &nr) in leak.iter_mut().zip(cfg.leak) {
        *slot = nr;
    }
    Ok(Jail { lo, len: len as u64, pid, leak })
}

/// Standard descriptors on `/dev/null`, every other one closed.
fn descriptors() -> Result<(), SetupError> {
    let st = Stage::Fds;
    // SAFETY: a static NUL-terminated path; dup2 and close take descriptors only.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        libc_check(null, st)?;
        for fd in 0..3 {
            if null != fd {
                libc_check(libc::dup2(null, fd), st)?;
            }
        }
        if null > 2 {
            libc::close(null);
        }
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            // Before Linux 5.9: close one by one, up to the descriptor limit.
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 1 << 20) as libc::c_int;
            for fd in 3..max {
                libc::close(fd);
            }
        }
    }
    Ok(())
}

/// Every disposition the parent set back to the default (a handler inherited from it, such
/// as its SIGSEGV dispatcher, could not put the default back under the filter and would
/// catch the same fault for ever), then SIGPIPE and SIGXFSZ ignored, SIGALRM caught (no
/// restart), all signals unblocked, the timer.
fn signals(alarm: Duration) -> Result<(), SetupError> {
    let st = Stage::Signals;
    // Standard signals only: libc refuses those it keeps for itself (32, 33) with EINVAL,
    // and no real-time signal is ever delivered here.
    for sig in (1..32).filter(|&s| s != libc::SIGKILL && s != libc::SIGSTOP) {
        crate::disposition::reset(sig).map_err(|e| SetupError { stage: st, errno: e.raw_os_error().unwrap_or(0) })?;
    }
    crate::disposition::ignore(libc::SIGPIPE)
        .map_err(|e| SetupError { stage: st, errno: e.raw_os_error().unwrap_or(0) })?;
    crate::disposition::ignore(libc::SIGXFSZ)
        .map_err(|e| SetupError { stage: st, errno: e.raw_os_error().unwrap_or(0) })?;
    // SAFETY: the structures are this frame's, initialised before use; the handler does
    // nothing (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc_check(libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut()), st)?;
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc_check(libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()), st)?;
        let t = libc::timeval {
            tv_sec: alarm.as_secs() as libc::time_t,
            tv_usec: alarm.subsec_micros().max(100) as libc::suseconds_t,
        };
        let it = libc::itimerval { it_interval: t, it_value: t };
        libc_check(libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()), st)?;
    }
    Ok(())
}

/// The resource limits, soft and hard, and not dumpable.
fn limits(l: &Limits) -> Result<(), SetupError> {
    let set = |resource, soft: u64, hard: u64| {
        let r = libc::rlimit { rlim_cur: soft, rlim_max: hard };
        // SAFETY: `r` is this frame's.
        libc_check(unsafe { libc::setrlimit(resource, &r) }, Stage::Limits)
    };
    set(libc::RLIMIT_CORE, 0, 0)?;
    set(libc::RLIMIT_CPU, l.cpu_s, l.cpu_s + 1)?;
    set(libc::RLIMIT_AS, l.address_space, l.address_space)?;
    set(libc::RLIMIT_NOFILE, l.nofile, l.nofile)?;
    set(libc::RLIMIT_FSIZE, l.fsize, l.fsize)?;
    set(libc::RLIMIT_NPROC, 0, 0)?;
    set(libc::RLIMIT_MEMLOCK, 0, 0)?;
    set(libc::RLIMIT_MSGQUEUE, 0, 0)?;
    // SAFETY: prctl takes no pointer here.
    libc_check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) }, Stage::Limits)
}

/// As root: no supplementary groups, group and user nobody; then checks no id is 0.
fn drop_root() -> Result<(), SetupError> {
    let st = Stage::Privileges;
    // SAFETY: the id calls take integers or pointers to this frame's locals.
    unsafe {
        if libc::geteuid() == 0 || libc::getuid() == 0 {
            libc_check(libc::setgroups(0, std::ptr::null()), st)?;
            libc_check(libc::setresgid(NOBODY, NOBODY, NOBODY), st)?;
            libc_check(libc::setresuid(NOBODY, NOBODY, NOBODY), st)?;
        }
        let (mut r, mut e, mut s) = (0, 0, 0);
        libc_check(libc::getresuid(&mut r, &mut e, &mut s), st)?;
        if r == 0 || e == 0 || s == 0 {
            return Err(SetupError { stage: st, errno: 0 });
        }
    }
    Ok(())
}

/// `2 × bytes` of fresh memory, the first half read-write, inside one 4 GiB-aligned window.
fn scratch_memory(bytes: usize) -> Result<(u64, usize), SetupError> {
    let st = Stage::Memory;
    let page = crate::fault::page_size();
    let len = bytes.div_ceil(page).max(1) * page;
    let mut misplaced = Vec::new();
    let mut found = None;
    for _ in 0..8 {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 2 * len, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(SetupError { stage: st, errno: errno() });
        }
        let lo = p as u64;
        if lo >> 32 == (lo + 2 * len as u64 - 1) >> 32 {
            found = Some(lo);
            break;
        }
        misplaced.push(lo);
    }
    for m in misplaced {
        // SAFETY: unmaps a mapping made above and never used.
        unsafe { libc::munmap(m as *mut libc::c_void, 2 * len) };
    }
    let lo = found.ok_or(SetupError { stage: st, errno: 0 })?;
    // SAFETY: the first half of the mapping made above.
    libc_check(unsafe { libc::mprotect(lo as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE) }, st)?;
    Ok((lo, len))
}

// The classic BPF the filter is written in (<linux/filter.h>, <linux/seccomp.h>).
const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35;
const JGT: u16 = 0x25;
const JSET: u16 = 0x45;
const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const NR: u32 = 0;
const ARCH: u32 = 4;

/// Where a jump in a rule's block goes.
#[derive(Clone, Copy)]
enum To {
    Next,
    Allow,
    Deny,
}

/// Offsets of argument `i`'s low and high 32-bit halves in `struct seccomp_data`.
fn lo(i: usize) -> u32 {
    16 + 8 * i as u32
}
fn hi(i: usize) -> u32 {
    20 + 8 * i as u32
}

/// The instructions of one rule (ending in an allow and a deny).
struct Block(Vec<(u16, u32, To, To)>);

impl Block {
    fn ld(&mut self, off: u32) {
        self.0.push((LD_ABS, off, To::Next, To::Next));
    }
    fn jmp(&mut self, code: u16, k: u32, t: To, f: To) {
        self.0.push((code, k, t, f));
    }
    /// Argument `i` equals `v`, else deny; then `then`.
    fn arg_eq(&mut self, i: usize, v: u64, then: To) {
        self.ld(lo(i));
        self.jmp(JEQ, v as u32, To::Next, To::Deny);
        self.ld(hi(i));
        self.jmp(JEQ, (v >> 32) as u32, then, To::Deny);
    }
    /// Argument 0 in `[lo, lo + len)` and argument 1 at most `len` (one 4 GiB window).
    fn scratch(&mut self, base: u64, len: u64, then: To) {
        self.ld(hi(0));
        self.jmp(JEQ, (base >> 32) as u32, To::Next, To::Deny);
        self.ld(lo(0));
        self.jmp(JGE, base as u32, To::Next, To::Deny);
        self.jmp(JGE, (base + len) as u32, To::Deny, To::Next);
        self.ld(hi(1));
        self.jmp(JEQ, 0, To::Next, To::Deny);
        self.ld(lo(1));
        self.jmp(JGT, len as u32, To::Deny, then);
    }
    /// Argument `i`'s low half is one of `values`.
    fn one_of(&mut self, values: &[u32]) {
        for (n, &v) in values.iter().enumerate() {
            let miss = if n + 1 == values.len() { To::Deny } else { To::Next };
            self.jmp(JEQ, v, To::Allow, miss);
        }
    }
    /// The block's instructions, jumps resolved, with its allow and deny at the end.
    fn assemble(self) -> Vec<libc::sock_filter> {
        let n = self.0.len();
        let off = |i: usize, to: To| -> u8 {
            let target = match to {
                To::Next => i + 1,
                To::Allow => n,
                To::Deny => n + 1,
            };
            u8::try_from(target - i - 1).expect("a rule's block is short")
        };
        let mut out: Vec<libc::sock_filter> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, &(code, k, t, f))| libc::sock_filter { code, jt: off(i, t), jf: off(i, f), k })
            .collect();
        out.push(ret(RET_ALLOW));
        out.push(ret(RET_ERRNO | libc::EPERM as u32));
        out
    }
}

fn ret(k: u32) -> libc::sock_filter {
    libc::sock_filter { code: RET, jt: 0, jf: 0, k }
}

/// The filter: the architecture, then for each allowed number its rule's block, and `ENOSYS`
/// for every other number. `leak`: numbers let through whatever their arguments (a test's).
pub fn filter(scratch: u64, len: u64, pid: i32, leak: &[i64]) -> Vec<libc::sock_filter> {
    let mut p = vec![
        libc::sock_filter { code: LD_ABS, jt: 0, jf: 0, k: ARCH },
        libc::sock_filter { code: JEQ, jt: 1, jf: 0, k: AUDIT_ARCH_X86_64 },
        ret(RET_ERRNO | libc::ENOSYS as u32),
        libc::sock_filter { code: LD_ABS, jt: 0, jf: 0, k: NR },
    ];
    let leaks = leak.iter().map(|&nr| (nr, Rule::Any));
    for (nr, rule) in leaks.chain(allow_list().iter().map(|a| (a.nr, a.rule))) {
        let block = match rule {
            Rule::Any => vec![ret(RET_ALLOW)],
            rule => {
                let mut b = Block(Vec::new());
                let pid = pid as u32 as u64;
                match rule {
                    Rule::Any => unreachable!(),
                    Rule::Zero(i) => b.arg_eq(i, 0, To::Allow),
                    Rule::Scratch => b.scratch(scratch, len, To::Allow),
                    Rule::Mmap => {
                        b.ld(lo(3));
                        b.jmp(JSET, libc::MAP_FIXED as u32, To::Deny, To::Allow);
                    }
                    Rule::Mremap => {
                        b.scratch(scratch, len, To::Next);
                        b.ld(lo(3));
                        b.jmp(JSET, (libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP) as u32, To::Deny, To::Allow);
                    }
                    Rule::KillSelf => {
                        b.arg_eq(0, pid, To::Next);
                        b.arg_eq(1, 0, To::Allow);
                    }
                    Rule::TgkillSelf => {
                        b.arg_eq(0, pid, To::Next);
                        b.arg_eq(1, pid, To::Next);
                        b.arg_eq(2, 0, To::Allow);
                    }
                    Rule::Fcntl => {
                        b.ld(lo(1));
                        b.one_of(&[
                            libc::F_DUPFD as u32,
                            libc::F_GETFD as u32,
                            libc::F_SETFD as u32,
                            libc::F_GETFL as u32,
                            libc::F_SETFL as u32,
                            libc::F_DUPFD_CLOEXEC as u32,
                            libc::F_GETPIPE_SZ as u32,
                            libc::F_SETPIPE_SZ as u32,
                            libc::F_ADD_SEALS as u32,
                            libc::F_GET_SEALS as u32,
                        ]);
                    }
                    Rule::Futex => {
                        b.ld(lo(1));
                        b.jmp(AND, 0x7f, To::Next, To::Next);
                        b.one_of(&[0, 1, 9, 10]); // WAIT, WAKE, WAIT_BITSET, WAKE_BITSET
                    }
                }
                b.assemble()
            }
        };
        p.push(libc::sock_filter { code: JEQ, jt: 0, jf: block.len() as u8, k: nr as u32 });
        p.extend(block);
    }
    p.push(ret(RET_ERRNO | libc::ENOSYS as u32));
    p
}

// The sandbox is built for x86_64 only (`enter` refuses elsewhere).
#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::process::fork_peer;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn config<'a>(dir: &'a Path, leak: &'a [i64]) -> Config<'a> {
        Config {
            scratch_dir: dir,
            scratch_bytes: 1 << 16,
            limits: Limits { cpu_s: 30, address_space: 16 << 30, nofile: 64, fsize: 1 << 20 },
            alarm: Duration::from_millis(20),
            parent: std::process::id() as i32,
            leak,
        }
    }

    /// A directory the child's user may enter (nobody, when the test runs as root).
    fn scratch_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("scratch");
        // SAFETY: geteuid takes nothing.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).expect("chown");
        }
        dir
    }

    #[test]
    fn the_filter_is_well_formed_and_short_jumps() {
        let f = filter(0x7f00_0000_0000, 1 << 16, 1234, &[]);
        assert!(f.len() < 4096 && f.len() > allow_list().len());
        assert_eq!(f.last().unwrap().k, RET_ERRNO | libc::ENOSYS as u32);
    }

    /// In the confined child: a path, another process, a program and a socket are refused,
    /// the child is not root, and a file outside the scratch directory stays as it was.
    #[test]
    fn the_sandbox_refuses_files_processes_programs_and_sockets() {
        let _s = crate::testing::serial();
        let dir = scratch_dir();
        let outside = tempfile::NamedTempFile::new().expect("canary");
        std::fs::write(outside.path(), b"canary").unwrap();
        let canary = CString::new(outside.path().as_os_str().as_encoded_bytes()).unwrap();
        let board = crate::shm::SharedMem::new(8).unwrap();
        let cfg = config(dir.path(), &[]);
        let mut child = fork_peer(|| {
            let jail = match enter(&cfg) {
                Ok(j) => j,
                Err(e) => return 10 + e.stage.code() as i32,
            };
            // The kernel writes nothing here: only the numbers come back.
            let path = canary.as_ptr() as u64;
            let r = [
                // libc's open would go through openat: both, raw, unchecked.
                // SAFETY: refused by the filter before the kernel reads the path.
                unsafe {
                    crate::raw::syscall4(
                        libc::SYS_openat,
                        libc::AT_FDCWD as i64,
                        path as i64,
                        libc::O_WRONLY as i64 | libc::O_TRUNC as i64,
                        0,
                    )
                },
                // SAFETY: as above.
                unsafe { crate::raw::syscall2(libc::SYS_open, c"/etc/passwd".as_ptr() as i64, 0) },
                jail.call(libc::SYS_kill, [1, 0, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_execve, [0, 0, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_socket, [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_getuid, [0; 6]).unwrap(),
                jail.call(libc::SYS_kill, [jail.pid() as u64, 0, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_clone, [0; 6]).unwrap(),
            ];
            for (i, v) in r.iter().enumerate() {
                board.u64(i).store(*v as u64, Ordering::SeqCst);
            }
            0
        })
        .expect("fork");
        let end = child.finish(Duration::from_secs(10));
        assert!(end.success(), "child: {}", end.describe());
        let got: Vec<i64> = (0..8).map(|i| board.u64(i).load(Ordering::SeqCst) as i64).collect();
        let (nosys, perm) = (-i64::from(libc::ENOSYS), -i64::from(libc::EPERM));
        assert_eq!(got[0], nosys, "openat of a file outside");
        assert_eq!(got[1], nosys, "open /etc/passwd");
        assert_eq!(got[2], perm, "kill(1, 0)");
        assert_eq!(got[3], nosys, "execve");
        assert_eq!(got[4], nosys, "socket");
        assert!(got[5] > 0, "the child's uid is {}", got[5]);
        // SAFETY: geteuid takes nothing.
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(got[5], i64::from(NOBODY));
        }
        assert_eq!(got[6], 0, "kill(self, 0)");
        assert_eq!(got[7], nosys, "clone");
        assert_eq!(std::fs::read(outside.path()).unwrap(), b"canary");
    }

    /// The memory calls reach the scratch mapping only; the rest of the child's memory stays.
    #[test]
    fn memory_calls_stay_in_the_scratch_mapping() {
        let _s = crate::testing::serial();
        let dir = scratch_dir();
        let board = crate::shm::SharedMem::new(8).unwrap();
        let cfg = config(dir.path(), &[]);
        let mut child = fork_peer(|| {
            let Ok(jail) = enter(&cfg) else { return 2 };
            let (base, len) = jail.scratch();
            let own = board.u64(0) as *const AtomicU64 as u64;
            let r = [
                jail.call(libc::SYS_munmap, [base, len, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_munmap, [base, len + 4096, 0, 0, 0, 0]).unwrap(),
                jail.call(libc::SYS_mprotect, [base + len, 4096, 3, 0, 0, 0]).unwrap(),
                jail.call(
                    libc::SYS_mmap,
                    [base, 4096, 3, (libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64, u64::MAX, 0],
                )
                .unwrap(),
                jail.call(libc::SYS_brk, [1 << 48, 0, 0, 0, 0, 0]).unwrap(),
                i64::from(jail.call(libc::SYS_read, [0, own, 8, 0, 0, 0]).is_err())
                    + i64::from(
                        jail.call(libc::SYS_rt_sigreturn, [0; 6]) == Err(Unsafe::Number(libc::SYS_rt_sigreturn)),
                    ),
            ];
            for (i, v) in r.iter().enumerate() {
                board.u64(i).store(*v as u64, Ordering::SeqCst);
            }
            0
        })
        .expect("fork");
        let end = child.finish(Duration::from_secs(10));
        assert!(end.success(), "child: {}", end.describe());
        let got: Vec<i64> = (0..6).map(|i| board.u64(i).load(Ordering::SeqCst) as i64).collect();
        let perm = -i64::from(libc::EPERM);
        assert_eq!(got, vec![0, perm, perm, perm, perm, 2]);
    }

    /// A leaked number (a test's fault) runs: the escape check has something to see.
    #[test]
    fn a_leaked_number_gets_through() {
        let _s = crate::testing::serial();
        let dir = scratch_dir();
        let board = crate::shm::SharedMem::new(1).unwrap();
        let leak = [libc::SYS_getsid];
        assert!(allowed(libc::SYS_getsid).is_none());
        let cfg = config(dir.path(), &leak);
        let mut child = fork_peer(|| {
            let Ok(jail) = enter(&cfg) else { return 2 };
            board.u64(0).store(jail.call(libc::SYS_getsid, [0; 6]).unwrap() as u64, Ordering::SeqCst);
            0
        })
        .expect("fork");
        let end = child.finish(Duration::from_secs(10));
        assert!(end.success(), "child: {}", end.describe());
        // SAFETY: getsid takes a pid.
        assert_eq!(board.u64(0).load(Ordering::SeqCst) as i64, i64::from(unsafe { libc::getsid(0) }));
    }
}
