//! The harness behind the interposed null calls (`interpose.seccomp`, `interpose.ptrace`,
//! `interpose.sud`): what an interposer in front of every system call costs per call, as a
//! paired with − without difference.
//!
//! **Design.** The measuring thread forks two children, which inherit its CPU (so all three
//! share one CPU) and its memory layout (a fork copies it, so the two sides run the same code
//! at the same addresses). The *plain* child makes the call as it is; the *interposed* child
//! first installs the interposer ([`Spec::install`]: a seccomp filter, a tracer, a dispatch
//! region) and then makes the same call. A filter cannot be removed once installed, and a
//! tracer changes the process for good, so the two sides are two processes rather than two
//! halves of one; they take turns block by block, the order alternating from one pair to the
//! next, so a change of the machine's speed touches both sides of a pair alike (paired, as
//! RightSpeed measured "with and without the operation and subtracted"). Commands and answers
//! go through shared memory and a futex (no pipe), so the interposer sees few calls outside
//! the timed blocks.
//!
//! **Timing model:** in each child, a block is `n` calls of [`Spec::call`] between two reads of
//! the run's clock (one timed region; its overhead is subtracted on both sides); each call's
//! result is compared with the side's expected answer outside nothing but a register compare.
//! Around the block the child reads the CPU time the kernel charged it (and its companion, a
//! tracer or supervisor that runs on the same CPU on its behalf, when it has one). A sample is
//! `with − without` per call; both sides are kept as breakdown stages `with` and `without`.
//! **Disturbed pairs are dropped** by the kernel's account ([`crate::cpu_time`]): a block whose
//! wall time exceeds what the kernel charged the child and its companion shared the CPU with a
//! third party, and its pair is dropped (`observed`: `pairs`, `pairs_dropped`).
//! **Validation:** every call of each side returned that side's expected answer (the parent's
//! pid, or the interposer's error); the interposer said it was installed (and the caller adds
//! its own checks by the kernel's account: `/proc/<pid>/status`, the tracer's stop count);
//! at most half the pairs disturbed; both children left cleanly when told.
//!
//! **Nothing outlives the run:** both children die with the measuring thread
//! (`PR_SET_PDEATHSIG`, [`sys::process::fork_peer`]), are told to leave after sampling and are
//! killed and reaped at a deadline otherwise (and on drop); whatever the interposed child
//! installed on itself dies with it.

use super::{Check, Ctx, Measured, NotMeasured};
use crate::cpu_time::{self, Task};
use crate::sampler::{Samples, StopReason, Timed, overhead_of};
use std::hint::black_box;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::{Duration, Instant};
use sys::futex;
use sys::process::Child;
use sys::shm::SharedMem;

/// How long a child may take to install its interposer, or to answer beyond its calls.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest one interposed call may take before the block is given up (a traced call's
/// stop is a few microseconds; a supervisor's round trip tens).
const PER_CALL_BOUND: Duration = Duration::from_micros(500);
/// How long a child may take to leave after being told to.
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a waiting side looks around (the other side ended, the deadline passed).
const LOOK_EVERY: Duration = Duration::from_millis(20);
/// Most pairs a round may drop before its check fails.
const MOST_DROPPED: f64 = 0.5;

/// The command that tells a child to leave.
const STOP: u64 = u64::MAX;

/// The shared slots of one side.
#[derive(Clone, Copy)]
struct Slots(usize);

impl Slots {
    const COUNT: usize = 9;
    /// Command sequence (a futex word, u32), written by the parent.
    fn cmd(self) -> usize {
        self.0
    }
    /// Calls asked for (or [`STOP`]).
    fn n(self) -> usize {
        self.0 + 1
    }
    /// The last command done (a futex word, u32), written by the child.
    fn done(self) -> usize {
        self.0 + 2
    }
    fn ticks(self) -> usize {
        self.0 + 3
    }
    fn cpu_ns(self) -> usize {
        self.0 + 4
    }
    fn wrong(self) -> usize {
        self.0 + 5
    }
    /// 0 while installing, 1 installed, 2 + code when the install failed.
    fn state(self) -> usize {
        self.0 + 6
    }
    /// The companion's pid (0: none).
    fn companion(self) -> usize {
        self.0 + 7
    }
    /// The calls made in blocks so far.
    fn calls(self) -> usize {
        self.0 + 8
    }
}

