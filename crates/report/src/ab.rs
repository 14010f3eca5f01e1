//! `osprim ab` for people and programs. Formats only: [`analysis::ab`] decides.
//!
//! - **table**: the two conditions, the design (mode, seed, pairs and their order, why it
//!   stopped), then one line per result: A's and B's figures (the median over pairs of each
//!   side's round medians), the ratio B / A, its 95 % interval from the confidence sequence,
//!   the verdict and the pairs it took (`12✓` when it was decided after 12);
//! - **json**: the A/B result file itself (`docs/ab.md`);
//! - **csv**, **markdown**, **latex**: `compare`'s documents, B against A (the CSV has
//!   `compare`'s columns: id, params, verdict, ratio, ratio_ci95_low, ratio_ci95_high, …).

use super::compare::{Named, label, marks_text, ratio_text};
use super::layout::{Align, Cell, Grid, Line, Style};
use super::{Format, View, Written};
use analysis::compare::{Comparison, Verdict};
use model::ab::AbFile;

/// The A/B result as a comparison of B (new) against A (base), named by the conditions.
pub fn named<'a>(ab: &'a AbFile, comparison: Comparison) -> Named<'a> {
    Named {
        base_name: format!("A: {}", ab.a.describe()),
        new_name: format!("B: {}", ab.b.describe()),
        base: &ab.a_run,
        new: &ab.b_run,
        comparison,
    }
}

/// `ab` in `format`.
pub fn render(ab: &AbFile, format: Format, view: &View) -> Written {
    let comparison = analysis::ab::comparison(ab);
    match format {
        Format::Json => serde_json::to_string_pretty(ab).map(|s| s + "\n"),
        Format::Table => Ok(table(ab, &comparison, view)),
        other => super::writer(other).comparison(&[named(ab, comparison)], view),
    }
}

/// The pairs a row took, `12✓` when it was decided after them.
fn pairs_text(ab: &AbFile, id: &str, params: &model::Params) -> String {
    match ab.rows.iter().find(|r| r.id == id && r.params == *params) {
        Some(r) if r.decision.decided_after.is_some() => format!("{}✓", r.pairs.len()),
        Some(r) => r.pairs.len().to_string(),
        None => "—".into(),
    }
}

fn table(ab: &AbFile, c: &Comparison, view: &View) -> String {
    let d = &ab.design;
    let mode = match (d.mode, d.duet_cpus) {
        (model::ab::Mode::Duet, Some([x, y])) => format!("duet on CPUs {x} and {y}, swapping every pair"),
        _ => format!("interleaved on CPU {}, in random balanced blocks (ab ba / ba ab)", d.cpu),
    };
    let mut out = vec![
        format!("A  {}", ab.a.describe()),
        format!("B  {}", ab.b.describe()),
        format!(
            "{} pairs, {mode}; seed {} ({}, {}); stopped: {}",
            ab.pairs.len(),
            d.seed,
            ab.started_utc,
            ab.host_name(),
            ab.stopped
        ),
        "figures: each round's median, then the median over pairs; ratio B/A: the median of the pairs' ratios".into(),
        format!(
            "95 % interval: a confidence sequence for that median, valid at every look (a row stops when decided, at \
             {} pairs at the fewest)",
            d.min_pairs
        ),
        format!("noise threshold ± {} %", model::unit::short_number(d.noise * 100.0)),
        String::new(),
    ];
    let head = ["benchmark", "A", "B", "B/A", "95 % CI", "verdict", "pairs"].map(Cell::plain).to_vec();
    let align = vec![Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Left, Align::Right];
    let mut grid = Grid::new(vec![head], align);
    for r in &c.compared {
        let (ratio, ci) = ratio_text(r);
        let ci = if r.ratio_ci95.is_none() { "unbounded".to_string() } else { ci };
        let style = match r.verdict {
            Verdict::Slower => Style::Bad,
            Verdict::Faster => Style::Plain,
            _ => Style::Dim,
        };
        grid.push(Line::Cells(vec![
            Cell::plain(label(&r.id, &r.params)),
            Cell::plain(r.unit.format(r.base_value)),
            Cell::plain(r.unit.format(r.new_value)),
            Cell::plain(ratio),
            Cell::plain(ci),
            Cell::styled(r.verdict.text_for(r.unit), style),
            Cell::plain(pairs_text(ab, &r.id, &r.params)),
        ]));
        let marks = marks_text(r);
        if !marks.is_empty() {
            grid.push(Line::Span { indent: 2, cell: Cell::styled(format!("↳ {marks}"), Style::Bad) });
        }
    }
    grid.fit(view.width, &[], 0);
    for part in grid.render(view.width, view.color) {
        out.extend(part);
    }
    let notes: Vec<String> =
        ab.rows.iter().filter_map(|r| Some(format!("  {}: {}", label(&r.id, &r.params), r.note.as_ref()?))).collect();
    if !notes.is_empty() {
        out.push(String::new());
        out.extend(notes);
    }
    out.push(String::new());
    out.push(summary_line(ab, c));
    out.join("\n") + "\n"
}

