//! The seed view: the five papers' figures beside today's, told as a story.
//!
//! First a one-screen summary (per paper: how many rows have a figure today, the median change
//! and the best and worst row), then each paper under its own heading and citation, one table
//! per table of the paper. A row says how today compares as "N× faster" or "N× slower": the
//! paper's figure divided by today's, both means (the papers' statistic; a derived row has only
//! a median, and then the median stands in). The change is in time where the paper gives a time
//! or cycles at a stated clock, and in cycles against today's counter ticks where it gives cycles
//! (or a time and a clock). Rows without a figure today are counted, one line per reason,
//! unless `--all-rows`; the papers' own notes follow as footnotes.
//!
//! [`rows`] is the one place the comparison is computed; the text, CSV, Markdown and LaTeX
//! renderers only format its rows, so every export carries the same numbers.

use super::layout::folding::{self, Column};
use super::layout::{self, Align, Cell, Style, Wrap, paint, superscript};
use super::{fmt_bytes, fmt_ns};
use model::{Method, Row, RunFile, Status, TimerKind, Unit};
use papers::{self as seeds, Figure, Paper, Target, Want};
use stats::reading::{Interval, RatioVerdict, judge_ratio, ratio_of};
use std::fmt::Write;

// ---------------------------------------------------------------------------------------------
// The rows, as data
// ---------------------------------------------------------------------------------------------

/// Whether a seed row has a figure today, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Today's benchmark is in the result, with figures.
    Measured,
    /// Today's benchmark exists but is not in this result (or was skipped or failed there).
    NotInResult,
    /// A benchmark is planned but not written yet.
    Planned,
    /// Needs hardware performance counters (retired instructions).
    NeedsCounters,
    /// Linux has no operation of that meaning.
    NotApplicable,
    /// Answered by the merged row of a combined stage that spans this row and the one named
    /// in `reason` (VMMC's interrupt and signal stages where they are timed together).
    Merged,
}

/// One seed row beside today's figure, as data: the JSON and CSV export of the seed view, and
/// what every other rendering of it formats.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SeedRow {
    /// The paper's system, e.g. "RightSpeed".
    pub paper: String,
    /// The paper, cited short: "Lorch & Smith, MobiSys 2003".
    pub citation: String,
    /// The paper's table (`Table 3`, `ORB primitives`, …).
    pub table: String,
    /// The system the figure was measured on (e.g. "Rhino on SPIN", "BSD").
    pub system: String,
    /// Its hardware platform.
    pub platform: String,
    /// Its clock in MHz, when the paper gives it.
    pub clock_mhz: Option<f64>,
    /// The operation.
    pub operation: String,
    /// The variant (cycles/instructions, best/worst case, total/trap/other…); may be empty.
    pub variant: String,
    /// The published figure.
    pub then: f64,
    /// Its unit: us, cycles, instructions, bytes, days.
    pub then_unit: String,
    /// The published figure in nanoseconds (a time, or cycles at a stated clock).
    pub then_ns: Option<f64>,
    /// The published figure in cycles of its machine (cycles, or a time at a stated clock).
    pub then_cycles: Option<f64>,
    /// The benchmark that answers it today.
    pub today_id: Option<String>,
    /// The parameters today's result must have, `k=v` separated by spaces.
    pub today_params: Option<String>,
    /// The stage of today's breakdown that answers it, when a part is compared.
    pub today_stage: Option<String>,
    /// Why today's benchmark is the nearest mechanism rather than the same primitive (the row
    /// then takes the fastest of several, named in `today_id`).
    pub nearest: Option<String>,
    /// Today's unit: `ns`, `bytes` or `count`.
    pub today_unit: Option<String>,
    /// Today's mean (the papers' statistic), in `today_unit`.
    pub today_mean: Option<f64>,
    /// Today's median, in `today_unit`.
    pub today_median: Option<f64>,
    /// The statistic the ratios use, `mean`, or `median` for a row that has no mean (a
    /// difference of medians).
    pub today_statistic: Option<String>,
    /// That statistic in the counter's ticks (TSC cycles on x86), for a time.
    pub today_cycles: Option<f64>,
    /// The lower end of the 95 % interval of today's statistic, in `today_unit`: the mean's
    /// (for samples taken in rounds, by the hierarchical bootstrap over rounds and blocks), or
    /// the median's where the median stands in.
    pub today_ci95_lo: Option<f64>,
    /// Its upper end.
    pub today_ci95_hi: Option<f64>,
    /// Set when today's interval includes 0 (a difference the run cannot tell from nothing):
    /// the bound `|x| <` this, in `today_unit`. There is no ratio then.
    pub below_resolution: Option<f64>,
    /// `then_ns` ÷ today's time: above 1, today is faster.
    pub ratio_time: Option<f64>,
    /// The lower end of its 95 % interval: the paper's exact figure over today's interval.
    pub ratio_time_ci95_lo: Option<f64>,
    /// Its upper end.
    pub ratio_time_ci95_hi: Option<f64>,
    /// `then_cycles` ÷ `today_cycles`: above 1, today takes fewer cycles.
    pub ratio_cycles: Option<f64>,
    /// The lower end of its 95 % interval.
    pub ratio_cycles_ci95_lo: Option<f64>,
    /// Its upper end.
    pub ratio_cycles_ci95_hi: Option<f64>,
    /// Published bytes ÷ today's bytes: above 1, today needs less memory.
    pub ratio_bytes: Option<f64>,
    /// The lower end of its 95 % interval.
    pub ratio_bytes_ci95_lo: Option<f64>,
    /// Its upper end.
    pub ratio_bytes_ci95_hi: Option<f64>,
    /// Published instructions ÷ today's retired instructions (hardware counters): above 1,
    /// today retires fewer.
    pub ratio_count: Option<f64>,
    /// The lower end of its 95 % interval.
    pub ratio_count_ci95_lo: Option<f64>,
    /// Its upper end.
    pub ratio_count_ci95_hi: Option<f64>,
    /// What the change (in time, or in memory) says, read by its interval.
    pub reading: Option<Reading>,
    /// What the change in cycles says, read by its interval.
    pub reading_cycles: Option<Reading>,
    /// Figures shown beside today's for context, not compared: the other candidates of a
    /// nearest row, an in-kernel analogue.
    pub beside: Option<String>,
    /// Whether there is a figure today.
    pub status: RowStatus,
    /// Why there is none: the planned benchmark, the missing one, or why none applies.
    pub reason: Option<String>,
    /// The paper's remark on the figure.
    pub note: Option<String>,
    /// Where the comparison is not like for like (a cold-cache figure beside a measurement not
    /// taken cold): the summary leaves such a row out of its median, best and worst.
    pub caveat: Option<String>,
    /// A part of a breakdown whose total is a row of its own (a trap, a stage): the summary
    /// rests on totals and leaves parts out.
    pub part: bool,
    /// How a stage that could not be timed inside the operation was estimated: "estimated: k
    /// kernel crossings × c" from counted events of the same samples (Rhino's trap).
    pub estimated: Option<String>,
    /// Why a paper's summary leaves today's figure out although the row shows it: its result
    /// failed its checks, or it is a with-minus-without difference within one clock read.
    pub doubt: Option<String>,
    /// On a merged row (one stage of today's spanning several of the paper's rows): the rows
    /// and figures it spans, which `operation` joins and `then` sums; the ratio is against
    /// that sum.
    pub merged: Option<String>,
    /// An estimate that came out below 0: no figure is shown ("< 0: not resolved").
    pub unresolved: Option<String>,
}

impl SeedRow {
    /// Operation and variant in one label: "call, best (hot cache)".
    pub fn label(&self) -> String {
        let merged = if self.merged.is_some() { " (merged)" } else { "" };
        // L4's variants "cycles" and "instructions" are the unit, which the figure shows.
        if self.variant.is_empty() || self.variant == self.then_unit {
            format!("{}{merged}", self.operation)
        } else {
            format!("{}, {}{merged}", self.operation, self.variant)
        }
    }

    /// Whether the row has a figure today that the run resolves: measured, not below
    /// resolution, not an estimate below 0, not a result that failed its own checks (or a
    /// difference within one clock read). A row that is not resolved counts as not answered.
    pub fn resolved(&self) -> bool {
        self.status == RowStatus::Measured
            && self.unresolved.is_none()
            && self.reading != Some(Reading::BelowResolution)
            && self.doubt.is_none()
    }

    /// The change in time or in memory, whichever the row has: its ratio with the interval
    /// (none below resolution), its reading and what it compares.
    fn change(&self) -> Option<(Option<Interval>, Reading, Change)> {
        let reading = self.reading?;
        if self.then_ns.is_some() && self.today_unit.as_deref() == Some("ns") {
            Some((interval(self.ratio_time, self.ratio_time_ci95_lo, self.ratio_time_ci95_hi), reading, Change::Time))
        } else if self.today_unit.as_deref() == Some("instructions") {
            Some((
                interval(self.ratio_count, self.ratio_count_ci95_lo, self.ratio_count_ci95_hi),
                reading,
                Change::Instructions,
            ))
        } else {
            Some((
                interval(self.ratio_bytes, self.ratio_bytes_ci95_lo, self.ratio_bytes_ci95_hi),
                reading,
                Change::Memory,
            ))
        }
    }

