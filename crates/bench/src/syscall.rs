//! System-call entry: `syscall.null`, `syscall.getppid`, `syscall.enosys`, `syscall.reject`,
//! `syscall.getpid`, `syscall.ioctl`, `syscall.getfd`, and the no-entry reference
//! `vdso.clock_gettime`.
//!
//! Seed rows: L4Ka::Pistachio "empty system call" (`syscall.null`, with `syscall.enosys`
//! beside it: an unallocated number, the bare entry and exit path), Rhino "null call"
//! (`syscall.getpid`), RightSpeed "simple I/O control request" (`syscall.ioctl`), Go! ORB
//! "reject" (`syscall.reject`: a call refused by its argument check); beside Go!'s "sel2ref"
//! (selector → object reference), the kernel's own handle → object step: `syscall.getfd`,
//! `fcntl(fd, F_GETFD)` on an open descriptor (the descriptor table looked up, the flags read).
//!
//! `syscall.getppid` is `syscall.null`'s call through libc's `getppid()` wrapper, as a program
//! (and `perf bench syscall basic`) makes it: beside `syscall.null`, the difference is what the
//! call and return around the instruction cost once the kernel has run, which can be far more
//! than their cost in a loop with no kernel entry (the kernel's way out may leave the branch
//! predictors, the return-stack buffer among them, in another state).
//!
//! **Timing model:** the sampler's loop around one call; nothing else.
//! **Validation:** the returned value is right (for the refused calls, every call's error
//! number), and a kernel-entering call costs clearly more than a vDSO call; the vDSO call
//! costs clearly less than a bare system call. A seccomp filter may answer the unallocated
//! number with another error: the row then fails its check, naming the filter.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use nix::time::{ClockId, clock_gettime};
use std::os::fd::AsFd;
use sys;

/// `getppid` through the bare `syscall` instruction.
pub struct Null;

impl Benchmark for Null {
    fn id(&self) -> &'static str {
        "syscall.null"
    }
    fn about(&self) -> &'static str {
        "empty system call: getppid via the bare syscall instruction, no libc"
    }
    fn available(&self) -> Result<(), String> {
        if sys::raw::AVAILABLE { Ok(()) } else { Err("no bare system-call path for this architecture".into()) }
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        Ok(answering(ctx, sys::raw::getppid, "the parent pid", std::os::unix::process::parent_id()))
    }
}

/// `getppid()` through libc's wrapper: the call `syscall.null` makes with the bare instruction.
pub struct LibcGetppid;

impl Benchmark for LibcGetppid {
    fn id(&self) -> &'static str {
        "syscall.getppid"
    }
    fn about(&self) -> &'static str {
        "getppid() through libc's wrapper, as programs and perf bench syscall basic call it"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let call = || i64::from(nix::unistd::getppid().as_raw());
        Ok(answering(ctx, call, "the parent pid", std::os::unix::process::parent_id()))
    }
}

/// Times `call`, a call that answers with `expected` (`what`), and checks it does and that it
/// enters the kernel: the rows of calls that return an id.
fn answering(ctx: &mut Ctx, call: impl Fn() -> i64, what: &str, expected: u32) -> Measured {
    let samples = ctx.iter(&call);
    let (got, expected) = (call(), i64::from(expected));
    let median = quick_median(&samples);
    let checks = vec![
        Check::new(format!("returns {what}"), expected.to_string(), got.to_string(), got == expected),
        ctx.enters_kernel_check(median),
    ];
    Measured::new(samples, checks)
}

/// The error a refused call should return, for the two refused-call rows.
fn errno_name(e: i64) -> String {
    match -e {
        x if x == i64::from(libc::EBADF) => "-EBADF".into(),
        x if x == i64::from(libc::ENOSYS) => "-ENOSYS".into(),
        x if x == i64::from(libc::EPERM) => "-EPERM".into(),
        _ => e.to_string(),
    }
}

/// Times a bare refused call `op`, checking every return against `-errno`.
fn refused(ctx: &mut Ctx, op: fn() -> i64, errno: i32, what: &str) -> Result<Measured, NotMeasured> {
    let want = -i64::from(errno);
    let first = op();
    let (mut wrong, mut calls) = (0u64, 0u64);
    let samples = ctx.iter(|| {
        calls += 1;
        if op() != want {
            wrong += 1;
        }
    });
    let median = quick_median(&samples);
    let name = format!("every call returns {} ({what})", errno_name(want));
    let mut returns = Check::all_ok(name, wrong, calls);
    if first != want {
        let seccomp = match sys::raw_errno::seccomp_mode() {
            Some(0) => "no seccomp filter".to_string(),
            Some(m) => format!("seccomp mode {m}: a filter may answer it"),
            None => "seccomp mode unknown".to_string(),
        };
        returns.observed = format!("{}; returned {} ({seccomp})", returns.observed, errno_name(first));
    }
    Ok(Measured::new(samples, vec![returns, ctx.enters_kernel_check(median)]))
}

/// `close(-1)` through the bare `syscall` instruction: refused with `EBADF`.
pub struct Reject;

impl Benchmark for Reject {
    fn id(&self) -> &'static str {
        "syscall.reject"
    }
    fn about(&self) -> &'static str {
        "a call refused by its argument check: close(-1) -> EBADF, bare syscall instruction"
    }
    fn available(&self) -> Result<(), String> {
        Null.available()
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        refused(ctx, sys::raw_errno::close_bad, libc::EBADF, "close(-1)")
    }
}

