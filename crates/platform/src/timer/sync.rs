//! Are the cycle counters of two CPUs synchronised? A stamped ping-pong bounds their offset.
//!
//! Thread A (on CPU `a`) reads its counter (`t1`) and raises a flag; thread B (on CPU `b`)
//! sees it, reads its own counter (`t2`) and answers; A sees the answer and reads `t3`. If B's
//! counter runs `δ` ticks ahead of A's, causality gives `t1 + δ ≤ t2 ≤ t3 + δ`, so
//! `t2 − t3 ≤ δ ≤ t2 − t1`. The tightest bounds over many rounds are kept. The counters are
//! consistent when the interval contains 0; its width is the uncertainty of any one-way time
//! measured between the two CPUs.
//!
//! Both threads spin (no system call), so on a virtual machine both vCPUs stay awake.

use super::Timer;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use sys::cpu;

/// The bound on B's counter minus A's, in ticks.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OffsetBound {
    /// CPU of A.
    pub cpu_a: usize,
    /// CPU of B.
    pub cpu_b: usize,
    /// Lowest possible offset (ticks).
    pub low_ticks: i64,
    /// Highest possible offset (ticks).
    pub high_ticks: i64,
    /// Rounds that completed.
    pub rounds: u64,
}

impl OffsetBound {
    /// Whether zero offset is consistent with every round: the counters agree within the bound.
    pub fn synchronised(&self) -> bool {
        self.rounds > 0 && self.low_ticks <= 0 && 0 <= self.high_ticks
    }

    /// The largest offset the rounds allow, in ticks (the uncertainty of a one-way time).
    pub fn max_abs_ticks(&self) -> i64 {
        self.low_ticks.abs().max(self.high_ticks.abs())
    }

    /// Folds one round's stamps in.
    pub fn add_round(&mut self, t1: u64, t2: u64, t3: u64) {
        let low = t2 as i64 - t3 as i64;
        let high = t2 as i64 - t1 as i64;
        if self.rounds == 0 {
            (self.low_ticks, self.high_ticks) = (low, high);
        } else {
            self.low_ticks = self.low_ticks.max(low);
            self.high_ticks = self.high_ticks.min(high);
        }
        self.rounds += 1;
    }
}

/// Why the bound could not be measured.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SyncError {
    /// A thread could not be pinned.
    #[error("cannot pin a thread to CPU {0}")]
    Pin(usize),
    /// The other CPU never answered.
    #[error("CPU {0} did not answer the stamped ping-pong within {1:?}")]
    NoAnswer(usize, Duration),
    /// The responder thread could not be created (e.g. a process limit).
    #[error("cannot start a thread for CPU {0}: {1}")]
    Thread(usize, String),
}

/// Measures the offset bound of CPU `b`'s counter relative to CPU `a`'s over up to `rounds`
/// rounds and at most `limit` of wall time. The calling thread's affinity is restored.
pub fn measure(timer: Timer, a: usize, b: usize, rounds: u64, limit: Duration) -> Result<OffsetBound, SyncError> {
    let before = cpu::allowed_cpus();
    let result = run(timer, a, b, rounds, limit);
    let _ = cpu::set_affinity(&before);
    result
}

fn run(timer: Timer, a: usize, b: usize, rounds: u64, limit: Duration) -> Result<OffsetBound, SyncError> {
    cpu::pin_current_thread(a).map_err(|_| SyncError::Pin(a))?;
    // ping: A's round number (odd while waiting); pong: B's echo; stamp: B's t2.
    let shared = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    const STOP: u64 = u64::MAX;
    let s = shared.clone();
    let responder = std::thread::Builder::new().name("osprim-tsc-sync".into()).spawn(move || -> bool {
        if cpu::pin_current_thread(b).is_err() {
            s[3].store(1, Ordering::Release);
            return false;
        }
        s[3].store(2, Ordering::Release);
        let mut seen = 0;
        loop {
            let v = s[0].load(Ordering::Acquire);
            if v == STOP {
                return true;
            }
            if v != seen {
                let t2 = timer.start();
                s[2].store(t2, Ordering::Relaxed);
                s[1].store(v, Ordering::Release);
                seen = v;
            }
            std::hint::spin_loop();
        }
    });
    let responder = responder.map_err(|e| SyncError::Thread(b, e.to_string()))?;
    let mut bound = OffsetBound { cpu_a: a, cpu_b: b, low_ticks: 0, high_ticks: 0, rounds: 0 };
    let began = Instant::now();
    while shared[3].load(Ordering::Acquire) == 0 && began.elapsed() < limit {
        std::hint::spin_loop();
    }
    let pinned = shared[3].load(Ordering::Acquire) == 2;
    let mut answered = pinned;
    for round in 1..=rounds {
        if !pinned || began.elapsed() >= limit {
            break;
        }
        let t1 = timer.start();
        shared[0].store(round, Ordering::Release);
        answered = false;
        while began.elapsed() < limit {
            if shared[1].load(Ordering::Acquire) == round {
                answered = true;
                break;
            }
            std::hint::spin_loop();
        }
        let t3 = timer.stop();
        if !answered {
            break;
        }
        bound.add_round(t1, shared[2].load(Ordering::Relaxed), t3);
    }
    shared[0].store(STOP, Ordering::Release);
    let _ = responder.join();
    if !pinned {
        return Err(SyncError::Pin(b));
    }
    if bound.rounds == 0 || !answered && bound.rounds < 10 {
        return Err(SyncError::NoAnswer(b, limit));
    }
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_tighten_and_detect_offsets() {
        let mut b = OffsetBound { cpu_a: 0, cpu_b: 1, low_ticks: 0, high_ticks: 0, rounds: 0 };
        // B's counter is 1,000 ahead; one-way trips of 30 and 50 ticks.
        b.add_round(100, 100 + 30 + 1000, 100 + 80);
        b.add_round(500, 500 + 20 + 1000, 500 + 45);
        assert!(b.low_ticks <= 1000 && 1000 <= b.high_ticks);
        assert!(!b.synchronised());
        let mut s = OffsetBound { cpu_a: 0, cpu_b: 1, low_ticks: 0, high_ticks: 0, rounds: 0 };
        s.add_round(100, 130, 180);
        assert!(s.synchronised());
        assert_eq!((s.low_ticks, s.high_ticks), (-50, 30));
        assert_eq!(s.max_abs_ticks(), 50);
    }

    #[test]
    fn measures_between_two_allowed_cpus() {
        let cpus = cpu::allowed_cpus();
        let (timer, _) = crate::timer::detect();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        let bound = measure(timer, a, b, 200, Duration::from_millis(500)).unwrap();
        assert!(bound.rounds > 0);
        assert!(bound.low_ticks <= bound.high_ticks, "{bound:?}");
    }
}
