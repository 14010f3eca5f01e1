//! Straight-line fits `y = intercept + slope·x` for size sweeps: the
//! intercept is the fixed cost of a primitive and the slope its cost per
//! unit (per byte, per page…). Three fits:
//!
//! - [`fit_line`] — ordinary least squares (every point weighs the same);
//! - [`fit_line_weighted`] — weighted least squares, each point weighted by
//!   its own uncertainty;
//! - [`fit_two_segments`] — a continuous line with one bend, for costs per
//!   unit that change with the size (a cache level filling up).
//!
//! # Ordinary least squares
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
//! [`student_t_quantile`]. In a sweep whose sizes grow geometrically the
//! largest size alone then decides the slope, and its own uncertainty never
//! reaches the slope's CI: hence the weighted fit.
//!
//! # Weighted least squares
//!
//! Point i has a standard error `seᵢ` (for a median, from its 95 % CI:
//! [`se_from_ci95`]) and weight `wᵢ = 1/seᵢ²`. With the design matrix X
//! (a column of ones and a column of x) and W = diag(w):
//!
//! ```text
//! β = (XᵀWX)⁻¹ XᵀWy                     χ² = Σ wᵢ (yᵢ − ŷᵢ)²,  ν = n − p
//! S² = max(1, χ²/ν)                     Cov(β) = S² · (XᵀWX)⁻¹
//! CI = βⱼ ± t(0.975, ν) · √Cov(β)ⱼⱼ       p-value = P(χ²_ν > χ²)
//! hᵢᵢ = wᵢ xᵢᵀ (XᵀWX)⁻¹ xᵢ               rᵢ = (yᵢ − ŷᵢ) / (seᵢ √(1 − hᵢᵢ))
//! ```
//!
//! (Draper & Smith 1998, ch. 9 for weighted least squares and ch. 8 for
//! the hat values; the scale factor S is the Particle Data Group's practice
//! for averages and fits whose χ²/ν exceeds 1, *Review of Particle
//! Physics*, Introduction, "unconstrained averaging", after Birge's ratio:
//! R. T. Birge, "The calculation of errors by the method of least squares",
//! Phys. Rev. 40, 207, 1932.) If the points
//! scatter about the line as their standard errors say, χ²/ν ≈ 1 and the
//! intervals are those the points' own uncertainty gives; if they scatter
//! more (the errors are underestimated, or the model is wrong), the
//! intervals widen by S so that they include the lack of fit. With equal
//! standard errors smaller than the scatter, this is exactly ordinary least
//! squares. The scale factor assumes the excess scatter is proportional to
//! the standard errors; when χ²/ν is far above 1 because of systematic
//! departures (a cache level, a page boundary) the weights still follow
//! each point's noise, and the points say more than the line.
//! `t` with ν degrees of freedom, rather than the normal quantile,
//! allows for the standard errors being estimates themselves. The
//! coefficient of determination is the weighted one, `R² = 1 − χ² / Σwᵢ(yᵢ
//! − ȳ_w)²` with ȳ_w the weighted mean.
//!
//! Each point reports its leverage hᵢᵢ (between 0 and 1, summing to p over
//! the points: how much the point's own value moves its fitted value; in
//! a geometric sweep the largest size is often near 1, i.e. the slope rests
//! on it) and its standardized residual rᵢ, its distance from the model in
//! units of its own standard error, unscaled by S, so that |rᵢ| > 3 says
//! the point disagrees with the model beyond its own CI. Where hᵢᵢ ≈ 1 the
//! fit passes through the point whatever its value and rᵢ is undefined
//! (`None`).
//!
//! A standard error that is zero (a quantised timer can make every
//! bootstrap median equal) or not finite cannot be a weight. Such a point
//! gets the smallest relative standard error (`se / |y|`) of the other
//! points times its own `|y|`; failing that (no usable point, or y = 0) the
//! smallest usable standard error; and if no point has one, every point
//! gets the same tiny standard error (10⁻⁹ of the largest |y|), which makes
//! the fit ordinary least squares. The standard errors used are returned.
//!
//! The coefficients are computed by a QR decomposition of W^½X (modified
//! Gram–Schmidt, each column orthogonalised twice), not by forming XᵀWX,
//! so that weights spanning many orders of magnitude lose no precision.
//!
//! # Two segments
//!
//! [`fit_two_segments`] fits, by the same weighted least squares, the
//! continuous line with one bend at a breakpoint k:
//!
//! ```text
//! y = fixed + small_slope · min(x, k) + large_slope · max(0, x − k)
//! ```
//!
//! so `fixed` is the cost at x = 0, `small_slope` the cost per unit up to k
//! and `large_slope` beyond it. The breakpoint is not a free parameter but
//! one of the measured sizes: each distinct size but the smallest and the
//! largest is tried, so that each segment spans at least two sizes (the
//! breakpoint belongs to both), and the one with the smallest χ² kept.
//! This needs at least 4 distinct sizes and 5 points (ν = n − 3 ≥ 2).
//! The intervals are conditional on the chosen breakpoint.
//!
//! Whether the bend is real is the extra-sum-of-squares F test of the
//! nested models (Draper & Smith 1998, ch. 6), with the same scale factor:
//! `F = (χ²_line − χ²_segments) / max(1, χ²_segments / ν)` on (1, ν)
//! degrees of freedom (equivalently the t test of `large_slope −
//! small_slope` with the scaled covariance). Because the breakpoint was
//! chosen to make χ²_segments small, the plain p-value would be optimistic
//! (R. B. Davies, "Hypothesis testing when a nuisance parameter is present
//! only under the alternative", Biometrika 74(1), 1987); it is multiplied
//! by the number of breakpoints tried (Bonferroni), which bounds the chance
//! that any of them looks significant when the line is right.
//! [`TwoSegmentFit::preferred`] then chooses the segments over the line
//! when that p-value is below 5 % *and* the two slopes differ by more than
//! [`MIN_SLOPE_CHANGE`] of the larger: significant and material.

