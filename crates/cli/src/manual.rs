//! What the man pages say beyond the command line's own help (`cli::man_pages` renders that):
//! EXIT STATUS, FILES, ENVIRONMENT and SEE ALSO, for the main page (`None`) and each command's
//! page, as roff. The exit statuses are [`crate::config`]'s `EXIT_*`; README's "Exit status"
//! table says the same.

use crate::config::{EXIT_CHECK_FAILED, EXIT_ERROR, EXIT_OK, EXIT_UNDECIDED, EXIT_USAGE, RESULTS_DIR};

/// The commands that measure (their pages name the files a run makes, the scratch directory
/// and the signals that end it).
const MEASURING: [&str; 4] = ["run", "papers", "stress", "errortest"];

/// The sections of the page of `command` (`None`: `osprim.1`), as roff.
pub fn sections(command: Option<&str>, commands: &[String]) -> String {
    let mut roff = String::new();
    section(&mut roff, "EXIT STATUS", &exit_status(command));
    let files = files(command);
    if !files.is_empty() {
        section(&mut roff, "FILES", &files);
    }
    section(&mut roff, "ENVIRONMENT", &environment(command));
    roff.push_str(".SH \"SEE ALSO\"\n");
    roff.push_str(&see_also(command, commands));
    roff
}

/// A roff section of tagged paragraphs: (term, text).
fn section(roff: &mut String, title: &str, items: &[(String, String)]) {
    roff.push_str(&format!(".SH \"{title}\"\n"));
    for (term, text) in items {
        roff.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", escape(term), escape(text)));
    }
}

/// Text as roff reads it literally: backslashes and hyphens escaped, no line starting with a
/// control character.
fn escape(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') { format!("\\&{t}") } else { t }
}

fn item(term: impl Into<String>, text: impl Into<String>) -> (String, String) {
    (term.into(), text.into())
}

fn exit_status(command: Option<&str>) -> Vec<(String, String)> {
    let c = command.unwrap_or("");
    let main = command.is_none();
    let mut items = vec![item(
        EXIT_OK.to_string(),
        match c {
            "compare" => {
                "The comparison was made (whatever its verdicts); with --fail-on-regression, the gate decided \
                 every result (or all but --undecided-share of them) and none regressed."
            }
            "stress" | "errortest" => "The test ran clean for its whole duration.",
            "crosscheck" => "It ran (flags are information).",
            "run" | "papers" | "" => {
                "The run finished: every result clean, advisory, untrustworthy or skipped (also with a failed \
                 check, unless --strict)."
            }
            _ => "Success.",
        },
    )];
    let mut error = String::from("An error: a file could not be read or written");
    if main || MEASURING.contains(&c) {
        error.push_str(", results could not be saved (the journal keeps them), memory ran short");
    }
    error.push('.');
    if main || c == "compare" {
        error.push_str(
            " compare --fail-on-regression PCT: a result slower by more than PCT (or, as told, inconclusive or \
             untrustworthy).",
        );
    }
    if main || c == "crosscheck" {
        error.push_str(" crosscheck --strict: a ratio beyond ±10 %.");
    }
    items.push(item(EXIT_ERROR.to_string(), error));
    let mut usage = String::from("A usage mistake: an unknown benchmark, command or flag, a bad value.");
    if main || c == "compare" || c == "report" {
        usage.push_str(
            " compare, report --compare: runs that do not compare (seed against adaptive, cold against warm) \
             without --allow-mismatch.",
        );
    }
    items.push(item(EXIT_USAGE.to_string(), usage));
    let strict = "With --strict: a self-check failed (check-failed) or a benchmark failed.";
    let invariant = "stress, errortest: an invariant broke (the line that replays it is printed).";
    match c {
        "" => items.push(item(EXIT_CHECK_FAILED.to_string(), format!("{strict} {invariant}"))),
        "run" => items.push(item(EXIT_CHECK_FAILED.to_string(), strict)),
        "stress" | "errortest" => items.push(item(EXIT_CHECK_FAILED.to_string(), invariant)),
        _ => {}
    }
    if main || c == "compare" {
        items.push(item(
            EXIT_UNDECIDED.to_string(),
            "compare --fail-on-regression PCT: none regressed, but more results than --undecided-share allows \
             (default 0) were not decided: inconclusive, below resolution, without a ratio, or untrustworthy and \
             not judged.",
        ));
    }
    if main || MEASURING.contains(&c) || c == "crosscheck" {
        items.push(item(
            "128 + n",
            "Ended by signal n (130 Ctrl-C, 143 SIGTERM), what was measured kept as a partial result file.",
        ));
    }
    items
}

