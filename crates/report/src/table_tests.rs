//! Tests of the run table: the real default run (`tests/fixtures/default-run.json`) within 80
//! and 100 columns, in full and in detail; sweeps with their points and fit; odd input; the
//! one-line summary of a row.

use super::*;
use model::{Flag, SweepModel, SweepSegments, Unit};

fn fixture() -> RunFile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/default-run.json");
    model::read_result_file(&path).expect("the fixture reads")
}

fn view(width: usize) -> View {
    View { width, ..View::default() }
}

/// Every line of `out` within `width` columns (escape codes aside) and trimmed.
fn assert_fits(out: &str, width: usize) {
    for (i, line) in out.lines().enumerate() {
        assert!(
            layout::width(line) <= width,
            "line {} is {} columns wide (> {width}):\n{line}",
            i + 1,
            layout::width(line)
        );
        assert_eq!(line, line.trim_end(), "line {} ends in spaces", i + 1);
    }
}

#[test]
fn the_default_run_fits_80_and_100_columns() {
    let run = fixture();
    for width in [80, 100] {
        for detail in [false, true] {
            for color in [false, true] {
                let out = render(&run, &View { width, detail, color, ..View::default() });
                assert_fits(&out, width);
            }
        }
        let head = crate::header::lines(&run, width);
        assert!(head.len() <= 3 && head.iter().all(|(l, _)| layout::width(l) <= width), "{head:?}");
    }
}

#[test]
fn narrow_views_still_fit() {
    let run = fixture();
    for width in [40, 60, 72, 120] {
        assert_fits(&render(&run, &view(width)), width);
    }
}

#[test]
fn the_default_run_tells_its_story_compactly() {
    let out = render(&fixture(), &view(100));
    let lines: Vec<&str> = out.lines().collect();
    // 175 results and 42 derived ones: under two lines each.
    assert!(lines.len() < 360, "{} lines", lines.len());
    assert!(!out.contains(" more:") && !out.contains("and 5 more"), "rows are named, never counted");
    assert!(!out.contains('\x1b'), "no escape codes without colour");
    // rpc rows are a line of the matrix, never rows of their own.
    assert!(!lines.iter().any(|l| l.starts_with("rpc.")), "{out}");
    assert!(lines.iter().any(|l| l.trim_start().starts_with("rpc ")), "{out}");
    // Descriptions live in `osprim list` (and --wide), and long skip reasons in footnotes.
    assert!(!out.contains("empty operation: the harness's own residual cost"));
    assert!(lines.iter().any(|l| l.starts_with("txn.begin uffd") && l.contains("skipped")), "{out}");
    let reason = "the kernel refuses userfaultfd write-protect";
    assert_eq!(lines.iter().filter(|l| l.contains(reason)).count(), 1, "the reason once, in a footnote");
    // Shared parameters once, in the family heading.
    assert!(out.contains("txn.* — device /dev/vda"), "{out}");
    assert!(!out.contains("placement=") && !out.contains("[peer="), "{out}");
    // Steal time and drift name their rows and say how much.
    assert!(out.contains("txn.commit_8b (mprotect writes 10 ms)"), "{out}");
    assert!(out.contains("ipc.pipe (thread cross +6.1 %"), "{out}");
    // A failed check is said in the check column and explained below, with what was seen.
    assert!(lines.iter().any(|l| l.starts_with("space.eventfd") && l.contains("FAILED")), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("space.eventfd: quartiles -12.2 % / +5.5 %"), "{out}");
    // Lopsided intervals say each end, never a half-width wider than the lower end allows.
    assert!(lines.iter().any(|l| l.starts_with("syscall.null ") && l.contains("−1.2/+24 %")), "{out}");
}

#[test]
fn colour_marks_failures_and_the_header_only_when_asked() {
    let out = render(&fixture(), &View { color: true, ..view(100) });
    assert!(out.contains("\x1b[1;31mFAILED"), "failed checks red");
    assert!(out.lines().next().is_some_and(|l| l.starts_with("\x1b[2m")), "header dim");
}

#[test]
fn the_default_run_at_100_columns() {
    insta::assert_snapshot!(render(&fixture(), &view(100)));
}

#[test]
fn the_default_run_wide_and_in_detail() {
    let out = render(&fixture(), &View { wide: true, detail: true, ..view(100) });
    assert!(out.contains("empty operation: the harness's own residual cost"), "descriptions with --wide");
    assert!(out.contains("└ measurer→peer"), "each stage of a breakdown with --detail");
    insta::assert_snapshot!(out);
}

