//! The seed suite's short stability tests: after its rounds, the bare `osprim` runs Go!'s
//! stress test and error test (crate `stability`, as `osprim stress` and `osprim errortest`
//! run them) for a few seconds each, so that Go!'s stability rows have a figure: how long each
//! ran without a failure, every check of the test's own made. Each is kept in the result file
//! marked `short`; in the seed view a longer run of `osprim stress` or `osprim errortest` from
//! the history replaces it (`stability_cmd::with_history`).
//!
//! They run after the rounds (the stress test's threads and 1 kHz timer would disturb the
//! measuring), on every allowed CPU as a stability run does, not on the measuring CPU alone. A
//! Ctrl-C ends the test under way, which is kept as interrupted (clean until then), and the
//! next one is not started.

use crate::progress::Observer;
use model::stability::{StabilityRun, StabilityTest};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Each short test's length in the seed suite, s.
pub const SECONDS: f64 = 3.0;

/// Each short test's length with `--quick`, s.
pub const QUICK_SECONDS: f64 = 1.0;

/// The short tests, in the order they run.
pub const TESTS: [StabilityTest; 2] = [StabilityTest::Stress, StabilityTest::ErrorTest];

/// Each short test's length: [`QUICK_SECONDS`] with `--quick`, else [`SECONDS`].
pub fn each(quick: bool) -> Duration {
    Duration::from_secs_f64(if quick { QUICK_SECONDS } else { SECONDS })
}

/// The test's name for people: "stress test", "error test".
fn label(test: StabilityTest) -> &'static str {
    match test {
        StabilityTest::Stress => "stress test",
        StabilityTest::ErrorTest => "error test",
    }
}

/// Runs each of [`TESTS`] for `each` on `cpus` (all of them when empty), telling `observer`,
/// until `stop` is set. A test that cannot run here is left out, with the reason told.
pub fn run(each: Duration, cpus: &[usize], stop: &AtomicBool, observer: &mut dyn Observer) -> Vec<StabilityRun> {
    let mut runs = Vec::new();
    for test in TESTS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let seed = stability::new_seed(std::time::SystemTime::now());
        let settings = stability::Settings { duration: each, seed };
        observer.stability_begin(&format!(
            "short {}: {} s ({})",
            label(test),
            model::unit::short_number(each.as_secs_f64()),
            stability::replay_command(test, &settings)
        ));
        match run_one(test, &settings, cpus, stop) {
            Ok(mut r) => {
                r.short = true;
                observer.stability_end(&format!("short {}: {}", label(test), outcome_line(&r)));
                runs.push(r);
            }
            Err(e) => observer.stability_end(&format!("short {}: cannot run here: {e:#}", label(test))),
        }
    }
    runs
}

/// One test, on a thread of its own placed on `cpus` (the caller's stays pinned to the
/// measuring CPU), its threads started from there.
fn run_one(
    test: StabilityTest,
    settings: &stability::Settings,
    cpus: &[usize],
    stop: &AtomicBool,
) -> anyhow::Result<StabilityRun> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().name(format!("osprim-{}", test.name())).spawn_scoped(scope, || {
            if !cpus.is_empty() {
                // Where it cannot be placed, it runs where the caller does.
                let _ = sys::cpu::set_affinity(cpus);
            }
            let interrupted = || stop.load(Ordering::Relaxed);
            let mut progress = |_: &stability::Progress| {};
            let mut hooks = stability::Hooks { interrupted: &interrupted, progress: &mut progress };
            stability::run(test, settings, &mut hooks)
        });
        match thread {
            Ok(t) => t.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the {} panicked", label(test)))),
            Err(e) => Err(anyhow::anyhow!("cannot start the {}: {e}", label(test))),
        }
    })
    .map_err(|e| e.context(format!("the short {} could not run", label(test))))
}

