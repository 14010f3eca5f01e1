//! The Markdown writer: every document as GitHub-flavoured Markdown (pipe tables). History
//! has no table of its own here and is written as the text writer writes it.
//!
//! # A run
//!
//! The text opens with a short header block (osprim's version, the machine's CPU, the kernel,
//! the date, the method), then one table per family (the first segment of the id: `syscall`,
//! `ipc`, …, in the order the run met them) with the columns id, parameters (a compact
//! `k=v` list), median, 95 % CI of the median (`[lo, hi] unit`), min, p99, samples, check (the
//! verdict: `validated`, `not validated`, `check-failed`; or `skipped`, `interrupted`, or
//! `error` for a row that failed), flags (their one names, as in the terminal and the result
//! file; the legend says which make a figure untrustworthy) and note (why a row was
//! skipped or failed, the formula of a derived row, or a cold-cache row's ratio to its hot
//! twin with its interval, `cold/hot 3.2× [2.9, 3.6]`). Under the seed method, whose headline
//! is the papers' mean, the figures are the mean, its CI and the median. Figures carry their
//! unit and 4 significant digits ([`model::unit`]). A sweep's fitted row is not a table
//! row: its fit follows its family's table as a line (fixed cost + cost per KiB with their
//! CIs, R²). `View::detail` adds one row per stage of a breakdown under its row; the other
//! fields of the view do not apply.
//!
//! Every row has as many cells as the header; `|` in a cell is escaped as `\|`, as are `\`,
//! `*` and backticks; `<` is written `&lt;` and line breaks as spaces.

use super::compare::{self, Named};
use super::crosscheck;
use super::document::{NUMERIC, families, fit_line, header, headings, legend, lines};
use super::escape::Md;
use super::history;
use super::listing::{self, Entry};
use super::seeds::{self, Notes, RowStatus};
use super::write::{Writer, Written};
use super::{View, text};
use analysis::history::Point;
use analysis::history::changes::Report;
use model::crosscheck::{Crosscheck, Outcome};
use model::{Method, RunFile};
use std::fmt::Write;

/// The Markdown writer.
pub struct Markdown;

impl Writer for Markdown {
    fn run(&self, run: &RunFile, view: &View) -> Written {
        let mut out =
            if run.results.is_empty() && !run.stability.is_empty() { String::new() } else { render(run, view) };
        for s in &run.stability {
            out.push_str(&super::stability::markdown(s));
            out.push_str("\n\n");
        }
        Ok(out)
    }

    fn papers(&self, run: &RunFile, view: &View) -> Written {
        Ok(papers(run, view))
    }

    fn comparison(&self, all: &[Named], _: &View) -> Written {
        Ok(comparison(all))
    }

    fn history(&self, points: &[Point], view: &View) -> Written {
        text::Text.history(points, view)
    }

    fn changes(&self, report: &Report, _: &View) -> Written {
        Ok(changes(report))
    }

    fn crosscheck(&self, c: &Crosscheck, _: &View) -> Written {
        Ok(crosscheck(c))
    }

    fn catalogue(&self, entries: &[Entry], _: &View) -> Written {
        Ok(pipe_table(&listing::HEADER, entries.iter().map(listing::cells)))
    }

    fn machine(&self, fields: &[(String, String)]) -> String {
        pipe_table(&["field", "value"], fields.iter().map(|(k, v)| [k.clone(), v.clone()]))
    }
}

