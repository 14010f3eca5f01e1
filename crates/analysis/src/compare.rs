//! Comparing runs: for each result present in a base run and a newer one (same id, same
//! parameters but where it ran), the ratio `new / base` of the figures printed, with its 95 % CI,
//! and a verdict; what differs between the two runs; and the gate a CI job can fail on. Reads no
//! clock and prints nothing.
//!
//! **The figures and the ratio.** A row's figure is the median of its steady-state samples: each
//! round's samples less the start-up transient that MSER-5 cut (`summary.structure.rounds[i]
//! .dropped`), pooled — the very median the run's own table prints. The ratio is the new figure
//! over the base figure, exactly, and its 95 % CI comes from the hierarchical bootstrap of
//! [`stats::ratio::median_ratio`] (rounds — executions — then circular blocks within a
//! round; Davison & Hinkley 1997, §3.8) on those same samples. A derived difference without
//! samples (`a − b`) is read from its two intervals by [`stats::reading::ratio_of`].
//!
//! **Many rows at once: the false discovery rate.** A comparison asks the same question of
//! every row it pairs. Holding the chance of *any* wrong call at 5 % (Bonferroni, each interval
//! at 1 − 0.05 / m, as osprim did before) makes every interval of a 140-row catalogue a
//! 99.96 % one: on a 2-vCPU cloud VM whose level moves 10–30 % between processes, three runs
//! of the same build compared pairwise left 370 of 420 rows inconclusive. So a comparison
//! holds the **false discovery rate** instead ([`stats::multiple`]): each row with a ratio
//! gets a p-value for "ratio = 1" that agrees with its bootstrap intervals (the smallest α at
//! which the interval of level 1 − α excludes 1), Benjamini–Hochberg at q = 0.05 selects R of
//! the m tested rows, and the selected rows' intervals are at 1 − R·q/m (Benjamini &
//! Yekutieli 2005, FCR-adjusted intervals): on average at most 5 % of the rows called
//! different are wrong. Only a selected row may be called `faster` or `slower`. A row not
//! selected is read by its marginal 95 % interval, for `no change` alone (an equivalence
//! reading: the whole 95 % interval within the noise threshold) or `inconclusive`. In a
//! simulation of 30 comparisons of 140 rows (40 with a true change of 5–15 %, 5 rounds at
//! 5 % round-to-round noise), 0.13 % of the unchanged rows were called different (false
//! discovery rate 2.3 %), and 11.8 % of the true changes were found, against 5.6 % under
//! Bonferroni on the same data (`stats::ratio::simulation`). Rows without samples (derived
//! differences) take their p-value and intervals from their two figures' intervals widened
//! as a normal interval widens.
//!
//! **The machine's own movement** ([`movement`]). Each worker times a fixed reference at its
//! start and end (a user-space loop and a null system call, [`model::Reference`]); the ratio
//! new / base of their medians over the runs' executions, with a bootstrap interval over them
//! ([`stats::ratio::level_ratio`]), says how far the machine itself moved between the runs.
//! No row is called `faster` or `slower` by less than that: a row whose ratio lies within the
//! movement's band (the user-space loop's interval), or is no farther from 1 than the band's
//! farther end, is `inconclusive` (`within_machine_movement`). The null system call's reference
//! is reported and never widens the band: a change under test (a kernel, a seccomp filter, a
//! mitigation) moves it as it moves every system-call row, and would hide what it is there to
//! find (a filter that made system calls 3.9× dearer moved it 3.9× and hid `syscall.null`).
//! Runs without references (older files) compare as before, the movement unknown.
//!
//! **Verdict** ([`stats::reading::judge_ratio`], criterion.rs's "significant and beyond a
//! noise threshold" with a third answer): `slower` when the whole interval lies above 1 and the
//! ratio beyond the noise threshold, `faster` likewise below, `no change` when the whole interval
//! lies within the threshold, `inconclusive` otherwise. Every unit osprim records (time, bytes,
//! counts per operation) is better smaller, so "slower" reads "larger" for bytes and "more" for
//! counts. Two readings give no ratio at all:
//! - **below resolution**: a figure whose interval includes 0 (a difference such as
//!   `interpose.preload` = with − without, or `harness.empty`): a ratio over it has no bound, so
//!   only `|x| < bound` is said;
//! - **no interval**: rows of the seed method (a mean of single operations, whose interval says
//!   nothing of how a run varies between program starts), and any zero-width interval: such a
//!   row is `inconclusive`, said why, never `faster` or `slower`.
//!
//! **Mismatches.** Runs of different methods (seed against adaptive), or a row measured cold in
//! one run and warm in the other (a `cache` parameter), are not comparable: [`mismatch`] names
//! the first, and the command refuses it unless told to go on. Every difference in method,
//! budget, rounds, CI target, CPU placement, build and machine is listed ([`differences`]).
//!
//! **Marks.** A row whose self-check failed, or which was flagged `busy-cpu` or `interrupted`,
//! in either run, carries [`Mark`]s; [`Comparison::gate`] treats marked rows as [`Gate`] says.
//!
//! **The gate** ([`Comparison::gate`], [`GateOutcome::decision`]) cannot pass what it did not
//! judge: a row slower by more than the threshold fails it; else rows it could not decide
//! (inconclusive, below resolution, without a ratio, or marked and not judged) make it
//! *undecided* when they are more than the share allowed (none by default); only a gate that
//! decided every row (or all but the allowance) passes.

use model::{Flag, Method, Params, Row, RunFile, Unit};
use serde::Serialize;
use stats::multiple::{FDR_Q, benjamini_hochberg, fcr_confidence, p_value};
use stats::ratio::{RatioBootstrap, Rounds, ratio_bootstrap};
use stats::reading::{Interval, RatioVerdict, judge_ratio, ratio_of};

