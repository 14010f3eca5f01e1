//! The sampler: one benchmark's samples in one **round** — warm-up, batch sizing, a check that
//! the per-operation estimate does not depend on the batch size, optional single-operation
//! samples for tail latency, then samples until the round's median is known well enough.
//!
//! A run visits its benchmarks in interleaved rounds (see `runner`); each visit calls the
//! benchmark afresh (new set-up) and samples with [`SamplerConfig::for_round`], whose budget is
//! the benchmark's budget divided by the number of rounds.
//!
//! **Timing model.** A benchmark hands over a routine that runs `n` operations and returns the
//! ticks they took, read with [`Timer::start`]/[`Timer::stop`] around the `n` operations only,
//! and how many timed regions (start/stop pairs) those ticks are the sum of ([`Timed`]).
//! One sample is `(ticks − overhead of the regions) / n`, in nanoseconds per operation: one
//! overhead is subtracted per timed region, whatever `n` — one for a routine that times its
//! `n` operations as a whole, `n` for one that times each on its own and sums them
//! ([`overhead_of`]: the median for one region, the mean per region for several). The
//! overhead is the one calibrated for the routine's region shape in the same round
//! (`bench::overhead`), carried by the [`Timer`] handed in.
//!
//! **Adaptive method** (default), in this order:
//! 1. Warm up for at least [`SamplerConfig::warmup_iters`] operations and the round's share of
//!    [`SamplerConfig::warmup_s`]. In the first round the warm-up's doubling batches estimate
//!    one operation's cost; the batch `n` makes one sample last at least 1,000 × the timer's
//!    resolution (and overhead) and 1/2,000 of the budget. Later rounds keep the first round's
//!    `n` ([`SamplerConfig::batch`]), so every round's samples mean the same.
//! 2. **Batch-size check** (see [`BATCH_CHECKS`]): one batch of `8m` operations between four
//!    batches of `m` before and four after, `m = max(1, n/8)` so that `8m` is about the batch
//!    `n` the samples use ([`Samples::batch_check`]: the long batch's cost per operation beside
//!    the short ones' mean, which span the same time and so meet the same disturbances). The
//!    analysis compares the two over the rounds: they differ when the subtracted overhead is
//!    wrong or the operation's cost depends on how many run back to back.
//! 3. With `--tail`, [`SamplerConfig::tail_samples`] single-operation samples (`n = 1`) for
//!    per-operation percentiles ([`Samples::single_op_ns`]), within a quarter of the round.
//! 4. Samples of `n` operations until the round's own interval — the circular block bootstrap
//!    of `stats::structured` on the samples after their start-up transient (MSER-5), the
//!    within-round part of the interval the run reports — has a relative half-width within
//!    the round's target ([`SamplerConfig::for_round`]), or within the spread already seen
//!    between earlier rounds' medians ([`SamplerConfig::spread_between_rounds_rel`]), which
//!    more samples in this round cannot narrow; but not before 15 % of the
//!    round's budget has passed, and never beyond the budget or [`SamplerConfig::max_samples`];
//!    never fewer than [`SamplerConfig::min_samples`]. A round also stops when the target is
//!    out of reach: its interval, projected to the whole budget (as 1/√samples), would still
//!    be over twice the target ([`StopReason::OutOfReach`]); the row then says `ci-wide`.
//!
//! Steps 2 and 3 come before the samples on purpose: benchmarks that record per-sample stages
//! keep the stages of the last routine calls, which are then exactly the samples.
//!
//! **Seed method** (`--method seed`): the papers' own — single-operation runs, the first
//! [`SEED_DISCARDED`] of each round discarded, [`SEED_RUNS`] kept over the whole run.
//!
//! Between samples (never inside one) the sampler checks the interrupt flag.

pub use model::{Method, Samples, StopReason};
use model::{SamplerSettings, SamplingOverride};
use platform::timer::Timer;
use stats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where the sampler reads the time that passes, for its budget and warm-up: the machine's
/// monotonic clock ([`Wall`]), or in tests a clock that moves only as a fake routine says
/// (`fake::Clock`).
pub trait Clock {
    /// Time since an origin of the clock's own.
    fn now(&self) -> Duration;
    /// Time since `since` (a reading of [`Clock::now`]).
    fn since(&self, since: Duration) -> Duration {
        self.now().saturating_sub(since)
    }
}

/// The machine's monotonic clock (`std::time::Instant`).
pub struct Wall;

