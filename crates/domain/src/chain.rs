//! Nested call chains: the library's own method calling from domain to domain, up to
//! [`MAX_DEPTH`] deep, each level entered by a call kind of its own, the deepest ending by a
//! return, a [`raise`](super::raise) or a touch of another domain's memory (a fault, thrown),
//! the throw propagated up to a catch point. What the stress test drives (Go!'s stability
//! test: "random calls of every kind and returns, call depth ≤ 20").
//!
//! Each level's method [`observe`]s its rights on entry, writes and reads back its own
//! marker, calls the next level, observes its rights again once that call came back (by a
//! return, a transfer or a throw), rethrows (raises) if the throw is to be caught further up,
//! and ends as its kind wants (a transfer back for an xfer). A [`Report`] says what each level
//! saw; judging it is the caller's business.
//!
//! # Safety
//! The method keeps the call functions' contract: it holds nothing needing drop where it may
//! fault or raise (raw pointers and `Copy` values only), never unwinds (no panicking
//! operation: indices are checked), and touches only live domains' memory (the plan's
//! references) and the chain's state (key 0, on the heap, live for the chain). A domain's
//! private stack is used by one active call at a time: [`run`] refuses a plan naming a domain
//! twice, and a [`Domain`] is not `Sync`, so no other thread can be inside it.

use super::{Domain, FRAME_WORDS, Outcome, observe, raise, xfer_back};
use std::io;

/// The deepest chain: 20 levels (Go!'s call depth).
pub const MAX_DEPTH: usize = 20;

/// How a level is entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`Domain::fcall`].
    Fcall,
    /// [`Domain::tcall`].
    Tcall,
    /// [`Domain::call`] (the arguments copied into the callee's frame and a result back).
    Call,
    /// [`Domain::xfer`] (the callee transfers back).
    Xfer,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 4] = [Kind::Fcall, Kind::Tcall, Kind::Call, Kind::Xfer];

    /// Its name (`fcall`, `tcall`, `call`, `xfer`).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Fcall => "fcall",
            Kind::Tcall => "tcall",
            Kind::Call => "call",
            Kind::Xfer => "xfer",
        }
    }
}

/// How the deepest level ends.
#[derive(Clone, Copy, Debug)]
pub enum End<'d> {
    /// It returns (or transfers back).
    Return,
    /// It raises.
    Raise,
    /// It reads `domain`'s marker: a fault when that domain is not the callee's, thrown.
    Touch(&'d Domain),
}

/// A chain to run.
#[derive(Clone, Debug)]
pub struct Plan<'d> {
    /// The levels, outermost first: each domain and the kind it is entered by.
    pub levels: Vec<(&'d Domain, Kind)>,
    /// How the deepest level ends.
    pub end: End<'d>,
    /// Which level's method catches a throw (`None`: the caller of the chain); the levels
    /// between it and the deepest rethrow. Must be above the deepest level.
    pub catch: Option<usize>,
    /// The words a call-kind level's frame carries besides the chain (its result is
    /// [`call_result`] of them).
    pub words: [u64; FRAME_WORDS - 1],
}

/// What one level saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// What its method should observe of its rights ([`Domain::inside`], before the chain).
    pub expect: u64,
    /// What it observed on entry.
    pub seen: u64,
    /// Whether it wrote and read back its own marker.
    pub own_memory: bool,
    /// How its call of the next level ended (`None`: the deepest level).
    pub child: Option<Outcome>,
    /// What it observed after that call came back.
    pub seen_after: u64,
    /// The result and second word of the next level's call, when entered by [`Kind::Call`].
    pub child_result: Option<(u64, u64)>,
    /// The deepest level read another domain's memory without a fault.
    pub touched_unfaulted: bool,
}

/// How a chain went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// How the caller's call of level 0 ended.
    pub outcome: Outcome,
    /// Level 0's result and second word, when entered by [`Kind::Call`].
    pub result: Option<(u64, u64)>,
    /// Each level, outermost first.
    pub levels: Vec<Level>,
}

/// The result a call-kind level leaves for `words`.
pub const fn call_result(words: [u64; FRAME_WORDS - 1]) -> u64 {
    words[0].wrapping_add(words[1]).wrapping_add(words[2]).rotate_left(7) ^ 0x5a5a_5a5a
}

#[derive(Clone, Copy)]
#[repr(C)]
struct LevelState {
    domain: *const Domain,
    kind: Kind,
    seen: u64,
    own: bool,
    child: Option<Outcome>,
    seen_after: u64,
    child_result: Option<(u64, u64)>,
    unfaulted: bool,
}

#[repr(C)]
struct State {
    depth: usize,
    cur: usize,
    /// 0 return, 1 raise, 2 touch.
    end: u8,
    touch: usize,
    /// The catching level, or -1: the caller.
    catch: isize,
    words: [u64; FRAME_WORDS - 1],
    lv: [LevelState; MAX_DEPTH],
}

