//! The run: select benchmarks, check the output path, pin, build the timer, measure each
//! benchmark through the sampler, append what it gave to the run's journal (so that a crash,
//! a full disk or a second signal loses nothing), analyse, and write the result file.
//! [`finish`] turns the journal of a run that did not end into its result file.

use crate::analyse;
use crate::bench::{Benchmark, Ctx, Measured, NotMeasured, Params};
use crate::config::{Only, Output, RunConfig};
use crate::journal::{self, Journal, Record, Rounds};
use crate::model::{BuildInfo, Placement, RunFile, SCHEMA};
use crate::progress::{Observer, Plan};
use crate::sampler::{Method, SamplerConfig};
use crate::stats::DEFAULT_RESAMPLES;
use crate::store::write_result_file;
use crate::{env, output, placement, registry, timer};
use anyhow::{Context, Result};
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
    /// Whether memory ran short and the run stopped early ([`crate::sys::reserve`]).
    pub memory_short: bool,
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

/// Whether a variant's parameters are among those a restricted run (`only`) asks for.
fn wanted(only: Option<&[Only]>, id: &str, params: &Params) -> bool {
    let Some(only) = only else { return true };
    only.iter()
        .filter(|o| o.id == id)
        .any(|o| o.params.iter().all(|(k, v)| params.get(k).is_some_and(|x| crate::model::vocab::param_is(x, v))))
}

