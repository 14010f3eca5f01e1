//! Reads the `/proc` and `/sys` files under a root directory and assembles a
//! [`Machine`]. Every read is optional; parsing is delegated to
//! [`super::parse`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::cgroup;
use super::cpuid::CpuidInfo;
use super::parse::{self, CpuInfo};
use super::{Cache, Cpu, CpuFlags, Frequency, Kernel, Machine, Scheduling, UNKNOWN, Virtualization};

/// Upper bound on bytes read from any one file, so a strange file cannot
/// exhaust memory.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// A filesystem view rooted at some directory (normally `/`).
pub(super) struct Fs {
    root: PathBuf,
}

impl Fs {
    /// A view whose `/` is `root`.
    pub(super) fn new(root: &Path) -> Self {
        Fs { root: root.to_path_buf() }
    }

    fn path(&self, rel: &str) -> PathBuf {
        let rel = rel.trim_start_matches('/');
        if rel.is_empty() { self.root.clone() } else { self.root.join(rel) }
    }

    /// File contents with trailing whitespace removed; `None` if unreadable.
    pub(super) fn read(&self, rel: &str) -> Option<String> {
        use std::io::Read;
        let file = fs::File::open(self.path(rel)).ok()?;
        let mut buf = Vec::new();
        file.take(MAX_FILE_BYTES).read_to_end(&mut buf).ok()?;
        let text = String::from_utf8_lossy(&buf);
        Some(text.trim_end().to_string())
    }

    /// Trimmed contents, or `"unknown"` if unreadable or blank.
    fn text(&self, rel: &str) -> String {
        self.read(rel).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).unwrap_or_else(|| UNKNOWN.to_string())
    }

    pub(super) fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Sorted entry names of a directory; empty if unreadable.
    fn list(&self, rel: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.path(rel))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Entries named `<prefix><number>`, sorted by number.
    fn numbered(&self, rel: &str, prefix: &str) -> Vec<(usize, String)> {
        let mut v: Vec<(usize, String)> =
            self.list(rel).into_iter().filter_map(|n| Some((n.strip_prefix(prefix)?.parse().ok()?, n))).collect();
        v.sort();
        v
    }

    pub(super) fn load_average(&self) -> Option<[f64; 3]> {
        parse::parse_loadavg(&self.read("proc/loadavg")?)
    }

    pub(super) fn allowed_cpus(&self) -> Vec<usize> {
        self.read("proc/self/status").and_then(|s| parse::parse_status_cpus_allowed(&s)).unwrap_or_default()
    }
}

/// Builds a [`Machine`] from the files under `root` plus optional CPUID data.
pub(super) fn capture_with(root: &Path, cpuid: Option<CpuidInfo>) -> Machine {
    let fs = Fs::new(root);
    let cpuid = cpuid.unwrap_or_default();
    let cpuinfo = fs.read("proc/cpuinfo").map(|s| parse::parse_cpuinfo(&s)).unwrap_or_default();
    let self_cgroup = fs.read("proc/self/cgroup");
    let cpu = read_cpu(&fs, &cpuinfo, &cpuid);
    let virtualization = read_virtualization(&fs, &cpuid, cpu.flags.hypervisor);
    Machine {
        hostname: fs.text("proc/sys/kernel/hostname"),
        arch: std::env::consts::ARCH.to_string(),
        kernel: read_kernel(&fs),
        frequency: read_frequency(&fs, &cpuinfo),
        virtualization,
        container: cgroup::read_container(&fs, self_cgroup.as_deref()),
        cgroup: cgroup::read_cgroup(&fs, self_cgroup.as_deref()),
        scheduling: Scheduling {
            allowed_cpus: fs.allowed_cpus(),
            load_avg_start: fs.load_average(),
            load_avg_end: None,
        },
        cpu,
    }
}

pub(super) fn or_unknown(v: Option<&str>) -> String {
    v.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(UNKNOWN).to_string()
}

