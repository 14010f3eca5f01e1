//! The LaTeX writer: every document as booktabs tables, ready to paste into a paper. A
//! comparison and history are written as the text writer writes them, a crosscheck as the
//! Markdown writer does.
//!
//! # A run
//!
//! LaTeX of a run's results: a few compact `table` floats, each within one column of a
//! two-column paper (`\columnwidth`, about 230 pt) and one column's height. Families follow
//! one another in a table, a long family continuing in the next; each table has a `\caption`,
//! a `\label{tab:osprim-<family>}` for every family that begins in it, and a `tabular*` as
//! wide as the line, ruled with booktabs (`\toprule`, `\midrule`, `\bottomrule`).
//!
//! Three columns: the benchmark (its id in `\texttt{}`, its parameters after it, wrapping),
//! the median (the mean under the seed method) and its 95 % CI as `[lo, hi] unit`. A row's
//! flags, its check when not validated, why it was skipped or failed, a derived row's formula
//! and a cold row's ratio to its hot twin are numbered notes in words ("CI target missed"),
//! one number per distinct note, in small type under the tabular, as is each sweep's fit.
//! `View::detail` adds a row per stage of a breakdown. Min, p99 and samples are in the CSV and
//! Markdown exports. A comment block on top records the osprim version, the machine, the
//! kernel, the date and the method.
//!
//! # The papers
//!
//! A paper's tables, within one column too: each row is the operation across the table, then
//! a line of figures under it (the key of today's benchmark, then, today, the change and the
//! change in cycles), each change in two or three lines (the factor, its words, its interval).
//! They follow one another in floats each within a column's height, estimated as a run's
//! tables are (`printed`, `LINES_PER_TABLE`); a table taller than that continues in the
//! next float. The first has the citation and `\label{tab:osprim-<paper>}`, the rest say
//! "continued" and are labelled `tab:osprim-<paper>-2`, `-3`, …; each lists the keys and
//! numbered notes of its own rows, the last the paper's notes too.
//!
//! Packages: `booktabs`; `\textmu` (the µ of µs) is textcomp's, part of the LaTeX kernel since
//! 2020 (load `textcomp` on older installations). `tabular*` and the nested `tabular`s are the
//! kernel's. `−`, `×`, `→`, `±`, `≤`, `≥`, `≈` are written in math mode, which needs no
//! package. Every LaTeX special (`\ & % $ # _ { } ~ ^`, and `< > |`) is escaped; a character
//! pdflatex cannot typeset without a package (outside ASCII, Latin-1's letters and the symbols
//! above) is written `?`. Widths are fractions of `\linewidth`: `table*` in place of `table`
//! spans both columns of a two-column paper, the columns widening with it.

use super::compare::Named;
use super::document;
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
use model::{Flag, Method, Row, RunFile, Status, Tier, Verdict};
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

/// Printed lines a run's table holds at most, its notes under it counted (see [`height`]): a
/// float stays within one column's height of a two-column paper (about 55 lines of
/// `\footnotesize`, the caption's among them).
const LINES_PER_TABLE: usize = 40;

/// Characters of `\footnotesize` text in a line across one column of a two-column paper.
const COLUMN_CHARS: usize = 55;

/// The printed lines `chars` characters of text take, wrapped at `per_line` (a fraction of
/// [`COLUMN_CHARS`]): the estimator both exports' tables are split by.
fn printed(chars: usize, per_line: usize) -> usize {
    chars.div_ceil(per_line)
}

/// The printed lines a row takes in one column of a two-column paper, its notes counted: its
/// benchmark and parameters wrap at about 27 characters (half a column), its own note at about
/// 55; a stage takes one. An estimate, on the long side (a note many rows share is counted for
/// each).
fn height(r: &Row, lines: &[document::Line]) -> usize {
    let Some(first) = lines.first() else { return 0 };
    let text = first.id.len() + 1 + first.params.len();
    // Flags' notes are short and shared by many rows: the budget leaves them room.
    let notes = first.note.len() + if r.cold_hot.is_some() { 40 } else { 0 };
    printed(text, COLUMN_CHARS / 2) + printed(notes, COLUMN_CHARS) + lines.len() - 1
}