/// Runs the benchmarks `args.patterns` match, telling `observer` how it goes.
pub fn run(args: &RunConfig, interrupt: &AtomicBool, observer: &mut dyn Observer) -> Result<Finished> {
    let patterns: Vec<String> = match &args.only {
        Some(only) if args.patterns.is_empty() => only.iter().map(|o| o.id.clone()).collect(),
        _ => args.patterns.clone(),
    };
    let benches = registry::select(&patterns).map_err(|p| {
        let hint = registry::nearest(&p).map(|n| format!("; did you mean '{n}'?")).unwrap_or_default();
        UsageError(format!("no benchmark matches '{p}' (see osprim list){hint}"))
    })?;
    let mut cfg = args.sampler.clone();
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
    // Room to finish should memory run short (an error here only means no such room).
    let _ = crate::sys::reserve::arm();
    let stop = || interrupt.load(Ordering::Relaxed) || crate::sys::reserve::short();
    let mut memory_short = false;
    let scratch = crate::scratch::create().context("cannot create a temporary directory")?;
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
        availability: Vec::new(),
    };

    // The journal first (it refuses a name another run is writing to), then the result file,
    // which exists from the start and holds the run without results until the end.
    let mut store = match &out {
        Some(path) => Some(Store::open(path, &run)?),
        None => None,
    };
    let mut single_cfg = SamplerConfig { rounds: 1, ..cfg.clone() }.for_round(0);
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
    // Every result's parameters, known before measuring: the plan.
    let only = args.only.as_deref();
    let variants_of = |bench: &dyn Benchmark, ctx: &Ctx| -> Vec<Params> {
        let all = match bench.available() {
            Ok(()) => bench.variants(ctx),
            Err(_) => vec![Default::default()],
        };
        let kept: Vec<Params> = all.iter().filter(|p| wanted(only, bench.id(), p)).cloned().collect();
        if kept.is_empty() && bench.available().is_err() { all } else { kept }
    };
    let planned: Vec<Vec<Params>> = benches.iter().map(|b| variants_of(*b, &ctx)).collect();
    let rounds_of = |b: &dyn Benchmark| if b.single_round() { 1 } else { cfg.rounds.max(1) };
    let mut plan = Plan {
        results: planned.iter().map(Vec::len).sum(),
        benchmarks: benches.len(),
        skipped: benches.iter().zip(&planned).filter(|(b, _)| b.available().is_err()).map(|(_, v)| v.len()).sum(),
        visits: benches.iter().zip(&planned).map(|(b, v)| (rounds_of(*b) * v.len()) as u64).sum(),
        rounds: cfg.rounds.max(1),
        budget_s: cfg.budget_s,
    };
    // A run with a time bound (the seed suite) shares it out: a smaller budget per result.
    if let Some(bound) = args.bound_s
        && plan.bound_s() > bound
    {
        plan.budget_s = cfg.budget_s * bound / plan.bound_s();
        cfg.budget_s = plan.budget_s;
        single_cfg = SamplerConfig { rounds: 1, ..cfg.clone() }.for_round(0);
        run.config = cfg.record();
    }
    observer.plan(&plan);
    let mut slots: Vec<Slot> = Vec::new();
    let probe_cpu = |before_round: usize, run: &mut RunFile, store: &mut Option<Store>| {
        let before_round = u16::try_from(before_round).unwrap_or(u16::MAX);
        let probe = crate::availability::probe(&timer, chosen.cpu, before_round, crate::availability::WINDOW);
        if let Some(store) = store.as_mut() {
            store.append(&Record::Probe { probe: probe.clone() });
        }
        run.availability.push(probe);
    };
    'rounds: for round in 0..cfg.rounds.max(1) {
        let round_cfg = cfg.for_round(round);
        if !stop() {
            probe_cpu(round, &mut run, &mut store);
            // The timer overhead of this round, calibrated beside its benchmarks through the
            // sampler's path (bench::overhead), subtracted from its samples and recorded.
            let overhead = crate::bench::overhead::calibrate_overhead(&timer);
            ctx.use_overhead(overhead, cfg.method);
            run.timer.overhead_by_round.push(overhead.record(&timer, round, cfg.method));
        }
        for (bench, variants) in benches.iter().zip(&planned) {
            if round > 0 && bench.single_round() {
                continue;
            }
            if stop() {
                memory_short = crate::sys::reserve::short();
                break 'rounds;
            }
            for params in variants.iter().cloned() {
                if stop() {
                    memory_short = crate::sys::reserve::short();
                    break 'rounds;
                }
                let at = match slots.iter().position(|s| s.bench.id() == bench.id() && s.params == params) {
                    Some(i) => i,
                    None if round == 0 => {
                        slots.push(Slot::new(*bench, params.clone()));
                        if let Some(store) = store.as_mut() {
                            let r = &slots[slots.len() - 1].rounds;
                            let (id, about, params) = (r.id.clone(), r.about.clone(), r.params.clone());
                            store.append(&Record::Slot { row: slots.len() - 1, id, about, params });
                        }
                        slots.len() - 1
                    }
                    None => continue,
                };
                let slot = &mut slots[at];
                if slot.done {
                    observer.visited();
                    continue;
                }
                observer.visiting(round, &visit_label(bench.id(), &params));
                ctx.cfg = SamplerConfig {
                    batch: slot.batch,
                    spread_between_rounds_rel: slot.spread_between_rounds_rel(),
                    ..if bench.single_round() { single_cfg.clone() } else { round_cfg.clone() }
                };
                let round_began = std::time::Instant::now();
                let steal_before = placement::steal_jiffies(chosen.cpu);
                let outcome = match bench.available() {
                    Ok(()) => crate::panics::guarded(|| bench.run(&mut ctx, &params))
                        .unwrap_or_else(|e| Err(NotMeasured::Failed(format!("internal error (a bug in osprim): {e}")))),
                    Err(reason) => Err(crate::bench::NotMeasured::Skipped(reason)),
                };
                let steal = match (steal_before, placement::steal_jiffies(chosen.cpu)) {
                    (Some(b), Some(a)) => a.saturating_sub(b),
                    _ => 0,
                };
                if let Some(store) = store.as_mut() {
                    store.append_outcome(at, steal, &outcome);
                }
                slot.record(outcome, steal);
                // A benchmark whose rounds cost far more than its budget (set-up and operations
                // slower than the budget allows, e.g. 64 MiB messages) gets no more rounds.
                slot.spent += round_began.elapsed();
                if !slot.done
                    && !bench.single_round()
                    && round + 1 < cfg.rounds
                    && slot.spent.as_secs_f64() > round_cap_s(cfg.budget_s)
                {
                    slot.done = true;
                    let note = format!(
                        "measured in {} of {} rounds: they took {:.1} s against a budget of {} s (set-up or \
                         operations slower than the budget allows)",
                        round + 1,
                        cfg.rounds,
                        slot.spent.as_secs_f64(),
                        cfg.budget_s
                    );
                    if let Some(store) = store.as_mut() {
                        store.append(&Record::Note { row: at, note: note.clone() });
                    }
                    slot.rounds.notes.push(note);
                }
                observer.visited();
                // A result is final after its last round (or when it gets no more): analysed
                // now, shown as it comes, kept for the result file.
                if slot.done || bench.single_round() || round + 1 == cfg.rounds.max(1) {
                    slot.done = true;
                    let row =
                        analyse_rounds(&slot.rounds, &run.config, &run.timer, run.placement.cpu, DEFAULT_RESAMPLES);
                    observer.result(&row);
                    slot.row = Some(row);
                }
            }
        }
    }
    if !stop() {
        probe_cpu(cfg.rounds.max(1), &mut run, &mut store);
    }
    observer.finish();
    let interrupted = interrupt.load(Ordering::Relaxed);
    let finished_utc = (!interrupted && !memory_short)
        .then(|| humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
    if let Some(store) = store.as_mut() {
        store.append(&Record::End { finished_utc: finished_utc.clone() });
    }
    let measured_rounds: Vec<usize> = slots.iter().map(|s| s.rounds.outcomes.len()).collect();
    run.results = slots
        .into_iter()
        .map(|s| match s.row {
            Some(row) => row,
            None => analyse_rounds(&s.rounds, &run.config, &run.timer, run.placement.cpu, DEFAULT_RESAMPLES),
        })
        .collect();
    crate::availability::mark_busy_rows(&mut run.results, &measured_rounds, &run.availability, cfg.rounds.max(1));
    crate::derive::add_derived(&mut run.results, registry::DERIVED, run.config.method);
    // An interrupted run did not finish: it has no end time (docs/results.md).
    run.partial = interrupted || memory_short;
    run.finished_utc = finished_utc;
    run.machine.scheduling.load_avg_end = env::load_average();
    let (saved_to, save_error) = match store {
        Some(store) => store.close(&run),
        None => (None, None),
    };
    crate::interrupt::forget(scratch.path());
    drop(scratch);
    Ok(Finished { run, saved_to, interrupted, memory_short, save_error })
}

