//! The seed papers' figures (`data/figures.csv`, compiled in) and, for each, the osprim
//! benchmark that answers it today — or the planned one, or why none can.
//!
//! Sources: the performance sections of RightSpeed (000), L4Ka::Pistachio on PowerPC (001),
//! VMMC (002), Go! (003) and Rhino on SPIN (004); figures as published. [`PAPERS`] holds each
//! paper's citation, its tables and where it measured, in one place.

#![forbid(unsafe_code)]

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

/// One table (or figure, or section) of a paper, as [`Figure::table`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaperTable {
    /// [`Figure::table`] of its rows.
    pub key: &'static str,
    /// Where it is in the paper: "Table 3", "Figure 8", or the section of a web page.
    pub source: &'static str,
    /// What it measures, in the paper's words where it has a caption.
    pub caption: &'static str,
}

/// A seed paper: who wrote it, where it appeared, what its figures measure and on what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paper {
    /// Seed document prefix (`000` … `004`): [`Figure::seed_file`] starts with it.
    pub prefix: &'static str,
    /// A short stable key for exports and labels (`rightspeed`, `l4`, …).
    pub key: &'static str,
    /// The system the paper describes.
    pub system: &'static str,
    /// What its figures are about, for the heading.
    pub subject: &'static str,
    /// The authors in full.
    pub authors: &'static str,
    /// The authors as cited in a heading ("Lorch & Smith").
    pub short_authors: &'static str,
    /// The title.
    pub title: &'static str,
    /// Where it appeared, in full.
    pub venue: &'static str,
    /// Where it appeared, short ("MobiSys").
    pub short_venue: &'static str,
    /// The year ("2003", or "c. 2000" for an undated web page).
    pub year: &'static str,
    /// A related publication to cite beside it (empty if none).
    pub see_also: &'static str,
    /// The machine and system the figures were measured on.
    pub platform: &'static str,
    /// The statistic and unit of its figures, and how they were taken.
    pub statistic: &'static str,
    /// Its tables, in the order of `data/figures.csv`.
    pub tables: &'static [PaperTable],
    /// The paper's own caveats and the places where its figures do not add up.
    pub notes: &'static [&'static str],
}

impl Paper {
    /// "Lorch & Smith, MobiSys 2003": the short citation of headings.
    pub fn short_cite(&self) -> String {
        if self.short_venue.is_empty() {
            format!("{}, {}", self.short_authors, self.year)
        } else {
            format!("{}, {} {}", self.short_authors, self.short_venue, self.year)
        }
    }

    /// "Go! component OS — inter-component calls (Law & McCann, c. 2000)".
    pub fn heading(&self) -> String {
        format!("{} — {} ({})", self.system, self.subject, self.short_cite())
    }

    /// The full reference: authors, "title", venue, year.
    pub fn citation(&self) -> String {
        let mut s = String::new();
        if !self.authors.is_empty() {
            s.push_str(self.authors);
            s.push_str(", ");
        }
        s.push_str(&format!("“{}”, {}, {}.", self.title, self.venue, self.year));
        if !self.see_also.is_empty() {
            s.push_str(&format!(" See also {}.", self.see_also));
        }
        s
    }

    /// The table of `f` (by [`Figure::table`]).
    pub fn table(&self, key: &str) -> Option<&'static PaperTable> {
        self.tables.iter().find(|t| t.key == key)
    }

    /// This paper's figures, in file order.
    pub fn figures(&self) -> impl Iterator<Item = &'static Figure> + '_ {
        figures().iter().filter(move |f| f.seed_file.starts_with(self.prefix))
    }
}

/// The paper `f` comes from.
pub fn paper_of(f: &Figure) -> Option<&'static Paper> {
    PAPERS.iter().find(|p| f.seed_file.starts_with(p.prefix))
}

