//! Memory mappings and a timing SIGSEGV catcher for the page-fault benchmarks (`fault.*`)
//! and the memory-per-object benchmarks (`space.*`).
//!
//! - [`Region`]: an `mmap`ed range owned by osprim, never seen by Rust as a reference: it is
//!   read and written only through volatile accesses ([`Region::read`], [`Region::write`]), so
//!   the kernel (or a fault handler) may change what backs it at any time. Anonymous regions
//!   have huge pages disabled (`MADV_NOHUGEPAGE`); file regions map each page in its own VMA
//!   (see [`Region::file_pages`]). Unmapped on drop.
//! - [`SegvCatcher`]: an owner registered with the SIGSEGV dispatcher ([`super::segv`]) that
//!   resolves a fault in one region by `mprotect`ing the page; the dispatcher reads the clock
//!   at handler entry, the catcher just before it returns (`fault.user.sigsegv`). A filling
//!   catcher ([`SegvCatcher::install_filling`]) also reads the page's data from a file into
//!   place (`pread`) before giving it its final protection (`fault.user.sigsegv` `cache=cold`).
//!
//! Forked children are [`super::process::Child`]. See mmap(2), madvise(2), mincore(2),
//! mprotect(2).
//!
//! # Safety
//! - A [`Region`]'s memory belongs to it alone: its address range came from `mmap` and is
//!   unmapped once, on drop. Every access is bounds-checked against that range and volatile;
//!   no `&`/`&mut` to it is ever formed, so a page that changes underneath (discarded,
//!   protected, filled by userfaultfd) breaks no Rust aliasing rule.
//! - The catcher's part of the SIGSEGV handler is async-signal-safe: it reads and writes
//!   atomics (statics, which never go away), reads the clock, calls `mprotect` on a page of
//!   its region and, when filling, `pread` from the file into that page (both plain system
//!   calls; `errno` is saved and restored around them), nothing else. The catcher borrows the
//!   region and the file descriptor, so neither can go away before the catcher's registration
//!   is dropped. One catcher exists at a time (a process-wide lock).
#![allow(unsafe_code)]

use super::segv::{self, EntryClock, Fault, Registration, SegvError, SegvOwner};
use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The page size of this system (`sysconf(_SC_PAGESIZE)`; 4 KiB on x86_64).
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the running system; no memory is passed.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(v).ok().filter(|&p| p.is_power_of_two()).unwrap_or(4096)
}

/// Gives the C allocator's free memory back to the kernel (`malloc_trim(0)`: free chunks'
/// whole pages are discarded), so that the next allocations are fresh pages whose first write
/// shows in the resident set (`space.interface` counts its table entries so).
#[cfg(target_env = "gnu")]
pub fn trim_heap() {
    // SAFETY: malloc_trim takes an integer and only releases memory no allocation holds.
    unsafe { libc::malloc_trim(0) };
}

/// Elsewhere there is no `malloc_trim`: nothing is given back.
#[cfg(not(target_env = "gnu"))]
pub fn trim_heap() {}

/// How a page may be accessed (`PROT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prot {
    /// `PROT_NONE`: every access faults.
    None,
    /// `PROT_READ`.
    Read,
    /// `PROT_READ | PROT_WRITE`.
    ReadWrite,
}

impl Prot {
    fn bits(self) -> libc::c_int {
        match self {
            Prot::None => libc::PROT_NONE,
            Prot::Read => libc::PROT_READ,
            Prot::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
        }
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// A [`Region`] between two guard pages ([`Region::anon_isolated`]); all three unmapped on
/// drop, in one `munmap`.
#[derive(Debug)]
pub struct Isolated {
    middle: std::mem::ManuallyDrop<Region>,
    _whole: Region,
}

impl Isolated {
    /// The region between the guards.
    pub fn region(&self) -> &Region {
        &self.middle
    }
}

/// An `mmap`ed range of whole pages, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    addr: usize,
    pages: usize,
    page: usize,
}

impl Region {
    /// `pages` fresh anonymous private pages, readable and writable, not yet backed by memory,
    /// with transparent huge pages disabled (`MADV_NOHUGEPAGE`) so one touch is one base page.
    pub fn anon(pages: usize) -> io::Result<Region> {
        let region = Region::map_anon(pages, libc::PROT_READ | libc::PROT_WRITE)?;
        region.no_huge_pages()?;
        Ok(region)
    }

