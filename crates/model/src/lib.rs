//! The vocabulary of osprim and the result file it writes, versioned by [`SCHEMA`].
//!
//! `model` is the leaf of the crate: it imports nothing from it. Every layer speaks its types
//! (parameters, checks, units, methods, derivations) and the result file is defined here
//! alone: the sampler, the timer and the machine capture convert into the records of
//! [`records`] and [`machine`], so a new setting of theirs changes the file only when a field
//! is added here. The format is documented in `docs/results.md`. Readers refuse a file whose
//! `schema` they do not know, with one clear line ([`ResultFileError`]); files of schemas 1
//! to 3 are read through [`upgrade`].

#![forbid(unsafe_code)]

pub mod ab;
pub mod counters;
pub mod crosscheck;
pub mod execution;
#[doc(hidden)]
pub mod fixtures;
pub mod ids;
pub mod machine;
pub mod measured;
pub mod records;
pub mod sampling;
pub mod stability;
pub mod summary;
pub mod unit;
pub mod upgrade;
pub mod vocab;

pub use execution::{Execution, MachineLevel, Reference};
pub use machine::Machine;
pub use measured::{Measured, NotMeasured, Samples};
pub use records::{Probe, RoundOverhead, SamplerSettings, SamplingOverride, TimerInfo, TimerKind};
pub use summary::{Estimate, Level, Outliers, RoundSummary, Structure, Summary};
pub use unit::Unit;
pub use vocab::{COUNT_PARAMS, Check, CountParam, Derivation, Method, Params, Rule, SIZE_PARAM, StopReason};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of the result format this build writes and reads.
pub const SCHEMA: u32 = 4;

/// One run of osprim: what was measured, where, how, and every sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunFile {
    /// Format version ([`SCHEMA`]).
    pub schema: u32,
    /// The build that measured.
    pub osprim: BuildInfo,
    /// UTC start, RFC 3339.
    pub started_utc: String,
    /// UTC end, RFC 3339 (absent while the run is going on).
    pub finished_utc: Option<String>,
    /// True when the run was interrupted or is still going on: not every benchmark ran.
    pub partial: bool,
    /// The command line.
    pub command: Vec<String>,
    /// Sampler settings.
    pub config: SamplerSettings,
    /// Where the measuring thread ran.
    pub placement: Placement,
    /// The clock.
    pub timer: TimerInfo,
    /// The machine.
    pub machine: Machine,
    /// One row per benchmark and parameter set, in the order run.
    pub results: Vec<Row>,
    /// Availability probes of the measuring CPU, before each round and after the last (absent
    /// from files written before osprim took them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub availability: Vec<Probe>,
    /// The worker processes that measured the rounds, one per round (more when a worker
    /// died and another took over its round); absent from files written before osprim
    /// measured in workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executions: Vec<Execution>,
    /// The hardware counters the run could count (`--counters`); absent when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<counters::Availability>,
    /// Stability runs (`osprim stress`, `osprim errortest`), and the seed suite's short tests
    /// (`short`, after its benchmarks); absent from other benchmark runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stability: Vec<stability::StabilityRun>,
    /// A random id the run draws at its start (32 hex digits): tells apart in the history two
    /// runs started in the same second on hosts of the same name with equal results. Absent
    /// from files written before osprim drew one (their history key stays what it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The name the fleet knows the machine by (`--host`: an Ansible inventory name, a CI
    /// runner's label), where `machine.hostname` is what the kernel calls it; the history
    /// records the run under it. Absent when not given, and from files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl RunFile {
    /// The host the run is recorded and shown under: [`RunFile::host`] when given, else the
    /// kernel's host name.
    pub fn host_name(&self) -> &str {
        self.host.as_deref().unwrap_or(&self.machine.hostname)
    }
}

/// The longest host name `--host` takes, in characters.
pub const HOST_MAX_CHARS: usize = 128;

/// Checks a host name given with `--host`: 1 to [`HOST_MAX_CHARS`] printable characters, no
/// white space at either end, no control character (a table row, a CSV cell and a file name
/// built from it stay one line).
pub fn check_host(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("a host name must not be empty".into());
    }
    if name.chars().count() > HOST_MAX_CHARS {
        return Err(format!("a host name has at most {HOST_MAX_CHARS} characters"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("a host name must be printable ({:?} is not)", c));
    }
    if name.trim() != name {
        return Err("a host name must not begin or end with white space".into());
    }
    Ok(())
}

