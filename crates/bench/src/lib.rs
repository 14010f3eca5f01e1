//! Benchmarks: the [`Benchmark`] trait, the [`Ctx`] they measure through, and the checks
//! they report. Each family lives in its own file; `registry.rs` lists them all.
//!
//! A benchmark sets up outside the clock, hands the sampler a routine (through [`Ctx::iter`]
//! or [`Ctx::iter_custom`]), tears down, and returns its samples with [`Check`]s saying whether
//! it measured what it claims. A benchmark never prints, and never changes the run's settings:
//! one that samples differently says so in [`Benchmark::sampling`], which the runner applies
//! ([`Ctx::begin_visit`]) and records in the row; [`Ctx::cfg`] is read-only.

#![forbid(unsafe_code)]

pub mod cold;
pub mod counters;
pub mod cpu_time;
pub mod ctx;
pub mod domain;
pub mod domain_process;
pub mod dylib;
pub mod ebpf;
pub mod elf;
#[doc(hidden)]
pub mod fake;
pub mod fault;
pub mod fs;
pub mod futex_wait;
pub mod harness;
pub mod id;
pub mod interpose;
pub mod interposer;
pub mod ipc;
pub mod lifecycle;
pub mod lock;
pub mod notify;
pub mod notify_softirq;
pub mod overhead;
pub mod peer;
pub mod pingpong;
pub mod registry;
pub mod sampler;
pub mod sched;
pub mod seccomp;
pub mod seccomp_filter;
pub mod signal;
pub mod size;
pub mod space;
pub mod syscall;
pub mod task;
pub mod timer_wake;
pub mod transport;
pub mod trap;
pub mod txn;
pub mod uring;
pub mod wake;

use crate::sampler::{SamplerConfig, Samples, Timed};
use model::Method;
pub use model::measured::{Measured, NotMeasured};
pub use model::{Check, Params, SamplingOverride, Unit};
use overhead::Overhead;
use platform::timer::sync::OffsetBound;
use platform::timer::{Timer, TimerInfo};
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// One measurable operation, e.g. `syscall.getpid`.
pub trait Benchmark: Sync {
    /// `family.operation[.variant]`.
    fn id(&self) -> &'static str;
    /// One line for `osprim list` and the table.
    fn about(&self) -> &'static str;
    /// Whether it can run on this machine; `Err(reason)` when not. Must be cheap.
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    /// The parameter sets to run; one result each. Default: one, empty.
    fn variants(&self, _ctx: &Ctx) -> Vec<Params> {
        vec![Params::new()]
    }
    /// How it samples differently from the run's settings under `params`, if at all: applied
    /// to every round's settings before [`Benchmark::run`] and recorded in the row. Default:
    /// no override.
    fn sampling(&self, _params: &Params) -> SamplingOverride {
        SamplingOverride::default()
    }
    /// Sets up, measures through `ctx`, tears down, reports checks. Called once per round,
    /// each time with a fresh set-up and [`Ctx::cfg`] holding that round's settings.
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured>;
    /// Whether the benchmark is measured in the first round only, with the whole budget
    /// (e.g. memory per object, which is a count, not a time that moves with the machine).
    fn single_round(&self) -> bool {
        false
    }
    /// Whether it has a cold-cache mode ([`cold`]): `Ok` when, run with `cache=cold`, it takes
    /// cold/hot pairs of single operations (through [`Ctx::iter`], which does so by itself in
    /// a cold visit, or [`Ctx::iter_cold`]); `Err(reason)` when not. Default: not.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Err("no cold-cache mode: it does not time single operations with a disturbance before each")
    }
}

/// Costs of two reference operations, measured once per run when a check first needs them.
#[derive(Clone, Copy, Debug)]
pub struct References {
    /// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO (no kernel entry), ns.
    pub vdso_ns: f64,
    /// Bare `syscall` getppid, ns.
    pub syscall_ns: f64,
}

