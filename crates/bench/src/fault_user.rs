//! Page faults resolved in user space: `fault.user.sigsegv` (parameters `access`: `read`,
//! `write`; `cache`: `warm`, `cold`) and `fault.user.uffd` (`access`).
//!
//! **Seed rows:** Rhino on SPIN "page fault read/write, warm/cold", total with its **trap**
//! (getting control to the handler) and **other** (the handler's work and the return) parts.
//! Rhino's UNIX handler received a signal and `mprotect`ed the page, as `fault.user.sigsegv`
//! does; `fault.user.uffd` is Linux's other way to hand a fault to user space. The kernel's
//! own cold fault, `fault.file.* cache=cold`, is the in-kernel analogue of the cold rows.
//!
//! - `fault.user.sigsegv cache=warm`: the region's pages are written (so backed by memory),
//!   then protected (`PROT_NONE` for reads, `PROT_READ` for writes). A touch raises SIGSEGV;
//!   the handler (osprim's dispatcher `sys::segv`, which hands it to `sys::fault::SegvCatcher`)
//!   `mprotect`s the page readable (or writable) and returns, and the access is retried.
//! - `fault.user.sigsegv cache=cold`, as Rhino's cold faults, whose data had to come from
//!   disk: the pages' data lives in a file of [`COLD_PAGES`] pages in the run's scratch
//!   directory, readahead off for it (`POSIX_FADV_RANDOM`). The region is anonymous memory,
//!   populated, then `PROT_NONE` (for reads and writes). Before each batch the file is
//!   evicted from the page cache (`POSIX_FADV_DONTNEED`; it is never dirtied), and right
//!   before each touch `mincore` of a view of the file confirms the page is not resident
//!   (evicting again if it is). On the touch the handler makes the page writable, `pread`s
//!   the page from the file into place — a read from the device, since the cache was evicted
//!   — sets its final protection (read: `PROT_READ`, a second `mprotect`; write: stays
//!   read-write) and returns. Where the scratch directory is memory-backed (tmpfs: nothing
//!   can be evicted) the rows are skipped with the reason, as the `fault.file` cold rows are.
//!   Cold rows record the filesystem and device in `params`.
//! - `fault.user.uffd`: the region is fresh anonymous memory registered with a userfaultfd for
//!   missing pages. A touch blocks the thread and queues an event; a handler thread, pinned
//!   to the measuring CPU and waiting in `read`, resolves it with `UFFDIO_ZEROPAGE` (read) or
//!   `UFFDIO_COPY` of a prepared page (write), which wakes the faulting thread. Where the
//!   kernel refuses userfaultfd (`vm.unprivileged_userfaultfd` = 0 without `CAP_SYS_PTRACE`
//!   and no `UFFD_USER_MODE_ONLY`, or a seccomp filter) the row is skipped with the reason.
//!
//! **Timing model.** Per touch: `start`, the access, `stop`, all of it the total; the handler
//! (or handler thread) reads the same clock on entry. **trap** = access → handler entry;
//! **other** = handler entry → access resumed, minus the timer's overhead (so trap + other =
//! total). A sample is one batch's sums divided by its touches. Re-arming (`mprotect` back,
//! `MADV_DONTNEED`; for cold rows the eviction and the `mincore` checks) is outside the clock.
//! Cold touches take a device read each (often milliseconds): the sampler's budget, which
//! counts wall time including re-arming, bounds how many are taken, as for `fault.file` cold.
//!
//! **Validation.** The handler resolved every touch (its count, and a stamp inside every
//! access's window); the thread's fault counters (`getrusage`, around the timed pieces) show
//! no fault completed by the kernel for SIGSEGV (the signal is delivered before the kernel's
//! fault path completes), and exactly one per touch for userfaultfd (the retried fault). Cold
//! rows also check that every touched page was absent from the page cache just before its
//! touch (`mincore`), that the handler read every page whole from the file and the page then
//! held the file's bytes, and that the thread's block input (`getrusage` `ru_inblock`) rose by
//! at least a page per touch — a device read — unless the kernel counts no block input at all
//! (then that check says it could not be made).

