//! The scheduler between two CPU-bound threads on one CPU: `sched.preempt` (the tick takes the
//! CPU from one and gives it to the other) and `sched.yield` (each gives it up by
//! `sched_yield`).
//!
//! Seed row: Go!'s scheduling overhead, "timer interrupt until the second thread runs" (just
//! under 2,500 cycles at 90 MHz): `sched.preempt`.
//!
//! **`sched.preempt`.** Two threads, both `SCHED_OTHER` (so that the scheduler's tick preempts
//! them), pinned to the measuring CPU, each read the cycle counter in a tight loop for a fixed
//! wall time per round ([`PREEMPT_WALL`], less when the round's budget is smaller), and record
//! only the gaps: two consecutive stamps more than [`GAP_NS`] apart. A gap of thread A inside
//! which thread B resumed is a switch A → B.
//! **Timing model:** one sample is one switch: B's first stamp after the switch minus A's last
//! stamp before it — the tick (or whatever interrupt ended A's slice), the scheduler, and the
//! switch. How long each thread then ran before its next switch (its time slice) is in
//! `observed`. Gaps with no resumption of the other thread in them (an interrupt, the
//! hypervisor, a third task) are counted apart (`observed.other_gaps`), not sampled.
//! **Third tasks:** Go! measured a switch between two runnable threads, so a switch during
//! which another task (or the host) ran is dropped, by the kernel's own account: right after
//! each gap a thread reads its own `/proc/thread-self/schedstat` ([`sys::schedstat`]: run time,
//! run delay), untimed (the next stamp is taken after the read). Over a gap of thread X, X's
//! run delay grew by the time it waited; the other thread Y's run time grew by the time Y ran
//! in it (Y's readings right after it resumed in the gap and after its next resumption, which
//! bracket its slice); the difference is the time that neither ran — another task, interrupts,
//! the host ([`third_party_ns`]). A switch X → Y lies in the overlap of X's gap and Y's gap
//! that ended at Y's resumption, so it is dropped when both gaps hold more than
//! [`THIRD_PARTY_NS`] (50 µs) of such time ([`disturbed`]): never kept when a third task ran
//! a slice inside it (a shorter burst, an interrupt or a kernel thread's few tens of µs, may
//! stay), at the price of sometimes dropping one whose neighbours it ran beside. Dropped switches
//! are counted (`observed.dropped_third_task`) and left out of the samples.
//! **Validation:** the switches seen agree with the involuntary context switches the kernel
//! counted for the two threads (`getrusage(RUSAGE_THREAD)`, within [`SWITCH_TOLERANCE`]);
//! both threads ran on the CPU; both were `SCHED_OTHER`; at most half the switches were
//! dropped for a third task, and some remain; steal time on the CPU (`/proc/stat`) during the
//! round is recorded, with a note when it advanced.
//!
//! **`sched.yield`.** The measuring thread and a peer thread pinned to the same CPU each call
//! `sched_yield()` in a loop, the peer counting its turns.
//! **Timing model:** the sampler's loop around the measuring thread's yields; each yield is
//! two hand-offs (to the peer and back), so one operation is one hand-off, half a yield round.
//! **Validation:** the peer's counter advanced once per yield of the measuring thread (it ran
//! between every two of them); the kernel counted a context switch per hand-off (voluntary +
//! involuntary, both threads).
//!
//! **Cleanup.** Every thread ends at its fixed time or when the run is interrupted (the
//! threads look at the interrupt flag every few thousand stamps; the yield peer is told to stop
//! by a guard, whatever happens), and is joined before `run` returns.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use crate::sampler::{Samples, StopReason};
use platform::timer::Timer;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use sys::schedstat::{Account, ThreadSchedstat};
use sys::switches::Switches as ThreadSwitches;
use sys::{cpu, process};