    /// As [`Region::anon`], between two guard pages whose protection (`PROT_READ`: they hold
    /// nothing but the zero page, and a write faults) never equals the region's, whatever the
    /// region is given (`PROT_NONE` or read-write): so the region is a VMA of its own and never
    /// merges with a neighbour (a protection domain's region, opened and closed by `mprotect`
    /// on every call, is then not split and merged again per call). Two system calls: the
    /// mapping of all three parts read-only, and the region's read-write protection (which
    /// splits it off); one `munmap` of all three on drop. Transparent huge pages are left
    /// alone: a region under 2 MiB cannot get one.
    pub fn anon_isolated(pages: usize) -> io::Result<Isolated> {
        let whole = Region::map_anon(pages.checked_add(2).ok_or(io::ErrorKind::InvalidInput)?, libc::PROT_READ)?;
        let middle = Region { addr: whole.addr + whole.page, pages, page: whole.page };
        // The middle is unmapped by `whole` only, never by its own drop.
        let isolated = Isolated { middle: std::mem::ManuallyDrop::new(middle), _whole: whole };
        isolated.middle.protect(0, pages, Prot::ReadWrite)?;
        if isolated.middle.len() >= 2 << 20 {
            isolated.middle.no_huge_pages()?;
        }
        Ok(isolated)
    }

    /// Maps pages `0..pages` of `file` shared and read-only in one mapping that is never
    /// accessed: a view for [`Region::page_resident`] (`mincore` of a file mapping tells
    /// whether the file's page is in the page cache).
    pub fn file_view(file: BorrowedFd<'_>, pages: usize) -> io::Result<Region> {
        let page = page_size();
        let len = pages.checked_mul(page).filter(|&l| l > 0).ok_or(io::ErrorKind::InvalidInput)?;
        // SAFETY: a fresh shared read-only mapping of our file at an address the kernel picks;
        // no existing memory is affected.
        let p =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region { addr: p as usize, pages, page })
    }

