//! Protection-domain calls in one address space (memory protection keys): `domain.fcall`,
//! `domain.tcall`, `domain.call` (round trips), `domain.xfer` (one way, `via` = `key` |
//! `table_hit` | `table_miss`), `domain.throw` (`after` = `fcall` | `tcall` | `call`),
//! `domain.create` / `domain.destroy` (`variant` = `plain` | `null` | `stack` |
//! `linked_stack`). Seed: Go! component OS (seed 003), Tables "Detailed ORB performance",
//! "Exception latency", "Other ORB methods", "GDT miss". The library is [`domain`].
//!
//! **Timing models.**
//! - Round trips: `Ctx::iter` around one call: the argument set, the rights switch (and stack
//!   switch, and argument frame copy), the null method (writes its marker, reads PKRU), the
//!   way back.
//! - `domain.xfer`: per transfer, the caller reads the clock, (looks the callee up in the key
//!   table: a hit, or a miss that evicts the least recently used domain and re-tags two
//!   regions with `pkey_mprotect`), switches rights and stack and jumps; the callee's first
//!   statement reads the clock. The transfer back is not timed.
//! - `domain.throw`: the callee, after the call of its kind, reads the clock and touches
//!   another domain's memory; the fault (`SEGV_PKUERR`) goes through the kernel to the SIGSEGV
//!   dispatcher, the domain's owner jumps to the caller's catch point (rights and stack back),
//!   and SIGSEGV is unblocked; the caller then reads the clock.
//! - `domain.create` / `domain.destroy`: batches of 8 domains, each batch timed as a whole;
//!   the other half (destroy / create) untimed.
//! - Transfers, throws and batches are each a timed region of their own: the sampler subtracts
//!   one timer overhead per transfer, per throw and per batch ([`crate::sampler::Timed`]), not
//!   one per sample (which left about 18 ns of timer in every transfer). A domain owned key stays allocated all along
//!   (so the SIGSEGV handler stays installed and is not part of the figure).
//!
//! **Validation** (every row): the callee ran in its domain (the PKRU it read grants key 0 and
//! its key only), the value it wrote is in its memory (read back from inside), the caller's
//! PKRU is as before, and an isolation probe (the caller reading the callee's memory) faults
//! with `SEGV_PKUERR`. Create/destroy also check that no key is left allocated.
//!
//! Every call goes through the library's safe calls of its own methods
//! ([`domain::library_calls`]).

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use domain::library_calls::{Known, Roaming};
use domain::{self, Domain, NullArgs, Outcome, SEGV_PKUERR, table::KeyTable};
use std::io;

fn skip_if_unavailable() -> Result<(), String> {
    domain::available().map_err(|why| format!("no protection-key domains here: {why}"))
}

fn failed(what: &str) -> impl FnOnce(io::Error) -> NotMeasured + '_ {
    move |e| NotMeasured::Failed(format!("{what}: {e}"))
}

/// The checks every domain row makes (see the module doc).
fn validate(d: &Domain, before: u32, seen: u32, written: Option<u64>) -> Vec<Check> {
    let mut checks = vec![Check::new(
        "the callee ran in its domain (PKRU it read grants key 0 and its key only)",
        format!("{:#010x}", d.rights()),
        format!("{seen:#010x}"),
        seen == d.rights(),
    )];
    if let Some(v) = written {
        let mut a = NullArgs::for_domain(d);
        let out = d.fcall_known(Known::ReadMarker, &mut a);
        checks.push(Check::new(
            "the value the callee wrote is in its memory (read back from inside)",
            v.to_string(),
            format!("{} ({out:?})", a.value),
            a.value == v && out == Outcome::Returned,
        ));
    }
    let after = domain::pkru();
    checks.push(Check::new(
        "the caller's rights are back (PKRU as before the calls)",
        format!("{before:#010x}"),
        format!("{after:#010x}"),
        after == before,
    ));
    let probe = domain::probe_read(d.marker() as usize);
    checks.push(Check::new(
        "isolation probe: the caller's read of the callee's memory faults (SEGV_PKUERR)",
        "fault, si_code 4",
        match probe {
            Ok(v) => format!("read {v}"),
            Err(f) => format!("fault, si_code {}", f.code),
        },
        probe.is_err_and(|f| f.code == SEGV_PKUERR),
    ));
    checks
}

/// A round-trip call kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Rights switch only.
    F,
    /// Rights and stack switch.
    T,
    /// Rights and stack switch and an argument frame.
    Full,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::F => "fcall",
            Kind::T => "tcall",
            Kind::Full => "call",
        }
    }

    fn from_param(p: &Params, key: &str) -> Kind {
        match p.get(key).and_then(|v| v.as_str()) {
            Some("tcall") => Kind::T,
            Some("call") => Kind::Full,
            _ => Kind::F,
        }
    }
}