/// What a side's calls must return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The call's own answer: the parent's pid for getppid (both children are the measuring
    /// process's children, so both sides get the same).
    Answer,
    /// The error the interposer answers with, as the raw `-errno` the instruction returns.
    Errno(i32),
    /// This value, on both sides: a call whose own answer is not the parent's pid (read back
    /// from one plain call before the children start).
    Value(i64),
}

impl Expect {
    fn value(self, parent: i64) -> i64 {
        match self {
            Expect::Answer => parent,
            Expect::Errno(e) => -i64::from(e),
            Expect::Value(v) => v,
        }
    }

    fn describe(self) -> String {
        match self {
            Expect::Answer => "the parent's pid".into(),
            Expect::Errno(e) => format!("error {} ({})", e, std::io::Error::from_raw_os_error(e)),
            Expect::Value(v) => format!("{v}, as a plain call does"),
        }
    }

    /// What the plain side's calls return when the interposed side's return this.
    fn plain(self) -> Expect {
        match self {
            Expect::Value(v) => Expect::Value(v),
            Expect::Answer | Expect::Errno(_) => Expect::Answer,
        }
    }
}

/// What the interposed child does to itself before its first block.
pub type Install = Box<dyn FnOnce() -> Result<Option<Task>, i32>>;

/// Turns the interposer on (`true`) or off (`false`) around each of the interposed child's
/// blocks, in that child.
pub type Arm = Box<dyn FnMut(bool)>;

/// One interposer, as the harness runs it.
pub struct Spec {
    /// Runs in the interposed child after the fork, before its first block: installs the
    /// interposer on the child itself; `Ok(Some(task))` names a companion (a tracer process, a
    /// supervisor thread) that runs on the child's CPU on its behalf, whose CPU time counts with
    /// the calling thread's; `Err(code)` is a failure code the caller explains ([`Spec::explain`]).
    pub install: Install,
    /// The call both sides time (inlined into each side's loop).
    pub call: fn() -> i64,
    /// What the interposed side's calls return.
    pub expect: Expect,
    /// Called in the interposed child right before (`true`) and after (`false`) each timed
    /// block: turns an interposer that would also catch the harness's own calls on for the
    /// block only (syscall user dispatch's selector: no system call), inside the CPU-time reads
    /// around the block.
    pub arm: Option<Arm>,
    /// Like [`Spec::arm`], outside the CPU-time reads: attaches an interposer for the block and
    /// detaches it after (an eBPF program, which would otherwise see every process), work that
    /// must not be charged to the block when the harness compares its wall time with its CPU
    /// time.
    pub attach: Option<Arm>,
    /// Turns an install failure code into the row's reason.
    pub explain: fn(i32) -> NotMeasured,
}

/// A block's report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Block {
    ticks: u64,
    cpu_ns: u64,
    wrong: u64,
}

/// The two children and what they did.
pub struct Pair {
    shared: std::sync::Arc<SharedMem>,
    plain: Child,
    interposed: Child,
    seq: u32,
    /// The interposed side's companion, if any.
    pub companion: Option<Task>,
}

const PLAIN: Slots = Slots(0);
const INTERPOSED: Slots = Slots(Slots::COUNT);

