//! `osprim list` and `osprim env` in every format: the catalogue of benchmarks, and the
//! machine's description as key–value pairs.

use super::Format;
use super::escape::{self, Md};
use serde::Serialize;

/// One benchmark of the catalogue.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// Benchmark id.
    pub id: String,
    /// What it measures.
    pub about: String,
    /// The seed rows it answers (`system: operation`).
    pub seed_rows: Vec<String>,
    /// "yes", "no: why", or "derived: formula".
    pub runs_here: String,
}

/// The catalogue in `format`; a table keeps to `width` columns, wrapping descriptions.
pub fn render(entries: &[Entry], format: Format, width: usize) -> Result<String, serde_json::Error> {
    let cells = |e: &Entry| {
        let seeds = match e.seed_rows.len() {
            0 => String::new(),
            n => format!("{n}: {}", e.seed_rows.join("; ")),
        };
        [e.id.clone(), e.about.clone(), seeds, e.runs_here.clone()]
    };
    const HEADER: [&str; 4] = ["benchmark", "what it measures", "seed rows", "runs here"];
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(entries)? + "\n",
        Format::Table => {
            let mut t = super::new_table();
            t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
            t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
            t.set_header(["benchmark", "what it measures", "runs here"]);
            for e in entries {
                let seeds = match e.seed_rows.len() {
                    0 => String::new(),
                    1 => " (answers 1 seed row)".to_string(),
                    n => format!(" (answers {n} seed rows)"),
                };
                t.add_row([e.id.clone(), format!("{}{seeds}", e.about), e.runs_here.clone()]);
            }
            trim_lines(&format!("{t}\n"))
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(HEADER.map(|h| h.replace(' ', "_")));
            for e in entries {
                let _ = w.write_record(cells(e));
            }
            String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
        }
        Format::Markdown => markdown(&HEADER, entries.iter().map(cells)),
        Format::Latex => latex(&HEADER, "osprim's benchmarks", entries.iter().map(cells)),
    })
}

/// Key–value pairs (`osprim env`) in `format` (JSON is the caller's: it has the structure).
pub fn key_values(fields: &[(String, String)], format: Format) -> String {
    let rows = fields.iter().map(|(k, v)| [k.clone(), v.clone()]);
    match format {
        Format::Markdown => markdown(&["field", "value"], rows),
        Format::Latex => latex(&["field", "value"], "The machine", rows),
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(["field", "value"]);
            for r in rows {
                let _ = w.write_record(r);
            }
            String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
        }
        Format::Table | Format::Json => {
            let width = fields.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
            fields.iter().map(|(k, v)| format!("{k:width$}  {v}\n")).collect()
        }
    }
}

fn trim_lines(text: &str) -> String {
    text.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

/// A GitHub-flavoured Markdown table.
fn markdown<const N: usize>(header: &[&str; N], rows: impl Iterator<Item = [String; N]>) -> String {
    let cell = |s: &str| Md::Lines.escape(s);
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(N));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// A booktabs LaTeX table; every cell escaped.
fn latex<const N: usize>(header: &[&str; N], caption: &str, rows: impl Iterator<Item = [String; N]>) -> String {
    let mut out = format!(
        "\\begin{{table}}\n\\centering\n\\caption{{{}}}\n\\begin{{tabular}}{{{}}}\n\\toprule\n{} \\\\\n\\midrule\n",
        escape::latex(caption),
        "l".repeat(N),
        header.map(escape::latex).join(" & ")
    );
    for r in rows {
        out.push_str(&format!("{} \\\\\n", r.map(|c| escape::latex(&c)).join(" & ")));
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n\\end{table}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        vec![Entry {
            id: "syscall.null".into(),
            about: "empty system call | with 50 % of the_cost & more".into(),
            seed_rows: vec!["L4: empty system call".into()],
            runs_here: "yes".into(),
        }]
    }

    #[test]
    fn every_format_carries_the_entries() {
        for f in [Format::Table, Format::Json, Format::Csv, Format::Markdown, Format::Latex] {
            let out = render(&entries(), f, 80).expect("renders");
            assert!(out.contains("syscall") || out.contains("syscall.null"), "{f:?}: {out}");
        }
        let md = render(&entries(), Format::Markdown, 80).unwrap();
        assert!(md.lines().all(|l| l.matches('|').count() - l.matches("\\|").count() == 5), "{md}");
        let tex = render(&entries(), Format::Latex, 80).unwrap();
        assert!(tex.contains("50 \\% of the\\_cost \\& more"), "{tex}");
        let table = render(&entries(), Format::Table, 60).unwrap();
        assert!(table.lines().all(|l| l.chars().count() <= 60), "{table}");
    }
}
