//! Waking a blocked thread: `notify.wake.eventfd`, `notify.wake.futex`, `notify.wake.pipe`,
//! `notify.wake.epoll`, and the no-kernel floor `notify.poll`.
//!
//! Seed rows: VMMC's Windows NT "DPC to user-level handler thread wake-up" (16 µs): a waiter
//! blocked in the kernel made runnable by someone else and running again; VMMC's polling
//! receive is the floor (`notify.poll`).
//!
//! A **waiter** (a thread of this process, or a forked process: `peer=thread|process`) blocks
//! in the mechanism — `read` on an eventfd, `FUTEX_WAIT` on a word in shared memory, `read` on
//! a pipe, `epoll_wait` on an epoll set holding an eventfd — and the measuring thread, the
//! **sender**, wakes it: it writes the eventfd or the pipe, or stores the word and calls
//! `FUTEX_WAKE`. For `notify.poll` the waiter spins on a word in shared memory instead, and the
//! sender stores it; no kernel is involved, so it needs two CPUs (on one, the spinning waiter
//! would keep the sender from running: skipped with that reason).
//!
//! **Timing model (one way).** The sender reads the counter just before its wake call; the
//! waiter reads it first thing after the kernel returns (after `epoll_wait`, before the
//! eventfd is read). One operation is one wake: waiter's stamp − sender's stamp, one timer
//! overhead subtracted per wake. Across CPUs the two CPUs' counters must agree: their offset
//! bound is measured first ([`platform::timer::sync`], as `xfer.*` does), recorded, and the row
//! skipped with the reason when they disagree.
//!
//! **Every wake finds the waiter asleep.** Before each wake the sender waits (outside the
//! clock) until the waiter has said which number it waits for next and the kernel shows it
//! sleeping (`S` in `/proc/<pid>/task/<tid>/stat`); on one CPU it yields the CPU while it waits.
//! After the wake the sender blocks until the waiter acknowledges (a futex word; spinning for
//! `notify.poll`), so on one CPU it gives the CPU up to the woken waiter.
//!
//! **Validation:** every wake carries its sequence number (the eventfd count, the pipe's
//! 8 bytes, the futex word) and the waiter checks they arrive one by one, and its count equals
//! the wakes sent (exactly once each); the waiter's voluntary context switches
//! (`getrusage(RUSAGE_THREAD)`) are at least one per wake (it really blocked) — or, for
//! `notify.poll`, almost none (it never did); each end ran on its CPU; no wake arrives before it
//! was sent, beyond the counters' offset bound.
//!
//! **Deadlines and cleanup.** Every wait of the sender (for the waiter to start, to sleep, to
//! acknowledge, to end) gives up after [`PEER_DEADLINE`]; Ctrl-C ends a wait after
//! [`INTERRUPT_AFTER`] and keeps the samples taken. The waiter is always told to stop (the
//! number [`STOP`] through its own mechanism), then joined or reaped; a forked waiter dies with
//! its parent and is killed and reaped if it does not end.

use super::ipc::cpus_for;
use super::peer::{PEER_DEADLINE, Peer, PeerKind, StartStep};
use super::pingpong::Placement;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::{Samples, StopReason};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use platform::timer::{Timer, TimerKind};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::{Duration, Instant};
use sys::process;
use sys::switches::Switches;
use sys::{cpu, futex, shm::SharedMem};

/// The number that tells the waiter to stop.
pub const STOP: u64 = u32::MAX as u64;

/// How long a wait goes on after Ctrl-C before it gives up (a wake takes microseconds: only a
/// stuck waiter makes a wait last this long).
pub const INTERRUPT_AFTER: Duration = Duration::from_millis(50);

/// How the sender wakes the waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `write` to an eventfd the waiter `read`s.
    Eventfd,
    /// A store to a word in shared memory and `FUTEX_WAKE`; the waiter is in `FUTEX_WAIT`.
    Futex,
    /// `write` to a pipe the waiter `read`s.
    Pipe,
    /// `write` to an eventfd in an epoll set the waiter is in `epoll_wait` on.
    Epoll,
    /// A store to a word the waiter spins on: no kernel.
    Poll,
}

impl Mechanism {
    fn blocks(self) -> bool {
        self != Mechanism::Poll
    }
}

/// `notify.wake.<mechanism>` or `notify.poll`.
pub struct Wake(pub Mechanism);