/// The build that produced a result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BuildInfo {
    /// Crate version.
    pub version: String,
    /// Git commit (with `-dirty` when the tree had changes), or "unknown".
    pub commit: String,
    /// `rustc --version` of the compiler.
    pub rustc: String,
    /// Cargo profile ("release" or "debug").
    pub profile: String,
}

/// CPU placement of the measuring thread.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Placement {
    /// The CPU the measuring thread was pinned to.
    pub cpu: usize,
    /// How it was chosen ("--cpu", "least loaded of allowed set").
    pub chosen_by: String,
    /// CPUs the process was allowed to use.
    pub allowed_cpus: Vec<usize>,
    /// The pair `--cpus A,B` given for two-CPU benchmarks, if any.
    pub cpu_pair: Option<[usize; 2]>,
}

/// What became of one benchmark. A measured row's status is its flags' worst tier
/// ([`Status::of_flags`]): `ok` (clean: no flag), `advisory`, `untrustworthy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured and clean: no flag of either tier (validated, or honestly not validated).
    Ok,
    /// Measured; its flags are advisory only: the figure and its interval can be used, read
    /// the flags.
    Advisory,
    /// Measured, but at least one flag is untrustworthy: do not use the figure as it is.
    Untrustworthy,
    /// Cannot run here; `reason` says why.
    Skipped,
    /// An error while measuring; `reason` says what.
    Failed,
    /// Ctrl-C arrived before the benchmark had enough samples for a figure; `reason` says
    /// how far it got.
    Interrupted,
}

impl Status {
    /// The status of a measured row with these flags: its worst tier, `ok` without flags.
    pub fn of_flags(flags: &[Flag]) -> Status {
        match flags.iter().map(|f| f.tier()).max() {
            None => Status::Ok,
            Some(Tier::Advisory) => Status::Advisory,
            Some(Tier::Untrustworthy) => Status::Untrustworthy,
        }
    }

    /// Whether the row was measured (has a figure): `ok`, `advisory` or `untrustworthy`.
    pub fn measured(self) -> bool {
        matches!(self, Status::Ok | Status::Advisory | Status::Untrustworthy)
    }
}

/// How far a flag undermines its row's figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Worth knowing; the figure and its interval can be used.
    Advisory,
    /// The figure, or its interval, cannot be used as it is.
    Untrustworthy,
}

/// Above this relative reach of the 95 % CI (its end farther from the estimate, relative to
/// the estimate) a figure is not usable: flag [`Flag::CiUnusable`], untrustworthy. Between
/// the run's CI target and this bound a CI is `ci-wide`, advisory.
pub const USABLE_CI_REL: f64 = 0.10;

/// How far the 95 % CI `ci` reaches from `point`, relative to it: its end farther from the
/// point over |point| (0 for a zero-width interval, +∞ around a point of 0, NaN when not finite).
pub fn ci_reach_rel(point: f64, ci: [f64; 2]) -> f64 {
    let reach = (point - ci[0]).max(ci[1] - point).max(0.0);
    if reach == 0.0 { 0.0 } else { reach / point.abs() }
}

/// A warning attached to a measured row, in one of two tiers ([`Flag::tier`]). Each is written
/// everywhere (terminal, result file, CSV, Markdown, LaTeX, docs) by its one name,
/// [`Flag::label`]; files of schemas 1 to 3 wrote them in snake case, still read (aliases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Flag {
    /// A validation check failed.
    #[serde(rename = "check-failed", alias = "check_failed")]
    CheckFailed,
    /// The median's CI is wider than the run's target, but within [`USABLE_CI_REL`].
    #[serde(rename = "ci-wide", alias = "ci_target_missed")]
    CiTargetMissed,
    /// The CI reaches over [`USABLE_CI_REL`] from the estimate: the figure is not usable.
    #[serde(rename = "ci-unusable")]
    CiUnusable,
    /// The rounds' medians disagree beyond their uncertainty: the machine changed level.
    #[serde(rename = "unstable")]
    Unstable,
    /// Ctrl-C arrived while this benchmark was sampling.
    #[serde(rename = "interrupted")]
    Interrupted,
    /// More than 5 % of samples are severe outliers.
    #[serde(rename = "outliers", alias = "many_outliers")]
    ManyOutliers,
    /// A point of a sweep lies far from the fitted model, beyond its own CI and by over 10 %.
    #[serde(rename = "poor-fit", alias = "poor_fit")]
    PoorFit,
    /// The per-operation estimate differs between batches of m and 8m operations (8m ≈ n).
    #[serde(rename = "batch-dependent", alias = "batch_dependent")]
    BatchDependent,
    /// A round failed; the row holds the rounds measured before it.
    #[serde(rename = "round-failed", alias = "round_failed")]
    RoundFailed,
    /// A sweep's fitted fixed cost is below zero, its whole CI too.
    #[serde(rename = "negative-fixed", alias = "negative_fixed_cost")]
    NegativeFixedCost,
    /// A sweep's cost per byte changes with the size: two segments fit, not one line.
    #[serde(rename = "nonlinear")]
    Nonlinear,
    /// An availability probe next to the row's rounds found the measuring CPU busy elsewhere.
    #[serde(rename = "busy-cpu", alias = "busy_cpu")]
    BusyCpu,
    /// The CI does not overlap the previous run's on the same machine (from the history).
    #[serde(rename = "level-shift", alias = "level_shift")]
    LevelShift,
    /// A cold-cache row (`cache=cold`) is not slower than its hot twin: the cold/hot ratio's
    /// 95 % interval reaches 1 or below ([`ColdHot`]).
    #[serde(rename = "cold-not-slower")]
    ColdNotSlower,
}

