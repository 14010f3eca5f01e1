//! The second half of the error test: system calls with random numbers and random register
//! arguments, made by a child confined in [`sys::sandbox`] (a seccomp allow-list, no
//! privileges, its own scratch directory and memory). The child counts its calls and their
//! results in memory shared with the parent (no descriptor the random calls could close or
//! write into); the parent watches it: a child whose count stops for [`HANG`] is a hang,
//! killed and replaced; one that dies is a crash, counted by signal and replaced; each child
//! is replaced after [`CHUNK`] anyway (a fresh process, the next seed of the chain).

use super::Tallies;
use stats::rng::{Rng, derive_seed};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use sys::process::Child;
use sys::reap::Reaped;
use sys::sandbox::{self, Config, Limits, Stage};
use sys::shm::SharedMem;

/// A child whose call count stops this long is hung.
pub(crate) const HANG: Duration = Duration::from_secs(3);
/// A child is replaced after this long.
pub(crate) const CHUNK: Duration = Duration::from_secs(5);
/// The child's interval timer (interrupts a blocking call).
pub(crate) const ALARM: Duration = Duration::from_millis(1);
/// Read-write scratch memory of the child.
pub(crate) const SCRATCH_BYTES: usize = 1 << 20;
/// Address space the child may add to what it inherits.
pub(crate) const EXTRA_AS: u64 = 128 << 20;
/// The child's limits besides the address space.
pub(crate) const CPU_S: u64 = 30;
pub(crate) const NOFILE: u64 = 64;
pub(crate) const FSIZE: u64 = 1 << 20;

/// Invariant names of this half.
pub(crate) const INV_ESCAPE: &str =
    "the sandboxed child never escapes: every call outside the allow-list is refused by the filter (ENOSYS)";
pub(crate) const INV_CONFINED: &str =
    "every sandboxed child runs confined before its first call: seccomp filter, no new privileges, not root";
pub(crate) const INV_OUTSIDE: &str = "nothing outside the scratch directory changes (a canary file and its directory)";

// The shared board's slots.
const STATE: usize = 0; // 0 starting, 1 calling, 100 + stage: setup failed
const SETUP_ERRNO: usize = 1;
const UID: usize = 2;
const CALLS: usize = 3;
const CUR_INDEX: usize = 4;
const CUR_NR: usize = 5;
const CUR_ARGS: usize = 6; // 6 words
const ESCAPES: usize = 12;
const ESCAPE_NR: usize = 13;
const ESCAPE_RET: usize = 14;
const ESCAPE_INDEX: usize = 15;
const WITHHELD: usize = 16;
const OK: usize = 17;
const UNLISTED: usize = 18;
const EXEMPT: usize = 19;
const NR_BASE: usize = 32;
const NR_BINS: usize = 512; // bin NR_BINS: any other number
const ERR_BASE: usize = NR_BASE + NR_BINS + 1;
const ERR_BINS: usize = 256; // bin ERR_BINS: any other errno
const SLOTS: usize = ERR_BASE + ERR_BINS + 1;

/// The random system calls: a seeded generator of numbers and register arguments.
#[derive(Clone, Debug)]
pub(crate) struct Gen {
    rng: Rng,
    base: u64,
    len: u64,
}

/// One generated call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Call {
    pub nr: i64,
    pub args: [u64; 6],
}

/// Whether the generator leaves `nr` out: the child would end itself, return from a signal
/// frame that is not there, or die of `uretprobe` outside a trampoline (which no filter sees,
/// [`sandbox::FILTER_EXEMPT`]).
fn ends_process(nr: i64) -> bool {
    nr == libc::SYS_exit
        || nr == libc::SYS_exit_group
        || nr == libc::SYS_rt_sigreturn
        || nr == sandbox::FILTER_EXEMPT[0]
}

/// Edge values of registers: as ints (the low 32 bits), sizes and (invalid) addresses.
const EDGES: [u64; 24] = [
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    16,
    64,
    255,
    256,
    4095,
    4096,
    65535,
    65536,
    1 << 20,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    i64::MAX as u64,
    u64::MAX,
    (-4095i64) as u64,
    i64::MIN as u64,
];

