//! Snapshots of every renderer (table, CSV, seed view, JSON), fed a hand-made run: no clock,
//! no machine, nothing measured. The rows cover each kind a reporter meets: a timed row, a
//! bytes row with a breakdown, a skipped, a failed, a flagged and a derived row, a row with
//! single-operation percentiles, and a sweep with its fit; a second run is partial.

use crate::model::{
    BuildInfo, Check, Cycles, Derived, Estimate, Flag, Level, Machine, Method, Outliers, Params, Placement,
    RoundSummary, Row, RunFile, SIZE_PARAM, SamplerSettings, Stage, Status, StopReason, Structure, Summary, SweepFit,
    SweepLine, SweepModel, SweepPoint, Tail, TimerInfo, TimerKind, Unit, Validation,
};
use serde_json::json;

fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// A summary around `median` with a ±`half` interval, from `n` samples in 3 rounds.
fn summary(median: f64, half: f64, n: usize) -> Summary {
    Summary {
        n,
        min: median * 0.95,
        max: median * 1.4,
        mean: median * 1.01,
        median,
        stddev: median * 0.03,
        mad: median * 0.01,
        p1: median * 0.96,
        p5: median * 0.97,
        p95: median * 1.08,
        p99: median * 1.2,
        median_ci95: [median - half, median + half],
        mean_ci95: [median * 1.01 - half, median * 1.01 + half],
        outliers: Outliers { low_severe: 0, low_mild: 1, high_mild: 2, high_severe: 1 },
        drift: false,
        drift_rel: 0.001,
        structure: Some(Structure {
            interval: "hierarchical bootstrap over 3 rounds (fixture)".into(),
            rounds: (0..3)
                .map(|i| RoundSummary {
                    n: n / 3,
                    dropped: 0,
                    median: median + f64::from(i) * 0.1,
                    median_ci95: [median - half, median + half],
                    block_length: 2.0,
                })
                .collect(),
            dropped: 0,
            heterogeneity_p: 0.4,
            unstable: false,
            levels: Vec::new(),
        }),
    }
}

fn row(id: &str, about: &str, params: Params) -> Row {
    Row {
        status: Status::Ok,
        iterations_per_sample: 1000,
        warmup_iterations: 5000,
        stop: Some(StopReason::TargetMet),
        ..crate::analyse::empty_row(id, about, params, Method::Adaptive)
    }
}

/// A measured row: three rounds of two samples each around `median`.
fn measured(id: &str, about: &str, params: Params, median: f64, half: f64) -> Row {
    let mut r = row(id, about, params);
    r.samples = vec![median * 0.99, median, median * 1.01, median, median * 1.02, median * 0.98];
    r.samples_per_round = vec![2, 2, 2];
    r.batch_check = vec![[median, median * 1.001]];
    r.summary = Some(summary(median, half, 6));
    r.cycles = Some(Cycles { source: "tsc".into(), median: median * 2.5 });
    r.validation = Validation::from_checks(vec![Check::new("returns the caller's pid", "pid 42", "pid 42", true)]);
    r
}

