//! Page faults: `fault.anon.read`, `fault.anon.write`, `fault.cow`, and (in `fault_file.rs`)
//! `fault.file.read`, `fault.file.write`, (in `fault_user.rs`) `fault.user.sigsegv`,
//! `fault.user.uffd`.
//!
//! Seed rows: Rhino on SPIN, "page fault" read/write, warm/cold, each split into the trap
//! (getting control to the handler) and the rest; the UNIX and SPIN columns there are
//! user-level handlers, which `fault.user.*` reproduce (`fault.user.sigsegv` with `cache=warm`
//! and `cache=cold`, whose handler reads the page from an evicted file), while `fault.anon.*`,
//! `fault.file.*` (its cold rows: the in-kernel analogue of a cold user-level fault) and
//! `fault.cow` give the kernel's own fault paths beside them.
//!
//! **Preparation (outside the clock).** Each benchmark owns a region of fresh pages
//! ([`ANON_PAGES`] anonymous pages, or a file of [`FILE_PAGES`] pages), with transparent huge
//! pages disabled (`MADV_NOHUGEPAGE`) so that one touch is one base-page fault. Batches take
//! consecutive untouched pages; when the region is used up it is re-armed (`MADV_DONTNEED`,
//! a new child for copy-on-write, `mprotect` for user-level faults, eviction for cold file
//! pages) with the clock stopped, and a batch larger than the region is timed in pieces.
//!
//! **Timing model.** `start`, then one read or write of the first byte of each of the batch's
//! pages (a volatile access), then `stop`: the batch's time divided by its pages is one sample.
//! When a batch is timed in pieces, the sampler subtracts one timer overhead per piece
//! ([`crate::sampler::Timed`]).
//!
//! **Cold-cache mode** (`fault.anon.*` with `cache=cold`, `crate::cold`): every fault is a
//! first touch either way; the cold sample is one fault right after the disturbance (caches,
//! TLB and branch predictors cold for the kernel's fault path, the page-table pages and the
//! zeroing), its hot twin the fault of the next fresh page right after (the fault path warm).
//! The other fault benchmarks have no such mode: `fault.file.*` and `fault.user.*` have a
//! `cache` parameter of their own (the page's place: page cache or disk).
//!
//! **Validation.** Around each timed piece (outside the clock, so the sampler's own
//! allocations are not counted) the thread's fault counters are read (`getrusage(RUSAGE_THREAD)`,
//! `ru_minflt`/`ru_majflt`); over the run they must rise by exactly one per touched page:
//! minor for anonymous, copy-on-write and cached file pages, major for cold file pages.
//! Otherwise the check fails and the row is flagged. Two things would add faults that are not
//! the measured ones, and are kept out: after any `fork` this thread's own stack is
//! copy-on-write, so the counted path is run once dry before counting resumes; and a freshly
//! forked child's start-up now and then makes one of the parent's copy-on-write faults count
//! twice (seen on Linux 6.18), so `fault.cow` waits until its child sleeps. getrusage(2).

#[path = "fault_file.rs"]
mod file;
#[path = "fault_user.rs"]
mod user;

pub use file::{FileRead, FileWrite};
pub use user::{UserSigsegv, UserUffd};

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Samples;
use nix::sys::resource::{UsageWho, getrusage};
use platform::timer::Timer;
use std::hint::black_box;
use sys::fault::Region;
use sys::process::Child;

/// Pages of an anonymous region (8 MiB of 4 KiB pages): a batch of the slowest fault takes a
/// few ms, so re-arming stays a small share of the wall time.
pub const ANON_PAGES: usize = 2048;

/// Pages of a file region (4 MiB): each is its own mapping (see `Region::file_pages`).
pub const FILE_PAGES: usize = 1024;

/// The calling thread's fault counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Faults resolved without I/O (`ru_minflt`).
    pub minor: u64,
    /// Faults that waited for I/O (`ru_majflt`).
    pub major: u64,
}

