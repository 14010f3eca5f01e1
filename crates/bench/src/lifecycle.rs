//! Thread and process lifecycle: `thread.create_join`, `thread.first_run` (here) and
//! `process.*` ([`process`], in `lifecycle_process.rs`) — what lmbench's `lat_proc`, LEBench's
//! thread and fork tests and `perf bench syscall fork`/`execve` time.
//!
//! Seed context: the seed papers time creating and destroying threads and processes
//! (`SEED-MAP.md`); these rows are beside them, not mapped to a seed row.
//!
//! Threads are raw `pthread_create` of glibc with default attributes (its default stack:
//! `RLIMIT_STACK`, 8 MiB here; glibc keeps the stacks of joined threads in a cache and reuses
//! them), not Rust's `std::thread`, whose own work (an `Arc` for the result, the thread's name
//! and handle, a signal stack) would be counted too ([`sys::lifecycle`]). The body only
//! adds one to a counter (or stamps the clock first).
//!
//! - `thread.create_join` — **timing model:** a sample of `n` operations is one timed region:
//!   `n` × (`pthread_create` + `pthread_timedjoin_np`) of a thread that does nothing but count.
//!   The new thread inherits the measuring thread's CPU (it is pinned), so creator and thread
//!   take turns on one CPU: the join's sleep, the switch to the thread, its start and end and
//!   the switch back are all inside. The join is `pthread_timedjoin_np` with a deadline
//!   ([`JOIN_DEADLINE`]): glibc's `pthread_join` plus a futex timeout.
//! - `thread.first_run` `placement=same_cpu|cross_cpu` — **timing model:** `start` just
//!   before `pthread_create`; the new thread's start routine reads the clock as its first
//!   instruction (after glibc's own thread start-up, which is part of the interval). One
//!   operation is that interval; each is its own timed region, and the join after it is outside.
//!   `same_cpu`: the thread inherits the measuring CPU (default attributes), so the interval
//!   holds the creator going to sleep in the join. `cross_cpu`: the thread is pinned to the
//!   other CPU with `pthread_attr_setaffinity_np`, which makes glibc start it stopped and set
//!   its affinity from the creator before letting it run (one more system call in the
//!   interval); the two stamps come from two CPUs' counters, so the counters' offset bound is
//!   measured first (as `xfer.*` does), recorded, and the row skipped if they disagree.
//!
//! **Validation:** every create returned 0 and every thread was joined (created = joined: none
//! is left behind, whatever ended the run), every body ran (its counter equals the creates);
//! for `first_run`, every thread stamped the clock, ran on the CPU it was meant for, and no
//! thread's first instruction came before its create (within the offset bound).
//! **Hangs:** a join that outlasts its deadline ends the sampling with a failed check; the
//! thread is then joined without a deadline (its body is three stores, so it ends).

#[path = "lifecycle_process.rs"]
pub mod process;

pub use process::{Process, Spawn};

use super::ipc::cpus_for;
use super::pingpong::Placement;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use platform::timer::TimerKind;
use std::sync::atomic::Ordering;
use std::time::Duration;
use sys::lifecycle::{self as lc, Body, JoinError, Slot, ThreadAttr};

/// How long a sample's joins may take in all, beyond [`JOIN_PER_OP`] per thread.
pub const JOIN_DEADLINE: Duration = Duration::from_secs(5);
/// Extra time a sample's deadline allows per operation.
pub const JOIN_PER_OP: Duration = Duration::from_millis(10);

/// `thread.create_join`.
pub struct CreateJoin;

/// `thread.first_run`.
pub struct FirstRun;

/// What the threads of one run did.
#[derive(Default, Debug)]
struct Tally {
    created: u64,
    joined: u64,
    create_errors: u64,
    first_error: Option<String>,
    join_timeouts: u64,
}

impl Tally {
    fn create_failed(&mut self, errno: i32) {
        self.create_errors += 1;
        self.first_error.get_or_insert_with(|| format!("pthread_create: {}", std::io::Error::from_raw_os_error(errno)));
    }

    /// Records a failed join; the guard's drop then joins without a deadline.
    fn join_failed(&mut self, e: JoinError) {
        match e {
            JoinError::TimedOut => self.join_timeouts += 1,
            JoinError::Errno(errno) => {
                self.first_error.get_or_insert_with(|| {
                    format!("pthread_timedjoin_np: {}", std::io::Error::from_raw_os_error(errno))
                });
            }
        }
        self.joined += 1; // joined by the guard's drop
    }

