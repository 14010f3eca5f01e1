//! Protection domains inside one address space, with memory protection keys (MPK/PKU): the
//! counterpart today of a Go! component (seed 003). A library of its own, used by the
//! `domain.*` benchmarks.
//!
//! A [`Domain`] is a data region tagged with its own protection key (`pkey_alloc`,
//! `pkey_mprotect`), an optional private stack over a guard page, and a fault owner registered
//! with the process-wide SIGSEGV dispatcher ([`sys::segv`]). Code stays shared: keys
//! govern data accesses only.
//!
//! **Rights.** Key 0 is the shared area: code, thread stacks, statics, the call records and the
//! arguments the caller passes (the "call area"). The caller (the program) runs with the
//! domains' keys access-disabled (`pkey_alloc` with `PKEY_DISABLE_ACCESS`, and the kernel's
//! default PKRU for other threads); while a domain runs, PKRU grants key 0 and that domain's
//! key only ([`rights_for`]). Private stacks are key-0 memory, private by address, not by key:
//! the kernel delivers every signal with PKRU reset to its default (key 0 only), so a stack a
//! signal can land on must be key 0 or the handler's first push faults and the process dies.
//!
//! **Call kinds** (Go!'s names), all through [`switch::enter`], the one assembly entry:
//! - [`Domain::fcall`]: rights switch only; the callee runs on the caller's stack.
//! - [`Domain::tcall`]: rights switch and a switch to the callee's private stack.
//! - [`Domain::call`]: a t-call whose ORB stub, running in the callee's domain, copies an
//!   argument frame from the call area into the callee's memory, calls the method on it, and
//!   copies the result back.
//! - [`Domain::xfer`]: one way: rights, stack, jump; the callee comes back by a fresh transfer
//!   ([`xfer_back`]) rather than a return.
//!
//! **Throw.** A callee that touches memory it has no key for takes a SIGSEGV with `si_code`
//! `SEGV_PKUERR` ([`SEGV_PKUERR`]). If the address lies in a domain, that domain's owner
//! resolves it: when a call is active on the faulting thread (a thread-local pointer to its
//! call record), the owner records the fault there and jumps to [`switch::leave`], which writes
//! the caller's PKRU, restores its stack and registers and makes the call return
//! [`Outcome::Thrown`] — `siglongjmp` from the handler, nothing but a few stores and the jump.
//! The signal stays blocked, so the call function unblocks SIGSEGV (`pthread_sigmask`) before
//! it returns. [`raise`] throws explicitly, without a signal. A fault on no active call is
//! passed on (the process dies of it, as it should). [`probe_read`] runs one read with the
//! caller's own rights under a catch point: the isolation probe.
//!
//! **Key virtualisation** ([`table::KeyTable`]): more domains than hardware keys.
//!
//! **Safe calls** ([`library_calls`]): the call functions take any method and so are
//! `unsafe`; the library's own methods, aimed only at live domains, are called safely there.
//!
//! # Safety
//! - System calls (`pkey_alloc`, `pkey_free`, `pkey_mprotect`, `pthread_sigmask`) get memory
//!   this module owns: a domain's region (a [`Region`], unmapped once on drop, after the fault
//!   owner's registration is dropped and before the key is freed).
//! - The call functions are `unsafe`: the method runs with the callee's rights, and a throw
//!   abandons its frames (and those of the handler) without running destructors, so a method
//!   must hold nothing that needs dropping while it may fault or raise; and it must not unwind
//!   (`extern "C"` aborts on a panic).
//! - The fault owner is async-signal-safe: it reads a `const`-initialised thread-local `Cell`
//!   (no lazy initialisation, no destructor), writes the active call record (key 0, on the
//!   caller's stack, live while the call is) and jumps; no allocation, lock or system call.
//!   It throws only for `SEGV_PKUERR` faults with a call active on the faulting thread, which
//!   is inside [`switch::enter`], so [`switch::leave`]'s contract holds.
//! - The domain's memory is touched only with volatile accesses through raw pointers, never as
//!   a Rust reference, by methods running with its key.
#![allow(unsafe_code)]

