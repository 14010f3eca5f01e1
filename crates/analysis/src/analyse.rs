//! Analysis: turns what a benchmark measured, round after round, into a result row (summary,
//! cycles, verdict, flags, notes). Reads no clock and prints nothing.

use model::SamplerSettings;
use model::TimerInfo;
use model::sampling::BATCH_CHECKS;
use model::{Check, Cycles, Flag, Params, Row, Stage, Status, Tail, Unit, Validation, Verdict, summary};
use model::{Measured, Method, NotMeasured, StopReason};
use stats;

/// Seed of every bootstrap, so a result file's CIs are reproducible from its samples.
pub const BOOTSTRAP_SEED: u64 = 0x0059_1213;

/// Share of material outliers (beyond 3 IQR and over [`OUTLIER_MIN_REL`] from the median)
/// above which a row is flagged. Other outliers are only counted: in a tight distribution (an
/// IQR of a fraction of a nanosecond) ordinary jitter crosses Tukey's fences.
const OUTLIER_SHARE_FLAG: f64 = 0.05;
/// How many timer steps from the median an outlier must lie, at least, to count.
const OUTLIER_MIN_STEPS: f64 = 4.0;
/// How far from the median an outlier must lie to count towards the flag.
const OUTLIER_MIN_REL: f64 = 0.10;

/// A row for a benchmark measured in rounds: `outcomes[i]` is what round `i` gave. The rounds'
/// samples are summarised together with an interval that respects the rounds and their time
/// order ([`stats::summarize_rounds`], `resamples` bootstrap replicates); checks, stages, the
/// batch-size check and single-operation samples of all rounds are merged. A round that
/// fails ends the row's rounds: the rounds before it are kept and the row says so.
pub fn rounds_row(
    id: &str,
    about: &str,
    params: Params,
    outcomes: &[Result<Measured, NotMeasured>],
    cfg: &SamplerSettings,
    timer: &TimerInfo,
    resamples: usize,
) -> Row {
    let mut row = empty_row(id, about, params, cfg.method);
    let ok: Vec<&Measured> = outcomes.iter().map_while(|o| o.as_ref().ok()).collect();
    let failure = outcomes.iter().find_map(|o| o.as_ref().err());
    if ok.is_empty() {
        let (status, reason) = match failure {
            Some(NotMeasured::Skipped(r)) => (Status::Skipped, r.clone()),
            Some(NotMeasured::Failed(r)) => (Status::Failed, r.clone()),
            None => (Status::Skipped, "not run".to_string()),
        };
        row.status = status;
        row.reason = Some(reason);
        return row;
    }
    merge_rounds(&mut row, &ok);
    if let Some(f) = failure {
        let why = match f {
            NotMeasured::Skipped(r) | NotMeasured::Failed(r) => r,
        };
        row.notes.push(format!("round {} failed ({why}); later rounds were not run", ok.len() + 1));
    }
    let slices: Vec<&[f64]> = ok.iter().map(|m| m.samples.per_op_ns.as_slice()).collect();
    // The seed method is the papers' protocol (the first runs of each round discarded, every
    // other kept): no further start-up cut.
    let no_cut = vec![0; slices.len()];
    let drops = (cfg.method == Method::Seed).then_some(no_cut.as_slice());
    let unit = row.unit;
    let mut summary = match stats::summarize_rounds(&slices, drops, resamples, BOOTSTRAP_SEED, timer.resolution_ns) {
        Ok(s) => s,
        Err(e) => {
            (row.status, row.reason) = if row.stop == Some(StopReason::Interrupted) {
                let n = row.samples.len();
                (Status::Interrupted, Some(format!("Ctrl-C arrived before enough samples for a figure ({n} taken)")))
            } else {
                (Status::Failed, Some(format!("samples unusable: {e}")))
            };
            return row;
        }
    };
    let drops: Vec<usize> =
        summary.structure.as_ref().map(|s| s.rounds.iter().map(|r| r.dropped).collect()).unwrap_or_default();
    if unit == Unit::Ns {
        // Times are quantised by the clock; sizes and counts are exact.
        let mut steady: Vec<f64> = slices.iter().zip(&drops).flat_map(|(s, &d)| s[d.min(s.len())..].to_vec()).collect();
        steady.sort_by(f64::total_cmp);
        stats::floor_at_resolution(&mut summary, &steady, timer.resolution_ns);
    }
    row.breakdown = stages(&ok, &slices, &drops, resamples, timer.resolution_ns);
    row.counters = counters(&ok, &drops, cfg.counters, resamples, |m| m.samples.counters.as_ref());
    if let Some(note) = ok.iter().find_map(|m| m.samples.counters.as_ref().and_then(|c| c.note.as_ref())) {
        row.notes.push(format!("{}{note}", model::counters::COUNTS_NOTE));
    }
    if ok.iter().any(|m| m.samples.hot_twin_counters.is_some()) {
        // A cold row's hot twins, pair by pair with its samples (the same start-up cut).
        row.counters_hot = counters(&ok, &drops, cfg.counters, resamples, |m| m.samples.hot_twin_counters.as_ref());
    }
    if unit == Unit::Ns {
        row.cycles = timer.counter_hz().map(|hz| Cycles { source: "tsc".into(), median: summary.median_ns * hz / 1e9 });
    }
    row.tail = tail(&row.single_op, timer.resolution_ns);
    // Outliers among the steady-state samples the summary describes.
    let mut sorted: Vec<f64> =
        slices.iter().zip(&drops).flat_map(|(r, &d)| r[d.min(r.len())..].iter().copied()).collect();
    sorted.sort_by(f64::total_cmp);
    // Far from the median means over 10 % of it and over a few timer steps: samples near zero
    // (the empty operation) come in whole steps, and one step is not an outlier.
    let material = stats::material_outliers(&sorted, OUTLIER_MIN_REL, OUTLIER_MIN_STEPS * timer.resolution_ns);
    row.flags = flags(&summary, material, row.validation.verdict, row.stop, cfg, timer.resolution_ns);
    if failure.is_some() {
        row.flags.push(Flag::RoundFailed);
    }
    if let Some(note) = batch_dependence(&row.batch_check, summary.median_ns) {
        row.flags.push(Flag::BatchDependent);
        row.notes.push(note);
    }
    row.notes.extend(structure_notes(&summary, unit));
    if unit != Unit::Ns {
        // Memory per object (or a count): its spread is judged by the benchmark's own
        // check, not by the sampler's timing target.
        row.flags.retain(|f| !matches!(f, Flag::CiTargetMissed | Flag::CiUnusable));
    }
    row.summary = Some(summary_record(summary));
    crate::cold::add_cold_hot(&mut row, &ok, timer, resamples);
    row.status = Status::of_flags(&row.flags);
    row
}

