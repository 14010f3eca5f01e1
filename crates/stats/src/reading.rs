//! Reading an estimate by its interval: the one set of rules by which osprim turns a ratio or a
//! difference and its 95 % CI into words, wherever it prints one (compare, the papers view,
//! crosscheck, the HTML report).
//!
//! - A **difference** (`a − b`) whose interval includes 0 is *below resolution*: the runs
//!   cannot tell it from nothing, so no figure is derived from it (no ratio, no "× faster");
//!   what can be said is a bound, `|x| < max(|lo|, |hi|)`.
//! - A **ratio** (`new / base`) is read against 1 and a noise threshold `t` (0.02 = 2 %):
//!   - [`RatioVerdict::Above`]: the whole interval lies above 1 and the estimate above `1 + t`
//!     (a change that is both real and material);
//!   - [`RatioVerdict::Below`]: likewise below (`1 − t`);
//!   - [`RatioVerdict::Same`]: the whole interval lies within `[1 − t, 1 + t]`: whatever the
//!     truth, it is within the noise threshold;
//!   - [`RatioVerdict::Inconclusive`]: anything else — the interval holds 1 but reaches beyond
//!     the threshold (the runs cannot tell), or it excludes 1 while the estimate is within the
//!     threshold and the interval reaches beyond it (a change of unknown size).
//!
//! A ratio whose denominator's interval includes 0 is no ratio: its interval is unbounded.
//! [`ratio_of`] returns `None` then, and the caller prints the denominator's bound instead.
//! criterion.rs reads a change the same way: significant *and* beyond a noise threshold
//! (`analysis/compare.rs`); osprim adds the third answer, "inconclusive", so that a gate never
//! reads "cannot tell" as "no change".

use serde::{Deserialize, Serialize};

/// An estimate and its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate.
    pub estimate: f64,
    /// Lower and upper ends of the 95 % interval.
    pub ci95: [f64; 2],
}

impl Interval {
    /// An estimate with its interval.
    pub fn new(estimate: f64, ci95: [f64; 2]) -> Interval {
        Interval { estimate, ci95 }
    }

    /// An exact figure (a paper's): its interval is the point.
    pub fn exact(value: f64) -> Interval {
        Interval { estimate: value, ci95: [value, value] }
    }

    /// Whether the interval includes 0 (or is not a number): a difference the data cannot tell
    /// from nothing.
    pub fn includes_zero(&self) -> bool {
        let [lo, hi] = self.ci95;
        !(lo.is_finite() && hi.is_finite() && self.estimate.is_finite()) || (lo <= 0.0 && hi >= 0.0)
    }

    /// The bound of a difference below resolution: `|x| < bound`.
    pub fn bound(&self) -> f64 {
        self.ci95[0].abs().max(self.ci95[1].abs())
    }

    /// Whether the interval has no width (a single figure, or the seed method's mean, which
    /// has no interval of its own): never a basis for a verdict between runs.
    pub fn degenerate(&self) -> bool {
        self.ci95[1].partial_cmp(&self.ci95[0]) != Some(std::cmp::Ordering::Greater)
    }
}

/// What a ratio says, read by its interval (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RatioVerdict {
    /// Really and materially above 1.
    Above,
    /// Really and materially below 1.
    Below,
    /// The whole interval within the noise threshold of 1.
    Same,
    /// The interval cannot tell.
    Inconclusive,
}

/// Reads the ratio `r` against 1 with noise threshold `noise` (module doc).
pub fn judge_ratio(r: &Interval, noise: f64) -> RatioVerdict {
    let [lo, hi] = r.ci95;
    if !(lo.is_finite() && hi.is_finite() && r.estimate.is_finite()) {
        return RatioVerdict::Inconclusive;
    }
    let noise = noise.max(0.0);
    if lo > 1.0 && r.estimate > 1.0 + noise {
        RatioVerdict::Above
    } else if hi < 1.0 && r.estimate < 1.0 - noise {
        RatioVerdict::Below
    } else if lo >= 1.0 - noise && hi <= 1.0 + noise {
        RatioVerdict::Same
    } else {
        RatioVerdict::Inconclusive
    }
}

