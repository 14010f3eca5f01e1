//! Ctrl-C: the first SIGINT (or SIGTERM) sets a flag the sampler checks between samples, so
//! the run stops after the current sample, keeps what it measured and cleans up; a second one
//! exits at once with status 130.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Installs the handlers and returns the flag they set.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Order matters: the conditional exit sees the flag before this signal sets it.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}
