//! Go!'s stress test on the domain library (seed 003, "Stability"): random domains created
//! and destroyed (1 to 10,000 alive, so that the key table thrashes), 1 to 1,000 runnable
//! threads started and stopped at random, each running random chains of calls of every kind
//! (fcall, tcall, call, xfer) up to 20 deep, with throws caught at random catch points, and
//! reading domains from outside (each read must fault), under a 1 kHz timer signal to the
//! process. Every chain and probe is checked as it happens; the process's resources each
//! second. The first violation ends the run as `Failed`, with the command that replays it.
//!
//! - **Mode**: `pkey` where the CPU has protection keys (a [`keys::KeyPool`] shares the 15
//!   hardware keys among all domains), else `mprotect` (each domain's region closed outside
//!   calls, opened by the kernel per call).
//! - **Threads**: a controller (the caller's thread) steers two wandering targets — the live
//!   domains and the live workers — starts and stops workers, samples resources and watches
//!   for hangs; each worker owns its domains (a domain's private stack serves one call at a
//!   time), and a stopped worker's domains go to an orphanage other workers adopt from.
//! - **Determinism**: every choice comes from [`choice`], seeded by the run's seed (one
//!   stream per worker, in the order the controller starts them).
//! - **Nothing left behind**: workers joined, domains destroyed, timer deleted, the timer
//!   signal's and SIGSEGV's dispositions put back, at the end and on a failure or interrupt.

pub mod choice;
mod keys;
mod worker;

use crate::{Hooks, Progress, Settings};
use domain::Rights;
use model::stability::{Invariant, Outcome, StabilityRun, StabilityTest, Tally};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The stress test's own settings (the CLI gives only duration and seed: these are the
/// defaults, Go!'s figures).
#[derive(Clone, Debug)]
pub struct Config {
    /// The most domains alive at once (Go!: 10,000); lowered to stay clear of
    /// `vm.max_map_count` in mprotect mode (see the run's notes).
    pub max_domains: usize,
    /// The most workers alive at once (Go!: 1,000).
    pub max_threads: usize,
    /// The deepest chain (Go!: 20).
    pub max_depth: usize,
    /// The timer signal's rate (Go!: 1,000 ticks a second).
    pub timer_hz: u32,
    /// Outside reads per thousand worker steps.
    pub probe_per_mille: u64,
    /// A worker's stack, KiB.
    pub thread_stack_kib: usize,
    /// A worker that makes no step for this long, or does not end this long after being
    /// told, has hung: a failure.
    pub hang_after: Duration,
    /// Tests only: the first worker leaks a domain's rights to itself after this long (a
    /// skipped restore), which the run must catch.
    #[doc(hidden)]
    pub inject_leak_after: Option<Duration>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_domains: 10_000,
            max_threads: 1_000,
            max_depth: domain::chain::MAX_DEPTH,
            timer_hz: 1_000,
            probe_per_mille: 50,
            thread_stack_kib: 256,
            hang_after: Duration::from_secs(30),
            inject_leak_after: None,
        }
    }
}

/// Operations counted.
#[derive(Clone, Copy, Debug)]
enum Op {
    Create,
    Destroy,
    Fcall,
    Tcall,
    Call,
    Xfer,
    Throw,
    FaultProbe,
    ThreadStart,
    ThreadExit,
}

const OPS: [(Op, &str); 10] = [
    (Op::Create, "create"),
    (Op::Destroy, "destroy"),
    (Op::Fcall, "fcall"),
    (Op::Tcall, "tcall"),
    (Op::Call, "call"),
    (Op::Xfer, "xfer"),
    (Op::Throw, "throw"),
    (Op::FaultProbe, "fault_probe"),
    (Op::ThreadStart, "thread_start"),
    (Op::ThreadExit, "thread_exit"),
];

/// What operations came to.
#[derive(Clone, Copy, Debug)]
enum Res {
    Returned,
    Xferred,
    Raised,
    Thrown,
    ProbeFaulted,
    Adopted,
    KeyMiss,
    KeyWait,
    SignalsInCalls,
    ThreadRefused,
}

