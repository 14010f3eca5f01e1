//! Output paths that cannot take the result are refused before anything is measured: an
//! immutable or append-only file (`chattr +i`/`+a`, which need root and a file system that
//! supports them; skipped otherwise), a name over 255 bytes, a name ending in '/'.

use std::process::Command;

fn refused_before_measuring(target: &std::path::Path) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .args(["run", "--quick", "syscall", "--output"])
        .arg(target)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{}: {stderr}", target.display());
    assert!(out.stdout.is_empty(), "nothing measured: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn immutable_and_append_only_files_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["+i", "+a"] {
        let file = dir.path().join(format!("r{}.json", &flag[1..]));
        std::fs::write(&file, "someone's data").unwrap();
        let set = Command::new("chattr").arg(flag).arg(&file).output();
        if !set.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("chattr {flag} is not available here (needs root and ext4/xfs/btrfs): skipped");
            continue;
        }
        let line = refused_before_measuring(&file);
        assert!(line.contains("cannot write results to"), "{line}");
        let _ = Command::new("chattr").arg(flag.replace('+', "-")).arg(&file).status();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "someone's data", "left as it was");
    }
}

#[test]
fn long_names_and_trailing_slashes_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("x".repeat(300));
    assert!(refused_before_measuring(&long).contains("longer than 255 bytes"));
    let slash = std::path::PathBuf::from(format!("{}/newdir/", dir.path().display()));
    assert!(refused_before_measuring(&slash).contains("names a directory"));
    assert!(!dir.path().join("newdir").exists());
}

/// A results directory osprim cannot write to (read-only: as root, a directory writable by no
/// one is still writable, so the same refusal is checked with a file in its place) is refused
/// in one line that says how to go on: `--no-save` or `-o PATH`; nothing is measured.
#[test]
fn an_unwritable_results_directory_suggests_no_save_or_output() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("osprim-results"), "not a directory").unwrap();
    let readonly = tempfile::tempdir().unwrap();
    let results = readonly.path().join("osprim-results");
    std::fs::create_dir(&results).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&results, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root (CAP_DAC_OVERRIDE) writes into it anyway.
    let privileged = std::fs::write(results.join("probe"), "").is_ok();
    let _ = std::fs::remove_file(results.join("probe"));
    for (dir, args) in [
        (work.path(), vec!["run", "--quick", "syscall.null"]),
        (work.path(), vec!["stress", "--duration", "1s"]),
        (readonly.path(), vec!["run", "--quick", "syscall.null"]),
    ] {
        if privileged && dir == readonly.path() {
            eprintln!("skipped the read-only directory: root writes to it anyway (the file case checks the same)");
            continue;
        }
        let out = Command::new(assert_cmd::cargo::cargo_bin("osprim")).args(&args).current_dir(dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line: {stderr}");
        assert!(lines[0].starts_with("error: cannot create a result file in osprim-results"), "{stderr}");
        assert!(lines[0].contains("--no-save") && lines[0].contains("-o PATH"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing measured");
    }
    std::fs::set_permissions(&results, std::fs::Permissions::from_mode(0o755)).unwrap();
}