/// The results of `run` as LaTeX tables: a few compact tables, each within one column of a
/// two-column paper. Families follow one another in a table (a family longer than a table
/// continues in the next); a row is its benchmark with its parameters, the median (the mean
/// under the seed method) and its 95 % CI. Its flags, check and note are in words, numbered
/// under the table; min, p99 and samples are in the CSV and Markdown exports.
pub fn render(run: &RunFile, view: &View) -> String {
    let mut out = String::from(
        "% osprim results: a few tables, each within one column (replace table by table* to span two).\n\
         % Needs \\usepackage{booktabs}; \\textmu is textcomp's.\n",
    );
    for (label, text) in document::header(run) {
        let _ = writeln!(out, "% {label}: {}", text.replace(['\n', '\r'], " "));
    }
    let families = document::families(run);
    if families.is_empty() {
        out.push_str("% No results.\n");
    }
    let seed = run.config.method == Method::Seed;
    let tables = split(&families, seed, view.detail);
    let mut labels: Vec<String> = Vec::new();
    for (t, parts) in tables.iter().enumerate() {
        let _ = writeln!(out, "\n\\begin{{table}}[htbp]\n\\centering\\footnotesize\\setlength{{\\tabcolsep}}{{3pt}}");
        let names: Vec<String> = parts.iter().map(|p| format!("\\texttt{{{}}}", escape(&p.family.name))).collect();
        let mut names = names;
        names.dedup();
        let _ = writeln!(
            out,
            "\\caption{{osprim on {} (Linux {}): {}, {} per operation with its 95\\,\\% CI{}{}.}}",
            escape(&run.machine.cpu.model_name),
            escape(&run.machine.kernel.release),
            names.join(", "),
            if seed { "mean" } else { "median" },
            if tables.len() > 1 { format!(" (table {} of {})", t + 1, tables.len()) } else { String::new() },
            if run.partial { "; a partial run: not every benchmark ran" } else { "" },
        );
        for p in parts.iter().filter(|p| p.first) {
            let _ = write!(out, "\\label{{tab:osprim-{}}}", unique_label(&p.family.name, &mut labels));
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "\\begin{{tabular*}}{{\\linewidth}}{{@{{\\extracolsep{{\\fill}}}}p{{0.5\\linewidth}}rr@{{}}}}"
        );
        let _ = writeln!(out, "\\toprule");
        let _ = writeln!(out, "Benchmark & {} & 95\\,\\% CI \\\\", if seed { "Mean" } else { "Median" });
        let _ = writeln!(out, "\\midrule");
        let mut notes: Vec<String> = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                let _ = writeln!(out, "\\addlinespace");
            }
            for (r, lines) in &part.rows {
                for line in lines {
                    let first = match &line.stage {
                        None => {
                            let mut note = line.note.clone();
                            markdown::cold_hot_note(&mut note, r);
                            let marks: Vec<String> = row_notes(r, &line.check, &note)
                                .into_iter()
                                .map(|n| note_number(&mut notes, n))
                                .collect();
                            let marks = if marks.is_empty() {
                                String::new()
                            } else {
                                format!("\\textsuperscript{{{}}}", marks.join(","))
                            };
                            let params = if line.params.is_empty() {
                                String::new()
                            } else {
                                format!(" {}", breakable(&escape(&line.params)))
                            };
                            format!("\\texttt{{{}}}{marks}{params}", escape(&line.id))
                        }
                        Some(stage) => format!("\\quad {}", escape(stage)),
                    };
                    let _ =
                        writeln!(out, "\\raggedright {first} & {} & {} \\\\", figure(&line.point), figure(&line.ci));
                }
            }
        }
        let _ = writeln!(out, "\\bottomrule\n\\end{{tabular*}}");
        let fits: Vec<String> = parts
            .iter()
            .filter(|p| p.last)
            .flat_map(|p| &p.family.fits)
            .filter_map(|r| document::fit_line(r))
            .map(|f| {
                let params = if f.params.is_empty() { String::new() } else { format!(" ({})", escape(&f.params)) };
                format!("Sweep fit of \\texttt{{{}}}{params}: {}.", escape(&f.id), escape(&f.text))
            })
            .collect();
        if !notes.is_empty() || !fits.is_empty() {
            let _ = writeln!(out, "\\par\\smallskip\\raggedright");
            // The notes run on in one paragraph, to keep the float short.
            let numbered: Vec<String> = notes
                .iter()
                .enumerate()
                .map(|(i, n)| format!("\\textsuperscript{{{}}}{}.", i + 1, breakable(n)))
                .collect();
            if !numbered.is_empty() {
                let _ = writeln!(out, "{}\\par", numbered.join(" "));
            }
            for fit in &fits {
                let _ = writeln!(out, "{fit}\\par");
            }
        }
        out.push_str("\\end{table}\n");
    }
    out
}

