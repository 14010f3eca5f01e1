//! The cold-cache mode: each sample times **one** operation right after a disturbance that
//! evicts what the operation would otherwise find warm, and is paired with a **hot twin**, the
//! same operation timed the same single-operation way right after it (Go!'s "worst case"
//! against its "best case", issue 27).
//!
//! **The disturbance** ([`Disturber::disturb`]), outside the timed region, in this order:
//! 1. *Stream* ([`Disturber::stream`]): one read of every 64-byte line of a private buffer of
//!    [`STREAM_LLC_FACTOR`] × the last-level cache (the largest cache `/sys/devices/system/
//!    cpu/cpu0/cache` reports, as `osprim env` shows it; [`FALLBACK_LLC_BYTES`] when none is
//!    reported), mapped with transparent huge pages off. It evicts, from every cache level the
//!    measuring CPU fills (L1d, L2, L3), the operation's own data and code lines, the peer's
//!    lines in the caches this CPU shares with it, and the kernel's lines the operation uses
//!    (its entry code, its stack, the structures it reads): those go too, but not
//!    deterministically — an LRU-like replacement keeps a line that something else touched
//!    meanwhile (a timer interrupt's). The L1i is emptied by the stream only where the L2 is
//!    inclusive of it (AMD Zen's is; on Intel since Skylake-SP it is not), and in part by step 3.
//!    The reads are clean: no dirty line is left for the timed operation to write back.
//! 2. *TLB*: the same stream touches one line in every one of the buffer's 4 KiB pages (12,288
//!    pages for a 32 MiB LLC), far more than any second-level TLB holds (1,536–3,072 entries
//!    on current x86), so the operation's 4 KiB translations are evicted, and the paging-
//!    structure caches are refilled with the buffer's. Translations of huge pages (the
//!    kernel's direct map and text, in 2 MiB or 1 GiB pages) live in structures of their own
//!    on some CPUs and may survive; so may a PCID-tagged kernel entry.
//! 3. *Branch predictors* ([`Disturber::branches`]): [`BRANCH_ITERATIONS`] indirect calls, each
//!    to one of [`ARMS`] distinct functions chosen by a pseudo-random number, each making four
//!    conditional branches on pseudo-random bits: it overwrites branch-target-buffer entries,
//!    the indirect predictor and the global history with unpredictable outcomes, and runs
//!    about 30 KiB of code (the L1i's size here). It cannot reach the return stack buffer
//!    deeper than its own calls, nor predictor state the hardware tags by privilege level or
//!    address-space id (the kernel's own entries on CPUs with such tagging), nor the micro-op
//!    cache deterministically.
//!
//! **What no step reaches:** the other hyperthread of this core and other CPUs' private
//! caches (the peer's lines in its own L1/L2 when it runs elsewhere); the hypervisor's caches
//! and its own TLB entries (nested paging: the host's translations of the guest's memory are
//! cached in the same TLB, evicted only as far as step 2 evicts them); memory-side caches and
//! the DRAM row buffers; the page cache and the kernel's slab state (not a CPU cache: an
//! operation that allocates still finds its slab warm); and anything the operation touches
//! that the disturbance itself warms again (the few kernel lines of the page faults the stream
//! takes are none: the buffer is populated once, when made). clflush of the operation's own
//! buffers is not done: the stream already evicts them from every level this CPU fills.
//!
//! **Pairs.** A cold sample: disturb, then the routine's one operation with its untimed
//! set-up before the disturbance or after it, as the routine says ([`Before::now`] marks
//! where the disturbance goes: right before `start`). An operation whose timed part begins
//! inside another, untimed one calls it there: a throw is timed from the callee's stamp, so
//! `domain.throw` disturbs inside the callee, after the call's untimed entry (whose rights
//! switch, stack switch and method would otherwise warm again what the throw uses) and right
//! before that stamp. An operation timed from one side to the other is stamped on arrival:
//! `ctx.user`'s cold sample is the first switch alone, to the coroutine's stamp, not half a
//! round trip whose second switch would find everything warm. Then [`HOT_WARMUPS`] untimed calls and
//! the **hot twin**: the same routine without the disturbance, timed alike. The hot twin is
//! taken in the same round, a few µs after its cold sample, with the same region shape and
//! overhead subtracted, so the ratio cold/hot is a paired comparison that the machine's drift
//! cannot bias; the warm-up calls between them train the predictors on the operation as a
//! tight loop would, which is what a "best case" is. The hot twin is not the batched hot row
//! (`osprim run` without `--cache`): it is one operation timed on its own, and carries the
//! timer's step and overhead as the cold sample does.
//!
//! **Timing.** One operation per sample, so the counter's step (recorded with the run's timer)
//! and the overhead matter: each sample has the overhead calibrated in the same round for its
//! region shape subtracted ([`crate::sampler::overhead_of`]; [`crate::Ctx::iter`]'s loop at n = 1
//! for `iter` benchmarks, exactly the calibrated loop shape; a routine's own region for
//! [`crate::Ctx::iter_cold`]). Pairs are taken until the round's cold median is known within
//! the target ([`crate::sampler::StopReason::TargetMet`]) or [`BUDGET_SHARE`] of its budget is
//! spent (then the row says `ci-wide` or `ci-unusable` when the interval misses the target: a
//! cold figure spreads far more than a hot one, with the kernel's lines found or not). With
//! `--method seed`, a run takes the seed method's fixed count instead, 10,000 pairs over its
//! rounds, whatever the time (each costs a disturbance: `syscall.getfd` took 5 s here).