    /// The change in cycles: its ratio with the interval, and its reading.
    fn change_cycles(&self) -> Option<(Option<Interval>, Reading, Change)> {
        let reading = self.reading_cycles?;
        Some((interval(self.ratio_cycles, self.ratio_cycles_ci95_lo, self.ratio_cycles_ci95_hi), reading, Change::Time))
    }
}

/// A ratio and its interval from a row's fields (the estimate alone where an old caller left
/// the ends out).
fn interval(estimate: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> Option<Interval> {
    let e = estimate?;
    Some(Interval::new(e, [lo.unwrap_or(e), hi.unwrap_or(e)]))
}

/// A then/now ratio whose whole 95 % interval lies within 1 ± this reads "≈ same".
///
/// The papers' figures carry no interval: each is one published number, rounded to three or
/// four figures, measured decades ago with its own clock and method (RightSpeed: a mean of
/// 10,000 runs; Go!: rdtsc in a tight loop). Only today's side has an interval. Within 10 %
/// the two cannot honestly be called different whatever today's interval, so a ratio is "≈
/// same" only when its whole interval lies in [0.9, 1.1]; one whose interval holds 1 and
/// reaches beyond that is "inconclusive". The same 10 % is `osprim crosscheck`'s tolerance.
pub const SAME_WITHIN: f64 = 0.10;

/// What a then/now ratio says, read by its interval with the rules of
/// [`stats::reading`] against [`SAME_WITHIN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Today is faster (or needs less memory): the whole interval lies above 1 and the ratio
    /// beyond the threshold.
    Better,
    /// Today is slower (or needs more memory), likewise.
    Worse,
    /// The whole interval lies within 1 ± [`SAME_WITHIN`].
    Same,
    /// The interval cannot tell: it holds 1 and reaches beyond the threshold, or it excludes 1
    /// with the ratio itself within the threshold.
    Inconclusive,
    /// Today's figure is a difference whose interval includes 0: no ratio exists.
    BelowResolution,
    /// Today's figure is an estimate, not a stage timed inside the operation: it stands beside
    /// its total with no ratio.
    Estimated,
}

impl Reading {
    /// Whether the row may stand in a summary: a conclusion, not "cannot tell".
    pub fn conclusive(self) -> bool {
        matches!(self, Reading::Better | Reading::Worse | Reading::Same)
    }
}

/// The ratio `then / now` with its interval (the paper's figure is exact, today's has an
/// interval: [`ratio_of`]) and its reading. No ratio for an absent or non-positive figure.
/// When today's interval includes 0: for a `difference` (with − without, process − thread,
/// total − estimate), [`Reading::BelowResolution`] and no ratio; for a quantity that cannot be
/// negative (a latency, a stage, a size, a count), the ratio with an open upper end, `[then /
/// hi, ∞]`, which reads inconclusive unless its lower end lies beyond the threshold.
fn read_ratio(then: Option<f64>, now: Option<Interval>, difference: bool) -> (Option<Interval>, Option<Reading>) {
    let (Some(t), Some(n)) = (then, now) else { return (None, None) };
    if !(t.is_finite() && t > 0.0) {
        return (None, None);
    }
    if n.includes_zero() && difference {
        return (None, Some(Reading::BelowResolution));
    }
    if n.includes_zero() {
        let hi = n.ci95[1];
        if !(n.estimate.is_finite() && n.estimate > 0.0 && hi.is_finite() && hi > 0.0) {
            return (None, None);
        }
        let r = Interval::new(t / n.estimate, [t / hi, f64::INFINITY]);
        let reading =
            if r.ci95[0] > 1.0 && r.estimate > 1.0 + SAME_WITHIN { Reading::Better } else { Reading::Inconclusive };
        return (Some(r), Some(reading));
    }
    let Some(r) = ratio_of(&Interval::exact(t), &n) else { return (None, None) };
    // A figure below 0 (a hand-edited file, a broken clock) gives no ratio, not "−232×".
    if !(r.estimate.is_finite() && r.estimate > 0.0 && r.ci95[0] > 0.0 && r.ci95[1].is_finite()) {
        return (None, None);
    }
    let reading = match judge_ratio(&r, SAME_WITHIN) {
        RatioVerdict::Above => Reading::Better,
        RatioVerdict::Below => Reading::Worse,
        RatioVerdict::Same => Reading::Same,
        RatioVerdict::Inconclusive => Reading::Inconclusive,
    };
    (Some(r), Some(reading))
}

/// Today's figures for a seed row, in the row's unit, with the 95 % intervals of each.
#[derive(Clone, Copy, Debug)]
struct Today {
    mean: Option<f64>,
    median: Option<f64>,
    mean_ci: Option<[f64; 2]>,
    median_ci: Option<[f64; 2]>,
    /// Why a summary should not rest on it although it is shown (the first reason, for a sum).
    doubt: Option<&'static str>,
    /// For a trap stage estimated from counted crossings: k (crossings per operation) and c
    /// (ns per crossing, measured in the same rounds).
    crossings: Option<(f64, f64)>,
    /// Core cycles per operation counted by the PMU (`--counters`), with their interval, when
    /// the result has them (the whole operation, not a stage).
    pmu_cycles: Option<(f64, [f64; 2])>,
    /// For a cold row: its ratio to its hot twin, that ratio's interval, the twin's median (ns).
    cold_hot: Option<(f64, [f64; 2], f64, bool)>,
    /// For a stage that is an estimate (its result does not say it was stamped inside the
    /// operation): how, and the mean of its total, beside which it is shown.
    estimate: Option<(seeds::Estimate, Option<f64>)>,
    /// Whether the figure is a difference (with − without, process − thread, total −
    /// estimate), which alone may be below resolution.
    difference: bool,
}

impl Today {
    /// The statistic the ratios use, its interval and name: the mean (the papers'
    /// statistic), or the median where there is no mean (a difference of medians).
    fn statistic(&self) -> (Option<Interval>, &'static str) {
        let with = |v: Option<f64>, ci: Option<[f64; 2]>| v.map(|v| Interval::new(v, ci.unwrap_or([v, v])));
        match self.mean {
            Some(_) => (with(self.mean, self.mean_ci), "mean"),
            None => (with(self.median, self.median_ci), "median"),
        }
    }
}

/// Both ends finite, or none.
fn finite_pair(ci: [f64; 2]) -> Option<[f64; 2]> {
    (ci[0].is_finite() && ci[1].is_finite()).then_some(ci)
}

