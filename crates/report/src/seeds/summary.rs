//! The per-paper summary as data ([`PaperSummary`], one per paper: [`paper_summaries`]) and its
//! renderings: the text of the seed view's first screen, a Markdown list and a LaTeX `itemize`
//! at the top of those exports, and the digest's one line per paper ([`crate::digest`]).
//!
//! What it rests on: per paper, the rows with a figure today, and of those the conclusive totals
//! in one kind of change (in time where there are times, else in cycles, else in memory), each
//! figure of today's counted once; their median change, the best and the worst row, and what was
//! left out, counted per reason.

use super::{
    Change, Group, Interval, Paper, Reading, RowStatus, RunFile, SeedRow, by_table, change_words, figure_key, heading,
    median_ratio, reading_words, rows, seeds, without_counts, wrap,
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
    /// The rows with a figure today.
    pub measured: usize,
    /// How many distinct figures of today's those rows show (rows answered by one result
    /// count once).
    pub distinct: usize,
    /// The rows without a figure today, counted per kind: "2 cannot run here".
    pub without: Vec<String>,
    /// The median change over the conclusive totals, one per distinct figure (above 1: today
    /// faster); `None` when no row is conclusive.
    pub median_change: Option<f64>,
    /// What the ratios compare: "in time", "in cycles", "in memory" (empty without ratios).
    pub what: &'static str,
    /// The conclusive totals the median rests on.
    pub conclusive: usize,
    /// How many distinct figures of today's they show.
    pub conclusive_distinct: usize,
    /// The conclusive row with the greatest ratio (today best against the paper).
    pub best: Option<Extreme>,
    /// The conclusive row with the smallest ratio.
    pub worst: Option<Extreme>,
    /// Rows with a figure today that the median leaves out, per reason, in the order said:
    /// (how many, why).
    pub left: Vec<(usize, String)>,
    kind: Change,
}

impl PaperSummary {
    /// The median change in words: "26.7× faster" (`None` without conclusive rows).
    pub fn median_words(&self) -> Option<String> {
        self.median_change.map(|m| change_words(m, self.kind).0)
    }

    /// The first line of the summary, after the paper's name: "15 of 16 rows compared (14
    /// distinct figures); 1 not applicable".
    pub fn counts_text(&self) -> String {
        let mut s = format!("{} of {} rows compared", self.measured, self.total_rows);
        if self.distinct < self.measured {
            let d = self.distinct;
            let _ = write!(s, " ({d} distinct figure{})", if d == 1 { "" } else { "s" });
        }
        if !self.without.is_empty() {
            let _ = write!(s, "; {}", self.without.join(", "));
        }
        s
    }

