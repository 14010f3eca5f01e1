//! Coverage simulations with an execution level: each round of a run is a separate execution
//! (a fresh process), with its own level drawn at random, within-round AR(1) noise, now and
//! then a stretch at a second level, and rounds of unequal length. For 3, 5 and 10 rounds
//! (`--quick`, the default, `--thorough`) they measure how often a row's 95 % interval covers
//! the true median, how often the intervals of two independent runs overlap, and how often
//! compare's ratio interval of two independent runs of the same thing excludes 1 (a false
//! alarm).

use super::{Rounds, family_confidence, median_ratio, median_ratio_at};
use crate::bootstrap::{CONFIDENCE_95, include_point, percentile_interval};
use crate::order::median_in_place;
use crate::rng::Rng;
use crate::special::normal_quantile;
use crate::structured::{block_length, hierarchical_ci, push_circular_blocks};

/// The true level of the simulated row.
const TRUE_LEVEL: f64 = 100.0;
/// Within-round noise: the AR(1) series' standard deviation, as a share of the level.
const WITHIN_SD: f64 = 0.02;
/// Lag-1 autocorrelation of the within-round noise.
const PHI: f64 = 0.5;
/// Bootstrap replicates per interval (a few hundred keeps the tests fast).
const RESAMPLES: usize = 150;

fn normal(rng: &mut Rng) -> f64 {
    normal_quantile(rng.next_f64().clamp(1e-12, 1.0 - 1e-12))
}

/// How the simulated executions differ.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scenario {
    /// Rounds (executions) per run.
    pub rounds: usize,
    /// Standard deviation of an execution's level, in units of the within-round noise.
    pub exec: f64,
    /// Chance that a round spends a stretch at a second level, 15 % higher.
    pub regime: f64,
}

/// One round: `level × (1 + noise)`, AR(1) noise with sd [`WITHIN_SD`], 30 to 90 samples,
/// and with probability `regime` a stretch of a quarter to half the round 15 % higher.
fn execution(rng: &mut Rng, s: &Scenario) -> Vec<f64> {
    let n = 30 + rng.index(61);
    let level = TRUE_LEVEL * (1.0 + s.exec * WITHIN_SD * normal(rng));
    let innov = WITHIN_SD * (1.0 - PHI * PHI).sqrt();
    let mut e = WITHIN_SD * normal(rng);
    let (mut from, mut to) = (n, n);
    if rng.next_f64() < s.regime {
        let len = n / 4 + rng.index(n / 4 + 1);
        from = rng.index(n - len + 1);
        to = from + len;
    }
    (0..n)
        .map(|i| {
            let high = if (from..to).contains(&i) { 1.15 } else { 1.0 };
            let v = level * high * (1.0 + e);
            e = PHI * e + innov * normal(rng);
            v
        })
        .collect()
}

/// One simulated run: its rounds.
pub(super) fn run(rng: &mut Rng, s: &Scenario) -> Vec<Vec<f64>> {
    (0..s.rounds).map(|_| execution(rng, s)).collect()
}

/// The median of the distribution the scenario's samples come from, by simulating many
/// executions (the target every run's interval should cover).
pub(super) fn true_median(s: &Scenario) -> f64 {
    let mut rng = Rng::new(0x5eed);
    let many = Scenario { rounds: 3000, ..*s };
    let mut all: Vec<f64> = run(&mut rng, &many).concat();
    median_in_place(&mut all)
}

/// A row's median interval, as `summarize_rounds` builds it (without the transient cut: the
/// simulated rounds have none).
pub(super) fn row_ci(rounds: &[Vec<f64>], seed: u64) -> [f64; 2] {
    let slices: Vec<&[f64]> = rounds.iter().map(Vec::as_slice).collect();
    let blocks: Vec<f64> = slices.iter().map(|r| block_length(r)).collect();
    let (ci, _) = hierarchical_ci(&slices, &blocks, RESAMPLES, CONFIDENCE_95, seed);
    let point = median_in_place(&mut slices.concat());
    include_point(ci, point)
}