pub mod library_calls;
pub mod table;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::io;
use std::sync::{Arc, OnceLock};
use switch::Rec;
use sys::fault::{Prot, Region};
use sys::segv::{self, EntryClock, Fault, Registration, SegvOwner};
use sys::stack_switch::keyed as switch;

/// `si_code` of a fault refused by a protection key (`<asm/siginfo.h>`).
pub const SEGV_PKUERR: i32 = 4;
/// `pkey_alloc`'s init-rights flag: no data access for the calling thread.
const PKEY_DISABLE_ACCESS: libc::c_ulong = 1;
/// The kernel's default PKRU: every key but 0 access-disabled.
pub const DEFAULT_PKRU: u32 = 0x5555_5554;
/// Usable stack pages of a private stack (one guard page more below).
pub const STACK_PAGES: usize = 16;
/// Data pages of a domain.
pub const DATA_PAGES: usize = 1;
/// Word offsets in a domain's first page: the marker only the domain writes, and the argument
/// frame of [`Domain::call`].
const MARKER: usize = 0;
const FRAME: usize = 8;
/// Words in an argument frame.
pub const FRAME_WORDS: usize = 4;

/// A domain method: runs with the callee's rights; `arg` points into the call area (key 0).
pub type Method = extern "C" fn(arg: *mut u8);

/// Whether protection keys work here: the CPU has PKU with the OS enabling it (OSPKE), and a
/// key can be allocated. Checked once.
pub fn available() -> Result<(), String> {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    AVAILABLE.get_or_init(check_available).clone()
}

fn check_available() -> Result<(), String> {
    cpu_has_keys()?;
    Pkey::alloc().map(drop).map_err(|e| format!("pkey_alloc: {e}"))
}

/// Whether the CPU has protection keys and the OS enabled them (CPUID leaf 7, ECX bits 3 and
/// 4; on CPUs without the leaf, zeroes, read as "no").
#[cfg(target_arch = "x86_64")]
fn cpu_has_keys() -> Result<(), String> {
    let ecx = core::arch::x86_64::__cpuid_count(7, 0).ecx;
    if ecx & (1 << 3) == 0 {
        return Err("the CPU has no memory protection keys (CPUID pku)".into());
    }
    if ecx & (1 << 4) == 0 {
        return Err("the OS has not enabled protection keys (CPUID ospke)".into());
    }
    Ok(())
}

/// Protection-key domains are written for x86_64 (`wrpkru`); elsewhere they are unavailable.
#[cfg(not(target_arch = "x86_64"))]
fn cpu_has_keys() -> Result<(), String> {
    Err("protection-key domains are written for x86_64 only".into())
}

/// This thread's PKRU. Panics where protection keys are unavailable.
pub fn pkru() -> u32 {
    assert!(available().is_ok(), "PKRU read without protection keys");
    read_pkru()
}

/// [`pkru`] without the check, for methods (the callee's code runs only if a domain exists).
#[inline(always)]
fn read_pkru() -> u32 {
    // SAFETY: reached only once `available()` said yes (a domain exists, or `pkru` checked).
    unsafe { switch::rdpkru() }
}

/// The PKRU a domain with `key` runs with: every key access-disabled but 0 and `key`.
pub const fn rights_for(key: u32) -> u32 {
    DEFAULT_PKRU & !(0b11 << (2 * key))
}

/// Whether `pkru` lets data of `key` be read.
pub const fn grants(pkru: u32, key: u32) -> bool {
    pkru & (1 << (2 * key)) == 0
}

/// An allocated protection key, freed on drop.
#[derive(Debug)]
pub struct Pkey(i32);

