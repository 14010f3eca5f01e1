//! Reading the peers' output: small pure functions, each tested on output recorded on a
//! real machine. A failure names the line that was expected.

/// A parse failure: what line was expected, and from which peer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{peer}: expected a line {expected}; not found in its output")]
pub struct ParseError {
    /// The peer command.
    pub peer: &'static str,
    /// The line it should have printed, described.
    pub expected: &'static str,
}

/// `perf version 6.1.187` → `(6, 1)`.
pub fn perf_version(out: &str) -> Result<(u32, u32), ParseError> {
    let err = ParseError { peer: "perf version", expected: "'perf version MAJOR.MINOR…'" };
    let line = out.lines().find_map(|l| l.trim().strip_prefix("perf version ")).ok_or(err.clone())?;
    let mut parts = line.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok()).ok_or(err.clone())?;
    let minor = parts.next().and_then(|p| p.parse().ok()).ok_or(err)?;
    Ok((major, minor))
}

/// `perf bench syscall …` and `perf bench sched pipe`: the `N usecs/op` line, in ns.
pub fn perf_usecs_per_op(out: &str) -> Result<f64, ParseError> {
    let err = ParseError { peer: "perf bench", expected: "'<number> usecs/op'" };
    out.lines()
        .find_map(|l| l.trim().strip_suffix("usecs/op").and_then(|n| n.trim().parse::<f64>().ok()))
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|us| us * 1e3)
        .ok_or(err)
}

