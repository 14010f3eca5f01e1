//! `osprim ab`: two conditions measured side by side in one invocation, paired, until every
//! row is decided or the budget ends.
//!
//! A comparison of two runs made apart compares two moments of the machine, and on a shared
//! machine those differ by 10–30 %. Here both conditions see the same moments (Abedi &
//! Brecht, "Conducting repeatable experiments in highly variable cloud computing
//! environments", ICPE 2017: randomized multiple interleaved trials; Bulej et al., "Duet
//! benchmarking", ICPE 2020):
//!
//! - **A condition is a launcher** of the worker ([`crate::execution`]): a prefix command that
//!   ends by running it (`env LD_PRELOAD=…`, `setarch -R`, a script that installs a seccomp
//!   filter and execs its arguments), another osprim binary, and set-up and tear-down commands
//!   run around each of its rounds (a sysctl, attaching an eBPF program).
//! - **A pair** is one A round and one B round, each a fresh worker measuring every row not yet
//!   decided, both started with the same memory layout (the layout changes from pair to pair),
//!   one after the other on one CPU in a random balanced order: pairs come in blocks of two,
//!   `ab ba` or `ba ab`, drawn from the recorded seed, so that a drift of the machine within a
//!   block cancels. With `--duet` both run at the same time, one on each of two CPUs, swapping
//!   CPUs from pair to pair; rows that need both CPUs themselves (cross-CPU hand-offs) run
//!   interleaved after them.
//! - After every pair each row's pairs are judged ([`analysis::ab`]); a decided row gets no
//!   more pairs, and the invocation stops when every row is decided or the next pair would
//!   overrun the budget. The file is saved after every pair, so that a signal or a full disk
//!   loses at most the pair being measured.
//!
//! Every wait has a deadline (a worker's, a set-up's); a set-up that succeeded is always
//! followed by its tear-down, at Ctrl-C too; every worker is killed and reaped by its guard.

use crate::config::{AbConfig, Output, UsageError};
use crate::execution::layout::{Layout, Layouts};
use crate::execution::parent::{Event, Launcher, Worker};
use crate::execution::protocol::{PROTOCOL, Report, Request, Visit, from_wire};
use crate::{env, placement, registry, timer};
use analysis::ab as judge;
use anyhow::{Context, Result};
use bench::sampler::SamplerConfig;
use bench::{Benchmark, Ctx, Measured, NotMeasured, Params};
use model::ab::{AB_KIND, AB_SCHEMA, AbFile, AbRow, Condition, Design, Mode, Pair, RowPair};
use model::{Execution, Placement, RunFile, SCHEMA};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The default budget of the pairs, s.
pub const DEFAULT_BUDGET_S: f64 = 60.0;

/// The default sampler budget of one row in one round, s: a round's median is then precise to
/// well under the noise threshold for most rows, and a pair of a family of rows takes about a
/// second.
pub const DEFAULT_ROUND_BUDGET_S: f64 = 0.03;

/// The default noise threshold of `osprim ab` (docs/ab.md, "The noise threshold").
pub const DEFAULT_NOISE: f64 = 0.02;

/// A set-up or tear-down command gets this long.
const HOOK_WITHIN: Duration = Duration::from_secs(60);

/// A worker gets this long to start and build its timer.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// After its last report or a stop, a worker gets this long to leave by itself.
const GRACE: Duration = Duration::from_secs(5);

/// Under the same name the two sides of `--check`.
const CHECK_NOTE: &str = "A against A (--check): both sides run condition A";

/// What a finished `osprim ab` hands back.
pub struct AbFinished {
    /// The result.
    pub ab: AbFile,
    /// Where it was saved, if it was.
    pub saved_to: Option<PathBuf>,
    /// Why it could not be saved.
    pub save_error: Option<String>,
    /// Whether a signal cut it short.
    pub interrupted: bool,
}

/// A condition as the worker is started under it (module doc): its launcher, and its hooks.
struct Side {
    condition: Condition,
    launcher: Launcher,
}

/// The word of the program a prefix starts, found on `PATH` (or as a path), or why not.
fn find_program(word: &str) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if word.contains('/') {
        return is_exec(Path::new(word)).then(|| PathBuf::from(word));
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).map(|d| d.join(word)).find(|p| is_exec(p)))
        .unwrap_or(None)
}

/// Splits a prefix command into words as a shell would (quotes, escapes), or says why it
/// cannot.
pub fn split_prefix(name: &str, text: &str) -> Result<Vec<String>, UsageError> {
    let words = shlex::split(text).ok_or_else(|| {
        UsageError(format!("--{} '{text}': unbalanced quotes or a trailing backslash", name.to_lowercase()))
    })?;
    if words.is_empty() {
        return Err(UsageError(format!("--{} is empty: give a command, or leave the flag out", name.to_lowercase())));
    }
    Ok(words)
}

