//! `osprim crosscheck` from the outside: for real against the peers installed here (skipped,
//! saying why, where neither perf nor cyclictest is), and with a search path lacking them.
//! No test asserts a duration or a ratio's value; the ratio's interval is checked to hold it.

use assert_cmd::Command;
use serde_json::Value;

fn osprim() -> Command {
    let mut c = Command::cargo_bin("osprim").expect("binary built");
    c.env("RUST_BACKTRACE", "1");
    c
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// The rows of `osprim crosscheck … --format json`.
fn rows(out: &std::process::Output) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    doc["rows"].as_array().expect("rows").clone()
}

fn reason(row: &Value) -> Option<&str> {
    row["outcome"]["not_compared"]["reason"].as_str()
}

#[test]
fn quick_crosscheck_prints_a_ratio_for_every_primitive_whose_peer_is_here() {
    if !on_path("perf") && !on_path("cyclictest") {
        eprintln!("skipped: neither perf (Debian package linux-perf) nor cyclictest (rt-tests) is installed");
        return;
    }
    let out = osprim().args(["crosscheck", "--quick", "--format", "json", "-q"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let rows = rows(&out);
    assert!(rows.len() >= 5, "{rows:?}");
    let mut compared = 0;
    for row in &rows {
        let name = row["primitive"].as_str().unwrap_or("?");
        match reason(row) {
            // Only an absent peer or a subcommand its version lacks may leave a row without a ratio.
            Some(why) => assert!(
                why.contains("is not installed (Debian package")
                    || why.contains("has no '")
                    || why.contains("refuses to run without real-time scheduling"),
                "{name}: not compared: {why}"
            ),
            None => {
                let c = &row["outcome"]["compared"];
                let ratio = c["ratio"].as_f64().expect("a ratio");
                assert!(ratio.is_finite() && ratio > 0.0, "{name}: {c}");
                for k in ["peer_before_ns", "peer_after_ns", "osprim_ns"] {
                    assert!(c[k].as_f64().is_some_and(|v| v > 0.0), "{name}: {k} in {c}");
                }
                // The ratio carries its interval, which holds it, and a reading of it.
                let ci: Vec<f64> =
                    c["ratio_ci95"].as_array().expect("an interval").iter().filter_map(Value::as_f64).collect();
                assert!(ci.len() == 2 && ci[0] <= ratio && ratio <= ci[1], "{name}: {c}");
                let agreement = c["agreement"].as_str().unwrap_or("");
                assert!(["within", "beyond", "inconclusive"].contains(&agreement), "{name}: {c}");
                assert_eq!(c["ratio_flagged"].as_bool(), Some(agreement == "beyond"), "{name}: {c}");
                compared += 1;
            }
        }
        let peer = row["peer"].as_str().unwrap_or("");
        let tool = if peer.contains(" perf ") { "perf" } else { "cyclictest" };
        if on_path(tool) && reason(row).is_some_and(|r| r.contains("is not installed")) {
            panic!("{name}: {tool} is installed, yet: {:?}", reason(row));
        }
    }
    assert!(compared > 0);
}

#[test]
fn absent_peers_are_named_with_their_packages() {
    // A search path holding taskset alone: nothing is measured, every row says what to install.
    let dir = tempfile::tempdir().unwrap();
    if let Some(taskset) = ["/usr/bin/taskset", "/bin/taskset"].iter().find(|p| std::path::Path::new(p).exists()) {
        std::os::unix::fs::symlink(taskset, dir.path().join("taskset")).unwrap();
    }
    let out =
        osprim().args(["crosscheck", "--quick", "--format", "json", "-q"]).env("PATH", dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for row in rows(&out) {
        let why = reason(&row).expect("no peer: not compared");
        let peer = row["peer"].as_str().unwrap_or("");
        let want = if peer.contains(" cyclictest ") {
            "cyclictest is not installed (Debian package rt-tests)"
        } else {
            "perf is not installed (Debian package linux-perf)"
        };
        assert!(why.contains(want), "{peer}: {why}");
    }
    let table = osprim().args(["crosscheck", "--quick", "--color", "never"]).env("PATH", dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("not compared: perf is not installed (Debian package linux-perf)"), "{text}");
}