    /// Maps pages `0..pages` of `file`, each page in a VMA of its own: virtual page `i` shows
    /// file page `pages − 1 − i`. Neighbouring VMAs then never merge (their file offsets are
    /// not contiguous), and the kernel's per-fault work stays inside one VMA: read
    /// fault-around (`fault_around_bytes`, 64 KiB by default) and the mapping of a whole large
    /// page-cache folio on one fault both stop at a VMA's edge, so each touch faults in exactly
    /// one page. The region also gets `MADV_RANDOM` (no readahead on a cold fault) and
    /// `MADV_NOHUGEPAGE`. `shared` picks `MAP_SHARED` over `MAP_PRIVATE`.
    pub fn file_pages(file: BorrowedFd<'_>, pages: usize, shared: bool) -> io::Result<Region> {
        let region = Region::map_anon(pages, libc::PROT_NONE)?;
        let flags = libc::MAP_FIXED | if shared { libc::MAP_SHARED } else { libc::MAP_PRIVATE };
        for i in 0..pages {
            let offset = libc::off_t::try_from((pages - 1 - i) * region.page)
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            // SAFETY: MAP_FIXED replaces one page of our own PROT_NONE reservation (owned by
            // `region`, not yet handed out), so no other mapping is clobbered.
            let p = unsafe {
                libc::mmap(
                    region.page_addr(i) as *mut c_void,
                    region.page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    flags,
                    file.as_raw_fd(),
                    offset,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
        }
        region.advise(libc::MADV_RANDOM)?;
        region.no_huge_pages()?;
        Ok(region)
    }

    /// Appends to `out` `pages` single-page anonymous mappings (read-write, untouched), each
    /// its own VMA with an unmapped page on either side so that none merges with another
    /// (`space.mapping`). A range of twice the size is reserved (`PROT_NONE`) and kept while
    /// every other page of it is replaced by a read-write page (`MAP_FIXED` inside the
    /// reservation, which no one else can hold) and the page after it unmapped: another
    /// thread that maps meanwhile never lands in the range. On error, the mappings made so far
    /// are still appended and the rest of the reservation is unmapped.
    pub fn separate_pages(pages: usize, out: &mut Vec<Region>) -> io::Result<()> {
        // What is left of the reservation, shrinking from the front by two pages a step.
        let mut rest = Region::map_anon(pages.saturating_mul(2), libc::PROT_NONE)?;
        let page = rest.page;
        for _ in 0..pages {
            let want = rest.addr;
            // SAFETY: [want, want + page) lies inside `rest`, a reservation this function
            // made and holds alone; MAP_FIXED replaces only that page of it.
            let p = unsafe {
                libc::mmap(
                    want as *mut c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if p as usize != want {
                // MAP_FIXED never places elsewhere; should it, the page is still owned.
                out.push(Region { addr: p as usize, pages: 1, page });
                return Err(io::Error::other("mmap did not honour MAP_FIXED"));
            }
            // The page is owned by its Region from here, no longer by the reservation.
            rest.addr += page;
            rest.pages -= 1;
            out.push(Region { addr: want, pages: 1, page });
            // SAFETY: the gap page is the reservation's first page now; unmapping it ends
            // the reservation's hold on it and touches nothing else.
            if unsafe { libc::munmap(rest.addr as *mut c_void, page) } != 0 {
                return Err(io::Error::last_os_error());
            }
            rest.addr += page;
            rest.pages -= 1;
        }
        // Nothing of the reservation is left to unmap.
        std::mem::forget(rest);
        Ok(())
    }

    fn map_anon(pages: usize, prot: libc::c_int) -> io::Result<Region> {
        let page = page_size();
        let len = pages.checked_mul(page).filter(|&l| l > 0).ok_or(io::ErrorKind::InvalidInput)?;
        // SAFETY: a fresh anonymous mapping at an address the kernel picks; no existing
        // memory is affected.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region { addr: p as usize, pages, page })
    }

    fn no_huge_pages(&self) -> io::Result<()> {
        match self.advise(libc::MADV_NOHUGEPAGE) {
            // A kernel built without THP rejects the advice: there are no huge pages anyway.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            other => other,
        }
    }

    fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        // SAFETY: the range is exactly this region's mapping; the advice values used here
        // (NOHUGEPAGE, RANDOM) change kernel policy, not contents.
        check(unsafe { libc::madvise(self.addr as *mut c_void, self.len(), advice) })
    }

    /// Pages in the region.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.pages * self.page
    }

    /// Whether the region is empty (never: regions have at least one page).
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// Address of page `i` (not checked; for messages and comparisons).
    pub fn page_addr(&self, i: usize) -> usize {
        self.addr + i * self.page
    }

    /// Whether `addr` lies inside the region.
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.addr && addr - self.addr < self.len()
    }

    fn range(&self, first: usize, count: usize) -> io::Result<(usize, usize)> {
        match first.checked_add(count) {
            Some(end) if end <= self.pages => Ok((self.page_addr(first), count * self.page)),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "page range outside the region")),
        }
    }

    /// `MADV_DONTNEED` on pages `first..first + count`: anonymous pages are freed (the next
    /// touch faults in a fresh zeroed page), file pages are unmapped (they stay in the page
    /// cache; private copies are dropped).
    pub fn discard(&self, first: usize, count: usize) -> io::Result<()> {
        let (addr, len) = self.range(first, count)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range lies inside this region (checked); nothing holds a reference to
        // its contents, so dropping them is sound.
        check(unsafe { libc::madvise(addr as *mut c_void, len, libc::MADV_DONTNEED) })
    }

    /// Changes the protection of pages `first..first + count`.
    pub fn protect(&self, first: usize, count: usize, prot: Prot) -> io::Result<()> {
        let (addr, len) = self.range(first, count)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range lies inside this region (checked); it is only ever accessed
        // through the volatile, fault-tolerant accessors below.
        check(unsafe { libc::mprotect(addr as *mut c_void, len, prot.bits()) })
    }

    /// How many of pages `first..first + count` are resident in memory (`mincore`): for a
    /// file mapping, whether the file's page is in the page cache, mapped here or not.
    pub fn resident(&self, first: usize, count: usize) -> io::Result<usize> {
        let (addr, len) = self.range(first, count)?;
        let mut vec = vec![0u8; count];
        if len == 0 {
            return Ok(0);
        }
        // SAFETY: the range lies inside this region; `vec` has one byte per page of it.
        check(unsafe { libc::mincore(addr as *mut c_void, len, vec.as_mut_ptr()) })?;
        Ok(vec.iter().filter(|&&b| b & 1 == 1).count())
    }

    /// Whether page `i` is resident (`mincore`, as [`Region::resident`], without allocating:
    /// safe to call where page faults are being counted).
    pub fn page_resident(&self, i: usize) -> io::Result<bool> {
        let (addr, _) = self.range(i, 1)?;
        let mut vec = [0u8; 1];
        // SAFETY: the page lies inside this region; `vec` has one byte for it.
        check(unsafe { libc::mincore(addr as *mut c_void, self.page, vec.as_mut_ptr()) })?;
        Ok(vec[0] & 1 == 1)
    }

    /// Reads byte `offset` of page `i` (volatile, as [`Region::read`]). Returns 0 without
    /// touching anything if either is out of range.
    #[inline(always)]
    pub fn read_at(&self, i: usize, offset: usize) -> u8 {
        if i >= self.pages || offset >= self.page {
            return 0;
        }
        // SAFETY: the byte is inside this mapping (both bounds checked); as in `read`.
        unsafe { std::ptr::read_volatile((self.page_addr(i) + offset) as *const u8) }
    }

    /// Reads the first byte of page `i` (volatile: it really happens, and faults if the page
    /// is absent or protected). Returns 0 without touching anything if `i` is out of range.
    #[inline(always)]
    pub fn read(&self, i: usize) -> u8 {
        if i >= self.pages {
            return 0;
        }
        // SAFETY: page `i` is inside this mapping; the access is volatile and through a raw
        // pointer (no reference); a fault on it is resolved by the kernel or by the handler
        // the caller installed for this region.
        unsafe { std::ptr::read_volatile(self.page_addr(i) as *const u8) }
    }

    /// Writes `value` to the first byte of page `i` (volatile). Does nothing if `i` is out of
    /// range.
    #[inline(always)]
    pub fn write(&self, i: usize, value: u8) {
        if i >= self.pages {
            return;
        }
        // SAFETY: as in `read`; the region is mapped writable (or made so by the handler the
        // caller installed).
        unsafe { std::ptr::write_volatile(self.page_addr(i) as *mut u8, value) }
    }

    /// Writes every page once (populates it), outside any timed region.
    pub fn fill(&self, value: u8) {
        for i in 0..self.pages {
            self.write(i, value);
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: this range was mapped for this Region alone and is unmapped exactly once.
        unsafe { libc::munmap(self.addr as *mut c_void, self.len()) };
    }
}

