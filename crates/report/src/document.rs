//! The document model of a run for the exports that lay it out as tables of text (Markdown,
//! LaTeX): the header block, the legend, the rows by family with the cells of each line as
//! plain text, and a sweep's fit as one line. The formats only escape and arrange these.

use super::{fmt_count, fmt_ns, fmt_size, sig4};
use model::{Flag, Method, Row, RunFile, SIZE_PARAM, Status, Summary, Tier, Unit, Verdict};
use std::fmt::Write;

/// Which columns hold figures (right-aligned).
pub(crate) const NUMERIC: [bool; 10] = [false, false, true, true, true, true, true, false, false, false];

/// The column headings; the seed method's headline is the mean.
pub(crate) fn headings(seed: bool) -> [&'static str; 10] {
    if seed {
        ["benchmark", "parameters", "mean", "95 % CI of mean", "median", "p99", "samples", "check", "flags", "note"]
    } else {
        ["benchmark", "parameters", "median", "95 % CI", "min", "p99", "samples", "check", "flags", "note"]
    }
}

/// The header block: (label, text) pairs, plain text.
pub(crate) fn header(run: &RunFile) -> Vec<(&'static str, String)> {
    let m = &run.machine;
    let mut machine = m.cpu.model_name.clone();
    if let Some(n) = m.cpu.logical_cpus {
        let _ = write!(machine, ", {n} logical CPUs");
    }
    let _ = write!(machine, ", {}", m.arch);
    machine.push_str(match m.virtualization.virtualized {
        Some(true) => ", virtualised",
        Some(false) => ", bare metal",
        None => "",
    });
    if m.virtualization.virtualized == Some(true) {
        let _ = write!(machine, " ({})", m.virtualization.hypervisor_vendor);
    }
    let c = &run.config;
    let t = &run.timer;
    let mut header = vec![
        (
            "osprim",
            format!(
                "{} (commit {}, {} build, {})",
                run.osprim.version, run.osprim.commit, run.osprim.profile, run.osprim.rustc
            ),
        ),
        ("machine", machine),
        ("kernel", format!("Linux {}", m.kernel.release)),
        (
            "date",
            match &run.finished_utc {
                Some(end) => format!("{} to {end}", run.started_utc),
                None => format!("{} (not finished)", run.started_utc),
            },
        ),
        (
            "method",
            match c.method {
                Method::Seed => format!(
                    "seed, {} rounds of single operations, their mean with its 95 % CI; timer {} at {} MHz, overhead {} subtracted per sample",
                    c.rounds,
                    super::csv::name(&t.kind),
                    super::short_number(t.freq_hz / 1e6),
                    fmt_ns(t.overhead_mean_ns.unwrap_or(t.overhead_ns)),
                ),
                Method::Adaptive => format!(
                    "{}, {} rounds, budget {} s per benchmark, CI target ±{} % of the median; timer {} at {} MHz, overhead {} subtracted per sample",
                    super::csv::name(&c.method),
                    c.rounds,
                    super::short_number(c.budget_s),
                    super::short_number(c.ci_target_rel * 100.0),
                    super::csv::name(&t.kind),
                    super::short_number(t.freq_hz / 1e6),
                    fmt_ns(t.overhead_ns),
                ),
            },
        ),
    ];
    if run.partial {
        header.push(("partial run", "not every benchmark ran (interrupted, or still running)".into()));
    }
    header
}

/// What the figures are and what the flags say, one paragraph.
pub(crate) fn legend(run: &RunFile) -> String {
    let seed = run.config.method == Method::Seed;
    let figures = if seed {
        "Method seed: each sample is one operation, as in the papers; the mean is the figure, its 95 % CI is the \
         mean's (it respects rounds and time order), and the median and p99 are of the same single operations."
    } else {
        "The median is the headline; its 95 % CI respects rounds and time order; min and p99 are of samples, each \
         the mean of a batch of operations; samples counts them."
    };
    let untrustworthy: Vec<&str> =
        Flag::ALL.iter().filter(|f| f.tier() == Tier::Untrustworthy).map(|f| f.label()).collect();
    format!(
        "Figures are per operation (per object for rows in bytes), 4 significant digits. {figures} Flags {} make a \
         figure untrustworthy; the others are advisory (docs/results.md).",
        untrustworthy.join(", ")
    )
}

