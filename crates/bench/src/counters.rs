//! Hardware counters beside the time (`--counters`): cycles, retired instructions, LLC read
//! misses, dTLB read misses and branch misses, per operation, **in the same samples as the
//! time**.
//!
//! **Counting model.** A [`Counting`] reads its [`CounterSource`] (all counters at once, with
//! the group's `time_enabled`/`time_running`) just before a sample's timed region starts and
//! just after it stops ([`Counting::around`]): for [`crate::Ctx::iter`] that is around the
//! whole loop of `n` operations, so the counts cover the `n` operations, the timer's own
//! reads and the ends of the two counter reads. The last two are calibrated once, when the
//! source is opened, as the median count of the same path run with no operation
//! ([`Counting::new`]), and subtracted from every sample, as the timer overhead is from the
//! time. One sample's count per operation is then
//! `(Δcount × Δenabled / Δrunning − overhead) / n` ([`per_op`]): scaled up when the kernel
//! multiplexed the group (counted it for part of the sample only), `None` when the group did
//! not count at all during the sample.
//!
//! The sampler's calls include warm-up and checks; like breakdown stages, the counts kept are
//! those of the **last** calls, which are exactly the samples ([`Counting::take`]).
//!
//! The real source is the calling thread's `perf_event_open` group ([`Perf`],
//! `sys::perf`); tests drive the arithmetic with [`Fake`], which returns known counts.
//! A benchmark that times its own regions (`Ctx::iter_custom` and kin) has its samples
//! counted when it wraps its timed region in `Ctx::count_region` (one region per sample);
//! until it does, its rows say it was not counted ([`NOT_REACHED`]).

use model::counters::{CounterSamples, EVENT_NAMES, EventSamples, MissingEvent};
pub use sys::perf::{EVENTS, Reading};

/// Where counts come from: the PMU ([`Perf`]) or, in tests, a script ([`Fake`]).
pub trait CounterSource: Send {
    /// Every counter at once, with the group's enabled and running times.
    fn read(&mut self) -> Result<Reading, String>;
    /// Events this source does not count (by index in [`EVENT_NAMES`]), with why.
    fn missing(&self) -> Vec<(usize, String)>;
}

/// The calling thread's hardware counters (`sys::perf::Group`).
pub struct Perf(sys::perf::Group);

impl Perf {
    /// Opens the group on the calling thread; `Err` says why none could be (no PMU,
    /// `perf_event_paranoid` and how to allow it).
    pub fn open() -> Result<Perf, String> {
        sys::perf::Group::open().map(Perf)
    }
}

impl CounterSource for Perf {
    fn read(&mut self) -> Result<Reading, String> {
        self.0.read().map_err(|e| format!("reading the counters: {e}"))
    }
    fn missing(&self) -> Vec<(usize, String)> {
        self.0
            .missing()
            .iter()
            .map(|(e, why)| (sys::perf::Event::ALL.iter().position(|x| x == e).unwrap_or(0), why.clone()))
            .collect()
    }
}

/// A source for tests: each read adds `step` to every count present and `enabled`/`running` ns
/// to the group's times, so a sample's counts are known in advance.
pub struct Fake {
    /// The current reading.
    pub now: Reading,
    /// What each read adds to each count (`None`: the event is missing).
    pub step: [Option<u64>; EVENTS],
    /// What each read adds to `time_enabled`.
    pub enabled: u64,
    /// What each read adds to `time_running`.
    pub running: u64,
}

impl Fake {
    /// A source whose counts grow by `step` each read, never multiplexed.
    pub fn new(step: [Option<u64>; EVENTS]) -> Fake {
        Fake { now: Reading::default(), step, enabled: 1000, running: 1000 }
    }
}

impl CounterSource for Fake {
    fn read(&mut self) -> Result<Reading, String> {
        for (c, s) in self.now.counts.iter_mut().zip(self.step) {
            *c = s.map(|s| c.unwrap_or(0) + s);
        }
        self.now.time_enabled += self.enabled;
        self.now.time_running += self.running;
        Ok(self.now)
    }
    fn missing(&self) -> Vec<(usize, String)> {
        (0..EVENTS)
            .filter(|&i| self.step[i].is_none())
            .map(|i| (i, "the fake source has no such counter".into()))
            .collect()
    }
}

