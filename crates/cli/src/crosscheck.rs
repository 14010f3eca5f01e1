//! `osprim crosscheck`: osprim's figures beside those of the classic peer tools, measured on
//! the same CPU within the same minute.
//!
//! For each primitive both measure (the [`pairs`]), the peer runs, then osprim's matching
//! benchmark, then the peer again — peer, osprim, peer — all pinned to one CPU (`taskset -c`
//! for the peer, the runner's pinning for osprim). osprim's side runs in this process through
//! the runner ([`crate::runner::run`], restricted to the one result, nothing saved), so Ctrl-C
//! is honoured as in `osprim run`. The figure compared is the statistic the peer prints: the
//! mean where the peer prints a mean (`perf bench`), the median where one can be had
//! (cyclictest's histogram). The ratio is osprim ÷ the mean of the peer's two runs, with a 95 %
//! interval: osprim's interval of its statistic over the peer's, the range of its two runs
//! ([`stats::reading::ratio_of`]). It is read by the rules of [`stats::reading`]
//! against ±10 %: "within ±10 %" when the whole interval lies within, flagged "beyond ±10 %"
//! only when the whole interval lies beyond, "inconclusive" when it straddles. A peer whose two
//! runs differ by more than 10 % is flagged too: the machine changed level between them, so the
//! ratio is unreliable.
//!
//! Peers run as children with a deadline each ([`peer`]); their output is read by the small
//! pure functions of [`parse`]. An absent peer is named with the Debian package providing it,
//! a subcommand its version lacks with the version that has it.

pub mod parse;
pub mod peer;

use crate::config::{Only, Output, RunConfig};
use anyhow::Result;
use bench::sampler::SamplerConfig;
use model::crosscheck::{Agreement, Comparison, CrossRow, Crosscheck, Outcome, Statistic, TOLERANCE};
use model::{Row, Status};
use parse::ParseError;
use peer::Tool;
use stats::reading::{Interval, RatioVerdict, judge_ratio, ratio_of};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What `osprim crosscheck` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The CPU (`None`: the one `osprim run` would choose).
    pub cpu: Option<usize>,
    /// Fewer peer loops and a shorter osprim budget (the whole under ~30 s).
    pub quick: bool,
}

/// The ratio of osprim to the peer (the mean of its two runs) with its interval, what it says
/// and its flags. `osprim_ci95_ns` is the interval of osprim's figure; the peer's interval is
/// the range of its two runs.
pub fn compare(peer_before_ns: f64, peer_after_ns: f64, osprim_ns: f64, osprim_ci95_ns: [f64; 2]) -> Comparison {
    let peer_ns = (peer_before_ns + peer_after_ns) / 2.0;
    let peer = Interval::new(peer_ns, [peer_before_ns.min(peer_after_ns), peer_before_ns.max(peer_after_ns)]);
    let ours = Interval::new(osprim_ns, osprim_ci95_ns);
    let ratio = ratio_of(&ours, &peer);
    let agreement = ratio.map_or(Agreement::Inconclusive, |r| agreement(&r));
    Comparison {
        peer_before_ns,
        peer_after_ns,
        osprim_ns,
        osprim_ci95_ns: Some(osprim_ci95_ns),
        ratio: osprim_ns / peer_ns,
        ratio_ci95: ratio.map(|r| r.ci95),
        agreement,
        // No ratio (a peer figure that is zero or NaN) is flagged, not divided by.
        ratio_flagged: ratio.is_none() || agreement == Agreement::Beyond,
        // A peer figure that is zero or NaN disagrees with anything.
        peer_disagrees: peer_ns.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
            || (peer_after_ns - peer_before_ns).abs() / peer_ns > TOLERANCE,
    }
}

