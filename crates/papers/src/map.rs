//! From each seed row to what answers it today: `shared/design/SEED-MAP.md`, revision 4, as
//! code.
//!
//! The rules: the same operation (or, where Linux has no identical primitive, the nearest
//! mechanism doing the same job, labelled `nearest:`), the same condition (a cold-cache figure
//! only beside a cold-cache measurement), the paper's statistic, parts of a breakdown from one
//! measurement, one figure per row. A row no benchmark can answer yet says which benchmark or
//! mode it waits for; a row with no Linux counterpart says why. Revision 4: a stage that spans
//! two of the paper's rows is compared with their sum on one merged row ([`Fallback::spans`]);
//! a stage that is an estimate rather than timed inside the operation says how ([`estimate`]).

use super::Figure;

/// One result of a benchmark: its parameters where it has several (e.g. placement), and one
/// stage of its breakdown where the seed gives a part (e.g. Rhino's "trap").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// Benchmark id.
    pub id: &'static str,
    /// Parameters the result must have (values compared as text).
    pub params: &'static [(&'static str, &'static str)],
    /// A stage of the breakdown instead of the total.
    pub stage: Option<&'static str>,
}

impl Want {
    /// The total of `id`'s result with `params`.
    const fn total(id: &'static str, params: &'static [(&'static str, &'static str)]) -> Want {
        Want { id, params, stage: None }
    }

    /// `id [k=v …] (stage)` for the seed view.
    pub fn label(&self) -> String {
        let mut s = self.id.to_string();
        if !self.params.is_empty() {
            let p: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push_str(&format!(" [{}]", p.join(" ")));
        }
        if let Some(stage) = self.stage {
            s.push_str(&format!(" ({stage})"));
        }
        s
    }

    /// Whether it asks for a result taken with cold caches.
    pub fn is_cold(&self) -> bool {
        self.params.iter().any(|&(k, v)| k == "cache" && v == "cold")
    }
}

/// A row Linux has no identical primitive for: the nearest mechanisms that do the same job
/// (one or several); the row takes the fastest of them measured in the run, and names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidates {
    /// Why no identical primitive exists, and what the candidates have in common.
    pub why: &'static str,
    /// The candidates, each one result.
    pub candidates: &'static [Want],
}

/// A row the paper composes from several operations: today's figure is the sum of the parts'
/// figures, each measured on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The parts.
    pub parts: &'static [Want],
    /// A part of the paper's composition with no Linux counterpart, left out of today's sum
    /// (empty when none is).
    pub missing: &'static str,
}

/// A row answered by one result where the machine has what it needs, and otherwise by the
/// nearest mechanism that does the same job (`nearest:`, with why): a protection-key domain,
/// or one whose rights the kernel switches where the CPU has no keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback {
    /// The same operation.
    pub first: Want,
    /// The nearest, taken when `first` has no figures in the run.
    pub then: Want,
    /// Why `then` is the nearest, said on the row when it answers.
    pub why: &'static str,
    /// How `then` is named beside `first` when both were measured (empty: not shown).
    pub beside: &'static str,
    /// A part of the paper's operation neither result includes (empty when none is).
    pub missing: &'static str,
    /// When `then` answers, the paper's rows it spans (operations, this row's first, of the
    /// same platform): one combined stage, compared on one merged row with the sum of their
    /// figures, never with one of them (empty when `then` is a stage of this row alone).
    pub spans: &'static [&'static str],
}

/// One size result, `nearest:` with why: section `$section` (`text`, `data` or `bss`) of `$id`
/// with the parameters given.
macro_rules! sized {
    ($section:expr, $id:expr, $why:expr $(, $k:expr => $v:expr)*) => {
        match $section {
            "text" => Target::Nearest(Candidates {
                why: $why,
                candidates: &[Want { id: $id, params: &[$(($k, $v),)* ("section", "text")], stage: None }],
            }),
            "data" => Target::Nearest(Candidates {
                why: $why,
                candidates: &[Want { id: $id, params: &[$(($k, $v),)* ("section", "data")], stage: None }],
            }),
            _ => Target::Nearest(Candidates {
                why: $why,
                candidates: &[Want { id: $id, params: &[$(($k, $v),)* ("section", "bss")], stage: None }],
            }),
        }
    };
}