impl Clock for Wall {
    fn now(&self) -> Duration {
        static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }
}

/// The seed papers' method: runs kept over the whole run.
pub const SEED_RUNS: usize = 10_000;
/// Runs discarded at the start of every round of the seed method.
pub const SEED_DISCARDED: usize = 100;
pub use model::sampling::BATCH_CHECKS;
/// The standard and thorough presets let a benchmark whose rounds disagree grow to this many
/// times their rounds (5 to 15, 10 to 30); `--quick` keeps its 3, so that it stays quick. The interval over rounds narrows about as 1/√R: three times
/// the rounds take it to 0.58 of its width, enough to bring a row within its target when the
/// rounds missed it by up to 1.7×, or a row whose five rounds span the 10 % of `ci-unusable`
/// back within it; beyond that each round buys less while it costs as much, and a run of
/// rows far from their target would spend its time on a few of them.
pub const ROUNDS_GROWTH: usize = 3;
/// Batches of n on each side of the long batch.
pub const BATCH_CHECK_SIDE: usize = 4;
/// The long batch of the batch-size check, in units of `n`.
pub const BATCH_CHECK_FACTOR: u64 = 8;

/// Sampler settings; see the module doc for what each controls. (Serialised only to hand a
/// round to a worker process, `execution`; the result file keeps [`SamplerSettings`].)
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplerConfig {
    /// Sampling method.
    pub method: Method,
    /// Time budget of one benchmark over all its rounds (warm-up excluded), in seconds.
    pub budget_s: f64,
    /// Minimum warm-up time over all rounds, in seconds.
    pub warmup_s: f64,
    /// Minimum warm-up operations per round.
    pub warmup_iters: u64,
    /// Target relative half-width of the median's 95 % CI (0.01 = 1 %).
    pub ci_target_rel: f64,
    /// Fewest samples ever taken per round.
    pub min_samples: usize,
    /// Most samples ever taken per round (bounds memory).
    pub max_samples: usize,
    /// A sample lasts at least this many timer resolutions (and overheads).
    pub min_sample_resolutions: f64,
    /// Rounds a run makes over its benchmarks (in a round's settings, still the run's count:
    /// batches are sized for the whole budget).
    pub rounds: usize,
    /// The most rounds a benchmark may get when its interval over `rounds` rounds misses
    /// `ci_target_rel` (the runner adds rounds one at a time, each with the same settings as
    /// the first `rounds`, [`SamplerConfig::for_round`]); `rounds` or less: exactly `rounds`.
    /// [`ROUNDS_GROWTH`] × `rounds` in the presets.
    #[serde(default)]
    pub rounds_max: usize,
    /// Single-operation samples per benchmark over the run (`--tail`); 0 for none.
    pub tail_samples: usize,
    /// Seed method: runs kept in this round.
    pub seed_runs: usize,
    /// Operations per sample decided by an earlier round; `None`: decide in this one.
    pub batch: Option<u64>,
    /// How far apart the earlier rounds' medians lie (their standard deviation relative to
    /// their mean; 0 before two rounds): a round whose own interval is already narrower than
    /// that stops, since more samples in it cannot narrow an interval that the differences
    /// between rounds make wide.
    pub spread_between_rounds_rel: f64,
    /// Count hardware events beside the time (`--counters`; `bench::counters`).
    #[serde(default)]
    pub counters: bool,
}

