//! Statistics for osprim: turns per-operation samples (nanoseconds, `f64`)
//! into summaries that say what an OS primitive costs and how sure we are.
//!
//! - [`summarize`] — location, spread, percentiles, bootstrap CIs of the
//!   median and mean, outlier counts and a drift check, in a [`Summary`].
//! - [`percentile`], [`median`], [`median_ci_order_stat`] — order
//!   statistics; the last is the cheap CI the sampler's stopping rule uses.
//! - [`bootstrap_ci`], [`median_difference`] — seeded percentile bootstrap.
//! - [`classify_outliers`] — Tukey's fences, counted, never dropped.
//! - [`moments`] — mean, standard deviation, MAD: the leaf the others import.
//! - [`fit_line`], [`fit_line_weighted`], [`fit_two_segments`] — ordinary
//!   and weighted least-squares lines, and a line with one bend, with
//!   t-based CIs for size sweeps.
//! - [`sequential`] — a confidence sequence for a median: valid at every look (`osprim ab`).
//! - [`structured`] — intervals that respect rounds and time order (steady-state
//!   truncation, block length, hierarchical bootstrap, levels).
//!
//! Everything is deterministic: randomness comes only from the seeded
//! generator in [`rng`], so a result can be reproduced from its inputs and
//! seed forever. The module does no I/O and never panics on bad input;
//! invalid input is reported through [`StatsError`].

#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod changepoint;
pub mod fit;
pub mod moments;
pub mod multiple;
pub mod order;
pub mod outliers;
pub mod ratio;
pub mod reading;
pub mod rng;
pub mod sequential;
pub mod special;
pub mod structured;
pub mod summary;

pub use bootstrap::{DEFAULT_RESAMPLES, Estimate, bootstrap_ci, median_difference};
pub use fit::{
    LineFit, TwoSegmentFit, WeightedFit, WeightedLineFit, fit_line, fit_line_weighted, fit_two_segments, se_from_ci95,
};
pub use order::{median, median_ci_order_stat, median_ci_ranks, median_in_place, percentile};
pub use outliers::{Outliers, classify_outliers, material_outliers};
pub use summary::{
    DRIFT_MIN_REL, DRIFT_MIN_SAMPLES, RoundSummary, Structure, Summary, floor_at_resolution, summarize,
    summarize_rounds,
};

/// Why a statistic could not be computed from the given input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// Fewer samples (or points) than the statistic needs.
    #[error("need at least {needed} samples, got {got}")]
    TooFew {
        /// Minimum number required.
        needed: usize,
        /// Number supplied.
        got: usize,
    },
    /// A sample is NaN or infinite.
    #[error("sample {index} is not a finite number ({value})")]
    NotFinite {
        /// Position of the offending sample in its slice.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The x and y slices of a line fit differ in length.
    #[error("x and y must have the same length, got {xs} and {ys}")]
    LengthMismatch {
        /// Number of x values.
        xs: usize,
        /// Number of y values.
        ys: usize,
    },
    /// All x values of a line fit are equal, so the slope is undefined.
    #[error("all x values are equal: a line cannot be fitted")]
    Degenerate,
    /// A weighted fit got a different number of standard errors than points.
    #[error("need one standard error per point: {points} points, {ses} standard errors")]
    SeLengthMismatch {
        /// Number of points.
        points: usize,
        /// Number of standard errors.
        ses: usize,
    },
}

/// Checks that `samples` has at least `needed` values, all finite.
pub(crate) fn check_samples(samples: &[f64], needed: usize) -> Result<(), StatsError> {
    if samples.len() < needed {
        return Err(StatsError::TooFew { needed, got: samples.len() });
    }
    match samples.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NotFinite { index, value: samples[index] }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_render_readably() {
        let e = StatsError::TooFew { needed: 2, got: 1 };
        assert_eq!(e.to_string(), "need at least 2 samples, got 1");
        let e = StatsError::NotFinite { index: 3, value: f64::NAN };
        assert_eq!(e.to_string(), "sample 3 is not a finite number (NaN)");
        let e = StatsError::NotFinite { index: 0, value: f64::NEG_INFINITY };
        assert_eq!(e.to_string(), "sample 0 is not a finite number (-inf)");
    }

    #[test]
    fn check_samples_reports_the_first_problem() {
        assert_eq!(check_samples(&[1.0, 2.0], 2), Ok(()));
        assert_eq!(check_samples(&[1.0], 2), Err(StatsError::TooFew { needed: 2, got: 1 }));
        assert_eq!(
            check_samples(&[1.0, f64::INFINITY, f64::NAN], 2),
            Err(StatsError::NotFinite { index: 1, value: f64::INFINITY })
        );
    }
}
