//! `osprim report --html` from outside: bad input gives one error line and no page; a page
//! loaded in a real headless Chromium shows every plot it says it drew (counted in the DOM
//! Chromium produced, and laid out at a non-zero size), and its screenshot is a PNG of the
//! window's size that is not blank. Chromium runs under a deadline, in a fresh profile
//! directory removed afterwards; without Chromium those tests say so and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest Chromium may take for one page before it is killed.
const DEADLINE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn osprim(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("osprim")).args(args).env("RUST_BACKTRACE", "1").output().unwrap()
}

/// Makes a report; returns the page and its stderr.
fn report(args: &[&Path], compare: Option<&Path>, out: &Path) -> String {
    let mut a: Vec<&std::ffi::OsStr> = vec!["report".as_ref()];
    a.extend(args.iter().map(|p| p.as_os_str()));
    if let Some(b) = compare {
        a.extend(["--compare".as_ref(), b.as_os_str()]);
    }
    a.extend(["--html".as_ref(), out.as_os_str()]);
    let o = osprim(&a);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    std::fs::read_to_string(out).unwrap()
}

/// The one line and non-zero status of a refused report.
fn refused(args: &[&std::ffi::OsStr]) -> String {
    let o = osprim(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(o.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    stderr
}

#[test]
fn bad_input_is_one_error_line_and_leaves_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.html");
    let good = fixture("sweep-run.json");
    let s = |p: &Path| p.as_os_str().to_owned();
    let missing = dir.path().join("missing.json");
    let e = refused(&["report".as_ref(), &s(&missing), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("missing.json"), "{e}");
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, "{\"schema\": 3, \"osprim\"").unwrap();
    let e = refused(&["report".as_ref(), &s(&corrupt), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("truncated") || e.contains("not an osprim result"), "{e}");
    assert!(!out.exists(), "no page for a bad file");
    let e = refused(&["report".as_ref(), &s(&good), "--compare".as_ref(), &s(&corrupt), "--html".as_ref(), &s(&out)]);
    assert!(e.contains("corrupt.json"), "{e}");
    let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), dir.path().as_os_str()]);
    assert!(e.contains("directory"), "{e}");
    assert!(dir.path().is_dir());
    let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), "/nonexistent-dir/x.html".as_ref()]);
    assert!(e.contains("/nonexistent-dir/x.html"), "{e}");
    let fifo = dir.path().join("fifo");
    if nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).is_ok() {
        let e = refused(&["report".as_ref(), &s(&good), "--html".as_ref(), &s(&fifo)]);
        assert!(e.contains("FIFO"), "{e}");
    }
    let o = osprim(&["report".as_ref(), &s(&good), "--noise=lots".as_ref(), "--html".as_ref(), &s(&out)]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "a usage mistake: {e}");
    assert!(e.contains("'lots' is not a percentage") && !e.contains("panicked"), "{e}");
    assert!(!out.exists());
}

#[test]
fn a_page_goes_to_stdout_with_a_dash_and_replaces_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixture("sweep-run.json");
    let o = osprim(&["report".as_ref(), good.as_os_str(), "--html".as_ref(), "-".as_ref()]);
    assert!(o.status.success());
    let page = String::from_utf8(o.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    let out = dir.path().join("old.html");
    std::fs::write(&out, "old").unwrap();
    let again = report(&[&good], None, &out);
    assert_eq!(again, page, "the same page, byte for byte");
}

/// Chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n))).find(|p| p.is_file())
}

/// Runs headless Chromium on `page` with `extra` flags, stdout into a file, killed after
/// [`DEADLINE`]; the profile directory is a fresh temporary one. Returns stdout.
fn run_chromium(bin: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let stdout_path = out_dir.path().join("stdout");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let began = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if began.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "chromium: {status}");
    drop(profile);
    std::fs::read_to_string(stdout_path).unwrap()
}

/// The value of `attr="…"` on the `<body>` element of `dom`.
fn body_attr(dom: &str, attr: &str) -> Option<usize> {
    let body = &dom[dom.find("<body")?..];
    let body = &body[..body.find('>')?];
    let at = body.find(&format!("{attr}=\""))? + attr.len() + 2;
    body[at..].split('"').next()?.parse().ok()
}

/// Loads `page` in Chromium and checks that every plot it says it holds is in the DOM and was
/// laid out at a non-zero size; returns the count.
fn plots_as_rendered(bin: &Path, page: &Path) -> usize {
    let dom = run_chromium(bin, page, &["--dump-dom".into(), "--virtual-time-budget=2000".into()]);
    let said = body_attr(&dom, "data-plots").expect("the page says how many plots it drew");
    assert_eq!(dom.matches("<svg class=\"plot\"").count(), said, "plots in Chromium's DOM");
    assert_eq!(body_attr(&dom, "data-drawn"), Some(said), "plots laid out at a non-zero size");
    said
}

/// Width and height from a PNG's IHDR.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let sig = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != sig || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    Some((be(16), be(20)))
}

fn screenshot(bin: &Path, page: &Path, dir: &Path, name: &str) -> Vec<u8> {
    let shot = dir.join(name);
    run_chromium(
        bin,
        page,
        &[format!("--screenshot={}", shot.display()), "--window-size=1280,4000".into(), "--hide-scrollbars".into()],
    );
    let bytes = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(png_size(&bytes), Some((1280, 4000)), "a PNG of the window's size");
    bytes
}

#[test]
fn chromium_renders_every_plot_of_a_full_run_a_sweep_and_a_comparison() {
    let Some(bin) = chromium() else {
        println!("skipped: chromium not found (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.html");
    let page = report(&[&fixture("default-run.json")], None, &full);
    assert!(page.contains("<section id=\"papers\">"));
    let n_full = plots_as_rendered(&bin, &full);
    assert!(n_full >= 1, "the papers' bars at least");

    let cmp = dir.path().join("cmp.html");
    let page = report(&[&fixture("sweep-run.json")], Some(&fixture("sweep-base.json")), &cmp);
    let n = plots_as_rendered(&bin, &cmp);
    let fits = page.matches("sweep over ").count();
    assert!(fits >= 4 && page.contains("ratios new / base of"), "sweeps and a forest plot");
    assert!(n > 2 * 16 + 4, "{n} plots: two per result, one per sweep, the forest");

    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let empty = screenshot(&bin, &blank, dir.path(), "blank.png");
    let shot = screenshot(&bin, &cmp, dir.path(), "shot.png");
    assert!(shot.len() > 10 * empty.len(), "not blank: {} bytes against a blank page's {}", shot.len(), empty.len());
    if let Some(keep) = std::env::var_os("OSPRIM_REPORT_SHOT") {
        std::fs::write(keep, &shot).unwrap();
    }
}
