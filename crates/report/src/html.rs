//! `osprim report --html`: one self-contained HTML page of a run (no network, no external
//! script, font or stylesheet), to read beside a paper or to see whether a result moved.
//!
//! The page opens on an overview: every measured result in one line (id and parameters in full,
//! median, 95 % CI, flags, and given a comparison its ratio new / base) beside a dot plot of the
//! medians and their CIs on one log scale of time, in a box that fits the first screen; then the
//! papers in short (the seed view's summary text). Then: the machine and the sampler's settings
//! (the table's header lines); per measured result, a line (median, CI, flags) that opens onto
//! what it measures, its checks, flags and notes, and its two plots: the distribution of its
//! samples with the median and its 95 % CI marked, and the samples in the order taken, rounds
//! apart (a cold-cache row also its ratio to its hot twin with its interval, and a row counted
//! with `--counters` its hardware counts per operation);
//! the results not measured, with their reasons; derived results; each size sweep with its
//! fitted cost; the seed papers' figures beside today's (from [`super::seeds::rows`], labelled
//! as the seed view labels them) as bars on a log scale; and, given a comparison, a forest plot
//! of the ratios new / base with the noise band and the machines' differences. The contents, in
//! lines that wrap, link the sections.
//!
//! The plots are inline SVG ([`super::svg`]), each with a legend of its bands and marks, drawn
//! at their own size (never shrunk: no text under 10 px) and scrolled sideways in a narrow
//! window; labels are never cut (a long one wraps). The page needs no JavaScript. One short
//! inline script writes, into the `data-drawn` attribute of `<body>`, how many plots the
//! browser laid out with a non-zero size with every fold open (a test reads it back), and opens
//! a result's fold when a link names it. `<body>`'s `data-plots` says how many plots the page
//! holds. The same input gives the same bytes: the only times are the run's own.

mod plots;

use super::compare::Named;
use super::svg::escape;
use super::sweep::points_of;
use super::{fmt_ns, header, names, seeds};
use model::{Row, RunFile, Status, Unit, Verdict};
use plots::{ForestLine, Pair, SweepPoint};
use std::fmt::Write;

/// A rendered page.
pub struct Page {
    /// The HTML document.
    pub html: String,
    /// How many plots (`<svg class="plot">`) it holds.
    pub plots: usize,
}

/// An entry of the contents: anchor, title, and the entries under it (anchor, title).
type Entry = (String, String, Vec<(String, String)>);

/// The page being written: its sections, its contents and its plot count.
struct Doc {
    body: String,
    toc: Vec<Entry>,
    plots: usize,
}

impl Doc {
    /// A plot, or the words said instead when there is nothing to draw.
    fn plot(&mut self, svg: Option<String>, instead: &str) {
        match svg {
            Some(s) => {
                self.plots += 1;
                // Drawn at its own size, never shrunk (its text stays legible): a narrow
                // window scrolls it sideways.
                self.body.push_str("<div class=\"scroll\">");
                self.body.push_str(&s);
                self.body.push_str("</div>\n");
            }
            None => {
                let _ = writeln!(self.body, "<p class=\"none\">{}</p>", escape(instead));
            }
        }
    }

    /// Opens a section with a heading and an entry in the contents.
    fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(self.body, "<section id=\"{id}\">\n<h2>{}</h2>", escape(title));
        self.toc.push((id.into(), title.into(), Vec::new()));
    }

    /// A sub-heading listed under the current section in the contents.
    fn sub(&mut self, id: &str, title: &str) {
        self.sub_as(id, title, title);
    }

    /// A sub-heading listed in the contents by a shorter name.
    fn sub_as(&mut self, id: &str, title: &str, short: &str) {
        let _ = writeln!(self.body, "<h3 id=\"{id}\">{}</h3>", escape(title));
        if let Some(last) = self.toc.last_mut() {
            last.2.push((id.into(), short.into()));
        }
    }

    fn p(&mut self, class: &str, text: &str) {
        let _ = writeln!(self.body, "<p class=\"{class}\">{}</p>", escape(text));
    }
}

