//! `interpose.preload`: what wrapping the event-receive call with an `LD_PRELOAD` library costs
//! per event — the cost of intercepting each message, as RightSpeed's message hook did; and
//! `interpose.ui`: the same wrapper handling each event as a user-interface message.
//!
//! Seed rows: RightSpeed Table 3 "intercept non-user-interface message" (`interpose.preload`:
//! the hook sees every message and passes it on) and "intercept & handle user interface
//! message" (`interpose.ui`: the hook also ends the current task and begins another — "the
//! message hook must … communicate that this task is beginning and the previous task is ending
//! to RightSpeed"). Both are measured as RightSpeed measured them, with minus without.
//!
//! `interpose.ui`, parameter `hint`: the child is started with `OSPRIM_INTERPOSE_UI` set,
//! and the wrapper follows each `read` with one `sched_setattr` of the calling thread, ending
//! task A and beginning task B or the reverse (see `probe/osprim_interpose.rs`): `hint=uclamp`
//! changes the utilisation clamp (the hint `task.uclamp` times alone; skipped, with
//! `task.uclamp`'s reason, where the kernel has no clamps), `hint=nice` the nice value (the
//! nearest, `task.setattr`; skipped where this thread may not lower its nice value, tried and
//! put back before the children start). Its row is the same with − without difference, every
//! event a user-interface message; RightSpeed's own evaluation of the message type (a separate
//! row) is not in it. Extra **validation**: the wrapper adds an event's first byte to its sum
//! only when the event's `sched_setattr` succeeded, so the sum check proves every event was
//! intercepted *and* handled; and before the child leaves, its current hint read from
//! `/proc/<pid>/stat` (nice) or `/proc/<pid>/sched` (`uclamp.min`, where shown) is the task
//! the number of messages it handled leaves current.
//!
//! The wrapper is osprim's interposer (`probe/osprim_interpose.rs`, built by `build.rs`): it
//! defines `read`, calls the C library's own (found with `dlsym(RTLD_NEXT, "read")`), then
//! inspects the event received — counts the call and adds the first byte to a running sum.
//! One child process runs osprim's helper executable (`probe/osprim_helper.rs`, `read-loop`
//! mode) with `LD_PRELOAD=<the wrapper>`; it inherits the measuring thread's CPU. It reads
//! both ways, in one process: through the symbol `read` (bound to the wrapper) and through the
//! C library's own `read` (looked up in `libc.so.6` itself), both by a function pointer.
//!
//! **Timing model:** in the child, the timed region is a loop of 1-byte `read`s from a pipe
//! the child owns, refilled before the clock starts (in chunks of at most 4096 bytes, each
//! chunk its own timed region; one timer overhead per region is subtracted). For every sample
//! the parent asks for `n` reads each way, and the child times a block through the wrapper and
//! a block direct, alternating which goes first, so a change of the machine's speed touches
//! both alike (paired, as RightSpeed measured "with and without the operation and
//! subtracted"). The row's samples are the with − without differences; its breakdown keeps
//! both sides as stages `with` and `without`. The child measures with the run's clock (the
//! cycle counter read as osprim reads it, or `CLOCK_MONOTONIC_RAW`).
//! **Disturbed pairs are dropped by the kernel's account** ([`crate::cpu_time`]): the child
//! reads its CPU time around each chunk; a block whose wall time exceeds what the kernel charged
//! it by more than a few microseconds shared the CPU with another task (or the hypervisor),
//! and its pair is dropped (`observed`: `pairs`, `pairs_dropped`). One such block of 450 reads
//! moved a pair by ±400 ns a read against a difference of 8 ns, and left the mean below
//! resolution in most runs.
//! **Validation:** the wrapper's counter rose by exactly the number of reads made through it
//! and its sum of first bytes equals the sum of the bytes read (so every such read went
//! through the wrapper, which looked at each event); it did not move over the direct reads;
//! every read returned its expected byte; at most half the pairs were disturbed; the child
//! left cleanly; and the difference the row reports (its mean under the seed method, its median
//! otherwise) is positive: the wrapper cost something.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::{Samples, Timed};
use platform::timer::TimerKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use sys::spawn::Helper;

