//! Hand-made runs with known samples, for the tests of comparison and of its reports.

use model::fixtures::run_file;
use model::{Derived, Estimate, Row, RunFile};
use stats::rng::Rng;

/// `run` with every measured row given 300 samples in 3 rounds around `level(row) × median`.
pub fn with_samples(run: RunFile, seed: u64, level: impl Fn(&Row) -> f64) -> RunFile {
    spread_samples(run, seed, |r| (level(r), 0.0))
}

/// `run` with every measured row given 300 samples in 3 rounds: round `i` (0, 1, 2) at `level ×
/// (1 + (i − 1) × step)` times the median, each sample ±0.5 % around it, where `(level, step) =
/// shape(row)`.
pub fn spread_samples(mut run: RunFile, seed: u64, shape: impl Fn(&Row) -> (f64, f64)) -> RunFile {
    let mut rng = Rng::new(seed);
    for r in run.results.iter_mut() {
        let Some(m) = r.median() else { continue };
        if r.derived.is_some() {
            continue;
        }
        let (level, step) = shape(r);
        r.samples = (0..300)
            .map(|k| {
                let round = (k / 100) as f64;
                m * level * (1.0 + step * (round - 1.0)) * (1.0 + 0.01 * (rng.next_f64() - 0.5))
            })
            .collect();
        r.samples_per_round = vec![100; 3];
    }
    run
}

/// A pair of runs whose difference row's interval includes 0 in the new run.
pub fn below_resolution_pair() -> (RunFile, RunFile) {
    let base = with_samples(run_file(false), 1, |_| 1.0);
    let mut new = with_samples(run_file(false), 2, |_| 1.0);
    let d = new.results.iter_mut().find(|r| r.id == "ctx.address_space").unwrap();
    d.derived = Some(Derived {
        formula: "ctx.process − ctx.thread".into(),
        estimate: Estimate { point: 9.6, ci95: [-1.2, 20.0] },
        below_resolution: true,
    });
    (base, new)
}

/// The fixture run with `ctx.thread` at `level` times its median and run on CPUs 1 and 0; the
/// other rows as they are (a base at level 1, a new run at another).
pub fn slowed_pair(level: f64) -> RunFile {
    let seed = if level == 1.0 { 1 } else { 2 };
    let mut run = with_samples(run_file(false), seed, |r| if r.id == "ctx.thread" { level } else { 1.0 });
    let r = run.results.iter_mut().find(|r| r.id == "ctx.thread").unwrap();
    r.params.insert("cpus".into(), serde_json::json!([1, 0]));
    run
}

/// `run` with `syscall.getpid` measured cold beside its hot twin: the row becomes the hot twin
/// (`cache=hot`) and a cold row (`cache=cold`) follows it at `cold` times its samples, with its
/// ratio to the twin.
pub fn with_cold_twin(mut run: RunFile, cold: f64) -> RunFile {
    let i = run.results.iter().position(|r| r.id == "syscall.getpid").expect("getpid in the fixture");
    run.results[i].params.insert("cache".into(), "hot".into());
    let mut c = run.results[i].clone();
    c.params.insert("cache".into(), "cold".into());
    c.samples.iter_mut().for_each(|x| *x *= cold);
    if let Some(s) = c.summary.as_mut() {
        s.median *= cold;
        s.median_ci95 = s.median_ci95.map(|x| x * cold);
        s.mean *= cold;
        s.mean_ci95 = s.mean_ci95.map(|x| x * cold);
    }
    let hot = run.results[i].median().unwrap_or(1.0);
    c.cold_hot = Some(model::ColdHot {
        ratio: cold,
        ci: [cold * 0.95, cold * 1.05],
        hot_median_ns: hot,
        pairs: 300,
        hot_below_step: false,
        counts: Vec::new(),
    });
    run.results.insert(i + 1, c);
    run
}
