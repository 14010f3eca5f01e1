//! `osprim history`: each result (id and parameters) as a series over the runs that recorded
//! it, oldest first, with the machine it ran on; with `--changes`, where each series changed
//! level (found by `history::changes`). Formats only.

use super::View;
use super::layout::{Align, Cell, Grid, Line, Style};
use analysis::history::Point;
use analysis::history::changes::{Change, Level, Report, Series, params_label};
use model::Unit;

pub(crate) fn unit_of(symbol: &str) -> Unit {
    match symbol {
        "bytes" => Unit::Bytes,
        "count" => Unit::Count,
        _ => Unit::Ns,
    }
}

pub(crate) fn table(points: &[Point], view: &View) -> String {
    if points.is_empty() {
        return "no recorded result matches\n".into();
    }
    let mut series: Vec<(String, String, Vec<&Point>)> = Vec::new();
    for p in points {
        let params = params_label(&p.params);
        match series.iter_mut().find(|(id, pa, _)| *id == p.id && *pa == params) {
            Some(s) => s.2.push(p),
            None => series.push((p.id.clone(), params, vec![p])),
        }
    }
    // Cold rows' ratios and hardware counts get columns only when some point has them.
    let cold = points.iter().any(|p| p.cold_hot.is_some());
    let counted = points.iter().any(|p| !p.counts.is_empty());
    let mut head: Vec<Cell> =
        ["run (UTC)", "host", "kernel", "median", "95 % CI", "vs first", "status"].map(Cell::plain).to_vec();
    let mut align = vec![Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Left];
    if cold {
        head.push(Cell::plain("cold/hot"));
        align.push(Align::Right);
    }
    if counted {
        head.push(Cell::plain("counted per op"));
        align.push(Align::Left);
    }
    let mut grid = Grid::new(vec![head], align);
    for (id, params, pts) in &series {
        let title = if params.is_empty() { id.clone() } else { format!("{id} {params}") };
        grid.push(Line::Span { indent: 0, cell: Cell::styled(title, Style::Dim) });
        let first = pts.iter().find_map(|p| p.median);
        for p in pts {
            let unit = unit_of(&p.unit);
            let (median, ci, vs) = match p.median {
                Some(m) => (
                    unit.format(m),
                    p.ci95.map(|[a, b]| format!("[{}, {}]", unit.format(a), unit.format(b))).unwrap_or_default(),
                    first.map(|f| format!("{:.3}×", m / f)).unwrap_or_default(),
                ),
                None => ("-".into(), String::new(), String::new()),
            };
            let mut cells = vec![
                Cell::plain(p.started_utc.replace('T', " ").trim_end_matches('Z').to_string()),
                Cell::plain(p.host.clone()),
                Cell::plain(p.kernel.clone()),
                Cell::plain(median),
                Cell::plain(ci),
                Cell::plain(vs),
                Cell::plain(p.status.clone()),
            ];
            if cold {
                cells.push(Cell::plain(p.cold_hot.as_ref().map(cold_hot_text).unwrap_or_default()));
            }
            if counted {
                let counts: Vec<String> =
                    p.counts.iter().map(|(event, per_op)| format!("{event} {}", Unit::Count.format(*per_op))).collect();
                cells.push(Cell::plain(counts.join(", ")));
            }
            grid.push(Line::Cells(cells));
        }
    }
    grid.fit(view.width, &[5, 2], 1);
    let mut out: Vec<String> = grid.render(view.width, view.color).into_iter().flatten().collect();
    // Runs, not seconds: two runs started in the same second on one host are two.
    let runs: std::collections::BTreeSet<&str> = points.iter().map(|p| p.run_key.as_str()).collect();
    let hosts: std::collections::BTreeSet<&str> = points.iter().map(|p| p.host.as_str()).collect();
    out.push(String::new());
    out.push(format!(
        "{} result(s) in {} series from {} run(s) on {} machine(s); vs first = median / the series' first median",
        points.len(),
        series.len(),
        runs.len(),
        hosts.len()
    ));
    out.join("\n") + "\n"
}

/// `7.42× [6.10, 8.95]`: a cold row's cold/hot ratio with its interval.
pub(crate) fn cold_hot_text(e: &model::Estimate) -> String {
    format!("{:.2}× [{:.2}, {:.2}]", e.point, e.ci95[0], e.ci95[1])
}

/// `2026-11-25T09:07:37Z` → `2026-11-25 09:07:37`.
pub(crate) fn when(utc: &str) -> String {
    utc.replace('T', " ").trim_end_matches('Z').to_string()
}

