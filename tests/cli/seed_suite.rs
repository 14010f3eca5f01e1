//! The bare `osprim` (the seed suite) and Go!'s stability rows: after its rounds it runs a
//! short stress test and a short error test (1 s each with `--quick`), counted in its plan
//! line within its bound, kept in its result file marked short, every check of theirs made;
//! the seed view then shows them as short tests. A Ctrl-C during them keeps what was measured.
//! Each run is `osprim --quick` in a temporary directory of its own (about 15 s here).

use crate::common::*;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

/// The one result file the run in `dir` saved.
fn result_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("osprim-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn the_bare_run_records_a_short_stress_and_error_test_and_the_seed_view_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let out = osprim().arg("--quick").current_dir(dir.path()).env("TMPDIR", &scratch).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);

    // The plan line counts them, and the whole stays within the seed suite's bound of 50 s.
    let plan = stderr.split("\n[").next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(plan.contains("then a short stress test and error test of 1 s each (Go!'s stability rows)"), "{plan}");
    let in_all: u64 = plan
        .split_once(" s in all")
        .and_then(|(before, _)| before.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no whole bound in the plan line: {plan}"));
    assert!(in_all <= 50, "{plan}");
    for test in ["stress test", "error test"] {
        assert!(stderr.contains(&format!("short {test}: clean: ")), "{test}:\n{stderr}");
    }
    assert!(stdout.contains("stress, a short test of the seed suite (seed "), "{stdout}");

    // The result file has both, marked short, clean for their second with every check made.
    let file = result_file(dir.path());
    let run: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(!run["results"].as_array().unwrap().is_empty());
    let stability = run["stability"].as_array().unwrap();
    let tests: Vec<&str> = stability.iter().map(|s| s["test"].as_str().unwrap()).collect();
    assert_eq!(tests, ["stress", "errortest"]);
    for s in stability {
        assert_eq!((s["short"].as_bool(), s["requested_s"].as_f64()), (Some(true), Some(1.0)), "{s}");
        assert_eq!(s["outcome"]["kind"].as_str(), Some("clean"), "{s}");
        assert!(s["clean_s"].as_f64().unwrap() >= 1.0, "{s}");
        let invariants = s["invariants"].as_array().unwrap();
        assert!(!invariants.is_empty());
        for i in invariants {
            assert!(i["checked"].as_u64().unwrap() > 0, "never checked: {i}");
            assert_eq!(i["violated"].as_u64(), Some(0), "{i}");
        }
    }

    // The seed view shows each as this run's short test, its seconds against the paper's days.
    let papers = osprim()
        .args(["papers", "--all-rows", "--format", "csv"])
        .arg(&file)
        .current_dir(dir.path())
        .env("TMPDIR", &scratch)
        .output()
        .unwrap();
    let papers = String::from_utf8_lossy(&papers.stdout);
    for test in ["stress", "errortest"] {
        let row = papers.lines().find(|l| l.contains(&format!(",stability.{test},"))).expect("Go!'s stability row");
        assert!(row.contains(",measured,"), "{row}");
        assert!(
            row.contains("this run's short test (the seed suite's): 1.") && row.contains("against the paper's 4 days"),
            "{row}"
        );
    }
}

/// A Ctrl-C during the short stress test ends it and the run: the result file keeps the
/// rounds' results and the stress test as interrupted, clean until then, and no error test.
#[test]
fn ctrl_c_during_the_short_tests_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let mut child = osprim()
        .arg("--quick")
        .current_dir(dir.path())
        .env("TMPDIR", &scratch)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let drain = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let lines = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let began = Instant::now();
    let mut seen = Vec::new();
    loop {
        let left = PATIENCE.saturating_sub(began.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("short stress test: 1 s (osprim stress") => break,
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the short stress test never started:\n{}", seen.join("\n"));
            }
        }
    }
    signal(child.id() as i32, nix::sys::signal::Signal::SIGINT);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if began.elapsed() > 2 * PATIENCE {
            let _ = child.kill();
            panic!("osprim did not end after Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = (drain.join(), lines.join());
    assert_eq!(status.code(), Some(130), "{status:?}");

    let run: Value = serde_json::from_slice(&std::fs::read(result_file(dir.path())).unwrap()).unwrap();
    assert_eq!(run["partial"].as_bool(), Some(true));
    assert!(!run["results"].as_array().unwrap().is_empty(), "the rounds' results are kept");
    let stability = run["stability"].as_array().unwrap();
    assert_eq!(stability.len(), 1, "no error test after the Ctrl-C: {stability:?}");
    let s = &stability[0];
    assert_eq!((s["test"].as_str(), s["short"].as_bool()), (Some("stress"), Some(true)), "{s}");
    assert_eq!(s["outcome"]["kind"].as_str(), Some("interrupted"), "{s}");
    assert_eq!(s["clean_s"].as_f64(), s["outcome"]["at_s"].as_f64(), "clean until the stop: {s}");
}