impl Faults {
    /// Reads them (`getrusage(RUSAGE_THREAD)`); `None` if the call fails.
    pub fn now() -> Option<Faults> {
        let u = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
        Some(Faults {
            minor: u64::try_from(u.minor_page_faults()).ok()?,
            major: u64::try_from(u.major_page_faults()).ok()?,
        })
    }

    fn since(self, before: Faults) -> Faults {
        Faults { minor: self.minor.saturating_sub(before.minor), major: self.major.saturating_sub(before.major) }
    }

    fn add(&mut self, other: Faults) {
        self.minor += other.minor;
        self.major += other.major;
    }
}

/// Which kernel fault counts one touch should cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// One minor fault (anonymous, copy-on-write, cached file page).
    Minor,
    /// One major fault (a file page read from the device).
    Major,
    /// One fault, minor or major (userfaultfd: the retried fault is counted once it completes).
    One,
    /// None: a user-level handler resolved it before the kernel's fault path completed.
    NoKernelFault,
}

/// The check that the thread's fault counters rose as `expect` says for `touched` pages.
pub fn fault_check(expect: Expect, touched: u64, seen: Option<Faults>) -> Check {
    let (name, expected) = match expect {
        Expect::Minor => ("one minor fault per touched page", format!("{touched} minor, 0 major")),
        Expect::Major => ("one major fault per touched page", format!("0 minor, {touched} major")),
        Expect::One => ("one fault per touched page", format!("{touched} minor + major")),
        Expect::NoKernelFault => ("no fault completed by the kernel itself", "0 minor, 0 major".to_string()),
    };
    let Some(f) = seen else {
        return Check::impossible(name, "getrusage(RUSAGE_THREAD) failed");
    };
    let ok = match expect {
        Expect::Minor => f.minor == touched && f.major == 0,
        Expect::Major => f.major == touched && f.minor == 0,
        Expect::One => f.minor + f.major == touched,
        Expect::NoKernelFault => f.minor + f.major == 0,
    };
    let observed = format!("{} minor, {} major for {touched} touched pages", f.minor, f.major);
    Check::new(name, expected, observed, ok && touched > 0)
}

/// One timed piece: raw ticks (timer overhead not subtracted), the start/stop pairs they
/// include, and, for benchmarks that stamp their handler, the ticks from access to handler.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timed {
    /// Ticks from `start` to `stop`, summed over the pairs.
    pub ticks: u64,
    /// Start/stop pairs read.
    pub pairs: u64,
    /// Ticks from the access to handler entry, summed (breakdown benchmarks only).
    pub trap: Option<u64>,
}

/// A supply of fresh pages that can time touches of them.
pub trait Arena {
    /// Pages it holds.
    fn pages(&self) -> usize;
    /// Makes pages `0..used` fresh again (outside the clock).
    fn rearm(&mut self, used: usize) -> Result<(), String>;
    /// Last preparation of pages `first..first + count` just before they are timed.
    fn prepare(&mut self, _first: usize, _count: usize) -> Result<(), String> {
        Ok(())
    }
    /// Times touches of pages `first..first + count`.
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed;
}

/// Walks an [`Arena`] batch after batch, counting touches and faults.
pub struct Driver<A> {
    /// The pages.
    pub arena: A,
    next: usize,
    /// Pages touched inside timed regions.
    pub touched: u64,
    /// Faults counted around those regions (`None` once a reading failed).
    pub faults: Option<Faults>,
    /// The first error; once set, batches are no longer timed.
    pub error: Option<String>,
    /// Per routine call: (trap, other) in ns per touch, for breakdown benchmarks.
    stages: Vec<(f64, f64)>,
    /// Whether the next piece must be preceded by a dry run (see `piece`).
    dry: bool,
}

impl<A: Arena> Driver<A> {
    /// A driver over fresh `arena`.
    pub fn new(arena: A) -> Driver<A> {
        Driver {
            arena,
            next: 0,
            touched: 0,
            faults: Some(Faults::default()),
            error: None,
            stages: Vec::new(),
            dry: true,
        }
    }

