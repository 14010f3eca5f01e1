//! Change points in a series of numbers: E-divisive means (Matteson and James, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data", JASA
//! 109(505), 2014), the method MongoDB runs on its performance CI (Daly et al., "The Use of
//! Change Point Detection to Identify Software Performance Regressions in a Continuous
//! Integration System", ICPE 2020) and Hunter / Apache Otava after it (Fleming et al.,
//! "Hunter: Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023).
//!
//! **The statistic.** For a segment split after `τ` points into `X` (n points) and `Y`
//! (m points), the energy distance with exponent α = 1 is
//!
//! ```text
//! Ê(X, Y) = 2/(nm) Σᵢⱼ |Xᵢ − Yⱼ|  −  C(n,2)⁻¹ Σᵢ<ₖ |Xᵢ − Xₖ|  −  C(m,2)⁻¹ Σⱼ<ₖ |Yⱼ − Yₖ|
//! Q̂(τ)   = nm/(n + m) · Ê(X, Y)
//! ```
//!
//! It is 0 in expectation when both sides come from one distribution and grows with any
//! difference between them (not only of the mean). The split is the `τ` that maximises Q̂,
//! with at least [`EDivisive::min_size`] points on each side. As in Hunter, the second end of
//! the split (Matteson and James's κ) is the end of the segment.
//!
//! **Several changes.** Bisection: each step finds the best split in every current segment,
//! takes the one with the largest Q̂, and keeps it if it is significant; the two halves are then
//! searched in turn, until a split is not significant or no segment is long enough.
//!
//! **Significance.** A permutation test, as in the paper: the points of each current segment
//! are shuffled within it (a seeded [`Rng`], so the answer is the same on every machine and
//! every run), the largest Q̂ over the segments recomputed, and the p-value is
//! `(1 + #{permuted ≥ observed}) / (1 + R)` for R permutations. A split is kept when
//! p ≤ [`EDivisive::significance`]. The test stops early once enough permutations beat the
//! observed value for p to exceed the level: that decides the same way, sooner.
//! The R package `ecp` (by the paper's authors) defaults to a 5 % level and 199 permutations;
//! osprim uses 1 % with 199, because `osprim history --changes` tests every series of a
//! history at once and a false change in one of 150 series at 5 % would be the usual case.
//! The price: with 199 permutations and min segment 3, a change needs about five points on
//! each side to reach 1 % (the number of distinct ways to split 8 points 4 + 4 is only 70).
//!
//! **Cost.** With α = 1 and one dimension, the within-segment sums for every `τ` come from a
//! Fenwick tree over the points' ranks in O(T log T) per pass (the cross sum is the total
//! minus the two within sums), so a permutation test of R passes over T points costs
//! O(R · T log T) rather than the paper's O(R · T²).
//!
//! Input must be finite; a NaN or infinity is an error, never a silent reordering.

use super::StatsError;
use super::rng::{Rng, derive_seed};

/// The settings of an E-divisive search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EDivisive {
    /// The fewest points a segment may have (at least 2: the within sums need a pair).
    pub min_size: usize,
    /// Permutations per significance test (R).
    pub permutations: usize,
    /// The level a split's p-value must not exceed.
    pub significance: f64,
    /// Seed of the permutations.
    pub seed: u64,
}

impl Default for EDivisive {
    /// min segment 3, R = 199, 1 % level, a fixed seed (module doc).
    fn default() -> EDivisive {
        EDivisive { min_size: 3, permutations: 199, significance: 0.01, seed: 0x6564_6976_6973_6976 }
    }
}

/// One change point: the series changes between `index − 1` and `index`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    /// The first point of the new segment (≥ 1).
    pub index: usize,
    /// Q̂ of the split when it was found.
    pub statistic: f64,
    /// Its permutation p-value.
    pub p_value: f64,
}

/// The significant change points of `values`, in index order (module doc). Fewer than
/// `2 · min_size` points give none.
pub fn e_divisive(values: &[f64], cfg: &EDivisive) -> Result<Vec<ChangePoint>, StatsError> {
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(StatsError::NotFinite { index, value: values[index] });
    }
    let min_size = cfg.min_size.max(2);
    let mut bounds: Vec<usize> = vec![0, values.len()];
    let mut found = Vec::new();
    for step in 0u64.. {
        // The best split of each segment, and the best of them.
        let segments: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let best = segments
            .iter()
            .filter_map(|&(a, b)| best_split(&values[a..b], min_size).map(|(t, q)| (a + t, q)))
            .fold(None, |acc: Option<(usize, f64)>, c| match acc {
                Some(a) if a.1 >= c.1 => Some(a),
                _ => Some(c),
            });
        let Some((index, observed)) = best else { break };
        let mut rng = Rng::new(derive_seed(cfg.seed, step));
        let p_value = permutation_p(values, &segments, min_size, observed, cfg, &mut rng);
        if p_value > cfg.significance {
            break;
        }
        found.push(ChangePoint { index, statistic: observed, p_value });
        let at = bounds.partition_point(|&b| b < index);
        bounds.insert(at, index);
    }
    found.sort_by_key(|c| c.index);
    Ok(found)
}

