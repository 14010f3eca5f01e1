//! Go!'s stability tests on today's Linux (seed 003, "Stability"): [`stress`] drives the
//! domain library with random domains, threads and calls of every kind under a 1 kHz timer,
//! and [`errortest`] calls its entry points, and the kernel's system calls in a sandbox, with
//! random arguments. Each returns a [`StabilityRun`]: how long it ran without a failure, what
//! it did, the invariants it checked, and how the process's resources trended.
//!
//! Both are deterministic in their seed: `--seed S` replays a failure's choices (threads and
//! the timer still interleave as they will).
#![forbid(unsafe_code)]

pub mod errortest;
pub mod stress;
pub mod trend;

use model::stability::StabilityRun;
use std::time::Duration;

/// What a stability run is asked to do.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long to run.
    pub duration: Duration,
    /// The seed of every random choice.
    pub seed: u64,
}

/// Where a run is at, for a progress line.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Seconds since the start.
    pub elapsed_s: f64,
    /// Operations done so far.
    pub operations: u64,
}

/// What the caller lends a run: a stop flag to poll (Ctrl-C) and a progress callback (called
/// about once a second).
pub struct Hooks<'a> {
    /// True once the run must stop (it then returns `Outcome::Interrupted`).
    pub interrupted: &'a (dyn Fn() -> bool + Sync),
    /// Told where the run is, about once a second.
    pub progress: &'a mut dyn FnMut(&Progress),
}

/// The command line that replays a run: the same test, duration and seed.
pub fn replay_command(test: model::stability::StabilityTest, settings: &Settings) -> String {
    format!("osprim {} --duration {}s --seed {}", test.name(), settings.duration.as_secs_f64(), settings.seed)
}

/// A seed from the clock and the process id, for a run not given one (it is printed and
/// saved, so the run can be replayed).
pub fn new_seed(started: std::time::SystemTime) -> u64 {
    let nanos = started.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    // splitmix64's finaliser: nearby clocks give unrelated seeds.
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs `test`.
pub fn run(
    test: model::stability::StabilityTest,
    settings: &Settings,
    hooks: &mut Hooks,
) -> anyhow::Result<StabilityRun> {
    match test {
        model::stability::StabilityTest::Stress => stress::run(settings, hooks),
        model::stability::StabilityTest::ErrorTest => errortest::run(settings, hooks),
    }
}
