//! Go!'s error test on today's Linux (seed 003, "Stability": "an error test called random ORB
//! methods with random register contents and random data on the stack, and carried on after
//! each exception"), in two halves that run **interleaved**, side by side:
//! - in this process, the domain library's entry points ([`orb`]) with random references,
//!   arguments and call kinds, in batches of about 20 ms; every call must be answered right,
//!   thrown, raised, transferred back or refused, and leave every domain and the caller's
//!   rights as they were;
//! - beside it, a child confined by [`sys::sandbox`] makes system calls with random numbers
//!   and random registers ([`syscalls`]), counting them and their errnos in shared memory;
//!   between batches the parent checks it (confinement, escapes, hangs, deaths) and replaces
//!   it when it hangs, dies, or has run its chunk.
//!
//! Every second the parent samples its own resources and checks them and a canary file
//! outside the scratch directory. The run is deterministic in its seed: the domain calls are
//! one seeded sequence; child `k`'s system calls are the sequence seeded by the run's seed
//! and `k` (which child was at which call when something went wrong is in the notes).

mod orb;
mod syscalls;

use crate::{Hooks, Progress, Settings};
use model::stability::{Invariant, Outcome, StabilityRun, StabilityTest, Tally};
use stats::rng::{Rng, derive_seed};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Operations between two looks at the clock in a domain batch.
const BATCH_OPS: usize = 16;
/// Length of a domain batch (the child is checked between batches).
const BATCH: Duration = Duration::from_millis(20);
/// At most this many notes (hangs, deaths) are kept.
const MAX_NOTES: usize = 20;
/// Growth of the parent's descriptors, threads and mappings over the run allowed before it
/// counts as a leak.
const SLACK_FDS: u64 = 32;
const SLACK_THREADS: u64 = 16;
const SLACK_MAPS: u64 = 512;

const INV_PARENT: &str = "this process stays bounded: descriptors, threads and mappings";
const INV_LEFT: &str = "nothing is left behind: every child reaped, the scratch directory removed";

/// Counts of one run, by kind.
#[derive(Default)]
pub(crate) struct Tallies {
    ops: BTreeMap<String, u64>,
    results: BTreeMap<String, u64>,
    invariants: Vec<Invariant>,
    last: Option<&'static str>,
    blamed: Option<&'static str>,
    notes: Vec<String>,
}

impl Tallies {
    fn with_invariants(names: &[&str]) -> Tallies {
        Tallies {
            invariants: names.iter().map(|n| Invariant { name: n.to_string(), checked: 0, violated: 0 }).collect(),
            ..Tallies::default()
        }
    }

    fn add(map: &mut BTreeMap<String, u64>, kind: &str, n: u64) {
        if n == 0 {
            return;
        }
        match map.get_mut(kind) {
            Some(c) => *c += n,
            None => {
                map.insert(kind.to_string(), n);
            }
        }
    }

    pub(crate) fn op(&mut self, kind: &str) {
        Tallies::add(&mut self.ops, kind, 1);
    }

    pub(crate) fn op_n(&mut self, kind: &str, n: u64) {
        Tallies::add(&mut self.ops, kind, n);
    }

    pub(crate) fn result(&mut self, kind: &str) {
        Tallies::add(&mut self.results, kind, 1);
    }

    pub(crate) fn result_n(&mut self, kind: &str, n: u64) {
        Tallies::add(&mut self.results, kind, n);
    }

    fn entry(&mut self, name: &'static str) -> &mut Invariant {
        self.last = Some(name);
        match self.invariants.iter().position(|i| i.name == name) {
            Some(i) => &mut self.invariants[i],
            None => {
                self.invariants.push(Invariant { name: name.to_string(), checked: 0, violated: 0 });
                self.invariants.last_mut().expect("just pushed")
            }
        }
    }

    /// One check of invariant `name`.
    pub(crate) fn invariant(&mut self, name: &'static str) {
        self.entry(name).checked += 1;
    }

    pub(crate) fn invariant_n(&mut self, name: &'static str, n: u64) {
        self.entry(name).checked += n;
    }

    /// The violation about to be returned broke `name` (else the last invariant checked).
    pub(crate) fn blame(&mut self, name: &'static str) {
        self.blamed = Some(name);
    }

    fn violated(&mut self) {
        if let Some(name) = self.blamed.take().or(self.last) {
            let e = self.entry(name);
            e.violated += 1;
            e.checked = e.checked.max(1);
        }
    }

