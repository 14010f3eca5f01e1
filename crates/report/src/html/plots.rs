//! The report's plots, each an inline SVG: a result's distribution and its samples in the
//! order taken, a sweep's points with the fitted cost, the papers' figures beside today's, and
//! a comparison's ratios (a forest plot). Each function takes figures already computed (by
//! `stats`, `derive`, the seed view or `compare`) and only draws them.

use super::super::svg::{Anchor, Frame, Kind, Paint, Scale, Svg, Swatch, Ticks, colour, text_width};
use super::super::{fmt_size, short_number, sig4};
use analysis::compare::{Compared, Verdict};
use model::{Row, SweepFit};

/// Width and height of a result's two plots.
const SMALL: (f64, f64) = (470.0, 240.0);

/// The baseline of a plot's legend, above its plotting area.
const LEGEND_Y: f64 = 14.0;

/// The top of a plotting area under a legend.
const UNDER_LEGEND: f64 = 28.0;

/// A log scale when every value is positive and they span more than `ratio`.
fn kind_for(lo: f64, hi: f64, ratio: f64) -> Kind {
    if lo > 0.0 && hi / lo > ratio { Kind::Log } else { Kind::Linear }
}

/// The finite values of `v`, and their least and greatest.
fn finite_range(v: &[f64]) -> Option<(f64, f64)> {
    let mut it = v.iter().copied().filter(|x| x.is_finite());
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x))))
}

/// The frame of a small plot over the x and y ranges.
fn small_frame(x: (Kind, f64, f64), y: (Kind, f64, f64)) -> Frame {
    let (from, to) = (SMALL.1 - 40.0, UNDER_LEGEND);
    let y = match y.0 {
        Kind::Linear => Scale::nice(y.0, y.1, y.2, from, to),
        Kind::Log => Scale::new(y.0, y.1 / 1.15, y.2 * 1.15, from, to),
    };
    Frame { x: Scale::new(x.0, x.1, x.2, 64.0, SMALL.0 - 12.0), y }
}

