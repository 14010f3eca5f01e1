//! Write detection for [`rvm`]: a private (copy-on-write) mapping of a file whose pages
//! are write-protected, and the first write to each page caught before it lands, so that the
//! page's pre-image can be saved. Two ways to catch it ([`Detection`]):
//!
//! - **`mprotect` + SIGSEGV**: arming makes the mapping read-only
//!   ([mprotect(2)](https://man7.org/linux/man-pages/man2/mprotect.2.html)); a write raises
//!   SIGSEGV (`SEGV_ACCERR`); the process-wide dispatcher ([`super::segv`]) hands it to the
//!   region whose range holds the address, which copies the page into its preallocated
//!   pre-image buffer, marks the page dirty, makes the page writable and returns, and the write
//!   is retried. A fault the region declines (not a write to a protected page, or the region
//!   disarmed) is chained by the dispatcher to the disposition before osprim's.
//! - **userfaultfd write-protect** ([`super::uffd`]; `UFFDIO_REGISTER_MODE_WP`,
//!   `UFFDIO_WRITEPROTECT`): arming write-protects the range in the page tables; a write blocks
//!   the writing thread and queues a message; a handler thread saves the pre-image, removes the
//!   protection of that page and wakes the writer. The kernel allows this on anonymous, shmem
//!   (tmpfs) and hugetlbfs memory only; on a regular file system (ext4, xfs, btrfs…)
//!   `UFFDIO_REGISTER` fails with `EINVAL` and the mode is unavailable
//!   ([`WpError::Unavailable`] says why).
//!
//! **Read tracking** ([`Tracking::All`], mprotect only), as Rhino tracked the pages a
//! transaction reads as well as those it writes: arming makes the mapping `PROT_NONE`. A read
//! fault records the page as read and grants `PROT_READ`; a write fault (a write to a
//! `PROT_NONE` page, or any fault on a page already made readable) grants read-write, saves the
//! pre-image and marks the page dirty. Which of the two a first fault on a `PROT_NONE` page is
//! comes from the CPU's page-fault error code ([`super::segv::access_kind_known`]: x86-64);
//! elsewhere it is taken for a read, and a write then traps a second time, as a write.
//! [`WriteTracked::reprotect_touched`] puts every page touched (read or written) back to
//! `PROT_NONE` (a commit's last step). While disarmed (outside a transaction) a read of a
//! `PROT_NONE` page is served — the page made readable, untracked, and counted
//! ([`WriteTracked::outside_reads`]) — and a write is passed on. userfaultfd cannot track
//! reads: its write-protect mode catches writes only, and its missing and minor modes fire only
//! for pages absent from the page tables (and only on anonymous, shmem and hugetlbfs memory),
//! not for reads of resident file pages; [`WriteTracked::new`] refuses that combination.
//!
//! A [`WriteTracked`] region owns its mappings, the pre-image buffer (one page per data page,
//! allocated and faulted in when the region is made, so that saving a pre-image allocates
//! nothing and takes no page fault), the dirty set, and its detector.
//!
//! # Safety
//! - The region's part of the SIGSEGV handler is async-signal-safe: it reads atomics, copies
//!   one page between two mappings that stay mapped while the region is registered, calls
//!   `mprotect` and saves and restores `errno`. It allocates nothing and takes no lock. With
//!   read tracking it makes a `PROT_NONE` page readable before copying it, so the copy itself
//!   never faults.
//! - A region is unregistered (its slot cleared) before its mappings are unmapped, and a
//!   uffd handler thread is joined before the mappings go, so neither the handler nor the
//!   thread touches freed memory — provided no other thread writes to the region while its
//!   owner drops it (the owner holds it exclusively, so only unsafe code elsewhere could).
//! - Slices handed out by [`WriteTracked::data`] and [`WriteTracked::data_mut`] cover the data
//!   mapping, which lives as long as the region; the handler only reads data pages and writes
//!   pre-image pages, never the data, so it does not alias a live `&mut` in a way the program can
//!   observe (the faulting write has not happened yet when the handler runs).
#![allow(unsafe_code)]

use super::segv::{self, EntryClock, Fault, Registration, SEGV_ACCERR, SegvError, SegvOwner};
use super::uffd::{Msg, Uffd};
use linux_raw_sys::general as uapi;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;

/// How the first write to a protected page is caught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Detection {
    /// `mprotect(PROT_READ)` and a SIGSEGV handler.
    #[default]
    Mprotect,
    /// userfaultfd write-protect and a handler thread.
    Uffd,
}

impl Detection {
    /// Both modes.
    pub const ALL: [Detection; 2] = [Detection::Mprotect, Detection::Uffd];

