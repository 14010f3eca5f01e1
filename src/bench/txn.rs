//! Transactions on osprim's recoverable virtual memory ([`crate::rvm`]): `txn.begin`,
//! `txn.commit_ro`, `txn.commit_8b`.
//!
//! Seed rows: Rhino (Digital UNIX and SPIN) Table 2 "transaction begin", "commit read-only",
//! "commit 8 bytes on one page" (total; trap and other).
//!
//! **Setup** (outside the clock): a 16-page segment and its log are created in the run's
//! scratch directory, so the commits' `fdatasync`s go to the working file system — recorded
//! in the row's params (`filesystem`, `device`, `tmpfs`) with a note when it is tmpfs (a sync
//! there reaches no device). The variants are the write-detection mode (`detect`: `mprotect`
//! or `uffd`); the uffd row is skipped with the kernel's reason where userfaultfd
//! write-protect does not cover the segment's memory (regular files on ext4/xfs/btrfs).
//! Both files are removed when the benchmark ends (the runner removes the scratch directory
//! after Ctrl-C too).
//!
//! **Timing model** ([`Ctx::iter_custom`]): every operation is timed on its own, with the run's
//! timer read at its start and at the library's stage boundaries ([`Stage`], through the
//! `*_probed` calls), the last stamp ending it:
//! - `txn.begin`: `begin` (forget the last dirty set; write-protect the segment: one
//!   `mprotect`, or one `UFFDIO_WRITEPROTECT`). Stages `other` (the bookkeeping) and `protect`.
//!   Each begin is followed, untimed, by the commit of the empty transaction.
//! - `txn.commit_ro`: `begin` + `commit` of a transaction that wrote nothing. Stages `begin`
//!   and `commit` (the diff of no page: no I/O).
//! - `txn.commit_8b`: `begin` + an 8-byte store to one page (all 8 bytes change) + `commit`.
//!   Stages `begin`; `trap` (the store: write-protection fault, pre-image copy, unprotect,
//!   resume); `diff`; `log write` (encoding + `pwrite` of the records); `sync` (the two
//!   `fdatasync`s: the log, the commit point, and the segment file after apply); `apply`
//!   (`pwrite` of the changed range into the file); `trim` (zeroing the log's head: a 32-byte
//!   `pwrite`, no sync); and
//!   `other` (everything but the trap, for the seed table's trap/other split).
//!
//! Each stamp is a serialising counter read; every interval between two stamps is charged one
//! timer overhead (the cost of a back-to-back start/stop, which the sampler subtracts once per
//! sample), so an operation with k intervals has k overheads subtracted, and each stage one per
//! interval it spans. The stages sum to the total.
//!
//! **Validation:** every operation succeeds and commits what it should (one 8-byte record, or
//! nothing); the segment's trap counter rose by exactly one per transaction that wrote (and 0
//! for the others) — so begin really write-protected the page and each first write trapped
//! once; read-only commits made no `fdatasync` and wrote no log byte, and 8-byte commits made
//! exactly two; after the run the log holds no transaction and the last value written is in the
//! segment file (read back with `pread`); for `txn.begin`, a probe transaction after sampling
//! shows two first writes to two pages trapping twice and abort restoring them.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::rvm::{self, Detection, Filesystem, Options, Segment, Stage};
use crate::timer::Timer;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Pages in the benchmark segment.
const PAGES: usize = 16;
/// The page `txn.commit_8b` writes (not the first, to keep it off any header-like spot).
const PAGE_WRITTEN: usize = 1;
/// Offset of the 8-byte value within that page.
const VALUE_OFFSET: usize = 64;
/// The warm-up is cut so it takes about this share of the budget when an operation is slow
/// (a commit syncs twice: milliseconds on some disks).
const WARMUP_SHARE: f64 = 0.1;

/// `begin`: write-protect the segment.
pub struct Begin;
/// `begin` + `commit` of a transaction that changed nothing.
pub struct CommitReadOnly;
/// `begin` + 8 bytes changed on one page + durable `commit`.
pub struct Commit8b;

