//! Executions as the outer level of a run: each round measures in a fresh **worker process**
//! that osprim starts from its own binary, with its memory layout varied on purpose.
//!
//! Kalibera and Jones ("Rigorous benchmarking in reasonable time", ISMM 2013) show that the
//! variation between executions of a program is a level of its own, which no number of
//! iterations inside one process can estimate: code placement, heap and stack addresses, page
//! colouring, and what the first moments of a process do differ from one start to the next.
//! Mytkowicz et al. (ASPLOS 2009) and Curtsinger and Berger (STABILIZER, ASPLOS 2013) show
//! that memory layout alone moves results by several percent. So a run's round is an
//! execution: the rounds of a row come from different processes with different layouts
//! ([`layout`]), and the interval the analysis puts on the rounds covers program-start
//! effects as well.
//!
//! The run (the **parent**, `runner`) keeps everything else: selection, placement, the plan
//! and progress, availability probes between rounds, the journal, the batch chosen in round 1,
//! the analysis and the result file. Per round it starts one worker ([`parent::Worker`]), hands
//! it the round's visits ([`protocol::Request`]) and reads each outcome back as it finishes
//! ([`protocol::Report`]). The **worker** ([`worker::main`], `osprim __worker`, hidden) leaks
//! its heap offset, pins, builds its timer from the run's frequency with its own overhead,
//! warms up, measures its visits in order through [`measure_visit`] (the in-process path uses
//! the same function) and streams each outcome.
//!
//! A worker that dies (crash, signal, out of memory) or stops answering within its deadline is
//! killed and reaped; the visit it was measuring fails with a reason that names how it ended,
//! and a new worker takes the rest of the round. At Ctrl-C the worker (in the terminal's
//! process group, or sent SIGTERM by the run) stops after the current sample, reports and
//! leaves. A worker never outlives the run (`PR_SET_PDEATHSIG`, a guard that kills and reaps).

pub mod layout;
pub mod parent;
pub mod protocol;
pub mod worker;

use bench::sampler::SamplerConfig;
use bench::{Benchmark, Ctx, Measured, NotMeasured, Params};

/// The first argument that starts osprim as a worker (not a subcommand of the command line:
/// it is in no help, completion or manual page).
pub const WORKER_ARG: &str = "__worker";

/// Measures one visit (a benchmark under one parameter set, under the round's settings `cfg`
/// with the benchmark's declared [`Benchmark::sampling`] applied), a panic in the benchmark
/// turned into a failed outcome; with the steal time of the measuring CPU while it ran and the
/// time it took.
pub fn measure_visit(
    ctx: &mut Ctx<'_>,
    bench: &dyn Benchmark,
    params: &Params,
    cfg: &SamplerConfig,
) -> (Result<Measured, NotMeasured>, u64, std::time::Duration) {
    ctx.begin_visit(cfg, bench.sampling(params));
    let began = std::time::Instant::now();
    let steal_before = platform::placement::steal_jiffies(ctx.cpu);
    let cold = ctx.set_cold(bench::cold::is_cold_visit(bench, params));
    let outcome = match (bench.available(), cold) {
        (Ok(()), Err(e)) => Err(NotMeasured::Failed(e)),
        (Ok(()), Ok(())) => crate::panics::guarded(|| bench.run(ctx, params))
            .unwrap_or_else(|e| Err(NotMeasured::Failed(format!("internal error (a bug in osprim): {e}")))),
        (Err(reason), _) => Err(NotMeasured::Skipped(reason)),
    };
    let _ = ctx.set_cold(false);
    let steal = match (steal_before, platform::placement::steal_jiffies(ctx.cpu)) {
        (Some(b), Some(a)) => a.saturating_sub(b),
        _ => 0,
    };
    (outcome, steal, began.elapsed())
}
