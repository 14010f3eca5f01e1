//! The seed view: each paper's table, every row beside today's figure on this machine.
//!
//! Columns: the published figure and its platform; today's benchmark; today's mean — the
//! papers' statistic, a mean of repeated operations — with the median beside it; the mean in
//! TSC cycles at this machine's counter frequency; and then/now ratios of means — in time where
//! the paper's figure is a time or cycles at a stated clock, in cycles where it gives cycles
//! (or a time and a clock). A ratio above 1 means today is faster.

use super::{fmt_ns, sig4};
use crate::model::{Row, RunFile, Unit};
use crate::seeds::{self, Figure, Target, Want};
use comfy_table::CellAlignment;
use std::fmt::Write;

/// Whether a parameter value reads as `want` (strings as they are, numbers as written).
fn param_is(v: &serde_json::Value, want: &str) -> bool {
    match v {
        serde_json::Value::String(s) => s == want,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|x| want.parse::<f64>().ok() == Some(x)),
        serde_json::Value::Bool(b) => want.parse::<bool>().ok() == Some(*b),
        _ => false,
    }
}

/// Today's figure for a seed row: the papers' statistic (the mean of repeated operations) and
/// the median beside it, both in the row's unit.
#[derive(Clone, Copy, Debug)]
struct Today {
    mean: f64,
    median: f64,
}

/// The row that answers `want`, and its figures (or its stage's).
fn measured(run: &RunFile, want: Want) -> Option<(&Row, Today)> {
    run.results
        .iter()
        .filter(|r| {
            r.id == want.id && want.params.iter().all(|(k, v)| r.params.get(*k).is_some_and(|x| param_is(x, v)))
        })
        .find_map(|r| {
            let summary = match want.stage {
                None => r.summary.as_ref(),
                Some(stage) => r.breakdown.as_ref()?.iter().find(|s| s.name == stage).map(|s| &s.summary),
            };
            let today = match (summary, &r.derived) {
                (Some(s), _) => Today { mean: s.mean, median: s.median },
                // A difference of medians has no mean of its own.
                (None, Some(d)) if want.stage.is_none() => Today { mean: f64::NAN, median: d.estimate.point },
                _ => return None,
            };
            Some((r, today))
        })
}

/// `then / now` as "N×", only for two positive, finite figures (a result file edited by hand
/// or a broken clock gives no ratio, not "inf×" or "−232×").
fn ratio(then: f64, now: f64) -> String {
    if then.is_finite() && now.is_finite() && then > 0.0 && now > 0.0 {
        format!("{}×", sig4(then / now))
    } else {
        "-".into()
    }
}

fn then_cell(f: &Figure) -> String {
    let unit = if f.unit == "us" { "µs" } else { f.unit.as_str() };
    format!("{} {unit}", f.value)
}

fn platform_cell(f: &Figure) -> String {
    match f.clock_mhz {
        Some(mhz) => format!("{}, {} @ {mhz} MHz", f.system, f.platform),
        None => format!("{}, {}", f.system, f.platform),
    }
}

/// All five tables.
pub fn render(run: &RunFile, _view: &super::View) -> String {
    let hz = run.timer.counter_hz();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Seed tables beside today ({}, Linux {}); today's mean (the papers' statistic) with the median beside it; cycles today are TSC cycles at {}; then/now compares means, > 1 means today is faster.",
        run.machine.cpu.model_name,
        run.machine.kernel.release,
        hz.filter(|h| h.is_finite() && *h > 0.0)
            .map(|h| format!("{:.1} MHz", h / 1e6))
            .unwrap_or_else(|| "an unknown frequency".into())
    );
    if run.partial {
        let _ = writeln!(
            out,
            "PARTIAL RUN: it was interrupted (or is still going on); rows it did not reach say \"not in this result\"."
        );
    }
    let mut out = super::wrap(&out);
    for (prefix, title) in seeds::PAPERS {
        let mut table = super::new_table();
        table.set_header(vec![
            "operation",
            "then",
            "platform",
            "today",
            "mean",
            "median",
            "cycles (mean)",
            "then/now time",
            "then/now cycles",
        ]);
        for f in seeds::figures().iter().filter(|f| f.seed_file.starts_with(prefix)) {
            table.add_row(row_cells(f, run, hz));
        }
        for i in [1, 4, 5, 6, 7, 8] {
            if let Some(c) = table.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "\n{prefix} {title}\n{table}");
    }
    out
}

