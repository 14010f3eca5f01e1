//! `interpose.ebpf`: what a BPF program attached at system-call entry costs each system call,
//! as a paired with − without difference: the null call (`getppid` through the bare
//! instruction, as `syscall.null`) in a process while a raw-tracepoint program is attached to
//! the kernel's `sys_enter` tracepoint, minus the same call in a twin process with nothing
//! attached (the harness of [`crate::interposer`]).
//!
//! Parameter `program` (the programs are `probe/osprim_bpf.c`, compiled by `build.rs` with
//! `clang -O2 -g -target bpf`, loaded with aya): `empty` returns 0 at once — what attaching
//! anything at system-call entry costs; `count` does what an observability agent does for
//! each event: it reads the call's number and the calling process and counts, in a per-CPU
//! array, the calls whose number is getppid's made by the interposed child (its tgid written
//! into a configuration map by the child itself after its validation block and before its
//! first timed block, so that the map counts the timed blocks' calls alone).
//!
//! A raw tracepoint at `sys_enter` sees every task: attaching it turns on the tracepoint, and so
//! the slow entry path, for every system call on the machine. The program is therefore
//! attached only for the interposed child's blocks ([`Spec::attach`]: attached right before each
//! timed block, detached right after), and the plain child's blocks run with nothing attached.
//! The program is loaded once, in the measuring process before the fork; each attachment is a
//! link (a raw-tracepoint descriptor) owned by the interposed child, so it dies with the child
//! on any exit, `kill -9` included, and the program with the last descriptor. Turning the hook
//! on is slow: when a tracepoint's only probe is added soon after it was removed, the kernel
//! waits for an RCU grace period (`tracepoint_add_func` → `synchronize_rcu`), about 13 ms a
//! block on a 2-vCPU KVM guest, nearly all of it asleep. The row records what the attach and
//! the detach took per block (`observed`: `attach_ns_per_block`, `detach_ns_per_block`, and
//! the CPU time of both, `attach_detach_cpu_ns_per_block`).
//!
//! **Timing model:** as [`crate::interposer`]'s: a block of `n` calls between two reads of the
//! run's clock in each child; the attach and the detach are outside it, and so are 64 `getpid`
//! calls made right after each attach (the first calls after an attach run the newly patched
//! entry path cold: without them, short blocks cost up to twice as much per call as long ones).
//! **Validation, by the kernel's account:** before its first block the interposed child runs
//! an untimed validation block with the kernel's BPF statistics on (`BPF_ENABLE_STATS`, whose
//! descriptor turns them off again when closed; the sysctl is never written) and the program
//! attached: the program's run count (`bpf_prog_info.run_cnt`) rose by at least the calls it
//! made; for `count`, the per-CPU map's total equals the calls the interposed child made in its
//! blocks; every block's attach and detach succeeded; and once the children are reaped and the
//! measuring process has closed its descriptors, no link to the program remains and its id is
//! gone from the kernel's list of programs. The harness adds its own checks (every call
//! answered, disturbed pairs dropped, both children left cleanly).
//!
//! Root only: the row is skipped, saying why, when osprim is not root, when the programs could
//! not be built (no clang at build time), or when the kernel refuses BPF or has no raw
//! tracepoints.

use super::interposer::{self, Expect, Spec};
use super::{Benchmark, Check, Ctx, Measured, NotMeasured, Params};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::links::FdLink;
use aya::programs::{RawTracePoint, loaded_links, loaded_programs};
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use sys::shm::SharedMem;

/// The BPF object file, aligned as the ELF reader needs.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

/// The BPF programs (`probe/osprim_bpf.c`); empty if they could not be built.
static BPF_OBJ: &Aligned<[u8]> = &Aligned(*include_bytes!(env!("OSPRIM_BPF_OBJ")));
/// Why [`BPF_OBJ`] is empty (build.rs's reason).
const BPF_WHY: &str = env!("OSPRIM_BPF_WHY");