/// The five papers, in seed order. Citations and captions as the seed documents
/// (`shared/seeds/*.txt`) give them.
pub const PAPERS: [Paper; 5] = [
    Paper {
        prefix: "000",
        key: "rightspeed",
        system: "RightSpeed",
        subject: "task-based speed and voltage scheduling, time of common operations",
        authors: "Jacob R. Lorch and Alan Jay Smith",
        short_authors: "Lorch & Smith",
        title: "Operating System Modifications for Task-Based Speed and Voltage Scheduling",
        venue: "First International Conference on Mobile Systems, Applications, and Services (MobiSys), \
                USENIX/ACM",
        short_venue: "MobiSys",
        year: "2003",
        see_also: "",
        platform: "the AMD machine at 900 MHz (speed changing disabled), Windows 2000",
        statistic: "µs; the mean of 10,000 runs after the first 100 were discarded; operations with hidden \
                    overhead (intercepting a message) measured as the time with minus without",
        tables: &[PaperTable {
            key: "Table 3",
            source: "Table 3",
            caption: "Average time RightSpeed takes to perform common operations on the AMD machine at 900 MHz",
        }],
        notes: &["Ending one task and beginning another takes 1.441 µs in the kernel, less than beginning \
             (1.345 µs) plus ending (1.134 µs) one: the paper puts it down to optimisations for that case \
             (one look-up of the task type group file, one spin lock)."],
    },
    Paper {
        prefix: "001",
        key: "l4",
        system: "L4Ka::Pistachio",
        subject: "system call, address-space switch and IPC on PowerPC",
        authors: "",
        short_authors: "L4Ka project",
        title: "L4Ka::Pistachio PowerPC Performance",
        venue: "web page of the L4Ka project, University of Karlsruhe, maintained by Joshua LeVasseur",
        short_venue: "",
        year: "c. 2003",
        see_also: "",
        platform: "a 500 MHz IBM PowerPC 750 (Apple Pismo PowerBook), the initial Pistachio release",
        statistic: "cycles and retired instructions per operation",
        tables: &[PaperTable {
            key: "Summary",
            source: "Summary table",
            caption: "Cycles and instructions of an empty system call, an address space switch and IPC",
        }],
        notes: &["The page warns against comparing IPC performance between processor architectures: the \
             Pistachio ports' IPC fast paths differ."],
    },
    Paper {
        prefix: "002",
        key: "vmmc",
        system: "VMMC",
        subject: "receive-side notification on Linux and Windows NT",
        authors: "Yuqun Chen, Stefanos N. Damianakis, Sanjeev Kumar, Xiang Yu and Kai Li",
        short_authors: "Chen et al.",
        title: "Porting a User-Level Communication Architecture to NT: Experiences and Performance",
        venue: "3rd USENIX Windows NT Symposium",
        short_venue: "USENIX Windows NT Symposium",
        year: "1999",
        see_also: "",
        platform: "a 450 MHz Pentium II, Linux 2.0.36 and Windows NT 4.0 SP5, Myrinet (LANai 4)",
        statistic: "µs per notification, stage by stage; the figures as the text gives them",
        tables: &[PaperTable {
            key: "Figure 8",
            source: "Figure 8",
            caption: "Receive-side notification overhead breakdowns",
        }],
        notes: &["Linux's stages add up to its total (10 + 17 + 3 = 30 µs); NT's nearly do: 10 µs to the \
             driver handler (the text: both systems take about 10 µs to reach it) + 18 to the start of the DPC \
             handler + 16 + 7 = 51 µs, against a stated total of 52 µs."],
    },
    Paper {
        prefix: "003",
        key: "go",
        system: "Go! component OS",
        subject: "inter-component calls, ORB methods and space",
        authors: "Greg Law and Julie McCann",
        short_authors: "Law & McCann",
        title: "Performance Results",
        venue: "web page of the Go! component-based operating system, City University, London",
        short_venue: "",
        year: "c. 2000",
        see_also: "G. Law and J. McCann, “A New Protection Model for Component-Based Operating Systems”, \
                   IEEE IPCCC 2000",
        platform: "an Intel Pentium P54C at 90 MHz, 32 MB EDO DRAM, 8 KB two-way caches",
        statistic: "cycles by rdtsc; best case: hot cache and branch-target buffer, a tight loop averaged; \
                    worst case: caches and branch-target buffers flushed just before timing",
        tables: &[
            PaperTable {
                key: "OS comparison",
                source: "“Go! Compared to Other OSs”",
                caption: "Round-trip null RPC and one-way domain transfer, in cycles",
            },
            PaperTable {
                key: "ORB primitives",
                source: "“Detailed ORB Performance”",
                caption: "call, t-call and f-call (round-trip null RPC) and xfer (one way)",
            },
            PaperTable {
                key: "Exception latency",
                source: "“Exception Latency”",
                caption: "Throwing an exception until the interrupt arrives, after each kind of call",
            },
            PaperTable {
                key: "ORB methods",
                source: "“Other ORB Methods”",
                caption: "The other ORB methods, each doing the least work possible",
            },
            PaperTable {
                key: "Spatial",
                source: "“Spatial Performance”",
                caption: "Memory per interface; the ORB's code and static data",
            },
            PaperTable {
                key: "Component sizes",
                source: "“Component Sizes”",
                caption: "Code, data and BSS of each GTE component",
            },
            PaperTable {
                key: "sched overhead",
                source: "“sched overhead”",
                caption: "A simulated timer interrupt (int 32) until the second thread runs",
            },
            PaperTable {
                key: "GDT miss",
                source: "“GDT miss”",
                caption: "xfer through a 16-bit selector, and through an ObjRef cached or not cached in the GDT",
            },
            PaperTable { key: "Stability", source: "“Stability”", caption: "Stress test and error test" },
        ],
        notes: &["The other systems of the OS comparison were measured by their own authors on other \
             machines, at clocks the page does not give: they are compared in cycles only."],
    },
    Paper {
        prefix: "004",
        key: "rhino",
        system: "Rhino",
        subject: "a transactional memory service on Digital UNIX and SPIN",
        authors: "Yasushi Saito and Brian Bershad",
        short_authors: "Saito & Bershad",
        title: "A Transactional Memory Service in an Extensible Operating System",
        venue: "USENIX Annual Technical Conference",
        short_venue: "USENIX ATC",
        year: "1998",
        see_also: "",
        platform: "a DEC Alpha, under Digital UNIX and under SPIN",
        statistic: "µs; total = trap + other, trap being the time to pass control to the signal handler \
                    (Digital UNIX) or to Rhino's page-fault handler (SPIN)",
        tables: &[PaperTable { key: "Table 2", source: "Table 2", caption: "Comparison of critical path latencies" }],
        notes: &[
            "SPIN's transaction begin does not add up: trap 9.4 + other 14 = 23.4 µs, against a total \
             of 26.4 µs; every other row's trap + other is its total, to the last digit given.",
            "Begin and commit on Digital UNIX run in user space and make several system calls, so the \
             paper gives only their totals.",
        ],
    },
];

