//! Round trips of the exports on a real run (`tests/fixtures/default-run.json`, 175 rows, plus
//! a fitted sweep row added here, since a default run fits none): the CSV, read back with the
//! csv crate, holds every figure of the file exactly; the Markdown and LaTeX tables, parsed
//! back, hold them to the precision printed (4 significant digits), and have as many cells in
//! every row as in their header.

use model::{Row, RunFile, Status, Summary, SweepFit, Unit};
use report::{View, csv, latex, markdown};
use serde_json::Value;
use std::path::Path;

fn fixture() -> RunFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let mut run = model::read_result_file(&path).expect("the fixture reads");
    run.results.push(crate::common::fitted_row(&run));
    run
}

/// `a` equals `b` exactly, NaN equal to NaN.
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fn the_summary_figures(s: &Summary) -> Vec<(&'static str, f64)> {
    vec![
        ("median", s.median),
        ("median_ci95_lo", s.median_ci95[0]),
        ("median_ci95_hi", s.median_ci95[1]),
        ("mean", s.mean),
        ("mean_ci95_lo", s.mean_ci95[0]),
        ("mean_ci95_hi", s.mean_ci95[1]),
        ("min", s.min),
        ("p1", s.p1),
        ("p5", s.p5),
        ("p95", s.p95),
        ("p99", s.p99),
        ("max", s.max),
        ("stddev", s.stddev),
        ("mad", s.mad),
        ("n", s.n as f64),
    ]
}

