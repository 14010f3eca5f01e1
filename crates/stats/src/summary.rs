//! The [`Summary`] of one benchmark's samples: location, spread,
//! percentiles, bootstrap CIs, outlier counts and a drift check, built from
//! the moments of [`super::moments`].
//!
//! Order invariance: apart from the two drift fields, which are about the
//! time order of the samples by design, a summary depends only on the
//! multiset of samples and the seed. `summarize` sorts a copy first and
//! computes everything (bootstrap included) from it, so shuffling the input
//! gives a bit-for-bit identical result.

use serde::{Deserialize, Serialize};

use super::bootstrap::{CONFIDENCE_95, DEFAULT_RESAMPLES, bootstrap_median_mean, include_point};
use super::moments::{mad, mean, sample_stddev};
use super::order::{median, median_ci_order_stat, percentile};
use super::outliers::{Outliers, classify_outliers};
use super::structured;
use super::{StatsError, check_samples};

/// Smallest sample count for which [`Summary::drift`] is judged.
pub const DRIFT_MIN_SAMPLES: usize = 20;

/// Smallest relative change of the median between the two halves of a run
/// that counts as drift (2%), so that statistically clear but practically
/// negligible shifts on very long runs are not flagged.
pub const DRIFT_MIN_REL: f64 = 0.02;

/// Summary statistics of one benchmark's samples, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min_ns: f64,
    /// Largest sample.
    pub max_ns: f64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Median (mean of the two middle samples when `n` is even).
    pub median_ns: f64,
    /// Sample standard deviation (divisor `n − 1`).
    pub stddev_ns: f64,
    /// Median absolute deviation from the median, raw: `median |xᵢ − median|`,
    /// *not* scaled. Multiply by [`MAD_TO_SIGMA`](super::moments::MAD_TO_SIGMA) to compare it with a
    /// standard deviation.
    pub mad_ns: f64,
    /// 1st percentile (see [`percentile`]).
    pub p1_ns: f64,
    /// 5th percentile.
    pub p5_ns: f64,
    /// 95th percentile.
    pub p95_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// 95% bootstrap percentile CI of the median, `[lo, hi]`.
    pub median_ci95_ns: [f64; 2],
    /// 95% bootstrap percentile CI of the mean, `[lo, hi]`.
    pub mean_ci95_ns: [f64; 2],
    /// Tukey outlier counts.
    pub outliers: Outliers,
    /// Whether the first and second halves of the run (in time order)
    /// disagree; see [`summarize`] for the rule.
    pub drift: bool,
    /// `(median of 2nd half − median of 1st half) / |overall median|`:
    /// positive when later samples are larger. 0 when the halves agree
    /// exactly; ±∞ when they differ but the overall median is exactly 0.
    pub drift_rel: f64,
    /// For samples taken in rounds: how the intervals were made and what the rounds showed
    /// ([`summarize_rounds`]); `None` for a plain [`summarize`].
    #[serde(default)]
    pub structure: Option<Structure>,
}

impl Summary {
    /// Half-width of the median CI relative to the median:
    /// `(hi − lo) / 2 / |median|`.
    ///
    /// 0 when the interval has zero width (even if the median is 0);
    /// +∞ when the median is 0 but the interval is not; never NaN for a
    /// summary produced by [`summarize`].
    pub fn median_ci_rel_halfwidth(&self) -> f64 {
        let [lo, hi] = self.median_ci95_ns;
        // Halve first so that hi − lo cannot overflow.
        let half = hi / 2.0 - lo / 2.0;
        if half == 0.0 {
            0.0
        } else {
            // x / 0 is +∞ for x > 0, which is the intended answer.
            half / self.median_ns.abs()
        }
    }
}