    pub(crate) fn note(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(note);
        }
    }

    fn tallies(map: &BTreeMap<String, u64>) -> Vec<Tally> {
        map.iter().map(|(k, v)| Tally { kind: k.clone(), count: *v }).collect()
    }
}

/// What a test injects, and what it wants back besides the run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    /// A fault in the domain half's view of the library.
    orb_fault: Option<orb::Fault>,
    /// Faults in the sandboxed children.
    child: syscalls::ChildFaults,
}

/// A run and what a test checks after it.
#[cfg_attr(not(test), allow(dead_code))] // `pids` and `left` are the tests'
pub(crate) struct Report {
    pub(crate) run: StabilityRun,
    pub(crate) pids: Vec<i32>,
    pub(crate) left: Vec<PathBuf>,
}

/// Runs the error test.
pub fn run(settings: &Settings, hooks: &mut Hooks) -> anyhow::Result<StabilityRun> {
    run_with(settings, hooks, &Options::default()).map(|r| r.run)
}

fn parent_sample() -> (u64, u64, u64) {
    let p = crate::trend::sample(None, 0.0, Vec::new());
    let maps = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count() as u64);
    (p.fds, p.threads, maps)
}

pub(crate) fn run_with(settings: &Settings, hooks: &mut Hooks, opts: &Options) -> anyhow::Result<Report> {
    let start = Instant::now();
    let rights = domain::Rights::here().first().copied();
    let mut t = Tallies::with_invariants(&[
        orb::INV_REFUSED,
        orb::INV_ANSWERS,
        orb::INV_INTACT,
        orb::INV_RIGHTS,
        orb::INV_OUTSIDE,
        syscalls::INV_ESCAPE,
        syscalls::INV_CONFINED,
        syscalls::INV_OUTSIDE,
        INV_PARENT,
        INV_LEFT,
    ]);
    let mut orb = rights.map(|how| orb::Orb::new(how, opts.orb_fault, 0));
    if rights.is_none() {
        t.note("the domain half did not run: no domain mechanism works here".into());
    }
    let mut rng = Rng::new(derive_seed(settings.seed, 1));
    let mut sc = if sys::sandbox::allow_list().is_empty() {
        t.note("the system-call half did not run: the sandbox is built for x86_64 only".into());
        None
    } else {
        Some(syscalls::Syscalls::new(settings.seed, opts.child.clone())?)
    };
    let base = parent_sample();
    let mut trend = Vec::new();
    let mut next_tick = start;
    let at = |i: Instant| i.duration_since(start).as_secs_f64();
    let failure: Result<Outcome, String> = loop {
        let now = Instant::now();
        if now >= next_tick {
            let calls = sc.as_ref().map_or(0, |s| s.calls + s.running_calls());
            let children = sc.as_ref().map_or(0, |s| s.children);
            let domains = orb.as_ref().map_or(0, |o| o.domains() as u64);
            let ops = orb.as_ref().map_or(0, |o| o.ops);
            (hooks.progress)(&Progress { elapsed_s: at(now), operations: ops + calls });
            let gauges = vec![
                Tally { kind: "domains".into(), count: domains },
                Tally { kind: "domain_ops".into(), count: ops },
                Tally { kind: "syscalls".into(), count: calls },
                Tally { kind: "children".into(), count: children },
            ];
            crate::trend::push_bounded(&mut trend, crate::trend::sample(None, at(now), gauges), 1000);
            t.invariant(INV_PARENT);
            let (fds, threads, maps) = parent_sample();
            if fds > base.0 + SLACK_FDS || threads > base.1 + SLACK_THREADS || maps > base.2 + SLACK_MAPS {
                t.blame(INV_PARENT);
                break Err(format!(
                    "this process grew: {fds} descriptors, {threads} threads, {maps} mappings (from {base:?})"
                ));
            }
            if let Some(s) = &sc
                && let Err(e) = s.check_outside(&mut t)
            {
                break Err(e);
            }
            next_tick += Duration::from_secs(1);
        }
        if now.duration_since(start) >= settings.duration {
            break Ok(Outcome::Clean);
        }
        if (hooks.interrupted)() {
            break Ok(Outcome::Interrupted { at_s: at(now) });
        }
        if let Some(o) = orb.as_mut() {
            let end = (now + BATCH).min(start + settings.duration);
            let mut err = None;
            while err.is_none() && Instant::now() < end {
                for _ in 0..BATCH_OPS {
                    if let Err(e) = o.step(&mut rng, &mut t) {
                        err = Some(format!("domain operation {}: {e}", o.ops));
                        break;
                    }
                }
            }
            if let Some(e) = err {
                break Err(e);
            }
        } else {
            std::thread::sleep(BATCH);
        }
        if let Some(s) = sc.as_mut()
            && let Err(e) = s.poll(&mut t)
        {
            break Err(e);
        }
    };
    let ended = Instant::now();
    if failure.is_err() {
        t.violated();
    }
    // Leave nothing behind: the child killed and reaped, then the directories removed.
    let mut left = Vec::new();
    let mut pids = Vec::new();
    let mut stopped = None;
    if let Some(mut s) = sc {
        s.finish(&mut t, false);
        let outside = s.check_outside(&mut t);
        stopped = s.stopped.take();
        pids = std::mem::take(&mut s.pids);
        let scratch = s.scratch().to_path_buf();
        drop(s);
        left.extend([scratch].into_iter().filter(|p| p.exists()));
        if let (Err(e), Ok(_)) = (outside, &failure) {
            t.violated();
            return finish(settings, t, trend, start, ended, Err(e), stopped, rights, pids, left);
        }
    }
    t.invariant(INV_LEFT);
    let alive: Vec<i32> = pids.iter().copied().filter(|&p| !sys::reap::is_gone(p)).collect();
    let failure = match failure {
        Ok(_) if !alive.is_empty() || !left.is_empty() => {
            t.blame(INV_LEFT);
            t.violated();
            Err(format!("left behind: children {alive:?}, paths {left:?}"))
        }
        other => other,
    };
    finish(settings, t, trend, start, ended, failure, stopped, rights, pids, left)
}

