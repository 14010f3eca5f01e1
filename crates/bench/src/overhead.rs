//! The timer overhead, calibrated where it is paid: in every round, through the sampler's own
//! call path, for each shape of timed region a routine uses.
//!
//! The overhead subtracted from a sample is what an empty timed region of the **same shape**
//! costs, measured **beside** the benchmarks (the runner calls [`calibrate_overhead`] at the
//! start of every round, so in every worker process). A single start-up figure measured in a
//! function of its own is not that: on an Intel KVM guest the start-up calibration gave 42 ticks
//! where an empty region of [`super::Ctx::iter`]'s shape, reached through the sampler, cost 39,
//! so 2.6 ns too much was subtracted from every sample of every row (`harness.empty` read
//! −2.61 ns). Hyperfine measures its shell's overhead the same way, through the path the
//! commands take (`Executor::calibrate`/`time_overhead`, src/benchmark/executor.rs).
//!
//! **Shapes.**
//! - *Loop* ([`Overhead::looped`]): [`super::Ctx::iter`]'s routine, `start`, a loop of `n`
//!   operations, `stop` (`time_loop`), with the empty operation at `n` = [`LOOP_N`], called
//!   through the sampler's call path ([`crate::sampler::region_ticks`]). Subtracted once per
//!   sample of every `iter` routine.
//! - *Region* ([`Overhead::region`]): a routine's own region around one operation, inside the
//!   routine's loop (`start`, the operation, `stop`, the ticks summed), as `iter_custom`,
//!   `iter_fallible` and `iter_regions` routines time themselves. Subtracted once per timed
//!   region those routines report ([`crate::sampler::Timed`]): `n` times for a routine that
//!   times its `n` operations one by one.
//!
//! Each shape gives a median (subtracted by the adaptive method, which reports medians) and a
//! mean (subtracted by the seed method, which reports means; the regions' distribution is
//! skewed), as in [`platform::timer`]: the mean leaves out regions over 10 × the median.
//!
//! Measured on the AMD EPYC KVM guest this was written on (counter step 26 ticks, 10 ns; means
//! of 200,000 regions resolve well below a step): see `docs/overhead.md`.

use super::time_loop;
use crate::sampler::{self, Timed};
use model::{Method, RoundOverhead};
use platform::timer::{self, Timer};
use std::hint::black_box;

/// Empty operations in the calibrated loop: one, the smallest batch a sample can have.
pub const LOOP_N: u64 = 1;

/// Regions timed per shape and round (about a millisecond each).
pub const CALIBRATION_REGIONS: usize = 20_000;

/// Regions run and discarded first (caches, branch predictors).
pub const CALIBRATION_WARMUP: usize = 1_000;

/// Cost of one empty timed region of one shape, in ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegionCost {
    /// Median.
    pub median_ticks: f64,
    /// Mean, leaving out regions over 10 × the median (interrupted).
    pub mean_ticks: f64,
}

impl RegionCost {
    /// The cost of regions whose ticks are `ticks` (reordered).
    pub fn of(ticks: &mut [u64]) -> RegionCost {
        let (median_ticks, mean_ticks) = timer::median_and_mean(ticks);
        RegionCost { median_ticks, mean_ticks }
    }

    /// The same cost as median and mean (tests, and a timer's start-up figure).
    pub fn flat(ticks: f64) -> RegionCost {
        RegionCost { median_ticks: ticks, mean_ticks: ticks }
    }

    /// What a method subtracts: the median for the adaptive method, the mean for the seed
    /// method.
    pub fn for_method(&self, method: Method) -> f64 {
        match method {
            Method::Adaptive => self.median_ticks,
            Method::Seed => self.mean_ticks,
        }
    }
}

/// The overhead of each region shape, calibrated in one round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// [`super::Ctx::iter`]'s region: `time_loop` around the operations.
    pub looped: RegionCost,
    /// A routine's own region around one operation.
    pub region: RegionCost,
}

impl Overhead {
    /// The timer's start-up figures for both shapes (before any round calibrated).
    pub fn of_timer(timer: &Timer) -> Overhead {
        let c = RegionCost { median_ticks: timer.overhead_ticks(), mean_ticks: timer.overhead_mean_ticks() };
        Overhead { looped: c, region: c }
    }

    /// The same overhead for both shapes (tests).
    pub fn flat(ticks: f64) -> Overhead {
        Overhead { looped: RegionCost::flat(ticks), region: RegionCost::flat(ticks) }
    }

    /// The record of this calibration in the result file: round `round`, and what `method`
    /// subtracts.
    pub fn record(&self, timer: &Timer, round: usize, method: Method) -> RoundOverhead {
        RoundOverhead {
            round,
            loop_ticks: self.looped.median_ticks,
            loop_mean_ticks: self.looped.mean_ticks,
            region_ticks: self.region.median_ticks,
            region_mean_ticks: self.region.mean_ticks,
            subtracted_loop_ns: timer.ticks_to_ns(self.looped.for_method(method)),
            subtracted_region_ns: timer.ticks_to_ns(self.region.for_method(method)),
        }
    }
}

/// Calibrates the overhead of both region shapes with `timer`, through the sampler's call path
/// (see the module doc). Takes a few milliseconds; call it in the process and round that
/// measures, on the measuring CPU.
pub fn calibrate_overhead(timer: &Timer) -> Overhead {
    let mut looped = sampler::region_ticks(loop_routine(*timer), LOOP_N, CALIBRATION_WARMUP, CALIBRATION_REGIONS);
    let mut region = sampler::region_ticks(region_routine(*timer), 1, CALIBRATION_WARMUP, CALIBRATION_REGIONS);
    Overhead { looped: RegionCost::of(&mut looped), region: RegionCost::of(&mut region) }
}