/// osprim's helper executable (`probe/osprim_helper.rs`); empty if it could not be built.
pub(crate) static HELPER_BIN: &[u8] = include_bytes!(env!("OSPRIM_HELPER_BIN"));
/// The `read` interposer (`probe/osprim_interpose.rs`); empty if it could not be built.
static INTERPOSE_SO: &[u8] = include_bytes!(env!("OSPRIM_INTERPOSE_SO"));

/// Reads per timed region in the helper (its pipe is refilled between regions).
const CHUNK: u64 = 4096;
/// How long a helper may take to start or to answer beyond its reads.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a helper may take to leave after being told to.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Writes `bytes` to `dir/name` with `mode` (unless it is there already, as long); its path.
pub(crate) fn install(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> Result<PathBuf, NotMeasured> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    let fail = |what: &str, e: std::io::Error| NotMeasured::Failed(format!("{what} {}: {e}", path.display()));
    if std::fs::metadata(&path).map(|m| m.len() != bytes.len() as u64).unwrap_or(true) {
        std::fs::write(&path, bytes).map_err(|e| fail("write", e))?;
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(|e| fail("chmod", e))?;
    Ok(path)
}

/// The helper executable in the run's scratch directory.
pub(crate) fn helper(ctx: &Ctx) -> Result<PathBuf, NotMeasured> {
    if HELPER_BIN.is_empty() {
        return Err(NotMeasured::Skipped("the helper executable could not be built (see build warnings)".into()));
    }
    install(ctx.scratch, "osprim_helper", HELPER_BIN, 0o755)
}

/// The helper's `<timer>` argument: the run's clock.
pub(crate) fn timer_arg(ctx: &Ctx) -> &'static str {
    if ctx.timer.kind() == TimerKind::MonotonicRaw { "clock" } else { "counter" }
}

/// The command bit that has the helper time the direct block first.
const DIRECT_FIRST: u64 = 1 << 63;

/// What the helper reported for a pair of blocks: `n` reads through the wrapper, `n` direct.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Batch {
    /// Ticks of the reads through the wrapper, and of the direct ones.
    with_ticks: u64,
    without_ticks: u64,
    /// CPU time the kernel charged the helper over each block's timed chunks, ns.
    with_cpu_ns: u64,
    without_cpu_ns: u64,
    /// Reads each way.
    reads: u64,
    /// Reads (both ways) that returned the wrong byte.
    wrong: u64,
    /// The wrapper's count of reads and its sum of first bytes over the wrapped block.
    hook_reads: u64,
    hook_first_bytes: u64,
    /// The wrapper's count over the direct block (0: it never saw them).
    hook_reads_direct: u64,
    /// The sum of the bytes read each way.
    bytes: u64,
}

