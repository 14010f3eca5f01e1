//! CSV: one line per result row, and one more line per stage of a row's breakdown.
//!
//! The header is the fixed columns of [`COLUMNS`], always the same and in the same order,
//! followed by **one column per parameter**: the union of the parameter names over the run's
//! rows, sorted (`bytes`, `cpus`, `peer`, `placement`, …), empty where a row lacks it. A
//! parameter whose name is taken by a fixed column is written as `param_<name>`. Parameter
//! values are written plainly: strings as they are (CSV quoting only), numbers as numbers,
//! booleans as `true`/`false`, `null` as an empty cell, lists and objects as compact JSON
//! (`[0,1]`).
//!
//! - `row` is the row's index in the result file's `results` (0-based), `id` its id.
//! - `stage` is empty on a row's own line. A row with a breakdown is followed by one line per
//!   stage, in the file's order, with the stage's name in `stage`, the same `row`, `id`,
//!   `unit`, `status`, `verdict`, `flags`, `method`, `iterations_per_sample`, parameters and
//!   `run_partial` as its row, and the stage's summary in the summary columns (`n` to `mad`,
//!   `dropped`); its other columns are empty. Filter on an empty `stage` for one line per row.
//! - Every figure is in the line's `unit` (`ns`, `bytes` or `count`), and the columns of those
//!   figures name no unit: `median`, `median_ci95_lo`, `median_ci95_hi`, `mean`, … , the
//!   single-operation percentiles `tail_*`, and the derived estimate `derived`,
//!   `derived_ci95_lo`, `derived_ci95_hi`. The fit's columns name their own units (only timed
//!   rows are fitted): the chosen model's fixed cost `fit_fixed_ns` and its 95 % CI, its cost
//!   per byte at the largest sizes `fit_ns_per_byte` (beyond `fit_breakpoint_bytes` when two
//!   segments were chosen, else that column is empty) and its CI, and the single line's
//!   `fit_r_squared`.
//! - `status`, `verdict`, `flags` (space separated), `method`, `stop` and `fit_model` are
//!   written with the result file's own names (`not_validated`, `ci-wide`, `busy-cpu`, …): a flag by its one
//!   name, as the terminal shows it; `status` is `ok` (clean), `advisory` or `untrustworthy` for
//!   a measured row (its flags' worst tier), else `skipped`, `failed` or `interrupted`.
//! - Numbers are written with every digit (Rust's shortest representation that reads back to
//!   the same `f64`); a NaN is `NaN`, an infinity `inf`/`-inf`; an absent figure is empty.
//! - `notes` joins the row's notes with ` | `; `about` is what the row measures; `run_partial`
//!   is the file's `partial`. `fit_points` counts the sweep's points. The rest of a row (its
//!   samples, checks, `observed`, the fit's diagnostics) is in the JSON file only.

use model::{Params, Row, RunFile, Summary};
use serde::Serialize;
use serde_json::Value;

/// The fixed columns, in order; the parameter columns follow them.
pub const COLUMNS: [&str; 52] = [
    "row",
    "id",
    "stage",
    "unit",
    "status",
    "verdict",
    "flags",
    "method",
    "stop",
    "n",
    "iterations_per_sample",
    "median",
    "median_ci95_lo",
    "median_ci95_hi",
    "mean",
    "mean_ci95_lo",
    "mean_ci95_hi",
    "rounds",
    "dropped",
    "min",
    "p1",
    "p5",
    "p95",
    "p99",
    "max",
    "stddev",
    "mad",
    "cycles_median",
    "tail_n",
    "tail_p50",
    "tail_p99",
    "tail_p999",
    "tail_max",
    "tail_resolution",
    "fit_model",
    "fit_fixed_ns",
    "fit_fixed_ns_ci95_lo",
    "fit_fixed_ns_ci95_hi",
    "fit_ns_per_byte",
    "fit_ns_per_byte_ci95_lo",
    "fit_ns_per_byte_ci95_hi",
    "fit_r_squared",
    "fit_breakpoint_bytes",
    "fit_points",
    "derived",
    "derived_ci95_lo",
    "derived_ci95_hi",
    "derived_formula",
    "reason",
    "notes",
    "about",
    "run_partial",
];

/// The rows of `run` as CSV text.
pub fn render(run: &RunFile) -> String {
    // Writing into memory fails only on an I/O error of the Vec, which cannot happen; an
    // empty text then is better than a panic.
    render_csv(run).unwrap_or_default()
}

/// The parameter names of `run`, sorted, each with the column name it is written under.
pub fn param_columns(run: &RunFile) -> Vec<(String, String)> {
    let mut names: Vec<&String> = run.results.iter().flat_map(|r| r.params.keys()).collect();
    names.sort();
    names.dedup();
    let mut taken: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    names
        .into_iter()
        .map(|name| {
            let mut column = name.clone();
            while taken.contains(&column) {
                column = format!("param_{column}");
            }
            taken.push(column.clone());
            (name.clone(), column)
        })
        .collect()
}

