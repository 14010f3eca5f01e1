//! The LaTeX writer: every document as booktabs tables, ready to paste into a paper. A
//! comparison and history are written as the text writer writes them, a crosscheck as the
//! Markdown writer does.
//!
//! # A run
//!
//! LaTeX of a run's results: one `table` float per family (the
//! first segment of the id), each with a `\caption`, a `\label{tab:osprim-<family>}` and a
//! `tabular` ruled with booktabs (`\toprule`, `\midrule`, `\bottomrule`).
//!
//! The columns are those of the Markdown export ([`super::markdown`], from [`super::document`]): benchmark (its id in
//! `\texttt{}`), parameters, median, 95 % CI of the median as `[lo, hi] unit`, min, p99,
//! samples (the figures right-aligned, 4 significant digits, with their unit), check, flags,
//! and a note mark `(n)` whose text (why a row was skipped or failed, a derived row's formula,
//! a cold-cache row's ratio to its hot twin with its interval) follows the tabular in small type, as does each sweep's fit (fixed cost + cost per KiB with
//! their CIs, R²). Under the seed method the figures are the mean, its CI and the median.
//! `View::detail` adds a row per stage of a breakdown. A comment block on top records the
//! osprim version, the machine, the kernel, the date and the method.
//!
//! Packages: `booktabs`; `\textmu` (the µ of µs) is textcomp's, part of the LaTeX kernel since
//! 2020 (load `textcomp` on older installations). `−`, `×`, `→`, `±`, `≤`, `≥`, `≈` are
//! written in math mode, which needs no package. Every LaTeX special (`\ & % $ # _ { } ~ ^`,
//! and `< > |`) is escaped; a character pdflatex cannot typeset without a package (outside
//! ASCII, Latin-1's letters and the symbols above) is written `?`. The tables are as wide as
//! their parameters: wrap a `tabular` in `\resizebox{\linewidth}{!}{…}` (graphicx) to fit a
//! column.

use super::compare::Named;
use super::document::{self, NUMERIC};
pub use super::escape::latex as escape;
use super::escape::latex_comment;
use super::history;
use super::listing::{self, Entry};
use super::seeds::{self, Notes, RowStatus};
use super::write::{Writer, Written};
use super::{View, markdown, text};
use analysis::history::Point;
use analysis::history::changes::Report;
use model::crosscheck::Crosscheck;
use model::{Method, RunFile};
use std::fmt::Write;

/// The LaTeX writer.
pub struct Latex;

impl Writer for Latex {
    fn run(&self, run: &RunFile, view: &View) -> Written {
        Ok(render(run, view))
    }

    fn papers(&self, run: &RunFile, view: &View) -> Written {
        Ok(papers(run, view))
    }

    fn comparison(&self, all: &[Named], view: &View) -> Written {
        text::Text.comparison(all, view)
    }

    fn history(&self, points: &[Point], view: &View) -> Written {
        text::Text.history(points, view)
    }

    fn changes(&self, report: &Report, _: &View) -> Written {
        Ok(changes(report))
    }

    fn crosscheck(&self, c: &Crosscheck, _: &View) -> Written {
        Ok(markdown::crosscheck(c))
    }

    fn catalogue(&self, entries: &[Entry], _: &View) -> Written {
        Ok(booktabs(&listing::HEADER, "osprim's benchmarks", entries.iter().map(listing::cells)))
    }

    fn machine(&self, fields: &[(String, String)]) -> String {
        booktabs(&["field", "value"], "The machine", fields.iter().map(|(k, v)| [k.clone(), v.clone()]))
    }
}