/// Default noise threshold: changes smaller than this are `no change`.
pub const DEFAULT_NOISE: f64 = 0.02;

/// Bootstrap resamples per compared result.
pub const RESAMPLES: usize = 2_000;

/// Resamples for the quick look of `run --baseline` as each result comes in (the comparison
/// at the end uses [`RESAMPLES`]).
pub const QUICK_RESAMPLES: usize = 300;

/// Parameters that say where a result ran, not what it is: ignored when matching results, and
/// listed on the row when they differ.
const WHERE_IT_RAN: &[&str] = &["cpu", "cpus"];

/// The parameter that says whether a result was measured with cold or warm caches.
const CACHE: &str = "cache";

/// Flags that make a row's figure untrustworthy: it may not measure what it claims.
pub const UNTRUSTWORTHY: [Flag; 3] = [Flag::CheckFailed, Flag::BusyCpu, Flag::Interrupted];

/// What a comparison concluded about one result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval below 1 and the ratio beyond the noise threshold.
    Faster,
    /// The whole interval above 1 and the ratio beyond the noise threshold.
    Slower,
    /// The whole interval within the noise threshold of 1.
    NoChange,
    /// The interval cannot tell, or there is no honest interval (see `no_ratio`).
    Inconclusive,
    /// A figure's interval includes 0: no ratio, only a bound.
    BelowResolution,
}

impl Verdict {
    /// Every verdict, in the order the summary counts them.
    pub const ALL: [Verdict; 5] =
        [Verdict::Faster, Verdict::Slower, Verdict::NoChange, Verdict::Inconclusive, Verdict::BelowResolution];

    /// As printed for a time.
    pub fn text(self) -> &'static str {
        self.text_for(Unit::Ns)
    }

    /// As printed for a figure in `unit`: `larger`/`smaller` for bytes, `more`/`fewer` for counts.
    pub fn text_for(self, unit: Unit) -> &'static str {
        match (self, unit) {
            (Verdict::Faster, Unit::Ns) => "faster",
            (Verdict::Slower, Unit::Ns) => "slower",
            (Verdict::Faster, Unit::Bytes) => "smaller",
            (Verdict::Slower, Unit::Bytes) => "larger",
            (Verdict::Faster, Unit::Count) => "fewer",
            (Verdict::Slower, Unit::Count) => "more",
            (Verdict::NoChange, _) => "no change",
            (Verdict::Inconclusive, _) => "inconclusive",
            (Verdict::BelowResolution, _) => "below resolution",
        }
    }
}

/// Why a compared row has no ratio.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRatio {
    /// A figure's interval includes 0 (`below_resolution` holds the bound).
    BelowResolution,
    /// A row of the seed method: a mean without an interval between runs.
    SeedMethod,
    /// The ratio's interval has no width.
    ZeroWidth,
    /// The ratio's interval reaches 0 or below (few rounds at the family's level): it says
    /// nothing of the ratio.
    ReachesZero,
}

impl NoRatio {
    /// Why, in a few words (a table's footnote).
    pub fn short(self) -> &'static str {
        match self {
            NoRatio::BelowResolution => "the figure's 95 % CI includes 0: no ratio, only |x| < bound",
            NoRatio::SeedMethod => "means of single operations, no interval between runs: never faster or slower",
            NoRatio::ZeroWidth => "every resample gave the same ratio: not called different",
            NoRatio::ReachesZero => "the ratio's CI reaches 0: no ratio, not called different",
        }
    }

    /// Why, in a sentence.
    pub fn why(self) -> &'static str {
        match self {
            NoRatio::BelowResolution => {
                "a figure's 95 % CI includes 0: the runs cannot tell it from nothing, so no ratio is taken"
            }
            NoRatio::SeedMethod => {
                "the seed method reports a mean of single operations whose interval says nothing of how a run varies \
                 between program starts: its rows are never called faster or slower (compare adaptive runs)"
            }
            NoRatio::ZeroWidth => {
                "every resample gave the same ratio: a zero-width interval says nothing of how a run varies, so \
                 the rows are not called different"
            }
            NoRatio::ReachesZero => {
                "the ratio's interval, at the level that holds over all the rows, reaches 0: too few rounds, or \
                 runs too far apart, to say anything of the ratio, so none is printed and the rows are not called \
                 different"
            }
        }
    }
}

/// In which run a mark was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The base run only.
    Base,
    /// The new run only.
    New,
    /// Both runs.
    Both,
}

impl Side {
    /// As printed.
    pub fn text(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::New => "new",
            Side::Both => "both",
        }
    }
}

/// An untrustworthy flag on a compared row, and in which run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Mark {
    /// One of [`UNTRUSTWORTHY`].
    pub flag: Flag,
    /// Where it was found.
    #[serde(rename = "in")]
    pub side: Side,
}

/// The statistic a compared row's figures are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The median of the steady-state samples (a derived difference: of the medians).
    Median,
    /// The mean (the seed method's figure).
    Mean,
}

