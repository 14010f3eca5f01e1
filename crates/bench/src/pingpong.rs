//! The ping-pong engine behind `ctx.*`, `ipc.*` and `xfer.*`: a measuring thread and a peer
//! (a thread of this process, or a forked process) pass numbered messages back and forth
//! over a [`Transport`], each end pinned to its CPU.
//!
//! **Timing model (round trip).** `start`, then `n` times: send message `k`, receive the echo,
//! compare its number with `k`; then `stop`. The ticks of one sample cover `n` round trips.
//! When a round trip counts as several operations (2: half a round trip each), the sampler's
//! `n` operations are `⌈n / ops⌉` round trips, and the ticks handed back are scaled to `n`
//! operations by [`scale_ticks`]: `(t − o) × scale + o`, so that the sampler's subtraction of
//! one overhead `o` leaves `(t − o) × scale` — one overhead per timed region, whatever the
//! scale. (Scaling `t` alone would subtract the overhead once per *operation* when the seed
//! method asks for one operation: half a round trip is `t / 2`, minus a whole `o`.)
//! **Timing model (one way).** The sender reads the counter just before each send and puts
//! the stamp in shared memory; the receiver reads it just after the message arrives. Each
//! round trip so gives two one-way times, one per direction; a sample is their mean over `n`
//! round trips, with one timer overhead subtracted per message: each one-way time spans one
//! `start` (the sender's stamp) and one `stop` (the receiver's), the cost of one empty timed
//! region, and [`one_way_ticks`] hands the sampler half the sum as `n` timed regions.
//!
//! **Checks.** Every message carries its sequence number; the echo must bring back the number
//! sent, and the peer checks that numbers arrive one by one. The payload of the last message
//! of every sample is compared byte by byte outside the clock. Both ends count what they
//! handled, read their context switches (`getrusage(RUSAGE_THREAD)`) and the CPU they ran on.
//!
//! **Paired runs** ([`run_paired`]): two sessions alive at once, their blocks alternating
//! sample by sample; around each block the measuring thread reads its own CPU time and that
//! block's peer's ([`crate::cpu_time`]), so each sample says whether something else ran on the
//! CPU during it ([`Report::disturbed`]).
//!
//! **Peers always end.** After sampling the peer is told to stop (a message numbered
//! [`STOP`]), then joined or reaped; a forked peer is killed if it does not exit within the
//! peer deadline, and always killed and reaped when dropped (an error, Ctrl-C). A peer that
//! fails records why in shared memory and keeps waking the measuring thread (`SIGCHLD` by
//! `tgkill`) until it is told to stop or is killed; a peer process that dies wakes it by its
//! own `SIGCHLD`, and a watchdog thread keeps waking it until it has noticed ([`DeathWatch`]).
//!
//! **Nothing waits forever.** A stopped peer, or a message lost on the way (UDP drops), would
//! leave the measuring thread blocked in a receive for ever, and Ctrl-C, whose flag the
//! sampler reads between samples only, would never be acted on. So every session runs beside
//! a watchdog thread ([`Watch`]) that looks every [`WATCH_EVERY`] at two things: the
//! interrupt flag, and how long the routine call in progress (one sample, or a warm-up batch,
//! or the stop hand-shake) has lasted. When the flag is up, or a call has outlasted
//! [`PEER_DEADLINE`], it gives the session up: it sets the shared give-up word, then wakes the
//! measuring thread (`SIGCHLD` by `tgkill`, whose handler has no `SA_RESTART`) at every look
//! until the session ends. The woken thread's blocked call returns `EINTR` — whatever the
//! transport (see `transport`'s "Waits that end") — and on that retry path, which a message
//! that arrives never takes, it finds the verdict:
//! - **interrupted:** the sample in progress is dropped, the samples already taken are kept
//!   (`StopReason::Interrupted`); the peer is asked to stop and given [`STOP_GRACE`], then
//!   killed. A peer that could not report its counts leaves the echo check uncheckable.
//! - **overdue:** the row fails with "the peer did not answer within …"; a peer process is
//!   killed at once (a stopped one too: `SIGKILL` needs no co-operation), a peer thread is
//!   woken until it sees the stop request.
//!
//! The timed region is unchanged: the watchdog is armed and disarmed by two stores to an
//! atomic outside it, and the blocking calls inside it are the same plain calls as before
//! (no `poll`, no timeout argument, no non-blocking retries).

use super::transport::{Endpoint, Msg, STOP, SleepCounts, Transport, is_retry};
use super::{Ctx, NotMeasured};
use crate::cpu_time;
use crate::peer::{Ended, Peer, StartStep};
use crate::peer::{PEER_DEADLINE, PeerKind};
use crate::sampler::{Samples, StopReason, Timed, overhead_of};
use platform::timer::Timer;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64};
use std::time::{Duration, Instant};
use sys::process::{self, WakeOnPeerEnd};
pub use sys::switches::Switches;
use sys::{cpu, shm::SharedMem};

/// Where the two ends run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Both ends pinned to one CPU.
    SameCpu,
    /// The ends pinned to two different CPUs.
    CrossCpu,
}

impl Placement {
    /// The parameter value.
    pub fn name(self) -> &'static str {
        match self {
            Placement::SameCpu => "same_cpu",
            Placement::CrossCpu => "cross_cpu",
        }
    }
}

/// What a sample measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Round trips, divided by this per operation (2: half a round trip).
    RoundTrip { ops_per_round_trip: u64 },
    /// One-way times from stamps.
    OneWay,
}

/// One ping-pong measurement.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The mechanism.
    pub transport: Transport,
    /// Thread or process peer.
    pub peer: PeerKind,
    /// The CPUs: (measuring end, peer).
    pub cpus: (usize, usize),
    /// Payload bytes per message (0 for an empty message).
    pub payload: usize,
    /// What a sample measures.
    pub timing: Timing,
    /// Run both ends as `SCHED_BATCH`, whose wake-ups never preempt the waker: every hand-off
    /// then blocks the sender first (a voluntary switch) instead of sometimes preempting it.
    pub batch: bool,
    /// Make the peer misbehave from this message on (self-tests of the checks); `None` in
    /// every benchmark.
    pub inject: Option<Inject>,
}

/// A peer's deliberate misbehaviour, to prove the checks catch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// Answer message `k` with message `k + 1`, as if one were lost.
    Lose(u32),
    /// Answer message `k` twice.
    Duplicate(u32),
    /// Flip a payload byte of every answer from message `k` on.
    Corrupt(u32),
    /// Answer nothing from message `k` on, as if it were lost or the peer stopped.
    Stall(u32),
}

