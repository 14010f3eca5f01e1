use super::*;
use model::stability::Outcome;

fn settings(secs: f64, seed: u64) -> Settings {
    Settings { duration: Duration::from_secs_f64(secs), seed }
}

fn run_opts(secs: f64, seed: u64, opts: &Options, stop_after: Option<Duration>) -> Report {
    let start = Instant::now();
    let stop = move || stop_after.is_some_and(|d| start.elapsed() >= d);
    let mut ticks = 0u32;
    let mut progress = |_: &Progress| ticks += 1;
    let mut hooks = Hooks { interrupted: &stop, progress: &mut progress };
    let r = run_with(&settings(secs, seed), &mut hooks, opts).expect("the error test runs");
    assert!(ticks >= 1, "progress was reported");
    r
}

fn count(t: &[Tally], pred: impl Fn(&str) -> bool) -> u64 {
    t.iter().filter(|x| pred(&x.kind)).map(|x| x.count).sum()
}

/// Nothing of the run is left: every child reaped, scratch and canary directories gone.
fn nothing_left(r: &Report) {
    assert!(r.left.is_empty(), "{:?}", r.left);
    for &p in &r.pids {
        assert!(sys::reap::is_gone(p), "child {p} left");
        assert!(!std::path::Path::new(&format!("/proc/{p}")).exists() || sys::reap::is_gone(p));
    }
}

#[test]
fn a_two_second_run_is_clean_in_both_halves_and_leaves_nothing() {
    let _s = sys::testing::serial();
    let r = run_opts(2.0, 7, &Options::default(), None);
    let run = &r.run;
    assert!(run.is_clean(), "{:?}\nnotes {:?}", run.outcome, run.notes);
    assert!(run.ran_s >= 2.0 && run.clean_s == run.ran_s);
    let domain_ops = count(&run.operations, |k| k.starts_with("domain."));
    let syscalls = count(&run.operations, |k| k.starts_with("syscall.") && k != "syscall.unlisted");
    let unlisted = count(&run.operations, |k| k == "syscall.unlisted");
    assert!(domain_ops > 1000, "{:?}", run.operations);
    assert!(syscalls > 1000 && unlisted > 100, "{:?}\nnotes {:?}", run.operations, run.notes);
    assert!(count(&run.results, |k| k.starts_with("domain: refused")) > 0, "{:?}", run.results);
    assert!(count(&run.results, |k| k == "ENOSYS") >= unlisted, "{:?}", run.results);
    assert!(count(&run.results, |k| k == "EFAULT") > 0, "{:?}", run.results);
    for i in &run.invariants {
        assert_eq!(i.violated, 0, "{i:?}");
        assert!(i.checked > 0, "{i:?} never checked");
    }
    assert!(!run.trend.is_empty() && run.trend.len() <= 1000);
    assert!(run.mode.contains("seccomp"), "{}", run.mode);
    assert!(!r.pids.is_empty(), "a child ran");
    nothing_left(&r);
}

#[test]
fn the_same_seed_gives_the_same_calls() {
    let calls = |seed: u64, chunk: u64| {
        let mut g = syscalls::Gen::new(seed, chunk);
        g.set_scratch(0x7f00_0000_0000, 1 << 20);
        (0..2000).map(|_| g.next_call()).collect::<Vec<_>>()
    };
    assert_eq!(calls(5, 0), calls(5, 0));
    assert_ne!(calls(5, 0), calls(6, 0));
    assert_ne!(calls(5, 0), calls(5, 1));
    let _s = sys::testing::serial();
    let how = domain::Rights::here()[0];
    let trace = |seed: u64| {
        let mut o = orb::Orb::new(how, None, 3000);
        let mut rng = Rng::new(seed);
        let mut t = Tallies::default();
        for _ in 0..3000 {
            o.step(&mut rng, &mut t).expect("a clean step");
        }
        o.trace
    };
    assert_eq!(trace(11), trace(11));
    assert_ne!(trace(11), trace(12));
}

#[test]
fn a_stale_reference_the_library_accepts_fails_the_run_with_its_replay() {
    let _s = sys::testing::serial();
    let opts = Options { orb_fault: Some(orb::Fault::StaleAccepted), ..Options::default() };
    let r = run_opts(5.0, 3, &opts, None);
    match &r.run.outcome {
        Outcome::Failed { what, replay, .. } => {
            assert!(what.contains("stale"), "{what}");
            assert_eq!(replay, "osprim errortest --duration 5s --seed 3");
        }
        o => panic!("not caught: {o:?}"),
    }
    let inv = r.run.invariants.iter().find(|i| i.name == orb::INV_REFUSED).unwrap();
    assert_eq!(inv.violated, 1, "{:?}", r.run.invariants);
    nothing_left(&r);
}

