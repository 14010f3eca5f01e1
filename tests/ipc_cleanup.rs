//! Peers are always reaped and IPC objects always removed: after a normal run, after Ctrl-C in
//! the middle of an IPC benchmark, and when a peer process is killed from outside. This test
//! process makes itself a child subreaper, so any peer orphaned by osprim would become its
//! child and be seen. One test function: the checks must not overlap. Every wait is on
//! observable state (a peer exchanging messages, a file in the scratch directory), never a
//! fixed time.

mod common;

use common::{busy_peer, osprim, peers_of, wait_for};
use std::path::Path;
use std::process::Stdio;

/// System V message queues owned by this user, by id.
fn sysv_queues() -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid().to_string()).unwrap_or_default();
    let text = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(7) == Some(&uid.as_str())).then(|| f[1].to_string())
        })
        .collect()
}

/// POSIX queues osprim created, where the queue file system is mounted.
fn osprim_mqueues() -> Vec<String> {
    std::fs::read_dir("/dev/mqueue")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n: &String| n.starts_with("osprim-"))
        .collect()
}

/// No child of this process is left, not even a zombie.
fn assert_no_children(when: &str) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        Err(nix::errno::Errno::ECHILD) => {}
        other => panic!("{when}: a child or zombie is left behind: {other:?}"),
    }
}

fn assert_clean(when: &str, queues_before: &[String], tmp: &Path) {
    assert_no_children(when);
    let new: Vec<String> = sysv_queues().into_iter().filter(|q| !queues_before.contains(q)).collect();
    assert!(new.is_empty(), "{when}: System V queues left: {new:?}");
    assert!(osprim_mqueues().is_empty(), "{when}: POSIX queues left: {:?}", osprim_mqueues());
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "{when}: files left in TMPDIR: {left:?}");
}

/// Whether osprim (`pid`) is in the middle of a benchmark that forks or writes files: a
/// benchmark started a process, or its scratch directory (under `tmp`) holds a file.
fn mid_benchmark(pid: u32, tmp: &Path) -> bool {
    let scratch_busy = std::fs::read_dir(tmp)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().is_dir() && std::fs::read_dir(e.path()).map(|mut d| d.next().is_some()).unwrap_or(false));
    scratch_busy || !peers_of(pid).is_empty()
}

/// `osprim run --budget B --no-save --format json BENCH…` in the background, with its own
/// TMPDIR and its output captured.
fn spawn_run(budget: &str, benches: &[&str], tmp: &Path) -> std::process::Child {
    osprim()
        .args(["run", "--budget", budget, "--no-save", "--format", "json"])
        .args(benches)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn json_rows(stdout: &[u8]) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("one JSON document on stdout");
    v["results"].as_array().unwrap().clone()
}

#[test]
fn peers_and_ipc_objects_never_outlive_a_run() {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let queues_before = sysv_queues();
    let transports = [
        "ipc.pipe",
        "ipc.sysv_msg",
        "ipc.posix_mq",
        "ipc.unix_dgram",
        "ipc.tcp",
        "ipc.shm_ring",
        "ipc.io_uring",
        "ipc.io_uring_msg",
        "ctx",
    ];

    // 1. A normal run.
    let out = osprim()
        .args(["run", "--budget", "0.02", "--no-save", "--format", "json"])
        .args(transports)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_rows(&out.stdout);
    assert!(rows.iter().any(|r| r["params"]["peer"] == "process" && r["status"] != "skipped"));
    for r in &rows {
        assert!(r["status"] != "failed", "{}: {}", r["id"], r["reason"]);
    }
    assert_clean("after a normal run", &queues_before, tmp.path());

    // 2. Ctrl-C while a peer process is running.
    let child = spawn_run("2", &["ipc.sysv_msg", "ipc.posix_mq", "ipc.shm_ring", "ipc.io_uring"], tmp.path());
    let peer = wait_for(|| busy_peer(child.id(), 100));
    assert!(peer.is_some(), "a peer process exchanges messages");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    assert_clean("after Ctrl-C", &queues_before, tmp.path());

    // 3. Ctrl-C in the middle of the page-fault, transaction and memory benchmarks (a forked
    //    child for copy-on-write, files for cold faults and the recoverable segment).
    for bench in ["fault.cow", "fault.file", "txn", "space.process"] {
        // A budget long enough that each round is still sampling when Ctrl-C comes.
        let child = spawn_run("60", &[bench], tmp.path());
        let busy = wait_for(|| mid_benchmark(child.id(), tmp.path()).then_some(()));
        assert!(busy.is_some(), "{bench}: osprim starts measuring");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{bench}: {}", String::from_utf8_lossy(&out.stderr));
        assert_clean(&format!("after Ctrl-C in {bench}"), &queues_before, tmp.path());
    }

    // 4. The peer process killed from outside: that row fails with the reason, the run goes on.
    for bench in ["ipc.pipe", "ipc.sysv_msg", "ipc.io_uring"] {
        // One round, so that the peer killed is the one the row's whole measurement uses.
        let child = spawn_run("1", &["--rounds", "1", bench], tmp.path());
        let peer = wait_for(|| busy_peer(child.id(), 100)).expect("a peer process exchanges messages");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(peer), nix::sys::signal::Signal::SIGKILL).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{bench}: {}", String::from_utf8_lossy(&out.stderr));
        let rows = json_rows(&out.stdout);
        // Killed in its first round the row fails; in a later one it keeps the rounds before
        // and is flagged `round-failed`, the reason in its notes.
        let round_failed =
            |r: &&serde_json::Value| r["flags"].as_array().is_some_and(|f| f.iter().any(|f| f == "round-failed"));
        let failed: Vec<&serde_json::Value> =
            rows.iter().filter(|r| r["status"] == "failed" || round_failed(r)).collect();
        assert_eq!(failed.len(), 1, "{bench}: exactly the row whose peer died fails: {rows:?}");
        let why = if failed[0]["status"] == "failed" {
            failed[0]["reason"].as_str().unwrap().to_string()
        } else {
            failed[0]["notes"].to_string()
        };
        assert!(why.contains("peer"), "{why}");
        assert_eq!(failed[0]["params"]["peer"], "process");
        assert_eq!(rows.iter().filter(|r| r["id"] == bench).count(), 4, "{bench}: every placement still ran");
        assert_clean(&format!("after killing the peer of {bench}"), &queues_before, tmp.path());
    }
}