use serde::{Deserialize, Serialize};

use super::StatsError;
use super::bootstrap::CONFIDENCE_95;
use super::check_samples;
use super::moments::mean;
use super::special::{chi_square_sf, student_t_quantile, student_t_sf};

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

/// z(0.975) of the standard normal: a 95 % interval is ± this many standard errors.
const Z_975: f64 = 1.959_963_984_540_054;

/// How close to 1 a leverage may come before the standardized residual is undefined.
const LEVERAGE_ONE: f64 = 1e-9;

/// A column whose norm falls below this fraction of its original norm once
/// the earlier columns are projected out is taken as a linear combination
/// of them (the design is degenerate).
const RANK_TOL: f64 = 1e-10;

/// Significance level at which two segments are preferred to one line
/// (after the Bonferroni correction for the breakpoints tried).
pub const SEGMENTS_ALPHA: f64 = 0.05;

/// The smallest change of slope, as a fraction of the larger slope's
/// magnitude, for which two segments are preferred to one line: a bend
/// that is significant but smaller than this is not worth two figures.
pub const MIN_SLOPE_CHANGE: f64 = 0.25;

/// Standard error of an estimate from its 95 % confidence interval
/// `[lo, hi]`, taking the interval as normal: `(hi − lo) / (2 · 1.96)`.
pub fn se_from_ci95(ci95: [f64; 2]) -> f64 {
    (ci95[1] - ci95[0]) / (2.0 * Z_975)
}

/// How well a weighted least-squares model describes its points, and the
/// per-point diagnostics (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedFit {
    /// Number of points.
    pub n: usize,
    /// `Σ wᵢ (yᵢ − ŷᵢ)²`: the residuals in units of the points' standard errors, squared and summed.
    pub chi2: f64,
    /// Degrees of freedom ν: points less coefficients.
    pub dof: usize,
    /// χ²/ν: about 1 when the points scatter about the model as their standard errors say.
    pub reduced_chi2: f64,
    /// `P(χ²_ν > χ²)`: how often a misfit this large would arise if the model and the standard
    /// errors were right.
    pub p_value: f64,
    /// `S² = max(1, χ²/ν)`, the factor the coefficients' covariance was multiplied by.
    pub variance_scale: f64,
    /// The standard error used for each point (after replacing unusable ones).
    pub ses: Vec<f64>,
    /// Hat value hᵢᵢ of each point, in `[0, 1]`.
    pub leverage: Vec<f64>,
    /// `(yᵢ − ŷᵢ) / (seᵢ √(1 − hᵢᵢ))`; `None` where hᵢᵢ ≈ 1.
    pub std_residuals: Vec<Option<f64>>,
}

impl WeightedFit {
    /// Whether point `i` has a leverage above `2p/n` (p coefficients): it steers the fit more
    /// than its share (the cut-off of Hoaglin & Welsch, "The hat matrix in regression and
    /// ANOVA", The American Statistician 32(1), 1978).
    pub fn high_leverage(&self, i: usize) -> bool {
        let p = self.n - self.dof;
        self.leverage.get(i).is_some_and(|&h| h > 2.0 * p as f64 / self.n as f64)
    }

    /// Whether point `i` lies more than 3 of its own standard errors from the model.
    pub fn outlying(&self, i: usize) -> bool {
        self.std_residuals.get(i).copied().flatten().is_some_and(|r| r.abs() > 3.0)
    }
}

/// A weighted least-squares line: the coefficients and their 95 % CIs in a
/// [`LineFit`] (`r_squared` is the weighted R²), and its goodness of fit.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedLineFit {
    /// Coefficients, intervals and weighted R².
    pub line: LineFit,
    /// χ², its p-value, the scale factor and the per-point diagnostics.
    pub fit: WeightedFit,
}

