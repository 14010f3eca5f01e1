//! What the pairs of `osprim ab` say: per row, the ratio B / A of the typical pair, its interval
//! from a confidence sequence, the verdict, and when to stop adding pairs. Reads no clock and
//! prints nothing.
//!
//! **Pairs.** Each pair is an A round and a B round measured together (one after the other on
//! one CPU in a random balanced order, or at the same time on two CPUs), each in a fresh worker
//! process, both started with the same memory layout. A row's figure in a round is the median
//! of its samples in that round; the pair's log-ratio is `d = ln(B / A)`. What moves the
//! machine from one moment or process to the next moves both halves of a pair alike, and
//! cancels in `d`.
//!
//! **The ratio** is `exp(median d)`: the change of the typical pair. Its interval is the
//! confidence sequence for a median of [`stats::sequential`] (Howard & Ramdas 2022), mapped
//! through `exp` (so it stays positive): valid at every look, so that stopping a row the moment
//! it is decided does not bias it, and free of any assumption on how the pairs are distributed
//! but their independence. The median, not the mean: a pair that meets a noisy moment on one
//! side pulls a mean and not a median (the module doc of `stats::sequential` shows the mean's
//! sequence failing in 30 % of such sequences).
//!
//! **Verdict** as `compare`'s ([`stats::reading::judge_ratio`]): `slower` when the interval
//! lies above 1 and the ratio beyond the noise threshold, `faster` likewise below, `no change`
//! when the interval lies within the threshold, `inconclusive` otherwise. A row is **decided**
//! once it has [`MIN_PAIRS`] pairs and a verdict other than `inconclusive`; it gets no more
//! pairs. Each row's sequence has error rate [`ALPHA`] over all its looks; across rows the
//! expected share of rows wrongly called different is at most that (the simulations of
//! `stats::sequential` find about 2 %), and `osprim ab --check` measures it on the machine.

use crate::compare::{Compared, Comparison, Mark, Side, Statistic, UNTRUSTWORTHY, Verdict};
use model::ab::{AbFile, AbRow, Decision, RowPair};
use model::{Flag, Row, RunFile};
use stats::reading::{Interval, RatioVerdict, judge_ratio};
use stats::sequential::MedianSequence;

/// Each row's error rate over all its looks.
pub const ALPHA: f64 = 0.05;

/// How an A/B result's rows are judged, as [`Comparison::method`] names it: each row by its
/// own confidence sequence at [`ALPHA`], no selection across rows (module doc).
pub const JUDGED_BY: &str = "confidence_sequence";

/// The number of pairs at which the sequence is tightest: about what a minute's budget gives a
/// family of rows on a small machine.
pub const TIGHTEST_AT: f64 = 30.0;

/// Fewest pairs before a row may be decided (the sequence is unbounded before about 10).
pub const MIN_PAIRS: usize = 10;

/// The confidence sequence every row uses.
pub fn sequence() -> MedianSequence {
    MedianSequence::new(ALPHA, TIGHTEST_AT)
}

/// The method in words, as recorded in the result file.
pub const METHOD: &str = "ratio B/A = exp(median over pairs of ln(B/A)), each side's figure its round's median; \
                          interval: confidence sequence for the median (Howard & Ramdas 2022, normal mixture), \
                          valid at every look";

/// The decision the pairs `pairs` give under noise threshold `noise`; `decided_after` is left
/// to the caller, who knows when it stopped.
pub fn decide(pairs: &[RowPair], noise: f64) -> Decision {
    let logs: Vec<f64> = pairs.iter().filter(|p| p.a > 0.0 && p.b > 0.0).map(|p| (p.b / p.a).ln()).collect();
    let Some(m) = sequence().interval(&logs) else {
        return Decision { verdict: verdict_text(Verdict::Inconclusive), ..Decision::default() };
    };
    let ratio = m.median.exp();
    let ci = [m.interval[0].exp(), m.interval[1].exp()];
    let bounded = m.bounded() && ci[0] > 0.0;
    let verdict = if bounded && logs.len() >= MIN_PAIRS {
        match judge_ratio(&Interval::new(ratio, ci), noise) {
            RatioVerdict::Above => Verdict::Slower,
            RatioVerdict::Below => Verdict::Faster,
            RatioVerdict::Same => Verdict::NoChange,
            RatioVerdict::Inconclusive => Verdict::Inconclusive,
        }
    } else {
        Verdict::Inconclusive
    };
    Decision {
        verdict: verdict_text(verdict),
        ratio: Some(ratio),
        ratio_ci95: bounded.then_some(ci),
        decided_after: None,
    }
}