pub(crate) fn title(s: &Series) -> String {
    let params = if s.params.is_empty() { String::new() } else { format!(" {}", s.params) };
    let method = if s.method.is_empty() { "method not recorded" } else { s.method.as_str() };
    format!("{}{params} ({method}, {} on {})", s.id, s.host, s.cpu_model)
}

/// `130.2 ns [128.0 ns, 131.5 ns] (12 runs)`.
pub(crate) fn level_text(l: &Level, unit: Unit) -> String {
    let e = &l.estimate;
    format!("{} [{}, {}] ({} runs)", unit.format(e.estimate), unit.format(e.ci95[0]), unit.format(e.ci95[1]), l.runs)
}

/// `1.302× [1.281, 1.322]`, or why there is no ratio.
pub(crate) fn ratio_text(c: &Change, unit: Unit) -> String {
    match &c.ratio {
        Some(r) => format!("{:.3}× [{:.3}, {:.3}]", r.estimate, r.ci95[0], r.ci95[1]),
        None => format!(
            "no ratio (level before includes 0); difference {} [{}, {}]",
            unit.format(c.difference.estimate),
            unit.format(c.difference.ci95[0]),
            unit.format(c.difference.ci95[1])
        ),
    }
}

/// `up`/`down`, and for times `slower`/`faster`.
pub(crate) fn direction(c: &Change, unit: Unit) -> &'static str {
    match (c.difference.estimate > 0.0, unit) {
        (true, Unit::Ns) => "slower",
        (false, Unit::Ns) => "faster",
        (true, _) => "up",
        (false, _) => "down",
    }
}

pub(crate) fn footer(report: &Report) -> String {
    let searched = report.series.iter().filter(|s| s.searched).count();
    let changes: usize = report.series.iter().map(|s| s.changes.len()).sum();
    let weak: usize = report.series.iter().map(|s| s.weak).sum();
    let with = report.series.iter().filter(|s| !s.changes.is_empty()).count();
    format!(
        "{changes} change(s) in {with} of {} series ({searched} long enough to search: at least {} runs); {}, p ≤ {} \
         with {} permutations, at least {} runs a side; {weak} refused as smaller than the runs' own intervals",
        report.series.len(),
        2 * report.min_runs,
        report.method,
        report.significance,
        report.permutations,
        report.min_runs
    )
}

pub(crate) fn changes_table(report: &Report, view: &View) -> String {
    if report.series.is_empty() {
        return "no recorded result matches\n".into();
    }
    let head = ["last run before", "before", "after", "after / before"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Right, Align::Right, Align::Left];
    let mut grid = Grid::new(vec![head], align);
    for s in report.series.iter().filter(|s| !s.changes.is_empty()) {
        let unit = unit_of(&s.unit);
        grid.push(Line::Span { indent: 0, cell: Cell::styled(title(s), Style::Dim) });
        for c in &s.changes {
            // The levels' intervals are in the ratio's; --wide shows them too.
            let short = |l: &Level| format!("{}, {} runs", unit.format(l.estimate.estimate), l.runs);
            let (before, after) = if view.wide {
                (level_text(&c.before, unit), level_text(&c.after, unit))
            } else {
                (short(&c.before), short(&c.after))
            };
            grid.push(Line::Cells(vec![
                Cell::plain(when(&c.last_before.started_utc)),
                Cell::plain(before),
                Cell::plain(after),
                Cell::plain(format!("{} {}", ratio_text(c, unit), direction(c, unit))),
            ]));
            let mut next = format!("first run after: {}", when(&c.first_after.started_utc));
            if let Some(f) = &c.first_after.file {
                next.push_str(&format!(" ({f})"));
            }
            next.push_str(&format!("; p = {:.3}", c.p_value));
            if !c.also_changed.is_empty() {
                next.push_str(&format!("; also changed: {}", c.also_changed.join(", ")));
            }
            grid.push(Line::Span { indent: 2, cell: Cell::styled(next, Style::Dim) });
        }
    }
    grid.fit(view.width, &[], 3);
    let mut out: Vec<String> = if report.series.iter().any(|s| !s.changes.is_empty()) {
        grid.render(view.width, view.color).into_iter().flatten().collect()
    } else {
        vec!["no change point found".into()]
    };
    out.push(String::new());
    out.extend(super::layout::flow(&footer(report), view.width.max(40), "", ""));
    out.join("\n") + "\n"
}
