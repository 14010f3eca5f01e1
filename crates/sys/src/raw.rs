//! The one home of the raw system-call instruction, without libc: [`syscall0`] … [`syscall6`]
//! issue system call `nr` with that many arguments and return the kernel's raw result (a value,
//! or −errno), and [`check`] turns such a result into an `io::Result`. On them stand the
//! "empty system call" of the L4 table ([`getppid`]), the refused calls of
//! [`super::raw_errno`] and the timed `sched_setattr` of [`super::sched`].
//!
//! x86_64 enters the kernel with `syscall` (number in rax, arguments in rdi, rsi, rdx, r10, r8,
//! r9, result in rax; the CPU overwrites rcx and r11, and the kernel puts the flags back from
//! r11). aarch64 uses `svc #0` (number in x8, arguments in x0–x5, result in x0). Elsewhere the
//! functions fall back to libc's `syscall(2)` ([`AVAILABLE`] is then false).
//!
//! The functions are `#[inline(always)]`: inside a timed loop each is the one instruction and
//! the register moves its arguments need, as a hand-written `asm!` block would be.
//!
//! One exception lives elsewhere: [`super::lifecycle`]'s `vfork_exec` and `clone3_exit` write
//! their `syscall` instructions in one `asm!` block each, because the child of `vfork` (which
//! shares the parent's stack) or of `clone3` must run only the few instructions after the
//! call and never return into Rust; a call of these functions would return into compiled code
//! in the child.
//!
//! Not raw calls in this sense: [`super::futex`] and [`super::futex_private`] time the
//! `futex` call as programs make it, through glibc's `syscall(2)` (the measured operation).
//!
//! # Safety
//! The asm declares every register the kernel or the CPU may change, and (having no `nomem`
//! option) that the kernel may read and write memory. What a call does with its arguments is
//! the system call's: each function is `unsafe`, and its caller answers for the pointers it
//! passes and for what the call changes.
#![allow(unsafe_code)]

/// Whether the functions here issue the bare instruction on this architecture.
pub const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Defines `syscallN`: the number and the arguments in the registers listed (x86_64's, then
/// aarch64's), the raw result back; elsewhere libc's `syscall(2)`, its −1/errno made −errno.
macro_rules! syscalls {
    ($($name:ident($($arg:ident: $x86:tt $arm:tt),*);)*) => {$(
        /// System call `nr` with the arguments named; the raw result (−errno on error).
        ///
        /// # Safety
        /// The caller answers for the system call: the pointers it passes and what it changes.
        #[inline(always)]
        pub unsafe fn $name(nr: i64, $($arg: i64),*) -> i64 {
            let ret: i64;
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's (above); rcx and r11 are clobbered by `syscall` itself, and
            // the kernel restores the flags from r11.
            unsafe {
                core::arch::asm!("syscall", inlateout("rax") nr => ret, $(in($x86) $arg,)*
                    lateout("rcx") _, lateout("r11") _, options(nostack, preserves_flags));
            }
            // x0 is both the first argument and the result: a late output may share the
            // register of an input.
            #[cfg(target_arch = "aarch64")]
            // SAFETY: the caller's (above).
            unsafe {
                core::arch::asm!("svc #0", in("x8") nr, $(in($arm) $arg,)* lateout("x0") ret,
                    options(nostack));
            }
            #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
            {
                // SAFETY: the caller's (above).
                let rc = unsafe { libc::syscall(nr as libc::c_long, $($arg as libc::c_long),*) };
                ret = if rc == -1 {
                    -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
                } else {
                    rc as i64
                };
            }
            ret
        }
    )*};
}

syscalls! {
    syscall0();
    syscall1(a0: "rdi" "x0");
    syscall2(a0: "rdi" "x0", a1: "rsi" "x1");
    syscall3(a0: "rdi" "x0", a1: "rsi" "x1", a2: "rdx" "x2");
    syscall4(a0: "rdi" "x0", a1: "rsi" "x1", a2: "rdx" "x2", a3: "r10" "x3");
    syscall5(a0: "rdi" "x0", a1: "rsi" "x1", a2: "rdx" "x2", a3: "r10" "x3", a4: "r8" "x4");
    syscall6(a0: "rdi" "x0", a1: "rsi" "x1", a2: "rdx" "x2", a3: "r10" "x3", a4: "r8" "x4", a5: "r9" "x5");
}

/// A raw result as an `io::Result`: −4095..=−1 is −errno (the kernel's error range), anything
/// else the call's value.
#[inline(always)]
pub fn check(ret: i64) -> std::io::Result<i64> {
    if (-4095..0).contains(&ret) { Err(std::io::Error::from_raw_os_error(-ret as i32)) } else { Ok(ret) }
}

/// `getppid()` through the bare instruction ([`syscall0`]): the parent's pid. Inside a timed
/// loop this is one `mov` of the number and the `syscall`.
#[inline(always)]
pub fn getppid() -> i64 {
    // SAFETY: getppid takes no arguments, touches no user memory and cannot fail.
    unsafe { syscall0(libc::SYS_getppid) }
}

/// `read(-1, NULL, 0)` through the bare instruction: fails at once with `EBADF` (the lowest
/// call number, near the start of a filter that tests numbers in order).
#[inline(always)]
pub fn read_bad_fd() -> i64 {
    // SAFETY: no descriptor -1 exists; nothing is read or written.
    unsafe { syscall3(libc::SYS_read, -1, 0, 0) }
}

/// `mseal(0, 0, 0)` through the bare instruction: seals nothing and returns 0 (Linux ≥ 6.10;
/// `ENOSYS` before), the highest call number of a container profile's allow-list.
#[inline(always)]
pub fn mseal_nothing() -> i64 {
    // The same number on x86_64 and in the generic table (aarch64).
    const SYS_MSEAL: i64 = 462;
    // SAFETY: a length of 0 seals no mapping.
    unsafe { syscall3(SYS_MSEAL, 0, 0, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_calls_answer_as_libc_does() {
        assert_eq!(getppid(), i64::from(nix::unistd::getppid().as_raw()));
        // SAFETY: gettid takes no arguments.
        assert_eq!(unsafe { syscall0(libc::SYS_gettid) }, i64::from(nix::unistd::gettid().as_raw()));
        // SAFETY: -1 names no descriptor; nothing is closed.
        let bad = unsafe { syscall1(libc::SYS_close, -1) };
        assert_eq!(check(bad).unwrap_err().raw_os_error(), Some(libc::EBADF));
        let mut buf = [0u8; 8];
        // SAFETY: getrandom writes at most `buf.len()` bytes into `buf`.
        let got = unsafe { syscall3(libc::SYS_getrandom, buf.as_mut_ptr() as i64, buf.len() as i64, 0) };
        assert_eq!(check(got).unwrap(), 8);
        assert_eq!(read_bad_fd(), -i64::from(libc::EBADF));
        assert!(matches!(mseal_nothing(), 0) || mseal_nothing() == -i64::from(libc::ENOSYS));
    }
}
