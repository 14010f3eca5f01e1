//! Memory per object: `space.thread`, `space.process`, `space.pipe`, `space.socketpair`,
//! `space.eventfd`, `space.epoll`, `space.timerfd`, `space.mapping`, `space.domain` and
//! `space.interface` (both with `rights` = `pkey` | `mprotect`, as the `domain.*` rows).
//!
//! Seed rows: Go! "memory per interface" (32 bytes per interface) and its other spatial rows.
//!
//! These are not timing benchmarks: **the samples are bytes per object, not nanoseconds**
//! (the row's `unit` is `bytes`). One round creates N objects (10,000 descriptor objects or
//! mappings, 1,000 threads, 200 processes), reads the counters, destroys every object and
//! checks they are gone. N is large because the slab allocator keeps a few hundred freed
//! objects of each cache for reuse, which a round takes before the `Slab` counter grows, so
//! small rounds under-count. A first round warms caches (the descriptor table's growth, slab
//! caches) and is discarded; then rounds repeat until the budget is spent (at least
//! [`MIN_ROUNDS`], [`MIN_ROUNDS_SHORT`] with `--quick`; at most [`MAX_ROUNDS`]). Each
//! round's figure, per object, for:
//!
//! - **user**: the rise of this process's resident memory (`VmRSS`, `/proc/self/status`),
//!   plus, for processes, each child's private memory (`Private_Clean + Private_Dirty` of
//!   `/proc/<pid>/smaps_rollup`); the vectors holding the objects are allocated and touched
//!   before the first reading, so they do not count;
//! - **slab**, **kernel_stack**, **page_tables** (`Slab`, `KernelStack`, `PageTables` of
//!   `/proc/meminfo`): the mean of the rise when the objects are created and the fall when
//!   they are destroyed, so that other activity moving these machine-wide counters at a
//!   steady rate cancels out.
//!
//! The sample is their sum; each is also a breakdown stage. **`space.interface` is counted
//! directly where `/proc/slabinfo` is readable (root)**: its stages are then `key_table` (the
//! table's allocation for the round's entries), `vma` (this process's own VMAs, counted in
//! `/proc/self/maps`, × the `vm_area_struct` object's size from slabinfo) and `page_tables`
//! (this process's `VmPTE`), and `observed.counted` is `slabinfo`; the share of the maple tree
//! that indexes the VMAs is only seen machine-wide (`maple_node` objects in use, the mean of
//! rise and fall), moves by ±80 bytes per object between rounds with other processes and
//! late RCU frees, and is reported beside the total (`observed.maple_tree_bytes_machine_wide`),
//! not in it;
//! unprivileged, it falls back to the counters above and says so (`meminfo`). From
//! machine-wide counters it read 102, 330, 509 and 548 bytes in four runs and failed its own
//! spread check in two; counted, its rounds agree to a byte. `Slab` grows in whole slab pages
//! and objects freed after an RCU grace period leave late, so before each reading osprim
//! waits until `Slab` holds still (10–100 ms); the median of the rounds is the figure, and a
//! row whose middle half of rounds (interquartile range) spreads beyond ±[`SPREAD_LIMIT`] of
//! the median fails its spread check (and is flagged).
//!
//! **Validation.** While they exist the objects are visible (N more descriptors, threads,
//! sleeping children or mappings); after each round every one is gone again (descriptors,
//! threads and mappings back to their count before, every child reaped); the spread check
//! above. proc(5), pipe(2), socketpair(2), eventfd(2), epoll_create(2), timerfd_create(2).

#[path = "space_proc.rs"]
mod procfs;

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::{Samples, StopReason};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use procfs::{KernelMem, Snapshot};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sys::{fault::Region, process::Child};

/// Fewest rounds kept.
pub const MIN_ROUNDS: usize = 5;
/// Fewest rounds kept with a budget under [`SHORT_BUDGET_S`] (`--quick`).
pub const MIN_ROUNDS_SHORT: usize = 3;
/// A budget (s) below which [`MIN_ROUNDS_SHORT`] applies.
pub const SHORT_BUDGET_S: f64 = 0.5;
/// Most rounds kept.
pub const MAX_ROUNDS: usize = 10;
/// The rounds' quartiles must lie within this share of the median (0.10 = ±10 %).
pub const SPREAD_LIMIT: f64 = 0.10;
/// Before each reading, wait at least this long, then until `Slab` holds still for one
/// step, at most [`SETTLE_MAX`]: objects freed after an RCU grace period, and exiting
/// threads, finish going.
const SETTLE_MIN: Duration = Duration::from_millis(10);
/// How long `Slab` must hold still.
const SETTLE_STEP: Duration = Duration::from_millis(5);
/// The longest wait before a reading.
const SETTLE_MAX: Duration = Duration::from_millis(100);
/// Descriptors kept free for everything else while objects are open.
const FD_MARGIN: u64 = 64;

/// The kind of object a `space.*` row creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Thread,
    Process,
    Pipe,
    Socketpair,
    Eventfd,
    Epoll,
    Timerfd,
    Mapping,
    Domain(domain::Rights),
    Interface(domain::Rights),
}

impl Kind {
    /// Objects per round: enough that the slab allocator's cached free objects (a few
    /// hundred per cache) are a small share of those created, where the limits allow.
    fn planned(self) -> usize {
        match self {
            Kind::Process => 200,
            Kind::Thread => 1000,
            _ => 10_000,
        }
    }

