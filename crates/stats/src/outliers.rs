//! Tukey's outlier fences: counts samples that lie unusually far from the
//! middle half of the data. Outliers are only counted, never dropped: in
//! OS measurements the tail (an interrupt, a migration, a page fault) is
//! part of what a primitive costs, and the robust statistics (median, MAD)
//! already resist it.
//!
//! With `Q1`, `Q3` the 25th and 75th percentiles (as computed by
//! [`percentile`]) and `IQR = Q3 − Q1`
//! (J. W. Tukey, *Exploratory Data Analysis*, 1977, ch. 2; Tukey used
//! hinges, we use the interpolated quartiles):
//!
//! ```text
//!  low severe │ low mild │          not an outlier           │ high mild │ high severe
//! ────────────┼──────────┼──────────┬───────────────┬────────┼───────────┼────────────
//!         Q1 − 3·IQR  Q1 − 1.5·IQR  Q1     (IQR)    Q3   Q3 + 1.5·IQR  Q3 + 3·IQR
//! ```
//!
//! A sample exactly on a fence belongs to the inner side: mild means
//! strictly beyond the 1.5·IQR fence, severe strictly beyond the 3·IQR
//! fence. When all samples are equal, IQR is 0 and nothing is an outlier.

use serde::{Deserialize, Serialize};

use super::order::percentile;

/// Multiple of the IQR beyond which a sample is a mild outlier.
pub const MILD_FENCE_IQR: f64 = 1.5;
/// Multiple of the IQR beyond which a sample is a severe outlier.
pub const SEVERE_FENCE_IQR: f64 = 3.0;

/// Counts of Tukey outliers (never dropped, only counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    /// Samples below `Q1 − 3·IQR`.
    pub low_severe: usize,
    /// Samples in `[Q1 − 3·IQR, Q1 − 1.5·IQR)`.
    pub low_mild: usize,
    /// Samples in `(Q3 + 1.5·IQR, Q3 + 3·IQR]`.
    pub high_mild: usize,
    /// Samples above `Q3 + 3·IQR`.
    pub high_severe: usize,
}

impl Outliers {
    /// Mild outliers on both sides.
    pub fn mild(&self) -> usize {
        self.low_mild + self.high_mild
    }

    /// Severe outliers on both sides.
    pub fn severe(&self) -> usize {
        self.low_severe + self.high_severe
    }

    /// All outliers, mild and severe, on both sides.
    pub fn total(&self) -> usize {
        self.mild() + self.severe()
    }
}

/// Classifies an ascending `sorted` slice against Tukey's fences (see the
/// module documentation). O(log n): the fences are found by binary search.
///
/// An empty slice has no outliers. The slice must be sorted ascending and
/// free of NaN; this is not checked.
pub fn classify_outliers(sorted: &[f64]) -> Outliers {
    if sorted.is_empty() {
        return Outliers::default();
    }
    let q1 = percentile(sorted, 25.0);
    let q3 = percentile(sorted, 75.0);
    let iqr = q3 - q1;
    let low_severe_fence = q1 - SEVERE_FENCE_IQR * iqr;
    let low_mild_fence = q1 - MILD_FENCE_IQR * iqr;
    let high_mild_fence = q3 + MILD_FENCE_IQR * iqr;
    let high_severe_fence = q3 + SEVERE_FENCE_IQR * iqr;

    // Number of samples strictly below / at-or-below a value.
    let below = |v: f64| sorted.partition_point(|&x| x < v);
    let at_or_below = |v: f64| sorted.partition_point(|&x| x <= v);

    let n_low_severe = below(low_severe_fence);
    let n_low = below(low_mild_fence);
    let n_not_high = at_or_below(high_mild_fence);
    let n_not_severe_high = at_or_below(high_severe_fence);
    Outliers {
        low_severe: n_low_severe,
        low_mild: n_low - n_low_severe,
        high_mild: n_not_severe_high - n_not_high,
        high_severe: sorted.len() - n_not_severe_high,
    }
}

