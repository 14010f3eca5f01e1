//! Message passing between two threads of one process (intra-address-space) and between two
//! processes (inter-address-space), on one CPU and across two: `ipc.<transport>`,
//! `xfer.<transport>`, and the derived `rpc.<transport>`.
//!
//! Seed rows: L4Ka::Pistachio "intra-" and "inter-address space IPC" (`ipc.*`, threads and
//! processes on one CPU, the row taking the fastest kernel hand-off as the nearest mechanism;
//! its "0 to 10 message registers" are 32-bit words on PowerPC, 0–40 bytes: `--sizes
//! 0,4,…,40`); Go!'s other systems' "null RPC round trip" (`rpc.*`) and "domain transfer one
//! way" (`xfer.*`).
//!
//! - `ipc.<t>`: one message one way, measured as half a ping-pong (the engine's round-trip
//!   timing, [`super::pingpong`]). Payload-carrying transports take part in size sweeps.
//! - `rpc.<t>`: a request and a reply of an empty message, the whole round trip: the same
//!   ping-pong as `ipc.<t>` at 0 bytes, not halved (a derived row, so the two agree exactly).
//! - `xfer.<t>`: true one-way latency, each message stamped with the cycle counter by its
//!   sender and again by its receiver. It needs an invariant counter and, across CPUs,
//!   counters that agree: the offset bound between the two CPUs is measured first
//!   ([`platform::timer::sync`]), recorded, and the row skipped with the reason when the
//!   counters disagree.
//!
//! Each result records `peer` (`thread`/`process`), `placement` (`same_cpu`/`cross_cpu`),
//! `bytes` (payload) and the `cpus` the two ends ran on; a `shm_ring` result also records the
//! measuring end's futex waits, the waits ended by their timeout, and its wakes
//! (`observed.futex`, counted outside the clock but for one increment each), and says, when its
//! reader slept for nearly every echo, that each hand-off was the futex wake path plus a copy;
//! an `io_uring` or `io_uring_msg` result records both ends' rings' own accounts
//! (`observed.io_uring`, the peer's as it reported it when done) and checks that on each ring
//! every operation submitted completed, with no completion-queue overflow (and, for `io_uring_msg`, that every echo arrived as a post).
//! `io_uring_msg` between processes is not applicable (skipped with the reason).
//! **Validation:** every message numbered and checked on its way back, payloads compared on a
//! sample, the peer's count equal to the round trips, each end on its CPU; for `xfer`, no
//! message arriving before it was sent and one-way times that fit inside their round trips.
//! **Hangs:** a stopped peer or a lost message (UDP) fails the row once a wait outlasts the
//! peer deadline ([`crate::peer::PEER_DEADLINE`]), and Ctrl-C ends a blocked sample, keeping the
//! samples before it; the timed region is the same either way ([`super::pingpong`]).

use super::peer::PeerKind;
use super::pingpong::{self, Placement, Plan, Report, Timing};
use super::transport::Transport;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use model::{Derivation, SIZE_PARAM};
use platform::timer::TimerKind;

/// `ipc.<transport>`: half a ping-pong.
#[derive(Clone, Copy)]
pub struct Ipc(pub Transport);

/// `xfer.<transport>`: one-way latency from counter stamps.
#[derive(Clone, Copy)]
pub struct Xfer(pub Transport);

/// `ipc.<t>` for every transport, in [`Transport::ALL`]'s order.
pub static IPC: [Ipc; Transport::COUNT] = {
    let mut out = [Ipc(Transport::ALL[0]); Transport::COUNT];
    let mut i = 0;
    while i < Transport::COUNT {
        out[i] = Ipc(Transport::ALL[i]);
        i += 1;
    }
    out
};

/// `xfer.<t>` for every transport, in [`Transport::ALL`]'s order.
pub static XFER: [Xfer; Transport::COUNT] = {
    let mut out = [Xfer(Transport::ALL[0]); Transport::COUNT];
    let mut i = 0;
    while i < Transport::COUNT {
        out[i] = Xfer(Transport::ALL[i]);
        i += 1;
    }
    out
};

