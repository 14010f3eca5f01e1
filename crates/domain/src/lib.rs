//! Protection domains inside one address space: the counterpart today of a Go! component
//! (seed 003). A library of its own, used by the `domain.*` benchmarks.
//!
//! A [`Domain`] is a data region, private stacks over guard pages, and a fault owner
//! registered with the process-wide SIGSEGV dispatcher ([`sys::segv`]). Code stays shared: the
//! rights govern data accesses only. **How rights switch** is one choice per domain,
//! [`Rights`]:
//! - [`Rights::Pkey`]: the region is tagged with its own protection key (`pkey_alloc`,
//!   `pkey_mprotect`) and entering writes PKRU (`wrpkru`), no kernel on the call path;
//! - [`Rights::Mprotect`]: for machines without keys, the kernel switches them: outside a call
//!   the region is `PROT_NONE`; entering opens it (`mprotect` read-write) and leaving — by
//!   return, raise, transfer or fault — closes it again (`mprotect` `PROT_NONE`). A stray
//!   access faults with `SEGV_ACCERR` instead of `SEGV_PKUERR`.
//!
//! Everything else (call kinds, catch point, throw, key table) is the same code for both: a
//! [`Gate`] says what to switch, and one private function (`run`) is the call path.
//!
//! **Rights (pkey).** Key 0 is the shared area: code, thread stacks, statics, the call records
//! and the arguments the caller passes (the "call area"). The caller (the program) runs with the
//! domains' keys access-disabled (`pkey_alloc` with `PKEY_DISABLE_ACCESS`, and the kernel's
//! default PKRU for other threads); while a domain runs, PKRU grants key 0 and that domain's
//! key only ([`rights_for`]). Private stacks are key-0 memory, private by address, not by key:
//! the kernel delivers every signal with PKRU reset to its default (key 0 only), so a stack a
//! signal can land on must be key 0 or the handler's first push faults and the process dies.
//!
//! **Rights (mprotect).** Only the region is protected; the caller, and a callee, keep the
//! shared area (as with key 0). What a callee observes of its rights ([`observe`]): PKRU with
//! keys, else the base of the region the library opened for it. The region lies between two
//! read-only guard pages ([`sys::fault::Region::anon_isolated`]), so it is a VMA of its own:
//! opening and closing it changes one VMA's protection and never splits or merges VMAs.
//! A nested call (a callee calling another domain) closes its caller's region while it runs
//! and opens it again however it ended, so a callee cannot touch its caller's domain either.
//!
//! **Call kinds** (Go!'s names), all through [`switch::enter`] (or [`switch::enter_plain`],
//! the same without PKRU), the one assembly entry:
//! - [`Domain::fcall`]: rights switch only; the callee runs on the caller's stack.
//! - [`Domain::tcall`]: rights switch and a switch to the callee's private stack.
//! - [`Domain::call`]: a t-call whose ORB stub, running in the callee's domain, copies an
//!   argument frame from the call area into the callee's memory, calls the method on it, and
//!   copies the result back.
//! - [`Domain::xfer`]: one way: rights, stack, jump; the callee comes back by a fresh transfer
//!   ([`xfer_back`]) rather than a return.
//!
//! **Rights held open** ([`Domain::hold_rights_open`], mprotect mode only): to measure the call
//! path apart from its rights switch, a domain's region is opened once and left open; calls
//! into it then take the same path — active record, assembly entry, stack switch, argument
//! frame, the bookkeeping of the region entered — with the two `mprotect` calls skipped (no
//! isolation from the caller meanwhile). [`rights_changes`] is the library's own count, per
//! thread, of the rights changes its call path made: two per switched call, none held open.
//!
//! **Throw.** A callee that touches memory it has no rights to takes a SIGSEGV with `si_code`
//! `SEGV_PKUERR` ([`SEGV_PKUERR`]; [`SEGV_ACCERR`] in mprotect mode). If the address lies in
//! a domain, that domain's owner resolves it: when a call is active on the faulting thread (a
//! thread-local pointer to its call record), the owner records the fault there and jumps to
//! [`switch::leave`] (or [`switch::leave_plain`]), which writes the caller's PKRU (keys),
//! restores its stack and registers and makes the call return [`Outcome::Thrown`]; in
//! mprotect mode the call path then closes the callee's region, however the call ended — `siglongjmp` from the handler, nothing but a few stores and the jump.
//! The signal stays blocked, so the call function unblocks SIGSEGV (`pthread_sigmask`) before
//! it returns. [`raise`] throws explicitly, without a signal. A fault on no active call is
//! passed on (the process dies of it, as it should). [`probe_read`] runs one read with the
//! caller's own rights under a catch point: the isolation probe.
//!
//! **Key virtualisation** ([`table::KeyTable`]): more domains than hardware keys; object
//! references ([`table::ObjRef`]) to typed interfaces, looked up to their domain's key.
//!
//! **Safe calls** ([`library_calls`]): the call functions take any method and so are
//! `unsafe`; the library's own methods, aimed only at live domains, are called safely there.
//!
//! # Safety
//! - System calls (`pkey_alloc`, `pkey_free`, `pkey_mprotect`, `mprotect`, `pthread_sigmask`)
//!   get memory this module owns: a domain's region (a [`Region`] between guard pages,
//!   unmapped once on drop, after the fault owner's registration is dropped and before the
//!   key is freed).
//! - The call functions are `unsafe`: the method runs with the callee's rights, and a throw
//!   abandons its frames (and those of the handler) without running destructors, so a method
//!   must hold nothing that needs dropping while it may fault or raise; and it must not unwind
//!   (`extern "C"` aborts on a panic).
//! - The fault owner is async-signal-safe: it reads a `const`-initialised thread-local `Cell`
//!   (no lazy initialisation, no destructor), writes the active call record (key 0, on the
//!   caller's stack, live while the call is) and jumps; no allocation, lock or system call.
//!   It throws only for faults of its mechanism's `si_code` (`SEGV_PKUERR` or `SEGV_ACCERR`)
//!   with a call active on the faulting thread, which is inside [`switch::enter`] (or
//!   [`switch::enter_plain`]), so [`switch::leave`]'s contract holds; the active record says
//!   which of the two entered, so the matching way out is taken.
//! - The domain's memory is touched only with volatile accesses through raw pointers, never as
//!   a Rust reference, by methods running with its rights.
#![allow(unsafe_code)]