/// One sample's counts per operation: each event's difference between `before` and `after`,
/// scaled by `Δenabled / Δrunning`, less `overhead`, over `n`; and the share of the sample
/// the group was counting. All `None` (share 0) when it did not count at all.
pub fn per_op(before: &Reading, after: &Reading, overhead: &[f64; EVENTS], n: u64) -> ([Option<f64>; EVENTS], f64) {
    let enabled = after.time_enabled.saturating_sub(before.time_enabled);
    let running = after.time_running.saturating_sub(before.time_running);
    if running == 0 {
        return ([None; EVENTS], 0.0);
    }
    let scale = if enabled > running { enabled as f64 / running as f64 } else { 1.0 };
    let mut out = [None; EVENTS];
    for i in 0..EVENTS {
        if let (Some(a), Some(b)) = (before.counts[i], after.counts[i]) {
            out[i] = Some((b.wrapping_sub(a) as f64 * scale - overhead[i]) / n.max(1) as f64);
        }
    }
    (out, 1.0 / scale)
}

/// Empty regions counted to calibrate the reads' own counts.
const CALIBRATION_REGIONS: usize = 31;

/// A counter source with its calibrated overhead and the counts of the calls made so far.
pub struct Counting {
    source: Box<dyn CounterSource>,
    overhead: [f64; EVENTS],
    log: Vec<Entry>,
    open: Option<Result<Reading, String>>,
}

impl Counting {
    /// A counting hook on `source`, its overhead calibrated as the median count of
    /// [`CALIBRATION_REGIONS`] regions around `empty` (the timed path with no operation).
    pub fn new(source: Box<dyn CounterSource>, mut empty: impl FnMut()) -> Counting {
        let mut c = Counting { source, overhead: [0.0; EVENTS], log: Vec::new(), open: None };
        for _ in 0..CALIBRATION_REGIONS {
            c.around(1, &mut empty);
        }
        let mut overhead = [0.0; EVENTS];
        for (i, o) in overhead.iter_mut().enumerate() {
            let mut v: Vec<f64> = c.log.iter().filter_map(|(x, _)| x[i]).collect();
            if !v.is_empty() {
                v.sort_by(f64::total_cmp);
                *o = stats::median(&v);
            }
        }
        c.overhead = overhead;
        c.log.clear();
        c
    }

    /// The counts of the calibration's empty region, per event.
    pub fn overhead(&self) -> [f64; EVENTS] {
        self.overhead
    }

    /// Runs `region` (one sample's timed region, of `n` operations) between two reads and
    /// logs its counts per operation. A failed read logs a sample with no counts.
    pub fn around<T>(&mut self, n: u64, region: impl FnOnce() -> T) -> T {
        let before = self.source.read();
        let out = region();
        let after = self.source.read();
        self.log.push(match (before, after) {
            (Ok(b), Ok(a)) => per_op(&b, &a, &self.overhead, n),
            _ => ([None; EVENTS], 0.0),
        });
        out
    }

    /// Regions counted since the last [`Counting::clear`] or [`Counting::take`].
    pub fn logged(&self) -> usize {
        self.log.len()
    }

    /// Forgets the calls logged so far (before a new sampling).
    pub fn clear(&mut self) {
        self.log.clear();
    }

    /// The counts of the last `samples` calls (the samples; earlier calls were warm-up and
    /// checks), with the events the source lacks.
    pub fn take(&mut self, samples: usize) -> CounterSamples {
        let kept = &self.log[self.log.len().saturating_sub(samples)..];
        let out = self.samples_of(kept);
        self.log.clear();
        out
    }

    /// Opens a region whose end is not in the caller's hands (a cold pair's operation, from
    /// right after the disturbance to the routine's return, [`crate::cold`]): reads the
    /// counters now; [`Counting::end`] reads them again. Not logged.
    pub fn begin(&mut self) {
        self.open = Some(self.source.read());
    }

    /// Closes the region [`Counting::begin`] opened and returns its counts per operation (of
    /// `n`), less the calibrated overhead; no counts when none was opened or a read failed.
    pub fn end(&mut self, n: u64) -> Entry {
        let after = self.source.read();
        match (self.open.take(), after) {
            (Some(Ok(b)), Ok(a)) => per_op(&b, &a, &self.overhead, n),
            _ => ([None; EVENTS], 0.0),
        }
    }

