//! Context switches: `ctx.thread`, `ctx.process`, and `ctx.address_space`, their difference
//! measured paired; and user-level stack switches, `ctx.user` and `ctx.swapcontext`.
//!
//! Seed rows: L4Ka::Pistachio "address space switch"; Go! ORB "switch_stacks" (`ctx.user`,
//! with `ctx.swapcontext` beside it).
//!
//! **User-level switches.** A coroutine on its own stack is resumed from the measuring thread
//! and switches straight back: one round trip, two stack switches, no kernel entry for
//! `ctx.user` ([`sys::stack_switch`]: push the callee-saved registers, swap the stack
//! pointer, pop, return); glibc's `swapcontext` ([`sys::ucontext`]) saves and loads
//! whole contexts and makes an `rt_sigprocmask` system call on each switch.
//! **Timing model:** the sampler's loop around round trips, `⌈n/2⌉` of them for `n`
//! operations, the time scaled to `n`: **one operation is one switch, half a round trip.**
//! **Cold-cache mode** (`cache=cold`, `crate::cold`): `ctx.user` times one switch per sample,
//! exactly the first one after the disturbance: the main side reads the clock and resumes, the
//! coroutine reads it first thing on arrival ([`sys::stack_switch::Coroutine::stamped`]); the
//! switch back is untimed (halving a round trip would average the cold switch with a warm
//! one). Its hot twin likewise. `ctx.swapcontext` times one round trip per sample and halves it.
//! **Validation:** the coroutine ran once per resume (its own counter), and its stack pointer,
//! recorded on its last run, lay inside its stack; `ctx.user` costs clearly less than a bare
//! system call (stays in user space), `ctx.swapcontext` clearly more than a vDSO call (its
//! `rt_sigprocmask`) and no `swapcontext` failed.
//!
//! **Kernel context switches.**
//! Two threads of one process (or two processes) pinned to one CPU hand control back and
//! forth through a futex word in shared memory: each end writes the other's turn, wakes it,
//! and sleeps until its own turn comes. With one CPU, every hand-off is one context switch.
//! **Timing model:** the ping-pong engine's round trip ([`super::pingpong`]), halved: one
//! sample is the time per hand-off (wake the other, block, be switched out, the other switched
//! in). Between processes each switch also changes address space; the difference of the two
//! is the seed's "address space switch".
//! Both ends run as `SCHED_BATCH`: a batch task's wake-up never preempts the task that woke
//! it, so every hand-off is the sender blocking (one voluntary switch). Under `SCHED_OTHER`,
//! EEVDF's wake-up preemption turns about 40 % of them into involuntary switches at the wake;
//! the number of switches, and their cost, is the same.
//!
//! `ctx.address_space` is `ctx.process` − `ctx.thread`, but not from two separate runs: on a
//! virtual machine the cost of a switch moves between levels by more than the difference
//! itself, within minutes. So both peers, a thread and a process, are started together and
//! measured alternately ([`pingpong::run_paired`]); each sample is one process sample minus the
//! thread sample taken beside it, and the row's CI is that of the paired differences. Its
//! breakdown keeps both sides.
//! **Disturbed pairs are dropped by the kernel's account** ([`crate::cpu_time`]): around each
//! block the measuring thread reads its own CPU time and its peer's; on one CPU the two ends
//! are charged the block's whole wall time unless something else ran there (another task, or
//! the hypervisor: stolen time is left out of every task's account). A pair either of whose
//! blocks lost more than a few microseconds that way is dropped, and the row says how many
//! (`observed`: `pairs`, `pairs_dropped`). One third task's slice (milliseconds) in one block of
//! about 100 µs made a pair's difference ±150 µs per switch, and kept the mean of a 100 ns
//! difference below resolution (|x| < 4.3 µs) in every run; clean blocks lose none (the clock
//! reads around them are charged too, about −0.7 µs).
//! **Validation:** the voluntary context switches the kernel counted for both ends
//! (`getrusage(RUSAGE_THREAD)`) equal the hand-offs within 1 %; at most half the pairs were
//! disturbed; plus the ping-pong's own checks (every hand-off numbered, both ends on the CPU).

use super::ipc::{Setup, measured};
use super::pingpong::{self, Plan, Timing};
use super::transport::Transport;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};
use sys;

