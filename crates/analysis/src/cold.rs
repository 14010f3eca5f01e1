//! A cold-cache row against its hot twin (`cache=cold` beside `cache=hot`, `bench::cold`):
//! the ratio of their medians with its 95 % interval, from the pairs each round took
//! (`Samples::hot_twin_ns`), and the flag when cold is not slower.

use model::{ColdHot, ColdHotCount, Flag, Measured, Row, TimerInfo};

/// The bootstrap seed of the cold/hot ratio.
pub const COLD_HOT_SEED: u64 = 0x00c0_1d07;

/// Below this many timer steps a hot twin cannot be told from a slightly slower cold sample.
pub const RESOLVABLE_STEPS: f64 = 4.0;

/// The interval is too wide to judge when its width exceeds this share of the ratio.
pub const WIDE_REL: f64 = 0.5;

/// Sets `row.cold_hot` from the rounds `ok` of a cold row (samples paired with their hot
/// twins), notes the timing of single operations, and flags [`Flag::ColdNotSlower`] with its
/// likely reason when the ratio's interval reaches 1. Does nothing for rows without twins.
pub fn add_cold_hot(row: &mut Row, ok: &[&Measured], timer: &TimerInfo, resamples: usize) {
    let rounds: Vec<(&[f64], &[f64])> = ok
        .iter()
        .filter(|m| !m.samples.hot_twin_ns.is_empty())
        .map(|m| (m.samples.per_op_ns.as_slice(), m.samples.hot_twin_ns.as_slice()))
        .collect();
    if rounds.is_empty() {
        return;
    }
    let pairs: usize = rounds.iter().map(|(a, b)| a.len().min(b.len())).sum();
    let mut hot: Vec<f64> = rounds.iter().flat_map(|r| r.1.iter().copied()).collect();
    let hot_median_ns = stats::median_in_place(&mut hot);
    row.notes.push(format!(
        "cold-cache mode: each sample is one operation after the caches, TLB and branch predictors were \
         disturbed, paired with its hot twin (the same operation timed alone right after); timer step {:.2} ns, \
         the overhead of the same region shape subtracted from every sample",
        timer.resolution_ns
    ));
    // A hot twin below one timer step (an operation of a few instructions) is counted as one
    // step: the ratio is then a lower bound.
    let step = timer.resolution_ns;
    let hot_below_step = hot_median_ns < step && step > 0.0;
    let floored: Vec<Vec<f64>> =
        rounds.iter().map(|(_, h)| h.iter().map(|&v| if hot_below_step { v.max(step) } else { v }).collect()).collect();
    let rounds: Vec<(&[f64], &[f64])> = rounds.iter().zip(&floored).map(|((c, _), h)| (*c, h.as_slice())).collect();
    let Some(q) = stats::ratio::paired_median_ratio(&rounds, resamples, COLD_HOT_SEED) else {
        row.notes.push(format!("no cold/hot ratio: the hot twins' median is {hot_median_ns:.1} ns"));
        return;
    };
    let counts = cold_hot_counts(row);
    row.cold_hot = Some(ColdHot { ratio: q.estimate, ci: q.ci95, hot_median_ns, pairs, hot_below_step, counts });
    if q.ci95[0] <= 1.0 {
        let why = if hot_median_ns < RESOLVABLE_STEPS * timer.resolution_ns {
            format!(
                "the hot twin ({hot_median_ns:.1} ns) is within {RESOLVABLE_STEPS} timer steps ({:.2} ns each): \
                 the counter cannot tell the two apart",
                timer.resolution_ns
            )
        } else if (q.ci95[1] - q.ci95[0]) > WIDE_REL * q.estimate {
            format!(
                "the interval is wide ({pairs} pairs on a noisy machine): more pairs (a larger --budget) or a \
                 quieter CPU would decide it"
            )
        } else {
            "its cost lies where the disturbance does not reach or the operation refills by itself: the \
             hypervisor's exits, the kernel's huge-page TLB entries and slab state, or fresh memory it touches \
             for the first time either way"
                .to_string()
        };
        row.add_flag(
            Flag::ColdNotSlower,
            format!(
                "cold is not slower than its hot twin: cold/hot {:.2}× [{:.2}, {:.2}]; likely: {why}",
                q.estimate, q.ci95[0], q.ci95[1]
            ),
        );
    }
}

