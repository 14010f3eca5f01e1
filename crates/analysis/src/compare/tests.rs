//! Comparisons of hand-made runs whose samples are known: a run against itself, and a run
//! whose results were made faster, slower, noisier or left alone; a difference below
//! resolution; seed rows; mismatched runs; marked rows and the gate.

use super::fixtures::{below_resolution_pair, spread_samples, with_samples};
use super::*;
use model::fixtures::run_file;
use model::{Estimate, Status};
use stats::rng::Rng;

fn measured_ids(run: &RunFile) -> Vec<(String, Params)> {
    run.results
        .iter()
        .filter(|r| r.summary.is_some() && r.derived.is_none())
        .map(|r| (r.id.clone(), r.params.clone()))
        .collect()
}

fn find<'c>(c: &'c Comparison, id: &str) -> &'c Compared {
    c.compared.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("{id} compared: {:?}", c.unmatched))
}

#[test]
fn a_run_against_itself_is_no_change_everywhere() {
    let run = with_samples(run_file(false), 1, |_| 1.0);
    let c = compare(&run, &run, DEFAULT_NOISE, 7);
    let ids = measured_ids(&run);
    assert!(!ids.is_empty());
    for (id, params) in &ids {
        let r = c.compared.iter().find(|r| r.id == *id && defining(&r.params) == defining(params)).unwrap();
        assert_eq!(r.verdict, Verdict::NoChange, "{r:?}");
        assert_eq!(r.ratio, Some(1.0));
        let [lo, hi] = r.ratio_ci95.unwrap();
        assert!(lo <= 1.0 && hi >= 1.0, "{r:?}");
    }
    assert!(c.differences.is_empty(), "{:?}", c.differences);
    let gate =
        Gate { regression: 0.0, inconclusive_fails: false, untrustworthy: Untrustworthy::Judge, undecided_share: 0.0 };
    assert!(c.gate(&gate).failed.is_empty());
}

#[test]
fn faster_slower_no_change_and_inconclusive_are_told_apart() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let ids = measured_ids(&base);
    assert!(ids.len() >= 4, "{ids:?}");
    let (fast, slow, wide) = (ids[0].clone(), ids[1].clone(), ids[2].clone());
    let key = |r: &Row| (r.id.clone(), r.params.clone());
    // The `wide` row's rounds sit at −15 %, 0 and +15 %: its level is uncertain.
    let new = spread_samples(run_file(false), 2, |r| {
        let k = key(r);
        if k == fast {
            (0.8, 0.0)
        } else if k == slow {
            (1.25, 0.0)
        } else if k == wide {
            (1.0, 0.15)
        } else {
            (1.0, 0.0)
        }
    });
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let verdict = |k: &(String, Params)| c.compared.iter().find(|r| key_of(r) == *k).unwrap().verdict;
    fn key_of(r: &Compared) -> (String, Params) {
        (r.id.clone(), r.params.clone())
    }
    assert_eq!(verdict(&fast), Verdict::Faster);
    assert_eq!(verdict(&slow), Verdict::Slower);
    assert_eq!(verdict(&wide), Verdict::Inconclusive);
    for k in &ids[3..] {
        assert_eq!(verdict(k), Verdict::NoChange, "{k:?}");
    }
    let judge = |pct| Gate {
        regression: pct,
        inconclusive_fails: false,
        untrustworthy: Untrustworthy::Judge,
        undecided_share: 0.0,
    };
    let regressed = |g: &Gate| c.gate(g).failed.iter().map(|(r, _)| key_of(r)).collect::<Vec<_>>();
    assert_eq!(regressed(&judge(0.10)), std::slice::from_ref(&slow));
    assert!(regressed(&judge(0.30)).is_empty(), "a 25 % slowdown is not beyond 30 %");
    // Inconclusive rows pass the gate, unless asked; then the one whose CI reaches beyond fails.
    let strict = Gate { inconclusive_fails: true, ..judge(0.10) };
    let failed = c.gate(&strict).failed;
    assert!(failed.iter().any(|(r, f)| key_of(r) == wide && *f == Failure::Inconclusive), "{failed:?}");
}

