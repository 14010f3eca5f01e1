//! Process lifecycle: `process.fork_exit`, `process.fork_exec`, `process.vfork_exec`,
//! `process.posix_spawn` and `process.clone3`, each `touched=4MiB|64MiB|1GiB` (see
//! [`Spawn::touched_values`]): a child made, run to its end and reaped, once per operation.
//!
//! - `fork_exit`: glibc's `fork` (its `atfork` work, then `clone`); the child `_exit(0)`s at
//!   once; the parent `waitpid`s.
//! - `fork_exec`: `fork`; the child `execve`s osprim's exit program (`probe/osprim_exit.rs`: a
//!   1 KiB static program without libc whose `_start` exits with 42); `waitpid`.
//! - `vfork_exec`: `vfork` + `execve` of the same program, both system calls issued from one
//!   `asm!` block whose child never returns to Rust ([`sys::lifecycle::vfork_exec`]);
//!   the parent sleeps until the child has exec'd. The measuring thread blocks every signal
//!   but the deadline's for the sampling (outside the clock), so no handler runs in the child
//!   on the parent's stack; `waitpid`.
//! - `posix_spawn`: glibc's `posix_spawn` of the same program (`clone(CLONE_VM|CLONE_VFORK)` on
//!   its own stack, signals blocked around it, default attributes, no file actions); `waitpid`.
//! - `clone3`: the bare `clone3` system call with no flags (a copy of the process without
//!   glibc's `fork` work); the child issues `exit_group(0)` at once; `waitpid`. Skipped with
//!   the reason where the kernel (or a seccomp filter) says `ENOSYS`/`EPERM`.
//!
//! `touched`: before measuring, the parent maps that much anonymous memory and writes all of it
//! (`MADV_POPULATE_WRITE`; 4 KiB pages, huge pages disabled, so one page-table entry per page),
//! once per round, outside the clock, and unmaps it after. `fork` and `clone3` copy the page
//! tables of all of it (and write-protect it for copy-on-write), and the child's exit or exec
//! tears its copy down: their cost grows with it. `vfork` and `posix_spawn` share the parent's
//! memory and copy nothing. A 1 GiB set-up takes a few hundred ms per round and each fork of it
//! milliseconds, so those rows get fewer samples; the row is skipped when the machine has not
//! that much memory available (`MemAvailable`, with 256 MiB to spare). Every `fork` after the
//! first finds the memory already write-protected by the one before (the parent does not write
//! it again between forks): the state of a parent forking repeatedly.
//!
//! **Timing model:** a sample of `n` operations is one timed region: `n` × (make the child,
//! `waitpid` it). The child inherits the measuring CPU, so parent and child take turns on it,
//! and everything between the call and the reaped status is inside: the copy, the child's run,
//! its exec or exit and teardown, the parent's wake-up.
//! **Validation:** every child made was reaped (made = reaped) and ran as meant: exit status 0
//! for `fork_exit` and `clone3`, 42 (the exit program's) for the exec rows, so an exec that
//! failed (127) shows; no child outlived the deadline; no child is left unreaped after the run
//! (`/proc/thread-self/children` is empty), whatever ended it; the touched memory was resident
//! before and after. Observed: minor page faults per child, the parent's (`RUSAGE_SELF`) and
//! the children's (`RUSAGE_CHILDREN`) — page-table copying makes none, so they stay flat while
//! the time grows — and the parent's page-table size (`VmPTE`).
//! **Hangs:** each sample's waits have a deadline ([`WAIT_DEADLINE`] plus [`WAIT_PER_OP`] per
//! child); past it, a watchdog thread interrupts the wait and the child is killed, reaped and
//! reported, and the sampling ends.

use crate::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use nix::sys::resource::{UsageWho, getrusage};
use std::time::Duration;
use sys::lifecycle::{self as lc, CloneArgs, ExecArgs, SignalMask, Touched};
use sys::reap::{self, Reaped, Watchdog};

/// osprim's exit program (`probe/osprim_exit.rs`); empty if it could not be built.
pub(crate) static EXIT_BIN: &[u8] = include_bytes!(env!("OSPRIM_EXIT_BIN"));
/// The exit status of [`EXIT_BIN`].
pub const EXIT_CODE: i32 = 42;

