//! The command line (clap only): subcommands, flags, help with examples, and their
//! translation into the validated configuration of [`crate::config`]. Nothing below this
//! module knows clap: [`Cli::into_command`] is the one hand-over.

use crate::config::{
    self, Command as Cmd, DEFAULT_SWEEP, Format, Only, Output, Present, RunConfig, TAIL_SAMPLES, View,
};
use crate::{seeds, terminal};
use bench::sampler::SamplerConfig;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use model::Method;
use std::path::PathBuf;

/// osprim measures what operating-system primitives cost on this machine, with confidence
/// intervals and self-checks, beside the figures of five classic systems papers.
#[derive(Parser, Debug)]
#[command(name = "osprim", version, about, long_about = None, after_help = "\
Without a command, osprim measures what the five papers' tables need (under a minute) and
ends with a one-screen digest; the results are saved in osprim-results/, and `osprim papers`
shows the papers' tables beside them.

Examples:
  osprim                         the seed suite, then a one-screen digest
  osprim run --quick syscall     the syscall family, about 0.2 s per result
  osprim run                     the whole catalogue (the plan says how long)
  osprim list ipc fault          the benchmarks of two families
  osprim papers                  the papers' tables from the newest saved result
  osprim show today.json --format markdown")]
pub struct Cli {
    /// What to do (default: the seed suite, then a one-screen digest).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The name the fleet knows this machine by (see run --host), for the bare osprim's seed
    /// suite, and before papers --run, run, stress or errortest.
    #[arg(long, value_name = "NAME", value_parser = parse_host)]
    pub host: Option<String>,
    /// Options of the bare `osprim` (the seed suite).
    #[command(flatten)]
    pub bare: BareArgs,
}

/// Options of the bare `osprim`, which measures the seed suite (a command has its own).
#[derive(Args, Debug, Clone, Default)]
pub struct BareArgs {
    /// Without a command: the seed suite quickly (3 rounds, a smaller budget per result).
    #[arg(long)]
    pub quick: bool,
    /// Without a command: save no result file (nor history record).
    #[arg(long)]
    pub no_save: bool,
    /// Without a command: save the result file here (default: osprim-results/<UTC time>.json).
    #[arg(long, short, value_name = "FILE", conflicts_with = "no_save")]
    pub output: Option<PathBuf>,
}

/// Options every command takes.
#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// Colour: auto (a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto, global = true)]
    pub color: ColorArg,
    /// No plan, progress or verdict on stderr; errors still print.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

/// `--color`.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorArg {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always, also into a file or a pipe.
    Always,
    /// Never.
    Never,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure benchmarks, print a table as results come in, save a JSON result file.
    #[command(after_help = "\
Examples:
  osprim run                          the whole catalogue; the plan says how long
  osprim run --quick syscall fs       two families, quickly
  osprim run 'fs.*' --format json     JSON on stdout
  osprim run ipc.pipe --sweep         message sizes 0 to 1 MiB, fixed + per-byte cost
  osprim run --cache cold syscall ipc.pipe fault.anon
                                      cold caches: each row beside its hot twin, cold/hot
  osprim run syscall.null --method seed --cpu 1
  osprim run --output today.json --thorough --strict
  osprim run syscall --baseline yesterday.json")]
    Run(RunArgs),
    /// Measure two conditions side by side, paired, until each result is decided: what B
    /// costs against A.
    #[command(after_help = "\
A condition is what differs between A and B: a prefix command that ends by running the worker
(--a/--b: `env LD_PRELOAD=./hook.so`, `setarch -R`, a script that installs a seccomp filter and
execs its arguments), another osprim binary (--a-bin/--b-bin: two builds), and commands run
before and after each of its rounds (--a-setup/--a-teardown, --b-setup/--b-teardown: a sysctl,
attaching and detaching an eBPF program). Either side without any is the plain worker.

Each pair is an A round and a B round, each in a fresh worker with the same memory layout, one
after the other on one CPU in a random balanced order (blocks `ab ba` or `ba ab` from the
recorded seed), or with --duet at the same time on two CPUs, swapping CPUs every pair. After
each pair every result is judged: the ratio B/A of the typical pair (the median of the pairs'
ratios) with an interval from a confidence sequence, valid however often it is looked at, and
compare's verdicts. A decided result gets no more pairs; it stops when all are decided or the
budget ends. --check runs A against A and reports its own false-alarm rate.

Exit status: 0; with --fail-on-regression, 1 when a result is slower by more than PCT, and 4
when a gated result was not decided (inconclusive, or marked untrustworthy); 1 on an error; 2
for a usage mistake; 128+N when signal N cut it short (what was measured is kept).

Examples:
  osprim ab syscall --b './with-seccomp-profile.sh'
  osprim ab syscall.null fs.stat --b 'env LD_PRELOAD=./audit.so' --budget 120
  osprim ab syscall --b-setup 'bpftool prog load …' --b-teardown 'rm /sys/fs/bpf/agent'
  osprim ab ipc.pipe --a-bin ./osprim-main --b-bin ./osprim-branch --duet
  osprim ab syscall --check")]
    Ab(AbArgs),
    /// List benchmarks: id, what it measures, the seed rows it answers, whether it runs here.
    #[command(
        after_help = "Examples:\n  osprim list\n  osprim list syscall ipc.pipe 'fault.*'\n  osprim list --format markdown"
    )]
    List {
        /// Only ids matching any of these (family prefix, substring, or glob with *).
        patterns: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = FormatArg::Table)]
        format: FormatArg,
    },
    /// Describe this machine (CPU, kernel, mitigations, virtualisation, timer…).
    #[command(after_help = "Examples:\n  osprim env\n  osprim env --format json")]
    Env {
        /// Output format.
        #[arg(long, value_enum, default_value_t = FormatArg::Table)]
        format: FormatArg,
    },
    /// Render a saved result file again, in any format.
    #[command(after_help = "\