impl SamplerConfig {
    /// The default: about 1 s per benchmark in 5 rounds, 1 % target.
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
            rounds: 5,
            rounds_max: 5 * ROUNDS_GROWTH,
            tail_samples: 0,
            seed_runs: SEED_RUNS,
            batch: None,
            spread_between_rounds_rel: 0.0,
            counters: false,
        }
    }

    /// `--quick`: about 0.2 s per benchmark in 3 rounds.
    pub fn quick() -> SamplerConfig {
        SamplerConfig {
            budget_s: 0.2,
            warmup_s: 0.02,
            rounds: 3,
            // A quick look stays quick: no extra rounds (they doubled its time, 26 → 59 s).
            rounds_max: 3,
            ..SamplerConfig::standard()
        }
    }

    /// `--thorough`: about 5 s per benchmark in 10 rounds, a tighter target.
    pub fn thorough() -> SamplerConfig {
        SamplerConfig {
            budget_s: 5.0,
            warmup_s: 0.2,
            ci_target_rel: 0.005,
            rounds: 10,
            rounds_max: 10 * ROUNDS_GROWTH,
            ..SamplerConfig::standard()
        }
    }

    /// These settings with exactly `rounds` rounds (`--rounds N`: no more, whatever the
    /// interval).
    pub fn with_rounds(self, rounds: usize) -> SamplerConfig {
        SamplerConfig { rounds, rounds_max: rounds, ..self }
    }

    /// The most rounds a benchmark may get: [`SamplerConfig::rounds_max`], never fewer than
    /// [`SamplerConfig::rounds`]; exactly `rounds` under the seed method, whose papers' protocol
    /// is a fixed count of runs over a fixed count of rounds.
    pub fn most_rounds(&self) -> usize {
        match self.method {
            Method::Seed => self.rounds.max(1),
            Method::Adaptive => self.rounds_max.max(self.rounds).max(1),
        }
    }

    /// The settings of one of [`SamplerConfig::rounds`] rounds: the budget, warm-up time,
    /// seed-method runs and tail samples divided among the rounds; the stopping target of a
    /// round is `ci_target_rel × √(R/2)`, so that R rounds that each meet it would together
    /// meet `ci_target_rel` with room for as much variation between rounds as within them.
    /// Batch-size checks per round: [`BATCH_CHECKS`] spread over the rounds, at least one each.
    pub fn batch_checks(&self) -> usize {
        BATCH_CHECKS.div_ceil(self.rounds.max(1))
    }

    /// The record of these settings in the result file.
    pub fn record(&self) -> SamplerSettings {
        SamplerSettings {
            method: self.method,
            budget_s: self.budget_s,
            warmup_s: self.warmup_s,
            warmup_iters: self.warmup_iters,
            ci_target_rel: self.ci_target_rel,
            min_samples: self.min_samples,
            max_samples: self.max_samples,
            min_sample_resolutions: self.min_sample_resolutions,
            rounds: self.rounds,
            rounds_max: Some(self.most_rounds()),
            tail_samples: self.tail_samples,
            counters: self.counters,
        }
    }

    /// These settings with a benchmark's declared override applied: its budget factor and
    /// fixed batch (its warm-up share waits for the operation's cost, [`Self::warmup_fitted`]).
    pub fn overridden(&self, o: &SamplingOverride) -> SamplerConfig {
        SamplerConfig {
            budget_s: self.budget_s * o.budget_factor.unwrap_or(1.0),
            batch: o.batch.or(self.batch),
            ..self.clone()
        }
    }

    /// These settings with the warm-up cut, when `share` is declared, to about that share of
    /// the budget for operations costing `op_ns` (at least 3 operations, never more than
    /// [`Self::warmup_iters`]).
    pub fn warmup_fitted(&self, share: Option<f64>, op_ns: f64) -> SamplerConfig {
        let Some(share) = share else { return self.clone() };
        let fit = (self.budget_s * 1e9 * share / op_ns.max(1.0)) as u64;
        SamplerConfig { warmup_iters: self.warmup_iters.min(fit.max(3)), ..self.clone() }
    }

    /// Round `i` (from 0) gets its share of [`SEED_RUNS`], so the rounds keep exactly that many.
    /// A round past `rounds` (an extra round of a benchmark whose rounds disagree,
    /// [`SamplerConfig::rounds_max`]) gets the same share as the others: the same budget and
    /// target, so that its samples are comparable with theirs.
    pub fn for_round(&self, i: usize) -> SamplerConfig {
        let r = self.rounds.max(1);
        let rf = r as f64;
        let i = i.min(r - 1);
        SamplerConfig {
            budget_s: self.budget_s / rf,
            warmup_s: self.warmup_s / rf,
            ci_target_rel: self.ci_target_rel * (rf / 2.0).sqrt().max(1.0),
            seed_runs: SEED_RUNS * (i + 1) / r - SEED_RUNS * i / r,
            tail_samples: self.tail_samples.div_ceil(r),
            ..self.clone()
        }
    }
}

/// What a routine measured: the ticks of its timed regions, summed, and how many regions they
/// were (each carries one timer overhead, which the sampler subtracts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timed {
    /// Ticks of all the regions together (overhead not subtracted).
    pub ticks: u64,
    /// Timed regions (start/stop pairs) in `ticks`.
    pub regions: u64,
}

impl Timed {
    /// One timed region around all the operations.
    pub fn one(ticks: u64) -> Timed {
        Timed { ticks, regions: 1 }
    }

