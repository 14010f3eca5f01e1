//! Loading and unloading shared libraries: `lib.dlopen`, `lib.dlclose` (osprim's probe in a
//! running process) and `lib.dlopen.init` (the first load, in a fresh process, of a library
//! whose constructor does RightSpeed's initialisation).
//!
//! Seed rows: RightSpeed Table 3 "load and initialize RSLib for a process"
//! (`lib.dlopen.init`); Go! "install" / "uninstall" of a component (`lib.dlopen` /
//! `lib.dlclose`).
//!
//! `lib.dlopen` and `lib.dlclose` load osprim's probe (`probe/osprim_probe.rs`, built by
//! `build.rs`, 4 KiB, one function, no constructor, no dependencies), carried inside the binary
//! and written to the run's private directory before measuring.
//! **Timing model** ([`Ctx::iter_regions`]): each operation is timed on its own with the run's
//! timer (one timer overhead subtracted per operation): `lib.dlopen` times
//! `dlopen(RTLD_NOW | RTLD_LOCAL)` alone, the `dlclose` after it untimed; `lib.dlclose` times
//! `dlclose` alone, the `dlopen` before it untimed.
//! In the cold-cache mode (`cache=cold`, `crate::cold`) one open + close per sample, the
//! disturbance right before the timed half (after the untimed `dlopen` for `lib.dlclose`).
//! **Validation:** the loaded library answers its probe function, appears in `/proc/self/maps`
//! while open and is gone after `dlclose`; every open and close succeeded; and after every
//! close the library is no longer loaded (`dlopen(RTLD_NOLOAD)` finds nothing), so each timed
//! open really loaded it and each timed close really unloaded it, not just counted a reference.
//!
//! `lib.dlopen.init` loads osprim's initialising library (`probe/osprim_init.rs`), whose
//! constructor installs a `SIGIO` handler (the message hook; one `sigaction`), reads two files
//! from the run's private directory — the system and per-application "task type group" files,
//! 512 and 256 bytes, their paths in `OSPRIM_INIT_FILE_1`/`_2` — and gets the program's name
//! (`readlink("/proc/self/exe")`).
//! **Timing model:** one sample is one fresh process: osprim's helper executable
//! (`probe/osprim_helper.rs`, `dlopen-init` mode) is started with `exec`, and times exactly one
//! `dlopen(RTLD_NOW)` of the library — mapping, relocation and the constructor — with the run's
//! clock, and reports the ticks through a pipe. Starting and reaping the process is untimed.
//! **Validation** (every child): the library was not mapped before the `dlopen`
//! (`/proc/self/maps` and `RTLD_NOLOAD`); the open succeeded; the constructor did all four
//! steps, the handler in place for `SIGIO` is the library's, it read both files whole
//! (768 bytes) and a name as long as the helper's own `/proc/self/exe`; the child exited 0.

use super::interpose::{helper, install, timer_arg};
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use platform::timer::Timer;
use std::ffi::{CStr, CString};
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};
use sys::dl;
use sys::spawn::Helper;

static PROBE_SO: &[u8] = include_bytes!(env!("OSPRIM_PROBE_SO"));
static INIT_SO: &[u8] = include_bytes!(env!("OSPRIM_INIT_SO"));

/// Sizes of the two files the initialising library reads.
const INIT_FILES: [(&str, usize); 2] =
    [("task-groups-system", crate::fs::GROUP_FILES[0].0), ("task-groups-app", crate::fs::GROUP_FILES[1].0)];

/// `dlopen` alone.
pub struct Dlopen;
/// `dlclose` alone.
pub struct Dlclose;
/// The first `dlopen` of an initialising library in a fresh process.
pub struct DlopenInit;

fn mapped(path: &str) -> Option<bool> {
    std::fs::read_to_string("/proc/self/maps").ok().map(|m| m.lines().any(|l| l.ends_with(path)))
}

fn probe_available() -> Result<(), String> {
    if PROBE_SO.is_empty() { Err("the probe library could not be built (see build warnings)".into()) } else { Ok(()) }
}

impl Benchmark for Dlopen {
    fn id(&self) -> &'static str {
        "lib.dlopen"
    }
    fn about(&self) -> &'static str {
        "dlopen of a 4 KiB shared library (load, map, relocate); the dlclose after it untimed"
    }
    fn available(&self) -> Result<(), String> {
        probe_available()
    }
    /// One open + close per sample, the disturbance between the untimed half and the timed one.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        run_split(ctx, Op::Open)
    }
}