impl Gen {
    /// The generator of child `chunk` of a run seeded `seed`, over scratch memory at `base`.
    pub(crate) fn new(seed: u64, chunk: u64) -> Gen {
        Gen { rng: Rng::new(derive_seed(seed, 0x5ca1_0000 + chunk)), base: 0, len: 0 }
    }

    /// Aims the pointers at the scratch memory (`len` read-write bytes at `base`, as many
    /// inaccessible after).
    pub(crate) fn set_scratch(&mut self, base: u64, len: u64) {
        (self.base, self.len) = (base, len);
    }

    /// A number: three in four from the allow-list, else any (mostly refused by the filter).
    fn nr(&mut self) -> i64 {
        let list = sandbox::allow_list();
        if !list.is_empty() && self.rng.below(4) != 0 {
            let mut i = self.rng.index(list.len());
            while ends_process(list[i].nr) {
                i = (i + 1) % list.len();
            }
            return list[i].nr;
        }
        let nr = match self.rng.below(16) {
            0 => -1,
            1 => 0x4000_0000 | self.rng.below(600) as i64, // the x32 ABI's numbers
            2 => self.rng.next_u64() as i64,
            _ => self.rng.below(470) as i64,
        };
        if ends_process(nr) { 1000 } else { nr }
    }

    /// A register's value.
    fn arg(&mut self) -> u64 {
        let page = sys::fault::page_size() as u64;
        match self.rng.below(20) {
            0..=5 => self.rng.below(64),
            6..=10 => EDGES[self.rng.index(EDGES.len())],
            11..=14 => self.base + page * self.rng.below((self.len / page).max(1)) + 8 * self.rng.below(4),
            15 => match self.rng.below(3) {
                0 => self.base + self.len - 8,
                1 => self.base + self.len,
                _ => self.base + 2 * self.len - 1,
            },
            16 => 0xffff_8000_0000_0000 | self.rng.next_u64(),
            17 => (-(self.rng.below(4096) as i64)) as u64,
            _ => self.rng.next_u64(),
        }
    }

    /// The next call.
    pub(crate) fn next_call(&mut self) -> Call {
        let nr = self.nr();
        let args = [self.arg(), self.arg(), self.arg(), self.arg(), self.arg(), self.arg()];
        Call { nr, args }
    }
}

/// The child: confines itself, then calls for ever (the parent ends it).
fn child_body(cfg: &Config, board: &SharedMem, mut generator: Gen, abort_after: Option<u64>) -> i32 {
    let set = |slot: usize, v: u64| board.u64(slot).store(v, Ordering::Relaxed);
    let add = |slot: usize| board.u64(slot).fetch_add(1, Ordering::Relaxed);
    let jail = match sandbox::enter(cfg) {
        Ok(j) => j,
        Err(e) => {
            set(SETUP_ERRNO, e.errno as u64);
            set(STATE, 100 + e.stage.code());
            return 3;
        }
    };
    set(UID, jail.call(libc::SYS_getuid, [0; 6]).unwrap_or(-1) as u64);
    let (base, len) = jail.scratch();
    generator.set_scratch(base, len);
    set(STATE, 1);
    let nosys = -i64::from(libc::ENOSYS);
    for index in 0u64.. {
        let mut c = generator.next_call();
        set(CUR_INDEX, index);
        set(CUR_NR, c.nr as u64);
        for (i, a) in c.args.iter().enumerate() {
            set(CUR_ARGS + i, *a);
        }
        // An argument the kernel would write through that could be the child's own memory
        // is withheld: replaced by the scratch memory's base. A number the jail refuses
        // (rt_sigreturn, which the generator leaves out) is not made.
        let ret = loop {
            match jail.call(c.nr, c.args) {
                Ok(r) => break Some(r),
                Err(sandbox::Unsafe::Argument { index, .. }) => {
                    add(WITHHELD);
                    c.args[index] = base;
                }
                Err(sandbox::Unsafe::Number(_)) => {
                    add(WITHHELD);
                    break None;
                }
            }
        };
        let Some(ret) = ret else { continue };
        if abort_after.is_some_and(|n| index >= n) {
            std::process::abort();
        }
        add(NR_BASE + usize::try_from(c.nr).ok().filter(|&n| n < NR_BINS).unwrap_or(NR_BINS));
        if (-4095..0).contains(&ret) {
            add(ERR_BASE + ((-ret) as usize).min(ERR_BINS));
        } else {
            add(OK);
        }
        let exempt = sandbox::FILTER_EXEMPT.contains(&c.nr);
        if exempt {
            add(EXEMPT);
        }
        if sandbox::allowed(c.nr).is_none() {
            add(UNLISTED);
            // A number the kernel exempts from filters must still fail (it reaches nothing).
            let refused = if exempt { ret < 0 } else { ret == nosys };
            if !refused && board.u64(ESCAPES).fetch_add(1, Ordering::Relaxed) == 0 {
                set(ESCAPE_NR, c.nr as u64);
                set(ESCAPE_RET, ret as u64);
                set(ESCAPE_INDEX, index);
            }
        }
        add(CALLS);
    }
    0
}