/// Summarise samples (any order; not modified). Needs `n >= 2` and all
/// samples finite; negative samples are fine.
///
/// - Percentiles use [`percentile`] (linear interpolation between closest
///   ranks); outliers use [`classify_outliers`].
/// - `median_ci95_ns` and `mean_ci95_ns` are percentile-bootstrap 95%
///   intervals from the same [`DEFAULT_RESAMPLES`] resamples of the
///   *sorted* samples (so the result does not depend on input order),
///   drawn by a generator seeded with `seed`. The median interval equals
///   `bootstrap_ci(&sorted, median_in_place, DEFAULT_RESAMPLES, 0.95, seed)`
///   bit for bit (it is computed faster, from per-index counts). Each
///   interval is widened if needed to contain its point estimate. All
///   samples equal ⇒ both intervals collapse onto the value.
/// - Drift rule: split the samples in time order into a first half
///   (`n/2` samples) and a second half (the rest). Compute each half's
///   median and its 95% order-statistic CI ([`median_ci_order_stat`]).
///   `drift_rel = (m₂ − m₁) / |overall median|` (the larger |half median|
///   when the overall median is 0), and `drift` is true when
///   the two CIs do not overlap **and** `|drift_rel| > DRIFT_MIN_REL`.
///   With fewer than [`DRIFT_MIN_SAMPLES`] samples drift is not judged
///   (`drift = false`; `drift_rel` is still reported).
///
/// Cost: O(n log n) for the sort plus O(n) per resample; 10,000 samples
/// take about 20 ms in a release build.
///
/// # Errors
///
/// [`StatsError::TooFew`] with fewer than 2 samples;
/// [`StatsError::NotFinite`] for the first NaN or infinite sample.
pub fn summarize(samples: &[f64], seed: u64) -> Result<Summary, StatsError> {
    check_samples(samples, 2)?;
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let (median_ci, mean_ci) = bootstrap_median_mean(&sorted, DEFAULT_RESAMPLES, CONFIDENCE_95, seed);
    Ok(describe(samples, &sorted, median_ci, mean_ci, None))
}

/// Summarise samples taken in rounds (each in time order), with intervals that respect that
/// structure ([`super::structured`]): each round's start-up transient is cut (MSER-5, or the
/// counts given in `drops`, e.g. those of the total when summarising a stage of a
/// breakdown), the point statistics describe the pooled steady-state samples, and the median
/// and mean CIs come from a hierarchical bootstrap (rounds, then circular blocks within each)
/// with `resamples` replicates. `step` is the smallest difference the clock can show (its
/// resolution): two levels closer than [`LEVEL_MIN_STEPS`] steps are not told apart.
/// [`Summary::structure`] records how: per-round medians with
/// their own intervals, what was dropped, whether the rounds disagree beyond their
/// uncertainty (`unstable`), and two levels when the samples fall into two.
///
/// # Errors
///
/// As [`summarize`], for the pooled steady-state samples.
pub fn summarize_rounds(
    rounds: &[&[f64]],
    drops: Option<&[usize]>,
    resamples: usize,
    seed: u64,
    step: f64,
) -> Result<Summary, StatsError> {
    let drops: Vec<usize> = match drops {
        Some(d) => rounds.iter().enumerate().map(|(i, r)| d.get(i).copied().unwrap_or(0).min(r.len())).collect(),
        None => rounds.iter().map(|r| structured::mser5(r)).collect(),
    };
    let steady: Vec<&[f64]> = rounds.iter().zip(&drops).map(|(r, &d)| &r[d..]).collect();
    let pooled: Vec<f64> = steady.concat();
    check_samples(&pooled, 2)?;
    let mut sorted = pooled.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    let blocks: Vec<f64> = steady.iter().map(|r| structured::block_length(r)).collect();
    let (median_ci, mean_ci) = structured::hierarchical_ci(&steady, &blocks, resamples, CONFIDENCE_95, seed);

    let mut per_round = Vec::with_capacity(rounds.len());
    for (i, r) in steady.iter().enumerate() {
        let (median_ns, ci, _) = if r.is_empty() {
            (f64::NAN, [f64::NAN; 2], 1.0)
        } else {
            structured::round_median_ci(r, ROUND_RESAMPLES, structured::round_seed(seed, i))
        };
        per_round.push(RoundSummary {
            n: rounds[i].len(),
            dropped: drops[i],
            median_ns,
            median_ci95_ns: ci,
            block_length: blocks[i],
        });
    }
    let measured: Vec<&RoundSummary> = per_round.iter().filter(|r| r.median_ns.is_finite()).collect();
    let medians: Vec<f64> = measured.iter().map(|r| r.median_ns).collect();
    let ses: Vec<f64> = measured.iter().map(|r| (r.median_ci95_ns[1] - r.median_ci95_ns[0]) / (2.0 * Z_975)).collect();
    let heterogeneity_p = structured::heterogeneity(&medians, &ses);
    let overall = median(&sorted);
    let (lo, hi) = medians.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| (a.min(m), b.max(m)));
    let spread = if overall != 0.0 && medians.len() >= 2 { (hi - lo) / overall.abs() } else { 0.0 };
    let unstable = heterogeneity_p < UNSTABLE_P && spread > DRIFT_MIN_REL;
    let structure = Structure {
        interval: if measured.len() >= 2 {
            "hierarchical bootstrap: rounds, then circular blocks within each round".into()
        } else {
            "circular block bootstrap within one round: variation between rounds not covered".into()
        },
        rounds: per_round,
        dropped: drops.iter().sum(),
        heterogeneity_p,
        unstable,
        levels: structured::two_levels(&sorted, DRIFT_MIN_REL, LEVEL_MIN_STEPS * step)
            .map(|l| l.to_vec())
            .unwrap_or_default(),
    };
    Ok(describe(&pooled, &sorted, median_ci, mean_ci, Some(structure)))
}