/// The wall time of one `sched.preempt` round (at most).
pub const PREEMPT_WALL: Duration = Duration::from_millis(150);
/// A gap between two stamps longer than this, ns, is recorded.
pub const GAP_NS: f64 = 5_000.0;
/// Gaps recorded per thread and round at most (memory bound).
const GAP_CAP: usize = 1 << 16;
/// Relative disagreement allowed between switches seen and involuntary switches counted.
pub const SWITCH_TOLERANCE: f64 = 0.10;
/// Time in a gap, ns, that neither spinning thread ran (by the kernel's account) above which
/// a third party (another task, interrupts, the host) counts as having run in it. Above what a
/// clean switch itself leaves unaccounted (the scheduler's clock reads are not simultaneous:
/// 0–5 µs mostly and up to 20 µs on the development guest, where a 10 µs bound dropped about
/// half the clean switches of an idle run), below any task's slice (the scheduler's base slice
/// is 0.75 ms; a third task's showed as 1–4 ms).
pub const THIRD_PARTY_NS: f64 = 50_000.0;
/// Share of the switches seen that may be dropped for a third task before the row is flagged.
pub const DROPPED_MAX: f64 = 0.5;

/// `sched.preempt`.
pub struct Preempt;

/// `sched.yield`.
pub struct Yield;

/// What one spinning thread saw.
#[derive(Debug, Default, Clone)]
pub struct Spin {
    /// (last stamp before, first stamp after) of each gap, in order.
    pub gaps: Vec<(u64, u64)>,
    /// The thread's schedstat read right after each gap (one per gap; empty when it could
    /// not be opened).
    pub accounts: Vec<Option<Account>>,
    /// Its schedstat before the first stamp.
    pub start_account: Option<Account>,
    /// Its schedstat after the last stamp.
    pub end_account: Option<Account>,
    /// Why schedstat could not be opened.
    pub schedstat_error: Option<String>,
    /// Gaps not recorded (the buffer was full).
    pub lost: u64,
    /// Involuntary context switches during the loop.
    pub involuntary: u64,
    /// Voluntary ones.
    pub voluntary: u64,
    /// The thread's first stamp.
    pub first: u64,
    /// The CPU it ended on.
    pub ran_on: Option<usize>,
    /// Its policy.
    pub policy: libc::c_int,
    /// It stopped on the interrupt flag.
    pub interrupted: bool,
}

/// Stamps until `end`, recording gaps over `gap_ticks`, and after each the thread's schedstat
/// (`stat`; the read is left out of the stamps: the next one is taken after it).
#[inline(never)]
fn spin(
    timer: &Timer,
    start: u64,
    end: u64,
    gap_ticks: u64,
    interrupt: &AtomicBool,
    stat: Result<&ThreadSchedstat, String>,
) -> Spin {
    let mut s = Spin { gaps: Vec::with_capacity(GAP_CAP), policy: process::sched_policy(), ..Spin::default() };
    let stat = match stat {
        Ok(st) => {
            s.accounts = Vec::with_capacity(GAP_CAP);
            Some(st)
        }
        Err(why) => {
            s.schedstat_error = Some(why);
            None
        }
    };
    let ThreadSwitches { voluntary: v0, involuntary: i0 } = ThreadSwitches::now();
    s.start_account = stat.and_then(ThreadSchedstat::read);
    let mut last = start;
    s.first = timer.stop();
    let mut i = 0u32;
    loop {
        let now = timer.stop();
        let mut next = now;
        if now.wrapping_sub(last) > gap_ticks {
            if s.gaps.len() < GAP_CAP {
                s.gaps.push((last, now));
                if let Some(st) = stat {
                    s.accounts.push(st.read());
                    next = timer.stop();
                }
            } else {
                s.lost += 1;
            }
        }
        last = next;
        if now >= end {
            break;
        }
        i = i.wrapping_add(1);
        if i & 0xfff == 0 && interrupt.load(Relaxed) {
            s.interrupted = true;
            break;
        }
    }
    s.end_account = stat.and_then(ThreadSchedstat::read);
    let ThreadSwitches { voluntary: v1, involuntary: i1 } = ThreadSwitches::now();
    s.voluntary = v1.saturating_sub(v0);
    s.involuntary = i1.saturating_sub(i0);
    s.ran_on = cpu::current_cpu();
    s
}

/// Switches found in two threads' gaps.
#[derive(Debug, Default, PartialEq)]
pub struct Switches {
    /// Cost of each switch, ticks: the resumed thread's first stamp − the other's last.
    pub cost_ticks: Vec<u64>,
    /// How long the resumed thread then ran before its next gap, ticks.
    pub slice_ticks: Vec<u64>,
    /// Gaps in which the other thread did not resume.
    pub other_gaps: u64,
    /// For each switch (as `cost_ticks`): the index of the gap of `a` and of `b` it lies in
    /// (the preempted thread's gap, and the resumed thread's gap that its resumption ended).
    pub gaps: Vec<(usize, usize)>,
}