/// The distribution of a row's samples: a histogram (log x when they span over a factor of 8),
/// with the median and its 95 % CI marked. `None` without samples or a summary.
pub fn histogram(row: &Row, label: &str) -> Option<String> {
    let s = row.summary.as_ref()?;
    let mut sorted: Vec<f64> = row.samples.iter().copied().filter(|v| v.is_finite()).collect();
    let left_out = row.samples.len() - sorted.len();
    sorted.sort_by(f64::total_cmp);
    let (lo, max) = (*sorted.first()?, *sorted.last()?);
    let n = sorted.len();
    // Far outliers would squeeze the bulk into one bin: samples beyond the severe-outlier fence
    // (Q3 + 3 IQR, and over 10 % above the median, as `stats` counts them) are drawn as one
    // bar at the right edge instead.
    let q = |p: f64| sorted[((n - 1) as f64 * p).round() as usize];
    let (q1, median, q3) = (q(0.25), q(0.5), q(0.75));
    let fence = (q3 + 3.0 * (q3 - q1)).max(median + 0.1 * median.abs());
    // Over a range beyond the largest double the fence is infinite: no bar beyond it.
    let fence = if fence.is_finite() { fence } else { max };
    let beyond = sorted.iter().filter(|v| **v > fence).count();
    let hi = if beyond > 0 { fence } else { max };
    let kind = kind_for(lo, hi, 8.0);
    let x = Scale::new(kind, lo, hi, 0.0, 1.0);
    let per = if kind == Kind::Log { 2.0 } else { 1.0 };
    let bins = ((n as f64).sqrt() * per).round().clamp(8.0, 80.0) as usize;
    let mut counts = vec![0usize; bins];
    for v in sorted.iter().filter(|v| **v <= hi) {
        counts[((x.map(*v) * bins as f64).max(0.0) as usize).min(bins - 1)] += 1;
    }
    let top = counts.iter().copied().chain([beyond]).max().unwrap_or(1) as f64;
    let mut f = small_frame((kind, x.lo, x.hi), (Kind::Linear, 0.0, top));
    if beyond > 0 {
        f.x.to -= 40.0;
    }
    let mut svg = Svg::new(SMALL.0, SMALL.1);
    let unit = row.unit;
    let name = match unit {
        model::Unit::Ns => "time per operation",
        model::Unit::Bytes => "bytes per operation",
        model::Unit::Count => "count per operation",
    };
    f.axes(&mut svg, &|v| unit.format(v), &short_number, (name, "samples"));
    let edge = |i: usize| f.x.from + (f.x.to - f.x.from) * i as f64 / bins as f64;
    for (i, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let y = f.y.map(*c as f64);
        svg.rect(
            edge(i),
            y,
            (edge(i + 1) - edge(i) - 0.5).max(0.5),
            f.y.from - y,
            Paint::fill(colour::BLUE).alpha(0.75),
        );
    }
    if beyond > 0 {
        let (x0, y) = (f.x.to + 8.0, f.y.map(beyond as f64).min(f.y.from - 1.0));
        svg.rect(x0, y, 24.0, f.y.from - y, Paint::fill(colour::ORANGE).alpha(0.85));
        svg.text_in(x0 + 12.0, y - 3.0, Anchor::Middle, 10.0, colour::ORANGE, &short_number(beyond as f64));
        svg.text_in(x0 + 12.0, f.y.from + 13.0, Anchor::Middle, 10.0, colour::ORANGE, "beyond");
    }
    mark_median(&mut svg, &f, s.median, s.median_ci95);
    let mut legend = vec![
        (Swatch::Fill(colour::BLUE, 0.75), "samples"),
        (Swatch::Line(colour::DARK, 1.5, false), "median"),
        (Swatch::Fill(colour::BAND, 0.55), "95 % CI of the median"),
    ];
    if beyond > 0 {
        legend.push((Swatch::Fill(colour::ORANGE, 0.85), "severe outliers"));
    }
    svg.legend((8.0, LEGEND_Y), &legend);
    let tail = if beyond > 0 {
        format!("; {beyond} severe outliers beyond {} (up to {}) in the orange bar", unit.format(hi), unit.format(max))
    } else {
        String::new()
    };
    let title = format!(
        "{label}: distribution of {n} samples ({} x axis); median {} and its 95 % CI marked{tail}{}",
        if kind == Kind::Log { "log" } else { "linear" },
        unit.format(s.median),
        not_finite(left_out)
    );
    Some(svg.finish(&title))
}

/// The note on samples left out of a plot because they are not finite (NaN, ±inf).
fn not_finite(left_out: usize) -> String {
    match left_out {
        0 => String::new(),
        1 => "; 1 sample not finite (not a number, or infinite) left out".into(),
        k => format!("; {k} samples not finite (not a number, or infinite) left out"),
    }
}

/// A vertical line at the median over a band of its interval (at least 2 pixels wide); the
/// plot's legend names both.
fn mark_median(svg: &mut Svg, f: &Frame, median: f64, [lo, hi]: [f64; 2]) {
    let (_, _, t, b) = f.bounds();
    let (a, z) = (f.x.clamp(lo), f.x.clamp(hi));
    let w = (z - a).max(2.0);
    svg.rect((a + z) / 2.0 - w / 2.0, t, w, b - t, Paint::fill(colour::BAND).alpha(0.55));
    let m = f.x.clamp(median);
    svg.line((m, t), (m, b), Paint::stroke(colour::DARK, 1.5));
}

/// The rounds of a row's samples as index ranges (one range when the record does not add up).
fn rounds(row: &Row) -> Vec<std::ops::Range<usize>> {
    let n = row.samples.len();
    if row.samples_per_round.iter().sum::<usize>() != n || row.samples_per_round.is_empty() {
        return std::iter::once(0..n).collect();
    }
    let mut at = 0;
    row.samples_per_round
        .iter()
        .map(|k| {
            at += k;
            at - k..at
        })
        .collect()
}

