//! The LaTeX export compiles: the real default run (`tests/fixtures/default-run.json`), in
//! the default and the detailed view, plus a row full of LaTeX specials and odd characters,
//! wrapped in a minimal document (booktabs and textcomp) and run through `pdflatex
//! -interaction=nonstopmode -halt-on-error` in a temporary directory. Where `pdflatex` is not
//! on PATH (Debian: `apt-get install texlive-latex-base texlive-latex-recommended`), the test
//! says so on stderr and passes.
//!
//! And it fits: `osprim papers` and `osprim show` in LaTeX, of two real runs, compiled in one
//! and in two columns, leave no box over 10 pt too wide (pdflatex's log says each one) and no
//! float taller than the page (the test's preamble logs each float's height).

use report::{View, latex};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pdflatex_available() -> bool {
    Command::new("pdflatex").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Compiles `body` in a minimal one-column document; the log on failure.
fn compile(name: &str, body: &str) -> Result<(), String> {
    compile_in(name, "article", body).map(|_| ())
}

/// How long pdflatex may take over one document.
const DEADLINE: Duration = Duration::from_secs(120);

/// Compiles `body` in a minimal document of class `class` (`[twocolumn]{article}`: the
/// options too) with booktabs and textcomp, the packages the exports need, under
/// [`DEADLINE`]; its log, or the log's end on failure. The log has a line for each float, its
/// height (depth included) and the page's: `osprim-float: 412.3pt of 550.0pt` ([`floats`]).
fn compile_in(name: &str, class: &str, body: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let doc = format!(
        "\\documentclass{class}\n\\usepackage{{booktabs}}\n\\usepackage{{textcomp}}\n{FLOAT_HEIGHTS}\
         \\begin{{document}}\n{body}\n\\end{{document}}\n",
        class = if class.starts_with('[') { class.to_string() } else { format!("{{{class}}}") }
    );
    let tex = dir.path().join(format!("{name}.tex"));
    std::fs::write(&tex, doc).map_err(|e| e.to_string())?;
    let mut child = Command::new("pdflatex")
        .args(["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"])
        .arg(&tex)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("pdflatex took over {} s on {name}", DEADLINE.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap_or_default();
    if status.success() && dir.path().join(format!("{name}.pdf")).exists() {
        Ok(log)
    } else {
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        Err(format!("pdflatex failed on {name} ({status}):\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n")))
    }
}

/// Preamble lines that log each float's height: LaTeX's `\@endfloatbox` closes the float's
/// box, whose height and depth are then known.
const FLOAT_HEIGHTS: &str = "\\makeatletter\n\\let\\osprimendfloatbox\\@endfloatbox\n\
     \\def\\@endfloatbox{\\osprimendfloatbox\\typeout{osprim-float: \\the\\dimexpr\\ht\\@currbox+\\dp\\@currbox\\relax\\space of \\the\\textheight}}\n\
     \\makeatother\n";

/// Each float's height and the page's (`\textheight`), in pt, from a log of [`compile_in`].
fn floats(log: &str) -> Vec<(f64, f64)> {
    let pt = |s: &str| s.trim().strip_suffix("pt").and_then(|s| s.parse().ok());
    log.lines()
        .filter_map(|l| l.strip_prefix("osprim-float: "))
        .filter_map(|l| l.split_once(" of "))
        .filter_map(|(h, page)| Some((pt(h)?, pt(page)?)))
        .collect()
}

/// The widths of the overfull boxes a pdflatex log reports (`Overfull \hbox (12.3pt too
/// wide)`), in pt.
fn overfull(log: &str) -> Vec<f64> {
    log.lines()
        .filter_map(|l| l.strip_prefix("Overfull \\hbox ("))
        .filter_map(|l| l.split_once("pt too wide)"))
        .filter_map(|(pt, _)| pt.parse().ok())
        .collect()
}

#[test]
fn the_latex_export_compiles_with_pdflatex() {
    if !pdflatex_available() {
        eprintln!(
            "pdflatex is not on PATH: the LaTeX export was not compiled (apt-get install texlive-latex-base texlive-latex-recommended)"
        );
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let mut run = model::read_result_file(&path).expect("the fixture reads");
    let plain = latex::render(&run, &View::default());
    compile("default", &plain).unwrap_or_else(|e| panic!("{e}"));

    let mut odd = run.results[0].clone();
    odd.id = "odd.row_with-specials".into();
    odd.params.insert("text".into(), serde_json::json!("a\\b & 5 % $x# _ {y} ~ ^ <|> \"q\" µs −1 → ≈ ☃ é --cpu"));
    odd.status = model::Status::Failed;
    odd.reason = Some("100 % of {calls} failed: errno #22 & \\n ~ ^_^ ≥ 2 × 3 — …".into());
    odd.summary = None;
    run.results.push(odd);
    run.machine.cpu.model_name = "Odd_CPU & Co. 100% #1 {x}".into();
    run.partial = true;
    let detailed = latex::render(&run, &View { detail: true, ..View::default() });
    compile("detailed", &detailed).unwrap_or_else(|e| panic!("{e}"));
}

/// The papers' tables compile too, with every reading a ratio can have: a figure today below
/// resolution (no ratio), an inconclusive ratio, one about the same, and ratios with intervals.
#[test]
fn the_papers_latex_compiles_with_every_reading() {
    if !pdflatex_available() {
        eprintln!("pdflatex is not on PATH: the papers' LaTeX was not compiled");
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    let mut run = model::read_result_file(&path).expect("the fixture reads");
    let mut set = |id: &str, mean: f64, ci: [f64; 2]| {
        for r in run.results.iter_mut().filter(|r| r.id == id) {
            let s = r.summary.as_mut().expect("measured");
            (s.mean, s.mean_ci95) = (mean, ci);
        }
    };
    set("interpose.preload", 3.0, [-2.0, 9.0]);
    set("signal.install", 8000.0, [4000.0, 16_000.0]);
    set("id.exe_name", 12_500.0, [12_300.0, 12_700.0]);
    for all_rows in [false, true] {
        let view = View { all_rows, ..View::default() };
        let tex = report::render_papers(&run, report::Format::Latex, &view).expect("LaTeX");
        assert!(
            tex.contains("below resolution") && tex.contains("inconclusive\\\\{}[") && tex.contains("$\\approx$ same")
        );
        compile(if all_rows { "papers-all" } else { "papers" }, &tex).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// What a researcher pastes fits the page: `osprim papers --format latex` and `osprim show
/// --format latex` (also `--detail`, and the papers with `--all-rows`) of two real runs, a
/// default run and one of the seed suite, compiled in `\documentclass{article}` and in
/// `\documentclass[twocolumn]{article}`, leave no box more than 10 pt too wide, and no float
/// taller than the page (`\textheight`): a paper's tables are split into floats as a run's
/// are, and LaTeX never says "Float too large for page".
#[test]
fn the_latex_exports_fit_one_column_of_a_two_column_paper() {
    if !pdflatex_available() {
        eprintln!("pdflatex is not on PATH: the LaTeX exports' widths were not checked");
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut worst: Vec<String> = Vec::new();
    let mut tallest = 0.0_f64;
    for fixture in ["default-run.json", "papers-run.json"] {
        let file = fixtures.join(fixture);
        let exports: [(&str, &[&str]); 4] = [
            ("papers", &["papers", "--format", "latex"]),
            ("papers-all", &["papers", "--all-rows", "--format", "latex"]),
            ("show", &["show", "--format", "latex"]),
            ("show-detail", &["show", "--detail", "--format", "latex"]),
        ];
        for (what, args) in exports {
            let out = Command::new(assert_cmd::cargo::cargo_bin("osprim")).args(args).arg(&file).output().unwrap();
            assert!(out.status.success(), "{what} of {fixture}: {}", String::from_utf8_lossy(&out.stderr));
            let body = String::from_utf8(out.stdout).expect("UTF-8");
            assert!(body.contains("\\begin{table}"), "{what} of {fixture}: {body}");
            for class in ["article", "[twocolumn]{article}"] {
                let log = compile_in(what, class, &body).unwrap_or_else(|e| panic!("{fixture} {class}: {e}"));
                let boxes = overfull(&log);
                let max = boxes.iter().copied().fold(0.0, f64::max);
                eprintln!("{fixture} {what} in {class}: {} overfull boxes, the widest {max:.1} pt", boxes.len());
                if max > 10.0 {
                    worst.push(format!("{fixture} {what} in {class}: {max:.1} pt too wide"));
                }
                let heights = floats(&log);
                assert!(!heights.is_empty(), "{fixture} {what} in {class}: no float's height in the log");
                let (high, page) = heights.iter().copied().fold((0.0, 0.0), |m, h| if h.0 > m.0 { h } else { m });
                tallest = tallest.max(high / page);
                eprintln!(
                    "{fixture} {what} in {class}: {} floats, the tallest {high:.0} pt of {page:.0}",
                    heights.len()
                );
                if high > page || log.contains("Float too large for page") {
                    worst.push(format!("{fixture} {what} in {class}: a float {high:.0} pt tall, the page {page:.0}"));
                }
            }
        }
    }
    eprintln!("the tallest float is {:.0} % of its page", tallest * 100.0);
    assert!(worst.is_empty(), "boxes over 10 pt too wide or floats taller than the page:\n{}", worst.join("\n"));
}
