//! The run: select benchmarks, check the output path, pin, build the timer, measure each
//! benchmark through the sampler, analyse, and save the result file after every benchmark so
//! an interruption or a later failure loses nothing.

use crate::analyse;
use crate::bench::{Benchmark, Ctx, Measured, NotMeasured, Params};
use crate::config::{Output, RunConfig};
use crate::model::{BuildInfo, Placement, RunFile, SCHEMA};
use crate::sampler::{Method, SamplerConfig};
use crate::store::write_result_file;
use crate::{env, output, placement, registry, timer};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::config::UsageError;

/// What a finished run hands back.
pub struct Finished {
    /// The result document.
    pub run: RunFile,
    /// Where it was saved, if it was.
    pub saved_to: Option<PathBuf>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
    /// Why the result file could not be saved at the end (the run itself went on and its
    /// results are on stdout).
    pub save_error: Option<String>,
}

/// Where results go, checked before anything is measured: `--output` (which must be absent
/// or a regular file it can write), nothing with `--no-save`, else a new, unique file in
/// `osprim-results/` ([`output`]).
fn output_path(output: &Output, started: std::time::SystemTime) -> Result<Option<PathBuf>> {
    match output {
        Output::None => Ok(None),
        Output::File(p) => {
            output::check_target(p)?;
            Ok(Some(p.clone()))
        }
        Output::Default => {
            let dir = Path::new("osprim-results");
            output::reserve_default(dir, started)
                .map(Some)
                .with_context(|| format!("cannot create a result file in {}", dir.display()))
        }
    }
}

