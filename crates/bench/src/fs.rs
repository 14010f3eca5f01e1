//! Cached-file operations: `fs.open_read_close`, `fs.open_close`, `fs.stat`.
//!
//! Seed rows: RightSpeed Table 3 "open system / per-app auto task type group file (file in the
//! file cache)" (`fs.open_read_close`: the file is opened, read and closed, as RightSpeed's
//! library did); `fs.open_close` and `fs.stat` beside it.
//!
//! The files live in the run's private temporary directory and are read once before measuring,
//! so their inode, dentry and pages are cached: 4 KiB for `fs.open_close` and `fs.stat`; for
//! `fs.open_read_close`, one file of known content per parameter `bytes`, at the sizes osprim's
//! own initialising library (`probe/osprim_init.rs`, loaded by `lib.dlopen.init`) reads them:
//! `bytes=512` the system-wide task-type group file, `bytes=256` the per-application one
//! ([`GROUP_FILES`], the same table `lib.dlopen.init` writes its files from).
//! **Timing model:** `fs.open_close`, `fs.stat`: the sampler's loop around
//! `open(O_RDONLY|O_CLOEXEC)` + `close`, or one `stat`. `fs.open_read_close`
//! ([`Ctx::iter_regions`]): each operation timed on its own with the run's timer (one timer
//! overhead subtracted per operation): `open(O_RDONLY|O_CLOEXEC)`, one `read` into a 4 KiB
//! buffer (the whole file: a regular file's read returns all it has up to the count), `close`;
//! clearing the buffer before and checking it after are untimed. Paths are C strings built
//! before the clock starts.
//! **Validation:** every call succeeds (`stat` reports the right size; every read returned the
//! file's `bytes` bytes, byte for byte), and the thread's block-input count (`getrusage`
//! `ru_inblock`) does not rise: nothing was read from disk.

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use nix::fcntl::{OFlag, open};
use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::stat::{Mode, stat};
use platform::timer::Timer;
use std::ffi::{CStr, CString};
use std::hint::black_box;

const FILE_BYTES: usize = 4096;

fn prepare(ctx: &Ctx) -> Result<CString, NotMeasured> {
    let path = ctx.scratch.join("cached-file");
    std::fs::write(&path, vec![0x5a; FILE_BYTES])
        .map_err(|e| NotMeasured::Failed(format!("write {}: {e}", path.display())))?;
    std::fs::read(&path).map_err(|e| NotMeasured::Failed(format!("read {}: {e}", path.display())))?;
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| NotMeasured::Failed("path contains NUL".into()))
}

/// RightSpeed's two task-type group files as osprim models them: (`bytes`, which file). The
/// sizes are those of the files `lib.dlopen.init` writes for its initialising library
/// (system 512, per application 256; `lib.dlopen.init` writes its files at these sizes).
pub const GROUP_FILES: [(usize, &str); 2] = [(512, "system"), (256, "per_app")];

/// The content of an `fs.open_read_close` file of `bytes` bytes: every byte known, not all alike.
fn small_file_content(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 7 % 251) as u8 + 1).collect()
}

/// The `bytes` parameter: one of [`GROUP_FILES`]' sizes; with it, which file it models.
fn group_file(params: &Params) -> Result<(usize, &'static str), NotMeasured> {
    let asked = params.get("bytes").and_then(|v| v.as_u64());
    GROUP_FILES.into_iter().find(|(b, _)| Some(*b as u64) == asked).ok_or_else(|| {
        NotMeasured::Failed(format!("bytes must be one of {:?}, not {asked:?}", GROUP_FILES.map(|(b, _)| b)))
    })
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

/// `open` + `read` (whole) + `close` of a small cached file.
pub struct OpenReadClose;

/// One timed open + read + close of `path` into `buf`; its ticks and the bytes read (`None`
/// if a call failed).
#[inline(never)]
fn timed_open_read_close(timer: &Timer, path: &CStr, buf: &mut [u8]) -> (u64, Option<usize>) {
    let t0 = timer.start();
    let got = match open(black_box(path), OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
        Ok(fd) => {
            let n = nix::unistd::read(&fd, buf).ok();
            nix::unistd::close(fd).ok().and(n)
        }
        Err(_) => None,
    };
    let t1 = timer.stop();
    (t1.wrapping_sub(t0), got)
}

impl Benchmark for OpenReadClose {
    fn id(&self) -> &'static str {
        "fs.open_read_close"
    }
    fn about(&self) -> &'static str {
        "open(O_RDONLY) + read it whole + close of a cached task-type group file (512 B system, 256 B per app)"
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        GROUP_FILES.iter().map(|(b, _)| Params::from([("bytes".to_string(), serde_json::json!(b))])).collect()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let (bytes, file) = group_file(params)?;
        let path = ctx.scratch.join(format!("task-group-file-{file}"));
        let content = small_file_content(bytes);
        std::fs::write(&path, &content).map_err(|e| NotMeasured::Failed(format!("write {}: {e}", path.display())))?;
        std::fs::read(&path).map_err(|e| NotMeasured::Failed(format!("read {}: {e}", path.display())))?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| NotMeasured::Failed("path contains NUL".into()))?;
        let timer = ctx.timer;
        let mut buf = vec![0u8; 4096];
        let (mut ops, mut wrong) = (0u64, 0u64);
        let before = blocks_read();
        let samples = {
            let c = &*ctx;
            c.iter_regions(|n| {
                let mut ticks = 0;
                for _ in 0..n {
                    buf[..bytes].fill(0);
                    let (t, got) = timed_open_read_close(&timer, &cpath, &mut buf);
                    ticks += t;
                    ops += 1;
                    if got != Some(bytes) || buf[..bytes] != content[..] {
                        wrong += 1;
                    }
                }
                Timed::regions(ticks, n)
            })
        };
        let after = blocks_read();
        let mut m = Measured::new(
            samples,
            vec![
                Check::all_ok(
                    format!("every open, read and close succeeds; each read returns the file's {bytes} bytes"),
                    wrong,
                    ops,
                ),
                no_disk_reads(before, after),
            ],
        );
        m.params.insert("file".into(), file.into());
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_file_is_read_every_time_at_each_size() {
        crate::testing::with_ctx(0.05, |ctx| {
            let variants = OpenReadClose.variants(ctx);
            assert_eq!(variants.len(), 2);
            for p in variants {
                let m = OpenReadClose.run(ctx, &p).unwrap();
                for c in &m.checks {
                    assert_eq!(c.ok, Some(true), "{p:?}: {c:?}");
                }
                let bytes = p["bytes"].as_u64().unwrap();
                assert!(m.checks[0].name.contains(&format!("{bytes} bytes")), "{:?}", m.checks[0]);
                assert!(!m.samples.per_op_ns.is_empty());
            }
            assert!(OpenReadClose.run(ctx, &Params::new()).is_err(), "no size, no row");
        });
    }
}
