//! The one home of osprim's hand-written stack switches, for x86_64: here a user-level switch
//! (`ctx.user`), a coroutine on its own stack, resumed from the main stack and switching back,
//! in a few instructions and no system call (elsewhere [`Coroutine::new`] returns
//! `Unsupported`); in [`keyed`] the protection-key domains' switch, which also changes PKRU
//! and calls a function on the other stack. Both save and restore the callee-saved registers
//! with the same instructions ([`push_callee_saved!`], [`pop_callee_saved!`]).
//!
//! The switch ([`switch`]) follows the System V x86_64 ABI: a function call, so the caller has
//! already saved the caller-saved registers it needs; the switch pushes the callee-saved ones
//! (rbp, rbx, r12–r15) on the current stack, stores the stack pointer, loads the other
//! stack's, pops that stack's registers and returns into whatever called the switch there.
//! MXCSR and the x87 control word are callee-saved too, but neither side changes them, so
//! they are left alone. A new coroutine's stack is laid out as if it had called the switch:
//! six register slots (rbx = the state pointer, r12 = the body) and a return address pointing
//! at [`trampoline`], which calls the body with the state pointer as its argument. A stamping
//! coroutine ([`Coroutine::stamped`]) has a body that reads the clock first thing on each
//! arrival, so that one switch is timed alone: the main side's start, the coroutine's stop.
//!
//! # Safety
//! - [`switch`] and [`trampoline`] are `unsafe`, private, and called only by [`Coroutine`]:
//!   `resume` switches from the running stack to the coroutine's saved stack pointer, which
//!   always points at a frame laid out as above (the initial one, or one the coroutine's own
//!   call to [`switch`] left); the coroutine switches back to the stack pointer `resume`
//!   saved, whose frame is waiting in that same call.
//! - The coroutine's stack is an anonymous mapping owned by the [`Coroutine`], with a
//!   `PROT_NONE` guard page below it, so an overflow faults instead of writing elsewhere. The
//!   body uses a few dozen bytes of it.
//! - The body never returns (the trampoline would reach `ud2`) and holds nothing that needs
//!   dropping, so abandoning it suspended (dropping the `Coroutine`) leaks nothing: the stack
//!   is unmapped and the state freed.
//! - The state is shared by raw pointer only (never through a `&mut` while the other side
//!   runs); the coroutine runs only inside `resume`, on the thread calling it (the type is
//!   neither `Send` nor `Sync`).
//! - With the CPU's user-mode shadow stack (CET) turned on for the process, the first return
//!   into the trampoline would fault; Linux enables it only for binaries marked for it and
//!   osprim is not.
#![allow(unsafe_code)]

use super::clock::Timer;
use super::fault::{Prot, Region};
use std::io;

/// The callee-saved registers of the System V x86_64 ABI, pushed (an `asm!` template line
/// group): rbp, rbx, r12–r15, in the order [`pop_callee_saved!`] undoes.
macro_rules! push_callee_saved {
    () => {
        "push rbp\npush rbx\npush r12\npush r13\npush r14\npush r15"
    };
}

/// Pops what [`push_callee_saved!`] pushed.
macro_rules! pop_callee_saved {
    () => {
        "pop r15\npop r14\npop r13\npop r12\npop rbx\npop rbp"
    };
}

pub mod keyed;

/// Usable stack pages of a coroutine (plus one guard page below).
const STACK_PAGES: usize = 16;

/// What the two sides share.
#[repr(C)]
struct State {
    /// The main side's stack pointer while the coroutine runs.
    main_sp: usize,
    /// The coroutine's stack pointer while the main side runs.
    co_sp: usize,
    /// Times the coroutine ran (one per resume).
    runs: u64,
    /// The coroutine's stack pointer (the address of one of its locals) on its last run.
    last_sp: usize,
    /// A stamping coroutine's timer ([`Coroutine::stamped`]).
    timer: Option<Timer>,
    /// Its clock reading on its last arrival (0 before the first, or when not stamping).
    stamp: u64,
}