#[test]
fn a_small_real_difference_within_the_noise_threshold_is_no_change() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let new = with_samples(run_file(false), 2, |_| 1.01);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let measured: Vec<&Compared> = c.compared.iter().filter(|r| r.id != "ctx.address_space").collect();
    assert!(measured.iter().all(|r| r.verdict == Verdict::NoChange), "{measured:?}");
    assert!(measured.iter().all(|r| r.ratio_ci95.unwrap()[0] > 1.0), "1 % on 0.3 % noise is detectable");
    let strict = compare(&base, &new, 0.005, 7);
    assert!(strict.compared.iter().filter(|r| r.id != "ctx.address_space").all(|r| r.verdict == Verdict::Slower));
}

/// A row whose rounds start with a transient that the summary's MSER cut dropped: the figures
/// compare prints are the summary's medians (of the steady state), and the ratio is theirs.
#[test]
fn the_ratio_is_the_ratio_of_the_printed_medians_of_the_steady_state() {
    let make = |level: f64, seed: u64| {
        let mut run = run_file(false);
        run.results.retain(|r| r.id == "syscall.getpid");
        let mut rng = Rng::new(seed);
        let rounds: Vec<Vec<f64>> = (0..3)
            .map(|_| {
                (0..200)
                    .map(|k| {
                        let transient = if k < 40 { 1.6 } else { 1.0 };
                        100.0 * level * transient * (1.0 + 0.02 * (rng.next_f64() - 0.5))
                    })
                    .collect()
            })
            .collect();
        let slices: Vec<&[f64]> = rounds.iter().map(Vec::as_slice).collect();
        let s = stats::summarize_rounds(&slices, None, 200, 1, 0.4).unwrap();
        let st = s.structure.as_ref().unwrap();
        assert!(st.dropped >= 100, "MSER cuts the transient: {}", st.dropped);
        let r = &mut run.results[0];
        r.samples = rounds.concat();
        r.samples_per_round = vec![200; 3];
        let summary = r.summary.as_mut().unwrap();
        summary.median = s.median_ns;
        summary.median_ci95 = s.median_ci95_ns;
        let record = summary.structure.as_mut().unwrap();
        record.rounds = st
            .rounds
            .iter()
            .map(|x| model::RoundSummary {
                n: x.n,
                dropped: x.dropped,
                median: x.median_ns,
                median_ci95: x.median_ci95_ns,
                block_length: x.block_length,
            })
            .collect();
        run
    };
    let (base, new) = (make(1.0, 3), make(1.3, 4));
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let r = find(&c, "syscall.getpid");
    assert_eq!(r.base_value, base.results[0].median().unwrap());
    assert_eq!(r.new_value, new.results[0].median().unwrap());
    assert_eq!(r.ratio, Some(r.new_value / r.base_value));
    let [lo, hi] = r.ratio_ci95.unwrap();
    assert!(lo < r.ratio.unwrap() && r.ratio.unwrap() < hi, "{r:?}");
    // Pooling the transient in would have moved the median: the printed one is the steady state's.
    let mut all = base.results[0].samples.clone();
    assert_ne!(stats::median_in_place(&mut all), r.base_value);
    assert_eq!(r.verdict, Verdict::Slower);
}

#[test]
fn a_difference_whose_interval_includes_zero_is_below_resolution_with_no_ratio() {
    let (base, new) = below_resolution_pair();
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let r = find(&c, "ctx.address_space");
    assert_eq!(r.verdict, Verdict::BelowResolution);
    assert_eq!(r.no_ratio, Some(NoRatio::BelowResolution));
    assert_eq!((r.ratio, r.ratio_ci95), (None, None));
    assert_eq!(r.below_resolution, Some(20.0));
    // Both sides above 0: a ratio from the two intervals, wide as they are.
    let c = compare(&base, &base, DEFAULT_NOISE, 7);
    let r = find(&c, "ctx.address_space");
    assert!(r.ratio.is_some() && r.below_resolution.is_none(), "{r:?}");
    assert_eq!(r.verdict, Verdict::Inconclusive, "250–350 against itself cannot say within 2 %");
}