/// What a ping-pong measured, and what each end saw.
#[derive(Debug, Default)]
pub struct Report {
    /// The samples.
    pub samples: Samples,
    /// For one-way timing: the two directions, ns per message, per sample.
    pub breakdown: Vec<(String, Vec<f64>)>,
    /// Round trips the measuring end completed (warm-up included).
    pub round_trips: u64,
    /// Messages the peer echoed.
    pub peer_messages: u64,
    /// Payloads compared byte by byte (the last message of each sample).
    pub payloads_checked: u64,
    /// Context switches of the measuring thread while it ran.
    pub measurer_switches: Switches,
    /// Context switches of the peer while it ran.
    pub peer_switches: Switches,
    /// CPUs each end was on at the end: (measuring end, peer).
    pub ran_on: (Option<usize>, Option<usize>),
    /// One-way: the smallest one-way time seen, in ticks (negative: clocks disagree).
    pub min_one_way_ticks: i64,
    /// One-way: samples whose one-way times added up to more than their round trips.
    pub one_way_over_round_trip: u64,
    /// The run was interrupted and the peer ended before reporting its counts (they are 0).
    pub peer_unreported: bool,
    /// Paired runs ([`run_paired`]) only: per sample, whether its block was disturbed by the
    /// kernel's account ([`crate::cpu_time`]: the two ends were charged less CPU time than the
    /// block lasted, so something else ran on their CPU); empty where it could not be read.
    pub disturbed: Vec<bool>,
    /// Paired runs only: per sample, the time of its block the two ends were not charged
    /// for, ns (negative: none); aligned with `disturbed`.
    pub off_cpu_ns: Vec<f64>,
    /// The measuring end's futex waits, waits ended by their timeout, and wakes, warm-up
    /// included, for a transport that counts them (`shm_ring`); a counter increment each in
    /// the timed path, read after it.
    pub sleeps: Option<SleepCounts>,
    /// The measuring end's ring's own account, warm-up included, for the io_uring transports;
    /// read after sampling.
    pub uring: Option<sys::uring::Counts>,
    /// The peer's ring's account, as the peer reported it when it was done (the io_uring
    /// transports; `None` when it could not report).
    pub peer_uring: Option<sys::uring::Counts>,
}

// Shared slots.
const WORD_TO_PEER: usize = 0;
const WORD_TO_MEASURER: usize = 1;
const STAMP_OUT: usize = 2;
const STAMP_BACK: usize = 3;
const OUT_SUM: usize = 4;
const PEER_STATE: usize = 5;
const PEER_ERR_A: usize = 6;
const PEER_ERR_B: usize = 7;
const PEER_COUNT: usize = 8;
const PEER_VOL: usize = 9;
const PEER_INVOL: usize = 10;
const STOP_ASKED: usize = 11;
const PEER_TID: usize = 12;
const PEER_CPU: usize = 13;
const OUT_MIN: usize = 14;
/// Non-zero when the session is given up: half-moved messages are abandoned.
const GIVE_UP: usize = 15;
/// The peer's ring's account (the io_uring transports): submitted, completed, received, CQ
/// overflow, dropped entries; written when it is done.
const PEER_RING: usize = 16;
const PEER_RING_SLOTS: usize = 5;
const SLOTS: usize = PEER_RING + PEER_RING_SLOTS;

// Peer states (0: starting).
const READY: u64 = 1;
const DONE: u64 = 2;
const FAILED: u64 = 3;

// Peer failure kinds (in PEER_ERR_A's high half), so a forked peer reports without allocating.
const ERR_PIN: u64 = 1;
const ERR_IO: u64 = 2;
const ERR_SEQ: u64 = 3;
const ERR_POLICY: u64 = 4;

/// How often the watchdog looks at the interrupt flag and the call in progress: an interrupt
/// ends a blocked sample within about this long.
pub const WATCH_EVERY: Duration = Duration::from_millis(50);

/// How long a peer asked to stop after an interruption (or a peer thread, after a deadline)
/// has to end before it is killed (or left).
pub const STOP_GRACE: Duration = Duration::from_millis(300);

/// The ticks to hand the sampler for one timed region of `ticks` that stands for `scale` ×
/// the operations it ran: `(ticks − overhead) × scale + overhead`, rounded, never negative.
/// The sampler subtracts `overhead` once, leaving `(ticks − overhead) × scale`: one overhead
/// per timed region, whatever the scale.
pub fn scale_ticks(ticks: u64, overhead: f64, scale: f64) -> u64 {
    ((ticks as f64 - overhead) * scale + overhead).round().max(0.0) as u64
}

/// What to hand the sampler for `n` round trips whose `2n` one-way times (each stamped by one
/// `start` and one `stop`, so each carrying one overhead) add up to `sum`: half the sum, as
/// `n` timed regions, so that the sampler's subtraction of one overhead per region and its
/// division by `n` leave the mean one-way time less one overhead per message. Rounded, never
/// negative.
pub fn one_way_ticks(sum: i64, n: u64) -> Timed {
    Timed::regions((sum as f64 / 2.0).round().max(0.0) as u64, n)
}

/// Runs `plan`, sampling through `ctx`. The measuring thread is moved to `plan.cpus.0` for the
/// duration and put back on `ctx.cpu` afterwards.
pub fn run(ctx: &Ctx, plan: &Plan) -> Result<Report, NotMeasured> {
    let _back = prepare_thread(ctx, plan)?;
    let _wake = WakeOnPeerEnd::install().map_err(|e| failed("install the SIGCHLD handler", e))?;
    watched(ctx, |watch| {
        let mut session = Session::start(ctx, plan, watch)?;
        let measured = session.measure(ctx);
        session.finish(measured)
    })
}

/// Runs two plans on the same CPUs with both peers alive, alternating: every sample of `a`
/// is followed (or, every other time, preceded) by one of `b`, so a slow drift or a level
/// shift of the machine touches both alike and their per-sample difference cancels it. The
/// measuring thread's context switches are all in the first report.
pub fn run_paired(ctx: &Ctx, a: &Plan, b: &Plan) -> Result<(Report, Report), NotMeasured> {
    let _back = prepare_thread(ctx, a)?;
    let _wake = WakeOnPeerEnd::install().map_err(|e| failed("install the SIGCHLD handler", e))?;
    watched(ctx, |watch| {
        let mut first = Session::start(ctx, a, watch)?;
        let mut second = Session::start(ctx, b, watch)?;
        let (ra, rb) = match measure_paired(ctx, &mut first, &mut second) {
            Ok((ra, rb)) => (Ok(ra), Ok(rb)),
            Err(e) => (Err(e.clone()), Err(e)),
        };
        let ra = first.finish(ra);
        let rb = second.finish(rb);
        Ok((ra?, rb?))
    })
}

/// Runs `f` with a [`Watch`] over its sessions: a scoped watchdog thread that reads the
/// interrupt flag and the deadline, stopped and joined when `f` returns.
fn watched<R>(ctx: &Ctx, f: impl FnOnce(&Arc<Watch>) -> Result<R, NotMeasured>) -> Result<R, NotMeasured> {
    let watch = Arc::new(Watch::new(PEER_DEADLINE.for_round(ctx.cfg().budget_s)));
    let interrupt = ctx.interrupt_flag();
    std::thread::scope(|scope| {
        let w = Arc::clone(&watch);
        let thread = std::thread::Builder::new()
            .name("osprim-watchdog".into())
            .spawn_scoped(scope, move || w.keep_watch(interrupt))
            .map_err(|e| failed("start the watchdog thread", e))?;
        let r = f(&watch);
        watch.done.store(true, Release);
        thread.thread().unpark();
        r
    })
}

/// What the watchdog decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Nothing: go on.
    Carry,
    /// Ctrl-C (or SIGTERM…): keep the samples taken, stop promptly.
    Interrupted,
    /// A call outlasted the deadline: the peer is stopped or a message was lost.
    Overdue,
}