/// The page of `run` (read from `name`), with `against` drawn as a comparison when given.
pub fn render(run: &RunFile, name: &str, against: Option<&Named>) -> Page {
    let mut doc = Doc { body: String::new(), toc: Vec::new(), plots: 0 };
    overview(&mut doc, run, against);
    machine(&mut doc, run, name);
    results(&mut doc, run);
    not_measured(&mut doc, run);
    derived(&mut doc, run);
    sweeps(&mut doc, run);
    papers(&mut doc, run);
    if let Some(n) = against {
        comparison(&mut doc, n);
    }
    let title = format!("osprim report: {} ({})", name, run.started_utc);
    let mut html = String::with_capacity(doc.body.len() + 8192);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body data-plots=\"{}\">\n\
         <h1>osprim report <span class=\"sub\">{} · {}</span></h1>\n",
        escape(&title),
        doc.plots,
        escape(name),
        escape(&run.started_utc)
    );
    html.push_str(&contents(&doc.toc));
    html.push_str(&doc.body);
    html.push_str(SCRIPT);
    html.push_str("</body>\n</html>\n");
    Page { html, plots: doc.plots }
}

/// The table of contents: the sections in a line, the entries under each in a line after it
/// (both wrap; nothing is set in columns, which overlap at a narrow width).
fn contents(toc: &[Entry]) -> String {
    let mut out = String::from("<nav aria-label=\"contents\">\n<ol>\n");
    for (id, title, subs) in toc {
        let _ = write!(out, "<li><a href=\"#{id}\">{}</a>", escape(title));
        if !subs.is_empty() {
            out.push_str("\n<ol class=\"subs\">");
            for (sid, st) in subs {
                let _ = write!(out, "<li><a href=\"#{sid}\">{}</a></li>", escape(st));
            }
            out.push_str("</ol>\n");
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n</nav>\n");
    out
}

/// The width of the overview's dot plot, in pixels.
const DOTS: f64 = 360.0;

/// The overview: every measured result in one line (id and parameters in full, median, its
/// 95 % CI, flags) with a dot plot of the medians and their intervals on one log scale of
/// time, in a box that fits the first screen (it scrolls, its header stays); given a
/// comparison, each result's ratio new / base with its verdict; then the papers in short.
fn overview(doc: &mut Doc, run: &RunFile, against: Option<&Named>) {
    let rows = in_families(run);
    doc.section("overview", "Overview");
    if rows.is_empty() {
        doc.p("none", "none: no result in this file was measured.");
    } else {
        let times: Vec<f64> = (rows.iter())
            .filter(|(_, r)| r.unit == Unit::Ns)
            .filter_map(|(_, r)| r.summary.as_ref())
            .flat_map(|s| [s.median, s.median_ci95[0], s.median_ci95[1]])
            .filter(|v| *v > 0.0 && v.is_finite())
            .collect();
        let scale = times
            .iter()
            .copied()
            .reduce(f64::min)
            .zip(times.iter().copied().reduce(f64::max))
            .map(|(lo, hi)| super::svg::Scale::nice(super::svg::Kind::Log, lo, hi, 20.0, DOTS - 20.0));
        let _ = writeln!(
            doc.body,
            "<p class=\"legend\">{} median &nbsp; {} its 95 % CI (the orange band) &nbsp; on one log scale of time; \
             flags in red (hover for what each means). A result's name leads to its plots.</p>",
            swatch_dot(),
            swatch_band()
        );
        doc.body.push_str(
            "<div class=\"overview\">\n<table class=\"summary\">\n<thead><tr><th>result</th><th>median</th>\
             <th>95 % CI</th><th>flags</th>",
        );
        if against.is_some() {
            doc.body.push_str("<th>new / base</th>");
        }
        doc.body.push_str("<th>");
        if let Some(x) = &scale {
            doc.body.push_str(&dot_axis(x));
        }
        doc.body.push_str("</th></tr></thead>\n<tbody>\n");
        for (i, row) in rows {
            summary_line(doc, i, row, scale.as_ref(), against);
        }
        doc.body.push_str("</tbody>\n</table>\n</div>\n");
    }
    papers_in_short(doc, run);
    doc.body.push_str("</section>\n");
}

/// The papers in short: per paper, the rows compared, the median change of its conclusive
/// rows, and its worst and best row with their 95 % intervals (the papers' section says how
/// to read them).
fn papers_in_short(doc: &mut Doc, run: &RunFile) {
    doc.body.push_str("<h3 id=\"papers-summary\">The papers in short</h3>\n");
    doc.body.push_str(
        "<p>Each paper's figure over today's (\"faster\": today is faster), both means, with today's 95 % \
         interval; the median is over the paper's conclusive rows. <a href=\"#papers\">The papers then and \
         now</a> gives every row.</p>\n",
    );
    doc.body.push_str(
        "<div class=\"scroll\"><table class=\"papers-summary\"><thead><tr><th>paper</th><th>rows compared</th>\
         <th>median change</th><th>worst row</th><th>best row</th></tr></thead>\n<tbody>\n",
    );
    let extreme = |e: &Option<seeds::Extreme>| {
        e.as_ref().map_or_else(|| "-".to_string(), |e| format!("{}: {}", escape(&e.label), escape(&e.with_interval())))
    };
    for s in seeds::paper_summaries(run) {
        let _ = writeln!(
            doc.body,
            "<tr><td>{} <span class=\"cite\">({})</span></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s.system),
            escape(&s.cite),
            escape(&s.counts_text()),
            escape(&s.median_words().map_or_else(|| "-".to_string(), |m| format!("{m} {}", s.what))),
            extreme(&s.worst),
            extreme(&s.best),
        );
    }
    doc.body.push_str("</tbody></table></div>\n");
}

/// One result's line of the overview.
fn summary_line(doc: &mut Doc, i: usize, row: &Row, scale: Option<&super::svg::Scale>, against: Option<&Named>) {
    let Some(s) = &row.summary else { return };
    let params = names::row_params(&row.params, &[]);
    let [lo, hi] = s.median_ci95;
    let _ = write!(
        doc.body,
        "<tr><td><a href=\"#r{i}\">{}</a>{}{}</td><td>{}</td><td>{} – {}</td><td>{}</td><td>",
        escape(&row.id),
        if params.is_empty() { "" } else { " " },
        escape(&params),
        escape(&row.unit.format(s.median)),
        escape(&row.unit.format(lo)),
        escape(&row.unit.format(hi)),
        flag_words(row).trim_start()
    );
    if let Some(n) = against {
        let cell = (n.comparison.compared.iter()).find(|x| x.id == row.id && x.params == row.params).map(|x| {
            let words = x.verdict.text_for(x.unit);
            let text = match x.ratio_interval() {
                Some(r) => format!("{}× {words}", super::sig4(r.estimate)),
                None => words.to_string(),
            };
            format!("<span style=\"color:{}\">{}</span>", plots::verdict_colour(x.verdict), escape(&text))
        });
        let _ =
            write!(doc.body, "{}</td><td>", cell.unwrap_or_else(|| "<span class=\"none\">not compared</span>".into()));
    }
    match scale {
        Some(x) if row.unit == Unit::Ns && s.median > 0.0 => doc.body.push_str(&dot_row(x, s.median, [lo, hi])),
        Some(_) if row.unit == Unit::Ns => {
            doc.body.push_str("<span class=\"none\">0 or less: off the log scale</span>")
        }
        _ => {
            let what = match row.unit {
                Unit::Bytes => "bytes, not a time",
                Unit::Count => "a count, not a time",
                Unit::Ns => "no time to draw",
            };
            let _ = write!(doc.body, "<span class=\"none\">{what}</span>");
        }
    }
    doc.body.push_str("</td></tr>\n");
}

/// One result's mark on the overview's scale: its 95 % CI as an orange band (at least 2 pixels
/// wide), its median as a dot, over the scale's grid.
fn dot_row(x: &super::svg::Scale, median: f64, [lo, hi]: [f64; 2]) -> String {
    use super::svg::{colour, num};
    let mut out = format!(
        "<svg class=\"dot\" aria-hidden=\"true\" width=\"{0}\" height=\"12\" viewBox=\"0 0 {0} 12\">",
        num(DOTS)
    );
    for t in x.ticks() {
        let _ =
            write!(out, "<line x1=\"{0}\" x2=\"{0}\" y1=\"0\" y2=\"12\" stroke=\"{1}\"/>", num(x.map(t)), colour::GRID);
    }
    let (a, z) = (x.clamp(lo.max(f64::MIN_POSITIVE)), x.clamp(hi));
    let w = (z - a).max(2.0);
    let _ = write!(
        out,
        "<rect x=\"{}\" y=\"1\" width=\"{}\" height=\"10\" fill=\"{}\"/><circle cx=\"{}\" cy=\"6\" r=\"3\" fill=\"{}\"/></svg>",
        num((a + z) / 2.0 - w / 2.0),
        num(w),
        colour::BAND,
        num(x.clamp(median)),
        colour::DARK
    );
    out
}

/// The overview's axis: the scale's ticks, labelled in time.
fn dot_axis(x: &super::svg::Scale) -> String {
    use super::svg::{escape, num, trim_zeros};
    let ticks = x.ticks();
    let mut out = format!(
        "<svg class=\"axis\" aria-hidden=\"true\" width=\"{0}\" height=\"14\" viewBox=\"0 0 {0} 14\">",
        num(DOTS)
    );
    // The scale leaves 20 pixels each side, room for half a label.
    for t in &ticks {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"11\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
            num(x.map(*t)),
            escape(&trim_zeros(&fmt_ns(*t)))
        );
    }
    out.push_str("</svg>");
    out
}

/// The legend's swatch of a median: a black dot.
fn swatch_dot() -> String {
    format!(
        "<svg class=\"swatch\" aria-hidden=\"true\" width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"3\" fill=\"{}\"/></svg>",
        super::svg::colour::DARK
    )
}

/// The legend's swatch of an interval: the orange band.
fn swatch_band() -> String {
    format!(
        "<svg class=\"swatch\" aria-hidden=\"true\" width=\"16\" height=\"12\"><rect x=\"0\" y=\"1\" width=\"16\" height=\"10\" fill=\"{}\"/></svg>",
        super::svg::colour::BAND
    )
}

/// The machine, the build, the sampler: the table's header lines and the run's times.
fn machine(doc: &mut Doc, run: &RunFile, name: &str) {
    doc.section("machine", "Machine and settings");
    doc.body.push_str("<ul class=\"header\">\n");
    for (line, _) in header::lines(run, usize::MAX) {
        let _ = writeln!(doc.body, "<li>{}</li>", escape(&line));
    }
    doc.body.push_str("</ul>\n<dl>\n");
    let finished = run.finished_utc.clone().unwrap_or_else(|| "(not finished)".into());
    let b = &run.osprim;
    let facts = [
        ("result file", name.to_string()),
        ("started", run.started_utc.clone()),
        ("finished", finished),
        ("command", run.command.join(" ")),
        ("build", format!("osprim {} ({}), {}, {}", b.version, b.commit, b.profile, b.rustc)),
        ("kernel", format!("{} {}", run.machine.kernel.release, run.machine.kernel.version)),
    ];
    for (k, v) in facts {
        let _ = writeln!(doc.body, "<dt>{k}</dt><dd>{}</dd>", escape(&v));
    }
    doc.body.push_str("</dl>\n");
    if run.partial {
        doc.p("warn", "PARTIAL: the run was interrupted or did not finish; not every benchmark ran.");
    }
    doc.body.push_str("</section>\n");
}

/// A row's name: id and every parameter.
fn label(row: &Row) -> String {
    names::label(row, &[], &[])
}

/// Whether a row is one the run measured and whose samples it holds figures of.
fn measured(row: &Row) -> bool {
    row.derived.is_none() && row.fit.is_none() && row.summary.is_some()
}

/// Per measured result: its figure, what is wrong with it, and its two plots.
fn results(doc: &mut Doc, run: &RunFile) {
    let rows = in_families(run);
    doc.section("results", &format!("Results ({})", rows.len()));
    if !rows.is_empty() {
        doc.p(
            "about",
            "Each result's figure in one line; open it for what it measures, its checks and flags, the \
             distribution of its samples and the samples in the order taken (each plot has its legend).",
        );
    }
    if rows.is_empty() {
        doc.p("none", "none: no result in this file was measured.");
    }
    let mut family = "";
    for (i, row) in rows {
        let fam = names::family(&row.id);
        if fam != family {
            family = fam;
            doc.sub(&format!("family-{}", anchor(fam)), fam);
        }
        result(doc, i, row);
    }
    doc.body.push_str("</section>\n");
}

/// The measured rows with their indices, each family's together in the order the families
/// first appear (so each family has one heading and one anchor).
fn in_families(run: &RunFile) -> Vec<(usize, &Row)> {
    let rows: Vec<(usize, &Row)> = run.results.iter().enumerate().filter(|(_, r)| measured(r)).collect();
    let mut families: Vec<&str> = Vec::new();
    for (_, r) in &rows {
        let f = names::family(&r.id);
        if !families.contains(&f) {
            families.push(f);
        }
    }
    families.iter().flat_map(|f| rows.iter().copied().filter(move |(_, r)| names::family(&r.id) == *f)).collect()
}

/// An id fragment from a name: letters, digits and `-` only.
fn anchor(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// A result: its name, figure and flags in one line that opens onto the rest.
fn result(doc: &mut Doc, i: usize, row: &Row) {
    let name = label(row);
    let _ = write!(doc.body, "<article class=\"result\" id=\"r{i}\">\n<details>\n<summary><h4>{}</h4>", escape(&name));
    if let Some(s) = &row.summary {
        let [lo, hi] = s.median_ci95;
        let text = format!("median {} [{} – {}]", row.unit.format(s.median), row.unit.format(lo), row.unit.format(hi));
        let _ = write!(doc.body, " <span class=\"brief\">{}</span>", escape(&text));
    }
    doc.body.push_str(&flag_words(row));
    doc.body.push_str("</summary>\n");
    if let Some(s) = &row.summary {
        let [lo, hi] = s.median_ci95;
        let rounds = row.samples_per_round.len().max(1);
        let text = format!(
            "median {} (95 % CI {} – {}, ± {:.2} %), mean {}, {} samples in {rounds} round{}; {} operations per sample",
            row.unit.format(s.median),
            row.unit.format(lo),
            row.unit.format(hi),
            s.median_ci_rel_halfwidth() * 100.0,
            row.unit.format(s.mean),
            s.n,
            if rounds == 1 { "" } else { "s" },
            row.iterations_per_sample,
        );
        doc.p("figure", &text);
    }
    if let Some(c) = &row.cold_hot {
        let text = format!(
            "{} against its hot twin ({} median, {} pairs, measured in the same rounds)",
            super::table::cold_hot_text(c),
            row.unit.format(c.hot_median_ns),
            c.pairs
        );
        doc.p("cold", &text);
    }
    if let Some(line) = row.counters.as_ref().and_then(super::table::counters_line) {
        doc.p("counters", line.trim_start_matches("└ "));
    }
    doc.p("about", &row.about);
    problems(doc, row);
    if row.samples.is_empty() {
        doc.p("none", "The file holds no samples of this result (its summary only): nothing to plot.");
    } else {
        doc.body.push_str("<div class=\"plots\">\n");
        doc.plot(plots::histogram(row, &name), "no finite sample to draw");
        doc.plot(plots::series(row, &name), "no finite sample to draw");
        doc.body.push_str("</div>\n");
    }
    doc.body.push_str("</details>\n</article>\n");
}

/// A row's flags as short words, each with its hint as a title; nothing without flags.
fn flag_words(row: &Row) -> String {
    let words: Vec<String> = (row.flags.iter())
        .map(|f| format!("<span title=\"{}\">{}</span>", escape(f.hint()), escape(f.label())))
        .collect();
    if words.is_empty() { String::new() } else { format!(" <span class=\"flags\">{}</span>", words.join(" ")) }
}

/// The verdict of the checks, each flag and each failed check, in words.
fn problems(doc: &mut Doc, row: &Row) {
    let verdict = match row.validation.verdict {
        Verdict::Validated => "validated: every check passed",
        Verdict::Failed => "check-failed: the figure may not measure what it claims",
        Verdict::NotValidated => "not validated: no check could be made",
    };
    let class = if row.validation.verdict == Verdict::Failed { "warn" } else { "checks" };
    doc.p(class, &format!("{verdict} ({} checks)", row.validation.checks.len()));
    let mut items: Vec<String> = row.flags.iter().map(|f| format!("flag {}: {}", f.label(), f.hint())).collect();
    for c in row.validation.checks.iter().filter(|c| c.ok == Some(false)) {
        items.push(format!("check {} failed: expected {}, observed {}", c.name, c.expected, c.observed));
    }
    if !items.is_empty() {
        doc.body.push_str("<ul class=\"flags\">\n");
        for i in items {
            let _ = writeln!(doc.body, "<li>{}</li>", escape(&i));
        }
        doc.body.push_str("</ul>\n");
    }
    if !row.notes.is_empty() {
        doc.body.push_str("<details><summary>notes</summary><ul>\n");
        for n in &row.notes {
            let _ = writeln!(doc.body, "<li>{}</li>", escape(n));
        }
        doc.body.push_str("</ul></details>\n");
    }
}

/// The rows skipped or failed, with their reasons.
fn not_measured(doc: &mut Doc, run: &RunFile) {
    let rows: Vec<&Row> =
        (run.results.iter()).filter(|r| r.derived.is_none() && r.fit.is_none() && r.summary.is_none()).collect();
    doc.section("not-measured", &format!("Not measured ({})", rows.len()));
    if rows.is_empty() {
        doc.p("none", "none: every result was measured.");
    } else {
        doc.body.push_str("<table>\n<thead><tr><th>result</th><th>status</th><th>reason</th></tr></thead>\n<tbody>\n");
        for r in rows {
            let status = match r.status {
                Status::Failed => "failed",
                Status::Skipped => "skipped",
                _ => "no figures",
            };
            let reason = r.reason.clone().unwrap_or_else(|| "(no reason recorded)".into());
            let _ = writeln!(
                doc.body,
                "<tr><td>{}</td><td>{status}</td><td>{}</td></tr>",
                escape(&label(r)),
                escape(&reason)
            );
        }
        doc.body.push_str("</tbody>\n</table>\n");
    }
    doc.body.push_str("</section>\n");
}

/// Results computed from others: formula, estimate and CI.
fn derived(doc: &mut Doc, run: &RunFile) {
    let rows: Vec<&Row> = run.results.iter().filter(|r| r.derived.is_some()).collect();
    doc.section("derived", &format!("Derived results ({})", rows.len()));
    if rows.is_empty() {
        doc.p("none", "none.");
    } else {
        doc.body.push_str(
            "<table>\n<thead><tr><th>result</th><th>formula</th><th>estimate</th><th>95 % CI</th></tr></thead>\n<tbody>\n",
        );
        for r in rows {
            let Some(d) = &r.derived else { continue };
            let e = &d.estimate;
            let ci = format!("{} – {}", r.unit.format(e.ci95[0]), r.unit.format(e.ci95[1]));
            let cells = [label(r), d.formula.clone(), r.unit.format(e.point), ci];
            let cells: Vec<String> = cells.iter().map(|c| format!("<td>{}</td>", escape(c))).collect();
            let _ = writeln!(doc.body, "<tr>{}</tr>", cells.concat());
        }
        doc.body.push_str("</tbody>\n</table>\n");
    }
    doc.body.push_str("</section>\n");
}

/// Each size sweep: its points with their CIs and the fitted cost, and the fit in words.
fn sweeps(doc: &mut Doc, run: &RunFile) {
    let fits: Vec<&Row> = run.results.iter().filter(|r| r.fit.is_some()).collect();
    doc.section("sweeps", &format!("Size sweeps ({})", fits.len()));
    if fits.is_empty() {
        doc.p("none", "none: this run swept no message size (osprim run … --sweep or --sizes).");
    }
    for (k, row) in fits.into_iter().enumerate() {
        let Some(fit) = &row.fit else { continue };
        let name = names::label(row, &[], &["bytes", "sizes"]);
        doc.sub(&format!("sweep{k}"), &format!("{name} sweep"));
        let rows = points_of(run, row);
        let pts: Vec<SweepPoint> = if rows.is_empty() {
            fit.points
                .iter()
                .map(|p| SweepPoint {
                    size: p.size_bytes,
                    median: p.median_ns,
                    ci: [p.median_ns - 1.96 * p.se_ns, p.median_ns + 1.96 * p.se_ns],
                })
                .collect()
        } else {
            rows.iter()
                .filter_map(|r| {
                    let s = r.summary.as_ref()?;
                    let size = r.params.get(model::SIZE_PARAM)?.as_u64()?;
                    Some(SweepPoint { size, median: s.median, ci: s.median_ci95 })
                })
                .collect()
        };
        doc.p("figure", &format!("fitted by {}: {}", fit.method, super::sweep::fit_summary(fit)));
        if let Some(s) = fit.chosen_segments() {
            let text = format!(
                "two segments meeting at {}: {}/KiB up to it, {}/KiB beyond",
                super::fmt_size(s.breakpoint_bytes),
                fmt_ns(s.small_slope_ns_per_byte * 1024.0),
                fmt_ns(s.large_slope_ns_per_byte * 1024.0)
            );
            doc.p("figure", &text);
        }
        problems(doc, row);
        doc.plot(plots::sweep(fit, &pts, &name), "no point with a positive median to draw");
    }
    doc.body.push_str("</section>\n");
}

/// How a seed row's two figures compare, in one unit: (then, now, unit, the change in words
/// with its interval) by the seed view's own ratio, so the bars say what the papers view says.
/// `now` is `None` for a figure today below resolution: no ratio, no bar.
fn then_now(r: &seeds::SeedRow) -> Option<(f64, Option<f64>, &'static str, String)> {
    let below = r.reading == Some(seeds::Reading::BelowResolution);
    let pair = |then: Option<f64>, ratio: Option<f64>| -> Option<(f64, Option<f64>)> {
        let then = then?;
        match ratio {
            Some(x) => Some((then, Some(then / x))),
            None if below => Some((then, None)),
            None => None,
        }
    };
    if r.today_unit.as_deref() == Some("ns") {
        if let Some((t, n)) = pair(r.then_ns, r.ratio_time) {
            return Some((t, n, "time", seeds::change_text(r).unwrap_or_default()));
        }
        if let Some((t, n)) = pair(r.then_cycles, r.ratio_cycles) {
            return Some((t, n, "cycles", seeds::cycles_change_text(r).unwrap_or_default()));
        }
    }
    let (t, n) = pair(Some(r.then).filter(|_| r.then_unit == "bytes"), r.ratio_bytes)?;
    Some((t, n, "memory", seeds::change_text(r).unwrap_or_default()))
}

/// The seed papers' figures beside today's, per paper, as bars on a log scale.
fn papers(doc: &mut Doc, run: &RunFile) {
    let rows = seeds::rows(run);
    doc.section("papers", "The papers then and now");
    doc.p(
        "about",
        "Each seed row that has a figure today: the paper's figure (orange) beside today's (blue), as the \
         papers view compares them (time, or cycles where the paper gives cycles, or memory), on a log scale, \
         with the change and its 95 % interval. A figure today below resolution (a difference whose interval \
         includes 0) has no bar and no ratio.",
    );
    let mut any = false;
    for paper in &papers::PAPERS {
        // The papers view's own labels, which tell the systems and platforms of a table apart
        // ("Linux: …", "Windows NT: …"), after the table's name.
        let groups = seeds::by_table(paper, &rows);
        let mine: Vec<(&seeds::SeedRow, String)> = (groups.iter())
            .flat_map(|g| g.rows.iter())
            .filter(|(r, _)| r.status == seeds::RowStatus::Measured)
            .map(|(r, l)| (*r, format!("{}: {l}", r.table)))
            .collect();
        let charts: Vec<(&str, Vec<Pair>)> = ["time", "cycles", "memory"]
            .into_iter()
            .map(|unit| {
                let pairs = (mine.iter())
                    .filter_map(|(r, label)| {
                        let (then, now, u, change) = then_now(r)?;
                        (u == unit).then(|| Pair { label: label.clone(), then, now, change })
                    })
                    .collect();
                (unit, pairs)
            })
            .filter(|(_, p): &(&str, Vec<Pair>)| !p.is_empty())
            .collect();
        if charts.is_empty() {
            continue;
        }
        any = true;
        doc.sub_as(&format!("paper-{}", paper.key), &paper.heading(), paper.system);
        doc.p("about", &paper.citation());
        for (unit, pairs) in charts {
            let fmt: Box<dyn Fn(f64) -> String> = match unit {
                "time" => Box::new(fmt_ns),
                "cycles" => Box::new(|v| format!("{} cycles", super::sig4(v))),
                _ => Box::new(|v| Unit::Bytes.format(v)),
            };
            let title = format!("{}: the paper's figures and today's ({unit}, log scale)", paper.system);
            doc.plot(plots::bars(&pairs, unit, &fmt, &title), "no figure to draw");
        }
    }
    if !any {
        doc.p("none", "none: no seed row has a figure today in this result (osprim papers lists why).");
    }
    doc.body.push_str("</section>\n");
}

/// The comparison: the forest plot, what was not compared, what differs between the machines.
fn comparison(doc: &mut Doc, n: &Named) {
    let c = &n.comparison;
    doc.section("comparison", "Comparison with the base run");
    let text = format!(
        "new: {} ({}); base: {} ({}); ratio = new / base median with its bootstrap 95 % CI; noise band ± {} %",
        n.new_name,
        n.new.started_utc,
        n.base_name,
        n.base.started_utc,
        super::short_number(c.noise * 100.0)
    );
    doc.p("about", &text);
    // Counted by the verdicts' own words, so that a verdict compare adds (inconclusive) is
    // counted too, in the order first met.
    let mut counts: Vec<(&str, usize)> = vec![("slower", 0), ("faster", 0), ("no change", 0)];
    for x in &c.compared {
        let word = x.verdict.text();
        match counts.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => counts.push((word, 1)),
        }
    }
    let counted: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    doc.p(
        "figure",
        &format!("{} compared: {}; {} not compared", c.compared.len(), counted.join(", "), c.unmatched.len()),
    );
    if c.compared.is_empty() {
        doc.p("none", "No result is in both runs (same id and parameters): nothing to compare.");
    } else {
        let lines: Vec<ForestLine> = c
            .compared
            .iter()
            .map(|x| {
                let p = names::row_params(&x.params, &[]);
                ForestLine { label: if p.is_empty() { x.id.clone() } else { format!("{} {p}", x.id) }, c: x }
            })
            .collect();
        let title = format!("ratios new / base of {} results with 95 % CIs, noise band shaded", lines.len());
        doc.plot(plots::forest(&lines, c.noise, &title), "no ratio to draw");
    }
    if !c.unmatched.is_empty() {
        doc.body.push_str("<h3>Not compared</h3>\n<ul>\n");
        for u in &c.unmatched {
            let p = names::row_params(&u.params, &[]);
            let _ = writeln!(doc.body, "<li>{} {}: {}</li>", escape(&u.id), escape(&p), escape(&u.why));
        }
        doc.body.push_str("</ul>\n");
    }
    doc.body.push_str("<h3>Machine differences</h3>\n");
    if c.differences.is_empty() {
        doc.p("none", "none: the two runs report the same machine and build.");
    } else {
        doc.body.push_str("<table>\n<thead><tr><th>what</th><th>base</th><th>new</th></tr></thead>\n<tbody>\n");
        for d in &c.differences {
            let _ = writeln!(
                doc.body,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&d.what),
                escape(&d.base),
                escape(&d.new)
            );
        }
        doc.body.push_str("</tbody>\n</table>\n");
    }
    doc.body.push_str("</section>\n");
}

