//! Stability runs: Go!'s stress and error tests on today's Linux (`osprim stress`,
//! `osprim errortest`). A stability run measures no time per operation; it says how long a
//! randomised workload ran without a failure, what it did, which invariants it checked, and
//! how the process's resources trended, so that a leak or a slow corruption shows.

use serde::{Deserialize, Serialize};

/// Which test.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum StabilityTest {
    /// Go!'s stress test: random domains, threads and calls of every kind under a timer.
    Stress,
    /// Go!'s error test: random entry-point calls with random arguments, and random system
    /// calls in a sandbox.
    #[serde(rename = "errortest")]
    ErrorTest,
}

impl StabilityTest {
    /// The subcommand's name: `stress`, `errortest`.
    pub fn name(self) -> &'static str {
        match self {
            StabilityTest::Stress => "stress",
            StabilityTest::ErrorTest => "errortest",
        }
    }
}

/// How a stability run ended.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Outcome {
    /// It ran its whole duration without a failure.
    Clean,
    /// An invariant was violated (or the workload crashed or hung) after `at_s` seconds.
    Failed {
        /// Seconds from the start to the failure.
        at_s: f64,
        /// What failed, in one line.
        what: String,
        /// The command that replays it (same seed).
        replay: String,
    },
    /// Stopped by a signal (Ctrl-C) after `at_s` seconds, without a failure until then.
    Interrupted {
        /// Seconds from the start to the stop.
        at_s: f64,
    },
}

/// One kind of operation (or of result), and how many times it happened.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Tally {
    /// The kind: `fcall`, `create`, `throw`, `EINVAL`, `SIGSEGV`, …
    pub kind: String,
    /// How many.
    pub count: u64,
}

/// An invariant, and how often it was checked and found broken.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Invariant {
    /// What must hold, in one line ("every call reaches its domain").
    pub name: String,
    /// Times checked.
    pub checked: u64,
    /// Times found broken (0 in a clean run).
    pub violated: u64,
}

/// The process's resources at one moment of the run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TrendPoint {
    /// Seconds from the start.
    pub at_s: f64,
    /// Resident set size of the process under test, bytes.
    pub rss_bytes: u64,
    /// Its open file descriptors.
    pub fds: u64,
    /// Its threads.
    pub threads: u64,
    /// Test-specific gauges at that moment (`domains`, `keys`, `mappings`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gauges: Vec<Tally>,
}

/// One stability run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StabilityRun {
    /// Which test.
    pub test: StabilityTest,
    /// The seed of every random choice: the same seed replays the same run.
    pub seed: u64,
    /// How it ran: `pkey` or `mprotect` domains, `seccomp sandbox`, …
    pub mode: String,
    /// Its settings, as `name=value` (`max_domains=10000`, `timer_hz=1000`, …).
    pub settings: Vec<String>,
    /// The duration asked for, seconds.
    pub requested_s: f64,
    /// How long it ran, seconds.
    pub ran_s: f64,
    /// How long it ran without a failure, seconds: the workload's time until it ended (the
    /// clean-up after it, in `ran_s`, is checked but is no time under load), until the stop
    /// of an interrupted run, or until the failure.
    pub clean_s: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// Operations done, by kind.
    pub operations: Vec<Tally>,
    /// Results by kind (refusals by errno, throws, signals): what the operations came to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<Tally>,
    /// Invariants checked.
    pub invariants: Vec<Invariant>,
    /// Resources sampled through the run (about once a second, at most 1000 points).
    pub trend: Vec<TrendPoint>,
    /// Anything a reader needs to know (what the test could not do here, and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A short test: one the seed suite (the bare `osprim`) ran for a few seconds after its
    /// benchmarks, so that Go!'s stability rows have a figure. It shows that the test runs
    /// here without a failure for that long, with all its checks, and no more: `osprim stress`
    /// and `osprim errortest` run for as long as asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short: bool,
}

impl StabilityRun {
    /// All operations done.
    pub fn total_operations(&self) -> u64 {
        self.operations.iter().map(|t| t.count).sum()
    }

    /// True when it ran its whole duration without a failure.
    pub fn is_clean(&self) -> bool {
        matches!(self.outcome, Outcome::Clean)
    }
}