/// The results of `run` as LaTeX tables.
pub fn render(run: &RunFile, view: &View) -> String {
    let mut out =
        String::from("% osprim results: one table per family. Needs \\usepackage{booktabs}; \\textmu is textcomp's.\n");
    for (label, text) in document::header(run) {
        let _ = writeln!(out, "% {label}: {}", text.replace(['\n', '\r'], " "));
    }
    let families = document::families(run);
    if families.is_empty() {
        out.push_str("% No results.\n");
    }
    let seed = run.config.method == Method::Seed;
    let spec: String = NUMERIC.iter().map(|&n| if n { 'r' } else { 'l' }).collect();
    let headings: Vec<String> = document::headings(seed).iter().map(|h| escape(h).replace(" \\%", "\\,\\%")).collect();
    let mut labels: Vec<String> = Vec::new();
    for family in &families {
        let label = unique_label(&family.name, &mut labels);
        let _ = writeln!(out, "\n\\begin{{table}}[htbp]\n\\centering\n\\small");
        let _ = writeln!(
            out,
            "\\caption{{osprim: \\texttt{{{}}} on {} (Linux {}), {} per operation with its 95\\,\\% CI{}.}}",
            escape(&family.name),
            escape(&run.machine.cpu.model_name),
            escape(&run.machine.kernel.release),
            if seed { "mean" } else { "median" },
            if run.partial { " (partial run: not every benchmark ran)" } else { "" },
        );
        let _ = writeln!(out, "\\label{{tab:osprim-{label}}}");
        let _ = writeln!(out, "\\begin{{tabular}}{{{spec}}}\n\\toprule");
        let _ = writeln!(out, "{} \\\\\n\\midrule", headings.join(" & "));
        let mut notes: Vec<String> = Vec::new();
        for r in &family.rows {
            for mut line in document::lines(r, seed, view.detail) {
                if line.stage.is_none() {
                    super::markdown::cold_hot_note(&mut line.note, r);
                }
                let id = match &line.stage {
                    None => format!("\\texttt{{{}}}", escape(&line.id)),
                    Some(stage) => format!("\\quad {}", escape(stage)),
                };
                let mut cells = vec![id];
                for (i, cell) in line.cells().iter().enumerate() {
                    let numeric = NUMERIC.get(i + 1).copied().unwrap_or(false);
                    cells.push(if i == 8 {
                        String::new()
                    } else if numeric {
                        figure(cell)
                    } else {
                        escape(cell)
                    });
                }
                if !line.note.is_empty() {
                    notes.push(escape(&line.note));
                    if let Some(last) = cells.last_mut() {
                        *last = format!("({})", notes.len());
                    }
                }
                let _ = writeln!(out, "{} \\\\", cells.join(" & "));
            }
        }
        let _ = writeln!(out, "\\bottomrule\n\\end{{tabular}}");
        let fits: Vec<String> = family
            .fits
            .iter()
            .filter_map(|r| document::fit_line(r))
            .map(|f| {
                let params = if f.params.is_empty() { String::new() } else { format!(" ({})", escape(&f.params)) };
                format!("Sweep fit of \\texttt{{{}}}{params}: {}.", escape(&f.id), escape(&f.text))
            })
            .collect();
        if !notes.is_empty() || !fits.is_empty() {
            let _ = writeln!(out, "\\par\\smallskip\n{{\\footnotesize\\raggedright");
            for (i, note) in notes.iter().enumerate() {
                let _ = writeln!(out, "({})~{note}\\par", i + 1);
            }
            for fit in &fits {
                let _ = writeln!(out, "{fit}\\par");
            }
            out.push_str("}\n");
        }
        out.push_str("\\end{table}\n");
    }
    out
}

/// A figure cell: escaped, with a thin space between number and unit; an en dash for none.
fn figure(cell: &str) -> String {
    if cell == "-" { "--".into() } else { escape(cell).replace(' ', "\\,") }
}

/// A label from a family name (letters, digits and `-`), not one of `taken`.
fn unique_label(family: &str, taken: &mut Vec<String>) -> String {
    let base: String =
        family.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let base = if base.is_empty() { "results".to_string() } else { base };
    let mut label = base.clone();
    let mut n = 1;
    while taken.contains(&label) {
        n += 1;
        label = format!("{base}-{n}");
    }
    taken.push(label.clone());
    label
}

