//! What a run says while it goes on: the plan first (how many results, how long at most),
//! then each result as it finishes, a moving bar with an ETA on a terminal, plain lines when
//! stderr is a file or a pipe, nothing with `--quiet`. Everything goes to stderr; stdout
//! keeps the report.

use model::Row;
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a run will do, known before it measures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Results it will give (benchmarks × their parameter sets), skipped ones included.
    pub results: usize,
    /// Benchmarks.
    pub benchmarks: usize,
    /// Results that cannot run here (they are reported with the reason).
    pub skipped: usize,
    /// Visits: each result once per round it is measured in (the extra rounds' added as they
    /// are decided, [`Observer::extra_round`]).
    pub visits: u64,
    /// Rounds over the benchmarks: every result gets this many.
    pub rounds: usize,
    /// The most rounds a result may get (more than `rounds`: results whose rounds disagree get
    /// extra rounds, within `extra_s`).
    pub rounds_max: usize,
    /// Budget per result over all its rounds, in seconds.
    pub budget_s: f64,
    /// Of `results`, the hot twins of cold rows (`--cache cold|both`): measured in their
    /// cold row's visits, at no budget of their own.
    pub twins: usize,
    /// The most time extra rounds may take, in seconds (`runner::EXTRA_BUDGET_SHARE`).
    pub extra_s: f64,
    /// The run's time bound, in seconds (the seed suite's): the rounds' budget is cut to fit
    /// it, and extra rounds take only what is left of it.
    pub limit_s: Option<f64>,
    /// Extra rounds decided so far.
    pub extra_rounds: usize,
    /// Budget-seconds of the extra rounds decided so far (their visits' share of the budget).
    pub extra_planned_s: f64,
    /// Short stability tests after the rounds (the seed suite's stress and error tests:
    /// `short_stability`), and each one's length, s. The run's bound covers them: `limit_s`
    /// is what they leave of it.
    pub short_tests: usize,
    /// Each short test's length, s.
    pub short_each_s: f64,
    /// Short tests ended so far.
    pub short_done: usize,
}

impl Plan {
    /// The longest the run's rounds' sampling can take, in seconds: a result's rounds end at
    /// twice their budget (the sampler's hard stop).
    pub fn base_bound_s(&self) -> f64 {
        (self.results - self.skipped - self.twins) as f64 * self.budget_s * 2.0
    }

    /// The longest the run's sampling can take, in seconds: [`Plan::base_bound_s`] and the
    /// time extra rounds may take, within the run's bound. Set-up, worker processes and
    /// analysis come on top, which the plan line says (they added 40–65 % to short runs, which
    /// a line saying "at most" of the whole run hid).
    pub fn bound_s(&self) -> f64 {
        let all = self.base_bound_s() + self.extra_s;
        self.limit_s.map_or(all, |limit| all.min(limit.max(self.base_bound_s())))
    }

    /// The time the short stability tests take, s.
    pub fn short_s(&self) -> f64 {
        self.short_tests as f64 * self.short_each_s
    }

    /// The time the short tests not yet ended take, s.
    pub fn short_left_s(&self) -> f64 {
        self.short_tests.saturating_sub(self.short_done) as f64 * self.short_each_s
    }

    /// Whether more rounds than the plan's so far may come.
    pub fn may_grow(&self) -> bool {
        self.extra_s > 0.0 && self.rounds + self.extra_rounds < self.rounds_max
    }

    /// The plan in one line.
    pub fn describe(&self) -> String {
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(" ({n} cannot run here)"),
        };
        // Rounded up: an "at most" never rounds below the bound (0.4 s is "1 s", not "0 s").
        // (Less a rounding error: a budget cut to fit a bound of 48 s gives 48.000000001 s.)
        let at_most = |s: f64| fmt_duration(Duration::from_secs_f64((s - 1e-6).ceil().max(0.0)));
        let (rounds, extra) = if self.rounds_max > self.rounds && self.extra_s > 0.0 {
            (
                format!(
                    "{}–{} rounds ({} result-rounds, more for results whose rounds disagree)",
                    self.rounds, self.rounds_max, self.visits
                ),
                format!(" (extra rounds up to {})", at_most(self.bound_s() - self.base_bound_s())),
            )
        } else {
            (format!("{} rounds ({} result-rounds)", self.rounds, self.visits), String::new())
        };
        // The short tests run their whole length (a failure ends one sooner).
        let short = match self.short_tests {
            0 => String::new(),
            n => format!(
                ", then {} of {} each (Go!'s stability rows): at most {} in all",
                if n == 2 { "a short stress test and error test".to_string() } else { format!("{n} short tests") },
                budget_text(self.short_each_s),
                at_most(self.bound_s() + self.short_s())
            ),
        };
        format!(
            "plan: {} results from {} benchmarks{skipped}, {rounds}, {} budget each: sampling at most {}{extra}\
             {short}, set-up and analysis on top (sampling stops early once the CI target is met)",
            self.results,
            self.benchmarks,
            budget_text(self.budget_s),
            at_most(self.bound_s())
        )
    }
}