fn render_csv(run: &RunFile) -> Result<String, csv::Error> {
    let params = param_columns(run);
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = COLUMNS.iter().copied().chain(params.iter().map(|(_, c)| c.as_str())).collect();
    w.write_record(&header)?;
    for (i, r) in run.results.iter().enumerate() {
        w.write_record(row_line(run, i, r, &params))?;
        for stage in r.breakdown.iter().flatten() {
            w.write_record(stage_line(run, i, r, &stage.name, &stage.summary, &params))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The line of one row, [`COLUMNS`] then its parameters.
fn row_line(run: &RunFile, index: usize, r: &Row, params: &[(String, String)]) -> Vec<String> {
    let mut cells = Cells::new();
    identity(&mut cells, run, index, r, "");
    cells.set("stop", r.stop.as_ref().map(name).unwrap_or_default());
    cells.set("rounds", r.samples_per_round.len().to_string());
    if let Some(s) = &r.summary {
        summary(&mut cells, s);
    }
    if let Some(c) = &r.cycles {
        cells.set("cycles_median", num(c.median));
    }
    if let Some(t) = &r.tail {
        cells.set("tail_n", t.n.to_string());
        cells.set("tail_p50", num(t.p50));
        cells.set("tail_p99", num(t.p99));
        cells.set("tail_p999", num(t.p999));
        cells.set("tail_max", num(t.max));
        cells.set("tail_resolution", num(t.resolution));
    }
    if let Some(f) = &r.fit {
        let ((fixed, fixed_ci), (per_byte, per_byte_ci)) = (f.fixed_ns(), f.per_byte_ns());
        cells.set("fit_model", name(&f.model));
        cells.set("fit_fixed_ns", num(fixed));
        cells.set("fit_fixed_ns_ci95_lo", num(fixed_ci[0]));
        cells.set("fit_fixed_ns_ci95_hi", num(fixed_ci[1]));
        cells.set("fit_ns_per_byte", num(per_byte));
        cells.set("fit_ns_per_byte_ci95_lo", num(per_byte_ci[0]));
        cells.set("fit_ns_per_byte_ci95_hi", num(per_byte_ci[1]));
        cells.set("fit_r_squared", num(f.line.r_squared));
        if let Some(s) = f.chosen_segments() {
            cells.set("fit_breakpoint_bytes", s.breakpoint_bytes.to_string());
        }
        cells.set("fit_points", f.points.len().to_string());
    }
    if let Some(d) = &r.derived {
        cells.set("derived", num(d.estimate.point));
        cells.set("derived_ci95_lo", num(d.estimate.ci95[0]));
        cells.set("derived_ci95_hi", num(d.estimate.ci95[1]));
        cells.set("derived_formula", d.formula.clone());
    }
    cells.set("reason", r.reason.clone().unwrap_or_default());
    cells.set("notes", r.notes.join(" | "));
    cells.set("about", r.about.clone());
    cells.finish(&r.params, params)
}

/// The line of one stage of row `r`'s breakdown.
fn stage_line(
    run: &RunFile,
    index: usize,
    r: &Row,
    stage: &str,
    s: &Summary,
    params: &[(String, String)],
) -> Vec<String> {
    let mut cells = Cells::new();
    identity(&mut cells, run, index, r, stage);
    summary(&mut cells, s);
    cells.finish(&r.params, params)
}

/// The columns a stage line repeats from its row.
fn identity(cells: &mut Cells, run: &RunFile, index: usize, r: &Row, stage: &str) {
    cells.set("row", index.to_string());
    cells.set("id", r.id.clone());
    cells.set("stage", stage.to_string());
    cells.set("unit", name(&r.unit));
    cells.set("status", name(&r.status));
    cells.set("verdict", name(&r.validation.verdict));
    cells.set("flags", r.flags.iter().map(name).collect::<Vec<_>>().join(" "));
    cells.set("method", name(&r.method));
    cells.set("iterations_per_sample", r.iterations_per_sample.to_string());
    cells.set("run_partial", run.partial.to_string());
}

/// The summary columns.
fn summary(cells: &mut Cells, s: &Summary) {
    cells.set("n", s.n.to_string());
    cells.set("median", num(s.median));
    cells.set("median_ci95_lo", num(s.median_ci95[0]));
    cells.set("median_ci95_hi", num(s.median_ci95[1]));
    cells.set("mean", num(s.mean));
    cells.set("mean_ci95_lo", num(s.mean_ci95[0]));
    cells.set("mean_ci95_hi", num(s.mean_ci95[1]));
    cells.set("min", num(s.min));
    cells.set("p1", num(s.p1));
    cells.set("p5", num(s.p5));
    cells.set("p95", num(s.p95));
    cells.set("p99", num(s.p99));
    cells.set("max", num(s.max));
    cells.set("stddev", num(s.stddev));
    cells.set("mad", num(s.mad));
    if let Some(st) = &s.structure {
        cells.set("dropped", st.dropped.to_string());
    }
}

/// One line under construction: the fixed columns by name.
struct Cells(Vec<String>);

impl Cells {
    fn new() -> Cells {
        Cells(vec![String::new(); COLUMNS.len()])
    }

    fn set(&mut self, column: &str, value: String) {
        if let Some(i) = COLUMNS.iter().position(|c| *c == column) {
            self.0[i] = value;
        }
    }

    /// The fixed cells followed by the parameter cells.
    fn finish(self, row_params: &Params, params: &[(String, String)]) -> Vec<String> {
        let mut out = self.0;
        out.extend(params.iter().map(|(key, _)| row_params.get(key).map(param).unwrap_or_default()));
        out
    }
}

/// A parameter's value written plainly.
pub fn param(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// A figure with every digit.
fn num(v: f64) -> String {
    v.to_string()
}

/// The result file's own name of an enum value (its serde name), e.g. `not_validated`.
pub fn name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