/// The page's stylesheet: plain, readable on screen and in print, from 390 pixels wide up; no
/// text under 10 pixels; plots at their own size, scrolled sideways where the window is narrower.
const STYLE: &str = "
body{font-family:sans-serif;max-width:1240px;margin:.5em auto;padding:0 12px;color:#222;line-height:1.35}
h1{font-size:1.3em;margin:.2em 0}h1 .sub{font-size:.7em;font-weight:normal;color:#555;overflow-wrap:anywhere}
h2{font-size:1.2em;border-bottom:1px solid #ccc;margin:1.2em 0 .4em}h3{font-size:1.05em;margin:1em 0 .3em}
h4{margin:0;font-family:monospace;font-size:1em;display:inline}
nav{font-size:.85em;line-height:1.5}nav ol{list-style:none;margin:0;padding:0}nav>ol>li{display:inline}
nav>ol>li:not(:last-child)::after{content:' · '}nav ol.subs{display:inline}nav ol.subs::before{content:' ('}
nav ol.subs::after{content:')'}nav ol.subs li{display:inline}nav ol.subs li:not(:last-child)::after{content:', '}
.result{border-top:1px solid #eee;padding:.2em 0}.result summary{cursor:pointer}.result .brief{font-size:.9em}
.result .flags{font-size:.85em}.result details[open]>summary{margin-bottom:.3em}
.plots{display:flex;flex-wrap:wrap;gap:8px}.scroll{overflow-x:auto;max-width:100%}
p{margin:.3em 0}.figure{font-weight:bold}.cold{color:#2166ac}.about{color:#444}.none{color:#666;font-style:italic}
.warn,.flags{color:#b2182b}
table{border-collapse:collapse;font-size:.9em}td,th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
svg.plot{max-width:none;display:block}
.overview{max-height:68vh;overflow:auto;border:1px solid #ddd}
table.summary{font-size:12px;line-height:1.2}table.summary td,table.summary th{padding:1px 6px;border-color:#eee}
table.summary td{white-space:nowrap}table.summary td:first-child{font-family:monospace;white-space:normal;min-width:24em}
table.summary thead th{position:sticky;top:0;background:#fff;border-bottom:1px solid #bbb;vertical-align:bottom}
table.summary td:last-child,table.summary th:last-child{width:360px;padding:1px 4px}
svg.dot,svg.axis,svg.swatch{display:block}svg.swatch{display:inline;vertical-align:middle}
.legend{font-size:12px;color:#444}
pre.papers-summary{font-size:12px;overflow-x:auto;background:#fafafa;padding:6px;border:1px solid #eee;margin:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:0 1em}dd{margin:0;overflow-wrap:anywhere}
@media (max-width:600px){table:not(.summary){display:block;overflow-x:auto}}
@media print{nav{display:none}.result,svg.plot,tr{break-inside:avoid}body{max-width:none}.overview{max-height:none}}
";

/// Records in `<body data-drawn>` how many plots the browser lays out at a non-zero size with
/// every fold open (opened and closed again before anything is painted), and opens a result's
/// fold when the address names it (a link from the overview).
const SCRIPT: &str = "<script>\n(function(){var n=0,shut=[];document.querySelectorAll('details:not([open])').forEach(function(d){\
d.open=true;shut.push(d);});document.querySelectorAll('svg.plot').forEach(function(s){var r=s.getBoundingClientRect();\
if(r.width>0&&r.height>0)n++;});shut.forEach(function(d){d.open=false;});document.body.setAttribute('data-drawn',String(n));\
function show(){var t=location.hash&&document.getElementById(location.hash.slice(1));var d=t&&t.querySelector('details');\
if(d){d.open=true;t.scrollIntoView();}}window.addEventListener('hashchange',show);show();})();\n</script>\n";

#[cfg(test)]
mod tests;
