//! The seed papers' figures (`data/figures.csv`, compiled in) and, for each, the osprim
//! benchmark that answers it today — or the planned one, or why none can.
//!
//! Sources: the performance sections of RightSpeed (000), L4Ka::Pistachio on PowerPC (001),
//! VMMC (002), Go! (003) and Rhino on SPIN (004); figures as published.

use std::sync::OnceLock;

static FIGURES_CSV: &str = include_str!("../data/figures.csv");

/// One published figure.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Figure {
    /// Seed document, e.g. `001_73542dceb9b7de45.txt`.
    pub seed_file: String,
    /// System measured (e.g. "L4", "Rhino on SPIN").
    pub system: String,
    /// Hardware platform.
    pub platform: String,
    /// Clock in MHz, when the paper gives it.
    pub clock_mhz: Option<f64>,
    /// Table name in the paper.
    pub table: String,
    /// Operation.
    pub operation: String,
    /// Variant (cycles/instructions, best/worst case, trap/other…).
    pub variant: String,
    /// The figure.
    pub value: f64,
    /// Its unit: us, cycles, instructions, bytes, days.
    pub unit: String,
    /// Remark from the paper.
    pub note: String,
}

impl Figure {
    /// The figure in nanoseconds, when it is a time or cycles at a known clock.
    pub fn then_ns(&self) -> Option<f64> {
        match self.unit.as_str() {
            "us" => Some(self.value * 1e3),
            "cycles" => self.clock_mhz.map(|mhz| self.value / mhz * 1e3),
            _ => None,
        }
    }

    /// The figure in cycles of its own machine, when it is cycles or a time at a known clock.
    pub fn then_cycles(&self) -> Option<f64> {
        match self.unit.as_str() {
            "cycles" => Some(self.value),
            "us" => self.clock_mhz.map(|mhz| self.value * mhz),
            _ => None,
        }
    }

    /// Operation and variant in one label.
    pub fn label(&self) -> String {
        if self.variant.is_empty() { self.operation.clone() } else { format!("{} ({})", self.operation, self.variant) }
    }
}

/// Every published figure, in file order.
pub fn figures() -> &'static [Figure] {
    static CELL: OnceLock<Vec<Figure>> = OnceLock::new();
    CELL.get_or_init(|| {
        csv::Reader::from_reader(FIGURES_CSV.as_bytes())
            .deserialize()
            .collect::<Result<Vec<Figure>, _>>()
            .expect("data/figures.csv is compiled in and checked by a test")
    })
}

/// The five papers, in seed order: (file prefix, title).
pub const PAPERS: [(&str, &str); 5] = [
    ("000", "RightSpeed — time of common operations (AMD, 900 MHz, Windows)"),
    ("001", "L4Ka::Pistachio — IPC and system-call costs (IBM PowerPC 750, 500 MHz)"),
    ("002", "VMMC — receive-side notification, broken into stages"),
    ("003", "Go! — OS comparison, ORB primitives, methods, exceptions, space (Pentium P54C, 90 MHz)"),
    ("004", "Rhino on Digital UNIX vs SPIN — null call, transactions, page faults (Alpha)"),
];

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
    /// `id [k=v …] stage` for the seed view.
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
}

