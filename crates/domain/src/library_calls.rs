//! Safe calls into a domain of the library's own methods ([`Known`]), whose contract the
//! library keeps: they hold nothing needing drop where they may fault, raise or transfer back,
//! never unwind, and touch only the addresses in their [`NullArgs`], which come from live
//! domains (the lifetime) or, for [`Roaming`], are set by the call itself to the domain
//! entered. Each is the `unsafe` call it wraps and nothing more (`#[inline(always)]`: they sit
//! in timed regions).

use super::table::KeyTable;
use super::{
    Domain, FRAME_WORDS, Gate, Method, NullArgs, Outcome, null_method, read_marker, stamp_and_xfer_back,
    throwing_method, xfer_with,
};
use std::io;

/// A method of this library that safe code may run in a domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    /// [`null_method`]: writes `value` to the marker, observes its rights.
    Null,
    /// [`read_marker`]: reads the marker into `value`, observes its rights.
    ReadMarker,
    /// [`throwing_method`]: as `Null`, stamps, then touches (faults) or raises.
    Throwing,
    /// [`stamp_and_xfer_back`]: stamps, as `Null`, transfers back.
    StampAndXferBack,
}

impl Known {
    #[inline(always)]
    fn method(self) -> Method {
        match self {
            Known::Null => null_method,
            Known::ReadMarker => read_marker,
            Known::Throwing => throwing_method,
            Known::StampAndXferBack => stamp_and_xfer_back,
        }
    }
}

impl Domain {
    /// [`Domain::fcall`] of a known method.
    #[inline(always)]
    pub fn fcall_known(&self, m: Known, a: &mut NullArgs<'_>) -> Outcome {
        // SAFETY: a known method keeps the call's contract (module doc); `a` is its argument.
        unsafe { self.fcall(m.method(), a.as_arg()) }
    }

    /// [`Domain::tcall`] of a known method.
    #[inline(always)]
    pub fn tcall_known(&self, m: Known, a: &mut NullArgs<'_>) -> io::Result<Outcome> {
        // SAFETY: as `fcall_known`.
        unsafe { self.tcall(m.method(), a.as_arg()) }
    }

    /// [`Domain::call`] of [`super::sum_method`]: `(outcome, sum of args + 1, what it
    /// observed of its rights)`.
    #[inline(always)]
    pub fn call_sum(&self, args: [u64; FRAME_WORDS]) -> io::Result<(Outcome, u64, u64)> {
        // SAFETY: `sum_method` writes its own frame only and holds nothing.
        unsafe { self.call(super::sum_method, args) }
    }

    /// [`Domain::call`] of [`super::throwing_frame_method`] on `a` (the frame carries `a`'s
    /// address).
    #[inline(always)]
    pub fn call_throwing(&self, a: &mut NullArgs<'_>) -> io::Result<(Outcome, u64, u64)> {
        // SAFETY: the frame method runs `throwing_method` on `a`, live for the call.
        unsafe { self.call(super::throwing_frame_method, [a.as_arg() as u64, 0, 0, 0]) }
    }

    /// The null constructor: aims `ctor` at this domain and f-calls [`null_method`].
    #[inline(always)]
    pub fn construct(&self, ctor: &mut Roaming) -> Outcome {
        ctor.0.target = self.marker();
        // SAFETY: the null method writes this domain's marker, just set.
        unsafe { self.fcall(null_method, ctor.0.as_arg()) }
    }

    /// The null destructor: as [`Domain::construct`] (writes the value, here the caller's
    /// last word to the domain before it goes).
    #[inline(always)]
    pub fn destruct(&self, dtor: &mut Roaming) -> Outcome {
        self.construct(dtor)
    }

    /// This domain's rights and stack top in hand, for transfers timed without looking them
    /// up; `Err` without a private stack.
    pub fn xfer_target(&self) -> io::Result<XferTarget<'_>> {
        Ok(XferTarget { gate: self.gate(), top: self.stack_top()? })
    }
}

