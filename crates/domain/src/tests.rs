use super::table::KeyTable;
use super::*;
use sys::testing::serial;

/// The mechanisms to test here: mprotect always (x86_64); keys where the CPU has them (the
/// keyed tests skip elsewhere, saying why).
fn mechanisms() -> Vec<Rights> {
    if let Err(why) = available() {
        eprintln!("keyed mode skipped: {why}");
    }
    Rights::here()
}

/// Reads `d`'s marker from inside `d`.
fn marker_of(d: &Domain) -> (u64, u64) {
    let mut a = NullArgs::for_domain(d);
    // SAFETY: `read_marker` holds nothing and cannot fault on its own marker.
    assert_eq!(unsafe { d.fcall(read_marker, a.as_arg()) }, Outcome::Returned);
    (a.value, a.seen)
}

/// The caller's view is the closed one: PKRU denying the key, or the region `---p`.
fn assert_closed(d: &Domain) {
    match d.how() {
        Rights::Pkey => assert!(!grants(pkru(), d.key().expect("key")), "the caller has no access: {:#x}", pkru()),
        Rights::Mprotect => assert_eq!(maps_perms(d.data_range().start).expect("maps"), "---p"),
    }
}

#[test]
fn mprotect_mode_is_available_on_x86_64() {
    assert_eq!(Rights::Mprotect.available().is_ok(), cfg!(target_arch = "x86_64"));
    assert_eq!(Rights::from_name("mprotect"), Some(Rights::Mprotect));
    assert_eq!(Rights::from_name("pkey"), Some(Rights::Pkey));
    assert_eq!(Rights::here().contains(&Rights::Pkey), available().is_ok());
}

#[test]
fn fcall_runs_in_the_domain_and_restores_the_callers_rights() {
    let _s = serial();
    for how in mechanisms() {
        let d = Domain::new(how, false).expect("domain");
        assert_closed(&d);
        let before = d.caller_view();
        let mut a = NullArgs::for_domain(&d);
        a.value = 0xfeed;
        // SAFETY: the null method holds nothing and writes its own marker only.
        assert_eq!(unsafe { d.fcall(null_method, a.as_arg()) }, Outcome::Returned);
        assert_eq!(a.seen, d.inside(), "{how:?}: the callee ran with its own rights");
        if how == Rights::Pkey {
            assert_eq!(a.seen, u64::from(rights_for(d.key().expect("key"))), "PKRU grants key 0 and its key only");
        }
        assert_eq!(d.caller_view(), before, "{how:?}: the caller's rights are back");
        assert_closed(&d);
        assert_eq!(marker_of(&d).0, 0xfeed, "the value is in the callee's memory");
        assert_eq!(d.vma(), Ok(d.data_range()), "its region is a VMA of its own");
        assert!(d.data_range().contains(&(d.marker() as usize)));
    }
}

#[test]
fn the_caller_cannot_read_the_callees_memory() {
    let _s = serial();
    for how in mechanisms() {
        let d = Domain::new(how, false).expect("domain");
        let before = d.caller_view();
        let f = probe_read(how, d.marker() as usize).expect_err("the read faults");
        assert_eq!(f.code, how.fault_code(), "{how:?}");
        assert_eq!(f.addr, d.marker() as usize);
        assert_eq!(d.caller_view(), before);
        // Again: SIGSEGV was unblocked after the first throw, so a second fault is caught too.
        assert!(probe_read(how, d.marker() as usize).is_err());
        // Memory outside every domain reads fine under the probe.
        let x = 7u8;
        assert_eq!(probe_read(how, &raw const x as usize), Ok(7));
    }
}

extern "C" fn record_sp(a: *mut u8) {
    let here = 0u8;
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is the live argument block in the call area.
    unsafe {
        (*a).value = std::hint::black_box(&raw const here) as u64;
        (*a).seen = observe();
    }
}