/// `num / den` with an interval from the two intervals taken as independent, by the ends
/// (conservative: the interval of the quotient spans every quotient of the two intervals'
/// points). `None` when either interval includes 0 (for the denominator no ratio exists then;
/// for the numerator the ratio's interval would reach 0 or below, and no ratio is printed
/// from such an interval), or either is not a number. For two results with samples, prefer the bootstrap of
/// [`super::ratio::median_ratio`]; this is for a figure against a fixed one (a paper's), or
/// for derived rows that have only an interval.
pub fn ratio_of(num: &Interval, den: &Interval) -> Option<Interval> {
    if den.includes_zero()
        || num.includes_zero()
        || !num.estimate.is_finite()
        || !num.ci95.iter().all(|x| x.is_finite())
    {
        return None;
    }
    let ends =
        [num.ci95[0] / den.ci95[0], num.ci95[0] / den.ci95[1], num.ci95[1] / den.ci95[0], num.ci95[1] / den.ci95[1]];
    let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(Interval { estimate: num.estimate / den.estimate, ci95: [lo, hi] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(e: f64, lo: f64, hi: f64) -> Interval {
        Interval::new(e, [lo, hi])
    }

    #[test]
    fn no_ratio_from_an_interval_that_includes_zero_on_either_side() {
        assert!(ratio_of(&r(13.0, -40.0, 70.0), &r(12.0, 10.0, 14.0)).is_none());
        assert!(ratio_of(&r(12.0, 10.0, 14.0), &r(13.0, -40.0, 70.0)).is_none());
        let q = ratio_of(&r(12.0, 10.0, 14.0), &r(6.0, 5.0, 7.0)).unwrap();
        assert!(q.ci95[0] > 0.0 && (q.estimate - 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_real_material_change_is_above_or_below() {
        assert_eq!(judge_ratio(&r(1.10, 1.05, 1.15), 0.02), RatioVerdict::Above);
        assert_eq!(judge_ratio(&r(0.90, 0.85, 0.95), 0.02), RatioVerdict::Below);
    }

    #[test]
    fn an_interval_inside_the_threshold_is_the_same() {
        assert_eq!(judge_ratio(&r(1.0, 0.99, 1.01), 0.02), RatioVerdict::Same);
        // Real but immaterial: excludes 1, wholly within the threshold.
        assert_eq!(judge_ratio(&r(1.01, 1.005, 1.015), 0.02), RatioVerdict::Same);
    }

    #[test]
    fn a_wide_interval_holding_one_is_inconclusive_not_no_change() {
        // lock.handoff 1.245 → 5.269 µs, ratio CI [0.999, 6.411].
        assert_eq!(judge_ratio(&r(4.23, 0.999, 6.411), 0.02), RatioVerdict::Inconclusive);
        // sched.preempt's "1.42× slower" with CI 0.50–1.03.
        assert_eq!(judge_ratio(&r(1.42, 0.50, 1.03), 0.02), RatioVerdict::Inconclusive);
    }

    #[test]
    fn a_small_real_change_of_unknown_size_is_inconclusive() {
        assert_eq!(judge_ratio(&r(1.01, 1.001, 1.2), 0.02), RatioVerdict::Inconclusive);
    }

    #[test]
    fn not_a_number_is_inconclusive() {
        assert_eq!(judge_ratio(&r(f64::NAN, 0.9, 1.1), 0.02), RatioVerdict::Inconclusive);
        assert_eq!(judge_ratio(&r(1.5, 1.2, f64::INFINITY), 0.02), RatioVerdict::Inconclusive);
    }

    #[test]
    fn no_ratio_over_an_interval_that_includes_zero() {
        let diff = r(9.6, -1.2, 20.0);
        assert!(diff.includes_zero());
        assert_eq!(diff.bound(), 20.0);
        assert_eq!(ratio_of(&Interval::exact(22000.0), &diff), None);
        assert!(r(f64::NAN, 1.0, 2.0).includes_zero());
    }

    #[test]
    fn a_ratio_to_a_fixed_figure_scales_the_interval() {
        let now = r(150.0, 140.0, 160.0);
        let q = ratio_of(&Interval::exact(3000.0), &now).unwrap();
        assert!((q.estimate - 20.0).abs() < 1e-12);
        assert!((q.ci95[0] - 3000.0 / 160.0).abs() < 1e-12 && (q.ci95[1] - 3000.0 / 140.0).abs() < 1e-12);
        assert!(Interval::exact(3.0).degenerate() && !now.degenerate());
    }
}
