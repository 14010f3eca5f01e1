//! What `space.*` reads from `/proc`: the kernel's memory counters (`/proc/meminfo`), this
//! process's (`/proc/self/status`, `/proc/self/fd`, `/proc/self/maps`) and a child's private
//! memory (`/proc/<pid>/smaps_rollup`). Parsers are pure functions of the file's text; see
//! proc(5).

use std::collections::BTreeMap;

/// `Name:   123 kB` lines (meminfo, status, smaps_rollup) → name → value. Values without a
/// unit (`Threads: 4`) are kept as they are; lines that are not `name: number…` are skipped.
pub fn parse_fields(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            if name.is_empty() || name.contains(char::is_whitespace) {
                return None;
            }
            let value = rest.split_whitespace().next()?.parse().ok()?;
            Some((name.to_string(), value))
        })
        .collect()
}

/// Kernel memory the objects may take, from `/proc/meminfo` (kB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelMem {
    /// `Slab`: slab allocator pages (reclaimable and not).
    pub slab_kb: u64,
    /// `KernelStack`: kernel stacks of all threads.
    pub kernel_stack_kb: u64,
    /// `PageTables`: page-table pages of all processes.
    pub page_tables_kb: u64,
}

impl KernelMem {
    /// From the text of `/proc/meminfo`; `None` if a field is missing.
    pub fn parse(meminfo: &str) -> Option<KernelMem> {
        let f = parse_fields(meminfo);
        Some(KernelMem {
            slab_kb: *f.get("Slab")?,
            kernel_stack_kb: *f.get("KernelStack")?,
            page_tables_kb: *f.get("PageTables")?,
        })
    }
}

/// This process's memory and thread count, from `/proc/self/status` (kB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserMem {
    /// `VmRSS`: resident memory.
    pub rss_kb: u64,
    /// `VmSize`: address space.
    pub size_kb: u64,
    /// `Threads`.
    pub threads: u64,
}

impl UserMem {
    /// From the text of `/proc/<pid>/status`; `None` if a field is missing.
    pub fn parse(status: &str) -> Option<UserMem> {
        let f = parse_fields(status);
        Some(UserMem { rss_kb: *f.get("VmRSS")?, size_kb: *f.get("VmSize")?, threads: *f.get("Threads")? })
    }
}

/// Memory only this process maps (`Private_Clean + Private_Dirty`), from the text of
/// `/proc/<pid>/smaps_rollup` (kB).
pub fn private_kb(smaps_rollup: &str) -> Option<u64> {
    let f = parse_fields(smaps_rollup);
    Some(f.get("Private_Clean")? + f.get("Private_Dirty")?)
}

/// Everything `space.*` reads at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Kernel-wide memory counters.
    pub kernel: KernelMem,
    /// This process.
    pub user: UserMem,
    /// Open descriptors (`/proc/self/fd` entries).
    pub fds: u64,
    /// Mappings (`/proc/self/maps` lines).
    pub vmas: u64,
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))
}

impl Snapshot {
    /// Reads it now.
    pub fn take() -> Result<Snapshot, String> {
        let kernel =
            KernelMem::parse(&read("/proc/meminfo")?).ok_or("/proc/meminfo lacks Slab/KernelStack/PageTables")?;
        let user = UserMem::parse(&read("/proc/self/status")?).ok_or("/proc/self/status lacks VmRSS/VmSize/Threads")?;
        let fds = std::fs::read_dir("/proc/self/fd").map_err(|e| format!("read /proc/self/fd: {e}"))?.count() as u64;
        let vmas = read("/proc/self/maps")?.lines().count() as u64;
        Ok(Snapshot { kernel, user, fds, vmas })
    }
}

/// `Slab` of `/proc/meminfo` now, kB (`None` if unreadable).
pub fn slab_kb() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| KernelMem::parse(&t)).map(|k| k.slab_kb)
}

/// A child's private memory in bytes.
pub fn child_private_bytes(pid: i32) -> Result<u64, String> {
    let path = format!("/proc/{pid}/smaps_rollup");
    private_kb(&read(&path)?).map(|kb| kb * 1024).ok_or(format!("{path} lacks Private_Clean/Private_Dirty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       24684092 kB\nMemFree:        24391300 kB\nSlab:              41844 kB\n\
        SReclaimable:      21832 kB\nKernelStack:        1348 kB\nPageTables:         1208 kB\nHugePages_Total:       0\n";

    const STATUS: &str = "Name:\tosprim\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t   12000 kB\n\
        VmSize:\t   11000 kB\nVmRSS:\t    4000 kB\nThreads:\t3\nSigQ:\t0/95000\n";

    const ROLLUP: &str = "55d0c0a2e000-7ffd3b5f2000 ---p 00000000 00:00 0                          [rollup]\n\
        Rss:                1884 kB\nPss:                 350 kB\nShared_Clean:       1700 kB\n\
        Private_Clean:        16 kB\nPrivate_Dirty:       112 kB\nSwap:                  0 kB\n";

    #[test]
    fn meminfo_gives_kernel_memory() {
        assert_eq!(
            KernelMem::parse(MEMINFO),
            Some(KernelMem { slab_kb: 41844, kernel_stack_kb: 1348, page_tables_kb: 1208 })
        );
        assert_eq!(KernelMem::parse("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_fields(MEMINFO).get("HugePages_Total"), Some(&0));
    }

    #[test]
    fn status_gives_rss_size_threads() {
        assert_eq!(UserMem::parse(STATUS), Some(UserMem { rss_kb: 4000, size_kb: 11000, threads: 3 }));
        assert_eq!(UserMem::parse("VmRSS: 1 kB\n"), None);
    }

    #[test]
    fn smaps_rollup_gives_private_memory_and_skips_the_header() {
        assert_eq!(private_kb(ROLLUP), Some(128));
        assert!(!parse_fields(ROLLUP).keys().any(|k| k.contains('-')));
        assert_eq!(private_kb("Rss: 5 kB\n"), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let s = Snapshot::take().expect("proc readable");
        assert!(s.user.rss_kb > 0 && s.user.threads >= 1 && s.fds >= 3 && s.vmas > 0);
    }
}