fn read_cpu(fs: &Fs, ci: &CpuInfo, id: &CpuidInfo) -> Cpu {
    let arm_vendor = ci
        .number("CPU implementer")
        .map(|c| parse::arm_implementer_name(c).map_or_else(|| format!("{c:#x}"), str::to_string));
    let vendor = id.vendor.clone().or_else(|| ci.get("vendor_id").map(str::to_string)).or(arm_vendor);
    let model_name = id
        .brand
        .clone()
        .or_else(|| ci.get("model name").map(str::to_string))
        .or_else(|| ci.get("Model").map(str::to_string));
    let logical_cpus = fs
        .read("sys/devices/system/cpu/online")
        .and_then(|s| parse::parse_cpu_list(&s))
        .map(|v| v.len())
        .filter(|n| *n > 0)
        .or((ci.processors > 0).then_some(ci.processors));
    let flag = |name: &str| ci.has_flag(name);
    Cpu {
        vendor: or_unknown(vendor.as_deref()),
        model_name: or_unknown(model_name.as_deref()),
        family: id.family.or_else(|| ci.number("cpu family")).or_else(|| ci.number("CPU architecture")),
        model: id.model.or_else(|| ci.number("model")).or_else(|| ci.number("CPU part")),
        stepping: id.stepping.or_else(|| ci.number("stepping")).or_else(|| ci.number("CPU revision")),
        microcode: or_unknown(ci.get("microcode")),
        logical_cpus,
        physical_cores: physical_cores(fs),
        smt_active: fs.read("sys/devices/system/cpu/smt/active").and_then(|s| parse::parse_bool01(&s)),
        caches: caches(fs),
        flags: CpuFlags {
            constant_tsc: flag("constant_tsc"),
            nonstop_tsc: flag("nonstop_tsc"),
            tsc_known_freq: flag("tsc_known_freq"),
            rdtscp: flag("rdtscp").or(id.rdtscp),
            rdpid: flag("rdpid").or(id.rdpid),
            pku: flag("pku").or(id.pku),
            ospke: flag("ospke").or(id.ospke),
            invariant_tsc: id.invariant_tsc,
            hypervisor: id.hypervisor_bit.or_else(|| {
                // Only x86 kernels print a `hypervisor` flag.
                ci.get("flags").map(|f| f.split_whitespace().any(|w| w == "hypervisor"))
            }),
        },
    }
}

fn physical_cores(fs: &Fs) -> Option<usize> {
    let base = "sys/devices/system/cpu";
    let mut cores = BTreeSet::new();
    for (_, name) in fs.numbered(base, "cpu") {
        let topo = format!("{base}/{name}/topology");
        let pkg = fs.read(&format!("{topo}/physical_package_id"));
        let core = fs.read(&format!("{topo}/core_id"));
        if let (Some(p), Some(c)) = (pkg, core)
            && let (Ok(p), Ok(c)) = (p.trim().parse::<i64>(), c.trim().parse::<i64>())
        {
            cores.insert((p, c));
        }
    }
    (!cores.is_empty()).then_some(cores.len())
}

fn caches(fs: &Fs) -> Vec<Cache> {
    let base = "sys/devices/system/cpu/cpu0/cache";
    fs.numbered(base, "index")
        .into_iter()
        .map(|(_, name)| {
            let dir = format!("{base}/{name}");
            let get = |f: &str| fs.read(&format!("{dir}/{f}"));
            Cache {
                level: get("level").and_then(|s| s.trim().parse().ok()),
                kind: fs.text(&format!("{dir}/type")),
                size_bytes: get("size").and_then(|s| parse::parse_cache_size(&s)),
                shared_with_cpus: get("shared_cpu_list")
                    .and_then(|s| parse::parse_cpu_list(&s))
                    .map(|v| v.len())
                    .filter(|n| *n > 0),
            }
        })
        .collect()
}