/// One family's rows, in the run's order, and its sweeps' fitted rows apart.
pub(crate) struct Family<'a> {
    /// The first segment of the ids.
    pub name: String,
    /// The rows of the table.
    pub rows: Vec<&'a Row>,
    /// The fitted rows, shown under the table.
    pub fits: Vec<&'a Row>,
}

/// The family of an id: its first segment.
pub(crate) fn family_of(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// The run's rows by family, in the order the families first appear.
pub(crate) fn families(run: &RunFile) -> Vec<Family<'_>> {
    let mut out: Vec<Family> = Vec::new();
    for r in &run.results {
        let name = family_of(&r.id);
        let i = match out.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                out.push(Family { name: name.to_string(), rows: Vec::new(), fits: Vec::new() });
                out.len() - 1
            }
        };
        if r.fit.is_some() { out[i].fits.push(r) } else { out[i].rows.push(r) }
    }
    out
}

/// One table line as plain text, before a format's escaping.
pub(crate) struct Line {
    /// The row's id.
    pub id: String,
    /// The stage's name, on a stage's line.
    pub stage: Option<String>,
    /// `k=v, k=v`.
    pub params: String,
    /// Median (mean under the seed method).
    pub point: String,
    /// Its 95 % CI, `[lo, hi] unit`.
    pub ci: String,
    /// Min (median under the seed method).
    pub third: String,
    /// 99th percentile of samples.
    pub p99: String,
    /// Samples.
    pub samples: String,
    /// Verdict, or skipped/failed.
    pub check: String,
    /// Flags, comma separated.
    pub flags: String,
    /// Why skipped or failed; a derived row's formula.
    pub note: String,
}

impl Line {
    /// The cells after the id, in the order of [`headings`].
    pub fn cells(&self) -> [&str; 9] {
        [
            &self.params,
            &self.point,
            &self.ci,
            &self.third,
            &self.p99,
            &self.samples,
            &self.check,
            &self.flags,
            &self.note,
        ]
    }
}

/// The check column: the verdict of a measured row, or why there is no measurement.
pub(crate) fn check_label(r: &Row) -> &'static str {
    match (r.status, r.validation.verdict) {
        (Status::Skipped, _) => "skipped",
        (Status::Failed, _) => "error",
        (Status::Interrupted, _) => "interrupted",
        (_, Verdict::Validated) => "validated",
        (_, Verdict::Failed) => "check-failed",
        (_, Verdict::NotValidated) => "not validated",
    }
}

/// Parameters as `k=v, k=v`.
pub(crate) fn params_text(p: &model::Params) -> String {
    p.iter().map(|(k, v)| format!("{k}={}", super::csv::param(v))).collect::<Vec<_>>().join(", ")
}

/// The lines of one row: the row, and with `detail` one per stage of its breakdown.
pub(crate) fn lines(r: &Row, seed: bool, detail: bool) -> Vec<Line> {
    let dash = || "-".to_string();
    let check = check_label(r).to_string();
    let mut note = r.reason.clone().unwrap_or_default();
    if let Some(d) = &r.derived {
        if !note.is_empty() {
            note.push_str("; ");
        }
        let _ = write!(note, "derived: {}", d.formula);
    }
    let mut line = Line {
        id: r.id.clone(),
        stage: None,
        params: params_text(&r.params),
        point: dash(),
        ci: dash(),
        third: dash(),
        p99: dash(),
        samples: dash(),
        check,
        flags: r.flags.iter().map(super::csv::name).collect::<Vec<_>>().join(", "),
        note,
    };
    if let Some(s) = &r.summary {
        figures(&mut line, s, r.unit, seed);
    } else if let Some(d) = &r.derived {
        line.point = r.unit.format(d.estimate.point);
        line.ci = ci_text(r.unit, d.estimate.point, d.estimate.ci95);
    }
    let mut out = vec![line];
    if detail {
        for stage in r.breakdown.iter().flatten() {
            let mut line = Line {
                id: r.id.clone(),
                stage: Some(stage.name.clone()),
                params: String::new(),
                point: dash(),
                ci: dash(),
                third: dash(),
                p99: dash(),
                samples: dash(),
                check: String::new(),
                flags: String::new(),
                note: String::new(),
            };
            figures(&mut line, &stage.summary, r.unit, seed);
            out.push(line);
        }
    }
    out
}