/// A budget in seconds with three significant figures at most: `1 s`, `0.543 s`, `0.05 s`.
fn budget_text(s: f64) -> String {
    format!("{} s", report::short_number(s))
}

/// Told what happens as a run goes on.
pub trait Observer {
    /// Before anything is measured.
    fn plan(&mut self, _plan: &Plan) {}
    /// A result is about to be measured in `round` (from 0).
    fn visiting(&mut self, _round: usize, _what: &str) {}
    /// That visit ended (or a visit the result no longer needs was passed over): `share` is
    /// the part of a result's budget it stood for (1/rounds; 1 for a benchmark measured in one
    /// round; 0 for a result that cannot run here), the unit of [`eta`].
    fn visited(&mut self, _share: f64) {}
    /// Extra round `round` (from 0) will visit `visits` results whose rounds disagree, which
    /// stand for `budget_s` budget-seconds ([`Observer::visited`]).
    fn extra_round(&mut self, _round: usize, _visits: u64, _budget_s: f64) {}
    /// A result is final.
    fn result(&mut self, _row: &Row) {}
    /// A short stability test starts (the seed suite's, after its rounds): `what`, in one
    /// line ("short stress test: 3 s (osprim stress …)").
    fn stability_begin(&mut self, _what: &str) {}
    /// It ended: how, in one line ("short stress test: clean: 3.0 s without a failure"), or why
    /// it could not run.
    fn stability_end(&mut self, _how: &str) {}
    /// The run ended (finished or not).
    fn finish(&mut self) {}
}

/// An observer that says nothing (`--quiet`, tests).
pub struct Silent;

impl Observer for Silent {}

impl Plan {
    /// The sampling the plan expects, in seconds: each result that runs takes its budget (the
    /// plan's "at most" of its rounds is twice this, the sampler's hard stop), and each visit
    /// of the extra rounds decided so far its share of it.
    pub fn sampling_s(&self) -> f64 {
        self.base_bound_s() / 2.0 + self.extra_planned_s
    }

    /// The plan with extra round `round` of `visits` visits and `budget_s` budget-seconds.
    pub fn grow(&mut self, round: usize, visits: u64, budget_s: f64) {
        self.visits += visits;
        self.extra_rounds = self.extra_rounds.max((round + 1).saturating_sub(self.rounds));
        self.extra_planned_s += budget_s;
    }
}

/// The time a run has left, from the plan's budget arithmetic refined by the time taken.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eta {
    /// Seconds left.
    pub left_s: f64,
    /// Whether the run, so paced, ends after the plan's "sampling at most" (set-up and
    /// analysis come on top of it, which the plan line says).
    pub beyond_plan: bool,
    /// Whether extra rounds not yet decided may add to it ([`Plan::may_grow`]).
    pub may_grow: bool,
}

/// The budget-seconds of the plan's own (pace 1: each result takes its budget) weighed against
/// the pace measured so far: a fifth of the run's, so that the first visits (which start the
/// worker processes) do not make the first estimate.
const PRIOR_SHARE: f64 = 0.2;

