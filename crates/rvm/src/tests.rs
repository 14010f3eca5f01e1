//! Unit tests of the segment: commit, abort, read-only commits, recovery from torn and corrupt
//! logs, both write-detection modes, and read tracking.

use super::*;
use std::path::Path;

const PAGES: usize = 4;

fn mprotect() -> Options {
    Options { detection: Detection::Mprotect, tracking: Tracking::Writes }
}

fn tracking_all() -> Options {
    Options { detection: Detection::Mprotect, tracking: Tracking::All }
}

fn new_segment(dir: &Path, options: Options) -> Result<Segment> {
    Segment::create(dir.join("seg"), PAGES, options)
}

fn file_bytes(seg: &Segment) -> Vec<u8> {
    std::fs::read(seg.path()).expect("read the segment file")
}

/// Complete transactions in the log (what a recovery would replay).
fn logged(seg: &Segment) -> usize {
    seg.logged_transactions().expect("read the log")
}

/// The behaviours every detection mode must show, on a segment in `dir`.
fn commit_abort_and_reopen(dir: &Path, options: Options) -> Result<()> {
    let mut seg = new_segment(dir, options)?;
    let ps = seg.page_size();
    let mut tx = seg.begin()?;
    tx.write(10, b"hello")?;
    tx.write(2 * ps + 1, b"world")?;
    assert_eq!(tx.dirty_pages(), 2);
    let c = tx.commit()?;
    assert_eq!((c.dirty_pages, c.records, c.bytes), (2, 2, 10));
    assert!(!c.read_only());
    assert_eq!(&file_bytes(&seg)[10..15], b"hello", "the file holds the commit");
    assert_eq!(logged(&seg), 0, "the log is trimmed");
    assert_eq!(seg.stats().traps, 2);

    let mut tx = seg.begin()?;
    tx.write(10, b"HELLO")?;
    tx.write(3 * ps, b"gone")?;
    tx.abort();
    assert_eq!(&seg.bytes()[10..15], b"hello", "abort restores the pre-image");
    assert_eq!(&seg.bytes()[3 * ps..3 * ps + 4], &[0; 4]);
    {
        let mut tx = seg.begin()?;
        tx.write(11, b"X")?;
    } // dropped: aborted
    assert_eq!(&seg.bytes()[10..15], b"hello");

    drop(seg);
    let seg = Segment::open(dir.join("seg"), options)?;
    assert_eq!(&seg.bytes()[10..15], b"hello");
    assert_eq!(&seg.bytes()[2 * ps + 1..2 * ps + 6], b"world");
    assert_eq!(seg.recovery(), Recovery::default());
    Ok(())
}

#[test]
fn mprotect_mode_commits_aborts_and_persists() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    commit_abort_and_reopen(dir.path(), mprotect()).expect("mprotect mode");
}

#[test]
fn uffd_mode_commits_aborts_and_persists_where_available() {
    let _serial = sys::testing::serial();
    // uffd write-protect covers shmem but not ext4/xfs files: try tmpfs, then the temp dir.
    let dirs = [tempfile::tempdir_in("/dev/shm"), tempfile::tempdir()];
    let options = Options { detection: Detection::Uffd, tracking: Tracking::Writes };
    let mut ran = false;
    for dir in dirs.iter().flatten() {
        match commit_abort_and_reopen(dir.path(), options) {
            Ok(()) => ran = true,
            Err(Error::Unavailable { reason, .. }) => {
                eprintln!("uffd mode skipped in {}: {reason}", dir.path().display())
            }
            Err(e) => panic!("uffd mode failed in {}: {e}", dir.path().display()),
        }
    }
    if !ran {
        eprintln!("uffd mode skipped everywhere: unavailable on this kernel");
    }
}

#[test]
fn read_tracking_commits_aborts_and_persists() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    commit_abort_and_reopen(dir.path(), tracking_all()).expect("mprotect mode, reads tracked");
}