/// One result in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    /// Benchmark id.
    pub id: String,
    /// Its parameters in the new run, where it ran included.
    pub params: Params,
    /// Unit of the figures.
    pub unit: Unit,
    /// What the figures are.
    pub statistic: Statistic,
    /// The base run's figure, as printed.
    pub base_value: f64,
    /// The new run's figure, as printed.
    pub new_value: f64,
    /// `new_value / base_value`, when there is a ratio.
    pub ratio: Option<f64>,
    /// The ratio's interval, when there is a ratio, at the level `ci_level`: 1 − R·q/m for a
    /// row the false-discovery rule selected, the marginal 95 % for one it did not (module doc).
    pub ratio_ci95: Option<[f64; 2]>,
    /// The level of `ratio_ci95`.
    pub ci_level: Option<f64>,
    /// The p-value for "ratio = 1" that agrees with the row's intervals (the smallest α at
    /// which the interval of level 1 − α excludes 1), when the row has a ratio to test.
    pub p_value: Option<f64>,
    /// Whether Benjamini–Hochberg at `q` selected the row: only a selected row may be called
    /// faster or slower.
    pub selected: bool,
    /// Set when the row would have been called faster or slower but its ratio lies within
    /// how far the machine itself moved between the runs ([`Movement`]): `inconclusive`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub within_machine_movement: bool,
    /// For a figure below resolution: `|x| <` this, in `unit`.
    pub below_resolution: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why there is no ratio, if there is none.
    pub no_ratio: Option<NoRatio>,
    /// Untrustworthy flags found on the row in either run.
    pub marks: Vec<Mark>,
    /// Parameters that differ between the two rows (where it ran; the cache under
    /// `--allow-mismatch`).
    pub param_differences: Vec<Difference>,
    /// In which run the row was flagged `cold-not-slower` (a cold row no slower than its hot
    /// twin), if in any. Advisory: not a mark, never gated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_not_slower: Option<Side>,
}

impl Compared {
    /// The ratio and its interval, if there is one.
    pub fn ratio_interval(&self) -> Option<Interval> {
        Some(Interval::new(self.ratio?, self.ratio_ci95?))
    }

    /// Whether a mark makes the row untrustworthy.
    pub fn marked(&self) -> bool {
        !self.marks.is_empty()
    }

    /// `1.012× no change`, `below resolution (|x| < 2.1 ns)`, `inconclusive (seed method)`:
    /// one short phrase for a progress line.
    pub fn brief(&self) -> String {
        let verdict = self.verdict.text_for(self.unit);
        match (self.ratio, self.below_resolution, self.no_ratio) {
            (Some(r), _, _) => format!("{r:.3}× {verdict}"),
            (None, Some(b), _) => format!("below resolution (|x| < {})", self.unit.format(b)),
            (None, None, Some(NoRatio::SeedMethod)) => format!("{verdict} (seed method)"),
            (None, None, _) => format!("{verdict} (zero-width interval)"),
        }
    }
}

/// A result the two runs do not both have, or could not compare.
#[derive(Clone, Debug, Serialize)]
pub struct Unmatched {
    /// Benchmark id.
    pub id: String,
    /// Its parameters.
    pub params: Params,
    /// Why it is not compared.
    pub why: String,
}

/// A fact that differs between the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// Dotted path, e.g. `machine.kernel.release`, `config.method`, or a parameter's name.
    pub what: String,
    /// In the base run.
    pub base: String,
    /// In the new run.
    pub new: String,
}

/// A whole comparison of `new` against `base`.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Noise threshold used (0.02 = 2 %).
    pub noise: f64,
    /// How the rows were judged together: `fdr_bh` (Benjamini–Hochberg with FCR-adjusted
    /// intervals; module doc).
    pub method: &'static str,
    /// The false discovery rate held (0.05).
    pub q: f64,
    /// How many rows were tested (m): those with a ratio to test against 1.
    pub family: usize,
    /// How many of them the rule selected (R): the rows that may be called faster or slower.
    pub selected: usize,
    /// The level of the selected rows' ratio intervals, 1 − R·q/m (1 − q/m when none was
    /// selected: the level the first would need); unselected rows' intervals are at 95 %.
    pub confidence: f64,
    /// How far the machine itself moved between the runs (its reference, new / base).
    pub machine: Movement,
    /// Results in both runs.
    pub compared: Vec<Compared>,
    /// Results in one run only, or without samples in one.
    pub unmatched: Vec<Unmatched>,
    /// What differs between the runs: settings, placement, build, machine.
    pub differences: Vec<Difference>,
}

/// How the regression gate treats rows marked untrustworthy (a failed self-check, a busy CPU,
/// an interruption, in either run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untrustworthy {
    /// Not judged: counted as undecided and named on stderr (the default: their figures may
    /// not measure what they claim, so they neither pass nor fail a build silently).
    #[default]
    Skip,
    /// A marked row fails the gate whatever its verdict.
    Fail,
    /// Judged like any other row.
    Judge,
}

/// The regression gate of `compare --fail-on-regression`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gate {
    /// A `slower` row whose ratio exceeds `1 + regression` fails (0.1 = 10 %).
    pub regression: f64,
    /// Whether an `inconclusive` row fails when a regression beyond `regression` cannot be ruled
    /// out (its interval reaches beyond `1 + regression`, or it has no interval).
    pub inconclusive_fails: bool,
    /// What marked rows do.
    pub untrustworthy: Untrustworthy,
    /// The share of gated rows that may stay undecided and the gate still pass (0: none).
    pub undecided_share: f64,
}

/// Why the gate could not decide a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecided {
    /// Its verdict is `inconclusive`.
    Inconclusive,
    /// A figure is below resolution: no ratio.
    BelowResolution,
    /// No ratio (seed method, zero-width or zero-reaching interval).
    NoRatio,
    /// Marked untrustworthy and left out (under [`Untrustworthy::Skip`]).
    Untrustworthy,
}

impl Undecided {
    /// As printed.
    pub fn text(self) -> &'static str {
        match self {
            Undecided::Inconclusive => "inconclusive",
            Undecided::BelowResolution => "below resolution",
            Undecided::NoRatio => "no ratio",
            Undecided::Untrustworthy => "untrustworthy, not judged",
        }
    }
}

