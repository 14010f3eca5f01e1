//! File-backed page faults: `fault.file.read`, `fault.file.write`, with parameters `map`
//! (`shared`: `MAP_SHARED`, `private`: `MAP_PRIVATE`) and `cache` (`warm`, `cold`).
//!
//! Seed rows: Rhino on SPIN "page fault read/write, warm/cold".
//!
//! The file ([`FILE_PAGES`] pages of non-zero data, written and `fsync`ed) lives in the run's
//! private temporary directory and is removed afterwards. Each page is mapped as a VMA of its
//! own (`Region::file_pages`): read faults on a file mapping otherwise map up to 16 cached
//! neighbours at once ("fault-around", `fault_around_bytes`, 64 KiB by default — `MADV_RANDOM`
//! does not turn it off on current kernels), and a write fault may map a whole large
//! page-cache folio; both stop at a VMA's edge. `MADV_RANDOM` is still set, to stop readahead
//! on cold faults. The fault counters confirm one fault per touch either way.
//!
//! - **warm**: the file's pages are in the page cache; a touch maps a cached page (read or
//!   shared write: `page_mkwrite` marks it dirty) or copies it (private write).
//! - **cold**: before every batch the file's pages are out of the page cache: the mapping is
//!   dropped (`MADV_DONTNEED`), dirty pages are written back (`fdatasync`), the cache is
//!   emptied (`posix_fadvise(POSIX_FADV_DONTNEED)`), and `mincore` confirms that none of the
//!   batch's pages is resident. A touch then reads one page from the device (a major fault).
//!   Where eviction cannot be confirmed (tmpfs, ramfs: the page cache is the file) the row is
//!   skipped with the reason. Cold rows record the filesystem and device in `params`.
//!
//! **Timing model** and **validation**: as in `fault.rs`, with one extra check on cold rows:
//! every timed page was confirmed absent from the page cache just before its batch.
//! posix_fadvise(2), mincore(2), proc(5) (`/proc/self/mountinfo`), statfs(2).
//!
//! The test file, its eviction and the tmpfs verdict are shared with `fault.user.sigsegv`
//! `cache=cold` (`fault_user.rs`), whose handler reads an evicted page of such a file.

use super::{Arena, Expect, FILE_PAGES, Timed, failed, fault_check, sample_arena, time_touches};
use crate::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
use platform::timer::Timer;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use sys::fault::Region;

/// What a file-fault row measures, from its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Setup {
    shared: bool,
    cold: bool,
    write: bool,
}

fn setup(params: &Params, write: bool) -> Result<Setup, NotMeasured> {
    let get = |k: &str| params.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let shared = match get("map") {
        "shared" => true,
        "private" => false,
        other => return Err(NotMeasured::Failed(format!("unknown map parameter '{other}'"))),
    };
    let cold = match get("cache") {
        "cold" => true,
        "warm" => false,
        other => return Err(NotMeasured::Failed(format!("unknown cache parameter '{other}'"))),
    };
    Ok(Setup { shared, cold, write })
}

fn variants() -> Vec<Params> {
    let mut out = Vec::new();
    for map in ["shared", "private"] {
        for cache in ["warm", "cold"] {
            let mut p = Params::new();
            p.insert("map".into(), map.into());
            p.insert("cache".into(), cache.into());
            out.push(p);
        }
    }
    out
}

/// The test file, removed on drop.
pub(super) struct ScratchFile {
    pub(super) file: File,
    path: PathBuf,
}