/// How long a sample's waits may take in all, beyond [`WAIT_PER_OP`] per child.
pub const WAIT_DEADLINE: Duration = Duration::from_secs(5);
/// Extra time a sample's deadline allows per child.
pub const WAIT_PER_OP: Duration = Duration::from_millis(50);

/// Memory kept free beside a `touched` region: a larger region than the machine can spare is
/// skipped.
const SPARE_BYTES: u64 = 256 << 20;

/// How the child is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spawn {
    /// `fork`, the child `_exit(0)`s.
    ForkExit,
    /// `fork`, the child execs the exit program.
    ForkExec,
    /// `vfork` + exec of the exit program.
    VforkExec,
    /// `posix_spawn` of the exit program.
    PosixSpawn,
    /// bare `clone3`, the child exits.
    Clone3,
}

/// `process.<spawn>`.
pub struct Process(pub Spawn);

impl Spawn {
    /// Whether the child execs the exit program.
    pub fn execs(self) -> bool {
        matches!(self, Spawn::ForkExec | Spawn::VforkExec | Spawn::PosixSpawn)
    }

    /// The exit status a child that ran as meant leaves.
    pub fn expected_status(self) -> i32 {
        if self.execs() { EXIT_CODE } else { 0 }
    }

    /// The default `touched` values: 4 MiB, 64 MiB and 1 GiB for the two `fork` rows; 4 and
    /// 64 MiB for the others (`vfork` and `posix_spawn` copy nothing, and 64 MiB already shows
    /// it; `clone3` copies as `fork` does). A 1 GiB round costs over a second of set-up here
    /// (writing it and unmapping it), so it is kept to the rows the question is about.
    pub fn touched_values(self) -> &'static [&'static str] {
        match self {
            Spawn::ForkExit | Spawn::ForkExec => &["4MiB", "64MiB", "1GiB"],
            Spawn::VforkExec | Spawn::PosixSpawn | Spawn::Clone3 => &["4MiB", "64MiB"],
        }
    }
}

/// `4MiB` → 4 Mi, `64MiB`, `1GiB`; `None` for anything else.
pub fn touched_bytes(text: &str) -> Option<usize> {
    let (num, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: usize = num.parse().ok()?;
    let shift = match unit {
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return None,
    };
    n.checked_mul(1 << shift).filter(|&b| b > 0)
}

/// What the children of one run did.
#[derive(Default, Debug)]
struct Tally {
    made: u64,
    reaped: u64,
    as_meant: u64,
    killed: u64,
    lost: u64,
    spawn_errors: u64,
    first_wrong: Option<String>,
}

impl Tally {
    fn record(&mut self, r: Reaped, expected: i32) {
        match r {
            Reaped::Exited(code) if code == expected => {
                self.reaped += 1;
                self.as_meant += 1;
            }
            Reaped::Exited(code) => {
                self.reaped += 1;
                self.first_wrong.get_or_insert_with(|| format!("exited with {code}"));
            }
            Reaped::Signaled { signal, killed } => {
                self.reaped += 1;
                self.killed += u64::from(killed);
                self.first_wrong.get_or_insert_with(|| {
                    if killed { "killed after the deadline".to_string() } else { format!("killed by signal {signal}") }
                });
            }
            Reaped::Lost(errno) => {
                self.lost += 1;
                self.first_wrong
                    .get_or_insert_with(|| format!("waitpid: {}", std::io::Error::from_raw_os_error(errno)));
            }
        }
    }
}

impl Benchmark for Process {
    fn id(&self) -> &'static str {
        match self.0 {
            Spawn::ForkExit => "process.fork_exit",
            Spawn::ForkExec => "process.fork_exec",
            Spawn::VforkExec => "process.vfork_exec",
            Spawn::PosixSpawn => "process.posix_spawn",
            Spawn::Clone3 => "process.clone3",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Spawn::ForkExit => "fork, the child _exit(0)s at once, waitpid",
            Spawn::ForkExec => "fork, the child execs a tiny static program (exit 42), waitpid",
            Spawn::VforkExec => "vfork + execve of a tiny static program (exit 42), waitpid",
            Spawn::PosixSpawn => "posix_spawn of a tiny static program (exit 42), waitpid",
            Spawn::Clone3 => "bare clone3 (no flags), the child exit_groups at once, waitpid",
        }
    }
    fn available(&self) -> Result<(), String> {
        if matches!(self.0, Spawn::VforkExec | Spawn::Clone3) && !lc::RAW_SPAWN_AVAILABLE {
            return Err("written for x86_64 only (a few lines of assembly)".into());
        }
        if self.0.execs() && EXIT_BIN.is_empty() {
            return Err("the exit program could not be built (see build warnings)".into());
        }
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        crate::one_param("touched", self.0.touched_values().iter().copied())
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let text = params.get("touched").and_then(|v| v.as_str()).unwrap_or("4MiB");
        let bytes = touched_bytes(text).ok_or_else(|| NotMeasured::Failed(format!("touched={text}: not a size")))?;
        run_spawn(ctx, self.0, bytes, Target::ExitProgram, WAIT_DEADLINE)
    }
}