#[test]
fn a_negative_difference_gives_no_ratio() {
    let (base, mut new) = below_resolution_pair();
    let d = new.results.iter_mut().find(|r| r.id == "ctx.address_space").unwrap();
    d.derived.as_mut().unwrap().estimate = Estimate { point: -30.0, ci95: [-40.0, -20.0] };
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(c.compared.iter().all(|r| r.id != "ctx.address_space"));
    let u = c.unmatched.iter().find(|u| u.id == "ctx.address_space").unwrap();
    assert_eq!(u.why, "a negative figure in the new run (-30.00 ns): no ratio");
}

#[test]
fn a_measured_row_at_zero_is_below_resolution_no_finer_than_the_clock() {
    let mut base = with_samples(run_file(false), 1, |_| 1.0);
    let r = base.results.iter_mut().find(|r| r.id == "syscall.getpid").unwrap();
    r.samples = vec![0.0; 300];
    let s = r.summary.as_mut().unwrap();
    s.median = 0.0;
    s.median_ci95 = [0.0, 0.0];
    let c = compare(&base, &base, DEFAULT_NOISE, 7);
    let r = find(&c, "syscall.getpid");
    assert_eq!(r.verdict, Verdict::BelowResolution);
    assert_eq!(r.below_resolution, Some(base.timer.resolution_ns));
    assert!(r.ratio.is_none());
}

#[test]
fn seed_rows_are_never_called_faster_or_slower() {
    let seeded = |mut run: RunFile| {
        run.config.method = Method::Seed;
        for r in run.results.iter_mut() {
            r.method = Method::Seed;
        }
        run
    };
    let base = seeded(with_samples(run_file(false), 1, |_| 1.0));
    let new = seeded(with_samples(run_file(false), 2, |_| 1.5));
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(!c.compared.is_empty());
    for r in &c.compared {
        assert_eq!(r.verdict, Verdict::Inconclusive, "{r:?}");
        assert_eq!(r.no_ratio, Some(NoRatio::SeedMethod));
        assert_eq!(r.statistic, Statistic::Mean);
        assert!(r.ratio.is_none() && r.ratio_ci95.is_none());
    }
    let g =
        Gate { regression: 0.1, inconclusive_fails: false, untrustworthy: Untrustworthy::Judge, undecided_share: 0.0 };
    assert!(c.gate(&g).failed.is_empty());
    assert_eq!(c.gate(&Gate { inconclusive_fails: true, ..g }).failed.len(), c.compared.len());
}