/// `perf bench futex hash`: `Averaged N operations/sec (+- x%), total secs = S`, as ns per
/// operation of one thread (1e9 ÷ N; with `-t 1` the average is that one thread's rate).
pub fn perf_futex_hash(out: &str) -> Result<f64, ParseError> {
    let err = ParseError { peer: "perf bench futex hash", expected: "'Averaged <N> operations/sec …'" };
    out.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("Averaged ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|ops| 1e9 / ops)
        .ok_or(err)
}

/// What `cyclictest -q -h H -t1` prints at the end, in µs.
#[derive(Debug, Clone, PartialEq)]
pub struct Cyclic {
    /// `# Min Latencies:`.
    pub min_us: f64,
    /// `# Avg Latencies:` (cyclictest prints it truncated to whole µs).
    pub avg_us: f64,
    /// `# Max Latencies:`.
    pub max_us: f64,
    /// `# Total:`, the wake-ups counted in the histogram.
    pub total: u64,
    /// `# Histogram Overflows:`, wake-ups later than the histogram's last bucket.
    pub overflows: u64,
    /// (bucket µs, count) for every non-empty 1 µs bucket.
    pub histogram: Vec<(u64, u64)>,
}

impl Cyclic {
    /// The median latency in ns: the middle of the 1 µs bucket holding the middle wake-up
    /// (cyclictest truncates each latency to whole µs before counting it). `None` when the
    /// median lies among the overflows, or nothing was counted.
    pub fn median_ns(&self) -> Option<f64> {
        let all = self.total + self.overflows;
        if all == 0 {
            return None;
        }
        let middle = all.div_ceil(2);
        let mut seen = 0u64;
        for &(us, count) in &self.histogram {
            seen += count;
            if seen >= middle {
                return Some((us as f64 + 0.5) * 1e3);
            }
        }
        None
    }
}

/// `cyclictest -q -h H -t1` output (one thread).
pub fn cyclictest(out: &str) -> Result<Cyclic, ParseError> {
    let field = |name: &'static str, expected: &'static str| -> Result<u64, ParseError> {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(name).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok()))
            .ok_or(ParseError { peer: "cyclictest", expected })
    };
    let min = field("# Min Latencies:", "'# Min Latencies: <µs>' (was -h given?)")?;
    let avg = field("# Avg Latencies:", "'# Avg Latencies: <µs>'")?;
    let max = field("# Max Latencies:", "'# Max Latencies: <µs>'")?;
    let total = field("# Total:", "'# Total: <count>'")?;
    let overflows = field("# Histogram Overflows:", "'# Histogram Overflows: <count>'")?;
    let mut histogram = Vec::new();
    for line in out.lines().filter(|l| !l.starts_with('#')) {
        let mut cols = line.split_whitespace();
        let (Some(b), Some(c), None) = (cols.next(), cols.next(), cols.next()) else { continue };
        if let (Ok(b), Ok(c)) = (b.parse::<u64>(), c.parse::<u64>())
            && c > 0
        {
            histogram.push((b, c));
        }
    }
    if histogram.iter().map(|h| h.1).sum::<u64>() != total {
        return Err(ParseError {
            peer: "cyclictest",
            expected: "'<bucket> <count>' histogram lines adding up to '# Total:'",
        });
    }
    Ok(Cyclic { min_us: min as f64, avg_us: avg as f64, max_us: max as f64, total, overflows, histogram })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded on the development machine (KVM guest, AMD EPYC, Linux 6.18, perf 6.1,
    // rt-tests 2.40).
    const SYSCALL_BASIC: &str = "# Running 'syscall/basic' benchmark:
# Executed 1000000 getppid() calls
     Total time: 0.195 [sec]

       0.195349 usecs/op
        5119043 ops/sec
";
    const SCHED_PIPE: &str = "# Running 'sched/pipe' benchmark:
# Executed 20000 pipe operations between two processes

     Total time: 0.125 [sec]

       6.260500 usecs/op
         159731 ops/sec
";
    const FUTEX_HASH: &str = "# Running 'futex/hash' benchmark:
Run summary [PID 6013]: 1 threads, each operating on 1 [private] futexes for 1 secs.

[thread  0] futex: 0x55cf31ecf3b0 [ 2866280 ops/sec ]

Averaged 2866280 operations/sec (+- 0.00%), total secs = 1
";
    const CYCLICTEST: &str = "# /dev/cpu_dma_latency set to 0us
# Histogram
000000 000000
000007 000000
000008 000002
000009 000005
000010 000006
000011 000035
000012 000131
000013 000156
000014 000070
000015 000048
000016 000013
000017 000010
000018 000010
000019 000002
000020 000001
000021 000001
000022 000002
000024 000002
000025 000001
000029 000001
000037 000001
000046 000001
000053 000001
000072 000001
000073 000000
# Total: 000000500
# Min Latencies: 00008
# Avg Latencies: 00013
# Max Latencies: 00072
# Histogram Overflows: 00000
# Histogram Overflow at cycle number:
# Thread 0:
";
    const UNKNOWN_FORK: &str = "Unknown benchmark: 'fork' for collection 'syscall'\n";

    #[test]
    fn perf_figures_are_read_in_ns() {
        assert!((perf_usecs_per_op(SYSCALL_BASIC).unwrap() - 195.349).abs() < 1e-9);
        assert!((perf_usecs_per_op(SCHED_PIPE).unwrap() - 6260.5).abs() < 1e-9);
        assert!((perf_futex_hash(FUTEX_HASH).unwrap() - 1e9 / 2_866_280.0).abs() < 1e-9);
        assert_eq!(perf_version("perf version 6.1.187\n"), Ok((6, 1)));
        assert_eq!(perf_version("perf version 6.12.rc3.g1234\n"), Ok((6, 12)));
    }

    #[test]
    fn cyclictest_summary_and_median_from_the_histogram() {
        let c = cyclictest(CYCLICTEST).unwrap();
        assert_eq!((c.min_us, c.avg_us, c.max_us), (8.0, 13.0, 72.0));
        assert_eq!((c.total, c.overflows), (500, 0));
        // 2+5+6+35+131 = 179 < 250 ≤ 179+156: the 13 µs bucket, its middle 13.5 µs.
        assert_eq!(c.median_ns(), Some(13_500.0));
        let all_over = Cyclic { total: 0, overflows: 5, histogram: vec![], ..c.clone() };
        assert_eq!(all_over.median_ns(), None);
    }

    #[test]
    fn garbage_names_the_expected_line() {
        for garbage in ["", "hello\nworld\n", UNKNOWN_FORK, "-1 usecs/op\n"] {
            let e = perf_usecs_per_op(garbage).unwrap_err();
            assert!(e.to_string().contains("usecs/op"), "{e}");
        }
        assert!(perf_futex_hash(SCHED_PIPE).unwrap_err().to_string().contains("Averaged"));
        assert!(perf_version("garbage").unwrap_err().to_string().contains("perf version"));
        let e = cyclictest(SYSCALL_BASIC).unwrap_err();
        assert!(e.to_string().contains("# Min Latencies"), "{e}");
        let lost_line = CYCLICTEST.replace("000013 000156\n", "");
        assert!(cyclictest(&lost_line).unwrap_err().to_string().contains("adding up"));
    }
}