pub mod chain;
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
/// `si_code` of a fault on a mapped page without the needed permission.
pub const SEGV_ACCERR: i32 = segv::SEGV_ACCERR;
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

/// How a domain's rights are switched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rights {
    /// Protection keys: the region tagged with a key, PKRU written on entry and exit.
    Pkey,
    /// The kernel: the region `PROT_NONE` outside calls, `mprotect` read-write on entry and
    /// back to `PROT_NONE` on exit.
    Mprotect,
}

impl Rights {
    /// Both, the keyed one first.
    pub const ALL: [Rights; 2] = [Rights::Pkey, Rights::Mprotect];

    /// The name results carry (`rights` parameter).
    pub const fn name(self) -> &'static str {
        match self {
            Rights::Pkey => "pkey",
            Rights::Mprotect => "mprotect",
        }
    }

    /// The mechanism named `name`.
    pub fn from_name(name: &str) -> Option<Rights> {
        Rights::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether it works here (keys: [`available`]; mprotect: the x86_64 entry only).
    pub fn available(self) -> Result<(), String> {
        match self {
            Rights::Pkey => available(),
            Rights::Mprotect if cfg!(target_arch = "x86_64") => Ok(()),
            Rights::Mprotect => Err("the domain entry is written for x86_64 only".into()),
        }
    }

    /// The mechanisms that work here.
    pub fn here() -> Vec<Rights> {
        Rights::ALL.into_iter().filter(|r| r.available().is_ok()).collect()
    }

    /// The `si_code` of an access refused by it.
    pub const fn fault_code(self) -> i32 {
        match self {
            Rights::Pkey => SEGV_PKUERR,
            Rights::Mprotect => SEGV_ACCERR,
        }
    }
}

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

