//! A worker thread: owns domains, creates and destroys them, runs chains of calls over them,
//! probes them from outside, and checks every invariant a chain or a probe touches. When told
//! to stop (or on a failure) it hands its domains to the orphanage and says it is done.

use super::choice::{self, EndChoice, Step, View};
use super::keys::Lease;
use super::{Inv, Op, Res, Shared};
use domain::chain::{self, End, Kind, Plan, Report};
use domain::{Domain, Outcome, Rights};
use stats::rng::Rng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What the controller and a worker share.
#[derive(Default)]
pub struct Flags {
    /// Set by the controller: finish the current step, hand the domains on and end.
    pub stop: AtomicBool,
    /// Set by the worker as its last act.
    pub done: AtomicBool,
    /// Steps done (the controller's sign of life).
    pub beat: AtomicU64,
}

/// An owned domain and its id.
pub struct Owned {
    pub id: u64,
    pub d: Domain,
}

struct Worker {
    rng: Rng,
    owned: Vec<Owned>,
    lease: Lease,
    shared: Arc<Shared>,
    flags: Arc<Flags>,
}

/// The worker's body.
pub fn run(serial: u64, shared: Arc<Shared>, flags: Arc<Flags>) {
    let mut w = Worker {
        rng: choice::worker_rng(shared.seed, serial),
        owned: Vec::new(),
        lease: Lease::default(),
        shared,
        flags,
    };
    while !w.flags.stop.load(Ordering::Relaxed) && !w.shared.stopping() {
        w.step();
        w.flags.beat.fetch_add(1, Ordering::Relaxed);
    }
    w.hand_on();
    w.flags.done.store(true, Ordering::Release);
}

impl Worker {
    fn how(&self) -> Rights {
        self.shared.how
    }

    fn step(&mut self) {
        let s = &self.shared;
        let v = View {
            owned: self.owned.len(),
            live: s.live.load(Ordering::Relaxed),
            target: s.target_domains.load(Ordering::Relaxed),
            max: s.cap,
            orphans: s.orphan_count.load(Ordering::Relaxed),
            probe_per_mille: s.config.probe_per_mille,
        };
        match choice::step(&mut self.rng, v) {
            Step::Create => self.create(),
            Step::Destroy(i) => self.destroy(i),
            Step::Chain => self.chain(),
            Step::Probe(i) => self.probe(i),
            Step::Adopt => self.adopt(),
        }
    }

