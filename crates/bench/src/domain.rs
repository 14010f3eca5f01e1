//! Protection-domain calls in one address space: `domain.fcall`, `domain.tcall`,
//! `domain.call` (round trips), `domain.xfer` (one way, `via` = `key` | `table_hit` |
//! `table_miss`), `domain.throw` and `domain.fault` (`after` = `fcall` | `tcall` | `call`),
//! `domain.create` / `domain.destroy` (`variant` = `plain` | `null` | `stack` |
//! `linked_stack`), `domain.get_type`, `domain.sel2ref`. Seed: Go! component OS (seed 003),
//! Tables "Detailed ORB performance", "Exception latency", "Other ORB methods", "GDT miss".
//! The library is [`domain`].
//!
//! **Rights** (`rights` parameter on every row, [`domain::Rights`]): `pkey` switches PKRU
//! (`wrpkru`, no kernel); `mprotect` has the kernel switch them: the callee's region is
//! `PROT_NONE` outside calls, opened (`mprotect` read-write) on entry and closed again on the
//! way out. Where the CPU has protection keys both run (two records per benchmark); where it
//! has none only `mprotect`, and the record says so. `unchanged` (on `domain.fcall`,
//! `domain.tcall`, `domain.call`, `domain.xfer` with `via` = `key` | `table_hit`, and
//! `domain.throw`) runs the library's own path with the rights switch skipped
//! ([`Domain::hold_rights_open`]: the callee's region opened once for the visit, no
//! `mprotect` or PKRU write per call): the active record, the assembly entry, the stack switch
//! and argument frame as the kind has them, the table look-up. It is not Go!'s call (the
//! callee is not isolated from the caller) but shows beside the protected rows what each kind
//! costs apart from the switch, where the switch (two `mprotect` calls without keys) costs the
//! same for all kinds and hides their differences. Sampled on a quarter of the budget.
//!
//! **Timing models.**
//! - Round trips: `Ctx::iter` around one call: the argument set, the rights switch (and stack
//!   switch, and argument frame copy), the null method (writes its marker, observes its
//!   rights), the way back.
//! - `domain.xfer`: per transfer, the caller reads the clock, (looks the callee up in the key
//!   table: a hit, or — keys only — a miss that evicts the least recently used domain and
//!   re-tags two regions with `pkey_mprotect`), switches rights and stack and jumps; the
//!   callee's first statement reads the clock. The transfer back is not timed. In mprotect
//!   mode there is no `table_miss`: no hardware slots to run out of, every entry already
//!   re-protects (`table_hit` is that path); the row is skipped with that reason.
//! - `domain.throw`: the callee, after the call of its kind, reads the clock and raises (the
//!   library's `raise`: no signal, a jump to the caller's catch point with its rights and
//!   stack back); the caller then reads the clock. Cold (`cache=cold`): the disturbance runs
//!   inside the callee, after the call's untimed entry and right before the callee's stamp
//!   ([`domain::NullArgs::before_stamp`]), so the entry's rights switch, stack switch and
//!   method cannot warm again what the throw uses; its hot twin takes the same path.
//! - `domain.fault`: the same, but the callee touches another domain's memory: the fault
//!   (`SEGV_PKUERR`, `SEGV_ACCERR` in mprotect mode) goes through the kernel to the SIGSEGV
//!   dispatcher, the domain's owner jumps to the catch point, and SIGSEGV is unblocked.
//! - `domain.create` / `domain.destroy` (Go!'s definitions): `plain` = key (or nothing) +
//!   region + a call to the constructor (destroy: a call to the destructor, then teardown:
//!   unregister, munmap, pkey_free); `null` = the same without the call; `stack` = the stack
//!   object alone (mmap + guard page; destroy: munmap); `linked_stack` = the stack plus
//!   linking it to an existing domain (destroy: unlink, munmap). Batches of 8, each batch timed
//!   as a whole; the other half untimed. destroy(null) tears down domains made as for
//!   destroy(plain) (constructor called), so the two differ by the destructor call alone.
//! - `domain.get_type`, `domain.sel2ref`: `Ctx::iter` around one look-up, over 64 references
//!   to interfaces of 4 domains, in turn.
//! - Transfers, throws and batches are each a timed region of their own: the sampler subtracts
//!   one timer overhead per transfer, per throw and per batch ([`crate::sampler::Timed`]).
//!   An anchor domain stays alive all along (so the SIGSEGV handler stays installed and is
//!   not part of the figure).
//!
//! **Validation** (every call row): the callee ran in its domain (what it observed of its
//! rights: PKRU granting key 0 and its key only, or the base of the region the library opened
//! for it), the value it wrote is in its memory (read back from inside), it ran alone (from
//! inside, another domain's memory faults), the caller's rights are back (PKRU as before, or
//! the region `---p` in `/proc/self/maps` again), and an isolation probe (the caller reading
//! the callee's memory) faults with the mechanism's `si_code`; the library's own count of the
//! rights changes its call path made ([`domain::rights_changes`]) is two per call. A
//! `rights=unchanged` row instead checks that count is zero, that the callee ran in its
//! region and wrote there, that the region stayed `rw-p` through the calls, that another
//! domain's memory still faults from inside, and that it is `---p` again once closed. A cold
//! throw checks that every disturbance ran inside the callee (what the callee observed of its
//! rights there). Create/destroy also check that no key is left allocated and no mapping left
//! behind. The look-ups enter no domain: no rights switch, no system call.
//!
//! Every call goes through the library's safe calls of its own methods
//! ([`domain::library_calls`]).

use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use crate::sampler::Timed;
use domain::library_calls::{Known, Roaming};
use domain::table::{KeyTable, ObjRef};
use domain::{self, Domain, NullArgs, Outcome, Rights, Stack};
use std::io;

/// The rights switch a row asks for (`rights`), if it works here (also `space.domain`'s).
pub(crate) fn rights_of(p: &Params) -> Result<Rights, NotMeasured> {
    let how = p.get("rights").and_then(|v| v.as_str()).and_then(Rights::from_name).unwrap_or(Rights::Mprotect);
    how.available().map_err(|why| NotMeasured::Skipped(format!("no {}-switched domains here: {why}", how.name())))?;
    Ok(how)
}

/// `rights=unchanged`: the library's call path with the rights switch skipped.
pub const UNCHANGED: &str = "unchanged";

/// What a call row's `rights` parameter asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Rights switched by this mechanism (`rights=pkey` | `rights=mprotect`).
    Switched(Rights),
    /// `rights=unchanged`: a domain whose rights the kernel would switch, held open for the
    /// visit ([`Domain::hold_rights_open`]): the same path, no switch.
    Unchanged,
}

