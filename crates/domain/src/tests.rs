use super::table::KeyTable;
use super::*;
use sys::testing::serial;

fn skip() -> bool {
    if let Err(why) = available() {
        eprintln!("skipped: {why}");
        return true;
    }
    false
}

/// Reads `d`'s marker from inside `d`.
fn marker_of(d: &Domain) -> (u64, u32) {
    let mut a = NullArgs::for_domain(d);
    // SAFETY: `read_marker` holds nothing and cannot fault on its own marker.
    assert_eq!(unsafe { d.fcall(read_marker, a.as_arg()) }, Outcome::Returned);
    (a.value, a.pkru_seen)
}

#[test]
fn fcall_runs_in_the_domain_and_restores_the_callers_rights() {
    let _s = serial();
    if skip() {
        return;
    }
    let d = Domain::new(false).expect("domain");
    let before = pkru();
    assert!(!grants(before, d.key()), "the caller has no access to the new key: {before:#x}");
    let mut a = NullArgs::for_domain(&d);
    a.value = 0xfeed;
    // SAFETY: the null method holds nothing and writes its own marker only.
    assert_eq!(unsafe { d.fcall(null_method, a.as_arg()) }, Outcome::Returned);
    assert_eq!(a.pkru_seen, rights_for(d.key()), "PKRU inside grants key 0 and the callee's key only");
    assert!(grants(a.pkru_seen, d.key()));
    assert_eq!(pkru(), before, "the caller's rights are back");
    assert_eq!(marker_of(&d).0, 0xfeed, "the value is in the callee's memory");
    assert!(d.data_range().contains(&(d.marker() as usize)));
}

#[test]
fn the_caller_cannot_read_the_callees_memory() {
    let _s = serial();
    if skip() {
        return;
    }
    let d = Domain::new(false).expect("domain");
    let before = pkru();
    let f = probe_read(d.marker() as usize).expect_err("the read faults");
    assert_eq!(f.code, SEGV_PKUERR);
    assert_eq!(f.addr, d.marker() as usize);
    assert_eq!(pkru(), before);
    // Again: SIGSEGV was unblocked after the first throw, so a second fault is caught too.
    assert!(probe_read(d.marker() as usize).is_err());
    // Memory outside every domain reads fine under the probe.
    let x = 7u8;
    assert_eq!(probe_read(&raw const x as usize), Ok(7));
}

extern "C" fn record_sp(a: *mut u8) {
    let here = 0u8;
    let a = a.cast::<NullArgs>();
    // SAFETY: `a` is the live argument block in the call area.
    unsafe {
        (*a).value = std::hint::black_box(&raw const here) as u64;
        (*a).pkru_seen = read_pkru();
    }
}

#[test]
fn tcall_and_call_run_on_the_private_stack_and_copy_frames() {
    let _s = serial();
    if skip() {
        return;
    }
    let d = Domain::new(true).expect("domain");
    let before = pkru();
    let mut a = NullArgs::for_domain(&d);
    // SAFETY: `record_sp` holds nothing.
    assert_eq!(unsafe { d.tcall(record_sp, a.as_arg()) }.expect("stack"), Outcome::Returned);
    assert!(d.stack().expect("stack").range().contains(&(a.value as usize)), "{:#x}", a.value);
    assert_eq!(a.pkru_seen, d.rights());
    assert_eq!(pkru(), before);
    // SAFETY: `sum_method` holds nothing and writes its own frame.
    let (out, result, seen) = unsafe { d.call(sum_method, [1, 2, 3, 4]) }.expect("stack");
    assert_eq!((out, result, seen), (Outcome::Returned, 11, u64::from(d.rights())));
    let _link = d.link().expect("sigaltstack");
    assert_eq!(pkru(), before);
    let no_stack = Domain::new(false).expect("domain");
    // SAFETY: as above.
    assert!(unsafe { no_stack.tcall(record_sp, a.as_arg()) }.is_err(), "t-call needs a private stack");
}