/// Severe outliers (beyond the 3·IQR fences) that also lie more than `min_rel` × |median| and
/// more than `min_abs` away from the median, in an ascending `sorted` slice.
///
/// In a very tight distribution (an IQR of a fraction of a nanosecond) Tukey's fences sit so
/// close to the median that ordinary jitter crosses them; this counts only the outliers that
/// are far enough away to matter.
pub fn material_outliers(sorted: &[f64], min_rel: f64, min_abs: f64) -> usize {
    if sorted.is_empty() {
        return 0;
    }
    let q1 = percentile(sorted, 25.0);
    let q3 = percentile(sorted, 75.0);
    let iqr = q3 - q1;
    let med = percentile(sorted, 50.0);
    let margin = (min_rel * med.abs()).max(min_abs);
    let low = (q1 - SEVERE_FENCE_IQR * iqr).min(med - margin);
    let high = (q3 + SEVERE_FENCE_IQR * iqr).max(med + margin);
    sorted.partition_point(|&x| x < low) + (sorted.len() - sorted.partition_point(|&x| x <= high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn crafted_set_is_classified_by_hand() {
        // 0..=8 (nine points) plus four planted values; n = 13.
        // Sorted: -20, -6, 0, 1, 2, 3, 4, 5, 6, 7, 8, 15, 40
        // Q1: h = 12·0.25 = 3 → 1;  Q3: h = 9 → 7;  IQR = 6.
        // Fences: low severe −17, low mild −8, high mild 16, high severe 25.
        let v = [-20.0, -6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 15.0, 40.0];
        let o = classify_outliers(&v);
        assert_eq!(
            o,
            Outliers {
                low_severe: 1,  // −20 < −17
                low_mild: 0,    // −6 is inside −8
                high_mild: 0,   // 15 is inside 16
                high_severe: 1  // 40 > 25
            }
        );
        // Now −10 (mild low) and 20 (mild high); the quartiles stay 1 and 7.
        let v = [-20.0, -10.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 20.0, 40.0];
        let o = classify_outliers(&v);
        assert_eq!((o.low_severe, o.low_mild, o.high_mild, o.high_severe), (1, 1, 1, 1));
        assert_eq!((o.mild(), o.severe(), o.total()), (2, 2, 4));
    }

    #[test]
    fn samples_on_a_fence_are_not_beyond_it() {
        // Q1 = 1, Q3 = 7, IQR = 6 as above; −8 and 16 sit on the mild
        // fences, −17 and 25 on the severe ones.
        let v = [-17.0, -8.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 16.0, 25.0];
        let o = classify_outliers(&v);
        assert_eq!((o.low_severe, o.low_mild, o.high_mild, o.high_severe), (0, 1, 1, 0));
    }

    #[test]
    fn constant_and_tiny_sets_have_no_outliers() {
        assert_eq!(classify_outliers(&[]), Outliers::default());
        assert_eq!(classify_outliers(&[5.0]), Outliers::default());
        assert_eq!(classify_outliers(&[5.0; 100]), Outliers::default());
        assert_eq!(classify_outliers(&[1.0, 1000.0]), Outliers::default());
    }

    #[test]
    fn zero_iqr_makes_any_deviation_severe() {
        // Q1 = Q3 = 0: every nonzero value is beyond every fence.
        let v = [-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0];
        let o = classify_outliers(&v);
        assert_eq!((o.low_severe, o.low_mild, o.high_mild, o.high_severe), (1, 0, 0, 1));
    }

    proptest! {
        #[test]
        fn counts_never_exceed_half_or_overlap(mut v in prop::collection::vec(-1e6..1e6f64, 0..300)) {
            v.sort_by(f64::total_cmp);
            let o = classify_outliers(&v);
            // The middle half lies inside the fences, so at most about half
            // of the samples (plus interpolation slack) can be outliers.
            prop_assert!(o.total() <= v.len() / 2 + 2);
            prop_assert!(o.low_severe + o.low_mild <= v.len() / 4 + 1);
            prop_assert!(o.high_severe + o.high_mild <= v.len() / 4 + 1);
        }
    }

    #[test]
    fn material_outliers_ignore_jitter_in_tight_distributions() {
        // IQR 0.1 around 100: 100.5 is a severe Tukey outlier but only 0.5 % away.
        let mut v: Vec<f64> = (0..100).map(|i| 100.0 + (i % 2) as f64 * 0.1).collect();
        v.extend([100.5, 100.6, 150.0, 20.0]);
        v.sort_by(f64::total_cmp);
        assert_eq!(classify_outliers(&v).severe(), 4);
        assert_eq!(material_outliers(&v, 0.10, 0.0), 2);
        assert_eq!(material_outliers(&v, 0.0, 0.0), 4);
        assert_eq!(material_outliers(&[], 0.1, 0.0), 0);
        // An absolute floor (a few timer steps) keeps one step from counting near zero.
        let mut z: Vec<f64> = (0..100).map(|i| if i % 10 == 0 { 0.87 } else { 0.0 }).collect();
        z.sort_by(f64::total_cmp);
        assert_eq!(material_outliers(&z, 0.10, 0.0), 10);
        assert_eq!(material_outliers(&z, 0.10, 4.0 * 0.87), 0);
        assert_eq!(material_outliers(&v, 0.10, 60.0), 1, "only 20 lies over 60 away");
    }
}