impl Mode {
    /// The mechanism its domains are made with.
    fn how(self) -> Rights {
        match self {
            Mode::Switched(how) => how,
            Mode::Unchanged => Rights::Mprotect,
        }
    }
}

/// [`rights_of`], with `rights=unchanged` too.
fn mode_of(p: &Params) -> Result<Mode, NotMeasured> {
    if p.get("rights").and_then(|v| v.as_str()) == Some(UNCHANGED) {
        Rights::Mprotect.available().map_err(|why| NotMeasured::Skipped(format!("no domains here: {why}")))?;
        return Ok(Mode::Unchanged);
    }
    rights_of(p).map(Mode::Switched)
}

/// Whether a row asks for `rights=unchanged`.
fn is_unchanged(p: &Params) -> bool {
    p.get("rights").and_then(|v| v.as_str()) == Some(UNCHANGED)
}

/// The sampling of a `rights=unchanged` row: a quarter of the budget (tens of ns, beside the
/// protected rows, whose figure is the row's).
fn unchanged_sampling(p: &Params) -> super::SamplingOverride {
    if is_unchanged(p) {
        super::SamplingOverride { budget_factor: Some(UNCHANGED_BUDGET), ..Default::default() }
    } else {
        super::SamplingOverride::default()
    }
}

/// Budget factor of a `rights=unchanged` row.
const UNCHANGED_BUDGET: f64 = 0.25;

/// Whether any domain works here.
fn skip_if_unavailable() -> Result<(), String> {
    if Rights::here().is_empty() {
        return Err(format!("no protection domains here: {}", Rights::Mprotect.available().err().unwrap_or_default()));
    }
    Ok(())
}

/// `base` once per rights switch that works here (`rights` = `pkey` | `mprotect`).
pub(crate) fn with_rights(base: Vec<Params>) -> Vec<Params> {
    Rights::here()
        .into_iter()
        .flat_map(|how| {
            base.iter().cloned().map(move |mut p| {
                p.insert("rights".into(), how.name().into());
                p
            })
        })
        .collect()
}

/// [`with_rights`], then `unchanged` for each of `unchanged` (the path without the switch).
fn with_rights_and_unchanged(base: Vec<Params>, unchanged: Vec<Params>) -> Vec<Params> {
    let mut v = with_rights(base);
    if Rights::Mprotect.available().is_ok() {
        v.extend(unchanged.into_iter().map(|mut p| {
            p.insert("rights".into(), UNCHANGED.into());
            p
        }));
    }
    v
}

/// Holds `d`'s rights open for a `rights=unchanged` row; nothing otherwise.
fn open_for(mode: Mode, d: &Domain) -> Result<(), NotMeasured> {
    match mode {
        Mode::Unchanged => d.hold_rights_open().map_err(failed("hold the domain's rights open (mprotect)")),
        Mode::Switched(_) => Ok(()),
    }
}

/// The note of a `rights=unchanged` row.
const UNCHANGED_NOTE: &str = "rights unchanged: the library's own call path (active record, assembly entry, stack \
    switch and argument frame as the kind has them, table look-up, bookkeeping of the region entered) with the rights \
    switch skipped: the callee's region held open (read-write) for the visit, no mprotect or PKRU write per call; \
    not isolated from the caller, so not Go!'s call: shown beside the protected rows, so that the kinds' differences \
    stay visible where the rights switch costs the same for all";

/// The checks of the rights switch's count ([`domain::rights_changes`], the library's own
/// account) over `calls` calls made with `changes` changes.
fn changes_check(mode: Mode, changes: u64, calls: u64) -> Check {
    match mode {
        Mode::Switched(how) => Check::new(
            format!(
                "two rights changes per call, {} (the library's count)",
                if how == Rights::Pkey { "PKRU in and out" } else { "mprotect open and close" }
            ),
            (2 * calls).to_string(),
            changes.to_string(),
            changes == 2 * calls && calls > 0,
        ),
        Mode::Unchanged => Check::new(
            "rights unchanged: no rights change in any call (the library's count: no mprotect, no PKRU write)",
            format!("0 in {calls} calls"),
            format!("{changes} in {calls} calls"),
            changes == 0 && calls > 0,
        ),
    }
}

/// The checks of a row: [`validate_beside`] for switched rights; for `rights=unchanged`,
/// that the callee ran in its region and wrote there, the region stayed open (read-write)
/// through the calls as `before` saw it, another domain's memory still faults from inside,
/// and closing it afterwards leaves it `---p`. Both with [`changes_check`]. Closes `d`'s
/// rights (and `others`', a table's) again.
fn validate_mode(
    mode: Mode,
    d: &Domain,
    other: Option<&Domain>,
    before: &str,
    seen: u64,
    written: Option<u64>,
    changes: (u64, u64),
) -> Vec<Check> {
    let Mode::Unchanged = mode else {
        let mut checks = validate_beside(d, other, before, seen, written);
        checks.push(changes_check(mode, changes.0, changes.1));
        return checks;
    };
    let mut checks = vec![
        changes_check(mode, changes.0, changes.1),
        Check::new(
            "the callee ran in its domain (the region entered is its own)",
            format!("{:#x}", d.inside()),
            format!("{seen:#x}"),
            seen == d.inside(),
        ),
    ];
    if let Some(v) = written {
        checks.push(written_check(d, v));
    }
    let after = d.caller_view();
    checks.push(Check::new(
        "the callee's region stayed open through the calls (rw-p in /proc/self/maps before and after)",
        before.to_string(),
        after.clone(),
        after == before && before.ends_with("rw-p"),
    ));
    let alone = Domain::new(Rights::Mprotect, false).map(|o| {
        let mut a = NullArgs::for_domain(d).touching(&o);
        (d.fcall_known(Known::Throwing, &mut a), o.marker() as usize)
    });
    checks.push(Check::new(
        "the callee still cannot reach another domain's memory: from inside, it faults (SEGV_ACCERR)",
        format!("fault, si_code {SEGV_ACCERR}"),
        format!("{alone:?}"),
        matches!(alone, Ok((Outcome::Thrown { addr, code }, other)) if addr == other && code == SEGV_ACCERR),
    ));
    let closed = d.close_rights().map(|()| d.caller_view());
    checks.push(Check::new(
        "closed again after the calls (the callee's region ---p, /proc/self/maps)",
        "region ---p",
        format!("{closed:?}"),
        matches!(&closed, Ok(v) if v == "region ---p"),
    ));
    checks
}

const SEGV_ACCERR: i32 = domain::SEGV_ACCERR;