fn files(command: Option<&str>) -> Vec<(String, String)> {
    let c = command.unwrap_or("");
    let main = command.is_none();
    let mut items = Vec::new();
    let results = format!("{RESULTS_DIR}/");
    let history = format!("{RESULTS_DIR}/history.db");
    if main || MEASURING.contains(&c) {
        items.push(item(
            &results,
            "Where a run saves its result file (a new one each run, named by its UTC start time), unless -o FILE \
             or --no-save; created in the current directory.",
        ));
    }
    if main || MEASURING.contains(&c) || c == "history" {
        items.push(item(
            &history,
            "The history database (SQLite) every saved run is recorded in, unless --no-history or --db (a \
             SQLite file or postgres://…).",
        ));
    }
    if main || MEASURING.contains(&c) || c == "finish" {
        items.push(item(
            "RESULT.journal",
            "Beside a result file while its run goes on: every measurement as it is made; removed once the \
             result file is saved. A run killed outright leaves it: osprim finish RESULT makes the result file \
             from it.",
        ));
    }
    if main || MEASURING.contains(&c) {
        items.push(item(
            "$TMPDIR/osprim-PID-*/",
            "A run's scratch directory (files, sockets and pipes the benchmarks need), removed at its end; \
             those of runs that died are removed by the next run.",
        ));
    }
    if c == "papers" {
        items.push(item(&results, "Without RESULT, the newest result file there is shown."));
    }
    items
}

fn environment(command: Option<&str>) -> Vec<(String, String)> {
    let c = command.unwrap_or("");
    let main = command.is_none();
    let mut items = vec![item(
        "NO_COLOR",
        "When set and not empty, no colour on a terminal (--color auto); --color always overrides it.",
    )];
    if main || MEASURING.contains(&c) || c == "crosscheck" {
        items.push(item("TMPDIR", "Where the scratch directory is made (default /tmp)."));
    }
    if main || c == "crosscheck" {
        items.push(item(
            "PATH",
            "Where crosscheck finds its peers: perf (Debian package linux-perf), cyclictest (rt-tests) and \
             taskset.",
        ));
    }
    if main || c == "run" {
        items.push(item(
            "OSPRIM_TIMER_LOOPS, OSPRIM_TIMER_INTERVAL_US",
            "notify.timer's wake-ups over the whole run (as cyclictest's -l N; default: what fits its budget), \
             shared among its rounds, and their interval (default 1000 µs).",
        ));
    }
    if main || c == "run" || c == "papers" {
        items.push(item(
            "OSPRIM_LAYOUT_PAD, OSPRIM_LAYOUT_HEAP",
            "Set by osprim for its worker processes (each round's memory layout); not for users to set.",
        ));
    }
    items
}

fn see_also(command: Option<&str>, commands: &[String]) -> String {
    let pages: Vec<String> = match command {
        None => commands.iter().map(|c| format!("\\fBosprim\\-{}\\fR(1)", escape(c))).collect(),
        Some(c) => {
            let related: &[&str] = match c {
                "run" => &["papers", "show", "compare", "history", "finish", "report"],
                "papers" | "show" => &["run", "report"],
                "compare" | "history" | "report" => &["run", "compare", "history", "report"],
                "finish" => &["run", "show"],
                "stress" | "errortest" => &["stress", "errortest", "papers"],
                "list" | "env" => &["run", "list", "env"],
                _ => &["run"],
            };
            std::iter::once("\\fBosprim\\fR(1)".to_string())
                .chain(related.iter().filter(|r| **r != c).map(|r| format!("\\fBosprim\\-{r}\\fR(1)")))
                .collect()
        }
    };
    let mut out = pages.join(", ");
    out.push_str(
        "\n.PP\nREADME.md and docs/ in osprim's source: docs/cli.md (every flag), docs/results.md (the result \
         file), docs/overhead.md (what the figures include).\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_the_four_sections_and_the_main_page_every_exit_status() {
        let commands = vec!["run".to_string(), "list".to_string()];
        for page in [None, Some("run"), Some("list"), Some("compare"), Some("stress")] {
            let roff = sections(page, &commands);
            for s in [".SH \"EXIT STATUS\"", ".SH \"ENVIRONMENT\"", ".SH \"SEE ALSO\""] {
                assert!(roff.contains(s), "{page:?}: {s}\n{roff}");
            }
            assert!(roff.contains("NO_COLOR"), "{roff}");
        }
        let main = sections(None, &commands);
        assert!(main.contains(".SH \"FILES\"") && main.contains("osprim\\-results/history.db"), "{main}");
        for code in ["\\fB0\\fR", "\\fB1\\fR", "\\fB2\\fR", "\\fB3\\fR", "\\fB128 + n\\fR"] {
            assert!(main.contains(code), "{code}: {main}");
        }
        assert!(main.contains("\\fBosprim\\-list\\fR(1)"), "{main}");
        assert!(!sections(Some("list"), &commands).contains(".SH \"FILES\""));
    }
}