use super::file::{ScratchFile, cold_verdict, describe_storage};
use super::{Arena, Driver, Expect, Timed, failed, fault_check, sample_arena};
use crate::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use platform::timer::{Timer, TimerKind};
use std::hint::black_box;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use sys::fault::{Prot, Region, SegvCatcher};
use sys::uffd::{Attempt, Uffd};

/// Pages of a user-fault region.
const USER_PAGES: usize = 1024;

/// Pages of a cold user-fault region and its file: each touch reads one from the device.
pub const COLD_PAGES: usize = 64;

/// `access` × `cache` for `fault.user.sigsegv`.
fn sigsegv_variants() -> Vec<Params> {
    let mut out = Vec::new();
    for cache in ["warm", "cold"] {
        for mut p in access_variants() {
            p.insert("cache".into(), cache.into());
            out.push(p);
        }
    }
    out
}

fn is_cold(params: &Params) -> Result<bool, NotMeasured> {
    match params.get("cache").and_then(|v| v.as_str()) {
        Some("warm") | None => Ok(false),
        Some("cold") => Ok(true),
        other => Err(NotMeasured::Failed(format!("unknown cache parameter {other:?}"))),
    }
}

fn access_variants() -> Vec<Params> {
    crate::one_param("access", ["read", "write"])
}

fn is_write(params: &Params) -> Result<bool, NotMeasured> {
    match params.get("access").and_then(|v| v.as_str()) {
        Some("read") => Ok(false),
        Some("write") => Ok(true),
        other => Err(NotMeasured::Failed(format!("unknown access parameter {other:?}"))),
    }
}

/// Sums over the stamped touches of a run.
#[derive(Debug, Default)]
struct StampTally {
    /// Touches whose handler stamp fell outside the access's window (or was missing).
    missed: u64,
    /// Ticks of handler work (entry → exit) and of the return (exit → resumed), SIGSEGV only.
    handler: u64,
    ret: u64,
    touches: u64,
}

/// One touch of page `i`, the access only.
#[inline(always)]
fn touch(region: &Region, i: usize, write: bool) {
    if write {
        region.write(i, 2);
    } else {
        black_box(region.read(i));
    }
}

/// The stamp check: the handler's entry stamp fell inside every access's window.
fn stamp_check(t: &StampTally) -> Check {
    Check::new(
        "the handler stamped every access (entry between access and resume)",
        format!("{} stamped", t.touches),
        format!("{} stamped, {} missing", t.touches - t.missed, t.missed),
        t.missed == 0 && t.touches > 0,
    )
}

/// Protected, populated pages whose faults the SIGSEGV handler resolves.
struct SegvArena<'r> {
    region: &'r Region,
    catcher: SegvCatcher<'r>,
    blocked: Prot,
    write: bool,
    tally: StampTally,
}

impl Arena for SegvArena<'_> {
    fn pages(&self) -> usize {
        self.region.pages()
    }
    fn rearm(&mut self, used: usize) -> Result<(), String> {
        self.region.protect(0, used, self.blocked).map_err(|e| format!("mprotect: {e}"))
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_segv(self, timer, first, count)
    }
}

/// One timed touch of page `i` resolved by the SIGSEGV handler: the whole of it into `out`,
/// the handler's and the return's share into `tally`; returns the trap (access → handler
/// entry), or 0 with a miss counted when the handler's stamps are not inside the window.
#[inline(always)]
fn timed_touch(
    timer: &Timer,
    region: &Region,
    i: usize,
    write: bool,
    catcher: &SegvCatcher<'_>,
    tally: &mut StampTally,
    out: &mut Timed,
) -> u64 {
    catcher.clear_stamp();
    let t0 = timer.start();
    touch(region, i, write);
    let t3 = timer.stop();
    let (t1, t2) = catcher.stamps();
    out.ticks += t3.wrapping_sub(t0);
    out.pairs += 1;
    tally.touches += 1;
    if t0 <= t1 && t1 <= t2 && t2 <= t3 {
        tally.handler += t2 - t1;
        tally.ret += t3 - t2;
        t1 - t0
    } else {
        tally.missed += 1;
        0
    }
}

