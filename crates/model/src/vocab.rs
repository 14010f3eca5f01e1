//! The vocabulary the layers share: parameters, checks, sampling methods and stop reasons,
//! units, and the derivations computed from measured results. Data only.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of one result (placement, size, …), recorded in the result file.
pub type Params = BTreeMap<String, serde_json::Value>;

/// One self-check: what was expected, what was seen, and whether they agree.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// The expectation.
    pub expected: String,
    /// What was seen (or why nothing could be seen).
    pub observed: String,
    /// `Some(true)` passed, `Some(false)` failed, `None` could not be checked.
    pub ok: Option<bool>,
}

impl Check {
    /// A check that was made.
    pub fn new(name: impl Into<String>, expected: impl Into<String>, observed: impl Into<String>, ok: bool) -> Check {
        Check { name: name.into(), expected: expected.into(), observed: observed.into(), ok: Some(ok) }
    }

    /// A check that could not be made, and why.
    pub fn impossible(name: impl Into<String>, why: impl Into<String>) -> Check {
        Check { name: name.into(), expected: "-".into(), observed: why.into(), ok: None }
    }

    /// "`count` of `total` operations returned the expected value".
    pub fn all_ok(name: impl Into<String>, failures: u64, total: u64) -> Check {
        Check::new(name, format!("0 failures in {total}"), format!("{failures} failures"), failures == 0)
    }
}

/// How samples are taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Warm-up, sized batches, stop when the median's CI meets the target.
    #[default]
    Adaptive,
    /// Single-operation runs (10,000 kept, 100 discarded per round), mean reported.
    Seed,
}

/// Why sampling stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The median's CI met the target.
    TargetMet,
    /// The time budget ran out first.
    BudgetSpent,
    /// The target was out of reach: even the whole budget would have left the interval over
    /// twice as wide as the target.
    OutOfReach,
    /// The sample cap was reached.
    SampleCap,
    /// The seed method's fixed count was reached.
    FixedCount,
    /// Ctrl-C.
    Interrupted,
    /// The routine gave up (its benchmark says why).
    Aborted,
}

/// The parameter that carries a message size in bytes.
pub const SIZE_PARAM: &str = "bytes";

/// A parameter that counts units of work (instructions of a filter, operations of a batch):
/// rows that differ only in it are fitted as fixed cost + cost per unit after the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountParam {
    /// The parameter's name.
    pub name: &'static str,
    /// What one unit is, e.g. "instruction".
    pub unit: &'static str,
    /// Whether the row's figure is per unit (ns per operation at batch b, so the cost of the
    /// whole call is figure × b) rather than per call (ns per call under an n-instruction filter).
    pub figure_per_unit: bool,
}

/// The count parameters: `insns` (a seccomp filter's length; figures per call) and `batch`
/// (operations per submission; figures per operation).
pub const COUNT_PARAMS: [CountParam; 2] = [
    CountParam { name: "insns", unit: "instruction", figure_per_unit: false },
    CountParam { name: "batch", unit: "operation", figure_per_unit: true },
];

/// A result computed from measured ones after the run.
#[derive(Debug, Clone, Copy)]
pub struct Derivation {
    /// Its id, e.g. `ctx.address_space`.
    pub id: &'static str,
    /// What it measures.
    pub about: &'static str,
    /// How it is computed.
    pub rule: Rule,
}

/// How a derived result is computed.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// The difference of two benchmarks' medians under equal parameters, with a bootstrap CI.
    Difference {
        /// The benchmark subtracted from.
        minuend: &'static str,
        /// The benchmark subtracted.
        subtrahend: &'static str,
    },
    /// Another benchmark's samples times a factor, for its results at one message size (a
    /// result without a size counts as 0 bytes); e.g. a null RPC: the whole ping-pong whose
    /// half is `ipc.pipe`, at 0 bytes.
    Scaled {
        /// The measured benchmark.
        source: &'static str,
        /// Each sample is multiplied by this.
        factor: f64,
        /// The message size the source result must have.
        bytes: u64,
    },
}

impl Derivation {
    /// A difference `minuend − subtrahend`.
    pub const fn difference(
        id: &'static str,
        about: &'static str,
        minuend: &'static str,
        subtrahend: &'static str,
    ) -> Derivation {
        Derivation { id, about, rule: Rule::Difference { minuend, subtrahend } }
    }

    /// `factor ×` the results of `source` at `bytes`.
    pub const fn scaled(
        id: &'static str,
        about: &'static str,
        source: &'static str,
        factor: f64,
        bytes: u64,
    ) -> Derivation {
        Derivation { id, about, rule: Rule::Scaled { source, factor, bytes } }
    }

    /// The measured benchmarks it needs.
    pub fn sources(&self) -> Vec<&'static str> {
        match self.rule {
            Rule::Difference { minuend, subtrahend } => vec![minuend, subtrahend],
            Rule::Scaled { source, .. } => vec![source],
        }
    }

    /// "ctx.process − ctx.thread", "2 × ipc.pipe at 0 bytes".
    pub fn formula(&self) -> String {
        match self.rule {
            Rule::Difference { minuend, subtrahend } => format!("{minuend} − {subtrahend}"),
            Rule::Scaled { source, factor, bytes } => format!("{factor} × {source} at {bytes} bytes"),
        }
    }
}

/// Whether a parameter value reads as `want`: strings as they are, numbers and booleans as
/// written (`"0"` is the number 0).
pub fn param_is(v: &serde_json::Value, want: &str) -> bool {
    match v {
        serde_json::Value::String(s) => s == want,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|x| want.parse::<f64>().ok() == Some(x)),
        serde_json::Value::Bool(b) => want.parse::<bool>().ok() == Some(*b),
        _ => false,
    }
}
