//! `osprim stress` and `osprim errortest`: a stability run (crate `stability`) with its
//! result file (in `osprim-results/stability/` by default, apart from the benchmark runs that
//! `osprim papers` reads), its history record, and its report.

use crate::config::{EXIT_CHECK_FAILED, Output, Present};
use crate::{emit_in, history, output, record_in_history};
use anyhow::{Context, Result};
use model::RunFile;
use model::stability::{StabilityRun, StabilityTest};
use platform::{env, interrupt, placement, timer};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Where stability results go by default.
pub const STABILITY_DIR: &str = "osprim-results/stability";

/// Runs `test` for `duration`, saves and records it, prints its report; the exit status says
/// how it ended (README, "Exit status").
pub fn run(
    test: StabilityTest,
    duration: Duration,
    seed: Option<u64>,
    out: &Output,
    loc: Option<&history::Location>,
    host: Option<&str>,
    present: &Present,
) -> Result<ExitCode> {
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    let started = std::time::SystemTime::now();
    let seed = seed.unwrap_or_else(|| stability::new_seed(started));
    let path = output_path(out, started)?;
    let settings = stability::Settings { duration, seed };
    if !present.quiet {
        say!(
            "{} for {} (seed {seed}; replay: {})",
            test.name(),
            humantime::format_duration(duration),
            stability::replay_command(test, &settings)
        );
    }
    let header = RunFile { host: host.map(String::from), ..header(started) };
    let result = measure(test, &settings, &interrupt, present.quiet);
    let stability_run = match result {
        Ok(r) => r,
        Err(e) => {
            forget_reservation(out, path.as_deref());
            return Err(e.context(format!("osprim {} could not run", test.name())));
        }
    };
    let mut run = header;
    run.finished_utc = Some(humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
    run.partial = matches!(stability_run.outcome, model::stability::Outcome::Interrupted { .. });
    run.stability = vec![stability_run];
    let saved = match &path {
        Some(p) => match store::write_result_file(p, &run) {
            Ok(()) => Some(p.clone()),
            Err(e) => {
                emit_in(present.format, &report::render(&run, present.format, &present.view)?)?;
                anyhow::bail!("cannot save the result file {}: {e}", p.display());
            }
        },
        None => None,
    };
    emit_in(present.format, &report::render(&run, present.format, &present.view)?)?;
    if let Some(p) = &saved {
        say!("results saved to {}", p.display());
        if let Some(loc) = loc {
            record_in_history(loc, &run, p, present.quiet, &interrupt, None);
        }
    }
    Ok(match &run.stability[0].outcome {
        model::stability::Outcome::Clean => ExitCode::SUCCESS,
        model::stability::Outcome::Failed { .. } => ExitCode::from(EXIT_CHECK_FAILED),
        model::stability::Outcome::Interrupted { .. } => ExitCode::from(interrupt.exit_code()),
    })
}

/// The test itself, with a progress line on a terminal.
fn measure(
    test: StabilityTest,
    settings: &stability::Settings,
    stop: &interrupt::Interrupt,
    quiet: bool,
) -> Result<StabilityRun> {
    let interrupted = || stop.load(Ordering::Relaxed);
    let live = !quiet && std::io::stderr().is_terminal();
    let total = settings.duration.as_secs_f64();
    let mut progress = |p: &stability::Progress| {
        if live {
            raw_stderr(&format!(
                "\r\x1b[2K{}: {:.0} s of {total:.0} s, {} operations",
                test.name(),
                p.elapsed_s,
                p.operations
            ));
        }
    };
    let mut hooks = stability::Hooks { interrupted: &interrupted, progress: &mut progress };
    let r = stability::run(test, settings, &mut hooks);
    if live {
        raw_stderr("\r\x1b[2K");
    }
    r
}

/// The run's description: the machine, the clock, the command; no benchmark results.
fn header(started: std::time::SystemTime) -> RunFile {
    let chosen = placement::choose(None).ok();
    let (_, timer_info) = timer::detect();
    let sampler = crate::cli::SamplingArgs::default().sampler_config();
    RunFile {
        schema: model::SCHEMA,
        osprim: crate::build_info(),
        started_utc: humantime::format_rfc3339_seconds(started).to_string(),
        finished_utc: None,
        partial: true,
        run_id: Some(crate::runner::run_id()),
        host: None,
        // A password in `--db` is never recorded.
        command: store::history::redact_args(
            &std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        ),
        config: sampler.record(),
        placement: model::Placement {
            cpu: chosen.as_ref().map_or(0, |c| c.cpu),
            chosen_by: "not pinned: a stability run uses every allowed CPU".into(),
            allowed_cpus: chosen.map(|c| c.allowed).unwrap_or_default(),
            cpu_pair: None,
        },
        timer: timer_info,
        machine: env::capture(),
        results: Vec::new(),
        availability: Vec::new(),
        executions: Vec::new(),
        counters: None,
        stability: Vec::new(),
    }
}

/// `--output`, nothing with `--no-save`, else a new file in [`STABILITY_DIR`].
fn output_path(out: &Output, started: std::time::SystemTime) -> Result<Option<PathBuf>> {
    match out {
        Output::None => Ok(None),
        Output::File(p) => {
            output::check_target(p)?;
            Ok(Some(p.clone()))
        }
        Output::Default => output::reserve_default(Path::new(STABILITY_DIR), started)
            .map(Some)
            .map_err(|e| crate::runner::no_result_file_in(Path::new(STABILITY_DIR), &e)),
    }
}

/// Removes the empty file reserved for the default name when the run could not start.
fn forget_reservation(out: &Output, path: Option<&Path>) {
    if let (Output::Default, Some(p)) = (out, path)
        && std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() == 0)
    {
        let _ = std::fs::remove_file(p);
    }
}

/// `run` lent, for the seed view, the longest clean stability run of each test recorded in
/// the history at `loc` on the run's host (when longer than the run's own, and not an earlier
/// short test no longer asked for than the run's own): Go!'s stability rows then show the
/// longest clean run on this machine. A history that does not exist or
/// cannot be read lends nothing.
pub fn with_history(mut run: RunFile, loc: &history::Location) -> RunFile {
    if let history::Location::Sqlite(p) = loc
        && !p.is_file()
    {
        return run;
    }
    let Ok(points) = history::History::open(loc).and_then(|mut h| h.stability()) else { return run };
    for test in [StabilityTest::Stress, StabilityTest::ErrorTest] {
        let Some(best) = analysis::history::longest_clean(&points, test, run.host_name()) else { continue };
        let own = run.stability.iter().filter(|s| s.test == test).map(|s| s.clean_s).fold(f64::NEG_INFINITY, f64::max);
        // An earlier seed suite's short test of no longer a length than this result's own
        // run stands for the same few seconds: the result keeps its own (else every bare
        // run would show whichever earlier short test ran a few milliseconds longer).
        let asked = run.stability.iter().filter(|s| s.test == test).map(|s| s.requested_s).fold(f64::NAN, f64::max);
        if best.run.short && best.run.requested_s <= asked {
            continue;
        }
        if best.run.clean_s > own {
            let mut lent = best.run.clone();
            let file = best.file.as_deref().map(|f| format!(", {f}")).unwrap_or_default();
            lent.notes.push(format!("recorded {}{file}", best.started_utc));
            run.stability.push(lent);
        }
    }
    run
}

/// Writes `text` to stderr as it is (a progress line), ignoring a failure.
fn raw_stderr(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}
