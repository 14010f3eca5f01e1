//! Context switches: `ctx.thread` and `ctx.process`, and through them the derived
//! `ctx.address_space` (`ctx.process` − `ctx.thread`, see `registry.rs`).
//!
//! Seed row: L4Ka::Pistachio "address space switch".
//!
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
//! **Validation:** the voluntary context switches the kernel counted for both ends
//! (`getrusage(RUSAGE_THREAD)`) equal the hand-offs within 1 %; plus the ping-pong's own checks
//! (every hand-off numbered, both ends on the CPU).

use super::ipc::{Setup, measured};
use super::pingpong::{self, Plan, Timing};
use super::transport::Transport;
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};

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
        let mut m = measured(&plan, report, ctx);
        m.checks.insert(0, switch_check(handoffs, voluntary, involuntary));
        Ok(m)
    }
}

/// Voluntary switches counted by the kernel against the hand-offs made.
pub fn switch_check(handoffs: u64, voluntary: u64, involuntary: u64) -> Check {
    let off = (voluntary as f64 - handoffs as f64).abs() / (handoffs.max(1) as f64);
    Check::new(
        "one voluntary context switch per hand-off (getrusage, both ends)",
        format!("{handoffs} ± 1 %"),
        format!(
            "{voluntary} voluntary ({:+.2} %), {involuntary} involuntary",
            100.0 * (voluntary as f64 / handoffs.max(1) as f64 - 1.0)
        ),
        off <= SWITCH_TOLERANCE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_counts_within_one_percent_pass() {
        assert_eq!(switch_check(10_000, 10_050, 3).ok, Some(true));
        assert_eq!(switch_check(10_000, 9_000, 1_000).ok, Some(false));
        assert_eq!(switch_check(0, 0, 0).ok, Some(true));
    }
}
