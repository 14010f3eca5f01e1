//! `interpose.preload`: what wrapping the event-receive call with an `LD_PRELOAD` library costs
//! per event — the cost of intercepting each message, as RightSpeed's message hook did.
//!
//! Seed row: RightSpeed Table 3 "intercept non-user-interface message" (the hook sees every
//! message and passes it on).
//!
//! The wrapper is osprim's interposer (`probe/osprim_interpose.rs`, built by `build.rs`): it
//! defines `read`, calls the C library's own (found with `dlsym(RTLD_NEXT, "read")`), then
//! inspects the event received — counts the call and adds the first byte to a running sum.
//! Two child processes run osprim's helper executable (`probe/osprim_helper.rs`, `read-loop`
//! mode), one started with `LD_PRELOAD=<the wrapper>` and one without; both inherit the
//! measuring thread's CPU, so the three take turns on one CPU.
//!
//! **Timing model:** in each child, the timed region is a loop of 1-byte `read`s from a pipe
//! the child owns, refilled before the clock starts (in chunks of at most 4096 bytes, each
//! chunk its own timed region; one timer overhead per region is subtracted). For every sample
//! the parent asks both children for `n` reads, alternating which goes first, so a change of
//! the machine's speed between samples touches both alike (paired, as RightSpeed measured
//! "with and without the operation and subtracted"). The row's samples are the with − without
//! differences; its breakdown keeps both sides as stages `with` and `without`. Each child
//! measures with the run's clock (the cycle counter read as osprim reads it, or
//! `CLOCK_MONOTONIC_RAW`).
//! **Validation:** in the with-child, the wrapper's counter rose by exactly the number of timed
//! reads and its sum of first bytes equals the sum of the bytes read (so every read went
//! through the wrapper, which looked at each event); the without-child has no wrapper (its
//! counters are not in its symbol table); every read in both returned its expected byte; both
//! children made the same reads and left cleanly; and the difference the row reports (its mean
//! under the seed method, its median otherwise) is positive: the wrapper cost something.

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

/// What one helper reported for a batch of reads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Batch {
    ticks: u64,
    reads: u64,
    wrong: u64,
    hook_reads: u64,
    hook_first_bytes: u64,
    bytes: u64,
}