/// What answers a seed row today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// An osprim benchmark (it may be missing from a given result file).
    Bench(&'static str),
    /// One result of an osprim benchmark, picked by parameters and stage.
    Pick(Want),
    /// A benchmark planned but not written yet.
    Planned(&'static str),
    /// Needs hardware performance counters (retired instructions); `id` gives the time.
    Counters(&'static str),
    /// No Linux counterpart, and why.
    NotApplicable(&'static str),
}

impl Target {
    /// The benchmark id this target runs, if it runs one.
    pub fn bench_id(&self) -> Option<&'static str> {
        match self {
            Target::Bench(id) => Some(id),
            Target::Pick(w) => Some(w.id),
            _ => None,
        }
    }

    /// What it asks for: the id alone, or the id with parameters and stage.
    pub fn want(&self) -> Option<Want> {
        match *self {
            Target::Bench(id) => Some(Want { id, params: &[], stage: None }),
            Target::Pick(w) => Some(w),
            _ => None,
        }
    }
}

/// Both ends on one CPU, as every seed machine had one CPU.
const SAME_CPU: &[(&str, &str)] = &[("placement", "same_cpu")];
/// Two threads of one process on one CPU, an empty message.
const THREADS_SAME_CPU: &[(&str, &str)] = &[("peer", "thread"), ("placement", "same_cpu"), ("bytes", "0")];
/// Two processes on one CPU, an empty message.
const PROCESSES_SAME_CPU: &[(&str, &str)] = &[("peer", "process"), ("placement", "same_cpu"), ("bytes", "0")];

/// The benchmark that answers `f`.
pub fn target(f: &Figure) -> Target {
    use Target::*;
    let op = f.operation.as_str();
    match &f.seed_file[..3] {
        "000" => match op {
            "Load and initialize library for a process" => Bench("lib.dlopen"),
            "Install message hook" => Bench("signal.install"),
            "Open system task type group file" | "Open per-app task type group file" => Bench("fs.open_close"),
            "Get application name" => Bench("id.exe_name"),
            "Intercept non-user-interface message" | "Intercept and handle user interface message" => {
                Planned("interpose.seccomp")
            }
            "Simple I/O control request" => Bench("syscall.ioctl"),
            "Evaluate message type" => NotApplicable("RightSpeed's own user-level classification of a window message"),
            _ => NotApplicable("RightSpeed task accounting is not a Linux primitive"),
        },
        "001" => {
            if f.unit == "instructions" {
                return Counters(match op {
                    "empty system call" => "syscall.null",
                    "address space switch" => "ctx.address_space",
                    _ => "ipc.pipe",
                });
            }
            match op {
                "empty system call" => Bench("syscall.null"),
                "address space switch" => Pick(Want { id: "ctx.address_space", params: SAME_CPU, stage: None }),
                "intra-address space IPC" => Pick(Want { id: "ipc.pipe", params: THREADS_SAME_CPU, stage: None }),
                _ => Pick(Want { id: "ipc.pipe", params: PROCESSES_SAME_CPU, stage: None }),
            }
        }
        "002" => Planned("notify.signal"),
        "003" => match (f.table.as_str(), op) {
            ("OS comparison", "null RPC round trip") => {
                Pick(Want { id: "rpc.pipe", params: PROCESSES_SAME_CPU, stage: None })
            }
            ("OS comparison", _) => Pick(Want { id: "xfer.pipe", params: PROCESSES_SAME_CPU, stage: None }),
            ("ORB primitives", "call") => Planned("call.direct"),
            ("ORB primitives", "t-call") => Planned("call.indirect"),
            ("ORB primitives", "f-call") => Planned("call.dylib"),
            ("ORB primitives", _) => Pick(Want { id: "xfer.pipe", params: THREADS_SAME_CPU, stage: None }),
            ("Exception latency", _) => Planned("exception.unwind"),
            ("ORB methods", m) if m.starts_with("create") => Planned("thread.create_join"),
            ("ORB methods", m) if m.starts_with("destroy") => Planned("thread.create_join"),
            ("ORB methods", "install" | "uninstall") => Bench("lib.dlopen"),
            ("ORB methods", "get_self") => Bench("id.gettid"),
            ("ORB methods", "get_type") => Bench("syscall.getpid"),
            ("ORB methods", "get_stack") => Bench("id.sched_getcpu"),
            ("ORB methods", "switch_stacks") => Planned("ctx.user"),
            ("ORB methods", "lock" | "unlock") => Planned("lock.mutex"),
            ("ORB methods", _) => NotApplicable("Go!'s object-reference translation has no Linux counterpart"),
            ("Spatial", "memory per interface") => Bench("space.eventfd"),
            ("Spatial", _) | ("Component sizes", _) => {
                NotApplicable("code/data sizes of Go!'s own components; no Linux counterpart of the same meaning")
            }
            ("sched overhead", _) => Planned("sched.preempt"),
            ("GDT miss", _) => Planned("cold-cache mode"),
            ("Stability", _) => Planned("osprim stress"),
            _ => NotApplicable("not mapped"),
        },
        "004" => rhino(op, f.variant.as_str()),
        _ => NotApplicable("unknown seed"),
    }
}

/// Rhino on SPIN's Table 2: total, trap (getting control to the handler) and other.
fn rhino(op: &str, part: &str) -> Target {
    use Target::*;
    const MPROTECT: &[(&str, &str)] = &[("detect", "mprotect")];
    const READ: &[(&str, &str)] = &[("access", "read")];
    const WRITE: &[(&str, &str)] = &[("access", "write")];
    const COLD_READ: &[(&str, &str)] = &[("cache", "cold"), ("map", "shared")];
    const COLD_WRITE: &[(&str, &str)] = &[("cache", "cold"), ("map", "shared")];
    let stage = match part {
        "trap" => Some("trap"),
        "other" => Some("other"),
        _ => None,
    };
    let pick = |id, params| Pick(Want { id, params, stage });
    match op {
        "null call" => Bench("syscall.getpid"),
        o if o.starts_with("transaction begin") => match part {
            "trap" => Pick(Want { id: "txn.begin", params: MPROTECT, stage: Some("protect") }),
            _ => pick("txn.begin", MPROTECT),
        },
        o if o.starts_with("commit read-only") => match stage {
            None => pick("txn.commit_ro", MPROTECT),
            Some(_) => NotApplicable(
                "a read-only commit here finds no dirty page and makes no system call: no trap to split off",
            ),
        },
        o if o.starts_with("commit") => pick("txn.commit_8b", MPROTECT),
        "page fault read warm" => pick("fault.user.sigsegv", READ),
        "page fault write warm" => pick("fault.user.sigsegv", WRITE),
        // A cold fault's trap is the same trip to the handler as a warm one's; its total is the
        // kernel's own fault on a file not in the page cache.
        "page fault read cold" => match stage {
            None => Pick(Want { id: "fault.file.read", params: COLD_READ, stage: None }),
            Some("trap") => pick("fault.user.sigsegv", READ),
            Some(_) => Planned("fault.user.sigsegv on a cold file (handler reads the page)"),
        },
        "page fault write cold" => match stage {
            None => Pick(Want { id: "fault.file.write", params: COLD_WRITE, stage: None }),
            Some("trap") => pick("fault.user.sigsegv", WRITE),
            Some(_) => Planned("fault.user.sigsegv on a cold file (handler reads the page)"),
        },
        _ => NotApplicable("not mapped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_parse_and_cover_five_papers() {
        let f = figures();
        assert_eq!(f.len(), 171);
        for (prefix, _) in PAPERS {
            assert!(f.iter().any(|x| x.seed_file.starts_with(prefix)), "{prefix}");
        }
    }

    #[test]
    fn every_figure_is_mapped_and_existing_targets_are_registered() {
        for f in figures() {
            match target(f) {
                Target::Bench(id) | Target::Pick(Want { id, .. }) => assert!(
                    crate::registry::find(id).is_some() || crate::registry::DERIVED.iter().any(|d| d.id == id),
                    "{id} for {} is not registered",
                    f.label()
                ),
                Target::Planned(id) | Target::Counters(id) => assert!(!id.is_empty()),
                Target::NotApplicable(why) => {
                    assert_ne!(why, "not mapped", "{} is not mapped", f.label())
                }
            }
        }
    }

    #[test]
    fn conversions_use_the_clock() {
        let f = figures().iter().find(|f| f.system == "L4Ka::Pistachio" && f.unit == "cycles").unwrap();
        assert!((f.then_ns().unwrap() - 51.73 / 500.0 * 1e3).abs() < 1e-9);
        let r = figures().iter().find(|f| f.operation == "Install message hook").unwrap();
        assert!((r.then_cycles().unwrap() - 8.532 * 900.0).abs() < 1e-9);
        let bsd = figures().iter().find(|f| f.system == "BSD").unwrap();
        assert_eq!(bsd.then_ns(), None);
    }
}