Examples:
  osprim show osprim-results/2026-11-25T03-15-30.586Z-1b46.json
  osprim show today.json --format latex > results.tex
  osprim show today.json --wide --detail")]
    Show {
        /// A result file from `osprim run`.
        result: PathBuf,
        /// How to show it.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// The five seed papers' tables beside today's figures, from a saved result.
    #[command(
        visible_alias = "seeds",
        after_help = "\
Reads RESULT, or the newest result file in osprim-results/; measures nothing unless asked
with --run (which measures the seed suite, as the bare `osprim` does).

Examples:
  osprim papers
  osprim papers today.json --all-rows
  osprim papers --format latex > seed-tables.tex"
    )]
    Papers {
        /// A result file (default: the newest in osprim-results/).
        result: Option<PathBuf>,
        /// List every seed row, also those without a figure today.
        #[arg(long)]
        all_rows: bool,
        /// Measure the seed suite first (as the bare `osprim` does), then show the tables.
        #[arg(long, conflicts_with = "result")]
        run: bool,
        /// How to show it.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// Compare runs: per result, the ratio of medians with a 95 % CI and a verdict.
    #[command(after_help = "\
The first file is the base; each later file is compared with it. A result is compared when
both runs have it with the same id and parameters (the CPUs it ran on aside; they are listed
when they differ). The figures are the medians the runs' own tables print; the ratio is new /
base of those very figures; its 95 % CI comes from a bootstrap that resamples rounds, then
blocks within a round, as the samples were taken.

Verdicts: `slower` / `faster` when the whole CI lies above / below 1 and the ratio beyond the
noise threshold; `no change` when the whole CI lies within the threshold; `inconclusive`
otherwise. A figure whose CI includes 0 gives no ratio: `below resolution (|x| < bound)`. Rows
of the seed method have no interval between runs and are never called faster or slower.
Rows whose self-check failed, or flagged busy-cpu or interrupted, are marked.

Runs of different methods (seed against adaptive), or a result measured cold in one run and
warm in the other, are refused unless --allow-mismatch. Every difference in method, budget,
rounds, CI target, CPU placement, build and machine is listed.

Many rows at once: Benjamini–Hochberg at a false discovery rate of 5 % selects the rows that
may be called faster or slower; their CIs are at 1 − R·5 %/m (R selected of m), the others' at
95 %, read only for `no change`.

Exit status:
  0  the comparison was made; with --fail-on-regression, the gate decided every result (or
     all but --undecided-share PCT of them) and none regressed
  1  --fail-on-regression: a result slower by more than PCT (each named on stderr with its
     parameters, figures, ratio and CI; with --fail-on-inconclusive, an inconclusive one that
     may be; with --untrustworthy fail, a marked one); or a file cannot be read
  2  a usage mistake or a refused mismatch
  4  --fail-on-regression: none regressed, but more gated results than --undecided-share
     allows (default 0) were not decided: inconclusive, below resolution, without a ratio, or
     marked untrustworthy and not judged (--untrustworthy skip); each named on stderr

--base-history N takes as the base the last N runs of the same host, CPU model, kernel and
build from the history database (--db), pooled: their rounds together, so that what moves
between runs is in the base's interval. Give it the new run alone.

Examples:
  osprim compare before.json after.json
  osprim compare today.json --base-history 5
  osprim compare base.json a.json b.json --noise 5
  osprim compare main.json branch.json --fail-on-regression 10 --format json
  osprim compare main.json pr.json --fail-on-regression 5 --fail-on-inconclusive --untrustworthy fail")]
    Compare {
        /// Result files: the base, then one or more to compare with it (with --base-history: the
        /// new run alone).
        #[arg(required = true, num_args = 1.., value_name = "RESULT")]
        results: Vec<PathBuf>,
        /// The base: the last N runs of the new run's host, CPU model and kernel by its build,
        /// from the history database, read from their result files and pooled as one run whose
        /// rounds are all of theirs.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        base_history: Option<u32>,
        /// With --base-history: the history database (default: osprim-results/history.db).
        #[arg(long, value_name = "DB", requires = "base_history")]
        db: Option<String>,
        /// Noise threshold in percent: a ratio whose CI lies within it of 1 is `no change`.
        #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_percent)]
        noise: f64,
        /// Exit with status 1 when a result is slower by more than PCT percent.
        #[arg(long, value_name = "PCT", value_parser = parse_percent)]
        fail_on_regression: Option<f64>,
        /// With --fail-on-regression: an inconclusive result whose CI reaches beyond PCT (or that
        /// has no CI) fails the gate too.
        #[arg(long, requires = "fail_on_regression")]
        fail_on_inconclusive: bool,
        /// With --fail-on-regression: what results marked untrustworthy (check failed, busy CPU,
        /// interrupted) do: left out and named (skip), fail the gate (fail), or judged as any other
        /// (judge).
        #[arg(long, value_name = "WHAT", value_enum, default_value_t = UntrustworthyArg::Skip, requires = "fail_on_regression")]
        untrustworthy: UntrustworthyArg,
        /// With --fail-on-regression: the share of gated results (percent) that may stay
        /// undecided (inconclusive, below resolution, no ratio, untrustworthy) and the gate still
        /// pass; beyond it, exit 4.
        #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_percent, requires = "fail_on_regression")]
        undecided_share: f64,
        /// Compare runs of different methods, or results measured cold against warm, instead of
        /// refusing.
        #[arg(long)]
        allow_mismatch: bool,
        /// How the comparison is shown.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// A result over time and across machines, from the history database.
    #[command(after_help = "\
Every run that saves its result file is also recorded in the history database: a SQLite file
(osprim-results/history.db by default) or, for many machines, a PostgreSQL server
(--db postgres://user@host/db). --import DIR records the result files already in DIR.
--changes finds where each series (one result, method and machine) changed level:
E-divisive means on the runs' medians, 1 % level, at least 3 runs either side.

Examples:
  osprim history syscall.null
  osprim history 'ipc.*' --format csv
  osprim history --changes
  osprim history --import osprim-results
  osprim history ctx --db postgres://osprim@perf-db.example/osprim")]
    History {
        /// Ids to show: ids, family prefixes, substrings or globs; none: every result.
        patterns: Vec<String>,
        /// The database: a SQLite file or postgres://… (default: osprim-results/history.db).
        #[arg(long, value_name = "DB")]
        db: Option<String>,
        /// Record the result files in DIR (or the one file) first (those already recorded are
        /// left alone).
        #[arg(long, value_name = "DIR")]
        import: Option<PathBuf>,
        /// With --import: the host to record files under that name none (run --host).
        #[arg(long, value_name = "NAME", value_parser = parse_host, requires = "import")]
        host: Option<String>,
        /// The change points of each series (E-divisive means), not every run.
        #[arg(long)]
        changes: bool,
        /// The A/B results (`osprim ab`) instead of the runs.
        #[arg(long, conflicts_with_all = ["changes", "import"])]
        ab: bool,
        /// How it is shown.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// Make the result file of a run that did not end (killed, machine crashed, disk full)
    /// from its journal, RESULT.journal, and print its table.
    #[command(after_help = "\
A run appends every measurement to RESULT.journal as it goes and removes it once RESULT is
saved. If the run could not save (SIGKILL, a crash, a full disk), the journal stays; this turns
it into RESULT (partial unless the run had finished measuring) and removes it.

Examples:
  osprim finish today.json
  osprim finish osprim-results/2026-11-25T01-02-03.456Z-1a2b.json.journal")]
    Finish {
        /// The result file (or its journal).
        result: PathBuf,
        /// How to show it.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// One self-contained HTML page of a result file: plots of every result, the sweeps, the
    /// papers then and now, and with --compare a forest plot of the ratios against a base run.
    #[command(after_help = "\
The page needs no network and no JavaScript: the plots are inline SVG. With --compare BASE, each
result in both runs is drawn as its ratio new / base median with a 95 % CI (as osprim compare
computes it), coloured by verdict, with the noise band shaded. --html - writes to stdout.

Examples:
  osprim report today.json --html today.html
  osprim report after.json --compare before.json --noise 5 --html change.html")]
    Report {
        /// A result file from `osprim run`.
        result: PathBuf,
        /// A base result file to compare with (a forest plot of the ratios).
        #[arg(long, value_name = "BASE")]
        compare: Option<PathBuf>,
        /// Noise threshold in percent for --compare: smaller changes are `no change`.
        #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = parse_percent)]
        noise: f64,
        /// Where to write the HTML page (absent, or a regular file; `-`: stdout).
        #[arg(long, value_name = "FILE", required = true)]
        html: PathBuf,
        /// With --compare: compare runs of different methods, or cold against warm, instead of refusing.
        #[arg(long)]
        allow_mismatch: bool,
    },
    /// osprim's figures beside perf bench's and cyclictest's, measured peer–osprim–peer on one CPU.
    #[command(after_help = "\
For each primitive both measure, the peer tool runs (pinned with taskset), then osprim's
matching benchmark (pinned), then the peer again. Shown: the peer's figure before and after,
osprim's figure of the statistic the peer prints (mean for perf bench, median for cyclictest),
the ratio osprim / peer (peer = the mean of its two runs), flagged beyond ±10 %, and a flag
when the peer's two runs differ by over 10 % (the ratio is then unreliable). An absent peer is
named with its Debian package (linux-perf, rt-tests). Without SCHED_FIFO, cyclictest runs with
--policy=other and osprim as SCHED_OTHER. Default under ~2 minutes, --quick under ~30 s.

Exit status: 0 when it ran (flags are information); 1 with --strict when a ratio is flagged,
or on an error; 2 for a usage mistake; 128+N when signal N (Ctrl-C: 130) cut it short.

Examples:
  osprim crosscheck
  osprim crosscheck --quick --cpu 1
  osprim crosscheck --format markdown --strict")]
    Crosscheck {
        /// The CPU peers and osprim run on (default: the least loaded allowed CPU, as `osprim run`).
        #[arg(long, value_name = "N")]
        cpu: Option<usize>,
        /// Fewer peer loops and a shorter osprim budget: the whole under ~30 s.
        #[arg(long)]
        quick: bool,
        /// Exit with status 1 when a ratio lies beyond ±10 %.
        #[arg(long)]
        strict: bool,
        /// How the rows are shown.
        #[command(flatten)]
        present: PresentArgs,
    },
    /// Go!'s stress test: random domains, threads and calls of every kind under a 1 kHz timer,
    /// checking invariants all the time; how long it ran without a failure.
    #[command(after_help = "\
Randomly creates and destroys 1 to 10,000 protection domains (protection keys where the CPU
has them, else the kernel-assisted mprotect mode), keeps up to 1,000 runnable threads, makes
random calls of every kind (fcall, tcall, call, xfer) nested up to 20 deep, throws included,
under a 1 kHz timer signal, and checks after every step that each call reached its domain,
each outside access faulted and rights came back. It reports operations by kind, the
invariants checked, and the RSS, descriptor and thread trends. The result file and the
history keep it; `osprim papers` shows the longest clean run beside Go!'s 4 days.

Exit status: 0 clean; 3 when an invariant broke (the line to replay it is printed);
1 on an error; 130 when Ctrl-C stopped it (what ran until then is kept).

Examples:
  osprim stress --duration 60s
  osprim stress --duration 1h -o stress.json
  osprim stress --seed 42 --duration 10m")]
    Stress(StabilityArgs),
    /// Go!'s error test: the domain library's entry points with random references, arguments
    /// and frames, and random system calls in a sandboxed child; each must be refused cleanly.
    #[command(after_help = "\
Calls the domain library's entry points with random, stale and forged references, random
arguments and random argument frames: each must be refused with an error or a throw, and the
caller and every live domain must be intact after it. Beside it, a child process makes system
calls with random arguments inside a sandbox (its own scratch directory, resource limits, no
privileges: root drops to nobody first, and a seccomp allow-list refuses every call that could
touch a file or a process outside it); errors are counted by errno, unexpected signals and
hangs as failures.

Exit status: as for `osprim stress`.

Examples:
  osprim errortest --duration 60s
  osprim errortest --seed 7 --duration 1h -o errortest.json")]
    Errortest(StabilityArgs),
    /// Print shell completions (to install them, see README).
    #[command(after_help = "\
Examples:
  osprim completions bash > ~/.local/share/bash-completion/completions/osprim
  osprim completions zsh > ~/.zfunc/_osprim
  osprim completions fish > ~/.config/fish/completions/osprim.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page, or write one page per command into a directory.
    #[command(after_help = "\
Examples:
  osprim man | man -l -
  osprim man --dir ~/.local/share/man/man1")]
    Man {
        /// Write osprim.1 and osprim-<command>.1 here instead of osprim.1 on stdout.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// How results are shown: format and layout.
#[derive(Args, Debug, Clone, Default)]
pub struct PresentArgs {
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
    /// Everything, whatever the terminal's width: descriptions, every parameter, full notes.
    #[arg(long)]
    pub wide: bool,
    /// Breakdowns one row per stage, and derived rows in full.
    #[arg(long)]
    pub detail: bool,
}

/// Options shared by every command that measures.
#[derive(Args, Debug, Clone, Default)]
pub struct SamplingArgs {
    /// About 0.2 s per benchmark, in 3 rounds.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// About 5 s per benchmark, in 10 rounds, and a 0.5 % CI target.
    #[arg(long)]
    pub thorough: bool,
    /// Sampling method: adaptive, or the seed papers' 10,100 runs with 100 discarded.
    #[arg(long, value_enum, default_value_t = MethodArg::Adaptive)]
    pub method: MethodArg,
    /// Pin the measuring thread to this CPU (default: the least loaded allowed CPU).
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// The two CPUs for cross-CPU benchmarks, e.g. 0,1.
    #[arg(long, value_name = "A,B", value_parser = parse_cpu_pair)]
    pub cpus: Option<[usize; 2]>,
    /// Target relative half-width of the median's 95 % CI, e.g. 0.01 for 1 %.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub ci_target: Option<f64>,
    /// Time budget per benchmark in seconds, over all its rounds (overrides --quick/--thorough).
    #[arg(long, value_name = "SECONDS", value_parser = parse_budget)]
    pub budget: Option<f64>,
    /// Exactly N rounds over the benchmarks, each a fresh set-up with a share of the budget.
    /// Without it: at least 5 (--thorough 10), and up to three times as many for results whose
    /// rounds disagree, while the run's time for them lasts; --quick exactly 3.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub rounds: Option<u16>,
    /// Also take single-operation samples and report per-operation p50/p99/p99.9.
    #[arg(long)]
    pub tail: bool,
    /// Also count cycles, instructions, LLC and dTLB misses and branch misses per operation
    /// (hardware counters through perf_event_open, in the same samples as the time), where
    /// the machine exposes a PMU; each result says which it has and why not.
    #[arg(long)]
    pub counters: bool,
    /// Where to save the result file (default: osprim-results/<UTC time>.json).
    #[arg(long, short, value_name = "FILE", conflicts_with = "no_save")]
    pub output: Option<PathBuf>,
    /// Do not save a result file.
    #[arg(long)]
    pub no_save: bool,
    /// Measure payload-carrying benchmarks over the default message sizes
    /// (0, 8, 64, 512, 4K, 64K, 1M) and fit fixed + per-byte cost.
    #[arg(long, conflicts_with = "sizes")]
    pub sweep: bool,
    /// Measure payload-carrying benchmarks at these message sizes, e.g. 0,64,4K,1M.
    #[arg(long, value_name = "LIST", value_parser = parse_sizes)]
    pub sizes: Option<Sizes>,
    /// Cache state: hot (today's batched rows), cold (each operation timed alone after the
    /// caches, TLB and branch predictors were disturbed, rows cache=cold, each beside its
    /// hot twin cache=hot timed alone right after it in the same rounds, the cold row giving
    /// cold/hot with its interval; a benchmark without a cold mode gives a skipped row saying
    /// why; fault.file and fault.user keep their own cache parameter), or both.
    #[arg(long, value_enum, default_value_t = CacheArg::Hot)]
    pub cache: CacheArg,
}

/// `--cache`.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheArg {
    /// Hot caches: operations in tight loops, batched (the default).
    #[default]
    Hot,
    /// Cold caches: single operations after a disturbance, each with its hot twin.
    Cold,
    /// Both: the hot rows, and cold rows with their twins.
    Both,
}

impl From<CacheArg> for config::CacheMode {
    fn from(c: CacheArg) -> config::CacheMode {
        match c {
            CacheArg::Hot => config::CacheMode::Hot,
            CacheArg::Cold => config::CacheMode::Cold,
            CacheArg::Both => config::CacheMode::Both,
        }
    }
}

/// Message sizes in bytes, from `--sizes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

/// `--method`.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MethodArg {
    /// Warm-up, sized batches, stop when the median's CI meets the target.
    #[default]
    Adaptive,
    /// Single-operation runs (10,000 kept, 100 discarded per round), mean reported.
    Seed,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Method {
        match m {
            MethodArg::Adaptive => Method::Adaptive,
            MethodArg::Seed => Method::Seed,
        }
    }
}

impl SamplingArgs {
    /// The message sizes asked for: `--sizes`, the default sweep with `--sweep`, else none.
    pub fn sizes(&self) -> Option<Vec<usize>> {
        match (&self.sizes, self.sweep) {
            (Some(s), _) => Some(s.0.clone()),
            (None, true) => Some(DEFAULT_SWEEP.to_vec()),
            (None, false) => None,
        }
    }

    /// The sampler settings the flags ask for.
    pub fn sampler_config(&self) -> SamplerConfig {
        let mut cfg = if self.quick {
            SamplerConfig::quick()
        } else if self.thorough {
            SamplerConfig::thorough()
        } else {
            SamplerConfig::standard()
        };
        cfg.method = self.method.into();
        if let Some(t) = self.ci_target {
            cfg.ci_target_rel = t;
        }
        if let Some(b) = self.budget {
            cfg.budget_s = b;
        }
        if let Some(r) = self.rounds {
            cfg = cfg.with_rounds(usize::from(r));
        }
        if self.tail {
            cfg.tail_samples = TAIL_SAMPLES;
        }
        cfg.counters = self.counters;
        cfg
    }

    /// The run these flags describe, of `patterns`.
    pub fn run_config(&self, patterns: Vec<String>) -> RunConfig {
        RunConfig {
            patterns,
            sampler: self.sampler_config(),
            cpu: self.cpu,
            cpu_pair: self.cpus,
            sizes: self.sizes(),
            output: match (&self.output, self.no_save) {
                (_, true) => Output::None,
                (Some(p), false) => Output::File(p.clone()),
                (None, false) => Output::Default,
            },
            only: None,
            bound_s: None,
            cache: self.cache.into(),
            cold_ids: None,
            host: None,
            short_stability: None,
        }
    }
}

impl Cli {
    /// A usage mistake clap lets through: the bare command's options before a command
    /// (`osprim --quick run`), which would otherwise be ignored.
    pub fn check(&self) -> Result<(), String> {
        let bare = &self.bare;
        let given: Vec<&str> =
            [(bare.quick, "--quick"), (bare.no_save, "--no-save"), (bare.output.is_some(), "--output")]
                .into_iter()
                .filter_map(|(set, name)| set.then_some(name))
                .collect();
        match (&self.command, given.first()) {
            (Some(_), Some(flag)) => Err(format!(
                "{flag} before a command is an option of the bare osprim; give it after the command (osprim run \
                 {flag} …)"
            )),
            _ => Ok(()),
        }
    }

    /// The validated command this command line asks for.
    pub fn into_command(self) -> Cmd {
        let global = self.global;
        let host = self.host;
        let present = |p: &PresentArgs, strict: bool, all_rows: bool| Present {
            format: p.format.into(),
            view: View {
                width: if p.wide { usize::MAX } else { terminal::stdout_width().unwrap_or(report::WIDTH) },
                wide: p.wide,
                detail: p.detail,
                color: terminal::stdout_color(global.color.into()),
                all_rows,
            },
            quiet: global.quiet,
            strict,
        };
        let bare = self.bare;
        let seed_suite = |bare: &BareArgs| {
            let only = seeds_only();
            let flags = SamplingArgs {
                quick: bare.quick,
                no_save: bare.no_save,
                output: bare.output.clone(),
                ..SamplingArgs::default()
            };
            let mut sampler = flags.sampler_config();
            // L4Ka's rows count retired instructions: the seed suite asks for the counters (a
            // machine without a PMU says why, and the run goes on).
            sampler.counters = true;
            RunConfig {
                sampler,
                cold_ids: Some(cold_ids(&only)),
                only: Some(only),
                host: host.clone(),
                bound_s: Some(config::SEED_SUITE_BOUND_S),
                // Go!'s stability rows: a short stress and error test after the rounds.
                short_stability: Some(crate::short_stability::each(bare.quick)),
                cache: config::CacheMode::Both,
                ..flags.run_config(Vec::new())
            }
        };
        match self.command {
            None => Cmd::Run {
                run: seed_suite(&bare),
                present: present(&PresentArgs::default(), false, false),
                papers: false,
                digest: true,
                baseline: None,
                // A run that saves nothing records nothing.
                history: (!bare.no_save).then(|| history_location(None)),
            },
            Some(Command::Papers { run: true, all_rows, present: p, .. }) => Cmd::Run {
                run: seed_suite(&BareArgs::default()),
                present: present(&p, false, all_rows),
                papers: true,
                digest: true,
                baseline: None,
                history: Some(history_location(None)),
            },
            Some(Command::Run(args)) => Cmd::Run {
                present: present(&args.present, args.strict, false),
                run: RunConfig { host: args.host.or(host), ..args.sampling.run_config(args.patterns) },
                papers: false,
                digest: false,
                baseline: args.baseline,
                history: if args.no_history { None } else { Some(history_location(args.db.as_deref())) },
            },
            Some(Command::Ab(a)) => match ab_config(a.clone(), host.clone(), global.quiet) {
                Ok(ab) => Cmd::Ab {
                    history: (!a.no_history && !a.no_save).then(|| history_location(a.db.as_deref())),
                    ab,
                    gate: a.fail_on_regression.map(|pct| analysis::compare::Gate {
                        regression: pct / 100.0,
                        inconclusive_fails: false,
                        untrustworthy: analysis::compare::Untrustworthy::Skip,
                        undecided_share: a.undecided_share / 100.0,
                    }),
                    present: present(&a.present, false, false),
                },
                Err(e) => Cmd::Invalid(e),
            },
            Some(Command::Stress(a)) => stability_command(model::stability::StabilityTest::Stress, a, host, &present),
            Some(Command::Errortest(a)) => {
                stability_command(model::stability::StabilityTest::ErrorTest, a, host, &present)
            }
            Some(Command::List { patterns, format }) => Cmd::List { patterns, format: format.into() },
            Some(Command::Env { format }) => Cmd::Env { format: format.into() },
            Some(Command::Show { result, present: p }) => Cmd::Show { result, present: present(&p, false, false) },
            Some(Command::Papers { result, all_rows, present: p, run: false }) => {
                Cmd::Papers { result, present: present(&p, false, all_rows) }
            }
            Some(Command::Compare {
                results,
                noise,
                fail_on_regression,
                fail_on_inconclusive,
                untrustworthy,
                undecided_share,
                base_history,
                db,
                allow_mismatch,
                present: p,
            }) => Cmd::Compare {
                results,
                base_history: base_history.map(|n| (n as usize, history_location(db.as_deref()))),
                noise: noise / 100.0,
                gate: fail_on_regression.map(|pct| analysis::compare::Gate {
                    regression: pct / 100.0,
                    inconclusive_fails: fail_on_inconclusive,
                    untrustworthy: untrustworthy.into(),
                    undecided_share: undecided_share / 100.0,
                }),
                allow_mismatch,
                present: present(&p, false, false),
            },
            Some(Command::History { patterns, db, import, host, changes, ab, present: p }) => Cmd::History {
                patterns,
                location: history_location(db.as_deref()),
                import,
                host,
                changes,
                ab,
                present: present(&p, false, false),
            },
            Some(Command::Finish { result, present: p }) => Cmd::Finish { result, present: present(&p, false, false) },
            Some(Command::Report { result, compare, noise, html, allow_mismatch }) => {
                Cmd::Report { result, base: compare, noise: noise / 100.0, html, allow_mismatch, quiet: global.quiet }
            }
            Some(Command::Crosscheck { cpu, quick, strict, present: p }) => {
                Cmd::Crosscheck { cpu, quick, present: present(&p, strict, false) }
            }
            Some(Command::Completions { shell }) => Cmd::Completions { shell: shell.to_string() },
            Some(Command::Man { dir }) => Cmd::Man { dir },
        }
    }
}

/// The results the seed papers' tables need: each benchmark with the parameters of the rows
/// it answers (a derived row stands for its sources with the same parameters).
fn seeds_only() -> Vec<Only> {
    let mut only: Vec<Only> = Vec::new();
    let wants = seeds::figures()
        .iter()
        .flat_map(|f| seeds::target(f).wants().into_iter().chain(seeds::beside(f).into_iter().map(|b| b.1)));
    // And the five primitives of the digest, which no paper's row asks for.
    let wants = wants.chain(report::digest::PRIMITIVES.iter().map(|p| p.want));
    for want in wants {
        let params: Vec<(String, String)> = want.params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let ids: Vec<&str> = match bench::registry::DERIVED.iter().find(|d| d.id == want.id) {
            Some(d) => d.sources(),
            None => vec![want.id],
        };
        for id in ids {
            let o = Only { id: id.to_string(), params: params.clone() };
            if !only.contains(&o) {
                only.push(o);
            }
        }
    }
    only
}

/// The benchmarks whose cold twins the seed suite measures: [`bench::cold::SUITE`], and every
/// benchmark with a cold mode a seed row wants with `cache=cold`.
fn cold_ids(only: &[Only]) -> Vec<String> {
    let mut ids: Vec<String> = bench::cold::SUITE.iter().map(|s| s.to_string()).collect();
    for o in only {
        let cold = o.params.iter().any(|(k, v)| k == bench::cold::CACHE_PARAM && v == bench::cold::COLD);
        let has_mode = bench::registry::find(&o.id).is_some_and(|b| b.cold_mode().is_ok());
        if cold && has_mode && !ids.contains(&o.id) {
            ids.push(o.id.clone());
        }
    }
    ids
}

/// The hidden command the completions call for benchmark ids: the benchmark ids and families,
/// one a line, so that they follow the binary's catalogue. The binary takes it before clap
/// parses (`src/main.rs`), so that clap's completions, help and man pages never offer it.
pub const COMPLETE_IDS: &str = "__complete-ids";

/// The commands whose positional arguments are benchmark ids, families or patterns.
const ID_COMMANDS: [&str; 4] = ["run", "ab", "list", "history"];

/// What completing a benchmark offers: every id (derived ones too) and every family (the id's
/// first part: `syscall`, `ipc`), sorted, each once.
pub fn completion_words() -> Vec<String> {
    let ids = bench::registry::all().iter().map(|b| b.id()).chain(bench::registry::DERIVED.iter().map(|d| d.id));
    let mut words: Vec<String> = Vec::new();
    for id in ids {
        words.push(id.to_string());
        if let Some((family, _)) = id.split_once('.') {
            words.push(family.to_string());
        }
    }
    words.sort();
    words.dedup();
    words
}

/// The options of `osprim <command>` (and the global ones) that take a value: after one of
/// them, the word being completed is its value, not a benchmark.
fn value_options(command: &str) -> Vec<String> {
    let root = Cli::command();
    let sub = root.find_subcommand(command).cloned();
    root.get_arguments()
        .chain(sub.iter().flat_map(|s| s.get_arguments()))
        .filter(|a| !a.is_positional() && a.get_action().takes_values())
        .flat_map(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            let short = a.get_short().map(|c| format!("-{c}"));
            long.into_iter().chain(short)
        })
        .collect()
}

/// Writes shell completions for `shell` (a name [`clap_complete::Shell`] knows): clap's, and
/// for bash, zsh and fish the benchmark ids and families after `osprim run`, `ab`, `list`
/// and `history`, asked of the binary itself ([`COMPLETE_IDS`]) when the shell completes.
pub fn completions(shell: &str, out: &mut dyn std::io::Write) -> Result<(), String> {
    let shell: clap_complete::Shell = shell.parse()?;
    let mut generated = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "osprim", &mut generated);
    let mut script = String::from_utf8_lossy(&generated).into_owned();
    match shell {
        clap_complete::Shell::Bash => script.push_str(&bash_ids()),
        clap_complete::Shell::Zsh => script = zsh_ids(&script),
        clap_complete::Shell::Fish => script.push_str(&format!(
            "\n# Benchmark ids and families, from the binary's own catalogue.\n\
             complete -c osprim -n \"__fish_seen_subcommand_from {}\" -f -a \"(osprim {COMPLETE_IDS} 2>/dev/null)\"\n",
            ID_COMMANDS.join(" ")
        )),
        _ => {}
    }
    out.write_all(script.as_bytes()).map_err(|e| e.to_string())
}

/// Bash: a function around clap's `_osprim` that, for a word not starting with `-` after
/// `run`, `ab`, `list` or `history` (and not the value of an option), offers the ids and families.
fn bash_ids() -> String {
    let cases: String = ID_COMMANDS
        .iter()
        .map(|c| {
            let mut options = value_options(c);
            // A pattern matching no word, should a command take no value at all.
            options.push("--".into());
            format!("        {c}) case \"$prev\" in {}) return 0 ;; esac ;;\n", options.join("|"))
        })
        .collect();
    format!(
        r#"
# Benchmark ids and families after `osprim run`, `ab`, `list` and `history`, from the binary's own
# catalogue (`osprim {COMPLETE_IDS}`).
_osprim_with_ids() {{
    _osprim "$@"
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            --color) ((i++)) ;;
            -*) ;;
            *) cmd="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    [[ "$cur" == -* ]] && return 0
    case "$cmd" in
{cases}        *) return 0 ;;
    esac
    COMPREPLY=($(compgen -W "$("${{COMP_WORDS[0]}}" {COMPLETE_IDS} 2>/dev/null)" -- "$cur"))
    return 0
}}
if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _osprim_with_ids -o nosort -o bashdefault -o default osprim
else
    complete -F _osprim_with_ids -o bashdefault -o default osprim
