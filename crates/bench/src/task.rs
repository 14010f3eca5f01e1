//! `task.uclamp` and its nearest `task.setattr`: begin and end a task by changing the calling thread's utilisation clamp — the
//! per-task performance hint the kernel's frequency governor acts on, as RightSpeed's task
//! calls told its driver what speed a task needed.
//!
//! Seed rows: RightSpeed Table 3 "begin a task", "end a task", "end one task and begin
//! another", each with its "kernel-mode component".
//!
//! Each operation is one `sched_setattr(0, attr, 0)` ([`sys::sched`]) with
//! `SCHED_FLAG_KEEP_ALL | SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX`, so only the
//! clamp changes. Parameter `op`:
//! - `begin`: from the default (no clamp requested) to task A's clamp (`util_min` 512,
//!   `util_max` 1024: "run this fast");
//! - `end`: from task A's clamp back to the default (both values -1: reset);
//! - `end_begin`: from task A's clamp to task B's (256, 768), one call.
//!
//! Before each timed call an untimed call sets the state it starts from (the default, or task
//! A's clamp), so every timed call really changes the clamp.
//!
//! Parameter `pair` — two separately timed measurements, so that RightSpeed's "end task and
//! begin another" (its list of operations) and "end one task and begin another, total" (its
//! breakdown, beside the kernel-mode component) each have a figure of their own:
//! - `pair=null` (every `op`): the call paired with a null system call, for the kernel-mode
//!   part.
//!   **Timing model** ([`Ctx::iter_regions`]): per operation, three stamps of the run's timer: a
//!   bare null system call (`getppid` through the `syscall` instruction, as `syscall.null`)
//!   between the first two, the `sched_setattr` (also through the bare instruction) between the
//!   last two — paired, side by side in the same loop, so a change of the machine moves both.
//!   The row's time is the `sched_setattr` alone (one timer overhead subtracted). Stages:
//!   `entry` = the null call (kernel entry and exit) and `kernel` = the call minus the null call;
//!   `kernel` + `entry` = the total, sample by sample. The kernel-mode part is **estimated**, not
//!   timed inside the call (the kernel's own account of it would need its `sys_enter`/`sys_exit`
//!   tracepoints): `observed.kernel_timing` = `"estimated"`, with a note saying how; a sample's
//!   estimate may be below 0 (a null call slower than the call beside it), but the row is
//!   flagged when the estimate's mean is not above 0.
//! - `pair=none` (`op=end_begin`): the same call timed alone, two stamps around it and no null
//!   call beside it; no stages.
//!
//! **Validation:** `sched_getattr` reads the clamp back after every untimed and every timed
//! call, and finds what was set (the default reads back as 0–1024); every call succeeded; with
//! `pair=null`, the kernel-mode estimate's mean is above 0.
//! The thread's original attributes are put back at the end, also on every error path.
//!
//! Kernels built without `CONFIG_UCLAMP_TASK` refuse the clamp flags (`EOPNOTSUPP`; found at
//! the start of `run` by a probe that changes nothing, and again by the first change it makes);
//! each `op`'s row is then skipped with that reason and the run goes on.
//!
//! `task.setattr` is its nearest where clamps are missing: the same `sched_setattr` call on the
//! same path (permission checks, the run-queue lock, dequeue, change, enqueue), changing the
//! thread's **nice value** instead of its clamp — the other per-task hint of how much CPU a
//! task should get (its fair-share weight), which any kernel has. Same `op`s: `begin` from the
//! thread's own nice n₀ to task A's (n₀ − 5: "run this one first"), `end` from A back to n₀,
//! `end_begin` from A to task B's (n₀ − 2); `flags` = `SCHED_FLAG_KEEP_POLICY` (the policy
//! stays; the thread's reset-on-fork flag is kept). Near the bottom of the scale (n₀ < −15)
//! the values go up instead (n₀ + 5, n₀ + 2). Same timing model, stages (`kernel`, `entry`) and
//! checks, with `sched_getattr` reading back the nice value; a lower nice needs
//! `CAP_SYS_NICE` or `RLIMIT_NICE`, without which the row is skipped saying so, and a thread
//! under a real-time or deadline policy (no nice) is skipped too. It is not the clamp: a nice
//! value weighs the task against others on its CPU; the clamp asks the frequency governor for
//! a speed. The kernel's work differs in what is recomputed (load weight vs clamp buckets).

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use platform::timer::Timer;
use std::hint::black_box;
use sys::sched::{self, DEFAULT_CLAMP, SchedAttr};

