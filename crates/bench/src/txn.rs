//! Transactions on osprim's recoverable virtual memory ([`rvm`]): `txn.begin`,
//! `txn.commit_ro`, `txn.commit_8b`, each with parameters `detect` (`mprotect`, `uffd`) and
//! `track` (`writes`, `all`).
//!
//! **Seed rows:** Rhino (Digital UNIX and SPIN) Table 2 "transaction begin", "commit
//! read-only", "commit 8 bytes on one page", each a total with its trap (the operation's own
//! kernel crossings) and other parts.
//!
//! **Setup** (outside the clock): a 16-page segment and its log are created in the run's
//! scratch directory, so the commits' `fdatasync`s go to the working file system — recorded
//! in the row's params (`filesystem`, `device`, `tmpfs`) with a note when it is tmpfs (a sync
//! there reaches no device). The variants:
//! - `detect`: how a write is caught — `mprotect` (SIGSEGV handler) or `uffd` (userfaultfd
//!   write-protect; skipped with the kernel's reason where it does not cover the segment's
//!   memory, i.e. regular files on ext4/xfs/btrfs).
//! - `track`: `writes` (begin write-protects the segment; reads never trap) or `all` (as
//!   Rhino: begin makes the segment `PROT_NONE`, a read fault records the page and grants
//!   `PROT_READ`, a write fault takes the pre-image and grants read-write, and commit makes
//!   every page touched `PROT_NONE` again). `all` exists for `detect=mprotect` only:
//!   userfaultfd cannot track reads (its write-protect mode sees writes only; its missing and
//!   minor modes see only pages absent from the page tables), so there is no `uffd`/`all` row.
//!
//! Both files are removed when the benchmark ends (the runner removes the scratch directory
//! after Ctrl-C too).
//!
//! **Timing model** ([`Ctx::iter_regions`]): every operation is timed on its own, with the run's
//! timer read at its start and at the library's stage boundaries ([`Stage`], through the
//! `*_probed` calls), the last stamp ending it. **trap** is the operation's own kernel crossings,
//! *timed in place*: the RVM calls the probe right before and right after each of its own system
//! calls ([`Stage::Enter`], [`Stage::Exit`], at the call sites where it counts them,
//! [`rvm::Crossings`]), the benchmark stamps the timer at both, and trap = the sum of those
//! intervals (each charged one timer overhead); **other** = the operation's total − trap, so the
//! two add up to the total sample by sample, and other is the time outside the system calls
//! (never below 0 but by the timer's noise: checked). The trap includes the few instructions of
//! the library's call wrapper inside the two stamps, nothing else; no neighbouring call is timed.
//! k (the system calls counted per operation) is `observed.trap_crossings` (with
//! `trap_crossings_range` over the samples) and `observed.trap_timing` = `"stamped"`; a note says
//! "trap: the operation's own k system calls, each timed in place". Faults taken inside the
//! operation are counted too and must be 0.
//! - `txn.begin`: `begin` (forget the last dirty set; protect the segment: one `mprotect`, or
//!   one `UFFDIO_WRITEPROTECT`: k = 1, the trap). Stages `trap`, `other`. Each begin is followed,
//!   untimed, by the commit of the empty transaction.
//! - `txn.commit_ro`: the commit alone of a transaction that changed nothing; begin (and, with
//!   `track=all`, a one-byte read of one page, whose read fault is timed apart and reported in
//!   `observed.read_fault_ns`) come first, outside the clock. With `track=writes` the commit
//!   diffs no page and makes no system call at all: k = 0, trap = 0, other = the total. With
//!   `track=all` it re-protects the page read (one `mprotect`, k = 1); its diff and re-protect
//!   parts are in `observed.diff_ns`, `observed.reprotect_ns`.
//! - `txn.commit_8b`: the commit alone of a transaction that stored 8 bytes (all changed) on one
//!   page. Begin and the store are outside the clock; the store's write fault (fault, handler:
//!   pre-image copy and one `mprotect`, return) falls **between begin and commit, outside the
//!   timed region**: it is timed apart as `observed.store_fault_ns` (and a row note), not a
//!   stage of the commit. trap = all of the commit's own system calls, k = 5 (`pwrite` log,
//!   `fdatasync` log, `pwrite` apply, `fdatasync` segment, `pwrite` trim), 6 with `track=all`
//!   (and the re-protecting `mprotect`). Stages `trap` and `other`, and as detail of the same commit (a second
//!   split of the same total, not added to trap + other): `diff`; `log write` (encoding +
//!   `pwrite` of the records); `sync` (the two `fdatasync`s: the log, the commit point, and the
//!   segment file after apply); `apply` (`pwrite` of the changed range into the file); `trim`
//!   (zeroing the log's head: a 32-byte `pwrite`, no sync); with `track=all`, `reprotect` (the
//!   page made `PROT_NONE` again).
//!
//! Each stamp is a serialising counter read; every interval between two stamps is charged one
//! timer overhead (the cost of an empty self-timed region, which the sampler subtracts once per
//! region it is told of), so an operation with j intervals (its steps, each split again by the
//! two stamps of every system call inside it) has j overheads subtracted, each stage one per
//! interval it spans, the trap one per system call, and each separately timed piece (store,
//! read) one.
//!
//! **Validation:** every operation succeeds and commits what it should (one 8-byte record, or
//! nothing); the segment's trap counters rose by exactly what each transaction should cause —
//! writes: one write trap per transaction that wrote (so begin really protected the page and
//! each first write trapped once), none for the others; reads (`track=all`): one read trap per
//! transaction of `txn.commit_ro` and none elsewhere (where the CPU does not report a fault's
//! kind, x86-64 aside, a first write also traps once as a read first); with `track=all`, one
//! re-protecting `mprotect` per commit, and a probe read after the last commit faults again (the
//! page was re-protected); read-only commits made no `fdatasync` and wrote no log byte, and
//! 8-byte commits made exactly two; after the run the log holds no transaction and the last
//! value written is in the segment file (read back with `pread`); for `txn.begin`, a probe
//! transaction after sampling shows two first writes to two pages trapping twice (and, with
//! `track=all`, a read of a third page trapping once as a read) and abort restoring them.
//! The split's own checks: every operation's counted k equals its path's (above) with no fault
//! inside, and as many of its system calls were stamped on both sides as were counted; after
//! sampling, three more operations are counted by the kernel (syscall user dispatch, `sys::sud`,
//! independent of the RVM) and match the RVM's count; trap + other = the total in every sample,
//! and that total is the sampler's; trap ≤ total in every sample — else the check fails and
//! flags the row.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, SamplingOverride};
use crate::sampler::{Timed, overhead_of};
use platform::timer::Timer;
use rvm::{self, Detection, Filesystem, Options, Segment, Stage, Tracking};
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Pages in the benchmark segment.
const PAGES: usize = 16;
/// The page `txn.commit_8b` writes (not the first, to keep it off any header-like spot).
const PAGE_WRITTEN: usize = 1;
/// The page `txn.commit_ro` reads with `track=all`.
const PAGE_READ: usize = 3;
/// Offset of the 8-byte value (or the byte read) within that page.
const VALUE_OFFSET: usize = 64;
/// The warm-up is cut so it takes about this share of the budget when an operation is slow
/// (a commit syncs twice: milliseconds on some disks).
const WARMUP_SHARE: f64 = 0.1;

/// `begin`: protect the segment.
pub struct Begin;
/// `commit` of a transaction that changed nothing.
pub struct CommitReadOnly;
/// Durable `commit` of a transaction that changed 8 bytes on one page.
pub struct Commit8b;

