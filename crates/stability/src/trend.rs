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

/// Least-squares slope of a resource over time, per hour (`analysis::stability`).
pub use analysis::stability::slope_per_hour;

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
}