/// At most `cap` points standing for `idx`: every sample when there are few, else the least
/// and the greatest of each stretch, in order, so a spike stays visible.
fn thin(samples: &[f64], idx: std::ops::Range<usize>, cap: usize) -> Vec<(usize, f64)> {
    let len = idx.len();
    if len <= cap {
        return idx.map(|i| (i, samples[i])).collect();
    }
    let per = len.div_ceil(cap / 2);
    let mut out = Vec::with_capacity(cap + 2);
    for s in idx.clone().step_by(per) {
        let span = s..(s + per).min(idx.end);
        let lo = span.clone().min_by(|a, b| samples[*a].total_cmp(&samples[*b]));
        let hi = span.max_by(|a, b| samples[*a].total_cmp(&samples[*b]));
        if let (Some(a), Some(b)) = (lo, hi) {
            let (first, second) = if a <= b { (a, b) } else { (b, a) };
            out.push((first, samples[first]));
            if second != first {
                out.push((second, samples[second]));
            }
        }
    }
    out
}

/// A row's samples in the order taken, each round in its own colour with its median drawn
/// across it, the rounds' boundaries dashed. `None` without samples.
pub fn series(row: &Row, label: &str) -> Option<String> {
    let (lo, hi) = finite_range(&row.samples)?;
    let n = row.samples.len();
    let kind = kind_for(lo, hi, 8.0);
    let f = small_frame((Kind::Linear, 0.0, n.max(2) as f64), (kind, lo, hi));
    let mut svg = Svg::new(SMALL.0, SMALL.1);
    let unit = row.unit;
    f.axes(&mut svg, &short_number, &|v| unit.format(v), ("sample, in the order taken", ""));
    let parts = rounds(row);
    let medians: Vec<f64> = row
        .summary
        .as_ref()
        .and_then(|s| s.structure.as_ref())
        .filter(|st| st.rounds.len() == parts.len())
        .map(|st| st.rounds.iter().map(|r| r.median).collect())
        .unwrap_or_default();
    let (_, _, t, b) = f.bounds();
    for (k, part) in parts.iter().enumerate() {
        let c = if k % 2 == 0 { colour::BLUE } else { colour::ORANGE };
        if k > 0 {
            let x = f.x.map(part.start as f64);
            svg.line((x, t), (x, b), Paint::stroke(colour::GREY, 1.0).dash());
        }
        let pts: Vec<(f64, f64)> = thin(&row.samples, part.clone(), 600)
            .into_iter()
            .filter(|(_, v)| v.is_finite())
            .map(|(i, v)| (f.x.map(i as f64 + 0.5), f.y.clamp(v)))
            .collect();
        if pts.len() <= 150 {
            pts.iter().for_each(|(x, y)| svg.circle(*x, *y, 1.6, Paint::fill(c)));
        }
        svg.polyline(&pts, Paint::stroke(c, 0.8).alpha(if pts.len() <= 150 { 0.45 } else { 0.9 }));
        if let Some(m) = medians.get(k).filter(|m| m.is_finite()) {
            let y = f.y.clamp(*m);
            svg.line((f.x.map(part.start as f64), y), (f.x.map(part.end as f64), y), Paint::stroke(colour::DARK, 1.5));
        }
        if parts.len() > 1 {
            let x = (f.x.map(part.start as f64) + f.x.map(part.end as f64)) / 2.0;
            svg.text_in(x, t + 11.0, Anchor::Middle, 10.0, colour::GREY, &format!("round {}", k + 1));
        }
    }
    let legend: Vec<(Swatch, &str)> = if parts.len() > 1 {
        vec![
            (Swatch::Dot(colour::BLUE), "rounds 1, 3, …"),
            (Swatch::Dot(colour::ORANGE), "rounds 2, 4, …"),
            (Swatch::Line(colour::DARK, 1.5, false), "round's median"),
            (Swatch::Line(colour::GREY, 1.0, true), "new round"),
        ]
    } else {
        vec![(Swatch::Dot(colour::BLUE), "samples"), (Swatch::Line(colour::DARK, 1.5, false), "median")]
    };
    svg.legend((8.0, LEGEND_Y), &legend);
    let title = format!(
        "{label}: {n} samples in the order taken, {} round{} ({} y axis); black lines: each round's median{}",
        parts.len(),
        if parts.len() == 1 { "" } else { "s" },
        if kind == Kind::Log { "log" } else { "linear" },
        not_finite(row.samples.iter().filter(|v| !v.is_finite()).count()),
    );
    Some(svg.finish(&title))
}

