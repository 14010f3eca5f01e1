//! The HTML page of the hand-made run of `report::tests`: what each section says, the plot
//! count, escaping, determinism, and the corner cases (no sweep, no seed row, no samples, a
//! comparison with nothing in common).

use super::*;
use crate::tests::run_file;

fn count(html: &str, what: &str) -> usize {
    html.matches(what).count()
}

/// The text between `<section id="{id}">` and its end.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("no section {id}"));
    let len = html[start..].find("</section>").expect("section ends");
    &html[start..start + len]
}

#[test]
fn the_page_counts_its_plots_and_every_plot_has_a_title_and_a_label() {
    let run = run_file(false);
    let page = render(&run, "fixture.json", None);
    let h = &page.html;
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</html>\n"));
    assert_eq!(count(h, "<svg class=\"plot\""), page.plots);
    assert!(h.contains(&format!("<body data-plots=\"{}\">", page.plots)));
    assert_eq!(count(h, "<title>"), page.plots + 1, "the page's title and one per plot");
    assert_eq!(count(h, "role=\"img\" aria-label=\""), page.plots);
    let measured = run.results.iter().filter(|r| measured(r) && !r.samples.is_empty()).count();
    let fits = run.results.iter().filter(|r| r.fit.is_some()).count();
    assert_eq!(fits, 1);
    let results = section(h, "results");
    assert_eq!(count(results, "<svg class=\"plot\""), 2 * measured, "a distribution and a series per result");
    assert_eq!(count(section(h, "sweeps"), "<svg class=\"plot\""), fits);
    assert!(!h.contains("src=") && !h.contains("href=\"http"), "nothing fetched");
    assert!(!h.contains("<link") && !h.contains("<img") && !h.contains("@import"), "self-contained");
}

#[test]
fn skipped_and_failed_rows_are_listed_with_their_reasons_and_flags_and_failed_checks_are_said() {
    let run = run_file(false);
    let h = render(&run, "fixture.json", None).html;
    let not = section(&h, "not-measured");
    assert!(not.contains("Not measured (2)"), "{not}");
    assert!(not.contains("skipped") && not.contains("vm.unprivileged_userfaultfd = 0"));
    assert!(not.contains("failed") && not.contains("mq_open: too many open files"));
    let results = section(&h, "results");
    assert!(results.contains("flag unstable:") && results.contains("flag ci-wide:"), "flags in words");
    assert!(results.contains("check-failed: the figure"));
    let derived = section(&h, "derived");
    assert!(derived.contains("ctx.address_space") && derived.contains("ctx.process − ctx.thread"), "{derived}");
    let toc = &h[h.find("<nav").unwrap()..h.find("</nav>").unwrap()];
    for id in ["machine", "results", "not-measured", "derived", "sweeps", "papers"] {
        assert!(toc.contains(&format!("href=\"#{id}\"")), "contents link to {id}");
        assert!(h.contains(&format!("<section id=\"{id}\">")));
    }
    assert!(!toc.contains("#comparison"), "no comparison asked for");
}

#[test]
fn the_header_says_the_machine_timer_and_sampler_as_the_table_does() {
    let run = run_file(false);
    let h = render(&run, "fixture.json", None).html;
    let machine = section(&h, "machine");
    for (line, _) in header::lines(&run, usize::MAX) {
        assert!(machine.contains(&escape(&line)), "{line}");
    }
    assert!(machine.contains(&run.started_utc));
    let partial = render(&run_file(true), "p.json", None).html;
    assert!(section(&partial, "machine").contains("PARTIAL"));
}

#[test]
fn a_run_without_sweeps_seed_rows_or_samples_says_none_and_draws_nothing() {
    let mut run = run_file(false);
    run.results.retain(|r| r.id == "syscall.getpid" || r.id == "fault.uffd");
    for r in &mut run.results {
        r.samples.clear();
        r.samples_per_round.clear();
    }
    run.results.iter_mut().for_each(|r| r.id = format!("x{}", r.id));
    let page = render(&run, "bare.json", None);
    let h = &page.html;
    assert_eq!(page.plots, 0);
    assert!(h.contains("data-plots=\"0\""));
    assert!(section(h, "results").contains("holds no samples of this result"));
    assert!(section(h, "sweeps").contains("none: this run swept no message size"));
    assert!(section(h, "papers").contains("none: no seed row has a figure today"));
    assert!(section(h, "derived").contains("none."));
    run.results.clear();
    let empty = render(&run, "empty.json", None).html;
    assert!(section(&empty, "results").contains("none: no result in this file was measured"));
    assert!(section(&empty, "not-measured").contains("none: every result was measured"));
}

