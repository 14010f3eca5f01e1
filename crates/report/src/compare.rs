//! `osprim compare` for people and programs: per result the two figures, the ratio with its
//! 95 % CI (or why there is none), the verdict and the marks; then what differs between the runs;
//! then the count; and the gate's lines for stderr. Formats only: [`analysis::compare`] decides.
//!
//! Every format carries the same fields: id, parameters, unit, statistic, the two figures, the
//! ratio and its CI, the below-resolution bound, the verdict, why there is no ratio, the marks
//! and the parameters that differ.
//!
//! # Format (JSON)
//!
//! An array, one object per later file: `base`, `new` (the file names), `base_started_utc`,
//! `new_started_utc`, `base_host`, `new_host` (the hosts the runs are recorded under: `--host`,
//! else the kernel's host name), and `comparison`: `noise` (0.02 = 2 %), `method` (`fdr_bh`:
//! Benjamini–Hochberg with FCR-adjusted intervals, [`analysis::compare`]), `q` (the false
//! discovery rate held, 0.05), `family` (m, the rows tested: those with a ratio), `selected` (R,
//! the rows the rule selected), `confidence` (the selected rows' level, 1 − R·q/m; the
//! others' is 95 %), `differences` (`what`, `base`,
//! `new`), `unmatched` (`id`, `params`, `why`) and `compared`, each with `id`, `params` (as in
//! the new run, where it ran included), `unit`, `statistic` (`median`, or `mean` for the seed
//! method), `base_value`, `new_value`, `ratio` and `ratio_ci95` (`null` when there is no
//! ratio), `ci_level` (the level of `ratio_ci95`), `p_value` (for "ratio = 1", agreeing with the
//! intervals; `null` without a ratio to test), `selected` (whether the rule selected the row: only
//! a selected row is called `faster` or `slower`), `below_resolution` (the bound, or `null`), `verdict` (`faster`, `slower`,
//! `no_change`, `inconclusive`, `below_resolution`), `no_ratio` (`below_resolution`,
//! `seed_method`, `zero_width`, or `null`), `marks` (`[{"flag": "check-failed", "in":
//! "new"}]`, `in` one of `base`, `new`, `both`), `param_differences` (`what`, `base`,
//! `new`) and, only where a run flagged the row `cold-not-slower`, `cold_not_slower` (`base`,
//! `new` or `both`; advisory, never gated). A cold-cache row (`cache=cold`) is compared only
//! with a cold row: its `cache` parameter is part of what defines it, and its label says
//! `cold`. CSV has one line per compared result with the columns of [`CSV_COLUMNS`].

use super::layout::{Align, Cell, Grid, Line, Style};
use super::{View, names};
use analysis::compare::{
    Compared, Comparison, Decision, Failure, Gate, GateOutcome, NoRatio, Statistic, Undecided, Verdict, param_text,
};
use model::RunFile;

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

/// `id` and its parameters as the run table names a row.
pub(crate) fn label(id: &str, params: &model::Params) -> String {
    let p = names::row_params(params, &[]);
    if p.is_empty() { id.to_string() } else { format!("{id} {p}") }
}

/// `id` with every parameter as `key=value`, where it ran included: `lock.handoff cpus=1,0
/// placement=cross_cpu`.
pub fn full_label(id: &str, params: &model::Params) -> String {
    let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", param_text(v))).collect();
    if p.is_empty() { id.to_string() } else { format!("{id} {}", p.join(" ")) }
}

/// The ratio and its CI as printed, `—` for none.
pub(crate) fn ratio_text(c: &Compared) -> (String, String) {
    match c.ratio_interval() {
        Some(r) => (format!("{:.3}", r.estimate), format!("[{:.3}, {:.3}]", r.ci95[0], r.ci95[1])),
        None => ("—".into(), "—".into()),
    }
}

