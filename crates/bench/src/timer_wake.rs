//! Timer wake-up latency, as `cyclictest` measures it: `notify.timer`.
//!
//! Seed rows: VMMC's "interrupt → handler" stages in their nearest measurable form here: a
//! timer interrupt making a sleeping thread run again, time from the programmed expiry to the
//! thread running.
//!
//! The measuring thread (pinned to its CPU) sleeps until an absolute expiry on
//! `CLOCK_MONOTONIC` and, on waking, reads `CLOCK_MONOTONIC` (`clock_gettime`, as cyclictest
//! does); the latency is the time read minus the expiry. Expiries follow cyclictest's scheme:
//! the first is one interval after the start, each next one the previous expiry plus the
//! interval (absolute, so lateness does not accumulate), and an expiry already past when the
//! thread wakes is skipped (cyclictest's catch-up loop). How the thread sleeps, `via`:
//! - `clock_nanosleep`: `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` (`cyclictest -n`);
//! - `timerfd`: a `CLOCK_MONOTONIC` timerfd armed once per expiry (`TFD_TIMER_ABSTIME`), then
//!   `read`;
//! - `posix_timer`: a POSIX timer armed once per expiry (`TIMER_ABSTIME`) whose `SIGEV_SIGNAL`
//!   goes to this thread (`SIGEV_THREAD_ID`), taken with `sigtimedwait` while blocked.
//!
//! **Policy.** `SCHED_FIFO` priority 95 (`cyclictest -p95`) where permitted, otherwise
//! `SCHED_OTHER` with a note; the row's `policy` parameter says which, and the thread's policy
//! is put back afterwards (checked).
//!
//! **Timing model.** One sample is ONE wake-up (`n = 1`), so the row's percentiles are of
//! single wake-ups; the sampler is not used: each round takes a FIXED count of wake-ups.
//! `observed` gives min, median, p99, p99.9 and max in µs.
//!
//! **Count and interval.** The interval is `OSPRIM_TIMER_INTERVAL_US` (default 1000 µs), shown
//! as the `interval_us` parameter. The count over the whole run is `OSPRIM_TIMER_LOOPS`, or by
//! default what fits the benchmark's budget (budget ÷ interval: 1,000 at the default 1 s and
//! 1 ms); each round takes its share, `⌈loops ÷ rounds⌉`. For a side-by-side run with
//! `cyclictest -m -p95 -i1000 -l N -t1 -a CPU -n`, run `OSPRIM_TIMER_LOOPS=N osprim run
//! notify.timer --rounds 1 --cpu CPU`: the same count, interval, policy and CPU.
//!
//! **Validation:** every expiry was waited for (the count of wake-ups; a timerfd read that
//! reports exactly one expiry; a signal with no merged expiries, `timer_getoverrun` = 0); no
//! latency is negative (no wake-up before its expiry); missed periods (latency over the
//! interval) are counted, and any fails a check; the thread stayed on its CPU; its policy was
//! restored. Ctrl-C ends the round at the next wake-up, keeping the latencies taken; the timer
//! is deleted, the timerfd closed, the signal mask restored in every case (guards).

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::{Samples, StopReason};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId as TfdClock, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use nix::time::{ClockId, ClockNanosleepFlags, clock_gettime, clock_nanosleep};
use std::os::fd::AsFd;
use std::time::Duration;
use sys::timer::{BlockedSignal, Policy, PolicyGuard, PosixTimer, current_policy, timer_signal};

/// The environment variable giving the interval in µs.
pub const INTERVAL_ENV: &str = "OSPRIM_TIMER_INTERVAL_US";
/// The environment variable giving the wake-ups over the whole run.
pub const LOOPS_ENV: &str = "OSPRIM_TIMER_LOOPS";
/// The default interval, µs (cyclictest's `-i1000`).
pub const DEFAULT_INTERVAL_US: u64 = 1000;
/// cyclictest's `-p95`.
pub const FIFO_PRIORITY: i32 = 95;

/// How the thread sleeps until its expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `clock_nanosleep(TIMER_ABSTIME)`.
    ClockNanosleep,
    /// A timerfd, `read`.
    Timerfd,
    /// A POSIX timer's signal, `sigtimedwait`.
    PosixTimer,
}

impl Via {
    /// The parameter value.
    pub fn name(self) -> &'static str {
        match self {
            Via::ClockNanosleep => "clock_nanosleep",
            Via::Timerfd => "timerfd",
            Via::PosixTimer => "posix_timer",
        }
    }

    fn parse(s: &str) -> Via {
        match s {
            "timerfd" => Via::Timerfd,
            "posix_timer" => Via::PosixTimer,
            _ => Via::ClockNanosleep,
        }
    }
}