/// A coroutine whose body counts its runs and records its stack pointer, then switches back.
pub struct Coroutine {
    state: *mut State,
    stack: Region,
}

/// Whether [`Coroutine`] works on this architecture.
pub const AVAILABLE: bool = cfg!(target_arch = "x86_64");

impl Coroutine {
    /// A suspended coroutine on a fresh stack of [`STACK_PAGES`] pages over a guard page.
    pub fn new() -> io::Result<Coroutine> {
        Coroutine::with_timer(None)
    }

    /// A coroutine like [`Coroutine::new`]'s whose body first reads `timer` ([`Timer::stop`])
    /// on each arrival, before anything else: the end of a timed region that starts on the
    /// main side right before [`Coroutine::resume`], so that one switch is timed alone
    /// ([`Coroutine::stamp`]).
    pub fn stamped(timer: Timer) -> io::Result<Coroutine> {
        Coroutine::with_timer(Some(timer))
    }

    fn with_timer(timer: Option<Timer>) -> io::Result<Coroutine> {
        if !AVAILABLE {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "the stack switch is written for x86_64 only"));
        }
        let stack = Region::anon(STACK_PAGES + 1)?;
        stack.protect(0, 1, Prot::None)?;
        let state = Box::into_raw(Box::new(State { main_sp: 0, co_sp: 0, runs: 0, last_sp: 0, timer, stamp: 0 }));
        let co = Coroutine { state, stack };
        co.lay_out_first_frame(timer.is_some());
        Ok(co)
    }

    #[cfg(target_arch = "x86_64")]
    fn lay_out_first_frame(&self, stamped: bool) {
        let body = if stamped { stamped_body as *const () as usize } else { body as *const () as usize };
        let top = self.stack.page_addr(0) + self.stack.len(); // page-aligned
        // After the switch pops 6 registers and returns, rsp = sp + 56 must be 16-aligned for
        // the trampoline's `call`.
        let sp = top - 72;
        let frame: [usize; 7] = [
            0,                                // r15
            0,                                // r14
            0,                                // r13
            body,                             // r12: the body
            self.state as usize,              // rbx: its argument
            0,                                // rbp
            trampoline as *const () as usize, // the return address
        ];
        for (i, word) in frame.iter().enumerate() {
            // SAFETY: `sp + 8 i` lies in the top 72 bytes of the coroutine's own read-write
            // stack mapping, 8-byte aligned; nothing else uses that memory yet.
            unsafe { ((sp + 8 * i) as *mut usize).write(*word) };
        }
        // SAFETY: `state` is the live allocation this coroutine owns; the body does not run yet.
        unsafe { (*self.state).co_sp = sp };
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn lay_out_first_frame(&self, _: bool) {}

    /// Runs the coroutine until it switches back: one round trip, two stack switches.
    #[inline(always)]
    pub fn resume(&mut self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: see the module doc: `co_sp` is a frame laid out for `switch`, and the
        // coroutine switches back to the `main_sp` stored here.
        unsafe {
            switch(&raw mut (*self.state).main_sp, (*self.state).co_sp)
        };
    }

    /// Times the coroutine has run.
    pub fn runs(&self) -> u64 {
        // SAFETY: the coroutine runs only inside `resume`, so nothing writes the state now.
        unsafe { (*self.state).runs }
    }

    /// The coroutine's stack pointer on its last run (0 before the first).
    pub fn last_sp(&self) -> usize {
        // SAFETY: as in `runs`.
        unsafe { (*self.state).last_sp }
    }

    /// A stamping coroutine's clock reading on its last arrival (0 before the first, and for a
    /// coroutine made by [`Coroutine::new`]).
    pub fn stamp(&self) -> u64 {
        // SAFETY: as in `runs`.
        unsafe { (*self.state).stamp }
    }

    /// The coroutine's usable stack (its mapping less the guard page).
    pub fn stack_range(&self) -> std::ops::Range<usize> {
        self.stack.page_addr(1)..self.stack.page_addr(0) + self.stack.len()
    }
}