/// The empty operation of the calibrated loop: a function item (so that every use of
/// [`loop_routine`] runs the same instance of `time_loop`), inlined into it as an empty
/// closure would be.
#[inline(always)]
pub fn empty() {}

/// [`super::Ctx::iter`]'s routine around the empty operation: `time_loop(timer, n, empty)`.
/// `harness.empty` times its samples with this very routine.
pub fn loop_routine(timer: Timer) -> impl FnMut(u64) -> Option<Timed> {
    let mut op = empty;
    move |n| Some(Timed::one(time_loop(&timer, n, &mut op)))
}

/// A routine that times each of its `n` empty operations in a region of its own, as
/// `iter_custom` routines do: `start`, `black_box(())`, `stop`, the ticks summed; `n` regions.
pub fn region_routine(timer: Timer) -> impl FnMut(u64) -> Option<Timed> {
    move |n| {
        let mut ticks = 0u64;
        for _ in 0..n {
            let t0 = timer.start();
            black_box(());
            let t1 = timer.stop();
            ticks = ticks.wrapping_add(t1.wrapping_sub(t0));
        }
        Some(Timed::regions(ticks, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use platform::timer::TimerKind;

    #[test]
    fn methods_subtract_their_statistic() {
        let c = RegionCost { median_ticks: 36.0, mean_ticks: 36.9 };
        assert_eq!(c.for_method(Method::Adaptive), 36.0);
        assert_eq!(c.for_method(Method::Seed), 36.9);
    }

    #[test]
    fn the_record_states_what_was_subtracted() {
        let t = Timer::with_scale(TimerKind::MonotonicRaw, 0.5);
        let o =
            Overhead { looped: RegionCost { median_ticks: 40.0, mean_ticks: 42.0 }, region: RegionCost::flat(30.0) };
        let r = o.record(&t, 3, Method::Seed);
        assert_eq!((r.round, r.loop_ticks, r.loop_mean_ticks, r.region_ticks), (3, 40.0, 42.0, 30.0));
        assert_eq!((r.subtracted_loop_ns, r.subtracted_region_ns), (21.0, 15.0));
        assert_eq!(o.record(&t, 0, Method::Adaptive).subtracted_loop_ns, 20.0);
    }

    #[test]
    fn the_routines_report_their_regions() {
        let t = Timer::with_scale(TimerKind::MonotonicRaw, 1.0);
        assert_eq!(region_routine(t)(5).unwrap().regions, 5);
        assert_eq!(loop_routine(t)(5).unwrap().regions, 1);
    }

    #[test]
    fn calibration_on_this_machine_gives_both_shapes() {
        let (timer, info) = platform::timer::detect();
        let o = calibrate_overhead(&timer);
        for c in [o.looped, o.region] {
            assert!(c.median_ticks >= 0.0 && c.mean_ticks >= 0.0, "{o:?}");
            // An empty region costs no more than a few thousand reads (a loaded machine).
            assert!(timer.ticks_to_ns(c.median_ticks) < 1e3 * info.read_cost_ns.unwrap().max(1.0), "{o:?}");
        }
    }
}

/// Evidence for the choice of shapes (run by hand: `cargo test --release --lib
/// shapes_on_this_machine -- --ignored --nocapture`): means and medians of empty regions of
/// each shape, interleaved, on the pinned CPU.
#[cfg(test)]
mod evidence {
    use super::*;

    #[inline(never)]
    fn unrolled(timer: &Timer) -> u64 {
        let t0 = timer.start();
        black_box(());
        let t1 = timer.stop();
        t1.wrapping_sub(t0)
    }

    #[test]
    #[ignore]
    fn shapes_on_this_machine() {
        let cpu = sys::cpu::allowed_cpus()[0];
        sys::cpu::pin_current_thread(cpu).expect("pin");
        let (timer, info) = platform::timer::detect();
        println!(
            "start-up: median {} mean {:.2} step {:.2} ns = {:.1} ticks",
            info.overhead_ticks,
            info.overhead_mean_ticks.unwrap(),
            info.resolution_ns,
            info.resolution_ns / timer.ticks_to_ns(1.0)
        );
        const K: usize = 200_000;
        for rep in 0..5 {
            let mut l0 = sampler::region_ticks(loop_routine(timer), 0, 1000, K);
            let mut l1 = sampler::region_ticks(loop_routine(timer), 1, 1000, K);
            let mut l8 = sampler::region_ticks(loop_routine(timer), 8, 1000, K);
            let mut r1 = sampler::region_ticks(region_routine(timer), 1, 1000, K);
            let mut r8: Vec<u64> = (0..K).map(|_| region_routine(timer)(8).unwrap().ticks).collect();
            let mut u: Vec<u64> = (0..K).map(|_| unrolled(&timer)).collect();
            let show = |name: &str, v: &mut [u64], per: f64| {
                let c = RegionCost::of(v);
                format!("{name} {:.0}/{:.2}", c.median_ticks / per, c.mean_ticks / per)
            };
            println!(
                "rep {rep}: {} | {} | {} | {} | {} | {}",
                show("loop n=0", &mut l0, 1.0),
                show("loop n=1", &mut l1, 1.0),
                show("loop n=8", &mut l8, 1.0),
                show("region", &mut r1, 1.0),
                show("8 regions, per region", &mut r8, 8.0),
                show("unrolled start/stop", &mut u, 1.0)
            );
        }
    }
}
