//! Comparisons of hand-made runs whose samples are known: a run against itself, and a run
//! whose results were made faster, slower or left alone.

use super::*;
use crate::report::tests::run_file;
use crate::stats::rng::Rng;

/// `run` with every measured row given 300 samples in 3 rounds around `level(row) × median`.
fn with_samples(mut run: RunFile, seed: u64, level: impl Fn(&Row) -> f64) -> RunFile {
    let mut rng = Rng::new(seed);
    for r in run.results.iter_mut() {
        let Some(m) = r.median() else { continue };
        if r.derived.is_some() {
            continue;
        }
        let at = m * level(r);
        r.samples = (0..300).map(|_| at * (1.0 + 0.01 * (rng.next_f64() - 0.5))).collect();
        r.samples_per_round = vec![100; 3];
    }
    run
}

fn measured_ids(run: &RunFile) -> Vec<(String, Params)> {
    run.results
        .iter()
        .filter(|r| r.summary.is_some() && r.derived.is_none())
        .map(|r| (r.id.clone(), r.params.clone()))
        .collect()
}

#[test]
fn a_run_against_itself_is_no_change_everywhere() {
    let run = with_samples(run_file(false), 1, |_| 1.0);
    let c = compare(&run, &run, DEFAULT_NOISE, 7);
    assert_eq!(c.compared.len(), measured_ids(&run).len());
    assert!(!c.compared.is_empty());
    for r in &c.compared {
        assert_eq!(r.verdict, Verdict::NoChange, "{r:?}");
        assert_eq!(r.ratio, 1.0);
        assert!(r.ratio_ci95[0] <= 1.0 && r.ratio_ci95[1] >= 1.0, "{r:?}");
    }
    assert!(c.differences.is_empty(), "{:?}", c.differences);
    assert!(c.regressions(0.0).is_empty());
}

#[test]
fn faster_slower_and_unchanged_results_are_told_apart() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let ids = measured_ids(&base);
    assert!(ids.len() >= 3, "{ids:?}");
    let (fast, slow) = (ids[0].clone(), ids[1].clone());
    let new = with_samples(run_file(false), 2, |r| {
        let k = (r.id.clone(), r.params.clone());
        if k == fast {
            0.8
        } else if k == slow {
            1.25
        } else {
            1.0
        }
    });
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let verdict =
        |k: &(String, Params)| c.compared.iter().find(|r| (r.id.clone(), r.params.clone()) == *k).unwrap().verdict;
    assert_eq!(verdict(&fast), Verdict::Faster);
    assert_eq!(verdict(&slow), Verdict::Slower);
    for k in &ids[2..] {
        assert_eq!(verdict(k), Verdict::NoChange, "{k:?}");
    }
    assert_eq!(c.regressions(0.10).len(), 1);
    assert!(c.regressions(0.30).is_empty(), "a 25 % slowdown is not beyond 30 %");
}

#[test]
fn a_small_real_difference_within_the_noise_threshold_is_no_change() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let new = with_samples(run_file(false), 2, |_| 1.01);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(c.compared.iter().all(|r| r.verdict == Verdict::NoChange));
    assert!(c.compared.iter().any(|r| r.significant), "1 % on 0.3 % noise is detectable");
    let strict = compare(&base, &new, 0.005, 7);
    assert!(strict.compared.iter().all(|r| r.verdict == Verdict::Slower));
}

#[test]
fn machines_that_differ_are_listed_and_volatile_readings_are_not() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    new.machine.kernel.release = "6.19.0".into();
    new.machine.frequency.governor = "performance".into();
    new.machine.scheduling.load_avg_start = Some([3.0, 2.0, 1.0]);
    new.osprim.version = "0.2.0".into();
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let what: Vec<&str> = c.differences.iter().map(|d| d.what.as_str()).collect();
    assert_eq!(what, ["osprim.version", "machine.frequency.governor", "machine.kernel.release"]);
}

#[test]
fn results_in_one_run_only_or_without_samples_are_said_so() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    let gone = new.results.remove(0);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(c.unmatched.iter().any(|u| u.id == gone.id && u.why == "only in the base run"));
    // Skipped, failed and derived rows are listed with their reason, never compared.
    for u in &c.unmatched {
        assert!(!u.why.is_empty());
    }
    assert!(c.compared.iter().all(|r| r.id != gone.id || r.params != gone.params));
}
