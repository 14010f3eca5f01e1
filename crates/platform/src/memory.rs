//! Memory a benchmark may still take: the least of the machine's `MemAvailable` and what the
//! process's memory cgroup leaves (its limit less its usage, at every level up to the root of
//! the hierarchy): cgroup v2 `memory.max − memory.current`, or v1 `memory.limit_in_bytes −
//! memory.usage_in_bytes`. A benchmark that would not fit is skipped with the reason, rather
//! than killed by the kernel's OOM killer in the middle of a run.

use std::path::{Path, PathBuf};

/// A v1 limit this large means none (the kernel's "unlimited" is near 2^63).
const V1_UNLIMITED: u64 = 1 << 62;

/// What memory is left, and what bounds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// Bytes a process may still take.
    pub bytes: u64,
    /// `MemAvailable`, bytes (`None` when unreadable).
    pub available: Option<u64>,
    /// The tightest cgroup limit on the way to the root, bytes, and what it leaves.
    pub cgroup: Option<CgroupRoom>,
}

/// A memory cgroup's limit and what it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupRoom {
    /// Its limit, bytes.
    pub limit: u64,
    /// The limit less the usage, bytes.
    pub left: u64,
}

impl Room {
    /// Why `need` bytes do not fit, when they do not.
    pub fn refuse(&self, need: u64, what: &str) -> Option<String> {
        if need <= self.bytes {
            return None;
        }
        let mib = |b: u64| b >> 20;
        Some(match self.cgroup.filter(|c| Some(c.left) <= self.available || self.available.is_none()) {
            Some(c) => format!(
                "needs {} MiB of memory for {what}; the memory cgroup (limit {} MiB) leaves {} MiB",
                mib(need),
                mib(c.limit),
                mib(c.left)
            ),
            None => format!("needs {} MiB of memory for {what}; MemAvailable is {} MiB", mib(need), mib(self.bytes)),
        })
    }
}

/// The room of this process now; `None` when nothing could be read.
pub fn room() -> Option<Room> {
    room_in(Path::new("/"))
}

/// The memory limit of this process's cgroup, as said in a reason ("cgroup limit 100 MiB"),
/// when it has one.
pub fn cgroup_limit_text() -> Option<String> {
    room()?.cgroup.map(|c| format!("cgroup limit {} MiB", c.limit >> 20))
}

/// [`room`] over a file tree whose `/` is `root` (tests).
pub fn room_in(root: &Path) -> Option<Room> {
    let read = |rel: &str| std::fs::read_to_string(root.join(rel.trim_start_matches('/'))).ok();
    let available = read("proc/meminfo").and_then(|m| {
        m.lines().find_map(|l| l.strip_prefix("MemAvailable:")?.split_whitespace().next()?.parse::<u64>().ok())
    });
    let available = available.map(|kb| kb.saturating_mul(1024));
    let cgroup = read("proc/self/cgroup").and_then(|own| cgroup_room(root, &own));
    let bytes = match (available, cgroup) {
        (Some(a), Some(c)) => a.min(c.left),
        (Some(a), None) => a,
        (None, Some(c)) => c.left,
        (None, None) => return None,
    };
    Some(Room { bytes, available, cgroup })
}

/// The tightest limit over the process's memory cgroup and its ancestors (v2, else v1).
fn cgroup_room(root: &Path, own: &str) -> Option<CgroupRoom> {
    let mut found = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (mounts, limit, usage): (&[&str], &str, &str) = if controllers.is_empty() {
            (&["sys/fs/cgroup", "sys/fs/cgroup/unified"], "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (&["sys/fs/cgroup/memory"], "memory.limit_in_bytes", "memory.usage_in_bytes")
        } else {
            continue;
        };
        found.extend(mounts.iter().filter_map(|m| tightest(&root.join(m), path, limit, usage)));
    }
    found.into_iter().min_by_key(|c| c.left)
}