/// Notes every row carries about its rights switch.
fn rights_notes(how: Rights) -> Vec<String> {
    let mut notes = vec![match how {
        Rights::Pkey => "rights switched by wrpkru (protection keys), no kernel on the call path".to_string(),
        Rights::Mprotect => {
            "rights switched by the kernel: the callee's region PROT_NONE outside calls, mprotect read-write on entry \
             and PROT_NONE on the way out (two system calls per call)"
                .to_string()
        }
    }];
    notes.extend(no_keys_note(how));
    notes
}

/// The notes of a call row: [`rights_notes`], or [`UNCHANGED_NOTE`].
fn mode_notes(mode: Mode) -> Vec<String> {
    match mode {
        Mode::Switched(how) => rights_notes(how),
        Mode::Unchanged => vec![UNCHANGED_NOTE.to_string()],
    }
}

/// The note of a row measured in mprotect mode because there are no keys here.
pub(crate) fn no_keys_note(how: Rights) -> Option<String> {
    (how == Rights::Mprotect && domain::available().is_err())
        .then(|| "no protection keys here, rights switched by the kernel".to_string())
}

fn failed(what: &str) -> impl FnOnce(io::Error) -> NotMeasured + '_ {
    move |e| NotMeasured::Failed(format!("{what}: {e}"))
}

/// The checks every domain row makes (see the module doc); `before` is
/// [`Domain::caller_view`] before the calls.
fn validate(d: &Domain, before: &str, seen: u64, written: Option<u64>) -> Vec<Check> {
    validate_beside(d, None, before, seen, written)
}

