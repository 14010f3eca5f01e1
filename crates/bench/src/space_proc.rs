//! What `space.*` reads from `/proc`: the kernel's memory counters (`/proc/meminfo`), the
//! slab caches' object counts (`/proc/slabinfo`, readable by root only), this process's
//! (`/proc/self/status`, `/proc/self/fd`, `/proc/self/maps`) and a child's private memory
//! (`/proc/<pid>/smaps_rollup`). Parsers are pure functions of the file's text; see proc(5),
//! slabinfo(5).

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
    /// `VmPTE`: this process's page tables (0 where the kernel does not show it).
    pub pte_kb: u64,
}

impl UserMem {
    /// From the text of `/proc/<pid>/status`; `None` if a field is missing.
    pub fn parse(status: &str) -> Option<UserMem> {
        let f = parse_fields(status);
        Some(UserMem {
            rss_kb: *f.get("VmRSS")?,
            size_kb: *f.get("VmSize")?,
            threads: *f.get("Threads")?,
            pte_kb: f.get("VmPTE").copied().unwrap_or(0),
        })
    }
}

/// One slab cache of `/proc/slabinfo`: objects in use and the size of one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlabCache {
    /// `active_objs`.
    pub active: u64,
    /// `objsize`, bytes.
    pub object_bytes: u64,
}

/// The slab caches the memory of a mapping lives in: its `vm_area_struct` (and, on kernels
/// that keep it apart, its `vma_lock`), the maple tree that indexes the mappings
/// (`maple_node`), and the reverse-mapping records of anonymous memory (`anon_vma`,
/// `anon_vma_chain`, made only when a page is touched).
pub const MAPPING_CACHES: [&str; 5] = ["vm_area_struct", "vma_lock", "maple_node", "anon_vma", "anon_vma_chain"];

/// The caches of [`MAPPING_CACHES`] found in the text of `/proc/slabinfo` (version 2.x:
/// `name active_objs num_objs objsize objperslab pagesperslab : …`); `None` if the text is not
/// slabinfo.
pub fn parse_slabinfo(text: &str) -> Option<BTreeMap<String, SlabCache>> {
    if !text.starts_with("slabinfo - version: 2.") {
        return None;
    }
    Some(
        text.lines()
            .filter_map(|line| {
                let mut w = line.split_whitespace();
                let name = w.next()?;
                if !MAPPING_CACHES.contains(&name) {
                    return None;
                }
                let active = w.next()?.parse().ok()?;
                let _total: u64 = w.next()?.parse().ok()?;
                let object_bytes = w.next()?.parse().ok()?;
                Some((name.to_string(), SlabCache { active, object_bytes }))
            })
            .collect(),
    )
}

/// Memory only this process maps (`Private_Clean + Private_Dirty`), from the text of
/// `/proc/<pid>/smaps_rollup` (kB).
pub fn private_kb(smaps_rollup: &str) -> Option<u64> {
    let f = parse_fields(smaps_rollup);
    Some(f.get("Private_Clean")? + f.get("Private_Dirty")?)
}

/// Everything `space.*` reads at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Kernel-wide memory counters.
    pub kernel: KernelMem,
    /// This process.
    pub user: UserMem,
    /// Open descriptors (`/proc/self/fd` entries).
    pub fds: u64,
    /// Mappings (`/proc/self/maps` lines).
    pub vmas: u64,
    /// The mapping caches of `/proc/slabinfo`, where it is readable (root).
    pub slabs: Option<BTreeMap<String, SlabCache>>,
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
        let slabs = std::fs::read_to_string("/proc/slabinfo").ok().and_then(|t| parse_slabinfo(&t));
        Ok(Snapshot { kernel, user, fds, vmas, slabs })
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
        assert_eq!(UserMem::parse(STATUS), Some(UserMem { rss_kb: 4000, size_kb: 11000, threads: 3, pte_kb: 0 }));
        let with_pte = format!("{STATUS}VmPTE:\t      48 kB\n");
        assert_eq!(UserMem::parse(&with_pte).map(|u| u.pte_kb), Some(48));
        assert_eq!(UserMem::parse("VmRSS: 1 kB\n"), None);
    }

    #[test]
    fn smaps_rollup_gives_private_memory_and_skips_the_header() {
        assert_eq!(private_kb(ROLLUP), Some(128));
        assert!(!parse_fields(ROLLUP).keys().any(|k| k.contains('-')));
        assert_eq!(private_kb("Rss: 5 kB\n"), None);
    }

    const SLABINFO: &str = "slabinfo - version: 2.1\n\
        # name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n\
        vm_area_struct      1911   1911    192   21    1 : tunables    0    0    0 : slabdata     91     91      0\n\
        maple_node           951    960    256   16    1 : tunables    0    0    0 : slabdata     60     60      0\n\
        kmalloc-64          5000   5120     64   64    1 : tunables    0    0    0 : slabdata     80     80      0\n";

    #[test]
    fn slabinfo_gives_the_mapping_caches() {
        let s = parse_slabinfo(SLABINFO).expect("slabinfo");
        assert_eq!(s.len(), 2, "only the mapping caches: {s:?}");
        assert_eq!(s["vm_area_struct"], SlabCache { active: 1911, object_bytes: 192 });
        assert_eq!(s["maple_node"], SlabCache { active: 951, object_bytes: 256 });
        assert_eq!(parse_slabinfo(MEMINFO), None);
    }

    #[test]
    fn this_process_can_be_read() {
        let s = Snapshot::take().expect("proc readable");
        assert!(s.user.rss_kb > 0 && s.user.threads >= 1 && s.fds >= 3 && s.vmas > 0);
    }
}
