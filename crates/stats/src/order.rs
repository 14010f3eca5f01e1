//! Order statistics: percentiles, the median (from a sorted slice or by
//! selection in place), and the distribution-free confidence interval of the
//! median built from order statistics.
//!
//! # Percentile definition
//!
//! [`percentile`] is the "linear interpolation between closest ranks"
//! estimator, type 7 of Hyndman & Fan ("Sample quantiles in statistical
//! packages", *The American Statistician* 50(4), 1996) and the default of
//! R, NumPy and spreadsheets. For a sorted sample `x[0] <= … <= x[n−1]`:
//!
//! ```text
//! h = (n − 1) · p / 100          (fractional 0-based rank)
//! Q(p) = x[⌊h⌋] + (h − ⌊h⌋) · (x[⌊h⌋ + 1] − x[⌊h⌋])
//! ```
//!
//! so `Q(0)` is the minimum, `Q(100)` the maximum and `Q(50)` the median
//! (the mean of the two middle values when `n` is even).
//!
//! # Order-statistic CI of the median
//!
//! Whatever the (continuous) distribution, each sample falls below the true
//! median `m` with probability ½, so the number `B` of samples below `m` is
//! Binomial(n, ½) and, with 1-based order statistics `X(1) <= … <= X(n)`,
//!
//! ```text
//! P( X(j) <= m <= X(n+1−j) ) = 1 − 2 · P(B <= j − 1)
//! ```
//!
//! We pick the largest `j` whose coverage is still at least the requested
//! confidence (Conover, *Practical Nonparametric Statistics*, 3rd ed.,
//! 1999, §3.2; Hahn & Meeker, *Statistical Intervals*, 1991). The
//! binomial tail is summed exactly for `n <= 1000`; above that the normal
//! approximation with continuity correction,
//! `j = ⌊n/2 + 1/2 − z·√n/2⌋` with `z` the normal quantile, is used (it can
//! differ from the exact rank by at most one, which moves the coverage by
//! under 0.8 percentage points at n = 1000 and less as n grows). When even `j = 1` (the full range) cannot reach the
//! requested confidence (for example n < 6 at 95%), the full range
//! `[min, max]` is returned: the interval is then shorter on confidence
//! than asked, never narrower than the data allow.

use super::special::normal_quantile;

/// Largest sample size for which the binomial tail is summed exactly.
pub const EXACT_BINOMIAL_MAX_N: usize = 1000;

/// Linear interpolation `a + t·(b − a)` for `a <= b`, `t` in `[0, 1]`.
///
/// Exact at `t = 0` and when `a == b`, monotone in `t`, always within
/// `[a, b]`, and free of overflow for any finite `a`, `b`.
pub(crate) fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let v = a + (b - a) * t;
    let v = if v.is_finite() {
        v
    } else {
        // b − a overflowed (values near ±f64::MAX).
        a * (1.0 - t) + b * t
    };
    // max/min rather than clamp: they never panic, even on NaN input.
    v.max(a.min(b)).min(a.max(b))
}

/// The `p`-th percentile (`p` in `[0, 100]`) of an ascending `sorted`
/// slice, by linear interpolation between closest ranks (Hyndman–Fan
/// type 7; see the module documentation).
///
/// `p` outside `[0, 100]` is clamped. Returns NaN for an empty slice or a
/// NaN `p`. The slice must be sorted ascending; this is not checked.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || p.is_nan() {
        return f64::NAN;
    }
    // Multiply before dividing so that integral ranks stay exact.
    let h = (n - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
    let floor = h.floor();
    // 0 <= floor <= n − 1, so the cast and the index are in range.
    let i = floor as usize;
    let frac = h - floor;
    match sorted.get(i + 1) {
        Some(&next) if frac > 0.0 => lerp(sorted[i], next, frac),
        _ => sorted[i],
    }
}

/// Median of an ascending `sorted` slice: the middle value, or the mean of
/// the two middle values (`percentile(sorted, 50.0)` exactly). NaN if
/// empty.
pub fn median(sorted: &[f64]) -> f64 {
    percentile(sorted, 50.0)
}