pub(super) fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    let mut getpid = measured("syscall.getpid", "getpid() through libc", Params::new(), 215.7, 1.2);
    getpid.single_op = vec![210.0, 220.0, 900.0];
    getpid.tail = Some(Tail { n: 3, p50: 220.0, p99: 886.0, p999: 898.6, max: 900.0, resolution: 0.41 });
    out.push(getpid);

    let mut space = measured(
        "space.eventfd",
        "memory per eventfd (bytes; user + kernel)",
        params(&[("objects", json!(10_000))]),
        440.3,
        0.4,
    );
    space.unit = Unit::Bytes;
    space.cycles = None;
    space.iterations_per_sample = 10_000;
    space.breakdown = Some(vec![
        Stage { name: "user".into(), summary: summary(0.0, 0.0, 6) },
        Stage { name: "slab".into(), summary: summary(440.3, 0.4, 6) },
    ]);
    space.notes.push("samples are bytes per object: 3 rounds of 10000 eventfds".into());
    out.push(space);

    let mut skipped = row("fault.uffd", "a page fault served by userfaultfd", Params::new());
    skipped.status = Status::Skipped;
    skipped.reason = Some("userfaultfd is not permitted (vm.unprivileged_userfaultfd = 0)".into());
    skipped.stop = None;
    out.push(skipped);

    let mut failed = row("ipc.mq", "POSIX message queue round trip", params(&[("peer", json!("thread"))]));
    failed.status = Status::Failed;
    failed.reason = Some("mq_open: too many open files".into());
    failed.stop = None;
    out.push(failed);

    let same = params(&[("placement", json!("same_cpu"))]);
    let thread = measured("ctx.thread", "switch between two threads", same.clone(), 1000.0, 30.0);
    out.push(thread);
    let mut process = measured("ctx.process", "switch between two processes", same.clone(), 1300.0, 40.0);
    process.status = Status::Untrustworthy;
    process.flags = vec![Flag::CiTargetMissed, Flag::Unstable, Flag::CheckFailed];
    process.validation = Validation::from_checks(vec![
        Check::new("one switch per message", "2 switches per round trip", "2.4 switches per round trip", false),
        Check::impossible("the peer ran on the same CPU", "no per-thread CPU accounting"),
    ]);
    if let Some(st) = process.summary.as_mut().and_then(|s| s.structure.as_mut()) {
        st.unstable = true;
        st.heterogeneity_p = 1e-9;
        st.levels = vec![Level { median: 1290.0, share: 0.9 }, Level { median: 1500.0, share: 0.1 }];
    }
    process.notes.push("unstable: the 3 rounds' medians range from 1.250 µs to 1.350 µs".into());
    out.push(process);

    let mut derived = row("ctx.address_space", "address-space switch", same);
    derived.validation =
        Validation::from_checks(vec![Check::new("ctx.process costs more than ctx.thread", "> 0", "300.0 ns", true)]);
    derived.derived = Some(Derived {
        formula: "ctx.process − ctx.thread".into(),
        estimate: Estimate { point: 300.0, ci95: [250.0, 350.0] },
        below_resolution: false,
    });
    derived.notes.push("difference of the medians, ctx.process − ctx.thread".into());
    out.push(derived);

    let peer = |size: serde_json::Value| params(&[("peer", json!("thread")), (SIZE_PARAM, size)]);
    for (size, median) in [(0u64, 2000.0), (4096, 3000.0), (65536, 18000.0)] {
        out.push(measured("ipc.pipe", "one-way message through a pipe", peer(json!(size)), median, median * 0.01));
    }
    let mut fit = row("ipc.pipe", "one-way message through a pipe", peer(json!("fit")));
    fit.params.insert("sizes".into(), json!([0, 4096, 65536]));
    fit.iterations_per_sample = 0;
    fit.stop = None;
    fit.validation = Validation::from_checks(vec![Check::new(
        "every point of the sweep passed its checks",
        "0 of 3 points failed",
        "0 failed",
        true,
    )]);
    fit.fit = Some(SweepFit {
        method: "weighted least squares".into(),
        model: SweepModel::Line,
        line: SweepLine {
            intercept_ns: 2000.0,
            intercept_ci95_ns: [1950.0, 2050.0],
            slope_ns_per_byte: 0.244,
            slope_ci95_ns_per_byte: [0.240, 0.248],
            r_squared: 0.9999,
            chi2: 0.5,
            dof: 1,
            reduced_chi2: 0.5,
            p_value: 0.48,
        },
        segments: None,
        points: [(0u64, 2000.0), (4096, 3000.0), (65536, 18000.0)]
            .iter()
            .map(|&(size_bytes, median_ns)| SweepPoint {
                size_bytes,
                median_ns,
                se_ns: median_ns * 0.005,
                leverage: 0.6,
                std_residual: Some(0.3),
                flagged: false,
            })
            .collect(),
    });
    fit.notes.push("weighted least-squares line through the medians at 3 sizes".into());
    out.push(fit);
    out
}