/// The watchdog's state, shared by the measuring thread and the watchdog thread (see the
/// module doc, "Nothing waits forever").
struct Watch {
    /// The number of the call in progress (0: none). Written by the measuring thread outside
    /// the timed region, read by the watchdog.
    busy: AtomicU64,
    /// Calls begun so far.
    calls: AtomicU64,
    /// 0 carry on, 1 interrupted, 2 overdue.
    verdict: AtomicU8,
    /// Set when the sessions are over: the watchdog ends.
    done: AtomicBool,
    /// The shared memory of each session, whose give-up word a verdict sets.
    sessions: Mutex<Vec<Arc<SharedMem>>>,
    /// The measuring thread: (process, thread).
    measurer: (i32, i32),
    /// How long one call may last.
    deadline: Duration,
}

impl Watch {
    fn new(deadline: Duration) -> Watch {
        Watch {
            busy: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            verdict: AtomicU8::new(0),
            done: AtomicBool::new(false),
            sessions: Mutex::new(Vec::new()),
            measurer: (std::process::id() as i32, process::gettid()),
            deadline,
        }
    }

    /// A call on the peer begins: the deadline runs from now.
    #[inline(always)]
    fn begin(&self) {
        let n = self.calls.fetch_add(1, Relaxed) + 1;
        self.busy.store(n, Release);
    }

    /// The call ended.
    #[inline(always)]
    fn end(&self) {
        self.busy.store(0, Release);
    }

    fn verdict(&self) -> Verdict {
        match self.verdict.load(Acquire) {
            0 => Verdict::Carry,
            1 => Verdict::Interrupted,
            _ => Verdict::Overdue,
        }
    }

    fn add(&self, shared: &Arc<SharedMem>) {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::clone(shared));
    }

    /// The watchdog thread's life: look every [`WATCH_EVERY`]; once a verdict is reached, give
    /// every session up and keep waking the measuring thread until the sessions are over.
    fn keep_watch(&self, interrupt: &AtomicBool) {
        // The SIGCHLD of a dying peer is for the measuring thread, not this one.
        let _ = nix::sys::signal::pthread_sigmask(
            nix::sys::signal::SigmaskHow::SIG_BLOCK,
            Some(&nix::sys::signal::SigSet::all()),
            None,
        );
        let mut seen: (u64, Instant) = (0, Instant::now());
        while !self.done.load(Acquire) {
            std::thread::park_timeout(WATCH_EVERY);
            if self.done.load(Acquire) {
                break;
            }
            if self.verdict() == Verdict::Carry {
                let busy = self.busy.load(Acquire);
                let verdict = if interrupt.load(Relaxed) {
                    1
                } else if busy != 0 && busy == seen.0 && seen.1.elapsed() > self.deadline {
                    2
                } else {
                    if busy != seen.0 {
                        seen = (busy, Instant::now());
                    }
                    0
                };
                if verdict == 0 {
                    continue;
                }
                for s in self.sessions.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    s.u64(GIVE_UP).store(1, Release);
                }
                self.verdict.store(verdict, Release);
            }
            // Again at every look: one signal may land just before the thread blocks.
            process::wake_thread(self.measurer.0, self.measurer.1);
        }
    }
}

fn failed(what: &str, e: std::io::Error) -> NotMeasured {
    NotMeasured::Failed(format!("{what}: {e}"))
}

/// Pins the measuring thread for `plan` and sets its policy; the guard puts both back.
fn prepare_thread(ctx: &Ctx, plan: &Plan) -> Result<RestoreThread, NotMeasured> {
    let back = RestoreThread { cpu: ctx.cpu, policy: process::sched_policy() };
    if plan.batch {
        process::set_sched_policy(libc::SCHED_BATCH).map_err(|e| failed("set SCHED_BATCH", e))?;
    }
    cpu::pin_current_thread(plan.cpus.0)
        .map_err(|e| NotMeasured::Skipped(format!("cannot pin to CPU {}: {e}", plan.cpus.0)))?;
    Ok(back)
}

/// Samples of `a`, with one sample of `b` taken beside each.
fn measure_paired(ctx: &Ctx, a: &mut Session, b: &mut Session) -> Result<(Report, Report), NotMeasured> {
    let before = Switches::now();
    let mut fault: Option<(Fault, Plan)> = None;
    let mut b_ns = Vec::new();
    let mut calls = 0u64;
    // The kernel's account of each block (see `cpu_time`): the measuring thread and the
    // block's own peer, on one CPU, are charged its whole time unless something else ran.
    let (tasks_a, tasks_b) = ([cpu_time::Task::Me, a.peer_task()], [cpu_time::Task::Me, b.peer_task()]);
    let (mut account_a, mut account_b) = (Vec::new(), Vec::new());
    let ops = |p: &Plan| match p.timing {
        Timing::RoundTrip { ops_per_round_trip } => ops_per_round_trip,
        Timing::OneWay => 1,
    };
    let (per_a, per_b) = (ops(&a.plan), ops(&b.plan));
    let watch = Arc::clone(&a.watch);
    let mut samples = ctx.iter_fallible(|n| {
        calls += 1;
        if let Some(f) = a.abandoned() {
            fault = Some((f, a.plan));
            return None;
        }
        watch.begin();
        // Each block between two readings of its tasks' CPU time (outside the clock).
        let accounted = |s: &mut Session, tasks: &[cpu_time::Task], per: u64| {
            let c0 = cpu_time::sum_ns(tasks);
            let r = s.round_trips(n.div_ceil(per), &ctx.timer);
            let c1 = cpu_time::sum_ns(tasks);
            (r, c0.zip(c1).map(|(c0, c1)| c1.saturating_sub(c0)))
        };
        let ((ra, ca), (rb, cb)) = if calls.is_multiple_of(2) {
            let rb = accounted(b, &tasks_b, per_b);
            (accounted(a, &tasks_a, per_a), rb)
        } else {
            let ra = accounted(a, &tasks_a, per_a);
            (ra, accounted(b, &tasks_b, per_b))
        };
        watch.end();
        match (ra, rb) {
            (Ok(ta), Ok(tb)) => {
                let overhead = ctx.timer.overhead_ticks();
                let ops = |per: u64| (n.div_ceil(per) * per) as f64;
                account_a.push(ca.map(|c| (ctx.timer.ticks_to_ns(ta as f64), c as f64)));
                account_b.push(cb.map(|c| (ctx.timer.ticks_to_ns(tb as f64), c as f64)));
                b_ns.push(ctx.timer.ticks_to_ns(tb as f64 - overhead) / ops(per_b));
                Some(scale_ticks(ta, overhead, n as f64 / ops(per_a)))
            }
            (Err(f), _) => {
                fault = Some((f, a.plan));
                None
            }
            (_, Err(f)) => {
                fault = Some((f, b.plan));
                None
            }
        }
    });
    match fault {
        Some((Fault::Interrupted, _)) => samples.stop = Some(StopReason::Interrupted),
        Some((f, plan)) => return Err(f.into_not_measured(&plan, samples.per_op_ns.len())),
        None => {}
    }
    let kept = samples.per_op_ns.len();
    b_ns.drain(..b_ns.len().saturating_sub(kept));
    let b_samples = Samples { per_op_ns: b_ns, ..samples.clone() };
    let (disturbed_a, off_a) = accounts(account_a, kept);
    let (disturbed_b, off_b) = accounts(account_b, kept);
    let report_a = Report {
        samples,
        measurer_switches: Switches::now().since(before),
        payloads_checked: 0,
        disturbed: disturbed_a,
        off_cpu_ns: off_a,
        ..Report::default()
    };
    let report_b = Report { samples: b_samples, disturbed: disturbed_b, off_cpu_ns: off_b, ..Report::default() };
    Ok((report_a, report_b))
}