/// Faults a test injects into the children.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChildFaults {
    /// Numbers the filter lets through beside its list.
    pub(crate) leak: Vec<i64>,
    /// The child's interval timer instead of [`ALARM`] (a long one lets a call block).
    pub(crate) alarm: Option<Duration>,
    /// The child aborts after this many calls.
    pub(crate) abort_after: Option<u64>,
}

/// A running child and its board.
struct Running {
    child: Child,
    board: SharedMem,
    chunk: u64,
    started: Instant,
    beat: u64,
    beat_at: Instant,
    verified: bool,
}

/// The second half's state, in the parent.
pub(crate) struct Syscalls {
    seed: u64,
    scratch: tempfile::TempDir,
    canary_dir: tempfile::TempDir,
    canary: PathBuf,
    canary_seen: (Vec<u8>, Option<std::time::SystemTime>, Vec<std::ffi::OsString>),
    root: bool,
    limits: Limits,
    faults: ChildFaults,
    running: Option<Running>,
    next_chunk: u64,
    /// Why the half stopped (setup refused: the sandbox cannot be built here).
    pub(crate) stopped: Option<String>,
    /// Calls made, by all children.
    pub(crate) calls: u64,
    /// Children started.
    pub(crate) children: u64,
    /// Pids of every child started (to check none is left).
    pub(crate) pids: Vec<i32>,
}

impl Syscalls {
    /// The scratch directory (owned by nobody when root) and the canary outside it.
    pub(crate) fn new(seed: u64, faults: ChildFaults) -> anyhow::Result<Syscalls> {
        let scratch = tempfile::Builder::new().prefix("osprim-errortest-scratch-").tempdir()?;
        let canary_dir = tempfile::Builder::new().prefix("osprim-errortest-canary-").tempdir()?;
        let root = sys::sandbox::is_root();
        if root {
            std::os::unix::fs::chown(scratch.path(), Some(sandbox::NOBODY), Some(sandbox::NOBODY))?;
        }
        let canary = canary_dir.path().join("canary");
        std::fs::write(&canary, format!("osprim errortest canary, seed {seed}\n"))?;
        let vm = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmSize:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
            .unwrap_or(4 << 20);
        let limits = Limits { cpu_s: CPU_S, address_space: vm * 1024 + EXTRA_AS, nofile: NOFILE, fsize: FSIZE };
        let mut s = Syscalls {
            seed,
            scratch,
            canary_dir,
            canary,
            canary_seen: (Vec::new(), None, Vec::new()),
            root,
            limits,
            faults,
            running: None,
            next_chunk: 0,
            stopped: None,
            calls: 0,
            children: 0,
            pids: Vec::new(),
        };
        s.canary_seen = s.look_outside();
        Ok(s)
    }