#[test]
fn read_tracking_with_uffd_is_unavailable() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options { detection: Detection::Uffd, tracking: Tracking::All };
    match new_segment(dir.path(), options) {
        Err(Error::Unavailable { reason, .. }) => assert!(reason.contains("cannot track reads"), "{reason}"),
        other => panic!("expected Unavailable, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn read_tracking_read_only_commit_reprotects_without_io() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seg = new_segment(dir.path(), tracking_all()).expect("segment");
    let ps = seg.page_size();
    let log_before = std::fs::read(seg.log_path()).expect("read log");
    let mut probes = Vec::new();
    let tx = seg.begin().expect("begin");
    assert_eq!(std::hint::black_box(tx.bytes()[2 * ps + 5]), 0);
    let c = tx.commit_probed(|s| probes.push(s)).expect("commit");
    assert!(c.read_only());
    let m = Call::Mprotect;
    assert_eq!(probes, [Stage::Diffed, Stage::Enter(m), Stage::Exit(m), Stage::Reprotected]);
    let s = seg.stats();
    assert_eq!((s.read_traps, s.traps, s.reprotects, s.syncs, s.log_bytes), (1, 0, 1, 0, 0));
    assert_eq!(std::fs::read(seg.log_path()).expect("read log"), log_before, "the log is untouched");
    // The page read is PROT_NONE again: a read after the commit faults (served outside).
    assert_eq!(std::hint::black_box(seg.bytes()[2 * ps]), 0);
    assert_eq!(seg.stats().outside_reads, 1);
    // A writing commit ends with the re-protection too.
    let mut probes = Vec::new();
    let mut tx = seg.begin().expect("begin");
    tx.write(ps + 1, b"xy").expect("write");
    tx.commit_probed(|s| probes.push(s)).expect("commit");
    assert_eq!(probes.last(), Some(&Stage::Reprotected));
    assert_eq!(probes.iter().filter(|s| !s.is_crossing()).count(), 7);
    assert_eq!(&seg.bytes()[ps + 1..ps + 3], b"xy");
    assert_eq!(seg.stats().outside_reads, 2);
}

#[test]
fn read_only_commit_writes_nothing() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seg = new_segment(dir.path(), mprotect()).expect("segment");
    let log_before = std::fs::read(seg.log_path()).expect("read log");
    let c = seg.begin().expect("begin").commit().expect("commit");
    assert!(c.read_only());
    // Writing the bytes already there is read-only too: the diff finds nothing.
    let mut tx = seg.begin().expect("begin");
    tx.write(0, &[0; 16]).expect("write");
    let c = tx.commit().expect("commit");
    assert!(c.read_only());
    assert_eq!(c.dirty_pages, 1);
    let s = seg.stats();
    assert_eq!((s.commits, s.read_only_commits, s.log_bytes, s.syncs), (0, 2, 0, 0));
    assert_eq!(std::fs::read(seg.log_path()).expect("read log"), log_before, "the log is untouched");
}

/// Commits `data` at `offset` but stops at `point`, then drops the segment (as a crash would,
/// short of losing the page cache).
fn crash_commit(dir: &Path, offset: usize, data: &[u8], point: CrashPoint) -> usize {
    let mut seg = Segment::open(dir.join("seg"), mprotect()).expect("open");
    seg.inject_crash(point);
    let mut tx = seg.begin().expect("begin");
    tx.write(offset, data).expect("write");
    match tx.commit() {
        Err(Error::CrashInjected { log_bytes, .. }) => log_bytes,
        other => panic!("expected an injected crash, got {other:?}"),
    }
}

#[test]
fn torn_log_tail_is_ignored() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    drop(new_segment(dir.path(), mprotect()).expect("segment"));
    let full = crash_commit(dir.path(), 100, b"torn", CrashPoint::LogWrite { bytes: usize::MAX });
    for cut in [0, 1, 31, 32, 40, full - 1] {
        // Recreate the torn log by hand: a prefix of a complete transaction.
        let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("recover the full log");
        drop(seg);
        crash_commit(dir.path(), 200, b"TORN", CrashPoint::LogWrite { bytes: cut });
        let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("recover");
        assert_eq!(&seg.bytes()[200..204], &[0; 4], "cut at {cut}: the torn commit is not applied");
        assert_eq!(seg.recovery().transactions, 0);
        assert_eq!(logged(&seg), 0, "recovery empties the log");
    }
    let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("reopen");
    assert_eq!(&seg.bytes()[100..104], b"torn", "the complete (unsynced) write was replayed");
}