/// The hand-made run of `report::tests` with its sweep fitted by two segments, its fixed
/// cost negative.
fn sweep_run(segments: bool) -> RunFile {
    let mut run = crate::tests::run_file(false);
    let fit_row = run.results.iter_mut().find(|r| r.fit.is_some()).expect("a sweep");
    let fit = fit_row.fit.as_mut().expect("a fit");
    if segments {
        fit.model = SweepModel::TwoSegments;
        fit.segments = Some(SweepSegments {
            breakpoint_bytes: 4096,
            fixed_ns: -120.0,
            fixed_ci95_ns: [-200.0, -40.0],
            small_slope_ns_per_byte: 0.125,
            small_slope_ci95_ns_per_byte: [0.12, 0.13],
            large_slope_ns_per_byte: 0.25,
            large_slope_ci95_ns_per_byte: [0.24, 0.26],
            chi2: 3.0,
            dof: 0,
            reduced_chi2: f64::NAN,
            p_value: f64::NAN,
            vs_line_p_value: 1e-6,
            breakpoints_tried: 1,
        });
        fit_row.flags = vec![Flag::Nonlinear, Flag::NegativeFixedCost];
    }
    run
}

#[test]
fn a_sweep_shows_its_points_then_its_fit() {
    let out = render(&sweep_run(false), &view(100));
    assert_fits(&out, 100);
    let at = out.find("a size sweep over 3 sizes").expect("the sweep's title");
    let sweep = &out[at..];
    for want in [
        "size",
        "GB/s",
        "64 KiB",
        "18.00 µs",
        "± 1.0 %",
        "3.641",
        "fixed cost",
        "2.000 µs",
        "95 % CI 1.950 µs – 2.050 µs",
    ] {
        assert!(sweep.contains(want), "{want:?} missing:\n{sweep}");
    }
    assert!(sweep.contains("cost per KiB") && sweep.contains("249.9 ns") && sweep.contains("= 4.098 GB/s"), "{sweep}");
    assert!(sweep.contains("R² 0.9999"), "{sweep}");
    // The points are in the sweep, not rows of the main table.
    assert!(!out.lines().any(|l| l.starts_with("ipc.pipe") && !l.contains("a size sweep")), "{out}");
}