fi
"#
    )
}

/// Zsh: the positional patterns of `run`, `ab`, `list` and `history` complete with the ids and
/// families instead of file names.
fn zsh_ids(script: &str) -> String {
    let function = format!(
        "# Benchmark ids and families, from the binary's own catalogue.\n\
         _osprim_benchmark_ids() {{\n    local -a ids\n    ids=(${{(f)\"$(osprim {COMPLETE_IDS} 2>/dev/null)\"}})\n    \
         compadd -a ids\n}}\n\n"
    );
    let mut out = String::new();
    for line in script.lines() {
        if line.starts_with("'*::patterns -- ") && line.contains(":_default'") {
            out.push_str(&line.replacen(":_default'", ":_osprim_benchmark_ids'", 1));
        } else {
            if line.starts_with("if [ \"$funcstack[1]\" = \"_osprim\" ]") {
                out.push_str(&function);
            }
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The man pages: `osprim.1` first, then `osprim-<command>.1` for each command.
/// Each page has clap's sections, then EXIT STATUS, FILES, ENVIRONMENT and SEE ALSO
/// ([`crate::manual`]), then the version. Hidden commands get no page.
pub fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let root = Cli::command();
    let commands: Vec<String> =
        root.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name().to_string()).collect();
    let mut pages = vec![("osprim.1".to_string(), man_page(root.clone(), None, &commands)?)];
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("osprim-{}", sub.get_name());
        let page = man_page(sub.clone().name(name.clone()), Some(sub.get_name()), &commands)?;
        pages.push((format!("{name}.1"), page));
    }
    Ok(pages)
}