#[allow(clippy::too_many_arguments)]
fn finish(
    settings: &Settings,
    mut t: Tallies,
    trend: Vec<model::stability::TrendPoint>,
    start: Instant,
    ended: Instant,
    outcome: Result<Outcome, String>,
    stopped: Option<String>,
    rights: Option<domain::Rights>,
    pids: Vec<i32>,
    left: Vec<PathBuf>,
) -> anyhow::Result<Report> {
    let ran_s = ended.duration_since(start).as_secs_f64();
    let outcome = match outcome {
        Ok(o) => o,
        Err(what) => {
            Outcome::Failed { at_s: ran_s, what, replay: crate::replay_command(StabilityTest::ErrorTest, settings) }
        }
    };
    let clean_s = match &outcome {
        Outcome::Failed { at_s, .. } | Outcome::Interrupted { at_s } => *at_s,
        Outcome::Clean => ran_s,
    };
    if let Some(s) = stopped {
        t.notes.insert(0, s);
    }
    let mode = format!("{} domains + seccomp sandbox, interleaved", rights.map_or("no", |r| r.name()));
    let mut settings_list = vec![
        "halves=interleaved (domain calls in this process in 20 ms batches; system calls in a sandboxed child beside it)".to_string(),
        format!("domains_max={}", orb::MAX_DOMAINS),
        format!("table_domains_max={}", orb::MAX_TABLE_DOMAINS),
    ];
    settings_list.extend(syscalls_settings());
    Ok(Report {
        run: StabilityRun {
            test: StabilityTest::ErrorTest,
            seed: settings.seed,
            mode,
            settings: settings_list,
            requested_s: settings.duration.as_secs_f64(),
            ran_s,
            clean_s,
            outcome,
            operations: Tallies::tallies(&t.ops),
            results: Tallies::tallies(&t.results),
            invariants: t.invariants,
            trend,
            notes: t.notes,
            short: false,
        },
        pids,
        left,
    })
}

/// The system-call half's fixed settings.
fn syscalls_settings() -> Vec<String> {
    vec![
        format!("scratch_bytes={}", syscalls::SCRATCH_BYTES),
        format!("rlimit_cpu_s={}", syscalls::CPU_S),
        format!("rlimit_as=inherited+{}", syscalls::EXTRA_AS),
        format!("rlimit_nofile={}", syscalls::NOFILE),
        format!("rlimit_fsize={}", syscalls::FSIZE),
        "rlimit_nproc=0".into(),
        "rlimit_core=0".into(),
        format!("user={}", if sys::sandbox::is_root() { "nobody (dropped from root)" } else { "the caller's" }),
        format!("allow_list={}", sys::sandbox::allow_list().len()),
        format!("alarm_us={}", syscalls::ALARM.as_micros()),
        format!("hang_s={}", syscalls::HANG.as_secs()),
        format!("child_chunk_s={}", syscalls::CHUNK.as_secs()),
    ]
}

// Both halves are built for x86_64 only (the domain entry and the sandbox).
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;