/// What answers a seed row today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An osprim benchmark's total (it may be missing from a given result file).
    Bench(&'static str),
    /// One result of an osprim benchmark, picked by parameters and stage.
    Pick(Want),
    /// The fastest of several results measured in the run (`nearest:`).
    Nearest(Candidates),
    /// The sum of several results, as the paper composes the row.
    Sum(Parts),
    /// One result, or where it has no figures, its nearest.
    Fallback(Fallback),
    /// Not measured yet: the benchmark or mode it waits for.
    Planned(&'static str),
    /// Retired instructions, counted by the hardware (`--counters`) in the results named: the
    /// one result, or the fastest in time of several (a `nearest:` row, with why).
    Counters(Candidates),
    /// Retired instructions of a difference (L4's address-space switch: a process switch minus
    /// a thread switch): the first result's count minus the second's, where both carry them.
    CountersDifference(Want, Want),
    /// No Linux counterpart, and why.
    NotApplicable(&'static str),
    /// A stability test's longest run without a failure (`osprim stress`, `osprim
    /// errortest`): from the result, or from the history of the machine.
    Stability(&'static str),
}

impl Target {
    /// The benchmark id this target runs, if it runs exactly one.
    pub fn bench_id(&self) -> Option<&'static str> {
        match self {
            Target::Bench(id) => Some(id),
            Target::Pick(w) => Some(w.id),
            _ => None,
        }
    }

    /// What it asks for, when it asks for one result: the id alone, or the id with parameters
    /// and stage.
    pub fn want(&self) -> Option<Want> {
        match *self {
            Target::Bench(id) => Some(Want::total(id, &[])),
            Target::Pick(w) => Some(w),
            _ => None,
        }
    }

    /// Every result it reads: one, the candidates of a nearest row, or the parts of a sum.
    pub fn wants(&self) -> Vec<Want> {
        match *self {
            Target::Nearest(n) => n.candidates.to_vec(),
            Target::Sum(s) => s.parts.to_vec(),
            Target::Fallback(f) => vec![f.first, f.then],
            Target::Counters(c) => c.candidates.to_vec(),
            Target::CountersDifference(a, b) => vec![a, b],
            _ => self.want().into_iter().collect(),
        }
    }
}

/// What a cold-cache ("worst case") row waits for.
pub const COLD_CACHE_MODE: &str = "cold-cache mode";

/// Both ends on one CPU, as every seed machine had one CPU.
const SAME_CPU: &[(&str, &str)] = &[("placement", "same_cpu")];
/// Two threads of one process on one CPU.
const THREADS: &[(&str, &str)] = &[("peer", "thread"), ("placement", "same_cpu")];
/// Two processes on one CPU.
const PROCESSES: &[(&str, &str)] = &[("peer", "process"), ("placement", "same_cpu")];
/// Two threads of one process on one CPU, an empty message.
const THREADS_EMPTY: &[(&str, &str)] = &[("peer", "thread"), ("placement", "same_cpu"), ("bytes", "0")];
/// Two processes on one CPU, an empty message.
const PROCESSES_EMPTY: &[(&str, &str)] = &[("peer", "process"), ("placement", "same_cpu"), ("bytes", "0")];

/// Why an L4-style IPC or domain transfer is compared with the fastest kernel hand-off.
const HANDOFF_WHY: &str = "no Linux IPC passes a message in registers through a kernel fast path; the fastest \
    kernel-mediated hand-off measured in this run (futex, eventfd or pipe, empty message, one CPU)";

/// The one choice for "L4 one-way / IPC" in both papers (L4Ka's IPC rows, Go!'s L4 domain
/// transfer): half a ping-pong round trip (`ipc.*`), as L4 measured its IPC; the other systems'
/// one-way transfers in Go!'s comparison are stamped one way (`xfer.*`).
pub const L4_ONE_WAY: &str = "L4's one-way IPC, in both papers, is half a ping-pong round trip (ipc.*), as L4 measured \
    it; the other systems' one-way transfers are stamped one way (xfer.*)";

/// Why Go!'s L4 one-way row is a half round trip.
const L4_ONE_WAY_WHY: &str = "no Linux IPC passes a message in registers through a kernel fast path; the fastest \
    kernel-mediated hand-off measured in this run (futex, eventfd or pipe, empty message, one CPU), as half a ping-pong \
    round trip (ipc.*) like L4's own IPC figures and L4Ka's IPC rows";

/// One-way hand-offs between two threads (L4's intra-address-space IPC).
const IPC_THREADS: &[Want] =
    &[Want::total("ipc.futex", THREADS), Want::total("ipc.eventfd", THREADS), Want::total("ipc.pipe", THREADS_EMPTY)];
/// One-way hand-offs between two processes (L4's inter-address-space IPC).
const IPC_PROCESSES: &[Want] = &[
    Want::total("ipc.futex", PROCESSES),
    Want::total("ipc.eventfd", PROCESSES),
    Want::total("ipc.pipe", PROCESSES_EMPTY),
];
/// Round trips between two processes (a null RPC).
const RPC_PROCESSES: &[Want] = &[
    Want::total("rpc.futex", PROCESSES),
    Want::total("rpc.eventfd", PROCESSES),
    Want::total("rpc.pipe", PROCESSES_EMPTY),
];
/// One-way transfers between two processes, stamp to stamp (a domain transfer).
const XFER_PROCESSES: &[Want] = &[
    Want::total("xfer.futex", PROCESSES),
    Want::total("xfer.eventfd", PROCESSES),
    Want::total("xfer.pipe", PROCESSES_EMPTY),
];

/// The stages of a result that together make its total, one list per way it can be broken
/// down (a stage the seed view compares must belong to one whose stages add up).
pub fn partitions(id: &str) -> &'static [&'static [&'static str]] {
    match id {
        "txn.begin" | "txn.commit_ro" | "txn.commit_8b" | "fault.user.sigsegv" => &[&["trap", "other"]],
        "notify.signal" => &[
            &["interrupt", "signal", "handler", "return"],
            &["interrupt_signal", "handler", "return"],
            &["deliver", "handler", "return"],
        ],
        "task.uclamp" | "task.setattr" => &[&["kernel", "entry"]],
        "notify.softirq" => &[
            &["send", "driver_to_softirq", "softirq_to_wakeup", "handler", "return"],
            &["send", "driver_to_wakeup", "handler", "return"],
        ],
        _ => &[],
    }
}

/// A stage that is an estimate unless its result says it was timed inside the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// The field of the result's `observed` that says how the stage was timed: the value
    /// [`STAMPED`] means inside the operation (stamps around each of its system calls), and the
    /// stage is a measured one; absent or any other value, it is this estimate.
    pub timing: &'static str,
    /// How it is estimated, for the row's `estimated:` label.
    pub how: &'static str,
    /// Whether the estimate is a difference (a total minus an estimate), which may come out
    /// below 0 or within resolution; a product of counts and costs cannot.
    pub difference: bool,
}

/// The value of an [`Estimate::timing`] field that says a stage was timed inside the operation.
pub const STAMPED: &str = "stamped";

/// How stage `stage` of `id` is estimated where it is not timed inside the operation (SEED-MAP
/// revision 4: shown beside its total with no ratio): Rhino's trap (the operation's own kernel
/// crossings × a separately timed null call) and the rest of the transaction, RightSpeed's
/// kernel-mode component (the whole call minus a separate null call).
pub fn estimate(id: &str, stage: &str) -> Option<Estimate> {
    match (id, stage) {
        ("txn.begin" | "txn.commit_ro" | "txn.commit_8b", "trap") => Some(Estimate {
            timing: "trap_timing",
            how: "the operation's own kernel crossings (observed.trap_crossings, counted by the RVM in the same \
                  samples) × one null system call (getppid) timed separately beside the operation",
            difference: false,
        }),
        ("txn.begin" | "txn.commit_ro" | "txn.commit_8b", "other") => {
            Some(Estimate { timing: "trap_timing", how: "the total minus the estimated trap", difference: true })
        }
        ("task.uclamp" | "task.setattr", "kernel") => Some(Estimate {
            timing: "kernel_timing",
            how: "the whole sched_setattr call minus a bare null system call (getppid) timed beside it in the same loop",
            difference: true,
        }),
        _ => None,
    }
}

/// The paper's rows one combined stage answers, this row first: where `f`'s nearest is a stage
/// spanning two of the paper's rows ([`Fallback::spans`]); empty otherwise.
pub fn spanned(f: &Figure) -> Vec<&'static Figure> {
    let Target::Fallback(fb) = target(f) else { return Vec::new() };
    let op = |g: &Figure| g.operation.trim_start_matches("notification: ").to_string();
    fb.spans
        .iter()
        .filter_map(|s| {
            super::figures().iter().find(|g| {
                g.seed_file == f.seed_file && g.platform == f.platform && g.variant == f.variant && op(g) == *s
            })
        })
        .collect()
}

/// The row whose merged row answers `f` where a combined stage spans both ([`spanned`]), when
/// `f` is not that row itself.
pub fn merged_into(f: &Figure) -> Option<&'static Figure> {
    super::figures()
        .iter()
        .filter(|g| g.seed_file == f.seed_file && g.platform == f.platform && *g != f)
        .find(|g| spanned(g).iter().skip(1).any(|h| *h == f))
}

/// Whether `f` is a part of a breakdown whose total is a row of its own (Rhino's trap and
/// other, RightSpeed's kernel-mode component, VMMC's notification stages): a paper's summary
/// rests on totals, not on their parts as well.
pub fn is_part(f: &Figure) -> bool {
    matches!(f.variant.as_str(), "trap" | "other" | "kernel-mode component")
        || (f.seed_file.starts_with("002") && !f.operation.ends_with("total"))
}

/// The benchmark that answers `f`.
pub fn target(f: &Figure) -> Target {
    match &f.seed_file[..3] {
        "000" => rightspeed(f.operation.as_str(), f.variant.as_str()),
        "001" => l4(f),
        "002" => vmmc(f),
        "003" => go(f),
        "004" => rhino(f.operation.as_str(), f.variant.as_str()),
        _ => Target::NotApplicable("unknown seed"),
    }
}

/// Figures measured beside today's for context, not compared: the in-kernel analogue of a
/// user-level page fault, the bare entry path beside the empty system call, the contended
/// hand-off beside an uncontended lock. Each a label and the result.
pub fn beside(f: &Figure) -> Vec<(&'static str, Want)> {
    let mut v = beside_row(f);
    v.extend(unchanged(f).map(|w| ("rights unchanged", w)));
    v
}