impl Benchmark for Wake {
    fn id(&self) -> &'static str {
        match self.0 {
            Mechanism::Eventfd => "notify.wake.eventfd",
            Mechanism::Futex => "notify.wake.futex",
            Mechanism::Pipe => "notify.wake.pipe",
            Mechanism::Epoll => "notify.wake.epoll",
            Mechanism::Poll => "notify.poll",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Mechanism::Eventfd => "wake a thread blocked in read on an eventfd: sender's stamp to waiter's stamp",
            Mechanism::Futex => "wake a thread blocked in FUTEX_WAIT: sender's stamp to waiter's stamp",
            Mechanism::Pipe => "wake a thread blocked in read on a pipe: sender's stamp to waiter's stamp",
            Mechanism::Epoll => "wake a thread blocked in epoll_wait on an eventfd: sender's stamp to waiter's stamp",
            Mechanism::Poll => {
                "a store seen by a waiter spinning on shared memory, no kernel (two CPUs): stamp to stamp"
            }
        }
    }
    fn available(&self) -> Result<(), String> {
        match platform::timer::CounterFacts::probe().choose().fallback_reason {
            Some(why) => Err(format!("one-way times need the cycle counter: {why}")),
            None => Ok(()),
        }
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        let mut out = Vec::new();
        for peer in [PeerKind::Thread, PeerKind::Process] {
            for placement in [Placement::SameCpu, Placement::CrossCpu] {
                let mut p = Params::new();
                p.insert("peer".into(), peer.name().into());
                p.insert("placement".into(), placement.name().into());
                out.push(p);
            }
        }
        out
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        if ctx.timer_info.kind == TimerKind::MonotonicRaw {
            let why = ctx.timer_info.fallback_reason.clone().unwrap_or_default();
            return Err(NotMeasured::Skipped(format!("one-way times need the cycle counter: {why}")));
        }
        let text = |k: &str| params.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        let peer = if text("peer") == "process" { PeerKind::Process } else { PeerKind::Thread };
        let placement = if text("placement") == "cross_cpu" { Placement::CrossCpu } else { Placement::SameCpu };
        if !self.0.blocks() && placement == Placement::SameCpu {
            return Err(NotMeasured::Skipped(
                "not applicable on one CPU: a spinning waiter would keep its CPU from the sender".into(),
            ));
        }
        let cpus = cpus_for(ctx, placement).map_err(NotMeasured::Skipped)?;
        let bound =
            if placement == Placement::CrossCpu { Some(super::ipc::synchronised_bound(ctx, cpus)?) } else { None };
        let plan = Plan { mechanism: self.0, peer, cpus };
        let _back = PinBack::to(cpus.0, ctx.cpu)?;
        let outcome = measure(ctx, &plan)?;
        Ok(measured(ctx, &plan, outcome, bound))
    }
}

/// Pins the measuring thread to a CPU and puts it back on its own when dropped.
struct PinBack(usize);

impl PinBack {
    fn to(cpu: usize, home: usize) -> Result<PinBack, NotMeasured> {
        cpu::pin_current_thread(cpu)
            .map_err(|e| NotMeasured::Skipped(format!("cannot pin the sender to CPU {cpu}: {e}")))?;
        Ok(PinBack(home))
    }
}

impl Drop for PinBack {
    fn drop(&mut self) {
        let _ = cpu::pin_current_thread(self.0);
    }
}

/// One wake-up measurement.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// How the waiter is woken.
    pub mechanism: Mechanism,
    /// Thread or process waiter.
    pub peer: PeerKind,
    /// (sender's CPU, waiter's CPU).
    pub cpus: (usize, usize),
}

// Shared slots.
const WORD: usize = 0;
const ACK: usize = 1;
const ARRIVED: usize = 2;
const ARMED: usize = 3;
const TID: usize = 4;
const STATE: usize = 5;
const COUNT: usize = 6;
const VOL: usize = 7;
const INVOL: usize = 8;
const RAN_ON: usize = 9;
const ERR_KIND: usize = 10;
const ERR_DETAIL: usize = 11;
const SLOTS: usize = 12;

// Waiter states (0: starting).
const READY: u64 = 1;
const DONE: u64 = 2;
const FAILED: u64 = 3;

// Waiter failure kinds.
const ERR_PIN: u64 = 1;
const ERR_IO: u64 = 2;
const ERR_SEQ: u64 = 3;