impl Side {
    /// The launcher of `condition`: its prefix, then its binary (or this one) as a worker.
    fn new(condition: Condition, own: &Path) -> Result<Side, UsageError> {
        let program = match &condition.binary {
            Some(b) => find_program(b)
                .ok_or_else(|| UsageError(format!("{}'s binary '{b}' is not an executable file", condition.name)))?,
            None => own.to_path_buf(),
        };
        let worker = vec![program.clone().into_os_string(), crate::execution::WORKER_ARG.into()];
        let launcher = match condition.prefix.split_first() {
            None => Launcher { program, args: worker[1..].to_vec() },
            Some((first, rest)) => {
                let found = find_program(first).ok_or_else(|| {
                    UsageError(format!(
                        "{}'s command '{first}' is not found on PATH (give a path, or check --{})",
                        condition.name,
                        condition.name.to_lowercase()
                    ))
                })?;
                let mut args: Vec<std::ffi::OsString> = rest.iter().map(Into::into).collect();
                args.extend(worker);
                Launcher { program: found, args }
            }
        };
        Ok(Side { condition, launcher })
    }
}

/// Runs a set-up or tear-down `command` with `sh -c`, its output kept in `scratch`, within
/// [`HOOK_WITHIN`] (then killed); why it failed, if it did.
fn run_hook(what: &str, command: &str, scratch: &Path) -> Result<(), String> {
    let out = tempfile::tempfile_in(scratch).map_err(|e| format!("{what}: cannot make a file for its output: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("{what}: {e}"))?;
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command).stdin(std::process::Stdio::null()).stdout(out.try_clone().map_err(|e| e.to_string())?);
    cmd.stderr(err);
    let child =
        platform::interrupt::spawn_worker(&mut cmd).map_err(|e| format!("{what} '{command}' cannot start: {e}"))?;
    let pid = child.id();
    let status = sys::reap::reap_by(pid as libc::pid_t, Instant::now() + HOOK_WITHIN);
    platform::interrupt::forget_worker(pid);
    if status.success() {
        return Ok(());
    }
    let said = last_line(out);
    let how = match status {
        sys::reap::Reaped::Signaled { killed: true, .. } => format!("did not end within {} s", HOOK_WITHIN.as_secs()),
        other => crate::execution::parent::describe(other),
    };
    Err(match said {
        Some(s) => format!("{what} '{command}' failed ({how}): {s}"),
        None => format!("{what} '{command}' failed ({how})"),
    })
}

/// The last non-empty line of a file's first 64 KiB.
fn last_line(mut file: std::fs::File) -> Option<String> {
    use std::io::{Read, Seek};
    let _ = file.rewind();
    let mut text = Vec::new();
    let _ = file.take(64 << 10).read_to_end(&mut text);
    String::from_utf8_lossy(&text)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(300).collect())
}

/// Whether a row needs both CPUs itself (a cross-CPU hand-off): it cannot duet on two CPUs.
pub fn needs_two_cpus(params: &Params) -> bool {
    params.get("placement").and_then(|v| v.as_str()) == Some("cross_cpu") || params.contains_key("cpus")
}

/// The order of pair `index`: pairs come in blocks of two, `ab ba` or `ba ab`, the first of
/// each block drawn from `rng` (module doc).
fn order_of(index: usize, rng: &mut stats::rng::Rng, first_of_block: &mut bool) -> bool {
    if index.is_multiple_of(2) {
        *first_of_block = rng.next_u64() & 1 == 0;
        *first_of_block
    } else {
        !*first_of_block
    }
}

/// One row being measured.
struct Slot {
    bench: &'static dyn Benchmark,
    params: Params,
    /// Each side's outcomes, round by round (round `i` of a side need not be pair `i`: a
    /// side's failed round leaves no outcome).
    outcomes: [Vec<Result<Measured, NotMeasured>>; 2],
    /// Complete pairs.
    pairs: Vec<RowPair>,
    /// No more pairs: decided, skipped or failed.
    done: bool,
    decided_after: Option<usize>,
    note: Option<String>,
}

/// A worker measuring one side's round.
struct InFlight {
    side: usize,
    worker: Worker,
    /// The slots of its visits, in order.
    visits: Vec<usize>,
    got: Vec<Option<Result<Measured, NotMeasured>>>,
    exec: Execution,
    deadline: Instant,
    allowance: Duration,
    stopping: Option<Instant>,
    ended: bool,
    timed_out: bool,
    /// It said it was ready to measure.
    ready: bool,
}

