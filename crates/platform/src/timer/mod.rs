//! Timers: which clock osprim measures with, its frequency, overhead and resolution.
//!
//! The cycle counter (x86_64 TSC, aarch64 `cntvct_el0`) is used when it ticks at a constant
//! rate whatever the core's frequency or sleep state ("invariant"); otherwise osprim falls
//! back to `CLOCK_MONOTONIC_RAW` and says so in the result. The choice is a pure function of
//! [`CounterFacts`], so the fallback is tested with injected facts on any machine.
//!
//! Frequency: CPUID leaf 0x15 (crystal ratio), the hypervisor timing leaf 0x40000010, or leaf
//! 0x16 (base frequency) when the CPU states one; the counter is always also calibrated
//! against `CLOCK_MONOTONIC_RAW` over at least 50 ms, and the stated value is used only when
//! the two agree within 1 %.
//!
//! **Overhead.** 100,000 empty timed regions (`start` then `stop`, in a function of their own
//! as a benchmark's timed region is) are timed; their median is the overhead subtracted from
//! each sample ([`Timer::overhead_ticks`]) and their mean is kept beside it
//! ([`Timer::overhead_mean_ticks`]) for methods that report means: the regions' distribution
//! is skewed (here 36 ticks median, 36.9 mean), so a mean of samples must lose the mean of the
//! overhead, not its median. The mean leaves out regions over 10 × the median (an interrupt
//! landed in them, which is no cost of the timer). What sits between the two reads matters at the
//! level of a counter step: the fallback clock is read out of line so that the counter's path
//! is straight wherever the compiler re-checks which clock is in use.
//!
//! **Resolution** is the counter's step: the granularity of the values it can take, found by
//! [`counter_step`]. A pair of reads is separated by a pseudo-random amount of spinning
//! (0–15 `pause`s and 0–7 dependent additions), so that the time between them varies by
//! many ticks and its phase against the counter's steps is scrambled; the step is the largest
//! divisor of the most frequent non-zero difference of which at least 99 % of the non-zero
//! differences are multiples. A pure GCD would be exact but would collapse to 1 on a single
//! odd difference (a read pair straddling a migration, or a virtual CPU whose counter offset
//! was changed by its hypervisor); the 1 % tolerance keeps such exceptions from deciding.
//! Back-to-back reads are no probe of the step: their spacing is so regular (a fixed number
//! of cycles) that their differences share factors the counter does not have.
//! Separately, [`TimerInfo::read_cost_ns`] keeps the smallest non-zero difference between a
//! `stop` and the next `start` — the cost of reading, what older osprim called resolution.
//!
//! Measured on a KVM guest of an Intel Xeon with its TSC at 2.3 GHz: the counter steps by 2
//! ticks (0.87 ns) — every difference between reads on one CPU is even, even across sleeps,
//! and the parity of the values differs between CPUs and over time — while a `stop` to the
//! next `start` takes at least 44 ticks (19.1 ns; 50 ticks when a `start`/`stop` pair sits
//! in the same loop iteration) and an empty timed region 36 ticks (15.7 ns) median, 36.9 mean.

pub mod sync;

pub use model::{TimerInfo, TimerKind};
use std::time::{Duration, Instant};
pub use sys::clock::Timer;
use sys::{clock, tsc};

/// What the hardware says about its counter; gathered by [`CounterFacts::probe`], injectable
/// in tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CounterFacts {
    /// The architecture has a counter osprim can read.
    pub available: bool,
    /// CPUID 0x80000007 EDX bit 8 (`None` when the leaf is absent).
    pub invariant_cpuid: Option<bool>,
    /// `constant_tsc` and `nonstop_tsc` both present in /proc/cpuinfo.
    pub constant_and_nonstop: bool,
    /// `rdtscp` is supported (needed by [`tsc::stop`]).
    pub rdtscp: bool,
    /// Frequency stated by the hardware, and which leaf stated it.
    pub stated_hz: Option<(f64, &'static str)>,
    /// aarch64's counter is architecturally constant-rate.
    pub architecturally_constant: bool,
}

