//! Placement: which CPU the measuring thread is pinned to.
//!
//! By default the least loaded CPU of the allowed set (busy time from `/proc/stat` over
//! 50 ms; ties go to the highest-numbered CPU, since CPU 0 usually takes more interrupts).
//! `--cpu N` picks one explicitly; it must be in the allowed set, which inside a container is
//! the container's cpuset.

use std::time::Duration;
use sys::cpu;

/// Why placement failed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlacementError {
    /// The CPU asked for cannot be used.
    #[error("CPU {cpu} is not in this process's allowed CPU set {allowed:?}")]
    NotAllowed { cpu: usize, allowed: Vec<usize> },
    /// The kernel refused to pin.
    #[error("cannot pin to CPU {cpu}: {reason}")]
    Pin { cpu: usize, reason: String },
    /// No CPU at all (affinity unreadable).
    #[error("cannot read this process's allowed CPU set")]
    NoCpus,
}

/// The chosen CPU and how it was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// CPU number.
    pub cpu: usize,
    /// "--cpu" or "least loaded of the allowed set".
    pub chosen_by: String,
    /// The allowed set.
    pub allowed: Vec<usize>,
}

/// Checks `requested` (or picks the least loaded CPU) without pinning.
pub fn choose(requested: Option<usize>) -> Result<Chosen, PlacementError> {
    let allowed = cpu::allowed_cpus();
    if allowed.is_empty() {
        return Err(PlacementError::NoCpus);
    }
    if let Some(c) = requested {
        if !allowed.contains(&c) {
            return Err(PlacementError::NotAllowed { cpu: c, allowed });
        }
        return Ok(Chosen { cpu: c, chosen_by: "--cpu".into(), allowed });
    }
    let before = read_proc_stat();
    std::thread::sleep(Duration::from_millis(50));
    let after = read_proc_stat();
    let cpu = least_loaded(&before, &after, &allowed);
    Ok(Chosen { cpu, chosen_by: "least loaded of the allowed set (/proc/stat over 50 ms)".into(), allowed })
}

/// Checks that every CPU of a pair is allowed.
pub fn check_pair(pair: [usize; 2]) -> Result<(), PlacementError> {
    let allowed = cpu::allowed_cpus();
    for c in pair {
        if !allowed.contains(&c) {
            return Err(PlacementError::NotAllowed { cpu: c, allowed });
        }
    }
    Ok(())
}

/// Pins the calling thread.
pub fn pin(cpu_id: usize) -> Result<(), PlacementError> {
    cpu::pin_current_thread(cpu_id).map_err(|e| PlacementError::Pin { cpu: cpu_id, reason: e.to_string() })
}

/// Busy jiffies per CPU from `/proc/stat` (user+nice+system+irq+softirq+steal).
fn read_proc_stat() -> Vec<(usize, u64)> {
    std::fs::read_to_string("/proc/stat").map(|s| parse_proc_stat(&s)).unwrap_or_default()
}

/// Parses the per-CPU lines of `/proc/stat` into (cpu, busy jiffies).
pub fn parse_proc_stat(text: &str) -> Vec<(usize, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let id = it.next()?.strip_prefix("cpu")?.parse::<usize>().ok()?;
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal
            let busy = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| v.get(i)).sum();
            Some((id, busy))
        })
        .collect()
}

/// The allowed CPU whose busy time grew least; ties go to the highest number.
pub fn least_loaded(before: &[(usize, u64)], after: &[(usize, u64)], allowed: &[usize]) -> usize {
    let busy = |c: usize| {
        let b = before.iter().find(|x| x.0 == c).map(|x| x.1);
        let a = after.iter().find(|x| x.0 == c).map(|x| x.1);
        match (b, a) {
            (Some(b), Some(a)) => a.saturating_sub(b),
            _ => u64::MAX,
        }
    };
    allowed.iter().copied().min_by_key(|&c| (busy(c), std::cmp::Reverse(c))).unwrap_or(allowed[0])
}

/// Jiffies the hypervisor took from `cpu` so far (the `steal` column of `/proc/stat`), if known.
pub fn steal_jiffies(cpu: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal(&text, cpu)
}

/// The steal column of CPU `cpu` in `/proc/stat` text.
pub fn parse_steal(text: &str, cpu: usize) -> Option<u64> {
    let name = format!("cpu{cpu}");
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\nintr 1\n";

    #[test]
    fn parses_per_cpu_lines_only() {
        assert_eq!(parse_proc_stat(STAT), vec![(0, 10), (1, 10)]);
    }

    #[test]
    fn reads_steal_of_one_cpu() {
        let text = "cpu  1 2 3 4 5 6 7 99 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 42 0 0\n";
        assert_eq!(parse_steal(text, 1), Some(42));
        assert_eq!(parse_steal(text, 0), Some(8));
        assert_eq!(parse_steal(text, 2), None);
    }

    #[test]
    fn picks_least_busy_and_breaks_ties_high() {
        let before = [(0, 10), (1, 10), (2, 10)];
        assert_eq!(least_loaded(&before, &[(0, 20), (1, 11), (2, 15)], &[0, 1, 2]), 1);
        assert_eq!(least_loaded(&before, &[(0, 10), (1, 10), (2, 10)], &[0, 1, 2]), 2);
        assert_eq!(least_loaded(&before, &[(0, 10), (1, 99), (2, 10)], &[0, 1]), 0);
    }

    #[test]
    fn rejects_cpu_outside_allowed_set() {
        let err = choose(Some(100_000)).unwrap_err();
        assert!(matches!(err, PlacementError::NotAllowed { cpu: 100_000, .. }));
    }
}
