//! The first half of the error test: the domain library's entry points (osprim's ORB) called
//! with random references, arguments and call kinds, in this process. Every call must end as
//! the library promises — returned with the right answer, thrown, raised, transferred back,
//! or refused with an error — and never change a domain it was not aimed at, nor the caller's
//! rights.
//!
//! References come in four kinds: live (issued by the current table), stale (issued by a table
//! since destroyed), never issued (the current table's identity with an index past its last
//! interface) and forged (random bits). Only live ones may be accepted.

use super::Tallies;
use domain::library_calls::{Known, Roaming};
use domain::table::{KeyTable, ObjRef};
use domain::{Domain, NullArgs, Outcome, Rights, Stack};
use stats::rng::Rng;

/// Most standalone domains alive at once.
pub(crate) const MAX_DOMAINS: usize = 6;
/// Most domains in a key table.
pub(crate) const MAX_TABLE_DOMAINS: usize = 8;
/// Most hardware keys a table takes (with keys), so that standalone domains keep theirs.
const MAX_TABLE_KEYS: usize = 6;
/// Most private stacks a domain has linked.
const MAX_STACKS: usize = 3;
/// Most stale references remembered.
const MAX_STALE: usize = 64;

/// A standalone domain and the marker it must hold (its private data's checksum).
struct Slot {
    d: Domain,
    marker: u64,
}

/// The current key table, its references and the markers its domains must hold.
struct Table {
    t: KeyTable,
    /// Issued references: (reference, its type, its domain).
    refs: Vec<(ObjRef, u32, usize)>,
    markers: Vec<u64>,
}

/// A fault a test injects to see the checks catch it.
#[cfg_attr(not(test), allow(dead_code))] // injected by the tests only
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Stale references are looked up by their index in the new table, as the library did
    /// before references carried their table's identity.
    StaleAccepted,
}

/// The first half's state.
pub(crate) struct Orb {
    how: Rights,
    /// The caller's PKRU at the start (keys; 0 otherwise).
    base_pkru: u32,
    slots: Vec<Slot>,
    table: Option<Table>,
    stale: Vec<ObjRef>,
    fault: Option<Fault>,
    /// Operations done.
    pub(crate) ops: u64,
    /// The first `trace_max` operations, described (for the determinism test).
    pub(crate) trace: Vec<String>,
    trace_max: usize,
}

/// A broken invariant or a wrong answer: what, in one line.
pub(crate) type Violation = String;

/// Invariant names of this half.
pub(crate) const INV_REFUSED: &str =
    "every bad entry call (stale, never-issued or forged reference, unknown domain, no private stack) is refused";
pub(crate) const INV_ANSWERS: &str =
    "every good entry call reaches its domain and answers right (sum, marker, observed rights, outcome)";
pub(crate) const INV_INTACT: &str =
    "every live domain keeps its private data (marker checksum) after every call and refusal";
pub(crate) const INV_RIGHTS: &str =
    "the caller's rights are its own after every call, throw and refusal (PKRU, or the regions closed)";
pub(crate) const INV_OUTSIDE: &str = "every access to a domain from outside faults";

/// Describes an operation into `trace` while it holds fewer than `max`.
fn note(trace: &mut Vec<String>, max: usize, what: impl FnOnce() -> String) {
    if trace.len() < max {
        trace.push(what());
    }
}

/// A random 64-bit word, biased to the edges.
fn word(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => 0,
        1 => u64::MAX,
        2 => 1 << 63,
        3 => rng.below(16),
        _ => rng.next_u64(),
    }
}

impl Orb {
    pub(crate) fn new(how: Rights, fault: Option<Fault>, trace_max: usize) -> Orb {
        let base_pkru = if how == Rights::Pkey { domain::pkru() } else { 0 };
        Orb {
            how,
            base_pkru,
            slots: Vec::new(),
            table: None,
            stale: Vec::new(),
            fault,
            ops: 0,
            trace: Vec::new(),
            trace_max,
        }
    }

    /// Live domains (standalone and in the table).
    pub(crate) fn domains(&self) -> usize {
        self.slots.len() + self.table.as_ref().map_or(0, |t| t.t.len())
    }

