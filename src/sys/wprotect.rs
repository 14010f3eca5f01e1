//! Write detection for [`crate::rvm`]: a private (copy-on-write) mapping of a file whose pages
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
//! A [`WriteTracked`] region owns its mappings, the pre-image buffer (one page per data page,
//! allocated and faulted in when the region is made, so that saving a pre-image allocates
//! nothing and takes no page fault), the dirty set, and its detector.
//!
//! # Safety
//! - The region's part of the SIGSEGV handler is async-signal-safe: it reads atomics, copies
//!   one page between two mappings that stay mapped while the region is registered, calls
//!   `mprotect` and saves and restores `errno`. It allocates nothing and takes no lock.
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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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

/// What the fault handler needs: where the region is, where pre-images go, the dirty set.
/// Everything the handler changes is atomic; the pre-image pages are written only by the
/// handler, and only for a page it has just claimed (its dirty flag went from false to true).
struct Tracker {
    base: usize,
    len: usize,
    page: usize,
    pre: *mut u8,
    dirty: Box<[AtomicBool]>,
    list: Box<[AtomicU32]>,
    count: AtomicUsize,
    traps: AtomicU64,
    armed: AtomicBool,
    broken: AtomicBool,
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
}

// ---------------------------------------------------------------------------------------------
// The region

/// A private mapping of a file, with write detection and pre-image capture.
pub struct WriteTracked {
    detector: Detector,
    tracker: Arc<Tracker>,
    data: Mapping,
    _pre: Mapping,
    detection: Detection,
}

enum Detector {
    /// Held until the region drops (taken then, before the mappings go).
    Signal(Option<Registration>),
    Uffd(UffdWatcher),
}

impl WriteTracked {
    /// Maps the first `len` bytes of `file` privately and prepares `detection`. `len` must be a
    /// positive multiple of the page size and the file at least that long.
    pub fn new(file: BorrowedFd<'_>, len: usize, detection: Detection) -> Result<WriteTracked, WpError> {
        let page = page_size();
        if len == 0 || !len.is_multiple_of(page) || len / page > u32::MAX as usize {
            return Err(WpError::BadLength { len, page });
        }
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
        });
        let detector = match detection {
            Detection::Mprotect => Detector::Signal(Some(register_signal(&tracker)?)),
            Detection::Uffd => Detector::Uffd(UffdWatcher::start(&tracker)?),
        };
        Ok(WriteTracked { detector, tracker, data, _pre: pre, detection })
    }

    /// The detection mode.
    pub fn detection(&self) -> Detection {
        self.detection
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

    /// Write-protects every page and starts tracking: from now on the first write to each page
    /// saves its pre-image (pages already dirty keep theirs).
    pub fn write_protect(&mut self) -> Result<(), WpError> {
        self.tracker.armed.store(true, Ordering::Release);
        let r = match &self.detector {
            Detector::Signal(_) => self.data.protect(0, self.data.len, libc::PROT_READ),
            Detector::Uffd(w) => w.protect(self.data.addr(), self.data.len, true),
        };
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
    /// Resolves a write to the armed region: save the pre-image, unprotect the page. Declines
    /// (false) a fault that is not a write to a protected page, or comes while disarmed.
    fn resolve(&self, fault: &Fault) -> bool {
        if fault.code != SEGV_ACCERR {
            return false;
        }
        let Some(idx) = self.page_of(fault.addr) else { return false };
        if !self.armed.load(Ordering::Acquire) {
            return false;
        }
        // SAFETY: errno is thread-local; saving and restoring it keeps the interrupted code's
        // value whatever mprotect does.
        let errno = unsafe { *libc::__errno_location() };
        self.save(idx);
        let page = self.base + idx * self.page;
        // SAFETY: the page lies in the region's data mapping; mprotect is async-signal-safe.
        let r = unsafe { libc::mprotect(page as *mut libc::c_void, self.page, libc::PROT_READ | libc::PROT_WRITE) };
        if r == 0 {
            self.traps.fetch_add(1, Ordering::AcqRel);
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
        r == 0
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
        let mut r = WriteTracked::new(f.as_fd(), 4 * ps, detection)?;
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
        let _serial = crate::bench::testing::serial();
        let dir = tempfile::tempdir().expect("tempdir");
        exercise(Detection::Mprotect, dir.path()).expect("mprotect mode works");
    }

    #[test]
    fn uffd_mode_on_tmpfs_or_reports_why_not() {
        let _serial = crate::bench::testing::serial();
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
        let _serial = crate::bench::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let (fa, fb) = (file_of(1, dir.path()), file_of(1, dir.path()));
        let ps = page_size();
        let mut a = WriteTracked::new(fa.as_fd(), ps, Detection::Mprotect).expect("a");
        let mut b = WriteTracked::new(fb.as_fd(), ps, Detection::Mprotect).expect("b");
        a.write_protect().expect("arm a");
        b.write_protect().expect("arm b");
        b.data_mut()[0] = 1;
        drop(b);
        a.data_mut()[0] = 1;
        assert_eq!(a.traps(), 1);
    }

    #[test]
    fn bad_length_is_refused() {
        let _serial = crate::bench::testing::serial();
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = file_of(1, dir.path());
        assert!(matches!(WriteTracked::new(f.as_fd(), 100, Detection::Mprotect), Err(WpError::BadLength { .. })));
    }
}
