//! Results computed from other results, after the measuring is done: the fitted line of a
//! size sweep (fixed cost + cost per byte) and differences such as `ctx.address_space`
//! (`ctx.process` − `ctx.thread`). Reads no clock and prints nothing.

use crate::analyse::{BOOTSTRAP_SEED, empty_row};
use crate::bench::{Check, Params};
use crate::model::{Derived, Flag, Row, Status, Validation, Verdict};
use crate::sampler::Method;
use crate::stats;

/// The parameter that carries a message size in bytes.
pub const SIZE_PARAM: &str = "bytes";

/// R² under which a sweep's line is flagged as a poor description of the points.
pub const MIN_R_SQUARED: f64 = 0.95;

/// A result computed from measured ones after the run.
#[derive(Debug, Clone, Copy)]
pub struct Derivation {
    /// Its id, e.g. `ctx.address_space`.
    pub id: &'static str,
    /// What it measures.
    pub about: &'static str,
    /// How it is computed.
    pub rule: Rule,
}

/// How a derived result is computed.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// The difference of two benchmarks' medians under equal parameters, with a bootstrap CI.
    Difference {
        /// The benchmark subtracted from.
        minuend: &'static str,
        /// The benchmark subtracted.
        subtrahend: &'static str,
    },
    /// Another benchmark's samples times a factor, for its results at one message size (a
    /// result without a size counts as 0 bytes); e.g. a null RPC: the whole ping-pong whose
    /// half is `ipc.pipe`, at 0 bytes.
    Scaled {
        /// The measured benchmark.
        source: &'static str,
        /// Each sample is multiplied by this.
        factor: f64,
        /// The message size the source result must have.
        bytes: u64,
    },
}

impl Derivation {
    /// A difference `minuend − subtrahend`.
    pub const fn difference(
        id: &'static str,
        about: &'static str,
        minuend: &'static str,
        subtrahend: &'static str,
    ) -> Derivation {
        Derivation { id, about, rule: Rule::Difference { minuend, subtrahend } }
    }

    /// `factor ×` the results of `source` at `bytes`.
    pub const fn scaled(
        id: &'static str,
        about: &'static str,
        source: &'static str,
        factor: f64,
        bytes: u64,
    ) -> Derivation {
        Derivation { id, about, rule: Rule::Scaled { source, factor, bytes } }
    }

    /// The measured benchmarks it needs.
    pub fn sources(&self) -> Vec<&'static str> {
        match self.rule {
            Rule::Difference { minuend, subtrahend } => vec![minuend, subtrahend],
            Rule::Scaled { source, .. } => vec![source],
        }
    }

    /// "ctx.process − ctx.thread", "2 × ipc.pipe at 0 bytes".
    pub fn formula(&self) -> String {
        match self.rule {
            Rule::Difference { minuend, subtrahend } => format!("{minuend} − {subtrahend}"),
            Rule::Scaled { source, factor, bytes } => format!("{factor} × {source} at {bytes} bytes"),
        }
    }
}

/// Adds every derived row `rows` allows: a fit after the last point of each sweep, a
/// difference after the later of its two sources, a scaled result after its source.
pub fn add_derived(rows: &mut Vec<Row>, derivations: &[Derivation], method: Method) {
    let mut extra: Vec<(usize, Row)> = sweep_fits(rows, method);
    extra.extend(difference_rows(rows, derivations, method));
    extra.extend(scaled_rows(rows, derivations, method));
    // Insert from the back so earlier positions stay valid; stable for equal positions.
    extra.sort_by_key(|(pos, _)| *pos);
    for (pos, row) in extra.into_iter().rev() {
        rows.insert(pos + 1, row);
    }
}

/// The parameters of `row` without its size: the key that groups a sweep's points.
fn params_without_size(row: &Row) -> Params {
    let mut p = row.params.clone();
    p.remove(SIZE_PARAM);
    p
}

/// A sweep point: a measured row whose size parameter is a number.
fn point(row: &Row) -> Option<(f64, f64)> {
    let size = row.params.get(SIZE_PARAM)?.as_f64()?;
    Some((size, row.summary.as_ref()?.median_ns))
}

/// One fit row per group of rows (same id, same parameters but the size) with at least three
/// distinct sizes, fitted by least squares to the points' medians; each with the index of the
/// group's last row.
pub fn sweep_fits(rows: &[Row], method: Method) -> Vec<(usize, Row)> {
    let mut groups: Vec<(String, Params, Vec<usize>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if r.derived.is_some() || r.fit.is_some() || point(r).is_none() {
            continue;
        }
        let key = params_without_size(r);
        match groups.iter_mut().find(|(id, p, _)| *id == r.id && *p == key) {
            Some(g) => g.2.push(i),
            None => groups.push((r.id.clone(), key, vec![i])),
        }
    }
    let mut out = Vec::new();
    for (id, key, members) in groups {
        let points: Vec<(f64, f64)> = members.iter().filter_map(|&i| point(&rows[i])).collect();
        let mut sizes: Vec<f64> = points.iter().map(|p| p.0).collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        if sizes.len() < 3 {
            continue;
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) = points.iter().copied().unzip();
        let Ok(fit) = stats::fit_line(&xs, &ys) else { continue };
        let first = &rows[members[0]];
        let mut params = key;
        params.insert(SIZE_PARAM.into(), serde_json::Value::String("fit".into()));
        params.insert("sizes".into(), serde_json::json!(sizes.iter().map(|&x| x as u64).collect::<Vec<u64>>()));
        let mut row = empty_row(&id, &first.about, params, method);
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
        // A slope whose CI includes zero means the sizes cost the same: R² then measures noise.
        let flat = fit.slope_ci95[0] <= 0.0 && 0.0 <= fit.slope_ci95[1];
        if flat {
            row.notes.push(
                "no per-byte cost measurable over these sizes (the slope's 95 % CI includes 0): the fixed cost is the figure"
                    .into(),
            );
        } else if fit.r_squared < MIN_R_SQUARED {
            row.flags.push(Flag::PoorFit);
        }
        row.notes.push(format!(
            "least-squares line through the medians at {} sizes (the largest sizes weigh most: for the fixed cost alone, sweep small sizes); every point is in the result file",
            sizes.len()
        ));
        row.status = if row.flags.is_empty() { Status::Ok } else { Status::Flagged };
        row.fit = Some(fit);
        out.push((*members.last().unwrap_or(&0), row));
    }
    out
}