/// A continuous line with one bend, `fixed + small_slope·min(x, k) +
/// large_slope·max(0, x − k)`, fitted by weighted least squares with the
/// breakpoint k chosen among the measured x (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct TwoSegmentFit {
    /// The breakpoint k, one of the measured x.
    pub breakpoint: f64,
    /// The value at x = 0 (the fixed cost).
    pub intercept: f64,
    /// 95 % CI of the intercept.
    pub intercept_ci95: [f64; 2],
    /// Slope up to the breakpoint.
    pub small_slope: f64,
    /// 95 % CI of the small-x slope.
    pub small_slope_ci95: [f64; 2],
    /// Slope beyond the breakpoint.
    pub large_slope: f64,
    /// 95 % CI of the large-x slope.
    pub large_slope_ci95: [f64; 2],
    /// χ², its p-value, the scale factor and the per-point diagnostics.
    pub fit: WeightedFit,
    /// p-value of the F test of these two segments against one line, times the number of
    /// breakpoints tried (Bonferroni), at most 1.
    pub vs_line_p_value: f64,
    /// How many breakpoints were tried.
    pub candidates: usize,
}

impl TwoSegmentFit {
    /// The fitted value at `x`.
    pub fn predict(&self, x: f64) -> f64 {
        let k = self.breakpoint;
        self.intercept + self.small_slope * x.min(k) + self.large_slope * (x - k).max(0.0)
    }

    /// Whether these segments should replace the single line: the bend is significant (the
    /// corrected F-test p-value is under [`SEGMENTS_ALPHA`]) and material (the slopes differ by
    /// more than [`MIN_SLOPE_CHANGE`] of the larger in magnitude).
    pub fn preferred(&self) -> bool {
        let change = (self.large_slope - self.small_slope).abs();
        let larger = self.small_slope.abs().max(self.large_slope.abs());
        self.vs_line_p_value < SEGMENTS_ALPHA && change > MIN_SLOPE_CHANGE * larger
    }
}

/// Fits `y = intercept + slope·x` by weighted least squares, point i having standard error
/// `ses[i]` (weight `1/ses[i]²`), with 95 % CIs that include any scatter beyond the standard
/// errors (see the module documentation). A zero or non-finite standard error is replaced as
/// the module documentation says.
///
/// # Errors
///
/// As [`fit_line`], and [`StatsError::SeLengthMismatch`] if `ses` is not as long as `xs`.
pub fn fit_line_weighted(xs: &[f64], ys: &[f64], ses: &[f64]) -> Result<WeightedLineFit, StatsError> {
    check_weighted(xs, ys, ses)?;
    let ses = usable_ses(ses, ys);
    let ws: Vec<f64> = ses.iter().map(|s| 1.0 / (s * s)).collect();
    let solved = solve(&[vec![1.0; xs.len()], xs.to_vec()], ys, &ws)?;
    let fit = goodness(&solved, ses);
    let t = t_975(fit.dof);
    let ci = |j: usize| interval(solved.coef[j], t * (fit.variance_scale * solved.cov[j][j]).sqrt());

    let w_sum: f64 = ws.iter().sum();
    let y_mean = ws.iter().zip(ys).map(|(w, y)| w * y).sum::<f64>() / w_sum;
    let syy: f64 = ws.iter().zip(ys).map(|(w, y)| w * (y - y_mean) * (y - y_mean)).sum();
    let r_squared = if fit.chi2 == 0.0 || syy == 0.0 { 1.0 } else { (1.0 - fit.chi2 / syy).clamp(0.0, 1.0) };
    Ok(WeightedLineFit {
        line: LineFit {
            n: xs.len(),
            intercept: solved.coef[0],
            intercept_ci95: ci(0),
            slope: solved.coef[1],
            slope_ci95: ci(1),
            r_squared,
        },
        fit,
    })
}

/// Fits a continuous line with one bend by weighted least squares, the breakpoint chosen among
/// the measured x, and tests it against a single line (see the module documentation).
///
/// Returns `Ok(None)` with fewer than 4 distinct x or fewer than 5 points.
///
/// # Errors
///
/// As [`fit_line_weighted`].
pub fn fit_two_segments(xs: &[f64], ys: &[f64], ses: &[f64]) -> Result<Option<TwoSegmentFit>, StatsError> {
    let line = fit_line_weighted(xs, ys, ses)?;
    let mut sizes = xs.to_vec();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() < 4 || xs.len() < 5 {
        return Ok(None);
    }
    let ses = line.fit.ses.clone();
    let ws: Vec<f64> = ses.iter().map(|s| 1.0 / (s * s)).collect();
    let candidates = &sizes[1..sizes.len() - 1];
    let mut best: Option<(f64, Solved)> = None;
    for &k in candidates {
        let columns = [
            vec![1.0; xs.len()],
            xs.iter().map(|&x| x.min(k)).collect(),
            xs.iter().map(|&x| (x - k).max(0.0)).collect(),
        ];
        let Ok(solved) = solve(&columns, ys, &ws) else { continue };
        if best.as_ref().is_none_or(|(_, b)| solved.chi2 < b.chi2) {
            best = Some((k, solved));
        }
    }
    let Some((breakpoint, solved)) = best else { return Ok(None) };
    let fit = goodness(&solved, ses);
    let t = t_975(fit.dof);
    let ci = |j: usize| interval(solved.coef[j], t * (fit.variance_scale * solved.cov[j][j]).sqrt());

    let gain = (line.fit.chi2 - fit.chi2).max(0.0);
    let f = gain / fit.variance_scale;
    // F(1, ν) is the square of t(ν): P(F > f) = P(|T| > √f).
    let p = if gain == 0.0 { 1.0 } else { 2.0 * student_t_sf(f.sqrt(), fit.dof as f64) };
    Ok(Some(TwoSegmentFit {
        breakpoint,
        intercept: solved.coef[0],
        intercept_ci95: ci(0),
        small_slope: solved.coef[1],
        small_slope_ci95: ci(1),
        large_slope: solved.coef[2],
        large_slope_ci95: ci(2),
        vs_line_p_value: (p * candidates.len() as f64).min(1.0),
        candidates: candidates.len(),
        fit,
    }))
}

