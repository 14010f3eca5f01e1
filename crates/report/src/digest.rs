//! The digest: the last screen of the bare `osprim`, in 24 lines at 80 columns.
//!
//! - What ran here: the machine, in one line.
//! - The verdict: how many results, how they came out by tier (clean, advisory,
//!   untrustworthy; skipped, failed), the self-checks that failed, the results that moved
//!   against the history (`level-shift`), and, when a row is untrustworthy, the next step
//!   ([`crate::next_step`]).
//! - One line per paper ([`crate::seeds::paper_summaries`]): the rows compared, the median
//!   change of the conclusive totals, and the two extremes, each with its 95 % interval.
//! - The five primitives a newcomer asks about first ([`PRIMITIVES`]): each with its median and
//!   95 % interval, or why there is none.
//! - Where the full tables are.
//!
//! No line is wider than the view's width: a table whose lines would be wider is laid out with
//! shorter intervals, and what still does not fit is abbreviated ([`layout::abbreviate`]),
//! never wrapped.

use crate::document::{ci_text, scale};
use crate::layout::{self, Style, paint};
use crate::seeds::{self, PaperSummary};
use crate::{View, sig4};
use model::{Flag, Row, RunFile, Status, Tier, Verdict};
use papers::Want;
use std::fmt::Write;
use std::path::Path;

/// One primitive of the digest: what a newcomer calls it, and the result that answers it.
#[derive(Debug, Clone, Copy)]
pub struct Primitive {
    /// "system call", "context switch"…
    pub name: &'static str,
    /// The result: a benchmark id and the parameters its row must have.
    pub want: Want,
}

/// The five primitives a newcomer asks about first. The bare `osprim` measures them beside
/// the papers' rows (the seed suite adds them).
pub const PRIMITIVES: [Primitive; 5] = [
    Primitive { name: "system call", want: Want { id: "syscall.null", params: &[], stage: None } },
    Primitive { name: "context switch", want: Want { id: "ctx.thread", params: &[], stage: None } },
    Primitive {
        name: "pipe round trip",
        want: Want {
            id: "rpc.pipe",
            params: &[("bytes", "0"), ("peer", "process"), ("placement", "same_cpu")],
            stage: None,
        },
    },
    Primitive { name: "page fault", want: Want { id: "fault.anon.write", params: &[], stage: None } },
    Primitive { name: "fork", want: Want { id: "process.fork_exit", params: &[("touched", "4MiB")], stage: None } },
];

/// Where the full tables are, the result file standing for `FILE`.
const POINTER: &str = "Full tables: osprim papers · osprim show FILE · osprim report FILE --html report.html";

/// The digest of `run`, measured in `elapsed_s` and saved to `saved_to`, at `view.width`
/// columns (40 at least); each line ends in `\n`.
pub fn render(run: &RunFile, elapsed_s: f64, saved_to: Option<&Path>, view: &View) -> String {
    let width = view.width.max(40);
    let color = view.color;
    let mut lines: Vec<String> = Vec::new();
    let title = format!("In short: {}", seeds::machine_text(run));
    lines.push(paint(&layout::abbreviate(&title, width), Style::Bold, color));
    lines.extend(verdict_lines(run, elapsed_s, width));
    let summaries = seeds::paper_summaries(run);
    lines.extend(
        paper_lines(&summaries, width)
            .into_iter()
            .enumerate()
            .map(|(i, l)| if i == 0 { paint(&l, Style::Bold, color) } else { l }),
    );
    lines.extend(
        primitive_lines(run, width).into_iter().enumerate().map(
            |(i, l)| {
                if i == 0 { paint(&l, Style::Bold, color) } else { l }
            },
        ),
    );
    let file = match saved_to {
        Some(p) => format!("{POINTER}, FILE being {}", p.display()),
        None => format!("{POINTER}, FILE being a saved result (this run was not saved)"),
    };
    lines.extend(at_most(layout::flow(&file, width, "", "    "), 3, width));
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(out, "{}", l.trim_end());
    }
    out
}