impl Pkey {
    /// A fresh key, access-disabled for the calling thread (`pkey_alloc(0, PKEY_DISABLE_ACCESS)`).
    pub fn alloc() -> io::Result<Pkey> {
        // SAFETY: pkey_alloc takes two integers and changes only this thread's PKRU for the new key.
        let k = sys::raw::check(unsafe { sys::raw::syscall2(libc::SYS_pkey_alloc, 0, PKEY_DISABLE_ACCESS as i64) })?;
        Ok(Pkey(k as i32))
    }

    /// The key's number (1–15).
    pub fn id(&self) -> u32 {
        self.0 as u32
    }
}

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: frees the key this value allocated; the pages tagged with it are unmapped or
        // re-tagged first by the owners (field order of `Domain`, `KeyTable`).
        unsafe { sys::raw::syscall1(libc::SYS_pkey_free, i64::from(self.0)) };
    }
}

/// Tags `region`'s pages with `key`, readable and writable for whoever PKRU allows.
pub fn pkey_mprotect(region: &Region, key: u32) -> io::Result<()> {
    // SAFETY: the range is exactly `region`'s mapping, which it owns; only its protection and
    // key change.
    let rc = unsafe {
        sys::raw::syscall4(
            libc::SYS_pkey_mprotect,
            region.page_addr(0) as i64,
            region.len() as i64,
            i64::from(libc::PROT_READ | libc::PROT_WRITE),
            i64::from(key),
        )
    };
    sys::raw::check(rc).map(|_| ())
}

thread_local! {
    /// The call record of the innermost active call on this thread (null: none).
    static CURRENT: Cell<*mut Rec> = const { Cell::new(std::ptr::null_mut()) };
}

/// The fault owner of a domain's data: throws to the active call's catch point.
struct Thrower;

// SAFETY: see the module's safety notes: a thread-local read, stores into the live call record,
// and a jump to `leave` while `enter` is active on this thread; nothing else.
unsafe impl SegvOwner for Thrower {
    fn resolve(&self, fault: &Fault) -> bool {
        if fault.code != SEGV_PKUERR {
            return false;
        }
        let rec = CURRENT.with(|c| c.get());
        if rec.is_null() {
            return false;
        }
        // SAFETY: `rec` is the record of the call active on this thread (set before `enter`,
        // cleared after it returns), on the caller's stack below which the handler runs.
        unsafe {
            (*rec).fault_code = fault.code;
            (*rec).fault_addr = fault.addr;
            switch::leave(rec, THROWN)
        }
    }
}

const THROWN: u32 = 1;
const XFERRED: u32 = 2;
const RAISED: u32 = 3;

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The method returned.
    Returned,
    /// The method faulted on memory it has no key for (`addr`, `si_code`).
    Thrown { addr: usize, code: i32 },
    /// The method raised explicitly ([`raise`]).
    Raised,
    /// The callee transferred back ([`xfer_back`]).
    Xferred,
}

/// A private stack: [`STACK_PAGES`] pages over a `PROT_NONE` guard page (key 0, see the
/// module doc).
#[derive(Debug)]
pub struct Stack {
    region: Region,
}

impl Stack {
    /// A fresh stack with its guard page.
    pub fn new() -> io::Result<Stack> {
        let region = Region::anon(STACK_PAGES + 1)?;
        region.protect(0, 1, Prot::None)?;
        Ok(Stack { region })
    }

    /// The top (highest address, page-aligned).
    pub fn top(&self) -> usize {
        self.region.page_addr(0) + self.region.len()
    }

    /// The usable range.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.region.page_addr(1)..self.top()
    }
}

/// A protection domain: a data region tagged with a key, an optional private stack, and the
/// fault owner of its data. Dropping it unregisters the owner, unmaps, frees the key.
#[derive(Debug)]
pub struct Domain {
    _owner: Registration,
    data: Region,
    stack: Option<Stack>,
    key: Cell<u32>,
    own_key: Option<Pkey>,
}