impl Benchmark for Begin {
    fn id(&self) -> &'static str {
        "txn.begin"
    }
    fn about(&self) -> &'static str {
        "recoverable-VM transaction begin: protect a 16-page segment"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        mode_variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_begin(ctx, params)
    }
}

impl Benchmark for CommitReadOnly {
    fn id(&self) -> &'static str {
        "txn.commit_ro"
    }
    fn about(&self) -> &'static str {
        "recoverable-VM commit of a read-only transaction (no I/O; track=all re-protects the page read)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        mode_variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_commit_ro(ctx, params)
    }
}

impl Benchmark for Commit8b {
    fn id(&self) -> &'static str {
        "txn.commit_8b"
    }
    fn about(&self) -> &'static str {
        "recoverable-VM durable commit of 8 bytes changed on one page (diff, log, 2 fdatasync, apply, trim)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        mode_variants()
    }
    fn sampling(&self, _: &Params) -> SamplingOverride {
        SamplingOverride { warmup_share: Some(WARMUP_SHARE), ..Default::default() }
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_commit_8b(ctx, params)
    }
}

/// `detect` × `track`, without uffd/all (userfaultfd cannot track reads).
fn mode_variants() -> Vec<Params> {
    let mut out = Vec::new();
    for d in Detection::ALL {
        for t in Tracking::ALL {
            if d == Detection::Uffd && t == Tracking::All {
                continue;
            }
            out.push(Params::from([
                ("detect".to_string(), serde_json::json!(d.name())),
                ("track".to_string(), serde_json::json!(t.name())),
            ]));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Set-up

/// The benchmark's segment, and its files removed on drop.
struct Fixture {
    seg: Segment,
    fs: Filesystem,
    _files: Files,
}

impl Fixture {
    fn tracks_reads(&self) -> bool {
        self.seg.tracking() == Tracking::All
    }
}

/// Files removed on drop.
struct Files(Vec<PathBuf>);

impl Drop for Files {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn fixture(ctx: &Ctx, params: &Params, name: &str) -> Result<Fixture, NotMeasured> {
    let get = |k: &str, default: &'static str| params.get(k).and_then(|v| v.as_str()).unwrap_or(default).to_string();
    let (detect, track) = (get("detect", "mprotect"), get("track", "writes"));
    let detection = Detection::from_name(&detect)
        .ok_or_else(|| NotMeasured::Failed(format!("unknown write-detection mode '{detect}'")))?;
    let tracking =
        Tracking::from_name(&track).ok_or_else(|| NotMeasured::Failed(format!("unknown tracking mode '{track}'")))?;
    let path = ctx.scratch.join(format!("txn-{name}-{detect}-{track}.seg"));
    let files = Files(vec![path.clone(), path.with_extension("seg.log")]);
    let seg = Segment::create(&path, PAGES, Options { detection, tracking }).map_err(|e| match e {
        rvm::Error::Unavailable { reason, .. } => {
            NotMeasured::Skipped(format!("{detect} detection, track={track}: {reason}"))
        }
        e => NotMeasured::Failed(e.to_string()),
    })?;
    let fs = rvm::filesystem_of(ctx.scratch);
    Ok(Fixture { seg, fs, _files: files })
}

/// Params and notes every txn row carries.
fn describe(mut m: Measured, fx: &Fixture) -> Measured {
    let p = &mut m.params;
    p.insert("filesystem".into(), serde_json::json!(fx.fs.kind));
    p.insert("device".into(), serde_json::json!(fx.fs.device.clone().unwrap_or_else(|| "unknown".into())));
    p.insert("tmpfs".into(), serde_json::json!(fx.fs.in_memory()));
    p.insert("segment_bytes".into(), serde_json::json!(fx.seg.len()));
    if fx.fs.in_memory() {
        m = m.note(format!(
            "the segment is on {} (memory): fdatasync reaches no device, so commits exclude disk latency",
            fx.fs.kind
        ));
    }
    m
}

// ---------------------------------------------------------------------------------------------
// Stage accounting

/// How a stage's time per operation is formed from a sample.
#[derive(Clone, Copy, Debug)]
enum Part {
    /// The sum of these step intervals of the operation.
    Span(&'static [usize]),
    /// The operation's own system calls, each timed in place: the sum of the intervals between
    /// the stamps right before and right after each ([`Stage::Enter`], [`Stage::Exit`]).
    Trap,
    /// The operation's total less [`Part::Trap`].
    Other,
    /// A piece timed apart, outside the operation's total ([`Breakdown::add_aside`]).
    Aside,
}

/// Named parts.
type Parts = &'static [(&'static str, Part)];

/// Most step intervals an operation has (`txn.commit_8b` with read tracking: 7).
const MAX_INTERVALS: usize = 7;

/// The stamps of one operation: the run's timer read at its start, at each step the benchmark
/// gives a slot ([`Stage`] → stamp index), and right before and right after each of its system
/// calls ([`Stage::Enter`], [`Stage::Exit`]). Step interval i runs from step stamp i to i + 1;
/// the crossings' stamps inside it split it further (each split is one more interval, charged
/// one more timer overhead).
#[derive(Clone, Copy, Debug, Default)]
struct OpStamps {
    /// Step stamps: `[0]` the start, `[i]` the step slotted at i (0: not reached).
    steps: [u64; MAX_INTERVALS + 1],
    /// Crossing stamps taken inside each step interval.
    inner: [u32; MAX_INTERVALS + 1],
    /// Ticks inside the crossings (each exit stamp − its enter stamp), summed.
    trap: u64,
    /// Crossings stamped on both sides.
    stamped: u32,
    /// Enter stamps without their exit, or exits without an enter (a failed operation).
    unpaired: u32,
    /// The open crossing's enter stamp.
    enter: Option<u64>,
    /// The step interval the operation is in.
    cur: usize,
}

/// The probe of one operation: stamps each slotted step into `op.steps[slot(stage)]`, and the
/// edges of each system call (bookkeeping before the enter stamp and after the exit stamp, so
/// that it falls outside the call's interval).
#[inline(always)]
fn stamp_at<'a>(
    timer: &'a Timer,
    op: &'a mut OpStamps,
    slot: impl Fn(Stage) -> Option<usize> + 'a,
) -> impl FnMut(Stage) + 'a {
    move |s| match s {
        Stage::Enter(_) => {
            op.inner[op.cur] += 1;
            op.unpaired += u32::from(op.enter.is_some());
            op.enter = Some(timer.stop());
        }
        Stage::Exit(_) => {
            let t = timer.stop();
            op.inner[op.cur] += 1;
            match op.enter.take() {
                Some(t0) => {
                    op.trap += t.wrapping_sub(t0);
                    op.stamped += 1;
                }
                None => op.unpaired += 1,
            }
        }
        s => {
            if let Some(i) = slot(s) {
                op.steps[i] = timer.stop();
                op.cur = i.min(MAX_INTERVALS);
            }
        }
    }
}

/// Per-stage times: the step intervals, their timer reads and the crossings are summed over a
/// sample's operations, then turned into ns per operation for each named part. `stages` become
/// the row's breakdown (they add up to the total, or split it again in finer detail); `extras`
/// go to `observed` as medians over the kept samples (parts of the total, or pieces outside
/// it). Beside them, per sample: k (the operations' counted system calls, per operation) and
/// the total.
struct Breakdown {
    stages: Parts,
    extras: Parts,
    /// Ticks of each step interval.
    acc: Vec<u64>,
    /// Intervals (timer overheads) inside each step interval: 1 per operation, plus one per
    /// crossing stamp in it.
    regions: Vec<u64>,
    /// Ticks inside the crossings, and crossings stamped.
    trap: u64,
    stamped: u64,
    aside: u64,
    /// System calls counted by the RVM.
    syscalls: u64,
    out: Vec<Vec<f64>>,
    k: Vec<f64>,
    totals: Vec<f64>,
    /// Operations added.
    ops: u64,
    /// Operations whose counted crossings differ from the path's (`expected`), or that failed.
    miscounted: u64,
    /// Operations whose stamped crossings differ from their counted ones, or with an unpaired
    /// stamp.
    unstamped: u64,
    /// Protection faults taken inside the operations.
    faults: u64,
    /// System calls each operation's path makes.
    expected: u32,
}

/// What a row's samples say of its trap: k over the kept samples, and the consistency of the
/// stages with the total.
#[derive(Debug)]
struct Account {
    /// Median k (system calls per operation), and its range.
    k: f64,
    k_range: [f64; 2],
    /// Largest |trap + other − total| / total over the samples.
    worst_sum_error: f64,
    /// Largest |own total − the sampler's| / the sampler's over the samples.
    worst_total_error: f64,
    /// Samples whose trap exceeds their total (other < 0), of all kept.
    trap_over_total: usize,
    samples: usize,
}

impl Breakdown {
    fn new(intervals: usize, stages: Parts, extras: Parts, expected: u32) -> Breakdown {
        assert!(intervals <= MAX_INTERVALS, "at most {MAX_INTERVALS} step intervals");
        let out = stages.iter().chain(extras).map(|_| Vec::with_capacity(4096)).collect();
        Breakdown {
            stages,
            extras,
            acc: vec![0; intervals],
            regions: vec![0; intervals],
            trap: 0,
            stamped: 0,
            aside: 0,
            syscalls: 0,
            out,
            k: Vec::with_capacity(4096),
            totals: Vec::with_capacity(4096),
            ops: 0,
            miscounted: 0,
            unstamped: 0,
            faults: 0,
            expected,
        }
    }

    /// Adds one operation: its stamps, and its crossings as the RVM counted them (`None`: the
    /// operation failed). A step stamp left at 0 (a step not reached: the operation failed)
    /// takes the one before it, so its interval is 0.
    #[inline(always)]
    fn add(&mut self, op: &mut OpStamps, counted: Option<rvm::Crossings>) {
        let n = self.acc.len();
        for i in 1..=n {
            if op.steps[i] == 0 {
                op.steps[i] = op.steps[i - 1];
            }
        }
        for i in 0..n {
            self.acc[i] += op.steps[i + 1].wrapping_sub(op.steps[i]);
            self.regions[i] += 1 + u64::from(op.inner[i]);
        }
        self.trap += op.trap;
        self.stamped += u64::from(op.stamped);
        let c = counted.unwrap_or(rvm::Crossings { syscalls: 0, faults: 0 });
        self.ops += 1;
        self.syscalls += u64::from(c.syscalls);
        self.faults += u64::from(c.faults);
        self.miscounted += u64::from(counted.is_none() || c.syscalls != self.expected || c.faults != 0);
        self.unstamped += u64::from(op.stamped != c.syscalls || op.unpaired != 0 || op.enter.is_some());
    }

    /// Adds the ticks of one piece timed apart (one start/stop pair).
    fn add_aside(&mut self, ticks: u64) {
        self.aside += ticks;
    }

    /// Closes a sample of `n` operations; returns its total ticks and timed intervals (every
    /// interval between two stamps of an operation) for the sampler, which subtracts one
    /// overhead per interval. `other` is computed from exactly what the sampler will record, so
    /// trap + other is the sample.
    fn end_sample(&mut self, timer: &Timer, n: u64) -> Timed {
        let nf = n.max(1) as f64;
        let total: u64 = self.acc.iter().sum();
        let regions: u64 = self.regions.iter().sum();
        // The sampler's own formula for this sample.
        let ns = |ticks: u64, regions: u64| timer.ticks_to_ns(ticks as f64 - overhead_of(timer, regions)) / nf;
        let total_ns = ns(total, regions);
        let trap_ns = ns(self.trap, self.stamped);
        let aside_ns = ns(self.aside, n);
        for (out, (_, part)) in self.out.iter_mut().zip(self.stages.iter().chain(self.extras)) {
            out.push(match part {
                Part::Span(spans) => {
                    let t: u64 = spans.iter().map(|&i| self.acc[i]).sum();
                    let r: u64 = spans.iter().map(|&i| self.regions[i]).sum();
                    ns(t, r)
                }
                Part::Trap => trap_ns,
                Part::Other => total_ns - trap_ns,
                Part::Aside => aside_ns,
            });
        }
        self.k.push(self.syscalls as f64 / nf);
        self.totals.push(total_ns);
        self.acc.iter_mut().for_each(|a| *a = 0);
        self.regions.iter_mut().for_each(|r| *r = 0);
        (self.trap, self.stamped, self.aside, self.syscalls) = (0, 0, 0, 0);
        Timed::regions(total, regions)
    }

    /// The stages' samples, keeping the last `samples` (the sampler's; earlier ones were
    /// warm-up), and the extras' medians over those, as `observed` entries `<name>_ns`; k as
    /// `observed.trap_crossings` (median, with `trap_crossings_range`), `observed.trap_timing`
    /// = "stamped"; the row's note on the trap and its checks ([`Breakdown::checks`]; `path`
    /// names the operation's system calls).
    fn finish(mut self, m: &mut Measured, path: &str) {
        let samples = m.samples.per_op_ns.len();
        let n = self.stages.len();
        let mut out = std::mem::take(&mut self.out).into_iter();
        let keep = |v: Vec<f64>| v[v.len().saturating_sub(samples)..].to_vec();
        m.breakdown =
            self.stages.iter().zip(out.by_ref().take(n)).map(|((name, _), v)| (name.to_string(), keep(v))).collect();
        for ((name, _), v) in self.extras.iter().zip(out) {
            let mut v = keep(v);
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let median = (stats::median(&v) * 10.0).round() / 10.0;
            m.observed.insert(format!("{}_ns", name.replace(' ', "_")), serde_json::json!(median));
        }
        let mut k = keep(std::mem::take(&mut self.k));
        k.sort_by(f64::total_cmp);
        let stage = |name: &str| m.breakdown.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
        let trap_over_total = match (stage("trap"), stage("other")) {
            (Some(t), Some(o)) => t.iter().zip(o).filter(|(t, o)| **o < 0.0 && **t > 0.0).count(),
            _ => samples,
        };
        let acct = Account {
            k: stats::median(&k),
            k_range: [k.first().copied().unwrap_or(f64::NAN), k.last().copied().unwrap_or(f64::NAN)],
            worst_sum_error: worst_sum_error(&m.breakdown, &m.samples.per_op_ns),
            worst_total_error: keep(std::mem::take(&mut self.totals))
                .iter()
                .zip(&m.samples.per_op_ns)
                .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
                .fold(0.0, f64::max),
            trap_over_total,
            samples,
        };
        let o = &mut m.observed;
        o.insert("trap_timing".into(), serde_json::json!("stamped"));
        o.insert("trap_crossings".into(), serde_json::json!(acct.k));
        o.insert("trap_crossings_range".into(), serde_json::json!(acct.k_range));
        m.notes.push(trap_note(&acct, path));
        m.checks.extend(self.checks(&acct, path));
    }

    /// The checks of the split: k equals the path's count in every operation, with no fault
    /// inside; every call counted was stamped on both sides; trap + other = total, the totals
    /// are the sampler's, and the trap never exceeds its total.
    fn checks(&self, a: &Account, path: &str) -> Vec<Check> {
        let (sum, total) = (a.worst_sum_error, a.worst_total_error);
        vec![
            Check::new(
                format!("system calls counted by the RVM = its code path's ({path})"),
                format!("{} per operation and no fault, in all {} operations", self.expected, self.ops),
                format!("{} operations differ, {} faults", self.miscounted, self.faults),
                self.miscounted == 0 && self.faults == 0 && self.ops > 0,
            ),
            Check::new(
                "every system call counted was timed in place (stamped right before and right after)",
                format!("as many stamped calls as counted ones, in all {} operations", self.ops),
                format!("{} operations differ", self.unstamped),
                self.unstamped == 0 && self.ops > 0,
            ),
            Check::new(
                "trap + other = total in every sample (one measurement)",
                "|trap + other − total| / total ≤ 1e-9",
                format!("largest {sum:.1e}"),
                sum <= 1e-9,
            ),
            Check::new(
                "the total the stages split is the sampler's",
                "the same per sample (relative difference ≤ 1e-9)",
                format!("largest {total:.1e}"),
                total <= 1e-9,
            ),
            Check::new(
                "trap ≤ total in every sample (other ≥ 0)",
                format!("0 of {} samples with trap > total", a.samples),
                format!("{}", a.trap_over_total),
                a.trap_over_total == 0,
            ),
        ]
    }
}

/// Largest |trap + other − total| / total over the samples, from the stages named so.
fn worst_sum_error(breakdown: &[(String, Vec<f64>)], totals: &[f64]) -> f64 {
    let stage = |name: &str| breakdown.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
    match (stage("trap"), stage("other")) {
        (Some(t), Some(o)) => {
            t.iter().zip(o).zip(totals).map(|((t, o), s)| (t + o - s).abs() / s.abs().max(1.0)).fold(0.0, f64::max)
        }
        _ => f64::INFINITY,
    }
}

/// The row's note on its trap: "trap: the operation's own k system calls, each timed in
/// place", and how. It holds no measured time, so every round writes the same note (rounds'
/// notes are kept once each).
fn trap_note(a: &Account, path: &str) -> String {
    if a.k_range == [0.0, 0.0] {
        return "trap = 0: the operation makes no system call (none counted, none stamped); other = the total".into();
    }
    let k = if a.k_range[0] == a.k_range[1] {
        format!("{}", a.k)
    } else {
        format!("{} (per sample {}–{})", a.k, a.k_range[0], a.k_range[1])
    };
    let calls = if k == "1" { "system call" } else { "system calls" };
    format!(
        "trap: the operation's own {k} {calls} ({path}), each timed in place: the run's timer read right before and \
         right after each call at the RVM's call sites, in the same samples (observed.trap_timing = stamped; k: \
         observed.trap_crossings); each interval is charged one timer overhead; other = the operation's total − trap, \
         sample by sample"
    )
}

// ---------------------------------------------------------------------------------------------
// Checks

/// Read traps a first write to an untouched page causes with read tracking: 0 where the CPU
/// says a fault is a write (x86-64), else 1 (the fault is taken for a read, then traps again).
fn reads_per_first_write(fx: &Fixture) -> u64 {
    u64::from(fx.tracks_reads() && !sys::segv::access_kind_known())
}

/// The trap counters rose by exactly `reads` and `writes`.
fn trap_check(s: rvm::Stats, s0: rvm::Stats, reads: u64, writes: u64, why: &str) -> Check {
    let (r, w) = (s.read_traps - s0.read_traps, s.traps - s0.traps);
    Check::new(
        format!("trap counts ({why})"),
        format!("{reads} read, {writes} write"),
        format!("{r} read, {w} write"),
        r == reads && w == writes,
    )
}

/// With read tracking: one re-protecting `mprotect` per commit.
fn reprotect_check(s: rvm::Stats, s0: rvm::Stats, commits: u64) -> Check {
    let calls = s.reprotects - s0.reprotects;
    Check::new(
        "commit re-protects the page touched (one mprotect per commit)",
        commits.to_string(),
        calls.to_string(),
        calls == commits,
    )
}

/// With read tracking: a read of `offset` after the last commit faults again (the commit made
/// its page `PROT_NONE`).
fn probe_read_check(seg: &Segment, offset: usize) -> Check {
    let before = seg.stats().outside_reads;
    black_box(seg.bytes()[offset]);
    let faults = seg.stats().outside_reads - before;
    Check::new(
        "the page is protected again after commit (a probe read faults)",
        "1 fault",
        format!("{faults} faults"),
        faults == 1,
    )
}

/// Which operation [`kernel_count_check`] probes.
#[derive(Clone, Copy, PartialEq)]
enum Probe {
    Begin,
    /// A read-only commit (after a read of `at` with read tracking).
    CommitReadOnly(Option<usize>),
    /// The commit of 8 bytes stored at this offset.
    Commit8b(usize),
}

/// Probe operations [`kernel_count_check`] counts.
const KERNEL_PROBES: u32 = 3;

/// After sampling: the system calls the kernel sees in a few more of the operations (counted by
/// syscall user dispatch, `sys::sud`, independently of the RVM) equal the RVM's own count of
/// them. Untimed; the transaction around each is completed outside the count.
fn kernel_count_check(seg: &mut Segment, probe: Probe) -> Check {
    let name = "the kernel sees the system calls the RVM counts (syscall user dispatch, after sampling)";
    let mut seen = Vec::new();
    for i in 0..KERNEL_PROBES {
        let counted = match probe {
            Probe::Begin => {
                let seg: &mut Segment = seg;
                // The transaction comes out of the count; its (empty) commit is not counted.
                sys::sud::count_syscalls(move || {
                    let seg = seg;
                    seg.begin()
                })
                .map(|c| {
                    let k = c.value.and_then(|tx| {
                        let k = tx.begin_crossings().syscalls;
                        tx.commit().map(|_| k)
                    });
                    (k, c.syscalls, c.numbers)
                })
            }
            Probe::CommitReadOnly(read_at) => {
                let Ok(tx) = seg.begin() else { return Check::new(name, "begin succeeds", "begin failed", false) };
                if let Some(at) = read_at {
                    black_box(tx.bytes()[at]);
                }
                sys::sud::count_syscalls(move || tx.commit())
                    .map(|c| (c.value.map(|k| k.crossings.syscalls), c.syscalls, c.numbers))
            }
            Probe::Commit8b(at) => {
                let Ok(mut tx) = seg.begin() else { return Check::new(name, "begin succeeds", "begin failed", false) };
                let value =
                    next_value(u64::from(i), u64::from_le_bytes(tx.bytes()[at..at + 8].try_into().unwrap_or_default()));
                tx.bytes_mut()[at..at + 8].copy_from_slice(&value.to_le_bytes());
                sys::sud::count_syscalls(move || tx.commit())
                    .map(|c| (c.value.map(|k| k.crossings.syscalls), c.syscalls, c.numbers))
            }
        };
        match counted {
            Err(why) => return Check::impossible(name, why),
            Ok((Err(e), _, _)) => return Check::new(name, "the operation succeeds", e.to_string(), false),
            Ok((Ok(rvm), kernel, numbers)) => seen.push((rvm, kernel, numbers)),
        }
    }
    let ok = seen.iter().all(|(rvm, kernel, _)| u64::from(*rvm) == *kernel);
    let show = |v: &[(u32, u64, Vec<i64>)], rvm: bool| {
        v.iter().map(|(r, k, _)| if rvm { r.to_string() } else { k.to_string() }).collect::<Vec<_>>().join(", ")
    };
    let numbers = seen.first().map(|(_, _, n)| format!("{n:?}")).unwrap_or_default();
    Check::new(
        name,
        format!("the RVM's counts: {}", show(&seen, true)),
        format!("the kernel's: {} (system call numbers of the first: {numbers})", show(&seen, false)),
        ok,
    )
}

/// Read-only work made no sync and wrote no log byte; the log holds no transaction.
fn no_io_check(seg: &Segment) -> Check {
    let s = seg.stats();
    let logged = seg.logged_transactions().map_err(|e| e.to_string());
    let ok = s.syncs == 0 && s.log_bytes == 0 && logged == Ok(0);
    Check::new(
        "no fdatasync, no log write",
        "0 syncs, 0 log bytes, no transaction in the log",
        format!("{} syncs, {} log bytes, transactions in the log: {logged:?}", s.syncs, s.log_bytes),
        ok,
    )
}

// ---------------------------------------------------------------------------------------------
// txn.begin

/// Intervals: 0 the begin (its protect call stamped inside).
const BEGIN_STAGES: Parts = &[("trap", Part::Trap), ("other", Part::Other)];

fn run_begin(ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
    let mut fx = fixture(ctx, params, "begin")?;
    let timer = ctx.timer;
    let s0 = fx.seg.stats();
    let (mut ops, mut failed) = (0u64, 0u64);
    // One protect call: mprotect, or the UFFDIO_WRITEPROTECT ioctl.
    let mut bd = Breakdown::new(1, BEGIN_STAGES, &[], 1);
    let samples = ctx.iter_regions(|n| {
        for _ in 0..n {
            ops += 1;
            failed += u64::from(!timed_begin(&timer, &mut fx.seg, &mut bd));
        }
        bd.end_sample(&timer, n)
    });
    let mut checks = vec![Check::all_ok("every begin (and the empty commit after it) succeeds", failed, ops)];
    checks.push(trap_check(fx.seg.stats(), s0, 0, 0, "no access, so no trap"));
    checks.push(no_io_check(&fx.seg));
    checks.push(probe_transaction(&mut fx));
    checks.push(kernel_count_check(&mut fx.seg, Probe::Begin));
    let how = match (fx.seg.detection(), fx.tracks_reads()) {
        (Detection::Uffd, _) => "one UFFDIO_WRITEPROTECT of the segment (an ioctl)",
        (_, true) => "one mprotect(PROT_NONE) of the segment (reads and writes tracked)",
        (_, false) => "one mprotect(PROT_READ) of the segment (writes tracked)",
    };
    let mut m = Measured::new(samples, checks);
    bd.finish(&mut m, how);
    m = m.note(format!("begin = forget the last dirty set + {how}: the protect call, timed in place, is the trap"));
    Ok(describe(m, &fx))
}

/// One timed begin, then (untimed) the commit of the empty transaction. Returns success.
#[inline(never)]
fn timed_begin(timer: &Timer, seg: &mut Segment, bd: &mut Breakdown) -> bool {
    let mut op = OpStamps::default();
    op.steps[0] = timer.start();
    let slot = |s| match s {
        Stage::Protected => Some(1),
        _ => None,
    };
    let tx = seg.begin_probed(stamp_at(timer, &mut op, slot));
    bd.add(&mut op, tx.as_ref().ok().map(|tx| tx.begin_crossings()));
    match tx {
        Ok(tx) => black_box(tx.commit()).is_ok(),
        Err(_) => false,
    }
}

/// After sampling: a transaction writing two pages (one twice) must trap exactly twice as
/// writes (with read tracking, a read of a third page once as a read), and its abort must
/// restore both pages (with read tracking, and re-protect them: a read after it faults).
fn probe_transaction(fx: &mut Fixture) -> Check {
    let all = fx.tracks_reads();
    let name = if all {
        "begin protects: a read traps once, first writes to 2 pages trap twice; abort restores and re-protects"
    } else {
        "begin write-protects: first writes to 2 pages trap twice; abort restores them"
    };
    let write_reads = 2 * reads_per_first_write(fx);
    let seg = &mut fx.seg;
    let ps = seg.page_size();
    let before = seg.bytes().to_vec();
    let s0 = seg.stats();
    let Ok(mut tx) = seg.begin() else { return Check::new(name, "begin succeeds", "begin failed", false) };
    black_box(tx.bytes()[9 * ps + 5]);
    let b = tx.bytes_mut();
    b[2 * ps] ^= 0xFF;
    b[2 * ps + 1] ^= 0xFF;
    b[5 * ps + 7] ^= 0xFF;
    tx.abort();
    let s = seg.stats();
    let (reads, writes) = (s.read_traps - s0.read_traps, s.traps - s0.traps);
    let want_reads = if all { 1 + write_reads } else { 0 };
    // Reading the pages touched faults once each if abort re-protected them.
    for page in [2, 5, 9] {
        black_box(seg.bytes()[page * ps]);
    }
    let refaults = seg.stats().outside_reads - s.outside_reads;
    let want_refaults = if all { 3 } else { 0 };
    let restored = seg.bytes() == before.as_slice();
    Check::new(
        name,
        format!("{want_reads} read traps, 2 write traps, contents restored, {want_refaults} faults reading it back"),
        format!("{reads} read traps, {writes} write traps, restored: {restored}, {refaults} faults reading it back"),
        reads == want_reads && writes == 2 && restored && refaults == want_refaults,
    )
}

// ---------------------------------------------------------------------------------------------
// txn.commit_ro

/// Intervals (write tracking): 0 diff.
const COMMIT_RO_WRITES_STAGES: Parts = &[("trap", Part::Trap), ("other", Part::Other)];
/// Intervals (read tracking): 0 diff, 1 re-protect.
const COMMIT_RO_ALL_STAGES: Parts = &[("trap", Part::Trap), ("other", Part::Other)];
const COMMIT_RO_ALL_EXTRAS: Parts =
    &[("read fault", Part::Aside), ("diff", Part::Span(&[0])), ("reprotect", Part::Span(&[1]))];

fn run_commit_ro(ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
    let mut fx = fixture(ctx, params, "commit_ro")?;
    let all = fx.tracks_reads();
    let timer = ctx.timer;
    let s0 = fx.seg.stats();
    let (mut ops, mut wrong) = (0u64, 0u64);
    // With read tracking one mprotect re-protects the page read; else no system call.
    let mut bd = if all {
        Breakdown::new(2, COMMIT_RO_ALL_STAGES, COMMIT_RO_ALL_EXTRAS, 1)
    } else {
        Breakdown::new(1, COMMIT_RO_WRITES_STAGES, &[], 0)
    };
    let read_at = all.then(|| PAGE_READ * fx.seg.page_size() + VALUE_OFFSET);
    let samples = ctx.iter_regions(|n| {
        for _ in 0..n {
            ops += 1;
            wrong += u64::from(!timed_commit_ro(&timer, &mut fx.seg, &mut bd, read_at));
        }
        bd.end_sample(&timer, n)
    });
    let s = fx.seg.stats();
    let mut checks = vec![
        Check::all_ok("every transaction commits read-only", wrong, ops),
        Check::new(
            "every commit counted as read-only",
            ops.to_string(),
            s.read_only_commits.to_string(),
            s.read_only_commits == ops,
        ),
        no_io_check(&fx.seg),
    ];
    if let Some(at) = read_at {
        checks.push(trap_check(s, s0, ops, 0, "one read of one page per transaction, no write"));
        checks.push(reprotect_check(s, s0, ops));
        checks.push(probe_read_check(&fx.seg, at));
    } else {
        checks.push(trap_check(s, s0, 0, 0, "no write, so no trap"));
    }
    checks.push(kernel_count_check(&mut fx.seg, Probe::CommitReadOnly(read_at)));
    let mut m = Measured::new(samples, checks);
    m = if all {
        bd.finish(&mut m, "one mprotect re-protecting the page read");
        m.note(
            "the transaction reads one byte of one page between begin and commit (its read fault is outside the \
             total: observed.read_fault_ns); the commit diffs no page, writes and syncs nothing, and makes the page \
             read PROT_NONE again (one mprotect: the trap)",
        )
    } else {
        bd.finish(&mut m, "none");
        m.note(
            "begin outside the clock; with write-only tracking a read-only commit diffs no page and makes no system \
             call at all (nothing to log, sync or re-protect): k = 0, so trap = 0 and other = the total",
        )
    };
    Ok(describe(m, &fx))
}

/// One untimed begin (and, with `read_at`, a read of that byte timed apart), then one timed
/// read-only commit. Returns whether it committed read-only.
#[inline(never)]
fn timed_commit_ro(timer: &Timer, seg: &mut Segment, bd: &mut Breakdown, read_at: Option<usize>) -> bool {
    let Ok(tx) = seg.begin() else {
        bd.add(&mut OpStamps::default(), None);
        return false;
    };
    if let Some(at) = read_at {
        let t0 = timer.start();
        black_box(tx.bytes()[at]);
        bd.add_aside(timer.stop().wrapping_sub(t0));
    }
    let mut op = OpStamps::default();
    let slot = |s| match s {
        Stage::Diffed => Some(1),
        Stage::Reprotected => Some(2),
        _ => None,
    };
    op.steps[0] = timer.start();
    let r = tx.commit_probed(stamp_at(timer, &mut op, slot));
    bd.add(&mut op, r.as_ref().ok().map(|c| c.crossings));
    black_box(r).is_ok_and(|c| c.read_only())
}

// ---------------------------------------------------------------------------------------------
// txn.commit_8b

/// Intervals: 0 diff, 1 log write, 2 log sync, 3 apply, 4 segment sync, 5 trim (and, with read
/// tracking, 6 re-protect).
const COMMIT_8B_WRITES_STAGES: Parts = &[
    ("trap", Part::Trap),
    ("other", Part::Other),
    ("diff", Part::Span(&[0])),
    ("log write", Part::Span(&[1])),
    ("sync", Part::Span(&[2, 4])),
    ("apply", Part::Span(&[3])),
    ("trim", Part::Span(&[5])),
];
const COMMIT_8B_ALL_STAGES: Parts = &[
    ("trap", Part::Trap),
    ("other", Part::Other),
    ("diff", Part::Span(&[0])),
    ("log write", Part::Span(&[1])),
    ("sync", Part::Span(&[2, 4])),
    ("apply", Part::Span(&[3])),
    ("trim", Part::Span(&[5])),
    ("reprotect", Part::Span(&[6])),
];
const COMMIT_8B_EXTRAS: Parts = &[("store fault", Part::Aside)];

fn commit_slot(s: Stage) -> Option<usize> {
    match s {
        Stage::Diffed => Some(1),
        Stage::LogWritten => Some(2),
        Stage::LogSynced => Some(3),
        Stage::Applied => Some(4),
        Stage::SegmentSynced => Some(5),
        Stage::Trimmed => Some(6),
        Stage::Reprotected => Some(7),
        Stage::Reset | Stage::Protected | Stage::Enter(_) | Stage::Exit(_) => None,
    }
}

/// What the 8-byte transactions did, for the checks.
#[derive(Default)]
struct Tally {
    ops: u64,
    wrong: u64,
    last: u64,
}

fn run_commit_8b(ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
    let mut fx = fixture(ctx, params, "commit_8b")?;
    let all = fx.tracks_reads();
    let timer = ctx.timer;
    let offset = PAGE_WRITTEN * fx.seg.page_size() + VALUE_OFFSET;
    let (intervals, stages) = if all { (7, COMMIT_8B_ALL_STAGES) } else { (6, COMMIT_8B_WRITES_STAGES) };
    // pwrite log, fdatasync log, pwrite apply (one range), fdatasync file, pwrite trim; with read
    // tracking one mprotect re-protecting the page.
    let mut bd = Breakdown::new(intervals, stages, COMMIT_8B_EXTRAS, 5 + u32::from(all));
    // A few untimed commits: the page is private (copied on write) from then on, as in steady
    // state, and they estimate the cost of one operation.
    let mut t = Tally::default();
    let t0 = std::time::Instant::now();
    for _ in 0..3 {
        timed_commit_8b(&timer, &mut fx.seg, offset, &mut t, &mut bd);
    }
    // The warm-up is cut to the declared share of the budget at this cost (`sampling`).
    let op_ns = t0.elapsed().as_secs_f64() * 1e9 / 3.0;
    let (s0, ops0) = (fx.seg.stats(), t.ops);
    let samples = ctx.iter_regions_costing(op_ns, |n| {
        for _ in 0..n {
            timed_commit_8b(&timer, &mut fx.seg, offset, &mut t, &mut bd);
        }
        bd.end_sample(&timer, n)
    });
    if t.wrong > 0 && t.wrong == t.ops {
        return Err(NotMeasured::Failed("every 8-byte commit failed".into()));
    }
    let mut checks = commit_8b_checks(&fx, &t, t.ops - ops0, s0, offset);
    // On another page, so the checks above keep their value.
    let probe_at = (PAGE_WRITTEN + 4) * fx.seg.page_size() + VALUE_OFFSET;
    checks.push(kernel_count_check(&mut fx.seg, Probe::Commit8b(probe_at)));
    let mut m = Measured::new(samples, checks);
    let path = if all {
        "pwrite log, fdatasync log, pwrite apply, fdatasync segment, pwrite trim, mprotect re-protect"
    } else {
        "pwrite log, fdatasync log, pwrite apply, fdatasync segment, pwrite trim"
    };
    bd.finish(&mut m, path);
    m = m.note(format!(
        "the timed region is the commit alone: begin and the 8-byte store come before it, so the store's write fault \
         (fault, handler: pre-image copy and unprotect, return) is not in the total nor in any stage: it is timed \
         apart as observed.store_fault_ns (median of the last round); trap is all of the commit's own system calls \
         ({path}); diff, log write, sync, apply, trim{} split the same commit again, in detail (not added to trap + \
         other)",
        if all { ", reprotect" } else { "" }
    ));
    Ok(describe(m, &fx))
}

/// The value the `k`th transaction stores: pseudo-random, every byte different from the
/// same byte of `last`.
fn next_value(k: u64, last: u64) -> u64 {
    let mut z = k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let mut b = (z ^ (z >> 29)).to_le_bytes();
    for (new, old) in b.iter_mut().zip(last.to_le_bytes()) {
        if *new == old {
            *new = !old;
        }
    }
    u64::from_le_bytes(b)
}

/// One untimed begin, the 8-byte store timed apart (all 8 bytes change: [`next_value`]), then
/// one timed commit.
#[inline(never)]
fn timed_commit_8b(timer: &Timer, seg: &mut Segment, offset: usize, t: &mut Tally, bd: &mut Breakdown) {
    let value = black_box(next_value(t.ops, t.last));
    let mut op = OpStamps::default();
    let ok = match seg.begin() {
        Ok(mut tx) => {
            let s0 = timer.start();
            let slot = &mut tx.bytes_mut()[offset..offset + 8];
            slot.copy_from_slice(&value.to_le_bytes());
            // The store must be done before the stamp (the counter read does not order memory).
            black_box(slot);
            bd.add_aside(timer.stop().wrapping_sub(s0));
            op.steps[0] = timer.start();
            let r = tx.commit_probed(stamp_at(timer, &mut op, commit_slot));
            bd.add(&mut op, r.as_ref().ok().map(|c| c.crossings));
            black_box(r).is_ok_and(|c| c.records == 1 && c.bytes == 8)
        }
        Err(_) => {
            bd.add(&mut op, None);
            false
        }
    };
    t.ops += 1;
    if ok {
        t.last = value;
    } else {
        t.wrong += 1;
    }
}

fn commit_8b_checks(fx: &Fixture, t: &Tally, sampled_ops: u64, s0: rvm::Stats, offset: usize) -> Vec<Check> {
    let s = fx.seg.stats();
    let mut on_disk = [0u8; 8];
    let read = std::fs::File::open(fx.seg.path()).and_then(|f| f.read_exact_at(&mut on_disk, offset as u64));
    let logged = fx.seg.logged_transactions().map_err(|e| e.to_string());
    let reads = sampled_ops * reads_per_first_write(fx);
    let mut checks = vec![
        Check::all_ok("every transaction commits one 8-byte record", t.wrong, t.ops),
        trap_check(s, s0, reads, sampled_ops, "one write trap per transaction: its first write"),
        Check::new(
            "two fdatasyncs per commit (log, then segment)",
            (2 * sampled_ops).to_string(),
            (s.syncs - s0.syncs).to_string(),
            s.syncs - s0.syncs == 2 * sampled_ops,
        ),
        match read {
            Ok(()) => Check::new(
                "the last value is durable in the segment file (pread)",
                format!("{:#018x}", t.last),
                format!("{:#018x}", u64::from_le_bytes(on_disk)),
                u64::from_le_bytes(on_disk) == t.last,
            ),
            Err(e) => Check::impossible("the last value is durable in the segment file (pread)", e.to_string()),
        },
        Check::new("the log holds no transaction after commit (trimmed)", "0", format!("{logged:?}"), logged == Ok(0)),
    ];
    if fx.tracks_reads() {
        checks.push(reprotect_check(s, s0, sampled_ops));
        checks.push(probe_read_check(&fx.seg, offset));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::SamplerConfig;
    use std::sync::atomic::AtomicBool;

    fn run_all(bench: &dyn Benchmark) {
        let (timer, info) = platform::timer::detect();
        let dir = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let cfg = SamplerConfig { budget_s: 0.05, warmup_s: 0.005, ..SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, 0, dir.path(), &flag);
        for params in bench.variants(&ctx) {
            match crate::testing::visit(&mut ctx, bench, &params) {
                Ok(m) => {
                    assert!(!m.samples.per_op_ns.is_empty(), "{} {params:?}: no samples", bench.id());
                    // The trap ≤ total check rests on the timer's noise where little runs outside
                    // the calls: reported, and checked against the stages below.
                    let noisy = |c: &Check| c.name.starts_with("trap ≤ total");
                    for c in m.checks.iter().filter(|c| !noisy(c)) {
                        // Syscall user dispatch may be missing (not x86_64, an old kernel).
                        let unavailable = c.name.starts_with("the kernel sees") && c.ok.is_none();
                        assert!(c.ok == Some(true) || unavailable, "{} {params:?}: {c:?}", bench.id());
                    }
                    assert!(m.checks.iter().any(|c| c.name.starts_with("the kernel sees")));
                    let names: Vec<&str> = m.breakdown.iter().map(|(n, _)| n.as_str()).collect();
                    assert_eq!(names[..2], ["trap", "other"], "{} {params:?}", bench.id());
                    let (trap, other) = (&m.breakdown[0].1, &m.breakdown[1].1);
                    for (i, total) in m.samples.per_op_ns.iter().enumerate() {
                        let sum = trap[i] + other[i];
                        assert!((sum - total).abs() <= 1e-6 * total.abs().max(1.0), "trap + other = total");
                    }
                    // k crossings, as the path makes them, each timed in place.
                    let all = params["track"] == "all";
                    let k = match bench.id() {
                        "txn.begin" => 1,
                        "txn.commit_ro" => u32::from(all),
                        _ => 5 + u32::from(all),
                    };
                    assert_eq!(m.observed["trap_crossings"], serde_json::json!(f64::from(k)), "{params:?}");
                    assert_eq!(m.observed["trap_timing"], "stamped", "{params:?}");
                    assert!(!m.observed.contains_key("crossing_ns"), "no neighbouring null call");
                    let stamped = m.checks.iter().find(|c| c.name.starts_with("every system call counted was timed"));
                    assert_eq!(stamped.map(|c| c.ok), Some(Some(true)), "{params:?}");
                    if k == 0 {
                        assert!(trap.iter().all(|&t| t == 0.0), "no crossing, no trap");
                        assert!(m.notes.iter().any(|n| n.starts_with("trap = 0: the operation makes no system call")));
                    } else {
                        assert!(trap.iter().all(|&t| t > 0.0), "a system call takes time: {trap:?}");
                        let calls = if k == 1 { "system call" } else { "system calls" };
                        let note = format!("trap: the operation's own {k} {calls} (");
                        assert!(m.notes.iter().any(|n| n.starts_with(&note) && n.contains("each timed in place")));
                    }
                    // The trap ≤ total check says what the stages show.
                    let over = trap.iter().zip(other).filter(|(t, o)| **o < 0.0 && **t > 0.0).count();
                    let check = m.checks.iter().find(|c| noisy(c)).expect("the trap ≤ total check");
                    assert_eq!(check.ok, Some(over == 0), "{check:?}");
                    if over > 0 {
                        eprintln!("{} {params:?}: {check:?}", bench.id());
                    }
                    for (name, v) in &m.breakdown {
                        assert_eq!(v.len(), m.samples.per_op_ns.len(), "stage {name}");
                    }
                    if bench.id() == "txn.commit_8b" {
                        assert!(m.observed.contains_key("store_fault_ns"), "{:?}", m.observed);
                        assert!(!names.contains(&"store fault"), "the store fault is not a stage of the total");
                    }
                    assert!(m.params.contains_key("filesystem") && m.params.contains_key("tmpfs"));
                }
                Err(NotMeasured::Skipped(why)) => {
                    assert_eq!(params["detect"], "uffd", "only uffd may be skipped: {why}");
                    assert_eq!(params["track"], "writes", "uffd/all is not a variant");
                    eprintln!("{} {params:?} skipped: {why}", bench.id());
                }
                Err(e) => panic!("{} {params:?}: {e:?}", bench.id()),
            }
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read scratch").collect();
        assert!(left.is_empty(), "files left in scratch: {left:?}");
    }

    #[test]
    fn begin_runs_and_validates() {
        let _serial = crate::testing::serial();
        run_all(&Begin);
    }

    #[test]
    fn commit_ro_runs_and_validates() {
        let _serial = crate::testing::serial();
        run_all(&CommitReadOnly);
    }

    #[test]
    fn commit_8b_runs_and_validates() {
        let _serial = crate::testing::serial();
        run_all(&Commit8b);
    }

    #[test]
    fn every_byte_of_the_value_changes() {
        let mut last = 0;
        for k in 0..10_000 {
            let v = next_value(k, last);
            assert!(v.to_le_bytes().iter().zip(last.to_le_bytes()).all(|(a, b)| *a != b));
            last = v;
        }
    }

    #[test]
    fn variants_leave_out_uffd_tracking_reads() {
        let v = mode_variants();
        assert_eq!(v.len(), 3);
        assert!(!v.iter().any(|p| p["detect"] == "uffd" && p["track"] == "all"));
    }

    /// One synthetic operation of two step intervals ([at, at + 10], [at + 10, at + 40]), with
    /// `calls` system calls stamped inside the second, each `call` ticks long, `counted` of them
    /// counted by the RVM.
    fn synthetic_op(bd: &mut Breakdown, at: u64, calls: u32, call: u64, counted: u32) {
        let mut op = OpStamps::default();
        op.steps[..3].copy_from_slice(&[at, at + 10, at + 40]);
        op.inner[1] = 2 * calls;
        op.trap = u64::from(calls) * call;
        op.stamped = calls;
        bd.add(&mut op, Some(rvm::Crossings { syscalls: counted, faults: 0 }));
    }

    fn timer_with_overhead(ticks: f64) -> Timer {
        Timer::with_overhead(Timer::with_scale(platform::timer::TimerKind::MonotonicRaw, 1.0), ticks)
    }

    #[test]
    fn stages_sum_to_the_total() {
        let timer = timer_with_overhead(2.0);
        let mut bd = Breakdown::new(
            2,
            &[("a", Part::Span(&[0])), ("b", Part::Span(&[1])), ("trap", Part::Trap), ("other", Part::Other)],
            &[("both", Part::Span(&[0, 1])), ("aside thing", Part::Aside)],
            1,
        );
        synthetic_op(&mut bd, 100, 1, 20, 1);
        bd.add_aside(7);
        synthetic_op(&mut bd, 200, 1, 20, 1);
        bd.add_aside(9);
        let total = bd.end_sample(&timer, 2);
        // Per operation: 1 interval in the first step, 3 in the second (split by the call's
        // two stamps): 4 regions, 40 − 4 × 2 = 32 per operation.
        assert_eq!(total.regions, 8);
        assert_eq!((total.ticks as f64 - overhead_of(&timer, total.regions)) / 2.0, 32.0);
        // A second sample whose second operation made two calls of 12 ticks (but counted 1).
        synthetic_op(&mut bd, 300, 1, 20, 1);
        bd.add_aside(8);
        synthetic_op(&mut bd, 400, 2, 12, 1);
        bd.add_aside(8);
        bd.end_sample(&timer, 2);
        let mut m = Measured::default();
        m.samples.per_op_ns = vec![32.0, 30.0];
        bd.finish(&mut m, "one call");
        let stage = |i: usize| m.breakdown[i].1.clone();
        assert_eq!(stage(0), vec![8.0, 8.0], "(2 × 10 − 2 × 2) / 2");
        assert_eq!(stage(1), vec![24.0, 22.0], "(2 × 30 − 6 × 2) / 2, then (60 − 8 × 2) / 2");
        assert_eq!(stage(2), vec![18.0, 19.0], "trap: (2 × 20 − 2 × 2) / 2, then (20 + 24 − 3 × 2) / 2");
        assert_eq!(stage(3), vec![14.0, 11.0], "other = total − trap");
        assert_eq!(m.observed["both_ns"], serde_json::json!(31.0));
        assert_eq!(m.observed["aside_thing_ns"], serde_json::json!(6.0), "(7 + 9 − 2 × 2) / 2");
        assert_eq!(m.observed["trap_crossings"], serde_json::json!(1.0));
        assert_eq!(m.observed["trap_timing"], "stamped");
        let check = |prefix: &str| m.checks.iter().find(|c| c.name.starts_with(prefix)).expect(prefix).ok;
        assert_eq!(check("system calls counted"), Some(true));
        assert_eq!(check("every system call counted was timed"), Some(false), "one operation stamped 2, counted 1");
        assert_eq!(check("trap + other = total"), Some(true));
        assert_eq!(check("the total the stages split"), Some(true));
        assert_eq!(check("trap ≤ total"), Some(true));
        assert!(m.notes[0].starts_with("trap: the operation's own 1 system call (one call), each timed in place"));
    }

    /// The old estimate (k × a null call timed after the operation) could exceed the whole
    /// operation; the trap timed in place cannot, but by the timer's noise, which is flagged.
    #[test]
    fn the_trap_timed_in_place_stays_within_its_total_and_a_breach_is_flagged() {
        // An operation of 40 ticks, 30 of them inside its one call: other = 40 − 4 × 1 − (30 − 1).
        let timer = timer_with_overhead(1.0);
        let mut bd = Breakdown::new(2, &[("trap", Part::Trap), ("other", Part::Other)], &[], 1);
        synthetic_op(&mut bd, 100, 1, 30, 1);
        bd.end_sample(&timer, 1);
        let mut m = Measured::default();
        m.samples.per_op_ns = vec![36.0];
        bd.finish(&mut m, "one call");
        assert_eq!((m.breakdown[0].1[0], m.breakdown[1].1[0]), (29.0, 7.0));
        assert!(m.checks.iter().all(|c| c.ok == Some(true)), "{:?}", m.checks);
        // A timer overhead larger than the time outside the call (10 ticks over 3 intervals):
        // other < 0, and the row is flagged.
        let timer = timer_with_overhead(4.0);
        let mut bd = Breakdown::new(2, &[("trap", Part::Trap), ("other", Part::Other)], &[], 1);
        let mut op = OpStamps::default();
        op.steps[..3].copy_from_slice(&[100, 102, 140]);
        (op.inner[1], op.trap, op.stamped) = (2, 37, 1);
        bd.add(&mut op, Some(rvm::Crossings { syscalls: 1, faults: 0 }));
        bd.end_sample(&timer, 1);
        let mut m = Measured::default();
        m.samples.per_op_ns = vec![40.0 - 16.0];
        bd.finish(&mut m, "one call");
        assert_eq!((m.breakdown[0].1[0], m.breakdown[1].1[0]), (33.0, -9.0));
        let flagged = m.checks.iter().find(|c| c.name.starts_with("trap ≤ total")).expect("check");
        assert_eq!(flagged.ok, Some(false));
    }

    #[test]
    fn the_probe_stamps_steps_and_each_call_in_place() {
        let timer = timer_with_overhead(0.0);
        let mut op = OpStamps::default();
        let slot = |s| match s {
            Stage::Diffed => Some(1),
            Stage::LogWritten => Some(2),
            _ => None,
        };
        {
            let mut probe = stamp_at(&timer, &mut op, slot);
            for s in [
                Stage::Diffed,
                Stage::Enter(rvm::Call::Pwrite),
                Stage::Exit(rvm::Call::Pwrite),
                Stage::LogWritten,
                Stage::Reset,
            ] {
                probe(s);
            }
        }
        assert!(op.steps[0] == 0 && op.steps[1] > 0 && op.steps[2] >= op.steps[1]);
        assert_eq!((op.inner[0], op.inner[1], op.stamped, op.unpaired), (0, 2, 1, 0));
        assert!(op.trap <= op.steps[2] - op.steps[1], "the call lies inside its step");
        // An exit without its enter, and an enter left open, are unpaired.
        let mut op = OpStamps::default();
        {
            let mut probe = stamp_at(&timer, &mut op, slot);
            probe(Stage::Exit(rvm::Call::Fdatasync));
            probe(Stage::Enter(rvm::Call::Fdatasync));
        }
        assert_eq!((op.stamped, op.unpaired, op.enter.is_some()), (0, 1, true));
    }
}