/// The time left when `done_s` of the plan's [`Plan::sampling_s`] budget-seconds are done
/// after `elapsed_s`. The plan's pace (each result takes its budget: half its "at most") is
/// the estimate before anything is done; the pace measured (elapsed per budget-second done)
/// takes over as the run goes on, weighed against the plan's pace as against a fifth of the
/// run. Until a fifth of the run is done, the pace is held within the plan's bound (twice the
/// budget): a slow start alone (set-up, worker processes) does not contradict the plan.
pub fn eta(plan: &Plan, done_s: f64, elapsed_s: f64) -> Eta {
    let total = plan.sampling_s();
    let done = done_s.clamp(0.0, total);
    let prior = (PRIOR_SHARE * total).max(f64::MIN_POSITIVE);
    let mut pace = (elapsed_s.max(0.0) + prior) / (done + prior);
    if done < prior {
        pace = pace.min(2.0);
    }
    // The short tests after the rounds take their length, whatever the pace.
    let left_s = (total - done) * pace + plan.short_left_s();
    let bound_s = plan.bound_s() + plan.short_s();
    Eta { left_s, beyond_plan: elapsed_s + left_s > bound_s.ceil() + 0.5, may_grow: plan.may_grow() }
}

/// `eta 0:41`, `eta 7:30 (set-up on top of the plan)` when the pace measured goes beyond the
/// plan's bound, `eta 0:41+` while extra rounds may still add to it.
pub fn eta_text(e: Eta) -> String {
    let left = clock(Duration::from_secs_f64(e.left_s.max(0.0)));
    let grow = if e.may_grow { "+" } else { "" };
    if e.beyond_plan { format!("eta {left}{grow} (set-up on top of the plan)") } else { format!("eta {left}{grow}") }
}

/// `s` cut to at most `width` columns, ending in `…` when cut (ANSI-free text, one column
/// per character).
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let kept: String = s.chars().take(width - 1).collect();
    format!("{}…", kept.trim_end())
}

/// What the live display shows, shared with the bar (which redraws it on its own tick, so that
/// the time and the estimate move between visits).
#[derive(Clone, Debug, Default)]
pub struct Live {
    /// The plan.
    pub plan: Plan,
    /// Visits done (the counter).
    pub visits: u64,
    /// Budget-seconds done ([`eta`]).
    pub done_s: f64,
    /// `round 2/5: txn.begin detect=mprotect`.
    pub what: String,
    /// The last results, shown under the status line.
    pub recent: VecDeque<String>,
}

/// The spinner's frames.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl Live {
    /// The display at `elapsed`, every line at most `width` columns: the status line (spinner,
    /// bar, visits done of those planned, time taken, the estimate, what is measured), then
    /// the last results.
    pub fn render(&self, elapsed: Duration, width: usize) -> String {
        let total = self.plan.visits.max(1);
        let bar_width = if width >= 100 { 20 } else { 12 };
        let filled = (self.visits.min(total) as f64 / total as f64 * bar_width as f64 * 2.0).round() as usize;
        let bar: String = (0..bar_width)
            .map(|i| match filled.saturating_sub(2 * i) {
                0 => ' ',
                1 => '▌',
                _ => '█',
            })
            .collect();
        let spinner = SPINNER[(elapsed.as_millis() / 120) as usize % SPINNER.len()];
        let e = eta(&self.plan, self.done_s, elapsed.as_secs_f64());
        let mut status =
            format!("{spinner} {bar} {}/{} {} {}", self.visits, self.plan.visits, clock(elapsed), eta_text(e));
        if !self.what.is_empty() {
            status.push_str("  ");
            status.push_str(&self.what);
        }
        let mut out = truncate(&status, width);
        for line in &self.recent {
            out.push('\n');
            out.push_str(&truncate(line, width));
        }
        out
    }
}

/// The progress of a run on stderr.
pub struct Progress {
    plan: Plan,
    started: Instant,
    results: usize,
    width: usize,
    /// Whether stderr is a terminal (a live bar) or not (plain lines).
    terminal: bool,
    /// The live display, once the plan is printed.
    bar: Option<Ticker>,
    /// What the bar shows.
    live: Arc<Mutex<Live>>,
    /// A saved run each result is compared with (`--baseline`).
    baseline: Option<std::sync::Arc<model::RunFile>>,
}

/// Results shown under the bar on a terminal.
const RECENT: usize = 4;