const RESULTS: [(Res, &str); 10] = [
    (Res::Returned, "returned"),
    (Res::Xferred, "xferred"),
    (Res::Raised, "raised"),
    (Res::Thrown, "thrown_by_fault"),
    (Res::ProbeFaulted, "probe_faulted"),
    (Res::Adopted, "adopted"),
    (Res::KeyMiss, "key_miss"),
    (Res::KeyWait, "key_wait"),
    (Res::SignalsInCalls, "timer_signals_in_calls"),
    (Res::ThreadRefused, "thread_start_refused"),
];

/// The invariants.
#[derive(Clone, Copy, Debug)]
enum Inv {
    Reach,
    Outside,
    Restored,
    Caught,
    CallFrame,
    Domains,
    Keys,
    Mappings,
    Descriptors,
    Threads,
    NoHang,
    NothingLeft,
}

const INVARIANTS: [(Inv, &str); 12] = [
    (Inv::Reach, "every call reaches its domain (the callee observes its own rights and writes its own memory)"),
    (Inv::Outside, "every outside access faults (a callee touching another domain, the caller touching any)"),
    (Inv::Restored, "rights are restored after every return and throw"),
    (Inv::Caught, "every call ends as it must: a throw is caught at its catch point"),
    (Inv::CallFrame, "a call's frame comes back (result and the callee's rights)"),
    (Inv::Domains, "live domains stay within 1..max"),
    (Inv::Keys, "keys stay bounded (leased ≤ the hardware's)"),
    (Inv::Mappings, "mappings stay bounded (≤ baseline + per-domain VMAs × live + per-thread slack)"),
    (Inv::Descriptors, "descriptors stay bounded (≤ baseline + 8)"),
    (Inv::Threads, "threads stay bounded (≤ baseline + workers + 4)"),
    (Inv::NoHang, "no thread hangs"),
    (Inv::NothingLeft, "nothing is left behind (domains, threads, descriptors, timer, handlers)"),
];

/// What the controller and the workers share.
struct Shared {
    seed: u64,
    how: Rights,
    config: Config,
    /// The live-domain cap actually used (`max_domains`, or lower for `vm.max_map_count`).
    cap: usize,
    start: Instant,
    keys: Option<Arc<keys::KeyPool>>,
    live: AtomicUsize,
    target_domains: AtomicUsize,
    next_id: AtomicU64,
    orphans: Mutex<Vec<worker::Owned>>,
    orphan_count: AtomicUsize,
    ops: [AtomicU64; OPS.len()],
    results: [AtomicU64; RESULTS.len()],
    checked: [AtomicU64; INVARIANTS.len()],
    violated: [AtomicU64; INVARIANTS.len()],
    stop: AtomicBool,
    failure: Mutex<Option<(f64, String)>>,
    /// The test's leak was injected.
    injected: AtomicBool,
}

