//! The comparison's formats on hand-made runs: a difference below resolution shows no ratio in
//! any format, every format carries the same fields, and the gate names each row it fails with
//! its parameters, figures, ratio and CI.

use super::*;
use crate::Format;
use analysis::compare::{Untrustworthy, compare};
use model::Flag;

fn render(all: &[Named], format: Format, view: &View) -> Result<String, serde_json::Error> {
    crate::writer(format).comparison(all, view)
}

fn named<'a>(base: &'a RunFile, new: &'a RunFile) -> Named<'a> {
    Named {
        base_name: "base.json".into(),
        new_name: "new.json".into(),
        base,
        new,
        comparison: compare(base, new, analysis::compare::DEFAULT_NOISE, 7),
    }
}

fn view() -> View {
    View { width: 160, ..View::default() }
}

#[test]
fn a_difference_below_resolution_shows_no_ratio_in_any_format() {
    let (base, new) = analysis::compare::fixtures::below_resolution_pair();
    let n = named(&base, &new);
    let all = std::slice::from_ref(&n);
    // 9.6 / 300 = 0.032: that figure must appear nowhere, nor any interval for the row.
    let table = render(all, Format::Table, &view()).unwrap();
    let line = table.lines().find(|l| l.starts_with("ctx.address_space")).expect("a line for the difference");
    assert!(line.contains("|x| < 20.00 ns") && line.ends_with("below resolution"), "{line}");
    assert!(!line.contains("0.032") && !line.contains('['), "{line}");
    assert!(table.contains("below resolution: the figure's 95 % CI includes 0"), "{table}");

    let json: serde_json::Value = serde_json::from_str(&render(all, Format::Json, &view()).unwrap()).unwrap();
    let rows = json[0]["comparison"]["compared"].as_array().unwrap();
    let row = rows.iter().find(|r| r["id"] == "ctx.address_space").unwrap();
    assert!(row["ratio"].is_null() && row["ratio_ci95"].is_null(), "{row}");
    assert_eq!(row["below_resolution"], 20.0);
    assert_eq!(row["verdict"], "below_resolution");
    assert_eq!(row["no_ratio"], "below_resolution");

    let csv = render(all, Format::Csv, &view()).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let record = reader.records().map(Result::unwrap).find(|r| &r[col("id")] == "ctx.address_space").unwrap();
    assert_eq!(&record[col("ratio")], "");
    assert_eq!(&record[col("ratio_ci95_low")], "");
    assert_eq!(&record[col("ratio_ci95_high")], "");
    assert_eq!(&record[col("below_resolution")], "20");
    assert_eq!(&record[col("verdict")], "below_resolution");

    let md = render(all, Format::Markdown, &view()).unwrap();
    let line = md.lines().find(|l| l.starts_with("| `ctx.address_space")).unwrap();
    assert!(
        line.contains("| — | — | below resolution (|x| < 20.00 ns) |")
            || line.contains("| — | — | below resolution (\\|x\\| < 20.00 ns) |"),
        "{line}"
    );
    assert!(!line.contains("0.032"), "{line}");
}

#[test]
fn json_csv_and_markdown_carry_the_same_fields() {
    let (base, mut new) = analysis::compare::fixtures::below_resolution_pair();
    new.results.iter_mut().find(|r| r.id == "syscall.getpid").unwrap().flags.push(Flag::BusyCpu);
    let n = named(&base, &new);
    let all = std::slice::from_ref(&n);
    let json: serde_json::Value = serde_json::from_str(&render(all, Format::Json, &view()).unwrap()).unwrap();
    let getpid = json[0]["comparison"]["compared"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "syscall.getpid")
        .unwrap()
        .clone();
    for key in [
        "id",
        "params",
        "unit",
        "statistic",
        "base_value",
        "new_value",
        "ratio",
        "ratio_ci95",
        "below_resolution",
        "verdict",
        "no_ratio",
        "marks",
        "param_differences",
    ] {
        assert!(getpid.get(key).is_some(), "JSON lacks {key}: {getpid}");
    }
    assert_eq!(getpid["marks"], serde_json::json!([{"flag": "busy-cpu", "in": "new"}]));
    let csv = render(all, Format::Csv, &view()).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
    let head = reader.headers().unwrap().clone();
    let record = reader.records().map(Result::unwrap).find(|r| &r[2] == "syscall.getpid").unwrap();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(&record[col("marks")], "busy-cpu:new");
    assert_eq!(record[col("ratio")].parse::<f64>().unwrap(), getpid["ratio"].as_f64().unwrap());
    let md = render(all, Format::Markdown, &view()).unwrap();
    assert!(md.contains("| benchmark | base | new | ratio | 95 % CI | verdict | marks |"), "{md}");
    let line = md.lines().find(|l| l.starts_with("| `syscall.getpid")).unwrap();
    assert!(line.contains("busy-cpu (new)"), "{line}");
    let table = render(all, Format::Table, &view()).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("syscall.getpid")).unwrap();
    assert_eq!(lines[at + 1], "  ↳ busy-cpu (new)", "{table}");
    assert!(table.contains("; 2 marked;"), "{table}");
}