#[test]
fn reopen_replays_a_committed_but_unapplied_transaction() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    drop(new_segment(dir.path(), mprotect()).expect("segment"));
    crash_commit(dir.path(), 4090, b"across a page", CrashPoint::Apply { ranges: 0 });
    assert_eq!(&std::fs::read(dir.path().join("seg")).expect("read")[4090..4103], &[0; 13], "not applied yet");
    let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("recover");
    assert_eq!(&seg.bytes()[4090..4103], b"across a page");
    assert_eq!(seg.recovery().transactions, 1);
    assert_eq!(seg.recovery().bytes, 13);
    drop(seg);
    // A half-applied transaction is completed the same way.
    crash_commit(dir.path(), 0, &[1; 5000], CrashPoint::Apply { ranges: 1 });
    let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("recover");
    assert!(seg.bytes()[..5000].iter().all(|&b| b == 1));
}

#[test]
fn corrupted_checksum_voids_the_transaction() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    drop(new_segment(dir.path(), mprotect()).expect("segment"));
    crash_commit(dir.path(), 50, b"corrupt me", CrashPoint::Apply { ranges: 0 });
    let log = dir.path().join("seg.log");
    let mut bytes = std::fs::read(&log).expect("read log");
    bytes[log::HEADER + 3] ^= 0xFF; // a payload byte
    std::fs::write(&log, &bytes).expect("write log");
    let seg = Segment::open(dir.path().join("seg"), mprotect()).expect("recover");
    assert_eq!(&seg.bytes()[50..60], &[0; 10]);
    assert_eq!(seg.recovery().transactions, 0);
}

#[test]
fn poisoned_segment_refuses_new_transactions() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seg = new_segment(dir.path(), mprotect()).expect("segment");
    seg.inject_crash(CrashPoint::LogWrite { bytes: 0 });
    let mut tx = seg.begin().expect("begin");
    tx.write(0, b"x").expect("write");
    assert!(tx.commit().is_err());
    assert!(matches!(seg.begin(), Err(Error::Poisoned { .. })));
}

#[test]
fn out_of_bounds_writes_are_errors() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seg = new_segment(dir.path(), mprotect()).expect("segment");
    let size = seg.len();
    let mut tx = seg.begin().expect("begin");
    assert!(matches!(tx.write(size - 1, b"ab"), Err(Error::OutOfBounds { .. })));
    assert!(matches!(tx.write(usize::MAX, b"a"), Err(Error::OutOfBounds { .. })));
}

#[test]
fn bad_files_are_refused_with_their_path() {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join("odd");
    std::fs::write(&odd, [0u8; 100]).expect("write");
    let e = Segment::open(&odd, mprotect()).err().expect("refused");
    assert!(matches!(e, Error::BadSize { .. }), "{e}");
    assert!(e.to_string().contains("odd"));
    let e = Segment::open(dir.path().join("missing"), mprotect()).err().expect("refused");
    assert!(e.to_string().contains("missing"), "{e}");
    assert!(Segment::create(dir.path().join("zero"), 0, mprotect()).is_err());
    drop(new_segment(dir.path(), mprotect()).expect("segment"));
    assert!(matches!(new_segment(dir.path(), mprotect()), Err(Error::Create { .. })), "create does not overwrite");
}

#[test]
fn many_transactions_match_a_model() {
    for options in [mprotect(), tracking_all()] {
        many_transactions(options);
    }
}