/// [`pkru`] without the check, for methods (reached only in a keyed call, so keys exist).
#[inline(always)]
fn read_pkru() -> u32 {
    // SAFETY: reached only once `available()` said yes (a keyed domain exists, or `pkru`
    // checked).
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

/// The line of `/proc/self/maps` for the mapping holding `addr`: its range and permissions
/// (`rw-p`, `---p`, …), the kernel's own view.
fn maps_entry(addr: usize) -> io::Result<(std::ops::Range<usize>, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    for l in maps.lines() {
        let mut fields = l.split_whitespace();
        let (range, perms) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""));
        let mut ends = range.split('-').map(|x| usize::from_str_radix(x, 16).unwrap_or(0));
        let r = ends.next().unwrap_or(0)..ends.next().unwrap_or(0);
        if r.contains(&addr) {
            return Ok((r, perms.to_string()));
        }
    }
    Err(io::Error::other(format!("no mapping holds {addr:#x}")))
}

/// The permissions `/proc/self/maps` shows for the mapping holding `addr` (`rw-p`, `---p`,
/// …): the kernel's own view of whether a region is open.
pub fn maps_perms(addr: usize) -> io::Result<String> {
    maps_entry(addr).map(|(_, p)| p)
}

/// The innermost active call on a thread: its record, and whether it was entered with keys
/// (which way out, [`switch::leave`] or [`switch::leave_plain`]).
#[repr(C)]
struct Active {
    rec: Rec,
    keyed: bool,
}

thread_local! {
    /// The innermost active call on this thread (null: none).
    static CURRENT: Cell<*mut Active> = const { Cell::new(std::ptr::null_mut()) };
    /// In an mprotect-mode call: the base of the region the library opened (0 otherwise).
    static OPENED: Cell<u64> = const { Cell::new(0) };
    /// In an mprotect-mode call: the region the library opened (base, length), which a
    /// nested call closes while it runs.
    static OPENED_REGION: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
    /// Rights changes the call path made on this thread ([`rights_changes`]).
    static RIGHTS_CHANGES: Cell<u64> = const { Cell::new(0) };
}

/// The rights changes the call path has made on this thread so far: one per `mprotect` of a
/// region (opening or closing it, a nested call's closing and reopening of its caller's), two
/// per keyed call (PKRU written on entry and on the way out, however the call ended). A call
/// into a domain whose rights are held open ([`Domain::hold_rights_open`]) makes none: the
/// library's own account that such a call switched nothing.
pub fn rights_changes() -> u64 {
    RIGHTS_CHANGES.with(Cell::get)
}

/// What a method observes of the rights it runs with: PKRU in a keyed call, else the base of
/// the region the library opened for it. Call only from a method (inside a call).
#[inline(always)]
pub fn observe() -> u64 {
    match OPENED.with(Cell::get) {
        0 => u64::from(read_pkru()),
        base => base,
    }
}

/// Leaves the active call `a` with `code`.
///
/// # Safety
/// `a` is the active call of this thread, and we run inside it (or in a signal handler that
/// interrupted it): [`switch::leave`]'s contract.
unsafe fn leave(a: *mut Active, code: u32) -> ! {
    // SAFETY: the caller's contract; `keyed` says which entry filled the record.
    unsafe {
        if (*a).keyed {
            switch::leave(&raw const (*a).rec, code)
        } else {
            switch::leave_plain(&raw const (*a).rec, code)
        }
    }
}

/// The fault owner of a domain's data: throws to the active call's catch point.
struct Thrower {
    /// The `si_code` its mechanism refuses with.
    code: i32,
}

// SAFETY: see the module's safety notes: a thread-local read, stores into the live call record,
// and a jump to `leave` while `enter` is active on this thread; nothing else.
unsafe impl SegvOwner for Thrower {
    fn resolve(&self, fault: &Fault) -> bool {
        if fault.code != self.code {
            return false;
        }
        let a = CURRENT.with(|c| c.get());
        if a.is_null() {
            return false;
        }
        // SAFETY: `a` is the record of the call active on this thread (set before `enter`,
        // cleared after it returns), on the caller's stack below which the handler runs.
        unsafe {
            (*a).rec.fault_code = fault.code;
            (*a).rec.fault_addr = fault.addr;
            leave(a, THROWN)
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
    /// The method faulted on memory it has no rights to (`addr`, `si_code`).
    Thrown { addr: usize, code: i32 },
    /// The method raised explicitly ([`raise`]).
    Raised,
    /// The callee transferred back ([`xfer_back`]).
    Xferred,
    /// The kernel refused to switch the rights (mprotect mode: opening the region failed, the
    /// method did not run; or closing it failed after the call: `errno`).
    RightsFailed(i32),
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

/// What entering a domain switches: PKRU to `pkru` (keys), or `region` opened for the call
/// (mprotect); `region` None with mprotect: nothing (the caller's own rights). With `switch`
/// false (a domain whose rights are held open, mprotect only) the region is entered as it is:
/// the same path, records and bookkeeping, without the two `mprotect` calls.
#[derive(Clone, Copy, Debug)]
pub struct Gate<'d> {
    how: Rights,
    pkru: u32,
    region: Option<&'d Region>,
    switch: bool,
}

impl Gate<'_> {
    /// The caller's own rights under `how` (no switch): the probe's.
    fn callers(how: Rights) -> Gate<'static> {
        let pkru = if how == Rights::Pkey { pkru() } else { 0 };
        Gate { how, pkru, region: None, switch: true }
    }
}

