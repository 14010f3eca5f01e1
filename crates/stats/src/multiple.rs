//! Many questions at once: which of m ratios differ from 1, with the share of wrong calls
//! among the calls held at `q`, and intervals for the rows called.
//!
//! A comparison of two runs asks "is this ratio 1?" of every row it pairs. Bonferroni
//! (each interval at 1 − 0.05 / m) keeps the chance of *any* wrong call at 5 %, but for 140
//! rows each interval is then at 99.96 %, so wide that on a noisy machine most real changes
//! are missed. This module controls the **false discovery rate** instead (the expected share
//! of wrong calls among the calls):
//!
//! 1. each row gets a p-value for "ratio = 1" that agrees with its interval ([`p_value`]: the
//!    smallest α at which the interval of level 1 − α excludes 1), so a row is called
//!    different at level α exactly when its interval at 1 − α excludes 1;
//! 2. the Benjamini–Hochberg step-up rule ([`benjamini_hochberg`]; Benjamini & Hochberg 1995,
//!    "Controlling the false discovery rate", JRSS B 57) selects the R rows with the smallest
//!    p-values such that p₍R₎ ≤ R·q/m;
//! 3. the selected rows get intervals at level 1 − R·q/m ([`fcr_confidence`]): Benjamini &
//!    Yekutieli 2005, "False discovery rate–adjusted multiple confidence intervals for
//!    selected parameters", JASA 100, show that the expected share of selected rows whose
//!    interval misses its true value (the false coverage-statement rate) is then at most q.
//!    Each such interval excludes 1 (its row's p-value is ≤ R·q/m).
//!
//! Rows not selected are not called different; the caller may still read their marginal
//! interval for an equivalence statement ("within the noise threshold").

/// The false discovery rate a comparison holds (5 %).
pub const FDR_Q: f64 = 0.05;

/// The smallest α ∈ [0, 1] at which `interval_at(1 − α)` excludes `null`: a p-value that
/// agrees with the interval (rejecting at α ⇔ the interval of level 1 − α excludes `null`),
/// found by bisection (intervals are assumed to widen with their level). 1 when even the
/// interval of level 0 holds `null` (or there is none); 0 when the interval of level
/// 1 − 10⁻⁹ still excludes it.
pub fn p_value(mut interval_at: impl FnMut(f64) -> Option<[f64; 2]>, null: f64) -> f64 {
    let mut excludes = |alpha: f64| interval_at(1.0 - alpha).is_some_and(|[lo, hi]| lo > null || hi < null);
    const SMALLEST: f64 = 1e-9;
    if excludes(SMALLEST) {
        return 0.0;
    }
    if !excludes(1.0) {
        return 1.0;
    }
    // excludes(lo) is false, excludes(hi) true; bisect on log α below 0.01, on α above.
    let (mut lo, mut hi) = (SMALLEST, 1.0);
    for _ in 0..60 {
        let mid = if hi < 0.01 { (lo * hi).sqrt() } else { 0.5 * (lo + hi) };
        if excludes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo <= 1e-4 * hi {
            break;
        }
    }
    hi
}

/// Which of the hypotheses with p-values `p` the Benjamini–Hochberg step-up rule at false
/// discovery rate `q` rejects: all those with p ≤ p₍R₎ for the largest R with p₍R₎ ≤ R·q/m.
/// A p-value that is not a number is never rejected (it counts in m).
pub fn benjamini_hochberg(p: &[f64], q: f64) -> Vec<bool> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let r = order.iter().enumerate().filter(|&(k, &i)| p[i] <= (k + 1) as f64 * q / m as f64).map(|(k, _)| k + 1).max();
    let mut out = vec![false; m];
    for &i in order.iter().take(r.unwrap_or(0)) {
        out[i] = true;
    }
    out
}

/// The level of the intervals of the `selected` of `tested` rows that keeps their false
/// coverage-statement rate at `q`: 1 − selected·q/tested (Benjamini & Yekutieli 2005). With
/// none selected, the level the first selected row would need, 1 − q/tested; 1 − q for no
/// rows.
pub fn fcr_confidence(selected: usize, tested: usize, q: f64) -> f64 {
    1.0 - selected.max(1) as f64 * q / tested.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benjamini_hochberg_steps_up() {
        // m = 5, q = 0.05: thresholds 0.01, 0.02, 0.03, 0.04, 0.05. The third p (0.029) is
        // under its threshold, so the first three are rejected though the second (0.025) is
        // above its own.
        let p = [0.001, 0.025, 0.029, 0.2, f64::NAN];
        assert_eq!(benjamini_hochberg(&p, 0.05), vec![true, true, true, false, false]);
        assert_eq!(benjamini_hochberg(&[0.5, 0.9], 0.05), vec![false, false]);
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
    }

    #[test]
    fn the_p_value_agrees_with_the_interval() {
        // A normal interval around 1.1 with standard error 0.04: p of |z| = 2.5 is 0.0124.
        let z = |c: f64| crate::special::normal_quantile(0.5 + c / 2.0);
        let at = |c: f64| Some([1.1 - z(c) * 0.04, 1.1 + z(c) * 0.04]);
        let p = p_value(at, 1.0);
        assert!((p - 0.0124).abs() < 0.0005, "{p}");
        assert_eq!(p_value(|_| Some([0.9, 1.1]), 1.0), 1.0);
        assert_eq!(p_value(|_| Some([1.2, 1.3]), 1.0), 0.0);
        assert_eq!(p_value(|_| None, 1.0), 1.0);
    }

    #[test]
    fn fcr_levels() {
        assert!((fcr_confidence(7, 140, 0.05) - 0.9975).abs() < 1e-12);
        assert!((fcr_confidence(0, 140, 0.05) - (1.0 - 0.05 / 140.0)).abs() < 1e-12);
        assert!((fcr_confidence(0, 0, 0.05) - 0.95).abs() < 1e-12);
    }
}
