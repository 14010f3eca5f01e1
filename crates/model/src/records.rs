//! The records of how a run measured: the sampler's settings ([`SamplerSettings`]), the
//! overrides a benchmark declares for its own rows ([`SamplingOverride`]) and the clock
//! ([`TimerInfo`]), as the result file stores them. The sampler and the timer convert
//! into these; a new field of theirs changes the file only when it is added here.

use serde::{Deserialize, Serialize};

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
    /// Mean cost of the same start/stop pairs (`None` in files written before it was
    /// recorded).
    #[serde(default)]
    pub overhead_mean_ns: Option<f64>,
    /// The same in ticks.
    #[serde(default)]
    pub overhead_mean_ticks: Option<f64>,
    /// The counter's step: the granularity of the values it takes (`timer::counter_step`). In
    /// files written before `read_cost_ns` existed, this field held the read cost instead.
    pub resolution_ns: f64,
    /// Smallest non-zero difference between a `stop` and the next `start`: the cost of a
    /// read (`None` in files written before it was recorded).
    #[serde(default)]
    pub read_cost_ns: Option<f64>,
    /// The overhead calibrated at the start of each round, beside the benchmarks and through
    /// the sampler's path, per region shape; what the samples of that round had subtracted
    /// (empty in files written before it was calibrated per round, whose samples had
    /// `overhead_ticks` subtracted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overhead_by_round: Vec<RoundOverhead>,
}

/// The timer overhead calibrated in one round (`bench::overhead`), in ticks, and what was
/// subtracted in ns: one loop-shape overhead from every sample of a `Ctx::iter` routine, one
/// region-shape overhead per timed region of a routine that times itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundOverhead {
    /// The round (from 0).
    pub round: usize,
    /// Median of empty regions of `Ctx::iter`'s shape (start, a loop of one empty operation,
    /// stop), reached through the sampler.
    pub loop_ticks: f64,
    /// Their mean (regions over 10 × the median left out).
    pub loop_mean_ticks: f64,
    /// Median of empty regions of a self-timing routine's shape (start, one operation, stop,
    /// inside the routine's loop).
    pub region_ticks: f64,
    /// Their mean.
    pub region_mean_ticks: f64,
    /// Subtracted from each sample of a `Ctx::iter` routine, ns (the median under the adaptive
    /// method, the mean under the seed method).
    pub subtracted_loop_ns: f64,
    /// Subtracted from a sample of a self-timing routine that timed it in one region, ns;
    /// a sample of several regions had `region_mean_ticks` subtracted per region.
    pub subtracted_region_ns: f64,
}

impl TimerInfo {
    /// A nanosecond clock with no overhead and a 1 ns step, for tests of what comes after
    /// measuring.
    #[doc(hidden)]
    pub fn for_tests() -> TimerInfo {
        TimerInfo {
            kind: TimerKind::MonotonicRaw,
            freq_hz: 1e9,
            freq_source: "test".into(),
            calibrated_hz: None,
            stated_hz: None,
            invariant: None,
            invariant_source: "test".into(),
            fallback_reason: None,
            overhead_ns: 0.0,
            overhead_ticks: 0.0,
            overhead_mean_ns: Some(0.0),
            overhead_mean_ticks: Some(0.0),
            resolution_ns: 1.0,
            read_cost_ns: Some(1.0),
            overhead_by_round: Vec::new(),
        }
    }

    /// Keeps what one round subtracted (one record per round; the first kept wins).
    pub fn keep_overhead(&mut self, o: &RoundOverhead) {
        if !self.overhead_by_round.iter().any(|k| k.round == o.round) {
            self.overhead_by_round.push(o.clone());
        }
    }

    /// Frequency of the cycle counter in Hz when there is one (for "cycles at TSC frequency").
    pub fn counter_hz(&self) -> Option<f64> {
        match self.kind {
            TimerKind::MonotonicRaw => self.calibrated_hz,
            _ => Some(self.freq_hz),
        }
    }
}