/// What a benchmark measures through: the timer, the sampler settings, placement, scratch space.
pub struct Ctx<'a> {
    /// The run's timer, carrying the overhead of a self-timed region calibrated in this round
    /// ([`Ctx::use_overhead`]): what [`Ctx::iter_custom`] and its kin subtract per region.
    pub timer: Timer,
    /// What is known about it.
    pub timer_info: &'a TimerInfo,
    /// Sampler settings of the visit: the run's for this round with the benchmark's
    /// [`Benchmark::sampling`] applied ([`Ctx::begin_visit`]).
    cfg: SamplerConfig,
    /// The visit's declared override, for what applies only once the benchmark knows its
    /// operation's cost ([`Ctx::iter_regions_costing`]).
    sampling: SamplingOverride,
    /// The CPU the measuring thread is pinned to.
    pub cpu: usize,
    /// A private directory, removed at the end of the run.
    pub scratch: &'a Path,
    /// CPUs this process may use (for benchmarks that place a peer).
    pub allowed_cpus: Vec<usize>,
    /// The pair given with `--cpus A,B` for cross-CPU benchmarks, if any.
    pub cpu_pair: Option<[usize; 2]>,
    /// Message sizes in bytes asked for with `--sweep`/`--sizes`; `None`: each
    /// payload-carrying benchmark's own default size.
    pub sizes: Option<Vec<usize>>,
    /// Whether the machine runs under a hypervisor (for notes on what dominates a figure).
    pub virtualized: bool,
    interrupt: &'a AtomicBool,
    references: Option<References>,
    offset_bounds: Vec<((usize, usize), Result<OffsetBound, String>)>,
    /// The overhead calibrated for this round, per region shape.
    overhead: Overhead,
    /// What [`Ctx::iter`] subtracts from each sample: the loop shape's overhead, ticks.
    loop_overhead_ticks: f64,
    /// The hardware counters of `--counters`, opened on first use (or why they could not be).
    counting: std::sync::OnceLock<std::sync::Mutex<Result<counters::Counting, String>>>,
    /// The cold-cache disturbance, made on the first cold visit and kept for the next.
    disturber: Option<cold::Disturber>,
    /// Whether this visit runs cold ([`Ctx::set_cold`]).
    cold_visit: bool,
}