/// One man page: clap_mangen's sections in its order, osprim's own before the version.
fn man_page(cmd: clap::Command, command: Option<&str>, commands: &[String]) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_title(&mut buf)?;
    man.render_name_section(&mut buf)?;
    man.render_synopsis_section(&mut buf)?;
    man.render_description_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut buf)?;
    }
    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        man.render_extra_section(&mut buf)?;
    }
    buf.extend_from_slice(crate::manual::sections(command, commands).as_bytes());
    if cmd.get_version().is_some() || cmd.get_long_version().is_some() {
        man.render_version_section(&mut buf)?;
    }
    Ok(buf)
}

/// `osprim run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Benchmarks to run: ids, family prefixes (`syscall`), substrings or globs (`fs.*`);
    /// none: the whole catalogue.
    pub patterns: Vec<String>,
    /// Sampling and placement.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// How results are shown.
    #[command(flatten)]
    pub present: PresentArgs,
    /// Exit with status 3 when a self-check or a benchmark failed.
    #[arg(long)]
    pub strict: bool,
    /// Compare each result with this saved run as it comes in, and in full at the end.
    #[arg(long, value_name = "RESULT")]
    pub baseline: Option<PathBuf>,
    /// History database the saved run is recorded in: a SQLite file or postgres://…
    /// (default: osprim-results/history.db).
    #[arg(long, value_name = "DB", conflicts_with = "no_history")]
    pub db: Option<String>,
    /// Do not record the run in the history database.
    #[arg(long)]
    pub no_history: bool,
    /// The name the fleet knows this machine by (an Ansible inventory name, a CI runner's
    /// label), recorded in the result file and the history instead of the kernel's host name.
    #[arg(long, value_name = "NAME", value_parser = parse_host)]
    pub host: Option<String>,
}