#[test]
fn tcall_and_call_run_on_the_private_stack_and_copy_frames() {
    let _s = serial();
    for how in mechanisms() {
        let mut d = Domain::new(how, true).expect("domain");
        let before = d.caller_view();
        let mut a = NullArgs::for_domain(&d);
        // SAFETY: `record_sp` holds nothing.
        assert_eq!(unsafe { d.tcall(record_sp, a.as_arg()) }.expect("stack"), Outcome::Returned);
        assert!(d.stack().expect("stack").range().contains(&(a.value as usize)), "{:#x}", a.value);
        assert_eq!(a.seen, d.inside());
        assert_eq!(d.caller_view(), before);
        // SAFETY: `sum_method` holds nothing and writes its own frame.
        let (out, result, seen) = unsafe { d.call(sum_method, [1, 2, 3, 4]) }.expect("stack");
        assert_eq!((out, result, seen), (Outcome::Returned, 11, d.inside()));
        // A linked stack: t-calls run on it until it is unlinked.
        d.link_stack(Stack::new().expect("stack"));
        assert_eq!(d.stacks(), 2);
        let linked = d.stack().expect("stack").range();
        let mut a = NullArgs::for_domain(&d);
        // SAFETY: as above.
        assert_eq!(unsafe { d.tcall(record_sp, a.as_arg()) }.expect("stack"), Outcome::Returned);
        assert!(linked.contains(&(a.value as usize)), "on the linked stack");
        assert!(d.unlink_stack().is_some());
        let _link = d.link().expect("sigaltstack");
        assert_eq!(d.caller_view(), before);
        let no_stack = Domain::new(how, false).expect("domain");
        let mut a = NullArgs::for_domain(&no_stack);
        // SAFETY: as above.
        assert!(unsafe { no_stack.tcall(record_sp, a.as_arg()) }.is_err(), "t-call needs a private stack");
    }
}

#[test]
fn throw_after_each_call_kind_resumes_the_caller_with_its_rights() {
    let _s = serial();
    for how in mechanisms() {
        let (d, other) = (Domain::new(how, true).expect("domain"), Domain::new(how, false).expect("domain"));
        let before = d.caller_view();
        for touch in [other.marker() as usize, 0] {
            let expected =
                if touch == 0 { Outcome::Raised } else { Outcome::Thrown { addr: touch, code: how.fault_code() } };
            let mut a = NullArgs::for_domain(&d);
            a.touch = touch;
            // SAFETY: `throwing_method` holds nothing when it faults or raises.
            assert_eq!(unsafe { d.fcall(throwing_method, a.as_arg()) }, expected, "{how:?} after fcall");
            assert_eq!(d.caller_view(), before);
            // SAFETY: as above.
            assert_eq!(unsafe { d.tcall(throwing_method, a.as_arg()) }.expect("stack"), expected, "after tcall");
            assert_eq!(d.caller_view(), before);
            assert_eq!(a.seen, d.inside(), "it ran in its domain before throwing");
            let mut a = NullArgs::for_domain(&d);
            a.touch = touch;
            assert_eq!(d.call_throwing_for_test(&mut a), expected, "{how:?} after call");
            assert_eq!(d.caller_view(), before);
            assert_closed(&d);
        }
        assert_eq!(marker_of(&d).1, d.inside(), "calls work after throws");
    }
}

impl Domain {
    fn call_throwing_for_test(&self, a: &mut NullArgs<'_>) -> Outcome {
        // SAFETY: the frame method runs `throwing_method` on `a`, live for the call.
        unsafe { self.call(throwing_frame_method, [a.as_arg() as u64, 0, 0, 0]) }.expect("stack").0
    }
}

static SEEN_IN_HANDLER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn on_usr2(_: libc::c_int) {
    SEEN_IN_HANDLER.store(read_pkru(), std::sync::atomic::Ordering::Relaxed);
}

extern "C" fn signalled_method(a: *mut u8) {
    // SAFETY: raise is a plain system call; the handler only reads PKRU.
    unsafe { libc::raise(libc::SIGUSR2) };
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is live; the marker is the callee's.
    unsafe {
        (*a).target.write_volatile(5);
        (*a).seen = observe();
    }
}

#[test]
fn a_signal_in_the_callee_keeps_its_rights_and_the_caller_gets_its_own_back() {
    let _s = serial();
    if let Err(why) = available() {
        eprintln!("skipped (keys only): {why}");
        return;
    }
    // SAFETY: the handler is async-signal-safe (an atomic store); the guard puts SIGUSR2's
    // disposition back.
    let _guard = unsafe { sys::disposition::Disposition::handle(libc::SIGUSR2, on_usr2, 0) }.expect("sigaction");
    let d = Domain::new(Rights::Pkey, true).expect("domain");
    let before = pkru();
    let mut a = NullArgs::for_domain(&d);
    // SAFETY: the method holds nothing.
    assert_eq!(unsafe { d.tcall(signalled_method, a.as_arg()) }.expect("stack"), Outcome::Returned);
    let in_handler = SEEN_IN_HANDLER.load(std::sync::atomic::Ordering::Relaxed);
    assert!(!grants(in_handler, d.key().expect("key")), "the handler runs without the callee's key: {in_handler:#x}");
    assert_eq!(a.seen, d.inside(), "the callee's rights survive the signal");
    assert_eq!(pkru(), before);
    assert_eq!(marker_of(&d).0, 5);
}