fn row_cells(f: &Figure, run: &RunFile, hz: Option<f64>) -> Vec<String> {
    let dash = || "-".to_string();
    let mut cells = vec![f.label(), then_cell(f), platform_cell(f)];
    let target = seeds::target(f);
    let (today, mean, median, cycles, rt, rc) = match (target.want(), target) {
        (Some(want), _) => match measured(run, want) {
            Some((row, t)) if row.unit == Unit::Bytes => {
                let ratio = if f.unit == "bytes" { ratio(f.value, t.mean) } else { dash() };
                let ratio = if ratio == "-" { ratio } else { format!("{ratio} (bytes)") };
                (want.label(), super::fmt_bytes(t.mean), super::fmt_bytes(t.median), dash(), ratio, dash())
            }
            Some((_, t)) => {
                // The ratio uses the papers' statistic, the mean; a difference of medians has
                // none, and then the median stands in, as its column says.
                let ns = if t.mean.is_finite() { t.mean } else { t.median };
                let cyc = hz.filter(|h| h.is_finite() && *h > 0.0).map(|h| ns * h / 1e9);
                let rt = f.then_ns().map(|v| ratio(v, ns)).unwrap_or_else(dash);
                let rc = match (f.then_cycles(), cyc) {
                    (Some(v), Some(c)) => ratio(v, c),
                    _ => dash(),
                };
                (want.label(), fmt_ns(t.mean), fmt_ns(t.median), cyc.map(sig4).unwrap_or_else(dash), rt, rc)
            }
            None => (format!("{}: not in this result", want.label()), dash(), dash(), dash(), dash(), dash()),
        },
        (None, Target::Planned(id)) => {
            (format!("not measured yet (planned: {id})"), dash(), dash(), dash(), dash(), dash())
        }
        (None, Target::Counters(id)) => (
            format!("needs hardware counters (retired instructions); time: {id}"),
            dash(),
            dash(),
            dash(),
            dash(),
            dash(),
        ),
        (None, Target::NotApplicable(why)) => {
            (format!("not applicable: {why}"), dash(), dash(), dash(), dash(), dash())
        }
        (None, Target::Bench(_) | Target::Pick(_)) => (dash(), dash(), dash(), dash(), dash(), dash()),
    };
    cells.extend([today, mean, median, cycles, rt, rc]);
    cells
}

/// One seed row beside today's figure, as data (JSON export of the seed view).
#[derive(Debug, Clone, serde::Serialize)]
pub struct SeedRow {
    /// The paper's system.
    pub system: String,
    /// The paper's table.
    pub table: String,
    /// Operation and variant.
    pub operation: String,
    /// The published figure.
    pub then: f64,
    /// Its unit.
    pub then_unit: String,
    /// The benchmark that answers it today, if any.
    pub today_id: Option<String>,
    /// Today's mean, in the row's unit.
    pub today_mean: Option<f64>,
}

/// Every seed row beside today's figure.
pub fn rows(run: &RunFile) -> Vec<SeedRow> {
    seeds::figures()
        .iter()
        .map(|f| {
            let want = seeds::target(f).want();
            let today = want.and_then(|w| measured(run, w)).map(|(_, t)| t.mean);
            SeedRow {
                system: f.system.clone(),
                table: f.table.clone(),
                operation: f.label(),
                then: f.value,
                then_unit: f.unit.clone(),
                today_id: want.map(|w| w.label()),
                today_mean: today,
            }
        })
        .collect()
}

/// The seed rows as CSV.
pub fn render_csv(run: &RunFile) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows(run) {
        w.serialize(&r).expect("CSV into memory cannot fail");
    }
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

/// The seed tables as Markdown.
pub fn render_markdown(run: &RunFile, view: &super::View) -> String {
    render(run, view)
}

/// The seed tables as LaTeX.
pub fn render_latex(run: &RunFile, view: &super::View) -> String {
    render(run, view)
}