/// Copies what the rounds measured into `row`: samples, counts, checks (merged by name),
/// notes (each once), the first round's parameters and the last round's observations.
fn merge_rounds(row: &mut Row, ok: &[&Measured]) {
    for m in ok {
        for (k, v) in &m.params {
            row.params.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for n in &m.notes {
            if !row.notes.contains(n) {
                row.notes.push(n.clone());
            }
        }
        row.samples.extend_from_slice(&m.samples.per_op_ns);
        row.samples_per_round.push(m.samples.per_op_ns.len());
        row.batch_check.extend_from_slice(&m.samples.batch_check);
        row.single_op.extend_from_slice(&m.samples.single_op_ns);
        row.warmup_iterations += m.samples.warmup_iterations;
    }
    let last = ok[ok.len() - 1];
    row.unit = ok[0].unit;
    row.observed = last.observed.clone();
    row.iterations_per_sample = ok[0].samples.iterations_per_sample;
    let stops: Vec<Option<StopReason>> = ok.iter().map(|m| m.samples.stop).collect();
    row.stop = [StopReason::Interrupted, StopReason::Aborted]
        .into_iter()
        .find(|s| stops.contains(&Some(*s)))
        .map(Some)
        .unwrap_or(last.samples.stop);
    row.validation = Validation::from_checks(merge_checks(ok));
}

/// One check per name over all rounds: the first failure if any round failed it (its
/// observation prefixed with the round), else the first round that could make it.
fn merge_checks(ok: &[&Measured]) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    for (i, m) in ok.iter().enumerate() {
        for c in &m.checks {
            let tagged = || {
                let mut c = c.clone();
                if ok.len() > 1 && c.ok == Some(false) {
                    c.observed = format!("round {}: {}", i + 1, c.observed);
                }
                c
            };
            match out.iter_mut().find(|o| o.name == c.name) {
                None => out.push(tagged()),
                Some(o) if o.ok != Some(false) && c.ok == Some(false) => *o = tagged(),
                Some(o) if o.ok.is_none() && c.ok.is_some() => *o = tagged(),
                Some(_) => {}
            }
        }
    }
    out
}

/// Each stage of a breakdown, summarised over the rounds like the total; a stage whose rounds
/// match the total's samples one to one drops the same start-up samples, so the parts still
/// describe the same operations.
fn stages(ok: &[&Measured], totals: &[&[f64]], drops: &[usize], resamples: usize, step: f64) -> Option<Vec<Stage>> {
    let names: Vec<&String> = ok[0].breakdown.iter().map(|(n, _)| n).collect();
    if names.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for name in names {
        let per_round: Vec<&[f64]> = ok
            .iter()
            .map(|m| m.breakdown.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice()).unwrap_or(&[]))
            .collect();
        let aligned = per_round.iter().zip(totals).all(|(s, t)| s.len() == t.len());
        let drops = aligned.then_some(drops);
        if let Ok(summary) = stats::summarize_rounds(&per_round, drops, resamples, BOOTSTRAP_SEED, step) {
            out.push(Stage { name: name.clone(), summary: summary_record(summary) });
        }
    }
    Some(out)
}