/// Whether a decision settles its row.
pub fn is_decided(d: &Decision) -> bool {
    parse_verdict(&d.verdict).is_some_and(|v| v != Verdict::Inconclusive)
}

/// A verdict as the file writes it (`no_change`).
pub fn verdict_text(v: Verdict) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// The verdict a file wrote.
pub fn parse_verdict(text: &str) -> Option<Verdict> {
    Verdict::ALL.into_iter().find(|v| verdict_text(*v) == text)
}

/// The row of `run` with `row`'s id and parameters.
fn side_row<'r>(run: &'r RunFile, row: &AbRow) -> Option<&'r Row> {
    run.results.iter().find(|r| r.id == row.id && r.params == row.params)
}

/// The untrustworthy flags raised on a side's row.
fn flags(r: Option<&Row>) -> Vec<Flag> {
    let Some(r) = r else { return Vec::new() };
    UNTRUSTWORTHY
        .into_iter()
        .filter(|f| r.flags.contains(f) || (*f == Flag::CheckFailed && r.validation.verdict == model::Verdict::Failed))
        .collect()
}

/// The A/B result as a comparison of B (new) against A (base), for the writers and the gate of
/// `compare`: per row the median of each side's figures, the ratio and its interval from
/// the sequence, the verdict, and the marks of either side's row. Rows without a complete
/// pair are unmatched, with why.
pub fn comparison(ab: &AbFile) -> Comparison {
    let mut compared = Vec::new();
    let mut unmatched = Vec::new();
    for row in &ab.rows {
        if row.pairs.is_empty() {
            let why = row.note.clone().unwrap_or_else(|| "no complete pair".to_string());
            unmatched.push(crate::compare::Unmatched { id: row.id.clone(), params: row.params.clone(), why });
            continue;
        }
        let median = |f: &dyn Fn(&RowPair) -> f64| {
            let mut v: Vec<f64> = row.pairs.iter().map(f).collect();
            stats::median_in_place(&mut v)
        };
        let (fa, fb) = (flags(side_row(&ab.a_run, row)), flags(side_row(&ab.b_run, row)));
        let marks = UNTRUSTWORTHY
            .into_iter()
            .filter_map(|flag| {
                let side = match (fa.contains(&flag), fb.contains(&flag)) {
                    (true, true) => Side::Both,
                    (true, false) => Side::Base,
                    (false, true) => Side::New,
                    (false, false) => return None,
                };
                Some(Mark { flag, side })
            })
            .collect();
        compared.push(Compared {
            id: row.id.clone(),
            params: row.params.clone(),
            unit: row.unit,
            statistic: Statistic::Median,
            base_value: median(&|p| p.a),
            new_value: median(&|p| p.b),
            ratio: row.decision.ratio_ci95.and(row.decision.ratio),
            ratio_ci95: row.decision.ratio_ci95,
            ci_level: row.decision.ratio_ci95.map(|_| 1.0 - ALPHA),
            p_value: None,
            selected: true,
            within_machine_movement: false,
            below_resolution: None,
            verdict: parse_verdict(&row.decision.verdict).unwrap_or(Verdict::Inconclusive),
            no_ratio: None,
            marks,
            param_differences: Vec::new(),
            cold_not_slower: None,
        });
    }
    let family = compared.len();
    Comparison {
        noise: ab.design.noise,
        method: JUDGED_BY,
        q: ALPHA,
        family,
        selected: family,
        confidence: 1.0 - ALPHA,
        // The two sides were measured together: what moved the machine moved both halves of a
        // pair, and there is no separate reading of it.
        machine: crate::compare::Movement::default(),
        compared,
        unmatched,
        differences: crate::compare::differences(&ab.a_run, &ab.b_run),
    }
}