/// What a ratio osprim ÷ peer says: [`judge_ratio`] against [`TOLERANCE`], with "beyond" only
/// when the whole interval lies beyond 1 ± [`TOLERANCE`] (a real difference whose interval
/// reaches back inside the tolerance is inconclusive).
fn agreement(r: &Interval) -> Agreement {
    let [lo, hi] = r.ci95;
    match judge_ratio(r, TOLERANCE) {
        RatioVerdict::Same => Agreement::Within,
        RatioVerdict::Above | RatioVerdict::Below if lo > 1.0 + TOLERANCE || hi < 1.0 - TOLERANCE => Agreement::Beyond,
        _ => Agreement::Inconclusive,
    }
}

/// One primitive both measure.
#[derive(Debug, Clone)]
pub struct Pair {
    /// In words.
    pub primitive: &'static str,
    /// The peer tool.
    pub tool: Tool,
    /// Its arguments.
    pub args: Vec<String>,
    /// The lowest perf version that has the subcommand, when not every one does.
    pub since: Option<(u32, u32)>,
    /// Reads its figure, ns.
    pub read: fn(&str) -> Result<f64, ParseError>,
    /// The statistic compared.
    pub statistic: Statistic,
    /// osprim's result to run.
    pub only: Only,
    /// The row to read (`rpc.pipe` for a run of `ipc.pipe`).
    pub row_id: &'static str,
    /// osprim's sampler settings for it.
    pub sampler: SamplerConfig,
    /// The CPU both run on, when the peer insists on one (perf's futex hash).
    pub cpu: Option<usize>,
    /// The wake-ups osprim should take (its row's `loops_per_round`), when they must match
    /// the peer's count.
    pub loops: Option<u64>,
    /// Notes on what differs.
    pub notes: Vec<String>,
}

/// The loop counts and budgets of a crosscheck.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    syscall_loops: u64,
    pipe_loops: u64,
    fork_loops: u64,
    futex_seconds: u64,
    timer_loops: u64,
}

