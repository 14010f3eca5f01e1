//! `syscall.io_uring_nop`: what one `IORING_OP_NOP` costs through io_uring, at submission
//! batch sizes 1, 8, 32 and 128 (parameter `batch`), beside a bare system call measured in the
//! same samples — what fio's `t/io_uring` measures in its nop mode (`-N1`), and the figure that
//! says whether batching operations into one `io_uring_enter` beats one system call each.
//!
//! **Timing model:** a sample of `n` NOPs is `⌈n / batch⌉` rounds, in one timed region, of
//! {push `batch` NOP entries (user data numbered on), `io_uring_enter(batch, batch,
//! GETEVENTS)` ([`sys::uring::Ring::nop_batch`]: a NOP completes as it is submitted, so the
//! wait finds its completions there), reap `batch` completions, checking each one's result and
//! user data (a compare and an add)}, scaled to `n` NOPs: **the row's figure is ns per NOP**.
//! Each row carries `batch` as an integer parameter, so the fixed cost of `io_uring_enter` and
//! the cost per operation can be fitted over the four rows (y = per-NOP figure × batch
//! against x = batch): the intercept is what one enter costs whatever it carries, the slope
//! what each NOP adds.
//! **Beside one system call, in the same minute:** every sample also times, in a region of
//! its own, `n` calls of getppid through the bare `syscall` instruction (`sys::raw::getppid`,
//! as `syscall.null` makes it), the two blocks' order alternating from sample to sample (so a
//! change of the machine's speed touches both alike); that block is the breakdown stage
//! `null_syscall` (ns per call), and `observed.nop_per_null_syscall` is the ratio of the two
//! medians. At batch 1 the ratio says what a ring costs where a program makes one operation
//! per enter; at 128 how far a batch brings an operation below one system call.
//! **Validation, by the kernel's account:** the ring's submissions (the sum of what
//! `io_uring_enter` says it consumed) and completions both equal the NOPs pushed; every
//! completion's result is 0 and its user data the one pushed in its place; the kernel's
//! completion-queue overflow and dropped-submission counters are 0; every getppid returned
//! the parent's pid. Where io_uring is absent (`kernel.io_uring_disabled`, a kernel without
//! it, a seccomp filter), the row is skipped with the reason ([`sys::uring`]).

use super::pingpong::scale_ticks;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use crate::sampler::{Timed, overhead_of};
use std::hint::black_box;
use sys::uring::{Ring, SetupError};

/// The submission batch sizes of the default rows.
pub const BATCHES: [u32; 4] = [1, 8, 32, 128];

/// The parameter naming the batch size.
pub const BATCH_PARAM: &str = "batch";

/// Submission entries of the ring: the largest batch.
const ENTRIES: u32 = 128;

/// `syscall.io_uring_nop`.
pub struct Nop;

