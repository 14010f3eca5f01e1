//! Reporters: format a result document for people (table), programs (JSON, CSV) and the seed
//! view. Reporters only format; every number they print was computed by `stats`/`analyse`.

pub mod csv;
mod header;
pub mod latex;
mod layout;
pub mod markdown;
mod marks;
mod matrix;
mod names;
pub mod seeds;
mod sweep;
pub mod table;

pub use crate::model::unit::{fmt_bytes, fmt_count, fmt_ns, fmt_size, sig4};

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

/// A run's results in `format`.
pub fn render(run: &crate::model::RunFile, format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Table => table::render(run, view),
        Format::Json => serde_json::to_string_pretty(run)? + "\n",
        Format::Csv => csv::render(run),
        Format::Markdown => markdown::render(run, view),
        Format::Latex => latex::render(run, view),
    })
}

/// The seed papers' tables beside a run's results, in `format` (JSON: the rows as data).
pub fn render_papers(run: &crate::model::RunFile, format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Table => seeds::render(run, view),
        Format::Json => serde_json::to_string_pretty(&seeds::rows(run))? + "\n",
        Format::Csv => seeds::render_csv(run),
        Format::Markdown => seeds::render_markdown(run, view),
        Format::Latex => seeds::render_latex(run, view),
    })
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
    let mut out = String::with_capacity(text.len() + text.len() / 50);
    for line in text.split_inclusive('\n') {
        let (body, newline) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let lead = body.len() - body.trim_start().len();
        let indent = " ".repeat(lead + 4);
        let mut width = 0;
        for (i, word) in body.trim_start().split(' ').enumerate() {
            let w = word.chars().count();
            if i == 0 {
                out.push_str(&body[..lead]);
                width = lead;
            } else if width + 1 + w > WIDTH && width > indent.len() {
                out.push('\n');
                out.push_str(&indent);
                width = indent.len();
            } else {
                out.push(' ');
                width += 1;
            }
            out.push_str(word);
            width += w;
        }
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
mod tests;

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