impl Flag {
    /// Every flag, untrustworthy ones first.
    pub const ALL: [Flag; 14] = [
        Flag::CheckFailed,
        Flag::BusyCpu,
        Flag::CiUnusable,
        Flag::Interrupted,
        Flag::NegativeFixedCost,
        Flag::CiTargetMissed,
        Flag::Unstable,
        Flag::ManyOutliers,
        Flag::BatchDependent,
        Flag::RoundFailed,
        Flag::PoorFit,
        Flag::Nonlinear,
        Flag::LevelShift,
        Flag::ColdNotSlower,
    ];

    /// How far the flag undermines the figure. Untrustworthy: a failed check (the figure may
    /// not measure what it claims), a busy measuring CPU (other work inside the samples), an
    /// interval too wide to use, an interruption (fewer samples than planned), a negative
    /// fixed cost (a figure no operation can have). Advisory, the rest: the interval already
    /// covers what they describe (unstable rounds, outliers, a CI above the target but usable)
    /// or they qualify the figure without voiding it (a failed later round, a batch-size
    /// difference given with its size, a sweep's fit, a shift since the previous run).
    pub fn tier(self) -> Tier {
        match self {
            Flag::CheckFailed | Flag::BusyCpu | Flag::CiUnusable | Flag::Interrupted | Flag::NegativeFixedCost => {
                Tier::Untrustworthy
            }
            Flag::CiTargetMissed
            | Flag::Unstable
            | Flag::ManyOutliers
            | Flag::BatchDependent
            | Flag::RoundFailed
            | Flag::PoorFit
            | Flag::Nonlinear
            | Flag::LevelShift
            | Flag::ColdNotSlower => Tier::Advisory,
        }
    }