#[test]
fn two_renders_are_identical() {
    let run = run_file(false);
    let base = run_file(false);
    let named = || Named {
        base_name: "a.json".into(),
        new_name: "b.json".into(),
        base: &base,
        new: &run,
        comparison: analysis::compare::compare(&base, &run, 0.02, 7),
    };
    let (a, b) = (named(), named());
    assert_eq!(render(&run, "b.json", Some(&a)).html, render(&run, "b.json", Some(&b)).html);
}

#[test]
fn a_comparison_draws_a_forest_and_one_with_nothing_in_common_says_so() {
    let run = run_file(false);
    let mut base = run_file(false);
    for (i, s) in base.results.iter_mut().flat_map(|r| r.samples.iter_mut()).enumerate() {
        *s *= if i % 2 == 0 { 1.3 } else { 1.25 };
    }
    let c = analysis::compare::compare(&base, &run, 0.02, 7);
    let compared = c.compared.len();
    assert!(compared > 0);
    let named = Named { base_name: "a.json".into(), new_name: "b.json".into(), base: &base, new: &run, comparison: c };
    let page = render(&run, "b.json", Some(&named));
    let cmp = section(&page.html, "comparison");
    assert_eq!(count(cmp, "<svg class=\"plot\""), 1, "one forest plot");
    let overview = section(&page.html, "overview");
    assert!(overview.contains("<th>new / base</th>"), "the ratios in the overview too");
    assert!(count(overview, "× ") >= compared, "each compared result's ratio: {overview}");
    assert!(!section(&render(&run, "b.json", None).html, "overview").contains("new / base"));
    assert!(cmp.contains(&format!("ratios new / base of {compared} results")));
    assert!(cmp.contains("noise band ± 2 %"));
    assert!(page.html.contains("href=\"#comparison\""));

    let mut other = run_file(false);
    other.results.iter_mut().for_each(|r| r.id = format!("other.{}", r.id));
    let c = analysis::compare::compare(&other, &run, 0.02, 7);
    assert!(c.compared.is_empty());
    let named = Named { base_name: "o.json".into(), new_name: "b.json".into(), base: &other, new: &run, comparison: c };
    let page = render(&run, "b.json", Some(&named));
    let cmp = section(&page.html, "comparison");
    assert!(cmp.contains("No result is in both runs"), "{cmp}");
    assert_eq!(count(cmp, "<svg"), 0);
    assert!(cmp.contains("only in the base run"));
}