/// What a run holds for a wanted result.
// One per lookup, never held in bulk: the size of `Today` costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Lookup<'a> {
    /// A row with figures.
    Found(&'a Row, Today),
    /// A row without figures (skipped, failed, or without the stage asked for).
    Empty(&'a Row),
    /// A row whose stages do not add up to its total: how.
    Refused(String),
    /// No such row.
    Absent,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// Whether `r`'s parameters agree with `want`'s: each named one equal, or (`loose`) absent
/// from `r`, as on the one record a benchmark that did not run leaves.
fn params_match(r: &Row, want: &Want, loose: bool) -> bool {
    want.params.iter().all(|(k, v)| match r.params.get(*k) {
        Some(x) => model::vocab::param_is(x, v),
        None => loose,
    }) && (want.params.iter().any(|(k, _)| *k == "cache") || !cold_mode_pair(r))
}

/// Whether `r` is one of a cold-mode pair (`cache=cold` or its `cache=hot` twin, single
/// operations, or the record a skipped one of them leaves): a row that does not ask for a cache
/// state means the benchmark's usual (hot, batched) result, never these.
fn cold_mode_pair(r: &Row) -> bool {
    r.cold_hot.is_some()
        || r.params.get("cache").is_some_and(|c| model::vocab::param_is(c, "hot") || model::vocab::param_is(c, "cold"))
}

/// Whether `r`'s figure (or its stage `stage`'s) is a difference, which alone may be below
/// resolution: a derived difference, a with-minus-without pair, a process-minus-thread pair, or
/// a stage estimated as a total minus an estimate.
fn is_difference(r: &Row, stage: Option<&str>, estimate: Option<seeds::Estimate>) -> bool {
    if stage.is_some() {
        return estimate.is_some_and(|e| e.difference);
    }
    let has = |name: &str| r.breakdown.iter().flatten().any(|s| s.name == name);
    r.derived.as_ref().is_some_and(|d| d.scaled_source().is_none())
        || has("without")
        || (has("process") && has("thread"))
}

/// The estimate stage `stage` of `r` is, unless `r` says it was timed inside the operation
/// (its `observed` field of [`seeds::Estimate::timing`] is [`seeds::STAMPED`]).
fn estimate_of(r: &Row, want: &Want) -> Option<seeds::Estimate> {
    let e = seeds::estimate(want.id, want.stage?)?;
    let stamped = r.observed.get(e.timing).and_then(|v| v.as_str()) == Some(seeds::STAMPED);
    (!stamped).then_some(e)
}

/// The row that answers `want`, and its figures (or its stage's).
fn lookup(run: &RunFile, want: Want) -> Lookup<'_> {
    let mut candidates = run.results.iter().filter(|r| r.id == want.id && params_match(r, &want, false)).peekable();
    let Some(&first) = candidates.peek() else {
        // A benchmark that did not run (skipped, failed, interrupted) leaves one record without
        // the parameters its results would have had: it answers each of its rows with why. A
        // record that has other parameters than the row's is another row's, and says nothing
        // of this one.
        let own = |r: &&Row| r.id == want.id && r.summary.is_none() && r.derived.is_none();
        return match run.results.iter().filter(own).find(|r| params_match(r, &want, true)) {
            Some(r) => Lookup::Empty(r),
            None => Lookup::Absent,
        };
    };
    let mut refused = None;
    let found = candidates.find_map(|r| {
        let summary = match want.stage {
            None => r.summary.as_ref(),
            Some(stage) => {
                let breakdown = r.breakdown.as_ref()?;
                if let Err(why) = stages_add_up(want.id, stage, breakdown, r.summary.as_ref()) {
                    refused = Some(why);
                    return None;
                }
                breakdown.iter().find(|s| s.name == stage).map(|s| &s.summary)
            }
        };
        let estimate = estimate_of(r, &want);
        let today = match (summary, &r.derived) {
            (Some(s), _) => Today {
                mean: finite(s.mean),
                median: finite(s.median),
                mean_ci: finite_pair(s.mean_ci95),
                median_ci: finite_pair(s.median_ci95),
                doubt: doubt(run, r, s.mean),
                crossings: want.stage.filter(|s| *s == "trap" && estimate.is_some()).and_then(|_| crossings(r, s.mean)),
                cold_hot: r
                    .cold_hot
                    .as_ref()
                    .filter(|_| want.stage.is_none())
                    .map(|c| (c.ratio, c.ci, c.hot_median_ns, c.hot_below_step)),
                pmu_cycles: r
                    .counters
                    .as_ref()
                    .and_then(|c| c.event("cycles"))
                    .filter(|c| want.stage.is_none() && c.per_op.is_finite() && c.per_op > 0.0)
                    .map(|c| (c.per_op, c.ci95)),
                estimate: estimate.map(|e| (e, r.summary.as_ref().and_then(|t| finite(t.mean)))),
                difference: is_difference(r, want.stage, estimate),
            },
            // A difference of medians has no mean of its own.
            (None, Some(d)) if want.stage.is_none() => Today {
                mean: None,
                median: finite(d.estimate.point),
                mean_ci: None,
                median_ci: finite_pair(d.estimate.ci95),
                doubt: doubt(run, r, d.estimate.point),
                crossings: None,
                cold_hot: None,
                pmu_cycles: None,
                estimate: None,
                difference: is_difference(r, None, None),
            },
            _ => return None,
        };
        (today.mean.is_some() || today.median.is_some()).then_some((r, today))
    });
    match (found, refused) {
        (Some((r, t)), _) => Lookup::Found(r, t),
        (None, Some(why)) => Lookup::Refused(why),
        (None, None) => Lookup::Empty(first),
    }
}

/// Whether the stages `stage` is compared with add up to their row's total: the mean of each
/// stage of a partition the map declares for `id` ([`seeds::partitions`]), summed, is the
/// total's mean to within 0.1 % (one measurement's stages add up exactly; a result file edited
/// or written by something else may not). A part of a breakdown is never shown from stages
/// that do not add up.
fn stages_add_up(
    id: &str,
    stage: &str,
    breakdown: &[model::Stage],
    total: Option<&model::Summary>,
) -> Result<(), String> {
    let Some(total) = total else { return Err("the stage's row has no total".into()) };
    let mean_of = |name: &str| breakdown.iter().find(|s| s.name == name).map(|s| s.summary.mean);
    let partitions = seeds::partitions(id);
    if mean_of(stage).is_none() {
        // No such stage: the row says so, and which stages there are.
        return Ok(());
    }
    let Some(parts) = partitions.iter().find(|p| p.contains(&stage) && p.iter().all(|n| mean_of(n).is_some())) else {
        return if partitions.is_empty() {
            Ok(())
        } else {
            Err(format!("stage {stage} is not part of a whole breakdown of {id} in this result"))
        };
    };
    let sum: f64 = parts.iter().filter_map(|n| mean_of(n)).sum();
    let tolerance = 1e-3 * total.mean.abs().max(1.0);
    if sum.is_finite() && total.mean.is_finite() && (sum - total.mean).abs() <= tolerance {
        return Ok(());
    }
    let terms: Vec<String> = parts.iter().map(|n| format!("{n} {}", fmt_ns(mean_of(n).unwrap_or(f64::NAN)))).collect();
    Err(format!(
        "its stages do not add up: {} = {} against a total of {}",
        terms.join(" + "),
        fmt_ns(sum),
        fmt_ns(total.mean)
    ))
}

/// Why a summary should not rest on `r`'s figure `value` although it is shown: the result
/// failed its checks (it may have measured something else), or it is a difference of two
/// measurements (with minus without) smaller than one read of the clock, where a figure's
/// size says more about the correction than about the operation.
fn doubt(run: &RunFile, r: &Row, value: f64) -> Option<&'static str> {
    if r.validation.verdict == model::Verdict::Failed {
        return Some("failed its checks");
    }
    let paired = r.breakdown.iter().flatten().any(|s| s.name == "without") || r.derived.is_some();
    let read = run.timer.read_cost_ns.unwrap_or(run.timer.overhead_ns);
    (paired && value.abs() < read).then_some("a difference within one clock read")
}

/// k and c of a trap stage estimated from the operation's own kernel crossings: k the
/// crossings per operation (`observed.trap_crossings`), c the trap's mean over k, so that the
/// label multiplies out to the figure shown (the same statistic, over every round).
fn crossings(r: &Row, trap_mean: f64) -> Option<(f64, f64)> {
    let k = r.observed.get("trap_crossings")?.as_f64()?;
    (k.is_finite() && k > 0.0 && trap_mean.is_finite()).then(|| (k, trap_mean / k))
}

/// The run's counter frequency, when it is a usable one.
fn counter_hz(run: &RunFile) -> Option<f64> {
    run.timer.counter_hz().filter(|h| h.is_finite() && *h > 0.0)
}

/// Every seed row beside today's figure, in the order of `data/figures.csv`.
pub fn rows(run: &RunFile) -> Vec<SeedRow> {
    let hz = counter_hz(run);
    let mut rows: Vec<SeedRow> = seeds::figures().iter().map(|f| seed_row(f, run, hz)).collect();
    stages::answer_merged(seeds::figures(), &mut rows);
    rows
}

