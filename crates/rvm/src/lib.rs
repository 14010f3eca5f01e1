//! `rvm`: recoverable virtual memory — a data segment mapped from a file, changed in
//! transactions that are atomic and durable, after Satyanarayanan et al., "Lightweight
//! Recoverable Virtual Memory" (SOSP 1993), with the write detection by page protection that
//! Rhino on SPIN (Seltzer et al., OSDI 1996) used.
//!
//! ```no_run
//! # fn main() -> Result<(), osprim_rvm::Error> {
//! use osprim_rvm::{Options, Segment};
//! let mut seg = Segment::create("/tmp/accounts.seg", 16, Options::default())?;
//! let mut tx = seg.begin()?;
//! tx.write(100, b"balance=42")?; // or tx.bytes_mut()[100..110].copy_from_slice(…)
//! tx.commit()?; // durable when this returns
//! # Ok(()) }
//! ```
//!
//! # Design
//! A segment is a file of N pages plus a redo log beside it (`<segment>.log`, format in the
//! `log` module). The segment is mapped **`MAP_PRIVATE`** (copy-on-write): writes made in a
//! transaction change only this process's memory and never reach the file through the
//! mapping, so the kernel's writeback cannot put uncommitted bytes on disk.
//!
//! - [`Segment::begin`] write-protects the whole segment. The first write to each page traps
//!   ([`Detection::Mprotect`]: SIGSEGV; [`Detection::Uffd`]: a userfaultfd write-protect fault
//!   served by a thread — only where the kernel allows it on the segment's memory, i.e. not on
//!   ext4/xfs/btrfs files today), and the handler copies the page's pre-image into a buffer
//!   preallocated at open, marks the page dirty and lifts the protection
//!   (`sys::wprotect` has the handlers).
//! - [`Transaction::commit`] compares each dirty page with its pre-image and turns the changed
//!   bytes into redo records (offset, length, bytes, CRC-32C), closed by a commit record that
//!   carries the transaction id and a checksum over all of them. It writes them to the log with
//!   one `pwrite` at the log's head and `fdatasync`s the log — **the commit point** — then
//!   applies the changed ranges to the segment file with `pwrite`, `fdatasync`s it, and trims
//!   the log by overwriting what it wrote with zeros (a `pwrite`, not synced). A transaction
//!   that changed no byte writes and syncs nothing.
//! - The log file keeps its size: it is preallocated (64 KiB of zeros) when the segment is
//!   created and only grows, when a transaction needs more. Each commit overwrites blocks that
//!   are already allocated, so its `fdatasync` has no metadata to journal, and the trim is not
//!   an `ftruncate` (which on ext4 waits for the journal: measured here, truncating to zero
//!   after each commit made a commit about twice as slow).
//! - [`Transaction::abort`] (or dropping the transaction) copies the pre-images back.
//! - **Read tracking** ([`Tracking::All`], with [`Detection::Mprotect`] only), as Rhino did:
//!   begin makes the whole segment `PROT_NONE`; the first read of a page in a transaction traps
//!   and is recorded (the page becomes readable), a write traps, saves the pre-image and makes
//!   the page writable; the commit (or abort) ends by making every page touched `PROT_NONE`
//!   again ([`Stage::Reprotected`]), so even a read-only commit of a transaction that read
//!   something makes a system call. Outside a transaction reads of the segment
//!   ([`Segment::bytes`]) fault and are served by making the page readable (counted in
//!   [`Stats::outside_reads`]); the kernel's reads from it (e.g. `write(2)` from
//!   [`Segment::bytes`]) fail with `EFAULT` instead. userfaultfd cannot track reads (see
//!   `sys::wprotect`), so that combination is [`Error::Unavailable`].
//! - **Kernel crossings.** Every system call a begin, commit or abort makes is counted where it
//!   is made (one increment beside each `mprotect`, `ioctl`, `pwrite`, `fdatasync`), and each
//!   begin and commit reports its own ([`Crossings`]: [`Transaction::begin_crossings`],
//!   [`Committed::crossings`]), with the protection faults taken during it (read from the fault
//!   handler's counters). Per path: begin 1 (`mprotect`, or `UFFDIO_WRITEPROTECT`); a read-only
//!   commit 0, or with read tracking 1 per run of adjacent pages touched; a commit that changed
//!   bytes 5 (`pwrite` log, `fdatasync` log, one `pwrite` per changed range, `fdatasync` file,
//!   `pwrite` trim; more if the kernel writes short), plus the re-protection with read tracking.
//!   The probed forms ([`Segment::begin_probed`], [`Transaction::commit_probed`]) also call
//!   their probe right before and right after each of those calls ([`Stage::Enter`],
//!   [`Stage::Exit`], naming the [`Call`]), at the same call sites, so a benchmark can time every
//!   crossing in place: as many pairs as [`Crossings::syscalls`] counts.
//! - [`Segment::open`] replays the complete, valid transaction at the head of the log (there
//!   is at most one: every commit writes at the head) into the file by `pwrite`, syncs the
//!   file, zeroes the log and syncs it, and only then maps the segment. A torn or corrupt head
//!   is ignored, and so is everything after the head transaction.
//! - Every operation that changes durable state — creating a file, `ftruncate`, `pwrite`,
//!   `fsync`, `fdatasync`, the directory's `fsync` — goes through one internal seam (the
//!   `storage` module), the operating system itself outside tests, so that the power-loss test
//!   can record them.
//!
//! # Why a crash loses nothing and half-applies nothing
//! Let T be the transaction being committed.
//! 1. Before the log `fdatasync` returns, the file holds exactly the state before T (point 0
//!    below) and the log holds no valid commit record for T unless all of T's records are
//!    intact: the commit record's checksum covers every record's checksum, each of which
//!    covers that record's bytes and position, so a log whose pages reached the disk in any
//!    order, or only in part, yields T entirely or not at all.
//! 2. After it returns, T is durable in the log. A crash while applying leaves the file with
//!    any subset of T's ranges written; recovery replays all of T. Redo records hold absolute
//!    bytes, so replaying a range that was already written changes nothing (idempotence).
//! 3. The log is trimmed only after the file's `fdatasync`. If a crash loses the trim (or
//!    tears it), the log still holds T, or a part of it that fails its checks; replaying T
//!    again is harmless by (2). The trim is not synced: the next commit's log `fdatasync`
//!    makes it durable along with that commit's record. So a power loss before then may leave
//!    the next commit's record (whole or torn) over T's old bytes: torn, it fails its
//!    checksums (which do not rely on sectors being written atomically); whole, it is read
//!    and what follows it is not, since recovery reads only the transaction at the head. (It
//!    used to read on while transactions followed, which replayed a transaction forged in
//!    T's data bytes; the power-loss test found it.)
//!
//! 0. The file changes only by (2) and by replay, i.e. only with bytes of transactions whose
//!    commit record is durable; the mapping is private, so no other path writes it.
//!
//! Hence after any crash the recovered segment is the state after the last transaction whose
//! log sync completed: every transaction whose commit returned, plus perhaps the one in flight
//! if it passed its commit point. `tests/cli/rvm_crash.rs` checks this with SIGKILL at random
//! points and at injected ones ([`Segment::inject_crash`]) — which cannot lose what the page
//! cache holds (it passes with every sync removed) — and the power-loss test (the
//! `powerloss` module, `cargo test --release -p osprim-rvm powerloss`) with every on-disk
//! state a power failure could leave at every point of recorded workloads.
//!
//! # Durability contract
//! (docs/rvm-durability.md says the same at more length.)
//! - **Create.** When [`Segment::create`] returns, the segment (zeros) and its log are durable,
//!   names included. If it does not return, a later [`Segment::open`] may fail with an error
//!   or give a zeroed segment.
//! - **Commit.** When [`Transaction::commit`] returns `Ok`, the transaction is durable: after
//!   a crash of the process, of the system, or a power failure, [`Segment::open`] gives a
//!   segment that holds it. A commit that changed no byte does no I/O and has nothing to make
//!   durable. There is no commit without a flush.
//! - **Atomicity.** After any crash, the segment [`Segment::open`] gives is the state after
//!   every transaction whose commit returned, plus, possibly, the one whose commit was under
//!   way: that one whole or not at all (whole if its log `fdatasync`, the commit point,
//!   completed — or its log record reached the disk whole anyway). Never part of a
//!   transaction, never an aborted one, never a change to bytes no transaction wrote.
//! - **Failed commit.** A commit that fails (an I/O error) poisons the segment; whether the
//!   transaction is durable is decided by the next [`Segment::open`].
//! - **Recovery.** [`Segment::open`] does not fail on the files of a segment whose creation
//!   returned, whatever state a crash left them in (I/O errors aside), and a crash during it
//!   is recovered by the next open (replay is idempotent).
//! - **Assumptions.** `fsync`/`fdatasync` do what POSIX says and the storage honours them
//!   (a device that acknowledges writes its volatile cache then loses, and ignores flushes,
//!   breaks any contract); `fdatasync` makes a file's length durable; between barriers the
//!   kernel and the device may write pages and sectors in any order and tear a write at any
//!   sector; bytes already durable are not corrupted afterwards (the log has checksums, the
//!   segment has none); one process at a time opens a segment (nothing locks it), and
//!   nothing else writes, renames or removes its two files. A torn or corrupt log record is
//!   taken for valid only if CRC-32C collides (about 2^-32 per torn record).
//!
//! # Limits
//! One thread uses a segment at a time (the type is neither `Send` nor `Sync`). In a
//! transaction, write through [`Transaction::bytes_mut`] or [`Transaction::write`]; the
//! kernel's own writes into a protected page (e.g. `read(2)` straight into the segment) fail
//! with `EFAULT` rather than trap. In mprotect mode the process's SIGSEGV handler is ours while
//! a segment is open (faults elsewhere are passed on to the previous handler). An I/O error
//! during a commit poisons the segment: reopen it, and recovery tells whether the transaction
//! is durable.

