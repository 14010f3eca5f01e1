//! Ordinary least-squares fit of a straight line `y = intercept + slope·x`,
//! for size sweeps: the intercept is the fixed cost of a primitive and the
//! slope its cost per unit (per byte, per page…).
//!
//! Estimates use centred sums (more accurate than the textbook one-pass
//! formulas when x or y carry a large offset):
//!
//! ```text
//! Sxx = Σ(x − x̄)²   Sxy = Σ(x − x̄)(y − ȳ)   Syy = Σ(y − ȳ)²
//! slope = Sxy / Sxx        intercept = ȳ − slope·x̄
//! SSE = Σ((y − ȳ) − slope·(x − x̄))²   s² = SSE / (n − 2)
//! se(slope) = √(s² / Sxx)   se(intercept) = √(s² · (1/n + x̄² / Sxx))
//! CI = estimate ± t(0.975, n − 2) · se        R² = 1 − SSE / Syy
//! ```
//!
//! (e.g. Draper & Smith, *Applied Regression Analysis*, 3rd ed., 1998,
//! ch. 1). The intervals assume independent errors of constant variance
//! and are exact for normal errors; `t` comes from
//! [`student_t_quantile`].

use serde::{Deserialize, Serialize};

use super::StatsError;
use super::bootstrap::CONFIDENCE_95;
use super::check_samples;
use super::special::student_t_quantile;
use super::summary::mean;

/// Least-squares line `y = intercept + slope·x` with 95% confidence
/// intervals of both coefficients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineFit {
    /// Number of points.
    pub n: usize,
    /// Estimated value at `x = 0` (the fixed cost).
    pub intercept: f64,
    /// 95% CI of the intercept, `[lo, hi]`.
    pub intercept_ci95: [f64; 2],
    /// Estimated change of y per unit of x (the cost per unit).
    pub slope: f64,
    /// 95% CI of the slope, `[lo, hi]`.
    pub slope_ci95: [f64; 2],
    /// Coefficient of determination, in `[0, 1]`; 1 for a perfect fit
    /// (including the case where all y are equal).
    pub r_squared: f64,
}

