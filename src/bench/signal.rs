//! `signal.install`: install a signal handler and restore the previous one.
//!
//! Seed row: RightSpeed "install message hook".
//!
//! **Timing model:** the sampler's loop around two `sigaction` calls on SIGUSR1 (install the
//! counting handler, restore the original); the actions are built before the clock starts.
//! **Validation:** every restore hands back the handler just installed, and afterwards a raised
//! SIGUSR1 reaches the installed handler.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sys::signal as sig;
use nix::sys::signal::{Signal, raise};

/// `sigaction` install + restore.
pub struct Install;

impl Benchmark for Install {
    fn id(&self) -> &'static str {
        "signal.install"
    }
    fn about(&self) -> &'static str {
        "install a signal handler and restore the previous one (2 × sigaction)"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let original =
            sig::current_action(Signal::SIGUSR1).map_err(|e| NotMeasured::Failed(format!("sigaction: {e}")))?;
        let action = sig::counting_action();
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if !sig::install_and_restore(Signal::SIGUSR1, &action, &original) {
                wrong += 1;
            }
        });
        // Install once more, raise, and see the handler run.
        let before = sig::delivered();
        let delivered = sig::with_action(Signal::SIGUSR1, &action, || raise(Signal::SIGUSR1).is_ok());
        let after = sig::delivered();
        let checks = vec![
            Check::all_ok("each install took effect", wrong, calls),
            Check::new(
                "a raised SIGUSR1 reaches the installed handler",
                "1 delivery",
                format!("{} deliveries", after - before),
                delivered && after == before + 1,
            ),
        ];
        Ok(Measured::new(samples, checks))
    }
}