/// `16 results: 15 slower, 1 inconclusive; 15 decided in 31 pairs (58 s)`.
pub fn summary_line(ab: &AbFile, c: &Comparison) -> String {
    let counts: Vec<String> = Verdict::ALL
        .into_iter()
        .filter_map(|v| {
            let n = c.count(v);
            (n > 0).then(|| format!("{n} {}", v.text()))
        })
        .collect();
    let decided = ab.rows.iter().filter(|r| r.decision.decided_after.is_some()).count();
    let took = ab.pairs.last().map_or(0.0, |p| p.at_s + p.took_s);
    format!(
        "{} results: {}; {decided} decided in {} pairs ({took:.0} s)",
        c.compared.len(),
        if counts.is_empty() { "none compared".to_string() } else { counts.join(", ") },
        ab.pairs.len()
    )
}

/// `osprim history --ab`: every recorded A/B result, oldest first, in `format`.
pub fn history(points: &[model::ab::AbPoint], format: Format, view: &View) -> Written {
    let ratio = |p: &model::ab::AbPoint| p.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "—".into());
    let ci =
        |p: &model::ab::AbPoint| p.ratio_ci95.map(|[a, b]| format!("[{a:.3}, {b:.3}]")).unwrap_or_else(|| "—".into());
    let pairs = |p: &model::ab::AbPoint| if p.decided { format!("{}✓", p.pairs) } else { p.pairs.to_string() };
    let verdict = |p: &model::ab::AbPoint| p.verdict.replace('_', " ");
    let params = |p: &model::ab::AbPoint| {
        serde_json::from_str::<model::Params>(&p.params).map(|ps| label(&p.id, &ps)).unwrap_or_else(|_| p.id.clone())
    };
    match format {
        Format::Json => serde_json::to_string_pretty(points).map(|s| s + "\n"),
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let head = ["started_utc", "host", "kernel", "a", "b", "mode", "id", "params", "unit", "verdict"];
            let rest = ["ratio", "ratio_ci95_low", "ratio_ci95_high", "pairs", "decided", "file"];
            let _ = w.write_record(head.iter().chain(&rest));
            for p in points {
                let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
                let _ = w.write_record([
                    p.started_utc.clone(),
                    p.host.clone(),
                    p.kernel.clone(),
                    p.a.clone(),
                    p.b.clone(),
                    p.mode.clone(),
                    p.id.clone(),
                    p.params.clone(),
                    p.unit.clone(),
                    p.verdict.clone(),
                    num(p.ratio),
                    num(p.ratio_ci95.map(|c| c[0])),
                    num(p.ratio_ci95.map(|c| c[1])),
                    p.pairs.to_string(),
                    p.decided.to_string(),
                    p.file.clone().unwrap_or_default(),
                ]);
            }
            Ok(String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned())
        }
        Format::Markdown | Format::Latex => {
            let md = format == Format::Markdown;
            let mut out = if md {
                vec![
                    "| started | host | A | B | benchmark | B/A | 95 % CI | verdict | pairs |".to_string(),
                    "|---|---|---|---|---|---:|---:|---|---:|".into(),
                ]
            } else {
                vec![
                    "\\begin{tabular}{lllllrrlr}".to_string(),
                    "\\toprule".into(),
                    "started & host & A & B & benchmark & B/A & 95\\,\\% CI & verdict & pairs \\\\".into(),
                    "\\midrule".into(),
                ]
            };
            for p in points {
                let cells = [
                    p.started_utc.clone(),
                    p.host.clone(),
                    p.a.clone(),
                    p.b.clone(),
                    params(p),
                    ratio(p),
                    ci(p),
                    verdict(p),
                    pairs(p),
                ];
                out.push(if md {
                    format!("| {} |", cells.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "))
                } else {
                    format!("{} \\\\", cells.iter().map(|c| super::escape::latex(c)).collect::<Vec<_>>().join(" & "))
                });
            }
            if !md {
                out.extend(["\\bottomrule".to_string(), "\\end{tabular}".into()]);
            }
            Ok(out.join("\n") + "\n")
        }
        Format::Table => {
            if points.is_empty() {
                return Ok("no A/B results recorded (osprim ab records its saved results)\n".into());
            }
            let head = ["started", "host", "A", "B", "benchmark", "B/A", "95 % CI", "verdict", "pairs"]
                .map(Cell::plain)
                .to_vec();
            let align = vec![
                Align::Left,
                Align::Left,
                Align::Left,
                Align::Left,
                Align::Left,
                Align::Right,
                Align::Right,
                Align::Left,
                Align::Right,
            ];
            let mut grid = Grid::new(vec![head], align);
            for p in points {
                grid.push(Line::Cells(vec![
                    Cell::plain(p.started_utc.clone()),
                    Cell::plain(p.host.clone()),
                    Cell::plain(p.a.clone()),
                    Cell::plain(p.b.clone()),
                    Cell::plain(params(p)),
                    Cell::plain(ratio(p)),
                    Cell::plain(ci(p)),
                    Cell::styled(verdict(p), if p.verdict == "slower" { Style::Bad } else { Style::Plain }),
                    Cell::plain(pairs(p)),
                ]));
            }
            grid.fit(view.width, &[], 0);
            let mut out = Vec::new();
            for part in grid.render(view.width, view.color) {
                out.extend(part);
            }
            Ok(out.join("\n") + "\n")
        }
    }
}