/// The results of `run` as Markdown.
pub fn render(run: &RunFile, view: &View) -> String {
    let mut out = String::from("# osprim results\n\n");
    for (label, text) in header(run) {
        let _ = writeln!(out, "- {label}: {}", Md::Cell.escape(&text));
    }
    let _ = writeln!(out, "\n{}", Md::Cell.escape(&legend(run)));
    let families = families(run);
    if families.is_empty() {
        out.push_str("\nNo results.\n");
    }
    let seed = run.config.method == Method::Seed;
    let headings = headings(seed);
    for family in &families {
        let _ = writeln!(out, "\n## {}\n", Md::Cell.escape(&family.name));
        let _ = writeln!(out, "| {} |", headings.join(" | "));
        let rules: Vec<&str> = NUMERIC.iter().map(|&n| if n { "---:" } else { "---" }).collect();
        let _ = writeln!(out, "|{}|", rules.join("|"));
        for r in &family.rows {
            for mut line in lines(r, seed, view.detail) {
                if line.stage.is_none() {
                    cold_hot_note(&mut line.note, r);
                }
                let id = match &line.stage {
                    None => Md::Cell.code(&line.id),
                    Some(stage) => format!("↳ {}", Md::Cell.escape(stage)),
                };
                let cells: Vec<String> =
                    std::iter::once(id).chain(line.cells().iter().map(|c| Md::Cell.escape(c))).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        if !family.fits.is_empty() {
            out.push('\n');
        }
        for r in &family.fits {
            if let Some(f) = fit_line(r) {
                let params =
                    if f.params.is_empty() { String::new() } else { format!(" ({})", Md::Cell.escape(&f.params)) };
                let _ = writeln!(out, "- sweep fit of {}{params}: {}", Md::Cell.code(&f.id), Md::Cell.escape(&f.text));
            }
        }
    }
    out
}

/// A cold row's ratio to its hot twin (`cold/hot 3.2× [2.9, 3.6]`) after what its note
/// already says, as the terminal's table shows it.
pub(crate) fn cold_hot_note(note: &mut String, r: &model::Row) {
    if let Some(c) = &r.cold_hot {
        if !note.is_empty() {
            note.push_str("; ");
        }
        note.push_str(&super::table::cold_hot_text(c));
    }
}

/// The seed tables as Markdown: a section per paper (heading with the citation), a GitHub pipe
/// table per table of the paper, the rows without a figure and the notes as lists.
pub fn papers(run: &RunFile, view: &View) -> String {
    let rows = seeds::rows(run);
    let mut out = String::new();
    let _ = writeln!(out, "# Five classic papers beside today's Linux\n");
    let _ = writeln!(
        out,
        "Today: {}; {}.\n",
        Md::Prose.escape(&seeds::machine_text(run)),
        Md::Prose.escape(&seeds::cycles_text(run))
    );
    let _ = writeln!(
        out,
        "{} {} {}\n",
        Md::Prose.escape(seeds::LEGEND),
        Md::Prose.escape(seeds::method_text(run)),
        Md::Prose.escape(seeds::SUMMARY_LEGEND)
    );
    if run.partial {
        let _ = writeln!(out, "**Partial run**: rows it did not reach say \"not in this result\".\n");
    }
    out.push_str(&seeds::summary::markdown(run));
    for paper in &papers::PAPERS {
        let groups = seeds::by_table(paper, &rows);
        let _ = writeln!(out, "## {}\n", Md::Prose.escape(&paper.heading()));
        let _ = writeln!(out, "{}\n", Md::Prose.escape(&paper.citation()));
        let _ =
            writeln!(out, "Measured on {}; {}.\n", Md::Prose.escape(paper.platform), Md::Prose.escape(paper.statistic));
        let mut notes = Notes::default();
        for g in &groups {
            let visible = g.visible(view.all_rows);
            if visible.is_empty() {
                continue;
            }
            let _ = writeln!(out, "### {}\n", Md::Prose.escape(&g.title()));
            let _ =
                writeln!(out, "| operation | then | today's benchmark | today (mean) | median | change | in cycles |");
            let _ = writeln!(out, "|---|--:|---|--:|--:|--:|--:|");
            for (r, label) in visible {
                let marks: String = notes.marks(r).into_iter().map(|n| format!("<sup>{n}</sup>")).collect();
                let [label, then, today, mean, median, change, cycles] = seeds::export_cells(r, label);
                let today = match r.status {
                    RowStatus::Measured => Md::Prose.code(&today),
                    _ => Md::Prose.escape(&today),
                };
                let _ = writeln!(
                    out,
                    "| {}{marks} | {} | {today} | {} | {} | {} | {} |",
                    Md::Prose.escape(&label),
                    Md::Prose.escape(&then),
                    Md::Prose.escape(&mean),
                    Md::Prose.escape(&median),
                    Md::Prose.escape(&change),
                    Md::Prose.escape(&cycles),
                );
            }
            out.push('\n');
        }
        if !view.all_rows {
            let left = seeds::collapsed(&groups);
            if !left.is_empty() {
                let _ = writeln!(out, "Without a figure today:\n");
                for l in left {
                    let _ = writeln!(out, "- {}", Md::Prose.escape(&l));
                }
                out.push('\n');
            }
        }
        if !paper.notes.is_empty() || !notes.0.is_empty() {
            let _ = writeln!(out, "Notes:\n");
            for n in paper.notes {
                let _ = writeln!(out, "- {}", Md::Prose.escape(n));
            }
            for (i, n) in notes.0.iter().enumerate() {
                let _ = writeln!(out, "- <sup>{}</sup> {}", i + 1, Md::Prose.escape(n));
            }
            out.push('\n');
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Every comparison: per pair of files a table, its notes, what differs, the count.
fn comparison(all: &[Named]) -> String {
    let mut out = String::new();
    for n in all {
        out.push_str(&format!("### `{}` → `{}`\n\n", n.base_name, n.new_name));
        out.push_str(
            "| benchmark | base | new | ratio | 95 % CI | verdict | marks |\n|---|---:|---:|---:|---:|---|---|\n",
        );
        for r in &n.comparison.compared {
            let (ratio, ci) = compare::ratio_text(r);
            out.push_str(&format!(
                "| `{}` | {} | {} | {ratio} | {ci} | {} | {} |\n",
                compare::label(&r.id, &r.params),
                compare::value_text(r, r.base_value),
                compare::value_text(r, r.new_value),
                Md::Pipe.escape(&compare::verdict_text(r)),
                compare::marks_text(r)
            ));
        }
        let notes = compare::footnotes(&n.comparison);
        if !notes.is_empty() {
            out.push('\n');
            for note in notes {
                out.push_str(&format!("- {}\n", Md::Pipe.escape(&note)));
            }
        }
        if !n.comparison.differences.is_empty() {
            out.push_str("\nThe runs differ in:\n\n");
            for d in &n.comparison.differences {
                out.push_str(&format!("- `{}`: {} → {}\n", d.what, d.base, d.new));
            }
        }
        out.push_str(&format!("\n{}\n\n", compare::summary_line(&n.comparison, true)));
    }
    out
}

/// The change points as one table, and what was searched.
fn changes(report: &Report) -> String {
    let escape = |s: &str| Md::Cell.escape(s);
    let mut out =
        String::from("| result | last run before | first run after | before | after | after / before | p |\n");
    out.push_str("|---|---|---|---:|---:|---|---:|\n");
    let mut any = false;
    for s in &report.series {
        let unit = history::unit_of(&s.unit);
        for c in &s.changes {
            any = true;
            let also =
                if c.also_changed.is_empty() { String::new() } else { format!(" ({})", c.also_changed.join(", ")) };
            out.push_str(&format!(
                "| {} | {} | {}{} | {} | {} | {} {} | {:.3} |\n",
                escape(&history::title(s)),
                escape(&history::when(&c.last_before.started_utc)),
                escape(&history::when(&c.first_after.started_utc)),
                escape(&also),
                escape(&history::level_text(&c.before, unit)),
                escape(&history::level_text(&c.after, unit)),
                escape(&history::ratio_text(c, unit)),
                history::direction(c, unit),
                c.p_value
            ));
        }
    }
    if !any {
        out = "No change point found.\n".into();
    }
    out.push('\n');
    out.push_str(&escape(&history::footer(report)));
    out.push('\n');
    out
}

/// The crosscheck as one table and its legend (the LaTeX writer uses it too).
pub(crate) fn crosscheck(c: &Crosscheck) -> String {
    let mut out = vec![
        "| primitive | statistic | peer before | osprim | peer after | ratio | flags | peer | osprim's result |"
            .to_string(),
        "|---|---|---:|---:|---:|---:|---|---|---|".to_string(),
    ];
    for r in &c.rows {
        let (before, ours, after, ratio, f) = match &r.outcome {
            Outcome::Compared(m) => (
                crosscheck::ns(m.peer_before_ns),
                crosscheck::ns(m.osprim_ns),
                crosscheck::ns(m.peer_after_ns),
                crosscheck::ratio_text(m),
                crosscheck::flags(m).join(", "),
            ),
            Outcome::NotCompared { reason } => {
                ("-".into(), "-".into(), "-".into(), "-".into(), format!("not compared: {reason}"))
            }
        };
        out.push(format!(
            "| {} | {} | {before} | {ours} | {after} | {ratio} | {} | `{}` | `{}` |",
            Md::Pipe.escape(&r.primitive),
            r.statistic.name(),
            Md::Pipe.escape(&f),
            Md::Pipe.escape(&r.peer),
            Md::Pipe.escape(&r.osprim)
        ));
    }
    out.push(String::new());
    out.extend(crosscheck::legend(c));
    out.join("\n") + "\n"
}

/// A GitHub-flavoured Markdown table, each cell keeping its line breaks as `<br>`.
fn pipe_table<const N: usize>(header: &[&str; N], rows: impl Iterator<Item = [String; N]>) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(N));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| Md::Lines.escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod cold_tests {
    use super::*;

    /// The fixture with its first measured row cold, 3.25× its hot twin.
    fn cold_run() -> (RunFile, String) {
        let mut run = model::fixtures::run_file(false);
        let r = run.results.iter_mut().find(|r| r.summary.is_some() && r.derived.is_none()).expect("a measured row");
        model::fixtures::make_cold(r, 3.25, [2.9, 3.6], 41.5);
        let id = r.id.clone();
        (run, id)
    }

    #[test]
    fn a_cold_row_notes_its_ratio_to_its_hot_twin_in_markdown_and_latex() {
        let plain = model::fixtures::run_file(false);
        let view = View::default();
        assert!(
            !render(&plain, &view).contains("cold/hot")
                && !super::super::latex::render(&plain, &view).contains("cold/hot")
        );
        let (run, id) = cold_run();
        let md = render(&run, &view);
        let line =
            md.lines().find(|l| l.starts_with(&format!("| `{id}` | cache=cold"))).unwrap_or_else(|| panic!("{md}"));
        assert!(line.ends_with("cold/hot 3.2× [2.9, 3.6] |"), "{line}");
        assert_eq!(md.matches("cold/hot").count(), 1, "only the cold row");
        let tex = super::super::latex::render(&run, &view);
        assert_eq!(tex.matches("cold/hot").count(), 1, "{tex}");
        assert!(tex.contains("cold/hot 3.2$\\times$ [2.9, 3.6]."), "in the notes under the table: {tex}");
    }
}
