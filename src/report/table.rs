//! The readable table of a run, with the footnotes that explain flags, skips and checks.

use super::{fmt_count, fmt_ns, fmt_size};
use crate::model::{Method, Params, Row, RunFile, SIZE_PARAM, Status, Summary, Unit, Verdict};
use comfy_table::CellAlignment;
use std::fmt::Write;

/// Parameters the table leaves to the notes and the result file, to stay narrow.
const NOT_IN_TABLE: [&str; 8] = ["sizes", "cpus", "device", "segment_bytes", "tmpfs", "uffd_flags", "objects", "fs"];

/// Parameters in a compact form: `[placement=same peer=thread]`.
pub fn fmt_params(row: &Row) -> String {
    fmt_params_of(&row.params)
}

/// Parameters in a compact form: `[placement=same peer=thread]`.
pub fn fmt_params_of(params: &Params) -> String {
    if params.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = params
        .iter()
        .filter(|(k, _)| !NOT_IN_TABLE.contains(&k.as_str()))
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    if parts.is_empty() { String::new() } else { format!(" [{}]", parts.join(" ")) }
}

fn check_label(row: &Row) -> &'static str {
    match row.status {
        Status::Skipped => "skipped",
        Status::Failed => "failed",
        _ => match row.validation.verdict {
            Verdict::Validated => "validated",
            Verdict::Failed => "CHECK FAILED",
            Verdict::NotValidated => "not validated",
        },
    }
}

/// The header lines: machine, timer, placement.
pub fn header(run: &RunFile) -> String {
    let m = &run.machine;
    let t = &run.timer;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "osprim {} — {} ({} logical CPUs), Linux {}, {}",
        run.osprim.version,
        m.cpu.model_name,
        m.cpu.logical_cpus.map(|n| n.to_string()).unwrap_or_else(|| "?".into()),
        m.kernel.release,
        if m.virtualization.virtualized == Some(true) {
            format!("virtualised ({})", m.virtualization.hypervisor_vendor)
        } else {
            "bare metal or unknown".into()
        }
    );
    let overhead_ns = match (run.config.method, t.overhead_mean_ns) {
        (Method::Seed, Some(mean)) => mean,
        _ => t.overhead_ns,
    };
    let _ = writeln!(
        s,
        "timer: {:?} at {:.1} MHz ({}); overhead {:.1} ns ({}) subtracted per sample; resolution {:.2} ns{}{}",
        t.kind,
        t.freq_hz / 1e6,
        t.freq_source,
        overhead_ns,
        if run.config.method == Method::Seed { "mean" } else { "median" },
        t.resolution_ns,
        t.read_cost_ns.map(|r| format!(" (counter step; a read costs {r:.1} ns)")).unwrap_or_default(),
        t.fallback_reason.as_ref().map(|r| format!("; counter not used: {r}")).unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "pinned to CPU {} ({}); method {:?}, budget {} s per benchmark in {} rounds, CI target ±{} %{}",
        run.placement.cpu,
        run.placement.chosen_by,
        run.config.method,
        run.config.budget_s,
        run.config.rounds,
        run.config.ci_target_rel * 100.0,
        if run.partial { "; PARTIAL (interrupted)" } else { "" }
    );
    s
}

/// The table and its footnotes.
pub fn render(run: &RunFile, _view: &super::View) -> String {
    let mut table = super::new_table();
    // The papers' statistic is the mean: the seed method shows it first, the median beside.
    let seed = run.config.method == Method::Seed;
    table.set_header(if seed {
        vec!["benchmark", "what it measures", "mean", "95% CI of mean", "median", "p99", "samples", "check", "flags"]
    } else {
        vec!["benchmark", "what it measures", "median", "95% CI of median", "min", "p99", "samples", "check", "flags"]
    });
    let fitted = fitted_groups(run);
    for r in &run.results {
        if is_fitted_point(r, &fitted) {
            continue;
        }
        table.add_row(cells(r, seed));
        for stage in r.breakdown.iter().flatten() {
            table.add_row(stage_cells(r, stage, seed));
        }
        if let Some(t) = &r.tail {
            table.add_row(tail_cells(r, t));
        }
    }
    for i in 2..=6 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = super::wrap(&header(run));
    let _ = writeln!(out, "{table}");
    out.push_str(&super::wrap(&footnotes(run)));
    out
}

