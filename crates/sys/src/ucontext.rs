//! glibc's user contexts (`ctx.swapcontext`): a coroutine made with `getcontext` and
//! `makecontext` on its own stack, resumed with `swapcontext` and switching back the same way.
//! See getcontext(3), makecontext(3).
//!
//! glibc's `swapcontext` saves and restores the signal mask too, with an `rt_sigprocmask`
//! system call on every switch; that call is most of its cost.
//!
//! # Safety
//! - The two `ucontext_t`s live in one heap allocation (the state) that never moves while the
//!   coroutine exists: a saved context points into itself (its floating-point area).
//! - The coroutine's stack is an anonymous mapping owned by the [`UContext`], with a
//!   `PROT_NONE` guard page below it.
//! - The entry function receives the state pointer split into two 32-bit halves (the
//!   portable way to pass a pointer through `makecontext`'s `int` arguments), never returns,
//!   and holds nothing that needs dropping, so dropping the [`UContext`] while it is
//!   suspended leaks nothing.
//! - The state is reached through the raw pointer only; the coroutine runs only inside
//!   `resume`, on the calling thread (the type is neither `Send` nor `Sync`).
#![allow(unsafe_code)]

use super::fault::{Prot, Region};
use std::io;

/// Whether [`UContext`] exists here (glibc on x86_64 or aarch64, where the libc crate declares
/// the calls).
pub const AVAILABLE: bool =
    cfg!(all(target_os = "linux", target_env = "gnu", any(target_arch = "x86_64", target_arch = "aarch64")));

/// Usable stack pages (plus one guard page below).
const STACK_PAGES: usize = 16;

#[cfg(all(target_os = "linux", target_env = "gnu", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod imp {
    use super::*;

    #[repr(C)]
    struct State {
        main: libc::ucontext_t,
        co: libc::ucontext_t,
        runs: u64,
        last_sp: usize,
        failed_swaps: u64,
    }

    /// A coroutine whose entry counts its runs, records its stack pointer, and swaps back.
    pub struct UContext {
        state: *mut State,
        stack: Region,
    }

    impl UContext {
        /// A suspended coroutine on a fresh stack.
        pub fn new() -> io::Result<UContext> {
            let stack = Region::anon(STACK_PAGES + 1)?;
            stack.protect(0, 1, Prot::None)?;
            // SAFETY: all-zero bytes are a valid `ucontext_t` (integers, arrays, null
            // pointers) and a valid rest of `State`.
            let zeroed: Box<State> = unsafe { Box::new(std::mem::MaybeUninit::zeroed().assume_init()) };
            let state = Box::into_raw(zeroed);
            let me = UContext { state, stack };
            // SAFETY: `co` is in the live, fixed state allocation.
            if unsafe { libc::getcontext(&raw mut (*state).co) } != 0 {
                return Err(io::Error::last_os_error());
            }
            let addr = state as usize as u64;
            // SAFETY: the context gets the coroutine's own stack (above the guard page) and
            // no successor; `entry` takes two `c_uint`s, the two arguments passed, and never
            // returns, so calling it through `fn()` with them is what makecontext does.
            unsafe {
                (*state).co.uc_stack.ss_sp = me.stack.page_addr(1) as *mut libc::c_void;
                (*state).co.uc_stack.ss_size = me.stack_range().len();
                (*state).co.uc_link = std::ptr::null_mut();
                let f: extern "C" fn(libc::c_uint, libc::c_uint) = entry;
                let f: extern "C" fn() = std::mem::transmute(f);
                libc::makecontext(&raw mut (*state).co, f, 2, (addr >> 32) as libc::c_uint, addr as libc::c_uint);
            }
            Ok(me)
        }

        /// Runs the coroutine until it swaps back: one round trip, two `swapcontext` calls.
        #[inline(always)]
        pub fn resume(&mut self) {
            // SAFETY: both contexts live in the fixed state; `co` was made by makecontext or
            // saved by the coroutine's own swapcontext, and the coroutine swaps back to `main`.
            let rc = unsafe { libc::swapcontext(&raw mut (*self.state).main, &raw const (*self.state).co) };
            if rc != 0 {
                // SAFETY: the coroutine is not running.
                unsafe { (*self.state).failed_swaps += 1 };
            }
        }

        /// Times the coroutine has run.
        pub fn runs(&self) -> u64 {
            // SAFETY: the coroutine runs only inside `resume`.
            unsafe { (*self.state).runs }
        }

        /// `swapcontext` calls that failed, both directions.
        pub fn failed_swaps(&self) -> u64 {
            // SAFETY: as in `runs`.
            unsafe { (*self.state).failed_swaps }
        }

        /// The coroutine's stack pointer on its last run.
        pub fn last_sp(&self) -> usize {
            // SAFETY: as in `runs`.
            unsafe { (*self.state).last_sp }
        }

        /// The coroutine's usable stack.
        pub fn stack_range(&self) -> std::ops::Range<usize> {
            self.stack.page_addr(1)..self.stack.page_addr(0) + self.stack.len()
        }
    }

    impl Drop for UContext {
        fn drop(&mut self) {
            // SAFETY: made by `Box::into_raw` in `new`, freed only here; the suspended
            // coroutine never runs again.
            drop(unsafe { Box::from_raw(self.state) });
        }
    }

    extern "C" fn entry(hi: libc::c_uint, lo: libc::c_uint) {
        let state = ((u64::from(hi) << 32) | u64::from(lo)) as usize as *mut State;
        loop {
            let here = 0u8;
            // SAFETY: `state` is the live state (see the module doc); the main side waits in
            // `resume`.
            unsafe {
                (*state).runs += 1;
                (*state).last_sp = std::hint::black_box(&raw const here) as usize;
                if libc::swapcontext(&raw mut (*state).co, &raw const (*state).main) != 0 {
                    (*state).failed_swaps += 1;
                    // No way back: the main side's context is unusable. Stop the process
                    // rather than return into nothing.
                    libc::abort();
                }
            }
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod imp {
    use super::*;

    /// Not available here.
    pub struct UContext;

    impl UContext {
        /// Always `Unsupported`.
        pub fn new() -> io::Result<UContext> {
            let _ = (STACK_PAGES, Prot::None, Region::anon);
            Err(io::Error::new(io::ErrorKind::Unsupported, "getcontext/swapcontext are used with glibc only"))
        }
        /// Nothing.
        pub fn resume(&mut self) {}
        /// 0.
        pub fn runs(&self) -> u64 {
            0
        }
        /// 0.
        pub fn failed_swaps(&self) -> u64 {
            0
        }
        /// 0.
        pub fn last_sp(&self) -> usize {
            0
        }
        /// Empty.
        pub fn stack_range(&self) -> std::ops::Range<usize> {
            0..0
        }
    }
}

pub use imp::UContext;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swapcontext_coroutine_runs_once_per_resume_on_its_own_stack() {
        if !AVAILABLE {
            return;
        }
        let mut co = UContext::new().expect("getcontext/makecontext");
        for _ in 0..100 {
            co.resume();
        }
        assert_eq!((co.runs(), co.failed_swaps()), (100, 0));
        assert!(co.stack_range().contains(&co.last_sp()));
    }
}
