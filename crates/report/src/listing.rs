//! `osprim list` and `osprim env` in every format: the catalogue of benchmarks, and the
//! machine's description as key–value pairs.

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

/// The catalogue's columns in the exports.
pub(crate) const HEADER: [&str; 4] = ["benchmark", "what it measures", "seed rows", "runs here"];

/// An entry's cells in the exports, in the order of [`HEADER`].
pub(crate) fn cells(e: &Entry) -> [String; 4] {
    let seeds = match e.seed_rows.len() {
        0 => String::new(),
        n => format!("{n}: {}", e.seed_rows.join("; ")),
    };
    [e.id.clone(), e.about.clone(), seeds, e.runs_here.clone()]
}

/// The catalogue for people, keeping to `width` columns, descriptions wrapped.
pub(crate) fn table(entries: &[Entry], width: usize) -> String {
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

/// Key–value pairs for people: the keys padded to one width.
pub(crate) fn pairs(fields: &[(String, String)]) -> String {
    let width = fields.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    fields.iter().map(|(k, v)| format!("{k:width$}  {v}\n")).collect()
}

fn trim_lines(text: &str) -> String {
    text.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Format, View};

    fn render(entries: &[Entry], format: Format, width: usize) -> Result<String, serde_json::Error> {
        crate::writer(format).catalogue(entries, &View { width, ..View::default() })
    }

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