    /// One random operation and the checks after it.
    pub(crate) fn step(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        self.ops += 1;
        let kind = rng.below(20);
        note(&mut self.trace, self.trace_max, || format!("op {kind}"));
        match kind {
            0 | 1 => self.create_or_destroy(rng, t),
            2..=4 => self.call_standalone(rng, t),
            5 => self.stacks(rng, t),
            6 => self.new_table(rng, t),
            7 => self.add_interface(rng, t),
            8..=11 => self.lookup(rng, t),
            12 | 13 => self.table_entry(rng, t, false),
            14 | 15 => self.table_entry(rng, t, true),
            16 => {
                t.op("domain.raise_outside_a_call");
                domain::raise();
                domain::xfer_back();
                t.result("domain: raise outside a call did nothing");
                Ok(())
            }
            _ => self.probe(rng, t),
        }?;
        self.check_rights(t)?;
        if self.ops.is_multiple_of(32) {
            self.check_intact(t)?;
        }
        Ok(())
    }

    fn create_or_destroy(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        let create = self.slots.is_empty() || (self.slots.len() < MAX_DOMAINS && rng.below(2) == 0);
        if create {
            let stack = rng.below(4) != 0;
            note(&mut self.trace, self.trace_max, || format!("create stack={stack}"));
            t.op("domain.create");
            match Domain::new(self.how, stack) {
                Ok(d) => self.slots.push(Slot { d, marker: 0 }),
                Err(e) => t.result(&format!("domain: create refused ({})", e.kind())),
            }
        } else {
            let i = rng.index(self.slots.len());
            note(&mut self.trace, self.trace_max, || format!("destroy {i}"));
            t.op("domain.destroy");
            self.slots.swap_remove(i);
        }
        Ok(())
    }

    /// A random call of a random kind into a random standalone domain.
    fn call_standalone(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        if self.slots.is_empty() {
            return self.create_or_destroy(rng, t);
        }
        let i = rng.index(self.slots.len());
        let kind = rng.below(8);
        let value = word(rng);
        let other = rng.index(self.slots.len());
        note(&mut self.trace, self.trace_max, || format!("call {i} kind {kind} value {value:#x} other {other}"));
        let how = self.how;
        let code = how.fault_code();
        let slot = &self.slots[i];
        let has_stack = slot.d.stack().is_some();
        let inside = slot.d.inside();
        let mut marker = slot.marker;
        // Each arm: the call's name, and what it came to (its result kind) or what was wrong.
        let (name, what): (&str, Result<&str, String>) = match kind {
            0 => {
                let mut a = NullArgs::for_domain(&slot.d);
                a.value = value;
                let out = slot.d.fcall_known(Known::Null, &mut a);
                marker = value;
                (
                    "domain.fcall",
                    expect(out, Outcome::Returned).and(same("observed rights", a.seen, inside)).map(|_| "returned"),
                )
            }
            1 => {
                let mut a = NullArgs::for_domain(&slot.d);
                let out = slot.d.fcall_known(Known::ReadMarker, &mut a);
                (
                    "domain.fcall",
                    expect(out, Outcome::Returned).and(same("marker", a.value, marker)).map(|_| "returned"),
                )
            }
            2 => {
                let mut a = NullArgs::for_domain(&slot.d);
                a.value = value;
                match slot.d.tcall_known(Known::Null, &mut a) {
                    Ok(out) => {
                        marker = value;
                        let ok = ran(has_stack).and(expect(out, Outcome::Returned)).and(same(
                            "observed rights",
                            a.seen,
                            inside,
                        ));
                        ("domain.tcall", ok.map(|_| "returned"))
                    }
                    Err(_) => ("domain.tcall", refused(has_stack)),
                }
            }
            3 => {
                let args = [word(rng), word(rng), word(rng), word(rng)];
                match slot.d.call_sum(args) {
                    // The frame lies past the marker word, which stays.
                    Ok((out, sum, seen)) => {
                        let want = args.iter().fold(1u64, |s, a| s.wrapping_add(*a));
                        let ok = ran(has_stack)
                            .and(expect(out, Outcome::Returned))
                            .and(same("sum", sum, want))
                            .and(same("observed rights", seen, inside));
                        ("domain.call", ok.map(|_| "returned"))
                    }
                    Err(_) => ("domain.call", refused(has_stack)),
                }
            }
            4 | 5 => {
                // A throw: touch another domain's marker (a fault), or raise (touch nothing).
                let mut a = NullArgs::for_domain(&slot.d);
                a.value = value;
                let touch = (kind == 4 && other != i).then(|| &self.slots[other].d);
                let (want, res) = match touch {
                    Some(o) => (Outcome::Thrown { addr: o.marker() as usize, code }, "thrown"),
                    None => (Outcome::Raised, "raised"),
                };
                let mut a = match touch {
                    Some(o) => a.touching(o),
                    None => a,
                };
                let by_call = rng.below(2) == 0;
                let (name, out) = if by_call {
                    ("domain.call", slot.d.call_throwing(&mut a).map(|(o, _, _)| o))
                } else {
                    ("domain.fcall", Ok(slot.d.fcall_known(Known::Throwing, &mut a)))
                };
                match out {
                    Ok(out) => {
                        marker = value;
                        let ok = if by_call { ran(has_stack) } else { Ok(()) };
                        (name, ok.and(expect(out, want)).map(|_| res))
                    }
                    Err(_) => (name, refused(has_stack)),
                }
            }
            6 => match slot.d.xfer_target() {
                Ok(x) => {
                    let mut a = NullArgs::for_domain(&slot.d);
                    a.value = value;
                    let out = x.xfer_stamped(&mut a);
                    marker = value;
                    let ok =
                        ran(has_stack).and(expect(out, Outcome::Xferred)).and(same("observed rights", a.seen, inside));
                    ("domain.xfer", ok.map(|_| "xferred"))
                }
                Err(_) => ("domain.xfer", refused(has_stack)),
            },
            _ => {
                let mut r = Roaming::new(None);
                r.set_value(value);
                let out = if rng.below(2) == 0 { slot.d.construct(&mut r) } else { slot.d.destruct(&mut r) };
                marker = value;
                (
                    "domain.construct",
                    expect(out, Outcome::Returned).and(same("observed rights", r.seen(), inside)).map(|_| "returned"),
                )
            }
        };
        t.op(name);
        let res = what.map_err(|e| format!("{name} into domain {i}: {e}"))?;
        t.invariant(if res.starts_with("refused") { INV_REFUSED } else { INV_ANSWERS });
        t.result(&format!("domain: {res}"));
        self.slots[i].marker = marker;
        Ok(())
    }