/// Median of an unsorted slice, found by selection in O(n) expected time.
///
/// The slice is reordered. The result is bit-for-bit equal to
/// [`median`] of the sorted slice. NaN if empty. Values are ordered with
/// [`f64::total_cmp`].
pub fn median_in_place(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (left, &mut upper, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        return upper;
    }
    // n even: the lower middle value is the largest of the left part.
    let lower = left.iter().copied().max_by(f64::total_cmp).unwrap_or(upper);
    lerp(lower, upper, 0.5)
}

/// 0-based indices `(lo, hi)` into a sorted sample of size `n` of the
/// order-statistic confidence interval of the median (see the module
/// documentation). `lo + hi == n − 1` always. `None` when `n` is 0.
///
/// `confidence` is clamped to `[0, 1]`; NaN is treated as 1 (the widest
/// interval). Costs O(n) for `n <= 1000` and O(1) above.
pub fn median_ci_ranks(n: usize, confidence: f64) -> Option<(usize, usize)> {
    if n == 0 {
        return None;
    }
    let confidence = if confidence.is_nan() { 1.0 } else { confidence.clamp(0.0, 1.0) };
    let half_alpha = (1.0 - confidence) / 2.0;
    // j is the 1-based rank of the lower bound; the upper is n + 1 − j.
    let j = if n <= EXACT_BINOMIAL_MAX_N {
        exact_lower_rank(n, half_alpha)
    } else {
        let z = two_sided_z(confidence);
        let nf = n as f64;
        let j = (nf / 2.0 + 0.5 - z * nf.sqrt() / 2.0).floor();
        // Saturating float-to-int cast: −∞ or negative gives 0.
        j.max(0.0) as usize
    };
    let j = j.clamp(1, n.div_ceil(2));
    Some((j - 1, n - j))
}

/// Two-sided normal critical values `Φ⁻¹((1 + c)/2)` for common confidence
/// levels `c`, so that the sampler's stopping rule does not solve for them
/// after every sample (checked against [`normal_quantile`] in the tests).
const COMMON_Z: [(f64, f64); 3] =
    [(0.90, 1.644_853_626_951_472_2), (0.95, 1.959_963_984_540_054), (0.99, 2.575_829_303_548_900_4)];

/// `Φ⁻¹((1 + confidence)/2)`, from [`COMMON_Z`] when possible.
fn two_sided_z(confidence: f64) -> f64 {
    match COMMON_Z.iter().find(|(c, _)| *c == confidence) {
        Some(&(_, z)) => z,
        None => normal_quantile(0.5 + confidence / 2.0),
    }
}

/// Largest `j` with `P(B <= j − 1) <= half_alpha`, `B ~ Binomial(n, ½)`,
/// or 0 if there is none. Sums the pmf upwards from `P(B = 0) = 2^−n`
/// (representable for n <= 1000).
fn exact_lower_rank(n: usize, half_alpha: f64) -> usize {
    debug_assert!(n <= EXACT_BINOMIAL_MAX_N);
    let mut pmf = 0.5_f64.powi(n as i32);
    let mut cdf = pmf;
    let mut j = 0;
    while cdf <= half_alpha && j < n {
        // cdf = P(B <= j) is small enough, so rank j + 1 qualifies.
        j += 1;
        pmf *= (n - j + 1) as f64 / j as f64;
        cdf += pmf;
    }
    j
}

