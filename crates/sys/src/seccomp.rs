//! Installing a seccomp-BPF filter on the calling thread, and the supervisor's side of
//! `SECCOMP_RET_USER_NOTIF` (the pattern of container runtimes that answer some calls from
//! outside the process). See seccomp(2), seccomp_unotify(2).
//!
//! A filter cannot be removed: it lives as long as the thread that installed it (and is
//! inherited by the children it forks), so callers install filters only in a child made for
//! that purpose, and a supervisor is a thread started before the filter (a forked one would
//! inherit it) ([`crate::process::fork_peer`]). Programs are classic BPF, as
//! [`seccompiler`] builds them ([`Program`]); [`install`] goes through `seccompiler`'s own
//! installer, [`install_listening`] through the raw call, which `seccompiler` does not offer.
//!
//! # Safety
//! `seccomp(SECCOMP_SET_MODE_FILTER)` reads the `sock_fprog` and the instructions it points to,
//! both alive for the call; the listener's ioctls read and write one `seccomp_notif` or
//! `seccomp_notif_resp` of the kernel's layout (`libc`'s), which the caller's stack holds, zeroed
//! before `NOTIF_RECV` as the kernel requires.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub use seccompiler::{BpfProgram as Program, sock_filter as Instruction};

/// The `SECCOMP_RET_*` actions a program returns (the high 16 bits; the low 16 carry data).
pub mod action {
    /// Run the call.
    pub const ALLOW: u32 = 0x7fff_0000;
    /// Fail the call with the errno in the low 16 bits.
    pub const ERRNO: u32 = 0x0005_0000;
    /// Stop the call and ask the listener ([`super::Listener`]).
    pub const USER_NOTIF: u32 = 0x7fc0_0000;
}

/// The offsets of `struct seccomp_data` a program loads: the call's number, the audit
/// architecture, and argument `i`'s low 32 bits.
pub mod data {
    /// `nr`.
    pub const NR: u32 = 0;
    /// `arch`.
    pub const ARCH: u32 = 4;
    /// The low word of `args[i]` (little-endian).
    pub const fn arg_low(i: u32) -> u32 {
        16 + 8 * i
    }
}

/// Sets `no_new_privs` (required to install a filter without `CAP_SYS_ADMIN`) and installs
/// `program` on the calling thread.
pub fn install(program: &[Instruction]) -> io::Result<()> {
    seccompiler::apply_filter(program).map_err(|e| io::Error::other(e.to_string()))
}