/// Runs `plan`. `Err` when the plan is malformed: empty, deeper than [`MAX_DEPTH`], a domain
/// named twice, a stack-switching level whose domain has no private stack, or a catch point
/// not above the deepest level.
pub fn run(plan: &Plan<'_>) -> io::Result<Report> {
    let depth = plan.levels.len();
    if depth == 0 || depth > MAX_DEPTH {
        return Err(io::Error::other(format!("a chain has 1 to {MAX_DEPTH} levels, not {depth}")));
    }
    let mut starts: Vec<usize> = plan.levels.iter().map(|(d, _)| d.data_range().start).collect();
    starts.sort_unstable();
    if starts.windows(2).any(|w| w[0] == w[1]) {
        return Err(io::Error::other("a chain names a domain twice"));
    }
    if plan.levels.iter().any(|(d, k)| *k != Kind::Fcall && d.stack().is_none()) {
        return Err(io::Error::other("a stack-switching level's domain has no private stack"));
    }
    if plan.catch.is_some_and(|c| c + 1 >= depth) {
        return Err(io::Error::other("the catch point must be above the deepest level"));
    }
    let blank = LevelState {
        domain: std::ptr::null(),
        kind: Kind::Fcall,
        seen: 0,
        own: false,
        child: None,
        seen_after: 0,
        child_result: None,
        unfaulted: false,
    };
    let mut st = Box::new(State {
        depth,
        cur: 0,
        end: match plan.end {
            End::Return => 0,
            End::Raise => 1,
            End::Touch(_) => 2,
        },
        touch: match plan.end {
            End::Touch(d) => d.marker() as usize,
            _ => 0,
        },
        catch: plan.catch.map_or(-1, |c| c as isize),
        words: plan.words,
        lv: [blank; MAX_DEPTH],
    });
    for (i, (d, k)) in plan.levels.iter().enumerate() {
        st.lv[i].domain = *d;
        st.lv[i].kind = *k;
    }
    let expect: Vec<u64> = plan.levels.iter().map(|(d, _)| d.inside()).collect();
    let s: *mut State = &raw mut *st;
    // SAFETY: `step` keeps the contract (module doc); `s` lives across the call.
    let (outcome, result) = unsafe { enter(s, 0) };
    let levels = st.lv[..depth]
        .iter()
        .zip(expect)
        .map(|(l, expect)| Level {
            expect,
            seen: l.seen,
            own_memory: l.own,
            child: l.child,
            seen_after: l.seen_after,
            child_result: l.child_result,
            touched_unfaulted: l.unfaulted,
        })
        .collect();
    Ok(Report { outcome, result, levels })
}

/// Enters level `j` of the chain `s` by its kind: the outcome, and the result words for a
/// call.
///
/// # Safety
/// `s` is the live chain state, `j < s.depth`, and level `j`'s domain is live and not active.
unsafe fn enter(s: *mut State, j: usize) -> (Outcome, Option<(u64, u64)>) {
    // SAFETY: the caller's contract; `step_arg`/`step_frame` keep the call contract.
    unsafe {
        (*s).cur = j;
        let (d, kind) = ((*s).lv[j].domain, (*s).lv[j].kind);
        let refused = Outcome::RightsFailed(0);
        match kind {
            Kind::Fcall => ((*d).fcall(step_arg, s.cast()), None),
            Kind::Tcall => ((*d).tcall(step_arg, s.cast()).unwrap_or(refused), None),
            Kind::Xfer => ((*d).xfer(step_arg, s.cast()).unwrap_or(refused), None),
            Kind::Call => {
                let w = (*s).words;
                match (*d).call(step_frame, [s as u64, w[0], w[1], w[2]]) {
                    Ok((o, r, second)) => (o, Some((r, second))),
                    Err(_) => (refused, None),
                }
            }
        }
    }
}

extern "C" fn step_arg(s: *mut u8) {
    // SAFETY: the chain state passed by `enter`.
    unsafe { step(s.cast(), std::ptr::null_mut()) }
}

extern "C" fn step_frame(frame: *mut u8) {
    // SAFETY: the frame is in the callee's memory, its first word the chain state (`enter`).
    unsafe {
        let s = frame.cast::<u64>().read_volatile() as usize as *mut State;
        step(s, frame.cast());
    }
}

/// One level's method.
///
/// # Safety
/// `s` is the live chain state and `s.cur` this level; `frame` null or the call frame.
unsafe fn step(s: *mut State, frame: *mut u64) {
    // SAFETY: the contract above; every access is to the state (key 0), this level's own
    // marker, or the touch target (a live domain; the read is meant to fault).
    unsafe {
        let i = (*s).cur;
        if i >= (*s).depth || i >= MAX_DEPTH {
            return;
        }
        let lv = &raw mut (*s).lv[i];
        (*lv).seen = observe();
        let marker = (*(*lv).domain).marker();
        let nonce = 0x0005_eed0_0000_0000 | i as u64;
        marker.write_volatile(nonce);
        (*lv).own = marker.read_volatile() == nonce;
        if i + 1 < (*s).depth {
            let (out, result) = enter(s, i + 1);
            (*s).cur = i;
            (*lv).child = Some(out);
            (*lv).child_result = result;
            (*lv).seen_after = observe();
            if matches!(out, Outcome::Raised | Outcome::Thrown { .. }) && (*s).catch < i as isize {
                raise();
            }
        } else {
            match (*s).end {
                1 => raise(),
                2 => {
                    std::hint::black_box(((*s).touch as *const u8).read_volatile());
                    (*lv).unfaulted = true;
                }
                _ => {}
            }
        }
        if !frame.is_null() {
            frame.write_volatile(call_result((*s).words));
            frame.add(FRAME_WORDS).write_volatile(observe());
        }
        if (*lv).kind == Kind::Xfer {
            xfer_back();
        }
    }
}
