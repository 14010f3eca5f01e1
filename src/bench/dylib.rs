//! `lib.dlopen`: load and unload a tiny shared library.
//!
//! Seed rows: RightSpeed "load and initialize library for a process"; Go! "install" /
//! "uninstall" of a component.
//!
//! The library is osprim's own probe (`probe/osprim_probe.rs`, built by `build.rs`, 4 KiB, one
//! function, no dependencies), carried inside the binary and written to the run's private
//! directory before measuring.
//! **Timing model:** the sampler's loop around `dlopen(RTLD_NOW|RTLD_LOCAL)` + `dlclose`.
//! **Validation:** the loaded library answers its probe function, appears in
//! `/proc/self/maps` while open and is gone after `dlclose` (so each iteration really maps
//! and unmaps it); every open in the loop succeeded.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sys::dl;
use std::ffi::CString;

static PROBE_SO: &[u8] = include_bytes!(env!("OSPRIM_PROBE_SO"));

/// `dlopen` + `dlclose`.
pub struct Dlopen;

fn mapped(path: &str) -> Option<bool> {
    std::fs::read_to_string("/proc/self/maps").ok().map(|m| m.lines().any(|l| l.ends_with(path)))
}

impl Benchmark for Dlopen {
    fn id(&self) -> &'static str {
        "lib.dlopen"
    }
    fn about(&self) -> &'static str {
        "dlopen + dlclose of a 4 KiB shared library (load, relocate, unmap)"
    }
    fn available(&self) -> Result<(), String> {
        if PROBE_SO.is_empty() {
            Err("the probe library could not be built (see build warnings)".into())
        } else {
            Ok(())
        }
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        let path = ctx.scratch.join("libosprim_probe.so");
        std::fs::write(&path, PROBE_SO).map_err(|e| NotMeasured::Failed(format!("write {}: {e}", path.display())))?;
        let path_str = path.to_string_lossy().into_owned();
        let cpath = CString::new(path_str.clone()).map_err(|_| NotMeasured::Failed("path contains NUL".into()))?;

        let lib = dl::Library::open(&cpath).map_err(|e| NotMeasured::Failed(format!("dlopen: {e}")))?;
        let answer = lib.probe_answer();
        let while_open = mapped(&path_str);
        drop(lib);
        let after_close = mapped(&path_str);

        let (mut failed, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            if !dl::open_close(&cpath) {
                failed += 1;
            }
        });
        let maps_check = match (while_open, after_close) {
            (Some(o), Some(c)) => Check::new(
                "mapped while open, unmapped after dlclose (/proc/self/maps)",
                "mapped, then gone",
                format!(
                    "{}, then {}",
                    if o { "mapped" } else { "not mapped" },
                    if c { "still mapped" } else { "gone" }
                ),
                o && !c,
            ),
            _ => Check::impossible("mapped while open, unmapped after dlclose", "/proc/self/maps is not readable"),
        };
        let checks = vec![
            Check::new("probe function answers", "42", format!("{answer:?}"), answer == Some(42)),
            maps_check,
            Check::all_ok("every dlopen succeeds", failed, calls),
        ];
        Ok(Measured::new(samples, checks))
    }
}