/// Checks the input of a weighted fit, in the order [`fit_line`] documents, then the length of
/// `ses`.
fn check_weighted(xs: &[f64], ys: &[f64], ses: &[f64]) -> Result<(), StatsError> {
    if xs.len() != ys.len() {
        return Err(StatsError::LengthMismatch { xs: xs.len(), ys: ys.len() });
    }
    check_samples(xs, 3)?;
    check_samples(ys, 3)?;
    if ses.len() != xs.len() {
        return Err(StatsError::SeLengthMismatch { points: xs.len(), ses: ses.len() });
    }
    Ok(())
}

/// The standard errors a weighted fit uses: each usable (positive, finite) one as given, the
/// others replaced as the module documentation says.
fn usable_ses(ses: &[f64], ys: &[f64]) -> Vec<f64> {
    let usable = |s: f64| s.is_finite() && s > 0.0;
    let min_of = |it: &mut dyn Iterator<Item = f64>| it.filter(|v| usable(*v)).fold(f64::INFINITY, f64::min);
    let min_rel = min_of(&mut ses.iter().zip(ys).filter(|(s, _)| usable(**s)).map(|(s, y)| s / y.abs()));
    let min_abs = min_of(&mut ses.iter().copied());
    let largest_y = ys.iter().fold(0.0_f64, |m, y| m.max(y.abs()));
    let last_resort = if largest_y > 0.0 { largest_y * 1e-9 } else { 1.0 };
    ses.iter()
        .zip(ys)
        .map(|(&s, y)| {
            if usable(s) {
                s
            } else if usable(min_rel * y.abs()) {
                min_rel * y.abs()
            } else if usable(min_abs) {
                min_abs
            } else {
                last_resort
            }
        })
        .collect()
}

/// A weighted least-squares solution.
struct Solved {
    /// The coefficients β.
    coef: Vec<f64>,
    /// `(XᵀWX)⁻¹`, before any scaling.
    cov: Vec<Vec<f64>>,
    /// Hat values.
    leverage: Vec<f64>,
    /// `yᵢ − ŷᵢ`.
    residuals: Vec<f64>,
    /// `Σ wᵢ (yᵢ − ŷᵢ)²`.
    chi2: f64,
}

/// Solves weighted least squares for the design whose columns are `columns` (each as long as
/// `ys`), by a QR decomposition of W^½X (modified Gram–Schmidt, reorthogonalised once).
///
/// With Q (n × p, orthonormal columns) and R (p × p, upper triangular): β = R⁻¹Qᵀ W^½y,
/// (XᵀWX)⁻¹ = R⁻¹R⁻ᵀ and hᵢᵢ = Σⱼ Qᵢⱼ². Needs `ys.len() > columns.len()`.
fn solve(columns: &[Vec<f64>], ys: &[f64], ws: &[f64]) -> Result<Solved, StatsError> {
    let (n, p) = (ys.len(), columns.len());
    let root_w: Vec<f64> = ws.iter().map(|w| w.sqrt()).collect();
    let mut q: Vec<Vec<f64>> = columns.iter().map(|c| c.iter().zip(&root_w).map(|(x, r)| x * r).collect()).collect();
    let mut r = vec![vec![0.0; p]; p];
    for j in 0..p {
        let original = norm(&q[j]);
        for _ in 0..2 {
            for i in 0..j {
                let (done, rest) = q.split_at_mut(j);
                let d = dot(&done[i], &rest[0]);
                r[i][j] += d;
                for (v, u) in rest[0].iter_mut().zip(&done[i]) {
                    *v -= d * u;
                }
            }
        }
        let left = norm(&q[j]);
        if !left.is_finite() || left <= RANK_TOL * original {
            return Err(StatsError::Degenerate);
        }
        r[j][j] = left;
        q[j].iter_mut().for_each(|v| *v /= left);
    }
    // R⁻¹ by back substitution: column c solves R v = e_c.
    let mut r_inv = vec![vec![0.0; p]; p];
    for c in 0..p {
        let mut v = vec![0.0; p];
        for i in (0..=c).rev() {
            let unit = if i == c { 1.0 } else { 0.0 };
            let s: f64 = ((i + 1)..=c).map(|k| r[i][k] * v[k]).sum();
            v[i] = (unit - s) / r[i][i];
        }
        r_inv.iter_mut().zip(v).for_each(|(row, vi)| row[c] = vi);
    }
    let wy: Vec<f64> = ys.iter().zip(&root_w).map(|(y, r)| y * r).collect();
    let qty: Vec<f64> = q.iter().map(|col| dot(col, &wy)).collect();
    let coef: Vec<f64> = (0..p).map(|i| (i..p).map(|k| r_inv[i][k] * qty[k]).sum()).collect();
    let cov: Vec<Vec<f64>> =
        (0..p).map(|a| (0..p).map(|b| (a.max(b)..p).map(|k| r_inv[a][k] * r_inv[b][k]).sum()).collect()).collect();
    let leverage: Vec<f64> = (0..n).map(|i| q.iter().map(|col| col[i] * col[i]).sum::<f64>().min(1.0)).collect();
    let residuals: Vec<f64> =
        (0..n).map(|i| ys[i] - columns.iter().zip(&coef).map(|(col, b)| col[i] * b).sum::<f64>()).collect();
    let chi2 = residuals.iter().zip(ws).map(|(e, w)| w * e * e).sum();
    Ok(Solved { coef, cov, leverage, residuals, chi2 })
}