/// What [`beside`] shows beside one row, but the rights-unchanged path.
fn beside_row(f: &Figure) -> Vec<(&'static str, Want)> {
    const COLD: &[(&str, &str)] = &[("cache", "cold"), ("map", "shared")];
    let hot = !f.variant.contains("cold cache");
    match (&f.seed_file[..3], f.operation.as_str(), f.variant.as_str()) {
        ("004", "page fault read cold", "total") => {
            vec![("in-kernel analogue", Want::total("fault.file.read", COLD))]
        }
        ("004", "page fault write cold", "total") => {
            vec![("in-kernel analogue", Want::total("fault.file.write", COLD))]
        }
        ("001", "empty system call", "cycles") => {
            vec![("an unimplemented number (entry and exit alone)", Want::total("syscall.enosys", &[]))]
        }
        ("003", "lock" | "unlock", _) if hot => vec![
            ("contended hand-off, one CPU", Want::total("lock.handoff", SAME_CPU)),
            ("two CPUs", Want::total("lock.handoff", &[("placement", "cross_cpu")])),
        ],
        ("003", "switch_stacks", _) if hot => vec![("glibc swapcontext", Want::total("ctx.swapcontext", &[]))],
        ("003", "sel2ref", _) => {
            let cache: &'static [(&'static str, &'static str)] = if hot { &[] } else { &[("cache", "cold")] };
            vec![("the kernel's handle → object step, fcntl(F_GETFD)", Want::total("syscall.getfd", cache))]
        }
        ("003", "memory per interface", _) => vec![
            ("a whole domain", Want::total("space.domain", &[("rights", "pkey")])),
            ("a whole domain", Want::total("space.domain", &[("rights", "mprotect")])),
        ],
        ("003", op, _) if hot && op.starts_with("throw after") => {
            const FAULT: &str = "the protection-fault path (SIGSEGV)";
            match op {
                "throw after call" => vec![
                    (FAULT, Want::total("domain.fault", &[("after", "call"), ("rights", "pkey")])),
                    (FAULT, Want::total("domain.fault", &[("after", "call"), ("rights", "mprotect")])),
                ],
                "throw after t-call" => vec![
                    (FAULT, Want::total("domain.fault", &[("after", "tcall"), ("rights", "pkey")])),
                    (FAULT, Want::total("domain.fault", &[("after", "tcall"), ("rights", "mprotect")])),
                ],
                _ => vec![
                    (FAULT, Want::total("domain.fault", &[("after", "fcall"), ("rights", "pkey")])),
                    (FAULT, Want::total("domain.fault", &[("after", "fcall"), ("rights", "mprotect")])),
                ],
            }
        }
        ("003", "null RPC round trip", _) if f.system == "Go!" => {
            vec![("the same call to another process", Want::total("domain.process", &[]))]
        }
        _ => Vec::new(),
    }
}

/// Beside a Go! call, transfer or throw row (whose figure is the protected nearest): the domain
/// library's own path with the rights switch skipped (`rights=unchanged`, measured in the same
/// rounds, in the row's condition). Without protection keys every kind switches rights by two
/// `mprotect` calls, which cost the same for all and hide the kinds' differences; this shows
/// them.
fn unchanged(f: &Figure) -> Option<Want> {
    if !f.seed_file.starts_with("003") {
        return None;
    }
    let cold = f.variant.contains("cold cache");
    macro_rules! path {
        ($id:expr $(, $k:expr => $v:expr)*) => {
            Some(if cold {
                Want::total($id, &[$(($k, $v),)* ("rights", "unchanged"), ("cache", "cold")])
            } else {
                Want::total($id, &[$(($k, $v),)* ("rights", "unchanged")])
            })
        };
    }
    match (f.table.as_str(), f.operation.as_str()) {
        ("OS comparison", op) if f.system == "Go!" => {
            if op.starts_with("null RPC") {
                path!("domain.fcall")
            } else {
                path!("domain.xfer", "via" => "key")
            }
        }
        ("ORB primitives", "call") => path!("domain.call"),
        ("ORB primitives", "t-call") => path!("domain.tcall"),
        ("ORB primitives", "f-call") => path!("domain.fcall"),
        ("ORB primitives", _) => path!("domain.xfer", "via" => "key"),
        ("Exception latency", "throw after call") => path!("domain.throw", "after" => "call"),
        ("Exception latency", "throw after t-call") => path!("domain.throw", "after" => "tcall"),
        ("Exception latency", _) => path!("domain.throw", "after" => "fcall"),
        ("GDT miss", "xfer via 16-bit selector") => path!("domain.xfer", "via" => "key"),
        ("GDT miss", "xfer via ObjRef cached in GDT") => path!("domain.xfer", "via" => "table_hit"),
        _ => None,
    }
}

/// Why a task row may be measured with the nice value: the nearest per-task hint.
const NICE_WHY: &str = "the kernel has no per-task utilisation clamp (CONFIG_UCLAMP_TASK); the same sched_setattr \
    path changing the thread's nice value, the per-task hint the scheduler does have, is the nearest";

/// RightSpeed's Table 3.
fn rightspeed(op: &str, variant: &str) -> Target {
    use Target::*;
    let kernel = (variant == "kernel-mode component").then_some("kernel");
    let task = |first: &'static [(&'static str, &'static str)]| {
        Fallback(self::Fallback {
            first: Want { id: "task.uclamp", params: first, stage: kernel },
            then: Want { id: "task.setattr", params: first, stage: kernel },
            why: NICE_WHY,
            beside: "",
            missing: "",
            spans: &[],
        })
    };
    match op {
        "Load and initialize library for a process" => Bench("lib.dlopen.init"),
        "Install message hook" => Bench("signal.install"),
        "Open system task type group file" => Pick(Want::total("fs.open_read_close", &[("bytes", "512")])),
        "Open per-app task type group file" => Pick(Want::total("fs.open_read_close", &[("bytes", "256")])),
        "Get application name" => Bench("id.exe_name"),
        "Intercept non-user-interface message" => Bench("interpose.preload"),
        "Intercept and handle user interface message" => Fallback(self::Fallback {
            first: Want::total("interpose.ui", &[("hint", "uclamp")]),
            then: Want::total("interpose.ui", &[("hint", "nice")]),
            why: NICE_WHY,
            beside: "",
            missing: "evaluating the message type (RightSpeed's own classification, 1.013 µs then)",
            spans: &[],
        }),
        "Evaluate message type" => NotApplicable("RightSpeed's own user-level classification of a window message"),
        "Simple I/O control request" => Bench("syscall.ioctl"),
        "Begin a task" => task(&[("op", "begin")]),
        "End a task" => task(&[("op", "end")]),
        // One row, one figure: the list's row is the call timed alone; the breakdown's total and
        // kernel-mode part come from the measurement paired with a null call (parts add up).
        "End task and begin another" => task(&[("op", "end_begin"), ("pair", "none")]),
        "End one task and begin another" => task(&[("op", "end_begin"), ("pair", "null")]),
        _ => NotApplicable("not mapped"),
    }
}

/// L4Ka::Pistachio's summary: cycles, and retired instructions (which need counters).
fn l4(f: &Figure) -> Target {
    use Target::*;
    let op = f.operation.as_str();
    if f.unit == "instructions" {
        const NULL: &[Want] = &[Want::total("syscall.null", &[])];
        if op == "address space switch" {
            // As for time: a process switch minus the thread switch, each counted on its own.
            return CountersDifference(Want::total("ctx.process", SAME_CPU), Want::total("ctx.thread", SAME_CPU));
        }
        return Counters(match op {
            "empty system call" => Candidates { why: "", candidates: NULL },
            "intra-address space IPC" => Candidates { why: L4_ONE_WAY_WHY, candidates: IPC_THREADS },
            _ => Candidates { why: L4_ONE_WAY_WHY, candidates: IPC_PROCESSES },
        });
    }
    match op {
        "empty system call" => Bench("syscall.null"),
        "address space switch" => Pick(Want::total("ctx.address_space", SAME_CPU)),
        "intra-address space IPC" => Nearest(Candidates { why: L4_ONE_WAY_WHY, candidates: IPC_THREADS }),
        "inter-address space IPC" => Nearest(Candidates { why: L4_ONE_WAY_WHY, candidates: IPC_PROCESSES }),
        _ => NotApplicable("not mapped"),
    }
}