/// An unallocated system-call number through the bare instruction: `ENOSYS`.
pub struct Enosys;

impl Benchmark for Enosys {
    fn id(&self) -> &'static str {
        "syscall.enosys"
    }
    fn about(&self) -> &'static str {
        "bare entry and exit: an unallocated system-call number -> ENOSYS, bare syscall instruction"
    }
    fn available(&self) -> Result<(), String> {
        Null.available()
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let mut m = refused(ctx, sys::raw_errno::unallocated, libc::ENOSYS, "nothing behind the number")?;
        m.params.insert("nr".into(), sys::raw_errno::UNALLOCATED_NR.into());
        Ok(m)
    }
}

/// libc's `getpid()` (glibc ≥ 2.25 no longer caches it, so it enters the kernel).
pub struct Getpid;

impl Benchmark for Getpid {
    fn id(&self) -> &'static str {
        "syscall.getpid"
    }
    fn about(&self) -> &'static str {
        "getpid() through libc"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let call = || i64::from(nix::unistd::getpid().as_raw());
        Ok(answering(ctx, call, "this process's pid", std::process::id()))
    }
}

/// `ioctl(FIONREAD)` on a pipe holding 8 bytes.
pub struct Ioctl;

impl Benchmark for Ioctl {
    fn id(&self) -> &'static str {
        "syscall.ioctl"
    }
    fn about(&self) -> &'static str {
        "simple I/O control: ioctl(FIONREAD) on a pipe holding 8 bytes"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let (rd, wr) = nix::unistd::pipe().map_err(|e| NotMeasured::Failed(format!("pipe: {e}")))?;
        nix::unistd::write(&wr, &[7u8; 8]).map_err(|e| NotMeasured::Failed(format!("write to pipe: {e}")))?;
        let fd = rd.as_fd();
        let mut wrong = 0u64;
        let mut calls = 0u64;
        let samples = ctx.iter(|| {
            calls += 1;
            if sys::thread::fionread(fd) != Some(8) {
                wrong += 1;
            }
        });
        let median = quick_median(&samples);
        let checks =
            vec![Check::all_ok("FIONREAD reports the 8 bytes waiting", wrong, calls), ctx.enters_kernel_check(median)];
        Ok(Measured::new(samples, checks))
    }
}

/// `fcntl(fd, F_GETFD)` on an open descriptor: the kernel's handle → object step.
pub struct Getfd;

impl Benchmark for Getfd {
    fn id(&self) -> &'static str {
        "syscall.getfd"
    }
    fn about(&self) -> &'static str {
        "handle -> object: fcntl(F_GETFD) on an open descriptor (the kernel's descriptor-table look-up)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        use nix::fcntl::{FcntlArg, FdFlag, fcntl};
        // A pipe end opened with close-on-exec: F_GETFD must find the descriptor and say so.
        let (rd, _wr) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| NotMeasured::Failed(format!("pipe2: {e}")))?;
        let fd = rd.as_fd();
        let want = FdFlag::FD_CLOEXEC.bits();
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if fcntl(fd, FcntlArg::F_GETFD) != Ok(want) {
                wrong += 1;
            }
        });
        let median = quick_median(&samples);
        let checks = vec![
            Check::all_ok("every F_GETFD finds the descriptor and returns FD_CLOEXEC", wrong, calls),
            ctx.enters_kernel_check(median),
        ];
        Ok(Measured::new(samples, checks))
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)`, answered in user space by the vDSO.
pub struct VdsoClock;

impl Benchmark for VdsoClock {
    fn id(&self) -> &'static str {
        "vdso.clock_gettime"
    }
    fn about(&self) -> &'static str {
        "clock_gettime(CLOCK_MONOTONIC) through the vDSO: no kernel entry"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let samples = ctx.iter(|| clock_gettime(ClockId::CLOCK_MONOTONIC));
        let median = quick_median(&samples);
        let r = ctx.references();
        let clocksource = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let check = Check::new(
            "costs clearly less than a bare system call (stays in user space)",
            format!("< {:.1} ns (2/3 of bare getppid)", r.syscall_ns * 2.0 / 3.0),
            format!("{median:.1} ns (clocksource {clocksource})"),
            median < r.syscall_ns * 2.0 / 3.0,
        );
        Ok(Measured::new(samples, vec![check]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn refused_calls_check_their_errors() {
        if !sys::raw::AVAILABLE {
            return;
        }
        with_ctx(0.05, |ctx| {
            let m = Reject.run(ctx, &Params::new()).expect("syscall.reject runs");
            assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
            let m = Enosys.run(ctx, &Params::new()).expect("syscall.enosys runs");
            let filtered = sys::raw_errno::seccomp_mode() != Some(0);
            assert!(m.checks[0].ok == Some(true) || filtered, "{:?}", m.checks[0]);
            assert!(m.params.contains_key("nr"));
        });
    }

    #[test]
    fn getfd_finds_the_descriptor_every_time() {
        with_ctx(0.05, |ctx| {
            let m = Getfd.run(ctx, &Params::new()).expect("syscall.getfd runs");
            assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
            assert!(!m.samples.per_op_ns.is_empty());
        });
    }
}
