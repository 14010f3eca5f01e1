//! Build script: records the build (git commit, rustc version, profile) and builds the probe
//! library that `lib.dlopen` loads, which the binary then carries inside itself.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());

    let probe_src = "probe/osprim_probe.rs";
    println!("cargo:rerun-if-changed={probe_src}");
    let probe = out.join("libosprim_probe.so");
    let status = Command::new(&rustc)
        .args(["--crate-type", "cdylib", "--edition", "2021", "-C", "opt-level=2", "-C", "panic=abort"])
        .args(["-C", "strip=symbols", "--crate-name", "osprim_probe", "-o"])
        .arg(&probe)
        .arg(probe_src)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-env=OSPRIM_PROBE_SO={}", probe.display()),
        _ => {
            // lib.dlopen then reports that the probe could not be built.
            std::fs::write(&probe, b"").expect("write an empty probe placeholder");
            println!("cargo:rustc-env=OSPRIM_PROBE_SO={}", probe.display());
            println!("cargo:warning=could not build the probe library; lib.dlopen will be skipped");
        }
    }

    let version = Command::new(&rustc).arg("--version").output().ok();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    println!("cargo:rustc-env=OSPRIM_RUSTC_VERSION={}", version.unwrap_or_else(|| "unknown".into()));
    let commit = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok();
    let commit = commit.filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let dirty = Command::new("git").args(["status", "--porcelain", "--untracked-files=no"]).output().ok();
    let dirty = dirty.map(|o| !o.stdout.is_empty()).unwrap_or(false);
    let commit = match commit {
        Some(c) if dirty => format!("{c}-dirty"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo:rustc-env=OSPRIM_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=OSPRIM_PROFILE={}", env::var("PROFILE").unwrap_or_else(|_| "unknown".into()));
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}