/// Each counted event's mean per operation over the rounds' samples (the start-up samples the
/// summary dropped left out too), with its bootstrap interval; the events not counted with
/// why. `None` when counters were not asked for; when asked but no round carries counts
/// (a benchmark that times its own regions), every event is missing with
/// [`model::counters::NOT_REACHED`].
/// `pick` chooses which counts of a round: its samples' or (a cold row's) its hot twins'.
fn counters(
    ok: &[&Measured],
    drops: &[usize],
    asked: bool,
    resamples: usize,
    pick: impl Fn(&Measured) -> Option<&model::counters::CounterSamples>,
) -> Option<model::counters::Counters> {
    use model::counters::{CounterSamples, CounterSummary, Counters, EVENT_NAMES, MissingEvent};
    let rounds: Vec<(usize, &CounterSamples)> =
        ok.iter().enumerate().filter_map(|(i, m)| pick(m).map(|c| (drops.get(i).copied().unwrap_or(0), c))).collect();
    if rounds.is_empty() {
        let missing = CounterSamples::none(model::counters::NOT_REACHED).missing;
        return asked.then_some(Counters { events: Vec::new(), missing, running_share_min: 1.0 });
    }
    let mut out = Counters { running_share_min: 1.0, ..Counters::default() };
    for name in EVENT_NAMES {
        let values: Vec<f64> = rounds
            .iter()
            .filter_map(|(d, c)| c.events.iter().find(|e| e.event == name).map(|e| (d, e)))
            .flat_map(|(&d, e)| e.per_op[d.min(e.per_op.len())..].iter().flatten().copied())
            .collect();
        if values.is_empty() {
            let reason = rounds
                .iter()
                .find_map(|(_, c)| c.missing.iter().find(|m| m.event == name).map(|m| m.reason.clone()))
                .unwrap_or_else(|| "the counters did not run during any sample".into());
            out.missing.push(MissingEvent { event: name.into(), reason });
            continue;
        }
        let mean = stats::moments::mean(&values);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let ci95 = stats::bootstrap_ci(&sorted, |v| stats::moments::mean(v), resamples, 0.95, BOOTSTRAP_SEED);
        out.events.push(CounterSummary { event: name.into(), per_op: mean, ci95, samples: values.len() });
    }
    out.running_share_min = rounds.iter().map(|(_, c)| c.running_share_min).fold(1.0, f64::min);
    Some(out)
}

/// Per-operation percentiles of single-operation samples, when there are any.
fn tail(single_op_ns: &[f64], resolution_ns: f64) -> Option<Tail> {
    if single_op_ns.len() < 2 {
        return None;
    }
    let mut v = single_op_ns.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Tail {
        n: v.len(),
        p50: stats::percentile(&v, 50.0),
        p99: stats::percentile(&v, 99.0),
        p999: stats::percentile(&v, 99.9),
        max: v[v.len() - 1],
        resolution: resolution_ns,
    })
}

/// Relative difference between the costs per operation at m and at 8m under which batches
/// are taken to agree: smaller differences do not change any conclusion drawn from a row.
pub const BATCH_MIN_REL: f64 = 0.01;

/// A note when batches of m and 8m operations (8m ≈ n, the samples' batch) disagree: with at least
/// [`BATCH_CHECKS`] pairs, the 95 % order-statistic interval of the median
/// difference (mean of the batches of m minus the batch of 8m; up to eight pairs it is the whole
/// range, i.e. every pair agrees in sign) excludes 0, and the median difference is over
/// [`BATCH_MIN_REL`] of the row's median.
pub fn batch_dependence(pairs: &[[f64; 2]], median_ns: f64) -> Option<String> {
    if pairs.len() < BATCH_CHECKS {
        return None;
    }
    let mut d: Vec<f64> = pairs.iter().map(|p| p[1] - p[0]).collect();
    d.sort_by(f64::total_cmp);
    let (lo, hi) = stats::median_ci_order_stat(&d, 0.95);
    let md = stats::median(&d);
    let material = md.abs() > BATCH_MIN_REL * median_ns.abs();
    ((lo > 0.0 || hi < 0.0) && material).then(|| {
        format!(
            "batch-size check: batches of 8m operations cost {:+.1} ns per operation against batches of m around them (8m ≈ n) (median of {} pairs; 95 % CI {:+.1} to {:+.1} ns)",
            -md,
            pairs.len(),
            -hi,
            -lo
        )
    })
}