#[test]
fn two_segments_and_a_negative_fixed_cost_are_labelled() {
    let out = render(&sweep_run(true), &view(80));
    assert_fits(&out, 80);
    let fixed = out.lines().find(|l| l.contains("fixed cost")).expect("fixed cost");
    assert!(fixed.contains("-120.0 ns") && fixed.contains("negative"), "{fixed}");
    assert!(out.contains("cost per KiB ≤ 4 KiB") && out.contains("cost per KiB > 4 KiB"), "{out}");
    assert!(out.contains("two lines meeting at 4 KiB"), "{out}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(Flag::NegativeFixedCost.hint()), "the flag explained:\n{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn odd_input_does_not_panic_and_keeps_the_width() {
    let mut run = fixture();
    run.results.truncate(3);
    let mut nan = run.results[1].clone();
    if let Some(s) = nan.summary.as_mut() {
        s.median = f64::NAN;
        s.median_ci95 = [f64::NAN, f64::INFINITY];
        s.p99 = f64::INFINITY;
    }
    let mut bare = run.results[2].clone();
    bare.summary = None;
    bare.breakdown = Some(Vec::new());
    let mut long = run.results[0].clone();
    long.status = Status::Skipped;
    long.summary = None;
    long.reason = Some(format!("{} 12345678901234567890", "a very long reason ".repeat(12)));
    run.results.extend([nan, bare, long]);
    run.partial = true;
    for width in [30, 80, 100] {
        let out = render(&run, &view(width));
        assert_fits(&out, width);
        assert!(out.contains("PARTIAL"), "{out}");
    }
    let out = render(&run, &view(100));
    let skipped = out.lines().find(|l| l.starts_with("harness.empty") && l.contains("skipped")).expect("the row");
    assert!(layout::width(skipped) < 40, "a reason never widens the table: {skipped}");
    run.results.clear();
    assert_fits(&render(&run, &view(80)), 80);
}

#[test]
fn a_row_line_summarises_a_result_within_the_width() {
    let run = fixture();
    let find = |id: &str, place: &str| {
        run.results.iter().find(|r| r.id == id && r.params.get("placement").is_none_or(|p| p == place)).expect("a row")
    };
    let line = row_line(find("ipc.pipe", "cross_cpu"), 100);
    assert_eq!(line, "ipc.pipe 0 B thread cross  6.201 µs −6.3/+8.7 %  ci-wide unstable drift +6.1 %");
    assert_eq!(row_line(find("harness.empty", ""), 100), "harness.empty  0.000 ns ± 0 %");
    let space = row_line(find("space.eventfd", ""), 100);
    assert_eq!(space, "space.eventfd  264.2 B −13/+7.5 %  check-failed");
    let uffd = run.results.iter().find(|r| r.id == "txn.begin" && r.status == Status::Skipped).expect("uffd");
    let skipped = row_line(uffd, 60);
    assert!(skipped.starts_with("txn.begin uffd writes  skipped: uffd detection"), "{skipped}");
    assert!(layout::width(&skipped) <= 60 && skipped.ends_with('…'), "{skipped}");
    for r in &run.results {
        for width in [20, 40, 80] {
            let l = row_line(r, width);
            assert!(layout::width(&l) <= width && !l.contains('\n'), "{l}");
        }
    }
    let sweep = sweep_run(false);
    let fit = sweep.results.iter().find(|r| r.fit.is_some()).expect("a fit");
    assert_eq!(row_line(fit, 100), "ipc.pipe thread sweep  fixed 2.000 µs + 249.9 ns/KiB (4.098 GB/s)");
}

#[test]
#[ignore = "prints the fixture's table: OSPRIM_WIDTH=80 cargo test --release print_fixture -- --ignored --nocapture"]
fn print_fixture() {
    let width = std::env::var("OSPRIM_WIDTH").ok().and_then(|w| w.parse().ok()).unwrap_or(100);
    print!("{}", render(&fixture(), &view(width)));
}

#[test]
fn lopsided_intervals_print_each_end_and_symmetric_ones_a_half_width() {
    // The interval users saw as `± 251 %`.
    assert_eq!(plus_minus(91.2, [91.1, 548.8], Unit::Ns), "−0.11/+502 %");
    assert_eq!(plus_minus(100.0, [95.8, 104.2], Unit::Ns), "± 4.2 %");
    assert_eq!(plus_minus(100.0, [95.5, 104.1], Unit::Ns), "± 4.5 %", "within 10 % of each other: the farther end");
    assert_eq!(plus_minus(100.0, [99.96, 100.08], Unit::Ns), "± 0.08 %", "both ends within 1 %");
    assert_eq!(plus_minus(100.0, [98.0, 112.0], Unit::Ns), "−2.0/+12 %");
    assert_eq!(plus_minus(100.0, [101.0, 105.0], Unit::Ns), "+1.0/+5.0 %", "a point outside its interval says so");
    assert_eq!(plus_minus(100.0, [100.0, 100.0], Unit::Ns), "± 0 %");
    assert_eq!(plus_minus(0.0, [-1.0, 1.0], Unit::Ns), "± 1.000 ns");
    assert!(plus_minus(0.0, [0.0, 0.4], Unit::Ns).starts_with('['), "{}", plus_minus(0.0, [0.0, 0.4], Unit::Ns));
    assert_eq!(plus_minus(f64::NAN, [0.0, 1.0], Unit::Ns), "-");
    // The real default run has no half-width wider than its lower end allows.
    let out = render(&fixture(), &View { wide: true, ..view(100) });
    for l in out.lines() {
        if let Some(at) = l.find("± ") {
            let pct: String = l[at + 2..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            assert!(pct.parse::<f64>().map_or(true, |p| p < 100.0), "{l}");
        }
    }
}

#[test]
fn the_seed_method_shows_the_median_beside_the_mean() {
    let mut run = crate::tests::run_file(false);
    run.config.method = Method::Seed;
    run.results.iter_mut().for_each(|r| r.method = Method::Seed);
    let out = render(&run, &view(100));
    let head = out.lines().find(|l| l.starts_with("benchmark")).expect("a header");
    let cols: Vec<&str> = head.split_whitespace().collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap_or_else(|| panic!("{name} in {head}"));
    assert!(at("mean") < at("median") && at("median") < at("min"), "{head}");
    let getpid = run.results.iter().find(|r| r.id == "syscall.getpid").expect("getpid");
    let median = getpid.unit.format(getpid.summary.as_ref().expect("a summary").median);
    let line = out.lines().find(|l| l.starts_with("syscall.getpid")).expect("its line");
    assert!(line.contains(&median), "{line}");
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("the figure is their mean; the 95 % CI is the mean's"), "{out}");
    assert!(!out.contains("CI target"), "no target under the seed method: {out}");
    let adaptive = render(&crate::tests::run_file(false), &view(100));
    let head = adaptive.lines().find(|l| l.starts_with("benchmark")).expect("a header");
    assert_eq!(head.split_whitespace().filter(|c| *c == "median").count(), 1, "{head}");
}

#[test]
fn a_row_cut_off_by_ctrl_c_reads_interrupted() {
    let mut run = crate::tests::run_file(true);
    let r = &mut run.results[1];
    r.status = Status::Interrupted;
    r.summary = None;
    r.flags.clear();
    r.reason = Some("Ctrl-C arrived before enough samples for a figure (1 taken)".into());
    let out = render(&run, &view(100));
    let id = run.results[1].id.clone();
    assert!(out.lines().any(|l| l.starts_with(&id) && l.contains("interrupted¹")), "{out}");
    assert!(out.contains("¹ interrupted: Ctrl-C arrived before enough samples"), "{out}");
    assert!(!out.to_lowercase().contains("failed"), "{out}");
    let line = row_line(&run.results[1], 100);
    assert!(line.contains("interrupted: Ctrl-C arrived"), "{line}");
}

#[test]
fn counters_show_compactly_under_their_row_and_what_is_missing_once() {
    use model::counters::{Availability, CounterSummary, Counters, MissingEvent};
    let plain = render(&fixture(), &view(100));
    assert!(!plain.contains("(--counters)") && !plain.contains("└ per operation:"), "not asked for: nothing shown");
    let mut run = fixture();
    let why = "the PMU has no LL cache event";
    let missing = vec![MissingEvent { event: "llc_misses".into(), reason: why.into() }];
    run.counters = Some(Availability {
        counted: vec!["cycles".into(), "instructions".into(), "dtlb_misses".into(), "branch_misses".into()],
        missing: missing.clone(),
    });
    let i = run.results.iter().position(|r| r.summary.is_some()).expect("a measured row");
    let ev = |e: &str, x: f64| CounterSummary { event: e.into(), per_op: x, ci95: [x, x], samples: 30 };
    run.results[i].counters = Some(Counters {
        events: vec![ev("cycles", 312.4), ev("instructions", 45.0), ev("dtlb_misses", 0.02), ev("branch_misses", 1.5)],
        missing,
        running_share_min: 0.5,
    });
    let out = render(&run, &view(100));
    assert!(out.contains("└ per operation: 312 cycles · 45.0 instr · 0.020 dTLB miss · 1.50 br miss"), "{out}");
    assert!(out.contains("(multiplexed: ≥ 50 %"), "{out}");
    assert!(out.contains(&format!("counters (--counters): llc_misses counted: {why}")), "{out}");
    assert_fits(&out, 100);
}

/// A cold row counted by the PMU says, under its ratio, the misses per operation cold against
/// its hot twin; without counts, nothing more.
#[test]
fn a_cold_row_shows_its_misses_against_its_hot_twin() {
    let mut run = fixture();
    let i = run.results.iter().position(|r| r.summary.is_some() && r.derived.is_none()).expect("a measured row");
    model::fixtures::make_cold(&mut run.results[i], 3.25, [2.9, 3.6], 41.5);
    let id = run.results[i].id.clone();
    assert!(!render(&run, &view(100)).contains("LLC misses"), "no counts, no line");
    if let Some(c) = run.results[i].cold_hot.as_mut() {
        c.counts = vec![
            model::ColdHotCount { event: "llc_misses".into(), cold_per_op: 41.0, hot_per_op: 0.2 },
            model::ColdHotCount { event: "dtlb_misses".into(), cold_per_op: 9.0, hot_per_op: 0.01 },
        ];
    }
    let out = render(&run, &view(100));
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("per operation: LLC misses 41.00 cold vs 0.200 hot · dTLB misses 9.000 cold vs 0.010 hot"),
        "{id}: {out}"
    );
}

#[test]
fn a_min_below_zero_is_explained_under_the_table() {
    let mut run = fixture();
    // Two rows of the fixture are paired differences whose single samples fell below 0.
    let out = render(&run, &view(100));
    assert!(out.contains("a min below 0 (interpose.preload, ctx.address_space): each sample is a difference"), "{out}");
    assert_fits(&out, 100);
    assert_fits(&render(&run, &view(80)), 80);
    for row in &mut run.results {
        if let Some(s) = row.summary.as_mut() {
            s.min = s.min.abs();
        }
    }
    assert!(!render(&run, &view(100)).contains("a min below 0"), "said only where a min is below 0");
}
