//! The two-ended families (every row with a `peer` and a `placement`: `ipc.*`, `rpc.*`,
//! `xfer.*`) as one matrix: under each transport (`pipe`) a line per family (`ipc`, `rpc`,
//! `xfer`), a column per peer × placement, each cell the median ± its CI.
//! A rescaled row (`rpc.<t>` = 2 × `ipc.<t>`) shows its figure only: its interval and
//! markers are its source's. Markers every measured cell has are said once, above.

use super::context::Ctx;
use super::figures::{is_scaled, location, plus_minus};
use super::layout::{self, Align, Cell, Grid, Line, Style, flow, paint, refs};
use super::marks::{Key, Mark, Outcome, RowRef};
use super::names;
use model::Row;
use serde_json::Value;

/// The parameters that make the columns.
const COLUMNS: [&str; 2] = ["peer", "placement"];

/// Whether a row goes into the matrix: not a cold-cache row or its hot twin (`cache=`), which
/// are plain rows, each cold one with its cold/hot ratio under it.
pub fn belongs(r: &Row) -> bool {
    COLUMNS.iter().all(|k| r.params.contains_key(*k)) && !r.params.contains_key("cache")
}

/// The matrix being built: its columns, its lines and the cells' texts.
struct Matrix<'a> {
    /// (peer, placement) of each column.
    cols: Vec<(&'a Value, &'a Value)>,
    /// Parameters said once above the matrix.
    shared: Vec<String>,
    /// Parameters that differ between columns only (e.g. `cpus`): under the column titles.
    by_col: Vec<String>,
    /// (label, the row of each column).
    lines: Vec<(String, Vec<Option<&'a Row>>)>,
}

