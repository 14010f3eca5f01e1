//! Crash test of `rvm`: a child process runs random transactions on a segment and is
//! killed with SIGKILL — after a random delay, or at an injected point inside a commit — and
//! the parent recovers the segment and checks it against a model.
//!
//! **The child** is this test binary re-executed (`child_process_entry`, selected with
//! `--exact`, told what to do through the `OSPRIM_RVM_CRASH_CHILD` environment variable): no
//! `fork` of a multi-threaded test harness. It opens (recovers) the segment, says `R`, then runs
//! transactions drawn from a seeded generator and reports on its stderr, one `write` per line:
//! `A k` (transaction k aborted), `B k` (its commit starts), `C k` (its commit returned), and,
//! at an injected crash, `T k old|new` (which state the injected point must leave) just before
//! it SIGKILLs itself.
//!
//! **The parent** regenerates the same transactions from the seed, so its model is the state
//! after the last commit the child reported as returned. After the child is dead and reaped,
//! it reopens the segment (recovery) and requires it to equal that state — or, if a commit had
//! started (`B k`) without returning (`C k`), the state after transaction k; nothing else. An
//! injected crash must leave exactly the state it names. The log must be empty after recovery.
//!
//! **Kills.** Two rounds in three: SIGKILL 0–40 ms after the child is ready (most land inside a
//! commit, whose two `fdatasync`s dominate its time). One in three: a crash injected in the
//! first commit at or after a random transaction — a torn log write of a random length
//! ([`CrashPoint::LogWrite`]), a partial apply ([`CrashPoint::Apply`]), or SIGKILL from the
//! commit's probe at a random [`Stage`].
//!
//! **Modes.** Both tracking modes of mprotect detection run the full count of rounds: writes
//! only (`Tracking::Writes`) and reads too (`Tracking::All`, where each transaction also reads
//! a few bytes, so pages are read-trapped, written after a read, and re-protected at commit and
//! abort; the parent's reads of the recovered segment are reads outside a transaction). The
//! uffd variant (writes only: uffd cannot track reads) runs a fifth of them on tmpfs, where the
//! kernel allows userfaultfd write-protect on file memory.
//!
//! Rounds per mode: `OSPRIM_RVM_CRASH_ROUNDS`, else 500 (CI included: a round takes a few ms
//! to tens of ms, most of it the random delay before the kill, so 500 rounds are well under a
//! minute per mode on two cores).

use rvm::{CrashPoint, Detection, Error, Options, Segment, Stage, Tracking};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "OSPRIM_RVM_CRASH_CHILD";
const PAGES: usize = 8;
/// A child that is never killed stops after this many transactions.
const MAX_TXNS: u64 = 20_000;
/// How long the parent waits for a child to get ready or to die of an injected crash.
const PATIENCE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// The transactions, drawn the same way by child and parent

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One transaction: reads of single bytes, writes (offset, bytes) in order, then commit or
/// abort.
struct Txn {
    reads: Vec<usize>,
    writes: Vec<(usize, Vec<u8>)>,
    abort: bool,
}

/// 0–2 one-byte reads (they change nothing; with read tracking they trap), then 0–3 writes (0:
/// a read-only commit), mostly short, some over a page boundary or longer than a page; 15 %
/// aborted.
fn draw_txn(rng: &mut Rng, size: usize, page: usize) -> Txn {
    let reads = (0..rng.below(3)).map(|_| rng.below(size as u64) as usize).collect();
    let n = rng.below(4);
    let writes = (0..n)
        .map(|_| {
            let len = match rng.below(20) {
                0 => 1 + rng.below(2 * page as u64) as usize,
                1..=5 => 65 + rng.below(600) as usize,
                _ => 1 + rng.below(64) as usize,
            };
            let off = rng.below((size - len + 1) as u64) as usize;
            let bytes = (0..len).map(|_| rng.next() as u8).collect();
            (off, bytes)
        })
        .collect();
    Txn { reads, writes, abort: rng.below(100) < 15 }
}

fn apply(state: &[u8], txn: &Txn) -> Vec<u8> {
    let mut s = state.to_vec();
    for (off, bytes) in &txn.writes {
        s[*off..*off + bytes.len()].copy_from_slice(bytes);
    }
    s
}

/// Where a child crashes on purpose.
#[derive(Clone, Copy, Debug)]
enum Inject {
    /// Torn log write of this many bytes.
    Log(usize),
    /// Partial apply of this many ranges.
    Apply(usize),
    /// SIGKILL from the probe at this stage.
    Stage(Stage),
}