#[test]
fn a_zero_width_interval_of_times_gives_no_ratio_and_exact_sizes_compare_exactly() {
    // `spread` widens each row's own interval by that fraction either side.
    let with_spread = |id: &str, a: f64, b: f64, spread: f64| {
        let mut base = with_samples(run_file(false), 1, |_| 1.0);
        let mut new = base.clone();
        for (run, v) in [(&mut base, a), (&mut new, b)] {
            let r = run.results.iter_mut().find(|r| r.id == id).unwrap();
            r.samples = vec![v; 300];
            r.summary.as_mut().unwrap().median = v;
            r.summary.as_mut().unwrap().median_ci95 = [v * (1.0 - spread), v * (1.0 + spread)];
        }
        find(&compare(&base, &new, DEFAULT_NOISE, 7), id).clone()
    };
    let zero_width = |id: &str, a: f64, b: f64| with_spread(id, a, b, 0.0);
    // Samples on one clock tick, but rows whose own intervals are wider: those speak, by
    // their ends (at least 120·0.99 / 100·1.01 … 120·1.01 / 100·0.99; wider, as the
    // comparison's intervals hold together over all its rows).
    let r = with_spread("syscall.getpid", 100.0, 120.0, 0.01);
    assert_eq!((r.verdict, r.no_ratio, r.ratio), (Verdict::Slower, None, Some(1.2)));
    let [lo, hi] = r.ratio_ci95.unwrap();
    assert!(lo < 1.2 * 0.99 / 1.01 && hi > 1.2 * 1.01 / 0.99 && lo > 1.1 && hi < 1.3, "{lo} {hi}");
    let r = with_spread("syscall.getpid", 100.0, 101.0, 0.05);
    assert_eq!((r.verdict, r.ratio), (Verdict::Inconclusive, Some(1.01)));
    // Two rows whose own intervals are very wide: not selected, read at 95 % by their ends,
    // inconclusive.
    let r = with_spread("syscall.getpid", 100.0, 101.0, 0.9);
    assert_eq!((r.verdict, r.no_ratio, r.ratio, r.selected), (Verdict::Inconclusive, None, Some(1.01), false));
    assert_eq!(r.ci_level, Some(0.95));
    // A time: its zero width says nothing of how a run varies.
    let r = zero_width("syscall.getpid", 100.0, 120.0);
    assert_eq!((r.verdict, r.no_ratio, r.ratio), (Verdict::Inconclusive, Some(NoRatio::ZeroWidth), None));
    assert_eq!((r.base_value, r.new_value), (100.0, 120.0));
    // Bytes that every sample of both runs gave exactly: the same is no change, another a
    // change of exactly that ratio.
    let r = zero_width("space.eventfd", 440.0, 440.0);
    assert_eq!((r.verdict, r.no_ratio, r.ratio), (Verdict::NoChange, None, Some(1.0)));
    let r = zero_width("space.eventfd", 440.0, 480.0);
    assert_eq!((r.verdict, r.ratio, r.ratio_ci95), (Verdict::Slower, Some(480.0 / 440.0), Some([480.0 / 440.0; 2])));
}

#[test]
fn a_method_mismatch_is_named_and_refused_and_listed() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    assert_eq!(mismatch(&base, &new), None);
    new.config.method = Method::Seed;
    let why = mismatch(&base, &new).expect("seed against adaptive");
    assert!(why.contains("different methods (base: adaptive, new: seed)"), "{why}");
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(c.differences.iter().any(|d| d.what == "config.method" && d.base == "adaptive" && d.new == "seed"));
}

#[test]
fn cold_against_warm_is_refused_and_paired_only_when_allowed() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut cold = base.clone();
    let mut warm = base.clone();
    for (run, cache) in [(&mut cold, "cold"), (&mut warm, "warm")] {
        let r = run.results.iter_mut().find(|r| r.id == "syscall.getpid").unwrap();
        r.params.insert("cache".into(), cache.into());
        if cache == "cold" {
            r.params.insert("device".into(), "/dev/vda".into());
        }
    }
    let why = mismatch(&cold, &warm).expect("cold against warm");
    assert!(why.contains("syscall.getpid (cache cold in the base run, warm in the new)"), "{why}");
    assert_eq!(mismatch(&cold, &cold), None);
    let refused = compare(&cold, &warm, DEFAULT_NOISE, 7);
    assert!(refused.compared.iter().all(|r| r.id != "syscall.getpid"));
    let allowed =
        compare_with(&cold, &warm, &Settings { noise: DEFAULT_NOISE, resamples: 300, seed: 7, allow_mismatch: true });
    let r = find(&allowed, "syscall.getpid");
    let what: Vec<&str> = r.param_differences.iter().map(|d| d.what.as_str()).collect();
    assert_eq!(what, ["cache", "device"]);
    assert!(allowed.unmatched.iter().all(|u| u.id != "syscall.getpid"), "{:?}", allowed.unmatched);
}