impl Domain {
    /// A domain with a fresh key and [`DATA_PAGES`] data pages; with a private stack if `stack`.
    pub fn new(stack: bool) -> io::Result<Domain> {
        let key = Pkey::alloc().map_err(|e| io::Error::new(e.kind(), format!("pkey_alloc: {e}")))?;
        let mut d = Domain::with_key(key.id(), stack)?;
        d.own_key = Some(key);
        Ok(d)
    }

    /// A domain whose pages carry `key`, which someone else owns (a [`table::KeyTable`]).
    pub fn with_key(key: u32, stack: bool) -> io::Result<Domain> {
        let data = Region::anon(DATA_PAGES).map_err(|e| io::Error::new(e.kind(), format!("mmap: {e}")))?;
        pkey_mprotect(&data, key).map_err(|e| io::Error::new(e.kind(), format!("pkey_mprotect: {e}")))?;
        let stack = if stack {
            Some(Stack::new().map_err(|e| io::Error::new(e.kind(), format!("private stack (mmap): {e}")))?)
        } else {
            None
        };
        let owner = segv::register(Arc::new(Thrower), data.page_addr(0), data.len(), EntryClock::None)
            .map_err(|e| io::Error::other(format!("register the fault owner: {e}")))?;
        Ok(Domain { _owner: owner, data, stack, key: Cell::new(key), own_key: None })
    }

    /// The key its pages carry now.
    pub fn key(&self) -> u32 {
        self.key.get()
    }

    /// The PKRU it runs with.
    pub fn rights(&self) -> u32 {
        rights_for(self.key.get())
    }

    /// Re-tags its pages with `key` (key virtualisation).
    pub fn retag(&self, key: u32) -> io::Result<()> {
        pkey_mprotect(&self.data, key)?;
        self.key.set(key);
        Ok(())
    }

    /// Its data range.
    pub fn data_range(&self) -> std::ops::Range<usize> {
        self.data.page_addr(0)..self.data.page_addr(0) + self.data.len()
    }

    /// The address of the word only the domain writes (its marker).
    pub fn marker(&self) -> *mut u64 {
        (self.data.page_addr(0) as *mut u64).wrapping_add(MARKER)
    }

    /// Its private stack, if it has one.
    pub fn stack(&self) -> Option<&Stack> {
        self.stack.as_ref()
    }

    fn stack_top(&self) -> io::Result<usize> {
        self.stack.as_ref().map(Stack::top).ok_or_else(|| io::Error::other("the domain has no private stack"))
    }

    /// F-call: runs `method(arg)` with the domain's rights on the caller's stack.
    ///
    /// # Safety
    /// See the module's safety notes: `method` holds nothing needing drop where it may fault
    /// or raise, and does not unwind; `arg` is whatever `method` expects.
    pub unsafe fn fcall(&self, method: Method, arg: *mut u8) -> Outcome {
        // SAFETY: no stack switch; the caller's contract covers `method` and `arg`.
        unsafe { run(self.rights(), method, arg, 0) }
    }

    /// T-call: like [`Domain::fcall`] on the domain's private stack.
    ///
    /// # Safety
    /// As [`Domain::fcall`].
    pub unsafe fn tcall(&self, method: Method, arg: *mut u8) -> io::Result<Outcome> {
        let top = self.stack_top()?;
        // SAFETY: `top` is the aligned top of this domain's own stack, unused while no call of
        // it is active (calls into one domain do not nest here: a method calls no domain).
        Ok(unsafe { run(self.rights(), method, arg, top) })
    }

