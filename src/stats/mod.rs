//! TEMPORARY stub, replaced by the real statistics module.
use serde::{Deserialize, Serialize};
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("need at least {needed} samples, got {got}")]
    TooFew { needed: usize, got: usize },
}
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    pub low_severe: usize,
    pub low_mild: usize,
    pub high_mild: usize,
    pub high_severe: usize,
}
impl Outliers {
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub min_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
    pub median_ns: f64,
    pub stddev_ns: f64,
    pub mad_ns: f64,
    pub p1_ns: f64,
    pub p5_ns: f64,
    pub p95_ns: f64,
    pub p99_ns: f64,
    pub median_ci95_ns: [f64; 2],
    pub mean_ci95_ns: [f64; 2],
    pub outliers: Outliers,
    pub drift: bool,
    pub drift_rel: f64,
}
impl Summary {
    pub fn median_ci_rel_halfwidth(&self) -> f64 {
        (self.median_ci95_ns[1] - self.median_ci95_ns[0]) / 2.0 / self.median_ns.abs()
    }
}
pub fn median(s: &[f64]) -> f64 {
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}
pub fn percentile(s: &[f64], p: f64) -> f64 {
    s[((p / 100.0) * (s.len() - 1) as f64).round() as usize]
}
pub fn median_ci_order_stat(s: &[f64], _c: f64) -> (f64, f64) {
    let n = s.len() as f64;
    let h = 0.98 * n.sqrt();
    let lo = (n / 2.0 - h).floor().max(0.0) as usize;
    let hi = ((n / 2.0 + h).ceil() as usize).min(s.len() - 1);
    (s[lo], s[hi])
}
pub fn summarize(x: &[f64], _seed: u64) -> Result<Summary, StatsError> {
    if x.len() < 2 {
        return Err(StatsError::TooFew { needed: 2, got: x.len() });
    }
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let mean = s.iter().sum::<f64>() / n as f64;
    let med = median(&s);
    let ci = median_ci_order_stat(&s, 0.95);
    Ok(Summary {
        n,
        min_ns: s[0],
        max_ns: s[n - 1],
        mean_ns: mean,
        median_ns: med,
        stddev_ns: 0.0,
        mad_ns: 0.0,
        p1_ns: percentile(&s, 1.0),
        p5_ns: percentile(&s, 5.0),
        p95_ns: percentile(&s, 95.0),
        p99_ns: percentile(&s, 99.0),
        median_ci95_ns: [ci.0, ci.1],
        mean_ci95_ns: [mean, mean],
        outliers: Outliers::default(),
        drift: false,
        drift_rel: 0.0,
    })
}
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub point: f64,
    pub ci95: [f64; 2],
}
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineFit {
    pub n: usize,
    pub intercept: f64,
    pub intercept_ci95: [f64; 2],
    pub slope: f64,
    pub slope_ci95: [f64; 2],
    pub r_squared: f64,
}
pub fn fit_line(xs: &[f64], ys: &[f64]) -> Result<LineFit, StatsError> {
    let _ = (xs, ys);
    Err(StatsError::TooFew { needed: 3, got: 0 })
}
pub fn median_difference(a: &[f64], b: &[f64], seed: u64) -> Result<Estimate, StatsError> {
    let _ = seed;
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let d = median(&a) - median(&b);
    Ok(Estimate { point: d, ci95: [d, d] })
}
