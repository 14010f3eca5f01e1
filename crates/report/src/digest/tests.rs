//! The digest on the hand-made run and on the real fixture (the bare `osprim`'s run): it fits
//! 24 lines at 80 and 100 columns, holds every part, and says what is missing.

use super::*;
use crate::tests::run_file;

fn papers_run() -> RunFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/papers-run.json");
    model::read_result_file(&path).expect("the papers fixture")
}

fn view(width: usize) -> View {
    View { width, ..View::default() }
}

/// The lines of `text` without ANSI escape sequences.
fn plain_lines(text: &str) -> Vec<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|d| *d == 'm');
        } else {
            out.push(c);
        }
    }
    out.lines().map(str::to_string).collect()
}

/// Every part is there, in at most 22 lines (the prompt and a saved note take the rest of a
/// 24-line screen), none wider than `width`.
fn assert_digest(text: &str, width: usize) {
    let lines = plain_lines(text);
    assert!(lines.len() <= 22, "{} lines at {width}:\n{text}", lines.len());
    for l in &lines {
        assert!(layout::width(l) <= width, "{} wide at {width}: {l:?}\n{text}", layout::width(l));
        assert_eq!(l, l.trim_end(), "trailing spaces: {l:?}");
    }
    assert!(lines[0].starts_with("In short: "), "{text}");
    if width < 80 {
        return;
    }
    assert!(lines.iter().any(|l| l.starts_with("Verdict: ")), "{text}");
    for p in &papers::PAPERS {
        let name = short_name(p.system);
        assert_eq!(lines.iter().filter(|l| l.starts_with(&format!("{name} "))).count(), 1, "{name}:\n{text}");
    }
    for p in &PRIMITIVES {
        assert!(lines.iter().any(|l| l.starts_with(p.name) && l.contains(p.want.id)), "{}:\n{text}", p.name);
    }
    assert!(lines.iter().any(|l| l.contains("osprim papers") && l.contains("osprim show")), "{text}");
}

#[test]
fn the_digest_fits_24_lines_at_80_and_100_columns() {
    for run in [run_file(false), run_file(true), papers_run()] {
        for width in [80, 100, 60, 40] {
            let text = render(&run, 52.0, Some(Path::new("osprim-results/x.json")), &view(width));
            assert_digest(&text, width);
        }
        let coloured = render(&run, 52.0, None, &View { color: true, ..view(80) });
        assert!(coloured.contains('\x1b'), "headings in bold");
        assert_digest(&coloured, 80);
    }
}

#[test]
fn a_paper_line_gives_rows_median_and_both_extremes_with_their_intervals() {
    let run = papers_run();
    let text = render(&run, 52.0, None, &view(100));
    let summaries = seeds::paper_summaries(&run);
    for s in summaries.iter().filter(|s| s.conclusive > 1) {
        let line = plain_lines(&text).into_iter().find(|l| l.starts_with(short_name(&s.system))).unwrap();
        assert!(line.contains(&format!("{}/{}", s.measured, s.total_rows)), "{line}");
        assert!(line.contains(&s.median_words().unwrap()), "{line}");
        let (lo, hi) = (s.worst.as_ref().unwrap(), s.best.as_ref().unwrap());
        assert!(line.contains(&lo.words()) && line.contains(&hi.words()), "{line}");
        assert_eq!(line.matches('[').count(), 2, "both ends carry an interval: {line}");
    }
    let narrow = render(&run, 52.0, None, &view(80));
    assert!(plain_lines(&narrow).iter().any(|l| l.contains(" … ")), "{narrow}");
}

#[test]
fn a_primitive_shows_its_median_and_interval_or_that_it_was_not_measured() {
    let mut run = run_file(false);
    let mut row = run.results.iter().find(|r| r.summary.is_some() && r.unit == model::Unit::Ns).unwrap().clone();
    row.id = "syscall.null".into();
    row.params.clear();
    row.status = Status::Ok;
    row.flags.clear();
    let s = row.summary.as_mut().unwrap();
    s.median = 153.16;
    s.median_ci95 = [152.83, 153.35];
    run.results.insert(0, row);
    let text = render(&run, 1.0, None, &view(80));
    let line = plain_lines(&text).into_iter().find(|l| l.starts_with("system call")).unwrap();
    assert!(line.ends_with("153.2 [152.8, 153.3] ns"), "{line}");
    let fork = plain_lines(&text).into_iter().find(|l| l.starts_with("fork")).unwrap();
    assert!(fork.ends_with("not measured in this run"), "{fork}");
    run.results[0].flags = vec![Flag::BusyCpu];
    run.results[0].status = Status::Untrustworthy;
    let text = render(&run, 1.0, None, &view(100));
    assert!(text.contains("153.2 [152.8, 153.3] ns  untrustworthy (busy-cpu)\n"), "the flag where it fits: {text}");
    let text = render(&run, 1.0, None, &view(80));
    assert!(text.contains("153.2 [152.8, 153.3] ns  untrustworthy\n"), "the tier alone where it does not: {text}");
}

#[test]
fn the_verdict_counts_tiers_failed_checks_and_moves_against_the_history() {
    let mut run = run_file(false);
    let text = render(&run, 75.0, None, &view(100));
    let verdict = flat(&text);
    assert!(verdict.contains(" in 1:15: ") && verdict.contains(" clean, "), "{verdict}");
    let failed = run.results.iter().filter(|r| r.validation.verdict == Verdict::Failed).count();
    assert!(verdict.contains(&format!("; {failed} failed a self-check")), "{verdict}");
    let ok = run.results.iter().position(|r| r.validation.verdict != Verdict::Failed).unwrap();
    run.results[ok].flags.push(Flag::LevelShift);
    run.results[ok].validation.verdict = Verdict::Failed;
    let text = flat(&render(&run, 75.0, None, &view(100)));
    assert!(text.contains(&format!("{} failed a self-check", failed + 1)), "{text}");
    assert!(text.contains("1 moved against the history (level-shift)"), "{text}");
}

/// The digest's text on one line, spaces collapsed.
fn flat(text: &str) -> String {
    plain_lines(text).join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
#[ignore = "prints a digest: OSPRIM_RESULT=file.json OSPRIM_WIDTH=80 cargo test --release -p osprim-report print_digest -- --ignored --nocapture"]
fn print_digest() {
    let width = std::env::var("OSPRIM_WIDTH").ok().and_then(|w| w.parse().ok()).unwrap_or(80);
    let run = match std::env::var("OSPRIM_RESULT") {
        Ok(p) => model::read_result_file(Path::new(&p)).unwrap(),
        Err(_) => papers_run(),
    };
    print!("{}", render(&run, 52.0, Some(Path::new("osprim-results/x.json")), &view(width)));
}
