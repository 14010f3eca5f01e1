//! The stress test, run for a few seconds: clean, every kind counted, an injected violation
//! caught, nothing left behind, an interrupt honoured.

use model::stability::{Outcome, StabilityRun};
use osprim_stability::stress::{self, Config};
use osprim_stability::{Hooks, Progress, Settings};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests run one at a time: each counts the process's threads, descriptors and mappings.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(seconds: f64, seed: u64, config: &Config, stop: &(dyn Fn() -> bool + Sync)) -> (StabilityRun, Vec<Progress>) {
    let settings = Settings { duration: Duration::from_secs_f64(seconds), seed };
    let mut seen = Vec::new();
    let mut progress = |p: &Progress| seen.push(p.clone());
    let mut hooks = Hooks { interrupted: stop, progress: &mut progress };
    let r = stress::run_with(&settings, config, &mut hooks).expect("the stress test runs");
    (r, seen)
}

fn count(r: &StabilityRun, kind: &str) -> u64 {
    r.operations.iter().chain(&r.results).find(|t| t.kind == kind).map_or(0, |t| t.count)
}

fn summary(r: &StabilityRun) -> String {
    format!("{:?}\n{:?}\n{:?}\n{:?}", r.outcome, r.operations, r.results, r.invariants)
}

/// A small configuration, so that two seconds reach every kind on a shared machine.
fn small() -> Config {
    Config { max_domains: 400, max_threads: 24, ..Config::default() }
}

#[test]
fn a_two_second_run_is_clean_and_counts_every_kind() {
    let _s = serial();
    let (r, progress) = run(2.0, 1, &small(), &|| false);
    assert!(r.is_clean(), "{}", summary(&r));
    for kind in [
        "create",
        "destroy",
        "fcall",
        "tcall",
        "call",
        "xfer",
        "throw",
        "fault_probe",
        "thread_start",
        "thread_exit",
        "timer_signals",
    ] {
        assert!(count(&r, kind) > 0, "{kind}: {}", summary(&r));
    }
    for kind in ["returned", "xferred", "raised", "thrown_by_fault", "probe_faulted"] {
        assert!(count(&r, kind) > 0, "{kind}: {}", summary(&r));
    }
    assert!(r.invariants.iter().all(|i| i.violated == 0), "{}", summary(&r));
    for name in ["reaches", "outside access", "restored", "catch point", "frame", "mappings", "descriptors", "threads"]
    {
        let i = r.invariants.iter().find(|i| i.name.contains(name)).expect(name);
        assert!(i.checked > 0, "{name} never checked: {}", summary(&r));
    }
    // Clean for the workload's whole time; the clean-up after it is not time under load.
    assert!(r.clean_s >= 2.0 && r.clean_s <= r.ran_s, "{}", summary(&r));
    assert!(r.trend.len() >= 2 && !progress.is_empty(), "sampled and reported each second");
    assert!(r.mode == "pkey" || r.mode == "mprotect");
    assert!(r.settings.iter().any(|s| s == "max_threads=24"));
}

#[test]
fn an_injected_leak_of_rights_is_caught_with_its_replay() {
    let _s = serial();
    let config = Config { inject_leak_after: Some(Duration::from_millis(300)), ..small() };
    let (r, _) = run(10.0, 77, &config, &|| false);
    match &r.outcome {
        Outcome::Failed { at_s, what, replay } => {
            assert!(*at_s >= 0.3 && *at_s < 10.0, "{at_s}");
            assert!(what.contains("rights not restored"), "{what}");
            assert_eq!(replay, "osprim stress --duration 10s --seed 77");
            assert_eq!(r.clean_s, *at_s);
        }
        o => panic!("not caught: {o:?}"),
    }
    let restored = r.invariants.iter().find(|i| i.name.contains("restored")).expect("restored");
    assert!(restored.violated >= 1);
}