/// Matches gaps: a gap `(x0, x1)` of one thread in which the other resumed (one of its gaps
/// ends at `y1`, `x0 < y1 < x1`) is a switch costing `y1 − x0`; the resumed thread's slice runs
/// from `y1` to the start of its next gap. Gaps that begin before `after` are ignored (start-up).
pub fn match_gaps(a: &[(u64, u64)], b: &[(u64, u64)], after: u64) -> Switches {
    let mut out = Switches::default();
    for (x, y, x_is_a) in [(a, b, true), (b, a, false)] {
        for (k, &(x0, x1)) in x.iter().enumerate().filter(|(_, g)| g.0 >= after) {
            // The first gap of `y` ending after x0.
            let i = y.partition_point(|g| g.1 <= x0);
            match y.get(i) {
                Some(&(_, y1)) if y1 < x1 => {
                    out.cost_ticks.push(y1 - x0);
                    out.gaps.push(if x_is_a { (k, i) } else { (i, k) });
                    if let Some(&(next0, _)) = y.get(i + 1) {
                        out.slice_ticks.push(next0.saturating_sub(y1));
                    }
                }
                _ => out.other_gaps += 1,
            }
        }
    }
    out
}

/// For each gap of `x`, the time in it, ns, that neither thread ran by the kernel's account:
/// x's run delay over the gap (its schedstat after the gap less after the one before) less the
/// time `y` ran in it (y's run time at its first reading after the gap's end less at its first
/// reading after the gap's start — readings taken right after each resumption, and y was not
/// running when x's gap began, so they bracket y's slices inside the gap; none: y did not run).
/// `None` for a start-up gap (beginning before `after`, when y may have been running unseen) or
/// where a reading is missing. May be slightly below 0 (the scheduler's clock reads are not
/// simultaneous).
pub fn third_party_ns(x: &Spin, y: &Spin, after: u64) -> Vec<Option<f64>> {
    let reading = |s: &Spin, i: usize| -> Option<Account> {
        if s.accounts.len() != s.gaps.len() {
            return None;
        }
        if i < s.accounts.len() { s.accounts[i] } else { s.end_account }
    };
    x.gaps
        .iter()
        .enumerate()
        .map(|(k, &(x0, x1))| {
            if x0 < after {
                return None;
            }
            let before = if k == 0 { x.start_account } else { reading(x, k - 1) };
            let waited = reading(x, k)?.wait_ns.checked_sub(before?.wait_ns)?;
            // y's first resumption after x0 (inside the gap, if y ran in it) and after x1.
            let i = y.gaps.partition_point(|g| g.1 <= x0);
            let j = y.gaps.partition_point(|g| g.1 <= x1);
            let ran = reading(y, j)?.run_ns.checked_sub(reading(y, i)?.run_ns)?;
            Some(waited as f64 - ran as f64)
        })
        .collect()
}

/// Whether the switch lying in gap `ia` of thread a and gap `ib` of thread b is disturbed by a
/// third party: both gaps held more than [`THIRD_PARTY_NS`] that neither thread ran (the switch
/// is their overlap, so a third party inside it shows in both). `None` when neither gap can be
/// told (a reading missing).
pub fn disturbed(third_a: &[Option<f64>], third_b: &[Option<f64>], (ia, ib): (usize, usize)) -> Option<bool> {
    let known = [third_a.get(ia).copied().flatten(), third_b.get(ib).copied().flatten()];
    let least = known.into_iter().flatten().reduce(f64::min)?;
    Some(least > THIRD_PARTY_NS)
}

/// The switches kept and dropped by [`disturbed`].
#[derive(Debug, Default, PartialEq)]
pub struct Kept {
    /// Indexes (into [`Switches::cost_ticks`]) of the switches kept.
    pub kept: Vec<usize>,
    /// Switches dropped: a third party ran during them.
    pub dropped: usize,
    /// Switches that could not be told (kept).
    pub unknown: usize,
    /// Why none could be told (schedstat unreadable), if so.
    pub unavailable: Option<String>,
}