/// Distribution-free confidence interval of the median from order
/// statistics (binomial ranks; see the module documentation), read from an
/// ascending `sorted` slice. Cheap enough to call after every sample: the
/// sampler's stopping rule does.
///
/// Returns `(lo, hi)`, both elements of `sorted`; `(NaN, NaN)` if empty.
pub fn median_ci_order_stat(sorted: &[f64], confidence: f64) -> (f64, f64) {
    match median_ci_ranks(sorted.len(), confidence) {
        Some((lo, hi)) => (sorted[lo], sorted[hi]),
        None => (f64::NAN, f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use proptest::prelude::*;

    #[test]
    fn percentiles_of_small_known_sets() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&x, 0.0), 1.0);
        assert_eq!(percentile(&x, 25.0), 2.0);
        assert_eq!(percentile(&x, 50.0), 3.0);
        assert_eq!(percentile(&x, 100.0), 5.0);
        // h = 4 · 0.9 = 3.6 → 4 + 0.6 · (5 − 4)
        assert!((percentile(&x, 90.0) - 4.6).abs() < 1e-12);
        // h = 4 · 0.1 = 0.4 → 1.4
        assert!((percentile(&x, 10.0) - 1.4).abs() < 1e-12);
        let y = [10.0, 20.0, 30.0, 40.0];
        // h = 3 · 0.25 = 0.75 → 10 + 0.75 · 10
        assert_eq!(percentile(&y, 25.0), 17.5);
        assert_eq!(percentile(&y, 75.0), 32.5);
        // h = 3 · 0.99 = 2.97 → 30 + 0.97 · 10
        assert!((percentile(&y, 99.0) - 39.7).abs() < 1e-12);
        assert_eq!(percentile(&y, -5.0), 10.0);
        assert_eq!(percentile(&y, 250.0), 40.0);
        assert!(percentile(&[], 50.0).is_nan());
        assert!(percentile(&y, f64::NAN).is_nan());
        assert_eq!(percentile(&[7.0], 33.0), 7.0);
    }

    #[test]
    fn medians_of_small_known_sets() {
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[1.0, 4.0]), 2.5);
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[-3.0, -1.0, 0.0, 8.0]), -0.5);
        assert!(median(&[]).is_nan());
        let mut v = [10.0, 1.0, 4.0, 2.0];
        assert_eq!(median_in_place(&mut v), 3.0);
        let mut v = [5.0, -1.0, 3.0];
        assert_eq!(median_in_place(&mut v), 3.0);
        assert!(median_in_place(&mut []).is_nan());
    }

    #[test]
    fn lerp_is_exact_and_bounded() {
        assert_eq!(lerp(2.0, 2.0, 0.3), 2.0);
        assert_eq!(lerp(1.0, 3.0, 0.0), 1.0);
        assert_eq!(lerp(1.0, 3.0, 0.5), 2.0);
        let big = lerp(-f64::MAX, f64::MAX, 0.5);
        assert!(big.is_finite() && big.abs() < 1e300);
        assert_eq!(lerp(-f64::MAX, f64::MAX, 1.0), f64::MAX);
        assert!(lerp(f64::NAN, f64::NAN, 0.5).is_nan());
    }

    #[test]
    fn order_stat_ranks_match_tables() {
        // 95% ranks (1-based lower j) from the exact binomial, as in
        // published tables (e.g. Nair, Sankhyā 4, 1940), recomputed here.
        let table = [
            (6, 1),
            (7, 1),
            (8, 1),
            (9, 2),
            (10, 2),
            (11, 2),
            (12, 3),
            (13, 3),
            (14, 3),
            (15, 4),
            (16, 4),
            (17, 5),
            (20, 6),
            (25, 8),
            (30, 10),
            (50, 18),
            (100, 40),
        ];
        for (n, j) in table {
            assert_eq!(median_ci_ranks(n, 0.95), Some((j - 1, n - j)), "n={n}");
        }
        // Too few samples to reach 95%: the full range.
        for n in 1..=5 {
            assert_eq!(median_ci_ranks(n, 0.95), Some((0, n - 1)), "n={n}");
        }
        assert_eq!(median_ci_ranks(0, 0.95), None);
        // Confidence 0 collapses onto the middle order statistic(s).
        assert_eq!(median_ci_ranks(7, 0.0), Some((3, 3)));
        assert_eq!(median_ci_ranks(8, 0.0), Some((3, 4)));
        assert_eq!(median_ci_ranks(8, f64::NAN), Some((0, 7)));
        assert_eq!(median_ci_ranks(2000, 1.0), Some((0, 1999)));
    }

    /// Exact rank by summing the binomial pmf in log space (any n).
    fn exact_rank_log(n: usize, half_alpha: f64) -> usize {
        let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
        let mut ln_choose = 0.0_f64;
        let mut cdf = ln_half_n.exp();
        let mut j = 0;
        while cdf <= half_alpha {
            j += 1;
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
            cdf += (ln_choose + ln_half_n).exp();
        }
        j
    }

    #[test]
    fn common_z_values_are_normal_quantiles() {
        for (c, z) in COMMON_Z {
            let exact = normal_quantile(0.5 + c / 2.0);
            assert!((z - exact).abs() <= 1e-14 * z, "c={c}: {z} vs {exact}");
        }
        assert!((two_sided_z(0.8) - 1.281_551_565_544_601).abs() < 1e-14);
    }

    #[test]
    fn normal_approximation_is_within_one_rank_of_exact() {
        for n in (1001..=1100).chain([2000, 5000, 10_001, 20_000]) {
            for conf in [0.9, 0.95, 0.99] {
                let exact = exact_rank_log(n, (1.0 - conf) / 2.0);
                let (lo, _) = median_ci_ranks(n, conf).expect("n > 0");
                assert!((lo + 1).abs_diff(exact) <= 1, "n={n} conf={conf}: {} vs {exact}", lo + 1);
            }
        }
        // And the exact path agrees with the log-space sum.
        for n in [20, 100, 999, 1000] {
            assert_eq!(exact_lower_rank(n, 0.025), exact_rank_log(n, 0.025));
        }
    }

    #[test]
    fn order_stat_ci_covers_true_median_at_least_nominally() {
        // Exponential(1) samples: true median ln 2. Coverage should be
        // >= 95% (the binomial ranks are conservative), and not absurdly so.
        let mut rng = Rng::new(11);
        let trials = 2000;
        for n in [9, 40, 1500] {
            let mut hits = 0;
            for _ in 0..trials {
                let mut v: Vec<f64> = (0..n).map(|_| -(1.0 - rng.next_f64()).ln()).collect();
                v.sort_by(f64::total_cmp);
                let (lo, hi) = median_ci_order_stat(&v, 0.95);
                if lo <= std::f64::consts::LN_2 && std::f64::consts::LN_2 <= hi {
                    hits += 1;
                }
            }
            let cover = hits as f64 / trials as f64;
            // Binomial noise on 2000 trials: sd ≈ 0.005.
            assert!((0.935..=0.995).contains(&cover), "n={n}: {cover}");
        }
    }

    proptest! {
        #[test]
        fn median_lies_within_range(mut v in prop::collection::vec(-1e9..1e9f64, 1..200)) {
            let mut w = v.clone();
            v.sort_by(f64::total_cmp);
            let m = median(&v);
            prop_assert!(v[0] <= m && m <= v[v.len() - 1]);
            prop_assert_eq!(median_in_place(&mut w).to_bits(), m.to_bits());
        }

        #[test]
        fn percentile_is_monotone_in_p(
            mut v in prop::collection::vec(-1e6..1e6f64, 1..100),
            p in 0.0..100.0f64,
            q in 0.0..100.0f64,
        ) {
            v.sort_by(f64::total_cmp);
            let (p, q) = if p <= q { (p, q) } else { (q, p) };
            prop_assert!(percentile(&v, p) <= percentile(&v, q));
            prop_assert!(v[0] <= percentile(&v, p) && percentile(&v, q) <= v[v.len() - 1]);
        }

        #[test]
        fn order_stat_ci_contains_median(
            mut v in prop::collection::vec(-1e6..1e6f64, 1..3000),
            conf in 0.0..1.0f64,
        ) {
            v.sort_by(f64::total_cmp);
            let m = median(&v);
            let (lo, hi) = median_ci_order_stat(&v, conf);
            prop_assert!(lo <= m && m <= hi, "{} <= {} <= {}", lo, m, hi);
        }

        #[test]
        fn order_stat_ci_widens_with_confidence(n in 1usize..3000, a in 0.0..1.0f64, b in 0.0..1.0f64) {
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            let (lo_a, hi_a) = median_ci_ranks(n, a).expect("n > 0");
            let (lo_b, hi_b) = median_ci_ranks(n, b).expect("n > 0");
            prop_assert!(lo_b <= lo_a && hi_a <= hi_b);
            prop_assert_eq!(lo_a + hi_a, n - 1);
        }
    }
}