impl<'a> Matrix<'a> {
    fn of(rows: &[&'a Row]) -> Matrix<'a> {
        let mut cols: Vec<(&Value, &Value)> = Vec::new();
        for r in rows {
            let c = (&r.params["peer"], &r.params["placement"]);
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
        let shared = names::shared_keys(rows, &COLUMNS);
        let col_of = |r: &Row| cols.iter().position(|c| *c == (&r.params["peer"], &r.params["placement"]));
        let mut keys: Vec<&String> = rows.iter().flat_map(|r| r.params.keys()).collect();
        keys.sort();
        keys.dedup();
        let by_col: Vec<String> = (keys.into_iter())
            .filter(|k| !COLUMNS.contains(&k.as_str()) && !shared.contains(k))
            .filter(|k| {
                (0..cols.len()).all(|c| {
                    let mut vals = rows.iter().filter(|r| col_of(r) == Some(c)).filter_map(|r| r.params.get(*k));
                    let first = vals.next();
                    vals.all(|v| Some(v) == first)
                })
            })
            .cloned()
            .collect();
        let skip: Vec<&str> = COLUMNS.iter().copied().chain(by_col.iter().map(String::as_str)).collect();
        let mut lines: Vec<(String, Vec<Option<&Row>>)> = Vec::new();
        for r in rows {
            let label = names::label(r, &shared, &skip);
            let i = match lines.iter().position(|(l, _)| *l == label) {
                Some(i) => i,
                None => {
                    lines.push((label, vec![None; cols.len()]));
                    lines.len() - 1
                }
            };
            if let Some(c) = col_of(r)
                && lines[i].1[c].is_none()
            {
                lines[i].1[c] = Some(r);
            }
        }
        // Stacked by transport (the id after the family), families in the order met.
        let id = |l: &str| l.split(' ').next().unwrap_or(l).to_string();
        let transport = |l: &str| id(l).split_once('.').map_or(id(l), |(_, t)| t.to_string());
        let (mut order, mut fams): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        for (l, _) in &lines {
            if !order.contains(&transport(l)) {
                order.push(transport(l));
            }
            if !fams.iter().any(|f| f == names::family(l)) {
                fams.push(names::family(l).to_string());
            }
        }
        lines.sort_by_key(|(l, _)| {
            (order.iter().position(|t| *t == transport(l)), fams.iter().position(|f| f == names::family(l)))
        });
        Matrix { cols, shared, by_col, lines }
    }

    /// Each cell's row reference: the column's peer and placement, then the line's own.
    fn at(&self, line: &str, r: &Row, c: usize) -> RowRef {
        let (peer, place) = self.cols[c];
        let own = line[r.id.len().min(line.len())..].trim();
        let qual = [names::value("peer", peer), names::value("placement", place), own.to_string()].join(" ");
        RowRef { id: r.id.clone(), qual: qual.trim().to_string(), measured: r.summary.is_some() }
    }
}

/// The matrix's lines: a heading, then one or more grids that fit the width, then (with
/// `--detail`) the cells' own notes.
pub fn render(ctx: &mut Ctx, rows: &[&Row]) -> Vec<String> {
    let m = Matrix::of(rows);
    let (common, numbers) = common_marks(ctx, &m);
    let mut notes_below = Vec::new();
    let texts: Vec<Vec<Option<CellText>>> = (m.lines.iter())
        .map(|(label, line)| {
            let cell = |(c, r): (usize, &Option<&Row>)| {
                let r = (*r)?;
                let at = m.at(label, r, c);
                // A rescaled row's markers are its source's: never its own footnotes.
                if !is_scaled(r) {
                    ctx.marks.see(&at);
                    notes_below.extend(ctx.row_notes(r, &at).into_iter().map(|n| format!("{}: {n}", at.name())));
                }
                Some(cell_text(ctx, r, &at, &common))
            };
            line.iter().enumerate().map(cell).collect()
        })
        .collect();
    let mut out = heading(ctx, &m, rows, &numbers);
    out.extend(grids(ctx, &m, &texts));
    out.extend(tails(ctx, &m));
    for n in notes_below {
        out.extend(
            flow(&format!("· {n}"), ctx.prose(), "  ", "    ")
                .into_iter()
                .map(|l| paint(&l, Style::Dim, ctx.view.color)),
        );
    }
    out
}

/// The markers every measured cell of its own (not rescaled) has, numbered before any other
/// so that the heading can say them once: (their keys, their numbers).
fn common_marks(ctx: &mut Ctx, m: &Matrix) -> (Vec<Key>, Vec<usize>) {
    let mut measured: Vec<(RowRef, Vec<Mark>)> = Vec::new();
    for (label, line) in &m.lines {
        for (c, r) in line.iter().enumerate() {
            if let Some(r) = r.filter(|r| !is_scaled(r) && r.summary.is_some()) {
                let rm = super::marks::of(r);
                measured.push((m.at(label, r, c), [rm.check, rm.flags].concat()));
            }
        }
    }
    let common: Vec<Key> = match measured.first() {
        Some((_, first)) if measured.len() > 1 => (first.iter().map(|mk| mk.key.clone()))
            .filter(|k| measured.iter().all(|(_, ms)| ms.iter().any(|mk| mk.key == *k)))
            .collect(),
        _ => Vec::new(),
    };
    let mut numbers = Vec::new();
    for k in &common {
        for (at, ms) in &measured {
            if let Some(n) = ms.iter().find(|mk| mk.key == *k).map(|mk| ctx.marks.number(mk, at))
                && !numbers.contains(&n)
            {
                numbers.push(n);
            }
        }
    }
    (common, numbers)
}

/// A cell's parts: the figure, its interval, its markers; or the word for a row without.
struct CellText {
    /// A word (`skipped¹`) rather than a figure.
    word: bool,
    figure: String,
    ci: String,
    marks: String,
    style: Style,
    stages: Vec<(String, String, String)>,
}

fn cell_text(ctx: &mut Ctx, r: &Row, at: &RowRef, common: &[Key]) -> CellText {
    let scaled = is_scaled(r);
    let with_ci = !scaled || ctx.view.detail || ctx.view.wide;
    let rm = super::marks::of(r);
    let (check, flags) = if scaled {
        (Vec::new(), Vec::new())
    } else {
        let (c, f) = ctx.numbered(&rm, at);
        let keep = |ms: &[Mark], ns: Vec<usize>| -> Vec<usize> {
            ms.iter().zip(ns).filter(|(m, _)| !common.contains(&m.key)).map(|(_, n)| n).collect()
        };
        (keep(&rm.check, c), keep(&rm.flags, f))
    };
    let empty = |figure: String, style| CellText {
        word: true,
        figure,
        ci: String::new(),
        marks: String::new(),
        style,
        stages: vec![],
    };
    match rm.outcome {
        Outcome::Skipped => return empty(format!("skipped{}", refs(&check)), Style::Warn),
        Outcome::Failed => return empty(format!("failed{}", refs(&check)), Style::Bad),
        _ => {}
    }
    let est = r
        .derived
        .as_ref()
        .map(|d| (d.estimate.point, d.estimate.ci95))
        .or(r.summary.as_ref().map(|s| location(s, ctx.seed)));
    let Some((p, ci)) = est else { return empty("-".into(), Style::Plain) };
    let all: Vec<usize> = check.iter().chain(&flags).copied().collect();
    let style = if rm.outcome == Outcome::CheckFailed { Style::Bad } else { Style::Plain };
    let stages = if ctx.view.detail {
        (r.breakdown.iter().flatten())
            .map(|st| {
                let (sp, sci) = location(&st.summary, ctx.seed);
                (st.name.clone(), r.unit.format(sp), plus_minus(sp, sci, r.unit))
            })
            .collect()
    } else {
        Vec::new()
    };
    CellText {
        word: false,
        figure: r.unit.format(p),
        ci: if with_ci { plus_minus(p, ci, r.unit) } else { String::new() },
        marks: refs(&all),
        style,
        stages,
    }
}

/// Above the grid: what the families measure, the parameters every row shares, the
/// markers every measured cell has.
fn heading(ctx: &Ctx, m: &Matrix, rows: &[&Row], common: &[usize]) -> Vec<String> {
    let mut fams: Vec<&str> = Vec::new();
    for (l, _) in &m.lines {
        if !fams.contains(&names::family(l)) {
            fams.push(names::family(l));
        }
    }
    let est = if ctx.seed { "mean" } else { "median" };
    let color = ctx.view.color;
    let mut out = flow(
        &format!(
            "{}: under each transport a line per family, a column per peer and CPU placement (same/cross: the peer \
             on the measuring CPU or another); each cell the {est} ± its 95 % CI",
            fams.join(", ")
        ),
        ctx.prose(),
        "",
        "  ",
    );
    let mut said: Vec<String> = fams.iter().filter_map(|f| legend(f).map(|l| format!("{f} {l}"))).collect();
    if !m.shared.is_empty() {
        said.push(format!("parameters: {}", names::shared_text(rows, &m.shared)));
    }
    if !common.is_empty() {
        said.push(format!("every measured cell {}", refs(common)));
    }
    let mut staged: Vec<&str> = Vec::new();
    for (l, rs) in &m.lines {
        if rs.iter().flatten().any(|r| r.breakdown.is_some()) && !staged.contains(&names::family(l)) {
            staged.push(names::family(l));
        }
    }
    if !staged.is_empty() && !ctx.view.detail {
        said.push(format!("{}: each stage with --detail", staged.join(", ")));
    }
    for s in said {
        out.extend(flow(&s, ctx.prose(), "  ", "    "));
    }
    out.into_iter().map(|l| paint(&l, Style::Dim, color)).collect()
}

/// What a known family's cells are.
fn legend(family: &str) -> Option<&'static str> {
    match family {
        "ipc" => Some("one way, half a round trip"),
        "rpc" => Some("round trip, 2 × ipc: the same samples (its CI and markers are ipc's)"),
        "xfer" => Some("one way, each message stamped by the sender and the receiver"),
        _ => None,
    }
}

/// The grids: every column in one if it fits, else a grid per peer, else without the CIs.
fn grids(ctx: &Ctx, m: &Matrix, texts: &[Vec<Option<CellText>>]) -> Vec<String> {
    let all: Vec<usize> = (0..m.cols.len()).collect();
    let mut by_peer: Vec<Vec<usize>> = Vec::new();
    for (i, (peer, _)) in m.cols.iter().enumerate() {
        match by_peer.iter_mut().find(|g| m.cols[g[0]].0 == *peer) {
            Some(g) => g.push(i),
            None => by_peer.push(vec![i]),
        }
    }
    let singles: Vec<Vec<usize>> = all.iter().map(|&c| vec![c]).collect();
    let tries = [(vec![all], true), (by_peer.clone(), true), (by_peer, false), (singles, false)];
    let width = ctx.width();
    let build = |(groups, with_ci): &(Vec<Vec<usize>>, bool)| -> Vec<Grid> {
        groups.iter().map(|g| grid(m, texts, g, *with_ci)).collect()
    };
    let fits = |gs: &Vec<Grid>| gs.iter().all(|g| g.total() <= width);
    let chosen = tries.iter().map(build).find(fits).unwrap_or_else(|| build(&tries[3]));
    let mut out = Vec::new();
    for (i, mut g) in chosen.into_iter().enumerate() {
        g.fit(width, &[], 0);
        if i > 0 {
            out.push(String::new());
        }
        out.extend(g.render(ctx.prose(), ctx.view.color).concat());
    }
    out
}

/// Under the grids, the cells measured with `--tail`: the p50, p99 and p99.9 (and max) of
/// single operations, a line per cell, as a table; nothing when no cell has them.
fn tails(ctx: &Ctx, m: &Matrix) -> Vec<String> {
    let mut tails: Vec<(String, &Row, &model::Tail)> = Vec::new();
    for (label, line) in &m.lines {
        for (c, r) in line.iter().enumerate() {
            // A rescaled row's samples are its source's, whose tail is listed.
            if let Some(r) = r.filter(|r| !is_scaled(r))
                && let Some(t) = &r.tail
            {
                tails.push((m.at(label, r, c).name(), r, t));
            }
        }
    }
    if tails.is_empty() {
        return Vec::new();
    }
    let head = ["single operations (--tail)", "p50", "p99", "p99.9", "max", "n"];
    let mut aligns = vec![Align::Right; head.len()];
    aligns[0] = Align::Left;
    let mut g = Grid::new(vec![head.iter().map(|h| Cell::plain(*h)).collect()], aligns);
    for (name, r, t) in tails {
        let v = |x: f64| Cell::plain(r.unit.format(x));
        g.push(Line::Cells(vec![
            Cell::plain(name),
            v(t.p50),
            v(t.p99),
            v(t.p999),
            v(t.max),
            Cell::plain(super::fmt_count(t.n as u64)),
        ]));
    }
    g.fit(ctx.width(), &[4], 0);
    let mut out = vec![String::new()];
    out.extend(g.render(ctx.prose(), ctx.view.color).concat());
    out
}

/// One grid of the columns `cols`.
fn grid(m: &Matrix, texts: &[Vec<Option<CellText>>], cols: &[usize], with_ci: bool) -> Grid {
    let all = || texts.iter().flatten().flatten();
    let fw = all().filter(|t| !t.word).map(|t| layout::width(&t.figure)).max().unwrap_or(0);
    let cw = all().map(|t| layout::width(&t.ci)).max().unwrap_or(0);
    let show = |figure: &str, ci: &str, marks: &str, plain: bool| {
        if plain {
            return format!("{figure} {marks}").trim().to_string();
        }
        let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(layout::width(s))));
        let lead = " ".repeat(fw.saturating_sub(layout::width(figure)));
        let ci = if with_ci { pad(ci, cw) } else { String::new() };
        format!("{lead}{figure} {ci} {marks}").trim_end().to_string()
    };
    let titles = |f: &dyn Fn(usize) -> String, first: &str| {
        std::iter::once(Cell::plain(first)).chain(cols.iter().map(|&c| Cell::plain(f(c)))).collect::<Vec<_>>()
    };
    let mut header = vec![
        titles(&|c| names::value("peer", m.cols[c].0), ""),
        titles(&|c| format!("{} CPU", names::value("placement", m.cols[c].1)), ""),
    ];
    for k in &m.by_col {
        let said = |c: usize| {
            let row = m.lines.iter().find_map(|(_, rs)| rs[c].filter(|r| r.params.contains_key(k)));
            row.map(|r| names::in_heading(k, &r.params[k])).unwrap_or_default()
        };
        header.push(titles(&said, ""));
    }
    if let Some(last) = header.last_mut() {
        last[0] = Cell::plain("transport");
    }
    let mut g = Grid::new(header, vec![Align::Left; cols.len() + 1]);
    let mut last = None;
    for ((label, _), line) in m.lines.iter().zip(texts) {
        let (family, transport, own) = parts(label);
        if last != Some(transport) {
            g.push(Line::Span { indent: 0, cell: Cell::plain(transport) });
            last = Some(transport);
        }
        let mut cells = vec![Cell::plain(format!("  {family} {own}").trim_end())];
        for &c in cols {
            cells.push(match &line[c] {
                None => Cell::default(),
                Some(t) => Cell::styled(show(&t.figure, &t.ci, &t.marks, t.word), t.style),
            });
        }
        g.push(Line::Cells(cells));
        let mut stages: Vec<&str> = Vec::new();
        for t in cols.iter().filter_map(|&c| line[c].as_ref()) {
            for (name, _, _) in &t.stages {
                if !stages.contains(&name.as_str()) {
                    stages.push(name);
                }
            }
        }
        for st in stages {
            let mut cells = vec![Cell::styled(format!("    └ {st}"), Style::Dim)];
            for &c in cols {
                let s = line[c].as_ref().and_then(|t| t.stages.iter().find(|s| s.0 == st));
                cells.push(s.map_or_else(Cell::default, |(_, f, ci)| Cell::styled(show(f, ci, "", false), Style::Dim)));
            }
            g.push(Line::Cells(cells));
        }
    }
    g
}

