//! `osprim stress` and `osprim errortest` from outside: each runs clean for its duration
//! (60 s in CI, `OSPRIM_STABILITY_SECONDS` or 10 s elsewhere), saves and records its run,
//! and leaves nothing behind: no process (this binary is their subreaper), no file in its
//! private TMPDIR. Go!'s stability rows then show the run.

mod common;

use common::*;
use serde_json::Value;

/// How long each test runs.
fn seconds() -> u64 {
    match std::env::var("OSPRIM_STABILITY_SECONDS").ok().and_then(|s| s.parse().ok()) {
        Some(s) => s,
        None if std::env::var_os("CI").is_some() => 60,
        None => 10,
    }
}

fn runs_clean_and_leaves_nothing(test: &str) {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let (file, db) = (tmp.path().join("run.json"), tmp.path().join("h.db"));
    let duration = format!("{}s", seconds());
    let out = osprim()
        .args([test, "--duration", &duration, "--seed", "20261127", "-o"])
        .arg(&file)
        .arg("--db")
        .arg(&db)
        .env("TMPDIR", &scratch)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test}: {:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains(&format!("{test} (seed 20261127")) && stdout.contains("without a failure"), "{stdout}");

    let run: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let s = &run["stability"][0];
    assert_eq!((s["test"].as_str(), s["outcome"]["kind"].as_str()), (Some(test), Some("clean")), "{s}");
    assert!(s["clean_s"].as_f64().unwrap() >= seconds() as f64, "{s}");
    let operations = s["operations"].as_array().unwrap();
    assert!(!operations.is_empty() && operations.iter().map(|t| t["count"].as_u64().unwrap()).sum::<u64>() > 0);
    for i in s["invariants"].as_array().unwrap() {
        assert!(i["checked"].as_u64().unwrap() > 0, "never checked: {i}");
        assert_eq!(i["violated"].as_u64(), Some(0), "{i}");
    }
    assert!(!s["trend"].as_array().unwrap().is_empty());

    // Nothing left behind: no process, no scratch file.
    let me = std::process::id();
    assert!(wait_for(|| descendants_of(me).is_empty().then_some(())).is_some(), "left alive: {:?}", descendants_of(me));
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");

    // Recorded, and the seed view's stability row shows it.
    let history =
        osprim().args(["history", &format!("stability.{test}"), "--format", "csv", "--db"]).arg(&db).output().unwrap();
    let history = String::from_utf8_lossy(&history.stdout);
    assert_eq!(history.lines().filter(|l| l.contains(&format!("stability.{test}"))).count(), 1, "{history}");
    let papers = osprim().args(["papers", "--all-rows", "--format", "csv"]).arg(&file).output().unwrap();
    let papers = String::from_utf8_lossy(&papers.stdout);
    let row = papers.lines().find(|l| l.contains(&format!("stability.{test}"))).expect("Go!'s stability row");
    assert!(row.contains("longest run without a failure"), "{row}");
}

#[test]
fn stress_runs_clean_and_leaves_nothing() {
    runs_clean_and_leaves_nothing("stress");
}

#[test]
fn errortest_runs_clean_and_leaves_nothing() {
    runs_clean_and_leaves_nothing("errortest");
}
