//! Tests of the seed view on the real fixture (`tests/fixtures/papers-run.json`, the bare `osprim`'s
//! default run with its samples stripped) and on odd input: widths, the summary's length, words for ratios,
//! the exports' numbers read back, LaTeX that compiles, no panic on a partial or old file.

use super::*;
use crate::View;
use crate::csv::papers as render_csv;
use crate::escape::Md;
use crate::latex::papers as render_latex;
use crate::markdown::papers as render_markdown;

fn fixture(name: &str) -> RunFile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name);
    model::read_result_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn default_run() -> RunFile {
    fixture("papers-run.json")
}

fn view(width: usize) -> View {
    View { width, ..View::default() }
}

/// Every line at most `width` characters, none with trailing spaces.
fn assert_fits(text: &str, width: usize) {
    for (i, line) in text.lines().enumerate() {
        assert!(line.chars().count() <= width, "line {} is {} wide (> {width}):\n{line}", i + 1, line.chars().count());
        assert_eq!(line, line.trim_end(), "line {} has trailing spaces", i + 1);
    }
}

/// The text without ANSI escape sequences.
fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn the_view_of_the_fixture_keeps_to_100_and_80_columns_and_the_summary_to_50_lines() {
    let run = default_run();
    for width in [100, 80] {
        let text = render(&run, &view(width));
        assert_fits(&text, width);
        let summary = render_summary(&run, &view(width));
        assert!(text.starts_with(&summary), "the view begins with its summary");
        assert!(summary.lines().count() <= 50, "summary at {width}: {} lines\n{summary}", summary.lines().count());
        assert_fits(&summary, width);
        let all = render(&run, &View { all_rows: true, ..view(width) });
        assert_fits(&all, width);
    }
}

#[test]
fn headings_cite_the_papers_never_a_file_prefix() {
    let text = render(&default_run(), &view(100));
    for p in &seeds::PAPERS {
        assert!(text.contains(&p.heading()) || text.contains(p.system), "{}", p.system);
        assert!(text.contains(p.short_authors), "{}", p.short_authors);
        assert!(!text.contains(&format!("{} {}", p.prefix, p.system)), "file prefix {}", p.prefix);
    }
    for needle in [
        "Lorch & Smith, MobiSys 2003",
        "Table 3: Average time RightSpeed takes to perform common operations",
        "Figure 8: Receive-side notification overhead breakdowns",
        "Table 2: Comparison of critical path latencies",
        "Law & McCann, c. 2000",
        "USENIX Annual Technical Conference, 1998",
        "“Exception Latency”",
    ] {
        assert!(
            text.contains(needle) || render(&default_run(), &View { all_rows: true, ..view(100) }).contains(needle),
            "{needle}"
        );
    }
}

#[test]
fn rows_without_a_figure_are_counted_per_reason_unless_all_rows() {
    let run = default_run();
    let text = render(&run, &view(100));
    let cold_waiting = rows(&run)
        .iter()
        .filter(|r| r.status == RowStatus::Planned && r.reason.as_deref() == Some(seeds::COLD_CACHE_MODE))
        .count();
    if cold_waiting > 0 {
        assert!(text.contains(&format!("{cold_waiting} rows not measured yet (needs cold-cache mode)")), "{text}");
    }
    assert!(text.contains("4 rows need hardware counters"), "{text}");
    assert!(text.contains("not applicable: RightSpeed's own user-level classification"));
    assert!(!text.contains("   ↳ not measured yet"), "collapsed rows are not listed one by one");
    let all = render(&run, &View { all_rows: true, ..view(100) });
    assert!(!all.contains("--all-rows lists them"));
    // Every row has its line under it: the benchmark, or why there is none.
    assert_eq!(all.lines().filter(|l| l.starts_with("   ↳ ")).count(), seeds::figures().len(), "{all}");
}

#[test]
fn the_papers_notes_and_disagreements_are_shown() {
    let text = render(&default_run(), &view(100));
    for needle in ["9.4 + other 14 = 23.4 µs", "26.4", "41 µs", "52 µs", "mean of 10000 runs after discarding 100"] {
        assert!(text.contains(needle), "{needle}");
    }
    assert!(text.contains("file in the file cache"));
}

#[test]
fn ratios_read_as_faster_or_slower_with_three_significant_figures() {
    assert_eq!(change_words(26.74, Change::Time).0, "26.7× faster");
    assert_eq!(change_words(0.004, Change::Time).0, "250× slower");
    assert_eq!(change_words(1180.4, Change::Time).0, "1180× faster");
    assert_eq!(change_words(9.996, Change::Time).0, "10.0× faster");
    assert_eq!(change_words(1.0, Change::Time).0, "1.00× faster");
    assert_eq!(change_words(0.5, Change::Time).0, "2.00× slower");
    assert_eq!(change_words(0.1575, Change::Memory).0, "6.35× more memory");
    assert_eq!(change_words(4.0, Change::Memory).0, "4.00× less memory");
    assert_eq!(sig3(25_987.0), "26000");
    assert_eq!(sig3(999.6), "1000");
    let text = render(&default_run(), &view(100));
    assert!(!text.split_whitespace().any(|w| w.starts_with("0.") && w.ends_with('×')), "no tiny ratios: {text}");
    assert!(text.contains("× slower") && text.contains("× faster"));
}

