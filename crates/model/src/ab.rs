//! The result file of `osprim ab`: two conditions measured side by side in one invocation,
//! versioned by [`AB_SCHEMA`] and told apart from a run's file by `"kind": "ab"`.
//!
//! The file keeps everything needed to check or redo the analysis: both conditions as given,
//! the design (seed, order of every pair, mode, stopping rule, noise threshold), each side as a
//! run of its own ([`RunFile`]: machine, clock, placement, worker processes and every sample,
//! round `i` of either side being pair `i`'s half), and per row every pair's two figures and
//! the decision taken from them. The format is documented in `docs/ab.md`.

use crate::{BuildInfo, Params, ResultFileError, RunFile, Unit};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Format version of an A/B result file.
pub const AB_SCHEMA: u32 = 1;

/// The `kind` of an A/B result file.
pub const AB_KIND: &str = "ab";

/// An `osprim ab` result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AbFile {
    /// [`AB_KIND`].
    pub kind: String,
    /// [`AB_SCHEMA`].
    pub schema: u32,
    /// The build that measured.
    pub osprim: BuildInfo,
    /// UTC start, RFC 3339.
    pub started_utc: String,
    /// UTC end, RFC 3339; absent while it measures, or when a signal cut it short.
    pub finished_utc: Option<String>,
    /// True while it measures, or when it was cut short.
    pub partial: bool,
    /// The command line (passwords redacted).
    pub command: Vec<String>,
    /// A random id drawn at the start (32 hex digits).
    pub run_id: String,
    /// The name the fleet knows the machine by (`--host`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// How the pairs were taken and judged.
    pub design: Design,
    /// Condition A (the base of every ratio B / A).
    pub a: Condition,
    /// Condition B.
    pub b: Condition,
    /// Every pair in the order measured.
    pub pairs: Vec<Pair>,
    /// Why it stopped adding pairs.
    pub stopped: String,
    /// Per row: its pairs' figures and the decision.
    pub rows: Vec<AbRow>,
    /// Condition A's rounds as a run (round `i` is pair `i`'s half; rows decided early have
    /// fewer rounds).
    pub a_run: RunFile,
    /// Condition B's rounds as a run.
    pub b_run: RunFile,
}

impl AbFile {
    /// The host it is recorded and shown under: `host` when given, else the kernel's name.
    pub fn host_name(&self) -> &str {
        self.host.as_deref().unwrap_or(&self.a_run.machine.hostname)
    }
}

/// How the pairs were taken and judged.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Design {
    /// `interleaved` (A and B one after the other on one CPU) or `duet` (at the same time,
    /// one on each of two CPUs, swapping CPUs every pair).
    pub mode: Mode,
    /// A against A (`osprim ab --check`): both sides run condition A.
    pub check: bool,
    /// The seed of the order and of the worker layouts.
    pub seed: u64,
    /// The noise threshold (0.02 = 2 %).
    pub noise: f64,
    /// The error rate of each row's confidence sequence over all looks.
    pub alpha: f64,
    /// The number of pairs at which the sequence is tightest.
    pub tightest_at: f64,
    /// Fewest pairs before a row may be decided.
    pub min_pairs: usize,
    /// The most the pairs may take, s.
    pub budget_s: f64,
    /// Sampler budget of one row in one round, s.
    pub round_budget_s: f64,
    /// The statistic and the interval, in words.
    pub method: String,
    /// The CPU of the interleaved rounds.
    pub cpu: usize,
    /// The two CPUs of a duet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duet_cpus: Option<[usize; 2]>,
}

/// How A and B share the machine.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One after the other on one CPU, in a random balanced order.
    Interleaved,
    /// At the same time on two CPUs (Bulej et al., ICPE 2020).
    Duet,
}

/// What differs between A and B, as given on the command line.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Condition {
    /// `A` or `B`.
    pub name: String,
    /// The prefix command that ends by running the worker (`env LD_PRELOAD=…`), split into
    /// words; empty: the worker is started directly.
    pub prefix: Vec<String>,
    /// Run (by `sh -c`) before each of its rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// Run (by `sh -c`) after each of its rounds, whatever happened in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// The osprim binary whose worker measures it; absent: this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

