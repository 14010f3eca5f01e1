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
