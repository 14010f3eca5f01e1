//! Reporters: format a result document for people (table), programs (JSON, CSV) and papers
//! (Markdown, LaTeX). Each format is one [`Writer`] in its own file, found by [`writer`]; the
//! documents' contents come from their own modules, laid out by one engine (`layout`) and
//! escaped by one escaper per markup (`escape`). Reporters only format; every number they
//! print was computed by `stats`/`analyse`.

#![forbid(unsafe_code)]

pub mod ab;
pub mod compare;
mod context;
pub mod crosscheck;
pub mod csv;
pub mod digest;
mod document;
mod escape;
pub use escape::terminal;
mod figures;
mod header;
pub mod history;
pub mod html;
mod json;
pub mod latex;
mod layout;
pub mod listing;
pub mod markdown;
mod marks;
mod matrix;
mod names;
pub mod seeds;
mod stability;
mod svg;
mod sweep;
pub mod table;
mod text;
mod write;

pub use write::{Writer, Written};

pub use model::unit::{fmt_bytes, fmt_count, fmt_ns, fmt_size, short_number, sig4};

/// The width the prose of a report (header lines, notes) keeps to, wherever the output goes,
/// so that a report reads the same on screen, in a file and in a test.
pub const WIDTH: usize = 100;

/// The one format vocabulary of every command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// For people: fits the terminal.
    Table,
    /// The whole document, as saved.
    Json,
    /// One line per result, one column per parameter.
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// LaTeX with booktabs rules, ready to paste into a paper.
    Latex,
}

/// The writer of `format`: the one registration point of formats.
pub fn writer(format: Format) -> &'static dyn Writer {
    match format {
        Format::Table => &text::Text,
        Format::Json => &json::Json,
        Format::Csv => &csv::Csv,
        Format::Markdown => &markdown::Markdown,
        Format::Latex => &latex::Latex,
    }
}

/// A run's results in `format`.
pub fn render(run: &model::RunFile, format: Format, view: &View) -> Written {
    writer(format).run(run, view)
}

/// The seed papers' tables beside a run's results, in `format` (JSON: the rows as data).
pub fn render_papers(run: &model::RunFile, format: Format, view: &View) -> Written {
    writer(format).papers(run, view)
}

/// The closing line of a run: how many results, how they came out (clean, advisory,
/// untrustworthy, skipped, and failed or interrupted when any), how long it took; and when a
/// row is untrustworthy, a second line naming the main cause and the next step
/// ([`next_step`]).
pub fn verdict(run: &model::RunFile, elapsed_s: f64) -> String {
    use model::Status;
    let rows: Vec<&model::Row> = run.results.iter().filter(|r| r.derived.is_none()).collect();
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    let untrustworthy = count(Status::Untrustworthy);
    let mut parts = vec![
        format!("{} clean", count(Status::Ok)),
        format!("{} advisory", count(Status::Advisory)),
        format!("{untrustworthy} untrustworthy"),
        format!("{} skipped", count(Status::Skipped)),
    ];
    for (status, word) in [(Status::Failed, "FAILED"), (Status::Interrupted, "interrupted")] {
        if count(status) > 0 {
            parts.push(format!("{} {word}", count(status)));
        }
    }
    let partial = if run.partial { " (partial: the run did not finish)" } else { "" };
    let secs = elapsed_s.round() as u64;
    let time = if secs < 60 { format!("{secs} s") } else { format!("{}:{:02}", secs / 60, secs % 60) };
    let derived = match run.results.len() - rows.len() {
        0 => String::new(),
        n => format!(" (+{n} derived)"),
    };
    let mut line = format!("osprim: {} results{derived} in {time}{partial}: {}", rows.len(), parts.join(", "));
    if let Some(next) = next_step(&rows) {
        line.push('\n');
        line.push_str(&wrap(&format!("  {next}")));
    }
    line
}