#[test]
fn xfer_reaches_the_callee_and_comes_back_by_transfer() {
    let _s = serial();
    for how in mechanisms() {
        let d = Domain::new(how, true).expect("domain");
        let before = d.caller_view();
        let mut a = NullArgs::for_domain(&d);
        a.value = 9;
        // SAFETY: the target holds nothing when it transfers back.
        assert_eq!(unsafe { d.xfer(stamp_and_xfer_back, a.as_arg()) }.expect("stack"), Outcome::Xferred);
        assert_eq!((a.seen, d.caller_view()), (d.inside(), before));
        assert_eq!(marker_of(&d).0, 9);
    }
}

#[test]
fn twenty_domains_share_the_table_and_stay_isolated() {
    let _s = serial();
    for how in mechanisms() {
        let mut t = KeyTable::new(how, 20, 15).expect("table");
        if how == Rights::Pkey {
            assert!(t.keys() < t.len(), "more domains ({}) than keys ({})", t.len(), t.keys());
        } else {
            assert_eq!(t.keys(), 0);
        }
        for round in 0..3u64 {
            for obj in 0..t.len() {
                let d = t.resolve(obj).expect("resolve");
                let before = d.caller_view();
                let mut a = NullArgs::for_domain(d);
                a.value = round * 100 + obj as u64;
                // SAFETY: the null method holds nothing.
                assert_eq!(unsafe { d.fcall(null_method, a.as_arg()) }, Outcome::Returned);
                assert_eq!(a.seen, d.inside(), "domain {obj}");
                assert_eq!(d.caller_view(), before);
            }
        }
        match how {
            Rights::Pkey => assert!(t.misses() >= 3 * (t.len() as u64 - t.keys() as u64)),
            Rights::Mprotect => assert_eq!(t.misses(), 0, "no slots to miss"),
        }
        for obj in 0..t.len() {
            let f = probe_read(how, t.domain(obj).marker() as usize).expect_err("outside access faults");
            assert_eq!(f.code, how.fault_code(), "domain {obj}, key {:?}", t.domain(obj).key());
        }
        // From inside one domain, another (held or parked) faults; each keeps its own value.
        for obj in 0..t.len() {
            let other = t.domain((obj + 1) % t.len()).marker() as usize;
            let d = t.resolve(obj).expect("resolve");
            let mut a = NullArgs::for_domain(d);
            a.value = 200 + obj as u64;
            a.touch = other;
            // SAFETY: the method holds nothing when it faults.
            let out = unsafe { d.fcall(throwing_method, a.as_arg()) };
            assert_eq!(out, Outcome::Thrown { addr: other, code: how.fault_code() }, "domain {obj}");
            let (value, seen) = marker_of(d);
            assert_eq!((value, seen), (200 + obj as u64, d.inside()));
        }
    }
}

#[test]
fn references_name_typed_interfaces_and_lead_to_their_key() {
    let _s = serial();
    for how in mechanisms() {
        let mut t = KeyTable::new(how, 3, 15).expect("table");
        let r0 = t.add_interface(0, 10).expect("interface");
        let r2 = t.add_interface(2, 12).expect("interface");
        assert!(t.add_interface(3, 1).is_none(), "no domain 3");
        assert_eq!((t.get_type(r0), t.get_type(r2)), (Some(10), Some(12)));
        let b = t.sel2ref(r2).expect("binding");
        assert_eq!(b.domain, 2);
        assert_eq!(b.key, None, "parked, or no keys");
        t.resolve(2).expect("resolve");
        let b = t.sel2ref(r2).expect("binding");
        assert_eq!(b.key, t.domain(2).key().filter(|_| how == Rights::Pkey));
    }
}

