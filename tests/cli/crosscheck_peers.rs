//! `osprim crosscheck` against peers that misbehave: fake `perf` and `cyclictest` on `PATH`
//! (before the real ones) that leave a `setsid` grandchild holding their output, hang, flood,
//! print absurd figures or escape sequences, or leave cyclictest's shared memory behind. Each
//! wait has a generous bound that tells "finished" from "hung"; no duration is asserted.

use crate::common::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// A directory holding fake `perf` and `cyclictest` scripts, first on the search path.
struct Fakes {
    dir: tempfile::TempDir,
}

impl Fakes {
    /// `perf` answers `perf version` with 6.1 (so the fork rows, perf ≥ 6.7, are not run) and
    /// runs the shell text `bench` otherwise; `cyclictest` runs `cyclic`. `{pids}` in either
    /// stands for [`Fakes::pids`].
    fn new(bench: &str, cyclic: &str) -> Fakes {
        let fakes = Fakes { dir: tempfile::tempdir().unwrap() };
        let pids = fakes.pids().display().to_string();
        let write = |name: &str, body: &str| {
            let p = fakes.dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{}\n", body.replace("{pids}", &pids))).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        write("perf", &format!("if [ \"$1\" = version ]; then echo 'perf version 6.1.0'; exit 0; fi\n{bench}"));
        write("cyclictest", cyclic);
        fakes
    }

    fn path(&self) -> String {
        format!("{}:/usr/bin:/bin", self.dir.path().display())
    }

    /// Where the scripts write the pids of what they leave behind.
    fn pids(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    /// Kills what the scripts left (their `setsid` grandchildren).
    fn kill_left(&self) {
        for pid in std::fs::read_to_string(self.pids()).unwrap_or_default().lines() {
            if let Ok(pid) = pid.trim().parse::<i32>() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}

impl Drop for Fakes {
    fn drop(&mut self) {
        self.kill_left();
    }
}

/// `osprim crosscheck --quick --format json -q` with the fakes, in the background.
fn start(fakes: &Fakes, format: &str) -> std::process::Child {
    osprim()
        .args(["crosscheck", "--quick", "--format", format, "-q", "--color", "never"])
        .env("PATH", fakes.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn rows(out: &std::process::Output) -> Vec<Value> {
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    doc["rows"].as_array().expect("rows").clone()
}

fn reason(row: &Value) -> String {
    row["outcome"]["not_compared"]["reason"].as_str().unwrap_or_default().to_string()
}

fn perf_rows(rows: &[Value]) -> Vec<&Value> {
    rows.iter().filter(|r| r["peer"].as_str().unwrap_or("").contains(" perf ")).collect()
}

fn have_taskset() -> bool {
    Path::new("/usr/bin/taskset").exists() || Path::new("/bin/taskset").exists()
}

const CYCLIC_GARBAGE: &str = "echo garbage; exit 1";

#[test]
fn a_setsid_grandchild_holding_the_peers_output_does_not_hang_crosscheck() {
    if !have_taskset() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    // The grandchild leaves the group and keeps stdout; perf itself prints its figure and exits.
    let bench = "setsid sh -c 'echo $$ >> {pids}; exec sleep 100000' &\necho '   0.2 usecs/op'";
    let fakes = Fakes::new(bench, CYCLIC_GARBAGE);
    let out = finish(start(&fakes, "json"), "setsid grandchild");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = rows(&out);
    let syscall = rows.iter().find(|r| r["primitive"] == "getppid system call").expect("the getppid row");
    assert!(syscall["outcome"]["compared"]["ratio"].as_f64().is_some(), "{syscall}");
}

#[test]
fn sigterm_stops_crosscheck_while_a_peer_hangs() {
    if !have_taskset() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    let bench = "setsid sh -c 'echo $$ >> {pids}; exec sleep 100000' &\necho $$ >> {pids}\nexec sleep 100000";
    let fakes = Fakes::new(bench, CYCLIC_GARBAGE);
    let child = start(&fakes, "json");
    // Once perf bench is running, SIGTERM.
    wait_for(|| (std::fs::read_to_string(fakes.pids()).unwrap_or_default().lines().count() >= 2).then_some(()))
        .expect("the fake perf started");
    signal(child.id() as i32, nix::sys::signal::Signal::SIGTERM);
    let out = finish(child, "SIGTERM");
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_hanging_peer_costs_one_deadline_not_one_per_run() {
    if !have_taskset() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    let fakes = Fakes::new("echo $$ >> {pids}\nexec sleep 100000", CYCLIC_GARBAGE);
    let out = finish(start(&fakes, "json"), "hanging perf");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = rows(&out);
    let perf = perf_rows(&rows);
    assert!(reason(perf[0]).contains("took longer than"), "{}", reason(perf[0]));
    for row in &perf[1..] {
        let why = reason(row);
        assert!(why.contains("not run again") || why.contains("has no '"), "{why}");
    }
    // Only the first run was started: one pid written.
    assert_eq!(std::fs::read_to_string(fakes.pids()).unwrap_or_default().lines().count(), 1);
}

#[test]
fn a_flooding_peer_is_stopped_and_the_row_says_so() {
    if !have_taskset() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    let fakes = Fakes::new("exec yes 0123456789012345678901234567890123456789", CYCLIC_GARBAGE);
    let out = finish(start(&fakes, "json"), "flooding perf");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for row in perf_rows(&rows(&out)) {
        let why = reason(row);
        assert!(why.contains("printed more than 1024 KiB and was stopped") || why.contains("has no '"), "{why}");
    }
}

#[test]
fn absurd_peer_figures_are_refused_not_printed() {
    if !have_taskset() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    let fakes = Fakes::new("echo '1e300 usecs/op'; echo 'Averaged 1e-300 operations/sec'", CYCLIC_GARBAGE);
    let out = finish(start(&fakes, "json"), "absurd perf");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for row in perf_rows(&rows(&out)) {
        let why = reason(row);
        assert!(
            why.contains("absurd figure") || why.contains("not a positive finite number") || why.contains("has no '"),
            "{why}"
        );
        assert!(!row.to_string().contains("e303") && !row.to_string().contains("e+303"), "{row}");
    }
}

#[test]
fn cyclictest_shared_memory_left_behind_is_removed() {
    if !have_taskset() || !Path::new("/dev/shm").is_dir() {
        eprintln!("skipped: no taskset (Debian package util-linux) or no /dev/shm");
        return;
    }
    // A cyclictest that dies without cleaning up (as one killed by SIGKILL would).
    let cyclic = "echo $$ >> {pids}\n: > /dev/shm/cyclictest$$\necho garbage; exit 1";
    let fakes = Fakes::new("echo garbage; exit 1", cyclic);
    let out = finish(start(&fakes, "json"), "cyclictest leftover");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let started = std::fs::read_to_string(fakes.pids()).unwrap_or_default();
    assert!(!started.is_empty(), "the fake cyclictest ran");
    for pid in started.lines() {
        let left = PathBuf::from(format!("/dev/shm/cyclictest{}", pid.trim()));
        let there = left.exists();
        let _ = std::fs::remove_file(&left);
        assert!(!there, "{} left behind", left.display());
    }
}
