//! The protection-key variant of [`super`]'s stack switch, for `osprim-domain`: `rdpkru`,
//! `wrpkru` and a switch that also changes PKRU, in four small naked functions for x86_64
//! (System V ABI). The domain crate calls these and nothing else of the kind.
//!
//! It differs from the coroutine's symmetric switch: [`enter`] changes PKRU, may stay on the
//! caller's stack, passes an argument and calls a function, and [`leave`] unwinds to it from
//! anywhere below; the two share the saving and restoring of the callee-saved registers
//! ([`super`]'s `push_callee_saved!` and `pop_callee_saved!`).
//!
//! - [`rdpkru`] / [`wrpkru`]: read and write this thread's PKRU register (two bits per
//!   protection key: bit `2k` access-disable, bit `2k+1` write-disable). `ecx` (and `edx` for
//!   `wrpkru`) must be zero, so both zero them.
//! - [`enter`]: the catch point and the entry of every call kind. It pushes the callee-saved
//!   registers (rbp, rbx, r12–r15) on the caller's stack, stores the caller's PKRU and stack
//!   pointer in the call record (`rec`, [`Rec`]), writes the callee's PKRU, switches to the
//!   callee's stack if one is given (a 16-byte aligned top, else it stays on the caller's
//!   stack: an f-call), calls `f(arg)`, writes the caller's PKRU back, restores the stack
//!   pointer and registers and returns 0.
//! - [`leave`]: the other way out of [`enter`] — a throw (from the fault handler or an explicit
//!   raise) or a return `xfer`. It writes the PKRU saved in `rec`, loads the stack pointer saved
//!   there, pops the registers [`enter`] pushed and returns `code` from [`enter`]. This is
//!   `siglongjmp` reduced to what a domain call needs; the callee's frames are abandoned.
//!
//! # Safety
//! - [`enter`], [`leave`], [`rdpkru`], [`wrpkru`]: the CPU must support protection keys with the OS enabling them (CPUID.7.0:ECX.OSPKE);
//!   otherwise `rdpkru`/`wrpkru` raise #UD. The domain crate's `available` checks before any
//!   domain exists, and only code holding a `Domain` reaches these functions (its public
//!   wrappers check `available` once and cache it).
//! - [`enter`]: `rec` must point to a live [`Rec`] that stays put until [`enter`] returns;
//!   `f` must be a function taking one pointer argument that follows the System V ABI (it
//!   preserves rbx, which holds `rec` across the call); `stack_top`, if not 0, must be the
//!   16-byte-aligned top of a mapped, writable stack that nothing else uses, large enough for
//!   `f` and a signal frame. The PKRU written must keep key 0 accessible (code, the caller's
//!   stack, the call record and the signal frames live in key-0 memory).
//! - [`leave`] may be called only while the [`enter`] that filled `rec` is still active on this
//!   thread (its frame on the caller's stack is intact because every frame pushed since lies
//!   below it or on another stack), from the callee or from a signal handler that interrupted
//!   it. Frames between are abandoned without running destructors, so they must hold none (the
//!   `# Safety` contracts of the domain crate's call functions say so). From a signal handler, the
//!   signal stays blocked (no `sigreturn` runs): the caller unblocks it after [`enter`] returns.
//! - [`enter_plain`] / [`leave_plain`]: the same without PKRU, for domains whose rights the
//!   kernel switches (`mprotect`); they need no protection keys.
//! - With the CPU's user-mode shadow stack (CET) on, [`leave`]'s return would fault; Linux
//!   enables it only for binaries marked for it and osprim is not.
#![allow(unsafe_code)]

/// What [`enter`] saves for the way back; shared with [`leave`] and the fault handler.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Rec {
    /// The caller's stack pointer after [`enter`] pushed its registers (offset 0).
    pub sp: usize,
    /// The caller's PKRU (offset 8).
    pub pkru: u32,
    /// `si_code` of the fault that threw, if one did (0 otherwise).
    pub fault_code: i32,
    /// The address of that fault.
    pub fault_addr: usize,
}

/// Reads this thread's PKRU.
///
/// # Safety
/// The CPU must support `rdpkru` (OSPKE set), see the module doc.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn rdpkru() -> u32 {
    core::arch::naked_asm!("xor ecx, ecx", "rdpkru", "ret")
}

/// Writes this thread's PKRU.
///
/// # Safety
/// The CPU must support `wrpkru`; the value must keep every key the caller goes on using
/// (at least key 0: code, stacks, statics) accessible.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn wrpkru(pkru: u32) {
    core::arch::naked_asm!("mov eax, edi", "xor ecx, ecx", "xor edx, edx", "wrpkru", "ret")
}

