//! The defects a hostile pass found (issue 28), each reproduced from outside: what osprim must
//! never delete or overwrite (a user's directory named like scratch, a live run's scratch in
//! another PID namespace, its own inputs, its history database, a journal), a history database
//! planted as a link, a stderr that cannot be written, a report over samples spanning ±1e308, a
//! reserved result file left empty by a failed run, a replaced file's mode, and a live run's
//! placeholder taken as the newest result.

use crate::common::{PATIENCE, osprim};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Instant;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `osprim ARGS…` in `dir` with its own TMPDIR (`tmp`).
fn run_in(dir: &Path, tmp: &Path, args: &[&str]) -> Output {
    osprim().args(args).current_dir(dir).env("TMPDIR", tmp).output().unwrap()
}

/// The one error line and non-zero status of a command refused before it measured or wrote.
fn refused(o: &Output) -> String {
    let stderr = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(o.stdout.is_empty(), "nothing measured: {}", text(&o.stdout));
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: ") && !stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A marker like the one osprim puts in its scratch directories (`platform::scratch`), for a
/// process `pid` that started at `start`, in the PID namespace `pid_ns`.
fn marker(pid: u32, start: u64, pid_ns: &str) -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    format!(
        "osprim scratch 1\ntoken 0123456789abcdef0123456789abcdef\nboot {}\npid {pid}\nstart {start}\npidns {pid_ns}\n",
        boot.trim()
    )
}

#[test]
fn the_scratch_sweep_leaves_a_users_directory_and_a_live_run_in_another_pid_namespace() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let notes = tmp.path().join("osprim-2026-notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("f"), "x").unwrap();
    // A run in another PID namespace sharing this /tmp: its pid means nothing here.
    let dead_pid = 4_194_999; // above any kernel's pid limit: no process has it here
    let other_ns = tmp.path().join(format!("osprim-{dead_pid}-otherns"));
    std::fs::create_dir(&other_ns).unwrap();
    std::fs::write(other_ns.join(".osprim-scratch"), marker(dead_pid, 1, "pid:[1]")).unwrap();
    std::fs::write(other_ns.join("cached-file"), "x").unwrap();
    // A dead run of this namespace: its directory goes (the sweep did run).
    let my_ns = std::fs::read_link("/proc/self/ns/pid").unwrap().to_string_lossy().into_owned();
    let dead = tmp.path().join(format!("osprim-{dead_pid}-dead"));
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join(".osprim-scratch"), marker(dead_pid, 1, &my_ns)).unwrap();
    let o = run_in(cwd.path(), tmp.path(), &["run", "--quick", "syscall.null", "--no-save", "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(notes.join("f")).unwrap(), "x", "the user's directory is left");
    assert!(other_ns.join("cached-file").exists(), "another namespace's run keeps its scratch");
    assert!(!dead.exists(), "a dead run's directory of this namespace is removed");
}

#[test]
fn a_scratch_directory_removed_while_the_run_measures_makes_the_run_fail() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut child = osprim()
        .args(["run", "--quick", "fs", "lib", "-o", "out.json", "--no-history"])
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let removed = loop {
        let found: Vec<PathBuf> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("osprim-")))
            // Once made whole (marked), as a cleaner would find it.
            .filter(|p| p.join(".osprim-scratch").exists())
            .collect();
        if let Some(d) = found.first() {
            std::fs::remove_dir_all(d).unwrap();
            break true;
        }
        if began.elapsed() > PATIENCE || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let o = child.wait_with_output().unwrap();
    assert!(removed, "the run made no scratch directory");
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("scratch directory") && stderr.contains("was removed while it measured"), "{stderr}");
    assert!(cwd.path().join("out.json").exists(), "what it measured is saved");
}