/// [`validate`], with `other` the domain whose memory the callee must not reach (else a new
/// one: a key table may hold every key there is).
fn validate_beside(d: &Domain, other: Option<&Domain>, before: &str, seen: u64, written: Option<u64>) -> Vec<Check> {
    let how = d.how();
    let mut checks = vec![Check::new(
        match how {
            Rights::Pkey => "the callee ran in its domain (PKRU it read grants key 0 and its key only)",
            Rights::Mprotect => "the callee ran in its domain (the region opened for it is its own)",
        },
        format!("{:#x}", d.inside()),
        format!("{seen:#x}"),
        seen == d.inside(),
    )];
    if let Some(v) = written {
        checks.push(written_check(d, v));
    }
    let code = how.fault_code();
    let code_name = if how == Rights::Pkey { "SEGV_PKUERR" } else { "SEGV_ACCERR" };
    let touch = |other: &Domain| {
        let mut a = NullArgs::for_domain(d).touching(other);
        (d.fcall_known(Known::Throwing, &mut a), other.marker() as usize)
    };
    let alone = match other {
        Some(o) => Ok(touch(o)),
        None => Domain::new(how, false).map(|o| touch(&o)),
    };
    checks.push(Check::new(
        format!("the callee ran alone: from inside, another domain's memory faults ({code_name})"),
        format!("fault, si_code {code}"),
        format!("{alone:?}"),
        matches!(alone, Ok((Outcome::Thrown { addr, code: c }, other)) if addr == other && c == code),
    ));
    let after = d.caller_view();
    checks.push(Check::new(
        match how {
            Rights::Pkey => "the caller's rights are back (PKRU as before the calls)",
            Rights::Mprotect => "the caller's rights are back (the callee's region ---p again, /proc/self/maps)",
        },
        before.to_string(),
        after.clone(),
        after == before && (how == Rights::Pkey || before.ends_with("---p")),
    ));
    if how == Rights::Mprotect {
        let vma = d.vma();
        checks.push(Check::new(
            "the callee's region is a VMA of its own (opening and closing it splits and merges none)",
            format!("{:x?}", d.data_range()),
            format!("{vma:x?}"),
            vma == Ok(d.data_range()),
        ));
    }
    let probe = domain::probe_read(how, d.marker() as usize);
    checks.push(Check::new(
        format!("isolation probe: the caller's read of the callee's memory faults ({code_name})"),
        format!("fault, si_code {code}"),
        match probe {
            Ok(v) => format!("read {v}"),
            Err(f) => format!("fault, si_code {}", f.code),
        },
        probe.is_err_and(|f| f.code == code),
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
            Kind::F => "null call into a protection domain: rights switch (wrpkru or mprotect) only, round trip",
            Kind::T => "null call into a protection domain: rights switch + private stack, round trip",
            Kind::Full => {
                "null call into a protection domain: rights + stack + argument frame copied in and result out, round trip"
            }
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    /// Go!'s worst case: one operation per sample right after the disturbance, beside its hot
    /// twin ([`crate::cold`]).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        with_rights_and_unchanged(vec![Params::new()], vec![Params::new()])
    }
    fn sampling(&self, params: &Params) -> super::SamplingOverride {
        unchanged_sampling(params)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let mode = mode_of(params)?;
        let d = Domain::new(mode.how(), self.0 != Kind::F).map_err(failed("create a domain"))?;
        open_for(mode, &d)?;
        let before = d.caller_view();
        let mut a = NullArgs::for_domain(&d);
        let mut i = 0u64;
        let mut bad = 0u64;
        let mut seen = 0u64;
        let changes0 = domain::rights_changes();
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
        let changes = domain::rights_changes() - changes0;
        let (seen, written) = match self.0 {
            Kind::Full => (seen, None),
            _ => (a.seen, Some(i)),
        };
        let mut checks = validate_mode(mode, &d, None, &before, seen, written, (changes, i));
        if self.0 == Kind::Full {
            checks.push(Check::all_ok("every call returned its argument + 1 (frame copied in and out)", bad, i));
        }
        let held = match mode {
            Mode::Unchanged => "held open (read-write) for the visit".to_string(),
            Mode::Switched(_) => {
                d.key().map_or("closed by mprotect".to_string(), |k| format!("under protection key {k}"))
            }
        };
        let mut m = Measured::new(samples, checks)
            .note(format!("{}: caller and callee in one address space, the callee's data {held}", self.0.name(),));
        m.notes.extend(mode_notes(mode));
        Ok(m)
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
        "one-way transfer into a protection domain (rights + stack switch, jump), issue to callee's first instruction"
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    /// Go!'s worst case: one operation per sample right after the disturbance, beside its hot
    /// twin ([`crate::cold`]).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        // Without the switch, no miss: a miss is the re-tagging of rights.
        with_rights_and_unchanged(
            super::one_param("via", ["key", "table_hit", "table_miss"]),
            super::one_param("via", ["key", "table_hit"]),
        )
    }
    fn sampling(&self, params: &Params) -> super::SamplingOverride {
        unchanged_sampling(params)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let mode = mode_of(params)?;
        let how = mode.how();
        let via = match params.get("via").and_then(|v| v.as_str()) {
            Some("table_hit") => Via::TableHit,
            Some("table_miss") => Via::TableMiss,
            _ => Via::Key,
        };
        if via == Via::TableMiss && mode == Mode::Unchanged {
            return Err(NotMeasured::Skipped(
                "table_miss needs the rights switch: a miss re-tags the callee's pages with a key".into(),
            ));
        }
        if via == Via::TableMiss && how == Rights::Mprotect {
            return Err(NotMeasured::Skipped(
                "table_miss is keys only: with rights switched by mprotect there are no hardware slots to run out of \
                 (every domain is closed unless called, and every entry already re-protects its region: the \
                 table_hit row is that path)"
                    .into(),
            ));
        }
        let timer = ctx.timer;
        let mut bad = 0u64;
        let mut n_total = 0u64;
        let (samples, checks, notes) = if via == Via::Key {
            let d = Domain::new(how, true).map_err(failed("create a domain"))?;
            open_for(mode, &d)?;
            let before = d.caller_view();
            let changes0 = domain::rights_changes();
            let target = d.xfer_target().map_err(failed("the domain's stack"))?;
            let mut a = NullArgs::for_domain(&d);
            a.timer = Some(timer);
            let mut one = |a: &mut NullArgs| {
                n_total += 1;
                a.value = n_total;
                let t0 = timer.start();
                let out = target.xfer_stamped(a);
                bad += u64::from(out != Outcome::Xferred);
                a.stamp.wrapping_sub(t0)
            };
            let samples = if ctx.cold().is_some() {
                ctx.iter_cold(|b| {
                    b.now();
                    Some(Timed::one(one(&mut a)))
                })
            } else {
                ctx.iter_regions(|n| {
                    let ticks = (0..n).fold(0u64, |t, _| t.wrapping_add(one(&mut a)));
                    // Each transfer is a timed region of its own.
                    Timed::regions(ticks, n)
                })
            };
            let changes = domain::rights_changes() - changes0;
            let mut checks = validate_mode(mode, &d, None, &before, a.seen, Some(n_total), (changes, n_total));
            checks.push(Check::all_ok("every transfer came back by transfer", bad, n_total));
            let named = d.key().map_or("callee's region in hand".to_string(), |k| format!("callee key {k} in hand"));
            (samples, checks, vec![named])
        } else {
            let domains = if via == Via::TableHit { 2 } else { MISS_DOMAINS };
            let mut t = KeyTable::new(how, domains, 15).map_err(failed("key table"))?;
            for i in 0..domains {
                open_for(mode, t.domain(i))?;
            }
            let before = t.domain(0).caller_view();
            let changes0 = domain::rights_changes();
            let mut a = Roaming::new(Some(timer));
            let mut obj = 0usize;
            let mut errors = 0u64;
            let mut one = |b: Option<&crate::cold::Before>| {
                n_total += 1;
                obj = (obj + 1) % domains;
                if let Some(b) = b {
                    b.now();
                }
                let t0 = timer.start();
                let Ok(out) = t.xfer_stamped(obj, &mut a, n_total) else {
                    errors += 1;
                    return None;
                };
                bad += u64::from(out != Outcome::Xferred);
                Some(a.stamp().wrapping_sub(t0))
            };
            let samples = if ctx.cold().is_some() {
                ctx.iter_cold(|b| one(Some(b)).map(Timed::one))
            } else {
                ctx.iter_regions(|n| {
                    let (mut ticks, mut regions) = (0u64, 0u64);
                    for _ in 0..n {
                        if let Some(dt) = one(None) {
                            ticks = ticks.wrapping_add(dt);
                            regions += 1;
                        }
                    }
                    // Each transfer is a timed region of its own (a failed look-up adds none).
                    Timed::regions(ticks, regions)
                })
            };
            let changes = domain::rights_changes() - changes0;
            let d = t.domain(obj);
            // With keys the caller's PKRU is one for all; in mprotect mode compare this
            // domain's region (closed) with domain 0's before. The table may hold every key:
            // the other domain is the table's next one (held open too without the switch: a
            // fresh one then).
            let other = (mode != Mode::Unchanged).then(|| t.domain((obj + 1) % domains));
            let calls = n_total - errors;
            let mut checks = validate_mode(mode, d, other, &before, a.seen(), Some(n_total), (changes, calls));
            for i in 0..domains {
                if let Err(e) = t.domain(i).close_rights() {
                    checks.push(Check::new("the table's domains closed again", "closed", e.to_string(), false));
                }
            }
            checks.push(Check::all_ok("every transfer came back by transfer", bad, n_total));
            checks.push(Check::all_ok("every table look-up succeeded", errors, n_total));
            let misses = t.misses();
            let (name, ok) = if via == Via::TableHit {
                ("the look-ups hit (after the first of each domain)", misses <= domains as u64)
            } else {
                ("every look-up missed (more domains than keys, used round robin)", misses == n_total)
            };
            checks.push(Check::new(name, format!("{n_total} look-ups"), format!("{misses} misses"), ok));
            let shared = match mode {
                Mode::Switched(Rights::Pkey) => format!("{domains} domains share {} hardware keys", t.keys()),
                Mode::Switched(Rights::Mprotect) => {
                    format!("{domains} domains in the table, no keys (every entry opens its region)")
                }
                Mode::Unchanged => format!("{domains} domains in the table, each held open for the visit"),
            };
            (samples, checks, vec![shared])
        };
        let mut m = Measured::new(samples, checks);
        m.notes = notes;
        m.notes.push("one way; the callee comes back through a fresh transfer, not timed".into());
        m.notes.extend(mode_notes(mode));
        Ok(m)
    }
}

/// `domain.throw` (`Throw(false)`: the callee's raise) and `domain.fault` (`Throw(true)`: a
/// protection fault delivered as SIGSEGV), back to the caller's catch point.
pub struct Throw(pub bool);

impl Benchmark for Throw {
    fn id(&self) -> &'static str {
        if self.0 { "domain.fault" } else { "domain.throw" }
    }
    fn about(&self) -> &'static str {
        if self.0 {
            "callee touches another domain's memory (SEGV_PKUERR / SEGV_ACCERR) -> kernel -> SIGSEGV handler -> caller \
             resumed at its catch point"
        } else {
            "callee raises (the domain library's raise, no signal) -> caller resumed at its catch point"
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    /// Go!'s worst case: one operation per sample, disturbed inside the callee right before
    /// its stamp, beside its hot twin ([`crate::cold`]).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        let after = || super::one_param("after", ["fcall", "tcall", "call"]);
        // The raise without the rights switch; a protection fault needs it.
        if self.0 { with_rights(after()) } else { with_rights_and_unchanged(after(), after()) }
    }
    fn sampling(&self, params: &Params) -> super::SamplingOverride {
        unchanged_sampling(params)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let mode = mode_of(params)?;
        let how = mode.how();
        let fault = self.0;
        if fault && mode == Mode::Unchanged {
            return Err(NotMeasured::Skipped(
                "a protection fault needs the rights switch: domain.fault has no rights=unchanged".into(),
            ));
        }
        let kind = Kind::from_param(params, "after");
        let d = Domain::new(how, true).map_err(failed("create a domain"))?;
        let other = Domain::new(how, false).map_err(failed("create a second domain"))?;
        open_for(mode, &d)?;
        let before = d.caller_view();
        let timer = ctx.timer;
        let args = || {
            let mut a = if fault { NullArgs::for_domain(&d).touching(&other) } else { NullArgs::for_domain(&d) };
            a.timer = Some(timer);
            a
        };
        let mut a = args();
        let (mut bad, mut total, mut mask_bad, mut seen) = (0u64, 0u64, 0u64, 0u64);
        let expected = if fault {
            Outcome::Thrown { addr: other.marker() as usize, code: how.fault_code() }
        } else {
            Outcome::Raised
        };
        // One call that throws; the ticks from the callee's stamp to the caller's, resumed.
        let mut one = |a: &mut NullArgs<'_>| {
            total += 1;
            a.value = total;
            let out = match kind {
                Kind::F => d.fcall_known(Known::Throwing, a),
                Kind::T => d.tcall_known(Known::Throwing, a).unwrap_or(Outcome::Returned),
                Kind::Full => d.call_throwing(a).map_or(Outcome::Returned, |r| r.0),
            };
            let t1 = timer.stop();
            bad += u64::from(out != expected);
            seen = a.seen;
            t1.wrapping_sub(a.stamp)
        };
        let cold = ctx.cold().is_some();
        // Cold: where the callee stood when the disturbance ran (what it observed of its
        // rights there), per sample and twin; those not inside the callee.
        let (mut disturbed, mut misplaced) = (0u64, 0u64);
        let changes0 = domain::rights_changes();
        let samples = if cold {
            // One throw per sample. The disturbance runs inside the callee, after the call's
            // untimed entry (its rights switch, stack switch and method would warm again what
            // the throw uses) and right before the callee's stamp.
            ctx.iter_cold(|b| {
                let at = std::cell::Cell::new(None);
                let hook = || {
                    b.now();
                    at.set(Some(domain::observe()));
                };
                let mut a = args().before_stamp(&hook);
                let t = one(&mut a);
                disturbed += 1;
                misplaced += u64::from(at.get() != Some(d.inside()));
                if sigsegv_blocked() {
                    mask_bad += 1;
                }
                Some(Timed::one(t))
            })
        } else {
            ctx.iter_regions(|n| {
                let mut ticks = 0u64;
                for _ in 0..n {
                    ticks = ticks.wrapping_add(one(&mut a));
                }
                if sigsegv_blocked() {
                    mask_bad += 1;
                }
                // Each throw is a timed region of its own.
                Timed::regions(ticks, n)
            })
        };
        let changes = domain::rights_changes() - changes0;
        let mut checks = validate_mode(mode, &d, None, &before, seen, Some(total), (changes, total));
        let what = if fault {
            format!(
                "every call faulted (si_code {}) at the other domain's address and resumed the caller",
                how.fault_code()
            )
        } else {
            "every call raised and resumed the caller at its catch point".to_string()
        };
        checks.push(Check::all_ok(what, bad, total));
        checks.push(Check::all_ok("SIGSEGV not blocked after the throws", mask_bad, 1));
        if cold {
            checks.push(Check::all_ok(
                "each sample (cold, and its hot twin alike) disturbed inside the callee, after the untimed entry \
                 and right before its stamp (the callee's rights in force there)",
                misplaced,
                disturbed,
            ));
        }
        let path = if fault {
            "fault -> kernel -> SIGSEGV dispatcher -> jump to the catch point -> SIGSEGV unblocked (pthread_sigmask)"
        } else if mode == Mode::Unchanged {
            "raise -> jump to the catch point (no signal, no kernel)"
        } else {
            "raise -> jump to the catch point (no signal, no kernel but the mprotect closing the region in mprotect mode)"
        };
        let mut m = Measured::new(samples, checks).note(format!("after {}: {path}", kind.name()));
        if cold {
            m.notes.push(
                "cold: disturbed inside the callee after the call's untimed entry, right before the callee's stamp"
                    .into(),
            );
        }
        m.notes.extend(mode_notes(mode));
        Ok(m)
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

/// A created object: a domain, an unlinked stack, or a stack linked to the anchor.
enum Made {
    Domain(Domain),
    Stack(Stack),
    Linked,
}

/// Creates one object of `v` (see the module doc).
#[inline(always)]
fn create(how: Rights, v: Variant, anchor: &mut Domain, ctor: &mut Roaming) -> io::Result<Made> {
    match v {
        Variant::Plain | Variant::Null => {
            let d = Domain::new(how, false)?;
            if v == Variant::Plain {
                let out = d.construct(ctor);
                if out != Outcome::Returned {
                    return Err(io::Error::other(format!("the constructor did not return: {out:?}")));
                }
            }
            Ok(Made::Domain(d))
        }
        Variant::Stack => Ok(Made::Stack(Stack::new()?)),
        Variant::LinkedStack => {
            anchor.link_stack(Stack::new()?);
            Ok(Made::Linked)
        }
    }
}

/// Destroys one object of `v`; `plain` calls the destructor first.
#[inline(always)]
fn destroy(v: Variant, m: Made, anchor: &mut Domain, dtor: &mut Roaming) -> io::Result<()> {
    match m {
        Made::Domain(d) => {
            if v == Variant::Plain {
                let out = d.destruct(dtor);
                if out != Outcome::Returned {
                    return Err(io::Error::other(format!("the destructor did not return: {out:?}")));
                }
            }
            drop(d);
        }
        Made::Stack(s) => drop(s),
        Made::Linked => drop(anchor.unlink_stack().ok_or_else(|| io::Error::other("no linked stack"))?),
    }
    Ok(())
}

/// Domains per timed batch (keys are few: 15 per process).
const BATCH: u64 = 8;

/// Keys that can be allocated now (allocated and freed again); 0 without keys.
fn free_keys() -> usize {
    if domain::available().is_err() {
        return 0;
    }
    let mut keys = Vec::new();
    while let Ok(k) = domain::Pkey::alloc() {
        keys.push(k);
    }
    keys.len()
}

/// `domain.create` (`destroy` false) or `domain.destroy`.
fn run_lifecycle(ctx: &mut Ctx, params: &Params, destroying: bool) -> Result<Measured, NotMeasured> {
    let how = rights_of(params)?;
    let v = variant_of(params);
    let keys_before = free_keys();
    let mut anchor = Domain::new(how, true).map_err(failed("create the anchor domain"))?;
    let before = anchor.caller_view();
    let mut ctor = Roaming::new(None);
    let mut error: Option<String> = None;
    let mut made: Vec<Made> = Vec::with_capacity(BATCH as usize);
    let timer = ctx.timer;
    // destroy(null) tears down the same domains as destroy(plain), constructed (untimed): the
    // two differ by the destructor call alone, not by a page the constructor touched.
    let made_as = if destroying && v == Variant::Null { Variant::Plain } else { v };
    // Cold (Go!'s worst case): one object per sample, timed alone right after the disturbance,
    // its other half untimed; its hot twin the same, right after.
    let cold = ctx.cold().is_some();
    let samples = if cold {
        ctx.iter_cold(|b| {
            let made_one = if destroying {
                match create(how, made_as, &mut anchor, &mut ctor) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        error = Some(format!("create: {e}"));
                        return None;
                    }
                }
            } else {
                None
            };
            b.now();
            let t0 = timer.start();
            let m = match made_one {
                Some(m) => {
                    if let Err(e) = destroy(v, m, &mut anchor, &mut ctor) {
                        error = Some(format!("destroy: {e}"));
                        return None;
                    }
                    None
                }
                None => match create(how, made_as, &mut anchor, &mut ctor) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        error = Some(format!("create: {e}"));
                        return None;
                    }
                },
            };
            let t1 = timer.stop();
            if let Some(m) = m
                && let Err(e) = destroy(v, m, &mut anchor, &mut ctor)
            {
                error = Some(format!("destroy: {e}"));
                return None;
            }
            Some(Timed::one(t1.wrapping_sub(t0)))
        })
    } else {
        ctx.iter_regions_fallible(|n| {
            let (mut ticks, mut regions) = (0u64, 0u64);
            let mut left = n;
            while left > 0 {
                let k = left.min(BATCH);
                left -= k;
                regions += 1;
                let t0 = if destroying { 0 } else { timer.start() };
                for _ in 0..k {
                    match create(how, made_as, &mut anchor, &mut ctor) {
                        Ok(m) => made.push(m),
                        Err(e) => {
                            error = Some(format!("create: {e}"));
                            return None;
                        }
                    }
                }
                let t1 = if destroying { timer.start() } else { timer.stop() };
                while let Some(m) = made.pop() {
                    if let Err(e) = destroy(v, m, &mut anchor, &mut ctor) {
                        error = Some(format!("destroy: {e}"));
                        return None;
                    }
                }
                let t2 = if destroying { timer.stop() } else { 0 };
                ticks = ticks.wrapping_add(if destroying { t2.wrapping_sub(t1) } else { t1.wrapping_sub(t0) });
            }
            // Each batch is a timed region of its own.
            Some(Timed::regions(ticks, regions))
        })
    };
    while let Some(m) = made.pop() {
        let _ = destroy(v, m, &mut anchor, &mut ctor);
    }
    if let Some(e) = error {
        return Err(NotMeasured::Failed(e));
    }
    // One of each kind more, validated.
    let mut checks = Vec::new();
    match v {
        Variant::Plain | Variant::Null => {
            // Its constructor ran in it (plain's call; null has none, so make the call here).
            ctor.set_value(77);
            let d = Domain::new(how, false).map_err(failed("create a domain"))?;
            let out = d.construct(&mut ctor);
            checks.push(Check::new(
                "the constructor returned",
                "Returned",
                format!("{out:?}"),
                out == Outcome::Returned,
            ));
            checks.extend(validate(&d, &before, ctor.seen(), Some(77)));
        }
        Variant::Stack | Variant::LinkedStack => {
            let s = Stack::new().map_err(failed("mmap a stack"))?;
            let guard = s.range().start - sys::fault::page_size();
            let perms = domain::maps_perms(guard).unwrap_or_else(|e| e.to_string());
            checks.push(Check::new("the stack's guard page is PROT_NONE", "---p", perms.clone(), perms == "---p"));
            anchor.link_stack(s);
            let mut a = NullArgs::for_domain(&anchor);
            a.value = 78;
            let out = anchor.tcall_known(Known::Null, &mut a).unwrap_or(Outcome::Raised);
            checks.push(Check::new(
                "a t-call runs on the linked stack",
                "Returned",
                format!("{out:?}"),
                out == Outcome::Returned,
            ));
            let seen = a.seen;
            checks.extend(validate(&anchor, &before, seen, Some(78)));
            drop(anchor.unlink_stack());
            let stacks = anchor.stacks();
            checks.push(Check::new(
                "every linked stack was unlinked again (the anchor's stacks as before)",
                "1",
                stacks.to_string(),
                stacks == 1,
            ));
        }
    }
    // One more of the variant, made and destroyed by the timed functions: its pages are gone.
    let made = create(how, v, &mut anchor, &mut ctor).map_err(failed("create"))?;
    let pages: Vec<usize> = match &made {
        Made::Domain(d) => {
            let r = d.data_range();
            vec![r.start - sys::fault::page_size(), r.start, r.end]
        }
        Made::Stack(s) => vec![s.range().start, s.range().start - sys::fault::page_size()],
        Made::Linked => anchor.stack().map(|s| vec![s.range().start]).unwrap_or_default(),
    };
    destroy(v, made, &mut anchor, &mut ctor).map_err(failed("destroy"))?;
    let left: Vec<String> =
        pages.iter().filter(|&&p| domain::maps_perms(p).is_ok()).map(|p| format!("{p:#x}")).collect();
    checks.push(Check::new(
        "destroy leaves nothing mapped (the object's pages gone from /proc/self/maps)",
        "none left",
        if left.is_empty() { "none left".to_string() } else { left.join(", ") },
        left.is_empty() && !pages.is_empty(),
    ));
    drop(anchor);
    if how == Rights::Pkey {
        let keys_after = free_keys();
        checks.push(Check::new(
            "no key left allocated (keys free before = after)",
            keys_before.to_string(),
            keys_after.to_string(),
            keys_before == keys_after,
        ));
    }
    let what = match (v, destroying) {
        (Variant::Plain, false) => "domain (key + region) and a call to its constructor",
        (Variant::Plain, true) => "a call to the destructor, then teardown (unregister, munmap, key freed)",
        (Variant::Null, false) => "domain (key + region), no call",
        (Variant::Null, true) => {
            "teardown alone (unregister, munmap, key freed), no call; of domains made as for destroy(plain) (constructor \
             called, untimed)"
        }
        (Variant::Stack, false) => "the stack object alone: mmap 16 pages + a PROT_NONE guard page",
        (Variant::Stack, true) => "the stack object alone: munmap",
        (Variant::LinkedStack, false) => "the stack object, linked to an existing domain (t-calls run on it)",
        (Variant::LinkedStack, true) => "unlink from the domain, munmap",
    };
    let timing =
        if cold { "one per sample, timed alone".to_string() } else { format!("batches of {BATCH} timed as a whole") };
    let mut m = Measured::new(samples, checks).note(format!(
        "{}: {what}; {timing}, the {} untimed",
        VARIANTS[v as usize],
        if destroying { "creation" } else { "destruction" }
    ));
    m.notes.extend(rights_notes(how));
    Ok(m)
}