    /// The sampler's routine: times `n` touches and returns their ticks and timed pieces.
    pub fn routine(&mut self, timer: &Timer, n: u64) -> crate::sampler::Timed {
        if self.error.is_some() {
            return crate::sampler::Timed::one(n); // the row fails anyway; spend no more time
        }
        let mut left = usize::try_from(n).unwrap_or(usize::MAX);
        let mut total = Timed::default();
        let mut trap = 0u64;
        while left > 0 {
            match self.piece(timer, left) {
                Ok((count, t)) => {
                    left -= count;
                    total.ticks += t.ticks;
                    total.pairs += t.pairs;
                    trap += t.trap.unwrap_or(0);
                    total.trap = total.trap.or(t.trap);
                }
                Err(e) => {
                    self.error = Some(e);
                    return crate::sampler::Timed::one(n);
                }
            }
        }
        if total.trap.is_some() {
            let ops = n.max(1) as f64;
            let other = total.ticks as f64 - trap as f64 - crate::sampler::overhead_of(timer, total.pairs);
            self.stages.push((timer.ticks_to_ns(trap as f64) / ops, timer.ticks_to_ns(other) / ops));
        }
        // One overhead per piece, subtracted by the sampler.
        crate::sampler::Timed::regions(total.ticks, total.pairs)
    }

    /// Times up to `want` touches in one piece; returns how many it took.
    fn piece(&mut self, timer: &Timer, want: usize) -> Result<(usize, Timed), String> {
        self.ready(timer)?;
        let count = want.min(self.arena.pages() - self.next);
        self.arena.prepare(self.next, count)?;
        let (t, faults) = self.measure(timer, self.next, count);
        match (faults, self.faults.as_mut()) {
            (Some(seen), Some(f)) => f.add(seen),
            _ => self.faults = None,
        }
        self.touched += count as u64;
        self.next += count;
        Ok((count, t))
    }

    /// Re-arms the arena when its pages are used up, and runs the dry pass that follows: the
    /// untimed work a piece may need before its touches (a cold sample does it before the
    /// disturbance, so that the disturbance is the last thing before the clock).
    fn ready(&mut self, timer: &Timer) -> Result<(), String> {
        if self.next >= self.arena.pages() {
            self.arena.rearm(self.next)?;
            self.next = 0;
            self.dry = true;
        }
        if self.dry {
            // A fork (copy-on-write re-arming, or any earlier one in this process) leaves this
            // thread's stack write-protected: the first write to a stack page would be one more
            // fault inside the counted window. A dry run of the same path copies those pages.
            self.measure(timer, 0, 0);
            self.dry = false;
        }
        Ok(())
    }

    /// One timed piece between two readings of the fault counters.
    #[inline(never)]
    fn measure(&mut self, timer: &Timer, first: usize, count: usize) -> (Timed, Option<Faults>) {
        let before = Faults::now();
        let t = self.arena.time(timer, first, count);
        let after = Faults::now();
        (t, before.zip(after).map(|(b, a)| a.since(b)))
    }

    /// The breakdown matching `samples` (the last calls are the kept samples), as
    /// `Measured::breakdown` wants it; empty for benchmarks without stamps.
    pub fn breakdown(&self, samples: &Samples) -> Vec<(String, Vec<f64>)> {
        if self.stages.is_empty() {
            return Vec::new();
        }
        let kept = &self.stages[self.stages.len().saturating_sub(samples.per_op_ns.len())..];
        vec![
            ("trap".to_string(), kept.iter().map(|s| s.0).collect()),
            ("other".to_string(), kept.iter().map(|s| s.1).collect()),
        ]
    }

    /// The error that stopped it, as a failed row.
    pub fn failure(&self) -> Option<NotMeasured> {
        self.error.as_ref().map(|e| NotMeasured::Failed(e.clone()))
    }
}

