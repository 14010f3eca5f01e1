//! osprim measures what operating-system primitives cost on this machine — system calls,
//! identity queries, file and signal operations, library loading, and more to come — with
//! sound statistics and self-checks, beside the figures of five classic systems papers.
//!
//! Data flows one way: [`registry`] → [`sampler`] (a benchmark's samples) → [`stats`]
//! (summary) → [`analyse`]/[`derive`] (result rows of [`model`]) → [`report`]. The modules
//! form layers, each importing only from the layers below it (`docs/architecture.md`,
//! checked by `tests/architecture.rs`): [`model`] is the vocabulary every layer speaks and
//! imports nothing; [`cli`] is the only module that knows clap.
#![deny(unsafe_code)]

pub mod analyse;
pub mod bench;
pub mod cli;
pub mod config;
pub mod derive;
pub mod env;
pub mod interrupt;
pub mod journal;
pub mod model;
pub mod output;
pub mod panics;
pub mod placement;
pub mod registry;
pub mod report;
pub mod runner;
pub mod rvm;
pub mod sampler;
pub mod scratch;
pub mod seeds;
pub mod stats;
pub mod store;
pub mod sys;
pub mod timer;

use anyhow::{Context, Result};
use config::{Command, Format, RunConfig, SeedsSource};
use std::io::Write;
use std::process::ExitCode;

/// Runs a parsed command line; returns the process exit status.
pub fn run(cli: cli::Cli) -> Result<ExitCode> {
    panics::install_hook();
    execute(cli.into_command())
}

/// Runs a validated command; returns the process exit status.
pub fn execute(command: Command) -> Result<ExitCode> {
    match command {
        Command::Run { run, with_seeds } => run_and_report(&run, with_seeds),
        Command::List { pattern } => list(pattern.as_deref()),
        Command::Env { format } => show_env(format),
        Command::Seeds(SeedsSource::File(path)) => {
            let run = model::read_result_file(&path)?;
            let journal = journal::path_for(&path);
            if journal.exists() {
                eprintln!(
                    "note: {} holds measurements this file may lack ('osprim finish {}' adds them)",
                    journal.display(),
                    path.display()
                );
            }
            emit(&report::seeds::render(&run, &report::View::default()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Finish { result, format } => finish(&result, format),
        Command::Seeds(SeedsSource::Run(mut cfg)) => {
            cfg.patterns = seed_benchmarks();
            let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
            let done = runner::run(&cfg, &interrupt)?;
            saved_note(&done);
            emit(&report::seeds::render(&done.run, &report::View::default()))?;
            Ok(exit_status(&done, &interrupt))
        }
    }
}

/// The ids the seed tables need that are registered.
fn seed_benchmarks() -> Vec<String> {
    let mut ids: Vec<String> =
        seeds::figures().iter().filter_map(|f| seeds::target(f).bench_id().map(str::to_string)).collect();
    ids.sort();
    ids.dedup();
    ids
}

fn run_and_report(cfg: &RunConfig, with_seeds: bool) -> Result<ExitCode> {
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    let done = runner::run(cfg, &interrupt)?;
    print_run(&done.run, cfg.format)?;
    if with_seeds && !done.interrupted {
        emit(&report::seeds::render(&done.run, &report::View::default()))?;
    }
    saved_note(&done);
    Ok(exit_status(&done, &interrupt))
}

fn print_run(run: &model::RunFile, format: Format) -> Result<()> {
    emit(&report::render(run, format, &report::View::default())?)
}

/// `osprim finish`: the result file of a run that did not end, from its journal.
fn finish(path: &std::path::Path, format: Format) -> Result<ExitCode> {
    let result = journal::result_for(path);
    let (run, unreadable) = runner::finish_journal(&result, stats::DEFAULT_RESAMPLES, true)?;
    print_run(&run, format)?;
    if unreadable > 0 {
        eprintln!("warning: {unreadable} line(s) of the journal could not be read (cut short by the crash)");
    }
    let partial = if run.partial { " (partial: the run did not finish measuring)" } else { "" };
    eprintln!("results saved to {}{partial}", result.display());
    Ok(ExitCode::SUCCESS)
}

fn saved_note(done: &runner::Finished) {
    if let Some(p) = &done.saved_to {
        let partial = if done.interrupted {
            " (partial: interrupted)"
        } else if done.memory_short {
            " (partial: memory ran short)"
        } else {
            ""
        };
        eprintln!("results saved to {}{partial}", p.display());
    }
}

fn exit_status(done: &runner::Finished, interrupt: &interrupt::Interrupt) -> ExitCode {
    if let Some(e) = &done.save_error {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    if done.memory_short && !done.interrupted {
        eprintln!(
            "error: memory ran short (an address-space limit such as 'ulimit -v', or the machine's memory): \
             the run stopped early and kept what it measured"
        );
        return ExitCode::from(1);
    }
    if done.interrupted { ExitCode::from(interrupt.exit_code()) } else { ExitCode::SUCCESS }
}

fn list(pattern: Option<&str>) -> Result<ExitCode> {
    let patterns: Vec<String> = pattern.map(|p| vec![p.to_string()]).unwrap_or_default();
    let benches = registry::select(&patterns)
        .map_err(|p| config::UsageError(format!("no benchmark matches '{p}' (see osprim list)")))?;
    let mut table = report::new_table();
    table.set_header(vec!["benchmark", "what it measures", "seed rows", "runs here"]);
    let seed_rows = |id: &str| -> String {
        let rows: Vec<String> = seeds::figures()
            .iter()
            .filter(|f| seeds::target(f).bench_id() == Some(id))
            .map(|f| format!("{} {}", &f.seed_file[..3], f.label()))
            .collect();
        rows.join("\n")
    };
    for b in &benches {
        let here = match b.available() {
            Ok(()) => "yes".to_string(),
            Err(why) => format!("no: {why}"),
        };
        table.add_row(vec![b.id().to_string(), b.about().to_string(), seed_rows(b.id()), here]);
    }
    for d in registry::DERIVED {
        let wanted = patterns.iter().all(|p| registry::matches(p, d.id))
            || d.sources().iter().all(|id| benches.iter().any(|b| b.id() == *id));
        if wanted {
            let here = format!("derived: {}", d.formula());
            table.add_row(vec![d.id.to_string(), d.about.to_string(), seed_rows(d.id), here]);
        }
    }
    emit(&format!("{table}\n"))?;
    Ok(ExitCode::SUCCESS)
}

fn show_env(format: Format) -> Result<ExitCode> {
    let machine = env::capture();
    match format {
        Format::Json => emit(&(serde_json::to_string_pretty(&machine)? + "\n"))?,
        _ => {
            let fields = machine.fields();
            let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            let mut s = String::new();
            for (k, v) in fields {
                s.push_str(&format!("{k:width$}  {v}\n"));
            }
            emit(&s)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes to stdout; a closed pipe (`osprim … | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