/// A protection domain: a data region under its mechanism's protection, private stacks, and
/// the fault owner of its data. Dropping it unregisters the owner, unmaps, frees the key.
#[derive(Debug)]
pub struct Domain {
    _owner: Registration,
    /// The data, between guard pages so that it is a VMA of its own (no split and merge when
    /// mprotect mode opens and closes it).
    data: sys::fault::Isolated,
    /// Its private stacks; t-calls run on the last one ([`Domain::link_stack`] adds one).
    stacks: Vec<Stack>,
    how: Rights,
    key: Cell<u32>,
    own_key: Option<Pkey>,
    /// Whether its rights are held open ([`Domain::hold_rights_open`]): calls switch nothing.
    held_open: Cell<bool>,
}

impl Domain {
    /// A domain whose rights `how` switches, with [`DATA_PAGES`] data pages (and a fresh key
    /// with keys); with a private stack if `stack`.
    pub fn new(how: Rights, stack: bool) -> io::Result<Domain> {
        match how {
            Rights::Pkey => {
                let key = Pkey::alloc().map_err(|e| io::Error::new(e.kind(), format!("pkey_alloc: {e}")))?;
                let mut d = Domain::with_key(key.id(), stack)?;
                d.own_key = Some(key);
                Ok(d)
            }
            Rights::Mprotect => Domain::build(Rights::Mprotect, 0, stack),
        }
    }

    /// A keyed domain whose pages carry `key`, which someone else owns (a
    /// [`table::KeyTable`]).
    pub fn with_key(key: u32, stack: bool) -> io::Result<Domain> {
        Domain::build(Rights::Pkey, key, stack)
    }

    fn build(how: Rights, key: u32, stack: bool) -> io::Result<Domain> {
        let isolated = Region::anon_isolated(DATA_PAGES).map_err(|e| io::Error::new(e.kind(), format!("mmap: {e}")))?;
        let data = isolated.region();
        match how {
            Rights::Pkey => {
                pkey_mprotect(data, key).map_err(|e| io::Error::new(e.kind(), format!("pkey_mprotect: {e}")))?
            }
            Rights::Mprotect => data
                .protect(0, DATA_PAGES, Prot::None)
                .map_err(|e| io::Error::new(e.kind(), format!("mprotect: {e}")))?,
        }
        let stacks = if stack {
            vec![Stack::new().map_err(|e| io::Error::new(e.kind(), format!("private stack (mmap): {e}")))?]
        } else {
            Vec::new()
        };
        let thrower = Arc::new(Thrower { code: how.fault_code() });
        let owner = segv::register(thrower, data.page_addr(0), data.len(), EntryClock::None)
            .map_err(|e| io::Error::other(format!("register the fault owner: {e}")))?;
        Ok(Domain {
            _owner: owner,
            data: isolated,
            stacks,
            how,
            key: Cell::new(key),
            own_key: None,
            held_open: Cell::new(false),
        })
    }

    /// How its rights are switched.
    pub fn how(&self) -> Rights {
        self.how
    }

    /// The key its pages carry now (keys only).
    pub fn key(&self) -> Option<u32> {
        (self.how == Rights::Pkey).then(|| self.key.get())
    }

    /// The PKRU it runs with (keys; 0 in mprotect mode).
    pub fn rights(&self) -> u32 {
        match self.how {
            Rights::Pkey => rights_for(self.key.get()),
            Rights::Mprotect => 0,
        }
    }

