//! The journal from the outside: what a killed run leaves, `osprim finish`, a second run on
//! the same output, stale scratch directories. Every wait is on state, with a deadline; no
//! test asserts a duration.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("osprim")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A long run of the syscall family saving to `result`, its scratch space in `tmp`.
fn start_long_run(result: &Path, tmp: &Path) -> Child {
    Command::new(bin())
        .args(["run", "--budget", "20", "syscall", "--output"])
        .arg(result)
        .env("TMPDIR", tmp)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most a minute) until the journal of `result` holds `n` measurements.
fn wait_for_outcomes(result: &Path, n: usize) {
    let journal = store::journal::path_for(result);
    let count = || std::fs::read_to_string(&journal).map(|j| j.matches("{\"kind\":\"outcome\"").count()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while count() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(count() >= n, "the journal holds {n} measurement(s)");
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_killed_run_leaves_a_journal_that_finish_turns_into_the_result() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let result = work.path().join("r.json");
    let mut child = start_long_run(&result, tmp.path());
    wait_for_outcomes(&result, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(entries(work.path()), ["r.json", "r.json.journal"]);
    assert_eq!(read_json(&result)["results"].as_array().unwrap().len(), 0, "the result file holds the start");

    // A new run to the same name is refused before it measures.
    let again = Command::new(bin()).args(["run", "--quick", "syscall.null", "--output"]).arg(&result).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("osprim finish"), "{stderr}");

    // finish: the rows measured before the kill, a partial run, the journal gone.
    let out = Command::new(bin()).arg("finish").arg(&result).env("RUST_BACKTRACE", "1").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("syscall."), "the table is printed");
    let v = read_json(&result);
    assert_eq!(v["partial"], true);
    assert!(v["finished_utc"].is_null());
    let rows = v["results"].as_array().unwrap();
    assert!(!rows.is_empty(), "the measured rows are back");
    assert!(rows.iter().any(|r| ["ok", "advisory", "untrustworthy"].iter().any(|s| r["status"] == *s)));
    assert_eq!(entries(work.path()), ["r.json"]);

    // The killed run's scratch directory goes with the next run.
    assert_eq!(entries(tmp.path()).len(), 1, "SIGKILL left the scratch directory");
    let next = Command::new(bin())
        .args(["run", "--quick", "harness.empty", "--no-save"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(next.status.success());
    assert!(entries(tmp.path()).is_empty(), "stale scratch removed: {:?}", entries(tmp.path()));

    // Nothing left to finish.
    let none = Command::new(bin()).arg("finish").arg(&result).env("RUST_BACKTRACE", "1").output().unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no journal"));
}

#[test]
fn two_runs_never_write_one_file() {
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let result = work.path().join("r.json");
    let child = start_long_run(&result, tmp.path());
    wait_for_outcomes(&result, 1);
    let second = Command::new(bin())
        .args(["run", "--quick", "syscall.null", "--output"])
        .arg(&result)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("another osprim run is writing"), "{stderr}");
    // finish refuses a live run's journal too.
    let finish = Command::new(bin()).arg("finish").arg(&result).output().unwrap();
    assert_eq!(finish.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&finish.stderr).contains("another osprim run is writing"));

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(read_json(&result)["partial"], true);
    assert_eq!(entries(work.path()), ["r.json"], "the journal is removed once the file is saved");
}

#[test]
fn finish_refuses_what_is_not_a_journal() {
    let work = tempfile::tempdir().unwrap();
    let result = work.path().join("r.json");
    for content in
        [&b""[..], b"not json\n", b"{\"kind\":\"slot\",\"row\":0}\n", b"{\"kind\":\"start\",\"journal\":99}\n"]
    {
        std::fs::write(store::journal::path_for(&result), content).unwrap();
        let out = Command::new(bin()).arg("finish").arg(&result).env("RUST_BACKTRACE", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("is not an osprim journal"), "{stderr}");
        assert!(!result.exists(), "nothing written");
    }
}
