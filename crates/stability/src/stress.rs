//! Go!'s stress test on the domain library.

use crate::{Hooks, Settings};
use model::stability::StabilityRun;

/// Runs the stress test.
pub fn run(_settings: &Settings, _hooks: &mut Hooks) -> anyhow::Result<StabilityRun> {
    anyhow::bail!("the stress test is not built yet")
}