fn seed_row(f: &Figure, run: &RunFile, hz: Option<f64>) -> SeedRow {
    let paper = seeds::paper_of(f);
    let target = seeds::target(f);
    let mut row = SeedRow {
        paper: paper.map_or_else(|| f.system.clone(), |p| p.system.to_string()),
        citation: paper.map(Paper::short_cite).unwrap_or_default(),
        table: f.table.clone(),
        system: f.system.clone(),
        platform: f.platform.clone(),
        clock_mhz: f.clock_mhz.filter(|c| c.is_finite() && *c > 0.0),
        operation: f.operation.clone(),
        variant: f.variant.clone(),
        then: f.value,
        then_unit: f.unit.clone(),
        then_ns: f.then_ns().and_then(finite),
        then_cycles: f.then_cycles().and_then(finite),
        today_id: None,
        today_params: None,
        today_stage: None,
        nearest: None,
        today_unit: None,
        today_mean: None,
        today_median: None,
        today_statistic: None,
        today_cycles: None,
        today_ci95_lo: None,
        today_ci95_hi: None,
        below_resolution: None,
        ratio_time: None,
        ratio_time_ci95_lo: None,
        ratio_time_ci95_hi: None,
        ratio_cycles: None,
        ratio_cycles_ci95_lo: None,
        ratio_cycles_ci95_hi: None,
        ratio_bytes: None,
        ratio_bytes_ci95_lo: None,
        ratio_bytes_ci95_hi: None,
        ratio_count: None,
        ratio_count_ci95_lo: None,
        ratio_count_ci95_hi: None,
        reading: None,
        reading_cycles: None,
        beside: None,
        status: RowStatus::Measured,
        reason: None,
        note: (!f.note.trim().is_empty()).then(|| f.note.trim().to_string()),
        caveat: None,
        part: seeds::is_part(f),
        estimated: None,
        doubt: None,
        merged: None,
        unresolved: None,
    };
    let (found, today) = match target {
        Target::Bench(_) | Target::Pick(_) => {
            let want = target.want().expect("a single result");
            name_today(&mut row, &want);
            match found_or_why(run, want, &mut row) {
                Some(x) => x,
                None => return row,
            }
        }
        Target::Nearest(n) => match nearest(run, n, &mut row) {
            Some(x) => x,
            None => return row,
        },
        Target::Sum(sum) => match summed(run, sum, &mut row) {
            Some(x) => x,
            None => return row,
        },
        Target::Fallback(fb) => match fallback(run, fb, &mut row) {
            Some(x) => {
                // A combined stage answers: one merged row against the sum of what it spans.
                if !fb.spans.is_empty() && row.today_stage.as_deref() == fb.then.stage {
                    stages::merge(&mut row, &seeds::spanned(f));
                }
                x
            }
            None => return row,
        },
        Target::Planned(what) => return without(row, RowStatus::Planned, what.to_string()),
        Target::Stability(test) => return stability_row(run, test, row),
        Target::Counters(c) => return instructions::row(run, c, row),
        Target::CountersDifference(a, b) => return instructions::difference_row(run, a, b, row),
        Target::NotApplicable(why) => return without(row, RowStatus::NotApplicable, why.to_string()),
    };
    for (label, want) in seeds::beside(f) {
        let Lookup::Found(r, t) = lookup(run, want) else { continue };
        let Some(v) = t.mean.or(t.median) else { continue };
        let also = format!("{label}: {} {}", want.label(), fmt_value(r.unit, v));
        row.beside = Some(match row.beside.take() {
            Some(b) => format!("{b}; {also}"),
            None => also,
        });
    }
    // The ratio uses the papers' statistic, the mean, with its interval; a difference of
    // medians has none, and then the median and its interval stand in.
    let (now, name) = today.statistic();
    let stat = now.map(|n| n.estimate);
    // Same condition: a cold-cache figure beside a result taken cold, a hot one beside one not.
    // The map keeps to this (a test walks it); a hand-edited map or result is caught here.
    let cold_today = row.today_params.as_deref().is_some_and(|p| p.split(' ').any(|kv| kv == "cache=cold"));
    let cold_then = f.variant.contains("cold cache") || f.operation.ends_with(" cold");
    if cold_then && !cold_today {
        row.caveat = Some("a worst case (cold cache) beside a result not taken cold: the conditions differ".into());
    } else if !cold_then && cold_today {
        row.caveat = Some("a hot-cache figure beside a result taken cold: the conditions differ".into());
    }
    row.today_mean = today.mean;
    row.today_median = today.median;
    row.doubt = today.doubt.map(str::to_string);
    if let Some((ratio, [lo, hi], hot, below_step)) = today.cold_hot {
        // A hot twin under one timer step was counted as one step: the ratio is a lower bound.
        let also = if below_step {
            let step = fmt_ns(run.timer.resolution_ns);
            format!("hot twin under one timer step ({step}) · cold/hot ≥ {}× [≥ {}]", sig3(ratio), sig3(lo))
        } else {
            format!("hot twin {} · cold/hot {}× [{}, {}]", fmt_ns(hot), sig3(ratio), sig3(lo), sig3(hi))
        };
        row.beside = Some(match row.beside.take() {
            Some(b) => format!("{also}; {b}"),
            None => also,
        });
    }
    row.today_statistic = Some(name.to_string());
    if let Some(n) = now {
        row.today_ci95_lo = Some(n.ci95[0]);
        row.today_ci95_hi = Some(n.ci95[1]);
        row.below_resolution = (today.difference && n.includes_zero()).then(|| n.bound()).filter(|b| b.is_finite());
    }
    if let Some((estimate, total)) = today.estimate {
        // An estimate stands beside its total, with no ratio, and never below 0.
        stages::estimated(&mut row, estimate, total, today.crossings, found, hz);
        return row;
    }
    let set = |r: Option<Interval>, e: &mut Option<f64>, lo: &mut Option<f64>, hi: &mut Option<f64>| {
        *e = r.map(|r| r.estimate);
        *lo = r.map(|r| r.ci95[0]);
        *hi = r.map(|r| r.ci95[1]);
    };
    match found {
        Unit::Bytes => {
            row.today_unit = Some("bytes".into());
            if f.unit == "bytes" {
                let (r, reading) = read_ratio(Some(f.value), now, today.difference);
                set(r, &mut row.ratio_bytes, &mut row.ratio_bytes_ci95_lo, &mut row.ratio_bytes_ci95_hi);
                row.reading = reading;
            }
        }
        Unit::Count => row.today_unit = Some("count".into()),
        Unit::Ns => {
            row.today_unit = Some("ns".into());
            row.today_cycles = stat.zip(hz).map(|(ns, h)| ns * h / 1e9).and_then(finite);
            let (r, reading) = read_ratio(row.then_ns, now, today.difference);
            set(r, &mut row.ratio_time, &mut row.ratio_time_ci95_lo, &mut row.ratio_time_ci95_hi);
            row.reading = reading;
            let mut in_cycles =
                now.zip(hz).map(|(n, h)| Interval::new(n.estimate * h / 1e9, n.ci95.map(|x| x * h / 1e9)));
            // Core cycles where the PMU counted them; the counter's ticks (reference cycles)
            // otherwise, as the legend says.
            if let Some((c, ci)) = today.pmu_cycles {
                in_cycles = Some(Interval::new(c, ci));
                row.today_cycles = Some(c);
                let also = "cycles: core cycles counted by the PMU".to_string();
                row.beside = Some(match row.beside.take() {
                    Some(b) => format!("{b}; {also}"),
                    None => also,
                });
            }
            let (r, reading) = read_ratio(row.then_cycles, in_cycles, today.difference);
            set(r, &mut row.ratio_cycles, &mut row.ratio_cycles_ci95_lo, &mut row.ratio_cycles_ci95_hi);
            row.reading_cycles = reading;
        }
    }
    row
}

/// A figure of today's in its unit: a time, bytes, or a count.
fn fmt_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ns => fmt_ns(v),
        Unit::Bytes => fmt_bytes(v),
        Unit::Count => super::sig4(v),
    }
}

/// `row` without a figure today, and why.
fn without(mut row: SeedRow, status: RowStatus, reason: String) -> SeedRow {
    row.status = status;
    row.reason = Some(reason);
    row
}

/// A stability row: the longest run of `test` without a failure that `run` carries (its own,
/// or the history's, which `osprim papers` lends it with a "recorded …" note), as a duration
/// beside the paper's days, saying which run it is and, for the seed suite's short test, that
/// it is one. A failure this result's own run found is the row's reading (with its reason),
/// whatever ran longer before. A duration has no interval, so the row gets no ratio.
fn stability_row(run: &RunFile, test: &str, mut row: SeedRow) -> SeedRow {
    use model::stability::{Outcome, StabilityRun};
    row.today_id = Some(format!("stability.{test}"));
    let runs: Vec<&StabilityRun> = run.stability.iter().filter(|s| s.test.name() == test).collect();
    let recorded = |s: &StabilityRun| s.notes.iter().find(|n| n.starts_with("recorded ")).cloned();
    // Hours and days as such, beside the paper's days.
    let duration = |s: f64| match s {
        86_400.0.. => match super::short_number(s / 86_400.0) {
            one if one == "1" => "1 day".to_string(),
            n => format!("{n} days"),
        },
        3_600.0.. => format!("{} h", super::short_number(s / 3_600.0)),
        _ => Unit::Ns.format(s * 1e9),
    };
    let Some(best) = runs.iter().copied().max_by(|a, b| a.clean_s.total_cmp(&b.clean_s)) else {
        return without(
            row,
            RowStatus::Planned,
            format!("a run of `osprim {test}`: none is in this result or in this machine's history"),
        );
    };
    let which = |s: &StabilityRun| match (recorded(s), s.short) {
        (Some(from), true) => format!("a short test of an earlier seed-suite run ({from})"),
        (Some(from), false) => format!("the longest in this machine's history (`osprim {test}`, {from})"),
        (None, true) => "this run's short test (the seed suite's)".to_string(),
        (None, false) => "this result's run".to_string(),
    };
    let own_failure = runs.iter().find_map(|s| match &s.outcome {
        Outcome::Failed { at_s, what, replay } if recorded(s).is_none() => Some((s, *at_s, what, replay)),
        _ => None,
    });
    if let Some((failed, at_s, what, replay)) = own_failure {
        let longest = if best.is_clean() && recorded(best).is_some() {
            format!("; the longest clean run known: {} ({})", duration(best.clean_s), which(best))
        } else {
            String::new()
        };
        return without(
            row,
            RowStatus::NotInResult,
            format!(
                "failed: {} found a failure after {}: {what} (seed {}; replay: {replay}){longest}",
                which(failed),
                duration(at_s),
                failed.seed
            ),
        );
    }
    row.today_params = Some(format!("mode={}", best.mode));
    row.today_unit = Some("ns".into());
    row.today_mean = Some(best.clean_s * 1e9);
    row.today_statistic = Some("longest run without a failure".into());
    let paper = format!("{} {}", super::short_number(row.then), row.then_unit);
    let how = match &best.outcome {
        Outcome::Clean => String::new(),
        _ => format!(" ({})", super::stability::outcome(best)),
    };
    let short = if best.short {
        format!(
            "; a short test, which shows only that the test runs clean here for that long: a longer `osprim \
             {test}`, once in the history, replaces it"
        )
    } else {
        String::new()
    };
    row.caveat = Some(format!(
        "{}: {} without a failure, against the paper's {paper}{how}{short}; seed {}; a duration has no interval, so \
         no ratio",
        which(best),
        duration(best.clean_s),
        best.seed
    ));
    row
}