/// The verdict: the tiers of the run's rows, the failed checks and the moves against the
/// history, then the next step when a row is untrustworthy; at most five lines.
fn verdict_lines(run: &RunFile, elapsed_s: f64, width: usize) -> Vec<String> {
    let rows: Vec<&Row> = run.results.iter().filter(|r| r.derived.is_none()).collect();
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    let measured = rows.iter().filter(|r| r.status.measured()).count();
    let bad = count(Status::Untrustworthy);
    let word = if bad * 2 > measured {
        "mostly untrustworthy"
    } else if bad > 0 {
        "partly untrustworthy"
    } else if count(Status::Advisory) > 0 {
        "usable, read the flags"
    } else {
        "clean"
    };
    let full = crate::verdict(run, elapsed_s);
    let first = full.lines().next().unwrap_or_default();
    let counts = first.strip_prefix("osprim: ").unwrap_or(first);
    let partial = if run.partial { "partial run, " } else { "" };
    let mut text = format!("Verdict: {partial}{word} — {counts}");
    let failed_checks = run.results.iter().filter(|r| r.validation.verdict == Verdict::Failed).count();
    if failed_checks > 0 {
        let _ = write!(text, "; {failed_checks} failed a self-check");
    }
    let moved = run.results.iter().filter(|r| r.flags.contains(&Flag::LevelShift)).count();
    if moved > 0 {
        let _ = write!(text, "; {moved} moved against the history ({})", Flag::LevelShift.label());
    }
    let mut out = at_most(layout::flow(&text, width, "", "    "), 3, width);
    if let Some(next) = crate::next_step(&rows) {
        out.extend(at_most(layout::flow(&next, width, "  ", "    "), 2, width));
    }
    out
}

/// `lines` cut to `n`, the last one kept ending in `…` when some were cut.
fn at_most(mut lines: Vec<String>, n: usize, width: usize) -> Vec<String> {
    if lines.len() > n {
        lines.truncate(n);
        if let Some(last) = lines.last_mut() {
            *last = layout::abbreviate(&format!("{last} …"), width);
        }
    }
    lines
}

/// A paper's short name: "Go! component OS" is "Go!", "L4Ka::Pistachio" is "L4Ka".
fn short_name(system: &str) -> &str {
    let end = system.find([' ', ':']).unwrap_or(system.len());
    &system[..end]
}

