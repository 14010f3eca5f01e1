//! A size sweep as the table shows it: the measured points first (size, median ± %, GB/s),
//! then the fitted cost, each figure labelled: the fixed cost and the cost per KiB with
//! their 95 % CIs, the bandwidth, and the fit's quality (R², the two segments' breakpoint).

use super::context::Ctx;
use super::figures::{location, plus_minus};
use super::layout::{Align, Cell, Grid, Line, Style, flow, paint, refs};
use super::marks::{Key, Outcome, RowRef};
use super::{fmt_ns, fmt_size, names, sig4};
use model::{Flag, Params, Row, RunFile, SIZE_PARAM, SweepFit, Unit};

/// The parameters a sweep's title leaves out: they vary along it.
const ALONG: [&str; 2] = [SIZE_PARAM, "sizes"];

/// The lines of the sweep whose fitted row is `fit_row`, with its measured `points`.
pub fn render(ctx: &mut Ctx, fit_row: &Row, points: &[&Row]) -> Vec<String> {
    let Some(fit) = &fit_row.fit else { return Vec::new() };
    let (width, color) = (ctx.width(), ctx.view.color);
    let label = names::label(fit_row, &[], &ALONG);
    let qual = label[fit_row.id.len()..].trim().to_string();
    let at = RowRef { id: fit_row.id.clone(), qual: format!("{qual} sweep").trim().into(), measured: true };
    ctx.marks.see(&at);
    let (rm, check, flags) = ctx.cell_marks(fit_row, &at);
    let verdict = match rm.outcome {
        Outcome::CheckFailed => format!("FAILED{}", refs(&check)),
        Outcome::Unchecked => format!("unchecked{}", refs(&check)),
        _ => String::new(),
    };
    let n = if points.is_empty() { fit.points.len() } else { points.len() };
    let title =
        format!("{label} — a size sweep over {n} sizes: the points, then the fitted cost {verdict} {}", refs(&flags));
    let mut out = flow(title.trim_end(), ctx.prose(), "", "  ");
    let mut pts = points_grid(ctx, fit_row, fit, points, &qual);
    pts.fit(width, &[3], 0);
    out.extend(pts.render(ctx.prose(), color).concat());
    let negative = rm.flags.iter().position(|m| m.key == Key::Flag(Flag::NegativeFixedCost)).map(|i| flags[i]);
    let mut fitted = fit_grid(fit, negative);
    fitted.fit(width.saturating_sub(2), &[3, 2], 0);
    out.extend(flow(&format!("fitted by {}: {}", fit.method, model_words(fit)), ctx.prose(), "", "  "));
    out.extend(fitted.render(ctx.prose().saturating_sub(2), color).concat().into_iter().map(|l| format!("  {l}")));
    for n in ctx.row_notes(fit_row, &at) {
        out.extend(
            flow(&format!("· {n}"), ctx.prose(), "  ", "    ").into_iter().map(|l| paint(&l, Style::Dim, color)),
        );
    }
    out
}

/// Size, estimate ± %, GB/s and markers of each point; the fit's own record of the points
/// when the rows are not in the run.
fn points_grid(ctx: &mut Ctx, fit_row: &Row, fit: &SweepFit, points: &[&Row], qual: &str) -> Grid {
    let h = |s: &str| Cell::plain(s);
    let est = if ctx.seed { "mean" } else { "median" };
    let header = vec![vec![h("size"), h(est), h("95 % CI"), h("GB/s"), h("flags")]];
    let mut g = Grid::new(header, vec![Align::Right, Align::Right, Align::Right, Align::Right, Align::Left]);
    let gbs = |unit: Unit, size: u64, per_op: f64| {
        if unit == Unit::Ns && size > 0 && per_op > 0.0 && per_op.is_finite() {
            sig4(size as f64 / per_op)
        } else {
            "-".into()
        }
    };
    if points.is_empty() {
        for p in &fit.points {
            let cells =
                [fmt_size(p.size_bytes), fmt_ns(p.median_ns), "-".into(), gbs(Unit::Ns, p.size_bytes, p.median_ns)];
            g.push(Line::Cells(cells.into_iter().map(Cell::plain).collect()));
        }
        return g;
    }
    for r in points {
        let size = r.params.get(SIZE_PARAM).and_then(|v| v.as_u64()).unwrap_or(0);
        let at = RowRef {
            id: fit_row.id.clone(),
            qual: format!("{qual} {}", fmt_size(size)).trim().into(),
            measured: r.summary.is_some(),
        };
        ctx.marks.see(&at);
        let (rm, check, flags) = ctx.cell_marks(r, &at);
        let mut cells = vec![Cell::plain(fmt_size(size))];
        match r.summary.as_ref() {
            Some(s) => {
                let (p, ci) = location(s, ctx.seed);
                cells.extend([r.unit.format(p), plus_minus(p, ci, r.unit), gbs(r.unit, size, p)].map(Cell::plain));
            }
            None => {
                let word = if rm.outcome == Outcome::Failed { "failed" } else { "skipped" };
                cells.push(Cell::styled(format!("{word}{}", refs(&check)), Style::Warn));
                cells.extend([Cell::default(), Cell::default()]);
            }
        }
        let check = if rm.outcome == Outcome::CheckFailed { format!("FAILED{} ", refs(&check)) } else { String::new() };
        cells.push(Cell::styled(format!("{check}{}", refs(&flags)).trim(), Style::Warn));
        g.push(Line::Cells(cells));
        ctx.row_notes(r, &at)
            .into_iter()
            .for_each(|n| g.push(Line::Span { indent: 2, cell: Cell::styled(format!("· {n}"), Style::Dim) }));
    }
    g
}

