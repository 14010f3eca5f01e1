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
//! - **Threads**: the controller (the caller's thread) polls the interrupt and the failure
//!   and steers two wandering targets — the live domains and the live workers; a keeper
//!   thread starts and stops workers towards the second and watches them for hangs; a
//!   sampler thread reads the process's resources each second (starting threads and reading
//!   `/proc/self/maps` wait for the address-space lock the workers' `mprotect`s hold, seconds
//!   at a time under load, so neither is done by the thread that must answer Ctrl-C). Each
//!   worker owns its domains (a domain's private stack serves one call at a time), and a
//!   stopped worker's domains go to an orphanage other workers adopt from.
//! - **Determinism**: every choice comes from [`choice`], seeded by the run's seed (one
//!   stream per worker, in the order the controller starts them).
//! - **Nothing left behind**: workers joined (no thread named `stress:…` left), domains destroyed, timer deleted, the timer
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
    (
        Inv::Threads,
        "threads stay bounded (the run's own: its 3, and the workers started and not joined, or joined lately)",
    ),
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
    /// The most domains alive since the controller last reset it.
    live_peak: AtomicUsize,
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
    /// Workers not yet joined, and those of them not told to stop (the controller's counts).
    workers_running: AtomicUsize,
    workers_live: AtomicUsize,
    /// Where the controller wants the live workers.
    target_threads: AtomicUsize,
    /// The keeper's rounds (its sign of life), and whether it joined every worker.
    keeper_beat: AtomicU64,
    all_joined: AtomicBool,
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

    /// A fresh domain with a private stack: parked (keys), or closed (mprotect).
    fn new_domain(&self) -> std::io::Result<domain::Domain> {
        match &self.keys {
            Some(pool) => domain::Domain::with_key(pool.park(), true),
            None => domain::Domain::new(Rights::Mprotect, true),
        }
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

/// The process's mappings by permissions and size (the five commonest), for a failure's
/// message.
fn mappings_summary() -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut by: std::collections::HashMap<(String, u64), u64> = std::collections::HashMap::new();
    for l in maps.lines() {
        let mut f = l.split_whitespace();
        let (range, perms) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
        let mut ends = range.split('-').map(|x| u64::from_str_radix(x, 16).unwrap_or(0));
        let (a, b) = (ends.next().unwrap_or(0), ends.next().unwrap_or(0));
        *by.entry((perms.to_string(), b.saturating_sub(a) / 1024)).or_default() += 1;
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v.iter().take(8).map(|((p, kib), n)| format!("{n}× {p} {kib} KiB")).collect::<Vec<_>>().join(", ")
}

/// Mappings the C library keeps after threads end: up to 40 MiB of finished threads' stacks
/// for reuse (glibc's stack cache; two mappings each), and the malloc arenas (up to eight a
/// CPU, two mappings each), plus a little.
pub fn runtime_mappings(config: &Config) -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    2 * (40 * 1024 / config.thread_stack_kib.max(1) as u64 + 1) + 2 * 8 * cpus + 64
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
    // A thread: its stack over a guard page, and Rust's signal stack over a guard page.
    let per_thread = 4;
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
        live_peak: AtomicUsize::new(0),
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
        workers_running: AtomicUsize::new(0),
        workers_live: AtomicUsize::new(0),
        target_threads: AtomicUsize::new(1),
        keeper_beat: AtomicU64::new(0),
        all_joined: AtomicBool::new(false),
    });
    let (ticks0, overruns0) = (sys::timer::Ticker::ticks(), sys::timer::Ticker::overruns());
    let period = Duration::from_nanos(1_000_000_000 / u64::from(config.timer_hz));
    let ticker = sys::timer::Ticker::start(sys::timer::timer_signal(), period)?;
    let mut c = Controller {
        shared: Arc::clone(&shared),
        rng: choice::controller_rng(settings.seed),
        sampler: Arc::new(Sampler {
            shared: Arc::clone(&shared),
            base,
            per_domain,
            per_thread,
            trend: Mutex::new(Vec::new()),
            last_maps: AtomicU64::new(0),
            joins: Mutex::new([0; 2]),
            slowest: Mutex::new(Duration::ZERO),
            stop: AtomicBool::new(false),
        }),
        sampling: Vec::new(),
        keeping: None,
        slowest_tick: Duration::ZERO,
    };
    let interrupted = c.drive(settings, hooks);
    // The workload ran until now; the clean-up after it is checked, but is not time under load.
    let stopped_s = shared.start.elapsed().as_secs_f64();
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
    let timer_overruns = sys::timer::Ticker::overruns().wrapping_sub(overruns0);
    let slowest_sample = *c.sampler.slowest.lock().unwrap_or_else(|e| e.into_inner());
    notes.push(format!(
        "the controller came round every {:.0} ms at worst; a count of the mappings (/proc/self/maps, read against the workers' mprotects) took up to {:.0} ms",
        c.slowest_tick.as_secs_f64() * 1e3,
        slowest_sample.as_secs_f64() * 1e3
    ));
    let ran_s = shared.start.elapsed().as_secs_f64();
    notes.push(format!(
        "timer: {timer_signals} signals delivered in {ran_s:.1} s ({:.0} a second of the {} asked; {timer_overruns} expiries merged by the kernel)",
        timer_signals as f64 / ran_s.max(1e-9),
        config.timer_hz
    ));
    if joined {
        shared.workers_running.store(0, Ordering::Relaxed);
        shared.workers_live.store(0, Ordering::Relaxed);
        c.sampler.check_maps();
        c.sampler.sample(ran_s, true);
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
        Outcome::Failed { at_s, .. } | Outcome::Interrupted { at_s } => *at_s,
        Outcome::Clean => stopped_s,
    };
    let mut operations: Vec<Tally> = OPS
        .iter()
        .map(|(o, n)| Tally { kind: n.to_string(), count: shared.ops[*o as usize].load(Ordering::Relaxed) })
        .collect();
    operations.push(Tally { kind: "timer_signals".into(), count: timer_signals });
    let mut results: Vec<Tally> = RESULTS
        .iter()
        .map(|(r, n)| Tally { kind: n.to_string(), count: shared.results[*r as usize].load(Ordering::Relaxed) })
        .collect();
    // A tick whose signal was still pending when the next came is merged into it.
    results.push(Tally { kind: "timer_ticks_merged".into(), count: timer_overruns });
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
        trend: std::mem::take(&mut *c.sampler.trend.lock().unwrap_or_else(|e| e.into_inner())),
        notes,
        short: false,
    })
}