/// Each event counted for both the cold samples ([`Row::counters`]) and their hot twins
/// ([`Row::counters_hot`]): the two means per operation side by side; empty without counts.
fn cold_hot_counts(row: &Row) -> Vec<ColdHotCount> {
    let (Some(cold), Some(hot)) = (&row.counters, &row.counters_hot) else {
        return Vec::new();
    };
    cold.events
        .iter()
        .filter_map(|c| {
            hot.event(&c.event).map(|h| ColdHotCount {
                event: c.event.clone(),
                cold_per_op: c.per_op,
                hot_per_op: h.per_op,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Method, Params, Samples};

    fn paired(cold: Vec<f64>, hot: Vec<f64>) -> Measured {
        Measured::new(
            Samples { per_op_ns: cold, hot_twin_ns: hot, iterations_per_sample: 1, ..Samples::default() },
            Vec::new(),
        )
    }

    fn row() -> Row {
        Row::empty("syscall.null", "", Params::new(), Method::Adaptive)
    }

    #[test]
    fn a_cold_row_slower_than_its_twin_gets_the_ratio_and_no_flag() {
        let rounds: Vec<Measured> = (0..3)
            .map(|r| {
                let hot: Vec<f64> = (0..40).map(|i| 100.0 + ((i * 7 + r) % 5) as f64).collect();
                paired(hot.iter().map(|h| h * 3.0).collect(), hot)
            })
            .collect();
        let ok: Vec<&Measured> = rounds.iter().collect();
        let mut row = row();
        add_cold_hot(&mut row, &ok, &TimerInfo::for_tests(), 500);
        let c = row.cold_hot.clone().expect("a ratio");
        assert!((c.ratio - 3.0).abs() < 1e-9 && c.ci[0] <= 3.0 && c.ci[1] >= 3.0, "{c:?}");
        assert_eq!(c.pairs, 120);
        assert!(!row.flags.contains(&Flag::ColdNotSlower));
    }

    #[test]
    fn a_cold_row_no_slower_than_its_twin_is_flagged_with_a_reason() {
        let hot: Vec<f64> = (0..60).map(|i| 500.0 + (i % 9) as f64 * 20.0).collect();
        let cold: Vec<f64> = hot.iter().rev().copied().collect();
        let m = paired(cold, hot);
        let mut row = row();
        add_cold_hot(&mut row, &[&m], &TimerInfo::for_tests(), 500);
        assert!(row.flags.contains(&Flag::ColdNotSlower));
        assert!(
            row.notes.iter().any(|n| n.starts_with("cold is not slower than its hot twin") && n.contains("likely:"))
        );
    }

    #[test]
    fn a_hot_twin_below_the_timer_step_gives_a_lower_bound() {
        let step = TimerInfo::for_tests().resolution_ns;
        let m = paired(vec![50.0 * step; 30], vec![0.0; 30]);
        let mut row = row();
        add_cold_hot(&mut row, &[&m], &TimerInfo::for_tests(), 100);
        let c = row.cold_hot.expect("a bound");
        assert!(c.hot_below_step && (c.ratio - 50.0).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn a_row_without_twins_is_left_alone() {
        let m = Measured::new(Samples { per_op_ns: vec![1.0, 2.0], ..Samples::default() }, Vec::new());
        let mut row = row();
        add_cold_hot(&mut row, &[&m], &TimerInfo::for_tests(), 100);
        assert!(row.cold_hot.is_none() && row.notes.is_empty());
    }
}