/// The seed tables as LaTeX: one booktabs `table` per paper, captioned with the citation,
/// ready to paste into a paper whose preamble has `\usepackage{booktabs}` (nothing else is
/// needed). A paper's several tables are blocks of its one table, each under an italic line;
/// a row names today's benchmark by a key, listed under the table, so that it fits one line.
pub fn papers(run: &RunFile, view: &View) -> String {
    /// A line of a paper's table: an italic block heading, or a row's cells.
    enum TexLine {
        Block(String),
        Row([String; 6]),
    }
    let rows = seeds::rows(run);
    let mut out = String::new();
    let _ = writeln!(out, "% The five seed papers beside today's Linux, written by osprim.");
    let _ = writeln!(out, "% Needs \\usepackage{{booktabs}} and nothing else.");
    let _ = writeln!(out, "% Today: {}.", escape(&seeds::machine_text(run)));
    let _ = writeln!(out, "% {}", escape(seeds::LEGEND));
    let _ = writeln!(out, "% {}", escape(seeds::method_text(run)));
    if run.partial {
        let _ = writeln!(out, "% A partial run: rows it did not reach are not in these tables.");
    }
    out.push_str(&seeds::summary::latex_list(run));
    for paper in &papers::PAPERS {
        let groups = seeds::by_table(paper, &rows);
        let mut notes = Notes::default();
        let mut keys: Vec<(String, bool)> = Vec::new();
        let mut lines: Vec<TexLine> = Vec::new();
        for g in &groups {
            let visible = g.visible(view.all_rows);
            if visible.is_empty() {
                continue;
            }
            if groups.len() > 1 {
                lines.push(TexLine::Block(escape(&g.source)));
            }
            for (r, label) in visible {
                let marks: String = notes.marks(r).into_iter().map(|n| format!("\\textsuperscript{{{n}}}")).collect();
                // Today's mean, the papers' statistic, alone: the median is in the other exports.
                let [label, then, today, mean, _, change, cycles] = seeds::export_cells(r, label);
                let measured = r.status == RowStatus::Measured;
                let k = match keys.iter().position(|(t, _)| *t == today) {
                    Some(i) => i,
                    None => {
                        keys.push((today, measured));
                        keys.len() - 1
                    }
                };
                let cell = |s: String| if s == "-" { "--".to_string() } else { escape(&s) };
                // A change with its interval wraps in its column, set to the right.
                let wrapping = |s: String| {
                    if s == "-" { "--".to_string() } else { format!("{{\\raggedleft {}\\par}}", escape(&s)) }
                };
                lines.push(TexLine::Row([
                    format!("{}{marks}", escape(&label)),
                    key(k),
                    cell(then),
                    cell(mean),
                    wrapping(change),
                    wrapping(cycles),
                ]));
            }
        }
        // A column no row has a figure in is left out (Rhino and VMMC give no clock: no cycles).
        let used: Vec<bool> =
            (0..6).map(|i| i < 4 || lines.iter().any(|l| matches!(l, TexLine::Row(c) if c[i] != "--"))).collect();
        let n = used.iter().filter(|u| **u).count();
        let mut foot: Vec<String> = Vec::new();
        if !keys.is_empty() {
            let listed: Vec<String> = keys
                .iter()
                .enumerate()
                .map(|(i, (t, bench))| {
                    if *bench {
                        format!("{}~\\texttt{{{}}}", key(i), escape(t))
                    } else {
                        format!("{}~{}", key(i), escape(t))
                    }
                })
                .collect();
            foot.push(format!("Today's benchmarks: {}.", listed.join("; ")));
        }
        foot.extend(paper.notes.iter().map(|n| escape(n)));
        // The numbered notes run on in one paragraph, to keep the float within a page.
        let numbered: Vec<String> =
            notes.0.iter().enumerate().map(|(i, n)| format!("\\textsuperscript{{{}}}{}.", i + 1, escape(n))).collect();
        if !numbered.is_empty() {
            foot.push(numbered.join(" "));
        }
        if !view.all_rows {
            let counts =
                seeds::without_counts(groups.iter().flat_map(|g| &g.rows).map(|(r, _)| *r), "need hardware counters");
            if !counts.is_empty() {
                foot.push(format!(
                    "Rows without a figure today: {} (\\texttt{{osprim seeds --all-rows}} lists them).",
                    counts.join(", ")
                ));
            }
        }
        let what = match paper.tables {
            [t] => format!(" {}: {}.", t.source, t.caption),
            _ => String::new(),
        };
        let _ = writeln!(out, "\n\\begin{{table}}[htbp]");
        let _ = writeln!(out, "\\centering\\footnotesize\\setlength{{\\tabcolsep}}{{3pt}}");
        let _ = writeln!(
            out,
            "\\caption{{{}{} Measured then on {}. Beside it today's Linux: today's mean, and the change, \
             the paper's figure over today's mean, with its 95~\\% interval.}}",
            escape(&paper.citation()),
            escape(&what),
            escape(paper.platform),
        );
        let _ = writeln!(out, "\\label{{tab:osprim-{}}}", paper.key);
        if !lines.is_empty() {
            // The operation wraps, in a column as wide as the changes beside it leave.
            let first = match n {
                6 => "p{0.3\\linewidth}",
                5 => "p{0.45\\linewidth}",
                _ => "l",
            };
            let changes = "p{0.15\\linewidth}".repeat(n - 4);
            let _ = writeln!(out, "\\begin{{tabular}}{{@{{}}{first}crr{changes}@{{}}}}");
            let _ = writeln!(out, "\\toprule");
            let head = ["Operation", "Bench.", "Then", "Today", "Change", "In cycles"];
            let head: Vec<&str> = head.iter().zip(&used).filter(|(_, u)| **u).map(|(h, _)| *h).collect();
            let _ = writeln!(out, "{} \\\\", head.join(" & "));
            let _ = writeln!(out, "\\midrule");
            let mut blocks = 0;
            for l in &lines {
                match l {
                    TexLine::Block(title) => {
                        if blocks > 0 {
                            let _ = writeln!(out, "\\midrule");
                        }
                        blocks += 1;
                        let _ = writeln!(out, "\\multicolumn{{{n}}}{{@{{}}l}}{{\\emph{{{title}}}}} \\\\");
                    }
                    TexLine::Row(cells) => {
                        let cells: Vec<&str> =
                            cells.iter().zip(&used).filter(|(_, u)| **u).map(|(c, _)| c.as_str()).collect();
                        // `{}` first: a row that began with `[` would be read as `\\`'s optional
                        // argument; `\raggedright` keeps a wrapped operation from stretching.
                        let _ = writeln!(out, "{{}}\\raggedright {} \\\\", cells.join(" & "));
                    }
                }
            }
            let _ = writeln!(out, "\\bottomrule");
            let _ = writeln!(out, "\\end{{tabular}}");
        }
        if !foot.is_empty() {
            let _ = writeln!(out, "\\par\\smallskip\\raggedright");
            let _ = writeln!(out, "{}", foot.join("\\par\n"));
        }
        let _ = writeln!(out, "\\end{{table}}");
    }
    out
}

