//! Comparing runs: for each result present in a base run and a newer one (same id, same
//! parameters), the ratio of medians `new / base` with its 95 % CI from a bootstrap that
//! resamples rounds and blocks as they were taken ([`crate::stats::ratio`]), and a verdict;
//! and what differs between the two machines. Reads no clock and prints nothing.
//!
//! **Verdict.** `slower` when the whole interval lies above 1 and the estimate is more than
//! the noise threshold above it; `faster` likewise below; `no change` otherwise — either the
//! interval holds 1 (the runs cannot tell the two apart) or the change is within the noise
//! threshold (a real but immaterial difference, said as such).

use crate::model::{Params, Row, RunFile, Unit};
use crate::stats::ratio::{Ratio, Rounds, median_ratio};
use serde::Serialize;

/// Default noise threshold: changes smaller than this are `no change`.
pub const DEFAULT_NOISE: f64 = 0.02;

/// Bootstrap resamples per compared result.
pub const RESAMPLES: usize = 2_000;

/// Resamples for the quick look of `run --baseline` as each result comes in (the comparison
/// at the end uses [`RESAMPLES`]).
pub const QUICK_RESAMPLES: usize = 300;

/// Parameters that say where a result ran, not what it is: ignored when matching results.
const WHERE_IT_RAN: &[&str] = &["cpus"];

/// What a comparison concluded about one result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly faster by more than the noise threshold.
    Faster,
    /// Significantly slower by more than the noise threshold.
    Slower,
    /// Not significantly different, or within the noise threshold.
    NoChange,
}

impl Verdict {
    /// As printed.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
        }
    }
}

/// One result in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    /// Benchmark id.
    pub id: String,
    /// Its parameters (those that define it).
    pub params: Params,
    /// Unit of the medians.
    pub unit: Unit,
    /// Base median.
    pub base_median: f64,
    /// New median.
    pub new_median: f64,
    /// `new / base` and its 95 % CI.
    pub ratio: f64,
    /// 95 % CI of the ratio.
    pub ratio_ci95: [f64; 2],
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the interval excludes 1 (a difference the runs can tell), whatever its size.
    pub significant: bool,
}

/// A result the two runs do not both have, or could not compare.
#[derive(Clone, Debug, Serialize)]
pub struct Unmatched {
    /// Benchmark id.
    pub id: String,
    /// Its parameters.
    pub params: Params,
    /// Why it is not compared.
    pub why: String,
}

/// A machine fact that differs between the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// Dotted path, e.g. `machine.kernel.release`.
    pub what: String,
    /// In the base run.
    pub base: String,
    /// In the new run.
    pub new: String,
}

/// A whole comparison of `new` against `base`.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Noise threshold used (0.02 = 2 %).
    pub noise: f64,
    /// Results in both runs.
    pub compared: Vec<Compared>,
    /// Results in one run only, or without samples in one.
    pub unmatched: Vec<Unmatched>,
    /// What differs between the machines and builds.
    pub differences: Vec<Difference>,
}

impl Comparison {
    /// Results significantly slower (the interval above 1) by more than `pct` (0.05 = 5 %:
    /// the estimate above 1.05).
    pub fn regressions(&self, pct: f64) -> Vec<&Compared> {
        self.compared.iter().filter(|c| c.significant && c.ratio > 1.0 && c.ratio - 1.0 > pct).collect()
    }
}

/// The parameters that define a result (without where it ran).
fn defining(params: &Params) -> Params {
    let mut p = params.clone();
    for k in WHERE_IT_RAN {
        p.remove(*k);
    }
    p
}

/// A row's samples as rounds, if it has measured samples of its own.
fn rounds_of(row: &Row) -> Option<Rounds<'_>> {
    (row.summary.is_some() && !row.samples.is_empty()).then(|| Rounds::split(&row.samples, &row.samples_per_round))
}

/// Compares `new` against `base` with noise threshold `noise`; `seed` makes the intervals
/// reproducible.
pub fn compare(base: &RunFile, new: &RunFile, noise: f64, seed: u64) -> Comparison {
    let mut compared = Vec::new();
    let mut unmatched = Vec::new();
    for (i, n) in new.results.iter().enumerate() {
        match compare_row(base, n, noise, RESAMPLES, seed ^ i as u64) {
            Ok(c) => compared.push(c),
            Err(why) => unmatched.push(Unmatched { id: n.id.clone(), params: n.params.clone(), why }),
        }
    }
    for b in &base.results {
        if counterpart(new, b).is_none() {
            unmatched.push(Unmatched {
                id: b.id.clone(),
                params: b.params.clone(),
                why: "only in the base run".into(),
            });
        }
    }
    Comparison { noise, compared, unmatched, differences: differences(base, new) }
}

