//! The power-loss test, in the manner of ALICE (Pillai et al., "All File Systems Are Not
//! Created Equal", OSDI 2014) and CrashMonkey (Mohan et al., "Finding Crash-Consistency Bugs
//! with Bounded Black-Box Crash Testing", OSDI 2018).
//!
//! A SIGKILL cannot lose what the page cache holds; a power failure can. So instead of killing
//! a process, this test **records** every durable-state operation a segment makes (through
//! the crate's one seam, [`crate::storage::Storage`]: creations, `ftruncate`, `pwrite`,
//! `fsync`, `fdatasync`, directory `fsync`), then **builds** every on-disk state a power loss
//! could leave at every point of the trace, **materialises** each into a fresh directory,
//! **recovers** it with the real recovery ([`Segment::open`]) and **checks** it against a model.
//!
//! # The crash model (what a power loss may leave after the first `c` operations)
//! - Per file, every write, and every length change, issued before that file's last `fsync`
//!   or `fdatasync` among the first `c` operations is on disk (both persist the length).
//! - Those issued after it are *pending*: any subset of them reached the disk, applied in
//!   program order. All subsets when there are at most [`ALL_SUBSETS_UP_TO`]; beyond, every
//!   prefix, every single omission and a seeded random sample (`OSPRIM_POWERLOSS_STATES` per
//!   crash point, default [`DEFAULT_SAMPLES`]; `OSPRIM_POWERLOSS_ROUNDS` sets the number of
//!   random `mixed` workloads, default 1, for a long local pass).
//! - The last pending write may also be **torn** at 512-byte sector granularity: only some of
//!   its sectors reached the disk (all proper subsets up to 6 sectors; beyond, prefixes,
//!   suffixes and single omissions at the first and last two sectors and at as many more
//!   sectors, spread evenly, as the sample size), with the other pending writes all or none
//!   persisted.
//! - A file created after the directory's last `fsync` may be missing.
//!
//! # The model (what recovery must give)
//! The states S0, S1, … of the segment after each transaction that changed bytes. At crash
//! point `c`, let `m` be the last transaction whose log `fdatasync` completed (or, with the
//! barriers dropped, whose commit returned): recovery must give exactly S`m`, or S`m+1` if
//! that transaction's commit had started — no other state, so no lost committed transaction,
//! no partial or torn one, and no change to bytes no transaction wrote. Recovery must not
//! fail once `Segment::create` has returned; before that, it may fail with an error (never a
//! panic) or give S0. After recovery the file on disk equals the mapping, the log holds no
//! transaction, and a second recovery changes nothing.

use crate::storage::{Mode, Role, Storage};
use crate::{CrashPoint, Detection, Error, Options, Segment, Tracking};
use stats::rng::Rng;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Instant;

/// All subsets of the pending writes of a file are tried up to this many.
const ALL_SUBSETS_UP_TO: usize = 10;
/// Random subsets per crash point beyond that, unless `OSPRIM_POWERLOSS_STATES` says.
const DEFAULT_SAMPLES: usize = 16;
/// The sector size of the torn-write model.
const SECTOR: u64 = 512;

// ---------------------------------------------------------------------------------------------
// The recorder

/// One recorded durable-state operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A new directory entry for the file.
    Create(Role),
    /// `ftruncate` (or the truncation of an `O_TRUNC` open of an existing file).
    SetLen(Role, u64),
    /// A `pwrite` of these bytes at this offset.
    Write(Role, u64, Vec<u8>),
    /// `fsync` (true) or `fdatasync` (false) of the file: a barrier for its data and length.
    Sync(Role, bool),
    /// `fsync` of the directory: a barrier for the creations.
    SyncDir,
}

/// Records the operations a [`Storage::Recorded`] passes on (the operations themselves are
/// made on the real files; the syncs are not, the real disk state being of no interest).
#[derive(Debug)]
pub(crate) struct Recorder {
    /// The trace.
    pub(crate) ops: Vec<Op>,
    /// Barriers left out of the trace, as if the RVM had not made them (the negative tests).
    dropped: Dropped,
    /// Barrier calls so far (dropped ones included).
    barrier_calls: usize,
}

/// Which barriers a recorder leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dropped {
    /// None: the RVM as it is.
    None,
    /// Every `fsync` and `fdatasync` (an RVM with its syncs removed, as an `LD_PRELOAD` would).
    All,
    /// Only this one kind.
    Only(Op2),
    /// Only the barrier call with this index (from 0, in call order).
    Nth(usize),
}

/// A barrier kind (an [`Op`] without data, so that [`Dropped`] is `Copy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op2 {
    Sync(Role, bool),
    SyncDir,
}

impl Dropped {
    fn drops(self, op: &Op, call: usize) -> bool {
        match (self, op) {
            (Dropped::None, _) => false,
            (Dropped::Nth(n), _) => n == call,
            (Dropped::All, _) => true,
            (Dropped::Only(Op2::Sync(r, f)), Op::Sync(r2, f2)) => r == *r2 && f == *f2,
            (Dropped::Only(Op2::SyncDir), Op::SyncDir) => true,
            _ => false,
        }
    }
}

