//! `syscall.futex_wait`: `FUTEX_WAIT` on a word that holds another value, answered at once
//! with `EAGAIN` — system-call entry, the futex hash lookup (its bucket lock taken and
//! dropped) and exit, no sleep. The loop of `perf bench futex hash -t 1 -f 1`: one thread, one
//! private futex (`FUTEX_PRIVATE_FLAG`, perf's default), expected value 1234 against a word
//! holding 0, no timeout, through glibc's `syscall()` (`osprim crosscheck` compares the two).
//!
//! **Timing model:** the sampler's loop around one call and the test of its error number.
//! **Validation:** every call returned `EAGAIN` (a call that slept or failed otherwise is
//! counted), and the call costs clearly more than a vDSO call (it entered the kernel). The
//! word is this benchmark's own and never holds the expected value, so no call can sleep.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use std::sync::atomic::AtomicU32;
use sys::futex_private::wait_mismatch;

/// The value waited for; the word holds 0 (perf's choice).
const EXPECTED: u32 = 1234;

/// `syscall.futex_wait`.
pub struct FutexWait;

impl Benchmark for FutexWait {
    fn id(&self) -> &'static str {
        "syscall.futex_wait"
    }
    fn about(&self) -> &'static str {
        "FUTEX_WAIT on a value that differs → EAGAIN: entry, futex hash lookup, exit (perf bench futex hash)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        let mut p = Params::new();
        p.insert("futex".into(), "private".into());
        vec![p]
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let word = AtomicU32::new(0);
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if wait_mismatch(&word, EXPECTED) != libc::EAGAIN {
                wrong += 1;
            }
        });
        let median = quick_median(&samples);
        let checks = vec![Check::all_ok("every call returned EAGAIN", wrong, calls), ctx.enters_kernel_check(median)];
        Ok(Measured::new(samples, checks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn every_call_returns_eagain_and_enters_the_kernel() {
        let _serial = crate::testing::serial();
        with_ctx(0.05, |ctx| {
            let m = FutexWait.run(ctx, &Params::new()).expect("measured");
            assert!(!m.samples.per_op_ns.is_empty());
            for c in &m.checks {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
        });
    }
}
