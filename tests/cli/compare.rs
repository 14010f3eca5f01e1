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

/// Edits the result file at `path` as `edit` says.
fn edit(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut run: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut run);
    std::fs::write(path, serde_json::to_string(&run).unwrap()).unwrap();
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
    for c in compared {
        // harness.empty (0 ns) is below resolution; every other row is no change, and its ratio is
        // the ratio of the figures printed.
        if c["verdict"] == "below_resolution" {
            assert!(c["ratio"].is_null(), "{c}");
            continue;
        }
        assert_eq!(c["verdict"], "no_change", "{c}");
        assert_eq!(c["ratio"].as_f64().unwrap(), c["new_value"].as_f64().unwrap() / c["base_value"].as_f64().unwrap());
    }
    assert!(v[0]["comparison"]["differences"].as_array().unwrap().is_empty());
}

#[test]
fn a_slowed_result_is_slower_and_fails_the_gate_naming_its_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let b = run_with_samples(dir.path(), "b.json", Some("syscall.null"));
    let out = osprim().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("syscall.null ")).expect("a syscall.null line");
    assert!(line.contains("1.300") && line.contains("slower"), "{line}");
    assert!(text.contains("0 faster, 1 slower"), "{text}");

    let gate = osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "10"]).output().unwrap();
    assert_eq!(gate.status.code(), Some(1));
    let err = String::from_utf8_lossy(&gate.stderr);
    assert!(err.contains("regression: 1 of "), "{err}");
    assert!(err.contains("slower by more than 10 %"), "{err}");
    // The same generator: the slowed samples are the base's times 1.3, exactly.
    assert!(err.contains("  syscall.null: 19") && err.contains(" ns → 24"), "{err}");
    assert!(err.contains(" ns, ratio 1.300 ["), "{err}");
    assert!(err.contains("(+30.0 %), slower"), "{err}");

    // Nothing slower by 40 %, but rows the gate cannot decide (harness.empty below resolution,
    // the space.* rows' failed checks): undecided, each named, unless a share is allowed.
    let lenient = osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "40"]).output().unwrap();
    assert_eq!(lenient.status.code(), Some(4));
    let err = String::from_utf8_lossy(&lenient.stderr);
    assert!(err.contains("undecided: ") && err.contains("below resolution"), "{err}");
    assert!(err.lines().last().unwrap().starts_with("gate: undecided ("), "{err}");
    let allowed = osprim()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--fail-on-regression", "40", "--undecided-share", "100"])
        .output()
        .unwrap();
    assert_eq!(allowed.status.code(), Some(0), "{}", String::from_utf8_lossy(&allowed.stderr));
}

/// `path` with only the results `keep` says.
fn keep(path: &Path, keep: impl Fn(&Value) -> bool) {
    edit(path, |run| run["results"].as_array_mut().unwrap().retain(|r| keep(r)));
}

#[test]
fn the_gate_exits_0_only_when_it_decided_every_row_and_4_when_rows_are_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    // The rows a run against itself calls no change without marks.
    let out = osprim().arg("compare").arg(&a).arg(&a).args(["--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let clean: Vec<(Value, Value)> = v[0]["comparison"]["compared"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "no_change" && c["marks"].as_array().unwrap().is_empty())
        .map(|c| (c["id"].clone(), c["params"].clone()))
        .collect();
    assert!(clean.len() > 10, "{clean:?}");
    let is_clean = |r: &Value| clean.iter().any(|(id, params)| r["id"] == *id && r["params"] == *params);
    keep(&a, is_clean);
    let b = dir.path().join("b.json");
    std::fs::copy(&a, &b).unwrap();
    let gate = |extra: &[&str]| {
        osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "5"]).args(extra).output().unwrap()
    };
    let decided = gate(&[]);
    let err = String::from_utf8_lossy(&decided.stderr);
    assert_eq!(decided.status.code(), Some(0), "{err}");
    assert!(err.contains("gate: pass ("), "{err}");
    // Two rows whose rounds sit far apart in the new run: inconclusive, named, exit 4.
    edit(&b, |run| {
        for r in run["results"].as_array_mut().unwrap().iter_mut().take(2) {
            for (i, x) in r["samples"].as_array_mut().unwrap().iter_mut().enumerate() {
                let k = [0.9, 1.0, 1.1][i / 20];
                *x = serde_json::json!(x.as_f64().unwrap() * k);
            }
        }
    });
    let undecided = gate(&[]);
    let err = String::from_utf8_lossy(&undecided.stderr);
    assert_eq!(undecided.status.code(), Some(4), "{err}");
    let named: Vec<&str> = err.lines().filter(|l| l.starts_with("  ") && l.contains(", inconclusive")).collect();
    assert_eq!(named.len(), 2, "{err}");
    assert!(err.contains("undecided: 2 of "), "{err}");
    // Allowed a share that holds them: 0.
    assert_eq!(gate(&["--undecided-share", "50"]).status.code(), Some(0));
}

#[test]
fn a_slowed_row_on_other_cpus_is_named_with_its_placement() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let b = run_with_samples(dir.path(), "b.json", Some("lock.handoff"));
    let out = osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "10"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("  lock.handoff cpus=1,1 placement=same_cpu: "), "{err}");
    assert!(err.contains("  lock.handoff cpus=1,0 placement=cross_cpu: "), "{err}");
    assert!(err.contains("regression: 2 of "), "{err}");
}