#[inline(never)]
fn time_segv(a: &mut SegvArena<'_>, timer: &Timer, first: usize, count: usize) -> Timed {
    let mut out = Timed { trap: Some(0), ..Timed::default() };
    let mut trap = 0u64;
    for i in first..first + count {
        trap += timed_touch(timer, a.region, i, a.write, &a.catcher, &mut a.tally, &mut out);
    }
    out.trap = Some(trap);
    out
}

/// `fault.user.sigsegv`: a fault resolved by a SIGSEGV handler that `mprotect`s the page.
pub struct UserSigsegv;

impl Benchmark for UserSigsegv {
    fn id(&self) -> &'static str {
        "fault.user.sigsegv"
    }
    fn about(&self) -> &'static str {
        "user-level page fault: SIGSEGV handler unprotects the page (cold: preads it from an evicted file first)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        sigsegv_variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let write = is_write(params)?;
        if is_cold(params)? {
            return run_cold(ctx, write);
        }
        let (blocked, resolve) = if write { (Prot::Read, Prot::ReadWrite) } else { (Prot::None, Prot::Read) };
        let region = Region::anon(USER_PAGES).map_err(failed("mmap"))?;
        region.fill(1);
        region.protect(0, USER_PAGES, blocked).map_err(failed("mprotect"))?;
        let monotonic = ctx.timer.kind() == TimerKind::MonotonicRaw;
        let catcher = SegvCatcher::install(&region, resolve, monotonic)
            .map_err(|e| NotMeasured::Failed(format!("installing the SIGSEGV catcher: {e}")))?;
        let arena = SegvArena { region: &region, catcher, blocked, write, tally: StampTally::default() };
        let (samples, driver) = sample_arena(ctx, arena)?;
        let counts = driver.arena.catcher.counts();
        let t = &driver.arena.tally;
        let checks = vec![
            Check::new(
                "the handler resolved every access",
                format!("{} resolved, 0 stray, 0 failed", driver.touched),
                format!("{} resolved, {} stray, {} failed", counts.resolved, counts.stray, counts.failed),
                counts.resolved == driver.touched && counts.stray == 0 && counts.failed == 0,
            ),
            stamp_check(t),
            fault_check(Expect::NoKernelFault, driver.touched, driver.faults),
        ];
        let n = (t.touches - t.missed).max(1) as f64;
        let note = format!(
            "pages written, then protected {}; the handler mprotects the faulting page {} and returns; of 'other': \
             handler work (entry → exit, mostly mprotect) {:.0} ns, return to the access {:.0} ns (means)",
            if write { "read-only" } else { "PROT_NONE" },
            if write { "read-write" } else { "readable" },
            ctx.timer.ticks_to_ns(t.handler as f64) / n,
            ctx.timer.ticks_to_ns(t.ret as f64) / n,
        );
        let breakdown = driver.breakdown(&samples);
        let mut m = Measured::new(samples, checks).note(note);
        m.breakdown = breakdown;
        Ok(m)
    }
}

// ---------------------------------------------------------------------------------------------
// fault.user.sigsegv cache=cold

/// What the cold touches showed, beyond the stamps.
#[derive(Debug, Default)]
struct ColdTally {
    /// Touches whose file page was confirmed absent from the page cache just before.
    absent: u64,
    /// Touches whose file page was still resident after a second eviction.
    resident: u64,
    /// Touches after which the page did not hold the file's bytes.
    wrong_data: u64,
    /// Block input (`ru_inblock`, 512-byte units) over the timed pieces; `None` once a
    /// reading failed.
    inblock: Option<u64>,
}

/// Protected anonymous pages filled from an evicted file by the SIGSEGV handler.
struct ColdArena<'r> {
    region: &'r Region,
    /// The file mapped, never touched: `mincore` says whether a page is in the page cache.
    view: Region,
    file: &'r ScratchFile,
    catcher: SegvCatcher<'r>,
    write: bool,
    tally: StampTally,
    cold: ColdTally,
}

