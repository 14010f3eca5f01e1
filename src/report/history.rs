//! `osprim history`: each result (id and parameters) as a series over the runs that recorded
//! it, oldest first, with the machine it ran on. Formats only.

use super::layout::{Align, Cell, Grid, Line, Style};
use super::{Format, View};
use crate::history::Point;
use crate::model::Unit;

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

/// `{"placement":"same_cpu"}` → `placement=same_cpu`.
fn params_text(json: &str) -> String {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(json) else {
        return String::new();
    };
    m.iter()
        .filter(|(k, _)| k.as_str() != "cpus")
        .map(|(k, v)| format!("{k}={}", v.as_str().map(String::from).unwrap_or_else(|| v.to_string())))
        .collect::<Vec<_>>()
        .join(" ")
}

fn table(points: &[Point], view: &View) -> String {
    if points.is_empty() {
        return "no recorded result matches\n".into();
    }
    let mut series: Vec<(String, String, Vec<&Point>)> = Vec::new();
    for p in points {
        let params = params_text(&p.params);
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