mod diff;
mod error;
mod log;
#[cfg(test)]
mod powerloss;
mod storage;
#[cfg(test)]
mod tests;

pub use error::Error;
pub use platform::env::fsinfo::{Filesystem, filesystem_of};
pub use sys::wprotect::{Detection, Tracking};

use log::Range;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use storage::{Mode, Role, Storage};
use sys::wprotect::{self, WpError, WriteTracked};

/// Bytes of zeros a new log is preallocated with (so commits overwrite allocated blocks).
const LOG_PREALLOC: usize = 64 * 1024;

/// The result of a segment operation.
pub type Result<T> = std::result::Result<T, Error>;

/// How a segment is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// How the first write to a page is caught.
    pub detection: Detection,
    /// Whether reads are tracked too ([`Tracking::All`]: mprotect only).
    pub tracking: Tracking,
}

/// A step of [`Segment::begin_probed`] or [`Transaction::commit_probed`], reported to the probe
/// right after it is done (a benchmark stamps the time there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// begin: the previous dirty set is forgotten.
    Reset,
    /// begin: the segment is write-protected.
    Protected,
    /// commit: dirty pages compared with their pre-images.
    Diffed,
    /// commit: the records written to the log (not yet synced).
    LogWritten,
    /// commit: the log synced — the commit point.
    LogSynced,
    /// commit: the changed ranges written to the segment file.
    Applied,
    /// commit: the segment file synced.
    SegmentSynced,
    /// commit: the log trimmed; the commit is complete (write tracking).
    Trimmed,
    /// commit with read tracking: the pages touched made `PROT_NONE` again — its last step, after
    /// [`Stage::Trimmed`] or, for a read-only commit, after [`Stage::Diffed`].
    Reprotected,
    /// Right before one of the operation's own system calls (each one counted in its
    /// [`Crossings`]): a benchmark stamps here and at the [`Stage::Exit`] that follows to time
    /// the call in place. Between the steps above, in the order the calls are made.
    Enter(Call),
    /// Right after that system call returned (whatever it returned).
    Exit(Call),
}