fn many_transactions(options: Options) {
    let _serial = sys::testing::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut seg = new_segment(dir.path(), options).expect("segment");
    let mut model = vec![0u8; seg.len()];
    let mut x = 12345u64;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    for i in 0..60 {
        let mut tx = seg.begin().expect("begin");
        let mut pending = model.clone();
        for _ in 0..1 + next() % 4 {
            let len = 1 + next() % 300;
            let off = next() % (pending.len() - len);
            let byte = (next() % 256) as u8;
            tx.bytes_mut()[off..off + len].fill(byte);
            pending[off..off + len].fill(byte);
        }
        assert_eq!(tx.bytes(), pending.as_slice());
        if i % 5 == 0 {
            tx.abort();
        } else {
            tx.commit().expect("commit");
            model = pending;
        }
        assert_eq!(seg.bytes(), model.as_slice(), "transaction {i}");
    }
    drop(seg);
    assert_eq!(std::fs::read(dir.path().join("seg")).expect("read"), model);
}

/// The crossings every begin and commit report, per mode: begin one protect call; a read-only
/// commit none (read tracking: one `mprotect` per run of pages touched); a writing commit
/// `pwrite` log, `fdatasync` log, one `pwrite` per changed range, `fdatasync` file, `pwrite`
/// trim (read tracking: and the re-protection). No fault is taken inside either.
fn expected_crossings(dir: &Path, options: Options) -> Result<()> {
    let all = options.tracking == Tracking::All;
    let mut seg = new_segment(dir, options)?;
    let ps = seg.page_size();
    let s0 = seg.stats().syscalls;
    let sc = |syscalls| Crossings { syscalls, faults: 0 };
    let mut sum = 0u64;
    let mut add = |c: Crossings| sum += u64::from(c.syscalls);

    // Nothing touched.
    let tx = seg.begin()?;
    assert_eq!(tx.begin_crossings(), sc(1), "begin: one protect call");
    add(tx.begin_crossings());
    let c = tx.commit()?;
    assert_eq!(c.crossings, sc(0), "read-only commit, nothing touched");
    add(c.crossings);

    // One page read.
    let tx = seg.begin()?;
    add(tx.begin_crossings());
    std::hint::black_box(tx.bytes()[3 * ps]);
    let c = tx.commit()?;
    assert!(c.read_only());
    assert_eq!(c.crossings, sc(u32::from(all)), "read-only commit after a read");
    add(c.crossings);

    // 8 bytes on one page, the first time (the page is still the file's) and the second.
    for round in 0..2u8 {
        let mut tx = seg.begin()?;
        add(tx.begin_crossings());
        tx.write(ps + 64, &[round + 1; 8])?;
        let c = tx.commit()?;
        assert_eq!((c.records, c.bytes), (1, 8));
        assert_eq!(c.crossings, sc(5 + u32::from(all)), "8-byte commit, round {round}");
        add(c.crossings);
    }

    // Two ranges on two pages apart: one more pwrite; with read tracking two runs to re-protect.
    let mut tx = seg.begin()?;
    add(tx.begin_crossings());
    tx.write(10, b"a")?;
    tx.write(2 * ps + 10, b"b")?;
    let c = tx.commit()?;
    assert_eq!(c.records, 2);
    assert_eq!(c.crossings, sc(6 + 2 * u32::from(all)), "two ranges on two pages");
    add(c.crossings);
    let (faults, aborted) = (seg.stats().traps, seg.stats().syscalls);

    // Abort counts its re-protection in the totals, but reports nothing per operation.
    let mut tx = seg.begin()?;
    add(tx.begin_crossings());
    tx.write(20, b"z")?;
    tx.abort();
    assert_eq!(seg.stats().syscalls - aborted, 1 + u64::from(all), "begin + abort's re-protection");
    assert_eq!(seg.stats().traps, faults + 1);
    assert_eq!(aborted - s0 + 1, sum, "the totals are the operations' sums");
    Ok(())
}