/// The waiter's side of the mechanism.
enum WaitEnd {
    Fd(OwnedFd),
    Epoll(Epoll, OwnedFd),
    Word { spin: bool },
}

/// The sender's side.
enum WakeEnd {
    Fd(OwnedFd),
    Word { spin: bool },
}

fn open(m: Mechanism) -> std::io::Result<(WakeEnd, WaitEnd)> {
    let eventfd =
        || -> std::io::Result<OwnedFd> { Ok(OwnedFd::from(EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC)?)) };
    Ok(match m {
        Mechanism::Eventfd => {
            let fd = eventfd()?;
            (WakeEnd::Fd(fd.try_clone()?), WaitEnd::Fd(fd))
        }
        Mechanism::Pipe => {
            let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            (WakeEnd::Fd(w), WaitEnd::Fd(r))
        }
        Mechanism::Epoll => {
            let fd = eventfd()?;
            let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
            ep.add(&fd, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
            (WakeEnd::Fd(fd.try_clone()?), WaitEnd::Epoll(ep, fd))
        }
        Mechanism::Futex => (WakeEnd::Word { spin: false }, WaitEnd::Word { spin: false }),
        Mechanism::Poll => (WakeEnd::Word { spin: true }, WaitEnd::Word { spin: true }),
    })
}

/// Reads the 8-byte number a wake carries.
fn read_number(fd: &OwnedFd) -> nix::Result<u64> {
    let mut buf = [0u8; 8];
    match nix::unistd::read(fd.as_fd(), &mut buf)? {
        8 => Ok(u64::from_ne_bytes(buf)),
        _ => Err(nix::errno::Errno::EIO),
    }
}

impl WaitEnd {
    /// Blocks (or spins) until the next wake; returns its number and the counter read first
    /// thing after the kernel returned.
    #[inline(always)]
    fn wait(&self, s: &SharedMem, timer: &Timer, last: u64) -> nix::Result<(u64, u64)> {
        loop {
            match self {
                WaitEnd::Fd(fd) => {
                    let r = read_number(fd);
                    let t = timer.stop();
                    match r {
                        Ok(v) => return Ok((v, t)),
                        Err(nix::errno::Errno::EINTR) => continue,
                        Err(e) => return Err(e),
                    }
                }
                WaitEnd::Epoll(ep, fd) => {
                    let mut events = [EpollEvent::empty()];
                    let r = ep.wait(&mut events, EpollTimeout::NONE);
                    let t = timer.stop();
                    match r {
                        Ok(1) => return Ok((read_number(fd)?, t)),
                        Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                        Err(e) => return Err(e),
                    }
                }
                WaitEnd::Word { spin: false } => {
                    let word = s.u32(WORD);
                    let r = futex::wait(word, last as u32, &futex::timeout(Duration::from_millis(50)));
                    let t = timer.stop();
                    let v = word.load(Acquire);
                    match r {
                        _ if u64::from(v) != last => return Ok((u64::from(v), t)),
                        Ok(()) => continue,
                        Err(e)
                            if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) =>
                        {
                            continue;
                        }
                        Err(e) => return Err(nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO))),
                    }
                }
                WaitEnd::Word { spin: true } => {
                    let word = s.u32(WORD);
                    loop {
                        let v = word.load(Acquire);
                        if u64::from(v) != last {
                            return Ok((u64::from(v), timer.stop()));
                        }
                        std::hint::spin_loop();
                    }
                }
            }
        }
    }
}