impl Benchmark for Nop {
    fn id(&self) -> &'static str {
        "syscall.io_uring_nop"
    }
    fn about(&self) -> &'static str {
        "io_uring NOP: push a batch of NOPs, one io_uring_enter, reap; ns per NOP at batch 1, 8, 32, 128, beside bare getppid"
    }
    fn available(&self) -> Result<(), String> {
        if !sys::raw::AVAILABLE {
            return Err("no bare system-call path for this architecture".into());
        }
        sys::uring::unavailable().map_or(Ok(()), Err)
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        BATCHES.iter().map(|&b| Params::from([(BATCH_PARAM.to_string(), serde_json::json!(b))])).collect()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let batch = batch_of(params)?;
        let mut ring = Ring::new(ENTRIES).map_err(|e| match e {
            SetupError::Unavailable(why) => NotMeasured::Skipped(why),
            e => NotMeasured::Failed(e.to_string()),
        })?;
        let ppid = i64::from(std::os::unix::process::parent_id());
        let (mut seq, mut pushed, mut completed, mut wrong) = (1u64, 0u64, 0u64, 0u64);
        let (mut calls, mut wrong_ppid) = (0u64, 0u64);
        let mut null_ns: Vec<f64> = Vec::with_capacity(4096);
        let mut error: Option<String> = None;
        let mut nop_first = false;
        let samples = {
            let c = &*ctx;
            let overhead = c.timer.overhead_ticks();
            c.iter_regions_fallible(|n| {
                let rounds = n.div_ceil(u64::from(batch));
                let scale = n as f64 / (rounds * u64::from(batch)) as f64;
                nop_first = !nop_first;
                let mut nop_block = |seq: &mut u64| {
                    c.count_region(rounds * u64::from(batch), || nop_rounds(&c.timer, &mut ring, batch, rounds, seq))
                };
                let null_block = || null_calls(&c.timer, ppid, n);
                let (nops, (null_ticks, bad)) = if nop_first {
                    let nops = nop_block(&mut seq);
                    (nops, null_block())
                } else {
                    let null = null_block();
                    (nop_block(&mut seq), null)
                };
                calls += n;
                wrong_ppid += bad;
                null_ns.push(c.timer.ticks_to_ns(null_ticks as f64 - overhead_of(&c.timer, 1)) / n as f64);
                match nops {
                    Ok(r) => {
                        pushed += rounds * u64::from(batch);
                        completed += r.completed;
                        wrong += r.wrong;
                        Some(Timed::one(scale_ticks(r.ticks, overhead, scale)))
                    }
                    Err(e) => {
                        error = Some(format!("io_uring_enter with a batch of {batch} NOPs: {e}"));
                        None
                    }
                }
            })
        };
        if let Some(e) = error {
            return Err(NotMeasured::Failed(e));
        }
        // Warm-up calls of the routine made no sample: keep the stage of the samples only.
        null_ns.drain(..null_ns.len().saturating_sub(samples.per_op_ns.len()));
        let counts = ring.counts();
        let mut checks = vec![
            Check::new(
                "completions == submissions == NOPs pushed (the ring's own account: io_uring_enter's counts, the CQEs reaped)",
                format!("{pushed} submitted, {pushed} completed"),
                format!("{} submitted, {} completed", counts.submitted, counts.completed),
                counts.submitted == pushed && counts.completed == pushed && completed == pushed,
            ),
            Check::all_ok(
                "every completion's res is 0 and its user_data the one pushed in its place",
                wrong,
                completed,
            ),
            Check::new(
                "the kernel's CQ overflow and dropped-SQE counters stay 0",
                "0 overflowed, 0 dropped",
                format!("{} overflowed, {} dropped", counts.cq_overflow, counts.sq_dropped),
                counts.cq_overflow == 0 && counts.sq_dropped == 0,
            ),
            Check::all_ok("every getppid of the null_syscall block returned the parent's pid", wrong_ppid, calls),
        ];
        let nop = quick_median(&samples);
        let null = median(&null_ns);
        if let Some(c) = checks.last_mut()
            && samples.per_op_ns.is_empty()
        {
            *c = Check::impossible(c.name.clone(), "no sample taken");
        }
        let mut m = Measured::new(samples, checks);
        m.params.insert(BATCH_PARAM.into(), serde_json::json!(batch));
        m.breakdown = vec![("null_syscall".to_string(), null_ns)];
        if nop.is_finite() && null.is_finite() && null > 0.0 {
            m.observed.insert("nop_per_null_syscall".into(), serde_json::json!((nop / null * 1000.0).round() / 1000.0));
        }
        m.observed.insert(
            "ring".into(),
            serde_json::json!({
                "nops": pushed,
                "io_uring_enter_calls": pushed / u64::from(batch),
                "submitted": counts.submitted,
                "completed": counts.completed,
                "cq_overflow": counts.cq_overflow,
                "sq_dropped": counts.sq_dropped,
            }),
        );
        m.notes.push(format!(
            "each sample: NOPs in rounds of {{push {batch}, one io_uring_enter submitting {batch} and waiting for {batch}, \
             reap {batch}}}, ns per NOP; beside it in the same sample, as many bare getppid calls (stage null_syscall, \
             ns per call), the two blocks' order alternating; observed.nop_per_null_syscall is the ratio of their medians"
        ));
        Ok(m)
    }
}