#[test]
fn settings_placement_build_and_machine_are_listed_and_volatile_readings_are_not() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    new.machine.kernel.release = "6.19.0".into();
    new.machine.frequency.governor = "performance".into();
    new.machine.scheduling.load_avg_start = Some([3.0, 2.0, 1.0]);
    new.osprim.version = "0.2.0".into();
    new.config.budget_s = 5.0;
    new.config.rounds = 10;
    new.config.ci_target_rel = 0.005;
    new.placement.cpu = 0;
    new.placement.cpu_pair = Some([1, 0]);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let what: Vec<&str> = c.differences.iter().map(|d| d.what.as_str()).collect();
    assert_eq!(
        what,
        [
            "config.budget_s",
            "config.ci_target_rel",
            "config.rounds",
            "placement.cpu",
            "placement.cpu_pair",
            "osprim.version",
            "machine.frequency.governor",
            "machine.kernel.release"
        ]
    );
}

#[test]
fn a_result_that_ran_on_other_cpus_is_compared_and_says_so() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    let r = new.results.iter_mut().find(|r| r.id == "ctx.thread").unwrap();
    r.params.insert("cpus".into(), serde_json::json!([1, 0]));
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let r = find(&c, "ctx.thread");
    assert_eq!(r.param_differences, [Difference { what: "cpus".into(), base: "—".into(), new: "1,0".into() }]);
    assert_eq!(r.params.get("cpus"), Some(&serde_json::json!([1, 0])), "the new run's placement is kept");
}

#[test]
fn failed_checks_and_busy_cpus_are_marked_and_the_gate_treats_them_as_told() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = with_samples(run_file(false), 2, |r| if r.id == "syscall.getpid" { 1.5 } else { 1.0 });
    let r = new.results.iter_mut().find(|r| r.id == "syscall.getpid").unwrap();
    r.flags.push(Flag::BusyCpu);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let getpid = find(&c, "syscall.getpid");
    assert_eq!(getpid.marks, [Mark { flag: Flag::BusyCpu, side: Side::New }]);
    assert_eq!(getpid.verdict, Verdict::Slower);
    // ctx.process failed its check in the fixture, in both runs.
    let process = find(&c, "ctx.process");
    assert_eq!(process.marks, [Mark { flag: Flag::CheckFailed, side: Side::Both }]);
    assert_eq!(process.verdict, Verdict::NoChange);

    let gate = |untrustworthy| Gate { regression: 0.1, inconclusive_fails: false, untrustworthy, undecided_share: 0.0 };
    let skip = c.gate(&gate(Untrustworthy::Skip));
    assert!(skip.failed.is_empty(), "the slowed row is busy: not gated");
    let skipped: Vec<&str> =
        skip.undecided.iter().filter(|(_, u)| *u == Undecided::Untrustworthy).map(|(r, _)| r.id.as_str()).collect();
    assert!(skipped.contains(&"syscall.getpid") && skipped.contains(&"ctx.process"), "{skipped:?}");
    // Skipped rows are not passed silently: the gate is undecided.
    assert_eq!(skip.decision(), Decision::Undecided);
    let fail = c.gate(&gate(Untrustworthy::Fail));
    assert!(fail.failed.iter().all(|(_, f)| *f == Failure::Untrustworthy));
    assert!(fail.failed.iter().any(|(r, _)| r.id == "ctx.process"), "a failed check fails the gate");
    let judge = c.gate(&gate(Untrustworthy::Judge));
    assert_eq!(
        judge.failed.iter().map(|(r, f)| (r.id.as_str(), *f)).collect::<Vec<_>>(),
        [("syscall.getpid", Failure::Regressed)]
    );
    assert!(judge.undecided.iter().all(|(_, u)| *u != Undecided::Untrustworthy));
    assert_eq!(judge.decision(), Decision::Fail);
}