/// Which ends switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// Two threads of one process.
    Threads,
    /// Two processes.
    Processes,
}

/// A context switch between two threads or two processes on one CPU.
pub struct Switch(pub Ends);

/// The name of the switch-count check.
const SWITCH_CHECK: &str = "one voluntary context switch per hand-off (getrusage, both ends)";

/// Largest relative difference between counted and claimed switches.
const SWITCH_TOLERANCE: f64 = 0.01;

impl Benchmark for Switch {
    fn id(&self) -> &'static str {
        match self.0 {
            Ends::Threads => "ctx.thread",
            Ends::Processes => "ctx.process",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Ends::Threads => "context switch between two threads on one CPU (futex hand-off)",
            Ends::Processes => "context switch between two processes on one CPU (futex hand-off in shared memory)",
        }
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        let mut p = Params::new();
        p.insert("placement".into(), "same_cpu".into());
        vec![p]
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let mut p = params.clone();
        p.insert("peer".into(), if self.0 == Ends::Threads { "thread" } else { "process" }.into());
        let setup = Setup::read(Transport::Futex, ctx, &p)?;
        let plan = Plan { batch: true, ..setup.plan(Timing::RoundTrip { ops_per_round_trip: 2 }) };
        let report = pingpong::run(ctx, &plan)?;
        let handoffs = 2 * report.round_trips;
        let voluntary = report.measurer_switches.voluntary + report.peer_switches.voluntary;
        let involuntary = report.measurer_switches.involuntary + report.peer_switches.involuntary;
        let unreported = report.peer_unreported;
        let mut m = measured(&plan, report, ctx);
        m.checks.insert(
            0,
            if unreported {
                Check::impossible(SWITCH_CHECK, "interrupted: the peer ended before reporting its switches")
            } else {
                switch_check(handoffs, voluntary, involuntary)
            },
        );
        Ok(m)
    }
}

/// `ctx.process` − `ctx.thread`, measured paired.
pub struct AddressSpace;

impl Benchmark for AddressSpace {
    fn id(&self) -> &'static str {
        "ctx.address_space"
    }
    fn about(&self) -> &'static str {
        "address-space switch: a process switch minus a thread switch, measured side by side (paired)"
    }
    fn variants(&self, ctx: &Ctx) -> Vec<Params> {
        Switch(Ends::Threads).variants(ctx)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let plan_for = |peer: &str| -> Result<Plan, NotMeasured> {
            let mut p = params.clone();
            p.insert("peer".into(), peer.into());
            let setup = Setup::read(Transport::Futex, ctx, &p)?;
            Ok(Plan { batch: true, ..setup.plan(Timing::RoundTrip { ops_per_round_trip: 2 }) })
        };
        let (process, thread) = (plan_for("process")?, plan_for("thread")?);
        let (p, t) = pingpong::run_paired(ctx, &process, &thread)?;
        let handoffs = 2 * (p.round_trips + t.round_trips);
        let voluntary = p.measurer_switches.voluntary + p.peer_switches.voluntary + t.peer_switches.voluntary;
        let involuntary = p.measurer_switches.involuntary + p.peer_switches.involuntary + t.peer_switches.involuntary;
        let unreported = p.peer_unreported || t.peer_unreported;
        let seed = ctx.cfg().method == crate::sampler::Method::Seed;
        let pairs = clean(&p, &t);
        let d = pairs.estimate(seed);
        let checks = vec![
            if unreported {
                Check::impossible(SWITCH_CHECK, "interrupted: a peer ended before reporting its switches")
            } else {
                switch_check(handoffs, voluntary, involuntary)
            },
            Check::new(
                "every hand-off came back, to both peers",
                format!("{} and {}", p.round_trips, t.round_trips),
                format!("{} and {}", p.peer_messages, t.peer_messages),
                p.peer_messages == p.round_trips && t.peer_messages == t.round_trips,
            ),
            pairs.check(),
        ];
        let breakdown =
            vec![("process".to_string(), pairs.process.clone()), ("thread".to_string(), pairs.thread.clone())];
        let mut samples = crate::sampler::Samples { per_op_ns: pairs.diffs.clone(), ..p.samples };
        if let Some(c) = &mut samples.counters {
            // Asked for: say why a difference has none.
            *c = model::counters::CounterSamples::none(PAIRED_NOT_COUNTED);
        }
        let mut m = Measured::new(samples, checks);
        if let Some(note) = pairs.below_zero_note(d, seed) {
            m.notes.push(note);
        }
        m.breakdown = breakdown;
        m.params.insert("cpus".into(), serde_json::json!([process.cpus.0, process.cpus.1]));
        m.notes.push(
            "each sample: a process switch minus the thread switch measured beside it (both peers alive, alternating \
             blocks); a pair is dropped when the kernel charged either block's two ends less CPU time than the block \
             lasted (another task, or the hypervisor, ran on their CPU)"
                .into(),
        );
        m.observed.insert("pairs".into(), pairs.taken.into());
        m.observed.insert("pairs_dropped".into(), pairs.dropped.into());
        Ok(m)
    }
}