impl<'a> Ctx<'a> {
    /// A context for one run.
    pub fn new(
        timer: Timer,
        timer_info: &'a TimerInfo,
        cfg: SamplerConfig,
        cpu: usize,
        scratch: &'a Path,
        interrupt: &'a AtomicBool,
    ) -> Ctx<'a> {
        Ctx {
            timer,
            timer_info,
            cfg,
            sampling: SamplingOverride::default(),
            cpu,
            scratch,
            allowed_cpus: sys::cpu::allowed_cpus(),
            cpu_pair: None,
            sizes: None,
            virtualized: false,
            interrupt,
            references: None,
            offset_bounds: Vec::new(),
            overhead: Overhead::of_timer(&timer),
            loop_overhead_ticks: timer.overhead_ticks(),
            counting: std::sync::OnceLock::new(),
            disturber: None,
            cold_visit: false,
        }
    }

    /// For the runner, before each visit: whether it runs cold (`cache=cold` on a benchmark
    /// with a [`Benchmark::cold_mode`]). Makes the disturbance on first use.
    pub fn set_cold(&mut self, cold: bool) -> Result<(), String> {
        self.cold_visit = false;
        if cold && self.disturber.is_none() {
            self.disturber =
                Some(cold::Disturber::new().map_err(|e| format!("cannot map the cold-cache stream buffer: {e}"))?);
        }
        self.cold_visit = cold;
        Ok(())
    }

    /// The disturbance, when this visit runs cold.
    pub fn cold(&self) -> Option<&cold::Disturber> {
        if self.cold_visit { self.disturber.as_ref() } else { None }
    }

    /// Samples cold/hot pairs ([`cold`]) of a routine that runs **one** operation, calls
    /// [`cold::Before::now`] right before its timed region (after any untimed set-up it needs),
    /// and returns the ticks of its region(s); the overhead of a routine's own region is
    /// subtracted per region. The samples are the cold ones, `hot_twin_ns` their twins.
    /// Outside a cold visit it does the same with no disturbance (every pair hot), for tests.
    pub fn iter_cold(&self, routine: impl FnMut(&cold::Before) -> Option<Timed>) -> Samples {
        self.pairs(&self.timer, routine)
    }

    /// Under `--counters`, each cold sample and each hot twin is counted on its own
    /// ([`cold::PairCounts`]): the cold samples' counts go into [`Samples::counters`], the hot
    /// twins' into [`Samples::hot_twin_counters`] (or why there are none, into both).
    fn pairs(&self, timer: &Timer, routine: impl FnMut(&cold::Before) -> Option<Timed>) -> Samples {
        if !self.cfg.counters {
            return cold::sample_pairs(&self.cfg, timer, self.interrupt, self.cold(), routine);
        }
        let (mut s, cold, hot) =
            cold::sample_pairs_counted(&self.cfg, timer, self.interrupt, self.cold(), &PairHook(self), routine);
        let (c, h) = match &*self.counting() {
            Ok(c) => (c.samples_of(&cold), c.samples_of(&hot)),
            Err(why) => (model::counters::CounterSamples::none(why), model::counters::CounterSamples::none(why)),
        };
        s.counters = Some(c);
        s.hot_twin_counters = Some(h);
        s
    }

    /// The sampler settings the benchmark measures with (read-only: a benchmark declares what
    /// it needs in [`Benchmark::sampling`]).
    pub fn cfg(&self) -> &SamplerConfig {
        &self.cfg
    }

    /// For the runner, before each visit: the round's settings `cfg` with the benchmark's
    /// declared `sampling` applied (its budget factor and fixed batch now; its warm-up share
    /// when the benchmark gives its operation's cost, [`Ctx::iter_regions_costing`]).
    pub fn begin_visit(&mut self, cfg: &SamplerConfig, sampling: SamplingOverride) {
        self.cfg = cfg.overridden(&sampling);
        self.sampling = sampling;
    }

    /// Runs `pilot` (a measurement that is not the row's, e.g. choosing a mechanism) under
    /// settings of its own; the visit's settings are back when it returns.
    pub fn pilot<R>(&mut self, cfg: SamplerConfig, pilot: impl FnOnce(&mut Ctx<'a>) -> R) -> R {
        let visit = std::mem::replace(&mut self.cfg, cfg);
        let out = pilot(self);
        self.cfg = visit;
        out
    }

    /// Subtracts `overhead` (calibrated for this round by [`overhead::calibrate_overhead`])
    /// from now on: the loop shape's in [`Ctx::iter`], the region shape's per timed region in
    /// the routines that time themselves (through [`Ctx::timer`]); the median under the
    /// adaptive method, the mean under the seed method.
    pub fn use_overhead(&mut self, overhead: Overhead, method: Method) {
        self.timer = Timer::with_overheads(self.timer, overhead.region.for_method(method), overhead.region.mean_ticks);
        self.loop_overhead_ticks = overhead.looped.for_method(method);
        self.overhead = overhead;
    }

    /// The overhead calibrated for this round.
    pub fn overhead(&self) -> Overhead {
        self.overhead
    }

    /// The timer as [`Ctx::iter`] hands it to the sampler: carrying the loop shape's overhead.
    pub fn loop_timer(&self) -> Timer {
        Timer::with_overhead(self.timer, self.loop_overhead_ticks)
    }

    /// Samples `op`, run `n` times back to back per sample.
    ///
    /// **Timing model:** `start`, then `n` calls of `op` with each result passed through
    /// `black_box`, then `stop`. Nothing else is inside.
    /// The loop shape's overhead ([`overhead::Overhead::looped`]) is subtracted once per sample.
    /// With `--counters` ([`counters`]), the hardware counters are read just outside the same
    /// `start`/`stop`, and each sample's counts per operation go into [`Samples::counters`].
    ///
    /// In a cold visit ([`cold`]) it takes cold/hot pairs of single operations instead: each a
    /// loop of one operation (the calibrated loop shape at n = 1), the cold one right after
    /// the disturbance.
    pub fn iter<R>(&self, mut op: impl FnMut() -> R) -> Samples {
        let timer = self.timer;
        if self.cold_visit {
            return self.pairs(&self.loop_timer(), |before| {
                before.now();
                Some(Timed::one(time_loop(&timer, 1, &mut op)))
            });
        }
        if !self.cfg.counters {
            return sampler::sample(&self.cfg, &self.loop_timer(), self.interrupt, |n| time_loop(&timer, n, &mut op));
        }
        self.with_counts(|| {
            sampler::sample(&self.cfg, &self.loop_timer(), self.interrupt, |n| {
                self.count_region(n, || time_loop(&timer, n, &mut op))
            })
        })
    }

    /// Counts with `source` instead of the thread's PMU (for tests: [`counters::Fake`]); the
    /// PMU's group, when already opened, is kept.
    #[doc(hidden)]
    pub fn count_with(&mut self, source: Box<dyn counters::CounterSource>) {
        let timer = self.timer;
        let c = counters::Counting::new(source, || {
            time_loop(&timer, 0, &mut || ());
        });
        let _ = self.counting.set(std::sync::Mutex::new(Ok(c)));
    }

    /// The counting hook, opened on first use on the calling thread (its overhead calibrated
    /// on [`Ctx::iter`]'s path with no operation), or why it could not be.
    fn counting(&self) -> std::sync::MutexGuard<'_, Result<counters::Counting, String>> {
        let timer = self.timer;
        let cell = self.counting.get_or_init(|| {
            let opened = counters::Perf::open().map(|p| {
                counters::Counting::new(Box::new(p), || {
                    time_loop(&timer, 0, &mut || ());
                })
            });
            std::sync::Mutex::new(opened)
        });
        cell.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `region`, one sample's timed region of `ops` operations, between two reads of the
    /// hardware counters when `--counters` asked for them (just `region` otherwise): what a
    /// routine that times itself wraps around its own `start`/`stop` to have its samples
    /// counted. One counted region per sample: the counts kept are those of the last regions,
    /// one per sample ([`counters::Counting::take`]); a routine that times two regions per
    /// sample (paired) or gives up after a counted region would shift them, so it wraps only
    /// the one region of a sample it keeps. Only the calling thread is counted: a peer's work
    /// (another thread or process) is not.
    pub fn count_region<T>(&self, ops: u64, region: impl FnOnce() -> T) -> T {
        if !self.cfg.counters {
            return region();
        }
        let mut guard = self.counting();
        match &mut *guard {
            Ok(c) => c.around(ops, region),
            Err(_) => {
                drop(guard);
                region()
            }
        }
    }

    /// `sample()` (a sampling of this visit) with, under `--counters`, its samples' counts
    /// ([`Ctx::count_region`]), or why there are none: the PMU's absence, or a routine that
    /// counted no region ([`counters::NOT_REACHED`]).
    fn with_counts(&self, sample: impl FnOnce() -> Samples) -> Samples {
        if !self.cfg.counters {
            return sample();
        }
        if let Ok(c) = &mut *self.counting() {
            c.clear();
        }
        let mut samples = sample();
        samples.counters = Some(match &mut *self.counting() {
            Ok(c) if c.logged() > 0 => c.take(samples.per_op_ns.len()),
            Ok(_) => model::counters::CounterSamples::none(counters::NOT_REACHED),
            Err(why) => model::counters::CounterSamples::none(why),
        });
        samples
    }

    /// Samples a routine that times `n` operations itself, in **one** timed region, and
    /// returns the ticks they took; one region overhead is subtracted per sample. A routine
    /// that times its operations in several regions uses [`Ctx::iter_regions`].
    pub fn iter_custom(&self, routine: impl FnMut(u64) -> u64) -> Samples {
        self.with_counts(|| sampler::sample(&self.cfg, &self.timer, self.interrupt, routine))
    }

    /// Samples a routine that times `n` operations itself in one region and may give up
    /// (`None`), e.g. when its peer died; the samples taken before are kept.
    pub fn iter_fallible(&self, routine: impl FnMut(u64) -> Option<u64>) -> Samples {
        self.with_counts(|| sampler::sample_fallible(&self.cfg, &self.timer, self.interrupt, routine))
    }

    /// Samples a routine that times its `n` operations in as many regions as it says
    /// ([`Timed::regions`], e.g. `n` when it times each on its own): one region overhead is
    /// subtracted per region.
    pub fn iter_regions(&self, mut routine: impl FnMut(u64) -> Timed) -> Samples {
        self.with_counts(|| sampler::sample_timed(&self.cfg, &self.timer, self.interrupt, |n| Some(routine(n))))
    }

    /// [`Ctx::iter_regions`] for an operation the benchmark has found to cost about `op_ns`
    /// (timed before sampling): a declared [`SamplingOverride::warmup_share`] bounds the
    /// warm-up to that share of the budget at this cost.
    pub fn iter_regions_costing(&self, op_ns: f64, mut routine: impl FnMut(u64) -> Timed) -> Samples {
        let cfg = self.cfg.warmup_fitted(self.sampling.warmup_share, op_ns);
        self.with_counts(|| sampler::sample_timed(&cfg, &self.timer, self.interrupt, |n| Some(routine(n))))
    }

    /// [`Ctx::iter_regions`] for a routine that may give up (`None`).
    pub fn iter_regions_fallible(&self, routine: impl FnMut(u64) -> Option<Timed>) -> Samples {
        self.with_counts(|| sampler::sample_timed(&self.cfg, &self.timer, self.interrupt, routine))
    }

    /// The interrupt flag, for benchmarks whose peers must stop when Ctrl-C arrives.
    pub fn interrupt_flag(&self) -> &AtomicBool {
        self.interrupt
    }

    /// Whether Ctrl-C has been pressed.
    pub fn interrupted(&self) -> bool {
        self.interrupt.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How far apart the counters of CPUs `a` and `b` may be ([`platform::timer::sync`]),
    /// measured once per pair and run.
    pub fn offset_bound(&mut self, a: usize, b: usize) -> Result<OffsetBound, String> {
        if let Some((_, r)) = self.offset_bounds.iter().find(|(k, _)| *k == (a, b)) {
            return r.clone();
        }
        let r = platform::timer::sync::measure(self.timer, a, b, 20_000, std::time::Duration::from_millis(200))
            .map_err(|e| e.to_string());
        let _ = sys::cpu::pin_current_thread(self.cpu);
        self.offset_bounds.push(((a, b), r.clone()));
        r
    }

    /// Reference costs (vDSO call, bare system call), measured on first use.
    pub fn references(&mut self) -> References {
        if let Some(r) = self.references {
            return r;
        }
        let quick = |op: &mut dyn FnMut()| {
            let mut best = f64::INFINITY;
            for _ in 0..31 {
                let t0 = self.timer.start();
                for _ in 0..500 {
                    op();
                }
                let t1 = self.timer.stop();
                let ns = self.timer.ticks_to_ns(t1.wrapping_sub(t0) as f64 - self.loop_overhead_ticks) / 500.0;
                best = best.min(ns);
            }
            best
        };
        let r = References {
            vdso_ns: quick(&mut || {
                black_box(nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok());
            }),
            syscall_ns: quick(&mut || {
                black_box(sys::raw::getppid());
            }),
        };
        self.references = Some(r);
        r
    }

    /// The check every kernel-entering benchmark makes: it costs clearly more than a vDSO call
    /// (1.5 ×), or it did not enter the kernel. Not checkable when the vDSO itself falls back
    /// to a system call (then the two cost the same).
    pub fn enters_kernel_check(&mut self, median_ns: f64) -> Check {
        let r = self.references();
        let name = "costs more than a vDSO call (enters the kernel)";
        if r.vdso_ns * 1.5 > r.syscall_ns {
            return Check::impossible(
                name,
                format!(
                    "the vDSO clock ({:.1} ns) costs about as much as a bare system call ({:.1} ns): the clocksource has no vDSO path",
                    r.vdso_ns, r.syscall_ns
                ),
            );
        }
        Check::new(
            name,
            format!("> {:.1} ns (1.5 × vDSO clock_gettime)", r.vdso_ns * 1.5),
            format!("{median_ns:.1} ns"),
            median_ns > r.vdso_ns * 1.5,
        )
    }
}

/// A cold pair's counting hook on the context's counters (one operation per region).
struct PairHook<'c, 'a>(&'c Ctx<'a>);

impl cold::PairCounts for PairHook<'_, '_> {
    fn begin(&self) {
        if let Ok(c) = &mut *self.0.counting() {
            c.begin();
        }
    }
    fn end(&self, ops: u64) -> counters::Entry {
        match &mut *self.0.counting() {
            Ok(c) => c.end(ops),
            Err(_) => ([None; counters::EVENTS], 0.0),
        }
    }
}

/// The loop every [`Ctx::iter`] benchmark runs; not inlined so each benchmark's timed code is
/// one function to read in a disassembly.
#[inline(never)]
fn time_loop<R>(timer: &Timer, n: u64, op: &mut impl FnMut() -> R) -> u64 {
    let t0 = timer.start();
    for _ in 0..n {
        black_box(op());
    }
    let t1 = timer.stop();
    t1.wrapping_sub(t0)
}

/// One parameter set per value of one parameter: `key=values[0]`, `key=values[1]`, …
pub fn one_param<'a>(key: &str, values: impl IntoIterator<Item = &'a str>) -> Vec<Params> {
    values.into_iter().map(|v| Params::from([(key.to_string(), serde_json::Value::from(v))])).collect()
}