    /// One-line hint on what the flag means and what to do.
    pub fn hint(self) -> &'static str {
        match self {
            Flag::CheckFailed => "a validation check failed: the number may not measure what it claims (see checks)",
            Flag::CiTargetMissed => {
                "the 95 % CI of the median is wider than the target but within ±10 %: usable; for a tighter one, \
                 retry on an idle machine or with --thorough"
            }
            Flag::CiUnusable => {
                "the 95 % CI reaches over 10 % from the estimate: the figure is not usable; the CPU was busy or \
                 noisy; retry on a quieter CPU (--cpu N) or with --thorough"
            }
            Flag::Unstable => {
                "the rounds disagree beyond their uncertainty: the machine changed level during the run; the interval spans the levels seen (see notes)"
            }
            Flag::Interrupted => {
                "interrupted: Ctrl-C arrived while it was sampling, so it has fewer samples than planned"
            }
            Flag::ManyOutliers => {
                "over 5 % of samples are severe outliers (beyond 3 IQR, and over 10 % and 4 timer steps from the median): other activity disturbed the run"
            }
            Flag::PoorFit => {
                "a point lies over 10 % and over 3 standard errors from the fitted model: the figures do not describe every size; read the points"
            }
            Flag::NegativeFixedCost => {
                "the fitted fixed cost is negative beyond its CI, which no operation can cost: the model misses the small sizes; read the points, or sweep small sizes for the fixed cost"
            }
            Flag::Nonlinear => {
                "the cost per byte changes with the size (two segments fit better than one line): the note gives both slopes and where they meet"
            }
            Flag::BatchDependent => {
                "batches of m and 8m operations (8m about the samples' batch) give different costs per operation: the timer overhead or the batching itself distorts the figure"
            }
            Flag::RoundFailed => "a round failed (see notes): the figure comes from the rounds before it",
            Flag::BusyCpu => {
                "other tasks, interrupts or the hypervisor held the measuring CPU for over 20 % of a probe next to \
                 the row's rounds: the machine was not idle; figures may be disturbed (see notes)"
            }
            Flag::LevelShift => {
                "this run's 95 % CI does not overlap the previous run's on this machine, kernel and build (history): \
                 the machine changed level between the runs; each interval holds for its own run (see notes)"
            }
            Flag::ColdNotSlower => {
                "the cold-cache row is not slower than its hot twin (the cold/hot ratio's 95 % interval reaches 1): \
                 the disturbance did not reach what the operation uses, or its cost is dominated by what no \
                 disturbance from user space reaches (see notes for the likely reason)"
            }
        }
    }

    /// The flag's one name: in tables, the result file, every export and the docs.
    pub fn label(self) -> &'static str {
        match self {
            Flag::CheckFailed => "check-failed",
            Flag::CiTargetMissed => "ci-wide",
            Flag::CiUnusable => "ci-unusable",
            Flag::Unstable => "unstable",
            Flag::Interrupted => "interrupted",
            Flag::ManyOutliers => "outliers",
            Flag::PoorFit => "poor-fit",
            Flag::BatchDependent => "batch-dependent",
            Flag::RoundFailed => "round-failed",
            Flag::NegativeFixedCost => "negative-fixed",
            Flag::Nonlinear => "nonlinear",
            Flag::BusyCpu => "busy-cpu",
            Flag::LevelShift => "level-shift",
            Flag::ColdNotSlower => "cold-not-slower",
        }
    }
}

/// Outcome of a benchmark's self-checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check passed.
    Validated,
    /// At least one check failed.
    Failed,
    /// No check could be made (each check says why).
    NotValidated,
}

/// Checks and their verdict.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Validation {
    /// Overall verdict.
    pub verdict: Verdict,
    /// Each check made.
    pub checks: Vec<Check>,
}

impl Validation {
    /// Verdict from checks: any failure fails; otherwise any passed check validates (checks
    /// that could not be made stay listed with their reason); no check made: not validated.
    pub fn from_checks(checks: Vec<Check>) -> Validation {
        let verdict = if checks.iter().any(|c| c.ok == Some(false)) {
            Verdict::Failed
        } else if checks.iter().any(|c| c.ok == Some(true)) {
            Verdict::Validated
        } else {
            Verdict::NotValidated
        };
        Validation { verdict, checks }
    }
}

/// Cycles per operation at the counter's frequency.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Cycles {
    /// "tsc" (reference cycles at the TSC's frequency, not core cycles), or "pmu".
    pub source: String,
    /// Median cycles per operation.
    pub median: f64,
}

/// One stage of a breakdown (e.g. trap, other).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Stage {
    /// Stage name.
    pub name: String,
    /// Summary of that stage's samples.
    pub summary: Summary,
}

/// Per-operation latency percentiles from single-operation samples (`--tail`), unlike the
/// summary's percentiles, which are of samples that each average many operations.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Tail {
    /// Single-operation samples.
    pub n: usize,
    /// Median, in the row's unit (a time).
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// The timer's resolution: no figure here is finer than this.
    pub resolution: f64,
}

/// A result computed from other results (e.g. `ctx.address_space`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Derived {
    /// How it was computed, e.g. "ctx.process − ctx.thread".
    pub formula: String,
    /// The estimate and its bootstrap CI.
    pub estimate: Estimate,
    /// A difference whose 95 % CI includes 0: below the run's resolution. Reporters print
    /// "below resolution (|x| < bound)", never a signed figure or a ratio.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub below_resolution: bool,
}

impl Derived {
    /// The benchmark a rescaled result rescales (`ipc.pipe` of "2 × ipc.pipe at 0 bytes", the
    /// formula of [`vocab::Rule::Scaled`]); `None` for a difference or any other derivation.
    pub fn scaled_source(&self) -> Option<&str> {
        let (_, rest) = self.formula.split_once(" × ")?;
        rest.split(" at ").next().filter(|s| !s.is_empty())
    }
}