#[test]
fn the_gate_names_each_failing_row_with_its_parameters_figures_ratio_and_ci() {
    let base = analysis::compare::fixtures::slowed_pair(1.0);
    let new = analysis::compare::fixtures::slowed_pair(1.5);
    let n = named(&base, &new);
    let gate =
        Gate { regression: 0.1, inconclusive_fails: false, untrustworthy: Untrustworthy::Skip, undecided_share: 0.0 };
    let outcome = n.comparison.gate(&gate);
    let lines = gate_lines(&n, &outcome, &gate);
    assert!(lines[0].starts_with("regression: 1 of "), "{lines:?}");
    assert!(lines[0].contains("new.json against base.json; slower by more than 10 %"), "{lines:?}");
    let row = &lines[1];
    assert!(row.starts_with("  ctx.thread cpus=1,0 placement=same_cpu: "), "{row}");
    let c = n.comparison.compared.iter().find(|c| c.id == "ctx.thread").unwrap();
    let [lo, hi] = c.ratio_ci95.unwrap();
    let figures = format!(
        "{} → {}, ratio {:.3} [{lo:.3}, {hi:.3}]",
        c.unit.format(c.base_value),
        c.unit.format(c.new_value),
        c.ratio.unwrap()
    );
    assert!(row.contains(&figures), "{row} lacks {figures}");
    assert!(row.ends_with(", slower"), "{row}");
    // The marked row of the fixture (ctx.process failed its check) is named as undecided.
    let undecided = lines.iter().position(|l| l.starts_with("undecided: ")).expect("an undecided block");
    assert!(
        lines[undecided + 1..].iter().any(|l| l.contains("ctx.process placement=same_cpu")
            && l.contains("untrustworthy, not judged: check-failed (both)")),
        "{lines:?}"
    );
    assert!(lines.last().unwrap().starts_with("gate: fail (1 failed, "), "{lines:?}");
}

#[test]
fn the_summary_counts_every_verdict() {
    let (base, new) = analysis::compare::fixtures::below_resolution_pair();
    let c = compare(&base, &new, analysis::compare::DEFAULT_NOISE, 7);
    let line = summary_line(&c, false);
    assert!(line.contains("faster, ") && line.contains("slower, ") && line.contains("no change, "), "{line}");
    assert!(line.contains("inconclusive, 1 below resolution"), "{line}");
}

#[test]
fn table() {
    let (base, new) = analysis::compare::fixtures::below_resolution_pair();
    insta::assert_snapshot!(render(std::slice::from_ref(&named(&base, &new)), Format::Table, &view()).unwrap());
}

/// A cold row's label says `cold` in every format, and `cold-not-slower` is said where a run
/// flagged it, as advisory (dim, not counted as marked).
#[test]
fn a_cold_row_is_labelled_cold_and_its_cold_not_slower_is_said() {
    use analysis::compare::fixtures::{with_cold_twin, with_samples};
    let base = with_cold_twin(with_samples(model::fixtures::run_file(false), 1, |_| 1.0), 3.0);
    let mut new = with_cold_twin(with_samples(model::fixtures::run_file(false), 2, |_| 1.0), 3.0);
    let cold = new.results.iter_mut().find(|r| r.id == "syscall.getpid" && r.params["cache"] == "cold").unwrap();
    cold.flags.push(Flag::ColdNotSlower);
    let n = named(&base, &new);
    let all = std::slice::from_ref(&n);
    let table = render(all, Format::Table, &view()).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("syscall.getpid cold")).unwrap_or_else(|| panic!("{table}"));
    assert!(lines.iter().any(|l| l.starts_with("syscall.getpid hot")), "{table}");
    assert!(lines[at + 1].contains("↳ cold-not-slower (new)"), "{table}");
    let csv = render(all, Format::Csv, &view()).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let cold =
        records.iter().find(|r| &r[col("id")] == "syscall.getpid" && r[col("params")].contains("\"cold\"")).unwrap();
    assert_eq!(&cold[col("marks")], "cold-not-slower:new");
    let md = render(all, Format::Markdown, &view()).unwrap();
    assert!(md.lines().any(|l| l.starts_with("| `syscall.getpid cold") && l.contains("cold-not-slower (new)")), "{md}");
}

#[test]
fn a_fleets_runs_are_named_by_host_and_shown_side_by_side() {
    let base_run = |host: &str| {
        let mut r = analysis::compare::fixtures::slowed_pair(1.0);
        r.host = Some(host.into());
        r
    };
    let (a, b, c) = (base_run("host-a"), base_run("host-b"), base_run("host-c"));
    let (ab, ac) = (named(&a, &b), named(&a, &c));
    let all = [ab, ac];
    let table = render(&all, Format::Table, &view()).unwrap();
    let head = table.lines().find(|l| l.starts_with("benchmark")).expect("a side-by-side head");
    assert!(head.contains("host-a (base)") && head.contains("host-b") && head.contains("host-c"), "{table}");
    assert!(table.contains("new   new.json (") && table.contains(", host-c"), "{table}");
    assert!(table.contains("host: host-a → host-b"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&render(&all, Format::Json, &view()).unwrap()).unwrap();
    assert_eq!((json[1]["base_host"].as_str(), json[1]["new_host"].as_str()), (Some("host-a"), Some("host-c")));
    // Two runs: the pair's table alone.
    let one = render(&all[..1], Format::Table, &view()).unwrap();
    assert!(one.starts_with("base  "), "{one}");
}