const STAGES: [Stage; 6] =
    [Stage::Diffed, Stage::LogWritten, Stage::LogSynced, Stage::Applied, Stage::SegmentSynced, Stage::Trimmed];

impl Inject {
    fn draw(rng: &mut Rng) -> Inject {
        match rng.below(3) {
            0 => Inject::Log(rng.below(700) as usize),
            1 => Inject::Apply(rng.below(3) as usize),
            _ => Inject::Stage(STAGES[rng.below(STAGES.len() as u64) as usize]),
        }
    }

    fn encode(self) -> String {
        match self {
            Inject::Log(n) => format!("log:{n}"),
            Inject::Apply(n) => format!("apply:{n}"),
            Inject::Stage(s) => format!("stage:{}", STAGES.iter().position(|x| *x == s).unwrap_or(0)),
        }
    }

    fn decode(s: &str) -> Option<Inject> {
        let (kind, n) = s.split_once(':')?;
        let n: usize = n.parse().ok()?;
        match kind {
            "log" => Some(Inject::Log(n)),
            "apply" => Some(Inject::Apply(n)),
            "stage" => STAGES.get(n).map(|s| Inject::Stage(*s)),
            _ => None,
        }
    }
}

/// What the parent tells a child.
struct Spec {
    path: PathBuf,
    options: Options,
    seed: u64,
    /// Crash in the first commit at or after this transaction.
    inject: Option<(u64, Inject)>,
}

impl Spec {
    fn encode(&self) -> String {
        let inject = self.inject.map_or("none".to_string(), |(k, i)| format!("{k}@{}", i.encode()));
        let o = self.options;
        format!("{}|{}|{}|{}|{}", o.detection, o.tracking, self.seed, inject, self.path.display())
    }

    fn decode(s: &str) -> Option<Spec> {
        let mut parts = s.splitn(5, '|');
        let detection = Detection::from_name(parts.next()?)?;
        let tracking = Tracking::from_name(parts.next()?)?;
        let seed = parts.next()?.parse().ok()?;
        let inject = match parts.next()? {
            "none" => None,
            i => {
                let (k, what) = i.split_once('@')?;
                Some((k.parse().ok()?, Inject::decode(what)?))
            }
        };
        Some(Spec { path: parts.next()?.into(), options: Options { detection, tracking }, seed, inject })
    }
}

// ---------------------------------------------------------------------------------------------
// The child

/// Not a test: the child side of the crash tests, which start this binary with only this test
/// selected. Without `OSPRIM_RVM_CRASH_CHILD` it does nothing.
#[test]
fn child_process_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let spec = Spec::decode(&spec).expect("a valid child spec");
    run_child(&spec);
}

