//! The per-paper summary as data ([`PaperSummary`], one per paper: [`paper_summaries`]) and its
//! renderings: the text of the seed view's first screen, a Markdown list and a LaTeX `itemize`
//! at the top of those exports, and the digest's one line per paper ([`crate::digest`]).
//!
//! What it rests on (SEED-MAP revision 4: a summary that reproduces): per paper, the rows
//! answered today, and of those every total with a ratio in one kind of change (in time where
//! there are times, else in cycles, else in memory), inconclusive and ≈ same ones included, each
//! figure of today's counted once; their median change with its own interval, how many of them
//! are nearest substitutes, the best and the worst conclusive row, and what was left out and
//! what is not answered, counted per reason.
//!
//! The median's interval runs from the median of the rows' lower ends to the median of their
//! upper ends: the median rises with each of its arguments, so if every row's ratio lies in its
//! own interval, the median of the ratios lies in that one. Distribution-free, and it carries
//! the measurement's uncertainty, not the spread between rows.

use super::{
    Change, Group, Interval, Paper, Reading, RowStatus, RunFile, SeedRow, bracket, by_table, change_words, figure_key,
    heading, reading_words, rows, seeds, without_counts, wrap,
};
use crate::escape::{Md, latex};
use std::fmt::Write;

/// One conclusive row at an end of a paper's range: its label, its change with the 95 %
/// interval, and its reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Extreme {
    /// The row's label in its paper's table: "SPIN: page fault read warm, total".
    pub label: String,
    /// The paper's figure over today's, with its 95 % interval.
    pub ratio: Interval,
    /// What the interval says: better, worse or ≈ same (never inconclusive: the summary rests
    /// on conclusive rows).
    pub reading: Reading,
    kind: Change,
}

impl Extreme {
    /// "26.7× faster", without the interval.
    pub fn words(&self) -> String {
        change_words(self.ratio.estimate, self.kind).0
    }

    /// "26.7× faster [25.1, 28.4]", "≈ same [0.95, 1.04]": the change read by its interval.
    pub fn with_interval(&self) -> String {
        reading_words(Some(self.ratio), self.reading, self.kind, "-").0
    }

    /// As [`Extreme::with_interval`], the interval's ends with two significant figures, for a
    /// line that has little room: "26.7× faster [25, 28]"; `tight`, without the space after
    /// the comma: "[25,28]".
    pub fn compact(&self, tight: bool) -> String {
        let [lo, hi] = self.ratio.ci95;
        let comma = if tight { "," } else { ", " };
        let ends = |a: f64, b: f64| {
            // Two significant figures, three where two would not tell the ends apart.
            let (x, y) = match (sig2(a), sig2(b)) {
                (x, y) if x == y => (super::sig3_end(a), super::sig3_end(b)),
                xy => xy,
            };
            if b > a { format!(" [{x}{comma}{y}]") } else { String::new() }
        };
        match self.reading {
            Reading::Same => format!("≈ same{}", ends(lo, hi)),
            _ if self.better() => format!("{}{}", self.words(), ends(lo, hi)),
            _ => format!("{}{}", self.words(), ends(1.0 / hi, 1.0 / lo)),
        }
    }

    /// Whether today is better (faster, less memory) than the paper.
    pub fn better(&self) -> bool {
        self.ratio.estimate >= 1.0
    }
}

/// A positive number with two significant figures, whole numbers from 10 on: `0.95`, `3.3`,
/// `25`, `118`.
fn sig2(v: f64) -> String {
    let a = v.abs();
    if !a.is_finite() || a >= 9.95 {
        format!("{v:.0}")
    } else if a >= 0.995 || a == 0.0 {
        format!("{v:.1}")
    } else {
        let digits = (1 - a.log10().floor() as i32).clamp(1, 12) as usize;
        format!("{v:.digits$}")
    }
}