#[test]
fn rows_carry_the_comparison_and_the_ratio_uses_the_mean() {
    let run = default_run();
    let rows = rows(&run);
    assert_eq!(rows.len(), seeds::figures().len());
    let hz = run.timer.counter_hz().expect("the fixture has a TSC");
    let measured: Vec<&SeedRow> = rows.iter().filter(|r| r.status == RowStatus::Measured).collect();
    assert!(measured.len() >= 60, "{}", measured.len());
    for r in &measured {
        let mean = r.today_mean.or(r.today_median).expect("a measured row has a figure");
        if let (Some(t), Some(x)) = (r.then_ns, r.ratio_time) {
            assert!((t / mean - x).abs() <= 1e-9 * x, "{}", r.label());
        }
        if let (Some(c), Some(x)) = (r.today_cycles, r.ratio_cycles) {
            assert!((c - mean * hz / 1e9).abs() <= 1e-6 * c, "{}", r.label());
            assert!((r.then_cycles.unwrap() / c - x).abs() <= 1e-9 * x);
        }
        assert!(r.reason.is_none());
    }
    let dlopen = rows.iter().find(|r| r.operation == "Load and initialize library for a process").unwrap();
    assert_eq!(dlopen.today_id.as_deref(), Some("lib.dlopen.init"));
    assert_eq!(dlopen.paper, "RightSpeed");
    assert_eq!(dlopen.citation, "Lorch & Smith, MobiSys 2003");
    assert_eq!(dlopen.note.as_deref(), Some("mean of 10000 runs after discarding 100"));
    let begin = rows
        .iter()
        .find(|r| r.system == "Rhino on SPIN" && r.operation == "transaction begin" && r.variant == "trap")
        .unwrap();
    assert_eq!(begin.today_stage.as_deref(), Some("trap"));
    assert_eq!(begin.today_params.as_deref(), Some("detect=mprotect track=all"));
    // NT's stages are notify.softirq's; where the softirq's start cannot be seen, the stage
    // runs on to the wake-up, labelled.
    let dpc = rows.iter().find(|r| r.paper == "VMMC" && r.operation.contains("DPC handler start")).unwrap();
    assert_eq!(dpc.today_id.as_deref(), Some("notify.softirq"));
    assert_eq!(dpc.status, RowStatus::Measured);
    if dpc.today_stage.as_deref() == Some("driver_to_wakeup") {
        assert!(dpc.nearest.as_deref().is_some_and(|w| w.contains("combined")), "{dpc:?}");
    }
    // Linux's interrupt stage, or the combined one where tracepoints cannot be read, labelled.
    let linux = rows
        .iter()
        .find(|r| r.paper == "VMMC" && r.platform == "Linux" && r.operation.contains("driver handler"))
        .unwrap();
    assert_eq!(linux.status, RowStatus::Measured);
    if linux.today_stage.as_deref() == Some("interrupt_signal") {
        assert!(linux.nearest.as_deref().is_some_and(|w| w.contains("combined")), "{linux:?}");
    }
    // A worst case is the cold twin of its best case's benchmark, beside its hot twin, with
    // their ratio; no caveat needed.
    let cold = rows.iter().find(|r| r.operation == "get_stack" && r.variant.contains("cold")).unwrap();
    assert_eq!((cold.status, cold.today_params.as_deref()), (RowStatus::Measured, Some("cache=cold")));
    assert!(cold.caveat.is_none() && cold.beside.as_deref().is_some_and(|b| b.contains("cold/hot")), "{cold:?}");
    let hot = rows.iter().find(|r| r.operation == "get_stack" && r.variant.contains("hot")).unwrap();
    assert_eq!((hot.today_id.as_deref(), hot.today_params.as_deref()), (Some("id.altstack"), None));
}

/// "1401 µs" → (1401, "µs"); "2.42 KiB" → (2.42, "KiB").
fn number_and_unit(cell: &str) -> Option<(f64, String)> {
    let (v, u) = cell.trim().split_once(' ')?;
    Some((v.parse().ok()?, u.trim().to_string()))
}

/// A printed time or size in ns or bytes.
fn today_value(cell: &str) -> Option<f64> {
    let (v, u) = number_and_unit(cell)?;
    let scale = match u.as_str() {
        "ns" | "B" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        _ => return None,
    };
    Some(v * scale)
}

/// The printed cells (then, mean) of each shown row match `rows()` to the printed precision.
fn assert_numbers_match(printed: &[(String, String)], rows: &[SeedRow], what: &str) {
    let shown: Vec<&SeedRow> = rows.iter().filter(|r| r.status == RowStatus::Measured).collect();
    assert_eq!(printed.len(), shown.len(), "{what}: one printed row per measured row");
    for ((then, mean), r) in printed.iter().zip(shown) {
        let (v, u) = number_and_unit(then).unwrap_or_else(|| panic!("{what}: then {then:?}"));
        assert_eq!(v, r.then, "{what}: {}", r.label());
        let unit = match r.then_unit.as_str() {
            "us" => "µs",
            "bytes" => "B",
            other => other,
        };
        assert_eq!(u, unit, "{what}: {}", r.label());
        match r.today_mean {
            Some(m) => {
                let p = today_value(mean).unwrap_or_else(|| panic!("{what}: mean {mean:?} of {}", r.label()));
                assert!((p - m).abs() <= 6e-4 * m.abs(), "{what}: {} printed {p}, is {m}", r.label());
            }
            None => assert_eq!(mean, "-", "{what}: {}", r.label()),
        }
    }
}

#[test]
fn csv_reads_back_to_the_rows() {
    let run = default_run();
    let rows = rows(&run);
    let text = render_csv(&run);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    let fields = serde_json::to_value(&rows[0]).unwrap();
    let names: Vec<&String> = fields.as_object().unwrap().keys().collect();
    assert_eq!(header.len(), names.len(), "one column per field");
    for n in names {
        assert!(header.contains(n), "{n} is a CSV column");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), rows.len());
    for (rec, r) in records.iter().zip(&rows) {
        assert_eq!(rec[col("operation")], r.operation);
        assert_eq!(rec[col("then")].parse::<f64>().unwrap(), r.then);
        let mean = &rec[col("today_mean")];
        assert_eq!(if mean.is_empty() { None } else { Some(mean.parse::<f64>().unwrap()) }, r.today_mean);
        let ratio = &rec[col("ratio_time")];
        assert_eq!(if ratio.is_empty() { None } else { Some(ratio.parse::<f64>().unwrap()) }, r.ratio_time);
        assert_eq!(&rec[col("status")], serde_json::to_value(r.status).unwrap().as_str().unwrap());
    }
}

#[test]
fn json_rows_are_complete() {
    let run = default_run();
    let text = crate::render_papers(&run, crate::Format::Json, &View::default()).unwrap();
    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
    let first = &back.as_array().unwrap()[0];
    for key in [
        "paper",
        "citation",
        "table",
        "operation",
        "variant",
        "then",
        "then_unit",
        "then_ns",
        "then_cycles",
        "today_id",
        "today_params",
        "today_stage",
        "today_mean",
        "today_median",
        "today_cycles",
        "ratio_time",
        "ratio_cycles",
        "status",
        "reason",
        "note",
    ] {
        assert!(first.get(key).is_some(), "{key}");
    }
}

