//! What a person sees in a real terminal: osprim run inside a 100-column tmux pane writes no
//! line wider than the pane (lines the terminal had to wrap are joined back by `capture-pane
//! -J`, so a wrapped line counts as one wide line). Skipped, with the reason, where tmux is
//! absent.

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux").arg("-L").arg(socket).args(args).output().expect("tmux runs")
}

#[test]
fn a_run_in_a_100_column_pane_fits_the_pane() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (Debian package tmux)");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let dir = tempfile::tempdir().unwrap();
    let socket = format!("osprim-test-{}", std::process::id());
    let script = format!(
        "cd {} && {} run --quick --budget 0.05 --no-save syscall fs; echo __osprim_done__; sleep 60",
        dir.path().display(),
        bin.display()
    );
    let started = tmux(&socket, &["new-session", "-d", "-s", "t", "-x", "100", "-y", "50", &script]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    let deadline = Instant::now() + Duration::from_secs(120);
    let screen = loop {
        let out = tmux(&socket, &["capture-pane", "-t", "t", "-p", "-J", "-S", "-"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("__osprim_done__") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = tmux(&socket, &["kill-server"]);
    assert!(screen.contains("__osprim_done__"), "the run ended within its deadline: {screen}");
    assert!(screen.contains("syscall.null") && screen.contains("osprim: "), "{screen}");
    for line in screen.lines() {
        assert!(line.trim_end().chars().count() <= 100, "wider than the pane: {line:?}\n{screen}");
    }
}

/// The bare `osprim` ends on its digest: in a pane of 24 lines, 80 or 100 columns wide, the
/// screen left at the end (the prompt's line free) holds the whole digest: the machine, the
/// verdict, a line per paper, the five primitives and where the full tables are, and no line
/// of it is wider than the pane. The two panes run at once (about a minute); skipped, with the
/// reason, where tmux is absent.
#[test]
fn the_bare_run_ends_on_its_digest_in_80_and_100_column_panes() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (Debian package tmux)");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let socket = format!("osprim-digest-{}", std::process::id());
    let widths = [80, 100];
    let dirs: Vec<tempfile::TempDir> = widths.iter().map(|_| tempfile::tempdir().unwrap()).collect();
    for (w, dir) in widths.iter().zip(&dirs) {
        // No shell prompt and no marker on the screen: the end is a file.
        let script =
            format!("cd {d} && {bin}; touch {d}/done; sleep 600", d = dir.path().display(), bin = bin.display());
        let (name, width) = (format!("w{w}"), w.to_string());
        let started = tmux(&socket, &["new-session", "-d", "-s", &name, "-x", &width, "-y", "24", &script]);
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while !dirs.iter().all(|d| d.path().join("done").exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
    }
    let screens: Vec<String> = widths
        .iter()
        .map(|w| {
            let out = tmux(&socket, &["capture-pane", "-t", &format!("w{w}"), "-p", "-J"]);
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    let _ = tmux(&socket, &["kill-server"]);
    for ((w, dir), screen) in widths.iter().zip(&dirs).zip(&screens) {
        assert!(dir.path().join("done").exists(), "the run at {w} columns ended within 5 minutes:\n{screen}");
        let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
        let starts = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
        assert_eq!(starts("In short: "), 1, "the digest's first line is on the screen at {w}:\n{screen}");
        assert_eq!(starts("Verdict: "), 1, "{screen}");
        for paper in ["RightSpeed ", "L4Ka ", "VMMC ", "Go! ", "Rhino "] {
            assert_eq!(starts(paper), 1, "{paper}at {w}:\n{screen}");
        }
        for (name, id) in [
            ("system call", "syscall.null"),
            ("context switch", "ctx.thread"),
            ("pipe round trip", "rpc.pipe"),
            ("page fault", "fault.anon.write"),
            ("fork", "process.fork_exit"),
        ] {
            let line = lines.iter().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} at {w}:\n{screen}"));
            assert!(line.contains(id), "{line}");
            assert!(line.contains(" [") || line.contains("not measured") || line.contains("skipped"), "{line}");
        }
        assert!(lines.iter().any(|l| l.contains("osprim papers") && l.contains("osprim show")), "{screen}");
        assert!(lines.iter().any(|l| l.contains("osprim-results/")), "the result file is named:\n{screen}");
        // The cursor's line, where a prompt would go, is the last and free.
        assert!(screen.lines().count() <= 24 && lines.last().is_some_and(|l| l.is_empty()), "{screen}");
        for line in &lines {
            assert!(line.chars().count() <= *w, "wider than the pane ({w}): {line:?}\n{screen}");
        }
    }
}
