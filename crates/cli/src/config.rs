//! What a command asks for, validated: the run configuration `cli.rs` builds from the command
//! line. Nothing here knows how it was parsed (no clap below `cli.rs`); the runner and the
//! reporters take these types.

use bench::sampler::SamplerConfig;
use std::path::PathBuf;

/// A usage mistake (exit status 2): an unknown benchmark, a bad value.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where runs save their results, and the history database, by default.
pub const RESULTS_DIR: &str = "osprim-results";

/// A command, validated.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant, reason = "one is built per process")]
pub enum Command {
    /// Measure and report; `papers` adds the seed papers' tables after the results table,
    /// `digest` ends with the one-screen digest (the bare `osprim`: the seed suite).
    Run {
        /// What to measure and how.
        run: RunConfig,
        /// How the results are shown.
        present: Present,
        /// Show the papers' tables (the seed view) after the results table.
        papers: bool,
        /// End with the digest, the last screen ([`report::digest`]): the bare `osprim`.
        digest: bool,
        /// A saved run each result is compared with.
        baseline: Option<PathBuf>,
        /// Where the saved run is recorded (`None`: not recorded).
        history: Option<store::history::Location>,
    },
    /// Two conditions measured side by side (`osprim ab`).
    Ab {
        /// What to measure, under which conditions.
        ab: AbConfig,
        /// The regression gate (`--fail-on-regression`).
        gate: Option<analysis::compare::Gate>,
        /// Where the saved result is recorded (`None`: not recorded).
        history: Option<store::history::Location>,
        /// How it is shown.
        present: Present,
    },
    /// A command line whose values are wrong in a way clap cannot see: the usage mistake.
    Invalid(String),
    /// A stability run (`osprim stress`, `osprim errortest`).
    Stability {
        /// Which test.
        test: model::stability::StabilityTest,
        /// How long.
        duration: std::time::Duration,
        /// The seed (`None`: a new one).
        seed: Option<u64>,
        /// Where the result file goes.
        output: Output,
        /// Where the saved run is recorded (`None`: not recorded).
        history: Option<store::history::Location>,
        /// The name the fleet knows this machine by (`osprim --host NAME stress`).
        host: Option<String>,
        /// How it is shown.
        present: Present,
    },
    /// List the benchmarks matching any of the patterns (all without one).
    List {
        /// Family prefixes, substrings or globs.
        patterns: Vec<String>,
        /// Output format.
        format: Format,
    },
    /// Describe this machine.
    Env {
        /// Output format.
        format: Format,
    },
    /// Render a saved result file.
    Show {
        /// The result file.
        result: PathBuf,
        /// How.
        present: Present,
    },
    /// The seed papers' tables beside a saved result (the newest in `osprim-results/`
    /// without one).
    Papers {
        /// The result file; `None`: the newest saved one.
        result: Option<PathBuf>,
        /// How.
        present: Present,
    },
    /// Each later result file compared with the first.
    Compare {
        /// The base, then the files compared with it (with `base_history`, the new run alone).
        results: Vec<PathBuf>,
        /// `--base-history N` and the database: the base is the last N runs pooled.
        base_history: Option<(usize, store::history::Location)>,
        /// Noise threshold (0.02 = 2 %).
        noise: f64,
        /// The regression gate (`--fail-on-regression`): exit 1 when a result fails it, 4 when
        /// it could not decide enough results.
        gate: Option<analysis::compare::Gate>,
        /// Compare runs of different methods, or cold against warm, instead of refusing.
        allow_mismatch: bool,
        /// How.
        present: Present,
    },
    /// Results over time from the history database.
    History {
        /// Ids to show (all without one).
        patterns: Vec<String>,
        /// The database.
        location: store::history::Location,
        /// Result files to record first.
        import: Option<PathBuf>,
        /// The host imported files that name none are recorded under (`--host`).
        host: Option<String>,
        /// Change points per series instead of every run.
        changes: bool,
        /// The A/B results instead of the runs.
        ab: bool,
        /// How.
        present: Present,
    },
    /// The result file of a run that did not end, made from its journal.
    Finish {
        /// The result file (or its journal).
        result: PathBuf,
        /// How its results are shown.
        present: Present,
    },
    /// One HTML page of a result file, optionally compared with a base run.
    Report {
        /// The result file.
        result: PathBuf,
        /// The base run to compare with.
        base: Option<PathBuf>,
        /// Noise threshold (0.02 = 2 %).
        noise: f64,
        /// Where the page goes (`-`: stdout).
        html: PathBuf,
        /// Compare runs that do not compare (methods, cold against warm) instead of refusing.
        allow_mismatch: bool,
        /// Say nothing on stderr when done.
        quiet: bool,
    },
    /// osprim's figures beside the peer tools' (perf bench, cyclictest), peer–osprim–peer on
    /// one CPU; `present.strict`: exit 1 when a ratio is flagged.
    Crosscheck {
        /// The CPU (`None`: the one `osprim run` would choose).
        cpu: Option<usize>,
        /// Fewer peer loops and a shorter osprim budget.
        quick: bool,
        /// How the rows are shown.
        present: Present,
    },
    /// Shell completions for the named shell, on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: String,
    },
    /// The benchmark ids and families, one a line, for the shell completions.
    CompleteIds,
    /// The man pages: `osprim.1` on stdout, or one page per command written into a directory.
    Man {
        /// Where to write the pages (`None`: `osprim.1` on stdout).
        dir: Option<PathBuf>,
    },
}