/// The derived `rpc.<t>` for every transport, in [`Transport::ALL`]'s order.
pub static RPC: [Derivation; Transport::COUNT] = {
    let mut out = [rpc(Transport::ALL[0]); Transport::COUNT];
    let mut i = 0;
    while i < Transport::COUNT {
        out[i] = rpc(Transport::ALL[i]);
        i += 1;
    }
    out
};

/// Every `ipc.*` benchmark, then every `xfer.*` one: the registry's IPC entries.
pub fn benchmarks() -> impl Iterator<Item = &'static dyn Benchmark> {
    IPC.iter().map(|b| b as &dyn Benchmark).chain(XFER.iter().map(|b| b as &dyn Benchmark))
}

/// The derived `rpc.<transport>`: twice `ipc.<transport>` at 0 bytes.
pub const fn rpc(t: Transport) -> Derivation {
    Derivation::scaled(
        t.rpc_id(),
        "null RPC: request + reply of an empty message, round trip (ipc's ping-pong, not halved)",
        t.ipc_id(),
        2.0,
        0,
    )
}

impl Benchmark for Ipc {
    fn id(&self) -> &'static str {
        self.0.ipc_id()
    }
    fn about(&self) -> &'static str {
        self.0.ipc_about()
    }
    fn available(&self) -> Result<(), String> {
        self.0.unavailable().map_or(Ok(()), Err)
    }
    fn variants(&self, ctx: &Ctx) -> Vec<Params> {
        variants(self.0, ctx, true)
    }
    /// One round trip per cold sample, halved (`pingpong`).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let setup = Setup::read(self.0, ctx, params)?;
        let plan = setup.plan(Timing::RoundTrip { ops_per_round_trip: 2 });
        let report = pingpong::run(ctx, &plan)?;
        Ok(measured(&plan, report, ctx))
    }
}

impl Benchmark for Xfer {
    fn id(&self) -> &'static str {
        self.0.xfer_id()
    }
    fn about(&self) -> &'static str {
        self.0.xfer_about()
    }
    fn available(&self) -> Result<(), String> {
        if let Some(why) = self.0.unavailable() {
            return Err(why);
        }
        match platform::timer::CounterFacts::probe().choose().fallback_reason {
            Some(why) => Err(format!("one-way times need the cycle counter: {why}")),
            None => Ok(()),
        }
    }
    fn variants(&self, ctx: &Ctx) -> Vec<Params> {
        variants(self.0, ctx, false)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        if ctx.timer_info.kind == TimerKind::MonotonicRaw {
            let why = ctx.timer_info.fallback_reason.clone().unwrap_or_default();
            return Err(NotMeasured::Skipped(format!("one-way times need the cycle counter: {why}")));
        }
        let setup = Setup::read(self.0, ctx, params)?;
        let plan = setup.plan(Timing::OneWay);
        let bound =
            if setup.placement == Placement::CrossCpu { Some(synchronised_bound(ctx, plan.cpus)?) } else { None };
        let report = pingpong::run(ctx, &plan)?;
        let min_one_way = report.min_one_way_ticks;
        let over = report.one_way_over_round_trip;
        let n = report.samples.per_op_ns.len();
        let mut m = measured(&plan, report, ctx);
        let tolerance = bound.map(|b| b.max_abs_ticks()).unwrap_or(0);
        m.checks.push(Check::new(
            "no message arrives before it was sent",
            format!(
                "smallest one-way time ≥ −{:.0} ns (the counters' offset bound)",
                ctx.timer.ticks_to_ns(tolerance as f64)
            ),
            format!("{:.0} ns", ctx.timer.ticks_to_ns(min_one_way as f64)),
            min_one_way >= -tolerance,
        ));
        m.checks.push(Check::new(
            "one-way times fit inside the round trips that carry them",
            format!("0 of {n} samples over"),
            format!("{over} over"),
            over == 0,
        ));
        if let Some(b) = bound {
            let ns = ctx.timer.ticks_to_ns(b.max_abs_ticks() as f64);
            m.observed.insert("tsc_offset_bound_ns".into(), serde_json::json!((ns * 10.0).round() / 10.0));
            m.notes.push(format!(
                "the counters of CPUs {} and {} agree within ±{ns:.0} ns ({} stamped rounds): each one-way time is that uncertain",
                b.cpu_a, b.cpu_b, b.rounds
            ));
        }
        Ok(m)
    }
}

