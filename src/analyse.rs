//! Analysis: turns what a benchmark measured into a result row (summary, cycles, verdict,
//! flags). Reads no clock and prints nothing.

use crate::bench::{Benchmark, Measured, NotMeasured, Params};
use crate::model::{Cycles, Flag, Row, Stage, Status, Validation, Verdict};
use crate::sampler::{Method, SamplerConfig, StopReason};
use crate::stats;
use crate::timer::TimerInfo;

/// Seed of every bootstrap, so a result file's CIs are reproducible from its samples.
pub const BOOTSTRAP_SEED: u64 = 0x0059_1213;

/// Share of material outliers (beyond 3 IQR and over [`OUTLIER_MIN_REL`] from the median)
/// above which a row is flagged. Other outliers are only counted: in a tight distribution (an
/// IQR of a fraction of a nanosecond) ordinary jitter crosses Tukey's fences.
const OUTLIER_SHARE_FLAG: f64 = 0.05;
/// How far from the median an outlier must lie to count towards the flag.
const OUTLIER_MIN_REL: f64 = 0.10;

/// A row for a benchmark that produced samples (or failed to).
pub fn row(
    bench: &dyn Benchmark,
    params: Params,
    outcome: Result<Measured, NotMeasured>,
    cfg: &SamplerConfig,
    timer: &TimerInfo,
) -> Row {
    let mut row = empty_row(bench.id(), bench.about(), params, cfg.method);
    let measured = match outcome {
        Ok(m) => m,
        Err(NotMeasured::Skipped(reason)) => {
            row.status = Status::Skipped;
            row.reason = Some(reason);
            return row;
        }
        Err(NotMeasured::Failed(reason)) => {
            row.status = Status::Failed;
            row.reason = Some(reason);
            return row;
        }
    };
    row.params.extend(measured.params);
    row.observed = measured.observed;
    row.notes = measured.notes;
    row.iterations_per_sample = measured.samples.iterations_per_sample;
    row.warmup_iterations = measured.samples.warmup_iterations;
    row.stop = measured.samples.stop;
    row.validation = Validation::from_checks(measured.checks);
    row.samples_ns = measured.samples.per_op_ns;
    if !measured.breakdown.is_empty() {
        let stages = measured
            .breakdown
            .into_iter()
            .filter_map(|(name, samples)| {
                stats::summarize(&samples, BOOTSTRAP_SEED).ok().map(|summary| Stage { name, summary })
            })
            .collect();
        row.breakdown = Some(stages);
    }
    match stats::summarize(&row.samples_ns, BOOTSTRAP_SEED) {
        Ok(summary) => {
            if !row.in_bytes() {
                row.cycles =
                    timer.counter_hz().map(|hz| Cycles { source: "tsc".into(), median: summary.median_ns * hz / 1e9 });
            }
            let mut sorted = row.samples_ns.clone();
            sorted.sort_by(f64::total_cmp);
            let material = stats::material_outliers(&sorted, OUTLIER_MIN_REL);
            row.flags = flags(&summary, material, row.validation.verdict, row.stop, cfg);
            if row.in_bytes() {
                // Memory per object: its spread is judged by the benchmark's own check, not by
                // the sampler's timing target.
                row.flags.retain(|f| *f != Flag::CiTargetMissed);
            }
            row.summary = Some(summary);
            row.status = if row.flags.is_empty() { Status::Ok } else { Status::Flagged };
        }
        Err(e) => {
            row.status = Status::Failed;
            row.reason = Some(if row.stop == Some(StopReason::Interrupted) {
                format!("interrupted before enough samples ({e})")
            } else {
                format!("samples unusable: {e}")
            });
        }
    }
    row
}

/// A row with nothing measured yet.
pub fn empty_row(id: &str, about: &str, params: Params, method: Method) -> Row {
    Row {
        id: id.into(),
        about: about.into(),
        params,
        status: Status::Skipped,
        reason: None,
        method,
        iterations_per_sample: 0,
        warmup_iterations: 0,
        stop: None,
        samples_ns: Vec::new(),
        summary: None,
        cycles: None,
        breakdown: None,
        derived: None,
        fit: None,
        validation: Validation::from_checks(Vec::new()),
        flags: Vec::new(),
        notes: Vec::new(),
        observed: Params::new(),
    }
}

/// The flags a measured row earns.
/// `material_outliers` counts the samples beyond 3 IQR and over 10 % from the median.
pub fn flags(
    s: &stats::Summary,
    material_outliers: usize,
    verdict: Verdict,
    stop: Option<StopReason>,
    cfg: &SamplerConfig,
) -> Vec<Flag> {
    let mut f = Vec::new();
    if verdict == Verdict::Failed {
        f.push(Flag::CheckFailed);
    }
    if cfg.method == Method::Adaptive && s.median_ci_rel_halfwidth() > cfg.ci_target_rel {
        f.push(Flag::CiTargetMissed);
    }
    if s.drift {
        f.push(Flag::Drift);
    }
    if stop == Some(StopReason::Interrupted) {
        f.push(Flag::Interrupted);
    }
    if material_outliers as f64 > OUTLIER_SHARE_FLAG * s.n as f64 {
        f.push(Flag::ManyOutliers);
    }
    f
}
