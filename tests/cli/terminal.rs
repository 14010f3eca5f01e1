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