impl InFlight {
    /// Takes what the worker says within `wait`; whether it is done.
    fn poll(&mut self, wait: Duration, stop: bool) -> bool {
        if self.ended {
            return true;
        }
        if stop && self.stopping.is_none() {
            self.worker.signal(nix::sys::signal::Signal::SIGTERM);
            self.stopping = Some(Instant::now() + GRACE);
        }
        if Instant::now() >= self.stopping.map_or(self.deadline, |s| s.min(self.deadline)) {
            self.timed_out = self.stopping.is_none();
            self.ended = true;
            return true;
        }
        match self.worker.next(wait) {
            Event::Quiet => {}
            Event::Ended => self.ended = true,
            Event::Unreadable(_) => {}
            Event::Report(Report::Ready(r)) => {
                self.ready = true;
                self.exec.pid = r.pid;
                self.exec.overhead_ticks = Some(r.overhead_ticks);
                self.exec.overhead_ns = Some(r.overhead_ns);
                self.exec.overhead = r.overhead;
                self.deadline = Instant::now() + self.allowance;
            }
            Event::Report(Report::Begin { .. }) => self.deadline = Instant::now() + self.allowance,
            Event::Report(Report::Outcome { visit, outcome, .. }) if visit < self.got.len() => {
                self.got[visit] = Some(from_wire(outcome));
                self.exec.outcomes += 1;
                self.deadline = Instant::now() + self.allowance;
            }
            Event::Report(_) => {}
        }
        self.ended
    }

    /// Reaps the worker; what it measured, by slot, and whether it ever got ready.
    fn finish(self) -> Landed {
        let InFlight { side, worker, visits, got, mut exec, timed_out, ready, .. } = self;
        let ended = worker.finish(if timed_out { Duration::ZERO } else { GRACE });
        exec.ended = ended.status.clone();
        if timed_out {
            exec.note = Some("it stopped answering and was killed".into());
        } else if !ended.clean {
            exec.note = Some(match ended.stderr {
                Some(s) => format!("the worker process ended before its round did: {}: {s}", ended.status),
                None => format!("the worker process ended before its round did: {}", ended.status),
            });
        }
        let outcomes = visits.into_iter().zip(got).filter_map(|(slot, o)| Some((slot, o?))).collect();
        Landed { side, outcomes, exec, ready }
    }
}

/// What a side's round gave: its outcomes by slot, its worker's record, whether the worker got
/// ready to measure.
struct Landed {
    side: usize,
    outcomes: Vec<(usize, Result<Measured, NotMeasured>)>,
    exec: Execution,
    ready: bool,
}

/// Everything the invocation keeps while it measures.
struct State {
    cfg: AbConfig,
    slots: Vec<Slot>,
    pairs: Vec<Pair>,
    executions: [Vec<Execution>; 2],
    started: std::time::SystemTime,
    began: Instant,
    seed: u64,
    run_id: String,
    machine: model::Machine,
    timer: model::TimerInfo,
    placement: Placement,
    round_cfg: SamplerConfig,
    design: Design,
    sides: [Condition; 2],
    stopped: String,
}