/// One line on how a short test ended: "clean: 3.0 s without a failure".
fn outcome_line(r: &StabilityRun) -> String {
    use model::stability::Outcome;
    let d = |s: f64| model::Unit::Ns.format(s * 1e9);
    match &r.outcome {
        Outcome::Clean => format!("clean: {} without a failure", d(r.clean_s)),
        Outcome::Interrupted { at_s } => format!("interrupted after {}, clean until then", d(*at_s)),
        Outcome::Failed { at_s, what, replay } => format!("FAILED after {}: {what} (replay: {replay})", d(*at_s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::stability::Outcome;
    use store::history::{History, Location};

    fn stability_run(test: StabilityTest, clean_s: f64, short: bool) -> StabilityRun {
        StabilityRun {
            test,
            seed: 5,
            mode: "mprotect".into(),
            settings: Vec::new(),
            requested_s: clean_s,
            ran_s: clean_s,
            clean_s,
            outcome: Outcome::Clean,
            operations: Vec::new(),
            results: Vec::new(),
            invariants: Vec::new(),
            trend: Vec::new(),
            notes: Vec::new(),
            short,
        }
    }

    /// A bare run's result with its two short tests, as the seed view reads it once `osprim`
    /// (or `osprim papers`) has lent it the history at `loc`.
    fn seed_rows(loc: &Location) -> Vec<report::seeds::SeedRow> {
        let mut bare = model::fixtures::run_file(false);
        bare.started_utc = "2026-12-07T10:00:00Z".into();
        bare.stability = TESTS.iter().map(|&t| stability_run(t, 3.0, true)).collect();
        let lent = crate::stability_cmd::with_history(bare, loc);
        report::seeds::rows(&lent).into_iter().filter(|r| r.table == "Stability").collect()
    }

    fn row<'a>(rows: &'a [report::seeds::SeedRow], test: &str) -> &'a report::seeds::SeedRow {
        rows.iter().find(|r| r.today_id.as_deref() == Some(&format!("stability.{test}"))).expect("the stability row")
    }

    /// An earlier `osprim stress` of an hour in the history replaces the bare run's short stress
    /// test in the seed view, saying where it comes from; the error test, with nothing longer
    /// recorded, keeps the short test; a shorter recorded run lends nothing.
    #[test]
    fn a_longer_run_in_the_history_replaces_the_short_test() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::Sqlite(dir.path().join("history.db"));
        let alone = seed_rows(&loc);
        assert!(!dir.path().join("history.db").exists(), "reading no history makes none");
        for test in ["stress", "errortest"] {
            let r = row(&alone, test);
            assert_eq!(r.today_mean, Some(3e9), "{r:?}");
            assert!(r.caveat.as_deref().unwrap().starts_with("this run's short test (the seed suite's): 3.000 s"));
        }

        let record = |run: StabilityRun, started: &str, file: &str| {
            let mut earlier = model::fixtures::run_file(false);
            earlier.results.clear();
            earlier.started_utc = started.into();
            earlier.stability = vec![run];
            let mut h = History::open(&loc).unwrap();
            assert!(h.record(&earlier, Some(std::path::Path::new(file))).unwrap());
        };
        let stands = |why: &str| {
            let rows = seed_rows(&loc);
            let stress = row(&rows, "stress");
            assert_eq!(stress.today_mean, Some(3e9), "{why}: {stress:?}");
            assert!(stress.caveat.as_deref().unwrap().starts_with("this run's short test"), "{why}: {stress:?}");
        };
        record(stability_run(StabilityTest::Stress, 2.0, false), "2026-11-29T10:00:00Z", "stability/two.json");
        stands("a shorter run lends nothing");
        // An earlier bare run's short test of the same length, a few milliseconds longer.
        let mut earlier_short = stability_run(StabilityTest::Stress, 3.004, true);
        earlier_short.requested_s = 3.0;
        record(earlier_short, "2026-11-30T10:00:00Z", "osprim-results/earlier.json");
        stands("an earlier short test of the same length does not replace this run's own");

        let hour = stability_run(StabilityTest::Stress, 3600.0, false);
        record(hour, "2026-12-01T10:00:00Z", "osprim-results/stability/hour.json");
        let rows = seed_rows(&loc);
        let stress = row(&rows, "stress");
        assert_eq!(stress.today_mean, Some(3600e9));
        assert!(
            stress.caveat.as_deref().unwrap().starts_with(
                "the longest in this machine's history (`osprim stress`, recorded 2026-12-01T10:00:00Z, \
                 osprim-results/stability/hour.json): 1 h without a failure, against the paper's 4 days"
            ),
            "{stress:?}"
        );
        let error = row(&rows, "errortest");
        assert_eq!(error.today_mean, Some(3e9), "no longer error test is recorded: {error:?}");
    }
}
