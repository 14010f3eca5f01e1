//! Mutexes: `lock.mutex.lock` and `lock.mutex.unlock` (uncontended, timed separately) and
//! `lock.handoff` (a contended mutex passed from its holder to a thread blocked on it).
//! All on libc's `pthread_mutex_t` with default attributes ([`sys::mutex`]).
//!
//! Seed rows: Go! ORB "lock" and "unlock" (`lock.mutex.lock`, `lock.mutex.unlock`);
//! `lock.handoff` is beside them, the cost when the lock is contended.
//!
//! **Timing model.** *lock / unlock:* an array of [`CHUNK`] mutexes, each in its own cache
//! line (a few KiB: they stay in the L1 cache, Go!'s "best case"), prepared before the clock.
//! A sample of `n` operations is `⌈n / CHUNK⌉` timed regions; each region is `start`, the
//! locks (or the unlocks) of up to [`CHUNK`] distinct mutexes in order, `stop`; the unlocks
//! (or the locks) in between are outside the clock. The sampler subtracts one timer overhead
//! per region ([`crate::sampler::Timed`]).
//! *handoff:* the measuring thread holds the mutex; a second thread (pinned to the same CPU,
//! or another one with `placement=cross_cpu`) is told to lock it and is left until it sleeps
//! in `pthread_mutex_lock` (glibc's lock word says "waiters", and its `/proc` state is `S`).
//! Then the holder stamps the counter (`start`) and unlocks; the waiter stamps it (`stop`) the
//! moment its `pthread_mutex_lock` returns. One operation is that interval: unlock → the
//! waiter owns the mutex. On one CPU it includes the holder going to sleep (it waits for the
//! waiter's report on a futex) and the switch to the waiter; across CPUs the wake-up of the
//! other CPU. Only the stamps are timed; the waiter then unlocks and reports, outside.
//!
//! *Cold-cache mode* (`cache=cold`, `crate::cold`): one mutex, one lock (or unlock) per sample,
//! its other half outside the clock, the disturbance right before `start`; probed after
//! every sample.
//!
//! **Validation.** *lock / unlock:* every call returned 0, and, after the last region of every
//! sample, a second thread (pinned to the same CPU, so no cache line moves) tries each mutex
//! of that region with `pthread_mutex_trylock`: `EBUSY` for all after the locks, success for
//! all after the unlocks; and an uncontended lock costs clearly less than a bare system call
//! (it stays in user space). *handoff:* the waiter took the mutex once per hand-off (a
//! counter), its voluntary context switches (`getrusage(RUSAGE_THREAD)`, read after its stamp)
//! rose across every `pthread_mutex_lock` (it really slept), both threads ran on their CPUs,
//! and across CPUs no hand-off ends before it began (within the counters' offset bound).
//! Every wait has a deadline ([`DEADLINE`]); the second thread is joined on every path.

use super::ipc::cpus_for;
use super::pingpong::Placement;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use platform::timer::Timer;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use sys::switches::Switches;
use sys::{self, futex, mutex::MutexArray, mutex::Probe};

/// Mutexes locked (or unlocked) per timed region: 256 × 64 bytes, 16 KiB, within L1.
pub const CHUNK: usize = 256;

/// The longest any wait for the other thread may take.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// Which half of the pair a `lock.mutex.*` row times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `pthread_mutex_lock` of a free mutex.
    Lock,
    /// `pthread_mutex_unlock` of a mutex held, with no waiter.
    Unlock,
}

/// Uncontended `pthread_mutex_lock` or `pthread_mutex_unlock`.
pub struct Mutex(pub Op);

/// What the prober thread found for one region.
#[derive(Default)]
struct ProbeTally {
    probed: u64,
    busy: u64,
    free: u64,
    errors: u64,
}