    /// Call: a t-call whose stub copies `args` into the domain's argument frame, runs `method`
    /// with a pointer to that frame (in the domain's memory; the method leaves its result in
    /// the frame's first word, and may leave a second in the word after the arguments) and
    /// copies both back: `(outcome, result, second)`.
    ///
    /// # Safety
    /// As [`Domain::fcall`]; `method` receives the frame's address, not `args`.
    pub unsafe fn call(&self, method: Method, args: [u64; FRAME_WORDS]) -> io::Result<(Outcome, u64, u64)> {
        let top = self.stack_top()?;
        let mut frame =
            CallFrame { method, args, result: [0; 2], frame: (self.data.page_addr(0) as *mut u64).wrapping_add(FRAME) };
        // SAFETY: as `tcall`; the stub's argument is this frame, live until `run` returns.
        let out = unsafe { run(self.rights(), call_stub, (&raw mut frame).cast(), top) };
        Ok((out, frame.result[0], frame.result[1]))
    }

    /// Xfer: switches rights and stack and jumps to `method(arg)`; the callee must end with
    /// [`xfer_back`] (a return counts as one too).
    ///
    /// # Safety
    /// As [`Domain::fcall`].
    pub unsafe fn xfer(&self, method: Method, arg: *mut u8) -> io::Result<Outcome> {
        let top = self.stack_top()?;
        // SAFETY: as `tcall`.
        Ok(unsafe { xfer_with(self.rights(), top, method, arg) })
    }
}

/// [`Domain::xfer`] with rights and a stack top in hand (the `via=key` path, or after a table
/// look-up).
///
/// # Safety
/// As [`Domain::fcall`]; `top` is the top of the callee's private stack, `rights` keeps key 0.
pub unsafe fn xfer_with(rights: u32, top: usize, method: Method, arg: *mut u8) -> Outcome {
    // SAFETY: the caller's contract.
    unsafe { run(rights, method, arg, top) }
}

/// What [`Domain::call`] hands its stub (in the call area).
#[repr(C)]
struct CallFrame {
    method: Method,
    args: [u64; FRAME_WORDS],
    result: [u64; 2],
    /// The argument frame in the callee's memory.
    frame: *mut u64,
}

/// The ORB stub of [`Domain::call`], running with the callee's rights on its stack.
extern "C" fn call_stub(f: *mut u8) {
    let f = f.cast::<CallFrame>();
    // SAFETY: `f` is the live `CallFrame` of `Domain::call` (key 0); `frame` points at
    // FRAME_WORDS + 1 words inside the callee's data page, writable with the callee's rights.
    unsafe {
        let frame = (*f).frame;
        for (i, a) in (*f).args.iter().enumerate() {
            frame.add(i).write_volatile(*a);
        }
        ((*f).method)(frame.cast());
        (*f).result = [frame.read_volatile(), frame.add(FRAME_WORDS).read_volatile()];
    }
}

/// Runs one call through the assembly entry, with the thread's active record set for the
/// fault owner; unblocks SIGSEGV after a throw by fault.
///
/// # Safety
/// As [`Domain::fcall`]; `top` is 0 or the top of a private stack no active call uses.
#[inline(always)]
unsafe fn run(rights: u32, method: Method, arg: *mut u8, top: usize) -> Outcome {
    let mut rec = Rec::default();
    let prev = CURRENT.with(|c| c.replace(&raw mut rec));
    // SAFETY: `rec` lives until `enter` returns; `rights` keeps key 0 (rights_for); the
    // caller's contract covers the rest.
    let code = unsafe { switch::enter(&raw mut rec, rights, method, arg, top) };
    CURRENT.with(|c| c.set(prev));
    match code {
        0 => Outcome::Returned,
        THROWN => {
            unblock_sigsegv();
            Outcome::Thrown { addr: rec.fault_addr, code: rec.fault_code }
        }
        XFERRED => Outcome::Xferred,
        _ => Outcome::Raised,
    }
}

/// After a throw out of the SIGSEGV handler, SIGSEGV is still blocked (no `sigreturn` ran).
fn unblock_sigsegv() {
    // SAFETY: a signal set on the stack, initialised by sigemptyset/sigaddset; changes this
    // thread's mask only.
    unsafe {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGSEGV);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
    }
}