/// The summary of one paper's rows beside a run.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperSummary {
    /// The paper's system: "RightSpeed", "Go! component OS".
    pub system: String,
    /// The paper, cited short: "Lorch & Smith, MobiSys 2003".
    pub cite: String,
    /// The paper's rows.
    pub total_rows: usize,
    /// The rows answered today: a figure the run resolves, or a merged row's.
    pub measured: usize,
    /// How many distinct figures of today's those rows show (rows answered by one result
    /// count once).
    pub distinct: usize,
    /// Of the rows answered, how many by a nearest substitute (`nearest:`).
    pub nearest: usize,
    /// Of the rows answered, how many on merged rows (a combined stage against the sum of the
    /// paper's rows it spans), and on how many merged rows.
    pub merged: (usize, usize),
    /// The rows not answered, counted per kind: "1 below resolution", "2 cannot run here".
    pub without: Vec<String>,
    /// How many rows are not answered.
    pub not_answered: usize,
    /// The median change over every total with a ratio, one per distinct figure (above 1:
    /// today faster); `None` when no total has one.
    pub median_change: Option<f64>,
    /// Its 95 % interval: the median of the rows' lower ends to the median of their upper
    /// ends (an upper end may be open: infinite).
    pub median_ci: Option<[f64; 2]>,
    /// What the ratios compare: "in time", "in cycles", "in memory" (empty without ratios).
    pub what: &'static str,
    /// The totals the median rests on.
    pub in_median: usize,
    /// How many distinct figures of today's they show.
    pub in_median_distinct: usize,
    /// How many of them are nearest substitutes.
    pub in_median_nearest: usize,
    /// How many of them are conclusive (better, worse or ≈ same): the range is theirs.
    pub conclusive: usize,
    /// The conclusive total with the greatest ratio (today best against the paper).
    pub best: Option<Extreme>,
    /// The conclusive total with the smallest ratio.
    pub worst: Option<Extreme>,
    /// Rows answered today that the median leaves out, per reason, in the order said: (how
    /// many, why).
    pub left: Vec<(usize, String)>,
    kind: Change,
}

impl PaperSummary {
    /// The median change in words: "26.7× faster" (`None` without a total with a ratio).
    pub fn median_words(&self) -> Option<String> {
        self.median_change.map(|m| change_words(m, self.kind).0)
    }

    /// The median change with its interval: "26.7× faster [25.1, 28.4]" (the interval of the
    /// factor named, as a row's).
    pub fn median_with_interval(&self) -> Option<String> {
        let m = self.median_change?;
        let (words, _) = change_words(m, self.kind);
        let ends = match self.median_ci {
            Some([lo, hi]) if m >= 1.0 => bracket(lo, hi),
            Some([lo, hi]) => bracket(1.0 / hi, 1.0 / lo),
            None => String::new(),
        };
        Some(format!("{words}{ends}"))
    }

    /// The first line of the summary, after the paper's name: "15 of 16 rows compared (14
    /// distinct figures, 7 by a nearest substitute); 1 not answered: 1 not applicable".
    pub fn counts_text(&self) -> String {
        let mut s = format!("{} of {} rows compared", self.measured, self.total_rows);
        let mut inner = Vec::new();
        if self.distinct < self.measured {
            let d = self.distinct;
            inner.push(format!("{d} distinct figure{}", if d == 1 { "" } else { "s" }));
        }
        if self.nearest > 0 {
            inner.push(format!("{} nearest", self.nearest));
        }
        if self.merged.0 > 0 {
            let (n, m) = self.merged;
            inner.push(format!("{n} on {m} merged row{}", if m == 1 { "" } else { "s" }));
        }
        if !inner.is_empty() {
            let _ = write!(s, " ({})", inner.join(", "));
        }
        if self.not_answered > 0 {
            let _ = write!(s, "; not answered: {}", self.without.join(", "));
        }
        s
    }

