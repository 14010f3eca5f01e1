//! Starting osprim's worker processes (`execution`): a `pre_exec` hook that makes the worker
//! die with the thread that started it (`PR_SET_PDEATHSIG` = `SIGKILL`, see prctl(2)) and
//! turns address-space randomization back on for it when osprim itself runs without
//! (`ADDR_NO_RANDOMIZE`, see personality(2): `setarch -R`, a debugger); what osprim's own
//! personality says; and, in the worker, taking a variable out of its environment.
//!
//! Unlike [`super::spawn::Helper`]'s children, a worker keeps the terminal's SIGINT: it stops
//! measuring at Ctrl-C like the run does (`interrupt::install_worker`).
//!
//! # Safety
//! The `pre_exec` hook runs in the forked child of a process that may have other threads, so
//! it calls only async-signal-safe functions (`prctl`, `getppid`, `personality`, `_exit`).
//! [`forget_env`] changes the environment, which is sound only while no other thread reads
//! it: it is called first thing in the worker's `main`, before any thread exists.
#![allow(unsafe_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Asks for the persona without changing it (personality(2)).
const QUERY_PERSONA: libc::c_ulong = 0xffff_ffff;

/// Whether this process runs with address-space randomization turned off for itself
/// (`ADDR_NO_RANDOMIZE` in its personality).
pub fn randomization_off() -> bool {
    // SAFETY: the query form of personality(2) changes nothing and touches no memory.
    let persona = unsafe { libc::personality(QUERY_PERSONA) };
    persona != -1 && persona & libc::ADDR_NO_RANDOMIZE != 0
}

/// Sets up `cmd` to start a worker: it is killed when the calling thread ends (and exits at
/// once if osprim is already gone), and runs with address-space randomization on.
pub fn worker_command(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook calls only async-signal-safe functions (module doc).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            let persona = libc::personality(QUERY_PERSONA);
            if persona != -1 && persona & libc::ADDR_NO_RANDOMIZE != 0 {
                libc::personality((persona & !libc::ADDR_NO_RANDOMIZE) as libc::c_ulong);
            }
            Ok(())
        })
    };
}

/// Removes `name` from this process's environment (so that the programs a worker's
/// benchmarks start do not inherit it).
///
/// Call it only while the process has one thread (module doc).
pub fn forget_env(name: &str) {
    // SAFETY: called first thing in the worker's main, before any thread exists (module doc),
    // so nothing reads the environment concurrently.
    unsafe { std::env::remove_var(name) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_command_runs_with_randomization_on() {
        let _serial = crate::testing::serial(); // a fork disturbs fault counting
        let mut cmd = Command::new("cat");
        cmd.arg("/proc/self/personality");
        worker_command(&mut cmd);
        let out = cmd.output().expect("cat runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let persona = u64::from_str_radix(text.trim(), 16).expect("a hex persona");
        assert_eq!(persona & libc::ADDR_NO_RANDOMIZE as u64, 0, "{text}");
    }
}