impl Batch {
    fn parse(reply: &[u8; 80]) -> Batch {
        let v = |i: usize| u64::from_le_bytes(reply[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Batch {
            with_ticks: v(0),
            without_ticks: v(1),
            with_cpu_ns: v(2),
            without_cpu_ns: v(3),
            reads: v(4),
            wrong: v(5),
            hook_reads: v(6),
            hook_first_bytes: v(7),
            hook_reads_direct: v(8),
            bytes: v(9),
        }
    }

    fn add(&mut self, b: &Batch) {
        self.with_ticks += b.with_ticks;
        self.without_ticks += b.without_ticks;
        self.with_cpu_ns += b.with_cpu_ns;
        self.without_cpu_ns += b.without_cpu_ns;
        self.reads += b.reads;
        self.wrong += b.wrong;
        self.hook_reads += b.hook_reads;
        self.hook_first_bytes += b.hook_first_bytes;
        self.hook_reads_direct += b.hook_reads_direct;
        self.bytes += b.bytes;
    }

    /// Whether a third party ran during either block, by the kernel's account of the helper's
    /// CPU time against the blocks' wall time ([`crate::cpu_time`]).
    fn disturbed(&self, timer: &platform::timer::Timer) -> bool {
        let wall = |t: u64| timer.ticks_to_ns(t as f64);
        crate::cpu_time::disturbed(wall(self.with_ticks), self.with_cpu_ns as f64)
            || crate::cpu_time::disturbed(wall(self.without_ticks), self.without_cpu_ns as f64)
    }
}

/// The reading child and what it has reported.
struct Reader {
    helper: Helper,
    hooked: bool,
    total: Batch,
}

impl Reader {
    fn start(helper: &Path, timer: &str, preload: &Path, ui: Option<&str>) -> Result<Reader, String> {
        let mut cmd = Command::new(helper);
        cmd.args([timer, "read-loop"]).env("LD_PRELOAD", preload);
        match ui {
            Some(mode) => cmd.env(UI_ENV, mode),
            None => cmd.env_remove(UI_ENV),
        };
        let mut helper = Helper::spawn(&mut cmd).map_err(|e| format!("start the child: {e}"))?;
        let line = helper
            .recv_line(Instant::now() + ANSWER_TIMEOUT)
            .map_err(|e| format!("the child did not say it was ready: {e}"))?;
        let hooked = match line.as_str() {
            "ready 1" => true,
            "ready 0" => false,
            other => return Err(format!("the child said {other:?}, not ready")),
        };
        Ok(Reader { helper, hooked, total: Batch::default() })
    }

    /// `n` reads each way, the direct block first if `direct_first`.
    fn batch(&mut self, n: u64, direct_first: bool) -> Result<Batch, String> {
        let word = n | if direct_first { DIRECT_FIRST } else { 0 };
        self.helper.send(&word.to_le_bytes()).map_err(|e| format!("ask for {n} reads each way: {e}"))?;
        let mut reply = [0u8; 80];
        let deadline = Instant::now() + ANSWER_TIMEOUT + Duration::from_micros(n.saturating_mul(200));
        self.helper.recv_exact(&mut reply, deadline).map_err(|e| format!("{n} reads each way: {e}"))?;
        let b = Batch::parse(&reply);
        self.total.add(&b);
        Ok(b)
    }

    /// Tells the child to leave and reaps it; a description of how it ended.
    fn stop(mut self) -> Result<(), String> {
        let _ = self.helper.send(&0u64.to_le_bytes());
        match self.helper.finish(EXIT_TIMEOUT) {
            s if s.success() => Ok(()),
            s => Err(s.describe()),
        }
    }
}

/// `read` through an `LD_PRELOAD` wrapper, minus `read` without it.
pub struct Preload;

impl Benchmark for Preload {
    fn id(&self) -> &'static str {
        "interpose.preload"
    }
    fn about(&self) -> &'static str {
        "intercept an event: read() of 1 byte through an LD_PRELOAD wrapper minus without it (paired)"
    }
    fn available(&self) -> Result<(), String> {
        if HELPER_BIN.is_empty() || INTERPOSE_SO.is_empty() {
            return Err("the helper or the interposer could not be built (see build warnings)".into());
        }
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        measure(ctx, None, |_, _| Vec::new())
    }
}