    fn fds_each(self) -> u64 {
        match self {
            Kind::Pipe | Kind::Socketpair => 2,
            Kind::Eventfd | Kind::Epoll | Kind::Timerfd => 1,
            Kind::Thread | Kind::Process | Kind::Mapping | Kind::Domain(_) | Kind::Interface(_) => 0,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Thread => {
                "a std::thread (default 2 MiB stack, mapped but mostly untouched) blocked on a condition variable; \
                 user memory includes its touched stack and std's bookkeeping"
            }
            Kind::Process => {
                "a fork of osprim that pauses (dies with osprim); user memory is each child's private memory \
                 (smaps_rollup: its own writes, and the old copies of pages osprim wrote after forking it) plus \
                 osprim's growth; fork copies the page tables of osprim's anonymous memory, so page_tables grows \
                 with osprim's own size"
            }
            Kind::Pipe => "a pipe (pipe2: two descriptors); no buffer page is allocated until data is written",
            Kind::Socketpair => "a connected pair of AF_UNIX stream sockets (two descriptors), nothing sent",
            Kind::Eventfd => "an eventfd (a 64-bit counter behind a descriptor)",
            Kind::Epoll => "an epoll instance with nothing registered",
            Kind::Timerfd => "a timerfd on CLOCK_MONOTONIC, not armed",
            Kind::Mapping => {
                "a one-page anonymous mapping, never touched (so no page and usually no page table), with an unmapped \
                 page on each side so that it is a VMA of its own"
            }
            Kind::Domain(domain::Rights::Pkey) => {
                "a protection-key domain's data as the library lays it out: one page between two read-only guard \
                 pages (a VMA of its own; neighbouring domains' guards merge), written once, tagged by pkey_mprotect \
                 with a protection key (the parking key of key \
                 virtualisation: 10,000 domains share the 15 hardware keys, and a key itself is a bit in a bitmap); \
                 no private stack"
            }
            Kind::Domain(domain::Rights::Mprotect) => {
                "an mprotect-mode domain's data as the library lays it out: one page between two read-only guard \
                 pages (a VMA of its own; neighbouring domains' guards merge), written once, then closed (mprotect \
                 PROT_NONE) as between calls; no private stack"
            }
            Kind::Interface(domain::Rights::Pkey) => {
                "one more interface's protection bookkeeping, not its data: a key-table entry (the library's \
                 Interface record: domain and type) and a protected region of its own, laid out as a domain's \
                 (a VMA between read-only guard pages), tagged with the parking key, never touched, so no data page \
                 and no page-table entry"
            }
            Kind::Interface(domain::Rights::Mprotect) => {
                "one more interface's protection bookkeeping, not its data: a key-table entry (the library's \
                 Interface record: domain and type) and a protected region of its own, laid out as a domain's \
                 (a VMA between read-only guard pages), closed PROT_NONE, never touched, so no data page and no \
                 page-table entry"
            }
        }
    }
}

/// Threads that wait until released; released and joined on drop.
struct Parked {
    gate: Arc<Gate>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    started: AtomicUsize,
}