impl Benchmark for Mutex {
    fn id(&self) -> &'static str {
        match self.0 {
            Op::Lock => "lock.mutex.lock",
            Op::Unlock => "lock.mutex.unlock",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Op::Lock => "uncontended pthread_mutex_lock (default attributes), the unlock untimed",
            Op::Unlock => "uncontended pthread_mutex_unlock (default attributes), the lock untimed",
        }
    }
    /// One mutex per sample (module doc).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let mutexes = MutexArray::new(CHUNK);
        let cpu = ctx.cpu;
        let op = self.0;
        let (req_tx, req_rx) = mpsc::channel::<Range<usize>>();
        let (rep_tx, rep_rx) = mpsc::channel::<[u64; 3]>();
        let (samples, tally, failures, calls, lost) = std::thread::scope(|s| {
            let req_tx = req_tx; // moved in: dropped below (or while unwinding), which ends the prober
            let m = &mutexes;
            s.spawn(move || prober(m, cpu, req_rx, rep_tx));
            let timer = ctx.timer;
            let (mut held, mut freed) = (ProbeTally::default(), ProbeTally::default());
            let (mut failures, mut calls) = (0u64, 0u64);
            let mut lost: Option<String> = None;
            let ask = |range: Range<usize>| -> Option<[u64; 3]> {
                req_tx.send(range).ok()?;
                rep_rx.recv_timeout(DEADLINE).ok()
            };
            let samples = if ctx.cold().is_some() {
                // One mutex, one operation per sample; the other half of the pair and the
                // probes outside the clock, the disturbance right before `start`.
                ctx.iter_cold(|before| {
                    let (t, locked) = match op {
                        Op::Lock => {
                            before.now();
                            let t0 = timer.start();
                            let locked = mutexes.lock(0);
                            (timer.stop().wrapping_sub(t0), locked)
                        }
                        Op::Unlock => (0, mutexes.lock(0)),
                    };
                    failures += (1 - locked.count()) as u64;
                    calls += 2;
                    let Some(r) = ask(0..locked.count()) else {
                        lost = Some("the prober thread did not answer within the deadline".into());
                        return None;
                    };
                    held.add(r);
                    let t = match op {
                        Op::Lock => {
                            failures += locked.unlock();
                            t
                        }
                        Op::Unlock => {
                            before.now();
                            let t0 = timer.start();
                            let f = locked.unlock();
                            let t = timer.stop().wrapping_sub(t0);
                            failures += f;
                            t
                        }
                    };
                    let Some(r) = ask(0..1) else {
                        lost = Some("the prober thread did not answer within the deadline".into());
                        return None;
                    };
                    freed.add(r);
                    Some(Timed::one(t))
                })
            } else {
                ctx.iter_regions_fallible(|n| {
                    let mut left = n;
                    let (mut ticks, mut regions) = (0u64, 0u64);
                    while left > 0 {
                        let k = left.min(CHUNK as u64) as usize;
                        let last = left == k as u64;
                        let (t, locked) = match op {
                            Op::Lock => {
                                let t0 = timer.start();
                                let locked = mutexes.lock_range(0..k);
                                (timer.stop().wrapping_sub(t0), locked)
                            }
                            Op::Unlock => (0, mutexes.lock_range(0..k)),
                        };
                        failures += (k - locked.count()) as u64;
                        calls += 2 * k as u64;
                        if last {
                            let Some(r) = ask(0..locked.count()) else {
                                lost = Some("the prober thread did not answer within the deadline".into());
                                return None;
                            };
                            held.add(r);
                        }
                        let count = locked.count();
                        let t = match op {
                            Op::Lock => {
                                failures += locked.unlock();
                                t
                            }
                            Op::Unlock => {
                                let t0 = timer.start();
                                let f = locked.unlock();
                                let t = timer.stop().wrapping_sub(t0);
                                failures += f;
                                t
                            }
                        };
                        if last {
                            let Some(r) = ask(0..count) else {
                                lost = Some("the prober thread did not answer within the deadline".into());
                                return None;
                            };
                            freed.add(r);
                        }
                        ticks += t;
                        regions += 1;
                        left -= k as u64;
                    }
                    // Each region carries one timer overhead; the sampler subtracts one per region.
                    Some(Timed::regions(ticks, regions))
                })
            };
            drop(req_tx); // the prober ends when the channel closes
            (samples, [held, freed], failures, calls, lost)
        });
        let [held, freed] = tally;
        // Against a hot system call: the hot twins' median in a cold visit.
        let median = crate::hot_median(&samples);
        let cold = ctx.cold().is_some();
        let mut checks = vec![
            Check::all_ok("every pthread_mutex_lock and _unlock returned 0", failures, calls),
            Check::new(
                "held after lock: another thread's trylock gets EBUSY (last region of each sample)",
                format!("EBUSY for all {}", held.probed),
                format!("{} EBUSY, {} free, {} errors", held.busy, held.free, held.errors),
                held.busy == held.probed && held.probed > 0,
            ),
            Check::new(
                "free after unlock: another thread's trylock succeeds (last region of each sample)",
                format!("success for all {}", freed.probed),
                format!("{} free, {} EBUSY, {} errors", freed.free, freed.busy, freed.errors),
                freed.free == freed.probed && freed.probed > 0,
            ),
            user_space_check(ctx, median),
        ];
        if let Some(why) = lost {
            checks.push(Check::new("the prober answered every probe", "all answered", why, false));
        }
        let mut m = Measured::new(samples, checks);
        if cold {
            m.notes.push(format!(
                "one mutex, one {} per sample; the {} outside the clock",
                if op == Op::Lock { "lock" } else { "unlock" },
                if op == Op::Lock { "unlock" } else { "lock" }
            ));
            return Ok(m);
        }
        m.params.insert("mutexes".into(), CHUNK.into());
        m.notes.push(format!(
            "{CHUNK} distinct mutexes per timed region, each in its own cache line; the {} are outside the clock",
            if op == Op::Lock { "unlocks" } else { "locks" }
        ));
        Ok(m)
    }
}