    /// Regions' counts ([`Counting::end`]) as a round's [`CounterSamples`], with the events the
    /// source lacks.
    pub fn samples_of(&self, kept: &[Entry]) -> CounterSamples {
        let missing = self.source.missing();
        let mut out = CounterSamples { running_share_min: 1.0, ..CounterSamples::default() };
        for (i, name) in EVENT_NAMES.iter().enumerate() {
            if let Some((_, why)) = missing.iter().find(|(m, _)| *m == i) {
                out.missing.push(MissingEvent { event: name.to_string(), reason: why.clone() });
            } else {
                out.events
                    .push(EventSamples { event: name.to_string(), per_op: kept.iter().map(|(x, _)| x[i]).collect() });
            }
        }
        out.running_share_min = kept.iter().map(|(_, s)| *s).fold(1.0, f64::min);
        out
    }
}

/// One region's counts per operation (each event's, `None` where not counted) and the share
/// of it the group was counting.
pub type Entry = ([Option<f64>; EVENTS], f64);

pub use model::counters::NOT_REACHED;

/// The note of a hand-off benchmark's counts ([`scope`]): its peer runs elsewhere.
pub const MEASURING_END_ONLY: &str = "measuring end only: the counts are this thread's side of each round trip (its \
                                      system calls, its waits and wake-ups, the kernel's work on its behalf); the \
                                      peer's side, on another thread or process, is not counted";

/// Says what `samples`' counts cover (`note`), where something was counted; leaves rows
/// without counts as they are.
pub fn scope(samples: &mut crate::sampler::Samples, note: &str) {
    for c in [&mut samples.counters, &mut samples.hot_twin_counters].into_iter().flatten() {
        if !c.events.is_empty() {
            c.note = Some(note.into());
        }
    }
}

