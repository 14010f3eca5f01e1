//! What a person sees in a real terminal: osprim run inside a 100-column tmux pane writes no
//! line wider than the pane (lines the terminal had to wrap are joined back by `capture-pane
//! -J`, so a wrapped line counts as one wide line), and its live display at 80 columns never
//! wraps and always moves. Skipped, with the reason, where tmux is absent.

use std::process::Command;
use std::time::{Duration, Instant};

fn tmux(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux").arg("-L").arg(socket).args(args).output().expect("tmux runs")
}

/// `osprim ARGS` started in a detached tmux pane of `width` × `height` on a server of its own
/// (its socket name returned, with the working directory to keep), printing
/// `__osprim_done__` when it ends; `None` (said) where tmux is missing.
fn in_pane(name: &str, width: u16, height: u16, args: &str) -> Option<(String, tempfile::TempDir)> {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (Debian package tmux)");
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("osprim");
    let dir = tempfile::tempdir().unwrap();
    let socket = format!("osprim-{name}-{}", std::process::id());
    let script = format!("cd {} && {} {args}; echo __osprim_done__; sleep 60", dir.path().display(), bin.display());
    let (w, h) = (width.to_string(), height.to_string());
    let started = tmux(&socket, &["new-session", "-d", "-s", "t", "-x", &w, "-y", &h, &script]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    Some((socket, dir))
}

#[test]
fn a_run_in_a_100_column_pane_fits_the_pane() {
    let Some((socket, _dir)) = in_pane("test", 100, 50, "run --quick --budget 0.05 --no-save syscall fs") else {
        return;
    };
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

/// The live display at 80 columns, captured every 0.5 s while a run goes on: no line of it is
/// wider than the pane (a row the terminal wrapped is joined with the next by `capture-pane
/// -J`, so a wrapped status line shows as one line over 80 columns), and its counter of
/// result-rounds moves at least every 2 s.
#[test]
fn the_live_display_at_80_columns_never_wraps_and_always_moves() {
    // Long labels (ipc.pipe's parameters) and enough result-rounds to watch for some seconds.
    let Some((socket, _dir)) = in_pane("live", 80, 24, "run --quick --no-save syscall fs ipc.pipe lock") else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    // (when, the counter) of each capture that shows the status line.
    let mut seen: Vec<(Instant, String)> = Vec::new();
    let mut screens = Vec::new();
    let end = loop {
        let out = tmux(&socket, &["capture-pane", "-t", "t", "-p", "-J"]);
        let now = Instant::now();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // While the live display is up (the plan above it, the status line, the last
        // results under it); the report after it is not the live display.
        if let Some(status) = text.lines().find(|l| l.contains(" eta ") && l.contains("round ")) {
            let counter = status.split_whitespace().find(|w| w.contains('/')).unwrap_or_default().to_string();
            seen.push((now, counter));
            for line in text.lines() {
                assert!(line.trim_end().chars().count() <= 80, "a line of the display wrapped: {line:?}\n{text}");
            }
        }
        let done = text.contains("__osprim_done__");
        screens.push(text);
        if done || now > deadline {
            break now;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let _ = tmux(&socket, &["kill-server"]);
    let last = screens.last().cloned().unwrap_or_default();
    assert!(last.contains("__osprim_done__"), "the run ended within its deadline: {last}");
    assert!(seen.len() >= 3, "the status line was seen while the run went on: {seen:?}\n{}", screens.join("\n---\n"));
    // The counter moves at least every 2 s, from the first capture showing it to the run's end.
    let mut since = seen[0].0;
    for pair in seen.windows(2) {
        if pair[1].1 != pair[0].1 {
            since = pair[1].0;
        }
        let still = pair[1].0.duration_since(since);
        assert!(still <= Duration::from_millis(2_500), "the counter sat at {} for {still:?}: {seen:?}", pair[1].1);
    }
    let counts: Vec<u64> = seen.iter().filter_map(|(_, c)| c.split('/').next()?.parse().ok()).collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "the counter only goes up: {counts:?}");
    let _ = end;
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
