//! Helpers shared by the integration tests that watch osprim from outside: its processes,
//! from /proc, and its System V objects. Every wait here is on observable state, with a
//! deadline only so that a broken osprim fails the test instead of hanging it.
#![allow(dead_code)]

use model::{Status, SweepFit, SweepLine, SweepModel, SweepPoint, SweepSegments};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long any wait on osprim's state may take before the test fails: generous, against
/// hanging CI, never a measure of speed.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// The osprim binary, with backtraces on.
pub fn osprim() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("osprim"));
    c.env("RUST_BACKTRACE", "1");
    c
}

/// `osprim ARGS…` in the background, its output captured, with its own TMPDIR.
pub fn spawn(args: &[&str], tmp: &Path) -> std::process::Child {
    osprim().args(args).env("TMPDIR", tmp).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits for `child` at most [`PATIENCE`]; kills it and fails the test (`what` hung) if it is
/// still there. Its output is returned, read while it runs (a child whose output fills a
/// pipe nobody reads would wait for ever).
pub fn finish(mut child: std::process::Child, what: &str) -> std::process::Output {
    use std::io::Read;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: osprim hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    std::process::Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}

/// Polls `f` until it gives `Some`, or [`PATIENCE`] runs out (`None`).
pub fn wait_for<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let began = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if began.elapsed() > PATIENCE {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Children of `pid` (all its threads'), from /proc.
pub fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            out.extend(text.split_whitespace().filter_map(|c| c.parse::<i32>().ok()));
        }
    }
    out
}

/// A field of /proc/PID/status, as a number.
pub fn status_field(pid: i32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')?.trim().parse().ok())
}

/// The state letter of process `pid` (`R`, `S`, `T`, `Z`…), if it exists.
pub fn state(pid: i32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The processes a run started, at every depth: its worker processes (one per round) and
/// the peers, helpers and children their benchmarks start.
pub fn descendants_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut next = children_of(pid);
    while let Some(c) = next.pop() {
        out.push(c);
        if let Ok(c) = u32::try_from(c) {
            next.extend(children_of(c));
        }
    }
    out
}

/// Whether `pid` is an osprim worker process (`osprim __worker`, started by the run itself).
pub fn is_worker(pid: i32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline.split(|&b| b == 0).nth(1) == Some(b"__worker".as_slice())
}

/// What a run's benchmarks started (peers, helpers, forked children): its descendants but
/// the worker processes it started itself (a worker's forked peers are found: they are the
/// workers' children).
pub fn peers_of(pid: u32) -> Vec<i32> {
    let workers: Vec<i32> = children_of(pid).into_iter().filter(|&c| is_worker(c)).collect();
    descendants_of(pid).into_iter().filter(|c| !workers.contains(c)).collect()
}

/// A process the run's benchmarks started that is a ping-pong peer in full swing: it has
/// blocked (a voluntary context switch per message) at least `messages` times.
pub fn busy_peer(pid: u32, messages: u64) -> Option<i32> {
    peers_of(pid)
        .into_iter()
        .find(|&c| state(c) != Some('Z') && status_field(c, "voluntary_ctxt_switches").is_some_and(|v| v >= messages))
}

/// Whether process `pid` is gone: reaped (by us, as its subreaper, or by its parent).
pub fn gone(pid: i32) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    match waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) => true,
        Err(_) => !Path::new(&format!("/proc/{pid}")).exists(),
    }
}

/// Sends `sig` to `pid`.
pub fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
}

/// System V objects listed in /proc/sysvipc/`kind` (`msg` or `shm`) that one of `pids`
/// created or last used: (id, the pids named on the line).
pub fn sysv_objects_of(kind: &str, pids: &[i32]) -> Vec<i32> {
    let text = std::fs::read_to_string(format!("/proc/sysvipc/{kind}")).unwrap_or_default();
    // msg: key msqid perms cbytes qnum lspid lrpid …; shm: key shmid perms size cpid lpid …
    let pid_columns = if kind == "msg" { [5, 6] } else { [4, 5] };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let named = pid_columns.iter().filter_map(|&i| f.get(i)?.parse::<i32>().ok());
            let ours = named.into_iter().any(|p| p != 0 && pids.contains(&p));
            ours.then(|| f.get(1)?.parse().ok())?
        })
        .collect()
}

/// Whether System V object `id` of `kind` is listed.
pub fn sysv_listed(kind: &str, id: i32) -> bool {
    let text = std::fs::read_to_string(format!("/proc/sysvipc/{kind}")).unwrap_or_default();
    text.lines().skip(1).any(|l| l.split_whitespace().nth(1) == Some(&id.to_string()))
}

/// A sweep's fitted row (two segments) like `derive::sweep_fits` makes, after the fixture's
/// `ipc.pipe` rows.
pub fn fitted_row(run: &model::RunFile) -> model::Row {
    let mut r = run.results.iter().find(|r| r.id == "ipc.pipe").expect("an ipc.pipe row").clone();
    r.params.insert("bytes".into(), serde_json::json!("fit"));
    r.params.insert("sizes".into(), serde_json::json!([0, 4096, 65536, 1048576]));
    r.summary = None;
    r.breakdown = None;
    r.derived = None;
    r.cycles = None;
    r.samples.clear();
    r.flags = vec![model::Flag::Nonlinear];
    r.status = Status::Advisory;
    let point = |size_bytes, median_ns: f64| SweepPoint {
        size_bytes,
        median_ns,
        se_ns: median_ns * 0.004,
        leverage: 0.5,
        std_residual: Some(0.2),
        flagged: false,
    };
    r.fit = Some(SweepFit {
        method: "weighted least squares".into(),
        model: SweepModel::TwoSegments,
        line: SweepLine {
            intercept_ns: 2023.1,
            intercept_ci95_ns: [1200.0, 2846.2],
            slope_ns_per_byte: 0.3099,
            slope_ci95_ns_per_byte: [0.0941, 0.5257],
            r_squared: 0.732,
            chi2: 20493.0,
            dof: 2,
            reduced_chi2: 10246.5,
            p_value: 0.0,
        },
        segments: Some(SweepSegments {
            breakpoint_bytes: 65536,
            fixed_ns: 2060.0,
            fixed_ci95_ns: [2046.1, 2073.9],
            small_slope_ns_per_byte: 0.2575,
            small_slope_ci95_ns_per_byte: [0.2537, 0.2613],
            large_slope_ns_per_byte: 1.03,
            large_slope_ci95_ns_per_byte: [1.0156, 1.0444],
            chi2: 1e-3,
            dof: 1,
            reduced_chi2: 1e-3,
            p_value: 0.97,
            vs_line_p_value: 7.1e-8,
            breakpoints_tried: 2,
        }),
        points: vec![point(0, 2060.0), point(4096, 3114.7), point(65536, 18935.5), point(1048576, 1031466.7)],
    });
    r
}