#[test]
fn the_gate_passes_only_what_it_decided() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let gate =
        Gate { regression: 0.05, inconclusive_fails: false, untrustworthy: Untrustworthy::Judge, undecided_share: 0.0 };
    // A run against itself: the rows called no change are decided, the others (a derived
    // row's wide interval, a figure below resolution) not.
    let itself = compare(&base, &base, DEFAULT_NOISE, 7);
    assert_eq!(itself.gate(&gate).decision(), Decision::Undecided);
    let mut only_decided = itself.clone();
    only_decided.compared.retain(|c| c.verdict == Verdict::NoChange);
    assert_eq!(only_decided.gate(&gate).decision(), Decision::Pass);
    // Rounds far apart in the new run: inconclusive rows make the gate undecided, naming them;
    // allowed a share of them, it passes.
    let noisy = spread_samples(run_file(false), 2, |_| (1.0, 0.3));
    let c = compare(&base, &noisy, DEFAULT_NOISE, 7);
    let outcome = c.gate(&gate);
    assert!(outcome.failed.is_empty(), "{:?}", outcome.failed);
    assert!(outcome.undecided.iter().any(|(_, u)| *u == Undecided::Inconclusive), "{:?}", outcome.undecided);
    assert_eq!(outcome.decision(), Decision::Undecided);
    let lenient = c.gate(&Gate { undecided_share: 1.0, ..gate });
    assert_eq!(lenient.decision(), Decision::Pass);
}

#[test]
fn results_in_one_run_only_or_without_samples_are_said_so() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = base.clone();
    let gone = new.results.remove(0);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert!(c.unmatched.iter().any(|u| u.id == gone.id && u.why == "only in the base run"));
    // Skipped and failed rows are listed with their reason, never compared.
    for u in &c.unmatched {
        assert!(!u.why.is_empty());
    }
    assert!(c.compared.iter().all(|r| r.id != gone.id || r.params != gone.params));
    assert!(c.compared.iter().all(|r| r.id != "fault.uffd"));
    assert!(base.results.iter().any(|r| r.id == "fault.uffd" && r.status == Status::Skipped));
}

#[test]
fn every_verdict_has_a_word_for_each_unit() {
    assert_eq!(Verdict::Slower.text_for(Unit::Ns), "slower");
    assert_eq!(Verdict::Slower.text_for(Unit::Bytes), "larger");
    assert_eq!(Verdict::Faster.text_for(Unit::Count), "fewer");
    for v in Verdict::ALL {
        assert!(!v.text().is_empty());
    }
}

/// A cold row and its hot twin in both runs: each is paired with its own kind (cold with
/// cold, hot with hot), never across; `cache` and `cold-not-slower` survive into the result.
#[test]
fn a_cold_row_is_compared_only_with_a_cold_row() {
    use super::fixtures::with_cold_twin;
    let base = with_cold_twin(with_samples(run_file(false), 1, |_| 1.0), 3.0);
    let mut new = with_cold_twin(with_samples(run_file(false), 2, |_| 1.0), 3.0);
    let cold_new = new.results.iter_mut().find(|r| r.id == "syscall.getpid" && r.params["cache"] == "cold").unwrap();
    cold_new.flags.push(Flag::ColdNotSlower);
    assert_eq!(mismatch(&base, &new), None);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let getpid: Vec<&Compared> = c.compared.iter().filter(|r| r.id == "syscall.getpid").collect();
    assert_eq!(getpid.len(), 2, "cold and hot each compared once: {:?}", c.unmatched);
    for r in &getpid {
        // Cold against hot would be 3× or 1/3×.
        let ratio = r.ratio.expect("a ratio");
        assert!((ratio - 1.0).abs() < 0.05, "{} paired with its own kind: {r:?}", r.params["cache"]);
        assert!(r.param_differences.iter().all(|d| d.what != "cache"), "{r:?}");
        assert!(r.marks.is_empty(), "cold-not-slower is advisory, not a mark");
    }
    let cold = getpid.iter().find(|r| r.params["cache"] == "cold").expect("the cold row keeps cache=cold");
    let hot = getpid.iter().find(|r| r.params["cache"] == "hot").expect("the hot twin keeps cache=hot");
    assert!(cold.base_value > 2.5 * hot.base_value && cold.new_value > 2.5 * hot.new_value);
    assert_eq!((cold.cold_not_slower, hot.cold_not_slower), (Some(Side::New), None));
    let json = serde_json::to_value(cold).unwrap();
    assert_eq!(json["cold_not_slower"], "new");
    assert!(serde_json::to_value(hot).unwrap().get("cold_not_slower").is_none(), "absent where not flagged");
    let gate =
        Gate { regression: 0.0, inconclusive_fails: false, untrustworthy: Untrustworthy::Fail, undecided_share: 0.0 };
    assert!(c.gate(&gate).failed.iter().all(|(r, _)| r.id != "syscall.getpid"), "never gated on it");
}

