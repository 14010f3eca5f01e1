//! The raw system-call instruction, without libc: the "empty system call" of the L4 table.
//!
//! x86_64 enters the kernel with `syscall` (number in rax, result in rax; the CPU overwrites
//! rcx and r11). aarch64 uses `svc #0` (number in x8, result in x0).
//!
//! # Safety
//! `getppid` takes no arguments, touches no user memory and cannot fail, so issuing it directly
//! is safe; the asm declares every register the kernel or the CPU may change.
#![allow(unsafe_code)]

/// `getppid()` through the bare `syscall` instruction. Returns the parent's pid.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn getppid() -> i64 {
    let ret: i64;
    // SAFETY: syscall 110 (getppid) has no arguments and no side effects on user memory;
    // rcx and r11 are clobbered by the `syscall` instruction itself.
    unsafe {
        core::arch::asm!("syscall", inlateout("rax") 110i64 => ret, lateout("rcx") _, lateout("r11") _,
            options(nostack, preserves_flags));
    }
    ret
}

/// `getppid()` through the bare `svc #0` instruction. Returns the parent's pid.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn getppid() -> i64 {
    let ret: i64;
    // SAFETY: syscall 173 (getppid) has no arguments and touches no user memory.
    unsafe { core::arch::asm!("svc #0", in("x8") 173i64, lateout("x0") ret, options(nostack)) };
    ret
}

/// Whether [`getppid`] issues the bare instruction on this architecture.
pub const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Fallback on other architectures: libc's wrapper.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn getppid() -> i64 {
    i64::from(nix::unistd::getppid().as_raw())
}