/// The median interval of the two-stage percentile bootstrap osprim used before execution
/// levels were simulated (rounds, then blocks; arms widened by √(R/(R − 1))), to compare
/// widths with.
pub(super) fn two_stage_ci(rounds: &[Vec<f64>], seed: u64) -> [f64; 2] {
    let slices: Vec<&[f64]> = rounds.iter().map(Vec::as_slice).collect();
    let blocks: Vec<f64> = slices.iter().map(|r| block_length(r)).collect();
    let r = slices.len();
    let mut rng = Rng::new(seed);
    let mut buf = Vec::new();
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            buf.clear();
            for _ in 0..r {
                let i = rng.index(r);
                push_circular_blocks(&mut rng, slices[i], blocks[i], &mut buf);
            }
            median_in_place(&mut buf)
        })
        .collect();
    let point = median_in_place(&mut slices.concat());
    let ci = include_point(percentile_interval(&mut medians, CONFIDENCE_95), point);
    let scale = (r as f64 / (r as f64 - 1.0)).sqrt();
    [point - scale * (point - ci[0]), point + scale * (ci[1] - point)]
}

/// What the simulation measured over its trials.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub trials: usize,
    /// The first run's interval covered the true median.
    pub covered: usize,
    /// The two runs' intervals overlapped.
    pub overlapped: usize,
    /// Compare's ratio interval of the two runs excluded 1.
    pub false_alarms: usize,
    /// Mean relative width of the first run's interval.
    pub width: f64,
}

impl Outcome {
    pub fn coverage(&self) -> f64 {
        self.covered as f64 / self.trials as f64
    }
    pub fn overlap(&self) -> f64 {
        self.overlapped as f64 / self.trials as f64
    }
    pub fn false_alarm(&self) -> f64 {
        self.false_alarms as f64 / self.trials as f64
    }
}

/// Runs `trials` pairs of independent runs of `s`, with `ci` making a row's interval.
pub(super) fn simulate(s: &Scenario, trials: usize, ci: impl Fn(&[Vec<f64>], u64) -> [f64; 2]) -> Outcome {
    let truth = true_median(s);
    let mut rng = Rng::new(2013 + s.rounds as u64);
    let mut o = Outcome { trials, ..Outcome::default() };
    for t in 0..trials as u64 {
        let (a, b) = (run(&mut rng, s), run(&mut rng, s));
        let (ca, cb) = (ci(&a, 2 * t), ci(&b, 2 * t + 1));
        o.covered += usize::from(ca[0] <= truth && truth <= ca[1]);
        o.overlapped += usize::from(ca[0] <= cb[1] && cb[0] <= ca[1]);
        o.width += (ca[1] - ca[0]) / truth / trials as f64;
        let (sa, sb) = (a.concat(), b.concat());
        let (na, nb): (Vec<usize>, Vec<usize>) = (a.iter().map(Vec::len).collect(), b.iter().map(Vec::len).collect());
        let q = median_ratio(&Rounds::split(&sa, &na), &Rounds::split(&sb, &nb), RESAMPLES, t).expect("positive");
        o.false_alarms += usize::from(q.ci95[0] > 1.0 || q.ci95[1] < 1.0);
    }
    o
}

fn report(s: &Scenario, name: &str, o: &Outcome) {
    eprintln!(
        "{name} {} rounds, σ_exec {}× within, regimes {:.0} %: covers {:.1} %, overlap {:.1} %, \
         false alarms {:.1} %, width ±{:.2} % ({} trials)",
        s.rounds,
        s.exec,
        100.0 * s.regime,
        100.0 * o.coverage(),
        100.0 * o.overlap(),
        100.0 * o.false_alarm(),
        100.0 * o.width / 2.0,
        o.trials
    );
}

/// Trials per scenario: enough to tell 90 % from 95 % coverage (the binomial standard error
/// at 400 trials is about 1.1 %).
const TRIALS: usize = 400;

/// Executions whose levels differ (σ of the level `exec` times the within-round noise) must
/// be covered ≥ 90 % of the time and their runs' intervals overlap ≥ 90 %; compare's
/// interval of two runs of the same thing may exclude 1 in 5 % of them (nominal), allowed
/// 6.5 % for the simulation's own error (about 1.1 % at 400 trials).
fn check(rounds: usize, exec: f64) {
    {
        let s = Scenario { rounds, exec, regime: 0.2 };
        let o = simulate(&s, TRIALS, row_ci);
        report(&s, "row interval", &o);
        assert!(o.coverage() >= 0.90, "{s:?}: covers {}", o.coverage());
        assert!(o.overlap() >= 0.90, "{s:?}: overlap {}", o.overlap());
        assert!(o.false_alarm() <= 0.065, "{s:?}: false alarms {}", o.false_alarm());
    }
}