/// What this thread can count: opens the group once and closes it (for the run's record).
pub fn probe() -> model::counters::Availability {
    match Perf::open() {
        Ok(p) => {
            let missing = p.missing();
            let mut out = model::counters::Availability::default();
            for (i, name) in EVENT_NAMES.iter().enumerate() {
                match missing.iter().find(|(m, _)| *m == i) {
                    Some((_, why)) => out.missing.push(MissingEvent { event: name.to_string(), reason: why.clone() }),
                    None => out.counted.push(name.to_string()),
                }
            }
            out
        }
        Err(why) => model::counters::Availability { counted: Vec::new(), missing: CounterSamples::none(&why).missing },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(counts: [Option<u64>; EVENTS], enabled: u64, running: u64) -> Reading {
        Reading { counts, time_enabled: enabled, time_running: running }
    }

    #[test]
    fn a_sample_is_divided_by_its_operations_less_the_overhead() {
        let a = reading([Some(100), Some(50), Some(0), Some(0), Some(1)], 0, 0);
        let b = reading([Some(1100), Some(4050), Some(20), Some(10), Some(11)], 500, 500);
        let (x, share) = per_op(&a, &b, &[0.0, 0.0, 0.0, 0.0, 0.0], 100);
        assert_eq!(x, [Some(10.0), Some(40.0), Some(0.2), Some(0.1), Some(0.1)]);
        assert_eq!(share, 1.0);
        let (x, _) = per_op(&a, &b, &[200.0, 50.0, 0.0, 0.0, 0.0], 100);
        assert_eq!(x[0], Some(8.0));
        assert_eq!(x[1], Some(39.5));
    }

    #[test]
    fn a_multiplexed_sample_is_scaled_up_by_enabled_over_running() {
        // Counted a quarter of the time: 250 cycles seen are 1,000 over the sample.
        let a = reading([Some(0); EVENTS], 1000, 800);
        let b = reading([Some(250); EVENTS], 2000, 1050);
        let (x, share) = per_op(&a, &b, &[0.0; EVENTS], 10);
        assert_eq!(x[0], Some(100.0));
        assert_eq!(share, 0.25);
        // Never counted during the sample: no figure, not zero.
        let c = reading([Some(250); EVENTS], 3000, 1050);
        assert_eq!(per_op(&b, &c, &[0.0; EVENTS], 10), ([None; EVENTS], 0.0));
    }

    #[test]
    fn the_fake_source_drives_calibration_and_keeps_the_last_calls_with_a_missing_counter() {
        // Each read adds 7 cycles and 3 instructions; LLC misses are missing.
        let fake = Fake::new([Some(7), Some(3), None, Some(0), Some(1)]);
        let mut c = Counting::new(Box::new(fake), || {});
        // The empty region's counts: one read's step each.
        assert_eq!(c.overhead(), [7.0, 3.0, 0.0, 0.0, 1.0]);
        for n in [1, 2, 4, 5, 5] {
            c.around(n, || ());
        }
        let s = c.take(2);
        assert_eq!(
            s.events.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(),
            ["cycles", "instructions", "dtlb_misses", "branch_misses"]
        );
        // Every region counts exactly the overhead: 0 per operation.
        assert!(s.events.iter().all(|e| e.per_op == [Some(0.0), Some(0.0)]), "{s:?}");
        assert_eq!(s.missing.len(), 1);
        assert_eq!(
            (s.missing[0].event.as_str(), s.missing[0].reason.as_str()),
            ("llc_misses", "the fake source has no such counter")
        );
        assert_eq!(s.running_share_min, 1.0);
    }

    /// A source whose region adds a known count: 1,000 cycles per 10 operations on top of
    /// the reads' own 7.
    #[test]
    fn counts_inside_the_region_are_per_operation() {
        let fake = std::sync::Arc::new(std::sync::Mutex::new(Fake::new([Some(7), Some(3), Some(0), Some(0), Some(0)])));
        struct Shared(std::sync::Arc<std::sync::Mutex<Fake>>);
        impl CounterSource for Shared {
            fn read(&mut self) -> Result<Reading, String> {
                self.0.lock().unwrap().read()
            }
            fn missing(&self) -> Vec<(usize, String)> {
                Vec::new()
            }
        }
        let mut c = Counting::new(Box::new(Shared(fake.clone())), || {});
        let work = |f: &std::sync::Arc<std::sync::Mutex<Fake>>, n: u64| {
            let mut g = f.lock().unwrap();
            g.now.counts[0] = g.now.counts[0].map(|x| x + 100 * n);
            g.now.counts[1] = g.now.counts[1].map(|x| x + 40 * n);
        };
        c.around(10, || work(&fake, 10));
        // Multiplexed: the group ran half of this sample.
        fake.lock().unwrap().running = 500;
        c.around(10, || work(&fake, 10));
        let s = c.take(2);
        let cycles = &s.events[0].per_op;
        assert_eq!(cycles[0], Some(100.0));
        // (1,000 + 7) counted over half the time: 2,014 over the sample, less 7, over 10.
        assert_eq!(cycles[1], Some((1007.0 * 2.0 - 7.0) / 10.0));
        assert_eq!(s.running_share_min, 0.5);
    }

    #[test]
    fn ctx_iter_counts_the_same_samples_as_the_time_only_when_asked() {
        crate::testing::with_ctx(0.01, |ctx| {
            let plain = ctx.iter(|| 1u64);
            assert!(plain.counters.is_none(), "not asked for: nothing");
            let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
            ctx.begin_visit(&round, model::SamplingOverride::default());
            ctx.count_with(Box::new(Fake::new([Some(5), Some(9), Some(0), None, Some(1)])));
            let s = ctx.iter(|| 1u64);
            let c = s.counters.expect("asked for: counts");
            assert_eq!(c.events.len(), 4);
            for e in &c.events {
                assert_eq!(e.per_op.len(), s.per_op_ns.len(), "{}: one count per sample", e.event);
                assert!(e.per_op.iter().all(|v| *v == Some(0.0)), "{}: the reads' own counts subtracted", e.event);
            }
            assert_eq!(c.missing[0].event, "dtlb_misses");
        });
    }

    #[test]
    fn a_self_timed_routine_is_counted_where_it_wraps_its_region_and_says_so_where_not() {
        crate::testing::with_ctx(0.01, |ctx| {
            let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
            ctx.begin_visit(&round, model::SamplingOverride::default());
            ctx.count_with(Box::new(Fake::new([Some(1); EVENTS])));
            let timer = ctx.timer;
            let bare = ctx.iter_custom(|n| {
                let t0 = timer.start();
                std::hint::black_box(n);
                timer.stop().wrapping_sub(t0)
            });
            let c = bare.counters.expect("asked for");
            assert!(c.events.is_empty() && c.missing.iter().all(|m| m.reason == NOT_REACHED), "{c:?}");
            let wrapped = ctx.iter_custom(|n| {
                ctx.count_region(n, || {
                    let t0 = timer.start();
                    std::hint::black_box(n);
                    timer.stop().wrapping_sub(t0)
                })
            });
            let c = wrapped.counters.expect("asked for");
            assert_eq!(c.events.len(), EVENTS);
            assert!(c.events.iter().all(|e| e.per_op.len() == wrapped.per_op_ns.len()));
        });
    }

    /// A source shared with the routine, which adds counts of its own inside the region.
    struct Shared(std::sync::Arc<std::sync::Mutex<Fake>>);

    impl CounterSource for Shared {
        fn read(&mut self) -> Result<Reading, String> {
            self.0.lock().unwrap().read()
        }
        fn missing(&self) -> Vec<(usize, String)> {
            self.0.lock().unwrap().missing()
        }
    }

    #[test]
    fn cold_samples_and_their_hot_twins_are_counted_apart() {
        crate::testing::with_ctx(0.01, |ctx| {
            let fake =
                std::sync::Arc::new(std::sync::Mutex::new(Fake::new([Some(3), Some(2), Some(1), Some(1), None])));
            let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
            ctx.begin_visit(&round, model::SamplingOverride::default());
            ctx.count_with(Box::new(Shared(fake.clone())));
            // Calls: the round's warm-ups, then per pair the cold call, the twin's warm-ups and
            // the twin. The cold call misses 40 LLC lines and 9 dTLB entries, the twin 2 and 0;
            // the warm-ups' 1,000 are not counted.
            let mut call = 0usize;
            let timer = ctx.timer;
            let s = ctx.iter_cold(|before| {
                let slot = call.checked_sub(crate::cold::PAIR_WARMUP).map(|i| i % (crate::cold::HOT_WARMUPS + 2));
                call += 1;
                before.now();
                let t0 = timer.start();
                let (llc, dtlb) = match slot {
                    Some(0) => {
                        // Two operations in the cold region: the counts are halved.
                        before.ops(2);
                        (80, 18)
                    }
                    Some(k) if k == crate::cold::HOT_WARMUPS + 1 => (2, 0),
                    _ => (1000, 1000),
                };
                let mut f = fake.lock().unwrap();
                f.now.counts[2] = f.now.counts[2].map(|x| x + llc);
                f.now.counts[3] = f.now.counts[3].map(|x| x + dtlb);
                drop(f);
                Some(crate::sampler::Timed::one(timer.stop().wrapping_sub(t0)))
            });
            let (cold, hot) =
                (s.counters.clone().expect("cold counted"), s.hot_twin_counters.clone().expect("twins counted"));
            let per_op = |c: &CounterSamples, e: &str| -> Vec<Option<f64>> {
                c.events.iter().find(|x| x.event == e).expect("counted").per_op.clone()
            };
            assert_eq!(per_op(&cold, "llc_misses").len(), s.per_op_ns.len());
            assert_eq!(per_op(&hot, "llc_misses").len(), s.hot_twin_ns.len());
            assert!(per_op(&cold, "llc_misses").iter().all(|v| *v == Some(40.0)), "{cold:?}");
            assert!(per_op(&cold, "dtlb_misses").iter().all(|v| *v == Some(9.0)));
            assert!(per_op(&hot, "llc_misses").iter().all(|v| *v == Some(2.0)), "{hot:?}");
            assert!(per_op(&hot, "dtlb_misses").iter().all(|v| *v == Some(0.0)));
            assert!(per_op(&cold, "cycles").iter().all(|v| *v == Some(0.0)), "the reads' own counts subtracted");
            assert_eq!(cold.missing[0].event, "branch_misses");
            assert_eq!(hot.missing[0].event, "branch_misses");
            // The hot twin's own row carries the twins' counts.
            let twin = crate::cold::hot_twin(&model::Measured::new(s.clone(), Vec::new()));
            assert_eq!(twin.samples.counters.as_ref(), Some(&hot));
            // Counters not asked for: neither side has any.
            let plain = crate::sampler::SamplerConfig { counters: false, ..round };
            ctx.begin_visit(&plain, model::SamplingOverride::default());
            let s = ctx.iter_cold(|before| {
                before.now();
                Some(crate::sampler::Timed::one(1))
            });
            assert!(s.counters.is_none() && s.hot_twin_counters.is_none());
        });
    }

    /// Runs the benchmark `id` under `--counters` on a fake source; its samples' counts.
    fn counted_visit(ctx: &mut crate::Ctx, id: &str) -> (crate::sampler::Samples, CounterSamples) {
        let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
        ctx.begin_visit(&round, model::SamplingOverride::default());
        ctx.count_with(Box::new(Fake::new([Some(4), Some(6), Some(0), Some(0), Some(1)])));
        let bench = crate::registry::find(id).expect("registered");
        let params = bench.variants(ctx).remove(0);
        let m = crate::testing::visit(ctx, bench, &params).expect("measured");
        let c = m.samples.counters.clone().expect("asked for");
        (m.samples, c)
    }

    #[test]
    fn the_self_timed_switches_are_counted_and_say_what_the_counts_cover() {
        let _serial = crate::testing::serial();
        crate::testing::with_ctx(0.02, |ctx| {
            let (s, c) = counted_visit(ctx, "ctx.user");
            assert_eq!(c.events.len(), EVENTS, "{c:?}");
            assert!(c.events.iter().all(|e| e.per_op.len() == s.per_op_ns.len()));
            assert!(c.note.as_deref().is_some_and(|n| n.starts_with("both ends")), "{c:?}");
        });
        crate::testing::with_ctx(0.02, |ctx| {
            let (s, c) = counted_visit(ctx, "ctx.thread");
            assert_eq!(c.events.len(), EVENTS, "{c:?}");
            assert!(c.events.iter().all(|e| e.per_op.len() == s.per_op_ns.len()));
            assert_eq!(c.note.as_deref(), Some(MEASURING_END_ONLY));
        });
    }

    #[test]
    fn a_paired_difference_stays_uncounted_and_says_why() {
        let _serial = crate::testing::serial();
        crate::testing::with_ctx(0.02, |ctx| {
            let (_, c) = counted_visit(ctx, "ctx.address_space");
            let why = crate::ctx::PAIRED_NOT_COUNTED;
            assert!(c.events.is_empty() && c.missing.iter().all(|m| m.reason == why), "{c:?}");
            assert!(c.note.is_none());
        });
    }

    /// A cold visit of the anonymous fault (it re-arms its pages itself, then disturbs) is
    /// counted on both sides of each pair, as every cold routine is.
    #[test]
    fn a_cold_fault_is_counted_cold_and_hot() {
        let _serial = crate::testing::serial();
        crate::testing::with_ctx(0.02, |ctx| {
            let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
            ctx.begin_visit(&round, model::SamplingOverride::default());
            ctx.count_with(Box::new(Fake::new([Some(4), Some(6), Some(0), Some(0), Some(1)])));
            ctx.set_cold(true).expect("the stream buffer");
            let bench = crate::registry::find("fault.anon.write").expect("registered");
            let params = bench.variants(ctx).into_iter().next().expect("a variant");
            let params = crate::cold::with_cache(&params, crate::cold::COLD);
            let m = crate::testing::visit(ctx, bench, &params).expect("measured");
            let (cold, hot) = (
                m.samples.counters.clone().expect("cold counted"),
                m.samples.hot_twin_counters.clone().expect("twins counted"),
            );
            for c in [&cold, &hot] {
                assert_eq!(c.events.len(), EVENTS, "{c:?}");
                assert!(c.events.iter().all(|e| e.per_op.iter().all(Option::is_some)), "{c:?}");
            }
            assert_eq!(cold.events[0].per_op.len(), m.samples.per_op_ns.len());
            ctx.set_cold(false).unwrap();
        });
    }

    /// The real PMU: counts an `Ctx::iter` loop where one exists; says why not where none does.
    #[test]
    fn the_pmu_counts_a_loop_or_says_why_not() {
        crate::testing::with_ctx(0.01, |ctx| {
            let round = crate::sampler::SamplerConfig { counters: true, ..ctx.cfg().clone() };
            ctx.begin_visit(&round, model::SamplingOverride::default());
            let mut x = 0u64;
            let s = ctx.iter(|| {
                for i in 0..100u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                x
            });
            let c = s.counters.expect("asked for");
            if c.events.is_empty() {
                eprintln!("skipped: {}", c.missing[0].reason);
                assert_eq!(c.missing.len(), EVENTS);
                assert!(c.missing.iter().all(|m| m.reason == c.missing[0].reason && !m.reason.is_empty()));
                return;
            }
            let instr = c.events.iter().find(|e| e.event == "instructions").expect("instructions counted");
            let v: Vec<f64> = instr.per_op.iter().flatten().copied().collect();
            assert!(!v.is_empty());
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            assert!(mean >= 100.0, "100 additions retire at least 100 instructions: {mean}");
        });
    }
}