/// One line per paper under a header: name, rows compared, median change, the worst and the
/// best conclusive row with their intervals. The intervals are shortened to two significant
/// figures when the lines would be wider than `width`, and lines still too wide abbreviated.
fn paper_lines(summaries: &[PaperSummary], width: usize) -> Vec<String> {
    let cells: Vec<[String; 3]> = summaries
        .iter()
        .map(|s| {
            [
                short_name(&s.system).to_string(),
                format!("{}/{}", s.measured, s.total_rows),
                s.median_words().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["Paper", "rows", "median"];
    let w: Vec<usize> = (0..3)
        .map(|i| cells.iter().map(|c| layout::width(&c[i])).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let lay = |c: [&str; 3], rest: &str| {
        format!("{:<a$}  {:<b$}  {:<m$}  {rest}", c[0], c[1], c[2], a = w[0], b = w[1], m = w[2])
    };
    // The extremes at three levels of detail: intervals with three significant figures, with
    // two, with two and no space after the comma.
    let extremes = |s: &PaperSummary, level: usize| -> String {
        let show = |e: &seeds::Extreme| match level {
            0 => e.with_interval(),
            _ => e.compact(level > 1),
        };
        match (&s.worst, &s.best) {
            (Some(lo), Some(hi)) if s.conclusive > 1 => format!("{} … {}", show(lo), show(hi)),
            (Some(one), _) => format!("{} (one conclusive row)", show(one)),
            _ if s.measured == 0 => "nothing measured".into(),
            _ => "no conclusive row".into(),
        }
    };
    let mut out = vec![lay(header, "worst … best row, 95 % intervals")];
    for (s, c) in summaries.iter().zip(&cells) {
        let line = (0..3)
            .map(|level| lay([&c[0], &c[1], &c[2]], &extremes(s, level)).trim_end().to_string())
            .find(|l| layout::width(l) <= width);
        out.push(line.unwrap_or_else(|| lay([&c[0], &c[1], &c[2]], &extremes(s, 2))));
    }
    out.into_iter().map(|l| layout::abbreviate(l.trim_end(), width)).collect()
}

/// The row of `run` that answers `want`: its id, parameters including `want`'s, not a cold-
/// cache twin; a measured one first.
fn find<'a>(run: &'a RunFile, want: &Want) -> Option<&'a Row> {
    let matches = |r: &&Row| {
        r.id == want.id
            && want.params.iter().all(|(k, v)| r.params.get(*k).is_some_and(|x| model::vocab::param_is(x, v)))
            && !r.params.get("cache").is_some_and(|x| model::vocab::param_is(x, "cold"))
    };
    let mut candidates = run.results.iter().filter(matches);
    let first = candidates.clone().next();
    candidates.find(|r| r.status.measured()).or(first)
}

/// A row's median and 95 % interval in its unit: `153.2 [152.8, 153.4] ns`.
fn figure(r: &Row) -> Option<String> {
    let (median, ci) = match (&r.summary, &r.derived) {
        (_, Some(d)) if d.below_resolution => return None,
        (Some(s), _) => (s.median, s.median_ci95),
        (None, Some(d)) => (d.estimate.point, d.estimate.ci95),
        (None, None) => return None,
    };
    if !median.is_finite() {
        return None;
    }
    let (div, _) = scale(r.unit, median);
    Some(format!("{} {}", sig4(median / div), ci_text(r.unit, median, ci)))
}

/// What a row's status says beside its figure, long and short: nothing when clean.
fn trust(r: &Row) -> [String; 2] {
    let long_short = |long: String, short: &str| [long, short.to_string()];
    match r.status {
        Status::Ok => [String::new(), String::new()],
        Status::Advisory => long_short("advisory".into(), "advisory"),
        Status::Untrustworthy => {
            let why = r.flags.iter().find(|f| f.tier() == Tier::Untrustworthy).map(|f| f.label());
            long_short(why.map_or_else(|| "untrustworthy".into(), |w| format!("untrustworthy ({w})")), "untrustworthy")
        }
        Status::Skipped => {
            long_short(format!("skipped: {}", r.reason.as_deref().unwrap_or("cannot run here")), "skipped")
        }
        Status::Failed => long_short(format!("failed: {}", r.reason.as_deref().unwrap_or("an error")), "failed"),
        Status::Interrupted => long_short("interrupted".into(), "interrupted"),
    }
}

/// The five primitives under a header: name, benchmark, median with its interval, and the
/// row's trust when it is not clean.
fn primitive_lines(run: &RunFile, width: usize) -> Vec<String> {
    let cells: Vec<[String; 5]> = PRIMITIVES
        .iter()
        .map(|p| {
            let (value, notes) = match find(run, &p.want) {
                Some(r) => match figure(r) {
                    Some(f) if r.status.measured() => (f, trust(r)),
                    _ => (String::new(), trust(r)),
                },
                None => (String::new(), ["not measured in this run".to_string(), String::new()]),
            };
            [p.name.to_string(), p.want.id.to_string(), value, notes[0].clone(), notes[1].clone()]
        })
        .collect();
    let header = ["Primitive", "benchmark", "median [95 % interval]"];
    let w: Vec<usize> = (0..2)
        .map(|i| cells.iter().map(|c| layout::width(&c[i])).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let lay = |c: [&str; 3]| format!("{:<a$}  {:<b$}  {}", c[0], c[1], c[2], a = w[0], b = w[1]).trim_end().to_string();
    let mut out = vec![lay(header)];
    for [name, id, value, note, short] in &cells {
        // The figure and the longer note where it fits, else the shorter one.
        let with = |n: &str| match (value.is_empty(), n.is_empty()) {
            (true, _) => n.to_string(),
            (false, true) => value.clone(),
            (false, false) => format!("{value}  {n}"),
        };
        let line = [note, short].into_iter().map(|n| lay([name, id, &with(n)])).find(|l| layout::width(l) <= width);
        out.push(line.unwrap_or_else(|| lay([name, id, &with(short)])));
    }
    out.into_iter().map(|l| layout::abbreviate(&l, width)).collect()
}

#[cfg(test)]
mod tests;