/// What the gate decided of a whole comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Every gated row decided (or the undecided within the allowance), none failed.
    Pass,
    /// A row failed.
    Fail,
    /// None failed, but more rows than allowed were not decided.
    Undecided,
}

/// Why a row failed the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Slower by more than the threshold.
    Regressed,
    /// Inconclusive, and a regression beyond the threshold cannot be ruled out.
    Inconclusive,
    /// Marked untrustworthy (under [`Untrustworthy::Fail`]).
    Untrustworthy,
}

/// What the gate found.
#[derive(Clone, Debug, Default)]
pub struct GateOutcome<'c> {
    /// Rows that fail it, and why.
    pub failed: Vec<(&'c Compared, Failure)>,
    /// Rows it could not decide, and why (marked rows under [`Untrustworthy::Skip`] among them).
    pub undecided: Vec<(&'c Compared, Undecided)>,
    /// Rows it gated (every compared row).
    pub gated: usize,
    /// The share of gated rows allowed to stay undecided.
    pub allowance: f64,
}

impl GateOutcome<'_> {
    /// The share of gated rows not decided.
    pub fn undecided_share(&self) -> f64 {
        if self.gated == 0 { 0.0 } else { self.undecided.len() as f64 / self.gated as f64 }
    }

    /// Fail when a row failed; else undecided when more gated rows than the allowance were not
    /// decided; else pass. A gate never passes what it did not judge.
    pub fn decision(&self) -> Decision {
        if !self.failed.is_empty() {
            Decision::Fail
        } else if !self.undecided.is_empty() && self.undecided_share() > self.allowance + 1e-12 {
            Decision::Undecided
        } else {
            Decision::Pass
        }
    }
}

impl Comparison {
    /// The rows that fail `gate`, and those it could not decide.
    pub fn gate(&self, gate: &Gate) -> GateOutcome<'_> {
        let mut out =
            GateOutcome { gated: self.compared.len(), allowance: gate.undecided_share, ..GateOutcome::default() };
        for c in &self.compared {
            if c.marked() {
                match gate.untrustworthy {
                    Untrustworthy::Skip => {
                        out.undecided.push((c, Undecided::Untrustworthy));
                        continue;
                    }
                    Untrustworthy::Fail => {
                        out.failed.push((c, Failure::Untrustworthy));
                        continue;
                    }
                    Untrustworthy::Judge => {}
                }
            }
            let beyond = |r: f64| r - 1.0 > gate.regression;
            match c.verdict {
                Verdict::Slower if c.ratio.is_some_and(beyond) => out.failed.push((c, Failure::Regressed)),
                Verdict::Inconclusive if gate.inconclusive_fails && c.ratio_ci95.is_none_or(|[_, hi]| beyond(hi)) => {
                    out.failed.push((c, Failure::Inconclusive))
                }
                Verdict::Inconclusive if c.ratio.is_none() => out.undecided.push((c, Undecided::NoRatio)),
                Verdict::Inconclusive => out.undecided.push((c, Undecided::Inconclusive)),
                Verdict::BelowResolution => out.undecided.push((c, Undecided::BelowResolution)),
                Verdict::Slower | Verdict::Faster | Verdict::NoChange => {}
            }
        }
        out
    }

    /// How many compared rows have `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.compared.iter().filter(|c| c.verdict == verdict).count()
    }
}

/// How to compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Noise threshold (0.02 = 2 %).
    pub noise: f64,
    /// Bootstrap resamples per row.
    pub resamples: usize,
    /// Seed of the bootstrap (reproducible intervals).
    pub seed: u64,
    /// Pair rows measured cold in one run and warm in the other ([`mismatch`]).
    pub allow_mismatch: bool,
}

/// The parameters that define a result (without where it ran).
fn defining(params: &Params) -> Params {
    let mut p = params.clone();
    for k in WHERE_IT_RAN {
        p.remove(*k);
    }
    p
}

/// Why `new` cannot be compared with `base` without `--allow-mismatch`, in one sentence: runs
/// of different methods, or rows measured cold in one and warm in the other.
pub fn mismatch(base: &RunFile, new: &RunFile) -> Option<String> {
    let (bm, nm) = (base.config.method, new.config.method);
    if bm != nm {
        return Some(format!(
            "the runs were measured by different methods (base: {}, new: {}): a seed run's figures are means of \
             single operations, an adaptive run's medians of batches, and they do not compare",
            method_name(bm),
            method_name(nm)
        ));
    }
    let crossed: Vec<String> = new
        .results
        .iter()
        .filter(|n| counterpart(base, n, false).is_none())
        .filter_map(|n| {
            let b = counterpart(base, n, true)?;
            counterpart(new, b, false).is_none().then(|| {
                let v = |r: &Row| r.params.get(CACHE).map(param_text).unwrap_or_default();
                format!("{} (cache {} in the base run, {} in the new)", n.id, v(b), v(n))
            })
        })
        .collect();
    (!crossed.is_empty()).then(|| {
        format!(
            "results measured with cold caches in one run and warm in the other do not compare: {}",
            crossed.join(", ")
        )
    })
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Adaptive => "adaptive",
        Method::Seed => "seed",
    }
}

/// Compares `new` against `base` with noise threshold `noise`; `seed` makes the intervals
/// reproducible. Rows measured cold in one run and warm in the other are not paired.
pub fn compare(base: &RunFile, new: &RunFile, noise: f64, seed: u64) -> Comparison {
    compare_with(base, new, &Settings { noise, resamples: RESAMPLES, seed, allow_mismatch: false })
}

