//! The one peer engine of the benchmarks that hand off to another party and back
//! (`pingpong`: `ctx.*`, `ipc.*`, `xfer.*`; `wake`: `notify.wake.*`): a peer — a thread of this
//! process or a forked process ([`PeerKind`]) — started with its body ([`Peer::start`]),
//! watched ([`Peer::has_ended`]), and always ended ([`Peer::end`]: joined, or reaped with a
//! deadline and killed when overdue; a process peer is also killed and reaped on drop). The
//! deadline of every wait on a peer follows one rule ([`PEER_DEADLINE`]).
//!
//! A body runs before the fork is over for a process peer, so it must have everything it
//! needs prepared and report failures as numbers (see [`sys::process::fork_peer`]).

use std::time::{Duration, Instant};
use sys::process::{self, Child, DeathWatch};
use sys::reap::Reaped;

/// Who the peer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerKind {
    /// A thread of this process (intra-address-space).
    Thread,
    /// A forked process (inter-address-space).
    Process,
}

impl PeerKind {
    /// The parameter value.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Thread => "thread",
            PeerKind::Process => "process",
        }
    }
}

/// **The deadline rule.** The longest any one wait on a peer may last before the peer is
/// given up on as stopped or its message as lost: the start-up hand-shake, one call of the
/// sampling routine (one sample or warm-up batch, a few thousandths of a round's budget
/// normally), and the stop hand-shake. It is [`DeadlineRule::budget_multiple`] × the round's
/// budget (`ctx.cfg().budget_s`), but at least [`DeadlineRule::floor`]: generous, so that a
/// loaded machine never trips it, and short enough that a hung row costs seconds, not a run.
/// With the default budget (1 s over 5 rounds) and `--quick`, that is the 2 s floor.
pub const PEER_DEADLINE: DeadlineRule = DeadlineRule { budget_multiple: 4.0, floor: Duration::from_secs(2) };

/// How a deadline follows from a round's budget (see [`PEER_DEADLINE`]).
#[derive(Clone, Copy, Debug)]
pub struct DeadlineRule {
    /// The deadline in units of the round's budget.
    pub budget_multiple: f64,
    /// The shortest deadline.
    pub floor: Duration,
}

impl DeadlineRule {
    /// The deadline of a round whose budget is `budget_s` seconds.
    pub fn for_round(&self, budget_s: f64) -> Duration {
        let scaled = Duration::try_from_secs_f64(budget_s.max(0.0) * self.budget_multiple).unwrap_or(Duration::MAX);
        scaled.max(self.floor)
    }
}

/// The step of [`Peer::start`] that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartStep {
    /// Spawning the peer thread.
    Thread,
    /// Forking the peer process.
    Fork,
    /// Starting the watchdog that wakes the measuring thread when the process dies.
    Watch,
}

/// A running peer. Fields drop in order: a process is killed and reaped before its watchdog
/// stops.
pub struct Peer {
    inner: Inner,
}

enum Inner {
    Thread(Option<std::thread::JoinHandle<i32>>),
    Process { child: Child, _watch: Option<DeathWatch> },
}

/// How [`Peer::end`] found the peer.
#[derive(Debug, PartialEq)]
pub enum Ended {
    /// A process peer, reaped (killed first if it had not ended within the grace).
    Reaped(Reaped),
    /// A thread peer, joined: its exit code, `None` if it panicked.
    Joined(Option<i32>),
    /// A thread peer still running after the grace, left to end on its own.
    StillRunning,
    /// Ended before (a thread already joined).
    AlreadyEnded,
}

