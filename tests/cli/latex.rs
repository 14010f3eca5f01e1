//! The LaTeX export compiles: the real default run (`tests/fixtures/default-run.json`), in
//! the default and the detailed view, plus a row full of LaTeX specials and odd characters,
//! wrapped in a minimal document (booktabs and textcomp) and run through `pdflatex
//! -interaction=nonstopmode -halt-on-error` in a temporary directory. Where `pdflatex` is not
//! on PATH (Debian: `apt-get install texlive-latex-base texlive-latex-recommended`), the test
//! says so on stderr and passes.

use report::{View, latex};
use std::path::Path;
use std::process::Command;

fn pdflatex_available() -> bool {
    Command::new("pdflatex").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Compiles `body` in a minimal document; the log on failure.
fn compile(name: &str, body: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let doc = format!(
        "\\documentclass{{article}}\n\\usepackage{{booktabs}}\n\\usepackage{{textcomp}}\n\
         \\begin{{document}}\n{body}\n\\end{{document}}\n"
    );
    let tex = dir.path().join(format!("{name}.tex"));
    std::fs::write(&tex, doc).map_err(|e| e.to_string())?;
    let out = Command::new("pdflatex")
        .args(["-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape"])
        .arg(&tex)
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let pdf = dir.path().join(format!("{name}.pdf"));
    if out.status.success() && pdf.exists() {
        Ok(())
    } else {
        let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        Err(format!(
            "pdflatex failed on {name} ({}):\n{}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ))
    }
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
        assert!(tex.contains("below resolution") && tex.contains("inconclusive [") && tex.contains("$\\approx$ same"));
        compile(if all_rows { "papers-all" } else { "papers" }, &tex).unwrap_or_else(|e| panic!("{e}"));
    }
}