/// `domain.fcall`, `domain.tcall`, `domain.call`: null round trips.
pub struct Call(pub Kind);

impl Benchmark for Call {
    fn id(&self) -> &'static str {
        match self.0 {
            Kind::F => "domain.fcall",
            Kind::T => "domain.tcall",
            Kind::Full => "domain.call",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Kind::F => "null call into a protection-key domain: rights switch (wrpkru) only, round trip",
            Kind::T => "null call into a protection-key domain: rights switch + private stack, round trip",
            Kind::Full => {
                "null call into a protection-key domain: rights + stack + argument frame copied in and result out, round trip"
            }
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        let d = Domain::new(self.0 != Kind::F).map_err(failed("create a domain"))?;
        let before = domain::pkru();
        let mut a = NullArgs::for_domain(&d);
        let mut i = 0u64;
        let mut bad = 0u64;
        let mut seen = 0u64;
        let samples = match self.0 {
            Kind::F => ctx.iter(|| {
                i += 1;
                a.value = i;
                d.fcall_known(Known::Null, &mut a)
            }),
            Kind::T => ctx.iter(|| {
                i += 1;
                a.value = i;
                d.tcall_known(Known::Null, &mut a).unwrap_or(Outcome::Raised)
            }),
            Kind::Full => ctx.iter(|| {
                i += 1;
                let r = d.call_sum([i, 0, 0, 0]);
                match r {
                    Ok((Outcome::Returned, s, p)) if s == i + 1 => seen = p,
                    _ => bad += 1,
                }
            }),
        };
        let (seen, written) = match self.0 {
            Kind::Full => (seen as u32, None),
            _ => (a.pkru_seen, Some(i)),
        };
        let mut checks = validate(&d, before, seen, written);
        if self.0 == Kind::Full {
            checks.push(Check::all_ok("every call returned its argument + 1 (frame copied in and out)", bad, i));
        }
        Ok(Measured::new(samples, checks).note(format!(
            "{}: caller and callee in one address space, the callee's data under protection key {}",
            self.0.name(),
            d.key()
        )))
    }
}

/// How `domain.xfer` names its callee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Key,
    TableHit,
    TableMiss,
}

/// `domain.xfer`: one-way transfer into a domain.
pub struct Xfer;

/// Domains in the `table_miss` table (more than the 15 hardware keys, as Go!'s GDT misses).
const MISS_DOMAINS: usize = 20;

impl Benchmark for Xfer {
    fn id(&self) -> &'static str {
        "domain.xfer"
    }
    fn about(&self) -> &'static str {
        "one-way transfer into a protection-key domain (rights + stack switch, jump), issue to callee's first instruction"
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("via", ["key", "table_hit", "table_miss"])
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let via = match params.get("via").and_then(|v| v.as_str()) {
            Some("table_hit") => Via::TableHit,
            Some("table_miss") => Via::TableMiss,
            _ => Via::Key,
        };
        let before = domain::pkru();
        let timer = ctx.timer;
        let mut bad = 0u64;
        let mut n_total = 0u64;
        let (samples, checks, notes) = if via == Via::Key {
            let d = Domain::new(true).map_err(failed("create a domain"))?;
            let target = d.xfer_target().map_err(failed("the domain's stack"))?;
            let mut a = NullArgs::for_domain(&d);
            a.timer = Some(timer);
            let samples = ctx.iter_regions(|n| {
                let mut ticks = 0u64;
                for _ in 0..n {
                    n_total += 1;
                    a.value = n_total;
                    let t0 = timer.start();
                    let out = target.xfer_stamped(&mut a);
                    bad += u64::from(out != Outcome::Xferred);
                    ticks = ticks.wrapping_add(a.stamp.wrapping_sub(t0));
                }
                // Each transfer is a timed region of its own.
                Timed::regions(ticks, n)
            });
            let mut checks = validate(&d, before, a.pkru_seen, Some(n_total));
            checks.push(Check::all_ok("every transfer came back by transfer", bad, n_total));
            (samples, checks, vec![format!("callee key {} in hand", d.key())])
        } else {
            let domains = if via == Via::TableHit { 2 } else { MISS_DOMAINS };
            let mut t = KeyTable::new(domains, 15).map_err(failed("key table"))?;
            let mut a = Roaming::new(Some(timer));
            let mut obj = 0usize;
            let mut errors = 0u64;
            let samples = ctx.iter_regions(|n| {
                let (mut ticks, mut regions) = (0u64, 0u64);
                for _ in 0..n {
                    n_total += 1;
                    obj = (obj + 1) % domains;
                    let t0 = timer.start();
                    let Ok(out) = t.xfer_stamped(obj, &mut a, n_total) else {
                        errors += 1;
                        continue;
                    };
                    bad += u64::from(out != Outcome::Xferred);
                    ticks = ticks.wrapping_add(a.stamp().wrapping_sub(t0));
                    regions += 1;
                }
                // Each transfer is a timed region of its own (a failed look-up adds none).
                Timed::regions(ticks, regions)
            });
            let d = t.domain(obj);
            let mut checks = validate(d, before, a.pkru_seen(), Some(n_total));
            checks.push(Check::all_ok("every transfer came back by transfer", bad, n_total));
            checks.push(Check::all_ok("every table look-up succeeded (pkey_mprotect on a miss)", errors, n_total));
            let misses = t.misses();
            let (name, ok) = if via == Via::TableHit {
                ("the look-ups hit (after the first of each domain)", misses <= domains as u64)
            } else {
                ("every look-up missed (more domains than keys, used round robin)", misses == n_total)
            };
            checks.push(Check::new(name, format!("{n_total} look-ups"), format!("{misses} misses"), ok));
            (samples, checks, vec![format!("{domains} domains share {} hardware keys", t.keys())])
        };
        let mut m = Measured::new(samples, checks);
        m.notes = notes;
        m.notes.push("one way; the callee comes back through a fresh transfer, not timed".into());
        Ok(m)
    }
}

