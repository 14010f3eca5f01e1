//! `osprim compare` from the outside: a run against itself, a run with one result slowed, the
//! regression gate's exit status, and bad input. Result files are the fixture run with
//! synthetic samples (no clock is read).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn osprim() -> Command {
    let mut c = Command::cargo_bin("osprim").expect("binary built");
    c.env("RUST_BACKTRACE", "1");
    c
}

/// The fixture run with 60 samples in 3 rounds around each measured median, the result
/// named `slow` (if any) 30 % slower; written to `dir/name`.
fn run_with_samples(dir: &Path, name: &str, slow: Option<&str>) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let mut state = 0x1234_5678u64;
    for r in run["results"].as_array_mut().unwrap() {
        let Some(median) = r["summary"]["median"].as_f64() else { continue };
        if !r["derived"].is_null() {
            continue;
        }
        let k = if Some(r["id"].as_str().unwrap()) == slow { 1.3 } else { 1.0 };
        let samples: Vec<f64> = (0..60)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                median * k * (1.0 + 0.004 * ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5))
            })
            .collect();
        r["samples"] = serde_json::json!(samples);
        r["samples_per_round"] = serde_json::json!([20, 20, 20]);
    }
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
    path
}

#[test]
fn a_run_against_itself_is_no_change_for_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let out = osprim().arg("compare").arg(&a).arg(&a).args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let compared = v[0]["comparison"]["compared"].as_array().unwrap();
    assert!(compared.len() > 20, "{}", compared.len());
    assert!(compared.iter().all(|c| c["verdict"] == "no_change"));
    assert!(v[0]["comparison"]["differences"].as_array().unwrap().is_empty());
}

#[test]
fn a_slowed_result_is_slower_and_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let b = run_with_samples(dir.path(), "b.json", Some("syscall.null"));
    let out = osprim().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("syscall.null ")).expect("a syscall.null line");
    assert!(line.contains("1.300") && line.ends_with("slower"), "{line}");
    assert!(text.contains("0 faster, 1 slower"), "{text}");

    let gate = osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "10"]).output().unwrap();
    assert_eq!(gate.status.code(), Some(1));
    let err = String::from_utf8_lossy(&gate.stderr);
    assert!(err.contains("regression: 1 significantly slower by more than 10 %: syscall.null (+30.0 %)"), "{err}");

    let lenient = osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "40"]).output().unwrap();
    assert_eq!(lenient.status.code(), Some(0));
}

#[test]
fn bad_input_is_one_line_and_a_non_zero_status() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{ not json").unwrap();
    for (args, code) in
        [(vec![a.clone(), dir.path().join("absent.json")], 1), (vec![a.clone(), corrupt], 1), (vec![a.clone()], 2)]
    {
        let out = osprim().arg("compare").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
        if code == 1 {
            assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{err}");
        }
    }
    let out = osprim().arg("compare").arg(&a).arg(&a).args(["--noise", "-3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A result whose interval lies apart from the previous run's on this machine and build (from
/// the history) is flagged `level-shift`, with a note naming the previous run.
#[test]
fn a_run_apart_from_the_previous_one_in_the_history_is_flagged_a_level_shift() {
    let dir = tempfile::tempdir().unwrap();
    let (db, first, second) = (dir.path().join("h.db"), dir.path().join("first.json"), dir.path().join("second.json"));
    let run = |out: &Path, history: &[&str]| {
        osprim()
            .args(["run", "syscall.getpid", "--quick", "--rounds", "1", "--format", "json", "-o"])
            .arg(out)
            .args(history)
            .assert()
            .success();
        serde_json::from_str::<Value>(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    // A first run, not recorded; recorded instead as if measured earlier and ten times slower.
    let mut earlier = run(&first, &["--no-history"]);
    earlier["started_utc"] = "2001-01-01T00:00:00Z".into();
    let s = &mut earlier["results"][0]["summary"];
    for key in ["median", "mean"] {
        s[key] = (s[key].as_f64().unwrap() * 10.0).into();
    }
    for i in 0..2 {
        s["median_ci95"][i] = (s["median_ci95"][i].as_f64().unwrap() * 10.0).into();
    }
    let imports = dir.path().join("imports");
    std::fs::create_dir(&imports).unwrap();
    std::fs::write(imports.join("earlier.json"), earlier.to_string()).unwrap();
    osprim().args(["history", "--import"]).arg(&imports).arg("--db").arg(&db).assert().success();

    let db_arg = db.to_str().unwrap();
    let now = run(&second, &["--db", db_arg]);
    let row = &now["results"][0];
    assert_eq!(row["id"], "syscall.getpid");
    assert!(row["flags"].as_array().unwrap().contains(&"level-shift".into()), "{}", row["flags"]);
    assert!(row["status"] == "advisory" || row["status"] == "untrustworthy", "{}", row["status"]);
    let notes: Vec<&str> = row["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        notes.iter().any(|n| n.starts_with("level shift: the previous run on this machine (2001-01-01")),
        "{notes:?}"
    );

    // The next run is compared with the one just recorded, not the doctored one.
    let third = run(&dir.path().join("third.json"), &["--db", db_arg]);
    let notes = third["results"][0]["notes"].to_string();
    assert!(!notes.contains("2001-01-01"), "{notes}");
}

/// A run saved elsewhere (`-o`) from a directory without `osprim-results/` makes no directory
/// there: it says so, and how to record the run; with `--db` it is recorded.
#[test]
fn a_run_saved_elsewhere_without_a_results_directory_says_how_to_record_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("elsewhere.json");
    let run = |extra: &[&str]| {
        osprim()
            .current_dir(dir.path())
            .args(["run", "harness.empty", "--quick", "--rounds", "1", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let first = run(&[]);
    assert!(first.status.success());
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(err.contains("note: not recorded in the history: there is no osprim-results/ here"), "{err}");
    assert!(!dir.path().join("osprim-results").exists(), "no directory made");
    let db = dir.path().join("h.db");
    let second = run(&["--db", db.to_str().unwrap()]);
    assert!(second.status.success());
    assert!(db.is_file(), "{}", String::from_utf8_lossy(&second.stderr));
    let shown = osprim().args(["history", "harness.empty", "--db"]).arg(&db).output().unwrap();
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("harness.empty"));
}