impl Sizes {
    fn of(quick: bool) -> Sizes {
        if quick {
            Sizes {
                syscall_loops: 1_000_000,
                pipe_loops: 20_000,
                fork_loops: 2_000,
                futex_seconds: 1,
                timer_loops: 1_000,
            }
        } else {
            Sizes {
                syscall_loops: 10_000_000,
                pipe_loops: 100_000,
                fork_loops: 10_000,
                futex_seconds: 2,
                timer_loops: 5_000,
            }
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn only(id: &str, params: &[(&str, &str)]) -> Only {
    Only { id: id.into(), params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
}

/// The cyclictest median, ns.
fn cyclictest_median(out: &str) -> Result<f64, ParseError> {
    parse::cyclictest(out)?.median_ns().ok_or(ParseError {
        peer: "cyclictest",
        expected: "histogram lines holding the middle wake-up (it lies among the overflows)",
    })
}

/// The pairs, for a run on `cpu` (`futex_cpu`: the CPU perf's futex hash pins its thread to).
pub fn pairs(cpu: usize, futex_cpu: usize, quick: bool, realtime: bool) -> Vec<Pair> {
    let s = Sizes::of(quick);
    // A fixed count of rounds: the pair's time is the peer's and osprim's alike.
    let sampler = if quick { SamplerConfig::quick() } else { SamplerConfig::standard() };
    let sampler = SamplerConfig { rounds_max: sampler.rounds, ..sampler };
    let n = |v: u64| v.to_string();
    let pipe = |threads: bool| {
        let mut args = strings(&["bench", "sched", "pipe"]);
        if threads {
            args.push("-T".into());
        }
        args.extend(["-l".into(), n(s.pipe_loops)]);
        Pair {
            primitive: if threads { "pipe round trip, two threads" } else { "pipe round trip, two processes" },
            tool: peer::PERF,
            args,
            since: None,
            read: parse::perf_usecs_per_op,
            statistic: Statistic::Mean,
            only: only(
                "ipc.pipe",
                &[("peer", if threads { "thread" } else { "process" }), ("placement", "same_cpu"), ("bytes", "0")],
            ),
            row_id: "rpc.pipe",
            sampler: sampler.clone(),
            cpu: None,
            loops: None,
            notes: vec!["perf writes and reads a 4-byte int each way; osprim an 8-byte sequence number".into()],
        }
    };
    let fork = |exec: bool| Pair {
        primitive: if exec { "fork + execve + wait" } else { "fork + exit + wait" },
        tool: peer::PERF,
        args: vec![
            "bench".into(),
            "syscall".into(),
            (if exec { "execve" } else { "fork" }).into(),
            "-l".into(),
            n(s.fork_loops),
        ],
        since: Some((6, 7)),
        read: parse::perf_usecs_per_op,
        statistic: Statistic::Mean,
        only: only(if exec { "process.fork_exec" } else { "process.fork_exit" }, &[("touched", "4MiB")]),
        row_id: if exec { "process.fork_exec" } else { "process.fork_exit" },
        sampler: sampler.clone(),
        cpu: None,
        loops: None,
        notes: {
            let mut v = vec![
                "osprim's parent has 4 MiB of touched memory (its smallest setting) that fork copies the page tables of; perf's has not"
                    .to_string(),
            ];
            if exec {
                v.push("perf's child execs /bin/true (dynamically linked); osprim's a 1 KiB static program".into());
            }
            v
        },
    };
    let mut timer_sampler = sampler.clone().with_rounds(1);
    timer_sampler.budget_s = s.timer_loops as f64 * bench::timer_wake::DEFAULT_INTERVAL_US as f64 / 1e6;
    let mut cyclic_args = strings(&["-m", "-i1000", "-t1", "-q", "--laptop", "-h", "1000"]);
    cyclic_args.extend(["-l".into(), n(s.timer_loops), "-a".into(), n(cpu as u64)]);
    cyclic_args.insert(1, if realtime { "-p95".into() } else { "--policy=other".into() });
    let mut timer_notes = vec![
        "median of single wake-ups: cyclictest's from its 1 µs histogram (latencies truncated to whole µs; the \
         bucket's middle is taken), osprim's from its samples"
            .into(),
        "--laptop: cyclictest leaves /dev/cpu_dma_latency alone, as osprim does".into(),
    ];
    if !realtime {
        timer_notes.push("SCHED_FIFO not permitted: both ran as SCHED_OTHER (cyclictest --policy=other)".into());
    }
    vec![
        Pair {
            primitive: "getppid system call",
            tool: peer::PERF,
            args: vec!["bench".into(), "syscall".into(), "basic".into(), "-l".into(), n(s.syscall_loops)],
            since: None,
            read: parse::perf_usecs_per_op,
            statistic: Statistic::Mean,
            only: only("syscall.getppid", &[]),
            row_id: "syscall.getppid",
            sampler: sampler.clone(),
            cpu: None,
            loops: None,
            notes: vec![
                "both call libc's getppid() wrapper; syscall.null makes the same call through the bare instruction"
                    .into(),
            ],
        },
        pipe(false),
        pipe(true),
        fork(false),
        fork(true),
        Pair {
            primitive: "FUTEX_WAIT → EAGAIN (private)",
            tool: peer::PERF,
            args: vec![
                "bench".into(),
                "futex".into(),
                "hash".into(),
                "-t".into(),
                "1".into(),
                "-f".into(),
                "1".into(),
                "-r".into(),
                n(s.futex_seconds),
            ],
            since: None,
            read: parse::perf_futex_hash,
            statistic: Statistic::Mean,
            only: only("syscall.futex_wait", &[]),
            row_id: "syscall.futex_wait",
            sampler: sampler.clone(),
            cpu: Some(futex_cpu),
            loops: None,
            notes: vec![format!(
                "perf pins its futex thread to the first online CPU (CPU {futex_cpu}) whatever taskset says: both ran there"
            )],
        },
        Pair {
            primitive: "timer wake-up latency",
            tool: peer::CYCLICTEST,
            args: cyclic_args,
            since: None,
            read: cyclictest_median,
            statistic: Statistic::Median,
            only: only("notify.timer", &[("via", "clock_nanosleep")]),
            row_id: "notify.timer",
            sampler: timer_sampler,
            cpu: None,
            loops: Some(s.timer_loops),
            notes: timer_notes,
        },
    ]
}

/// The first online CPU (`/sys/devices/system/cpu/online`), where perf's futex hash pins
/// its first thread; `fallback` when it cannot be read.
fn first_online_cpu(fallback: usize) -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.trim().split([',', '-']).next()?.parse().ok())
        .unwrap_or(fallback)
}

/// Whether this process may switch a thread to `SCHED_FIFO` 95 (tried on a throwaway thread).
fn realtime_permitted() -> bool {
    use sys::timer::{Policy, PolicyGuard};
    let p = Policy { policy: libc::SCHED_FIFO, priority: bench::timer_wake::FIFO_PRIORITY };
    std::thread::spawn(move || PolicyGuard::switch(p).is_ok()).join().unwrap_or(false)
}

/// Where the tools are.
struct Tools {
    taskset: Result<PathBuf, String>,
    perf: Result<PathBuf, String>,
    cyclictest: Result<PathBuf, String>,
    perf_version: Option<(u32, u32)>,
    /// Why a tool is not run again (it overran a deadline once), by tool.
    hung: std::cell::RefCell<Vec<(Tool, String)>>,
}

/// How long `perf version` may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

impl Tools {
    fn find(interrupt: &AtomicBool) -> Tools {
        let path = std::env::var_os("PATH");
        let perf = peer::locate(peer::PERF, path.as_deref());
        let mut hung = Vec::new();
        let perf_version = perf.as_ref().ok().and_then(|p| {
            let mut cmd = std::process::Command::new(p);
            cmd.arg("version");
            match peer::run(cmd, VERSION_DEADLINE, interrupt) {
                Ok(out) => parse::perf_version(&out.text).ok(),
                Err(e @ peer::RunError::Deadline(..)) => {
                    hung.push((peer::PERF, format!("{e}; perf is not run again")));
                    None
                }
                Err(_) => None,
            }
        });
        Tools {
            taskset: peer::locate(peer::TASKSET, path.as_deref()),
            perf,
            cyclictest: peer::locate(peer::CYCLICTEST, path.as_deref()),
            perf_version,
            hung: std::cell::RefCell::new(hung),
        }
    }

    fn of(&self, tool: Tool) -> Result<&PathBuf, String> {
        let found = if tool == peer::PERF { &self.perf } else { &self.cyclictest };
        self.taskset.as_ref().map_err(|e| format!("{e}: it pins the peer"))?;
        if let Some((_, why)) = self.hung.borrow().iter().find(|(t, _)| *t == tool) {
            return Err(why.clone());
        }
        found.as_ref().map_err(|e| e.clone())
    }
}

/// Why a pair cannot run here, if it cannot: its tool is absent, or perf lacks the subcommand.
fn unavailable(pair: &Pair, tools: &Tools) -> Option<String> {
    if let Err(e) = tools.of(pair.tool) {
        return Some(e);
    }
    let (since, have) = (pair.since?, tools.perf_version?);
    (have < since).then(|| {
        let sub = pair.args.iter().skip(1).take(2).cloned().collect::<Vec<_>>().join(" ");
        format!("perf {}.{} has no '{sub}' (perf ≥ {}.{})", have.0, have.1, since.0, since.1)
    })
}

/// The deadline of one peer run: generous against what it should take (a quick perf run takes
/// a second or two; cyclictest's run is its loop count in ms). A peer that overruns it is not
/// run again in the same crosscheck, so a hanging peer costs one deadline, not one per run.
fn deadline(pair: &Pair, quick: bool) -> Duration {
    Duration::from_secs(match (pair.tool == peer::CYCLICTEST, quick) {
        (true, true) => 30,
        (false, true) => 20,
        (_, false) => 60,
    })
}

/// The largest peer figure taken as a measurement: 1000 s per operation. Beyond it (or not a
/// positive finite number) the peer's output is refused, not printed.
const ABSURD_NS: f64 = 1e12;

/// `ns` if it is a figure a peer could have measured; else why not.
fn sane(program: &str, ns: f64) -> Result<f64, String> {
    if ns.is_finite() && ns > 0.0 && ns < ABSURD_NS {
        Ok(ns)
    } else if ns.is_finite() && ns >= ABSURD_NS {
        Err(format!("{program} printed an absurd figure (over 1000 s per operation): refused"))
    } else {
        Err(format!("{program} printed a figure that is not a positive finite number: refused"))
    }
}

/// Why cyclictest did not run unprivileged: rt-tests 2.x checks that it could switch to
/// `SCHED_FIFO` even when told `--policy=other`.
pub const REALTIME_REFUSED: &str = "cyclictest refuses to run without real-time scheduling, even with \
     --policy=other (it checks that it could switch to SCHED_FIFO): run as root or raise RLIMIT_RTPRIO ('ulimit -r')";

/// Runs the peer once; its figure in ns, or why there is none.
fn run_peer(pair: &Pair, tools: &Tools, cpu: usize, quick: bool, interrupt: &AtomicBool) -> Result<f64, String> {
    let program = tools.of(pair.tool)?;
    let taskset = tools.taskset.as_ref().map_err(|e| e.clone())?;
    let out = peer::run_pinned(taskset, cpu, program, &pair.args, deadline(pair, quick), interrupt).map_err(|e| {
        if matches!(e, peer::RunError::Deadline(..)) {
            let why = format!("{e}; {} is not run again", pair.tool.program);
            tools.hung.borrow_mut().push((pair.tool, why));
        }
        e.to_string()
    })?;
    if pair.tool == peer::CYCLICTEST && out.text.contains("Unable to change scheduling policy") {
        return Err(REALTIME_REFUSED.into());
    }
    let read = (pair.read)(&out.text).map(|ns| sane(pair.tool.program, ns));
    read.map_err(|e| {
        let first = out.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim().to_string();
        let status = out.status.map(|s| format!("exit status {s}")).unwrap_or_else(|| "killed by a signal".into());
        format!("{e} ({status}; it printed: {first})")
    })?
}

/// osprim's figure for the pair, ns, and notes on its row; or why there is none.
fn run_osprim(pair: &Pair, cpu: usize, interrupt: &AtomicBool) -> Result<(Stat, Vec<String>), String> {
    let cfg = RunConfig {
        patterns: Vec::new(),
        sampler: pair.sampler.clone(),
        cpu: Some(cpu),
        cpu_pair: None,
        sizes: None,
        output: Output::None,
        only: Some(vec![pair.only.clone()]),
        bound_s: None,
        cache: crate::config::CacheMode::Hot,
        cold_ids: None,
        host: None,
        short_stability: None,
    };
    // The runner pins this thread; the next pair may need another CPU.
    let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0));
    let done = crate::runner::run(&cfg, interrupt, &mut crate::progress::Silent);
    if let Ok(set) = allowed {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
    let done = done.map_err(|e| format!("{e:#}"))?;
    if done.interrupted {
        return Err("stopped by Ctrl-C".into());
    }
    let row = done
        .run
        .results
        .iter()
        .find(|r| r.id == pair.row_id && matches_only(r, &pair.only))
        .ok_or_else(|| format!("osprim gave no {} row", pair.row_id))?;
    let (value, mut notes) = figure(row, pair.statistic)?;
    let took = row.params.get("loops_per_round").and_then(|v| v.as_u64());
    if let Some(want) = pair.loops
        && took != Some(want)
    {
        let took = took.map(|n| n.to_string()).unwrap_or_else(|| "an unknown count of".into());
        notes.push(format!(
            "osprim took {took} wake-ups against the peer's {want} ({} set?)",
            bench::timer_wake::LOOPS_ENV
        ));
    }
    Ok((value, notes))
}

fn matches_only(row: &Row, only: &Only) -> bool {
    only.params.iter().all(|(k, v)| row.params.get(k).is_some_and(|x| model::vocab::param_is(x, v)))
}

/// A statistic of osprim's, ns, and its 95 % interval.
type Stat = (f64, [f64; 2]);

/// The statistic of a measured row and its 95 % interval, with a note when it is flagged.
fn figure(row: &Row, statistic: Statistic) -> Result<(Stat, Vec<String>), String> {
    if matches!(row.status, Status::Skipped | Status::Failed) {
        return Err(format!("osprim's {}: {}", row.id, row.reason.clone().unwrap_or_else(|| "not measured".into())));
    }
    let s = row.summary.as_ref().ok_or_else(|| format!("osprim's {} has no summary", row.id))?;
    let value = match statistic {
        Statistic::Mean => (s.mean, s.mean_ci95),
        Statistic::Median => (s.median, s.median_ci95),
    };
    let mut notes = Vec::new();
    if matches!(row.status, Status::Advisory | Status::Untrustworthy) {
        let flags: Vec<String> = row.flags.iter().map(|f| f.label().to_string()).collect();
        let word = if row.status == Status::Untrustworthy { "untrustworthy" } else { "flagged" };
        notes.push(format!("osprim's {} row is {word} ({})", row.id, flags.join(", ")));
    }
    let failed: Vec<&str> =
        row.validation.checks.iter().filter(|c| c.ok == Some(false)).map(|c| c.name.as_str()).collect();
    if !failed.is_empty() {
        notes.push(format!("osprim's check failed: {}", failed.join("; ")));
    }
    Ok((value, notes))
}

/// The text of osprim's side of a pair: `id k=v …`.
fn osprim_text(pair: &Pair) -> String {
    let params: Vec<String> = pair.only.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let id = if pair.row_id == pair.only.id { pair.only.id.clone() } else { pair.row_id.to_string() };
    std::iter::once(id).chain(params).collect::<Vec<_>>().join(" ")
}

/// One pair: peer, osprim, peer.
fn cross(pair: &Pair, tools: &Tools, cpu: usize, quick: bool, interrupt: &AtomicBool) -> CrossRow {
    let cpu = pair.cpu.unwrap_or(cpu);
    let mut row = CrossRow {
        primitive: pair.primitive.into(),
        peer: format!("taskset -c {cpu} {} {}", pair.tool.program, pair.args.join(" ")),
        osprim: format!("{} --cpu {cpu}", osprim_text(pair)),
        statistic: pair.statistic,
        outcome: Outcome::NotCompared { reason: String::new() },
        notes: pair.notes.clone(),
    };
    let measured = (|| -> Result<Comparison, String> {
        if let Some(why) = unavailable(pair, tools) {
            return Err(why);
        }
        let before = run_peer(pair, tools, cpu, quick, interrupt)?;
        let (ours, notes) = run_osprim(pair, cpu, interrupt)?;
        row.notes.extend(notes);
        let after = run_peer(pair, tools, cpu, quick, interrupt)?;
        Ok(compare(before, after, ours.0, ours.1))
    })();
    row.outcome = match measured {
        Ok(c) => Outcome::Compared(c),
        Err(reason) => Outcome::NotCompared { reason },
    };
    row
}

/// Runs every pair on the chosen CPU, peer–osprim–peer, and returns the rows.
pub fn run(settings: &Settings, interrupt: &AtomicBool) -> Result<Crosscheck> {
    let chosen = platform::placement::choose(settings.cpu).map_err(|e| match e {
        platform::placement::PlacementError::NotAllowed { .. } => {
            anyhow::Error::new(crate::config::UsageError(e.to_string()))
        }
        other => anyhow::Error::new(other),
    })?;
    let realtime = realtime_permitted();
    let tools = Tools::find(interrupt);
    let futex_cpu = first_online_cpu(chosen.cpu);
    let mut out = Crosscheck { cpu: chosen.cpu, quick: settings.quick, realtime, interrupted: false, rows: Vec::new() };
    for pair in pairs(chosen.cpu, futex_cpu, settings.quick, realtime) {
        if interrupt.load(Ordering::Relaxed) {
            out.interrupted = true;
            break;
        }
        out.rows.push(cross(&pair, &tools, chosen.cpu, settings.quick, interrupt));
    }
    out.interrupted |= interrupt.load(Ordering::Relaxed);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_within_beyond_and_a_peer_that_disagrees_with_itself() {
        let c = compare(100.0, 100.0, 105.0, [104.0, 106.0]);
        assert!((c.ratio - 1.05).abs() < 1e-12);
        assert_eq!(c.ratio_ci95, Some([1.04, 1.06]));
        assert_eq!(c.agreement, Agreement::Within);
        assert!(!c.ratio_flagged && !c.peer_disagrees);
        let c = compare(100.0, 100.0, 80.0, [78.0, 82.0]);
        assert_eq!(c.agreement, Agreement::Beyond);
        assert!(c.ratio_flagged && !c.peer_disagrees);
        let c = compare(100.0, 100.0, 120.0, [115.0, 125.0]);
        assert!(c.ratio_flagged);
        // 100 and 120: mean 110, ratio 1.0, but the peer's runs differ by 18 % of their mean.
        let c = compare(100.0, 120.0, 110.0, [109.0, 111.0]);
        assert!(!c.ratio_flagged && c.peer_disagrees);
        assert!(!compare(100.0, 109.0, 104.5, [104.0, 105.0]).peer_disagrees);
        let c = compare(0.0, 0.0, 1.0, [0.9, 1.1]);
        assert!(c.ratio_flagged && c.peer_disagrees, "a zero peer is flagged, not divided by");
        assert_eq!((c.ratio_ci95, c.agreement), (None, Agreement::Inconclusive));
    }

    #[test]
    fn the_ratio_is_judged_on_its_interval() {
        // 1.11 beyond ±10 %, but its interval reaches back inside: inconclusive, not flagged.
        let c = compare(100.0, 100.0, 111.0, [109.0, 113.0]);
        assert_eq!(c.agreement, Agreement::Inconclusive);
        assert!(!c.ratio_flagged);
        // The peer's two runs are its interval: osprim [104, 106] over [95, 105].
        let c = compare(95.0, 105.0, 105.0, [104.0, 106.0]);
        let [lo, hi] = c.ratio_ci95.unwrap();
        assert!((lo - 104.0 / 105.0).abs() < 1e-12 && (hi - 106.0 / 95.0).abs() < 1e-12, "{lo} {hi}");
        assert_eq!(c.agreement, Agreement::Inconclusive, "[0.99, 1.12] straddles 1.1");
        // A wide interval holding 1: inconclusive, whatever the estimate says.
        let c = compare(100.0, 100.0, 142.0, [50.0, 103.0]);
        assert_eq!((c.agreement, c.ratio_flagged), (Agreement::Inconclusive, false));
        // Wholly beyond, below 1.
        let c = compare(100.0, 102.0, 50.0, [48.0, 52.0]);
        assert!(c.ratio_ci95.unwrap()[1] < 0.9);
        assert_eq!((c.agreement, c.ratio_flagged), (Agreement::Beyond, true));
        assert_eq!(Agreement::Beyond.text(), "beyond ±10 %");
    }

    fn tools_with(perf: bool, cyclic: bool, version: Option<(u32, u32)>) -> Tools {
        let absent = |t: Tool| Err(format!("{} is not installed (Debian package {})", t.program, t.package));
        Tools {
            taskset: Ok(PathBuf::from("/usr/bin/taskset")),
            perf: if perf { Ok(PathBuf::from("/usr/bin/perf")) } else { absent(peer::PERF) },
            cyclictest: if cyclic { Ok(PathBuf::from("/usr/bin/cyclictest")) } else { absent(peer::CYCLICTEST) },
            perf_version: version,
            hung: Default::default(),
        }
    }

    #[test]
    fn absent_peers_and_missing_subcommands_are_named() {
        let ps = pairs(1, 0, true, true);
        let fork = ps.iter().find(|p| p.only.id == "process.fork_exit").unwrap();
        let exec = ps.iter().find(|p| p.only.id == "process.fork_exec").unwrap();
        let basic = ps.iter().find(|p| p.only.id == "syscall.getppid").unwrap();
        let timer = ps.iter().find(|p| p.only.id == "notify.timer").unwrap();
        let old = tools_with(true, true, Some((6, 1)));
        assert_eq!(unavailable(fork, &old).unwrap(), "perf 6.1 has no 'syscall fork' (perf ≥ 6.7)");
        assert_eq!(unavailable(exec, &old).unwrap(), "perf 6.1 has no 'syscall execve' (perf ≥ 6.7)");
        assert_eq!(unavailable(basic, &old), None);
        assert_eq!(unavailable(fork, &tools_with(true, true, Some((6, 7)))), None);
        let none = tools_with(false, false, None);
        assert_eq!(unavailable(basic, &none).unwrap(), "perf is not installed (Debian package linux-perf)");
        assert_eq!(unavailable(timer, &none).unwrap(), "cyclictest is not installed (Debian package rt-tests)");
        let mut no_taskset = tools_with(true, true, Some((6, 1)));
        no_taskset.taskset = Err("taskset is not installed (Debian package util-linux)".into());
        assert!(unavailable(basic, &no_taskset).unwrap().contains("util-linux"));
    }

    #[test]
    fn every_pair_names_a_registered_benchmark_and_the_peer_statistic() {
        for p in pairs(1, 0, false, false) {
            assert!(bench::registry::find(&p.only.id).is_some(), "{}", p.only.id);
            let want = if p.tool == peer::CYCLICTEST { Statistic::Median } else { Statistic::Mean };
            assert_eq!(p.statistic, want, "{}", p.primitive);
        }
        let timer = pairs(3, 0, true, false).into_iter().find(|p| p.tool == peer::CYCLICTEST).unwrap();
        assert!(timer.args.contains(&"--policy=other".to_string()) && !timer.args.contains(&"-p95".to_string()));
        assert!(timer.args.windows(2).any(|w| w == ["-a", "3"]) && timer.args.windows(2).any(|w| w == ["-l", "1000"]));
        assert!((timer.sampler.budget_s - 1.0).abs() < 1e-9 && timer.sampler.rounds == 1);
    }

    #[test]
    fn cyclictest_refusing_to_run_without_realtime_says_so() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::var_os("PATH");
        let Ok(taskset) = peer::locate(peer::TASKSET, path.as_deref()) else { return };
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("cyclictest");
        std::fs::write(&fake, "#!/bin/sh\necho 'Unable to change scheduling policy!' >&2\nexit 1\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tools = Tools {
            taskset: Ok(taskset),
            perf: Err(String::new()),
            cyclictest: Ok(fake),
            perf_version: None,
            hung: Default::default(),
        };
        let cpu = sys::cpu::allowed_cpus()[0];
        let timer = pairs(cpu, cpu, true, false).into_iter().find(|p| p.tool == peer::CYCLICTEST).unwrap();
        let never = AtomicBool::new(false);
        assert_eq!(run_peer(&timer, &tools, cpu, true, &never), Err(REALTIME_REFUSED.to_string()));
    }

    #[test]
    fn absurd_peer_figures_are_refused_with_the_reason() {
        assert_eq!(sane("perf", 195.3), Ok(195.3));
        for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            assert!(sane("perf", bad).unwrap_err().contains("not a positive finite number"), "{bad}");
        }
        assert!(sane("perf", 1e303).unwrap_err().contains("absurd"));
    }

    #[test]
    fn an_absent_peer_row_is_not_compared_and_runs_nothing() {
        let ps = pairs(0, 0, true, true);
        let never = AtomicBool::new(false);
        let row = cross(&ps[0], &tools_with(false, false, None), 0, true, &never);
        assert_eq!(
            row.outcome,
            Outcome::NotCompared { reason: "perf is not installed (Debian package linux-perf)".into() }
        );
        assert!(row.peer.starts_with("taskset -c 0 perf bench syscall basic"));
    }
}