/// The pairs of `ctx.address_space` that no third party disturbed.
#[derive(Debug, Default, PartialEq)]
struct Pairs {
    /// Process − thread, ns per switch, one per kept pair.
    diffs: Vec<f64>,
    /// The kept pairs' sides.
    process: Vec<f64>,
    thread: Vec<f64>,
    /// Pairs measured, and dropped as disturbed.
    taken: usize,
    dropped: usize,
    /// Whether the kernel's account could be read for every block.
    accounted: bool,
}

/// Most pairs a round may drop before its check fails: beyond it, the machine is too busy for
/// the kept ones to stand for it.
const MOST_DROPPED: f64 = 0.5;

impl Pairs {
    /// The statistic the row reports: the papers' mean under the seed method, the median
    /// otherwise.
    fn estimate(&self, seed: bool) -> f64 {
        let mut v = self.diffs.clone();
        v.sort_by(f64::total_cmp);
        match (v.is_empty(), seed) {
            (true, _) => f64::NAN,
            (false, true) => v.iter().sum::<f64>() / v.len() as f64,
            (false, false) => stats::median(&v),
        }
    }

    /// A round whose process hand-off cost significantly less than its thread hand-off (the 95 %
    /// interval of the pairs' median difference wholly below 0) says so in a note. It is not a
    /// failed check: each round is a fresh worker with its own memory layout, and one layout can
    /// make the thread pair the dearer (−70 ns, [−82, −54], in one round of an idle bare run
    /// whose other rounds read +90 ns); the row's figure pools the rounds, and the seed view says
    /// when that difference cannot be told from 0.
    fn below_zero_note(&self, estimate: f64, seed: bool) -> Option<String> {
        let mut v = self.diffs.clone();
        v.sort_by(f64::total_cmp);
        let (lo, hi) = stats::order::median_ci_order_stat(&v, 0.95);
        let statistic = if seed { "mean" } else { "median" };
        (hi.is_finite() && hi < 0.0).then(|| {
            format!(
                "a round's process hand-off cost less than its thread hand-off: {statistic} {estimate:.1} ns, the \
                 median's interval [{lo:.1}, {hi:.1}] ns (layouts differ between fresh workers; the rounds are pooled)"
            )
        })
    }

    fn check(&self) -> Check {
        let name = "pairs disturbed by a third party dropped (the kernel's CPU-time account of both ends against each \
                    block's wall time)";
        if !self.accounted {
            return Check::impossible(name, "the CPU-time clocks of the ends could not be read: every pair kept");
        }
        Check::new(
            name,
            format!("at most {:.0} % of the pairs", MOST_DROPPED * 100.0),
            format!("{} of {} dropped", self.dropped, self.taken),
            (self.dropped as f64) <= MOST_DROPPED * self.taken as f64,
        )
    }
}