    fn stacks(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        if self.slots.is_empty() {
            return self.create_or_destroy(rng, t);
        }
        let i = rng.index(self.slots.len());
        let link = rng.below(2) == 0;
        note(&mut self.trace, self.trace_max, || format!("stack {i} link={link}"));
        let d = &mut self.slots[i].d;
        if link && d.stacks() < MAX_STACKS {
            t.op("domain.link_stack");
            match Stack::new() {
                Ok(s) => d.link_stack(s),
                Err(e) => t.result(&format!("domain: stack refused ({})", e.kind())),
            }
        } else {
            t.op("domain.unlink_stack");
            let had = d.stacks();
            let got = d.unlink_stack();
            if got.is_some() != (had > 0) || d.stacks() != had.saturating_sub(1) {
                return Err(format!("unlink_stack on a domain with {had} stacks left {}", d.stacks()));
            }
        }
        Ok(())
    }

    fn new_table(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        let n = 1 + rng.index(MAX_TABLE_DOMAINS);
        let keys = 2 + rng.index(MAX_TABLE_KEYS - 1);
        note(&mut self.trace, self.trace_max, || format!("table {n} {keys}"));
        t.op("domain.table_new");
        if let Some(old) = self.table.take() {
            t.op("domain.table_destroy");
            self.stale.extend(old.refs.iter().map(|r| r.0));
            if self.stale.len() > MAX_STALE {
                let cut = self.stale.len() - MAX_STALE;
                self.stale.drain(..cut);
            }
        }
        match KeyTable::new(self.how, n, keys) {
            Ok(k) => self.table = Some(Table { t: k, refs: Vec::new(), markers: vec![0; n] }),
            Err(e) => t.result(&format!("domain: table refused ({})", e.kind())),
        }
        Ok(())
    }

    fn add_interface(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        let Some(tb) = self.table.as_mut() else { return self.new_table(rng, t) };
        let d = rng.index(tb.t.len() + 3);
        let ty = rng.next_u64() as u32;
        t.op("domain.add_interface");
        t.invariant(INV_REFUSED);
        match tb.t.add_interface(d, ty) {
            Some(r) if d < tb.t.len() => tb.refs.push((r, ty, d)),
            None if d >= tb.t.len() => t.result("domain: refused (an interface of an unknown domain)"),
            got => return Err(format!("add_interface({d}) in a table of {} gave {got:?}", tb.t.len())),
        }
        note(&mut self.trace, self.trace_max, || format!("add_interface {d} {ty}"));
        Ok(())
    }