/// Classifies the switches of `a` and `b` ([`match_gaps`]'s `sw`, with its `after`).
pub fn classify(a: &Spin, b: &Spin, sw: &Switches, after: u64) -> Kept {
    let mut out = Kept::default();
    let why = a.schedstat_error.as_ref().or(b.schedstat_error.as_ref());
    let never_waited = |s: &Spin| s.accounts.iter().chain([&s.end_account]).flatten().all(|c| c.wait_ns == 0);
    if let Some(why) = why {
        out.unavailable = Some(format!("schedstat cannot be opened: {why}"));
    } else if !sw.gaps.is_empty() && (never_waited(a) || never_waited(b)) {
        // A kernel without CONFIG_SCHED_INFO prints zeros.
        out.unavailable = Some("schedstat reads 0 (the kernel keeps no run delay: CONFIG_SCHED_INFO)".into());
    }
    if out.unavailable.is_some() {
        out.kept = (0..sw.cost_ticks.len()).collect();
        return out;
    }
    let (ta, tb) = (third_party_ns(a, b, after), third_party_ns(b, a, after));
    for (i, &g) in sw.gaps.iter().enumerate() {
        match disturbed(&ta, &tb, g) {
            Some(true) => out.dropped += 1,
            Some(false) => out.kept.push(i),
            None => {
                out.unknown += 1;
                out.kept.push(i);
            }
        }
    }
    out
}

impl Benchmark for Preempt {
    fn id(&self) -> &'static str {
        "sched.preempt"
    }
    fn about(&self) -> &'static str {
        "preemption of a CPU-bound thread by another on its CPU: last stamp of one to first stamp of the other"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        let mut p = Params::new();
        p.insert("placement".into(), "same_cpu".into());
        vec![p]
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let wall = PREEMPT_WALL.min(Duration::from_secs_f64(ctx.cfg().budget_s.max(0.02)));
        let steal_before = platform::placement::steal_jiffies(ctx.cpu);
        let (a, b) = spin_pair(ctx, wall)?;
        let steal = match (steal_before, platform::placement::steal_jiffies(ctx.cpu)) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        };
        Ok(preempt_row(ctx, wall, &a, &b, steal))
    }
}

/// Runs the two spinning threads for `wall`.
fn spin_pair(ctx: &Ctx, wall: Duration) -> Result<(Spin, Spin), NotMeasured> {
    let timer = ctx.timer;
    let ticks = |ns: f64| (ns / timer.ticks_to_ns(1.0)).round().max(1.0) as u64;
    let gap_ticks = ticks(GAP_NS);
    let wall_ticks = ticks(wall.as_nanos() as f64);
    let cpu = ctx.cpu;
    let interrupt = ctx.interrupt_flag();
    let barrier = Barrier::new(3);
    let start = AtomicU64::new(0);
    std::thread::scope(|s| {
        let body = || -> Result<Spin, String> {
            let pinned = cpu::pin_current_thread(cpu);
            // Opened by the thread itself: the file follows the thread that opens it.
            let stat = ThreadSchedstat::open().map_err(|e| format!("/proc/thread-self/schedstat: {e}"));
            barrier.wait();
            pinned.map_err(|e| format!("pin to CPU {cpu}: {e}"))?;
            let t0 = start.load(Acquire);
            Ok(spin(&timer, t0, t0 + wall_ticks, gap_ticks, interrupt, stat.as_ref().map_err(Clone::clone)))
        };
        let spawn = |name: &str| std::thread::Builder::new().name(name.into()).spawn_scoped(s, body);
        let ha = spawn("osprim-spin-a");
        let hb = spawn("osprim-spin-b");
        start.store(timer.start(), Release);
        if ha.is_ok() && hb.is_ok() {
            barrier.wait();
        }
        let join =
            |h: std::io::Result<std::thread::ScopedJoinHandle<'_, Result<Spin, String>>>| -> Result<Spin, NotMeasured> {
                let h = h.map_err(|e| NotMeasured::Failed(format!("start a spinning thread: {e}")))?;
                h.join()
                    .map_err(|_| NotMeasured::Failed("a spinning thread panicked".into()))?
                    .map_err(NotMeasured::Failed)
            };
        // A thread that failed to start leaves the other waiting at the barrier: never, since
        // both are spawned before the barrier is met and a failed spawn skips it; scoped
        // threads are joined either way.
        Ok((join(ha)?, join(hb)?))
    })
}

/// A round judges the share of switches dropped for a third party only when it saw at least
/// this many: a round of a few tens of milliseconds sees 5–10 switches, and one other task's
/// slice can take every one of them, which leaves that round without samples but says nothing
/// about the measurement (the row's samples are the kept switches of all rounds).
const JUDGED_MIN: u64 = 10;

