//! The sampler: warm-up, batch sizing, sampling until the median is known well enough.
//!
//! **Timing model.** A benchmark hands over a routine that runs `n` operations and returns the
//! ticks they took, read with [`Timer::start`]/[`Timer::stop`] around the `n` operations only.
//! One sample is `(ticks − timer overhead) / n`, in nanoseconds per operation.
//!
//! **Adaptive method** (default): warm up for at least [`SamplerConfig::warmup_iters`]
//! operations and [`SamplerConfig::warmup_s`] time; size batches so one sample lasts at least
//! 1,000 × the timer's resolution (and overhead), and at least 1/2,000 of the budget, so that a
//! benchmark yields on the order of a thousand samples; then take samples until the
//! distribution-free 95 % confidence interval of the median is within the target relative
//! half-width — but not before a quarter of the budget has passed, so that the samples span
//! timer ticks and other periodic activity rather than one quiet millisecond — or until the
//! budget is spent; never fewer than [`SamplerConfig::min_samples`].
//! The stopping rule uses order statistics (cheap, exact for any distribution); the reported
//! interval is the bootstrap one from `stats`.
//!
//! **Seed method** (`--method seed`): the papers' own — 10,100 single-operation runs, the first
//! 100 discarded; the mean is reported beside the median.
//!
//! Between samples (never inside one) the sampler checks the interrupt flag.

use crate::stats;
use crate::timer::Timer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How samples are taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Warm-up, sized batches, stop when the median's CI meets the target.
    #[default]
    Adaptive,
    /// 10,100 single-operation runs, first 100 discarded, mean reported.
    Seed,
}

/// The seed papers' method: runs kept and runs discarded first.
pub const SEED_RUNS: usize = 10_000;
/// Runs discarded before the seed method's kept runs.
pub const SEED_DISCARDED: usize = 100;

/// Sampler settings; see the module doc for what each controls.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplerConfig {
    /// Sampling method.
    pub method: Method,
    /// Time budget of one benchmark (warm-up excluded), in seconds.
    pub budget_s: f64,
    /// Minimum warm-up time, in seconds.
    pub warmup_s: f64,
    /// Minimum warm-up operations.
    pub warmup_iters: u64,
    /// Target relative half-width of the median's 95 % CI (0.01 = 1 %).
    pub ci_target_rel: f64,
    /// Fewest samples ever taken.
    pub min_samples: usize,
    /// Most samples ever taken (bounds memory).
    pub max_samples: usize,
    /// A sample lasts at least this many timer resolutions (and overheads).
    pub min_sample_resolutions: f64,
}

impl SamplerConfig {
    /// The default: about 1 s per benchmark, 1 % target.
    pub fn standard() -> SamplerConfig {
        SamplerConfig {
            method: Method::Adaptive,
            budget_s: 1.0,
            warmup_s: 0.05,
            warmup_iters: 100,
            ci_target_rel: 0.01,
            min_samples: 30,
            max_samples: 50_000,
            min_sample_resolutions: 1000.0,
        }
    }

    /// `--quick`: about 0.2 s per benchmark.
    pub fn quick() -> SamplerConfig {
        SamplerConfig { budget_s: 0.2, warmup_s: 0.02, ..SamplerConfig::standard() }
    }

    /// `--thorough`: about 5 s per benchmark, a tighter target.
    pub fn thorough() -> SamplerConfig {
        SamplerConfig { budget_s: 5.0, warmup_s: 0.2, ci_target_rel: 0.005, ..SamplerConfig::standard() }
    }
}

/// Why sampling stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The median's CI met the target.
    TargetMet,
    /// The time budget ran out first.
    BudgetSpent,
    /// The sample cap was reached.
    SampleCap,
    /// The seed method's fixed count was reached.
    FixedCount,
    /// Ctrl-C.
    Interrupted,
    /// The routine gave up (its benchmark says why).
    Aborted,
}

/// What the sampler took.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Nanoseconds per operation, one per sample, in time order.
    pub per_op_ns: Vec<f64>,
    /// Operations per sample.
    pub iterations_per_sample: u64,
    /// Operations run during warm-up.
    pub warmup_iterations: u64,
    /// Why sampling stopped (`None` if it never started).
    pub stop: Option<StopReason>,
}

/// Runs `routine(n)` (which returns the ticks `n` operations took) as the config says.
pub fn sample(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    mut routine: impl FnMut(u64) -> u64,
) -> Samples {
    sample_fallible(cfg, timer, interrupt, |n| Some(routine(n)))
}

