//! Resource limits from the outside: an address-space limit (`ulimit -v`) never aborts a run;
//! a benchmark that cannot get its memory or threads says so on its row, and running out
//! altogether stops the run cleanly with what it measured.

use std::process::Command;

/// Runs osprim under `ulimit -v <kib>` in `dir`.
fn under_limit(kib: u32, args: &str, dir: &std::path::Path) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {kib}; exec '{}' {args}", bin.display()))
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .env("TMPDIR", dir)
        .output()
        .unwrap()
}

fn no_abort(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation of"), "{stderr}");
    assert!(out.status.code().is_some(), "killed by a signal: {:?} {stderr}", out.status);
    stderr
}

#[test]
fn threads_that_cannot_be_made_are_said_on_the_row() {
    let work = tempfile::tempdir().unwrap();
    let out = under_limit(60_000, "run --quick space.thread --output r.json", work.path());
    let stderr = no_abort(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join("r.json")).unwrap()).unwrap();
    let row = &v["results"][0];
    assert_eq!(row["id"], "space.thread");
    let notes = row["notes"].to_string();
    // Under the limit the row either made every thread or says why it made fewer.
    assert!(
        notes.contains("thread creation failed") || row["status"] != "failed" || row["reason"].is_string(),
        "the row says why it made fewer objects: {notes}"
    );
    let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["r.json"], "no scratch directory or journal left");
}

#[test]
fn running_out_of_address_space_stops_the_run_cleanly() {
    // Lower limits until the run runs short (where that happens depends on the build and
    // libc); every outcome on the way must be clean: a full result, or a partial one with one
    // error line, or one error line before measuring.
    let work = tempfile::tempdir().unwrap();
    for kib in (14_000..=40_000).rev().step_by(2_000) {
        let out = under_limit(kib, "run --quick syscall.null --tail --rounds 20 --output r.json", work.path());
        let Some(code) = out.status.code() else {
            // glibc itself may give up (e.g. "failed to register TLS destructor") at a limit
            // too low to start a thread; nothing Rust runs can prevent that.
            break;
        };
        let stderr = no_abort(&out);
        let result = work.path().join("r.json");
        match code {
            0 => assert!(result.exists()),
            1 if stderr.contains("memory ran short") => {
                let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
                assert_eq!(v["partial"], true, "{stderr}");
                break;
            }
            // Too little room even to start: one error line, before measuring.
            1 => {
                assert_eq!(stderr.lines().count(), 1, "{stderr}");
                break;
            }
            other => panic!("exit {other}: {stderr}"),
        }
        let _ = std::fs::remove_file(&result);
    }
}

#[test]
fn no_thread_to_be_had_is_one_error_line() {
    // `ulimit -u 1`: the process count of the user is already at the limit, so no thread can
    // be made. Root is exempt from the limit, so as root the run drops to `nobody` first.
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let is_root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap();
    let script = format!("ulimit -u 1; exec '{}' run --quick syscall.null --no-save", bin.display());
    let mut cmd = if is_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c", &script]);
        c
    } else {
        let mut c = Command::new("bash");
        c.args(["-c", &script]);
        c
    };
    let Ok(out) = cmd.current_dir("/").env("RUST_BACKTRACE", "1").env("TMPDIR", "/tmp").output() else {
        eprintln!("setpriv is not installed: skipped");
        return;
    };
    let stderr = no_abort(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
}

#[test]
fn a_result_name_that_is_not_utf8_is_fine() {
    use std::os::unix::ffi::OsStrExt;
    let work = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"r\xff\xfe.json");
    let out = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .args(["run", "--quick", "harness.empty", "--output"])
        .arg(name)
        .current_dir(work.path())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = no_abort(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(work.path().join(name)).unwrap()).unwrap();
    assert_eq!(v["results"][0]["id"], "harness.empty");
}

#[test]
fn the_budget_bounds_a_benchmark_whatever_the_size() {
    // 64 MiB messages take tens of milliseconds each and a second to set up: far more than a
    // 0.05 s budget allows. Each row keeps to a few rounds and says why.
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .args([
            "run",
            "ipc.pipe",
            "--sizes",
            "64M",
            "--budget",
            "0.05",
            "--rounds",
            "5",
            "--format",
            "json",
            "--no-save",
        ])
        .env("RUST_BACKTRACE", "1")
        .current_dir(work.path())
        .output()
        .unwrap();
    let stderr = no_abort(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        let rounds = r["samples_per_round"].as_array().map_or(0, |a| a.len());
        assert!((1..5).contains(&rounds), "{}: {rounds} rounds", r["params"]);
        assert!(r["notes"].to_string().contains("of 5 rounds"), "{}", r["notes"]);
        let samples = r["samples"].as_array().unwrap().len();
        assert!(samples >= 3, "a few samples all the same: {samples}");
    }
}
