//! The interposers that trap every system call out of the kernel's fast path and back:
//! `interpose.ptrace` (a tracer stopping the call at entry and exit, as strace does) and
//! `interpose.sud` (syscall user dispatch sending the call to a `SIGSYS` handler in the process,
//! which makes it again — the mechanism of Rhino's traps that osprim's domain rows use). Each is
//! a null call (getppid through the bare instruction, as `syscall.null`) through the interposer
//! minus the same call without it, paired ([`crate::interposer`]: two forked twins on one CPU).
//!
//! - `interpose.ptrace`: the interposed twin forks a tracer, which seizes it
//!   (`PTRACE_O_EXITKILL`, `PTRACE_O_TRACESYSGOOD`) and resumes it at once after each of the two
//!   stops of every call, reading each stop's `PTRACE_GET_SYSCALL_INFO` ([`sys::tracer`]). The
//!   tracer runs on the same CPU (it inherits the twin's placement), so each call is four
//!   switches between the two processes; its CPU time counts with the twin's. Every call of the
//!   twin stops, in its blocks and outside them.
//! - `interpose.sud`: the interposed twin turns dispatch on ([`sys::sud::Dispatch`]) and the
//!   selector byte to "intercept" for its blocks only: each call there is turned into a `SIGSYS`
//!   whose handler makes the call again through the bare instruction, with the selector set to
//!   "allow" for it, and returns through `rt_sigreturn` (allowed: it lies in the one range the
//!   kernel lets through). Linux ≥ 5.11, x86_64.
//!
//! **Validation by the kernel's account:** the tracer saw one entry stop of getppid per call
//! the twin made in blocks (the stops are counted before each resume, in memory the parent
//! reads); the dispatch handler ran once per call made in blocks (its count, sent after each
//! block), and, for both, every call returned the parent's pid.
//!
//! **Nothing outlives the run:** the tracer is the twin's child: it dies with the twin
//! (`PR_SET_PDEATHSIG`), and the twin with the tracer (`PTRACE_O_EXITKILL`); dispatch is a
//! property of the twin's thread.

use crate::interposer::{self, Expect, Spec};
use crate::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::{Duration, Instant};
use sys::shm::SharedMem;

/// How long the tracer may take to seize the twin.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an interposer could not be installed, as the child reports it.
const TRACER_FORK: i32 = 1;
const TRACER_ATTACH: i32 = 2;
const NO_DISPATCH: i32 = 3;

fn shared(slots: usize) -> Result<Arc<SharedMem>, NotMeasured> {
    SharedMem::new(slots).map(Arc::new).map_err(|e| NotMeasured::Failed(format!("shared memory: {e}")))
}

/// "the interposer saw one `what` per call made in blocks".
fn one_per_call(what: &str, seen: u64, calls: u64) -> Check {
    Check::new(
        format!("the interposer saw one {what} per call made in blocks"),
        format!("{calls}"),
        format!("{seen}"),
        seen == calls,
    )
}

/// `interpose.ptrace`.
pub struct Ptrace;

impl Benchmark for Ptrace {
    fn id(&self) -> &'static str {
        "interpose.ptrace"
    }
    fn about(&self) -> &'static str {
        "a null system call under a tracer that stops it at entry and exit and resumes it at once (strace's \
         cost per call, without printing), minus without (paired)"
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        // Slot 0: the tracer is attached; 1: getppid entry stops; 2: all entry stops; 3: its error.
        let counts = shared(4)?;
        let c = counts.clone();
        let install: interposer::Install = Box::new(move || {
            let twin = std::process::id() as i32;
            let t = c.clone();
            let tracer = sys::process::fork_peer(move || {
                let traced = sys::tracer::trace(
                    twin,
                    || t.u64(0).store(1, Release),
                    |nr| {
                        // Counted before the resume: the parent may read it once the call returns.
                        t.u64(2).fetch_add(1, Release);
                        if nr == libc::SYS_getppid {
                            t.u64(1).fetch_add(1, Release);
                        }
                    },
                );
                if traced.is_err() {
                    t.u64(3).store(1, Release);
                }
                i32::from(traced.is_err())
            })
            .map_err(|_| TRACER_FORK)?;
            let deadline = Instant::now() + ATTACH_TIMEOUT;
            while c.u64(0).load(Acquire) == 0 {
                if tracer.has_ended() || Instant::now() > deadline {
                    return Err(TRACER_ATTACH);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let pid = tracer.pid();
            // The guard would kill the tracer when dropped; the tracer lives as long as the
            // twin instead, and dies with it.
            std::mem::forget(tracer);
            Ok(Some(crate::cpu_time::Task::Process(pid)))
        });
        let spec = Spec {
            install,
            call: sys::raw::getppid,
            expect: Expect::Answer,
            arm: None,
            attach: None,
            explain: |code| match code {
                TRACER_ATTACH => NotMeasured::Skipped(
                    "the tracer could not seize the process (ptrace refused here: a Yama policy, a container \
                     without CAP_SYS_PTRACE, or a tracer already attached)"
                        .into(),
                ),
                _ => NotMeasured::Failed("forking the tracer failed".into()),
            },
        };
        let c = counts.clone();
        let before: interposer::Before = Box::new(move |pair| {
            vec![one_per_call("getppid entry stop", c.u64(1).load(Acquire), pair.interposed_calls())]
        });
        let mut m = interposer::measure(ctx, spec, "stopped at entry and exit by a tracer", before)?;
        m.observed.insert("entry_stops".into(), counts.u64(2).load(Acquire).into());
        m.notes.push(
            "the tracer runs on the twin's CPU: every call is two stops, each a switch to the tracer and back, \
             plus the tracer's PTRACE_GET_SYSCALL_INFO and PTRACE_SYSCALL"
                .into(),
        );
        Ok(m)
    }
}