impl Benchmark for Begin {
    fn id(&self) -> &'static str {
        "txn.begin"
    }
    fn about(&self) -> &'static str {
        "recoverable-VM transaction begin: write-protect a 16-page segment"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        detect_variants()
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
        "recoverable-VM read-only transaction: begin + commit with no write (no I/O)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        detect_variants()
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
        "recoverable-VM transaction: begin, change 8 bytes on one page, durable commit (log + 2 fdatasync)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        detect_variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_commit_8b(ctx, params)
    }
}

fn detect_variants() -> Vec<Params> {
    Detection::ALL.iter().map(|d| Params::from([("detect".to_string(), serde_json::json!(d.name()))])).collect()
}

// ---------------------------------------------------------------------------------------------
// Set-up

/// The benchmark's segment, and its files removed on drop.
struct Fixture {
    seg: Segment,
    fs: Filesystem,
    _files: Files,
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
    let detect = params.get("detect").and_then(|v| v.as_str()).unwrap_or("mprotect");
    let detection = Detection::from_name(detect)
        .ok_or_else(|| NotMeasured::Failed(format!("unknown write-detection mode '{detect}'")))?;
    let path = ctx.scratch.join(format!("txn-{name}-{detect}.seg"));
    let files = Files(vec![path.clone(), path.with_extension("seg.log")]);
    let seg = Segment::create(&path, PAGES, Options { detection }).map_err(|e| match e {
        rvm::Error::Unavailable { reason, .. } => NotMeasured::Skipped(format!("{detect} write detection: {reason}")),
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

/// Shortens the warm-up (restored by the caller) so that operations costing `op_ns` spend
/// about [`WARMUP_SHARE`] of the budget warming up; returns the old setting.
fn short_warmup(ctx: &mut Ctx, op_ns: f64) -> u64 {
    let old = ctx.cfg.warmup_iters;
    let fit = (ctx.cfg.budget_s * 1e9 * WARMUP_SHARE / op_ns.max(1.0)) as u64;
    ctx.cfg.warmup_iters = old.min(fit.max(3));
    old
}

// ---------------------------------------------------------------------------------------------
// Stage accounting

/// Per-stage times: the intervals between stamps are summed over a sample's operations, then
/// turned into ns per operation for each named stage (a stage spans one or more intervals).
struct Breakdown {
    stages: &'static [(&'static str, &'static [usize])],
    acc: Vec<u64>,
    out: Vec<Vec<f64>>,
}

impl Breakdown {
    fn new(intervals: usize, stages: &'static [(&'static str, &'static [usize])]) -> Breakdown {
        Breakdown { stages, acc: vec![0; intervals], out: stages.iter().map(|_| Vec::with_capacity(4096)).collect() }
    }

    /// Adds one operation's stamps (`stamps.len()` = intervals + 1). A stamp left at 0 (a
    /// stage not reached: the operation failed) takes the one before it, so its interval is 0.
    #[inline(always)]
    fn add(&mut self, stamps: &mut [u64]) {
        for i in 1..stamps.len() {
            if stamps[i] == 0 {
                stamps[i] = stamps[i - 1];
            }
        }
        for (a, w) in self.acc.iter_mut().zip(stamps.windows(2)) {
            *a += w[1].wrapping_sub(w[0]);
        }
    }

    /// Closes a sample of `n` operations; returns its total ticks as the sampler wants them
    /// (one overhead per interval and operation charged, less the one the sampler subtracts).
    fn end_sample(&mut self, timer: &Timer, n: u64) -> u64 {
        let c = timer.overhead_ticks();
        for (out, (_, spans)) in self.out.iter_mut().zip(self.stages) {
            let ticks: u64 = spans.iter().map(|&i| self.acc[i]).sum();
            let net = ticks as f64 - c * (n as f64) * spans.len() as f64;
            out.push(timer.ticks_to_ns(net) / n as f64);
        }
        let total: u64 = self.acc.iter().sum();
        self.acc.iter_mut().for_each(|a| *a = 0);
        let charged = c * ((n as f64) * self.acc.len() as f64 - 1.0);
        (total as f64 - charged).max(0.0) as u64
    }

    /// The stages' samples, keeping the last `samples` (the sampler's; earlier ones were
    /// warm-up).
    fn finish(self, samples: usize) -> Vec<(String, Vec<f64>)> {
        self.stages
            .iter()
            .zip(self.out)
            .map(|((name, _), v)| (name.to_string(), v[v.len().saturating_sub(samples)..].to_vec()))
            .collect()
    }
}

/// Stamps `Stage`s into `stamps[slot(stage)]`.
#[inline(always)]
fn stamp_at(timer: &Timer, stamps: &mut [u64], slot: impl Fn(Stage) -> Option<usize>) -> impl FnMut(Stage) {
    move |s| {
        if let Some(i) = slot(s) {
            stamps[i] = timer.stop();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// txn.begin

const BEGIN_STAGES: &[(&str, &[usize])] = &[("other", &[0]), ("protect", &[1])];

fn run_begin(ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
    let mut fx = fixture(ctx, params, "begin")?;
    let timer = ctx.timer;
    let traps0 = fx.seg.stats().traps;
    let (mut ops, mut failed) = (0u64, 0u64);
    let mut bd = Breakdown::new(2, BEGIN_STAGES);
    let samples = ctx.iter_custom(|n| {
        for _ in 0..n {
            ops += 1;
            failed += u64::from(!timed_begin(&timer, &mut fx.seg, &mut bd));
        }
        bd.end_sample(&timer, n)
    });
    let mut checks = vec![Check::all_ok("every begin (and the empty commit after it) succeeds", failed, ops)];
    checks.push(trap_check(fx.seg.stats().traps - traps0, 0, "no write, so no trap"));
    checks.push(no_io_check(&fx.seg));
    checks.push(probe_transaction(&mut fx.seg));
    let n = samples.per_op_ns.len();
    let mut m = Measured::new(samples, checks);
    m.breakdown = bd.finish(n);
    Ok(describe(m, &fx))
}

/// One timed begin, then (untimed) the commit of the empty transaction. Returns success.
#[inline(never)]
fn timed_begin(timer: &Timer, seg: &mut Segment, bd: &mut Breakdown) -> bool {
    let mut stamps = [0u64; 3];
    stamps[0] = timer.start();
    let slot = |s| match s {
        Stage::Reset => Some(1),
        Stage::Protected => Some(2),
        _ => None,
    };
    let tx = seg.begin_probed(stamp_at(timer, &mut stamps[..], slot));
    let ok = match tx {
        Ok(tx) => black_box(tx.commit()).is_ok(),
        Err(_) => false,
    };
    bd.add(&mut stamps);
    ok
}

/// After sampling: a transaction writing two pages (one twice) must trap exactly twice, and
/// its abort must restore both pages.
fn probe_transaction(seg: &mut Segment) -> Check {
    let name = "begin write-protects: first writes to 2 pages trap twice; abort restores them";
    let ps = seg.page_size();
    let before = seg.bytes().to_vec();
    let traps0 = seg.stats().traps;
    let Ok(mut tx) = seg.begin() else { return Check::new(name, "begin succeeds", "begin failed", false) };
    let b = tx.bytes_mut();
    b[2 * ps] ^= 0xFF;
    b[2 * ps + 1] ^= 0xFF;
    b[5 * ps + 7] ^= 0xFF;
    tx.abort();
    let traps = seg.stats().traps - traps0;
    let restored = seg.bytes() == before.as_slice();
    Check::new(
        name,
        "2 traps, contents restored",
        format!("{traps} traps, restored: {restored}"),
        traps == 2 && restored,
    )
}

fn trap_check(traps: u64, expected: u64, why: &str) -> Check {
    Check::new(format!("trap count ({why})"), expected.to_string(), traps.to_string(), traps == expected)
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
// txn.commit_ro

const COMMIT_RO_STAGES: &[(&str, &[usize])] = &[("begin", &[0]), ("commit", &[1])];

fn run_commit_ro(ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
    let mut fx = fixture(ctx, params, "commit_ro")?;
    let timer = ctx.timer;
    let traps0 = fx.seg.stats().traps;
    let (mut ops, mut wrong) = (0u64, 0u64);
    let mut bd = Breakdown::new(2, COMMIT_RO_STAGES);
    let samples = ctx.iter_custom(|n| {
        for _ in 0..n {
            ops += 1;
            wrong += u64::from(!timed_commit_ro(&timer, &mut fx.seg, &mut bd));
        }
        bd.end_sample(&timer, n)
    });
    let s = fx.seg.stats();
    let checks = vec![
        Check::all_ok("every transaction commits read-only", wrong, ops),
        Check::new(
            "every commit counted as read-only",
            ops.to_string(),
            s.read_only_commits.to_string(),
            s.read_only_commits == ops,
        ),
        trap_check(s.traps - traps0, 0, "no write, so no trap"),
        no_io_check(&fx.seg),
    ];
    let n = samples.per_op_ns.len();
    let mut m = Measured::new(samples, checks);
    m.breakdown = bd.finish(n);
    Ok(describe(m, &fx))
}

/// One timed begin + read-only commit. Returns whether it committed read-only.
#[inline(never)]
fn timed_commit_ro(timer: &Timer, seg: &mut Segment, bd: &mut Breakdown) -> bool {
    let mut stamps = [0u64; 3];
    stamps[0] = timer.start();
    let ok = match seg.begin_probed(stamp_at(timer, &mut stamps[..], |s| (s == Stage::Protected).then_some(1))) {
        Ok(tx) => {
            let r = tx.commit_probed(stamp_at(timer, &mut stamps[..], |s| (s == Stage::Diffed).then_some(2)));
            black_box(r).is_ok_and(|c| c.read_only())
        }
        Err(_) => false,
    };
    bd.add(&mut stamps);
    ok
}

// ---------------------------------------------------------------------------------------------
// txn.commit_8b

/// Intervals: 0 begin, 1 trap, 2 diff, 3 log write, 4 log sync, 5 apply, 6 segment sync, 7 trim.
const COMMIT_8B_STAGES: &[(&str, &[usize])] = &[
    ("begin", &[0]),
    ("trap", &[1]),
    ("diff", &[2]),
    ("log write", &[3]),
    ("sync", &[4, 6]),
    ("apply", &[5]),
    ("trim", &[7]),
    ("other", &[0, 2, 3, 4, 5, 6, 7]),
];

fn commit_slot(s: Stage) -> Option<usize> {
    match s {
        Stage::Diffed => Some(3),
        Stage::LogWritten => Some(4),
        Stage::LogSynced => Some(5),
        Stage::Applied => Some(6),
        Stage::SegmentSynced => Some(7),
        Stage::Trimmed => Some(8),
        Stage::Reset | Stage::Protected => None,
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
    let timer = ctx.timer;
    let offset = PAGE_WRITTEN * fx.seg.page_size() + VALUE_OFFSET;
    // A few untimed commits: the page is private (copied on write) from then on, as in steady
    // state, and they estimate the cost of one operation.
    let mut t = Tally::default();
    let t0 = std::time::Instant::now();
    let mut bd = Breakdown::new(8, COMMIT_8B_STAGES);
    for _ in 0..3 {
        timed_commit_8b(&timer, &mut fx.seg, offset, &mut t, &mut bd);
    }
    let old_warmup = short_warmup(ctx, t0.elapsed().as_secs_f64() * 1e9 / 3.0);
    let (s0, ops0) = (fx.seg.stats(), t.ops);
    let samples = ctx.iter_custom(|n| {
        for _ in 0..n {
            timed_commit_8b(&timer, &mut fx.seg, offset, &mut t, &mut bd);
        }
        bd.end_sample(&timer, n)
    });
    ctx.cfg.warmup_iters = old_warmup;
    if t.wrong > 0 && t.wrong == t.ops {
        return Err(NotMeasured::Failed("every 8-byte commit failed".into()));
    }
    let checks = commit_8b_checks(&fx, &t, t.ops - ops0, s0, offset);
    let n = samples.per_op_ns.len();
    let mut m = Measured::new(samples, checks);
    m.breakdown = bd.finish(n);
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

/// One timed begin + 8-byte store + commit; all 8 bytes change ([`next_value`]).
#[inline(never)]
fn timed_commit_8b(timer: &Timer, seg: &mut Segment, offset: usize, t: &mut Tally, bd: &mut Breakdown) {
    let value = black_box(next_value(t.ops, t.last));
    let mut stamps = [0u64; 9];
    stamps[0] = timer.start();
    let ok = match seg.begin_probed(stamp_at(timer, &mut stamps[..], |s| (s == Stage::Protected).then_some(1))) {
        Ok(mut tx) => {
            let slot = &mut tx.bytes_mut()[offset..offset + 8];
            slot.copy_from_slice(&value.to_le_bytes());
            // The store must be done before the stamp (the counter read does not order memory).
            black_box(slot);
            stamps[2] = timer.stop();
            let r = tx.commit_probed(stamp_at(timer, &mut stamps[..], commit_slot));
            black_box(r).is_ok_and(|c| c.records == 1 && c.bytes == 8)
        }
        Err(_) => false,
    };
    bd.add(&mut stamps);
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
    vec![
        Check::all_ok("every transaction commits one 8-byte record", t.wrong, t.ops),
        trap_check(s.traps - s0.traps, sampled_ops, "one per transaction: its first write"),
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::SamplerConfig;
    use std::sync::atomic::AtomicBool;

    fn run_all(bench: &dyn Benchmark) {
        let (timer, info) = crate::timer::detect();
        let dir = tempfile::tempdir().expect("tempdir");
        let flag = AtomicBool::new(false);
        let cfg = SamplerConfig { budget_s: 0.05, warmup_s: 0.005, ..SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, 0, dir.path(), &flag);
        for params in bench.variants(&ctx) {
            match bench.run(&mut ctx, &params) {
                Ok(m) => {
                    assert!(!m.samples.per_op_ns.is_empty(), "{} {params:?}: no samples", bench.id());
                    for c in &m.checks {
                        assert_eq!(c.ok, Some(true), "{} {params:?}: {c:?}", bench.id());
                    }
                    assert!(!m.breakdown.is_empty());
                    for (name, v) in &m.breakdown {
                        assert_eq!(v.len(), m.samples.per_op_ns.len(), "stage {name}");
                    }
                    assert!(m.params.contains_key("filesystem") && m.params.contains_key("tmpfs"));
                }
                Err(NotMeasured::Skipped(why)) => {
                    assert_eq!(params["detect"], "uffd", "only uffd may be skipped: {why}");
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
        let _serial = crate::bench::testing::serial();
        run_all(&Begin);
    }

    #[test]
    fn commit_ro_runs_and_validates() {
        let _serial = crate::bench::testing::serial();
        run_all(&CommitReadOnly);
    }

    #[test]
    fn commit_8b_runs_and_validates() {
        let _serial = crate::bench::testing::serial();
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
    fn stages_sum_to_the_total() {
        let timer = Timer::with_overhead(Timer::with_scale(crate::timer::TimerKind::MonotonicRaw, 1.0), 2.0);
        let mut bd = Breakdown::new(2, &[("a", &[0]), ("b", &[1]), ("both", &[0, 1])]);
        bd.add(&mut [100, 110, 140]);
        bd.add(&mut [200, 210, 240]);
        let total = bd.end_sample(&timer, 2);
        // Sampler view: (total − overhead) / n per operation = 40 − 2 × 2 per op.
        assert_eq!((total as f64 - 2.0) / 2.0, 36.0);
        let stages = bd.finish(1);
        assert_eq!(stages[0].1, vec![8.0]);
        assert_eq!(stages[1].1, vec![28.0]);
        assert_eq!(stages[2].1, vec![36.0]);
    }
}