    /// The rest of the summary: the median, the range from worst to best, what was left out.
    pub fn change_text(&self) -> String {
        let left: Vec<String> = self.left.iter().map(|(n, why)| format!("{n} {why}")).collect();
        let mut text = String::new();
        match self.median_words() {
            Some(m) => {
                let n = self.conclusive;
                let _ =
                    write!(text, "median {m} {}, of {n} conclusive row{}", self.what, if n == 1 { "" } else { "s" });
                if self.conclusive_distinct < n {
                    let d = self.conclusive_distinct;
                    let _ = write!(text, " ({d} distinct figure{})", if d == 1 { "" } else { "s" });
                }
                if let (Some(b), Some(w)) = (&self.best, &self.worst)
                    && n > 1
                {
                    let _ = write!(text, "; from {} ({}) to {} ({})", w.words(), w.label, b.words(), b.label);
                }
                if !left.is_empty() {
                    let _ = write!(text, "; left out: {}", left.join(", "));
                }
            }
            None if !left.is_empty() => {
                let _ = write!(text, "no conclusive total: left out {}", left.join(", "));
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
    let measured = all.iter().filter(|(r, _)| r.status == RowStatus::Measured).count();
    let s = summary_ratios(&all);
    let extreme = |(label, ratio, reading): &(&str, Interval, Reading)| Extreme {
        label: label.to_string(),
        ratio: *ratio,
        reading: *reading,
        kind: s.kind,
    };
    PaperSummary {
        system: paper.system.to_string(),
        cite: paper.short_cite(),
        total_rows: all.len(),
        measured,
        distinct: distinct_figures(&all),
        without: without_counts(all.iter().map(|(r, _)| *r), "need counters"),
        median_change: median_ratio(s.distinct.clone()),
        what: s.what,
        conclusive: s.rows.len(),
        conclusive_distinct: s.distinct.len(),
        best: s.rows.iter().max_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate)).map(extreme),
        worst: s.rows.iter().min_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate)).map(extreme),
        left: s.left,
        kind: s.kind,
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
    /// The conclusive rows: label, ratio with its interval, reading.
    rows: Vec<(&'a str, Interval, Reading)>,
    /// One ratio per distinct figure of today's: rows that share one (two of the paper's
    /// figures answered by one result) count once, by the geometric mean of their ratios.
    distinct: Vec<f64>,
    /// Time or memory.
    kind: Change,
    /// "in time", "in cycles", "in memory".
    what: &'static str,
    /// Rows with a figure today that the summary leaves out, per reason, in the order said.
    left: Vec<(usize, String)>,
}

/// A change of a row in one kind: ratio with its interval, reading and kind.
type Picked = Option<(Option<Interval>, Reading, Change)>;

/// How to pick one kind of change from a row, and its name.
type PickKind = (fn(&SeedRow) -> Picked, &'static str);

/// How many distinct figures of today's the compared rows show.
fn distinct_figures(rows: &[&(&SeedRow, String)]) -> usize {
    let mut keys: Vec<String> =
        rows.iter().filter(|(r, _)| r.status == RowStatus::Measured).map(|(r, _)| figure_key(r)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// The ratios the summary of a paper rests on, in time where there are times, else in
/// cycles, else in memory: conclusive rows only (better, worse, ≈ same), totals only, over
/// distinct figures of today's. Left out, and counted: parts of a breakdown whose total is a
/// row, rows that failed their checks or are differences within one clock read, rows whose
/// conditions differ, rows compared only in another kind (cycles where the summary is in
/// time), inconclusive ones and those below resolution.
fn summary_ratios<'a>(all: &[&'a (&'a SeedRow, String)]) -> SummaryRatios<'a> {
    let kinds: [PickKind; 3] = [
        (|r| r.change().filter(|c| c.2 == Change::Time), "in time"),
        (SeedRow::change_cycles, "in cycles"),
        (|r| r.change().filter(|c| c.2 == Change::Memory), "in memory"),
    ];
    let measured: Vec<&SeedRow> = all.iter().map(|(r, _)| *r).filter(|r| r.status == RowStatus::Measured).collect();
    let mut left = Vec::new();
    let part = measured.iter().filter(|r| r.part).count();
    let unlike = measured.iter().filter(|r| !r.part && r.caveat.is_some()).count();
    let doubted = |why: &str| {
        measured.iter().filter(|r| !r.part && r.caveat.is_none() && r.doubt.as_deref() == Some(why)).count()
    };
    for (n, one, many) in [
        (part, "part of a breakdown", "parts of a breakdown"),
        (unlike, "not like for like", "not like for like"),
        (doubted("failed its checks"), "that failed its checks", "that failed their checks"),
        (
            doubted("a difference within one clock read"),
            "difference within one clock read",
            "differences within one clock read",
        ),
    ] {
        if n > 0 {
            left.push((n, if n == 1 { one } else { many }.to_string()));
        }
    }
    let usable = |r: &SeedRow| !r.part && r.caveat.is_none() && r.doubt.is_none();
    let mut out = SummaryRatios { rows: Vec::new(), distinct: Vec::new(), kind: Change::Time, what: "", left };
    for (pick, what) in kinds {
        let read: Vec<(&SeedRow, &str, Option<Interval>, Reading, Change)> = (all.iter())
            .filter(|(r, _)| r.status == RowStatus::Measured && usable(r))
            .filter_map(|(r, l)| pick(r).map(|(x, reading, k)| (*r, l.as_str(), x, reading, k)))
            .collect();
        let Some(first) = read.first() else { continue };
        out.kind = first.4;
        out.what = what;
        let other_kind = measured.iter().filter(|r| usable(r) && pick(r).is_none()).count();
        let (mut inconclusive, mut below) = (0, 0);
        let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
        for (r, label, x, reading, _) in &read {
            match (reading, x) {
                (Reading::BelowResolution, _) => below += 1,
                (Reading::Inconclusive, _) | (_, None) => inconclusive += 1,
                (_, Some(x)) => {
                    out.rows.push((label, *x, *reading));
                    let key = figure_key(r);
                    match groups.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => v.push(x.estimate),
                        None => groups.push((key, vec![x.estimate])),
                    }
                }
            }
        }
        for (n, why) in [
            (other_kind, "in other units".to_string()),
            (inconclusive, "inconclusive".to_string()),
            (below, "below resolution".to_string()),
        ] {
            if n > 0 {
                out.left.push((n, why));
            }
        }
        out.distinct =
            groups.into_iter().map(|(_, v)| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()).collect();
        break;
    }
    out
}
