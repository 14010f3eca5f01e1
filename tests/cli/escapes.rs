//! Text from a result file, a history or a peer never reaches the terminal or a Markdown viewer
//! as markup: escape sequences in ids, notes and host names are spelled out (`\x1b`) by
//! `show`, `compare`, `history` and `crosscheck`, and Markdown carries no live `<script>`.
//! Also: `history` counts runs, not the seconds they started in.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const ESC: char = '\u{1b}';

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The default run with an escape sequence and HTML in an id, a note and the host name.
fn evil(dir: &Path, name: &str, run_id: Option<&str>) -> PathBuf {
    let mut run: Value =
        serde_json::from_slice(&std::fs::read(root().join("tests/fixtures/default-run.json")).unwrap()).unwrap();
    run["machine"]["hostname"] = "evil\u{1b}]0;pwned\u{7}<script>h</script>".into();
    run["results"][0]["id"] = "syscall.null\u{1b}[2J<script>alert(1)</script>".into();
    let notes = run["results"][0]["notes"].as_array().cloned().unwrap_or_default();
    let mut notes = notes;
    notes.push("note \u{1b}[31mred\u{9b}0m <img src=x onerror=alert(1)>".into());
    run["results"][0]["notes"] = notes.into();
    if let Some(id) = run_id {
        run["run_id"] = id.into();
    }
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

fn stdout_of(args: &[&str], dir: &Path) -> String {
    let out = osprim().args(args).current_dir(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_clean(what: &str, text: &str) {
    assert!(
        !text.contains(ESC) && !text.contains('\u{9b}') && !text.contains('\u{7}'),
        "{what}: a raw control: {text:?}"
    );
}

#[test]
fn show_compare_and_history_spell_out_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let file = evil(dir.path(), "evil.json", None);
    let f = file.to_str().unwrap();
    for format in ["table", "markdown"] {
        let text = stdout_of(&["show", f, "--format", format, "--color", "always"], dir.path());
        // osprim's own colours may stay in a table; the file's sequences may not.
        let foreign = text.contains("\u{1b}[2J") || text.contains("\u{1b}]0;") || text.contains('\u{9b}');
        assert!(!foreign, "show --format {format}: {text:?}");
        assert!(text.contains("\\x1b[2J"), "show --format {format}: spelled out: {text}");
        let text = stdout_of(&["show", f, "--format", format, "--color", "never"], dir.path());
        assert_clean(&format!("show --format {format}"), &text);
        if format == "markdown" {
            assert!(!text.contains("<script") && !text.contains("<img"), "{text}");
        }
        let text = stdout_of(&["compare", f, f, "--format", format, "--color", "never"], dir.path());
        assert_clean(&format!("compare --format {format}"), &text);
    }
    let imports = dir.path().join("in");
    std::fs::create_dir(&imports).unwrap();
    std::fs::copy(&file, imports.join("evil.json")).unwrap();
    let text = stdout_of(&["history", "--db", "h.db", "--import", "in", "--color", "never"], dir.path());
    assert_clean("history", &text);
    assert!(text.contains("\\x1b"), "{text}");
}

#[test]
fn history_counts_runs_not_the_seconds_they_started_in() {
    let dir = tempfile::tempdir().unwrap();
    let imports = dir.path().join("in");
    std::fs::create_dir(&imports).unwrap();
    // Two runs started in the same second on the same host with equal results.
    evil(&imports, "a.json", Some(&"a".repeat(32)));
    evil(&imports, "b.json", Some(&"b".repeat(32)));
    let out = osprim().args(["history", "--db", "h.db", "--import", "in"]).current_dir(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("imported 2 run(s)"), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("from 2 run(s)"), "{text}");
}

#[test]
fn a_peer_printing_escape_sequences_is_shown_spelled_out() {
    use std::os::unix::fs::PermissionsExt;
    if !Path::new("/usr/bin/taskset").exists() && !Path::new("/bin/taskset").exists() {
        eprintln!("skipped: no taskset (Debian package util-linux)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("perf", "printf '\\033]0;pwned\\007\\033[2Jgarbage <script>x</script>\\n'; exit 1"),
        ("cyclictest", "printf '\\033[2Jgarbage\\n'; exit 1"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    for format in ["table", "markdown"] {
        let out = osprim()
            .args(["crosscheck", "--quick", "-q", "--color", "never", "--format", format])
            .env("PATH", &path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_clean(&format!("crosscheck --format {format}"), &text);
        assert!(text.contains("\\x1b"), "{text}");
        if format == "markdown" {
            assert!(!text.contains("<script"), "{text}");
        }
    }
}