/// Runs the benchmarks `args.patterns` match.
pub fn run(args: &RunConfig, interrupt: &AtomicBool) -> Result<Finished> {
    let benches = registry::select(&args.patterns).map_err(|p| {
        let hint = registry::nearest(&p).map(|n| format!("; did you mean '{n}'?")).unwrap_or_default();
        UsageError(format!("no benchmark matches '{p}' (see osprim list){hint}"))
    })?;
    let cfg = args.sampler.clone();
    let started = std::time::SystemTime::now();
    let usage = |e: placement::PlacementError| match e {
        placement::PlacementError::NotAllowed { .. } => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    };
    if let Some(pair) = args.cpu_pair {
        placement::check_pair(pair).map_err(usage)?;
    }
    let chosen = placement::choose(args.cpu).map_err(usage)?;
    let out = output_path(&args.output, started)?;
    placement::pin(chosen.cpu)?;

    let machine = env::capture();
    let (timer, timer_info) = timer::detect();
    let scratch =
        tempfile::Builder::new().prefix("osprim-").tempdir().context("cannot create a temporary directory")?;
    crate::interrupt::remove_on_exit(scratch.path());

    let mut run = RunFile {
        schema: SCHEMA,
        osprim: BuildInfo::current(),
        started_utc: humantime::format_rfc3339_seconds(started).to_string(),
        finished_utc: None,
        partial: true,
        // Arguments as given; a name that is not UTF-8 is kept with replacement characters.
        command: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
        config: cfg.record(),
        placement: Placement {
            cpu: chosen.cpu,
            chosen_by: chosen.chosen_by,
            allowed_cpus: chosen.allowed,
            cpu_pair: args.cpu_pair,
        },
        timer: timer_info.clone(),
        machine,
        results: Vec::new(),
    };

    // The file exists from the start (a reserved default name holds nothing yet).
    if let Some(path) = &out {
        write_result_file(path, &run).with_context(|| format!("cannot write results to {}", path.display()))?;
    }
    let single_cfg = SamplerConfig { rounds: 1, ..cfg.clone() }.for_round(0);
    let visits: u64 = benches.iter().map(|b| if b.single_round() { 1 } else { cfg.rounds.max(1) as u64 }).sum();
    let progress = progress_bar(visits);
    let allowed = run.placement.allowed_cpus.clone();
    // The seed method reports means: it subtracts the mean overhead of an empty timed region,
    // not the median (the overhead is skewed), and every routine then subtracts the same.
    let timer = match cfg.method {
        Method::Seed => timer::Timer::with_overhead(timer, timer.overhead_mean_ticks()),
        Method::Adaptive => timer,
    };
    let mut ctx = Ctx::new(timer, &timer_info, single_cfg.clone(), chosen.cpu, scratch.path(), interrupt);
    ctx.allowed_cpus = allowed;
    ctx.cpu_pair = args.cpu_pair;
    ctx.sizes = args.sizes.clone();
    ctx.virtualized = run.machine.virtualization.virtualized == Some(true);
    let mut slots: Vec<Slot> = Vec::new();
    let mut last_save = std::time::Instant::now();
    let mut save_warned = false;
    'rounds: for round in 0..cfg.rounds.max(1) {
        let round_cfg = cfg.for_round(round);
        for bench in &benches {
            if round > 0 && bench.single_round() {
                continue;
            }
            if interrupt.load(Ordering::Relaxed) {
                break 'rounds;
            }
            progress.set_message(format!("round {}/{}: {}", round + 1, cfg.rounds, bench.id()));
            let variants = match bench.available() {
                Ok(()) => bench.variants(&ctx),
                Err(_) => vec![Default::default()],
            };
            for params in variants {
                if interrupt.load(Ordering::Relaxed) {
                    break 'rounds;
                }
                let at = match slots.iter().position(|s| s.bench.id() == bench.id() && s.params == params) {
                    Some(i) => i,
                    None if round == 0 => {
                        slots.push(Slot::new(*bench, params.clone(), run.results.len()));
                        run.results.push(analyse::empty_row(bench.id(), bench.about(), params.clone(), cfg.method));
                        slots.len() - 1
                    }
                    None => continue,
                };
                let slot = &mut slots[at];
                if slot.done {
                    continue;
                }
                ctx.cfg = SamplerConfig {
                    batch: slot.batch,
                    spread_between_rounds_rel: slot.spread_between_rounds_rel(),
                    ..if bench.single_round() { single_cfg.clone() } else { round_cfg.clone() }
                };
                let steal_before = placement::steal_jiffies(chosen.cpu);
                let outcome = match bench.available() {
                    Ok(()) => bench.run(&mut ctx, &params),
                    Err(reason) => Err(crate::bench::NotMeasured::Skipped(reason)),
                };
                if let (Some(b), Some(a)) = (steal_before, placement::steal_jiffies(chosen.cpu)) {
                    slot.steal_jiffies += a.saturating_sub(b);
                }
                slot.record(outcome);
                if let Some(path) = out.as_ref().filter(|_| last_save.elapsed() >= SAVE_EVERY) {
                    for slot in slots.iter_mut().filter(|s| s.dirty) {
                        run.results[slot.row] = slot.analyse(&cfg, &timer_info, chosen.cpu, INTERIM_RESAMPLES);
                        slot.dirty = false;
                    }
                    // A failed save (a full disk, a file-size limit) does not stop the run: what is
                    // measured is printed at the end, and the save is tried again then.
                    if let Err(e) = write_result_file(path, &run)
                        && !save_warned
                    {
                        eprintln!("warning: cannot save results to {}: {e}; measuring goes on", path.display());
                        save_warned = true;
                    }
                    last_save = std::time::Instant::now();
                }
            }
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    for slot in &slots {
        run.results[slot.row] = slot.analyse(&cfg, &timer_info, chosen.cpu, crate::stats::DEFAULT_RESAMPLES);
    }
    crate::derive::add_derived(&mut run.results, registry::DERIVED, cfg.method);

    let interrupted = interrupt.load(Ordering::Relaxed);
    run.partial = interrupted;
    // An interrupted run did not finish: it has no end time (docs/results.md).
    run.finished_utc =
        (!interrupted).then(|| humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
    run.machine.scheduling.load_avg_end = env::load_average();
    let save_error = out.as_ref().and_then(|path| {
        write_result_file(path, &run).err().map(|e| format!("cannot save results to {}: {e}", path.display()))
    });
    crate::interrupt::forget(scratch.path());
    drop(scratch);
    let saved_to = if save_error.is_some() { None } else { out };
    Ok(Finished { run, saved_to, interrupted, save_error })
}

/// The result file is rewritten at most this often while the run goes on (each write is the
/// whole file, synced), and always at the end — also after Ctrl-C.
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Bootstrap replicates of the rows saved while the run goes on (the final rows use
/// `stats::DEFAULT_RESAMPLES`): enough for a partial file, cheap enough to redo each round.
const INTERIM_RESAMPLES: usize = 200;

/// One benchmark under one parameter set, across the rounds.
struct Slot {
    bench: &'static dyn Benchmark,
    params: Params,
    /// What each round gave, in order.
    outcomes: Vec<Result<Measured, NotMeasured>>,
    /// The batch the first round chose, kept by the later ones.
    batch: Option<u64>,
    /// Steal time over all its rounds, in `USER_HZ` ticks.
    steal_jiffies: u64,
    /// Its row in the result file.
    row: usize,
    /// No more rounds: it was skipped or a round failed.
    done: bool,
    /// Measured since its row was last analysed.
    dirty: bool,
}

impl Slot {
    fn new(bench: &'static dyn Benchmark, params: Params, row: usize) -> Slot {
        Slot { bench, params, outcomes: Vec::new(), batch: None, steal_jiffies: 0, row, done: false, dirty: false }
    }

    fn record(&mut self, outcome: Result<Measured, NotMeasured>) {
        match &outcome {
            Ok(m) if m.samples.iterations_per_sample > 0 => {
                self.batch.get_or_insert(m.samples.iterations_per_sample);
            }
            Ok(_) => {}
            Err(_) => self.done = true,
        }
        self.outcomes.push(outcome);
        self.dirty = true;
    }

    /// The standard deviation of the measured rounds' medians relative to their mean; 0 with
    /// fewer than two rounds.
    fn spread_between_rounds_rel(&self) -> f64 {
        let medians: Vec<f64> = self
            .outcomes
            .iter()
            .filter_map(|o| o.as_ref().ok())
            .filter(|m| !m.samples.per_op_ns.is_empty())
            .map(|m| {
                let mut v = m.samples.per_op_ns.clone();
                crate::stats::median_in_place(&mut v)
            })
            .collect();
        if medians.len() < 2 {
            return 0.0;
        }
        let mean = crate::stats::summary::mean(&medians);
        let sd = crate::stats::summary::sample_stddev(&medians, mean);
        if mean.abs() > 0.0 && sd.is_finite() { sd / mean.abs() } else { 0.0 }
    }

    fn analyse(
        &self,
        cfg: &SamplerConfig,
        timer: &timer::TimerInfo,
        cpu: usize,
        resamples: usize,
    ) -> crate::model::Row {
        let b = self.bench;
        let mut row =
            analyse::rounds_row(b.id(), b.about(), self.params.clone(), &self.outcomes, cfg, timer, resamples);
        if self.steal_jiffies > 0 {
            row.notes.push(format!(
                "the hypervisor took {} ms from CPU {cpu} while this ran (steal time): figures may be inflated",
                self.steal_jiffies * 1000 / clock_ticks_per_second(),
            ));
        }
        row
    }
}

/// `USER_HZ`, the unit of `/proc/stat` (100 on every Linux architecture osprim supports).
fn clock_ticks_per_second() -> u64 {
    100
}

fn progress_bar(len: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{pos}/{len}] {wide_msg} {elapsed}") {
        bar.set_style(style);
    }
    bar
}
