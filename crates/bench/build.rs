//! Build script: builds, with rustc alone, the small programs the binary carries inside itself: the probe library `lib.dlopen`
//! loads, the initialising library of `lib.dlopen.init`, the `read` interposer of
//! `interpose.preload`, the helper executable both of those measure in, and the static
//! program `process.*_exec` and `process.posix_spawn` start (`probe/`); and, with clang where
//! it is on PATH, the BPF programs of `interpose.ebpf` (`probe/osprim_bpf.c`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());

    // Each artefact is built with rustc alone and carried inside the binary (include_bytes!
    // of the path in its env variable). A failed build leaves an empty placeholder, and the
    // benchmarks that need it are skipped with the reason.
    let artefacts = [
        (
            "probe/osprim_probe.rs",
            "cdylib",
            "osprim_probe",
            "libosprim_probe.so",
            "OSPRIM_PROBE_SO",
            "lib.dlopen, lib.dlclose",
            &[][..],
        ),
        (
            "probe/osprim_init.rs",
            "cdylib",
            "osprim_init",
            "libosprim_init.so",
            "OSPRIM_INIT_SO",
            "lib.dlopen.init",
            &[][..],
        ),
        (
            "probe/osprim_interpose.rs",
            "cdylib",
            "osprim_interpose",
            "libosprim_interpose.so",
            "OSPRIM_INTERPOSE_SO",
            "interpose.preload",
            &[][..],
        ),
        (
            "probe/osprim_helper.rs",
            "bin",
            "osprim_helper",
            "osprim_helper",
            "OSPRIM_HELPER_BIN",
            "interpose.preload, lib.dlopen.init",
            &[][..],
        ),
        // A static program without libc: `_start` exits with 42.
        (
            "probe/osprim_exit.rs",
            "bin",
            "osprim_exit",
            "osprim_exit",
            "OSPRIM_EXIT_BIN",
            "process.fork_exec, process.vfork_exec, process.posix_spawn",
            &[
                "-C",
                "relocation-model=static",
                "-C",
                "link-arg=-nostartfiles",
                "-C",
                "link-arg=-nostdlib",
                "-C",
                "link-arg=-static",
            ][..],
        ),
    ];
    for (src, crate_type, name, file, var, users, extra) in artefacts {
        println!("cargo:rerun-if-changed={src}");
        let path = out.join(file);
        let status = Command::new(&rustc)
            .args(["--crate-type", crate_type, "--edition", "2021", "-C", "opt-level=2", "-C", "panic=abort"])
            .args(extra)
            .args(["-C", "strip=symbols", "--crate-name", name, "-o"])
            .arg(&path)
            .arg(src)
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            std::fs::write(&path, b"").expect("write an empty placeholder");
            println!("cargo:warning=could not build {src}; {users} will be skipped");
        }
        println!("cargo:rustc-env={var}={}", path.display());
    }
    bpf(&out);
}

/// The BPF programs of `interpose.ebpf`: `probe/osprim_bpf.c` compiled by clang for the BPF
/// target into an object file the binary carries (`OSPRIM_BPF_OBJ`). Without clang, or when it
/// fails, the object is empty and `OSPRIM_BPF_WHY` says why, which the rows give as their reason
/// to be skipped.
fn bpf(out: &std::path::Path) {
    let src = "probe/osprim_bpf.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let path = out.join("osprim_bpf.o");
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let why = match Command::new(&clang).args(["-O2", "-g", "-target", "bpf", "-c", src, "-o"]).arg(&path).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "clang failed on {src}: {}",
            String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("no message")
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("clang not found".to_string()),
        Err(e) => Some(format!("could not run clang: {e}")),
    };
    if let Some(why) = &why {
        std::fs::write(&path, b"").expect("write an empty placeholder");
        println!("cargo:warning=could not build {src} ({why}); interpose.ebpf will be skipped");
    }
    println!("cargo:rustc-env=OSPRIM_BPF_OBJ={}", path.display());
    println!("cargo:rustc-env=OSPRIM_BPF_WHY={}", why.unwrap_or_default().replace('\n', " "));
}
