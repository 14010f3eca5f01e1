//! Tests of the seed map's revision 4 in the view: merged rows of combined stages, estimated
//! stages, below resolution for differences only, summaries over every total with a ratio,
//! unresolved rows not answered, skipped records matched by their parameters, and L4's
//! address-space switch in instructions as a difference of counts.

use super::*;
use model::Stage;

/// The seed row of `platform`'s VMMC `op` (the operation's end).
fn vmmc<'a>(rows: &'a [SeedRow], platform: &str, op: &str) -> &'a SeedRow {
    rows.iter()
        .find(|r| {
            let own = r.operation.trim_start_matches("notification: ");
            r.paper == "VMMC" && r.platform == platform && (own == op || own.starts_with(&format!("{op} + ")))
        })
        .unwrap_or_else(|| panic!("{platform} {op}"))
}

/// `run` with stage `combined` of `id`'s result split into `first` (a share `part` of it) and
/// `second`, so that the stages still add up to the total.
fn split_stage(mut run: RunFile, id: &str, combined: &str, first: &str, second: &str, part: f64) -> RunFile {
    let r = run.results.iter_mut().find(|r| r.id == id).expect("in the fixture");
    let stages = r.breakdown.as_mut().expect("a breakdown");
    let at = stages.iter().position(|s| s.name == combined).expect("the combined stage");
    let whole = stages.remove(at);
    let scaled = |share: f64| {
        let mut s = whole.summary.clone();
        (s.mean, s.median) = (s.mean * share, s.median * share);
        s.mean_ci95 = s.mean_ci95.map(|x| x * share);
        s.median_ci95 = s.median_ci95.map(|x| x * share);
        s
    };
    stages.insert(at, Stage { name: second.into(), summary: scaled(1.0 - part) });
    stages.insert(at, Stage { name: first.into(), summary: scaled(part) });
    run
}

/// Item 1: where one stage spans two of the paper's rows (tracepoints not readable, the
/// softirq's start not seen), it is one merged row against their sum (10 + 17 = 27 µs on Linux,
/// 18 + 16 = 34 µs on NT), never against one of them; the row it also answers is accounted, not
/// "without a figure". Where the stages are apart, the rows stay apart.
#[test]
fn a_combined_stage_is_one_merged_row_against_the_sum_of_the_rows_it_spans() {
    let run = default_run();
    let rows = rows(&run);
    for (platform, first, second, sum, stage) in [
        ("Linux", "interrupt to driver handler", "handler to user-level handler via signal", 27.0, "interrupt_signal"),
        (
            "Windows NT",
            "interrupt to DPC handler start",
            "DPC to user-level handler thread wakeup",
            34.0,
            "driver_to_wakeup",
        ),
    ] {
        let merged = vmmc(&rows, platform, first);
        assert_eq!(merged.today_stage.as_deref(), Some(stage), "{platform}");
        assert_eq!((merged.then, merged.then_ns), (sum, Some(sum * 1e3)), "{platform}");
        assert!(merged.operation.contains(" + ") && merged.label().ends_with("(merged)"), "{platform}");
        assert!(merged.merged.as_deref().is_some_and(|m| m.contains(&format!("{sum} µs"))), "{merged:?}");
        let mean = merged.today_mean.unwrap();
        if let Some(x) = merged.ratio_time {
            assert!((x - sum * 1e3 / mean).abs() <= 1e-9 * x, "{platform}: against the sum");
        }
        let answered = vmmc(&rows, platform, second);
        assert_eq!(answered.status, RowStatus::Merged, "{platform}");
        assert!(answered.reason.as_deref().is_some_and(|w| w.contains("merged row")), "{answered:?}");
    }
    let text = flat(&render(&run, &view(100)));
    assert!(!text.contains("combined here"), "no row of a combined stage is left without a figure");
    assert!(text.contains("VMMC (Chen et al., USENIX Windows NT Symposium 1999): 9 of 9 rows compared"), "{text}");
    assert!(text.contains("4 on 2 merged rows"), "{text}");
    let all = render(&run, &View { all_rows: true, ..view(100) });
    assert!(flat(&all).contains("on the merged row"), "--all-rows says where the row is answered");

    // The stages timed apart (a private tracefs as root; the softirq's start seen): the rows
    // stay apart, each against its own figure.
    let apart = split_stage(run, "notify.signal", "interrupt_signal", "interrupt", "signal", 0.4);
    let apart = split_stage(apart, "notify.softirq", "driver_to_wakeup", "driver_to_softirq", "softirq_to_wakeup", 0.5);
    let rows = super::rows(&apart);
    for (platform, first, then, stage) in [
        ("Linux", "interrupt to driver handler", 10.0, "interrupt"),
        ("Linux", "handler to user-level handler via signal", 17.0, "signal"),
        ("Windows NT", "interrupt to DPC handler start", 18.0, "driver_to_softirq"),
        ("Windows NT", "DPC to user-level handler thread wakeup", 16.0, "softirq_to_wakeup"),
    ] {
        let r = vmmc(&rows, platform, first);
        assert_eq!((r.status, r.today_stage.as_deref()), (RowStatus::Measured, Some(stage)), "{platform} {first}");
        assert_eq!((r.then, r.merged.as_deref()), (then, None), "{platform} {first}");
        assert!(!r.label().contains("merged"));
    }
}

