//! Panics are bugs, and a bug in one benchmark must not cost the run: a benchmark's run is
//! [`guarded`], so that a panic in it becomes a failed row ("internal error: …") and the run
//! goes on; a panic anywhere else prints one line (no backtrace, whatever `RUST_BACKTRACE`
//! says) and the process exits with Rust's status for a panic, 101.

use std::cell::{Cell, RefCell};

thread_local! {
    /// Whether this thread is inside [`guarded`].
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// What the last panic inside [`guarded`] said.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook: one line for a panic outside [`guarded`], nothing printed inside it.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = describe(info);
        if GUARDED.with(Cell::get) {
            LAST.with(|l| *l.borrow_mut() = Some(message));
        } else {
            say!("error: internal error (a bug in osprim): {message}");
        }
    }));
}

/// `"<message> at <file>:<line>"`.
fn describe(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    match info.location() {
        Some(l) => format!("{text} at {}:{}", l.file(), l.line()),
        None => text,
    }
}

/// Runs `f`; a panic in it becomes `Err` with what the panic said.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let outer = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(outer));
    result.map_err(|_| LAST.with(|l| l.borrow_mut().take()).unwrap_or_else(|| "a panic".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_panic_is_an_error() {
        // (The hook, which would also give the message, is process-wide: the test binary
        // keeps the default one, so this panic's message appears in the test's output.)
        assert_eq!(guarded(|| 7), Ok(7));
        assert!(guarded(|| -> u8 { panic!("boom") }).is_err());
        assert!(!GUARDED.with(Cell::get), "the guard is lifted after a panic");
    }
}