/// The fitted cost of a size sweep, fixed + per byte, by weighted least squares through the
/// points' medians (see `stats::fit` and `derive::sweep_fits`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepFit {
    /// "weighted least squares".
    pub method: String,
    /// The model the row's figures come from.
    pub model: SweepModel,
    /// One line through every point.
    pub line: SweepLine,
    /// A line with one bend, when the sweep has enough sizes (chosen or not: see `model`).
    pub segments: Option<SweepSegments>,
    /// The points, with their diagnostics under the chosen model.
    pub points: Vec<SweepPoint>,
}

impl SweepFit {
    /// The two segments, if they were chosen.
    pub fn chosen_segments(&self) -> Option<&SweepSegments> {
        self.segments.as_ref().filter(|_| self.model == SweepModel::TwoSegments)
    }

    /// The fixed cost (ns) and its 95 % CI under the chosen model.
    pub fn fixed_ns(&self) -> (f64, [f64; 2]) {
        match self.chosen_segments() {
            Some(s) => (s.fixed_ns, s.fixed_ci95_ns),
            None => (self.line.intercept_ns, self.line.intercept_ci95_ns),
        }
    }

    /// The cost per byte (ns) at the largest sizes and its 95 % CI under the chosen model.
    pub fn per_byte_ns(&self) -> (f64, [f64; 2]) {
        match self.chosen_segments() {
            Some(s) => (s.large_slope_ns_per_byte, s.large_slope_ci95_ns_per_byte),
            None => (self.line.slope_ns_per_byte, self.line.slope_ci95_ns_per_byte),
        }
    }
}

/// Which model of a sweep the figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepModel {
    /// One straight line.
    Line,
    /// Two segments meeting at a breakpoint.
    TwoSegments,
}

/// A weighted least-squares line `intercept + slope × size`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepLine {
    /// The cost at 0 bytes.
    pub intercept_ns: f64,
    /// Its 95 % CI.
    pub intercept_ci95_ns: [f64; 2],
    /// The cost per byte.
    pub slope_ns_per_byte: f64,
    /// Its 95 % CI.
    pub slope_ci95_ns_per_byte: [f64; 2],
    /// Weighted coefficient of determination.
    pub r_squared: f64,
    /// Σ ((median − fitted) / se)² over the points.
    pub chi2: f64,
    /// Degrees of freedom: points − 2.
    pub dof: usize,
    /// chi2 / dof; the CIs are widened by √ of it when it exceeds 1.
    pub reduced_chi2: f64,
    /// P(χ²_dof > chi2): small when the points scatter beyond their own CIs.
    pub p_value: f64,
}

/// Two weighted least-squares segments meeting at `breakpoint_bytes`:
/// `fixed + small_slope × min(size, breakpoint) + large_slope × max(0, size − breakpoint)`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepSegments {
    /// Where the slopes meet, one of the measured sizes.
    pub breakpoint_bytes: u64,
    /// The cost at 0 bytes.
    pub fixed_ns: f64,
    /// Its 95 % CI.
    pub fixed_ci95_ns: [f64; 2],
    /// The cost per byte up to the breakpoint.
    pub small_slope_ns_per_byte: f64,
    /// Its 95 % CI.
    pub small_slope_ci95_ns_per_byte: [f64; 2],
    /// The cost per byte beyond the breakpoint.
    pub large_slope_ns_per_byte: f64,
    /// Its 95 % CI.
    pub large_slope_ci95_ns_per_byte: [f64; 2],
    /// Σ ((median − fitted) / se)² over the points.
    pub chi2: f64,
    /// Degrees of freedom: points − 3.
    pub dof: usize,
    /// chi2 / dof.
    pub reduced_chi2: f64,
    /// P(χ²_dof > chi2).
    pub p_value: f64,
    /// p-value of the F test of the segments against the line, times `breakpoints_tried`.
    pub vs_line_p_value: f64,
    /// How many breakpoints were tried.
    pub breakpoints_tried: usize,
}

/// One point of a sweep as the fit saw it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    /// The message size.
    pub size_bytes: u64,
    /// The point's median.
    pub median_ns: f64,
    /// The standard error the fit gave it: from its median's 95 % CI, (hi − lo) / 3.92; for a
    /// zero-width CI, the smallest relative one of the other points times this median.
    pub se_ns: f64,
    /// Its hat value (0 to 1): how far the fit follows this point alone.
    pub leverage: f64,
    /// (median − fitted) / (se √(1 − leverage)); `null` when the leverage is 1.
    pub std_residual: Option<f64>,
    /// Leverage over 2p/n (p coefficients, n points), or |std_residual| over 3.
    pub flagged: bool,
}