/// What the exec rows start.
pub(crate) enum Target {
    /// The exit program, installed in the run's scratch directory.
    ExitProgram,
    /// Another program and arguments (tests: one that fails, or hangs).
    #[cfg(test)]
    Other(std::path::PathBuf, Vec<&'static str>),
}

/// Whether `bytes` (plus [`SPARE_BYTES`]) fits in what is left of memory: the least of
/// `MemAvailable` and what the memory cgroup leaves (v2 or v1, every level up;
/// [`platform::memory`]); the reason when not.
fn memory_for(bytes: usize) -> Result<(), String> {
    let need = bytes as u64 + SPARE_BYTES;
    match platform::memory::room().and_then(|r| r.refuse(need, "the parent's touched memory")) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Minor faults of this process and of its reaped children so far.
fn minor_faults() -> (i64, i64) {
    let of = |who| getrusage(who).map(|u| u.minor_page_faults()).unwrap_or(0);
    (of(UsageWho::RUSAGE_SELF), of(UsageWho::RUSAGE_CHILDREN))
}

/// `VmPTE` of this process, kB.
fn page_tables_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    proc_field(&status, "VmPTE")
}

/// The number after `name:` in a `/proc` file of `Name:   123 kB` lines.
fn proc_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
}

/// Makes one child the way `spawn` says. Inlined into the timed loop.
#[inline(always)]
fn spawn_one(spawn: Spawn, exec: &ExecArgs, clone: &CloneArgs, mask: Option<&SignalMask>) -> Result<i32, String> {
    let io = |e: std::io::Error| e.to_string();
    match spawn {
        Spawn::ForkExit => lc::fork_exit().map_err(io),
        Spawn::ForkExec => lc::fork_exec(exec).map_err(io),
        Spawn::PosixSpawn => lc::posix_spawn(exec).map_err(io),
        Spawn::VforkExec => match mask {
            Some(m) => lc::vfork_exec(exec, m).map_err(io),
            None => Err("signals not blocked".into()),
        },
        Spawn::Clone3 => lc::clone3_exit(clone).map_err(|e| std::io::Error::from_raw_os_error(e).to_string()),
    }
}

/// The exec target's arguments.
fn exec_args(ctx: &Ctx, target: &Target) -> Result<ExecArgs, NotMeasured> {
    let path = match target {
        Target::ExitProgram => crate::interpose::install(ctx.scratch, "osprim_exit", EXIT_BIN, 0o755)?,
        #[cfg(test)]
        Target::Other(p, _) => p.clone(),
    };
    let args: &[&str] = match target {
        Target::ExitProgram => &[],
        #[cfg(test)]
        Target::Other(_, a) => a,
    };
    ExecArgs::new(&path, args).map_err(|e| NotMeasured::Failed(format!("exec arguments: {e}")))
}