impl Gate {
    fn wait(&self) {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        while !*open {
            open = self.cv.wait(open).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Parked {
    /// Spawns up to `n` threads and waits until all have started; returns why there are
    /// fewer, if there are.
    fn spawn(&mut self, n: usize) -> Option<String> {
        let mut short = None;
        // A thread's stack (Rust's default 2 MiB, or RUST_MIN_STACK) and room for the signal
        // stack and guard pages its start maps.
        let stack = std::env::var("RUST_MIN_STACK").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(2 << 20);
        for _ in 0..n {
            if !sys::reserve::room_for(stack + (1 << 20)) {
                short = Some(format!(
                    "thread creation failed after {}: no address space left for another thread's stack",
                    self.handles.len()
                ));
                break;
            }
            let gate = Arc::clone(&self.gate);
            match std::thread::Builder::new().spawn(move || gate.wait()) {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    short = Some(format!("thread creation failed after {}: {e}", self.handles.len()));
                    break;
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.gate.started.load(Ordering::SeqCst) < self.handles.len() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        short
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        *self.gate.open.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.gate.cv.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// An empty vector with room for `n` elements whose memory is already touched, so that
/// filling it does not count as the objects' user memory.
fn touched_vec<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.spare_capacity_mut().iter_mut().for_each(|slot| *slot = std::mem::MaybeUninit::zeroed());
    v
}

/// The objects of one round; dropping them destroys them all.
enum Objects {
    Fds(Vec<OwnedFd>),
    Threads(Parked),
    Children(Vec<Child>),
    Mappings(Vec<Region>),
    /// Domains' data pages and the key they carry (freed after the pages are unmapped).
    Domains(Vec<sys::fault::Isolated>, Option<domain::Pkey>),
    /// Interfaces: their key-table entries (not touched before the first reading: they are
    /// what is measured), their regions and the key those carry.
    Interfaces(Vec<domain::table::Interface>, Vec<sys::fault::Isolated>, Option<domain::Pkey>),
}

impl Objects {
    /// Empty holders with room for `n` objects of `kind`, made before the first reading.
    fn with_room(kind: Kind, n: usize) -> Objects {
        match kind {
            Kind::Thread => Objects::Threads(Parked { gate: Arc::new(Gate::default()), handles: touched_vec(n) }),
            Kind::Process => Objects::Children(touched_vec(n)),
            Kind::Mapping => Objects::Mappings(touched_vec(n)),
            Kind::Domain(_) => Objects::Domains(touched_vec(n), None),
            Kind::Interface(_) => {
                let regions = touched_vec(n);
                // The entries' memory fresh (not pages the last round touched), so that
                // writing them shows in the resident set.
                sys::fault::trim_heap();
                Objects::Interfaces(Vec::with_capacity(n), regions, None)
            }
            fd => Objects::Fds(touched_vec(n * fd.fds_each() as usize)),
        }
    }

    /// Creates up to `n` objects of `kind`; returns why there are fewer, if there are.
    fn fill(&mut self, kind: Kind, n: usize) -> Option<String> {
        match self {
            Objects::Threads(p) => p.spawn(n),
            Objects::Children(c) => {
                let short = fill(c, n, |v| {
                    v.push(Child::fork_paused()?);
                    Ok(())
                })
                .map(|e| format!("fork: {e}"));
                wait_sleeping(c);
                short
            }
            Objects::Mappings(m) => Region::separate_pages(n, m).err().map(|e| format!("mmap: {e}")),
            Objects::Fds(fds) => fill(fds, n, |v| open_fds(kind, v)),
            Objects::Domains(m, key) => fill_domains(kind, m, key, n).err(),
            Objects::Interfaces(t, m, key) => fill_interfaces(kind, t, m, key, n).err(),
        }
    }

    /// Objects held (a pipe or socket pair is one object of two descriptors).
    fn count(&self, kind: Kind) -> usize {
        match self {
            Objects::Fds(v) => v.len() / kind.fds_each().max(1) as usize,
            Objects::Threads(p) => p.handles.len(),
            Objects::Children(c) => c.len(),
            Objects::Mappings(m) => m.len(),
            Objects::Domains(m, _) => m.len(),
            Objects::Interfaces(t, m, _) => t.len().min(m.len()),
        }
    }

    /// Whether every child (processes only) sleeps in `pause` now.
    fn children_asleep(&self) -> bool {
        match self {
            Objects::Children(c) => c.iter().all(|c| c.wait_asleep(Duration::ZERO)),
            _ => true,
        }
    }

    /// Private memory of the children (processes only), in bytes.
    fn children_private_bytes(&self) -> Result<u64, String> {
        match self {
            Objects::Children(c) => c.iter().map(|c| procfs::child_private_bytes(c.pid())).sum(),
            _ => Ok(0),
        }
    }

    /// Destroys everything; reports a child that could not be reaped.
    fn destroy(self) -> Result<(), String> {
        if let Objects::Children(children) = self {
            for c in children {
                c.kill_and_reap().ok().map_err(|e| format!("reaping a child: {e}"))?;
            }
        }
        Ok(())
    }
}

/// Calls `make` (which adds one object to `v`) up to `n` times, stopping at the first error.
fn fill<T>(v: &mut Vec<T>, n: usize, mut make: impl FnMut(&mut Vec<T>) -> std::io::Result<()>) -> Option<String> {
    for _ in 0..n {
        if let Err(e) = make(v) {
            return Some(e.to_string());
        }
    }
    None
}

/// Opens one descriptor-backed object (one or two descriptors) into `out`.
fn open_fds(kind: Kind, out: &mut Vec<OwnedFd>) -> std::io::Result<()> {
    use nix::sys::{epoll, eventfd, socket, timerfd};
    match kind {
        Kind::Pipe => {
            let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            out.extend([r, w]);
        }
        Kind::Socketpair => {
            let (a, b) = socket::socketpair(
                socket::AddressFamily::Unix,
                socket::SockType::Stream,
                None,
                socket::SockFlag::SOCK_CLOEXEC,
            )?;
            out.extend([a, b]);
        }
        Kind::Eventfd => out.push(eventfd::EventFd::from_value_and_flags(0, eventfd::EfdFlags::EFD_CLOEXEC)?.into()),
        Kind::Epoll => out.push(epoll::Epoll::new(epoll::EpollCreateFlags::EPOLL_CLOEXEC)?.0),
        Kind::Timerfd => {
            out.push(timerfd::TimerFd::new(timerfd::ClockId::CLOCK_MONOTONIC, timerfd::TimerFlags::TFD_CLOEXEC)?.into())
        }
        Kind::Thread | Kind::Process | Kind::Mapping | Kind::Domain(_) | Kind::Interface(_) => {}
    }
    Ok(())
}

/// Protects `r` as a closed domain region of `kind`'s mechanism: tagged with `key` (keys) or
/// `PROT_NONE` (mprotect).
fn close_region(kind: Kind, r: &Region, key: Option<u32>) -> Result<(), String> {
    match (kind, key) {
        (Kind::Domain(domain::Rights::Pkey) | Kind::Interface(domain::Rights::Pkey), Some(k)) => {
            domain::pkey_mprotect(r, k).map_err(|e| format!("pkey_mprotect: {e}"))
        }
        _ => r.protect(0, 1, sys::fault::Prot::None).map_err(|e| format!("mprotect: {e}")),
    }
}

/// The key a keyed row's regions carry (allocated once per round), or none.
fn row_key(kind: Kind, key: &mut Option<domain::Pkey>) -> Result<Option<u32>, String> {
    if !matches!(kind, Kind::Domain(domain::Rights::Pkey) | Kind::Interface(domain::Rights::Pkey)) {
        return Ok(None);
    }
    let k = domain::Pkey::alloc().map_err(|e| format!("pkey_alloc: {e}"))?;
    let id = k.id();
    *key = Some(k);
    Ok(Some(id))
}

/// Makes `n` regions as the domain library lays a domain's data out (one page between two
/// read-only guard pages, `Region::anon_isolated`), each written once if `write` (a domain's
/// data) or never touched (an interface's), then closed (tagged with one protection key, or
/// `PROT_NONE`).
fn fill_regions(
    kind: Kind,
    m: &mut Vec<sys::fault::Isolated>,
    key: &mut Option<domain::Pkey>,
    n: usize,
    write: bool,
) -> Result<(), String> {
    let id = row_key(kind, key)?;
    for _ in 0..n {
        let r = Region::anon_isolated(domain::DATA_PAGES).map_err(|e| format!("mmap: {e}"))?;
        if write {
            r.region().write(0, 1);
        }
        close_region(kind, r.region(), id)?;
        m.push(r);
    }
    Ok(())
}

/// Makes `n` domains' data pages ([`fill_regions`], written).
fn fill_domains(
    kind: Kind,
    m: &mut Vec<sys::fault::Isolated>,
    key: &mut Option<domain::Pkey>,
    n: usize,
) -> Result<(), String> {
    fill_regions(kind, m, key, n, true)
}

/// Makes `n` interfaces: a closed, never touched region each ([`fill_regions`]) and a
/// key-table entry each.
fn fill_interfaces(
    kind: Kind,
    t: &mut Vec<domain::table::Interface>,
    m: &mut Vec<sys::fault::Isolated>,
    key: &mut Option<domain::Pkey>,
    n: usize,
) -> Result<(), String> {
    let first = m.len();
    let made = fill_regions(kind, m, key, n, false);
    t.extend((first..m.len()).map(|i| domain::table::Interface { domain: i as u32, type_id: i as u32 }));
    made
}

/// Waits (up to 2 s in all) until every child sleeps in `pause`, so its memory is what it
/// keeps.
fn wait_sleeping(children: &[Child]) {
    let deadline = Instant::now() + Duration::from_secs(2);
    for c in children {
        c.wait_asleep(deadline.saturating_duration_since(Instant::now()));
    }
}

/// The soft descriptor limit raised for a benchmark, put back on drop.
struct FdLimit {
    restore: Option<(u64, u64)>,
}

impl Drop for FdLimit {
    fn drop(&mut self) {
        if let Some((soft, hard)) = self.restore {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, soft, hard);
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` (up to the hard limit) so `extra` more descriptors fit;
/// returns the guard, how many more fit, and a note when the limit was changed.
fn make_room(open: u64, extra: u64) -> (FdLimit, u64, Option<String>) {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return (FdLimit { restore: None }, extra, None);
    };
    let need = open + extra + FD_MARGIN;
    if soft >= need {
        return (FdLimit { restore: None }, extra, None);
    }
    let raised = need.min(hard);
    if raised <= soft {
        return (FdLimit { restore: None }, soft.saturating_sub(open + FD_MARGIN), None);
    }
    let guard = match setrlimit(Resource::RLIMIT_NOFILE, raised, hard) {
        Ok(()) => FdLimit { restore: Some((soft, hard)) },
        Err(_) => FdLimit { restore: None },
    };
    let limit = if guard.restore.is_some() { raised } else { soft };
    let note = guard.restore.map(|_| format!("soft RLIMIT_NOFILE raised from {soft} to {raised} for this row"));
    (guard, limit.saturating_sub(open + FD_MARGIN), note)
}

/// One round's figures, bytes per object.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Round {
    user: f64,
    slab: f64,
    kernel_stack: f64,
    page_tables: f64,
    /// Address-space growth (`VmSize`), for the notes.
    virt: f64,
    /// Objects created.
    made: usize,
    /// Whether the objects were visible while alive (descriptors, threads, mappings).
    visible: bool,
    /// Whether everything was gone afterwards.
    cleaned: bool,
    /// An interface's bookkeeping counted directly (root), in place of the four above.
    counted: Option<Counted>,
}

/// One interface's protection bookkeeping counted directly, bytes: its key-table entry (the
/// table's allocation for the round's interfaces, divided among them), its mappings (this
/// process's own count of VMAs, `/proc/self/maps`, × the `vm_area_struct` object's size from
/// `/proc/slabinfo`, and its `vma_lock` where the kernel keeps one apart) and its page tables
/// (this process's `VmPTE`); beside them, not in the total, its share of the maple tree that
/// indexes them (`maple_node` objects in use, `/proc/slabinfo`: machine-wide, the mean of the
/// rise and the fall).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counted {
    key_table: f64,
    vma: f64,
    maple_tree: f64,
    page_tables: f64,
}

impl Counted {
    fn total(&self) -> f64 {
        // The maple tree's share is a machine-wide count (other processes' mappings, and nodes
        // freed an RCU grace period late, move it by ±80 bytes per object between rounds): it
        // is reported beside the total, not in it.
        self.key_table + self.vma + self.page_tables
    }

    /// From the readings before, during and after, for `n` interfaces whose table took
    /// `table_bytes`; `None` unless `/proc/slabinfo` was readable at all three (root) and shows
    /// `vm_area_struct`.
    fn of(b: &Snapshot, d: &Snapshot, a: &Snapshot, n: usize, table_bytes: u64) -> Option<Counted> {
        let (sb, sd, sa) = (b.slabs.as_ref()?, d.slabs.as_ref()?, a.slabs.as_ref()?);
        let size = |name: &str| sd.get(name).map_or(0, |c| c.object_bytes) as f64;
        let vma_bytes = size("vm_area_struct") + size("vma_lock");
        if size("vm_area_struct") == 0.0 {
            return None;
        }
        let per = |x: f64| x / n.max(1) as f64;
        let active = |s: &std::collections::BTreeMap<String, procfs::SlabCache>, name: &str| {
            s.get(name).map_or(0, |c| c.active) as f64
        };
        let tree_rise = active(sd, "maple_node") - active(sb, "maple_node");
        let tree_fall = active(sd, "maple_node") - active(sa, "maple_node");
        Some(Counted {
            key_table: per(table_bytes as f64),
            vma: per((d.vmas as f64 - b.vmas as f64) * vma_bytes),
            maple_tree: per((tree_rise + tree_fall) / 2.0 * size("maple_node")),
            page_tables: per((d.user.pte_kb as f64 - b.user.pte_kb as f64) * 1024.0),
        })
    }
}

impl Round {
    fn total(&self) -> f64 {
        match self.counted {
            Some(c) => c.total(),
            None => self.user + self.slab + self.kernel_stack + self.page_tables,
        }
    }
}

/// Waits for the kernel's deferred frees to finish (see [`SETTLE_MIN`]).
fn settle() {
    let began = Instant::now();
    std::thread::sleep(SETTLE_MIN);
    let mut last = procfs::slab_kb();
    while began.elapsed() < SETTLE_MAX {
        std::thread::sleep(SETTLE_STEP);
        let now = procfs::slab_kb();
        if now == last {
            return;
        }
        last = now;
    }
}

/// kB counter growth per object, in bytes.
fn per_object(after_kb: u64, before_kb: u64, made: usize) -> f64 {
    (after_kb as f64 - before_kb as f64) * 1024.0 / made.max(1) as f64
}

/// Whether the live objects show in the counters they should.
fn visible(kind: Kind, before: &Snapshot, during: &Snapshot, made: usize) -> bool {
    let grew = |a: u64, b: u64| a.saturating_sub(b) >= made as u64;
    match kind {
        Kind::Thread => grew(during.user.threads, before.user.threads),
        Kind::Mapping | Kind::Domain(_) | Kind::Interface(_) => grew(during.vmas, before.vmas),
        Kind::Process => true, // every child asleep in `pause`: see `Objects::children_asleep`
        fd => during.fds.saturating_sub(before.fds) >= made as u64 * fd.fds_each(),
    }
}

/// Whether everything is gone: descriptors, threads and mappings back to their count before.
fn cleaned(before: &Snapshot, end: &Snapshot) -> bool {
    end.fds <= before.fds && end.user.threads <= before.user.threads && end.vmas <= before.vmas
}

/// The readings of one round.
struct Raw {
    /// Before the objects were created.
    before: Snapshot,
    /// While they existed.
    during: Snapshot,
    /// Objects created.
    made: usize,
    /// The children's private memory (processes), bytes.
    children: u64,
    /// Whether the objects showed while they existed.
    visible: bool,
    /// Interfaces only: the bytes their key table's entries took (0 otherwise).
    table_bytes: u64,
    /// Whether the row counts directly where it can (interfaces).
    count_directly: bool,
}

impl Raw {
    /// The round's figures, given the reading `after` the objects were destroyed (the next
    /// round's first reading, or a final one). Kernel counters use the mean of the rise on
    /// creation (during − before) and the fall on destruction (during − after), so that other
    /// activity changing them at a steady rate cancels out; user memory (this process's own)
    /// uses the rise.
    fn figures(&self, after: &Snapshot) -> Round {
        let (b, d, a, n) = (&self.before, &self.during, after, self.made);
        let kernel = |f: fn(&KernelMem) -> u64| {
            (per_object(f(&d.kernel), f(&b.kernel), n) + per_object(f(&d.kernel), f(&a.kernel), n)) / 2.0
        };
        Round {
            user: per_object(d.user.rss_kb, b.user.rss_kb, n) + self.children as f64 / n.max(1) as f64,
            slab: kernel(|k| k.slab_kb),
            kernel_stack: kernel(|k| k.kernel_stack_kb),
            page_tables: kernel(|k| k.page_tables_kb),
            virt: per_object(d.user.size_kb, b.user.size_kb, n),
            made: n,
            visible: self.visible,
            cleaned: cleaned(b, a),
            counted: if self.count_directly { Counted::of(b, d, a, n, self.table_bytes) } else { None },
        }
    }
}

/// One round: create `n`, read, destroy. Returns its readings and why fewer than `n` objects
/// were made, if so.
fn round(kind: Kind, n: usize) -> Result<(Raw, Option<String>), String> {
    let mut objects = Objects::with_room(kind, n);
    settle();
    let before = Snapshot::take()?;
    let short = objects.fill(kind, n);
    let made = objects.count(kind);
    if made == 0 {
        return Err(short.unwrap_or_else(|| "no object could be created".into()));
    }
    settle(); // frees the creation deferred (RCU) land before, not between, readings
    let during = Snapshot::take()?;
    let objects_asleep = objects.children_asleep();
    let table_bytes = match &objects {
        Objects::Interfaces(t, _, _) => (t.capacity() * std::mem::size_of::<domain::table::Interface>()) as u64,
        _ => 0,
    };
    let children = objects.children_private_bytes();
    let destroyed = objects.destroy();
    let children = children?;
    destroyed?;
    let visible = visible(kind, &before, &during, made) && objects_asleep;
    let count_directly = matches!(kind, Kind::Interface(_));
    Ok((Raw { before, during, made, children, visible, table_bytes, count_directly }, short))
}

/// The warm-up round and the kept rounds. Each round's reading after destruction is the next
/// round's first reading (taken after the same wait), or a final one.
fn run_rounds(ctx: &Ctx, kind: Kind, n: &mut usize, notes: &mut Vec<String>) -> Result<Rounds, String> {
    let (warm, short) = round(kind, *n)?;
    if let Some(why) = short {
        notes.push(format!("{} objects per round instead of {n}: {why}", warm.made));
        *n = warm.made;
    }
    let began = Instant::now();
    let budget = Duration::from_secs_f64(ctx.cfg().budget_s.max(0.0));
    let mut out = Rounds { warmup: warm.made, kept: Vec::with_capacity(MAX_ROUNDS), stop: StopReason::BudgetSpent };
    let min_rounds = if ctx.cfg().budget_s < SHORT_BUDGET_S { MIN_ROUNDS_SHORT } else { MIN_ROUNDS };
    let mut pending: Option<Raw> = None;
    loop {
        let taken = out.kept.len() + usize::from(pending.is_some());
        if taken >= MAX_ROUNDS || (taken >= min_rounds && began.elapsed() >= budget) {
            break;
        }
        if ctx.interrupted() {
            out.stop = StopReason::Interrupted;
            break;
        }
        let (raw, _) = round(kind, *n)?;
        if let Some(prev) = pending.take() {
            out.kept.push(prev.figures(&raw.before));
        }
        pending = Some(raw);
    }
    if let Some(last) = pending {
        settle();
        out.kept.push(last.figures(&Snapshot::take()?));
    }
    if out.kept.len() == MAX_ROUNDS {
        out.stop = StopReason::FixedCount;
    }
    Ok(out)
}

/// What [`run_rounds`] measured.
struct Rounds {
    /// Objects of the discarded warm-up round.
    warmup: usize,
    kept: Vec<Round>,
    stop: StopReason,
}

/// The spread check: the middle half of the rounds (their interquartile range) lies within
/// ±`limit` of the median. One disturbed round does not fail it; a broadly noisy row does.
fn spread_check(totals: &[f64], limit: f64) -> Check {
    let name = format!(
        "rounds agree: interquartile range within ±{:.0} % of the median (kernel counters are machine-wide)",
        limit * 100.0
    );
    if totals.len() < 2 {
        return Check::impossible(name, "fewer than 2 rounds");
    }
    let sorted = sorted(totals);
    let pct = |p| stats::percentile(&sorted, p);
    let (q1, med, q3) = (pct(25.0), pct(50.0), pct(75.0));
    let rel = |q: f64| if med.abs() > 0.0 { (q - med) / med.abs() } else { f64::INFINITY };
    let (low, high) = (rel(q1), rel(q3));
    Check::new(
        name,
        format!("quartiles within ±{:.0} %", limit * 100.0),
        format!(
            "quartiles {:+.1} % / {:+.1} % ({} rounds, {:.0}–{:.0} bytes, median {med:.0})",
            low * 100.0,
            high * 100.0,
            totals.len(),
            sorted[0],
            sorted[sorted.len() - 1]
        ),
        low >= -limit && high <= limit,
    )
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

fn median(v: &[f64]) -> f64 {
    stats::median(&sorted(v))
}

/// How many objects fit, raising the descriptor limit where needed.
fn plan(kind: Kind) -> Result<(usize, FdLimit, Vec<String>), NotMeasured> {
    let planned = kind.planned();
    let mut notes = Vec::new();
    if kind.fds_each() == 0 {
        return Ok((planned, FdLimit { restore: None }, notes));
    }
    let open = Snapshot::take().map_err(NotMeasured::Failed)?.fds;
    let (limit, room, note) = make_room(open, planned as u64 * kind.fds_each());
    notes.extend(note);
    let n = planned.min((room / kind.fds_each()) as usize);
    if n < planned {
        notes.push(format!("{n} objects per round instead of {planned}: RLIMIT_NOFILE's hard limit allows no more"));
    }
    if n == 0 {
        return Err(NotMeasured::Skipped("RLIMIT_NOFILE leaves no room for the objects".into()));
    }
    Ok((n, limit, notes))
}

/// Runs the rounds of one `space.*` row.
fn run_space(ctx: &Ctx, kind: Kind) -> Result<Measured, NotMeasured> {
    let (mut n, _limit, mut notes) = plan(kind)?;
    let rounds = run_rounds(ctx, kind, &mut n, &mut notes).map_err(NotMeasured::Failed)?;
    Ok(measured(kind, n, rounds.warmup, &rounds.kept, rounds.stop, notes))
}

fn measured(kind: Kind, n: usize, warmup: usize, rounds: &[Round], stop: StopReason, notes: Vec<String>) -> Measured {
    let totals: Vec<f64> = rounds.iter().map(Round::total).collect();
    let samples = Samples {
        per_op_ns: totals.clone(),
        iterations_per_sample: n as u64,
        warmup_iterations: warmup as u64,
        stop: Some(stop),
        ..Samples::default()
    };
    let shown = rounds.iter().filter(|r| r.visible).count();
    let clean = rounds.iter().filter(|r| r.cleaned).count();
    let checks = vec![
        Check::new(
            "the objects existed (descriptors, threads, mappings or sleeping children seen)",
            format!("all {} rounds", rounds.len()),
            format!("{shown} of {} rounds", rounds.len()),
            shown == rounds.len() && !rounds.is_empty(),
        ),
        Check::new(
            "every object was destroyed (counts back to before, children reaped)",
            format!("all {} rounds", rounds.len()),
            format!("{clean} of {} rounds", rounds.len()),
            clean == rounds.len() && !rounds.is_empty(),
        ),
        spread_check(&totals, SPREAD_LIMIT),
    ];
    let stage = |f: fn(&Round) -> f64| rounds.iter().map(f).collect::<Vec<f64>>();
    let mut m = Measured::new(samples, checks);
    let counted: Option<Vec<Counted>> = rounds.iter().map(|r| r.counted).collect();
    match counted.as_deref() {
        Some(c) if !c.is_empty() => {
            let stage = |f: fn(&Counted) -> f64| c.iter().map(f).collect::<Vec<f64>>();
            m.breakdown = vec![
                ("key_table".into(), stage(|c| c.key_table)),
                ("vma".into(), stage(|c| c.vma)),
                ("page_tables".into(), stage(|c| c.page_tables)),
            ];
            let mut tree = stage(|c| c.maple_tree);
            tree.sort_by(f64::total_cmp);
            m.observed.insert("maple_tree_bytes_machine_wide".into(), serde_json::json!(stats::median(&tree)));
            m.observed.insert("counted".into(), "slabinfo".into());
            m.notes.push(
                "counted directly (root): the key table's allocation for the round's interfaces; this process's own \
                 VMAs (/proc/self/maps) × the size of a vm_area_struct (/proc/slabinfo, with its vma_lock where the \
                 kernel keeps one apart); this process's page tables (VmPTE). Never touched, an interface has no page \
                 and no anon_vma. Not in the total: its share of the maple tree that indexes the VMAs, which only a \
                 machine-wide count shows (maple_node objects in use, /proc/slabinfo, the mean of the rise and the \
                 fall: observed.maple_tree_bytes_machine_wide, the rounds' median), moved by other processes and by \
                 nodes freed an RCU grace period late"
                    .into(),
            );
        }
        _ => {
            m.breakdown = vec![
                ("user".into(), stage(|r| r.user)),
                ("slab".into(), stage(|r| r.slab)),
                ("kernel_stack".into(), stage(|r| r.kernel_stack)),
                ("page_tables".into(), stage(|r| r.page_tables)),
            ];
            if matches!(kind, Kind::Interface(_)) {
                m.observed.insert("counted".into(), "meminfo".into());
                m.notes.push(
                    "not counted directly: /proc/slabinfo is readable by root only, so the bytes are machine-wide \
                     counters' changes (VmRSS, Slab, KernelStack, PageTables), which other activity moves"
                        .into(),
                );
            }
        }
    }
    m.unit = model::Unit::Bytes;
    m.params.insert("objects".into(), n.into());
    m.notes.push(format!(
        "samples are BYTES per object, not ns: {} rounds of {n} objects created, counted, destroyed; one object is {}",
        rounds.len(),
        kind.what()
    ));
    m.notes.push(format!(
        "address space per object (VmSize growth, not counted above): median {:.0} bytes",
        median(&stage(|r| r.virt))
    ));
    m.notes.extend(notes);
    m
}

macro_rules! space_benchmark {
    ($name:ident, $kind:expr, $id:literal, $about:literal) => {
        #[doc = concat!("`", $id, "`: ", $about, ".")]
        pub struct $name;

        impl Benchmark for $name {
            fn id(&self) -> &'static str {
                $id
            }
            fn about(&self) -> &'static str {
                $about
            }
            fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
                run_space(ctx, $kind)
            }
            fn single_round(&self) -> bool {
                true
            }
        }
    };
}

/// `space.domain` (`Space(false)`): memory per protection domain; `space.interface`
/// (`Space(true)`): the protection bookkeeping one more interface costs.
pub struct Domain(pub bool);

impl Benchmark for Domain {
    fn id(&self) -> &'static str {
        if self.0 { "space.interface" } else { "space.domain" }
    }
    fn about(&self) -> &'static str {
        if self.0 {
            "memory per interface: only its protection bookkeeping (key-table entry, VMA, page-table share), not \
             the component's data page (bytes; user + kernel)"
        } else {
            "memory per protection domain: its data page's VMA, page and page tables (bytes; user + kernel)"
        }
    }
    fn available(&self) -> Result<(), String> {
        if domain::Rights::here().is_empty() {
            return Err("no protection domains here".into());
        }
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::domain::with_rights(vec![Params::new()])
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let how = super::domain::rights_of(params)?;
        let mut m = run_space(ctx, if self.0 { Kind::Interface(how) } else { Kind::Domain(how) })?;
        if self.0 {
            m.notes.push(format!(
                "a key-table entry is {} bytes (user memory: the table's pages, fresh each round)",
                std::mem::size_of::<domain::table::Interface>()
            ));
        }
        m.notes.extend(super::domain::no_keys_note(how));
        Ok(m)
    }
    fn single_round(&self) -> bool {
        true
    }
}

space_benchmark!(Thread, Kind::Thread, "space.thread", "memory per thread (bytes; user + kernel)");
space_benchmark!(Process, Kind::Process, "space.process", "memory per process, a paused fork (bytes; user + kernel)");
space_benchmark!(Pipe, Kind::Pipe, "space.pipe", "memory per pipe (bytes; user + kernel)");
space_benchmark!(
    Socketpair,
    Kind::Socketpair,
    "space.socketpair",
    "memory per AF_UNIX socket pair (bytes; user + kernel)"
);
space_benchmark!(Eventfd, Kind::Eventfd, "space.eventfd", "memory per eventfd (bytes; user + kernel)");
space_benchmark!(Epoll, Kind::Epoll, "space.epoll", "memory per epoll instance (bytes; user + kernel)");
space_benchmark!(Timerfd, Kind::Timerfd, "space.timerfd", "memory per timerfd (bytes; user + kernel)");
space_benchmark!(Mapping, Kind::Mapping, "space.mapping", "memory per memory mapping (VMA) (bytes; user + kernel)");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::tests::{run_quick, serial};

    #[test]
    fn spread_check_flags_wide_rounds_not_one_odd_round() {
        assert_eq!(spread_check(&[100.0, 105.0, 95.0, 100.0, 102.0], 0.10).ok, Some(true));
        assert_eq!(spread_check(&[100.0, 101.0, 99.0, 100.0, 180.0], 0.10).ok, Some(true), "one odd round");
        let wide = spread_check(&[100.0, 150.0, 60.0, 140.0, 70.0], 0.10);
        assert_eq!(wide.ok, Some(false));
        assert!(wide.observed.contains("-30.0 % / +40.0 %"), "{}", wide.observed);
        assert_eq!(spread_check(&[100.0], 0.10).ok, None);
        assert_eq!(spread_check(&[0.0, 0.0, 0.0], 0.10).ok, Some(false), "no growth seen cannot be trusted");
    }

    #[test]
    fn per_object_handles_shrinking_counters() {
        assert_eq!(per_object(2000, 1000, 1000), 1024.0);
        assert_eq!(per_object(1000, 1004, 4), -1024.0);
    }

    #[test]
    fn room_is_made_for_descriptors() {
        let (_guard, room, _) = make_room(10, 100);
        assert!(room >= 100 || getrlimit(Resource::RLIMIT_NOFILE).map(|(_, h)| h < 200).unwrap_or(true));
    }

    #[test]
    fn domain_and_interface_rows_measure_without_keys_too() {
        let _serial = serial();
        for bench in [&Domain(false) as &dyn Benchmark, &Domain(true)] {
            let p = Params::from([("rights".to_string(), serde_json::Value::from("mprotect"))]);
            let m = run_quick(bench, &p).unwrap_or_else(|e| panic!("{}: {e:?}", bench.id()));
            assert_eq!(m.unit, model::Unit::Bytes);
            assert!(m.checks[..2].iter().all(|c| c.ok == Some(true)), "{}: {:?}", bench.id(), m.checks);
        }
    }

    #[test]
    fn an_interface_is_counted_directly_where_root() {
        let _serial = serial();
        let p = Params::from([("rights".to_string(), serde_json::Value::from("mprotect"))]);
        let m = run_quick(&Domain(true), &p).unwrap_or_else(|e| panic!("{e:?}"));
        let stages: Vec<&str> = m.breakdown.iter().map(|(s, _)| s.as_str()).collect();
        if std::fs::read_to_string("/proc/slabinfo").is_err() {
            assert_eq!(m.observed["counted"], "meminfo");
            assert_eq!(stages, ["user", "slab", "kernel_stack", "page_tables"]);
            return;
        }
        assert_eq!(m.observed["counted"], "slabinfo");
        // The maple tree's machine-wide count stands beside the total, not in it.
        assert_eq!(stages, ["key_table", "vma", "page_tables"]);
        assert!(m.observed["maple_tree_bytes_machine_wide"].is_number());
        let entry = std::mem::size_of::<domain::table::Interface>() as f64;
        assert!(m.breakdown[0].1.iter().all(|&b| b == entry), "the table's entries: {:?}", m.breakdown[0].1);
        // A region between guard pages that merge with the neighbours' is one or two VMAs more
        // (this process's own count), each one vm_area_struct: the same every round.
        let vma = &m.breakdown[1].1;
        assert!(vma.iter().all(|&b| b > 0.0 && (b - vma[0]).abs() <= 0.01 * vma[0]), "{vma:?}");
        assert_eq!(m.checks[2].ok, Some(true), "rounds agree when counted: {:?}", m.checks[2]);
    }

    #[test]
    fn every_kind_measures_and_cleans_up() {
        let _serial = serial(); // space.process forks
        for bench in [&Thread as &dyn Benchmark, &Process, &Pipe, &Socketpair, &Eventfd, &Epoll, &Timerfd, &Mapping] {
            let m = run_quick(bench, &Params::new()).unwrap_or_else(|e| panic!("{}: {e:?}", bench.id()));
            assert!(m.samples.per_op_ns.len() >= MIN_ROUNDS_SHORT, "{}", bench.id());
            assert_eq!(m.unit, model::Unit::Bytes);
            let stages: Vec<&str> = m.breakdown.iter().map(|(s, _)| s.as_str()).collect();
            assert_eq!(stages, ["user", "slab", "kernel_stack", "page_tables"]);
            // Other tests run in this process at the same time, so the counts may not return
            // exactly; the checks must still have been made.
            assert_eq!(m.checks.len(), 3);
            assert!(m.checks.iter().all(|c| c.ok.is_some()), "{}: {:?}", bench.id(), m.checks);
        }
    }
}
