//! Each round of a run measures in a worker process of its own (`execution`): distinct
//! processes with their layouts recorded, one outcome per round; a worker killed from outside
//! fails the benchmark it was measuring for that round, says how it ended, and the run goes
//! on with a new worker. This binary makes itself a child subreaper, so that nothing the run
//! leaves alive goes unseen.

mod common;

use common::*;
use nix::sys::signal::Signal;
use std::collections::BTreeSet;

fn result(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("a result file")).expect("JSON")
}

#[test]
fn every_round_is_a_worker_process_with_its_layout_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("r.json");
    let out = osprim()
        .args(["run", "--quick", "syscall.null", "--rounds", "3", "-o"])
        .arg(&file)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v = result(&file);
    let execs = v["executions"].as_array().expect("executions");
    assert_eq!(execs.len(), 3, "{execs:?}");
    let pids: BTreeSet<u64> = execs.iter().map(|e| e["pid"].as_u64().expect("a pid")).collect();
    assert_eq!(pids.len(), 3, "three processes: {execs:?}");
    for (i, e) in execs.iter().enumerate() {
        assert_eq!(e["round"], i, "{e}");
        assert_eq!(e["in_process"], false, "{e}");
        assert_eq!(e["ended"], "exit 0", "{e}");
        assert_eq!(e["outcomes"], 1, "{e}");
        for k in ["env_pad_bytes", "heap_offset_bytes", "heap_blocks"] {
            assert!(e[k].as_u64().is_some(), "{k} recorded: {e}");
        }
        assert!(e["overhead_ticks"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
    }
    let row = &v["results"][0];
    assert_eq!(row["id"], "syscall.null");
    assert_eq!(row["samples_per_round"].as_array().map(Vec::len), Some(3), "{row}");
    // Nothing is left: no scratch directory, no journal.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["r.json"], "{left:?}");
}

#[test]
fn a_declared_sampling_override_is_applied_in_the_workers_and_recorded_in_its_row_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("o.json");
    let out = osprim()
        .args(["run", "--quick", "--rounds", "2", "--budget", "0.1", "lib.dlopen.init", "syscall.null", "-o"])
        .arg(&file)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = result(&file);
    let rows = v["results"].as_array().expect("rows");
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("no {id} row: {rows:?}"));
    let dlopen = row("lib.dlopen.init");
    if dlopen["status"] == "skipped" {
        assert!(dlopen.get("sampling").is_none(), "nothing sampled under it: {dlopen}");
    } else {
        assert_eq!(dlopen["sampling"], serde_json::json!({ "batch": 1 }), "{dlopen}");
        assert_eq!(dlopen["iterations_per_sample"], 1, "one child per sample, as declared: {dlopen}");
    }
    assert!(row("syscall.null").get("sampling").is_none(), "no override, no field");
}

#[test]
fn a_killed_worker_fails_its_benchmark_for_that_round_and_the_run_goes_on() {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("k.json");
    let file_arg = file.to_string_lossy().into_owned();
    let args = ["run", "--rounds", "2", "--budget", "4", "--format", "json", "-o", &file_arg, "ipc.pipe"];
    let child = spawn(&args, tmp.path());
    let run = child.id();
    // A peer process in full swing: the worker is in the middle of a benchmark.
    let peer = wait_for(|| busy_peer(run, 100)).expect("a peer process exchanges messages");
    let worker = children_of(run).into_iter().find(|&c| is_worker(c)).expect("a worker process");
    assert!(descendants_of(worker as u32).contains(&peer), "the peer is the worker's");
    signal(worker, Signal::SIGKILL);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "a failed round is data, not an error: {stderr}");
    let v = result(&file);
    let execs = v["executions"].as_array().expect("executions");
    let killed: Vec<_> = execs.iter().filter(|e| e["pid"] == worker).collect();
    assert_eq!(killed.len(), 1, "{execs:?}");
    assert_eq!(killed[0]["ended"], "killed by signal 9 (SIGKILL)", "{execs:?}");
    assert!(execs.len() >= 3, "another worker took the rest of the round: {execs:?}");
    let rows = v["results"].as_array().expect("results");
    let said: Vec<_> = rows.iter().filter(|r| r.to_string().contains("the worker process measuring round")).collect();
    assert_eq!(said.len(), 1, "exactly the row being measured says its worker died: {rows:?}");
    assert!(said[0].to_string().contains("killed by signal 9 (SIGKILL)"), "{}", said[0]);
    // Every other row was measured.
    let measured = rows.iter().filter(|r| r["id"] == "ipc.pipe" && r["status"] != "failed").count();
    assert!(measured >= 3, "{rows:?}");
    assert_all_gone_from(run);
}

/// No process of the run is left (as their subreaper, we reap them).
fn assert_all_gone_from(run: u32) {
    assert!(
        wait_for(|| descendants_of(run).is_empty().then_some(())).is_some(),
        "processes of the run are left: {:?}",
        descendants_of(run)
    );
    let left = wait_for(|| {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Err(_) => Some(()),
            Ok(WaitStatus::StillAlive) => None,
            Ok(_) => None,
        }
    });
    assert!(left.is_some(), "a process of the run outlived it");
}