/// Compares `new` against `base` as `s` says.
pub fn compare_with(base: &RunFile, new: &RunFile, s: &Settings) -> Comparison {
    let mut unmatched = Vec::new();
    let mut paired_base: Vec<&Row> = Vec::new();
    let mut pairs = Vec::new();
    for (i, n) in new.results.iter().enumerate() {
        let b = counterpart(base, n, false).or_else(|| {
            if s.allow_mismatch {
                counterpart(base, n, true).filter(|b| counterpart(new, b, false).is_none())
            } else {
                None
            }
        });
        let Some(b) = b else {
            unmatched.push(Unmatched { id: n.id.clone(), params: n.params.clone(), why: "only in the new run".into() });
            continue;
        };
        paired_base.push(b);
        pairs.push((i, b, n));
    }
    let mut prepared = Vec::new();
    for (i, b, n) in pairs {
        let judging = Judging { resamples: s.resamples, seed: s.seed ^ i as u64 };
        match prepare(b, n, base, new, &judging) {
            Ok(p) => prepared.push(p),
            Err(why) => unmatched.push(Unmatched { id: n.id.clone(), params: n.params.clone(), why }),
        }
    }
    for b in &base.results {
        if !paired_base.iter().any(|p| std::ptr::eq(*p, b)) {
            unmatched.push(Unmatched {
                id: b.id.clone(),
                params: b.params.clone(),
                why: "only in the base run".into(),
            });
        }
    }
    let machine = movement(base, new, s.seed);
    // Benjamini–Hochberg over the rows with a ratio to test; the selected rows' intervals at
    // 1 − R·q/m, the others' at 95 % (module doc).
    let p: Vec<f64> = prepared.iter().filter_map(|p| p.compared.p_value).collect();
    let chosen = benjamini_hochberg(&p, FDR_Q);
    let (family, selected) = (p.len(), chosen.iter().filter(|&&s| s).count());
    let confidence = fcr_confidence(selected, family, FDR_Q);
    let mut chosen = chosen.into_iter();
    let compared = prepared
        .into_iter()
        .map(|p| {
            let sel = p.compared.p_value.is_some() && chosen.next().unwrap_or(false);
            p.finish(sel, confidence, s.noise, machine.band)
        })
        .collect();
    Comparison {
        noise: s.noise,
        method: METHOD,
        q: FDR_Q,
        family,
        selected,
        confidence,
        machine,
        compared,
        unmatched,
        differences: differences(base, new),
    }
}

/// The name of the rule that judges the rows together (`Comparison::method`).
pub const METHOD: &str = "fdr_bh";

/// Several runs pooled as one base (`compare --base-history`): the first run's settings and
/// machine, each result's rounds the rounds of every run that has it (same id and defining
/// parameters), in order, so that the variation between runs is in the base's interval; each
/// round keeps the start-up cut its run's summary made. Executions (and their reference
/// readings) are pooled too. `None` without runs.
pub fn pool(runs: &[RunFile]) -> Option<RunFile> {
    let (first, rest) = runs.split_first()?;
    let mut out = first.clone();
    for row in out.results.iter_mut() {
        if row.samples.is_empty() {
            continue;
        }
        let keep = |r: &Row| r.samples_per_round.iter().sum::<usize>() == r.samples.len();
        if !keep(row) {
            row.samples_per_round = vec![row.samples.len()];
        }
        let mut structure = row.summary.as_ref().and_then(|s| s.structure.clone());
        for other in rest {
            let Some(o) = counterpart(other, row, false).filter(|o| !o.samples.is_empty()) else { continue };
            let per_round = if keep(o) { o.samples_per_round.clone() } else { vec![o.samples.len()] };
            let theirs = o.summary.as_ref().and_then(|s| s.structure.as_ref());
            structure = match (structure, theirs) {
                (Some(mut a), Some(b)) if b.rounds.len() == per_round.len() => {
                    a.rounds.extend(b.rounds.iter().cloned());
                    Some(a)
                }
                _ => None,
            };
            row.samples.extend_from_slice(&o.samples);
            row.samples_per_round.extend(per_round);
        }
        if let Some(s) = row.summary.as_mut() {
            s.structure = structure;
        }
    }
    for other in rest {
        out.executions.extend(other.executions.iter().cloned());
    }
    Some(out)
}

/// The result of `run` with `row`'s id and defining parameters; with `across_cache`, one that
/// differs from it in its `cache` parameter alone.
fn counterpart<'r>(run: &'r RunFile, row: &Row, across_cache: bool) -> Option<&'r Row> {
    let key = defining(&row.params);
    if !across_cache {
        return run.results.iter().find(|r| r.id == row.id && defining(&r.params) == key);
    }
    // Cold rows also name the device and file system the cold data came from.
    let rest = |p: &Params| {
        let mut p = p.clone();
        for k in [CACHE, "device", "fs"] {
            p.remove(k);
        }
        p
    };
    let cache = key.get(CACHE)?;
    run.results.iter().find(|r| {
        let p = defining(&r.params);
        r.id == row.id && p.get(CACHE).is_some_and(|c| c != cache) && rest(&p) == rest(&key)
    })
}

/// One new result against its counterpart in `base` (`resamples` bootstrap resamples), or why
/// it cannot be compared, as the whole comparison would judge it at the strictest step of
/// Benjamini–Hochberg: selected when its p-value is at most q/m for the base run's m rows
/// (its interval then at 1 − q/m), else read at 95 % and never called different. Used by
/// `run --baseline` as each result comes in.
pub fn compare_row(base: &RunFile, n: &Row, noise: f64, resamples: usize, seed: u64) -> Result<Compared, String> {
    let b = counterpart(base, n, false).ok_or_else(|| "only in the new run".to_string())?;
    let judging = Judging { resamples, seed };
    let p = prepare(b, n, base, base, &judging)?;
    let m = base.results.len().max(1);
    let level = fcr_confidence(1, m, FDR_Q);
    let sel = p.compared.p_value.is_some_and(|p| p <= FDR_Q / m as f64);
    Ok(p.finish(sel, level, noise, None))
}