impl WakeEnd {
    /// Wakes the waiter with number `k`.
    #[inline(always)]
    fn wake(&self, s: &SharedMem, k: u64) -> nix::Result<()> {
        match self {
            WakeEnd::Fd(fd) => match nix::unistd::write(fd.as_fd(), &k.to_ne_bytes())? {
                8 => Ok(()),
                _ => Err(nix::errno::Errno::EIO),
            },
            WakeEnd::Word { spin } => {
                s.u32(WORD).store(k as u32, Release);
                if !spin {
                    futex::wake(s.u32(WORD), 1)
                        .map_err(|e| nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
                }
                Ok(())
            }
        }
    }
}

/// Everything the waiter needs, prepared before it starts (a forked waiter must not allocate).
struct Waiter {
    shared: Arc<SharedMem>,
    end: WaitEnd,
    timer: Timer,
    cpu: usize,
    spin: bool,
}

impl Waiter {
    /// The waiter's life: pin, wait for numbered wakes until [`STOP`], report. Returns the exit
    /// code.
    fn serve(self) -> i32 {
        let s = &*self.shared;
        s.u64(TID).store(process::gettid() as u64, Release);
        if let Err(e) = cpu::pin_current_thread(self.cpu) {
            return fail(s, ERR_PIN, e as u64);
        }
        let before = Switches::now();
        s.u64(STATE).store(READY, Release);
        let mut expected = 1u64;
        loop {
            s.u64(ARMED).store(expected, Release);
            let (v, t) = match self.end.wait(s, &self.timer, expected - 1) {
                Ok(x) => x,
                Err(e) => return fail(s, ERR_IO, e as u64),
            };
            if v == STOP {
                break;
            }
            if v != expected {
                return fail(s, ERR_SEQ, (expected << 32) | (v & 0xffff_ffff));
            }
            s.u64(ARRIVED).store(t, Release);
            s.u64(COUNT).store(expected, Release);
            s.u32(ACK).store(expected as u32, Release);
            if !self.spin {
                let _ = futex::wake(s.u32(ACK), 1);
            }
            expected += 1;
        }
        let sw = Switches::now().since(before);
        s.u64(VOL).store(sw.voluntary, Relaxed);
        s.u64(INVOL).store(sw.involuntary, Relaxed);
        s.u64(RAN_ON).store(cpu::current_cpu().map(|c| c as u64 + 1).unwrap_or(0), Relaxed);
        s.u64(STATE).store(DONE, Release);
        0
    }
}

#[cold]
fn fail(s: &SharedMem, kind: u64, detail: u64) -> i32 {
    s.u64(ERR_KIND).store(kind, Relaxed);
    s.u64(ERR_DETAIL).store(detail, Relaxed);
    s.u64(STATE).store(FAILED, Release);
    let _ = futex::wake(s.u32(ACK), 1);
    1
}

fn failure_text(s: &SharedMem) -> String {
    let d = s.u64(ERR_DETAIL).load(Acquire);
    match s.u64(ERR_KIND).load(Acquire) {
        ERR_PIN => {
            format!("the waiter could not pin itself to its CPU ({})", std::io::Error::from_raw_os_error(d as i32))
        }
        ERR_IO => format!("the waiter's wait failed ({})", std::io::Error::from_raw_os_error(d as i32)),
        ERR_SEQ => format!(
            "the waiter expected wake {} and got {} (a wake was lost, merged or repeated)",
            d >> 32,
            d & 0xffff_ffff
        ),
        _ => "the waiter failed".into(),
    }
}

/// Why a session stopped early.
#[derive(Debug)]
enum Fault {
    Waiter(String),
    Io(nix::errno::Errno),
    Overdue(&'static str, Duration),
    Interrupted,
}

impl Fault {
    fn text(&self, plan: &Plan) -> String {
        let id = format!("{:?}", plan.mechanism).to_lowercase();
        match self {
            Fault::Waiter(why) => format!("{id}: {why}"),
            Fault::Io(e) => format!("{id}: the wake call failed: {e}"),
            Fault::Overdue(what, d) => format!("{id}: the waiter did not {what} within {:.1} s", d.as_secs_f64()),
            Fault::Interrupted => format!("{id}: interrupted"),
        }
    }
}

/// What the waiter reported at the end.
#[derive(Clone, Copy, Debug, Default)]
pub struct WaiterReport {
    /// Wakes it received, each with the number it expected.
    pub count: u64,
    /// Its voluntary context switches while it served.
    pub voluntary: u64,
    /// Its involuntary context switches.
    pub involuntary: u64,
    /// The CPU it ended on.
    pub ran_on: Option<usize>,
}

/// A running waiter and the sender's end.
struct Session<'c> {
    ctx: &'c Ctx<'c>,
    plan: Plan,
    shared: Arc<SharedMem>,
    wake: WakeEnd,
    peer: Peer,
    stat: Option<std::fs::File>,
    deadline: Duration,
    /// Wakes issued (the last one may not be acknowledged yet).
    woken: u64,
    /// Wakes acknowledged.
    acked: u64,
    min_ticks: i64,
    /// Wakes before which the sender had to wait for the waiter to fall asleep.
    waited_for_sleep: u64,
    stopped: bool,
}

impl<'c> Session<'c> {
    fn start(ctx: &'c Ctx<'c>, plan: &Plan) -> Result<Session<'c>, NotMeasured> {
        let failed = |what: &str, e: std::io::Error| NotMeasured::Failed(format!("{what}: {e}"));
        let shared = Arc::new(SharedMem::new(SLOTS).map_err(|e| failed("map shared memory", e))?);
        let (wake, end) = open(plan.mechanism).map_err(|e| failed("open the wake mechanism", e))?;
        let waiter =
            Waiter { shared: shared.clone(), end, timer: ctx.timer, cpu: plan.cpus.1, spin: !plan.mechanism.blocks() };
        // `serve` makes system calls through nix and touches shared atomics only: it allocates
        // nothing and takes no lock.
        let peer =
            Peer::start(plan.peer, "osprim-waiter", None, move || waiter.serve()).map_err(|(step, e)| match step {
                StartStep::Fork => failed("fork the waiter", e),
                StartStep::Thread | StartStep::Watch => failed("start the waiter thread", e),
            })?;
        let mut session = Session {
            ctx,
            plan: *plan,
            shared,
            wake,
            peer,
            stat: None,
            deadline: PEER_DEADLINE.for_round(ctx.cfg().budget_s),
            woken: 0,
            acked: 0,
            min_ticks: i64::MAX,
            waited_for_sleep: 0,
            stopped: false,
        };
        session.await_ready()?;
        Ok(session)
    }

