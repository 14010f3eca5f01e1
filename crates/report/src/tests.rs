//! Snapshots of every renderer (table, CSV, seed view, JSON), fed a hand-made run: no clock,
//! no machine, nothing measured. The rows cover each kind a reporter meets: a timed row, a
//! bytes row with a breakdown, a skipped, a failed, a flagged and a derived row, a row with
//! single-operation percentiles, and a sweep with its fit; a second run is partial.

pub(crate) use model::fixtures::run_file;
use model::{Method, RunFile, Unit};
use serde_json::json;

#[test]
fn table() {
    insta::assert_snapshot!(super::table::render(&run_file(false), &super::View::default()));
}

#[test]
fn the_header_says_whether_the_measuring_cpu_was_idle() {
    let probe =
        |lost_ns: f64| model::Probe { before_round: 0, cpu: 1, window_ns: 25e6, lost_ns, gaps: 3, longest_gap_ns: 5e3 };
    let header =
        |run: &RunFile| super::header::lines(run, 200).into_iter().map(|(l, _)| l).collect::<Vec<_>>().join("\n");
    let mut run = run_file(false);
    assert!(!header(&run).contains("between rounds"), "no probes, nothing said");
    run.availability = vec![probe(10e3), probe(60e3)];
    assert!(header(&run).contains("CPU 1: ≤ 0.24 % taken elsewhere between rounds"), "{}", header(&run));
    run.availability.push(probe(12e6));
    assert!(header(&run).contains("BUSY: up to 48 % of CPU 1 taken between rounds"), "{}", header(&run));
    assert!(super::header::lines(&run, 60)[2].0.starts_with("BUSY"), "kept first when the line is narrow");
}

#[test]
fn table_of_a_partial_run() {
    insta::assert_snapshot!(super::table::render(&run_file(true), &super::View::default()));
}

#[test]
fn table_seed_method() {
    let mut run = run_file(false);
    run.config.method = Method::Seed;
    run.results.iter_mut().for_each(|r| r.method = Method::Seed);
    insta::assert_snapshot!(super::table::render(&run, &super::View::default()));
}

#[test]
fn csv() {
    insta::assert_snapshot!(super::csv::render(&run_file(false)));
}

#[test]
fn csv_of_a_partial_run() {
    insta::assert_snapshot!(super::csv::render(&run_file(true)));
}

#[test]
fn csv_uses_the_result_files_names_and_one_column_per_parameter() {
    let text = super::csv::render(&run_file(false));
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().expect("header").iter().map(String::from).collect();
    assert_eq!(&header[..super::csv::COLUMNS.len()], super::csv::COLUMNS);
    assert_eq!(&header[super::csv::COLUMNS.len()..], ["bytes", "objects", "peer", "placement", "sizes"]);
    assert!(!header.iter().any(|h| h == "params"));
    let records: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("record")).collect();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert!(records.iter().all(|r| r.len() == header.len()), "no ragged line");
    let skipped = records.iter().find(|r| &r[col("id")] == "fault.uffd").expect("skipped row");
    assert_eq!(&skipped[col("verdict")], "not_validated");
    let process = records.iter().find(|r| &r[col("id")] == "ctx.process").expect("flagged row");
    assert_eq!(&process[col("flags")], "ci-wide unstable check-failed");
    assert_eq!(&process[col("placement")], "same_cpu");
    let stages: Vec<&::csv::StringRecord> = records.iter().filter(|r| !r[col("stage")].is_empty()).collect();
    assert_eq!(stages.iter().map(|r| &r[col("stage")]).collect::<Vec<_>>(), ["user", "slab"]);
    assert!(stages.iter().all(|r| &r[col("id")] == "space.eventfd" && &r[col("unit")] == "bytes"));
    assert_eq!(records.len() - stages.len(), run_file(false).results.len(), "one line per row besides stages");
}

#[test]
fn csv_markdown_and_latex_of_odd_runs_do_not_panic() {
    let mut run = run_file(false);
    run.results.truncate(0);
    let renders: [fn(&RunFile) -> String; 2] =
        [super::csv::render, |r| super::markdown::render(r, &super::View::default())];
    for render in renders {
        assert!(!render(&run).is_empty());
    }
    assert!(super::latex::render(&run, &super::View::default()).contains("No results"));
    let mut run = run_file(false);
    for r in &mut run.results {
        r.params.insert("weird|key".into(), json!("a|b & c_d % $ # { } ~ ^ \\ <x> µ ☃ --cpu"));
        if let Some(s) = r.summary.as_mut() {
            s.median = f64::NAN;
            s.median_ci95 = [f64::NEG_INFINITY, f64::INFINITY];
        }
        r.notes.push("two\nlines".into());
    }
    run.results[2].summary = None;
    let detail = super::View { detail: true, ..super::View::default() };
    let csv = super::csv::render(&run);
    assert!(csv.contains("NaN") && csv.contains("weird|key"), "{csv}");
    let md = super::markdown::render(&run, &detail);
    for line in md.lines().filter(|l| l.starts_with('|')) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 11, "every table line has the header's 10 cells: {line}");
    }
    let tex = super::latex::render(&run, &detail);
    assert!(!tex.contains('☃') && !tex.contains("a|b"), "{tex}");
}

#[test]
fn markdown() {
    insta::assert_snapshot!(super::markdown::render(&run_file(false), &super::View::default()));
}

#[test]
fn markdown_of_a_partial_run_in_detail() {
    let view = super::View { detail: true, ..super::View::default() };
    insta::assert_snapshot!(super::markdown::render(&run_file(true), &view));
}

#[test]
fn latex() {
    insta::assert_snapshot!(super::latex::render(&run_file(false), &super::View::default()));
}

#[test]
fn latex_of_a_partial_run_in_detail() {
    let view = super::View { detail: true, ..super::View::default() };
    insta::assert_snapshot!(super::latex::render(&run_file(true), &view));
}

#[test]
fn seeds() {
    insta::assert_snapshot!(super::seeds::render(&run_file(false), &super::View::default()));
}

#[test]
fn seeds_of_a_partial_run() {
    insta::assert_snapshot!(super::seeds::render(&run_file(true), &super::View::default()));
}

#[test]
fn json() {
    let run = run_file(false);
    let text = serde_json::to_string_pretty(&run).expect("JSON");
    insta::assert_snapshot!(text);
}

#[test]
fn json_reads_back_and_partial_json() {
    let run = run_file(true);
    let text = serde_json::to_string_pretty(&run).expect("JSON");
    let back: RunFile = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back.results.len(), run.results.len());
    assert_eq!(back.results[1].unit, Unit::Bytes);
    insta::assert_snapshot!(text);
}