/// Names the result that answers `row`: id, parameters and stage.
fn name_today(row: &mut SeedRow, want: &Want) {
    row.today_id = Some(want.id.to_string());
    row.today_params = (!want.params.is_empty())
        .then(|| want.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
    row.today_stage = want.stage.map(str::to_string);
}

/// The unit and figures of `want` in `run`; or `None`, with `row` saying why there are none.
fn found_or_why(run: &RunFile, want: Want, row: &mut SeedRow) -> Option<(Unit, Today)> {
    match lookup(run, want) {
        Lookup::Found(r, t) => Some((r.unit, t)),
        Lookup::Empty(r) => {
            row.status = RowStatus::NotInResult;
            row.reason = Some(match (r.status, &r.reason) {
                (Status::Skipped, Some(why)) => format!("skipped: {why}"),
                (Status::Skipped, None) => "skipped".into(),
                (Status::Failed, Some(why)) => format!("failed: {why}"),
                (Status::Failed, None) => "failed".into(),
                _ if want.stage.is_some() => match &r.breakdown {
                    Some(b) if !b.is_empty() => {
                        let names: Vec<&str> = b.iter().map(|s| s.name.as_str()).collect();
                        // Another whole breakdown of the same result: this machine cannot time
                        // the stage apart (e.g. without tracepoints), and times it with its
                        // neighbour.
                        let whole = seeds::partitions(want.id).iter().any(|p| p.iter().all(|n| names.contains(n)));
                        if whole {
                            format!(
                                "combined here: timed together with a neighbouring stage (its stages: {})",
                                names.join(", ")
                            )
                        } else {
                            format!("no such stage in this result (its stages: {})", names.join(", "))
                        }
                    }
                    _ => "no such stage in this result".into(),
                },
                _ => "no figures in this result".into(),
            });
            None
        }
        Lookup::Refused(why) => {
            row.status = RowStatus::NotInResult;
            row.reason = Some(format!("refused: {why}"));
            None
        }
        Lookup::Absent => {
            row.status = RowStatus::NotInResult;
            row.reason =
                Some(if run.partial { "not in this result (a partial run)" } else { "not in this result" }.into());
            None
        }
    }
}

/// A `nearest:` row: the fastest of the candidates measured in `run` (by the papers'
/// statistic), the others listed beside it.
fn nearest(run: &RunFile, n: seeds::Candidates, row: &mut SeedRow) -> Option<(Unit, Today)> {
    let stat = |t: &Today| t.mean.or(t.median).unwrap_or(f64::INFINITY);
    let mut found: Vec<(Want, Unit, Today)> = n
        .candidates
        .iter()
        .filter_map(|&w| match lookup(run, w) {
            Lookup::Found(r, t) => Some((w, r.unit, t)),
            _ => None,
        })
        .collect();
    found.sort_by(|a, b| stat(&a.2).total_cmp(&stat(&b.2)));
    row.nearest = Some(n.why.to_string());
    let Some(&(best, unit, today)) = found.first() else {
        if let [only] = n.candidates {
            // One candidate: its own reason (skipped here, and why).
            name_today(row, only);
            return found_or_why(run, *only, row);
        }
        let ids: Vec<&str> = n.candidates.iter().map(|w| w.id).collect();
        row.today_id = Some(ids.join(" | "));
        row.status = RowStatus::NotInResult;
        row.reason = Some(format!("none of {} has figures in this result", ids.join(", ")));
        return None;
    };
    name_today(row, &best);
    let others: Vec<String> =
        found[1..].iter().map(|(w, unit, t)| format!("{} {}", w.id, fmt_value(*unit, stat(t)))).collect();
    if !others.is_empty() {
        row.beside = Some(format!("also measured: {}", others.join(", ")));
    }
    Some((unit, today))
}

/// A row answered by `fb.first` where it has figures, else by its nearest `fb.then`
/// (labelled, with why); with both measured, the nearest's figure is shown beside.
fn fallback(run: &RunFile, fb: seeds::Fallback, row: &mut SeedRow) -> Option<(Unit, Today)> {
    name_today(row, &fb.first);
    if !fb.missing.is_empty() {
        row.caveat = Some(format!("today's figure leaves out {}, which has no Linux counterpart", fb.missing));
    }
    if let Lookup::Found(r, t) = lookup(run, fb.first) {
        if !fb.beside.is_empty()
            && let Lookup::Found(then, n) = lookup(run, fb.then)
            && let Some(v) = n.mean.or(n.median)
        {
            row.beside = Some(format!("{}: {} {}", fb.beside, fb.then.label(), fmt_value(then.unit, v)));
        }
        return Some((r.unit, t));
    }
    let mut first = row.clone();
    let _ = found_or_why(run, fb.first, &mut first);
    name_today(row, &fb.then);
    let found = found_or_why(run, fb.then, row);
    match found {
        Some(x) => {
            row.nearest = Some(fb.why.to_string());
            Some(x)
        }
        // No record of the first at all (a machine without its hardware leaves none, or
        // another's only): the nearest's reason is the row's, named by the nearest.
        None if matches!(lookup(run, fb.first), Lookup::Absent) => {
            row.nearest = Some(fb.why.to_string());
            None
        }
        None => {
            name_today(row, &fb.first);
            let why_first = first.reason.unwrap_or_default();
            let why_then = row.reason.take().unwrap_or_default();
            row.reason = Some(if why_first == why_then {
                why_first
            } else {
                format!("{why_first}; its nearest {}: {why_then}", fb.then.id)
            });
            None
        }
    }
}

/// A row the paper composes from parts: the sum of the parts' figures, when every part has
/// them; the part the sum leaves out is said.
fn summed(run: &RunFile, sum: seeds::Parts, row: &mut SeedRow) -> Option<(Unit, Today)> {
    let ids: Vec<&str> = sum.parts.iter().map(|w| w.id).collect();
    let params: Vec<String> = sum.parts.iter().flat_map(|w| w.params.iter().map(|(k, v)| format!("{k}={v}"))).collect();
    row.today_id = Some(ids.join(" + "));
    row.today_params = (!params.is_empty()).then(|| params.join(" "));
    let zero = Some([0.0, 0.0]);
    let mut total = Today {
        mean: Some(0.0),
        median: Some(0.0),
        mean_ci: zero,
        median_ci: zero,
        doubt: None,
        crossings: None,
        cold_hot: None,
        pmu_cycles: None,
        estimate: None,
        difference: false,
    };
    // The parts' intervals add end to end: conservative, as the parts were measured apart.
    let add = |a: Option<[f64; 2]>, b: Option<[f64; 2]>| a.zip(b).map(|(a, b)| [a[0] + b[0], a[1] + b[1]]);
    for &part in sum.parts {
        let mut why = row.clone();
        let Some((unit, t)) = found_or_why(run, part, &mut why) else {
            row.status = why.status;
            row.reason = why.reason;
            return None;
        };
        if unit != Unit::Ns {
            row.status = RowStatus::NotInResult;
            row.reason = Some(format!("{} is not a time", part.label()));
            return None;
        }
        total.mean = total.mean.zip(t.mean).map(|(a, b)| a + b);
        total.median = total.median.zip(t.median).map(|(a, b)| a + b);
        total.mean_ci = add(total.mean_ci, t.mean_ci);
        total.median_ci = add(total.median_ci, t.median_ci);
        total.doubt = total.doubt.or(t.doubt);
        total.difference |= t.difference;
    }
    if !sum.missing.is_empty() {
        row.caveat = Some(format!("today's sum leaves out {}, which has no Linux counterpart", sum.missing));
    }
    Some((Unit::Ns, total))
}

// ---------------------------------------------------------------------------------------------
// Words for numbers
// ---------------------------------------------------------------------------------------------

/// A number ≥ 1 with three significant figures and no exponent: `1.23`, `12.3`, `123`, `1230`.
fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        let step = 10f64.powi(a.log10().floor() as i32 - 2);
        format!("{:.0}", (v / step).round() * step)
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// What a ratio compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// Time or cycles: above 1, today is faster.
    Time,
    /// Memory: above 1, today needs less.
    Memory,
    /// Retired instructions: above 1, today retires fewer.
    Instructions,
}