/// The counters' offset bound between two CPUs, or a skip when they disagree: one-way times
/// across CPUs need counters that agree.
pub(crate) fn synchronised_bound(
    ctx: &mut Ctx,
    (a, b): (usize, usize),
) -> Result<platform::timer::sync::OffsetBound, NotMeasured> {
    let bound = ctx.offset_bound(a, b).map_err(NotMeasured::Skipped)?;
    if !bound.synchronised() {
        let ns = |t: i64| ctx.timer.ticks_to_ns(t as f64);
        return Err(NotMeasured::Skipped(format!(
            "the counters of CPUs {a} and {b} disagree: CPU {b} runs between {:.0} and {:.0} ns ahead of CPU {a}",
            ns(bound.low_ticks),
            ns(bound.high_ticks)
        )));
    }
    Ok(bound)
}

/// Peer × placement (× size, for `ipc` of a payload-carrying transport).
fn variants(t: Transport, ctx: &Ctx, sweep: bool) -> Vec<Params> {
    let sizes: Vec<usize> = match (&ctx.sizes, sweep && t.carries_payload()) {
        (Some(s), true) => s.clone(),
        _ => vec![0],
    };
    let mut out = Vec::new();
    for peer in [PeerKind::Thread, PeerKind::Process] {
        for placement in [Placement::SameCpu, Placement::CrossCpu] {
            for &bytes in &sizes {
                let mut p = Params::new();
                p.insert("peer".into(), peer.name().into());
                p.insert("placement".into(), placement.name().into());
                if t.carries_payload() {
                    p.insert(SIZE_PARAM.into(), serde_json::json!(bytes));
                }
                out.push(p);
            }
        }
    }
    out
}

/// A benchmark's parameters, read back and checked against this machine.
pub(crate) struct Setup {
    pub transport: Transport,
    pub peer: PeerKind,
    pub placement: Placement,
    pub payload: usize,
    pub cpus: (usize, usize),
}

impl Setup {
    /// Reads `params`; a placement or size this machine or transport cannot do is a skip.
    pub fn read(transport: Transport, ctx: &Ctx, params: &Params) -> Result<Setup, NotMeasured> {
        let text = |k: &str| params.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        let peer = if text("peer") == "process" { PeerKind::Process } else { PeerKind::Thread };
        let placement = if text("placement") == "cross_cpu" { Placement::CrossCpu } else { Placement::SameCpu };
        let payload = params.get(SIZE_PARAM).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
        if transport.needs_two_cpus() && placement == Placement::SameCpu {
            return Err(NotMeasured::Skipped(
                "not applicable on one CPU: a spinning receiver would keep its CPU from the sender".into(),
            ));
        }
        if let (PeerKind::Process, Some(why)) = (peer, transport.threads_only()) {
            return Err(NotMeasured::Skipped(why.into()));
        }
        if let Some(why) = transport.unavailable() {
            return Err(NotMeasured::Skipped(why));
        }
        if let Some(why) = transport.size_limit(transport.message_bytes(payload)) {
            return Err(NotMeasured::Skipped(why));
        }
        let cpus = cpus_for(ctx, placement).map_err(NotMeasured::Skipped)?;
        Ok(Setup { transport, peer, placement, payload, cpus })
    }

    /// The engine's plan.
    pub fn plan(&self, timing: Timing) -> Plan {
        Plan {
            transport: self.transport,
            peer: self.peer,
            cpus: self.cpus,
            payload: self.payload,
            timing,
            batch: false,
            inject: None,
        }
    }
}

/// The two CPUs of a placement: the measuring CPU twice, or `--cpus A,B`, or the measuring
/// CPU and the first other allowed one.
pub(crate) fn cpus_for(ctx: &Ctx, placement: Placement) -> Result<(usize, usize), String> {
    match (placement, ctx.cpu_pair) {
        (Placement::SameCpu, _) => Ok((ctx.cpu, ctx.cpu)),
        (Placement::CrossCpu, Some([a, b])) => Ok((a, b)),
        (Placement::CrossCpu, None) => match ctx.allowed_cpus.iter().find(|&&c| c != ctx.cpu) {
            Some(&other) => Ok((ctx.cpu, other)),
            None => Err(format!("needs two CPUs; this process may only use CPU {}", ctx.cpu)),
        },
    }
}