/// Samples `arena` through `ctx` and returns the driver (with its counts) and the samples.
pub fn sample_arena<A: Arena>(ctx: &Ctx, arena: A) -> Result<(Samples, Driver<A>), NotMeasured> {
    warm_stack();
    let mut driver = Driver::new(arena);
    let timer = ctx.timer;
    let samples = ctx.iter_regions(|n| driver.routine(&timer, n));
    match driver.failure() {
        Some(f) => Err(f),
        None => Ok((samples, driver)),
    }
}

/// [`sample_arena`] in a cold visit: cold/hot pairs of single faults, each on a fresh page;
/// the cold one right after the disturbance, its hot twin on the next fresh page after it.
pub fn sample_arena_cold<A: Arena>(ctx: &Ctx, arena: A) -> Result<(Samples, Driver<A>), NotMeasured> {
    warm_stack();
    let mut driver = Driver::new(arena);
    let timer = ctx.timer;
    let samples = ctx.iter_cold(|before| {
        // Re-arming (when the pages ran out) first, then the disturbance and the counters'
        // first reading (`Before::now`), then the one timed touch. The disturbance's buffer is
        // populated: it adds no fault to the counted window.
        if let Err(e) = driver.ready(&timer) {
            driver.error = Some(e);
            return None;
        }
        before.now();
        Some(driver.routine(&timer, 1))
    });
    match driver.failure() {
        Some(f) => Err(f),
        None => Ok((samples, driver)),
    }
}

/// Touches the next 64 KiB of this thread's stack, so that a timed region reaching deeper
/// than the thread has been before does not take (and count) a stack page fault.
/// Also breaks copy-on-write sharing of those stack pages after a `fork`.
#[inline(never)]
pub fn warm_stack() {
    let pad = [1u8; 64 * 1024];
    black_box(&pad);
}

/// Times `count` first touches of consecutive pages: the plain (kernel-resolved) fault loop.
#[inline(never)]
pub fn time_touches(region: &Region, timer: &Timer, first: usize, count: usize, write: bool) -> Timed {
    let t0 = timer.start();
    if write {
        for i in first..first + count {
            region.write(i, 1);
        }
    } else {
        for i in first..first + count {
            black_box(region.read(i));
        }
    }
    let t1 = timer.stop();
    Timed { ticks: t1.wrapping_sub(t0), pairs: 1, trap: None }
}

fn failed(what: &str) -> impl Fn(std::io::Error) -> NotMeasured + '_ {
    move |e| NotMeasured::Failed(format!("{what}: {e}"))
}

/// Fresh anonymous pages, re-armed with `MADV_DONTNEED`.
struct AnonArena {
    region: Region,
    write: bool,
}

impl Arena for AnonArena {
    fn pages(&self) -> usize {
        self.region.pages()
    }
    fn rearm(&mut self, used: usize) -> Result<(), String> {
        self.region.discard(0, used).map_err(|e| format!("madvise(MADV_DONTNEED): {e}"))
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_touches(&self.region, timer, first, count, self.write)
    }
}

fn run_anon(ctx: &Ctx, write: bool) -> Result<Measured, NotMeasured> {
    let region = Region::anon(ANON_PAGES).map_err(failed("mmap of the anonymous region"))?;
    let (samples, driver) = match ctx.cold() {
        Some(_) => sample_arena_cold(ctx, AnonArena { region, write })?,
        None => sample_arena(ctx, AnonArena { region, write })?,
    };
    let check = fault_check(Expect::Minor, driver.touched, driver.faults);
    let mut m = Measured::new(samples, vec![check]).note(format!(
        "first touches of fresh anonymous pages (MADV_NOHUGEPAGE: one {} KiB page per fault), {ANON_PAGES}-page \
         region re-armed with MADV_DONTNEED outside the clock",
        sys::fault::page_size() / 1024
    ));
    if !write {
        m = m.note(
            "a read of never-written anonymous memory maps the shared zero page: nothing is allocated or zeroed \
             (a later write faults again to get a page of its own)",
        );
    }
    Ok(m)
}

/// `fault.anon.read`: first read of a fresh anonymous page.
pub struct AnonRead;

