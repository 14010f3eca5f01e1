//! Hardware counters (`--counters`): what a round counted beside its time
//! ([`CounterSamples`], in [`crate::Samples`]) and a row's summary of it ([`Counters`]).
//!
//! Counts are per operation, from the same samples as the time: the counters are read around
//! the sample's timed region, the reads' own cost (calibrated as an empty region) subtracted,
//! scaled up by `time_enabled / time_running` when the kernel multiplexed the group, and
//! divided by the sample's operations. A row that was asked for counters but has none says
//! why for each event ([`MissingEvent`]): no PMU on this machine, `perf_event_paranoid`, an
//! event the PMU lacks, or a benchmark that times its own regions.

use serde::{Deserialize, Serialize};

/// The events osprim counts, in order: `cycles` (core cycles), `instructions` (retired),
/// `llc_misses` (last-level-cache read misses), `dtlb_misses` (data-TLB read misses),
/// `branch_misses`.
pub const EVENT_NAMES: [&str; 5] = ["cycles", "instructions", "llc_misses", "dtlb_misses", "branch_misses"];

/// Why a row asked for counters has none, when its benchmark's samples do not come from a
/// counted loop.
pub const NOT_REACHED: &str = "not counted: this benchmark times its own regions and does not wrap them in \
                               the counting hook (Ctx::count_region) yet";

/// How a row's notes begin the note its counts carry ([`CounterSamples::note`]).
pub const COUNTS_NOTE: &str = "hardware counters: ";

/// One round's counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSamples {
    /// Each event counted, with its count per operation in every sample (the samples of
    /// `per_op_ns`, one to one; `null` where the counters did not run during the sample).
    pub events: Vec<EventSamples>,
    /// Events not counted, with why.
    pub missing: Vec<MissingEvent>,
    /// The smallest share of a sample's time the group was counting (`time_running /
    /// time_enabled`): 1 when never multiplexed; below 1 the counts were scaled up by its
    /// inverse.
    pub running_share_min: f64,
    /// What the counts cover when a benchmark says so (e.g. the measuring end only of a
    /// hand-off whose peer runs on another thread); absent otherwise. The row carries it
    /// among its notes, as `hardware counters: <note>` ([`COUNTS_NOTE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CounterSamples {
    /// Nothing counted: every event missing for `reason`.
    pub fn none(reason: &str) -> CounterSamples {
        CounterSamples {
            events: Vec::new(),
            missing: EVENT_NAMES.iter().map(|e| MissingEvent { event: e.to_string(), reason: reason.into() }).collect(),
            running_share_min: 1.0,
            note: None,
        }
    }
}

/// One event's count per operation, sample by sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventSamples {
    /// One of [`EVENT_NAMES`].
    pub event: String,
    /// Count per operation of each sample.
    pub per_op: Vec<Option<f64>>,
}

/// An event not counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissingEvent {
    /// One of [`EVENT_NAMES`].
    pub event: String,
    /// Why: no PMU, `perf_event_paranoid` and how to allow it, an event the PMU lacks, a
    /// benchmark whose regions are not counted.
    pub reason: String,
}

/// A row's counters: each counted event's mean per operation with its interval, and the
/// events it does not have with why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Counted events, in [`EVENT_NAMES`]' order.
    pub events: Vec<CounterSummary>,
    /// Events not counted, with why (each reason once per event).
    pub missing: Vec<MissingEvent>,
    /// The smallest share of a sample's time the group counted, over the row's samples (1:
    /// never multiplexed).
    pub running_share_min: f64,
}

impl Counters {
    /// The counted event `name`, if any.
    pub fn event(&self, name: &str) -> Option<&CounterSummary> {
        self.events.iter().find(|e| e.event == name)
    }
}

/// One event over a row's samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    /// One of [`EVENT_NAMES`].
    pub event: String,
    /// Mean count per operation over the samples.
    pub per_op: f64,
    /// Its 95 % interval (bootstrap of the mean over the samples).
    pub ci95: [f64; 2],
    /// Samples it is the mean of.
    pub samples: usize,
}

/// What a run could count (`--counters`), probed on the measuring CPU before measuring: the
/// events counted, and the others with why (no PMU, `perf_event_paranoid` and how to allow
/// it, an event the PMU lacks).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Availability {
    /// The events this machine counts, in [`EVENT_NAMES`]' order.
    pub counted: Vec<String>,
    /// The events it does not, with why.
    pub missing: Vec<MissingEvent>,
}