/// The sampler's settings as the result file records them (`config`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplerSettings {
    /// Sampling method.
    pub method: crate::Method,
    /// Time budget of one benchmark over all its rounds (warm-up excluded), in seconds.
    pub budget_s: f64,
    /// Minimum warm-up time over all rounds, in seconds.
    pub warmup_s: f64,
    /// Minimum warm-up operations per round.
    pub warmup_iters: u64,
    /// Target relative half-width of the median's 95 % CI (0.01 = 1 %).
    pub ci_target_rel: f64,
    /// Fewest samples taken per round.
    pub min_samples: usize,
    /// Most samples taken per round.
    pub max_samples: usize,
    /// A sample lasts at least this many timer resolutions (and overheads).
    pub min_sample_resolutions: f64,
    /// Rounds over the benchmarks (1 in files written before rounds).
    #[serde(default = "one")]
    pub rounds: usize,
    /// The most rounds a result could get: a result whose interval over its rounds still
    /// missed `ci_target_rel` after `rounds` got more, one at a time, up to this many, while
    /// the run's time for them lasted (`osprim run` without `--rounds`). Equal to `rounds`: a
    /// fixed count (`--rounds N`, the seed method). Absent from files written before rounds
    /// could grow, whose count was fixed ([`SamplerSettings::most_rounds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_max: Option<usize>,
    /// Single-operation samples per benchmark over the run (`--tail`); 0 for none.
    #[serde(default)]
    pub tail_samples: usize,
    /// Hardware counters asked for (`--counters`); absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counters: bool,
}

fn one() -> usize {
    1
}

impl SamplerSettings {
    /// The most rounds a result could get: `rounds_max`, `rounds` in older files (never fewer
    /// than `rounds`). A row's own count is the length of its `samples_per_round`.
    pub fn most_rounds(&self) -> usize {
        self.rounds_max.unwrap_or(self.rounds).max(self.rounds)
    }
}

/// What a benchmark declares it samples differently from the run's settings (a row's
/// `sampling`): the runner applies it to each round's settings before the benchmark runs, and
/// the row records it. Every field is optional; an override with none is no override.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingOverride {
    /// Each round's budget is the run's times this (e.g. 0.5 for a family of many rows, to
    /// keep the family within its time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_factor: Option<f64>,
    /// Operations per sample, fixed instead of chosen by the first round (e.g. 1: one child
    /// process per sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// The warm-up is cut to about this share of the round's budget (at least 3 operations),
    /// at the cost per operation the benchmark estimated before sampling (operations of
    /// milliseconds, which the run's fixed warm-up count would stretch past the budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_share: Option<f64>,
}

impl SamplingOverride {
    /// Whether it changes nothing.
    pub fn is_none(&self) -> bool {
        *self == SamplingOverride::default()
    }

    /// `Some(self)` when it changes something (what a row records), else `None`.
    pub fn declared(self) -> Option<SamplingOverride> {
        (!self.is_none()).then_some(self)
    }
}

/// One availability probe of the measuring CPU: a spin of the pinned measuring thread between
/// rounds, the gaps between its clock reads being time the CPU spent elsewhere.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Probe {
    /// Taken before this round (counted from 0); the number of rounds means after the last.
    pub before_round: u16,
    /// The CPU probed (the measuring CPU).
    pub cpu: usize,
    /// How long it spun, ns.
    pub window_ns: f64,
    /// Time lost to gaps of 1 µs or more between two clock reads, ns.
    pub lost_ns: f64,
    /// How many such gaps.
    pub gaps: u64,
    /// The longest gap, ns.
    pub longest_gap_ns: f64,
}

impl Probe {
    /// A probe that lost more than this share of its window found the CPU busy: well above
    /// what timer interrupts take from an idle guest (4-12 % here, at about 27 µs a tick),
    /// well below the half a CPU shared with one busy task loses.
    pub const BUSY_FRACTION: f64 = 0.2;

    /// Whether the CPU was busy elsewhere during the probe.
    pub fn busy(&self) -> bool {
        self.lost_fraction() > Probe::BUSY_FRACTION
    }

    /// The share of the window lost, 0 to 1.
    pub fn lost_fraction(&self) -> f64 {
        if self.window_ns > 0.0 { (self.lost_ns / self.window_ns).clamp(0.0, 1.0) } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::SamplingOverride;
    use crate::{Method, Params, Row};

    #[test]
    fn a_row_records_a_declared_override_and_nothing_without_one() {
        let mut row = Row::empty("a.b", "a b", Params::new(), Method::Adaptive);
        let plain = serde_json::to_value(&row).unwrap();
        assert!(plain.get("sampling").is_none(), "no override, no field: {plain}");
        row.sampling = SamplingOverride { batch: Some(1), ..Default::default() }.declared();
        let text = serde_json::to_string(&row).unwrap();
        assert!(text.contains(r#""sampling":{"batch":1}"#), "{text}");
        let back: Row = serde_json::from_str(&text).unwrap();
        assert_eq!(back.sampling, row.sampling);
        // A row of a file written before overrides were recorded reads as one without.
        let old: Row = serde_json::from_value(plain).unwrap();
        assert_eq!(old.sampling, None);
        assert_eq!(SamplingOverride::default().declared(), None);
    }
}