use crate::sampler::{Clock, SamplerConfig, Samples, StopReason, Timed, Wall, overhead_of};
use platform::timer::Timer;
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use sys::fault::Region;

/// The parameter every cold-mode row carries: `cache=cold` or `cache=hot` (its twin).
pub const CACHE_PARAM: &str = "cache";
/// `cache=cold`: disturbed before each single operation.
pub const COLD: &str = "cold";
/// `cache=hot`: the hot twin of a `cache=cold` row, measured in the same rounds.
pub const HOT: &str = "hot";

/// The benchmarks whose cold twins the bare `osprim` (the seed suite) measures: the
/// counterparts of Go!'s worst-case rows (install, uninstall, get_self, get_stack,
/// switch_stacks, lock, unlock, reject, sel2ref's kernel step); the domain ones join them.
pub const SUITE: &[&str] = &[
    "lib.dlopen",
    "lib.dlclose",
    "id.gettid",
    "id.altstack",
    "ctx.user",
    "lock.mutex.lock",
    "lock.mutex.unlock",
    "syscall.reject",
    "syscall.getfd",
];

/// Whether a visit of `bench` under `params` runs cold: `cache=cold` on a benchmark with a
/// cold mode ([`crate::Benchmark::cold_mode`]; a benchmark with a `cache` parameter of its
/// own has none).
pub fn is_cold_visit(bench: &dyn crate::Benchmark, params: &model::Params) -> bool {
    bench.cold_mode().is_ok() && params.get(CACHE_PARAM).is_some_and(|v| model::vocab::param_is(v, COLD))
}

/// `params` with `cache=value`.
pub fn with_cache(params: &model::Params, value: &str) -> model::Params {
    let mut p = params.clone();
    p.insert(CACHE_PARAM.into(), value.into());
    p
}

/// The hot twin's record made from a cold visit's: the twins as its samples, the same checks,
/// notes and parameters (but `cache=hot`).
pub fn hot_twin(m: &model::Measured) -> model::Measured {
    model::Measured {
        samples: Samples {
            per_op_ns: m.samples.hot_twin_ns.clone(),
            iterations_per_sample: 1,
            warmup_iterations: m.samples.warmup_iterations,
            stop: m.samples.stop,
            counters: m.samples.hot_twin_counters.clone(),
            ..Samples::default()
        },
        unit: m.unit,
        checks: m.checks.clone(),
        notes: m.notes.clone(),
        params: m.params.clone(),
        observed: m.observed.clone(),
        breakdown: Vec::new(),
    }
}

/// The stream covers this many times the last-level cache (an LRU-like cache is emptied by
/// about 1×, a pseudo-random or victim one needs more).
pub const STREAM_LLC_FACTOR: f64 = 1.5;
/// The last-level cache assumed when the machine reports none.
pub const FALLBACK_LLC_BYTES: u64 = 32 << 20;
/// The stream never exceeds this (a machine with a huge LLC pays at most this per sample).
pub const MAX_STREAM_BYTES: u64 = 256 << 20;
/// Indirect calls of the branch step.
pub const BRANCH_ITERATIONS: usize = 8192;
/// Untimed calls between a cold sample and its hot twin.
pub const HOT_WARMUPS: usize = 2;
/// Untimed calls before the first pair of a round (lazy binding, first-use faults).
pub const PAIR_WARMUP: usize = 3;
/// Share of the round's budget a cold row's pairs take: each pair costs a disturbance (about
/// 2.3 ms for a 48 MiB stream here) and gives two rows, so half the budget keeps a cold run of
/// a family within about 3 × its hot run while giving a hundred pairs or more per row.
pub const BUDGET_SHARE: f64 = 0.5;
/// Fewest pairs a round takes, stretching its budget up to [`MAX_STRETCH`] times.
pub const MIN_PAIRS: usize = 8;
/// How far the budget may stretch for [`MIN_PAIRS`].
pub const MAX_STRETCH: u32 = 3;
/// Share of the round's budget that must pass before the target may stop it.
const MIN_TIME_SHARE: f64 = 0.15;
/// Line size assumed by the stream.
const LINE: usize = 64;