impl LineFit {
    /// The fitted value `intercept + slope·x`.
    pub fn predict(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Fits `y = intercept + slope·x` by least squares, with 95% CIs from the
/// t distribution with `n − 2` degrees of freedom (see the module
/// documentation).
///
/// # Errors
///
/// Checked in this order: [`StatsError::LengthMismatch`] if the slices
/// differ in length; [`StatsError::TooFew`] with fewer than 3
/// points; [`StatsError::NotFinite`] for a NaN or infinite value (`xs`
/// checked before `ys`; the index is within that slice);
/// [`StatsError::Degenerate`] if all x are equal.
pub fn fit_line(xs: &[f64], ys: &[f64]) -> Result<LineFit, StatsError> {
    if xs.len() != ys.len() {
        return Err(StatsError::LengthMismatch { xs: xs.len(), ys: ys.len() });
    }
    check_samples(xs, 3)?;
    check_samples(ys, 3)?;
    let n = xs.len();
    let x_mean = mean(xs);
    let y_mean = mean(ys);
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (&x, &y) in xs.iter().zip(ys) {
        let (dx, dy) = (x - x_mean, y - y_mean);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    // With distinct x some deviation is nonzero; only underflow of tiny
    // spreads could still give 0, and then no slope can be estimated.
    if sxx <= 0.0 {
        return Err(StatsError::Degenerate);
    }
    let slope = sxy / sxx;
    let intercept = y_mean - slope * x_mean;
    let sse: f64 = xs
        .iter()
        .zip(ys)
        .map(|(&x, &y)| {
            let r = (y - y_mean) - slope * (x - x_mean);
            r * r
        })
        .sum();
    let r_squared = if sse == 0.0 || syy == 0.0 { 1.0 } else { (1.0 - sse / syy).clamp(0.0, 1.0) };

    let dof = (n - 2) as f64;
    let variance = sse / dof;
    let se_slope = (variance / sxx).sqrt();
    let se_intercept = (variance * (1.0 / n as f64 + x_mean * x_mean / sxx)).sqrt();
    let t = student_t_quantile(0.5 + CONFIDENCE_95 / 2.0, dof);
    let interval = |estimate: f64, se: f64| [estimate - t * se, estimate + t * se];
    Ok(LineFit {
        n,
        intercept,
        intercept_ci95: interval(intercept, se_intercept),
        slope,
        slope_ci95: interval(slope, se_slope),
        r_squared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::rng::Rng;
    use crate::stats::special::normal_quantile;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn perfect_line_is_recovered_exactly() {
        let xs: Vec<f64> = (0..11).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 + 2.0 * x).collect();
        let f = fit_line(&xs, &ys).expect("valid");
        assert_eq!(f.n, 11);
        assert_eq!(f.slope, 2.0);
        assert_eq!(f.intercept, 3.0);
        assert_eq!(f.r_squared, 1.0);
        assert_eq!(f.slope_ci95, [2.0, 2.0]);
        assert_eq!(f.intercept_ci95, [3.0, 3.0]);
        assert_eq!(f.predict(100.0), 203.0);

        // A size sweep: 64-byte steps, 120 ns fixed + 0.25 ns/byte.
        let xs: Vec<f64> = (1..=16).map(|k| f64::from(64 * k)).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 120.0 + 0.25 * x).collect();
        let f = fit_line(&xs, &ys).expect("valid");
        assert_eq!((f.slope, f.intercept, f.r_squared), (0.25, 120.0, 1.0));
    }

    #[test]
    fn three_points_by_hand() {
        // x̄ = 1, ȳ = 4/3, Sxx = 2, Sxy = 3 → slope 1.5, intercept −1/6;
        // residuals 1/6, −1/3, 1/6 → SSE 1/6, s² = 1/6 (1 dof);
        // se(slope) = √(1/12), se(intercept) = √(5/36); Syy = 42/9 → R² = 27/28.
        let f = fit_line(&[0.0, 1.0, 2.0], &[0.0, 1.0, 3.0]).expect("valid");
        let t = 12.706_204_736_174_705;
        assert!(close(f.slope, 1.5, 1e-14));
        assert!(close(f.intercept, -1.0 / 6.0, 1e-14));
        assert!(close(f.r_squared, 27.0 / 28.0, 1e-14));
        let hs = t * (1.0_f64 / 12.0).sqrt();
        let hi = t * (5.0_f64 / 36.0).sqrt();
        assert!(close(f.slope_ci95[0], 1.5 - hs, 1e-9) && close(f.slope_ci95[1], 1.5 + hs, 1e-9));
        assert!(close(f.intercept_ci95[0], -1.0 / 6.0 - hi, 1e-9));
        assert!(close(f.intercept_ci95[1], -1.0 / 6.0 + hi, 1e-9));
    }

    fn noisy_line(rng: &mut Rng, n: usize, a: f64, b: f64, sigma: f64) -> (Vec<f64>, Vec<f64>) {
        let xs: Vec<f64> = (0..n).map(|i| i as f64 * 10.0).collect();
        let ys = xs.iter().map(|x| a + b * x + sigma * normal_quantile(rng.next_f64().max(1e-300))).collect();
        (xs, ys)
    }

    #[test]
    fn noisy_fit_ci_contains_true_line() {
        let mut rng = Rng::new(99);
        let (xs, ys) = noisy_line(&mut rng, 40, 250.0, 0.5, 5.0);
        let f = fit_line(&xs, &ys).expect("valid");
        assert!(f.slope_ci95[0] < 0.5 && 0.5 < f.slope_ci95[1], "{f:?}");
        assert!(f.intercept_ci95[0] < 250.0 && 250.0 < f.intercept_ci95[1], "{f:?}");
        assert!(f.r_squared > 0.99, "{f:?}");
    }

    #[test]
    fn ci_coverage_is_nominal() {
        // Over many simulated sweeps the 95% CIs should cover the truth
        // about 95% of the time (sd of the rate ≈ 0.007 for 1000 trials).
        let mut rng = Rng::new(2);
        let trials = 1000;
        let (mut slope_hits, mut intercept_hits) = (0, 0);
        for _ in 0..trials {
            let (xs, ys) = noisy_line(&mut rng, 6, 30.0, -0.2, 3.0);
            let f = fit_line(&xs, &ys).expect("valid");
            slope_hits += usize::from(f.slope_ci95[0] <= -0.2 && -0.2 <= f.slope_ci95[1]);
            intercept_hits += usize::from(f.intercept_ci95[0] <= 30.0 && 30.0 <= f.intercept_ci95[1]);
        }
        for hits in [slope_hits, intercept_hits] {
            let rate = hits as f64 / trials as f64;
            assert!((0.93..=0.97).contains(&rate), "coverage {rate}");
        }
    }

    #[test]
    fn flat_line_has_zero_slope_and_full_r_squared() {
        let f = fit_line(&[1.0, 2.0, 3.0, 4.0], &[7.0; 4]).expect("valid");
        assert_eq!((f.slope, f.intercept, f.r_squared), (0.0, 7.0, 1.0));
    }

    #[test]
    fn invalid_input_is_rejected() {
        assert_eq!(fit_line(&[1.0, 2.0, 3.0], &[1.0, 2.0]), Err(StatsError::LengthMismatch { xs: 3, ys: 2 }));
        assert_eq!(fit_line(&[1.0, 2.0], &[1.0, 2.0]), Err(StatsError::TooFew { needed: 3, got: 2 }));
        assert!(matches!(
            fit_line(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
        assert_eq!(
            fit_line(&[1.0, 2.0, 3.0], &[1.0, 2.0, f64::INFINITY]),
            Err(StatsError::NotFinite { index: 2, value: f64::INFINITY })
        );
        assert_eq!(fit_line(&[5.0, 5.0, 5.0], &[1.0, 2.0, 3.0]), Err(StatsError::Degenerate));
    }

    proptest! {
        #[test]
        fn noise_free_line_is_recovered(
            a in -1e4..1e4f64,
            b in -100.0..100.0f64,
            mut xs in prop::collection::vec(-1e3..1e3f64, 3..60),
        ) {
            // Need some spread in x for a well-posed fit.
            xs.sort_by(f64::total_cmp);
            prop_assume!(xs[xs.len() - 1] - xs[0] > 1.0);
            let ys: Vec<f64> = xs.iter().map(|x| a + b * x).collect();
            let f = fit_line(&xs, &ys).expect("valid");
            let scale = a.abs() + 1e3 * b.abs() + 1.0;
            prop_assert!((f.slope - b).abs() <= 1e-9 * scale, "{:?}", f);
            prop_assert!((f.intercept - a).abs() <= 1e-9 * scale, "{:?}", f);
            prop_assert!(f.slope_ci95[0] <= f.slope && f.slope <= f.slope_ci95[1]);
            prop_assert!(f.intercept_ci95[1] - f.intercept_ci95[0] <= 1e-6 * scale);
            prop_assert!(f.r_squared > 1.0 - 1e-9 || b.abs() * (xs[xs.len() - 1] - xs[0]) < 1e-6 * scale);
        }

        #[test]
        fn estimates_lie_in_their_intervals(
            pts in prop::collection::vec((-1e3..1e3f64, -1e3..1e3f64), 3..60),
        ) {
            let (xs, ys): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
            match fit_line(&xs, &ys) {
                Ok(f) => {
                    prop_assert!(f.slope_ci95[0] <= f.slope && f.slope <= f.slope_ci95[1]);
                    prop_assert!(f.intercept_ci95[0] <= f.intercept && f.intercept <= f.intercept_ci95[1]);
                    prop_assert!((0.0..=1.0).contains(&f.r_squared));
                }
                Err(e) => prop_assert_eq!(e, StatsError::Degenerate),
            }
        }
    }
}