/// Median of the hot samples: in a cold visit the hot twins', else the samples' (for checks
/// that compare with a hot reference).
pub fn hot_median(samples: &Samples) -> f64 {
    if samples.hot_twin_ns.is_empty() {
        return quick_median(samples);
    }
    let mut v = samples.hot_twin_ns.clone();
    v.sort_by(f64::total_cmp);
    stats::median(&v)
}

/// Median of the samples (for checks made right after sampling).
pub fn quick_median(samples: &Samples) -> f64 {
    let mut v = samples.per_op_ns.clone();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    stats::median(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty operation that declares half the budget and one operation per sample.
    struct Declares;

    impl Benchmark for Declares {
        fn id(&self) -> &'static str {
            "test.declares"
        }
        fn about(&self) -> &'static str {
            "an empty operation sampled under its own override"
        }
        fn sampling(&self, _: &Params) -> SamplingOverride {
            SamplingOverride { budget_factor: Some(0.5), batch: Some(1), ..Default::default() }
        }
        fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
            Ok(Measured::new(ctx.iter(|| 1u64), Vec::new()))
        }
    }

    #[test]
    fn a_visit_samples_under_its_declared_override_and_the_next_under_the_rounds_settings() {
        testing::with_ctx(0.02, |ctx| {
            let round = ctx.cfg().clone();
            ctx.begin_visit(&round, Declares.sampling(&Params::new()));
            assert_eq!((ctx.cfg().budget_s, ctx.cfg().batch), (round.budget_s * 0.5, Some(1)));
            let m = Declares.run(ctx, &Params::new()).expect("measured");
            assert_eq!(m.samples.iterations_per_sample, 1);
            ctx.begin_visit(&round, SamplingOverride::default());
            assert_eq!(*ctx.cfg(), round);
        });
    }

    #[test]
    fn a_cold_visit_of_an_iter_benchmark_takes_pairs_and_a_hot_one_does_not() {
        let _serial = testing::serial();
        testing::with_ctx(0.05, |ctx| {
            let bench = registry::find("syscall.null").expect("registered");
            ctx.set_cold(true).expect("the stream buffer");
            let cold = testing::visit(ctx, bench, &cold::with_cache(&Params::new(), cold::COLD)).expect("measured");
            let s = &cold.samples;
            assert_eq!(s.iterations_per_sample, 1);
            assert!(!s.per_op_ns.is_empty() && s.per_op_ns.len() == s.hot_twin_ns.len());
            // A system call after the disturbance is slower than right after another one (a
            // ratio measured in one run).
            let ratio = quick_median(s) / hot_median(s);
            assert!(ratio > 1.5, "cold/hot {ratio:.2}");
            ctx.set_cold(false).unwrap();
            let hot = testing::visit(ctx, bench, &Params::new()).expect("measured");
            assert!(hot.samples.hot_twin_ns.is_empty() && hot.samples.iterations_per_sample > 1);
        });
    }

    #[test]
    fn a_pilot_measures_under_its_own_settings_and_gives_the_visits_back() {
        testing::with_ctx(0.02, |ctx| {
            let visit = ctx.cfg().clone();
            let pilot = SamplerConfig { budget_s: 0.001, ..visit.clone() };
            let seen = ctx.pilot(pilot, |c| c.cfg().budget_s);
            assert_eq!(seen, 0.001);
            assert_eq!(*ctx.cfg(), visit);
        });
    }

    #[test]
    fn the_benchmarks_that_sample_differently_declare_it_and_the_others_do_not() {
        let declaring: Vec<&str> =
            registry::all().iter().filter(|b| !b.sampling(&Params::new()).is_none()).map(|b| b.id()).collect();
        assert_eq!(declaring, ["lib.dlopen.init", "domain.create", "domain.destroy", "txn.commit_8b"]);
        assert!(registry::find("syscall.getpid").is_some_and(|b| b.sampling(&Params::new()).declared().is_none()));
    }
}