/// The result file and the journal beside it, while the run goes on.
struct Store {
    path: PathBuf,
    journal: Journal,
    /// Whether a failed journal write was reported.
    warned: bool,
}

impl Store {
    /// Creates the journal (refused if another run holds it, or a run that did not end left
    /// it), writes the run's start to it and the run so far to the result file.
    fn open(path: &Path, run: &RunFile) -> Result<Store> {
        let journal = Journal::create(path)?;
        let mut store = Store { path: path.to_path_buf(), journal, warned: false };
        let start = Record::Start { journal: journal::JOURNAL_FORMAT, run: Box::new(run.clone()) };
        let written = store
            .journal
            .append(&start)
            .and_then(|()| write_result_file(path, run))
            .with_context(|| format!("cannot write results to {}", path.display()));
        if let Err(e) = written {
            let _ = store.journal.remove();
            return Err(e);
        }
        // A second signal ends the run at once: the result file is then made from the journal.
        let (result, resamples) = (path.to_path_buf(), INTERIM_RESAMPLES);
        crate::interrupt::on_second_signal(Box::new(move || {
            let _ = finish_journal(&result, resamples, false);
        }));
        Ok(store)
    }

    /// Appends a record. A failed write (a full disk, a file-size limit) does not stop the
    /// run: it is said once, and the result file is still written at the end.
    fn append(&mut self, record: &Record) {
        let written = self.journal.append(record);
        self.warn_once(written);
    }

    fn warn_once(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written
            && !std::mem::replace(&mut self.warned, true)
        {
            eprintln!("warning: cannot write to {}: {e}; measuring goes on", self.journal.path().display());
        }
    }

    fn append_outcome(&mut self, row: usize, steal_jiffies: u64, outcome: &Result<Measured, NotMeasured>) {
        let outcome = match outcome {
            Ok(m) => journal::OutcomeRef::Measured(m),
            Err(n) => journal::OutcomeRef::NotMeasured(n),
        };
        let written = self.journal.append_outcome(row, steal_jiffies, outcome);
        self.warn_once(written);
    }

    /// Writes the result file; the journal goes once it is saved, and stays if it is not.
    /// Returns where the results were saved, or why they could not be.
    fn close(self, run: &RunFile) -> (Option<PathBuf>, Option<String>) {
        crate::interrupt::clear_second_signal();
        match write_result_file(&self.path, run) {
            Ok(()) => {
                let _ = self.journal.remove();
                (Some(self.path), None)
            }
            Err(e) => {
                let (journal, result) = (self.journal.path().display(), self.path.display());
                let kept = if self.journal.error().is_none() {
                    format!("; every measurement is kept in {journal} ('osprim finish {result}' makes the result file)")
                } else {
                    format!("; {journal} keeps what it could take before the same error ('osprim finish {result}')")
                };
                (None, Some(format!("cannot save results to {}: {e}{kept}", self.path.display())))
            }
        }
    }
}

/// Fills in the rows of `run` from everything measured, then adds the derived rows.
pub fn assemble(run: &mut RunFile, rounds: &[Rounds], resamples: usize) {
    run.results =
        rounds.iter().map(|r| analyse_rounds(r, &run.config, &run.timer, run.placement.cpu, resamples)).collect();
    let measured_rounds: Vec<usize> = rounds.iter().map(|r| r.outcomes.len()).collect();
    crate::availability::mark_busy_rows(
        &mut run.results,
        &measured_rounds,
        &run.availability,
        run.config.rounds.max(1),
    );
    crate::derive::add_derived(&mut run.results, registry::DERIVED, run.config.method);
}