/// A key for the n-th (from 0) of a table's benchmarks: a … z, aa, ab, …
fn key(n: usize) -> String {
    let letter = |i: usize| char::from(b'a' + (i % 26) as u8);
    if n < 26 { letter(n).to_string() } else { format!("{}{}", letter(n / 26 - 1), letter(n)) }
}

/// The change points as one tabular, what was searched in a comment under it.
fn changes(report: &Report) -> String {
    let mut out = String::from(
        "\\begin{tabular}{lllrrlr}\n\\toprule\nresult & last run before & first run after & before & after & after / before & $p$ \\\\\n\\midrule\n",
    );
    for s in &report.series {
        let unit = history::unit_of(&s.unit);
        for c in &s.changes {
            out.push_str(&format!(
                "{} & {} & {} & {} & {} & {} {} & {:.3} \\\\\n",
                escape(&history::title(s)),
                escape(&history::when(&c.last_before.started_utc)),
                escape(&history::when(&c.first_after.started_utc)),
                escape(&history::level_text(&c.before, unit)),
                escape(&history::level_text(&c.after, unit)),
                escape(&history::ratio_text(c, unit)),
                history::direction(c, unit),
                c.p_value
            ));
        }
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n");
    out.push_str(&format!("% {}\n", latex_comment(&history::footer(report))));
    out
}

/// A booktabs LaTeX table; every cell escaped.
fn booktabs<const N: usize>(header: &[&str; N], caption: &str, rows: impl Iterator<Item = [String; N]>) -> String {
    let mut out = format!(
        "\\begin{{table}}\n\\centering\n\\caption{{{}}}\n\\begin{{tabular}}{{{}}}\n\\toprule\n{} \\\\\n\\midrule\n",
        escape(caption),
        "l".repeat(N),
        header.map(escape).join(" & ")
    );
    for r in rows {
        out.push_str(&format!("{} \\\\\n", r.map(|c| escape(&c)).join(" & ")));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\\end{table}\n");
    out
}