    fn await_ready(&mut self) -> Result<(), NotMeasured> {
        let began = Instant::now();
        loop {
            match self.shared.u64(STATE).load(Acquire) {
                READY => break,
                FAILED => return Err(NotMeasured::Failed(failure_text(&self.shared))),
                _ if began.elapsed() > self.deadline => {
                    return Err(NotMeasured::Failed(Fault::Overdue("start", self.deadline).text(&self.plan)));
                }
                _ => std::thread::sleep(Duration::from_micros(100)),
            }
        }
        let tid = self.shared.u64(TID).load(Acquire);
        let pid = self.peer.pid();
        if self.plan.mechanism.blocks() {
            let path = format!("/proc/{pid}/task/{tid}/stat");
            self.stat = Some(std::fs::File::open(&path).map_err(|e| NotMeasured::Failed(format!("open {path}: {e}")))?);
        }
        Ok(())
    }

    /// Whether the waiter is asleep now, per the kernel.
    fn waiter_sleeps(&self) -> bool {
        let Some(f) = &self.stat else { return true };
        let mut buf = [0u8; 512];
        let Ok(n) = f.read_at(&mut buf, 0) else { return false };
        let text = &buf[..n];
        match text.iter().rposition(|&b| b == b')') {
            Some(i) => text.get(i + 2) == Some(&b'S'),
            None => false,
        }
    }

    /// Looks at the waiter's health, the deadline and Ctrl-C, for a wait begun at `began`.
    fn look(&self, what: &'static str, began: Instant) -> Result<(), Fault> {
        if self.shared.u64(STATE).load(Acquire) == FAILED {
            return Err(Fault::Waiter(failure_text(&self.shared)));
        }
        if self.peer.is_process() && self.peer.has_ended() {
            return Err(Fault::Waiter("the waiter process ended".into()));
        }
        let waited = began.elapsed();
        if waited > self.deadline {
            return Err(Fault::Overdue(what, self.deadline));
        }
        if waited > INTERRUPT_AFTER && self.ctx.interrupted() {
            return Err(Fault::Interrupted);
        }
        Ok(())
    }

