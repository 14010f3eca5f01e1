//! osprim measures what operating-system primitives cost on this machine — system calls,
//! identity queries, file and signal operations, library loading, and more to come — with
//! sound statistics and self-checks, beside the figures of five classic systems papers.
//!
//! Data flows one way: [`registry`] → [`sampler`] (a benchmark's samples) → [`stats`]
//! (summary) → [`analyse`]/[`derive`] (result rows of [`model`]) → [`report`]. The modules
//! form layers, each importing only from the layers below it (`docs/architecture.md`,
//! checked by `tests/cli/architecture.rs`): [`model`] is the vocabulary every layer speaks and
//! imports nothing; [`cli`] is the only module that knows clap.
#![forbid(unsafe_code)]

/// `eprintln!` that never panics: a line stderr cannot take (`2>/dev/full`, a pipe closed by
/// `| head -1`) is lost, never the run, its clean-up or its result file.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stderr_line(format_args!($($arg)*))
    };
}

/// Writes one line to stderr, ignoring a failure ([`say!`]).
pub fn stderr_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

pub mod ab;
pub mod cli;
pub mod config;
pub mod crosscheck;
pub mod execution;
pub mod manual;
pub mod panics;
pub mod progress;
pub mod runner;
pub mod short_stability;
pub mod stability_cmd;
pub mod terminal;

static BUILD: std::sync::OnceLock<model::BuildInfo> = std::sync::OnceLock::new();

/// Records this binary's build (`main` does, first): what the result file says built it.
pub fn set_build_info(build: model::BuildInfo) {
    let _ = BUILD.set(build);
}

/// This binary's build, as [`set_build_info`] recorded it; the version alone (the rest
/// `unknown`) when nothing was recorded, as in the library's own tests.
pub fn build_info() -> model::BuildInfo {
    BUILD.get().cloned().unwrap_or_else(|| model::BuildInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: "unknown".into(),
        rustc: "unknown".into(),
        profile: "unknown".into(),
    })
}

// The layers the commands use, by the names the commands know them by.
use analysis::{analyse, compare};
use bench::registry;
use papers as seeds;
use platform::{env, interrupt, placement, timer};
use store::{history, journal, output};