pub(crate) fn run_file(partial: bool) -> RunFile {
    let mut machine = Machine { hostname: "fixture".into(), arch: "x86_64".into(), ..Machine::default() };
    machine.cpu.model_name = "Fixture CPU @ 2.45GHz".into();
    machine.cpu.logical_cpus = Some(2);
    machine.kernel.release = "6.1.0-fixture".into();
    machine.virtualization.virtualized = Some(true);
    machine.virtualization.hypervisor_vendor = "KVM".into();
    let mut results = rows();
    if partial {
        results.truncate(2);
        results[1].stop = Some(StopReason::Interrupted);
        results[1].flags.push(Flag::Interrupted);
        results[1].status = Status::Untrustworthy;
    }
    RunFile {
        schema: crate::model::SCHEMA,
        osprim: BuildInfo {
            version: "0.1.0".into(),
            commit: "fixture".into(),
            rustc: "rustc 1.88.0".into(),
            profile: "release".into(),
        },
        availability: Vec::new(),
        executions: Vec::new(),
        started_utc: "2026-01-01T00:00:00Z".into(),
        finished_utc: (!partial).then(|| "2026-01-01T00:01:00Z".into()),
        partial,
        command: vec!["osprim".into(), "run".into()],
        config: SamplerSettings {
            method: Method::Adaptive,
            budget_s: 1.0,
            warmup_s: 0.05,
            warmup_iters: 100,
            ci_target_rel: 0.01,
            min_samples: 30,
            max_samples: 50_000,
            min_sample_resolutions: 1000.0,
            rounds: 3,
            tail_samples: 0,
        },
        placement: Placement { cpu: 1, chosen_by: "--cpu".into(), allowed_cpus: vec![0, 1], cpu_pair: Some([0, 1]) },
        timer: TimerInfo {
            kind: TimerKind::Tsc,
            freq_hz: 2.4454e9,
            freq_source: "calibrated (fixture)".into(),
            calibrated_hz: Some(2.4454e9),
            stated_hz: None,
            invariant: Some(true),
            invariant_source: "cpuid (fixture)".into(),
            fallback_reason: None,
            overhead_ns: 20.0,
            overhead_ticks: 49.0,
            overhead_mean_ns: Some(20.5),
            overhead_mean_ticks: Some(50.1),
            resolution_ns: 0.41,
            read_cost_ns: Some(20.0),
            overhead_by_round: Vec::new(),
        },
        machine,
        results,
    }
}

#[test]
fn table() {
    insta::assert_snapshot!(super::table::render(&run_file(false), &super::View::default()));
}

#[test]
fn the_header_says_whether_the_measuring_cpu_was_idle() {
    let probe = |lost_ns: f64| crate::model::Probe {
        before_round: 0,
        cpu: 1,
        window_ns: 25e6,
        lost_ns,
        gaps: 3,
        longest_gap_ns: 5e3,
    };
    let header =
        |run: &RunFile| super::header::lines(run, 200).into_iter().map(|(l, _)| l).collect::<Vec<_>>().join("\n");
    let mut run = run_file(false);
    assert!(!header(&run).contains("between rounds"), "no probes, nothing said");
    run.availability = vec![probe(10e3), probe(60e3)];
    assert!(header(&run).contains("CPU 1: ≤ 0.24 % taken elsewhere between rounds"), "{}", header(&run));
    run.availability.push(probe(12e6));
    assert!(header(&run).contains("BUSY: up to 48 % of CPU 1 taken between rounds"), "{}", header(&run));
    assert!(super::header::lines(&run, 60)[2].0.starts_with("BUSY"), "kept first when the line is narrow");
}

#[test]
fn table_of_a_partial_run() {
    insta::assert_snapshot!(super::table::render(&run_file(true), &super::View::default()));
}

#[test]
fn table_seed_method() {
    let mut run = run_file(false);
    run.config.method = Method::Seed;
    run.results.iter_mut().for_each(|r| r.method = Method::Seed);
    insta::assert_snapshot!(super::table::render(&run, &super::View::default()));
}

#[test]
fn csv() {
    insta::assert_snapshot!(super::csv::render(&run_file(false)));
}

#[test]
fn csv_of_a_partial_run() {
    insta::assert_snapshot!(super::csv::render(&run_file(true)));
}

