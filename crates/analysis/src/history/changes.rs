//! Where each series of the history changes level (`osprim history --changes`).
//!
//! **A series** is one result (benchmark id and parameters, the CPU pair aside, as `osprim
//! history` groups them) in one unit, by one sampling method, on one host and CPU model,
//! oldest run first. Methods are never mixed (the seed method's mean of single runs and the
//! adaptive median are different figures), nor machines. A kernel or osprim build change
//! stays inside the series: finding the run after which a kernel made a result slower is what
//! the history is for, and each change names what else changed between its two runs.
//!
//! **A point** is one run's median. The change points are E-divisive means on the medians
//! ([`stats::changepoint`]: Matteson and James 2014, as in MongoDB's CI, Daly et al.
//! ICPE 2020, and Hunter / Apache Otava, Fleming et al. ICPE 2023), 1 % level, 199 seeded
//! permutations, at least 3 runs per segment.
//!
//! **A level** is the segment between two change points: its median (of the runs' medians)
//! and a 95 % interval: the distribution-free order-statistic interval of that median when the
//! segment has at least 6 runs (below 6 no pair of order statistics reaches 95 %), else the
//! envelope of the runs' own intervals (lowest low to highest high), a conservative bound.
//!
//! **Weak changes** (Hunter's term, after its minimum magnitude) are refused: a change point
//! is kept only when the two levels' intervals do not overlap (the difference's interval
//! excludes 0) and the levels differ by more than the runs' typical half-interval (the median
//! of their CIs' half-widths): a step smaller than each run's own uncertainty is not reported
//! as a change. Refused points are dropped one at a time, smallest step first, the levels
//! beside them merged and judged again.
//!
//! **The magnitude** is after / before with the interval of [`ratio_of`] from the two levels'
//! intervals; when the level before includes 0 there is no ratio (`None`), only the
//! difference (`crates/stats/src/reading.rs`).

use super::Point;
use serde::Serialize;
use stats::changepoint::{EDivisive, e_divisive};
use stats::reading::{Interval, ratio_of};

/// The fewest runs in a level for its interval to be the order-statistic one (2 · ½⁶ < 5 %).
const ORDER_STAT_MIN_RUNS: usize = 6;

/// The E-divisive settings of the history (module doc).
pub fn settings() -> EDivisive {
    EDivisive::default()
}

/// `{"placement":"same_cpu","cpus":[0,1]}` → `placement=same_cpu`: the parameters that define
/// a series (the CPU pair is where it ran, not what it measured).
pub fn params_label(json: &str) -> String {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(json) else {
        return String::new();
    };
    m.iter()
        .filter(|(k, _)| k.as_str() != "cpus")
        .map(|(k, v)| format!("{k}={}", v.as_str().map(String::from).unwrap_or_else(|| v.to_string())))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Everything `--changes` found, with how it looked.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The method, in words.
    pub method: String,
    /// The level a change point's permutation p-value must not exceed.
    pub significance: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// The fewest runs on either side of a change.
    pub min_runs: usize,
    /// Every series, in the order of its first run.
    pub series: Vec<Series>,
}

/// One series and its change points.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Benchmark id.
    pub id: String,
    /// Its defining parameters (`k=v …`).
    pub params: String,
    /// Unit symbol.
    pub unit: String,
    /// Sampling method (`adaptive`, `seed`; empty for results recorded before osprim kept it).
    pub method: String,
    /// Host.
    pub host: String,
    /// CPU model.
    pub cpu_model: String,
    /// Runs with a median in the series.
    pub runs: usize,
    /// Whether there were enough runs to look (two segments of the minimum size).
    pub searched: bool,
    /// The change points kept, oldest first.
    pub changes: Vec<Change>,
    /// Change points found significant but refused as weak (module doc).
    pub weak: usize,
}

/// One run of a series, as named in a change.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunRef {
    /// When it started (UTC).
    pub started_utc: String,
    /// Its key in the database.
    pub run_key: String,
    /// Its result file, if known.
    pub file: Option<String>,
    /// Its kernel release.
    pub kernel: String,
    /// The osprim build.
    pub commit: String,
    /// Its median.
    pub median: f64,
}

