//! Fakes for tests, of this crate and of those above it: a clock that moves only when told, a
//! timer of one nanosecond per tick, routines whose operations cost what a script says (and
//! move that clock by as much), and benchmarks that hand back scripted samples. With them the
//! sampler's and the runner's logic are tested without measuring anything, in no time, and with
//! the same outcome on any machine.

use crate::sampler::{self, SamplerConfig, Samples, Timed};
use crate::{Benchmark, Ctx, Measured, NotMeasured, Params};
use platform::timer::{Timer, TimerKind};
use std::cell::Cell;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// A clock that stands still until told to move ([`Clock::advance`]).
#[derive(Debug, Default)]
pub struct Clock {
    now: Cell<Duration>,
}

impl Clock {
    /// A clock at its origin.
    pub fn new() -> Clock {
        Clock::default()
    }

    /// Moves the clock on by `by`.
    pub fn advance(&self, by: Duration) {
        self.now.set(self.now.get() + by);
    }
}

impl sampler::Clock for Clock {
    fn now(&self) -> Duration {
        self.now.get()
    }
}

/// A timer of one nanosecond per tick, with no overhead: what a routine reports in ticks, the
/// sampler reads as nanoseconds.
pub fn timer() -> Timer {
    Timer::with_scale(TimerKind::MonotonicRaw, 1.0)
}

/// A routine whose `n` operations take `script(call, n)` ticks (one timed region), `call`
/// counting the routine's calls from 0; every call moves `clock` on by the ticks it reports,
/// as if they had passed. `calls` records the `n` of every call.
pub fn routine<'a>(
    clock: &'a Clock,
    calls: &'a mut Vec<u64>,
    mut script: impl FnMut(usize, u64) -> u64 + 'a,
) -> impl FnMut(u64) -> Option<Timed> + 'a {
    move |n| {
        let ticks = script(calls.len(), n);
        calls.push(n);
        clock.advance(Duration::from_nanos(ticks));
        Some(Timed::one(ticks))
    }
}

/// Samples, under `cfg`, a routine whose `n` operations take `script(call, n)` ticks, on a
/// fake clock and [`timer`] (overhead `overhead_ticks`, charged once per call and passing on
/// the clock too); returns the samples and the `n` of every call.
pub fn sample(cfg: &SamplerConfig, overhead_ticks: f64, script: impl FnMut(usize, u64) -> u64) -> (Samples, Vec<u64>) {
    let clock = Clock::new();
    let mut calls = Vec::new();
    let timer = Timer::with_overhead(timer(), overhead_ticks);
    let overhead = overhead_ticks.round() as u64;
    let mut inner = routine(&clock, &mut calls, script);
    let samples = sampler::sample_on(&clock, cfg, &timer, &AtomicBool::new(false), |n| {
        let t = inner(n)?;
        clock.advance(Duration::from_nanos(overhead));
        Some(Timed::one(t.ticks + overhead))
    });
    drop(inner);
    (samples, calls)
}

/// A benchmark that measures nothing: each call of [`Benchmark::run`] hands back the next of
/// its scripted outcomes (the last one again once they run out), whatever the context.
pub struct Scripted {
    /// Its id, `family.operation`.
    pub id: &'static str,
    /// What each call of `run` gives, in order.
    pub outcomes: Vec<Result<Vec<f64>, String>>,
    /// Runs made so far.
    pub runs: std::sync::atomic::AtomicUsize,
    /// Measured in the first round only.
    pub single_round: bool,
}

impl Scripted {
    /// A benchmark whose every run gives `per_op_ns` as its samples.
    pub fn steady(id: &'static str, per_op_ns: Vec<f64>) -> Scripted {
        Scripted::of(id, vec![Ok(per_op_ns)])
    }

    /// A benchmark whose runs give `outcomes` in order: samples, or a failure saying why.
    pub fn of(id: &'static str, outcomes: Vec<Result<Vec<f64>, String>>) -> Scripted {
        Scripted { id, outcomes, runs: Default::default(), single_round: false }
    }

    /// The same benchmark, leaked for the `'static` lifetime the registry's benchmarks have.
    pub fn leak(self) -> &'static Scripted {
        Box::leak(Box::new(self))
    }
}

impl Benchmark for Scripted {
    fn id(&self) -> &'static str {
        self.id
    }
    fn about(&self) -> &'static str {
        "a scripted benchmark for tests: measures nothing"
    }
    fn single_round(&self) -> bool {
        self.single_round
    }
    fn run(&self, _ctx: &mut Ctx, _params: &Params) -> Result<Measured, NotMeasured> {
        let k = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let outcome = self.outcomes.get(k).or(self.outcomes.last()).cloned().unwrap_or(Ok(Vec::new()));
        let per_op_ns = outcome.map_err(NotMeasured::Failed)?;
        let samples = Samples { per_op_ns, iterations_per_sample: 1, ..Samples::default() };
        Ok(Measured::new(samples, Vec::new()))
    }
}

/// Runs `f` with a context on [`timer`] that touches nothing of the machine: CPU 0, a private
/// scratch directory, no interrupt, `cfg`'s settings.
pub fn with_ctx<T>(cfg: SamplerConfig, f: impl FnOnce(&mut Ctx) -> T) -> T {
    let info = platform::timer::TimerInfo::for_tests();
    let scratch = tempfile::tempdir().expect("temporary directory");
    let interrupt = AtomicBool::new(false);
    let mut ctx = Ctx::new(timer(), &info, cfg, 0, scratch.path(), &interrupt);
    f(&mut ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routine_moves_the_clock_by_what_it_reports() {
        let clock = Clock::new();
        let mut calls = Vec::new();
        let mut r = routine(&clock, &mut calls, |k, n| n * (10 + k as u64));
        assert_eq!(r(3), Some(Timed::one(30)));
        assert_eq!(r(2), Some(Timed::one(22)));
        drop(r);
        assert_eq!(sampler::Clock::now(&clock), Duration::from_nanos(52));
        assert_eq!(calls, [3, 2]);
    }

    #[test]
    fn a_scripted_benchmark_gives_its_outcomes_in_order_then_the_last_again() {
        let b = Scripted::of("fake.op", vec![Ok(vec![1.0, 2.0]), Err("gone".into())]);
        with_ctx(SamplerConfig::quick(), |ctx| {
            assert_eq!(b.run(ctx, &Params::new()).unwrap().samples.per_op_ns, [1.0, 2.0]);
            for _ in 0..2 {
                assert!(matches!(b.run(ctx, &Params::new()), Err(NotMeasured::Failed(why)) if why == "gone"));
            }
        });
    }
}