/// "26.7× faster", "250× slower", "13.8× less memory"; and whether today is better.
fn change_words(r: f64, kind: Change) -> (String, Style) {
    let (better, worse) = match kind {
        Change::Time => ("faster", "slower"),
        Change::Memory => ("less memory", "more memory"),
        Change::Instructions => ("fewer instructions", "more instructions"),
    };
    if r >= 1.0 {
        (format!("{}× {better}", sig3(r)), Style::Good)
    } else {
        (format!("{}× {worse}", sig3(1.0 / r)), Style::Warn)
    }
}

/// A ratio's end with three significant figures, below 1 too: `0.504`, `0.00412`, `25.1`.
fn sig3_end(v: f64) -> String {
    let a = v.abs();
    if !a.is_finite() || a >= 0.9995 || a == 0.0 {
        return sig3(v);
    }
    let digits = (2 - a.log10().floor() as i32).clamp(2, 12) as usize;
    format!("{v:.digits$}")
}

/// The interval of a ratio, compact: `[25.1, 28.4]`; nothing for an interval without width
/// (an old result file's, or a figure without one).
fn bracket(lo: f64, hi: f64) -> String {
    // An open end: a quantity that cannot be negative whose interval reaches 0.
    let end = |v: f64| if v.is_infinite() { "∞".to_string() } else { sig3_end(v) };
    if hi > lo { format!(" [{}, {}]", end(lo), end(hi)) } else { String::new() }
}

/// A ratio read by its interval, in words: "26.7× faster [25.1, 28.4]" (the interval of the
/// factor named), "1.42× slower [1.05, 1.90]", "≈ same [0.95, 1.04]" and "inconclusive [0.50,
/// 1.03]" (the interval of the paper's figure over today's), or "below resolution (|x| <
/// 12 ns)" with `bound` the bound in today's unit.
fn reading_words(ratio: Option<Interval>, reading: Reading, kind: Change, bound: &str) -> (String, Style) {
    if reading == Reading::Estimated {
        return ("estimated: no ratio".into(), Style::Plain);
    }
    let Some(r) = ratio.filter(|_| reading != Reading::BelowResolution) else {
        return (format!("below resolution (|x| < {bound})"), Style::Plain);
    };
    let [lo, hi] = r.ci95;
    match reading {
        Reading::Better | Reading::Worse => {
            let (words, tone) = change_words(r.estimate, kind);
            let ends = if r.estimate >= 1.0 { bracket(lo, hi) } else { bracket(1.0 / hi, 1.0 / lo) };
            (format!("{words}{ends}"), tone)
        }
        Reading::Same => (format!("≈ same{}", bracket(lo, hi)), Style::Plain),
        Reading::Inconclusive | Reading::BelowResolution | Reading::Estimated => {
            (format!("inconclusive{}", bracket(lo, hi)), Style::Plain)
        }
    }
}

/// The bound of a row below resolution, in today's unit (`-` when it has none).
fn bound_text(r: &SeedRow) -> String {
    today_text(r, r.below_resolution)
}

/// The change column of a row (time or memory), in words with its interval.
fn change_cell(r: &SeedRow) -> Option<(String, Style)> {
    r.change().map(|(x, reading, k)| reading_words(x, reading, k, &bound_text(r)))
}

/// The change in cycles of a row, in words with its interval.
fn cycles_cell(r: &SeedRow) -> Option<(String, Style)> {
    r.change_cycles().map(|(x, reading, k)| reading_words(x, reading, k, &bound_text(r)))
}

/// A row's change in time or memory in words with its interval, as every format prints it
/// (`None` where it has none): what the HTML report's bars say.
pub fn change_text(r: &SeedRow) -> Option<String> {
    change_cell(r).map(|c| c.0)
}

/// A row's change in cycles in words with its interval (`None` where it has none).
pub fn cycles_change_text(r: &SeedRow) -> Option<String> {
    cycles_cell(r).map(|c| c.0)
}

/// The published figure as written: `1401 µs`, `51.73 cycles`, `32 B`.
fn then_text(r: &SeedRow) -> String {
    let unit = match r.then_unit.as_str() {
        "us" => "µs",
        "bytes" => "B",
        u => u,
    };
    format!("{} {unit}", r.then)
}

/// A figure of today's in its unit (`-` when there is none).
fn today_text(r: &SeedRow, v: Option<f64>) -> String {
    if let (None, Some(why)) = (v, &r.unresolved) {
        return why.clone();
    }
    match (v, r.today_unit.as_deref()) {
        (Some(v), Some("bytes")) => fmt_bytes(v),
        (Some(v), Some("count")) => super::sig4(v),
        (Some(v), Some("instructions")) => format!("{} instr", super::sig4(v)),
        (Some(v), _) => fmt_ns(v),
        (None, _) => "-".into(),
    }
}

/// The benchmark label: `id [k=v …] (stage)`.
fn bench_text(r: &SeedRow) -> Option<String> {
    let id = r.today_id.as_ref()?;
    let mut s = if r.nearest.is_some() { format!("nearest: {id}") } else { id.clone() };
    if let Some(p) = &r.today_params {
        let _ = write!(s, " [{p}]");
    }
    if let Some(stage) = &r.today_stage {
        let _ = write!(s, " ({stage})");
    }
    Some(s)
}

/// Why a row has no figure today, in words.
fn reason_text(r: &SeedRow) -> String {
    let why = r.reason.as_deref().unwrap_or("");
    match r.status {
        RowStatus::Measured => String::new(),
        RowStatus::NotInResult => format!("{}: {why}", bench_text(r).unwrap_or_default()),
        RowStatus::Planned => format!("not measured yet (needs {why})"),
        RowStatus::NeedsCounters => format!("needs hardware counters ({why})"),
        RowStatus::NotApplicable => format!("not applicable: {why}"),
        RowStatus::Merged => why.to_string(),
    }
}

/// One table of a paper in the view: where it is in the paper, its caption, and its rows each
/// with the label it goes by.
pub(crate) struct Group<'a> {
    pub(crate) source: String,
    pub(crate) caption: String,
    pub(crate) rows: Vec<(&'a SeedRow, String)>,
}

impl Group<'_> {
    /// "Table 3: Average time …", or the source alone.
    pub(crate) fn title(&self) -> String {
        if self.caption.is_empty() { self.source.clone() } else { format!("{}: {}", self.source, self.caption) }
    }

    /// The rows the view shows: all of them, or those with a figure today.
    pub(crate) fn visible(&self, all: bool) -> Vec<&(&SeedRow, String)> {
        self.rows.iter().filter(|(r, _)| all || r.status == RowStatus::Measured).collect()
    }
}

/// The labels rows go by in one table: set apart by system or platform where the table mixes
/// them (Rhino's Digital UNIX and SPIN, VMMC's Linux and NT, Go!'s other OSs), and without a
/// prefix every operation shares ("notification: "), which the caption says.
fn labels(rows: &[&SeedRow], paper: &Paper) -> Vec<String> {
    let mut platforms: Vec<&str> = rows.iter().map(|r| r.platform.as_str()).collect();
    platforms.sort_unstable();
    platforms.dedup();
    let mut systems: Vec<&str> = rows.iter().map(|r| r.system.as_str()).collect();
    systems.sort_unstable();
    systems.dedup();
    let own = paper.system.split_whitespace().next().unwrap_or(paper.system);
    let short = |s: &str| -> String {
        s.strip_prefix(own)
            .map(|t| t.trim_start().trim_start_matches("on ").to_string())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| s.to_string())
    };
    let shared = rows
        .first()
        .and_then(|r| r.operation.split_once(": ").map(|(p, _)| format!("{p}: ")))
        .filter(|p| rows.len() > 1 && rows.iter().all(|r| r.operation.starts_with(p.as_str())));
    rows.iter()
        .map(|r| {
            let mut label = r.label();
            if let Some(p) = &shared {
                label = label[p.len()..].to_string();
            }
            match (systems.len() > 1, platforms.len() > 1) {
                (true, true) => format!("{} ({}): {label}", short(&r.system), r.platform),
                (true, false) => format!("{}: {label}", short(&r.system)),
                (false, true) => format!("{}: {label}", r.platform),
                (false, false) => label,
            }
        })
        .collect()
}

