//! A result's runs read as a series: the [`Point`]s the history database gives back (one per
//! recorded run), where each series changed level ([`changes`]), and whether a new run left the
//! level of its earlier runs ([`level_shift`]). Pure computation over points; the database is
//! `store::history`'s.

pub mod changes;

use model::{Method, Row};
use stats::reading::Interval;

/// One result of one recorded run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    /// Benchmark id.
    pub id: String,
    /// Parameters, as JSON text.
    pub params: String,
    /// Unit symbol (`ns`, `bytes`, `count`).
    pub unit: String,
    /// `ok`, `flagged`, `skipped`, `failed`.
    pub status: String,
    /// When the run started (UTC).
    pub started_utc: String,
    /// Its host.
    pub host: String,
    /// Its kernel release.
    pub kernel: String,
    /// The osprim build.
    pub commit: String,
    /// Median, if measured.
    pub median: Option<f64>,
    /// 95 % CI of the median.
    pub ci95: Option<[f64; 2]>,
    /// Mean.
    pub mean: Option<f64>,
    /// Samples.
    pub n: Option<i64>,
    /// CPU model.
    pub cpu_model: String,
    /// Sampling method (`adaptive`, `seed`); empty when recorded before osprim kept it.
    pub method: String,
    /// The run's key in the database (`store::history::run_key`).
    pub run_key: String,
    /// The result file it was recorded from, if known.
    pub file: Option<String>,
    /// A cold row's cold/hot ratio with its 95 % interval (`--cache cold`); `None` for hot
    /// rows and for results recorded before osprim kept it (schema 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_hot: Option<model::Estimate>,
    /// Hardware counts per operation (`--counters`): each counted event's mean, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<(String, f64)>,
}

/// One recorded stability run (`osprim stress`, `osprim errortest`) and the run it was part of.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StabilityPoint {
    /// The run's key in the database.
    pub run_key: String,
    /// When the run started (UTC).
    pub started_utc: String,
    /// Its host.
    pub host: String,
    /// Its CPU model.
    pub cpu_model: String,
    /// Its kernel release.
    pub kernel: String,
    /// The osprim build.
    pub commit: String,
    /// The result file it was recorded from, if known.
    pub file: Option<String>,
    /// The stability run, whole.
    pub run: model::stability::StabilityRun,
}

/// Of `points`, the run of `test` on `host` that ran longest without a failure (the longest
/// clean stretch of a failed run counts too: it ran that long clean).
pub fn longest_clean<'a>(
    points: &'a [StabilityPoint],
    test: model::stability::StabilityTest,
    host: &str,
) -> Option<&'a StabilityPoint> {
    points
        .iter()
        .filter(|p| p.run.test == test && p.host == host && p.run.clean_s.is_finite())
        .max_by(|a, b| a.run.clean_s.total_cmp(&b.run.clean_s))
}

impl Point {
    /// The point's 95 % CI when it is a usable interval: finite and of some width (never the
    /// zero-width interval of a single figure).
    pub fn interval(&self) -> Option<Interval> {
        let median = self.median.filter(|m| m.is_finite())?;
        let iv = Interval::new(median, self.ci95?);
        (iv.ci95.iter().all(|x| x.is_finite()) && !iv.degenerate()).then_some(iv)
    }
}

/// A sampling method as the result file and the database spell it (`adaptive`, `seed`).
pub fn method_name(m: Method) -> String {
    serde_json::to_value(m).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// The fewest earlier runs, at the current level, a result is judged against for a level shift.
pub const LEVEL_SHIFT_MIN_RUNS: usize = 5;

/// The most recent earlier runs looked at (the change-point search is over these).
pub const LEVEL_SHIFT_WINDOW: usize = 50;

/// The note of a result that moved away from the level of its earlier runs, or `None`.
///
/// The rule (README, "How sure the numbers are", 7):
/// - `earlier` are the result's earlier runs on the same host, CPU model and kernel by the
///   same osprim build ([`History::earlier`]); only those by the row's own sampling method
///   count, and only those with a usable interval ([`Point::interval`]: never a zero-width one);
/// - the seed method's runs are never judged (its protocol reports a mean of single runs, not
///   an interval osprim would gate on);
/// - of the last [`LEVEL_SHIFT_WINDOW`] of them, the current level is the runs after the last
///   change point E-divisive finds ([`changes`]); it must hold at least
///   [`LEVEL_SHIFT_MIN_RUNS`] runs, else there is too little history to judge;
/// - the row is a level shift when its own 95 % CI (of some width) lies wholly above, or
///   wholly below, every interval of those runs: outside both the runs' own uncertainty and
///   the spread between them.
pub fn level_shift(earlier: &[Point], row: &Row) -> Option<String> {
    if row.method == Method::Seed {
        return None;
    }
    let s = row.summary.as_ref()?;
    let now = Interval::new(s.median, s.median_ci95);
    if now.degenerate() || !now.ci95.iter().chain([&now.estimate]).all(|x| x.is_finite()) {
        return None;
    }
    let method = method_name(row.method);
    let usable: Vec<(&Point, Interval)> =
        earlier.iter().filter(|p| p.method == method).filter_map(|p| p.interval().map(|i| (p, i))).collect();
    let window = &usable[usable.len().saturating_sub(LEVEL_SHIFT_WINDOW)..];
    let medians: Vec<f64> = window.iter().map(|(_, i)| i.estimate).collect();
    let start = stats::changepoint::e_divisive(&medians, &changes::settings()).ok()?.last().map_or(0, |c| c.index);
    let level = &window[start..];
    if level.len() < LEVEL_SHIFT_MIN_RUNS {
        return None;
    }
    let lo = level.iter().map(|(_, i)| i.ci95[0]).fold(f64::INFINITY, f64::min);
    let hi = level.iter().map(|(_, i)| i.ci95[1]).fold(f64::NEG_INFINITY, f64::max);
    let [a, b] = now.ci95;
    if b >= lo && a <= hi {
        return None;
    }
    let m_lo = level.iter().map(|(_, i)| i.estimate).fold(f64::INFINITY, f64::min);
    let m_hi = level.iter().map(|(_, i)| i.estimate).fold(f64::NEG_INFINITY, f64::max);
    let f = |v: f64| row.unit.format(v);
    Some(format!(
        "level shift: this run's interval [{}, {}] lies {} every interval of the {} earlier runs at this level on this \
         machine, kernel and build ({} to {}: medians {} to {}, intervals within [{}, {}]): the machine changed level \
         between the runs",
        f(a),
        f(b),
        if a > hi { "above" } else { "below" },
        level.len(),
        level[0].0.started_utc,
        level[level.len() - 1].0.started_utc,
        f(m_lo),
        f(m_hi),
        f(lo),
        f(hi),
    ))
}
