//! A real slowdown of known size, found by `compare`.
//!
//! The slowdown: a seccomp filter (seccomp(2), "SECCOMP_MODE_FILTER") installed in osprim's
//! process before it starts, made of a long chain of loads of the system call's first
//! argument and then `SECCOMP_RET_ALLOW`. The kernel runs the filter on every system call of
//! the process and of every worker it starts (filters are inherited across fork and exec), so
//! every system call costs more while user-space work costs the same. The loads read an
//! argument, not only the call's number, so that the kernel cannot prove the filter always
//! allows a call and skip it (its "constant action" cache, Linux 5.11, covers filters that
//! read only the number and the architecture).
//!
//! Its size is measured independently of osprim: a thread of this test times a loop of raw
//! `getppid` calls with `std::time::Instant`, installs the same filter on itself (a filter
//! binds the thread that installs it and what it starts), and times the loop again.
//!
//! Then `osprim run --quick --rounds 8` (eight rounds, so that a level the machine takes for a
//! round or two widens the interval less than with three) measures a few rows bound by a system call and a few with none
//! in their timed region, plainly, under the filter, under the filter, plainly, and `osprim
//! compare` (first against second, fourth against third) must call at least 90 % of the first
//! rows slower, and none of the second slower (or faster) in both orders: a drift of the
//! shared machine during the test moves the two comparisons in opposite directions. No
//! absolute time is asserted; the test skips (saying why) where seccomp filters cannot be
//! installed.

use assert_cmd::Command;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::time::Instant;

/// Loads per filter: the filter's length (the kernel allows 4096 instructions).
const LOADS: usize = 4000;

/// Rows whose timed region is one system call per operation.
const AFFECTED: [&str; 4] = ["syscall.null", "syscall.getpid", "syscall.enosys", "id.gettid"];

/// Rows whose timed region stays in user space (read in their sources): `ctx.user` switches
/// stacks in assembly; `lock.mutex.*` lock or unlock free, uncontended mutexes (glibc's
/// fast path, an atomic instruction; its futex call happens only with a waiter, and the
/// probing thread only tries the locks, outside the clock).
const UNAFFECTED: [&str; 3] = ["ctx.user", "lock.mutex.lock", "lock.mutex.unlock"];

/// The filter: `LOADS` loads of the first argument's low word, then allow.
fn filter() -> Vec<libc::sock_filter> {
    // struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
    const ARG0: u32 = 16;
    let load = libc::sock_filter { code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, jt: 0, jf: 0, k: ARG0 };
    let allow =
        libc::sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW };
    let mut prog = vec![load; LOADS];
    prog.push(allow);
    prog
}

/// Installs `prog` on the calling thread (and what it later starts).
///
/// # Safety
///
/// Only system calls with valid pointers; async-signal-safe (no allocation), so that it may
/// run between fork and exec.
unsafe fn install(prog: &[libc::sock_filter]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr().cast_mut() };
    // SAFETY: prctl with integer arguments; PR_SET_NO_NEW_PRIVS lets an unprivileged thread
    // install a filter.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fprog` points to `prog`, which outlives the call; the kernel copies the filter.
    if unsafe { libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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

/// `(without, with)` ns per getppid, measured in a thread that installs the filter between
/// the two loops; the error says why no filter could be installed.
fn independent_size(prog: Vec<libc::sock_filter>) -> Result<(f64, f64), String> {
    std::thread::spawn(move || {
        let plain = getppid_ns();
        // SAFETY: see `install`; the filter binds this thread only, which ends below.
        unsafe { install(&prog) }.map_err(|e| format!("cannot install a seccomp filter: {e}"))?;
        Ok((plain, getppid_ns()))
    })
    .join()
    .expect("timing thread")
}

/// `osprim run --quick` of every row into `out`, under the filter when `slowed`.
fn run(out: &std::path::Path, slowed: bool) {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("osprim"));
    cmd.args(["run", "--quick", "--rounds", "8", "--no-history", "--format", "json", "-o"]).arg(out);
    cmd.args(AFFECTED).args(UNAFFECTED).env("RUST_BACKTRACE", "1");
    if slowed {
        let prog = filter();
        // SAFETY: `install` only makes system calls (no allocation, no lock), which is what
        // may run between fork and exec; `prog` is moved into the closure and lives as long.
        unsafe {
            cmd.pre_exec(move || install(&prog));
        }
    }
    let status = Command::from_std(cmd).output().expect("osprim runs");
    assert!(status.status.success(), "osprim run failed: {}", String::from_utf8_lossy(&status.stderr));
}

#[test]
fn a_seccomp_filter_that_slows_every_system_call_is_found_by_compare() {
    let (plain, slowed) = match independent_size(filter()) {
        Ok(v) => v,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    eprintln!(
        "independent measure (getppid loop, Instant): {plain:.1} ns plain, {slowed:.1} ns under the \
         filter of {LOADS} loads: +{:.0} %",
        100.0 * (slowed / plain - 1.0)
    );
    assert!(slowed > 1.5 * plain, "the filter must slow a system call by half at least: {plain} -> {slowed}");

    // Plain, slowed, slowed, plain: a drift of the machine during the test moves the two
    // comparisons in opposite directions, the filter moves both the same way.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> =
        ["base1", "slow1", "slow2", "base2"].iter().map(|n| dir.path().join(format!("{n}.json"))).collect();
    for (f, slowed) in files.iter().zip([false, true, true, false]) {
        run(f, slowed);
    }
    let verdicts = |base: &std::path::Path, slow: &std::path::Path| -> Vec<Value> {
        let out = Command::cargo_bin("osprim")
            .unwrap()
            .arg("compare")
            .arg(base)
            .arg(slow)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).expect("compare's JSON");
        v[0]["comparison"]["compared"].as_array().expect("compared rows").clone()
    };
    let pairs = [verdicts(&files[0], &files[1]), verdicts(&files[3], &files[2])];
    let verdict = |rows: &[Value], id: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["id"] == id)
            .map(|r| {
                eprintln!(
                    "{id}: {}, ratio {:.3} {}",
                    r["verdict"],
                    r["ratio"].as_f64().unwrap_or(f64::NAN),
                    r["ratio_ci95"]
                );
                r["verdict"].as_str().unwrap_or("").to_string()
            })
            .collect()
    };
    let (mut slower, mut affected) = (0, 0);
    for rows in &pairs {
        for id in AFFECTED {
            for v in verdict(rows, id) {
                affected += 1;
                slower += usize::from(v == "slower");
            }
        }
    }
    assert!(affected >= 2 * AFFECTED.len(), "every affected row compared: {pairs:?}");
    assert!(10 * slower >= 9 * affected, "{slower} of {affected} affected rows called slower");
    for id in UNAFFECTED {
        let (first, second) = (verdict(&pairs[0], id), verdict(&pairs[1], id));
        assert!(!first.is_empty() && !second.is_empty(), "{id} compared");
        for dir in ["slower", "faster"] {
            let both = first.iter().any(|v| v == dir) && second.iter().any(|v| v == dir);
            assert!(!both, "{id} has no system call in its timed region, called {dir} in both orders");
        }
    }
}