/// Like [`install`], with a user-notification listener: the descriptor on which the calls the
/// program answers with [`action::USER_NOTIF`] arrive ([`Listener`]).
pub fn install_listening(program: &[Instruction]) -> io::Result<Listener> {
    no_new_privs()?;
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
        // `seccompiler`'s instruction has the kernel's layout (`struct sock_filter`).
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` and the instructions it points to live across the call, which only reads
    // them.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this new descriptor, which nothing else owns.
    Ok(Listener { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } })
}

fn no_new_privs() -> io::Result<()> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integers only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A call a filter handed to the listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The kernel's id of this notification (answer with it).
    pub id: u64,
    /// The calling thread's id.
    pub pid: u32,
    /// The call's number.
    pub nr: i32,
}

/// The supervisor's end: receives the calls a filter stopped and answers them.
#[derive(Debug)]
pub struct Listener {
    fd: OwnedFd,
}

impl Listener {
    /// The next stopped call, or `None` when none arrived within `timeout` (or the filtered
    /// processes are gone: the listener reads as hung up then).
    pub fn recv(&self, timeout: Duration) -> io::Result<Option<Notification>> {
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one pollfd, alive for the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 || pfd.revents & libc::POLLIN == 0 {
            return Ok(None);
        }
        // SAFETY: all-zero is a valid seccomp_notif (integers only), and the kernel wants it zeroed.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: NOTIF_RECV writes one seccomp_notif into `notif`.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) } != 0 {
            let e = io::Error::last_os_error();
            // The caller went away (a signal) between poll and receive: nothing to answer.
            return if e.raw_os_error() == Some(libc::ENOENT) { Ok(None) } else { Err(e) };
        }
        Ok(Some(Notification { id: notif.id, pid: notif.pid, nr: notif.data.nr }))
    }

    /// Answers `n`: the call returns `value` (`Ok`) or fails with the errno (`Err`).
    pub fn answer(&self, n: &Notification, result: Result<i64, i32>) -> io::Result<()> {
        let (val, error) = match result {
            Ok(v) => (v, 0),
            Err(e) => (0, -e),
        };
        let mut resp = libc::seccomp_notif_resp { id: n.id, val, error, flags: 0 };
        // SAFETY: NOTIF_SEND reads one seccomp_notif_resp from `resp`.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// What `/proc/<pid>/status` says of a process's seccomp state: its mode (0 none, 1 strict,
/// 2 filter) and how many filters it has (Linux ≥ 5.9 shows the count).
pub fn status_of(pid: i32) -> io::Result<(u32, Option<u32>)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field =
        |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse::<u32>().ok());
    let mode = field("Seccomp:").ok_or_else(|| io::Error::other("no Seccomp line in /proc/<pid>/status"))?;
    Ok((mode, field("Seccomp_filters:")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::fork_peer;
    use std::time::Duration;

    fn stmt(code: u16, k: u32) -> Instruction {
        Instruction { code, jt: 0, jf: 0, k }
    }
    fn jeq(k: u32, jt: u8, jf: u8) -> Instruction {
        Instruction { code: 0x15, jt, jf, k }
    }
    const LD_W_ABS: u16 = 0x20;
    const RET_K: u16 = 0x06;

    /// `getppid` answered with `action`, everything else allowed.
    fn on_getppid(action: u32) -> Vec<Instruction> {
        vec![
            stmt(LD_W_ABS, data::NR),
            jeq(libc::SYS_getppid as u32, 0, 1),
            stmt(RET_K, action),
            stmt(RET_K, action::ALLOW),
        ]
    }

    #[test]
    fn a_filter_answers_in_the_child_only_and_the_status_shows_it() {
        let mut child = fork_peer(|| {
            if install(&on_getppid(action::ERRNO | libc::EPERM as u32)).is_err() {
                return 2;
            }
            let ok = crate::raw::getppid() == -i64::from(libc::EPERM);
            let (mode, filters) = status_of(std::process::id() as i32).unwrap_or((0, None));
            if ok && mode == 2 && filters.is_none_or(|n| n == 1) { 0 } else { 3 }
        })
        .unwrap();
        assert!(child.finish(Duration::from_secs(10)).success());
        assert!(crate::raw::getppid() > 0, "the parent is not filtered");
        assert_eq!(status_of(std::process::id() as i32).unwrap().0, 0);
    }

    #[test]
    fn a_listener_answers_the_stopped_calls() {
        let mut child = fork_peer(|| {
            // The supervisor: a thread started before the filter, so the filter does not apply
            // to it (a forked supervisor would inherit the filter, and its first getppid would
            // wait for itself).
            let (tx, rx) = std::sync::mpsc::channel::<Listener>();
            let sup = std::thread::spawn(move || {
                let Ok(listener) = rx.recv_timeout(Duration::from_secs(10)) else { return false };
                (0..3).all(|_| match listener.recv(Duration::from_secs(10)) {
                    Ok(Some(n)) if n.nr == libc::SYS_getppid as i32 => listener.answer(&n, Ok(4242)).is_ok(),
                    _ => false,
                })
            });
            let Ok(listener) = install_listening(&on_getppid(action::USER_NOTIF)) else { return 2 };
            if tx.send(listener).is_err() {
                return 6;
            }
            let answers: Vec<i64> = (0..3).map(|_| crate::raw::getppid()).collect();
            let sup_ok = sup.join().unwrap_or(false);
            if answers == [4242; 3] && sup_ok { 0 } else { 7 }
        })
        .unwrap();
        assert!(child.finish(Duration::from_secs(20)).success());
    }

    #[test]
    fn a_bad_program_is_an_error() {
        let mut child = fork_peer(|| {
            // A jump past the end is refused by the kernel's checker.
            let bad = vec![jeq(0, 5, 5), stmt(RET_K, action::ALLOW)];
            if install(&bad).is_err() && install_listening(&bad).is_err() { 0 } else { 1 }
        })
        .unwrap();
        assert!(child.finish(Duration::from_secs(10)).success());
    }
}