/// Measures A and B side by side as `cfg` says (module doc).
pub fn run(cfg: AbConfig, interrupt: &AtomicBool) -> Result<AbFinished> {
    let benches = registry::select(&cfg.patterns).map_err(|p| {
        let hint = registry::nearest(&p).map(|n| format!("; did you mean '{n}'?")).unwrap_or_default();
        UsageError(format!("no benchmark matches '{p}' (see osprim list){hint}"))
    })?;
    let own = std::env::current_exe().context("osprim cannot find its own executable")?;
    let a = Condition { name: "A".into(), ..cfg.a.clone() };
    let b = if cfg.check {
        Condition { name: "B".into(), ..a.clone() }
    } else {
        Condition { name: "B".into(), ..cfg.b.clone() }
    };
    let sides = [Side::new(a.clone(), &own)?, Side::new(b.clone(), &own)?];
    if cfg.duet && sides.iter().any(|s| s.condition.setup.is_some() || s.condition.teardown.is_some()) {
        return Err(UsageError(
            "--duet runs A and B at the same time: set-up and tear-down commands would change the machine under both; \
             use a prefix command (--a/--b) or leave --duet out"
                .into(),
        )
        .into());
    }
    let usage = |e: placement::PlacementError| match e {
        placement::PlacementError::NotAllowed { .. } => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    };
    let chosen = placement::choose(cfg.cpu).map_err(usage)?;
    let duet_cpus = if cfg.duet {
        let pair = match cfg.cpus {
            Some(p) => {
                placement::check_pair(p).map_err(usage)?;
                p
            }
            None => match chosen.allowed.as_slice() {
                [x, y, ..] => [*x, *y],
                _ => {
                    return Err(UsageError(format!(
                        "--duet needs two CPUs; this process may use only {:?}",
                        chosen.allowed
                    ))
                    .into());
                }
            },
        };
        Some(pair)
    } else {
        None
    };
    let started = std::time::SystemTime::now();
    let out = match &cfg.output {
        Output::None => None,
        Output::File(p) => {
            store::output::check_target(p)?;
            let own = std::env::current_exe().ok();
            let inputs: Vec<(&Path, &str)> = [
                (cfg.a.binary.as_deref().map(Path::new), "condition A's binary"),
                (cfg.b.binary.as_deref().map(Path::new), "condition B's binary"),
                (own.as_deref(), "osprim itself"),
            ]
            .into_iter()
            .filter_map(|(path, what)| path.map(|path| (path, what)))
            .collect();
            store::output::check_not_input(p, &inputs)?;
            Some(p.clone())
        }
        Output::Default => {
            let dir = Path::new(crate::config::RESULTS_DIR).join("ab");
            std::fs::create_dir_all(&dir).map_err(|e| crate::runner::no_result_file_in(&dir, &e))?;
            let path = store::output::reserve_default(&dir, started)
                .map_err(|e| crate::runner::no_result_file_in(&dir, &e))?;
            Some(path)
        }
    };
    placement::pin(chosen.cpu)?;
    let machine = env::capture();
    let (clock, timer_info) = timer::detect();
    let scratch = platform::interrupt::create_removable(platform::scratch::create, |d| d.path().to_path_buf())
        .context("cannot create a temporary directory")?;
    let seed = cfg.seed.unwrap_or_else(new_seed);
    let round_cfg = SamplerConfig {
        budget_s: cfg.round_budget_s,
        warmup_s: (cfg.round_budget_s / 3.0).min(0.02),
        rounds: 1,
        ..SamplerConfig::quick()
    }
    .for_round(0);
    // Every row's parameters, known before measuring.
    let mut ctx = Ctx::new(clock, &timer_info, round_cfg.clone(), chosen.cpu, scratch.path(), interrupt);
    ctx.allowed_cpus = chosen.allowed.clone();
    ctx.virtualized = machine.virtualization.virtualized == Some(true);
    let mut slots = Vec::new();
    for bench in &benches {
        let available = bench.available();
        let variants = if available.is_ok() { bench.variants(&ctx) } else { vec![Params::new()] };
        for params in variants {
            let mut slot = Slot {
                bench: *bench,
                params,
                outcomes: [Vec::new(), Vec::new()],
                pairs: Vec::new(),
                done: false,
                decided_after: None,
                note: None,
            };
            if let Err(why) = &available {
                slot.done = true;
                slot.note = Some(format!("skipped: {why}"));
            }
            slots.push(slot);
        }
    }
    drop(ctx);
    let design = Design {
        mode: if cfg.duet { Mode::Duet } else { Mode::Interleaved },
        check: cfg.check,
        seed,
        noise: cfg.noise,
        alpha: judge::ALPHA,
        tightest_at: judge::TIGHTEST_AT,
        min_pairs: judge::MIN_PAIRS,
        budget_s: cfg.budget_s,
        round_budget_s: cfg.round_budget_s,
        method: judge::METHOD.to_string(),
        cpu: chosen.cpu,
        duet_cpus,
    };
    let placement = Placement {
        cpu: chosen.cpu,
        chosen_by: chosen.chosen_by.clone(),
        allowed_cpus: chosen.allowed.clone(),
        cpu_pair: duet_cpus,
    };
    let mut state = State {
        cfg,
        slots,
        pairs: Vec::new(),
        executions: [Vec::new(), Vec::new()],
        started,
        began: Instant::now(),
        seed,
        run_id: crate::runner::run_id(),
        machine,
        timer: timer_info.clone(),
        placement,
        round_cfg,
        design,
        sides: [a, b],
        stopped: String::new(),
    };
    let base = Request {
        protocol: PROTOCOL,
        round: 0,
        cpu: chosen.cpu,
        cpu_pair: None,
        allowed_cpus: chosen.allowed.clone(),
        sizes: None,
        scratch: scratch.path().to_path_buf(),
        virtualized: state.machine.virtualization.virtualized == Some(true),
        timer: timer_info,
        visits: Vec::new(),
    };
    let stop = || interrupt.load(Ordering::Relaxed);
    let mut order_rng = stats::rng::Rng::new(stats::rng::derive_seed(seed, 1));
    let mut layouts = Layouts::seeded(stats::rng::derive_seed(seed, 2));
    let mut first_of_block = true;
    let mut saved = (None, None);
    let mut failure: Option<String> = None;
    let progress = !state.cfg.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    loop {
        let elapsed = state.began.elapsed().as_secs_f64();
        let last = state.pairs.last().map_or(0.0, |p| p.took_s);
        if stop() {
            state.stopped = "interrupted (a signal)".into();
            break;
        }
        if state.slots.iter().all(|s| s.done) {
            state.stopped = "every row decided".into();
            break;
        }
        if !state.pairs.is_empty() && elapsed + last > state.cfg.budget_s {
            state.stopped = format!("the budget of {} s", state.cfg.budget_s);
            break;
        }
        let index = state.pairs.len();
        let a_first = order_of(index, &mut order_rng, &mut first_of_block);
        let layout = layouts.draw();
        let pair_began = Instant::now();
        let wanted: Vec<usize> = (0..state.slots.len()).filter(|&i| !state.slots[i].done).collect();
        let request = Request { round: index, ..base.clone() };
        let result = measure_pair(&mut state, &sides, &request, &wanted, a_first, layout, duet_cpus, &stop);
        let took = pair_began.elapsed().as_secs_f64();
        state.pairs.push(Pair {
            order: if a_first { "ab".into() } else { "ba".into() },
            cpus: match duet_cpus {
                Some([x, y]) if a_first => [x, y],
                Some([x, y]) => [y, x],
                None => [chosen.cpu, chosen.cpu],
            },
            rows: wanted.len(),
            at_s: pair_began.duration_since(state.began).as_secs_f64(),
            took_s: took,
        });
        judge_pairs(&mut state, index);
        if progress {
            let decided = state.slots.iter().filter(|s| s.decided_after.is_some()).count();
            progress_line(&format!(
                "pair {} ({}): {} rows measured, {decided} of {} decided, {:.0} s of {} s",
                index + 1,
                if a_first { "A then B" } else { "B then A" },
                wanted.len(),
                state.slots.len(),
                state.began.elapsed().as_secs_f64(),
                state.cfg.budget_s
            ));
        }
        // A first pair that failed measured nothing worth a file.
        if let Some(path) = &out
            && (result.is_ok() || state.pairs.len() > 1)
        {
            saved = save(path, &assemble(&state, true, stats::DEFAULT_RESAMPLES / 10));
        }
        if let Err(why) = result {
            state.stopped = format!("stopped: {why}");
            failure = Some(why);
            break;
        }
    }
    if progress {
        progress_line("");
    }
    let interrupted = stop();
    let ab = assemble(&state, interrupted || failure.is_some(), stats::DEFAULT_RESAMPLES);
    let scratch_path = scratch.path().to_path_buf();
    platform::interrupt::settle(&scratch_path, || drop(scratch));
    if let Some(why) = failure
        && state.pairs.len() <= 1
    {
        // The default file reserved at the start, still empty, goes.
        if let (Output::Default, Some(path)) = (&state.cfg.output, &out)
            && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
        {
            let _ = std::fs::remove_file(path);
        }
        anyhow::bail!("{why}");
    }
    if let Some(path) = &out {
        saved = save(path, &ab);
    }
    Ok(AbFinished { ab, saved_to: saved.0, save_error: saved.1, interrupted })
}