impl ColdArena<'_> {
    fn evict(&self) -> Result<(), String> {
        self.file.evict(false).map_err(|e| format!("evicting the file from the page cache: {e}"))
    }
}

impl Arena for ColdArena<'_> {
    fn pages(&self) -> usize {
        self.region.pages()
    }
    fn rearm(&mut self, used: usize) -> Result<(), String> {
        // Fresh zeroed pages (populated here, outside the counted pieces, so the handler's
        // pread writes into memory that is there), protected again.
        let r = self.region;
        r.protect(0, used, Prot::ReadWrite).map_err(|e| format!("mprotect: {e}"))?;
        r.discard(0, used).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))?;
        (0..used).for_each(|i| r.write(i, 0));
        r.protect(0, used, Prot::None).map_err(|e| format!("mprotect: {e}"))?;
        self.evict()
    }
    fn prepare(&mut self, _first: usize, _count: usize) -> Result<(), String> {
        self.evict()
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_cold(self, timer, first, count)
    }
}

/// The thread's block input so far (`ru_inblock`).
fn inblock() -> Option<u64> {
    let u = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD).ok()?;
    u64::try_from(u.block_reads()).ok()
}

/// Times cold touches one by one; between them (outside the clock, but inside the piece whose
/// page faults are counted: nothing here allocates or faults) it confirms each page is not
/// cached and, after the touch, that the page holds the file's bytes.
#[inline(never)]
fn time_cold(a: &mut ColdArena<'_>, timer: &Timer, first: usize, count: usize) -> Timed {
    let mut out = Timed { trap: Some(0), ..Timed::default() };
    let mut trap = 0u64;
    let blocks0 = inblock();
    for i in first..first + count {
        let mut resident = a.view.page_resident(i).unwrap_or(true);
        if resident {
            resident = a.file.evict(false).is_err() || a.view.page_resident(i).unwrap_or(true);
        }
        if resident {
            a.cold.resident += 1;
        } else {
            a.cold.absent += 1;
        }
        trap += timed_touch(timer, a.region, i, a.write, &a.catcher, &mut a.tally, &mut out);
        // Byte 1: the write touch stores into byte 0 only; the rest of the page is the file's.
        if a.region.read_at(i, 1) != ScratchFile::byte_of(i) {
            a.cold.wrong_data += 1;
        }
    }
    if count > 0 {
        a.cold.inblock = match (a.cold.inblock, blocks0, inblock()) {
            (Some(sum), Some(b0), Some(b1)) => Some(sum + b1.saturating_sub(b0)),
            _ => None,
        };
    }
    out.trap = Some(trap);
    out
}

