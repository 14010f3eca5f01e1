//! Seeded, reproducible bootstrap confidence intervals.
//!
//! The percentile bootstrap (Efron & Tibshirani, *An Introduction to the
//! Bootstrap*, 1993, ch. 13): draw `resamples` samples of size n with
//! replacement from the data, compute the statistic on each, and report the
//! `(1 − c)/2` and `(1 + c)/2` percentiles of those values as the
//! confidence-`c` interval. It assumes nothing about the distribution,
//! which suits skewed, heavy-tailed timing data.
//!
//! Reproducibility: resampling uses this module's own generator
//! ([`Rng`]) seeded from the caller's seed, and draws indices in a fixed
//! order, so a given input, seed and resample count always produce the same
//! interval. Because indices are drawn by position, the result depends on
//! the order of the input; callers that want order-invariant results (such
//! as [`summarize`](super::summarize) and [`median_difference`]) bootstrap
//! a sorted copy.
//!
//! Monte Carlo error: with 1,000 resamples (the order Efron & Tibshirani
//! recommend for percentile intervals) each bound of a 95% interval has a
//! standard error of about 2% of the interval's width; that is well below
//! what matters when comparing OS primitives, and the seed makes it
//! repeatable.

use serde::{Deserialize, Serialize};

use super::order::{lerp, median, median_in_place, percentile};
use super::rng::Rng;
use super::{StatsError, check_samples};

/// Resamples used by [`summarize`](super::summarize) and
/// [`median_difference`].
pub const DEFAULT_RESAMPLES: usize = 1_000;

/// Confidence level of the `*_ci95` intervals.
pub const CONFIDENCE_95: f64 = 0.95;

