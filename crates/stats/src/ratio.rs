//! The ratio of two results' medians with a bootstrap confidence interval that resamples the
//! way the samples were taken.
//!
//! A run measures each benchmark in rounds (a fresh set-up each, spread over the run), and
//! inside a round the samples are a time series that may be autocorrelated. A plain bootstrap
//! of all samples would treat them as independent and give an interval far too narrow when
//! the machine changed level between rounds. So each resample is drawn in two stages
//! (a hierarchical bootstrap, Davison & Hinkley, *Bootstrap Methods and their Application*,
//! 1997, §3.8):
//!
//! 1. draw as many rounds as the result has, with replacement;
//! 2. inside each drawn round, rebuild a series of the round's length from circular blocks
//!    (Politis & Romano's circular block bootstrap) of the length
//!    [`block_length`](super::structured::block_length) chooses for that round.
//!
//! The median of the pooled resample is the statistic. Both results are resampled
//! independently and `new / base` is taken per replicate; the interval is the percentile
//! interval of those ratios, its arms widened for few rounds as a row's interval is
//! ([`super::structured`], steps 3 and 4): by √(k/(k − 1)), then by the small-sample (Student
//! t) penalty on each run's variance between rounds, carried to the ratio by the delta
//! method (`Var(n/b) ≈ Var(n)/b² + n²·Var(b)/b⁴`) with Welch–Satterthwaite degrees of
//! freedom. Without it, two runs of the same thing with 3 rounds whose executions sit at
//! their own levels were told apart in 16–17 % of trials; with it, in about 5 % (nominal).
//! The estimate is exactly the ratio of the two medians. Seeded and reproducible.

use super::bootstrap::CONFIDENCE_95;
use super::rng::Rng;
use super::structured::{Between, RoundSet, block_length, small_sample_interval, variance};

/// Samples of one result, split into its rounds (in time order within each).
#[derive(Clone, Debug)]
pub struct Rounds<'a> {
    set: RoundSet<'a>,
}

impl<'a> Rounds<'a> {
    /// `samples` split by `per_round` (how many samples each round took); one round when
    /// `per_round` is empty or does not add up to the samples.
    pub fn split(samples: &'a [f64], per_round: &[usize]) -> Rounds<'a> {
        let mut rounds = Vec::new();
        if per_round.iter().sum::<usize>() == samples.len() && !per_round.is_empty() {
            let mut at = 0;
            for &n in per_round {
                if n > 0 {
                    rounds.push(&samples[at..at + n]);
                }
                at += n;
            }
        } else if !samples.is_empty() {
            rounds.push(samples);
        }
        let blocks: Vec<f64> = rounds.iter().map(|r| block_length(r).round().max(1.0)).collect();
        Rounds { set: RoundSet::new(&rounds, &blocks) }
    }

    /// How many rounds hold samples.
    pub fn count(&self) -> usize {
        self.set.count()
    }

    /// The median of all samples.
    pub fn median(&self) -> f64 {
        self.set.median()
    }
}

/// A ratio and its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// `median(new) / median(base)`.
    pub estimate: f64,
    /// 95 % interval of the ratio (module doc).
    pub ci95: [f64; 2],
}

/// The ratio of `new`'s median to `base`'s, with its 95 % interval (module doc), from
/// `resamples` replicates of each kind. `None` when either side has no samples or the base
/// median is not positive.
pub fn median_ratio(base: &Rounds, new: &Rounds, resamples: usize, seed: u64) -> Option<Ratio> {
    median_ratio_at(base, new, resamples, seed, CONFIDENCE_95)
}

/// [`median_ratio`] with an interval of level `confidence` (0.95 for 95 %): a comparison of
/// many rows asks some of them for more ([`super::multiple`]).
pub fn median_ratio_at(base: &Rounds, new: &Rounds, resamples: usize, seed: u64, confidence: f64) -> Option<Ratio> {
    let boot = ratio_bootstrap(base, new, resamples, seed)?;
    Some(Ratio { estimate: boot.estimate, ci95: boot.interval(confidence) })
}