/// The size of the last-level cache of CPU 0 (the largest cache sysfs reports), bytes.
pub fn llc_bytes() -> Option<u64> {
    platform::env::capture().cpu.caches.iter().filter_map(|c| c.size_bytes).max()
}

/// What evicts the caches, TLB and branch predictors (module doc).
pub struct Disturber {
    buffer: Region,
    page: usize,
    rng: Cell<u64>,
    /// The last-level cache the stream was sized for, bytes.
    pub llc_bytes: u64,
}

impl Disturber {
    /// A disturber for this machine: a stream of [`STREAM_LLC_FACTOR`] × its LLC.
    pub fn new() -> std::io::Result<Disturber> {
        let llc = llc_bytes().unwrap_or(FALLBACK_LLC_BYTES);
        let bytes = ((llc as f64 * STREAM_LLC_FACTOR) as u64).min(MAX_STREAM_BYTES);
        let mut d = Disturber::with_bytes(bytes as usize)?;
        d.llc_bytes = llc;
        Ok(d)
    }

    /// A disturber streaming `bytes` (rounded up to whole pages), populated now.
    pub fn with_bytes(bytes: usize) -> std::io::Result<Disturber> {
        let page = sys::fault::page_size();
        let buffer = Region::anon(bytes.div_ceil(page).max(1))?;
        // Written, not read: a read of never-written anonymous memory maps the one shared
        // zero page, which a stream would find in the cache.
        buffer.fill(1);
        Ok(Disturber { buffer, page, rng: Cell::new(0x9e37_79b9_7f4a_7c15), llc_bytes: bytes as u64 })
    }

    /// Bytes the stream reads.
    pub fn stream_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Pages the stream touches (one TLB entry each).
    pub fn pages(&self) -> usize {
        self.buffer.pages()
    }

    /// Steps 1–3 of the module doc.
    pub fn disturb(&self) {
        black_box(self.stream());
        self.branches();
    }

    /// Reads one byte of every line of the buffer (steps 1 and 2); returns their sum.
    #[inline(never)]
    pub fn stream(&self) -> u64 {
        let mut acc = 0u64;
        for i in 0..self.buffer.pages() {
            for off in (0..self.page).step_by(LINE) {
                acc = acc.wrapping_add(u64::from(self.buffer.read_at(i, off)));
            }
        }
        acc
    }

    /// The branch step (step 3).
    #[inline(never)]
    pub fn branches(&self) {
        let mut x = self.rng.get();
        let mut acc = 0u64;
        for _ in 0..BRANCH_ITERATIONS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = ARMS[(x as usize) % ARMS.len()];
            acc = acc.wrapping_add(f(black_box(x >> 9)));
        }
        self.rng.set(x);
        black_box(acc);
    }
}

/// Handed to a cold routine ([`crate::Ctx::iter_cold`]): where it calls [`Before::now`],
/// right before its timed region, the caches are disturbed on a cold sample and nothing
/// happens on its hot twin.
pub struct Before<'a> {
    disturber: Option<&'a Disturber>,
    counts: Option<&'a dyn PairCounts>,
    ops: Cell<u64>,
}

/// The counting hook of a cold pair (`--counters`, [`crate::Ctx::iter_cold`]): the counters
/// are read at [`Before::now`], after the disturbance, and again when the routine returns, for
/// the cold sample and for its hot twin (not for the untimed calls between them).
///
/// **What the count covers:** the routine from `Before::now` to its return: the timed
/// operation, the timer's reads, and whatever untimed work the routine does after its `stop`
/// (most routines do none; those that tear down after the region count that too). The
/// counts of an empty region are subtracted, as for a counted loop. Only the calling thread
/// is counted.
pub trait PairCounts {
    /// Reads the counters (the region starts).
    fn begin(&self);
    /// Reads them again: the region's counts per operation, of `ops` (none when it never
    /// began).
    fn end(&self, ops: u64) -> crate::counters::Entry;
}

