//! The seed rows in retired instructions (L4Ka::Pistachio's): the count the hardware made in
//! the result that answers a row, or the difference of two results' counts (the address-space
//! switch: a process switch minus a thread switch); or why the run has none.

use super::{
    Interval, Lookup, RowStatus, RunFile, SeedRow, Today, Want, lookup, name_today, read_ratio, seeds, without,
};
use model::Row;

/// An L4 row in retired instructions: the per-operation instructions the hardware counted in
/// the result that answers it (the fastest in time of several, as for its row in cycles), its
/// ratio then ÷ now with the interval of today's mean; or why there are none.
pub(super) fn row(run: &RunFile, c: seeds::Candidates, mut row: SeedRow) -> SeedRow {
    let stat = |t: &Today| t.mean.or(t.median).unwrap_or(f64::INFINITY);
    let mut found: Vec<(Want, &Row, Today)> = c
        .candidates
        .iter()
        .filter_map(|&w| match lookup(run, w) {
            Lookup::Found(r, t) => Some((w, r, t)),
            _ => None,
        })
        .collect();
    found.sort_by(|a, b| stat(&a.2).total_cmp(&stat(&b.2)));
    let time_id = c.candidates.iter().map(|w| w.id).collect::<Vec<_>>().join(", ");
    let Some(&(want, r, _)) = found.first() else {
        let why = counters_missing(run);
        return without(row, RowStatus::NeedsCounters, format!("retired instructions; the time is {time_id}'s{why}"));
    };
    name_today(&mut row, &want);
    if !c.why.is_empty() {
        row.nearest = Some(c.why.to_string());
    }
    let counted = r.counters.as_ref().and_then(|k| k.event("instructions"));
    let Some(n) = counted.filter(|n| n.per_op.is_finite() && n.per_op > 0.0) else {
        let why = r
            .counters
            .as_ref()
            .and_then(|k| k.missing.iter().find(|m| m.event == "instructions"))
            .map(|m| format!("; {}", m.reason))
            .unwrap_or_else(|| counters_missing(run));
        return without(row, RowStatus::NeedsCounters, format!("retired instructions; the time is {}'s{why}", want.id));
    };
    row.today_unit = Some("instructions".into());
    row.today_mean = Some(n.per_op);
    row.today_statistic = Some("mean".into());
    row.today_ci95_lo = Some(n.ci95[0]);
    row.today_ci95_hi = Some(n.ci95[1]);
    let now = Interval::new(n.per_op, n.ci95);
    let (ratio, reading) = read_ratio(Some(row.then), Some(now), false);
    row.ratio_count = ratio.map(|x| x.estimate);
    row.ratio_count_ci95_lo = ratio.map(|x| x.ci95[0]);
    row.ratio_count_ci95_hi = ratio.map(|x| x.ci95[1]);
    row.reading = reading;
    row.beside = Some("retired instructions per operation, counted by the PMU (the measuring thread's)".into());
    row
}

/// L4's address-space switch in retired instructions: the first result's count minus the
/// second's (a process switch minus a thread switch), where both carry counts, with the
/// interval of the difference end to end (conservative: the two are counted apart); a
/// difference, so below resolution where that interval includes 0. Otherwise why not.
pub(super) fn difference_row(run: &RunFile, a: Want, b: Want, mut row: SeedRow) -> SeedRow {
    row.today_id = Some(format!("{} − {}", a.id, b.id));
    row.today_params =
        (!a.params.is_empty()).then(|| a.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
    let count = |w: Want| -> Result<(f64, [f64; 2]), String> {
        let Lookup::Found(r, _) = lookup(run, w) else {
            return Err(format!("{} has no figures in this result", w.id));
        };
        let counted = r.counters.as_ref().and_then(|k| k.event("instructions"));
        match counted.filter(|n| n.per_op.is_finite() && n.per_op > 0.0 && n.ci95.iter().all(|x| x.is_finite())) {
            Some(n) => Ok((n.per_op, n.ci95)),
            None => Err(r
                .counters
                .as_ref()
                .and_then(|k| k.missing.iter().find(|m| m.event == "instructions"))
                .map(|m| m.reason.clone())
                .unwrap_or_else(|| format!("{} has no instruction counts", w.id))),
        }
    };
    // Counters the run did not ask for, or could not have: the run's reason, as on the other rows.
    let run_why = counters_missing(run);
    if !run_why.is_empty() {
        let of = format!("the difference is {} − {}'s", a.id, b.id);
        return without(row, RowStatus::NeedsCounters, format!("retired instructions; {of}{run_why}"));
    }
    let (x, y) = match (count(a), count(b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(why), _) | (_, Err(why)) => {
            let of = format!("the difference is {} − {}'s", a.id, b.id);
            return without(row, RowStatus::NeedsCounters, format!("retired instructions; {of}; {why}"));
        }
    };
    let now = Interval::new(x.0 - y.0, [x.1[0] - y.1[1], x.1[1] - y.1[0]]);
    row.today_unit = Some("instructions".into());
    row.today_mean = Some(now.estimate);
    row.today_statistic = Some("mean".into());
    row.today_ci95_lo = Some(now.ci95[0]);
    row.today_ci95_hi = Some(now.ci95[1]);
    row.below_resolution = now.includes_zero().then(|| now.bound()).filter(|b| b.is_finite());
    let (ratio, reading) = read_ratio(Some(row.then), Some(now), true);
    row.ratio_count = ratio.map(|x| x.estimate);
    row.ratio_count_ci95_lo = ratio.map(|x| x.ci95[0]);
    row.ratio_count_ci95_hi = ratio.map(|x| x.ci95[1]);
    row.reading = reading;
    row.beside = Some(format!(
        "retired instructions per operation counted by the PMU: {} {} − {} {}",
        a.id,
        crate::sig4(x.0),
        b.id,
        crate::sig4(y.0)
    ));
    row
}

/// Why the run has no retired instructions: not asked for (`--counters`), or the reason the
/// run's probe gave (no PMU, `perf_event_paranoid`); as a clause to append, empty when it had
/// them.
fn counters_missing(run: &RunFile) -> String {
    match &run.counters {
        None => "; counters were not asked for (--counters)".into(),
        Some(a) => {
            a.missing.iter().find(|m| m.event == "instructions").map(|m| format!("; {}", m.reason)).unwrap_or_default()
        }
    }
}