/// The bootstrap of `new / base` once drawn: the ratio's interval at any level, and the
/// p-value for "ratio = 1" that agrees with those intervals.
#[derive(Clone, Debug)]
pub struct RatioBootstrap {
    /// `median(new) / median(base)`.
    pub estimate: f64,
    /// Variance of the within-round replicates of the ratio.
    within: f64,
    /// The two-stage replicates, sorted.
    two_stage: Vec<f64>,
    /// Each side's variance between runs, carried to the ratio.
    between: [Between; 2],
}

impl RatioBootstrap {
    /// The ratio's interval of level `confidence` (module doc).
    pub fn interval(&self, confidence: f64) -> [f64; 2] {
        let mut reps = self.two_stage.clone();
        small_sample_interval(self.estimate, self.within, &mut reps, &self.between, confidence, false)
    }

    /// The smallest α at which the interval of level 1 − α excludes 1
    /// ([`super::multiple::p_value`]).
    pub fn p_value(&self) -> f64 {
        super::multiple::p_value(|c| Some(self.interval(c)), 1.0)
    }

    /// Whether every replicate gave the same ratio (an interval of no width at every level).
    pub fn degenerate(&self) -> bool {
        self.two_stage.first() == self.two_stage.last() && self.between.iter().all(|b| b.variance <= 0.0)
    }
}

/// Draws the bootstrap of `new / base` (module doc) with `resamples` replicates of each kind.
/// `None` when either side has no samples or the base median is not positive.
pub fn ratio_bootstrap(base: &Rounds, new: &Rounds, resamples: usize, seed: u64) -> Option<RatioBootstrap> {
    let (b, n) = (base.median(), new.median());
    if base.count() == 0 || new.count() == 0 || b.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let mut rng = Rng::new(seed);
    let (mut buf, mut picked) = (Vec::new(), Vec::new());
    let (mut within, mut two_stage, mut reps_b, mut reps_n) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..resamples.max(2) {
        let (wb, hb) = base.set.replicate(&mut rng, &mut buf, &mut picked);
        let (wn, hn) = new.set.replicate(&mut rng, &mut buf, &mut picked);
        reps_b.push(wb[0]);
        reps_n.push(wn[0]);
        if (wn[0] / wb[0]).is_finite() && (hn[0] / hb[0]).is_finite() {
            within.push(wn[0] / wb[0]);
            two_stage.push(hn[0] / hb[0]);
        }
    }
    if within.is_empty() {
        return None;
    }
    let estimate = n / b;
    // Each side's variance between runs beyond its within-round part, carried to the ratio
    // by the delta method: Var(n/b) ≈ Var(n)/b² + n²·Var(b)/b⁴.
    let mut between = |side: &Rounds, own: &[f64], scale: f64| {
        let total = side.set.total_variance(resamples, &mut rng, |v| v);
        Between { variance: total.map_or(0.0, |t| (t[0] - variance(own)).max(0.0)) * scale, rounds: side.count() }
    };
    let parts = [between(base, &reps_b, (n * n) / (b * b * b * b)), between(new, &reps_n, 1.0 / (b * b))];
    two_stage.sort_unstable_by(f64::total_cmp);
    Some(RatioBootstrap { estimate, within: variance(&within), two_stage, between: parts })
}

/// The level each of `rows` intervals must have so that all of them together cover their
/// true values with 95 % confidence (Bonferroni: 1 − 0.05 / rows). Two runs of the same
/// build then see one or more rows called different in at most 5 % of comparisons, however
/// many rows they hold, where 95 % intervals row by row would call about 5 % of the rows
/// different every time. 0.95 for one row (or none).
pub fn family_confidence(rows: usize) -> f64 {
    1.0 - (1.0 - CONFIDENCE_95) / rows.max(1) as f64
}