/// `ipc`, `pipe` and `4 KiB` of the line `ipc.pipe 4 KiB`.
fn parts(label: &str) -> (&str, &str, &str) {
    let (id, own) = label.split_once(' ').unwrap_or((label, ""));
    let (family, transport) = id.split_once('.').unwrap_or((id, id));
    (family, transport, own)
}

#[cfg(test)]
mod tests {
    use crate::View;
    use model::Tail;

    /// A matrix cell measured with `--tail` lists the p50, p99 and p99.9 of its single
    /// operations under the matrix; a run without tails has no such table.
    #[test]
    fn a_cell_with_a_tail_shows_its_percentiles_under_the_matrix() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/default-run.json");
        let mut run = model::read_result_file(&path).expect("the fixture reads");
        let view = View { width: 100, ..View::default() };
        assert!(!crate::table::render(&run, &view).contains("single operations (--tail)"));
        let row = run.results.iter_mut().find(|r| r.id == "ipc.pipe" && super::belongs(r)).expect("an ipc.pipe cell");
        row.tail =
            Some(Tail { n: 20_000, p50: 1_950.0, p99: 3_125.0, p999: 12_480.0, max: 40_000.0, resolution: 10.0 });
        let out = crate::table::render(&run, &view);
        let lines: Vec<&str> = out.lines().collect();
        let head = lines.iter().position(|l| l.starts_with("single operations (--tail)")).expect("a tail table");
        assert!(lines[head].contains("p50") && lines[head].contains("p99") && lines[head].contains("p99.9"), "{out}");
        let cell = lines[head + 1..].iter().find(|l| l.starts_with("ipc.pipe")).expect("the cell's line");
        for figure in ["1.950 µs", "3.125 µs", "12.48 µs", "20,000"] {
            assert!(cell.contains(figure), "{figure} in {cell}");
        }
        for l in &lines {
            assert!(crate::layout::width(l) <= 100, "{l}");
        }
    }
}
