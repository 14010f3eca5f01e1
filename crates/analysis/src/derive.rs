//! Results computed from other results, after the measuring is done: the fitted cost of a
//! size sweep (fixed cost + cost per byte, by weighted least squares; see [`sweep_fits`]) and
//! differences such as `ctx.address_space`
//! (`ctx.process` − `ctx.thread`). A difference whose 95 % CI includes 0 is marked
//! [`Derived::below_resolution`] (the rule of [`stats::reading`]): reporters print its
//! bound, never a signed figure or a ratio. Reads no clock and prints nothing.

use crate::analyse::{BOOTSTRAP_SEED, empty_row, estimate_record, summary_record};
use model::unit::{fmt_ns, fmt_size};
use model::{
    COUNT_PARAMS, Check, CountParam, Derivation, Derived, Flag, Method, Params, Row, Rule, SIZE_PARAM, Status,
    SweepFit, SweepLine, SweepModel, SweepPoint, SweepSegments, Unit, Validation, Verdict,
};
use stats::reading::Interval;
use stats::{self, TwoSegmentFit, WeightedFit, WeightedLineFit};

/// Adds every derived row `rows` allows: a fit after the last point of each sweep, a
/// difference after the later of its two sources, a scaled result after its source.
pub fn add_derived(rows: &mut Vec<Row>, derivations: &[Derivation], method: Method) {
    let mut extra: Vec<(usize, Row)> = sweep_fits(rows, method);
    extra.extend(count_fits(rows, method));
    extra.extend(difference_rows(rows, derivations, method));
    extra.extend(scaled_rows(rows, derivations, method));
    // Insert from the back so earlier positions stay valid; stable for equal positions.
    extra.sort_by_key(|(pos, _)| *pos);
    for (pos, row) in extra.into_iter().rev() {
        rows.insert(pos + 1, row);
    }
}

/// A sweep point: a measured, timed row whose size parameter is a number, as (size in bytes,
/// median ns, 95 % CI of the median).
fn point(row: &Row) -> Option<(f64, f64, [f64; 2])> {
    let size = row.params.get(SIZE_PARAM)?.as_f64()?;
    let summary = row.summary.as_ref().filter(|_| row.unit == Unit::Ns)?;
    Some((size, summary.median, summary.median_ci95))
}

/// One fit row per group of rows (same id, same parameters but the size) with at least three
/// distinct sizes, each with the index of the group's last row.
///
/// The points' medians are fitted by weighted least squares, each weighted by the standard
/// error its 95 % CI implies ([`stats::fit_line_weighted`]); where the sweep has enough sizes a
/// line with one bend is fitted too ([`stats::fit_two_segments`]) and replaces the line when
/// it fits significantly and materially better ([`stats::TwoSegmentFit::preferred`]). The row
/// is flagged [`Flag::Nonlinear`] then, [`Flag::NegativeFixedCost`] when the fixed cost's CI
/// lies below 0, and [`Flag::PoorFit`] when a point lies over 3 standard errors and over
/// [`MAX_MISS_REL`] from the model, unless no per-byte cost is measurable (the slope's CI
/// includes 0: the points differ by noise only). Notes say how it was fitted, how well, and
/// name the points that steer the fit or lie far from it.
fn sweep_fits(rows: &[Row], method: Method) -> Vec<(usize, Row)> {
    let mut out = Vec::new();
    for SweepGroup { id, key, members, xs, ys, ses, distinct: sizes } in sweep_groups(rows, SIZE_PARAM, point) {
        let Ok(line) = stats::fit_line_weighted(&xs, &ys, &ses) else { continue };
        // Too few sizes for two segments is Ok(None); the input already passed the line fit.
        let segments = stats::fit_two_segments(&xs, &ys, &ses).ok().flatten();
        let bent = segments.as_ref().filter(|s| s.preferred());
        let fit = sweep_fit(&xs, &ys, &line, segments.as_ref());
        let first = &rows[members[0]];
        let mut params = key;
        params.insert(SIZE_PARAM.into(), serde_json::Value::String("fit".into()));
        params.insert("sizes".into(), serde_json::json!(sizes.iter().map(|&x| x as u64).collect::<Vec<u64>>()));
        let mut row = empty_row(&id, &first.about, params, method);
        judge_points(&mut row, rows, &members);
        match bent {
            Some(s) => judge_fit(&mut row, &fit, &s.fit, |x| s.predict(x), sizes.len()),
            None => judge_fit(&mut row, &fit, &line.fit, |x| line.line.predict(x), sizes.len()),
        }
        row.status = Status::of_flags(&row.flags);
        row.fit = Some(fit);
        out.push((*members.last().unwrap_or(&0), row));
    }
    out
}