/// The pairs of process sample `i` and thread sample `i` of which neither block was
/// disturbed ([`crate::cpu_time`]); all of them when every one was (so the row keeps its
/// figure and its check fails) or no account could be read.
fn clean(p: &pingpong::Report, t: &pingpong::Report) -> Pairs {
    let (ps, ts) = (&p.samples.per_op_ns, &t.samples.per_op_ns);
    let taken = ps.len().min(ts.len());
    let accounted = p.disturbed.len() == taken && t.disturbed.len() == taken;
    let disturbed: Vec<bool> =
        if accounted { p.disturbed.iter().zip(&t.disturbed).map(|(a, b)| *a || *b).collect() } else { Vec::new() };
    let (mut diffs, mut process, mut thread, mut dropped) = crate::cpu_time::clean_pairs(ps, ts, &disturbed);
    if diffs.is_empty() && taken > 0 {
        (diffs, process, thread, _) = crate::cpu_time::clean_pairs(ps, ts, &[]);
        dropped = taken;
    }
    Pairs { diffs, process, thread, taken, dropped, accounted }
}

/// Why `ctx.address_space` has no counts under `--counters`.
pub const PAIRED_NOT_COUNTED: &str = "not counted: each sample is a process switch minus the thread switch measured \
                                      beside it; the counts of such a difference are not one operation's (ctx.process \
                                      and ctx.thread carry their own, measuring end only)";

/// Voluntary switches counted by the kernel against the hand-offs made.
pub fn switch_check(handoffs: u64, voluntary: u64, involuntary: u64) -> Check {
    let off = (voluntary as f64 - handoffs as f64).abs() / (handoffs.max(1) as f64);
    Check::new(
        SWITCH_CHECK,
        format!("{handoffs} ± 1 %"),
        format!(
            "{voluntary} voluntary ({:+.2} %), {involuntary} involuntary",
            100.0 * (voluntary as f64 / handoffs.max(1) as f64 - 1.0)
        ),
        off <= SWITCH_TOLERANCE,
    )
}

/// A user-level coroutine both `ctx.user` and `ctx.swapcontext` time.
trait UserCoroutine {
    fn resume(&mut self);
    fn runs(&self) -> u64;
    fn last_sp(&self) -> usize;
    fn stack_range(&self) -> std::ops::Range<usize>;
}

impl UserCoroutine for sys::stack_switch::Coroutine {
    fn resume(&mut self) {
        sys::stack_switch::Coroutine::resume(self)
    }
    fn runs(&self) -> u64 {
        sys::stack_switch::Coroutine::runs(self)
    }
    fn last_sp(&self) -> usize {
        sys::stack_switch::Coroutine::last_sp(self)
    }
    fn stack_range(&self) -> std::ops::Range<usize> {
        sys::stack_switch::Coroutine::stack_range(self)
    }
}

impl UserCoroutine for sys::ucontext::UContext {
    fn resume(&mut self) {
        sys::ucontext::UContext::resume(self)
    }
    fn runs(&self) -> u64 {
        sys::ucontext::UContext::runs(self)
    }
    fn last_sp(&self) -> usize {
        sys::ucontext::UContext::last_sp(self)
    }
    fn stack_range(&self) -> std::ops::Range<usize> {
        sys::ucontext::UContext::stack_range(self)
    }
}

/// Times one switch (half a round trip) of `co`; returns the samples and the checks on the
/// coroutine's runs and stack.
fn time_switches<C: UserCoroutine>(ctx: &Ctx, co: &mut C) -> (crate::sampler::Samples, Vec<Check>) {
    let timer = ctx.timer;
    let overhead = timer.overhead_ticks();
    let mut resumes = 0u64;
    if ctx.cold().is_some() {
        // One round trip per sample (two switches), the cold one right after the disturbance.
        let samples = ctx.iter_cold(|before| {
            before.ops(2);
            before.now();
            let t = round_trips(&timer, co, 1);
            resumes += 1;
            Some(crate::sampler::Timed::one(pingpong::scale_ticks(t, overhead, 0.5)))
        });
        let mut samples = samples;
        crate::counters::scope(&mut samples, BOTH_ENDS);
        return (samples, switch_checks(co, resumes));
    }
    let mut samples = ctx.iter_custom(|n| {
        let rounds = n.div_ceil(2);
        // Counted under --counters: the 2 × rounds switches the region ran.
        let t = ctx.count_region(2 * rounds, || round_trips(&timer, co, rounds));
        resumes += rounds;
        pingpong::scale_ticks(t, overhead, n as f64 / (2 * rounds) as f64)
    });
    crate::counters::scope(&mut samples, BOTH_ENDS);
    (samples, switch_checks(co, resumes))
}

