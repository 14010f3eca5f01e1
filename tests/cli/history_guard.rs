//! The history database as a run waits for it: a PostgreSQL "server" that accepts and never
//! answers, a SQLite file another process holds the write lock of, passwords in `--db`, and
//! `recorded` said only of what was recorded. Waits are bounded generously to tell "gave up"
//! from "hung"; no duration is asserted.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// A TCP listener on 127.0.0.1 that accepts every connection and never answers; its port.
fn silent_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    port
}

fn start(args: &[&str], dir: &Path) -> std::process::Child {
    osprim()
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).expect("a result file")
}

#[test]
fn a_postgres_server_that_never_answers_does_not_hang_run_or_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("postgres://u@127.0.0.1:{}/db", silent_server());
    let out = finish(start(&["run", "--quick", "syscall.null", "-o", "b.json", "--db", &db], dir.path()), "run --db");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The result file is saved, and one line says why the history was not.
    assert!(read_json(&dir.path().join("b.json"))["results"].is_array());
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("not recorded in the history")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("did not"), "{stderr}");
    let out = finish(start(&["history", "--db", &db], dir.path()), "history --db");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("did not complete the connection"), "{stderr}");
}

#[test]
fn ctrl_c_while_the_history_is_locked_ends_the_run_with_130_and_its_file_saved() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("import sqlite3")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        eprintln!("skipped: no python3 with sqlite3 to hold the lock");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A history made by a first run, then held locked by another process.
    let first = finish(
        start(&["run", "--quick", "syscall.null", "-o", "a.json", "--db", "h.db", "-q"], dir.path()),
        "first run",
    );
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys,time\nc=sqlite3.connect('h.db',isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked',flush=True)\ntime.sleep(600)",
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let child = start(&["run", "--quick", "syscall.null", "-o", "b.json", "--db", "h.db"], dir.path());
    let saved = dir.path().join("b.json");
    wait_for(|| std::fs::read(&saved).ok().filter(|b| serde_json::from_slice::<Value>(b).is_ok()).map(|_| ()))
        .expect("the result file is saved");
    // Now waiting for the lock (recording): Ctrl-C.
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id() as i32, nix::sys::signal::Signal::SIGINT);
    let out = finish(child, "run with the history locked");
    let _ = holder.kill();
    let _ = holder.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(read_json(&saved)["results"].is_array());
    assert!(!stderr.contains("recorded in the history (") || stderr.contains("not recorded"), "{stderr}");
}

#[test]
fn a_password_in_db_is_recorded_and_printed_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on the loopback refuses at once.
    let secret = "s3cr@t/Pw";
    let forms = [
        vec!["--db".to_string(), format!("postgres://u:{secret}@127.0.0.1:1/db")],
        vec![format!("--db=postgresql://u@127.0.0.1:1/db?password={secret}&connect_timeout=1")],
    ];
    for (i, form) in forms.iter().enumerate() {
        let file = format!("r{i}.json");
        let mut args: Vec<&str> = vec!["run", "--quick", "syscall.null", "-o", &file, "--format", "json"];
        args.extend(form.iter().map(String::as_str));
        let out = finish(start(&args, dir.path()), "run --db with a password");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        for (what, text) in [("stdout", stdout.to_string()), ("stderr", stderr.to_string())] {
            assert!(!text.contains("s3cr") && !text.contains("Pw"), "{form:?}: the password in {what}: {text}");
        }
        let saved = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert!(!saved.contains("s3cr") && !saved.contains("Pw"), "{form:?}: the password in the result file");
        let command = read_json(&dir.path().join(&file))["command"].to_string();
        assert!(command.contains("127.0.0.1:1/db"), "{command}");
        let html = dir.path().join(format!("r{i}.html"));
        let out =
            finish(start(&["report", &file, "--html", html.to_str().unwrap(), "-q"], dir.path()), "report --html");
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(!page.contains("s3cr"), "{form:?}: the password in the HTML report");
    }
}