#[test]
fn csv_uses_the_result_files_names_and_one_column_per_parameter() {
    let text = super::csv::render(&run_file(false));
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().expect("header").iter().map(String::from).collect();
    assert_eq!(&header[..super::csv::COLUMNS.len()], super::csv::COLUMNS);
    assert_eq!(&header[super::csv::COLUMNS.len()..], ["bytes", "objects", "peer", "placement", "sizes"]);
    assert!(!header.iter().any(|h| h == "params"));
    let records: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("record")).collect();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert!(records.iter().all(|r| r.len() == header.len()), "no ragged line");
    let skipped = records.iter().find(|r| &r[col("id")] == "fault.uffd").expect("skipped row");
    assert_eq!(&skipped[col("verdict")], "not_validated");
    let process = records.iter().find(|r| &r[col("id")] == "ctx.process").expect("flagged row");
    assert_eq!(&process[col("flags")], "ci-wide unstable check-failed");
    assert_eq!(&process[col("placement")], "same_cpu");
    let stages: Vec<&::csv::StringRecord> = records.iter().filter(|r| !r[col("stage")].is_empty()).collect();
    assert_eq!(stages.iter().map(|r| &r[col("stage")]).collect::<Vec<_>>(), ["user", "slab"]);
    assert!(stages.iter().all(|r| &r[col("id")] == "space.eventfd" && &r[col("unit")] == "bytes"));
    assert_eq!(records.len() - stages.len(), run_file(false).results.len(), "one line per row besides stages");
}

#[test]
fn csv_markdown_and_latex_of_odd_runs_do_not_panic() {
    let mut run = run_file(false);
    run.results.truncate(0);
    let renders: [fn(&RunFile) -> String; 2] =
        [super::csv::render, |r| super::markdown::render(r, &super::View::default())];
    for render in renders {
        assert!(!render(&run).is_empty());
    }
    assert!(super::latex::render(&run, &super::View::default()).contains("No results"));
    let mut run = run_file(false);
    for r in &mut run.results {
        r.params.insert("weird|key".into(), json!("a|b & c_d % $ # { } ~ ^ \\ <x> µ ☃ --cpu"));
        if let Some(s) = r.summary.as_mut() {
            s.median = f64::NAN;
            s.median_ci95 = [f64::NEG_INFINITY, f64::INFINITY];
        }
        r.notes.push("two\nlines".into());
    }
    run.results[2].summary = None;
    let detail = super::View { detail: true, ..super::View::default() };
    let csv = super::csv::render(&run);
    assert!(csv.contains("NaN") && csv.contains("weird|key"), "{csv}");
    let md = super::markdown::render(&run, &detail);
    for line in md.lines().filter(|l| l.starts_with('|')) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 11, "every table line has the header's 10 cells: {line}");
    }
    let tex = super::latex::render(&run, &detail);
    assert!(!tex.contains('☃') && !tex.contains("a|b"), "{tex}");
}

#[test]
fn markdown() {
    insta::assert_snapshot!(super::markdown::render(&run_file(false), &super::View::default()));
}

#[test]
fn markdown_of_a_partial_run_in_detail() {
    let view = super::View { detail: true, ..super::View::default() };
    insta::assert_snapshot!(super::markdown::render(&run_file(true), &view));
}

#[test]
fn latex() {
    insta::assert_snapshot!(super::latex::render(&run_file(false), &super::View::default()));
}

#[test]
fn latex_of_a_partial_run_in_detail() {
    let view = super::View { detail: true, ..super::View::default() };
    insta::assert_snapshot!(super::latex::render(&run_file(true), &view));
}

#[test]
fn seeds() {
    insta::assert_snapshot!(super::seeds::render(&run_file(false), &super::View::default()));
}

#[test]
fn seeds_of_a_partial_run() {
    insta::assert_snapshot!(super::seeds::render(&run_file(true), &super::View::default()));
}

#[test]
fn json() {
    let run = run_file(false);
    let text = serde_json::to_string_pretty(&run).expect("JSON");
    insta::assert_snapshot!(text);
}

#[test]
fn json_reads_back_and_partial_json() {
    let run = run_file(true);
    let text = serde_json::to_string_pretty(&run).expect("JSON");
    let back: RunFile = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back.results.len(), run.results.len());
    assert_eq!(back.results[1].unit, Unit::Bytes);
    insta::assert_snapshot!(text);
}
