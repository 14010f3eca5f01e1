//! Reading time: the [`Timer`] a run measures with (the cycle counter of [`crate::tsc`], or
//! `CLOCK_MONOTONIC_RAW` in nanoseconds when the counter cannot be trusted), and that clock,
//! the reference the cycle counter is calibrated against. Which clock, at what scale and with
//! what overhead is decided by `platform::timer`.

use crate::tsc;
use model::TimerKind;
use nix::time::{ClockId, clock_gettime};

/// Nanoseconds of `CLOCK_MONOTONIC_RAW` (not slewed by NTP). Linux has had this clock since
/// 2.6.28; should the call ever fail, 0 is returned and the sample is rejected as non-positive.
#[inline(always)]
pub fn monotonic_raw_ns() -> u64 {
    match clock_gettime(ClockId::CLOCK_MONOTONIC_RAW) {
        Ok(ts) => (ts.tv_sec() as u64).wrapping_mul(1_000_000_000) + ts.tv_nsec() as u64,
        Err(_) => 0,
    }
}

/// The timer a run measures with. Cheap to copy; `start`/`stop` are inlined.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    kind: TimerKind,
    ns_per_tick: f64,
    overhead_ticks: f64,
    overhead_mean_ticks: f64,
}

impl Timer {
    /// Reads the clock at the start of a timed region.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        if self.kind == TimerKind::MonotonicRaw {
            return fallback_read();
        }
        tsc::start()
    }

    /// Reads the clock at the end of a timed region.
    #[inline(always)]
    pub fn stop(&self) -> u64 {
        if self.kind == TimerKind::MonotonicRaw {
            return fallback_read();
        }
        tsc::stop()
    }

    /// Converts ticks of this timer to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: f64) -> f64 {
        ticks * self.ns_per_tick
    }

    /// Ticks a back-to-back `start`/`stop` pair costs, median (subtracted from every sample).
    pub fn overhead_ticks(&self) -> f64 {
        self.overhead_ticks
    }

    /// Ticks a back-to-back `start`/`stop` pair costs, mean: what to subtract from samples
    /// whose mean is reported (the pairs' distribution is skewed, so it exceeds the median).
    pub fn overhead_mean_ticks(&self) -> f64 {
        self.overhead_mean_ticks
    }

    /// The clock in use.
    pub fn kind(&self) -> TimerKind {
        self.kind
    }

    /// A timer with the given kind and scale and no overhead (tests and calibration).
    pub fn with_scale(kind: TimerKind, ns_per_tick: f64) -> Timer {
        Timer { kind, ns_per_tick, overhead_ticks: 0.0, overhead_mean_ticks: 0.0 }
    }

    /// The same timer with a given overhead in ticks, as median and mean alike (tests).
    pub fn with_overhead(timer: Timer, overhead_ticks: f64) -> Timer {
        Timer::with_overheads(timer, overhead_ticks, overhead_ticks)
    }

    /// The same timer with a given median and mean overhead in ticks (tests).
    pub fn with_overheads(timer: Timer, median_ticks: f64, mean_ticks: f64) -> Timer {
        Timer { overhead_ticks: median_ticks, overhead_mean_ticks: mean_ticks, ..timer }
    }
}

/// The fallback clock, out of line: the counter's path through [`Timer::start`] and
/// [`Timer::stop`] is then the straight one (a compare and a branch not taken), which is what
/// sits between the two reads of most timed regions whatever the compiler makes of the rest.
#[cold]
#[inline(never)]
fn fallback_read() -> u64 {
    monotonic_raw_ns()
}