    /// `"mprotect"` or `"uffd"`.
    pub fn name(self) -> &'static str {
        match self {
            Detection::Mprotect => "mprotect",
            Detection::Uffd => "uffd",
        }
    }

    /// The mode named `name` (as [`Detection::name`] spells it).
    pub fn from_name(name: &str) -> Option<Detection> {
        Detection::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// Which accesses begin a page's tracking in a transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Tracking {
    /// Writes only: arming write-protects (`PROT_READ`); reads never trap.
    #[default]
    Writes,
    /// Reads and writes (mprotect only): arming makes the segment `PROT_NONE`; the first read
    /// of a page traps and grants `PROT_READ`, a write traps and grants read-write; the pages
    /// touched are re-protected at commit ([`WriteTracked::reprotect_touched`]).
    All,
}

impl Tracking {
    /// Both modes.
    pub const ALL: [Tracking; 2] = [Tracking::Writes, Tracking::All];

    /// `"writes"` or `"all"`.
    pub fn name(self) -> &'static str {
        match self {
            Tracking::Writes => "writes",
            Tracking::All => "all",
        }
    }

    /// The mode named `name` (as [`Tracking::name`] spells it).
    pub fn from_name(name: &str) -> Option<Tracking> {
        Tracking::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl std::fmt::Display for Tracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why userfaultfd cannot track reads (for [`WpError::Unavailable`]).
pub const UFFD_READS_REASON: &str = "userfaultfd cannot track reads: its write-protect mode catches writes only, and its \
     missing and minor modes fire only for pages absent from the page tables (on anonymous, shmem and hugetlbfs \
     memory), not for each read of a resident page; read tracking needs mprotect";

impl std::fmt::Display for Detection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a region could not be made or armed.
#[derive(Debug, thiserror::Error)]
pub enum WpError {
    /// A system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call and what it was for.
        call: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The detection mode cannot work here; the text says why.
    #[error("{0}")]
    Unavailable(String),
    /// The region's length is zero or not a multiple of the page size.
    #[error("length {len} is not a positive multiple of the page size ({page} bytes)")]
    BadLength {
        /// The length asked for.
        len: usize,
        /// The page size.
        page: usize,
    },
    /// Every slot of the SIGSEGV handler's table is in use.
    #[error("too many write-tracked regions at once (at most {0})")]
    TooMany(usize),
}

fn os(call: &'static str) -> WpError {
    WpError::Os { call, source: io::Error::last_os_error() }
}

pub use super::fault::page_size;

// ---------------------------------------------------------------------------------------------
// Mappings

/// One `mmap`ed range, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// A private (copy-on-write) mapping of the first `len` bytes of `fd`.
    fn private_file(fd: BorrowedFd<'_>, len: usize, prot: libc::c_int) -> Result<Mapping, WpError> {
        // SAFETY: a fresh mapping chosen by the kernel; nothing else is at that address.
        let p = unsafe { libc::mmap(ptr::null_mut(), len, prot, libc::MAP_PRIVATE, fd.as_raw_fd(), 0) };
        Mapping::from_raw(p, len).ok_or_else(|| os("mmap of the segment file"))
    }

    /// Anonymous read-write memory, faulted in now (`MAP_POPULATE`).
    fn anonymous(len: usize) -> Result<Mapping, WpError> {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
        // SAFETY: a fresh anonymous mapping chosen by the kernel.
        let p = unsafe { libc::mmap(ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        Mapping::from_raw(p, len).ok_or_else(|| os("mmap of the pre-image buffer"))
    }

    fn from_raw(p: *mut libc::c_void, len: usize) -> Option<Mapping> {
        if p == libc::MAP_FAILED {
            return None;
        }
        NonNull::new(p.cast::<u8>()).map(|ptr| Mapping { ptr, len })
    }

    fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Maps every page in for reading (`MADV_POPULATE_READ`, or a read of each page where the
    /// kernel predates it), so a first write takes only the protection fault.
    fn populate_read(&self, page: usize) {
        // SAFETY: advice on our own mapping; it changes no contents.
        let r = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_POPULATE_READ) };
        if r != 0 {
            for off in (0..self.len).step_by(page) {
                // SAFETY: `off` < len, inside the readable mapping.
                unsafe { ptr::read_volatile(self.ptr.as_ptr().add(off)) };
            }
        }
    }

    /// `mprotect` of `len` bytes from `offset`.
    fn protect(&self, offset: usize, len: usize, prot: libc::c_int) -> Result<(), WpError> {
        debug_assert!(offset + len <= self.len);
        // SAFETY: the range lies inside our own mapping.
        let r = unsafe { libc::mprotect(self.ptr.as_ptr().add(offset).cast(), len, prot) };
        if r == 0 { Ok(()) } else { Err(os("mprotect of the segment")) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `mmap` returned; nothing refers to it any more (see the
        // module's safety notes on the order of teardown).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

// ---------------------------------------------------------------------------------------------
// The dirty set, shared with the handler (signal or thread)

/// A page's protection as the tracker last set it (read tracking only).
const PAGE_NONE: u8 = 0;
const PAGE_READ: u8 = 1;
const PAGE_WRITE: u8 = 2;

/// What the fault handler needs: where the region is, where pre-images go, the dirty set (and,
/// with read tracking, each page's protection and the pages touched). Everything the handler
/// changes is atomic; the pre-image pages are written only by the handler, and only for a page
/// it has just claimed (its dirty flag went from false to true).
struct Tracker {
    base: usize,
    len: usize,
    page: usize,
    pre: *mut u8,
    dirty: Box<[AtomicBool]>,
    list: Box<[AtomicU32]>,
    count: AtomicUsize,
    /// Write faults resolved (pre-image saves).
    traps: AtomicU64,
    armed: AtomicBool,
    broken: AtomicBool,
    /// [`Tracking::All`].
    track_reads: bool,
    /// Per page: `PAGE_NONE`, `PAGE_READ` or `PAGE_WRITE` (read tracking only).
    state: Box<[AtomicU8]>,
    /// Pages whose state left `PAGE_NONE` since the last re-protection, in order.
    touched: Box<[AtomicU32]>,
    touched_count: AtomicUsize,
    /// Read faults resolved in a transaction.
    read_traps: AtomicU64,
    /// Read faults served outside a transaction.
    outside_reads: AtomicU64,
}

// SAFETY: `pre` points into a mapping owned by the `WriteTracked` that owns this tracker and
// outlives every user of it; all other fields are atomics or immutable.
unsafe impl Send for Tracker {}
// SAFETY: as above; concurrent access goes through atomics.
unsafe impl Sync for Tracker {}

impl Tracker {
    /// The index of the page holding `addr`, if it is inside the region.
    fn page_of(&self, addr: usize) -> Option<usize> {
        addr.checked_sub(self.base).filter(|&off| off < self.len).map(|off| off / self.page)
    }

    /// Saves the pre-image of page `idx` and marks it dirty, unless it already is.
    /// Async-signal-safe: atomics and one page copy.
    fn save(&self, idx: usize) {
        if self.dirty[idx].swap(true, Ordering::AcqRel) {
            return;
        }
        let off = idx * self.page;
        // SAFETY: `idx` < pages, so both ranges lie inside their mappings (the data mapping
        // at `base`, the pre-image buffer at `pre`, each `len` bytes); the data page is
        // readable, the pre-image page writable, and nobody else writes it (we just claimed it).
        unsafe { ptr::copy_nonoverlapping((self.base + off) as *const u8, self.pre.add(off), self.page) };
        let slot = self.count.fetch_add(1, Ordering::AcqRel);
        self.list[slot].store(idx as u32, Ordering::Release);
    }

    /// Forgets the dirty set (of the transaction before).
    fn reset(&self) {
        debug_assert!(!self.armed.load(Ordering::Acquire), "reset while armed");
        let n = self.count.load(Ordering::Acquire);
        for slot in &self.list[..n] {
            self.dirty[slot.load(Ordering::Acquire) as usize].store(false, Ordering::Release);
        }
        self.count.store(0, Ordering::Release);
    }

    /// Records page `idx`'s new protection `state`, listing it as touched if it was
    /// `PAGE_NONE`. Async-signal-safe: atomics only.
    fn set_state(&self, idx: usize, state: u8) {
        if self.state[idx].swap(state, Ordering::AcqRel) == PAGE_NONE {
            let slot = self.touched_count.fetch_add(1, Ordering::AcqRel);
            self.touched[slot].store(idx as u32, Ordering::Release);
        }
    }

    /// Forgets the touched pages (their protection is about to be set for the whole region).
    fn forget_touched(&self) {
        let n = self.touched_count.load(Ordering::Acquire);
        for slot in &self.touched[..n] {
            self.state[slot.load(Ordering::Acquire) as usize].store(PAGE_NONE, Ordering::Release);
        }
        self.touched_count.store(0, Ordering::Release);
    }

    /// `mprotect` of page `idx` (async-signal-safe). Whether it succeeded.
    fn protect_page(&self, idx: usize, prot: libc::c_int) -> bool {
        let page = self.base + idx * self.page;
        // SAFETY: the page lies in the region's data mapping (idx < pages); mprotect changes
        // no contents and is async-signal-safe.
        unsafe { libc::mprotect(page as *mut libc::c_void, self.page, prot) == 0 }
    }

    /// The write-only handler: save the pre-image of a write to the armed region, unprotect.
    fn resolve_write(&self, idx: usize) -> bool {
        if !self.armed.load(Ordering::Acquire) {
            return false;
        }
        self.save(idx);
        let ok = self.protect_page(idx, libc::PROT_READ | libc::PROT_WRITE);
        if ok {
            self.traps.fetch_add(1, Ordering::AcqRel);
        }
        ok
    }

    /// The read-tracking handler (see the module doc). `write`: the CPU's word on the access.
    fn resolve_tracking_reads(&self, idx: usize, write: Option<bool>) -> bool {
        let state = self.state[idx].load(Ordering::Acquire);
        // Reads of a page made readable never fault: a fault on one is a write.
        let write = write.unwrap_or(false) || state != PAGE_NONE;
        if !self.armed.load(Ordering::Acquire) {
            // Outside a transaction: serve reads, pass writes on (the segment hands out no
            // writable slice then, so a write there is a bug to surface).
            if write || !self.protect_page(idx, libc::PROT_READ) {
                return false;
            }
            self.set_state(idx, PAGE_READ);
            self.outside_reads.fetch_add(1, Ordering::AcqRel);
            return true;
        }
        if !write {
            if !self.protect_page(idx, libc::PROT_READ) {
                return false;
            }
            self.set_state(idx, PAGE_READ);
            self.read_traps.fetch_add(1, Ordering::AcqRel);
            return true;
        }
        // Writable first, so the pre-image copy reads an accessible page; the faulting write
        // has not happened yet, so the copy is the pre-image.
        if !self.protect_page(idx, libc::PROT_READ | libc::PROT_WRITE) {
            return false;
        }
        self.set_state(idx, PAGE_WRITE);
        self.save(idx);
        self.traps.fetch_add(1, Ordering::AcqRel);
        true
    }
}

// ---------------------------------------------------------------------------------------------
// The region

/// Which side of a system call a probe of [`WriteTracked::write_protect_probed`] or
/// [`WriteTracked::reprotect_touched_probed`] is called on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Right before the call.
    Before,
    /// Right after it returned (whatever it returned).
    After,
}

/// A private mapping of a file, with write detection and pre-image capture.
pub struct WriteTracked {
    detector: Detector,
    tracker: Arc<Tracker>,
    data: Mapping,
    _pre: Mapping,
    detection: Detection,
    tracking: Tracking,
}

enum Detector {
    /// Held until the region drops (taken then, before the mappings go).
    Signal(Option<Registration>),
    Uffd(UffdWatcher),
}

impl WriteTracked {
    /// Maps the first `len` bytes of `file` privately and prepares `detection`, tracking the
    /// accesses `tracking` names. `len` must be a positive multiple of the page size and the
    /// file at least that long. Read tracking with userfaultfd is refused
    /// ([`WpError::Unavailable`], [`UFFD_READS_REASON`]).
    pub fn new(
        file: BorrowedFd<'_>,
        len: usize,
        detection: Detection,
        tracking: Tracking,
    ) -> Result<WriteTracked, WpError> {
        let page = page_size();
        if len == 0 || !len.is_multiple_of(page) || len / page > u32::MAX as usize {
            return Err(WpError::BadLength { len, page });
        }
        if detection == Detection::Uffd && tracking == Tracking::All {
            return Err(WpError::Unavailable(UFFD_READS_REASON.into()));
        }
        let track_reads = tracking == Tracking::All;
        let prot = match detection {
            Detection::Mprotect => libc::PROT_READ,
            Detection::Uffd => libc::PROT_READ | libc::PROT_WRITE,
        };
        let data = Mapping::private_file(file, len, prot)?;
        data.populate_read(page);
        let pre = Mapping::anonymous(len)?;
        let pages = len / page;
        let tracker = Arc::new(Tracker {
            base: data.addr(),
            len,
            page,
            pre: pre.ptr.as_ptr(),
            dirty: (0..pages).map(|_| AtomicBool::new(false)).collect(),
            list: (0..pages).map(|_| AtomicU32::new(0)).collect(),
            count: AtomicUsize::new(0),
            traps: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            track_reads,
            state: (0..if track_reads { pages } else { 0 }).map(|_| AtomicU8::new(PAGE_NONE)).collect(),
            touched: (0..if track_reads { pages } else { 0 }).map(|_| AtomicU32::new(0)).collect(),
            touched_count: AtomicUsize::new(0),
            read_traps: AtomicU64::new(0),
            outside_reads: AtomicU64::new(0),
        });
        let detector = match detection {
            Detection::Mprotect => Detector::Signal(Some(register_signal(&tracker)?)),
            Detection::Uffd => Detector::Uffd(UffdWatcher::start(&tracker)?),
        };
        Ok(WriteTracked { detector, tracker, data, _pre: pre, detection, tracking })
    }

    /// The detection mode.
    pub fn detection(&self) -> Detection {
        self.detection
    }

    /// What is tracked.
    pub fn tracking(&self) -> Tracking {
        self.tracking
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.tracker.page
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.tracker.len
    }

    /// Whether the region is empty (never: regions have at least one page).
    pub fn is_empty(&self) -> bool {
        self.tracker.len == 0
    }

    /// The mapped bytes.
    pub fn data(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.data.ptr.as_ptr(), self.data.len) }
    }

    /// The mapped bytes, for writing. Writes to a protected page trap first (see the module
    /// doc); the kernel's own writes into protected pages (e.g. `read(2)` into them) fail with
    /// `EFAULT` instead.
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `data`, and `&mut self` makes this the only slice.
        unsafe { std::slice::from_raw_parts_mut(self.data.ptr.as_ptr(), self.data.len) }
    }

    /// Forgets the dirty set (of the transaction before), so that the next
    /// [`WriteTracked::write_protect`] starts a new one.
    pub fn forget_dirty(&mut self) {
        self.tracker.reset();
    }

    /// Write-protects every page (with read tracking: makes every page `PROT_NONE`) and starts
    /// tracking: from now on the first write to each page saves its pre-image (pages already
    /// dirty keep theirs), and with read tracking the first read of each page is recorded.
    pub fn write_protect(&mut self) -> Result<(), WpError> {
        self.write_protect_probed(|_| {})
    }

    /// [`WriteTracked::write_protect`], calling `around` right before ([`Edge::Before`]) and
    /// right after ([`Edge::After`]) its one system call (`mprotect`, or the
    /// `UFFDIO_WRITEPROTECT` ioctl with its repeats on `EAGAIN`), so a caller can time the
    /// call in place.
    pub fn write_protect_probed(&mut self, mut around: impl FnMut(Edge)) -> Result<(), WpError> {
        if self.tracker.track_reads {
            self.tracker.forget_touched();
        }
        self.tracker.armed.store(true, Ordering::Release);
        around(Edge::Before);
        let r = match &self.detector {
            Detector::Signal(_) if self.tracker.track_reads => self.data.protect(0, self.data.len, libc::PROT_NONE),
            Detector::Signal(_) => self.data.protect(0, self.data.len, libc::PROT_READ),
            Detector::Uffd(w) => w.protect(self.data.addr(), self.data.len, true),
        };
        around(Edge::After);
        if r.is_err() {
            self.tracker.armed.store(false, Ordering::Release);
        }
        r
    }

    /// Stops tracking: a write fault in the region is no longer ours (pages written in this
    /// transaction stay writable until the next [`WriteTracked::write_protect`]).
    pub fn disarm(&mut self) {
        self.tracker.armed.store(false, Ordering::Release);
    }

    /// Replaces `out` with the indexes of the pages written since the last `forget_dirty`, in the order
    /// they were first written.
    pub fn dirty_pages(&self, out: &mut Vec<u32>) {
        out.clear();
        let n = self.tracker.count.load(Ordering::Acquire);
        out.extend(self.tracker.list[..n].iter().map(|s| s.load(Ordering::Acquire)));
    }

    /// How many pages were written since the last `forget_dirty`.
    pub fn dirty_count(&self) -> usize {
        self.tracker.count.load(Ordering::Acquire)
    }

    /// The pre-image of page `page` (its bytes when it was first written since the last `forget_dirty`;
    /// meaningless for a page not written).
    pub fn preimage(&self, page: usize) -> &[u8] {
        let p = self.tracker.page;
        assert!(page < self.tracker.list.len(), "page {page} outside the region");
        // SAFETY: in bounds (checked above); the buffer lives as long as `self`, and the handler
        // writes a page's pre-image only when it first claims the page, before the write it
        // traps completes — i.e. never while the owner reads it for a dirty page.
        unsafe { std::slice::from_raw_parts(self.tracker.pre.add(page * p), p) }
    }

    /// Copies the pre-image of page `page` back, if the page was written since the last `forget_dirty`.
    /// Returns whether it did.
    pub fn restore(&mut self, page: usize) -> bool {
        if !self.tracker.dirty.get(page).is_some_and(|d| d.load(Ordering::Acquire)) {
            return false;
        }
        let p = self.tracker.page;
        let src = self.tracker.pre;
        let dst = self.data.ptr.as_ptr();
        // SAFETY: both ranges are in bounds; the dirty page is writable (its protection was
        // removed when it trapped); `&mut self` excludes other users of the data mapping.
        unsafe { ptr::copy_nonoverlapping(src.add(page * p), dst.add(page * p), p) };
        true
    }

    /// Write faults resolved so far (one per first write to a page per transaction when all is
    /// well).
    pub fn traps(&self) -> u64 {
        self.tracker.traps.load(Ordering::Acquire)
    }

    /// Read faults resolved in transactions so far (read tracking; one per page read before it
    /// is written, per transaction).
    pub fn read_traps(&self) -> u64 {
        self.tracker.read_traps.load(Ordering::Acquire)
    }

    /// Reads of a `PROT_NONE` page served outside a transaction (read tracking), e.g. a probe
    /// read after a commit, which shows the commit re-protected the page.
    pub fn outside_reads(&self) -> u64 {
        self.tracker.outside_reads.load(Ordering::Acquire)
    }

    /// Pages read or written since the last arming or re-protection (read tracking; 0
    /// otherwise).
    pub fn touched_count(&self) -> usize {
        self.tracker.touched_count.load(Ordering::Acquire)
    }

    /// With read tracking, makes every page touched since arming `PROT_NONE` again, one
    /// `mprotect` per run of adjacent pages (`scratch` holds their indexes); returns the calls
    /// made. Call it disarmed. Without read tracking it does nothing and returns 0.
    pub fn reprotect_touched(&mut self, scratch: &mut Vec<u32>) -> Result<usize, WpError> {
        self.reprotect_touched_probed(scratch, |_| {})
    }

    /// [`WriteTracked::reprotect_touched`], calling `around` right before and right after each
    /// `mprotect` it makes (also one that fails).
    pub fn reprotect_touched_probed(
        &mut self,
        scratch: &mut Vec<u32>,
        mut around: impl FnMut(Edge),
    ) -> Result<usize, WpError> {
        let t = &self.tracker;
        if !t.track_reads {
            return Ok(0);
        }
        debug_assert!(!t.armed.load(Ordering::Acquire), "re-protect while armed");
        scratch.clear();
        let n = t.touched_count.load(Ordering::Acquire);
        scratch.extend(t.touched[..n].iter().map(|s| s.load(Ordering::Acquire)));
        scratch.sort_unstable();
        let mut calls = 0;
        let mut i = 0;
        while i < scratch.len() {
            let first = scratch[i] as usize;
            let mut end = first + 1;
            i += 1;
            while i < scratch.len() && scratch[i] as usize == end {
                end += 1;
                i += 1;
            }
            around(Edge::Before);
            let r = self.data.protect(first * t.page, (end - first) * t.page, libc::PROT_NONE);
            around(Edge::After);
            r?;
            calls += 1;
        }
        t.forget_touched();
        Ok(calls)
    }

    /// Whether the uffd handler thread failed to resolve a fault (it then unprotects the whole
    /// region so the writer does not hang, and writes are no longer tracked).
    pub fn broken(&self) -> bool {
        self.tracker.broken.load(Ordering::Acquire)
    }
}

impl Drop for WriteTracked {
    fn drop(&mut self) {
        // Stop the detector before the mappings go (fields drop after this body).
        match &mut self.detector {
            Detector::Signal(registration) => drop(registration.take()),
            Detector::Uffd(w) => w.stop(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// mprotect + SIGSEGV

// SAFETY: `resolve` is async-signal-safe: it reads and writes atomics, copies one page between
// two mappings the region owns (kept until the registration is dropped: `WriteTracked::drop`
// drops it first), calls `mprotect` and saves and restores `errno`. It allocates nothing and
// takes no lock.
unsafe impl SegvOwner for Tracker {
    /// Write tracking: resolves a write to the armed region (save the pre-image, unprotect the
    /// page); declines (false) a fault that is not on a protected page, or comes while
    /// disarmed. Read tracking: see the module doc.
    fn resolve(&self, fault: &Fault) -> bool {
        if fault.code != SEGV_ACCERR {
            return false;
        }
        let Some(idx) = self.page_of(fault.addr) else { return false };
        // SAFETY: errno is thread-local; saving and restoring it keeps the interrupted code's
        // value whatever mprotect does.
        let errno = unsafe { *libc::__errno_location() };
        let ok = if self.track_reads { self.resolve_tracking_reads(idx, fault.write) } else { self.resolve_write(idx) };
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        ok
    }
}

fn register_signal(tracker: &Arc<Tracker>) -> Result<Registration, WpError> {
    segv::register(Arc::clone(tracker), tracker.base, tracker.len, EntryClock::None).map_err(|e| match e {
        SegvError::Full(n) => WpError::TooMany(n),
        SegvError::Sigaction { what, source } => WpError::Os { call: what, source },
    })
}

// ---------------------------------------------------------------------------------------------
// userfaultfd write-protect

/// Opens a non-blocking userfaultfd (for user-mode faults only where the kernel knows that
/// flag, so unprivileged use is allowed even with `vm.unprivileged_userfaultfd = 0`).
fn open_uffd() -> Result<Uffd, WpError> {
    Uffd::open_unnegotiated(true).map_err(|attempts| {
        let has = |errno| attempts.iter().any(|a| a.errno == errno);
        if has(libc::ENOSYS) {
            WpError::Unavailable("this kernel has no userfaultfd".into())
        } else if has(libc::EPERM) {
            WpError::Unavailable(
                "userfaultfd not permitted (vm.unprivileged_userfaultfd = 0 and no CAP_SYS_PTRACE)".into(),
            )
        } else if let Some(a) = attempts.iter().find(|a| a.errno != libc::EINVAL) {
            WpError::Os { call: "userfaultfd", source: io::Error::from_raw_os_error(a.errno) }
        } else {
            WpError::Unavailable("userfaultfd refused every flag combination (EINVAL)".into())
        }
    })
}

const WP_FEATURE: u64 = uapi::UFFD_FEATURE_PAGEFAULT_FLAG_WP as u64;
const WP_MORE_FEATURES: u64 = (uapi::UFFD_FEATURE_WP_HUGETLBFS_SHMEM | uapi::UFFD_FEATURE_WP_UNPOPULATED) as u64;

/// The uffd of a region and the thread that serves its write faults.
struct UffdWatcher {
    uffd: Arc<Uffd>,
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl UffdWatcher {
    fn start(tracker: &Arc<Tracker>) -> Result<UffdWatcher, WpError> {
        // The API handshake can be made once per descriptor: probe on one, use another.
        let offered = open_uffd()?.api(0).map_err(|source| WpError::Os { call: "UFFDIO_API", source })?;
        if offered & WP_FEATURE == 0 {
            return Err(WpError::Unavailable(
                "this kernel's userfaultfd has no write-protect support (UFFD_FEATURE_PAGEFAULT_FLAG_WP)".into(),
            ));
        }
        let uffd = open_uffd()?;
        uffd.api(WP_FEATURE | (offered & WP_MORE_FEATURES))
            .map_err(|source| WpError::Os { call: "UFFDIO_API", source })?;
        // SAFETY: the range is the region's data mapping, which it owns; this descriptor stays
        // inside this module and never resolves missing pages (no copy or zeropage), so the
        // kernel writes nothing there through it.
        match unsafe { uffd.register_wp(tracker.base, tracker.len) } {
            Ok(true) => {}
            Ok(false) => {
                return Err(WpError::Unavailable("UFFDIO_WRITEPROTECT is not offered for this mapping".into()));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Err(WpError::Unavailable(
                    "the kernel refuses userfaultfd write-protect for this mapping (UFFDIO_REGISTER_MODE_WP: EINVAL); \
                     it supports it on anonymous, shmem/tmpfs and hugetlbfs memory only"
                        .into(),
                ));
            }
            Err(source) => return Err(WpError::Os { call: "UFFDIO_REGISTER", source }),
        }
        let stop = new_eventfd()?;
        let uffd = Arc::new(uffd);
        let (fd, stop_fd, t) = (Arc::clone(&uffd), stop.as_raw_fd(), Arc::clone(tracker));
        let thread = std::thread::Builder::new()
            .name("rvm-uffd".into())
            .spawn(move || serve(&fd, stop_fd, &t))
            .map_err(|source| WpError::Os { call: "spawn the uffd handler thread", source })?;
        Ok(UffdWatcher { uffd, stop: Some(stop), thread: Some(thread) })
    }

    /// Write-protects (`wp`) or unprotects `len` bytes at `start`.
    fn protect(&self, start: usize, len: usize, wp: bool) -> Result<(), WpError> {
        self.uffd.writeprotect(start, len, wp).map_err(|source| WpError::Os { call: "UFFDIO_WRITEPROTECT", source })
    }

    fn stop(&mut self) {
        if let Some(stop) = &self.stop {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to our eventfd.
            unsafe { libc::write(stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.stop = None;
    }
}

fn new_eventfd() -> Result<OwnedFd, WpError> {
    // SAFETY: eventfd takes an initial value and flags, returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(os("eventfd"));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The handler thread: waits for write-protect faults (or the stop signal) and resolves them.
fn serve(uffd: &Uffd, stop: RawFd, t: &Tracker) {
    let mut msgs = [Msg::EMPTY; 16];
    loop {
        let mut fds = [
            libc::pollfd { fd: uffd.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop, events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: polls two live descriptors through a live array.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            give_up(uffd, t);
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        let n = match uffd.read(&mut msgs) {
            Ok(n) => n,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => continue,
            Err(_) => {
                give_up(uffd, t);
                return;
            }
        };
        for f in msgs[..n].iter().filter_map(Msg::fault) {
            if f.wp {
                resolve_wp_fault(uffd, t, f.address);
            }
        }
    }
}

fn resolve_wp_fault(uffd: &Uffd, t: &Tracker, addr: usize) {
    let Some(idx) = t.page_of(addr) else { return };
    if t.armed.load(Ordering::Acquire) {
        t.save(idx);
    }
    // Counted before the writer wakes, so the writer sees its own trap counted.
    t.traps.fetch_add(1, Ordering::AcqRel);
    // Remove the protection and wake the writer.
    if uffd.writeprotect(t.base + idx * t.page, t.page, false).is_err() {
        give_up(uffd, t);
    }
}

/// The thread cannot go on: mark the tracker broken and unregister the range, which wakes any
/// blocked writer (its write then proceeds untracked; the owner sees `broken`).
fn give_up(uffd: &Uffd, t: &Tracker) {
    t.broken.store(true, Ordering::Release);
    let _ = uffd.unregister(t.base, t.len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(pages: usize, dir: &std::path::Path) -> std::fs::File {
        let mut f = tempfile::tempfile_in(dir).expect("temp file");
        f.write_all(&vec![7u8; pages * page_size()]).expect("fill");
        f
    }

    fn exercise(detection: Detection, dir: &std::path::Path) -> Result<(), WpError> {
        use std::os::fd::AsFd;
        let f = file_of(4, dir);
        let ps = page_size();
        let mut r = WriteTracked::new(f.as_fd(), 4 * ps, detection, Tracking::Writes)?;
        r.forget_dirty();
        r.write_protect()?;
        r.data_mut()[ps + 3] = 9;
        r.data_mut()[ps + 5] = 9;
        r.data_mut()[3 * ps] = 1;
        assert_eq!(r.traps(), 2);
        let mut dirty = Vec::new();
        r.dirty_pages(&mut dirty);
        assert_eq!(dirty, vec![1, 3]);
        assert!(r.preimage(1).iter().all(|&b| b == 7));
        assert!(r.restore(1));
        assert!(!r.restore(2));
        assert_eq!(r.data()[ps + 3], 7);
        r.disarm();
        r.forget_dirty();
        r.write_protect()?;
        assert_eq!(r.dirty_count(), 0);
        r.data_mut()[ps] = 2;
        assert_eq!(r.traps(), 3);
        Ok(())
    }

    #[test]
    fn mprotect_mode_saves_preimages_once_per_page() {
        let _serial = crate::testing::serial();
        let dir = tempfile::tempdir().expect("tempdir");
        exercise(Detection::Mprotect, dir.path()).expect("mprotect mode works");
    }

    #[test]
    fn uffd_mode_on_tmpfs_or_reports_why_not() {
        let _serial = crate::testing::serial();
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("skipped: no /dev/shm");
            return;
        };
        match exercise(Detection::Uffd, dir.path()) {
            Ok(()) => {}
            Err(WpError::Unavailable(why)) => eprintln!("skipped: uffd write-protect unavailable: {why}"),
            Err(e) => panic!("uffd mode failed: {e}"),
        }
    }

    #[test]
    fn two_regions_share_one_handler() {
        let _serial = crate::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let (fa, fb) = (file_of(1, dir.path()), file_of(1, dir.path()));
        let ps = page_size();
        let mut a = WriteTracked::new(fa.as_fd(), ps, Detection::Mprotect, Tracking::Writes).expect("a");
        let mut b = WriteTracked::new(fb.as_fd(), ps, Detection::Mprotect, Tracking::Writes).expect("b");
        a.write_protect().expect("arm a");
        b.write_protect().expect("arm b");
        b.data_mut()[0] = 1;
        drop(b);
        a.data_mut()[0] = 1;
        assert_eq!(a.traps(), 1);
    }

    #[test]
    fn read_tracking_traps_reads_and_writes_and_reprotects() {
        let _serial = crate::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = file_of(4, dir.path());
        let ps = page_size();
        let mut r = WriteTracked::new(f.as_fd(), 4 * ps, Detection::Mprotect, Tracking::All).expect("region");
        // A write's first fault on a PROT_NONE page is a read where the CPU does not say which.
        let write_reads = u64::from(!segv::access_kind_known());
        r.forget_dirty();
        r.write_protect().expect("arm");
        assert_eq!(std::hint::black_box(r.data()[ps + 1]), 7, "a read sees the data");
        assert_eq!(std::hint::black_box(r.data()[ps + 9]), 7, "a second read of the page does not trap");
        assert_eq!((r.read_traps(), r.traps()), (1, 0));
        r.data_mut()[ps + 2] = 1; // read, then written: one write trap
        r.data_mut()[3 * ps] = 1; // written first
        assert_eq!((r.read_traps(), r.traps()), (1 + write_reads, 2));
        let mut dirty = Vec::new();
        r.dirty_pages(&mut dirty);
        assert_eq!(dirty, vec![1, 3]);
        assert!(r.preimage(3).iter().all(|&b| b == 7), "the pre-image was taken before the write");
        assert_eq!(r.touched_count(), 2);
        r.disarm();
        let mut scratch = Vec::new();
        assert_eq!(r.reprotect_touched(&mut scratch).expect("re-protect"), 2, "pages 1 and 3: two runs");
        assert_eq!(r.touched_count(), 0);
        // Outside a transaction a read is served (and counted), so the page was PROT_NONE again.
        assert_eq!(std::hint::black_box(r.data()[3 * ps]), 1);
        assert_eq!(r.outside_reads(), 1);
        assert_eq!(std::hint::black_box(r.data()[3 * ps + 1]), 7);
        assert_eq!(r.outside_reads(), 1, "served once: the page stays readable");
        // Arming again protects everything, including the page read outside.
        r.forget_dirty();
        r.write_protect().expect("arm");
        assert_eq!(std::hint::black_box(r.data()[3 * ps]), 1);
        assert_eq!(r.read_traps(), 2 + write_reads);
    }

    #[test]
    fn uffd_cannot_track_reads() {
        let _serial = crate::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = file_of(1, dir.path());
        let r = WriteTracked::new(f.as_fd(), page_size(), Detection::Uffd, Tracking::All);
        assert!(matches!(r, Err(WpError::Unavailable(why)) if why.contains("cannot track reads")));
    }

    #[test]
    fn bad_length_is_refused() {
        let _serial = crate::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = file_of(1, dir.path());
        assert!(matches!(
            WriteTracked::new(f.as_fd(), 100, Detection::Mprotect, Tracking::Writes),
            Err(WpError::BadLength { .. })
        ));
    }
}