/// The cells of one row: a measurement, a fitted line, a difference, or why there is nothing.
fn cells(r: &Row, seed: bool) -> Vec<String> {
    let id = format!("{}{}", r.id, fmt_params(r));
    let flags: Vec<&str> = r.flags.iter().map(|f| f.label()).collect();
    let dash = || "-".to_string();
    let (median, ci, min, p99, samples) = if let Some(fit) = &r.fit {
        let per_kib = |ns_per_byte: f64| format!("{}/KiB", fmt_ns(ns_per_byte * 1024.0));
        let ((fixed, fixed_ci), (per_byte, per_byte_ci)) = (fit.fixed_ns(), fit.per_byte_ns());
        let (median, p99) = match fit.chosen_segments() {
            None => (format!("{} + {}", fmt_ns(fixed), per_kib(per_byte)), format!("R² {:.3}", fit.line.r_squared)),
            Some(s) => {
                let at = fmt_size(s.breakpoint_bytes);
                (
                    format!("{}; {} >{at}", fmt_ns(fixed), per_kib(per_byte)),
                    format!("{} ≤{at}", per_kib(s.small_slope_ns_per_byte)),
                )
            }
        };
        (
            median,
            format!("fixed {} – {}", fmt_ns(fixed_ci[0]), fmt_ns(fixed_ci[1])),
            if per_byte_ci[0] > 0.0 { format!("{:.2} GB/s", 1.0 / per_byte) } else { dash() },
            p99,
            format!("{} sizes", fit.points.len()),
        )
    } else if let Some(d) = &r.derived {
        let (e, v) = (&d.estimate, |x| r.unit.format(x));
        (v(e.point), format!("{} – {}", v(e.ci95[0]), v(e.ci95[1])), dash(), dash(), d.formula.clone())
    } else if let Some(s) = &r.summary {
        let [point, ci, third] = location(s, seed, r.unit);
        (
            point,
            ci,
            third,
            r.unit.format(s.p99),
            format!("{} × {}", fmt_count(s.n as u64), fmt_count(r.iterations_per_sample)),
        )
    } else {
        let reason = r.reason.clone().unwrap_or_default();
        return vec![id, r.about.clone(), dash(), dash(), dash(), dash(), dash(), check_label(r).into(), reason];
    };
    vec![id, r.about.clone(), median, ci, min, p99, samples, check_label(r).into(), flags.join(" ")]
}

/// One stage of a row's breakdown (e.g. a fault's trap), indented under the row.
fn stage_cells(r: &Row, stage: &crate::model::Stage, seed: bool) -> Vec<String> {
    let s = &stage.summary;
    let [point, ci, third] = location(s, seed, r.unit);
    vec![
        format!("  └ {}", stage.name),
        String::new(),
        point,
        ci,
        third,
        r.unit.format(s.p99),
        String::new(),
        String::new(),
        String::new(),
    ]
}

/// The estimate, its interval and the third figure: median, its CI and the minimum; or, for
/// the seed method, the papers' mean, its CI and the median.
fn location(s: &Summary, seed: bool, unit: Unit) -> [String; 3] {
    let v = |x| unit.format(x);
    if seed {
        [v(s.mean), format!("{} – {}", v(s.mean_ci95[0]), v(s.mean_ci95[1])), v(s.median)]
    } else {
        [v(s.median), format!("{} – {}", v(s.median_ci95[0]), v(s.median_ci95[1])), v(s.min)]
    }
}

/// Per-operation tail latency from single-operation samples (`--tail`).
fn tail_cells(r: &Row, t: &crate::model::Tail) -> Vec<String> {
    let v = |x| r.unit.format(x);
    vec![
        "  └ one operation".into(),
        format!("single operations: p99.9 {}, max {} (timer resolution {})", v(t.p999), v(t.max), v(t.resolution)),
        v(t.p50),
        String::new(),
        String::new(),
        v(t.p99),
        format!("{} × 1", fmt_count(t.n as u64)),
        String::new(),
        String::new(),
    ]
}

/// (id, parameters without the size) of every sweep that has a fitted line.
fn fitted_groups(run: &RunFile) -> Vec<(&str, Params)> {
    run.results.iter().filter(|r| r.fit.is_some()).map(|r| (r.id.as_str(), without_sweep_keys(&r.params))).collect()
}

fn without_sweep_keys(params: &Params) -> Params {
    let mut p = params.clone();
    p.remove(SIZE_PARAM);
    p.remove("sizes");
    p
}

/// Whether `r` is one point of a sweep whose fitted line the table shows instead.
fn is_fitted_point(r: &Row, fitted: &[(&str, Params)]) -> bool {
    r.fit.is_none()
        && r.params.get(SIZE_PARAM).is_some_and(|v| v.is_number())
        && fitted.iter().any(|(id, p)| *id == r.id && *p == without_sweep_keys(&r.params))
}