/// `domain.create` (`Lifecycle(false)`) or `domain.destroy` (`Lifecycle(true)`), timed apart.
pub struct Lifecycle(pub bool);

impl Benchmark for Lifecycle {
    fn id(&self) -> &'static str {
        if self.0 { "domain.destroy" } else { "domain.create" }
    }
    fn about(&self) -> &'static str {
        if self.0 {
            "destroy a protection domain (plain: destructor call + teardown; null: teardown) or a stack (unlinked / linked)"
        } else {
            "create a protection domain (plain: + constructor call; null: without) or a stack alone (unlinked / linked)"
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    /// Go!'s worst case: one operation per sample right after the disturbance, beside its hot
    /// twin ([`crate::cold`]).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        with_rights(super::one_param("variant", VARIANTS.iter().copied()))
    }
    fn sampling(&self, _: &Params) -> super::SamplingOverride {
        // Many rows of these: keep the family within its time.
        super::SamplingOverride { budget_factor: Some(0.5), ..Default::default() }
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        run_lifecycle(ctx, params, self.0)
    }
}

/// The note of a look-up row: a table read, no call into a domain, so no rights switch and no
/// system call, whatever the table's domains switch when entered.
fn lookup_note(how: Rights) -> String {
    let table = match how {
        Rights::Pkey => "the table's domains are keyed (wrpkru when entered)",
        Rights::Mprotect if domain::available().is_err() => {
            "no protection keys here: the table's domains are entered by mprotect"
        }
        Rights::Mprotect => "the table's domains are entered by mprotect",
    };
    format!("a look-up enters no domain: no rights switch, no system call ({table}, which a look-up does not do)")
}