#[test]
fn executions_at_their_own_levels_are_covered_with_3_rounds() {
    check(3, 1.0);
}

#[test]
fn executions_far_apart_are_covered_with_3_rounds() {
    check(3, 3.0);
}

#[test]
fn executions_at_their_own_levels_are_covered_with_5_rounds() {
    check(5, 1.0);
}

#[test]
fn executions_far_apart_are_covered_with_5_rounds() {
    check(5, 3.0);
}

#[test]
fn executions_at_their_own_levels_are_covered_with_10_rounds() {
    check(10, 1.0);
}

#[test]
fn executions_far_apart_are_covered_with_10_rounds() {
    check(10, 3.0);
}

#[test]
fn executions_at_one_level_keep_their_narrow_interval() {
    // When the rounds agree (one level, no second level), the interval must not balloon: close
    // to the two-stage percentile bootstrap osprim used before (with 3 rounds about 1.3 times
    // as wide: a chance disagreement of 3 rounds is charged the t penalty), still covering.
    for rounds in [3, 5] {
        let s = Scenario { rounds, exec: 0.0, regime: 0.0 };
        let now = simulate(&s, TRIALS, row_ci);
        report(&s, "row interval", &now);
        let before = simulate(&s, TRIALS, two_stage_ci);
        report(&s, "two-stage (before)", &before);
        assert!(now.coverage() >= 0.90, "{s:?}: covers {}", now.coverage());
        assert!(now.width <= 1.35 * before.width, "{s:?}: width {} against {}", now.width, before.width);
        assert!(now.false_alarm() <= 0.065, "{s:?}: false alarms {}", now.false_alarm());
    }
}

/// Two runs of the same thing with `rows` rows each, compared row by row at the level
/// [`family_confidence`] gives: how often one or more rows' ratio interval excludes 1, over
/// `trials` such comparisons.
fn family_false_alarms(s: &Scenario, rows: usize, trials: usize) -> f64 {
    let mut rng = Rng::new(77 + s.rounds as u64);
    let confidence = family_confidence(rows);
    let mut alarms = 0;
    for t in 0..trials as u64 {
        let any = (0..rows as u64).any(|r| {
            let (a, b) = (run(&mut rng, s), run(&mut rng, s));
            let (sa, sb) = (a.concat(), b.concat());
            let (na, nb): (Vec<usize>, Vec<usize>) =
                (a.iter().map(Vec::len).collect(), b.iter().map(Vec::len).collect());
            let q = median_ratio_at(
                &Rounds::split(&sa, &na),
                &Rounds::split(&sb, &nb),
                RESAMPLES,
                t * 1000 + r,
                confidence,
            )
            .expect("positive");
            q.ci95[0] > 1.0 || q.ci95[1] < 1.0
        });
        alarms += usize::from(any);
    }
    alarms as f64 / trials as f64
}

#[test]
fn a_comparison_of_many_rows_calls_two_runs_of_the_same_thing_different_in_at_most_5_percent() {
    // 12 rows of 5 rounds each, executions at their own levels: at 95 % row by row, about
    // 1 − 0.95¹² ≈ 46 % of such comparisons would call some row different; at the family's
    // level, about 5 % or fewer (allowed 8 % for the simulation's own error at 200 trials,
    // about 1.5 %).
    let s = Scenario { rounds: 5, exec: 1.0, regime: 0.2 };
    let rate = family_false_alarms(&s, 12, 200);
    eprintln!("12 rows, 5 rounds: one or more rows excluding 1 in {:.1} % of comparisons", 100.0 * rate);
    assert!(rate <= 0.08, "family-wise false alarms {rate}");
    assert!((family_confidence(1) - 0.95).abs() < 1e-12 && (family_confidence(0) - 0.95).abs() < 1e-12);
    assert!((family_confidence(100) - 0.9995).abs() < 1e-12);
}

/// One run of a row on the noisy machine of the FDR simulation: 5 rounds, each at its own
/// level `level × exp(0.05·N)` (the machine moving 5 % between processes), 40 samples each
/// with 2 % independent noise.
fn noisy_run(rng: &mut Rng, level: f64) -> (Vec<f64>, Vec<usize>) {
    let mut samples = Vec::new();
    for _ in 0..5 {
        let round = level * (0.05 * normal(rng)).exp();
        samples.extend((0..40).map(|_| round * (1.0 + 0.02 * normal(rng))));
    }
    (samples, vec![40; 5])
}