/// Starts the child (its wrapper handling user-interface messages by `ui`, if
/// given), samples with − without, and makes the row; `before_stop` adds checks made on the
/// child (its pid, the reads it made through the wrapper) before it is told to leave.
fn measure(
    ctx: &mut Ctx,
    ui: Option<&str>,
    before_stop: impl FnOnce(u32, u64) -> Vec<Check>,
) -> Result<Measured, NotMeasured> {
    let helper = helper(ctx)?;
    let lib = install(ctx.scratch, "libosprim_interpose.so", INTERPOSE_SO, 0o644)?;
    let lib_str = lib.to_string_lossy();
    if lib_str.contains([' ', ':']) {
        return Err(NotMeasured::Skipped(format!(
            "LD_PRELOAD cannot name {lib_str}: the scratch path contains a space or colon"
        )));
    }
    let timer = timer_arg(ctx);
    let mut child = Reader::start(&helper, timer, &lib, ui).map_err(NotMeasured::Failed)?;

    let mut without_ns: Vec<f64> = Vec::with_capacity(4096);
    let mut disturbed: Vec<bool> = Vec::with_capacity(4096);
    let (mut direct_first, mut error) = (false, None::<String>);
    let samples = {
        let c = &*ctx;
        c.iter_regions_fallible(|n| {
            let result = child.batch(n, direct_first);
            direct_first = !direct_first;
            match result {
                Ok(b) => {
                    let regions = n.div_ceil(CHUNK);
                    let o_ticks = b.without_ticks as f64 - crate::sampler::overhead_of(&c.timer, regions);
                    without_ns.push(c.timer.ticks_to_ns(o_ticks) / n as f64);
                    disturbed.push(b.disturbed(&c.timer));
                    Some(Timed::regions(b.with_ticks, regions))
                }
                Err(e) => {
                    error = Some(e);
                    None
                }
            }
        })
    };
    let (total, hooked) = (child.total, child.hooked);
    let extra = before_stop(child.helper.pid(), total.reads);
    let ended = child.stop();
    if samples.per_op_ns.is_empty() {
        // Cut off by Ctrl-C before a sample: the row says interrupted, not failed.
        if error.is_none() && samples.stop == Some(crate::sampler::StopReason::Interrupted) {
            return Ok(Measured::new(samples, Vec::new()));
        }
        return Err(NotMeasured::Failed(error.unwrap_or_else(|| "no samples".into())));
    }
    let mut m =
        paired(ctx, samples, without_ns, disturbed, Totals { total, hooked, handled: ui.is_some() }, ended, error);
    m.checks.extend(extra);
    Ok(m)
}

/// The variable that tells the interposer to handle user-interface messages, and how.
const UI_ENV: &str = "OSPRIM_INTERPOSE_UI";

/// The values of `interpose.ui`'s `hint` parameter.
pub const HINTS: [&str; 2] = ["uclamp", "nice"];

/// `read` through an `LD_PRELOAD` wrapper that handles each event as a user-interface message
/// (ends the current task and begins another with `sched_setattr`), minus `read` without it.
pub struct Ui;

impl Benchmark for Ui {
    fn id(&self) -> &'static str {
        "interpose.ui"
    }
    fn about(&self) -> &'static str {
        "intercept and handle a UI message: read() through an LD_PRELOAD wrapper that ends the task and begins \
         another (sched_setattr) minus read() without it (paired)"
    }
    fn available(&self) -> Result<(), String> {
        Preload.available()
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("hint", HINTS)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        let hint = params.get("hint").and_then(|v| v.as_str()).unwrap_or_default();
        let current = sys::sched::getattr().map_err(|e| NotMeasured::Skipped(format!("sched_getattr: {e}")))?;
        let (mode, tasks) = match hint {
            "uclamp" => {
                crate::task::probe_clamps(&current).map_err(NotMeasured::Skipped)?;
                ("uclamp".to_string(), None)
            }
            "nice" => {
                if !crate::task::fair_policy(current.policy) {
                    return Err(NotMeasured::Skipped(format!(
                        "the thread runs policy {} (real-time or deadline), which has no nice value",
                        current.policy
                    )));
                }
                let (a, b) = crate::task::nice_tasks(current.nice);
                // The child has this thread's credentials: if this thread may not take task A's
                // nice value, neither may it. Tried here and put back.
                let tried = sys::sched::setattr(&crate::task::nice_change(&current, a));
                let _ = sys::sched::setattr(&crate::task::nice_change(&current, current.nice));
                tried.map_err(|e| crate::task::nice_refusal(&e))?;
                (format!("nice {a} {b}"), Some((a, b)))
            }
            other => return Err(NotMeasured::Failed(format!("hint must be one of {HINTS:?}, not {other:?}"))),
        };
        let mut m = measure(ctx, Some(&mode), |pid, reads| vec![current_task_check(pid, reads, tasks)])?;
        m.notes.push(format!(
            "each event a user-interface message: the wrapper ends the current task and begins the other with one \
             sched_setattr of the {} ({}); RightSpeed's evaluation of the message type is not included",
            if tasks.is_some() { "nice value" } else { "utilisation clamp" },
            match tasks {
                Some((a, b)) => format!("tasks A and B at nice {a} and {b}, the nearest of the clamp: task.setattr"),
                None => "tasks A and B as task.uclamp's".to_string(),
            }
        ));
        if let Some((a, b)) = tasks {
            m.observed.insert("nice_a".into(), a.into());
            m.observed.insert("nice_b".into(), b.into());
        }
        Ok(m)
    }
}

