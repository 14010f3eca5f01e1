//! The `osprim` binary: parse the command line, run, print one error line, set the exit status.
//! The commands are the `osprim-cli` crate (`crates/cli`), known here as `osprim`.

#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;

/// The system allocator with a reserve, so that running out of memory ends a run cleanly.
#[global_allocator]
static ALLOCATOR: sys::reserve::ReserveAlloc = sys::reserve::ReserveAlloc;

fn main() -> ExitCode {
    // A worker process measuring one round of a run (`execution`): before anything else, so
    // that its heap offset comes first.
    if std::env::args_os().nth(1).is_some_and(|a| a == osprim::execution::WORKER_ARG) {
        return osprim::execution::worker::main();
    }
    osprim::set_build_info(build_info::current());
    // The completions' hidden helper: not a command clap knows, so that no completion, help
    // or man page offers it.
    if std::env::args_os().nth(1).is_some_and(|a| a == osprim::cli::COMPLETE_IDS) {
        return exit_status(osprim::execute(osprim::config::Command::CompleteIds));
    }
    let cli = match osprim::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    exit_status(osprim::run(cli))
}

/// The exit status of a command's outcome, with its error as one line.
fn exit_status(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            osprim::say!("error: {e:#}");
            if e.downcast_ref::<osprim::config::UsageError>().is_some() { ExitCode::from(2) } else { ExitCode::from(1) }
        }
    }
}

/// Help and version print in full; a usage error prints clap's short block (the error, the
/// possible values or a similar name, the usage line) without blank lines, exit 2.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // Help that cannot be written (`--help > /dev/full`) is a failure; a closed pipe
            // (`--help | head`) is not.
            use std::io::Write;
            let text = e.render().to_string();
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                    osprim::say!("error: cannot write to stdout: {err}");
                    ExitCode::from(1)
                }
                _ => ExitCode::SUCCESS,
            }
        }
        _ => {
            let text = e.render().to_string();
            let block: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            if block.is_empty() {
                osprim::say!("error: invalid arguments");
            } else {
                osprim::say!("{}", block.join("\n"));
            }
            ExitCode::from(2)
        }
    }
}
