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
//! **Validation:** the switches seen agree with the involuntary context switches the kernel
//! counted for the two threads (`getrusage(RUSAGE_THREAD)`, within [`SWITCH_TOLERANCE`]);
//! both threads ran on the CPU; both were `SCHED_OTHER`; steal time on the CPU
//! (`/proc/stat`) during the round is recorded, with a note when it advanced.
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

/// `sched.preempt`.
pub struct Preempt;

/// `sched.yield`.
pub struct Yield;

/// What one spinning thread saw.
#[derive(Debug, Default, Clone)]
pub struct Spin {
    /// (last stamp before, first stamp after) of each gap, in order.
    pub gaps: Vec<(u64, u64)>,
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

/// Stamps until `end`, recording gaps over `gap_ticks`.
#[inline(never)]
fn spin(timer: &Timer, start: u64, end: u64, gap_ticks: u64, interrupt: &AtomicBool) -> Spin {
    let mut s = Spin { gaps: Vec::with_capacity(GAP_CAP), policy: process::sched_policy(), ..Spin::default() };
    let ThreadSwitches { voluntary: v0, involuntary: i0 } = ThreadSwitches::now();
    let mut last = start;
    s.first = timer.stop();
    let mut i = 0u32;
    loop {
        let now = timer.stop();
        if now.wrapping_sub(last) > gap_ticks {
            if s.gaps.len() < GAP_CAP {
                s.gaps.push((last, now));
            } else {
                s.lost += 1;
            }
        }
        last = now;
        if now >= end {
            break;
        }
        i = i.wrapping_add(1);
        if i & 0xfff == 0 && interrupt.load(Relaxed) {
            s.interrupted = true;
            break;
        }
    }
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
}

/// Matches gaps: a gap `(x0, x1)` of one thread in which the other resumed (one of its gaps
/// ends at `y1`, `x0 < y1 < x1`) is a switch costing `y1 − x0`; the resumed thread's slice runs
/// from `y1` to the start of its next gap. Gaps that begin before `after` are ignored (start-up).
pub fn match_gaps(a: &[(u64, u64)], b: &[(u64, u64)], after: u64) -> Switches {
    let mut out = Switches::default();
    for (x, y) in [(a, b), (b, a)] {
        for &(x0, x1) in x.iter().filter(|g| g.0 >= after) {
            // The first gap of `y` ending after x0.
            let i = y.partition_point(|g| g.1 <= x0);
            match y.get(i) {
                Some(&(_, y1)) if y1 < x1 => {
                    out.cost_ticks.push(y1 - x0);
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
            barrier.wait();
            pinned.map_err(|e| format!("pin to CPU {cpu}: {e}"))?;
            let t0 = start.load(Acquire);
            Ok(spin(&timer, t0, t0 + wall_ticks, gap_ticks, interrupt))
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

fn preempt_row(ctx: &Ctx, wall: Duration, a: &Spin, b: &Spin, steal: Option<u64>) -> Measured {
    let ns = |t: u64| ctx.timer.ticks_to_ns(t as f64);
    let sw = match_gaps(&a.gaps, &b.gaps, a.first.max(b.first));
    let interrupted = a.interrupted || b.interrupted;
    let samples = Samples {
        per_op_ns: sw.cost_ticks.iter().map(|&t| ns(t)).collect(),
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

    #[test]
    fn preemption_is_seen_and_agrees_with_the_kernels_count() {
        let _serial = serial();
        let flag = AtomicBool::new(false);
        let before = osprim_tasks("osprim-spin");
        with_flag(0.2, &flag, |ctx| {
            let m = Preempt.run(ctx, &Params::new()).unwrap();
            assert!(m.samples.per_op_ns.len() >= 5, "a few switches in 150 ms: {}", m.samples.per_op_ns.len());
            assert!(m.samples.per_op_ns.iter().all(|&c| c > 0.0));
            for c in &m.checks {
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
