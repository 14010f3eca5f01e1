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

pub mod clock;
pub mod sync;
pub mod tsc;

use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The clock a run measured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// x86_64 time-stamp counter.
    Tsc,
    /// aarch64 virtual counter.
    Cntvct,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`, in nanoseconds.
    MonotonicRaw,
}

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

/// The timer a run measures with. Cheap to copy; `start`/`stop` are inlined.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    kind: TimerKind,
    ns_per_tick: f64,
    overhead_ticks: f64,
}

impl Timer {
    /// Reads the clock at the start of a timed region.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        match self.kind {
            TimerKind::MonotonicRaw => clock::monotonic_raw_ns(),
            _ => tsc::start(),
        }
    }

    /// Reads the clock at the end of a timed region.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        match self.kind {
            TimerKind::MonotonicRaw => clock::monotonic_raw_ns(),
            _ => tsc::stop(),
        }
    }

    /// Converts ticks of this timer to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: f64) -> f64 {
        ticks * self.ns_per_tick
    }

    /// Ticks a back-to-back `start`/`stop` pair costs (subtracted from every sample).
    pub fn overhead_ticks(&self) -> f64 {
        self.overhead_ticks
    }

    /// The clock in use.
    pub fn kind(&self) -> TimerKind {
        self.kind
    }

    /// A timer with the given kind and scale and no overhead (tests and calibration).
    pub fn with_scale(kind: TimerKind, ns_per_tick: f64) -> Timer {
        Timer { kind, ns_per_tick, overhead_ticks: 0.0 }
    }

    /// The same timer with a given overhead in ticks (tests).
    pub fn with_overhead(timer: Timer, overhead_ticks: f64) -> Timer {
        Timer { overhead_ticks, ..timer }
    }
}

/// What the result file records about the timer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    /// The clock measured with.
    pub kind: TimerKind,
    /// Ticks per second of that clock (1e9 for `monotonic_raw`).
    pub freq_hz: f64,
    /// Where `freq_hz` came from.
    pub freq_source: String,
    /// The counter frequency calibrated against `CLOCK_MONOTONIC_RAW`, when a counter exists.
    pub calibrated_hz: Option<f64>,
    /// The frequency the hardware stated, when it stated one.
    pub stated_hz: Option<f64>,
    /// Whether the counter is invariant (`None`: unknown).
    pub invariant: Option<bool>,
    /// How invariance was established.
    pub invariant_source: String,
    /// Why the counter was not used, when it was not.
    pub fallback_reason: Option<String>,
    /// Median cost of a back-to-back start/stop pair, subtracted from each sample.
    pub overhead_ns: f64,
    /// The same in ticks.
    pub overhead_ticks: f64,
    /// Smallest non-zero difference seen between two successive reads.
    pub resolution_ns: f64,
}

impl TimerInfo {
    /// Frequency of the cycle counter in Hz when there is one (for "cycles at TSC frequency").
    pub fn counter_hz(&self) -> Option<f64> {
        match self.kind {
            TimerKind::MonotonicRaw => self.calibrated_hz,
            _ => Some(self.freq_hz),
        }
    }
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
    let mut timer = Timer::with_scale(choice.kind, 1e9 / freq_hz);
    let (overhead_ticks, resolution_ticks) = measure_overhead_and_resolution(&timer);
    timer.overhead_ticks = overhead_ticks;
    let info = TimerInfo {
        kind: choice.kind,
        freq_hz,
        freq_source,
        calibrated_hz,
        stated_hz,
        invariant: choice.invariant,
        invariant_source: choice.invariant_source,
        fallback_reason: choice.fallback_reason,
        overhead_ns: timer.ticks_to_ns(overhead_ticks),
        overhead_ticks,
        resolution_ns: timer.ticks_to_ns(resolution_ticks),
    };
    (timer, info)
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

/// Median ticks of an empty timed region, and the smallest non-zero step between reads.
fn measure_overhead_and_resolution(timer: &Timer) -> (f64, f64) {
    const PAIRS: usize = 20_000;
    let mut costs = Vec::with_capacity(PAIRS);
    let mut step = u64::MAX;
    for _ in 0..PAIRS {
        let a = timer.start();
        let b = timer.stop();
        costs.push(b.wrapping_sub(a));
        let c = timer.start();
        let d = c.wrapping_sub(b);
        if d > 0 && d < step {
            step = d;
        }
    }
    costs.sort_unstable();
    let overhead = costs[PAIRS / 2] as f64;
    let resolution = if step == u64::MAX { 1.0 } else { step as f64 };
    (overhead, resolution)
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
    }

    #[test]
    fn this_machines_timer_is_monotonic_and_has_overhead() {
        let (timer, info) = detect();
        assert!(info.freq_hz > 0.0);
        assert!(info.overhead_ticks >= 0.0);
        let a = timer.start();
        let b = timer.stop();
        assert!(b >= a);
    }
}