/// One point of a sweep: size, median and its 95 % CI.
pub struct SweepPoint {
    /// Bytes.
    pub size: u64,
    /// Median (ns).
    pub median: f64,
    /// Its 95 % CI.
    pub ci: [f64; 2],
}

/// The fitted cost at `size` bytes under the chosen model.
fn fitted(fit: &SweepFit, size: f64) -> f64 {
    match fit.chosen_segments() {
        Some(s) => {
            let bp = s.breakpoint_bytes as f64;
            s.fixed_ns + s.small_slope_ns_per_byte * size.min(bp) + s.large_slope_ns_per_byte * (size - bp).max(0.0)
        }
        None => fit.line.intercept_ns + fit.line.slope_ns_per_byte * size,
    }
}

/// A sweep: each size's median with its 95 % CI, and the fitted cost drawn through them, on
/// log-log axes (size 0 drawn a decade left of the smallest other size).
pub fn sweep(fit: &SweepFit, points: &[SweepPoint], label: &str) -> Option<String> {
    let positive = points.iter().map(|p| p.size).filter(|s| *s > 0).min().unwrap_or(1) as f64;
    let zero_at = positive / 10.0;
    let xpos = |s: f64| if s > 0.0 { s } else { zero_at };
    let max_size = points.iter().map(|p| p.size).max()? as f64;
    let mut ys: Vec<f64> = points.iter().flat_map(|p| [p.median, p.ci[0], p.ci[1]]).collect();
    let curve: Vec<(f64, f64)> = (0..=80)
        .map(|i| {
            let s = positive.min(max_size) * (max_size / positive.min(max_size)).powf(i as f64 / 80.0);
            (s, fitted(fit, s))
        })
        .collect();
    ys.extend(curve.iter().map(|c| c.1).chain([fitted(fit, 0.0)]));
    let ys: Vec<f64> = ys.into_iter().filter(|v| *v > 0.0 && v.is_finite()).collect();
    let (lo, hi) = finite_range(&ys)?;
    let (w, h) = (620.0, 300.0);
    let f = Frame {
        x: Scale::new(Kind::Log, zero_at / 1.6, xpos(max_size) * 1.6, 64.0, w - 16.0),
        y: Scale::new(Kind::Log, lo / 1.3, hi * 1.3, h - 40.0, UNDER_LEGEND + 4.0),
    };
    let mut svg = Svg::new(w, h);
    let ticks: Vec<f64> = points.iter().map(|p| xpos(p.size as f64)).collect();
    let yticks = f.y.ticks();
    let size_label = |v: f64| if v == zero_at { "0 B".to_string() } else { fmt_size(v.round() as u64) };
    f.axes_with(
        &mut svg,
        Ticks { at: &ticks, label: &size_label },
        Ticks { at: &yticks, label: &super::super::fmt_ns },
        ("message size (log; 0 at the left)", "time per operation (log)"),
    );
    let pts: Vec<(f64, f64)> = curve.iter().filter(|c| c.1 > 0.0).map(|(s, v)| (f.x.map(*s), f.y.clamp(*v))).collect();
    svg.polyline(&pts, Paint::stroke(colour::ORANGE, 2.0));
    let fixed = fitted(fit, 0.0);
    if fixed > 0.0 {
        let (x, y) = (f.x.map(zero_at), f.y.clamp(fixed));
        svg.line((x - 12.0, y), (x + 12.0, y), Paint::stroke(colour::ORANGE, 2.0));
    }
    if let Some(s) = fit.chosen_segments() {
        let x = f.x.map(xpos(s.breakpoint_bytes as f64));
        let (_, _, t, b) = f.bounds();
        svg.line((x, t), (x, b), Paint::stroke(colour::ORANGE, 1.0).dash());
        svg.text_in(x + 3.0, t + 10.0, Anchor::Start, 10.0, colour::ORANGE, "breakpoint");
    }
    for p in points.iter().filter(|p| p.median.is_finite()) {
        let x = f.x.map(xpos(p.size as f64));
        svg.line((x, f.y.clamp(p.ci[0])), (x, f.y.clamp(p.ci[1])), Paint::stroke(colour::BLUE, 1.5));
        svg.line((x - 4.0, f.y.clamp(p.ci[0])), (x + 4.0, f.y.clamp(p.ci[0])), Paint::stroke(colour::BLUE, 1.0));
        svg.line((x - 4.0, f.y.clamp(p.ci[1])), (x + 4.0, f.y.clamp(p.ci[1])), Paint::stroke(colour::BLUE, 1.0));
        svg.circle(x, f.y.clamp(p.median), 3.5, Paint::fill(colour::BLUE));
    }
    let mut legend = vec![
        (Swatch::Dot(colour::BLUE), "median"),
        (Swatch::Line(colour::BLUE, 1.5, false), "its 95 % CI"),
        (Swatch::Line(colour::ORANGE, 2.0, false), "fitted cost"),
    ];
    if fit.chosen_segments().is_some() {
        legend.push((Swatch::Line(colour::ORANGE, 1.0, true), "breakpoint"));
    }
    svg.legend((64.0, LEGEND_Y), &legend);
    let model = if fit.chosen_segments().is_some() { "two fitted segments" } else { "the fitted line" };
    let title =
        format!("{label}: sweep over {} sizes, medians with 95 % CIs (blue) and {model} (orange)", points.len());
    Some(svg.finish(&title))
}

