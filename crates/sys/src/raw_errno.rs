//! System calls the kernel refuses, through the bare instruction (as [`super::raw`]), without
//! libc: `syscall.reject` (`close(-1)`, refused by its argument check with `EBADF`) and
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
//! unallocated number reaches no system call at all. The asm declares every register the
//! kernel or the CPU may change.
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

#[cfg(target_arch = "x86_64")]
const CLOSE_NR: i64 = 3;
#[cfg(target_arch = "aarch64")]
const CLOSE_NR: i64 = 57;

/// One system call `nr` with one argument `a0`; returns the raw result (−errno on error).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn syscall1(nr: i64, a0: i64) -> i64 {
    let ret: i64;
    // SAFETY: used only with the two calls of the module doc, which touch no user memory;
    // rcx and r11 are clobbered by the `syscall` instruction itself.
    unsafe {
        core::arch::asm!("syscall", inlateout("rax") nr => ret, in("rdi") a0, lateout("rcx") _, lateout("r11") _,
            options(nostack, preserves_flags));
    }
    ret
}

/// One system call `nr` with one argument `a0`; returns the raw result (−errno on error).
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn syscall1(nr: i64, a0: i64) -> i64 {
    let ret: i64;
    // SAFETY: used only with the two calls of the module doc, which touch no user memory.
    unsafe { core::arch::asm!("svc #0", in("x8") nr, inlateout("x0") a0 => ret, options(nostack)) };
    ret
}

/// `close(-1)` through the bare instruction: returns `-EBADF` (−9).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn close_bad() -> i64 {
    syscall1(CLOSE_NR, -1)
}

/// System call [`UNALLOCATED_NR`] through the bare instruction: returns `-ENOSYS` (−38)
/// unless a seccomp filter answers otherwise.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn unallocated() -> i64 {
    syscall1(UNALLOCATED_NR, 0)
}

/// Fallback: libc's `close(-1)`, as −errno.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn close_bad() -> i64 {
    // SAFETY: -1 names no descriptor; nothing is closed.
    let rc = unsafe { libc::close(-1) };
    if rc == 0 { 0 } else { -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) }
}

/// Fallback: nothing to call; `-ENOSYS`.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn unallocated() -> i64 {
    -i64::from(libc::ENOSYS)
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