/// A system call a begin or commit makes, as [`Stage::Enter`] and [`Stage::Exit`] name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `mprotect` of the segment (begin, mprotect detection) or of a run of pages touched
    /// (re-protection with read tracking).
    Mprotect,
    /// The `UFFDIO_WRITEPROTECT` ioctl of the segment (begin, userfaultfd detection; its repeats
    /// on `EAGAIN` inside one call).
    WriteProtect,
    /// A `pwrite` to the log or the segment file (one per attempt: a short write makes another).
    Pwrite,
    /// An `fdatasync` of the log or the segment file.
    Fdatasync,
}

impl Stage {
    /// Whether this is the edge of a system call ([`Stage::Enter`], [`Stage::Exit`]) rather than
    /// a step.
    pub fn is_crossing(self) -> bool {
        matches!(self, Stage::Enter(_) | Stage::Exit(_))
    }
}

/// Where the next commit stops, leaving the files as a crash there would (for crash tests).
/// The commit then returns [`Error::CrashInjected`] and the segment is poisoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// Write only the first `bytes` bytes of the log (all of it if there are fewer), then stop
    /// before the sync.
    LogWrite {
        /// Bytes written.
        bytes: usize,
    },
    /// Sync the log, apply only the first `ranges` changed ranges to the file, then stop.
    Apply {
        /// Ranges applied.
        ranges: usize,
    },
}