/// VMMC's receive-side notification stages (Figure 8), Linux and NT. Linux's four rows are the
/// stages of one measurement, `notify.signal` with a POSIX timer as the interrupt source, so
/// that they add up to its total: interrupt (expiry → the kernel's timer interrupt, from the
/// trace), signal (→ the user handler's first instruction), return (handler exit → the
/// interrupted loop). Where tracefs cannot be read, the first two are one stage
/// (`interrupt_signal`), shown on one merged row beside the sum of both rows' figures. NT's five rows are the
/// stages of `notify.softirq`, a loopback packet's receive deferred to the NET_RX softirq (the
/// DPC's counterpart): send → driver, driver → softirq start → the woken thread, return; where
/// the softirq's start cannot be seen, its two middle rows are one merged row likewise.
fn vmmc(f: &Figure) -> Target {
    use Target::*;
    const COMBINED_WHY: &str = "the kernel's tracepoints are not readable here: the interrupt and signal stages are one, \
        timer expiry → the user handler's first instruction (combined), which is the interrupt stage and the next row's \
        together: one merged row, compared with the sum of both rows' figures";
    const TIMER: &[(&str, &str)] = &[("source", "timer")];
    const SOFTIRQ: &[(&str, &str)] =
        &[("source", "loopback_udp"), ("placement", "same_cpu"), ("interrupted", "sched_idle")];
    const SEND_WHY: &str = "loopback has no device interrupt: the event is a UDP send on the receiver's CPU, and this \
        stage runs from the send to the loopback driver's transmit handler (loopback_xmit), in the measurement whose \
        stages make NT's other rows";
    const NT_SEND: &[Want] = &[Want { id: "notify.softirq", params: SOFTIRQ, stage: Some("send") }];
    const PREQUEUE_WHY: &str = "the kernel stamps a received packet as it is queued (net.core.netdev_tstamp_prequeue \
        = 1), so the NET_RX softirq's start cannot be seen: the stage runs from the driver handler to the user \
        thread's wake-up, this row and the next together (combined): one merged row, compared with the sum of both rows' \
        figures";
    const NT_TOTAL_WHY: &str = "a notification deferred out of the interrupt path: a loopback UDP packet's receive \
        deferred to the NET_RX softirq, which wakes a blocked thread on the same CPU; its send stands where NT's \
        device interrupt stands";
    const NT_TOTAL: &[Want] = &[Want { id: "notify.softirq", params: SOFTIRQ, stage: None }];
    let op = f.operation.trim_start_matches("notification: ");
    let stage = |stage| Pick(Want { id: "notify.signal", params: TIMER, stage: Some(stage) });
    let softirq = |stage| Pick(Want { id: "notify.softirq", params: SOFTIRQ, stage: Some(stage) });
    match (f.platform.as_str(), op) {
        ("Linux", "interrupt to driver handler") => Fallback(self::Fallback {
            first: Want { id: "notify.signal", params: TIMER, stage: Some("interrupt") },
            then: Want { id: "notify.signal", params: TIMER, stage: Some("interrupt_signal") },
            why: COMBINED_WHY,
            beside: "",
            missing: "",
            spans: &["interrupt to driver handler", "handler to user-level handler via signal"],
        }),
        ("Linux", "handler to user-level handler via signal") => stage("signal"),
        ("Linux", "return to interrupted process") => stage("return"),
        ("Linux", _) => Pick(Want::total("notify.signal", TIMER)),
        (_, "interrupt to driver handler") => Nearest(Candidates { why: SEND_WHY, candidates: NT_SEND }),
        (_, "interrupt to DPC handler start") => Fallback(self::Fallback {
            first: Want { id: "notify.softirq", params: SOFTIRQ, stage: Some("driver_to_softirq") },
            then: Want { id: "notify.softirq", params: SOFTIRQ, stage: Some("driver_to_wakeup") },
            why: PREQUEUE_WHY,
            beside: "",
            missing: "",
            spans: &["interrupt to DPC handler start", "DPC to user-level handler thread wakeup"],
        }),
        (_, "DPC to user-level handler thread wakeup") => softirq("softirq_to_wakeup"),
        (_, "return to interrupted thread") => softirq("return"),
        _ => Nearest(Candidates { why: NT_TOTAL_WHY, candidates: NT_TOTAL }),
    }
}

/// Go!'s tables. Its worst cases (cold cache) wait for the cold-cache mode; its component
/// calls, exceptions and creation for protection-key domains.
fn go(f: &Figure) -> Target {
    use Target::*;
    let op = f.operation.as_str();
    if f.table == "Component sizes" {
        return component_size(op, f.variant.as_str());
    }
    if f.table == "Spatial" && op != "memory per interface" {
        return sized!(
            if op == "ORB code size" { "text" } else { "data" },
            "size.domain",
            if op == "ORB code size" {
                "Go!'s ORB (its call, naming and protection layer) has no Linux build; osprim's own domain layer \
                 (the domain crate in osprim's binary) does that job here"
            } else {
                "Go!'s ORB (its call, naming and protection layer) has no Linux build; osprim's own domain layer \
                 does that job here: the domain crate's data in osprim's binary plus its key table, which does the \
                 GDT's job on the heap (20 domains with one interface each, 15 hardware keys)"
            }
        );
    }
    let hot = match go_hot(f.table.as_str(), op, f.system.as_str()) {
        NotApplicable(why) => return NotApplicable(why),
        t => t,
    };
    if f.variant.contains("cold cache") { go_cold(f.table.as_str(), op) } else { hot }
}

/// Why a domain row may be measured with rights the kernel switches.
const KERNEL_RIGHTS: &str = "no protection keys here, rights switched by the kernel (mprotect of the callee's region \
    on entry and exit) instead of by wrpkru";

/// A domain row: on protection-key domains (`rights=pkey`) where the CPU has keys, else on
/// domains whose rights the kernel switches (`rights=mprotect`), labelled `nearest:`; with both
/// measured, the kernel's figure is shown beside (what the hardware buys). A worst case adds
/// `"cache" => "cold"`.
macro_rules! domain_row {
    ($id:expr $(, $k:expr => $v:expr)*) => {
        Target::Fallback(self::Fallback {
            first: Want::total($id, &[$(($k, $v),)* ("rights", "pkey")]),
            then: Want::total($id, &[$(($k, $v),)* ("rights", "mprotect")]),
            why: KERNEL_RIGHTS,
            beside: "rights switched by the kernel",
            missing: "",
            spans: &[],
        })
    };
}

/// What does a Go! GTE component's job on Linux, and its code, data and BSS from the ELF sections
/// of that part (SEED-MAP revision 3): the C library for `comp_lib`, the unwinder for `xcp_mgr`,
/// the thread library for `thread`, the console and keyboard drivers for `video` and `keyb`,
/// the shell for `cli`. The memory manager, interrupt dispatcher and scheduler are the kernel's
/// own, inside its image; Go!'s code scanner has no Linux part.
fn component_size(op: &str, variant: &str) -> Target {
    let section = match variant {
        "code" => "text",
        "data" => "data",
        _ => "bss",
    };
    let component = op.trim_end_matches(" component size");
    match component {
        "comp_lib" => {
            sized!(section, "size.lib", "Go!'s component library has no Linux build; the C library (libc.so.6) does its job", "part" => "libc")
        }
        "xcp_mgr" => sized!(
            section,
            "size.throw",
            "Go!'s exception manager has no Linux build; osprim's own throw path does its job: the domain \
             library's raise and unwind to the caller's handler, and the one SIGSEGV dispatcher that delivers a \
             protection fault to its owner (their symbols in osprim's binary)"
        ),
        "thread" => {
            sized!(section, "size.lib", "Go!'s thread component has no Linux build; the C library's threads implementation does its job: libpthread.so.0 where it is a library of its own, else (glibc 2.34 on, where it is a stub) the pthread_* and __pthread_* symbols of libc.so.6", "part" => "libpthread")
        }
        "video" => {
            sized!(section, "size.module", "Go!'s video driver has no Linux build; the virtual-terminal console driver (module vt) does its job", "module" => "vt")
        }
        "keyb" => {
            sized!(section, "size.module", "Go!'s keyboard driver has no Linux build; the keyboard driver (module keyboard) does its job", "module" => "keyboard")
        }
        "cli" => sized!(
            section,
            "size.shell",
            "Go!'s command-line interpreter has no Linux build; the system shell (/bin/sh) does the same job"
        ),
        "mem_mgr" => Target::NotApplicable(
            "Linux's memory manager is part of the kernel image, not a part with sections of its own",
        ),
        "idisp" => Target::NotApplicable(
            "Linux's interrupt dispatch is part of the kernel image, not a part with sections of its own",
        ),
        "sched" => {
            Target::NotApplicable("Linux's scheduler is part of the kernel image, not a part with sections of its own")
        }
        "scan" => Target::NotApplicable(
            "Go!'s code scanner (its protection by inspecting code) has no Linux counterpart: Linux protects by the MMU",
        ),
        _ => Target::NotApplicable("not mapped"),
    }
}

