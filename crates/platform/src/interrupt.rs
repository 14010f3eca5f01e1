//! Interruptions: the first SIGINT, SIGTERM, SIGHUP or SIGQUIT (or SIGUSR1, SIGUSR2, SIGALRM,
//! SIGXCPU, whose default would kill the run on the spot) sets a flag the sampler checks
//! between samples, so the run stops after the current sample, keeps what it measured, cleans
//! up and exits with 128 + the signal's number (130, 143, 129, 131). A second one ends the run at
//! once with that status, after making the result file from the run's journal (what
//! [`on_second_signal`] registered) and removing what [`create_removable`] registered (the
//! scratch directory, a result file being written): nothing measured is lost and nothing
//! temporary is left even then. Peer processes die with osprim (`PR_SET_PDEATHSIG`).
//!
//! The signals are taken by a thread of their own (`signal_hook::iterator`), so the clean-up
//! runs as ordinary code, not inside a signal handler. This module is the one home of these
//! ending signals' dispositions (through `signal-hook`, which installs and chains them);
//! every other disposition osprim sets goes through `sys::disposition`. The workers it kills
//! at a second signal are reaped by `sys::reap`.
//!
//! A worker process (`execution`, one per round) takes the same signals with
//! [`install_worker`]: each only sets the flag, so the worker reports what it measured and
//! leaves; the run that started it decides when to give up on it (a deadline, then SIGKILL).
//! The run starts its workers with [`spawn_worker`]: a second signal kills and reaps them
//! before removing the scratch directory they write to, and no worker starts after it.
//!
//! The run's own thread goes on while the second signal's clean-up runs, so what is registered
//! for removal is made and registered in one step ([`create_removable`]), and removed or kept
//! and forgotten in one step ([`settle`]): the clean-up sees a path either registered or gone,
//! never made and not yet registered, nor forgotten and not yet removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The signals that end a run the way Ctrl-C does: the terminal's and kill's, and those whose
/// default action would otherwise end the process at once (a CPU-time limit's SIGXCPU among
/// them).
pub const SIGNALS: [i32; 8] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
    signal_hook::consts::SIGUSR1,
    signal_hook::consts::SIGUSR2,
    signal_hook::consts::SIGALRM,
    signal_hook::consts::SIGXCPU,
];

/// Paths removed if a second signal ends the run at once.
static CLEANUP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The worker processes killed and reaped if a second signal ends the run at once, and
/// whether it has begun to (then no worker starts).
static WORKERS: Mutex<Workers> = Mutex::new(Workers { pids: Vec::new(), ending: false });

struct Workers {
    pids: Vec<u32>,
    ending: bool,
}

/// Starts a worker (a child of this process) from `cmd` and registers it to be killed and
/// reaped should a second signal end the run, as one step: a second signal either finds it
/// registered or has already begun, and then it is not started (an `Interrupted` error).
pub fn spawn_worker(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    if workers.ending {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the run is ending (a second signal)"));
    }
    let child = cmd.spawn()?;
    workers.pids.push(child.id());
    Ok(child)
}

/// Takes the worker `pid` off the list (it was reaped in the ordinary way).
pub fn forget_worker(pid: u32) {
    WORKERS.lock().unwrap_or_else(|p| p.into_inner()).pids.retain(|&p| p != pid);
}

/// Kills and reaps the registered workers (still unreaped children of this process, so their
/// pids cannot have been reused); none starts after this.
fn end_workers() {
    let mut workers = WORKERS.lock().unwrap_or_else(|p| p.into_inner());
    workers.ending = true;
    for pid in workers.pids.drain(..) {
        let Ok(raw) = i32::try_from(pid) else { continue };
        sys::reap::kill_and_reap(raw);
    }
}

/// What a second signal does before the run ends at once.
type Farewell = Box<dyn FnOnce() + Send>;

/// Run by the second signal before the clean-up.
static FAREWELL: Mutex<Option<Farewell>> = Mutex::new(None);