/// The result of `run` with `row`'s id and defining parameters.
fn counterpart<'r>(run: &'r RunFile, row: &Row) -> Option<&'r Row> {
    let key = defining(&row.params);
    run.results.iter().find(|r| r.id == row.id && defining(&r.params) == key)
}

/// One new result against its counterpart in `base` (`resamples` bootstrap resamples), or why
/// it cannot be compared.
pub fn compare_row(base: &RunFile, n: &Row, noise: f64, resamples: usize, seed: u64) -> Result<Compared, String> {
    let b = counterpart(base, n).ok_or_else(|| "only in the new run".to_string())?;
    if b.unit != n.unit {
        return Err(format!("units differ ({} and {})", b.unit.symbol(), n.unit.symbol()));
    }
    let rb = rounds_of(b).ok_or_else(|| not_measured("base", b))?;
    let rn = rounds_of(n).ok_or_else(|| not_measured("new", n))?;
    let r = median_ratio(&rb, &rn, resamples, seed).ok_or_else(|| "no positive median in the base run".to_string())?;
    Ok(judged(n, b.median().unwrap_or(f64::NAN), r, noise))
}

fn not_measured(which: &str, r: &Row) -> String {
    if r.derived.is_some() {
        format!("derived in the {which} run (its sources are compared)")
    } else {
        let reason = r.reason.as_deref().map(|s| format!(": {s}")).unwrap_or_default();
        format!("no samples in the {which} run{reason}")
    }
}

fn judged(n: &Row, base_median: f64, r: Ratio, noise: f64) -> Compared {
    let significant = r.ci95[0] > 1.0 || r.ci95[1] < 1.0;
    let verdict = match () {
        _ if significant && r.ci95[0] > 1.0 && r.estimate > 1.0 + noise => Verdict::Slower,
        _ if significant && r.ci95[1] < 1.0 && r.estimate < 1.0 - noise => Verdict::Faster,
        _ => Verdict::NoChange,
    };
    Compared {
        id: n.id.clone(),
        params: defining(&n.params),
        unit: n.unit,
        base_median,
        new_median: n.median().unwrap_or(f64::NAN),
        ratio: r.estimate,
        ratio_ci95: r.ci95,
        verdict,
        significant,
    }
}

/// Readings that change from minute to minute on one machine: not differences between machines.
const VOLATILE: &[&str] = &[
    "machine.frequency.cur_khz",
    "machine.frequency.cpuinfo_mhz",
    "machine.scheduling.load_avg_start",
    "machine.scheduling.load_avg_end",
];

/// Machine and build facts that differ: every leaf of `machine` and the osprim build, by
/// dotted path, but the [`VOLATILE`] readings.
pub fn differences(base: &RunFile, new: &RunFile) -> Vec<Difference> {
    let facts = |r: &RunFile| {
        let mut leaves = Vec::new();
        flatten("osprim", &serde_json::to_value(&r.osprim).unwrap_or_default(), &mut leaves);
        flatten("machine", &serde_json::to_value(&r.machine).unwrap_or_default(), &mut leaves);
        flatten("timer.kind", &serde_json::to_value(r.timer.kind).unwrap_or_default(), &mut leaves);
        leaves
    };
    let steady = |mut v: Vec<(String, String)>| {
        v.retain(|(p, _)| !VOLATILE.contains(&p.as_str()));
        v
    };
    let (b, n) = (steady(facts(base)), steady(facts(new)));
    let mut out = Vec::new();
    for (path, bv) in &b {
        let nv = n.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone()).unwrap_or_else(|| "—".into());
        if *bv != nv {
            out.push(Difference { what: path.clone(), base: bv.clone(), new: nv });
        }
    }
    for (path, nv) in &n {
        if !b.iter().any(|(p, _)| p == path) {
            out.push(Difference { what: path.clone(), base: "—".into(), new: nv.clone() });
        }
    }
    out
}

/// Leaves of `v` as (dotted path, text); arrays of scalars are one leaf.
fn flatten(path: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{path}.{k}"), v, out);
            }
        }
        Value::Array(a) if a.iter().any(|x| x.is_object()) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), v, out);
            }
        }
        Value::String(s) => out.push((path.to_string(), s.clone())),
        Value::Null => out.push((path.to_string(), "—".into())),
        other => out.push((path.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests;