/// A family's rows in one table: all of them, or those that fit with the part before or after.
struct Part<'a> {
    family: &'a document::Family<'a>,
    rows: Vec<(&'a Row, Vec<document::Line>)>,
    /// The family's first part: its label goes here.
    first: bool,
    /// Its last part: its sweeps' fits go under this table.
    last: bool,
}

/// The families in tables of at most [`LINES_PER_TABLE`] printed lines: a family that fits in what
/// is left of a table joins it, one that does not begins the next table, and one longer than a
/// table fills as many as it needs.
fn split<'a>(families: &'a [document::Family<'a>], seed: bool, detail: bool) -> Vec<Vec<Part<'a>>> {
    let mut tables: Vec<Vec<Part>> = Vec::new();
    let mut used = 0;
    for family in families {
        let mut rest: Vec<(&Row, Vec<document::Line>)> =
            family.rows.iter().map(|r| (*r, document::lines(r, seed, detail))).collect();
        let total: usize = rest.iter().map(|(r, l)| height(r, l)).sum();
        if tables.is_empty() || (used > 0 && used + total > LINES_PER_TABLE) {
            tables.push(Vec::new());
            used = 0;
        }
        let mut first = true;
        loop {
            let mut take = 0;
            let mut lines = 0;
            for (r, l) in &rest {
                let h = height(r, l);
                if take > 0 && used + lines + h > LINES_PER_TABLE {
                    break;
                }
                lines += h;
                take += 1;
            }
            let later = rest.split_off(take);
            used += lines;
            let last = later.is_empty();
            if let Some(table) = tables.last_mut() {
                table.push(Part { family, rows: rest, first, last });
            }
            if last {
                break;
            }
            rest = later;
            first = false;
            tables.push(Vec::new());
            used = 0;
        }
    }
    tables
}

/// What a row's note marks stand for, in words: why it has no figure, its check if not
/// validated, each flag, and its note (a derived row's formula, a cold row's ratio to its hot
/// twin).
fn row_notes(r: &Row, check: &str, note: &str) -> Vec<String> {
    let mut out = Vec::new();
    let note = escape(note);
    match r.status {
        Status::Skipped | Status::Failed | Status::Interrupted => {
            out.push(if note.is_empty() { escape(check) } else { format!("{}: {note}", escape(check)) })
        }
        _ => {
            match r.validation.verdict {
                Verdict::Validated => {}
                Verdict::Failed => out.push("check failed (untrustworthy)".to_string()),
                Verdict::NotValidated => out.push("not validated".to_string()),
            }
            for f in r.flags.iter().filter(|f| **f != Flag::CheckFailed) {
                let tier = if f.tier() == Tier::Untrustworthy { " (untrustworthy)" } else { "" };
                out.push(format!("{}{tier}", flag_words(*f)));
            }
            if !note.is_empty() {
                out.push(note);
            }
        }
    }
    out
}

/// The number of `note` among `notes` (from 1), added if new: a note many rows share (a flag)
/// is listed once.
fn note_number(notes: &mut Vec<String>, note: String) -> String {
    let i = match notes.iter().position(|n| *n == note) {
        Some(i) => i,
        None => {
            notes.push(note);
            notes.len() - 1
        }
    };
    (i + 1).to_string()
}

/// A flag in words, for a reader of a paper: "CI target missed" rather than its label.
pub fn flag_words(f: Flag) -> &'static str {
    match f {
        Flag::CheckFailed => "check failed",
        Flag::CiTargetMissed => "CI target missed",
        Flag::CiUnusable => "CI unusable",
        Flag::Unstable => "rounds disagree",
        Flag::Interrupted => "interrupted",
        Flag::ManyOutliers => "many outliers",
        Flag::PoorFit => "poor fit",
        Flag::BatchDependent => "depends on the batch size",
        Flag::RoundFailed => "a round failed",
        Flag::NegativeFixedCost => "negative fixed cost",
        Flag::Nonlinear => "not linear in the size",
        Flag::BusyCpu => "busy CPU",
        Flag::LevelShift => "level shifted since the previous run",
        Flag::ColdNotSlower => "cold not slower than hot",
    }
}