#[test]
fn csv_holds_every_figure_exactly() {
    let run = fixture();
    let text = csv::render(&run);
    let mut reader = ::csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().expect("header").iter().map(String::from).collect();
    assert_eq!(&header[..csv::COLUMNS.len()], csv::COLUMNS, "the fixed columns come first, in order");
    let params = csv::param_columns(&run);
    let names: Vec<&str> = params.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "parameters sorted: {names:?}");
    for expected in ["access", "bytes", "cpus", "peer", "placement"] {
        assert!(names.contains(&expected), "{expected} has a column: {names:?}");
    }
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let records: Vec<::csv::StringRecord> = reader.records().map(|r| r.expect("a record")).collect();
    let f = |rec: &::csv::StringRecord, name: &str| -> f64 {
        rec[col(name)].parse().unwrap_or_else(|e| panic!("{name} = {:?}: {e}", &rec[col(name)]))
    };
    let mut lines = records.iter();
    let mut stage_lines = 0;
    for (i, r) in run.results.iter().enumerate() {
        let rec = lines.next().expect("a line per row");
        assert_eq!(rec.len(), header.len());
        assert_eq!(&rec[col("row")], i.to_string());
        assert_eq!(&rec[col("id")], r.id);
        assert_eq!(&rec[col("stage")], "", "a row's own line has no stage");
        assert_eq!(&rec[col("unit")], serde_json::to_value(r.unit).unwrap().as_str().unwrap());
        assert_eq!(&rec[col("status")], serde_json::to_value(r.status).unwrap().as_str().unwrap());
        assert_eq!(&rec[col("verdict")], serde_json::to_value(r.validation.verdict).unwrap().as_str().unwrap());
        let flags: Vec<Value> = r.flags.iter().map(|f| serde_json::to_value(f).unwrap()).collect();
        let flags: Vec<&str> = flags.iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(&rec[col("flags")], flags.join(" "));
        assert_eq!(&rec[col("reason")], r.reason.clone().unwrap_or_default());
        assert_eq!(&rec[col("notes")], r.notes.join(" | "));
        assert_eq!(&rec[col("run_partial")], run.partial.to_string());
        for (name, column) in &params {
            let cell = &rec[col(column)];
            match r.params.get(name) {
                None | Some(Value::Null) => assert_eq!(cell, "", "{} {name}", r.id),
                Some(Value::String(s)) => assert_eq!(cell, s, "strings unquoted"),
                Some(v) => assert_eq!(&serde_json::from_str::<Value>(cell).expect("JSON value"), v, "{} {name}", r.id),
            }
        }
        match &r.summary {
            Some(s) => {
                for (name, v) in the_summary_figures(s) {
                    assert!(same(f(rec, name), v), "{} {name}: {} vs {v}", r.id, &rec[col(name)]);
                }
            }
            None => assert_eq!(&rec[col("median")], ""),
        }
        match &r.derived {
            Some(d) => {
                assert!(same(f(rec, "derived"), d.estimate.point));
                assert!(same(f(rec, "derived_ci95_lo"), d.estimate.ci95[0]));
                assert!(same(f(rec, "derived_ci95_hi"), d.estimate.ci95[1]));
                assert_eq!(&rec[col("derived_formula")], d.formula);
            }
            None => assert_eq!(&rec[col("derived")], ""),
        }
        match &r.fit {
            Some(fit) => {
                let ((fixed, fixed_ci), (per_byte, per_byte_ci)) = (fit.fixed_ns(), fit.per_byte_ns());
                assert_eq!(&rec[col("fit_model")], "two_segments");
                assert!(same(f(rec, "fit_fixed_ns"), fixed));
                assert!(same(f(rec, "fit_fixed_ns_ci95_lo"), fixed_ci[0]));
                assert!(same(f(rec, "fit_fixed_ns_ci95_hi"), fixed_ci[1]));
                assert!(same(f(rec, "fit_ns_per_byte"), per_byte));
                assert!(same(f(rec, "fit_ns_per_byte_ci95_lo"), per_byte_ci[0]));
                assert!(same(f(rec, "fit_ns_per_byte_ci95_hi"), per_byte_ci[1]));
                assert!(same(f(rec, "fit_r_squared"), fit.line.r_squared));
                assert_eq!(&rec[col("fit_breakpoint_bytes")], "65536");
            }
            None => assert_eq!(&rec[col("fit_fixed_ns")], ""),
        }
        if let Some(c) = &r.cycles {
            assert!(same(f(rec, "cycles_median"), c.median));
        }
        for stage in r.breakdown.iter().flatten() {
            let rec = lines.next().expect("a line per stage");
            stage_lines += 1;
            assert_eq!(&rec[col("row")], i.to_string());
            assert_eq!(&rec[col("id")], r.id);
            assert_eq!(&rec[col("stage")], stage.name);
            for (name, v) in the_summary_figures(&stage.summary) {
                assert!(same(f(rec, name), v), "{} {} {name}", r.id, stage.name);
            }
            assert_eq!(&rec[col("derived")], "", "a stage line repeats no row figure");
        }
    }
    assert!(lines.next().is_none(), "no line besides rows and stages");
    assert!(stage_lines > 50, "the fixture's breakdowns: {stage_lines} stage lines");
    assert!(!text.contains("notvalidated") && !text.contains("\"{"), "no Debug names, no JSON objects");
}

/// A figure as printed, `2.812 µs`, with the largest error its rounding allows; `None` for `-`.
fn parse_figure(text: &str) -> Option<(f64, f64)> {
    let text = text.trim();
    if text == "-" {
        return None;
    }
    let (number, unit) = text.split_once(' ').unwrap_or((text, ""));
    let scale = match unit.trim() {
        "ns" | "B" | "" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        other => panic!("unknown unit {other:?} in {text:?}"),
    };
    Some(with_precision(number, scale))
}

/// A number as printed, times `scale`, and half a unit of its last digit (times `scale`).
fn with_precision(number: &str, scale: f64) -> (f64, f64) {
    let number = number.replace(',', "");
    let v: f64 = number.parse().unwrap_or_else(|e| panic!("{number:?}: {e}"));
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    let half = 0.5 * 10f64.powi(-(decimals as i32)) * scale;
    (v * scale, half * (1.0 + 1e-9) + (v * scale).abs() * 1e-12)
}