/// One benchmark under one parameter set.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// Benchmark id, `family.operation[.variant]`.
    pub id: String,
    /// What it measures.
    pub about: String,
    /// Parameters (placement, size, …).
    pub params: Params,
    /// The unit of the samples and of every figure computed from them (the fit excepted,
    /// whose fields name their units).
    pub unit: Unit,
    /// What became of it.
    pub status: Status,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// Sampling method.
    pub method: Method,
    /// Operations per sample.
    pub iterations_per_sample: u64,
    /// Operations run during warm-up.
    pub warmup_iterations: u64,
    /// Why sampling stopped.
    pub stop: Option<StopReason>,
    /// Every sample, in `unit` per operation (or object), in time order (all rounds, one
    /// after the other).
    pub samples: Vec<f64>,
    /// How many of `samples` each round took, in order.
    #[serde(default)]
    pub samples_per_round: Vec<usize>,
    /// The batch-size check: pairs `[cost per op in a batch of 8m, mean of the batches of m around it]`, 8m ≈ the samples' batch.
    #[serde(default)]
    pub batch_check: Vec<[f64; 2]>,
    /// Single-operation samples (`--tail`), in time order.
    #[serde(default)]
    pub single_op: Vec<f64>,
    /// Per-operation tail latency from `single_op`.
    #[serde(default)]
    pub tail: Option<Tail>,
    /// Statistics of `samples`.
    pub summary: Option<Summary>,
    /// Median in counter cycles.
    pub cycles: Option<Cycles>,
    /// Hardware counters per operation (`--counters`): what was counted, and why the rest
    /// was not; absent when counters were not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<counters::Counters>,
    /// Per-stage summaries, when the benchmark breaks its time down.
    pub breakdown: Option<Vec<Stage>>,
    /// Set when this row is derived from others.
    pub derived: Option<Derived>,
    /// Fitted fixed + per-byte cost, for sweeps.
    pub fit: Option<SweepFit>,
    /// Self-checks.
    pub validation: Validation,
    /// Warnings.
    pub flags: Vec<Flag>,
    /// Remarks on how this was measured (e.g. what a figure includes).
    pub notes: Vec<String>,
    /// What the benchmark observed besides its samples (e.g. context switches per message);
    /// unlike `params`, not part of what defines the result.
    #[serde(default)]
    pub observed: Params,
    /// The sampling settings the benchmark declared for itself over the run's (`config`),
    /// which its rounds were measured under; absent when it declared none (or nothing was
    /// measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingOverride>,
    /// For a cold-cache row (`cache=cold`): its cost against its hot twin (`cache=hot`),
    /// measured in the same rounds, pair by pair; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_hot: Option<ColdHot>,
    /// For a cold-cache row with `--counters`: the hot twins' hardware counts per operation
    /// (`counters` holds the cold samples'), from the same pairs; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_hot: Option<counters::Counters>,
}

/// A cold-cache row against its hot twin: each cold sample (one operation after the caches,
/// TLB and branch predictors were disturbed) is paired with the hot sample taken right after
/// it (the same operation again, single-operation timing too).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ColdHot {
    /// Median of the cold samples over the median of the hot twins.
    pub ratio: f64,
    /// 95 % interval of `ratio`: a bootstrap that resamples whole pairs (within rounds).
    pub ci: [f64; 2],
    /// Median of the hot twins, ns.
    pub hot_median_ns: f64,
    /// Pairs the ratio is computed from.
    pub pairs: usize,
    /// The hot twins' median is below one timer step: each twin was counted as at least one
    /// step, so `ratio` and `ci` are lower bounds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hot_below_step: bool,
    /// With `--counters`, each event counted on both sides: its mean per operation over the
    /// cold samples and over their hot twins (from [`Row::counters`] and
    /// [`Row::counters_hot`]); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<ColdHotCount>,
}

/// One hardware event of a cold row beside its hot twin.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ColdHotCount {
    /// One of [`counters::EVENT_NAMES`].
    pub event: String,
    /// Mean count per operation over the cold samples.
    pub cold_per_op: f64,
    /// Mean count per operation over their hot twins.
    pub hot_per_op: f64,
}