/// A paper's rows, grouped by its tables (tables the metadata lacks come last, as found).
pub(crate) fn by_table<'a>(paper: &Paper, rows: &'a [SeedRow]) -> Vec<Group<'a>> {
    let mine: Vec<&SeedRow> = rows.iter().filter(|r| r.paper == paper.system).collect();
    let mut keys: Vec<&str> = paper.tables.iter().map(|t| t.key).collect();
    for r in &mine {
        if !keys.contains(&r.table.as_str()) {
            keys.push(r.table.as_str());
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            let group: Vec<&SeedRow> = mine.iter().copied().filter(|r| r.table == k).collect();
            if group.is_empty() {
                return None;
            }
            let (source, caption) =
                paper.table(k).map_or((k.to_string(), String::new()), |t| (t.source.into(), t.caption.into()));
            let names = labels(&group, paper);
            Some(Group { source, caption, rows: group.into_iter().zip(names).collect() })
        })
        .collect()
}

/// Rows without a figure today, one line per reason: how many, why, and which (by table
/// where the paper has several).
pub(crate) fn collapsed(groups: &[Group]) -> Vec<String> {
    struct Reason {
        count: usize,
        head: String,
        /// (table, its operations)
        ops: Vec<(String, Vec<String>)>,
    }
    let mut out: Vec<Reason> = Vec::new();
    // Rows waiting for benchmarks of one family share a line when there are several.
    let planned: Vec<&str> = groups
        .iter()
        .flat_map(|g| g.rows.iter())
        .filter(|(r, _)| r.status == RowStatus::Planned)
        .filter_map(|(r, _)| planned_family(r.reason.as_deref().unwrap_or("")))
        .collect();
    for g in groups {
        for (r, label) in g.rows.iter().filter(|(r, _)| !matches!(r.status, RowStatus::Measured | RowStatus::Merged)) {
            let why = r.reason.as_deref().unwrap_or("");
            let family = planned_family(why)
                .filter(|f| r.status == RowStatus::Planned && planned.iter().filter(|x| *x == f).count() > 1);
            let head = match r.status {
                RowStatus::Measured | RowStatus::Merged => continue,
                RowStatus::Planned if family.is_some() => {
                    format!("not measured yet (needs the {}.* benchmarks)", family.unwrap_or_default())
                }
                RowStatus::Planned => format!("not measured yet (needs {why})"),
                RowStatus::NeedsCounters => match why.splitn(3, "; ").nth(2) {
                    Some(run_why) => format!("need hardware counters (retired instructions): {run_why}"),
                    None => "need hardware counters (retired instructions)".to_string(),
                },
                RowStatus::NotApplicable => format!("not applicable: {why}"),
                RowStatus::NotInResult => why.to_string(),
            };
            // The operation without its variant (a best and a worst case are one operation).
            let mut op = match label.strip_suffix(&r.variant).and_then(|l| l.strip_suffix(", ")) {
                Some(l) if !r.variant.is_empty() => l.to_string(),
                _ => label.clone(),
            };
            if r.status == RowStatus::NotInResult
                && let Some(b) = bench_text(r)
            {
                let _ = write!(op, " ({b})");
            }
            if family.is_some() {
                let _ = write!(op, " ({why})");
            }
            let reason = match out.iter_mut().find(|x| x.head == head) {
                Some(x) => x,
                None => {
                    out.push(Reason { count: 0, head, ops: Vec::new() });
                    out.last_mut().expect("just pushed")
                }
            };
            reason.count += 1;
            let table = match reason.ops.iter_mut().find(|(t, _)| *t == g.source) {
                Some(t) => t,
                None => {
                    reason.ops.push((g.source.clone(), Vec::new()));
                    reason.ops.last_mut().expect("just pushed")
                }
            };
            if !table.1.contains(&op) {
                table.1.push(op);
            }
        }
    }
    let several = groups.len() > 1;
    out.into_iter()
        .map(|x| {
            let which: Vec<String> = x
                .ops
                .iter()
                .map(|(t, ops)| if several { format!("{t}: {}", ops.join(", ")) } else { ops.join(", ") })
                .collect();
            format!("{} {} — {}", plural(x.count, "row"), x.head, which.join("; "))
        })
        .collect()
}

/// The family of a planned benchmark (`domain` of `domain.create.null`), when the reason
/// names one: rows waiting for one family are counted on one line.
fn planned_family(why: &str) -> Option<&str> {
    let word = why.split_whitespace().next()?;
    let (family, _) = word.split_once('.')?;
    word.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '_').then_some(family)
}

/// The rows without a figure today, counted per kind: "8 cannot run here, 7 not measured yet".
pub(crate) fn without_counts<'a>(rows: impl Iterator<Item = &'a SeedRow>, counters: &str) -> Vec<String> {
    let mut n = [0usize; 5];
    for r in rows {
        let skipped = r.reason.as_deref().is_some_and(|w| w.starts_with("skipped") || w.starts_with("combined here"));
        match r.status {
            RowStatus::Measured | RowStatus::Merged => {}
            RowStatus::NotInResult if skipped => n[0] += 1,
            RowStatus::NotInResult => n[1] += 1,
            RowStatus::Planned => n[2] += 1,
            RowStatus::NeedsCounters => n[3] += 1,
            RowStatus::NotApplicable => n[4] += 1,
        }
    }
    let words = ["cannot run here", "not in this result", "not measured yet", counters, "not applicable"];
    n.iter().zip(words).filter(|(c, _)| **c > 0).map(|(c, w)| format!("{c} {w}")).collect()
}

/// "1 row", "2 rows".
fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The note of a row whose ratio uses the median.
const MEDIAN_NOTE: &str = "today's figure is a difference of medians, which has no mean: the median stands in";

/// Footnotes of one paper: the texts, numbered from 1 in order of first use.
#[derive(Default)]
pub(crate) struct Notes(pub(crate) Vec<String>);