/// The p-value of `observed` against the largest Q̂ of the segments, each shuffled within
/// itself; stops once the level is out of reach.
fn permutation_p(
    values: &[f64],
    segments: &[(usize, usize)],
    min_size: usize,
    observed: f64,
    cfg: &EDivisive,
    rng: &mut Rng,
) -> f64 {
    let r = cfg.permutations.max(1);
    // Q̂ ≤ 0 is no evidence of anything (a constant series).
    if observed <= 0.0 {
        return 1.0;
    }
    // More than this many permutations at or above the observed value put p over the level.
    let allowed = (cfg.significance * (r + 1) as f64 - 1.0 + 1e-9).floor();
    let mut beaten = 0usize;
    let mut buf: Vec<f64> = Vec::with_capacity(values.len());
    // A relative tolerance, so that a permutation equal to the observed split in exact
    // arithmetic counts as reaching it.
    let reach = observed * (1.0 - 1e-12);
    for _ in 0..r {
        let mut top = f64::NEG_INFINITY;
        for &(a, b) in segments {
            buf.clear();
            buf.extend_from_slice(&values[a..b]);
            shuffle(&mut buf, rng);
            if let Some((_, q)) = best_split(&buf, min_size) {
                top = top.max(q);
            }
        }
        if top >= reach {
            beaten += 1;
            if beaten as f64 > allowed {
                // p is at least this already (over the level): the rest cannot bring it back.
                return (beaten + 1) as f64 / (r + 1) as f64;
            }
        }
    }
    (beaten + 1) as f64 / (r + 1) as f64
}

/// Fisher–Yates, from the seeded generator.
fn shuffle(xs: &mut [f64], rng: &mut Rng) {
    for i in (1..xs.len()).rev() {
        let j = rng.index(i + 1);
        xs.swap(i, j);
    }
}