#[test]
fn mprotect_domains_leave_no_region_open_or_mapped() {
    let _s = serial();
    let page = sys::fault::page_size();
    let pages = {
        let d = Domain::new(Rights::Mprotect, true).expect("domain");
        assert_closed(&d);
        let mut a = NullArgs::for_domain(&d);
        // SAFETY: the null method holds nothing.
        assert_eq!(unsafe { d.fcall(null_method, a.as_arg()) }, Outcome::Returned);
        assert_closed(&d);
        let (r, s) = (d.data_range(), d.stack().expect("stack").range());
        assert_eq!(maps_perms(r.start - page).expect("guard"), "r--p", "the guard below");
        assert_eq!(maps_perms(r.end).expect("guard"), "r--p", "the guard above");
        [r.start - page, r.start, r.end, s.start - page, s.start]
    };
    for p in pages {
        assert!(maps_perms(p).is_err(), "{p:#x} unmapped with the domain");
    }
}

/// What the nested-call test's methods share (in the call area).
#[repr(C)]
struct Nest {
    outer: *const Domain,
    inner: *const Domain,
    /// The inner callee's probe of the outer domain's marker: 1 faulted, 2 read.
    inner_probe: u64,
    /// What the inner callee observed, and what the outer one observed after the inner call.
    inner_seen: u64,
    outer_seen_after: u64,
    /// The outer callee's own marker, written after the inner call returned: 1 written.
    outer_wrote: u64,
}

extern "C" fn nest_inner(a: *mut u8) {
    let n = a.cast::<Nest>();
    // SAFETY: `n` is the live `Nest`; `outer` a live domain; the probe catches its own fault.
    unsafe {
        (*n).inner_seen = observe();
        let how = (*(*n).outer).how();
        (*n).inner_probe = if probe_read(how, (*(*n).outer).marker() as usize).is_err() { 1 } else { 2 };
    }
}

extern "C" fn nest_outer(a: *mut u8) {
    let n = a.cast::<Nest>();
    // SAFETY: as `nest_inner`; the inner call runs a method that holds nothing; the outer
    // marker is the outer callee's own memory.
    unsafe {
        let _ = (*(*n).inner).fcall(nest_inner, a);
        (*n).outer_seen_after = observe();
        (*(*n).outer).marker().write_volatile(42);
        (*n).outer_wrote = 1;
    }
}

#[test]
fn a_nested_callee_cannot_touch_its_callers_domain() {
    let _s = serial();
    for how in mechanisms() {
        let (outer, inner) = (Domain::new(how, true).expect("domain"), Domain::new(how, true).expect("domain"));
        let mut n = Nest {
            outer: &raw const outer,
            inner: &raw const inner,
            inner_probe: 0,
            inner_seen: 0,
            outer_seen_after: 0,
            outer_wrote: 0,
        };
        // SAFETY: the methods hold nothing needing drop; `n` lives across the call.
        let out = unsafe { outer.tcall(nest_outer, (&raw mut n).cast()) }.expect("tcall");
        assert_eq!(out, Outcome::Returned, "{how:?}");
        assert_eq!(n.inner_seen, inner.inside(), "{how:?}: the inner callee runs with its rights");
        assert_eq!(n.inner_probe, 1, "{how:?}: the inner callee's touch of its caller's domain faults");
        assert_eq!(n.outer_seen_after, outer.inside(), "{how:?}: the outer callee has its rights back");
        assert_eq!(n.outer_wrote, 1, "{how:?}: and can write its own memory");
        assert_closed(&outer);
        assert_closed(&inner);
        assert_eq!(marker_of(&outer).0, 42);
    }
}

/// What the caller of level `j` (−1: the chain's caller) should see when nothing throws.
fn normal_outcome(k: chain::Kind) -> Outcome {
    if k == chain::Kind::Xfer { Outcome::Xferred } else { Outcome::Returned }
}