/// The verdict as printed: `slower`, `below resolution (|x| < 2.1 ns)`, `inconclusive (seed
/// method)`.
pub fn verdict_text(c: &Compared) -> String {
    let v = c.verdict.text_for(c.unit);
    match (c.no_ratio, c.below_resolution) {
        (Some(NoRatio::BelowResolution), Some(b)) => format!("{v} (|x| < {})", c.unit.format(b)),
        (Some(NoRatio::SeedMethod), _) => format!("{v} (seed method)"),
        (Some(NoRatio::ZeroWidth), _) => format!("{v} (zero-width CI)"),
        (Some(NoRatio::ReachesZero), _) => format!("{v} (CI reaches 0)"),
        _ => v.to_string(),
    }
}

/// A figure as printed: the seed method's mean says so.
pub(crate) fn value_text(c: &Compared, v: f64) -> String {
    match c.statistic {
        Statistic::Median => c.unit.format(v),
        Statistic::Mean => format!("{} (mean)", c.unit.format(v)),
    }
}

/// `check-failed (new), busy-cpu (both), cold-not-slower (new), cpus 1,0 → 0,1`.
pub fn marks_text(c: &Compared) -> String {
    let mut parts: Vec<String> = c.marks.iter().map(|m| format!("{} ({})", m.flag.label(), m.side.text())).collect();
    parts.extend(c.cold_not_slower.map(|s| format!("{} ({})", model::Flag::ColdNotSlower.label(), s.text())));
    parts.extend(c.param_differences.iter().map(|d| format!("{} {} → {}", d.what, d.base, d.new)));
    parts.join(", ")
}

/// Marks for programs: `check-failed:new;busy-cpu:both`, the advisory `cold-not-slower:new` last.
pub(crate) fn marks_code(c: &Compared) -> String {
    c.marks
        .iter()
        .map(|m| {
            let flag = serde_json::to_value(m.flag).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            format!("{flag}:{}", m.side.text())
        })
        .chain(c.cold_not_slower.map(|s| format!("cold-not-slower:{}", s.text())))
        .collect::<Vec<_>>()
        .join(";")
}

/// `, BUSY: up to 48 % of CPU 1 taken between rounds` when the run's probes found its CPU busy.
fn busy(run: &model::RunFile) -> String {
    match super::header::availability(run) {
        Some((text, true)) => format!(", {text}"),
        _ => String::new(),
    }
}

/// The lines under the table that say why some rows have no ratio and what the marks mean,
/// each once.
pub(crate) fn footnotes(c: &Comparison) -> Vec<String> {
    footnotes_with(c, true)
}

/// Why a row is inconclusive within the machine's movement (a footnote; CSV's `why`).
pub const WITHIN_MOVEMENT: &str =
    "the ratio is no farther from 1 than the machine's own reference moved between the runs: not called different";

/// [`footnotes`], with or without the machine's line (the table has it in its header).
pub(crate) fn footnotes_with(c: &Comparison, machine: bool) -> Vec<String> {
    let mut out = Vec::new();
    for why in [NoRatio::BelowResolution, NoRatio::SeedMethod, NoRatio::ZeroWidth, NoRatio::ReachesZero] {
        if c.compared.iter().any(|r| r.no_ratio == Some(why)) {
            out.push(format!("{}: {}", verdict_label(why), why.short()));
        }
    }
    if c.compared.iter().any(|r| r.within_machine_movement) {
        out.push(format!("within the machine's movement: {}", WITHIN_MOVEMENT));
    }
    if machine {
        out.push(machine_line(c));
    }
    if c.compared.iter().any(Compared::marked) {
        out.push(
            "marks: check failed, CPU busy or interrupted in that run: the figure may not be what it claims".into(),
        );
    }
    out
}

fn verdict_label(why: NoRatio) -> &'static str {
    match why {
        NoRatio::BelowResolution => "below resolution",
        NoRatio::SeedMethod => "seed method",
        NoRatio::ZeroWidth => "zero-width CI",
        NoRatio::ReachesZero => "CI reaches 0",
    }
}