/// Domains and interfaces of the look-up rows.
const LOOKUP_DOMAINS: usize = 4;
const LOOKUP_REFS: usize = 64;

/// A table of [`LOOKUP_DOMAINS`] domains with [`LOOKUP_REFS`] interfaces spread over them,
/// type `100 + i`, domain `i % LOOKUP_DOMAINS`; one domain resolved (holding a key).
fn lookup_table(how: Rights) -> Result<(KeyTable, Vec<ObjRef>), NotMeasured> {
    let mut t = KeyTable::new(how, LOOKUP_DOMAINS, 15).map_err(failed("key table"))?;
    let refs = (0..LOOKUP_REFS)
        .map(|i| t.add_interface(i % LOOKUP_DOMAINS, 100 + i as u32))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| NotMeasured::Failed("add an interface".into()))?;
    t.resolve(1).map_err(failed("resolve"))?;
    Ok((t, refs))
}

/// `domain.get_type` (`Lookup(false)`: reference → interface type) and `domain.sel2ref`
/// (`Lookup(true)`: reference → the domain and key).
pub struct Lookup(pub bool);

impl Benchmark for Lookup {
    fn id(&self) -> &'static str {
        if self.0 { "domain.sel2ref" } else { "domain.get_type" }
    }
    fn about(&self) -> &'static str {
        if self.0 {
            "the domain library's reference -> key look-up (key table: the interface's domain and the key it holds)"
        } else {
            "a type query on an object reference (the domain library's ObjRef -> interface type)"
        }
    }
    fn available(&self) -> Result<(), String> {
        skip_if_unavailable()
    }
    /// Go!'s worst case: one operation per sample right after the disturbance, beside its hot
    /// twin ([`crate::cold`]).
    fn cold_mode(&self) -> Result<(), &'static str> {
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        with_rights(vec![Params::new()])
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        let how = rights_of(params)?;
        let (t, refs) = lookup_table(how)?;
        let (mut i, mut bad, mut total) = (0usize, 0u64, 0u64);
        let samples = if self.0 {
            // The key each domain holds now (only domain 1 was resolved; with keys it holds one).
            let keys: Vec<Option<u32>> =
                (0..LOOKUP_DOMAINS).map(|d| t.domain(d).key().filter(|_| how == Rights::Pkey && d == 1)).collect();
            ctx.iter(|| {
                total += 1;
                i = (i + 1) % LOOKUP_REFS;
                let b = t.sel2ref(refs[i]);
                let want = i % LOOKUP_DOMAINS;
                bad += u64::from(b.is_none_or(|b| b.domain != want || b.key != keys[want]));
            })
        } else {
            ctx.iter(|| {
                total += 1;
                i = (i + 1) % LOOKUP_REFS;
                bad += u64::from(t.get_type(refs[i]) != Some(100 + i as u32));
            })
        };
        let what = if self.0 {
            "every look-up named the interface's domain and the key it holds (none when parked or without keys)"
        } else {
            "every query answered the interface's type"
        };
        let checks = vec![Check::all_ok(what, bad, total.max(1))];
        let mut m = Measured::new(samples, checks).note(format!(
            "{LOOKUP_REFS} references to interfaces of {LOOKUP_DOMAINS} domains, in turn; a bounds-checked table read{}",
            if self.0 { " and the domain's key slot" } else { "" }
        ));
        m.notes.push(lookup_note(how));
        Ok(m)
    }
}