/// `[lo, hi] unit`.
fn parse_ci(text: &str) -> Option<[(f64, f64); 2]> {
    let text = text.trim();
    if text == "-" {
        return None;
    }
    let (inner, unit) = text.strip_prefix('[')?.split_once(']')?;
    let (lo, hi) = inner.split_once(", ")?;
    let unit = unit.trim();
    let f = |n: &str| parse_figure(&format!("{n} {unit}")).expect("a figure");
    Some([f(lo), f(hi)])
}

fn close(printed: Option<(f64, f64)>, actual: f64, what: &str) {
    let (v, tol) = printed.unwrap_or_else(|| panic!("{what}: nothing printed for {actual}"));
    assert!((v - actual).abs() <= tol, "{what}: printed {v} ± {tol}, actual {actual}");
}

/// What a row's table line must show: (median, CI, min, p99, n) or the derived estimate.
fn check_line(r: &Row, cells: &[String], what: &str) {
    let (median, ci, min, p99, samples) = (&cells[2], &cells[3], &cells[4], &cells[5], &cells[6]);
    if let Some(s) = &r.summary {
        close(parse_figure(median), s.median, what);
        let [lo, hi] = parse_ci(ci).unwrap_or_else(|| panic!("{what}: CI {ci:?}"));
        close(Some(lo), s.median_ci95[0], what);
        close(Some(hi), s.median_ci95[1], what);
        close(parse_figure(min), s.min, what);
        close(parse_figure(p99), s.p99, what);
        assert_eq!(samples.replace(',', ""), s.n.to_string(), "{what}");
    } else if let Some(d) = &r.derived {
        close(parse_figure(median), d.estimate.point, what);
        let [lo, hi] = parse_ci(ci).expect("CI");
        close(Some(lo), d.estimate.ci95[0], what);
        close(Some(hi), d.estimate.ci95[1], what);
    } else {
        assert_eq!(median, "-", "{what}");
    }
}

/// The rows a family table shows, in order: the run's rows by family (first appearance),
/// fitted rows apart.
fn by_family(run: &RunFile) -> Vec<(String, Vec<&Row>)> {
    let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in run.results.iter().filter(|r| r.fit.is_none()) {
        let family = r.id.split('.').next().unwrap().to_string();
        match out.iter_mut().find(|(f, _)| *f == family) {
            Some((_, rows)) => rows.push(r),
            None => out.push((family, vec![r])),
        }
    }
    out
}

/// The cells of a Markdown table line, `\|` unescaped.
fn md_cells(line: &str) -> Vec<String> {
    let inner = line.trim().strip_prefix('|').and_then(|l| l.strip_suffix('|')).expect("a pipe table line");
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cells.last_mut().unwrap().push(n);
                }
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

#[test]
fn markdown_tables_hold_the_summaries_to_the_printed_precision() {
    let run = fixture();
    let view = View { detail: true, ..View::default() };
    let text = markdown::render(&run, &view);
    let families = by_family(&run);
    let sections: Vec<&str> = text.split("\n## ").skip(1).collect();
    assert_eq!(sections.len(), families.len(), "one table per family");
    for ((family, rows), section) in families.iter().zip(&sections) {
        assert!(section.starts_with(&format!("{family}\n")), "{family}: {section:.40}");
        let table: Vec<&str> = section.lines().filter(|l| l.starts_with('|')).collect();
        let width = md_cells(table[0]).len();
        assert_eq!(width, 10);
        assert!(table.iter().all(|l| md_cells(l).len() == width), "{family}: a ragged row");
        assert!(table[1].starts_with("|---|---|---:|"), "{}", table[1]);
        let mut lines = table[2..].iter();
        for r in rows {
            let cells = md_cells(lines.next().expect("a line per row"));
            assert_eq!(cells[0], format!("`{}`", r.id), "{cells:?}");
            let what = format!("{} {:?}", r.id, r.params);
            check_line(r, &cells, &what);
            if matches!(r.status, Status::Skipped | Status::Failed) {
                assert_eq!(cells[9], r.reason.clone().unwrap_or_default().replace('\n', " "), "the reason is shown");
            }
            for stage in r.breakdown.iter().flatten() {
                let cells = md_cells(lines.next().expect("a line per stage"));
                assert_eq!(cells[0], format!("↳ {}", stage.name));
                let mut as_row = (*r).clone();
                as_row.summary = Some(stage.summary.clone());
                check_line(&as_row, &cells, &format!("{what} stage {}", stage.name));
            }
        }
        assert!(lines.next().is_none(), "{family}: no extra line");
    }
    let fit_row = run.results.last().unwrap();
    let fit = fit_row.fit.as_ref().unwrap();
    let line = text.lines().find(|l| l.starts_with("- sweep fit of `ipc.pipe`")).expect("the fit's line");
    check_fit_text(line, fit);
}