/// How one pair of rows is judged.
struct Judging {
    /// Bootstrap resamples.
    resamples: usize,
    /// Seed of the bootstrap.
    seed: u64,
}

/// A row's own 95 % interval widened to the level `confidence`, as a normal interval widens:
/// for figures that have no samples to resample (derived rows).
fn widen(v: &Interval, confidence: f64) -> Interval {
    let z = |c: f64| stats::special::normal_quantile(0.5 + c / 2.0);
    let k = z(confidence) / z(0.95);
    let [lo, hi] = v.ci95;
    Interval::new(v.estimate, [v.estimate - k * (v.estimate - lo), v.estimate + k * (hi - v.estimate)])
}

/// Where a row's ratio interval comes from, at any level.
enum Source {
    /// The hierarchical bootstrap of the two rows' rounds.
    Bootstrap(RatioBootstrap),
    /// The two figures' own intervals, widened to the level and divided by their ends (rows
    /// without samples, or samples on so few clock ticks that every resample agreed).
    Figures { num: Interval, den: Interval },
}

impl Source {
    /// The ratio and its interval of level `confidence`; `None` when a widened figure
    /// reaches 0.
    fn interval(&self, confidence: f64) -> Option<Interval> {
        match self {
            Source::Bootstrap(b) => Some(Interval::new(b.estimate, b.interval(confidence))),
            Source::Figures { num, den } => ratio_of(&widen(num, confidence), &widen(den, confidence)),
        }
    }
}

/// A compared row before the rows are judged together: everything but the ratio's interval
/// and verdict, and where they come from.
struct Prepared {
    compared: Compared,
    source: Option<Source>,
}

impl Prepared {
    /// The row as judged: selected by the false-discovery rule (its interval at `level`, and
    /// it may be called faster or slower), or not (its 95 % interval, read only for `no
    /// change`).
    fn finish(self, selected: bool, level: f64, noise: f64, band: Option<[f64; 2]>) -> Compared {
        let Prepared { mut compared, source } = self;
        let Some(source) = source else { return compared };
        let level = if selected { level } else { stats::bootstrap::CONFIDENCE_95 };
        let ratio = match source.interval(level) {
            // A ratio of two positive figures whose interval reaches 0 says nothing.
            Some(r) if r.ci95[0] > 0.0 => r,
            _ => {
                compared.no_ratio = Some(NoRatio::ReachesZero);
                return compared;
            }
        };
        compared.selected = selected;
        compared.ratio = Some(ratio.estimate);
        compared.ratio_ci95 = Some(ratio.ci95);
        compared.ci_level = Some(level);
        compared.verdict = match judge_ratio(&ratio, noise) {
            RatioVerdict::Above if selected => Verdict::Slower,
            RatioVerdict::Below if selected => Verdict::Faster,
            RatioVerdict::Same => Verdict::NoChange,
            _ => Verdict::Inconclusive,
        };
        // No row is called different by less than the machine itself moved.
        if matches!(compared.verdict, Verdict::Slower | Verdict::Faster)
            && let Some([lo, hi]) = band
        {
            let reach = (lo - 1.0).abs().max((hi - 1.0).abs());
            if (lo..=hi).contains(&ratio.estimate) || (ratio.estimate - 1.0).abs() <= reach {
                compared.verdict = Verdict::Inconclusive;
                compared.within_machine_movement = true;
            }
        }
        compared
    }
}

/// A row's figure: its value and interval, and its steady-state samples by round when it has
/// samples of its own.
struct Figure<'a> {
    value: Interval,
    rounds: Option<Rounds<'a>>,
}

/// The steady-state samples of `row` by round: each round less the start-up samples its
/// summary dropped (when the summary's rounds match the samples; else every sample).
fn steady(row: &Row) -> Option<(Vec<f64>, Vec<usize>)> {
    if row.samples.is_empty() {
        return None;
    }
    let per_round = if row.samples_per_round.iter().sum::<usize>() == row.samples.len() {
        row.samples_per_round.clone()
    } else {
        vec![row.samples.len()]
    };
    let drops: Vec<usize> = row
        .summary
        .as_ref()
        .and_then(|s| s.structure.as_ref())
        .filter(|st| st.rounds.len() == per_round.len() && st.rounds.iter().zip(&per_round).all(|(r, &n)| r.n == n))
        .map(|st| st.rounds.iter().map(|r| r.dropped).collect())
        .unwrap_or_else(|| vec![0; per_round.len()]);
    let (mut samples, mut counts, mut at) = (Vec::new(), Vec::new(), 0);
    for (&n, &d) in per_round.iter().zip(&drops) {
        let d = d.min(n);
        samples.extend_from_slice(&row.samples[at + d..at + n]);
        counts.push(n - d);
        at += n;
    }
    (!samples.is_empty()).then_some((samples, counts))
}

/// The figure of a measured row from its steady-state samples, or of a derived row from its
/// estimate; `None` when it has neither.
fn figure<'a>(row: &Row, steady: Option<&'a (Vec<f64>, Vec<usize>)>) -> Option<Figure<'a>> {
    if let (Some(s), Some((samples, counts))) = (&row.summary, steady) {
        let rounds = Rounds::split(samples, counts);
        let median = rounds.median();
        let ci = if median == s.median {
            s.median_ci95
        } else {
            [median.min(s.median_ci95[0]), median.max(s.median_ci95[1])]
        };
        return Some(Figure { value: Interval::new(median, ci), rounds: Some(rounds) });
    }
    if let Some(d) = &row.derived {
        return Some(Figure { value: Interval::new(d.estimate.point, d.estimate.ci95), rounds: None });
    }
    row.summary.as_ref().map(|s| Figure { value: Interval::new(s.median, s.median_ci95), rounds: None })
}