/// Rewrites the progress line on the terminal (stderr): `text`, or nothing.
fn progress_line(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[K{text}").and_then(|()| err.flush());
}

/// A new seed from the kernel's generator (the clock should it be unreadable).
fn new_seed() -> u64 {
    let id = crate::runner::run_id();
    u64::from_str_radix(&id[..16], 16).unwrap_or(0x0a0b_0c0d)
}

/// Writes `ab` to `path` (temp file and rename); where it went, or why not.
fn save(path: &Path, ab: &AbFile) -> (Option<PathBuf>, Option<String>) {
    let written = serde_json::to_vec(ab)
        .map_err(std::io::Error::other)
        .and_then(|bytes| store::write_new_or_regular(path, &bytes));
    match written {
        Ok(()) => (Some(path.to_path_buf()), None),
        Err(e) => (None, Some(format!("cannot save the A/B result to {}: {e}", path.display()))),
    }
}

/// Measures one pair: the rows `wanted`, A and B in the order given (or at once, in a duet,
/// for the rows that can), each side's hooks around its round. An error stops the invocation
/// (a set-up that failed, a worker that cannot start).
#[allow(clippy::too_many_arguments)]
fn measure_pair(
    state: &mut State,
    sides: &[Side; 2],
    request: &Request,
    wanted: &[usize],
    a_first: bool,
    layout: Layout,
    duet: Option<[usize; 2]>,
    stop: &dyn Fn() -> bool,
) -> Result<(), String> {
    let order = if a_first { [0, 1] } else { [1, 0] };
    let (together, apart): (Vec<usize>, Vec<usize>) = match duet {
        Some(_) => wanted.iter().partition(|&&i| !needs_two_cpus(&state.slots[i].params)),
        None => (Vec::new(), wanted.to_vec()),
    };
    if let Some([first_cpu, second_cpu]) = duet
        && !together.is_empty()
    {
        // Both at once; the side that goes "first" takes the first CPU.
        let cpu_of = |side: usize| if side == order[0] { first_cpu } else { second_cpu };
        let mut flights = Vec::new();
        for side in order {
            let req = Request { cpu: cpu_of(side), ..request.clone() };
            flights.push(start(state, sides, side, &req, &together, layout)?);
        }
        drive(state, flights, stop)?;
    }
    if !apart.is_empty() {
        for side in order {
            if stop() {
                break;
            }
            let condition = &sides[side].condition;
            if let Some(setup) = &condition.setup {
                run_hook(&format!("{}'s set-up", condition.name), setup, &request.scratch)?;
            }
            // A second signal ends osprim at once: the tear-down still runs.
            if let Some(t) = condition.teardown.clone() {
                let (what, scratch) = (format!("{}'s tear-down", condition.name), request.scratch.clone());
                platform::interrupt::on_second_signal(Box::new(move || {
                    let _ = run_hook(&what, &t, &scratch);
                }));
            }
            let measured = start(state, sides, side, request, &apart, layout).and_then(|f| drive(state, vec![f], stop));
            let teardown = condition
                .teardown
                .as_ref()
                .map_or(Ok(()), |t| run_hook(&format!("{}'s tear-down", condition.name), t, &request.scratch));
            platform::interrupt::clear_second_signal();
            measured?;
            teardown?;
        }
    }
    Ok(())
}

/// Starts side `side`'s worker for the slots `visits`.
fn start(
    state: &State,
    sides: &[Side; 2],
    side: usize,
    request: &Request,
    visits: &[usize],
    layout: Layout,
) -> Result<InFlight, String> {
    let req = Request {
        visits: visits
            .iter()
            .map(|&i| Visit {
                id: state.slots[i].bench.id().to_string(),
                params: state.slots[i].params.clone(),
                cfg: state.round_cfg.clone(),
            })
            .collect(),
        ..request.clone()
    };
    let allowance = Duration::from_secs_f64(2.0 * (4.0 * state.round_cfg.budget_s).max(1.0) + 60.0);
    let worker = Worker::start(&sides[side].launcher, &layout, &request.scratch, &req).map_err(|e| {
        format!(
            "{}'s worker could not be started ({}): {e}",
            sides[side].condition.name,
            sides[side].condition.describe()
        )
    })?;
    let exec = Execution {
        round: request.round,
        pid: worker.pid(),
        env_pad_bytes: layout.env_pad_bytes,
        heap_offset_bytes: layout.heap_offset_bytes,
        heap_blocks: layout.heap_blocks,
        ..Execution::default()
    };
    Ok(InFlight {
        side,
        worker,
        visits: visits.to_vec(),
        got: (0..visits.len()).map(|_| None).collect(),
        exec,
        deadline: Instant::now() + READY_WITHIN,
        allowance,
        stopping: None,
        ended: false,
        timed_out: false,
        ready: false,
    })
}

/// Reads the workers `flights` until each has ended; files their outcomes. A worker that never
/// got ready to measure (a prefix that did not run it, another build's protocol) is an error:
/// no later pair could do better.
fn drive(state: &mut State, mut flights: Vec<InFlight>, stop: &dyn Fn() -> bool) -> Result<(), String> {
    let wait = Duration::from_millis(if flights.len() > 1 { 20 } else { 50 });
    loop {
        // Every worker is read each time round, not only up to the first still running.
        let mut all = true;
        for f in flights.iter_mut() {
            all &= f.poll(wait, stop());
        }
        if all {
            break;
        }
    }
    let mut refused = None;
    for f in flights {
        let Landed { side, outcomes, exec, ready } = f.finish();
        if !ready && !stop() {
            let name = &state.sides[side].name;
            refused.get_or_insert(format!(
                "{name}'s worker did not start measuring ({}; condition: {})",
                exec.note.clone().unwrap_or_else(|| exec.ended.clone()),
                state.sides[side].describe()
            ));
        }
        for (slot, outcome) in outcomes {
            let s = &mut state.slots[slot];
            if let Err(e) = &outcome {
                let why = match e {
                    NotMeasured::Skipped(r) => format!("skipped under {}: {r}", state.sides[side].name),
                    NotMeasured::Failed(r) => format!("failed under {}: {r}", state.sides[side].name),
                };
                s.done = true;
                s.note.get_or_insert(why);
            }
            s.outcomes[side].push(outcome);
        }
        state.executions[side].push(exec);
    }
    refused.map_or(Ok(()), Err)
}

/// The figure of a round: the median of its samples.
fn figure(m: &Measured) -> Option<f64> {
    let mut v: Vec<f64> = m.samples.per_op_ns.iter().copied().filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| stats::median_in_place(&mut v))
}

