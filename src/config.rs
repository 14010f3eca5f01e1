//! What a command asks for, validated: the run configuration `cli.rs` builds from the command
//! line. Nothing here knows how it was parsed (no clap below `cli.rs`); the runner and the
//! reporters take these types.

use crate::sampler::SamplerConfig;
use std::path::PathBuf;

/// A usage mistake (exit status 2): an unknown benchmark, a bad value.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A command, validated.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant, reason = "one is built per process")]
pub enum Command {
    /// Measure and report; `with_seeds` adds the seed tables (the bare `osprim`).
    Run {
        /// What to measure and how.
        run: RunConfig,
        /// Also show the seed tables after the results.
        with_seeds: bool,
    },
    /// List the benchmarks matching a pattern (all without one).
    List {
        /// Family prefix, substring or glob.
        pattern: Option<String>,
    },
    /// Describe this machine.
    Env {
        /// Output format.
        format: Format,
    },
    /// The seed tables from a result file, or from a run of the benchmarks they need.
    Seeds(SeedsSource),
    /// The result file of a run that did not end, made from its journal.
    Finish {
        /// The result file (or its journal).
        result: PathBuf,
        /// What goes to stdout.
        format: Format,
    },
}

/// Where the seed view's figures come from.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant, reason = "one is built per process")]
pub enum SeedsSource {
    /// A result file from an earlier run.
    File(PathBuf),
    /// A run now; its `patterns` are filled with the benchmarks the tables need.
    Run(RunConfig),
}

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
    /// What is printed on stdout.
    pub format: Format,
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
            format: Format::Table,
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

pub use crate::report::{Format, View};

/// Single-operation samples per benchmark over the run with `--tail` (time permitting: they
/// take at most a quarter of each round).
pub const TAIL_SAMPLES: usize = 10_000;

/// The sizes `--sweep` measures: L4's message registers (0–80 bytes) are covered by `--sizes`.
pub const DEFAULT_SWEEP: [usize; 7] = [0, 8, 64, 512, 4 << 10, 64 << 10, 1 << 20];