/// `domain.throw`: a fault in the callee back to the caller's catch point.
pub struct Throw;

impl Benchmark for Throw {
    fn id(&self) -> &'static str {
        "domain.throw"
    }
    fn about(&self) -> &'static str {
        "callee touches another domain's memory (SEGV_PKUERR) -> handler -> caller resumed at its catch point"
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("after", ["fcall", "tcall", "call"])
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let kind = Kind::from_param(params, "after");
        let d = Domain::new(true).map_err(failed("create a domain"))?;
        let other = Domain::new(false).map_err(failed("create a second domain"))?;
        let before = domain::pkru();
        let timer = ctx.timer;
        let mut a = NullArgs::for_domain(&d).touching(&other);
        a.timer = Some(timer);
        let (mut bad, mut total, mut mask_bad) = (0u64, 0u64, 0u64);
        let expected = Outcome::Thrown { addr: other.marker() as usize, code: SEGV_PKUERR };
        let samples = ctx.iter_regions(|n| {
            let mut ticks = 0u64;
            for _ in 0..n {
                total += 1;
                a.value = total;
                let out = match kind {
                    Kind::F => d.fcall_known(Known::Throwing, &mut a),
                    Kind::T => d.tcall_known(Known::Throwing, &mut a).unwrap_or(Outcome::Returned),
                    Kind::Full => d.call_throwing(&mut a).map_or(Outcome::Returned, |r| r.0),
                };
                let t1 = timer.stop();
                ticks = ticks.wrapping_add(t1.wrapping_sub(a.stamp));
                bad += u64::from(out != expected);
            }
            if sigsegv_blocked() {
                mask_bad += 1;
            }
            // Each throw is a timed region of its own.
            Timed::regions(ticks, n)
        });
        let mut checks = validate(&d, before, a.pkru_seen, Some(total));
        checks.push(Check::all_ok(
            "every call threw SEGV_PKUERR at the other domain's address and resumed the caller",
            bad,
            total,
        ));
        checks.push(Check::all_ok("SIGSEGV unblocked again after the throws", mask_bad, 1));
        Ok(Measured::new(samples, checks).note(format!(
            "after {}: fault -> kernel -> SIGSEGV dispatcher -> jump to the catch point -> SIGSEGV unblocked (pthread_sigmask)",
            kind.name()
        )))
    }
}

fn sigsegv_blocked() -> bool {
    sys::timer::BlockedSignal::is_blocked(libc::SIGSEGV)
}

/// What `domain.create` and `domain.destroy` build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Plain,
    Null,
    Stack,
    LinkedStack,
}

const VARIANTS: [&str; 4] = ["plain", "null", "stack", "linked_stack"];

fn variant_of(p: &Params) -> Variant {
    match p.get("variant").and_then(|v| v.as_str()) {
        Some("null") => Variant::Null,
        Some("stack") => Variant::Stack,
        Some("linked_stack") => Variant::LinkedStack,
        _ => Variant::Plain,
    }
}

/// A created domain (the link is dropped first).
struct Made {
    _link: Option<domain::Link>,
    d: Domain,
}

/// Creates one domain of `v`: key, mapping, tag (+ stack, + link) and, but for `null`, a call
/// of its null constructor.
#[inline(always)]
fn create(v: Variant, ctor: &mut Roaming) -> io::Result<Made> {
    let d = Domain::new(matches!(v, Variant::Stack | Variant::LinkedStack))?;
    let link = if v == Variant::LinkedStack { Some(d.link()?) } else { None };
    if v != Variant::Null {
        let out = d.construct(ctor);
        if out != Outcome::Returned {
            return Err(io::Error::other(format!("the constructor did not return: {out:?}")));
        }
    }
    Ok(Made { _link: link, d })
}