/// After `reads` handled messages from task A, task B is current when `reads` is odd: the
/// child's hint, read from `/proc` (its nice value; for clamps, `/proc/<pid>/sched` where
/// it shows them), must be that task's.
fn current_task_check(pid: u32, reads: u64, nice_tasks: Option<(i32, i32)>) -> Check {
    let name = "the child's last hint took effect (the task current after all its messages, read from /proc)";
    let task = if reads % 2 == 1 { "B" } else { "A" };
    match nice_tasks {
        Some((a, b)) => {
            let want = if reads % 2 == 1 { b } else { a };
            match proc_nice(pid) {
                Ok(nice) => Check::new(name, format!("task {task}: nice {want}"), format!("nice {nice}"), nice == want),
                Err(e) => Check::impossible(name, e),
            }
        }
        None => {
            let want: u32 = if reads % 2 == 1 { 256 } else { 512 };
            let sched = std::fs::read_to_string(format!("/proc/{pid}/sched")).unwrap_or_default();
            let min = sched
                .lines()
                .find(|l| l.trim_start().starts_with("uclamp.min"))
                .and_then(|l| l.split(':').nth(1).and_then(|v| v.trim().parse::<u32>().ok()));
            match min {
                Some(v) => Check::new(name, format!("task {task}: uclamp.min {want}"), format!("{v}"), v == want),
                None => Check::impossible(name, format!("/proc/{pid}/sched shows no uclamp.min")),
            }
        }
    }
}

/// The nice value of process `pid` (field 19 of `/proc/<pid>/stat`).
fn proc_nice(pid: u32) -> Result<i32, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("no ')' in /proc/<pid>/stat")?;
    rest.split_whitespace()
        .nth(19 - 3)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no nice value in /proc/{pid}/stat"))
}

/// What the child did over the run.
struct Totals {
    total: Batch,
    hooked: bool,
    /// The wrapper handled user-interface messages (its sum counts handled events only).
    handled: bool,
}

