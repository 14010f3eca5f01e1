//! `harness.empty`: the empty operation, to show the harness subtracts its own cost.
//!
//! **Timing model:** the sampler's loop around a closure that does nothing; what remains is
//! the loop's own increment and branch (a fraction of a nanosecond).
//! **Validation:** the median must be within ±1 ns of zero, or timer overhead was not
//! subtracted correctly.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params, quick_median};

/// The empty operation.
pub struct Empty;

impl Benchmark for Empty {
    fn id(&self) -> &'static str {
        "harness.empty"
    }
    fn about(&self) -> &'static str {
        "empty operation: the harness's own residual cost (should be ~0)"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let samples = ctx.iter(|| ());
        let median = quick_median(&samples);
        let check = Check::new(
            "residual after subtracting timer overhead",
            "|median| <= 1 ns",
            format!("{median:.2} ns"),
            median.abs() <= 1.0,
        );
        let note = format!(
            "timer overhead subtracted from each sample: {:.1} ns ({:.0} ticks)",
            ctx.timer_info.overhead_ns, ctx.timer_info.overhead_ticks
        );
        Ok(Measured::new(samples, vec![check]).note(note))
    }
}