/// The batch size of `params` (one of any size the ring holds, not only [`BATCHES`]).
fn batch_of(params: &Params) -> Result<u32, NotMeasured> {
    match params.get(BATCH_PARAM) {
        None => Ok(BATCHES[0]),
        Some(v) => match v.as_u64() {
            Some(b) if (1..=u64::from(ENTRIES)).contains(&b) => Ok(b as u32),
            _ => Err(NotMeasured::Failed(format!("{BATCH_PARAM}={v}: a batch is 1 to {ENTRIES} NOPs"))),
        },
    }
}

/// What the NOP block of one sample did.
struct Rounds {
    ticks: u64,
    completed: u64,
    wrong: u64,
}

/// `rounds` rounds of a batch of `batch` NOPs in one timed region.
#[inline(never)]
fn nop_rounds(
    timer: &platform::timer::Timer,
    ring: &mut Ring,
    batch: u32,
    rounds: u64,
    seq: &mut u64,
) -> std::io::Result<Rounds> {
    let (mut completed, mut wrong) = (0u64, 0u64);
    let t0 = timer.start();
    for _ in 0..rounds {
        let b = ring.nop_batch(batch, *seq)?;
        *seq += u64::from(batch);
        completed += u64::from(b.completed);
        wrong += u64::from(b.wrong);
    }
    let t1 = timer.stop();
    Ok(Rounds { ticks: t1.wrapping_sub(t0), completed, wrong })
}

/// `n` bare getppid calls in one timed region; the ticks, and how many did not return `ppid`.
#[inline(never)]
fn null_calls(timer: &platform::timer::Timer, ppid: i64, n: u64) -> (u64, u64) {
    let mut wrong = 0u64;
    let t0 = timer.start();
    for _ in 0..n {
        wrong += u64::from(black_box(sys::raw::getppid()) != ppid);
    }
    let t1 = timer.stop();
    (t1.wrapping_sub(t0), wrong)
}

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    stats::median(&v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn every_batch_size_is_a_row_with_an_integer_batch() {
        with_ctx(0.02, |ctx| {
            let v = Nop.variants(ctx);
            let batches: Vec<u64> = v.iter().map(|p| p[BATCH_PARAM].as_u64().expect("an integer")).collect();
            assert_eq!(batches, [1, 8, 32, 128]);
        });
        assert!(batch_of(&Params::from([(BATCH_PARAM.into(), serde_json::json!(0))])).is_err());
        assert!(batch_of(&Params::from([(BATCH_PARAM.into(), serde_json::json!(129))])).is_err());
        assert!(batch_of(&Params::from([(BATCH_PARAM.into(), serde_json::json!("8"))])).is_err());
        assert_eq!(batch_of(&Params::new()).ok(), Some(1));
    }

    #[test]
    fn nops_are_counted_by_the_ring_and_sit_beside_a_null_call() {
        if !sys::raw::AVAILABLE {
            return;
        }
        with_ctx(0.05, |ctx| {
            for batch in [1u64, 32] {
                let p = Params::from([(BATCH_PARAM.into(), serde_json::json!(batch))]);
                let m = match Nop.run(ctx, &p) {
                    Err(NotMeasured::Skipped(why)) => {
                        eprintln!("skipped: {why}");
                        return;
                    }
                    r => r.expect("measured"),
                };
                assert!(!m.samples.per_op_ns.is_empty());
                assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
                assert_eq!(m.params[BATCH_PARAM], serde_json::json!(batch));
                let (name, stage) = &m.breakdown[0];
                assert_eq!((name.as_str(), stage.len()), ("null_syscall", m.samples.per_op_ns.len()));
                assert!(m.observed["nop_per_null_syscall"].as_f64().is_some_and(|r| r > 0.0));
                let ring = &m.observed["ring"];
                assert_eq!(ring["submitted"], ring["completed"]);
                assert_eq!(ring["nops"], ring["completed"]);
            }
        });
    }
}