/// The untrustworthy flags of `r` (a failed validation counts as a failed check).
fn untrustworthy(r: &Row) -> Vec<Flag> {
    UNTRUSTWORTHY
        .into_iter()
        .filter(|f| r.flags.contains(f) || (*f == Flag::CheckFailed && r.validation.verdict == model::Verdict::Failed))
        .collect()
}

/// In which of `b` and `n` `flag` is raised, if in either.
fn side_of(flag: Flag, b: &Row, n: &Row) -> Option<Side> {
    match (b.flags.contains(&flag), n.flags.contains(&flag)) {
        (true, true) => Some(Side::Both),
        (true, false) => Some(Side::Base),
        (false, true) => Some(Side::New),
        (false, false) => None,
    }
}

fn marks(b: &Row, n: &Row) -> Vec<Mark> {
    let (fb, fnew) = (untrustworthy(b), untrustworthy(n));
    UNTRUSTWORTHY
        .into_iter()
        .filter_map(|flag| {
            let side = match (fb.contains(&flag), fnew.contains(&flag)) {
                (true, true) => Side::Both,
                (true, false) => Side::Base,
                (false, true) => Side::New,
                (false, false) => return None,
            };
            Some(Mark { flag, side })
        })
        .collect()
}

/// The parameters of `b` and `n` that differ, by name.
fn param_differences(b: &Params, n: &Params) -> Vec<Difference> {
    let text = |v: Option<&serde_json::Value>| v.map(param_text).unwrap_or_else(|| "—".into());
    let mut keys: Vec<&String> = b.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| b.get(*k) != n.get(*k))
        .map(|k| Difference { what: k.clone(), base: text(b.get(k)), new: text(n.get(k)) })
        .collect()
}

/// A parameter's value as text: a string as it is, a list joined by commas (`1,0`).
pub fn param_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items.iter().map(param_text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

fn not_measured(which: &str, r: &Row) -> String {
    let reason = r.reason.as_deref().map(|s| format!(": {s}")).unwrap_or_default();
    format!("no samples in the {which} run{reason}")
}

/// `n` against `b`, found in the runs `base_run` and `new_run`, up to the judgement that
/// needs every row (its p-value set when it has a ratio to test).
fn prepare(b: &Row, n: &Row, base_run: &RunFile, new_run: &RunFile, j: &Judging) -> Result<Prepared, String> {
    if b.unit != n.unit {
        return Err(format!("units differ ({} and {})", b.unit.symbol(), n.unit.symbol()));
    }
    if let Some(src) = n.derived.as_ref().and_then(|d| d.scaled_source()) {
        return Err(format!("a rescaled {src} (compared there)"));
    }
    let mut c = Compared {
        id: n.id.clone(),
        params: n.params.clone(),
        unit: n.unit,
        statistic: Statistic::Median,
        base_value: f64::NAN,
        new_value: f64::NAN,
        ratio: None,
        ratio_ci95: None,
        ci_level: None,
        p_value: None,
        selected: false,
        within_machine_movement: false,
        below_resolution: None,
        verdict: Verdict::Inconclusive,
        no_ratio: None,
        marks: marks(b, n),
        param_differences: param_differences(&b.params, &n.params),
        cold_not_slower: side_of(Flag::ColdNotSlower, b, n),
    };
    if b.method == Method::Seed || n.method == Method::Seed {
        let mean = |r: &Row, which| r.summary.as_ref().map(|s| s.mean).ok_or_else(|| not_measured(which, r));
        c.statistic = Statistic::Mean;
        c.base_value = mean(b, "base")?;
        c.new_value = mean(n, "new")?;
        c.no_ratio = Some(NoRatio::SeedMethod);
        return Ok(Prepared { compared: c, source: None });
    }
    let (sb, sn) = (steady(b), steady(n));
    let fb = figure(b, sb.as_ref()).ok_or_else(|| not_measured("base", b))?;
    let fnew = figure(n, sn.as_ref()).ok_or_else(|| not_measured("new", n))?;
    c.base_value = fb.value.estimate;
    c.new_value = fnew.value.estimate;
    // Nothing is finer than the clock's resolution.
    let resolution = |run: &RunFile| if n.unit == Unit::Ns { run.timer.resolution_ns } else { 0.0 };
    let floor = resolution(base_run).max(resolution(new_run));
    let zero: Vec<f64> =
        [&fb.value, &fnew.value].into_iter().filter(|v| v.includes_zero()).map(|v| v.bound()).collect();
    if !zero.is_empty() {
        c.verdict = Verdict::BelowResolution;
        c.no_ratio = Some(NoRatio::BelowResolution);
        c.below_resolution = Some(zero.into_iter().fold(floor, f64::max));
        return Ok(Prepared { compared: c, source: None });
    }
    // A figure wholly below 0 (a difference that came out negative) has no meaningful ratio.
    for (which, f) in [("base", &fb), ("new", &fnew)] {
        if f.value.estimate < 0.0 {
            return Err(format!(
                "a negative figure in the {which} run ({}): no ratio",
                n.unit.format(f.value.estimate)
            ));
        }
    }
    let figures = || Source::Figures { num: fnew.value, den: fb.value };
    let source = match (&fb.rounds, &fnew.rounds) {
        (Some(rb), Some(rn)) => Source::Bootstrap(
            ratio_bootstrap(rb, rn, j.resamples, j.seed)
                .ok_or_else(|| "no positive median in the base run".to_string())?,
        ),
        _ => {
            ratio_of(&fnew.value, &fb.value).ok_or_else(|| "no ratio of the two figures".to_string())?;
            figures()
        }
    };
    // Counts and sizes that came out the same in every sample of both runs (an ELF section's
    // bytes, a structure's size) are exact: the same figure is no change, and another is a
    // change of exactly that ratio. A time never is: its zero width says nothing of a run.
    let exact = n.unit != Unit::Ns && fb.value.degenerate() && fnew.value.degenerate();
    // Samples that sit on a few clock ticks can make every resample give the same ratio; the
    // two rows' own intervals (which also carry what the rounds disagree on) then speak for
    // it, taken conservatively by their ends, when they are wider.
    let degenerate = |s: &Source| s.interval(stats::bootstrap::CONFIDENCE_95).is_none_or(|r| r.degenerate());
    let source = if degenerate(&source) && !exact {
        let wider = figures();
        if degenerate(&wider) {
            c.no_ratio = Some(NoRatio::ZeroWidth);
            return Ok(Prepared { compared: c, source: None });
        }
        wider
    } else {
        source
    };
    c.p_value = Some(p_value(|level| source.interval(level).map(|r| r.ci95), 1.0));
    Ok(Prepared { compared: c, source: Some(source) })
}

/// One reference's ratio new / base, with its 95 % interval over the rounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Moved {
    /// Median of the new run's readings over the base run's.
    pub ratio: f64,
    /// 95 % interval (bootstrap over the rounds).
    pub ci95: [f64; 2],
}

