//! Pure parsers for the `/proc` and `/sys` text formats the machine capture
//! reads. None of these touch the filesystem and none of them panic: a
//! malformed input gives `None` (or an empty collection).

use std::collections::BTreeMap;

/// Largest CPU number accepted by [`parse_cpu_list`]; guards against absurd
/// ranges allocating huge vectors (the kernel's own limit is far lower).
const MAX_CPU_ID: usize = 1 << 16;

/// Parses a kernel CPU list such as `"0-3,6"` into sorted, de-duplicated CPU
/// numbers. Blank input is the empty set; malformed input is `None`.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?),
            None => {
                let n = part.parse::<usize>().ok()?;
                (n, n)
            }
        };
        if lo > hi || hi > MAX_CPU_ID {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Formats CPU numbers back into the kernel's compact list form (`"0-3,6"`).
/// The input need not be sorted.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut iter = sorted.into_iter();
    let Some(mut start) = iter.next() else {
        return String::new();
    };
    let mut end = start;
    let push = |a: usize, b: usize, parts: &mut Vec<String>| {
        if a == b {
            parts.push(a.to_string());
        } else {
            parts.push(format!("{a}-{b}"));
        }
    };
    for c in iter {
        if c == end + 1 {
            end = c;
        } else {
            push(start, end, &mut parts);
            start = c;
            end = c;
        }
    }
    push(start, end, &mut parts);
    parts.join(",")
}

/// Parses `/proc/loadavg` (`"0.12 0.04 0.01 1/81 2438"`) into the three load
/// averages.
pub fn parse_loadavg(s: &str) -> Option<[f64; 3]> {
    let mut it = s.split_whitespace().map(|w| w.parse::<f64>().ok());
    let a = it.next()??;
    let b = it.next()??;
    let c = it.next()??;
    if [a, b, c].iter().all(|v| v.is_finite() && *v >= 0.0) { Some([a, b, c]) } else { None }
}

/// Returns the choice marked with `open`/`close` delimiters in a sysfs
/// selector such as `"always [madvise] never"` (`'['`, `']'`) or
/// `"none voluntary (full) lazy"` (`'('`, `')'`).
pub fn parse_selected(s: &str, open: char, close: char) -> Option<String> {
    s.split_whitespace().find_map(|w| {
        let inner = w.strip_prefix(open)?.strip_suffix(close)?;
        (!inner.is_empty()).then(|| inner.to_string())
    })
}

/// Parses `"always [madvise] never"` (transparent huge pages) into the selected
/// value.
pub fn parse_thp(s: &str) -> Option<String> {
    parse_selected(s, '[', ']')
}

/// The first processor block of `/proc/cpuinfo` plus the number of
/// `processor` entries in the whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuInfo {
    /// `key → value` pairs of the first block (keys trimmed, first wins).
    pub first: BTreeMap<String, String>,
    /// Number of `processor` lines.
    pub processors: usize,
}

impl CpuInfo {
    /// The value of `key` in the first block, if present and non-empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.first.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The CPU flag list (`flags` on x86, `Features` on arm64), if present.
    pub fn flags(&self) -> Option<Vec<&str>> {
        let line = self.get("flags").or_else(|| self.get("Features"))?;
        Some(line.split_whitespace().collect())
    }

    /// Whether `flag` is listed; `None` when there is no flag line at all.
    pub fn has_flag(&self, flag: &str) -> Option<bool> {
        self.flags().map(|f| f.contains(&flag))
    }

    /// A number from the first block, decimal or `0x` hexadecimal.
    pub fn number(&self, key: &str) -> Option<u32> {
        parse_int(self.get(key)?)
    }
}

/// Parses `/proc/cpuinfo`. On arm64 the per-CPU keys follow global ones, so
/// any key seen before the second `processor` line counts as "first block".
pub fn parse_cpuinfo(s: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    for line in s.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k == "processor" {
            info.processors += 1;
        }
        if info.processors <= 1 {
            info.first.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
    }
    info
}