impl Pair {
    /// Forks both children and waits until the interposed one has installed its interposer.
    pub fn start(ctx: &Ctx, spec: Spec) -> Result<Pair, NotMeasured> {
        let shared = std::sync::Arc::new(
            SharedMem::new(2 * Slots::COUNT).map_err(|e| NotMeasured::Failed(format!("shared memory: {e}")))?,
        );
        let timer = ctx.timer;
        let parent = i64::from(std::process::id());
        let fork = |slots: Slots, install: Option<Install>, expect: Expect, arm: Option<Arm>, attach: Option<Arm>| {
            let shm = shared.clone();
            let call = spec.call;
            sys::process::fork_peer(move || {
                let companion = match install.map(|f| f()).unwrap_or(Ok(None)) {
                    Ok(c) => c,
                    Err(code) => {
                        shm.u64(slots.state()).store(2 + code as u64, Release);
                        let _ = futex::wake(shm.u32(slots.done()), 1);
                        return 0;
                    }
                };
                shm.u64(slots.companion()).store(companion.map_or(0, encode), Release);
                shm.u64(slots.state()).store(1, Release);
                let _ = futex::wake(shm.u32(slots.done()), 1);
                serve(&shm, slots, &timer, call, expect.value(parent), [attach, arm], companion)
            })
            .map_err(|e| NotMeasured::Failed(format!("fork: {e}")))
        };
        let plain = fork(PLAIN, None, spec.expect.plain(), None, None)?;
        let interposed = fork(INTERPOSED, Some(spec.install), spec.expect, spec.arm, spec.attach)?;
        let mut pair = Pair { shared, plain, interposed, seq: 0, companion: None };
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        for (slots, what) in [(PLAIN, "plain"), (INTERPOSED, "interposed")] {
            loop {
                match pair.shared.u64(slots.state()).load(Acquire) {
                    0 => {}
                    1 => break,
                    code => return Err((spec.explain)((code - 2) as i32)),
                }
                let child = if slots.0 == 0 { &pair.plain } else { &pair.interposed };
                if child.has_ended() {
                    return Err(NotMeasured::Failed(format!("the {what} child ended before it was ready")));
                }
                if Instant::now() >= deadline {
                    return Err(NotMeasured::Failed(format!(
                        "the {what} child was not ready within {ANSWER_TIMEOUT:?}"
                    )));
                }
                let _ = futex::wait(pair.shared.u32(slots.done()), 0, &futex::timeout(LOOK_EVERY));
            }
        }
        pair.companion = decode(pair.shared.u64(INTERPOSED.companion()).load(Acquire));
        Ok(pair)
    }

    /// The interposed child's pid (for the caller's checks by the kernel's account).
    pub fn interposed_pid(&self) -> i32 {
        self.interposed.pid()
    }

    /// The calls the interposed side has made in blocks so far.
    pub fn interposed_calls(&self) -> u64 {
        self.shared.u64(INTERPOSED.calls()).load(Acquire)
    }

    /// Asks one side for `n` calls and waits for its report.
    fn block(&mut self, slots: Slots, n: u64) -> Result<Block, String> {
        self.seq = self.seq.wrapping_add(1).max(1);
        let sh = &self.shared;
        sh.u64(slots.n()).store(n, Release);
        sh.u32(slots.cmd()).store(self.seq, Release);
        futex::wake(sh.u32(slots.cmd()), 1).map_err(|e| format!("wake the child: {e}"))?;
        if n == STOP {
            return Ok(Block::default());
        }
        let deadline = Instant::now() + ANSWER_TIMEOUT + PER_CALL_BOUND * n.min(u32::MAX as u64) as u32;
        let child = if slots.0 == 0 { &self.plain } else { &self.interposed };
        loop {
            let done = sh.u32(slots.done()).load(Acquire);
            if done == self.seq {
                return Ok(Block {
                    ticks: sh.u64(slots.ticks()).load(Acquire),
                    cpu_ns: sh.u64(slots.cpu_ns()).load(Acquire),
                    wrong: sh.u64(slots.wrong()).load(Acquire),
                });
            }
            if child.has_ended() {
                return Err("the child ended in the middle of a block".into());
            }
            if Instant::now() >= deadline {
                return Err(format!("{n} calls took longer than {:?}", deadline.elapsed()));
            }
            let _ = futex::wait(sh.u32(slots.done()), done, &futex::timeout(LOOK_EVERY));
        }
    }

    /// Tells both children to leave and reaps them; how each ended.
    fn stop(mut self) -> (Result<(), String>, Result<(), String>) {
        let _ = self.block(PLAIN, STOP);
        let _ = self.block(INTERPOSED, STOP);
        let ended = |c: &mut Child| match c.finish(EXIT_TIMEOUT) {
            s if s.success() => Ok(()),
            s => Err(s.describe()),
        };
        (ended(&mut self.plain), ended(&mut self.interposed))
    }
}