impl Notes {
    /// The numbers of `r`'s notes (its paper's remark, and a median standing in for a mean).
    pub(crate) fn marks(&mut self, r: &SeedRow) -> Vec<usize> {
        let nearest = r.nearest.as_ref().map(|why| format!("nearest mechanism: {why}"));
        let mut texts: Vec<&str> = (r.note.iter().chain(&r.merged).chain(&r.caveat).chain(&nearest))
            .chain(&r.estimated)
            .map(String::as_str)
            .collect();
        if r.today_statistic.as_deref() == Some("median") {
            texts.push(MEDIAN_NOTE);
        }
        texts
            .into_iter()
            .map(|t| match self.0.iter().position(|n| n == t) {
                Some(i) => i + 1,
                None => {
                    self.0.push(t.to_string());
                    self.0.len()
                }
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Text: wrapping, colour and a table that keeps to the width
// ---------------------------------------------------------------------------------------------

/// `text` wrapped the seed view's way ([`Wrap::SEEDS`]): a word too long for a line is cut.
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    layout::wrap(text, width, first, rest, Wrap::SEEDS)
}

/// A paragraph wrapped to `width` with a four-column hanging indent, each line ending in `\n`.
fn para(out: &mut String, text: &str, width: usize) {
    for l in wrap(text, width, "", "    ") {
        out.push_str(&l);
        out.push('\n');
    }
}

/// A heading, bold when colour is on, wrapped to the width.
fn heading(out: &mut String, text: &str, width: usize, color: bool) {
    for l in wrap(text, width, "", "    ") {
        out.push_str(&paint(&l, Style::Bold, color));
        out.push('\n');
    }
}

// ---------------------------------------------------------------------------------------------
// The view for people
// ---------------------------------------------------------------------------------------------

/// The machine in one line: CPU, CPUs, hypervisor, kernel.
pub(crate) fn machine_text(run: &RunFile) -> String {
    let m = &run.machine;
    let mut parts = vec![if m.cpu.model_name.trim().is_empty() {
        "an unknown CPU".to_string()
    } else {
        m.cpu.model_name.trim().to_string()
    }];
    if let Some(n) = m.cpu.logical_cpus {
        parts.push(format!("{n} logical CPU{}", if n == 1 { "" } else { "s" }));
    }
    if m.virtualization.virtualized == Some(true) {
        let v = m.virtualization.hypervisor_vendor.trim();
        parts.push(if v.is_empty() || v == "unknown" || v == "none" {
            "a virtual machine".into()
        } else {
            format!("{v} guest")
        });
    }
    if !m.kernel.release.trim().is_empty() {
        parts.push(format!("Linux {}", m.kernel.release.trim()));
    }
    parts.join(", ")
}

/// What today's cycles are.
pub(crate) fn cycles_text(run: &RunFile) -> String {
    let counter = match run.timer.kind {
        TimerKind::Tsc => "TSC ticks",
        TimerKind::Cntvct => "ticks of the ARM generic timer",
        TimerKind::MonotonicRaw => "ticks of the calibrated cycle counter",
    };
    match counter_hz(run) {
        Some(hz) => format!("today's cycles are {counter} at {:.1} MHz (reference cycles, not core cycles)", hz / 1e6),
        None => "this run has no cycle counter: nothing is compared in cycles".to_string(),
    }
}

/// The key of today's figure: rows with equal keys show one figure.
fn figure_key(r: &SeedRow) -> String {
    format!(
        "{:?} {:?} {:?} {:?}",
        r.today_id,
        r.today_params,
        r.today_stage,
        r.today_mean.or(r.today_median).map(f64::to_bits)
    )
}

/// What "N× faster" means, for every format.
pub(crate) const LEGEND: &str = "\"N× faster [lo, hi]\": the paper's figure over today's, both means (the \
    papers' statistic; the median where today has none), with its 95 % interval; in time, or in cycles where \
    the paper gives cycles. Within ±10 % it reads \"≈ same\"; an interval that cannot tell faster from slower, \
    \"inconclusive\" (with the ratio's own ends). Only a difference (with − without, process − thread, total − \
    estimate) may be \"below resolution (|x| < bound)\"; a latency, stage, size or count cannot be negative: \
    where its interval reaches 0 the ratio's upper end is open (∞). A merged row sets one stage of today's \
    spanning two of the paper's rows beside their sum; an estimated stage (not timed inside the operation) \
    stands beside its total with no ratio, and below 0 reads \"< 0: not resolved\". docs/seed-map.md (seed \
    map, revision 4) gives each row's counterpart and why.";

/// What a paper's summary rests on, for every format that shows the summaries.
pub(crate) const SUMMARY_LEGEND: &str = "A paper's median goes over every total with a ratio (inconclusive too), \
    each figure of today's once; its interval runs from the median of the rows' lower ends to that of their \
    upper ends (if every row lies in its interval, the median lies in this one).";

/// How today's means were taken, and what their intervals cover: it follows the run's method.
pub(crate) fn method_text(run: &RunFile) -> &'static str {
    match run.config.method {
        Method::Seed => {
            "Today's means were taken by the seed method, the papers' own protocol (single operations, the \
             first of each round discarded); their intervals are the mean's, by the bootstrap over rounds."
        }
        Method::Adaptive => {
            "Today's means come from adaptive sampling (batches of operations in rounds); their intervals are \
             the mean's, by the bootstrap over rounds and blocks within them."
        }
    }
}

/// The summary section: what is compared, on which machine, and per paper how it went.
fn summary(run: &RunFile, rows: &[SeedRow], width: usize, color: bool) -> String {
    let mut out = String::new();
    heading(&mut out, "Five classic papers beside today's Linux", width, color);
    para(&mut out, &format!("Today: {}; {}.", machine_text(run), cycles_text(run)), width);
    para(&mut out, &format!("{LEGEND} {} {SUMMARY_LEGEND}", method_text(run)), width);
    if run.partial {
        para(
            &mut out,
            "PARTIAL RUN: it was interrupted (or is still going on); rows it did not reach say \"not in this result\".",
            width,
        );
    }
    for paper in &seeds::PAPERS {
        out.push('\n');
        summary::text(&mut out, &summary::summarize(paper, rows), width, color);
    }
    out
}

/// The columns of a paper's table in the text view: the benchmark column only when `wide`.
fn columns(wide: bool) -> Vec<Column> {
    let mut c = vec![
        Column { header: "operation", align: Align::Left, flex: true, movable: false },
        Column { header: "then", align: Align::Right, flex: false, movable: false },
        Column { header: "today mean", align: Align::Right, flex: false, movable: false },
        Column { header: "median", align: Align::Right, flex: false, movable: true },
        Column { header: "change", align: Align::Right, flex: false, movable: false },
        Column { header: "in cycles", align: Align::Right, flex: false, movable: true },
    ];
    if wide {
        c.push(Column { header: "today's benchmark", align: Align::Left, flex: false, movable: false });
    }
    c
}

/// The rows without a figure, as lines of text, and the notes.
fn left_out_and_notes(out: &mut String, paper: &Paper, groups: &[Group], notes: &Notes, all_rows: bool, width: usize) {
    if !all_rows {
        let left = collapsed(groups);
        if !left.is_empty() {
            out.push('\n');
            para(out, "Without a figure today (--all-rows lists them):", width);
            for l in left {
                for w in wrap(&l, width, "  ", "      ") {
                    let _ = writeln!(out, "{w}");
                }
            }
        }
    }
    if !paper.notes.is_empty() || !notes.0.is_empty() {
        out.push('\n');
        let _ = writeln!(out, "Notes:");
        for n in paper.notes {
            for w in wrap(n, width, "  • ", "    ") {
                let _ = writeln!(out, "{w}");
            }
        }
        for (i, n) in notes.0.iter().enumerate() {
            let mark = format!("  {} ", superscript(i + 1));
            for w in wrap(n, width, &mark, "    ") {
                let _ = writeln!(out, "{w}");
            }
        }
    }
}

/// One paper: heading, citation, a table per table of the paper, the rows left out, notes.
fn paper_text(out: &mut String, paper: &Paper, rows: &[SeedRow], view: &super::View, width: usize) {
    let color = view.color;
    let groups = by_table(paper, rows);
    out.push('\n');
    let title = paper.heading();
    heading(out, &title, width, color);
    let _ = writeln!(out, "{}", "═".repeat(layout::width(&title).min(width)));
    para(out, &paper.citation(), width);
    para(out, &format!("Measured on {}; {}.", paper.platform, paper.statistic), width);
    let mut notes = Notes::default();
    for g in &groups {
        let visible = g.visible(view.all_rows);
        if visible.is_empty() {
            continue;
        }
        out.push('\n');
        heading(out, &g.title(), width, color);
        let lines: Vec<folding::Row> = visible
            .iter()
            .map(|(r, label)| {
                let marks: Vec<String> = notes.marks(r).into_iter().map(superscript).collect();
                let change = change_cell(r);
                let cycles = cycles_cell(r);
                let words =
                    |c: Option<(String, Style)>| c.map_or_else(|| Cell::plain("-"), |(t, s)| Cell::styled(t, s));
                let mut cells = vec![
                    Cell::plain(format!("{label}{}", marks.join("˒"))),
                    Cell::plain(then_text(r)),
                    Cell::plain(today_text(r, r.today_mean)),
                    Cell::plain(today_text(r, r.today_median)),
                    words(change),
                    words(cycles),
                ];
                let mut detail = match r.status {
                    RowStatus::Measured => bench_text(r).unwrap_or_default(),
                    _ => reason_text(r),
                };
                if let Some(c) = r.today_cycles {
                    let _ = write!(detail, " · {} cycles", super::sig4(c));
                }
                if let Some(b) = &r.beside {
                    let _ = write!(detail, " · {b}");
                }
                if view.wide {
                    cells.push(Cell::plain(std::mem::take(&mut detail)));
                }
                folding::Row { cells, detail }
            })
            .collect();
        out.push_str(&folding::folded(&columns(view.wide), &lines, width, color));
    }
    left_out_and_notes(out, paper, &groups, &notes, view.all_rows, width);
}

/// The width the text view keeps to.
fn text_width(view: &super::View) -> usize {
    if view.wide { usize::MAX } else { view.width.max(40) }
}

/// The seed view for people: the summary, then each paper. Keeps to `view.width` columns
/// (unless `view.wide`); lists rows without a figure today one by one only with
/// `view.all_rows`.
pub fn render(run: &RunFile, view: &super::View) -> String {
    let width = text_width(view);
    let rows = rows(run);
    let mut out = summary(run, &rows, width, view.color);
    for paper in &seeds::PAPERS {
        paper_text(&mut out, paper, &rows, view, width);
    }
    out
}

/// The summary section alone: the first screen of [`render`].
pub fn render_summary(run: &RunFile, view: &super::View) -> String {
    summary(run, &rows(run), text_width(view), view.color)
}

// ---------------------------------------------------------------------------------------------
// Exports
// ---------------------------------------------------------------------------------------------

/// The cells every export shows for a row: label with note marks, then, today's benchmark (or
/// why there is none), mean, median, change, change in cycles. `-` where there is nothing.
pub(crate) fn export_cells(r: &SeedRow, label: &str) -> [String; 7] {
    let today = match r.status {
        RowStatus::Measured => bench_text(r).unwrap_or_default(),
        _ => reason_text(r),
    };
    [
        label.to_string(),
        then_text(r),
        today,
        today_text(r, r.today_mean),
        today_text(r, r.today_median),
        change_cell(r).map_or_else(|| "-".into(), |c| c.0),
        cycles_cell(r).map_or_else(|| "-".into(), |c| c.0),
    ]
}

mod instructions;
mod stages;
pub mod summary;
pub use summary::{Extreme, PaperSummary, paper_summaries};

#[cfg(test)]
mod tests;