/// What recovery did when the segment was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Transactions replayed from the log.
    pub transactions: usize,
    /// Bytes they wrote.
    pub bytes: u64,
}

/// The kernel crossings of one operation (a begin or a commit): the system calls it made,
/// counted at each call site, and the protection faults taken while it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crossings {
    /// System calls made: each `mprotect`, `ioctl`, `pwrite`, `fdatasync` call (a `pwrite`
    /// repeated after a short write or `EINTR` counts again; a `UFFDIO_WRITEPROTECT` that
    /// `sys::uffd` repeats on `EAGAIN` counts once).
    pub syscalls: u32,
    /// Protection faults the segment's handler served during the operation (0 when all is
    /// well: begins and commits touch no protected page).
    pub faults: u32,
}

impl Crossings {
    /// Every crossing: system calls and faults.
    pub fn total(&self) -> u32 {
        self.syscalls + self.faults
    }
}

/// Counters since the segment was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commits that changed bytes (each wrote the log and synced twice).
    pub commits: u64,
    /// Commits that changed nothing (no I/O).
    pub read_only_commits: u64,
    /// Aborted transactions.
    pub aborts: u64,
    /// Bytes written to the log.
    pub log_bytes: u64,
    /// `fdatasync` calls made by commits.
    pub syncs: u64,
    /// Write-protection faults resolved (one per first write to a page per transaction).
    pub traps: u64,
    /// Read faults resolved in transactions (read tracking: one per page read before it is
    /// written, per transaction).
    pub read_traps: u64,
    /// Reads of a protected page outside a transaction, served untracked (read tracking).
    pub outside_reads: u64,
    /// `mprotect` calls made by commits and aborts to re-protect the pages touched (read
    /// tracking: one per run of adjacent pages).
    pub reprotects: u64,
    /// System calls made by begins, commits and aborts (the sum of their [`Crossings`]'
    /// `syscalls`; opening and recovery not included).
    pub syscalls: u64,
}

/// What one commit did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The transaction id written, or `None` for a commit that changed nothing.
    pub txid: Option<u64>,
    /// Pages written in the transaction.
    pub dirty_pages: usize,
    /// Redo records (changed ranges).
    pub records: usize,
    /// Changed bytes.
    pub bytes: u64,
    /// Bytes written to the log.
    pub log_bytes: usize,
    /// The commit's kernel crossings.
    pub crossings: Crossings,
}

impl Committed {
    /// Whether the transaction changed nothing (and so wrote nothing).
    pub fn read_only(&self) -> bool {
        self.txid.is_none()
    }
}

/// A recoverable segment: a file mapped privately, its redo log, and write detection.
pub struct Segment {
    path: PathBuf,
    log_path: PathBuf,
    file: File,
    log: File,
    /// Where every durable-state operation goes (the operating system; a recorder in tests).
    io: Storage,
    map: WriteTracked,
    next_txid: u64,
    stats: Stats,
    recovery: Recovery,
    poisoned: Option<String>,
    inject: Option<CrashPoint>,
    dirty: Vec<u32>,
    touched: Vec<u32>,
    ranges: Vec<Range>,
    buf: Vec<u8>,
    zeros: Vec<u8>,
    /// System calls made by begins, commits and aborts: each call site adds its calls.
    syscalls: u64,
}

impl Segment {
    /// Creates a new segment of `pages` zeroed pages at `path` (which must not exist) and its
    /// log (preallocated, holding no transaction), both synced with their directory, and opens
    /// it.
    pub fn create(path: impl AsRef<Path>, pages: usize, options: Options) -> Result<Segment> {
        Segment::create_in(Storage::Os, path.as_ref(), pages, options)
    }

    /// [`Segment::create`] through `io`.
    fn create_in(io: Storage, path: &Path, pages: usize, options: Options) -> Result<Segment> {
        let page = wprotect::page_size();
        let len = pages.checked_mul(page).filter(|&l| l > 0);
        let len = len.ok_or(Error::BadSize { path: path.into(), len: 0, page })? as u64;
        let err = |source| Error::Create { path: path.into(), source };
        let f = io.open(path, Role::Segment, Mode::CreateNew).map_err(err)?;
        io.set_len(&f, Role::Segment, len).and_then(|_| io.fsync(&f, Role::Segment)).map_err(err)?;
        let log_path = log_path_of(path);
        let log = io.open(&log_path, Role::Log, Mode::CreateTruncate).and_then(|l| {
            io.pwrite_all(&l, Role::Log, &vec![0; LOG_PREALLOC], 0, &mut 0, &mut |_| {})?;
            io.fsync(&l, Role::Log)
        });
        log.map_err(|source| Error::Create { path: log_path, source })?;
        io.sync_dir(path).map_err(err)?;
        Segment::open_in(io, path, options)
    }