/// The ratio of the median of `a` to the median of `b` for **paired** samples (`a[i]` taken
/// beside `b[i]`, e.g. a cold-cache sample and its hot twin), given per round as `(a, b)` of
/// equal lengths (a longer side is cut to the shorter). The interval is the percentile
/// interval of a two-stage bootstrap that keeps the pairs whole: draw as many rounds as there
/// are, with replacement, then inside each drawn round as many pairs, with replacement; the
/// statistic is the ratio of the pooled medians, widened to contain the estimate. Pairs, not
/// the two sides independently, are drawn, so what moved both samples of a pair (the machine's
/// level in that moment) cancels out. `None` without pairs or with a median of `b` that is
/// not positive. Seeded and reproducible.
pub fn paired_median_ratio(rounds: &[(&[f64], &[f64])], resamples: usize, seed: u64) -> Option<Ratio> {
    let rounds: Vec<(&[f64], &[f64])> = rounds
        .iter()
        .map(|(a, b)| {
            let n = a.len().min(b.len());
            (&a[..n], &b[..n])
        })
        .filter(|(a, _)| !a.is_empty())
        .collect();
    if rounds.is_empty() {
        return None;
    }
    let pooled_median = |side: &mut Vec<f64>| super::median_in_place(side);
    let mut a: Vec<f64> = rounds.iter().flat_map(|r| r.0.iter().copied()).collect();
    let mut b: Vec<f64> = rounds.iter().flat_map(|r| r.1.iter().copied()).collect();
    let (ma, mb) = (pooled_median(&mut a), pooled_median(&mut b));
    if mb.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let estimate = ma / mb;
    let mut rng = Rng::new(seed);
    let mut reps = Vec::with_capacity(resamples.max(2));
    for _ in 0..resamples.max(2) {
        a.clear();
        b.clear();
        for _ in 0..rounds.len() {
            let (ra, rb) = rounds[rng.index(rounds.len())];
            for _ in 0..ra.len() {
                let i = rng.index(ra.len());
                a.push(ra[i]);
                b.push(rb[i]);
            }
        }
        let q = pooled_median(&mut a) / pooled_median(&mut b);
        if q.is_finite() {
            reps.push(q);
        }
    }
    if reps.is_empty() {
        return None;
    }
    let ci = super::bootstrap::percentile_interval(&mut reps, CONFIDENCE_95);
    Some(Ratio { estimate, ci95: [ci[0].min(estimate), ci[1].max(estimate)] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratio_keeps_pairs_whole() {
        // Each pair moves together by a level common to both sides (±30 %): drawn as pairs,
        // the ratio stays tight around 3; a side alone would scatter.
        let mut rng = Rng::new(11);
        let mut cold = Vec::new();
        let mut hot = Vec::new();
        for _ in 0..300 {
            let level = 1.0 + 0.6 * (rng.next_f64() - 0.5);
            let jitter = 1.0 + 0.02 * (rng.next_f64() - 0.5);
            hot.push(100.0 * level);
            cold.push(300.0 * level * jitter);
        }
        let rounds = [(&cold[..100], &hot[..100]), (&cold[100..200], &hot[100..200]), (&cold[200..], &hot[200..])];
        let q = paired_median_ratio(&rounds, 1000, 5).unwrap();
        assert!((q.estimate - 3.0).abs() < 0.1, "{q:?}");
        assert!(q.ci95[0] <= q.estimate && q.estimate <= q.ci95[1] && q.ci95[0] > 2.5 && q.ci95[1] < 3.5, "{q:?}");
        // Equal sides: 1 inside the interval; nothing to pair: no ratio.
        let same = paired_median_ratio(&[(&hot[..], &hot[..])], 500, 5).unwrap();
        assert!(same.ci95[0] <= 1.0 && same.ci95[1] >= 1.0);
        assert!(paired_median_ratio(&[(&[][..], &[][..])], 10, 1).is_none());
        assert!(paired_median_ratio(&[(&[1.0][..], &[0.0][..])], 10, 1).is_none());
    }

    fn series(level: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        (0..n).map(|_| level * (1.0 + 0.02 * (rng.next_f64() - 0.5))).collect()
    }

    #[test]
    fn a_result_against_itself_is_one_inside_its_interval() {
        let s = series(100.0, 500, 1);
        let r = Rounds::split(&s, &[100; 5]);
        let q = median_ratio(&r, &r, 500, 7).unwrap();
        assert_eq!(q.estimate, 1.0);
        assert!(q.ci95[0] < 1.0 && q.ci95[1] > 1.0, "{q:?}");
    }

    #[test]
    fn a_ten_percent_slowdown_is_seen_and_bracketed() {
        let a = series(100.0, 400, 2);
        let b = series(110.0, 400, 3);
        let q = median_ratio(&Rounds::split(&a, &[100; 4]), &Rounds::split(&b, &[100; 4]), 500, 7).unwrap();
        assert!((q.estimate - 1.1).abs() < 0.01, "{q:?}");
        assert!(q.ci95[0] > 1.05 && q.ci95[1] < 1.15, "{q:?}");
    }

    #[test]
    fn rounds_at_different_levels_widen_the_interval() {
        // The same samples, once known as rounds at two levels and once as one series: the
        // rounds' interval must be the wider, since the level of a new run is uncertain.
        let mut a = series(100.0, 200, 4);
        a.extend(series(130.0, 200, 5));
        let b = series(115.0, 400, 6);
        let as_rounds = median_ratio(&Rounds::split(&a, &[100; 4]), &Rounds::split(&b, &[100; 4]), 500, 7).unwrap();
        let pooled = median_ratio(&Rounds::split(&a, &[]), &Rounds::split(&b, &[]), 500, 7).unwrap();
        let width = |q: Ratio| q.ci95[1] - q.ci95[0];
        assert!(width(as_rounds) > width(pooled), "{as_rounds:?} vs {pooled:?}");
    }

    #[test]
    fn no_samples_or_a_zero_base_gives_no_ratio() {
        let empty: Vec<f64> = Vec::new();
        let zeros = vec![0.0; 10];
        let s = series(1.0, 10, 8);
        assert!(median_ratio(&Rounds::split(&empty, &[]), &Rounds::split(&s, &[]), 10, 1).is_none());
        assert!(median_ratio(&Rounds::split(&zeros, &[]), &Rounds::split(&s, &[]), 10, 1).is_none());
    }

    #[test]
    fn round_counts_that_do_not_add_up_fall_back_to_one_round() {
        let s = series(1.0, 10, 9);
        assert_eq!(Rounds::split(&s, &[3, 3]).count(), 1);
        assert_eq!(Rounds::split(&s, &[5, 0, 5]).count(), 2);
    }
}

#[cfg(test)]
mod simulation;

/// The ratio of the median of `new` to the median of `base` for one value per round on each
/// side (e.g. a reference timed in each of a run's executions), with a percentile bootstrap
/// interval over the rounds (each side's rounds drawn with replacement, independently; widened
/// to contain the estimate). `None` without values on either side or with a base median that
/// is not positive. Seeded and reproducible.
pub fn level_ratio(base: &[f64], new: &[f64], resamples: usize, seed: u64) -> Option<Ratio> {
    let clean = |v: &[f64]| v.iter().copied().filter(|x| x.is_finite()).collect::<Vec<f64>>();
    let (mut b, mut n) = (clean(base), clean(new));
    if b.is_empty() || n.is_empty() {
        return None;
    }
    let (mb, mn) = (super::median_in_place(&mut b), super::median_in_place(&mut n));
    if mb.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let estimate = mn / mb;
    let mut rng = Rng::new(seed);
    let (mut rb, mut rn) = (Vec::with_capacity(b.len()), Vec::with_capacity(n.len()));
    let mut reps = Vec::with_capacity(resamples.max(2));
    for _ in 0..resamples.max(2) {
        rb.clear();
        rn.clear();
        rb.extend((0..b.len()).map(|_| b[rng.index(b.len())]));
        rn.extend((0..n.len()).map(|_| n[rng.index(n.len())]));
        let q = super::median_in_place(&mut rn) / super::median_in_place(&mut rb);
        if q.is_finite() {
            reps.push(q);
        }
    }
    let ci = super::bootstrap::percentile_interval(&mut reps, CONFIDENCE_95);
    Some(Ratio { estimate, ci95: [ci[0].min(estimate), ci[1].max(estimate)] })
}

#[cfg(test)]
mod level_tests {
    use super::level_ratio;

    #[test]
    fn a_level_ratio_brackets_the_move() {
        let base = [100.0, 102.0, 98.0, 101.0, 99.0];
        let new = [110.0, 112.0, 108.0, 111.0, 109.0];
        let q = level_ratio(&base, &new, 500, 3).unwrap();
        assert!((q.estimate - 1.1).abs() < 1e-9, "{q:?}");
        assert!(q.ci95[0] > 1.05 && q.ci95[1] < 1.15 && q.ci95[0] <= 1.1 && q.ci95[1] >= 1.1, "{q:?}");
        assert!(level_ratio(&[], &new, 10, 1).is_none());
        assert!(level_ratio(&[0.0], &new, 10, 1).is_none());
    }
}
