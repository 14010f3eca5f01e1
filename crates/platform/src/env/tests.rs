//! Tests for the machine capture: every parser on realistic samples, a fake
//! `/proc`+`/sys` tree, an empty tree, the real machine, and serde round-trips.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::cgroup::{ContainerSignals, detect_container};
use super::cpuid::signature_text;
use super::display::{format_bytes, format_khz};
use super::parse::*;
use super::read::derive_virtualized;
use super::*;

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("osprim-env-test-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(p, text).expect("write");
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const CPUINFO_X86: &str = "processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x1000065
cpu MHz\t\t: 2596.150
flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq hypervisor rdpid
bugs\t\t: spectre_v1

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
microcode\t: 0x1000065
cpu MHz\t\t: 2600.000
flags\t\t: fpu tsc
";

const CPUINFO_ARM: &str = "processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
CPU implementer\t: 0x41
";

#[test]
fn cpu_list_ranges() {
    assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
    assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
    assert_eq!(parse_cpu_list("5"), Some(vec![5]));
    assert_eq!(parse_cpu_list("8-9,0,2-3"), Some(vec![0, 2, 3, 8, 9]));
    assert_eq!(parse_cpu_list("1,1,0-1"), Some(vec![0, 1]));
    assert_eq!(parse_cpu_list(""), Some(vec![]));
    assert_eq!(parse_cpu_list("  \n"), Some(vec![]));
    assert_eq!(parse_cpu_list("3-1"), None);
    assert_eq!(parse_cpu_list("a-b"), None);
    assert_eq!(parse_cpu_list("0-"), None);
    assert_eq!(parse_cpu_list("0-4000000000"), None);
    assert_eq!(format_cpu_list(&[6, 0, 1, 2, 3, 9]), "0-3,6,9");
    assert_eq!(format_cpu_list(&[]), "");
    for s in ["0-3,6", "0", "0-1,4-7,12"] {
        assert_eq!(format_cpu_list(&parse_cpu_list(s).unwrap()), s);
    }
}

#[test]
fn status_and_meminfo() {
    let status = "Name:\tcat\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n";
    assert_eq!(parse_status_cpus_allowed(status), Some(vec![0, 1]));
    assert_eq!(parse_status_cpus_allowed("Name:\tcat\n"), None);
    let meminfo = "MemTotal:       24684096 kB\nMemFree:        1 kB\n";
    assert_eq!(parse_meminfo_total(meminfo), Some(24_684_096 * 1024));
    assert_eq!(parse_meminfo_total("MemFree: 1 kB\n"), None);
    assert_eq!(parse_meminfo_total("MemTotal: lots kB\n"), None);
}

#[test]
fn loadavg() {
    assert_eq!(parse_loadavg("0.12 0.04 0.01 1/81 2438\n"), Some([0.12, 0.04, 0.01]));
    assert_eq!(parse_loadavg("12.50 7.00 3.25 9/1000 1"), Some([12.5, 7.0, 3.25]));
    assert_eq!(parse_loadavg("0.12 0.04"), None);
    assert_eq!(parse_loadavg("x y z"), None);
    assert_eq!(parse_loadavg(""), None);
}

#[test]
fn selectors() {
    assert_eq!(parse_thp("always [madvise] never"), Some("madvise".into()));
    assert_eq!(parse_thp("[always] madvise never\n"), Some("always".into()));
    assert_eq!(parse_thp("always madvise never"), None);
    assert_eq!(parse_thp("[] x"), None);
    assert_eq!(parse_preempt_dynamic("none voluntary (full) lazy"), Some("full".into()));
    assert_eq!(parse_preempt_dynamic("(none) voluntary full"), Some("none".into()));
}

#[test]
fn preempt_model_from_version() {
    let m = |s| parse_preempt_model(s);
    assert_eq!(m("#1 SMP PREEMPT_DYNAMIC @0"), "PREEMPT_DYNAMIC");
    assert_eq!(m("#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"), "PREEMPT_DYNAMIC");
    assert_eq!(m("#1 SMP PREEMPT_RT Thu Jan 1 00:00:00 UTC 2024"), "PREEMPT_RT");
    assert_eq!(m("#1 SMP PREEMPT RT Fri Mar 3 2017"), "PREEMPT_RT");
    assert_eq!(m("#1 SMP PREEMPT Tue Oct 3 12:00:00 UTC 2023"), "PREEMPT");
    assert_eq!(m("#42-Ubuntu SMP Mon Apr 1 2024"), "none");
}

#[test]
fn cpuinfo_x86() {
    let ci = parse_cpuinfo(CPUINFO_X86);
    assert_eq!(ci.processors, 2);
    assert_eq!(ci.get("model name"), Some("AMD EPYC"));
    assert_eq!(ci.number("cpu family"), Some(25));
    assert_eq!(ci.number("model"), Some(17));
    assert_eq!(ci.number("stepping"), Some(1));
    assert_eq!(ci.get("microcode"), Some("0x1000065"));
    assert_eq!(ci.get("cpu MHz"), Some("2596.150"));
    assert_eq!(ci.has_flag("constant_tsc"), Some(true));
    assert_eq!(ci.has_flag("pku"), Some(false));
    assert_eq!(ci.has_flag("tsc"), Some(true));
    assert_eq!(parse_cpuinfo("").has_flag("tsc"), None);
}

#[test]
fn cpuinfo_arm() {
    let ci = parse_cpuinfo(CPUINFO_ARM);
    assert_eq!(ci.processors, 2);
    assert_eq!(ci.number("CPU implementer"), Some(0x41));
    assert_eq!(ci.number("CPU part"), Some(0xd0c));
    assert_eq!(ci.number("CPU architecture"), Some(8));
    assert_eq!(ci.has_flag("atomics"), Some(true));
    assert_eq!(arm_implementer_name(0x41), Some("ARM"));
    assert_eq!(arm_implementer_name(0x99), None);
}

#[test]
fn numbers_and_sizes() {
    assert_eq!(parse_int("0x1f"), Some(31));
    assert_eq!(parse_int(" 25 "), Some(25));
    assert_eq!(parse_int("zz"), None);
    assert_eq!(parse_cache_size("32K\n"), Some(32 << 10));
    assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
    assert_eq!(parse_cache_size("8M"), Some(8 << 20));
    assert_eq!(parse_cache_size("512"), Some(512));
    assert_eq!(parse_cache_size("K"), None);
    assert_eq!(parse_cache_size(""), None);
    assert_eq!(parse_bool01("1\n"), Some(true));
    assert_eq!(parse_bool01("notsupported"), None);
    assert_eq!(parse_i32("-1\n"), Some(-1));
    assert_eq!(parse_u64("3500000"), Some(3_500_000));
    assert_eq!(format_bytes(32 << 10), "32 KiB");
    assert_eq!(format_bytes(32 << 20), "32 MiB");
    assert_eq!(format_bytes(24_684_096 * 1024), "23.5 GiB");
    assert_eq!(format_bytes(100), "100 B");
    assert_eq!(format_khz(3_500_000), "3500 MHz");
    assert_eq!(format_khz(2_596_150), "2596.2 MHz");
}

#[test]
fn cgroup_lines() {
    let v1 = "9:name=systemd:/\n4:memory:/process_api/c620\n2:cpu,cpuacct:/docker/abc123\n";
    let e = parse_cgroup(v1);
    assert_eq!(e.len(), 3);
    assert_eq!(e[2].controllers, vec!["cpu", "cpuacct"]);
    assert_eq!(e[2].path, "/docker/abc123");
    assert_eq!(cgroup_version(&e), "v1");
    assert_eq!(container_from_cgroup(v1), Some("docker"));

    let v2 = "0::/system.slice/docker-0123abcd.scope\n";
    let e = parse_cgroup(v2);
    assert!(e[0].is_unified());
    assert_eq!(cgroup_version(&e), "v2");
    assert_eq!(container_from_cgroup(v2), Some("docker"));
    assert_eq!(cgroup_version(&parse_cgroup("1:cpu:/\n0::/\n")), "hybrid");
    assert_eq!(cgroup_version(&parse_cgroup("garbage\n")), "unknown");
    // A path containing ':' stays whole.
    assert_eq!(parse_cgroup("0::/a:b\n")[0].path, "/a:b");

    let k8s = "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-ab.scope\n";
    assert_eq!(container_from_cgroup(k8s), Some("kubernetes"));
    assert_eq!(container_from_cgroup("0::/machine.slice/libpod-1.scope"), Some("podman"));
    assert_eq!(container_from_cgroup("0::/lxc.payload.c1\n"), Some("lxc"));
    assert_eq!(container_from_cgroup("0::/system.slice/containerd.service"), Some("containerd"));
    assert_eq!(container_from_cgroup("0::/user.slice/user-1000.slice\n"), None);
}

#[test]
fn cgroup_limits() {
    assert_eq!(parse_cpu_max("max 100000\n"), Some(None));
    assert_eq!(parse_cpu_max("200000 100000"), Some(Some(2.0)));
    assert_eq!(parse_cpu_max("50000 0"), None);
    assert_eq!(parse_cpu_max(""), None);
    assert_eq!(parse_memory_max("max\n"), Some(None));
    assert_eq!(parse_memory_max("1073741824"), Some(Some(1 << 30)));
    assert_eq!(cpu_max_from_v1("-1", "100000"), Some("max 100000".into()));
    assert_eq!(cpu_max_from_v1("150000\n", "100000"), Some("150000 100000".into()));
    assert_eq!(memory_max_from_v1("9223372036854771712"), Some("max".into()));
    assert_eq!(memory_max_from_v1("536870912"), Some("536870912".into()));
}

#[test]
fn container_detection() {
    let none = ContainerSignals { cgroups: vec!["0::/user.slice\n"], ..Default::default() };
    assert_eq!(detect_container(&none), "none");
    assert_eq!(detect_container(&ContainerSignals::default()), "unknown");
    let docker = ContainerSignals { dockerenv: true, ..Default::default() };
    assert_eq!(detect_container(&docker), "docker");
    let podman = ContainerSignals { containerenv: true, dockerenv: true, ..Default::default() };
    assert_eq!(detect_container(&podman), "podman");
    let nspawn =
        ContainerSignals { systemd_container: Some("systemd-nspawn\n"), cgroups: vec!["0::/\n"], ..Default::default() };
    assert_eq!(detect_container(&nspawn), "systemd-nspawn");
    let k8s =
        ContainerSignals { dockerenv: true, cgroups: vec!["0::/kubepods/besteffort/pod1/abc\n"], ..Default::default() };
    assert_eq!(detect_container(&k8s), "kubernetes");
}

#[test]
fn virtualization_verdict() {
    assert_eq!(derive_virtualized(Some(true), "KVM", "unknown", "unknown", "unknown"), Some(true));
    assert_eq!(derive_virtualized(Some(false), "none", "unknown", "Dell Inc.", "R640"), Some(false));
    assert_eq!(derive_virtualized(None, "unknown", "xen", "unknown", "unknown"), Some(true));
    assert_eq!(derive_virtualized(None, "unknown", "unknown", "QEMU", "Standard PC"), Some(true));
    assert_eq!(derive_virtualized(None, "unknown", "unknown", "unknown", "unknown"), None);
    assert!(dmi_looks_virtual("Microsoft Corporation", "Virtual Machine"));
    assert!(!dmi_looks_virtual("LENOVO", "ThinkPad"));
    assert_eq!(signature_text(0x54474354, 0x43544743, 0x47435447), "TCGTCGTCGTCG");
    assert_eq!(signature_text(0, 0, 0), "unknown");
}

#[test]
fn empty_root_is_all_unknown() {
    let dir = TempDir::new("empty");
    let m = capture_from_root(dir.path());
    let expected = Machine { arch: std::env::consts::ARCH.to_string(), ..Machine::default() };
    assert_eq!(m, expected);
    assert!(display::fields(&m).iter().any(|(k, v)| k == "cpu.logical" && v == "unknown"));
    // Nonexistent root too.
    let m = capture_from_root(&dir.path().join("does/not/exist"));
    assert_eq!(m, expected);
}

#[test]
fn fake_root() {
    let d = TempDir::new("fake");
    d.write("proc/cpuinfo", CPUINFO_X86);
    d.write("proc/sys/kernel/hostname", "box\n");
    d.write("proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    d.write("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1\n");
    d.write("proc/cmdline", "quiet isolcpus=3\n");
    d.write("proc/loadavg", "0.50 0.25 0.10 2/300 999\n");
    d.write("proc/meminfo", "MemTotal:  16384 kB\n");
    d.write("proc/self/status", "Cpus_allowed_list:\t0-1,3\n");
    d.write("proc/self/cgroup", "0::/system.slice/docker-ab.scope\n");
    d.write("proc/sys/kernel/perf_event_paranoid", "2\n");
    d.write("sys/fs/cgroup/system.slice/docker-ab.scope/cpu.max", "150000 100000\n");
    d.write("sys/fs/cgroup/system.slice/docker-ab.scope/memory.max", "max\n");
    let cpu = "sys/devices/system/cpu";
    d.write(&format!("{cpu}/online"), "0-3\n");
    d.write(&format!("{cpu}/smt/active"), "1\n");
    for (n, core) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
        d.write(&format!("{cpu}/cpu{n}/topology/physical_package_id"), "0\n");
        d.write(&format!("{cpu}/cpu{n}/topology/core_id"), &format!("{core}\n"));
    }
    for (i, (lvl, kind, size, shared)) in [
        (1, "Data", "32K", "0,1"),
        (1, "Instruction", "32K", "0-1"),
        (2, "Unified", "512K", "0-1"),
        (3, "Unified", "32768K", "0-3"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = format!("{cpu}/cpu0/cache/index{i}");
        d.write(&format!("{dir}/level"), &format!("{lvl}\n"));
        d.write(&format!("{dir}/type"), &format!("{kind}\n"));
        d.write(&format!("{dir}/size"), &format!("{size}\n"));
        d.write(&format!("{dir}/shared_cpu_list"), &format!("{shared}\n"));
    }
    d.write(&format!("{cpu}/vulnerabilities/spectre_v2"), "Mitigation: Retpolines\n");
    d.write(&format!("{cpu}/vulnerabilities/meltdown"), "Not affected\n");
    d.write(&format!("{cpu}/cpu0/cpufreq/scaling_governor"), "performance\n");
    d.write(&format!("{cpu}/cpu0/cpufreq/scaling_max_freq"), "3500000\n");
    d.write("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    d.write("sys/class/dmi/id/sys_vendor", "QEMU\n");

    let m = capture_from_root(d.path());
    assert_eq!(m.hostname, "box");
    assert_eq!(m.cpu.vendor, "AuthenticAMD");
    assert_eq!((m.cpu.family, m.cpu.model, m.cpu.stepping), (Some(25), Some(17), Some(1)));
    assert_eq!(m.cpu.logical_cpus, Some(4));
    assert_eq!(m.cpu.physical_cores, Some(2));
    assert_eq!(m.cpu.smt_active, Some(true));
    assert_eq!(m.cpu.caches.len(), 4);
    assert_eq!(m.cpu.caches[3].size_bytes, Some(32 << 20));
    assert_eq!(m.cpu.caches[3].shared_with_cpus, Some(4));
    assert_eq!(m.cpu.flags.constant_tsc, Some(true));
    assert_eq!(m.cpu.flags.pku, Some(false));
    assert_eq!(m.cpu.flags.hypervisor, Some(true));
    assert_eq!(m.cpu.flags.invariant_tsc, None);
    assert_eq!(m.kernel.preempt_model, "PREEMPT_DYNAMIC");
    assert_eq!(m.kernel.transparent_hugepages, "madvise");
    assert_eq!(m.kernel.vulnerabilities.len(), 2);
    assert_eq!(m.kernel.mem_total_bytes, Some(16 << 20));
    assert_eq!(m.kernel.perf_event_paranoid, Some(2));
    assert_eq!(m.kernel.ptrace_scope, None);
    assert_eq!(m.frequency.governor, "performance");
    assert_eq!(m.frequency.max_khz, Some(3_500_000));
    assert_eq!(m.frequency.cur_khz, None);
    assert_eq!(m.frequency.cpuinfo_mhz, Some(2596.15));
    assert_eq!(m.virtualization.virtualized, Some(true));
    assert_eq!(m.container, "docker");
    assert_eq!(m.cgroup.version, "v2");
    assert_eq!(m.cgroup.cpu_max, "150000 100000");
    assert_eq!(m.cgroup.memory_max, "max");
    assert_eq!(m.scheduling.allowed_cpus, vec![0, 1, 3]);
    assert_eq!(m.scheduling.load_avg_start, Some([0.5, 0.25, 0.1]));

    let f = display::fields(&m);
    let get = |k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert_eq!(get("cpu"), Some("AMD EPYC (family 25 model 17 stepping 1)"));
    assert_eq!(
        get("caches"),
        Some(
            "L1d 32 KiB (shared by 2 cpus), L1i 32 KiB (shared by 2 cpus), L2 512 KiB (shared by 2 cpus), L3 32 MiB (shared by 4 cpus)"
        )
    );
    assert_eq!(get("vulnerability.spectre_v2"), Some("Mitigation: Retpolines"));
    assert_eq!(get("freq.max"), Some("3500 MHz"));
    assert_eq!(get("freq.min"), Some("unknown"));
    assert_eq!(get("cgroup.cpu_max"), Some("1.50 CPUs (150000 100000)"));
    assert_eq!(get("cgroup.memory_max"), Some("unlimited"));
    assert_eq!(get("sched.allowed_cpus"), Some("0-1,3 (3 cpus)"));
    assert_eq!(get("memory.total"), Some("16 MiB"));
}

#[test]
fn cgroup_v1_limits_from_fake_root() {
    let d = TempDir::new("v1");
    d.write("proc/self/cgroup", "4:memory:/job\n2:cpu,cpuacct:/job\n0::/\n");
    d.write("sys/fs/cgroup/memory/job/memory.limit_in_bytes", "1073741824\n");
    d.write("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
    d.write("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
    let m = capture_from_root(d.path());
    assert_eq!(m.cgroup.version, "hybrid");
    assert_eq!(m.cgroup.path, "/");
    assert_eq!(m.cgroup.v1_paths.get("memory").map(String::as_str), Some("/job"));
    assert_eq!(m.cgroup.memory_max, "1073741824");
    assert_eq!(m.cgroup.cpu_max, "max 100000");
    assert_eq!(m.container, "none");
}

#[test]
fn real_capture_smoke() {
    let m = capture();
    assert!(m.cpu.logical_cpus.unwrap_or(0) >= 1);
    assert!(!m.scheduling.allowed_cpus.is_empty());
    assert!(!allowed_cpus().is_empty());
    assert_ne!(m.kernel.release, "unknown");
    assert!(load_average().is_some());
    let fields = display::fields(&m);
    assert!(fields.iter().all(|(k, v)| !k.is_empty() && !v.is_empty()));
    if std::env::var_os("OSPRIM_PRINT_ENV").is_some() {
        for (k, v) in &fields {
            println!("{k:28} {v}");
        }
    }
}

#[test]
fn serde_round_trip() {
    let mut m = capture();
    m.scheduling.load_avg_end = Some([1.25, 0.5, 0.0]);
    let json = serde_json::to_string_pretty(&m).expect("serialize");
    let back: Machine = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, m);

    let empty = Machine::default();
    let back: Machine = serde_json::from_str(&serde_json::to_string(&empty).unwrap()).unwrap();
    assert_eq!(back, empty);

    // Older files with missing fields still load.
    let partial: Machine = serde_json::from_str(r#"{"hostname":"h","cpu":{"vendor":"X"}}"#).unwrap();
    assert_eq!(partial.hostname, "h");
    assert_eq!(partial.cpu.vendor, "X");
    assert_eq!(partial.kernel.release, "unknown");
}