#[test]
fn a_command_never_overwrites_its_own_inputs_its_history_or_a_journal() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let r = cwd.path().join("r.json");
    let base = cwd.path().join("base.json");
    std::fs::copy(fixture("default-run.json"), &r).unwrap();
    std::fs::copy(fixture("default-run.json"), &base).unwrap();
    let before = std::fs::read(&r).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["report", "r.json", "--html", "r.json"], "the result file it reports on"),
        (vec!["report", "r.json", "--html", "./r.json"], "the result file it reports on"),
        (vec!["report", "r.json", "--compare", "base.json", "--html", "base.json"], "the result file it compares with"),
        (vec!["run", "--quick", "syscall.null", "--baseline", "base.json", "-o", "base.json"], "the baseline"),
        (vec!["run", "--quick", "syscall.null", "-o", "osprim-results/history.db"], "the history database"),
        (vec!["run", "--quick", "syscall.null", "--db", "h.db", "-o", "./h.db"], "the history database"),
        (vec!["run", "--quick", "syscall.null", "-o", "x.json.journal"], "a run's journal"),
    ];
    std::fs::create_dir(cwd.path().join("osprim-results")).unwrap();
    std::fs::write(cwd.path().join("osprim-results/history.db"), "").unwrap();
    for (args, why) in cases {
        let line = refused(&run_in(cwd.path(), tmp.path(), &args));
        assert!(line.contains(why), "{args:?}: {line}");
    }
    assert_eq!(std::fs::read(&r).unwrap(), before, "the input is left as it was");
    assert_eq!(std::fs::read(&base).unwrap(), before);
    assert_eq!(std::fs::metadata(cwd.path().join("osprim-results/history.db")).unwrap().len(), 0);
    assert!(!cwd.path().join("h.db").exists() && !cwd.path().join("x.json.journal").exists());
}

#[test]
fn the_history_does_not_follow_a_planted_link() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let victim = cwd.path().join("victim");
    std::os::unix::fs::symlink(&victim, cwd.path().join("h.db")).unwrap();
    let o = run_in(cwd.path(), tmp.path(), &["run", "--quick", "syscall.null", "-o", "r.json", "--db", "h.db"]);
    let stderr = text(&o.stderr);
    assert!(stderr.contains("not recorded in the history") && stderr.contains("symbolic link"), "{stderr}");
    assert!(!victim.exists(), "nothing made where the link points");
}

/// `bash -c SCRIPT` in `dir` with its own TMPDIR (`tmp`), the osprim binary in `$OSPRIM`.
fn bash(dir: &Path, tmp: &Path, script: &str) -> Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env("OSPRIM", assert_cmd::cargo::cargo_bin("osprim"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap()
}

/// Whether `dir` holds a journal or `tmp` a scratch directory.
fn leftovers(dir: &Path, tmp: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "journal"))
        .collect();
    out.extend(std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.path()));
    out
}

#[test]
fn a_stderr_that_cannot_be_written_costs_nothing() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let o = osprim()
        .args(["run", "--quick", "syscall.null", "-o", "r.json", "--no-history"])
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "no abort: {:?}", o.status);
    assert!(cwd.path().join("r.json").metadata().unwrap().len() > 0, "the result is saved");
    assert_eq!(leftovers(cwd.path(), tmp.path()), Vec::<PathBuf>::new());
    // stdout and stderr into a pipe closed after one line (`2>&1 | head -1`).
    let o = bash(
        cwd.path(),
        tmp.path(),
        "set -o pipefail; \"$OSPRIM\" run --quick syscall.null -o r2.json --no-history 2>&1 | head -1",
    );
    assert_eq!(o.status.code(), Some(0), "{:?}: {}", o.status, text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 1);
    assert!(cwd.path().join("r2.json").metadata().unwrap().len() > 0, "the result is saved");
    assert_eq!(leftovers(cwd.path(), tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_report_over_samples_spanning_the_doubles_is_drawn() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("default-run.json")).unwrap()).unwrap();
    let mut drawn = 0;
    for row in run["results"].as_array_mut().unwrap().iter_mut().filter(|r| !r["summary"].is_null()) {
        let samples: Vec<f64> = (0..40).map(|i| if i % 2 == 0 { -1e308 } else { 1e308 }).collect();
        row["samples"] = serde_json::json!(samples);
        row["samples_per_round"] = serde_json::json!([40]);
        drawn += 1;
    }
    assert!(drawn > 0);
    std::fs::write(cwd.path().join("huge.json"), serde_json::to_string(&run).unwrap()).unwrap();
    let o = run_in(cwd.path(), tmp.path(), &["report", "huge.json", "--html", "huge.html"]);
    assert!(o.status.success(), "{:?}: {}", o.status, text(&o.stderr));
    let page = std::fs::read_to_string(cwd.path().join("huge.html")).unwrap();
    assert!(!page.contains("NaN"), "no NaN coordinate");
}