/// How far the machine itself moved, in one line: `the machine moved: user loop 1.021 [0.990,
/// 1.050], null syscall 1.160 [1.120, 1.200] (new / base, references timed in each worker); no
/// row is called different within that`, or that it is unknown.
pub fn machine_line(c: &Comparison) -> String {
    if c.method == analysis::ab::JUDGED_BY {
        return "A and B measured together, in pairs: what moved the machine moved both halves of a pair".into();
    }
    let m = &c.machine;
    let kind = |name: &str, k: Option<analysis::compare::Moved>| {
        k.map(|k| format!("{name} {:.3} [{:.3}, {:.3}]", k.ratio, k.ci95[0], k.ci95[1]))
    };
    let parts: Vec<String> =
        [kind("user loop", m.user_loop), kind("null syscall", m.null_syscall)].into_iter().flatten().collect();
    if parts.is_empty() {
        "the machine's own movement is unknown (a run without reference readings: an older build)".into()
    } else {
        let within = if m.band.is_some() {
            "no row is called different within the user loop's movement"
        } else {
            "no user-loop reading: no band"
        };
        format!("the machine moved: {} (new / base, references timed in each worker); {within}", parts.join(", "))
    }
}

/// How the rows were judged together, in one line: `false discovery rate 5 % over 140 rows
/// (Benjamini–Hochberg): 7 selected, their CIs at 99.75 %; the others' at 95 %, never faster or
/// slower`.
pub fn fdr_line(c: &Comparison) -> String {
    if c.method == analysis::ab::JUDGED_BY {
        return format!(
            "each row judged by its own confidence sequence ({} % over all its looks), over {} rows",
            model::unit::short_number(100.0 * c.q),
            c.family
        );
    }
    let head = format!(
        "false discovery rate {} % over {} rows (Benjamini–Hochberg)",
        model::unit::short_number(100.0 * c.q),
        c.family
    );
    if c.selected == 0 {
        format!("{head}: none selected, every CI at 95 %, none faster or slower")
    } else {
        format!(
            "{head}: {} selected, their CIs at {} %; the others' at 95 %, never faster or slower",
            c.selected,
            model::unit::short_number(100.0 * c.confidence)
        )
    }
}