/// `osprim ab`.
#[derive(Args, Debug, Clone)]
pub struct AbArgs {
    /// Benchmarks to measure: ids, family prefixes, substrings or globs.
    #[arg(required = true)]
    pub patterns: Vec<String>,
    /// Condition A's prefix command, which ends by running its arguments (the worker).
    #[arg(long = "a", value_name = "CMD")]
    pub a: Option<String>,
    /// Condition B's prefix command.
    #[arg(long = "b", value_name = "CMD")]
    pub b: Option<String>,
    /// Run before each of A's rounds (by sh -c).
    #[arg(long, value_name = "CMD")]
    pub a_setup: Option<String>,
    /// Run after each of A's rounds, whatever happened in it.
    #[arg(long, value_name = "CMD")]
    pub a_teardown: Option<String>,
    /// Run before each of B's rounds.
    #[arg(long, value_name = "CMD")]
    pub b_setup: Option<String>,
    /// Run after each of B's rounds.
    #[arg(long, value_name = "CMD")]
    pub b_teardown: Option<String>,
    /// The osprim binary whose worker measures A (default: this one).
    #[arg(long, value_name = "PATH")]
    pub a_bin: Option<String>,
    /// The osprim binary whose worker measures B.
    #[arg(long, value_name = "PATH")]
    pub b_bin: Option<String>,
    /// A against A: both sides run condition A; reports the false-alarm rate.
    #[arg(long, conflicts_with_all = ["b", "b_setup", "b_teardown", "b_bin"])]
    pub check: bool,
    /// A and B at the same time, one on each of two CPUs, swapping every pair.
    #[arg(long)]
    pub duet: bool,
    /// The most the pairs may take, in seconds (default 60).
    #[arg(long, value_name = "SECONDS", value_parser = parse_budget)]
    pub budget: Option<f64>,
    /// Sampler time of one result in one round, in seconds (default 0.03).
    #[arg(long, value_name = "SECONDS", value_parser = parse_budget)]
    pub round_budget: Option<f64>,
    /// Noise threshold in percent: a ratio whose interval lies within it of 1 is `no change`
    /// (default 2).
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub noise: Option<f64>,
    /// The seed of the order and the layouts (default: a new one, recorded).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// The CPU of interleaved rounds (default: the least loaded allowed CPU).
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// The two CPUs of --duet, e.g. 0,1 (default: the first two allowed).
    #[arg(long, value_name = "A,B", value_parser = parse_cpu_pair, requires = "duet")]
    pub cpus: Option<[usize; 2]>,
    /// Exit 1 when a result is slower by more than PCT percent, 4 when a result was not
    /// decided.
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_on_regression: Option<f64>,
    /// With --fail-on-regression: the share of results (percent) that may stay undecided
    /// (inconclusive, untrustworthy, without a pair) and the gate still pass; beyond it, exit 4.
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_percent, requires = "fail_on_regression")]
    pub undecided_share: f64,
    /// Where to save the A/B result (absent, or a regular file; default
    /// osprim-results/ab/…json).
    #[arg(long, short = 'o', value_name = "FILE", conflicts_with = "no_save")]
    pub output: Option<PathBuf>,
    /// Save no result file.
    #[arg(long)]
    pub no_save: bool,
    /// The name the fleet knows this machine by, recorded in the result.
    #[arg(long, value_name = "NAME", value_parser = parse_host)]
    pub host: Option<String>,
    /// History database the saved result is recorded in: a SQLite file or postgres://…
    /// (default: osprim-results/history.db).
    #[arg(long, value_name = "DB", conflicts_with = "no_history")]
    pub db: Option<String>,
    /// Do not record the result in the history database.
    #[arg(long)]
    pub no_history: bool,
    /// How the result is shown.
    #[command(flatten)]
    pub present: PresentArgs,
}

