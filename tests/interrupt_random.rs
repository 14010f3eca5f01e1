//! Random interruptions of `osprim run --quick`: SIGINT, SIGTERM, SIGHUP or two SIGINTs at
//! random moments of the run. Every time the run must exit with 128 + the signal, leave a
//! complete, valid result file (partial unless the run had already ended), and leave nothing
//! behind: no journal, no temporary file, no scratch directory, no process, no System V queue
//! or segment.
//!
//! Settings (environment): `OSPRIM_INTERRUPT_TRIALS` (default 3; 30 or more for a thorough
//! check), `OSPRIM_INTERRUPT_SPAN` (seconds over which moments are drawn; default 14, a little
//! under the length of `run --quick` on a 2-core VM, so that nearly every moment falls inside
//! a run), `OSPRIM_INTERRUPT_SEED` (to replay a sequence).
//!
//! This binary holds this one test: it makes itself a child subreaper, so that any peer the
//! run leaves alive becomes its child and is found.

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small generator for the moments (xorshift64*), so a seed replays a sequence.
struct Moments(u64);

impl Moments {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The ids of the System V message queues and shared memory segments that exist now.
fn sysv_objects() -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for (file, what) in [("/proc/sysvipc/msg", "msg"), ("/proc/sysvipc/shm", "shm")] {
        if let Ok(text) = std::fs::read_to_string(file) {
            for line in text.lines().skip(1) {
                if let Some(id) = line.split_whitespace().nth(1) {
                    ids.insert(format!("{what} {id}"));
                }
            }
        }
    }
    ids
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Reaps every child the test process has (peers left by the run would be reparented here);
/// returns how many were still alive and had to be killed.
fn reap_leftovers() -> usize {
    let mut left = 0;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                // Someone is alive: find and kill them through /proc.
                left += kill_children();
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(_) => continue,
            Err(_) => return left, // ECHILD: none left
        }
    }
}

fn kill_children() -> usize {
    let me = std::process::id().to_string();
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
        if fields.get(1) == Some(&me.as_str())
            && let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>()
        {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            n += 1;
        }
    }
    n
}

#[test]
fn random_interruptions_always_leave_a_valid_result_and_nothing_else() {
    nix::sys::prctl::set_child_subreaper(true).unwrap();
    let trials = setting("OSPRIM_INTERRUPT_TRIALS", 3);
    let span_ms = setting("OSPRIM_INTERRUPT_SPAN", 14) * 1000;
    let seed = setting("OSPRIM_INTERRUPT_SEED", std::process::id() as u64 * 0x9E37_79B9 + 1);
    eprintln!("{trials} trials over {span_ms} ms, OSPRIM_INTERRUPT_SEED={seed}");
    let mut moments = Moments(seed | 1);
    let kinds = [
        ("SIGINT", vec![Signal::SIGINT]),
        ("SIGTERM", vec![Signal::SIGTERM]),
        ("SIGHUP", vec![Signal::SIGHUP]),
        ("SIGINT twice", vec![Signal::SIGINT, Signal::SIGINT]),
    ];
    for trial in 0..trials {
        let (name, signals) = &kinds[trial as usize % kinds.len()];
        let at = Duration::from_millis(moments.below(span_ms));
        let work = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let result = work.path().join("r.json");
        let before = sysv_objects();
        let child = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
            .args(["run", "--quick", "--output"])
            .arg(&result)
            .env("TMPDIR", tmp.path())
            .env("RUST_BACKTRACE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let started = Instant::now();
        // Sleep until the moment (the moment is what is random; this is not synchronisation),
        // unless the run ends first.
        while started.elapsed() < at && kill(pid, None).is_ok() && !exited(pid) {
            std::thread::sleep(Duration::from_millis(5).min(at.saturating_sub(started.elapsed())));
        }
        let mut sent = false;
        for s in signals {
            sent |= kill(pid, *s).is_ok();
        }
        let out = child.wait_with_output().unwrap();
        let what = format!("trial {trial}: {name} at {at:?} (seed {seed})");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{what}: result file unreadable ({e}); stderr: {stderr}"));
        assert!(v["results"].is_array(), "{what}");
        let code = out.status.code();
        let ended_first = code == Some(0);
        if !ended_first {
            let expected = 128 + signals[0] as i32;
            assert!(sent, "{what}");
            assert_eq!(code, Some(expected), "{what}: {stderr}");
            assert_eq!(v["partial"], true, "{what}");
        }
        // The seed view reads it.
        let seeds = Command::new(assert_cmd::cargo::cargo_bin("osprim")).arg("seeds").arg(&result).output().unwrap();
        assert!(seeds.status.success(), "{what}: {}", String::from_utf8_lossy(&seeds.stderr));
        assert_eq!(entries(work.path()), ["r.json"], "{what}: no journal or temporary file left");
        assert!(entries(tmp.path()).is_empty(), "{what}: scratch left: {:?}", entries(tmp.path()));
        assert_eq!(reap_leftovers(), 0, "{what}: a process of the run outlived it");
        let leaked: Vec<String> = sysv_objects().difference(&before).cloned().collect();
        assert!(leaked.is_empty(), "{what}: System V objects left: {leaked:?}");
        eprintln!("{what}: exit {code:?}, {} rows", v["results"].as_array().map_or(0, |r| r.len()));
    }
}

/// Whether `pid` (our child) has exited (a zombie not yet reaped).
fn exited(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        .unwrap_or(true)
}
