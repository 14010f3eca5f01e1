//! `osprim compare` for people and programs: per result the two medians, the ratio with its
//! 95 % CI and the verdict; then what differs between the machines; then the count. Formats
//! only: [`crate::compare`] decides.

use super::layout::{Align, Cell, Grid, Line, Style};
use super::{Format, View, names};
use crate::compare::{Compared, Comparison, Verdict};
use crate::model::RunFile;

/// One comparison and the files it came from.
pub struct Named<'a> {
    /// The base file's name, as given.
    pub base_name: String,
    /// The new file's name, as given.
    pub new_name: String,
    /// The base run.
    pub base: &'a RunFile,
    /// The new run.
    pub new: &'a RunFile,
    /// What was found.
    pub comparison: Comparison,
}

/// Every comparison in `format`.
pub fn render(all: &[Named], format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(&json(all))? + "\n",
        Format::Csv => csv_text(all),
        Format::Markdown => markdown(all),
        Format::Table | Format::Latex => all.iter().map(|n| table(n, view)).collect::<Vec<_>>().join("\n"),
    })
}

fn json(all: &[Named]) -> serde_json::Value {
    serde_json::Value::Array(
        all.iter()
            .map(|n| {
                serde_json::json!({
                    "base": n.base_name,
                    "new": n.new_name,
                    "base_started_utc": n.base.started_utc,
                    "new_started_utc": n.new.started_utc,
                    "comparison": n.comparison,
                })
            })
            .collect(),
    )
}

/// `id` and its parameters as the run table names a row.
fn label(id: &str, params: &crate::model::Params) -> String {
    let p = names::row_params(params, &[]);
    if p.is_empty() { id.to_string() } else { format!("{id} {p}") }
}

fn ratio_text(c: &Compared) -> (String, String) {
    (format!("{:.3}", c.ratio), format!("[{:.3}, {:.3}]", c.ratio_ci95[0], c.ratio_ci95[1]))
}

/// `, BUSY: up to 48 % of CPU 1 taken between rounds` when the run's probes found its CPU busy.
fn busy(run: &crate::model::RunFile) -> String {
    match super::header::availability(run) {
        Some((text, true)) => format!(", {text}"),
        _ => String::new(),
    }
}

fn table(n: &Named, view: &View) -> String {
    let c = &n.comparison;
    let mut out = vec![
        format!("base  {} ({}, {}{})", n.base_name, n.base.started_utc, n.base.machine.hostname, busy(n.base)),
        format!("new   {} ({}, {}{})", n.new_name, n.new.started_utc, n.new.machine.hostname, busy(n.new)),
        "ratio = new median / base median; 95 % CI from resampling rounds, then blocks within a round".into(),
        format!("noise threshold ± {} %", crate::model::unit::short_number(c.noise * 100.0)),
        String::new(),
    ];
    let head = ["benchmark", "base", "new", "ratio", "95 % CI", "verdict"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left];
    let mut grid = Grid::new(vec![head], align);
    for r in &c.compared {
        let (ratio, ci) = ratio_text(r);
        let style = match r.verdict {
            Verdict::Slower => Style::Bad,
            Verdict::Faster => Style::Plain,
            Verdict::NoChange => Style::Dim,
        };
        let verdict = match r.verdict {
            Verdict::NoChange if r.significant => "no change (within noise)".to_string(),
            v => v.text().to_string(),
        };
        grid.push(Line::Cells(vec![
            Cell::plain(label(&r.id, &r.params)),
            Cell::plain(r.unit.format(r.base_median)),
            Cell::plain(r.unit.format(r.new_median)),
            Cell::plain(ratio),
            Cell::plain(ci),
            Cell::styled(verdict, style),
        ]));
    }
    grid.fit(view.width, &[], 0);
    for part in grid.render(view.width, view.color) {
        out.extend(part);
    }
    if !c.differences.is_empty() {
        out.push(String::new());
        out.push("the runs differ in:".into());
        for d in &c.differences {
            out.push(format!("  {}: {} → {}", d.what, d.base, d.new));
        }
    }
    if view.detail && !c.unmatched.is_empty() {
        out.push(String::new());
        out.push("not compared:".into());
        for u in &c.unmatched {
            out.push(format!("  {}: {}", label(&u.id, &u.params), u.why));
        }
    }
    out.push(String::new());
    out.push(summary_line(c, view.detail));
    out.join("\n") + "\n"
}

/// `31 compared: 2 faster, 1 slower, 28 no change; 4 not compared (--detail lists them)`.
pub fn summary_line(c: &Comparison, detail: bool) -> String {
    let count = |v: Verdict| c.compared.iter().filter(|r| r.verdict == v).count();
    let mut s = format!(
        "{} compared: {} faster, {} slower, {} no change",
        c.compared.len(),
        count(Verdict::Faster),
        count(Verdict::Slower),
        count(Verdict::NoChange)
    );
    if !c.unmatched.is_empty() {
        s.push_str(&format!("; {} not compared", c.unmatched.len()));
        if !detail {
            s.push_str(" (--detail lists them)");
        }
    }
    s
}

fn csv_text(all: &[Named]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "base",
        "new",
        "id",
        "params",
        "unit",
        "base_median",
        "new_median",
        "ratio",
        "ratio_ci95_low",
        "ratio_ci95_high",
        "verdict",
    ]);
    for n in all {
        for r in &n.comparison.compared {
            let params = serde_json::to_string(&r.params).unwrap_or_default();
            let _ = w.write_record([
                n.base_name.clone(),
                n.new_name.clone(),
                r.id.clone(),
                params,
                r.unit.symbol().to_string(),
                r.base_median.to_string(),
                r.new_median.to_string(),
                r.ratio.to_string(),
                r.ratio_ci95[0].to_string(),
                r.ratio_ci95[1].to_string(),
                r.verdict.text().to_string(),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

fn markdown(all: &[Named]) -> String {
    let mut out = String::new();
    for n in all {
        out.push_str(&format!("### `{}` → `{}`\n\n", n.base_name, n.new_name));
        out.push_str("| benchmark | base | new | ratio | 95 % CI | verdict |\n|---|---:|---:|---:|---:|---|\n");
        for r in &n.comparison.compared {
            let (ratio, ci) = ratio_text(r);
            out.push_str(&format!(
                "| `{}` | {} | {} | {ratio} | {ci} | {} |\n",
                label(&r.id, &r.params),
                r.unit.format(r.base_median),
                r.unit.format(r.new_median),
                r.verdict.text()
            ));
        }
        if !n.comparison.differences.is_empty() {
            out.push_str("\nThe runs differ in:\n\n");
            for d in &n.comparison.differences {
                out.push_str(&format!("- `{}`: {} → {}\n", d.what, d.base, d.new));
            }
        }
        out.push_str(&format!("\n{}\n\n", summary_line(&n.comparison, true)));
    }
    out
}