/// The skip reason on kernels without per-task clamps.
pub const NO_UCLAMP: &str = "the kernel has no per-task utilisation clamp (CONFIG_UCLAMP_TASK)";

/// The values of the `op` parameter.
pub const OPS: [&str; 3] = ["begin", "end", "end_begin"];

/// The `pair` parameter: the call paired with a null call (for the kernel-mode estimate), or
/// timed alone.
pub const PAIRED: &str = "null";
/// See [`PAIRED`].
pub const ALONE: &str = "none";

/// The note of a paired row on its kernel-mode part.
pub const KERNEL_ESTIMATED: &str = "kernel-mode part estimated: the call minus a null system call timed beside it in \
    the same samples (kernel = sched_setattr − a bare getppid through the syscall instruction, stamped one after the \
    other in each operation; entry = that null call); not timed inside the call";

/// `op` × `pair`: every op paired with a null call, and end-and-begin alone as well.
fn variants() -> Vec<Params> {
    let v = |op: &str, pair: &str| {
        Params::from([("op".to_string(), serde_json::json!(op)), ("pair".to_string(), serde_json::json!(pair))])
    };
    let mut out: Vec<Params> = OPS.iter().map(|op| v(op, PAIRED)).collect();
    out.push(v("end_begin", ALONE));
    out
}

/// Whether the call is paired with a null call (`pair`, default `null`).
fn paired(params: &Params) -> Result<bool, NotMeasured> {
    match params.get("pair").and_then(|v| v.as_str()) {
        None | Some(PAIRED) => Ok(true),
        Some(ALONE) => Ok(false),
        Some(other) => Err(NotMeasured::Failed(format!("pair must be {PAIRED} or {ALONE}, not {other}"))),
    }
}

/// Task A's clamp: (`util_min`, `util_max`).
const TASK_A: (u32, u32) = (512, 1024);
/// Task B's clamp.
const TASK_B: (u32, u32) = (256, 768);

/// `sched_setattr` of the calling thread's utilisation clamp.
pub struct Uclamp;

/// Which change is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Begin,
    End,
    EndBegin,
}

impl Op {
    fn parse(params: &Params) -> Result<Op, NotMeasured> {
        match params.get("op").and_then(|v| v.as_str()) {
            Some("begin") => Ok(Op::Begin),
            Some("end") => Ok(Op::End),
            Some("end_begin") => Ok(Op::EndBegin),
            other => Err(NotMeasured::Failed(format!("op must be one of {OPS:?}, not {other:?}"))),
        }
    }

    /// The untimed change to the starting state, and the timed change.
    fn plan(self, current: &SchedAttr) -> (SchedAttr, SchedAttr) {
        let a = SchedAttr::clamp(current, TASK_A.0, TASK_A.1);
        match self {
            Op::Begin => (SchedAttr::reset(current), a),
            Op::End => (a, SchedAttr::reset(current)),
            Op::EndBegin => (a, SchedAttr::clamp(current, TASK_B.0, TASK_B.1)),
        }
    }

    /// As [`Op::plan`], for `task.setattr`: nice values instead of clamps.
    fn plan_nice(self, current: &SchedAttr) -> (SchedAttr, SchedAttr) {
        let (a, b) = nice_tasks(current.nice);
        let (start, target) = match self {
            Op::Begin => (current.nice, a),
            Op::End => (a, current.nice),
            Op::EndBegin => (a, b),
        };
        (nice_change(current, start), nice_change(current, target))
    }
}

/// Why a refused clamp change means the row cannot be measured here (`Skipped`), or is a
/// failure (`Failed`).
fn refusal(e: &std::io::Error) -> NotMeasured {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => NotMeasured::Skipped(NO_UCLAMP.into()),
        Some(libc::E2BIG) => NotMeasured::Skipped("the kernel's sched_attr has no clamp fields (Linux < 5.3)".into()),
        Some(libc::ENOSYS) => NotMeasured::Skipped("the kernel has no sched_setattr (Linux < 3.14)".into()),
        Some(libc::EPERM) => NotMeasured::Skipped(format!("not permitted to change the utilisation clamp: {e}")),
        _ => NotMeasured::Failed(format!("sched_setattr of the utilisation clamp: {e}")),
    }
}

