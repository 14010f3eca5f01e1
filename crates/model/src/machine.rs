//! The machine record of a result file (`machine`, and `osprim env --format json`): what a
//! measurement ran on. Data only; `env` captures it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The text used for any string that could not be determined.
pub const UNKNOWN: &str = "unknown";

fn unknown() -> String {
    UNKNOWN.to_string()
}

/// Everything recorded about the machine. Embedded in every result file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Machine {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// Architecture this binary was built for (`x86_64`, `aarch64`, …).
    pub arch: String,
    /// Processor identity, topology, caches and flags.
    pub cpu: Cpu,
    /// Kernel build and run-time settings.
    pub kernel: Kernel,
    /// CPU frequency policy of cpu0.
    pub frequency: Frequency,
    /// Hypervisor evidence.
    pub virtualization: Virtualization,
    /// Container runtime: `"none"`, `"docker"`, `"podman"`, `"kubernetes"`,
    /// `"containerd"`, `"lxc"`, another name from `/run/systemd/container`,
    /// or `"unknown"`.
    pub container: String,
    /// The process's cgroup and its limits.
    pub cgroup: Cgroup,
    /// CPU affinity and system load.
    pub scheduling: Scheduling,
}

/// Processor identity, topology, caches and flags.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Cpu {
    /// Vendor (`"AuthenticAMD"`, `"GenuineIntel"`, `"ARM"`, …).
    pub vendor: String,
    /// Model name / brand string.
    pub model_name: String,
    /// Family (x86 display family; arm64 `CPU architecture`).
    pub family: Option<u32>,
    /// Model (x86 display model; arm64 `CPU part`).
    pub model: Option<u32>,
    /// Stepping (x86 stepping; arm64 `CPU revision`).
    pub stepping: Option<u32>,
    /// Microcode revision as printed in `/proc/cpuinfo`.
    pub microcode: String,
    /// Number of online logical CPUs.
    pub logical_cpus: Option<usize>,
    /// Distinct (package, core) pairs among online CPUs.
    pub physical_cores: Option<usize>,
    /// Whether simultaneous multithreading is active.
    pub smt_active: Option<bool>,
    /// Caches seen by cpu0, in sysfs index order.
    pub caches: Vec<Cache>,
    /// Timing- and isolation-related CPU flags.
    pub flags: CpuFlags,
}

/// One cache level as seen by cpu0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Cache {
    /// Cache level (1, 2, 3, …).
    pub level: Option<u32>,
    /// `"Data"`, `"Instruction"` or `"Unified"`.
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// Number of logical CPUs sharing this cache.
    pub shared_with_cpus: Option<usize>,
}

/// CPU flags that matter for timing; `None` when it cannot be told.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct CpuFlags {
    /// TSC ticks at a constant rate (`constant_tsc`).
    pub constant_tsc: Option<bool>,
    /// TSC keeps ticking in deep C-states (`nonstop_tsc`).
    pub nonstop_tsc: Option<bool>,
    /// TSC frequency known without calibration (`tsc_known_freq`).
    pub tsc_known_freq: Option<bool>,
    /// RDTSCP instruction available.
    pub rdtscp: Option<bool>,
    /// RDPID instruction available.
    pub rdpid: Option<bool>,
    /// Memory protection keys supported.
    pub pku: Option<bool>,
    /// Memory protection keys enabled by the OS.
    pub ospke: Option<bool>,
    /// Invariant TSC (CPUID 0x80000007 EDX bit 8).
    pub invariant_tsc: Option<bool>,
    /// Hypervisor-present bit (CPUID 1 ECX bit 31).
    pub hypervisor: Option<bool>,
}

/// Kernel build and run-time settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Kernel {
    /// Release (`/proc/sys/kernel/osrelease`).
    pub release: String,
    /// Build version string (`/proc/sys/kernel/version`).
    pub version: String,
    /// Boot command line (`/proc/cmdline`).
    pub cmdline: String,
    /// Current clocksource.
    pub clocksource: String,
    /// Available clocksources, space separated.
    pub available_clocksources: String,
    /// `"PREEMPT_RT"`, `"PREEMPT_DYNAMIC"`, `"PREEMPT"` or `"none"` from the
    /// version string.
    pub preempt_model: String,
    /// Active dynamic preemption mode from debugfs (`"full"`, `"voluntary"`,
    /// …), usually `"unknown"` without root.
    pub preempt_dynamic: String,
    /// CPU vulnerability name → kernel status text.
    pub vulnerabilities: BTreeMap<String, String>,
    /// Transparent huge pages mode (`"always"`, `"madvise"`, `"never"`).
    pub transparent_hugepages: String,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: Option<i32>,
    /// `vm.unprivileged_userfaultfd`.
    pub unprivileged_userfaultfd: Option<i32>,
    /// `kernel.yama.ptrace_scope`, when Yama is present.
    pub ptrace_scope: Option<i32>,
    /// Total memory (`MemTotal`) in bytes.
    pub mem_total_bytes: Option<u64>,
}

