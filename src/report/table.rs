//! The readable table of a run, with the footnotes that explain flags, skips and checks.

use super::{fmt_count, fmt_ns};
use crate::model::{Row, RunFile, Status, Verdict};
use comfy_table::CellAlignment;
use std::fmt::Write;

/// Parameters in a compact form: `[placement=same peer=thread]`.
pub fn fmt_params(row: &Row) -> String {
    if row.params.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = row
        .params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    format!(" [{}]", parts.join(" "))
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
    let _ = writeln!(
        s,
        "timer: {:?} at {:.1} MHz ({}); overhead {:.1} ns subtracted per sample; resolution {:.2} ns{}",
        t.kind,
        t.freq_hz / 1e6,
        t.freq_source,
        t.overhead_ns,
        t.resolution_ns,
        t.fallback_reason.as_ref().map(|r| format!("; counter not used: {r}")).unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "pinned to CPU {} ({}); method {:?}, budget {} s per benchmark, CI target ±{} %{}",
        run.placement.cpu,
        run.placement.chosen_by,
        run.config.method,
        run.config.budget_s,
        run.config.ci_target_rel * 100.0,
        if run.partial { "; PARTIAL (interrupted)" } else { "" }
    );
    s
}

/// The table and its footnotes.
pub fn render(run: &RunFile) -> String {
    let mut table = super::new_table();
    table.set_header(vec![
        "benchmark",
        "what it measures",
        "median",
        "95% CI of median",
        "min",
        "p99",
        "samples",
        "check",
        "flags",
    ]);
    for r in &run.results {
        let id = format!("{}{}", r.id, fmt_params(r));
        let flags: Vec<&str> = r.flags.iter().map(|f| f.label()).collect();
        let cells = match &r.summary {
            Some(s) => vec![
                id,
                r.about.clone(),
                fmt_ns(s.median_ns),
                format!("{} – {}", fmt_ns(s.median_ci95_ns[0]), fmt_ns(s.median_ci95_ns[1])),
                fmt_ns(s.min_ns),
                fmt_ns(s.p99_ns),
                format!("{} × {}", fmt_count(s.n as u64), fmt_count(r.iterations_per_sample)),
                check_label(r).into(),
                flags.join(" "),
            ],
            None => {
                let reason = r.reason.clone().unwrap_or_default();
                vec![
                    id,
                    r.about.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    check_label(r).into(),
                    reason,
                ]
            }
        };
        table.add_row(cells);
    }
    for i in 2..=6 {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = header(run);
    let _ = writeln!(out, "{table}");
    out.push_str(&footnotes(run));
    out
}

/// Explanations under the table: flags with hints, failed and impossible checks, notes.
pub fn footnotes(run: &RunFile) -> String {
    let mut s = String::new();
    let mut seen_flags = Vec::new();
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
            let _ = writeln!(s, "  {name}: {n}");
        }
        for f in &r.flags {
            if !seen_flags.contains(f) {
                seen_flags.push(*f);
            }
        }
    }
    for f in seen_flags {
        let _ = writeln!(s, "  flag {}: {}", f.label(), f.hint());
    }
    if s.is_empty() { s } else { format!("notes:\n{s}") }
}