pub(crate) fn table(n: &Named, view: &View) -> String {
    let c = &n.comparison;
    let mut out = vec![
        format!("base  {} ({}, {}{})", n.base_name, n.base.started_utc, n.base.host_name(), busy(n.base)),
        format!("new   {} ({}, {}{})", n.new_name, n.new.started_utc, n.new.host_name(), busy(n.new)),
        "figures: the median of the steady-state samples, as the run's table prints it; ratio = new / base".into(),
        "CI of the ratio from resampling rounds, then blocks within a round;".into(),
        fdr_line(c),
        machine_line(c),
        format!("noise threshold ± {} %", model::unit::short_number(c.noise * 100.0)),
        String::new(),
    ];
    let head = ["benchmark", "base", "new", "ratio", "95 % CI", "verdict"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left];
    let mut grid = Grid::new(vec![head], align);
    for r in &c.compared {
        // Where there is no ratio, the CI column says what is known instead.
        let (ratio, ci) = match (r.ratio_interval(), r.no_ratio, r.below_resolution) {
            (Some(_), _, _) => ratio_text(r),
            (None, Some(NoRatio::BelowResolution), Some(b)) => ("—".into(), format!("|x| < {}", r.unit.format(b))),
            (None, Some(NoRatio::SeedMethod), _) => ("—".into(), "no CI (seed)".into()),
            (None, Some(NoRatio::ReachesZero), _) => ("—".into(), "reaches 0".into()),
            (None, _, _) => ("—".into(), "zero width".into()),
        };
        let style = match r.verdict {
            Verdict::Slower => Style::Bad,
            Verdict::Faster => Style::Plain,
            Verdict::NoChange | Verdict::Inconclusive | Verdict::BelowResolution => Style::Dim,
        };
        grid.push(Line::Cells(vec![
            Cell::plain(label(&r.id, &r.params)),
            Cell::plain(value_text(r, r.base_value)),
            Cell::plain(value_text(r, r.new_value)),
            Cell::plain(ratio),
            Cell::plain(ci),
            Cell::styled(r.verdict.text_for(r.unit), style),
        ]));
        // Marks, and where it ran when that differs, on a line of their own under the row.
        let marks = marks_text(r);
        if !marks.is_empty() {
            let style = if r.marked() { Style::Bad } else { Style::Dim };
            grid.push(Line::Span { indent: 2, cell: Cell::styled(format!("↳ {marks}"), style) });
        }
    }
    grid.fit(view.width, &[], 0);
    for part in grid.render(view.width, view.color) {
        out.extend(part);
    }
    let notes = footnotes_with(c, false);
    if !notes.is_empty() {
        out.push(String::new());
        out.extend(notes);
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

/// Three runs or more (a fleet: one file per host): every result side by side, one column per
/// run named by its host, the base's figure first, then each later run's figure and its ratio
/// to the base (painted when slower), before the tables of each pair. Rows are the base's
/// results compared with at least one later run, in its order.
pub(crate) fn side_by_side<'a>(all: &'a [Named<'a>], view: &View) -> String {
    let Some(first) = all.first() else { return String::new() };
    let runs: Vec<(&str, &RunFile)> = std::iter::once((first.base_name.as_str(), first.base))
        .chain(all.iter().map(|n| (n.new_name.as_str(), n.new)))
        .collect();
    // A column is named by its host; by host and file where two runs share a host.
    let names: Vec<String> = runs
        .iter()
        .map(|(file, run)| {
            let shared = runs.iter().filter(|(_, r)| r.host_name() == run.host_name()).count() > 1;
            if shared { format!("{} {file}", run.host_name()) } else { run.host_name().to_string() }
        })
        .collect();
    let mut head = vec![Cell::plain("benchmark")];
    head.extend(
        names.iter().enumerate().map(|(i, n)| Cell::plain(if i == 0 { format!("{n} (base)") } else { n.clone() })),
    );
    let mut align = vec![Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, runs.len()));
    let mut grid = Grid::new(vec![head], align);
    let mut rows: Vec<(String, String)> = Vec::new();
    for n in all {
        for r in &n.comparison.compared {
            let key = (r.id.clone(), label(&r.id, &r.params));
            if !rows.contains(&key) {
                rows.push(key);
            }
        }
    }
    for (id, shown) in &rows {
        let found = |n: &'a Named<'a>| -> Option<&'a Compared> {
            n.comparison.compared.iter().find(|r| &r.id == id && label(&r.id, &r.params) == *shown)
        };
        let Some(base) = all.iter().find_map(found) else { continue };
        let mut cells = vec![Cell::plain(shown.clone()), Cell::plain(value_text(base, base.base_value))];
        for n in all {
            cells.push(match found(n) {
                Some(r) => {
                    let ratio = r.ratio.map(|x| format!(" {x:.2}×")).unwrap_or_default();
                    let style = if r.verdict == Verdict::Slower { Style::Bad } else { Style::Plain };
                    Cell::styled(format!("{}{ratio}", value_text(r, r.new_value)), style)
                }
                None => Cell::plain("—"),
            });
        }
        grid.push(Line::Cells(cells));
    }
    grid.fit(view.width, &[], 0);
    let mut out =
        vec![format!("{} runs side by side; × = ratio to the base ({})", runs.len(), names[0]), String::new()];
    for part in grid.render(view.width, view.color) {
        out.extend(part);
    }
    out.join("\n") + "\n"
}

/// `31 compared: 2 faster, 1 slower, 25 no change, 2 inconclusive, 1 below resolution; 3 marked;
/// 4 not compared (--detail lists them)`.
///
/// When more than half the rows are inconclusive, a second clause points to `osprim ab`.
pub fn summary_line(c: &Comparison, detail: bool) -> String {
    let counts: Vec<String> = Verdict::ALL.iter().map(|&v| format!("{} {}", c.count(v), v.text())).collect();
    let mut s = format!("{} compared: {}", c.compared.len(), counts.join(", "));
    let marked = c.compared.iter().filter(|r| r.marked()).count();
    if marked > 0 {
        s.push_str(&format!("; {marked} marked"));
    }
    if !c.unmatched.is_empty() {
        s.push_str(&format!("; {} not compared", c.unmatched.len()));
        if !detail {
            s.push_str(" (--detail lists them)");
        }
    }
    if !c.compared.is_empty() && 2 * c.count(Verdict::Inconclusive) > c.compared.len() {
        s.push_str(
            "; most rows inconclusive: runs made apart move with the machine, measure A and B interleaved: osprim \
             ab PATTERNS --a CMD --b CMD",
        );
    }
    s
}