/// A context for tests of benchmarks, on a quick sampler with `budget_s`.
#[doc(hidden)]
pub mod testing {
    use super::{Benchmark, Ctx, Measured, NotMeasured, Params, SamplingOverride};
    use crate::sampler::SamplerConfig;

    /// Runs `bench` as the runner visits it: under `ctx`'s settings with its declared override
    /// applied, which is taken off again afterwards.
    pub fn visit(ctx: &mut Ctx, bench: &dyn Benchmark, params: &Params) -> Result<Measured, NotMeasured> {
        let round = ctx.cfg().clone();
        ctx.begin_visit(&round, bench.sampling(params));
        let out = bench.run(ctx, params);
        ctx.begin_visit(&round, SamplingOverride::default());
        out
    }

    pub use sys::testing::serial;

    /// Runs `f` with a fresh context: this thread pinned to its first allowed CPU, a private
    /// scratch directory, no interrupt.
    pub fn with_ctx(budget_s: f64, f: impl FnOnce(&mut Ctx)) {
        let allowed = sys::cpu::allowed_cpus();
        let cpu = allowed[0];
        sys::cpu::pin_current_thread(cpu).expect("pin to an allowed CPU");
        let (timer, info) = platform::timer::detect();
        let scratch = tempfile::tempdir().expect("temporary directory");
        let interrupt = std::sync::atomic::AtomicBool::new(false);
        let cfg = SamplerConfig { budget_s, warmup_s: 0.005, ..SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, cpu, scratch.path(), &interrupt);
        ctx.use_overhead(super::overhead::calibrate_overhead(&timer), model::Method::Adaptive);
        ctx.allowed_cpus = allowed;
        f(&mut ctx);
    }
}