/// Adds pair `index` to every row that has both halves of it, and judges each row again.
fn judge_pairs(state: &mut State, index: usize) {
    let noise = state.cfg.noise;
    for slot in state.slots.iter_mut().filter(|s| !s.done || s.decided_after.is_none()) {
        let [a, b] = &slot.outcomes;
        // This pair's halves are the last outcome of each side, when both sides have as many
        // outcomes as this row has pairs plus one.
        let n = slot.pairs.len();
        if a.len() == n + 1 && b.len() == n + 1 {
            match (a[n].as_ref().ok().and_then(figure), b[n].as_ref().ok().and_then(figure)) {
                (Some(fa), Some(fb)) => slot.pairs.push(RowPair { pair: index, a: fa, b: fb }),
                _ => {
                    // A half without samples: the pair is dropped for this row.
                    slot.outcomes[0].truncate(n);
                    slot.outcomes[1].truncate(n);
                }
            }
        } else {
            // One side missing this pair (its worker died): the other half is dropped.
            slot.outcomes[0].truncate(n);
            slot.outcomes[1].truncate(n);
        }
        if slot.done {
            continue;
        }
        let d = judge::decide(&slot.pairs, noise);
        if judge::is_decided(&d) {
            slot.done = true;
            slot.decided_after = Some(slot.pairs.len());
        }
    }
}