#[test]
fn marked_rows_are_left_out_of_the_gate_and_named_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let b = run_with_samples(dir.path(), "b.json", Some("syscall.null"));
    edit(&b, |run| {
        let r = run["results"].as_array_mut().unwrap().iter_mut().find(|r| r["id"] == "syscall.null").unwrap();
        r["flags"] = serde_json::json!(["busy_cpu"]);
    });
    let gate = |extra: &[&str]| {
        osprim().arg("compare").arg(&a).arg(&b).args(["--fail-on-regression", "10"]).args(extra).output().unwrap()
    };
    // Left out, but not passed: undecided (exit 4), and named.
    let skip = gate(&[]);
    let err = String::from_utf8_lossy(&skip.stderr);
    assert_eq!(skip.status.code(), Some(4), "{err}");
    assert!(err.contains("undecided: ") && err.contains("  syscall.null: ") && err.contains("busy-cpu (new)"), "{err}");
    assert!(err.contains("untrustworthy, not judged"), "{err}");
    let judged = gate(&["--untrustworthy", "judge"]);
    assert_eq!(judged.status.code(), Some(1));
    // The fixture's space.* rows failed their checks: --untrustworthy fail fails on them too.
    let fail = gate(&["--untrustworthy", "fail"]);
    assert_eq!(fail.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&fail.stderr).contains("untrustworthy: check-failed (both)"));
    let table = String::from_utf8_lossy(&skip.stdout).to_string();
    let lines: Vec<&str> = table.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("syscall.null ")).expect("a syscall.null line");
    assert_eq!(lines[at + 1], "  ↳ busy-cpu (new)", "{table}");
}

#[test]
fn a_seed_run_against_an_adaptive_one_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    let b = run_with_samples(dir.path(), "b.json", Some("syscall.null"));
    edit(&b, |run| {
        run["config"]["method"] = "seed".into();
        for r in run["results"].as_array_mut().unwrap() {
            r["method"] = "seed".into();
        }
    });
    let out = osprim().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("different methods (base: adaptive, new: seed)") && err.contains("--allow-mismatch"), "{err}");
    assert!(!err.contains("panicked"));

    let out = osprim().arg("compare").arg(&a).arg(&b).args(["--allow-mismatch", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v[0]["comparison"];
    for r in c["compared"].as_array().unwrap() {
        assert!(r["ratio"].is_null() && r["ratio_ci95"].is_null(), "{r}");
        assert_ne!(r["verdict"], "faster");
        assert_ne!(r["verdict"], "slower");
    }
    let what: Vec<&str> = c["differences"].as_array().unwrap().iter().filter_map(|d| d["what"].as_str()).collect();
    assert!(what.contains(&"config.method"), "{what:?}");

    // The HTML report's comparison refuses them alike, and writes nothing.
    let page = dir.path().join("page.html");
    let out = osprim().arg("report").arg(&b).arg("--compare").arg(&a).arg("--html").arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("different methods") && err.contains("--allow-mismatch"), "{err}");
    assert!(!page.exists());
    let mut allowed = osprim();
    allowed.arg("report").arg(&b).arg("--compare").arg(&a).arg("--html").arg(&page).arg("--allow-mismatch");
    let out = allowed.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));
}

#[test]
fn gate_flags_need_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let a = run_with_samples(dir.path(), "a.json", None);
    for flags in [&["--fail-on-inconclusive"][..], &["--untrustworthy", "fail"], &["--undecided-share", "10"]] {
        let out = osprim().arg("compare").arg(&a).arg(&a).args(flags).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
    }
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

#[test]
fn base_history_pools_the_last_runs_of_the_host_and_says_when_it_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for i in 0..3 {
        let p = run_with_samples(&runs, &format!("run{i}.json"), None);
        edit(&p, |run| run["started_utc"] = format!("2026-11-20T0{i}:00:00Z").into());
    }
    let db = dir.path().join("h.db");
    let import = osprim().args(["history", "--import"]).arg(&runs).arg("--db").arg(&db).output().unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let new = run_with_samples(dir.path(), "new.json", Some("syscall.null"));
    edit(&new, |run| run["started_utc"] = "2026-11-21T00:00:00Z".into());
    let compare = |n: &str| {
        osprim()
            .arg("compare")
            .arg(&new)
            .args(["--base-history", n, "--format", "json", "--db"])
            .arg(&db)
            .output()
            .unwrap()
    };
    let out = compare("3");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v[0]["base"].as_str().unwrap().starts_with("the last 3 runs in "), "{}", v[0]["base"]);
    let compared = v[0]["comparison"]["compared"].as_array().unwrap();
    let null = compared.iter().find(|c| c["id"] == "syscall.null").unwrap();
    assert_eq!(null["verdict"], "slower", "{null}");
    // Fewer runs than asked, or a file gone: one line, non-zero.
    let out = compare("5");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("has 3 earlier run(s)") && err.lines().count() == 1, "{err}");
    std::fs::remove_file(runs.join("run1.json")).unwrap();
    let out = compare("3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is gone") && err.lines().count() == 1 && !err.contains("panicked"), "{err}");
    // Two files with --base-history, or one without: a usage mistake.
    let two = osprim().arg("compare").arg(&new).arg(&new).args(["--base-history", "1"]).output().unwrap();
    assert_eq!(two.status.code(), Some(2));
    let one = osprim().arg("compare").arg(&new).output().unwrap();
    assert_eq!(one.status.code(), Some(2));
}