/// `--host`: printable, at most [`model::HOST_MAX_CHARS`] characters.
fn parse_host(s: &str) -> Result<String, String> {
    model::check_host(s).map(|()| s.to_string())
}

/// `osprim stress` and `osprim errortest`.
#[derive(Args, Debug, Clone)]
pub struct StabilityArgs {
    /// How long to run: `60s`, `10m`, `1h`, `4d`.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub duration: std::time::Duration,
    /// The seed of every random choice (default: a new one, printed); the same seed replays a
    /// run's choices.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Where to save the result file (default: osprim-results/<UTC time>.json).
    #[arg(long, short, value_name = "FILE", conflicts_with = "no_save")]
    pub output: Option<PathBuf>,
    /// Do not save a result file.
    #[arg(long)]
    pub no_save: bool,
    /// History database the run is recorded in: a SQLite file or postgres://…
    /// (default: osprim-results/history.db).
    #[arg(long, value_name = "DB", conflicts_with = "no_history")]
    pub db: Option<String>,
    /// Do not record the run in the history database.
    #[arg(long)]
    pub no_history: bool,
    /// How it is shown.
    #[command(flatten)]
    pub present: PresentArgs,
}

/// A duration of at least one second and at most 30 days (`humantime`: `90s`, `10m`, `1h`).
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if d >= std::time::Duration::from_secs(1) && d <= std::time::Duration::from_secs(30 * 86_400) => Ok(d),
        Ok(_) => Err(format!("expected a duration from 1s to 30d, got '{s}'")),
        Err(e) => Err(format!("expected a duration such as 60s, 10m or 1h, got '{s}': {e}")),
    }
}