/// The cells of a Markdown table row (`| a | b |`), split at unescaped pipes.
fn md_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '|' if !escaped => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
        escaped = c == '\\' && !escaped;
    }
    cells.into_iter().map(|c| c.trim().replace('\\', "")).collect()
}

#[test]
fn markdown_tables_are_well_formed_and_read_back_to_the_rows() {
    let run = default_run();
    let text = render_markdown(&run, &View::default());
    let mut printed = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with('|') {
            continue;
        }
        let n = md_cells(line).len();
        assert_eq!(n, 7, "line {}: {line}", i + 1);
        if line.starts_with("| operation") {
            assert!(lines[i + 1].starts_with("|---|"), "a separator under each header");
            assert!(i == 0 || lines[i - 1].is_empty(), "a blank line before each table");
            continue;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cells = md_cells(line);
        printed.push((cells[1].clone(), cells[3].clone()));
    }
    assert_numbers_match(&printed, &rows(&run), "markdown");
    for p in &seeds::PAPERS {
        assert!(text.contains(&format!("## {}", Md::Prose.escape(&p.heading()))), "{}", p.system);
    }
}

/// A LaTeX cell back to plain text.
fn untex(s: &str) -> String {
    s.replace("\\textmu{}", "µ").replace("$\\times$", "×").replace("\\_", "_").replace("--", "-").trim().to_string()
}

#[test]
fn latex_is_booktabs_ascii_and_reads_back_to_the_rows() {
    let run = default_run();
    let text = render_latex(&run, &View::default());
    assert!(text.is_ascii(), "plain ASCII: no font or inputenc trouble");
    // A paper's tables in floats each within a column's height: the first labelled by the
    // paper, the rest continued, each a table of rows.
    let floats = text.matches("\\begin{table}").count();
    assert!(floats > 5, "Go!'s tables are taller than a column: {floats} floats");
    assert_eq!(text.matches("\\end{table}").count(), floats);
    for p in &seeds::PAPERS {
        assert_eq!(text.matches(&format!("\\label{{tab:osprim-{}}}", p.key)).count(), 1, "{}", p.key);
    }
    assert_eq!(text.matches("(continued from Table~\\ref{tab:osprim-").count(), floats - 5);
    let mut labels: Vec<&str> = text.split("\\label{").skip(1).filter_map(|l| l.split_once('}')).map(|l| l.0).collect();
    assert_eq!(labels.len(), floats, "a label per float");
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), floats, "no label twice");
    assert!(text.contains("\\label{tab:osprim-go-2}"));
    // Every paper has a row with a figure today (VMMC's: NT's return to the interrupted thread).
    assert_eq!(text.matches("\\begin{tabular*}").count(), floats);
    assert_eq!(text.matches("\\toprule").count(), floats);
    assert_eq!(text.matches("\\bottomrule").count(), floats);
    assert!(text.contains("\\caption{Jacob R. Lorch and Alan Jay Smith"));
    assert!(!text.contains("\\documentclass") && !text.contains("\n\\usepackage"), "a fragment to paste");
    let printed: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("\\multicolumn{")?.split_once(" \\\\ "))
        .map(|(_, figures)| {
            // The operation's line, then its figures: key, then, today, changes.
            let cells: Vec<&str> = figures.trim_end_matches("\\\\").split(" & ").collect();
            assert!(cells.len() >= 4, "{figures}");
            (untex(cells[1]), untex(cells[2]))
        })
        .collect();
    assert_numbers_match(&printed, &rows(&run), "latex");
}

#[test]
fn latex_escapes_its_special_characters() {
    assert_eq!(
        super::super::latex::escape("a_b & 5% $x# {y} ~z ^w \\v"),
        "a\\_b \\& 5\\% \\$x\\# \\{y\\} \\textasciitilde{}z \\textasciicircum{}w \\textbackslash{}v"
    );
    assert_eq!(super::super::latex::escape("8.5 µs, 3× — “q”"), "8.5 \\textmu{}s, 3$\\times$ --- ``q''");
    assert_eq!(super::super::latex::escape("日本"), "??");
}