/// The runs between two change points.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Level {
    /// Median of the runs' medians, and its 95 % interval.
    pub estimate: Interval,
    /// How the interval was made: `order statistics` or `envelope of the runs' intervals`.
    pub interval: String,
    /// Runs in the level.
    pub runs: usize,
    /// Its first run's start.
    pub first_utc: String,
    /// Its last run's start.
    pub last_utc: String,
}

/// One change point.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// The last run before the change.
    pub last_before: RunRef,
    /// The first run after it.
    pub first_after: RunRef,
    /// The level before.
    pub before: Level,
    /// The level after.
    pub after: Level,
    /// after − before, with the interval from the two levels' intervals.
    pub difference: Interval,
    /// after / before, with its interval; `None` when the level before includes 0.
    pub ratio: Option<Interval>,
    /// The permutation p-value of the split when E-divisive found it.
    pub p_value: f64,
    /// What else differs between the two runs (`kernel A → B`, `osprim build A → B`).
    pub also_changed: Vec<String>,
}

/// The change points of every series in `points` (oldest run first, as
/// [`super::History::points`] gives them).
pub fn find(points: &[Point]) -> Report {
    let cfg = settings();
    let mut series: Vec<(Key, Vec<&Point>)> = Vec::new();
    for p in points.iter().filter(|p| p.median.is_some_and(f64::is_finite)) {
        let key = Key::of(p);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(p),
            None => series.push((key, vec![p])),
        }
    }
    let series = series.into_iter().map(|(key, pts)| one_series(key, &pts, &cfg)).collect();
    Report {
        method: "E-divisive means (Matteson and James 2014) on the runs' medians, permutation test".into(),
        significance: cfg.significance,
        permutations: cfg.permutations,
        min_runs: cfg.min_size,
        series,
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Key {
    id: String,
    params: String,
    unit: String,
    method: String,
    host: String,
    cpu_model: String,
}

impl Key {
    fn of(p: &Point) -> Key {
        Key {
            id: p.id.clone(),
            params: params_label(&p.params),
            unit: p.unit.clone(),
            method: p.method.clone(),
            host: p.host.clone(),
            cpu_model: p.cpu_model.clone(),
        }
    }
}

fn median_of(p: &Point) -> f64 {
    p.median.unwrap_or(f64::NAN)
}

fn one_series(key: Key, pts: &[&Point], cfg: &EDivisive) -> Series {
    let medians: Vec<f64> = pts.iter().map(|p| median_of(p)).collect();
    let searched = pts.len() >= 2 * cfg.min_size;
    let found = e_divisive(&medians, cfg).unwrap_or_default();
    let mut cuts: Vec<(usize, f64)> = found.iter().map(|c| (c.index, c.p_value)).collect();
    let mut weak = 0;
    // Drop the weak ones, smallest step first, judging again after each.
    loop {
        let judged: Vec<(usize, f64, bool)> = (0..cuts.len())
            .map(|i| {
                let (a, b, c) = bounds(&cuts, i, pts.len());
                let (before, after) = (level(&pts[a..b]), level(&pts[b..c]));
                let step = (after.estimate.estimate - before.estimate.estimate).abs();
                (i, step, is_strong(&before, &after, typical_half_width(&pts[a..c])))
            })
            .collect();
        let Some(&(i, _, _)) = judged.iter().filter(|j| !j.2).min_by(|x, y| x.1.total_cmp(&y.1)) else { break };
        cuts.remove(i);
        weak += 1;
    }
    let changes = (0..cuts.len())
        .map(|i| {
            let (a, b, c) = bounds(&cuts, i, pts.len());
            change(&pts[a..b], &pts[b..c], cuts[i].1)
        })
        .collect();
    Series {
        id: key.id,
        params: key.params,
        unit: key.unit,
        method: key.method,
        host: key.host,
        cpu_model: key.cpu_model,
        runs: pts.len(),
        searched,
        changes,
        weak,
    }
}

/// The start of the level before cut `i`, the cut, and the end of the level after it.
fn bounds(cuts: &[(usize, f64)], i: usize, n: usize) -> (usize, usize, usize) {
    let a = if i == 0 { 0 } else { cuts[i - 1].0 };
    let c = cuts.get(i + 1).map_or(n, |c| c.0);
    (a, cuts[i].0, c)
}

/// Disjoint levels, and a step beyond the runs' typical half-interval (module doc).
fn is_strong(before: &Level, after: &Level, typical_half: f64) -> bool {
    let d = difference(before, after);
    !d.includes_zero() && d.estimate.abs() > typical_half
}

fn difference(before: &Level, after: &Level) -> Interval {
    let (b, a) = (&before.estimate, &after.estimate);
    Interval::new(a.estimate - b.estimate, [a.ci95[0] - b.ci95[1], a.ci95[1] - b.ci95[0]])
}

/// The median half-width of the runs' own 95 % intervals (0 for runs without one).
fn typical_half_width(pts: &[&Point]) -> f64 {
    let mut halves: Vec<f64> =
        pts.iter().map(|p| p.ci95.map_or(0.0, |[lo, hi]| (hi - lo) / 2.0)).filter(|h| h.is_finite()).collect();
    if halves.is_empty() {
        return 0.0;
    }
    halves.sort_by(f64::total_cmp);
    stats::median(&halves)
}

/// The level of `pts` (non-empty): its median and interval (module doc).
fn level(pts: &[&Point]) -> Level {
    let mut medians: Vec<f64> = pts.iter().map(|p| median_of(p)).collect();
    medians.sort_by(f64::total_cmp);
    let estimate = stats::median(&medians);
    let (ci95, how) = if pts.len() >= ORDER_STAT_MIN_RUNS {
        let (lo, hi) = stats::median_ci_order_stat(&medians, 0.95);
        ([lo, hi], "order statistics")
    } else {
        let lo =
            pts.iter().map(|p| p.ci95.map_or(median_of(p), |c| c[0].min(median_of(p)))).fold(f64::INFINITY, f64::min);
        let hi = pts
            .iter()
            .map(|p| p.ci95.map_or(median_of(p), |c| c[1].max(median_of(p))))
            .fold(f64::NEG_INFINITY, f64::max);
        ([lo, hi], "envelope of the runs' intervals")
    };
    Level {
        estimate: Interval::new(estimate, ci95),
        interval: how.into(),
        runs: pts.len(),
        first_utc: pts.first().map(|p| p.started_utc.clone()).unwrap_or_default(),
        last_utc: pts.last().map(|p| p.started_utc.clone()).unwrap_or_default(),
    }
}

fn run_ref(p: &Point) -> RunRef {
    RunRef {
        started_utc: p.started_utc.clone(),
        run_key: p.run_key.clone(),
        file: p.file.clone(),
        kernel: p.kernel.clone(),
        commit: p.commit.clone(),
        median: median_of(p),
    }
}

fn change(before_pts: &[&Point], after_pts: &[&Point], p_value: f64) -> Change {
    let (before, after) = (level(before_pts), level(after_pts));
    let (last, first) = (before_pts[before_pts.len() - 1], after_pts[0]);
    let mut also_changed = Vec::new();
    if last.kernel != first.kernel {
        also_changed.push(format!("kernel {} → {}", last.kernel, first.kernel));
    }
    if last.commit != first.commit {
        also_changed.push(format!("osprim build {} → {}", last.commit, first.commit));
    }
    Change {
        last_before: run_ref(last),
        first_after: run_ref(first),
        difference: difference(&before, &after),
        ratio: ratio_of(&after.estimate, &before.estimate),
        before,
        after,
        p_value,
        also_changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `id` at `day` with median `m` and a ±`half` interval.
    pub(crate) fn point(id: &str, day: usize, m: f64, half: f64) -> Point {
        Point {
            id: id.into(),
            params: r#"{"cpus":[0,1],"placement":"same_cpu"}"#.into(),
            unit: "ns".into(),
            status: "ok".into(),
            started_utc: format!("2026-11-{:02}T{:02}:00:00Z", 1 + day / 24, day % 24),
            host: "vm".into(),
            kernel: if day < 12 { "6.1".into() } else { "6.2".into() },
            commit: "abc".into(),
            median: Some(m),
            ci95: Some([m - half, m + half]),
            mean: None,
            n: Some(100),
            cpu_model: "cpu".into(),
            method: "adaptive".into(),
            run_key: format!("run{day}"),
            file: Some(format!("run{day}.json")),
            cold_hot: None,
            counts: Vec::new(),
        }
    }

    fn wobble(i: usize) -> f64 {
        // A deterministic jitter of ±1 %.
        [0.0, 0.7, -0.4, 1.0, -0.9, 0.2, -0.6, 0.5, -0.2, 0.9, -1.0, 0.3][i % 12] / 100.0
    }

    #[test]
    fn a_step_is_one_change_with_its_runs_levels_and_ratio() {
        let pts: Vec<Point> = (0..24)
            .map(|d| point("syscall.getpid", d, if d < 12 { 100.0 } else { 130.0 } * (1.0 + wobble(d)), 0.5))
            .collect();
        let r = find(&pts);
        assert_eq!(r.series.len(), 1);
        let s = &r.series[0];
        assert_eq!((s.runs, s.searched, s.weak, s.params.as_str()), (24, true, 0, "placement=same_cpu"));
        assert_eq!(s.changes.len(), 1, "{s:?}");
        let c = &s.changes[0];
        assert_eq!((c.last_before.run_key.as_str(), c.first_after.run_key.as_str()), ("run11", "run12"));
        assert_eq!((c.before.runs, c.after.runs), (12, 12));
        assert_eq!(c.before.interval, "order statistics");
        let ratio = c.ratio.expect("a ratio");
        assert!((ratio.estimate - 1.3).abs() < 0.02 && ratio.ci95[0] > 1.2 && ratio.ci95[1] < 1.4, "{ratio:?}");
        assert_eq!(c.also_changed, vec!["kernel 6.1 → 6.2".to_string()]);
        assert!(c.p_value <= 0.01);
    }

    #[test]
    fn a_step_smaller_than_the_runs_own_intervals_is_refused_as_weak() {
        // A clean 1 % step, but each run's interval is ±5 %.
        let pts: Vec<Point> =
            (0..24).map(|d| point("x.y", d, if d < 12 { 100.0 } else { 101.0 } + wobble(d) * 10.0, 5.0)).collect();
        let s = &find(&pts).series[0];
        assert!(s.changes.is_empty(), "{s:?}");
    }

    #[test]
    fn methods_units_and_hosts_are_separate_series_and_a_flat_one_has_no_change() {
        let mut pts: Vec<Point> = (0..12).map(|d| point("x.y", d, 100.0 * (1.0 + wobble(d)), 0.5)).collect();
        let seeds: Vec<Point> = (0..12)
            .map(|d| Point { method: "seed".into(), ..point("x.y", d, 200.0 * (1.0 + wobble(d)), 0.0) })
            .collect();
        pts.extend(seeds);
        let r = find(&pts);
        assert_eq!(r.series.len(), 2, "seed and adaptive apart");
        assert!(r.series.iter().all(|s| s.changes.is_empty() && s.runs == 12));
    }

    #[test]
    fn cold_and_hot_rows_are_separate_series_that_keep_their_cache() {
        // A cold row 3× its hot twin, both flat: one series would be one level change after another.
        let with = |cache: &str, d: usize, m: f64| Point {
            params: format!(r#"{{"cache":"{cache}","cpus":[0,1]}}"#),
            ..point("syscall.getpid", d, m * (1.0 + wobble(d)), 0.5)
        };
        let pts: Vec<Point> = (0..24).flat_map(|d| [with("hot", d, 100.0), with("cold", d, 300.0)]).collect();
        let r = find(&pts);
        let labels: Vec<&str> = r.series.iter().map(|s| s.params.as_str()).collect();
        assert_eq!(labels, ["cache=hot", "cache=cold"]);
        assert!(r.series.iter().all(|s| s.runs == 24 && s.changes.is_empty()), "{:?}", r.series);
    }

    #[test]
    fn no_ratio_when_the_level_before_includes_zero() {
        // A difference-derived row around 0 that moves to 50.
        let pts: Vec<Point> = (0..24)
            .map(|d| {
                point("interpose.preload", d, if d < 12 { wobble(d) * 100.0 } else { 50.0 + wobble(d) * 100.0 }, 1.0)
            })
            .collect();
        let c = &find(&pts).series[0].changes;
        assert_eq!(c.len(), 1);
        assert!(c[0].before.estimate.includes_zero());
        assert_eq!(c[0].ratio, None);
        assert!(!c[0].difference.includes_zero());
    }

    #[test]
    fn a_short_series_is_not_searched() {
        let pts: Vec<Point> = (0..4).map(|d| point("x.y", d, 100.0 + d as f64 * 50.0, 0.5)).collect();
        let s = &find(&pts).series[0];
        assert!(!s.searched && s.changes.is_empty());
    }
}