/// The values of parameter `program`.
pub const PROGRAMS: [&str; 2] = ["empty", "count"];

/// The tracepoint the programs attach to.
const TRACEPOINT: &str = "sys_enter";
/// Untimed `getpid` calls after each attach, before the timed block: the first calls after an
/// attach run the newly patched entry path cold (a block of 30 calls came out at twice the cost
/// per call of blocks of 500 here, without them; with 32 or more, blocks of any length agree).
const WARM_CALLS: u64 = 64;
/// Calls of the validation block.
const VALIDATION_CALLS: u64 = 10_000;
/// How long the kernel may take to free a link or a program once its last reference is gone
/// (a link's memory, and the program reference it holds, may be released after an RCU grace
/// period).
const GONE_WITHIN: Duration = Duration::from_secs(5);
/// `PROC_PID_INIT_INO`: the inode of the initial PID namespace.
const INIT_PID_NS_INO: u64 = 0xEFFF_FFFC;

/// The shared slots the interposed child reports through.
mod slot {
    /// 0, or 1 + the errno `BPF_ENABLE_STATS` failed with.
    pub const STATS_ERRNO: usize = 0;
    /// 0, or 1 + the errno reading the program's info failed with.
    pub const INFO_ERRNO: usize = 1;
    /// The program's run count before and after the validation block.
    pub const RUNS_BEFORE: usize = 2;
    pub const RUNS_AFTER: usize = 3;
    /// The validation block's link id.
    pub const LINK_ID: usize = 4;
    /// Attaches and detaches around the timed blocks, and how many of each failed.
    pub const ATTACHES: usize = 5;
    pub const ATTACH_FAILURES: usize = 6;
    pub const DETACH_FAILURES: usize = 7;
    /// Wall time spent attaching (with the warm-up calls), and detaching, ns.
    pub const ATTACH_NS: usize = 8;
    pub const DETACH_NS: usize = 9;
    /// The CPU time the kernel charged the child for both, ns.
    pub const ARM_CPU_NS: usize = 10;
    pub const COUNT: usize = 11;
}

/// Install failure codes: stage × [`STAGE`] + errno.
const STAGE: i32 = 10_000;
const ATTACH: i32 = 1;
const NO_PROGRAM: i32 = 2;
const CONFIG: i32 = 3;

/// The null call with a BPF program attached at `sys_enter`, minus without.
pub struct SysEnter;

impl Benchmark for SysEnter {
    fn id(&self) -> &'static str {
        "interpose.ebpf"
    }
    fn about(&self) -> &'static str {
        "the null system call (getppid) with a BPF program attached at sys_enter (raw tracepoint: program=empty \
         returns at once, program=count counts the calls in a per-CPU map) minus without it (paired)"
    }
    fn available(&self) -> Result<(), String> {
        if BPF_OBJ.0.is_empty() {
            return Err(format!("the BPF programs could not be built: {BPF_WHY}"));
        }
        if !sys::raw::AVAILABLE {
            return Err("no bare system-call path for this architecture".into());
        }
        if !sys::sandbox::is_root() {
            return Err("loading and attaching BPF programs needs root".into());
        }
        Ok(())
    }
    fn variants(&self, _: &Ctx) -> Vec<Params> {
        super::one_param("program", PROGRAMS)
    }
    fn run(&self, ctx: &mut Ctx, params: &Params) -> Result<Measured, NotMeasured> {
        self.available().map_err(NotMeasured::Skipped)?;
        let program = params.get("program").and_then(|v| v.as_str()).unwrap_or_default();
        if !PROGRAMS.contains(&program) {
            return Err(NotMeasured::Failed(format!("program must be one of {PROGRAMS:?}, not {program:?}")));
        }
        measure(ctx, program)
    }
}

/// The kernel's name of a program (the C function's).
fn kernel_name(program: &str) -> String {
    format!("osprim_{program}")
}

