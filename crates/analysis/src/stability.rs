//! What a stability run's resource trend says: each resource's first, last and peak value and
//! its least-squares slope per hour, so that a leak shows as a slope rather than a guess.

use model::stability::{StabilityRun, TrendPoint};

/// One resource over a stability run.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trend {
    /// `rss_bytes`, `fds`, `threads`, or a gauge's name.
    pub what: String,
    /// Its first sampled value.
    pub first: f64,
    /// Its last sampled value.
    pub last: f64,
    /// Its largest sampled value.
    pub peak: f64,
    /// Least-squares slope per hour; `None` with fewer than three points.
    pub slope_per_hour: Option<f64>,
}

/// The shortest span of a trend worth a slope per hour: over less, the workload's own
/// wandering (domains and threads created and destroyed at random) is all a slope would show.
pub const MIN_SLOPE_SPAN_S: f64 = 60.0;

/// Least-squares slope of `value` over time, per hour; `None` with fewer than three points or
/// over less than [`MIN_SLOPE_SPAN_S`].
pub fn slope_per_hour(trend: &[TrendPoint], value: impl Fn(&TrendPoint) -> f64) -> Option<f64> {
    let span = match (trend.first(), trend.last()) {
        (Some(a), Some(b)) => b.at_s - a.at_s,
        _ => 0.0,
    };
    if trend.len() < 3 || span < MIN_SLOPE_SPAN_S {
        return None;
    }
    let n = trend.len() as f64;
    let mx = trend.iter().map(|p| p.at_s).sum::<f64>() / n;
    let my = trend.iter().map(&value).sum::<f64>() / n;
    let sxx: f64 = trend.iter().map(|p| (p.at_s - mx).powi(2)).sum();
    let sxy: f64 = trend.iter().map(|p| (p.at_s - mx) * (value(p) - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx * 3600.0)
}

/// Every resource of `run`'s trend: RSS, descriptors, threads, then its gauges in the order
/// they first appear.
pub fn trends(run: &StabilityRun) -> Vec<Trend> {
    let t = &run.trend;
    if t.is_empty() {
        return Vec::new();
    }
    let one = |what: &str, value: &dyn Fn(&TrendPoint) -> f64| Trend {
        what: what.to_string(),
        first: value(&t[0]),
        last: value(&t[t.len() - 1]),
        peak: t.iter().map(value).fold(f64::NEG_INFINITY, f64::max),
        slope_per_hour: slope_per_hour(t, value),
    };
    let mut out = vec![
        one("rss_bytes", &|p| p.rss_bytes as f64),
        one("fds", &|p| p.fds as f64),
        one("threads", &|p| p.threads as f64),
    ];
    let mut gauges: Vec<&str> = Vec::new();
    for g in t.iter().flat_map(|p| &p.gauges) {
        if !gauges.contains(&g.kind.as_str()) {
            gauges.push(&g.kind);
        }
    }
    for name in gauges {
        let value = |p: &TrendPoint| p.gauges.iter().find(|g| g.kind == name).map_or(0.0, |g| g.count as f64);
        out.push(one(name, &value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::stability::{Outcome, StabilityTest, Tally};

    fn point(at_s: f64, rss: u64, domains: u64) -> TrendPoint {
        TrendPoint {
            at_s,
            rss_bytes: rss,
            fds: 3,
            threads: 1,
            gauges: vec![Tally { kind: "domains".into(), count: domains }],
        }
    }

    #[test]
    fn a_steady_leak_has_its_slope_and_a_flat_resource_none() {
        let run = StabilityRun {
            test: StabilityTest::Stress,
            seed: 1,
            mode: "mprotect".into(),
            settings: Vec::new(),
            requested_s: 10.0,
            ran_s: 10.0,
            clean_s: 10.0,
            outcome: Outcome::Clean,
            operations: Vec::new(),
            results: Vec::new(),
            invariants: Vec::new(),
            trend: (0..10).map(|i| point(10.0 * i as f64, 1000 + 100 * i, 5 + i % 2)).collect(),
            notes: Vec::new(),
            short: false,
        };
        let t = trends(&run);
        let names: Vec<&str> = t.iter().map(|t| t.what.as_str()).collect();
        assert_eq!(names, ["rss_bytes", "fds", "threads", "domains"]);
        assert!((t[0].slope_per_hour.unwrap() - 36_000.0).abs() < 1e-6);
        assert_eq!((t[0].first, t[0].last, t[0].peak), (1000.0, 1900.0, 1900.0));
        assert_eq!(t[1].slope_per_hour, Some(0.0));
        assert_eq!(t[3].peak, 6.0);
        assert!(slope_per_hour(&run.trend[..2], |p| p.rss_bytes as f64).is_none());
        assert!(slope_per_hour(&run.trend[..5], |p| p.rss_bytes as f64).is_none(), "40 s is too short");
    }
}
