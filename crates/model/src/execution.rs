//! The record of one execution: the worker process that measured one round of a run (see
//! `execution` for why each round measures in a process of its own), with the memory layout
//! it was given on purpose and the timer overhead it subtracted.

use serde::{Deserialize, Serialize};

/// One worker process of a run (or, when no worker could be started, the round measured in
/// osprim's own process: `in_process`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// The round it measured (from 0).
    pub round: usize,
    /// Its process id.
    pub pid: u32,
    /// True when the round was measured in osprim's own process (no worker could be
    /// started; `note` says why): no layout was varied.
    #[serde(default)]
    pub in_process: bool,
    /// Bytes of the padding environment variable it was started with (shifts the initial
    /// stack).
    pub env_pad_bytes: usize,
    /// Bytes of the block it allocated and leaked before anything else (shifts the heap).
    pub heap_offset_bytes: usize,
    /// Small blocks it allocated and leaked after that one.
    pub heap_blocks: usize,
    /// `/proc/sys/kernel/randomize_va_space` (0 off, 1 stack/mmap/vDSO, 2 also the heap);
    /// `null` when unreadable.
    pub randomize_va_space: Option<u8>,
    /// Whether osprim ran with address randomization turned off for itself
    /// (`ADDR_NO_RANDOMIZE`, e.g. under `setarch -R` or gdb) and turned it back on for the
    /// worker.
    pub aslr_restored: bool,
    /// Median timer overhead the worker measured and subtracted from every sample, ticks;
    /// `null` when it never got that far.
    pub overhead_ticks: Option<f64>,
    /// The same, ns.
    pub overhead_ns: Option<f64>,
    /// The timer overheads it calibrated through the sampler's path and subtracted (also in
    /// `timer.overhead_by_round`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<super::RoundOverhead>,
    /// Outcomes (one per benchmark and parameter set) it reported.
    pub outcomes: usize,
    /// How it ended: `exit 0`, `killed by signal 9 (SIGKILL)`, ….
    pub ended: String,
    /// The machine's own level, timed on a fixed reference at the execution's start (after
    /// its warm-up) and at its end: how fast this process found the machine, whatever the
    /// benchmarks did (`compare` reads how far it moved between two runs). Absent in files of
    /// builds before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
    /// A remark (why it was killed, why no worker could be started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The machine's level at the start and end of one execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// Timed after the warm-up, before the first benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<MachineLevel>,
    /// Timed after the last benchmark (absent when the execution did not end in good order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<MachineLevel>,
}

impl Reference {
    /// Each kind's level over the start and end readings (their geometric mean; the one there
    /// is when only one is).
    pub fn level(&self) -> Option<MachineLevel> {
        match (self.start, self.end) {
            (Some(a), Some(b)) => Some(MachineLevel {
                user_loop_ns: (a.user_loop_ns * b.user_loop_ns).sqrt(),
                null_syscall_ns: (a.null_syscall_ns * b.null_syscall_ns).sqrt(),
            }),
            (a, b) => a.or(b),
        }
    }
}

/// One reading of the machine's level: the cost of a fixed user-space loop and of a null
/// system call, each the median of a few short repetitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLevel {
    /// One iteration of a dependent arithmetic loop (a multiply-add and a shift), ns.
    pub user_loop_ns: f64,
    /// One raw `getppid` system call, ns.
    pub null_syscall_ns: f64,
}