#[test]
fn text_from_the_file_is_escaped() {
    let mut run = run_file(false);
    run.results[0].about = "a <script>alert(1)</script> & more".into();
    run.results[0].notes.push("x < y".into());
    run.command = vec!["osprim".into(), "run".into(), "'<b>'".into()];
    let h = render(&run, "<evil>.json", None).html;
    assert!(!h.contains("<script>alert") && h.contains("a &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
    assert!(h.contains("&lt;evil&gt;.json") && !h.contains("<evil>"));
    assert!(h.contains("x &lt; y"));
    assert_eq!(count(&h, "<script>"), 1, "only the page's own script");
}

#[test]
fn bad_numbers_in_a_file_draw_no_nan() {
    let mut run = run_file(false);
    for r in &mut run.results {
        if let Some(s) = r.samples.first_mut() {
            *s = f64::NAN;
        }
        if let Some(s) = r.samples.get_mut(1) {
            *s = f64::INFINITY;
        }
    }
    run.results[0].samples = vec![f64::NAN; 4];
    run.results[0].samples_per_round = vec![1, 1];
    let page = render(&run, "nan.json", None);
    assert!(!page.html.contains("NaN") && !page.html.contains("inf\""), "no NaN or inf coordinate");
    assert!(page.html.contains("no finite sample to draw"));
}

#[test]
fn the_seed_bars_use_the_seed_views_figures() {
    let run = run_file(false);
    let rows = seeds::rows(&run);
    let h = render(&run, "f.json", None).html;
    let papers = section(&h, "papers");
    let bars = rows.iter().filter(|r| r.status == seeds::RowStatus::Measured && then_now(r).is_some()).count();
    if bars == 0 {
        assert!(papers.contains("none:"));
    } else {
        assert!(count(papers, "<svg class=\"plot\"") >= 1);
    }
    for r in rows.iter().filter(|r| r.status == seeds::RowStatus::Measured) {
        if let Some((then, now, _, change)) = then_now(r) {
            let Some(now) = now else {
                assert!(change.starts_with("below resolution"), "{change}");
                continue;
            };
            let ratio = r.ratio_time.or(r.ratio_cycles).or(r.ratio_bytes).unwrap();
            assert!((then / now - ratio).abs() <= 1e-9 * ratio, "the bars say the view's ratio");
            assert!(change.contains('[') || change.contains('×') || change.contains("same"), "{change}");
        }
    }
}

/// A figure today below resolution: the paper's bar alone, with the words, and no ratio.
#[test]
fn a_seed_row_below_resolution_has_no_bar_and_no_ratio() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/default-run.json");
    let mut run = model::read_result_file(&path).unwrap();
    for r in run.results.iter_mut().filter(|r| r.id == "interpose.preload") {
        let s = r.summary.as_mut().unwrap();
        (s.mean, s.mean_ci95) = (3.0, [-2.0, 9.0]);
    }
    let row = seeds::rows(&run).into_iter().find(|r| r.operation == "Intercept non-user-interface message").unwrap();
    let (_, now, unit, change) = then_now(&row).expect("the paper's bar is drawn");
    assert_eq!((now, unit), (None, "time"));
    assert_eq!(change, "below resolution (|x| < 9.000 ns)");
    let h = render(&run, "f.json", None).html;
    let papers = section(&h, "papers");
    assert!(papers.contains("below resolution (|x| &lt; 9.000 ns)"), "the bar's words");
    assert!(papers.contains("faster ["), "the other bars carry their intervals");
}

/// A cold-cache row says its ratio to its hot twin; a row counted with `--counters` its counts
/// per operation; a hot row without counters neither.
#[test]
fn a_cold_row_shows_its_ratio_to_its_hot_twin_and_counted_rows_their_counts() {
    use model::counters::{CounterSummary, Counters};
    let mut run = run_file(false);
    let i = run.results.iter().position(measured).expect("a measured row");
    let plain = render(&run, "f.json", None).html;
    assert!(!plain.contains("cold/hot") && !plain.contains("per operation:"));
    let r = &mut run.results[i];
    model::fixtures::make_cold(r, 3.25, [2.9, 3.6], 41.5);
    let cycles = CounterSummary { event: "cycles".into(), per_op: 312.5, ci95: [310.0, 315.0], samples: 30 };
    r.counters = Some(Counters { events: vec![cycles], missing: Vec::new(), running_share_min: 1.0 });
    let h = render(&run, "f.json", None).html;
    let results = section(&h, "results");
    let article = &results[results.find(&format!("id=\"r{i}\"")).expect("the row's article")..];
    let article = &article[..article.find("</article>").unwrap()];
    let h4 = &article[article.find("<h4>").unwrap()..article.find("</h4>").unwrap()];
    assert!(h4.split(' ').any(|w| w == "cold"), "the label says cold: {h4}");
    assert!(article.contains("<p class=\"cold\">cold/hot 3.2× [2.9, 3.6] against its hot twin"), "{article}");
    assert!(article.contains("400 pairs"), "{article}");
    assert!(article.contains("<p class=\"counters\">per operation: 312 cycles</p>"), "{article}");
    assert_eq!(count(&h, "cold/hot"), 1, "only the cold row");
}

#[test]
fn samples_spanning_the_whole_range_of_doubles_draw_bounded_plots() {
    let mut run = run_file(false);
    for r in &mut run.results {
        let n = r.samples.len().max(4);
        r.samples = (0..n).map(|i| if i % 2 == 0 { -1e308 } else { 1e308 }).collect();
        r.samples[0] = f64::MAX;
        r.samples[1] = -f64::MAX;
        r.samples[2] = f64::INFINITY;
        r.samples[3] = f64::NAN;
        r.samples_per_round = vec![n];
    }
    let page = render(&run, "huge.json", None);
    assert!(page.plots > 0);
    assert!(!page.html.contains("NaN") && !page.html.contains("inf\""), "no NaN or inf coordinate");
    assert!(page.html.len() < 20 << 20, "a page of bounded size: {} bytes", page.html.len());
    assert!(page.html.contains("not finite"), "the left-out values are said");
}

#[test]
fn ticks_of_huge_or_non_finite_ranges_are_few() {
    use crate::svg::{lin_ticks, log_ticks};
    for (lo, hi) in [(-1e308, 1e308), (-f64::MAX, f64::MAX), (f64::NEG_INFINITY, 1.0), (0.0, f64::NAN), (1e-300, 1e300)]
    {
        assert!(lin_ticks(lo, hi).len() <= 51, "{lo} {hi}");
        assert!(log_ticks(lo.abs().max(1e-300), hi).len() <= 51, "{lo} {hi}");
    }
}

/// The texts of the `<text class="label">` elements of `svg`, their lines joined.
fn plot_labels(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in svg.split("<text class=\"label\"").skip(1) {
        let body = &part[part.find('>').unwrap() + 1..part.find("</text>").unwrap()];
        let text: String =
            body.split("<tspan").filter_map(|t| Some(&t[t.find('>')? + 1..t.find("</tspan>")?])).collect();
        out.push(text);
    }
    out
}

#[test]
fn the_overview_has_one_line_per_result_leading_to_its_fold_and_the_papers_in_short() {
    let run = run_file(false);
    let h = render(&run, "f.json", None).html;
    let overview = section(&h, "overview");
    assert!(h.find("<section id=\"overview\">") < h.find("<section id=\"machine\">"), "the overview first");
    let measured: Vec<(usize, &Row)> = run.results.iter().enumerate().filter(|(_, r)| measured(r)).collect();
    let body = &overview[overview.find("<tbody>").unwrap()..overview.find("</tbody>").unwrap()];
    assert_eq!(count(body, "<tr>"), measured.len(), "one line per measured result");
    let mut names: Vec<String> = Vec::new();
    for (i, r) in &measured {
        let line = &body[body.find(&format!("<a href=\"#r{i}\">")).expect("a link to its fold")..];
        let line = &line[..line.find("</tr>").unwrap()];
        let s = r.summary.as_ref().unwrap();
        assert!(line.contains(&escape(&r.unit.format(s.median))), "the median: {line}");
        assert!(line.contains(&escape(&r.unit.format(s.median_ci95[0]))), "the CI: {line}");
        for f in &r.flags {
            assert!(line.contains(f.label()), "flag {}: {line}", f.label());
        }
        if r.unit == Unit::Ns {
            assert!(line.contains("<svg class=\"dot\""), "a dot on the scale: {line}");
        }
        names.push(escape(&label(r)));
        assert!(h.contains(&format!("<article class=\"result\" id=\"r{i}\">\n<details>\n<summary><h4>")));
    }
    let before = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), before, "no two results read the same");
    assert!(overview.contains("<svg class=\"axis\""), "the scale's axis");
    assert!(overview.contains("its 95 % CI (the orange band)"), "the dot plot's legend");
    // The papers in short: a line per paper, with its rows compared and its extremes.
    assert!(overview.contains("<table class=\"papers-summary\">"));
    for s in seeds::paper_summaries(&run) {
        let line = overview.lines().find(|l| l.contains(&escape(&s.system))).unwrap_or_else(|| panic!("{}", s.system));
        assert!(line.contains(&escape(&s.counts_text())), "{line}");
        if let Some(w) = &s.worst {
            assert!(line.contains(&escape(&w.with_interval())), "{line}");
        }
    }
    assert_eq!(count(section(&h, "results"), "<details>\n<summary>"), measured.len(), "each result behind a fold");
}