impl Benchmark for Dlclose {
    fn id(&self) -> &'static str {
        "lib.dlclose"
    }
    fn about(&self) -> &'static str {
        "dlclose of a 4 KiB shared library (unmap); the dlopen before it untimed"
    }
    fn available(&self) -> Result<(), String> {
        probe_available()
    }
    /// One open + close per sample, the disturbance between the untimed half and the timed one.
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        run_split(ctx, Op::Close)
    }
}

/// Which half of open + close is timed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Open,
    Close,
}

/// What the loop saw.
#[derive(Default)]
struct Tally {
    ops: u64,
    open_failed: u64,
    close_failed: u64,
    still_loaded: u64,
}

/// One open + close of `path`, the `op` half timed; its ticks (0 if the timed call never ran).
/// `before` runs right before the clock starts (the cold mode's disturbance; nothing, and so
/// no code, in the hot mode).
#[inline(never)]
fn timed_half(timer: &Timer, path: &CStr, op: Op, t: &mut Tally, before: impl Fn()) -> u64 {
    t.ops += 1;
    let ticks = match op {
        Op::Open => {
            before();
            let t0 = timer.start();
            let h = dl::open(black_box(path));
            let t1 = timer.stop();
            match h {
                Some(h) => t.close_failed += u64::from(!dl::close(h)),
                None => t.open_failed += 1,
            }
            t1.wrapping_sub(t0)
        }
        Op::Close => match dl::open(path) {
            Some(h) => {
                before();
                let t0 = timer.start();
                let ok = dl::close(black_box(h));
                let t1 = timer.stop();
                t.close_failed += u64::from(!ok);
                t1.wrapping_sub(t0)
            }
            None => {
                t.open_failed += 1;
                0
            }
        },
    };
    t.still_loaded += u64::from(dl::is_loaded(path));
    ticks
}

fn run_split(ctx: &mut Ctx, op: Op) -> Result<Measured, NotMeasured> {
    probe_available().map_err(NotMeasured::Skipped)?;
    let path = install(ctx.scratch, "libosprim_probe.so", PROBE_SO, 0o644)?;
    let path_str = path.to_string_lossy().into_owned();
    let cpath = CString::new(path_str.clone()).map_err(|_| NotMeasured::Failed("path contains NUL".into()))?;

    let lib = dl::Library::open(&cpath).map_err(|e| NotMeasured::Failed(format!("dlopen {path_str}: {e}")))?;
    let answer = lib.probe_answer();
    let while_open = mapped(&path_str);
    drop(lib);
    let after_close = mapped(&path_str);

    let timer = ctx.timer;
    let mut t = Tally::default();
    let samples = {
        let c = &*ctx;
        if c.cold().is_some() {
            c.iter_cold(|b| Some(Timed::one(timed_half(&timer, &cpath, op, &mut t, || b.now()))))
        } else {
            c.iter_regions(|n| {
                let ticks: u64 = (0..n).map(|_| timed_half(&timer, &cpath, op, &mut t, || {})).sum();
                Timed::regions(ticks, n)
            })
        }
    };
    let maps_check = match (while_open, after_close) {
        (Some(o), Some(c)) => Check::new(
            "mapped while open, unmapped after dlclose (/proc/self/maps)",
            "mapped, then gone",
            format!("{}, then {}", if o { "mapped" } else { "not mapped" }, if c { "still mapped" } else { "gone" }),
            o && !c,
        ),
        _ => Check::impossible("mapped while open, unmapped after dlclose", "/proc/self/maps is not readable"),
    };
    let checks = vec![
        Check::new("probe function answers", "42", format!("{answer:?}"), answer == Some(42)),
        maps_check,
        Check::all_ok("every dlopen succeeds", t.open_failed, t.ops),
        Check::all_ok("every dlclose succeeds", t.close_failed, t.ops),
        Check::all_ok("unloaded after every dlclose (dlopen RTLD_NOLOAD finds nothing)", t.still_loaded, t.ops),
    ];
    Ok(Measured::new(samples, checks))
}

/// What one fresh process reported about its `dlopen`.
#[derive(Clone, Debug, Default, PartialEq)]
struct InitReport {
    ticks: u64,
    premapped: bool,
    opened: bool,
    state: Option<u64>,
    complete: Option<u64>,
    hook: bool,
    file_bytes: Option<u64>,
    name_len: Option<u64>,
    name_expected: u64,
}