/// Escaped text whose long words (a path, a list) may break after `,`, `/`, `=` and `_` too,
/// to wrap in their column. The escaper writes none of these inside a command.
fn breakable(escaped: &str) -> String {
    let word = |w: &str| {
        if w.len() <= 20 {
            return w.to_string();
        }
        let mut out = String::with_capacity(w.len() * 2);
        for c in w.chars() {
            out.push(c);
            if matches!(c, ',' | '/' | '=') || (c == '_' && out.ends_with("\\_")) {
                out.push_str("\\allowbreak{}");
            }
        }
        out
    };
    escaped.split(' ').map(word).collect::<Vec<_>>().join(" ")
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

/// The seed tables as LaTeX: booktabs `table` floats, each within one column's height of a
/// two-column paper, ready to paste into a paper whose preamble has `\usepackage{booktabs}`
/// (nothing else is needed). A paper's first float has its citation and its label,
/// `tab:osprim-<paper>`; its tables follow one another, each under an italic line, and where
/// they are taller than a column they continue in further floats (`tab:osprim-<paper>-2`, …,
/// "continued" in their captions). A row names today's benchmark by a key, listed under the
/// float that shows it, so that it fits one line; the paper's notes are under its last float.
pub fn papers(run: &RunFile, view: &View) -> String {
    let rows = seeds::rows(run);
    let mut out = String::new();
    let _ = writeln!(out, "% The five seed papers beside today's Linux, written by osprim.");
    let _ = writeln!(out, "% Needs \\usepackage{{booktabs}} and nothing else.");
    let _ = writeln!(out, "% Today: {}.", escape(&seeds::machine_text(run)));
    let _ = writeln!(out, "% {}", escape(seeds::LEGEND));
    let _ = writeln!(out, "% {}", escape(seeds::SUMMARY_LEGEND));
    let _ = writeln!(out, "% {}", escape(seeds::method_text(run)));
    if run.partial {
        let _ = writeln!(out, "% A partial run: rows it did not reach are not in these tables.");
    }
    out.push_str(&seeds::summary::latex_list(run));
    for paper in &papers::PAPERS {
        paper_floats(&mut out, paper, &rows, view);
    }
    out
}

/// A row of a paper's table: its cells, the notes it marks and its benchmark's key.
struct PaperRow {
    cells: [String; 6],
    /// The operation as printed, for the estimate of its height.
    label: String,
    marks: Vec<usize>,
    key: usize,
}

/// A paper's table in a float: its italic title (none where the paper has one table), whether
/// it continues from the float before, and its rows (indices into the paper's rows).
struct Block<'a> {
    title: Option<&'a str>,
    continued: bool,
    rows: Vec<usize>,
}