/// A pair of bars: the paper's figure and today's.
pub struct Pair {
    /// The row's label.
    pub label: String,
    /// The paper's figure.
    pub then: f64,
    /// Today's, in the same unit; `None` below resolution (no bar, no ratio).
    pub now: Option<f64>,
    /// The change in words with its interval ("26.7× faster [25.1, 28.4]").
    pub change: String,
}

/// The papers' figures beside today's as horizontal bars on a log scale, in `unit` (as an
/// axis name), values formatted by `fmt`. Labels are never cut: the margin is as wide as the
/// longest, and a label longer than [`LABEL_MAX`] wraps onto more lines.
pub fn bars(pairs: &[Pair], unit: &str, fmt: &dyn Fn(f64) -> String, title: &str) -> Option<String> {
    let values: Vec<f64> = pairs.iter().flat_map(|p| [Some(p.then), p.now]).flatten().filter(|v| *v > 0.0).collect();
    let (lo, hi) = finite_range(&values)?;
    let labels = Labels::new(pairs.iter().map(|p| p.label.as_str()));
    let rows: Vec<f64> = labels.lines.iter().map(|l| (LINE * l.len() as f64 + 4.0).max(26.0)).collect();
    let (top, left) = (26.0, labels.width);
    let (w, h) = (left + 480.0 + 230.0, top + 36.0 + rows.iter().sum::<f64>());
    let f = Frame {
        x: Scale::nice(Kind::Log, lo, hi, left, left + 480.0),
        y: Scale::new(Kind::Linear, 0.0, 1.0, h - 36.0, top - 4.0),
    };
    let mut svg = Svg::new(w, h);
    let xticks = f.x.ticks();
    let none = Ticks { at: &[], label: &|_| String::new() };
    f.axes_with(&mut svg, Ticks { at: &xticks, label: fmt }, none, (&format!("{unit} (log scale)"), ""));
    let legend = [
        (Swatch::Fill(colour::ORANGE, 1.0), "the paper"),
        (Swatch::Fill(colour::BLUE, 1.0), "today, with the change and its 95 % interval"),
    ];
    svg.legend((left, LEGEND_Y), &legend);
    let mut y = top;
    for ((p, lines), row_h) in pairs.iter().zip(&labels.lines).zip(&rows) {
        labels.draw(&mut svg, lines, y + 14.0);
        for (k, (v, c)) in [(Some(p.then), colour::ORANGE), (p.now, colour::BLUE)].into_iter().enumerate() {
            let yb = y + 2.0 + 11.0 * k as f64;
            let Some(v) = v else {
                // Below resolution: no bar, the words instead.
                svg.text((f.x.from + 4.0, yb + 9.0), Anchor::Start, 10.0, &p.change);
                continue;
            };
            let x = f.x.clamp(v);
            svg.rect(f.x.from, yb, (x - f.x.from).max(1.0), 10.0, Paint::fill(c));
            // Today's value carries the change and its interval.
            let text = if k == 1 && !p.change.is_empty() { format!("{} · {}", fmt(v), p.change) } else { fmt(v) };
            svg.text((x + 4.0, yb + 9.0), Anchor::Start, 10.0, &text);
        }
        y += row_h;
    }
    Some(svg.finish(title))
}

