//! What a run and its worker say to each other.
//!
//! The run writes one [`Request`] (JSON) to the worker's stdin and closes it. The worker
//! answers on its stdout with JSON Lines, one [`Report`] per line, each written whole as soon
//! as it is known: `ready` once its timer is built, then `begin` and `outcome` for each visit
//! in order (an outcome serialised as the journal keeps it, [`journal::Outcome`]),
//! `stopped` if it ends before its last visit (Ctrl-C, memory short), else `reference` (the
//! machine's level timed after the last visit). It then exits 0. Protocol 2 added the
//! reference readings (`ready.reference`, `reference`).

use bench::sampler::SamplerConfig;
use bench::{Measured, NotMeasured};
use model::{Params, TimerInfo};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use store::journal;

/// The version of this protocol (a worker from another build refuses a request it cannot read).
pub const PROTOCOL: u32 = 2;

/// One round for a worker to measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// The round (from 0).
    pub round: usize,
    /// The CPU to pin the measuring thread to.
    pub cpu: usize,
    /// `--cpus A,B`, for cross-CPU benchmarks.
    pub cpu_pair: Option<[usize; 2]>,
    /// CPUs the run may use.
    pub allowed_cpus: Vec<usize>,
    /// `--sizes`/`--sweep`.
    pub sizes: Option<Vec<usize>>,
    /// The run's scratch directory (the worker makes none of its own).
    pub scratch: PathBuf,
    /// Whether the machine runs under a hypervisor.
    pub virtualized: bool,
    /// The run's clock: kind and frequency (the worker measures its own overhead).
    pub timer: TimerInfo,
    /// What to measure, in order.
    pub visits: Vec<Visit>,
}

/// One benchmark under one parameter set, in one round (reports name it by its place in
/// [`Request::visits`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Visit {
    /// Benchmark id.
    pub id: String,
    /// Its parameters.
    pub params: Params,
    /// The sampler settings of this visit: the round's, with the batch the first round chose
    /// and the spread between the rounds so far (`SamplerConfig::batch`,
    /// `SamplerConfig::spread_between_rounds_rel`).
    pub cfg: SamplerConfig,
}

/// One line of a worker's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Report {
    /// The worker is set up and about to measure.
    Ready(Ready),
    /// It starts measuring visit `visit` (an index into [`Request::visits`]).
    Begin {
        /// The visit.
        visit: usize,
    },
    /// What visit `visit` gave.
    Outcome {
        /// The visit.
        visit: usize,
        /// Steal time of the measuring CPU while it ran, `USER_HZ` ticks.
        steal_jiffies: u64,
        /// How long it took, set-up included, s.
        elapsed_s: f64,
        /// The samples, or why there are none.
        outcome: journal::Outcome,
    },
    /// The machine's level timed after its last visit, just before it exits.
    Reference {
        /// The reading.
        end: model::MachineLevel,
    },
    /// It stops before its last visit.
    Stopped {
        /// Memory ran short (else a signal stopped it).
        memory_short: bool,
    },
}

/// What a worker says of itself once set up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    /// Its process id.
    pub pid: u32,
    /// Bytes of the layout pad in its environment at start.
    pub env_pad_bytes: usize,
    /// Bytes of the block it leaked first.
    pub heap_offset_bytes: usize,
    /// Small blocks it leaked after.
    pub heap_blocks: usize,
    /// Whether it still runs with `ADDR_NO_RANDOMIZE`.
    pub randomization_off: bool,
    /// The median timer overhead it subtracts, ticks.
    pub overhead_ticks: f64,
    /// The same, ns.
    pub overhead_ns: f64,
    /// Both region shapes' overheads, calibrated in the worker through the sampler's path.
    #[serde(default)]
    pub overhead: Option<model::RoundOverhead>,
    /// The machine's level timed after the warm-up ([`platform::reference`]).
    #[serde(default)]
    pub reference: Option<model::MachineLevel>,
}