fn read_kernel(fs: &Fs) -> Kernel {
    let version = fs.text("proc/sys/kernel/version");
    let preempt_model = if version == UNKNOWN { UNKNOWN.to_string() } else { parse::parse_preempt_model(&version) };
    let vdir = "sys/devices/system/cpu/vulnerabilities";
    let vulnerabilities: BTreeMap<String, String> = fs
        .list(vdir)
        .into_iter()
        .filter_map(|name| {
            let text = fs.read(&format!("{vdir}/{name}"))?;
            Some((name, text.trim().to_string()))
        })
        .collect();
    let cs = "sys/devices/system/clocksource/clocksource0";
    Kernel {
        release: fs.text("proc/sys/kernel/osrelease"),
        cmdline: fs.text("proc/cmdline"),
        clocksource: fs.text(&format!("{cs}/current_clocksource")),
        available_clocksources: fs.text(&format!("{cs}/available_clocksource")),
        preempt_model,
        preempt_dynamic: or_unknown(
            fs.read("sys/kernel/debug/sched/preempt").and_then(|s| parse::parse_preempt_dynamic(&s)).as_deref(),
        ),
        version,
        vulnerabilities,
        transparent_hugepages: or_unknown(
            fs.read("sys/kernel/mm/transparent_hugepage/enabled").and_then(|s| parse::parse_thp(&s)).as_deref(),
        ),
        perf_event_paranoid: fs.read("proc/sys/kernel/perf_event_paranoid").and_then(|s| parse::parse_i32(&s)),
        unprivileged_userfaultfd: fs.read("proc/sys/vm/unprivileged_userfaultfd").and_then(|s| parse::parse_i32(&s)),
        ptrace_scope: fs.read("proc/sys/kernel/yama/ptrace_scope").and_then(|s| parse::parse_i32(&s)),
        mem_total_bytes: fs.read("proc/meminfo").and_then(|s| parse::parse_meminfo_total(&s)),
    }
}

fn read_frequency(fs: &Fs, ci: &CpuInfo) -> Frequency {
    let dir = "sys/devices/system/cpu/cpu0/cpufreq";
    let khz = |f: &str| fs.read(&format!("{dir}/{f}")).and_then(|s| parse::parse_u64(&s));
    Frequency {
        governor: fs.text(&format!("{dir}/scaling_governor")),
        driver: fs.text(&format!("{dir}/scaling_driver")),
        min_khz: khz("scaling_min_freq"),
        max_khz: khz("scaling_max_freq"),
        cur_khz: khz("scaling_cur_freq"),
        cpuinfo_mhz: ci.get("cpu MHz").and_then(|s| s.parse::<f64>().ok()).filter(|v| v.is_finite() && *v > 0.0),
    }
}

fn read_virtualization(fs: &Fs, id: &CpuidInfo, hypervisor_bit: Option<bool>) -> Virtualization {
    let hypervisor_vendor = or_unknown(id.hypervisor_vendor.as_deref());
    let sys_hypervisor_type = fs.text("sys/hypervisor/type");
    let dmi_sys_vendor = fs.text("sys/class/dmi/id/sys_vendor");
    let dmi_product_name = fs.text("sys/class/dmi/id/product_name");
    let virtualized = derive_virtualized(
        hypervisor_bit,
        &hypervisor_vendor,
        &sys_hypervisor_type,
        &dmi_sys_vendor,
        &dmi_product_name,
    );
    Virtualization { hypervisor_vendor, sys_hypervisor_type, dmi_sys_vendor, dmi_product_name, virtualized }
}

/// Combines the hypervisor evidence into one verdict: `Some(true)` on any
/// positive sign, `Some(false)` only when the CPUID bit is known clear.
pub(super) fn derive_virtualized(
    hypervisor_bit: Option<bool>,
    hypervisor_vendor: &str,
    sys_hypervisor_type: &str,
    dmi_vendor: &str,
    dmi_product: &str,
) -> Option<bool> {
    let known = |s: &str| s != UNKNOWN && s != "none" && !s.is_empty();
    fn dmi(s: &str) -> &str {
        if s == UNKNOWN { "" } else { s }
    }
    if hypervisor_bit == Some(true)
        || known(hypervisor_vendor)
        || known(sys_hypervisor_type)
        || parse::dmi_looks_virtual(dmi(dmi_vendor), dmi(dmi_product))
    {
        Some(true)
    } else if hypervisor_bit == Some(false) {
        Some(false)
    } else {
        None
    }
}
