//! The one list of benchmarks. A new benchmark is one struct in `bench/` and one line here;
//! a result derived from others is one entry in [`DERIVED`].

use crate::{Benchmark, ctx, dylib, fault, fs, harness, id, ipc, signal, space, syscall, txn};
use model::Derivation;
pub use model::ids::matches;
use model::ids::matches_whole;
use std::sync::LazyLock;

/// Results computed from measured ones after the run: `rpc.<t>` for every transport.
pub static DERIVED: &[Derivation] = &ipc::RPC;

/// The benchmarks before the IPC ones.
static BEFORE_IPC: &[&dyn Benchmark] = &[
    &harness::Empty,
    &syscall::Null,
    &syscall::LibcGetppid,
    &syscall::Enosys,
    &syscall::Reject,
    &syscall::Getpid,
    &syscall::VdsoClock,
    &syscall::Ioctl,
    &syscall::Getfd,
    &crate::uring::Nop,
    &id::Gettid,
    &id::SchedGetcpu,
    &id::ExeName,
    &id::Comm,
    &id::Altstack,
    &fs::OpenClose,
    &fs::Stat,
    &fs::OpenReadClose,
    &signal::Install,
    &dylib::Dlopen,
    &dylib::Dlclose,
    &dylib::DlopenInit,
    &crate::interpose::Preload,
    &crate::interpose::Ui,
    &crate::ebpf::SysEnter,
    &crate::seccomp::Seccomp,
    &crate::trap::Ptrace,
    &crate::trap::Sud,
    &crate::task::Uclamp,
    &crate::task::Setattr,
    &ctx::Switch(ctx::Ends::Threads),
    &ctx::Switch(ctx::Ends::Processes),
    &ctx::AddressSpace,
    &ctx::UserSwitch,
    &ctx::SwapContext,
    &crate::lock::Mutex(crate::lock::Op::Lock),
    &crate::lock::Mutex(crate::lock::Op::Unlock),
    &crate::lock::Handoff,
    &crate::domain::Call(crate::domain::Kind::F),
    &crate::domain::Call(crate::domain::Kind::T),
    &crate::domain::Call(crate::domain::Kind::Full),
    &crate::domain::Xfer,
    &crate::domain::Throw(false),
    &crate::domain::Throw(true),
    &crate::domain::Lifecycle(false),
    &crate::domain::Lifecycle(true),
    &crate::domain::Lookup(false),
    &crate::domain::Lookup(true),
    &crate::domain_process::ProcessCall,
];

/// The benchmarks after the IPC ones.
static AFTER_IPC: &[&dyn Benchmark] = &[
    &txn::Begin,
    &txn::CommitReadOnly,
    &txn::Commit8b,
    &fault::AnonRead,
    &fault::AnonWrite,
    &fault::FileRead,
    &fault::FileWrite,
    &fault::Cow,
    &fault::UserSigsegv,
    &fault::UserUffd,
    &space::Thread,
    &space::Process,
    &space::Pipe,
    &space::Socketpair,
    &space::Eventfd,
    &space::Epoll,
    &space::Timerfd,
    &space::Mapping,
    &space::Domain(false),
    &space::Domain(true),
    &crate::elf::Shell,
    &crate::size::Lib,
    &crate::size::Module,
    &crate::size::DomainLayer,
    &crate::size::ThrowPath,
    &crate::lifecycle::CreateJoin,
    &crate::lifecycle::FirstRun,
    &crate::lifecycle::Process(crate::lifecycle::Spawn::ForkExit),
    &crate::lifecycle::Process(crate::lifecycle::Spawn::ForkExec),
    &crate::lifecycle::Process(crate::lifecycle::Spawn::VforkExec),
    &crate::lifecycle::Process(crate::lifecycle::Spawn::PosixSpawn),
    &crate::lifecycle::Process(crate::lifecycle::Spawn::Clone3),
    &crate::notify::SignalNotify,
    &crate::notify_softirq::SoftirqNotify,
    &crate::wake::Wake(crate::wake::Mechanism::Eventfd),
    &crate::wake::Wake(crate::wake::Mechanism::Futex),
    &crate::wake::Wake(crate::wake::Mechanism::Pipe),
    &crate::wake::Wake(crate::wake::Mechanism::Epoll),
    &crate::wake::Wake(crate::wake::Mechanism::Poll),
    &crate::timer_wake::TimerWake,
    &crate::sched::Preempt,
    &crate::sched::Yield,
    &crate::futex_wait::FutexWait,
];

/// The whole list: the IPC benchmarks (`ipc.<t>`, then `xfer.<t>`, one per transport) come
/// from the transport list ([`ipc::benchmarks`]), not written out here.
static ALL: LazyLock<Vec<&'static dyn Benchmark>> =
    LazyLock::new(|| BEFORE_IPC.iter().copied().chain(ipc::benchmarks()).chain(AFTER_IPC.iter().copied()).collect());

/// Every benchmark, in the order a run takes them.
pub fn all() -> &'static [&'static dyn Benchmark] {
    &ALL
}