/// A Go! row's counterpart in the hot-cache condition: its component calls, exceptions and
/// creation on domains in one address space (`domain.*`), its other systems on IPC between
/// processes.
fn go_hot(table: &str, op: &str, system: &str) -> Target {
    use Target::*;
    const SEL2REF_WHY: &str = "Go! names an object by a segment selector; the domain library's reference → key \
        look-up (its key table) does that naming step today";
    const SEL2REF: &[Want] = &[
        Want::total("domain.sel2ref", &[("rights", "pkey")]),
        Want::total("domain.sel2ref", &[("rights", "mprotect")]),
    ];
    match (table, op) {
        ("OS comparison", _) if system == "Go!" => {
            if op.starts_with("null RPC") {
                domain_row!("domain.fcall")
            } else {
                domain_row!("domain.xfer", "via" => "key")
            }
        }
        ("OS comparison", _) => {
            let rpc = op.starts_with("null RPC");
            match system {
                // L4's one-way IPC, in both papers, is half a ping-pong round trip, as L4 measured
                // it: `ipc.*` ([`L4_ONE_WAY`]).
                "L4" if !rpc => Nearest(Candidates { why: L4_ONE_WAY_WHY, candidates: IPC_PROCESSES }),
                "Spring" | "L4" | "Pebble" => Nearest(Candidates {
                    why: HANDOFF_WHY,
                    candidates: if rpc { RPC_PROCESSES } else { XFER_PROCESSES },
                }),
                _ => Pick(Want::total(if rpc { "rpc.pipe" } else { "xfer.pipe" }, PROCESSES_EMPTY)),
            }
        }
        ("ORB primitives", "call") => domain_row!("domain.call"),
        ("ORB primitives", "t-call") => domain_row!("domain.tcall"),
        ("ORB primitives", "f-call") => domain_row!("domain.fcall"),
        ("ORB primitives", _) => domain_row!("domain.xfer", "via" => "key"),
        ("Exception latency", "throw after call") => domain_row!("domain.throw", "after" => "call"),
        ("Exception latency", "throw after t-call") => domain_row!("domain.throw", "after" => "tcall"),
        ("Exception latency", _) => domain_row!("domain.throw", "after" => "fcall"),
        ("ORB methods", "create") => domain_row!("domain.create", "variant" => "plain"),
        ("ORB methods", "create (null)") => domain_row!("domain.create", "variant" => "null"),
        ("ORB methods", "create (unlinked stack)") => domain_row!("domain.create", "variant" => "stack"),
        ("ORB methods", "create (linked stack)") => domain_row!("domain.create", "variant" => "linked_stack"),
        ("ORB methods", "destroy") => domain_row!("domain.destroy", "variant" => "plain"),
        ("ORB methods", "destroy (null)") => domain_row!("domain.destroy", "variant" => "null"),
        ("ORB methods", "destroy (unlinked stack)") => domain_row!("domain.destroy", "variant" => "stack"),
        ("ORB methods", "destroy (linked stack)") => domain_row!("domain.destroy", "variant" => "linked_stack"),
        ("ORB methods", "install") => Bench("lib.dlopen"),
        ("ORB methods", "uninstall") => Bench("lib.dlclose"),
        ("ORB methods", "get_self") => Bench("id.gettid"),
        ("ORB methods", "get_type") => domain_row!("domain.get_type"),
        ("ORB methods", "get_stack") => Bench("id.altstack"),
        ("ORB methods", "switch_stacks") => Bench("ctx.user"),
        ("ORB methods", "lock") => Bench("lock.mutex.lock"),
        ("ORB methods", "unlock") => Bench("lock.mutex.unlock"),
        ("ORB methods", "reject") => Bench("syscall.reject"),
        ("ORB methods", "sel2ref") => Nearest(Candidates { why: SEL2REF_WHY, candidates: SEL2REF }),
        ("Spatial", "memory per interface") => domain_row!("space.interface"),
        ("sched overhead", _) => Bench("sched.preempt"),
        ("GDT miss", "xfer via 16-bit selector") => domain_row!("domain.xfer", "via" => "key"),
        ("GDT miss", "xfer via ObjRef cached in GDT") => domain_row!("domain.xfer", "via" => "table_hit"),
        ("GDT miss", _) => domain_row!("domain.xfer", "via" => "table_miss"),
        ("Stability", o) if o.starts_with("stress") => Target::Stability("stress"),
        ("Stability", _) => Target::Stability("errortest"),
        _ => NotApplicable("not mapped"),
    }
}

/// Go!'s worst cases (caches and branch-target buffers flushed just before timing): the cold
/// twins (`cache=cold`: one operation per sample right after the disturbance, its hot twin
/// beside it) of the benchmarks that answer its best cases.
fn go_cold(table: &str, op: &str) -> Target {
    use Target::*;
    const COLD: &[(&str, &str)] = &[("cache", "cold")];
    const SEL2REF_WHY: &str = "Go! names an object by a segment selector; the domain library's reference → key \
        look-up (its key table) does that naming step today";
    const SEL2REF: &[Want] = &[
        Want::total("domain.sel2ref", &[("rights", "pkey"), ("cache", "cold")]),
        Want::total("domain.sel2ref", &[("rights", "mprotect"), ("cache", "cold")]),
    ];
    match (table, op) {
        ("ORB primitives", "call") => domain_row!("domain.call", "cache" => "cold"),
        ("ORB primitives", "t-call") => domain_row!("domain.tcall", "cache" => "cold"),
        ("ORB primitives", "f-call") => domain_row!("domain.fcall", "cache" => "cold"),
        ("ORB primitives", _) => domain_row!("domain.xfer", "via" => "key", "cache" => "cold"),
        ("Exception latency", "throw after call") => domain_row!("domain.throw", "after" => "call", "cache" => "cold"),
        ("Exception latency", "throw after t-call") => {
            domain_row!("domain.throw", "after" => "tcall", "cache" => "cold")
        }
        ("Exception latency", _) => domain_row!("domain.throw", "after" => "fcall", "cache" => "cold"),
        ("ORB methods", "create") => domain_row!("domain.create", "variant" => "plain", "cache" => "cold"),
        ("ORB methods", "create (null)") => domain_row!("domain.create", "variant" => "null", "cache" => "cold"),
        ("ORB methods", "create (unlinked stack)") => {
            domain_row!("domain.create", "variant" => "stack", "cache" => "cold")
        }
        ("ORB methods", "create (linked stack)") => {
            domain_row!("domain.create", "variant" => "linked_stack", "cache" => "cold")
        }
        ("ORB methods", "destroy") => domain_row!("domain.destroy", "variant" => "plain", "cache" => "cold"),
        ("ORB methods", "destroy (null)") => domain_row!("domain.destroy", "variant" => "null", "cache" => "cold"),
        ("ORB methods", "destroy (unlinked stack)") => {
            domain_row!("domain.destroy", "variant" => "stack", "cache" => "cold")
        }
        ("ORB methods", "destroy (linked stack)") => {
            domain_row!("domain.destroy", "variant" => "linked_stack", "cache" => "cold")
        }
        ("ORB methods", "install") => Pick(Want::total("lib.dlopen", COLD)),
        ("ORB methods", "uninstall") => Pick(Want::total("lib.dlclose", COLD)),
        ("ORB methods", "get_self") => Pick(Want::total("id.gettid", COLD)),
        ("ORB methods", "get_type") => domain_row!("domain.get_type", "cache" => "cold"),
        ("ORB methods", "get_stack") => Pick(Want::total("id.altstack", COLD)),
        ("ORB methods", "switch_stacks") => Pick(Want::total("ctx.user", COLD)),
        ("ORB methods", "lock") => Pick(Want::total("lock.mutex.lock", COLD)),
        ("ORB methods", "unlock") => Pick(Want::total("lock.mutex.unlock", COLD)),
        ("ORB methods", "reject") => Pick(Want::total("syscall.reject", COLD)),
        ("ORB methods", "sel2ref") => Nearest(Candidates { why: SEL2REF_WHY, candidates: SEL2REF }),
        _ => Planned(COLD_CACHE_MODE),
    }
}