/// The start of the name of every thread the run starts (at most 15 bytes in all).
const THREAD_PREFIX: &str = "stress:";

/// The process before the run.
struct Baseline {
    maps: u64,
    fds: u64,
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
            timers: sys::timer::posix_timers_now(),
            segv: sys::disposition::handler_of(libc::SIGSEGV),
            tick: sys::disposition::handler_of(sys::timer::timer_signal()),
        }
    }
}

/// Joins `h` if it ends within `limit`; false (and leaves it) otherwise.
fn join_within(h: std::thread::JoinHandle<()>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !h.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    h.is_finished() && h.join().is_ok()
}

/// Starts, stops and joins the workers, towards the controller's thread target, and watches
/// them for hangs.
struct Keeper {
    shared: Arc<Shared>,
    rng: stats::rng::Rng,
    workers: Vec<Running>,
    next_serial: u64,
}

impl Keeper {
    fn run(&mut self) {
        let s = Arc::clone(&self.shared);
        while !s.stopping() {
            self.steer();
            self.reap_and_watch();
            s.workers_running.store(self.workers.len(), Ordering::Relaxed);
            s.workers_live.store(self.live_workers(), Ordering::Relaxed);
            s.keeper_beat.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(TICK);
        }
        let joined = self.stop_all();
        s.workers_running.store(self.workers.len(), Ordering::Relaxed);
        s.workers_live.store(0, Ordering::Relaxed);
        s.all_joined.store(joined, Ordering::Release);
    }

    fn live_workers(&self) -> usize {
        self.workers.iter().filter(|w| w.stopping_since.is_none()).count()
    }