#[test]
fn a_run_leaves_nothing_behind() {
    let _s = serial();
    // A first run warms glibc's cache of thread stacks; the second must give everything back.
    let _ = run(0.5, 3, &small(), &|| false);
    let fds = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0);
    // A thread that is not the run's, started during the run and still alive after it: the
    // run counts only its own threads (`stress:…`), so it is not called left behind.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let wait = Mutex::new(Some(wait));
    let foreign = Mutex::new(None);
    let t0 = Instant::now();
    let start_foreign = || {
        if t0.elapsed() > Duration::from_millis(300)
            && let Some(wait) = wait.lock().unwrap().take()
        {
            let h = std::thread::Builder::new().name("not-the-runs".into()).spawn(move || wait.recv());
            *foreign.lock().unwrap() = Some(h.unwrap());
        }
        false
    };
    let before = (fds(), stress::mappings());
    let (r, _) = run(1.5, 4, &small(), &start_foreign);
    assert!(r.is_clean(), "{}", summary(&r));
    let after = (fds(), stress::mappings());
    assert_eq!(after.0, before.0, "descriptors");
    assert_eq!(platform::tasks::threads_named("stress:"), Vec::<String>::new(), "the run's threads");
    assert_eq!(platform::tasks::threads_named("not-the-runs").len(), 1);
    go.send(()).unwrap();
    foreign.into_inner().unwrap().expect("started during the run").join().unwrap().unwrap();
    // The C library may keep more finished threads' stacks and arenas, never more domains.
    let kept = stress::runtime_mappings(&small());
    assert!(after.1 <= before.1 + kept, "mappings {} then {} (the C library may keep {kept})", before.1, after.1);
    let left = r.invariants.iter().find(|i| i.name.starts_with("nothing is left")).expect("left");
    assert_eq!((left.checked, left.violated), (1, 0));
}

#[test]
fn an_interrupt_stops_the_run_within_a_tick() {
    let _s = serial();
    let t0 = Instant::now();
    let stop = move || t0.elapsed() > Duration::from_millis(700);
    let (r, _) = run(60.0, 5, &small(), &stop);
    match r.outcome {
        Outcome::Interrupted { at_s } => {
            assert!(at_s < 2.0, "{at_s}");
            // Clean until the stop, not through the clean-up after it.
            assert_eq!(r.clean_s, at_s);
        }
        o => panic!("{o:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
}

/// A long run with the default settings: `OSPRIM_STRESS_SECONDS=60 cargo test --release -p
/// osprim-stability --test stress -- --ignored --nocapture`.
#[test]
#[ignore]
fn stress_for_env_duration() {
    let _s = serial();
    let secs: f64 = std::env::var("OSPRIM_STRESS_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let seed: u64 = std::env::var("OSPRIM_STRESS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (r, _) = run(secs, seed, &Config::default(), &|| false);
    println!("{}", serde_json_like(&r));
    assert!(r.is_clean(), "{}", summary(&r));
}

/// The run's figures, one per line.
fn serde_json_like(r: &StabilityRun) -> String {
    let mut out = format!(
        "mode {} seed {} ran {:.1} s clean {:.1} s outcome {:?}\nsettings {:?}\nnotes {:?}\n",
        r.mode, r.seed, r.ran_s, r.clean_s, r.outcome, r.settings, r.notes
    );
    for t in r.operations.iter() {
        out += &format!("op {} {}\n", t.kind, t.count);
    }
    for t in r.results.iter() {
        out += &format!("result {} {}\n", t.kind, t.count);
    }
    for i in &r.invariants {
        out += &format!("invariant {} checked {} violated {}\n", i.name, i.checked, i.violated);
    }
    let slope = |f: &dyn Fn(&model::stability::TrendPoint) -> f64| osprim_stability::trend::slope_per_hour(&r.trend, f);
    out += &format!(
        "slopes per hour: rss {:?} B, fds {:?}, threads {:?}\n",
        slope(&|p| p.rss_bytes as f64),
        slope(&|p| p.fds as f64),
        slope(&|p| p.threads as f64)
    );
    let peak = r.trend.iter().map(|p| p.rss_bytes).max().unwrap_or(0);
    out += &format!("peak rss {} MiB over {} points\n", peak >> 20, r.trend.len());
    for p in r.trend.iter().step_by((r.trend.len() / 12).max(1)) {
        out += &format!(
            "  t={:.0}s rss={} MiB fds={} threads={} {:?}\n",
            p.at_s,
            p.rss_bytes >> 20,
            p.fds,
            p.threads,
            p.gauges
        );
    }
    out
}
