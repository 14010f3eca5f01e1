//! The header of the run table: machine, timer, method and placement in at most three lines
//! within the width; a segment that does not fit is left out, the least important first.

use super::figures::pct;
use super::fmt_ns;
use super::layout::{self, abbreviate};
use model::{Method, RunFile};

/// The header: machine, timer, method and placement, at most three lines within `width`;
/// each line with whether it tells of a partial run.
pub fn lines(run: &RunFile, width: usize) -> Vec<(String, bool)> {
    let (m, t, c) = (&run.machine, &run.timer, &run.config);
    let cpus = m.cpu.logical_cpus.map_or("? CPUs".into(), |n| format!("{n} CPUs"));
    let virt = match m.virtualization.virtualized {
        Some(true) => format!("virtualised ({})", m.virtualization.hypervisor_vendor),
        Some(false) => "bare metal".into(),
        None => String::new(),
    };
    // (text, priority: the lowest first while the line has room), in the order shown.
    let line1 = vec![
        (format!("osprim {}", run.osprim.version), 0),
        (format!("{}, {cpus}", m.cpu.model_name), 1),
        (format!("Linux {}", m.kernel.release), 3),
        (virt, 2),
    ];
    // What was subtracted: each round's own calibration when the run kept them (the loop
    // shape's, which every `Ctx::iter` sample loses), else the one taken at start-up.
    let by_round: Vec<f64> = t.overhead_by_round.iter().map(|o| o.subtracted_loop_ns).collect();
    let (lo, hi) = by_round.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
    let overhead = match (run.config.method, t.overhead_mean_ns) {
        _ if !by_round.is_empty() && hi - lo > 0.005 => {
            format!("overhead {}–{} per round subtracted from each sample", fmt_ns(lo), fmt_ns(hi))
        }
        _ if !by_round.is_empty() => format!("overhead {} subtracted from each sample", fmt_ns(lo)),
        (Method::Seed, Some(mean)) => format!("overhead {} (mean) subtracted from each sample", fmt_ns(mean)),
        _ => format!("overhead {} subtracted from each sample", fmt_ns(t.overhead_ns)),
    };
    let kind = format!("{:?}", t.kind).to_lowercase();
    let line2 = vec![
        (format!("timer {kind} {:.1} MHz", t.freq_hz / 1e6), 0),
        (format!("step {}", fmt_ns(t.resolution_ns)), 2),
        (overhead, 1),
    ];
    // The seed method takes a fixed count of single operations and reports their mean: no
    // budget or CI target applies to it.
    let (method, target) = match c.method {
        Method::Seed => (format!("seed: single operations, means, {} rounds", c.rounds), String::new()),
        Method::Adaptive => (
            format!("adaptive: {} s per benchmark, {} rounds", super::short_number(c.budget_s), c.rounds),
            format!("CI target ± {} %", pct(c.ci_target_rel * 100.0)),
        ),
    };
    let mut line3 = vec![
        (method, 1),
        (target, 3),
        (format!("pinned to CPU {}", run.placement.cpu), 2),
        (format!("chosen by {}", run.placement.chosen_by), 4),
    ];
    if let Some((text, busy)) = availability(run) {
        // A busy CPU is as important as the figures; an idle one is a detail.
        line3.push((text, if busy { 0 } else { 5 }));
    }
    if run.partial {
        line3.insert(0, ("PARTIAL (interrupted)".into(), 0));
    }
    let pack = |segs: Vec<(String, u8)>| {
        let segs: Vec<(String, u8)> = segs.into_iter().filter(|(s, _)| !s.is_empty()).collect();
        let mut order: Vec<usize> = (0..segs.len()).collect();
        order.sort_by_key(|&i| segs[i].1);
        let mut keep = vec![false; segs.len()];
        let mut used = 0;
        for i in order {
            let w = layout::width(&segs[i].0) + if used == 0 { 0 } else { 3 };
            if used + w <= width || used == 0 {
                keep[i] = true;
                used += w;
            }
        }
        let shown: Vec<&str> = segs.iter().zip(&keep).filter(|(_, k)| **k).map(|((s, _), _)| s.as_str()).collect();
        abbreviate(&shown.join(" · "), width)
    };
    vec![(pack(line1), false), (pack(line2), false), (pack(line3), run.partial)]
}

/// What the availability probes found: `CPU 1: ≤ 0.24 % taken elsewhere between rounds` or
/// `BUSY: up to 48 % of CPU 1 taken between rounds`, and whether busy; `None` without probes.
pub fn availability(run: &RunFile) -> Option<(String, bool)> {
    let busiest = run.availability.iter().max_by(|a, b| a.lost_fraction().total_cmp(&b.lost_fraction()))?;
    let lost = pct(busiest.lost_fraction() * 100.0);
    Some(if busiest.busy() {
        (format!("BUSY: up to {lost} % of CPU {} taken between rounds", busiest.cpu), true)
    } else {
        (format!("CPU {}: ≤ {lost} % taken elsewhere between rounds", busiest.cpu), false)
    })
}