/// `run` with `observed.<key>` of every `id` result set to `value`.
fn observed(mut run: RunFile, id: &str, key: &str, value: &str) -> RunFile {
    for r in run.results.iter_mut().filter(|r| r.id == id) {
        r.observed.insert(key.into(), serde_json::Value::String(value.into()));
    }
    run
}

/// The Rhino row of SPIN's `op`, `variant`.
fn spin<'a>(rows: &'a [SeedRow], op: &str, variant: &str) -> &'a SeedRow {
    rows.iter().find(|r| r.system == "Rhino on SPIN" && r.operation == op && r.variant == variant).unwrap()
}

/// Item 2: Rhino's trap (crossings × a null call timed beside) and other (total − that), and
/// RightSpeed's kernel-mode component (the call minus a null call), are estimates: beside their
/// total, labelled, no ratio; a result that says it stamped them inside the operation
/// (`observed.trap_timing`, `observed.kernel_timing` = "stamped") has real stages with ratios.
#[test]
fn estimated_stages_stand_beside_their_total_without_a_ratio_unless_stamped() {
    let run = default_run();
    let rows = rows(&run);
    for variant in ["trap", "other"] {
        let r = spin(&rows, "transaction begin", variant);
        assert_eq!(r.status, RowStatus::Measured);
        assert_eq!((r.reading, r.ratio_time, r.ratio_cycles), (Some(Reading::Estimated), None, None), "{variant}");
        assert!(r.estimated.as_deref().is_some_and(|e| e.starts_with("estimated: ")), "{r:?}");
        assert!(r.beside.as_deref().is_some_and(|b| b.starts_with("beside its total, ")), "{r:?}");
    }
    let kernel = rows.iter().find(|r| r.operation == "Begin a task" && r.variant == "kernel-mode component").unwrap();
    assert_eq!((kernel.reading, kernel.ratio_time), (Some(Reading::Estimated), None));
    assert!(kernel.estimated.as_deref().is_some_and(|e| e.contains("minus a bare null system call")), "{kernel:?}");
    let text = render(&run, &view(100));
    let line = text.lines().find(|l| l.starts_with(" SPIN: transaction begin, trap")).unwrap();
    assert!(line.contains("estimated: no ratio") && !line.contains('×'), "{line}");
    // The paper's own note: no trap/other split for Digital UNIX's begin and commit.
    assert!(flat(&text).contains("so the paper gives only their totals"));

    let stamped =
        observed(observed(run, "txn.begin", "trap_timing", "stamped"), "task.setattr", "kernel_timing", "stamped");
    let rows = super::rows(&stamped);
    for variant in ["trap", "other"] {
        let r = spin(&rows, "transaction begin", variant);
        assert!(r.ratio_time.is_some() && r.reading != Some(Reading::Estimated), "{variant}: {r:?}");
        assert_eq!(r.estimated, None, "{variant}");
    }
    let kernel = rows.iter().find(|r| r.operation == "Begin a task" && r.variant == "kernel-mode component").unwrap();
    assert!(kernel.ratio_time.is_some() && kernel.estimated.is_none(), "{kernel:?}");
    // Another value than "stamped" is an estimate still.
    let other = observed(default_run(), "txn.begin", "trap_timing", "beside");
    assert_eq!(spin(&super::rows(&other), "transaction begin", "trap").reading, Some(Reading::Estimated));
}

/// Item 2: an estimate that comes out below 0 (the trap estimated above the whole operation)
/// shows no figure, "< 0: not resolved", and counts as not answered.
#[test]
fn an_estimate_below_zero_shows_no_figure() {
    let mut run = default_run();
    let r = run.results.iter_mut().find(|r| r.id == "txn.begin").unwrap();
    let total = r.summary.as_ref().unwrap().mean;
    for s in r.breakdown.iter_mut().flatten() {
        s.summary.mean = if s.name == "trap" { total + 38.0 } else { -38.0 };
        s.summary.median = s.summary.mean;
    }
    let rows = rows(&run);
    let other = spin(&rows, "transaction begin", "other");
    assert_eq!((other.today_mean, other.today_median), (None, None));
    assert_eq!(other.unresolved.as_deref(), Some("< 0: not resolved"));
    assert_eq!(other.ratio_time, None);
    assert!(!other.resolved());
    let text = render(&run, &view(100));
    let line = text.lines().find(|l| l.contains("< 0: not resolved") && l.contains("14 µs")).expect("the row");
    assert!(line.starts_with(" SPIN: transaction begin") && !line.contains("-38"), "{line}");
    let rhino = summary::summarize(seeds::PAPERS.iter().find(|p| p.key == "rhino").unwrap(), &rows);
    assert!(rhino.without.iter().any(|w| w == "1 estimate below 0"), "{:?}", rhino.without);
}