/// Checks that clone3 exists here: one call outside the clock.
fn probe_clone3(watchdog: &Watchdog) -> Result<(), NotMeasured> {
    match lc::clone3_exit(&CloneArgs::fork_like()) {
        Ok(pid) => {
            watchdog.arm(WAIT_DEADLINE);
            reap::wait_child(pid, watchdog);
            watchdog.disarm();
            Ok(())
        }
        Err(e) if e == libc::ENOSYS || e == libc::EPERM => {
            Err(NotMeasured::Skipped(format!("clone3 is not available here: {}", std::io::Error::from_raw_os_error(e))))
        }
        Err(e) => Err(NotMeasured::Failed(format!("clone3: {}", std::io::Error::from_raw_os_error(e)))),
    }
}

/// Measures `spawn` with `touched` bytes of written memory in the parent; every sample's waits
/// end at `deadline` (plus [`WAIT_PER_OP`] per child).
pub(crate) fn run_spawn(
    ctx: &mut Ctx,
    spawn: Spawn,
    touched: usize,
    target: Target,
    deadline: Duration,
) -> Result<Measured, NotMeasured> {
    memory_for(touched).map_err(NotMeasured::Skipped)?;
    let exec = exec_args(ctx, &target)?;
    let clone = CloneArgs::fork_like();
    let others: Vec<usize> = ctx.allowed_cpus.iter().copied().filter(|&c| c != ctx.cpu).collect();
    let watchdog = Watchdog::start(&others).map_err(|e| NotMeasured::Failed(format!("start the watchdog: {e}")))?;
    if spawn == Spawn::Clone3 {
        probe_clone3(&watchdog)?;
    }
    let memory = Touched::new(touched)
        .map_err(|e| NotMeasured::Skipped(format!("could not back {} MiB of touched memory: {e}", touched >> 20)))?;
    let resident_before = memory.resident().ok();
    let pte_kb = page_tables_kb();
    let mask = if spawn == Spawn::VforkExec {
        Some(
            SignalMask::block_all_but(reap::deadline_signal())
                .map_err(|e| NotMeasured::Failed(format!("block signals: {e}")))?,
        )
    } else {
        None
    };
    let expected = spawn.expected_status();
    let timer = ctx.timer;
    let mut tally = Tally::default();
    let faults_before = minor_faults();
    let samples = ctx.iter_fallible(|n| {
        watchdog.arm(deadline + WAIT_PER_OP * n.min(1 << 16) as u32);
        let t0 = timer.start();
        for _ in 0..n {
            let pid = match spawn_one(spawn, &exec, &clone, mask.as_ref()) {
                Ok(pid) => pid,
                Err(e) => {
                    tally.spawn_errors += 1;
                    tally.first_wrong.get_or_insert(e);
                    return None;
                }
            };
            tally.made += 1;
            tally.record(reap::wait_child(pid, &watchdog), expected);
        }
        let t1 = timer.stop();
        watchdog.disarm();
        (tally.killed == 0 && tally.lost == 0).then(|| t1.wrapping_sub(t0))
    });
    let faults_after = minor_faults();
    drop(mask);
    let resident_after = memory.resident().ok();
    let left = lc::thread_children();
    drop(watchdog);
    drop(memory);

    let mut m = Measured::new(samples, checks(&tally, spawn, resident_before, resident_after, left));
    m.params.insert("cpus".into(), serde_json::json!([ctx.cpu, ctx.cpu]));
    let per_child = |d: i64| serde_json::json!(((d as f64 / tally.made.max(1) as f64) * 100.0).round() / 100.0);
    m.observed.insert("minor_faults_parent_per_child".into(), per_child(faults_after.0 - faults_before.0));
    m.observed.insert("minor_faults_child_per_child".into(), per_child(faults_after.1 - faults_before.1));
    if let Some(kb) = pte_kb {
        m.observed.insert("parent_page_tables_kb".into(), kb.into());
    }
    m.observed.insert("children_in_round".into(), tally.made.into());
    m.notes.extend(notes(spawn, touched));
    Ok(m)
}

