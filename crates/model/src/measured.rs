//! What a benchmark hands over: its samples ([`Samples`], in time order, as the sampler took
//! them in one round) with its checks and notes ([`Measured`]), or why there are none
//! ([`NotMeasured`]). The journal keeps these as they come; analysis turns them into rows.

use crate::{Check, Params, StopReason, Unit};
use serde::{Deserialize, Serialize};

/// What a benchmark measured.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Measured {
    /// The samples.
    pub samples: Samples,
    /// The unit of the samples: ns per operation unless the benchmark says otherwise (e.g.
    /// bytes per object).
    pub unit: Unit,
    /// Self-checks.
    pub checks: Vec<Check>,
    /// Remarks for the reader.
    pub notes: Vec<String>,
    /// Extra parameters learnt while running (e.g. the CPUs the two ends ran on).
    pub params: Params,
    /// Observations besides the samples (e.g. context switches per message), which do not
    /// define the result.
    pub observed: Params,
    /// Per-stage samples (ns per operation), for benchmarks that break their time down
    /// (e.g. "trap", "other"); each stage is summarised like the total.
    pub breakdown: Vec<(String, Vec<f64>)>,
}

impl Measured {
    /// Samples with checks.
    pub fn new(samples: Samples, checks: Vec<Check>) -> Measured {
        Measured { samples, checks, ..Measured::default() }
    }

    /// Adds a note.
    pub fn note(mut self, note: impl Into<String>) -> Measured {
        self.notes.push(note.into());
        self
    }
}

/// Why a benchmark produced no samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotMeasured {
    /// Cannot run here (permission, kernel feature, hardware); the run goes on.
    Skipped(String),
    /// An error while measuring.
    Failed(String),
}

/// What the sampler took in one round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Samples {
    /// Nanoseconds per operation, one per sample, in time order.
    pub per_op_ns: Vec<f64>,
    /// Operations per sample.
    pub iterations_per_sample: u64,
    /// Operations run during warm-up.
    pub warmup_iterations: u64,
    /// Why sampling stopped (`None` if it never started).
    pub stop: Option<StopReason>,
    /// Batch-size check: per-operation estimates `[one batch of 8m, mean of eight batches of m
    /// around it]`, `m = max(1, n/8)`.
    pub batch_check: Vec<[f64; 2]>,
    /// Single-operation samples (`--tail`), ns, in time order.
    pub single_op_ns: Vec<f64>,
    /// Hardware counts per operation of the same samples (`--counters`), or why none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::counters::CounterSamples>,
    /// Cold-cache mode only: the hot twin of each sample of `per_op_ns` (same index), the
    /// same operation timed right after the cold one; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hot_twin_ns: Vec<f64>,
    /// Cold-cache mode with `--counters` only: the hardware counts per operation of each hot
    /// twin (same index as `hot_twin_ns`), while `counters` holds the cold samples'; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_twin_counters: Option<crate::counters::CounterSamples>,
}