/// `outcome` as the journal keeps it.
pub fn to_wire(outcome: Result<Measured, NotMeasured>) -> journal::Outcome {
    match outcome {
        Ok(m) => journal::Outcome::Measured(Box::new(m)),
        Err(n) => journal::Outcome::NotMeasured(n),
    }
}

/// The outcome a report carries.
pub fn from_wire(outcome: journal::Outcome) -> Result<Measured, NotMeasured> {
    match outcome {
        journal::Outcome::Measured(m) => Ok(*m),
        journal::Outcome::NotMeasured(n) => Err(n),
    }
}

/// A report as one line (with its `\n`).
pub fn encode(report: &Report) -> Vec<u8> {
    // A report holds no map with non-string keys, so serialising cannot fail; should it, the
    // line says so and the run reads it as unreadable.
    let mut line =
        serde_json::to_vec(report).unwrap_or_else(|e| format!("{{\"unserialisable\":\"{e}\"}}").into_bytes());
    line.push(b'\n');
    line
}

/// A report from one line.
pub fn decode(line: &[u8]) -> Result<Report, serde_json::Error> {
    serde_json::from_slice(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::sampler::Samples;

    fn request() -> Request {
        let mut params = Params::new();
        params.insert("bytes".into(), serde_json::json!(4096));
        Request {
            protocol: PROTOCOL,
            round: 2,
            cpu: 1,
            cpu_pair: Some([0, 1]),
            allowed_cpus: vec![0, 1],
            sizes: Some(vec![64, 4096]),
            scratch: PathBuf::from("/tmp/osprim-1-x"),
            virtualized: true,
            timer: platform::timer::TimerInfo::for_tests(),
            visits: vec![Visit {
                id: "ipc.pipe".into(),
                params,
                cfg: SamplerConfig { batch: Some(64), spread_between_rounds_rel: 0.03, ..SamplerConfig::quick() }
                    .for_round(2),
            }],
        }
    }

    #[test]
    fn a_request_round_trips() {
        let r = request();
        let back: Request = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn outcomes_round_trip_through_lines() {
        let samples = Samples {
            per_op_ns: vec![10.5, 11.25, 9.75],
            iterations_per_sample: 32,
            batch_check: vec![[10.0, 10.5]],
            ..Samples::default()
        };
        let measured = Measured::new(samples, Vec::new()).note("a note");
        let lines = [
            encode(&Report::Ready(Ready { pid: 42, env_pad_bytes: 100, overhead_ticks: 39.0, ..Ready::default() })),
            encode(&Report::Begin { visit: 0 }),
            encode(&Report::Outcome { visit: 0, steal_jiffies: 3, elapsed_s: 0.25, outcome: to_wire(Ok(measured)) }),
            encode(&Report::Outcome {
                visit: 1,
                steal_jiffies: 0,
                elapsed_s: 0.0,
                outcome: to_wire(Err(NotMeasured::Failed("boom".into()))),
            }),
            encode(&Report::Stopped { memory_short: true }),
        ];
        for l in &lines {
            assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1, "one line each");
        }
        let back: Vec<Report> = lines.iter().map(|l| decode(l).unwrap()).collect();
        assert!(matches!(&back[0], Report::Ready(r) if r.pid == 42 && r.env_pad_bytes == 100));
        assert!(matches!(back[1], Report::Begin { visit: 0 }));
        match &back[2] {
            Report::Outcome { visit: 0, steal_jiffies: 3, outcome: journal::Outcome::Measured(m), .. } => {
                assert_eq!(m.samples.per_op_ns, [10.5, 11.25, 9.75]);
                assert_eq!(m.samples.iterations_per_sample, 32);
                assert_eq!(m.notes, ["a note"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&back[3], Report::Outcome { outcome: journal::Outcome::NotMeasured(NotMeasured::Failed(w)), .. } if w == "boom")
        );
        assert!(matches!(back[4], Report::Stopped { memory_short: true }));
        assert!(decode(b"{\"kind\":\"outc").is_err());
    }
}
