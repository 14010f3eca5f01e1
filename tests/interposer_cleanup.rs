//! No filter, tracer or dispatching process of the `interpose.*` rows outlives a run killed with
//! SIGKILL in the middle of measuring: the twins die with the run (`PR_SET_PDEATHSIG` through
//! the worker), a filter and dispatch with their twin, the tracer with the twin it traces. The
//! moment is observed from outside: a process of the run that is traced (`TracerPid` in its
//! `/proc/<pid>/status`) or filtered (`Seccomp: 2`). This test process is a child subreaper, so
//! an orphan of the run would be its child and be seen.

mod common;

use common::{descendants_of, gone, osprim, status_field, wait_for};
use std::process::Stdio;

/// Kills a run of `bench` once one of its processes shows `field` ≠ 0, and checks every process
/// of the run is gone.
fn killed_mid_row_leaves_nothing(bench: &str, field: &str) {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let mut child = osprim()
        .args(["run", "--budget", "60", "--no-save", "--no-history", "--format", "json", bench])
        .current_dir(tmp.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marked = wait_for(|| {
        descendants_of(child.id()).into_iter().find(|&pid| status_field(pid, field).is_some_and(|v| v != 0))
    });
    let run = descendants_of(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let pid =
        marked.unwrap_or_else(|| panic!("no process of the {bench} run showed {field} within the test's patience"));
    assert!(run.contains(&pid));
    for pid in run {
        assert!(wait_for(|| gone(pid).then_some(())).is_some(), "process {pid} of the {bench} run outlived it");
    }
}

#[test]
fn a_killed_ptrace_run_leaves_no_tracer_or_tracee() {
    killed_mid_row_leaves_nothing("interpose.ptrace", "TracerPid");
}

#[test]
fn a_killed_seccomp_run_leaves_no_filtered_process() {
    killed_mid_row_leaves_nothing("interpose.seccomp", "Seccomp");
}