/// A domain's gate and private stack top, borrowed from it ([`Domain::xfer_target`]).
#[derive(Clone, Copy, Debug)]
pub struct XferTarget<'d> {
    gate: Gate<'d>,
    top: usize,
}

impl XferTarget<'_> {
    /// Transfers to [`stamp_and_xfer_back`] with `a`: [`Outcome::Xferred`] when it came back.
    #[inline(always)]
    pub fn xfer_stamped(&self, a: &mut NullArgs<'_>) -> Outcome {
        // SAFETY: `top` is the domain's own stack (borrowed), the gate its own (key 0 kept);
        // the method is a known one.
        unsafe { xfer_with(self.gate, self.top, stamp_and_xfer_back, a.as_arg()) }
    }
}

/// Null-method arguments the library aims at the domain entered, right before each call
/// ([`Domain::construct`], [`KeyTable::xfer_stamped`]): for callers whose domains come and go.
#[derive(Debug)]
pub struct Roaming(NullArgs<'static>);

impl Roaming {
    /// Unaimed arguments, with the run's timer for stamps.
    pub fn new(timer: Option<platform::timer::Timer>) -> Roaming {
        Roaming(NullArgs {
            hook: None,
            target: std::ptr::null_mut(),
            value: 0,
            seen: 0,
            touch: 0,
            stamp: 0,
            timer,
            _domains: std::marker::PhantomData,
        })
    }

    /// Sets what the null method writes.
    pub fn set_value(&mut self, value: u64) {
        self.0.value = value;
    }

    /// What the last method observed of its rights.
    pub fn seen(&self) -> u64 {
        self.0.seen
    }

    /// The last callee's stamp.
    #[inline(always)]
    pub fn stamp(&self) -> u64 {
        self.0.stamp
    }
}

impl KeyTable {
    /// Resolves domain `obj` (a hit, or a miss that re-tags), aims `a` at it with `value`
    /// and transfers to [`stamp_and_xfer_back`].
    #[inline(always)]
    pub fn xfer_stamped(&mut self, obj: usize, a: &mut Roaming, value: u64) -> io::Result<Outcome> {
        let d = self.resolve(obj)?;
        a.0.target = d.marker();
        a.0.value = value;
        let top = d.stack().map(|s| s.top()).unwrap_or(0);
        // SAFETY: `a` is aimed at the domain entered; `top` is its own stack (or 0: none),
        // the gate its own; the method is a known one.
        Ok(unsafe { xfer_with(d.gate(), top, stamp_and_xfer_back, a.0.as_arg()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rights;

    #[test]
    fn known_methods_run_safely_in_their_domain() {
        let _s = sys::testing::serial();
        for how in Rights::here() {
            let (d, other) = (Domain::new(how, true).expect("domain"), Domain::new(how, false).expect("domain"));
            let mut a = NullArgs::for_domain(&d);
            a.value = 9;
            assert_eq!(d.fcall_known(Known::Null, &mut a), Outcome::Returned);
            assert_eq!(d.tcall_known(Known::ReadMarker, &mut a).unwrap(), Outcome::Returned);
            assert_eq!((a.value, a.seen), (9, d.inside()));
            assert_eq!(d.call_sum([1, 2, 3, 4]).unwrap().1, 11);
            let mut t = NullArgs::for_domain(&d).touching(&other);
            let thrown = Outcome::Thrown { addr: other.marker() as usize, code: how.fault_code() };
            assert_eq!(d.call_throwing(&mut t).unwrap().0, thrown, "{how:?}");
            assert_eq!(d.xfer_target().unwrap().xfer_stamped(&mut a), Outcome::Xferred);
            let mut ctor = Roaming::new(None);
            assert_eq!(other.construct(&mut ctor), Outcome::Returned);
            assert_eq!(ctor.seen(), other.inside());
            let mut table = KeyTable::new(how, 2, 15).expect("table");
            let mut r = Roaming::new(None);
            assert_eq!(table.xfer_stamped(1, &mut r, 5).unwrap(), Outcome::Xferred);
            assert_eq!(r.seen(), table.domain(1).inside());
        }
    }
}