/// χ², its p-value, the scale factor and the per-point diagnostics of a solution.
fn goodness(solved: &Solved, ses: Vec<f64>) -> WeightedFit {
    let n = ses.len();
    let dof = n - solved.coef.len();
    let reduced_chi2 = solved.chi2 / dof as f64;
    let std_residuals = solved
        .residuals
        .iter()
        .zip(&ses)
        .zip(&solved.leverage)
        .map(|((e, s), h)| (1.0 - h > LEVERAGE_ONE).then(|| e / (s * (1.0 - h).sqrt())))
        .collect();
    WeightedFit {
        n,
        chi2: solved.chi2,
        dof,
        reduced_chi2,
        p_value: chi_square_sf(solved.chi2, dof as f64),
        variance_scale: reduced_chi2.max(1.0),
        ses,
        leverage: solved.leverage.clone(),
        std_residuals,
    }
}

/// t(0.975, ν).
fn t_975(dof: usize) -> f64 {
    student_t_quantile(0.5 + CONFIDENCE_95 / 2.0, dof as f64)
}

/// `[estimate − half, estimate + half]`.
fn interval(estimate: f64, half: f64) -> [f64; 2] {
    [estimate - half, estimate + half]
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::special::normal_quantile;
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

    /// The sizes of `osprim run --sweep`, in bytes.
    const SWEEP: [f64; 7] = [0.0, 8.0, 64.0, 512.0, 4096.0, 65536.0, 1_048_576.0];

    fn gauss(rng: &mut Rng) -> f64 {
        normal_quantile(rng.next_f64().max(1e-300))
    }

    /// `truth` at the sweep's sizes, each with standard error `se(y)` and normal noise of that
    /// size; returns (xs, ys, ses).
    fn simulated(rng: &mut Rng, truth: impl Fn(f64) -> f64, se: impl Fn(f64) -> f64) -> [Vec<f64>; 3] {
        let xs = SWEEP.to_vec();
        let ses: Vec<f64> = xs.iter().map(|&x| se(truth(x))).collect();
        let ys = xs.iter().zip(&ses).map(|(&x, s)| truth(x) + s * gauss(rng)).collect();
        [xs, ys, ses]
    }

    fn covers(ci: [f64; 2], truth: f64) -> bool {
        ci[0] <= truth && truth <= ci[1]
    }

    #[test]
    fn se_from_a_95_percent_interval() {
        assert!(close(se_from_ci95([98.04, 101.96]), 1.0, 1e-3));
        assert_eq!(se_from_ci95([5.0, 5.0]), 0.0);
    }

    #[test]
    fn weighted_line_is_recovered_exactly() {
        let xs = SWEEP.to_vec();
        let ys: Vec<f64> = xs.iter().map(|x| 2000.0 + 0.25 * x).collect();
        let ses: Vec<f64> = ys.iter().map(|y| 0.01 * y).collect();
        let WeightedLineFit { line, fit } = fit_line_weighted(&xs, &ys, &ses).expect("valid");
        assert!(close(line.slope, 0.25, 1e-14), "{line:?}");
        assert!(close(line.intercept, 2000.0, 1e-9), "{line:?}");
        assert!(close(line.r_squared, 1.0, 1e-12));
        assert!(close(line.predict(1e6), 252_000.0, 1e-6));
        assert!(fit.chi2 < 1e-12 && fit.p_value > 0.999_999, "{fit:?}");
        assert_eq!((fit.n, fit.dof, fit.variance_scale), (7, 5, 1.0));
        assert_eq!(fit.ses, ses);
        // Exact points still carry their standard errors into the coefficients.
        assert!(line.slope_ci95[0] < 0.25 && 0.25 < line.slope_ci95[1]);
        assert!(line.intercept_ci95[0] < 2000.0 && 2000.0 < line.intercept_ci95[1]);
        assert!(fit.leverage.iter().all(|h| (0.0..=1.0).contains(h)));
        assert!(close(fit.leverage.iter().sum(), 2.0, 1e-12), "hat values sum to p");
        assert!(fit.std_residuals.iter().flatten().all(|r| r.abs() < 1e-6));
    }

    #[test]
    fn three_weighted_points_by_hand() {
        // Unit standard errors: the OLS arithmetic of `three_points_by_hand`, but the
        // variance is known (1), not estimated: χ² = SSE = 1/6 < ν = 1, so S² = 1 and
        // var(slope) = 1/Sxx = 1/2, var(intercept) = 1/n + x̄²/Sxx = 5/6.
        let WeightedLineFit { line, fit } =
            fit_line_weighted(&[0.0, 1.0, 2.0], &[0.0, 1.0, 3.0], &[1.0; 3]).expect("valid");
        let t = 12.706_204_736_174_705;
        assert!(close(line.slope, 1.5, 1e-14) && close(line.intercept, -1.0 / 6.0, 1e-14));
        assert!(close(fit.chi2, 1.0 / 6.0, 1e-14) && fit.variance_scale == 1.0);
        assert!(close(fit.p_value, chi_square_sf(1.0 / 6.0, 1.0), 1e-15));
        assert!(close(line.slope_ci95[1] - 1.5, t * 0.5_f64.sqrt(), 1e-9));
        assert!(close(line.intercept_ci95[1] + 1.0 / 6.0, t * (5.0_f64 / 6.0).sqrt(), 1e-9));
        // h = 1/n + (x − x̄)²/Sxx; r = e / √(1 − h) with e = (1/6, −1/3, 1/6).
        for (h, want) in fit.leverage.iter().zip([5.0 / 6.0, 1.0 / 3.0, 5.0 / 6.0]) {
            assert!(close(*h, want, 1e-14), "{:?}", fit.leverage);
        }
        let r = (1.0_f64 / 6.0).sqrt();
        for (got, want) in fit.std_residuals.iter().zip([r, -r, r]) {
            assert!(close(got.expect("h < 1"), want, 1e-13), "{:?}", fit.std_residuals);
        }
    }

    #[test]
    fn equal_small_standard_errors_give_ordinary_least_squares() {
        // When the points scatter more than their (equal) standard errors say, S² turns
        // (XᵀWX)⁻¹ into s²(XᵀX)⁻¹: the OLS intervals.
        let mut rng = Rng::new(5);
        let (xs, ys) = noisy_line(&mut rng, 12, 40.0, 0.3, 2.0);
        let ols = fit_line(&xs, &ys).expect("valid");
        for ses in [vec![0.01; 12], vec![0.0; 12]] {
            let WeightedLineFit { line, fit } = fit_line_weighted(&xs, &ys, &ses).expect("valid");
            assert!(fit.variance_scale > 1.0);
            for (a, b) in [
                (line.slope, ols.slope),
                (line.intercept, ols.intercept),
                (line.slope_ci95[0], ols.slope_ci95[0]),
                (line.slope_ci95[1], ols.slope_ci95[1]),
                (line.intercept_ci95[0], ols.intercept_ci95[0]),
                (line.intercept_ci95[1], ols.intercept_ci95[1]),
                (line.r_squared, ols.r_squared),
            ] {
                assert!(close(a, b, 1e-9 * b.abs().max(1.0)), "{line:?} vs {ols:?}");
            }
        }
    }

    #[test]
    fn a_noisy_high_leverage_point_no_longer_dominates() {
        // Precise points up to 64 KiB on 2000 + 0.25·x; the 1 MiB point is 30 µs too high
        // with a standard error of 20 µs (1.5 se: an unremarkable draw).
        let mut rng = Rng::new(11);
        let xs = SWEEP.to_vec();
        let mut ses = vec![2.0; 7];
        ses[6] = 20_000.0;
        let mut ys: Vec<f64> =
            xs.iter().zip(&ses).map(|(x, s)| 2000.0 + 0.25 * x + s * 0.3 * gauss(&mut rng)).collect();
        ys[6] = 2000.0 + 0.25 * xs[6] + 30_000.0;
        let ols = fit_line(&xs, &ys).expect("valid");
        let unweighted = fit_line_weighted(&xs, &ys, &[1.0; 7]).expect("valid");
        let WeightedLineFit { line, fit } = fit_line_weighted(&xs, &ys, &ses).expect("valid");
        let (ols_err, wls_err) = ((ols.slope - 0.25).abs(), (line.slope - 0.25).abs());
        assert!(ols_err > 0.02, "OLS follows the 1 MiB point: {ols:?}");
        assert!(wls_err < ols_err / 100.0, "WLS {line:?} vs OLS {ols:?}");
        assert!(covers(line.slope_ci95, 0.25), "{line:?}");
        assert!(unweighted.fit.leverage[6] > 0.99 && unweighted.fit.high_leverage(6));
        assert!(fit.leverage[6] < 0.01 && !fit.high_leverage(6), "{:?}", fit.leverage);
        assert!(!fit.outlying(6), "{:?}", fit.std_residuals);
    }

    #[test]
    fn weighted_intervals_cover_the_truth() {
        // 300 simulated sweeps with known, unequal standard errors (3 ns + 0.5 %). The scale
        // factor only ever widens the intervals, so coverage is at least nominal, less the
        // simulation's noise (sd of the rate ≈ 0.013); the χ² p-value is uniform.
        let mut rng = Rng::new(7);
        let truth = |x: f64| 1500.0 + 0.2 * x;
        let trials = 300;
        let (mut slope_hits, mut intercept_hits, mut rejected) = (0, 0, 0);
        for _ in 0..trials {
            let [xs, ys, ses] = simulated(&mut rng, truth, |y| 3.0 + 0.005 * y);
            let WeightedLineFit { line, fit } = fit_line_weighted(&xs, &ys, &ses).expect("valid");
            slope_hits += usize::from(covers(line.slope_ci95, 0.2));
            intercept_hits += usize::from(covers(line.intercept_ci95, 1500.0));
            rejected += usize::from(fit.p_value < 0.05);
        }
        for hits in [slope_hits, intercept_hits] {
            let rate = hits as f64 / trials as f64;
            assert!(rate >= 0.93, "coverage {rate}");
        }
        let rate = rejected as f64 / trials as f64;
        assert!((0.01..=0.10).contains(&rate), "χ² test rejects a right model at {rate}");
    }

    #[test]
    fn unusable_standard_errors_are_replaced() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        let ys = [100.0, 200.0, 300.0, 400.0];
        // Relative errors 2 % and 1 %: the smallest, 1 %, goes to the zero and the NaN.
        let f = fit_line_weighted(&xs, &ys, &[0.0, 4.0, f64::NAN, 4.0]).expect("valid");
        assert_eq!(f.fit.ses, [1.0, 4.0, 3.0, 4.0]);
        // At y = 0 a relative error gives nothing: the smallest absolute one instead.
        let f = fit_line_weighted(&xs, &[0.0, 200.0, 300.0, 400.0], &[0.0, 4.0, 5.0, f64::INFINITY]).expect("valid");
        assert_eq!(f.fit.ses, [4.0, 4.0, 5.0, 400.0 * (5.0 / 300.0)]);
        // None usable: equal tiny errors (ordinary least squares).
        let f = fit_line_weighted(&xs, &ys, &[0.0; 4]).expect("valid");
        assert_eq!(f.fit.ses, [400.0 * 1e-9; 4]);
        let f = fit_line_weighted(&xs, &[0.0; 4], &[-1.0; 4]).expect("valid");
        assert_eq!((f.fit.ses, f.line.slope, f.line.intercept), (vec![1.0; 4], 0.0, 0.0));
    }

    #[test]
    fn invalid_weighted_input_is_rejected() {
        let ses = [1.0; 3];
        assert_eq!(
            fit_line_weighted(&[1.0, 2.0, 3.0], &[1.0, 2.0], &ses),
            Err(StatsError::LengthMismatch { xs: 3, ys: 2 })
        );
        assert_eq!(
            fit_line_weighted(&[1.0, 2.0], &[1.0, 2.0], &ses[..2]),
            Err(StatsError::TooFew { needed: 3, got: 2 })
        );
        assert!(matches!(
            fit_line_weighted(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 3.0], &ses),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
        assert_eq!(
            fit_line_weighted(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], &[1.0; 2]),
            Err(StatsError::SeLengthMismatch { points: 3, ses: 2 })
        );
        assert_eq!(fit_line_weighted(&[5.0; 3], &[1.0, 2.0, 3.0], &ses), Err(StatsError::Degenerate));
        assert_eq!(fit_two_segments(&[5.0; 6], &[1.0; 6], &[1.0; 6]), Err(StatsError::Degenerate));
    }

    #[test]
    fn a_bend_at_64_kib_is_found_and_both_slopes_covered() {
        // 0.25 ns/byte up to 64 KiB, 1 ns/byte (4×) above, 1 % standard errors.
        let truth = |x: f64| 2000.0 + 0.25 * x.min(65536.0) + 1.0 * (x - 65536.0).max(0.0);
        let mut rng = Rng::new(3);
        let trials = 50;
        let (mut small_hits, mut large_hits) = (0, 0);
        for _ in 0..trials {
            let [xs, ys, ses] = simulated(&mut rng, truth, |y| 0.01 * y);
            let s = fit_two_segments(&xs, &ys, &ses).expect("valid").expect("7 sizes are enough");
            assert_eq!((s.breakpoint, s.candidates, s.fit.dof), (65536.0, 5, 4), "{s:?}");
            assert!(s.preferred() && s.vs_line_p_value < 1e-3, "{s:?}");
            assert_eq!(s.predict(0.0), s.intercept);
            assert!(close(s.predict(1e6) - s.predict(65536.0), s.large_slope * (1e6 - 65536.0), 1e-6));
            small_hits += usize::from(covers(s.small_slope_ci95, 0.25));
            large_hits += usize::from(covers(s.large_slope_ci95, 1.0));
            assert!(covers(s.intercept_ci95, 2000.0) || s.intercept_ci95[0] > 1900.0, "{s:?}");
        }
        assert!(small_hits >= 45 && large_hits >= 45, "{small_hits} {large_hits} of {trials}");
    }

    #[test]
    fn a_straight_sweep_keeps_one_line() {
        let truth = |x: f64| 2000.0 + 0.25 * x;
        let mut rng = Rng::new(4);
        let trials = 100;
        let mut preferred = 0;
        for _ in 0..trials {
            let [xs, ys, ses] = simulated(&mut rng, truth, |y| 0.01 * y);
            let s = fit_two_segments(&xs, &ys, &ses).expect("valid").expect("7 sizes are enough");
            preferred += usize::from(s.preferred());
        }
        // Bonferroni bounds the false choice at 5 %.
        assert!(preferred <= 5, "{preferred} of {trials} straight sweeps bent");
        // Exactly straight: no gain, p = 1.
        let xs = SWEEP.to_vec();
        let ys: Vec<f64> = xs.iter().map(|&x| truth(x)).collect();
        let s = fit_two_segments(&xs, &ys, &[1.0; 7]).expect("valid").expect("7 sizes");
        assert!(!s.preferred() && s.vs_line_p_value > 0.99, "{s:?}");
    }

    #[test]
    fn a_small_significant_bend_is_not_material() {
        // 10 % more per byte above 64 KiB, measured very precisely: significant, but under
        // MIN_SLOPE_CHANGE, so the single line stays.
        let xs = SWEEP.to_vec();
        let ys: Vec<f64> = xs.iter().map(|&x| 2000.0 + 0.25 * x + 0.025 * (x - 65536.0).max(0.0)).collect();
        let s = fit_two_segments(&xs, &ys, &[0.5; 7]).expect("valid").expect("7 sizes");
        assert!(s.vs_line_p_value < 1e-6 && !s.preferred(), "{s:?}");
    }

    #[test]
    fn too_few_sizes_for_two_segments() {
        let s = fit_two_segments(&[0.0, 8.0, 64.0, 512.0], &[1.0, 2.0, 3.0, 5.0], &[1.0; 4]).expect("valid");
        assert!(s.is_none(), "4 points leave one degree of freedom");
        let xs = [0.0, 0.0, 8.0, 8.0, 64.0, 64.0];
        let s = fit_two_segments(&xs, &[1.0, 1.1, 2.0, 2.1, 3.0, 3.1], &[1.0; 6]).expect("valid");
        assert!(s.is_none(), "3 distinct sizes");
    }

    #[test]
    fn a_point_far_from_the_line_is_outlying() {
        let xs = SWEEP.to_vec();
        let mut ys: Vec<f64> = xs.iter().map(|&x| 500.0 + 0.5 * x).collect();
        ys[3] += 40.0;
        let f = fit_line_weighted(&xs, &ys, &[5.0; 7]).expect("valid");
        assert!(f.fit.outlying(3), "{:?}", f.fit.std_residuals);
        assert_eq!((0..7).filter(|&i| f.fit.outlying(i)).count(), 1, "{:?}", f.fit.std_residuals);
        assert!(f.fit.p_value < 1e-6 && f.fit.variance_scale > 1.0);
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
        fn weighted_fit_recovers_a_noise_free_line(
            a in -1e4..1e4f64,
            b in -100.0..100.0f64,
            pts in prop::collection::vec((-1e3..1e3f64, 1e-3..1e3f64), 3..40),
        ) {
            let (mut xs, ses): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
            xs.sort_by(f64::total_cmp);
            prop_assume!(xs[xs.len() - 1] - xs[0] > 1.0);
            let ys: Vec<f64> = xs.iter().map(|x| a + b * x).collect();
            let WeightedLineFit { line, fit } = fit_line_weighted(&xs, &ys, &ses).expect("valid");
            let scale = a.abs() + 1e3 * b.abs() + 1.0;
            prop_assert!((line.slope - b).abs() <= 1e-8 * scale, "{:?}", line);
            prop_assert!((line.intercept - a).abs() <= 1e-8 * scale, "{:?}", line);
            prop_assert!(line.slope_ci95[0] <= line.slope && line.slope <= line.slope_ci95[1]);
            prop_assert!((fit.leverage.iter().sum::<f64>() - 2.0).abs() < 1e-9);
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