/// The widest a column of labels grows before its labels wrap.
pub const LABEL_MAX: f64 = 560.0;

/// The line height of a wrapped label.
const LINE: f64 = 13.0;

/// A column of labels left of a plot, 11 pixels high: each label in full, on as many lines as
/// it needs within [`LABEL_MAX`], and the column's width.
struct Labels {
    lines: Vec<Vec<String>>,
    width: f64,
}

impl Labels {
    fn new<'a>(labels: impl Iterator<Item = &'a str>) -> Labels {
        let fit = ((LABEL_MAX - 16.0) / text_width("x", 11.0)) as usize;
        let lines: Vec<Vec<String>> = labels.map(|l| wrap(l, fit)).collect();
        let longest = lines.iter().flatten().map(|l| text_width(l, 11.0)).fold(0.0, f64::max);
        Labels { lines, width: (longest + 16.0).clamp(120.0, LABEL_MAX) }
    }

    /// A label's lines, right-aligned to the column, the first line's baseline at `y`.
    fn draw(&self, svg: &mut Svg, lines: &[String], y: f64) {
        svg.label((self.width - 8.0, y), Anchor::End, lines, LINE);
    }
}

/// `text` in lines of at most `fit` characters, broken at spaces (a word longer than a line
/// has a line of its own); nothing is left out.
fn wrap(text: &str, fit: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > fit {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// One line of a forest plot.
pub struct ForestLine<'a> {
    /// What was compared.
    pub label: String,
    /// The comparison.
    pub c: &'a Compared,
}

/// The colour of a verdict; any other verdict (compare's "inconclusive") in its own colour.
pub fn verdict_colour(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => colour::GREEN,
        Verdict::Slower => colour::RED,
        Verdict::NoChange => colour::GREY,
        Verdict::Inconclusive | Verdict::BelowResolution => colour::PURPLE,
    }
}