    /// Waits, outside the clock, until the waiter waits for wake `k` and sleeps.
    fn await_asleep(&mut self, k: u64) -> Result<(), Fault> {
        let same_cpu = self.plan.cpus.0 == self.plan.cpus.1;
        let began = Instant::now();
        let mut looks = 0u64;
        loop {
            if self.shared.u64(ARMED).load(Acquire) == k && self.waiter_sleeps() {
                if looks > 0 {
                    self.waited_for_sleep += 1;
                }
                return Ok(());
            }
            looks += 1;
            if looks.is_multiple_of(64) {
                self.look("go back to sleep", began)?;
            }
            if same_cpu {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Waits until the waiter acknowledges wake `k`.
    fn await_ack(&mut self, k: u64) -> Result<(), Fault> {
        let ack = self.shared.u32(ACK);
        let began = Instant::now();
        let spin = !self.plan.mechanism.blocks();
        let mut looks = 0u64;
        loop {
            let v = ack.load(Acquire);
            if u64::from(v) == k {
                self.acked = k;
                return Ok(());
            }
            if spin {
                looks += 1;
                if looks.is_multiple_of(1 << 16) {
                    self.look("acknowledge", began)?;
                }
                std::hint::spin_loop();
            } else {
                let _ = futex::wait(ack, v, &futex::timeout(Duration::from_millis(10)));
                self.look("acknowledge", began)?;
            }
        }
    }

    /// One wake: the one-way ticks.
    #[inline(never)]
    fn one(&mut self) -> Result<i64, Fault> {
        let k = self.woken + 1;
        self.await_asleep(k)?;
        let t0 = self.ctx.timer.start();
        self.wake.wake(&self.shared, k).map_err(Fault::Io)?;
        self.woken = k;
        self.await_ack(k)?;
        let t1 = self.shared.u64(ARRIVED).load(Acquire);
        let ticks = t1 as i64 - t0 as i64;
        self.min_ticks = self.min_ticks.min(ticks);
        Ok(ticks)
    }

    /// Stops the waiter and collects its report.
    fn finish(&mut self) -> Result<WaiterReport, NotMeasured> {
        self.stopped = true;
        if self.woken > self.acked {
            // A wake not yet taken would merge with the stop number (an eventfd adds them).
            let k = self.woken;
            let _ = self.await_ack(k);
        }
        let state = self.shared.u64(STATE).load(Acquire);
        if state == READY {
            let _ = self.wake.wake(&self.shared, STOP);
        }
        let began = Instant::now();
        while self.shared.u64(STATE).load(Acquire) == READY && began.elapsed() < self.deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        let s = &*self.shared;
        let outcome = match s.u64(STATE).load(Acquire) {
            DONE => Ok(WaiterReport {
                count: s.u64(COUNT).load(Acquire),
                voluntary: s.u64(VOL).load(Acquire),
                involuntary: s.u64(INVOL).load(Acquire),
                ran_on: s.u64(RAN_ON).load(Acquire).checked_sub(1).map(|c| c as usize),
            }),
            FAILED => Err(NotMeasured::Failed(failure_text(s))),
            _ => Err(NotMeasured::Failed(Fault::Overdue("stop", self.deadline).text(&self.plan))),
        };
        self.end_peer();
        outcome
    }

    /// Joins or reaps the waiter (it has been told to stop): a process gets 300 ms, a thread
    /// the deadline.
    fn end_peer(&mut self) {
        let grace = if self.peer.is_process() { Duration::from_millis(300) } else { self.deadline };
        self.peer.end(|| grace, Duration::from_micros(200), || {});
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.finish();
        }
    }
}

/// What one round measured.
pub struct Outcome {
    /// The samples.
    pub samples: Samples,
    /// Wakes issued by the sender.
    pub wakes: u64,
    /// What the waiter reported.
    pub waiter: WaiterReport,
    /// The CPU the sender ended on.
    pub sender_cpu: Option<usize>,
    /// The smallest one-way time, ticks.
    pub min_ticks: i64,
    /// Wakes before which the sender waited for the waiter to fall asleep.
    pub waited_for_sleep: u64,
}

/// Runs one round of `plan` through `ctx`'s sampler.
pub fn measure(ctx: &Ctx, plan: &Plan) -> Result<Outcome, NotMeasured> {
    let mut session = Session::start(ctx, plan)?;
    let mut fault = None;
    let mut samples = ctx.iter_regions_fallible(|n| {
        let mut sum = 0i64;
        for _ in 0..n {
            match session.one() {
                Ok(t) => sum += t,
                Err(f) => {
                    fault = Some(f);
                    return None;
                }
            }
        }
        // One timed region per wake: the sampler subtracts one overhead each.
        Some(crate::sampler::Timed::regions(sum.max(0) as u64, n))
    });
    let sender_cpu = cpu::current_cpu();
    let report = session.finish();
    match fault {
        Some(Fault::Interrupted) => samples.stop = Some(StopReason::Interrupted),
        Some(f) => return Err(NotMeasured::Failed(f.text(plan))),
        None => {}
    }
    let waiter = report?;
    Ok(Outcome {
        samples,
        wakes: session.woken,
        waiter,
        sender_cpu,
        min_ticks: session.min_ticks,
        waited_for_sleep: session.waited_for_sleep,
    })
}

/// The row: samples, checks, what was seen.
fn measured(ctx: &Ctx, plan: &Plan, o: Outcome, bound: Option<platform::timer::sync::OffsetBound>) -> Measured {
    let w = o.waiter;
    let once = "every wake woke the waiter exactly once (sequence numbers)";
    let mut checks = vec![if o.wakes == 0 {
        Check::impossible(once, "no wake was sent (interrupted before the first)")
    } else {
        Check::new(
            once,
            format!("{} wakes, each received once in order", o.wakes),
            format!("{} received", w.count),
            w.count == o.wakes,
        )
    }];
    checks.push(if plan.mechanism.blocks() {
        Check::new(
            "the waiter blocked for every wake (its voluntary context switches, getrusage)",
            format!("≥ {}", w.count),
            format!("{}", w.voluntary),
            w.voluntary >= w.count,
        )
    } else {
        Check::new(
            "the waiter never blocked: it spun (its voluntary context switches, getrusage)",
            format!("≤ {} (1 % of {} wakes, + 2)", w.count / 100 + 2, w.count),
            format!("{}", w.voluntary),
            w.voluntary <= w.count / 100 + 2,
        )
    });
    let (a, b) = plan.cpus;
    let cpu_text = |c: Option<usize>| c.map(|c| format!("CPU {c}")).unwrap_or_else(|| "unknown".into());
    checks.push(Check::new(
        "each end ran on its CPU",
        format!("sender on CPU {a}, waiter on CPU {b}"),
        format!("{} and {}", cpu_text(o.sender_cpu), cpu_text(w.ran_on)),
        o.sender_cpu == Some(a) && w.ran_on == Some(b),
    ));
    let tolerance = bound.map(|b| b.max_abs_ticks()).unwrap_or(0);
    let ns = |t: i64| ctx.timer.ticks_to_ns(t as f64);
    checks.push(if o.min_ticks == i64::MAX {
        Check::impossible("no wake arrives before it was sent", "no wake was timed")
    } else {
        Check::new(
            "no wake arrives before it was sent",
            format!("smallest one-way time ≥ −{:.0} ns (the counters' offset bound)", ns(tolerance)),
            format!("{:.0} ns", ns(o.min_ticks)),
            o.min_ticks >= -tolerance,
        )
    });
    let mut m = Measured::new(o.samples, checks);
    m.params.insert("cpus".into(), serde_json::json!([a, b]));
    let per = |x: u64| (x as f64 / w.count.max(1) as f64 * 100.0).round() / 100.0;
    m.observed.insert(
        "waiter_switches".into(),
        serde_json::json!({
            "voluntary_per_wake": per(w.voluntary),
            "involuntary_per_wake": per(w.involuntary),
            "wakes": w.count,
        }),
    );
    m.observed.insert("sender_waited_for_sleep".into(), serde_json::json!(o.waited_for_sleep));
    if let Some(b) = bound {
        let bound_ns = ns(b.max_abs_ticks());
        m.observed.insert("tsc_offset_bound_ns".into(), serde_json::json!((bound_ns * 10.0).round() / 10.0));
        m.notes.push(format!(
            "the counters of CPUs {} and {} agree within ±{bound_ns:.0} ns: each one-way time is that uncertain",
            b.cpu_a, b.cpu_b
        ));
    }
    if a != b && ctx.virtualized && plan.mechanism.blocks() {
        m.notes.push(
            "across CPUs on a virtual machine the waiter's idle vCPU is woken through the hypervisor: that, not the mechanism, dominates"
                .into(),
        );
    }
    if a == b {
        m.notes.push("one CPU: the time includes the switch from the sender to the waiter".into());
    }
    m
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};

    fn plan(ctx: &Ctx, mechanism: Mechanism, peer: PeerKind, cross: bool) -> Option<Plan> {
        let placement = if cross { Placement::CrossCpu } else { Placement::SameCpu };
        let cpus = cpus_for(ctx, placement).ok()?;
        Some(Plan { mechanism, peer, cpus })
    }

    #[test]
    fn every_mechanism_wakes_a_blocked_waiter_once_per_wake() {
        let _serial = serial();
        for mechanism in [Mechanism::Eventfd, Mechanism::Futex, Mechanism::Pipe, Mechanism::Epoll] {
            for peer in [PeerKind::Thread, PeerKind::Process] {
                with_ctx(0.02, |ctx| {
                    let p = plan(ctx, mechanism, peer, false).unwrap();
                    let o = measure(ctx, &p).unwrap();
                    assert!(!o.samples.per_op_ns.is_empty());
                    assert_eq!(o.waiter.count, o.wakes, "{mechanism:?} {peer:?}");
                    assert!(o.waiter.voluntary >= o.waiter.count, "{mechanism:?} {peer:?}: the waiter blocked");
                    assert_eq!(o.waiter.ran_on, Some(ctx.cpu));
                    assert!(o.min_ticks > 0, "on one CPU no wake arrives before it was sent");
                });
            }
        }
    }

    #[test]
    fn the_row_passes_its_checks_and_poll_needs_two_cpus() {
        let _serial = serial();
        with_ctx(0.02, |ctx| {
            let m = Wake(Mechanism::Eventfd).run(ctx, &Wake(Mechanism::Eventfd).variants(ctx)[0]).unwrap();
            assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
            let same = Params::from([("placement".to_string(), "same_cpu".into())]);
            assert!(matches!(Wake(Mechanism::Poll).run(ctx, &same), Err(NotMeasured::Skipped(_))));
            if ctx.allowed_cpus.len() >= 2 {
                let p = plan(ctx, Mechanism::Poll, PeerKind::Thread, true).unwrap();
                let o = measure(ctx, &p).unwrap();
                assert_eq!(o.waiter.count, o.wakes);
                assert!(o.waiter.voluntary <= o.wakes / 100 + 2, "a spinning waiter does not block");
            }
        });
    }

    /// This process's threads named `prefix…` (other tests' threads run in parallel).
    pub(crate) fn osprim_tasks(prefix: &str) -> usize {
        platform::tasks::threads_named(prefix).len()
    }

    /// [`osprim_tasks`] once it has had up to two seconds to come down to `want`.
    pub(crate) fn osprim_tasks_settled(prefix: &str, want: usize) -> usize {
        platform::tasks::threads_named_settled(prefix, want, Duration::from_secs(2)).len()
    }

    #[test]
    fn an_interrupted_run_leaves_no_thread_or_child_behind() {
        use crate::timer_wake::tests::{interrupt_after, with_flag};
        let _serial = serial();
        let before = osprim_tasks("osprim-waiter");
        let flag = std::sync::atomic::AtomicBool::new(false);
        with_flag(5.0, &flag, |ctx| {
            for (peer, placement) in [("thread", "same_cpu"), ("process", "same_cpu"), ("thread", "cross_cpu")] {
                let p = Params::from([
                    ("peer".to_string(), serde_json::Value::from(peer)),
                    ("placement".to_string(), serde_json::Value::from(placement)),
                ]);
                let began = Instant::now();
                let r = interrupt_after(&flag, Duration::from_millis(100), || Wake(Mechanism::Pipe).run(ctx, &p));
                if placement == "cross_cpu" && ctx.allowed_cpus.len() < 2 {
                    continue;
                }
                let m = r.unwrap();
                assert!(began.elapsed() < Duration::from_secs(2), "stopped early");
                assert_eq!(m.samples.stop, Some(StopReason::Interrupted));
                assert_ne!(m.checks[0].ok, Some(false), "{:?}", m.checks[0]);
            }
        });
        assert_eq!(osprim_tasks_settled("osprim-waiter", before), before, "no waiter thread left running");
        // No child left: waitpid finds none.
        assert!(nix::sys::wait::waitpid(None, Some(nix::sys::wait::WaitPidFlag::WNOHANG)).is_err());
    }

    #[test]
    fn a_waiter_that_dies_fails_the_row_at_once() {
        let _serial = serial();
        with_ctx(0.05, |ctx| {
            let p = plan(ctx, Mechanism::Futex, PeerKind::Process, false).unwrap();
            let mut session = Session::start(ctx, &p).unwrap();
            session.one().unwrap();
            assert!(session.peer.is_process());
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(session.peer.pid()), nix::sys::signal::Signal::SIGKILL)
                .unwrap();
            let began = Instant::now();
            let e = session.one().unwrap_err();
            assert!(began.elapsed() < Duration::from_secs(1));
            assert!(matches!(e, Fault::Waiter(_)), "{e:?}");
        });
    }
}
