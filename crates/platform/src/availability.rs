//! How much of the measuring CPU osprim had: a spin probe between rounds.
//!
//! A benchmark's median resists a CPU shared with another task (a batch cut by a time slice is
//! an outlier), so a loaded machine can pass unseen. The probe makes it visible: for a short
//! window the pinned measuring thread reads the clock back to back; every gap between two reads
//! longer than [`GAP_NS`] is time the CPU spent on something else — an interrupt, another task,
//! the hypervisor. The share of the window lost to gaps is the CPU's unavailability.
//!
//! The runner probes before each round and after the last; a row whose rounds lie next to a
//! probe that lost more than [`Probe::BUSY_FRACTION`] is flagged `busy-cpu`. An idle machine
//! loses what its timer interrupts take (under 1 % on bare metal; 4-12 % on this KVM guest,
//! where a tick costs about 27 µs); a CPU shared with one busy task loses about half.

use crate::timer::Timer;
use model::{Flag, Probe, Row};
use std::time::Duration;

/// A gap between two clock reads at least this long is time the CPU did something else (back
/// to back, two reads are tens of nanoseconds apart).
pub const GAP_NS: f64 = 1_000.0;

/// How long each probe spins.
pub const WINDOW: Duration = Duration::from_millis(25);

/// Gaps seen while spinning: the pure part of a probe.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    /// Time spent in gaps, ns.
    pub lost_ns: f64,
    /// How many gaps.
    pub gaps: u64,
    /// The longest, ns.
    pub longest_ns: f64,
}

impl Tally {
    /// Counts the time between two consecutive reads, if it is a gap.
    pub fn add(&mut self, delta_ns: f64) {
        if delta_ns >= GAP_NS {
            self.lost_ns += delta_ns;
            self.gaps += 1;
            self.longest_ns = self.longest_ns.max(delta_ns);
        }
    }
}

/// Spins on the calling thread for `window`, reading `timer` back to back; `before_round` and
/// `cpu` say where the probe stands.
pub fn probe(timer: &Timer, cpu: usize, before_round: u16, window: Duration) -> Probe {
    let window_ticks = (window.as_nanos() as f64 / timer.ticks_to_ns(1.0)).max(1.0) as u64;
    let mut tally = Tally::default();
    let first = timer.start();
    let mut last = first;
    while last.wrapping_sub(first) < window_ticks {
        let now = timer.start();
        tally.add(timer.ticks_to_ns(now.wrapping_sub(last) as f64));
        last = now;
    }
    Probe {
        before_round,
        cpu,
        window_ns: timer.ticks_to_ns(last.wrapping_sub(first) as f64),
        lost_ns: tally.lost_ns,
        gaps: tally.gaps,
        longest_gap_ns: tally.longest_ns,
    }
}

/// How long a busy probe waits, off the CPU, before it is taken again ([`probe_settled`]).
pub const SETTLE: Duration = Duration::from_millis(50);

/// [`probe`], taken again after [`SETTLE`] when it found the CPU busy; the later probe is kept.
///
/// A probe right after a round's worker process ended can catch the kernel finishing that
/// worker's teardown on the measuring CPU (unmapping its memory, closing its files and
/// pipes, reaping its peers): one gap of several milliseconds (9.5 ms seen on a 2-vCPU KVM
/// guest, against gaps of at most 0.12 ms in the other probes of the run) that is osprim's own
/// doing, not other work. Off the CPU for [`SETTLE`], that work ends; work that holds the CPU
/// (another task, a busy neighbour) is still there when the probe is taken again.
pub fn probe_settled(timer: &Timer, cpu: usize, before_round: u16, window: Duration) -> Probe {
    let first = probe(timer, cpu, before_round, window);
    if !first.busy() {
        return first;
    }
    std::thread::sleep(SETTLE);
    probe(timer, cpu, before_round, window)
}

/// The busiest probe next to rounds `0..rounds` of a row (those before each of its rounds and
/// the one after its last), if it was busy ([`Probe::busy`]).
pub fn busiest_next_to(probes: &[Probe], rounds: usize) -> Option<&Probe> {
    probes
        .iter()
        .filter(|p| usize::from(p.before_round) <= rounds)
        .filter(|p| p.busy())
        .max_by(|a, b| a.lost_fraction().total_cmp(&b.lost_fraction()))
}