/// Explanations under the table: flags with hints, failed and impossible checks, notes.
pub fn footnotes(run: &RunFile) -> String {
    let mut s = String::new();
    let mut seen_flags = Vec::new();
    // (note, first row with it, rows with it): a note many rows share is printed once.
    let mut shared_notes: Vec<(String, String, usize)> = Vec::new();
    for r in &run.results {
        let name = format!("{}{}", r.id, fmt_params(r));
        for c in &r.validation.checks {
            match c.ok {
                Some(false) => {
                    let _ =
                        writeln!(s, "  {name}: check failed: {} (expected {}, saw {})", c.name, c.expected, c.observed);
                }
                None if r.validation.verdict == Verdict::NotValidated => {
                    let _ = writeln!(s, "  {name}: not validated: {}: {}", c.name, c.observed);
                }
                _ => {}
            }
        }
        if r.validation.checks.is_empty() && r.summary.is_some() {
            let _ = writeln!(s, "  {name}: not validated: the benchmark makes no check");
        }
        for n in &r.notes {
            match shared_notes.iter_mut().find(|(text, _, _)| text == n) {
                Some((_, _, count)) => *count += 1,
                None => shared_notes.push((n.clone(), name.clone(), 1)),
            }
        }
        for f in &r.flags {
            if !seen_flags.contains(f) {
                seen_flags.push(*f);
            }
        }
    }
    for (note, first, count) in shared_notes {
        match count {
            1 => writeln!(s, "  {first}: {note}"),
            n => writeln!(s, "  {first} and {} more: {note}", n - 1),
        }
        .expect("writing to a String");
    }
    for f in seen_flags {
        let _ = writeln!(s, "  flag {}: {}", f.label(), f.hint());
    }
    if run.results.iter().any(|r| r.summary.is_some()) {
        let _ = writeln!(
            s,
            "  p99 is of samples, each the mean of a batch of operations (samples column: count × batch), not of single operations: --tail adds per-operation percentiles; the 95 % CI respects rounds and time order (docs/results.md)"
        );
    }
    if !fitted_groups(run).is_empty() {
        let _ = writeln!(
            s,
            "  sweeps: fixed cost + cost per KiB, fitted over the sizes by weighted least squares (min column: the cost per byte as GB/s; p99 column: R²); where the cost per byte changes with the size, two segments: \"fixed; cost per KiB >size\" above the bend, and in the p99 column the cost per KiB up to it; the points are in the result file and in --format csv"
        );
    }
    if s.is_empty() { s } else { format!("notes:\n{s}") }
}

/// One line summarising a finished result: id, parameters, median and its CI.
pub fn row_line(row: &Row, width: usize) -> String {
    let figure = match (&row.summary, row.median()) {
        (Some(s), Some(m)) if m != 0.0 => {
            format!("{} ± {:.1} %", row.unit.format(m), (s.median_ci95[1] - s.median_ci95[0]) / 2.0 / m.abs() * 100.0)
        }
        (_, Some(m)) => row.unit.format(m),
        _ => check_label(row).to_string(),
    };
    let line = format!("{}{}  {figure}", row.id, fmt_params(row));
    line.chars().take(width).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SweepFit, SweepLine, SweepModel, SweepSegments};

    fn fit_row(segments: Option<SweepSegments>) -> Row {
        let mut r = crate::analyse::empty_row("ipc.pipe", "a pipe", Params::new(), Method::Adaptive);
        r.status = Status::Ok;
        r.fit = Some(SweepFit {
            method: "weighted least squares".into(),
            model: if segments.is_some() { SweepModel::TwoSegments } else { SweepModel::Line },
            line: SweepLine {
                intercept_ns: -12_000.0,
                intercept_ci95_ns: [-20_000.0, -4_000.0],
                slope_ns_per_byte: 0.5,
                slope_ci95_ns_per_byte: [0.45, 0.55],
                r_squared: 0.998,
                chi2: 900.0,
                dof: 5,
                reduced_chi2: 180.0,
                p_value: 0.0,
            },
            segments,
            points: Vec::new(),
        });
        r
    }

    #[test]
    fn a_fitted_line_shows_fixed_plus_per_kib() {
        let c = cells(&fit_row(None), false);
        assert_eq!(c[2], "-12.00 µs + 512.0 ns/KiB");
        assert_eq!(c[3], "fixed -20.00 µs – -4.000 µs");
        assert_eq!(c[4], "2.00 GB/s");
        assert_eq!(c[5], "R² 0.998");
    }

    #[test]
    fn two_segments_show_the_fixed_cost_and_both_slopes_with_the_breakpoint() {
        let c = cells(
            &fit_row(Some(SweepSegments {
                breakpoint_bytes: 65536,
                fixed_ns: 2_100.0,
                fixed_ci95_ns: [2_050.0, 2_150.0],
                small_slope_ns_per_byte: 0.125,
                small_slope_ci95_ns_per_byte: [0.12, 0.13],
                large_slope_ns_per_byte: 0.5,
                large_slope_ci95_ns_per_byte: [0.45, 0.55],
                chi2: 3.0,
                dof: 4,
                reduced_chi2: 0.75,
                p_value: 0.56,
                vs_line_p_value: 1e-6,
                breakpoints_tried: 5,
            })),
            false,
        );
        assert_eq!(c[2], "2.100 µs; 512.0 ns/KiB >64 KiB");
        assert_eq!(c[3], "fixed 2.050 µs – 2.150 µs");
        assert_eq!(c[4], "2.00 GB/s");
        assert_eq!(c[5], "128.0 ns/KiB ≤64 KiB");
        assert!(c[2..7].iter().all(|cell| cell.chars().count() < 40), "{c:?}");
    }
}