    /// Opens the segment at `path`: replays its log (creating one if there is none), then maps
    /// it.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Segment> {
        Segment::open_in(Storage::Os, path.as_ref(), options)
    }

    /// [`Segment::open`] through `io`.
    fn open_in(io: Storage, path: &Path, options: Options) -> Result<Segment> {
        let path = path.to_path_buf();
        let open_err = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Open { path: p, source }
        };
        let file = io.open(&path, Role::Segment, Mode::Existing).map_err(open_err(&path))?;
        let len = file.metadata().map_err(open_err(&path))?.len();
        let page = wprotect::page_size();
        if len == 0 || !len.is_multiple_of(page as u64) {
            return Err(Error::BadSize { path, len, page });
        }
        if options.detection == Detection::Uffd && options.tracking == Tracking::All {
            let reason = wprotect::UFFD_READS_REASON.into();
            return Err(Error::Unavailable { path, detection: options.detection, reason });
        }
        let log_path = log_path_of(&path);
        let log = open_log(&io, &log_path)?;
        let (recovery, last_txid) = recover(&io, &file, &path, &log, &log_path, len)?;
        let map = map_segment(&file, &path, len as usize, options)?;
        Ok(Segment {
            path,
            log_path,
            file,
            log,
            io,
            map,
            next_txid: first_txid(last_txid),
            stats: Stats::default(),
            recovery,
            poisoned: None,
            inject: None,
            dirty: Vec::new(),
            touched: Vec::new(),
            ranges: Vec::new(),
            buf: Vec::new(),
            zeros: Vec::new(),
            syscalls: 0,
        })
    }

    /// Starts a transaction: forgets the last dirty set and write-protects the segment (with
    /// read tracking: makes it `PROT_NONE`).
    pub fn begin(&mut self) -> Result<Transaction<'_>> {
        self.begin_probed(|_| {})
    }

    /// [`Segment::begin`], calling `probe` after [`Stage::Reset`] and [`Stage::Protected`], and
    /// around its one system call ([`Stage::Enter`], [`Stage::Exit`]) between them.
    pub fn begin_probed(&mut self, mut probe: impl FnMut(Stage)) -> Result<Transaction<'_>> {
        if let Some(reason) = &self.poisoned {
            return Err(Error::Poisoned { path: self.path.clone(), reason: reason.clone() });
        }
        let at = self.mark();
        self.map.forget_dirty();
        probe(Stage::Reset);
        self.syscalls += 1; // mprotect, or the UFFDIO_WRITEPROTECT ioctl
        let call = match self.map.detection() {
            Detection::Mprotect => Call::Mprotect,
            Detection::Uffd => Call::WriteProtect,
        };
        let protected = self.map.write_protect_probed(|edge| probe(crossing(edge, call)));
        protected.map_err(|source| Error::Protect { path: self.path.clone(), source })?;
        probe(Stage::Protected);
        let begin = self.since(at);
        Ok(Transaction { seg: self, open: true, begin })
    }

    /// Where the crossing counters stand: (system calls, faults served).
    fn mark(&self) -> (u64, u64) {
        (self.syscalls, self.faults())
    }

    /// The crossings since `mark`.
    fn since(&self, (syscalls, faults): (u64, u64)) -> Crossings {
        Crossings { syscalls: (self.syscalls - syscalls) as u32, faults: (self.faults() - faults) as u32 }
    }

    /// Protection faults the handler has served (write, read and outside-transaction reads).
    fn faults(&self) -> u64 {
        self.map.traps() + self.map.read_traps() + self.map.outside_reads()
    }

    /// Makes the next commit stop at `point`, as a crash there would leave the files (for crash
    /// tests; see [`CrashPoint`]).
    pub fn inject_crash(&mut self, point: CrashPoint) {
        self.inject = Some(point);
    }

    /// The committed contents (outside a transaction). With read tracking the pages are
    /// `PROT_NONE` here: each first read faults and is served (see the module doc), and the
    /// kernel cannot read them (`EFAULT`).
    pub fn bytes(&self) -> &[u8] {
        self.map.data()
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the segment is empty (never: it has at least one page).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Page size in bytes (the unit of write detection).
    pub fn page_size(&self) -> usize {
        self.map.page_size()
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The write-detection mode.
    pub fn detection(&self) -> Detection {
        self.map.detection()
    }

    /// What is tracked.
    pub fn tracking(&self) -> Tracking {
        self.map.tracking()
    }

    /// What recovery did at open.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// Counters since open.
    pub fn stats(&self) -> Stats {
        Stats {
            traps: self.map.traps(),
            read_traps: self.map.read_traps(),
            outside_reads: self.map.outside_reads(),
            syscalls: self.syscalls,
            ..self.stats
        }
    }

    /// Complete transactions the log holds now — what a recovery would replay. 0 after every
    /// completed commit. Reads the log file; for checks and tests.
    pub fn logged_transactions(&self) -> Result<usize> {
        let bytes =
            std::fs::read(&self.log_path).map_err(|source| Error::Open { path: self.log_path.clone(), source })?;
        Ok(log::parse(&bytes, self.len() as u64).txns.len())
    }

    fn abort_inner(&mut self) {
        self.map.disarm();
        self.map.dirty_pages(&mut self.dirty);
        for &p in &self.dirty {
            self.map.restore(p as usize);
        }
        self.stats.aborts += 1;
        if let Err(e) = self.reprotect(&mut |_| {}) {
            self.poisoned = Some(format!("re-protecting after abort: {e}"));
        }
    }

    /// With read tracking, makes the pages touched `PROT_NONE` again; counts the calls.
    fn reprotect(&mut self, probe: &mut impl FnMut(Stage)) -> Result<()> {
        let calls = self.map.reprotect_touched_probed(&mut self.touched, |edge| probe(crossing(edge, Call::Mprotect)));
        // One mprotect per run of pages (on an error, at least the one that failed).
        self.syscalls += calls.as_ref().map_or(1, |&c| c as u64);
        let calls = calls.map_err(|source| {
            self.poisoned = Some(format!("re-protect: {source}"));
            Error::Protect { path: self.path.clone(), source }
        })?;
        self.stats.reprotects += calls as u64;
        Ok(())
    }

    /// The last step of a commit with read tracking ([`Stage::Reprotected`]).
    fn finish_commit(&mut self, probe: &mut impl FnMut(Stage)) -> Result<()> {
        if self.map.tracking() == Tracking::All {
            self.reprotect(probe)?;
            probe(Stage::Reprotected);
        }
        Ok(())
    }

    fn commit_inner(&mut self, probe: &mut impl FnMut(Stage)) -> Result<Committed> {
        let at = self.mark();
        let mut done = self.commit_steps(probe)?;
        done.crossings = self.since(at);
        Ok(done)
    }

    fn commit_steps(&mut self, probe: &mut impl FnMut(Stage)) -> Result<Committed> {
        self.map.disarm();
        if self.map.broken() {
            self.poisoned = Some("write detection failed".into());
            return Err(Error::Detection { path: self.path.clone() });
        }
        self.diff();
        probe(Stage::Diffed);
        let mut done = Committed {
            dirty_pages: self.dirty.len(),
            records: self.ranges.len(),
            bytes: self.ranges.iter().map(|r| u64::from(r.len)).sum(),
            ..Committed::default()
        };
        if self.ranges.is_empty() {
            self.stats.read_only_commits += 1;
            self.finish_commit(probe)?;
            return Ok(done);
        }
        let txid = self.next_txid;
        self.next_txid += 1;
        log::encode(txid, &self.ranges, self.map.data(), &mut self.buf);
        (done.txid, done.log_bytes) = (Some(txid), self.buf.len());
        self.make_durable(probe)?;
        self.stats.commits += 1;
        self.stats.log_bytes += self.buf.len() as u64;
        self.stats.syncs += 2;
        self.finish_commit(probe)?;
        Ok(done)
    }

    /// The I/O of a commit whose records are in `self.buf`: log write and sync (the commit
    /// point), apply and sync, trim.
    fn make_durable(&mut self, probe: &mut impl FnMut(Stage)) -> Result<()> {
        let inject = self.inject.take();
        self.write_log(inject, probe)?;
        probe(Stage::LogWritten);
        self.syscalls += 1;
        probe(Stage::Enter(Call::Fdatasync));
        let synced = self.io.fdatasync(&self.log, Role::Log);
        probe(Stage::Exit(Call::Fdatasync));
        synced.map_err(|e| self.fail("log sync", true, e))?;
        probe(Stage::LogSynced);
        self.apply(inject, probe)?;
        probe(Stage::Applied);
        self.syscalls += 1;
        probe(Stage::Enter(Call::Fdatasync));
        let synced = self.io.fdatasync(&self.file, Role::Segment);
        probe(Stage::Exit(Call::Fdatasync));
        synced.map_err(|e| self.fail("segment sync", false, e))?;
        probe(Stage::SegmentSynced);
        self.zeros.resize(self.zeros.len().max(self.buf.len()), 0);
        let trim =
            self.io.pwrite_all(&self.log, Role::Log, &self.zeros[..self.buf.len()], 0, &mut self.syscalls, probe);
        trim.map_err(|e| self.fail("log trim", true, e))?;
        probe(Stage::Trimmed);
        Ok(())
    }

    /// Fills `self.ranges` with the changed bytes of the dirty pages, in segment order.
    fn diff(&mut self) {
        self.map.dirty_pages(&mut self.dirty);
        self.dirty.sort_unstable();
        self.ranges.clear();
        let ps = self.map.page_size();
        for &p in &self.dirty {
            let off = p as usize * ps;
            diff::page_ranges(
                off as u64,
                &self.map.data()[off..off + ps],
                self.map.preimage(p as usize),
                &mut self.ranges,
            );
        }
    }

    fn write_log(&mut self, inject: Option<CrashPoint>, probe: &mut impl FnMut(Stage)) -> Result<()> {
        let n = match inject {
            Some(CrashPoint::LogWrite { bytes }) => bytes.min(self.buf.len()),
            _ => self.buf.len(),
        };
        let written = self.io.pwrite_all(&self.log, Role::Log, &self.buf[..n], 0, &mut self.syscalls, probe);
        written.map_err(|e| self.fail("log write", true, e))?;
        match inject {
            Some(point @ CrashPoint::LogWrite { .. }) => Err(self.injected(point)),
            _ => Ok(()),
        }
    }

    fn apply(&mut self, inject: Option<CrashPoint>, probe: &mut impl FnMut(Stage)) -> Result<()> {
        let limit = match inject {
            Some(CrashPoint::Apply { ranges }) => ranges,
            _ => usize::MAX,
        };
        for r in self.ranges.iter().take(limit) {
            let (at, len) = (r.offset as usize, r.len as usize);
            let bytes = &self.map.data()[at..at + len];
            if let Err(e) = self.io.pwrite_all(&self.file, Role::Segment, bytes, r.offset, &mut self.syscalls, probe) {
                return Err(self.fail("apply", false, e));
            }
        }
        match inject {
            Some(point @ CrashPoint::Apply { .. }) => Err(self.injected(point)),
            _ => Ok(()),
        }
    }

    /// Poisons the segment and describes a failed commit step.
    fn fail(&mut self, step: &'static str, on_log: bool, source: std::io::Error) -> Error {
        self.poisoned = Some(format!("{step}: {source}"));
        let path = if on_log { self.log_path.clone() } else { self.path.clone() };
        Error::Commit { step, path, source }
    }

    fn injected(&mut self, point: CrashPoint) -> Error {
        self.poisoned = Some(format!("crash injected at {point:?}"));
        Error::CrashInjected { point, log_bytes: self.buf.len() }
    }
}

/// An open transaction on a [`Segment`]. Dropping it without committing aborts it.
pub struct Transaction<'a> {
    seg: &'a mut Segment,
    open: bool,
    begin: Crossings,
}