impl Row {
    /// A row with nothing measured yet.
    pub fn empty(id: &str, about: &str, params: Params, method: Method) -> Row {
        Row {
            id: id.into(),
            about: about.into(),
            params,
            unit: Unit::Ns,
            status: Status::Skipped,
            reason: None,
            method,
            iterations_per_sample: 0,
            warmup_iterations: 0,
            stop: None,
            samples: Vec::new(),
            samples_per_round: Vec::new(),
            batch_check: Vec::new(),
            single_op: Vec::new(),
            tail: None,
            summary: None,
            cycles: None,
            counters: None,
            breakdown: None,
            derived: None,
            fit: None,
            validation: Validation::from_checks(Vec::new()),
            flags: Vec::new(),
            notes: Vec::new(),
            observed: Params::new(),
            sampling: None,
            cold_hot: None,
            counters_hot: None,
        }
    }
}

impl Row {
    /// The median (in [`Row::unit`]), if measured.
    pub fn median(&self) -> Option<f64> {
        self.summary.as_ref().map(|s| s.median).or(self.derived.as_ref().map(|d| d.estimate.point))
    }

    /// Adds a flag found after the analysis, with the note that says why; a measured row's
    /// status follows its flags' worst tier.
    pub fn add_flag(&mut self, flag: Flag, note: String) {
        if !self.flags.contains(&flag) {
            self.flags.push(flag);
        }
        self.notes.push(note);
        if self.status.measured() {
            self.status = Status::of_flags(&self.flags);
        }
    }
}

/// Why a result file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    /// Could not be opened or read.
    #[error("cannot read result file {path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    /// Not JSON, truncated, or not an osprim result.
    #[error("{path} is not an osprim result file: {detail}")]
    NotOsprim { path: PathBuf, detail: String },
    /// A schema this build does not know.
    #[error("{path} has result schema {found}; this osprim reads schemas 1 to {SCHEMA}")]
    Schema { path: PathBuf, found: u64 },
}

/// The largest result file read (a default run writes about 2 MB).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// The text of a regular file of at most [`MAX_RESULT_BYTES`]: a FIFO would block, a device
/// could be endless.
pub(crate) fn read_capped(path: &Path) -> Result<String, ResultFileError> {
    use std::io::Read;
    let io = |error| ResultFileError::Io { path: path.into(), error };
    let not = |detail: String| ResultFileError::NotOsprim { path: path.into(), detail };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(not("it is not a regular file".into()));
    }
    if meta.len() > MAX_RESULT_BYTES {
        return Err(not(format!("it is larger than {} MiB", MAX_RESULT_BYTES >> 20)));
    }
    let mut text = String::new();
    std::fs::File::open(path).map_err(io)?.take(MAX_RESULT_BYTES + 1).read_to_string(&mut text).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData { not("it is not UTF-8 text".into()) } else { io(e) }
    })?;
    if text.len() as u64 > MAX_RESULT_BYTES {
        return Err(not(format!("it is larger than {} MiB", MAX_RESULT_BYTES >> 20)));
    }
    Ok(text)
}

/// Reads and checks a result file.
pub fn read_result_file(path: &Path) -> Result<RunFile, ResultFileError> {
    parse_result(path, &read_capped(path)?)
}