/// Registers what a second signal does before the run ends (make the result file from the
/// journal). It runs on the signal thread while the measuring thread goes on.
pub fn on_second_signal(f: Farewell) {
    *FAREWELL.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
}

/// Takes back what [`on_second_signal`] registered (the run is saving its results itself).
pub fn clear_second_signal() {
    FAREWELL.lock().unwrap_or_else(|p| p.into_inner()).take();
}

/// Makes something to be removed should a second signal end the run (a directory, a file
/// being written) with `make`, and registers its path (`path_of`), as one step: the second
/// signal's clean-up waits for it.
pub fn create_removable<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl FnOnce(&T) -> PathBuf,
) -> std::io::Result<T> {
    let mut list = CLEANUP.lock().unwrap_or_else(|p| p.into_inner());
    let made = make()?;
    list.push(path_of(&made));
    Ok(made)
}

/// Removes or keeps `path` in the ordinary way (`settle`, e.g. remove a directory or rename a
/// file into place) and takes it off the list, as one step: a second signal's clean-up waits
/// for it, and never finds the path forgotten but still there.
pub fn settle<T>(path: &Path, settle: impl FnOnce() -> T) -> T {
    let mut list = CLEANUP.lock().unwrap_or_else(|p| p.into_inner());
    let done = settle();
    list.retain(|p| p != path);
    done
}

/// Removes what is registered and ends the process with `code`, the list locked to the end:
/// nothing the run's thread makes from now on is left behind, since it cannot register it.
fn clean_up_and_exit(code: u8) -> ! {
    let mut list = CLEANUP.lock().unwrap_or_else(|p| p.into_inner());
    for p in list.drain(..) {
        let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
    }
    std::process::exit(i32::from(code))
}

/// The flag the first signal sets, and which signal it was.
pub struct Interrupt {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl std::ops::Deref for Interrupt {
    type Target = AtomicBool;
    fn deref(&self) -> &AtomicBool {
        &self.flag
    }
}

impl Interrupt {
    /// The exit status for the signal that arrived: 128 + its number (130 for none recorded).
    pub fn exit_code(&self) -> u8 {
        exit_code(self.signal.load(Ordering::Relaxed))
    }
}

fn exit_code(signal: usize) -> u8 {
    match signal {
        0 => 130,
        s => u8::try_from(128 + s).unwrap_or(130),
    }
}

/// Starts the thread that takes the signals and returns the flag it sets.
pub fn install() -> std::io::Result<Interrupt> {
    // A file-size limit then makes a save fail with an error instead of killing the run.
    sys::disposition::ignore_file_size_signal()?;
    let flag = Arc::new(AtomicBool::new(false));
    let signal = Arc::new(AtomicUsize::new(0));
    let mut signals = signal_hook::iterator::Signals::new(SIGNALS)?;
    let (f, s) = (Arc::clone(&flag), Arc::clone(&signal));
    std::thread::Builder::new().name("osprim-signals".into()).spawn(move || {
        for sig in signals.forever() {
            let sig = usize::try_from(sig).unwrap_or(0);
            if f.swap(true, Ordering::SeqCst) {
                let farewell = FAREWELL.lock().unwrap_or_else(|p| p.into_inner()).take();
                end_workers();
                if let Some(farewell) = farewell {
                    farewell();
                }
                clean_up_and_exit(exit_code(sig));
            }
            s.store(sig, Ordering::SeqCst);
        }
    })?;
    Ok(Interrupt { flag, signal })
}

/// The flag of a worker process: every one of [`SIGNALS`] sets it, none ends the process (the
/// run that started the worker kills it if it does not leave in time).
pub fn install_worker() -> std::io::Result<Arc<AtomicBool>> {
    sys::disposition::ignore_file_size_signal()?;
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new(SIGNALS)?;
    let f = Arc::clone(&flag);
    std::thread::Builder::new().name("osprim-signals".into()).spawn(move || {
        for _ in signals.forever() {
            f.store(true, Ordering::SeqCst);
        }
    })?;
    Ok(flag)
}
