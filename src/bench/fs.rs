//! Cached-file operations: `fs.open_close`, `fs.stat`.
//!
//! Seed rows: RightSpeed "open system/per-app task type group file (file in the file cache)".
//!
//! The file (4 KiB) lives in the run's private temporary directory and is read once before
//! measuring, so its inode and dentry are cached.
//! **Timing model:** the sampler's loop around `open(O_RDONLY|O_CLOEXEC)` + `close`, or one
//! `stat`; the path is a C string built before the clock starts.
//! **Validation:** every call succeeds (and `stat` reports the right size), and the thread's
//! block-input count (`getrusage` `ru_inblock`) does not rise: nothing was read from disk.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use nix::fcntl::{OFlag, open};
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::stat::{Mode, stat};
use std::ffi::CString;

const FILE_BYTES: usize = 4096;

fn prepare(ctx: &Ctx) -> Result<CString, NotMeasured> {
    let path = ctx.scratch.join("cached-file");
    std::fs::write(&path, vec![0x5a; FILE_BYTES])
        .map_err(|e| NotMeasured::Failed(format!("write {}: {e}", path.display())))?;
    std::fs::read(&path).map_err(|e| NotMeasured::Failed(format!("read {}: {e}", path.display())))?;
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| NotMeasured::Failed("path contains NUL".into()))
}

fn blocks_read() -> Option<i64> {
    getrusage(UsageWho::RUSAGE_THREAD).ok().map(|u| u.block_reads())
}

fn no_disk_reads(before: Option<i64>, after: Option<i64>) -> Check {
    match (before, after) {
        (Some(b), Some(a)) => Check::new("no block reads (file cached)", "0 ru_inblock", format!("{}", a - b), a == b),
        _ => Check::impossible("no block reads (file cached)", "getrusage failed"),
    }
}

/// `open` + `close` of a cached file.
pub struct OpenClose;

impl Benchmark for OpenClose {
    fn id(&self) -> &'static str {
        "fs.open_close"
    }
    fn about(&self) -> &'static str {
        "open(O_RDONLY) + close of a small cached file"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let path = prepare(ctx)?;
        let before = blocks_read();
        let (mut failed, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            match open(path.as_c_str(), OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
                Ok(fd) => drop(fd),
                Err(_) => failed += 1,
            }
        });
        let after = blocks_read();
        Ok(Measured::new(
            samples,
            vec![Check::all_ok("every open succeeds", failed, calls), no_disk_reads(before, after)],
        ))
    }
}

/// `stat` of a cached file.
pub struct Stat;

impl Benchmark for Stat {
    fn id(&self) -> &'static str {
        "fs.stat"
    }
    fn about(&self) -> &'static str {
        "stat() of a small cached file"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let path = prepare(ctx)?;
        let before = blocks_read();
        let (mut wrong, mut calls) = (0u64, 0u64);
        let samples = ctx.iter(|| {
            calls += 1;
            match stat(path.as_c_str()) {
                Ok(st) if st.st_size == FILE_BYTES as i64 => {}
                _ => wrong += 1,
            }
        });
        let after = blocks_read();
        Ok(Measured::new(
            samples,
            vec![Check::all_ok("every stat succeeds with the right size", wrong, calls), no_disk_reads(before, after)],
        ))
    }
}