    fn create(&mut self) {
        let s = &self.shared;
        let cap = s.cap;
        match s.live.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| (n < cap).then_some(n + 1)) {
            Ok(n) => s.live_peak.fetch_max(n + 1, Ordering::Relaxed),
            Err(_) => return,
        };
        match s.new_domain() {
            Ok(d) => {
                let id = s.next_id.fetch_add(1, Ordering::Relaxed);
                self.owned.push(Owned { id, d });
                s.op(Op::Create);
            }
            Err(e) => {
                s.live.fetch_sub(1, Ordering::AcqRel);
                s.fail(format!("creating a domain failed with {} alive: {e}", s.live.load(Ordering::Relaxed)));
            }
        }
    }

    fn destroy(&mut self, i: usize) {
        let s = &self.shared;
        if i >= self.owned.len()
            || s.live.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| (n > 1).then_some(n - 1)).is_err()
        {
            return;
        }
        let o = self.owned.swap_remove(i);
        self.lease.forget(o.id);
        drop(o);
        s.op(Op::Destroy);
    }

    fn adopt(&mut self) {
        let s = &self.shared;
        let mut orphans = s.orphans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = orphans.pop() {
            s.orphan_count.store(orphans.len(), Ordering::Relaxed);
            drop(orphans);
            self.owned.push(o);
            s.res(Res::Adopted);
        }
    }

    /// Gives the keys back and the domains to the orphanage.
    fn hand_on(&mut self) {
        let s = Arc::clone(&self.shared);
        if let Some(pool) = &s.keys {
            let owned = &self.owned;
            if let Err(e) = self.lease.give_back(pool, |id| owned.iter().find(|o| o.id == id).map(|o| &o.d)) {
                s.fail(format!("parking a domain failed: {e}"));
            }
        }
        let mut orphans = s.orphans.lock().unwrap_or_else(|e| e.into_inner());
        orphans.append(&mut self.owned);
        s.orphan_count.store(orphans.len(), Ordering::Relaxed);
    }

    /// Reads domain `i`'s marker from outside every call: it must fault, in its range, with
    /// the mechanism's code, and leave the caller's rights as they were.
    fn probe(&mut self, i: usize) {
        let Some(o) = self.owned.get(i) else { return };
        let how = self.how();
        let before = (how == Rights::Pkey).then(domain::pkru);
        let addr = o.d.marker() as usize;
        let r = domain::probe_read(how, addr);
        self.shared.op(Op::FaultProbe);
        let ok = matches!(r, Err(f) if f.addr == addr && f.code == how.fault_code());
        self.shared
            .check(Inv::Outside, ok, || format!("an outside read of domain {} did not fault as it must: {r:?}", o.id));
        if let Some(b) = before {
            let after = domain::pkru();
            self.shared.check(Inv::Restored, after == b, || format!("PKRU {b:#x} became {after:#x} across a probe"));
        }
        if ok {
            self.shared.res(Res::ProbeFaulted);
        }
    }

    fn chain(&mut self) {
        if self.owned.is_empty() {
            return;
        }
        let c = choice::chain(&mut self.rng, self.owned.len(), self.shared.config.max_depth);
        let mut depth = c.picks.len();
        if let Some(pool) = self.shared.keys.clone() {
            let owned = &self.owned;
            let ids: Vec<(u64, &Domain)> = c.picks.iter().map(|&i| (owned[i].id, &owned[i].d)).collect();
            match self.lease.cover(&pool, &ids, |id| owned.iter().find(|o| o.id == id).map(|o| &o.d)) {
                Ok((n, misses)) => {
                    depth = n;
                    self.shared.res_n(Res::KeyMiss, misses);
                }
                Err(e) => return self.shared.fail(format!("re-tagging a domain failed: {e}")),
            }
            if depth == 0 {
                return self.shared.res(Res::KeyWait);
            }
        }
        let truncated = depth < c.picks.len();
        // Drawn before the chain borrows the domains: whether to check the caller's rights
        // afterwards, and whether to give the keys back.
        let inject = self.inject_now();
        let sampled = inject || self.rng.below(8) == 0;
        let give_back = self.rng.below(2) == 0;
        let end = match c.end {
            // A truncated chain's deepest level is another; it ends by a raise instead.
            EndChoice::Touch(_) | EndChoice::Raise if truncated => End::Raise,
            EndChoice::Return => End::Return,
            EndChoice::Raise => End::Raise,
            EndChoice::Touch(t) => End::Touch(&self.owned[t].d),
        };
        let catch = c.catch.filter(|&x| x + 1 < depth);
        let levels: Vec<(&Domain, Kind)> =
            c.picks[..depth].iter().zip(&c.kinds).map(|(&i, &k)| (&self.owned[i].d, k)).collect();
        let plan = Plan { levels, end, catch, words: c.words };
        let how = self.how();
        let before = (how == Rights::Pkey).then(domain::pkru);
        let ticks = sys::timer::Ticker::thread_ticks();
        let report = chain::run(&plan);
        let landed = sys::timer::Ticker::thread_ticks().wrapping_sub(ticks);
        let s = &self.shared;
        s.res_n(Res::SignalsInCalls, landed);
        let report = match report {
            Ok(r) => r,
            Err(e) => return s.fail(format!("a chain was refused: {e}")),
        };
        for (_, k) in &plan.levels {
            s.op(match k {
                Kind::Fcall => Op::Fcall,
                Kind::Tcall => Op::Tcall,
                Kind::Call => Op::Call,
                Kind::Xfer => Op::Xfer,
            });
        }
        if !matches!(plan.end, End::Return) {
            s.op(Op::Throw);
        }
        judge(s, &plan, &report, how);
        if let Some(b) = before {
            let after = domain::pkru();
            s.check(Inv::Restored, after == b, || format!("PKRU {b:#x} became {after:#x} across a chain"));
        }
        // The caller's rights over the chain's domains, seen by the kernel: a read must fault
        // (sampled: one chain in eight, and always after an injected leak).
        if sampled {
            let d = plan.levels[0].0;
            if inject && let Err(e) = d.leak_rights_for_test() {
                return s.fail(format!("the injected leak failed: {e}"));
            }
            let addr = d.marker() as usize;
            let r = domain::probe_read(how, addr);
            s.op(Op::FaultProbe);
            s.check(Inv::Restored, r.is_err(), || {
                format!("rights not restored after a chain: the caller read domain at {addr:#x} outside any call")
            });
        }
        drop(plan);
        if give_back && let Some(pool) = &self.shared.keys {
            let owned = &self.owned;
            if let Err(e) = self.lease.give_back(pool, |id| owned.iter().find(|o| o.id == id).map(|o| &o.d)) {
                self.shared.fail(format!("parking a domain failed: {e}"));
            }
        }
    }

    /// Whether the test's injected leak is due now (once, in the first chain after the
    /// configured delay, whichever worker runs it).
    fn inject_now(&mut self) -> bool {
        let s = &self.shared;
        let Some(after) = s.config.inject_leak_after else { return false };
        s.start.elapsed() >= after && !s.injected.swap(true, Ordering::AcqRel)
    }
}

