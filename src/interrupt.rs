//! Interruptions: the first SIGINT, SIGTERM, SIGHUP or SIGQUIT sets a flag the sampler checks
//! between samples, so the run stops after the current sample, keeps what it measured, cleans
//! up and exits with 128 + the signal's number (130, 143, 129, 131); a second one exits at once
//! with that status.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals that end a run the way Ctrl-C does.
pub const SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// The flag the handlers set, and which signal set it.
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl std::ops::Deref for Interrupt {
    type Target = AtomicBool;
    fn deref(&self) -> &AtomicBool {
        &self.flag
    }
}

impl Interrupt {
    /// The exit status for the signal that arrived: 128 + its number (130 for none recorded).
    pub fn exit_code(&self) -> u8 {
        match self.signal.load(Ordering::Relaxed) {
            0 => 130,
            s => u8::try_from(128 + s).unwrap_or(130),
        }
    }
}

/// Installs the handlers and returns the flag they set.
pub fn install() -> std::io::Result<Interrupt> {
    let flag = Arc::new(AtomicBool::new(false));
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in SIGNALS {
        // Order matters: the conditional exit sees the flag before this signal sets it.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&flag))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(Interrupt { flag, signal })
}