    fn look_outside(&self) -> (Vec<u8>, Option<std::time::SystemTime>, Vec<std::ffi::OsString>) {
        let bytes = std::fs::read(&self.canary).unwrap_or_default();
        let mtime = std::fs::metadata(&self.canary).and_then(|m| m.modified()).ok();
        let mut names: Vec<_> = std::fs::read_dir(self.canary_dir.path())
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
            .unwrap_or_default();
        names.sort();
        (bytes, mtime, names)
    }

    /// The canary and its directory are as they were.
    pub(crate) fn check_outside(&self, t: &mut Tallies) -> Result<(), String> {
        t.invariant(INV_OUTSIDE);
        let now = self.look_outside();
        if now != self.canary_seen {
            t.blame(INV_OUTSIDE);
            return Err(format!("outside the scratch directory, {} changed", self.canary_dir.path().display()));
        }
        Ok(())
    }

    /// The scratch directory.
    pub(crate) fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    fn start(&mut self) -> anyhow::Result<()> {
        let chunk = self.next_chunk;
        self.next_chunk += 1;
        let board = SharedMem::new(SLOTS)?;
        let generator = Gen::new(self.seed, chunk);
        let dir = self.scratch.path().to_path_buf();
        let cfg = Config {
            scratch_dir: &dir,
            scratch_bytes: SCRATCH_BYTES,
            limits: self.limits,
            alarm: self.faults.alarm.unwrap_or(ALARM),
            parent: std::process::id() as i32,
            leak: &self.faults.leak,
        };
        let abort_after = self.faults.abort_after;
        let child = sys::process::fork_peer(|| child_body(&cfg, &board, generator, abort_after))?;
        self.children += 1;
        self.pids.push(child.pid());
        let now = Instant::now();
        self.running = Some(Running { child, board, chunk, started: now, beat: 0, beat_at: now, verified: false });
        Ok(())
    }

