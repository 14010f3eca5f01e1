//! `interpose.seccomp` agrees with an independent measure: a plain C loop of raw `getppid`
//! calls (`tests/fixtures/seccomp/getppid-loop.c`, compiled here with the system's C compiler),
//! timed with `CLOCK_MONOTONIC` without a filter and under filters of the shape osprim installs
//! (100 and 1,000 instructions that read an argument), in fresh processes alternated round by
//! round, before and after osprim's run. The cost of the 100-instruction filter (with −
//! without) and the cost per instruction (100 → 1,000) must each agree with osprim's within
//! 25 % (its `args insns 100` row, and its fitted cost per instruction): within 25 % of the
//! reference, or of the range its two measures span where the machine changed level between
//! them.
//!
//! No absolute time is asserted. The machine may be loaded: the C loop reports its median block
//! and osprim drops the pairs a third party disturbed. Where no C compiler is found or a filter
//! cannot be installed, the test skips, saying why.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROUNDS: usize = 15;
const AGREE: f64 = 0.25;

fn compile(dir: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seccomp/getppid-loop.c");
    let out = dir.join("getppid-loop");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .map_err(|e| format!("no C compiler (cc): {e}"))?;
    status.success().then_some(out).ok_or_else(|| format!("cc failed on {}", source.display()))
}

/// ns per getppid in a fresh process under an `insns`-instruction filter (0: none).
fn c_loop(bin: &Path, insns: u32) -> Result<f64, String> {
    let out = Command::new(bin).args([insns.to_string(), "0".into()]).output().map_err(|e| e.to_string())?;
    if out.status.code() == Some(3) {
        return Err(format!("cannot install a seccomp filter: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|e| format!("the C loop printed no figure: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The C reference: (cost of the 100-instruction filter, cost per instruction), each the
/// median over rounds of paired differences of fresh processes.
fn reference(bin: &Path) -> Result<(f64, f64), String> {
    let (mut at100, mut per_insn) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let mut order = [0u32, 100, 1000];
        order.rotate_left(round % 3);
        let mut ns = [0.0; 3];
        for n in order {
            ns[[0, 100, 1000].iter().position(|&x| x == n).unwrap()] = c_loop(bin, n)?;
        }
        at100.push(ns[1] - ns[0]);
        per_insn.push((ns[2] - ns[1]) / 900.0);
    }
    Ok((median(at100), median(per_insn)))
}

/// osprim's (cost of the 100-instruction filter, fitted cost per instruction).
fn osprim(dir: &Path) -> (f64, f64) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .current_dir(dir)
        .env("TMPDIR", dir)
        .env("RUST_BACKTRACE", "1")
        .args([
            "run",
            "interpose.seccomp",
            "--budget",
            "1",
            "--cpu",
            "0",
            "--quiet",
            "--format",
            "json",
            "--no-save",
            "--no-history",
        ])
        .output()
        .expect("osprim runs");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("osprim gave no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let rows = v["results"].as_array().expect("results");
    let args = |insns: Value| {
        rows.iter()
            .find(|r| r["params"]["filter"] == "args" && r["params"]["insns"] == insns)
            .unwrap_or_else(|| panic!("no args row at insns {insns}"))
    };
    let at100 = args(100.into())["summary"]["median"].as_f64().expect("a median");
    let per_insn = args("fit".into())["derived"]["estimate"]["point"].as_f64().expect("a fitted slope");
    (at100, per_insn)
}

#[test]
fn the_filter_costs_what_a_plain_c_loop_says() {
    let dir = tempfile::tempdir().unwrap();
    let bin = match compile(dir.path()) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    // Before and after osprim's run, so the reference spans the same minute.
    let before = match reference(&bin) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let (at100, per_insn) = osprim(dir.path());
    let after = reference(&bin).expect("the reference ran before");
    let c = ((before.0 + after.0) / 2.0, (before.1 + after.1) / 2.0);
    eprintln!(
        "100-instruction filter: osprim {at100:.1} ns, C {:.1} ns (before {:.1}, after {:.1}); per instruction: \
         osprim {per_insn:.4} ns, C {:.4} ns (before {:.4}, after {:.4})",
        c.0, before.0, after.0, c.1, before.1, after.1
    );
    // The reference is taken before and after osprim's run; where the machine changed level in
    // between, the two bracket the truth, and osprim must lie within 25 % of that bracket.
    let agree = |a: f64, before: f64, after: f64| {
        let (lo, hi) = (before.min(after), before.max(after));
        (1.0 - AGREE) * lo <= a && a <= (1.0 + AGREE) * hi
    };
    for (what, got, before, after) in [
        ("the 100-instruction filter, ns", at100, before.0, after.0),
        ("per instruction, ns", per_insn, before.1, after.1),
    ] {
        assert!(
            agree(got, before, after),
            "{what}: osprim {got:.4} against C's {:.4} (before {before:.4}, after {after:.4})",
            (before + after) / 2.0
        );
    }
}