/// The errno deepest in an error's chain, if any.
fn errno_of(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cur = Some(e);
    let mut found = None;
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            found = io.raw_os_error().or(found);
        }
        cur = err.source();
    }
    found
}

/// An error with its whole chain, on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        let next = err.to_string();
        if !s.contains(&next) {
            s.push_str(": ");
            s.push_str(&next);
        }
        cur = err.source();
    }
    s
}

/// A refusal by the kernel (no permission, no BPF, no such tracepoint or program type) is a
/// reason to skip; anything else a failure.
fn refused(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::EPERM | libc::EACCES | libc::ENOSYS | libc::EOPNOTSUPP | libc::ENOENT | libc::EINVAL))
}

/// The loaded object and its program.
pub(crate) struct Loaded {
    obj: aya::Ebpf,
    name: String,
    /// The program's id in the kernel.
    pub(crate) id: u32,
}

impl Loaded {
    /// Loads `program` (`empty` or `count`) into the kernel.
    pub(crate) fn new(program: &str) -> Result<Loaded, NotMeasured> {
        let name = kernel_name(program);
        let why = |what: &str, e: &(dyn std::error::Error + 'static)| {
            let text = format!("{what}: {}", chain(e));
            if refused(errno_of(e)) {
                NotMeasured::Skipped(format!("the kernel refused: {text}"))
            } else {
                NotMeasured::Failed(text)
            }
        };
        let mut obj = aya::Ebpf::load(&BPF_OBJ.0).map_err(|e| why("load the BPF object (its maps)", &e))?;
        let prog = obj
            .program_mut(&name)
            .ok_or_else(|| NotMeasured::Failed(format!("the BPF object has no program {name}")))?;
        let prog: &mut RawTracePoint = prog.try_into().map_err(|e| why(&format!("{name} as a raw tracepoint"), &e))?;
        prog.load().map_err(|e| match &e {
            // The verifier said why: the program is wrong, not the kernel unwilling.
            aya::programs::ProgramError::LoadError { verifier_log, .. }
                if !verifier_log.to_string().trim().is_empty() =>
            {
                let log = verifier_log.to_string();
                let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string();
                NotMeasured::Failed(format!("the verifier rejected {name}: {last}"))
            }
            _ => why(&format!("load {name}"), &e),
        })?;
        let id = prog.info().map_err(|e| why(&format!("the info of {name}"), &e))?.id();
        Ok(Loaded { obj, name, id })
    }

    fn program(&mut self) -> Option<&mut RawTracePoint> {
        self.obj.program_mut(&self.name).and_then(|p| p.try_into().ok())
    }

    /// Attaches the program at `sys_enter`, runs `calls` null calls with the kernel's BPF
    /// statistics on, detaches it; the program's run count before and after, and the link's id.
    pub(crate) fn validation_block(&mut self, shm: &SharedMem, calls: u64) -> Result<(), i32> {
        let stats = aya::sys::enable_stats(aya::sys::Stats::RunTime);
        if let Err(e) = &stats {
            shm.u64(slot::STATS_ERRNO).store(1 + errno_of(e).unwrap_or(0) as u64, std::sync::atomic::Ordering::Release);
        }
        let prog = self.program().ok_or(NO_PROGRAM * STAGE)?;
        let runs = |prog: &RawTracePoint| match prog.info() {
            Ok(info) => Some(info.run_count()),
            Err(e) => {
                shm.u64(slot::INFO_ERRNO)
                    .store(1 + errno_of(&e).unwrap_or(0) as u64, std::sync::atomic::Ordering::Release);
                None
            }
        };
        let before = runs(prog);
        let link = prog.attach(TRACEPOINT).map_err(|e| ATTACH * STAGE + errno_of(&e).unwrap_or(0))?;
        let link: FdLink = prog.take_link(link).map_err(|e| ATTACH * STAGE + errno_of(&e).unwrap_or(0))?.into();
        for _ in 0..calls {
            black_box(sys::raw::getppid());
        }
        let link_id = link.info().map(|i| i.id()).unwrap_or(0);
        drop(link);
        let after = runs(prog);
        drop(stats);
        let store = |s, v: u64| shm.u64(s).store(v, std::sync::atomic::Ordering::Release);
        store(slot::RUNS_BEFORE, before.unwrap_or(0));
        store(slot::RUNS_AFTER, after.unwrap_or(0));
        store(slot::LINK_ID, u64::from(link_id));
        Ok(())
    }