#[test]
fn no_text_is_under_ten_pixels_and_every_plot_has_its_legend() {
    let run = run_file(false);
    let base = run_file(false);
    let named = Named {
        base_name: "a.json".into(),
        new_name: "b.json".into(),
        base: &base,
        new: &run,
        comparison: analysis::compare::compare(&base, &run, 0.02, 7),
    };
    let page = render(&run, "b.json", Some(&named));
    for size in page.html.split("font-size=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]) {
        assert!(size.parse::<f64>().unwrap() >= 10.0, "an SVG text of {size} px");
    }
    let svgs: Vec<&str> = page.html.split("<svg class=\"plot\"").skip(1).collect();
    assert_eq!(svgs.len(), page.plots);
    for svg in svgs {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        let legend = ["95 % CI of the median", "round's median", "median", "the paper", "noise band"];
        assert!(legend.iter().any(|w| svg.contains(w)), "a plot without a legend: {}", &svg[..200]);
        if svg.contains("fill=\"#fdb863\"") {
            assert!(svg.contains("95 % CI of the median"), "the orange band is named");
        }
    }
}

/// The papers' bars carry the papers view's labels: VMMC's Linux and NT rows, and Rhino's
/// rows on Digital UNIX and on SPIN, read differently, and none is cut.
#[test]
fn the_papers_bars_labels_are_whole_and_tell_their_rows_apart() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/papers-run.json");
    let run = model::read_result_file(&path).unwrap();
    let h = render(&run, "p.json", None).html;
    let papers = section(&h, "papers");
    let mut all = Vec::new();
    for svg in papers.split("<svg class=\"plot\"").skip(1) {
        let labels = plot_labels(&svg[..svg.find("</svg>").unwrap()]);
        let mut sorted = labels.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), labels.len(), "labels read twice in one plot: {labels:#?}");
        assert!(labels.iter().all(|l| !l.contains('…')), "a label cut: {labels:#?}");
        all.extend(labels);
    }
    assert!(all.len() > 50, "{}", all.len());
    let vmmc = |p: &str| all.iter().filter(|l| l.starts_with("Figure 8:") && l.contains(p)).count();
    assert!(vmmc("Linux: ") > 0 && vmmc("Windows NT: ") > 0, "VMMC's platforms: {all:#?}");
    let rhino = |s: &str| all.iter().filter(|l| l.starts_with("Table 2:") && l.contains(s)).count();
    assert!(rhino("Digital UNIX: ") > 0 && rhino("SPIN: ") > 0, "Rhino's systems: {all:#?}");
}