/// pdflatex compiles the export inside a minimal document, or the test says why it cannot.
#[test]
fn latex_compiles_with_booktabs() {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("pdflatex").is_file()))
        .unwrap_or(false);
    if !found {
        eprintln!(
            "skipped: pdflatex is not on PATH (Debian: apt-get install texlive-latex-base texlive-latex-recommended)"
        );
        return;
    }
    let run = default_run();
    for v in [View::default(), View { all_rows: true, ..View::default() }] {
        let body = render_latex(&run, &v);
        let dir = tempfile::tempdir().unwrap();
        let doc = format!(
            "\\documentclass{{article}}\n\\usepackage{{booktabs}}\n\\begin{{document}}\n{body}\n\\end{{document}}\n"
        );
        std::fs::write(dir.path().join("seeds.tex"), doc).unwrap();
        let out = std::process::Command::new("pdflatex")
            .args(["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "seeds.tex"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() && log.contains("File `booktabs.sty' not found") {
            eprintln!("skipped: booktabs.sty is not installed (Debian: texlive-latex-recommended)");
            return;
        }
        assert!(out.status.success(), "pdflatex failed (all_rows {}):\n{log}", v.all_rows);
        assert!(dir.path().join("seeds.pdf").is_file());
    }
}

#[test]
fn colour_only_when_asked_and_the_width_holds_without_it() {
    let run = default_run();
    let plain = render(&run, &view(100));
    assert!(!plain.contains('\x1b'));
    let colour = render(&run, &View { color: true, ..view(100) });
    assert!(colour.contains("\x1b[1m"), "bold headings");
    assert!(colour.contains("\x1b[32m") && colour.contains("\x1b[33m"), "green faster, yellow slower");
    assert_eq!(strip_ansi(&colour), plain);
}

#[test]
fn wide_shows_the_benchmark_in_a_column() {
    let text = render(&default_run(), &View { wide: true, ..view(100) });
    assert!(text.contains("today's benchmark"));
    assert!(text.lines().any(|l| l.contains("Install message hook") && l.contains("signal.install")));
}

#[test]
fn odd_input_renders_without_panic_and_keeps_to_the_width() {
    let mut runs = Vec::new();
    let mut partial = default_run();
    partial.partial = true;
    partial.finished_utc = None;
    partial.results.truncate(20);
    runs.push(partial);
    let mut empty = default_run();
    empty.results.clear();
    runs.push(empty);
    let mut broken = default_run();
    for r in &mut broken.results {
        if let Some(s) = r.summary.as_mut() {
            s.mean = f64::NAN;
            s.median = -1.0;
        }
        r.status = Status::Skipped;
        r.reason = Some("a reason".into());
    }
    broken.timer.freq_hz = f64::NAN;
    broken.timer.calibrated_hz = None;
    broken.machine = Default::default();
    runs.push(broken);
    runs.push(fixture("schema1.json"));
    runs.push(fixture("schema2.json"));
    for run in &runs {
        for v in [view(100), view(80), view(20), View { all_rows: true, ..view(80) }] {
            let text = render(run, &v);
            assert_fits(&text, v.width.max(40));
            if v.width >= 80 {
                assert!(render_summary(run, &v).lines().count() <= 50);
            }
            let _ = render_markdown(run, &v);
            assert!(render_latex(run, &v).is_ascii());
        }
        let _ = render_csv(run);
        assert!(rows(run).iter().all(|r| r.ratio_time.is_none_or(|x| x.is_finite() && x > 0.0)));
    }
    let partial = render(&runs[0], &view(100));
    assert!(partial.contains("PARTIAL RUN"));
    assert!(partial.contains("not in this result"));
}

#[test]
fn markdown_of_the_fixture() {
    insta::assert_snapshot!(render_markdown(&default_run(), &View::default()));
}

#[test]
fn latex_of_the_fixture() {
    insta::assert_snapshot!(render_latex(&default_run(), &View::default()));
}

#[test]
fn text_of_the_fixture_at_100_columns() {
    insta::assert_snapshot!(render(&default_run(), &view(100)));
}

#[test]
fn text_of_the_fixture_at_80_columns() {
    insta::assert_snapshot!(render(&default_run(), &view(80)));
}

/// Same condition: on the real fixture no row sets a hot figure beside a cold one, or the
/// reverse, and every cold-cache row either is measured cold or waits for that mode.
#[test]
fn no_row_sets_a_hot_figure_beside_a_cold_one() {
    for r in rows(&default_run()) {
        assert!(
            !r.caveat.as_deref().unwrap_or("").contains("conditions differ"),
            "{} {}: {:?}",
            r.system,
            r.label(),
            r.caveat
        );
        if r.variant.contains("cold cache") {
            assert!(
                r.today_params.as_deref().unwrap_or("").contains("cache=cold")
                    || r.reason.as_deref() == Some(seeds::COLD_CACHE_MODE)
                    || r.status == RowStatus::NotApplicable,
                "{}: {:?} {:?}",
                r.label(),
                r.today_params,
                r.reason
            );
        }
    }
}

/// Parts add up: in the fixture, every transaction and user-level fault result with `trap`
/// and `other` stages has them add up to its total within 10 %, in both tracking modes;
/// and Rhino's seed rows with parts read them from those results.
#[test]
fn rhino_trap_and_other_add_up_to_the_total_in_both_modes() {
    let run = default_run();
    let mut modes = std::collections::BTreeSet::new();
    let mut checked = 0;
    for r in run.results.iter().filter(|r| r.id.starts_with("txn.") || r.id.starts_with("fault.user.sigsegv")) {
        let (Some(total), Some(stages)) = (&r.summary, &r.breakdown) else { continue };
        let stage = |n: &str| stages.iter().find(|s| s.name == n).map(|s| s.summary.mean);
        let (Some(trap), Some(other)) = (stage("trap"), stage("other")) else { continue };
        assert!(
            (trap + other - total.mean).abs() <= 0.1 * total.mean,
            "{} {:?}: trap {trap} + other {other} vs total {}",
            r.id,
            r.params,
            total.mean
        );
        if let Some(m) = r.params.get("track").and_then(|v| v.as_str()) {
            modes.insert(m.to_string());
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} results with trap and other");
    assert!(modes.contains("all"), "{modes:?}");
    let rows = rows(&run);
    for total in rows.iter().filter(|r| r.system == "Rhino on SPIN" && r.variant == "total") {
        let part = |v: &str| {
            rows.iter().find(|r| r.system == total.system && r.operation == total.operation && r.variant == v)
        };
        let (Some(trap), Some(other)) = (part("trap"), part("other")) else { continue };
        if total.operation == "null call" {
            continue;
        }
        assert_eq!((&trap.today_id, &trap.today_params), (&total.today_id, &total.today_params), "{}", total.operation);
        assert_eq!((&other.today_id, &other.today_params), (&total.today_id, &total.today_params));
        if let (Some(t), Some(a), Some(b)) = (total.today_mean, trap.today_mean, other.today_mean) {
            assert!((a + b - t).abs() <= 0.1 * t, "{}: {a} + {b} vs {t}", total.operation);
        }
    }
}

/// A `nearest:` row takes the fastest candidate by the papers' statistic, names it, and lists
/// the others beside it; when the fastest changes, so does the row.
#[test]
fn a_nearest_row_takes_the_fastest_hand_off_and_names_it() {
    let mut run = default_run();
    let intra = |run: &RunFile| {
        rows(run).into_iter().find(|r| r.operation == "intra-address space IPC" && r.then_unit == "cycles").unwrap()
    };
    let row = intra(&run);
    assert_eq!(row.status, RowStatus::Measured);
    assert!(row.nearest.is_some());
    let picked = row.today_id.clone().unwrap();
    assert!(["ipc.futex", "ipc.eventfd", "ipc.pipe"].contains(&picked.as_str()), "{picked}");
    let beside = row.beside.clone().unwrap_or_default();
    assert!(beside.starts_with("also measured:") && !beside.contains(&format!("{picked} ")), "{beside}");
    // Make another candidate the fastest: the row follows.
    let other = if picked == "ipc.pipe" { "ipc.futex" } else { "ipc.pipe" };
    for r in run
        .results
        .iter_mut()
        .filter(|r| r.id == other && r.params.get("peer").and_then(|v| v.as_str()) == Some("thread"))
    {
        if let Some(s) = r.summary.as_mut() {
            s.mean = 1.0;
        }
    }
    let row = intra(&run);
    assert_eq!(row.today_id.as_deref(), Some(other));
    assert_eq!(row.today_mean, Some(1.0));
    let text = render(&run, &view(100));
    assert!(text.contains(&format!("nearest: {other}")), "{text}");
}

/// `text` with every run of white space one space (a wrapped paragraph on one line).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fixture with `id`'s mean and its interval replaced (every row of that id).
fn with_mean(mut run: RunFile, id: &str, mean: f64, ci: [f64; 2]) -> RunFile {
    let mut found = false;
    for r in run.results.iter_mut().filter(|r| r.id == id) {
        let s = r.summary.as_mut().expect("a measured row");
        (s.mean, s.mean_ci95) = (mean, ci);
        found = true;
    }
    assert!(found, "{id} in the fixture");
    run
}

/// The number before `what` in `paper`'s summary paragraph ("of 6 conclusive rows", "1
/// inconclusive"), 0 when it says none.
fn summary_number(run: &RunFile, paper: &str, what: &str) -> usize {
    let summary = render_summary(run, &view(100));
    let lines: Vec<&str> =
        summary.lines().skip_while(|l| !l.starts_with(paper)).take_while(|l| !l.is_empty()).collect();
    let text = flat(&lines.join(" "));
    let words: Vec<&str> = text.split(' ').collect();
    let first = what.split(' ').next().unwrap_or(what);
    words
        .windows(2)
        .find(|w| w[1].trim_end_matches([',', ';']).starts_with(first) && w[0].parse::<usize>().is_ok())
        .and_then(|w| w[0].parse().ok())
        .unwrap_or(0)
}

/// The row of `operation` (its first, when the paper has several variants).
fn row_of<'a>(rows: &'a [SeedRow], operation: &str) -> &'a SeedRow {
    rows.iter().find(|r| r.operation == operation).unwrap_or_else(|| panic!("{operation}"))
}

/// `interpose.preload` (with minus without) whose interval includes 0: no ratio anywhere, in any
/// format; the summary leaves it out and says so.
#[test]
fn a_difference_below_resolution_has_no_ratio_in_any_format() {
    const OP: &str = "Intercept non-user-interface message";
    // A difference well beyond one clock read, with a narrow interval: a conclusive row.
    let clear = with_mean(default_run(), "interpose.preload", 500.0, [490.0, 510.0]);
    let base = rows(&clear);
    let before = row_of(&base, OP);
    assert!(before.ratio_time.is_some() && before.reading == Some(Reading::Better), "{before:?}");
    let totals = summary_number(&clear, "RightSpeed", "totals");
    let answered = summary_number(&clear, "RightSpeed", "of");
    let run = with_mean(default_run(), "interpose.preload", 3.0, [-2.0, 9.0]);
    let rows = rows(&run);
    let r = row_of(&rows, OP);
    assert_eq!(r.status, RowStatus::Measured);
    assert_eq!((r.ratio_time, r.ratio_cycles, r.ratio_time_ci95_lo), (None, None, None));
    assert_eq!((r.reading, r.reading_cycles), (Some(Reading::BelowResolution), Some(Reading::BelowResolution)));
    assert_eq!(r.below_resolution, Some(9.0));
    assert_eq!((r.today_ci95_lo, r.today_ci95_hi), (Some(-2.0), Some(9.0)));

    // Text, at every width: the row says so, and carries no ratio.
    for width in [100, 80] {
        let text = render(&run, &view(width));
        assert_fits(&text, width);
        let at = text.lines().position(|l| l.contains("Intercept non-user-interface")).expect("the row");
        let row_lines: Vec<&str> = text
            .lines()
            .skip(at)
            .take_while(|l| !l.starts_with(" Intercept and") && !l.starts_with(" Simple I/O"))
            .collect();
        let row_text = row_lines.join("\n");
        assert!(row_text.contains("below resolution (|x| < 9.000 ns)"), "{row_text}");
        assert!(!row_text.contains('×'), "no ratio: {row_text}");
        // The summary: one total fewer in the median, and one row fewer answered: below
        // resolution is not an answer.
        let summary = render_summary(&run, &view(width));
        let rs: Vec<&str> =
            summary.lines().skip_while(|l| !l.starts_with("RightSpeed")).take_while(|l| !l.is_empty()).collect();
        let rs = flat(&rs.join(" "));
        assert!(rs.contains(&format!("over {} totals", totals - 1)), "{rs}");
        assert!(rs.contains(&format!("{} of 16 rows compared", answered - 1)), "{rs}");
        assert!(rs.contains("not answered: 1 below resolution"), "{rs}");
        assert!(!rs.contains("Intercept non-user-interface"), "neither best nor worst: {rs}");
    }
    // Markdown.
    let md_text = render_markdown(&run, &View::default());
    let line = md_text.lines().find(|l| l.contains("Intercept non-user-interface")).unwrap();
    assert!(line.contains("below resolution (\\|x\\| \\< 9.000 ns)") && !line.contains('×'), "{line}");
    // LaTeX.
    let tex = render_latex(&run, &View::default());
    let line = tex.lines().find(|l| l.contains("Intercept non-user-interface")).unwrap();
    assert!(line.contains("below\\\\{}resolution") && !line.contains("times"), "{line}");
    // CSV and JSON: the ratio columns empty, the reading said.
    let csv_text = render_csv(&run);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rec = reader.records().map(Result::unwrap).find(|r| &r[col("operation")] == OP).unwrap();
    for c in ["ratio_time", "ratio_time_ci95_lo", "ratio_time_ci95_hi", "ratio_cycles"] {
        assert_eq!(&rec[col(c)], "", "{c}");
    }
    assert_eq!((&rec[col("reading")], &rec[col("below_resolution")]), ("below_resolution", "9.0"));
    let json = crate::render_papers(&run, crate::Format::Json, &View::default()).unwrap();
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    let j = back.as_array().unwrap().iter().find(|r| r["operation"] == OP).unwrap();
    assert!(j["ratio_time"].is_null() && j["ratio_cycles"].is_null(), "{j}");
    assert_eq!(j["reading"], "below_resolution");
}

/// A ratio whose interval holds 1 and reaches beyond ±10 % reads "inconclusive", one wholly
/// within reads "≈ same"; the summary's median keeps both (revision 4: a median over only the
/// conclusive rows changes with which rows happen to be conclusive), its range only the second.
#[test]
fn a_ratio_holding_one_is_inconclusive_unless_within_the_threshold() {
    const HOOK: &str = "Install message hook"; // 8.532 µs then
    let run = with_mean(default_run(), "signal.install", 8000.0, [4000.0, 16_000.0]);
    let rows = rows(&run);
    let r = row_of(&rows, HOOK);
    assert_eq!(r.reading, Some(Reading::Inconclusive));
    let (lo, hi) = (r.ratio_time_ci95_lo.unwrap(), r.ratio_time_ci95_hi.unwrap());
    assert!((lo - 8532.0 / 16_000.0).abs() < 1e-12 && (hi - 8532.0 / 4000.0).abs() < 1e-12, "{lo} {hi}");
    let text = render(&run, &view(100));
    let line = text.lines().find(|l| l.starts_with(" Install message hook")).unwrap();
    assert!(line.contains("inconclusive [0.533, 2.13]") && !line.contains("faster"), "{line}");
    let same = with_mean(default_run(), "signal.install", 8500.0, [8300.0, 8700.0]);
    let totals = summary_number(&same, "RightSpeed", "totals");
    assert_eq!(summary_number(&run, "RightSpeed", "totals"), totals, "an inconclusive total stays in the median");
    let summaries = |run: &RunFile| summary::summarize(&seeds::PAPERS[0], &super::rows(run));
    assert_eq!(summaries(&run).conclusive + 1, summaries(&same).conclusive, "the range is the conclusive rows'");
    let summary = render_summary(&run, &view(100));
    let rs: Vec<&str> =
        summary.lines().skip_while(|l| !l.starts_with("RightSpeed")).take_while(|l| !l.is_empty()).collect();
    assert!(!flat(&rs.join(" ")).contains("inconclusive"), "nothing left out as inconclusive: {rs:?}");

    let run = same;
    let r = super::rows(&run).into_iter().find(|r| r.operation == HOOK).unwrap();
    assert_eq!(r.reading, Some(Reading::Same));
    let text = render(&run, &view(100));
    let line = text.lines().find(|l| l.starts_with(" Install message hook")).unwrap();
    assert!(line.contains("≈ same [0.981, 1.03]"), "{line}");
    assert!(flat(&render_summary(&run, &view(100))).contains(&format!("over {totals} totals")));
    // A real change smaller than the threshold, of unknown size: inconclusive too.
    let run = with_mean(default_run(), "signal.install", 8000.0, [7000.0, 8400.0]);
    assert_eq!(
        super::rows(&run).into_iter().find(|r| r.operation == HOOK).unwrap().reading,
        Some(Reading::Inconclusive)
    );
}

/// Rows answered by one result of today's count once in the median: Rhino's Digital UNIX and
/// SPIN totals are one result each, their ratios combined by their geometric mean; every total
/// with a ratio is in it, inconclusive ones too.
#[test]
fn the_summary_median_counts_a_figure_of_todays_once() {
    let run = default_run();
    let rows = rows(&run);
    let used: Vec<&SeedRow> = rows
        .iter()
        .filter(|r| r.paper == "Rhino" && r.resolved())
        .filter(|r| !r.part && r.caveat.is_none() && r.ratio_time.is_some())
        .collect();
    let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
    for r in &used {
        let key = figure_key(r);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r.ratio_time.unwrap()),
            None => groups.push((key, vec![r.ratio_time.unwrap()])),
        }
    }
    assert!(groups.len() < used.len(), "Rhino's two systems share today's figures");
    let summary = flat(&render_summary(&run, &view(100)));
    assert!(summary.contains(&format!("over {} totals", used.len())), "{summary}");
    let rhino = seeds::PAPERS.iter().find(|p| p.key == "rhino").unwrap();
    assert_eq!(summary::summarize(rhino, &rows).in_median_distinct, groups.len());
    let v: Vec<f64> =
        groups.iter().map(|(_, v)| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()).collect();
    let m = summary::median_log(v).unwrap();
    assert!(summary.contains(&format!("median {} [", change_words(m, Change::Time).0)), "{m} {summary}");
}

/// Every ratio's interval is the paper's exact figure over today's interval of the mean, and
/// holds the ratio; the seed method's run says how its means were taken.
#[test]
fn ratio_intervals_come_from_the_means_interval_and_follow_the_method() {
    let mut run = default_run();
    for r in rows(&run).iter().filter(|r| r.ratio_time.is_some()) {
        let (x, lo, hi) = (r.ratio_time.unwrap(), r.ratio_time_ci95_lo.unwrap(), r.ratio_time_ci95_hi.unwrap());
        assert!(lo <= x * (1.0 + 1e-12) && x <= hi * (1.0 + 1e-12), "{}: {lo} {x} {hi}", r.label());
        let then = r.then_ns.unwrap();
        assert!((then / r.today_ci95_hi.unwrap() - lo).abs() <= 1e-9 * lo, "{}", r.label());
        assert!((then / r.today_ci95_lo.unwrap() - hi).abs() <= 1e-9 * hi, "{}", r.label());
    }
    let hook = run.results.iter().find(|r| r.id == "signal.install").unwrap();
    let ci = hook.summary.as_ref().unwrap().mean_ci95;
    let r = rows(&run).into_iter().find(|r| r.operation == "Install message hook").unwrap();
    assert_eq!((r.today_ci95_lo, r.today_ci95_hi), (Some(ci[0]), Some(ci[1])), "the mean's interval");
    assert!(flat(&render(&run, &view(100))).contains("adaptive sampling"));
    run.config.method = model::Method::Seed;
    for r in &mut run.results {
        r.method = model::Method::Seed;
    }
    let text = render(&run, &view(100));
    let text = flat(&text);
    assert!(text.contains("seed method") && !text.contains("adaptive sampling"), "{text}");
    assert!(render_markdown(&run, &View::default()).contains("seed method"));
}

/// A benchmark that did not run leaves one record without the parameters its results would
/// have had: every row it answers says why (the skip reason), never "not in this result".
#[test]
fn the_row_matcher_finds_skipped_benchmarks() {
    let mut run = default_run();
    run.results.retain(|r| r.id != "fault.user.sigsegv");
    let mut skipped = Row::empty("fault.user.sigsegv", "user-level page fault", Default::default(), Method::Adaptive);
    skipped.reason = Some("no such mechanism in this test".into());
    run.results.push(skipped);
    let faults: Vec<SeedRow> = rows(&run).into_iter().filter(|r| r.operation.starts_with("page fault")).collect();
    assert_eq!(faults.len(), 24, "Rhino's page-fault rows");
    for r in &faults {
        assert_eq!(r.status, RowStatus::NotInResult, "{}", r.label());
        assert_eq!(r.reason.as_deref(), Some("skipped: no such mechanism in this test"), "{}", r.label());
    }
    let text = render(&run, &view(100));
    assert!(!text.contains("not in this result"), "{text}");
    assert!(flat(&text).contains("24 rows skipped: no such mechanism in this test"), "{text}");
}

/// A paper's heading counts the distinct figures of today's its compared rows show (Rhino's
/// totals and their parts share results), and its median rests on totals only.
#[test]
fn the_summary_counts_distinct_figures_and_its_median_rests_on_totals() {
    let run = default_run();
    let rows = rows(&run);
    let rhino: Vec<&SeedRow> = rows.iter().filter(|r| r.paper == "Rhino").collect();
    let answered: Vec<&&SeedRow> = rhino.iter().filter(|r| r.resolved()).collect();
    let mut keys: Vec<String> = answered.iter().map(|r| figure_key(r)).collect();
    keys.sort_unstable();
    keys.dedup();
    assert!(keys.len() < answered.len(), "Rhino's rows share figures");
    let summary = flat(&render_summary(&run, &view(100)));
    let head = format!("{} of {} rows compared ({} distinct figures", answered.len(), rhino.len(), keys.len());
    assert!(summary.contains(&head), "{head}\n{summary}");
    let parts = answered.iter().filter(|r| r.part).count();
    assert!(parts > 0);
    assert!(summary.contains(&format!("{parts} parts of a breakdown")), "{summary}");
    // Only totals are in its median: as many as the totals with a ratio.
    let totals = answered.iter().filter(|r| !r.part && r.caveat.is_none() && r.ratio_time.is_some()).count();
    assert!(summary.contains(&format!("over {totals} totals")), "{totals}\n{summary}");
}

/// A result whose stages do not add up to its total (written by hand, or by something else) is
/// refused: no part of it is shown, and the row says why; the total itself still is.
#[test]
fn stages_that_do_not_add_up_are_refused() {
    let mut run = default_run();
    let mut edited = 0;
    for r in run.results.iter_mut().filter(|r| r.id == "txn.begin") {
        for s in r.breakdown.iter_mut().flatten().filter(|s| s.name == "trap") {
            s.summary.mean *= 3.0;
            edited += 1;
        }
    }
    assert!(edited > 0, "txn.begin has a trap stage in the fixture");
    let rows = rows(&run);
    let begin = |variant: &str| {
        rows.iter()
            .find(|r| r.system == "Rhino on SPIN" && r.operation == "transaction begin" && r.variant == variant)
            .unwrap()
    };
    for part in ["trap", "other"] {
        let r = begin(part);
        assert_eq!(r.status, RowStatus::NotInResult, "{part}");
        let why = r.reason.as_deref().unwrap_or_default();
        assert!(why.starts_with("refused: its stages do not add up: trap "), "{why}");
    }
    assert_eq!(begin("total").status, RowStatus::Measured);
    assert!(stages_add_up("txn.begin", "trap", &[], None).is_err(), "a stage without a total");
}

/// L4Ka's rows in retired instructions: filled from the hardware counters where the result
/// has them (then ÷ now with today's interval, "fewer instructions"); otherwise the row says
/// why (the counters' own reason), and is not compared.
#[test]
fn instruction_rows_read_the_counters_or_say_why_not() {
    use model::counters::{CounterSummary, Counters, MissingEvent};
    let row = |run: &RunFile| {
        rows(run).into_iter().find(|r| r.operation == "empty system call" && r.then_unit == "instructions").unwrap()
    };
    let mut run = default_run();
    let null = run.results.iter_mut().find(|r| r.id == "syscall.null").expect("syscall.null in the fixture");
    null.counters = Some(Counters {
        missing: vec![MissingEvent { event: "instructions".into(), reason: "no PMU in this test".into() }],
        ..Counters::default()
    });
    let r = row(&run);
    assert_eq!(r.status, RowStatus::NeedsCounters);
    assert!(r.reason.as_deref().unwrap_or_default().ends_with("; no PMU in this test"), "{:?}", r.reason);

    let null = run.results.iter_mut().find(|r| r.id == "syscall.null").unwrap();
    null.counters = Some(Counters {
        events: vec![CounterSummary {
            event: "instructions".into(),
            per_op: 250.0,
            ci95: [245.0, 255.0],
            samples: 100,
        }],
        ..Counters::default()
    });
    let r = row(&run);
    assert_eq!(r.status, RowStatus::Measured);
    assert_eq!((r.today_unit.as_deref(), r.today_mean), (Some("instructions"), Some(250.0)));
    let x = r.ratio_count.unwrap();
    assert!((x - 27.17 / 250.0).abs() < 1e-12, "{x}");
    assert!((r.ratio_count_ci95_lo.unwrap() - 27.17 / 255.0).abs() < 1e-12);
    assert_eq!(r.reading, Some(Reading::Worse));
    let text = flat(&render(&run, &view(100)));
    assert!(text.contains("250.0 instr") && text.contains("9.20× more instructions"), "{text}");
    // Core cycles counted by the PMU stand in for the counter's reference cycles.
    let null = run.results.iter_mut().find(|r| r.id == "syscall.null").unwrap();
    if let Some(c) = null.counters.as_mut() {
        c.events.push(CounterSummary { event: "cycles".into(), per_op: 300.0, ci95: [290.0, 310.0], samples: 100 });
    }
    let cycles =
        rows(&run).into_iter().find(|r| r.operation == "empty system call" && r.then_unit == "cycles").unwrap();
    assert_eq!(cycles.today_cycles, Some(300.0));
    assert!((cycles.ratio_cycles.unwrap() - 51.73 / 300.0).abs() < 1e-12);
    assert!(cycles.beside.as_deref().is_some_and(|b| b.contains("core cycles counted by the PMU")), "{cycles:?}");
}

#[test]
fn go_stability_rows_show_the_longest_clean_run_without_a_ratio_or_say_how_to_get_one() {
    use model::stability::{Outcome, StabilityRun, StabilityTest};
    let stability =
        |run: &RunFile| -> Vec<SeedRow> { rows(run).into_iter().filter(|r| r.table == "Stability").collect() };
    let mut run = default_run();
    let none = stability(&run);
    assert_eq!(none.len(), 2);
    assert!(
        none.iter().all(|r| r.status == RowStatus::Planned
            && r.reason.as_deref().is_some_and(|w| w.contains("none is in this result or in this machine's history"))),
        "{none:?}"
    );
    let clean = |clean_s: f64, seed: u64| StabilityRun {
        test: StabilityTest::Stress,
        seed,
        mode: "mprotect".into(),
        settings: Vec::new(),
        requested_s: clean_s,
        ran_s: clean_s,
        clean_s,
        outcome: Outcome::Clean,
        operations: Vec::new(),
        results: Vec::new(),
        invariants: Vec::new(),
        trend: Vec::new(),
        notes: vec!["recorded 2026-11-27T16:00:00Z".into()],
        short: false,
    };
    run.stability = vec![clean(60.0, 1), clean(3600.0, 2)];
    let rows = stability(&run);
    let stress = rows.iter().find(|r| r.operation.starts_with("stress")).unwrap();
    assert_eq!(stress.status, RowStatus::Measured);
    assert_eq!((stress.today_mean, stress.today_id.as_deref()), (Some(3600e9), Some("stability.stress")));
    assert_eq!(stress.ratio_time, None, "a duration has no interval: no ratio");
    assert!(
        stress.caveat.as_deref().unwrap().starts_with(
            "the longest in this machine's history (`osprim stress`, recorded 2026-11-27T16:00:00Z): 1 h without a \
             failure, against the paper's 4 days; seed 2"
        ),
        "{stress:?}"
    );
    let error = rows.iter().find(|r| r.operation.starts_with("error")).unwrap();
    assert_eq!(error.status, RowStatus::Planned, "a stress run says nothing of the error test");
}

/// The seed suite's short tests: each row shows this run's short test as one (its seconds
/// against the paper's days), a longer run lent from the history replaces it and says where it
/// comes from, and a failure the short test found is the row's reading, with its reason.
#[test]
fn a_short_stability_test_shows_as_one_and_a_longer_history_run_replaces_it() {
    use model::stability::{Outcome, StabilityRun, StabilityTest};
    let stability = |run: &RunFile, test: &str| -> SeedRow {
        rows(run).into_iter().find(|r| r.table == "Stability" && r.operation.starts_with(test)).unwrap()
    };
    let short = |test, clean_s: f64, outcome| StabilityRun {
        test,
        seed: 11,
        mode: "mprotect".into(),
        settings: Vec::new(),
        requested_s: 3.0,
        ran_s: clean_s,
        clean_s,
        outcome,
        operations: Vec::new(),
        results: Vec::new(),
        invariants: Vec::new(),
        trend: Vec::new(),
        notes: Vec::new(),
        short: true,
    };
    let mut run = default_run();
    run.stability = vec![
        short(StabilityTest::Stress, 3.0, Outcome::Clean),
        short(StabilityTest::ErrorTest, 1.25, Outcome::Interrupted { at_s: 1.25 }),
    ];
    let stress = stability(&run, "stress");
    assert_eq!((stress.status, stress.today_mean, stress.ratio_time), (RowStatus::Measured, Some(3e9), None));
    let caveat = stress.caveat.clone().unwrap();
    assert!(
        caveat.starts_with(
            "this run's short test (the seed suite's): 3.000 s without a failure, against the paper's 4 days; a \
             short test"
        ) && caveat.contains("a longer `osprim stress`, once in the history, replaces it; seed 11"),
        "{caveat}"
    );
    let error = stability(&run, "error");
    assert!(
        error.caveat.as_deref().unwrap().contains(
            "1.250 s without a failure, against the paper's 4 days (interrupted after 1.250 s, clean until then)"
        ),
        "Ctrl-C keeps what was measured: {error:?}"
    );

    // A longer run from the history (as `osprim papers` lends it) replaces the short one.
    let mut lent = short(StabilityTest::Stress, 7200.0, Outcome::Clean);
    (lent.short, lent.seed) = (false, 12);
    lent.notes.push("recorded 2026-12-01T10:00:00Z, osprim-results/stability/a.json".into());
    run.stability.push(lent);
    let stress = stability(&run, "stress");
    assert_eq!(stress.today_mean, Some(7200e9));
    assert!(
        stress.caveat.as_deref().unwrap().starts_with(
            "the longest in this machine's history (`osprim stress`, recorded 2026-12-01T10:00:00Z, \
             osprim-results/stability/a.json): 2 h without a failure, against the paper's 4 days; seed 12"
        ),
        "{stress:?}"
    );

    // A failure this run's short test found is the reading, whatever ran longer before.
    run.stability[0].outcome = Outcome::Failed {
        at_s: 0.5,
        what: "domain 3 saw rights of 4".into(),
        replay: "osprim stress --seed 11".into(),
    };
    run.stability[0].clean_s = 0.5;
    let stress = stability(&run, "stress");
    assert_eq!((stress.status, stress.today_mean), (RowStatus::NotInResult, None));
    assert_eq!(
        stress.reason.as_deref(),
        Some(
            "failed: this run's short test (the seed suite's) found a failure after 500.0 ms: domain 3 saw rights of \
             4 (seed 11; replay: osprim stress --seed 11); the longest clean run known: 2 h (the longest in this \
             machine's history (`osprim stress`, recorded 2026-12-01T10:00:00Z, osprim-results/stability/a.json))"
        )
    );
}

mod rev4;