    /// Writes what `osprim_count` counts: calls of number `nr` by the process `tgid`.
    fn configure(&mut self, tgid: u64, nr: u64) -> Result<(), i32> {
        let (dev, ino) = pid_namespace();
        let map = self.obj.map_mut("osprim_config").ok_or(CONFIG * STAGE)?;
        let mut config: Array<&mut MapData, [u64; 4]> =
            Array::try_from(map).map_err(|e| CONFIG * STAGE + errno_of(&e).unwrap_or(0))?;
        config.set(0, [tgid, nr, dev, ino], 0).map_err(|e| CONFIG * STAGE + errno_of(&e).unwrap_or(0))
    }

    /// The calls `osprim_count` counted, summed over the CPUs.
    fn counted(&self) -> Result<u64, String> {
        let map = self.obj.map("osprim_counts").ok_or("no map osprim_counts")?;
        let counts: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(map).map_err(|e| chain(&e))?;
        let per_cpu = counts.get(&0, 0).map_err(|e| chain(&e))?;
        Ok(per_cpu.iter().sum())
    }
}

/// The device and inode of this process's PID namespace, or (0, 0) in the initial one (where
/// the kernel's own tgid is the one `getpid` returns).
fn pid_namespace() -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self/ns/pid") {
        Ok(m) if m.ino() != INIT_PID_NS_INO => (m.dev(), m.ino()),
        _ => (0, 0),
    }
}

/// Turns an install failure code into the row's reason.
fn explain(code: i32) -> NotMeasured {
    let (stage, errno) = (code / STAGE, code % STAGE);
    let e = std::io::Error::from_raw_os_error(errno);
    match stage {
        ATTACH if refused(Some(errno)) => {
            NotMeasured::Skipped(format!("the kernel refused to attach a raw tracepoint program at {TRACEPOINT}: {e}"))
        }
        ATTACH => NotMeasured::Failed(format!("attach at {TRACEPOINT}: {e}")),
        NO_PROGRAM => NotMeasured::Failed("the interposed child found no program".into()),
        CONFIG => NotMeasured::Failed(format!("write the configuration map: {e}")),
        _ => NotMeasured::Failed(format!("install failed with code {code}")),
    }
}