impl<'a> Before<'a> {
    /// A cold sample's: disturbs.
    pub fn cold(d: &'a Disturber) -> Before<'a> {
        Before { disturber: Some(d), counts: None, ops: Cell::new(1) }
    }

    /// A hot twin's: does nothing.
    pub fn hot() -> Before<'static> {
        Before { disturber: None, counts: None, ops: Cell::new(1) }
    }

    /// Disturbs the caches, TLB and branch predictors if this is a cold sample, and starts the
    /// pair's count (`--counters`): right before the timed part, wherever that begins (inside
    /// a callee, for a throw).
    #[inline(always)]
    pub fn now(&self) {
        if let Some(d) = self.disturber {
            d.disturb();
        }
        if let Some(c) = self.counts {
            c.begin();
        }
    }

    /// Says that the timed region runs `n` operations (its time divided by `n`, e.g. a round
    /// trip of two switches): a counted pair's counts are divided alike. Default 1.
    pub fn ops(&self, n: u64) {
        self.ops.set(n.max(1));
    }

    /// Whether this is a cold sample.
    pub fn is_cold(&self) -> bool {
        self.disturber.is_some()
    }

    /// The disturber of a cold sample (for a routine that disturbs at a place of its own).
    pub fn disturber(&self) -> Option<&'a Disturber> {
        self.disturber
    }
}

/// Samples cold/hot pairs of `routine` (module doc) in one round: `per_op_ns` holds the cold
/// samples, `hot_twin_ns` their hot twins; `timer` carries the overhead of the routine's
/// region shape. A routine that gives up (`None`) ends the round ([`StopReason::Aborted`]).
/// Without a disturber every pair is hot (tests).
pub fn sample_pairs(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    disturber: Option<&Disturber>,
    routine: impl FnMut(&Before) -> Option<Timed>,
) -> Samples {
    sample_pairs_on(&Wall, cfg, timer, interrupt, disturber, routine)
}

/// [`sample_pairs`] with each cold sample and each hot twin counted by `counts`
/// ([`PairCounts`]): the samples and, index for index, the cold samples' counts and the hot
/// twins'.
pub fn sample_pairs_counted(
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    disturber: Option<&Disturber>,
    counts: &dyn PairCounts,
    routine: impl FnMut(&Before) -> Option<Timed>,
) -> (Samples, Vec<crate::counters::Entry>, Vec<crate::counters::Entry>) {
    pairs_on(&Wall, cfg, timer, interrupt, disturber, Some(counts), routine)
}

/// [`sample_pairs`] with the time that passes read from `clock`.
pub fn sample_pairs_on(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    disturber: Option<&Disturber>,
    routine: impl FnMut(&Before) -> Option<Timed>,
) -> Samples {
    pairs_on(clock, cfg, timer, interrupt, disturber, None, routine).0
}

/// The cold and hot counts of a round's pairs.
type PairEntries = (Samples, Vec<crate::counters::Entry>, Vec<crate::counters::Entry>);

/// [`sample_pairs_on`], counting each pair's two timed calls when `counts` is given.
pub fn pairs_on(
    clock: &dyn Clock,
    cfg: &SamplerConfig,
    timer: &Timer,
    interrupt: &AtomicBool,
    disturber: Option<&Disturber>,
    counts: Option<&dyn PairCounts>,
    mut routine: impl FnMut(&Before) -> Option<Timed>,
) -> PairEntries {
    let (mut cold_counts, mut hot_counts) = (Vec::new(), Vec::new());
    let to_ns = |t: Timed| timer.ticks_to_ns(t.ticks as f64 - overhead_of(timer, t.regions));
    let mut out = Samples { iterations_per_sample: 1, ..Samples::default() };
    let began = clock.now();
    let budget_s = cfg.budget_s * BUDGET_SHARE;
    let budget = std::time::Duration::from_secs_f64(budget_s.max(0.0));
    for _ in 0..PAIR_WARMUP {
        if routine(&Before::hot()).is_none() {
            out.stop = Some(StopReason::Aborted);
            return (out, cold_counts, hot_counts);
        }
        out.warmup_iterations += 1;
    }
    let mut next_check = MIN_PAIRS;
    loop {
        if interrupt.load(Ordering::Relaxed) {
            out.stop = Some(StopReason::Interrupted);
            return (out, cold_counts, hot_counts);
        }
        let first = Before { disturber, counts, ops: Cell::new(1) };
        let Some(cold) = routine(&first) else {
            out.stop = Some(StopReason::Aborted);
            return (out, cold_counts, hot_counts);
        };
        let cold_count = counts.map(|c| c.end(first.ops.get()));
        let (mut hot, mut twin_ops) = (None, 1);
        for k in 0..=HOT_WARMUPS {
            let twin =
                Before { disturber: None, counts: if k == HOT_WARMUPS { counts } else { None }, ops: Cell::new(1) };
            hot = routine(&twin);
            twin_ops = twin.ops.get();
            if hot.is_none() {
                break;
            }
        }
        let Some(hot) = hot else {
            out.stop = Some(StopReason::Aborted);
            return (out, cold_counts, hot_counts);
        };
        if let (Some(c), Some(cold_count)) = (counts, cold_count) {
            cold_counts.push(cold_count);
            hot_counts.push(c.end(twin_ops));
        }
        out.per_op_ns.push(to_ns(cold));
        out.hot_twin_ns.push(to_ns(hot));
        let len = out.per_op_ns.len();
        if len >= cfg.max_samples {
            out.stop = Some(StopReason::SampleCap);
            return (out, cold_counts, hot_counts);
        }
        // The seed method's fixed count: the round's share of its 10,000 runs, as pairs,
        // whatever the time or the interval.
        if cfg.method == crate::sampler::Method::Seed {
            if len >= cfg.seed_runs {
                out.stop = Some(StopReason::FixedCount);
                return (out, cold_counts, hot_counts);
            }
            continue;
        }
        let elapsed = clock.since(began);
        if len >= next_check && elapsed.as_secs_f64() >= budget_s * MIN_TIME_SHARE {
            if crate::sampler::round_half_width_rel(&out.per_op_ns) <= cfg.ci_target_rel {
                out.stop = Some(StopReason::TargetMet);
                return (out, cold_counts, hot_counts);
            }
            next_check = len + (len / 2).max(4);
        }
        if (len >= MIN_PAIRS && elapsed >= budget) || (len >= 2 && elapsed >= budget * MAX_STRETCH) {
            out.stop = Some(StopReason::BudgetSpent);
            return (out, cold_counts, hot_counts);
        }
    }
}