#[test]
fn throw_after_each_call_kind_resumes_the_caller_with_its_rights() {
    let _s = serial();
    if skip() {
        return;
    }
    let (d, other) = (Domain::new(true).expect("domain"), Domain::new(false).expect("domain"));
    let before = pkru();
    for touch in [other.marker() as usize, 0] {
        let expected = if touch == 0 { Outcome::Raised } else { Outcome::Thrown { addr: touch, code: SEGV_PKUERR } };
        let mut a = NullArgs::for_domain(&d);
        a.touch = touch;
        // SAFETY: `throwing_method` holds nothing when it faults or raises.
        assert_eq!(unsafe { d.fcall(throwing_method, a.as_arg()) }, expected, "after fcall");
        assert_eq!(pkru(), before);
        // SAFETY: as above.
        assert_eq!(unsafe { d.tcall(throwing_method, a.as_arg()) }.expect("stack"), expected, "after tcall");
        assert_eq!(pkru(), before);
        assert_eq!(a.pkru_seen, d.rights(), "it ran in its domain before throwing");
    }
    // `call`: the method gets the frame, so its throw is the fault of a touch in the frame's
    // sibling domain: use a method that faults on `other` through a static address.
    static TOUCH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    extern "C" fn touch_static(_: *mut u8) {
        let t = TOUCH.load(std::sync::atomic::Ordering::Relaxed);
        // SAFETY: faults (another domain's memory) and throws; nothing to drop.
        std::hint::black_box(unsafe { (t as *const u8).read_volatile() });
    }
    TOUCH.store(other.marker() as usize, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: as above.
    let (out, _, _) = unsafe { d.call(touch_static, [0; FRAME_WORDS]) }.expect("stack");
    assert_eq!(out, Outcome::Thrown { addr: other.marker() as usize, code: SEGV_PKUERR }, "after call");
    assert_eq!(pkru(), before);
    assert_eq!(marker_of(&d).1, d.rights(), "calls work after throws");
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
        (*a).pkru_seen = read_pkru();
    }
}

#[test]
fn a_signal_in_the_callee_keeps_its_rights_and_the_caller_gets_its_own_back() {
    let _s = serial();
    if skip() {
        return;
    }
    // SAFETY: the handler is async-signal-safe (an atomic store); the guard puts SIGUSR2's
    // disposition back.
    let _guard = unsafe { sys::disposition::Disposition::handle(libc::SIGUSR2, on_usr2, 0) }.expect("sigaction");
    let d = Domain::new(true).expect("domain");
    let before = pkru();
    let mut a = NullArgs::for_domain(&d);
    // SAFETY: the method holds nothing.
    assert_eq!(unsafe { d.tcall(signalled_method, a.as_arg()) }.expect("stack"), Outcome::Returned);
    let in_handler = SEEN_IN_HANDLER.load(std::sync::atomic::Ordering::Relaxed);
    assert!(!grants(in_handler, d.key()), "the handler runs without the callee's key: {in_handler:#x}");
    assert_eq!(a.pkru_seen, d.rights(), "the callee's rights survive the signal");
    assert_eq!(pkru(), before);
    assert_eq!(marker_of(&d).0, 5);
}

#[test]
fn xfer_reaches_the_callee_and_comes_back_by_transfer() {
    let _s = serial();
    if skip() {
        return;
    }
    let d = Domain::new(true).expect("domain");
    let before = pkru();
    let mut a = NullArgs::for_domain(&d);
    a.value = 9;
    // SAFETY: the target holds nothing when it transfers back.
    assert_eq!(unsafe { d.xfer(stamp_and_xfer_back, a.as_arg()) }.expect("stack"), Outcome::Xferred);
    assert_eq!((a.pkru_seen, pkru()), (d.rights(), before));
    assert_eq!(marker_of(&d).0, 9);
}

#[test]
fn twenty_domains_share_the_hardware_keys_and_stay_isolated() {
    let _s = serial();
    if skip() {
        return;
    }
    let mut t = KeyTable::new(20, 15).expect("table");
    assert!(t.keys() < t.len(), "more domains ({}) than keys ({})", t.len(), t.keys());
    let before = pkru();
    for round in 0..3u64 {
        for obj in 0..t.len() {
            let d = t.resolve(obj).expect("resolve");
            let mut a = NullArgs::for_domain(d);
            a.value = round * 100 + obj as u64;
            // SAFETY: the null method holds nothing.
            assert_eq!(unsafe { d.fcall(null_method, a.as_arg()) }, Outcome::Returned);
            assert_eq!(a.pkru_seen, d.rights(), "domain {obj}");
            assert_eq!(pkru(), before);
        }
    }
    assert!(t.misses() >= 3 * (t.len() as u64 - t.keys() as u64));
    for obj in 0..t.len() {
        let f = probe_read(t.domain(obj).marker() as usize).expect_err("outside access faults");
        assert_eq!(f.code, SEGV_PKUERR, "domain {obj}, key {}", t.domain(obj).key());
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
        assert_eq!(out, Outcome::Thrown { addr: other, code: SEGV_PKUERR }, "domain {obj}");
        let (value, seen) = marker_of(d);
        assert_eq!((value, seen), (200 + obj as u64, d.rights()));
    }
}