/// The ratios new / base with their 95 % CIs, one line each, a line at 1 and the noise band
/// shaded, coloured by verdict, with a legend of the band and the colours.
pub fn forest(lines: &[ForestLine], noise: f64, title: &str) -> Option<String> {
    // A result without a ratio (below resolution, no interval) has nothing to draw.
    let lines: Vec<(&ForestLine, stats::reading::Interval)> =
        lines.iter().filter_map(|l| Some((l, l.c.ratio_interval()?))).collect();
    let mut values: Vec<f64> = lines.iter().flat_map(|(_, r)| [r.estimate, r.ci95[0], r.ci95[1]]).collect();
    values.extend([1.0 - noise, 1.0 + noise, 1.0]);
    let values: Vec<f64> = values.into_iter().filter(|v| *v > 0.0 && v.is_finite()).collect();
    let (lo, hi) = finite_range(&values)?;
    let labels = Labels::new(lines.iter().map(|(l, _)| l.label.as_str()));
    let rows: Vec<f64> = labels.lines.iter().map(|l| (LINE * l.len() as f64 + 6.0).max(20.0)).collect();
    let (top, left) = (UNDER_LEGEND, labels.width);
    let (w, h) = (left + 420.0 + 150.0, top + 38.0 + rows.iter().sum::<f64>());
    let kind = kind_for(lo, hi, 3.0);
    let (lo, hi) = (lo / 1.02, hi * 1.02);
    let f = Frame {
        x: Scale::new(kind, lo, hi, left, left + 420.0),
        y: Scale::new(Kind::Linear, 0.0, 1.0, h - 36.0, top - 6.0),
    };
    let mut svg = Svg::new(w, h);
    let (_, _, t, b) = f.bounds();
    let band = (f.x.clamp(1.0 - noise), f.x.clamp(1.0 + noise));
    svg.rect(band.0, t, band.1 - band.0, b - t, Paint::fill(colour::GREY).alpha(0.18));
    let ratio_fmt = |v: f64| format!("{}×", sig4(v));
    let xticks = f.x.ticks();
    let none = Ticks { at: &[], label: &|_| String::new() };
    f.axes_with(&mut svg, Ticks { at: &xticks, label: &ratio_fmt }, none, ("new / base median (95 % CI)", ""));
    svg.line((f.x.map(1.0), t), (f.x.map(1.0), b), Paint::stroke(colour::INK, 1.2));
    let band_words = format!("noise band ± {} %", short_number(noise * 100.0));
    let legend = [
        (Swatch::Fill(colour::GREY, 0.18), band_words.as_str()),
        (Swatch::Dot(verdict_colour(Verdict::Faster)), "faster"),
        (Swatch::Dot(verdict_colour(Verdict::Slower)), "slower"),
        (Swatch::Dot(verdict_colour(Verdict::NoChange)), "no change"),
        (Swatch::Dot(verdict_colour(Verdict::Inconclusive)), "inconclusive"),
        (Swatch::Line(colour::INK, 2.0, false), "95 % CI"),
    ];
    svg.legend((8.0, LEGEND_Y), &legend);
    let mut y0 = t + 6.0;
    for (((l, r), lines), row_h) in lines.iter().zip(&labels.lines).zip(&rows) {
        let y = y0 + 10.0;
        let c = verdict_colour(l.c.verdict);
        labels.draw(&mut svg, lines, y + 4.0);
        svg.line((f.x.clamp(r.ci95[0]), y), (f.x.clamp(r.ci95[1]), y), Paint::stroke(c, 2.0));
        svg.circle(f.x.clamp(r.estimate), y, 4.0, Paint::fill(c));
        let text = format!("{} {}", ratio_fmt(r.estimate), l.c.verdict.text_for(l.c.unit));
        svg.text_in(w - 144.0, y + 4.0, Anchor::Start, 10.0, c, &text);
        y0 += row_h;
    }
    Some(svg.finish(title))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_wrap_and_lose_nothing() {
        assert_eq!(wrap("short", 20), vec!["short"]);
        let long = "Table 2: Digital UNIX: page fault write cold, other";
        let lines = wrap(long, 20);
        assert!(lines.len() > 1 && lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines.join(" "), long, "every word, in order");
        assert_eq!(wrap("averyveryverylongword x", 5), vec!["averyveryverylongword", "x"]);
        let labels = Labels::new([long, "x"].into_iter());
        assert_eq!(labels.lines[0], vec![long.to_string()], "one line where it fits");
        assert!(labels.width >= text_width(long, 11.0));
    }

    #[test]
    fn thinning_keeps_the_extremes_and_the_order() {
        let mut s: Vec<f64> = (0..10_000).map(|i| (i % 7) as f64).collect();
        s[5_000] = 1e6;
        let t = thin(&s, 0..s.len(), 600);
        assert!(t.len() <= 602, "{}", t.len());
        assert!(t.iter().any(|(i, v)| *i == 5_000 && *v == 1e6), "the spike survives");
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0), "in order");
        assert_eq!(thin(&s, 10..20, 600).len(), 10);
    }
}