fn run_cold(ctx: &mut Ctx, write: bool) -> Result<Measured, NotMeasured> {
    let page = sys::fault::page_size();
    let file = ScratchFile::create(ctx.scratch, "fault-user-cold", COLD_PAGES, page)
        .map_err(failed("writing the test file"))?;
    file.no_readahead().map_err(failed("posix_fadvise(POSIX_FADV_RANDOM)"))?;
    let view = Region::file_view(file.file.as_fd(), COLD_PAGES).map_err(failed("mmap of the test file"))?;
    let storage = describe_storage(ctx.scratch);
    file.evict(false).map_err(failed("evicting the test file from the page cache"))?;
    let resident = view.resident(0, COLD_PAGES).map_err(failed("mincore"))?;
    cold_verdict(&storage.fs, resident, COLD_PAGES).map_err(NotMeasured::Skipped)?;
    let region = Region::anon(COLD_PAGES).map_err(failed("mmap"))?;
    region.fill(0);
    region.protect(0, COLD_PAGES, Prot::None).map_err(failed("mprotect"))?;
    let resolve = if write { Prot::ReadWrite } else { Prot::Read };
    let monotonic = ctx.timer.kind() == TimerKind::MonotonicRaw;
    let catcher = SegvCatcher::install_filling(&region, resolve, monotonic, file.file.as_fd())
        .map_err(|e| NotMeasured::Failed(format!("installing the SIGSEGV catcher: {e}")))?;
    let cold = ColdTally { inblock: Some(0), ..ColdTally::default() };
    let arena = ColdArena { region: &region, view, file: &file, catcher, write, tally: StampTally::default(), cold };
    let (samples, driver) = sample_arena(ctx, arena)?;
    let checks = cold_checks(&driver, page);
    let t = &driver.arena.tally;
    let n = (t.touches - t.missed).max(1) as f64;
    let note = format!(
        "anonymous pages, PROT_NONE; the page's data is in a {COLD_PAGES}-page file evicted from the page cache \
         (POSIX_FADV_DONTNEED before each batch, readahead off, mincore confirms each page absent before its touch); \
         the handler mprotects the page read-write, preads it from the file{}, and returns; 'other' = handler work \
         (entry → exit: observed.handler_ns, means) + return to the access (observed.return_ns)",
        if write { "" } else { ", mprotects it PROT_READ" },
    );
    let mean = |ticks: u64| (ctx.timer.ticks_to_ns(ticks as f64) / n).round();
    let (handler_ns, return_ns) = (mean(t.handler), mean(t.ret));
    let breakdown = driver.breakdown(&samples);
    let mut m = Measured::new(samples, checks).note(note).note(storage.detail);
    m.breakdown = breakdown;
    m.observed.insert("handler_ns".into(), serde_json::json!(handler_ns));
    m.observed.insert("return_ns".into(), serde_json::json!(return_ns));
    m.params.insert("fs".into(), storage.fs.into());
    m.params.insert("device".into(), storage.device.into());
    if let Some(blocks) = driver.arena.cold.inblock {
        let per_touch = blocks as f64 / driver.touched.max(1) as f64;
        m.observed.insert("inblock_per_touch".into(), serde_json::json!((per_touch * 10.0).round() / 10.0));
    }
    Ok(m)
}

fn cold_checks(driver: &Driver<ColdArena<'_>>, page: usize) -> Vec<Check> {
    let a = &driver.arena;
    let counts = a.catcher.counts();
    let touched = driver.touched;
    let c = &a.cold;
    let blocks_check = match c.inblock {
        None => Check::impossible("the reads reached the device (ru_inblock)", "getrusage(RUSAGE_THREAD) failed"),
        Some(0) if c.resident == 0 => Check::impossible(
            "the reads reached the device (ru_inblock)",
            "the kernel counted no block input for this thread at all (task I/O accounting off?)",
        ),
        Some(b) => {
            let want = touched * (page as u64 / 512);
            Check::new(
                "the reads reached the device (ru_inblock rose a page per touch)",
                format!("≥ {want} blocks of 512 bytes"),
                format!("{b} blocks"),
                b >= want && touched > 0,
            )
        }
    };
    vec![
        Check::new(
            "the handler resolved every access",
            format!("{touched} resolved, 0 stray, 0 failed"),
            format!("{} resolved, {} stray, {} failed", counts.resolved, counts.stray, counts.failed),
            counts.resolved == touched && counts.stray == 0 && counts.failed == 0,
        ),
        Check::new(
            "the handler read every page whole from the file (pread), and the page then held the file's bytes",
            format!("{touched} pages read, 0 failed, 0 wrong"),
            format!("{} pages read, {} failed, {} wrong", counts.filled, counts.fill_failed, c.wrong_data),
            counts.filled == touched && counts.fill_failed == 0 && c.wrong_data == 0,
        ),
        Check::new(
            "every touched page was absent from the page cache just before its touch (mincore)",
            format!("{touched} absent"),
            format!("{} absent, {} resident", c.absent, c.resident),
            c.resident == 0 && c.absent == touched,
        ),
        blocks_check,
        stamp_check(&a.tally),
        fault_check(Expect::NoKernelFault, touched, driver.faults),
    ]
}