/// What the catcher's owner uses in the handler: how to resolve a fault, and what it records.
/// Statics, not fields of the owner, so the handler never reads memory that a catcher's drop
/// frees; one catcher exists at a time.
static SEGV_PAGE: AtomicUsize = AtomicUsize::new(4096);
static SEGV_PROT: AtomicI32 = AtomicI32::new(libc::PROT_READ);
/// Read `CLOCK_MONOTONIC_RAW` (the run's fallback timer) instead of the cycle counter.
static SEGV_MONOTONIC: AtomicBool = AtomicBool::new(false);
/// Clock at the handler's entry and just before it returns, for the last fault it resolved.
static SEGV_ENTRY: AtomicU64 = AtomicU64::new(0);
static SEGV_EXIT: AtomicU64 = AtomicU64::new(0);
/// Faults resolved; `mprotect` failures.
static SEGV_HITS: AtomicU64 = AtomicU64::new(0);
static SEGV_FAILED: AtomicU64 = AtomicU64::new(0);
/// A filling catcher's file (-1: not filling) and its region's first address (page `i` of the
/// region is page `i` of the file); pages read whole, and reads that failed or came up short.
static SEGV_FILL_FD: AtomicI32 = AtomicI32::new(-1);
static SEGV_BASE: AtomicUsize = AtomicUsize::new(0);
static SEGV_FILLED: AtomicU64 = AtomicU64::new(0);
static SEGV_FILL_FAILED: AtomicU64 = AtomicU64::new(0);
/// One catcher at a time (tests run in parallel threads of one process).
static SEGV_LOCK: Mutex<()> = Mutex::new(());

#[inline(always)]
fn exit_clock() -> u64 {
    if SEGV_MONOTONIC.load(Ordering::Relaxed) { crate::clock::monotonic_raw_ns() } else { crate::tsc::start() }
}

/// The catcher's owner in the SIGSEGV dispatcher: `mprotect`s the faulting page (filling it
/// from the file first, for a filling catcher).
struct Unprotect;

/// `mprotect` of one page of the catcher's region (async-signal-safe).
#[inline(always)]
fn protect_page(addr: usize, page: usize, prot: libc::c_int) -> bool {
    // SAFETY: the dispatcher hands the catcher only addresses inside the registered region,
    // which stays mapped while the catcher is installed; nothing references its memory.
    unsafe { libc::mprotect(addr as *mut c_void, page, prot) == 0 }
}