/// What the untrustworthy rows have most in common and what to do about it: `3 of 4
/// untrustworthy rows are ci-unusable (…): try a quieter CPU (--cpu N), or --thorough`.
/// The cause is the untrustworthy flag most of them carry (the first of [`Flag::ALL`] on a
/// tie); `None` when no row is untrustworthy.
///
/// [`Flag::ALL`]: model::Flag::ALL
pub fn next_step(rows: &[&model::Row]) -> Option<String> {
    use model::{Flag, Status, Tier};
    let bad: Vec<&&model::Row> = rows.iter().filter(|r| r.status == Status::Untrustworthy).collect();
    let (cause, n) = Flag::ALL
        .iter()
        .filter(|f| f.tier() == Tier::Untrustworthy)
        .map(|f| (*f, bad.iter().filter(|r| r.flags.contains(f)).count()))
        .fold(None, |best: Option<(Flag, usize)>, (f, n)| match best {
            Some((_, m)) if m >= n => best,
            _ if n > 0 => Some((f, n)),
            _ => best,
        })?;
    let (why, advice) = match cause {
        Flag::BusyCpu => {
            ("other work held the measuring CPU", "try a quieter CPU (--cpu N) or stop the other work, and run again")
        }
        Flag::CiUnusable => (
            "an interval wider than ±10 %: a busy or noisy CPU",
            "try a quieter CPU (--cpu N), or --thorough for a longer budget",
        ),
        Flag::CheckFailed => {
            ("a self-check failed", "read the failed checks (the footnotes, or `validation` in the result file)")
        }
        Flag::Interrupted => ("cut off by Ctrl-C", "run them again without interrupting"),
        _ => ("a sweep's fixed cost below zero", "read the points, or sweep small sizes for the fixed cost"),
    };
    let share = if n == bad.len() {
        match n {
            1 => "1 untrustworthy row is".to_string(),
            _ => format!("all {n} untrustworthy rows are"),
        }
    } else {
        format!("{n} of {} untrustworthy rows are", bad.len())
    };
    Some(format!("{share} {} ({why}): {advice}", cause.label()))
}

/// Whether a self-check failed or a benchmark failed in `run` (`--strict` exits 3 then).
pub fn any_failed(run: &model::RunFile) -> bool {
    use model::{Status, Verdict};
    run.results.iter().any(|r| r.status == Status::Failed || r.validation.verdict == Verdict::Failed)
}

/// How a report is laid out for people: the width it keeps to and what it shows. Machine
/// formats (JSON, CSV) ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Columns the output keeps to ([`WIDTH`] when stdout is not a terminal, else its width).
    pub width: usize,
    /// Everything, whatever the width: descriptions, every parameter, full notes (`--wide`).
    pub wide: bool,
    /// Breakdowns and derived rows in full, one row per stage (`--detail`).
    pub detail: bool,
    /// ANSI colour (a terminal without `NO_COLOR`, or `--color always`).
    pub color: bool,
    /// The seed view lists every row, also those without a figure today (`--all-rows`).
    pub all_rows: bool,
}

impl Default for View {
    /// The view of a file or a pipe: [`WIDTH`] columns, no colour.
    fn default() -> View {
        View { width: WIDTH, wide: false, detail: false, color: false, all_rows: false }
    }
}

/// A table in osprim's style: a rule under the header, no vertical lines; cells keep their
/// own line breaks and are never wrapped (a figure split over lines misleads).
pub fn new_table() -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    let rule = comfy_table::LineStyle::none().fill('─').junction('─');
    let style = comfy_table::TableStyle::new().header_separator(rule).bottom_border(rule);
    t.load_style(style).set_content_arrangement(comfy_table::ContentArrangement::Disabled);
    t
}

/// `text` with every line longer than [`WIDTH`] broken at spaces; the continuation lines are
/// indented four columns more than the line they continue.
pub fn wrap(text: &str) -> String {
    wrap_to(text, WIDTH)
}