/// Rhino's Table 2: total = trap (getting control to the handler) + other, all three from one
/// measurement. Transactions in the mode that tracks reads as well as writes, as Rhino did.
fn rhino(op: &str, part: &str) -> Target {
    use Target::*;
    const TXN: &[(&str, &str)] = &[("detect", "mprotect"), ("track", "all")];
    const WARM_READ: &[(&str, &str)] = &[("access", "read"), ("cache", "warm")];
    const WARM_WRITE: &[(&str, &str)] = &[("access", "write"), ("cache", "warm")];
    const COLD_READ: &[(&str, &str)] = &[("access", "read"), ("cache", "cold")];
    const COLD_WRITE: &[(&str, &str)] = &[("access", "write"), ("cache", "cold")];
    let stage = match part {
        "trap" => Some("trap"),
        "other" => Some("other"),
        _ => None,
    };
    let pick = |id, params| Pick(Want { id, params, stage });
    match op {
        // A null call is all trap: its total and its trap are one figure.
        "null call" => Bench("syscall.getpid"),
        "transaction begin" => pick("txn.begin", TXN),
        "commit read-only" => pick("txn.commit_ro", TXN),
        "commit 8 bytes on one page" => pick("txn.commit_8b", TXN),
        "page fault read warm" => pick("fault.user.sigsegv", WARM_READ),
        "page fault write warm" => pick("fault.user.sigsegv", WARM_WRITE),
        "page fault read cold" => pick("fault.user.sigsegv", COLD_READ),
        "page fault write cold" => pick("fault.user.sigsegv", COLD_WRITE),
        _ => NotApplicable("not mapped"),
    }
}

/// What answers a row, in words: `txn.begin [detect=mprotect track=all] (trap)`, `nearest:
/// the fastest of …`, or why nothing does.
pub fn describe(t: &Target) -> String {
    let labels = |ws: &[Want]| ws.iter().map(|w| format!("`{}`", w.label())).collect::<Vec<_>>();
    match t {
        Target::Bench(_) | Target::Pick(_) => labels(&t.wants()).join(""),
        Target::Nearest(n) if n.candidates.len() == 1 => {
            format!("nearest: {} — {}", labels(n.candidates).join(""), n.why)
        }
        Target::Nearest(n) => format!("nearest: the fastest of {} — {}", labels(n.candidates).join(", "), n.why),
        Target::Fallback(f) if !f.spans.is_empty() => format!(
            "`{}`; where it cannot be timed apart, nearest: `{}` ({}), on one merged row spanning {} against the sum \
             of their figures",
            f.first.label(),
            f.then.label(),
            f.why,
            f.spans.iter().map(|s| format!("“{s}”")).collect::<Vec<_>>().join(" and ")
        ),
        Target::Fallback(f) => {
            format!("`{}`; where it cannot run, nearest: `{}` ({})", f.first.label(), f.then.label(), f.why)
        }
        Target::Sum(s) if s.missing.is_empty() => labels(s.parts).join(" + "),
        Target::Sum(s) => format!("{}, without {}", labels(s.parts).join(" + "), s.missing),
        Target::Planned(what) => format!("not measured yet (needs {what})"),
        Target::Stability(test) => format!("the longest clean run of `osprim {test}` on this machine"),
        Target::Counters(c) => {
            let of = match c.candidates {
                [one] => labels(&[*one]).join(""),
                many => format!("the fastest of {}", labels(many).join(", ")),
            };
            format!("retired instructions of {of} (hardware counters, `--counters`)")
        }
        Target::CountersDifference(a, b) => format!(
            "retired instructions of `{}` minus those of `{}`, each counted on its own (hardware counters, \
             `--counters`), with the interval of the difference",
            a.label(),
            b.label()
        ),
        Target::NotApplicable(why) => format!("not applicable: {why}"),
    }
}

