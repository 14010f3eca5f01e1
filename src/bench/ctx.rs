//! Context switches: `ctx.thread`, `ctx.process`, and `ctx.address_space`, their difference
//! measured paired.
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
//!
//! `ctx.address_space` is `ctx.process` − `ctx.thread`, but not from two separate runs: on a
//! virtual machine the cost of a switch moves between levels by more than the difference
//! itself, within minutes. So both peers, a thread and a process, are started together and
//! measured alternately ([`pingpong::run_paired`]); each sample is one process sample minus the
//! thread sample taken beside it, and the row's CI is that of the paired differences. Its
//! breakdown keeps both sides.
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
        let diffs: Vec<f64> = p.samples.per_op_ns.iter().zip(&t.samples.per_op_ns).map(|(a, b)| a - b).collect();
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            if v.is_empty() { f64::NAN } else { crate::stats::median(&v) }
        };
        let d = median(&diffs);
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
            Check::new(
                "a process switch costs more than a thread switch",
                "a positive median difference",
                format!("{d:.1} ns"),
                d > 0.0,
            ),
        ];
        let breakdown =
            vec![("process".to_string(), p.samples.per_op_ns.clone()), ("thread".to_string(), t.samples.per_op_ns)];
        let samples = crate::sampler::Samples { per_op_ns: diffs, ..p.samples };
        let mut m = Measured::new(samples, checks);
        m.breakdown = breakdown;
        m.params.insert("cpus".into(), serde_json::json!([process.cpus.0, process.cpus.1]));
        m.notes.push(
            "each sample: a process switch minus the thread switch measured beside it (both peers alive, alternating)"
                .into(),
        );
        Ok(m)
    }
}

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
