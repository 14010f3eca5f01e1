//! Go!'s error test: random entry-point calls, and random system calls in a sandbox.

use crate::{Hooks, Settings};
use model::stability::StabilityRun;

/// Runs the error test.
pub fn run(_settings: &Settings, _hooks: &mut Hooks) -> anyhow::Result<StabilityRun> {
    anyhow::bail!("the error test is not built yet")
}