/// The body of [`enter`] and [`enter_plain`]: `$save` stores the caller's PKRU in the record
/// (or nothing), `$write` writes the callee's (in esi) and `$restore` the caller's back.
macro_rules! enter_body {
    ($save:literal, $write:literal, $restore:literal) => {
        core::arch::naked_asm!(
            push_callee_saved!(),
            "sub rsp, 8", // rsp is now 16-byte aligned
            "mov rbx, rdi",
            "mov r12, rdx",
            "mov r13, rcx",
            "mov r14d, esi",
            $save,
            "mov [rbx], rsp",
            $write,
            "test r8, r8",
            "jz 2f",
            "mov rsp, r8",
            "2:",
            "mov rdi, r13",
            "call r12",
            $restore,
            "mov rsp, [rbx]",
            "add rsp, 8",
            pop_callee_saved!(),
            "xor eax, eax",
            "ret",
        )
    };
}

/// The body of [`leave`] and [`leave_plain`]: `$restore` writes the caller's PKRU (from the
/// record in r8) or nothing.
macro_rules! leave_body {
    ($restore:literal) => {
        core::arch::naked_asm!(
            "mov r8, rdi",
            "mov r9d, esi",
            $restore,
            "mov rsp, [r8]",
            "add rsp, 8",
            pop_callee_saved!(),
            "mov eax, r9d",
            "ret",
        )
    };
}

/// Enters a domain: saves the caller's state in `rec`, writes `pkru`, switches to `stack_top`
/// (if not 0), calls `f(arg)`, switches back; returns 0, or the code given to [`leave`].
///
/// # Safety
/// See the module doc.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn enter(
    rec: *mut Rec,
    pkru: u32,
    f: extern "C" fn(*mut u8),
    arg: *mut u8,
    stack_top: usize,
) -> u32 {
    enter_body!(
        "xor ecx, ecx\nrdpkru\nmov [rbx + 8], eax",
        "mov eax, r14d\nxor ecx, ecx\nxor edx, edx\nwrpkru",
        "mov eax, [rbx + 8]\nxor ecx, ecx\nxor edx, edx\nwrpkru"
    )
}

/// [`enter`] without PKRU: the same catch point, stack switch and call, for domains whose
/// rights the kernel switches (`mprotect`, by the caller around this call). `_pkru` is ignored
/// (the record's `pkru` is left as it was). Needs no protection keys.
///
/// # Safety
/// As [`enter`], less the PKRU conditions; the call must be left by [`leave_plain`].
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn enter_plain(
    rec: *mut Rec,
    _pkru: u32,
    f: extern "C" fn(*mut u8),
    arg: *mut u8,
    stack_top: usize,
) -> u32 {
    enter_body!("", "", "")
}

/// Leaves the domain entered with `rec`: writes the caller's PKRU, restores its stack and
/// registers, and makes [`enter`] return `code`.
///
/// # Safety
/// See the module doc.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn leave(rec: *const Rec, code: u32) -> ! {
    leave_body!("mov eax, [r8 + 8]\nxor ecx, ecx\nxor edx, edx\nwrpkru")
}

/// Leaves a call made by [`enter_plain`] (no PKRU written).
///
/// # Safety
/// As [`leave`], for a record filled by [`enter_plain`].
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
pub unsafe extern "sysv64" fn leave_plain(rec: *const Rec, code: u32) -> ! {
    leave_body!("")
}

/// Elsewhere than x86_64 there are no protection keys to switch: the domain crate's `available`
/// says so
/// before anything here could be called, and these stand-ins only keep the crate building.
#[cfg(not(target_arch = "x86_64"))]
mod elsewhere {
    use super::Rec;

    /// Never called: see the module doc.
    ///
    /// # Safety
    /// None needed; it aborts.
    pub unsafe extern "C" fn rdpkru() -> u32 {
        std::process::abort()
    }
    /// Never called: see the module doc.
    ///
    /// # Safety
    /// None needed; it aborts.
    pub unsafe extern "C" fn wrpkru(_pkru: u32) {
        std::process::abort()
    }
    /// Never called: see the module doc.
    ///
    /// # Safety
    /// None needed; it aborts.
    pub unsafe extern "C" fn enter(
        _rec: *mut Rec,
        _pkru: u32,
        _f: extern "C" fn(*mut u8),
        _arg: *mut u8,
        _stack_top: usize,
    ) -> u32 {
        std::process::abort()
    }
    /// Never called: see the module doc.
    ///
    /// # Safety
    /// None needed; it aborts.
    pub unsafe extern "C" fn leave(_rec: *const Rec, _code: u32) -> ! {
        std::process::abort()
    }
}
#[cfg(not(target_arch = "x86_64"))]
pub use elsewhere::{enter, enter as enter_plain, leave, leave as leave_plain, rdpkru, wrpkru};