impl Benchmark for AnonRead {
    fn id(&self) -> &'static str {
        "fault.anon.read"
    }
    fn about(&self) -> &'static str {
        "page fault: first read of a fresh anonymous page (maps the zero page)"
    }
    /// One fault per sample (module doc).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        run_anon(ctx, false)
    }
}

/// `fault.anon.write`: first write to a fresh anonymous page.
pub struct AnonWrite;

impl Benchmark for AnonWrite {
    fn id(&self) -> &'static str {
        "fault.anon.write"
    }
    fn about(&self) -> &'static str {
        "page fault: first write to a fresh anonymous page (allocate + zero a page)"
    }
    /// One fault per sample (module doc).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        run_anon(ctx, true)
    }
}

/// Written pages shared copy-on-write with a paused child; re-armed by forking a new child.
struct CowArena {
    region: Region,
    child: Option<Child>,
    forks: u64,
}

impl CowArena {
    fn share(&mut self) -> Result<(), String> {
        if let Some(old) = self.child.take() {
            old.kill_and_reap().ok().map_err(|e| format!("reaping the copy-on-write child: {e}"))?;
        }
        let child = Child::fork_paused().map_err(|e| format!("fork: {e}"))?;
        // Until the child sleeps, its start-up (copy-on-write faults of its own) now and then
        // makes one of ours fault twice: wait for it.
        child.wait_asleep(std::time::Duration::from_secs(1));
        self.child = Some(child);
        self.forks += 1;
        // The fork made this thread's stack copy-on-write too: copy it now, not in a timed piece.
        warm_stack();
        Ok(())
    }
}

impl Arena for CowArena {
    fn pages(&self) -> usize {
        self.region.pages()
    }
    fn rearm(&mut self, _used: usize) -> Result<(), String> {
        self.share()
    }
    fn time(&mut self, timer: &Timer, first: usize, count: usize) -> Timed {
        time_touches(&self.region, timer, first, count, true)
    }
}

/// `fault.cow`: first write to a page shared copy-on-write with a forked child.
pub struct Cow;