impl ProbeTally {
    fn add(&mut self, [busy, free, errors]: [u64; 3]) {
        self.probed += busy + free + errors;
        self.busy += busy;
        self.free += free;
        self.errors += errors;
    }
}

/// The second thread of `lock.mutex.*`: pinned to `cpu`, answers each range with how many of
/// its mutexes were busy, free, or gave an error. Ends when the request channel closes, or
/// after [`DEADLINE`] without a request.
fn prober(m: &MutexArray, cpu: usize, req: mpsc::Receiver<Range<usize>>, rep: mpsc::Sender<[u64; 3]>) {
    let pinned = sys::cpu::pin_current_thread(cpu).is_ok();
    while let Ok(range) = req.recv_timeout(DEADLINE) {
        let mut r = [0u64; 3];
        for i in range {
            match m.probe(i) {
                Probe::Busy => r[0] += 1,
                Probe::Free => r[1] += 1,
                Probe::Error(_) => r[2] += 1,
            }
        }
        if !pinned {
            r = [0, 0, r[0] + r[1] + r[2]]; // unpinned answers count as errors
        }
        if rep.send(r).is_err() {
            break;
        }
    }
}

/// An operation that should not enter the kernel costs clearly less than a bare system call.
fn user_space_check(ctx: &mut Ctx, median_ns: f64) -> Check {
    let name = "costs clearly less than a bare system call (uncontended: no kernel entry)";
    if !sys::raw::AVAILABLE {
        return Check::impossible(name, "no bare system call to compare with on this architecture");
    }
    let r = ctx.references();
    Check::new(
        name,
        format!("< {:.1} ns (2/3 of bare getppid)", r.syscall_ns * 2.0 / 3.0),
        format!("{median_ns:.1} ns"),
        median_ns < r.syscall_ns * 2.0 / 3.0,
    )
}

/// A contended mutex handed from its holder to a thread blocked on it.
pub struct Handoff;

/// What the two threads of `lock.handoff` share.
struct Shared {
    mutex: MutexArray,
    /// The round the waiter is asked to take (futex word).
    go: AtomicU32,
    /// The round the waiter is about to lock for (set just before its `pthread_mutex_lock`).
    locking: AtomicU32,
    /// The last round the waiter finished: took, stamped, unlocked (futex word).
    done: AtomicU32,
    /// The waiter's stamp when it owned the mutex, for round `done`.
    owned_at: AtomicU64,
    /// Hand-offs the waiter took, and of those, how many its voluntary switches rose across.
    taken: AtomicU64,
    slept: AtomicU64,
    /// Rounds the waiter ran off its CPU.
    off_cpu: AtomicU64,
    /// The waiter's thread id (0 until known), and whether it gave up (pinning, deadline).
    tid: AtomicI32,
    failed: AtomicBool,
    stop: AtomicBool,
}