/// Whether the kernel has per-task clamps, asked without changing anything: a clamp beyond the
/// scale is refused before anything changes — with `EINVAL` by a kernel that has clamps, with
/// `EOPNOTSUPP` by one without. `Err(reason)` only for the latter; anything else is left for
/// the first real change to find out.
pub(crate) fn probe_clamps(current: &SchedAttr) -> Result<(), String> {
    let beyond = SchedAttr::clamp(current, 2 * sched::CAPACITY, 2 * sched::CAPACITY);
    match sched::setattr(&beyond) {
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Err(NO_UCLAMP.into()),
        Ok(()) => {
            // Not expected of any kernel; put the clamp back all the same.
            drop(Restore { original: *current, changed: true, nice: false });
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

/// Puts the thread's original clamp (or, for a nice change, its nice value) back when dropped
/// (once a change has been made).
struct Restore {
    original: SchedAttr,
    changed: bool,
    nice: bool,
}

impl Restore {
    /// The change that restores the original clamp: the default is restored by a reset (no
    /// request), anything else by asking for the same values; a nice value by asking for it.
    fn change(&self) -> SchedAttr {
        if self.nice {
            return nice_change(&self.original, self.original.nice);
        }
        let (min, max) = self.original.clamp_values();
        if (min, max) == DEFAULT_CLAMP {
            SchedAttr::reset(&self.original)
        } else {
            SchedAttr::clamp(&self.original, min, max)
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.changed {
            let _ = sched::setattr(&self.change());
        }
    }
}

/// `SCHED_FLAG_RESET_ON_FORK`: kept as the thread has it.
const RESET_ON_FORK: u64 = 0x01;

/// A change of the calling thread's nice value alone: its policy kept (`SCHED_FLAG_KEEP_POLICY`),
/// no clamp flag, its reset-on-fork flag as it was.
pub(crate) fn nice_change(current: &SchedAttr, nice: i32) -> SchedAttr {
    SchedAttr {
        size: sched::SCHED_ATTR_SIZE,
        policy: current.policy,
        flags: sched::SCHED_FLAG_KEEP_POLICY | (current.flags & RESET_ON_FORK),
        nice,
        ..SchedAttr::default()
    }
}

/// Tasks A and B as nice values, for a thread at `n0`: below it (more CPU share), or above it
/// near the bottom of the scale.
pub(crate) fn nice_tasks(n0: i32) -> (i32, i32) {
    if n0 >= -15 { (n0 - 5, n0 - 2) } else { (n0 + 5, n0 + 2) }
}

/// `SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`: the policies with a nice value.
pub(crate) fn fair_policy(policy: u32) -> bool {
    matches!(policy as i32, libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE)
}

/// Why a refused nice change means the row cannot be measured here (`Skipped`), or a failure.
pub(crate) fn nice_refusal(e: &std::io::Error) -> NotMeasured {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => NotMeasured::Skipped(format!(
            "not permitted to lower the thread's nice value (needs CAP_SYS_NICE or RLIMIT_NICE): {e}"
        )),
        Some(libc::ENOSYS) => NotMeasured::Skipped("the kernel has no sched_setattr (Linux < 3.14)".into()),
        _ => NotMeasured::Failed(format!("sched_setattr of the nice value: {e}")),
    }
}

/// Sums over a sample: null-call ticks, call ticks.
#[derive(Default)]
struct Sums {
    null: u64,
    call: u64,
}

/// One timed operation: a null system call, then `sched_setattr(target)`, each between stamps.
/// Returns (null ticks, call ticks, the call's return value).
#[inline(never)]
fn timed_change(timer: &Timer, target: &SchedAttr) -> (u64, u64, i64) {
    let t0 = timer.start();
    black_box(sys::raw::getppid());
    let t1 = timer.stop();
    let rc = sched::setattr_raw(black_box(target));
    let t2 = timer.stop();
    (t1.wrapping_sub(t0), t2.wrapping_sub(t1), rc)
}

/// One timed operation alone: `sched_setattr(target)` between two stamps. Returns (call ticks,
/// the call's return value).
#[inline(never)]
fn timed_change_alone(timer: &Timer, target: &SchedAttr) -> (u64, i64) {
    let t0 = timer.start();
    let rc = sched::setattr_raw(black_box(target));
    let t1 = timer.stop();
    (t1.wrapping_sub(t0), rc)
}

/// The check of a paired row's kernel-mode estimate: its mean over the kept samples is above 0
/// (a call no slower than a null call beside it leaves no kernel-mode part to show).
fn kernel_estimate_check(kernel_ns: &[f64]) -> Check {
    let mean = kernel_ns.iter().sum::<f64>() / kernel_ns.len() as f64;
    let below = kernel_ns.iter().filter(|&&k| k <= 0.0).count();
    Check::new(
        "the kernel-mode estimate (the call − the null call beside it) has a mean above 0",
        "mean > 0 ns",
        format!("mean {mean:.1} ns; {below} of {} samples ≤ 0", kernel_ns.len()),
        mean.is_finite() && mean > 0.0,
    )
}

/// What a row changes: the clamp (`task.uclamp`) or the nice value (`task.setattr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    Clamp,
    Nice,
}

impl Hint {
    /// What a change leaves, as `sched_getattr` reads it back.
    fn after(self, change: &SchedAttr) -> Vec<i64> {
        match self {
            Hint::Clamp => {
                let (min, max) = change.expected_after();
                vec![i64::from(min), i64::from(max)]
            }
            Hint::Nice => vec![i64::from(change.nice)],
        }
    }

    /// What the thread's attributes `a` say of it.
    fn read(self, a: &SchedAttr) -> Vec<i64> {
        match self {
            Hint::Clamp => vec![i64::from(a.util_min), i64::from(a.util_max)],
            Hint::Nice => vec![i64::from(a.nice)],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Hint::Clamp => "clamp",
            Hint::Nice => "nice value",
        }
    }
}

/// The calling thread's attributes, or why they cannot be read.
fn current_attr() -> Result<SchedAttr, NotMeasured> {
    sched::getattr().map_err(|e| match e.raw_os_error() {
        Some(libc::ENOSYS) => NotMeasured::Skipped("the kernel has no sched_getattr (Linux < 3.14)".into()),
        _ => NotMeasured::Failed(format!("sched_getattr: {e}")),
    })
}

/// Times `sched_setattr(target)` from `start` (set untimed before each), with a null call
/// beside it when `paired`; `restore` (whose first change, to `start`, has been made) puts the
/// thread back.
fn measure(ctx: &mut Ctx, hint: Hint, start: SchedAttr, target: SchedAttr, restore: Restore, paired: bool) -> Measured {
    let timer = ctx.timer;
    let original = restore.original;
    let (start_v, target_v) = (hint.after(&start), hint.after(&target));
    let (mut ops, mut failed, mut wrong) = (0u64, 0u64, 0u64);
    let (mut entry_ns, mut kernel_ns) = (Vec::with_capacity(4096), Vec::with_capacity(4096));
    let samples = {
        let c = &*ctx;
        c.iter_regions(|n| {
            let mut s = Sums::default();
            for _ in 0..n {
                ops += 1;
                let ready = sched::setattr(&start).is_ok() && sched::getattr().is_ok_and(|a| hint.read(&a) == start_v);
                let (null, call, rc) = if paired {
                    timed_change(&timer, &target)
                } else {
                    let (call, rc) = timed_change_alone(&timer, &target);
                    (0, call, rc)
                };
                s.null += null;
                s.call += call;
                failed += u64::from(rc != 0);
                let done = sched::getattr().is_ok_and(|a| hint.read(&a) == target_v);
                wrong += u64::from(!ready || !done);
            }
            let nf = n as f64;
            entry_ns.push(timer.ticks_to_ns(s.null as f64 - crate::sampler::overhead_of(&timer, n)) / nf);
            kernel_ns.push(timer.ticks_to_ns(s.call as f64 - s.null as f64) / nf);
            crate::sampler::Timed::regions(s.call, n)
        })
    };
    drop(restore);
    let back = sched::getattr().map(|a| hint.read(&a));
    let keep = samples.per_op_ns.len();
    let tail = |v: Vec<f64>| v[v.len().saturating_sub(keep)..].to_vec();
    let name = hint.name();
    let (kernel_ns, entry_ns) = (tail(kernel_ns), tail(entry_ns));
    let mut checks = vec![
        Check::all_ok("every sched_setattr succeeds", failed, ops),
        Check::all_ok(
            format!("sched_getattr reads back the {name} {start_v:?} before and {target_v:?} after each timed call"),
            wrong,
            ops,
        ),
        Check::new(
            format!("the thread's original {name} is back afterwards"),
            format!("{:?}", hint.read(&original)),
            match &back {
                Ok(v) => format!("{v:?}"),
                Err(e) => format!("sched_getattr: {e}"),
            },
            back.as_ref().is_ok_and(|v| *v == hint.read(&original)),
        ),
    ];
    if paired {
        checks.push(kernel_estimate_check(&kernel_ns));
    }
    let mut m = Measured::new(samples, checks);
    // A clamp as [min, max]; a nice value as itself.
    let param = |v: &[i64]| if v.len() == 1 { serde_json::json!(v[0]) } else { serde_json::json!(v) };
    m.params.insert("from".into(), param(&start_v));
    m.params.insert("to".into(), param(&target_v));
    if paired {
        m.breakdown = vec![("kernel".to_string(), kernel_ns), ("entry".to_string(), entry_ns)];
        m.observed.insert("kernel_timing".into(), serde_json::json!("estimated"));
        m.notes.push(KERNEL_ESTIMATED.into());
    } else {
        m.notes.push(
            "the call timed alone (two stamps around it, no null call beside it); its kernel-mode estimate is the \
             pair=null row's, a separate measurement"
                .into(),
        );
    }
    m
}

impl Benchmark for Uclamp {
    fn id(&self) -> &'static str {
        "task.uclamp"
    }
    fn about(&self) -> &'static str {
        "begin/end a task: sched_setattr of the thread's utilisation clamp (the frequency governor's per-task hint)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let op = Op::parse(params)?;
        let paired = paired(params)?;
        let original = current_attr()?;
        // Asked in `run`, not `available`, so that each `op` gets its own row saying why.
        probe_clamps(&original).map_err(NotMeasured::Skipped)?;
        let mut restore = Restore { original, changed: false, nice: false };
        let (start, target) = op.plan(&original);
        // The first change tells whether the kernel has clamps at all.
        sched::setattr(&start).map_err(|e| refusal(&e))?;
        restore.changed = true;
        Ok(measure(ctx, Hint::Clamp, start, target, restore, paired))
    }
}