/// Like [`sample`], for a routine that may give up: `None` stops sampling at once with
/// [`StopReason::Aborted`], keeping the samples taken so far.
pub fn sample_fallible(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    mut routine: impl FnMut(u64) -> Option<u64>,
) -> Samples {
    let to_ns = |ticks: u64, n: u64| timer.ticks_to_ns(ticks as f64 - timer.overhead_ticks()) / n as f64;
    match cfg.method {
        Method::Seed => {
            let mut out = Samples { iterations_per_sample: 1, ..Samples::default() };
            out.per_op_ns.reserve_exact(SEED_RUNS);
            for i in 0..SEED_DISCARDED + SEED_RUNS {
                if interrupt.load(Ordering::Relaxed) {
                    out.stop = Some(StopReason::Interrupted);
                    return out;
                }
                let Some(t) = routine(1) else {
                    out.stop = Some(StopReason::Aborted);
                    return out;
                };
                if i < SEED_DISCARDED {
                    out.warmup_iterations += 1;
                } else {
                    out.per_op_ns.push(to_ns(t, 1));
                }
            }
            out.stop = Some(StopReason::FixedCount);
            out
        }
        Method::Adaptive => adaptive(cfg, timer, interrupt, &mut routine, to_ns),
    }
}

fn adaptive(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    routine: &mut impl FnMut(u64) -> Option<u64>,
    to_ns: impl Fn(u64, u64) -> f64,
) -> Samples {
    let mut out = Samples::default();
    // Warm-up: doubling batches until both minimums are met; the last batches estimate the
    // cost of one operation.
    let warm_start = Instant::now();
    let mut n = 1u64;
    // Every batch but the first (cold) one feeds the estimate of one operation's cost.
    let (mut warm_ticks, mut warm_ops, mut first) = (0u64, 0u64, true);
    loop {
        if interrupt.load(Ordering::Relaxed) {
            out.stop = Some(StopReason::Interrupted);
            return out;
        }
        let Some(t) = routine(n) else {
            out.stop = Some(StopReason::Aborted);
            return out;
        };
        out.warmup_iterations += n;
        if !first {
            warm_ticks += t;
            warm_ops += n;
        }
        first = false;
        if out.warmup_iterations >= cfg.warmup_iters && warm_start.elapsed().as_secs_f64() >= cfg.warmup_s {
            break;
        }
        // Grow the batch while one takes less than a tenth of the warm-up time (or 100 µs).
        if timer.ticks_to_ns(t as f64) < (cfg.warmup_s * 1e8).max(WARMUP_BATCH_MIN_NS) {
            n = n.saturating_mul(2);
        }
    }
    let per_op_ns = if warm_ops > 0 { timer.ticks_to_ns(warm_ticks as f64) / warm_ops as f64 } else { 1e6 };
    let resolution_ns = timer.ticks_to_ns(1.0).max(timer.ticks_to_ns(timer.overhead_ticks())).max(RESOLUTION_FLOOR_NS);
    let min_sample_ns = (cfg.min_sample_resolutions * resolution_ns).max(cfg.budget_s * 1e9 / SAMPLES_PER_BUDGET);
    let n = ((min_sample_ns / per_op_ns.max(1e-3)).ceil() as u64).max(1);
    out.iterations_per_sample = n;

    let budget = Duration::from_secs_f64(cfg.budget_s);
    let min_time = budget.mul_f64(MIN_TIME_SHARE);
    let began = Instant::now();
    out.per_op_ns.reserve(cfg.max_samples.min(4096));
    let mut next_check = cfg.min_samples;
    let mut sorted = Vec::new();
    loop {
        if interrupt.load(Ordering::Relaxed) {
            out.stop = Some(StopReason::Interrupted);
            break;
        }
        let Some(t) = routine(n) else {
            out.stop = Some(StopReason::Aborted);
            break;
        };
        out.per_op_ns.push(to_ns(t, n));
        let len = out.per_op_ns.len();
        if len >= cfg.max_samples {
            out.stop = Some(StopReason::SampleCap);
            break;
        }
        if len >= next_check && began.elapsed() >= min_time {
            sorted.clear();
            sorted.extend_from_slice(&out.per_op_ns);
            sorted.sort_by(f64::total_cmp);
            let (lo, hi) = stats::median_ci_order_stat(&sorted, 0.95);
            let med = stats::median(&sorted);
            if med.abs() > 0.0 && (hi - lo) / 2.0 / med.abs() <= cfg.ci_target_rel {
                out.stop = Some(StopReason::TargetMet);
                break;
            }
            // Check again after another eighth: sorting stays a small share of the time.
            next_check = len + (len / 8).max(5);
        }
        if len >= cfg.min_samples && began.elapsed() >= budget {
            out.stop = Some(StopReason::BudgetSpent);
            break;
        }
    }
    out
}

