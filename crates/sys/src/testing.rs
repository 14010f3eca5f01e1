//! For tests only (of this crate and those above it): what tests that disturb the whole
//! process must not do at the same time.

/// Serialises the tests that install a SIGSEGV handler, fork, or count this thread's page
/// faults: two SIGSEGV handlers installed at once by parallel tests would undo each other,
/// and a `fork` in one test thread makes every page copy-on-write, adding a fault to another
/// thread's exact count. One lock per test binary (each crate's tests run in a process of
/// their own).
#[doc(hidden)]
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}