/// Item 3: "below resolution" is said of a difference only. A latency, a stage of an
/// operation and a size whose interval reaches 0 keep a ratio with an open upper end; a
/// with-minus-without or process-minus-thread difference does not.
#[test]
fn below_resolution_is_for_differences_only() {
    let latency = with_mean(default_run(), "signal.install", 8000.0, [-100.0, 16_000.0]);
    let r = row_of(&rows(&latency), "Install message hook").clone();
    assert_eq!((r.below_resolution, r.reading), (None, Some(Reading::Inconclusive)), "{r:?}");
    assert_eq!(r.ratio_time_ci95_hi, Some(f64::INFINITY));
    let line =
        render(&latency, &view(100)).lines().find(|l| l.starts_with(" Install message hook")).unwrap().to_string();
    assert!(line.contains("inconclusive [0.533, ∞]") && !line.contains("below resolution"), "{line}");

    // A stage of an operation (VMMC's return).
    let mut run = default_run();
    let r = run.results.iter_mut().find(|r| r.id == "notify.softirq").unwrap();
    for s in r.breakdown.iter_mut().flatten().filter(|s| s.name == "return") {
        s.summary.mean_ci95 = [-50.0, s.summary.mean * 3.0];
    }
    let rows = rows(&run);
    let ret = vmmc(&rows, "Windows NT", "return to interrupted thread");
    assert_eq!(ret.below_resolution, None, "{ret:?}");
    assert_ne!(ret.reading, Some(Reading::BelowResolution));
    assert!(ret.ratio_time.is_some());

    // A size (memory per interface, bytes).
    let size = with_mean(default_run(), "space.interface", 330.0, [-5.0, 900.0]);
    let r = row_of(&super::rows(&size), "memory per interface").clone();
    assert_eq!(r.below_resolution, None, "{r:?}");
    assert!(r.ratio_bytes.is_some() && r.reading != Some(Reading::BelowResolution), "{r:?}");

    // Differences: with minus without, process minus thread.
    let diff = with_mean(default_run(), "interpose.preload", 3.0, [-2.0, 9.0]);
    assert_eq!(
        row_of(&super::rows(&diff), "Intercept non-user-interface message").reading,
        Some(Reading::BelowResolution)
    );
    let switch = with_mean(default_run(), "ctx.address_space", 40.0, [-200.0, 300.0]);
    assert_eq!(row_of(&super::rows(&switch), "address space switch").reading, Some(Reading::BelowResolution));
    // On the real fixture, every row below resolution is a difference.
    for r in super::rows(&default_run()).iter().filter(|r| r.reading == Some(Reading::BelowResolution)) {
        let id = r.today_id.as_deref().unwrap_or_default();
        assert!(["interpose.preload", "interpose.ui", "ctx.address_space"].contains(&id), "{}: {id}", r.label());
    }
}

/// Item 5: each paper's median goes over every total with a ratio, with its own interval, and
/// the heading says how many are nearest substitutes; Go!'s rests mostly on them.
#[test]
fn a_papers_median_has_its_interval_and_says_how_many_rows_are_nearest() {
    let run = default_run();
    let rows = rows(&run);
    let go = seeds::PAPERS.iter().find(|p| p.key == "go").unwrap();
    let s = summary::summarize(go, &rows);
    let totals: Vec<&SeedRow> = rows
        .iter()
        .filter(|r| r.paper == go.system && r.resolved() && !r.part && r.caveat.is_none() && r.ratio_time.is_some())
        .collect();
    assert_eq!(s.in_median, totals.len());
    let nearest = totals.iter().filter(|r| r.nearest.is_some()).count();
    assert_eq!(s.in_median_nearest, nearest);
    assert!(nearest * 2 > totals.len(), "Go!'s median rests mostly on nearest substitutes");
    let [lo, hi] = s.median_ci.unwrap();
    let m = s.median_change.unwrap();
    assert!(lo <= m && m <= hi, "{lo} {m} {hi}");
    // The interval is the median of the lower ends to the median of the upper ends.
    let ends: Vec<f64> = totals.iter().map(|r| r.ratio_time_ci95_lo.unwrap()).collect();
    assert!(lo >= ends.iter().copied().fold(f64::INFINITY, f64::min));
    let summary = flat(&render_summary(&run, &view(100)));
    assert!(summary.contains(&format!("over {} totals, {nearest} nearest", totals.len())), "{summary}");
    assert!(summary.contains(&format!("median {}", s.median_with_interval().unwrap())), "{summary}");
}