/// How results are shown, and what the exit status reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Present {
    /// What goes to stdout.
    pub format: Format,
    /// Layout for people.
    pub view: View,
    /// No progress, plan or verdict on stderr.
    pub quiet: bool,
    /// Exit with [`EXIT_CHECK_FAILED`] when a self-check failed or a benchmark failed.
    pub strict: bool,
}

/// Exit status: every result measured (clean, flagged or skipped).
pub const EXIT_OK: u8 = 0;
/// Exit status: an error (results could not be saved, memory ran short, a bad file).
pub const EXIT_ERROR: u8 = 1;
/// Exit status: a usage mistake (unknown benchmark, bad flag value).
pub const EXIT_USAGE: u8 = 2;
/// Exit status with `--strict`: a self-check failed or a benchmark failed.
pub const EXIT_CHECK_FAILED: u8 = 3;
/// Exit status of a gate (`--fail-on-regression`) that could not judge what it was asked to:
/// nothing regressed, but `compare` could not decide more gated results than
/// `--undecided-share` allows (inconclusive, below resolution, without a ratio, or
/// untrustworthy and not judged), or `ab` left some result undecided.
pub const EXIT_UNDECIDED: u8 = 4;

/// Everything a run needs to know, checked as far as can be without the machine.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Benchmarks to run: ids, family prefixes, substrings or globs; empty: all.
    pub patterns: Vec<String>,
    /// Sampler settings for the whole run.
    pub sampler: SamplerConfig,
    /// The CPU to pin the measuring thread to; `None`: the least loaded allowed one.
    pub cpu: Option<usize>,
    /// Two distinct CPUs for cross-CPU benchmarks.
    pub cpu_pair: Option<[usize; 2]>,
    /// Message sizes for payload-carrying benchmarks; `None`: each one's default.
    pub sizes: Option<Vec<usize>>,
    /// Where the result file goes.
    pub output: Output,
    /// Only these results (a seed suite): per benchmark id, parameter sets of which a
    /// variant must match one (values compared as text); `None`: every variant.
    pub only: Option<Vec<Only>>,
    /// The longest the run may take, in seconds ([`crate::progress::Plan::bound_s`]): the
    /// budget per result shrinks to fit; `None`: no bound.
    pub bound_s: Option<f64>,
    /// Cache state to measure in (`--cache`).
    pub cache: CacheMode,
    /// The benchmarks whose cold twins a `CacheMode::Both` or `Cold` run measures; `None`:
    /// every selected one that has a cold mode (the seed suite lists Go!'s worst-case rows').
    pub cold_ids: Option<Vec<String>>,
    /// The name the fleet knows this machine by (`--host`), recorded in the result file.
    pub host: Option<String>,
    /// Each short stability test's length (the seed suite's stress and error tests after its
    /// rounds, [`crate::short_stability`]), within `bound_s`; `None`: none.
    pub short_stability: Option<std::time::Duration>,
}