/// Checks the text of a result file read from `path` (named in errors): the parser under
/// [`read_result_file`], also for the fuzzers (docs/fuzzing.md).
pub fn parse_result(path: &Path, text: &str) -> Result<RunFile, ResultFileError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ResultFileError::NotOsprim {
        path: path.into(),
        detail: if e.is_eof() { "the file is truncated".into() } else { format!("invalid JSON ({e})") },
    })?;
    if ab::is_ab_value(&value) {
        return Err(ResultFileError::NotOsprim {
            path: path.into(),
            detail: "it is an A/B result of osprim ab, not a run's (osprim show and osprim report read it)".into(),
        });
    }
    let schema = value.get("schema");
    match schema.map(|v| v.as_u64()) {
        None => {
            return Err(ResultFileError::NotOsprim { path: path.into(), detail: "no \"schema\" field".into() });
        }
        Some(None) => {
            let found = schema.map(|v| v.to_string()).unwrap_or_default();
            return Err(ResultFileError::NotOsprim {
                path: path.into(),
                detail: format!("\"schema\" is {found}, not a whole number"),
            });
        }
        Some(Some(s)) if s == 0 || s > u64::from(SCHEMA) => {
            return Err(ResultFileError::Schema { path: path.into(), found: s });
        }
        _ => {}
    }
    let value = upgrade::to_current(value).map_err(|detail| ResultFileError::NotOsprim {
        path: path.into(),
        detail: format!("unexpected content ({detail})"),
    })?;
    serde_json::from_value(value)
        .map_err(|e| ResultFileError::NotOsprim { path: path.into(), detail: format!("unexpected content ({e})") })
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn every_flag_has_one_name_written_and_shown_and_one_tier() {
        let mut names = Vec::new();
        for f in Flag::ALL {
            let written = serde_json::to_value(f).unwrap();
            assert_eq!(written, serde_json::Value::from(f.label()), "{f:?} is written as it is shown");
            assert_eq!(serde_json::from_value::<Flag>(written).unwrap(), f);
            assert!(f.label().chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{} is kebab case", f.label());
            assert!(!names.contains(&f.label()), "{} twice", f.label());
            names.push(f.label());
            let _ = f.tier();
        }
        let untrustworthy: Vec<&str> =
            Flag::ALL.iter().filter(|f| f.tier() == Tier::Untrustworthy).map(|f| f.label()).collect();
        assert_eq!(untrustworthy, ["check-failed", "busy-cpu", "ci-unusable", "interrupted", "negative-fixed"]);
        assert!(Flag::CiTargetMissed.hint().contains(&format!("±{:.0} %", USABLE_CI_REL * 100.0)));
    }

    #[test]
    fn a_status_is_the_worst_tier_of_its_flags() {
        assert_eq!(Status::of_flags(&[]), Status::Ok);
        assert_eq!(Status::of_flags(&[Flag::ManyOutliers, Flag::Unstable]), Status::Advisory);
        assert_eq!(Status::of_flags(&[Flag::ManyOutliers, Flag::BusyCpu]), Status::Untrustworthy);
        let mut row: Row = serde_json::from_value(serde_json::json!({
            "id": "x.y", "about": "", "params": {}, "unit": "ns", "status": "ok", "reason": null,
            "method": "adaptive", "iterations_per_sample": 1, "warmup_iterations": 0, "stop": null,
            "samples": [], "summary": null, "cycles": null, "breakdown": null, "derived": null,
            "fit": null, "validation": {"verdict": "validated", "checks": []}, "flags": [], "notes": []
        }))
        .unwrap();
        row.add_flag(Flag::LevelShift, "moved".into());
        assert_eq!(row.status, Status::Advisory);
        row.add_flag(Flag::BusyCpu, "busy".into());
        assert_eq!(row.status, Status::Untrustworthy);
    }
}

#[cfg(test)]
mod derived_tests {
    use super::*;

    #[test]
    fn a_rescaled_result_names_its_source_and_a_difference_does_not() {
        let scaled = Derivation::scaled("rpc.pipe", "", "ipc.pipe", 2.0, 0);
        let d = |formula: String| Derived {
            formula,
            estimate: Estimate { point: 1.0, ci95: [1.0, 1.0] },
            below_resolution: false,
        };
        assert_eq!(d(scaled.formula()).scaled_source(), Some("ipc.pipe"));
        let diff = Derivation::difference("ctx.address_space", "", "ctx.process", "ctx.thread");
        assert_eq!(d(diff.formula()).scaled_source(), None);
    }
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn a_host_name_is_printable_bounded_and_trimmed() {
        for good in ["host-a", "web-01.eu-west", "c7i.large #3", "ü-host"] {
            assert_eq!(check_host(good), Ok(()), "{good}");
        }
        for bad in ["", "  ", "a\nb", "tab\there", " lead", "trail ", "\u{1b}[31m"] {
            assert!(check_host(bad).is_err(), "{bad:?}");
        }
        assert!(check_host(&"h".repeat(HOST_MAX_CHARS)).is_ok());
        assert!(check_host(&"h".repeat(HOST_MAX_CHARS + 1)).is_err());
    }

    #[test]
    fn a_file_without_a_host_reads_and_names_the_kernels_host() {
        let mut run = fixtures::run_file(false);
        let json = serde_json::to_value(&run).unwrap();
        assert!(json.get("host").is_none(), "not written when not given");
        let back: RunFile = serde_json::from_value(json).unwrap();
        assert_eq!((back.host.as_deref(), back.host_name()), (None, "fixture"));
        run.host = Some("host-a".into());
        let back: RunFile = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back.host_name(), "host-a");
    }
}
