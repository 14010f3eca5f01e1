//! System calls the kernel refuses, issued with [`super::raw`]'s bare instruction (no libc): `syscall.reject` (`close(-1)`, refused by its argument check with `EBADF`) and
//! `syscall.enosys` (a number no system call has, answered `ENOSYS` by the entry code: the
//! bare entry and exit path).
//!
//! The unallocated numbers: on x86_64, 400, inside the range 387–423 that
//! `arch/x86/entry/syscalls/syscall_64.tbl` says never to use ("don't use numbers 387 through
//! 423"; kept free so that new calls share their numbers with the other architectures); on
//! aarch64, 255, in asm-generic's range for architecture-specific calls (244–259), of which
//! arm64 defines none. A seccomp filter may answer such a number with another error (or kill
//! the caller); the benchmark checks the value returned.
//!
//! # Safety
//! Neither call takes a pointer or changes any state: `close(-1)` names no descriptor, and an
//! unallocated number reaches no system call at all.
#![allow(unsafe_code)]

/// The unallocated system-call number used by [`unallocated`].
#[cfg(target_arch = "x86_64")]
pub const UNALLOCATED_NR: i64 = 400;
/// The unallocated system-call number used by [`unallocated`].
#[cfg(target_arch = "aarch64")]
pub const UNALLOCATED_NR: i64 = 255;
/// No bare path here; a placeholder.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const UNALLOCATED_NR: i64 = -1;

/// `close(-1)` through the bare instruction ([`super::raw::syscall1`]): returns `-EBADF` (−9).
#[inline(always)]
pub fn close_bad() -> i64 {
    // SAFETY: -1 names no descriptor; nothing is closed.
    unsafe { super::raw::syscall1(libc::SYS_close, -1) }
}

/// System call [`UNALLOCATED_NR`] through the bare instruction: returns `-ENOSYS` (−38)
/// unless a seccomp filter answers otherwise.
#[inline(always)]
pub fn unallocated() -> i64 {
    // SAFETY: no system call has this number; nothing runs but the entry code.
    unsafe { super::raw::syscall1(UNALLOCATED_NR, 0) }
}

/// The process's seccomp mode from `/proc/self/status` (0 none, 1 strict, 2 filter).
pub fn seccomp_mode() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Seccomp:")).and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_calls_return_their_errors() {
        assert_eq!(close_bad(), -i64::from(libc::EBADF));
        if seccomp_mode() == Some(0) {
            assert_eq!(unallocated(), -i64::from(libc::ENOSYS));
        }
    }
}