/// `interpose.sud`.
pub struct Sud;

impl Benchmark for Sud {
    fn id(&self) -> &'static str {
        "interpose.sud"
    }
    fn about(&self) -> &'static str {
        "a null system call redirected by syscall user dispatch to a SIGSYS handler that makes it again, minus \
         without (paired)"
    }
    fn available(&self) -> Result<(), String> {
        if cfg!(target_arch = "x86_64") { Ok(()) } else { Err("syscall user dispatch is used on x86_64 only".into()) }
    }
    fn run(&self, ctx: &mut Ctx, _: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        // Slot 0: calls the handler made in blocks so far.
        let counts = shared(1)?;
        let c = counts.clone();
        let spec = Spec {
            install: Box::new(|| {
                let dispatch = sys::sud::Dispatch::start().map_err(|_| NO_DISPATCH)?;
                // On for the twin's life; the process ends with it.
                std::mem::forget(dispatch);
                Ok(None)
            }),
            call: sys::raw::getppid,
            expect: Expect::Answer,
            arm: Some(Box::new(move |on| {
                sys::sud::intercept(on);
                if !on {
                    c.u64(0).store(sys::sud::intercepted(), Release);
                }
            })),
            attach: None,
            explain: |_| {
                NotMeasured::Skipped(
                    "the kernel refused syscall user dispatch (Linux ≥ 5.11, CONFIG_GENERIC_ENTRY)".into(),
                )
            },
        };
        let c = counts.clone();
        let before: interposer::Before =
            Box::new(move |pair| vec![one_per_call("SIGSYS", c.u64(0).load(Acquire), pair.interposed_calls())]);
        let mut m = interposer::measure(ctx, spec, "redirected to a SIGSYS handler by syscall user dispatch", before)?;
        m.notes.push(
            "each call: the kernel turns it into a SIGSYS, the handler makes it again through the bare instruction, \
             and rt_sigreturn returns to the caller"
                .into(),
        );
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(b: &dyn Benchmark) -> Result<Measured, NotMeasured> {
        let _serial = crate::testing::serial();
        let mut got = None;
        crate::testing::with_ctx(0.05, |ctx| got = Some(b.run(ctx, &Params::new())));
        got.unwrap()
    }

    fn assert_interposed(m: &Measured, what: &str) {
        for c in &m.checks {
            if !c.name.starts_with("pairs disturbed") && !c.name.contains("no less than nothing") {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
        }
        assert!(m.checks.iter().any(|c| c.name.contains(what) && c.ok == Some(true)), "{:?}", m.checks);
    }

    #[test]
    fn the_tracer_stops_every_call_and_leaves_with_the_twin() {
        match row(&Ptrace) {
            Ok(m) => assert_interposed(&m, "entry stop"),
            Err(NotMeasured::Skipped(why)) => eprintln!("skipped: {why}"),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn the_dispatch_handler_sees_every_call() {
        match row(&Sud) {
            Ok(m) => assert_interposed(&m, "SIGSYS"),
            Err(NotMeasured::Skipped(why)) => eprintln!("skipped: {why}"),
            Err(e) => panic!("{e:?}"),
        }
    }
}