/// Why userfaultfd is refused, from the attempts made and `vm.unprivileged_userfaultfd`.
fn refusal_reason(attempts: &[Attempt], unprivileged: Option<&str>) -> String {
    let tried: Vec<String> =
        attempts.iter().map(|a| format!("{}: {}", a.flags, nix::errno::Errno::from_raw(a.errno).desc())).collect();
    let tried = tried.join("; ");
    if attempts.iter().any(|a| a.errno == libc::ENOSYS) {
        return format!("this kernel has no userfaultfd (built without CONFIG_USERFAULTFD) ({tried})");
    }
    if attempts.iter().any(|a| a.errno == libc::EPERM) {
        let sysctl = match unprivileged.map(str::trim) {
            Some("0") => "vm.unprivileged_userfaultfd = 0 and osprim lacks CAP_SYS_PTRACE",
            Some(v) => {
                return format!(
                    "userfaultfd refused (vm.unprivileged_userfaultfd = {v}): a seccomp filter or security module forbids it ({tried})"
                );
            }
            None => "vm.unprivileged_userfaultfd unreadable",
        };
        let mode_only = attempts.iter().any(|a| a.flags.contains("USER_MODE_ONLY") && a.errno == libc::EPERM);
        let hint = if mode_only {
            "; UFFD_USER_MODE_ONLY was refused too, so a seccomp filter (as in containers) or security module forbids it"
        } else {
            "; the kernel predates UFFD_USER_MODE_ONLY (Linux 5.11)"
        };
        return format!("userfaultfd refused: {sysctl}{hint} ({tried})");
    }
    format!("userfaultfd cannot be opened ({tried})")
}

fn unprivileged_sysctl() -> Option<String> {
    std::fs::read_to_string("/proc/sys/vm/unprivileged_userfaultfd").ok()
}

fn open_uffd() -> Result<Uffd, String> {
    Uffd::open().map_err(|attempts| refusal_reason(&attempts, unprivileged_sysctl().as_deref()))
}

/// What the handler thread shares with the measuring thread.
#[derive(Debug, Default)]
struct HandlerStamps {
    /// Clock when the handler received the last fault event.
    entry: AtomicU64,
    /// Faults resolved.
    resolved: AtomicU64,
}

/// The handler thread: waits for faults and resolves them until the stop page faults or an
/// error occurs (then it returns, closing the userfaultfd, which lets faults resolve normally).
fn handler_loop(
    uffd: Uffd,
    stamps: &HandlerStamps,
    timer: Timer,
    copy_from: Option<Vec<u8>>,
    page: usize,
    stop_at: usize,
) -> Result<(), String> {
    loop {
        let Some(fault) = uffd.next_fault().map_err(|e| format!("read(userfaultfd): {e}"))? else {
            continue;
        };
        let at = timer.stop();
        stamps.entry.store(at, Ordering::Release);
        let dst = fault.address & !(page - 1);
        match &copy_from {
            Some(src) => uffd.copy(dst, src).map_err(|e| format!("UFFDIO_COPY: {e}"))?,
            None => uffd.zeropage(dst, page).map_err(|e| format!("UFFDIO_ZEROPAGE: {e}"))?,
        }
        if dst == stop_at {
            return Ok(());
        }
        stamps.resolved.fetch_add(1, Ordering::Relaxed);
    }
}

/// The running handler thread; stopped on drop by touching the region's last ("stop") page.
struct HandlerThread<'r> {
    region: &'r Region,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl HandlerThread<'_> {
    /// Stops the thread and returns its outcome.
    fn stop(&mut self) -> Result<(), String> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        // If the thread is alive it resolves this fault and exits; if it has exited, the
        // userfaultfd is closed and the kernel resolves it.
        black_box(self.region.read(self.region.pages() - 1));
        t.join().map_err(|_| "the userfaultfd handler thread panicked".to_string())?
    }
}

impl Drop for HandlerThread<'_> {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Fresh registered pages (all but the region's last, the stop page).
struct UffdArena<'r> {
    region: &'r Region,
    stamps: Arc<HandlerStamps>,
    write: bool,
    tally: StampTally,
}