/// Notes on what the rounds showed: levels, a changing machine, many start-up samples.
fn structure_notes(s: &stats::Summary, unit: Unit) -> Vec<String> {
    let Some(st) = &s.structure else { return Vec::new() };
    let fmt = |v: f64| unit.format(v);
    let mut notes = Vec::new();
    let levels = match st.levels.as_slice() {
        [a, b] => Some(format!(
            "two levels: {} ({:.0} %) and {} ({:.0} %)",
            fmt(a.median_ns),
            100.0 * a.share,
            fmt(b.median_ns),
            100.0 * b.share
        )),
        _ => None,
    };
    if st.unstable {
        let medians: Vec<f64> = st.rounds.iter().map(|r| r.median_ns).filter(|m| m.is_finite()).collect();
        let (lo, hi) = medians.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| (a.min(m), b.max(m)));
        let mut n = format!(
            "unstable: the {} rounds' medians range from {} to {} (rounds agree: p = {:.1e})",
            medians.len(),
            fmt(lo),
            fmt(hi),
            st.heterogeneity_p
        );
        if let Some(l) = &levels {
            n.push_str(&format!("; {l}"));
        }
        notes.push(n);
    } else if let Some(l) = levels {
        notes.push(format!("the samples fall into {l}, alike in every round"));
    }
    let total: usize = st.rounds.iter().map(|r| r.n).sum();
    if st.dropped * 20 >= total && st.dropped > 0 {
        let rounds = st.rounds.iter().filter(|r| r.dropped > 0).count();
        notes.push(format!(
            "start-up transient: {} of {total} samples dropped (MSER-5) from {rounds} of {} rounds",
            st.dropped,
            st.rounds.len()
        ));
    }
    notes
}

/// The result file's record of a summary `stats` computed (in the row's unit).
pub fn summary_record(s: stats::Summary) -> summary::Summary {
    let o = s.outliers;
    summary::Summary {
        n: s.n,
        min: s.min_ns,
        max: s.max_ns,
        mean: s.mean_ns,
        median: s.median_ns,
        stddev: s.stddev_ns,
        mad: s.mad_ns,
        p1: s.p1_ns,
        p5: s.p5_ns,
        p95: s.p95_ns,
        p99: s.p99_ns,
        median_ci95: s.median_ci95_ns,
        mean_ci95: s.mean_ci95_ns,
        outliers: summary::Outliers {
            low_severe: o.low_severe,
            low_mild: o.low_mild,
            high_mild: o.high_mild,
            high_severe: o.high_severe,
        },
        drift: s.drift,
        drift_rel: s.drift_rel,
        structure: s.structure.map(|st| summary::Structure {
            interval: st.interval,
            rounds: st
                .rounds
                .into_iter()
                .map(|r| summary::RoundSummary {
                    n: r.n,
                    dropped: r.dropped,
                    median: r.median_ns,
                    median_ci95: r.median_ci95_ns,
                    block_length: r.block_length,
                })
                .collect(),
            dropped: st.dropped,
            heterogeneity_p: st.heterogeneity_p,
            unstable: st.unstable,
            levels: st.levels.into_iter().map(|l| summary::Level { median: l.median_ns, share: l.share }).collect(),
        }),
    }
}

/// How far `row`'s interval over its rounds is from the run's target, when another round
/// could narrow it (`osprim run` gives such a row more rounds, `runner`): its median's 95 % CI
/// relative half-width over `cfg.ci_target_rel` (over 1), for a time measured under the adaptive
/// method whose flags say it misses the target (`ci-wide` or `ci-unusable`, as [`flags`] judged
/// its interval) by more than the step its samples move in accounts for (the interval is at
/// least that step wide whatever the rounds, `stats::floor_at_resolution`: the smallest gap
/// between its samples, or the clock step `step_ns` when all are equal). `None`: it meets the
/// target, or more rounds cannot help.
pub fn short_of_target(row: &Row, cfg: &SamplerSettings, step_ns: f64) -> Option<f64> {
    let s = row.summary.as_ref()?;
    let missed = row.flags.iter().any(|f| matches!(f, Flag::CiTargetMissed | Flag::CiUnusable));
    if cfg.method != Method::Adaptive || row.unit != Unit::Ns || !missed || cfg.ci_target_rel <= 0.0 {
        return None;
    }
    let [lo, hi] = s.median_ci95;
    let mut sorted = row.samples.clone();
    sorted.sort_by(f64::total_cmp);
    let quantum = stats::summary::sample_quantum(&sorted).unwrap_or(step_ns);
    if !(lo.is_finite() && hi.is_finite()) || hi / 2.0 - lo / 2.0 <= quantum / 2.0 * (1.0 + 1e-9) {
        return None;
    }
    Some((s.median_ci_rel_halfwidth() / cfg.ci_target_rel).max(1.0))
}

/// The result file's record of an estimate `stats` computed.
pub fn estimate_record(e: stats::Estimate) -> summary::Estimate {
    summary::Estimate { point: e.point, ci95: e.ci95 }
}

