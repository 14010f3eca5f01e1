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
pub fn label(test: StabilityTest) -> &'static str {
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
        let seed = crate::stability_cmd::new_seed(std::time::SystemTime::now());
        let settings = stability::Settings { duration: each, seed };
        observer.stability_begin(test, each.as_secs_f64(), &stability::replay_command(test, &settings));
        match run_one(test, &settings, cpus, stop) {
            Ok(mut r) => {
                r.short = true;
                observer.stability_end(test, Ok(&r));
                runs.push(r);
            }
            Err(e) => observer.stability_end(test, Err(&format!("{e:#}"))),
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
pub fn outcome_line(r: &StabilityRun) -> String {
    use model::stability::Outcome;
    let d = |s: f64| model::Unit::Ns.format(s * 1e9);
    match &r.outcome {
        Outcome::Clean => format!("clean: {} without a failure", d(r.clean_s)),
        Outcome::Interrupted { at_s } => format!("interrupted after {}, clean until then", d(*at_s)),
        Outcome::Failed { at_s, what, replay } => format!("FAILED after {}: {what} (replay: {replay})", d(*at_s)),
    }
}