/// The whole map as Markdown (`docs/seed-map.md`): the rules of revision 4, then per paper each
/// row and what answers it, with every nearest's and every estimate's reason.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Seed rows and what answers them today\n\n\
         Generated from `crates/papers/src/map.rs` (the seed map, revision 4) by `cargo test`; do not edit.\n\n\
         Rules: the same operation (or the nearest mechanism doing the same job, labelled `nearest:` with its \
         reason), the same condition (a cold-cache figure only beside a cold-cache measurement), the paper's \
         statistic (means), parts of a breakdown from one measurement, one figure per row; missing hardware is \
         not \"not applicable\": where a kernel-assisted mechanism does the job it is measured and labelled \
         `nearest:`.\n\n\
         Revision 4:\n\n\
         - **A combined stage is compared with the sum it spans.** Where one measured stage covers two of the \
         paper's rows (VMMC's interrupt and signal stages on Linux, NT's driver → DPC → wake-up), it goes on one \
         merged row beside the sum of those rows' figures, marked merged, with a ratio against that sum only; \
         both rows count as answered. Where the result has the stages apart, the rows stay apart.\n\
         - **A stage is timed inside the operation.** Where it is not (the result's `observed` field named \
         below is absent or not `\"stamped\"`), it is an estimate: shown beside its total with no ratio, \
         labelled `estimated: <how>`, and never as a negative figure (an estimate below 0 reads \"< 0: not \
         resolved\").\n\
         - **Below resolution is for differences only** (with − without, process − thread, total − estimate); \
         a latency, a stage, a size or a count keeps an interval above 0.\n\
         - **A paper's summary reproduces.** Its median goes over every total with a ratio (inconclusive and \
         ≈ same included, each figure of today's once), with its own interval; the heading says how many rows \
         are nearest substitutes and how many are not answered (below resolution, failed checks, unresolved \
         figures and rows without a figure).\n\
         - **L4 one-way / IPC.** ",
    );
    out.push_str(L4_ONE_WAY);
    out.push_str(".\n");
    for paper in &super::PAPERS {
        out.push_str(&format!("\n## {}\n\n", paper.heading()));
        out.push_str("| table | operation | variant | then | today |\n|---|---|---|---|---|\n");
        for f in paper.figures() {
            let t = target(f);
            let mut today = describe(&t);
            for w in t.wants() {
                if let Some(e) = w.stage.and_then(|stage| estimate(w.id, stage)) {
                    today.push_str(&format!(
                        "; estimated unless the result's `observed.{}` is `\"{STAMPED}\"`: {}, shown beside the \
                         total with no ratio",
                        e.timing, e.how
                    ));
                    break;
                }
            }
            if let Some(into) = merged_into(f) {
                today.push_str(&format!(
                    "; where this stage is not timed apart, answered by the merged row of “{}”",
                    into.operation.trim_start_matches("notification: ")
                ));
            }
            for (label, w) in beside(f) {
                today.push_str(&format!("; beside it, {label}: `{}`", w.label()));
            }
            let cell = |s: &str| s.replace('|', "\\|");
            out.push_str(&format!(
                "| {} | {} | {} | {} {} | {} |\n",
                cell(&f.table),
                cell(&format!(
                    "{}{}",
                    if f.system == paper.system { String::new() } else { format!("{}: ", f.system) },
                    f.operation
                )),
                cell(&f.variant),
                f.value,
                f.unit,
                cell(&today)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::figures;
    use super::*;

    /// Whether `id` is a benchmark or a derived result osprim has.
    fn registered(id: &str) -> bool {
        bench::registry::find(id).is_some() || bench::registry::DERIVED.iter().any(|d| d.id == id)
    }

    /// The first word of a planned target, when it names a benchmark id (`family.op…`).
    fn planned_id(what: &str) -> Option<&str> {
        let word = what.split_whitespace().next()?;
        (word.contains('.') && word.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '_')).then_some(word)
    }

    /// Whether the paper's figure was taken with cold caches.
    fn cold(f: &Figure) -> bool {
        f.variant.contains("cold cache") || f.operation.ends_with(" cold")
    }

    /// SEED-MAP revision 3, row by row: every row is measured on its mapped benchmark under the
    /// matching condition, or carries one of the allowed reasons.
    #[test]
    fn every_row_is_measured_on_the_same_operation_and_condition_or_says_why_not() {
        for f in figures() {
            let row = f.label();
            match target(f) {
                Target::NotApplicable(why) => {
                    assert!(!why.is_empty() && why != "not mapped", "{row} is not mapped");
                }
                Target::Planned(what) => {
                    let id = planned_id(what);
                    assert!(
                        what == COLD_CACHE_MODE
                            || what.starts_with("osprim ")
                            || what.starts_with("notify ")
                            || id.is_some(),
                        "{row}: \"{what}\" names neither a benchmark nor a mode"
                    );
                    if let Some(id) = id {
                        assert!(!registered(id), "{row}: {id} exists now; map the row to it");
                    }
                    if f.variant.contains("cold cache") {
                        assert_eq!(what, COLD_CACHE_MODE, "{row}");
                    }
                }
                Target::Counters(_) => assert_eq!(f.unit, "instructions", "{row}"),
                Target::CountersDifference(a, b) => {
                    assert_eq!(f.unit, "instructions", "{row}");
                    assert!(registered(a.id) && registered(b.id) && a != b, "{row}");
                }
                Target::Stability(test) => {
                    assert_eq!((f.table.as_str(), f.unit.as_str()), ("Stability", "days"), "{row}");
                    assert!(["stress", "errortest"].contains(&test), "{row}: {test}");
                }
                t
                @ (Target::Bench(_) | Target::Pick(_) | Target::Nearest(_) | Target::Sum(_) | Target::Fallback(_)) => {
                    let wants = t.wants();
                    assert!(!wants.is_empty(), "{row}");
                    for w in &wants {
                        assert!(registered(w.id), "{row}: {} is not registered", w.id);
                        assert_eq!(w.is_cold(), cold(f), "{row}: {} is not taken in the paper's condition", w.label());
                    }
                    if let Target::Nearest(n) = t {
                        assert!(!n.candidates.is_empty() && !n.why.is_empty(), "{row}");
                    }
                    if let Target::Fallback(fb) = t {
                        assert!(!fb.why.is_empty() && fb.first != fb.then, "{row}");
                    }
                    for w in wants.iter().filter(|w| w.stage.is_some()) {
                        let stage = w.stage.unwrap_or_default();
                        assert!(
                            partitions(w.id).iter().any(|p| p.contains(&stage)),
                            "{row}: stage {stage} of {} belongs to no breakdown that adds up to its total",
                            w.id
                        );
                    }
                }
            }
        }
    }

    /// Parts add up: a trap, other or kernel-mode part comes from the same benchmark, with the
    /// same parameters, as its row's total.
    #[test]
    fn parts_come_from_the_measurement_of_their_total() {
        for f in figures().iter().filter(|f| ["trap", "other", "kernel-mode component"].contains(&f.variant.as_str())) {
            let total = figures()
                .iter()
                .find(|g| g.system == f.system && g.operation == f.operation && g.variant == "total")
                .unwrap_or_else(|| panic!("{} has no total", f.label()));
            let (part, whole) = (target(f), target(total));
            let (parts, wholes) = (part.wants(), whole.wants());
            if parts.is_empty() {
                assert!(
                    matches!(part, Target::Planned(_) | Target::NotApplicable(_) | Target::Stability(_)),
                    "{}: a part without a result",
                    f.label()
                );
                continue;
            }
            assert_eq!(parts.len(), wholes.len(), "{}: as many results for the part as for its total", f.label());
            for (p, w) in parts.iter().zip(&wholes) {
                assert_eq!((p.id, p.params), (w.id, w.params), "{}", f.label());
                assert_eq!(w.stage, None, "{}", total.label());
                // A null call is all trap; every other part is a stage of the total.
                assert!(p.stage.is_some() || f.operation == "null call", "{}", f.label());
            }
        }
    }

    /// "Not applicable" is left only where no Linux part does the job (SEED-MAP revision 3):
    /// at most 19 rows, each with its own reason.
    #[test]
    fn not_applicable_is_rare_and_says_why() {
        let reasons: Vec<&str> = figures()
            .iter()
            .filter_map(|f| match target(f) {
                Target::NotApplicable(why) => Some(why),
                _ => None,
            })
            .collect();
        assert!(reasons.len() <= 19, "{} rows not applicable", reasons.len());
        assert!(reasons.iter().all(|w| w.len() > 20 && *w != "not mapped"), "{reasons:?}");
    }

    /// VMMC's NT rows are the stages of one measurement, whose parts add up to its total.
    #[test]
    fn nt_stages_come_from_one_measurement() {
        let nt: Vec<Vec<Want>> = figures()
            .iter()
            .filter(|f| f.system == "VMMC" && f.platform == "Windows NT")
            .map(|f| target(f).wants())
            .collect();
        assert_eq!(nt.len(), 5);
        assert!(nt.iter().flatten().all(|w| w.id == "notify.softirq"), "{nt:?}");
        assert_eq!(nt[4].iter().map(|w| w.stage).collect::<Vec<_>>(), vec![None], "the total");
    }

    #[test]
    fn one_row_one_figure_install_and_uninstall_lock_and_unlock_are_apart() {
        let id = |op: &str| {
            let f = figures().iter().find(|f| f.operation == op && f.variant.contains("hot")).unwrap();
            target(f).bench_id().unwrap()
        };
        assert_ne!(id("install"), id("uninstall"));
        assert_ne!(id("lock"), id("unlock"));
    }

    #[test]
    fn one_row_one_figure_end_and_begin_and_its_breakdown_total_are_apart() {
        let want = |op: &str, variant: &str| {
            let f = figures().iter().find(|f| f.operation == op && f.variant == variant).unwrap();
            match target(f) {
                Target::Fallback(t) => t,
                t => panic!("{op}: {t:?}"),
            }
        };
        let listed = want("End task and begin another", "");
        let total = want("End one task and begin another", "total");
        let kernel = want("End one task and begin another", "kernel-mode component");
        assert_ne!(listed.first.params, total.first.params, "two rows, two measurements");
        assert_eq!(total.first.params, kernel.first.params, "the breakdown's parts from its total's measurement");
        // Both are variants the benchmarks run (the seed suite runs what the rows ask for).
        let cfg = bench::sampler::SamplerConfig::quick();
        for t in [listed, total] {
            for w in [t.first, t.then] {
                let b = bench::registry::find(w.id).expect("registered");
                let variants = bench::fake::with_ctx(cfg.clone(), |ctx| b.variants(ctx));
                let has =
                    |p: &bench::Params| w.params.iter().all(|(k, v)| p.get(*k).and_then(|x| x.as_str()) == Some(*v));
                assert_eq!(variants.iter().filter(|p| has(p)).count(), 1, "{}: one variant", w.label());
            }
        }
    }

    #[test]
    fn the_nearest_rows_name_kernel_hand_offs_between_the_right_ends() {
        let l4 = |op: &str| {
            let f = figures().iter().find(|f| f.operation == op && f.unit == "cycles").unwrap();
            match target(f) {
                Target::Nearest(n) => n.candidates.to_vec(),
                t => panic!("{op}: {t:?}"),
            }
        };
        let peer = |w: &Want| w.params.iter().find(|(k, _)| *k == "peer").map(|(_, v)| *v);
        assert!(l4("intra-address space IPC").iter().all(|w| peer(w) == Some("thread")));
        assert!(l4("inter-address space IPC").iter().all(|w| peer(w) == Some("process")));
        // Only kernel-mediated hand-offs: no spinning on shared memory.
        assert!(l4("inter-address space IPC").iter().all(|w| !w.id.contains("spin")));
    }

    #[test]
    fn the_cold_faults_have_the_in_kernel_analogue_beside_them() {
        let faults: Vec<&Figure> = figures()
            .iter()
            .filter(|f| f.operation.starts_with("page fault") && f.operation.ends_with("cold"))
            .collect();
        assert_eq!(faults.len(), 12);
        for f in faults {
            assert_eq!(beside(f).len(), usize::from(f.variant == "total"), "{}", f.label());
            for (_, w) in beside(f) {
                assert!(w.id.starts_with("fault.file") && w.is_cold(), "{}", f.label());
            }
        }
        // Whatever stands beside a row is registered, and in the row's condition.
        for f in figures() {
            for (label, w) in beside(f) {
                assert!(registered(w.id), "{}: {label}: {} is not registered", f.label(), w.id);
                assert_eq!(w.is_cold(), cold(f), "{}: {label}", f.label());
            }
        }
    }

    #[test]
    fn go_calls_transfers_and_throws_have_the_path_with_rights_unchanged_beside_them() {
        let go: Vec<&Figure> = figures()
            .iter()
            .filter(|f| {
                f.seed_file.starts_with("003")
                    && (matches!(f.table.as_str(), "ORB primitives" | "Exception latency")
                        || (f.table == "OS comparison" && f.system == "Go!")
                        || (f.table == "GDT miss" && !f.operation.contains("not cached")))
            })
            .collect();
        assert_eq!(go.len(), 18, "{:?}", go.iter().map(|f| f.label()).collect::<Vec<_>>());
        for f in go {
            let Target::Fallback(fb) = target(f) else { panic!("{}: {:?}", f.label(), target(f)) };
            let unchanged: Vec<Want> =
                beside(f).into_iter().filter(|(l, _)| *l == "rights unchanged").map(|(_, w)| w).collect();
            let [w] = unchanged[..] else { panic!("{}: {unchanged:?}", f.label()) };
            // The protected nearest's benchmark and parameters, rights unchanged.
            assert_eq!(w.id, fb.then.id, "{}", f.label());
            let others = |ws: &'static [(&'static str, &'static str)]| {
                ws.iter().filter(|(k, _)| *k != "rights").copied().collect::<Vec<_>>()
            };
            assert_eq!(others(w.params), others(fb.then.params), "{}", f.label());
            assert!(w.params.contains(&("rights", "unchanged")), "{}", f.label());
            // A variant the benchmark has (the seed suite runs what the besides want).
            let b = bench::registry::find(w.id).expect("registered");
            if b.available().is_ok() {
                bench::testing::with_ctx(0.01, |ctx| {
                    let has = b.variants(ctx).iter().any(|p| {
                        let text = |k: &str| p.get(k).and_then(|x| x.as_str()).map(str::to_string);
                        w.params.iter().filter(|(k, _)| *k != "cache").all(|(k, v)| text(k).as_deref() == Some(*v))
                    });
                    assert!(has, "{}: {} has no variant {:?}", f.label(), w.id, w.params);
                });
            }
        }
        // Nothing else gets one.
        let others = figures().iter().filter(|f| !f.seed_file.starts_with("003"));
        assert!(others.flat_map(beside).all(|(l, _)| l != "rights unchanged"));
    }

    /// The figure of `platform`'s VMMC row `op`.
    fn vmmc_row(platform: &str, op: &str) -> &'static Figure {
        figures()
            .iter()
            .find(|f| f.system == "VMMC" && f.platform == platform && f.operation.ends_with(op))
            .unwrap_or_else(|| panic!("{platform} {op}"))
    }

    /// Revision 4: VMMC's combined stages span two rows each, compared with their sum (10 + 17
    /// on Linux, 18 + 16 on NT); the rows they span say which merged row answers them; no other
    /// row spans anything.
    #[test]
    fn combined_stages_span_two_rows_and_are_compared_with_their_sum() {
        for (platform, first, second, sum) in [
            ("Linux", "interrupt to driver handler", "handler to user-level handler via signal", 27.0),
            ("Windows NT", "interrupt to DPC handler start", "DPC to user-level handler thread wakeup", 34.0),
        ] {
            let (a, b) = (vmmc_row(platform, first), vmmc_row(platform, second));
            let spans = spanned(a);
            assert_eq!(spans, vec![a, b], "{platform}");
            assert_eq!(spans.iter().map(|f| f.value).sum::<f64>(), sum, "{platform}");
            assert_eq!(merged_into(b), Some(a), "{platform}");
            assert_eq!(merged_into(a), None, "{platform}");
            let Target::Fallback(fb) = target(a) else { panic!("{platform}: {:?}", target(a)) };
            // The separated stages first, the combined one only where they are not.
            assert!(fb.first.stage != fb.then.stage && partitions(fb.first.id).len() > 1, "{platform}");
            assert!(describe(&target(a)).contains("merged row"), "{platform}");
        }
        let merged: Vec<&Figure> = figures().iter().filter(|f| merged_into(f).is_some()).collect();
        assert_eq!(merged.len(), 2, "{merged:?}");
        assert!(!figures().iter().any(|f| f.system != "VMMC" && !spanned(f).is_empty()));
    }

    /// Revision 4: Rhino's trap and other and RightSpeed's kernel-mode component are estimates
    /// unless the result says they were stamped inside the operation; the fault's trap (the
    /// kernel's own delivery, timed) is not.
    #[test]
    fn estimated_stages_name_their_contract_field() {
        for id in ["txn.begin", "txn.commit_ro", "txn.commit_8b"] {
            let (trap, other) = (estimate(id, "trap").unwrap(), estimate(id, "other").unwrap());
            assert_eq!((trap.timing, other.timing), ("trap_timing", "trap_timing"));
            assert!(!trap.difference && other.difference);
        }
        let kernel = estimate("task.setattr", "kernel").unwrap();
        assert_eq!((kernel.timing, kernel.difference), ("kernel_timing", true));
        assert_eq!(estimate("fault.user.sigsegv", "trap"), None);
        assert_eq!(estimate("txn.begin", "total"), None);
        let doc = markdown();
        assert!(doc.contains("`observed.trap_timing` is `\"stamped\"`") && doc.contains("`observed.kernel_timing`"));
        assert!(doc.contains("revision 4") && !doc.contains("revision 3"));
    }

    /// One choice for L4's one-way IPC in both papers: half a ping-pong round trip (`ipc.*`),
    /// said in the reason of each row and in the document.
    #[test]
    fn l4_one_way_is_one_choice_in_both_papers() {
        let rows: Vec<&Figure> = figures()
            .iter()
            .filter(|f| (f.system == "L4" && f.operation.contains("one way")) || f.operation.ends_with("IPC"))
            .collect();
        assert_eq!(rows.len(), 5, "{rows:?}");
        for f in rows {
            let t = target(f);
            let (why, wants) = match t {
                Target::Nearest(c) | Target::Counters(c) => (c.why, c.candidates.to_vec()),
                t => panic!("{}: {t:?}", f.label()),
            };
            assert!(wants.iter().all(|w| w.id.starts_with("ipc.")), "{}: {wants:?}", f.label());
            assert!(why.contains("half a ping-pong round trip"), "{}", f.label());
        }
        assert!(markdown().contains(L4_ONE_WAY));
    }

    /// L4's address-space switch in instructions is answered as the difference of the two
    /// switches' counts, as in time.
    #[test]
    fn the_address_space_instructions_are_a_difference_of_counts() {
        let f = figures()
            .iter()
            .find(|f| f.operation == "address space switch" && f.unit == "instructions")
            .expect("line 21");
        let Target::CountersDifference(a, b) = target(f) else { panic!("{:?}", target(f)) };
        assert_eq!((a.id, b.id), ("ctx.process", "ctx.thread"));
        assert_eq!(a.params, b.params);
    }

    /// `docs/seed-map.md` is the map as the code has it; `OSPRIM_UPDATE_DOCS=1` rewrites it.
    #[test]
    fn the_seed_map_document_is_the_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/seed-map.md");
        let want = markdown();
        if std::env::var_os("OSPRIM_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).expect("write docs/seed-map.md");
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(have == want, "docs/seed-map.md is out of date: run OSPRIM_UPDATE_DOCS=1 cargo test seed_map");
    }
}