/// The value the callee wrote is in its memory: read back from inside the domain.
fn written_check(d: &Domain, v: u64) -> Check {
    let mut a = NullArgs::for_domain(d);
    let out = d.fcall_known(Known::ReadMarker, &mut a);
    Check::new(
        "the value the callee wrote is in its memory (read back from inside)",
        v.to_string(),
        format!("{} ({out:?})", a.value),
        a.value == v && out == Outcome::Returned,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{serial, with_ctx};

    #[test]
    fn every_domain_row_measures_and_passes_its_checks() {
        let _s = serial();
        if skip_if_unavailable().is_err() {
            return;
        }
        with_ctx(0.02, |ctx| {
            let benches: [&dyn Benchmark; 10] = [
                &Call(Kind::F),
                &Call(Kind::T),
                &Call(Kind::Full),
                &Xfer,
                &Throw(false),
                &Throw(true),
                &Lifecycle(false),
                &Lifecycle(true),
                &Lookup(false),
                &Lookup(true),
            ];
            for b in benches {
                let variants = b.variants(ctx);
                assert!(variants.iter().all(|p| p.contains_key("rights")), "{}", b.id());
                for p in variants {
                    let m = match b.run(ctx, &p) {
                        Ok(m) => m,
                        Err(NotMeasured::Skipped(why)) => {
                            assert_eq!(
                                (b.id(), p.get("via").and_then(|v| v.as_str())),
                                ("domain.xfer", Some("table_miss"))
                            );
                            assert!(why.contains("keys only"), "{why}");
                            continue;
                        }
                        Err(e) => panic!("{} {p:?}: {e:?}", b.id()),
                    };
                    assert!(!m.samples.per_op_ns.is_empty(), "{} {p:?}", b.id());
                    for c in &m.checks {
                        assert_eq!(c.ok, Some(true), "{} {p:?}: {c:?}", b.id());
                    }
                    let lookup = b.id().ends_with("get_type") || b.id().ends_with("sel2ref");
                    if domain::available().is_err() && !is_unchanged(&p) && !lookup {
                        assert!(m.notes.iter().any(|n| n == "no protection keys here, rights switched by the kernel"));
                    }
                }
            }
        });
    }

    /// The rows that have a `rights=unchanged` variant, with the parameters of each.
    fn unchanged_rows(ctx: &Ctx) -> Vec<(&'static dyn Benchmark, Params)> {
        let benches: [&'static dyn Benchmark; 6] =
            [&Call(Kind::F), &Call(Kind::T), &Call(Kind::Full), &Xfer, &Throw(false), &Throw(true)];
        benches
            .into_iter()
            .flat_map(|b| b.variants(ctx).into_iter().filter(is_unchanged).map(move |p| (b, p)))
            .collect()
    }

    #[test]
    fn every_call_kind_has_a_rights_unchanged_row_that_switches_nothing() {
        let _s = serial();
        if skip_if_unavailable().is_err() {
            return;
        }
        with_ctx(0.02, |ctx| {
            let rows = unchanged_rows(ctx);
            let named: Vec<String> = rows
                .iter()
                .map(|(b, p)| {
                    let extra = p
                        .iter()
                        .filter(|(k, _)| *k != "rights")
                        .map(|(k, v)| format!(" {k}={}", v.as_str().unwrap_or("")));
                    format!("{}{}", b.id(), extra.collect::<String>())
                })
                .collect();
            assert_eq!(
                named,
                [
                    "domain.fcall",
                    "domain.tcall",
                    "domain.call",
                    "domain.xfer via=key",
                    "domain.xfer via=table_hit",
                    "domain.throw after=fcall",
                    "domain.throw after=tcall",
                    "domain.throw after=call",
                ]
            );
            for (b, p) in rows {
                assert_eq!(b.sampling(&p).budget_factor, Some(UNCHANGED_BUDGET), "a small budget: {}", b.id());
                let m = crate::testing::visit(ctx, b, &p).unwrap_or_else(|e| panic!("{} {p:?}: {e:?}", b.id()));
                assert!(!m.samples.per_op_ns.is_empty(), "{} {p:?}", b.id());
                for c in &m.checks {
                    assert_eq!(c.ok, Some(true), "{} {p:?}: {c:?}", b.id());
                }
                // The library's own count says no rights changed; the region stayed open.
                let count = m.checks.iter().find(|c| c.name.starts_with("rights unchanged: no rights change"));
                assert!(count.is_some_and(|c| c.observed.starts_with("0 in ")), "{} {p:?}: {:?}", b.id(), m.checks);
                assert!(m.checks.iter().any(|c| c.name.starts_with("the callee's region stayed open")));
                assert!(m.notes.iter().any(|n| n == UNCHANGED_NOTE), "{:?}", m.notes);
                assert!(!m.notes.iter().any(|n| n.contains("two system calls")), "{:?}", m.notes);
            }
            // The switched rows count their two changes per call.
            let m = Call(Kind::F).run(ctx, &with_rights(vec![Params::new()])[0]).expect("measured");
            let count = m.checks.iter().find(|c| c.name.starts_with("two rights changes per call"));
            assert!(count.is_some_and(|c| c.ok == Some(true) && c.observed != "0"), "{:?}", m.checks);
        });
    }

    #[test]
    fn a_rights_unchanged_row_fails_its_check_if_the_rights_were_switched() {
        let c = changes_check(Mode::Unchanged, 2, 1);
        assert_eq!(c.ok, Some(false));
        assert_eq!(changes_check(Mode::Unchanged, 0, 5).ok, Some(true));
        assert_eq!(changes_check(Mode::Switched(Rights::Mprotect), 10, 5).ok, Some(true));
        assert_eq!(changes_check(Mode::Switched(Rights::Mprotect), 0, 5).ok, Some(false));
    }

    #[test]
    fn look_ups_say_they_make_no_system_call() {
        let _s = serial();
        if skip_if_unavailable().is_err() {
            return;
        }
        with_ctx(0.01, |ctx| {
            for b in [&Lookup(false) as &dyn Benchmark, &Lookup(true)] {
                for p in b.variants(ctx) {
                    let m = b.run(ctx, &p).expect("measured");
                    assert!(!m.notes.iter().any(|n| n.contains("system calls per call")), "{}: {:?}", b.id(), m.notes);
                    assert!(m.notes.iter().any(|n| n.contains("no rights switch, no system call")), "{:?}", m.notes);
                }
            }
        });
    }

    #[test]
    fn a_cold_throw_is_disturbed_inside_the_callee_after_the_untimed_entry() {
        let _s = serial();
        if skip_if_unavailable().is_err() {
            return;
        }
        with_ctx(0.01, |ctx| {
            ctx.set_cold(true).expect("the stream buffer");
            for (b, after, rights) in [
                (&Throw(false), "tcall", "mprotect"),
                (&Throw(false), "call", UNCHANGED),
                (&Throw(true), "fcall", "mprotect"),
            ] {
                let p = Params::from([
                    ("after".to_string(), serde_json::Value::from(after)),
                    ("rights".to_string(), serde_json::Value::from(rights)),
                    ("cache".to_string(), serde_json::Value::from("cold")),
                ]);
                let m = crate::testing::visit(ctx, b, &p).unwrap_or_else(|e| panic!("{p:?}: {e:?}"));
                assert!(!m.samples.per_op_ns.is_empty() && m.samples.per_op_ns.len() == m.samples.hot_twin_ns.len());
                let inside = m.checks.iter().find(|c| c.name.contains("disturbed inside the callee"));
                let inside = inside.unwrap_or_else(|| panic!("{p:?}: {:?}", m.checks));
                assert_eq!(inside.ok, Some(true), "{inside:?}");
                assert!(!inside.expected.ends_with(" in 0"), "some samples were taken: {inside:?}");
                for c in &m.checks {
                    assert_eq!(c.ok, Some(true), "{p:?}: {c:?}");
                }
            }
            ctx.set_cold(false).unwrap();
        });
    }
}