/// A row with nothing measured yet.
pub fn empty_row(id: &str, about: &str, params: Params, method: Method) -> Row {
    Row::empty(id, about, params, method)
}

/// Whether the 95 % CI of a figure is too wide to use: it reaches over
/// [`model::USABLE_CI_REL`] (10 %) of the estimate from it, on either side, and by more
/// than one timer step `step_ns` (an empty operation's median of 0 with a CI of one step is
/// a fine figure of nothing).
pub fn ci_unusable(point: f64, ci: [f64; 2], step_ns: f64) -> bool {
    if !(point.is_finite() && ci[0].is_finite() && ci[1].is_finite()) {
        return true;
    }
    let reach = (point - ci[0]).max(ci[1] - point);
    let rel = model::ci_reach_rel(point, ci);
    reach > step_ns && rel > model::USABLE_CI_REL
}

/// The flags a measured row earns, untrustworthy ones first.
/// `material_outliers` counts the samples beyond 3 IQR, and over 10 % and 4 timer steps from
/// the median. The interval judged is the one the row reports: the median's, or under the seed
/// method the mean's. Over [`model::USABLE_CI_REL`] it is `ci-unusable`
/// ([`ci_unusable`]); else, under the adaptive method, a median CI whose relative half-width
/// is over the run's target is `ci-wide`.
pub fn flags(
    s: &stats::Summary,
    material_outliers: usize,
    verdict: Verdict,
    stop: Option<StopReason>,
    cfg: &SamplerSettings,
    step_ns: f64,
) -> Vec<Flag> {
    let mut f = Vec::new();
    if verdict == Verdict::Failed {
        f.push(Flag::CheckFailed);
    }
    let (point, ci) = match cfg.method {
        Method::Seed => (s.mean_ns, s.mean_ci95_ns),
        Method::Adaptive => (s.median_ns, s.median_ci95_ns),
    };
    if ci_unusable(point, ci, step_ns) {
        f.push(Flag::CiUnusable);
    } else if cfg.method == Method::Adaptive && s.median_ci_rel_halfwidth() > cfg.ci_target_rel {
        f.push(Flag::CiTargetMissed);
    }
    if stop == Some(StopReason::Interrupted) {
        f.push(Flag::Interrupted);
    }
    if s.structure.as_ref().is_some_and(|st| st.unstable) {
        f.push(Flag::Unstable);
    }
    if material_outliers as f64 > OUTLIER_SHARE_FLAG * s.n as f64 {
        f.push(Flag::ManyOutliers);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Samples;
    use model::TimerInfo;

    fn timer() -> TimerInfo {
        TimerInfo::for_tests()
    }

    fn round(level: f64, checks_ok: bool, batch: [f64; 2]) -> Result<Measured, NotMeasured> {
        let per_op_ns: Vec<f64> = (0..200).map(|i| level + f64::from(i % 7) * 0.01 * level).collect();
        let samples =
            Samples { per_op_ns, iterations_per_sample: 10, batch_check: vec![batch; 2], ..Samples::default() };
        Ok(Measured::new(samples, vec![Check::new("payload intact", "intact", "intact", checks_ok)]))
    }

    /// A round of `n` samples around 100 ns whose cycles per operation are `cycles` and whose
    /// LLC misses are missing for `why`.
    fn counted_round(cycles: &[f64], why: &str) -> Result<Measured, NotMeasured> {
        use model::counters::{CounterSamples, EventSamples, MissingEvent};
        let samples = Samples {
            per_op_ns: cycles.iter().enumerate().map(|(i, _)| 100.0 + (i % 3) as f64).collect(),
            iterations_per_sample: 10,
            stop: Some(StopReason::TargetMet),
            counters: Some(CounterSamples {
                events: vec![EventSamples {
                    event: "cycles".into(),
                    per_op: cycles.iter().map(|&c| Some(c)).collect(),
                }],
                missing: vec![MissingEvent { event: "llc_misses".into(), reason: why.into() }],
                running_share_min: 0.5,
                note: None,
            }),
            ..Samples::default()
        };
        Ok(Measured::new(samples, Vec::new()))
    }

    #[test]
    fn a_rows_counters_are_the_mean_per_operation_over_its_rounds_with_what_is_missing() {
        let cfg =
            bench::sampler::SamplerConfig { counters: true, ..bench::sampler::SamplerConfig::standard() }.record();
        let run = |outcomes: &[Result<Measured, NotMeasured>]| {
            rounds_row("x.y", "test", Params::new(), outcomes, &cfg, &timer(), 200)
        };
        let r = run(&[counted_round(&[300.0; 40], "no LL"), counted_round(&[320.0; 40], "no LL")]);
        let c = r.counters.expect("asked for");
        let cycles = c.event("cycles").expect("counted");
        assert!((cycles.per_op - 310.0).abs() < 1e-9, "{cycles:?}");
        assert!(cycles.ci95[0] <= 310.0 && cycles.ci95[1] >= 310.0 && cycles.ci95[0] >= 300.0);
        assert_eq!(c.running_share_min, 0.5);
        let missing: Vec<(&str, &str)> = c.missing.iter().map(|m| (m.event.as_str(), m.reason.as_str())).collect();
        assert_eq!(missing[0], ("instructions", "the counters did not run during any sample"));
        assert!(missing.contains(&("llc_misses", "no LL")));
        // Asked for, but the benchmark's samples carry no counts: every event says why.
        let plain = Samples { per_op_ns: vec![100.0; 40], iterations_per_sample: 10, ..Samples::default() };
        let r = run(&[Ok(Measured::new(plain.clone(), Vec::new()))]);
        let c = r.counters.expect("asked for");
        assert!(c.events.is_empty() && c.missing.len() == 5);
        assert!(c.missing.iter().all(|m| m.reason == model::counters::NOT_REACHED));
        // Not asked for: no counters field at all.
        let r = rows(&[Ok(Measured::new(plain, Vec::new()))]);
        assert!(r.counters.is_none());
        assert!(serde_json::to_value(&r).unwrap().get("counters").is_none(), "the file does not change");
    }

    /// A cold round of 40 pairs: cold 400 ns with 30 LLC and 8 dTLB misses per operation,
    /// hot twins 100 ns with 1 and 0.
    fn cold_counted_round() -> Result<Measured, NotMeasured> {
        use model::counters::{CounterSamples, EventSamples};
        let counts = |llc: f64, dtlb: f64| CounterSamples {
            events: vec![
                EventSamples { event: "llc_misses".into(), per_op: vec![Some(llc); 40] },
                EventSamples { event: "dtlb_misses".into(), per_op: vec![Some(dtlb); 40] },
            ],
            missing: Vec::new(),
            running_share_min: 1.0,
            note: None,
        };
        let hot: Vec<f64> = (0..40).map(|i| 100.0 + (i % 3) as f64).collect();
        let samples = Samples {
            per_op_ns: hot.iter().map(|h| 4.0 * h).collect(),
            hot_twin_ns: hot,
            iterations_per_sample: 1,
            stop: Some(StopReason::TargetMet),
            counters: Some(counts(30.0, 8.0)),
            hot_twin_counters: Some(counts(1.0, 0.0)),
            ..Samples::default()
        };
        Ok(Measured::new(samples, Vec::new()))
    }

    #[test]
    fn a_cold_rows_counts_stand_beside_its_hot_twins() {
        let cfg =
            bench::sampler::SamplerConfig { counters: true, ..bench::sampler::SamplerConfig::standard() }.record();
        let mut noted = cold_counted_round().unwrap();
        noted.samples.counters.as_mut().unwrap().note = Some("measuring end only".into());
        let r = rounds_row("x.y", "test", Params::new(), &[Ok(noted), cold_counted_round()], &cfg, &timer(), 200);
        assert!(r.notes.contains(&format!("{}measuring end only", model::counters::COUNTS_NOTE)), "{:?}", r.notes);
        let cold = r.counters.as_ref().expect("cold counted");
        let hot = r.counters_hot.as_ref().expect("hot twins counted");
        assert_eq!(cold.event("llc_misses").map(|e| e.per_op), Some(30.0));
        assert_eq!(hot.event("llc_misses").map(|e| e.per_op), Some(1.0));
        assert_eq!(hot.event("dtlb_misses").map(|e| e.per_op), Some(0.0));
        let c = r.cold_hot.as_ref().expect("a ratio");
        let by: Vec<(&str, f64, f64)> =
            c.counts.iter().map(|x| (x.event.as_str(), x.cold_per_op, x.hot_per_op)).collect();
        assert_eq!(by, [("llc_misses", 30.0, 1.0), ("dtlb_misses", 8.0, 0.0)]);
        // Counters off: no hot counts, nothing beside the ratio, nothing new in the file.
        let mut plain = cold_counted_round().unwrap();
        plain.samples.counters = None;
        plain.samples.hot_twin_counters = None;
        let r = rows(&[Ok(plain)]);
        assert!(r.counters_hot.is_none() && r.cold_hot.as_ref().is_some_and(|c| c.counts.is_empty()));
        let v = serde_json::to_value(&r).unwrap();
        assert!(v.get("counters_hot").is_none() && v["cold_hot"].get("counts").is_none());
    }

    fn rows(outcomes: &[Result<Measured, NotMeasured>]) -> Row {
        rounds_row(
            "x.y",
            "test",
            Params::new(),
            outcomes,
            &bench::sampler::SamplerConfig::standard().record(),
            &timer(),
            200,
        )
    }

    #[test]
    fn equal_times_get_an_interval_of_one_clock_step_and_equal_sizes_stay_exact() {
        let equal = |unit: Unit| {
            let samples = Samples { per_op_ns: vec![4096.0; 50], iterations_per_sample: 1, ..Samples::default() };
            let mut m = Measured::new(samples, vec![Check::new("ok", "ok", "ok", true)]);
            m.unit = unit;
            Ok(m)
        };
        // The test timer's step is 1 ns: a time read as 4096 ns in every sample is 4096 ± 0.5.
        let time = rows(&[equal(Unit::Ns), equal(Unit::Ns), equal(Unit::Ns)]);
        assert_eq!(time.summary.as_ref().unwrap().median_ci95, [4095.5, 4096.5]);
        // A size is the figure itself: the same in every sample is exactly that.
        let size = rows(&[equal(Unit::Bytes), equal(Unit::Bytes), equal(Unit::Bytes)]);
        assert_eq!(size.unit, Unit::Bytes);
        assert_eq!(size.summary.as_ref().unwrap().median_ci95, [4096.0, 4096.0]);
    }

    #[test]
    fn rounds_that_agree_are_stable_and_keep_every_sample() {
        let r = rows(&[
            round(100.0, true, [100.0, 100.0]),
            round(100.0, true, [100.0, 100.0]),
            round(100.0, true, [100.0, 100.0]),
        ]);
        assert_eq!(r.samples.len(), 600);
        assert_eq!(r.samples_per_round, vec![200, 200, 200]);
        assert_eq!(r.batch_check.len(), 6);
        assert!(!r.flags.contains(&Flag::Unstable) && !r.flags.contains(&Flag::BatchDependent), "{:?}", r.flags);
        assert_eq!(r.validation.checks.len(), 1, "one check per name over the rounds");
        assert_eq!(r.validation.verdict, Verdict::Validated);
    }

    #[test]
    fn rounds_at_two_levels_are_unstable_with_a_wide_interval() {
        let r = rows(&[
            round(190.0, true, [1.0, 1.0]),
            round(250.0, true, [1.0, 1.0]),
            round(190.0, true, [1.0, 1.0]),
            round(250.0, true, [1.0, 1.0]),
        ]);
        assert!(r.flags.contains(&Flag::Unstable), "{:?}", r.flags);
        let s = r.summary.as_ref().unwrap();
        assert!(s.median_ci95[0] < 200.0 && s.median_ci95[1] > 240.0, "{:?}", s.median_ci95);
        assert!(r.notes.iter().any(|n| n.contains("unstable") && n.contains("two levels")), "{:?}", r.notes);
    }

    #[test]
    fn a_failing_round_is_named_and_a_later_failure_keeps_earlier_rounds() {
        let r = rows(&[round(100.0, true, [1.0, 1.0]), round(100.0, false, [1.0, 1.0])]);
        assert_eq!(r.validation.verdict, Verdict::Failed);
        assert!(r.validation.checks[0].observed.starts_with("round 2:"), "{:?}", r.validation.checks);
        let r = rows(&[round(100.0, true, [1.0, 1.0]), Err(NotMeasured::Failed("peer died".into()))]);
        assert!(r.summary.is_some());
        assert!(r.flags.contains(&Flag::RoundFailed));
        assert!(r.notes.iter().any(|n| n.contains("round 2 failed (peer died)")));
        let r = rows(&[Err(NotMeasured::Skipped("no uffd".into()))]);
        assert_eq!((r.status, r.reason.as_deref()), (Status::Skipped, Some("no uffd")));
    }

    #[test]
    fn batch_dependence_needs_consistent_material_pairs() {
        let same = vec![[100.0, 100.0]; 6];
        assert_eq!(batch_dependence(&same, 100.0), None);
        let slower_long: Vec<[f64; 2]> = (0..6).map(|i| [110.0 + f64::from(i), 100.0]).collect();
        assert!(batch_dependence(&slower_long, 100.0).is_some());
        assert_eq!(batch_dependence(&slower_long[..5], 100.0), None, "too few pairs to judge");
        let tiny: Vec<[f64; 2]> = (0..6).map(|_| [100.5, 100.0]).collect();
        assert_eq!(batch_dependence(&tiny, 100.0), None, "under 1 % is not material");
        let mixed: Vec<[f64; 2]> = (0..6).map(|i| [if i % 2 == 0 { 110.0 } else { 90.0 }, 100.0]).collect();
        assert_eq!(batch_dependence(&mixed, 100.0), None);
    }

    /// A summary of 100 ns samples with its median's CI set to `ci`.
    fn summary_with(ci: [f64; 2]) -> stats::Summary {
        let samples: Vec<f64> = (0..100).map(|i| 100.0 + f64::from(i % 3) * 0.001).collect();
        let mut s = stats::summarize(&samples, 1).unwrap();
        s.median_ns = 100.0;
        s.median_ci95_ns = ci;
        s
    }

    fn adaptive() -> SamplerSettings {
        bench::sampler::SamplerConfig::standard().record()
    }

    #[test]
    fn a_ci_just_over_the_target_is_advisory_and_one_over_ten_percent_is_untrustworthy() {
        use model::Tier;
        let cfg = adaptive();
        assert!((cfg.ci_target_rel - 0.01).abs() < 1e-12, "the test assumes the ±1 % target");
        let flags_of = |ci| flags(&summary_with(ci), 0, Verdict::Validated, None, &cfg, 0.4);
        let near = flags_of([98.9, 101.1]);
        assert_eq!(near, [Flag::CiTargetMissed]);
        assert_eq!(Status::of_flags(&near), Status::Advisory);
        assert_eq!(near[0].tier(), Tier::Advisory);
        let far = flags_of([68.0, 132.0]);
        assert_eq!(far, [Flag::CiUnusable]);
        assert_eq!(Status::of_flags(&far), Status::Untrustworthy);
        // A lopsided interval is judged by its far end: [91.1, 548.8] around 91.2.
        let lopsided = flags(&summary_with([99.9, 600.0]), 0, Verdict::Validated, None, &cfg, 0.4);
        assert!(lopsided.contains(&Flag::CiUnusable), "{lopsided:?}");
        assert!(flags_of([99.5, 100.5]).is_empty());
    }

    #[test]
    fn only_a_time_that_misses_its_target_by_more_than_a_clock_step_wants_more_rounds() {
        let cfg = adaptive();
        let agree = rows(&[round(100.0, true, [1.0, 1.0]), round(100.0, true, [1.0, 1.0])]);
        assert_eq!(short_of_target(&agree, &cfg, 1.0), None, "{:?}", agree.flags);
        let apart = rows(&[round(100.0, true, [1.0, 1.0]), round(130.0, true, [1.0, 1.0])]);
        let far = short_of_target(&apart, &cfg, 1.0).expect("it misses the ±1 % target");
        let rel = apart.summary.as_ref().unwrap().median_ci_rel_halfwidth();
        assert!((far - rel / cfg.ci_target_rel).abs() < 1e-9 && far > 1.0, "{far} {rel}");
        let mut stepped = apart.clone();
        stepped.samples = vec![100.0, 100.0 + 2e6, 100.0 + 4e6];
        assert_eq!(short_of_target(&stepped, &cfg, 1.0), None, "within the step its samples move in");
        let seed = model::SamplerSettings { method: Method::Seed, ..cfg };
        assert_eq!(short_of_target(&apart, &seed, 1.0), None, "the seed method's count is fixed");
    }

    #[test]
    fn an_empty_operation_within_a_timer_step_is_not_unusable() {
        assert!(!ci_unusable(0.0, [0.0, 0.0], 0.4));
        assert!(!ci_unusable(0.0, [0.0, 0.4], 0.41), "one step around nothing is a fine figure of nothing");
        assert!(ci_unusable(0.0, [0.0, 5.0], 0.4));
        assert!(ci_unusable(100.0, [f64::NAN, 101.0], 0.4));
        assert!(!ci_unusable(100.0, [95.0, 109.0], 0.4));
        assert!(ci_unusable(100.0, [95.0, 111.0], 0.4));
    }

    #[test]
    fn each_untrustworthy_cause_makes_its_row_untrustworthy() {
        let cfg = adaptive();
        let s = summary_with([99.5, 100.5]);
        let failed = flags(&s, 0, Verdict::Failed, None, &cfg, 0.4);
        assert_eq!(Status::of_flags(&failed), Status::Untrustworthy);
        let cut = flags(&s, 0, Verdict::Validated, Some(StopReason::Interrupted), &cfg, 0.4);
        assert_eq!((cut.as_slice(), Status::of_flags(&cut)), ([Flag::Interrupted].as_slice(), Status::Untrustworthy));
        let outliers = flags(&s, 50, Verdict::Validated, None, &cfg, 0.4);
        assert_eq!(
            (outliers.as_slice(), Status::of_flags(&outliers)),
            ([Flag::ManyOutliers].as_slice(), Status::Advisory)
        );
    }

    #[test]
    fn a_benchmark_cut_off_before_its_samples_reads_interrupted_not_failed() {
        let samples = Samples {
            per_op_ns: vec![100.0],
            iterations_per_sample: 10,
            stop: Some(StopReason::Interrupted),
            ..Samples::default()
        };
        let r = rows(&[Ok(Measured::new(samples, Vec::new()))]);
        assert_eq!(r.status, Status::Interrupted);
        assert!(
            r.reason.as_deref().is_some_and(|w| w.starts_with("Ctrl-C arrived before enough samples for a figure")),
            "{:?}",
            r.reason
        );
        assert!(!r.reason.as_deref().unwrap_or_default().contains("no samples"));
    }
}