impl InitReport {
    /// Parses the helper's line of `key=value`s (`none` for a value it could not get).
    fn parse(line: &str) -> Result<InitReport, String> {
        let mut r = InitReport::default();
        let mut seen = 0;
        for field in line.split_whitespace() {
            let (k, v) = field.split_once('=').ok_or_else(|| format!("no '=' in {field:?}"))?;
            let num = || -> Result<Option<u64>, String> {
                if v == "none" { Ok(None) } else { v.parse().map(Some).map_err(|_| format!("{k}={v:?} is no number")) }
            };
            let flag = || -> Result<bool, String> {
                match v {
                    "0" => Ok(false),
                    "1" => Ok(true),
                    _ => Err(format!("{k}={v:?} is not 0 or 1")),
                }
            };
            match k {
                "ticks" => r.ticks = num()?.ok_or("no ticks")?,
                "premapped" => r.premapped = flag()?,
                "opened" => r.opened = flag()?,
                "state" => r.state = num()?,
                "complete" => r.complete = num()?,
                "hook" => r.hook = flag()?,
                "file_bytes" => r.file_bytes = num()?,
                "name_len" => r.name_len = num()?,
                "name_expected" => r.name_expected = num()?.unwrap_or(0),
                _ => continue,
            }
            seen += 1;
        }
        if seen < 9 {
            return Err(format!("incomplete report {line:?}"));
        }
        Ok(r)
    }

    fn constructor_ran(&self) -> bool {
        self.opened && self.state.is_some() && self.state == self.complete && self.hook
    }
}

/// What the children of `lib.dlopen.init` showed, over the run.
#[derive(Default)]
struct InitTally {
    children: u64,
    premapped: u64,
    not_opened: u64,
    constructor_short: u64,
    reads_wrong: u64,
    bad_exit: u64,
    last_bad_exit: Option<String>,
}

impl InitTally {
    fn add(&mut self, r: &InitReport, expected_bytes: u64) {
        self.children += 1;
        self.premapped += u64::from(r.premapped);
        self.not_opened += u64::from(!r.opened);
        self.constructor_short += u64::from(!r.constructor_ran());
        let name_ok = r.name_len.is_some_and(|n| n > 0 && n == r.name_expected);
        self.reads_wrong += u64::from(r.file_bytes != Some(expected_bytes) || !name_ok);
    }
}

/// Starts one fresh helper, which times one `dlopen` of the library; its report.
fn one_child(cmd: &mut Command, t: &mut InitTally, expected_bytes: u64) -> Result<u64, String> {
    let mut child = Helper::spawn(cmd).map_err(|e| format!("start the helper: {e}"))?;
    let line = child.recv_line(Instant::now() + Duration::from_secs(10)).map_err(|e| format!("the helper: {e}"))?;
    let status = child.finish(Duration::from_secs(5)).ok().map_err(|e| format!("reap the helper: {e}"))?;
    if !status.success() {
        t.bad_exit += 1;
        t.last_bad_exit = Some(status.describe());
    }
    let r = InitReport::parse(&line)?;
    t.add(&r, expected_bytes);
    Ok(r.ticks)
}