impl Recorder {
    pub(crate) fn opened(&mut self, role: Role, mode: Mode, existed: bool) {
        if !existed {
            self.ops.push(Op::Create(role));
        } else if mode == Mode::CreateTruncate {
            self.ops.push(Op::SetLen(role, 0));
        }
    }

    pub(crate) fn set_len(&mut self, role: Role, len: u64) {
        self.ops.push(Op::SetLen(role, len));
    }

    pub(crate) fn write(&mut self, role: Role, offset: u64, bytes: &[u8]) {
        self.ops.push(Op::Write(role, offset, bytes.to_vec()));
    }

    pub(crate) fn sync(&mut self, _file: &File, role: Role, full: bool) -> std::io::Result<()> {
        self.barrier(Op::Sync(role, full));
        Ok(())
    }

    pub(crate) fn sync_dir(&mut self, _dir: &Path) -> std::io::Result<()> {
        self.barrier(Op::SyncDir);
        Ok(())
    }

    fn barrier(&mut self, op: Op) {
        self.barrier_calls += 1;
        if !self.dropped.drops(&op, self.barrier_calls - 1) {
            self.ops.push(op);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crash states

/// The files on a disk after a crash: [segment, log], `None` where the file is missing.
type Disk = [Option<Vec<u8>>; 2];

fn idx(role: Role) -> usize {
    match role {
        Role::Segment => 0,
        Role::Log => 1,
    }
}

const ROLES: [Role; 2] = [Role::Segment, Role::Log];

fn apply(file: &mut Vec<u8>, op: &Op) {
    match op {
        Op::SetLen(_, len) => file.resize(*len as usize, 0),
        Op::Write(_, off, bytes) => write_at(file, *off, bytes),
        _ => {}
    }
}

fn write_at(file: &mut Vec<u8>, off: u64, bytes: &[u8]) {
    let (off, end) = (off as usize, off as usize + bytes.len());
    if file.len() < end {
        file.resize(end, 0);
    }
    file[off..end].copy_from_slice(bytes);
}

fn role_of(op: &Op) -> Option<Role> {
    match op {
        Op::Create(r) | Op::SetLen(r, _) | Op::Write(r, _, _) | Op::Sync(r, _) => Some(*r),
        Op::SyncDir => None,
    }
}

/// The subsets (as masks) of `n` pending operations to try.
fn subsets(n: usize, samples: usize, rng: &mut Rng) -> Vec<Vec<bool>> {
    if n <= ALL_SUBSETS_UP_TO {
        return (0..1u32 << n).map(|m| (0..n).map(|i| m >> i & 1 == 1).collect()).collect();
    }
    let mut out: Vec<Vec<bool>> = (0..=n).map(|k| (0..n).map(|i| i < k).collect()).collect();
    out.extend((0..n).map(|k| (0..n).map(|i| i != k).collect()));
    out.extend((0..samples).map(|_| (0..n).map(|_| rng.next_u64() & 1 == 1).collect()));
    out
}

/// The sector subsets of a torn write over `n` sectors (proper, non-empty): all of them up to
/// 6 sectors; beyond, the prefixes and suffixes cut at, and the single omissions of, the first
/// and last two sectors and `spread` more spread evenly.
fn torn_sectors(n: usize, spread: usize) -> Vec<Vec<bool>> {
    if n < 2 {
        return Vec::new();
    }
    if n <= 6 {
        return (1..(1u32 << n) - 1).map(|m| (0..n).map(|i| m >> i & 1 == 1).collect()).collect();
    }
    let mut at: Vec<usize> =
        [1, 2, n - 2, n - 1].into_iter().chain((1..=spread).map(|j| j * n / (spread + 1))).collect();
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    for &k in at.iter().filter(|&&k| k > 0 && k < n) {
        out.push((0..n).map(|i| i < k).collect()); // a prefix reached the disk
        out.push((0..n).map(|i| i >= k).collect()); // a suffix
        out.push((0..n).map(|i| i != k).collect()); // all but one sector
    }
    out
}

/// Writes the sectors of `bytes` at `off` that `mask` selects.
fn write_torn(file: &mut Vec<u8>, off: u64, bytes: &[u8], mask: &[bool]) {
    let first = off / SECTOR;
    for (k, &keep) in mask.iter().enumerate() {
        if !keep {
            continue;
        }
        let s = ((first + k as u64) * SECTOR).max(off);
        let e = ((first + k as u64 + 1) * SECTOR).min(off + bytes.len() as u64);
        write_at(file, s, &bytes[(s - off) as usize..(e - off) as usize]);
    }
}

/// The contents one file may have after a crash after the first `c` operations (`None`: the
/// file is missing), deduplicated.
fn file_variants(
    initial: &Option<Vec<u8>>,
    ops: &[Op],
    role: Role,
    samples: usize,
    rng: &mut Rng,
) -> Vec<Option<Vec<u8>>> {
    let last_barrier = ops.iter().rposition(|o| matches!(o, Op::Sync(r, _) if *r == role));
    let last_dir_sync = ops.iter().rposition(|o| *o == Op::SyncDir);
    let created = ops.iter().position(|o| *o == Op::Create(role));
    let (may_miss, may_exist) = match (initial, created) {
        (Some(_), _) => (false, true),
        (None, None) => (true, false),
        (None, Some(i)) => (last_dir_sync.is_none_or(|d| d < i), true),
    };
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    if may_miss {
        out.push(None);
    }
    if !may_exist {
        return out;
    }
    let mut base = initial.clone().unwrap_or_default();
    let data = |o: &&Op| role_of(o) == Some(role) && matches!(o, Op::SetLen(..) | Op::Write(..));
    let split = last_barrier.map_or(0, |b| b + 1);
    for op in ops[..split].iter().filter(data) {
        apply(&mut base, op);
    }
    let pending: Vec<&Op> = ops[split..].iter().filter(data).collect();
    let mut seen = HashSet::new();
    let mut push = |f: Vec<u8>, out: &mut Vec<Option<Vec<u8>>>| {
        if seen.insert(digest(&f)) {
            out.push(Some(f));
        }
    };
    for mask in subsets(pending.len(), samples, rng) {
        let mut f = base.clone();
        for (op, _) in pending.iter().zip(&mask).filter(|(_, k)| **k) {
            apply(&mut f, op);
        }
        push(f, &mut out);
    }
    if let Some(Op::Write(_, off, bytes)) = pending.last() {
        let sectors = ((off + bytes.len() as u64).div_ceil(SECTOR) - off / SECTOR) as usize;
        for mask in torn_sectors(sectors, samples) {
            for others in [false, true] {
                let mut f = base.clone();
                if others {
                    pending[..pending.len() - 1].iter().for_each(|op| apply(&mut f, op));
                }
                write_torn(&mut f, *off, bytes, &mask);
                push(f, &mut out);
            }
        }
    }
    out
}

fn digest(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Every disk a crash after the first `c` operations of `ops` may leave.
fn crash_states(initial: &Disk, ops: &[Op], c: usize, samples: usize, rng: &mut Rng) -> Vec<Disk> {
    let per_file: Vec<Vec<Option<Vec<u8>>>> =
        ROLES.iter().map(|&r| file_variants(&initial[idx(r)], &ops[..c], r, samples, rng)).collect();
    let mut out = Vec::new();
    for seg in &per_file[0] {
        for log in &per_file[1] {
            out.push([seg.clone(), log.clone()]);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Workloads and the model

const NAME: &str = "seg";

fn options() -> Options {
    Options { detection: Detection::Mprotect, tracking: Tracking::Writes }
}

/// A recorded workload: the trace, the disk it started from, and the model.
struct Run {
    name: &'static str,
    rec: Rc<RefCell<Recorder>>,
    dir: tempfile::TempDir,
    initial: Disk,
    /// S0, S1, …: the segment after each transaction that changed bytes.
    states: Vec<Vec<u8>>,
    /// For each state, the crash point from which it must be recovered (S0: 0).
    durable_from: Vec<usize>,
    /// For each state, the crash point from which it may be recovered (S0: 0).
    possible_from: Vec<usize>,
    /// The crash point from which recovery must succeed (after `create` returned).
    valid_from: usize,
    /// Where each step of the workload starts in the trace, and what it is.
    phases: Vec<(usize, &'static str)>,
}

fn scratch() -> tempfile::TempDir {
    // tmpfs when there is one: the test writes thousands of small files.
    tempfile::tempdir_in("/dev/shm").or_else(|_| tempfile::tempdir()).expect("tempdir")
}

impl Run {
    /// A run whose trace starts from an empty directory (it records the creation).
    fn create(name: &'static str, pages: usize, dropped: Dropped) -> (Run, Segment) {
        let rec = Rc::new(RefCell::new(Recorder { ops: Vec::new(), dropped, barrier_calls: 0 }));
        let dir = scratch();
        let seg = Segment::create_in(Storage::Recorded(rec.clone()), &dir.path().join(NAME), pages, options())
            .expect("create the recorded segment");
        let valid_from = rec.borrow().ops.len();
        let zeros = vec![0; seg.len()];
        let run = Run {
            name,
            rec,
            dir,
            initial: [None, None],
            states: vec![zeros],
            durable_from: vec![0],
            possible_from: vec![0],
            valid_from,
            phases: vec![(0, "create")],
        };
        (run, seg)
    }

    /// A run whose trace starts from a segment created (and synced) beforehand.
    fn from_snapshot(name: &'static str, pages: usize, dropped: Dropped) -> (Run, Segment) {
        let dir = scratch();
        let path = dir.path().join(NAME);
        drop(Segment::create(&path, pages, options()).expect("create"));
        let read = |p: PathBuf| Some(std::fs::read(p).expect("read the snapshot"));
        let initial = [read(path.clone()), read(crate::log_path_of(&path))];
        let rec = Rc::new(RefCell::new(Recorder { ops: Vec::new(), dropped, barrier_calls: 0 }));
        let seg = Segment::open_in(Storage::Recorded(rec.clone()), &path, options()).expect("open recorded");
        let zeros = initial[0].clone().expect("segment");
        let run = Run {
            name,
            rec,
            dir,
            initial,
            states: vec![zeros],
            durable_from: vec![0],
            possible_from: vec![0],
            valid_from: 0,
            phases: vec![(0, "open")],
        };
        (run, seg)
    }

    fn ops_len(&self) -> usize {
        self.rec.borrow().ops.len()
    }

    /// Records a new model state `writes` make, committed by the operations from `start` on
    /// (durable from its log sync, or, with no barrier, from `end`).
    fn push_state(&mut self, writes: &[(usize, Vec<u8>)], start: usize, end: usize) {
        let mut s = self.states.last().expect("S0").clone();
        for (off, bytes) in writes {
            s[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        let sync = self.rec.borrow().ops[start..end].iter().position(|o| *o == Op::Sync(Role::Log, false));
        self.states.push(s);
        self.durable_from.push(sync.map_or(end, |i| start + i + 1));
        self.possible_from.push(start + 1);
    }

    /// A transaction of `writes`, committed.
    fn commit(&mut self, seg: &mut Segment, writes: &[(usize, Vec<u8>)]) {
        let start = self.ops_len();
        self.phases.push((start, "commit"));
        let mut tx = seg.begin().expect("begin");
        for (off, bytes) in writes {
            tx.write(*off, bytes).expect("write");
        }
        let done = tx.commit().expect("commit");
        let end = self.ops_len();
        if done.read_only() {
            assert_eq!(start, end, "a read-only commit makes no durable-state operation");
        } else {
            self.push_state(writes, start, end);
        }
    }

    /// A transaction of `writes`, aborted (or dropped).
    fn abort(&mut self, seg: &mut Segment, writes: &[(usize, Vec<u8>)], drop_it: bool) {
        let start = self.ops_len();
        let mut tx = seg.begin().expect("begin");
        for (off, bytes) in writes {
            tx.write(*off, bytes).expect("write");
        }
        if drop_it {
            drop(tx);
        } else {
            tx.abort();
        }
        assert_eq!(start, self.ops_len(), "an abort makes no durable-state operation");
    }

    /// A commit stopped at `point` (as a crash of the process would), then the segment reopened
    /// — recovery applies the log to the segment and trims it — all recorded.
    fn crash_and_reopen(&mut self, seg: Segment, writes: &[(usize, Vec<u8>)], point: CrashPoint) -> Segment {
        let mut seg = seg;
        let start = self.ops_len();
        self.phases.push((start, "commit"));
        seg.inject_crash(point);
        let mut tx = seg.begin().expect("begin");
        for (off, bytes) in writes {
            tx.write(*off, bytes).expect("write");
        }
        let full = match tx.commit() {
            Err(Error::CrashInjected { log_bytes, .. }) => log_bytes,
            other => panic!("expected an injected crash, got {other:?}"),
        };
        drop(seg);
        self.phases.push((self.ops_len(), "recovery"));
        let seg = Segment::open_in(Storage::Recorded(self.rec.clone()), &self.dir.path().join(NAME), options())
            .expect("recover in the recorded run");
        let end = self.ops_len();
        match point {
            CrashPoint::Apply { .. } => self.push_state(writes, start, end),
            CrashPoint::LogWrite { bytes } => assert!(bytes < full, "a torn log write must be short of {full}"),
        }
        seg
    }

    /// A clean reopen (recorded).
    fn reopen(&mut self, seg: Segment) -> Segment {
        drop(seg);
        self.phases.push((self.ops_len(), "open"));
        Segment::open_in(Storage::Recorded(self.rec.clone()), &self.dir.path().join(NAME), options()).expect("reopen")
    }
}

// ---------------------------------------------------------------------------------------------
// Checking

/// What the crash states of one workload gave.
#[derive(Debug, Default)]
struct Tally {
    /// Crash points (operations + 1).
    points: usize,
    /// States generated, duplicates included.
    generated: usize,
    /// Distinct states recovered and checked.
    checked: usize,
    /// States before `create` returned that recovery refused with an error.
    refused: usize,
    /// Committed transactions lost (recovered to an older state than the model allows).
    lost: usize,
    /// Other failures: a state no transaction sequence gives, or a recovery error.
    other: usize,
    /// The first failures, described.
    failures: Vec<String>,
}

fn samples() -> usize {
    env_or("OSPRIM_POWERLOSS_STATES", DEFAULT_SAMPLES)
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// When [`check`] stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// After the last state.
    Never,
    /// At the first lost committed transaction.
    AtLoss,
    /// At the first failure of any kind.
    AtFailure,
}

/// Generates, materialises, recovers and checks every crash state of `run` (or until `stop`).
fn check(run: &Run, seed: u64, stop: Stop) -> Tally {
    let ops = run.rec.borrow().ops.clone();
    let mut rng = Rng::new(seed);
    let samples = samples();
    let root = scratch();
    let mut seen = HashSet::new();
    let mut t = Tally { points: ops.len() + 1, ..Tally::default() };
    for c in 0..=ops.len() {
        let must = run.durable_from.iter().rposition(|&d| d <= c).expect("S0");
        let may = (must + 1 < run.states.len() && run.possible_from[must + 1] <= c).then_some(must + 1);
        for disk in crash_states(&run.initial, &ops, c, samples, &mut rng) {
            t.generated += 1;
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (&disk, must, may, c >= run.valid_from).hash(&mut h);
            if !seen.insert(h.finish()) {
                continue;
            }
            t.checked += 1;
            let dir = root.path().join(t.checked.to_string());
            match recover_and_check(&dir, &disk, run, c, must, may) {
                Verdict::Ok => {}
                Verdict::Refused => t.refused += 1,
                Verdict::Lost(why) => {
                    t.lost += 1;
                    if t.failures.len() < 5 {
                        t.failures.push(format!("{}: crash after {c} ops: {why}", run.name));
                    }
                }
                Verdict::Bad(why) => {
                    t.other += 1;
                    if t.failures.len() < 5 {
                        t.failures.push(format!("{}: crash after {c} ops: {why}", run.name));
                    }
                }
            }
            std::fs::remove_dir_all(&dir).expect("remove the crash state");
            if (stop == Stop::AtLoss && t.lost > 0) || (stop == Stop::AtFailure && t.lost + t.other > 0) {
                return t;
            }
        }
    }
    t
}

enum Verdict {
    Ok,
    Refused,
    Lost(String),
    Bad(String),
}

fn recover_and_check(dir: &Path, disk: &Disk, run: &Run, c: usize, must: usize, may: Option<usize>) -> Verdict {
    std::fs::create_dir(dir).expect("mkdir");
    let path = dir.join(NAME);
    for (r, f) in ROLES.iter().zip(disk) {
        if let Some(bytes) = f {
            let p = if *r == Role::Segment { path.clone() } else { crate::log_path_of(&path) };
            std::fs::write(p, bytes).expect("materialise");
        }
    }
    let seg = match Segment::open(&path, options()) {
        Ok(seg) => seg,
        Err(_) if c < run.valid_from => return Verdict::Refused,
        Err(e) => return Verdict::Bad(format!("recovery failed: {e}")),
    };
    let got = seg.bytes().to_vec();
    let ok = got == run.states[must] || may.is_some_and(|m| got == run.states[m]);
    if !ok {
        let which = run.states.iter().rposition(|s| *s == got);
        return match which {
            Some(j) if j < must => Verdict::Lost(format!("recovered S{j}, but S{must} was durable (commit returned)")),
            Some(j) => Verdict::Bad(format!(
                "recovered S{j}, expected S{must}{}",
                may.map(|m| format!(" or S{m}")).unwrap_or_default()
            )),
            None => Verdict::Bad(format!("recovered a state no transaction sequence gives (expected S{must})")),
        };
    }
    if std::fs::read(&path).ok().as_deref() != Some(got.as_slice()) {
        return Verdict::Bad("the segment file differs from the recovered mapping".into());
    }
    if seg.logged_transactions().ok() != Some(0) {
        return Verdict::Bad("the log still holds a transaction after recovery".into());
    }
    drop(seg);
    match Segment::open(&path, options()) {
        Ok(again) if again.bytes() == got.as_slice() && again.recovery().transactions == 0 => Verdict::Ok,
        Ok(_) => Verdict::Bad("a second recovery changed the segment".into()),
        Err(e) => Verdict::Bad(format!("a second recovery failed: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The workloads

/// Random non-zero bytes.
fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| (rng.next_u64() as u8) | 1).collect()
}

/// 1 to 4 writes anywhere in a segment of `len` bytes, of 1 to 64 bytes (one in four: to 600,
/// so that log records span sectors and can be torn).
fn small_writes(rng: &mut Rng, len: usize) -> Vec<(usize, Vec<u8>)> {
    (0..1 + rng.below(4))
        .map(|_| {
            let max = if rng.below(4) == 0 { 600 } else { 64 };
            let n = 1 + rng.below(max) as usize;
            (rng.below((len - n) as u64) as usize, bytes(rng, n))
        })
        .collect()
}

/// Creation (every barrier of `create`: the segment's `fsync`, the log's, the directory's) and
/// two commits.
fn workload_create(dropped: Dropped) -> Run {
    let (mut run, mut seg) = Run::create("create", 4, dropped);
    run.commit(&mut seg, &[(10, b"first".to_vec())]);
    run.commit(&mut seg, &[(4090, b"across a page".to_vec()), (12000, b"x".to_vec())]);
    run
}

/// Random small transactions: commits, aborts, dropped transactions, read-only commits.
fn workload_small(seed: u64, dropped: Dropped) -> Run {
    let (mut run, mut seg) = Run::from_snapshot("small", 4, dropped);
    let mut rng = Rng::new(seed);
    let len = seg.len();
    for _ in 0..40 {
        let writes = small_writes(&mut rng, len);
        match rng.below(10) {
            0..=5 => run.commit(&mut seg, &writes),
            6 => {
                // The same bytes again: a read-only commit.
                let cur = run.states.last().expect("S0").clone();
                let same: Vec<_> = writes.iter().map(|(o, b)| (*o, cur[*o..*o + b.len()].to_vec())).collect();
                run.commit(&mut seg, &same);
            }
            7 => run.abort(&mut seg, &writes, false),
            8 => run.abort(&mut seg, &writes, true),
            _ => run.commit(&mut seg, &[(rng.below(len as u64) as usize, bytes(&mut rng, 1))]),
        }
    }
    run
}

/// Transactions of varied sizes on a 4-page segment: one byte; a whole page; 40 scattered
/// ranges (more pending segment writes than all subsets are tried for); a write across a page
/// boundary with another at the end.
fn workload_sizes(seed: u64) -> Run {
    let (mut run, mut seg) = Run::from_snapshot("sizes", 4, Dropped::None);
    let mut rng = Rng::new(seed);
    let (len, ps) = (seg.len(), seg.page_size());
    run.commit(&mut seg, &[(rng.below(len as u64) as usize, bytes(&mut rng, 1))]);
    run.commit(&mut seg, &[(ps, bytes(&mut rng, ps))]);
    let scattered: Vec<_> = (0..40).map(|i| (i * 400 + rng.below(300) as usize, bytes(&mut rng, 8))).collect();
    run.commit(&mut seg, &scattered);
    run.commit(&mut seg, &[(ps - 2, bytes(&mut rng, 700)), (len - 5, bytes(&mut rng, 5))]);
    run
}

/// A transaction larger than the preallocated log (every byte of a 17-page segment: 68 KiB in
/// 17 ranges, ranges never crossing a page), which grows the log file, then small ones over its
/// stale bytes.
fn workload_large(seed: u64) -> Run {
    let (mut run, mut seg) = Run::from_snapshot("large", 17, Dropped::None);
    assert!(seg.len() > crate::LOG_PREALLOC, "the transaction must outgrow the preallocated log");
    let mut rng = Rng::new(seed);
    let len = seg.len();
    run.commit(&mut seg, &[(0, bytes(&mut rng, len))]);
    run.commit(&mut seg, &[(100, bytes(&mut rng, 3))]);
    run.commit(&mut seg, &[(len - 600, bytes(&mut rng, 600))]);
    run
}

/// Log application and trim outside a commit: recovery of a committed, unapplied transaction
/// (and of a half-applied one), of a torn log, and a clean reopen, each recorded with its
/// barriers, between ordinary commits.
fn workload_truncate(dropped: Dropped) -> Run {
    let (mut run, mut seg) = Run::from_snapshot("truncate", 4, dropped);
    run.commit(&mut seg, &[(7, b"before".to_vec())]);
    seg = run.crash_and_reopen(seg, &[(20, b"unapplied".to_vec())], CrashPoint::Apply { ranges: 0 });
    let three = [(100, b"one".to_vec()), (5000, b"two".to_vec()), (9000, b"three".to_vec())];
    seg = run.crash_and_reopen(seg, &three, CrashPoint::Apply { ranges: 1 });
    seg = run.crash_and_reopen(seg, &[(300, vec![9; 600])], CrashPoint::LogWrite { bytes: 40 });
    run.commit(&mut seg, &[(300, b"after".to_vec())]);
    seg = run.reopen(seg);
    run.commit(&mut seg, &[(16000, b"end".to_vec())]);
    run
}

/// Everything at random on an 8-page segment: small and multi-page transactions, aborts,
/// commits stopped before the log sync or during the apply and recovered, clean reopens.
fn workload_mixed(seed: u64) -> Run {
    let (mut run, mut seg) = Run::from_snapshot("mixed", 8, Dropped::None);
    let mut rng = Rng::new(seed);
    let (len, ps) = (seg.len(), seg.page_size());
    for _ in 0..30 {
        let mut writes = small_writes(&mut rng, len);
        if rng.below(4) == 0 {
            let n = ps + rng.below(2 * ps as u64) as usize; // two or three pages
            writes.push((rng.below((len - n) as u64) as usize, bytes(&mut rng, n)));
        }
        seg = match rng.below(12) {
            0 => run.crash_and_reopen(seg, &writes, CrashPoint::Apply { ranges: rng.below(3) as usize }),
            1 => run.crash_and_reopen(seg, &writes, CrashPoint::LogWrite { bytes: rng.below(40) as usize }),
            2 => run.reopen(seg),
            3 => {
                run.abort(&mut seg, &writes, rng.below(2) == 0);
                seg
            }
            _ => {
                run.commit(&mut seg, &writes);
                seg
            }
        };
    }
    run
}

/// A transaction whose bytes hold a valid log encoding of another, forged transaction, placed
/// so that the next (smaller) transaction's log record ends exactly where it starts: if that
/// commit's log write reaches the disk but the big one's trim does not (a power loss between
/// the two, the trim being unsynced), the log reads "next transaction, then the forged one".
fn workload_forged() -> Run {
    let (mut run, mut seg) = Run::from_snapshot("forged", 4, Dropped::None);
    let mut rng = Rng::new(3);
    let small = 8; // the next transaction: one 8-byte range, a (32 + 8 + 32)-byte log record
    let at = crate::log::HEADER + small; // where it ends, inside the big record's bytes
    let fake_seg = vec![0xEE_u8; 64];
    let mut forged = Vec::new();
    crate::log::encode(u64::MAX - 7, &[crate::log::Range { offset: 16, len: 4 }], &fake_seg, &mut forged);
    let mut payload = bytes(&mut rng, at + forged.len() + 40);
    payload[at..at + forged.len()].copy_from_slice(&forged);
    // Written over zeros at offset 1024: one range (no run of 32 unchanged bytes inside).
    run.commit(&mut seg, &[(1024, payload)]);
    run.commit(&mut seg, &[(3000, bytes(&mut rng, small))]);
    run.commit(&mut seg, &[(5000, bytes(&mut rng, 2))]);
    run
}

fn summary(t: &Tally, name: &str) -> String {
    format!(
        "{name}: {} crash points, {} states generated, {} distinct checked ({} refused before create returned), {} lost, {} other",
        t.points, t.generated, t.checked, t.refused, t.lost, t.other
    )
}

/// Every kind of barrier a trace must hold for the test to cover begin/commit/truncate.
fn barriers_in(ops: &[Op]) -> HashSet<String> {
    ops.iter().filter(|o| matches!(o, Op::Sync(..) | Op::SyncDir)).map(|o| format!("{o:?}")).collect()
}

#[test]
fn power_loss_at_every_point_loses_and_tears_nothing() {
    let _serial = sys::testing::serial();
    let t0 = Instant::now();
    let mut runs = vec![
        workload_create(Dropped::None),
        workload_small(1, Dropped::None),
        workload_sizes(2),
        workload_large(4),
        workload_truncate(Dropped::None),
        workload_forged(),
    ];
    // A long local pass: more random workloads (and more samples, see the module doc).
    runs.extend((0..env_or("OSPRIM_POWERLOSS_ROUNDS", 1) as u64).map(|r| workload_mixed(100 + r)));
    let mut all_barriers = HashSet::new();
    let (mut checked, mut failures) = (0, Vec::new());
    for (i, run) in runs.iter().enumerate() {
        all_barriers.extend(barriers_in(&run.rec.borrow().ops));
        let t1 = Instant::now();
        let t = check(run, 0xC0FFEE + i as u64, Stop::Never);
        eprintln!("power loss: {} in {:.1} s", summary(&t, run.name), t1.elapsed().as_secs_f64());
        assert!(t.checked > 0, "{}: no state checked", run.name);
        checked += t.checked;
        failures.extend(t.failures);
    }
    eprintln!("power loss: {checked} distinct crash states checked in {:.1} s", t0.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "power-loss failures:\n{}", failures.join("\n"));
    // create: fsync(segment), fsync(log), fsync(dir); commit: fdatasync(log), fdatasync(segment);
    // recovery: fdatasync(segment), fsync(log).
    for b in ["Sync(Segment, true)", "Sync(Log, true)", "SyncDir", "Sync(Log, false)", "Sync(Segment, false)"] {
        assert!(all_barriers.contains(b), "no {b} in the traces: {all_barriers:?}");
    }
}

#[test]
fn without_its_barriers_the_rvm_loses_committed_transactions_and_the_test_sees_it() {
    let _serial = sys::testing::serial();
    for run in [workload_small(1, Dropped::All), workload_truncate(Dropped::All)] {
        assert!(barriers_in(&run.rec.borrow().ops).is_empty());
        let t = check(&run, 7, Stop::AtLoss);
        eprintln!("power loss, every barrier dropped: {} (stopped at the first loss)", summary(&t, run.name));
        eprintln!("  {}", t.failures.join("\n  "));
        assert!(t.lost > 0, "{}: the test did not see the missing barriers", run.name);
    }
}

#[test]
fn the_test_sees_each_barrier_missing_alone() {
    let _serial = sys::testing::serial();
    use Role::{Log, Segment as Seg};
    let cases = [
        // Without the segment's fdatasync, the trim can reach the disk before the applied bytes.
        (Dropped::Only(Op2::Sync(Seg, false)), Stop::AtLoss, workload_small(1, Dropped::Only(Op2::Sync(Seg, false)))),
        // Without the log's, the applied bytes can reach the disk without the log: half a transaction.
        (
            Dropped::Only(Op2::Sync(Log, false)),
            Stop::AtFailure,
            workload_small(1, Dropped::Only(Op2::Sync(Log, false))),
        ),
        // Without recovery's fdatasync of the segment, its zeroed log can outlive the replayed bytes.
        (Dropped::Only(Op2::Sync(Seg, false)), Stop::AtLoss, workload_truncate(Dropped::Only(Op2::Sync(Seg, false)))),
        // Without the directory's fsync, a created segment can vanish.
        (Dropped::Only(Op2::SyncDir), Stop::AtFailure, workload_create(Dropped::Only(Op2::SyncDir))),
    ];
    for (dropped, stop, run) in cases {
        let t = check(&run, 11, stop);
        eprintln!("power loss, {dropped:?} dropped: {} (stopped at the first failure)", summary(&t, run.name));
        eprintln!("  {}", t.failures.join("\n  "));
        assert!(t.lost + t.other > 0, "{}: the test did not see {dropped:?} missing", run.name);
        if stop == Stop::AtLoss {
            assert!(t.lost > 0, "{}: no committed transaction lost without {dropped:?}", run.name);
        }
    }
}

/// Each barrier of a workload in turn left out: the barriers whose absence the test sees (it
/// then finds a failure), and those it does not, as "<phase> <barrier>" labels.
fn drop_each_barrier(workload: impl Fn(Dropped) -> Run) -> (Vec<String>, Vec<String>) {
    let full = workload(Dropped::None);
    let ops = full.rec.borrow().ops.clone();
    let barriers: Vec<(usize, &Op)> =
        ops.iter().enumerate().filter(|(_, o)| matches!(o, Op::Sync(..) | Op::SyncDir)).collect();
    let (mut seen, mut unseen) = (Vec::new(), Vec::new());
    for (k, (at, op)) in barriers.into_iter().enumerate() {
        let phase = full.phases.iter().rev().find(|(start, _)| *start <= at).map_or("?", |p| p.1);
        let label = format!("{} #{k} {phase} {op:?}", full.name);
        let t = check(&workload(Dropped::Nth(k)), 13, Stop::AtFailure);
        if t.lost + t.other > 0 { seen.push(label) } else { unseen.push(label) }
    }
    (seen, unseen)
}

#[test]
fn the_test_sees_each_necessary_barrier_dropped_alone() {
    let _serial = sys::testing::serial();
    let (mut seen, mut unseen) = drop_each_barrier(workload_create);
    let (s, u) = drop_each_barrier(workload_truncate);
    seen.extend(s);
    unseen.extend(u);
    eprintln!("power loss, one barrier dropped, seen:\n  {}", seen.join("\n  "));
    eprintln!("power loss, one barrier dropped, not needed:\n  {}", unseen.join("\n  "));
    // Each commit's fdatasync of the segment (else the trim can reach the disk before the
    // applied bytes), recovery's (else the zeroed log can), create's fsync of the segment (its
    // length) and of the directory are needed every time, and the test sees each one missing.
    for needed in
        ["commit Sync(Segment, false)", "recovery Sync(Segment, false)", "create Sync(Segment, true)", "create SyncDir"]
    {
        assert!(!unseen.iter().any(|l| l.ends_with(needed)), "the test does not see a missing {needed}: {unseen:?}");
        assert!(seen.iter().any(|l| l.ends_with(needed)), "no {needed} in the traces");
    }
    // The log's fdatasync is the commit point, needed wherever the transaction's writes to the
    // segment can be torn (more than one range or sector): without it, part of the transaction
    // can be on disk and no log to complete it. A transaction of one range in one sector is
    // atomic on its own under the sector model, so its log sync alone is not seen missing.
    assert!(seen.iter().any(|l| l.ends_with("commit Sync(Log, false)")), "the test never sees a missing log sync");
}

#[test]
fn the_crash_model_persists_what_a_barrier_covers_and_no_more() {
    use Role::{Log, Segment as Seg};
    let initial: Disk = [Some(vec![0; 1024]), Some(vec![0; 1024])];
    let ops = vec![
        Op::Write(Log, 0, vec![1; 1024]),
        Op::Sync(Log, false),
        Op::Write(Seg, 0, vec![2; 4]),
        Op::Write(Seg, 600, vec![3; 4]),
        Op::Write(Log, 0, vec![0; 1024]),
    ];
    let mut rng = Rng::new(1);
    // Before the sync: the log write is pending, and may be torn into its 2 sectors.
    let states = crash_states(&initial, &ops, 1, 4, &mut rng);
    let logs: HashSet<Vec<u8>> = states.iter().map(|d| d[1].clone().expect("log")).collect();
    assert_eq!(logs.len(), 4, "old, new, and each sector alone");
    // After it: the log write is durable; two pending segment writes give 4 states, and the
    // trim is pending on the log (old or zeros; its 2 sectors torn).
    let states = crash_states(&initial, &ops, 5, 4, &mut rng);
    assert!(states.iter().all(|d| d[1].as_ref().is_some_and(|l| l[1000] == 1 || l[1000] == 0)));
    let segs: HashSet<Vec<u8>> = states.iter().map(|d| d[0].clone().expect("segment")).collect();
    assert_eq!(segs.len(), 4);
    assert_eq!(states.len(), 4 * 4);
    // A file created and never synced into its directory may be missing.
    let created = [Op::Create(Log), Op::Write(Log, 0, vec![5; 10]), Op::Sync(Log, true)];
    let states = crash_states(&[Some(vec![]), None], &created, 3, 4, &mut rng);
    assert!(states.iter().any(|d| d[1].is_none()) && states.iter().any(|d| d[1] == Some(vec![5; 10])));
}