/// The figures of a summary into a line.
fn figures(line: &mut Line, s: &Summary, unit: Unit, seed: bool) {
    let (point, ci, third) = if seed { (s.mean, s.mean_ci95, s.median) } else { (s.median, s.median_ci95, s.min) };
    line.point = unit.format(point);
    line.ci = ci_text(unit, point, ci);
    line.third = unit.format(third);
    line.p99 = unit.format(s.p99);
    line.samples = fmt_count(s.n as u64);
}

/// The scale a figure near `reference` is written in, as [`Unit::format`] chooses it: the
/// divisor and the symbol.
pub(crate) fn scale(unit: Unit, reference: f64) -> (f64, &'static str) {
    let a = if reference.is_finite() { reference.abs() } else { 0.0 };
    match unit {
        Unit::Ns if a < 1e3 => (1.0, "ns"),
        Unit::Ns if a < 1e6 => (1e3, "µs"),
        Unit::Ns if a < 1e9 => (1e6, "ms"),
        Unit::Ns => (1e9, "s"),
        Unit::Bytes if a < 1024.0 => (1.0, "B"),
        Unit::Bytes if a < 1024.0 * 1024.0 => (1024.0, "KiB"),
        Unit::Bytes => (1024.0 * 1024.0, "MiB"),
        Unit::Count => (1.0, ""),
    }
}

/// An interval in the scale of `reference`: `[214.5, 216.9] ns`.
pub(crate) fn ci_text(unit: Unit, reference: f64, [lo, hi]: [f64; 2]) -> String {
    let (div, symbol) = scale(unit, reference);
    let v = |x: f64| if x.is_finite() { sig4(x / div) } else { "-".into() };
    let text = format!("[{}, {}] {symbol}", v(lo), v(hi));
    text.trim_end().to_string()
}

/// A sweep's fit as one line of plain text.
pub(crate) struct FitLine {
    /// The row's id.
    pub id: String,
    /// Its parameters but the size, and the sizes fitted.
    pub params: String,
    /// Fixed cost + cost per KiB with their CIs, R², model, check and flags.
    pub text: String,
}

/// The fit of a fitted row, if it has one.
pub(crate) fn fit_line(r: &Row) -> Option<FitLine> {
    let f = r.fit.as_ref()?;
    let mut params = r.params.clone();
    params.remove(SIZE_PARAM);
    params.remove("sizes");
    let mut params = params_text(&params);
    let sizes: Vec<String> = f.points.iter().map(|p| fmt_size(p.size_bytes)).collect();
    if !sizes.is_empty() {
        if !params.is_empty() {
            params.push_str("; ");
        }
        let _ = write!(params, "sizes {}", sizes.join(", "));
    }
    let ((fixed, fixed_ci), (per_byte, per_byte_ci)) = (f.fixed_ns(), f.per_byte_ns());
    let kib = |x: f64| x * 1024.0;
    let per_kib = kib(per_byte);
    let mut text = format!(
        "fixed {} (95 % CI {}) + {}/KiB (95 % CI {}/KiB)",
        fmt_ns(fixed),
        ci_text(Unit::Ns, fixed, fixed_ci),
        fmt_ns(per_kib),
        ci_text(Unit::Ns, per_kib, [kib(per_byte_ci[0]), kib(per_byte_ci[1])]),
    );
    match f.chosen_segments() {
        Some(s) => {
            let _ = write!(
                text,
                " above {} ({}/KiB up to it); two segments, R² of one line {:.4}",
                fmt_size(s.breakpoint_bytes),
                fmt_ns(kib(s.small_slope_ns_per_byte)),
                f.line.r_squared
            );
        }
        None => {
            let _ = write!(text, ", one line, R² {:.4}", f.line.r_squared);
        }
    }
    let _ = write!(text, " ({}); check: {}", f.method, check_label(r));
    if !r.flags.is_empty() {
        let _ = write!(text, "; flags {}", r.flags.iter().map(super::csv::name).collect::<Vec<_>>().join(", "));
    }
    Some(FitLine { id: r.id.clone(), params, text })
}
