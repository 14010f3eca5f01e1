//! `osprim history`: each result (id and parameters) as a series over the runs that recorded
//! it, oldest first, with the machine it ran on; with `--changes`, where each series changed
//! level (found by `history::changes`). Formats only.

use super::escape::{Md, latex_comment};
use super::layout::{Align, Cell, Grid, Line, Style};
use super::{Format, View};
use model::Unit;
use store::history::Point;
use store::history::changes::{Change, Level, Report, Series, params_label};

/// The points in `format`.
pub fn render(points: &[Point], format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(points)? + "\n",
        Format::Csv => csv_text(points),
        Format::Table | Format::Markdown | Format::Latex => table(points, view),
    })
}

fn unit_of(symbol: &str) -> Unit {
    match symbol {
        "bytes" => Unit::Bytes,
        "count" => Unit::Count,
        _ => Unit::Ns,
    }
}

fn table(points: &[Point], view: &View) -> String {
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
    let head = ["run (UTC)", "host", "kernel", "median", "95 % CI", "vs first", "status"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Left];
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
            grid.push(Line::Cells(vec![
                Cell::plain(p.started_utc.replace('T', " ").trim_end_matches('Z').to_string()),
                Cell::plain(p.host.clone()),
                Cell::plain(p.kernel.clone()),
                Cell::plain(median),
                Cell::plain(ci),
                Cell::plain(vs),
                Cell::plain(p.status.clone()),
            ]));
        }
    }
    grid.fit(view.width, &[5, 2], 1);
    let mut out: Vec<String> = grid.render(view.width, view.color).into_iter().flatten().collect();
    let runs: std::collections::BTreeSet<(&str, &str)> =
        points.iter().map(|p| (p.started_utc.as_str(), p.host.as_str())).collect();
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

fn csv_text(points: &[Point]) -> String {
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
    ]);
    let num = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for p in points {
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
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The change points of `report` in `format`.
pub fn render_changes(report: &Report, format: Format, view: &View) -> Result<String, serde_json::Error> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Csv => changes_csv(report),
        Format::Table => changes_table(report, view),
        Format::Markdown => changes_markdown(report),
        Format::Latex => changes_latex(report),
    })
}

/// `2026-11-25T09:07:37Z` → `2026-11-25 09:07:37`.
fn when(utc: &str) -> String {
    utc.replace('T', " ").trim_end_matches('Z').to_string()
}

fn title(s: &Series) -> String {
    let params = if s.params.is_empty() { String::new() } else { format!(" {}", s.params) };
    let method = if s.method.is_empty() { "method not recorded" } else { s.method.as_str() };
    format!("{}{params} ({method}, {} on {})", s.id, s.host, s.cpu_model)
}

/// `130.2 ns [128.0 ns, 131.5 ns] (12 runs)`.
fn level_text(l: &Level, unit: Unit) -> String {
    let e = &l.estimate;
    format!("{} [{}, {}] ({} runs)", unit.format(e.estimate), unit.format(e.ci95[0]), unit.format(e.ci95[1]), l.runs)
}

/// `1.302× [1.281, 1.322]`, or why there is no ratio.
fn ratio_text(c: &Change, unit: Unit) -> String {
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
fn direction(c: &Change, unit: Unit) -> &'static str {
    match (c.difference.estimate > 0.0, unit) {
        (true, Unit::Ns) => "slower",
        (false, Unit::Ns) => "faster",
        (true, _) => "up",
        (false, _) => "down",
    }
}

fn footer(report: &Report) -> String {
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

fn changes_table(report: &Report, view: &View) -> String {
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

/// One line per change point: the series, the two runs, the two levels, the magnitude.
fn changes_csv(report: &Report) -> String {
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

fn changes_markdown(report: &Report) -> String {
    let escape = |s: &str| Md::Cell.escape(s);
    let mut out =
        String::from("| result | last run before | first run after | before | after | after / before | p |\n");
    out.push_str("|---|---|---|---:|---:|---|---:|\n");
    let mut any = false;
    for s in &report.series {
        let unit = unit_of(&s.unit);
        for c in &s.changes {
            any = true;
            let also =
                if c.also_changed.is_empty() { String::new() } else { format!(" ({})", c.also_changed.join(", ")) };
            out.push_str(&format!(
                "| {} | {} | {}{} | {} | {} | {} {} | {:.3} |\n",
                escape(&title(s)),
                escape(&when(&c.last_before.started_utc)),
                escape(&when(&c.first_after.started_utc)),
                escape(&also),
                escape(&level_text(&c.before, unit)),
                escape(&level_text(&c.after, unit)),
                escape(&ratio_text(c, unit)),
                direction(c, unit),
                c.p_value
            ));
        }
    }
    if !any {
        out = "No change point found.\n".into();
    }
    out.push('\n');
    out.push_str(&escape(&footer(report)));
    out.push('\n');
    out
}

fn changes_latex(report: &Report) -> String {
    use super::escape::latex as escape;
    let mut out = String::from(
        "\\begin{tabular}{lllrrlr}\n\\toprule\nresult & last run before & first run after & before & after & after / before & $p$ \\\\\n\\midrule\n",
    );
    for s in &report.series {
        let unit = unit_of(&s.unit);
        for c in &s.changes {
            out.push_str(&format!(
                "{} & {} & {} & {} & {} & {} {} & {:.3} \\\\\n",
                escape(&title(s)),
                escape(&when(&c.last_before.started_utc)),
                escape(&when(&c.first_after.started_utc)),
                escape(&level_text(&c.before, unit)),
                escape(&level_text(&c.after, unit)),
                escape(&ratio_text(c, unit)),
                direction(c, unit),
                c.p_value
            ));
        }
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n");
    out.push_str(&format!("% {}\n", latex_comment(&footer(report))));
    out
}