/// The timer chosen from the facts, before calibration.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The clock to use.
    pub kind: TimerKind,
    /// Whether the counter is invariant (`None`: not known).
    pub invariant: Option<bool>,
    /// How invariance was established.
    pub invariant_source: String,
    /// Why the counter was not used, when it was not.
    pub fallback_reason: Option<String>,
}

impl CounterFacts {
    /// Reads the facts of this machine.
    pub fn probe() -> CounterFacts {
        let flags = cpuinfo_flags();
        let has = |f: &str| flags.iter().any(|x| x == f);
        #[cfg(target_arch = "x86_64")]
        {
            let cpuid = raw_cpuid::CpuId::new();
            let ext = cpuid.get_advanced_power_mgmt_info();
            let ext_fn = cpuid.get_extended_processor_and_feature_identifiers();
            CounterFacts {
                available: true,
                invariant_cpuid: ext.map(|e| e.has_invariant_tsc()),
                constant_and_nonstop: has("constant_tsc") && has("nonstop_tsc"),
                rdtscp: ext_fn.map(|e| e.has_rdtscp()).unwrap_or(false) || has("rdtscp"),
                stated_hz: stated_tsc_hz(&cpuid),
                architecturally_constant: false,
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            let _ = has;
            CounterFacts {
                available: true,
                invariant_cpuid: None,
                constant_and_nonstop: false,
                rdtscp: true,
                stated_hz: tsc::stated_frequency_hz().map(|f| (f, "cntfrq_el0")),
                architecturally_constant: true,
            }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = has;
            CounterFacts::default()
        }
    }

    /// Chooses the clock: the counter when it is invariant and readable with ordering,
    /// `CLOCK_MONOTONIC_RAW` otherwise.
    pub fn choose(&self) -> Choice {
        let counter_kind = if cfg!(target_arch = "aarch64") { TimerKind::Cntvct } else { TimerKind::Tsc };
        let (invariant, source) = if self.architecturally_constant {
            (Some(true), "architecture (generic timer)".to_string())
        } else if let Some(inv) = self.invariant_cpuid {
            (Some(inv), "CPUID 0x80000007 EDX bit 8".to_string())
        } else if self.constant_and_nonstop {
            (Some(true), "cpuinfo flags constant_tsc + nonstop_tsc".to_string())
        } else {
            (None, "not stated by CPUID or cpuinfo".to_string())
        };
        let invariant = match invariant {
            // A hypervisor may hide the CPUID bit while the kernel still reports both flags.
            Some(false) if self.constant_and_nonstop => Some(true),
            other => other,
        };
        let fallback_reason = if !self.available {
            Some("no cycle counter on this architecture".to_string())
        } else if invariant != Some(true) {
            Some(format!("the cycle counter is not known to be invariant ({source})"))
        } else if !self.rdtscp {
            Some("rdtscp is not supported, so reads cannot be ordered".to_string())
        } else {
            None
        };
        Choice {
            kind: if fallback_reason.is_some() { TimerKind::MonotonicRaw } else { counter_kind },
            invariant,
            invariant_source: source,
            fallback_reason,
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn stated_tsc_hz(cpuid: &raw_cpuid::CpuId<raw_cpuid::CpuIdReaderNative>) -> Option<(f64, &'static str)> {
    if let Some(hz) = cpuid.get_tsc_info().and_then(|t| t.tsc_frequency()) {
        return Some((hz as f64, "CPUID 0x15"));
    }
    if let Some(khz) = cpuid.get_hypervisor_info().and_then(|h| h.tsc_frequency()).filter(|&k| k > 0) {
        return Some((f64::from(khz) * 1e3, "CPUID 0x40000010 (hypervisor)"));
    }
    let mhz = cpuid.get_processor_frequency_info().map(|f| f.processor_base_frequency())?;
    (mhz > 0).then_some((f64::from(mhz) * 1e6, "CPUID 0x16 (base frequency)"))
}

fn cpuinfo_flags() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("flags") || l.starts_with("Features"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Builds the timer of this machine: probe, choose, calibrate, measure overhead and resolution.
pub fn detect() -> (Timer, TimerInfo) {
    detect_with(&CounterFacts::probe())
}

/// Builds the timer from given facts (tests inject facts of a machine without invariant TSC).
pub fn detect_with(facts: &CounterFacts) -> (Timer, TimerInfo) {
    let choice = facts.choose();
    let calibrated_hz = (facts.available && facts.rdtscp).then(calibrate_counter_hz);
    let stated_hz = facts.stated_hz.map(|(hz, _)| hz);
    let (freq_hz, freq_source) = match choice.kind {
        TimerKind::MonotonicRaw => (1e9, "CLOCK_MONOTONIC_RAW (ns)".to_string()),
        _ => pick_frequency(facts.stated_hz, calibrated_hz.unwrap_or(0.0)),
    };
    let timer = Timer::with_scale(choice.kind, 1e9 / freq_hz);
    let costs = measure_costs(&timer);
    let timer = Timer::with_overheads(timer, costs.overhead_median, costs.overhead_mean);
    let info = TimerInfo {
        kind: choice.kind,
        freq_hz,
        freq_source,
        calibrated_hz,
        stated_hz,
        invariant: choice.invariant,
        invariant_source: choice.invariant_source,
        fallback_reason: choice.fallback_reason,
        overhead_ns: timer.ticks_to_ns(costs.overhead_median),
        overhead_ticks: costs.overhead_median,
        overhead_mean_ns: Some(timer.ticks_to_ns(costs.overhead_mean)),
        overhead_mean_ticks: Some(costs.overhead_mean),
        resolution_ns: timer.ticks_to_ns(costs.step),
        read_cost_ns: Some(timer.ticks_to_ns(costs.read_cost)),
        overhead_by_round: Vec::new(),
    };
    (timer, info)
}

/// The timer of a worker process (`execution`): the clock, frequency, counter step and read
/// cost the run measured (`info`, from [`detect`] in the parent; none of it is measured again).
/// Its overheads are the parent's only until the worker calibrates its own, through the
/// sampler's path (`bench::overhead`), which is what every sample then loses. `None` when
/// `info` holds no usable frequency.
pub fn reuse(info: &TimerInfo) -> Option<(Timer, TimerInfo)> {
    if !(info.freq_hz.is_finite() && info.freq_hz > 0.0) {
        return None;
    }
    let timer = Timer::with_scale(info.kind, 1e9 / info.freq_hz);
    let mean = info.overhead_mean_ticks.unwrap_or(info.overhead_ticks);
    Some((Timer::with_overheads(timer, info.overhead_ticks, mean), info.clone()))
}

/// Uses the stated frequency when it agrees with calibration within 1 %, else calibration.
fn pick_frequency(stated: Option<(f64, &'static str)>, calibrated: f64) -> (f64, String) {
    match stated {
        Some((hz, src)) if calibrated > 0.0 && ((hz - calibrated) / calibrated).abs() <= 0.01 => {
            (hz, format!("{src}, agrees with calibration within 1 %"))
        }
        Some((hz, src)) if calibrated > 0.0 => (
            calibrated,
            format!("calibrated against CLOCK_MONOTONIC_RAW ({src} stated {:.0} MHz, disagrees)", hz / 1e6),
        ),
        _ => (calibrated, "calibrated against CLOCK_MONOTONIC_RAW over 50 ms".to_string()),
    }
}

/// Counter ticks per second of `CLOCK_MONOTONIC_RAW`, over at least 50 ms.
fn calibrate_counter_hz() -> f64 {
    // Each end is the (counter, clock) pair whose two counter reads were closest together.
    let pair = || {
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..16 {
            let a = tsc::start();
            let ns = clock::monotonic_raw_ns();
            let b = tsc::stop();
            let gap = b.wrapping_sub(a);
            if gap < best.0 {
                best = (gap, a + gap / 2, ns);
            }
        }
        (best.1, best.2)
    };
    let (c0, n0) = pair();
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(50) {
        std::hint::spin_loop();
    }
    let (c1, n1) = pair();
    let dn = n1.saturating_sub(n0) as f64;
    if dn <= 0.0 { 0.0 } else { c1.wrapping_sub(c0) as f64 * 1e9 / dn }
}

/// What reading the timer costs, and how finely it counts; all in ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Costs {
    /// Median of back-to-back start/stop pairs.
    overhead_median: f64,
    /// Mean of the same pairs.
    overhead_mean: f64,
    /// Smallest non-zero difference from a `stop` to the next `start`.
    read_cost: f64,
    /// The counter's step ([`counter_step`]).
    step: f64,
}

/// Back-to-back start/stop pairs timed for the overhead.
const OVERHEAD_PAIRS: usize = 100_000;

/// `stop`/`start` pairs timed for the read cost.
const READ_COST_PAIRS: usize = 20_000;

/// Read pairs separated by varying spins, probing the counter's step.
const STEP_PROBES: usize = 20_000;

/// Measures the overhead (median and mean of start/stop pairs), the read cost and the step.
fn measure_costs(timer: &Timer) -> Costs {
    let mut pairs: Vec<u64> = (0..OVERHEAD_PAIRS).map(|_| empty_region(timer)).collect();
    let (overhead_median, overhead_mean) = median_and_mean(&mut pairs);

    let mut read_cost = u64::MAX;
    for _ in 0..READ_COST_PAIRS {
        let b = timer.stop();
        let c = timer.start();
        let d = c.wrapping_sub(b);
        if d > 0 && d < read_cost {
            read_cost = d;
        }
    }

    let mut diffs = Vec::with_capacity(STEP_PROBES);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let first = timer.start();
    for _ in 0..STEP_PROBES {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let (pauses, adds) = ((rng >> 60) as u32, (rng >> 57) & 7);
        let a = timer.start();
        for _ in 0..pauses {
            std::hint::spin_loop();
        }
        let mut x = a;
        for _ in 0..adds {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        std::hint::black_box(x);
        let b = timer.stop();
        diffs.push(b.wrapping_sub(a));
    }
    let span = timer.stop().wrapping_sub(first);
    // A counter that never moved during the probes steps by more than their whole span.
    let step = counter_step(&diffs).unwrap_or(span.max(1));
    Costs {
        overhead_median,
        overhead_mean,
        read_cost: if read_cost == u64::MAX { step as f64 } else { read_cost as f64 },
        step: step as f64,
    }
}

/// The ticks of one empty timed region: `start`, then `stop` of a timer the compiler cannot
/// see through. In a benchmark's timed region the operation hides the timer from the
/// compiler, so `stop` chooses again between the counter and the clock (a compare and a
/// branch between the two reads); without the `black_box` the compiler would make that choice
/// once, and the pair would cost about a counter step less than the regions it is subtracted
/// from.
#[inline(never)]
fn empty_region(timer: &Timer) -> u64 {
    let a = timer.start();
    let b = timer.stop();
    b.wrapping_sub(a)
}

/// An empty region lasting more than this many times the median was interrupted.
const INTERRUPTED_OVER_MEDIAN: u64 = 10;

/// The median (upper middle value) and the mean of tick counts; the slice is sorted. The mean
/// leaves out the regions longer than [`INTERRUPTED_OVER_MEDIAN`] × the median: an interrupt
/// or a preemption landed in them, which is no cost of the timer, and one 1 ms preemption
/// among 100,000 regions would add 23 ticks (at 2.3 GHz) to the mean of all.
pub fn median_and_mean(ticks: &mut [u64]) -> (f64, f64) {
    if ticks.is_empty() {
        return (0.0, 0.0);
    }
    ticks.sort_unstable();
    let median = ticks[ticks.len() / 2];
    let limit = median.saturating_mul(INTERRUPTED_OVER_MEDIAN).max(1);
    let kept = &ticks[..ticks.partition_point(|&t| t <= limit)];
    let sum: u128 = kept.iter().map(|&t| u128::from(t)).sum();
    (median as f64, sum as f64 / kept.len() as f64)
}

/// Share of the non-zero differences that must be multiples of the step.
const STEP_AGREEMENT: f64 = 0.99;

/// The step of a counter, from differences between pairs of its reads: the largest divisor
/// of the most frequent non-zero difference of which at least 99 % of the non-zero
/// differences are multiples (see the module doc). Zero differences (the counter did not
/// move) say nothing and are ignored; `None` when every difference is zero.
///
/// The differences must come from reads spaced by varying amounts: a constant spacing of
/// `k` ticks makes every difference a multiple of `k` whatever the counter's step.
pub fn counter_step(diffs: &[u64]) -> Option<u64> {
    let mut moved: Vec<u64> = diffs.iter().copied().filter(|&d| d > 0).collect();
    if moved.is_empty() {
        return None;
    }
    moved.sort_unstable();
    // The most frequent value (the smallest of equally frequent ones).
    let (mut mode, mut best, mut run) = (moved[0], 0usize, 0usize);
    for (i, &d) in moved.iter().enumerate() {
        run = if i > 0 && moved[i - 1] == d { run + 1 } else { 1 };
        if run > best {
            (mode, best) = (d, run);
        }
    }
    let needed = (STEP_AGREEMENT * moved.len() as f64).ceil() as usize;
    divisors(mode).into_iter().rev().find(|&g| moved.iter().filter(|&&d| d % g == 0).count() >= needed).or(Some(1))
}

/// The divisors of `n > 0`, ascending.
fn divisors(n: u64) -> Vec<u64> {
    let (mut low, mut high) = (Vec::new(), Vec::new());
    let mut i = 1u64;
    while i.saturating_mul(i) <= n {
        if n.is_multiple_of(i) {
            low.push(i);
            if i != n / i {
                high.push(n / i);
            }
        }
        i += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invariant_x86() -> CounterFacts {
        CounterFacts {
            available: true,
            invariant_cpuid: Some(true),
            constant_and_nonstop: true,
            rdtscp: true,
            stated_hz: None,
            architecturally_constant: false,
        }
    }

    #[test]
    fn invariant_counter_is_used() {
        let c = invariant_x86().choose();
        assert_ne!(c.kind, TimerKind::MonotonicRaw);
        assert_eq!(c.fallback_reason, None);
    }

    #[test]
    fn non_invariant_counter_falls_back_with_reason() {
        let facts = CounterFacts { invariant_cpuid: Some(false), constant_and_nonstop: false, ..invariant_x86() };
        let c = facts.choose();
        assert_eq!(c.kind, TimerKind::MonotonicRaw);
        assert!(c.fallback_reason.unwrap().contains("invariant"));
    }

    #[test]
    fn unknown_invariance_falls_back() {
        let facts = CounterFacts { invariant_cpuid: None, constant_and_nonstop: false, ..invariant_x86() };
        assert_eq!(facts.choose().kind, TimerKind::MonotonicRaw);
    }

    #[test]
    fn kernel_flags_count_when_cpuid_bit_is_hidden() {
        let facts = CounterFacts { invariant_cpuid: Some(false), ..invariant_x86() };
        assert_eq!(facts.choose().invariant, Some(true));
    }

    #[test]
    fn missing_rdtscp_falls_back() {
        let facts = CounterFacts { rdtscp: false, ..invariant_x86() };
        assert!(facts.choose().fallback_reason.unwrap().contains("rdtscp"));
    }

    #[test]
    fn stated_frequency_used_only_when_it_agrees() {
        assert_eq!(pick_frequency(Some((2.0e9, "x")), 2.005e9).0, 2.0e9);
        assert_eq!(pick_frequency(Some((2.0e9, "x")), 2.5e9).0, 2.5e9);
        assert_eq!(pick_frequency(None, 2.5e9).0, 2.5e9);
    }

    /// Differences between pairs of reads of a counter that steps by `step` ticks, the reads
    /// spaced by 30–330 ticks of varying time plus sub-tick jitter (in 1/16 ticks).
    fn stepping_counter(step: u64, pairs: usize) -> Vec<u64> {
        let mut rng = 12_345u64;
        let mut next = move || {
            rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            rng >> 33
        };
        let read = |t16: u64| (t16 / 16 + 7) / step * step;
        let mut t16 = 1_000_000u64;
        (0..pairs)
            .map(|_| {
                let a = read(t16);
                t16 += (30 + next() % 300) * 16 + next() % 16;
                let b = read(t16);
                t16 += 100 * 16 + next() % 64;
                b - a
            })
            .collect()
    }

    #[test]
    fn the_step_of_synthetic_counters_is_found() {
        for step in [1, 8, 40] {
            assert_eq!(counter_step(&stepping_counter(step, 5_000)), Some(step), "step {step}");
        }
    }

    #[test]
    fn a_coarse_counter_that_mostly_does_not_move_still_shows_its_step() {
        // A step of 1,000 ticks read ~200 ticks apart: most differences are 0.
        let d = stepping_counter(1_000, 5_000);
        assert!(d.iter().filter(|&&x| x == 0).count() > d.len() / 2);
        assert_eq!(counter_step(&d), Some(1_000));
        assert_eq!(counter_step(&[0, 0, 0]), None);
        assert_eq!(counter_step(&[]), None);
    }

    #[test]
    fn rare_exceptions_do_not_decide_the_step_but_common_ones_do() {
        let mut d = stepping_counter(8, 10_000);
        // 0.5 %: a read pair straddling a change of the counter's offset.
        for x in d.iter_mut().step_by(200) {
            *x += 3;
        }
        assert_eq!(counter_step(&d), Some(8));
        // 5 %: the values really are not all multiples of 8.
        for x in d.iter_mut().skip(1).step_by(20) {
            *x += 1;
        }
        assert_eq!(counter_step(&d), Some(1));
    }

    #[test]
    fn back_to_back_reads_are_no_probe_of_the_step() {
        // Constant spacing makes every difference a multiple of it: why the probes spin.
        assert_eq!(counter_step(&[36; 1_000]), Some(36));
    }

    #[test]
    fn divisors_are_complete_and_ascending() {
        assert_eq!(divisors(1), vec![1]);
        assert_eq!(divisors(36), vec![1, 2, 3, 4, 6, 9, 12, 18, 36]);
        assert_eq!(divisors(13), vec![1, 13]);
    }

    #[test]
    fn overhead_median_and_mean_of_a_skewed_distribution() {
        // Skewed to the right: the mean is above the median; the interrupted region (3,600
        // ticks, over 10 × the median) is left out of the mean.
        let mut t = vec![36, 34, 36, 36, 38, 36, 40, 42, 36, 3_600];
        let (median, mean) = median_and_mean(&mut t);
        assert_eq!(median, 36.0);
        assert!((mean - 334.0 / 9.0).abs() < 1e-9, "{mean}");
        // Regions of zero ticks (a coarse clock that did not move) keep every value.
        assert_eq!(median_and_mean(&mut [0, 0, 0, 1]), (0.0, 0.25));
        assert_eq!(median_and_mean(&mut []), (0.0, 0.0));
    }

    #[test]
    fn timer_overheads_median_and_mean() {
        let t = Timer::with_scale(TimerKind::MonotonicRaw, 1.0);
        let one = Timer::with_overhead(t, 30.0);
        assert_eq!((one.overhead_ticks(), one.overhead_mean_ticks()), (30.0, 30.0));
        let two = Timer::with_overheads(t, 30.0, 33.5);
        assert_eq!((two.overhead_ticks(), two.overhead_mean_ticks()), (30.0, 33.5));
    }

    #[test]
    fn fallback_timer_measures_nanoseconds() {
        let facts = CounterFacts { available: false, ..CounterFacts::default() };
        let (timer, info) = detect_with(&facts);
        assert_eq!(info.kind, TimerKind::MonotonicRaw);
        assert_eq!(info.freq_hz, 1e9);
        let a = timer.start();
        std::thread::sleep(Duration::from_millis(2));
        let b = timer.stop();
        // Ratio against std's clock over the same interval, not an absolute time.
        assert!(b > a);
        // Nanosecond ticks: no step finer than one.
        assert!(info.resolution_ns >= 1.0);
    }

    #[test]
    fn this_machines_timer_is_monotonic_and_has_overhead() {
        let (timer, info) = detect();
        assert!(info.freq_hz > 0.0);
        assert!(info.overhead_ticks >= 0.0);
        assert!(timer.overhead_mean_ticks() > 0.0);
        assert_eq!(info.overhead_mean_ticks, Some(timer.overhead_mean_ticks()));
        // The counter steps no coarser than the cheapest read it can see.
        assert!(info.resolution_ns > 0.0);
        assert!(info.read_cost_ns.unwrap() >= info.resolution_ns, "{info:?}");
        let a = timer.start();
        let b = timer.stop();
        assert!(b >= a);
    }
}