impl ScratchFile {
    /// `pages` pages of non-zero data (so no page is a hole; every byte of page `i` is
    /// [`ScratchFile::byte_of`] `i`), written and synced, named after `tag`.
    pub(super) fn create(dir: &Path, tag: &str, pages: usize, page: usize) -> std::io::Result<ScratchFile> {
        let path = dir.join(format!("{tag}-{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
        let out = ScratchFile { file: file.try_clone()?, path };
        let mut data = vec![0u8; page];
        for i in 0..pages {
            data.fill(ScratchFile::byte_of(i));
            file.write_all(&data)?;
        }
        file.sync_all()?;
        Ok(out)
    }

    /// The byte every position of page `i` holds.
    pub(super) fn byte_of(i: usize) -> u8 {
        (i % 251) as u8 + 1
    }

    /// Turns readahead off for reads through this descriptor (`POSIX_FADV_RANDOM`): a read
    /// of one page brings only that page into the cache.
    pub(super) fn no_readahead(&self) -> std::io::Result<()> {
        posix_fadvise(self.file.as_fd(), 0, 0, PosixFadviseAdvice::POSIX_FADV_RANDOM).map_err(std::io::Error::from)
    }

    /// Drops the file's clean pages from the page cache (`POSIX_FADV_DONTNEED`), after
    /// writing back dirty ones if `dirty`.
    pub(super) fn evict(&self, dirty: bool) -> std::io::Result<()> {
        if dirty {
            self.file.sync_data()?;
        }
        posix_fadvise(self.file.as_fd(), 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).map_err(std::io::Error::from)
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The mapped file, re-armed by unmapping its pages (and, when cold, evicting them).
struct FileArena {
    region: Region,
    file: ScratchFile,
    setup: Setup,
    /// Pages that were still resident when a cold batch was about to touch them.
    unconfirmed: u64,
    /// Pages confirmed absent before a cold batch.
    confirmed: u64,
}

impl FileArena {
    fn evict(&self, used: usize) -> Result<(), String> {
        self.region.discard(0, used).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
        let dirty = self.setup.write && self.setup.shared;
        self.file.evict(dirty).map_err(|e| format!("evicting the file from the page cache: {e}"))
    }
}

impl Arena for FileArena {
    fn pages(&self) -> usize {
        self.region.pages()
    }
    fn rearm(&mut self, used: usize) -> Result<(), String> {
        if self.setup.cold {
            self.evict(used)
        } else {
            self.region.discard(0, used).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))
        }
    }
    fn prepare(&mut self, first: usize, count: usize) -> Result<(), String> {
        if !self.setup.cold {
            return Ok(());
        }
        let mincore = |r: &Region| r.resident(first, count).map_err(|e| format!("mincore: {e}"));
        let mut resident = mincore(&self.region)?;
        if resident > 0 {
            self.evict(first)?;
            resident = mincore(&self.region)?;
        }
        self.unconfirmed += resident as u64;
        self.confirmed += (count - resident) as u64;
        Ok(())
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_touches(&self.region, timer, first, count, self.setup.write)
    }
}

/// Whether cold faults can be measured: the probe eviction must leave no page resident.
pub(super) fn cold_verdict(fs: &str, resident: usize, total: usize) -> Result<(), String> {
    if resident == 0 {
        return Ok(());
    }
    let memory_only = matches!(fs, "tmpfs" | "ramfs" | "hugetlbfs");
    let hint = if memory_only {
        format!(
            ": {fs} keeps files only in memory; point TMPDIR at a directory on a disk-backed filesystem to measure cold faults"
        )
    } else {
        String::new()
    };
    Err(format!(
        "cannot evict the test file from the page cache on {fs} ({resident} of {total} pages still resident after \
         fsync + POSIX_FADV_DONTNEED, seen with mincore){hint}"
    ))
}

/// Where the test file lives: filesystem type, device, and a longer description.
pub(super) struct Storage {
    pub(super) fs: String,
    pub(super) device: String,
    pub(super) detail: String,
}

/// Filesystem and device of `dir` ([`platform::env::fsinfo`]).
pub(super) fn describe_storage(dir: &Path) -> Storage {
    let f = platform::env::fsinfo::filesystem_of(dir);
    let device = f.device.clone().unwrap_or_else(|| "unknown".into());
    let detail = match &f.mount_point {
        Some(point) => format!("file on {}, {device} (mounted on {point})", f.kind),
        None => format!("file on {} (not found in /proc/self/mountinfo)", f.kind),
    };
    Storage { fs: f.kind, device, detail }
}

fn run_file(ctx: &Ctx, params: &Params, write: bool) -> Result<Measured, NotMeasured> {
    let setup = setup(params, write)?;
    let page = sys::fault::page_size();
    let file =
        ScratchFile::create(ctx.scratch, "fault-file", FILE_PAGES, page).map_err(failed("writing the test file"))?;
    let region =
        Region::file_pages(file.file.as_fd(), FILE_PAGES, setup.shared).map_err(failed("mmap of the test file"))?;
    let storage = describe_storage(ctx.scratch);
    let arena = FileArena { region, file, setup, unconfirmed: 0, confirmed: 0 };
    let mut extra = Vec::new();
    if setup.cold {
        arena.evict(0).map_err(NotMeasured::Failed)?;
        let resident = arena.region.resident(0, FILE_PAGES).map_err(failed("mincore"))?;
        cold_verdict(&storage.fs, resident, FILE_PAGES).map_err(NotMeasured::Skipped)?;
    } else {
        let resident = arena.region.resident(0, FILE_PAGES).map_err(failed("mincore"))?;
        extra.push(Check::new(
            "the file is in the page cache before measuring",
            format!("{FILE_PAGES} pages resident"),
            format!("{resident} pages resident"),
            resident == FILE_PAGES,
        ));
    }
    let (samples, driver) = sample_arena(ctx, arena)?;
    let expect = if setup.cold { Expect::Major } else { Expect::Minor };
    let mut checks = vec![fault_check(expect, driver.touched, driver.faults)];
    let a = &driver.arena;
    if setup.cold {
        checks.push(Check::new(
            "every touched page was absent from the page cache (mincore)",
            format!("{} absent", a.confirmed + a.unconfirmed),
            format!("{} absent, {} still resident", a.confirmed, a.unconfirmed),
            a.unconfirmed == 0,
        ));
    }
    checks.extend(extra);
    let mut m = Measured::new(samples, checks).note(notes(setup)).note(storage.detail);
    if setup.cold {
        m.params.insert("fs".into(), storage.fs.into());
        m.params.insert("device".into(), storage.device.into());
    }
    Ok(m)
}

fn notes(s: Setup) -> String {
    let map = if s.shared { "MAP_SHARED" } else { "MAP_PRIVATE" };
    let what = match (s.write, s.shared) {
        (false, _) => "read",
        (true, true) => "write (page_mkwrite: the cached page is marked dirty)",
        (true, false) => "write (the page is copied into a private anonymous page)",
    };
    let cache = if s.cold {
        "cold: each page is read from the device (evicted with fdatasync + POSIX_FADV_DONTNEED before each batch, \
         checked with mincore)"
    } else {
        "warm: the file is in the page cache"
    };
    format!(
        "first {what} of each page of a {FILE_PAGES}-page file, {map}, {cache}; each page is its own VMA so fault-around \
         (up to 16 pages per read fault) cannot map neighbours, MADV_RANDOM (no readahead), MADV_NOHUGEPAGE; mapping \
         re-armed with MADV_DONTNEED outside the clock"
    )
}

/// `fault.file.read`: first read of a page of a mapped file.
pub struct FileRead;

impl Benchmark for FileRead {
    fn id(&self) -> &'static str {
        "fault.file.read"
    }
    fn about(&self) -> &'static str {
        "page fault: first read of a mapped file's page (warm: in the page cache; cold: from the device)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_file(ctx, params, false)
    }
}