/// A filling catcher's work: make the page writable, read it from the file, give it its final
/// protection. Whether the page is accessible as wanted (a failed or short read is counted, and
/// the access still resumes). Saves and restores `errno`.
#[inline(always)]
fn fill_page(fd: libc::c_int, addr: usize, page: usize, prot: libc::c_int) -> bool {
    // SAFETY: errno is thread-local; saving and restoring it keeps the interrupted code's value.
    let errno = unsafe { *libc::__errno_location() };
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let mut ok = protect_page(addr, page, rw);
    if ok {
        let offset = (addr - SEGV_BASE.load(Ordering::Relaxed)) as libc::off_t;
        // SAFETY: `addr` is a whole page of the catcher's region, now writable; `fd` is the
        // file the catcher borrows (open while it is installed); pread writes at most `page`
        // bytes there and is a plain system call.
        let n = unsafe { libc::pread(fd, addr as *mut c_void, page, offset) };
        let counter = if n == page as isize { &SEGV_FILLED } else { &SEGV_FILL_FAILED };
        counter.fetch_add(1, Ordering::Relaxed);
        if prot != rw {
            ok = protect_page(addr, page, prot);
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    ok
}

// SAFETY: `resolve` reads and writes atomics, reads the clock and calls `mprotect` and, when
// filling, `pread` (system calls, async-signal-safe; errno is left as found: mprotect leaves it
// alone on success, `fill_page` restores it, and a failure is passed on to the previous
// disposition, which ends the process). It touches only statics and the faulting page of the
// catcher's region, which stays mapped while the registration lives (the catcher borrows the
// region and the file descriptor).
unsafe impl SegvOwner for Unprotect {
    #[inline(always)]
    fn resolve(&self, fault: &Fault) -> bool {
        let page = SEGV_PAGE.load(Ordering::Relaxed);
        let addr = fault.addr & !(page - 1);
        let prot = SEGV_PROT.load(Ordering::Relaxed);
        let fd = SEGV_FILL_FD.load(Ordering::Relaxed);
        let ok = if fd >= 0 { fill_page(fd, addr, page, prot) } else { protect_page(addr, page, prot) };
        if !ok {
            SEGV_FAILED.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        SEGV_HITS.fetch_add(1, Ordering::Relaxed);
        SEGV_ENTRY.store(fault.entry, Ordering::Relaxed);
        SEGV_EXIT.store(exit_clock(), Ordering::Relaxed);
        true
    }
}

/// Counts kept by the SIGSEGV handler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegvCounts {
    /// Faults in the region resolved by `mprotect`.
    pub resolved: u64,
    /// SIGSEGVs outside every registered range since installation, handed back to the
    /// previous disposition.
    pub stray: u64,
    /// `mprotect` calls that failed.
    pub failed: u64,
    /// Filling catcher: pages read whole from the file.
    pub filled: u64,
    /// Filling catcher: reads that failed or came up short.
    pub fill_failed: u64,
}

/// Resolves faults in one [`Region`] through the SIGSEGV dispatcher ([`super::segv`]) by giving
/// the faulting page the protection `resolve`, with the clock read at handler entry and exit.
/// Unregistered on drop, before the region can go away.
pub struct SegvCatcher<'r> {
    _registration: Registration,
    _region: &'r Region,
    _file: Option<BorrowedFd<'r>>,
    stray_before: u64,
    _lock: MutexGuard<'static, ()>,
}

impl<'r> SegvCatcher<'r> {
    /// Installs the catcher for `region`. `monotonic`: stamp with `CLOCK_MONOTONIC_RAW`
    /// instead of the cycle counter (match the run's timer).
    pub fn install(region: &'r Region, resolve: Prot, monotonic: bool) -> Result<SegvCatcher<'r>, SegvError> {
        SegvCatcher::install_inner(region, resolve, monotonic, None)
    }

    /// Installs a filling catcher for `region`: on a fault it makes the page writable, reads
    /// the same page of `file` into it (`pread`; page `i` of the region is page `i` of the
    /// file), then gives it the protection `resolve`.
    pub fn install_filling(
        region: &'r Region,
        resolve: Prot,
        monotonic: bool,
        file: BorrowedFd<'r>,
    ) -> Result<SegvCatcher<'r>, SegvError> {
        SegvCatcher::install_inner(region, resolve, monotonic, Some(file))
    }

    fn install_inner(
        region: &'r Region,
        resolve: Prot,
        monotonic: bool,
        file: Option<BorrowedFd<'r>>,
    ) -> Result<SegvCatcher<'r>, SegvError> {
        let lock = SEGV_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        SEGV_PAGE.store(region.page, Ordering::Relaxed);
        SEGV_PROT.store(resolve.bits(), Ordering::Relaxed);
        SEGV_MONOTONIC.store(monotonic, Ordering::Relaxed);
        SEGV_BASE.store(region.addr, Ordering::Relaxed);
        SEGV_FILL_FD.store(file.map_or(-1, |f| f.as_raw_fd()), Ordering::Relaxed);
        for c in [&SEGV_HITS, &SEGV_FAILED, &SEGV_ENTRY, &SEGV_EXIT, &SEGV_FILLED, &SEGV_FILL_FAILED] {
            c.store(0, Ordering::Relaxed);
        }
        let clock = if monotonic { EntryClock::MonotonicRaw } else { EntryClock::Cycles };
        let stray_before = segv::stray_faults();
        let registration = segv::register(Arc::new(Unprotect), region.addr, region.len(), clock)?;
        Ok(SegvCatcher { _registration: registration, _region: region, _file: file, stray_before, _lock: lock })
    }

    /// Clears the entry stamp before an access, so a fault that did not reach the handler
    /// shows as 0.
    #[inline(always)]
    pub fn clear_stamp(&self) {
        SEGV_ENTRY.store(0, Ordering::Relaxed);
    }

    /// Clock readings at handler entry and exit for the last fault resolved (0 if cleared).
    #[inline(always)]
    pub fn stamps(&self) -> (u64, u64) {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        (SEGV_ENTRY.load(Ordering::Relaxed), SEGV_EXIT.load(Ordering::Relaxed))
    }

    /// What the handler has counted since installation.
    pub fn counts(&self) -> SegvCounts {
        SegvCounts {
            resolved: SEGV_HITS.load(Ordering::Relaxed),
            stray: segv::stray_faults() - self.stray_before,
            failed: SEGV_FAILED.load(Ordering::Relaxed),
            filled: SEGV_FILLED.load(Ordering::Relaxed),
            fill_failed: SEGV_FILL_FAILED.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anon_region_reads_zero_and_discards() {
        let r = Region::anon(4).expect("mmap");
        assert_eq!(r.read(2), 0);
        r.write(2, 7);
        assert_eq!(r.read(2), 7);
        r.discard(0, 4).expect("madvise");
        assert_eq!(r.read(2), 0);
        assert_eq!(r.read(99), 0, "out of range reads nothing");
        assert!(r.discard(3, 2).is_err(), "range past the end is refused");
    }

    #[test]
    fn separate_pages_are_separate_vmas() {
        let maps = || std::fs::read_to_string("/proc/self/maps").map(|s| s.lines().count()).unwrap_or(0);
        let mut pages = Vec::new();
        Region::separate_pages(64, &mut pages).expect("mmap");
        assert_eq!(pages.len(), 64);
        let with = maps();
        drop(pages);
        // Other test threads may map and unmap too; 64 VMAs is well beyond their noise.
        assert!(with >= maps() + 32, "{with} vs {}", maps());
    }

    #[test]
    fn catcher_resolves_a_protected_page() {
        let r = Region::anon(2).expect("mmap");
        r.fill(1);
        r.protect(0, 2, Prot::None).expect("mprotect");
        let c = SegvCatcher::install(&r, Prot::Read, false).expect("install");
        c.clear_stamp();
        assert_eq!(r.read(1), 1);
        let (entry, exit) = c.stamps();
        assert!(entry > 0 && exit >= entry);
        assert_eq!(c.counts(), SegvCounts { resolved: 1, stray: 0, failed: 0, filled: 0, fill_failed: 0 });
    }

    #[test]
    fn filling_catcher_reads_the_page_from_its_file() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let _serial = crate::testing::serial();
        let ps = page_size();
        let mut f = tempfile::tempfile().expect("temp file");
        f.write_all(&vec![5u8; 2 * ps]).and_then(|_| f.write_all(&vec![9u8; ps])).expect("fill");
        let r = Region::anon(3).expect("mmap");
        r.fill(0);
        r.protect(0, 3, Prot::None).expect("mprotect");
        let view = Region::file_view(f.as_fd(), 3).expect("view");
        assert!(view.page_resident(2).expect("mincore"), "just written: in the page cache");
        let c = SegvCatcher::install_filling(&r, Prot::Read, false, f.as_fd()).expect("install");
        assert_eq!(r.read_at(2, 7), 9, "page 2 of the file");
        assert_eq!(r.read(0), 5, "page 0 of the file");
        let counts = c.counts();
        assert_eq!((counts.resolved, counts.filled, counts.fill_failed, counts.failed), (2, 2, 0, 0));
    }
}