/// How far the machine itself moved between two runs: the ratio new / base of the medians
/// over their executions of each reference ([`model::Reference`], timed at each worker's start
/// and end), and the band no row may be called different within. Unknown (all `None`) when
/// either run has no reference readings (files of older builds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Movement {
    /// The user-space loop.
    pub user_loop: Option<Moved>,
    /// The null system call.
    pub null_syscall: Option<Moved>,
    /// The user-space loop's interval: a row whose ratio lies in it, or is no farther from 1
    /// than its farther end, is not called faster or slower. Not the null system call's: what a
    /// change under test does to system calls moves that reference too (module doc).
    pub band: Option<[f64; 2]>,
}

/// [`Movement`] of `new` against `base`.
pub fn movement(base: &RunFile, new: &RunFile, seed: u64) -> Movement {
    let levels = |r: &RunFile| -> Vec<model::MachineLevel> {
        r.executions.iter().filter_map(|e| e.reference.as_ref().and_then(model::Reference::level)).collect()
    };
    let (lb, ln) = (levels(base), levels(new));
    let kind = |f: fn(&model::MachineLevel) -> f64| {
        let (b, n): (Vec<f64>, Vec<f64>) = (lb.iter().map(f).collect(), ln.iter().map(f).collect());
        stats::ratio::level_ratio(&b, &n, RESAMPLES, seed).map(|q| Moved { ratio: q.estimate, ci95: q.ci95 })
    };
    let user_loop = kind(|l| l.user_loop_ns);
    let null_syscall = kind(|l| l.null_syscall_ns);
    let band = user_loop.map(|m| m.ci95);
    Movement { user_loop, null_syscall, band }
}

/// Readings that change from minute to minute on one machine: not differences between machines.
const VOLATILE: &[&str] = &[
    "machine.frequency.cur_khz",
    "machine.frequency.cpuinfo_mhz",
    "machine.scheduling.load_avg_start",
    "machine.scheduling.load_avg_end",
];

/// Facts that differ: the host the run is recorded under (`host`: `--host`, else the kernel's
/// host name), every setting of the sampler (`config.*`: method, budget, rounds, CI
/// target…), the CPU placement (`placement.*`), the osprim build, the timer and every leaf of
/// `machine`, by dotted path, but the [`VOLATILE`] readings.
pub fn differences(base: &RunFile, new: &RunFile) -> Vec<Difference> {
    let facts = |r: &RunFile| {
        let mut leaves = vec![("host".to_string(), r.host_name().to_string())];
        flatten("config", &serde_json::to_value(&r.config).unwrap_or_default(), &mut leaves);
        flatten("placement", &serde_json::to_value(&r.placement).unwrap_or_default(), &mut leaves);
        flatten("osprim", &serde_json::to_value(&r.osprim).unwrap_or_default(), &mut leaves);
        flatten("machine", &serde_json::to_value(&r.machine).unwrap_or_default(), &mut leaves);
        flatten("timer.kind", &serde_json::to_value(r.timer.kind).unwrap_or_default(), &mut leaves);
        leaves
    };
    let steady = |mut v: Vec<(String, String)>| {
        v.retain(|(p, _)| !VOLATILE.contains(&p.as_str()));
        v
    };
    let (b, n) = (steady(facts(base)), steady(facts(new)));
    let mut out = Vec::new();
    for (path, bv) in &b {
        let nv = n.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone()).unwrap_or_else(|| "—".into());
        if *bv != nv {
            out.push(Difference { what: path.clone(), base: bv.clone(), new: nv });
        }
    }
    for (path, nv) in &n {
        if !b.iter().any(|(p, _)| p == path) {
            out.push(Difference { what: path.clone(), base: "—".into(), new: nv.clone() });
        }
    }
    out
}

/// Leaves of `v` as (dotted path, text); arrays of scalars are one leaf.
fn flatten(path: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{path}.{k}"), v, out);
            }
        }
        Value::Array(a) if a.iter().any(|x| x.is_object()) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{path}[{i}]"), v, out);
            }
        }
        Value::String(s) => out.push((path.to_string(), s.clone())),
        Value::Null => out.push((path.to_string(), "—".into())),
        other => out.push((path.to_string(), other.to_string())),
    }
}

#[doc(hidden)]
pub mod fixtures;
#[cfg(test)]
mod tests;