/// Widens `summary`'s median and mean intervals to at least ±half the step its samples move in
/// (`sorted`: the samples it describes, ascending): the smallest gap between distinct values,
/// or `clock_step` when all are equal. For times read off a clock, whose samples are quantised:
/// three rounds with the same quantised median would otherwise give an interval of no width, a
/// promise of certainty no measurement makes. Not for exact figures (a size in bytes, a count),
/// whose equal samples are the figure.
pub fn floor_at_resolution(summary: &mut Summary, sorted: &[f64], clock_step: f64) {
    let quantum = sample_quantum(sorted).unwrap_or(clock_step);
    summary.median_ci95_ns = at_least_quantum(summary.median_ci95_ns, summary.median_ns, quantum);
    summary.mean_ci95_ns = at_least_quantum(summary.mean_ci95_ns, summary.mean_ns, quantum);
}

/// The finest step the samples show: the smallest gap between two distinct sample values
/// (`sorted` ascending; gaps within floating-point rounding of the values do not count), or
/// `None` when all samples are equal.
pub fn sample_quantum(sorted: &[f64]) -> Option<f64> {
    sorted
        .windows(2)
        .map(|w| (w[1] - w[0], w[1].abs().max(w[0].abs())))
        .filter(|&(gap, scale)| gap > scale * 1e-12)
        .map(|(gap, _)| gap)
        .min_by(f64::total_cmp)
}

/// `ci` around `estimate`, widened to at least ±`quantum`/2: samples that move in steps of
/// `quantum` cannot place a statistic more finely than that.
fn at_least_quantum(ci: [f64; 2], estimate: f64, quantum: f64) -> [f64; 2] {
    if !(quantum.is_finite() && quantum > 0.0 && estimate.is_finite()) {
        return ci;
    }
    [ci[0].min(estimate - quantum / 2.0), ci[1].max(estimate + quantum / 2.0)]
}

/// The point statistics of `sorted` (the same samples as `time_order`, ascending), with the
/// given intervals widened to contain their estimates.
fn describe(
    time_order: &[f64],
    sorted: &[f64],
    median_ci: [f64; 2],
    mean_ci: [f64; 2],
    structure: Option<Structure>,
) -> Summary {
    let n = sorted.len();
    let median_ns = median(sorted);
    let mean_ns = mean(sorted);
    let (drift, drift_rel) = drift(time_order, median_ns);
    Summary {
        n,
        min_ns: sorted[0],
        max_ns: sorted[n - 1],
        mean_ns,
        median_ns,
        stddev_ns: sample_stddev(sorted, mean_ns),
        mad_ns: mad(sorted, median_ns),
        p1_ns: percentile(sorted, 1.0),
        p5_ns: percentile(sorted, 5.0),
        p95_ns: percentile(sorted, 95.0),
        p99_ns: percentile(sorted, 99.0),
        median_ci95_ns: include_point(median_ci, median_ns),
        mean_ci95_ns: include_point(mean_ci, mean_ns),
        outliers: classify_outliers(sorted),
        drift,
        drift_rel,
        structure,
    }
}

/// Two levels must lie at least this many clock steps apart (quantised samples near zero
/// otherwise look like levels one step apart).
pub const LEVEL_MIN_STEPS: f64 = 4.0;

