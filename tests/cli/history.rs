//! `osprim history` from the outside: `--changes` on a history of synthetic result files with
//! one step (no clock is read), and the `level-shift` flag of a real run against a history
//! doctored to sit elsewhere, never raised for the seed method nor against its runs.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn osprim() -> Command {
    let mut c = Command::cargo_bin("osprim").expect("binary built");
    c.env("RUST_BACKTRACE", "1");
    c
}

/// ±1 %, a different wobble for each run.
fn wobble(i: usize) -> f64 {
    1.0 + [0.0, 0.6, -0.5, 0.9, -0.8, 0.3, -0.2, 0.7][i % 8] / 100.0
}

/// Multiplies a result's median, mean and intervals by `k`.
fn scale(r: &mut Value, k: f64) {
    let s = &mut r["summary"];
    if s.is_null() {
        return;
    }
    for key in ["median", "mean"] {
        if let Some(v) = s[key].as_f64() {
            s[key] = (v * k).into();
        }
    }
    for key in ["median_ci95", "mean_ci95"] {
        for i in 0..2 {
            if let Some(v) = s[key][i].as_f64() {
                s[key][i] = (v * k).into();
            }
        }
    }
}

/// Sixteen runs of the fixture, an hour apart, each result wobbling by ±1 %, and
/// `syscall.getpid` 30 % slower from the ninth run on; written to `dir` as run00.json….
fn sixteen_runs_with_a_step(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let base: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    for i in 0..16 {
        let mut run = base.clone();
        run["started_utc"] = format!("2026-11-20T{i:02}:00:00Z").into();
        for r in run["results"].as_array_mut().unwrap() {
            let step = if r["id"] == "syscall.getpid" && i >= 8 { 1.3 } else { 1.0 };
            scale(r, wobble(i) * step);
        }
        std::fs::write(dir.join(format!("run{i:02}.json")), run.to_string()).unwrap();
    }
}

#[test]
fn history_changes_names_the_run_after_which_a_result_stepped() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    sixteen_runs_with_a_step(&runs);
    let db = dir.path().join("h.db");
    let out = osprim()
        .args(["history", "--changes", "--format", "json", "--import"])
        .arg(&runs)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = report["series"].as_array().unwrap();
    assert!(series.len() > 100, "every result is a series");
    let with: Vec<&Value> = series.iter().filter(|s| !s["changes"].as_array().unwrap().is_empty()).collect();
    assert_eq!(with.len(), 1, "only getpid stepped: {:?}", with.iter().map(|s| &s["id"]).collect::<Vec<_>>());
    let s = with[0];
    assert_eq!(
        (s["id"].as_str(), s["method"].as_str(), s["runs"].as_u64()),
        (Some("syscall.getpid"), Some("adaptive"), Some(16))
    );
    let c = &s["changes"][0];
    assert_eq!(c["last_before"]["started_utc"], "2026-11-20T07:00:00Z");
    assert_eq!(c["first_after"]["started_utc"], "2026-11-20T08:00:00Z");
    assert!(c["last_before"]["file"].as_str().unwrap().ends_with("run07.json"), "{c}");
    assert!(c["first_after"]["file"].as_str().unwrap().ends_with("run08.json"), "{c}");
    assert_eq!((c["before"]["runs"].as_u64(), c["after"]["runs"].as_u64()), (Some(8), Some(8)));
    let ratio = &c["ratio"];
    let (e, lo, hi) =
        (ratio["estimate"].as_f64().unwrap(), ratio["ci95"][0].as_f64().unwrap(), ratio["ci95"][1].as_f64().unwrap());
    assert!((e - 1.3).abs() < 0.03 && lo > 1.0 && lo <= e && e <= hi, "{ratio}");
    assert!(c["p_value"].as_f64().unwrap() <= report["significance"].as_f64().unwrap());

    // The same change in every format.
    for (format, needle) in [
        ("table", "2026-11-20 07:00:00"),
        ("csv", "2026-11-20T07:00:00Z"),
        ("markdown", "2026-11-20 07:00:00"),
        ("latex", "2026-11-20 07:00:00"),
    ] {
        let out =
            osprim().args(["history", "syscall", "--changes", "--format", format, "--db"]).arg(&db).output().unwrap();
        assert!(out.status.success(), "{format}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("syscall.getpid") && text.contains(needle), "{format}:\n{text}");
        assert!(text.contains("1.3"), "{format}: the ratio\n{text}");
        assert!(!text.contains("syscall.null"), "{format}: a flat series has no change\n{text}");
    }
    let csv = osprim().args(["history", "--changes", "--format", "csv", "--db"]).arg(&db).output().unwrap();
    assert_eq!(String::from_utf8(csv.stdout).unwrap().lines().count(), 2, "a header and one change");
}