/// A base with only the hot twin: the new cold row is not compared with it, and the runs are
/// not a cold-against-warm mismatch (the hot twins meet).
#[test]
fn a_cold_row_without_a_cold_counterpart_is_left_unmatched() {
    use super::fixtures::with_cold_twin;
    let mut base = with_cold_twin(with_samples(run_file(false), 1, |_| 1.0), 3.0);
    base.results.retain(|r| r.params.get("cache").is_none_or(|c| c != "cold"));
    let new = with_cold_twin(with_samples(run_file(false), 2, |_| 1.0), 3.0);
    assert_eq!(mismatch(&base, &new), None);
    for allow_mismatch in [false, true] {
        let c = compare_with(&base, &new, &Settings { noise: DEFAULT_NOISE, resamples: 300, seed: 7, allow_mismatch });
        let getpid: Vec<&Compared> = c.compared.iter().filter(|r| r.id == "syscall.getpid").collect();
        assert_eq!(getpid.len(), 1);
        assert_eq!(getpid[0].params["cache"], "hot");
        let u = c.unmatched.iter().find(|u| u.id == "syscall.getpid").expect("the cold row unmatched");
        assert_eq!((u.params["cache"].as_str(), u.why.as_str()), (Some("cold"), "only in the new run"));
    }
}

#[test]
fn rows_are_selected_by_the_false_discovery_rule_and_only_selected_rows_are_called_different() {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let new = with_samples(run_file(false), 2, |r| if r.id == "ctx.thread" { 1.3 } else { 1.0 });
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    assert_eq!(c.method, "fdr_bh");
    assert_eq!(c.q, 0.05);
    let tested = c.compared.iter().filter(|r| r.p_value.is_some()).count();
    assert_eq!(c.family, tested);
    assert!(c.family > 1);
    assert_eq!(c.selected, c.compared.iter().filter(|r| r.selected).count());
    assert!((c.confidence - (1.0 - c.selected.max(1) as f64 * 0.05 / c.family as f64)).abs() < 1e-12);
    // The slowed row is selected, its interval at the FCR level; every row called different
    // was selected, and every unselected row's interval is its marginal 95 %.
    let slowed = find(&c, "ctx.thread");
    assert!(slowed.selected && slowed.verdict == Verdict::Slower, "{slowed:?}");
    assert_eq!(slowed.ci_level, Some(c.confidence));
    for r in &c.compared {
        if matches!(r.verdict, Verdict::Slower | Verdict::Faster) {
            assert!(r.selected, "{r:?}");
        }
        if !r.selected && r.ratio.is_some() {
            assert_eq!(r.ci_level, Some(0.95), "{r:?}");
        }
        if let (Some(p), Some(level), Some([lo, hi])) = (r.p_value, r.ci_level, r.ratio_ci95) {
            // The p-value agrees with the interval: p < 1 − level ⇔ the interval excludes 1
            // (up to the bisection's tolerance).
            let excludes = lo > 1.0 || hi < 1.0;
            if (p - (1.0 - level)).abs() > 1e-3 * (1.0 - level) {
                assert_eq!(excludes, p < 1.0 - level, "{r:?}");
            }
        }
    }
    // One row alone, not selected: judged at 95 %.
    let id = "syscall.getpid";
    let alone = |run: &RunFile| {
        let mut one = run.clone();
        one.results.retain(|r| r.id == id);
        one
    };
    let single = compare(&alone(&base), &alone(&base), DEFAULT_NOISE, 7);
    assert_eq!((single.family, single.selected, single.confidence), (1, 0, 0.95));
    assert_eq!(find(&single, id).ci_level, Some(0.95));
}