/// `text` with every line longer than `width` broken at spaces, as [`wrap`] does.
pub fn wrap_to(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 50);
    for line in text.split_inclusive('\n') {
        let (body, newline) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let lead = body.len() - body.trim_start().len();
        let indent = " ".repeat(lead + 4);
        let mut col = 0;
        for (i, word) in body.trim_start().split(' ').enumerate() {
            let w = word.chars().count();
            if i == 0 {
                out.push_str(&body[..lead]);
                col = lead;
            } else if col + 1 + w > width && col > indent.len() {
                out.push('\n');
                out.push_str(&indent);
                col = indent.len();
            } else {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += w;
        }
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod wrap_tests {
    use super::*;

    #[test]
    fn long_lines_break_at_spaces_with_a_hanging_indent_and_short_ones_stay() {
        let long = format!("  {}", "word ".repeat(40).trim_end());
        let out = wrap(&format!("short line\n{long}\n"));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "short line");
        assert!(lines.len() > 3, "{out}");
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{out}");
        assert!(lines[2].starts_with("      word"), "continuations indented 4 more: {out}");
        assert_eq!(out.split_whitespace().count(), 42, "no word lost");
        assert!(out.ends_with('\n'));
        let unbreakable = "x".repeat(150);
        assert_eq!(wrap(&unbreakable), unbreakable, "a word longer than the width stays whole");
    }
}

#[cfg(test)]
mod verdict_tests {
    use super::*;
    use model::{Check, Flag, Method, Params, Status, Validation};

    fn run_of(rows: Vec<model::Row>) -> model::RunFile {
        let mut run = tests::run_file(false);
        run.results = rows;
        run
    }

    fn row(status: Status, check_ok: Option<bool>) -> model::Row {
        let mut r = analysis::analyse::empty_row("syscall.null", "x", Params::new(), Method::Adaptive);
        r.status = status;
        if let Some(ok) = check_ok {
            r.validation = Validation::from_checks(vec![Check {
                name: "c".into(),
                ok: Some(ok),
                expected: "e".into(),
                observed: "o".into(),
            }]);
        }
        r
    }

    #[test]
    fn the_verdict_counts_each_tier_and_strict_sees_failed_checks_and_rows() {
        let clean = run_of(vec![row(Status::Ok, Some(true)), row(Status::Skipped, None)]);
        assert_eq!(verdict(&clean, 12.4), "osprim: 2 results in 12 s: 1 clean, 0 advisory, 0 untrustworthy, 1 skipped");
        assert!(!any_failed(&clean));
        let mut failed_check = row(Status::Untrustworthy, Some(false));
        failed_check.flags = vec![Flag::CheckFailed];
        let mut advisory = row(Status::Advisory, None);
        advisory.flags = vec![Flag::CiTargetMissed];
        let bad = run_of(vec![failed_check, row(Status::Failed, None), advisory, row(Status::Interrupted, None)]);
        let v = verdict(&bad, 75.0);
        let mut lines = v.lines();
        assert_eq!(
            lines.next(),
            Some("osprim: 4 results in 1:15: 0 clean, 1 advisory, 1 untrustworthy, 0 skipped, 1 FAILED, 1 interrupted")
        );
        assert!(lines.next().is_some_and(|l| l.starts_with("  1 untrustworthy row is check-failed")), "{v}");
        assert!(v.contains("check-failed (a self-check failed): read the failed checks"), "{v}");
        assert!(any_failed(&bad));
    }

    #[test]
    fn the_verdict_names_the_main_cause_and_the_step_that_follows_from_it() {
        let with = |flags: &[Flag]| {
            let mut r = row(Status::Ok, Some(true));
            r.flags = flags.to_vec();
            r.status = Status::of_flags(&r.flags);
            r
        };
        let mut rows = vec![with(&[Flag::CiUnusable]); 3];
        rows.push(with(&[Flag::BusyCpu, Flag::CiUnusable]));
        rows.push(with(&[Flag::CheckFailed]));
        rows.push(with(&[Flag::ManyOutliers]));
        let v = verdict(&run_of(rows), 9.0);
        assert!(v.starts_with("osprim: 6 results in 9 s: 0 clean, 1 advisory, 5 untrustworthy, 0 skipped\n"), "{v}");
        let next = v.lines().skip(1).collect::<Vec<_>>().join(" ");
        let next = next.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            next,
            "4 of 5 untrustworthy rows are ci-unusable (an interval wider than ±10 %: a busy or noisy CPU): try a \
             quieter CPU (--cpu N), or --thorough for a longer budget"
        );
        let busy = verdict(&run_of(vec![with(&[Flag::BusyCpu]), with(&[Flag::BusyCpu, Flag::ManyOutliers])]), 1.0);
        assert!(busy.contains("all 2 untrustworthy rows are busy-cpu"), "{busy}");
        assert!(busy.contains("--cpu N"), "{busy}");
        let only_advisory = verdict(&run_of(vec![with(&[Flag::CiTargetMissed])]), 1.0);
        assert_eq!(only_advisory.lines().count(), 1, "no advice without an untrustworthy row: {only_advisory}");
    }
}