impl Benchmark for Handoff {
    fn id(&self) -> &'static str {
        "lock.handoff"
    }
    fn about(&self) -> &'static str {
        "contended pthread mutex: unlock -> the thread blocked in pthread_mutex_lock owns it"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("placement", [Placement::SameCpu, Placement::CrossCpu].map(|p| p.name()))
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let placement = match params.get("placement").and_then(|v| v.as_str()) {
            Some("cross_cpu") => Placement::CrossCpu,
            _ => Placement::SameCpu,
        };
        let cpus = cpus_for(ctx, placement).map_err(NotMeasured::Skipped)?;
        let tolerance = if placement == Placement::CrossCpu {
            super::ipc::synchronised_bound(ctx, cpus)?.max_abs_ticks()
        } else {
            0
        };
        sys::cpu::pin_current_thread(cpus.0)
            .map_err(|e| NotMeasured::Failed(format!("pinning the holder to CPU {}: {e}", cpus.0)))?;
        let shared = Shared {
            mutex: MutexArray::new(1),
            go: AtomicU32::new(0),
            locking: AtomicU32::new(0),
            done: AtomicU32::new(0),
            owned_at: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            slept: AtomicU64::new(0),
            off_cpu: AtomicU64::new(0),
            tid: AtomicI32::new(0),
            failed: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        };
        let timer = ctx.timer;
        let result = std::thread::scope(|s| {
            let sh = &shared;
            s.spawn(move || waiter(sh, cpus.1, timer));
            let r = holder(ctx, sh, placement, timer);
            sh.stop.store(true, Ordering::Release);
            sh.go.fetch_add(1, Ordering::Release);
            let _ = futex::wake(&sh.go, 1);
            r
        });
        let _ = sys::cpu::pin_current_thread(ctx.cpu);
        let run = result?;
        let taken = shared.taken.load(Ordering::Acquire);
        let slept = shared.slept.load(Ordering::Acquire);
        let off_cpu = shared.off_cpu.load(Ordering::Acquire);
        let mut checks = vec![
            Check::new(
                "the waiter took the mutex once per hand-off (a counter)",
                run.handoffs.to_string(),
                taken.to_string(),
                taken == run.handoffs && run.handoffs > 0,
            ),
            Check::new(
                "the waiter slept in pthread_mutex_lock every time (its voluntary switches rose, getrusage)",
                format!("all {taken}"),
                format!("{slept} of {taken}"),
                slept == taken && taken > 0,
            ),
            Check::new(
                "both threads ran on their CPUs",
                format!("holder on {}, waiter on {} every round", cpus.0, cpus.1),
                format!("holder ended on {:?}; waiter off its CPU in {off_cpu} rounds", run.holder_cpu),
                run.holder_cpu == Some(cpus.0) && off_cpu == 0,
            ),
        ];
        if placement == Placement::CrossCpu {
            checks.push(Check::new(
                "no hand-off ends before it began",
                format!("shortest ≥ −{:.0} ns (the counters' offset bound)", ctx.timer.ticks_to_ns(tolerance as f64)),
                format!("{:.0} ns", ctx.timer.ticks_to_ns(run.min_ticks as f64)),
                run.min_ticks >= -tolerance,
            ));
        }
        if let Some(why) = run.error {
            checks.push(Check::new("every hand-off completed within the deadline", "all", why, false));
        }
        let mut m = Measured::new(run.samples, checks);
        m.params.insert("cpus".into(), serde_json::json!([cpus.0, cpus.1]));
        m.notes.push(
            "one operation: the holder's unlock until the waiter's pthread_mutex_lock returns, stamped on each side"
                .into(),
        );
        Ok(m)
    }
}

/// What the holder learnt.
struct HolderRun {
    samples: crate::sampler::Samples,
    handoffs: u64,
    min_ticks: i64,
    holder_cpu: Option<usize>,
    error: Option<String>,
}

/// The measuring side of `lock.handoff`.
fn holder(ctx: &Ctx, sh: &Shared, placement: Placement, timer: Timer) -> Result<HolderRun, NotMeasured> {
    let mut round = 0u32;
    let mut handoffs = 0u64;
    let mut min_ticks = i64::MAX;
    let mut error: Option<String> = None;
    let samples = ctx.iter_regions_fallible(|n| {
        let mut sum = 0i64;
        for _ in 0..n {
            match handoff(sh, placement, timer, &mut round) {
                Ok(t) => {
                    handoffs += 1;
                    min_ticks = min_ticks.min(t);
                    sum += t.max(0);
                }
                Err(e) => {
                    error = Some(e);
                    return None;
                }
            }
        }
        // Each hand-off is one timed region: the sampler subtracts one overhead each.
        Some(Timed::regions(sum.max(0) as u64, n))
    });
    if handoffs == 0 {
        return Err(NotMeasured::Failed(error.unwrap_or_else(|| "no hand-off was made".into())));
    }
    Ok(HolderRun { samples, handoffs, min_ticks, holder_cpu: sys::cpu::current_cpu(), error })
}