impl Progress {
    /// Progress on stderr: a bar on a terminal, plain lines otherwise.
    pub fn stderr() -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let width = terminal_width_of_stderr().unwrap_or(report::WIDTH).max(40);
        Progress {
            plan: Plan::default(),
            started: Instant::now(),
            results: 0,
            width,
            terminal,
            bar: None,
            live: Arc::default(),
            baseline: None,
        }
    }

    /// Each result also compared with `baseline`, at the end of its line.
    pub fn with_baseline(mut self, baseline: Option<std::sync::Arc<model::RunFile>>) -> Progress {
        self.baseline = baseline;
        self
    }

    /// `  vs base 0.952× faster`, when a baseline has this result.
    fn against_baseline(&self, row: &Row) -> String {
        let Some(base) = &self.baseline else { return String::new() };
        match analysis::compare::compare_row(
            base,
            row,
            analysis::compare::DEFAULT_NOISE,
            analysis::compare::QUICK_RESAMPLES,
            analysis::analyse::BOOTSTRAP_SEED,
        ) {
            Ok(c) => format!("  vs base {}", c.brief()),
            Err(_) => String::new(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Live)) {
        if let Ok(mut live) = self.live.lock() {
            f(&mut live);
        }
    }

    fn counts(&self) -> String {
        format!("{}/{} results", self.results, self.plan.results)
    }

    /// `[12/156 results 0:05 eta 0:30]`: where the run is, for a plain line.
    fn stamp(&self) -> String {
        let done_s = self.live.lock().map(|l| l.done_s).unwrap_or_default();
        let elapsed = self.started.elapsed();
        let e = eta_text(eta(&self.plan, done_s, elapsed.as_secs_f64()));
        format!("[{} {} {e}]", self.counts(), clock(elapsed))
    }

    /// `line` on stderr after the stamp (stderr not a terminal).
    fn line(&self, line: &str) {
        let stamp = self.stamp();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{stamp} {line}");
    }
}

/// The live display on a terminal: redrawn in place every tick by a thread of its own, so that
/// the time and the estimate move between visits. Each line is cleared to its end and kept one
/// column short of the terminal's width as it is at that moment, so no line ever fills a row
/// and wraps (a line padded to the full width, as indicatif draws, is joined with the next row
/// by terminals that keep the wrap).
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How often the live display is redrawn.
const TICK: Duration = Duration::from_millis(100);

impl Ticker {
    fn start(live: Arc<Mutex<Live>>, fallback_width: usize) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("osprim-progress".into())
            .spawn(move || {
                let mut shown = 0;
                while !stopping.load(Ordering::Relaxed) {
                    let width = terminal_width_of_stderr().unwrap_or(fallback_width).max(20) - 1;
                    let text = live.lock().map(|l| l.render(started.elapsed(), width)).unwrap_or_default();
                    shown = redraw(shown, &text);
                    std::thread::sleep(TICK);
                }
                redraw(shown, "");
            })
            .ok();
        Ticker { stop, thread }
    }

    /// Clears the display and ends the thread.
    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Draws `text` over the `shown` lines drawn last (the cursor at the end of the last of them);
/// returns the lines now shown. Empty text clears the display and leaves the cursor where it
/// began.
fn redraw(shown: usize, text: &str) -> usize {
    let mut out = String::from("\r");
    if shown > 1 {
        out.push_str(&format!("\x1b[{}A", shown - 1));
    }
    let lines: Vec<&str> = if text.is_empty() { Vec::new() } else { text.split('\n').collect() };
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        out.push_str("\x1b[K");
    }
    // Whatever the last drawing had below.
    out.push_str("\x1b[J");
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(out.as_bytes()).and_then(|()| err.flush());
    lines.len()
}

fn terminal_width_of_stderr() -> Option<usize> {
    let stderr = std::io::stderr();
    stderr.is_terminal().then(|| terminal_size::terminal_size_of(&stderr).map(|(w, _)| usize::from(w.0)))?
}

impl Observer for Progress {
    fn plan(&mut self, plan: &Plan) {
        self.plan = plan.clone();
        self.started = Instant::now();
        // One column short of the terminal: a line that fills it would wrap on some terminals.
        let line = report::wrap_to(&plan.describe(), self.width.min(report::WIDTH) - 1);
        say!("{}", line.trim_end());
        self.update(|l| *l = Live { plan: plan.clone(), ..Live::default() });
        if self.terminal {
            self.bar = Some(Ticker::start(self.live.clone(), self.width));
        }
    }

    fn visiting(&mut self, round: usize, what: &str) {
        let what = if round < self.plan.rounds {
            format!("round {}/{}: {what}", round + 1, self.plan.rounds)
        } else {
            format!("extra round {}/{}: {what}", round + 1, self.plan.rounds_max)
        };
        self.update(|l| l.what = what);
    }

