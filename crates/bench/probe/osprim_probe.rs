//! osprim's probe library: the smallest shared object osprim loads and unloads to measure
//! `lib.dlopen`. It has no initialisers, no dependencies and one function.
#![no_std]

/// Returns 42, so a benchmark can check that the library really was loaded.
#[unsafe(no_mangle)]
pub extern "C" fn osprim_probe_answer() -> u32 {
    42
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