/// CPU frequency policy of cpu0.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Frequency {
    /// cpufreq scaling governor.
    pub governor: String,
    /// cpufreq scaling driver.
    pub driver: String,
    /// `scaling_min_freq` in kHz.
    pub min_khz: Option<u64>,
    /// `scaling_max_freq` in kHz.
    pub max_khz: Option<u64>,
    /// `scaling_cur_freq` in kHz.
    pub cur_khz: Option<u64>,
    /// `cpu MHz` of the first CPU in `/proc/cpuinfo`.
    pub cpuinfo_mhz: Option<f64>,
}

/// Hypervisor evidence.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Virtualization {
    /// Hypervisor named by CPUID leaf 0x40000000 (`"KVM"`, …), `"none"` if
    /// the hypervisor bit is clear, `"unknown"` off x86.
    pub hypervisor_vendor: String,
    /// `/sys/hypervisor/type` (Xen and some others).
    pub sys_hypervisor_type: String,
    /// DMI `sys_vendor`.
    pub dmi_sys_vendor: String,
    /// DMI `product_name`.
    pub dmi_product_name: String,
    /// Derived: `Some(true)` on any evidence of a hypervisor, `Some(false)`
    /// when the CPUID hypervisor bit is clear and nothing else says so.
    pub virtualized: Option<bool>,
}

/// The process's cgroup and its limits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Cgroup {
    /// `"v2"`, `"v1"`, `"hybrid"` or `"unknown"`.
    pub version: String,
    /// Path in the v2 unified hierarchy (`0::<path>`).
    pub path: String,
    /// v1 hierarchies: controller list (`"cpu,cpuacct"`) → path.
    pub v1_paths: BTreeMap<String, String>,
    /// CPU limit in v2 `cpu.max` form (`"max 100000"`, `"200000 100000"`);
    /// taken from v1 `cpu.cfs_*` when there is no v2 file.
    pub cpu_max: String,
    /// Memory limit in v2 `memory.max` form (`"max"` or bytes); taken from
    /// v1 `memory.limit_in_bytes` when there is no v2 file.
    pub memory_max: String,
}

/// CPU affinity and system load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Scheduling {
    /// CPUs this process may run on; empty if unknown.
    pub allowed_cpus: Vec<usize>,
    /// 1, 5 and 15 minute load averages at capture time.
    pub load_avg_start: Option<[f64; 3]>,
    /// Load averages after the run; filled by the caller with
    /// [`load_average`].
    pub load_avg_end: Option<[f64; 3]>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            hostname: unknown(),
            arch: unknown(),
            cpu: Cpu::default(),
            kernel: Kernel::default(),
            frequency: Frequency::default(),
            virtualization: Virtualization::default(),
            container: unknown(),
            cgroup: Cgroup::default(),
            scheduling: Scheduling::default(),
        }
    }
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu {
            vendor: unknown(),
            model_name: unknown(),
            family: None,
            model: None,
            stepping: None,
            microcode: unknown(),
            logical_cpus: None,
            physical_cores: None,
            smt_active: None,
            caches: Vec::new(),
            flags: CpuFlags::default(),
        }
    }
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel {
            release: unknown(),
            version: unknown(),
            cmdline: unknown(),
            clocksource: unknown(),
            available_clocksources: unknown(),
            preempt_model: unknown(),
            preempt_dynamic: unknown(),
            vulnerabilities: BTreeMap::new(),
            transparent_hugepages: unknown(),
            perf_event_paranoid: None,
            unprivileged_userfaultfd: None,
            ptrace_scope: None,
            mem_total_bytes: None,
        }
    }
}

impl Default for Frequency {
    fn default() -> Self {
        Frequency {
            governor: unknown(),
            driver: unknown(),
            min_khz: None,
            max_khz: None,
            cur_khz: None,
            cpuinfo_mhz: None,
        }
    }
}

impl Default for Virtualization {
    fn default() -> Self {
        Virtualization {
            hypervisor_vendor: unknown(),
            sys_hypervisor_type: unknown(),
            dmi_sys_vendor: unknown(),
            dmi_product_name: unknown(),
            virtualized: None,
        }
    }
}

impl Default for Cgroup {
    fn default() -> Self {
        Cgroup {
            version: unknown(),
            path: unknown(),
            v1_paths: BTreeMap::new(),
            cpu_max: unknown(),
            memory_max: unknown(),
        }
    }
}