impl Transaction<'_> {
    /// The kernel crossings of the begin that opened this transaction.
    pub fn begin_crossings(&self) -> Crossings {
        self.begin
    }

    /// The segment's current contents, with this transaction's writes.
    pub fn bytes(&self) -> &[u8] {
        self.seg.map.data()
    }

    /// The segment's contents, for writing; the first write to each page traps and saves its
    /// pre-image.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.seg.map.data_mut()
    }

    /// Copies `data` into the segment at `offset`.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        let size = self.seg.len();
        let end = offset.checked_add(data.len()).filter(|&e| e <= size);
        let end = end.ok_or(Error::OutOfBounds { offset, len: data.len(), size })?;
        self.bytes_mut()[offset..end].copy_from_slice(data);
        Ok(())
    }

    /// Pages written so far in this transaction.
    pub fn dirty_pages(&self) -> usize {
        self.seg.map.dirty_count()
    }

    /// Makes the transaction's changes durable; see the module doc for the steps.
    pub fn commit(self) -> Result<Committed> {
        self.commit_probed(|_| {})
    }

    /// [`Transaction::commit`], calling `probe` after each [`Stage`] from [`Stage::Diffed`] on
    /// (a read-only commit stops after `Diffed`; with read tracking, both end with
    /// [`Stage::Reprotected`]), and right before and after each of its system calls
    /// ([`Stage::Enter`], [`Stage::Exit`]: as many pairs as its [`Crossings`] count).
    pub fn commit_probed(mut self, mut probe: impl FnMut(Stage)) -> Result<Committed> {
        self.open = false;
        self.seg.commit_inner(&mut probe)
    }

    /// Undoes the transaction's writes (copies the pre-images back).
    pub fn abort(mut self) {
        self.open = false;
        self.seg.abort_inner();
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if self.open {
            self.seg.abort_inner();
        }
    }
}