/// `run` with `rounds` executions whose references read `level` times a fixed machine.
fn with_references(run: RunFile, level: f64, seed: u64) -> RunFile {
    with_reference_levels(run, level, level, seed)
}

/// `run` with executions whose user loop reads `level` times a fixed machine and whose null
/// system call reads `syscall_level` times it.
fn with_reference_levels(mut run: RunFile, level: f64, syscall_level: f64, seed: u64) -> RunFile {
    let mut rng = Rng::new(seed);
    run.executions = (0..5)
        .map(|round| {
            let mut at = || model::MachineLevel {
                user_loop_ns: 0.8 * level * (1.0 + 0.004 * (rng.next_f64() - 0.5)),
                null_syscall_ns: 120.0 * syscall_level * (1.0 + 0.004 * (rng.next_f64() - 0.5)),
            };
            model::Execution {
                round,
                reference: Some(model::Reference { start: Some(at()), end: Some(at()) }),
                ..model::Execution::default()
            }
        })
        .collect();
    run
}

#[test]
fn no_row_is_called_different_by_less_than_the_machine_moved() {
    // Every row 16 % slower, and the machine's own reference 16 % slower too: the rows moved
    // with the machine, inconclusive, said why.
    let base = with_references(with_samples(run_file(false), 1, |_| 1.0), 1.0, 1);
    let new = with_references(with_samples(run_file(false), 2, |_| 1.16), 1.16, 2);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let m = c.machine;
    let moved = m.null_syscall.expect("references in both runs");
    assert!((moved.ratio - 1.16).abs() < 0.01 && moved.ci95[0] <= moved.ratio && moved.ratio <= moved.ci95[1], "{m:?}");
    assert!(m.band.is_some() && m.user_loop.is_some());
    let getpid = find(&c, "syscall.getpid");
    assert_eq!((getpid.verdict, getpid.within_machine_movement), (Verdict::Inconclusive, true), "{getpid:?}");
    assert_eq!(c.count(Verdict::Slower), 0);
    // The same rows against a base without references (an older file): movement unknown, the
    // rows slower as before.
    let old = with_samples(run_file(false), 1, |_| 1.0);
    let c = compare(&old, &new, DEFAULT_NOISE, 7);
    assert_eq!(c.machine, Movement::default());
    let getpid = find(&c, "syscall.getpid");
    assert_eq!((getpid.verdict, getpid.within_machine_movement), (Verdict::Slower, false), "{getpid:?}");
    // The machine still, a row 30 % slower: slower.
    let still =
        with_references(with_samples(run_file(false), 2, |r| if r.id == "syscall.getpid" { 1.3 } else { 1.0 }), 1.0, 3);
    let c = compare(&base, &still, DEFAULT_NOISE, 7);
    assert_eq!(find(&c, "syscall.getpid").verdict, Verdict::Slower);
}

#[test]
fn system_calls_made_dearer_move_the_null_call_reference_and_are_still_found() {
    // What is compared (a seccomp filter, a kernel) makes every system call 16 % dearer: the
    // null-call reference moves with the rows, the user loop does not; the rows are slower.
    let base = with_references(with_samples(run_file(false), 1, |_| 1.0), 1.0, 1);
    let new = with_reference_levels(with_samples(run_file(false), 2, |_| 1.16), 1.0, 1.16, 2);
    let c = compare(&base, &new, DEFAULT_NOISE, 7);
    let moved = c.machine.null_syscall.expect("references in both runs");
    assert!((moved.ratio - 1.16).abs() < 0.01, "{:?}", c.machine);
    let band = c.machine.band.expect("a user-loop band");
    assert!(band[0] > 0.98 && band[1] < 1.02, "the band is the user loop's: {band:?}");
    let getpid = find(&c, "syscall.getpid");
    assert_eq!((getpid.verdict, getpid.within_machine_movement), (Verdict::Slower, false), "{getpid:?}");
}