/// Makes the result file of a run that did not end from its journal (`osprim finish`), and
/// removes the journal once the file is saved. `lock`: take the journal's lock (refusing a
/// journal a live run holds); the run itself, ending at a second signal, does not.
pub fn finish_journal(result: &Path, resamples: usize, lock: bool) -> Result<(RunFile, usize)> {
    let (held, path) = if lock {
        let (file, path) = journal::open_unlocked(result)?;
        (Some(file), path)
    } else {
        (None, journal::path_for(result))
    };
    let contents = journal::read(&path)?;
    output::check_target(result)?;
    let mut run = contents.run;
    assemble(&mut run, &contents.rows, resamples);
    run.finished_utc = contents.finished_utc;
    run.partial = run.finished_utc.is_none();
    write_result_file(result, &run).with_context(|| format!("cannot write results to {}", result.display()))?;
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    drop(held);
    Ok((run, contents.unreadable_lines))
}

/// Bootstrap replicates of the rows of a run ended by a second signal (the final rows use
/// `stats::DEFAULT_RESAMPLES`): enough for a partial file, quick to make.
const INTERIM_RESAMPLES: usize = 200;

/// One benchmark under one parameter set, across the rounds.
struct Slot {
    bench: &'static dyn Benchmark,
    params: Params,
    /// What its rounds gave.
    rounds: Rounds,
    /// The batch the first round chose, kept by the later ones.
    batch: Option<u64>,
    /// No more rounds: it was skipped, a round failed, or its rounds overran the budget.
    done: bool,
    /// Time its rounds took so far (set-up included).
    spent: std::time::Duration,
    /// Its result row, once final.
    row: Option<crate::model::Row>,
}

/// A benchmark gets no more rounds once its rounds have taken this long: four times its
/// budget, and at least a second (set-up of a round is outside the sampler's budget).
fn round_cap_s(budget_s: f64) -> f64 {
    (4.0 * budget_s).max(1.0)
}

impl Slot {
    fn new(bench: &'static dyn Benchmark, params: Params) -> Slot {
        let rounds = Rounds {
            id: bench.id().to_string(),
            about: bench.about().to_string(),
            params: params.clone(),
            outcomes: Vec::new(),
            steal_jiffies: 0,
            notes: Vec::new(),
        };
        Slot { bench, params, rounds, batch: None, done: false, spent: std::time::Duration::ZERO, row: None }
    }

    fn record(&mut self, outcome: Result<Measured, NotMeasured>, steal_jiffies: u64) {
        match &outcome {
            Ok(m) if m.samples.iterations_per_sample > 0 => {
                self.batch.get_or_insert(m.samples.iterations_per_sample);
            }
            Ok(_) => {}
            Err(_) => self.done = true,
        }
        self.rounds.outcomes.push(outcome);
        self.rounds.steal_jiffies += steal_jiffies;
    }

    /// The standard deviation of the measured rounds' medians relative to their mean; 0 with
    /// fewer than two rounds.
    fn spread_between_rounds_rel(&self) -> f64 {
        let medians: Vec<f64> = self
            .rounds
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
}

/// The result row of everything measured for one benchmark and parameter set.
fn analyse_rounds(
    r: &Rounds,
    cfg: &crate::model::SamplerSettings,
    timer: &timer::TimerInfo,
    cpu: usize,
    resamples: usize,
) -> crate::model::Row {
    let mut row = analyse::rounds_row(&r.id, &r.about, r.params.clone(), &r.outcomes, cfg, timer, resamples);
    row.notes.extend(r.notes.iter().cloned());
    if r.steal_jiffies > 0 {
        row.notes.push(format!(
            "the hypervisor took {} ms from CPU {cpu} while this ran (steal time): figures may be inflated",
            r.steal_jiffies * 1000 / clock_ticks_per_second(),
        ));
    }
    row
}

/// `USER_HZ`, the unit of `/proc/stat` (100 on every Linux architecture osprim supports).
fn clock_ticks_per_second() -> u64 {
    100
}

/// `id k=v k=v`, what the progress bar says is being measured.
fn visit_label(id: &str, params: &Params) -> String {
    let mut s = id.to_string();
    for (k, v) in params {
        match v {
            serde_json::Value::String(text) => s.push_str(&format!(" {k}={text}")),
            other => s.push_str(&format!(" {k}={other}")),
        }
    }
    s
}
