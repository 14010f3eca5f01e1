//! Identity queries: `id.gettid`, `id.sched_getcpu`, `id.exe_name`, `id.comm`, `id.altstack`.
//!
//! Seed rows: Go! ORB "get_self" (`id.gettid`), "get_type" (`id.exe_name`), "get_stack"
//! (`id.altstack`; `id.sched_getcpu` beside it); RightSpeed "get application name"
//! (`id.exe_name`, `id.comm`).
//!
//! **Timing model:** the sampler's loop around one call, writing into a buffer allocated
//! before the clock starts.
//! **Validation:** every call's answer is compared with the truth read another way
//! (`/proc/thread-self`, the pinned CPU, `current_exe`), or, for `id.altstack`, with the
//! alternate stack osprim set before the clock started.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use sys;

/// `gettid()`.
pub struct Gettid;

fn thread_self_tid() -> Option<i32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

impl Benchmark for Gettid {
    fn id(&self) -> &'static str {
        "id.gettid"
    }
    fn about(&self) -> &'static str {
        "gettid(): the calling thread's id (a system call)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let samples = ctx.iter(nix::unistd::gettid);
        let median = quick_median(&samples);
        let got = nix::unistd::gettid().as_raw();
        let id_check = match thread_self_tid() {
            Some(t) => Check::new("matches /proc/thread-self", t.to_string(), got.to_string(), t == got),
            None => Check::impossible("matches /proc/thread-self", "/proc/thread-self is not readable"),
        };
        Ok(Measured::new(samples, vec![id_check, ctx.enters_kernel_check(median)]))
    }
}

/// `sched_getcpu()`.
pub struct SchedGetcpu;

impl Benchmark for SchedGetcpu {
    fn id(&self) -> &'static str {
        "id.sched_getcpu"
    }
    fn about(&self) -> &'static str {
        "sched_getcpu(): the CPU the caller runs on (vDSO or rdpid, no kernel entry)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let cpu = ctx.cpu;
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if sys::cpu::current_cpu() != Some(cpu) {
                wrong += 1;
            }
        });
        let check = Check::new(
            "returns the CPU the thread is pinned to",
            format!("cpu {cpu} in all {calls} calls"),
            format!("{wrong} calls returned another value"),
            wrong == 0,
        );
        Ok(Measured::new(samples, vec![check]))
    }
}

/// `readlink("/proc/self/exe")`.
pub struct ExeName;

impl Benchmark for ExeName {
    fn id(&self) -> &'static str {
        "id.exe_name"
    }
    fn about(&self) -> &'static str {
        "application name: readlink(/proc/self/exe)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let truth = std::env::current_exe().map_err(|e| NotMeasured::Skipped(format!("current_exe: {e}")))?;
        let truth = truth.as_os_str().as_encoded_bytes().to_vec();
        let mut buf = vec![0u8; 4096];
        let mut wrong = 0u64;
        let mut calls = 0u64;
        let samples = ctx.iter(|| {
            calls += 1;
            match sys::thread::readlink_into(c"/proc/self/exe", &mut buf) {
                Some(n) if buf[..n] == truth[..] => {}
                _ => wrong += 1,
            }
        });
        let median = quick_median(&samples);
        Ok(Measured::new(
            samples,
            vec![Check::all_ok("returns the executable's path", wrong, calls), ctx.enters_kernel_check(median)],
        ))
    }
}

/// `prctl(PR_GET_NAME)`.
pub struct Comm;

impl Benchmark for Comm {
    fn id(&self) -> &'static str {
        "id.comm"
    }
    fn about(&self) -> &'static str {
        "thread name: prctl(PR_GET_NAME)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let truth = std::fs::read_to_string("/proc/thread-self/comm")
            .map(|s| s.trim_end_matches('\n').as_bytes().to_vec())
            .map_err(|e| NotMeasured::Skipped(format!("/proc/thread-self/comm: {e}")))?;
        let mut buf = [0u8; 16];
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            match sys::thread::get_comm(&mut buf) {
                Some(n) if buf[..n] == truth[..] => {}
                _ => wrong += 1,
            }
        });
        let median = quick_median(&samples);
        Ok(Measured::new(
            samples,
            vec![Check::all_ok("matches /proc/thread-self/comm", wrong, calls), ctx.enters_kernel_check(median)],
        ))
    }
}

/// `sigaltstack(NULL, &old)`: where the thread's alternate signal stack is.
pub struct Altstack;

/// The alternate stack set for the measurement (bytes).
const ALTSTACK_BYTES: usize = 64 * 1024;

impl Benchmark for Altstack {
    fn id(&self) -> &'static str {
        "id.altstack"
    }
    fn about(&self) -> &'static str {
        "the thread's stack: sigaltstack(NULL, &old), a query of its alternate signal stack (a system call)"
    }
    /// Through [`Ctx::iter`], which takes cold/hot pairs in a cold visit.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        // A stack of our own, so the answer has a known truth (a thread may have none, or
        // std's guard-page handler stack); the thread's previous one is put back on drop.
        let alt = sys::altstack::AltStack::install(ALTSTACK_BYTES)
            .map_err(|e| NotMeasured::Failed(format!("sigaltstack: setting a {ALTSTACK_BYTES}-byte stack: {e}")))?;
        let expected = alt.expected();
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if sys::altstack::query() != Some(expected) {
                wrong += 1;
            }
        });
        drop(alt);
        let median = quick_median(&samples);
        let checks = vec![
            Check::all_ok(
                format!("reports the stack set before timing ({:#x}, {} bytes, enabled)", expected.base, expected.size),
                wrong,
                calls,
            ),
            ctx.enters_kernel_check(median),
        ];
        Ok(Measured::new(samples, checks)
            .note("an alternate stack of 64 KiB is set for the measurement and the thread's own restored after"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn altstack_answers_what_was_set_and_restores() {
        let before = sys::altstack::query();
        with_ctx(0.05, |ctx| {
            let m = Altstack.run(ctx, &Params::new()).expect("id.altstack runs");
            assert!(!m.samples.per_op_ns.is_empty());
            assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
        });
        assert_eq!(sys::altstack::query(), before);
    }
}