/// The last `kept` blocks' accounts (wall ns, CPU ns) as (disturbed, off-CPU ns) per sample;
/// both empty if any of them could not be read.
fn accounts(all: Vec<Option<(f64, f64)>>, kept: usize) -> (Vec<bool>, Vec<f64>) {
    let last = &all[all.len().saturating_sub(kept)..];
    if last.iter().any(Option::is_none) {
        return (Vec::new(), Vec::new());
    }
    last.iter().flatten().map(|&(wall, cpu)| (cpu_time::disturbed(wall, cpu), cpu_time::off_cpu_ns(wall, cpu))).unzip()
}

/// The transport could not be opened: the kernel's refusal is a reason to skip, anything else
/// a failure.
fn refused(t: Transport, bytes: usize, e: std::io::Error) -> NotMeasured {
    let why = format!("{} refused ({bytes}-byte messages): {e}", t.name());
    match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES | libc::ENOSYS | libc::EINVAL | libc::EMFILE | libc::ENOSPC | libc::ENOMEM) => {
            NotMeasured::Skipped(why)
        }
        _ => NotMeasured::Failed(why),
    }
}

/// Puts the measuring thread back on its CPU and scheduling policy.
struct RestoreThread {
    cpu: usize,
    policy: libc::c_int,
}

impl Drop for RestoreThread {
    fn drop(&mut self) {
        let _ = cpu::pin_current_thread(self.cpu);
        if self.policy >= 0 {
            let _ = process::set_sched_policy(self.policy);
        }
    }
}

/// The measuring side of one ping-pong, with its peer alive.
struct Session {
    plan: Plan,
    watch: Arc<Watch>,
    shared: Arc<SharedMem>,
    peer: Peer,
    end: Endpoint,
    out: Msg,
    inb: Msg,
    seq: u32,
}

impl Session {
    /// Opens the transport, starts the peer and waits until it is ready.
    fn start(ctx: &Ctx, plan: &Plan, watch: &Arc<Watch>) -> Result<Session, NotMeasured> {
        let shared = Arc::new(SharedMem::new(SLOTS).map_err(|e| failed("shared memory", e))?);
        shared.u64(OUT_MIN).store(i64::MAX as u64, Relaxed);
        watch.add(&shared);
        let bytes = plan.transport.message_bytes(plan.payload);
        let (end, mut theirs) = plan
            .transport
            .open(bytes, &shared, (WORD_TO_PEER, WORD_TO_MEASURER), GIVE_UP)
            .map_err(|e| refused(plan.transport, bytes, e))?;
        let peer = PeerSide {
            shared: shared.clone(),
            msg: Msg::new(bytes),
            timer: ctx.timer,
            stamps: plan.timing == Timing::OneWay,
            batch: plan.batch,
            inject: plan.inject,
            cpu: plan.cpus.1,
            measurer: (std::process::id() as i32, process::gettid()),
        };
        // `serve` works on buffers, descriptors and shared memory made before the start and
        // reports errors as numbers (no lock, stdio or allocation while serving).
        let peer = Peer::start(plan.peer, "osprim-peer", Some(process::gettid()), move || peer.serve(&mut theirs))
            .map_err(|(step, e)| match step {
                StartStep::Thread => failed("spawn the peer thread", e),
                StartStep::Fork => failed("fork the peer", e),
                StartStep::Watch => failed("start the peer's watchdog", e),
            })?;
        let session = Session {
            plan: *plan,
            watch: Arc::clone(watch),
            shared,
            peer,
            end,
            out: Msg::new(bytes),
            inb: Msg::new(bytes),
            seq: 0,
        };
        session.wait_ready()?;
        Ok(session)
    }

    /// Stops the peer and completes `measured` with what the peer saw.
    fn finish(mut self, measured: Result<Report, NotMeasured>) -> Result<Report, NotMeasured> {
        let round_trips = u64::from(self.seq);
        let ended = self.stop();
        let mut report = measured?;
        let shared = &self.shared;
        if self.watch.verdict() == Verdict::Interrupted {
            // The samples taken stand; the peer's counts are there if it could report them.
            report.peer_unreported = shared.u64(PEER_STATE).load(Acquire) != DONE;
        } else {
            ended?;
        }
        report.round_trips = round_trips;
        report.sleeps = self.end.sleep_counts();
        report.uring = self.end.ring_counts();
        if report.uring.is_some() && shared.u64(PEER_STATE).load(Acquire) == DONE {
            let slot = |i: usize| shared.u64(PEER_RING + i).load(Acquire);
            report.peer_uring = Some(sys::uring::Counts {
                submitted: slot(0),
                completed: slot(1),
                received: slot(2),
                cq_overflow: slot(3) as u32,
                sq_dropped: slot(4) as u32,
            });
        }
        report.peer_messages = shared.u64(PEER_COUNT).load(Acquire);
        report.peer_switches = Switches {
            voluntary: shared.u64(PEER_VOL).load(Acquire),
            involuntary: shared.u64(PEER_INVOL).load(Acquire),
        };
        let peer_cpu = shared.u64(PEER_CPU).load(Acquire);
        report.ran_on = (cpu::current_cpu(), (peer_cpu > 0).then(|| peer_cpu as usize - 1));
        report.min_one_way_ticks = report.min_one_way_ticks.min(shared.u64(OUT_MIN).load(Acquire) as i64);
        Ok(report)
    }

    /// The peer as a task whose CPU time can be read: its thread, or its process.
    fn peer_task(&self) -> cpu_time::Task {
        if self.peer.is_process() {
            cpu_time::Task::Process(self.peer.pid())
        } else {
            cpu_time::Task::Thread(self.shared.u64(PEER_TID).load(Acquire) as i32)
        }
    }

    /// Why the peer can no longer answer, if it cannot.
    fn peer_gone(&self) -> Option<String> {
        if self.shared.u64(PEER_STATE).load(Acquire) == FAILED {
            return Some(peer_failure(&self.shared));
        }
        match self.peer.has_ended() {
            true if self.peer.is_process() => Some("the peer process ended unexpectedly".into()),
            true => Some("the peer thread ended unexpectedly".into()),
            false => None,
        }
    }