/// What the caller of level `k` must see: a throw on its way up from the deepest level to
/// its catch point, or the kind's normal ending.
fn expected(plan: &Plan<'_>, k: usize, how: Rights) -> Outcome {
    let depth = plan.levels.len();
    let cl = plan.catch.map_or(-1, |c| c as isize);
    let throwing = !matches!(plan.end, End::Return);
    if throwing && k as isize > cl {
        return match plan.end {
            End::Touch(d) if k + 1 == depth => Outcome::Thrown { addr: d.marker() as usize, code: how.fault_code() },
            _ => Outcome::Raised,
        };
    }
    if plan.levels[k].1 == Kind::Xfer { Outcome::Xferred } else { Outcome::Returned }
}

/// Checks a chain's report against its plan: each level ran in its own domain with its own
/// memory, had its rights back after its call came back, every call ended as it must (a throw
/// caught where it was to be), the call kind's frame came back, and a touch faulted.
fn judge(s: &Shared, plan: &Plan<'_>, r: &Report, how: Rights) {
    let depth = plan.levels.len();
    for (k, l) in r.levels.iter().enumerate() {
        let kind = plan.levels[k].1.name();
        s.check(Inv::Reach, l.seen == l.expect && l.own_memory, || {
            format!(
                "level {k} ({kind}) of a {depth}-deep chain observed {:#x} instead of {:#x} (own memory: {})",
                l.seen, l.expect, l.own_memory
            )
        });
        let got = if k == 0 { Some(r.outcome) } else { r.levels[k - 1].child };
        let want = expected(plan, k, how);
        s.check(Inv::Caught, got == Some(want), || {
            format!("the call into level {k} ({kind}) of a {depth}-deep chain ended {got:?}, not {want:?}")
        });
        if let Some(Outcome::Returned) = got
            && plan.levels[k].1 == Kind::Call
        {
            let result = if k == 0 { r.result } else { r.levels[k - 1].child_result };
            let want = (chain::call_result(plan.words), l.expect);
            s.check(Inv::CallFrame, result == Some(want), || {
                format!("the call into level {k} brought back {result:?}, not {want:?}")
            });
        }
        if k + 1 < depth {
            s.check(Inv::Restored, l.seen_after == l.expect, || {
                format!(
                    "level {k} ({kind}) had {:#x} instead of its {:#x} after its call came back ({:?})",
                    l.seen_after, l.expect, l.child
                )
            });
        }
        if matches!(got, Some(Outcome::Returned | Outcome::Xferred)) {
            s.res(if got == Some(Outcome::Xferred) { Res::Xferred } else { Res::Returned });
        }
    }
    if let End::Touch(_) = plan.end {
        let l = &r.levels[depth - 1];
        s.check(Inv::Outside, !l.touched_unfaulted, || {
            format!("level {} of a {depth}-deep chain read another domain's memory without a fault", depth - 1)
        });
        s.res(Res::Thrown);
    } else if let End::Raise = plan.end {
        s.res(Res::Raised);
    }
}