fn checks(
    t: &Tally,
    spawn: Spawn,
    before: Option<(usize, usize)>,
    after: Option<(usize, usize)>,
    left: Option<Vec<i32>>,
) -> Vec<Check> {
    let wrong = t.first_wrong.as_ref().map(|w| format!(" (first: {w})")).unwrap_or_default();
    let mut checks = vec![
        Check::new(
            "every child made was reaped",
            format!("{} made, 0 errors", t.made),
            format!("{} reaped, {} lost, {} errors making one", t.reaped, t.lost, t.spawn_errors),
            t.made > 0 && t.reaped == t.made && t.spawn_errors == 0,
        ),
        Check::new(
            if spawn.execs() {
                "every child ran the exit program (status 42; a failed exec leaves 127)"
            } else {
                "every child exited at once with status 0"
            },
            format!("{} with status {}", t.reaped, spawn.expected_status()),
            format!("{} as meant{wrong}", t.as_meant),
            t.as_meant == t.reaped && t.reaped > 0,
        ),
        Check::new("no child outlived the deadline", "0 killed", format!("{} killed", t.killed), t.killed == 0),
    ];
    let name = "no child left unreaped after the run (/proc/thread-self/children)";
    checks.push(match left {
        Some(pids) => Check::new(name, "none", format!("{} left {:?}", pids.len(), pids), pids.is_empty()),
        None => Check::impossible(name, "/proc/thread-self/children is not readable (CONFIG_PROC_CHILDREN)"),
    });
    let name = "the parent's touched memory was resident before and after";
    checks.push(match (before, after) {
        (Some((b, n)), Some((a, _))) => {
            Check::new(name, format!("{n} of {n} pages"), format!("{b} before, {a} after"), b == n && a == n)
        }
        _ => Check::impossible(name, "mincore failed"),
    });
    checks
}

