//! The readable table of a run, fitted to the view's width: a short header; the rows, each
//! an id with the parameters that tell it apart, its median and its 95 % CI relative to it
//! (`± 4.2 %`, or `−0.1/+502 %` when the interval is lopsided), min, p99 and short markers
//! (the seed method: the mean, its CI, and the median beside them); the IPC families as one matrix
//! ([`super::matrix`]); sweeps as their points and fit ([`super::sweep`]); then numbered
//! footnotes that explain each marker and name its rows ([`super::marks`]).

use super::context::Ctx;
pub use super::figures::{is_scaled, location, pct, plus_minus};
use super::layout::{self, Align, Cell, Grid, Line, Style, abbreviate, paint, refs};
use super::marks::{self, Marks, NoteKind, Outcome, RowRef};
use super::{View, fmt_count, matrix, names, sweep};
use model::{Method, Row, RunFile, SIZE_PARAM, Status};

/// One part of the output, in the order of the run.
enum Section<'a> {
    /// A run of ordinary rows.
    Plain(Vec<&'a Row>),
    /// The rows with a peer and a placement.
    Matrix(Vec<&'a Row>),
    /// A fitted sweep.
    Sweep(&'a Row),
}

/// The table and its footnotes, within `view.width` (unlimited with `view.wide`).
pub fn render(run: &RunFile, view: &View) -> String {
    let (head, body, notes) = build(run, view);
    let mut out: Vec<String> = head;
    for block in body {
        out.push(String::new());
        out.extend(block);
    }
    if !notes.is_empty() {
        out.push(String::new());
        out.extend(notes);
    }
    let max = if view.wide { usize::MAX } else { view.width.max(20) };
    let mut s = String::new();
    for line in out {
        let line = line.trim_end();
        // A last guard: no line wider than the view (escape codes aside).
        let line =
            if layout::width(line) > max && !line.contains('\x1b') { abbreviate(line, max) } else { line.into() };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

/// The header lines, the blocks of the body, the footnotes.
fn build(run: &RunFile, view: &View) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    let mut ctx = Ctx {
        run,
        view: *view,
        seed: run.config.method == Method::Seed,
        marks: Marks::default(),
        shared: shared_notes(run),
    };
    let head: Vec<String> = super::header::lines(run, ctx.prose())
        .into_iter()
        .map(|(l, partial)| paint(&l, if partial { Style::Bad } else { Style::Dim }, view.color))
        .collect();
    let sections = plan(run);
    let plain: Vec<&Row> =
        sections.iter().flat_map(|s| if let Section::Plain(r) = s { r.clone() } else { vec![] }).collect();
    let mut grid = plain_grid(&ctx);
    let families = Families::of(&plain);
    // Blocks in order; `None` stands for the next part of the plain grid.
    let mut blocks: Vec<Option<Vec<String>>> = Vec::new();
    for s in &sections {
        match s {
            Section::Plain(rows) => {
                if blocks.iter().any(Option::is_none) {
                    grid.push(Line::Cut);
                }
                for r in rows {
                    plain_lines(&mut ctx, &mut grid, &families, r);
                }
                blocks.push(None);
            }
            Section::Matrix(rows) => blocks.push(Some(matrix::render(&mut ctx, rows))),
            Section::Sweep(fit) => blocks.push(Some(sweep::render(&mut ctx, fit, &sweep::points_of(run, fit)))),
        }
    }
    let width = ctx.width();
    grid.fit(width, &plain_drop_order(view, ctx.seed), 0);
    let mut parts = grid.render(ctx.prose().max(grid.total().min(width)), view.color).into_iter();
    let body = blocks.into_iter().map(|b| b.unwrap_or_else(|| parts.next().unwrap_or_default())).collect();
    let notes = ctx.marks.render(run.config.ci_target_rel, &closing_notes(&ctx), ctx.prose(), view.color);
    (head, body, notes)
}

/// The sections of the output in the order of the run: points of a fitted sweep go with
/// the sweep, the rows with a peer and a placement into one matrix where the first is.
fn plan(run: &RunFile) -> Vec<Section<'_>> {
    let fitted = sweep::fitted_groups(run);
    let mut out: Vec<Section> = Vec::new();
    let mut matrix_at = None;
    for r in &run.results {
        if sweep::is_fitted_point(r, &fitted) {
            continue;
        }
        if r.fit.is_some() {
            out.push(Section::Sweep(r));
        } else if matrix::belongs(r) {
            match matrix_at {
                Some(i) => {
                    if let Some(Section::Matrix(rows)) = out.get_mut(i) {
                        rows.push(r);
                    }
                }
                None => {
                    matrix_at = Some(out.len());
                    out.push(Section::Matrix(vec![r]));
                }
            }
        } else if let Some(Section::Plain(rows)) = out.last_mut() {
            rows.push(r);
        } else {
            out.push(Section::Plain(vec![r]));
        }
    }
    out
}

/// Notes of the "other" kind that more than one shown row has.
fn shared_notes(run: &RunFile) -> Vec<String> {
    let mut seen: Vec<(&String, usize)> = Vec::new();
    for n in run.results.iter().filter(|r| !is_scaled(r)).flat_map(|r| &r.notes) {
        match seen.iter_mut().find(|(t, _)| *t == n) {
            Some((_, c)) => *c += 1,
            None => seen.push((n, 1)),
        }
    }
    seen.into_iter().filter(|(n, c)| *c > 1 && marks::note_kind(n) == NoteKind::Other).map(|(n, _)| n.clone()).collect()
}

/// The plain rows of each family and the parameters they share.
struct Families {
    shared: Vec<(String, Vec<String>, String)>,
}

impl Families {
    fn of(rows: &[&Row]) -> Families {
        let mut fams: Vec<&str> = rows.iter().map(|r| names::family(&r.id)).collect();
        fams.dedup();
        let shared = fams
            .into_iter()
            .map(|f| {
                let members: Vec<&Row> = rows.iter().copied().filter(|r| names::family(&r.id) == f).collect();
                let keys = names::shared_keys(&members, &[]);
                let text = names::shared_text(&members, &keys);
                (f.to_string(), keys, text)
            })
            .collect();
        Families { shared }
    }

    /// The shared keys and heading of a row's family.
    fn get(&self, id: &str) -> (&[String], &str) {
        let f = names::family(id);
        self.shared.iter().find(|(n, _, _)| n == f).map_or((&[], ""), |(_, k, t)| (k.as_slice(), t.as_str()))
    }
}

/// The columns of the plain table, by name.
#[derive(Default)]
struct PlainCells {
    label: Cell,
    about: Cell,
    figure: Cell,
    ci: Cell,
    /// The median beside the mean (the seed method only).
    median: Cell,
    min: Cell,
    p99: Cell,
    samples: Cell,
    check: Cell,
    flags: Cell,
}

impl PlainCells {
    fn into_cells(self, wide: bool, seed: bool) -> Vec<Cell> {
        let mut v = vec![self.label];
        if wide {
            v.push(self.about);
        }
        v.extend([self.figure, self.ci]);
        if seed {
            v.push(self.median);
        }
        v.extend([self.min, self.p99]);
        if wide {
            v.push(self.samples);
        }
        v.extend([self.check, self.flags]);
        v
    }
}

fn plain_grid(ctx: &Ctx) -> Grid {
    let h = |s: &str| Cell::plain(s);
    let head = PlainCells {
        label: h("benchmark"),
        about: h("what it measures"),
        figure: h(if ctx.seed { "mean" } else { "median" }),
        ci: h("95 % CI"),
        median: h("median"),
        min: h("min"),
        p99: h("p99"),
        samples: h("samples"),
        check: h("check"),
        flags: h("flags"),
    };
    let mut align = vec![Align::Left];
    if ctx.view.wide {
        align.push(Align::Left);
    }
    align.extend(vec![Align::Right; if ctx.seed { 5 } else { 4 }]);
    if ctx.view.wide {
        align.push(Align::Right);
    }
    align.extend([Align::Left; 2]);
    Grid::new(vec![head.into_cells(ctx.view.wide, ctx.seed)], align)
}

/// p99 first, then min (the median beside the seed method's mean stays).
fn plain_drop_order(view: &View, seed: bool) -> Vec<usize> {
    match (view.wide, seed) {
        (true, _) => vec![],
        (false, false) => vec![4, 3],
        (false, true) => vec![5, 4],
    }
}

/// A plain row's lines: a family heading before the family's first row, the row, its
/// breakdown (one line, or one row per stage with `--detail`), its tail, its own notes.
fn plain_lines(ctx: &mut Ctx, grid: &mut Grid, fams: &Families, r: &Row) {
    let (shared, heading) = fams.get(&r.id);
    let fam = names::family(&r.id);
    let started = grid
        .lines
        .iter()
        .any(|l| matches!(l, Line::Cells(c) if c.first().is_some_and(|c| names::family(&c.text) == fam)));
    if !started && !heading.is_empty() {
        grid.push(Line::Span { indent: 0, cell: Cell::styled(format!("{fam}.* — {heading}"), Style::Dim) });
    }
    let label = names::label(r, shared, &[]);
    let at = RowRef { id: r.id.clone(), qual: label[r.id.len()..].trim().to_string(), measured: r.summary.is_some() };
    ctx.marks.see(&at);
    let rm = marks::of(r);
    let (check, flags) = ctx.numbered(&rm, &at);
    let mut c = figures(r, ctx.seed);
    c.label = Cell::plain(label);
    c.about = Cell::plain(r.about.clone());
    let outcome_text = |word: &str| format!("{word}{}", refs(&check));
    match rm.outcome {
        Outcome::Skipped => c.figure = Cell::styled(outcome_text("skipped"), Style::Warn),
        Outcome::Failed => c.figure = Cell::styled(outcome_text("failed"), Style::Bad),
        Outcome::Interrupted => c.figure = Cell::styled(outcome_text("interrupted"), Style::Bad),
        Outcome::Ok => c.check = Cell::plain("ok"),
        Outcome::CheckFailed => c.check = Cell::styled(outcome_text("FAILED"), Style::Bad),
        Outcome::Unchecked => c.check = Cell::plain(outcome_text("unchecked")),
    }
    let worst = rm.flags.iter().map(|m| m.key.style()).find(|s| *s == Style::Bad).unwrap_or(Style::Warn);
    c.flags = Cell::styled(refs(&flags), worst);
    grid.push(Line::Cells(c.into_cells(ctx.view.wide, ctx.seed)));
    breakdown_lines(ctx, grid, r);
    if let Some(c) = &r.cold_hot {
        let text = format!(
            "└ {} (hot twin {}, {} pairs)",
            cold_hot_text(c),
            r.unit.format(c.hot_median_ns),
            fmt_count(c.pairs as u64)
        );
        grid.push(Line::Span { indent: 2, cell: Cell::styled(text, Style::Dim) });
        if let Some(counts) = cold_hot_counts(c) {
            grid.push(Line::Span { indent: 2, cell: Cell::styled(format!("└ {counts}"), Style::Dim) });
        }
    }
    if let Some(t) = &r.tail {
        let v = |x| r.unit.format(x);
        let text = format!(
            "└ single operations (n = {}): p50 {}, p99 {}, p99.9 {}, max {}; timer resolution {}",
            fmt_count(t.n as u64),
            v(t.p50),
            v(t.p99),
            v(t.p999),
            v(t.max),
            v(t.resolution)
        );
        grid.push(Line::Span { indent: 2, cell: Cell::styled(text, Style::Dim) });
    }
    if let Some(text) = r.counters.as_ref().and_then(counters_line) {
        grid.push(Line::Span { indent: 2, cell: Cell::styled(text, Style::Dim) });
    }
    for n in ctx.row_notes(r, &at) {
        grid.push(Line::Span { indent: 2, cell: Cell::styled(format!("· {n}"), Style::Dim) });
    }
}

/// A row's hardware counts per operation, compactly: `└ per operation: 312 cycles · 45 instr
/// · 0.02 LLC miss · 0.1 dTLB miss · 0.3 br miss`, with the share of the time the counters ran
/// when the kernel multiplexed them; `None` when nothing was counted (the closing notes say
/// why).
pub(super) fn counters_line(c: &model::counters::Counters) -> Option<String> {
    if c.events.is_empty() {
        return None;
    }
    fn short(e: &str) -> &str {
        match e {
            "cycles" => "cycles",
            "instructions" => "instr",
            "llc_misses" => "LLC miss",
            "dtlb_misses" => "dTLB miss",
            "branch_misses" => "br miss",
            other => other,
        }
    }
    let parts: Vec<String> = c.events.iter().map(|e| format!("{} {}", count_text(e.per_op), short(&e.event))).collect();
    let mut line = format!("└ per operation: {}", parts.join(" · "));
    if c.running_share_min < 1.0 {
        line.push_str(&format!(" (multiplexed: ≥ {:.0} % counted, scaled)", c.running_share_min * 100.0));
    }
    Some(line)
}

/// A count per operation with about three significant digits.
fn count_text(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

/// The closing notes on hardware counters (`--counters`): which events none of the rows has,
/// and why; how many rows were not counted because their benchmark times its own regions.
fn counters_notes(run: &RunFile) -> Vec<String> {
    let Some(a) = &run.counters else { return Vec::new() };
    let mut out = Vec::new();
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in &a.missing {
        match reasons.iter_mut().find(|(r, _)| *r == m.reason) {
            Some((_, events)) => events.push(&m.event),
            None => reasons.push((&m.reason, vec![&m.event])),
        }
    }
    for (reason, events) in reasons {
        let which =
            if events.len() == model::counters::EVENT_NAMES.len() { "none".to_string() } else { events.join(", ") };
        out.push(format!("counters (--counters): {which} counted: {reason}"));
    }
    let unreached = run
        .results
        .iter()
        .filter(|r| {
            r.counters.as_ref().is_some_and(|c| c.missing.iter().any(|m| m.reason == model::counters::NOT_REACHED))
        })
        .count();
    if unreached > 0 && !a.counted.is_empty() {
        out.push(format!(
            "counters: {unreached} row(s) not counted: their benchmarks time their own regions and do not wrap \
             them in the counting hook yet"
        ));
    }
    out
}

/// A row's figures: estimate, CI, min, p99, samples (derived rows: their estimate).
fn figures(r: &Row, seed: bool) -> PlainCells {
    let v = |x| Cell::plain(r.unit.format(x));
    let mut c = PlainCells::default();
    if let Some(s) = &r.summary {
        let (point, ci) = location(s, seed);
        c.figure = v(point);
        c.ci = Cell::plain(plus_minus(point, ci, r.unit));
        c.median = v(s.median);
        c.min = v(s.min);
        c.p99 = v(s.p99);
        c.samples = Cell::plain(format!("{} × {}", fmt_count(s.n as u64), fmt_count(r.iterations_per_sample)));
    }
    if let Some(d) = &r.derived {
        c.figure = v(d.estimate.point);
        c.ci = Cell::plain(plus_minus(d.estimate.point, d.estimate.ci95, r.unit));
        // A difference whose CI includes 0: its bound, never a signed figure.
        if d.below_resolution {
            let bound = d.estimate.ci95[0].abs().max(d.estimate.ci95[1].abs());
            c.figure = Cell::plain("below resolution");
            c.ci = Cell::plain(format!("(|x| < {})", r.unit.format(bound)));
        }
    }
    if r.summary.is_none() && r.derived.is_none() && r.status.measured() {
        c.figure = Cell::plain("-");
    }
    c
}

/// The stages of a row's breakdown: one line `└ trap 2.9 µs + other 3.5 µs`, or with
/// `--detail` one row per stage.
fn breakdown_lines(ctx: &Ctx, grid: &mut Grid, r: &Row) {
    let Some(stages) = r.breakdown.as_ref().filter(|s| !s.is_empty()) else { return };
    if ctx.view.detail {
        for st in stages {
            let s = &st.summary;
            let (point, ci) = location(s, ctx.seed);
            let v = |x| Cell::styled(r.unit.format(x), Style::Dim);
            let c = PlainCells {
                label: Cell::styled(format!("  └ {}", st.name), Style::Dim),
                figure: v(point),
                ci: Cell::styled(plus_minus(point, ci, r.unit), Style::Dim),
                median: v(s.median),
                min: v(s.min),
                p99: v(s.p99),
                ..Default::default()
            };
            grid.push(Line::Cells(c.into_cells(ctx.view.wide, ctx.seed)));
        }
        return;
    }
    grid.push(Line::Span { indent: 2, cell: Cell::styled(format!("└ {}", stage_sum(r, ctx.seed)), Style::Dim) });
}

/// `trap 2.912 µs + other 3.512 µs`: the stages that make the total. A breakdown with `trap`
/// and `other` beside finer stages (a commit's diff, log write, sync…) has two partitions of one
/// total; the line shows trap + other and points at `--detail` for the rest.
pub(super) fn stage_sum(r: &Row, seed: bool) -> String {
    let stages: Vec<_> = r.breakdown.iter().flatten().collect();
    let split = |name: &str| stages.iter().any(|st| st.name == name);
    let shown: Vec<_> = if split("trap") && split("other") && stages.len() > 2 {
        stages.iter().filter(|st| st.name == "trap" || st.name == "other").collect()
    } else {
        stages.iter().collect()
    };
    let mut line = shown
        .iter()
        .map(|st| format!("{} {}", st.name, r.unit.format(location(&st.summary, seed).0)))
        .collect::<Vec<_>>()
        .join(" + ");
    if shown.len() < stages.len() {
        line.push_str(&format!("; {} finer stages with --detail", stages.len() - shown.len()));
    }
    line
}

/// Lines under the footnotes: what the columns mean, the timer's fallback, notes not shown.
fn closing_notes(ctx: &Ctx) -> Vec<String> {
    let run = ctx.run;
    let mut out = Vec::new();
    if run.results.iter().any(|r| r.summary.is_some()) {
        let text = if ctx.seed {
            "method seed: each sample is one operation, as in the papers, and the figure is their mean; the 95 % CI is \
             the mean's, relative to it: ± x % when neither end lies farther than x %, −a/+b % each end when they lie \
             at unequal distances; median, min and p99 are of the same single operations; docs/results.md"
        } else {
            "the 95 % CI is the median's, relative to it: ± x % when neither end lies farther than x %, −a/+b % each \
             end when they lie at unequal distances; min and p99 are of samples, each the mean of a batch of \
             operations, not of single operations (--tail adds those); docs/results.md"
        };
        out.push(text.into());
    }
    // Rows whose samples are differences of two measurements (ctx.address_space: with − without,
    // paired): a single sample can fall below 0, and its min says so.
    let below: Vec<&str> =
        run.results.iter().filter(|r| r.summary.as_ref().is_some_and(|s| s.min < 0.0)).map(|r| r.id.as_str()).collect();
    if !below.is_empty() {
        let mut ids = below.clone();
        ids.dedup();
        out.push(format!(
            "a min below 0 ({}): each sample is a difference of two measurements taken side by side (with − \
             without), so a single sample can fall below 0; the median and its CI are the figure",
            ids.join(", ")
        ));
    }
    if let Some(why) = &run.timer.fallback_reason {
        out.push(format!("timer: the cycle counter was not used: {why}"));
    }
    out.extend(counters_notes(run));
    match ctx.marks.unshown_notes {
        0 => {}
        1 => out.push("1 row has notes of its own (how it was measured, its rounds): --detail shows them under it".into()),
        n => out.push(format!(
            "{n} rows have notes of their own (how they were measured, their rounds): --detail shows them under each row"
        )),
    }
    out
}

/// The header lines: machine, timer, placement, method (at most three, within 100 columns).
pub fn header(run: &RunFile) -> String {
    super::header::lines(run, super::WIDTH).into_iter().map(|(l, _)| l + "\n").collect()
}

/// The footnotes of the table of `run` in the default view: markers with their rows, shared
/// notes, what the columns mean.
pub fn footnotes(run: &RunFile) -> String {
    build(run, &View::default()).2.into_iter().map(|l| l + "\n").collect()
}

/// One line, at most `width` columns, for a result as it comes in: the id with the
/// parameters that tell it apart, the figure and its CI, and its markers in words.
pub fn row_line(row: &Row, width: usize) -> String {
    let label = match &row.fit {
        Some(_) => format!("{} sweep", names::label(row, &[SIZE_PARAM.into()], &names::CONTEXT)),
        None => names::label(row, &[], &names::CONTEXT),
    };
    let seed = row.method == Method::Seed;
    let (figure, tail) = match (&row.fit, row.status) {
        (_, Status::Skipped | Status::Failed | Status::Interrupted) => {
            let word = match row.status {
                Status::Skipped => "skipped",
                Status::Interrupted => "interrupted",
                _ => "failed",
            };
            (String::new(), format!("{word}: {}", row.reason.as_deref().unwrap_or("no reason recorded")))
        }
        (Some(fit), _) => (sweep::fit_summary(fit), String::new()),
        _ => {
            let figure = row
                .derived
                .as_ref()
                .map(|d| (d.estimate.point, d.estimate.ci95))
                .or(row.summary.as_ref().map(|s| location(s, seed)));
            let below = row.derived.as_ref().filter(|d| d.below_resolution);
            let figure = match (figure, below) {
                (Some((_, [lo, hi])), Some(_)) => {
                    format!("below resolution (|x| < {})", row.unit.format(lo.abs().max(hi.abs())))
                }
                (f, _) => {
                    f.map_or("-".into(), |(p, ci)| format!("{} {}", row.unit.format(p), plus_minus(p, ci, row.unit)))
                }
            };
            (figure, words(row).join(" "))
        }
    };
    let head =
        [label.as_str(), figure.as_str()].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join("  ");
    let room = width.saturating_sub(layout::width(&head) + 2);
    let line = if tail.is_empty() {
        head.clone()
    } else if room >= 8 {
        format!("{head}  {}", abbreviate(&tail, room))
    } else {
        let label_room = width.saturating_sub(layout::width(&figure) + 2 + 10).max(8);
        let head = [abbreviate(&label, label_room), figure]
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("  ");
        let room = width.saturating_sub(layout::width(&head) + 2);
        if room >= 4 { format!("{head}  {}", abbreviate(&tail, room)) } else { head }
    };
    abbreviate(line.trim_end(), width)
}

/// A cold row's ratio to its hot twin with its 95 % interval: `cold/hot 3.2× [2.9, 3.6]`.
pub fn cold_hot_text(c: &model::ColdHot) -> String {
    let x = |v: f64| {
        if v >= 10.0 {
            format!("{v:.0}")
        } else if v >= 1.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    if c.hot_below_step {
        // The hot twin was counted as one timer step: lower bounds.
        return format!("cold/hot ≥ {}× [≥ {}] (hot below the timer step)", x(c.ratio), x(c.ci[0]));
    }
    format!("cold/hot {}× [{}, {}]", x(c.ratio), x(c.ci[0]), x(c.ci[1]))
}

/// What the hardware counted per operation, cold against the hot twin, for the misses that say
/// whether cold was cold: `LLC misses 41 cold vs 0.20 hot · dTLB misses 9.0 vs 0.01`; `None`
/// when nothing was counted on both sides.
pub fn cold_hot_counts(c: &model::ColdHot) -> Option<String> {
    const SHOWN: [(&str, &str); 3] =
        [("llc_misses", "LLC misses"), ("dtlb_misses", "dTLB misses"), ("branch_misses", "branch misses")];
    let parts: Vec<String> = SHOWN
        .iter()
        .filter_map(|(event, name)| {
            let n = c.counts.iter().find(|k| k.event == *event)?;
            Some(format!("{name} {} cold vs {} hot", super::sig4(n.cold_per_op), super::sig4(n.hot_per_op)))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("per operation: {}", parts.join(" · ")))
}

/// A row's markers in words, for [`row_line`]: `check-failed`, `ci-wide`, `drift −12 %`.
fn words(row: &Row) -> Vec<String> {
    let rm = marks::of(row);
    let mut out: Vec<String> = row.cold_hot.iter().map(cold_hot_text).collect();
    match rm.outcome {
        Outcome::CheckFailed => out.push(model::Flag::CheckFailed.label().to_string()),
        Outcome::Unchecked => out.push("unchecked".into()),
        _ => {}
    }
    for m in rm.flags {
        match (m.key, m.size) {
            (marks::Key::Flag(f), _) => out.push(f.label().into()),
            (marks::Key::Drift, Some(s)) => out.push(format!("drift {s}")),
            (marks::Key::Steal, Some(s)) => out.push(format!("steal {s}")),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