/// A companion in a shared slot: a process's pid, or a thread's id with bit 32 set (0: none).
fn encode(task: Task) -> u64 {
    match task {
        Task::Process(pid) => pid as u64,
        Task::Thread(tid) => (1 << 32) | tid as u64,
        Task::Me => 0,
    }
}

fn decode(slot: u64) -> Option<Task> {
    match (slot >> 32, slot as u32 as i32) {
        (_, 0) => None,
        (0, pid) => Some(Task::Process(pid)),
        (_, tid) => Some(Task::Thread(tid)),
    }
}

/// A child's loop: waits for a command, runs its block, reports; returns its exit code.
fn serve(
    shm: &SharedMem,
    slots: Slots,
    timer: &platform::timer::Timer,
    call: fn() -> i64,
    expected: i64,
    [mut attach, mut arm]: [Option<Arm>; 2],
    companion: Option<Task>,
) -> i32 {
    let mut last = 0u32;
    let cpu = || {
        let mut tasks = vec![Task::Me];
        tasks.extend(companion);
        cpu_time::sum_ns(&tasks).unwrap_or(0)
    };
    loop {
        let cmd = shm.u32(slots.cmd()).load(Acquire);
        if cmd == last {
            let _ = futex::wait(shm.u32(slots.cmd()), cmd, &futex::timeout(LOOK_EVERY));
            continue;
        }
        last = cmd;
        let n = shm.u64(slots.n()).load(Acquire);
        if n == STOP {
            return 0;
        }
        if let Some(attach) = attach.as_mut() {
            attach(true);
        }
        let cpu0 = cpu();
        if let Some(arm) = arm.as_mut() {
            arm(true);
        }
        let (ticks, wrong) = timed_block(timer, call, expected, n);
        if let Some(arm) = arm.as_mut() {
            arm(false);
        }
        let cpu1 = cpu();
        if let Some(attach) = attach.as_mut() {
            attach(false);
        }
        shm.u64(slots.ticks()).store(ticks, Release);
        shm.u64(slots.cpu_ns()).store(cpu1.saturating_sub(cpu0), Release);
        shm.u64(slots.wrong()).store(wrong, Release);
        shm.u64(slots.calls()).fetch_add(n, Release);
        shm.u32(slots.done()).store(cmd, Release);
        let _ = futex::wake(shm.u32(slots.done()), 1);
    }
}

/// `n` calls in one timed region; the ticks, and how many calls did not answer `expected`.
#[inline(never)]
fn timed_block(timer: &platform::timer::Timer, call: fn() -> i64, expected: i64, n: u64) -> (u64, u64) {
    let mut wrong = 0u64;
    let t0 = timer.start();
    for _ in 0..n {
        wrong += u64::from(black_box(call()) != expected);
    }
    let t1 = timer.stop();
    (t1.wrapping_sub(t0), wrong)
}

/// What the caller adds to the row: checks made on the interposed child while it is alive
/// (its pid and the calls it made in blocks).
pub type Before = Box<dyn FnOnce(&Pair) -> Vec<Check>>;