    /// Looks at the child (starting one if none runs): counts, confinement, escapes, hangs,
    /// deaths. `Err` on a violation.
    pub(crate) fn poll(&mut self, t: &mut Tallies) -> Result<(), String> {
        if self.stopped.is_some() {
            return Ok(());
        }
        if self.running.is_none()
            && let Err(e) = self.start()
        {
            self.stopped = Some(format!("the sandboxed child could not be started: {e}"));
            return Ok(());
        }
        let now = Instant::now();
        let r = self.running.as_mut().expect("a running child");
        let b = |slot: usize| r.board.u64(slot).load(Ordering::Relaxed);
        let escapes = b(ESCAPES);
        if escapes > 0 {
            let (nr, ret, index) = (b(ESCAPE_NR) as i64, b(ESCAPE_RET) as i64, b(ESCAPE_INDEX));
            let chunk = r.chunk;
            self.finish(t, false);
            t.blame(INV_ESCAPE);
            return Err(format!(
                "the sandboxed child escaped: system call {nr} (not on the allow-list) returned {ret}, not -ENOSYS (child {chunk}, call {index})"
            ));
        }
        let state = b(STATE);
        if state >= 100 {
            let stage = Stage::from_code(state - 100);
            let errno = b(SETUP_ERRNO) as i32;
            self.finish(t, false);
            let what = sandbox::SetupError { stage: stage.unwrap_or(Stage::Filter), errno };
            self.stopped = Some(format!(
                "the system-call half did not run: the sandbox could not be built ({what}); it never runs unconfined"
            ));
            return Ok(());
        }
        if state == 1 && !r.verified {
            t.invariant(INV_CONFINED);
            let status = std::fs::read_to_string(format!("/proc/{}/status", r.child.pid())).unwrap_or_default();
            let field = |name: &str| {
                status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.split_whitespace().collect::<Vec<_>>())
            };
            let uid = b(UID) as i64;
            let uids = field("Uid:").unwrap_or_default();
            let confined = field("Seccomp:").is_some_and(|v| v == ["2"])
                && field("NoNewPrivs:").is_some_and(|v| v == ["1"])
                && uid > 0
                && (!self.root || uid == i64::from(sandbox::NOBODY))
                && uids.len() == 4
                && uids.iter().all(|u| *u != "0");
            if !confined && !r.child.has_ended() {
                let pid = r.child.pid();
                self.finish(t, false);
                t.blame(INV_CONFINED);
                return Err(format!("sandboxed child {pid} is not confined: uid {uid}, status {status:?}"));
            }
            r.verified = true;
        }
        let calls = b(CALLS);
        if calls != r.beat {
            r.beat = calls;
            r.beat_at = now;
        }
        if r.child.has_ended() {
            self.finish(t, true);
        } else if now.duration_since(r.beat_at) > HANG {
            let (nr, index) = (b(CUR_NR) as i64, b(CUR_INDEX));
            t.note(format!("hang: child {} stopped at its call {index} ({}); killed", r.chunk, call_name(nr)));
            t.result("syscall: hang (killed)");
            self.finish(t, false);
        } else if now.duration_since(r.started) > CHUNK {
            self.finish(t, false);
            t.result("syscall: child replaced after its chunk");
        }
        Ok(())
    }

    /// Ends the running child (killing it unless `ended`), and adds its board to the tallies.
    pub(crate) fn finish(&mut self, t: &mut Tallies, ended: bool) {
        let Some(mut r) = self.running.take() else { return };
        let how = if ended { r.child.finish(Duration::from_secs(1)) } else { r.child.kill_and_reap() };
        let b = |slot: usize| r.board.u64(slot).load(Ordering::Relaxed);
        if ended && b(STATE) < 100 {
            // It died by itself: a crash.
            let what = match how {
                Reaped::Signaled { signal, .. } => signal_name(signal),
                Reaped::Exited(code) => format!("exit {code}"),
                Reaped::Lost(e) => format!("lost ({e})"),
            };
            t.note(format!(
                "child {} died ({what}) at its call {} ({})",
                r.chunk,
                b(CUR_INDEX),
                call_name(b(CUR_NR) as i64)
            ));
            t.result(&format!("syscall: child died ({what})"));
        }
        for nr in 0..=NR_BINS {
            let n = b(NR_BASE + nr);
            if n > 0 {
                let name = match sandbox::allowed(nr as i64) {
                    Some(a) if nr < NR_BINS => a.name.trim_start_matches("SYS_"),
                    _ => "unlisted",
                };
                t.op_n(&format!("syscall.{name}"), n);
            }
        }
        for e in 1..=ERR_BINS {
            let n = b(ERR_BASE + e);
            if n > 0 {
                let name = if e == ERR_BINS { "other errno".to_string() } else { errno_name(e as i32) };
                t.result_n(&name, n);
            }
        }
        t.result_n("syscall: ok", b(OK));
        t.result_n("syscall: argument withheld (could be the child's own memory)", b(WITHHELD));
        t.result_n("syscall: exempt from the filter by the kernel (uprobe), failed", b(EXEMPT));
        t.invariant_n(INV_ESCAPE, b(UNLISTED));
        self.calls += b(CALLS);
    }

    /// Calls made by the running child so far (not yet in [`Syscalls::calls`]).
    pub(crate) fn running_calls(&self) -> u64 {
        self.running.as_ref().map_or(0, |r| r.board.u64(CALLS).load(Ordering::Relaxed))
    }
}

/// A system call's name: the allow-list's (without `SYS_`), else its number.
pub(crate) fn call_name(nr: i64) -> String {
    match sandbox::allowed(nr) {
        Some(a) => a.name.trim_start_matches("SYS_").to_string(),
        None => format!("unlisted {nr}"),
    }
}

/// `EPERM`, `EFAULT`, …
pub(crate) fn errno_name(e: i32) -> String {
    match nix::errno::Errno::from_raw(e) {
        nix::errno::Errno::UnknownErrno => format!("errno {e}"),
        n => format!("{n:?}"),
    }
}

/// `SIGSEGV`, …
fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map_or_else(|_| format!("signal {sig}"), |s| s.as_str().to_string())
}