/// One function of the branch step: four conditional branches on the bits of `x`, with
/// constants of its own so that every instance is distinct code.
#[inline(never)]
fn arm<const K: u64>(x: u64) -> u64 {
    let mut a = x ^ K.wrapping_mul(0x9e37_79b9);
    if a & 1 != 0 {
        a = a.wrapping_mul(3 + K);
    } else {
        a ^= K << 7;
    }
    if a & 2 != 0 {
        a = a.rotate_left((K % 61) as u32 + 1);
    }
    if a & 4 != 0 {
        a = a.wrapping_add(K ^ 0x55);
    } else {
        a = a.wrapping_sub(K | 1);
    }
    if (a >> 5) & 1 != 0 {
        a ^= a >> (K % 13 + 1);
    }
    a
}

/// The branch step's functions.
static ARMS: [fn(u64) -> u64; 512] = [
    arm::<0>, arm::<1>, arm::<2>, arm::<3>, arm::<4>, arm::<5>, arm::<6>, arm::<7>, arm::<8>, arm::<9>, arm::<10>,
    arm::<11>, arm::<12>, arm::<13>, arm::<14>, arm::<15>, arm::<16>, arm::<17>, arm::<18>, arm::<19>, arm::<20>,
    arm::<21>, arm::<22>, arm::<23>, arm::<24>, arm::<25>, arm::<26>, arm::<27>, arm::<28>, arm::<29>, arm::<30>,
    arm::<31>, arm::<32>, arm::<33>, arm::<34>, arm::<35>, arm::<36>, arm::<37>, arm::<38>, arm::<39>, arm::<40>,
    arm::<41>, arm::<42>, arm::<43>, arm::<44>, arm::<45>, arm::<46>, arm::<47>, arm::<48>, arm::<49>, arm::<50>,
    arm::<51>, arm::<52>, arm::<53>, arm::<54>, arm::<55>, arm::<56>, arm::<57>, arm::<58>, arm::<59>, arm::<60>,
    arm::<61>, arm::<62>, arm::<63>, arm::<64>, arm::<65>, arm::<66>, arm::<67>, arm::<68>, arm::<69>, arm::<70>,
    arm::<71>, arm::<72>, arm::<73>, arm::<74>, arm::<75>, arm::<76>, arm::<77>, arm::<78>, arm::<79>, arm::<80>,
    arm::<81>, arm::<82>, arm::<83>, arm::<84>, arm::<85>, arm::<86>, arm::<87>, arm::<88>, arm::<89>, arm::<90>,
    arm::<91>, arm::<92>, arm::<93>, arm::<94>, arm::<95>, arm::<96>, arm::<97>, arm::<98>, arm::<99>, arm::<100>,
    arm::<101>, arm::<102>, arm::<103>, arm::<104>, arm::<105>, arm::<106>, arm::<107>, arm::<108>, arm::<109>,
    arm::<110>, arm::<111>, arm::<112>, arm::<113>, arm::<114>, arm::<115>, arm::<116>, arm::<117>, arm::<118>,
    arm::<119>, arm::<120>, arm::<121>, arm::<122>, arm::<123>, arm::<124>, arm::<125>, arm::<126>, arm::<127>,
    arm::<128>, arm::<129>, arm::<130>, arm::<131>, arm::<132>, arm::<133>, arm::<134>, arm::<135>, arm::<136>,
    arm::<137>, arm::<138>, arm::<139>, arm::<140>, arm::<141>, arm::<142>, arm::<143>, arm::<144>, arm::<145>,
    arm::<146>, arm::<147>, arm::<148>, arm::<149>, arm::<150>, arm::<151>, arm::<152>, arm::<153>, arm::<154>,
    arm::<155>, arm::<156>, arm::<157>, arm::<158>, arm::<159>, arm::<160>, arm::<161>, arm::<162>, arm::<163>,
    arm::<164>, arm::<165>, arm::<166>, arm::<167>, arm::<168>, arm::<169>, arm::<170>, arm::<171>, arm::<172>,
    arm::<173>, arm::<174>, arm::<175>, arm::<176>, arm::<177>, arm::<178>, arm::<179>, arm::<180>, arm::<181>,
    arm::<182>, arm::<183>, arm::<184>, arm::<185>, arm::<186>, arm::<187>, arm::<188>, arm::<189>, arm::<190>,
    arm::<191>, arm::<192>, arm::<193>, arm::<194>, arm::<195>, arm::<196>, arm::<197>, arm::<198>, arm::<199>,
    arm::<200>, arm::<201>, arm::<202>, arm::<203>, arm::<204>, arm::<205>, arm::<206>, arm::<207>, arm::<208>,
    arm::<209>, arm::<210>, arm::<211>, arm::<212>, arm::<213>, arm::<214>, arm::<215>, arm::<216>, arm::<217>,
    arm::<218>, arm::<219>, arm::<220>, arm::<221>, arm::<222>, arm::<223>, arm::<224>, arm::<225>, arm::<226>,
    arm::<227>, arm::<228>, arm::<229>, arm::<230>, arm::<231>, arm::<232>, arm::<233>, arm::<234>, arm::<235>,
    arm::<236>, arm::<237>, arm::<238>, arm::<239>, arm::<240>, arm::<241>, arm::<242>, arm::<243>, arm::<244>,
    arm::<245>, arm::<246>, arm::<247>, arm::<248>, arm::<249>, arm::<250>, arm::<251>, arm::<252>, arm::<253>,
    arm::<254>, arm::<255>, arm::<256>, arm::<257>, arm::<258>, arm::<259>, arm::<260>, arm::<261>, arm::<262>,
    arm::<263>, arm::<264>, arm::<265>, arm::<266>, arm::<267>, arm::<268>, arm::<269>, arm::<270>, arm::<271>,
    arm::<272>, arm::<273>, arm::<274>, arm::<275>, arm::<276>, arm::<277>, arm::<278>, arm::<279>, arm::<280>,
    arm::<281>, arm::<282>, arm::<283>, arm::<284>, arm::<285>, arm::<286>, arm::<287>, arm::<288>, arm::<289>,
    arm::<290>, arm::<291>, arm::<292>, arm::<293>, arm::<294>, arm::<295>, arm::<296>, arm::<297>, arm::<298>,
    arm::<299>, arm::<300>, arm::<301>, arm::<302>, arm::<303>, arm::<304>, arm::<305>, arm::<306>, arm::<307>,
    arm::<308>, arm::<309>, arm::<310>, arm::<311>, arm::<312>, arm::<313>, arm::<314>, arm::<315>, arm::<316>,
    arm::<317>, arm::<318>, arm::<319>, arm::<320>, arm::<321>, arm::<322>, arm::<323>, arm::<324>, arm::<325>,
    arm::<326>, arm::<327>, arm::<328>, arm::<329>, arm::<330>, arm::<331>, arm::<332>, arm::<333>, arm::<334>,
    arm::<335>, arm::<336>, arm::<337>, arm::<338>, arm::<339>, arm::<340>, arm::<341>, arm::<342>, arm::<343>,
    arm::<344>, arm::<345>, arm::<346>, arm::<347>, arm::<348>, arm::<349>, arm::<350>, arm::<351>, arm::<352>,
    arm::<353>, arm::<354>, arm::<355>, arm::<356>, arm::<357>, arm::<358>, arm::<359>, arm::<360>, arm::<361>,
    arm::<362>, arm::<363>, arm::<364>, arm::<365>, arm::<366>, arm::<367>, arm::<368>, arm::<369>, arm::<370>,
    arm::<371>, arm::<372>, arm::<373>, arm::<374>, arm::<375>, arm::<376>, arm::<377>, arm::<378>, arm::<379>,
    arm::<380>, arm::<381>, arm::<382>, arm::<383>, arm::<384>, arm::<385>, arm::<386>, arm::<387>, arm::<388>,
    arm::<389>, arm::<390>, arm::<391>, arm::<392>, arm::<393>, arm::<394>, arm::<395>, arm::<396>, arm::<397>,
    arm::<398>, arm::<399>, arm::<400>, arm::<401>, arm::<402>, arm::<403>, arm::<404>, arm::<405>, arm::<406>,
    arm::<407>, arm::<408>, arm::<409>, arm::<410>, arm::<411>, arm::<412>, arm::<413>, arm::<414>, arm::<415>,
    arm::<416>, arm::<417>, arm::<418>, arm::<419>, arm::<420>, arm::<421>, arm::<422>, arm::<423>, arm::<424>,
    arm::<425>, arm::<426>, arm::<427>, arm::<428>, arm::<429>, arm::<430>, arm::<431>, arm::<432>, arm::<433>,
    arm::<434>, arm::<435>, arm::<436>, arm::<437>, arm::<438>, arm::<439>, arm::<440>, arm::<441>, arm::<442>,
    arm::<443>, arm::<444>, arm::<445>, arm::<446>, arm::<447>, arm::<448>, arm::<449>, arm::<450>, arm::<451>,
    arm::<452>, arm::<453>, arm::<454>, arm::<455>, arm::<456>, arm::<457>, arm::<458>, arm::<459>, arm::<460>,
    arm::<461>, arm::<462>, arm::<463>, arm::<464>, arm::<465>, arm::<466>, arm::<467>, arm::<468>, arm::<469>,
    arm::<470>, arm::<471>, arm::<472>, arm::<473>, arm::<474>, arm::<475>, arm::<476>, arm::<477>, arm::<478>,
    arm::<479>, arm::<480>, arm::<481>, arm::<482>, arm::<483>, arm::<484>, arm::<485>, arm::<486>, arm::<487>,
    arm::<488>, arm::<489>, arm::<490>, arm::<491>, arm::<492>, arm::<493>, arm::<494>, arm::<495>, arm::<496>,
    arm::<497>, arm::<498>, arm::<499>, arm::<500>, arm::<501>, arm::<502>, arm::<503>, arm::<504>, arm::<505>,
    arm::<506>, arm::<507>, arm::<508>, arm::<509>, arm::<510>, arm::<511>,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake;
    use std::time::Duration;

    /// Median of `v`.
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        stats::median(&v)
    }

    #[test]
    fn pairs_hold_a_cold_sample_and_its_twin_and_only_the_cold_call_disturbs() {
        // A fake routine: 300 ticks after the disturbance, 100 otherwise; the clock moves by the
        // ticks. The disturber is a small real one (it must be called only on cold samples).
        let d = Disturber::with_bytes(1 << 16).expect("map");
        let clock = fake::Clock::new();
        let cfg = SamplerConfig { budget_s: 1e-4, ..SamplerConfig::quick() };
        let (mut colds, mut hots) = (0, 0);
        let s = sample_pairs_on(&clock, &cfg, &fake::timer(), &AtomicBool::new(false), Some(&d), |b| {
            let t = if b.is_cold() { 300 } else { 100 };
            if b.is_cold() {
                colds += 1
            } else {
                hots += 1
            }
            b.now();
            clock.advance(Duration::from_nanos(t));
            Some(Timed::one(t))
        });
        assert_eq!(s.per_op_ns.len(), s.hot_twin_ns.len());
        assert!(s.per_op_ns.len() >= MIN_PAIRS);
        assert!(s.per_op_ns.iter().all(|&v| v == 300.0) && s.hot_twin_ns.iter().all(|&v| v == 100.0));
        assert_eq!(colds, s.per_op_ns.len());
        assert_eq!(hots, PAIR_WARMUP + (HOT_WARMUPS + 1) * s.per_op_ns.len());
        assert_eq!((s.iterations_per_sample, s.warmup_iterations), (1, PAIR_WARMUP as u64));
        // Identical samples meet any target once the minimum time has passed.
        assert_eq!(s.stop, Some(StopReason::TargetMet));
    }

    #[test]
    fn the_seed_method_takes_its_fixed_count_of_pairs_whatever_the_budget() {
        let d = Disturber::with_bytes(1 << 16).expect("map");
        for budget_s in [1e-9, 1e3] {
            let clock = fake::Clock::new();
            let cfg = SamplerConfig {
                method: crate::sampler::Method::Seed,
                seed_runs: 37,
                budget_s,
                ..SamplerConfig::quick()
            };
            let mut colds = 0;
            let s = sample_pairs_on(&clock, &cfg, &fake::timer(), &AtomicBool::new(false), Some(&d), |b| {
                colds += usize::from(b.is_cold());
                clock.advance(Duration::from_nanos(100));
                Some(Timed::one(100))
            });
            assert_eq!((s.per_op_ns.len(), s.hot_twin_ns.len(), colds), (37, 37, 37), "budget {budget_s} s");
            assert_eq!(s.stop, Some(StopReason::FixedCount));
        }
    }

    #[test]
    fn the_overhead_of_the_region_is_subtracted_from_both_sides() {
        let clock = fake::Clock::new();
        let timer = Timer::with_overheads(fake::timer(), 40.0, 40.0);
        let cfg = SamplerConfig { budget_s: 1e-5, ..SamplerConfig::quick() };
        let s = sample_pairs_on(&clock, &cfg, &timer, &AtomicBool::new(false), None, |_| {
            clock.advance(Duration::from_nanos(100));
            Some(Timed::one(140))
        });
        assert!(s.per_op_ns.iter().chain(&s.hot_twin_ns).all(|&v| v == 100.0), "{s:?}");
    }

    #[test]
    fn a_routine_that_gives_up_ends_the_round_with_whole_pairs() {
        let mut calls = 0;
        let cfg = SamplerConfig { budget_s: 1.0, ..SamplerConfig::quick() };
        let s = sample_pairs(&cfg, &fake::timer(), &AtomicBool::new(false), None, |_| {
            calls += 1;
            (calls < 12).then_some(Timed::one(5))
        });
        assert_eq!(s.stop, Some(StopReason::Aborted));
        assert_eq!(s.per_op_ns.len(), s.hot_twin_ns.len());
    }

    /// Reads one byte of every line of `buf`, timed; ticks.
    #[inline(never)]
    fn read_all(timer: &Timer, buf: &[u8]) -> u64 {
        let t0 = timer.start();
        let mut acc = 0u8;
        for i in (0..buf.len()).step_by(LINE) {
            acc = acc.wrapping_add(black_box(buf[i]));
        }
        black_box(acc);
        timer.stop().wrapping_sub(t0)
    }

    #[test]
    fn the_disturbance_evicts_a_buffer_that_fits_in_the_caches() {
        // 256 KiB (within L2 here): read warm, then read after the disturbance, alternately in
        // one run; the ratio of the medians, not a time, is asserted.
        let _guard = crate::testing::serial();
        let (timer, _) = platform::timer::detect();
        let d = Disturber::new().expect("map");
        assert!(d.stream_bytes() as u64 >= d.llc_bytes, "the stream covers the LLC");
        assert!(d.pages() >= 4096, "the stream touches more pages than a TLB holds");
        let buf: Vec<u8> = (0..256 << 10).map(|i| i as u8).collect();
        let (mut warm, mut cold) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            read_all(&timer, &buf);
            warm.push(read_all(&timer, &buf) as f64);
            d.disturb();
            cold.push(read_all(&timer, &buf) as f64);
        }
        let ratio = median(cold) / median(warm);
        println!("a 256 KiB read after the disturbance: {ratio:.2} × a warm one");
        assert!(ratio > 1.5, "a disturbed read costs {ratio:.2} × a warm one");
    }

    #[test]
    fn the_branch_step_runs_distinct_code_for_every_arm() {
        let outs: std::collections::BTreeSet<u64> = ARMS.iter().map(|f| f(12345)).collect();
        assert!(outs.len() > ARMS.len() / 2, "{} distinct results", outs.len());
    }

    /// The disturbance's cost on this machine (run by hand: `cargo test --release -p
    /// osprim-bench cold::tests::cost -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn cost_on_this_machine() {
        let d = Disturber::new().expect("map");
        println!("LLC {} MiB, stream {} MiB, {} pages", d.llc_bytes >> 20, d.stream_bytes() >> 20, d.pages());
        for _ in 0..5 {
            let t = std::time::Instant::now();
            black_box(d.stream());
            let s = t.elapsed();
            let t = std::time::Instant::now();
            d.branches();
            println!("stream {:?}, branches {:?}", s, t.elapsed());
        }
    }
}
