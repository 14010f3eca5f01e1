//! The result of `osprim crosscheck` as plain data: per primitive osprim and a classic peer
//! tool (`perf bench`, `cyclictest`) both measure, the peer's figure just before and just
//! after osprim's, osprim's figure of the same statistic with its 95 % interval, their ratio
//! with its interval, what the ratio says read by that interval ([`Agreement`]), and its flags.
//! Built by `crosscheck`, formatted by `report::crosscheck`.

use serde::{Deserialize, Serialize};

/// A ratio beyond 1 ± this is flagged; so is a peer whose two runs differ by more.
pub const TOLERANCE: f64 = 0.10;

/// One `osprim crosscheck`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Crosscheck {
    /// The CPU every peer and osprim's measuring thread ran on.
    pub cpu: usize,
    /// `--quick`: fewer peer loops, a shorter osprim budget.
    pub quick: bool,
    /// Whether real-time scheduling (`SCHED_FIFO`) was permitted.
    pub realtime: bool,
    /// Whether Ctrl-C cut it short (the rows after are absent).
    pub interrupted: bool,
    /// One row per primitive, in the order measured.
    pub rows: Vec<CrossRow>,
}

/// One primitive both measure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CrossRow {
    /// What is compared, in words ("getppid system call").
    pub primitive: String,
    /// The peer's command line as run (or as it would run).
    pub peer: String,
    /// osprim's result: id and parameters, e.g. `rpc.pipe peer=thread placement=same_cpu`.
    pub osprim: String,
    /// The statistic the peer prints, and of osprim's samples compared with it.
    pub statistic: Statistic,
    /// The figures, or why there are none.
    pub outcome: Outcome,
    /// What differs between the two beyond the figure (set-up, resolution, policy).
    pub notes: Vec<String>,
}

/// The statistic compared.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The mean time per operation.
    Mean,
    /// The median of single operations.
    Median,
}

impl Statistic {
    /// `mean` or `median`.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Mean => "mean",
            Statistic::Median => "median",
        }
    }
}

/// The figures of a row, or why it has none.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Both measured.
    Compared(Comparison),
    /// Not compared: the peer is absent or lacks the subcommand, its output could not be
    /// read, osprim skipped the benchmark, or Ctrl-C came first.
    NotCompared {
        /// Why, in one line (naming the package or version that would provide the peer).
        reason: String,
    },
}

/// What a ratio osprim ÷ peer says, read by its interval.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Agreement {
    /// The whole interval lies within 1 ± [`TOLERANCE`]: the two agree.
    Within,
    /// The whole interval lies beyond 1 ± [`TOLERANCE`]: they disagree (flagged).
    Beyond,
    /// The interval straddles 1 ± [`TOLERANCE`], or there is no ratio: cannot tell.
    #[default]
    Inconclusive,
}

impl Agreement {
    /// As printed.
    pub fn text(self) -> &'static str {
        match self {
            Agreement::Within => "within ±10 %",
            Agreement::Beyond => "beyond ±10 %",
            Agreement::Inconclusive => "inconclusive",
        }
    }
}

/// The peer's figure before and after osprim's, osprim's, and their ratio.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    /// The peer's run before osprim's, ns per operation.
    pub peer_before_ns: f64,
    /// The peer's run after osprim's, ns per operation.
    pub peer_after_ns: f64,
    /// osprim's figure, ns per operation.
    pub osprim_ns: f64,
    /// The 95 % interval of osprim's figure (of the statistic compared), ns.
    #[serde(default)]
    pub osprim_ci95_ns: Option<[f64; 2]>,
    /// osprim ÷ the mean of the peer's two runs.
    pub ratio: f64,
    /// The ratio's 95 % interval: osprim's interval over the peer's, the range of its two runs
    /// (`stats::reading::ratio_of`); absent when the peer's range includes 0.
    #[serde(default)]
    pub ratio_ci95: Option<[f64; 2]>,
    /// What the ratio says, read by its interval against 1 ± [`TOLERANCE`].
    #[serde(default)]
    pub agreement: Agreement,
    /// The whole interval of the ratio lies beyond 1 ± [`TOLERANCE`] (or there is no ratio):
    /// `--strict` exits 1.
    pub ratio_flagged: bool,
    /// The peer's two runs differ by more than [`TOLERANCE`] of their mean: the machine
    /// changed level between them, and the ratio is unreliable.
    pub peer_disagrees: bool,
}

impl Crosscheck {
    /// Whether any row's ratio is flagged (`--strict` exits 1).
    pub fn any_flagged(&self) -> bool {
        self.rows.iter().any(|r| matches!(&r.outcome, Outcome::Compared(c) if c.ratio_flagged))
    }
}