/// Starts the pair, samples with − without, and makes the row; `before_stop` adds the caller's
/// checks on the interposed child before it is told to leave.
pub fn measure(ctx: &mut Ctx, spec: Spec, what: &str, before_stop: Before) -> Result<Measured, NotMeasured> {
    let expect = spec.expect;
    let mut pair = Pair::start(ctx, spec)?;
    let mut without_ns: Vec<f64> = Vec::with_capacity(4096);
    let mut disturbed: Vec<bool> = Vec::with_capacity(4096);
    let (mut plain_first, mut error, mut wrong) = (false, None::<String>, [0u64; 2]);
    let mut calls = 0u64;
    let samples = {
        let c = &*ctx;
        let pair = &mut pair;
        c.iter_regions_fallible(|n| {
            let sides = if plain_first { [PLAIN, INTERPOSED] } else { [INTERPOSED, PLAIN] };
            plain_first = !plain_first;
            let mut got = [Block::default(); 2];
            for s in sides {
                match pair.block(s, n) {
                    Ok(b) => got[usize::from(s.0 != 0)] = b,
                    Err(e) => {
                        error = Some(e);
                        return None;
                    }
                }
            }
            let [plain, with] = got;
            wrong[0] += plain.wrong;
            wrong[1] += with.wrong;
            calls += n;
            let wall = |t: u64| c.timer.ticks_to_ns(t as f64);
            let o = overhead_of(&c.timer, 1);
            without_ns.push(c.timer.ticks_to_ns(plain.ticks as f64 - o) / n as f64);
            disturbed.push(
                cpu_time::disturbed(wall(plain.ticks), plain.cpu_ns as f64)
                    || cpu_time::disturbed(wall(with.ticks), with.cpu_ns as f64),
            );
            Some(Timed::one(with.ticks))
        })
    };
    let mut extra = before_stop(&pair);
    let companion = pair.companion;
    let (plain_ended, interposed_ended) = pair.stop();
    if samples.per_op_ns.is_empty() {
        if error.is_none() && samples.stop == Some(StopReason::Interrupted) {
            return Ok(Measured::new(samples, Vec::new()));
        }
        return Err(NotMeasured::Failed(error.unwrap_or_else(|| "no samples".into())));
    }
    let mut checks = vec![
        Check::all_ok(format!("every plain call returned {}", expect.plain().describe()), wrong[0], calls),
        Check::all_ok(format!("every interposed call returned {}", expect.describe()), wrong[1], calls),
    ];
    checks.append(&mut extra);
    // An interposer that answers in place of the call (an error) skips the call's own work, so
    // its difference may honestly fall below zero: the sign is not judged then.
    let answers_instead = matches!(expect, Expect::Errno(_));
    let mut m = paired_row(ctx, samples, &without_ns, &disturbed, checks, !answers_instead);
    for (side, ended) in [("plain", plain_ended), ("interposed", interposed_ended)] {
        m.checks.push(Check::new(
            format!("the {side} child left cleanly when told"),
            "exit status 0",
            ended.as_ref().err().cloned().unwrap_or_else(|| "0".into()),
            ended.is_ok(),
        ));
    }
    m.notes.push(format!(
        "each sample: a block of calls {what} minus as many plain calls in a twin process forked alike, the two \
         alternating on one CPU{}; a pair is dropped when the kernel charged the processes less CPU time than either \
         block lasted (another task, or the hypervisor, ran)",
        if companion.is_some() { " (the companion's CPU time counted with the interposed side's)" } else { "" }
    ));
    if let Some(e) = error {
        m.notes.push(format!("sampling stopped early: {e}"));
    }
    Ok(m)
}