    /// get_type and sel2ref with a reference of a random kind.
    fn lookup(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        let Some(tb) = self.table.as_ref() else { return self.new_table(rng, t) };
        let kind = rng.below(4);
        let sel = rng.below(2) == 0;
        let (r, live, what) = match kind {
            0 if !tb.refs.is_empty() => {
                let i = rng.index(tb.refs.len());
                (tb.refs[i].0, Some(tb.refs[i]), "live")
            }
            1 if !self.stale.is_empty() => {
                let r = self.stale[rng.index(self.stale.len())];
                // The injected fault: the stale reference's index looked up in this table.
                let r = match self.fault {
                    Some(Fault::StaleAccepted) => {
                        tb.refs.iter().find(|x| x.0.to_bits() as u32 == r.to_bits() as u32).map_or(r, |x| x.0)
                    }
                    None => r,
                };
                (r, None, "stale")
            }
            2 => {
                let base = tb.refs.first().map_or(0, |r| r.0.to_bits() & !0xffff_ffff);
                let past = tb.refs.len() as u64 + rng.below(1 << 20);
                // A table with no reference yet: its identity is unknown, so this is forged.
                (ObjRef::from_bits(base | past), None, if base == 0 { "forged" } else { "never-issued" })
            }
            _ => {
                let bits = word(rng);
                let live = tb.refs.iter().find(|x| x.0.to_bits() == bits).copied();
                (ObjRef::from_bits(bits), live, "forged")
            }
        };
        note(&mut self.trace, self.trace_max, || format!("lookup {what} sel={sel} {:#x}", r.to_bits() & 0xffff_ffff));
        t.invariant(if live.is_some() { INV_ANSWERS } else { INV_REFUSED });
        let name = if sel { "domain.sel2ref" } else { "domain.get_type" };
        t.op(name);
        let wrong = if sel {
            let got = tb.t.sel2ref(r);
            match (live, got) {
                (None, None) => None,
                (Some((_, _, d)), Some(b))
                    if b.domain == d && b.key == tb.t.domain(d).key().filter(|_| b.key.is_some()) =>
                {
                    None
                }
                (l, g) => Some(format!("sel2ref of a {what} reference gave {g:?}, wanted domain {:?}", l.map(|x| x.2))),
            }
        } else {
            let got = tb.t.get_type(r);
            (got != live.map(|x| x.1))
                .then(|| format!("get_type of a {what} reference gave {got:?}, wanted {:?}", live.map(|x| x.1)))
        };
        if let Some(w) = wrong {
            return Err(w);
        }
        t.result(&if live.is_some() {
            "domain: answered (live reference)".to_string()
        } else {
            format!("domain: refused ({what} reference)")
        });
        Ok(())
    }

    /// `resolve` (`xfer` false) or `xfer_stamped` of a random domain index; on a hit, the
    /// domain's marker is checked and rewritten (by an f-call, or by the transfer).
    fn table_entry(&mut self, rng: &mut Rng, t: &mut Tallies, xfer: bool) -> Result<(), Violation> {
        let Some(tb) = self.table.as_mut() else { return self.new_table(rng, t) };
        let n = tb.t.len();
        let d = if rng.below(4) == 0 { rng.next_u64() as usize } else { rng.index(n + 3) };
        let value = word(rng);
        let name = if xfer { "xfer_stamped" } else { "resolve" };
        note(&mut self.trace, self.trace_max, || format!("{name} {d} {value:#x}"));
        t.op(if xfer { "domain.xfer" } else { "domain.resolve" });
        let mut r = Roaming::new(None);
        let got = if xfer { tb.t.xfer_stamped(d, &mut r, value).map(Some) } else { tb.t.resolve(d).map(|_| None) };
        match got {
            Err(_) if d >= n => {
                t.invariant(INV_REFUSED);
                t.result("domain: refused (unknown domain)");
                return Ok(());
            }
            Err(e) => return Err(format!("{name}({d}) in a table of {n} failed: {e}")),
            Ok(_) if d >= n => return Err(format!("{name}({d}) in a table of {n} was accepted")),
            Ok(Some(out)) => {
                t.invariant(INV_ANSWERS);
                let inside = tb.t.domain(d).inside();
                expect(out, Outcome::Xferred)
                    .and(same("observed rights", r.seen(), inside))
                    .map_err(|e| format!("table domain {d}: {e}"))?;
                t.result("domain: xferred");
            }
            Ok(None) => {
                t.invariant(INV_ANSWERS);
                let dom = tb.t.domain(d);
                let mut a = NullArgs::for_domain(dom);
                t.op("domain.fcall");
                let out = dom.fcall_known(Known::ReadMarker, &mut a);
                expect(out, Outcome::Returned)
                    .and(same("marker", a.value, tb.markers[d]))
                    .map_err(|e| format!("table domain {d}: {e}"))?;
                let mut a = NullArgs::for_domain(dom);
                a.value = value;
                t.op("domain.fcall");
                expect(dom.fcall_known(Known::Null, &mut a), Outcome::Returned)
                    .map_err(|e| format!("table domain {d}: {e}"))?;
                t.result("domain: returned");
            }
        }
        tb.markers[d] = value;
        Ok(())
    }