#[test]
fn false_discovery_rate_holds_and_finds_more_than_bonferroni() {
    // 30 comparisons of 140 rows: 100 rows unchanged, 40 with a true change of 5–15 %
    // (either way), each run 5 rounds at round-level noise of 5 %. A row is called different
    // when its interval excludes 1 and its ratio is beyond the 2 % noise threshold, as
    // compare calls it: under Bonferroni at 1 − 0.05/140; under Benjamini–Hochberg at
    // q = 0.05 with the selected rows' intervals at 1 − R·q/m.
    use crate::multiple::{FDR_Q, benjamini_hochberg, fcr_confidence};
    const ROWS: usize = 140;
    const CHANGED: usize = 40;
    const TRIALS: usize = 30;
    let mut rng = Rng::new(0xfd2);
    let (mut null_calls, mut null_calls_bonf, mut found, mut found_bonf) = (0usize, 0usize, 0usize, 0usize);
    let mut fdp_sum = 0.0;
    let beyond = |r: f64, ci: [f64; 2]| (ci[0] > 1.0 && r > 1.02) || (ci[1] < 1.0 && r < 0.98);
    for t in 0..TRIALS as u64 {
        let mut boots = Vec::with_capacity(ROWS);
        let mut truth = Vec::with_capacity(ROWS);
        for r in 0..ROWS {
            let change = if r < CHANGED {
                let size = 0.05 + 0.10 * rng.next_f64();
                if rng.next_f64() < 0.5 { 1.0 + size } else { 1.0 / (1.0 + size) }
            } else {
                1.0
            };
            let (sb, nb) = noisy_run(&mut rng, 100.0);
            let (sn, nn) = noisy_run(&mut rng, 100.0 * change);
            let boot = super::ratio_bootstrap(
                &Rounds::split(&sb, &nb),
                &Rounds::split(&sn, &nn),
                RESAMPLES,
                t * 1000 + r as u64,
            )
            .expect("positive");
            boots.push(boot);
            truth.push(change != 1.0);
        }
        let p: Vec<f64> = boots.iter().map(|b| b.p_value()).collect();
        let selected = benjamini_hochberg(&p, FDR_Q);
        let level = fcr_confidence(selected.iter().filter(|&&s| s).count(), ROWS, FDR_Q);
        let bonferroni = family_confidence(ROWS);
        let (mut calls, mut wrong) = (0usize, 0usize);
        for ((b, &sel), &changed) in boots.iter().zip(&selected).zip(&truth) {
            let called = sel && beyond(b.estimate, b.interval(level));
            let called_bonf = beyond(b.estimate, b.interval(bonferroni));
            calls += usize::from(called);
            wrong += usize::from(called && !changed);
            null_calls += usize::from(called && !changed);
            null_calls_bonf += usize::from(called_bonf && !changed);
            found += usize::from(called && changed);
            found_bonf += usize::from(called_bonf && changed);
        }
        fdp_sum += if calls == 0 { 0.0 } else { wrong as f64 / calls as f64 };
    }
    let nulls = (TRIALS * (ROWS - CHANGED)) as f64;
    let changes = (TRIALS * CHANGED) as f64;
    let (null_rate, null_rate_bonf) = (null_calls as f64 / nulls, null_calls_bonf as f64 / nulls);
    let (power, power_bonf) = (found as f64 / changes, found_bonf as f64 / changes);
    let fdr = fdp_sum / TRIALS as f64;
    eprintln!(
        "{TRIALS} comparisons of {ROWS} rows ({CHANGED} changed by 5–15 %), 5 rounds at 5 % round-level noise: \
         FDR (BH q = 0.05): null rows called different {:.2} %, false discovery rate {:.2} %, power {:.1} %; \
         Bonferroni: null rows called different {:.2} %, power {:.1} %",
        100.0 * null_rate,
        100.0 * fdr,
        100.0 * power,
        100.0 * null_rate_bonf,
        100.0 * power_bonf
    );
    assert!(null_rate <= 0.05, "null rows called different: {null_rate}");
    assert!(fdr <= 0.075, "false discovery rate {fdr} (q = 0.05, allowed 0.075 for the simulation's error)");
    assert!(power >= 1.5 * power_bonf && power > power_bonf + 0.03, "power {power} against Bonferroni's {power_bonf}");
}