fn notes(spawn: Spawn, touched: usize) -> Vec<String> {
    let mut notes = vec![format!(
        "the parent wrote {} MiB of anonymous memory (4 KiB pages) before measuring, outside the clock",
        touched >> 20
    )];
    notes.push(
        match spawn {
            Spawn::ForkExit => "glibc fork (atfork handlers, then clone); the child _exit(0)s; waitpid",
            Spawn::ForkExec => "glibc fork; the child execve()s a 1 KiB static program without libc that exits 42; waitpid",
            Spawn::VforkExec => {
                "raw vfork + execve in one asm block (the child never returns to Rust); signals blocked outside the clock; waitpid"
            }
            Spawn::PosixSpawn => "glibc posix_spawn (clone(CLONE_VM|CLONE_VFORK), signals blocked inside it); waitpid",
            Spawn::Clone3 => "the bare clone3 system call, no flags (glibc's fork work left out); the child exit_groups; waitpid",
        }
        .to_string(),
    );
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Benchmark;
    use crate::sampler::SamplerConfig;
    use crate::testing::serial;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// `with_ctx` with an interrupt flag the test can raise from another thread.
    fn with_flag_ctx(budget_s: f64, f: impl FnOnce(&mut Ctx, &AtomicBool)) {
        let allowed = sys::cpu::allowed_cpus();
        let cpu = allowed[0];
        sys::cpu::pin_current_thread(cpu).expect("pin");
        let (timer, info) = platform::timer::detect();
        let scratch = tempfile::tempdir().expect("temporary directory");
        let flag = AtomicBool::new(false);
        let cfg = SamplerConfig { budget_s, warmup_s: 0.005, ..SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, cpu, scratch.path(), &flag);
        ctx.allowed_cpus = allowed;
        f(&mut ctx, &flag);
    }

    fn params(touched: &str) -> Params {
        Params::from([("touched".to_string(), serde_json::Value::from(touched))])
    }

    fn check<'a>(m: &'a Measured, starts: &str) -> &'a Check {
        m.checks.iter().find(|c| c.name.starts_with(starts)).unwrap_or_else(|| panic!("no check {starts}"))
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(touched_bytes("4MiB"), Some(4 << 20));
        assert_eq!(touched_bytes("1GiB"), Some(1 << 30));
        for bad in ["", "4", "MiB", "0MiB", "4mb", "-1MiB", "99999999999999999999GiB"] {
            assert_eq!(touched_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_process_row_reaps_its_children_and_passes_its_checks() {
        let _serial = serial();
        with_flag_ctx(0.03, |ctx, _| {
            for s in [Spawn::ForkExit, Spawn::ForkExec, Spawn::VforkExec, Spawn::PosixSpawn, Spawn::Clone3] {
                let b = Process(s);
                if b.available().is_err() {
                    continue;
                }
                match b.run(ctx, &params("4MiB")) {
                    Ok(m) => {
                        assert!(!m.samples.per_op_ns.is_empty(), "{s:?}");
                        for c in &m.checks {
                            assert_ne!(c.ok, Some(false), "{s:?}: {c:?}");
                        }
                        assert!(m.observed.contains_key("minor_faults_child_per_child"));
                    }
                    Err(NotMeasured::Skipped(why)) => assert_eq!(s, Spawn::Clone3, "{why}"),
                    Err(e) => panic!("{s:?}: {e:?}"),
                }
            }
            assert_eq!(lc::thread_children(), Some(vec![]));
        });
    }

    #[test]
    fn more_memory_than_the_machine_has_is_a_skip() {
        with_flag_ctx(0.02, |ctx, _| {
            let r = run_spawn(ctx, Spawn::ForkExit, 1 << 50, Target::ExitProgram, WAIT_DEADLINE);
            assert!(matches!(&r, Err(NotMeasured::Skipped(why)) if why.contains("MiB")), "{:?}", r.err());
        });
        assert_eq!(proc_field("MemAvailable:   123 kB\nVmPTE: 8 kB", "VmPTE"), Some(8));
        assert_eq!(proc_field("VmPTEx: 1", "VmPTE"), None);
    }

    #[test]
    fn a_failed_exec_shows_as_127() {
        let _serial = serial();
        with_flag_ctx(0.02, |ctx, _| {
            let target = Target::Other("/nonexistent/osprim-exit".into(), vec![]);
            let m = run_spawn(ctx, Spawn::ForkExec, 1 << 20, target, WAIT_DEADLINE).expect("measured");
            let c = check(&m, "every child ran the exit program");
            assert_eq!(c.ok, Some(false));
            assert!(c.observed.contains("exited with 127"), "{c:?}");
        });
    }

    #[test]
    fn a_hung_child_is_killed_reaped_and_reported() {
        let _serial = serial();
        with_flag_ctx(0.02, |ctx, _| {
            let target = Target::Other("/bin/sleep".into(), vec!["30"]);
            let began = std::time::Instant::now();
            let m = run_spawn(ctx, Spawn::PosixSpawn, 1 << 20, target, Duration::from_millis(100)).expect("measured");
            assert!(began.elapsed() < Duration::from_secs(20));
            assert_eq!(check(&m, "no child outlived").ok, Some(false));
            assert_eq!(check(&m, "no child left").ok, Some(true));
            assert_eq!(lc::thread_children(), Some(vec![]));
        });
    }

    #[test]
    fn an_interrupted_run_keeps_its_samples_and_leaves_no_child() {
        let _serial = serial();
        with_flag_ctx(30.0, |ctx, flag| {
            let began = std::time::Instant::now();
            let m = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    flag.store(true, Ordering::Relaxed);
                });
                Process(Spawn::ForkExit).run(ctx, &params("4MiB")).expect("measured")
            });
            assert!(began.elapsed() < Duration::from_secs(10), "stopped early");
            assert_eq!(m.samples.stop, Some(crate::sampler::StopReason::Interrupted));
            for c in &m.checks {
                assert_ne!(c.ok, Some(false), "{c:?}");
            }
            assert_eq!(lc::thread_children(), Some(vec![]));
        });
    }

    #[test]
    fn an_interrupted_thread_run_joins_every_thread() {
        let _serial = serial();
        with_flag_ctx(30.0, |ctx, flag| {
            let m = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(200));
                    flag.store(true, Ordering::Relaxed);
                });
                super::super::CreateJoin.run(ctx, &Params::new()).expect("measured")
            });
            assert_eq!(m.samples.stop, Some(crate::sampler::StopReason::Interrupted));
            for c in &m.checks {
                assert_ne!(c.ok, Some(false), "{c:?}");
            }
        });
    }
}