    fn extra_round(&mut self, round: usize, visits: u64, budget_s: f64) {
        self.plan.grow(round, visits, budget_s);
        self.update(|l| l.plan.grow(round, visits, budget_s));
    }

    fn visited(&mut self, share: f64) {
        let budget_s = self.plan.budget_s;
        self.update(|l| {
            l.visits += 1;
            l.done_s += share * budget_s;
        });
    }

    fn result(&mut self, row: &Row) {
        self.results += 1;
        let vs = self.against_baseline(row);
        match &self.bar {
            Some(_) => {
                let room = self.width.saturating_sub(4 + vs.chars().count()).max(20);
                let line = format!("  {}{vs}", report::table::row_line(row, room));
                self.update(|l| {
                    if l.recent.len() == RECENT {
                        l.recent.pop_front();
                    }
                    l.recent.push_back(line);
                });
            }
            None => {
                // The stamp and the row share one line of the width.
                let room = self.width.saturating_sub(self.stamp().chars().count() + 1 + vs.chars().count()).max(20);
                let line = format!("{}{vs}", report::table::row_line(row, room));
                self.line(&line);
            }
        }
    }

    fn stability_begin(&mut self, what: &str) {
        if self.bar.is_some() {
            self.update(|l| l.what = what.to_string());
        } else {
            self.line(what);
        }
    }

    fn stability_end(&mut self, line: &str) {
        self.plan.short_done += 1;
        self.update(|l| l.plan.short_done += 1);
        if self.bar.is_some() {
            self.update(|l| {
                if l.recent.len() == RECENT {
                    l.recent.pop_front();
                }
                l.recent.push_back(format!("  {line}"));
                l.what.clear();
            });
        } else {
            self.line(line);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.stop();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `0:05`, `1:05`, `2:03:00`: a clock, the same width from one second to the next.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..3600 => format!("{}:{:02}", s / 60, s % 60),
        _ => format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60),
    }
}

