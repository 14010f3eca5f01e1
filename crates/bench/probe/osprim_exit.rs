//! osprim's exec target for `process.fork_exec`, `process.vfork_exec` and `process.posix_spawn`:
//! a static program without libc whose entry point (`_start`) exits with status 42 at once.
//! The status is distinct from 0 and from the 127 a failed `execve` leaves, so the parent can
//! tell that the program really ran. Built by `build.rs` with rustc alone (`-nostartfiles
//! -nostdlib -static`), about 1 KiB.
#![no_std]
#![no_main]

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(".globl _start", "_start:", "mov edi, 42", "mov eax, 231", "syscall", "ud2");

#[cfg(target_arch = "aarch64")]
core::arch::global_asm!(".globl _start", "_start:", "mov x0, #42", "mov x8, #94", "svc #0", "brk #0");

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