    /// The checks every thread row makes.
    fn checks(&self, ran: u64) -> Vec<Check> {
        let mut checks = vec![
            Check::new(
                "every thread created was joined (none left behind)",
                format!("{} created, 0 create errors", self.created),
                format!(
                    "{} joined, {} create errors, {} joins past the deadline{}",
                    self.joined,
                    self.create_errors,
                    self.join_timeouts,
                    self.first_error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default()
                ),
                self.joined == self.created && self.create_errors == 0 && self.join_timeouts == 0 && self.created > 0,
            ),
            Check::new(
                "every thread's body ran (its counter)",
                format!("{} bodies", self.created),
                format!("{ran} ran"),
                ran == self.created,
            ),
        ];
        if self.first_error.is_some() && self.create_errors == 0 {
            checks.push(Check::new("no join failed", "none", self.first_error.clone().unwrap_or_default(), false));
        }
        checks
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> NotMeasured {
    NotMeasured::Failed(format!("{what}: {e}"))
}

impl Benchmark for CreateJoin {
    fn id(&self) -> &'static str {
        "thread.create_join"
    }
    fn about(&self) -> &'static str {
        "pthread_create + join of a thread that does nothing (raw pthreads, glibc defaults, same CPU)"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let attr = ThreadAttr::new(None).map_err(|e| failed("thread attributes", e))?;
        let slot = Slot::new(ctx.timer);
        let timer = ctx.timer;
        let mut tally = Tally::default();
        let samples = ctx.iter_fallible(|n| {
            let deadline = lc::realtime_deadline(JOIN_DEADLINE + JOIN_PER_OP * n.min(1 << 16) as u32);
            let t0 = timer.start();
            for _ in 0..n {
                match lc::create(&attr, Body::Count, &slot) {
                    Ok(t) => {
                        tally.created += 1;
                        match t.join(&deadline) {
                            Ok(()) => tally.joined += 1,
                            Err((t, e)) => {
                                drop(t);
                                tally.join_failed(e);
                                return None;
                            }
                        }
                    }
                    Err(e) => {
                        tally.create_failed(e);
                        return None;
                    }
                }
            }
            Some(timer.stop().wrapping_sub(t0))
        });
        let ran = slot.ran.load(Ordering::Acquire);
        let mut m = Measured::new(samples, tally.checks(ran));
        m.params.insert("stack_bytes".into(), attr.stack_size().into());
        m.params.insert("cpus".into(), serde_json::json!([ctx.cpu, ctx.cpu]));
        m.notes.push(
            "raw pthread_create with glibc's default attributes (not std::thread); joined with pthread_timedjoin_np (pthread_join with a deadline); glibc reuses the stacks of joined threads"
                .into(),
        );
        Ok(m)
    }
}