/// `1:05`, `12 s`, `2:03:00`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{}:{:02}", s / 60, s % 60),
        _ => format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_read_as_people_write_them() {
        assert_eq!(budget_text(1.0), "1 s");
        assert_eq!(budget_text(0.5434782608695652), "0.543 s");
        assert_eq!(budget_text(0.05), "0.05 s");
        assert_eq!(budget_text(2.5), "2.5 s");
        assert_eq!(budget_text(30.0), "30 s");
    }

    #[test]
    fn the_plan_bounds_the_run_by_twice_the_budget_of_what_runs() {
        let p =
            Plan { results: 10, benchmarks: 4, skipped: 2, visits: 40, rounds: 5, budget_s: 1.0, ..Plan::default() };
        assert_eq!(p.bound_s(), 16.0);
        let line = p.describe();
        assert!(
            line.contains("10 results from 4 benchmarks (2 cannot run here), 5 rounds (40 result-rounds)"),
            "{line}"
        );
        assert!(line.contains("sampling at most 16 s, set-up and analysis on top"), "{line}");
    }

    #[test]
    fn the_plan_counts_the_short_stability_tests_within_its_bound() {
        // The seed suite's bound of 50 s, 6 s of it for a 3 s stress and a 3 s error test:
        // the rounds' budget was cut so that their sampling takes at most the 44 s left, as
        // the runner cuts it (100 results at 0.2 s come to 44.00000000000001 s: not "45 s").
        let budget_s = 0.2 * 44.0 / (100.0 * 0.2 * 2.0);
        let p = Plan {
            results: 100,
            benchmarks: 4,
            visits: 100,
            rounds: 1,
            budget_s,
            limit_s: Some(44.0),
            short_tests: 2,
            short_each_s: 3.0,
            ..Plan::default()
        };
        assert!((p.bound_s() - 44.0).abs() < 1e-9 && p.short_s() == 6.0, "{p:?}");
        let line = p.describe();
        assert!(
            line.contains(
                "sampling at most 44 s, then a short stress test and error test of 3 s each (Go!'s stability rows): \
                 at most 50 s in all, set-up and analysis on top"
            ),
            "{line}"
        );
        // The estimate holds the tests' time until they end, whatever the pace.
        assert!((eta(&p, p.sampling_s(), 20.0).left_s - 6.0).abs() < 1e-9);
        let one_done = Plan { short_done: 1, ..p.clone() };
        assert!((eta(&one_done, p.sampling_s(), 23.0).left_s - 3.0).abs() < 1e-9);
        // Without short tests, the line says nothing of them.
        assert!(!Plan { short_tests: 0, ..p }.describe().contains("stress"));
    }

    fn seed_like_plan() -> Plan {
        // 58 results, 4 skipped, 5 rounds, 1 s each: sampling 54 s, at most 108 s.
        Plan { results: 58, benchmarks: 40, skipped: 4, visits: 290, rounds: 5, budget_s: 1.0, ..Plan::default() }
    }

    #[test]
    fn the_first_estimate_is_the_plans_budget_within_its_bound() {
        let p = seed_like_plan();
        assert_eq!(p.sampling_s(), 54.0);
        let first = eta(&p, 0.0, 0.0);
        assert_eq!(first, Eta { left_s: 54.0, beyond_plan: false, may_grow: false });
        // A slow start (worker processes, set-up: 5 s for 0.2 budget-seconds) is held within
        // the plan's bound: the estimate never says more than "at most" does.
        let slow = eta(&p, 0.2, 5.0);
        assert!(slow.left_s <= p.bound_s() - 5.0 && !slow.beyond_plan, "{slow:?}");
        assert!(slow.left_s > 54.0, "but slower than the budget: {slow:?}");
    }

    #[test]
    fn the_estimate_follows_the_pace_measured_as_the_run_goes_on() {
        let p = seed_like_plan();
        // Half the budget-seconds done in half the time: the rest at the same pace.
        let even = eta(&p, 27.0, 27.0);
        assert!((even.left_s - 27.0).abs() < 1e-9, "{even:?}");
        // Sampling that stops early (CI target met): half the pace, and the estimate follows.
        let quick = eta(&p, 27.0, 13.5);
        assert!(quick.left_s < 27.0 && quick.left_s > 13.5, "{quick:?}");
        // Set-up far beyond the budget, measured over half the run: said, with the reason.
        let slow = eta(&p, 27.0, 81.0);
        assert!(slow.left_s > 54.0 && slow.beyond_plan, "{slow:?}");
        assert!(eta_text(slow).contains("set-up on top of the plan"), "{}", eta_text(slow));
        // Done: nothing left.
        assert_eq!(eta(&p, 54.0, 60.0).left_s, 0.0);
        // A run where nothing can run here.
        let none = Plan { skipped: 58, ..p };
        assert_eq!(eta(&none, 0.0, 1.0).left_s, 0.0);
    }

    #[test]
    fn truncation_keeps_to_the_width_and_marks_the_cut() {
        assert_eq!(truncate("round 2/5: txn.begin", 40), "round 2/5: txn.begin");
        assert_eq!(truncate("round 2/5: txn.begin detect=mprotect", 20), "round 2/5: txn.begi…");
        assert_eq!(truncate("µµµµ", 3), "µµ…");
        assert_eq!(truncate("abc", 0), "");
    }

    #[test]
    fn the_live_display_fits_any_width_and_shows_the_counter() {
        let live = Live {
            plan: seed_like_plan(),
            visits: 23,
            done_s: 4.6,
            what: "round 2/5: txn.begin detect=mprotect track=all cpus=0,1 size=65536".into(),
            recent: ["  ipc.pipe.rtt size=65536  12.3 µs ±0.4 % some flags and words after it".to_string()].into(),
        };
        for width in [39, 79, 99, 200] {
            let text = live.render(Duration::from_millis(5_300), width);
            assert_eq!(text.lines().count(), 2, "{text}");
            for line in text.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
            assert!(text.contains(" 23/290 0:05 eta "), "{text}");
        }
        let wide = live.render(Duration::from_secs(5), 200);
        assert!(wide.contains("round 2/5: txn.begin detect=mprotect track=all"), "{wide}");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(fmt_duration(Duration::from_secs(12)), "12 s");
        assert_eq!(fmt_duration(Duration::from_secs(65)), "1:05");
        assert_eq!(fmt_duration(Duration::from_secs(7380)), "2:03:00");
        assert_eq!(clock(Duration::from_secs(5)), "0:05");
        assert_eq!(clock(Duration::from_secs(7380)), "2:03:00");
    }
}