/// One row per parameter set under which both sources of a difference were measured, with the
/// index of the later source row.
pub fn difference_rows(rows: &[Row], derivations: &[Derivation], method: Method) -> Vec<(usize, Row)> {
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
            let Ok(estimate) = stats::median_difference(&a.samples_ns, &b.samples_ns, BOOTSTRAP_SEED) else {
                continue;
            };
            let mut row = empty_row(d.id, d.about, a.params.clone(), method);
            let mut checks = vec![Check::new(
                format!("{minuend} costs more than {subtrahend}"),
                "a positive difference".to_string(),
                format!("{:.1} ns", estimate.point),
                estimate.point > 0.0,
            )];
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
            row.status = if row.flags.is_empty() { Status::Ok } else { Status::Flagged };
            row.derived = Some(Derived { formula: d.formula(), estimate });
            out.push((i.max(j), row));
        }
    }
    out
}

/// One row per measured result of a scaled derivation's source at its size: the samples
/// scaled, summarised afresh, with the source's checks, flags and notes.
pub fn scaled_rows(rows: &[Row], derivations: &[Derivation], method: Method) -> Vec<(usize, Row)> {
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
            let samples: Vec<f64> = src.samples_ns.iter().map(|x| x * factor).collect();
            let Ok(summary) = stats::summarize(&samples, BOOTSTRAP_SEED) else { continue };
            let mut row = empty_row(d.id, d.about, src.params.clone(), method);
            row.iterations_per_sample = src.iterations_per_sample;
            row.warmup_iterations = src.warmup_iterations;
            row.stop = src.stop;
            row.validation = src.validation.clone();
            row.flags = src.flags.clone();
            row.notes = vec![format!("the same measurement as {source}, scaled: {}", d.formula())];
            row.status = src.status;
            row.cycles = src
                .cycles
                .as_ref()
                .map(|c| crate::model::Cycles { source: c.source.clone(), median: c.median * factor });
            row.derived = Some(Derived {
                formula: d.formula(),
                estimate: stats::Estimate { point: summary.median_ns, ci95: summary.median_ci95_ns },
            });
            row.samples_ns = samples;
            row.summary = Some(summary);
            out.push((i, row));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse;
    use crate::bench::{Measured, Params};
    use crate::sampler::{SamplerConfig, Samples};
    use crate::timer::TimerInfo;

    struct Fake(&'static str);
    impl crate::bench::Benchmark for Fake {
        fn id(&self) -> &'static str {
            self.0
        }
        fn about(&self) -> &'static str {
            "fake"
        }
        fn run(&self, _: &mut crate::bench::Ctx, _: &Params) -> Result<Measured, crate::bench::NotMeasured> {
            unreachable!()
        }
    }

    fn measured_row(id: &'static str, params: Params, samples: Vec<f64>) -> Row {
        let m = Measured::new(
            Samples { per_op_ns: samples, iterations_per_sample: 1, ..Samples::default() },
            vec![Check::new("ok", "ok", "ok", true)],
        );
        let timer = TimerInfo {
            kind: crate::timer::TimerKind::MonotonicRaw,
            freq_hz: 1e9,
            freq_source: "test".into(),
            calibrated_hz: None,
            stated_hz: None,
            invariant: None,
            invariant_source: "test".into(),
            fallback_reason: None,
            overhead_ns: 0.0,
            overhead_ticks: 0.0,
            overhead_mean_ns: Some(0.0),
            overhead_mean_ticks: Some(0.0),
            resolution_ns: 1.0,
            read_cost_ns: Some(1.0),
        };
        analyse::row(&Fake(id), params, Ok(m), &SamplerConfig::standard(), &timer)
    }

    fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn jitter(center: f64) -> Vec<f64> {
        (0..60).map(|i| center + (i % 7) as f64 * 0.01 * center).collect()
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
        assert!((fit.slope - 0.25 * 1.03).abs() < 0.01, "{}", fit.slope);
        assert!(fit.r_squared > 0.99);
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
        assert_eq!(d.median_ns(), Some(est.point));
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
        assert!((twice.median_ns - 2.0 * src.median_ns).abs() < 1e-9);
        assert_eq!(rpc[0].samples_ns.len(), rows[0].samples_ns.len());
        assert_eq!(rpc[0].median_ns(), Some(twice.median_ns));
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
