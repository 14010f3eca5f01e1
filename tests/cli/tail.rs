//! `--tail` is shown wherever it is promised: `osprim run ipc.pipe --quick --tail` measures
//! single operations in every cell of the IPC matrix, and the table under the matrix gives
//! their p50, p99 and p99.9.

use std::process::Command;

#[test]
fn run_ipc_pipe_with_tail_prints_the_single_operation_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .args(["run", "ipc.pipe", "--quick", "--tail", "--no-save", "--color", "never"])
        .current_dir(dir.path())
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("single operations (--tail)"))
        .unwrap_or_else(|| panic!("a tail table under the matrix:\n{stdout}"));
    for column in ["p50", "p99", "p99.9"] {
        assert!(lines[head].split_whitespace().any(|w| w == column), "{column} in {}", lines[head]);
    }
    // A line per measured cell (thread and process, same and cross CPU, wherever they ran),
    // each with figures in a time unit.
    let cells: Vec<&&str> =
        lines[head + 1..].iter().skip_while(|l| l.starts_with('─')).take_while(|l| l.starts_with("ipc.pipe")).collect();
    assert!(!cells.is_empty(), "{stdout}");
    for cell in cells {
        assert!(cell.contains("s "), "figures with their units: {cell}");
    }
}
