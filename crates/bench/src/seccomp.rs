//! `interpose.seccomp`: what a seccomp-BPF filter costs per system call — the interposer every
//! container runs in front of every call — as a null call (getppid through the bare
//! instruction, as `syscall.null`) under the filter minus the same call without it, paired
//! ([`crate::interposer`]: two forked twins on one CPU, the filter installed in one of them).
//!
//! Parameter `filter` (programs: [`crate::seccomp_filter`]):
//! - `args`, with `insns` 2, 10, 100, 1,000: a filter of exactly that many instructions, all run
//!   on every call, whose loads read the call's first argument, so the kernel's action cache
//!   (Linux ≥ 5.11) cannot answer and the filter runs each time; the analysis fits the fixed
//!   cost and the cost per instruction over the four rows.
//! - `number`, the same lengths: the loads read the call's number instead, so the kernel proves
//!   the answer constant and its cache answers without running the filter: the rows should not
//!   grow with the length (the row says whether the cache answered, by the kernel's rule).
//! - `container`, with `call` `read` (`read(-1, NULL, 0)`), `getppid` or `mseal`
//!   (`mseal(0, 0, 0)`): Docker's default profile, compiled by `seccompiler` into a chain that
//!   tests numbers in order, so the three calls sit near its start, in its middle and at its
//!   end (each row records how many instructions the call runs without the cache); all three
//!   are allowed without conditions, so the cache answers all of them alike.
//! - `deny`: getppid answered with `EPERM` by a 4-instruction filter (`SECCOMP_RET_ERRNO`; the
//!   call is not run, and an answer other than "allow" is never cached).
//! - `user_notif`: getppid handed to a supervisor (`SECCOMP_RET_USER_NOTIF`), a thread of the
//!   filtered process started before the filter, which answers with the parent's pid: the round
//!   trip of a container runtime's supervisor, on one CPU; the supervisor's CPU time counts with
//!   the caller's.
//!
//! **Validation by the kernel's account:** the filtered twin's `/proc/<pid>/status` reads
//! `Seccomp: 2` and `Seccomp_filters: 1` while it runs; every call returned its expected answer
//! (the parent's pid through a filter that allows, `EPERM` where denied, the supervisor's
//! answer); for `user_notif`, the supervisor answered exactly as many notifications as calls
//! were made in blocks. The program's own account comes from emulating it as the kernel does:
//! its length, the instructions the call runs, and whether the cache answers it (observed
//! `filter_insns`, `insns_run`, `cached`).
//!
//! **Nothing outlives the run:** a filter cannot be removed, so it is installed only in the
//! forked twin, and dies with it.

use crate::interposer::{self, Expect, Spec};
use crate::seccomp_filter::{self as filter, Call, Load};
use crate::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::Duration;
use sys::seccomp::{self as sc, action};
use sys::shm::SharedMem;

/// The filter lengths of the sweeps (the shortest filter that reads anything has two
/// instructions: a load and the return).
pub const LENGTHS: [u64; 4] = [2, 10, 100, 1000];
/// The container profile's calls.
const CALLS: [&str; 3] = ["read", "getppid", "mseal"];
/// How long the supervisor waits for a notification before it looks whether to go on.
const SUPERVISOR_LOOK: Duration = Duration::from_millis(100);

/// `interpose.seccomp`.
pub struct Seccomp;

/// The filter a row installs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Chain(Load, usize),
    Container(&'static str),
    Deny,
    UserNotif,
}

impl Kind {
    fn of(params: &Params) -> Result<Kind, NotMeasured> {
        let bad = |what: String| NotMeasured::Failed(format!("interpose.seccomp: {what}"));
        let text = |key: &str| params.get(key).and_then(|v| v.as_str());
        Ok(match text("filter").unwrap_or("args") {
            f @ ("args" | "number") => {
                let insns = params.get("insns").and_then(|v| v.as_u64()).unwrap_or(100);
                if !(1..=4096).contains(&insns) {
                    return Err(bad(format!("insns {insns}: a filter has 1 to 4096 instructions")));
                }
                Kind::Chain(if f == "args" { Load::Argument } else { Load::Number }, insns as usize)
            }
            "container" => {
                let call = text("call").unwrap_or("getppid");
                let call = CALLS
                    .into_iter()
                    .find(|c| *c == call)
                    .ok_or_else(|| bad(format!("call {call}: one of {}", CALLS.join(", "))))?;
                Kind::Container(call)
            }
            "deny" => Kind::Deny,
            "user_notif" => Kind::UserNotif,
            other => return Err(bad(format!("filter {other}: one of args, number, container, deny, user_notif"))),
        })
    }

    fn program(self) -> Result<sc::Program, NotMeasured> {
        Ok(match self {
            Kind::Chain(load, len) => filter::chain(len, load),
            Kind::Container(_) => filter::container_default().map_err(NotMeasured::Failed)?,
            Kind::Deny => filter::answer_getppid(action::ERRNO | libc::EPERM as u32),
            Kind::UserNotif => filter::answer_getppid(action::USER_NOTIF),
        })
    }