#[test]
fn a_run_that_fails_after_reserving_its_result_file_removes_it() {
    let cwd = tempfile::tempdir().unwrap();
    let o = run_in(cwd.path(), Path::new("/nonexistent"), &["run", "--quick", "syscall.null", "-q"]);
    let stderr = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let left: Vec<PathBuf> = std::fs::read_dir(cwd.path().join("osprim-results"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(left, Vec::<PathBuf>::new(), "no empty result file left");
}

#[test]
fn a_replaced_result_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let r = cwd.path().join("r.json");
    std::fs::write(&r, "old").unwrap();
    std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run_in(cwd.path(), tmp.path(), &["run", "--quick", "syscall.null", "-o", "r.json", "--no-history", "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::metadata(&r).unwrap().permissions().mode() & 0o777, 0o644);
}

#[test]
fn papers_passes_over_a_live_runs_placeholder() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = cwd.path().join("osprim-results");
    std::fs::create_dir(&dir).unwrap();
    let done = dir.join("2026-01-01T00-00-00.000Z-0001.json");
    std::fs::copy(fixture("default-run.json"), &done).unwrap();
    // A live run's file: newer, without results, its journal held.
    let live = dir.join("2026-01-01T00-00-01.000Z-0002.json");
    let mut placeholder: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("default-run.json")).unwrap()).unwrap();
    placeholder["results"] = serde_json::json!([]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&live, serde_json::to_string(&placeholder).unwrap()).unwrap();
    let _held = store::journal::Journal::create(&live).unwrap();
    let o = run_in(cwd.path(), tmp.path(), &["papers"]);
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains(&*done.file_name().unwrap().to_string_lossy()), "the finished run is shown: {stderr}");
}

/// A memory cgroup of `limit` bytes under this process's own (v1, else v2), removed when
/// dropped; `Err` with the reason when none can be made here.
struct MemoryCgroup(PathBuf);

impl MemoryCgroup {
    fn new(limit: u64) -> Result<MemoryCgroup, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let name = format!("osprim-test-{}", std::process::id());
        let (dir, file) = if let Some(p) =
            own.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.trim_start_matches('/').to_string()))
        {
            (Path::new("/sys/fs/cgroup/memory").join(p).join(&name), "memory.limit_in_bytes")
        } else {
            let p = own.lines().find_map(|l| l.strip_prefix("0::")).ok_or("no cgroup")?;
            (Path::new("/sys/fs/cgroup").join(p.trim_start_matches('/')).join(&name), "memory.max")
        };
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let cg = MemoryCgroup(dir);
        std::fs::write(cg.0.join(file), limit.to_string()).map_err(|e| format!("cannot set {file}: {e}"))?;
        Ok(cg)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn inside_a_small_memory_cgroup_a_benchmark_that_would_not_fit_is_skipped_not_killed() {
    let cg = match MemoryCgroup::new(100 << 20) {
        Ok(cg) => cg,
        Err(why) => {
            eprintln!("skipped: no memory cgroup can be made here ({why})");
            return;
        }
    };
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec \"$OSPRIM\" run --quick process.fork_exit -o r.json --no-history -q",
        cg.0.display()
    );
    let o = bash(cwd.path(), tmp.path(), &script);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "not killed: {:?}: {stderr}", o.status);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.path().join("r.json")).unwrap()).unwrap();
    let rows = run["results"].as_array().unwrap();
    let big = rows.iter().find(|r| r["params"]["touched"] == "1GiB").expect("the 1 GiB row");
    assert_eq!(big["status"], "skipped", "{big}");
    let why = big["reason"].as_str().unwrap();
    assert!(why.contains("memory cgroup (limit 100 MiB)"), "{why}");
    assert!(rows.iter().all(|r| r["status"] != "failed"), "{rows:?}");
}

#[test]
fn an_error_says_its_cause_once() {
    let (tmp, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let line =
        refused(&run_in(cwd.path(), tmp.path(), &["run", "--quick", "syscall.null", "-o", "/nonexistent/x.json"]));
    assert_eq!(line.matches("No such file or directory").count(), 1, "{line}");
}