impl Arena for UffdArena<'_> {
    fn pages(&self) -> usize {
        self.region.pages() - 1
    }
    fn rearm(&mut self, used: usize) -> Result<(), String> {
        self.region.discard(0, used).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_uffd(self, timer, first, count)
    }
}

#[inline(never)]
fn time_uffd(a: &mut UffdArena<'_>, timer: &Timer, first: usize, count: usize) -> Timed {
    let mut out = Timed::default();
    let mut trap = 0u64;
    for i in first..first + count {
        a.stamps.entry.store(0, Ordering::Relaxed);
        let t0 = timer.start();
        touch(a.region, i, a.write);
        let t3 = timer.stop();
        let t1 = a.stamps.entry.load(Ordering::Acquire);
        out.ticks += t3.wrapping_sub(t0);
        out.pairs += 1;
        a.tally.touches += 1;
        if t0 <= t1 && t1 <= t3 {
            trap += t1 - t0;
        } else {
            a.tally.missed += 1;
        }
    }
    out.trap = Some(trap);
    out
}

fn start_handler<'r>(
    ctx: &Ctx,
    region: &'r Region,
    uffd: Uffd,
    write: bool,
    stamps: &Arc<HandlerStamps>,
) -> Result<HandlerThread<'r>, NotMeasured> {
    let page = sys::fault::page_size();
    let copy_from = write.then(|| vec![0x5a; page]);
    let stop_at = region.page_addr(region.pages() - 1);
    let (timer, cpu, shared) = (ctx.timer, ctx.cpu, Arc::clone(stamps));
    let thread = std::thread::Builder::new()
        .name("osprim-uffd".into())
        .spawn(move || {
            // Same CPU as the measuring thread: the faulting thread blocks and the handler
            // runs in its place, with no cross-CPU wake-up or clock.
            let _ = sys::cpu::pin_current_thread(cpu);
            handler_loop(uffd, &shared, timer, copy_from, page, stop_at)
        })
        .map_err(failed("spawning the handler thread"))?;
    Ok(HandlerThread { region, thread: Some(thread) })
}

/// `fault.user.uffd`: a missing-page fault resolved by a userfaultfd handler thread.
pub struct UserUffd;

impl Benchmark for UserUffd {
    fn id(&self) -> &'static str {
        "fault.user.uffd"
    }
    fn about(&self) -> &'static str {
        "user-level page fault: userfaultfd handler thread fills the page (UFFDIO_ZEROPAGE / UFFDIO_COPY)"
    }
    fn available(&self) -> Result<(), String> {
        open_uffd().map(drop)
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        access_variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let write = is_write(params)?;
        let uffd = open_uffd().map_err(NotMeasured::Skipped)?;
        let mode = uffd.flags;
        let region = Region::anon(USER_PAGES + 1).map_err(failed("mmap"))?;
        uffd.register_missing(&region).map_err(failed("UFFDIO_REGISTER"))?;
        let stamps = Arc::new(HandlerStamps::default());
        let mut handler = start_handler(ctx, &region, uffd, write, &stamps)?;
        let arena = UffdArena { region: &region, stamps: Arc::clone(&stamps), write, tally: StampTally::default() };
        let sampled = sample_arena(ctx, arena);
        let stopped = handler.stop();
        let (samples, driver) = sampled?;
        stopped.map_err(NotMeasured::Failed)?;
        Ok(uffd_measured(ctx, samples, &driver, &stamps, write, mode))
    }
}