/// Item 8 (presentation): a row whose result failed its own check is not answered in the
/// heading; the bytes of a whole domain beside the memory per interface print as bytes.
#[test]
fn an_unresolved_row_is_not_answered_and_bytes_beside_are_bytes() {
    let run = default_run();
    let rows = rows(&run);
    let r = row_of(&rows, "memory per interface");
    assert_eq!(r.doubt.as_deref(), Some("failed its checks"));
    assert!(!r.resolved());
    let beside = r.beside.as_deref().unwrap_or_default();
    assert!(beside.contains("a whole domain") && beside.ends_with("KiB") && !beside.contains("µs"), "{beside}");
    let go = summary::summarize(seeds::PAPERS.iter().find(|p| p.key == "go").unwrap(), &rows);
    assert!(go.without.iter().any(|w| w == "1 that failed its checks"), "{:?}", go.without);
    assert_eq!(go.measured + go.not_answered, go.total_rows);
}

/// Item 7: a run without cold rows gives no cold row the reason of another record (a skipped
/// `table_miss` result): a skipped record answers only the rows whose parameters it shares.
#[test]
fn a_skipped_record_answers_only_its_own_rows() {
    let mut run = default_run();
    run.results.retain(|r| r.params.get("cache").is_none_or(|c| c.as_str() == Some("warm")));
    let rows = rows(&run);
    let cold = rows.iter().find(|r| r.operation == "xfer" && r.variant.contains("cold")).unwrap();
    assert!(!cold.reason.as_deref().unwrap_or_default().contains("table_miss"), "{cold:?}");
    let miss = rows.iter().find(|r| r.operation == "xfer via ObjRef not cached in GDT").unwrap();
    assert!(miss.reason.as_deref().is_some_and(|w| w.starts_with("skipped: table_miss is keys only")), "{miss:?}");
    for r in
        rows.iter().filter(|r| r.variant.contains("cold cache") && r.operation != "xfer via ObjRef not cached in GDT")
    {
        assert!(!r.reason.as_deref().unwrap_or_default().contains("table_miss"), "{}: {:?}", r.label(), r.reason);
    }
}

/// Item 10: L4's address-space switch in retired instructions is the process switch's count
/// minus the thread switch's, with the interval of the difference, where both carry counts;
/// a difference whose interval includes 0 is below resolution.
#[test]
fn the_address_space_switch_in_instructions_is_a_difference_of_counts() {
    use model::counters::{Availability, CounterSummary, Counters};
    let with_counts = |process: f64, thread: f64| {
        let mut run = default_run();
        run.counters = Some(Availability { counted: vec!["instructions".into()], missing: Vec::new() });
        let base = run.results.iter().find(|r| r.id == "ctx.address_space").unwrap().clone();
        for (id, n) in [("ctx.process", process), ("ctx.thread", thread)] {
            let mut r = base.clone();
            r.id = id.into();
            r.breakdown = None;
            r.counters = Some(Counters {
                events: vec![CounterSummary {
                    event: "instructions".into(),
                    per_op: n,
                    ci95: [n - 50.0, n + 50.0],
                    samples: 100,
                }],
                ..Counters::default()
            });
            run.results.push(r);
        }
        run
    };
    let row = |run: &RunFile| {
        rows(run).into_iter().find(|r| r.operation == "address space switch" && r.then_unit == "instructions").unwrap()
    };
    let r = row(&with_counts(5000.0, 4000.0));
    assert_eq!(r.status, RowStatus::Measured, "{r:?}");
    assert_eq!((r.today_mean, r.today_ci95_lo, r.today_ci95_hi), (Some(1000.0), Some(900.0), Some(1100.0)));
    assert_eq!(r.today_id.as_deref(), Some("ctx.process − ctx.thread"));
    assert!((r.ratio_count.unwrap() - 24.0 / 1000.0).abs() < 1e-12);
    assert_eq!(r.reading, Some(Reading::Worse));
    let r = row(&with_counts(5000.0, 4990.0));
    assert_eq!((r.reading, r.ratio_count), (Some(Reading::BelowResolution), None));
    assert_eq!(r.below_resolution, Some(110.0));
    // Without counts (this machine has no PMU): the run's reason, as on the other rows.
    let r = row(&default_run());
    assert_eq!(r.status, RowStatus::NeedsCounters);
    assert!(r.reason.as_deref().unwrap_or_default().contains("ctx.process − ctx.thread"), "{r:?}");
}