/// `fixed 2.060 µs (95 % CI [2.046, 2.074] µs) + 1.055 µs/KiB (95 % CI [1.040, 1.069] µs/KiB)`.
fn check_fit_text(line: &str, fit: &SweepFit) {
    let rest = line.split_once("fixed ").expect("fixed").1;
    let (fixed, rest) = rest.split_once(" (95 % CI ").expect("fixed CI");
    let (fixed_ci, rest) = rest.split_once(")").expect(")");
    let (per_kib, rest) = rest.strip_prefix(" + ").expect("+").split_once("/KiB (95 % CI ").expect("per KiB");
    let (per_kib_ci, _) = rest.split_once("/KiB)").expect("per KiB CI");
    let ((f, f_ci), (b, b_ci)) = (fit.fixed_ns(), fit.per_byte_ns());
    close(parse_figure(fixed), f, "fit fixed");
    let [lo, hi] = parse_ci(fixed_ci).expect("fixed CI");
    close(Some(lo), f_ci[0], "fixed lo");
    close(Some(hi), f_ci[1], "fixed hi");
    close(parse_figure(per_kib), b * 1024.0, "per KiB");
    let [lo, hi] = parse_ci(per_kib_ci).expect("per KiB CI");
    close(Some(lo), b_ci[0] * 1024.0, "per KiB lo");
    close(Some(hi), b_ci[1] * 1024.0, "per KiB hi");
    assert!(line.contains("above 64 KiB"), "{line}");
}

/// A LaTeX cell back to the plain text the Markdown shows.
fn unlatex(cell: &str) -> String {
    let cell = cell.trim();
    let cell = cell.strip_prefix("\\texttt{").and_then(|c| c.strip_suffix('}')).unwrap_or(cell);
    let cell = if cell == "--" { "-" } else { cell };
    cell.replace("\\,", " ")
        .replace("\\textmu{}", "µ")
        .replace("\\_", "_")
        .replace("\\%", "%")
        .replace("\\&", "&")
        .replace("$-$", "−")
        .replace("$\\rightarrow$", "→")
        .replace("\\quad ", "↳ ")
}