    /// The rest of the summary: the median with its interval and what it rests on, the range
    /// from worst to best, what was left out.
    pub fn change_text(&self) -> String {
        let left: Vec<String> = self.left.iter().map(|(n, why)| format!("{n} {why}")).collect();
        let mut text = String::new();
        match self.median_with_interval() {
            Some(m) => {
                let n = self.in_median;
                let _ = write!(text, "median {m} {} over {n} total{}", self.what, if n == 1 { "" } else { "s" });
                if self.in_median_nearest > 0 {
                    let _ = write!(text, ", {} nearest", self.in_median_nearest);
                }
                if let (Some(b), Some(w)) = (&self.best, &self.worst)
                    && self.conclusive > 1
                {
                    let _ = write!(text, "; from {} ({}) to {} ({})", w.words(), w.label, b.words(), b.label);
                }
                if !left.is_empty() {
                    let _ = write!(text, "; left out: {}", left.join(", "));
                }
            }
            None if !left.is_empty() => {
                let _ = write!(text, "no total with a ratio: left out {}", left.join(", "));
            }
            None if self.measured > 0 => text.push_str("no ratio: today's figures and the paper's are not alike"),
            None => text.push_str("nothing to compare yet"),
        }
        text
    }
}

/// Every paper's summary beside `run`, in the papers' order.
pub fn paper_summaries(run: &RunFile) -> Vec<PaperSummary> {
    let rows = rows(run);
    seeds::PAPERS.iter().map(|p| summarize(p, &rows)).collect()
}

/// The summary of one paper from the seed rows.
pub(super) fn summarize(paper: &Paper, rows: &[SeedRow]) -> PaperSummary {
    let groups: Vec<Group> = by_table(paper, rows);
    let all: Vec<&(&SeedRow, String)> = groups.iter().flat_map(|g| g.rows.iter()).collect();
    let answered: Vec<&&(&SeedRow, String)> =
        all.iter().filter(|(r, _)| r.resolved() || r.status == RowStatus::Merged).collect();
    let merged_rows = answered.iter().filter(|(r, _)| r.merged.is_some()).count();
    let merged_answered = answered.iter().filter(|(r, _)| r.status == RowStatus::Merged).count();
    let s = summary_ratios(&all);
    let extreme = |(label, ratio, reading): &(&str, Interval, Reading)| Extreme {
        label: label.to_string(),
        ratio: *ratio,
        reading: *reading,
        kind: s.kind,
    };
    let conclusive: Vec<&(&str, Interval, Reading)> = s.rows.iter().filter(|x| x.2.conclusive()).collect();
    let (median, median_ci) = match median_interval(&s.distinct) {
        Some((m, ci)) => (Some(m), Some(ci)),
        None => (None, None),
    };
    let mut without = unresolved_counts(&all);
    without.extend(without_counts(all.iter().map(|(r, _)| *r), "need counters"));
    PaperSummary {
        system: paper.system.to_string(),
        cite: paper.short_cite(),
        total_rows: all.len(),
        measured: answered.len(),
        distinct: distinct_figures(&all),
        nearest: answered.iter().filter(|(r, _)| r.nearest.is_some() && r.status == RowStatus::Measured).count(),
        merged: (merged_answered + merged_rows, merged_rows),
        not_answered: all.len() - answered.len(),
        without,
        median_change: median,
        median_ci,
        what: s.what,
        in_median: s.rows.len(),
        in_median_distinct: s.distinct.len(),
        in_median_nearest: s.nearest,
        conclusive: conclusive.len(),
        best: conclusive.iter().max_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate)).map(|x| extreme(x)),
        worst: conclusive.iter().min_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate)).map(|x| extreme(x)),
        left: s.left,
        kind: s.kind,
    }
}

