//! The kernel's own account of how long a task ran, and from it whether a timed block was
//! disturbed by a third party.
//!
//! The scheduler charges every nanosecond a CPU spends to the task it runs (its
//! `sum_exec_runtime`), read through the CPU-time clocks: `CLOCK_THREAD_CPUTIME_ID` for the
//! calling thread, and the clocks `clock_getcpuclockid(3)`/`pthread_getcpuclockid(3)` name for
//! another process or another thread of this one (their stable encoding: `~id << 3`, 2 for the
//! scheduler's clock, +4 for a thread's; see `include/linux/posix-timers.h`). A block timed on
//! one CPU whose tasks are all known (a ping-pong's two ends; a helper reading alone) has a
//! wall time equal to the CPU time those tasks were charged within it, up to the clock reads
//! around it. Whatever is missing ran something else: another task, or — with
//! `CONFIG_PARAVIRT_TIME_ACCOUNTING`, which leaves time stolen by the hypervisor out of every
//! task's account — the hypervisor (and, with `CONFIG_IRQ_TIME_ACCOUNTING`, interrupts). Such a
//! block is **disturbed** ([`disturbed`]) and a paired benchmark drops its pair, saying how
//! many (seed map, revision 4: "samples disturbed by a third party are dropped by the kernel's
//! account").

use nix::time::{ClockId, clock_gettime};

/// A task whose CPU time can be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// The calling thread.
    Me,
    /// A thread of this process, by its id.
    Thread(i32),
    /// A whole process, by its id (all its threads).
    Process(i32),
}

impl Task {
    /// The CPU-time clock of this task (the scheduler's account).
    pub fn clock(self) -> ClockId {
        const SCHED: i32 = 2;
        const PER_THREAD: i32 = 4;
        let encode = |id: i32, kind: i32| ClockId::from_raw(((!(id as u32)) << 3) as i32 | kind);
        match self {
            Task::Me => ClockId::CLOCK_THREAD_CPUTIME_ID,
            Task::Thread(tid) => encode(tid, SCHED | PER_THREAD),
            Task::Process(pid) => encode(pid, SCHED),
        }
    }

    /// The CPU time the kernel has charged to this task so far, ns; `None` if it cannot be
    /// read (the task is gone, or not one this process may read).
    pub fn cpu_ns(self) -> Option<u64> {
        let t = clock_gettime(self.clock()).ok()?;
        Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
    }
}

/// The CPU time of several tasks, summed (`None` if any cannot be read).
pub fn sum_ns(tasks: &[Task]) -> Option<u64> {
    tasks.iter().map(|t| t.cpu_ns()).sum()
}

/// A block is disturbed when the time its tasks were not charged for exceeds this, ns, plus
/// [`DISTURBED_REL`] of the block: a clean block's tasks are charged its whole wall time (a
/// little more: the clock reads around it), so anything beyond a few microseconds ran
/// something else.
pub const DISTURBED_NS: f64 = 2_000.0;
/// The share of a block's wall time allowed off its tasks' account besides [`DISTURBED_NS`]
/// (the counter's conversion to ns is known to about this).
pub const DISTURBED_REL: f64 = 0.01;

/// Whether a block of `wall_ns` during which its tasks were charged `cpu_ns` was disturbed.
pub fn disturbed(wall_ns: f64, cpu_ns: f64) -> bool {
    off_cpu_ns(wall_ns, cpu_ns) > DISTURBED_NS + DISTURBED_REL * wall_ns
}

/// The time of a block its tasks were not charged for, ns (negative: none; the clock reads
/// around the block are charged too).
pub fn off_cpu_ns(wall_ns: f64, cpu_ns: f64) -> f64 {
    wall_ns - cpu_ns
}

/// The pairs `(a[i], b[i])` of per-operation samples whose blocks were not `disturbed[i]` (a
/// pair without an account, beyond `disturbed`'s end, is kept), as the paired differences
/// `a − b`: returns the differences, the kept `a` and `b`, and how many pairs were dropped.
pub fn clean_pairs(a: &[f64], b: &[f64], disturbed: &[bool]) -> (Vec<f64>, Vec<f64>, Vec<f64>, usize) {
    let (mut d, mut ka, mut kb, mut dropped) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        if disturbed.get(i).copied().unwrap_or(false) {
            dropped += 1;
            continue;
        }
        d.push(x - y);
        ka.push(x);
        kb.push(y);
    }
    (d, ka, kb, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_and_process_are_charged_for_work() {
        let before = Task::Me.cpu_ns().expect("own thread clock");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(Task::Me.cpu_ns().expect("own thread clock") > before);
        let me = sys::process::gettid();
        assert!(Task::Thread(me).cpu_ns().is_some(), "a thread of this process by id");
        assert!(Task::Process(std::process::id() as i32).cpu_ns().is_some());
        // Above the kernel's PID_MAX_LIMIT (2^22): no such thread. (An id of 2^28 or more would
        // not encode as a CPU-time clock at all: no task has one.)
        assert_eq!(Task::Thread(4_194_305).cpu_ns(), None, "no such thread");
    }

    #[test]
    fn a_block_is_disturbed_only_beyond_its_tolerance() {
        assert!(!disturbed(100_000.0, 100_500.0), "clock reads charged beyond the block");
        assert!(!disturbed(100_000.0, 97_500.0), "2.5 µs off: within 2 µs + 1 %");
        assert!(disturbed(100_000.0, 90_000.0), "10 µs ran something else");
        assert!(disturbed(1_000_000.0, 900_000.0));
    }

    #[test]
    fn disturbed_pairs_leave_the_differences() {
        let (d, a, b, dropped) = clean_pairs(&[10.0, 500.0, 12.0], &[7.0, 8.0, 600.0], &[false, true, true]);
        assert_eq!((d, a, b, dropped), (vec![3.0], vec![10.0], vec![7.0], 2));
        let (d, _, _, dropped) = clean_pairs(&[10.0, 11.0], &[7.0, 8.0], &[]);
        assert_eq!((d, dropped), (vec![3.0, 3.0], 0), "no account: every pair kept");
    }
}
