//! Stages that are not one of the paper's rows as measured (SEED-MAP revision 4): a combined
//! stage spanning two of the paper's rows goes on one merged row beside the sum of their
//! figures ([`merge`], [`answer_merged`]); a stage that is an estimate rather than timed inside
//! the operation stands beside its total with no ratio, and never below 0 ([`estimated`]).

use super::{Reading, RowStatus, SeedRow, fmt_ns, fmt_value, sig3};
use model::Unit;
use papers::{Estimate, Figure};

/// Makes `row` (the first of `spans`) the merged row of a combined stage: its operation joins
/// the spanned rows', its figure is the sum of theirs, in time and in cycles where each has
/// one, and `merged` says what was summed. The ratio then set on the row is against that sum.
pub(super) fn merge(row: &mut SeedRow, spans: &[&Figure]) {
    if spans.len() < 2 {
        return;
    }
    let op = |f: &Figure| f.operation.trim_start_matches("notification: ").to_string();
    let sum = |v: &dyn Fn(&Figure) -> Option<f64>| spans.iter().map(|f| v(f)).sum::<Option<f64>>();
    let value: f64 = spans.iter().map(|f| f.value).sum();
    let unit = match row.then_unit.as_str() {
        "us" => "µs",
        u => u,
    };
    let parts: Vec<String> = spans.iter().map(|f| format!("“{}” ({} {unit})", op(f), f.value)).collect();
    let prefix = if row.operation.starts_with("notification: ") { "notification: " } else { "" };
    row.operation = format!("{prefix}{}", spans.iter().map(|f| op(f)).collect::<Vec<_>>().join(" + "));
    row.then = value;
    row.then_ns = sum(&|f| f.then_ns());
    row.then_cycles = sum(&|f| f.then_cycles());
    row.merged = Some(format!(
        "merged: today's stage spans the paper's rows {}, so it is compared with their sum, {value} {unit}, never \
         with one of them",
        parts.join(" and ")
    ));
}

/// The rows a merged row answers besides its own: each becomes [`RowStatus::Merged`], naming
/// the merged row, unless it has a figure of its own (the stages timed apart). `rows` is in
/// the order of `figures`.
pub(super) fn answer_merged(figures: &[Figure], rows: &mut [SeedRow]) {
    for (i, f) in figures.iter().enumerate() {
        let Some(into) = papers::merged_into(f) else { continue };
        let Some(j) = figures.iter().position(|g| g == into) else { continue };
        let (Some(merged), Some(row)) = (rows.get(j).filter(|r| r.merged.is_some()).cloned(), rows.get_mut(i)) else {
            continue;
        };
        if row.status == RowStatus::Measured {
            continue;
        }
        row.status = RowStatus::Merged;
        row.reason = Some(format!("on the merged row “{}”, against the sum of both rows' figures", merged.label()));
    }
}

/// Makes `row` an estimated stage: labelled `estimated: <how>` (k crossings × c for a trap
/// counted by the RVM), shown beside its total with no ratio; an estimate below 0 shows no
/// figure ("< 0: not resolved"). `unit` is the result's, `hz` the run's counter frequency.
pub(super) fn estimated(
    row: &mut SeedRow,
    estimate: Estimate,
    total: Option<f64>,
    crossings: Option<(f64, f64)>,
    unit: Unit,
    hz: Option<f64>,
) {
    row.estimated = Some(match crossings {
        Some((k, c)) => format!(
            "estimated: {} kernel crossings × {} (the operation's own system calls, counted by the RVM in the same \
             samples, no fault inside (checked); each at the cost of a null system call (getppid) timed separately \
             beside the operation, not inside it): no ratio",
            sig3(k),
            fmt_ns(c)
        ),
        None => format!("estimated: {}, not timed inside the operation: no ratio", estimate.how),
    });
    row.today_unit = Some(if unit == Unit::Bytes { "bytes" } else { "ns" }.into());
    row.reading = Some(Reading::Estimated);
    row.below_resolution = None;
    let stat = row.today_mean.or(row.today_median);
    if stat.is_some_and(|v| v < 0.0) {
        row.unresolved = Some("< 0: not resolved".into());
        row.today_mean = None;
        row.today_median = None;
        row.today_ci95_lo = None;
        row.today_ci95_hi = None;
    } else {
        if row.today_median.is_some_and(|v| v < 0.0) {
            row.today_median = None;
        }
        row.today_cycles = stat.zip(hz).map(|(v, h)| v * h / 1e9).filter(|c| c.is_finite() && unit == Unit::Ns);
    }
    if let Some(t) = total {
        let also = format!("beside its total, {}", fmt_value(unit, t));
        row.beside = Some(match row.beside.take() {
            Some(b) => format!("{also}; {b}"),
            None => also,
        });
    }
}