/// Leaves the innermost active call with `code`; returns only if no call is active.
fn leave_current(code: u32) {
    let rec = CURRENT.with(|c| c.get());
    if rec.is_null() {
        return;
    }
    // SAFETY: `rec` is the active call's record, and we run inside that call (methods are the
    // only callers of `raise`/`xfer_back`), so `enter` is active on this thread.
    unsafe { switch::leave(rec, code) }
}

/// Throws from inside a method without a fault: the call returns [`Outcome::Raised`]. Does
/// nothing outside a call.
pub fn raise() {
    leave_current(RAISED);
}

/// Transfers from inside a method back to the caller: the call returns [`Outcome::Xferred`].
/// Does nothing outside a call.
pub fn xfer_back() {
    leave_current(XFERRED);
}

/// The isolation probe: reads the byte at `addr` with the caller's own rights under a catch
/// point; `Err` with the fault if it faulted in a domain.
pub fn probe_read(addr: usize) -> Result<u8, Fault> {
    let mut p = Probe { addr, value: 0 };
    let rights = pkru();
    // SAFETY: the reader holds nothing needing drop; `p` lives until the call returns; the
    // rights are the caller's own (which keep key 0).
    match unsafe { run(rights, probe_reader, (&raw mut p).cast(), 0) } {
        Outcome::Thrown { addr, code } => Err(Fault { addr, code, entry: 0, write: Some(false) }),
        _ => Ok(p.value),
    }
}

#[repr(C)]
struct Probe {
    addr: usize,
    value: u8,
}

extern "C" fn probe_reader(p: *mut u8) {
    let p = p.cast::<Probe>();
    // SAFETY: `p` is the live probe; reading `addr` may fault, which throws out of the call.
    unsafe { (*p).value = ((*p).addr as *const u8).read_volatile() };
}

/// The arguments of the null methods ([`null_method`], [`read_marker`]): in the call area.
/// The addresses a method writes or touches are private and come from live domains only
/// ([`NullArgs::for_domain`], [`NullArgs::touching`]), which the lifetime keeps alive, so the
/// safe calls of [`library_calls`] cannot be aimed at arbitrary memory.
#[repr(C)]
#[derive(Debug)]
pub struct NullArgs<'d> {
    /// Where the method writes (the callee's marker).
    target: *mut u64,
    /// What it writes (null method) or read (marker reader).
    pub value: u64,
    /// The PKRU the method saw.
    pub pkru_seen: u32,
    /// For throwing methods: the address touched (another domain's memory); 0: raise.
    touch: usize,
    /// For timed methods: a clock reading taken in the callee.
    pub stamp: u64,
    /// The run's timer, for [`stamp_and_xfer_back`].
    pub timer: Option<platform::timer::Timer>,
    _domains: std::marker::PhantomData<&'d Domain>,
}