impl Batch {
    fn parse(reply: &[u8; 48]) -> Batch {
        let v = |i: usize| u64::from_le_bytes(reply[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        Batch { ticks: v(0), reads: v(1), wrong: v(2), hook_reads: v(3), hook_first_bytes: v(4), bytes: v(5) }
    }

    fn add(&mut self, b: &Batch) {
        self.ticks += b.ticks;
        self.reads += b.reads;
        self.wrong += b.wrong;
        self.hook_reads += b.hook_reads;
        self.hook_first_bytes += b.hook_first_bytes;
        self.bytes += b.bytes;
    }
}

/// One reading child and what it has reported.
struct Reader {
    helper: Helper,
    hooked: bool,
    total: Batch,
}

impl Reader {
    fn start(helper: &Path, timer: &str, preload: Option<&Path>) -> Result<Reader, String> {
        let mut cmd = Command::new(helper);
        cmd.args([timer, "read-loop"]);
        match preload {
            Some(lib) => cmd.env("LD_PRELOAD", lib),
            None => cmd.env_remove("LD_PRELOAD"),
        };
        let which = if preload.is_some() { "with" } else { "without" };
        let mut helper = Helper::spawn(&mut cmd).map_err(|e| format!("start the {which}-child: {e}"))?;
        let line = helper
            .recv_line(Instant::now() + ANSWER_TIMEOUT)
            .map_err(|e| format!("the {which}-child did not say it was ready: {e}"))?;
        let hooked = match line.as_str() {
            "ready 1" => true,
            "ready 0" => false,
            other => return Err(format!("the {which}-child said {other:?}, not ready")),
        };
        Ok(Reader { helper, hooked, total: Batch::default() })
    }

    fn batch(&mut self, n: u64) -> Result<Batch, String> {
        self.helper.send(&n.to_le_bytes()).map_err(|e| format!("ask for {n} reads: {e}"))?;
        let mut reply = [0u8; 48];
        let deadline = Instant::now() + ANSWER_TIMEOUT + Duration::from_micros(n.saturating_mul(100));
        self.helper.recv_exact(&mut reply, deadline).map_err(|e| format!("{n} reads: {e}"))?;
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
        let helper = helper(ctx)?;
        let lib = install(ctx.scratch, "libosprim_interpose.so", INTERPOSE_SO, 0o644)?;
        let lib_str = lib.to_string_lossy();
        if lib_str.contains([' ', ':']) {
            return Err(NotMeasured::Skipped(format!(
                "LD_PRELOAD cannot name {lib_str}: the scratch path contains a space or colon"
            )));
        }
        let timer = timer_arg(ctx);
        let mut with = Reader::start(&helper, timer, Some(&lib)).map_err(NotMeasured::Failed)?;
        let mut without = Reader::start(&helper, timer, None).map_err(NotMeasured::Failed)?;

        let mut without_ns: Vec<f64> = Vec::with_capacity(4096);
        let (mut with_first, mut error) = (true, None::<String>);
        let samples = {
            let c = &*ctx;
            c.iter_regions_fallible(|n| {
                let result = if with_first {
                    with.batch(n).and_then(|w| without.batch(n).map(|o| (w, o)))
                } else {
                    without.batch(n).and_then(|o| with.batch(n).map(|w| (w, o)))
                };
                with_first = !with_first;
                match result {
                    Ok((w, o)) => {
                        let regions = n.div_ceil(CHUNK);
                        let o_ticks = o.ticks as f64 - crate::sampler::overhead_of(&c.timer, regions);
                        without_ns.push(c.timer.ticks_to_ns(o_ticks) / n as f64);
                        Some(Timed::regions(w.ticks, regions))
                    }
                    Err(e) => {
                        error = Some(e);
                        None
                    }
                }
            })
        };
        let (with_total, without_total, with_hooked, without_hooked) =
            (with.total, without.total, with.hooked, without.hooked);
        let ended = [("with", with.stop()), ("without", without.stop())];
        if samples.per_op_ns.is_empty() {
            // Cut off by Ctrl-C before a sample: the row says interrupted, not failed.
            if error.is_none() && samples.stop == Some(crate::sampler::StopReason::Interrupted) {
                return Ok(Measured::new(samples, Vec::new()));
            }
            return Err(NotMeasured::Failed(error.unwrap_or_else(|| "no samples".into())));
        }
        Ok(paired(
            ctx,
            samples,
            without_ns,
            Totals { with_total, without_total, with_hooked, without_hooked },
            &ended,
            error,
        ))
    }
}

/// What both children did over the run.
struct Totals {
    with_total: Batch,
    without_total: Batch,
    with_hooked: bool,
    without_hooked: bool,
}

/// The row: with − without per sample, both sides as stages, and the checks.
fn paired(
    ctx: &Ctx,
    samples: Samples,
    without_ns: Vec<f64>,
    t: Totals,
    ended: &[(&str, Result<(), String>)],
    error: Option<String>,
) -> Measured {
    let with_ns = samples.per_op_ns.clone();
    let without_ns = without_ns[without_ns.len().saturating_sub(with_ns.len())..].to_vec();
    let diffs: Vec<f64> = with_ns.iter().zip(&without_ns).map(|(w, o)| w - o).collect();
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
    let (w, o) = (&t.with_total, &t.without_total);
    let mut checks = vec![
        Check::new(
            "the wrapper intercepted every read of the with-child (its counter, its sum of first bytes)",
            format!("{} reads, first bytes summing to {}", w.reads, w.bytes),
            format!(
                "{} reads, {}{}",
                w.hook_reads,
                w.hook_first_bytes,
                if t.with_hooked { "" } else { " (no wrapper loaded)" }
            ),
            t.with_hooked && w.hook_reads == w.reads && w.hook_first_bytes == w.bytes && w.reads > 0,
        ),
        Check::new(
            "the without-child was not intercepted",
            "no wrapper loaded, 0 reads counted",
            format!(
                "{}, {} reads counted",
                if t.without_hooked { "wrapper loaded" } else { "no wrapper" },
                o.hook_reads
            ),
            !t.without_hooked && o.hook_reads == 0,
        ),
        Check::all_ok("every read returned its event byte (both children)", w.wrong + o.wrong, w.reads + o.reads),
        Check::new(
            "the same reads on both sides",
            format!("{} reads each", w.reads),
            format!("{} with, {} without", w.reads, o.reads),
            w.reads == o.reads,
        ),
        // The wrapper adds a few nanoseconds to a read of hundreds: one round's difference can
        // come out just below zero by chance. Below zero beyond its noise, the pairing is wrong.
        Check::new(
            "intercepting costs no less than nothing",
            format!("the {stat} difference ≥ 0 within 2 standard errors"),
            format!("{d:.1} ns (standard error {se:.1} ns)"),
            d + 2.0 * se >= 0.0,
        ),
    ];
    let failed: Vec<String> = ended.iter().filter_map(|(w, r)| r.as_ref().err().map(|e| format!("{w}: {e}"))).collect();
    checks.push(Check::new(
        "both children left cleanly when told",
        "exit status 0",
        if failed.is_empty() { "both 0".to_string() } else { failed.join("; ") },
        failed.is_empty(),
    ));
    let mut m = Measured::new(
        // Tail and batch-size samples are of the with-side alone, not of the difference.
        Samples { per_op_ns: diffs, batch_check: Vec::new(), single_op_ns: Vec::new(), ..samples },
        checks,
    );
    m.breakdown = vec![("with".to_string(), with_ns), ("without".to_string(), without_ns)];
    m.params.insert("cpu".into(), serde_json::json!(ctx.cpu));
    m.notes.push(
        "each sample: 1-byte reads through the LD_PRELOAD wrapper minus the reads without it measured beside it (two helper processes, alternating)"
            .into(),
    );
    if let Some(e) = error {
        m.notes.push(format!("sampling stopped early: {e}"));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_six_little_endian_words() {
        let mut r = [0u8; 48];
        for i in 0..6u64 {
            r[8 * i as usize..8 * i as usize + 8].copy_from_slice(&(i + 10).to_le_bytes());
        }
        let b = Batch::parse(&r);
        assert_eq!((b.ticks, b.reads, b.wrong, b.hook_reads, b.hook_first_bytes, b.bytes), (10, 11, 12, 13, 14, 15));
    }

    #[test]
    fn the_wrapper_sees_every_read_and_the_plain_child_none() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.1, |ctx| match Preload.run(ctx, &Params::new()) {
            Ok(m) => {
                for c in &m.checks[..4] {
                    assert_eq!(c.ok, Some(true), "{c:?}");
                }
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
}