/// Writes `paper`'s floats to `out`: its tables in as few floats as keep within
/// [`LINES_PER_TABLE`] estimated printed lines each ([`printed`]), its caption on the first,
/// each float's keys and numbered notes under it, its own notes under the last.
fn paper_floats(out: &mut String, paper: &papers::Paper, rows: &[seeds::SeedRow], view: &View) {
    let groups = seeds::by_table(paper, rows);
    let mut notes = Notes::default();
    let mut keys: Vec<(String, bool)> = Vec::new();
    let mut all: Vec<PaperRow> = Vec::new();
    // The paper's tables with a row in the view: title and rows.
    let mut tables: Vec<(String, Vec<usize>)> = Vec::new();
    for g in &groups {
        let visible = g.visible(view.all_rows);
        if visible.is_empty() {
            continue;
        }
        let mut mine = Vec::new();
        for (r, label) in visible {
            let marks = notes.marks(r);
            // Today's mean, the papers' statistic, alone: the median is in the other exports.
            let [label, then, today, mean, _, change, cycles] = seeds::export_cells(r, label);
            let measured = r.status == RowStatus::Measured;
            let key = match keys.iter().position(|(t, _)| *t == today) {
                Some(i) => i,
                None => {
                    keys.push((today, measured));
                    keys.len() - 1
                }
            };
            let cell = |s: String| if s == "-" { "--".to_string() } else { escape(&s) };
            let sup: String = marks.iter().map(|n| format!("\\textsuperscript{{{n}}}")).collect();
            mine.push(all.len());
            all.push(PaperRow {
                cells: [
                    format!("{}{sup}", escape(&label)),
                    self::key(key),
                    cell(short(&then)),
                    cell(short(&mean)),
                    stacked(&change),
                    stacked(&cycles),
                ],
                label,
                marks,
                key,
            });
        }
        tables.push((g.source.clone(), mine));
    }
    // A column no row has a figure in is left out (Rhino and VMMC give no clock: no cycles).
    let used: Vec<bool> = (0..6).map(|i| i < 4 || all.iter().any(|r| r.cells[i] != "--")).collect();
    let n = used.iter().filter(|u| **u).count();
    // The paper's own notes, under its last float, in plain text (for the estimate) and LaTeX.
    let mut without = String::new();
    if !view.all_rows {
        let counts =
            seeds::without_counts(groups.iter().flat_map(|g| &g.rows).map(|(r, _)| *r), "need hardware counters");
        if !counts.is_empty() {
            without = counts.join(", ");
        }
    }
    let tail: usize = paper.notes.iter().map(|n| printed(n.len(), COLUMN_CHARS)).sum::<usize>()
        + if without.is_empty() { 0 } else { printed(without.len() + 70, COLUMN_CHARS) };
    let what = match paper.tables {
        [t] => format!(" {}: {}.", t.source, t.caption),
        _ => String::new(),
    };
    let caption = format!(
        "{}{} Measured then on {}. Beside it today's Linux: today's mean, and the change, the paper's figure over \
         today's mean, with its 95~\\% interval.",
        escape(&paper.citation()),
        escape(&what),
        escape(paper.platform),
    );
    let titled = tables.len() > 1;
    // The printed lines of a float holding `blocks`, counted as a run's tables are (the table's
    // head and a short caption left out: the budget leaves them room): the first float's long
    // caption, each block's title and rows, and the keys and notes under it (the paper's own
    // under the last).
    let estimate = |blocks: &[Block], first: bool, last: bool| -> usize {
        let mut lines = if first { printed(caption.len(), COLUMN_CHARS) } else { 0 };
        let mut ks: Vec<usize> = Vec::new();
        let mut ns: Vec<usize> = Vec::new();
        for b in blocks {
            if let Some(t) = b.title {
                lines += printed(t.len() + if b.continued { 12 } else { 0 }, COLUMN_CHARS * 3 / 4) + 1;
            }
            for &i in &b.rows {
                let r = &all[i];
                let stack = r.cells[4..].iter().map(|c| c.matches("\\\\").count() + 1).max().unwrap_or(1);
                lines += printed(r.label.len() + 2 * r.marks.len(), COLUMN_CHARS * 3 / 4) + stack;
                ks.push(r.key);
                ns.extend(&r.marks);
            }
        }
        ks.sort_unstable();
        ks.dedup();
        ns.sort_unstable();
        ns.dedup();
        let listed: usize = 20 + ks.iter().map(|&k| keys[k].0.len() + 5).sum::<usize>();
        let numbered: usize = ns.iter().map(|&k| notes.0[k - 1].len() + 3).sum();
        lines += 1 + printed(listed, COLUMN_CHARS) + printed(numbered, COLUMN_CHARS);
        if last {
            lines += tail;
        }
        lines
    };
    // The floats: a table that fits in what is left of a float joins it, one that does not
    // begins the next, and one taller than a float continues in as many as it needs.
    let total = all.len();
    let mut floats: Vec<Vec<Block>> = vec![Vec::new()];
    for (title, mine) in &tables {
        let title = titled.then_some(title.as_str());
        let whole = Block { title, continued: false, rows: mine.clone() };
        let ends = mine.last() == Some(&(total - 1));
        let first = floats.len() == 1;
        let current = floats.last_mut().expect("a float");
        if !current.is_empty() {
            current.push(whole);
            if estimate(current, first, ends) > LINES_PER_TABLE {
                current.pop();
                floats.push(Vec::new());
            } else {
                continue;
            }
        }
        let mut block = Block { title, continued: false, rows: Vec::new() };
        for &i in mine {
            let first = floats.len() == 1;
            let current = floats.last_mut().expect("a float");
            block.rows.push(i);
            current.push(block);
            let fits = estimate(current, first, i == total - 1) <= LINES_PER_TABLE;
            block = current.pop().expect("just pushed");
            if !fits && block.rows.len() > 1 {
                block.rows.pop();
                current.push(block);
                floats.push(Vec::new());
                block = Block { title, continued: true, rows: vec![i] };
            }
        }
        floats.last_mut().expect("a float").push(block);
    }
    let count = floats.len();
    for (f, blocks) in floats.iter().enumerate() {
        let (first, last) = (f == 0, f + 1 == count);
        let _ = writeln!(out, "\n\\begin{{table}}[htbp]");
        let _ = writeln!(out, "\\centering\\footnotesize\\setlength{{\\tabcolsep}}{{3pt}}");
        if first {
            let _ = writeln!(out, "\\caption{{{caption}}}");
            let _ = writeln!(out, "\\label{{tab:osprim-{}}}", paper.key);
        } else {
            let _ = writeln!(
                out,
                "\\caption{{{} ({}, {}) beside today's Linux (continued from Table~\\ref{{tab:osprim-{}}}).}}",
                escape(paper.system),
                escape(paper.short_authors),
                escape(paper.year),
                paper.key
            );
            let _ = writeln!(out, "\\label{{tab:osprim-{}-{}}}", paper.key, f + 1);
        }
        let shown: Vec<usize> = blocks.iter().flat_map(|b| b.rows.iter().copied()).collect();
        if !shown.is_empty() {
            // A row is two lines: the operation across the table, then its figures under it,
            // each change in two lines (the factor, then its interval). That keeps the table
            // within one column of a two-column paper (about 230 pt) while the operation reads
            // whole; `tabular*` spreads the figures over the line's width.
            let m = n - 1;
            let _ = writeln!(
                out,
                "\\begin{{tabular*}}{{\\linewidth}}{{@{{\\extracolsep{{\\fill}}}}l{}@{{}}}}",
                "r".repeat(m - 1)
            );
            let _ = writeln!(out, "\\toprule");
            // The key's column has no heading: "Bench." would be five times as wide as its keys.
            let head = ["Operation", "", "Then", "Today", "Change", "In cycles"];
            let head: Vec<&str> = head.iter().zip(&used).skip(1).filter(|(_, u)| **u).map(|(h, _)| *h).collect();
            let _ = writeln!(out, "{}Operation}} \\\\", span(m, "l"));
            let _ = writeln!(out, "{} \\\\", head.join(" & "));
            let _ = writeln!(out, "\\midrule");
            for (b, block) in blocks.iter().enumerate() {
                if let Some(title) = block.title {
                    if b > 0 {
                        let _ = writeln!(out, "\\midrule");
                    }
                    let more = if block.continued { " (continued)" } else { "" };
                    let _ = writeln!(out, "{}\\raggedright\\emph{{{}}}{more}}} \\\\", span(m, WRAP), escape(title));
                }
                for (j, &i) in block.rows.iter().enumerate() {
                    if j > 0 || (b > 0 && block.title.is_none()) {
                        let _ = writeln!(out, "\\addlinespace[2pt]");
                    }
                    let cells: Vec<&str> =
                        all[i].cells.iter().zip(&used).filter(|(_, u)| **u).map(|(c, _)| c.as_str()).collect();
                    // `\raggedright` keeps a wrapped operation from stretching; the figures'
                    // line begins with the key, never with a `[` that `\\` would read.
                    let _ = writeln!(
                        out,
                        "{}\\raggedright {}}} \\\\ {} \\\\",
                        span(m, WRAP),
                        cells[0],
                        cells[1..].join(" & ")
                    );
                }
            }
            let _ = writeln!(out, "\\bottomrule");
            let _ = writeln!(out, "\\end{{tabular*}}");
        }
        let mut foot: Vec<String> = Vec::new();
        if shown.iter().any(|&i| all[i].cells[2..4].iter().any(|c| c.contains(INSTR))) {
            foot.push("instr.: instructions.".into());
        }
        let mut ks: Vec<usize> = shown.iter().map(|&i| all[i].key).collect();
        ks.sort_unstable();
        ks.dedup();
        if !ks.is_empty() {
            let listed: Vec<String> = ks
                .iter()
                .map(|&k| {
                    let (t, bench) = &keys[k];
                    if *bench {
                        format!("{}~\\texttt{{{}}}", key(k), escape(t))
                    } else {
                        format!("{}~{}", key(k), escape(t))
                    }
                })
                .collect();
            foot.push(format!("Today's benchmarks: {}.", listed.join("; ")));
        }
        if last {
            foot.extend(paper.notes.iter().map(|n| escape(n)));
        }
        // The numbered notes run on in one paragraph, to keep the float within a column.
        let mut ns: Vec<usize> = shown.iter().flat_map(|&i| all[i].marks.iter().copied()).collect();
        ns.sort_unstable();
        ns.dedup();
        if !ns.is_empty() {
            let numbered: Vec<String> =
                ns.iter().map(|&k| format!("\\textsuperscript{{{k}}}{}.", escape(&notes.0[k - 1]))).collect();
            foot.push(numbered.join(" "));
        }
        if last && !without.is_empty() {
            foot.push(format!(
                "Rows without a figure today: {without} (\\texttt{{osprim seeds --all-rows}} lists them)."
            ));
        }
        if !foot.is_empty() {
            let _ = writeln!(out, "\\par\\smallskip\\raggedright");
            let _ = writeln!(out, "{}", foot.join("\\par\n"));
        }
        let _ = writeln!(out, "\\end{{table}}");
    }
}