    /// The isolation probe on a random domain's marker: it must fault.
    fn probe(&mut self, rng: &mut Rng, t: &mut Tallies) -> Result<(), Violation> {
        let n = self.domains();
        if n == 0 {
            return self.create_or_destroy(rng, t);
        }
        let i = rng.index(n);
        note(&mut self.trace, self.trace_max, || format!("probe {i}"));
        let marker = self.domain(i).marker() as usize;
        t.op("domain.probe");
        t.invariant(INV_OUTSIDE);
        match domain::probe_read(self.how, marker) {
            Err(f) if f.addr == marker && f.code == self.how.fault_code() => {
                t.result("domain: thrown (outside access)");
                Ok(())
            }
            got => Err(format!("reading domain {i}'s marker from outside gave {got:?}")),
        }
    }

    /// Live domain `i` (standalone first, then the table's).
    fn domain(&self, i: usize) -> &Domain {
        match self.slots.get(i) {
            Some(s) => &s.d,
            None => self.table.as_ref().map(|t| t.t.domain(i - self.slots.len())).expect("a live domain"),
        }
    }

    fn check_rights(&self, t: &mut Tallies) -> Result<(), Violation> {
        t.invariant(INV_RIGHTS);
        if self.how == Rights::Pkey {
            let now = domain::pkru();
            if now != self.base_pkru {
                return Err(format!("the caller's PKRU is {now:#x}, was {:#x}", self.base_pkru));
            }
        } else if self.ops.is_multiple_of(512) && self.domains() > 0 {
            // The kernel's view: every region closed outside calls.
            for i in 0..self.domains() {
                let view = self.domain(i).caller_view();
                if view != "region ---p" {
                    return Err(format!("domain {i} seen from the caller: {view}, not closed"));
                }
            }
        }
        Ok(())
    }

    /// Every live domain's marker is what was last written into it.
    pub(crate) fn check_intact(&mut self, t: &mut Tallies) -> Result<(), Violation> {
        t.invariant(INV_INTACT);
        for (i, s) in self.slots.iter().enumerate() {
            let mut a = NullArgs::for_domain(&s.d);
            let out = s.d.fcall_known(Known::ReadMarker, &mut a);
            expect(out, Outcome::Returned)
                .and(same("marker", a.value, s.marker))
                .map_err(|e| format!("domain {i}: {e}"))?;
        }
        if let Some(tb) = self.table.as_mut() {
            for d in 0..tb.t.len() {
                let dom = tb.t.resolve(d).map_err(|e| format!("resolve({d}): {e}"))?;
                let mut a = NullArgs::for_domain(dom);
                let out = dom.fcall_known(Known::ReadMarker, &mut a);
                expect(out, Outcome::Returned)
                    .and(same("marker", a.value, tb.markers[d]))
                    .map_err(|e| format!("table domain {d}: {e}"))?;
            }
        }
        Ok(())
    }
}

fn expect(got: Outcome, want: Outcome) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("ended {got:?}, wanted {want:?}")) }
}

fn same(what: &str, got: u64, want: u64) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("{what} {got:#x}, wanted {want:#x}")) }
}

/// A call that needs a private stack ran: right only if the domain has one.
fn ran(has_stack: bool) -> Result<(), String> {
    if has_stack { Ok(()) } else { Err("ran without a private stack (should be refused)".into()) }
}

/// A call was refused: right only if the domain has no private stack.
fn refused(has_stack: bool) -> Result<&'static str, String> {
    if has_stack {
        Err("refused although the domain has a private stack".into())
    } else {
        Ok("refused (no private stack)")
    }
}