/// Replicates of each round's own median interval (used to judge whether rounds disagree).
const ROUND_RESAMPLES: usize = 400;

/// The 97.5 % normal quantile, turning a 95 % interval's half-width into a standard error.
const Z_975: f64 = 1.959_963_984_540_054;

/// P-value of the rounds' heterogeneity test below which, with a spread over
/// [`DRIFT_MIN_REL`], a row is `unstable`.
pub const UNSTABLE_P: f64 = 0.001;

/// How a [`Summary`]'s intervals were made from samples taken in rounds, and what the rounds
/// showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Structure {
    /// The interval's method, in words.
    pub interval: String,
    /// Each round: its samples, what was dropped, its median and that median's own interval.
    pub rounds: Vec<RoundSummary>,
    /// Start-up samples dropped over all rounds (MSER-5).
    pub dropped: usize,
    /// P-value of Cochran's Q test that the rounds share one median.
    pub heterogeneity_p: f64,
    /// The rounds' medians disagree beyond their uncertainty (p < 0.001) by over 2 %: the
    /// machine changed level during the run.
    pub unstable: bool,
    /// Two well-separated levels in the samples, when there are two (else empty).
    pub levels: Vec<structured::Level>,
}

/// JSON has no NaN (serde writes it as `null`): read `null` back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// [`nan_if_null`] for an interval.
fn nan_pair_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    let [a, b] = <[Option<f64>; 2]>::deserialize(d)?;
    Ok([a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN)])
}

/// One round of a [`Structure`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSummary {
    /// Samples taken in the round.
    pub n: usize,
    /// Start-up samples dropped from it.
    pub dropped: usize,
    /// Median of its steady-state samples, ns (NaN, written `null`, for a round with none:
    /// one cut short by Ctrl-C).
    #[serde(deserialize_with = "nan_if_null")]
    pub median_ns: f64,
    /// 95 % circular-block-bootstrap interval of that median (NaNs likewise).
    #[serde(deserialize_with = "nan_pair_if_null")]
    pub median_ci95_ns: [f64; 2],
    /// Block length used, in samples.
    pub block_length: f64,
}