/// Domains per timed batch (keys are few: 15 per process).
const BATCH: u64 = 8;

/// Keys that can be allocated now (allocated and freed again).
fn free_keys() -> usize {
    let mut keys = Vec::new();
    while let Ok(k) = domain::Pkey::alloc() {
        keys.push(k);
    }
    keys.len()
}

/// `domain.create` (`destroy` false) or `domain.destroy`.
fn run_lifecycle(ctx: &mut Ctx, params: &Params, destroy: bool) -> Result<Measured, NotMeasured> {
    let v = variant_of(params);
    let keys_before = free_keys();
    let anchor = Domain::new(false).map_err(failed("create the anchor domain"))?;
    let before = domain::pkru();
    let mut ctor = Roaming::new(None);
    let mut error: Option<String> = None;
    let mut made: Vec<Made> = Vec::with_capacity(BATCH as usize);
    let timer = ctx.timer;
    let samples = ctx.iter_regions_fallible(|n| {
        let (mut ticks, mut regions) = (0u64, 0u64);
        let mut left = n;
        while left > 0 {
            let k = left.min(BATCH);
            left -= k;
            regions += 1;
            if destroy {
                for _ in 0..k {
                    match create(v, &mut ctor) {
                        Ok(m) => made.push(m),
                        Err(e) => {
                            error = Some(e.to_string());
                            return None;
                        }
                    }
                }
                let t0 = timer.start();
                while made.pop().is_some() {}
                ticks = ticks.wrapping_add(timer.stop().wrapping_sub(t0));
            } else {
                let t0 = timer.start();
                for _ in 0..k {
                    match create(v, &mut ctor) {
                        Ok(m) => made.push(m),
                        Err(e) => {
                            error = Some(e.to_string());
                            return None;
                        }
                    }
                }
                ticks = ticks.wrapping_add(timer.stop().wrapping_sub(t0));
                while made.pop().is_some() {}
            }
        }
        // Each batch is a timed region of its own.
        Some(Timed::regions(ticks, regions))
    });
    while made.pop().is_some() {}
    if let Some(e) = error {
        return Err(NotMeasured::Failed(format!("create a domain: {e}")));
    }
    // One more, validated: its constructor ran in it.
    ctor.set_value(77);
    let m = create(Variant::Plain, &mut ctor).map_err(failed("create a domain"))?;
    let mut checks = validate(&m.d, before, ctor.pkru_seen(), Some(77));
    drop(m);
    drop(anchor);
    let keys_after = free_keys();
    checks.push(Check::new(
        "no key left allocated (keys free before = after)",
        keys_before.to_string(),
        keys_after.to_string(),
        keys_before == keys_after,
    ));
    Ok(Measured::new(samples, checks).note(format!(
        "{}: batches of {BATCH} timed as a whole; the {} untimed",
        VARIANTS[v as usize],
        if destroy { "creation" } else { "destruction" }
    )))
}

/// `domain.create` (`Lifecycle(false)`) or `domain.destroy` (`Lifecycle(true)`), timed apart.
pub struct Lifecycle(pub bool);

impl Benchmark for Lifecycle {
    fn id(&self) -> &'static str {
        if self.0 { "domain.destroy" } else { "domain.create" }
    }
    fn about(&self) -> &'static str {
        if self.0 {
            "destroy a protection-key domain: unlink, unregister, munmap, pkey_free"
        } else {
            "create a protection-key domain: pkey_alloc + mmap + pkey_mprotect (+ null constructor call, + stack, + sigaltstack link)"
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("variant", VARIANTS.iter().copied())
    }
    fn sampling(&self, _: &Params) -> super::SamplingOverride {
        // Eight rows of these: keep the family within its time.
        super::SamplingOverride { budget_factor: Some(0.5), ..Default::default() }
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_lifecycle(ctx, params, self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};

    #[test]
    fn every_domain_row_measures_and_passes_its_checks() {
        let _s = serial();
        if domain::available().is_err() {
            return;
        }
        with_ctx(0.02, |ctx| {
            let benches: [&dyn Benchmark; 7] =
                [&Call(Kind::F), &Call(Kind::T), &Call(Kind::Full), &Xfer, &Throw, &Lifecycle(false), &Lifecycle(true)];
            for b in benches {
                for p in b.variants(ctx) {
                    let m = b.run(ctx, &p).unwrap_or_else(|e| panic!("{} {p:?}: {e:?}", b.id()));
                    assert!(!m.samples.per_op_ns.is_empty(), "{} {p:?}", b.id());
                    for c in &m.checks {
                        assert_eq!(c.ok, Some(true), "{} {p:?}: {c:?}", b.id());
                    }
                }
            }
        });
    }
}