/// The fitted figures, one per line: what, value, 95 % CI, and the bandwidth or the quality.
fn fit_grid(fit: &SweepFit, negative: Option<usize>) -> Grid {
    let mut g = Grid::new(Vec::new(), vec![Align::Left, Align::Right, Align::Left, Align::Left]);
    let ci = |[lo, hi]: [f64; 2], f: &dyn Fn(f64) -> String| format!("95 % CI {} – {}", f(lo), f(hi));
    let per_kib = |x: f64| fmt_ns(x * 1024.0);
    let gbs =
        |per_byte: f64, lo: f64| if lo > 0.0 { format!("= {} GB/s", sig4(1.0 / per_byte)) } else { String::new() };
    let row = |cells: [String; 4]| Line::Cells(cells.into_iter().map(Cell::plain).collect());
    let (fixed, fixed_ci) = fit.fixed_ns();
    let neg = match negative {
        Some(n) => format!("negative{}", super::layout::superscript(n)),
        None if fixed < 0.0 => "negative".into(),
        None => String::new(),
    };
    g.push(row(["fixed cost".into(), fmt_ns(fixed), ci(fixed_ci, &fmt_ns), neg]));
    match fit.chosen_segments() {
        None => {
            let (b, b_ci) = fit.per_byte_ns();
            g.push(row(["cost per KiB".into(), per_kib(b), ci(b_ci, &per_kib), gbs(b, b_ci[0])]));
        }
        Some(s) => {
            let at = fmt_size(s.breakpoint_bytes);
            let (a, a_ci) = (s.small_slope_ns_per_byte, s.small_slope_ci95_ns_per_byte);
            g.push(row([format!("cost per KiB ≤ {at}"), per_kib(a), ci(a_ci, &per_kib), gbs(a, a_ci[0])]));
            let (b, b_ci) = (s.large_slope_ns_per_byte, s.large_slope_ci95_ns_per_byte);
            g.push(row([format!("cost per KiB > {at}"), per_kib(b), ci(b_ci, &per_kib), gbs(b, b_ci[0])]));
        }
    }
    g.push(Line::Span { indent: 0, cell: Cell::plain(quality(fit)) });
    g
}

/// R² and χ² of the line; with two segments, how much better they fit.
fn quality(fit: &SweepFit) -> String {
    let l = &fit.line;
    match fit.chosen_segments() {
        None => {
            format!("fit quality: R² {:.4}, χ²/dof {} (p = {})", l.r_squared, sig4(l.reduced_chi2), p_value(l.p_value))
        }
        Some(s) => format!(
            "fit quality: two segments fit better than one line (p = {}; breakpoints tried: {}); one line's R² {:.4}",
            p_value(s.vs_line_p_value),
            s.breakpoints_tried,
            l.r_squared
        ),
    }
}

/// "one line", "two segments meeting at 64 KiB".
fn model_words(fit: &SweepFit) -> String {
    match fit.chosen_segments() {
        None => "one line, fixed cost + cost per byte".into(),
        Some(s) => format!("two lines meeting at {} (the cost per byte changes there)", fmt_size(s.breakpoint_bytes)),
    }
}

fn p_value(p: f64) -> String {
    if p >= 0.01 { format!("{p:.2}") } else { format!("{p:.1e}") }
}

/// The fit in one line, for [`super::table::row_line`]: `fixed 2.000 µs + 249.9 ns/KiB`.
pub fn fit_summary(fit: &SweepFit) -> String {
    let (fixed, _) = fit.fixed_ns();
    let (b, b_ci) = fit.per_byte_ns();
    let bw = if b_ci[0] > 0.0 { format!(" ({} GB/s)", sig4(1.0 / b)) } else { String::new() };
    format!("fixed {} + {}/KiB{bw}", fmt_ns(fixed), fmt_ns(b * 1024.0))
}

/// (id, parameters without the size) of every sweep that has a fitted line.
pub fn fitted_groups(run: &RunFile) -> Vec<(&str, Params)> {
    run.results.iter().filter(|r| r.fit.is_some()).map(|r| (r.id.as_str(), without_sweep_keys(&r.params))).collect()
}

/// The parameters of a sweep's point or fit, without what varies along the sweep.
pub fn without_sweep_keys(params: &Params) -> Params {
    let mut p = params.clone();
    p.remove(SIZE_PARAM);
    p.remove("sizes");
    p
}

/// Whether `r` is one point of a sweep whose fitted line the table shows instead.
pub fn is_fitted_point(r: &Row, fitted: &[(&str, Params)]) -> bool {
    r.fit.is_none()
        && r.params.get(SIZE_PARAM).is_some_and(|v| v.is_number())
        && fitted.iter().any(|(id, p)| *id == r.id && *p == without_sweep_keys(&r.params))
}

/// The measured points of the sweep `fit`, by size.
pub fn points_of<'a>(run: &'a RunFile, fit: &Row) -> Vec<&'a Row> {
    let key = without_sweep_keys(&fit.params);
    let mut pts: Vec<&Row> = (run.results.iter())
        .filter(|r| r.fit.is_none() && r.id == fit.id && r.params.get(SIZE_PARAM).is_some_and(|v| v.is_number()))
        .filter(|r| without_sweep_keys(&r.params) == key)
        .collect();
    pts.sort_by_key(|r| r.params.get(SIZE_PARAM).and_then(|v| v.as_u64()).unwrap_or(0));
    pts
}