impl Benchmark for DlopenInit {
    fn id(&self) -> &'static str {
        "lib.dlopen.init"
    }
    fn about(&self) -> &'static str {
        "first dlopen in a fresh process of a library whose constructor installs a handler, reads two files, gets the program name"
    }
    fn sampling(&self, _: &Params) -> super::SamplingOverride {
        // One sample is one child (the sampler would otherwise batch several into a sample).
        super::SamplingOverride { batch: Some(1), ..Default::default() }
    }
    fn available(&self) -> Result<(), String> {
        if INIT_SO.is_empty() || super::interpose::HELPER_BIN.is_empty() {
            return Err("the initialising library or the helper could not be built (see build warnings)".into());
        }
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        let helper = helper(ctx)?;
        let lib = install(ctx.scratch, "libosprim_init.so", INIT_SO, 0o644)?;
        let mut files = Vec::new();
        for (i, (name, size)) in INIT_FILES.iter().enumerate() {
            let content: Vec<u8> = (0..*size).map(|k| b'a' + (k % 26) as u8).collect();
            let path = install(ctx.scratch, name, &content, 0o644)?;
            // Read once, so the files are in the page cache, as RightSpeed's were.
            std::fs::read(&path).map_err(|e| NotMeasured::Failed(format!("read {}: {e}", path.display())))?;
            files.push((format!("OSPRIM_INIT_FILE_{}", i + 1), path));
        }
        let expected_bytes = INIT_FILES.iter().map(|(_, s)| *s as u64).sum::<u64>();
        let mut cmd = Command::new(&helper);
        cmd.args([timer_arg(ctx), "dlopen-init"]).arg(&lib).env_remove("LD_PRELOAD").envs(files);

        let mut t = InitTally::default();
        let mut error = None;
        let samples = {
            let c = &*ctx;
            c.iter_regions_fallible(|n| {
                let mut ticks = 0;
                for _ in 0..n {
                    match one_child(&mut cmd, &mut t, expected_bytes) {
                        Ok(k) => ticks += k,
                        Err(e) => {
                            error = Some(e);
                            return None;
                        }
                    }
                }
                Some(Timed::regions(ticks, n))
            })
        };
        if samples.per_op_ns.is_empty() {
            // Cut off by Ctrl-C before a sample: the row says interrupted, not failed.
            if error.is_none() && samples.stop == Some(crate::sampler::StopReason::Interrupted) {
                return Ok(Measured::new(samples, Vec::new()));
            }
            return Err(NotMeasured::Failed(error.unwrap_or_else(|| "no samples".into())));
        }
        let checks = vec![
            Check::all_ok("the library was not mapped before the dlopen (a fresh process)", t.premapped, t.children),
            Check::all_ok("every dlopen succeeded", t.not_opened, t.children),
            Check::all_ok(
                "the constructor ran: its SIGIO handler is in place, all four steps done",
                t.constructor_short,
                t.children,
            ),
            Check::all_ok(
                format!("the constructor read both files whole ({expected_bytes} bytes) and the program name"),
                t.reads_wrong,
                t.children,
            ),
            Check::new(
                "every child exited 0",
                format!("{} exits 0", t.children),
                match &t.last_bad_exit {
                    Some(s) => format!("{} bad, last: {s}", t.bad_exit),
                    None => format!("{} exits 0", t.children),
                },
                t.bad_exit == 0,
            ),
        ];
        let mut m = Measured::new(samples, checks);
        m.notes.push(
            "one sample per fresh process (osprim's helper, started with exec); only its one dlopen is timed".into(),
        );
        if let Some(e) = error {
            m.notes.push(format!("sampling stopped early: {e}"));
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};

    #[test]
    fn the_helper_report_parses() {
        let line =
            "ticks=1234 premapped=0 opened=1 state=15 complete=15 hook=1 file_bytes=768 name_len=29 name_expected=29";
        let r = InitReport::parse(line).unwrap();
        assert_eq!(r.ticks, 1234);
        assert!(r.constructor_ran());
        let mut t = InitTally::default();
        t.add(&r, 768);
        assert_eq!((t.children, t.premapped, t.constructor_short, t.reads_wrong), (1, 0, 0, 0));
        let short = InitReport::parse(&line.replace("state=15", "state=9")).unwrap();
        assert!(!short.constructor_ran());
        t.add(&InitReport::parse(&line.replace("file_bytes=768", "file_bytes=none")).unwrap(), 768);
        assert_eq!(t.reads_wrong, 1);
        assert!(InitReport::parse("ticks=1 premapped=2").is_err());
        assert!(InitReport::parse("ticks=1").is_err(), "incomplete");
    }

    fn all_checks_pass(m: &Measured) {
        for c in &m.checks {
            assert_eq!(c.ok, Some(true), "{c:?}");
        }
        assert!(!m.samples.per_op_ns.is_empty());
    }

    #[test]
    fn open_and_close_are_timed_apart_and_really_load() {
        with_ctx(0.05, |ctx| {
            all_checks_pass(&Dlopen.run(ctx, &Params::new()).unwrap());
            all_checks_pass(&Dlclose.run(ctx, &Params::new()).unwrap());
        });
    }

    #[test]
    fn a_fresh_process_runs_the_constructor() {
        let _serial = serial();
        with_ctx(0.05, |ctx| {
            let m = crate::testing::visit(ctx, &DlopenInit, &Params::new()).unwrap();
            all_checks_pass(&m);
            assert_eq!(m.samples.iterations_per_sample, 1, "one child per sample");
        });
    }
}