impl Condition {
    /// The condition in one line: `plain worker`, `env LD_PRELOAD=x.so`, `set-up 'sysctl …'`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.prefix.is_empty() {
            parts.push(self.prefix.join(" "));
        }
        if let Some(b) = &self.binary {
            parts.push(format!("binary {b}"));
        }
        if let Some(s) = &self.setup {
            parts.push(format!("set-up '{s}'"));
        }
        if let Some(t) = &self.teardown {
            parts.push(format!("tear-down '{t}'"));
        }
        if parts.is_empty() { "the plain worker".to_string() } else { parts.join(", ") }
    }
}

/// One pair: an A round and a B round measured together.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Pair {
    /// Which ran first (`ab` or `ba`); in a duet, which took the first CPU.
    pub order: String,
    /// The CPUs of A and B.
    pub cpus: [usize; 2],
    /// The rows measured in it.
    pub rows: usize,
    /// Seconds since the start when it began.
    pub at_s: f64,
    /// Seconds it took, set-ups and tear-downs included.
    pub took_s: f64,
}

/// One row: a benchmark under one parameter set, in both conditions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AbRow {
    /// Benchmark id.
    pub id: String,
    /// Its parameters.
    pub params: Params,
    /// Unit of its figures.
    pub unit: Unit,
    /// Every complete pair of this row: its index in [`AbFile::pairs`] and the two rounds'
    /// figures (each round's median), `[a, b]`.
    pub pairs: Vec<RowPair>,
    /// The decision taken from them.
    pub decision: Decision,
    /// Whether its pairs ran as a duet (a row that needs both CPUs itself runs interleaved).
    pub duet: bool,
    /// Why it has no decision, or a remark (skipped, failed in a round, unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One complete pair of a row.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct RowPair {
    /// Its index in [`AbFile::pairs`].
    pub pair: usize,
    /// A's figure in it (the round's median).
    pub a: f64,
    /// B's figure in it.
    pub b: f64,
}

/// What the pairs of a row say.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Decision {
    /// `slower`, `faster`, `no_change` or `inconclusive`.
    pub verdict: String,
    /// B / A: the median over pairs of each pair's ratio.
    pub ratio: Option<f64>,
    /// Its interval from the confidence sequence, at the last look.
    pub ratio_ci95: Option<[f64; 2]>,
    /// The number of pairs after which it was decided (it got no more); absent when it was
    /// not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_after: Option<usize>,
}

/// One recorded A/B result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbPoint {
    /// When the invocation started (UTC).
    pub started_utc: String,
    /// Its host.
    pub host: String,
    /// Its kernel release.
    pub kernel: String,
    /// Condition A, in one line.
    pub a: String,
    /// Condition B, in one line.
    pub b: String,
    /// `interleaved` or `duet`.
    pub mode: String,
    /// Benchmark id.
    pub id: String,
    /// Parameters, as JSON text.
    pub params: String,
    /// Unit symbol.
    pub unit: String,
    /// `slower`, `faster`, `no_change`, `inconclusive`.
    pub verdict: String,
    /// B / A.
    pub ratio: Option<f64>,
    /// Its interval.
    pub ratio_ci95: Option<[f64; 2]>,
    /// Pairs it took.
    pub pairs: i64,
    /// Whether it was decided.
    pub decided: bool,
    /// The result file, if it was saved.
    pub file: Option<String>,
}

/// Whether the JSON text `value` is an A/B result (its `kind`).
pub fn is_ab_value(value: &serde_json::Value) -> bool {
    value.get("kind").and_then(|k| k.as_str()) == Some(AB_KIND)
}

/// Whether the file at `path` is an A/B result (cheap: reads it whole, as a reader would).
pub fn is_ab_file(path: &Path) -> bool {
    crate::read_capped(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| is_ab_value(&v))
}

/// Reads an A/B result file, refusing anything else with one clear line.
pub fn read_ab_file(path: &Path) -> Result<AbFile, ResultFileError> {
    let text = crate::read_capped(path)?;
    let not = |detail: String| ResultFileError::NotOsprim { path: path.into(), detail };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| not(if e.is_eof() { "the file is truncated".into() } else { format!("invalid JSON ({e})") }))?;
    if !is_ab_value(&value) {
        return Err(not("it is not an A/B result of osprim ab".into()));
    }
    match value.get("schema").and_then(|s| s.as_u64()) {
        Some(s) if s == u64::from(AB_SCHEMA) => {}
        Some(s) => return Err(not(format!("it has A/B schema {s}; this osprim reads {AB_SCHEMA}"))),
        None => return Err(not("no \"schema\" field".into())),
    }
    serde_json::from_value(value).map_err(|e| not(format!("unexpected content ({e})")))
}