impl<'d> NullArgs<'d> {
    /// Arguments aimed at `d`'s marker.
    pub fn for_domain(d: &'d Domain) -> NullArgs<'d> {
        NullArgs {
            target: d.marker(),
            value: 0,
            pkru_seen: 0,
            touch: 0,
            stamp: 0,
            timer: None,
            _domains: std::marker::PhantomData,
        }
    }

    /// The same arguments, with the throwing methods touching `other`'s marker (a fault when
    /// `other` is another domain).
    pub fn touching(mut self, other: &'d Domain) -> NullArgs<'d> {
        self.touch = other.marker() as usize;
        self
    }

    /// As a method argument.
    pub fn as_arg(&mut self) -> *mut u8 {
        (self as *mut NullArgs).cast()
    }
}

/// The null method: writes `value` to the callee's marker and reads PKRU.
pub extern "C" fn null_method(a: *mut u8) {
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live `NullArgs` in the call area; `target` is the callee's marker,
    // writable with its rights.
    unsafe {
        (*a).target.write_volatile((*a).value);
        (*a).pkru_seen = read_pkru();
    }
}

/// Reads the callee's marker into `value` and PKRU.
pub extern "C" fn read_marker(a: *mut u8) {
    let a = a.cast::<NullArgs>();
    // SAFETY: as `null_method`, reading.
    unsafe {
        (*a).value = (*a).target.read_volatile();
        (*a).pkru_seen = read_pkru();
    }
}

/// A method for [`Domain::call`]: its frame's first word becomes the sum of the four words,
/// plus one, and the last word the PKRU it saw.
pub extern "C" fn sum_method(frame: *mut u8) {
    let f = frame.cast::<u64>();
    // SAFETY: `f` is the argument frame in the callee's memory (FRAME_WORDS + 1 words).
    unsafe {
        let s = (0..FRAME_WORDS).map(|i| f.add(i).read_volatile()).fold(1u64, u64::wrapping_add);
        f.write_volatile(s);
        f.add(FRAME_WORDS).write_volatile(u64::from(read_pkru()));
    }
}

/// The throwing method: writes its marker, reads PKRU, stamps the clock and then touches
/// `touch` (faults if it is another domain's) or, if `touch` is 0, raises.
pub extern "C" fn throwing_method(a: *mut u8) {
    null_method(a);
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live; the touch faults and throws out of the call (nothing here to drop).
    unsafe {
        let touch = (*a).touch;
        (*a).stamp = (*a).timer.map_or(0, |t| t.start());
        if touch == 0 {
            raise();
        } else {
            std::hint::black_box((touch as *const u8).read_volatile());
        }
    }
}

/// The xfer target: stamps the clock first, then does the null method's work and transfers
/// back.
pub extern "C" fn stamp_and_xfer_back(a: *mut u8) {
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live `NullArgs` in the call area.
    unsafe { (*a).stamp = (*a).timer.map_or(0, |t| t.stop()) };
    null_method(a.cast());
    xfer_back();
}

/// A method for [`Domain::call`] whose frame's first word is a [`NullArgs`] pointer (in the
/// call area): runs [`throwing_method`] on it.
pub extern "C" fn throwing_frame_method(frame: *mut u8) {
    // SAFETY: the frame is in the callee's memory, its first word written by the stub.
    let a = unsafe { frame.cast::<u64>().read_volatile() } as usize as *mut u8;
    throwing_method(a);
}

/// A private stack attached to the calling thread as its alternate signal stack (Go!'s
/// "linked stack"); the previous one is put back on drop.
#[derive(Debug)]
pub struct Link {
    previous: libc::stack_t,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Domain {
    /// Attaches the domain's private stack to this thread (`sigaltstack`). The [`Link`] must be
    /// dropped before the domain, on this thread, and links dropped in reverse order.
    pub fn link(&self) -> io::Result<Link> {
        let stack = self.stack.as_ref().ok_or_else(|| io::Error::other("the domain has no private stack"))?;
        let r = stack.range();
        let new = libc::stack_t { ss_sp: r.start as *mut libc::c_void, ss_flags: 0, ss_size: r.end - r.start };
        let mut previous = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: 0, ss_size: 0 };
        // SAFETY: the stack is mapped and owned by the domain, which the caller keeps until the
        // link (which restores `previous`) is dropped.
        if unsafe { libc::sigaltstack(&new, &mut previous) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Link { previous, _thread: std::marker::PhantomData })
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let mut prev = self.previous;
        if prev.ss_flags & libc::SS_DISABLE != 0 {
            prev.ss_flags = libc::SS_DISABLE;
        } else {
            prev.ss_flags &= !libc::SS_ONSTACK;
        }
        // SAFETY: puts back the stack the thread had before (still owned by whoever set it).
        unsafe { libc::sigaltstack(&prev, std::ptr::null_mut()) };
    }
}