/// The rows with a figure today that the run does not resolve, counted per reason: "1 below
/// resolution", "1 that failed its checks", "1 unresolved estimate"; each is not answered.
fn unresolved_counts(all: &[&(&SeedRow, String)]) -> Vec<String> {
    let shown: Vec<&SeedRow> = all.iter().map(|(r, _)| *r).filter(|r| r.status == RowStatus::Measured).collect();
    let count = |f: &dyn Fn(&SeedRow) -> bool| shown.iter().filter(|r| f(r)).count();
    let below = count(&|r| r.reading == Some(Reading::BelowResolution));
    let estimate = count(&|r| r.unresolved.is_some());
    let doubted = |why: &str| {
        count(&|r| {
            r.reading != Some(Reading::BelowResolution) && r.unresolved.is_none() && r.doubt.as_deref() == Some(why)
        })
    };
    let mut out = Vec::new();
    for (n, one, many) in [
        (below, "below resolution", "below resolution"),
        (estimate, "estimate below 0", "estimates below 0"),
        (doubted("failed its checks"), "that failed its checks", "that failed their checks"),
        (
            doubted("a difference within one clock read"),
            "difference within one clock read",
            "differences within one clock read",
        ),
    ] {
        if n > 0 {
            out.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    }
    out
}

/// The median of the distinct figures' ratios and its interval: the median of their lower
/// ends to the median of their upper ends (see the module's doc). `None` without ratios.
fn median_interval(distinct: &[Interval]) -> Option<(f64, [f64; 2])> {
    let m = median_log(distinct.iter().map(|x| x.estimate).collect())?;
    let lo = median_log(distinct.iter().map(|x| x.ci95[0]).collect())?;
    let hi = median_log(distinct.iter().map(|x| x.ci95[1]).collect())?;
    Some((m, [lo.min(m), hi.max(m)]))
}

/// The median of positive ratios on a log scale (an open end, infinite, counts as the largest):
/// the middle one, or the geometric mean of the middle two.
pub(super) fn median_log(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| !x.is_nan() && *x > 0.0);
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] * v[n / 2]).sqrt()),
    }
}

/// The summary of one paper as the seed view's text: its name, citation and counts as a
/// heading, then the change, wrapped under it.
pub(super) fn text(out: &mut String, s: &PaperSummary, width: usize, color: bool) {
    heading(out, &format!("{} ({}): {}", s.system, s.cite, s.counts_text()), width, color);
    for l in wrap(&s.change_text(), width, "    ", "    ") {
        let _ = writeln!(out, "{l}");
    }
}

/// Every paper's summary as a Markdown list under a heading, one item per paper.
pub(crate) fn markdown(run: &RunFile) -> String {
    let mut out = String::from("## Summary\n\n");
    for s in paper_summaries(run) {
        let _ = writeln!(
            out,
            "- **{}** ({}): {}. {}.",
            Md::Prose.escape(&s.system),
            Md::Prose.escape(&s.cite),
            Md::Prose.escape(&s.counts_text()),
            Md::Prose.escape(&upper_first(&s.change_text()))
        );
    }
    out.push('\n');
    out
}

/// Every paper's summary as a LaTeX `itemize`, one item per paper: running text, so that it
/// fits any column, one of a two-column article's too.
pub(crate) fn latex_list(run: &RunFile) -> String {
    let mut out = String::from("% Per paper: rows compared, the median change of the conclusive totals, the range.\n");
    out.push_str("\\begin{itemize}\n");
    for s in paper_summaries(run) {
        let _ = writeln!(
            out,
            "\\item \\textbf{{{}}} ({}): {}. {}.",
            // "Go! component OS": the space after "!" is not the end of a sentence.
            latex(&s.system).replace("! ", "!\\ "),
            latex(&s.cite),
            latex(&s.counts_text()),
            latex(&upper_first(&s.change_text()))
        );
    }
    out.push_str("\\end{itemize}\n");
    out
}

/// `s` with its first letter upper-case: a sentence of its own.
fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// What the median rests on
// ---------------------------------------------------------------------------------------------

