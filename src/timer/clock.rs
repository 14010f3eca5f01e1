//! `CLOCK_MONOTONIC_RAW` in nanoseconds: the fallback timer when the cycle counter cannot be
//! trusted, and the reference the cycle counter is calibrated against.

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