/// Whether a round's drops stay within [`DROPPED_MAX`], judged on [`JUDGED_MIN`] switches.
fn dropped_within_bound(seen: u64, dropped: u64) -> bool {
    seen < JUDGED_MIN || dropped as f64 <= DROPPED_MAX * seen as f64
}

fn preempt_row(ctx: &Ctx, wall: Duration, a: &Spin, b: &Spin, steal: Option<u64>) -> Measured {
    let ns = |t: u64| ctx.timer.ticks_to_ns(t as f64);
    let after = a.first.max(b.first);
    let sw = match_gaps(&a.gaps, &b.gaps, after);
    let kept = classify(a, b, &sw, after);
    let interrupted = a.interrupted || b.interrupted;
    let samples = Samples {
        per_op_ns: kept.kept.iter().map(|&i| ns(sw.cost_ticks[i])).collect(),
        iterations_per_sample: 1,
        stop: Some(if interrupted { StopReason::Interrupted } else { StopReason::BudgetSpent }),
        ..Samples::default()
    };
    let seen = sw.cost_ticks.len() as u64;
    let counted = a.involuntary + b.involuntary;
    // Every switch seen was counted by the kernel; every switch counted left a gap (one to the
    // other thread, or to a third task: a gap without the other's resumption). Slack: the
    // start-up switch, which is not sampled, and the threads' ends.
    let slack = ((counted as f64 * SWITCH_TOLERANCE).round() as u64).max(3);
    let mut checks = vec![Check::new(
        "switches seen agree with involuntary context switches (getrusage, both threads)",
        format!("seen ≤ {counted} (counted) ≤ seen + other gaps, ± {slack}"),
        format!("{seen} seen, {} other gaps, {} unrecorded", sw.other_gaps, a.lost + b.lost),
        seen > 0 && seen <= counted + slack && counted <= seen + sw.other_gaps + a.lost + b.lost + slack,
    )];
    checks.push(Check::new(
        "both threads ran on the CPU",
        format!("CPU {}", ctx.cpu),
        format!("{:?} and {:?}", a.ran_on, b.ran_on),
        a.ran_on == Some(ctx.cpu) && b.ran_on == Some(ctx.cpu),
    ));
    let name = "switches kept: at most half dropped for a third party (schedstat: run delay − the other's run time)";
    checks.push(match &kept.unavailable {
        Some(why) => Check::impossible(name, why.clone()),
        None => Check::new(
            name,
            format!(
                "≤ {:.0} % of {seen} dropped, judged on a round of at least {JUDGED_MIN} switches (fewer: its \
                 drops only take samples away)",
                DROPPED_MAX * 100.0
            ),
            format!("{} kept, {} dropped, {} not told", kept.kept.len(), kept.dropped, kept.unknown),
            dropped_within_bound(seen, kept.dropped as u64),
        ),
    });
    checks.push(Check::new(
        "both threads were SCHED_OTHER (the tick preempts them)",
        "SCHED_OTHER",
        format!("{} and {}", policy_name(a.policy), policy_name(b.policy)),
        a.policy == libc::SCHED_OTHER && b.policy == libc::SCHED_OTHER,
    ));
    let mut m = Measured::new(samples, checks);
    let mut slices: Vec<f64> = sw.slice_ticks.iter().map(|&t| ns(t) / 1e6).collect();
    slices.sort_by(f64::total_cmp);
    let ms = |v: f64| (v * 1000.0).round() / 1000.0;
    m.observed.insert(
        "time_slice_ms".into(),
        serde_json::json!({
            "median": ms(stats::order::percentile(&slices, 50.0)),
            "min": ms(slices.first().copied().unwrap_or(f64::NAN)),
            "max": ms(slices.last().copied().unwrap_or(f64::NAN)),
            "count": slices.len(),
        }),
    );
    m.observed.insert("other_gaps".into(), serde_json::json!(sw.other_gaps));
    m.observed.insert("switches_seen".into(), serde_json::json!(seen));
    if kept.unavailable.is_none() {
        m.observed.insert("dropped_third_task".into(), serde_json::json!(kept.dropped));
        m.observed.insert("third_task_unknown".into(), serde_json::json!(kept.unknown));
        m.notes.push(format!(
            "switches during which a third party ran are dropped (observed.dropped_third_task, of \
             observed.switches_seen): by the kernel's account (/proc/thread-self/schedstat of both threads, read \
             right after each gap), the switch's two gaps each held over {:.0} µs that neither thread ran (the \
             waiting thread's run delay less the other's run time): another task, interrupts or the host",
            THIRD_PARTY_NS / 1e3
        ));
    } else if let Some(why) = &kept.unavailable {
        m.notes.push(format!("switches during which a third task ran cannot be told apart here ({why}): all kept"));
    }
    m.observed.insert("involuntary_switches".into(), serde_json::json!(counted));
    if sw.other_gaps > seen {
        m.notes.push(format!(
            "{} gaps in which the other thread did not resume: interrupts, or other tasks on CPU {}; a switch during which a third task ran counts that task's time too",
            sw.other_gaps, ctx.cpu
        ));
    }
    m.params.insert("wall_ms_per_round".into(), serde_json::json!(wall.as_millis() as u64));
    m.params.insert("gap_threshold_ns".into(), serde_json::json!(GAP_NS));
    if let Some(j) = steal {
        m.observed.insert("steal_jiffies".into(), serde_json::json!(j));
        if j > 0 {
            m.notes.push(format!(
                "the hypervisor stole {j} jiffies from CPU {} during a round: some gaps are the host's, not the tick's",
                ctx.cpu
            ));
        }
    }
    m
}