#[test]
fn a_call_the_filter_lets_through_fails_the_run() {
    let _s = sys::testing::serial();
    assert!(sys::sandbox::allowed(libc::SYS_getsid).is_none());
    let child = syscalls::ChildFaults { leak: vec![libc::SYS_getsid], ..Default::default() };
    let opts = Options { child, ..Options::default() };
    let r = run_opts(5.0, 4, &opts, None);
    match &r.run.outcome {
        Outcome::Failed { what, replay, .. } => {
            assert!(what.contains("escaped") && what.contains(&format!("system call {}", libc::SYS_getsid)), "{what}");
            assert!(replay.ends_with("--seed 4"), "{replay}");
        }
        o => panic!("not caught: {o:?}"),
    }
    let inv = r.run.invariants.iter().find(|i| i.name == syscalls::INV_ESCAPE).unwrap();
    assert_eq!(inv.violated, 1, "{:?}", r.run.invariants);
    nothing_left(&r);
}

#[test]
fn a_hung_child_is_killed_counted_and_replaced() {
    let _s = sys::testing::serial();
    // Without the alarm, the first pause (or sleep, or wait) blocks for good.
    let child = syscalls::ChildFaults { alarm: Some(Duration::from_secs(3600)), ..Default::default() };
    let r = run_opts(syscalls::HANG.as_secs_f64() + 2.5, 5, &Options { child, ..Options::default() }, None);
    assert!(r.run.is_clean(), "{:?}", r.run.outcome);
    assert!(count(&r.run.results, |k| k == "syscall: hang (killed)") >= 1, "{:?}", r.run.results);
    assert!(r.pids.len() >= 2, "replaced: {:?}", r.pids);
    assert!(r.run.notes.iter().any(|n| n.starts_with("hang: child 0")), "{:?}", r.run.notes);
    nothing_left(&r);
}

#[test]
fn a_crashed_child_is_counted_by_signal_and_replaced() {
    let _s = sys::testing::serial();
    let child = syscalls::ChildFaults { abort_after: Some(50), ..Default::default() };
    let r = run_opts(1.5, 6, &Options { child, ..Options::default() }, None);
    assert!(r.run.is_clean(), "{:?}", r.run.outcome);
    let died = count(&r.run.results, |k| k.starts_with("syscall: child died (SIG"));
    assert!(died >= 2 && r.pids.len() as u64 >= died, "{died} {:?} {:?}", r.run.results, r.pids);
    nothing_left(&r);
}

#[test]
fn an_interrupted_run_stops_soon_and_leaves_nothing() {
    let _s = sys::testing::serial();
    let r = run_opts(30.0, 9, &Options::default(), Some(Duration::from_millis(500)));
    match r.run.outcome {
        Outcome::Interrupted { at_s } => {
            assert!((0.5..5.0).contains(&at_s), "{at_s}");
            assert_eq!(r.run.clean_s, at_s, "clean until the stop");
        }
        ref o => panic!("{o:?}"),
    }
    assert!(r.run.ran_s < 5.0);
    nothing_left(&r);
}

/// The measurement: `OSPRIM_ERRORTEST_SECONDS=60 cargo test --release -p osprim-stability
/// errortest_measure -- --ignored --nocapture`.
#[test]
#[ignore]
fn errortest_measure() {
    let _s = sys::testing::serial();
    let secs: f64 = std::env::var("OSPRIM_ERRORTEST_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let r = run_opts(secs, 2026, &Options::default(), None);
    println!("{}", serde_json_like(&r.run));
    assert!(r.run.is_clean(), "{:?}", r.run.outcome);
    nothing_left(&r);
}

/// A readable summary (the model's JSON is the CLI's business).
fn serde_json_like(run: &StabilityRun) -> String {
    let mut s = format!("mode {}\nran {:.1} s, clean {:.1} s, {:?}\n", run.mode, run.ran_s, run.clean_s, run.outcome);
    s += &format!("operations {}\n", run.total_operations());
    for t in &run.operations {
        s += &format!("  op {:<40} {}\n", t.kind, t.count);
    }
    for t in &run.results {
        s += &format!("  result {:<60} {}\n", t.kind, t.count);
    }
    for i in &run.invariants {
        s += &format!("  invariant {} checked {} violated {}\n", i.name, i.checked, i.violated);
    }
    for p in run.trend.iter().step_by((run.trend.len() / 12).max(1)) {
        s += &format!(
            "  trend {:.0}s rss {} fds {} threads {} {:?}\n",
            p.at_s,
            p.rss_bytes,
            p.fds,
            p.threads,
            p.gauges.iter().map(|g| (&g.kind, g.count)).collect::<Vec<_>>()
        );
    }
    for n in &run.notes {
        s += &format!("  note {n}\n");
    }
    s += &format!("settings {:?}\n", run.settings);
    s
}