/// Whether `pred` becomes true within [`GONE_WITHIN`].
fn eventually(mut pred: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + GONE_WITHIN;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether the kernel lists a BPF program with this id.
pub fn program_exists(id: u32) -> bool {
    loaded_programs().any(|p| p.map(|p| p.id() == id).unwrap_or(false))
}

/// Whether the kernel lists a BPF link with this id.
pub fn link_exists(id: u32) -> bool {
    loaded_links().any(|l| l.map(|l| l.id() == id).unwrap_or(false))
}

/// The ids of the links the kernel lists to program `id`.
fn links_to(id: u32) -> Vec<u32> {
    loaded_links().filter_map(Result::ok).filter(|l| l.program_id() == id).map(|l| l.id()).collect()
}

fn measure(ctx: &mut Ctx, program: &str) -> Result<Measured, NotMeasured> {
    let loaded = Loaded::new(program)?;
    let id = loaded.id;
    let loaded = Rc::new(RefCell::new(loaded));
    let shm = Arc::new(SharedMem::new(slot::COUNT).map_err(|e| NotMeasured::Failed(format!("shared memory: {e}")))?);
    let counting = program == "count";

    // In the interposed child: the validation block, then the tgid to count.
    let install: interposer::Install = {
        let (loaded, shm) = (loaded.clone(), shm.clone());
        Box::new(move || {
            let mut l = loaded.borrow_mut();
            l.validation_block(&shm, VALIDATION_CALLS)?;
            l.configure(u64::from(std::process::id()), libc::SYS_getppid as u64)?;
            Ok(None)
        })
    };
    // In the interposed child, around each block: attach, then detach.
    let arm: interposer::Arm = {
        let (loaded, shm) = (loaded.clone(), shm.clone());
        let mut link = None;
        Box::new(move |on| {
            use std::sync::atomic::Ordering::Release;
            let (began, cpu) = (Instant::now(), crate::cpu_time::sum_ns(&[crate::cpu_time::Task::Me]));
            let mut l = loaded.borrow_mut();
            let Some(prog) = l.program() else {
                shm.u64(if on { slot::ATTACH_FAILURES } else { slot::DETACH_FAILURES }).fetch_add(1, Release);
                return;
            };
            if on {
                shm.u64(slot::ATTACHES).fetch_add(1, Release);
                match prog.attach(TRACEPOINT) {
                    Ok(l) => {
                        link = Some(l);
                        // Untimed calls of another number, which `count` does not count.
                        for _ in 0..WARM_CALLS {
                            black_box(nix::unistd::getpid());
                        }
                    }
                    Err(_) => {
                        shm.u64(slot::ATTACH_FAILURES).fetch_add(1, Release);
                    }
                }
            } else if let Some(l) = link.take()
                && prog.detach(l).is_err()
            {
                shm.u64(slot::DETACH_FAILURES).fetch_add(1, Release);
            }
            shm.u64(if on { slot::ATTACH_NS } else { slot::DETACH_NS })
                .fetch_add(began.elapsed().as_nanos() as u64, Release);
            if let (Some(c0), Some(c1)) = (cpu, crate::cpu_time::sum_ns(&[crate::cpu_time::Task::Me])) {
                shm.u64(slot::ARM_CPU_NS).fetch_add(c1.saturating_sub(c0), Release);
            }
        })
    };
    let before_stop: interposer::Before = {
        let (loaded, shm) = (loaded.clone(), shm.clone());
        Box::new(move |pair| {
            use std::sync::atomic::Ordering::Acquire;
            let calls = pair.interposed_calls();
            let attaches = shm.u64(slot::ATTACHES).load(Acquire);
            let failed = shm.u64(slot::ATTACH_FAILURES).load(Acquire) + shm.u64(slot::DETACH_FAILURES).load(Acquire);
            let mut checks = vec![Check::new(
                "the program was attached for every interposed block and detached after it",
                "no attach or detach failed",
                format!("{failed} of {} attaches and detaches failed", 2 * attaches),
                failed == 0 && attaches > 0,
            )];
            if counting {
                let name = "the program counted every call the interposed child made in its blocks (its per-CPU map, \
                            summed over the CPUs)";
                checks.push(match loaded.borrow().counted() {
                    Ok(n) => Check::new(name, format!("{calls} calls"), format!("{n} counted"), n == calls),
                    Err(e) => Check::impossible(name, format!("read the map: {e}")),
                });
            }
            checks
        })
    };
    let spec = Spec { install, call: sys::raw::getppid, expect: Expect::Answer, arm: None, attach: Some(arm), explain };
    let what = format!("with the BPF program {} attached at {TRACEPOINT}", kernel_name(program));
    let result = interposer::measure(ctx, spec, &what, before_stop);
    // The children are reaped: no link may remain. Then the program's last descriptor closes.
    let links_gone = eventually(|| links_to(id).is_empty());
    let left_links = links_to(id);
    let counted = if counting { loaded.borrow().counted().ok() } else { None };
    drop(loaded);
    let program_gone = eventually(|| !program_exists(id));
    let mut m = result?;

    use std::sync::atomic::Ordering::Acquire;
    let get = |s| shm.u64(s).load(Acquire);
    let name = format!(
        "the program ran at least once per call of an untimed validation block ({VALIDATION_CALLS} calls with it \
         attached; bpf_prog_info.run_cnt, kernel statistics on through BPF_ENABLE_STATS)"
    );
    m.checks.push(match (get(slot::STATS_ERRNO), get(slot::INFO_ERRNO)) {
        (0, 0) => {
            let runs = get(slot::RUNS_AFTER).saturating_sub(get(slot::RUNS_BEFORE));
            m.observed.insert("validation_runs".into(), runs.into());
            Check::new(name, format!("≥ {VALIDATION_CALLS} runs"), format!("{runs} runs"), runs >= VALIDATION_CALLS)
        }
        (0, e) => {
            Check::impossible(name, format!("bpf_prog_info: {}", std::io::Error::from_raw_os_error(e as i32 - 1)))
        }
        (e, _) => {
            Check::impossible(name, format!("BPF_ENABLE_STATS: {}", std::io::Error::from_raw_os_error(e as i32 - 1)))
        }
    });
    let link_id = get(slot::LINK_ID) as u32;
    m.checks.push(Check::new(
        "no link to the program remains once the children are reaped (the kernel's list of links)",
        "none",
        match (left_links.is_empty(), link_id) {
            (true, 0) => "none listed, but the validation block's link had no id (bpf_link_info failed)".to_string(),
            (true, _) => "none".to_string(),
            (false, _) => format!("links {left_links:?}"),
        },
        links_gone && link_id != 0,
    ));
    m.checks.push(Check::new(
        "the program is gone once the measuring process closed it (its id in the kernel's list of programs)",
        format!("program {id} not listed"),
        if program_gone { "not listed".to_string() } else { format!("program {id} still listed") },
        program_gone,
    ));
    m.observed.insert("bpf_program_id".into(), id.into());
    m.observed.insert("bpf_link_attaches".into(), get(slot::ATTACHES).into());
    // What attaching (with its warm-up calls) and detaching took per block, outside the timed
    // region: the price of turning the hook on and off (wall time; the CPU time of both).
    for (key, s) in [
        ("attach_ns_per_block", slot::ATTACH_NS),
        ("detach_ns_per_block", slot::DETACH_NS),
        ("attach_detach_cpu_ns_per_block", slot::ARM_CPU_NS),
    ] {
        if let Some(v) = get(s).checked_div(get(slot::ATTACHES)) {
            m.observed.insert(key.into(), v.into());
        }
    }
    if let Some(n) = counted {
        m.observed.insert("bpf_counted".into(), n.into());
    }
    m.notes.push(format!(
        "a raw tracepoint at {TRACEPOINT} turns on the tracepoint for every task: while the program is attached, every \
         system call on the machine takes the traced entry path and runs it; it was attached only for the interposed \
         child's blocks (attached before each, detached after, outside the timed region)"
    ));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads `program`, or says why the test cannot (not root, no clang, a kernel that refuses).
    fn load_or_skip(program: &str) -> Option<Loaded> {
        if let Err(why) = SysEnter.available() {
            eprintln!("skipped: {why}");
            return None;
        }
        match Loaded::new(program) {
            Ok(l) => Some(l),
            Err(NotMeasured::Skipped(why)) => {
                eprintln!("skipped: {why}");
                None
            }
            Err(e) => panic!("{program}: {e:?}"),
        }
    }

    #[test]
    fn install_codes_say_why() {
        assert!(matches!(explain(ATTACH * STAGE + libc::EPERM), NotMeasured::Skipped(s) if s.contains(TRACEPOINT)));
        assert!(matches!(explain(ATTACH * STAGE + libc::EIO), NotMeasured::Failed(_)));
        assert!(matches!(explain(CONFIG * STAGE + libc::E2BIG), NotMeasured::Failed(s) if s.contains("configuration")));
    }

    #[test]
    fn an_errno_is_found_in_an_error_chain() {
        let e = std::io::Error::from_raw_os_error(libc::EPERM);
        assert_eq!(errno_of(&e), Some(libc::EPERM));
        assert!(refused(Some(libc::EPERM)) && !refused(Some(libc::EIO)) && !refused(None));
    }

    #[test]
    fn both_programs_load_attach_and_run_once_per_call() {
        let _serial = super::super::testing::serial();
        for program in PROGRAMS {
            let Some(mut l) = load_or_skip(program) else { return };
            let shm = SharedMem::new(slot::COUNT).expect("shared memory");
            l.validation_block(&shm, 1000).expect("attach at sys_enter");
            let get = |s| shm.u64(s).load(std::sync::atomic::Ordering::Acquire);
            if get(slot::STATS_ERRNO) == 0 {
                let runs = get(slot::RUNS_AFTER) - get(slot::RUNS_BEFORE);
                assert!(runs >= 1000, "{program}: {runs} runs for 1000 calls");
            } else {
                eprintln!("{program}: no BPF statistics here (errno {})", get(slot::STATS_ERRNO) - 1);
            }
            assert_ne!(get(slot::LINK_ID), 0);
            let id = l.id;
            assert!(program_exists(id));
            drop(l);
            assert!(eventually(|| !program_exists(id)), "{program}: program {id} outlived its descriptor");
        }
    }

    #[test]
    fn the_count_program_counts_only_the_configured_process_and_call() {
        let _serial = super::super::testing::serial();
        let Some(mut l) = load_or_skip("count") else { return };
        let shm = SharedMem::new(slot::COUNT).expect("shared memory");
        // Counting nothing yet (tgid 0): the validation block leaves the map at 0.
        l.validation_block(&shm, 100).expect("attach");
        assert_eq!(l.counted(), Ok(0));
        // In a child of its own, so that no other thread of the test binary is counted: 500
        // getppid calls counted, then 300 not (the configured number is getpid's).
        let (lr, shm) = (&mut l, &shm);
        let child = sys::process::fork_peer(move || {
            let l = lr;
            let me = u64::from(std::process::id());
            let ok = l.configure(me, libc::SYS_getppid as u64).is_ok()
                && l.validation_block(shm, 500).is_ok()
                && l.configure(me, libc::SYS_getpid as u64).is_ok()
                && l.validation_block(shm, 300).is_ok();
            if ok { 0 } else { 1 }
        });
        let status = child.expect("fork").finish(Duration::from_secs(10));
        assert!(status.success(), "{}", status.describe());
        assert_eq!(l.counted(), Ok(500));
    }

    #[test]
    fn a_row_validates_and_leaves_nothing_behind() {
        let _serial = super::super::testing::serial();
        if let Err(why) = SysEnter.available() {
            eprintln!("skipped: {why}");
            return;
        }
        super::super::testing::with_ctx(0.1, |ctx| {
            for p in SysEnter.variants(ctx) {
                match SysEnter.run(ctx, &p) {
                    Ok(m) => {
                        for c in m.checks.iter().filter(|c| {
                            !c.name.starts_with("pairs disturbed") && !c.name.contains("no less than nothing")
                        }) {
                            assert_eq!(c.ok, Some(true), "{p:?}: {c:?}");
                        }
                        if p["program"] == "count" {
                            assert!(m.checks.iter().any(|c| c.name.contains("counted every call")), "{p:?}");
                        }
                        let id = m.observed["bpf_program_id"].as_u64().expect("program id") as u32;
                        assert!(!program_exists(id), "{p:?}: program {id} outlived the row");
                        assert!(links_to(id).is_empty(), "{p:?}: a link outlived the row");
                        assert_eq!(m.breakdown.len(), 2);
                    }
                    Err(NotMeasured::Skipped(why)) => eprintln!("{p:?} skipped: {why}"),
                    Err(e) => panic!("{p:?}: {e:?}"),
                }
            }
        });
    }
}