    /// What its methods [`observe`]: its PKRU, or its region's base.
    pub fn inside(&self) -> u64 {
        match self.how {
            Rights::Pkey => u64::from(self.rights()),
            Rights::Mprotect => self.data.region().page_addr(0) as u64,
        }
    }

    /// What entering it switches.
    #[inline(always)]
    pub fn gate(&self) -> Gate<'_> {
        Gate { how: self.how, pkru: self.rights(), region: Some(self.data.region()), switch: !self.held_open.get() }
    }

    /// Holds its rights open (mprotect mode only): its region is made read-write now, once,
    /// and stays so until [`Domain::close_rights`]; meanwhile every call into it takes the
    /// library's whole path — the active record, the stack switch, the argument frame, the
    /// table look-up, the bookkeeping of the region entered — but switches no rights (no
    /// `mprotect`, counted by [`rights_changes`]). **No isolation while open:** the region is
    /// readable and writable by every thread of the process. For measuring what the call path
    /// costs apart from its rights switch; a keyed domain is refused (its rights are this
    /// thread's PKRU, not the region's).
    pub fn hold_rights_open(&self) -> io::Result<()> {
        if self.how != Rights::Mprotect {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "only a domain whose rights the kernel switches (mprotect) can be held open",
            ));
        }
        set_prot(self.data.region(), libc::PROT_READ | libc::PROT_WRITE).map_err(io::Error::from_raw_os_error)?;
        self.held_open.set(true);
        Ok(())
    }

    /// Ends [`Domain::hold_rights_open`]: the region is closed again (`PROT_NONE`) and calls
    /// switch rights as before. Nothing to do when not held open.
    pub fn close_rights(&self) -> io::Result<()> {
        if !self.held_open.get() {
            return Ok(());
        }
        set_prot(self.data.region(), libc::PROT_NONE).map_err(io::Error::from_raw_os_error)?;
        self.held_open.set(false);
        Ok(())
    }

    /// Whether its rights are held open ([`Domain::hold_rights_open`]).
    pub fn rights_held_open(&self) -> bool {
        self.held_open.get()
    }

    /// The caller's view of its rights over this domain, to compare before and after calls:
    /// PKRU (keys), or the region's permissions in `/proc/self/maps` (mprotect: `---p` while
    /// no call is active).
    pub fn caller_view(&self) -> String {
        match self.how {
            Rights::Pkey => format!("PKRU {:#010x}", pkru()),
            Rights::Mprotect => match maps_perms(self.data.region().page_addr(0)) {
                Ok(p) => format!("region {p}"),
                Err(e) => format!("region unknown ({e})"),
            },
        }
    }

    /// Opens the domain to the calling thread outside any call, as a broken return would
    /// leave it (mprotect: the region read-write; keys: PKRU granting its key): only for the
    /// tests of a checker that must catch exactly this. [`Domain::close_for_test`] undoes it.
    #[doc(hidden)]
    pub fn leak_rights_for_test(&self) -> io::Result<()> {
        match self.how {
            Rights::Mprotect => {
                set_prot(self.data.region(), libc::PROT_READ | libc::PROT_WRITE).map_err(io::Error::from_raw_os_error)
            }
            Rights::Pkey => {
                let open = pkru() & !(0b11 << (2 * self.key.get()));
                // SAFETY: widens this thread's rights by one key; key 0 stays granted.
                unsafe { switch::wrpkru(open) };
                Ok(())
            }
        }
    }

    /// Undoes [`Domain::leak_rights_for_test`].
    #[doc(hidden)]
    pub fn close_for_test(&self) -> io::Result<()> {
        match self.how {
            Rights::Mprotect => set_prot(self.data.region(), libc::PROT_NONE).map_err(io::Error::from_raw_os_error),
            Rights::Pkey => {
                let closed = pkru() | (0b11 << (2 * self.key.get()));
                // SAFETY: narrows this thread's rights by one key (never key 0: a domain's key
                // is 1–15).
                unsafe { switch::wrpkru(closed) };
                Ok(())
            }
        }
    }

    /// Re-tags its pages with `key` (key virtualisation; keys only).
    pub fn retag(&self, key: u32) -> io::Result<()> {
        pkey_mprotect(self.data.region(), key)?;
        self.key.set(key);
        Ok(())
    }

    /// The range of the VMA holding its data (`/proc/self/maps`): its data range exactly, a
    /// VMA of its own, unless something merged with it.
    pub fn vma(&self) -> Result<std::ops::Range<usize>, String> {
        maps_entry(self.data.region().page_addr(0)).map(|(r, _)| r).map_err(|e| e.to_string())
    }

    /// Its data range.
    pub fn data_range(&self) -> std::ops::Range<usize> {
        self.data.region().page_addr(0)..self.data.region().page_addr(0) + self.data.region().len()
    }

    /// The address of the word only the domain writes (its marker).
    pub fn marker(&self) -> *mut u64 {
        (self.data.region().page_addr(0) as *mut u64).wrapping_add(MARKER)
    }

    /// The private stack t-calls run on, if it has one.
    pub fn stack(&self) -> Option<&Stack> {
        self.stacks.last()
    }

    /// Its private stacks.
    pub fn stacks(&self) -> usize {
        self.stacks.len()
    }

    /// Links `stack` to the domain (Go!'s linked stack): t-calls run on it from now on.
    pub fn link_stack(&mut self, stack: Stack) {
        self.stacks.push(stack);
    }

    /// Unlinks the stack linked last, if any.
    pub fn unlink_stack(&mut self) -> Option<Stack> {
        self.stacks.pop()
    }

    #[inline(always)]
    fn stack_top(&self) -> io::Result<usize> {
        self.stacks.last().map(Stack::top).ok_or_else(|| io::Error::other("the domain has no private stack"))
    }

    /// F-call: runs `method(arg)` with the domain's rights on the caller's stack.
    ///
    /// # Safety
    /// See the module's safety notes: `method` holds nothing needing drop where it may fault
    /// or raise, and does not unwind; `arg` is whatever `method` expects.
    pub unsafe fn fcall(&self, method: Method, arg: *mut u8) -> Outcome {
        // SAFETY: no stack switch; the caller's contract covers `method` and `arg`.
        unsafe { run(self.gate(), method, arg, 0) }
    }

    /// T-call: like [`Domain::fcall`] on the domain's private stack.
    ///
    /// # Safety
    /// As [`Domain::fcall`].
    pub unsafe fn tcall(&self, method: Method, arg: *mut u8) -> io::Result<Outcome> {
        let top = self.stack_top()?;
        // SAFETY: `top` is the aligned top of this domain's own stack, unused while no call of
        // it is active (calls into one domain do not nest here: a method calls no domain).
        Ok(unsafe { run(self.gate(), method, arg, top) })
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
        let mut frame = CallFrame {
            method,
            args,
            result: [0; 2],
            frame: (self.data.region().page_addr(0) as *mut u64).wrapping_add(FRAME),
        };
        // SAFETY: as `tcall`; the stub's argument is this frame, live until `run` returns.
        let out = unsafe { run(self.gate(), call_stub, (&raw mut frame).cast(), top) };
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
        Ok(unsafe { xfer_with(self.gate(), top, method, arg) })
    }
}