/// Parses a decimal or `0x`-prefixed hexadecimal unsigned integer.
pub fn parse_int(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses a sysfs cache size such as `"32K"`, `"8M"` or `"512"` into bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Returns the value of `key` in a `Key:\tvalue` file such as
/// `/proc/self/status` or `/proc/meminfo`.
pub fn parse_keyed_field<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// Extracts `MemTotal` from `/proc/meminfo`, in bytes.
pub fn parse_meminfo_total(s: &str) -> Option<u64> {
    let v = parse_keyed_field(s, "MemTotal")?;
    let mut words = v.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | Some("KB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// Extracts the allowed CPU set from `/proc/self/status`
/// (`Cpus_allowed_list:\t0-3,6`).
pub fn parse_status_cpus_allowed(s: &str) -> Option<Vec<usize>> {
    parse_cpu_list(parse_keyed_field(s, "Cpus_allowed_list")?)
}

/// The preemption model named in the kernel version string
/// (`/proc/sys/kernel/version`): `"PREEMPT_RT"`, `"PREEMPT_DYNAMIC"`,
/// `"PREEMPT"` or `"none"`.
pub fn parse_preempt_model(version: &str) -> String {
    let words: Vec<&str> = version.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let old_rt = words.windows(2).any(|p| p == ["PREEMPT", "RT"]);
    if has("PREEMPT_RT") || old_rt {
        "PREEMPT_RT"
    } else if has("PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC"
    } else if has("PREEMPT") {
        "PREEMPT"
    } else {
        "none"
    }
    .to_string()
}

/// Parses the debugfs preemption selector `"none voluntary (full) lazy"`
/// into the active mode.
pub fn parse_preempt_dynamic(s: &str) -> Option<String> {
    parse_selected(s, '(', ')')
}

/// One line of `/proc/<pid>/cgroup`: `hierarchy-ID:controller-list:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupEntry {
    /// Hierarchy ID; `0` is the cgroup v2 unified hierarchy.
    pub hierarchy: u32,
    /// Controllers bound to the hierarchy (empty for v2).
    pub controllers: Vec<String>,
    /// Path of the cgroup relative to the hierarchy's mount.
    pub path: String,
}

impl CgroupEntry {
    /// Whether this is the cgroup v2 unified-hierarchy entry (`0::/…`).
    pub fn is_unified(&self) -> bool {
        self.hierarchy == 0 && self.controllers.is_empty()
    }
}

/// Parses `/proc/<pid>/cgroup` (v1, v2 or hybrid); malformed lines are skipped.
pub fn parse_cgroup(s: &str) -> Vec<CgroupEntry> {
    s.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy = parts.next()?.trim().parse().ok()?;
            let controllers = parts.next()?.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect();
            let path = parts.next()?.trim().to_string();
            Some(CgroupEntry { hierarchy, controllers, path })
        })
        .collect()
}

/// `"v2"`, `"v1"`, `"hybrid"` or `"unknown"` for parsed cgroup entries.
pub fn cgroup_version(entries: &[CgroupEntry]) -> &'static str {
    let unified = entries.iter().any(CgroupEntry::is_unified);
    let legacy = entries.iter().any(|e| !e.is_unified());
    match (unified, legacy) {
        (true, false) => "v2",
        (false, true) => "v1",
        (true, true) => "hybrid",
        (false, false) => "unknown",
    }
}

/// Container runtime named by a cgroup file's text, if any.
pub fn container_from_cgroup(s: &str) -> Option<&'static str> {
    // Kubernetes first: its paths also mention the underlying runtime.
    const MARKERS: [(&str, &str); 6] = [
        ("kubepods", "kubernetes"),
        ("libpod", "podman"),
        ("podman", "podman"),
        ("docker", "docker"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ];
    parse_cgroup(s)
        .iter()
        .find_map(|e| MARKERS.iter().find(|(needle, _)| e.path.contains(needle)).map(|(_, name)| *name))
}

/// Parses cgroup v2 `cpu.max` (`"max 100000"` or `"200000 100000"`) into the
/// CPU quota as a number of CPUs; `Some(None)` means unlimited.
pub fn parse_cpu_max(s: &str) -> Option<Option<f64>> {
    let mut w = s.split_whitespace();
    let quota = w.next()?;
    let period: f64 = match w.next() {
        Some(p) => p.parse().ok()?,
        None => 100_000.0,
    };
    if quota == "max" {
        return Some(None);
    }
    let quota: f64 = quota.parse().ok()?;
    (period > 0.0).then_some(Some(quota / period))
}

/// Parses cgroup v2 `memory.max` (`"max"` or bytes); `Some(None)` means
/// unlimited.
pub fn parse_memory_max(s: &str) -> Option<Option<u64>> {
    match s.trim() {
        "max" => Some(None),
        n => n.parse().ok().map(Some),
    }
}

/// Converts cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` into the v2
/// `cpu.max` form (`"max 100000"`, `"50000 100000"`).
pub fn cpu_max_from_v1(quota: &str, period: &str) -> Option<String> {
    let quota: i64 = quota.trim().parse().ok()?;
    let period: u64 = period.trim().parse().ok()?;
    Some(if quota < 0 { format!("max {period}") } else { format!("{quota} {period}") })
}

/// Converts cgroup v1 `memory.limit_in_bytes` into the v2 `memory.max` form;
/// v1 reports "no limit" as a value near `i64::MAX`.
pub fn memory_max_from_v1(limit: &str) -> Option<String> {
    let n: u64 = limit.trim().parse().ok()?;
    Some(if n >= 1 << 62 { "max".to_string() } else { n.to_string() })
}

/// Parses a small signed integer sysctl such as `perf_event_paranoid`.
pub fn parse_i32(s: &str) -> Option<i32> {
    s.trim().parse().ok()
}

/// Parses an unsigned integer such as a cpufreq kHz value.
pub fn parse_u64(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// Parses a sysfs boolean such as `smt/active` (`"1"` / `"0"`).
pub fn parse_bool01(s: &str) -> Option<bool> {
    match s.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// Vendor name for an arm64 `CPU implementer` code from `/proc/cpuinfo`.
pub fn arm_implementer_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0x6d => "Microsoft",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Whether a DMI vendor or product string names a virtual machine.
pub fn dmi_looks_virtual(vendor: &str, product: &str) -> bool {
    const MARKERS: [&str; 11] = [
        "qemu",
        "kvm",
        "vmware",
        "virtualbox",
        "innotek",
        "xen",
        "bochs",
        "parallels",
        "virtual machine",
        "google compute engine",
        "cloud hypervisor",
    ];
    let text = format!("{vendor} {product}").to_ascii_lowercase();
    MARKERS.iter().any(|m| text.contains(m))
}