/// The best split of `xs`: the number of points before it and its Q̂; `None` when `xs` has
/// fewer than `2 · min_size` points.
fn best_split(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = xs.len();
    if n < 2 * min_size {
        return None;
    }
    let left = prefix_within_sums(xs.iter().copied(), xs);
    let right = prefix_within_sums(xs.iter().rev().copied(), xs);
    let total = left[n];
    let mut best: Option<(usize, f64)> = None;
    for t in min_size..=n - min_size {
        let (nl, nr) = (t as f64, (n - t) as f64);
        let (wl, wr) = (left[t], right[n - t]);
        let cross = total - wl - wr;
        let e = 2.0 * cross / (nl * nr) - wl / (nl * (nl - 1.0) / 2.0) - wr / (nr * (nr - 1.0) / 2.0);
        let q = nl * nr / (nl + nr) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best
}

/// `out[k]` = Σ over pairs among the first k points of `order` of |xᵢ − xⱼ|, for k = 0..=n,
/// from a Fenwick tree over the ranks of the values in `all` (the same multiset).
fn prefix_within_sums(order: impl Iterator<Item = f64>, all: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = all.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mut count = vec![0usize; n + 1];
    let mut sum = vec![0.0f64; n + 1];
    let (mut seen, mut seen_sum) = (0usize, 0.0f64);
    let mut out = Vec::with_capacity(n + 1);
    out.push(0.0);
    let mut acc = 0.0;
    for v in order {
        // Rank among the values: equal values may take any of their ranks (|v − v| = 0).
        let rank = sorted.partition_point(|x| x.total_cmp(&v).is_lt());
        // Points seen so far below this rank.
        let (mut below, mut below_sum) = (0usize, 0.0f64);
        let mut i = rank;
        while i > 0 {
            below += count[i];
            below_sum += sum[i];
            i &= i - 1;
        }
        acc += v * below as f64 - below_sum + (seen_sum - below_sum) - v * (seen - below) as f64;
        let mut i = rank + 1;
        while i <= n {
            count[i] += 1;
            sum[i] += v;
            i += i & i.wrapping_neg();
        }
        seen += 1;
        seen_sum += v;
        out.push(acc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` points of standard normal noise (Box–Muller) around `level`, scaled by `sd`.
    fn noise(rng: &mut Rng, n: usize, level: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let (u, v) = (1.0 - rng.next_f64(), rng.next_f64());
                level + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
            })
            .collect()
    }

    fn brute_within(xs: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..xs.len() {
            for j in i + 1..xs.len() {
                s += (xs[i] - xs[j]).abs();
            }
        }
        s
    }

    #[test]
    fn the_fenwick_sums_are_the_pairwise_sums() {
        let mut rng = Rng::new(3);
        let mut xs = noise(&mut rng, 40, 100.0, 5.0);
        xs[7] = xs[3]; // a tie
        let pre = prefix_within_sums(xs.iter().copied(), &xs);
        let suf = prefix_within_sums(xs.iter().rev().copied(), &xs);
        for k in 0..=xs.len() {
            assert!((pre[k] - brute_within(&xs[..k])).abs() < 1e-7, "prefix {k}");
            assert!((suf[k] - brute_within(&xs[xs.len() - k..])).abs() < 1e-7, "suffix {k}");
        }
    }

    #[test]
    fn a_step_of_known_size_is_found_where_it_is() {
        for seed in 0..20 {
            let mut rng = Rng::new(seed);
            let mut xs = noise(&mut rng, 15, 100.0, 1.0);
            xs.extend(noise(&mut rng, 12, 105.0, 1.0));
            let cps = e_divisive(&xs, &EDivisive { seed, ..EDivisive::default() }).unwrap();
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?}");
            assert_eq!(cps[0].index, 15, "seed {seed}");
            assert!(cps[0].p_value <= 0.01 && cps[0].statistic > 0.0);
        }
    }

    #[test]
    fn a_flat_noisy_series_has_no_change_for_at_least_95_percent_of_seeds() {
        let trials = 200;
        let mut false_alarms = 0;
        for seed in 0..trials {
            let mut rng = Rng::new(1000 + seed);
            let xs = noise(&mut rng, 30, 100.0, 3.0);
            if !e_divisive(&xs, &EDivisive { seed, ..EDivisive::default() }).unwrap().is_empty() {
                false_alarms += 1;
            }
        }
        eprintln!("flat series with a change: {false_alarms} of {trials}");
        assert!(false_alarms * 20 <= trials, "{false_alarms} of {trials} flat series had a change");
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut rng = Rng::new(7);
        let mut xs = noise(&mut rng, 12, 50.0, 0.5);
        xs.extend(noise(&mut rng, 12, 60.0, 0.5));
        xs.extend(noise(&mut rng, 12, 45.0, 0.5));
        let cps = e_divisive(&xs, &EDivisive::default()).unwrap();
        let at: Vec<usize> = cps.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![12, 24], "{cps:?}");
    }

    #[test]
    fn too_short_or_constant_series_have_none() {
        let cfg = EDivisive::default();
        assert!(e_divisive(&[], &cfg).unwrap().is_empty());
        assert!(e_divisive(&[1.0, 2.0, 3.0, 40.0, 41.0], &cfg).unwrap().is_empty(), "under 2 × min_size");
        assert!(e_divisive(&[5.0; 30], &cfg).unwrap().is_empty(), "constant");
        // Six points 3 + 3: a permutation p-value can never reach 1 % (20 ways to split them).
        assert!(e_divisive(&[1.0, 1.1, 0.9, 9.0, 9.1, 8.9], &cfg).unwrap().is_empty());
    }

    #[test]
    fn not_a_number_is_an_error_not_a_panic() {
        let cfg = EDivisive::default();
        let mut xs = vec![1.0; 20];
        xs[4] = f64::NAN;
        assert!(matches!(e_divisive(&xs, &cfg), Err(StatsError::NotFinite { index: 4, .. })));
        xs[4] = f64::INFINITY;
        assert!(matches!(e_divisive(&xs, &cfg), Err(StatsError::NotFinite { index: 4, .. })));
    }

    #[test]
    fn the_same_input_and_seed_give_the_same_answer() {
        let mut rng = Rng::new(11);
        let mut xs = noise(&mut rng, 10, 10.0, 1.0);
        xs.extend(noise(&mut rng, 10, 11.5, 1.0));
        let cfg = EDivisive::default();
        assert_eq!(e_divisive(&xs, &cfg).unwrap(), e_divisive(&xs, &cfg).unwrap());
        // Scaling the series scales nothing that matters: the same change points.
        let scaled: Vec<f64> = xs.iter().map(|x| x * 1000.0).collect();
        let idx = |v: &[f64]| e_divisive(v, &cfg).unwrap().iter().map(|c| c.index).collect::<Vec<_>>();
        assert_eq!(idx(&xs), idx(&scaled));
    }
}