/// [`Domain::xfer`] with the gate and a stack top in hand (the `via=key` path, or after a
/// table look-up).
///
/// # Safety
/// As [`Domain::fcall`]; `top` is the top of the callee's private stack, the gate its own.
pub unsafe fn xfer_with(gate: Gate<'_>, top: usize, method: Method, arg: *mut u8) -> Outcome {
    // SAFETY: the caller's contract.
    unsafe { run(gate, method, arg, top) }
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

/// Sets a region's protection (`mprotect`); the errno on failure.
#[inline(always)]
fn set_prot(region: &Region, prot: libc::c_int) -> Result<(), i32> {
    set_prot_raw(region.page_addr(0), region.len(), prot)
}

/// [`set_prot`] of the range `base..base + len`: a live domain's region (the one a call
/// opened, [`OPENED_REGION`], is live while the call is).
#[inline(always)]
fn set_prot_raw(base: usize, len: usize, prot: libc::c_int) -> Result<(), i32> {
    // SAFETY: the range is exactly a live domain's region mapping; its contents are touched
    // only through raw pointers by methods, never as Rust references.
    let rc = unsafe { libc::mprotect(base as *mut libc::c_void, len, prot) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error().raw_os_error().unwrap_or(0)) }
}

/// The one call path: switches the rights the gate says, runs one call through the assembly
/// entry with the thread's active record set for the fault owner, switches back (mprotect:
/// closes the region however the call ended); unblocks SIGSEGV after a throw by fault.
///
/// # Safety
/// As [`Domain::fcall`]; `top` is 0 or the top of a private stack no active call uses.
#[inline(always)]
unsafe fn run(gate: Gate<'_>, method: Method, arg: *mut u8, top: usize) -> Outcome {
    let keyed = gate.how == Rights::Pkey;
    let mut a = Active { rec: Rec::default(), keyed };
    // Rights changes this call makes (the thread's count, `rights_changes`).
    let mut changes = if keyed { 2 } else { 0 };
    // mprotect: a nested call closes the enclosing callee's region for its duration (and
    // opens it again however it ended), so a callee cannot touch its caller's domain. A call
    // into a domain held open switches nothing, its caller's region included.
    let enclosing = if keyed || gate.region.is_none() || !gate.switch { None } else { OPENED_REGION.with(Cell::get) };
    let opened = match gate.region.filter(|_| !keyed) {
        Some(r) if gate.switch => {
            if let Some((base, len)) = enclosing {
                changes += 1;
                if let Err(e) = set_prot_raw(base, len, libc::PROT_NONE) {
                    count_changes(changes);
                    return Outcome::RightsFailed(e);
                }
            }
            changes += 1;
            if let Err(e) = set_prot(r, libc::PROT_READ | libc::PROT_WRITE) {
                if let Some((base, len)) = enclosing {
                    changes += 1;
                    let _ = set_prot_raw(base, len, libc::PROT_READ | libc::PROT_WRITE);
                }
                count_changes(changes);
                return Outcome::RightsFailed(e);
            }
            Some(r)
        }
        // Held open: entered as it is.
        Some(r) => Some(r),
        None => None,
    };
    // The region entered, for `observe` and a nested call; the enclosing call's put back after.
    let prev_opened = opened.map(|r| {
        let region = OPENED_REGION.with(|o| o.replace(Some((r.page_addr(0), r.len()))));
        (OPENED.with(|o| o.replace(r.page_addr(0) as u64)), region)
    });
    let prev = CURRENT.with(|c| c.replace(&raw mut a));
    // SAFETY: `a` lives until `enter` returns; with keys, `pkru` keeps key 0 (rights_for or
    // the caller's own); the caller's contract covers the rest.
    let code = unsafe {
        if keyed {
            switch::enter(&raw mut a.rec, gate.pkru, method, arg, top)
        } else {
            switch::enter_plain(&raw mut a.rec, 0, method, arg, top)
        }
    };
    CURRENT.with(|c| c.set(prev));
    if let (Some(r), Some((base, region))) = (opened, prev_opened) {
        OPENED.with(|o| o.set(base));
        OPENED_REGION.with(|o| o.set(region));
        if gate.switch {
            changes += 1 + u64::from(enclosing.is_some());
            let closed = set_prot(r, libc::PROT_NONE);
            let reopened =
                enclosing.map_or(Ok(()), |(base, len)| set_prot_raw(base, len, libc::PROT_READ | libc::PROT_WRITE));
            if let Err(e) = closed.and(reopened) {
                count_changes(changes);
                return Outcome::RightsFailed(e);
            }
        }
    }
    count_changes(changes);
    match code {
        0 => Outcome::Returned,
        THROWN => {
            unblock_sigsegv();
            Outcome::Thrown { addr: a.rec.fault_addr, code: a.rec.fault_code }
        }
        XFERRED => Outcome::Xferred,
        _ => Outcome::Raised,
    }
}