/// Runs `test` on a new segment in a fresh directory in each mode: mprotect with write and with
/// read tracking, and uffd where the kernel allows it (tmpfs, then the temporary directory).
fn in_each_mode(test: fn(&Path, Options) -> Result<()>) {
    for options in [mprotect(), tracking_all()] {
        let dir = tempfile::tempdir().expect("tempdir");
        test(dir.path(), options).unwrap_or_else(|e| panic!("{options:?}: {e}"));
    }
    let uffd = Options { detection: Detection::Uffd, tracking: Tracking::Writes };
    let mut ran = false;
    for dir in [tempfile::tempdir_in("/dev/shm"), tempfile::tempdir()].iter().flatten() {
        match test(dir.path(), uffd) {
            Ok(()) => ran = true,
            Err(Error::Unavailable { .. }) => {}
            Err(e) => panic!("uffd: {e}"),
        }
    }
    if !ran {
        eprintln!("uffd write-protect unavailable here: not tested");
    }
}

#[test]
fn begin_and_commit_report_their_crossings_in_each_mode() {
    let _serial = sys::testing::serial();
    in_each_mode(expected_crossings);
}

/// The RVM's own count of each begin's and commit's system calls equals what the kernel saw
/// (counted by syscall user dispatch, independently of the RVM), in each mode, for the
/// benchmark's paths: begin; read-only commit (after a read); 8-byte commit; and the store's
/// write fault between them (its handler's `mprotect`, which is no part of either).
fn crossings_match_the_kernels(dir: &Path, options: Options) -> Result<()> {
    use sys::sud::count_syscalls;
    let all = options.tracking == Tracking::All;
    let mut seg = new_segment(dir, options)?;
    let ps = seg.page_size();
    // Warm: the page written is already private, buffers allocated (as in steady state).
    for i in 0..2u8 {
        let mut tx = seg.begin()?;
        tx.write(ps + 64, &[i + 1; 8])?;
        tx.commit()?;
    }
    if let Err(why) = count_syscalls(|| ()) {
        eprintln!("syscall user dispatch unavailable ({why}): not cross-checked");
        return Ok(());
    }
    let same = |what: &str, rvm: u32, kernel: u64, numbers: &[i64]| {
        assert_eq!(u64::from(rvm), kernel, "{options:?} {what}: the kernel saw calls {numbers:?}");
    };
    for round in 0..3u8 {
        // begin, a read, a read-only commit
        {
            let s = &mut seg;
            let begun = count_syscalls(move || {
                let s = s;
                s.begin()
            })
            .expect("counting");
            let sys::sud::Counted { value, syscalls, numbers } = begun;
            let tx = value?;
            same("begin", tx.begin_crossings().syscalls, syscalls, &numbers);
            std::hint::black_box(tx.bytes()[3 * ps]);
            let done = count_syscalls(move || tx.commit()).expect("counting");
            let c = done.value?;
            assert!(c.read_only() && c.crossings.faults == 0);
            same("read-only commit", c.crossings.syscalls, done.syscalls, &done.numbers);
        }

        // begin, the 8-byte store (its fault's handler counted apart), commit
        let mut tx = seg.begin()?;
        let before = tx.seg.stats();
        let store = count_syscalls(|| tx.write(ps + 64, &[round + 10; 8])).expect("counting");
        store.value?;
        let after = tx.seg.stats();
        assert_eq!(after.traps - before.traps, 1, "one write fault");
        let reads = u64::from(all && !sys::segv::access_kind_known());
        assert_eq!(after.read_traps - before.read_traps, reads);
        // The SIGSEGV handler's mprotect runs on this thread; userfaultfd's handler thread is
        // another (this thread only waits in the fault).
        let handler_calls = if options.detection == Detection::Uffd { 0 } else { 1 + reads };
        assert_eq!(store.syscalls, handler_calls, "the handler's mprotect: {:?}", store.numbers);
        let done = count_syscalls(move || tx.commit()).expect("counting");
        let c = done.value?;
        assert_eq!((c.records, c.crossings.faults), (1, 0));
        same("8-byte commit", c.crossings.syscalls, done.syscalls, &done.numbers);
        let (w, sync) = (libc::SYS_pwrite64, libc::SYS_fdatasync);
        let mut path = vec![w, sync, w, sync, w];
        if all {
            path.push(libc::SYS_mprotect);
        }
        assert_eq!(done.numbers, path, "log write, log sync, apply, segment sync, trim (, re-protect)");
    }
    Ok(())
}