/// One hand-off: lock, let the waiter block on the mutex, stamp, unlock, wait for the
/// waiter's report. Returns the waiter's stamp minus the holder's, in ticks.
fn handoff(sh: &Shared, placement: Placement, timer: Timer, round: &mut u32) -> Result<i64, String> {
    let deadline = Instant::now() + DEADLINE;
    let late = |what: &str| -> Result<(), String> {
        if sh.failed.load(Ordering::Acquire) {
            return Err("the waiting thread gave up (could not pin, or waited past its deadline)".into());
        }
        if Instant::now() > deadline { Err(format!("{what}: no progress within {DEADLINE:?}")) } else { Ok(()) }
    };
    let held = sh.mutex.lock(0); // free: the waiter released it before its last report
    *round = round.wrapping_add(1);
    let r = *round;
    sh.go.store(r, Ordering::Release);
    futex::wake(&sh.go, 1).map_err(|e| format!("futex wake: {e}"))?;
    // Until the waiter sleeps in pthread_mutex_lock.
    loop {
        let asleep = sh.locking.load(Ordering::Acquire) == r
            && sh.mutex.has_waiters(0) != Some(false)
            && thread_state(sh.tid.load(Ordering::Acquire)) == Some('S');
        if asleep {
            break;
        }
        late("waiting for the waiter to block on the mutex")?;
        if placement == Placement::SameCpu {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    let t0 = timer.start();
    drop(held);
    let step = futex::timeout(Duration::from_millis(50));
    loop {
        let seen = sh.done.load(Ordering::Acquire);
        if seen == r {
            break;
        }
        late("waiting for the waiter to take the mutex")?;
        let _ = futex::wait(&sh.done, seen, &step);
    }
    let t1 = sh.owned_at.load(Ordering::Acquire);
    Ok(t1.wrapping_sub(t0) as i64)
}

/// A thread's scheduler state letter from `/proc/self/task/<tid>/stat` (`S`: sleeping).
pub(crate) fn thread_state(tid: i32) -> Option<char> {
    if tid == 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The waiting side of `lock.handoff`: pinned to `cpu`; for each round, locks the mutex
/// (blocking while the holder has it), stamps, counts, unlocks, reports.
fn waiter(sh: &Shared, cpu: usize, timer: Timer) {
    if sys::cpu::pin_current_thread(cpu).is_err() {
        sh.failed.store(true, Ordering::Release);
        return;
    }
    sh.tid.store(sys::process::gettid(), Ordering::Release);
    let step = futex::timeout(Duration::from_millis(50));
    let mut round = 0u32;
    loop {
        let idle_since = Instant::now();
        loop {
            if sh.stop.load(Ordering::Acquire) {
                return;
            }
            if sh.go.load(Ordering::Acquire) != round {
                break;
            }
            if idle_since.elapsed() > DEADLINE {
                sh.failed.store(true, Ordering::Release);
                return;
            }
            let _ = futex::wait(&sh.go, round, &step);
        }
        round = sh.go.load(Ordering::Acquire);
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        let before = Switches::now().voluntary;
        sh.locking.store(round, Ordering::Release);
        let held = sh.mutex.lock(0);
        let t1 = timer.stop();
        let after = Switches::now().voluntary;
        sh.owned_at.store(t1, Ordering::Release);
        sh.taken.fetch_add(1, Ordering::Relaxed);
        if after > before {
            sh.slept.fetch_add(1, Ordering::Relaxed);
        }
        if sys::cpu::current_cpu() != Some(cpu) {
            sh.off_cpu.fetch_add(1, Ordering::Relaxed);
        }
        drop(held);
        sh.done.store(round, Ordering::Release);
        let _ = futex::wake(&sh.done, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_ctx;

    #[test]
    fn lock_and_unlock_are_probed_held_then_free() {
        with_ctx(0.05, |ctx| {
            for op in [Op::Lock, Op::Unlock] {
                let m = Mutex(op).run(ctx, &Params::new()).expect("lock.mutex runs");
                assert!(!m.samples.per_op_ns.is_empty());
                for c in &m.checks[..3] {
                    assert_eq!(c.ok, Some(true), "{op:?}: {c:?}");
                }
            }
        });
    }

    #[test]
    fn handoff_wakes_a_sleeping_waiter() {
        with_ctx(0.05, |ctx| {
            let mut p = Params::new();
            p.insert("placement".into(), "same_cpu".into());
            let m = Handoff.run(ctx, &p).expect("lock.handoff runs");
            assert!(!m.samples.per_op_ns.is_empty());
            assert_eq!(m.checks[0].ok, Some(true), "{:?}", m.checks[0]);
            assert_eq!(m.checks[1].ok, Some(true), "{:?}", m.checks[1]);
        });
    }

    #[test]
    fn thread_state_reads_this_thread() {
        assert_eq!(thread_state(sys::process::gettid()), Some('R'));
        assert_eq!(thread_state(0), None);
    }
}