/// `--format`: the one format vocabulary of every command.
/// What the regression gate does with results marked untrustworthy.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UntrustworthyArg {
    /// Leave them out of the gate and name them on stderr.
    #[default]
    Skip,
    /// They fail the gate.
    Fail,
    /// Judge them as any other result.
    Judge,
}

impl From<UntrustworthyArg> for analysis::compare::Untrustworthy {
    fn from(a: UntrustworthyArg) -> Self {
        match a {
            UntrustworthyArg::Skip => analysis::compare::Untrustworthy::Skip,
            UntrustworthyArg::Fail => analysis::compare::Untrustworthy::Fail,
            UntrustworthyArg::Judge => analysis::compare::Untrustworthy::Judge,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FormatArg {
    /// For people; fits the terminal.
    #[default]
    #[value(alias = "text")]
    Table,
    /// The whole document.
    Json,
    /// One line per result, one column per parameter.
    Csv,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// LaTeX tables with booktabs rules.
    Latex,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => Format::Csv,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Latex => Format::Latex,
        }
    }
}

impl From<ColorArg> for terminal::ColorChoice {
    fn from(c: ColorArg) -> terminal::ColorChoice {
        match c {
            ColorArg::Auto => terminal::ColorChoice::Auto,
            ColorArg::Always => terminal::ColorChoice::Always,
            ColorArg::Never => terminal::ColorChoice::Never,
        }
    }
}

fn parse_cpu_pair(s: &str) -> Result<[usize; 2], String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("expected two CPU numbers like 0,1, got '{s}'"))?;
    let p = |x: &str| x.trim().parse::<usize>().map_err(|_| format!("'{x}' is not a CPU number"));
    let (a, b) = (p(a)?, p(b)?);
    if a == b {
        return Err("the two CPUs must differ".into());
    }
    Ok([a, b])
}

fn parse_sizes(s: &str) -> Result<Sizes, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (digits, mult) = match part.to_ascii_uppercase().chars().last() {
            Some('K') => (&part[..part.len() - 1], 1usize << 10),
            Some('M') => (&part[..part.len() - 1], 1 << 20),
            _ => (part, 1),
        };
        let n = digits
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_mul(mult))
            .filter(|&n| n <= 64 << 20)
            .ok_or_else(|| format!("'{part}' is not a size in bytes up to 64M (e.g. 0,64,4K,1M)"))?;
        out.push(n);
    }
    out.sort_unstable();
    out.dedup();
    Ok(Sizes(out))
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("expected a fraction between 0 and 1 (e.g. 0.01), got '{s}'")),
    }
}

fn parse_budget(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!("expected seconds between 0 and 3600, got '{s}'")),
    }
}

/// `osprim stress` / `osprim errortest` as a validated command.
fn stability_command(
    test: model::stability::StabilityTest,
    a: StabilityArgs,
    host: Option<String>,
    present: &dyn Fn(&PresentArgs, bool, bool) -> Present,
) -> Cmd {
    Cmd::Stability {
        test,
        duration: a.duration,
        seed: a.seed,
        output: match (a.output, a.no_save) {
            (_, true) => Output::None,
            (Some(p), false) => Output::File(p),
            (None, false) => Output::Default,
        },
        history: if a.no_history { None } else { Some(history_location(a.db.as_deref())) },
        host,
        present: present(&a.present, false, false),
    }
}

/// `--db`, or the default SQLite file in the results directory.
fn history_location(db: Option<&str>) -> store::history::Location {
    match db {
        Some(s) => store::history::Location::parse(s),
        None => store::history::Location::default_in(std::path::Path::new(crate::config::RESULTS_DIR)),
    }
}

/// `osprim ab`'s arguments as its configuration, or the usage mistake in them.
fn ab_config(a: AbArgs, host: Option<String>, quiet: bool) -> Result<crate::config::AbConfig, String> {
    let condition = |name: &str, prefix: &Option<String>, setup, teardown, binary| {
        let prefix = match prefix {
            Some(text) => crate::ab::split_prefix(name, text).map_err(|e| e.0)?,
            None => Vec::new(),
        };
        Ok::<_, String>(model::ab::Condition { name: name.into(), prefix, setup, teardown, binary })
    };
    let ca = condition("A", &a.a, a.a_setup, a.a_teardown, a.a_bin)?;
    let cb = condition("B", &a.b, a.b_setup, a.b_teardown, a.b_bin)?;
    Ok(crate::config::AbConfig {
        patterns: a.patterns,
        a: ca,
        b: cb,
        budget_s: a.budget.unwrap_or(crate::ab::DEFAULT_BUDGET_S),
        round_budget_s: a.round_budget.unwrap_or(crate::ab::DEFAULT_ROUND_BUDGET_S),
        noise: a.noise.map_or(crate::ab::DEFAULT_NOISE, |pct| pct / 100.0),
        seed: a.seed,
        duet: a.duet,
        check: a.check,
        cpu: a.cpu,
        cpus: a.cpus,
        output: match (a.output, a.no_save) {
            (_, true) => Output::None,
            (Some(p), false) => Output::File(p),
            (None, false) => Output::Default,
        },
        host: a.host.or(host),
        quiet,
    })
}

