//! The CSV writer: every document as CSV with a header line. A seed view's rows have one
//! column per field of [`super::seeds::SeedRow`]; a comparison the columns of
//! [`super::compare::CSV_COLUMNS`].
//!
//! # A run
//!
//! One line per result row, and one more line per stage of a row's breakdown.
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
//! - A run measured with `--counters` has 15 more columns after the parameters: per event
//!   (`cycles`, `instructions`, `llc_misses`, `dtlb_misses`, `branch_misses`) `counter_<event>`,
//!   its mean count per operation, and `counter_<event>_ci95_lo`/`_hi`; empty where the row has
//!   no such count (the JSON says why) and on stage lines. Without `--counters` they are absent.
//! - A run with a cold-cache row (`cache=cold`, measured beside its hot twin) has 6 more
//!   columns at the end: `cold_hot_ratio` (cold median over the hot twins' median),
//!   `cold_hot_ci95_lo`/`_hi` (its interval), `cold_hot_hot_median_ns`, `cold_hot_pairs` and
//!   `cold_hot_lower_bound` (`true` when the hot twins were below one timer step, so the ratio
//!   and its interval are lower bounds); empty on other rows and on stage lines. A run with no
//!   cold row has none of them.

use super::View;
use super::compare::{self, CSV_COLUMNS, Named};
use super::listing::{self, Entry};
use super::seeds;
use super::write::{Writer, Written};
use analysis::history::Point;
use analysis::history::changes::Report;
use model::crosscheck::{Crosscheck, Outcome};
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

/// The CSV writer.
pub struct Csv;

impl Writer for Csv {
    fn run(&self, run: &RunFile, _: &View) -> Written {
        if run.stability.is_empty() {
            return Ok(render(run));
        }
        // A stability run: one record per fact (its own columns; a run has no results then).
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(["test", "seed", "what", "name", "value"]);
        for s in &run.stability {
            for r in super::stability::csv_records(s) {
                let _ = w.write_record(r);
            }
        }
        Ok(String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default())
    }

    fn papers(&self, run: &RunFile, _: &View) -> Written {
        Ok(papers(run))
    }

    fn comparison(&self, all: &[Named], _: &View) -> Written {
        Ok(comparison(all))
    }

    fn history(&self, points: &[Point], _: &View) -> Written {
        Ok(history(points))
    }

    fn changes(&self, report: &Report, _: &View) -> Written {
        Ok(changes(report))
    }

    fn crosscheck(&self, c: &Crosscheck, _: &View) -> Written {
        Ok(crosscheck(c))
    }

    fn catalogue(&self, entries: &[Entry], _: &View) -> Written {
        let header = listing::HEADER.map(|h| h.replace(' ', "_"));
        Ok(records(&header, entries.iter().map(listing::cells)))
    }