    /// The call both twins time, and its number.
    fn call(self) -> (fn() -> i64, i64) {
        match self {
            Kind::Container("read") => (sys::raw::read_bad_fd, libc::SYS_read),
            Kind::Container("mseal") => (sys::raw::mseal_nothing, 462),
            _ => (sys::raw::getppid, libc::SYS_getppid),
        }
    }

    fn describe(self) -> String {
        match self {
            Kind::Chain(Load::Argument, n) => format!("under a {n}-instruction filter that reads an argument"),
            Kind::Chain(Load::Number, n) => format!("under a {n}-instruction filter that reads the call's number"),
            Kind::Container(call) => format!("of {call} under a container's default profile"),
            Kind::Deny => "denied by a filter (EPERM)".into(),
            Kind::UserNotif => "answered by a supervisor thread (user notification)".into(),
        }
    }
}

fn variants() -> Vec<Params> {
    let p = |pairs: &[(&str, serde_json::Value)]| -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    };
    let mut out = Vec::new();
    for f in ["args", "number"] {
        out.extend(LENGTHS.iter().map(|&n| p(&[("filter", f.into()), ("insns", n.into())])));
    }
    out.extend(CALLS.iter().map(|&c| p(&[("filter", "container".into()), ("call", c.into())])));
    out.push(p(&[("filter", "deny".into())]));
    out.push(p(&[("filter", "user_notif".into())]));
    out
}

impl Benchmark for Seccomp {
    fn id(&self) -> &'static str {
        "interpose.seccomp"
    }
    fn about(&self) -> &'static str {
        "a null system call under a seccomp-BPF filter minus without (paired): filters of 2–1,000 instructions, \
         a container's default profile, a denied call, a supervisor's answer"
    }
    fn available(&self) -> Result<(), String> {
        if !cfg!(target_arch = "x86_64") {
            return Err("the filters are written for x86_64's call numbers".into());
        }
        match sc::status_of(std::process::id() as i32) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("this kernel shows no seccomp state (built without seccomp?): {e}")),
        }
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        variants()
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        let kind = Kind::of(params)?;
        let program = kind.program()?;
        let (call, nr) = kind.call();
        let outcome = filter::run(&program, Call::x86_64(nr)).map_err(NotMeasured::Failed)?;
        let cached = filter::cached(&program, nr, filter::ARCH_X86_64);
        let filter_insns = program.len();
        let expect = match kind {
            Kind::Deny => Expect::Errno(libc::EPERM),
            Kind::Container("read" | "mseal") => Expect::Value(call()),
            _ => Expect::Answer,
        };
        // The supervisor's count of answered notifications, and of failed answers.
        let counts = Arc::new(SharedMem::new(2).map_err(|e| NotMeasured::Failed(format!("shared memory: {e}")))?);
        let install: interposer::Install = match kind {
            Kind::UserNotif => {
                let counts = counts.clone();
                Box::new(move || install_with_supervisor(&program, counts))
            }
            _ => Box::new(move || sc::install(&program).map(|()| None).map_err(|e| e.raw_os_error().unwrap_or(0))),
        };
        let spec = Spec {
            install,
            call,
            expect,
            arm: None,
            attach: None,
            explain: |code| match code {
                0 => NotMeasured::Failed("installing the filter failed".into()),
                e => NotMeasured::Skipped(format!(
                    "the kernel refused the filter: {}",
                    std::io::Error::from_raw_os_error(e)
                )),
            },
        };
        let notify = kind == Kind::UserNotif;
        let supervisor_counts = counts.clone();
        let before: interposer::Before = Box::new(move |pair| {
            let mut checks = vec![installed(pair.interposed_pid())];
            if notify {
                let (answered, failed) =
                    (supervisor_counts.u64(0).load(Acquire), supervisor_counts.u64(1).load(Acquire));
                let calls = pair.interposed_calls();
                checks.push(Check::new(
                    "the supervisor answered one notification per call made in blocks",
                    format!("{calls} answered, none failed"),
                    format!("{answered} answered, {failed} failed"),
                    answered == calls && failed == 0,
                ));
            }
            checks
        });
        let mut m = interposer::measure(ctx, spec, &kind.describe(), before)?;
        m.observed.insert("filter_insns".into(), filter_insns.into());
        m.observed.insert("insns_run".into(), outcome.ran.into());
        m.observed.insert("cached".into(), cached.into());
        m.notes.push(if cached {
            format!(
                "the kernel's action cache answers this call without running the filter (Linux ≥ 5.11; by the kernel's \
                 rule, emulated); without it the call would run {} of the filter's instructions",
                outcome.ran
            )
        } else {
            format!("the filter runs {} instructions on every call (the kernel's cache cannot answer it)", outcome.ran)
        });
        if kind == Kind::Deny {
            m.notes.push(
                "the filter answers in place of the call, which is not run: the figure is the filter's cost minus \
                 getppid's own work, and may fall below zero"
                    .into(),
            );
        }
        Ok(m)
    }
}