/// The note of a user-level switch's counts: both sides run on the measuring thread.
const BOTH_ENDS: &str = "both ends: the coroutine runs on the measuring thread, so the counts cover the whole \
                         switch, there and back";

/// The checks on the coroutine's runs and stack after `resumes` resumes.
fn switch_checks<C: UserCoroutine>(co: &C, resumes: u64) -> Vec<Check> {
    let range = co.stack_range();
    let sp = co.last_sp();
    vec![
        Check::new(
            "the coroutine ran once per resume (its own counter)",
            resumes.to_string(),
            co.runs().to_string(),
            co.runs() == resumes && resumes > 0,
        ),
        Check::new(
            "the coroutine ran on its own stack (its stack pointer inside it)",
            format!("{:#x}..{:#x}", range.start, range.end),
            format!("{sp:#x}"),
            range.contains(&sp),
        ),
    ]
}

/// `rounds` resumes, timed.
#[inline(never)]
fn round_trips<C: UserCoroutine>(timer: &platform::timer::Timer, co: &mut C, rounds: u64) -> u64 {
    let t0 = timer.start();
    for _ in 0..rounds {
        co.resume();
    }
    timer.stop().wrapping_sub(t0)
}

/// A user-level stack switch: a few instructions of assembly, no kernel.
pub struct UserSwitch;

impl Benchmark for UserSwitch {
    fn id(&self) -> &'static str {
        "ctx.user"
    }
    fn about(&self) -> &'static str {
        "user-level stack switch (save registers, swap stack pointer, x86_64 assembly); one switch = half a round trip"
    }
    fn available(&self) -> Result<(), String> {
        if sys::stack_switch::AVAILABLE {
            Ok(())
        } else {
            Err("the stack switch is written in x86_64 assembly only".into())
        }
    }
    /// One round trip per cold sample, halved (module doc).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let cold = ctx.cold().is_some();
        let made =
            if cold { sys::stack_switch::Coroutine::stamped(ctx.timer) } else { sys::stack_switch::Coroutine::new() };
        let mut co = made.map_err(|e| NotMeasured::Failed(format!("coroutine stack (mmap + guard page): {e}")))?;
        let (samples, mut checks) = if cold { time_first_switches(ctx, &mut co) } else { time_switches(ctx, &mut co) };
        // Against a hot system call: the hot twins' median in a cold visit.
        let median = crate::hot_median(&samples);
        let name = "costs clearly less than a bare system call (stays in user space)";
        checks.push(if sys::raw::AVAILABLE {
            let r = ctx.references();
            Check::new(
                name,
                format!("< {:.1} ns (2/3 of bare getppid)", r.syscall_ns * 2.0 / 3.0),
                format!("{median:.1} ns"),
                median < r.syscall_ns * 2.0 / 3.0,
            )
        } else {
            Check::impossible(name, "no bare system call to compare with on this architecture")
        });
        let note = if cold {
            "one switch: main -> coroutine, the first after the disturbance, stamped on arrival; the switch back untimed"
        } else {
            "one switch: half of a main -> coroutine -> main round trip"
        };
        Ok(Measured::new(samples, checks).note(note))
    }
}

/// `ctx.user`'s cold pairs: one switch per sample, main -> coroutine, from the main side's
/// start to the coroutine's stamp on arrival (module doc); the checks of [`switch_checks`] and
/// that every stamp was taken in the coroutine during its sample's switch.
fn time_first_switches(ctx: &Ctx, co: &mut sys::stack_switch::Coroutine) -> (crate::sampler::Samples, Vec<Check>) {
    let timer = ctx.timer;
    let (mut resumes, mut outside) = (0u64, 0u64);
    let mut samples = ctx.iter_cold(|before| {
        // Counted under --counters: the region runs on to the switch back, two switches.
        before.ops(2);
        let runs = co.runs();
        before.now();
        let t0 = timer.start();
        co.resume();
        let stamp = co.stamp();
        let t1 = timer.stop();
        resumes += 1;
        // The stamp is the coroutine's, of this very arrival: after the start, before the
        // main side ran again.
        outside += u64::from(co.runs() != runs + 1 || stamp.wrapping_sub(t0) > t1.wrapping_sub(t0));
        Some(crate::sampler::Timed::one(stamp.wrapping_sub(t0)))
    });
    crate::counters::scope(&mut samples, FIRST_SWITCH_COUNTS);
    let mut checks = switch_checks(co, resumes);
    checks.push(Check::all_ok(
        "each sample is one switch alone: stamped by the coroutine on arrival, after the main side's start and \
         before it ran again",
        outside,
        resumes,
    ));
    (samples, checks)
}

