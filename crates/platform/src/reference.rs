//! The machine's own level: a fixed reference timed at the start and the end of each
//! execution, so that `compare` can say how far the machine itself moved between two runs
//! (a cloud VM's level moves 10–30 % from one process and one second to the next).
//!
//! **Timing model.** Two loops, each timed whole with `Instant` (the vDSO clock) around a
//! fixed number of iterations, [`REPEATS`] times; the figure is the median ns per iteration:
//! - a user-space loop of [`USER_ITERATIONS`] dependent multiply-add-shift steps (each waits
//!   for the one before, so it runs at the core's latency, not its width), its state through
//!   `black_box`;
//! - a null system call loop of [`SYSCALL_ITERATIONS`] raw `getppid` calls
//!   ([`sys::raw::getppid`], the bare instruction: no libc wrapper, no caching).
//!
//! About 3–5 ms in all on a machine whose null call costs 100–200 ns. Nothing is subtracted:
//! the reference is compared only with itself (new run against base run).

use model::MachineLevel;
use std::hint::black_box;
use std::time::Instant;

/// Iterations of the user-space loop per repetition.
pub const USER_ITERATIONS: u64 = 200_000;
/// Null system calls per repetition.
pub const SYSCALL_ITERATIONS: u64 = 4_000;
/// Repetitions of each loop; the median is kept.
pub const REPEATS: usize = 5;

#[inline(never)]
fn user_loop(n: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        x ^= x >> 29;
    }
    black_box(x)
}

#[inline(never)]
fn syscall_loop(n: u64) -> i64 {
    let mut acc = 0i64;
    for _ in 0..n {
        acc = acc.wrapping_add(sys::raw::getppid());
    }
    black_box(acc)
}

/// ns per iteration of `f(n)`, the median of [`REPEATS`] repetitions.
fn per_iteration(n: u64, f: impl Fn(u64)) -> f64 {
    let mut t: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let began = Instant::now();
            f(black_box(n));
            began.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Times the reference now (module doc).
pub fn measure() -> MachineLevel {
    MachineLevel {
        user_loop_ns: per_iteration(USER_ITERATIONS, |n| {
            user_loop(n);
        }),
        null_syscall_ns: per_iteration(SYSCALL_ITERATIONS, |n| {
            syscall_loop(n);
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reference_gives_positive_finite_costs() {
        let l = super::measure();
        assert!(l.user_loop_ns.is_finite() && l.user_loop_ns > 0.0, "{l:?}");
        assert!(l.null_syscall_ns.is_finite() && l.null_syscall_ns > 0.0, "{l:?}");
    }
}