impl Shared {
    fn op(&self, op: Op) {
        self.ops[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn res(&self, r: Res) {
        self.res_n(r, 1);
    }

    fn res_n(&self, r: Res, n: u64) {
        if n > 0 {
            self.results[r as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts a check of `inv`; a violation fails the run with `what`.
    fn check(&self, inv: Inv, ok: bool, what: impl FnOnce() -> String) {
        self.checked[inv as usize].fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.violated[inv as usize].fetch_add(1, Ordering::Relaxed);
            self.fail(what());
        }
    }

    /// Records the first failure and tells everyone to stop.
    fn fail(&self, what: String) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() {
            *f = Some((self.start.elapsed().as_secs_f64(), what));
        }
        self.stop.store(true, Ordering::Release);
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn operations(&self) -> u64 {
        self.ops.iter().map(|a| a.load(Ordering::Relaxed)).sum()
    }
}

/// One stress run in a process at a time: it installs process-wide handlers and a timer.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the stress test with the default [`Config`].
pub fn run(settings: &Settings, hooks: &mut Hooks) -> anyhow::Result<StabilityRun> {
    run_with(settings, &Config::default(), hooks)
}

/// The mode this machine runs: keys where they work, else mprotect.
pub fn mode() -> Rights {
    if Rights::Pkey.available().is_ok() { Rights::Pkey } else { Rights::Mprotect }
}

/// Lines of `/proc/self/maps`: the process's mappings.
pub fn mappings() -> u64 {
    std::fs::read("/proc/self/maps").map_or(0, |m| m.iter().filter(|&&b| b == b'\n').count() as u64)
}

/// `vm.max_map_count` (65530 when unreadable: the kernel's default).
fn max_map_count() -> u64 {
    std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(65_530)
}

/// A worker being run.
struct Running {
    serial: u64,
    flags: Arc<worker::Flags>,
    handle: std::thread::JoinHandle<()>,
    last_beat: u64,
    beat_at: Instant,
    /// When it was told to stop.
    stopping_since: Option<Instant>,
}

/// Runs the stress test with `config`.
pub fn run_with(settings: &Settings, config: &Config, hooks: &mut Hooks) -> anyhow::Result<StabilityRun> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    anyhow::ensure!(config.max_domains >= 1 && config.max_threads >= 1, "the stress test needs a domain and a thread");
    anyhow::ensure!((1..=domain::chain::MAX_DEPTH).contains(&config.max_depth), "chains are 1 to 20 deep");
    anyhow::ensure!(config.timer_hz >= 1, "the timer needs a rate");
    let how = mode();
    Rights::Mprotect.available().map_err(|e| anyhow::anyhow!("no domain mode works here: {e}"))?;
    let mut notes = Vec::new();
    if how == Rights::Mprotect {
        notes.push(format!("mprotect mode: {}", Rights::Pkey.available().err().unwrap_or_default()));
    }
    let base = Baseline::now();
    // Each mprotect domain is a few VMAs (data between guard pages, a stack over its guard):
    // measured, so the cap stays clear of vm.max_map_count.
    let per_domain = {
        let probe: Vec<_> = (0..32).map(|_| domain::Domain::new(Rights::Mprotect, true)).collect::<Result<_, _>>()?;
        let per = mappings().saturating_sub(base.maps).div_ceil(probe.len() as u64).max(1);
        drop(probe);
        per
    };
    let map_max = max_map_count();
    let per_thread = 3;
    let budget = (map_max * 9 / 10).saturating_sub(base.maps + per_thread * config.max_threads as u64 + 1024);
    let cap = config.max_domains.min((budget / per_domain) as usize).max(1);
    if cap < config.max_domains {
        notes.push(format!(
            "domains capped at {cap} (asked {}): {per_domain} mappings a domain, vm.max_map_count {map_max}, 10 % margin",
            config.max_domains
        ));
    } else {
        notes.push(format!(
            "mappings: {per_domain} a domain; at {} domains and {} threads the run stays under 90 % of vm.max_map_count {map_max}",
            config.max_domains, config.max_threads
        ));
    }
    let keys = if how == Rights::Pkey { Some(Arc::new(keys::KeyPool::new()?)) } else { None };
    if let Some(k) = &keys {
        notes.push(format!("{} hardware keys shared by up to {cap} domains (plus a parking key)", k.total()));
    }
    let shared = Arc::new(Shared {
        seed: settings.seed,
        how,
        config: config.clone(),
        cap,
        start: Instant::now(),
        keys,
        live: AtomicUsize::new(0),
        target_domains: AtomicUsize::new(1),
        next_id: AtomicU64::new(0),
        orphans: Mutex::new(Vec::new()),
        orphan_count: AtomicUsize::new(0),
        ops: Default::default(),
        results: Default::default(),
        checked: Default::default(),
        violated: Default::default(),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        injected: AtomicBool::new(false),
    });
    let ticks0 = sys::timer::Ticker::ticks();
    let period = Duration::from_nanos(1_000_000_000 / u64::from(config.timer_hz));
    let ticker = sys::timer::Ticker::start(sys::timer::timer_signal(), period)?;
    let mut c = Controller {
        shared: Arc::clone(&shared),
        rng: choice::controller_rng(settings.seed),
        workers: Vec::new(),
        next_serial: 0,
        target_threads: 1,
        trend: Vec::new(),
        base,
        per_domain,
        per_thread,
    };
    let interrupted = c.drive(settings, hooks);
    // Clean-up, whatever happened: stop and join every worker, destroy every domain, stop
    // the timer (dropping the ticker puts the signal's disposition back).
    let joined = c.stop_all();
    {
        let mut orphans = shared.orphans.lock().unwrap_or_else(|e| e.into_inner());
        let n = orphans.len();
        orphans.clear();
        shared.orphan_count.store(0, Ordering::Relaxed);
        if joined {
            shared.live.fetch_sub(n, Ordering::AcqRel);
            shared.ops[Op::Destroy as usize].fetch_add(n as u64, Ordering::Relaxed);
        }
    }
    drop(ticker);
    let timer_signals = sys::timer::Ticker::ticks().wrapping_sub(ticks0);
    let ran_s = shared.start.elapsed().as_secs_f64();
    if joined {
        let left = c.left_behind();
        shared.check(Inv::NothingLeft, left.is_none(), || left.unwrap_or_default());
    }
    let failure = shared.failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let outcome = match (failure, interrupted) {
        (Some((at_s, what)), _) => {
            Outcome::Failed { at_s, what, replay: crate::replay_command(StabilityTest::Stress, settings) }
        }
        (None, Some(at_s)) => Outcome::Interrupted { at_s },
        (None, None) => Outcome::Clean,
    };
    let clean_s = match &outcome {
        Outcome::Failed { at_s, .. } => *at_s,
        _ => ran_s,
    };
    let mut operations: Vec<Tally> = OPS
        .iter()
        .map(|(o, n)| Tally { kind: n.to_string(), count: shared.ops[*o as usize].load(Ordering::Relaxed) })
        .collect();
    operations.push(Tally { kind: "timer_signals".into(), count: timer_signals });
    let results = RESULTS
        .iter()
        .map(|(r, n)| Tally { kind: n.to_string(), count: shared.results[*r as usize].load(Ordering::Relaxed) })
        .collect();
    let invariants = INVARIANTS
        .iter()
        .filter(|(i, _)| how == Rights::Pkey || !matches!(i, Inv::Keys))
        .map(|(i, n)| Invariant {
            name: n.to_string(),
            checked: shared.checked[*i as usize].load(Ordering::Relaxed),
            violated: shared.violated[*i as usize].load(Ordering::Relaxed),
        })
        .collect();
    let settings_list = vec![
        format!("max_domains={}", config.max_domains),
        format!("domain_cap={cap}"),
        format!("max_threads={}", config.max_threads),
        format!("max_depth={}", config.max_depth),
        format!("timer_hz={}", config.timer_hz),
        format!("probe_per_mille={}", config.probe_per_mille),
        format!("thread_stack_kib={}", config.thread_stack_kib),
        format!("hang_after_s={}", config.hang_after.as_secs_f64()),
    ];
    Ok(StabilityRun {
        test: StabilityTest::Stress,
        seed: settings.seed,
        mode: how.name().to_string(),
        settings: settings_list,
        requested_s: settings.duration.as_secs_f64(),
        ran_s,
        clean_s,
        outcome,
        operations,
        results,
        invariants,
        trend: c.trend,
        notes,
    })
}

/// The process before the run.
struct Baseline {
    maps: u64,
    fds: u64,
    threads: u64,
    timers: Option<usize>,
    segv: Option<libc::sighandler_t>,
    tick: Option<libc::sighandler_t>,
}

impl Baseline {
    fn now() -> Baseline {
        let p = crate::trend::sample(None, 0.0, Vec::new());
        Baseline {
            maps: mappings(),
            fds: p.fds,
            threads: p.threads,
            timers: sys::timer::posix_timers_now(),
            segv: sys::disposition::handler_of(libc::SIGSEGV),
            tick: sys::disposition::handler_of(sys::timer::timer_signal()),
        }
    }
}

struct Controller {
    shared: Arc<Shared>,
    rng: stats::rng::Rng,
    workers: Vec<Running>,
    next_serial: u64,
    target_threads: usize,
    trend: Vec<model::stability::TrendPoint>,
    base: Baseline,
    per_domain: u64,
    per_thread: u64,
}

/// The controller's tick: it polls the stop flag, the failure and the workers this often.
const TICK: Duration = Duration::from_millis(20);
/// Targets move, and workers start and stop, this often.
const STEER: Duration = Duration::from_millis(100);
/// At most this many workers start (or stop) per steering.
const THREADS_PER_STEER: usize = 16;

impl Controller {
    /// Runs until the duration is over, a failure, or an interrupt (then `Some(at_s)`).
    fn drive(&mut self, settings: &Settings, hooks: &mut Hooks) -> Option<f64> {
        let s = Arc::clone(&self.shared);
        // One domain alive from the start, waiting in the orphanage for the first worker.
        match domain::Domain::new(s.how, true).and_then(|d| match &s.keys {
            Some(k) => d.retag(k.park()).map(|()| d),
            None => Ok(d),
        }) {
            Ok(d) => {
                s.live.store(1, Ordering::Relaxed);
                let id = s.next_id.fetch_add(1, Ordering::Relaxed);
                s.orphans.lock().unwrap_or_else(|e| e.into_inner()).push(worker::Owned { id, d });
                s.orphan_count.store(1, Ordering::Relaxed);
                s.op(Op::Create);
            }
            Err(e) => s.fail(format!("creating the first domain failed: {e}")),
        }
        self.sample(0.0);
        let (mut next_steer, mut next_sample) = (Instant::now(), s.start + Duration::from_secs(1));
        loop {
            if s.stopping() {
                return None;
            }
            if (hooks.interrupted)() {
                return Some(s.start.elapsed().as_secs_f64());
            }
            let now = Instant::now();
            if now.duration_since(s.start) >= settings.duration {
                return None;
            }
            if now >= next_steer {
                next_steer = now + STEER;
                self.steer();
            }
            self.reap_and_watch();
            if now >= next_sample {
                next_sample += Duration::from_secs(1);
                let at = now.duration_since(s.start).as_secs_f64();
                self.sample(at);
                (hooks.progress)(&Progress { elapsed_s: at, operations: s.operations() });
            }
            std::thread::sleep(TICK);
        }
    }

    fn live_workers(&self) -> usize {
        self.workers.iter().filter(|w| w.stopping_since.is_none()).count()
    }

    /// Moves the targets and starts or stops workers towards the thread target.
    fn steer(&mut self) {
        let s = Arc::clone(&self.shared);
        let t = choice::wander(&mut self.rng, s.target_domains.load(Ordering::Relaxed), s.cap);
        s.target_domains.store(t, Ordering::Relaxed);
        self.target_threads = choice::wander(&mut self.rng, self.target_threads, s.config.max_threads);
        let live = self.live_workers();
        if live < self.target_threads {
            for _ in 0..(self.target_threads - live).min(THREADS_PER_STEER) {
                if !self.start_worker() {
                    break;
                }
            }
        } else if live > self.target_threads {
            for _ in 0..(live - self.target_threads).min(THREADS_PER_STEER) {
                let alive: Vec<usize> =
                    (0..self.workers.len()).filter(|&i| self.workers[i].stopping_since.is_none()).collect();
                if alive.len() <= 1 {
                    break;
                }
                let w = &mut self.workers[alive[self.rng.index(alive.len())]];
                w.flags.stop.store(true, Ordering::Relaxed);
                w.stopping_since = Some(Instant::now());
            }
        }
    }

    fn start_worker(&mut self) -> bool {
        let s = Arc::clone(&self.shared);
        let flags = Arc::new(worker::Flags::default());
        let serial = self.next_serial;
        let (sh, fl) = (Arc::clone(&s), Arc::clone(&flags));
        let spawned = std::thread::Builder::new()
            .name(format!("stress-{serial}"))
            .stack_size(s.config.thread_stack_kib * 1024)
            .spawn(move || worker::run(serial, sh, fl));
        match spawned {
            Ok(handle) => {
                self.next_serial += 1;
                s.op(Op::ThreadStart);
                self.workers.push(Running {
                    serial,
                    flags,
                    handle,
                    last_beat: 0,
                    beat_at: Instant::now(),
                    stopping_since: None,
                });
                true
            }
            Err(_) => {
                s.res(Res::ThreadRefused);
                false
            }
        }
    }

    /// Joins the workers that ended; fails the run on one that hangs.
    fn reap_and_watch(&mut self) {
        let s = Arc::clone(&self.shared);
        let hang = s.config.hang_after;
        let now = Instant::now();
        let mut i = 0;
        while i < self.workers.len() {
            let w = &mut self.workers[i];
            if w.flags.done.load(Ordering::Acquire) {
                let w = self.workers.swap_remove(i);
                if w.handle.join().is_err() {
                    s.fail(format!("worker {} panicked", w.serial));
                }
                s.op(Op::ThreadExit);
                continue;
            }
            let beat = w.flags.beat.load(Ordering::Relaxed);
            if beat != w.last_beat {
                w.last_beat = beat;
                w.beat_at = now;
            }
            let stuck =
                now.duration_since(w.beat_at) > hang || w.stopping_since.is_some_and(|t| now.duration_since(t) > hang);
            s.check(Inv::NoHang, !stuck, || {
                format!("hung: worker {} made no step for {:.0} s", w.serial, hang.as_secs_f64())
            });
            i += 1;
        }
    }

    /// Tells every worker to stop and joins them, each within the hang deadline; false if one
    /// hung (it is left running, and the run has failed).
    fn stop_all(&mut self) -> bool {
        for w in &self.workers {
            w.flags.stop.store(true, Ordering::Relaxed);
        }
        let deadline = Instant::now() + self.shared.config.hang_after;
        while self.workers.iter().any(|w| !w.flags.done.load(Ordering::Acquire)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut all = true;
        for w in self.workers.drain(..) {
            if w.flags.done.load(Ordering::Acquire) {
                if w.handle.join().is_err() {
                    self.shared.fail(format!("worker {} panicked", w.serial));
                }
                self.shared.op(Op::ThreadExit);
            } else {
                all = false;
                self.shared.check(Inv::NoHang, false, || format!("hung: worker {} did not stop", w.serial));
            }
        }
        all
    }

    /// A trend point, and the bounds on the process's resources.
    fn sample(&mut self, at: f64) {
        let s = Arc::clone(&self.shared);
        let maps = mappings();
        let live = s.live.load(Ordering::Relaxed) as u64;
        let workers = self.workers.len() as u64;
        let mut gauges = vec![
            Tally { kind: "domains".into(), count: live },
            Tally { kind: "workers".into(), count: self.live_workers() as u64 },
            Tally { kind: "mappings".into(), count: maps },
        ];
        if let Some(k) = &s.keys {
            let leased = k.leased();
            gauges.push(Tally { kind: "keys".into(), count: leased as u64 });
            s.check(Inv::Keys, leased <= k.total() && k.total() <= 15, || {
                format!("{leased} keys leased of {}", k.total())
            });
        }
        let p = crate::trend::sample(None, at, gauges);
        s.check(Inv::Domains, (1..=s.cap as u64).contains(&live), || {
            format!("{live} domains alive, not in 1..{}", s.cap)
        });
        // Workers may be creating a domain each between the count and the read.
        let map_bound = self.base.maps + self.per_domain * (live + workers + 16) + self.per_thread * workers + 512;
        s.check(Inv::Mappings, maps <= map_bound, || {
            format!("{maps} mappings with {live} domains and {workers} workers: over the bound {map_bound}")
        });
        s.check(Inv::Descriptors, p.fds <= self.base.fds + 8, || {
            format!("{} descriptors open, {} at the start", p.fds, self.base.fds)
        });
        s.check(Inv::Threads, p.threads <= self.base.threads + workers + 4, || {
            format!("{} threads with {workers} workers, {} at the start", p.threads, self.base.threads)
        });
        crate::trend::push_bounded(&mut self.trend, p, 1000);
    }

    /// What the run left behind (after every worker was joined and every domain dropped).
    fn left_behind(&self) -> Option<String> {
        let now = Baseline::now();
        let p = crate::trend::sample(None, 0.0, Vec::new());
        let mut left = Vec::new();
        let live = self.shared.live.load(Ordering::Relaxed);
        if live != 0 {
            left.push(format!("{live} domains"));
        }
        if p.fds > self.base.fds {
            left.push(format!("{} descriptors (from {})", p.fds, self.base.fds));
        }
        if p.threads > self.base.threads {
            left.push(format!("{} threads (from {})", p.threads, self.base.threads));
        }
        if now.timers != self.base.timers {
            left.push(format!("POSIX timers {:?} (from {:?})", now.timers, self.base.timers));
        }
        if now.segv != self.base.segv || now.tick != self.base.tick {
            left.push("a signal handler".into());
        }
        // glibc keeps up to 40 MiB of finished threads' stacks for reuse (two mappings each).
        let cached = 2 * (40 * 1024 / self.shared.config.thread_stack_kib.max(1)) as u64;
        if now.maps > self.base.maps + cached + 16 {
            left.push(format!("{} mappings (from {}; glibc may cache {cached})", now.maps, self.base.maps));
        }
        (!left.is_empty()).then(|| format!("left behind: {}", left.join(", ")))
    }
}