fn policy_name(p: libc::c_int) -> String {
    sys::timer::Policy { policy: p, priority: 0 }.name()
}

impl Benchmark for Yield {
    fn id(&self) -> &'static str {
        "sched.yield"
    }
    fn about(&self) -> &'static str {
        "hand the CPU to another thread on it with sched_yield (one hand-off, half a yield round)"
    }
    fn variants(&self, ctx: &Ctx) -> Vec<Params> {
        Preempt.variants(ctx)
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let peer = YieldPeer::start(ctx.cpu)?;
        let overhead = ctx.timer.overhead_ticks();
        let timer = ctx.timer;
        let ThreadSwitches { voluntary: v0, involuntary: i0 } = ThreadSwitches::now();
        let (mut yields, mut turns) = (0u64, 0u64);
        let samples = ctx.iter_custom(|n| {
            let rounds = n.div_ceil(2);
            let c0 = peer.count.load(Relaxed);
            let t0 = timer.start();
            for _ in 0..rounds {
                let _ = nix::sched::sched_yield();
            }
            let t1 = timer.stop();
            turns += peer.count.load(Relaxed) - c0;
            yields += rounds;
            super::pingpong::scale_ticks(t1.wrapping_sub(t0), overhead, n as f64 / (2 * rounds) as f64)
        });
        let ThreadSwitches { voluntary: v1, involuntary: i1 } = ThreadSwitches::now();
        let (pv, pi) = peer.stop()?;
        let handoffs = 2 * yields;
        let counted = (v1 - v0) + (i1 - i0) + pv + pi;
        let checks = vec![
            Check::new(
                "the peer ran between every two yields (its counter, one turn per yield)",
                format!("{yields} turns ± {} (1 % + 2: a tick may give it a turn between samples)", yields / 100 + 2),
                format!("{turns}"),
                yields > 0 && turns.abs_diff(yields) <= yields / 100 + 2,
            ),
            Check::new(
                "a context switch per hand-off (getrusage, voluntary + involuntary, both threads)",
                format!(
                    "≥ {} ({handoffs} − 1 % − 2: the first and last hand-off may fall outside)",
                    handoffs.saturating_sub(handoffs / 100 + 2)
                ),
                format!("{counted}"),
                counted >= handoffs.saturating_sub(handoffs / 100 + 2),
            ),
        ];
        let median = quick_median(&samples);
        let mut m = Measured::new(samples, checks);
        m.observed.insert("median_ns".into(), serde_json::json!((median * 10.0).round() / 10.0));
        Ok(m)
    }
}

/// The thread that yields back, counting its turns; stopped and joined on drop.
struct YieldPeer {
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<(u64, u64), String>>>,
}