/// The tightest limit from the cgroup at `path` under `mount` up to the mount's top (a
/// container that sees only its own subtree has its cgroup at the top).
fn tightest(mount: &Path, path: &str, limit: &str, usage: &str) -> Option<CgroupRoom> {
    let path = path.trim().trim_matches('/');
    if path.split('/').any(|c| c == "..") || !mount.is_dir() {
        return None;
    }
    let number = |dir: &Path, file: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(file)).ok()?.trim().parse::<u64>().ok()
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut at = mount.join(path);
    if !at.is_dir() {
        at = mount.to_path_buf();
    }
    while at.starts_with(mount) {
        dirs.push(at.clone());
        if !at.pop() {
            break;
        }
    }
    dirs.iter()
        .filter_map(|d| {
            let max = number(d, limit).filter(|m| *m < V1_UNLIMITED)?;
            let used = number(d, usage).unwrap_or(0);
            Some(CgroupRoom { limit: max, left: max.saturating_sub(used) })
        })
        .min_by_key(|c| c.left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = d.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    const MEMINFO: &str = "MemTotal:       24684092 kB\nMemAvailable:   20000000 kB\n";

    #[test]
    fn a_v2_cgroup_limit_below_the_machines_memory_bounds_the_room() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/user.slice/run-1.scope\n"),
            ("sys/fs/cgroup/user.slice/run-1.scope/memory.max", "104857600\n"),
            ("sys/fs/cgroup/user.slice/run-1.scope/memory.current", "4194304\n"),
            ("sys/fs/cgroup/user.slice/memory.max", "max\n"),
            ("sys/fs/cgroup/user.slice/memory.current", "999999999\n"),
        ]);
        let r = room_in(d.path()).unwrap();
        assert_eq!(r.cgroup, Some(CgroupRoom { limit: 100 << 20, left: 96 << 20 }));
        assert_eq!(r.bytes, 96 << 20);
        let why = r.refuse(300 << 20, "the touched memory").unwrap();
        assert!(why.contains("memory cgroup (limit 100 MiB) leaves 96 MiB"), "{why}");
        assert_eq!(r.refuse(50 << 20, "x"), None);
    }

    #[test]
    fn a_parents_tighter_limit_counts_and_v1_is_read_too() {
        let d = tree(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "4:memory:/jobs/a\n1:cpu:/\n0::/\n"),
            ("sys/fs/cgroup/memory/jobs/a/memory.limit_in_bytes", "9223372036854771712\n"),
            ("sys/fs/cgroup/memory/jobs/a/memory.usage_in_bytes", "1048576\n"),
            ("sys/fs/cgroup/memory/jobs/memory.limit_in_bytes", "209715200\n"),
            ("sys/fs/cgroup/memory/jobs/memory.usage_in_bytes", "10485760\n"),
        ]);
        let r = room_in(d.path()).unwrap();
        assert_eq!(r.cgroup, Some(CgroupRoom { limit: 200 << 20, left: 190 << 20 }));
        assert_eq!(r.bytes, 190 << 20);
    }

    #[test]
    fn without_a_limit_the_machines_memory_is_the_room() {
        let d =
            tree(&[("proc/meminfo", MEMINFO), ("proc/self/cgroup", "0::/\n"), ("sys/fs/cgroup/memory.current", "1\n")]);
        let r = room_in(d.path()).unwrap();
        assert_eq!((r.cgroup, r.bytes), (None, 20_000_000 * 1024));
        let why = r.refuse(30 << 30, "x").unwrap();
        assert!(why.contains("MemAvailable"), "{why}");
        assert!(room_in(tree(&[]).path()).is_none());
    }

    #[test]
    fn this_machine_has_a_room() {
        let r = room().expect("/proc/meminfo");
        assert!(r.bytes > 0 && r.bytes <= r.available.unwrap_or(u64::MAX));
    }
}