/// The result file of what was measured so far.
fn assemble(state: &State, partial: bool, resamples: usize) -> AbFile {
    let side_run = |side: usize| RunFile {
        schema: SCHEMA,
        osprim: crate::build_info(),
        started_utc: humantime::format_rfc3339_seconds(state.started).to_string(),
        finished_utc: None,
        partial,
        command: Vec::new(),
        config: state.round_cfg.record(),
        placement: state.placement.clone(),
        timer: state.timer.clone(),
        machine: state.machine.clone(),
        results: state
            .slots
            .iter()
            .map(|s| {
                let none = [Err(NotMeasured::Skipped(s.note.clone().unwrap_or_else(|| "not measured".into())))];
                let outcomes: &[Result<Measured, NotMeasured>] =
                    if s.outcomes[side].is_empty() { &none } else { &s.outcomes[side] };
                analysis::analyse::rounds_row(
                    s.bench.id(),
                    s.bench.about(),
                    s.params.clone(),
                    outcomes,
                    &state.round_cfg.record(),
                    &state.timer,
                    resamples,
                )
            })
            .collect(),
        availability: Vec::new(),
        executions: state.executions[side].clone(),
        counters: None,
        stability: Vec::new(),
        run_id: Some(format!("{}-{}", state.run_id, if side == 0 { "a" } else { "b" })),
        host: state.cfg.host.clone(),
    };
    let (a_run, b_run) = (side_run(0), side_run(1));
    let rows = state
        .slots
        .iter()
        .zip(&a_run.results)
        .map(|(s, r)| {
            let mut decision = judge::decide(&s.pairs, state.cfg.noise);
            decision.decided_after = s.decided_after;
            let undecided = (s.decided_after.is_none() && !s.pairs.is_empty()).then(|| {
                format!("not decided in {} pairs: its interval still reaches across the noise threshold", s.pairs.len())
            });
            let apart = (state.design.mode == Mode::Duet && needs_two_cpus(&s.params)).then(|| {
                "needs both CPUs itself (a cross-CPU hand-off): its pairs ran interleaved, not as a duet".to_string()
            });
            let notes: Vec<String> = [s.note.clone(), undecided, apart].into_iter().flatten().collect();
            let note = (!notes.is_empty()).then(|| notes.join("; "));
            AbRow {
                id: s.bench.id().to_string(),
                params: s.params.clone(),
                unit: r.unit,
                pairs: s.pairs.clone(),
                decision,
                duet: state.design.mode == Mode::Duet && !needs_two_cpus(&s.params),
                note,
            }
        })
        .collect();
    let mut design = state.design.clone();
    design.seed = state.seed;
    AbFile {
        kind: AB_KIND.into(),
        schema: AB_SCHEMA,
        osprim: crate::build_info(),
        started_utc: humantime::format_rfc3339_seconds(state.started).to_string(),
        finished_utc: (!partial).then(|| humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()),
        partial,
        command: store::history::redact_args(
            &std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        ),
        run_id: state.run_id.clone(),
        host: state.cfg.host.clone(),
        design,
        a: state.sides[0].clone(),
        b: if state.cfg.check {
            Condition { name: "B".into(), ..state.sides[0].clone() }
        } else {
            state.sides[1].clone()
        },
        pairs: state.pairs.clone(),
        stopped: if state.cfg.check && !state.stopped.contains(CHECK_NOTE) {
            format!("{}; {CHECK_NOTE}", state.stopped)
        } else {
            state.stopped.clone()
        },
        rows,
        a_run,
        b_run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_in_balanced_blocks_of_two() {
        let mut rng = stats::rng::Rng::new(5);
        let mut first = true;
        let orders: Vec<bool> = (0..40).map(|i| order_of(i, &mut rng, &mut first)).collect();
        for block in orders.chunks(2) {
            assert_ne!(block[0], block[1], "each block is ab ba or ba ab");
        }
        let a_first = orders.iter().filter(|&&a| a).count();
        assert_eq!(a_first, 20, "balanced");
        assert!(orders.chunks(2).any(|b| b[0]) && orders.chunks(2).any(|b| !b[0]), "both kinds of block");
    }

    #[test]
    fn prefixes_split_as_a_shell_would_and_bad_ones_are_refused() {
        assert_eq!(split_prefix("A", "env 'X=a b' setarch -R").unwrap(), ["env", "X=a b", "setarch", "-R"]);
        assert!(split_prefix("B", "env 'X=a").unwrap_err().0.contains("--b 'env 'X=a': unbalanced quotes"));
        assert!(split_prefix("B", "  ").unwrap_err().0.contains("--b is empty"));
    }

    #[test]
    fn a_condition_is_a_launcher_of_the_worker() {
        let own = Path::new("/usr/bin/osprim-test");
        let plain = Side::new(Condition { name: "A".into(), ..Condition::default() }, own).unwrap();
        assert_eq!(plain.launcher.program, own);
        assert_eq!(plain.launcher.args, [crate::execution::WORKER_ARG]);
        let env = Side::new(
            Condition { name: "B".into(), prefix: vec!["env".into(), "X=1".into()], ..Condition::default() },
            own,
        )
        .unwrap();
        assert!(env.launcher.program.ends_with("env"));
        let args: Vec<String> = env.launcher.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args, ["X=1", "/usr/bin/osprim-test", crate::execution::WORKER_ARG]);
        let missing = Side::new(
            Condition { name: "B".into(), prefix: vec!["no-such-prefix-xyz".into()], ..Condition::default() },
            own,
        );
        assert!(missing.err().unwrap().0.contains("'no-such-prefix-xyz' is not found on PATH"));
        let bad_bin = Side::new(
            Condition { name: "B".into(), binary: Some("/nonexistent/osprim".into()), ..Condition::default() },
            own,
        );
        assert!(bad_bin.err().unwrap().0.contains("is not an executable file"));
    }

    #[test]
    fn a_hook_that_fails_or_hangs_says_so_and_one_that_works_passes() {
        let scratch = tempfile::tempdir().unwrap();
        assert!(run_hook("A's set-up", "true", scratch.path()).is_ok());
        let e = run_hook("B's set-up", "echo nope >&2; exit 3", scratch.path()).unwrap_err();
        assert!(e.contains("B's set-up 'echo nope >&2; exit 3' failed (exit 3): nope"), "{e}");
    }

    #[test]
    fn rows_that_need_both_cpus_do_not_duet() {
        let p = |k: &str, v: &str| Params::from_iter([(k.to_string(), serde_json::Value::String(v.into()))]);
        assert!(needs_two_cpus(&p("placement", "cross_cpu")));
        assert!(!needs_two_cpus(&p("placement", "same_cpu")));
        assert!(!needs_two_cpus(&Params::new()));
    }
}
