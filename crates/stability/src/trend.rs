//! A process's resources, read from `/proc`: what a stability run samples to show a leak.

use model::stability::{Tally, TrendPoint};
use std::path::Path;

/// Resident set size, open descriptors and threads of `pid` (`None`: this process) at
/// `at_s`, with the test's own `gauges`. A figure that cannot be read is 0.
pub fn sample(pid: Option<u32>, at_s: f64, gauges: Vec<Tally>) -> TrendPoint {
    let proc_dir = match pid {
        Some(p) => format!("/proc/{p}"),
        None => "/proc/self".to_string(),
    };
    let dir = Path::new(&proc_dir);
    let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
    TrendPoint {
        at_s,
        rss_bytes: status_field(&status, "VmRSS:").map_or(0, |kib| kib * 1024),
        fds: std::fs::read_dir(dir.join("fd")).map_or(0, |d| d.count() as u64),
        threads: status_field(&status, "Threads:").unwrap_or(0),
        gauges,
    }
}

/// The first number after `name` in a `/proc/PID/status` text.
fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Keeps a trend to at most `max` points by dropping every other point once it is full
/// (the first and the newest stay), so that an hour's run keeps an even spread.
pub fn push_bounded(trend: &mut Vec<TrendPoint>, point: TrendPoint, max: usize) {
    trend.push(point);
    if trend.len() > max.max(2) {
        let last = trend.pop();
        let kept: Vec<TrendPoint> = trend.drain(..).step_by(2).collect();
        *trend = kept;
        trend.extend(last);
    }
}

/// Least-squares slope of `value` over time, per hour: a resource's trend.
pub fn slope_per_hour(trend: &[TrendPoint], value: impl Fn(&TrendPoint) -> f64) -> Option<f64> {
    if trend.len() < 3 {
        return None;
    }
    let n = trend.len() as f64;
    let mx = trend.iter().map(|p| p.at_s).sum::<f64>() / n;
    let my = trend.iter().map(&value).sum::<f64>() / n;
    let sxx: f64 = trend.iter().map(|p| (p.at_s - mx).powi(2)).sum();
    let sxy: f64 = trend.iter().map(|p| (p.at_s - mx) * (value(p) - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx * 3600.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at_s: f64, rss: u64) -> TrendPoint {
        TrendPoint { at_s, rss_bytes: rss, fds: 3, threads: 1, gauges: Vec::new() }
    }

    #[test]
    fn this_process_has_memory_descriptors_and_a_thread() {
        let p = sample(None, 0.0, Vec::new());
        assert!(p.rss_bytes > 0 && p.fds >= 1 && p.threads >= 1, "{p:?}");
    }

    #[test]
    fn a_bounded_trend_keeps_its_first_and_newest_points() {
        let mut t = Vec::new();
        for i in 0..100 {
            push_bounded(&mut t, point(i as f64, 0), 10);
        }
        assert!(t.len() <= 10);
        assert_eq!(t.first().unwrap().at_s, 0.0);
        assert_eq!(t.last().unwrap().at_s, 99.0);
    }

    #[test]
    fn a_steady_leak_has_its_slope() {
        let t: Vec<_> = (0..10).map(|i| point(i as f64, 1000 + 10 * i)).collect();
        let s = slope_per_hour(&t, |p| p.rss_bytes as f64).unwrap();
        assert!((s - 36_000.0).abs() < 1e-6, "{s}");
        assert!(slope_per_hour(&t[..2], |p| p.rss_bytes as f64).is_none());
    }
}