/// What an A against A check found: rows called different (false alarms), rows called
/// `no change`, and rows judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FalseAlarms {
    /// Rows called `slower` or `faster`.
    pub different: usize,
    /// Rows called `no change`.
    pub no_change: usize,
    /// Rows with at least one complete pair.
    pub rows: usize,
}

/// The false alarms of an A/B result (meaningful for `--check`, where A and B are the same).
pub fn false_alarms(ab: &AbFile) -> FalseAlarms {
    let mut f = FalseAlarms::default();
    for row in ab.rows.iter().filter(|r| !r.pairs.is_empty()) {
        f.rows += 1;
        match parse_verdict(&row.decision.verdict) {
            Some(Verdict::Slower | Verdict::Faster) => f.different += 1,
            Some(Verdict::NoChange) => f.no_change += 1,
            _ => {}
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::rng::Rng;

    fn normal(rng: &mut Rng) -> f64 {
        let u = rng.next_f64().max(1e-300);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * rng.next_f64()).cos()
    }

    /// `n` pairs whose B is `ratio` × A, each side with its own process level (SD `sd`) and a
    /// common machine level that moves both.
    fn pairs(n: usize, ratio: f64, sd: f64, seed: u64) -> Vec<RowPair> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|pair| {
                let machine = 200.0 * (0.2 * normal(&mut rng)).exp();
                RowPair {
                    pair,
                    a: machine * (sd * normal(&mut rng)).exp(),
                    b: ratio * machine * (sd * normal(&mut rng)).exp(),
                }
            })
            .collect()
    }

    #[test]
    fn a_real_slowdown_is_called_slower_and_the_same_condition_no_change() {
        let slow = decide(&pairs(40, 1.15, 0.03, 1), 0.02);
        assert_eq!(slow.verdict, "slower", "{slow:?}");
        let [lo, hi] = slow.ratio_ci95.unwrap();
        assert!(lo > 1.0 && lo <= slow.ratio.unwrap() && slow.ratio.unwrap() <= hi);
        let same = decide(&pairs(60, 1.0, 0.01, 2), 0.02);
        assert_eq!(same.verdict, "no_change", "{same:?}");
        assert!(is_decided(&same) && is_decided(&slow));
    }

    #[test]
    fn no_decision_before_the_fewest_pairs_nor_from_an_unbounded_interval() {
        let d = decide(&pairs(MIN_PAIRS - 1, 2.0, 0.001, 3), 0.02);
        assert_eq!(d.verdict, "inconclusive");
        assert!(!is_decided(&d));
        let none = decide(&[], 0.02);
        assert_eq!((none.verdict.as_str(), none.ratio), ("inconclusive", None));
    }

    #[test]
    fn stopping_each_row_when_decided_keeps_false_alarms_under_the_error_rate() {
        // 400 rows of A against A, a pair added at a time until decided or 80 pairs: the share
        // called different stays under ALPHA, and most are called no change.
        let (mut different, mut same, rows) = (0usize, 0usize, 400usize);
        for seed in 0..rows {
            let all = pairs(80, 1.0, 0.02, 1000 + seed as u64);
            let mut verdict = String::new();
            for n in 1..=all.len() {
                let d = decide(&all[..n], 0.02);
                verdict = d.verdict.clone();
                if is_decided(&d) {
                    break;
                }
            }
            different += usize::from(verdict == "slower" || verdict == "faster");
            same += usize::from(verdict == "no_change");
        }
        eprintln!("A against A, 400 rows: {different} called different, {same} no change");
        assert!((different as f64) / (rows as f64) <= ALPHA, "{different}");
        assert!(same * 4 >= rows * 3, "{same}");
    }
}