/// The note of a cold `ctx.user` row's counts.
const FIRST_SWITCH_COUNTS: &str = "both ends, on the measuring thread: the counted region runs from the disturbance \
                                   to the switch back, a round trip, counted as two switches (the time is the first \
                                   switch alone)";

/// glibc's `swapcontext` between the main stack and a coroutine.
pub struct SwapContext;

impl Benchmark for SwapContext {
    fn id(&self) -> &'static str {
        "ctx.swapcontext"
    }
    fn about(&self) -> &'static str {
        "glibc swapcontext between two stacks (includes an rt_sigprocmask system call); one switch = half a round trip"
    }
    fn available(&self) -> Result<(), String> {
        if sys::ucontext::AVAILABLE {
            Ok(())
        } else {
            Err("getcontext/makecontext/swapcontext are used with glibc on x86_64 and aarch64 only".into())
        }
    }
    /// One round trip per cold sample, halved (module doc).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let mut co = sys::ucontext::UContext::new()
            .map_err(|e| NotMeasured::Failed(format!("getcontext/makecontext on a fresh stack: {e}")))?;
        let (samples, mut checks) = time_switches(ctx, &mut co);
        let median = quick_median(&samples);
        checks.push(Check::all_ok("no swapcontext call failed", co.failed_swaps(), 2 * co.runs()));
        checks.push(ctx.enters_kernel_check(median));
        Ok(Measured::new(samples, checks)
            .note("one switch: half of a main -> coroutine -> main round trip; each swapcontext calls rt_sigprocmask"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn user_switches_run_the_coroutine_on_its_stack() {
        with_ctx(0.05, |ctx| {
            for b in [&UserSwitch as &dyn Benchmark, &SwapContext] {
                if b.available().is_err() {
                    continue;
                }
                let m = b.run(ctx, &Params::new()).unwrap_or_else(|e| panic!("{}: {e:?}", b.id()));
                assert!(!m.samples.per_op_ns.is_empty(), "{}", b.id());
                assert_eq!(m.checks[0].ok, Some(true), "{}: {:?}", b.id(), m.checks[0]);
                assert_eq!(m.checks[1].ok, Some(true), "{}: {:?}", b.id(), m.checks[1]);
            }
        });
    }

    /// A task of this test's own on the measuring CPU, running 300 µs every 3 ms: a third party
    /// the kernel's account sees.
    struct Intruder {
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Intruder {
        fn start(cpu: usize) -> Intruder {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let s = std::sync::Arc::clone(&stop);
            let thread = std::thread::spawn(move || {
                let _ = sys::cpu::pin_current_thread(cpu);
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = std::time::Instant::now();
                    while t.elapsed() < std::time::Duration::from_micros(300) {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(3));
                }
            });
            Intruder { stop, thread: Some(thread) }
        }
    }

    impl Drop for Intruder {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    #[test]
    fn address_space_pairs_disturbed_by_another_task_are_dropped() {
        let _serial = crate::testing::serial();
        with_ctx(0.3, |ctx| {
            let params = AddressSpace.variants(ctx).remove(0);
            let cpu = ctx.cpu;
            let intruder = Intruder::start(cpu);
            let m = AddressSpace.run(ctx, &params).unwrap_or_else(|e| panic!("{e:?}"));
            drop(intruder);
            let check = m.checks.iter().find(|c| c.name.starts_with("pairs disturbed")).expect("a disturbance check");
            assert!(check.ok.is_some(), "the kernel's account was read: {check:?}");
            let taken = m.observed["pairs"].as_u64().expect("pairs");
            let dropped = m.observed["pairs_dropped"].as_u64().expect("pairs dropped");
            assert!(dropped > 0, "a task running 10 % of the CPU's time disturbed some blocks: {check:?}");
            assert!(dropped < taken, "{check:?}");
            assert_eq!(m.samples.per_op_ns.len() as u64, taken - dropped, "the dropped pairs are not samples");
            for (i, d) in m.samples.per_op_ns.iter().enumerate() {
                assert!((d - (m.breakdown[0].1[i] - m.breakdown[1].1[i])).abs() < 1e-6, "sample = process − thread");
            }
        });
    }

    #[test]
    fn undisturbed_pairs_keep_every_difference_and_all_disturbed_keep_all_but_fail() {
        let report = |v: &[f64], disturbed: &[bool]| pingpong::Report {
            samples: crate::sampler::Samples { per_op_ns: v.to_vec(), ..Default::default() },
            disturbed: disturbed.to_vec(),
            ..Default::default()
        };
        let p = report(&[100.0, 90_000.0, 101.0], &[false, true, false]);
        let t = report(&[10.0, 11.0, 12.0], &[false, false, false]);
        let pairs = clean(&p, &t);
        assert_eq!((pairs.diffs.clone(), pairs.dropped, pairs.taken), (vec![90.0, 89.0], 1, 3));
        assert_eq!(pairs.estimate(true), 89.5, "the mean of the kept pairs");
        assert_eq!(pairs.check().ok, Some(true));
        let all = clean(&report(&[1.0, 2.0], &[true, true]), &report(&[0.0, 0.0], &[false, true]));
        assert_eq!((all.diffs.len(), all.dropped), (2, 2));
        assert_eq!(all.check().ok, Some(false));
        let unread = clean(&report(&[1.0, 2.0], &[]), &report(&[0.0, 0.0], &[]));
        assert_eq!((unread.diffs.len(), unread.dropped, unread.check().ok), (2, 0, None));
    }

    #[test]
    fn a_round_below_zero_says_so_only_when_significantly_below() {
        let report = |v: &[f64]| pingpong::Report {
            samples: crate::sampler::Samples { per_op_ns: v.to_vec(), ..Default::default() },
            ..Default::default()
        };
        let pairs = |d: &[f64]| {
            clean(&report(&d.iter().map(|x| 2000.0 + x).collect::<Vec<_>>()), &report(&vec![2000.0; d.len()]))
        };
        // A noisy round around +90 ns whose median reads below 0: nothing to say.
        let noisy: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { -300.0 + i as f64 } else { 260.0 - i as f64 }).collect();
        let p = pairs(&noisy);
        assert!(p.estimate(false) < 0.0);
        assert_eq!(p.below_zero_note(p.estimate(false), false), None);
        // Every pair below 0: the round says so.
        let below: Vec<f64> = (0..40).map(|i| -100.0 - i as f64).collect();
        let p = pairs(&below);
        assert!(p.below_zero_note(p.estimate(false), false).is_some_and(|n| n.contains("cost less")));
    }

    #[test]
    fn a_cold_user_switch_is_the_first_switch_alone_stamped_by_the_coroutine() {
        let _s = crate::testing::serial();
        if UserSwitch.available().is_err() {
            return;
        }
        with_ctx(0.02, |ctx| {
            ctx.set_cold(true).expect("the stream buffer");
            let p = crate::cold::with_cache(&Params::new(), crate::cold::COLD);
            let m = crate::testing::visit(ctx, &UserSwitch, &p).expect("measured");
            ctx.set_cold(false).unwrap();
            assert!(!m.samples.per_op_ns.is_empty() && m.samples.per_op_ns.len() == m.samples.hot_twin_ns.len());
            let alone = m.checks.iter().find(|c| c.name.starts_with("each sample is one switch alone"));
            let alone = alone.unwrap_or_else(|| panic!("{:?}", m.checks));
            assert_eq!(alone.ok, Some(true), "{alone:?}");
            assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
            assert_eq!(m.checks[1].ok, Some(true), "{:?}", m.checks[1]);
            assert!(m.notes.iter().any(|n| n.contains("stamped on arrival")), "{:?}", m.notes);
        });
    }

    #[test]
    fn switch_counts_within_one_percent_pass() {
        assert_eq!(switch_check(10_000, 10_050, 3).ok, Some(true));
        assert_eq!(switch_check(10_000, 9_000, 1_000).ok, Some(false));
        assert_eq!(switch_check(0, 0, 0).ok, Some(true));
    }
}
