//! Build script: records the build (git commit, rustc version, profile) for the result file.
//!
//! The commit is the last one that changed osprim's code (its crates, the binary's sources, the
//! manifests), with `-dirty` when the code differs from it. The script re-runs when HEAD moves
//! or the code changes, never on other changes to the index; and only this crate and the
//! binary's `main.rs` use what it records, so a commit that changes only documentation
//! rebuilds this stamp and relinks the binary, and recompiles nothing else.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the recorded commit covers.
const CODE: &[&str] = &["src", "crates", "Cargo.toml", "Cargo.lock"];

fn main() {
    // The workspace: two levels above this crate.
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("../..");
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc).arg("--version").output().ok();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    println!("cargo:rustc-env=OSPRIM_RUSTC_VERSION={}", version.unwrap_or_else(|| "unknown".into()));
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(&root)
            .args(args)
            .args(CODE)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["log", "-1", "--format=%h", "--abbrev=12", "--"]).filter(|c| !c.is_empty());
    let dirty = git(&["status", "--porcelain", "--untracked-files=no", "--"]).is_some_and(|s| !s.is_empty());
    let commit = match commit {
        Some(c) if dirty => format!("{c}-dirty"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=OSPRIM_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=OSPRIM_PROFILE={}", env::var("PROFILE").unwrap_or_else(|_| "unknown".into()));
    for path in CODE {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    // HEAD, and the branch it names (a commit moves the branch, not HEAD).
    let git = root.join(".git");
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        let loose: &Path = &git.join(branch);
        if loose.exists() {
            println!("cargo:rerun-if-changed={}", loose.display());
        }
        println!("cargo:rerun-if-changed={}", git.join("packed-refs").display());
    }
}