    /// Starts or stops a few workers towards the thread target.
    fn steer(&mut self) {
        let target = self.shared.target_threads.load(Ordering::Relaxed).max(1);
        let live = self.live_workers();
        if live < target {
            for _ in 0..(target - live).min(THREADS_PER_TICK) {
                if !self.start_worker() {
                    break;
                }
            }
        } else if live > target {
            for _ in 0..(live - target).min(THREADS_PER_TICK) {
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
            .name(format!("{THREAD_PREFIX}{serial}"))
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

    /// Stops every worker and joins them, each within the hang deadline; false if one hung.
    fn stop_all(&mut self) -> bool {
        for w in &self.workers {
            w.flags.stop.store(true, Ordering::Relaxed);
        }
        let deadline = Instant::now() + self.shared.config.hang_after;
        while self.workers.iter().any(|w| !w.flags.done.load(Ordering::Acquire)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut all = true;
        for w in std::mem::take(&mut self.workers) {
            if w.flags.done.load(Ordering::Acquire) {
                if w.handle.join().is_err() {
                    self.shared.fail(format!("worker {} panicked", w.serial));
                }
                self.shared.op(Op::ThreadExit);
            } else {
                all = false;
                self.shared.check(Inv::NoHang, false, || format!("hung: worker {} did not stop", w.serial));
                self.workers.push(w);
            }
        }
        all
    }
}

/// Samples the process's resources about once a second on a thread of its own (reading
/// `/proc/self/maps` waits for the workers' `mprotect`s, seconds at a time under load, and
/// the controller must keep polling) and checks their bounds.
struct Sampler {
    shared: Arc<Shared>,
    base: Baseline,
    per_domain: u64,
    per_thread: u64,
    trend: Mutex<Vec<model::stability::TrendPoint>>,
    /// The latest count of mappings.
    last_maps: AtomicU64,
    /// Workers joined by the last two samples.
    joins: Mutex<[u64; 2]>,
    /// The longest a count of the mappings took.
    slowest: Mutex<Duration>,
    stop: AtomicBool,
}

impl Sampler {
    /// Samples every second until told to stop.
    fn run(&self) {
        let start = self.shared.start;
        let mut next = Instant::now() + Duration::from_secs(1);
        while !self.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= next {
                next = (next + Duration::from_secs(1)).max(now);
                self.sample(now.duration_since(start).as_secs_f64(), false);
            }
            std::thread::sleep(TICK);
        }
    }

    /// Counts the mappings and checks their bound, over and over, until told to stop.
    fn run_maps(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            self.check_maps();
            let took = t.elapsed();
            let mut slowest = self.slowest.lock().unwrap_or_else(|e| e.into_inner());
            *slowest = (*slowest).max(took);
            drop(slowest);
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Counts the mappings (the latest count goes into the trend) and checks their bound.
    fn check_maps(&self) {
        let s = &self.shared;
        // Reading the maps takes a while (the workers' mprotects contend for the lock): bound
        // them by the most domains alive meanwhile.
        s.live_peak.store(s.live.load(Ordering::Relaxed), Ordering::Relaxed);
        let workers = s.workers_running.load(Ordering::Relaxed) as u64;
        let maps = mappings();
        let peak = s.live_peak.load(Ordering::Relaxed) as u64;
        let workers = workers.max(s.workers_running.load(Ordering::Relaxed) as u64);
        self.last_maps.store(maps, Ordering::Relaxed);
        // Each worker may be destroying a domain it no longer counts; each has its stacks.
        let map_bound = self.base.maps
            + self.per_domain * (peak + workers)
            + self.per_thread * workers
            + runtime_mappings(&s.config);
        s.check(Inv::Mappings, maps <= map_bound, || {
            format!(
                "{maps} mappings with up to {peak} domains and {workers} workers: over the bound {map_bound} ({})",
                mappings_summary()
            )
        });
    }

    /// A trend point (with the latest count of mappings), and the bounds on the process's
    /// descriptors, threads, keys and domains (`last`: after the run, with no domain left).
    fn sample(&self, at: f64, last: bool) {
        let s = Arc::clone(&self.shared);
        let live = s.live.load(Ordering::Relaxed) as u64;
        let mut gauges = vec![
            Tally { kind: "domains".into(), count: live },
            Tally { kind: "workers".into(), count: s.workers_live.load(Ordering::Relaxed) as u64 },
            Tally { kind: "mappings".into(), count: self.last_maps.load(Ordering::Relaxed) },
        ];
        if let Some(k) = &s.keys {
            let leased = k.leased();
            gauges.push(Tally { kind: "keys".into(), count: leased as u64 });
            s.check(Inv::Keys, leased <= k.total() && k.total() <= 15, || {
                format!("{leased} keys leased of {}", k.total())
            });
        }
        let p = crate::trend::sample(None, at, gauges);
        s.check(Inv::Domains, last || (1..=s.cap as u64).contains(&live), || {
            format!("{live} domains alive, not in 1..{}", s.cap)
        });
        s.check(Inv::Descriptors, p.fds <= self.base.fds + 8, || {
            format!("{} descriptors open, {} at the start", p.fds, self.base.fds)
        });
        // Every thread of the run's (named `stress:…`: the process also has threads the run
        // did not start, such as a test harness's) is the keeper, one of the two sampling
        // threads, or a worker the keeper started and has not yet joined: counted once its
        // spawn returns, so one may be mid-spawn; and a joined worker leaves the list only
        // once the kernel has released it, which under load takes a while, so the workers
        // joined in the last two samples' time may still be listed. The starts are read after
        // the list, so that they cover every thread it saw.
        let own = platform::tasks::threads_named(THREAD_PREFIX).len() as u64;
        let started = s.ops[Op::ThreadStart as usize].load(Ordering::Acquire);
        let joined_earlier = {
            let joins = s.ops[Op::ThreadExit as usize].load(Ordering::Relaxed);
            let mut h = self.joins.lock().unwrap_or_else(|e| e.into_inner());
            let earlier = h[0];
            *h = [h[1], joins];
            earlier
        };
        let bound = 3 + 1 + started.saturating_sub(joined_earlier);
        s.check(Inv::Threads, own <= bound, || {
            format!("{own} threads of the run's: {started} workers started, {joined_earlier} joined two samples ago")
        });
        crate::trend::push_bounded(&mut self.trend.lock().unwrap_or_else(|e| e.into_inner()), p, 1000);
    }
}

struct Controller {
    shared: Arc<Shared>,
    rng: stats::rng::Rng,
    sampler: Arc<Sampler>,
    /// The sampler's threads (resources, mappings), while they run.
    sampling: Vec<std::thread::JoinHandle<()>>,
    /// The keeper's thread (it starts, stops and joins the workers), while it runs.
    keeping: Option<std::thread::JoinHandle<()>>,
    /// The longest the controller's loop took to come round (it polls the interrupt).
    slowest_tick: Duration,
}

/// The controller's and the keeper's tick: they poll the stop flag, the failure and the
/// workers this often.
const TICK: Duration = Duration::from_millis(20);
/// Targets move this often.
const STEER: Duration = Duration::from_millis(100);
/// At most this many workers start (or stop) per keeper tick.
const THREADS_PER_TICK: usize = 4;

impl Controller {
    /// Runs until the duration is over, a failure, or an interrupt (then `Some(at_s)`). It
    /// only polls and steers: starting and joining threads waits for the kernel's lock on the
    /// address space, which the workers' `mprotect`s hold seconds at a time under load, so
    /// the keeper does that, and the sampler reads `/proc`.
    fn drive(&mut self, settings: &Settings, hooks: &mut Hooks) -> Option<f64> {
        let s = Arc::clone(&self.shared);
        // One domain alive from the start, waiting in the orphanage for the first worker.
        match s.new_domain() {
            Ok(d) => {
                s.live.store(1, Ordering::Relaxed);
                let id = s.next_id.fetch_add(1, Ordering::Relaxed);
                s.orphans.lock().unwrap_or_else(|e| e.into_inner()).push(worker::Owned { id, d });
                s.orphan_count.store(1, Ordering::Relaxed);
                s.op(Op::Create);
            }
            Err(e) => s.fail(format!("creating the first domain failed: {e}")),
        }
        self.sampler.check_maps();
        self.sampler.sample(0.0, false);
        for maps in [false, true] {
            let smp = Arc::clone(&self.sampler);
            let name = if maps { "maps" } else { "sampler" };
            match std::thread::Builder::new()
                .name(format!("{THREAD_PREFIX}{name}"))
                .spawn(move || if maps { smp.run_maps() } else { smp.run() })
            {
                Ok(h) => self.sampling.push(h),
                Err(e) => s.fail(format!("starting the sampler failed: {e}")),
            }
        }
        let mut keeper =
            Keeper { shared: Arc::clone(&s), rng: choice::keeper_rng(s.seed), workers: Vec::new(), next_serial: 0 };
        match std::thread::Builder::new().name(format!("{THREAD_PREFIX}keeper")).spawn(move || keeper.run()) {
            Ok(h) => self.keeping = Some(h),
            Err(e) => s.fail(format!("starting the keeper failed: {e}")),
        }
        let (mut next_steer, mut next_progress) = (Instant::now(), s.start + Duration::from_secs(1));
        let (mut keeper_beat, mut keeper_at) = (0, Instant::now());
        let mut last = Instant::now();
        loop {
            self.slowest_tick = self.slowest_tick.max(last.elapsed());
            last = Instant::now();
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
                let t = choice::wander(&mut self.rng, s.target_domains.load(Ordering::Relaxed), s.cap);
                s.target_domains.store(t, Ordering::Relaxed);
                let t = choice::wander(&mut self.rng, s.target_threads.load(Ordering::Relaxed), s.config.max_threads);
                s.target_threads.store(t, Ordering::Relaxed);
            }
            let beat = s.keeper_beat.load(Ordering::Relaxed);
            if beat != keeper_beat {
                (keeper_beat, keeper_at) = (beat, now);
            }
            let hang = s.config.hang_after;
            s.check(Inv::NoHang, now.duration_since(keeper_at) <= hang, || {
                format!("hung: the keeper of the threads made no round for {:.0} s", hang.as_secs_f64())
            });
            if now >= next_progress {
                next_progress += Duration::from_secs(1);
                let at = now.duration_since(s.start).as_secs_f64();
                (hooks.progress)(&Progress { elapsed_s: at, operations: s.operations() });
            }
            std::thread::sleep(TICK);
        }
    }

    /// Tells everyone to stop and waits for the keeper (which joins the workers) and the
    /// sampler, each within the hang deadline; false if one hung (it is left running, and
    /// the run has failed).
    fn stop_all(&mut self) -> bool {
        let s = Arc::clone(&self.shared);
        s.stop.store(true, Ordering::Release);
        let hang = s.config.hang_after;
        let mut all = true;
        // The keeper gives each worker the hang deadline; it gets a little more.
        if let Some(h) = self.keeping.take() {
            all &= join_within(h, hang + Duration::from_secs(5));
        }
        all &= s.all_joined.load(Ordering::Acquire);
        self.sampler.stop.store(true, Ordering::Relaxed);
        for h in self.sampling.drain(..) {
            all &= join_within(h, hang);
        }
        if !all {
            s.check(Inv::NoHang, false, || "hung: a thread did not stop".to_string());
        }
        all
    }

    /// What the run left behind (after every worker was joined and every domain dropped).
    fn left_behind(&self) -> Option<String> {
        // The run's own threads are named `stress:…` (not `stress-`: a test binary is). The
        // process's total is not compared: a test harness starts threads too.
        let mut threads = platform::tasks::threads_named_settled(THREAD_PREFIX, 0, Duration::from_secs(2));
        let p = crate::trend::sample(None, 0.0, Vec::new());
        let now = Baseline::now();
        let mut left = Vec::new();
        let live = self.shared.live.load(Ordering::Relaxed);
        if live != 0 {
            left.push(format!("{live} domains"));
        }
        if p.fds > self.sampler.base.fds {
            left.push(format!("{} descriptors (from {})", p.fds, self.sampler.base.fds));
        }
        if !threads.is_empty() {
            threads.sort();
            left.push(format!("{} threads ({})", threads.len(), threads.join(", ")));
        }
        if now.timers != self.sampler.base.timers {
            left.push(format!("POSIX timers {:?} (from {:?})", now.timers, self.sampler.base.timers));
        }
        if now.segv != self.sampler.base.segv || now.tick != self.sampler.base.tick {
            left.push("a signal handler".into());
        }
        let cached = runtime_mappings(&self.shared.config);
        if now.maps > self.sampler.base.maps + cached {
            left.push(format!(
                "{} mappings (from {}; the C library may keep {cached})",
                now.maps, self.sampler.base.maps
            ));
        }
        (!left.is_empty()).then(|| format!("left behind: {}", left.join(", ")))
    }
}
