//! `osprim ab` finds a real slowdown of known size, and does not find one in A against A.
//!
//! The slowdown: condition B runs the worker under a seccomp filter, installed by a prefix
//! command of this test's own (`tests/fixtures/ab/seccomp-slow.c`, compiled here with the
//! system's C compiler): one load of the system call's first argument, then
//! `SECCOMP_RET_ALLOW`. The kernel runs it on every system call of the worker, and because it
//! reads an argument its constant-action cache (Linux 5.11) cannot skip it; user-space work
//! costs the same. This is the smallest filter a container runtime can install, and its size
//! is measured independently of osprim: a thread of this test times a loop of raw `getppid`
//! calls, installs the same filter on itself, and times the loop again.
//!
//! Then `osprim ab` of the system-call family (its rows of one call per operation) and of three
//! rows without a system call in their timed region (`ctx.user`, and the uncontended
//! `lock.mutex.*` fast paths) must call at least
//! 90 % of the first slower and none of the second slower, within the default budget; its
//! gate (`--fail-on-regression 5`) must exit 1; and A against A (`--check`) must call at most
//! one row of the family different. No absolute time is asserted; the test skips (saying why)
//! where no C compiler is found or seccomp filters cannot be installed.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The system-call family's rows that make one system call per operation. Not
/// `syscall.io_uring_nop`: it makes one `io_uring_enter` per batch, so at a batch of 128 a
/// filter run once per system call adds well under 1 % per NOP.
const AFFECTED: [&str; 8] = [
    "syscall.null",
    "syscall.getppid",
    "syscall.enosys",
    "syscall.reject",
    "syscall.getpid",
    "syscall.ioctl",
    "syscall.getfd",
    "syscall.futex_wait",
];
const UNAFFECTED: [&str; 3] = ["ctx.user", "lock.mutex.lock", "lock.mutex.unlock"];

/// The prefix command, compiled into `dir`; why not, where it cannot be.
fn compile_prefix(dir: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ab/seccomp-slow.c");
    let out = dir.join("seccomp-slow");
    let status = std::process::Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&out)
        .arg(&source)
        .status()
        .map_err(|e| format!("no C compiler (cc): {e}"))?;
    status.success().then_some(out).ok_or_else(|| format!("cc failed on {}", source.display()))
}

/// Nanoseconds per raw `getppid`, the best of a few timed loops.
fn getppid_ns() -> f64 {
    const CALLS: u32 = 20_000;
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..CALLS {
                // SAFETY: getppid takes no argument and cannot fail.
                std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
            }
            t.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}

/// `(without, with)` ns per getppid, in a thread that installs the one-load filter between
/// the two loops (the filter binds that thread only, which ends here).
fn independent_size() -> Result<(f64, f64), String> {
    std::thread::spawn(|| {
        let plain = getppid_ns();
        // struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
        let prog = [
            libc::sock_filter { code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, jt: 0, jf: 0, k: 16 },
            libc::sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW },
        ];
        let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr().cast_mut() };
        // SAFETY: prctl with integer arguments, then with a pointer to `fprog`, which points to
        // `prog`; both outlive the calls and the kernel copies the filter.
        let installed = unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog) == 0
        };
        if !installed {
            return Err(format!("cannot install a seccomp filter: {}", std::io::Error::last_os_error()));
        }
        Ok((plain, getppid_ns()))
    })
    .join()
    .expect("timing thread")
}

/// `osprim ab PATTERNS… ARGS…` in `dir`; its exit status and JSON.
fn ab(dir: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"))
        .current_dir(dir)
        .env("TMPDIR", dir)
        .env("RUST_BACKTRACE", "1")
        .arg("ab")
        .args(args)
        .args(["--quiet", "--format", "json", "--no-save"])
        .output()
        .expect("osprim runs");
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("osprim ab gave no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn verdicts<'a>(v: &'a Value, pick: &dyn Fn(&str) -> bool) -> Vec<(&'a str, &'a str)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| pick(r["id"].as_str().unwrap()))
        .map(|r| (r["id"].as_str().unwrap(), r["decision"]["verdict"].as_str().unwrap()))
        .collect()
}

#[test]
fn a_seccomp_filter_is_found_slower_and_a_against_a_is_not_called_different() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = match compile_prefix(dir.path()).and_then(|p| independent_size().map(|s| (p, s))) {
        Ok((p, (plain, slowed))) => {
            eprintln!(
                "independent measure (getppid loop, Instant): {plain:.1} ns plain, {slowed:.1} ns under the one-load \
                 filter: +{:.0} %",
                100.0 * (slowed / plain - 1.0)
            );
            p
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let condition = format!("{} 1", prefix.display());
    let mut args = AFFECTED.to_vec();
    args.extend(UNAFFECTED);
    args.extend(["--b", &condition, "--fail-on-regression", "5"]);
    let (status, v) = ab(dir.path(), &args);
    assert_eq!(status, Some(1), "the gate fails a +5 % regression: {}", v["stopped"]);
    let affected = verdicts(&v, &|id| AFFECTED.contains(&id));
    let slower = affected.iter().filter(|(_, verdict)| *verdict == "slower").count();
    eprintln!("under the filter: {affected:?}; stopped: {}", v["stopped"]);
    assert!(affected.len() >= 8, "{affected:?}");
    assert!(10 * slower >= 9 * affected.len(), "at least 90 % called slower: {affected:?}");
    let unaffected = verdicts(&v, &|id| UNAFFECTED.contains(&id));
    assert_eq!(unaffected.len(), UNAFFECTED.len());
    assert!(unaffected.iter().all(|(_, verdict)| *verdict != "slower"), "{unaffected:?}");

    // A against A: the same worker on both sides.
    let mut args = AFFECTED.to_vec();
    args.push("--check");
    let (status, v) = ab(dir.path(), &args);
    assert_eq!(status, Some(0));
    let rows = verdicts(&v, &|_| true);
    let different = rows.iter().filter(|(_, verdict)| matches!(*verdict, "slower" | "faster")).count();
    eprintln!("A against A: {rows:?}; stopped: {}", v["stopped"]);
    assert!(different <= 1, "{rows:?}");
}
