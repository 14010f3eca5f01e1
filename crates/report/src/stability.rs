//! A stability run (`osprim stress`, `osprim errortest`) for people: how it ended, how long it
//! ran clean, what it did by kind, the invariants it checked, and each resource's trend with
//! its slope per hour (from `analysis::stability`). Formats only.

use super::View;
use super::escape::Md;
use super::layout::flow;
use analysis::stability::{Trend, trends};
use model::Unit;
use model::stability::{Outcome, StabilityRun, Tally};

/// `62.0 s`, `1.0 h`: a duration in seconds for people.
fn duration(s: f64) -> String {
    Unit::Ns.format(s * 1e9)
}

/// How the run ended, in one line.
pub(crate) fn outcome(s: &StabilityRun) -> String {
    match &s.outcome {
        Outcome::Clean => format!("clean: ran {} without a failure", duration(s.clean_s)),
        Outcome::Failed { at_s, what, replay } => {
            format!("FAILED after {}: {what} (replay: {replay})", duration(*at_s))
        }
        Outcome::Interrupted { at_s } => format!("interrupted after {}, clean until then", duration(*at_s)),
    }
}

/// The test's name, and what kind of run it is: `stress`, or `stress, a short test of the seed
/// suite` (the bare `osprim`'s few seconds, not a stability run).
fn title(s: &StabilityRun) -> String {
    let short = if s.short { ", a short test of the seed suite" } else { "" };
    format!("{}{short} (seed {}, {})", s.test.name(), s.seed, s.mode)
}

fn tallies(t: &[Tally]) -> String {
    t.iter().map(|t| format!("{} {}", t.kind, t.count)).collect::<Vec<_>>().join(", ")
}

