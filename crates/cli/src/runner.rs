//! The run: select benchmarks, check the output path, pin, build the timer, measure each
//! benchmark through the sampler, append what it gave to the run's journal (so that a crash,
//! a full disk or a second signal loses nothing), run the seed suite's short stability tests
//! after the rounds ([`crate::short_stability`]), analyse, and write the result file.
//! [`finish`] turns the journal of a run that did not end into its result file.

use crate::config::{CacheMode, Only, Output, RunConfig};
use crate::execution::layout::Layouts;
use crate::execution::parent::{Event, Launcher, Worker};
use crate::execution::protocol::{Report, Request, Visit, from_wire};
use crate::progress::{Observer, Plan};
use crate::{env, output, placement, registry, timer};
use analysis::analyse;
use anyhow::{Context, Result};
use bench::sampler::{Method, SamplerConfig};
use bench::{Benchmark, Ctx, Measured, NotMeasured, Params};
use model::{Execution, Placement, RunFile, SCHEMA};
use stats::DEFAULT_RESAMPLES;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use store::journal::{self, Journal, Record, Rounds};
use store::write_result_file;

pub use crate::config::UsageError;

/// What a finished run hands back.
pub struct Finished {
    /// The result document.
    pub run: RunFile,
    /// Where it was saved, if it was.
    pub saved_to: Option<PathBuf>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
    /// Whether memory ran short and the run stopped early ([`sys::reserve`]).
    pub memory_short: bool,
    /// Why the result file could not be saved at the end (the run itself went on and its
    /// results are on stdout).
    pub save_error: Option<String>,
    /// Why the run's scratch directory was gone at its end (something else removed it while
    /// the run measured: the rows that needed it failed for that reason).
    pub scratch_lost: Option<String>,
}

/// Where results go, checked before anything is measured: `--output` (which must be absent
/// or a regular file it can write), nothing with `--no-save`, else a new, unique file in
/// `osprim-results/` ([`output`]), reserved until the run's store takes it over.
fn output_path(output: &Output, started: std::time::SystemTime) -> Result<(Option<PathBuf>, Option<Reservation>)> {
    match output {
        Output::None => Ok((None, None)),
        Output::File(p) => {
            output::check_result_target(p)?;
            Ok((Some(p.clone()), None))
        }
        Output::Default => {
            let dir = Path::new("osprim-results");
            let path = platform::interrupt::create_removable(|| output::reserve_default(dir, started), Clone::clone)
                .map_err(|e| no_result_file_in(dir, &e))?;
            Ok((Some(path.clone()), Some(Reservation { path, armed: true })))
        }
    }
}

/// Why no result file can be made in `dir` (read-only, not a directory, full), with the two
/// ways on: one line.
pub(crate) fn no_result_file_in(dir: &Path, e: &std::io::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot create a result file in {}: {e}; run with --no-save (no result file) or -o PATH (saved elsewhere)",
        dir.display()
    )
}

/// A default result file reserved (created empty) for a run that has not started writing it:
/// removed should the run fail before it does, or a second signal end it; kept once the run's
/// [`Store`] holds it.
struct Reservation {
    path: PathBuf,
    armed: bool,
}

impl Reservation {
    /// The run writes the file now: it is no longer removed.
    fn keep(mut self) {
        self.armed = false;
        platform::interrupt::settle(&self.path, || ());
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.armed {
            let path = self.path.clone();
            platform::interrupt::settle(&path, || {
                // Only the empty placeholder: never a file something else has written since.
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
                    let _ = std::fs::remove_file(&path);
                }
            });
        }
    }
}

