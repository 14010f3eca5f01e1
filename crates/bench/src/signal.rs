//! `signal.install`: install a signal handler — one `sigaction`.
//!
//! Seed row: RightSpeed Table 3 "install message hook".
//!
//! The signal is `SIGURG`, which osprim does not otherwise use: the signals that end a run like
//! Ctrl-C (`SIGUSR1` among them, see `interrupt`) keep their handler while this runs.
//! **Timing model** ([`Ctx::iter_regions`]): each operation is one `sigaction(SIGURG, hook,
//! NULL)` timed on its own with the run's timer (one timer overhead subtracted per
//! operation). Two counting handlers are installed in turn, so every timed call replaces the
//! other handler: it really changes the disposition. The actions are built before the clock
//! starts; the query after each install, and putting back the disposition SIGURG had at the
//! start, are untimed.
//! **Validation:** after every timed call, a query (`sigaction` with no new action) shows the
//! handler just installed in place; afterwards a raised SIGURG reaches the installed handler.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use platform::timer::Timer;
use std::hint::black_box;
use sys::sighook::{self, Hook};

/// The signal whose handler is installed.
const SIG: libc::c_int = libc::SIGURG;

/// One `sigaction` install.
pub struct Install;

/// One timed install of `hook`; its ticks, and whether the call succeeded.
#[inline(never)]
fn timed_install(timer: &Timer, hook: &Hook) -> (u64, bool) {
    let t0 = timer.start();
    let ok = sighook::install(SIG, black_box(hook));
    let t1 = timer.stop();
    (t1.wrapping_sub(t0), ok)
}

impl Benchmark for Install {
    fn id(&self) -> &'static str {
        "signal.install"
    }
    fn about(&self) -> &'static str {
        "install a signal handler: one sigaction, replacing another handler"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let saved = sighook::save(SIG).map_err(|e| NotMeasured::Failed(format!("sigaction query: {e}")))?;
        let hooks = [Hook::new(Hook::A), Hook::new(Hook::B)];
        let timer = ctx.timer;
        let (mut calls, mut wrong, mut next) = (0u64, 0u64, 0usize);
        let samples = {
            let c = &*ctx;
            c.iter_regions(|n| {
                let mut ticks = 0;
                for _ in 0..n {
                    let hook = &hooks[next];
                    next ^= 1;
                    let (t, ok) = timed_install(&timer, hook);
                    ticks += t;
                    calls += 1;
                    if !ok || sighook::installed(SIG) != Some(hook.address()) {
                        wrong += 1;
                    }
                }
                Timed::regions(ticks, n)
            })
        };
        // Install once more, raise, and see the handler run.
        let hook = &hooks[next];
        let before = hook.delivered();
        let delivered = sighook::install(SIG, hook) && nix::sys::signal::raise(nix::sys::signal::SIGURG).is_ok();
        let after = hook.delivered();
        drop(saved);
        let checks = vec![
            Check::all_ok("after each install the new handler is in place (sigaction query)", wrong, calls),
            Check::new(
                "a raised SIGURG reaches the installed handler",
                "1 delivery",
                format!("{} deliveries", after - before),
                delivered && after == before + 1,
            ),
        ];
        Ok(Measured::new(samples, checks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_install_takes_effect_and_the_original_returns() {
        let before = sighook::installed(SIG);
        crate::testing::with_ctx(0.05, |ctx| {
            let m = Install.run(ctx, &Params::new()).unwrap();
            for c in &m.checks {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
        });
        assert_eq!(sighook::installed(SIG), before);
    }
}