/// Looks a benchmark up by exact id.
pub fn find(id: &str) -> Option<&'static dyn Benchmark> {
    ALL.iter().copied().find(|b| b.id() == id)
}

/// Benchmarks matching any of `patterns` (all when empty). A pattern matches an id equal to
/// it, an id it is a dotted prefix of (`syscall` → `syscall.*`), or, with `*`, a glob. A
/// pattern naming a derived result selects the benchmarks it is computed from.
pub fn select(patterns: &[String]) -> Result<Vec<&'static dyn Benchmark>, String> {
    if patterns.is_empty() {
        return Ok(ALL.clone());
    }
    // A derived result is asked for by its id, family or a glob, not by a substring: `space`
    // selects the `space.*` family, not the sources of `ctx.address_space`.
    let sources = |p: &str| -> Vec<&'static str> {
        DERIVED.iter().filter(|d| matches_whole(p, d.id)).flat_map(|d| d.sources()).collect()
    };
    for p in patterns {
        // An empty pattern, or dots alone, would match every id as a substring: it names nothing.
        if p.trim().chars().all(|c| c == '.' || c == '*') && !p.contains('*') {
            return Err(p.clone());
        }
        let derived_ok = sources(p).iter().any(|id| find(id).is_some());
        if !derived_ok && !ALL.iter().any(|b| matches(p, b.id())) {
            return Err(p.clone());
        }
    }
    // A pattern that names an id or a family selects just that; only a pattern that names
    // none is read as a substring (`getpid`).
    let names_something =
        |p: &str| ALL.iter().any(|b| matches_whole(p, b.id())) || DERIVED.iter().any(|d| matches_whole(p, d.id));
    let selects = |p: &str, id: &str| {
        if names_something(p) { matches_whole(p, id) } else { matches(p, id) }
    };
    Ok(ALL
        .iter()
        .copied()
        .filter(|b| patterns.iter().any(|p| selects(p, b.id()) || sources(p).contains(&b.id())))
        .collect())
}

/// The id closest to `name` (for "did you mean"), by edit distance.
/// Families count as names too, so `sycall` suggests `syscall`.
pub fn nearest(name: &str) -> Option<&'static str> {
    let families = ALL.iter().map(|b| b.id().split('.').next().unwrap_or(b.id()));
    ALL.iter()
        .map(|b| b.id())
        .chain(families)
        .map(|id| (edit_distance(name, id), id))
        .min()
        .filter(|(d, _)| *d <= 4)
        .map(|(_, id)| id)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let mut d = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
            // Two neighbours swapped (`getpdi` for `getpid`) is one slip, not two.
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                d = d.min(before[j - 1] + 1);
            }
            cur.push(d);
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        let derived = DERIVED.iter().map(|d| (d.id, d.about));
        for (id, about) in all().iter().map(|b| (b.id(), b.about())).chain(derived) {
            assert!(seen.insert(id), "duplicate id {id}");
            let parts: Vec<&str> = id.split('.').collect();
            assert!((2..=3).contains(&parts.len()), "{id}: family.operation[.variant]");
            assert!(
                parts
                    .iter()
                    .all(|p| !p.is_empty()
                        && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')),
                "{id}"
            );
            assert!(!about.is_empty(), "{id} has no description");
        }
    }

    #[test]
    fn patterns_select_families_and_globs() {
        assert!(matches("syscall", "syscall.null"));
        assert!(matches("syscall.null", "syscall.null"));
        assert!(matches("*.getpid", "syscall.getpid"));
        assert!(!matches("*.getpid", "syscall.getppid"));
        assert!(!matches("fault", "syscall.null"));
        assert_eq!(select(&["nomatch".into()]).err(), Some("nomatch".into()));
        for nothing in ["", " ", ".", ".."] {
            assert_eq!(select(&[nothing.into()]).err(), Some(nothing.to_string()), "'{nothing}' names nothing");
        }
        assert_eq!(select(&[]).map(|v| v.len()).ok(), Some(all().len()));
        let space = select(&["space".into()]).unwrap();
        assert!(space.iter().all(|b| b.id().starts_with("space.")), "space is a family, not ctx.address_space");
        let by_substring = select(&["getpid".into()]).unwrap();
        assert_eq!(by_substring.iter().map(|b| b.id()).collect::<Vec<_>>(), vec!["syscall.getpid"]);
        let rpc = select(&["rpc.pipe".into()]).unwrap();
        assert_eq!(rpc.iter().map(|b| b.id()).collect::<Vec<_>>(), vec!["ipc.pipe"]);
    }

    #[test]
    fn nearest_suggests_close_ids() {
        assert_eq!(nearest("syscall.getpdi"), Some("syscall.getpid"));
        assert_eq!(edit_distance("getpdi", "getpid"), 1, "a swap of neighbours is one edit");
        assert_eq!((edit_distance("", "ab"), edit_distance("ab", "ba"), edit_distance("abc", "abc")), (2, 1, 0));
        assert_eq!(nearest("zzzzzzzzzzzzzzzzzzzz"), None);
        assert_eq!(nearest("sycall"), Some("syscall"), "a family typo");
    }
}