/// Whether a variant's parameters are among those a restricted run (`only`) asks for.
fn wanted(only: Option<&[Only]>, id: &str, params: &Params) -> bool {
    let Some(only) = only else { return true };
    only.iter()
        .filter(|o| o.id == id)
        .any(|o| o.params.iter().all(|(k, v)| params.get(k).is_some_and(|x| model::vocab::param_is(x, v))))
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
    let (out, reservation) = output_path(&args.output, started)?;
    placement::pin(chosen.cpu)?;

    let machine = env::capture();
    let (timer, timer_info) = timer::detect();
    // Room to finish should memory run short (an error here only means no such room).
    let _ = sys::reserve::arm();
    let stop = || interrupt.load(Ordering::Relaxed) || sys::reserve::short();
    let mut memory_short = false;
    let scratch = platform::interrupt::create_removable(platform::scratch::create, |d| d.path().to_path_buf())
        .context("cannot create a temporary directory")?;

    let mut run = RunFile {
        schema: SCHEMA,
        osprim: crate::build_info(),
        started_utc: humantime::format_rfc3339_seconds(started).to_string(),
        finished_utc: None,
        partial: true,
        // Arguments as given, passwords redacted (`--db postgres://u:…@h/db`); a name that is
        // not UTF-8 is kept with replacement characters.
        run_id: Some(run_id()),
        host: args.host.clone(),
        command: store::history::redact_args(
            &std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        ),
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
        executions: Vec::new(),
        counters: cfg.counters.then(bench::counters::probe),
        stability: Vec::new(),
    };

    // The journal first (it refuses a name another run is writing to), then the result file,
    // which exists from the start and holds the run without results until the end.
    let store = match &out {
        Some(path) => Some(Store::open(path, &run, reservation)?),
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
    let mut cold_skipped: Vec<(&'static dyn Benchmark, String)> = Vec::new();
    let planned: Vec<Vec<Params>> = benches
        .iter()
        .map(|b| {
            let hot = variants_of(*b, &ctx);
            let (planned, skip) = plan_cache(*b, hot, &ctx, args, only);
            if let Some(why) = skip {
                cold_skipped.push((*b, why));
            }
            planned
        })
        .collect();
    let rounds_of = |b: &dyn Benchmark| if b.single_round() { 1 } else { cfg.rounds.max(1) };
    let twins: usize =
        benches.iter().zip(&planned).map(|(b, v)| v.iter().filter(|p| bench::cold::is_cold_visit(*b, p)).count()).sum();
    // Results measured in rounds (not the twins, measured in their cold rows' visits): those
    // that may get extra rounds.
    let in_rounds: usize = benches
        .iter()
        .zip(&planned)
        .filter(|(b, _)| b.available().is_ok() && !b.single_round())
        .map(|(_, v)| v.len())
        .sum();
    let (rounds, rounds_max) = (cfg.rounds.max(1), cfg.most_rounds());
    let extra_s =
        |budget_s: f64| if rounds_max > rounds { EXTRA_BUDGET_SHARE * budget_s * in_rounds as f64 } else { 0.0 };
    let mut plan = Plan {
        twins,
        results: planned.iter().map(Vec::len).sum::<usize>() + cold_skipped.len() + twins,
        benchmarks: benches.len(),
        skipped: benches
            .iter()
            .zip(&planned)
            .filter(|(b, _)| b.available().is_err())
            .map(|(_, v)| v.len())
            .sum::<usize>()
            + cold_skipped.len(),
        visits: benches.iter().zip(&planned).map(|(b, v)| (rounds_of(*b) * v.len()) as u64).sum::<u64>()
            + cold_skipped.len() as u64,
        rounds,
        rounds_max,
        budget_s: cfg.budget_s,
        extra_s: extra_s(cfg.budget_s),
        short_tests: if args.short_stability.is_some() { crate::short_stability::TESTS.len() } else { 0 },
        short_each_s: args.short_stability.map_or(0.0, |d| d.as_secs_f64()),
        ..Plan::default()
    };
    // A run with a time bound (the seed suite) shares it out: the short stability tests after
    // the rounds take their length, and the rounds what is left, with a smaller budget per
    // result so that they fit; extra rounds then take only what their rounds leave of it.
    let sampling_bound_s = args.bound_s.map(|b| (b - plan.short_s()).max(b / 2.0));
    if let Some(bound) = sampling_bound_s {
        if plan.base_bound_s() > bound {
            plan.budget_s = cfg.budget_s * bound / plan.base_bound_s();
            cfg.budget_s = plan.budget_s;
            single_cfg = SamplerConfig { rounds: 1, ..cfg.clone() }.for_round(0);
            run.config = cfg.record();
        }
        plan.extra_s = extra_s(cfg.budget_s);
        plan.limit_s = Some(bound);
    }
    observer.plan(&plan);
    let growth = Growth { rounds, rounds_max, pool_s: plan.extra_s, bound_s: sampling_bound_s };
    let mut book = Book::new(store, observer, &growth, cfg.budget_s);
    // `--cache cold` on a benchmark without a cold mode: its row says so.
    for (bench, why) in cold_skipped {
        let params = bench::cold::with_cache(&Params::new(), bench::cold::COLD);
        let item = Item { bench, params, cfg: single_cfg.clone(), share: 0.0 };
        book.begin(0, &item);
        book.settle(&item, 0, Err(NotMeasured::Skipped(format!("not measured cold: {why}"))), 0, Duration::ZERO, &run);
    }
    let probe_cpu = |before_round: usize, run: &mut RunFile, book: &mut Book| {
        let before_round = u16::try_from(before_round).unwrap_or(u16::MAX);
        let probe =
            platform::availability::probe_settled(&timer, chosen.cpu, before_round, platform::availability::WINDOW);
        if let Some(store) = book.store.as_mut() {
            store.append(&Record::Probe { probe: probe.clone() });
        }
        run.availability.push(probe);
    };
    // Each round measures in a worker process of its own (`execution`); where none can be
    // started, in this process.
    let mut workers = match Launcher::current() {
        Ok(launcher) => Workers::Start(launcher),
        Err(e) => Workers::Unavailable(format!("osprim cannot find its own executable ({e})")),
    };
    let mut layouts = Layouts::for_run(started);
    let randomize_va_space =
        std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").ok().and_then(|t| t.trim().parse::<u8>().ok());
    let base = Request {
        protocol: crate::execution::protocol::PROTOCOL,
        round: 0,
        cpu: chosen.cpu,
        cpu_pair: args.cpu_pair,
        allowed_cpus: run.placement.allowed_cpus.clone(),
        sizes: args.sizes.clone(),
        scratch: scratch.path().to_path_buf(),
        virtualized: ctx.virtualized,
        timer: timer_info.clone(),
        visits: Vec::new(),
    };
    let visits: Vec<(&'static dyn Benchmark, &[Params])> =
        benches.iter().zip(&planned).map(|(b, v)| (*b, v.as_slice())).collect();
    let began = Instant::now();
    let measure = |round: usize, items: &[Item], book: &mut Book, run: &mut RunFile| -> RoundFlow {
        probe_cpu(round, run, book);
        let ctx_round = Round { index: round, stop: &stop };
        if let Workers::Start(launcher) = &workers {
            let base = Request { round, ..base.clone() };
            match in_workers(launcher, &base, items, &ctx_round, &mut layouts, randomize_va_space, book, run) {
                RoundEnd::Done => {}
                RoundEnd::MemoryShort => return RoundFlow::MemoryShort,
                RoundEnd::NoWorker(why) => workers = Workers::Unavailable(why),
            }
        }
        if let Workers::Unavailable(why) = &workers {
            // Visits a worker did not settle (all of them, when none could start).
            let left: Vec<&Item> = items.iter().filter(|i| !book.settled_in(i, round)).collect();
            // This round's overheads, calibrated beside its benchmarks (`bench::overhead`).
            let overhead = bench::overhead::calibrate_overhead(&timer);
            ctx.use_overhead(overhead, cfg.method);
            let record = overhead.record(&timer, round, cfg.method);
            // The machine's level before and after, as a worker times it.
            let start = Some(platform::reference::measure());
            let exec = Execution {
                round,
                pid: std::process::id(),
                in_process: true,
                reference: Some(model::Reference { start, end: None }),
                randomize_va_space,
                overhead_ticks: Some(ctx.loop_timer().overhead_ticks()),
                overhead_ns: Some(record.subtracted_loop_ns),
                overhead: Some(record),
                ended: "in osprim's own process".into(),
                note: Some(format!("measured in osprim's own process, without a varied layout: {why}")),
                ..Execution::default()
            };
            let mut outcomes = 0;
            for item in left {
                if stop() {
                    break;
                }
                book.begin(round, item);
                let (outcome, steal, elapsed) =
                    crate::execution::measure_visit(&mut ctx, item.bench, &item.params, &item.cfg);
                book.settle(item, round, outcome, steal, elapsed, run);
                outcomes += 1;
            }
            let end = (!stop()).then(platform::reference::measure);
            let reference = Some(model::Reference { start, end });
            book.record_execution(Execution { outcomes, reference, ..exec }, run);
        }
        RoundFlow::Go
    };
    let since = || began.elapsed().as_secs_f64();
    let made = measure_rounds(&visits, &cfg, &single_cfg, &growth, &mut book, &mut run, &stop, &since, measure);
    memory_short |= made.memory_short || sys::reserve::short();
    if !stop() {
        probe_cpu(made.rounds, &mut run, &mut book);
    }
    // The load the rounds ran under, before the short tests add theirs.
    run.machine.scheduling.load_avg_end = env::load_average();
    if let Some(each) = args.short_stability
        && !stop()
    {
        run.stability = crate::short_stability::run(each, &run.placement.allowed_cpus, interrupt, &mut *book.observer);
    }
    let Book { slots, mut store, observer, .. } = book;
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
    platform::availability::mark_busy_rows(&mut run.results, &measured_rounds, &run.availability, made.rounds.max(1));
    analysis::derive::add_derived(&mut run.results, registry::DERIVED, run.config.method);
    // An interrupted run did not finish: it has no end time (docs/results.md).
    run.partial = interrupted || memory_short;
    run.finished_utc = finished_utc;
    // Something else removed the scratch directory while the run measured (another program
    // cleaning the temporary directory): what needed it failed, and the run says so.
    let scratch_lost = (!platform::scratch::intact(scratch.path())).then(|| {
        format!(
            "the run's scratch directory {} was removed while it measured (not by this run): rows that needed it \
             failed",
            scratch.path().display()
        )
    });
    let (saved_to, save_error) = match store {
        Some(store) => store.close(&run),
        None => (None, None),
    };
    let scratch_path = scratch.path().to_path_buf();
    platform::interrupt::settle(&scratch_path, || drop(scratch));
    Ok(Finished { run, saved_to, interrupted, memory_short, save_error, scratch_lost })
}

/// Extra rounds may take, over the run, this share of the budget per result once more (the
/// budget of every result measured in rounds, the time they were planned to take): a run
/// whose rounds all disagree takes at most about twice its time, one whose rounds agree none
/// more. The time extra rounds take is the time their visits take, set-up included.
pub const EXTRA_BUDGET_SHARE: f64 = 1.0;

/// How many rounds a run's results get, and the time extra rounds may take.
#[derive(Clone, Copy, Debug)]
struct Growth {
    /// Rounds every result gets (`SamplerConfig::rounds`).
    rounds: usize,
    /// The most a result may get (`SamplerConfig::most_rounds`): more than `rounds` for a
    /// result whose interval over its rounds misses the target.
    rounds_max: usize,
    /// The time extra rounds' visits may take over the run, s ([`EXTRA_BUDGET_SHARE`]).
    pool_s: f64,
    /// The run's time bound (`RunConfig::bound_s`), s: no extra round starts unless the run,
    /// since its first round, stays within it with the round's visits reckoned at their cost.
    bound_s: Option<f64>,
}

/// Whether a run goes on after a round.
enum RoundFlow {
    Go,
    /// Memory ran short (`RoundEnd::MemoryShort`): the run stops.
    MemoryShort,
}

/// How a run's rounds ended.
struct Made {
    /// Rounds begun (the last of them may have been cut short).
    rounds: usize,
    memory_short: bool,
}

/// The rounds of a run over `visits` (each benchmark with its variants, in the run's order):
/// `growth.rounds` rounds of every result, then extra rounds — each a fresh worker like the
/// others, under the same settings (`SamplerConfig::for_round`) — of only the results whose
/// interval still misses the target ([`analyse::short_of_target`]), in the same order, while
/// the time for them lasts ([`Book::extra_round`]), up to `growth.rounds_max`. `measure`
/// measures a round's visits; `clock` is the time since the rounds began, s.
#[allow(clippy::too_many_arguments)]
fn measure_rounds<'o>(
    visits: &[(&'static dyn Benchmark, &[Params])],
    cfg: &SamplerConfig,
    single_cfg: &SamplerConfig,
    growth: &Growth,
    book: &mut Book<'o>,
    run: &mut RunFile,
    stop: &dyn Fn() -> bool,
    clock: &dyn Fn() -> f64,
    mut measure: impl FnMut(usize, &[Item], &mut Book<'o>, &mut RunFile) -> RoundFlow,
) -> Made {
    let share_of = |b: &dyn Benchmark| match (b.available(), b.single_round()) {
        (Err(_), _) => 0.0,
        (Ok(()), true) => 1.0,
        (Ok(()), false) => 1.0 / growth.rounds as f64,
    };
    let mut made = Made { rounds: 0, memory_short: false };
    // The longest a round took beyond its visits (probe, worker start, analysis), s.
    let mut round_overhead_s: f64 = 0.0;
    for round in 0..growth.rounds_max.max(growth.rounds) {
        if stop() {
            break;
        }
        let round_cfg = cfg.for_round(round);
        // The round's visits, in order.
        let mut items: Vec<Item> = Vec::new();
        if round < growth.rounds {
            // Every variant of every benchmark that gets this round.
            for &(bench, variants) in visits {
                if round > 0 && bench.single_round() {
                    continue;
                }
                for params in variants {
                    let existing = book.find(bench.id(), params);
                    let (batch, spread_between_rounds_rel) = match existing {
                        Some(i) if book.slots[i].done => {
                            book.observer.visited(share_of(bench));
                            continue;
                        }
                        Some(i) => (book.slots[i].batch, book.slots[i].spread_between_rounds_rel()),
                        None if round > 0 => continue,
                        None => (None, 0.0),
                    };
                    let cfg = SamplerConfig {
                        batch,
                        spread_between_rounds_rel,
                        ..if bench.single_round() { single_cfg.clone() } else { round_cfg.clone() }
                    };
                    items.push(Item { bench, params: params.clone(), cfg, share: share_of(bench) });
                }
            }
        } else {
            let spent_s = clock() + round_overhead_s;
            let chosen = book.extra_round(visits, round, growth, cfg, spent_s, run);
            if chosen.is_empty() {
                break;
            }
            for at in chosen {
                let slot = &book.slots[at];
                let cfg = SamplerConfig {
                    batch: slot.batch,
                    spread_between_rounds_rel: slot.spread_between_rounds_rel(),
                    ..round_cfg.clone()
                };
                items.push(Item { bench: slot.bench, params: slot.params.clone(), cfg, share: share_of(slot.bench) });
            }
        }
        let (began_s, measured_s) = (clock(), book.measured_s);
        made.rounds = round + 1;
        if let RoundFlow::MemoryShort = measure(round, &items, book, run) {
            made.memory_short = true;
            break;
        }
        round_overhead_s = round_overhead_s.max(clock() - began_s - (book.measured_s - measured_s));
        if stop() {
            break;
        }
    }
    made
}

/// Of the results that want another round, `(slot, cost_s, short)` in the run's order (`short`:
/// how far the interval is from the target, [`analyse::short_of_target`]), those the time
/// `room_s` takes at their cost: all when it takes them all; else the nearest their target
/// first (one more round is likeliest to settle them), each while it fits. In the run's order.
fn choose_extra(wanting: &[(usize, f64, f64)], room_s: f64) -> Vec<usize> {
    let total: f64 = wanting.iter().map(|w| w.1).sum();
    if total <= room_s {
        return wanting.iter().map(|w| w.0).collect();
    }
    let mut by_need: Vec<&(usize, f64, f64)> = wanting.iter().collect();
    by_need.sort_by(|a, b| a.2.total_cmp(&b.2));
    let mut left = room_s;
    let mut chosen: Vec<usize> = Vec::new();
    for &&(at, cost, _) in &by_need {
        if cost <= left {
            left -= cost;
            chosen.push(at);
        }
    }
    chosen.sort_unstable();
    wanting.iter().map(|w| w.0).filter(|at| chosen.binary_search(at).is_ok()).collect()
}

/// The variants a benchmark is visited with under the run's `--cache` (`config::CacheMode`):
/// its hot variants `hot`, and for a cold run the same with `cache=cold` (the visit measures
/// the twin `cache=hot` too); with the reason it gets a skipped cold row instead, when asked
/// for cold and it has no cold mode.
fn plan_cache(
    bench: &'static dyn Benchmark,
    hot: Vec<Params>,
    ctx: &Ctx,
    args: &RunConfig,
    only: Option<&[Only]>,
) -> (Vec<Params>, Option<String>) {
    let asked = args.cold_ids.as_ref().is_none_or(|ids| ids.iter().any(|i| i == bench.id()));
    if args.cache == CacheMode::Hot || !asked || bench.available().is_err() {
        return (hot, None);
    }
    let own_cache = hot.iter().any(|p| p.contains_key(bench::cold::CACHE_PARAM));
    match bench.cold_mode() {
        Ok(()) => {
            let cold: Vec<Params> = bench
                .variants(ctx)
                .iter()
                .map(|p| bench::cold::with_cache(p, bench::cold::COLD))
                .filter(|p| wanted(only, bench.id(), p))
                .collect();
            match args.cache {
                CacheMode::Cold => (cold, None),
                _ => (hot.into_iter().chain(cold).collect(), None),
            }
        }
        Err(_) if own_cache || args.cache == CacheMode::Both => (hot, None),
        Err(why) => (Vec::new(), Some(why.to_string())),
    }
}

/// Where the rounds measure.
enum Workers {
    /// In worker processes started so.
    Start(Launcher),
    /// In this process, for this reason.
    Unavailable(String),
}

/// One visit of a round: a benchmark, one parameter set, the round's sampler settings (the
/// benchmark's declared override is applied to them just before it runs).
struct Item {
    bench: &'static dyn Benchmark,
    params: Params,
    cfg: SamplerConfig,
    /// The part of its result's budget this visit stands for ([`Observer::visited`]).
    share: f64,
}

/// The round being measured, and what stops the run.
struct Round<'a> {
    index: usize,
    stop: &'a dyn Fn() -> bool,
}

/// How measuring a round in workers ended.
enum RoundEnd {
    /// Every visit settled, or the run was interrupted.
    Done,
    /// A worker ran short of memory: the run stops as it does when it runs short itself.
    MemoryShort,
    /// The first worker of the run could not be started or did not work: the rest of the run
    /// measures in this process, for this reason.
    NoWorker(String),
}

/// How a worker's record ends in the journal until it has ended.
const STILL_RUNNING: &str = "still running when the run ended";

/// A worker gets this long to start and build its timer.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// After the run is asked to stop (or a worker's last report), a worker gets this long to
/// leave by itself before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Workers started for one round at most: one, and one more each time a worker dies in the
/// middle (the visit it was measuring fails, the next worker takes the rest).
const WORKERS_PER_ROUND: usize = 3;

/// How long one visit may go without a word from its worker: far beyond what the sampler's
/// budget and a benchmark's own deadlines allow.
fn visit_allowance(budget_s: f64) -> Duration {
    Duration::from_secs_f64(2.0 * round_cap_s(budget_s) + 60.0)
}

/// Measures the visits `items` of a round in worker processes (module doc of `execution`):
/// one per round, and another for the rest of the round when one dies in the middle.
#[allow(clippy::too_many_arguments)]
fn in_workers(
    launcher: &Launcher,
    base: &Request,
    items: &[Item],
    round: &Round<'_>,
    layouts: &mut Layouts,
    randomize_va_space: Option<u8>,
    book: &mut Book<'_>,
    run: &mut RunFile,
) -> RoundEnd {
    let mut pending: Vec<usize> = (0..items.len()).collect();
    let mut started = 0;
    while !pending.is_empty() && !(round.stop)() {
        if started == WORKERS_PER_ROUND {
            let why = format!(
                "not measured: {WORKERS_PER_ROUND} worker processes died in round {} before reaching it",
                round.index + 1
            );
            for &i in &pending {
                book.settle(&items[i], round.index, Err(NotMeasured::Failed(why.clone())), 0, Duration::ZERO, run);
            }
            break;
        }
        started += 1;
        let request = Request {
            visits: pending
                .iter()
                .map(|&i| Visit {
                    id: items[i].bench.id().to_string(),
                    params: items[i].params.clone(),
                    cfg: items[i].cfg.clone(),
                })
                .collect(),
            ..base.clone()
        };
        let layout = layouts.draw();
        let mut exec = Execution {
            round: round.index,
            env_pad_bytes: layout.env_pad_bytes,
            heap_offset_bytes: layout.heap_offset_bytes,
            heap_blocks: layout.heap_blocks,
            randomize_va_space,
            aslr_restored: sys::worker::randomization_off(),
            ..Execution::default()
        };
        let mut worker = match Worker::start(launcher, &layout, &base.scratch, &request) {
            Ok(w) => w,
            Err(e) if book.executions_started == 0 => {
                return RoundEnd::NoWorker(format!("no worker process could be started ({e})"));
            }
            Err(e) => {
                exec.ended = "not started".into();
                exec.note = Some(format!("the worker process could not be started: {e}"));
                book.record_execution(exec, run);
                continue;
            }
        };
        exec.pid = worker.pid();
        let allowance = visit_allowance(book.budget_s);
        let mut deadline = Instant::now() + READY_WITHIN;
        let (mut ready, mut begun, mut reported) = (false, None::<usize>, vec![false; pending.len()]);
        let (mut stopping, mut timed_out, mut memory_short, mut unreadable) = (None::<Instant>, false, false, 0usize);
        loop {
            if stopping.is_none() && (round.stop)() {
                // Ctrl-C reaches the worker from the terminal too; a signal sent to the run
                // alone is passed on. Either way it stops after its current sample.
                worker.signal(nix::sys::signal::Signal::SIGTERM);
                stopping = Some(Instant::now() + GRACE);
            }
            if Instant::now() >= stopping.map_or(deadline, |s| s.min(deadline)) {
                timed_out = stopping.is_none();
                break;
            }
            match worker.next(Duration::from_millis(50)) {
                Event::Quiet => {}
                Event::Ended => break,
                Event::Unreadable(_) => unreadable += 1,
                Event::Report(Report::Ready(r)) => {
                    ready = true;
                    exec.pid = r.pid;
                    exec.overhead_ticks = Some(r.overhead_ticks);
                    exec.overhead_ns = Some(r.overhead_ns);
                    exec.overhead = r.overhead.clone();
                    exec.reference = r.reference.map(|start| model::Reference { start: Some(start), end: None });
                    if r.randomization_off {
                        exec.note = Some("the worker ran without address-space randomization".into());
                    }
                    // Journaled now too, so that a run killed with its worker keeps its layout.
                    let running = Execution { ended: STILL_RUNNING.into(), ..exec.clone() };
                    book.journal(&Record::Execution { execution: running });
                    deadline = Instant::now() + allowance;
                }
                Event::Report(Report::Begin { visit }) if visit < pending.len() && !reported[visit] => {
                    begun = Some(visit);
                    book.begin(round.index, &items[pending[visit]]);
                    deadline = Instant::now() + allowance;
                }
                Event::Report(Report::Outcome { visit, steal_jiffies, elapsed_s, outcome })
                    if visit < pending.len() && !reported[visit] =>
                {
                    reported[visit] = true;
                    begun = None;
                    exec.outcomes += 1;
                    let elapsed = Duration::try_from_secs_f64(elapsed_s).unwrap_or_default();
                    book.settle(&items[pending[visit]], round.index, from_wire(outcome), steal_jiffies, elapsed, run);
                    deadline = Instant::now() + allowance;
                }
                Event::Report(Report::Stopped { memory_short: short }) => memory_short |= short,
                Event::Report(Report::Reference { end }) => {
                    exec.reference.get_or_insert_with(model::Reference::default).end = Some(end);
                }
                Event::Report(_) => unreadable += 1,
            }
        }
        let grace = if timed_out { Duration::ZERO } else { GRACE };
        let ended = worker.finish(grace);
        exec.ended = ended.status.clone();
        // A SIGKILL osprim did not send (it sends none before a deadline or a stop) is most
        // likely the kernel's OOM killer.
        let status = if stopping.is_none() { likely_oom(&ended.status) } else { ended.status.clone() };
        let how = match (&ended.stderr, timed_out) {
            (_, true) => format!(
                "it stopped answering for {} s and was killed",
                if ready { allowance.as_secs() } else { READY_WITHIN.as_secs() }
            ),
            (Some(said), false) if !ended.clean => format!("{status}: {said}"),
            _ => status,
        };
        if timed_out || !ended.clean {
            exec.note = Some(format!("the worker process ended before its round did: {how}"));
        } else if unreadable > 0 {
            exec.note = Some(format!("{unreadable} line(s) of the worker's reports could not be read"));
        }
        let first = book.executions_started == 0;
        book.record_execution(exec, run);
        if !ready && first && !(round.stop)() {
            // The first worker of the run did nothing: this binary cannot be a worker here.
            return RoundEnd::NoWorker(format!("the worker process did not start measuring ({how})"));
        }
        if (round.stop)() {
            break;
        }
        if memory_short {
            return RoundEnd::MemoryShort;
        }
        if let Some(v) = begun {
            let why = format!(
                "the worker process measuring round {} of this benchmark died: {how}; the run went on with a new one",
                round.index + 1
            );
            reported[v] = true;
            book.settle(&items[pending[v]], round.index, Err(NotMeasured::Failed(why)), 0, Duration::ZERO, run);
        }
        let left: Vec<usize> = pending.iter().zip(&reported).filter(|(_, r)| !**r).map(|(&i, _)| i).collect();
        if ended.clean && !timed_out && !left.is_empty() && begun.is_none() {
            // A worker that left in good order without its whole round: none could do better.
            let why = format!("not measured: the worker process of round {} left before it", round.index + 1);
            for &i in &left {
                book.settle(&items[i], round.index, Err(NotMeasured::Failed(why.clone())), 0, Duration::ZERO, run);
            }
            break;
        }
        pending = left;
    }
    RoundEnd::Done
}

/// A worker's end as said in a row's reason: a SIGKILL gets its likely cause, the kernel's
/// OOM killer (with the memory cgroup's limit, when there is one).
fn likely_oom(status: &str) -> String {
    if !status.contains("SIGKILL") {
        return status.to_string();
    }
    match platform::memory::cgroup_limit_text() {
        Some(limit) => format!("{status} (likely out of memory: {limit})"),
        None => format!("{status} (likely out of memory)"),
    }
}

/// The run's rows as they fill, and where their measurements go.
struct Book<'o> {
    slots: Vec<Slot>,
    store: Option<Store>,
    observer: &'o mut dyn Observer,
    /// Rounds every result of the run gets (`SamplerConfig::rounds`).
    rounds: usize,
    /// The most rounds a result may get (`SamplerConfig::most_rounds`).
    rounds_max: usize,
    /// Budget per result over the run, s.
    budget_s: f64,
    /// Worker processes recorded so far.
    executions_started: usize,
    /// Time the run's visits took, s (set-up included).
    measured_s: f64,
    /// Of it, the time of visits in extra rounds, s.
    extra_s: f64,
}

impl<'o> Book<'o> {
    /// An empty book of a run with `growth`'s rounds and `budget_s` per result.
    fn new(store: Option<Store>, observer: &'o mut dyn Observer, growth: &Growth, budget_s: f64) -> Book<'o> {
        Book {
            slots: Vec::new(),
            store,
            observer,
            rounds: growth.rounds.max(1),
            rounds_max: growth.rounds_max.max(growth.rounds).max(1),
            budget_s,
            executions_started: 0,
            measured_s: 0.0,
            extra_s: 0.0,
        }
    }
}

impl Book<'_> {
    /// The slot of a benchmark under a parameter set, if it has one.
    fn find(&self, id: &str, params: &Params) -> Option<usize> {
        self.slots.iter().position(|s| s.bench.id() == id && s.params == *params)
    }

    /// Whether `item` has its outcome of `round`.
    fn settled_in(&self, item: &Item, round: usize) -> bool {
        self.find(item.bench.id(), &item.params).is_some_and(|i| self.slots[i].last_round == Some(round))
    }

    /// The slot of `item`, made (and journaled) if it has none.
    fn slot_for(&mut self, item: &Item) -> usize {
        if let Some(i) = self.find(item.bench.id(), &item.params) {
            return i;
        }
        self.slots.push(Slot::new(item.bench, item.params.clone()));
        let at = self.slots.len() - 1;
        if let Some(store) = self.store.as_mut() {
            let r = &self.slots[at].rounds;
            let (id, about, params) = (r.id.clone(), r.about.clone(), r.params.clone());
            store.append(&Record::Slot { row: at, id, about, params });
        }
        at
    }

    /// `item` starts being measured in `round`.
    fn begin(&mut self, round: usize, item: &Item) {
        self.slot_for(item);
        self.observer.visiting(round, &visit_label(item.bench.id(), &item.params));
    }

    /// What `item` gave in `round`: journaled, kept, and, when it is the row's last round,
    /// analysed and shown. A cold visit's hot twins become the outcome of its twin row
    /// (`cache=hot`), settled right after it and finished with it.
    fn settle(
        &mut self,
        item: &Item,
        round: usize,
        outcome: Result<Measured, NotMeasured>,
        steal: u64,
        elapsed: Duration,
        run: &RunFile,
    ) {
        let twin = bench::cold::is_cold_visit(item.bench, &item.params).then(|| {
            let outcome = match &outcome {
                Ok(m) => Ok(bench::cold::hot_twin(m)),
                Err(e) => Err(e.clone()),
            };
            let params = bench::cold::with_cache(&item.params, bench::cold::HOT);
            (Item { bench: item.bench, params, cfg: item.cfg.clone(), share: 0.0 }, outcome)
        });
        self.measured_s += elapsed.as_secs_f64();
        if round >= self.rounds {
            self.extra_s += elapsed.as_secs_f64();
        }
        let done = self.settle_one(item, round, outcome, steal, elapsed, run, None);
        if let Some((twin, outcome)) = twin {
            self.settle_one(&twin, round, outcome, steal, Duration::ZERO, run, Some(done));
        }
        // One visit, the twin's row with it.
        self.observer.visited(item.share);
    }

    /// [`Book::settle`] for one row; `follow`: the row is a cold row's hot twin, final when its
    /// cold row is (`Some(true)`) whatever its own rounds. Returns whether the row is final.
    ///
    /// A row is final after its last round: a failed one, the only one of a benchmark measured
    /// once, the run's `rounds`-th when its interval meets the target (or more rounds cannot
    /// help, [`analyse::short_of_target`]), else the round after which it does, or
    /// `rounds_max`-th. A row that wants another round keeps its analysis so far
    /// ([`Slot::short`]) until [`Book::extra_round`] gives it one or closes it.
    #[allow(clippy::too_many_arguments)]
    fn settle_one(
        &mut self,
        item: &Item,
        round: usize,
        outcome: Result<Measured, NotMeasured>,
        steal: u64,
        elapsed: Duration,
        run: &RunFile,
        follow: Option<bool>,
    ) -> bool {
        let at = self.slot_for(item);
        let (rounds, rounds_max, budget_s) = (self.rounds, self.rounds_max, self.budget_s);
        let single = item.bench.single_round();
        let slot = &mut self.slots[at];
        if let Some(store) = self.store.as_mut() {
            store.append_outcome(at, steal, &outcome);
        }
        slot.record(outcome, steal);
        slot.last_round = Some(round);
        // Whatever was analysed before this round no longer holds.
        (slot.row, slot.short) = (None, None);
        // A benchmark whose rounds cost far more than its budget (set-up and operations
        // slower than the budget allows, e.g. 64 MiB messages) gets no more rounds.
        slot.spent += elapsed;
        slot.longest = slot.longest.max(elapsed);
        if !slot.done && !single && round + 1 < rounds && slot.spent.as_secs_f64() > round_cap_s(budget_s) {
            slot.done = true;
            let note = format!(
                "measured in {} of {} rounds: they took {:.1} s against a budget of {} s (set-up or operations \
                 slower than the budget allows)",
                round + 1,
                rounds,
                slot.spent.as_secs_f64(),
                budget_s
            );
            if let Some(store) = self.store.as_mut() {
                store.append(&Record::Note { row: at, note: note.clone() });
            }
            slot.rounds.notes.push(note);
        }
        let last = slot.done || single || follow == Some(true) || round + 1 >= rounds_max;
        if !last && (round + 1 < rounds || follow.is_some()) {
            return false;
        }
        let mut row = analyse_rounds(&slot.rounds, &run.config, &run.timer, run.placement.cpu, DEFAULT_RESAMPLES);
        let short = analyse::short_of_target(&row, &run.config, run.timer.resolution_ns);
        if !last && short.is_some() {
            (slot.row, slot.short) = (Some(row), short);
            return false;
        }
        // Final: shown as it comes, kept for the result file.
        if follow.is_none() && !slot.done && round + 1 > rounds {
            let n = round + 1;
            let missed = row.flags.iter().any(|f| matches!(f, model::Flag::CiTargetMissed | model::Flag::CiUnusable));
            let note = match (short, missed) {
                (None, false) => format!(
                    "measured in {n} rounds: the run's {rounds}, then {} more until its interval met the target",
                    n - rounds
                ),
                (None, true) => format!(
                    "measured in {n} rounds: the run's {rounds}, then {} more until its interval was within a clock \
                     step, as narrow as the clock allows",
                    n - rounds
                ),
                (Some(_), _) => format!("its interval misses the target after {n} rounds, the most this run makes"),
            };
            slot.note(at, note, &mut row, self.store.as_mut());
        }
        slot.done = true;
        self.observer.result(&row);
        slot.row = Some(row);
        true
    }

    /// The results of `visits` (in the run's order) that get extra round `round`, as slots;
    /// those that want one and do not get it are closed ([`Book::close`]) with a note saying
    /// why. A result wants one while its interval misses the target ([`Slot::short`]); it
    /// gets none when its rounds have overrun their budget ([`round_cap_s`], pro rata); the
    /// others get one while the time allows, each reckoned to cost its longest round so far
    /// or the sampler's hard stop (twice the round's budget), whichever is more: the time
    /// extra rounds' visits took stays within `growth.pool_s`, and the run's time since its
    /// first round (`spent_s`, with the longest a round took beyond its visits) within
    /// `growth.bound_s` ([`choose_extra`]).
    fn extra_round(
        &mut self,
        visits: &[(&'static dyn Benchmark, &[Params])],
        round: usize,
        growth: &Growth,
        cfg: &SamplerConfig,
        spent_s: f64,
        run: &RunFile,
    ) -> Vec<usize> {
        let mut wanting: Vec<(usize, f64, f64)> = Vec::new();
        let hard_stop_s = 2.0 * cfg.budget_s / self.rounds as f64;
        for &(bench, variants) in visits {
            for params in variants {
                let Some(at) = self.find(bench.id(), params) else { continue };
                let slot = &self.slots[at];
                let Some(short) = slot.short.filter(|_| !slot.done) else { continue };
                let n = slot.rounds.outcomes.len();
                let cap_s = round_cap_s(self.budget_s) * n as f64 / self.rounds as f64;
                if slot.spent.as_secs_f64() > cap_s {
                    let note = format!(
                        "its interval misses the target after {n} rounds, and it got no more: they took {:.1} s \
                         against a budget of {} s",
                        slot.spent.as_secs_f64(),
                        self.budget_s
                    );
                    self.close(at, note, run);
                    continue;
                }
                wanting.push((at, slot.longest.as_secs_f64().max(hard_stop_s), short));
            }
        }
        let mut room_s = growth.pool_s - self.extra_s;
        if let Some(bound) = growth.bound_s {
            room_s = room_s.min(bound - spent_s);
        }
        let chosen = choose_extra(&wanting, room_s);
        for &(at, _, _) in &wanting {
            if !chosen.contains(&at) {
                let n = self.slots[at].rounds.outcomes.len();
                let note =
                    format!("its interval misses the target after {n} rounds: the run's time for extra rounds ran out");
                self.close(at, note, run);
            }
        }
        if !chosen.is_empty() {
            let budget_s = chosen.len() as f64 * self.budget_s / self.rounds as f64;
            self.observer.extra_round(round, chosen.len() as u64, budget_s);
        }
        chosen
    }

    /// Makes the row at `at`, which wanted another round, final as it is, with `note` saying
    /// why it got none; a cold row's hot twin with it.
    fn close(&mut self, at: usize, note: String, run: &RunFile) {
        let slot = &mut self.slots[at];
        if slot.done {
            return;
        }
        let mut row = slot.row.take().unwrap_or_else(|| {
            analyse_rounds(&slot.rounds, &run.config, &run.timer, run.placement.cpu, DEFAULT_RESAMPLES)
        });
        slot.note(at, note, &mut row, self.store.as_mut());
        (slot.done, slot.short) = (true, None);
        self.observer.result(&row);
        slot.row = Some(row);
        let (bench, params) = (slot.bench, slot.params.clone());
        if bench::cold::is_cold_visit(bench, &params) {
            let hot = bench::cold::with_cache(&params, bench::cold::HOT);
            if let Some(t) = self.find(bench.id(), &hot).filter(|&t| !self.slots[t].done) {
                let twin = &mut self.slots[t];
                let row = analyse_rounds(&twin.rounds, &run.config, &run.timer, run.placement.cpu, DEFAULT_RESAMPLES);
                twin.done = true;
                self.observer.result(&row);
                twin.row = Some(row);
            }
        }
    }

    /// Appends a record to the journal, if the run has one.
    fn journal(&mut self, record: &Record) {
        if let Some(store) = self.store.as_mut() {
            store.append(record);
        }
    }

    /// Keeps the record of a worker process (journal and result file).
    fn record_execution(&mut self, exec: Execution, run: &mut RunFile) {
        self.executions_started += 1;
        if let Some(store) = self.store.as_mut() {
            store.append(&Record::Execution { execution: exec.clone() });
        }
        if let Some(o) = &exec.overhead {
            run.timer.keep_overhead(o);
        }
        run.executions.push(exec);
    }
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
    fn open(path: &Path, run: &RunFile, reservation: Option<Reservation>) -> Result<Store> {
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
        // Kept before the second signal's farewell may write it.
        if let Some(r) = reservation {
            r.keep();
        }
        // A second signal ends the run at once: the result file is then made from the journal.
        let (result, resamples) = (path.to_path_buf(), INTERIM_RESAMPLES);
        platform::interrupt::on_second_signal(Box::new(move || {
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
            say!("warning: cannot write to {}: {e}; measuring goes on", self.journal.path().display());
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
        platform::interrupt::clear_second_signal();
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
    // The run's rounds: its count, or more where results got extra rounds.
    let made = measured_rounds.iter().copied().max().unwrap_or(0).max(run.config.rounds).max(1);
    platform::availability::mark_busy_rows(&mut run.results, &measured_rounds, &run.availability, made);
    analysis::derive::add_derived(&mut run.results, registry::DERIVED, run.config.method);
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
    let mut contents = journal::read(&path)?;
    output::check_target(result)?;
    if lock {
        // A row begun and never settled: the run died while measuring it (`osprim finish`
        // comes after a run killed outright; a second signal's farewell is not such a death).
        let memory = run_memory_limit(&contents.run);
        for row in contents.rows.iter_mut().filter(|r| r.outcomes.is_empty()) {
            let why = match &memory {
                Some(limit) => format!(
                    "the run was killed while measuring this, before it had an outcome (likely out of memory: cgroup \
                     limit {limit})"
                ),
                None => "the run was killed while measuring this, before it had an outcome".to_string(),
            };
            row.outcomes.push(Err(NotMeasured::Failed(why)));
        }
    }
    let mut run = contents.run;
    assemble(&mut run, &contents.rows, resamples);
    run.finished_utc = contents.finished_utc;
    run.partial = run.finished_utc.is_none();
    write_result_file(result, &run).with_context(|| format!("cannot write results to {}", result.display()))?;
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    drop(held);
    Ok((run, contents.unreadable_lines))
}

/// The memory cgroup limit the run was under ("100 MiB"), from its machine record.
fn run_memory_limit(run: &RunFile) -> Option<String> {
    let bytes: u64 = run.machine.cgroup.memory_max.trim().parse().ok()?;
    Some(format!("{} MiB", bytes >> 20))
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
    row: Option<model::Row>,
    /// The last round it has an outcome of.
    last_round: Option<usize>,
    /// Its longest round so far (set-up included): what an extra round of it is reckoned to
    /// cost.
    longest: std::time::Duration,
    /// Whether it wants another round: how far its interval so far (`row`, not yet final) is
    /// from the target ([`analyse::short_of_target`]).
    short: Option<f64>,
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
        Slot {
            bench,
            params,
            rounds,
            batch: None,
            done: false,
            spent: std::time::Duration::ZERO,
            row: None,
            last_round: None,
            longest: std::time::Duration::ZERO,
            short: None,
        }
    }

    /// Adds `note` to the row at `at` (journaled), and to `row`, its analysis already made.
    fn note(&mut self, at: usize, note: String, row: &mut model::Row, store: Option<&mut Store>) {
        if let Some(store) = store {
            store.append(&Record::Note { row: at, note: note.clone() });
        }
        self.rounds.notes.push(note.clone());
        row.notes.push(note);
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
        self.rounds.steal_jiffies = self.rounds.steal_jiffies.saturating_add(steal_jiffies);
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
                stats::median_in_place(&mut v)
            })
            .collect();
        if medians.len() < 2 {
            return 0.0;
        }
        let mean = stats::moments::mean(&medians);
        let sd = stats::moments::sample_stddev(&medians, mean);
        if mean.abs() > 0.0 && sd.is_finite() { sd / mean.abs() } else { 0.0 }
    }
}

/// The result row of everything measured for one benchmark and parameter set.
fn analyse_rounds(
    r: &Rounds,
    cfg: &model::SamplerSettings,
    timer: &timer::TimerInfo,
    cpu: usize,
    resamples: usize,
) -> model::Row {
    let mut row = analyse::rounds_row(&r.id, &r.about, r.params.clone(), &r.outcomes, cfg, timer, resamples);
    if r.outcomes.iter().any(Result::is_ok) {
        row.sampling = declared_sampling(&r.id, &r.params);
    }
    row.notes.extend(r.notes.iter().cloned());
    if r.steal_jiffies > 0 {
        row.notes.push(format!(
            "the hypervisor took {} ms from CPU {cpu} while this ran (steal time): figures may be inflated",
            r.steal_jiffies.saturating_mul(1000) / clock_ticks_per_second(),
        ));
    }
    row
}

/// What the benchmark `id` declares it samples differently under `params`
/// ([`Benchmark::sampling`], applied before each of its visits by `execution::measure_visit`):
/// the `sampling` of a row with a round measured under it. A pure function of the benchmark and its parameters, so a row finished
/// from the journal records the same.
fn declared_sampling(id: &str, params: &Params) -> Option<model::SamplingOverride> {
    registry::find(id).and_then(|b| b.sampling(params).declared())
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

/// A run's random id: 128 bits from the kernel's generator as 32 hex digits (from std's
/// randomly keyed hasher, the time and the pid should `/dev/urandom` be unreadable).
pub(crate) fn run_id() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        use std::hash::{BuildHasher, Hasher};
        for half in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
            );
            h.write_u32(std::process::id());
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::protocol::{Ready, encode, to_wire};
    use bench::sampler::Samples;

    fn run_file() -> RunFile {
        RunFile {
            schema: SCHEMA,
            osprim: crate::build_info(),
            started_utc: "2026-11-27T00:00:00Z".into(),
            finished_utc: None,
            partial: true,
            command: vec!["osprim".into()],
            config: SamplerConfig::quick().record(),
            placement: Placement { cpu: 0, chosen_by: "test".into(), allowed_cpus: vec![0], cpu_pair: None },
            timer: platform::timer::TimerInfo::for_tests(),
            machine: model::Machine::default(),
            results: Vec::new(),
            availability: Vec::new(),
            executions: Vec::new(),
            counters: None,
            stability: Vec::new(),
            run_id: None,
            host: None,
        }
    }

    /// Four visits of four scripted benchmarks (each its own row; none is run here).
    fn items() -> Vec<Item> {
        ["fake.a", "fake.b", "fake.c", "fake.d"]
            .into_iter()
            .map(|id| Item {
                bench: bench::fake::Scripted::steady(id, vec![1.0]).leak(),
                params: Params::new(),
                cfg: SamplerConfig::quick().for_round(0),
                share: 1.0,
            })
            .collect()
    }

    /// Exactly `rounds` rounds, no extra ones.
    fn fixed(rounds: usize) -> Growth {
        Growth { rounds, rounds_max: rounds, pool_s: 0.0, bound_s: None }
    }

    fn line(r: &Report) -> String {
        String::from_utf8(encode(r)).unwrap().trim_end().to_string()
    }

    /// A stand-in for a worker: reads its round, reports a ready line, one outcome, the start of
    /// the next visit, and kills itself with SIGKILL.
    fn dying_worker() -> Launcher {
        let measured = Measured::new(
            Samples { per_op_ns: vec![10.0, 11.0, 12.0], iterations_per_sample: 4, ..Samples::default() },
            Vec::new(),
        );
        let lines = [
            line(&Report::Ready(Ready { pid: 1, overhead_ticks: 40.0, ..Ready::default() })),
            line(&Report::Begin { visit: 0 }),
            line(&Report::Outcome { visit: 0, steal_jiffies: 0, elapsed_s: 0.01, outcome: to_wire(Ok(measured)) }),
            line(&Report::Begin { visit: 1 }),
        ];
        let mut args: Vec<std::ffi::OsString> = vec![
            "-c".into(),
            "cat >/dev/null; printf '%s\\n' \"$1\" \"$2\" \"$3\" \"$4\"; kill -9 $$".into(),
            "sh".into(),
        ];
        args.extend(lines.iter().map(Into::into));
        Launcher { program: "/bin/sh".into(), args }
    }

    fn base(scratch: &Path) -> Request {
        Request {
            protocol: crate::execution::protocol::PROTOCOL,
            round: 0,
            cpu: 0,
            cpu_pair: None,
            allowed_cpus: vec![0],
            sizes: None,
            scratch: scratch.to_path_buf(),
            virtualized: false,
            timer: platform::timer::TimerInfo::for_tests(),
            visits: Vec::new(),
        }
    }

    #[test]
    fn a_dead_worker_fails_the_visit_it_was_measuring_and_another_takes_the_rest() {
        let _serial = bench::testing::serial(); // a fork disturbs fault counting
        let scratch = tempfile::tempdir().unwrap();
        let (items, mut run, mut observer) = (items(), run_file(), crate::progress::Silent);
        let mut book = Book::new(None, &mut observer, &fixed(3), 0.2);
        let never = || false;
        let round = Round { index: 0, stop: &never };
        let end = in_workers(
            &dying_worker(),
            &base(scratch.path()),
            &items,
            &round,
            &mut Layouts::seeded(7),
            Some(2),
            &mut book,
            &mut run,
        );
        assert!(matches!(end, RoundEnd::Done));
        // Worker 1 measured visit 0 and died in visit 1; worker 2 measured visit 2 and died in 3.
        assert_eq!(run.executions.len(), 2, "{:?}", run.executions);
        for e in &run.executions {
            assert_eq!(e.ended, "killed by signal 9 (SIGKILL)");
            assert_eq!(e.outcomes, 1);
            assert_eq!(e.overhead_ticks, Some(40.0));
            assert!(e.note.as_deref().is_some_and(|n| n.contains("ended before its round did")), "{e:?}");
        }
        assert_ne!(run.executions[0].env_pad_bytes, run.executions[1].env_pad_bytes, "each its own layout");
        assert_eq!(book.slots.len(), 4);
        for (i, slot) in book.slots.iter().enumerate() {
            assert_eq!(slot.rounds.id, items[i].bench.id(), "rows in visit order");
            match (i % 2, &slot.rounds.outcomes[..]) {
                (0, [Ok(m)]) => assert_eq!(m.samples.per_op_ns, [10.0, 11.0, 12.0]),
                (1, [Err(NotMeasured::Failed(why))]) => {
                    assert!(why.contains("the worker process measuring round 1 of this benchmark died"), "{why}");
                    assert!(why.contains("killed by signal 9 (SIGKILL)"), "{why}");
                }
                other => panic!("visit {i}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_row_records_the_sampling_its_benchmark_declared_and_a_row_without_one_has_none() {
        let samples =
            Samples { per_op_ns: vec![10.0, 11.0, 12.0, 10.5], iterations_per_sample: 1, ..Samples::default() };
        let rounds = |id: &str| Rounds {
            id: id.into(),
            about: String::new(),
            params: Params::new(),
            outcomes: vec![Ok(Measured::new(samples.clone(), Vec::new()))],
            steal_jiffies: 0,
            notes: Vec::new(),
        };
        let skipped = Rounds {
            outcomes: vec![Err(NotMeasured::Skipped("no protection keys".into()))],
            ..rounds("domain.create")
        };
        let mut run = run_file();
        assemble(&mut run, &[rounds("lib.dlopen.init"), rounds("syscall.getpid"), skipped], 50);
        let row = |id: &str| run.results.iter().find(|r| r.id == id).expect("a row");
        let one = model::SamplingOverride { batch: Some(1), ..Default::default() };
        assert_eq!(row("lib.dlopen.init").sampling, Some(one));
        assert_eq!(row("syscall.getpid").sampling, None);
        assert_eq!(row("domain.create").sampling, None, "nothing was sampled under it");
        let json = serde_json::to_value(&run).expect("JSON");
        let rows = json["results"].as_array().expect("rows");
        assert_eq!(rows[0]["sampling"], serde_json::json!({ "batch": 1 }));
        assert!(rows[1].get("sampling").is_none(), "{}", rows[1]);
    }

    #[test]
    fn a_cold_visit_settles_its_row_and_its_hot_twin_and_the_row_carries_their_ratio() {
        let bench = registry::find("syscall.null").expect("registered");
        let params = bench::cold::with_cache(&Params::new(), bench::cold::COLD);
        let item = Item { bench, params, cfg: SamplerConfig::quick().for_round(0), share: 1.0 };
        let (run, mut observer) = (run_file(), crate::progress::Silent);
        let mut book = Book::new(None, &mut observer, &fixed(2), 0.2);
        for round in 0..2 {
            let hot: Vec<f64> = (0..30).map(|i| 100.0 + (i % 3) as f64).collect();
            let samples = Samples {
                per_op_ns: hot.iter().map(|h| 4.0 * h).collect(),
                hot_twin_ns: hot,
                iterations_per_sample: 1,
                ..Samples::default()
            };
            book.begin(round, &item);
            book.settle(&item, round, Ok(Measured::new(samples, Vec::new())), 0, Duration::ZERO, &run);
        }
        assert_eq!(book.slots.len(), 2, "the cold row and its twin");
        let cache = |i: usize| book.slots[i].params[bench::cold::CACHE_PARAM].as_str().unwrap().to_string();
        assert_eq!((cache(0), cache(1)), ("cold".to_string(), "hot".to_string()));
        let (cold, hot) = (book.slots[0].row.clone().unwrap(), book.slots[1].row.clone().unwrap());
        assert_eq!(hot.samples.len(), 60);
        assert!(hot.samples.iter().all(|&v| v < 110.0), "the twin's samples are the hot ones");
        let c = cold.cold_hot.expect("the ratio");
        assert!((c.ratio - 4.0).abs() < 1e-9 && c.pairs == 60, "{c:?}");
        assert!(hot.cold_hot.is_none());
        // A failed cold visit fails its twin too.
        let (run, mut observer) = (run_file(), crate::progress::Silent);
        let mut book = Book::new(None, &mut observer, &fixed(1), 0.2);
        book.settle(&item, 0, Err(NotMeasured::Failed("x".into())), 0, Duration::ZERO, &run);
        assert_eq!(book.slots.len(), 2);
        assert!(book.slots.iter().all(|s| s.done && matches!(s.rounds.outcomes[..], [Err(_)])));
    }

    #[test]
    fn cold_runs_plan_cold_variants_skipped_rows_or_a_benchmarks_own_cache() {
        let args = |cache| RunConfig { cache, ..RunConfig::standard() };
        bench::testing::with_ctx(0.01, |ctx| {
            let plan = |id: &str, mode| {
                let b = registry::find(id).expect("registered");
                plan_cache(b, b.variants(ctx), ctx, &args(mode), None)
            };
            let (v, skip) = plan("syscall.null", CacheMode::Cold);
            assert_eq!((v.len(), skip), (1, None));
            assert!(bench::cold::is_cold_visit(registry::find("syscall.null").unwrap(), &v[0]));
            assert_eq!(plan("syscall.null", CacheMode::Both).0.len(), 2, "hot and cold");
            assert_eq!(plan("syscall.null", CacheMode::Hot).0, [Params::new()]);
            let (v, skip) = plan("lib.dlopen.init", CacheMode::Cold);
            assert!(v.is_empty() && skip.is_some_and(|w| w.contains("no cold-cache mode")));
            assert!(plan("lib.dlopen.init", CacheMode::Both).1.is_none(), "both: its hot rows, no skip");
            let own = registry::find("fault.file.read").unwrap();
            let (v, skip) = plan("fault.file.read", CacheMode::Cold);
            assert_eq!((v, skip), (own.variants(ctx), None), "its own cache parameter");
        });
    }

    #[test]
    fn a_sigkill_osprim_did_not_send_is_likely_the_oom_killer() {
        assert_eq!(likely_oom("exited with status 1"), "exited with status 1");
        let said = likely_oom("killed by signal 9 (SIGKILL)");
        assert!(said.starts_with("killed by signal 9 (SIGKILL) (likely out of memory"), "{said}");
    }

    #[test]
    fn finish_fails_the_row_a_killed_run_was_measuring_and_names_the_memory_limit() {
        let d = tempfile::tempdir().unwrap();
        let result = d.path().join("r.json");
        let mut run = run_file();
        run.machine.cgroup.memory_max = (100u64 << 20).to_string();
        let mut j = Journal::create(&result).unwrap();
        j.append(&Record::Start { journal: journal::JOURNAL_FORMAT, run: Box::new(run) }).unwrap();
        j.append(&Record::Slot { row: 0, id: "syscall.null".into(), about: String::new(), params: Params::new() })
            .unwrap();
        drop(j);
        let (done, _) = finish_journal(&result, 50, true).unwrap();
        let row = &done.results[0];
        assert_eq!(row.status, model::Status::Failed, "{row:?}");
        let why = row.reason.as_deref().unwrap();
        assert!(why.contains("killed while measuring") && why.contains("cgroup limit 100 MiB"), "{why}");
    }

    #[test]
    fn a_program_that_is_no_worker_makes_the_run_measure_in_its_own_process() {
        let _serial = bench::testing::serial(); // a fork disturbs fault counting
        let scratch = tempfile::tempdir().unwrap();
        let (items, mut run, mut observer) = (items(), run_file(), crate::progress::Silent);
        let mut book = Book::new(None, &mut observer, &fixed(3), 0.2);
        let never = || false;
        let launcher = Launcher { program: "/bin/true".into(), args: Vec::new() };
        let end = in_workers(
            &launcher,
            &base(scratch.path()),
            &items,
            &Round { index: 0, stop: &never },
            &mut Layouts::seeded(7),
            None,
            &mut book,
            &mut run,
        );
        assert!(matches!(&end, RoundEnd::NoWorker(why) if why.contains("did not start measuring")));
        assert!(book.slots.is_empty(), "nothing settled");
        assert!(!items.iter().any(|i| book.settled_in(i, 0)));
    }

    /// A round's samples at `level` ns: 200 of them, within 0.06 % of it.
    fn level(level: f64) -> Result<Vec<f64>, String> {
        Ok((0..200).map(|i| level + f64::from(i % 7) * 0.0001 * level).collect())
    }

    /// Two scripted results: `fake.agree`, whose every round sits at 100 ns, and
    /// `fake.disagree`, whose rounds alternate between 100 and 130 ns.
    fn agree_and_disagree() -> Vec<(&'static dyn Benchmark, Vec<Params>)> {
        let agree: &'static dyn Benchmark = bench::fake::Scripted::of("fake.agree", vec![level(100.0)]).leak();
        let apart = (0..40).map(|i| level(if i % 2 == 0 { 100.0 } else { 130.0 })).collect();
        let disagree: &'static dyn Benchmark = bench::fake::Scripted::of("fake.disagree", apart).leak();
        vec![(agree, vec![Params::new()]), (disagree, vec![Params::new()])]
    }

    /// Counts what an observer is told.
    #[derive(Default)]
    struct Told {
        results: Vec<String>,
        extra_visits: u64,
        visited: usize,
    }

    impl Observer for Told {
        fn extra_round(&mut self, _round: usize, visits: u64, _budget_s: f64) {
            self.extra_visits += visits;
        }
        fn visited(&mut self, _share: f64) {
            self.visited += 1;
        }
        fn result(&mut self, row: &model::Row) {
            self.results.push(row.id.clone());
        }
    }

    /// Measures the rounds of `benches` in this process, each visit reckoned to take
    /// `visit_s` on a clock that moves only by it; returns the rows by id, the rounds made and
    /// the time the clock says the rounds took.
    fn grow(
        benches: &[(&'static dyn Benchmark, Vec<Params>)],
        growth: Growth,
        visit_s: f64,
        store: Option<Store>,
    ) -> (Vec<model::Row>, usize, f64, Told) {
        let cfg = SamplerConfig { rounds: growth.rounds, rounds_max: growth.rounds_max, ..SamplerConfig::quick() };
        let single = SamplerConfig { rounds: 1, ..cfg.clone() }.for_round(0);
        let mut run = run_file();
        run.config = cfg.record();
        let mut told = Told::default();
        let clock = std::cell::Cell::new(0.0);
        let visits: Vec<(&'static dyn Benchmark, &[Params])> =
            benches.iter().map(|(b, v)| (*b, v.as_slice())).collect();
        let made = bench::fake::with_ctx(cfg.clone(), |ctx| {
            let mut book = Book::new(store, &mut told, &growth, cfg.budget_s);
            let measure = |round: usize, items: &[Item], book: &mut Book, run: &mut RunFile| {
                for item in items {
                    book.begin(round, item);
                    let outcome = item.bench.run(ctx, &item.params);
                    clock.set(clock.get() + visit_s);
                    book.settle(item, round, outcome, 0, Duration::from_secs_f64(visit_s), run);
                }
                RoundFlow::Go
            };
            let since = || clock.get();
            let made = measure_rounds(&visits, &cfg, &single, &growth, &mut book, &mut run, &|| false, &since, measure);
            let rows: Vec<model::Row> = book.slots.into_iter().map(|s| s.row.expect("every row final")).collect();
            (rows, made.rounds)
        });
        (made.0, made.1, clock.get(), told)
    }

    fn rounds_of(rows: &[model::Row], id: &str) -> usize {
        rows.iter().find(|r| r.id == id).map(|r| r.samples_per_round.len()).expect("a row")
    }

    #[test]
    fn a_result_whose_rounds_disagree_gets_more_rounds_up_to_the_most_and_one_whose_rounds_agree_none() {
        let growth = Growth { rounds: 3, rounds_max: 9, pool_s: 100.0, bound_s: None };
        let (rows, made, _, told) = grow(&agree_and_disagree(), growth, 0.01, None);
        assert_eq!(rounds_of(&rows, "fake.agree"), 3, "{:?}", rows[0].flags);
        assert_eq!(rounds_of(&rows, "fake.disagree"), 9, "the most, never more");
        assert_eq!(made, 9);
        assert_eq!(told.extra_visits, 6, "one visit in each extra round, the agreeing result's none");
        assert_eq!(told.visited, 3 * 2 + 6);
        assert_eq!(told.results, ["fake.agree", "fake.disagree"], "each shown once, when final");
        let disagree = &rows[1];
        assert!(disagree.flags.contains(&model::Flag::CiUnusable), "{:?}", disagree.flags);
        assert!(
            disagree.notes.iter().any(|n| n.contains("misses the target after 9 rounds, the most")),
            "{:?}",
            disagree.notes
        );
        assert!(rows[0].notes.iter().all(|n| !n.contains("rounds")), "{:?}", rows[0].notes);
    }

    #[test]
    fn an_exact_count_of_rounds_is_kept_whatever_the_interval() {
        let growth = fixed(4);
        let (rows, made, _, told) = grow(&agree_and_disagree(), growth, 0.01, None);
        assert_eq!((rounds_of(&rows, "fake.agree"), rounds_of(&rows, "fake.disagree"), made), (4, 4, 4));
        assert_eq!(told.extra_visits, 0);
        assert!(rows[1].flags.contains(&model::Flag::CiUnusable), "it still misses the target: {:?}", rows[1].flags);
    }

    #[test]
    fn extra_rounds_stop_when_their_time_or_the_runs_bound_runs_out() {
        // Each visit takes 0.1 s; 3 rounds of the two take 0.6 s. Extra rounds may take 0.25 s:
        // two more visits (each reckoned at its longest round, 0.1 s, over the hard stop).
        let pool = Growth { rounds: 3, rounds_max: 9, pool_s: 0.25, bound_s: None };
        let (rows, _, took, _) = grow(&agree_and_disagree(), pool, 0.1, None);
        assert_eq!(rounds_of(&rows, "fake.disagree"), 5);
        assert!(took <= 0.6 + 0.25 + 1e-9, "{took}");
        let note = rows[1].notes.iter().find(|n| n.contains("time for extra rounds ran out"));
        assert!(note.is_some_and(|n| n.contains("after 5 rounds")), "{:?}", rows[1].notes);
        // A bound of 0.95 s on the rounds: three more visits fit, a fourth would pass it.
        let bound = Growth { rounds: 3, rounds_max: 9, pool_s: 100.0, bound_s: Some(0.95) };
        let (rows, _, took, _) = grow(&agree_and_disagree(), bound, 0.1, None);
        assert_eq!(rounds_of(&rows, "fake.disagree"), 6);
        assert!(took <= 0.95, "within the bound: {took}");
        assert_eq!(rounds_of(&rows, "fake.agree"), 3);
    }

    #[test]
    fn the_journal_of_a_run_with_extra_rounds_gives_its_rows_back() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.json");
        let mut run = run_file();
        run.config = SamplerConfig { rounds: 3, rounds_max: 6, ..SamplerConfig::quick() }.record();
        let store = Store::open(&path, &run, None).unwrap();
        let growth = Growth { rounds: 3, rounds_max: 6, pool_s: 100.0, bound_s: None };
        let (rows, _, _, _) = grow(&agree_and_disagree(), growth, 0.01, Some(store));
        platform::interrupt::clear_second_signal();
        let (done, unreadable) = finish_journal(&path, 50, true).unwrap();
        assert_eq!(unreadable, 0);
        let again: Vec<(&str, &[usize])> =
            done.results.iter().map(|r| (r.id.as_str(), &r.samples_per_round[..])).collect();
        let first: Vec<(&str, &[usize])> = rows.iter().map(|r| (r.id.as_str(), &r.samples_per_round[..])).collect();
        assert_eq!(again, first);
        assert_eq!(again[1].1.len(), 6);
        assert!(
            done.results[1].notes.iter().any(|n| n.contains("after 6 rounds, the most")),
            "{:?}",
            done.results[1].notes
        );
    }

    #[test]
    fn extra_rounds_go_to_the_results_nearest_their_target_when_the_time_takes_not_all() {
        let wanting = [(0, 1.0, 5.0), (3, 1.0, 1.5), (7, 2.0, 1.2), (9, 0.5, 9.0)];
        assert_eq!(choose_extra(&wanting, 10.0), [0, 3, 7, 9], "all, in the run's order");
        assert_eq!(choose_extra(&wanting, 3.0), [3, 7], "the nearest first");
        assert_eq!(choose_extra(&wanting, 2.6), [7, 9], "each while it fits: 3 no longer does, 9 still");
        assert!(choose_extra(&wanting, 0.0).is_empty());
    }
}