    fn machine(&self, fields: &[(String, String)]) -> String {
        records(&["field", "value"], fields.iter().map(|(k, v)| [k.clone(), v.clone()]))
    }
}

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
    let counted = counter_columns(run);
    let cold = run.results.iter().any(|r| r.cold_hot.is_some());
    let header: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .chain(params.iter().map(|(_, c)| c.as_str()))
        .chain(counted.iter().map(String::as_str))
        .chain((if cold { COLD_HOT_COLUMNS.as_slice() } else { &[] }).iter().copied())
        .collect();
    w.write_record(&header)?;
    for (i, r) in run.results.iter().enumerate() {
        let mut line = row_line(run, i, r, &params);
        line.extend(counter_cells(r.counters.as_ref(), !counted.is_empty()));
        line.extend(cold_hot_cells(r.cold_hot.as_ref(), cold));
        w.write_record(line)?;
        for stage in r.breakdown.iter().flatten() {
            let mut line = stage_line(run, i, r, &stage.name, &stage.summary, &params);
            line.extend(counter_cells(None, !counted.is_empty()));
            line.extend(cold_hot_cells(None, cold));
            w.write_record(line)?;
        }
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The counter columns, after the parameters, only in a run that asked for counters
/// (`--counters`): per event of [`model::counters::EVENT_NAMES`], `counter_<event>` (mean per
/// operation) and its 95 % interval `counter_<event>_ci95_lo`/`_hi`; empty where a row has
/// no such count (its JSON says why).
fn counter_columns(run: &RunFile) -> Vec<String> {
    if run.counters.is_none() {
        return Vec::new();
    }
    model::counters::EVENT_NAMES
        .iter()
        .flat_map(|e| [format!("counter_{e}"), format!("counter_{e}_ci95_lo"), format!("counter_{e}_ci95_hi")])
        .collect()
}

/// A row's cells (`c`, its counters; `None` on a stage line) under [`counter_columns`] (none when the run has no such columns).
fn counter_cells(c: Option<&model::counters::Counters>, present: bool) -> Vec<String> {
    if !present {
        return Vec::new();
    }
    model::counters::EVENT_NAMES
        .iter()
        .flat_map(|e| match c.and_then(|c| c.event(e)) {
            Some(x) => [num(x.per_op), num(x.ci95[0]), num(x.ci95[1])],
            None => [String::new(), String::new(), String::new()],
        })
        .collect()
}

/// The cold/hot columns, last, only in a run with a cold-cache row.
pub const COLD_HOT_COLUMNS: [&str; 6] = [
    "cold_hot_ratio",
    "cold_hot_ci95_lo",
    "cold_hot_ci95_hi",
    "cold_hot_hot_median_ns",
    "cold_hot_pairs",
    "cold_hot_lower_bound",
];

/// A row's cells (`c`, its ratio to its hot twin; `None` on a stage line or a row without one)
/// under [`COLD_HOT_COLUMNS`] (none when the run has no such columns).
fn cold_hot_cells(c: Option<&model::ColdHot>, present: bool) -> Vec<String> {
    match (present, c) {
        (false, _) => Vec::new(),
        (true, None) => vec![String::new(); COLD_HOT_COLUMNS.len()],
        (true, Some(c)) => vec![
            num(c.ratio),
            num(c.ci[0]),
            num(c.ci[1]),
            num(c.hot_median_ns),
            c.pairs.to_string(),
            c.hot_below_step.to_string(),
        ],
    }
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

/// The seed rows as CSV: a header, then one line per row, one column per field of [`SeedRow`].
pub fn papers(run: &RunFile) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in seeds::rows(run) {
        if w.serialize(&r).is_err() {
            break;
        }
    }
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

/// One line per compared result, every comparison after another.
fn comparison(all: &[Named]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(CSV_COLUMNS);
    let code = |v: serde_json::Value| v.as_str().map(String::from).unwrap_or_default();
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for n in all {
        for r in &n.comparison.compared {
            let params = serde_json::to_string(&r.params).unwrap_or_default();
            let differs: Vec<String> =
                r.param_differences.iter().map(|d| format!("{}:{}→{}", d.what, d.base, d.new)).collect();
            let _ = w.write_record([
                n.base_name.clone(),
                n.new_name.clone(),
                r.id.clone(),
                params,
                r.unit.symbol().to_string(),
                code(serde_json::to_value(r.statistic).unwrap_or_default()),
                r.base_value.to_string(),
                r.new_value.to_string(),
                num(r.ratio),
                num(r.ratio_ci95.map(|c| c[0])),
                num(r.ratio_ci95.map(|c| c[1])),
                num(r.below_resolution),
                code(serde_json::to_value(r.verdict).unwrap_or_default()),
                r.no_ratio.map(|w| code(serde_json::to_value(w).unwrap_or_default())).unwrap_or_default(),
                compare::marks_code(r),
                differs.join(";"),
                match (r.no_ratio, r.within_machine_movement) {
                    (Some(w), _) => w.why().to_string(),
                    (None, true) => compare::WITHIN_MOVEMENT.to_string(),
                    (None, false) => String::new(),
                },
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// One line per recorded result.
fn history(points: &[Point]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "started_utc",
        "host",
        "kernel",
        "cpu_model",
        "commit",
        "id",
        "params",
        "unit",
        "status",
        "median",
        "ci95_low",
        "ci95_high",
        "mean",
        "n",
        "cold_hot",
        "cold_hot_ci95_low",
        "cold_hot_ci95_high",
        "counts_per_op",
    ]);
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for p in points {
        let counts: Vec<String> = p.counts.iter().map(|(event, per_op)| format!("{event}={per_op}")).collect();
        let _ = w.write_record([
            p.started_utc.clone(),
            p.host.clone(),
            p.kernel.clone(),
            p.cpu_model.clone(),
            p.commit.clone(),
            p.id.clone(),
            p.params.clone(),
            p.unit.clone(),
            p.status.clone(),
            num(p.median),
            num(p.ci95.map(|c| c[0])),
            num(p.ci95.map(|c| c[1])),
            num(p.mean),
            p.n.map(|n| n.to_string()).unwrap_or_default(),
            num(p.cold_hot.as_ref().map(|c| c.point)),
            num(p.cold_hot.as_ref().map(|c| c.ci95[0])),
            num(p.cold_hot.as_ref().map(|c| c.ci95[1])),
            counts.join(";"),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// One line per change point: the series, the two runs, the two levels, the magnitude.
fn changes(report: &Report) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "id",
        "params",
        "unit",
        "method",
        "host",
        "cpu_model",
        "series_runs",
        "last_before_utc",
        "last_before_run_key",
        "last_before_file",
        "first_after_utc",
        "first_after_run_key",
        "first_after_file",
        "before_median",
        "before_ci95_low",
        "before_ci95_high",
        "before_runs",
        "after_median",
        "after_ci95_low",
        "after_ci95_high",
        "after_runs",
        "difference",
        "difference_ci95_low",
        "difference_ci95_high",
        "ratio",
        "ratio_ci95_low",
        "ratio_ci95_high",
        "p_value",
        "also_changed",
    ]);
    let num = |v: f64| v.to_string();
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for s in &report.series {
        for c in &s.changes {
            let (b, a, d) = (&c.before.estimate, &c.after.estimate, &c.difference);
            let _ = w.write_record([
                s.id.clone(),
                s.params.clone(),
                s.unit.clone(),
                s.method.clone(),
                s.host.clone(),
                s.cpu_model.clone(),
                s.runs.to_string(),
                c.last_before.started_utc.clone(),
                c.last_before.run_key.clone(),
                c.last_before.file.clone().unwrap_or_default(),
                c.first_after.started_utc.clone(),
                c.first_after.run_key.clone(),
                c.first_after.file.clone().unwrap_or_default(),
                num(b.estimate),
                num(b.ci95[0]),
                num(b.ci95[1]),
                c.before.runs.to_string(),
                num(a.estimate),
                num(a.ci95[0]),
                num(a.ci95[1]),
                c.after.runs.to_string(),
                num(d.estimate),
                num(d.ci95[0]),
                num(d.ci95[1]),
                opt(c.ratio.map(|r| r.estimate)),
                opt(c.ratio.map(|r| r.ci95[0])),
                opt(c.ratio.map(|r| r.ci95[1])),
                num(c.p_value),
                c.also_changed.join("; "),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// One line per primitive.
fn crosscheck(c: &Crosscheck) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "primitive",
        "statistic",
        "unit",
        "peer_before",
        "osprim",
        "peer_after",
        "ratio",
        "ratio_ci95_lo",
        "ratio_ci95_hi",
        "agreement",
        "ratio_flagged",
        "peer_disagrees",
        "not_compared",
        "peer",
        "osprim_result",
        "cpu",
    ]);
    for r in &c.rows {
        let figures = match &r.outcome {
            Outcome::Compared(m) => vec![
                m.peer_before_ns.to_string(),
                m.osprim_ns.to_string(),
                m.peer_after_ns.to_string(),
                m.ratio.to_string(),
                m.ratio_ci95.map(|c| c[0].to_string()).unwrap_or_default(),
                m.ratio_ci95.map(|c| c[1].to_string()).unwrap_or_default(),
                serde_json::to_value(m.agreement).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                m.ratio_flagged.to_string(),
                m.peer_disagrees.to_string(),
                String::new(),
            ],
            Outcome::NotCompared { reason } => {
                let mut v = vec![String::new(); 9];
                v.push(reason.clone());
                v
            }
        };
        let mut rec = vec![r.primitive.clone(), r.statistic.name().into(), "ns".into()];
        rec.extend(figures);
        rec.extend([r.peer.clone(), r.osprim.clone(), c.cpu.to_string()]);
        let _ = w.write_record(rec);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// A header line and the records under it.
fn records<const N: usize, H: AsRef<[u8]>>(header: &[H; N], rows: impl Iterator<Item = [String; N]>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
}

#[cfg(test)]
mod counter_tests {
    use super::*;
    use model::counters::{Availability, CounterSummary, Counters};

    #[test]
    fn counter_columns_come_only_with_counters_after_the_parameters() {
        let mut run = model::fixtures::run_file(false);
        let plain = render(&run);
        assert!(!plain.lines().next().unwrap_or_default().contains("counter_"), "not asked for: no column");
        run.counters = Some(Availability { counted: vec!["cycles".into()], missing: Vec::new() });
        let i = run.results.iter().position(|r| r.summary.is_some()).expect("a measured row");
        let cycles = CounterSummary { event: "cycles".into(), per_op: 312.5, ci95: [310.0, 315.0], samples: 30 };
        run.results[i].counters = Some(Counters { events: vec![cycles], ..Counters::default() });
        let text = render(&run);
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        let header = reader.headers().expect("a header").clone();
        assert_eq!(header.len(), plain.lines().next().unwrap_or_default().split(',').count() + 15);
        let at = |name: &str| header.iter().position(|h| h == name).expect(name);
        assert_eq!(at("counter_cycles"), header.len() - 15);
        let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("a record")).collect();
        let line = rows.iter().find(|l| l[0] == i.to_string() && l[2].is_empty()).expect("the row's line");
        assert_eq!((&line[at("counter_cycles")], &line[at("counter_cycles_ci95_hi")]), ("312.5", "315"));
        assert_eq!(&line[at("counter_instructions")], "");
        assert!(!header.iter().any(|h| h.starts_with("cold_hot")), "no cold row: no cold/hot column");
    }

    #[test]
    fn cold_hot_columns_come_only_with_a_cold_row_and_last() {
        let mut run = model::fixtures::run_file(false);
        let plain = render(&run);
        assert!(!plain.contains("cold_hot"), "a hot run keeps its columns");
        let i = run.results.iter().position(|r| r.summary.is_some()).expect("a measured row");
        model::fixtures::make_cold(&mut run.results[i], 3.25, [2.9, 3.6], 41.5);
        let text = render(&run);
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        let header = reader.headers().expect("a header").clone();
        let n = header.len();
        assert_eq!(header.iter().skip(n - 6).collect::<Vec<_>>(), COLD_HOT_COLUMNS);
        let at = |name: &str| header.iter().position(|h| h == name).expect(name);
        let rows: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("a record")).collect();
        assert!(rows.iter().all(|l| l.len() == n), "every line as wide as the header");
        let line = rows.iter().find(|l| l[0] == i.to_string() && l[2].is_empty()).expect("the row's line");
        let cells: Vec<&str> = (n - 6..n).map(|k| &line[k]).collect();
        assert_eq!(cells, ["3.25", "2.9", "3.6", "41.5", "400", "false"]);
        assert_eq!(&line[at("cache")], "cold");
        for other in rows.iter().filter(|l| l[0] != i.to_string() || !l[2].is_empty()) {
            assert!((n - 6..n).all(|k| other[k].is_empty()), "only the cold row's own line: {other:?}");
        }
    }
}