/// What a paper's summary rests on, in one kind of change, and what it leaves out.
struct SummaryRatios<'a> {
    /// The totals with a ratio: label, ratio with its interval, reading.
    rows: Vec<(&'a str, Interval, Reading)>,
    /// One ratio with its interval per distinct figure of today's: rows that share one (two of
    /// the paper's figures answered by one result) count once, by the geometric mean of their
    /// ratios and of their ends.
    distinct: Vec<Interval>,
    /// How many of `rows` are nearest substitutes.
    nearest: usize,
    /// Time or memory.
    kind: Change,
    /// "in time", "in cycles", "in memory".
    what: &'static str,
    /// Rows answered today that the summary leaves out, per reason, in the order said.
    left: Vec<(usize, String)>,
}

/// A change of a row in one kind: ratio with its interval, reading and kind.
type Picked = Option<(Option<Interval>, Reading, Change)>;

/// How to pick one kind of change from a row, and its name.
type PickKind = (fn(&SeedRow) -> Picked, &'static str);

/// How many distinct figures of today's the answered rows show.
fn distinct_figures(rows: &[&(&SeedRow, String)]) -> usize {
    let mut keys: Vec<String> = rows.iter().filter(|(r, _)| r.resolved()).map(|(r, _)| figure_key(r)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// The ratios the summary of a paper rests on, in time where there are times, else in
/// cycles, else in memory: every total the run resolves that has a ratio (better, worse, ≈
/// same or inconclusive), over distinct figures of today's. Left out, and counted: parts of a
/// breakdown whose total is a row, rows whose conditions differ, and rows compared only in
/// another kind (cycles where the summary is in time). Rows the run does not resolve (below
/// resolution, failed checks) are not answered, and counted in the heading instead.
fn summary_ratios<'a>(all: &[&'a (&'a SeedRow, String)]) -> SummaryRatios<'a> {
    let kinds: [PickKind; 3] = [
        (|r| r.change().filter(|c| c.2 == Change::Time), "in time"),
        (SeedRow::change_cycles, "in cycles"),
        (|r| r.change().filter(|c| c.2 == Change::Memory), "in memory"),
    ];
    let answered: Vec<&SeedRow> = all.iter().map(|(r, _)| *r).filter(|r| r.resolved()).collect();
    let mut left = Vec::new();
    let part = answered.iter().filter(|r| r.part).count();
    let unlike = answered.iter().filter(|r| !r.part && r.caveat.is_some()).count();
    for (n, one, many) in
        [(part, "part of a breakdown", "parts of a breakdown"), (unlike, "not like for like", "not like for like")]
    {
        if n > 0 {
            left.push((n, if n == 1 { one } else { many }.to_string()));
        }
    }
    let usable = |r: &SeedRow| !r.part && r.caveat.is_none();
    let mut out =
        SummaryRatios { rows: Vec::new(), distinct: Vec::new(), nearest: 0, kind: Change::Time, what: "", left };
    for (pick, what) in kinds {
        let read: Vec<(&SeedRow, &str, Interval, Reading, Change)> = (all.iter())
            .filter(|(r, _)| r.resolved() && usable(r))
            .filter_map(|(r, l)| pick(r).and_then(|(x, reading, k)| x.map(|x| (*r, l.as_str(), x, reading, k))))
            .collect();
        let Some(first) = read.first() else { continue };
        out.kind = first.4;
        out.what = what;
        let other_kind = answered.iter().filter(|r| usable(r) && pick(r).is_none_or(|c| c.0.is_none())).count();
        let mut groups: Vec<(String, Vec<Interval>)> = Vec::new();
        for (r, label, x, reading, _) in &read {
            out.rows.push((label, *x, *reading));
            out.nearest += usize::from(r.nearest.is_some());
            let key = figure_key(r);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(*x),
                None => groups.push((key, vec![*x])),
            }
        }
        if other_kind > 0 {
            out.left.push((other_kind, "in other units".to_string()));
        }
        let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
        out.distinct = groups
            .into_iter()
            .map(|(_, v)| {
                let ends = |i: usize| geo(&v.iter().map(|x| x.ci95[i]).collect::<Vec<_>>());
                Interval::new(geo(&v.iter().map(|x| x.estimate).collect::<Vec<_>>()), [ends(0), ends(1)])
            })
            .collect();
        break;
    }
    out
}