/// A percentage: a finite number from 0 to 1000.
fn parse_percent(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 1000")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn counters_are_off_unless_asked_for() {
        let parse = |args: &[&str]| match Cli::try_parse_from(args).expect("parses").command {
            Some(Command::Run(r)) => r.sampling.sampler_config(),
            other => panic!("{other:?}"),
        };
        assert!(!parse(&["osprim", "run", "syscall"]).counters);
        let on = parse(&["osprim", "run", "--counters", "syscall"]);
        assert!(on.counters && on.record().counters);
        assert!(serde_json::to_value(parse(&["osprim", "run"]).record()).unwrap().get("counters").is_none());
    }

    #[test]
    fn cache_is_hot_by_default_cold_or_both_when_asked_and_nothing_else() {
        let run = |args: &[&str]| -> Result<RunConfig, clap::error::ErrorKind> {
            let cli = Cli::try_parse_from(args).map_err(|e| e.kind())?;
            match cli.command {
                Some(Command::Run(r)) => Ok(r.sampling.run_config(r.patterns)),
                _ => panic!("not a run"),
            }
        };
        assert_eq!(run(&["osprim", "run", "syscall"]).unwrap().cache, config::CacheMode::Hot);
        let cold = run(&["osprim", "run", "--cache", "cold", "syscall", "ipc.pipe", "fault.anon"]).unwrap();
        assert_eq!(cold.cache, config::CacheMode::Cold);
        assert_eq!(cold.patterns, ["syscall", "ipc.pipe", "fault.anon"]);
        assert_eq!(cold.cold_ids, None, "every selected benchmark with a cold mode");
        assert_eq!(run(&["osprim", "run", "--cache", "both"]).unwrap().cache, config::CacheMode::Both);
        assert!(run(&["osprim", "run", "--cache", "warm"]).is_err());
    }

    #[test]
    fn the_seed_suite_measures_the_cold_twins_of_its_list_beside_the_hot_rows() {
        let Cmd::Run { run, .. } = Cli::try_parse_from(["osprim"]).unwrap().into_command() else {
            panic!("the bare osprim runs")
        };
        assert_eq!(run.cache, config::CacheMode::Both);
        let ids = run.cold_ids.expect("a list");
        assert!(ids.iter().all(|id| bench::registry::find(id).is_some_and(|b| b.cold_mode().is_ok())), "{ids:?}");
        assert!(ids.iter().any(|id| id == "lock.mutex.unlock"));
        // A seed row that wants a benchmark cold adds it; one with a cache parameter of its own
        // (fault.user.sigsegv cache=cold) does not.
        let want = |id: &str| Only { id: id.into(), params: vec![("cache".into(), "cold".into())] };
        let more = cold_ids(&[want("ipc.pipe"), want("fault.user.sigsegv")]);
        assert!(more.iter().any(|i| i == "ipc.pipe") && !more.iter().any(|i| i == "fault.user.sigsegv"));
    }

    #[test]
    fn the_bare_osprim_takes_quick_no_save_and_output_and_refuses_them_before_a_command() {
        let bare = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).expect("parses");
            cli.check().expect("no mistake");
            match cli.into_command() {
                Cmd::Run { run, history, papers: false, .. } => (run, history),
                other => panic!("{other:?}"),
            }
        };
        let (run, history) = bare(&["osprim"]);
        assert_eq!((&run.output, run.sampler.rounds), (&Output::Default, 5));
        assert!(history.is_some() && run.bound_s.is_some());
        // Go!'s stability rows: a short stress and error test, shorter with --quick; `osprim
        // run` runs none.
        let each = |run: &config::RunConfig| run.short_stability.map(|d| d.as_secs_f64());
        assert_eq!(each(&run), Some(crate::short_stability::SECONDS));
        assert_eq!(each(&bare(&["osprim", "--quick"]).0), Some(crate::short_stability::QUICK_SECONDS));
        let Cmd::Run { run: catalogue, .. } = Cli::try_parse_from(["osprim", "run"]).unwrap().into_command() else {
            panic!("osprim run runs")
        };
        assert_eq!(each(&catalogue), None);
        let (run, history) = bare(&["osprim", "--quick", "--no-save"]);
        assert_eq!((run.output, run.sampler.rounds), (Output::None, SamplerConfig::quick().rounds));
        assert_eq!(run.sampler.budget_s, SamplerConfig::quick().budget_s);
        assert!(history.is_none(), "nothing saved, nothing recorded");
        assert!(run.only.is_some() && run.bound_s.is_some(), "still the seed suite, within its bound");
        let (run, _) = bare(&["osprim", "-o", "seeds.json"]);
        assert_eq!(run.output, Output::File("seeds.json".into()));
        assert!(Cli::try_parse_from(["osprim", "--no-save", "-o", "x.json"]).is_err());
        let before = Cli::try_parse_from(["osprim", "--quick", "run", "syscall"]).expect("clap lets it through");
        let why = before.check().expect_err("a mistake");
        assert!(why.contains("osprim run --quick"), "{why}");
        // A command's own --quick is its own.
        Cli::try_parse_from(["osprim", "run", "--quick", "syscall"]).unwrap().check().unwrap();
        Cli::try_parse_from(["osprim", "--quiet", "env"]).unwrap().check().unwrap();
    }

    #[test]
    fn the_bare_osprim_ends_on_its_digest_and_measures_its_five_primitives() {
        let parse = |args: &[&str]| match Cli::try_parse_from(args).unwrap().into_command() {
            Cmd::Run { run, papers, digest, .. } => (run, papers, digest),
            _ => panic!("{args:?} runs"),
        };
        let (run, papers, digest) = parse(&["osprim"]);
        assert!(digest && !papers, "the digest, the tables behind osprim papers");
        let only = run.only.expect("the seed suite");
        for p in &report::digest::PRIMITIVES {
            let id = bench::registry::DERIVED.iter().find(|d| d.id == p.want.id).map_or(p.want.id, |d| d.sources()[0]);
            assert!(only.iter().any(|o| o.id == id), "{id}");
        }
        let (_, papers, digest) = parse(&["osprim", "papers", "--run"]);
        assert!(papers && digest, "papers --run: the tables, then the digest");
        assert!(!parse(&["osprim", "run", "syscall"]).2, "osprim run has no digest");
    }

    #[test]
    fn value_parsers_reject_nonsense() {
        assert_eq!(parse_cpu_pair("0,1"), Ok([0, 1]));
        assert!(parse_cpu_pair("1,1").is_err());
        assert!(parse_cpu_pair("x").is_err());
        assert!(parse_fraction("0").is_err());
        assert!(parse_fraction("0.02").is_ok());
        assert!(parse_budget("-1").is_err());
        assert_eq!(parse_sizes("4K,0,64,1m,64"), Ok(Sizes(vec![0, 64, 4096, 1 << 20])));
        assert!(parse_sizes("x").is_err());
        assert!(parse_sizes("1,").is_err());
        assert!(parse_sizes("65M").is_err());
    }
}
