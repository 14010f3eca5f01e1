//! What a run says while it goes on: the plan first (how many results, how long at most),
//! then each result as it finishes, a moving bar with an ETA on a terminal, plain lines when
//! stderr is a file or a pipe, nothing with `--quiet`. Everything goes to stderr; stdout
//! keeps the report.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use model::Row;
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
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
    /// Visits: each result once per round it is measured in.
    pub visits: u64,
    /// Rounds over the benchmarks.
    pub rounds: usize,
    /// Budget per result over all its rounds, in seconds.
    pub budget_s: f64,
    /// Of `results`, the hot twins of cold rows (`--cache cold|both`): measured in their
    /// cold row's visits, at no budget of their own.
    pub twins: usize,
}

impl Plan {
    /// The longest the run's sampling can take, in seconds: a result's rounds end at twice
    /// their budget (the sampler's hard stop). Set-up, worker processes and analysis come on
    /// top, which the plan line says (they added 40–65 % to short runs, which a line saying
    /// "at most" of the whole run hid).
    pub fn bound_s(&self) -> f64 {
        (self.results - self.skipped - self.twins) as f64 * self.budget_s * 2.0
    }

    /// The plan in one line.
    pub fn describe(&self) -> String {
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(" ({n} cannot run here)"),
        };
        format!(
            "plan: {} results from {} benchmarks{skipped}, {} rounds, {} budget each: sampling at most {}, \
             set-up and analysis on top (sampling stops early once the CI target is met)",
            self.results,
            self.benchmarks,
            self.rounds,
            budget_text(self.budget_s),
            // Rounded up: an "at most" never rounds below the bound (0.4 s is "1 s", not "0 s").
            fmt_duration(Duration::from_secs_f64(self.bound_s().ceil()))
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
    /// That visit ended.
    fn visited(&mut self) {}
    /// A result is final.
    fn result(&mut self, _row: &Row) {}
    /// The run ended (finished or not).
    fn finish(&mut self) {}
}

/// An observer that says nothing (`--quiet`, tests).
pub struct Silent;

impl Observer for Silent {}

/// The progress of a run on stderr.
pub struct Progress {
    plan: Plan,
    started: Instant,
    visits: u64,
    results: usize,
    width: usize,
    /// Whether stderr is a terminal (a live bar) or not (plain lines).
    terminal: bool,
    /// The live bar, once the plan is printed.
    bar: Option<ProgressBar>,
    /// The last results, shown under the bar.
    recent: VecDeque<String>,
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
            visits: 0,
            results: 0,
            width,
            terminal,
            bar: None,
            recent: VecDeque::new(),
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

    /// The bar: the share of visits done, time taken, ETA, and the last results under it.
    fn new_bar(len: u64) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {bar:24} {percent:>3}% {elapsed_precise} eta {eta_precise}  {msg}")
        {
            bar.set_style(style.progress_chars("█▌ "));
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    }

    fn counts(&self) -> String {
        format!("{}/{} results", self.results, self.plan.results)
    }

    /// Seconds left, from the pace so far (`None` before the first visit ends).
    fn eta(&self) -> Option<Duration> {
        let done = self.visits;
        let left = self.plan.visits.saturating_sub(done);
        (done > 0).then(|| self.started.elapsed().mul_f64(left as f64 / done as f64))
    }

    fn redraw(&self, what: &str) {
        if let Some(bar) = &self.bar {
            let mut msg = if what.is_empty() { self.counts() } else { format!("{} · {what}", self.counts()) };
            for line in &self.recent {
                msg.push('\n');
                msg.push_str(line);
            }
            bar.set_message(msg);
        }
    }
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
        if self.terminal {
            self.bar = Some(Self::new_bar(plan.visits.max(1)));
        }
    }

    fn visiting(&mut self, round: usize, what: &str) {
        let what = format!("round {}/{}: {what}", round + 1, self.plan.rounds);
        self.redraw(&what);
    }

    fn visited(&mut self) {
        self.visits += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.visits);
        }
    }

    fn result(&mut self, row: &Row) {
        self.results += 1;
        match &self.bar {
            Some(_) => {
                let vs = self.against_baseline(row);
                let room = self.width.saturating_sub(4 + vs.chars().count()).max(20);
                let line = format!("{}{vs}", report::table::row_line(row, room));
                if self.recent.len() == RECENT {
                    self.recent.pop_front();
                }
                self.recent.push_back(format!("  {line}"));
                self.redraw("");
            }
            None => {
                // The stamp and the row share one line of the width.
                let eta = self.eta().map(|d| format!(" eta {}", fmt_duration(d))).unwrap_or_default();
                let stamp = format!("[{} {}{eta}]", self.counts(), fmt_duration(self.started.elapsed()));
                let vs = self.against_baseline(row);
                let room = self.width.saturating_sub(stamp.chars().count() + 1 + vs.chars().count()).max(20);
                let line = format!("{}{vs}", report::table::row_line(row, room));
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{stamp} {line}");
            }
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
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
        let p = Plan { results: 10, benchmarks: 4, skipped: 2, visits: 40, rounds: 5, budget_s: 1.0, twins: 0 };
        assert_eq!(p.bound_s(), 16.0);
        let line = p.describe();
        assert!(line.contains("10 results from 4 benchmarks (2 cannot run here)"), "{line}");
        assert!(line.contains("sampling at most 16 s, set-up and analysis on top"), "{line}");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(fmt_duration(Duration::from_secs(12)), "12 s");
        assert_eq!(fmt_duration(Duration::from_secs(65)), "1:05");
        assert_eq!(fmt_duration(Duration::from_secs(7380)), "2:03:00");
    }
}
