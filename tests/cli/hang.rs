//! A stopped or lost peer never hangs a run, Ctrl-C acts in the middle of a sample, and no
//! System V object or process of a run outlives it, even after SIGKILL. Each test watches one
//! osprim process from outside (/proc) and touches only its own processes: the tests run in
//! parallel. Every wait is on observable state; no test asserts a duration beyond generous
//! bounds that tell "acted on" from "waited for the deadline".

use crate::common::*;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

fn rows(stdout: &[u8]) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("one JSON document on stdout");
    v["results"].as_array().expect("results").clone()
}

/// Every process in `pids` ends (as our orphans we reap them).
fn assert_all_gone(pids: &[i32], when: &str) {
    for &p in pids {
        assert!(wait_for(|| gone(p).then_some(())).is_some(), "{when}: process {p} of the run is left");
    }
}

#[test]
fn a_stopped_peer_fails_its_row_and_the_run_goes_on() {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    // One round of 2 s: the deadline is 4 × 2 s; the row is long enough to catch its peer.
    let args = ["run", "--budget", "2", "--rounds", "1", "--no-save", "--format", "json", "ipc.pipe", "ipc.eventfd"];
    let child = spawn(&args, tmp.path());
    let peer = wait_for(|| busy_peer(child.id(), 1000)).expect("a peer process exchanges messages");
    signal(peer, Signal::SIGSTOP);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A failed row is data, not an error: the run succeeds.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let rows = rows(&out.stdout);
    let failed: Vec<_> = rows.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "exactly the row whose peer stopped fails: {rows:?}");
    let why = failed[0]["reason"].as_str().unwrap_or_default();
    assert!(why.contains("the peer did not answer within 8.0 s (stopped, or a message was lost)"), "{why}");
    assert_eq!(failed[0]["params"]["peer"], "process");
    // Every later variant and benchmark still ran.
    assert_eq!(rows.iter().filter(|r| r["id"] == "ipc.pipe").count(), 4, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r["id"] == "ipc.eventfd" && r["status"] != "failed").count(), 4, "{rows:?}");
    assert_all_gone(&[peer], "after the stopped peer's row");
}

#[test]
fn ctrl_c_with_a_stopped_peer_saves_a_partial_result_and_exits_130() {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let result = tmp.path().join("partial.json");
    let result_arg = result.to_string_lossy().into_owned();
    // Rounds of 10 s: the deadline (40 s) is far off, so a prompt exit is the interrupt's doing.
    let args = ["run", "--quick", "--budget", "30", "--output", &result_arg, "ipc.pipe"];
    let child = spawn(&args, tmp.path());
    let osprim_pid = child.id();
    let peer = wait_for(|| busy_peer(osprim_pid, 1000)).expect("a peer process exchanges messages");
    signal(peer, Signal::SIGSTOP);
    assert!(wait_for(|| (state(peer) != Some('R') && state(peer) != Some('S')).then_some(())).is_some());
    let mut seen = descendants_of(osprim_pid);
    seen.push(peer);
    let interrupted = Instant::now();
    signal(osprim_pid as i32, Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    let took = interrupted.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(took < Duration::from_secs(20), "exited {took:?} after Ctrl-C: the blocked sample was not interrupted");
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).expect("a result file")).unwrap();
    assert_eq!(saved["partial"], true);
    let results = saved["results"].as_array().expect("results");
    assert!(results.iter().any(|r| r["id"] == "ipc.pipe"), "{saved}");
    // The file reads back.
    let back = osprim().args(["seeds", &result_arg]).output().unwrap();
    assert!(back.status.success(), "{}", String::from_utf8_lossy(&back.stderr));
    assert_all_gone(&seen, "after Ctrl-C");
}

#[test]
fn sigkill_leaves_no_system_v_object_and_no_process() {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let args = ["run", "--budget", "2", "--rounds", "1", "--no-save", "ipc.sysv_msg", "xfer.sysv_msg"];
    let child = spawn(&args, tmp.path());
    let osprim_pid = child.id();
    // A queue in use between osprim and a peer process (so a peer, the janitor and the queue
    // are all there to be left behind).
    let (queue, family) = wait_for(|| {
        let kids = descendants_of(osprim_pid);
        let q = *sysv_objects_of("msg", &kids).first()?;
        Some((q, kids))
    })
    .expect("a System V queue used by a peer process");
    let mut family = family;
    family.extend(descendants_of(osprim_pid));
    let mut everyone = family.clone();
    everyone.push(osprim_pid as i32);
    signal(osprim_pid as i32, Signal::SIGKILL);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), None, "killed");
    assert!(
        wait_for(|| (!sysv_listed("msg", queue)).then_some(())).is_some(),
        "System V queue {queue} outlived a SIGKILLed osprim"
    );
    assert_all_gone(&family, "after SIGKILL");
    assert!(sysv_objects_of("msg", &everyone).is_empty(), "queues of the run are left");
    assert!(sysv_objects_of("shm", &everyone).is_empty(), "shared memory segments of the run are left");
}