impl Drop for Coroutine {
    fn drop(&mut self) {
        // SAFETY: made by `Box::into_raw` in `new`, freed only here; the suspended body holds
        // only the raw pointer and never runs again.
        drop(unsafe { Box::from_raw(self.state) });
        // `stack` is unmapped by its own drop.
    }
}

/// The coroutine's body: counts a run, records where its stack is, switches back; forever.
#[cfg(target_arch = "x86_64")]
extern "sysv64" fn body(state: *mut State) -> ! {
    loop {
        let here = 0u8;
        // SAFETY: `state` is the coroutine's live state (freed only with the `Coroutine`,
        // after which the body never runs); the main side waits inside `resume`.
        unsafe {
            (*state).runs += 1;
            (*state).last_sp = std::hint::black_box(&raw const here) as usize;
            switch(&raw mut (*state).co_sp, (*state).main_sp);
        }
    }
}

/// A stamping coroutine's body: reads the clock on arrival, first thing, then does what
/// [`body`] does; forever.
#[cfg(target_arch = "x86_64")]
extern "sysv64" fn stamped_body(state: *mut State) -> ! {
    // SAFETY: as in `body`; the timer is set for a stamping coroutine (`Coroutine::stamped`).
    let timer = unsafe { (*state).timer };
    loop {
        // SAFETY: as in `body`.
        unsafe {
            (*state).stamp = timer.map_or(0, |t| t.stop());
            (*state).runs += 1;
            let here = 0u8;
            (*state).last_sp = std::hint::black_box(&raw const here) as usize;
            switch(&raw mut (*state).co_sp, (*state).main_sp);
        }
    }
}

/// Saves the callee-saved registers on the current stack, stores the stack pointer at
/// `*save`, loads `to`, restores that stack's registers and returns there.
///
/// # Safety
/// `to` must be a stack pointer saved by this function (or a frame laid out like one, see
/// [`Coroutine::new`]) on a stack that is still mapped and whose frame is not in use.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "sysv64" fn switch(save: *mut usize, to: usize) {
    core::arch::naked_asm!(push_callee_saved!(), "mov [rdi], rsp", "mov rsp, rsi", pop_callee_saved!(), "ret",)
}

/// Where a new coroutine's first switch returns to: calls the body in r12 with the argument
/// in rbx. The body never returns.
///
/// # Safety
/// Reached only by `ret` from [`switch`] into a frame laid out by [`Coroutine::new`], with
/// rsp 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
unsafe extern "sysv64" fn trampoline() {
    core::arch::naked_asm!("mov rdi, rbx", "call r12", "ud2")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coroutine_runs_once_per_resume_on_its_own_stack() {
        if !AVAILABLE {
            return;
        }
        let mut co = Coroutine::new().expect("coroutine");
        assert_eq!(co.runs(), 0);
        for _ in 0..1000 {
            co.resume();
        }
        assert_eq!(co.runs(), 1000);
        assert!(co.stack_range().contains(&co.last_sp()), "{:#x} in {:x?}", co.last_sp(), co.stack_range());
        let here = 0u8;
        assert!(!co.stack_range().contains(&(&raw const here as usize)));
        assert_eq!(co.stamp(), 0, "a plain coroutine stamps nothing");
    }

    #[test]
    fn a_stamping_coroutine_reads_the_clock_on_each_arrival_between_the_resumes_start_and_end() {
        if !AVAILABLE {
            return;
        }
        let timer = Timer::with_scale(model::TimerKind::MonotonicRaw, 1.0);
        let mut co = Coroutine::stamped(timer).expect("coroutine");
        for i in 1..=100 {
            let t0 = timer.start();
            co.resume();
            let t1 = timer.stop();
            let s = co.stamp();
            assert!(t0 <= s && s <= t1, "resume {i}: stamp {s} outside {t0}..={t1}");
            assert_eq!(co.runs(), i);
        }
        assert!(co.stack_range().contains(&co.last_sp()));
    }
}