impl YieldPeer {
    fn start(cpu: usize) -> Result<YieldPeer, NotMeasured> {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (count.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("osprim-yield".into())
            .spawn(move || {
                cpu::pin_current_thread(cpu).map_err(|e| format!("pin to CPU {cpu}: {e}"))?;
                let ThreadSwitches { voluntary: v0, involuntary: i0 } = ThreadSwitches::now();
                while !s.load(Relaxed) {
                    c.fetch_add(1, Relaxed);
                    let _ = nix::sched::sched_yield();
                }
                let ThreadSwitches { voluntary: v1, involuntary: i1 } = ThreadSwitches::now();
                Ok((v1 - v0, i1 - i0))
            })
            .map_err(|e| NotMeasured::Failed(format!("start the yield peer: {e}")))?;
        let peer = YieldPeer { count, stop, handle: Some(handle) };
        // Let it start and pin itself: the measuring thread gives up the CPU until it has.
        let began = std::time::Instant::now();
        while peer.count.load(Relaxed) == 0 {
            if began.elapsed() > Duration::from_secs(2) {
                return Err(NotMeasured::Failed("the yield peer did not start within 2 s".into()));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(peer)
    }

    /// Stops and joins the peer; its (voluntary, involuntary) switches.
    fn stop(mut self) -> Result<(u64, u64), NotMeasured> {
        self.stop.store(true, Relaxed);
        let h = self.handle.take().expect("joined once");
        h.join().map_err(|_| NotMeasured::Failed("the yield peer panicked".into()))?.map_err(NotMeasured::Failed)
    }
}

impl Drop for YieldPeer {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::serial;
    use crate::timer_wake::tests::{interrupt_after, with_flag};
    use crate::wake::tests::{osprim_tasks, osprim_tasks_settled};

    #[test]
    fn a_short_round_is_not_judged_on_its_drops_and_a_long_one_is() {
        // Five switches, all taken by one other task's slice: no samples, not a failed check.
        assert!(dropped_within_bound(5, 5));
        assert!(dropped_within_bound(JUDGED_MIN, JUDGED_MIN / 2));
        assert!(!dropped_within_bound(JUDGED_MIN, JUDGED_MIN / 2 + 1));
        assert!(!dropped_within_bound(40, 40));
    }

    #[test]
    fn gaps_match_into_switches_and_slices() {
        // A runs 0..100, B 110..200, A 205..300, B 310..400.
        let a = [(100, 205), (300, 1000)];
        let b = [(0, 110), (200, 310)];
        let s = match_gaps(&a, &b, 0);
        assert_eq!(s.cost_ticks, vec![10, 10, 5]);
        assert_eq!(s.slice_ticks, vec![90, 95]);
        // B's gap (0, 110) holds no resumption of A: not a switch.
        assert_eq!(s.other_gaps, 1);
        // A gap with nobody resuming in it (an interrupt) is not a switch either.
        let s = match_gaps(&[(10, 20)], &[(0, 5), (30, 40)], 0);
        assert_eq!((s.cost_ticks.len(), s.other_gaps), (0, 3));
    }

    fn acct(run_ns: u64, wait_ns: u64) -> Option<Account> {
        Some(Account { run_ns, wait_ns, slices: 0 })
    }

    /// A runs 0–1 ms; B 1.01–2; a third task 2.01–2.21; A 2.22–3; B 3.01–4; A 4.01–5 (and
    /// ends); B 5.01–6. The kernel switches at the midpoints between stamps.
    fn third_task_run() -> (Spin, Spin) {
        let a = Spin {
            gaps: vec![(1_000_000, 2_220_000), (3_000_000, 4_010_000)],
            accounts: vec![acct(1_005_000, 1_210_000), acct(1_795_000, 2_210_000)],
            start_account: acct(0, 0),
            end_account: acct(2_795_000, 2_210_000),
            first: 0,
            ..Spin::default()
        };
        let b = Spin {
            // Its first gap is its start-up wait, from the shared start stamp.
            gaps: vec![(0, 1_010_000), (2_000_000, 3_010_000), (4_000_000, 5_010_000)],
            accounts: vec![acct(0, 1_005_000), acct(1_000_000, 2_005_000), acct(2_000_000, 3_005_000)],
            start_account: acct(0, 0),
            end_account: acct(2_995_000, 3_005_000),
            first: 1_010_000,
            ..Spin::default()
        };
        (a, b)
    }

    #[test]
    fn switches_during_which_a_third_task_ran_are_dropped_by_the_kernels_account() {
        let (a, b) = third_task_run();
        let after = a.first.max(b.first);
        let sw = match_gaps(&a.gaps, &b.gaps, after);
        assert_eq!(sw.cost_ticks, vec![10_000, 220_000, 10_000]);
        assert_eq!(sw.gaps, vec![(1, 1), (0, 1), (1, 2)]);
        // Neither thread ran for 210 µs of A's first gap and of B's second; the others are clean.
        assert_eq!(third_party_ns(&a, &b, after), vec![None, Some(0.0)], "A's first gap is start-up");
        assert_eq!(third_party_ns(&b, &a, after), vec![None, Some(210_000.0), Some(0.0)]);
        let kept = classify(&a, &b, &sw, after);
        // B → A across the third task is dropped; A → B at 3 ms lies in B's disturbed gap too,
        // but in A's clean one: kept.
        assert_eq!(kept, Kept { kept: vec![0, 2], dropped: 1, unknown: 0, unavailable: None });
        // Both gaps must show it: one disturbed gap alone does not drop a switch.
        assert_eq!(disturbed(&[Some(210_000.0)], &[Some(5000.0)], (0, 0)), Some(false));
        assert_eq!(disturbed(&[Some(210_000.0)], &[Some(150_000.0)], (0, 0)), Some(true));
        assert_eq!(disturbed(&[None], &[None], (0, 0)), None);
        // What a clean switch leaves unaccounted (the scheduler's clock reads, up to ~20 µs) is
        // not a third party.
        assert_eq!(disturbed(&[Some(20_000.0)], &[Some(20_000.0)], (0, 0)), Some(false));
        // Without schedstat nothing is dropped, and the row says why.
        let (mut a, b) = third_task_run();
        a.schedstat_error = Some("no /proc".into());
        let kept = classify(&a, &b, &sw, after);
        assert_eq!((kept.kept.len(), kept.dropped), (3, 0));
        assert!(kept.unavailable.is_some_and(|w| w.contains("no /proc")));
        // A kernel that keeps no run delay reads zeros: not told either.
        let (mut a, b) = third_task_run();
        a.accounts.iter_mut().chain([&mut a.end_account]).for_each(|c| *c = acct(0, 0));
        assert!(classify(&a, &b, &sw, after).unavailable.is_some());
    }

    #[test]
    fn preemption_is_seen_and_agrees_with_the_kernels_count() {
        let _serial = serial();
        let flag = AtomicBool::new(false);
        let before = osprim_tasks("osprim-spin");
        with_flag(0.2, &flag, |ctx| {
            let m = Preempt.run(ctx, &Params::new()).unwrap();
            let seen = m.observed["switches_seen"].as_u64().expect("switches seen");
            assert!(seen >= 5, "a few switches in 150 ms: {seen}");
            assert!(m.samples.per_op_ns.iter().all(|&c| c > 0.0));
            // Third tasks are dropped by the kernel's account; how many depends on the machine's
            // load, so their check is reported, not asserted.
            let dropped = m.observed["dropped_third_task"].as_u64().expect("schedstat is read here");
            assert_eq!(m.samples.per_op_ns.len() as u64, seen - dropped);
            for c in &m.checks {
                if c.name.starts_with("switches kept") {
                    eprintln!("{c:?}");
                    continue;
                }
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
            // Interrupted: the threads end at once and are joined.
            let began = std::time::Instant::now();
            let m = interrupt_after(&flag, Duration::from_millis(20), || Preempt.run(ctx, &Params::new()).unwrap());
            assert_eq!(m.samples.stop, Some(StopReason::Interrupted));
            assert!(began.elapsed() < Duration::from_millis(140));
        });
        assert_eq!(osprim_tasks_settled("osprim-spin", before), before, "no spinning thread left");
    }

    #[test]
    fn yield_hands_the_cpu_over_every_time_and_ends_its_peer() {
        let _serial = serial();
        let flag = AtomicBool::new(false);
        let before = osprim_tasks("osprim-yield");
        with_flag(0.05, &flag, |ctx| {
            let m = Yield.run(ctx, &Params::new()).unwrap();
            assert!(!m.samples.per_op_ns.is_empty());
            for c in &m.checks {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
            let m = interrupt_after(&flag, Duration::from_millis(10), || Yield.run(ctx, &Params::new()).unwrap());
            assert_eq!(m.samples.stop, Some(StopReason::Interrupted));
        });
        assert_eq!(osprim_tasks_settled("osprim-yield", before), before, "the yield peer was joined");
    }
}