fn uffd_measured(
    ctx: &Ctx,
    samples: crate::sampler::Samples,
    driver: &Driver<UffdArena<'_>>,
    stamps: &HandlerStamps,
    write: bool,
    mode: &str,
) -> Measured {
    let resolved = stamps.resolved.load(Ordering::Relaxed);
    let checks = vec![
        Check::new(
            "the handler thread resolved every access",
            format!("{} resolved", driver.touched),
            format!("{resolved} resolved"),
            resolved == driver.touched,
        ),
        stamp_check(&driver.arena.tally),
        fault_check(Expect::One, driver.touched, driver.faults),
    ];
    let breakdown = driver.breakdown(&samples);
    let how = if write { "UFFDIO_COPY of a prepared page" } else { "UFFDIO_ZEROPAGE (the shared zero page)" };
    let mut m = Measured::new(samples, checks).note(format!(
        "fresh anonymous pages registered for missing-page faults (userfaultfd opened with {mode}); a handler thread \
         pinned to CPU {} waits in read() and resolves each fault with {how}; trap ends when the handler's read \
         returns; region re-armed with MADV_DONTNEED outside the clock",
        ctx.cpu
    ));
    m.breakdown = breakdown;
    m.params.insert("uffd_flags".into(), mode.into());
    m
}

#[cfg(test)]
mod tests {
    use super::super::tests::{failures, run_validated};
    use super::*;

    #[test]
    fn sigsegv_variants_are_access_by_cache() {
        let v = sigsegv_variants();
        assert_eq!(v.len(), 4);
        assert_eq!(v.iter().filter(|p| p["cache"] == "cold").count(), 2);
        assert!(is_cold(&v[3]).expect("valid"));
        assert!(is_cold(&Params::from([("cache".to_string(), "lukewarm".into())])).is_err());
    }

    #[test]
    fn refusal_names_the_cause() {
        let eperm = |flags| Attempt { flags, errno: libc::EPERM };
        let both = [eperm("O_CLOEXEC | UFFD_USER_MODE_ONLY"), eperm("O_CLOEXEC")];
        let r = refusal_reason(&both, Some("0\n"));
        assert!(r.contains("vm.unprivileged_userfaultfd = 0") && r.contains("seccomp"), "{r}");
        let old = [Attempt { flags: "O_CLOEXEC | UFFD_USER_MODE_ONLY", errno: libc::EINVAL }, eperm("O_CLOEXEC")];
        let r = refusal_reason(&old, Some("0"));
        assert!(r.contains("predates UFFD_USER_MODE_ONLY"), "{r}");
        let r = refusal_reason(&both, Some("1"));
        assert!(r.contains("= 1") && r.contains("seccomp"), "{r}");
        let none = [Attempt { flags: "O_CLOEXEC", errno: libc::ENOSYS }];
        assert!(refusal_reason(&none, None).contains("CONFIG_USERFAULTFD"));
        let odd = [Attempt { flags: "O_CLOEXEC", errno: libc::EMFILE }];
        assert!(refusal_reason(&odd, None).contains("cannot be opened"));
    }

    fn check_user_fault(bench: &dyn Benchmark, variants: Vec<Params>) {
        for p in variants {
            match run_validated(bench, &p) {
                Ok(m) => {
                    assert!(m.samples.per_op_ns.len() >= 5, "{} {p:?}", bench.id());
                    assert_eq!(failures(&m), Vec::<String>::new(), "{} {p:?}", bench.id());
                    let names: Vec<&str> = m.breakdown.iter().map(|(n, _)| n.as_str()).collect();
                    assert_eq!(names, ["trap", "other"]);
                    for (_, v) in &m.breakdown {
                        assert_eq!(v.len(), m.samples.per_op_ns.len());
                    }
                }
                Err(NotMeasured::Skipped(why)) => {
                    let cold = p.get("cache").is_some_and(|c| c == "cold");
                    assert!(why.contains("userfaultfd") || (cold && why.contains("evict")), "{why}");
                    eprintln!("{} {p:?} skipped: {why}", bench.id());
                }
                Err(e) => panic!("{} {p:?}: {e:?}", bench.id()),
            }
        }
    }

    #[test]
    fn sigsegv_faults_are_resolved_by_the_handler() {
        check_user_fault(&UserSigsegv, sigsegv_variants());
    }

    #[test]
    fn uffd_faults_are_resolved_by_the_handler_thread() {
        check_user_fault(&UserUffd, access_variants());
    }
}