fn say(line: &str) {
    // One write(2) per line: a kill never leaves half a line.
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn die() -> ! {
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    unreachable!("SIGKILL returned");
}

fn run_child(spec: &Spec) {
    let mut seg = Segment::open(&spec.path, spec.options).expect("child opens the segment");
    let (size, page) = (seg.len(), seg.page_size());
    let mut rng = Rng(spec.seed);
    say("R");
    for k in 0..MAX_TXNS {
        let txn = draw_txn(&mut rng, size, page);
        let inject = spec.inject.filter(|(at, _)| k >= *at).map(|(_, i)| i);
        match inject {
            Some(Inject::Log(bytes)) => seg.inject_crash(CrashPoint::LogWrite { bytes }),
            Some(Inject::Apply(ranges)) => seg.inject_crash(CrashPoint::Apply { ranges }),
            _ => {}
        }
        let mut tx = seg.begin().expect("begin");
        for &off in &txn.reads {
            std::hint::black_box(tx.bytes()[off]);
        }
        for (off, bytes) in &txn.writes {
            tx.bytes_mut()[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        if txn.abort {
            tx.abort();
            say(&format!("A {k}"));
            continue;
        }
        say(&format!("B {k}"));
        let r = tx.commit_probed(|stage| {
            if let Some(Inject::Stage(s)) = inject
                && s == stage
            {
                say(&format!("T {k} {}", if stage == Stage::Diffed { "old" } else { "new" }));
                die();
            }
        });
        match r {
            Ok(_) => say(&format!("C {k}")),
            Err(Error::CrashInjected { point, log_bytes }) => {
                let torn = matches!(point, CrashPoint::LogWrite { bytes } if bytes < log_bytes);
                say(&format!("T {k} {}", if torn { "old" } else { "new" }));
                die();
            }
            Err(e) => panic!("commit {k} failed: {e}"),
        }
    }
    say("X");
}

// ---------------------------------------------------------------------------------------------
// The parent

/// Kills and reaps the child if the parent leaves early (a failed assertion).
struct ChildGuard(Option<Child>);

impl ChildGuard {
    fn kill_and_reap(&mut self) -> Option<std::process::ExitStatus> {
        let mut c = self.0.take()?;
        let _ = c.kill();
        c.wait().ok()
    }

    /// Waits for the child to exit by itself, up to `patience`; then kills it.
    fn reap_within(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < patience {
            match self.0.as_mut()?.try_wait() {
                Ok(Some(status)) => {
                    self.0 = None;
                    return Some(status);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                Err(_) => break,
            }
        }
        self.kill_and_reap()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

fn spawn_child(spec: &Spec) -> (ChildGuard, Receiver<String>, std::thread::JoinHandle<()>) {
    let exe = std::env::current_exe().expect("the test binary's path");
    // The test's name in the harness: its module path without the binary's name.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let entry = format!("{module}::child_process_entry");
    let mut child = Command::new(exe)
        .args([entry.as_str(), "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(CHILD_ENV, spec.encode())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let stderr = child.stderr.take().expect("piped stderr");
    let (tx, rx) = channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (ChildGuard(Some(child)), rx, reader)
}

/// The states recovery may legitimately produce, from what the child said.
struct Expectation {
    /// The state after the last commit that returned.
    committed: Vec<u8>,
    /// The state after the commit in flight when the child died, if any.
    in_flight: Option<Vec<u8>>,
    /// Which of the two an injected crash must leave (`Some(true)`: the new one).
    injected_new: Option<bool>,
}

/// Replays the child's reports against the model. `Err` on a report that makes no sense.
fn expectation(state: &[u8], seed: u64, lines: &[String], page: usize) -> Result<Expectation, String> {
    let mut rng = Rng(seed);
    let mut e = Expectation { committed: state.to_vec(), in_flight: None, injected_new: None };
    let mut next = 0u64;
    let mut current: Option<Txn> = None;
    for line in lines {
        let mut words = line.split(' ');
        let (tag, k) = (words.next().unwrap_or(""), words.next().and_then(|k| k.parse::<u64>().ok()));
        match (tag, k) {
            ("R" | "X", _) => continue,
            (_, Some(k)) => {
                while next <= k {
                    current = Some(draw_txn(&mut rng, state.len(), page));
                    next += 1;
                }
                let txn = current.as_ref().ok_or("no transaction drawn")?;
                match tag {
                    "A" => {}
                    "B" => e.in_flight = Some(apply(&e.committed, txn)),
                    "C" => e.committed = e.in_flight.take().ok_or(format!("C {k} without B {k}"))?,
                    "T" => e.injected_new = Some(words.next() == Some("new")),
                    _ => return Err(format!("unexpected report {line:?}")),
                }
            }
            _ => return Err(format!("unexpected output from the child: {line:?}")),
        }
    }
    Ok(e)
}

/// What a round saw, for the summary.
#[derive(Default)]
struct Tally {
    commits: u64,
    aborts: u64,
    in_flight_applied: u64,
    in_flight_lost: u64,
    injected: u64,
}

/// Checks the recovered state against the expectation and counts what happened.
fn judge(recovered: &[u8], e: Expectation, tally: &mut Tally) -> Result<(), String> {
    let old_ok = recovered == e.committed.as_slice();
    let new_ok = e.in_flight.as_deref() == Some(recovered);
    if e.in_flight.is_some() && old_ok != new_ok {
        if new_ok { tally.in_flight_applied += 1 } else { tally.in_flight_lost += 1 }
    }
    tally.injected += u64::from(e.injected_new.is_some());
    match e.injected_new {
        Some(true) if new_ok => Ok(()),
        Some(false) if old_ok => Ok(()),
        Some(new) => Err(format!("the injected crash must leave the {} state", if new { "new" } else { "old" })),
        None if old_ok || new_ok => Ok(()),
        None => {
            let first = recovered.iter().zip(&e.committed).position(|(a, b)| a != b).unwrap_or(0);
            Err(format!(
                "recovered state is neither the last committed one nor the one in flight (first difference from the committed state at byte {first}; commit in flight: {})",
                e.in_flight.is_some()
            ))
        }
    }
}

/// One round: run a child, kill it, recover, check. Returns the recovered state.
fn round(
    path: &Path,
    options: Options,
    state: &[u8],
    rng: &mut Rng,
    page: usize,
    tally: &mut Tally,
) -> Result<Vec<u8>, String> {
    let seed = rng.next();
    let inject = (rng.below(3) == 0).then(|| (rng.below(6), Inject::draw(rng)));
    let delay = Duration::from_micros(rng.below(40_000));
    let spec = Spec { path: path.to_path_buf(), options, seed, inject };
    let what = format!("seed {seed:#x}, inject {inject:?}, delay {delay:?}");
    let (mut child, rx, reader) = spawn_child(&spec);
    let mut lines = Vec::new();
    match rx.recv_timeout(PATIENCE) {
        Ok(l) if l == "R" => lines.push(l),
        Ok(l) => return Err(format!("{what}: child did not get ready: {l}")),
        Err(RecvTimeoutError::Timeout) => return Err(format!("{what}: child not ready within {PATIENCE:?}")),
        Err(RecvTimeoutError::Disconnected) => return Err(format!("{what}: child died before getting ready")),
    }
    if inject.is_none() {
        std::thread::sleep(delay);
        child.kill_and_reap();
    } else {
        child.reap_within(PATIENCE);
    }
    let _ = reader.join();
    lines.extend(rx.try_iter());
    let e = expectation(state, seed, &lines, page).map_err(|m| format!("{what}: {m}"))?;
    let seg = Segment::open(path, options).map_err(|m| format!("{what}: recovery failed: {m}"))?;
    let logged = seg.logged_transactions().map_err(|m| m.to_string())?;
    if logged != 0 {
        return Err(format!("{what}: the log still holds {logged} transactions after recovery"));
    }
    tally.commits += lines.iter().filter(|l| l.starts_with("C ")).count() as u64;
    tally.aborts += lines.iter().filter(|l| l.starts_with("A ")).count() as u64;
    judge(seg.bytes(), e, tally).map_err(|m| format!("{what}: {m}; child said {lines:?}"))?;
    Ok(seg.bytes().to_vec())
}

/// Rounds per mode: `OSPRIM_RVM_CRASH_ROUNDS`, else 500.
fn rounds_setting() -> usize {
    std::env::var("OSPRIM_RVM_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(500)
}

/// Runs `rounds` rounds on a fresh segment in `dir`.
fn crash_rounds(dir: &Path, options: Options, rounds: usize) -> Result<(), String> {
    let path = dir.join("crash.seg");
    let seg = match Segment::create(&path, PAGES, options) {
        Ok(s) => s,
        Err(e @ Error::Unavailable { .. }) => {
            eprintln!("skipped: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.to_string()),
    };
    let (mut state, page) = (seg.bytes().to_vec(), seg.page_size());
    drop(seg);
    let mut rng = Rng(0x05_1213 ^ rounds as u64);
    let start = Instant::now();
    let mut t = Tally::default();
    for r in 0..rounds {
        state = round(&path, options, &state, &mut rng, page, &mut t).map_err(|m| format!("round {r}: {m}"))?;
    }
    eprintln!(
        "{rounds} crash rounds ({}, tracking {}, {}) in {:.1} s: {} commits returned, {} aborts; killed in a commit \
         {} times (recovered applied {}, not applied {}); {} injected crashes",
        options.detection,
        options.tracking,
        rvm::filesystem_of(dir).kind,
        start.elapsed().as_secs_f64(),
        t.commits,
        t.aborts,
        t.in_flight_applied + t.in_flight_lost,
        t.in_flight_applied,
        t.in_flight_lost,
        t.injected,
    );
    Ok(())
}

#[test]
fn recovery_after_sigkill_matches_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options { detection: Detection::Mprotect, tracking: Tracking::Writes };
    if let Err(m) = crash_rounds(dir.path(), options, rounds_setting()) {
        panic!("{m}");
    }
}

#[test]
fn recovery_after_sigkill_matches_the_model_tracking_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options { detection: Detection::Mprotect, tracking: Tracking::All };
    if let Err(m) = crash_rounds(dir.path(), options, rounds_setting()) {
        panic!("{m}");
    }
}

#[test]
fn recovery_after_sigkill_matches_the_model_uffd_on_tmpfs() {
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: no /dev/shm");
        return;
    };
    let options = Options { detection: Detection::Uffd, tracking: Tracking::Writes };
    if let Err(m) = crash_rounds(dir.path(), options, rounds_setting().div_ceil(5)) {
        panic!("{m}");
    }
}