/// The row of a paired benchmark: with − without per undisturbed pair (`samples` holds the
/// with side per operation, `without_ns` the other, `disturbed` which pairs a third party
/// touched), both sides as stages, and the checks plus its own: at most half the pairs
/// dropped, and (with `judge_sign`) the reported difference not below zero beyond its noise.
pub fn paired_row(
    ctx: &Ctx,
    samples: Samples,
    without_ns: &[f64],
    disturbed: &[bool],
    mut checks: Vec<Check>,
    judge_sign: bool,
) -> Measured {
    let kept = samples.per_op_ns.len();
    let without_ns = &without_ns[without_ns.len().saturating_sub(kept)..];
    let disturbed = &disturbed[disturbed.len().saturating_sub(kept)..];
    let (mut diffs, mut with_ns, mut without_kept, mut dropped) =
        cpu_time::clean_pairs(&samples.per_op_ns, without_ns, disturbed);
    if diffs.is_empty() {
        // Every pair disturbed: keep them all, so the row has its figure, and fail the check.
        (diffs, with_ns, without_kept, _) = cpu_time::clean_pairs(&samples.per_op_ns, without_ns, &[]);
        dropped = kept;
    }
    // The statistic the row reports: the papers' mean under the seed method, the median
    // otherwise.
    let seed = ctx.cfg().method == crate::sampler::Method::Seed;
    let (d, stat) = if seed { (mean(&diffs), "mean") } else { (median(&diffs), "median") };
    // Standard error of the mean difference; the median's is about 1.25 × that.
    let se = {
        let n = diffs.len().max(2) as f64;
        let m = mean(&diffs);
        let var = diffs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt() * if seed { 1.0 } else { 1.2533 }
    };
    checks.push(Check::new(
        "pairs disturbed by a third party dropped (the kernel's CPU-time account against each block's wall time)",
        format!("at most {:.0} % of the pairs", MOST_DROPPED * 100.0),
        format!("{dropped} of {kept} dropped"),
        dropped as f64 <= MOST_DROPPED * kept as f64,
    ));
    if judge_sign {
        checks.push(Check::new(
            "interposing costs no less than nothing",
            format!("the {stat} difference ≥ 0 within 2 standard errors"),
            format!("{d:.1} ns (standard error {se:.1} ns)"),
            d + 2.0 * se >= 0.0,
        ));
    }
    let mut m = Measured::new(
        // Tail and batch-size samples are of the with side alone, not of the difference.
        Samples { per_op_ns: diffs, batch_check: Vec::new(), single_op_ns: Vec::new(), ..samples },
        checks,
    );
    m.breakdown = vec![("with".to_string(), with_ns), ("without".to_string(), without_kept)];
    m.params.insert("cpu".into(), serde_json::json!(ctx.cpu));
    m.observed.insert("pairs".into(), kept.into());
    m.observed.insert("pairs_dropped".into(), dropped.into());
    m
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() { f64::NAN } else { stats::median(&v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No interposer at all: both sides are plain, so the harness itself is tested.
    fn nothing() -> Spec {
        Spec {
            install: Box::new(|| Ok(None)),
            call: sys::raw::getppid,
            expect: Expect::Answer,
            arm: None,
            attach: None,
            explain: |code| NotMeasured::Failed(format!("code {code}")),
        }
    }

    #[test]
    fn two_plain_twins_differ_by_noise_and_every_call_answers() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.1, |ctx| {
            let m = measure(ctx, nothing(), "through nothing", Box::new(|_| Vec::new())).expect("measured");
            for c in &m.checks {
                if !c.name.starts_with("pairs disturbed") && !c.name.contains("no less than nothing") {
                    assert_eq!(c.ok, Some(true), "{c:?}");
                }
            }
            assert_eq!(m.breakdown.len(), 2);
            for (i, d) in m.samples.per_op_ns.iter().enumerate() {
                let (w, o) = (m.breakdown[0].1[i], m.breakdown[1].1[i]);
                assert!((d - (w - o)).abs() < 1e-6, "sample = with − without");
            }
            let pairs = m.observed["pairs"].as_u64().unwrap();
            let dropped = m.observed["pairs_dropped"].as_u64().unwrap();
            assert!(pairs >= dropped);
        });
    }

    #[test]
    fn an_install_failure_is_the_callers_reason() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.05, |ctx| {
            let spec = Spec {
                install: Box::new(|| Err(7)),
                explain: |code| NotMeasured::Skipped(format!("refused with {code}")),
                ..nothing()
            };
            match measure(ctx, spec, "x", Box::new(|_| Vec::new())) {
                Err(NotMeasured::Skipped(why)) => assert_eq!(why, "refused with 7"),
                other => panic!("{other:?}"),
            }
        });
    }

    #[test]
    fn a_wrong_answer_is_counted() {
        let _serial = super::super::testing::serial();
        super::super::testing::with_ctx(0.05, |ctx| {
            let spec = Spec { expect: Expect::Errno(libc::EPERM), ..nothing() };
            let m = measure(ctx, spec, "x", Box::new(|_| Vec::new())).expect("measured");
            let c = m.checks.iter().find(|c| c.name.starts_with("every interposed call")).unwrap();
            assert_eq!(c.ok, Some(false), "{c:?}");
        });
    }
}