/// `sched_setattr` of the calling thread's nice value: `task.uclamp`'s nearest.
pub struct Setattr;

impl Benchmark for Setattr {
    fn id(&self) -> &'static str {
        "task.setattr"
    }
    fn about(&self) -> &'static str {
        "begin/end a task: sched_setattr of the thread's nice value (task.uclamp's call and path without the clamp)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let op = Op::parse(params)?;
        let paired = paired(params)?;
        let original = current_attr()?;
        if !fair_policy(original.policy) {
            return Err(NotMeasured::Skipped(format!(
                "the thread runs policy {} (real-time or deadline), which has no nice value",
                original.policy
            )));
        }
        // Whether the clamp row runs here, asked before anything changes (for the note).
        let clamps = probe_clamps(&original);
        let mut restore = Restore { original, changed: false, nice: true };
        let (start, target) = op.plan_nice(&original);
        // The first change tells whether this thread may lower its nice value.
        sched::setattr(&start).map_err(|e| nice_refusal(&e))?;
        restore.changed = true;
        if let Err(e) = sched::setattr(&target) {
            return Err(nice_refusal(&e));
        }
        let mut m = measure(ctx, Hint::Nice, start, target, restore, paired);
        m.notes.push(format!(
            "nearest of task.uclamp ({}): the same sched_setattr call and path changing the nice value (the task's \
             fair-share weight) instead of the utilisation clamp",
            match clamps {
                Ok(()) => "which runs here too, beside it".to_string(),
                Err(why) => format!("skipped here: {why}"),
            }
        ));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paired row has the kernel-mode estimate, labelled, and its check; a row timed alone
    /// has no stages. Returns whether the row is paired.
    fn assert_pairing(p: &Params, m: &Measured) -> bool {
        let estimate = m.checks.iter().find(|c| c.name.starts_with("the kernel-mode estimate"));
        if p["pair"] == PAIRED {
            assert_eq!(m.observed["kernel_timing"], "estimated", "{p:?}");
            assert!(m.notes.iter().any(|n| n.starts_with(
                "kernel-mode part estimated: the call minus a null system call timed beside it in the same samples"
            )));
            assert!(estimate.is_some(), "{p:?}");
            let names: Vec<&str> = m.breakdown.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["kernel", "entry"]);
            true
        } else {
            assert_eq!((p["op"].as_str(), p["pair"].as_str()), (Some("end_begin"), Some(ALONE)));
            assert!(m.breakdown.is_empty() && estimate.is_none() && !m.observed.contains_key("kernel_timing"));
            assert!(!m.samples.per_op_ns.is_empty());
            false
        }
    }

    #[test]
    fn end_and_begin_is_timed_twice_paired_and_alone() {
        let v = variants();
        let pairs: Vec<(&str, &str)> =
            v.iter().map(|p| (p["op"].as_str().unwrap_or(""), p["pair"].as_str().unwrap_or(""))).collect();
        assert_eq!(
            pairs,
            [("begin", PAIRED), ("end", PAIRED), ("end_begin", PAIRED), ("end_begin", ALONE)],
            "every op paired; end-and-begin alone as well"
        );
        assert!(paired(&Params::new()).expect("default"));
        assert!(!paired(&v[3]).expect("alone"));
        let bad = Params::from([("pair".to_string(), serde_json::json!("both"))]);
        assert!(matches!(paired(&bad), Err(NotMeasured::Failed(_))));
    }

    #[test]
    fn a_kernel_estimate_whose_mean_is_not_above_zero_flags_the_row() {
        assert_eq!(kernel_estimate_check(&[120.0, -10.0, 80.0]).ok, Some(true), "a sample below 0 is allowed");
        assert_eq!(kernel_estimate_check(&[20.0, -30.0]).ok, Some(false), "mean −5 ns");
        assert_eq!(kernel_estimate_check(&[0.0, 0.0]).ok, Some(false));
        assert_eq!(kernel_estimate_check(&[]).ok, Some(false), "no sample, no estimate");
    }

    #[test]
    fn every_timed_call_changes_the_clamp() {
        let current = sched::getattr().unwrap_or_default();
        for op in [Op::Begin, Op::End, Op::EndBegin] {
            let (start, target) = op.plan(&current);
            assert_ne!(start.expected_after(), target.expected_after(), "{op:?}");
            assert_eq!(start.flags, sched::CLAMP_FLAGS);
            assert_eq!(target.flags, sched::CLAMP_FLAGS);
        }
        assert_eq!(Op::Begin.plan(&current).0.expected_after(), DEFAULT_CLAMP, "begin starts from the default");
        assert_eq!(Op::End.plan(&current).1.expected_after(), DEFAULT_CLAMP, "end returns to the default");
        for op in OPS {
            let p = Params::from([("op".to_string(), serde_json::json!(op))]);
            assert!(Op::parse(&p).is_ok(), "{op}");
        }
        assert!(Op::parse(&Params::new()).is_err());
    }

    #[test]
    fn read_back_compares_the_clamp() {
        let read = SchedAttr { util_min: 512, util_max: 1024, ..SchedAttr::default() };
        let clamp = |c: (u32, u32)| Hint::Clamp.after(&SchedAttr::clamp(&read, c.0, c.1));
        assert_eq!(Hint::Clamp.read(&read), clamp(TASK_A));
        assert_ne!(Hint::Clamp.read(&read), clamp(TASK_B));
        assert_ne!(
            Hint::Clamp.read(&SchedAttr::default()),
            Hint::Clamp.after(&SchedAttr::reset(&read)),
            "a kernel without clamps reads back 0, 0"
        );
        assert_eq!(Hint::Nice.read(&SchedAttr { nice: -5, ..read }), Hint::Nice.after(&nice_change(&read, -5)));
    }

    #[test]
    fn the_probe_changes_nothing_and_agrees_with_a_real_change() {
        let before = sched::getattr().expect("sched_getattr");
        let verdict = probe_clamps(&before);
        assert_eq!(sched::getattr().expect("sched_getattr"), before, "the probe changes nothing");
        let change = sched::setattr(&SchedAttr::clamp(&before, TASK_A.0, TASK_A.1));
        drop(Restore { original: before, changed: change.is_ok(), nice: false });
        match (verdict, change) {
            (Ok(()), Ok(())) => {}
            (Err(why), Err(e)) => {
                assert_eq!((why.as_str(), refusal(&e)), (NO_UCLAMP, NotMeasured::Skipped(NO_UCLAMP.into())))
            }
            (v, c) => panic!("the probe says {v:?}, a real change {c:?}"),
        }
    }

    #[test]
    fn kernels_without_clamps_are_skipped_with_the_reason() {
        for errno in [libc::EOPNOTSUPP, libc::EINVAL] {
            assert_eq!(refusal(&std::io::Error::from_raw_os_error(errno)), NotMeasured::Skipped(NO_UCLAMP.into()));
        }
        assert!(matches!(refusal(&std::io::Error::from_raw_os_error(libc::EPERM)), NotMeasured::Skipped(_)));
        assert!(matches!(refusal(&std::io::Error::from_raw_os_error(libc::EFAULT)), NotMeasured::Failed(_)));
    }

    #[test]
    fn each_op_is_measured_or_skipped_and_the_thread_is_left_as_found() {
        let before = sched::getattr().expect("sched_getattr");
        crate::testing::with_ctx(0.03, |ctx| {
            for p in Uclamp.variants(ctx) {
                match Uclamp.run(ctx, &p) {
                    Ok(m) => {
                        for c in &m.checks {
                            assert_eq!(c.ok, Some(true), "{p:?}: {c:?}");
                        }
                        if !assert_pairing(&p, &m) {
                            continue;
                        }
                        let (k, e) = (&m.breakdown[0].1, &m.breakdown[1].1);
                        assert_eq!(k.len(), m.samples.per_op_ns.len());
                        // The total passes through whole ticks on its way to the sampler.
                        let tick = ctx.timer.ticks_to_ns(1.0);
                        for ((t, k), e) in m.samples.per_op_ns.iter().zip(k).zip(e) {
                            assert!((t - (k + e)).abs() <= tick + 1e-6, "kernel + entry = total: {t} vs {k} + {e}");
                        }
                    }
                    Err(NotMeasured::Skipped(why)) => assert_eq!(why, NO_UCLAMP, "{p:?}"),
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
        let after = sched::getattr().expect("sched_getattr");
        assert_eq!(after.clamp_values(), before.clamp_values());
        assert_eq!((after.policy, after.nice), (before.policy, before.nice));
    }

    #[test]
    fn every_timed_nice_change_changes_the_nice_value_and_nothing_else() {
        for n0 in [-20, -16, -15, 0, 5, 19] {
            let current = SchedAttr { size: 56, policy: 3, flags: 1, nice: n0, ..SchedAttr::default() };
            let (a, b) = nice_tasks(n0);
            assert!((-20..=19).contains(&a) && (-20..=19).contains(&b) && a != b && a != n0 && b != n0, "{n0}");
            for op in [Op::Begin, Op::End, Op::EndBegin] {
                let (start, target) = op.plan_nice(&current);
                assert_ne!(start.nice, target.nice, "{op:?} at {n0}");
                for c in [start, target] {
                    assert_eq!(
                        (c.policy, c.flags),
                        (3, sched::SCHED_FLAG_KEEP_POLICY | 1),
                        "policy and reset-on-fork kept"
                    );
                    assert_eq!((c.util_min, c.util_max, c.priority), (0, 0, 0), "no clamp, no priority");
                }
            }
            assert_eq!(Op::Begin.plan_nice(&current).0.nice, n0, "begin starts from the thread's own");
            assert_eq!(Op::End.plan_nice(&current).1.nice, n0, "end returns to it");
        }
        assert!(fair_policy(libc::SCHED_OTHER as u32) && !fair_policy(libc::SCHED_FIFO as u32));
    }

    #[test]
    fn each_nice_op_is_measured_and_the_thread_is_left_as_found() {
        let before = sched::getattr().expect("sched_getattr");
        crate::testing::with_ctx(0.03, |ctx| {
            for p in Setattr.variants(ctx) {
                match Setattr.run(ctx, &p) {
                    Ok(m) => {
                        for c in &m.checks {
                            assert_eq!(c.ok, Some(true), "{p:?}: {c:?}");
                        }
                        if !assert_pairing(&p, &m) {
                            continue;
                        }
                        let tick = ctx.timer.ticks_to_ns(1.0);
                        let (k, e) = (&m.breakdown[0].1, &m.breakdown[1].1);
                        for ((t, k), e) in m.samples.per_op_ns.iter().zip(k).zip(e) {
                            assert!((t - (k + e)).abs() <= tick + 1e-6, "kernel + entry = total: {t} vs {k} + {e}");
                        }
                    }
                    Err(NotMeasured::Skipped(why)) => assert!(why.contains("nice"), "{p:?}: {why}"),
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
        let after = sched::getattr().expect("sched_getattr");
        assert_eq!(
            (after.policy, after.nice, after.clamp_values()),
            (before.policy, before.nice, before.clamp_values())
        );
    }
}