/// Adds `n` to this thread's [`rights_changes`].
#[inline(always)]
fn count_changes(n: u64) {
    if n > 0 {
        RIGHTS_CHANGES.with(|c| c.set(c.get() + n));
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
    let a = CURRENT.with(|c| c.get());
    if a.is_null() {
        return;
    }
    // SAFETY: `a` is the active call's record, and we run inside that call (methods are the
    // only callers of `raise`/`xfer_back`), so `enter` is active on this thread.
    unsafe { leave(a, code) }
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

/// The isolation probe: reads the byte at `addr` with the caller's own rights (under `how`)
/// under a catch point; `Err` with the fault if it faulted in a domain.
pub fn probe_read(how: Rights, addr: usize) -> Result<u8, Fault> {
    let mut p = Probe { addr, value: 0 };
    // SAFETY: the reader holds nothing needing drop; `p` lives until the call returns; the
    // rights are the caller's own (which keep key 0).
    match unsafe { run(Gate::callers(how), probe_reader, (&raw mut p).cast(), 0) } {
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
    /// For throwing methods: run inside the callee right before its stamp
    /// ([`NullArgs::before_stamp`]).
    hook: Option<BeforeStamp<'d>>,
    /// Where the method writes (the callee's marker).
    target: *mut u64,
    /// What it writes (null method) or read (marker reader).
    pub value: u64,
    /// What the method [`observe`]d of its rights (PKRU, or its opened region's base).
    pub seen: u64,
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
            hook: None,
            target: d.marker(),
            value: 0,
            seen: 0,
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

    /// The same arguments, with the throwing methods running `hook` inside the callee, after
    /// the call's entry and right before their stamp (a cold sample's disturbance, so that the
    /// entry cannot warm again what the throw uses). The hook runs with the callee's rights on
    /// the callee's stack; it must return (a panic aborts: the method is `extern "C"`).
    pub fn before_stamp<'h>(self, hook: &'h dyn Fn()) -> NullArgs<'h>
    where
        'd: 'h,
    {
        NullArgs { hook: Some(BeforeStamp(hook)), ..self }
    }

    /// As a method argument.
    pub fn as_arg(&mut self) -> *mut u8 {
        (self as *mut NullArgs).cast()
    }
}

/// What a throwing method runs before its stamp ([`NullArgs::before_stamp`]).
#[derive(Clone, Copy)]
struct BeforeStamp<'h>(&'h dyn Fn());

impl std::fmt::Debug for BeforeStamp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeStamp")
    }
}