/// The drift check of [`summarize`]; `samples` in time order, `n >= 2`.
/// Returns `(drift, drift_rel)`.
fn drift(samples: &[f64], overall_median: f64) -> (bool, f64) {
    let (first, second) = samples.split_at(samples.len() / 2);
    let mut first = first.to_vec();
    let mut second = second.to_vec();
    first.sort_unstable_by(f64::total_cmp);
    second.sort_unstable_by(f64::total_cmp);
    let change = median(&second) - median(&first);
    // Relative to the overall median; around a zero median (possible after overhead
    // subtraction) relative to the larger half-median instead, so the value stays finite
    // and serialisable.
    let denominator =
        if overall_median != 0.0 { overall_median.abs() } else { median(&first).abs().max(median(&second).abs()) };
    let rel = if change == 0.0 { 0.0 } else { change / denominator };
    if samples.len() < DRIFT_MIN_SAMPLES {
        return (false, rel);
    }
    let (lo1, hi1) = median_ci_order_stat(&first, CONFIDENCE_95);
    let (lo2, hi2) = median_ci_order_stat(&second, CONFIDENCE_95);
    let overlap = lo1 <= hi2 && lo2 <= hi1;
    (!overlap && rel.abs() > DRIFT_MIN_REL, rel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::MAD_TO_SIGMA;
    use crate::rng::Rng;
    use crate::special::normal_quantile;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn a_round_cut_short_before_any_sample_survives_a_round_trip_through_json() {
        let a: Vec<f64> = (0..50).map(|i| 100.0 + f64::from(i % 5)).collect();
        let s = summarize_rounds(&[&a, &[]], None, 100, 1, 0.0).expect("one round has samples");
        let st = s.structure.as_ref().unwrap();
        assert_eq!(st.rounds.len(), 2);
        assert!(st.rounds[1].median_ns.is_nan());
        let text = serde_json::to_string(&s).unwrap();
        let back: Summary = serde_json::from_str(&text).expect("null reads back as NaN");
        assert!(back.structure.unwrap().rounds[1].median_ns.is_nan());
    }

    #[test]
    fn rounds_with_the_same_quantised_median_still_give_an_interval_of_one_step() {
        // Three rounds of values on a 0.25 grid, each with the same median: the bootstrap alone
        // finds no uncertainty at all.
        let round: Vec<f64> = (0..60).map(|i| if i % 10 == 0 { 100.25 } else { 100.0 }).collect();
        let floored = |rounds: &[&[f64]], step: f64| {
            let mut s = summarize_rounds(rounds, Some(&vec![0; rounds.len()]), 200, 1, step).unwrap();
            let mut sorted = rounds.concat();
            sorted.sort_by(f64::total_cmp);
            floor_at_resolution(&mut s, &sorted, step);
            s
        };
        let unfloored = summarize_rounds(&[&round, &round, &round], Some(&[0, 0, 0]), 200, 1, 10.0).unwrap();
        assert_eq!(unfloored.median_ci95_ns, [100.0, 100.0], "the bootstrap alone: no width");
        let s = floored(&[&round, &round, &round], 10.0);
        assert_eq!(s.median_ns, 100.0);
        assert_eq!(s.median_ci95_ns, [99.875, 100.125], "±half the step the samples show");
        assert!(s.mean_ci95_ns[1] - s.mean_ci95_ns[0] >= 0.25);
        // All samples equal: the clock's step is the finest step there is.
        let flat = vec![7.0; 40];
        let s = floored(&[&flat, &flat], 0.5);
        assert_eq!(s.median_ci95_ns, [6.75, 7.25]);
        assert_eq!(sample_quantum(&[1.0, 1.0, 1.5, 3.0]), Some(0.5));
        assert_eq!(sample_quantum(&[2.0, 2.0]), None);
    }

    #[test]
    fn hand_computed_small_summary() {
        // Sorted: 1 2 3 4 100; median 3; mean 22;
        // deviations from 3: 2 1 0 1 97 → sorted 0 1 1 2 97 → MAD 1.
        // stddev: squares around 22 = 441+400+361+324+6084 = 7610; /4 → 1902.5.
        let s = summarize(&[4.0, 100.0, 1.0, 3.0, 2.0], 7).expect("valid");
        assert_eq!(s.n, 5);
        assert_eq!((s.min_ns, s.max_ns), (1.0, 100.0));
        assert_eq!(s.median_ns, 3.0);
        assert_eq!(s.mean_ns, 22.0);
        assert_eq!(s.mad_ns, 1.0);
        assert!(close(s.stddev_ns, 1902.5_f64.sqrt(), 1e-12));
        // p1: h = 4·0.01 = 0.04 → 1.04; p99: h = 3.96 → 4 + 0.96·96.
        assert!(close(s.p1_ns, 1.04, 1e-12));
        assert!(close(s.p5_ns, 1.2, 1e-12));
        assert!(close(s.p95_ns, 4.0 + 0.8 * 96.0, 1e-9));
        assert!(close(s.p99_ns, 4.0 + 0.96 * 96.0, 1e-9));
        // Q1 = 2, Q3 = 4, IQR 2: 100 > 4 + 6 is a severe high outlier.
        assert_eq!(s.outliers.high_severe, 1);
        assert_eq!(s.outliers.total(), 1);
        assert!(!s.drift);
    }

    #[test]
    fn even_count_median_and_mad() {
        // Sorted 1 2 4 7: median 3; |dev| 2 1 1 4 → sorted 1 1 2 4 → 1.5.
        let s = summarize(&[7.0, 1.0, 4.0, 2.0], 0).expect("valid");
        assert_eq!(s.median_ns, 3.0);
        assert_eq!(s.mad_ns, 1.5);
        assert_eq!(s.mean_ns, 3.5);
    }

    #[test]
    fn two_samples_work() {
        let s = summarize(&[10.0, 20.0], 1).expect("valid");
        assert_eq!(s.median_ns, 15.0);
        assert_eq!(s.mean_ns, 15.0);
        assert_eq!(s.mad_ns, 5.0);
        assert!(close(s.stddev_ns, 50.0_f64.sqrt(), 1e-12));
        assert_eq!(s.median_ci95_ns, [10.0, 20.0]);
        assert_eq!(s.mean_ci95_ns, [10.0, 20.0]);
        assert_eq!(s.outliers, Outliers::default());
        assert!(!s.drift);
        assert_eq!(s.drift_rel, 10.0 / 15.0);
    }

    #[test]
    fn all_equal_samples_collapse() {
        let s = summarize(&[0.1; 64], 3).expect("valid");
        assert_eq!((s.min_ns, s.max_ns, s.mean_ns, s.median_ns), (0.1, 0.1, 0.1, 0.1));
        assert_eq!((s.stddev_ns, s.mad_ns), (0.0, 0.0));
        assert_eq!(s.median_ci95_ns, [0.1, 0.1]);
        assert_eq!(s.mean_ci95_ns, [0.1, 0.1]);
        assert_eq!(s.outliers, Outliers::default());
        assert_eq!((s.drift, s.drift_rel), (false, 0.0));
        assert_eq!(s.median_ci_rel_halfwidth(), 0.0);
        let z = summarize(&[0.0; 30], 3).expect("valid");
        assert_eq!(z.median_ci_rel_halfwidth(), 0.0);
        assert_eq!(z.drift_rel, 0.0);
    }

    #[test]
    fn negative_samples_are_allowed() {
        let s = summarize(&[-2.0, -1.0, 0.5, 1.0, 3.0], 1).expect("valid");
        assert_eq!(s.median_ns, 0.5);
        assert_eq!(s.min_ns, -2.0);
        assert!(s.median_ci95_ns[0] <= 0.5 && 0.5 <= s.median_ci95_ns[1]);
    }

    #[test]
    fn invalid_input_is_rejected() {
        assert_eq!(summarize(&[], 0), Err(StatsError::TooFew { needed: 2, got: 0 }));
        assert_eq!(summarize(&[1.0], 0), Err(StatsError::TooFew { needed: 2, got: 1 }));
        assert!(matches!(
            summarize(&[1.0, 2.0, f64::NAN], 0),
            Err(StatsError::NotFinite { index: 2, value }) if value.is_nan()
        ));
        assert_eq!(
            summarize(&[f64::NEG_INFINITY, 2.0], 0),
            Err(StatsError::NotFinite { index: 0, value: f64::NEG_INFINITY })
        );
    }

    #[test]
    fn rel_halfwidth_edge_cases() {
        let mut s = summarize(&[1.0, 2.0, 3.0, 4.0], 0).expect("valid");
        s.median_ns = 2.0;
        s.median_ci95_ns = [1.0, 3.0];
        assert_eq!(s.median_ci_rel_halfwidth(), 0.5);
        s.median_ns = -2.0;
        assert_eq!(s.median_ci_rel_halfwidth(), 0.5);
        s.median_ns = 0.0;
        assert_eq!(s.median_ci_rel_halfwidth(), f64::INFINITY);
        s.median_ci95_ns = [0.0, 0.0];
        assert_eq!(s.median_ci_rel_halfwidth(), 0.0);
        s.median_ci95_ns = [-f64::MAX, f64::MAX];
        s.median_ns = 1.0;
        assert_eq!(s.median_ci_rel_halfwidth(), f64::MAX);
    }

    /// Normal(mu, sigma) samples by inversion, for tests.
    fn normal_samples(rng: &mut Rng, n: usize, mu: f64, sigma: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u = rng.next_f64().max(f64::MIN_POSITIVE);
                mu + sigma * normal_quantile(u)
            })
            .collect()
    }

    #[test]
    fn drift_is_flagged_for_a_step_and_not_for_noise() {
        let mut rng = Rng::new(8);
        let mut v = normal_samples(&mut rng, 200, 100.0, 2.0);
        let s = summarize(&v, 0).expect("valid");
        assert!(!s.drift, "{s:?}");
        assert!(s.drift_rel.abs() < 0.02);
        // Second half 10% slower.
        for x in &mut v[100..] {
            *x += 10.0;
        }
        let s = summarize(&v, 0).expect("valid");
        assert!(s.drift, "{s:?}");
        assert!(close(s.drift_rel, 0.1, 0.03), "{}", s.drift_rel);
        // Same step but too few samples to judge.
        let s = summarize(&v[90..109], 0).expect("valid");
        assert!(!s.drift && s.drift_rel > 0.0);
    }

    #[test]
    fn tiny_but_clear_drift_is_not_flagged() {
        // A 1% step with almost no noise: CIs separate, but below 2%.
        let v: Vec<f64> = (0..400).map(|i| if i < 200 { 100.0 } else { 101.0 } + f64::from(i % 7) * 0.01).collect();
        let s = summarize(&v, 0).expect("valid");
        assert!(!s.drift);
        assert!(close(s.drift_rel, 0.01, 0.002));
    }

    #[test]
    fn drift_rel_stays_finite_around_a_zero_median() {
        let v: Vec<f64> = (0..40).map(|i| if i < 20 { -1.0 } else { 1.0 }).collect();
        let s = summarize(&v, 0).expect("valid");
        assert_eq!(s.median_ns, 0.0);
        assert_eq!(s.drift_rel, 2.0);
        assert!(s.drift);
    }

    #[test]
    fn cis_have_plausible_width_for_normal_data() {
        // n = 2000, sigma 10: se(mean) ≈ 0.224, se(median) ≈ 0.280, so
        // 95% half-widths ≈ 0.44 and 0.55.
        let mut rng = Rng::new(21);
        let v = normal_samples(&mut rng, 2000, 500.0, 10.0);
        let s = summarize(&v, 1).expect("valid");
        let mean_half = (s.mean_ci95_ns[1] - s.mean_ci95_ns[0]) / 2.0;
        let median_half = (s.median_ci95_ns[1] - s.median_ci95_ns[0]) / 2.0;
        assert!(close(mean_half, 0.44, 0.08), "{mean_half}");
        assert!(close(median_half, 0.55, 0.15), "{median_half}");
        assert!(close(s.stddev_ns, 10.0, 0.5));
        assert!(close(s.mad_ns * MAD_TO_SIGMA, 10.0, 0.8));
        assert!(close(MAD_TO_SIGMA, 1.0 / normal_quantile(0.75), 1e-12));
    }

    #[test]
    fn summary_is_frozen_for_a_fixed_input_and_seed() {
        // Golden values (exact: each literal is the shortest decimal that
        // round-trips). A change here means every published CI would change:
        // the generator, the resampling order or the interval rule moved.
        let v: Vec<f64> = (0..50).map(|i| f64::from((i * 7919) % 97)).collect();
        let s = summarize(&v, 2024).expect("valid");
        assert_eq!(s.median_ci95_ns, [31.5, 61.0]);
        assert_eq!(s.mean_ci95_ns, [38.3175, 54.3435]);
    }

    /// Samples for properties: a mix of continuous values and ties.
    fn samples() -> impl Strategy<Value = Vec<f64>> {
        prop_oneof![
            prop::collection::vec(-1e3..1e6f64, 2..120),
            prop::collection::vec((0..20i32).prop_map(f64::from), 2..120),
        ]
    }

    fn assert_scaled(a: f64, b: f64, c: f64, scale: f64) -> Result<(), TestCaseError> {
        let tol = 1e-9 * scale.max(1.0);
        prop_assert!((a * c - b).abs() <= tol, "{} * {} vs {}", a, c, b);
        Ok(())
    }

    fn location_fields(s: &Summary) -> [f64; 13] {
        [
            s.min_ns,
            s.max_ns,
            s.mean_ns,
            s.median_ns,
            s.p1_ns,
            s.p5_ns,
            s.p95_ns,
            s.p99_ns,
            s.median_ci95_ns[0],
            s.median_ci95_ns[1],
            s.mean_ci95_ns[0],
            s.mean_ci95_ns[1],
            0.0,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn point_estimates_lie_in_their_intervals(v in samples(), seed in any::<u64>()) {
            let s = summarize(&v, seed).expect("valid");
            prop_assert!(s.min_ns <= s.median_ns && s.median_ns <= s.max_ns);
            prop_assert!(s.median_ci95_ns[0] <= s.median_ns && s.median_ns <= s.median_ci95_ns[1]);
            prop_assert!(s.mean_ci95_ns[0] <= s.mean_ns && s.mean_ns <= s.mean_ci95_ns[1]);
            prop_assert!(s.min_ns <= s.p1_ns && s.p1_ns <= s.p5_ns && s.p5_ns <= s.median_ns);
            prop_assert!(s.median_ns <= s.p95_ns && s.p95_ns <= s.p99_ns && s.p99_ns <= s.max_ns);
            prop_assert!(s.stddev_ns >= 0.0 && s.mad_ns >= 0.0);
            prop_assert!(s.median_ci_rel_halfwidth() >= 0.0);
        }

        #[test]
        fn same_seed_gives_identical_output(v in samples(), seed in any::<u64>()) {
            prop_assert_eq!(summarize(&v, seed), summarize(&v, seed));
        }

        #[test]
        fn shuffling_changes_only_the_drift_fields(
            v in samples(),
            seed in any::<u64>(),
            shuffle_seed in any::<u64>(),
        ) {
            let mut w = v.clone();
            let mut rng = Rng::new(shuffle_seed);
            for i in (1..w.len()).rev() {
                w.swap(i, rng.index(i + 1));
            }
            let a = summarize(&v, seed).expect("valid");
            let mut b = summarize(&w, seed).expect("valid");
            b.drift = a.drift;
            b.drift_rel = a.drift_rel;
            prop_assert_eq!(a, b);
        }

        #[test]
        fn scaling_scales_location_and_spread(
            v in samples(),
            c in 0.001..1000.0f64,
            seed in any::<u64>(),
        ) {
            let w: Vec<f64> = v.iter().map(|x| x * c).collect();
            let a = summarize(&v, seed).expect("valid");
            let b = summarize(&w, seed).expect("valid");
            let scale = a.max_ns.abs().max(a.min_ns.abs()) * c;
            for (x, y) in location_fields(&a).into_iter().zip(location_fields(&b)) {
                assert_scaled(x, y, c, scale)?;
            }
            assert_scaled(a.stddev_ns, b.stddev_ns, c, scale)?;
            assert_scaled(a.mad_ns, b.mad_ns, c, scale)?;
            prop_assert_eq!(a.n, b.n);
        }

        #[test]
        fn power_of_two_scaling_is_exact(
            v in samples(),
            k in -20i32..20,
            seed in any::<u64>(),
        ) {
            // Multiplying by 2^k is exact in binary floating point, so every
            // field, outliers and drift included, must match exactly.
            let c = 2f64.powi(k);
            let w: Vec<f64> = v.iter().map(|x| x * c).collect();
            let a = summarize(&v, seed).expect("valid");
            let b = summarize(&w, seed).expect("valid");
            for (x, y) in location_fields(&a).into_iter().zip(location_fields(&b)) {
                prop_assert_eq!(x * c, y);
            }
            prop_assert_eq!(a.mad_ns * c, b.mad_ns);
            prop_assert_eq!(a.outliers, b.outliers);
            prop_assert_eq!(a.drift, b.drift);
            prop_assert_eq!(a.drift_rel, b.drift_rel);
        }

        #[test]
        fn translation_shifts_location_and_keeps_spread(
            v in samples(),
            t in -1e4..1e4f64,
            seed in any::<u64>(),
        ) {
            let w: Vec<f64> = v.iter().map(|x| x + t).collect();
            let a = summarize(&v, seed).expect("valid");
            let b = summarize(&w, seed).expect("valid");
            let tol = 1e-9 * (a.max_ns.abs().max(a.min_ns.abs()) + t.abs()).max(1.0);
            for (x, y) in location_fields(&a).into_iter().zip(location_fields(&b)).take(12) {
                prop_assert!((x + t - y).abs() <= tol, "{} + {} vs {}", x, t, y);
            }
            prop_assert!((a.stddev_ns - b.stddev_ns).abs() <= tol);
            prop_assert!((a.mad_ns - b.mad_ns).abs() <= tol);
        }

        #[test]
        fn integer_translation_keeps_outliers_exactly(
            v in prop::collection::vec((0..50i32).prop_map(f64::from), 2..120),
            t in -1000i32..1000,
            seed in any::<u64>(),
        ) {
            // Integer data and shifts keep every quartile and fence exact.
            let w: Vec<f64> = v.iter().map(|x| x + f64::from(t)).collect();
            let a = summarize(&v, seed).expect("valid");
            let b = summarize(&w, seed).expect("valid");
            prop_assert_eq!(a.outliers, b.outliers);
            prop_assert_eq!(a.mad_ns, b.mad_ns);
        }
    }
}