use anyhow::{Context, Result};
use config::{Command, EXIT_CHECK_FAILED, EXIT_ERROR, Format, Present, RunConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs a parsed command line; returns the process exit status.
pub fn run(cli: cli::Cli) -> Result<ExitCode> {
    panics::install_hook();
    cli.check().map_err(config::UsageError)?;
    execute(cli.into_command())
}

/// Runs a validated command; returns the process exit status.
pub fn execute(command: Command) -> Result<ExitCode> {
    match command {
        Command::Run { run, present, papers, digest, baseline, history } => {
            run_and_report(&run, &present, (papers, digest), baseline.as_deref(), history.as_ref())
        }
        Command::History { patterns, location, ab: true, present, .. } => {
            show_ab_history(&patterns, &location, &present)
        }
        Command::History { patterns, location, import, host, changes, present, .. } => {
            show_history(&patterns, &location, import.as_deref(), host.as_deref(), changes, &present)
        }
        Command::Stability { test, duration, seed, output, history, host, present } => {
            stability_cmd::run(test, duration, seed, &output, history.as_ref(), host.as_deref(), &present)
        }
        Command::Ab { ab, gate, history, present } => ab_and_report(ab, gate, history.as_ref(), &present),
        Command::Invalid(why) => Err(config::UsageError(why).into()),
        Command::List { patterns, format } => list(&patterns, format),
        Command::Env { format } => show_env(format),
        Command::Show { result, present } if model::ab::is_ab_file(&result) => {
            let ab = model::ab::read_ab_file(&result)?;
            emit_in(present.format, &report::ab::render(&ab, present.format, &present.view)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { result, present } => {
            let run = read_result(&result)?;
            emit_in(present.format, &report::render(&run, present.format, &present.view)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Papers { result, present } => {
            let path = match result {
                Some(p) => p,
                None => newest_result(Path::new(RESULTS_DIR))?,
            };
            let run = read_result(&path)?;
            if !present.quiet && present.format == Format::Table {
                say!("from {}", path.display());
            }
            let run = stability_cmd::with_history(run, &history::Location::default_in(Path::new(RESULTS_DIR)));
            emit_in(present.format, &report::render_papers(&run, present.format, &present.view)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Finish { result, present } => finish(&result, &present),
        Command::Compare { results, base_history, noise, gate, allow_mismatch, present } => {
            compare(&results, base_history.as_ref(), noise, gate, allow_mismatch, &present)
        }
        Command::Report { result, base, noise, html, allow_mismatch, quiet } => {
            report_html(&result, base.as_deref(), noise, &html, allow_mismatch, quiet)
        }
        Command::Crosscheck { cpu, quick, present } => crosscheck(crosscheck::Settings { cpu, quick }, &present),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            cli::completions(&shell, &mut out).map_err(|e| config::UsageError(e.to_string()))?;
            emit(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => man(dir.as_deref()),
        Command::CompleteIds => {
            emit(&cli::completion_words().into_iter().map(|w| w + "\n").collect::<String>())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

use config::RESULTS_DIR;

/// A saved result file, with a word when a journal beside it holds more.
fn read_result(path: &Path) -> Result<model::RunFile> {
    let run = model::read_result_file(path)?;
    let journal = journal::path_for(path);
    if journal.exists() {
        say!(
            "note: {} holds measurements this file may lack ('osprim finish {}' adds them)",
            journal.display(),
            path.display()
        );
    }
    Ok(run)
}

/// The newest result file in `dir` (by modification time, then name), a live run's placeholder
/// (its journal held) left out.
fn newest_result(dir: &Path) -> Result<PathBuf> {
    let none = || {
        anyhow::Error::new(config::UsageError(format!(
            "no saved result in {}/: run 'osprim' (the seed suite) first, or name a result file",
            dir.display()
        )))
    };
    let entries = std::fs::read_dir(dir).map_err(|_| none())?;
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .filter(|(_, p)| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
        // A live run's file holds no results until it ends.
        .filter(|(_, p)| !journal::held(p))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(none)
}

/// A run, measured and reported; `papers` adds the papers' tables, `digest` ends with the
/// digest (the bare `osprim`: README, "The first run").
fn run_and_report(
    cfg: &RunConfig,
    present: &Present,
    (papers, digest): (bool, bool),
    baseline: Option<&Path>,
    history: Option<&history::Location>,
) -> Result<ExitCode> {
    if let config::Output::File(target) = &cfg.output {
        let mut databases = vec![history::Location::default_in(Path::new(RESULTS_DIR))];
        databases.extend(history.cloned());
        let files: Vec<PathBuf> = databases
            .iter()
            .filter_map(|l| match l {
                history::Location::Sqlite(p) => Some(output::database_files(p)),
                history::Location::Postgres(_) => None,
            })
            .flatten()
            .collect();
        let mut inputs: Vec<(&Path, &str)> = files.iter().map(|p| (p.as_path(), "the history database")).collect();
        inputs.extend(baseline.map(|b| (b, "the baseline")));
        output::check_not_input(target, &inputs)?;
    }
    let base = baseline.map(read_result).transpose()?.map(std::sync::Arc::new);
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    let began = std::time::Instant::now();
    let mut done = if present.quiet {
        runner::run(cfg, &interrupt, &mut progress::Silent)?
    } else {
        runner::run(cfg, &interrupt, &mut progress::Progress::stderr().with_baseline(base.clone()))?
    };
    // Why the history could not be reached, if it could not (then recording is not tried again).
    let mut history_down = None;
    if let (Some(loc), Some(path)) = (history, &done.saved_to) {
        history_down = mark_level_shifts(loc, &mut done.run, path, &interrupt);
    }
    let elapsed = began.elapsed();
    let mut text = report::render(&done.run, present.format, &present.view)?;
    if papers && !done.interrupted && present.format == Format::Table {
        text.push('\n');
        let lent = match history {
            Some(loc) => stability_cmd::with_history(done.run.clone(), loc),
            None => done.run.clone(),
        };
        text.push_str(&report::render_papers(&lent, present.format, &present.view)?);
    }
    if let (Some(base), Some(path)) = (&base, baseline) {
        let named = report::compare::Named {
            base_name: path.display().to_string(),
            new_name: "this run".into(),
            base,
            new: &done.run,
            comparison: compare::compare(base, &done.run, compare::DEFAULT_NOISE, analyse::BOOTSTRAP_SEED),
        };
        if present.format == Format::Table {
            text.push('\n');
            text.push_str(&report::writer(present.format).comparison(std::slice::from_ref(&named), &present.view)?);
        }
    }
    let verdict = report::verdict(&done.run, elapsed.as_secs_f64());
    // The digest holds the verdict and comes last, after the notes on where the run was saved.
    let digest = digest && !done.interrupted && present.format == Format::Table;
    if present.format == Format::Table && !digest {
        text.push_str(&format!("\n{}\n", report::wrap_to(&verdict, present.view.width)));
    }
    emit_in(present.format, &text)?;
    if present.format != Format::Table && !present.quiet {
        say!("{verdict}");
    }
    saved_note(&done);
    if let (Some(loc), Some(path)) = (history, &done.saved_to) {
        record_in_history(loc, &done.run, path, present.quiet, &interrupt, history_down);
    }
    if digest {
        let lent = match history {
            Some(loc) => stability_cmd::with_history(done.run.clone(), loc),
            None => done.run.clone(),
        };
        let last = report::digest::render(&lent, elapsed.as_secs_f64(), done.saved_to.as_deref(), &present.view);
        emit_in(present.format, &format!("\n{last}"))?;
    }
    // A signal after the measuring (while the history was waited for, say) still ends the run
    // with its status, its result file saved.
    if !done.interrupted && done.save_error.is_none() && interrupt.load(std::sync::atomic::Ordering::SeqCst) {
        return Ok(ExitCode::from(interrupt.exit_code()));
    }
    Ok(exit_status(&done, &interrupt, present.strict))
}

/// `osprim finish`: the result file of a run that did not end, from its journal.
fn finish(path: &Path, present: &Present) -> Result<ExitCode> {
    let result = journal::result_for(path);
    let (run, unreadable) = runner::finish_journal(&result, stats::DEFAULT_RESAMPLES, true)?;
    emit_in(present.format, &report::render(&run, present.format, &present.view)?)?;
    if unreadable > 0 {
        say!("warning: {unreadable} line(s) of the journal could not be read (cut short by the crash)");
    }
    let partial = if run.partial { " (partial: the run did not finish measuring)" } else { "" };
    say!("results saved to {}{partial}", result.display());
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
        say!("results saved to {}{partial}", p.display());
    }
}

/// The exit status of a run (README, "Exit status").
fn exit_status(done: &runner::Finished, interrupt: &interrupt::Interrupt, strict: bool) -> ExitCode {
    if let Some(e) = &done.save_error {
        say!("error: {e}");
        return ExitCode::from(EXIT_ERROR);
    }
    if let Some(why) = &done.scratch_lost
        && !done.interrupted
    {
        say!("error: {why}");
        return ExitCode::from(EXIT_ERROR);
    }
    if done.memory_short && !done.interrupted {
        say!(
            "error: memory ran short (an address-space limit such as 'ulimit -v', or the machine's memory): \
             the run stopped early and kept what it measured"
        );
        return ExitCode::from(EXIT_ERROR);
    }
    if done.interrupted {
        return ExitCode::from(interrupt.exit_code());
    }
    if strict && report::any_failed(&done.run) { ExitCode::from(EXIT_CHECK_FAILED) } else { ExitCode::SUCCESS }
}

/// `osprim crosscheck`: peer, osprim, peer per primitive; exit 1 with `--strict` when a
/// ratio is flagged, 128+N when signal N cut it short.
fn crosscheck(settings: crosscheck::Settings, present: &Present) -> Result<ExitCode> {
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    if !present.quiet {
        say!(
            "crosscheck: peer, osprim, peer per primitive ({})",
            if settings.quick { "under 30 s" } else { "under 2 min" }
        );
    }
    let result = crosscheck::run(&settings, &interrupt)?;
    emit_in(present.format, &report::writer(present.format).crosscheck(&result, &present.view)?)?;
    Ok(if result.interrupted {
        ExitCode::from(interrupt.exit_code())
    } else if present.strict && result.any_flagged() {
        ExitCode::from(EXIT_ERROR)
    } else {
        ExitCode::SUCCESS
    })
}

/// `osprim man`: the man page on stdout, or every page into `dir`.
fn man(dir: Option<&Path>) -> Result<ExitCode> {
    let pages = cli::man_pages().context("cannot render the man pages")?;
    match dir {
        None => emit(&String::from_utf8_lossy(&pages[0].1))?,
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            for (name, page) in &pages {
                let path = dir.join(name);
                store::write_new_or_regular(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
            }
            say!("{} man pages written to {}", pages.len(), dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list(patterns: &[String], format: Format) -> Result<ExitCode> {
    let benches = registry::select(patterns).map_err(|p| {
        let hint = registry::nearest(&p).map(|n| format!("; did you mean '{n}'?")).unwrap_or_default();
        config::UsageError(format!("no benchmark matches '{p}' (see osprim list){hint}"))
    })?;
    let seed_rows = |id: &str| -> Vec<String> {
        seeds::figures()
            .iter()
            .filter(|f| seeds::target(f).wants().iter().any(|w| w.id == id))
            .map(|f| format!("{}: {}", f.system, f.label()))
            .collect()
    };
    let mut entries: Vec<report::listing::Entry> = benches
        .iter()
        .map(|b| report::listing::Entry {
            id: b.id().to_string(),
            about: b.about().to_string(),
            seed_rows: seed_rows(b.id()),
            runs_here: match b.available() {
                Ok(()) => "yes".to_string(),
                Err(why) => format!("no: {why}"),
            },
        })
        .collect();
    for d in registry::DERIVED {
        let wanted = patterns.iter().any(|p| registry::matches(p, d.id))
            || d.sources().iter().all(|id| benches.iter().any(|b| b.id() == *id));
        if wanted {
            entries.push(report::listing::Entry {
                id: d.id.to_string(),
                about: d.about.to_string(),
                seed_rows: seed_rows(d.id),
                runs_here: format!("derived: {}", d.formula()),
            });
        }
    }
    let view = report::View { width: terminal::stdout_width().unwrap_or(report::WIDTH), ..report::View::default() };
    emit_in(format, &report::writer(format).catalogue(&entries, &view)?)?;
    Ok(ExitCode::SUCCESS)
}

/// `osprim env`: the machine, and the timer a run would measure with (calibrated now), after
/// the kernel's clock source in the table, as `timer` in JSON.
fn show_env(format: Format) -> Result<ExitCode> {
    let machine = env::capture();
    let (_, timer) = timer::detect();
    let text = match format {
        Format::Json => {
            let mut doc = serde_json::to_value(&machine)?;
            doc["timer"] = serde_json::to_value(&timer)?;
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        _ => {
            let mut fields = platform::env::display::fields(&machine);
            let at = fields.iter().position(|(k, _)| k == "kernel.clocksource").map_or(fields.len(), |i| i + 1);
            fields.splice(at..at, platform::env::display::timer_fields(&timer));
            report::writer(format).machine(&fields)
        }
    };
    emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes what a report in `format` rendered to stdout. Text for people (a table, Markdown)
/// passes [`report::terminal`] first: no escape sequence from a result file, a history or a
/// peer's output reaches the terminal, only osprim's own colours. JSON (which escapes controls
/// itself), CSV and LaTeX are written as rendered.
fn emit_in(format: Format, text: &str) -> Result<()> {
    match format {
        Format::Table => emit(&report::terminal(text, true)),
        Format::Markdown => emit(&report::terminal(text, false)),
        _ => emit(text),
    }
}

/// Writes to stdout; a closed pipe (`osprim … | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}

/// `osprim ab`: measures, shows the result, says where it was saved; with `--check`, the false
/// alarms; with a `gate`, exit 1 when a result regressed beyond it and
/// [`config::EXIT_UNDECIDED`] when one it was asked about was not decided.
fn ab_and_report(
    cfg: config::AbConfig,
    gate: Option<compare::Gate>,
    history: Option<&history::Location>,
    present: &Present,
) -> Result<ExitCode> {
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    let check = cfg.check;
    let done = ab::run(cfg, &interrupt)?;
    emit_in(present.format, &report::ab::render(&done.ab, present.format, &present.view)?)?;
    if let Some(e) = &done.save_error {
        say!("osprim: error: {e}");
    } else if let Some(p) = &done.saved_to {
        if !present.quiet {
            say!("saved to {}", p.display());
        }
        if let Some(loc) = history {
            record_ab_in_history(loc, &done.ab, p, present.quiet, &interrupt);
        }
    }
    if check {
        let f = analysis::ab::false_alarms(&done.ab);
        say!(
            "A against A: {} of {} results called different (false alarms, {:.0} %), {} no change ({:.0} %)",
            f.different,
            f.rows,
            100.0 * f.different as f64 / f.rows.max(1) as f64,
            f.no_change,
            100.0 * f.no_change as f64 / f.rows.max(1) as f64
        );
    }
    if done.interrupted {
        return Ok(ExitCode::from(interrupt.exit_code()));
    }
    if done.save_error.is_some() {
        return Ok(ExitCode::from(EXIT_ERROR));
    }
    let Some(gate) = gate else { return Ok(ExitCode::SUCCESS) };
    let comparison = analysis::ab::comparison(&done.ab);
    let named = report::ab::named(&done.ab, comparison);
    let outcome = named.comparison.gate(&gate);
    for line in report::compare::gate_lines(&named, &outcome, &gate) {
        say!("{line}");
    }
    // Rows without a complete pair were asked about and not judged: undecided too.
    let unmatched = &named.comparison.unmatched;
    if !unmatched.is_empty() {
        say!("without a complete pair: {} results, not judged:", unmatched.len());
        for u in unmatched {
            say!("  {}: {}", report::compare::full_label(&u.id, &u.params), u.why);
        }
    }
    let asked = outcome.gated + unmatched.len();
    let undecided = outcome.undecided.len() + unmatched.len();
    Ok(if !outcome.failed.is_empty() {
        ExitCode::from(EXIT_ERROR)
    } else if undecided > 0 && undecided as f64 > outcome.allowance * asked as f64 + 1e-9 {
        ExitCode::from(config::EXIT_UNDECIDED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `osprim compare`: each later file against the first. Runs that do not compare (methods,
/// cold against warm) are refused as a usage mistake unless `allow_mismatch`; with a `gate`,
/// exit 1 when a result fails it, each named on stderr.
fn compare(
    files: &[PathBuf],
    base_history: Option<&(usize, history::Location)>,
    noise: f64,
    gate: Option<compare::Gate>,
    allow_mismatch: bool,
    present: &config::Present,
) -> Result<ExitCode> {
    let mut names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let mut runs: Vec<model::RunFile> = files.iter().map(|p| read_result(p)).collect::<Result<_>>()?;
    match base_history {
        Some((n, loc)) => {
            if runs.len() != 1 {
                return Err(config::UsageError(
                    "compare --base-history N takes one result file (the new run): the base comes from the history"
                        .into(),
                )
                .into());
            }
            let base = pooled_base(&runs[0], *n, loc)?;
            runs.insert(0, base);
            names.insert(0, format!("the last {n} runs in {}", loc.describe()));
        }
        None if runs.len() < 2 => {
            return Err(config::UsageError(
                "compare needs a base and one or more result files to compare with it (or --base-history N)".into(),
            )
            .into());
        }
        None => {}
    }
    let (base, rest) = runs.split_first().expect("two runs at least");
    if !allow_mismatch {
        for (new, name) in rest.iter().zip(&names[1..]) {
            if let Some(why) = compare::mismatch(base, new) {
                return Err(config::UsageError(format!(
                    "{name} against {}: {why}; --allow-mismatch compares them anyway",
                    names[0]
                ))
                .into());
            }
        }
    }
    let settings =
        compare::Settings { noise, resamples: compare::RESAMPLES, seed: analyse::BOOTSTRAP_SEED, allow_mismatch };
    let named: Vec<report::compare::Named> = rest
        .iter()
        .zip(&names[1..])
        .map(|(new, name)| report::compare::Named {
            base_name: names[0].clone(),
            new_name: name.clone(),
            base,
            new,
            comparison: compare::compare_with(base, new, &settings),
        })
        .collect();
    emit_in(present.format, &report::writer(present.format).comparison(&named, &present.view)?)?;
    let Some(gate) = gate else { return Ok(ExitCode::SUCCESS) };
    let (mut failed, mut undecided) = (false, false);
    for n in &named {
        let outcome = n.comparison.gate(&gate);
        match outcome.decision() {
            compare::Decision::Fail => failed = true,
            compare::Decision::Undecided => undecided = true,
            compare::Decision::Pass => {}
        }
        for line in report::compare::gate_lines(n, &outcome, &gate) {
            say!("{line}");
        }
    }
    Ok(if failed {
        ExitCode::from(EXIT_ERROR)
    } else if undecided {
        ExitCode::from(config::EXIT_UNDECIDED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The base of `compare --base-history n`: the last `n` runs recorded before `new` on its host,
/// CPU model and kernel by its build (as the level-shift rule chooses them), read from their
/// result files and pooled ([`compare::pool`]). One-line errors when the history has fewer
/// runs or a file is gone.
fn pooled_base(new: &model::RunFile, n: usize, loc: &history::Location) -> Result<model::RunFile> {
    if let history::Location::Sqlite(p) = loc
        && !p.exists()
    {
        anyhow::bail!("--base-history: no history database at {} (--db names another)", p.display());
    }
    let asked = new.clone();
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    let found =
        on_history(loc, &interrupt, move |h| h.base_runs(&asked, n)).map_err(|e| anyhow::anyhow!(e.text(loc)))?;
    if found.len() < n {
        anyhow::bail!(
            "--base-history {n}: the history {} has {} earlier run(s) of host {} with this CPU, kernel and osprim build",
            loc.describe(),
            found.len(),
            new.host_name()
        );
    }
    let mut runs = Vec::with_capacity(n);
    for (started, file) in found {
        let Some(file) = file else {
            anyhow::bail!("--base-history: the run started {started} is recorded without its result file");
        };
        let path = PathBuf::from(&file);
        if !path.exists() {
            anyhow::bail!("--base-history: the result file {file} of the run started {started} is gone");
        }
        runs.push(read_result(&path)?);
    }
    Ok(compare::pool(&runs).expect("n ≥ 1 runs"))
}

/// Flags the results that moved away from the level of their earlier runs on this machine and
/// build (from the history), and saves the file again with them. The rule is
/// [`analysis::history::level_shift`]'s: the runs after the last change point (E-divisive means) among
/// the last [`analysis::history::LEVEL_SHIFT_WINDOW`] earlier runs of the same result, unit and sampling
/// method on the same host, CPU model and kernel by the same osprim build; at least
/// [`analysis::history::LEVEL_SHIFT_MIN_RUNS`] of them, each with an interval of some width; the row's
/// own interval (of some width) wholly outside all of theirs. A seed-method row is never
/// flagged, and never judged against another method's runs. A history that cannot be read is
/// passed over here: recording the run says why. Returns why the history could not be reached
/// (not answering in time, a signal, a connection refused), if it could not.
fn mark_level_shifts(
    loc: &history::Location,
    run: &mut model::RunFile,
    path: &Path,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Option<String> {
    if let history::Location::Sqlite(p) = loc
        && !p.exists()
    {
        return None;
    }
    let asked = run.clone();
    let earlier = match on_history(loc, interrupt, move |h| h.earlier(&asked)) {
        Ok(earlier) => earlier,
        // Another statement may yet work: recording says what fails.
        Err(HistoryWait::Failed(e)) if !matches!(e, history::HistoryError::Open { .. }) => return None,
        // Not reached: asked again, it would only be refused again (or waited for again).
        Err(why) => return Some(why.text(loc)),
    };
    let mut marked = 0;
    for (row, earlier) in run.results.iter_mut().zip(earlier) {
        if let Some(note) = analysis::history::level_shift(&earlier, row) {
            row.add_flag(model::Flag::LevelShift, note);
            marked += 1;
        }
    }
    if marked > 0
        && let Err(e) = store::write_result_file(path, run)
    {
        say!("warning: cannot add the level-shift flags to {}: {e}", path.display());
    }
    None
}

/// How long a run waits for its history database (opening or connecting, the write lock,
/// the statements) before it gives up on it; SQLite waits 10 s at most for another writer's
/// lock, and connecting to PostgreSQL has 10 s.
const HISTORY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the history was not used.
enum HistoryWait {
    /// It said no.
    Failed(history::HistoryError),
    /// A signal came while waiting for it.
    Interrupted,
    /// It did not answer within [`HISTORY_PATIENCE`].
    TimedOut,
}

impl HistoryWait {
    /// In words, without a password.
    fn text(&self, loc: &history::Location) -> String {
        match self {
            HistoryWait::Failed(e) => history::redact(&e.to_string()),
            HistoryWait::Interrupted => {
                format!("interrupted while waiting for the history database {}", loc.describe())
            }
            HistoryWait::TimedOut => format!(
                "the history database {} did not answer within {} s",
                loc.describe(),
                HISTORY_PATIENCE.as_secs()
            ),
        }
    }
}

/// Opens the history at `loc` and runs `f` on it, on a thread of its own, waiting at most
/// [`HISTORY_PATIENCE`] and no longer once `interrupt` is set. A thread given up on is left to
/// itself (blocked on a lock or a silent server; nothing it does is committed after the
/// process ends).
fn on_history<T: Send + 'static>(
    loc: &history::Location,
    interrupt: &std::sync::atomic::AtomicBool,
    f: impl FnOnce(&mut history::History) -> Result<T, history::HistoryError> + Send + 'static,
) -> Result<T, HistoryWait> {
    use std::sync::atomic::Ordering;
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = loc.clone();
    std::thread::Builder::new()
        .name("osprim-history".into())
        .spawn(move || {
            let _ = tx.send(history::History::open(&owned).and_then(|mut h| f(&mut h)));
        })
        .map_err(|e| HistoryWait::Failed(history::HistoryError::Sql(format!("cannot start a thread: {e}"))))?;
    let began = std::time::Instant::now();
    loop {
        if interrupt.load(Ordering::SeqCst) {
            return Err(HistoryWait::Interrupted);
        }
        if began.elapsed() > HISTORY_PATIENCE {
            return Err(HistoryWait::TimedOut);
        }
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(done) => return done.map_err(HistoryWait::Failed),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(HistoryWait::Failed(history::HistoryError::Sql("the history thread ended".into())));
            }
        }
    }
}

/// `osprim report --html`: the page of `path` (compared with `base`), written to `html`. The
/// target is checked before anything is read, and written atomically.
fn report_html(
    path: &Path,
    base: Option<&Path>,
    noise: f64,
    html: &Path,
    allow_mismatch: bool,
    quiet: bool,
) -> Result<ExitCode> {
    let to_stdout = html.as_os_str() == "-";
    if !to_stdout {
        let mut inputs = vec![(path, "the result file it reports on")];
        inputs.extend(base.map(|b| (b, "the result file it compares with")));
        output::check_target(html)
            .and_then(|()| output::check_not_input(html, &inputs))
            .map_err(|e| anyhow::anyhow!(e.to_string().replacen("results", "the report", 1)))?;
    }
    if model::ab::is_ab_file(path) {
        if base.is_some() {
            return Err(config::UsageError(format!(
                "{} is an A/B result: it compares B with A itself; leave --compare out",
                path.display()
            ))
            .into());
        }
        let ab = model::ab::read_ab_file(path)?;
        let named = report::ab::named(&ab, analysis::ab::comparison(&ab));
        let page = report::html::render(&ab.b_run, &path.display().to_string(), Some(&named));
        return write_page(&page, html, to_stdout, quiet);
    }
    let new = read_result(path)?;
    let base_run = base.map(read_result).transpose()?;
    // Runs that do not compare are refused as `osprim compare` refuses them.
    if let (Some(b), Some(bp), false) = (&base_run, base, allow_mismatch)
        && let Some(why) = compare::mismatch(b, &new)
    {
        return Err(config::UsageError(format!(
            "{} against {}: {why}; --allow-mismatch compares them anyway",
            path.display(),
            bp.display()
        ))
        .into());
    }
    let named = base_run.as_ref().zip(base).map(|(b, bp)| report::compare::Named {
        base_name: bp.display().to_string(),
        new_name: path.display().to_string(),
        base: b,
        new: &new,
        comparison: compare::compare(b, &new, noise, analyse::BOOTSTRAP_SEED),
    });
    let page = report::html::render(&new, &path.display().to_string(), named.as_ref());
    write_page(&page, html, to_stdout, quiet)
}

/// Writes an HTML page to `html` (checked before), or to stdout.
fn write_page(page: &report::html::Page, html: &Path, to_stdout: bool, quiet: bool) -> Result<ExitCode> {
    if to_stdout {
        emit(&page.html)?;
    } else {
        store::write_new_or_regular(html, page.html.as_bytes())
            .with_context(|| format!("cannot write the report to {}", html.display()))?;
        if !quiet {
            say!("report written to {} ({} plots)", html.display(), page.plots);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Records a saved run in the history; a failure is a warning (the result file is saved).
/// `down`: why the history could not be reached a moment ago (then it is not tried again).
fn record_in_history(
    loc: &history::Location,
    run: &model::RunFile,
    path: &Path,
    quiet: bool,
    interrupt: &std::sync::atomic::AtomicBool,
    down: Option<String>,
) {
    // A result saved elsewhere (-o) from a directory without osprim-results/: osprim makes no
    // directory the user did not ask for, and says how to record it.
    if let history::Location::Sqlite(p) = loc
        && let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        if !quiet {
            say!(
                "note: not recorded in the history: there is no {}/ here ('osprim history --import DIR' or --db FILE \
                 records it)",
                dir.display()
            );
        }
        return;
    }
    if let Some(why) = down {
        say!("warning: not recorded in the history: {why}");
        return;
    }
    let (run, path) = (run.clone(), path.to_path_buf());
    match on_history(loc, interrupt, move |h| h.record(&run, Some(&path))) {
        Ok(_) if quiet => {}
        Ok(true) => say!("recorded in the history ({})", loc.describe()),
        Ok(false) => say!("already recorded in the history ({}): this run was there", loc.describe()),
        Err(why) => say!("warning: not recorded in the history: {}", why.text(loc)),
    }
}

/// Records a saved A/B result in the history; a failure is a warning (the file is saved).
fn record_ab_in_history(
    loc: &history::Location,
    ab: &model::ab::AbFile,
    path: &Path,
    quiet: bool,
    interrupt: &std::sync::atomic::AtomicBool,
) {
    // No directory the user did not ask for (as for a run).
    if let history::Location::Sqlite(p) = loc
        && let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return;
    }
    let (ab, path) = (ab.clone(), path.to_path_buf());
    match on_history(loc, interrupt, move |h| h.record_ab(&ab, Some(&path))) {
        Ok(_) if quiet => {}
        Ok(_) => say!("recorded in the history ({})", loc.describe()),
        Err(why) => say!("warning: not recorded in the history: {}", why.text(loc)),
    }
}

/// `osprim history --ab`: the recorded A/B results.
fn show_ab_history(patterns: &[String], loc: &history::Location, present: &Present) -> Result<ExitCode> {
    if let history::Location::Sqlite(p) = loc
        && !p.exists()
    {
        return Err(
            config::UsageError(format!("no history database at {} (osprim ab records there)", p.display())).into()
        );
    }
    let interrupt = interrupt::install().context("cannot install the Ctrl-C handler")?;
    let patterns = patterns.to_vec();
    let points =
        on_history(loc, &interrupt, move |h| h.ab_points(&patterns)).map_err(|w| anyhow::anyhow!(w.text(loc)))?;
    emit_in(present.format, &report::ab::history(&points, present.format, &present.view)?)?;
    Ok(ExitCode::SUCCESS)
}

/// `osprim history`.
fn show_history(
    patterns: &[String],
    loc: &history::Location,
    import: Option<&Path>,
    host: Option<&str>,
    changes: bool,
    present: &Present,
) -> Result<ExitCode> {
    if let history::Location::Sqlite(p) = loc
        && import.is_none()
        && !p.exists()
    {
        return Err(anyhow::Error::new(config::UsageError(format!(
            "no history at {}: runs are recorded as they are saved ('osprim run'), or import result files with --import DIR",
            p.display()
        ))));
    }
    if let (history::Location::Sqlite(p), Some(_)) = (loc, import)
        && let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut h = history::History::open(loc)?;
    if let Some(dir) = import {
        let (new, known, bad) = history::import(&mut h, dir, host)?;
        say!("imported {new} run(s) from {} ({known} already recorded)", dir.display());
        for why in bad {
            say!("skipped: {why}");
        }
    }
    let points = h.points(patterns)?;
    if changes {
        let found = analysis::history::changes::find(&points);
        emit_in(present.format, &report::writer(present.format).changes(&found, &present.view)?)?;
    } else {
        emit_in(present.format, &report::writer(present.format).history(&points, &present.view)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
