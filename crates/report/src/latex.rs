//! LaTeX of a run's results, ready to paste into a paper: one `table` float per family (the
//! first segment of the id), each with a `\caption`, a `\label{tab:osprim-<family>}` and a
//! `tabular` ruled with booktabs (`\toprule`, `\midrule`, `\bottomrule`).
//!
//! The columns are those of the Markdown export ([`super::markdown`]): benchmark (its id in
//! `\texttt{}`), parameters, median, 95 % CI of the median as `[lo, hi] unit`, min, p99,
//! samples (the figures right-aligned, 4 significant digits, with their unit), check, flags,
//! and a note mark `(n)` whose text (why a row was skipped or failed, a derived row's formula)
//! follows the tabular in small type, as does each sweep's fit (fixed cost + cost per KiB with
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

use super::View;
pub use super::escape::latex as escape;
use super::markdown::{self, NUMERIC};
use model::{Method, RunFile};
use std::fmt::Write;

/// The results of `run` as LaTeX tables.
pub fn render(run: &RunFile, view: &View) -> String {
    let mut out =
        String::from("% osprim results: one table per family. Needs \\usepackage{booktabs}; \\textmu is textcomp's.\n");
    for (label, text) in markdown::header(run) {
        let _ = writeln!(out, "% {label}: {}", text.replace(['\n', '\r'], " "));
    }
    let families = markdown::families(run);
    if families.is_empty() {
        out.push_str("% No results.\n");
    }
    let seed = run.config.method == Method::Seed;
    let spec: String = NUMERIC.iter().map(|&n| if n { 'r' } else { 'l' }).collect();
    let headings: Vec<String> = markdown::headings(seed).iter().map(|h| escape(h).replace(" \\%", "\\,\\%")).collect();
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
            for line in markdown::lines(r, seed, view.detail) {
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
            .filter_map(|r| markdown::fit_line(r))
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