/// A fit row's validation: every point of its sweep passed its checks (flagged otherwise).
fn judge_points(row: &mut Row, rows: &[Row], members: &[usize]) {
    let failed = members.iter().filter(|&&i| rows[i].validation.verdict == Verdict::Failed).count();
    row.validation = Validation::from_checks(vec![Check::new(
        "every point of the sweep passed its checks",
        format!("0 of {} points failed", members.len()),
        format!("{failed} failed"),
        failed == 0,
    )]);
    if failed > 0 {
        row.flags.push(Flag::CheckFailed);
    }
}

/// Measured rows that differ only in the parameter `swept`: their indices, and their points as
/// (x, y, standard error of y from its 95 % CI).
struct SweepGroup {
    id: String,
    key: Params,
    members: Vec<usize>,
    xs: Vec<f64>,
    ys: Vec<f64>,
    ses: Vec<f64>,
    /// The distinct x, ascending.
    distinct: Vec<f64>,
}

/// The groups of rows (same id, same parameters but `swept`) with at least three distinct x;
/// `point` gives a row's (x, y, 95 % CI of y), or `None` for a row that is not a point.
fn sweep_groups(rows: &[Row], swept: &str, point: impl Fn(&Row) -> Option<(f64, f64, [f64; 2])>) -> Vec<SweepGroup> {
    let mut groups: Vec<(String, Params, Vec<usize>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if r.derived.is_some() || r.fit.is_some() || point(r).is_none() {
            continue;
        }
        let mut key = r.params.clone();
        key.remove(swept);
        match groups.iter_mut().find(|(id, p, _)| *id == r.id && *p == key) {
            Some(g) => g.2.push(i),
            None => groups.push((r.id.clone(), key, vec![i])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(id, key, members)| {
            let points: Vec<_> = members.iter().filter_map(|&i| point(&rows[i])).collect();
            let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
            distinct.sort_by(f64::total_cmp);
            distinct.dedup();
            (distinct.len() >= 3).then(|| SweepGroup {
                id,
                key,
                members,
                xs: points.iter().map(|p| p.0).collect(),
                ys: points.iter().map(|p| p.1).collect(),
                ses: points.iter().map(|p| stats::se_from_ci95(p.2)).collect(),
                distinct,
            })
        })
        .collect()
}

/// One row per group of rows (same id, same parameters but one [`COUNT_PARAMS`] count) with at
/// least three distinct counts: the cost of a call as fixed + per unit × count, fitted by
/// weighted least squares to the points' medians (each weighted by the standard error its 95 %
/// CI implies), where a call's cost is the row's figure, or the figure × the count when the
/// figure is per unit. The row's figure is the cost per unit with its 95 % CI (a derived
/// estimate, below resolution when the CI includes 0); its notes give the fixed cost and how
/// well the line fits.
fn count_fits(rows: &[Row], method: Method) -> Vec<(usize, Row)> {
    let mut out = Vec::new();
    for count in &COUNT_PARAMS {
        let at = |r: &Row| -> Option<(f64, f64, [f64; 2])> {
            let n = r.params.get(count.name)?.as_f64()?;
            let summary = r.summary.as_ref().filter(|_| r.unit == Unit::Ns)?;
            let k = if count.figure_per_unit { n } else { 1.0 };
            Some((n, summary.median * k, summary.median_ci95.map(|c| c * k)))
        };
        for SweepGroup { id, key, members, xs, ys, ses, distinct: counts } in sweep_groups(rows, count.name, at) {
            let Ok(line) = stats::fit_line_weighted(&xs, &ys, &ses) else { continue };
            let row = count_fit_row(rows, &members, &id, key, count, &counts, &line, method);
            out.push((*members.last().unwrap_or(&0), row));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn count_fit_row(
    rows: &[Row],
    members: &[usize],
    id: &str,
    key: Params,
    count: &CountParam,
    counts: &[f64],
    line: &WeightedLineFit,
    method: Method,
) -> Row {
    let l = &line.line;
    let mut params = key;
    params.insert(count.name.into(), serde_json::Value::String("fit".into()));
    let about = format!("{}: the cost per {} (fitted over {})", rows[members[0]].about, count.unit, count.name);
    let mut row = empty_row(id, &about, params, method);
    row.unit = Unit::Ns;
    judge_points(&mut row, rows, members);
    let interval = Interval::new(l.slope, l.slope_ci95);
    let below_resolution = interval.includes_zero();
    let call = if count.figure_per_unit { format!("median × {}", count.name) } else { "median".into() };
    row.notes.push(format!(
        "a call's cost ({call}) = fixed {} [{}, {}] + {} [{}, {}] per {} (weighted least squares over {} = {}; \
         weighted R² {:.3}, χ² p = {:.2})",
        fmt_ns(l.intercept),
        fmt_ns(l.intercept_ci95[0]),
        fmt_ns(l.intercept_ci95[1]),
        fmt_ns(l.slope),
        fmt_ns(l.slope_ci95[0]),
        fmt_ns(l.slope_ci95[1]),
        count.unit,
        count.name,
        counts.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(", "),
        l.r_squared,
        line.fit.p_value,
    ));
    if below_resolution {
        row.notes.push(format!(
            "below resolution: the cost per {} is not measurably above 0 (|x| < {}): the call costs the same \
             at every {}",
            count.unit,
            fmt_ns(interval.bound()),
            count.name
        ));
    }
    row.status = Status::of_flags(&row.flags);
    row.derived = Some(Derived {
        formula: format!("slope of the cost of a call over {} (ns per {})", count.name, count.unit),
        estimate: model::Estimate { point: l.slope, ci95: l.slope_ci95 },
        below_resolution,
    });
    row
}

/// A point over 3 standard errors from a sweep's model and further than this fraction of its
/// median flags the fit [`Flag::PoorFit`]: significant and material.
pub const MAX_MISS_REL: f64 = 0.10;

/// The result-file record of a sweep's fits; the points' diagnostics are those of the chosen
/// model.
fn sweep_fit(xs: &[f64], ys: &[f64], line: &WeightedLineFit, segments: Option<&TwoSegmentFit>) -> SweepFit {
    let bent = segments.filter(|s| s.preferred());
    let diag = bent.map_or(&line.fit, |s| &s.fit);
    let points = xs
        .iter()
        .zip(ys)
        .enumerate()
        .map(|(i, (&x, &y))| SweepPoint {
            size_bytes: x as u64,
            median_ns: y,
            se_ns: diag.ses[i],
            leverage: diag.leverage[i],
            std_residual: diag.std_residuals[i],
            flagged: diag.high_leverage(i) || diag.outlying(i),
        })
        .collect();
    let (l, f) = (&line.line, &line.fit);
    SweepFit {
        method: "weighted least squares".into(),
        model: if bent.is_some() { SweepModel::TwoSegments } else { SweepModel::Line },
        line: SweepLine {
            intercept_ns: l.intercept,
            intercept_ci95_ns: l.intercept_ci95,
            slope_ns_per_byte: l.slope,
            slope_ci95_ns_per_byte: l.slope_ci95,
            r_squared: l.r_squared,
            chi2: f.chi2,
            dof: f.dof,
            reduced_chi2: f.reduced_chi2,
            p_value: f.p_value,
        },
        segments: segments.map(|s| SweepSegments {
            breakpoint_bytes: s.breakpoint as u64,
            fixed_ns: s.intercept,
            fixed_ci95_ns: s.intercept_ci95,
            small_slope_ns_per_byte: s.small_slope,
            small_slope_ci95_ns_per_byte: s.small_slope_ci95,
            large_slope_ns_per_byte: s.large_slope,
            large_slope_ci95_ns_per_byte: s.large_slope_ci95,
            chi2: s.fit.chi2,
            dof: s.fit.dof,
            reduced_chi2: s.fit.reduced_chi2,
            p_value: s.fit.p_value,
            vs_line_p_value: s.vs_line_p_value,
            breakpoints_tried: s.candidates,
        }),
        points,
    }
}

/// Flags and notes of a sweep's fit row, from the chosen model: its diagnostics `diag` and its
/// fitted value at a size, `predict`.
fn judge_fit(row: &mut Row, fit: &SweepFit, diag: &WeightedFit, predict: impl Fn(f64) -> f64, sizes: usize) {
    let per_kib = |ns_per_byte: f64| format!("{}/KiB", fmt_ns(ns_per_byte * 1024.0));
    let scatter = if diag.variance_scale > 1.0 {
        format!(
            "χ²/dof = {:.1} ({}): the points scatter beyond their own CIs, so the fit's CIs are widened {:.1}×",
            diag.reduced_chi2,
            fmt_p(diag.p_value),
            diag.variance_scale.sqrt()
        )
    } else {
        format!(
            "χ²/dof = {:.2} ({}): the points agree with the model within their CIs",
            diag.reduced_chi2,
            fmt_p(diag.p_value)
        )
    };
    match fit.chosen_segments() {
        None => row.notes.push(format!(
            "weighted least-squares line through the medians at {sizes} sizes, each weighted by 1/se² (se from its median's 95 % CI); {scatter}"
        )),
        Some(s) => {
            row.flags.push(Flag::Nonlinear);
            let [a, b] = s.small_slope_ci95_ns_per_byte.map(&per_kib);
            let [c, d] = s.large_slope_ci95_ns_per_byte.map(&per_kib);
            row.notes.push(format!(
                "the cost per byte changes at {}: {} (95 % CI {a} – {b}) up to it, {} ({c} – {d}) above; two weighted least-squares segments through the medians at {sizes} sizes, each weighted by 1/se² (se from its median's 95 % CI), fit better than one line (F test {}, corrected for the {} breakpoints tried); {scatter}",
                fmt_size(s.breakpoint_bytes),
                per_kib(s.small_slope_ns_per_byte),
                per_kib(s.large_slope_ns_per_byte),
                fmt_p(s.vs_line_p_value),
                s.breakpoints_tried,
            ));
        }
    }
    // A slope whose CI includes zero means the sizes cost the same: misses measure noise.
    let (_, per_byte_ci) = fit.per_byte_ns();
    let flat = per_byte_ci[0] <= 0.0 && 0.0 <= per_byte_ci[1];
    if flat {
        row.notes.push(
            "no per-byte cost measurable over these sizes (the slope's 95 % CI includes 0): the fixed cost is the figure"
                .into(),
        );
    }
    let far = |i: usize, p: &SweepPoint| {
        diag.outlying(i) && (p.median_ns - predict(p.size_bytes as f64)).abs() > MAX_MISS_REL * p.median_ns.abs()
    };
    if !flat && fit.points.iter().enumerate().any(|(i, p)| far(i, p)) {
        row.flags.push(Flag::PoorFit);
    }
    if fit.fixed_ns().1[1] < 0.0 {
        row.flags.push(Flag::NegativeFixedCost);
    }
    let steering: Vec<String> = (fit.points.iter().enumerate())
        .filter(|&(i, _)| diag.high_leverage(i))
        .map(|(_, p)| format!("{} ({:.2})", fmt_size(p.size_bytes), p.leverage))
        .collect();
    let mut off: Vec<(&SweepPoint, f64)> = (fit.points.iter().enumerate())
        .filter(|&(i, _)| diag.outlying(i))
        .filter_map(|(_, p)| p.std_residual.map(|r| (p, r)))
        .collect();
    let n = fit.points.len();
    let named = |off: &[(&SweepPoint, f64)]| {
        off.iter().map(|(p, r)| format!("{} ({r:+.1})", fmt_size(p.size_bytes))).collect::<Vec<_>>().join(", ")
    };
    let mut parts = Vec::new();
    if !steering.is_empty() {
        let p = diag.n - diag.dof;
        parts.push(format!(
            "points that steer the fit (leverage over 2p/n = {:.2}): {}",
            2.0 * p as f64 / diag.n as f64,
            steering.join(", ")
        ));
    }
    if 2 * off.len() > n {
        // Most points: the model describes the sweep only roughly; name the furthest.
        let k = off.len();
        off.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        off.truncate(3);
        parts.push(format!(
            "{k} of {n} points lie over 3 of their standard errors from the model, the furthest {}",
            named(&off)
        ));
    } else if !off.is_empty() {
        parts.push(format!("points over 3 of their standard errors from the model: {}", named(&off)));
    }
    if !parts.is_empty() {
        row.notes.push(parts.join("; "));
    }
}

/// A p-value for a note, with its relation: `p = 0.42`, `p = 0.003`, `p = 4e-9`, `p < 1e-15`.
fn fmt_p(p: f64) -> String {
    if p >= 0.01 {
        format!("p = {p:.2}")
    } else if p >= 0.001 {
        format!("p = {p:.3}")
    } else if p >= 1e-15 {
        format!("p = {p:.0e}")
    } else {
        "p < 1e-15".into()
    }
}

/// One row per parameter set under which both sources of a difference were measured, with the
/// index of the later source row.
fn difference_rows(rows: &[Row], derivations: &[Derivation], method: Method) -> Vec<(usize, Row)> {
    let mut out = Vec::new();
    for d in derivations {
        let Rule::Difference { minuend, subtrahend } = d.rule else { continue };
        for (i, a) in rows.iter().enumerate() {
            if a.id != minuend || a.summary.is_none() || a.derived.is_some() || a.fit.is_some() {
                continue;
            }
            let Some((j, b)) = rows
                .iter()
                .enumerate()
                .find(|(_, b)| b.id == subtrahend && b.params == a.params && b.summary.is_some())
            else {
                continue;
            };
            if a.unit != b.unit {
                continue;
            }
            let Ok(estimate) = stats::median_difference(&a.samples, &b.samples, BOOTSTRAP_SEED) else {
                continue;
            };
            let estimate = estimate_record(estimate);
            let interval = Interval::new(estimate.point, estimate.ci95);
            let below_resolution = interval.includes_zero();
            let mut row = empty_row(d.id, d.about, a.params.clone(), method);
            row.unit = a.unit;
            let name = format!("{minuend} costs more than {subtrahend}");
            // Below resolution the sign is unknown: the check cannot be made, not failed.
            let sign = if below_resolution {
                Check::impossible(name, format!("below resolution (|x| < {})", a.unit.format(interval.bound())))
            } else {
                Check::new(
                    name,
                    "a positive difference".to_string(),
                    a.unit.format(estimate.point),
                    estimate.point > 0.0,
                )
            };
            let mut checks = vec![sign];
            for (src, verdict) in [(minuend, a.validation.verdict), (subtrahend, b.validation.verdict)] {
                checks.push(match verdict {
                    Verdict::Validated => Check::new(format!("{src} validated"), "validated", "validated", true),
                    Verdict::Failed => Check::new(format!("{src} validated"), "validated", "a check failed", false),
                    Verdict::NotValidated => Check::impossible(format!("{src} validated"), "not validated"),
                });
            }
            row.validation = Validation::from_checks(checks);
            if row.validation.verdict == Verdict::Failed {
                row.flags.push(Flag::CheckFailed);
            }
            for f in a.flags.iter().chain(&b.flags) {
                if *f != Flag::CheckFailed && !row.flags.contains(f) {
                    row.flags.push(*f);
                }
            }
            row.notes
                .push(format!("difference of the medians, {}; 95 % CI by bootstrap of both sample sets", d.formula()));
            if below_resolution {
                row.notes.push(format!(
                    "below resolution: the 95 % CI includes 0 (|x| < {}); no figure or ratio is derived from it",
                    a.unit.format(interval.bound())
                ));
            }
            row.status = Status::of_flags(&row.flags);
            row.derived = Some(Derived { formula: d.formula(), estimate, below_resolution });
            out.push((i.max(j), row));
        }
    }
    out
}

/// One row per measured result of a scaled derivation's source at its size: the samples
/// scaled, summarised afresh, with the source's checks, flags and notes.
fn scaled_rows(rows: &[Row], derivations: &[Derivation], method: Method) -> Vec<(usize, Row)> {
    let mut out = Vec::new();
    for d in derivations {
        let Rule::Scaled { source, factor, bytes } = d.rule else { continue };
        for (i, src) in rows.iter().enumerate() {
            // A source without a size carries no payload: it is at 0 bytes.
            let size = src.params.get(SIZE_PARAM).map_or(Some(0.0), |v| v.as_f64());
            let at_size = size == Some(bytes as f64);
            if src.id != source || !at_size || src.summary.is_none() || src.derived.is_some() {
                continue;
            }
            let samples: Vec<f64> = src.samples.iter().map(|x| x * factor).collect();
            let Ok(summary) = scaled_summary(src, &samples) else { continue };
            let summary = summary_record(summary);
            let mut row = empty_row(d.id, d.about, src.params.clone(), method);
            row.unit = src.unit;
            row.iterations_per_sample = src.iterations_per_sample;
            row.warmup_iterations = src.warmup_iterations;
            row.stop = src.stop;
            row.validation = src.validation.clone();
            row.flags = src.flags.clone();
            row.notes = vec![format!("the same measurement as {source}, scaled: {}", d.formula())];
            row.status = src.status;
            row.cycles =
                src.cycles.as_ref().map(|c| model::Cycles { source: c.source.clone(), median: c.median * factor });
            // A rescaled measurement is no difference: it is never "below resolution".
            row.derived = Some(Derived {
                formula: d.formula(),
                estimate: model::Estimate { point: summary.median, ci95: summary.median_ci95 },
                below_resolution: false,
            });
            row.samples = samples;
            row.samples_per_round = src.samples_per_round.clone();
            row.summary = Some(summary);
            out.push((i, row));
        }
    }
    out
}

/// The summary of a source's samples scaled, with the source's rounds and start-up cuts (so
/// the interval has the same structure as the source's).
fn scaled_summary(src: &Row, scaled: &[f64]) -> Result<stats::Summary, stats::StatsError> {
    let Some(structure) = src.summary.as_ref().and_then(|s| s.structure.as_ref()) else {
        return stats::summarize(scaled, BOOTSTRAP_SEED);
    };
    let mut rounds: Vec<&[f64]> = Vec::new();
    let mut at = 0;
    for r in &structure.rounds {
        rounds.push(scaled.get(at..at + r.n).unwrap_or(&[]));
        at += r.n;
    }
    let drops: Vec<usize> = structure.rounds.iter().map(|r| r.dropped).collect();
    stats::summarize_rounds(&rounds, Some(&drops), stats::DEFAULT_RESAMPLES, BOOTSTRAP_SEED, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse;
    use bench::sampler::SamplerConfig;
    use model::SweepFit;
    use model::TimerInfo;
    use model::{Measured, Samples};

    fn measured_row(id: &'static str, params: Params, samples: Vec<f64>) -> Row {
        let m = Measured::new(
            Samples { per_op_ns: samples, iterations_per_sample: 1, ..Samples::default() },
            vec![Check::new("ok", "ok", "ok", true)],
        );
        let timer = TimerInfo::for_tests();
        analyse::rounds_row(
            id,
            "fake",
            params,
            &[Ok(m)],
            &SamplerConfig::standard().record(),
            &timer,
            stats::DEFAULT_RESAMPLES,
        )
    }

    fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn jitter(center: f64) -> Vec<f64> {
        (0..60).map(|i| center + (i % 7) as f64 * 0.01 * center).collect()
    }

    #[test]
    fn a_count_sweep_gets_its_cost_per_unit_and_fixed_cost() {
        // Per call: 60 ns + 0.1 ns per instruction, two filters, each its own fit.
        let mut rows = Vec::new();
        for filter in ["args", "number"] {
            for n in [2u64, 10, 100, 1000] {
                let slope = if filter == "args" { 0.1 } else { 0.0 };
                let p = params(&[("filter", filter.into()), ("insns", n.into())]);
                rows.push(measured_row("interpose.seccomp", p, jitter(60.0 + slope * n as f64)));
            }
        }
        // Per operation at batch b: (300 ns fixed + 20 ns × b) / b.
        for b in [1u64, 8, 32, 128] {
            let p = params(&[("batch", b.into())]);
            rows.push(measured_row("syscall.io_uring_nop", p, jitter((300.0 + 20.0 * b as f64) / b as f64)));
        }
        add_derived(&mut rows, &[], Method::Adaptive);
        let fits: Vec<&Row> = rows.iter().filter(|r| r.derived.is_some()).collect();
        assert_eq!(fits.len(), 3, "{:?}", rows.iter().map(|r| (&r.id, &r.params)).collect::<Vec<_>>());
        let slope = |r: &Row| r.derived.as_ref().unwrap().estimate.point;
        assert_eq!(fits[0].params["filter"], "args");
        assert_eq!(fits[0].params["insns"], "fit");
        assert!((slope(fits[0]) - 0.1 * 1.03).abs() < 0.01, "{}", slope(fits[0]));
        assert!(!fits[0].derived.as_ref().unwrap().below_resolution);
        assert!(fits[1].derived.as_ref().unwrap().below_resolution, "a flat sweep costs nothing per unit");
        assert!((slope(fits[2]) - 20.0 * 1.03).abs() < 1.0, "{}", slope(fits[2]));
        assert!(fits[2].notes[0].contains("fixed 30"), "{}", fits[2].notes[0]);
        // Each fit follows the last point of its group.
        let at = rows.iter().position(|r| r.derived.is_some()).unwrap();
        assert_eq!(rows[at - 1].params["insns"], 1000);
    }

    #[test]
    fn a_sweep_gets_one_fit_row_after_its_last_point() {
        let mut rows = Vec::new();
        for ends in ["threads", "processes"] {
            for size in [0.0, 1024.0, 4096.0, 65536.0] {
                let p = params(&[("ends", ends.into()), (SIZE_PARAM, serde_json::json!(size))]);
                rows.push(measured_row("ipc.pipe", p, jitter(1000.0 + 0.25 * size)));
            }
        }
        rows.push(measured_row("other.thing", Params::new(), jitter(5.0)));
        add_derived(&mut rows, &[], Method::Adaptive);
        let fits: Vec<(usize, &Row)> = rows.iter().enumerate().filter(|(_, r)| r.fit.is_some()).collect();
        assert_eq!(fits.len(), 2);
        assert_eq!(fits[0].0, 4);
        assert_eq!(fits[1].0, 9);
        let fit = fits[0].1.fit.as_ref().unwrap();
        assert!((fit.line.slope_ns_per_byte - 0.25 * 1.03).abs() < 0.01, "{fit:?}");
        assert!(fit.line.r_squared > 0.99);
        assert_eq!((fit.model, fit.points.len(), fit.method.as_str()), (SweepModel::Line, 4, "weighted least squares"));
        assert_eq!(fits[0].1.params["bytes"], "fit");
        assert_eq!(fits[0].1.params["ends"], "threads");
        assert_eq!(fits[0].1.status, Status::Ok);
    }

    #[test]
    fn fewer_than_three_sizes_make_no_fit_and_bad_lines_are_flagged() {
        let two: Vec<Row> = [0.0, 8.0]
            .iter()
            .map(|&s| measured_row("ipc.pipe", params(&[(SIZE_PARAM, serde_json::json!(s))]), jitter(100.0)))
            .collect();
        assert!(sweep_fits(&two, Method::Adaptive).is_empty());
        let zigzag: Vec<Row> = [(0.0, 100.0), (8.0, 900.0), (16.0, 100.0), (24.0, 900.0)]
            .iter()
            .map(|&(s, y)| measured_row("ipc.pipe", params(&[(SIZE_PARAM, serde_json::json!(s))]), jitter(y)))
            .collect();
        let fits = sweep_fits(&zigzag, Method::Adaptive);
        assert_eq!(fits.len(), 1);
        assert!(!fits[0].1.flags.contains(&Flag::PoorFit), "a slope indistinguishable from 0 is flat, not poor");
        assert!(fits[0].1.notes.iter().any(|n| n.contains("no per-byte cost")));
        // 100 + 2k⁴ at k = 0…9: clearly rising, clearly not a line.
        let curved: Vec<Row> = (0..10)
            .map(|k| {
                let (s, y) = (k as f64 * 1000.0, 100.0 + 2.0 * (k as f64).powi(4));
                measured_row("ipc.pipe", params(&[(SIZE_PARAM, serde_json::json!(s))]), jitter(y))
            })
            .collect();
        let fits = sweep_fits(&curved, Method::Adaptive);
        assert!(fits[0].1.flags.contains(&Flag::PoorFit), "{:?}", fits[0].1.fit);
    }

    /// The sizes of `osprim run --sweep`.
    const SWEEP: [f64; 7] = [0.0, 8.0, 64.0, 512.0, 4096.0, 65536.0, 1_048_576.0];

    fn sweep_rows(sizes: &[f64], cost: impl Fn(f64) -> f64) -> Vec<Row> {
        sizes
            .iter()
            .map(|&s| measured_row("ipc.pipe", params(&[(SIZE_PARAM, serde_json::json!(s))]), jitter(cost(s))))
            .collect()
    }

    #[test]
    fn a_bent_sweep_gets_two_segments_and_the_nonlinear_flag() {
        // 0.25 ns/byte up to 64 KiB, 4× that above. `jitter` puts the medians at 1.03 × cost.
        let rows = sweep_rows(&SWEEP, |x| 2000.0 + 0.25 * x.min(65536.0) + 1.0 * (x - 65536.0).max(0.0));
        let fits = sweep_fits(&rows, Method::Adaptive);
        let row = &fits[0].1;
        let fit = row.fit.as_ref().unwrap();
        assert_eq!(fit.model, SweepModel::TwoSegments);
        let seg = fit.chosen_segments().unwrap();
        assert_eq!(seg.breakpoint_bytes, 65536);
        assert!((seg.small_slope_ns_per_byte - 0.25 * 1.03).abs() < 1e-3, "{seg:?}");
        assert!((seg.large_slope_ns_per_byte - 1.03).abs() < 1e-3, "{seg:?}");
        assert!((fit.fixed_ns().0 - 2060.0).abs() < 5.0 && fit.per_byte_ns().0 == seg.large_slope_ns_per_byte);
        assert_eq!(row.flags, [Flag::Nonlinear]);
        assert_eq!(row.status, Status::Advisory);
        let note = row.notes.iter().find(|n| n.contains("changes at 64 KiB")).expect("the note names the bend");
        assert!(note.contains("263.7 ns/KiB") && note.contains("1.055 µs/KiB"), "{note}");
        // The JSON a reader sees.
        let json = serde_json::to_value(fit).unwrap();
        assert_eq!(json["method"], "weighted least squares");
        assert_eq!(json["model"], "two_segments");
        assert_eq!(json["segments"]["breakpoint_bytes"], 65536);
        assert!(json["line"]["slope_ci95_ns_per_byte"].is_array() && json["line"]["p_value"].is_number());
        let last = &json["points"][6];
        assert_eq!(last["size_bytes"], 1_048_576);
        for key in ["median_ns", "se_ns", "leverage", "std_residual", "flagged"] {
            assert!(last.get(key).is_some(), "{key} in {last}");
        }
        let back: SweepFit = serde_json::from_value(json).unwrap();
        assert_eq!(&back, fit);
    }

    #[test]
    fn a_straight_sweep_keeps_one_line() {
        let rows = sweep_rows(&SWEEP, |x| 2000.0 + 0.25 * x);
        let fits = sweep_fits(&rows, Method::Adaptive);
        let row = &fits[0].1;
        let fit = row.fit.as_ref().unwrap();
        assert_eq!(fit.model, SweepModel::Line);
        assert!(fit.segments.as_ref().is_some_and(|s| s.vs_line_p_value > 0.05), "{fit:?}");
        assert!((fit.line.slope_ns_per_byte - 0.25 * 1.03).abs() < 1e-4, "{fit:?}");
        assert!(fit.line.slope_ci95_ns_per_byte[0] > 0.0);
        assert!((fit.points.iter().map(|p| p.leverage).sum::<f64>() - 2.0).abs() < 1e-9);
        assert!(row.flags.is_empty(), "{:?}", row.flags);
        assert_eq!(row.status, Status::Ok);
        assert!(row.notes[0].starts_with("weighted least-squares line through the medians at 7 sizes"));
        assert!(
            !row.notes.iter().any(|n| n.contains("least-squares line through the medians at 7 sizes (the largest"))
        );
    }

    #[test]
    fn a_negative_fixed_cost_with_a_tight_ci_is_flagged() {
        // Large sizes only, on a line that crosses 0 at 12 KiB.
        let rows = sweep_rows(&[16384.0, 65536.0, 262_144.0, 1_048_576.0], |x| -12_000.0 + x);
        let fits = sweep_fits(&rows, Method::Adaptive);
        let row = &fits[0].1;
        let (fixed, ci) = row.fit.as_ref().unwrap().fixed_ns();
        assert!(ci[1] < 0.0 && (fixed + 12_360.0).abs() < 50.0, "{fixed} {ci:?}");
        assert_eq!(row.flags, [Flag::NegativeFixedCost]);
        assert_eq!(Flag::NegativeFixedCost.label(), "negative-fixed");
    }

    #[test]
    fn a_point_far_off_the_line_is_named_and_flags_a_poor_fit() {
        // Four sizes (too few for two segments); the 4 KiB point costs 1.5× the line.
        let rows = sweep_rows(&[0.0, 4096.0, 65536.0, 1_048_576.0], |x| {
            (2000.0 + 0.25 * x) * if x == 4096.0 { 1.5 } else { 1.0 }
        });
        let fits = sweep_fits(&rows, Method::Adaptive);
        let row = &fits[0].1;
        assert!(row.fit.as_ref().unwrap().segments.is_none());
        assert!(row.flags.contains(&Flag::PoorFit), "{:?} {:?}", row.flags, row.fit);
        let fit = row.fit.as_ref().unwrap();
        assert!(fit.points[1].flagged && fit.points[1].std_residual.is_some_and(|r| r > 3.0), "{fit:?}");
        assert!(row.notes.iter().any(|n| n.contains("standard errors from the model") && n.contains("4 KiB (+")));
    }

    #[test]
    fn a_difference_pairs_equal_parameters() {
        const D: Derivation = Derivation::difference("ctx.address_space", "as switch", "ctx.process", "ctx.thread");
        let same = params(&[("placement", "same_cpu".into())]);
        let mut rows = vec![
            measured_row("ctx.thread", same.clone(), jitter(1000.0)),
            measured_row("ctx.process", same.clone(), jitter(1300.0)),
            measured_row("ctx.process", params(&[("placement", "cross_cpu".into())]), jitter(9000.0)),
        ];
        add_derived(&mut rows, &[D], Method::Adaptive);
        assert_eq!(rows.len(), 4);
        let d = &rows[2];
        assert_eq!(d.id, "ctx.address_space");
        assert_eq!(d.params, same);
        let est = &d.derived.as_ref().unwrap().estimate;
        assert!((est.point - 300.0).abs() < 20.0, "{}", est.point);
        assert!(est.ci95[0] <= est.point && est.point <= est.ci95[1]);
        assert_eq!(d.validation.verdict, Verdict::Validated);
        assert_eq!(d.median(), Some(est.point));
    }

    #[test]
    fn a_scaled_row_doubles_the_zero_byte_point_only() {
        const D: Derivation = Derivation::scaled("rpc.pipe", "null rpc", "ipc.pipe", 2.0, 0);
        let mut rows = Vec::new();
        for size in [0.0, 64.0] {
            rows.push(measured_row("ipc.pipe", params(&[(SIZE_PARAM, serde_json::json!(size))]), jitter(1000.0)));
        }
        add_derived(&mut rows, &[D], Method::Adaptive);
        let rpc: Vec<&Row> = rows.iter().filter(|r| r.id == "rpc.pipe").collect();
        assert_eq!(rpc.len(), 1);
        assert_eq!(rows[1].id, "rpc.pipe", "right after its source");
        assert_eq!(rpc[0].params[SIZE_PARAM], serde_json::json!(0.0));
        let (src, twice) = (rows[0].summary.as_ref().unwrap(), rpc[0].summary.as_ref().unwrap());
        assert!((twice.median - 2.0 * src.median).abs() < 1e-9);
        assert_eq!(rpc[0].samples.len(), rows[0].samples.len());
        assert_eq!(rpc[0].median(), Some(twice.median));
    }

    #[test]
    fn a_difference_whose_interval_includes_zero_is_below_resolution() {
        const D: Derivation = Derivation::difference("x.diff", "d", "x.a", "x.b");
        // Two sample sets from one distribution: their difference is noise around 0.
        let rows =
            vec![measured_row("x.a", Params::new(), jitter(100.0)), measured_row("x.b", Params::new(), jitter(100.0))];
        let out = difference_rows(&rows, &[D], Method::Adaptive);
        let row = &out[0].1;
        let d = row.derived.as_ref().unwrap();
        assert!(d.estimate.ci95[0] <= 0.0 && 0.0 <= d.estimate.ci95[1], "{:?}", d.estimate);
        assert!(d.below_resolution);
        assert_eq!(row.validation.checks[0].ok, None, "the sign cannot be checked");
        assert!(!row.flags.contains(&Flag::CheckFailed));
        assert!(row.notes.iter().any(|n| n.starts_with("below resolution")), "{:?}", row.notes);
        let json = serde_json::to_value(d).unwrap();
        assert_eq!(json["below_resolution"], true);
        // A clear difference is not.
        let rows =
            vec![measured_row("x.a", Params::new(), jitter(300.0)), measured_row("x.b", Params::new(), jitter(100.0))];
        let d = difference_rows(&rows, &[D], Method::Adaptive)[0].1.derived.clone().unwrap();
        assert!(!d.below_resolution && serde_json::to_value(&d).unwrap().get("below_resolution").is_none());
    }

    #[test]
    fn a_negative_difference_fails_its_check() {
        const D: Derivation = Derivation::difference("x.diff", "d", "x.a", "x.b");
        let rows =
            vec![measured_row("x.a", Params::new(), jitter(100.0)), measured_row("x.b", Params::new(), jitter(200.0))];
        let out = difference_rows(&rows, &[D], Method::Adaptive);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.validation.verdict, Verdict::Failed);
        assert!(out[0].1.flags.contains(&Flag::CheckFailed));
    }
}