/// The probe's event for one edge of the system call `call`.
#[inline(always)]
fn crossing(edge: wprotect::Edge, call: Call) -> Stage {
    match edge {
        wprotect::Edge::Before => Stage::Enter(call),
        wprotect::Edge::After => Stage::Exit(call),
    }
}

/// `<segment>.log`.
fn log_path_of(path: &Path) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(".log");
    PathBuf::from(s)
}

/// Opens (or creates, then syncs the directory for) the log.
fn open_log(io: &Storage, log_path: &Path) -> Result<File> {
    let err = |source| Error::Open { path: log_path.into(), source };
    let existed = log_path.exists();
    let log = io.open(log_path, Role::Log, Mode::CreateKeep).map_err(err)?;
    if !existed {
        io.sync_dir(log_path).map_err(err)?;
    }
    Ok(log)
}

/// Replays the complete transaction at the log's head (if any) into the segment file and
/// syncs it, then zeroes the log (preallocating it, if short) and syncs it. Returns what it did
/// and the id of the transaction replayed.
fn recover(
    io: &Storage,
    file: &File,
    path: &Path,
    log: &File,
    log_path: &Path,
    len: u64,
) -> Result<(Recovery, Option<u64>)> {
    let bytes = std::fs::read(log_path).map_err(|source| Error::Open { path: log_path.into(), source })?;
    let parsed = log::parse(&bytes, len);
    let mut rec = Recovery::default();
    let seg_err = |source| Error::Recover { path: path.into(), source };
    for txn in &parsed.txns {
        for r in &txn.records {
            io.pwrite_all(file, Role::Segment, &bytes[r.at..r.at + r.len], r.offset, &mut 0, &mut |_| {})
                .map_err(seg_err)?;
            rec.bytes += r.len as u64;
        }
        rec.transactions += 1;
    }
    if !parsed.txns.is_empty() {
        io.fdatasync(file, Role::Segment).map_err(seg_err)?;
    }
    if bytes.len() < LOG_PREALLOC || bytes.iter().any(|&b| b != 0) {
        io.pwrite_all(log, Role::Log, &vec![0; bytes.len().max(LOG_PREALLOC)], 0, &mut 0, &mut |_| {})
            .and_then(|_| io.fsync(log, Role::Log))
            .map_err(|source| Error::Recover { path: log_path.into(), source })?;
    }
    Ok((rec, parsed.txns.last().map(|t| t.txid)))
}

fn map_segment(file: &File, path: &Path, len: usize, options: Options) -> Result<WriteTracked> {
    let detection = options.detection;
    WriteTracked::new(file.as_fd(), len, detection, options.tracking).map_err(|e| match e {
        WpError::Unavailable(reason) => {
            let fs = path.parent().map(|d| filesystem_of(if d.as_os_str().is_empty() { Path::new(".") } else { d }));
            let on = fs.map(|f| format!("; the segment file is on {}", f.kind)).unwrap_or_default();
            Error::Unavailable { path: path.into(), detection, reason: format!("{reason}{on}") }
        }
        source => Error::Map { path: path.into(), detection, source },
    })
}

/// The first transaction id of this session: above the wall clock in ns and above every id
/// replayed, so ids never repeat across sessions (recovery does not rely on their order: it
/// reads only the head of the log).
fn first_txid(last_replayed: Option<u64>) -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    now.max(last_replayed.map_or(0, |t| t.saturating_add(1))).max(1)
}
