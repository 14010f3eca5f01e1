//! `osprim ab` from the outside, with short budgets: bad input, set-up and tear-down around
//! every round of their side, a condition that cannot run the worker, the result file and its
//! formats, a signal in the middle, the gate's undecided status, duets, and the seed. No test
//! asserts a duration or a verdict that depends on the machine's speed (the slowdown that must
//! be found is `tests/ab.rs`).

use crate::common;
use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn osprim() -> Command {
    let mut c = Command::cargo_bin("osprim").expect("binary built");
    c.env("RUST_BACKTRACE", "1");
    c
}

/// Exactly one non-empty stderr line, no panic.
fn one_error_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one stderr line, got: {text}");
    assert!(!text.contains("panicked") && !text.contains("stack backtrace"), "{text}");
    lines[0].to_string()
}

/// `osprim ab ARGS… --quiet` in `dir`, quick: small budgets.
fn ab(dir: &Path, args: &[&str]) -> std::process::Output {
    osprim()
        .current_dir(dir)
        .env("TMPDIR", dir)
        .arg("ab")
        .args(args)
        .args(["--quiet", "--round-budget", "0.01"])
        .output()
        .expect("osprim runs")
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bad_input_is_one_line_and_a_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["nosuchthing", "--no-save"], "no benchmark matches 'nosuchthing'"),
        (&["syscall.null", "--b", "env 'X=1", "--no-save"], "unbalanced quotes"),
        (
            &["syscall.null", "--b", "no-such-prefix-osprim", "--no-save"],
            "'no-such-prefix-osprim' is not found on PATH",
        ),
        (&["syscall.null", "--b-bin", "/nonexistent/osprim", "--no-save"], "is not an executable file"),
        (&["syscall.null", "--duet", "--b-setup", "true", "--no-save"], "--duet runs A and B at the same time"),
        (&["syscall.null", "--b", "   ", "--no-save"], "--b is empty"),
    ];
    for (args, said) in cases {
        let out = ab(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let line = one_error_line(&out.stderr);
        assert!(line.contains(said), "{args:?}: {line}");
    }
    // clap's own checks: --check leaves B as A.
    let out = ab(dir.path(), &["syscall.null", "--check", "--b", "env", "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    assert!(!dir.path().join("osprim-results").exists(), "nothing saved");
}

#[test]
fn a_condition_that_cannot_run_the_worker_stops_at_once_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = ab(dir.path(), &["syscall.null", "--b", "false", "-o", "ab.json"]);
    assert_eq!(out.status.code(), Some(1));
    let line = one_error_line(&out.stderr);
    assert!(line.contains("B's worker did not start measuring") && line.contains("condition: false"), "{line}");
    assert!(!dir.path().join("ab.json").exists());
    // The default place: the file reserved at the start is gone again.
    let out = ab(dir.path(), &["syscall.null", "--b-setup", "echo broken >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(one_error_line(&out.stderr).contains("B's set-up 'echo broken >&2; exit 7' failed (exit 7): broken"));
    let left: Vec<_> = std::fs::read_dir(dir.path().join("osprim-results/ab")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn set_up_and_tear_down_run_around_every_round_of_their_side_and_the_file_holds_every_pair() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let setup = format!("echo setup >> {}", log.display());
    let teardown = format!("echo teardown >> {}", log.display());
    let out = ab(
        dir.path(),
        &[
            "syscall.null",
            "syscall.getpid",
            "--b-setup",
            &setup,
            "--b-teardown",
            &teardown,
            "--budget",
            "2",
            "--seed",
            "42",
            "--noise",
            "0.1",
            "-o",
            "ab.json",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = read(&dir.path().join("ab.json"));
    assert_eq!((v["kind"].as_str(), v["schema"].as_u64()), (Some("ab"), Some(1)));
    assert_eq!(v["b"]["setup"].as_str(), Some(setup.as_str()));
    assert_eq!(v["a"]["prefix"], serde_json::json!([]));
    assert_eq!(v["design"]["seed"].as_u64(), Some(42));
    assert_eq!(v["design"]["mode"].as_str(), Some("interleaved"));
    let pairs = v["pairs"].as_array().unwrap();
    assert!(!pairs.is_empty());
    // Blocks of two: ab ba or ba ab.
    for block in pairs.chunks(2).filter(|b| b.len() == 2) {
        assert_ne!(block[0]["order"], block[1]["order"], "{block:?}");
    }
    // One set-up and one tear-down per B round, in that order.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * pairs.len(), "{text}");
    assert!(lines.chunks(2).all(|c| c == ["setup", "teardown"]), "{text}");
    // Every row's pairs name pairs that exist, with a positive figure on each side.
    for row in v["rows"].as_array().unwrap() {
        let rp = row["pairs"].as_array().unwrap();
        assert!(!rp.is_empty() && rp.len() <= pairs.len(), "{row}");
        for p in rp {
            assert!(p["pair"].as_u64().unwrap() < pairs.len() as u64);
            assert!(p["a"].as_f64().unwrap() > 0.0 && p["b"].as_f64().unwrap() > 0.0);
        }
        let verdict = row["decision"]["verdict"].as_str().unwrap();
        assert!(["slower", "faster", "no_change", "inconclusive"].contains(&verdict), "{verdict}");
        if let Some(ci) = row["decision"]["ratio_ci95"].as_array() {
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            assert!(lo > 0.0 && lo <= hi, "intervals of a ratio stay positive: {ci:?}");
        }
        // Each side's rounds are in its run, with their samples.
        let id = row["id"].as_str().unwrap();
        for side in ["a_run", "b_run"] {
            let r = v[side]["results"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap();
            assert!(r["samples_per_round"].as_array().unwrap().len() >= rp.len(), "{side} {id}");
        }
    }
    // Shown in every format, from the file.
    let path = dir.path().join("ab.json");
    let show = |format: &str| osprim().arg("show").arg(&path).args(["--format", format]).output().unwrap();
    let csv = show("csv");
    assert!(csv.status.success());
    let head = String::from_utf8_lossy(&csv.stdout).lines().next().unwrap().to_string();
    for col in ["id", "params", "verdict", "ratio", "ratio_ci95_low", "ratio_ci95_high"] {
        assert!(head.split(',').any(|c| c == col), "{head}");
    }
    for format in ["table", "markdown", "latex", "json"] {
        let out = show(format);
        assert!(out.status.success() && !out.stdout.is_empty(), "{format}");
    }
    let table = String::from_utf8_lossy(&show("table").stdout).into_owned();
    assert!(table.contains("syscall.null") && table.contains("pairs"), "{table}");
    let html = dir.path().join("ab.html");
    let out = osprim().arg("report").arg(&path).arg("--html").arg(&html).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    // A run's commands refuse it in one line.
    let out = osprim().arg("compare").arg(&path).arg(&path).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(one_error_line(&out.stderr).contains("it is an A/B result of osprim ab"));
    // The same seed, the same order.
    let again = ab(dir.path(), &["syscall.null", "--budget", "1", "--seed", "42", "-o", "again.json"]);
    assert!(again.status.success());
    let orders = |v: &Value| v["pairs"].as_array().unwrap().iter().map(|p| p["order"].clone()).collect::<Vec<_>>();
    let (first, second) = (orders(&v), orders(&read(&dir.path().join("again.json"))));
    let n = first.len().min(second.len());
    assert_eq!(first[..n], second[..n]);
}

#[test]
fn a_gate_that_could_not_decide_says_undecided_and_names_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Two pairs cannot decide anything (ten at the fewest).
    let out = ab(
        dir.path(),
        &["syscall.null", "--check", "--budget", "0.001", "--fail-on-regression", "5", "--format", "json", "--no-save"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("undecided: 1 of 1 results not decided"), "{err}");
    assert!(err.lines().any(|l| l.trim_start().starts_with("syscall.null:") && l.ends_with("inconclusive")), "{err}");
    assert!(err.contains("A against A"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["design"]["check"], true);
    assert_eq!(v["a"]["prefix"], v["b"]["prefix"]);
}

#[test]
fn a_duet_runs_rows_that_need_both_cpus_interleaved_and_says_so() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: a duet needs two CPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = ab(dir.path(), &["syscall.null", "ipc.pipe", "--duet", "--budget", "2", "--format", "json", "--no-save"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["design"]["mode"], "duet");
    let cpus = v["design"]["duet_cpus"].as_array().unwrap().clone();
    for p in v["pairs"].as_array().unwrap() {
        let c = p["cpus"].as_array().unwrap();
        assert_ne!(c[0], c[1], "A and B on different CPUs");
        assert!(cpus.contains(&c[0]) && cpus.contains(&c[1]));
    }
    let rows = v["rows"].as_array().unwrap();
    let cross = rows.iter().find(|r| r["params"]["placement"] == "cross_cpu").expect("a cross-CPU row");
    assert_eq!(cross["duet"], false);
    assert!(cross["note"].as_str().unwrap().contains("needs both CPUs"), "{cross}");
    let null = rows.iter().find(|r| r["id"] == "syscall.null").unwrap();
    assert_eq!(null["duet"], true);
}

#[test]
fn a_signal_keeps_what_was_measured_runs_the_tear_down_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let file = dir.path().join("ab.json");
    let setup = format!("echo setup >> {}", log.display());
    let teardown = format!("echo teardown >> {}", log.display());
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args(["ab", "syscall", "--check", "--budget", "60", "--noise", "0.01", "--round-budget", "0.01"])
        .args(["--a-setup", &setup, "--a-teardown", &teardown, "--quiet", "-o"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Two pairs saved, then Ctrl-C.
    let saved = common::wait_for(|| {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).ok()?).ok()?;
        (v["pairs"].as_array()?.len() >= 2).then_some(())
    });
    assert!(saved.is_some(), "two pairs were not saved in time");
    common::signal(pid as i32, nix::sys::signal::Signal::SIGINT);
    let out = common::finish(child, "osprim ab at SIGINT");
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let v = read(&file);
    assert_eq!(v["partial"], true);
    assert!(v["pairs"].as_array().unwrap().len() >= 2);
    assert!(v["stopped"].as_str().unwrap().contains("interrupted"), "{}", v["stopped"]);
    let text = std::fs::read_to_string(&log).unwrap();
    let (setups, teardowns) = (text.matches("setup").count(), text.matches("teardown").count());
    assert_eq!(setups, teardowns, "every set-up has its tear-down: {text}");
    assert!(common::descendants_of(pid).is_empty());
}

#[test]
fn the_result_never_replaces_a_binary_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("other-osprim");
    std::fs::copy(assert_cmd::cargo::cargo_bin("osprim"), &bin).unwrap();
    let before = std::fs::read(&bin).unwrap();
    let target = bin.display().to_string();
    let out = ab(dir.path(), &["syscall.null", "--b-bin", &target, "-o", &target]);
    assert_ne!(out.status.code(), Some(0));
    assert!(one_error_line(&out.stderr).contains("condition B's binary"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&bin).unwrap(), before, "the binary is untouched");
}