/// The note a busy row carries.
pub fn busy_note(p: &Probe, rounds: u16) -> String {
    let when = if p.before_round >= rounds {
        "after the last round".to_string()
    } else {
        format!("before round {}", p.before_round + 1)
    };
    format!(
        "busy CPU: other tasks, interrupts or the hypervisor held CPU {} for {:.0} % of a {:.0} ms probe {when} \
         (longest gap {}): figures may be disturbed",
        p.cpu,
        p.lost_fraction() * 100.0,
        p.window_ns / 1e6,
        model::unit::fmt_ns(p.longest_gap_ns)
    )
}

/// Flags each row measured next to a busy probe, with a note saying which; `measured_rounds[i]`
/// is how many rounds row `i` was measured in (its rounds are the first ones), `total_rounds`
/// how many the run had. A row of sizes or counts is not a time: a busy CPU does not disturb it.
pub fn mark_busy_rows(rows: &mut [Row], measured_rounds: &[usize], probes: &[Probe], total_rounds: usize) {
    let total = u16::try_from(total_rounds).unwrap_or(u16::MAX);
    for (row, &n) in rows.iter_mut().zip(measured_rounds) {
        if row.summary.is_none() || row.unit != model::Unit::Ns {
            continue;
        }
        if let Some(p) = busiest_next_to(probes, n.max(1)) {
            row.add_flag(Flag::BusyCpu, busy_note(p, total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_at(before_round: u16, lost: f64) -> Probe {
        Probe { before_round, cpu: 1, window_ns: 25e6, lost_ns: lost * 25e6, gaps: 3, longest_gap_ns: 4e6 }
    }

    #[test]
    fn only_gaps_count() {
        let mut t = Tally::default();
        for d in [30.0, 40.0, 999.0, 1_000.0, 5_000.0, 35.0] {
            t.add(d);
        }
        assert_eq!(t, Tally { lost_ns: 6_000.0, gaps: 2, longest_ns: 5_000.0 });
    }

    #[test]
    fn rows_take_the_probes_around_their_own_rounds() {
        let probes = [probe_at(0, 0.001), probe_at(1, 0.30), probe_at(2, 0.002), probe_at(3, 0.5)];
        // Measured in round 0 only: probes before round 0 and before round 1 (after it).
        assert_eq!(busiest_next_to(&probes, 1).map(|p| p.before_round), Some(1));
        // Every round: the busiest of all.
        assert_eq!(busiest_next_to(&probes, 3).map(|p| p.before_round), Some(3));
        assert!(busiest_next_to(&probes[..1], 1).is_none(), "an idle probe marks nothing");
    }

    #[test]
    fn the_note_says_where_and_how_much() {
        let n = busy_note(&probe_at(1, 0.48), 3);
        assert!(n.contains("CPU 1 for 48 % of a 25 ms probe before round 2"), "{n}");
        let n = busy_note(&probe_at(3, 0.48), 3);
        assert!(n.contains("after the last round"), "{n}");
    }

    /// A real probe on a CPU shared with a spinning thread loses a large share of its window;
    /// alone, the same probe loses a smaller one (measured in one test, compared, no absolute
    /// time asserted).
    #[test]
    fn a_shared_cpu_is_seen() {
        let _serial = sys::testing::serial();
        let (timer, _) = crate::timer::detect();
        let cpu = sys::cpu::current_cpu().unwrap_or(0);
        let pinned = std::thread::spawn(move || {
            crate::placement::pin(cpu).expect("pin");
            let alone = probe(&timer, cpu, 0, Duration::from_millis(40));
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let hog = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    crate::placement::pin(cpu).expect("pin");
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            };
            let shared = probe(&timer, cpu, 1, Duration::from_millis(200));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            hog.join().expect("hog");
            (alone, shared)
        });
        let (alone, shared) = pinned.join().expect("probe thread");
        assert!(shared.lost_fraction() > 0.2, "shared CPU lost only {:?}", shared);
        assert!(shared.lost_fraction() > alone.lost_fraction(), "{alone:?} vs {shared:?}");
        assert!(shared.longest_gap_ns >= GAP_NS && shared.gaps > 0);
    }
}
