//! The CPU's cycle counter, read with the ordering a benchmark needs.
//!
//! On x86_64 this is the time-stamp counter: [`start`] is `lfence; rdtsc` (the read waits for
//! every earlier instruction to finish) and [`stop`] is `rdtscp; lfence` (the read waits for the
//! measured code, and nothing later starts before it). This is the pairing Intel recommends in
//! "How to Benchmark Code Execution Times on Intel IA-32 and IA-64 Instruction Set
//! Architectures" (G. Paoloni, 2010). On aarch64 it is the virtual counter `cntvct_el0`, read
//! after an `isb`, with its frequency from `cntfrq_el0`.
//!
//! # Safety
//! The only `unsafe` here is inline assembly that reads a counter register. None of it touches
//! memory or the stack; the registers it writes are declared as outputs or clobbers.
#![allow(unsafe_code)]

/// Whether this architecture has a cycle counter osprim knows how to read.
pub const AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Reads the counter at the start of a timed region: no earlier instruction is still running.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn start() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: `lfence` and `rdtsc` only write eax and edx, declared as outputs; they read no
    // memory and use no stack. rdtsc is available on every x86_64 CPU.
    unsafe {
        core::arch::asm!("lfence", "rdtsc", out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the counter at the end of a timed region: every measured instruction has finished
/// and no later one has started.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn stop() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: `rdtscp` writes eax, edx and ecx (the processor id, discarded: declared as a
    // clobber); `lfence` writes nothing. No memory, no stack. Callers check `rdtscp` support
    // (CPUID 0x80000001 EDX bit 27) before using this timer.
    unsafe {
        core::arch::asm!("rdtscp", "lfence", out("eax") lo, out("edx") hi, out("ecx") _,
            options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Reads the virtual counter at the start of a timed region.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn start() -> u64 {
    let v: u64;
    // SAFETY: `isb` waits for earlier instructions; `mrs` reads cntvct_el0, which EL0 may read
    // on Linux. Only the output register is written.
    unsafe { core::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack)) };
    v
}

/// Reads the virtual counter at the end of a timed region.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub fn stop() -> u64 {
    let v: u64;
    // SAFETY: as in `start`; the trailing `isb` keeps later instructions from starting early.
    unsafe { core::arch::asm!("isb", "mrs {v}, cntvct_el0", "isb", v = out(reg) v, options(nomem, nostack)) };
    v
}

/// The counter frequency the architecture states, in Hz (aarch64's `cntfrq_el0`).
#[cfg(target_arch = "aarch64")]
pub fn stated_frequency_hz() -> Option<f64> {
    let f: u64;
    // SAFETY: reads cntfrq_el0 into the output register only.
    unsafe { core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack)) };
    (f > 0).then_some(f as f64)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn start() -> u64 {
    0
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn stop() -> u64 {
    0
}