mod map;
pub use map::{
    COLD_CACHE_MODE, Candidates, Estimate, Fallback, L4_ONE_WAY, Parts, STAMPED, Target, Want, beside, describe,
    estimate, is_part, markdown as map_markdown, merged_into, partitions, spanned, target,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_parse_and_cover_five_papers() {
        let f = figures();
        assert_eq!(f.len(), 172);
        for p in PAPERS {
            assert!(f.iter().any(|x| x.seed_file.starts_with(p.prefix)), "{}", p.prefix);
        }
    }

    #[test]
    fn every_table_of_the_figures_has_its_source_and_caption() {
        for f in figures() {
            let p = paper_of(f).unwrap_or_else(|| panic!("{} has no paper", f.seed_file));
            let t = p.table(&f.table).unwrap_or_else(|| panic!("{}: table {:?} not described", p.system, f.table));
            assert!(!t.source.is_empty() && !t.caption.is_empty());
        }
        for p in PAPERS {
            assert!(p.figures().next().is_some(), "{}", p.system);
            for t in p.tables {
                assert!(p.figures().any(|f| f.table == t.key), "{}: {} has no rows", p.system, t.key);
            }
            assert!(p.heading().starts_with(p.system) && p.heading().contains(p.year));
            assert!(p.citation().contains(p.title) && p.citation().contains(p.year));
        }
        let go = PAPERS.iter().find(|p| p.key == "go").unwrap();
        assert_eq!(
            go.heading(),
            "Go! component OS — inter-component calls, ORB methods and space (Law & McCann, c. 2000)"
        );
    }

    /// The figure of `system`'s `op`, `variant`.
    fn value(system: &str, op: &str, variant: &str) -> f64 {
        figures()
            .iter()
            .find(|f| f.system == system && f.operation == op && f.variant == variant)
            .unwrap_or_else(|| panic!("{system} {op} {variant}"))
            .value
    }

    #[test]
    fn the_notes_on_figures_that_do_not_add_up_match_the_figures() {
        // Rhino on SPIN, transaction begin: trap + other is not the total.
        let spin = "Rhino on SPIN";
        let (total, trap, other) = (
            value(spin, "transaction begin", "total"),
            value(spin, "transaction begin", "trap"),
            value(spin, "transaction begin", "other"),
        );
        assert_eq!((total, trap, other), (26.4, 9.4, 14.0));
        assert!((trap + other - 23.4).abs() < 1e-9);
        // Every other Rhino row with parts adds up, to the last digit given.
        for f in figures().iter().filter(|f| f.variant == "total" && f.seed_file.starts_with("004")) {
            let part = |v: &str| {
                figures().iter().find(|g| g.system == f.system && g.operation == f.operation && g.variant == v)
            };
            if let (Some(t), Some(o)) = (part("trap"), part("other"))
                && f.operation != "transaction begin"
            {
                assert!((t.value + o.value - f.value).abs() <= 0.5, "{} {}", f.system, f.operation);
            }
        }
        // VMMC: Linux's stages make its total, NT's do not.
        let vmmc = |platform: &str| -> Vec<f64> {
            figures().iter().filter(|f| f.system == "VMMC" && f.platform == platform).map(|f| f.value).collect()
        };
        let linux = vmmc("Linux");
        assert_eq!(linux[..3].iter().sum::<f64>(), linux[3]);
        let nt = vmmc("Windows NT");
        assert_eq!((nt[..4].iter().sum::<f64>(), nt[4]), (51.0, 52.0));
        let notes = |key: &str| PAPERS.iter().find(|p| p.key == key).unwrap().notes.join(" ");
        assert!(notes("rhino").contains("9.4 + other 14 = 23.4 µs") && notes("rhino").contains("26.4 µs"));
        assert!(notes("vmmc").contains("= 51 µs") && notes("vmmc").contains("52 µs"));
        assert!(notes("vmmc").contains("10 + 17 + 3 = 30 µs"));
        // RightSpeed: ending and beginning at once costs less in the kernel than apart.
        let rs = |op: &str| value("RightSpeed", op, "kernel-mode component");
        assert_eq!((rs("Begin a task"), rs("End a task"), rs("End one task and begin another")), (1.345, 1.134, 1.441));
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