/// The null method: writes `value` to the callee's marker and [`observe`]s its rights.
pub extern "C" fn null_method(a: *mut u8) {
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live `NullArgs` in the call area; `target` is the callee's marker,
    // writable with its rights.
    unsafe {
        (*a).target.write_volatile((*a).value);
        (*a).seen = observe();
    }
}

/// Reads the callee's marker into `value` and [`observe`]s its rights.
pub extern "C" fn read_marker(a: *mut u8) {
    let a = a.cast::<NullArgs>();
    // SAFETY: as `null_method`, reading.
    unsafe {
        (*a).value = (*a).target.read_volatile();
        (*a).seen = observe();
    }
}

/// A method for [`Domain::call`]: its frame's first word becomes the sum of the four words,
/// plus one, and the last word what it [`observe`]d of its rights.
pub extern "C" fn sum_method(frame: *mut u8) {
    let f = frame.cast::<u64>();
    // SAFETY: `f` is the argument frame in the callee's memory (FRAME_WORDS + 1 words).
    unsafe {
        let s = (0..FRAME_WORDS).map(|i| f.add(i).read_volatile()).fold(1u64, u64::wrapping_add);
        f.write_volatile(s);
        f.add(FRAME_WORDS).write_volatile(observe());
    }
}

/// The throwing method: writes its marker, observes its rights, runs its hook if it has one
/// ([`NullArgs::before_stamp`]), stamps the clock and then touches `touch` (faults if it is
/// another domain's) or, if `touch` is 0, raises.
pub extern "C" fn throwing_method(a: *mut u8) {
    null_method(a);
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live; the hook is safe code that returns before the throw (a panic aborts
    // here, never unwinds); the touch faults and throws out of the call (nothing here to drop).
    unsafe {
        let touch = (*a).touch;
        if let Some(BeforeStamp(hook)) = (*a).hook {
            hook();
        }
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

/// A domain's private stack attached to the calling thread as its alternate signal stack; the
/// previous one is put back on drop. (Go!'s linked stack is [`Domain::link_stack`].)
#[derive(Debug)]
pub struct Link {
    previous: libc::stack_t,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Domain {
    /// Attaches the domain's private stack to this thread (`sigaltstack`). The [`Link`] must be
    /// dropped before the domain, on this thread, and links dropped in reverse order.
    pub fn link(&self) -> io::Result<Link> {
        let stack = self.stack().ok_or_else(|| io::Error::other("the domain has no private stack"))?;
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