/// The row of a ping-pong: samples, the checks every ping-pong makes, what was learnt.
pub(crate) fn measured(plan: &Plan, r: Report, ctx: &Ctx) -> Measured {
    let echo = "every message came back once, in order (sequence numbers)";
    let mut checks = vec![if r.peer_unreported {
        Check::impossible(echo, "interrupted: the peer ended before reporting its count")
    } else {
        Check::new(
            echo,
            format!("the peer echoed all {} messages", r.round_trips),
            format!("{} echoed", r.peer_messages),
            r.peer_messages == r.round_trips,
        )
    }];
    if plan.transport.carries_payload() {
        checks.push(Check::new(
            "payloads arrive intact (the last message of every sample, byte by byte)",
            "every checked payload intact",
            format!("{} checked, all intact", r.payloads_checked),
            r.payloads_checked > 0,
        ));
    }
    let (a, b) = plan.cpus;
    checks.push(if r.peer_unreported {
        Check::impossible("each end ran on its CPU", "interrupted: the peer ended before reporting its CPU")
    } else {
        Check::new(
            "each end ran on its CPU",
            format!("measuring end on CPU {a}, peer on CPU {b}"),
            format!("{} and {}", cpu_text(r.ran_on.0), cpu_text(r.ran_on.1)),
            r.ran_on == (Some(a), Some(b)),
        )
    });
    let messages = 2 * r.round_trips.max(1);
    let switches = r.measurer_switches.total() + r.peer_switches.total();
    let mut m = Measured::new(r.samples, checks);
    m.breakdown = r.breakdown;
    m.params.insert("cpus".into(), serde_json::json!([a, b]));
    m.observed.insert(
        "switches".into(),
        serde_json::json!({
            "per_message": (switches as f64 / messages as f64 * 100.0).round() / 100.0,
            "voluntary": r.measurer_switches.voluntary + r.peer_switches.voluntary,
            "involuntary": r.measurer_switches.involuntary + r.peer_switches.involuntary,
            "messages": messages,
        }),
    );
    if plan.transport.carries_payload() && plan.payload == 0 {
        m.notes.push("an empty message is its 8-byte sequence number alone".into());
    }
    if let Some(c) = r.sleeps {
        // The measuring end's own account of its sleeps (`shm_ring`): how many of its
        // receives found the ring empty and slept, how many wakes it made for the peer, and
        // how many waits ran into their timeout instead of being woken.
        m.observed.insert(
            "futex".into(),
            serde_json::json!({
                "waits": c.waits,
                "waits_timed_out": c.timeouts,
                "wakes": c.wakes,
                "messages_received": r.round_trips,
            }),
        );
        // Why the ring is no faster than a futex here, from this row's own counts: when its
        // reader found the ring empty and slept for nearly every echo, each hand-off is the
        // futex wake path plus a copy, as `futex`'s is. (The counts differ from round to
        // round; the note does not, so the rounds' notes merge.)
        if c.waits * 10 >= r.round_trips.max(1) * 9 {
            m.notes.push(
                "the measuring end found its ring empty and slept in FUTEX_WAIT for 90 % or more of the echoes \
                 (observed.futex has the counts): each hand-off here is the futex wake path plus a copy, as \
                 futex's is (compare rpc.futex at this placement); a ring gains only where its reader finds \
                 the message already there"
                    .into(),
            );
        }
        if c.timeouts > 0 {
            m.notes.push(format!(
                "some of the measuring end's futex waits ended by their {} ms timeout rather than by the peer's \
                 wake-up (observed.futex.waits_timed_out): a peer kept off its CPU that long, or a lost wake-up",
                crate::transport::POLL_EVERY.as_millis()
            ));
        }
    }
    if let Some(c) = r.uring {
        // Each end's ring's own account (the io_uring transports): every operation it
        // submitted completed, and the kernel overflowed nothing.
        let account = |c: &sys::uring::Counts| {
            serde_json::json!({
                "submitted": c.submitted,
                "completed": c.completed,
                "received": c.received,
                "cq_overflow": c.cq_overflow,
                "sq_dropped": c.sq_dropped,
            })
        };
        let mut observed = account(&c);
        observed["messages_received"] = r.round_trips.into();
        if let Some(p) = &r.peer_uring {
            observed["peer"] = account(p);
        }
        m.observed.insert("io_uring".into(), observed);
        let balanced = |c: &sys::uring::Counts| c.completed == c.submitted && c.cq_overflow == 0 && c.sq_dropped == 0;
        let shown = |c: &sys::uring::Counts| {
            format!("{} completed, {} overflowed, {} dropped", c.completed, c.cq_overflow, c.sq_dropped)
        };
        let name = "completions == submissions on each end's ring (its own account), no CQ overflow";
        let expected = |c: &sys::uring::Counts| format!("{} completed, 0 overflowed, 0 dropped", c.submitted);
        m.checks.push(match &r.peer_uring {
            Some(p) => Check::new(
                name,
                format!("measuring end {}; peer {}", expected(&c), expected(p)),
                format!("measuring end {}; peer {}", shown(&c), shown(p)),
                balanced(&c) && balanced(p),
            ),
            None if r.peer_unreported => {
                Check::impossible(name, "interrupted: the peer ended before reporting its ring")
            }
            None => Check::new(
                name,
                format!("measuring end {}", expected(&c)),
                format!("measuring end {}", shown(&c)),
                balanced(&c),
            ),
        });
        if plan.transport == Transport::IoUringMsg {
            // A post is one submission of the sender's ring and one completion received by
            // the other: each ring received what the other posted.
            let name = "every MSG_RING post arrived on the other ring (completions received == the other ring's posts)";
            m.checks.push(match &r.peer_uring {
                Some(p) => Check::new(
                    name,
                    format!("measuring end received {}, peer received {}", p.submitted, c.submitted),
                    format!("{} and {}", c.received, p.received),
                    c.received == p.submitted && p.received == c.submitted,
                ),
                None => Check::new(
                    name,
                    format!("the measuring end received at least the {} echoes", r.round_trips),
                    format!("{} received", c.received),
                    c.received >= r.round_trips,
                ),
            });
        }
    }
    if plan.peer == PeerKind::Process
        && !matches!(
            plan.transport,
            Transport::Futex | Transport::Spin | Transport::ShmRing | Transport::IoUring | Transport::IoUringMsg
        )
    {
        m.notes.push(HARNESS_NOTE.into());
    }
    if a != b && ctx.virtualized && plan.transport != Transport::Spin {
        m.notes.push(
            "across CPUs on a virtual machine, a blocked receiver's idle vCPU must be woken through the hypervisor: that wake-up, not the transport, dominates"
                .into(),
        );
    }
    m
}

/// What osprim's process round trip does that a bare loop of two single-threaded processes
/// (`perf bench sched pipe`) does not, and which is part of the figure. Counted with callgrind
/// on `ipc.pipe` (process, same CPU) against a C read/write loop: glibc's `read`/`write` take 52
/// user-space instructions a call in a process that has (or was forked from one that had) other
/// threads — their cancellation-point path, with atomic updates of the cancel state — against 7
/// in a single-threaded one; osprim's measuring loop runs 258 instructions per round trip and
/// its peer about 270 per message, against 28 each for the bare loop. Same system calls (one
/// `write` and one `read` per message end, `strace -c`). See docs/overhead.md.
pub const HARNESS_NOTE: &str = "part of the operation: osprim's measuring process has other threads (its watchdogs), and \
     its forked peer keeps glibc's multi-threaded state, so each read/write or send/receive takes glibc's \
     cancellation-point path (about 45 more user-space instructions a call than in a single-threaded program such \
     as perf bench sched pipe's processes); osprim's own loop adds about 230 more per message end \
     (callgrind; docs/overhead.md)";

fn cpu_text(c: Option<usize>) -> String {
    c.map(|c| format!("CPU {c}")).unwrap_or_else(|| "unknown".into())
}