#[test]
fn a_chain_of_twenty_levels_of_every_kind_reaches_each_domain_and_comes_back() {
    use chain::{End, Kind, MAX_DEPTH, Plan};
    let _s = serial();
    for how in mechanisms() {
        let ds: Vec<Domain> = (0..MAX_DEPTH).map(|_| Domain::new(how, true).expect("domain")).collect();
        let levels: Vec<_> = ds.iter().enumerate().map(|(i, d)| (d, Kind::ALL[i % 4])).collect();
        let plan = Plan { levels: levels.clone(), end: End::Return, catch: None, words: [1, 2, 3] };
        let r = chain::run(&plan).expect("chain");
        assert_eq!(r.outcome, normal_outcome(levels[0].1), "{how:?}");
        for (i, l) in r.levels.iter().enumerate() {
            assert_eq!(l.seen, l.expect, "{how:?} level {i} runs in its domain");
            assert!(l.own_memory, "{how:?} level {i} writes its own memory");
            if i + 1 < MAX_DEPTH {
                assert_eq!(l.child, Some(normal_outcome(levels[i + 1].1)), "{how:?} level {i}");
                assert_eq!(l.seen_after, l.expect, "{how:?} level {i} has its rights back");
                if levels[i + 1].1 == Kind::Call {
                    let next = r.levels[i + 1].expect;
                    assert_eq!(l.child_result, Some((chain::call_result([1, 2, 3]), next)));
                }
            }
        }
        for d in &ds {
            assert_closed(d);
        }
    }
}

#[test]
fn a_fault_deep_in_a_chain_is_caught_at_its_catch_point() {
    use chain::{End, Kind, Plan};
    let _s = serial();
    for how in mechanisms() {
        let ds: Vec<Domain> = (0..11).map(|_| Domain::new(how, true).expect("domain")).collect();
        let (other, chain_ds) = ds.split_last().expect("eleven");
        let levels: Vec<_> = chain_ds.iter().enumerate().map(|(i, d)| (d, Kind::ALL[(i + 1) % 4])).collect();
        let plan = Plan { levels: levels.clone(), end: End::Touch(other), catch: Some(4), words: [0; 3] };
        let r = chain::run(&plan).expect("chain");
        assert_eq!(r.outcome, normal_outcome(levels[0].1), "{how:?}: caught below the caller");
        assert!(!r.levels[9].touched_unfaulted, "{how:?}: the touch faulted");
        assert_eq!(r.levels[8].child, Some(Outcome::Thrown { addr: other.marker() as usize, code: how.fault_code() }));
        for i in 4..8 {
            assert_eq!(r.levels[i].child, Some(Outcome::Raised), "{how:?}: level {i} sees the rethrow");
        }
        for (i, l) in r.levels.iter().enumerate().take(9) {
            assert_eq!(l.seen_after, l.expect, "{how:?}: level {i} has its rights back after the throw");
        }
        assert_eq!(r.levels[3].child, Some(normal_outcome(levels[4].1)), "{how:?}: level 4 caught it");
        // Raised all the way to the caller.
        let plan = Plan { end: End::Raise, catch: None, ..plan };
        assert_eq!(chain::run(&plan).expect("chain").outcome, Outcome::Raised, "{how:?}");
        for d in &ds {
            assert_closed(d);
        }
    }
}

#[test]
fn a_malformed_chain_is_refused() {
    use chain::{End, Kind, Plan};
    let _s = serial();
    let d = Domain::new(Rights::Mprotect, true).expect("domain");
    let e = Domain::new(Rights::Mprotect, false).expect("domain");
    let plan = |levels, catch| Plan { levels, end: End::Return, catch, words: [0; 3] };
    assert!(chain::run(&plan(vec![], None)).is_err());
    assert!(chain::run(&plan(vec![(&d, Kind::Fcall), (&d, Kind::Fcall)], None)).is_err(), "twice");
    assert!(chain::run(&plan(vec![(&e, Kind::Tcall)], None)).is_err(), "no stack");
    assert!(chain::run(&plan(vec![(&e, Kind::Fcall)], None)).is_ok(), "an f-call needs none");
    assert!(chain::run(&plan(vec![(&d, Kind::Fcall), (&e, Kind::Fcall)], Some(1))).is_err(), "catch");
}

#[test]
fn leaked_rights_let_the_caller_in_until_closed() {
    let _s = serial();
    for how in mechanisms() {
        let d = Domain::new(how, false).expect("domain");
        d.leak_rights_for_test().expect("leak");
        assert!(probe_read(how, d.marker() as usize).is_ok(), "{how:?}: open to the caller");
        d.close_for_test().expect("close");
        assert!(probe_read(how, d.marker() as usize).is_err(), "{how:?}: closed again");
        assert_closed(&d);
    }
}