/// `notify.timer`.
pub struct TimerWake;

/// The interval from the environment (µs, at least 10), or the default.
pub fn interval_us() -> u64 {
    std::env::var(INTERVAL_ENV).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_INTERVAL_US).max(10)
}

/// Wake-ups in one round: `⌈total ÷ rounds⌉`, the total from the environment or the run's
/// budget (`round_budget_s × rounds`) over the interval; at least 10.
pub fn loops_per_round(round_budget_s: f64, rounds: usize, interval_us: u64) -> u64 {
    let rounds = rounds.max(1) as u64;
    let total = std::env::var(LOOPS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| (round_budget_s * rounds as f64 * 1e6 / interval_us as f64).round().max(0.0) as u64);
    total.div_ceil(rounds).max(10)
}

impl Benchmark for TimerWake {
    fn id(&self) -> &'static str {
        "notify.timer"
    }
    fn about(&self) -> &'static str {
        "timer wake-up latency (cyclictest): time the thread runs minus its absolute expiry, one wake-up per sample"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        [Via::ClockNanosleep, Via::Timerfd, Via::PosixTimer]
            .iter()
            .map(|v| {
                let mut p = Params::new();
                p.insert("via".into(), v.name().into());
                p.insert("interval_us".into(), serde_json::json!(interval_us()));
                p
            })
            .collect()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let via = Via::parse(params.get("via").and_then(|v| v.as_str()).unwrap_or_default());
        let interval = params.get("interval_us").and_then(|v| v.as_u64()).unwrap_or_else(interval_us).max(10);
        let loops = loops_per_round(ctx.cfg().budget_s, ctx.cfg().rounds, interval);
        let before = current_policy().map_err(|e| NotMeasured::Failed(format!("read the policy: {e}")))?;
        let guard = PolicyGuard::switch(Policy { policy: libc::SCHED_FIFO, priority: FIFO_PRIORITY });
        let refused = guard.as_ref().err().map(|e| e.to_string());
        let policy = current_policy().unwrap_or(before);
        let run = Cycle { via, interval_ns: interval as i64 * 1000, loops };
        let outcome = run.run(ctx);
        drop(guard);
        let after = current_policy().ok();
        let o = outcome?;
        let mut m = row(ctx, &run, o);
        m.params.insert("policy".into(), policy.name().into());
        m.params.insert("loops_per_round".into(), serde_json::json!(loops));
        m.params.insert("cpu".into(), serde_json::json!(ctx.cpu));
        m.checks.push(Check::new(
            "the thread's policy was restored",
            before.name(),
            after.map(|p| p.name()).unwrap_or_else(|| "unknown".into()),
            after == Some(before),
        ));
        if let Some(why) = refused {
            m.notes.push(format!(
                "SCHED_FIFO {FIFO_PRIORITY} refused ({why}): measured as SCHED_OTHER, where any runnable task delays the wake-up"
            ));
        }
        Ok(m)
    }
}

/// One round's plan.
struct Cycle {
    via: Via,
    interval_ns: i64,
    loops: u64,
}

/// What one round saw.
struct CycleOutcome {
    /// Latencies, ns, in order.
    latencies: Vec<f64>,
    /// Wake-ups whose latency exceeded the interval.
    missed: u64,
    /// Expiries skipped because they had passed when the thread woke.
    skipped: u64,
    /// Waits that did not end in exactly one expiry (a timerfd count ≠ 1, a signal with
    /// overruns, a signal that never came).
    odd_waits: u64,
    /// The CPU the thread ran on at the end.
    ran_on: Option<usize>,
    interrupted: bool,
}

fn now_ns() -> i64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => t.tv_sec() * 1_000_000_000 + t.tv_nsec(),
        Err(_) => 0,
    }
}

