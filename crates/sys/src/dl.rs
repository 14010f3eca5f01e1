//! `dlopen`/`dlclose` of osprim's probe library, for `lib.dlopen` and `lib.dlclose`.
//!
//! # Safety
//! The only library ever opened is osprim's own probe, built by `build.rs` from
//! `probe/osprim_probe.rs`: it has no initialisers and one exported function,
//! `osprim_probe_answer() -> u32`, called with exactly that signature.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_void};

/// A library handle from `dlopen`, closed on drop.
pub struct Library(*mut c_void);

impl Library {
    /// Opens the library at `path` with `RTLD_NOW | RTLD_LOCAL`.
    pub fn open(path: &CStr) -> Result<Library, String> {
        // SAFETY: `path` is NUL-terminated; see the module doc for which library this is.
        let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() { Err(last_error()) } else { Ok(Library(h)) }
    }

    /// Calls the probe's `osprim_probe_answer`, or `None` if the symbol is missing.
    pub fn probe_answer(&self) -> Option<u32> {
        // SAFETY: the handle is live; the name is NUL-terminated.
        let sym = unsafe { libc::dlsym(self.0, c"osprim_probe_answer".as_ptr()) };
        if sym.is_null() {
            return None;
        }
        // SAFETY: the probe library defines this symbol as `extern "C" fn() -> u32`.
        let f: extern "C" fn() -> u32 = unsafe { std::mem::transmute(sym) };
        Some(f())
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful dlopen and is closed once.
        unsafe { libc::dlclose(self.0) };
    }
}

/// One `dlopen` + `dlclose` of `path`, for the timed loop. Returns whether the open succeeded.
#[inline(always)]
pub fn open_close(path: &CStr) -> bool {
    // SAFETY: as in `Library::open`.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return false;
    }
    // SAFETY: `h` is a live handle from the dlopen just above.
    unsafe { libc::dlclose(h) == 0 }
}

/// A handle from [`open`], for timing `dlopen` and `dlclose` apart. Not closed on drop: pass
/// it to [`close`] (a handle dropped unclosed only leaves the library loaded).
#[must_use]
pub struct Handle(*mut c_void);

/// One `dlopen(RTLD_NOW | RTLD_LOCAL)` of `path`, for the timed loop; `None` if it failed.
#[inline(always)]
pub fn open(path: &CStr) -> Option<Handle> {
    // SAFETY: as in `Library::open`.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    (!h.is_null()).then_some(Handle(h))
}

/// One `dlclose` of a handle from [`open`], for the timed loop. Returns whether it succeeded.
#[inline(always)]
pub fn close(h: Handle) -> bool {
    // SAFETY: `h.0` is a live handle from a successful dlopen, consumed here, so closed once.
    unsafe { libc::dlclose(h.0) == 0 }
}

/// Whether the library at `path` is loaded in this process (`RTLD_NOLOAD`: looks, loads
/// nothing; the reference the look took is given back at once).
pub fn is_loaded(path: &CStr) -> bool {
    // SAFETY: as in `Library::open`; with RTLD_NOLOAD nothing is loaded or initialised.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return false;
    }
    // SAFETY: drops the reference the RTLD_NOLOAD open just took.
    unsafe { libc::dlclose(h) };
    true
}

fn last_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl call.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "dlopen failed".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated, read before any other dl call.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}
