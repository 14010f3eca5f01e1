//! A hand-made run for the tests of every layer (no clock, no machine, nothing measured). The
//! rows cover each kind a reporter meets: a timed row, a bytes row with a breakdown, a skipped,
//! a failed, a flagged and a derived row, a row with single-operation percentiles, and a sweep
//! with its fit; a partial run keeps its first two rows.

use crate::{
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
        ..Row::empty(id, about, params, Method::Adaptive)
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

pub fn rows() -> Vec<Row> {
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

pub fn run_file(partial: bool) -> RunFile {
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
        schema: crate::SCHEMA,
        osprim: BuildInfo {
            version: "0.1.0".into(),
            commit: "fixture".into(),
            rustc: "rustc 1.88.0".into(),
            profile: "release".into(),
        },
        availability: Vec::new(),
        executions: Vec::new(),
        counters: None,
        stability: Vec::new(),
        run_id: None,
        host: None,
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
            rounds_max: Some(9),
            tail_samples: 0,
            counters: false,
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

/// `row` made a cold row (`cache=cold`) whose ratio to its hot twin is `ratio`, interval `ci`
/// ([`crate::ColdHot`]), over 400 pairs with a hot twin of `hot_median_ns`.
pub fn make_cold(row: &mut Row, ratio: f64, ci: [f64; 2], hot_median_ns: f64) {
    row.params.insert("cache".into(), "cold".into());
    row.cold_hot =
        Some(crate::ColdHot { ratio, ci, hot_median_ns, pairs: 400, hot_below_step: false, counts: Vec::new() });
}