    /// Waits until the peer is ready; after an interruption, returns at once (sampling then
    /// sees the interrupt before its first sample).
    fn wait_ready(&self) -> Result<(), NotMeasured> {
        let began = Instant::now();
        let deadline = self.watch.deadline;
        loop {
            if self.watch.verdict() == Verdict::Interrupted {
                return Ok(());
            }
            match self.shared.u64(PEER_STATE).load(Acquire) {
                READY => return Ok(()),
                FAILED => return Err(NotMeasured::Failed(peer_failure(&self.shared))),
                _ => {}
            }
            if let Some(why) = self.peer_gone() {
                return Err(NotMeasured::Failed(why));
            }
            if began.elapsed() > deadline {
                return Err(NotMeasured::Failed(format!(
                    "the peer did not start within {:.1} s (stopped, or starved of CPU)",
                    deadline.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    fn measure(&mut self, ctx: &Ctx) -> Result<Report, NotMeasured> {
        let plan = self.plan;
        let before = Switches::now();
        let mut report = Report { min_one_way_ticks: i64::MAX, ..Report::default() };
        let mut fault: Option<Fault> = None;
        let (mut out_dir, mut back_dir) = (Vec::new(), Vec::new());
        let overhead = ctx.timer.overhead_ticks();
        let watch = Arc::clone(&self.watch);
        if ctx.cold().is_some() {
            return self.measure_cold(ctx, report, before);
        }
        let mut samples = ctx.iter_regions_fallible(|n| {
            if let Some(f) = self.abandoned() {
                fault = Some(f);
                return None;
            }
            watch.begin();
            // Counted under --counters (this thread's side only): the operations the region
            // ran, as its time is divided.
            let r = match plan.timing {
                Timing::RoundTrip { ops_per_round_trip } => {
                    let rounds = n.div_ceil(ops_per_round_trip);
                    let scale = n as f64 / (rounds * ops_per_round_trip) as f64;
                    ctx.count_region(rounds * ops_per_round_trip, || self.round_trips(rounds, &ctx.timer))
                        .map(|t| (Timed::one(scale_ticks(t, overhead, scale)), None))
                }
                Timing::OneWay => ctx
                    .count_region(2 * n, || self.one_way(n, &ctx.timer))
                    .map(|w| (one_way_ticks(w.out_sum + w.back_sum, n), Some(w))),
            };
            watch.end();
            let checked = r.and_then(|t| {
                report.payloads_checked += 1;
                if self.inb.payload_intact() { Ok(t) } else { Err(Fault::Corrupt(self.seq)) }
            });
            match checked {
                Ok((ticks, one_way)) => {
                    if let Some(w) = one_way {
                        let per = |sum: i64| ctx.timer.ticks_to_ns(sum as f64 - overhead_of(&ctx.timer, n)) / n as f64;
                        out_dir.push(per(w.out_sum));
                        back_dir.push(per(w.back_sum));
                        report.min_one_way_ticks = report.min_one_way_ticks.min(w.min_back);
                        report.one_way_over_round_trip += u64::from(w.out_sum + w.back_sum > w.elapsed);
                    }
                    Some(ticks)
                }
                Err(f) => {
                    fault = Some(f);
                    None
                }
            }
        });
        // Warm-up calls of the routine made no sample: keep the stages of the samples only.
        for stage in [&mut out_dir, &mut back_dir] {
            stage.drain(..stage.len().saturating_sub(samples.per_op_ns.len()));
        }
        crate::counters::scope(&mut samples, crate::counters::MEASURING_END_ONLY);
        report.measurer_switches = Switches::now().since(before);
        if plan.timing == Timing::OneWay {
            report.breakdown = vec![("measurer→peer".into(), out_dir), ("peer→measurer".into(), back_dir)];
        }
        ended(&plan, fault, samples, report)
    }

    /// [`Session::measure`] in a cold visit (`crate::cold`): one round trip per sample, the
    /// disturbance right before it (the peer waits in its receive meanwhile), scaled to one
    /// operation as the plan's timing says (a one-way plan: half the round trip).
    fn measure_cold(&mut self, ctx: &Ctx, mut report: Report, before: Switches) -> Result<Report, NotMeasured> {
        let plan = self.plan;
        let ops = match plan.timing {
            Timing::RoundTrip { ops_per_round_trip } => ops_per_round_trip.max(1),
            Timing::OneWay => 2,
        };
        let overhead = ctx.timer.overhead_ticks();
        let watch = Arc::clone(&self.watch);
        let mut fault: Option<Fault> = None;
        let mut samples = ctx.iter_cold(|cold| {
            if let Some(f) = self.abandoned() {
                fault = Some(f);
                return None;
            }
            cold.ops(ops);
            cold.now();
            watch.begin();
            let r = self.round_trips(1, &ctx.timer);
            watch.end();
            let checked = r.and_then(|t| {
                report.payloads_checked += 1;
                if self.inb.payload_intact() { Ok(t) } else { Err(Fault::Corrupt(self.seq)) }
            });
            match checked {
                Ok(t) => Some(Timed::one(scale_ticks(t, overhead, 1.0 / ops as f64))),
                Err(f) => {
                    fault = Some(f);
                    None
                }
            }
        });
        crate::counters::scope(&mut samples, crate::counters::MEASURING_END_ONLY);
        report.measurer_switches = Switches::now().since(before);
        ended(&plan, fault, samples, report)
    }

    /// `n` round trips; the ticks they took.
    #[inline(never)]
    fn round_trips(&mut self, n: u64, timer: &Timer) -> Result<u64, Fault> {
        let t0 = timer.start();
        for _ in 0..n {
            self.seq += 1;
            self.send()?;
            let got = self.recv()?;
            if got != self.seq {
                return Err(Fault::Sequence { expected: self.seq, got });
            }
        }
        let t1 = timer.stop();
        Ok(black_box(t1.wrapping_sub(t0)))
    }

    /// `n` round trips with a stamp on every message.
    #[inline(never)]
    fn one_way(&mut self, n: u64, timer: &Timer) -> Result<OneWaySums, Fault> {
        let out_before = self.shared.u64(OUT_SUM).load(Acquire) as i64;
        let (mut back_sum, mut min_back) = (0i64, i64::MAX);
        let first = timer.start();
        let mut last = first;
        for _ in 0..n {
            self.seq += 1;
            self.shared.u64(STAMP_OUT).store(timer.start(), Release);
            self.send()?;
            let got = self.recv()?;
            last = timer.stop();
            let back = last as i64 - self.shared.u64(STAMP_BACK).load(Acquire) as i64;
            back_sum += back;
            min_back = min_back.min(back);
            if got != self.seq {
                return Err(Fault::Sequence { expected: self.seq, got });
            }
        }
        let out_sum = self.shared.u64(OUT_SUM).load(Acquire) as i64 - out_before;
        Ok(OneWaySums { out_sum, back_sum, min_back, elapsed: last as i64 - first as i64 })
    }

    #[inline(always)]
    fn send(&mut self) -> Result<(), Fault> {
        loop {
            match self.end.send(self.seq, &mut self.out) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.look_around()?,
                Err(e) => return Err(self.io_fault("send", e)),
            }
        }
    }

    #[inline(always)]
    fn recv(&mut self) -> Result<u32, Fault> {
        loop {
            match self.end.recv(&mut self.inb) {
                Ok(seq) => return Ok(seq),
                Err(e) if is_retry(&e) => self.look_around()?,
                Err(e) => return Err(self.io_fault("receive", e)),
            }
        }
    }

    /// Woken without a message: whether to give up (the watchdog's verdict, the peer's end).
    #[cold]
    fn look_around(&self) -> Result<(), Fault> {
        if let Some(f) = self.abandoned() {
            return Err(f);
        }
        match self.peer_gone() {
            Some(why) => Err(Fault::PeerGone(why)),
            None => Ok(()),
        }
    }

    /// The watchdog's verdict as a fault, if it reached one.
    fn abandoned(&self) -> Option<Fault> {
        match self.watch.verdict() {
            Verdict::Carry => None,
            Verdict::Interrupted => Some(Fault::Interrupted),
            Verdict::Overdue => Some(Fault::Overdue(self.watch.deadline)),
        }
    }

    /// An error on the transport: the peer's end, if it went (a dying process closes its
    /// descriptors a moment before it is seen to have ended), else the error itself.
    #[cold]
    fn io_fault(&self, what: &'static str, e: std::io::Error) -> Fault {
        if let Some(f) = self.abandoned() {
            return f;
        }
        let began = Instant::now();
        let mut gone = self.peer_gone();
        while gone.is_none() && began.elapsed() < Duration::from_millis(200) {
            std::thread::sleep(Duration::from_millis(1));
            gone = self.peer_gone();
        }
        match gone {
            Some(why) => Fault::PeerGone(format!("{why} ({what}: {e})")),
            None => Fault::Io { what, seq: self.seq, error: e },
        }
    }

    /// Tells the peer to stop and waits for it; kills a peer process that does not stop in
    /// time: the deadline normally, [`STOP_GRACE`] after an interruption, at once when the
    /// peer is overdue. The watchdog is armed throughout, so a stop message that cannot be
    /// sent (a stopped peer, a full pipe) is given up too.
    fn stop(&mut self) -> Result<(), NotMeasured> {
        self.shared.u64(STOP_ASKED).store(1, Release);
        self.watch.begin();
        let stopped = self.stop_armed();
        self.watch.end();
        stopped
    }

    fn stop_armed(&mut self) -> Result<(), NotMeasured> {
        if self.peer_gone().is_none() && self.watch.verdict() != Verdict::Overdue {
            let _ = self.end.send(STOP, &mut self.out);
        }
        let deadline = self.watch.deadline;
        let grace = |watch: &Watch, thread: bool| match watch.verdict() {
            Verdict::Carry => deadline,
            Verdict::Interrupted => STOP_GRACE,
            Verdict::Overdue if thread => STOP_GRACE,
            Verdict::Overdue => Duration::ZERO,
        };
        let thread = !self.peer.is_process();
        let every = Duration::from_micros(if thread { 500 } else { 200 });
        let tid = self.shared.u64(PEER_TID).load(Acquire) as i32;
        let nudge = || {
            if tid > 0 {
                process::wake_thread(std::process::id() as i32, tid);
            }
        };
        let watch = &self.watch;
        match self.peer.end(|| grace(watch, thread), every, nudge) {
            Ended::AlreadyEnded => Ok(()),
            Ended::Reaped(sys::reap::Reaped::Exited(0)) | Ended::Joined(Some(0)) => Ok(()),
            Ended::Reaped(s) if self.shared.u64(PEER_STATE).load(Acquire) == FAILED => {
                Err(NotMeasured::Failed(format!("{} (peer {})", peer_failure(&self.shared), s.describe())))
            }
            Ended::Reaped(s) => Err(NotMeasured::Failed(format!("the peer process {}", s.describe()))),
            Ended::StillRunning => Err(NotMeasured::Failed("the peer thread did not stop".into())),
            Ended::Joined(_) => Err(NotMeasured::Failed(peer_failure(&self.shared))),
        }
    }
}

struct OneWaySums {
    out_sum: i64,
    back_sum: i64,
    min_back: i64,
    elapsed: i64,
}

/// Why sampling stopped early.
#[derive(Debug)]
enum Fault {
    Sequence {
        expected: u32,
        got: u32,
    },
    Corrupt(u32),
    Io {
        what: &'static str,
        seq: u32,
        error: std::io::Error,
    },
    PeerGone(String),
    /// Ctrl-C (or SIGTERM…) during a sample: the samples before it stand.
    Interrupted,
    /// A call on the peer outlasted the deadline.
    Overdue(Duration),
}

impl Fault {
    fn into_not_measured(self, plan: &Plan, samples: usize) -> NotMeasured {
        let t = plan.transport.name();
        match self {
            Fault::Sequence { expected, got } => NotMeasured::Failed(format!(
                "{t}: message {expected} expected, message {got} arrived ({})",
                if got < expected { "a duplicate or a stale message" } else { "a message was lost" }
            )),
            Fault::Corrupt(seq) => {
                NotMeasured::Failed(format!("{t}: the payload of message {seq} came back corrupted"))
            }
            // The very first message being refused for its size is a limit of the transport.
            Fault::Io { what, seq: 1, error } if samples == 0 && size_error(&error) => NotMeasured::Skipped(format!(
                "{t} cannot {what} a {}-byte message: {error}",
                plan.transport.message_bytes(plan.payload)
            )),
            Fault::Io { what, seq, error } => {
                NotMeasured::Failed(format!("{t}: {what} of message {seq} failed: {error}"))
            }
            Fault::PeerGone(why) => NotMeasured::Failed(format!("{t}: {why}")),
            Fault::Overdue(d) => NotMeasured::Failed(format!(
                "{t}: the peer did not answer within {:.1} s (stopped, or a message was lost)",
                d.as_secs_f64()
            )),
            Fault::Interrupted => NotMeasured::Failed(format!("{t}: interrupted")),
        }
    }
}

fn size_error(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::EINVAL | libc::ENOBUFS | libc::ENOMEM))
}

/// The peer's failure, as recorded in shared memory.
fn peer_failure(shared: &SharedMem) -> String {
    let a = shared.u64(PEER_ERR_A).load(Acquire);
    let b = shared.u64(PEER_ERR_B).load(Acquire);
    match a >> 32 {
        ERR_PIN => {
            format!("the peer could not pin itself to its CPU ({})", std::io::Error::from_raw_os_error(b as i32))
        }
        ERR_IO => format!("the peer's send or receive failed ({})", std::io::Error::from_raw_os_error(b as i32)),
        ERR_SEQ => format!(
            "the peer expected message {} and got {} (a message was lost, duplicated or reordered)",
            a & 0xffff_ffff,
            b
        ),
        ERR_POLICY => "the peer could not switch to SCHED_BATCH".into(),
        _ => "the peer failed".into(),
    }
}

/// Everything the peer needs, prepared before it starts (a forked peer must not allocate).
struct PeerSide {
    shared: Arc<SharedMem>,
    msg: Msg,
    timer: Timer,
    stamps: bool,
    batch: bool,
    inject: Option<Inject>,
    cpu: usize,
    measurer: (i32, i32),
}

impl PeerSide {
    /// The peer's life: pin, echo until [`STOP`], report. Returns the exit code.
    fn serve(mut self, end: &mut Endpoint) -> i32 {
        let s = &*self.shared;
        s.u64(PEER_TID).store(process::gettid() as u64, Release);
        if let Err(e) = cpu::pin_current_thread(self.cpu) {
            return self.fail(ERR_PIN << 32, e as u64);
        }
        if self.batch && process::set_sched_policy(libc::SCHED_BATCH).is_err() {
            return self.fail(ERR_POLICY << 32, 0);
        }
        let before = Switches::now();
        s.u64(PEER_STATE).store(READY, Release);
        let (mut expected, mut count, mut out_sum, mut out_min) = (1u32, 0u64, 0i64, i64::MAX);
        loop {
            let seq = match end.recv(&mut self.msg) {
                Ok(seq) => seq,
                Err(e) if is_retry(&e) => {
                    if s.u64(STOP_ASKED).load(Acquire) != 0 {
                        break;
                    }
                    continue;
                }
                Err(e) => return self.fail(ERR_IO << 32, e.raw_os_error().unwrap_or(0) as u64),
            };
            let arrived = if self.stamps { self.timer.stop() } else { 0 };
            if seq == STOP {
                break;
            }
            if seq != expected {
                return self.fail((ERR_SEQ << 32) | u64::from(expected), u64::from(seq));
            }
            if self.stamps {
                let one_way = arrived as i64 - s.u64(STAMP_OUT).load(Acquire) as i64;
                out_sum += one_way;
                out_min = out_min.min(one_way);
                s.u64(OUT_SUM).store(out_sum as u64, Release);
                s.u64(STAMP_BACK).store(self.timer.start(), Release);
            }
            let (answer, copies) = match self.inject {
                Some(Inject::Lose(k)) if seq == k => (seq + 1, 1),
                Some(Inject::Duplicate(k)) if seq == k => (seq, 2),
                Some(Inject::Corrupt(k)) if seq >= k => {
                    self.msg.corrupt();
                    (seq, 1)
                }
                Some(Inject::Stall(k)) if seq >= k => (seq, 0),
                _ => (seq, 1),
            };
            for _ in 0..copies {
                if let Err(e) = send_retrying(end, answer, &mut self.msg, s) {
                    return self.fail(ERR_IO << 32, e.raw_os_error().unwrap_or(0) as u64);
                }
            }
            expected = expected.wrapping_add(1);
            count += 1;
        }
        let sw = Switches::now().since(before);
        s.u64(PEER_VOL).store(sw.voluntary, Relaxed);
        s.u64(PEER_INVOL).store(sw.involuntary, Relaxed);
        s.u64(PEER_COUNT).store(count, Relaxed);
        s.u64(OUT_MIN).store(out_min as u64, Relaxed);
        s.u64(PEER_CPU).store(cpu::current_cpu().map(|c| c as u64 + 1).unwrap_or(0), Relaxed);
        if let Some(c) = end.ring_counts() {
            let counts = [c.submitted, c.completed, c.received, u64::from(c.cq_overflow), u64::from(c.sq_dropped)];
            for (i, v) in counts.into_iter().enumerate() {
                s.u64(PEER_RING + i).store(v, Relaxed);
            }
        }
        s.u64(PEER_STATE).store(DONE, Release);
        0
    }

    /// Records a failure, then wakes the measuring thread until told to stop.
    #[cold]
    fn fail(&self, a: u64, b: u64) -> i32 {
        let s = &*self.shared;
        s.u64(PEER_ERR_A).store(a, Relaxed);
        s.u64(PEER_ERR_B).store(b, Relaxed);
        s.u64(PEER_STATE).store(FAILED, Release);
        while s.u64(STOP_ASKED).load(Acquire) == 0 {
            process::wake_thread(self.measurer.0, self.measurer.1);
            std::thread::sleep(Duration::from_millis(2));
        }
        1
    }
}

/// Sends, again after a signal (nothing was sent then), unless the measuring end asked to
/// stop or gave up (it will not read the message).
fn send_retrying(end: &mut Endpoint, seq: u32, msg: &mut Msg, s: &SharedMem) -> std::io::Result<()> {
    loop {
        match end.send(seq, msg) {
            Err(e)
                if e.kind() == std::io::ErrorKind::Interrupted
                    && s.u64(STOP_ASKED).load(Acquire) == 0
                    && s.u64(GIVE_UP).load(Acquire) == 0 => {}
            r => return r,
        }
    }
}

/// The report of a session's sampling that ended with `fault` (if any): an interruption
/// keeps the samples, any other fault fails the row.
fn ended(plan: &Plan, fault: Option<Fault>, mut samples: Samples, mut report: Report) -> Result<Report, NotMeasured> {
    match fault {
        Some(Fault::Interrupted) => samples.stop = Some(StopReason::Interrupted),
        Some(f) => return Err(f.into_not_measured(plan, samples.per_op_ns.len())),
        None => {}
    }
    report.samples = samples;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    fn plan(transport: Transport, peer: PeerKind, timing: Timing, inject: Option<Inject>) -> impl Fn(&Ctx) -> Plan {
        move |ctx: &Ctx| Plan {
            transport,
            peer,
            cpus: (ctx.cpu, ctx.cpu),
            payload: if transport.carries_payload() { 100 } else { 0 },
            timing,
            batch: false,
            inject,
        }
    }

    #[test]
    fn thread_and_process_peers_echo_every_message() {
        let _serial = crate::testing::serial();
        for peer in [PeerKind::Thread, PeerKind::Process] {
            with_ctx(0.02, |ctx| {
                let p = plan(Transport::UnixSeqpacket, peer, Timing::RoundTrip { ops_per_round_trip: 2 }, None)(ctx);
                let r = run(ctx, &p).unwrap();
                assert!(!r.samples.per_op_ns.is_empty());
                assert!(r.round_trips > 0);
                assert_eq!(r.peer_messages, r.round_trips, "{peer:?}");
                assert!(r.payloads_checked as usize >= r.samples.per_op_ns.len());
                assert_eq!(r.ran_on, (Some(ctx.cpu), Some(ctx.cpu)));
                // On one CPU every message needs a switch to the other end.
                assert!(r.measurer_switches.total() + r.peer_switches.total() >= r.round_trips);
            });
        }
    }

    #[test]
    fn shm_ring_echoes_every_message_and_its_reader_sleeps() {
        let _serial = crate::testing::serial();
        for peer in [PeerKind::Thread, PeerKind::Process] {
            with_ctx(0.02, |ctx| {
                let p = plan(Transport::ShmRing, peer, Timing::RoundTrip { ops_per_round_trip: 2 }, None)(ctx);
                let r = run(ctx, &p).unwrap();
                assert!(r.round_trips > 0);
                assert_eq!(r.peer_messages, r.round_trips, "{peer:?}");
                assert!(r.payloads_checked > 0);
                // On one CPU the echo cannot be there before the peer ran: the measuring end
                // finds its ring empty and sleeps (unless the woken peer preempted it each time).
                let c = r.sleeps.expect("shm_ring counts its sleeps");
                assert!(c.waits > 0 && c.wakes > 0, "{peer:?}: {c:?}");
            });
        }
        let lost = failure(Transport::ShmRing, PeerKind::Thread, Inject::Lose(50));
        assert!(lost.contains("lost"), "{lost}");
        let bad = failure(Transport::ShmRing, PeerKind::Process, Inject::Corrupt(50));
        assert!(bad.contains("corrupted"), "{bad}");
    }

    #[test]
    fn one_way_stamps_give_two_directions() {
        let _serial = crate::testing::serial();
        with_ctx(0.02, |ctx| {
            let p = plan(Transport::Eventfd, PeerKind::Thread, Timing::OneWay, None)(ctx);
            let r = run(ctx, &p).unwrap();
            assert_eq!(r.breakdown.len(), 2);
            assert_eq!(r.breakdown[0].1.len(), r.samples.per_op_ns.len());
            assert!(r.min_one_way_ticks > 0, "on one CPU no message arrives before it was sent");
            assert_eq!(r.one_way_over_round_trip, 0);
        });
    }

    /// What the sampler makes of a routine's ticks: `(ticks − overhead) / n`.
    fn sampler_per_op(ticks: u64, overhead: f64, n: u64) -> f64 {
        (ticks as f64 - overhead) / n as f64
    }

    #[test]
    fn half_a_round_trip_loses_one_overhead_per_round_trip() {
        let o = 40.0;
        // Seed method: one operation asked, one round trip of 1,040 ticks run (1,000 + o).
        let per_op = sampler_per_op(scale_ticks(1_040, o, 0.5), o, 1);
        assert_eq!(per_op, 500.0);
        // The old scaling, 1,040 / 2 − 40, lost 20 ticks per operation.
        assert_eq!(sampler_per_op(1_040 / 2, o, 1), 480.0);
        // Adaptive: 6 operations = 3 round trips of 1,000 in one region.
        assert_eq!(sampler_per_op(scale_ticks(3_040, o, 1.0), o, 6), 500.0);
        // 7 operations asked, 4 round trips run: scaled to 7 operations' worth.
        assert_eq!(sampler_per_op(scale_ticks(4_040, o, 7.0 / 8.0), o, 7), 500.0);
    }

    #[test]
    fn scaled_ticks_are_never_negative() {
        assert_eq!(scale_ticks(10, 40.0, 0.5), 25);
        assert_eq!(scale_ticks(0, 40.0, 3.0), 0);
    }

    #[test]
    fn one_way_loses_one_overhead_per_message() {
        let o = 40.0;
        let timer = Timer::with_overhead(Timer::with_scale(platform::timer::TimerKind::MonotonicRaw, 1.0), o);
        let sampler_per_op =
            |t: Timed, _: f64, n: u64| (t.ticks as f64 - crate::sampler::overhead_of(&timer, t.regions)) / n as f64;
        // 3 round trips, 6 messages of 300 ticks each, each stamp pair adding o.
        let sum = 6 * (300 + 40);
        assert_eq!(sampler_per_op(one_way_ticks(sum, 3), o, 3), 300.0);
        // Seed method: one round trip, two messages.
        assert_eq!(sampler_per_op(one_way_ticks(2 * 340, 1), o, 1), 300.0);
        assert_eq!(one_way_ticks(-50, 1).ticks, 0);
    }

    fn failure(transport: Transport, peer: PeerKind, inject: Inject) -> String {
        let mut out = String::new();
        with_ctx(0.05, |ctx| {
            let p = plan(transport, peer, Timing::RoundTrip { ops_per_round_trip: 2 }, Some(inject))(ctx);
            match run(ctx, &p) {
                Err(NotMeasured::Failed(why)) => out = why,
                other => panic!("{inject:?} over {transport:?} was not caught: {other:?}"),
            }
        });
        out
    }

    #[test]
    fn lost_duplicated_and_corrupted_messages_fail_with_a_reason() {
        let _serial = crate::testing::serial();
        let lost = failure(Transport::Pipe, PeerKind::Process, Inject::Lose(50));
        assert!(lost.contains("lost"), "{lost}");
        let dup = failure(Transport::UnixDgram, PeerKind::Thread, Inject::Duplicate(50));
        assert!(dup.contains("duplicate"), "{dup}");
        let bad = failure(Transport::Tcp, PeerKind::Process, Inject::Corrupt(50));
        assert!(bad.contains("corrupted"), "{bad}");
        // Without a payload, the number is the message: a lost wake-up is caught the same way.
        let lost = failure(Transport::Futex, PeerKind::Thread, Inject::Lose(50));
        assert!(lost.contains("lost"), "{lost}");
    }

    #[test]
    fn a_peer_that_stops_answering_fails_the_row_at_the_deadline() {
        let _serial = crate::testing::serial();
        for (t, peer) in [(Transport::Pipe, PeerKind::Process), (Transport::Udp, PeerKind::Thread)] {
            let why = failure(t, peer, Inject::Stall(50));
            assert!(why.contains("did not answer within 2.0 s"), "{t:?}, {peer:?}: {why}");
        }
    }

    #[test]
    fn io_uring_transports_echo_every_message_and_their_rings_balance() {
        let _serial = crate::testing::serial();
        let cases = [
            (Transport::IoUring, PeerKind::Thread),
            (Transport::IoUring, PeerKind::Process),
            (Transport::IoUringMsg, PeerKind::Thread),
        ];
        for (t, peer) in cases {
            if let Some(why) = t.unavailable() {
                eprintln!("{}: {why}", t.name());
                continue;
            }
            with_ctx(0.02, |ctx| {
                let p = plan(t, peer, Timing::RoundTrip { ops_per_round_trip: 2 }, None)(ctx);
                let r = run(ctx, &p).unwrap();
                assert!(r.round_trips > 0);
                assert_eq!(r.peer_messages, r.round_trips, "{t:?} {peer:?}");
                assert!(r.payloads_checked > 0);
                let c = r.uring.expect("an io_uring transport reports its ring's account");
                assert_eq!(c.completed, c.submitted, "{t:?} {peer:?}: {c:?}");
                assert_eq!((c.cq_overflow, c.sq_dropped), (0, 0));
                let p = r.peer_uring.expect("the peer reports its ring's account");
                assert_eq!(p.completed, p.submitted, "{t:?} {peer:?}: {p:?}");
                assert!(p.submitted >= r.round_trips, "the peer made an operation per echo at least: {p:?}");
                if t == Transport::IoUringMsg {
                    assert!(c.received >= r.round_trips, "{c:?}");
                }
            });
        }
        if Transport::IoUring.unavailable().is_none() {
            let lost = failure(Transport::IoUring, PeerKind::Process, Inject::Lose(50));
            assert!(lost.contains("lost"), "{lost}");
            // A stalled peer: the measuring end's read is cut short by the watchdog's signal
            // (and by its own deadlines before that), cancelled, and the row fails in time.
            let why = failure(Transport::IoUring, PeerKind::Process, Inject::Stall(50));
            assert!(why.contains("did not answer within 2.0 s"), "{why}");
        }
        if Transport::IoUringMsg.unavailable().is_none() {
            let bad = failure(Transport::IoUringMsg, PeerKind::Thread, Inject::Corrupt(50));
            assert!(bad.contains("corrupted"), "{bad}");
            let why = failure(Transport::IoUringMsg, PeerKind::Thread, Inject::Stall(50));
            assert!(why.contains("did not answer within 2.0 s"), "{why}");
        }
    }

    #[test]
    fn the_deadline_is_a_multiple_of_the_budget_with_a_floor() {
        assert_eq!(PEER_DEADLINE.for_round(0.01), PEER_DEADLINE.floor);
        assert_eq!(PEER_DEADLINE.for_round(10.0), Duration::from_secs(40));
        assert_eq!(PEER_DEADLINE.for_round(f64::INFINITY), Duration::MAX);
    }
}