/// `osprim run syscall.getpid --quick -o OUT` with `extra` arguments, its file read (three
/// rounds: the interval of one round may have no width, and such an interval judges nothing).
fn run(out: &Path, extra: &[&str]) -> Value {
    osprim()
        .args(["run", "syscall.getpid", "--quick", "--format", "json", "-o"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
    serde_json::from_str::<Value>(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Six copies of `first`, recorded as if measured in 2001 and ten times slower (±1 %), each
/// with a ±1 % interval, into `db`.
fn doctored_history(first: &Value, dir: &Path, db: &Path) {
    let imports = dir.join(format!("imports-{}", db.file_stem().unwrap().to_string_lossy()));
    std::fs::create_dir(&imports).unwrap();
    for i in 0..6 {
        let mut earlier = first.clone();
        earlier["started_utc"] = format!("2001-01-01T{i:02}:00:00Z").into();
        scale(&mut earlier["results"][0], 10.0 * wobble(i));
        let s = &mut earlier["results"][0]["summary"];
        let m = s["median"].as_f64().unwrap();
        s["median_ci95"] = serde_json::json!([m * 0.99, m * 1.01]);
        std::fs::write(imports.join(format!("earlier{i}.json")), earlier.to_string()).unwrap();
    }
    osprim().args(["history", "--import"]).arg(&imports).arg("--db").arg(db).assert().success();
}

fn flags(run: &Value) -> String {
    run["results"][0]["flags"].to_string()
}

#[test]
fn a_run_apart_from_its_earlier_runs_is_a_level_shift_never_for_or_against_the_seed_method() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let first = run(&dir.path().join("first.json"), &["--no-history"]);
    doctored_history(&first, dir.path(), &db);
    let now = run(&dir.path().join("second.json"), &["--db", db.to_str().unwrap()]);
    let row = &now["results"][0];
    assert_eq!(row["id"], "syscall.getpid");
    assert!(flags(&now).contains("level-shift"), "{}", flags(&now));
    assert!(row["status"] == "advisory" || row["status"] == "untrustworthy", "{}", row["status"]);
    let notes = row["notes"].to_string();
    assert!(
        notes.contains("lies below every interval of the 6 earlier runs")
            && notes.contains("2001-01-01T00:00:00Z to 2001-01-01T05:00:00Z"),
        "{notes}"
    );

    // A history of seed-method runs: a seed run is never judged, an adaptive one never
    // against them.
    let seed_db = dir.path().join("seed.db");
    let seed_first = run(&dir.path().join("seed-first.json"), &["--no-history", "--method", "seed"]);
    assert_eq!(seed_first["results"][0]["method"], "seed");
    doctored_history(&seed_first, dir.path(), &seed_db);
    let seed_now = run(&dir.path().join("seed-now.json"), &["--method", "seed", "--db", seed_db.to_str().unwrap()]);
    assert!(!flags(&seed_now).contains("level-shift"), "{}", flags(&seed_now));
    let adaptive_now = run(&dir.path().join("adaptive-now.json"), &["--db", seed_db.to_str().unwrap()]);
    assert!(!flags(&adaptive_now).contains("level-shift"), "{}", flags(&adaptive_now));
}

#[test]
fn a_cold_row_is_recorded_with_its_cold_hot_ratio_and_shown_beside_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    osprim()
        .args(["run", "syscall.getpid", "--quick", "--cache", "cold", "-q", "-o"])
        .arg(dir.path().join("cold.json"))
        .arg("--db")
        .arg(&db)
        .assert()
        .success();
    let run: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("cold.json")).unwrap()).unwrap();
    let ratio = run["results"][0]["cold_hot"]["ratio"].as_f64().expect("a cold row has its ratio");
    let csv = osprim().args(["history", "syscall.getpid", "--format", "csv", "--db"]).arg(&db).output().unwrap();
    let text = String::from_utf8(csv.stdout).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = head.iter().position(|c| *c == "cold_hot").expect("a cold_hot column");
    let line = lines.next().unwrap();
    let cells: Vec<&str> = line.split(',').collect();
    // The params column is JSON with commas, so count from the end.
    let from_end = head.len() - at;
    let recorded: f64 = cells[cells.len() - from_end].parse().unwrap();
    assert!((recorded - ratio).abs() <= 1e-9 * ratio.abs(), "{recorded} vs {ratio}: {line}");
    let table = osprim().args(["history", "syscall.getpid", "--db"]).arg(&db).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("cold/hot") && table.contains(&format!("{ratio:.2}×")), "{table}");
}