/// `--cache`: which cache state the selected benchmarks are measured in (`bench::cold`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheMode {
    /// Today's hot rows only, batched (no `cache` parameter).
    #[default]
    Hot,
    /// Only cold-cache rows (`cache=cold`) with their hot twins (`cache=hot`); a benchmark
    /// without a cold mode gives a skipped row saying why, one with a `cache` parameter of its
    /// own (fault.file, fault.user) runs its own variants.
    Cold,
    /// The hot rows, and the cold rows with their twins for the benchmarks with a cold mode.
    Both,
}

/// The seed suite's bound: the bare `osprim` finishes within a minute, however many results
/// the papers' tables come to need (set-up and reporting take the rest of the minute). It
/// covers the short stability tests after the rounds: the rounds' sampling gets what they
/// leave.
pub const SEED_SUITE_BOUND_S: f64 = 50.0;

/// One result a restricted run measures: a benchmark id and the parameters its variant must
/// have (an empty list: every variant of the benchmark).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Only {
    /// Benchmark id.
    pub id: String,
    /// (name, value as text) pairs the variant's parameters must include.
    pub params: Vec<(String, String)>,
}

impl RunConfig {
    /// The default run: every benchmark, standard sampling, a table, a result file in
    /// `osprim-results/`.
    pub fn standard() -> RunConfig {
        RunConfig {
            patterns: Vec::new(),
            sampler: SamplerConfig::standard(),
            cpu: None,
            cpu_pair: None,
            sizes: None,
            output: Output::Default,
            only: None,
            bound_s: None,
            cache: CacheMode::Hot,
            cold_ids: None,
            host: None,
            short_stability: None,
        }
    }
}

/// Where a run's result file goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A new, unique file in `osprim-results/`.
    Default,
    /// This file (absent, or a regular file osprim may replace).
    File(PathBuf),
    /// No result file.
    None,
}

pub use report::{Format, View};

/// Single-operation samples per benchmark over the run with `--tail` (time permitting: they
/// take at most a quarter of each round).
pub const TAIL_SAMPLES: usize = 10_000;

/// The sizes `--sweep` measures. L4's message registers (0–10 32-bit words, 0–40 bytes) are
/// covered by `--sizes`.
pub const DEFAULT_SWEEP: [usize; 7] = [0, 8, 64, 512, 4 << 10, 64 << 10, 1 << 20];

/// What `osprim ab` is asked for, validated.
#[derive(Clone, Debug)]
pub struct AbConfig {
    /// Benchmarks: ids, families, substrings or globs.
    pub patterns: Vec<String>,
    /// Condition A.
    pub a: model::ab::Condition,
    /// Condition B (ignored with `check`: B is A).
    pub b: model::ab::Condition,
    /// The most the pairs may take, s.
    pub budget_s: f64,
    /// Sampler budget of one row in one round, s.
    pub round_budget_s: f64,
    /// Noise threshold (0.02 = 2 %).
    pub noise: f64,
    /// Seed of the order and the layouts; `None`: a new one.
    pub seed: Option<u64>,
    /// A and B at the same time on two CPUs.
    pub duet: bool,
    /// A against A.
    pub check: bool,
    /// The CPU of interleaved rounds (`None`: the least loaded allowed one).
    pub cpu: Option<usize>,
    /// The two CPUs of a duet (`None`: the first two allowed ones).
    pub cpus: Option<[usize; 2]>,
    /// Where the result file goes.
    pub output: Output,
    /// `--host`.
    pub host: Option<String>,
    /// No progress lines.
    pub quiet: bool,
}