impl Benchmark for Cow {
    fn id(&self) -> &'static str {
        "fault.cow"
    }
    fn about(&self) -> &'static str {
        "page fault: write to a page shared copy-on-write with a forked child (copy the page)"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let region = Region::anon(ANON_PAGES).map_err(failed("mmap of the anonymous region"))?;
        region.fill(1);
        let mut arena = CowArena { region, child: None, forks: 0 };
        arena.share().map_err(NotMeasured::Failed)?;
        // The child is killed and reaped when the arena drops, on every path out of here.
        let (samples, driver) = sample_arena(ctx, arena)?;
        let check = fault_check(Expect::Minor, driver.touched, driver.faults);
        Ok(Measured::new(samples, vec![check]).note(format!(
            "writes to written anonymous pages that a paused forked child still maps, so each is copied; \
             {ANON_PAGES}-page region, re-shared by forking a new child outside the clock ({} forks)",
            driver.arena.forks
        )))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sampler::SamplerConfig;
    use std::sync::atomic::AtomicBool;

    /// Runs `bench` with `params` through a tiny-budget context on this machine.
    pub(crate) fn run_quick(bench: &dyn Benchmark, params: &Params) -> Result<Measured, NotMeasured> {
        let (timer, info) = platform::timer::detect();
        let dir = tempfile::tempdir().expect("tempdir");
        let stop = AtomicBool::new(false);
        let cfg = SamplerConfig { budget_s: 0.02, warmup_s: 0.005, min_samples: 5, ..SamplerConfig::quick() };
        let mut ctx = Ctx::new(timer, &info, cfg, 0, dir.path(), &stop);
        bench.run(&mut ctx, params)
    }

    /// Every check that could be made passed, or lists the failures.
    pub(crate) fn failures(m: &Measured) -> Vec<String> {
        m.checks.iter().filter(|c| c.ok == Some(false)).map(|c| format!("{}: {}", c.name, c.observed)).collect()
    }

    /// Serialises the tests of this family that fork or count this thread's faults: a `fork`
    /// in another test thread makes every page of the process copy-on-write, and this thread's
    /// next write to its stack then counts as one more minor fault.
    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        crate::testing::serial()
    }

    /// Runs `bench` once, serialised with every test that forks or installs a SIGSEGV handler
    /// (a fork elsewhere in this process would add copy-on-write faults to the exact count).
    pub(crate) fn run_validated(bench: &dyn Benchmark, params: &Params) -> Result<Measured, NotMeasured> {
        let _serial = serial();
        run_quick(bench, params)
    }

    #[test]
    fn fault_check_wants_exactly_one_per_page() {
        let f = |minor, major| Some(Faults { minor, major });
        assert_eq!(fault_check(Expect::Minor, 10, f(10, 0)).ok, Some(true));
        assert_eq!(fault_check(Expect::Minor, 10, f(2, 0)).ok, Some(false), "fault-around");
        assert_eq!(fault_check(Expect::Minor, 10, f(10, 1)).ok, Some(false));
        assert_eq!(fault_check(Expect::Major, 10, f(0, 10)).ok, Some(true));
        assert_eq!(fault_check(Expect::Major, 10, f(3, 7)).ok, Some(false), "readahead made some minor");
        assert_eq!(fault_check(Expect::One, 10, f(4, 6)).ok, Some(true));
        assert_eq!(fault_check(Expect::NoKernelFault, 10, f(0, 0)).ok, Some(true));
        assert_eq!(fault_check(Expect::NoKernelFault, 10, f(1, 0)).ok, Some(false));
        assert_eq!(fault_check(Expect::Minor, 0, f(0, 0)).ok, Some(false), "nothing touched proves nothing");
        assert_eq!(fault_check(Expect::Minor, 10, None).ok, None);
        assert!(fault_check(Expect::Major, 5, f(1, 4)).observed.contains("1 minor, 4 major for 5"));
    }

    #[test]
    fn driver_splits_batches_larger_than_the_region_and_rearms() {
        struct Fake {
            rearms: Vec<usize>,
        }
        impl Arena for Fake {
            fn pages(&self) -> usize {
                4
            }
            fn rearm(&mut self, used: usize) -> Result<(), String> {
                self.rearms.push(used);
                Ok(())
            }
            fn time(&mut self, _: &Timer, _: usize, count: usize) -> Timed {
                Timed { ticks: 10 * count as u64 + 5, pairs: 1, trap: Some(3 * count as u64) }
            }
        }
        let timer = Timer::with_overhead(Timer::with_scale(platform::timer::TimerKind::MonotonicRaw, 1.0), 5.0);
        let mut d = Driver::new(Fake { rearms: Vec::new() });
        // 3 then 7 touches: pieces 3 | 1, 4, 2 → rearms after 4 and after 8.
        let regions = crate::sampler::Timed::regions;
        assert_eq!(d.routine(&timer, 3), regions(35, 1));
        assert_eq!(d.routine(&timer, 7), regions(10 * 7 + 3 * 5, 3));
        assert_eq!(d.arena.rearms, vec![4, 4]);
        assert_eq!(d.touched, 10);
        let samples = Samples { per_op_ns: vec![10.0], ..Samples::default() };
        let b = d.breakdown(&samples);
        assert_eq!(b[0], ("trap".to_string(), vec![3.0]));
        assert_eq!(b[1], ("other".to_string(), vec![7.0]));
    }

    #[test]
    fn anon_and_cow_faults_are_one_minor_per_page() {
        for bench in [&AnonRead as &dyn Benchmark, &AnonWrite, &Cow] {
            let m = run_validated(bench, &Params::new()).unwrap_or_else(|e| panic!("{}: {e:?}", bench.id()));
            assert!(m.samples.per_op_ns.len() >= 5, "{}", bench.id());
            assert!(m.checks.iter().all(|c| c.ok.is_some()), "{}", bench.id());
            assert_eq!(failures(&m), Vec::<String>::new(), "{}", bench.id());
        }
    }
}