#[test]
fn crossings_counted_by_the_rvm_are_the_kernels() {
    let _serial = sys::testing::serial();
    in_each_mode(crossings_match_the_kernels);
}

/// The probe's events with each system call's Enter/Exit pair folded into its call.
fn steps_and_calls(probes: &[Stage]) -> (Vec<Stage>, Vec<Call>, bool) {
    let (mut steps, mut calls, mut paired) = (Vec::new(), Vec::new(), true);
    let mut open = None;
    for &s in probes {
        match s {
            Stage::Enter(c) => {
                paired &= open.is_none();
                open = Some(c);
            }
            Stage::Exit(c) => {
                paired &= open == Some(c);
                open = None;
                calls.push(c);
            }
            s => {
                paired &= open.is_none();
                steps.push(s);
            }
        }
    }
    (steps, calls, paired && open.is_none())
}

#[test]
fn every_counted_system_call_is_probed_in_place() {
    let _serial = sys::testing::serial();
    for options in [mprotect(), tracking_all()] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut seg = new_segment(dir.path(), options).expect("segment");
        let ps = seg.page_size();
        let all = options.tracking == Tracking::All;
        // Begin: one protect call between Reset and Protected.
        let mut probes = Vec::new();
        let mut tx = seg.begin_probed(|s| probes.push(s)).expect("begin");
        let (steps, calls, paired) = steps_and_calls(&probes);
        assert!(paired, "{probes:?}");
        assert_eq!(steps, [Stage::Reset, Stage::Protected]);
        assert_eq!(calls, [Call::Mprotect]);
        assert_eq!(probes[1], Stage::Enter(Call::Mprotect), "the call lies between the steps");
        assert_eq!(calls.len() as u32, tx.begin_crossings().syscalls);
        // A writing commit: pwrite log, fdatasync log, pwrite apply (two ranges), fdatasync
        // segment, pwrite trim (and the re-protection, one run of pages).
        tx.write(8, b"ab").expect("write");
        tx.write(3 * ps, b"cd").expect("write");
        let mut probes = Vec::new();
        let c = tx.commit_probed(|s| probes.push(s)).expect("commit");
        let (steps, calls, paired) = steps_and_calls(&probes);
        assert!(paired, "{probes:?}");
        assert_eq!(calls.len() as u32, c.crossings.syscalls, "{probes:?}");
        let (p, f) = (Call::Pwrite, Call::Fdatasync);
        let mut want = vec![p, f, p, p, f, p];
        if all {
            // Pages 0 and 3 are not adjacent: two runs, two mprotects.
            want.extend([Call::Mprotect, Call::Mprotect]);
        }
        assert_eq!(calls, want);
        assert_eq!(steps.len(), 6 + usize::from(all));
        // Each call sits inside the step it belongs to: the log's fdatasync between LogWritten
        // and LogSynced.
        let at = |s: Stage| probes.iter().position(|&x| x == s).expect("step");
        let first_sync = probes.iter().position(|&x| x == Stage::Enter(f)).expect("sync");
        assert!(at(Stage::LogWritten) < first_sync && first_sync < at(Stage::LogSynced));
        // A read-only commit makes none (or, with read tracking, one per run touched).
        let tx = seg.begin().expect("begin");
        std::hint::black_box(tx.bytes()[ps]);
        let mut probes = Vec::new();
        let c = tx.commit_probed(|s| probes.push(s)).expect("commit");
        let (_, calls, paired) = steps_and_calls(&probes);
        assert!(paired);
        assert_eq!(calls.len() as u32, c.crossings.syscalls);
        assert_eq!(calls.len(), usize::from(all));
    }
}