/// `fault.file.write`: first write to a page of a mapped file.
pub struct FileWrite;

impl Benchmark for FileWrite {
    fn id(&self) -> &'static str {
        "fault.file.write"
    }
    fn about(&self) -> &'static str {
        "page fault: first write to a mapped file's page (warm: in the page cache; cold: from the device)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_file(ctx, params, true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{failures, run_validated};
    use super::*;

    #[test]
    fn cold_is_refused_when_eviction_fails() {
        assert_eq!(cold_verdict("ext4", 0, 10), Ok(()));
        let tmpfs = cold_verdict("tmpfs", 10, 10).unwrap_err();
        assert!(tmpfs.contains("10 of 10") && tmpfs.contains("TMPDIR"), "{tmpfs}");
        let other = cold_verdict("nfs", 3, 10).unwrap_err();
        assert!(other.contains("3 of 10") && !other.contains("TMPDIR"), "{other}");
    }

    #[test]
    fn params_are_checked() {
        assert_eq!(variants().len(), 4);
        assert_eq!(setup(&variants()[3], true), Ok(Setup { shared: false, cold: true, write: true }));
        assert!(setup(&Params::new(), false).is_err());
    }

    #[test]
    fn file_faults_are_validated_by_the_counters() {
        for bench in [&FileRead as &dyn Benchmark, &FileWrite] {
            for p in variants() {
                // A warm page can be reclaimed by the machine between batches (memory pressure,
                // proactive reclaim such as DAMON), which the check rightly counts as a major
                // fault: such a run is measured once more before the test judges it.
                let attempt = || run_validated(bench, &p);
                let result = match attempt() {
                    Ok(m) if failures(&m).iter().any(|f| f.contains("major")) => attempt(),
                    other => other,
                };
                match result {
                    Ok(m) => {
                        assert!(m.samples.per_op_ns.len() >= 5, "{} {p:?}", bench.id());
                        assert_eq!(failures(&m), Vec::<String>::new(), "{} {p:?}", bench.id());
                    }
                    // Cold rows are skipped where the temporary directory is memory-backed.
                    Err(NotMeasured::Skipped(why)) => assert!(why.contains("evict"), "{why}"),
                    Err(e) => panic!("{} {p:?}: {e:?}", bench.id()),
                }
            }
        }
    }
}