    /// `regions` timed regions, summed.
    pub fn regions(ticks: u64, regions: u64) -> Timed {
        Timed { ticks, regions }
    }
}

/// Runs `routine(n)` (which returns the ticks `n` operations took, in one timed region) as the
/// config says.
pub fn sample(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    mut routine: impl FnMut(u64) -> u64,
) -> Samples {
    sample_timed(cfg, timer, interrupt, |n| Some(Timed::one(routine(n))))
}

/// Like [`sample`], for a routine that may give up: `None` stops sampling at once with
/// [`StopReason::Aborted`], keeping the samples taken so far.
pub fn sample_fallible(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    mut routine: impl FnMut(u64) -> Option<u64>,
) -> Samples {
    sample_timed(cfg, timer, interrupt, |n| routine(n).map(Timed::one))
}

/// Like [`sample_fallible`], for a routine that says how many timed regions its ticks are the
/// sum of: `regions` overheads are subtracted from each sample.
pub fn sample_timed(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    routine: impl FnMut(u64) -> Option<Timed>,
) -> Samples {
    sample_on(&Wall, cfg, timer, interrupt, routine)
}

/// [`sample_timed`] with the time that passes read from `clock` (tests hand a fake one).
pub fn sample_on(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    mut routine: impl FnMut(u64) -> Option<Timed>,
) -> Samples {
    let to_ns = |t: Timed, n: u64| timer.ticks_to_ns(t.ticks as f64 - overhead_of(timer, t.regions)) / n as f64;
    match cfg.method {
        Method::Seed => {
            let mut out = Samples { iterations_per_sample: 1, ..Samples::default() };
            out.per_op_ns.reserve_exact(cfg.seed_runs);
            for i in 0..SEED_DISCARDED + cfg.seed_runs {
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
        Method::Adaptive => adaptive(clock, cfg, timer, interrupt, &mut routine, to_ns),
    }
}

/// The overhead of `regions` timed regions, ticks: the timer's overhead
/// ([`Timer::overhead_ticks`]: the median of empty regions under the adaptive method) for one
/// region, `regions` × the mean ([`Timer::overhead_mean_ticks`]) for several. A sum of many
/// regions' overheads tends to that many means, not medians; on a coarse counter the two
/// differ by up to a step (on a counter stepping by 26 ticks the empty regions' median was 52
/// ticks and their mean 47.2, so the median would take 4.8 ticks too many from every
/// operation timed on its own).
pub fn overhead_of(timer: &Timer, regions: u64) -> f64 {
    match regions {
        0 => 0.0,
        1 => timer.overhead_ticks(),
        k => k as f64 * timer.overhead_mean_ticks(),
    }
}

/// The ticks of each of `count` calls of `routine(n)`, made the way the sampler makes the calls
/// of its samples (through the same call path), after `warmup` calls discarded: for calibrating
/// the timer overhead of the routine's region shape (`bench::overhead`). A call whose routine
/// timed several regions gives their mean; a call that gave up is left out.
pub fn region_ticks(mut routine: impl FnMut(u64) -> Option<Timed>, n: u64, warmup: usize, count: usize) -> Vec<u64> {
    let never = AtomicBool::new(false);
    let mut ticks = Vec::with_capacity(count);
    for i in 0..warmup + count {
        let Ok(t) = call(&never, &mut routine, n) else { continue };
        if i >= warmup {
            ticks.push(t.ticks / t.regions.max(1));
        }
    }
    ticks
}

/// Why a phase ended early: the whole round ends with it.
type Cut = StopReason;

/// Runs `routine(n)`, checking the interrupt flag first.
fn call(interrupt: &AtomicBool, routine: &mut impl FnMut(u64) -> Option<Timed>, n: u64) -> Result<Timed, Cut> {
    if interrupt.load(Ordering::Relaxed) {
        return Err(StopReason::Interrupted);
    }
    routine(n).ok_or(StopReason::Aborted)
}

fn adaptive(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    routine: &mut impl FnMut(u64) -> Option<Timed>,
    to_ns: impl Fn(Timed, u64) -> f64,
) -> Samples {
    let mut out = Samples::default();
    if let Err(cut) = adaptive_phases(clock, cfg, timer, interrupt, routine, &to_ns, &mut out) {
        out.stop = Some(cut);
    }
    out
}

fn adaptive_phases(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    routine: &mut impl FnMut(u64) -> Option<Timed>,
    to_ns: &impl Fn(Timed, u64) -> f64,
    out: &mut Samples,
) -> Result<(), Cut> {
    let (n, per_op_ns) = warm_up(clock, cfg, timer, interrupt, routine, out)?;
    out.iterations_per_sample = n;
    let budget = Duration::from_secs_f64(cfg.budget_s);
    let began = clock.now();

    // Batch-size check: four batches of m, one of 8m, four of m, where 8m is about n (the
    // batch the samples use), so the check tests the reported estimate itself and costs about
    // two samples. The long batch and the eight short ones span the same time, so a
    // disturbance (an interrupt, a preemption) is as likely to land in either and adds the
    // same time per operation to both.
    let short = (n / BATCH_CHECK_FACTOR).max(1);
    let long = short.saturating_mul(BATCH_CHECK_FACTOR);
    // One check costs 2·BATCH_CHECK_SIDE·m + 8m operations, about two samples.
    let check_s = (2 * BATCH_CHECK_SIDE as u64 * short + long) as f64 * per_op_ns * 1e-9;
    for _ in 0..cfg.batch_checks() {
        // The checks may take a quarter of the round at most (operations that take
        // milliseconds each make even one check long): a check that would overrun is not begun.
        if clock.since(began).as_secs_f64() + check_s > cfg.budget_s * CHECK_MAX_SHARE {
            break;
        }
        let (mut short_ns, mut long_ns) = (0.0, 0.0);
        for k in 0..2 * BATCH_CHECK_SIDE {
            if k == BATCH_CHECK_SIDE {
                long_ns = to_ns(call(interrupt, routine, long)?, long);
            }
            short_ns += to_ns(call(interrupt, routine, short)?, short);
        }
        // Only whole pairs are kept (an interruption leaves none half made).
        out.batch_check.push([long_ns, short_ns / (2 * BATCH_CHECK_SIDE) as f64]);
    }

    // Single-operation samples for tail latency, within a quarter of the round.
    if cfg.tail_samples > 0 {
        let tail_budget = budget.mul_f64(TAIL_TIME_SHARE);
        let t0 = clock.now();
        out.single_op_ns.reserve(cfg.tail_samples);
        while out.single_op_ns.len() < cfg.tail_samples && clock.since(t0) < tail_budget {
            let t = call(interrupt, routine, 1)?;
            out.single_op_ns.push(to_ns(t, 1));
        }
    }

    let min_time = budget.mul_f64(MIN_TIME_SHARE);
    out.per_op_ns.reserve(cfg.max_samples.min(4096));
    let mut next_check = cfg.min_samples;
    loop {
        let t = call(interrupt, routine, n)?;
        out.per_op_ns.push(to_ns(t, n));
        let len = out.per_op_ns.len();
        if len >= cfg.max_samples {
            out.stop = Some(StopReason::SampleCap);
            return Ok(());
        }
        if len >= next_check && clock.since(began) >= min_time {
            let target = cfg.ci_target_rel.max(cfg.spread_between_rounds_rel);
            let half_width = round_half_width_rel(&out.per_op_ns);
            if half_width <= target {
                out.stop = Some(StopReason::TargetMet);
                return Ok(());
            }
            // Futility: an interval narrows about as 1/√(samples); if even the whole budget
            // would leave it over twice the target, more samples in this round are wasted.
            let spent = clock.since(began).as_secs_f64() / budget.as_secs_f64().max(1e-9);
            if half_width * spent.min(1.0).sqrt() > OUT_OF_REACH * target {
                out.stop = Some(StopReason::OutOfReach);
                return Ok(());
            }
            // Check again after half as many samples again: the bootstrap stays a small share.
            next_check = len + (len / 2).max(5);
        }
        // The budget ends a round; the minimum sample count may stretch it, to at most twice
        // the budget (and never below a handful of samples).
        let elapsed = clock.since(began);
        if (len >= cfg.min_samples && elapsed >= budget) || (len >= MIN_SAMPLES_HARD && elapsed >= budget * 2) {
            out.stop = Some(StopReason::BudgetSpent);
            return Ok(());
        }
    }
}

/// Warm-up; returns the operations per sample (the first round's estimate, or the batch an
/// earlier round chose) and the estimated cost of one operation, ns.
fn warm_up(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    routine: &mut impl FnMut(u64) -> Option<Timed>,
    out: &mut Samples,
) -> Result<(u64, f64), Cut> {
    let warm_start = clock.now();
    // Both minimums, or — for operations so slow that the minimum count would overrun the
    // budget — a share of the round's budget after two batches (so the cost is estimated).
    let cap = (cfg.budget_s * WARMUP_MAX_SHARE).max(cfg.warmup_s);
    let warmed = |out: &Samples, batches: u32| {
        let t = clock.since(warm_start).as_secs_f64();
        (out.warmup_iterations >= cfg.warmup_iters && t >= cfg.warmup_s) || (batches >= 2 && t >= cap)
    };
    let mut batches = 0u32;
    if let Some(n) = cfg.batch {
        let n = n.max(1);
        loop {
            let t = call(interrupt, routine, n)?.ticks;
            out.warmup_iterations += n;
            batches += 1;
            if warmed(out, batches) {
                return Ok((n, timer.ticks_to_ns(t as f64) / n as f64));
            }
        }
    }
    // Doubling batches until both minimums are met; every batch but the first (cold) one
    // feeds the estimate of one operation's cost.
    let mut n = 1u64;
    let (mut warm_ticks, mut warm_ops, mut first) = (0u64, 0u64, true);
    let mut last_ticks;
    loop {
        let t = call(interrupt, routine, n)?.ticks;
        last_ticks = t;
        out.warmup_iterations += n;
        if !first {
            warm_ticks += t;
            warm_ops += n;
        }
        first = false;
        batches += 1;
        if warmed(out, batches) {
            break;
        }
        // Grow the batch while one takes less than a tenth of the warm-up time (or 100 µs).
        if timer.ticks_to_ns(t as f64) < (cfg.warmup_s * 1e8).max(WARMUP_BATCH_MIN_NS) {
            n = n.saturating_mul(2);
        }
    }
    let per_op_ns = if warm_ops > 0 {
        timer.ticks_to_ns(warm_ticks as f64) / warm_ops as f64
    } else {
        timer.ticks_to_ns(last_ticks as f64) / n as f64
    };
    let resolution_ns = timer.ticks_to_ns(1.0).max(timer.ticks_to_ns(timer.overhead_ticks())).max(RESOLUTION_FLOOR_NS);
    let budget_s = cfg.budget_s * cfg.rounds.max(1) as f64;
    let min_sample_ns = (cfg.min_sample_resolutions * resolution_ns).max(budget_s * 1e9 / SAMPLES_PER_BUDGET);
    Ok((((min_sample_ns / per_op_ns.max(1e-3)).ceil() as u64).max(1), per_op_ns))
}

/// The relative half-width of the round's median interval: the circular block bootstrap of
/// `stats::structured` on the samples after their start-up transient. Infinite when the
/// median is 0.
pub(crate) fn round_half_width_rel(samples: &[f64]) -> f64 {
    let steady = &samples[stats::structured::mser5(samples)..];
    let (med, [lo, hi], _) = stats::structured::round_median_ci(steady, STOP_RESAMPLES, STOP_SEED);
    if med.abs() > 0.0 { (hi - lo) / 2.0 / med.abs() } else { f64::INFINITY }
}

/// A round stops as out of reach when, projected to its whole budget, its interval would still
/// be over this many times the target.
const OUT_OF_REACH: f64 = 2.0;

/// Bootstrap replicates of the stopping rule's interval (a decision, not a published figure).
const STOP_RESAMPLES: usize = 200;
/// Seed of the stopping rule's bootstrap.
const STOP_SEED: u64 = 0x5709;

/// A sample lasts at least the benchmark's whole budget / this, so a benchmark yields about
/// this many samples over its rounds at most (fewer when the operation itself is slower).
const SAMPLES_PER_BUDGET: f64 = 2000.0;

/// Warm-up batches grow at least until one lasts this long (ns).
const WARMUP_BATCH_MIN_NS: f64 = 1e5;

/// Share of the round's budget that must pass before the CI target may stop sampling.
const MIN_TIME_SHARE: f64 = 0.15;

/// Share of the round's budget the warm-up may take when its minimum count would overrun it.
const WARMUP_MAX_SHARE: f64 = 0.25;

/// Share of the round's budget the batch-size check may take.
const CHECK_MAX_SHARE: f64 = 0.25;

/// Fewest samples a round takes even when the budget (twice over) is spent: operations slower
/// than the budget allows still get a median and a spread in every round.
const MIN_SAMPLES_HARD: usize = 3;

/// Share of the round's budget single-operation samples may take.
const TAIL_TIME_SHARE: f64 = 0.25;

/// A timer step below this (ns) is not trusted for batch sizing: even a 1 GHz counter read
/// back to back cannot resolve less.
const RESOLUTION_FLOOR_NS: f64 = 1.0;

#[cfg(test)]
mod tests {
    use super::*;
    use platform::timer::TimerKind;

    #[test]
    fn an_override_scales_the_budget_fixes_the_batch_and_fits_the_warmup_to_a_cost() {
        let round = SamplerConfig::quick().for_round(1);
        assert_eq!(round.overridden(&SamplingOverride::default()), round);
        let all = SamplingOverride { budget_factor: Some(0.5), batch: Some(1), warmup_share: Some(0.1) };
        let c = round.overridden(&all);
        assert_eq!((c.budget_s, c.batch), (round.budget_s * 0.5, Some(1)));
        assert_eq!(c.warmup_iters, round.warmup_iters, "the share waits for the operation's cost");
        // A round of 0.2 s / 3: a tenth of it is 6 operations of 1 ms, 3 at least, 100 at most.
        assert_eq!(round.warmup_fitted(Some(0.1), 1e6).warmup_iters, 6);
        assert_eq!(round.warmup_fitted(Some(0.1), 1e9).warmup_iters, 3);
        assert_eq!(round.warmup_fitted(Some(0.1), 1e3).warmup_iters, round.warmup_iters);
        assert_eq!(round.warmup_fitted(None, 1e9), round);
    }

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
        let cfg = SamplerConfig { method: Method::Seed, rounds: 1, ..SamplerConfig::quick() }.for_round(0);
        let s = sample(&cfg, &timer(), &AtomicBool::new(false), fake(100));
        assert_eq!(s.per_op_ns.len(), 10_000);
        assert_eq!(s.warmup_iterations, 100);
        assert_eq!(s.iterations_per_sample, 1);
        assert_eq!(s.stop, Some(StopReason::FixedCount));
    }

    #[test]
    fn adaptive_stops_when_target_met_and_takes_min_samples() {
        // Time passes only as the operations' cost says: once 15 % of the budget has passed,
        // the CI target decides, long before the budget is spent.
        let cfg = SamplerConfig { warmup_s: 0.0, budget_s: 0.01, max_samples: 1_000_000, ..SamplerConfig::quick() };
        let (s, _) = crate::fake::sample(&cfg, 0.0, jittery(50));
        assert_eq!(s.stop, Some(StopReason::TargetMet));
        assert!(s.per_op_ns.len() >= cfg.min_samples);
        // max(1000 × 1 ns resolution floor, whole budget (3 rounds × 10 ms) / 2000) / 50 ns per op
        // (the warm-up's estimate is a little over 50: every 7th batch costs one more op).
        assert!((290..=300).contains(&s.iterations_per_sample), "{}", s.iterations_per_sample);
        assert!(s.per_op_ns.iter().all(|&v| v >= 50.0));
    }

    /// [`fake`]'s costs as a script for the fake clock's routine: `cost` ticks an operation,
    /// plus one operation more on every 7th call.
    fn jittery(cost: u64) -> impl FnMut(usize, u64) -> u64 {
        move |k, n| n * cost + if (k + 1).is_multiple_of(7) { cost } else { 0 }
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
        let cfg = SamplerConfig { budget_s: 0.05, warmup_s: 0.0, max_samples: 1_000_000, ..SamplerConfig::quick() };
        let mut x = 1u64;
        let noisy = move |_, n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            n * (10 + (x >> 58))
        };
        let (s, _) = crate::fake::sample(&cfg, 0.0, noisy);
        // Operations costing 10 to 73 ticks at random never meet a 1 % target within the
        // budget: the budget (or its futility) ends the round.
        assert!(matches!(s.stop, Some(StopReason::BudgetSpent | StopReason::OutOfReach)), "{:?}", s.stop);
        assert!(s.per_op_ns.len() >= cfg.min_samples);
    }

    #[test]
    fn batch_check_pairs_and_tail_come_before_the_samples() {
        let cfg = SamplerConfig { warmup_s: 0.0, budget_s: 0.03, tail_samples: 50, ..SamplerConfig::quick() };
        let (s, calls) = crate::fake::sample(&cfg, 0.0, |_, n| n * 40);
        let n = s.iterations_per_sample;
        assert_eq!(s.batch_check.len(), cfg.batch_checks());
        assert_eq!(cfg.batch_checks(), 2, "six over three rounds");
        assert!(s.batch_check.iter().all(|p| p[0] == 40.0 && p[1] == 40.0), "{:?}", s.batch_check);
        assert_eq!(s.single_op_ns.len(), 50);
        // After warm-up: m ×4, 8m, m ×4 (8m ≈ n), then 50 single operations, then samples of n.
        let check = cfg.batch_checks() * (2 * BATCH_CHECK_SIDE + 1);
        let after = &calls[calls.len() - s.per_op_ns.len() - 50 - check..];
        let m = (n / 8).max(1);
        assert_eq!(&after[..check / 2], &[m, m, m, m, 8 * m, m, m, m, m]);
        assert!(after[check..check + 50].iter().all(|&k| k == 1));
        assert!(after[check + 50..].iter().all(|&k| k == n));
    }

    #[test]
    fn a_later_round_keeps_the_batch_of_the_first() {
        let cfg = SamplerConfig { warmup_s: 0.0, budget_s: 1e-6, batch: Some(77), ..SamplerConfig::quick() };
        let s = sample(&cfg, &timer(), &AtomicBool::new(false), fake(50));
        assert_eq!(s.iterations_per_sample, 77);
    }

    #[test]
    fn rounds_share_the_budget_and_seed_runs_exactly() {
        let cfg = SamplerConfig { rounds: 3, ..SamplerConfig::standard() };
        let rounds: Vec<SamplerConfig> = (0..3).map(|i| cfg.for_round(i)).collect();
        assert_eq!(rounds.iter().map(|r| r.seed_runs).sum::<usize>(), SEED_RUNS);
        assert!(rounds.iter().all(|r| (r.budget_s - cfg.budget_s / 3.0).abs() < 1e-12));
        assert!(rounds[0].ci_target_rel > cfg.ci_target_rel);
    }

    #[test]
    fn slow_operations_keep_to_the_budget() {
        // 2 ms an operation and a 20 ms round: the warm-up's 100 operations, the batch checks
        // and 30 samples would take over 0.3 s; the budget bounds each phase instead.
        let cfg = SamplerConfig { budget_s: 0.02, warmup_s: 0.0, rounds: 1, ..SamplerConfig::quick() };
        let (s, _) = crate::fake::sample(&cfg, 0.0, |_, n| n * 2_000_000);
        assert!(s.warmup_iterations < cfg.warmup_iters, "warm-up bounded: {}", s.warmup_iterations);
        assert!(s.per_op_ns.len() < cfg.min_samples, "samples bounded: {}", s.per_op_ns.len());
        assert!(s.per_op_ns.len() >= MIN_SAMPLES_HARD);
        assert_eq!(s.stop, Some(StopReason::BudgetSpent));
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

    #[test]
    fn a_routine_timing_each_operation_is_charged_one_overhead_per_region() {
        // Median 40 ticks, mean 44: n regions of (10 + 44) ticks each are n × 10 ticks of work.
        let t = Timer::with_overheads(timer(), 40.0, 44.0);
        let cfg = SamplerConfig { warmup_s: 0.0, ..SamplerConfig::quick() };
        let s = sample_timed(&cfg, &t, &AtomicBool::new(false), |n| Some(Timed::regions(n * 54, n)));
        assert!(s.iterations_per_sample > 1);
        assert!(s.per_op_ns.iter().all(|&v| (v - 10.0).abs() < 1e-9), "{:?}", &s.per_op_ns[..3]);
        // The same ticks reported as one region lose one median overhead only.
        let one = sample_timed(&cfg, &t, &AtomicBool::new(false), |n| Some(Timed::one(n * 54)));
        let n = one.iterations_per_sample as f64;
        assert!(one.per_op_ns.iter().all(|&v| (v - (54.0 - 40.0 / n)).abs() < 1e-9));
        assert_eq!((overhead_of(&t, 0), overhead_of(&t, 1), overhead_of(&t, 3)), (0.0, 40.0, 132.0));
    }

    #[test]
    fn region_ticks_calls_the_routine_as_samples_are_taken() {
        let mut calls = Vec::new();
        let ticks = region_ticks(
            |n| {
                calls.push(n);
                Some(Timed::regions(30 * n, n))
            },
            4,
            2,
            5,
        );
        assert_eq!(calls, vec![4; 7]);
        assert_eq!(ticks, vec![30; 5]);
    }
}