impl Benchmark for FirstRun {
    fn id(&self) -> &'static str {
        "thread.first_run"
    }
    fn about(&self) -> &'static str {
        "pthread_create → the new thread's first instruction (clock stamps), same or other CPU"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("placement", [Placement::SameCpu.name(), Placement::CrossCpu.name()])
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let cross = params.get("placement").and_then(|v| v.as_str()) == Some(Placement::CrossCpu.name());
        let placement = if cross { Placement::CrossCpu } else { Placement::SameCpu };
        let (a, b) = cpus_for(ctx, placement).map_err(NotMeasured::Skipped)?;
        let bound = if cross && ctx.timer.kind() != TimerKind::MonotonicRaw {
            Some(super::ipc::synchronised_bound(ctx, (a, b))?)
        } else {
            None
        };
        let attr = ThreadAttr::new(cross.then_some(b)).map_err(|e| failed("thread attributes", e))?;
        let slot = Slot::new(ctx.timer);
        let timer = ctx.timer;
        let (mut tally, mut unstamped, mut wrong_cpu, mut min_ticks) = (Tally::default(), 0u64, 0u64, i64::MAX);
        let mut seen_cpu: Option<i32> = None;
        let samples = ctx.iter_regions_fallible(|n| {
            let deadline = lc::realtime_deadline(JOIN_DEADLINE + JOIN_PER_OP * n.min(1 << 16) as u32);
            let mut sum: i64 = 0;
            for _ in 0..n {
                slot.stamp.store(0, Ordering::Relaxed);
                let t0 = timer.start();
                let t = match lc::create(&attr, Body::Stamp, &slot) {
                    Ok(t) => t,
                    Err(e) => {
                        tally.create_failed(e);
                        return None;
                    }
                };
                tally.created += 1;
                if let Err((t, e)) = t.join(&deadline) {
                    drop(t);
                    tally.join_failed(e);
                    return None;
                }
                tally.joined += 1;
                let t1 = slot.stamp.load(Ordering::Acquire);
                if t1 == 0 {
                    unstamped += 1;
                    return None;
                }
                let cpu = slot.cpu.load(Ordering::Acquire);
                seen_cpu.get_or_insert(cpu);
                wrong_cpu += u64::from(cpu != b as i32);
                let d = t1.wrapping_sub(t0) as i64;
                min_ticks = min_ticks.min(d);
                sum += d;
            }
            // One timed region per operation: the sampler subtracts one overhead each.
            Some(crate::sampler::Timed::regions(sum.max(0) as u64, n))
        });
        let ran = slot.ran.load(Ordering::Acquire);
        let mut checks = tally.checks(ran);
        checks.push(Check::new(
            "every thread stamped the clock first thing",
            format!("{} stamps", tally.joined),
            format!("{unstamped} missing"),
            unstamped == 0,
        ));
        checks.push(Check::new(
            "each new thread ran on its CPU",
            format!("CPU {b}"),
            format!(
                "{wrong_cpu} of {} elsewhere (first on CPU {})",
                tally.joined,
                seen_cpu.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
            ),
            wrong_cpu == 0 && tally.joined > 0,
        ));
        let tolerance = bound.map(|b| b.max_abs_ticks()).unwrap_or(0);
        checks.push(Check::new(
            "no thread ran before it was created",
            format!("smallest interval ≥ −{:.0} ns (the counters' offset bound)", timer.ticks_to_ns(tolerance as f64)),
            format!("{:.0} ns", if min_ticks == i64::MAX { f64::NAN } else { timer.ticks_to_ns(min_ticks as f64) }),
            min_ticks != i64::MAX && min_ticks >= -tolerance,
        ));
        let mut m = Measured::new(samples, checks);
        m.params.insert("cpus".into(), serde_json::json!([a, b]));
        if let Some(bound) = bound {
            let ns = timer.ticks_to_ns(bound.max_abs_ticks() as f64);
            m.observed.insert("tsc_offset_bound_ns".into(), serde_json::json!((ns * 10.0).round() / 10.0));
            m.notes.push(format!(
                "the counters of CPUs {a} and {b} agree within ±{ns:.0} ns: each interval is that uncertain"
            ));
        }
        m.notes.push(if cross {
            "glibc starts a thread with a CPU in its attributes stopped, and sets its affinity from the creator first (in the interval)".to_string()
        } else {
            "the creator goes on to join and sleeps; the new thread runs after it, on the same CPU (in the interval)".to_string()
        });
        if cross && ctx.virtualized {
            m.notes.push("across CPUs on a virtual machine, waking the idle vCPU goes through the hypervisor".into());
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};

    fn all_pass(m: &Measured) {
        for c in &m.checks {
            assert_ne!(c.ok, Some(false), "{c:?}");
        }
    }

    #[test]
    fn create_join_counts_every_thread() {
        let _serial = serial();
        with_ctx(0.05, |ctx| {
            let m = CreateJoin.run(ctx, &Params::new()).expect("measured");
            assert!(!m.samples.per_op_ns.is_empty());
            all_pass(&m);
        });
    }

    #[test]
    fn first_run_stamps_on_the_right_cpu() {
        let _serial = serial();
        with_ctx(0.05, |ctx| {
            for p in FirstRun.variants(ctx) {
                match FirstRun.run(ctx, &p) {
                    Ok(m) => {
                        assert!(!m.samples.per_op_ns.is_empty(), "{p:?}");
                        all_pass(&m);
                    }
                    Err(NotMeasured::Skipped(_)) => {} // one CPU, or counters that disagree
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
    }
}