/// The columns of the CSV export, one line per compared result.
pub const CSV_COLUMNS: [&str; 17] = [
    "base",
    "new",
    "id",
    "params",
    "unit",
    "statistic",
    "base_value",
    "new_value",
    "ratio",
    "ratio_ci95_low",
    "ratio_ci95_high",
    "below_resolution",
    "verdict",
    "no_ratio",
    "marks",
    "param_differences",
    "why",
];

/// The gate's last line for one comparison: `gate: fail (1 regressed, 3 undecided of 140)`,
/// `gate: undecided (12 of 140 not decided, 0 % allowed)`, `gate: pass (140 decided)`.
pub fn gate_summary(n: &Named, outcome: &GateOutcome, gate: &Gate) -> String {
    let pct = model::unit::short_number(gate.regression * 100.0);
    let what = format!("{} against {}, slower by more than {pct} %", n.new_name, n.base_name);
    let (u, g) = (outcome.undecided.len(), outcome.gated);
    match outcome.decision() {
        Decision::Fail => format!("gate: fail ({} failed, {u} undecided of {g}; {what})", outcome.failed.len()),
        Decision::Undecided => format!(
            "gate: undecided ({u} of {g} not decided, {} % allowed; {what})",
            model::unit::short_number(outcome.allowance * 100.0)
        ),
        Decision::Pass => format!("gate: pass ({} decided, {u} undecided within the allowance; {what})", g - u),
    }
}

/// What `--fail-on-regression` says on stderr about one comparison: the rows that fail the gate,
/// each with its parameters (where it ran included), figures, ratio and CI; the rows it could
/// not decide, each with why; and the gate's summary line.
pub fn gate_lines(n: &Named, outcome: &GateOutcome, gate: &Gate) -> Vec<String> {
    let pct = model::unit::short_number(gate.regression * 100.0);
    let mut out = Vec::new();
    let figures = |c: &Compared| {
        let ratio = if c.ratio_interval().is_some() {
            let (ratio, ci) = ratio_text(c);
            format!("ratio {ratio} {ci}")
        } else {
            "no ratio".to_string()
        };
        let change = c.ratio.map(|r| format!(" ({:+.1} %)", (r - 1.0) * 100.0)).unwrap_or_default();
        format!(
            "{}: {} → {}, {ratio}{change}, {}",
            full_label(&c.id, &c.params),
            value_text(c, c.base_value),
            value_text(c, c.new_value),
            verdict_text(c)
        )
    };
    if !outcome.failed.is_empty() {
        out.push(format!(
            "regression: {} of {} results fail the gate ({} against {}; slower by more than {pct} %):",
            outcome.failed.len(),
            n.comparison.compared.len(),
            n.new_name,
            n.base_name
        ));
        for (c, why) in &outcome.failed {
            let why = match why {
                Failure::Regressed => String::new(),
                Failure::Inconclusive => format!("; a regression beyond {pct} % is not ruled out"),
                Failure::Untrustworthy => format!("; untrustworthy: {}", marks_text(c)),
            };
            out.push(format!("  {}{why}", figures(c)));
        }
    }
    if !outcome.undecided.is_empty() {
        let allowed = model::unit::short_number(outcome.allowance * 100.0);
        out.push(format!(
            "undecided: {} of {} results not decided ({} against {}; {} % allowed, --undecided-share PCT):",
            outcome.undecided.len(),
            outcome.gated,
            n.new_name,
            n.base_name,
            allowed
        ));
        for (c, why) in &outcome.undecided {
            // The verdict (inconclusive, below resolution, why no ratio) ends the figures.
            let why = match why {
                Undecided::Untrustworthy => format!("; {}: {}", why.text(), marks_text(c)),
                _ if c.marked() => format!("; {}", marks_text(c)),
                _ => String::new(),
            };
            out.push(format!("  {}{why}", figures(c)));
        }
    }
    out.push(gate_summary(n, outcome, gate));
    out
}

#[cfg(test)]
mod tests;