/// The row: with − without per undisturbed pair, both sides as stages, and the checks.
fn paired(
    ctx: &Ctx,
    samples: Samples,
    without_ns: Vec<f64>,
    disturbed: Vec<bool>,
    t: Totals,
    ended: Result<(), String>,
    error: Option<String>,
) -> Measured {
    let kept = samples.per_op_ns.len();
    let without_ns = &without_ns[without_ns.len().saturating_sub(kept)..];
    let disturbed = &disturbed[disturbed.len().saturating_sub(kept)..];
    let (mut diffs, mut with_ns, mut without_kept, mut dropped) =
        crate::cpu_time::clean_pairs(&samples.per_op_ns, without_ns, disturbed);
    if diffs.is_empty() {
        // Every pair disturbed: keep them all, so the row has its figure, and fail the check.
        (diffs, with_ns, without_kept, _) = crate::cpu_time::clean_pairs(&samples.per_op_ns, without_ns, &[]);
        dropped = kept;
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        if v.is_empty() { f64::NAN } else { stats::median(&v) }
    };
    // The statistic the row reports: the papers' mean under the seed method (single reads,
    // whose medians sit on the same few counter steps), the median otherwise.
    let seed = ctx.cfg().method == crate::sampler::Method::Seed;
    let (d, stat) =
        if seed { (diffs.iter().sum::<f64>() / diffs.len().max(1) as f64, "mean") } else { (median(&diffs), "median") };
    // Standard error of the mean difference; the median's is about 1.25 × that.
    let se = {
        let n = diffs.len().max(2) as f64;
        let mean = diffs.iter().sum::<f64>() / n;
        let var = diffs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt() * if seed { 1.0 } else { 1.2533 }
    };
    let w = &t.total;
    let checks = vec![
        Check::new(
            if t.handled {
                "the wrapper intercepted every read made through it and handled each as a user-interface message \
                 (its counter; its sum of first bytes, which counts an event only when its sched_setattr succeeded)"
            } else {
                "the wrapper intercepted every read made through it (its counter, its sum of first bytes)"
            },
            format!("{} reads, first bytes summing to {}", w.reads, w.bytes),
            format!(
                "{} reads, {}{}",
                w.hook_reads,
                w.hook_first_bytes,
                if t.hooked { "" } else { " (no wrapper loaded)" }
            ),
            t.hooked && w.hook_reads == w.reads && w.hook_first_bytes == w.bytes && w.reads > 0,
        ),
        Check::new(
            "the direct reads (the C library's own read) were not intercepted",
            "the wrapper loaded, 0 of them counted",
            format!("{}, {} counted", if t.hooked { "wrapper loaded" } else { "no wrapper" }, w.hook_reads_direct),
            t.hooked && w.hook_reads_direct == 0,
        ),
        Check::all_ok("every read returned its event byte (both ways)", w.wrong, 2 * w.reads),
        Check::new(
            "pairs disturbed by a third party dropped (the kernel's CPU-time account of the child against each \
             block's wall time)",
            format!("at most {:.0} % of the pairs", MOST_DROPPED * 100.0),
            format!("{dropped} of {kept} dropped"),
            dropped as f64 <= MOST_DROPPED * kept as f64,
        ),
        // The wrapper adds a few nanoseconds to a read of hundreds: one round's difference can
        // come out just below zero by chance. Below zero beyond its noise, the pairing is wrong.
        Check::new(
            "intercepting costs no less than nothing",
            format!("the {stat} difference ≥ 0 within 2 standard errors"),
            format!("{d:.1} ns (standard error {se:.1} ns)"),
            d + 2.0 * se >= 0.0,
        ),
        Check::new(
            "the child left cleanly when told",
            "exit status 0",
            ended.as_ref().err().cloned().unwrap_or_else(|| "0".into()),
            ended.is_ok(),
        ),
    ];
    let mut m = Measured::new(
        // Tail and batch-size samples are of the with-side alone, not of the difference.
        Samples { per_op_ns: diffs, batch_check: Vec::new(), single_op_ns: Vec::new(), ..samples },
        checks,
    );
    m.breakdown = vec![("with".to_string(), with_ns), ("without".to_string(), without_kept)];
    m.params.insert("cpu".into(), serde_json::json!(ctx.cpu));
    m.observed.insert("pairs".into(), kept.into());
    m.observed.insert("pairs_dropped".into(), dropped.into());
    m.notes.push(
        "each sample: 1-byte reads through the LD_PRELOAD wrapper minus as many through the C library's own read, in \
         alternating blocks of one process; a pair is dropped when the kernel charged the process less CPU time than \
         either block lasted (another task, or the hypervisor, ran)"
            .into(),
    );
    if let Some(e) = error {
        m.notes.push(format!("sampling stopped early: {e}"));
    }
    m
}