#[test]
fn latex_tables_hold_the_summaries_to_the_printed_precision() {
    let run = fixture();
    let view = View { detail: true, ..View::default() };
    let text = latex::render(&run, &view);
    let families = by_family(&run);
    let tables: Vec<&str> = text.split("\\begin{table}").skip(1).collect();
    // Every family's label, once, in the table its first row is in.
    for (family, rows) in &families {
        let label = format!("\\label{{tab:osprim-{family}}}");
        assert_eq!(text.matches(&label).count(), 1, "{family}");
        let first = format!("\\texttt{{{}}}", latex::escape(&rows[0].id));
        let holder = tables.iter().find(|t| t.contains(&label)).expect("the label's table");
        assert!(holder.contains(&first), "{family}: its label where its first row is");
    }
    // The rows in order, table after table: the benchmark, the median and its CI.
    let mut lines = Vec::new();
    for table in &tables {
        assert!(table.contains("\\caption{") && table.contains("\\end{table}"));
        let (_, body) = table.split_once("\\toprule\n").expect("toprule");
        let (head, body) = body.split_once("\\midrule\n").expect("midrule");
        let (body, _) = body.split_once("\\bottomrule\n").expect("bottomrule");
        assert_eq!(head.trim().trim_end_matches("\\\\").split(" & ").count(), 3, "{head}");
        let rows: Vec<&str> = body.lines().filter(|l| *l != "\\addlinespace").collect();
        assert!(rows.len() <= 40, "a table within a column's height: {} lines", rows.len());
        lines.extend(rows);
    }
    let mut lines = lines.into_iter();
    for r in families.iter().flat_map(|(_, rows)| rows) {
        // Each line's raw first cell, and its cells as plain text.
        let mut next = || -> (String, Vec<String>) {
            let line = lines.next().expect("a line");
            let line = line.strip_suffix(" \\\\").expect("a row ends with \\\\");
            let line = line.strip_prefix("\\raggedright ").expect("a row begins ragged right");
            let cells: Vec<String> = line.split(" & ").map(unlatex).collect();
            assert_eq!(cells.len(), 3, "{line}");
            (line.split(" & ").next().unwrap_or_default().to_string(), cells)
        };
        let (first, cells) = next();
        let what = format!("{} {:?}", r.id, r.params);
        let head = format!("\\texttt{{{}}}", latex::escape(&r.id));
        assert!(first.starts_with(&head), "{what}: {first}");
        check_point_and_ci(r, &cells, &what);
        let marked = first.contains("\\textsuperscript{");
        if r.reason.is_some() || r.derived.is_some() || !r.flags.is_empty() {
            assert!(marked, "{what}: a note mark, {cells:?}");
        }
        for stage in r.breakdown.iter().flatten() {
            let (_, cells) = next();
            assert_eq!(cells[0], format!("↳ {}", stage.name));
            let mut as_row = (*r).clone();
            as_row.summary = Some(stage.summary.clone());
            check_point_and_ci(&as_row, &cells, &format!("{what} stage {}", stage.name));
        }
    }
    assert!(lines.next().is_none(), "no extra line");
    // Flags in words, never their labels.
    assert!(text.contains("CI target missed") && !text.contains("ci-wide") && !text.contains("ci_target_missed"));
    let fit = run.results.last().unwrap().fit.clone().unwrap();
    let line = text.lines().find(|l| l.starts_with("Sweep fit of \\texttt{ipc.pipe}")).expect("the fit's line");
    check_fit_text(&unlatex(line).replace("\\textsuperscript{2}", "²"), &fit);
    let space = run.results.iter().find(|r| r.id.starts_with("space.")).expect("a space row");
    assert_eq!(space.unit, Unit::Bytes, "the fixture has rows in bytes, printed in B/KiB");
}

/// A compact LaTeX row's median (or a derived row's estimate) and its CI, as printed.
fn check_point_and_ci(r: &Row, cells: &[String], what: &str) {
    let (point, ci) = (&cells[1], &cells[2]);
    let estimate = r
        .summary
        .as_ref()
        .map(|s| (s.median, s.median_ci95))
        .or(r.derived.as_ref().map(|d| (d.estimate.point, d.estimate.ci95)));
    match estimate {
        Some((p, [lo, hi])) => {
            close(parse_figure(point), p, what);
            let [plo, phi] = parse_ci(ci).unwrap_or_else(|| panic!("{what}: CI {ci:?}"));
            close(Some(plo), lo, what);
            close(Some(phi), hi, what);
        }
        None => assert_eq!(point, "-", "{what}"),
    }
}

#[test]
fn every_latex_special_is_escaped() {
    let text = latex::escape("a\\b & 5 % $x# _ {y} ~ ^ <|> µs −1 → --cpu ☃");
    assert_eq!(
        text,
        "a\\textbackslash{}b \\& 5 \\% \\$x\\# \\_ \\{y\\} \\textasciitilde{} \\textasciicircum{} \
         \\textless{}\\textbar{}\\textgreater{} \\textmu{}s $-$1 $\\rightarrow$ -{}-cpu ?"
    );
}
