//! The statistics a result row stores, in the row's unit ([`crate::Unit`]): the
//! record of what `stats` computed. `analyse` converts `stats`' results into these, so the
//! file format does not follow the statistics library's types.

use serde::{Deserialize, Serialize};

/// Statistics of a row's steady-state samples, every value in the row's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (divisor `n − 1`).
    pub stddev: f64,
    /// Median absolute deviation from the median, raw (not scaled to a standard deviation).
    pub mad: f64,
    /// 1st percentile of samples.
    pub p1: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 95 % interval of the median, `[lo, hi]`.
    pub median_ci95: [f64; 2],
    /// 95 % interval of the mean, `[lo, hi]`.
    pub mean_ci95: [f64; 2],
    /// Tukey outlier counts.
    pub outliers: Outliers,
    /// Whether the first and second halves of the samples disagree.
    pub drift: bool,
    /// `(median of 2nd half − median of 1st half) / |median|`.
    pub drift_rel: f64,
    /// For samples taken in rounds: how the interval was made and what the rounds showed.
    #[serde(default)]
    pub structure: Option<Structure>,
}

impl Summary {
    /// Half-width of the median's interval relative to the median; 0 for a zero-width
    /// interval, +∞ when the median is 0 but the interval is not.
    pub fn median_ci_rel_halfwidth(&self) -> f64 {
        let [lo, hi] = self.median_ci95;
        let half = hi / 2.0 - lo / 2.0;
        if half == 0.0 { 0.0 } else { half / self.median.abs() }
    }
}

/// Counts of Tukey outliers (never dropped, only counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    /// Below `Q1 − 3·IQR`.
    pub low_severe: usize,
    /// In `[Q1 − 3·IQR, Q1 − 1.5·IQR)`.
    pub low_mild: usize,
    /// In `(Q3 + 1.5·IQR, Q3 + 3·IQR]`.
    pub high_mild: usize,
    /// Above `Q3 + 3·IQR`.
    pub high_severe: usize,
}

/// How a [`Summary`]'s interval was made from samples taken in rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Structure {
    /// The interval's method, in words.
    pub interval: String,
    /// Each round.
    pub rounds: Vec<RoundSummary>,
    /// Start-up samples dropped over all rounds (MSER-5).
    pub dropped: usize,
    /// P-value of Cochran's Q test that the rounds share one median.
    pub heterogeneity_p: f64,
    /// The rounds disagree beyond their uncertainty by over 2 %.
    pub unstable: bool,
    /// Two well-separated levels in the samples, when there are two (else empty).
    pub levels: Vec<Level>,
}

/// One round of a [`Structure`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSummary {
    /// Samples taken in the round.
    pub n: usize,
    /// Start-up samples dropped from it.
    pub dropped: usize,
    /// Median of its steady-state samples (NaN, written `null`, for a round with none).
    #[serde(deserialize_with = "nan_if_null")]
    pub median: f64,
    /// 95 % circular-block-bootstrap interval of that median (NaNs likewise).
    #[serde(deserialize_with = "nan_pair_if_null")]
    pub median_ci95: [f64; 2],
    /// Block length used, in samples.
    pub block_length: f64,
}

/// One of two levels the samples fall into.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// The level's median.
    pub median: f64,
    /// Share of the samples in it.
    pub share: f64,
}

/// A point estimate and its 95 % interval, in the row's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The estimate.
    pub point: f64,
    /// Its 95 % interval.
    pub ci95: [f64; 2],
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