impl Peer {
    /// Starts `body` as a peer of `kind`: a thread called `name`, or a forked process which,
    /// with `wake_on_death` (the measuring thread's id), gets a [`DeathWatch`] that wakes that
    /// thread until it notices the process died.
    pub fn start(
        kind: PeerKind,
        name: &str,
        wake_on_death: Option<libc::pid_t>,
        body: impl FnOnce() -> i32 + Send + 'static,
    ) -> Result<Peer, (StartStep, std::io::Error)> {
        let inner = match kind {
            PeerKind::Thread => Inner::Thread(Some(
                std::thread::Builder::new().name(name.into()).spawn(body).map_err(|e| (StartStep::Thread, e))?,
            )),
            PeerKind::Process => {
                let child = process::fork_peer(body).map_err(|e| (StartStep::Fork, e))?;
                let watch = match wake_on_death {
                    Some(tid) => Some(DeathWatch::start(child.pid(), tid).map_err(|e| (StartStep::Watch, e))?),
                    None => None,
                };
                Inner::Process { child, _watch: watch }
            }
        };
        Ok(Peer { inner })
    }

    /// The process the peer runs in (this one for a thread).
    pub fn pid(&self) -> libc::pid_t {
        match &self.inner {
            Inner::Thread(_) => std::process::id() as libc::pid_t,
            Inner::Process { child, .. } => child.pid(),
        }
    }

    /// Whether the peer is a process.
    pub fn is_process(&self) -> bool {
        matches!(self.inner, Inner::Process { .. })
    }

    /// Whether the peer has ended (not yet collected by [`Peer::end`]).
    pub fn has_ended(&self) -> bool {
        match &self.inner {
            Inner::Thread(Some(t)) => t.is_finished(),
            Inner::Thread(None) => false,
            Inner::Process { child, .. } => child.has_ended(),
        }
    }

    /// Gives the peer up to `grace()` (asked at every look: it may shrink, after Ctrl-C) to
    /// end on its own, looking every `every` and calling `nudge` before each look at a thread
    /// (to wake it), then collects it: reaps a process (killing it if it is still running),
    /// joins a thread that ended.
    pub fn end(&mut self, grace: impl Fn() -> Duration, every: Duration, mut nudge: impl FnMut()) -> Ended {
        let began = Instant::now();
        match &mut self.inner {
            Inner::Process { child, .. } => {
                while !child.has_ended() && began.elapsed() < grace() {
                    std::thread::sleep(every);
                }
                Ended::Reaped(child.finish(Duration::ZERO))
            }
            Inner::Thread(handle) => {
                let Some(t) = handle.take() else { return Ended::AlreadyEnded };
                while !t.is_finished() && began.elapsed() < grace() {
                    nudge();
                    std::thread::sleep(every);
                }
                if !t.is_finished() {
                    return Ended::StillRunning;
                }
                Ended::Joined(t.join().ok())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_run_their_body_and_are_collected() {
        let _s = crate::testing::serial();
        for kind in [PeerKind::Thread, PeerKind::Process] {
            let mut p = Peer::start(kind, "osprim-test-peer", None, || 3).expect("start");
            assert_eq!(p.is_process(), kind == PeerKind::Process);
            let ended = p.end(|| Duration::from_secs(5), Duration::from_micros(200), || {});
            match kind {
                PeerKind::Thread => assert_eq!(ended, Ended::Joined(Some(3))),
                PeerKind::Process => {
                    assert_eq!(ended, Ended::Reaped(Reaped::Exited(3)))
                }
            }
        }
    }

    #[test]
    fn an_overdue_process_is_killed_and_a_thread_left() {
        let _s = crate::testing::serial();
        let mut p = Peer::start(PeerKind::Process, "osprim-test-peer", None, || {
            loop {
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .expect("fork");
        assert!(matches!(
            p.end(|| Duration::from_millis(20), Duration::from_millis(1), || {}),
            Ended::Reaped(Reaped::Signaled { signal: libc::SIGKILL, .. })
        ));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let mut t = Peer::start(PeerKind::Thread, "osprim-test-peer", None, move || {
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            0
        })
        .expect("spawn");
        let mut nudges = 0;
        assert_eq!(t.end(|| Duration::from_millis(20), Duration::from_millis(1), || nudges += 1), Ended::StillRunning);
        assert!(nudges > 0);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(t.end(|| Duration::ZERO, Duration::ZERO, || {}), Ended::AlreadyEnded);
    }
}