/// Seeded, reproducible bootstrap percentile CI of any statistic.
///
/// `statistic` receives a resample in a reused buffer that it may reorder
/// (for example with [`median_in_place`]); it should not depend on the
/// order of the values and should return a finite number. `confidence` is
/// clamped to `[0, 1]`.
///
/// Returns `[NaN, NaN]` when `samples` is empty or `resamples` is 0.
pub fn bootstrap_ci(
    samples: &[f64],
    statistic: impl Fn(&mut [f64]) -> f64,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> [f64; 2] {
    if samples.is_empty() || resamples == 0 {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = Rng::new(seed);
    let mut buf = vec![0.0; samples.len()];
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        resample_into(&mut rng, samples, &mut buf);
        values.push(statistic(&mut buf));
    }
    percentile_interval(&mut values, confidence)
}

/// Bootstrap percentile CIs of the median and of the mean together, from
/// one set of `resamples` resamples of an ascending `sorted` slice.
///
/// Equivalent to [`bootstrap_ci`] with [`median_in_place`] (bit for bit:
/// the same generator draws the same indices) and, up to summation order,
/// with [`mean`](super::moments::mean), but several times faster: a
/// resample of sorted data is fully described by how often each index was
/// drawn, so the median is found by walking those counts instead of
/// selecting, and the mean is a weighted sum, with no gathering of values
/// into a buffer. Returns `(median_ci, mean_ci)`; NaN intervals when
/// `sorted` is empty or `resamples` is 0.
pub(crate) fn bootstrap_median_mean(
    sorted: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> ([f64; 2], [f64; 2]) {
    let n = sorted.len();
    if n == 0 || resamples == 0 {
        return ([f64::NAN; 2], [f64::NAN; 2]);
    }
    if u32::try_from(n).is_err() {
        // Counts could overflow u32 (over 32 GiB of samples): use the
        // general path, which gives the same median interval.
        let mean = |r: &mut [f64]| super::moments::mean(r);
        return (
            bootstrap_ci(sorted, median_in_place, resamples, confidence, seed),
            bootstrap_ci(sorted, mean, resamples, confidence, seed),
        );
    }
    let mut rng = Rng::new(seed);
    let mut counts = vec![0u32; n];
    let mut medians = Vec::with_capacity(resamples);
    let mut means = Vec::with_capacity(resamples);
    // 0-based ranks of the two middle values (equal when n is odd).
    let (lower_rank, upper_rank) = ((n - 1) / 2, n / 2);
    let shift = sorted[0];
    for _ in 0..resamples {
        counts.fill(0);
        for _ in 0..n {
            counts[rng.index(n)] += 1;
        }
        medians.push(median_from_counts(sorted, &counts, lower_rank, upper_rank));
        // Shifted like `mean`, so equal values give exactly that value.
        let mean = shift + weighted_sum(&counts, sorted, shift) / n as f64;
        means.push(if mean.is_finite() {
            mean
        } else {
            counts.iter().zip(sorted).map(|(&c, &x)| f64::from(c) * (x / n as f64)).sum()
        });
    }
    (percentile_interval(&mut medians, confidence), percentile_interval(&mut means, confidence))
}

/// `Σ counts[i] · (values[i] − shift)`, accumulated in four interleaved
/// partial sums so that the additions do not wait on each other (a single
/// chain of dependent additions would dominate the bootstrap's run time).
fn weighted_sum(counts: &[u32], values: &[f64], shift: f64) -> f64 {
    let mut acc = [0.0; 4];
    let mut counts4 = counts.chunks_exact(4);
    let mut values4 = values.chunks_exact(4);
    for (c, v) in (&mut counts4).zip(&mut values4) {
        for k in 0..4 {
            acc[k] += f64::from(c[k]) * (v[k] - shift);
        }
    }
    for (&c, &v) in counts4.remainder().iter().zip(values4.remainder()) {
        acc[0] += f64::from(c) * (v - shift);
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// Median of the resample that holds `counts[i]` copies of `sorted[i]`:
/// the values at 0-based ranks `lower_rank` and `upper_rank`, averaged as
/// [`median_in_place`] does.
fn median_from_counts(sorted: &[f64], counts: &[u32], lower_rank: usize, upper_rank: usize) -> f64 {
    let mut seen = 0usize;
    let mut lower = None;
    for (&x, &c) in sorted.iter().zip(counts) {
        seen += c as usize;
        // `seen` values are now at ranks < seen.
        if lower.is_none() && seen > lower_rank {
            lower = Some(x);
        }
        if seen > upper_rank {
            return match lower {
                Some(lo) if upper_rank != lower_rank => lerp(lo, x, 0.5),
                _ => x,
            };
        }
    }
    // Unreachable: the counts add up to n > upper_rank.
    f64::NAN
}

/// Fills `buf` with `buf.len()` draws, with replacement, from `from`
/// (which must be non-empty).
pub(crate) fn resample_into(rng: &mut Rng, from: &[f64], buf: &mut [f64]) {
    for slot in buf.iter_mut() {
        *slot = from[rng.index(from.len())];
    }
}

/// The central `confidence` interval of bootstrap replicates: their
/// `(1 − c)/2` and `(1 + c)/2` percentiles. Sorts `values` in place.
pub(crate) fn percentile_interval(values: &mut [f64], confidence: f64) -> [f64; 2] {
    let confidence = if confidence.is_nan() { 1.0 } else { confidence.clamp(0.0, 1.0) };
    values.sort_unstable_by(f64::total_cmp);
    let tail = 100.0 * (1.0 - confidence) / 2.0;
    [percentile(values, tail), percentile(values, 100.0 - tail)]
}

/// Widens `ci` just enough to contain `point`.
///
/// A percentile interval can miss its point estimate only through Monte
/// Carlo noise or rounding on tiny, extreme samples; reporting an interval
/// that excludes the estimate it accompanies would only confuse readers.
pub(crate) fn include_point(ci: [f64; 2], point: f64) -> [f64; 2] {
    [ci[0].min(point), ci[1].max(point)]
}

/// A point estimate with its 95% confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub point: f64,
    /// 95% confidence interval `[lo, hi]`, `lo <= point <= hi`.
    pub ci95: [f64; 2],
}

/// Point estimate and CI of `median(a) − median(b)`, `a` and `b`
/// independent (resampled separately), e.g. "address space switch =
/// ctx.process − ctx.thread".
///
/// Each of [`DEFAULT_RESAMPLES`] replicates draws a resample of `a` and
/// one of `b` from one generator seeded with `seed` and records the
/// difference of their medians; the CI is the 95% percentile interval of
/// those differences, widened if needed to contain the point estimate.
/// Both inputs are sorted first, so the result depends only on their
/// contents, not their order.
///
/// # Errors
///
/// [`StatsError::TooFew`] if either slice has fewer than 2 samples;
/// [`StatsError::NotFinite`] for a NaN or infinite sample, with its index
/// in the slice that holds it (`a` is checked first).
pub fn median_difference(a: &[f64], b: &[f64], seed: u64) -> Result<Estimate, StatsError> {
    check_samples(a, 2)?;
    check_samples(b, 2)?;
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_unstable_by(f64::total_cmp);
    b.sort_unstable_by(f64::total_cmp);
    let point = median(&a) - median(&b);

    let mut rng = Rng::new(seed);
    let mut buf_a = vec![0.0; a.len()];
    let mut buf_b = vec![0.0; b.len()];
    let mut diffs = Vec::with_capacity(DEFAULT_RESAMPLES);
    for _ in 0..DEFAULT_RESAMPLES {
        resample_into(&mut rng, &a, &mut buf_a);
        resample_into(&mut rng, &b, &mut buf_b);
        diffs.push(median_in_place(&mut buf_a) - median_in_place(&mut buf_b));
    }
    let ci95 = include_point(percentile_interval(&mut diffs, CONFIDENCE_95), point);
    Ok(Estimate { point, ci95 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moments::mean;
    use crate::rng::Rng;
    use proptest::prelude::*;

    #[test]
    fn degenerate_inputs_give_nan() {
        let ci = bootstrap_ci(&[], median_in_place, 100, 0.95, 1);
        assert!(ci[0].is_nan() && ci[1].is_nan());
        let ci = bootstrap_ci(&[1.0, 2.0], median_in_place, 0, 0.95, 1);
        assert!(ci[0].is_nan() && ci[1].is_nan());
    }

    #[test]
    fn constant_data_collapse_the_interval() {
        let v = [3.25; 50];
        assert_eq!(bootstrap_ci(&v, median_in_place, 200, 0.95, 9), [3.25, 3.25]);
        assert_eq!(bootstrap_ci(&v, |r| mean(r), 200, 0.95, 9), [3.25, 3.25]);
    }

    #[test]
    fn two_point_median_interval_is_the_full_range() {
        // Resampled medians of {1, 3} are 1, 2 or 3 with probabilities
        // ¼, ½, ¼, so the 2.5% and 97.5% percentiles are 1 and 3.
        assert_eq!(bootstrap_ci(&[1.0, 3.0], median_in_place, 1000, 0.95, 4), [1.0, 3.0]);
    }

    #[test]
    fn same_seed_same_interval_other_seed_other_interval() {
        let v: Vec<f64> = (0..200).map(|i| ((i * 37) % 101) as f64).collect();
        let a = bootstrap_ci(&v, |r| mean(r), 500, 0.95, 123);
        let b = bootstrap_ci(&v, |r| mean(r), 500, 0.95, 123);
        let c = bootstrap_ci(&v, |r| mean(r), 500, 0.95, 124);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn mean_interval_matches_the_standard_error() {
        // Uniform 0..1000 (step 1): mean 499.5, sd ≈ 288.8, n = 1001, so
        // se ≈ 9.13 and the 95% interval is about ±17.9.
        let v: Vec<f64> = (0..=1000).map(f64::from).collect();
        let [lo, hi] = bootstrap_ci(&v, |r| mean(r), 2000, 0.95, 5);
        let half = (hi - lo) / 2.0;
        assert!((half - 17.9).abs() < 2.0, "half-width {half}");
        assert!(lo < 500.0 && 500.0 < hi);
    }

    #[test]
    fn counting_bootstrap_matches_buffer_bootstrap() {
        let mut rng = Rng::new(77);
        for n in [2, 3, 10, 11, 100, 257] {
            let mut v: Vec<f64> = (0..n).map(|_| (rng.next_f64() * 50.0).round()).collect();
            v.sort_by(f64::total_cmp);
            for seed in [0, 1, 99] {
                let (median_ci, mean_ci) = bootstrap_median_mean(&v, 300, 0.9, seed);
                let expected_median = bootstrap_ci(&v, median_in_place, 300, 0.9, seed);
                let expected_mean = bootstrap_ci(&v, |r| mean(r), 300, 0.9, seed);
                assert_eq!(median_ci, expected_median, "n={n} seed={seed}");
                for k in 0..2 {
                    assert!((mean_ci[k] - expected_mean[k]).abs() < 1e-12, "n={n}");
                }
            }
        }
        let (a, b) = bootstrap_median_mean(&[], 10, 0.95, 0);
        assert!(a.iter().chain(&b).all(|x| x.is_nan()));
    }

    #[test]
    fn weighted_sum_handles_remainders() {
        let counts = [1, 2, 3, 4, 5, 6, 7];
        let values = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0];
        assert_eq!(weighted_sum(&counts, &values, 1.0), 7.0);
        assert_eq!(weighted_sum(&counts[..3], &values[..3], 0.0), 6.0);
    }

    #[test]
    fn median_difference_of_shifted_samples() {
        let a: Vec<f64> = (0..101).map(|i| 100.0 + f64::from(i)).collect();
        let b: Vec<f64> = (0..101).map(f64::from).collect();
        let d = median_difference(&a, &b, 1).expect("valid input");
        assert_eq!(d.point, 100.0);
        assert!(d.ci95[0] < 100.0 && 100.0 < d.ci95[1], "{d:?}");
        // Each median has se ≈ 1/(2·f·√n) = 101/(2·√101) ≈ 5, so the
        // difference has se ≈ 7 and a 95% half-width near 14.
        assert!(d.ci95[1] - d.ci95[0] < 40.0, "{d:?}");
        assert_eq!(d, median_difference(&a, &b, 1).expect("valid input"));
    }

    #[test]
    fn median_difference_validates_inputs() {
        assert_eq!(median_difference(&[1.0], &[1.0, 2.0], 0), Err(StatsError::TooFew { needed: 2, got: 1 }));
        assert_eq!(median_difference(&[1.0, 2.0], &[], 0), Err(StatsError::TooFew { needed: 2, got: 0 }));
        assert!(matches!(
            median_difference(&[1.0, 2.0], &[1.0, f64::INFINITY], 0),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
    }

    proptest! {
        #[test]
        fn median_difference_is_order_invariant_and_contains_point(
            a in prop::collection::vec(-1e6..1e6f64, 2..60),
            b in prop::collection::vec(-1e6..1e6f64, 2..60),
            seed in any::<u64>(),
        ) {
            let d = median_difference(&a, &b, seed).expect("valid input");
            prop_assert!(d.ci95[0] <= d.point && d.point <= d.ci95[1]);
            let mut ra = a.clone();
            ra.reverse();
            let mut rb = b.clone();
            rb.rotate_left(1);
            prop_assert_eq!(d, median_difference(&ra, &rb, seed).expect("valid input"));
        }

        #[test]
        fn bootstrap_interval_lies_within_the_data(
            v in prop::collection::vec(-1e6..1e6f64, 1..80),
            conf in 0.0..1.0f64,
            seed in any::<u64>(),
        ) {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ci = bootstrap_ci(&v, median_in_place, 200, conf, seed);
            prop_assert!(lo <= ci[0] && ci[0] <= ci[1] && ci[1] <= hi);
        }
    }
}