/// The filtered twin's seccomp state by the kernel's account.
fn installed(pid: i32) -> Check {
    let name = "the filter is installed (the twin's /proc/<pid>/status)";
    match sc::status_of(pid) {
        Ok((mode, filters)) => Check::new(
            name,
            "Seccomp: 2, Seccomp_filters: 1",
            format!(
                "Seccomp: {mode}, Seccomp_filters: {}",
                filters.map_or("not shown by this kernel".into(), |n| n.to_string())
            ),
            mode == 2 && filters.is_none_or(|n| n == 1),
        ),
        Err(e) => Check::impossible(name, format!("/proc/{pid}/status: {e}")),
    }
}

/// In the filtered twin: starts the supervisor thread, then installs `program` with a
/// listener and hands it over; the supervisor answers each notification with the parent's pid
/// until the twin ends, counting in `counts`.
fn install_with_supervisor(
    program: &[sc::Instruction],
    counts: Arc<SharedMem>,
) -> Result<Option<crate::cpu_time::Task>, i32> {
    let parent = nix::unistd::getppid().as_raw();
    let (give, take) = std::sync::mpsc::channel::<sc::Listener>();
    let (tell_tid, tid) = std::sync::mpsc::channel::<i32>();
    std::thread::Builder::new()
        .name("osprim-supervisor".into())
        .spawn(move || {
            let _ = tell_tid.send(sys::process::gettid());
            let Ok(listener) = take.recv() else { return };
            loop {
                match listener.recv(SUPERVISOR_LOOK) {
                    Ok(Some(n)) => {
                        // Counted before the answer: once answered, the caller's block may end
                        // and be checked before this thread runs again.
                        counts.u64(0).fetch_add(1, Release);
                        if listener.answer(&n, Ok(i64::from(parent))).is_err() {
                            counts.u64(0).fetch_sub(1, Release);
                            counts.u64(1).fetch_add(1, Release);
                        }
                    }
                    Ok(None) => {}
                    Err(_) => return,
                }
            }
        })
        .map_err(|e| e.raw_os_error().unwrap_or(0))?;
    let tid = tid.recv_timeout(Duration::from_secs(10)).map_err(|_| 0)?;
    let listener = sc::install_listening(program).map_err(|e| e.raw_os_error().unwrap_or(0))?;
    give.send(listener).map_err(|_| 0)?;
    Ok(Some(crate::cpu_time::Task::Thread(tid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, serde_json::Value)]) -> Params {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn every_variant_names_a_filter_and_bad_ones_are_refused() {
        let v = variants();
        assert_eq!(v.len(), 2 * LENGTHS.len() + CALLS.len() + 2);
        for p in &v {
            let k = Kind::of(p).unwrap();
            k.program().unwrap();
        }
        assert!(Kind::of(&params(&[("filter", "nope".into())])).is_err());
        assert!(Kind::of(&params(&[("filter", "args".into()), ("insns", 0.into())])).is_err());
        assert!(Kind::of(&params(&[("filter", "container".into()), ("call", "open".into())])).is_err());
    }

    fn row(filter: &str, extra: &[(&str, serde_json::Value)]) -> Measured {
        let _serial = crate::testing::serial();
        let mut p = params(&[("filter", filter.into())]);
        p.extend(params(extra));
        let mut got = None;
        crate::testing::with_ctx(0.05, |ctx| got = Some(Seccomp.run(ctx, &p).expect("measured")));
        got.unwrap()
    }

    fn assert_checks_pass(m: &Measured) {
        for c in &m.checks {
            // On a loaded machine pairs may be disturbed and a small difference may read below
            // zero: those two checks judge the machine, not the filter.
            if !c.name.starts_with("pairs disturbed") && !c.name.contains("no less than nothing") {
                assert_eq!(c.ok, Some(true), "{c:?}");
            }
        }
    }

    #[test]
    fn an_argument_filter_is_installed_runs_every_instruction_and_is_not_cached() {
        let m = row("args", &[("insns", 100.into())]);
        assert_checks_pass(&m);
        assert_eq!(m.observed["insns_run"], 100);
        assert_eq!(m.observed["cached"], false);
        assert!(m.checks.iter().any(|c| c.name.contains("status") && c.ok == Some(true)));
    }

    #[test]
    fn a_number_filter_is_cached() {
        let m = row("number", &[("insns", 10.into())]);
        assert_checks_pass(&m);
        assert_eq!(m.observed["cached"], true);
    }

    #[test]
    fn a_denied_call_returns_eperm_and_the_container_profile_lets_its_calls_through() {
        assert_checks_pass(&row("deny", &[]));
        for call in CALLS {
            let m = row("container", &[("call", call.into())]);
            assert_checks_pass(&m);
            assert_eq!(m.observed["cached"], true, "{call}");
        }
    }

    #[test]
    fn the_supervisor_answers_every_call() {
        let m = row("user_notif", &[]);
        assert_checks_pass(&m);
        assert!(m.checks.iter().any(|c| c.name.starts_with("the supervisor answered") && c.ok == Some(true)));
    }
}