fn timespec(ns: i64) -> TimeSpec {
    TimeSpec::new(ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The sleeper of one `via`, holding what it needs (timer, descriptor, blocked signal).
enum Sleeper {
    Nanosleep,
    Timerfd(TimerFd),
    Posix(PosixTimer, BlockedSignal),
}

impl Sleeper {
    fn new(via: Via) -> std::io::Result<Sleeper> {
        Ok(match via {
            Via::ClockNanosleep => Sleeper::Nanosleep,
            Via::Timerfd => Sleeper::Timerfd(TimerFd::new(TfdClock::CLOCK_MONOTONIC, TimerFlags::TFD_CLOEXEC)?),
            Via::PosixTimer => {
                let signo = timer_signal();
                let blocked = BlockedSignal::block(signo)?;
                let timer = PosixTimer::to_thread(sys::process::gettid(), signo)?;
                Sleeper::Posix(timer, blocked)
            }
        })
    }

    /// Sleeps until `at` (ns on `CLOCK_MONOTONIC`). `Ok(false)`: the wait did not end in exactly
    /// one expiry.
    fn sleep_until(&self, at: i64, interval_ns: i64) -> std::io::Result<bool> {
        let ts = timespec(at);
        match self {
            Sleeper::Nanosleep => loop {
                match clock_nanosleep(ClockId::CLOCK_MONOTONIC, ClockNanosleepFlags::TIMER_ABSTIME, &ts) {
                    Ok(_) => return Ok(true),
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                }
            },
            Sleeper::Timerfd(fd) => {
                fd.set(Expiration::OneShot(ts), TimerSetTimeFlags::TFD_TIMER_ABSTIME)?;
                let mut buf = [0u8; 8];
                loop {
                    match nix::unistd::read(fd.as_fd(), &mut buf) {
                        Ok(8) => return Ok(u64::from_ne_bytes(buf) == 1),
                        Ok(_) => return Ok(false),
                        Err(nix::errno::Errno::EINTR) => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Sleeper::Posix(timer, blocked) => {
                timer.arm_at(libc::timespec { tv_sec: ts.tv_sec(), tv_nsec: ts.tv_nsec() })?;
                let limit =
                    Duration::from_nanos((at - now_ns()).max(0) as u64 + interval_ns as u64) + Duration::from_secs(1);
                Ok(blocked.wait(limit)? && timer.overrun() == 0)
            }
        }
    }
}

impl Cycle {
    /// The round: `loops` wake-ups, or fewer when interrupted.
    fn run(&self, ctx: &Ctx) -> Result<CycleOutcome, NotMeasured> {
        let sleeper =
            Sleeper::new(self.via).map_err(|e| NotMeasured::Failed(format!("set up {}: {e}", self.via.name())))?;
        let mut o = CycleOutcome {
            latencies: Vec::with_capacity(self.loops as usize),
            missed: 0,
            skipped: 0,
            odd_waits: 0,
            ran_on: None,
            interrupted: false,
        };
        let mut next = now_ns() + self.interval_ns;
        for _ in 0..self.loops {
            if ctx.interrupted() {
                o.interrupted = true;
                break;
            }
            let one = sleeper
                .sleep_until(next, self.interval_ns)
                .map_err(|e| NotMeasured::Failed(format!("{}: the wait failed: {e}", self.via.name())))?;
            let now = now_ns();
            let latency = now - next;
            o.latencies.push(latency as f64);
            o.odd_waits += u64::from(!one);
            o.missed += u64::from(latency > self.interval_ns);
            next += self.interval_ns;
            while now > next {
                next += self.interval_ns;
                o.skipped += 1;
            }
        }
        o.ran_on = sys::cpu::current_cpu();
        Ok(o)
    }
}

/// The row of one round.
fn row(ctx: &Ctx, c: &Cycle, o: CycleOutcome) -> Measured {
    let n = o.latencies.len() as u64;
    let mut sorted = o.latencies.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| stats::order::percentile(&sorted, p);
    let min = sorted.first().copied().unwrap_or(f64::NAN);
    let mut checks = vec![Check::new(
        "every expiry was waited for (wake-ups counted)",
        if o.interrupted { format!("≤ {} (interrupted)", c.loops) } else { format!("{}", c.loops) },
        format!("{n}"),
        n == c.loops || (o.interrupted && n <= c.loops),
    )];
    if c.via != Via::ClockNanosleep {
        checks.push(Check::all_ok(
            match c.via {
                Via::Timerfd => "each timerfd read reported exactly one expiry",
                _ => "each expiry came as its own signal (timer_getoverrun = 0)",
            },
            o.odd_waits,
            n,
        ));
    }
    checks.push(Check::new("no wake-up before its expiry", "smallest latency ≥ 0", format!("{min:.0} ns"), min >= 0.0));
    checks.push(Check::new(
        "no missed period (latency over the interval)",
        format!("0 of {n} over {} µs", c.interval_ns / 1000),
        format!("{} missed, {} expiries skipped", o.missed, o.skipped),
        o.missed == 0,
    ));
    checks.push(Check::new(
        "the thread ran on its CPU",
        format!("CPU {}", ctx.cpu),
        o.ran_on.map(|c| format!("CPU {c}")).unwrap_or_else(|| "unknown".into()),
        o.ran_on == Some(ctx.cpu),
    ));
    let samples = Samples {
        per_op_ns: o.latencies,
        iterations_per_sample: 1,
        stop: Some(if o.interrupted { StopReason::Interrupted } else { StopReason::FixedCount }),
        ..Samples::default()
    };
    let mut m = Measured::new(samples, checks);
    let us = |v: f64| (v / 10.0).round() / 100.0;
    m.observed.insert(
        "latency_us".into(),
        serde_json::json!({
            "min": us(min), "median": us(pct(50.0)), "p99": us(pct(99.0)),
            "p99_9": us(pct(99.9)), "max": us(sorted.last().copied().unwrap_or(f64::NAN)),
        }),
    );
    m.observed.insert("missed_periods".into(), serde_json::json!(o.missed));
    m.observed.insert("wakeups".into(), serde_json::json!(n));
    m.notes.push(
        "each sample is one wake-up: clock_gettime(CLOCK_MONOTONIC) on waking minus the absolute expiry (cyclictest's latency)"
            .into(),
    );
    m
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering::Relaxed;

    fn params(via: Via) -> Params {
        let mut p = Params::new();
        p.insert("via".into(), via.name().into());
        p.insert("interval_us".into(), serde_json::json!(500));
        p
    }

    fn fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
    }

    #[test]
    fn every_via_counts_its_wake_ups_and_restores_everything() {
        let _serial = serial();
        for via in [Via::ClockNanosleep, Via::Timerfd, Via::PosixTimer] {
            with_ctx(0.02, |ctx| {
                let policy = current_policy().unwrap();
                let timers = sys::timer::posix_timers_now();
                let m = TimerWake.run(ctx, &params(via)).unwrap();
                let loops = loops_per_round(ctx.cfg().budget_s, ctx.cfg().rounds, 500) as usize;
                assert_eq!(m.samples.per_op_ns.len(), loops, "{via:?}");
                assert_eq!(m.samples.iterations_per_sample, 1);
                assert!(m.samples.per_op_ns.iter().all(|&l| l >= 0.0), "{via:?}: no wake-up before its expiry");
                let failed: Vec<_> = m.checks.iter().filter(|c| c.ok == Some(false)).collect();
                // A missed period on a busy machine is a fact, not a bug of the benchmark.
                assert!(failed.iter().all(|c| c.name.starts_with("no missed period")), "{via:?}: {failed:?}");
                assert!(m.params.contains_key("policy"));
                assert_eq!(current_policy().unwrap(), policy, "policy restored");
                assert_eq!(sys::timer::posix_timers_now(), timers, "timer deleted");
                assert!(!BlockedSignal::is_blocked(timer_signal()), "mask restored");
            });
        }
    }

    /// Runs `f` with a context whose interrupt flag is `flag` (so another thread may raise it
    /// while `f` holds the context mutably), pinned as `with_ctx` pins.
    pub(crate) fn with_flag(budget_s: f64, flag: &AtomicBool, f: impl FnOnce(&mut Ctx)) {
        let allowed = sys::cpu::allowed_cpus();
        sys::cpu::pin_current_thread(allowed[0]).expect("pin to an allowed CPU");
        let (timer, info) = platform::timer::detect();
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = crate::sampler::SamplerConfig { budget_s, warmup_s: 0.005, ..crate::sampler::SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, allowed[0], dir.path(), flag);
        ctx.allowed_cpus = allowed;
        f(&mut ctx);
    }

    /// Raises `flag` after `after`, from another thread, while `f` runs.
    pub(crate) fn interrupt_after<R>(flag: &AtomicBool, after: Duration, f: impl FnOnce() -> R) -> R {
        flag.store(false, Relaxed);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(after);
                flag.store(true, Relaxed);
            });
            f()
        })
    }

    #[test]
    fn an_interrupted_round_keeps_its_wake_ups_and_restores_everything() {
        let _serial = serial();
        let flag = AtomicBool::new(false);
        with_flag(10.0, &flag, |ctx| {
            for via in [Via::ClockNanosleep, Via::Timerfd, Via::PosixTimer] {
                let before = fds();
                let timers = sys::timer::posix_timers_now();
                let policy = current_policy().unwrap();
                let m = interrupt_after(&flag, Duration::from_millis(50), || TimerWake.run(ctx, &params(via)).unwrap());
                assert_eq!(m.samples.stop, Some(StopReason::Interrupted));
                let n = m.samples.per_op_ns.len();
                assert!(n > 10 && n < 2000, "{via:?}: {n} wake-ups before the interruption");
                assert_eq!(fds(), before, "timerfd closed");
                assert_eq!(sys::timer::posix_timers_now(), timers, "timer deleted");
                assert!(!BlockedSignal::is_blocked(timer_signal()));
                assert_eq!(current_policy().unwrap(), policy);
            }
        });
    }

    #[test]
    fn loops_fit_the_budget_unless_given() {
        assert_eq!(loops_per_round(0.2, 5, 1000), 200);
        assert_eq!(loops_per_round(0.0, 5, 1000), 10);
    }
}