/// A sample lasts at least budget / this, so a benchmark yields about this many samples at most
/// (fewer when the operation itself is slower).
const SAMPLES_PER_BUDGET: f64 = 2000.0;

/// Warm-up batches grow at least until one lasts this long (ns).
const WARMUP_BATCH_MIN_NS: f64 = 1e5;

/// Share of the budget that must pass before the CI target may stop sampling.
const MIN_TIME_SHARE: f64 = 0.25;

/// A timer step below this (ns) is not trusted for batch sizing: even a 1 GHz counter read
/// back to back cannot resolve less.
const RESOLUTION_FLOOR_NS: f64 = 1.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::TimerKind;

    /// A fake routine: each operation "takes" `cost` ticks, plus `jitter` on every 7th sample.
    fn fake(cost: u64) -> impl FnMut(u64) -> u64 {
        let mut calls = 0u64;
        move |n| {
            calls += 1;
            n * cost + if calls.is_multiple_of(7) { cost } else { 0 }
        }
    }

    fn timer() -> Timer {
        Timer::with_scale(TimerKind::MonotonicRaw, 1.0)
    }

    #[test]
    fn seed_method_takes_exactly_10000_after_100() {
        let cfg = SamplerConfig { method: Method::Seed, ..SamplerConfig::quick() };
        let s = sample(&cfg, &timer(), &AtomicBool::new(false), fake(100));
        assert_eq!(s.per_op_ns.len(), 10_000);
        assert_eq!(s.warmup_iterations, 100);
        assert_eq!(s.iterations_per_sample, 1);
        assert_eq!(s.stop, Some(StopReason::FixedCount));
    }

    #[test]
    fn adaptive_stops_when_target_met_and_takes_min_samples() {
        // A tiny budget: the minimum sampling time is ~0, so the CI target decides.
        let cfg = SamplerConfig { warmup_s: 0.0, budget_s: 1e-6, ..SamplerConfig::quick() };
        let s = sample(&cfg, &timer(), &AtomicBool::new(false), fake(50));
        assert_eq!(s.stop, Some(StopReason::TargetMet));
        assert!(s.per_op_ns.len() >= cfg.min_samples);
        // max(1000 × 1 ns resolution floor, budget / 2000) / 50 ns per op.
        assert_eq!(s.iterations_per_sample, 20);
        assert!(s.per_op_ns.iter().all(|&v| v >= 50.0));
    }

    #[test]
    fn interrupt_stops_before_sampling() {
        let s = sample(&SamplerConfig::quick(), &timer(), &AtomicBool::new(true), fake(10));
        assert_eq!(s.stop, Some(StopReason::Interrupted));
        assert!(s.per_op_ns.is_empty());
    }

    #[test]
    fn an_aborting_routine_keeps_what_it_measured() {
        let cfg = SamplerConfig { warmup_s: 0.0, ..SamplerConfig::quick() };
        let mut calls = 0;
        let s = sample_fallible(&cfg, &timer(), &AtomicBool::new(false), |n| {
            calls += 1;
            (calls < 40).then_some(n * 10)
        });
        assert_eq!(s.stop, Some(StopReason::Aborted));
        assert!(!s.per_op_ns.is_empty() && s.per_op_ns.len() < 40);
    }

    #[test]
    fn noisy_routine_spends_budget_not_forever() {
        let cfg = SamplerConfig { budget_s: 0.05, warmup_s: 0.0, max_samples: 2000, ..SamplerConfig::quick() };
        let mut x = 1u64;
        let noisy = move |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            n * (10 + (x >> 58))
        };
        let s = sample(&cfg, &timer(), &AtomicBool::new(false), noisy);
        // The fake takes no real time, so the sample cap may come before the budget.
        assert!(matches!(s.stop, Some(StopReason::BudgetSpent | StopReason::TargetMet | StopReason::SampleCap)));
        assert!(s.per_op_ns.len() >= cfg.min_samples);
    }

    #[test]
    fn overhead_is_subtracted() {
        let mut t = timer();
        t = Timer::with_overhead(t, 40.0);
        let cfg = SamplerConfig { warmup_s: 0.0, ..SamplerConfig::quick() };
        let s = sample(&cfg, &t, &AtomicBool::new(false), |n| 40 + n * 10);
        let min = s.per_op_ns.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!((min - 10.0).abs() < 1e-9, "{min}");
    }
}