/// Most pairs a round may drop before its check fails.
const MOST_DROPPED: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_ten_little_endian_words() {
        let mut r = [0u8; 80];
        for i in 0..10u64 {
            r[8 * i as usize..8 * i as usize + 8].copy_from_slice(&(i + 10).to_le_bytes());
        }
        let b = Batch::parse(&r);
        assert_eq!(
            (b.with_ticks, b.without_ticks, b.with_cpu_ns, b.without_cpu_ns, b.reads, b.wrong),
            (10, 11, 12, 13, 14, 15)
        );
        assert_eq!((b.hook_reads, b.hook_first_bytes, b.hook_reads_direct, b.bytes), (16, 17, 18, 19));
    }

    #[test]
    fn a_pair_is_disturbed_when_the_child_was_not_charged_for_a_block() {
        let timer = platform::timer::Timer::with_scale(TimerKind::MonotonicRaw, 1.0);
        let clean = Batch {
            with_ticks: 100_000,
            without_ticks: 90_000,
            with_cpu_ns: 100_400,
            without_cpu_ns: 90_300,
            ..Batch::default()
        };
        assert!(!clean.disturbed(&timer));
        assert!(Batch { without_cpu_ns: 40_000, ..clean }.disturbed(&timer), "50 µs of the direct block ran elsewhere");
        assert!(Batch { with_cpu_ns: 10_000, ..clean }.disturbed(&timer));
    }

    #[test]
    fn the_wrapper_sees_every_read_through_it_and_none_of_the_direct_ones() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.1, |ctx| match Preload.run(ctx, &Params::new()) {
            Ok(m) => {
                for c in &m.checks[..4] {
                    assert_eq!(c.ok, Some(true), "{c:?}");
                }
                assert!(m.checks[1].name.contains("direct reads"), "{:?}", m.checks[1]);
                assert!(m.checks[3].name.starts_with("pairs disturbed"), "{:?}", m.checks[3]);
                let (taken, dropped) =
                    (m.observed["pairs"].as_u64().unwrap(), m.observed["pairs_dropped"].as_u64().unwrap());
                assert_eq!(m.samples.per_op_ns.len() as u64, taken - dropped, "dropped pairs are not samples");
                assert_eq!(m.breakdown.len(), 2);
                assert_eq!(m.breakdown[0].1.len(), m.samples.per_op_ns.len());
                assert_eq!(m.breakdown[1].1.len(), m.samples.per_op_ns.len());
                for (i, d) in m.samples.per_op_ns.iter().enumerate() {
                    let (w, o) = (m.breakdown[0].1[i], m.breakdown[1].1[i]);
                    assert!((d - (w - o)).abs() < 1e-6, "sample = with − without");
                }
            }
            Err(NotMeasured::Skipped(why)) => eprintln!("skipped: {why}"),
            Err(e) => panic!("{e:?}"),
        });
    }

    #[test]
    fn the_ui_wrapper_handles_every_event_or_the_row_says_why_not() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.1, |ctx| {
            for p in Ui.variants(ctx) {
                match Ui.run(ctx, &p) {
                    Ok(m) => {
                        assert!(m.checks[0].name.contains("handled"), "{:?}", m.checks[0]);
                        for c in m.checks.iter().filter(|c| !c.name.contains("no less than nothing")) {
                            assert_ne!(c.ok, Some(false), "{p:?}: {c:?}");
                        }
                        assert_eq!(m.checks.last().map(|c| c.ok.is_some()), Some(p["hint"] == "nice"), "{p:?}");
                    }
                    Err(NotMeasured::Skipped(why)) => eprintln!("{p:?} skipped: {why}"),
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
    }

    #[test]
    fn a_nice_value_is_read_from_proc() {
        let mine = proc_nice(std::process::id()).expect("own /proc/<pid>/stat");
        let thread = sys::sched::getattr().expect("sched_getattr").nice;
        // The main thread's nice; this test's thread normally has the same.
        assert!((-20..=19).contains(&mine) && (-20..=19).contains(&thread));
        assert!(proc_nice(u32::MAX).is_err());
    }
}