#[test]
fn every_call_counts_its_rights_changes_and_a_domain_held_open_makes_none() {
    let _s = serial();
    // Switched: two changes per call, whatever its kind (mprotect open and close, or PKRU in
    // and out).
    for how in mechanisms() {
        let d = Domain::new(how, true).expect("domain");
        let mut a = NullArgs::for_domain(&d);
        let before = rights_changes();
        assert_eq!(d.fcall_known(library_calls::Known::Null, &mut a), Outcome::Returned);
        assert_eq!(d.tcall_known(library_calls::Known::Null, &mut a).unwrap(), Outcome::Returned);
        assert_eq!(d.call_sum([1, 2, 3, 4]).unwrap().0, Outcome::Returned);
        assert_eq!(d.xfer_target().unwrap().xfer_stamped(&mut a), Outcome::Xferred);
        assert_eq!(rights_changes() - before, 8, "{how:?}");
        if how == Rights::Pkey {
            assert_eq!(d.hold_rights_open().unwrap_err().kind(), io::ErrorKind::Unsupported);
        }
    }
    // Held open: the same calls, the callee in its own region, and not one change.
    let d = Domain::new(Rights::Mprotect, true).expect("domain");
    let other = Domain::new(Rights::Mprotect, false).expect("domain");
    d.hold_rights_open().expect("open");
    assert!(d.rights_held_open());
    assert_eq!(maps_perms(d.data_range().start).unwrap(), "rw-p");
    let before = rights_changes();
    let mut a = NullArgs::for_domain(&d);
    a.value = 41;
    assert_eq!(d.fcall_known(library_calls::Known::Null, &mut a), Outcome::Returned);
    assert_eq!(a.seen, d.inside(), "the callee entered its own region");
    assert_eq!(d.tcall_known(library_calls::Known::ReadMarker, &mut a).unwrap(), Outcome::Returned);
    assert_eq!((a.value, a.seen), (41, d.inside()));
    assert_eq!(d.call_sum([1, 2, 3, 4]).unwrap(), (Outcome::Returned, 11, d.inside()));
    assert_eq!(d.xfer_target().unwrap().xfer_stamped(&mut a), Outcome::Xferred);
    let mut t = NullArgs::for_domain(&d);
    assert_eq!(d.tcall_known(library_calls::Known::Throwing, &mut t).unwrap(), Outcome::Raised);
    assert_eq!(rights_changes(), before, "no rights change while held open");
    assert_eq!(maps_perms(d.data_range().start).unwrap(), "rw-p", "still open");
    // Still isolated from the others: a touch of another domain's memory faults.
    let mut t = NullArgs::for_domain(&d).touching(&other);
    let thrown = Outcome::Thrown { addr: other.marker() as usize, code: SEGV_ACCERR };
    assert_eq!(d.fcall_known(library_calls::Known::Throwing, &mut t), thrown);
    assert_eq!(d.vma(), Ok(d.data_range()), "opening it split nothing");
    d.close_rights().expect("close");
    assert!(!d.rights_held_open());
    assert_closed(&d);
    let before = rights_changes();
    assert_eq!(d.fcall_known(library_calls::Known::Null, &mut a), Outcome::Returned);
    assert_eq!(rights_changes() - before, 2, "switched again once closed");
}

#[test]
fn the_throwing_methods_hook_runs_inside_the_callee_after_the_entry_and_before_its_stamp() {
    let _s = serial();
    let (timer, _) = platform::timer::detect();
    for how in mechanisms() {
        let d = Domain::new(how, true).expect("domain");
        let ran = Cell::new(None);
        // What the hook sees: the callee's rights (the entry's switch done), and the clock.
        let hook = || ran.set(Some((observe(), timer.start())));
        let mut a = NullArgs::for_domain(&d).before_stamp(&hook);
        a.timer = Some(timer);
        let out = d.tcall_known(library_calls::Known::Throwing, &mut a).unwrap();
        assert_eq!(out, Outcome::Raised, "{how:?}");
        let (seen, at) = ran.get().expect("the hook ran");
        assert_eq!(seen, d.inside(), "{how:?}: the hook ran with the callee's rights, after the entry");
        assert!(at <= a.stamp, "{how:?}: the hook ran before the stamp ({at} > {})", a.stamp);
        // A call kind with a frame reaches the same hook.
        ran.set(None);
        let mut a = NullArgs::for_domain(&d).before_stamp(&hook);
        assert_eq!(d.call_throwing(&mut a).unwrap().0, Outcome::Raised);
        assert_eq!(ran.get().map(|r| r.0), Some(d.inside()));
    }
}