/// A resource's value for people: bytes for RSS, a plain count otherwise.
fn value(t: &Trend, v: f64) -> String {
    match t.what.as_str() {
        "rss_bytes" => Unit::Bytes.format(v),
        _ if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

fn trend_line(t: &Trend) -> String {
    let slope = match t.slope_per_hour {
        Some(s) => format!("{}{} per hour", if s >= 0.0 { "+" } else { "−" }, value(t, s.abs())),
        None => "too short a run for a slope".into(),
    };
    format!(
        "{}: {} → {} (peak {}), {slope}",
        t.what.trim_end_matches("_bytes"),
        value(t, t.first),
        value(t, t.last),
        value(t, t.peak)
    )
}

/// One run as text lines (no trailing newline), fitted to `width`.
pub(crate) fn text(s: &StabilityRun, view: &View) -> String {
    let width = view.width.max(40);
    let mut out = vec![format!("{}: {}", title(s), outcome(s))];
    let mut para = |label: &str, body: String| out.extend(flow(&format!("{label}: {body}"), width, "  ", "      "));
    para("settings", s.settings.join(", "));
    para("operations", format!("{} in all: {}", s.total_operations(), tallies(&s.operations)));
    if !s.results.is_empty() {
        para("results", tallies(&s.results));
    }
    for i in &s.invariants {
        let state = if i.violated == 0 { "held".to_string() } else { format!("BROKEN {} times", i.violated) };
        para("invariant", format!("{} — checked {} times, {state}", i.name, i.checked));
    }
    for t in trends(s) {
        para("trend", trend_line(&t));
    }
    for n in &s.notes {
        para("note", n.clone());
    }
    out.join("\n")
}

/// One run as Markdown: a heading, then the same facts as a list (each escaped as prose).
pub(crate) fn markdown(s: &StabilityRun) -> String {
    let e = |t: &str| Md::Prose.escape(t);
    let mut out = vec![format!("### {}", e(&title(s))), String::new()];
    let mut item = |label: &str, body: String| out.push(format!("- {label}: {}", e(&body)));
    item("outcome", outcome(s));
    item("settings", s.settings.join(", "));
    item("operations", format!("{} in all: {}", s.total_operations(), tallies(&s.operations)));
    if !s.results.is_empty() {
        item("results", tallies(&s.results));
    }
    for i in &s.invariants {
        item("invariant", format!("{} — checked {}, violated {}", i.name, i.checked, i.violated));
    }
    for t in trends(s) {
        item("trend", trend_line(&t));
    }
    for n in &s.notes {
        item("note", n.clone());
    }
    out.join("\n")
}

/// One CSV record per fact: test, seed, what (`outcome`, `operation`, `result`, `invariant`,
/// `trend`), name, value.
pub(crate) fn csv_records(s: &StabilityRun) -> Vec<[String; 5]> {
    let head = |what: &str, name: &str, v: String| {
        [s.test.name().to_string(), s.seed.to_string(), what.into(), name.into(), v]
    };
    let mut out = vec![
        head("outcome", "clean_s", s.clean_s.to_string()),
        head("outcome", "ran_s", s.ran_s.to_string()),
        head("outcome", "clean", s.is_clean().to_string()),
    ];
    out.extend(s.operations.iter().map(|t| head("operation", &t.kind, t.count.to_string())));
    out.extend(s.results.iter().map(|t| head("result", &t.kind, t.count.to_string())));
    out.extend(s.invariants.iter().map(|i| head("invariant", &i.name, format!("{}/{}", i.violated, i.checked))));
    for t in trends(s) {
        out.push(head("trend", &t.what, t.slope_per_hour.map(|v| v.to_string()).unwrap_or_default()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::stability::{Invariant, StabilityTest, TrendPoint};

    fn run(outcome: Outcome) -> StabilityRun {
        StabilityRun {
            test: StabilityTest::Stress,
            seed: 7,
            mode: "mprotect".into(),
            settings: vec!["max_domains=10000".into()],
            requested_s: 60.0,
            ran_s: 60.0,
            clean_s: 60.0,
            outcome,
            operations: vec![Tally { kind: "fcall".into(), count: 5 }, Tally { kind: "xfer".into(), count: 2 }],
            results: Vec::new(),
            invariants: vec![Invariant { name: "every call reaches its domain".into(), checked: 7, violated: 0 }],
            trend: (0..5)
                .map(|i| TrendPoint { at_s: i as f64, rss_bytes: 1 << 20, fds: 4, threads: 2, gauges: Vec::new() })
                .collect(),
            notes: Vec::new(),
            short: false,
        }
    }

    #[test]
    fn a_clean_run_says_so_with_its_tallies_invariants_and_trends() {
        let t = text(&run(Outcome::Clean), &View { width: 200, ..View::default() });
        assert!(t.starts_with("stress (seed 7, mprotect): clean: ran 60.00 s without a failure"), "{t}");
        assert!(t.contains("operations: 7 in all: fcall 5, xfer 2"), "{t}");
        assert!(t.contains("every call reaches its domain — checked 7 times, held"), "{t}");
        assert!(t.contains("fds: 4 → 4 (peak 4), too short a run for a slope"), "{t}");
        let short = text(&StabilityRun { short: true, ..run(Outcome::Clean) }, &View::default());
        assert!(short.starts_with("stress, a short test of the seed suite (seed 7, mprotect): clean"), "{short}");
    }

    #[test]
    fn a_failure_names_what_failed_and_how_to_replay_it() {
        let failed = Outcome::Failed {
            at_s: 3.0,
            what: "domain 4 saw rights of 5".into(),
            replay: "osprim stress --seed 7".into(),
        };
        let t = text(&run(failed), &View::default());
        assert!(t.contains("FAILED after 3.000 s: domain 4 saw rights of 5 (replay: osprim stress --seed 7)"), "{t}");
        let rows = csv_records(&run(Outcome::Clean));
        assert!(rows.iter().any(|r| r[2] == "operation" && r[3] == "fcall" && r[4] == "5"));
    }
}
