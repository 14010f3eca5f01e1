//! The command line (clap only): subcommands, flags, help with examples, and their
//! translation into the validated configuration of [`crate::config`]. Nothing below this
//! module knows clap: [`Cli::into_command`] is the one hand-over.

use crate::config::{self, Command as Cmd, DEFAULT_SWEEP, Output, RunConfig, SeedsSource, TAIL_SAMPLES};
use crate::model::Method;
use crate::sampler::SamplerConfig;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// osprim measures what operating-system primitives cost on this machine, with confidence
/// intervals and self-checks, beside the figures of five classic systems papers.
#[derive(Parser, Debug)]
#[command(name = "osprim", version, about, long_about = None, after_help = "\
Examples:
  osprim                      run the default suite, then show the seed tables
  osprim run --quick syscall  the syscall family, about 0.2 s per benchmark
  osprim list                 every benchmark and whether it can run here
  osprim env                  what this machine is
  osprim seeds osprim-results/2026-11-22T09-00-00Z.json")]
pub struct Cli {
    /// What to do (default: run the default suite, then show the seed tables).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure benchmarks and print a table; save a JSON result file.
    #[command(after_help = "\
Examples:
  osprim run                          every benchmark, about 1 s each
  osprim run --quick syscall id       two families, quickly
  osprim run 'fs.*' --format json     JSON on stdout
  osprim run syscall.null --method seed --cpu 1
  osprim run --output today.json --thorough")]
    Run(RunArgs),
    /// List benchmarks: id, what it measures, the seed rows it answers, whether it can run here.
    #[command(after_help = "Examples:\n  osprim list\n  osprim list syscall")]
    List {
        /// Only ids matching this pattern (family prefix, substring, or glob with *).
        pattern: Option<String>,
    },
    /// Describe this machine (CPU, kernel, mitigations, virtualisation, timer…).
    #[command(after_help = "Examples:\n  osprim env\n  osprim env --format json")]
    Env {
        /// Output format.
        #[arg(long, value_enum, default_value_t = EnvFormatArg::Text)]
        format: EnvFormatArg,
    },
    /// Show the five seed papers' tables beside today's figures.
    #[command(after_help = "\
Without RESULT, runs the benchmarks the tables need first (and saves them).

Examples:
  osprim seeds
  osprim seeds osprim-results/2026-11-22T09-00-00Z.json")]
    Seeds {
        /// A result file from `osprim run`.
        result: Option<PathBuf>,
        /// Sampling options used when RESULT is not given.
        #[command(flatten)]
        sampling: SamplingArgs,
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
        /// What goes to stdout.
        #[arg(long, value_enum, default_value_t = FormatArg::Table)]
        format: FormatArg,
    },
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
    /// Rounds over the benchmarks, each a fresh set-up with a share of the budget
    /// (default 5; --quick 3, --thorough 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub rounds: Option<u16>,
    /// Also take single-operation samples and report per-operation p50/p99/p99.9.
    #[arg(long)]
    pub tail: bool,
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
            cfg.rounds = usize::from(r);
        }
        if self.tail {
            cfg.tail_samples = TAIL_SAMPLES;
        }
        cfg
    }

    /// The run these flags describe, of `patterns`, printed as `format`.
    pub fn run_config(&self, patterns: Vec<String>, format: config::Format) -> RunConfig {
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
            format,
        }
    }
}

impl Cli {
    /// The validated command this command line asks for.
    pub fn into_command(self) -> Cmd {
        match self.command {
            None => Cmd::Run {
                run: SamplingArgs::default().run_config(Vec::new(), config::Format::Table),
                with_seeds: true,
            },
            Some(Command::Run(args)) => {
                Cmd::Run { run: args.sampling.run_config(args.patterns, args.format.into()), with_seeds: false }
            }
            Some(Command::List { pattern }) => Cmd::List { pattern },
            Some(Command::Env { format }) => Cmd::Env {
                format: match format {
                    EnvFormatArg::Text => config::Format::Table,
                    EnvFormatArg::Json => config::Format::Json,
                },
            },
            Some(Command::Seeds { result: Some(path), .. }) => Cmd::Seeds(SeedsSource::File(path)),
            Some(Command::Seeds { result: None, sampling }) => {
                Cmd::Seeds(SeedsSource::Run(sampling.run_config(Vec::new(), config::Format::Table)))
            }
            Some(Command::Finish { result, format }) => Cmd::Finish { result, format: format.into() },
        }
    }
}

/// `osprim run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Benchmarks to run: ids, family prefixes (`syscall`), substrings or globs (`fs.*`).
    pub patterns: Vec<String>,
    /// Sampling and placement.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,
}

/// Output formats of `run`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// A readable table.
    Table,
    /// The whole result document.
    Json,
    /// One line per result.
    Csv,
}

impl From<FormatArg> for config::Format {
    fn from(f: FormatArg) -> config::Format {
        match f {
            FormatArg::Table => config::Format::Table,
            FormatArg::Json => config::Format::Json,
            FormatArg::Csv => config::Format::Csv,
        }
    }
}

/// Output formats of `env`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvFormatArg {
    /// key: value lines.
    Text,
    /// JSON.
    Json,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
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