/// "instructions" in a figure, abbreviated to keep its column narrow (a key under the table).
const INSTR: &str = " instr.";

/// A figure with its unit abbreviated: `27.17 instr.`.
fn short(figure: &str) -> String {
    figure.replace(" instructions", INSTR)
}

/// The column an operation or a block's title spans: narrower than the figures under it in
/// one column of a two-column paper, so that it never widens the table; it wraps.
const WRAP: &str = "p{0.75\\linewidth}";

/// The opening of a `\multicolumn` over `m` columns of the given type, without the outer
/// column separation; its text and closing brace follow.
fn span(m: usize, column: &str) -> String {
    format!("\\multicolumn{{{m}}}{{@{{}}{column}@{{}}}}{{")
}

/// A change in lines set to the right, in a nested `tabular` (no package): the factor or the
/// reading, then its interval; a reading below resolution in three, as is a factor whose words
/// are long ("fewer instructions"). None is wider than "[0.761, 2.48]".
fn stacked(change: &str) -> String {
    if change == "-" {
        return "--".into();
    }
    let parts: Vec<String> = match change.strip_prefix("below resolution ") {
        Some(bound) => {
            let bound = bound.strip_prefix('(').and_then(|b| b.strip_suffix(')')).unwrap_or(bound);
            vec!["below".into(), "resolution".into(), bound.into()]
        }
        None => {
            let (head, interval) = match change.split_once(" [") {
                Some((head, interval)) => (head, Some(format!("[{interval}"))),
                None => (change, None),
            };
            // "2.1× more memory": the factor, then its words, one a line if together they
            // are longer than "1.72× slower".
            let mut lines: Vec<String> = match head.split_once("× ") {
                Some((factor, words)) if head.chars().count() > 12 => {
                    let mut l = vec![format!("{factor}×")];
                    if words.chars().count() > 12 {
                        l.extend(words.split(' ').map(String::from));
                    } else {
                        l.push(words.into());
                    }
                    l
                }
                _ => vec![head.into()],
            };
            lines.extend(interval);
            lines
        }
    };
    let lines: Vec<String> = parts.iter().map(|p| escape(p)).collect();
    // `{}` before each later line: one that began with `[` would be read as `\\`'s optional
    // argument.
    format!("\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{}\\end{{tabular}}", lines.join("\\\\{}"))
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
