//! Human-readable rendering of a [`Machine`] as ordered `(key, value)` pairs
//! for `osprim env`.

use super::parse::{format_cpu_list, parse_cpu_max, parse_memory_max};
use super::{Cache, Machine, UNKNOWN};

/// Renders an optional value, or `"unknown"`.
fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| UNKNOWN.to_string(), f)
}

fn yes_no(v: Option<bool>) -> String {
    opt(v, |b| if b { "yes" } else { "no" }.to_string())
}

/// Formats a byte count with binary units: exact values as integers
/// (`"32 KiB"`), others with one decimal (`"23.5 GiB"`).
pub(super) fn format_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0;
    let mut div = 1u64;
    while unit + 1 < UNITS.len() && n / div >= 1024 {
        div *= 1024;
        unit += 1;
    }
    let name = UNITS.get(unit).copied().unwrap_or("B");
    if n.is_multiple_of(div) { format!("{} {name}", n / div) } else { format!("{:.1} {name}", n as f64 / div as f64) }
}

/// Formats a frequency given in kHz as MHz.
pub(super) fn format_khz(khz: u64) -> String {
    if khz.is_multiple_of(1000) { format!("{} MHz", khz / 1000) } else { format!("{:.1} MHz", khz as f64 / 1000.0) }
}

/// Short cache label: `"L1d"`, `"L1i"`, `"L2"`.
fn cache_label(c: &Cache) -> String {
    let level = opt(c.level, |l| l.to_string());
    let suffix = match c.kind.as_str() {
        "Data" => "d",
        "Instruction" => "i",
        _ => "",
    };
    format!("L{level}{suffix}")
}

fn format_caches(caches: &[Cache]) -> String {
    if caches.is_empty() {
        return UNKNOWN.to_string();
    }
    caches
        .iter()
        .map(|c| {
            let mut s = format!("{} {}", cache_label(c), opt(c.size_bytes, format_bytes));
            if let Some(n) = c.shared_with_cpus.filter(|n| *n > 1) {
                s.push_str(&format!(" (shared by {n} cpus)"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn format_load(l: Option<[f64; 3]>) -> String {
    opt(l, |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"))
}

fn format_cpu_max(raw: &str) -> String {
    match parse_cpu_max(raw) {
        Some(None) => format!("unlimited ({raw})"),
        Some(Some(cpus)) => format!("{cpus:.2} CPUs ({raw})"),
        None => raw.to_string(),
    }
}

fn format_memory_max(raw: &str) -> String {
    match parse_memory_max(raw) {
        Some(None) => "unlimited".to_string(),
        Some(Some(n)) => format_bytes(n),
        None => raw.to_string(),
    }
}

/// Ordered, human-readable `(key, value)` pairs describing the machine;
/// anything unknown is shown as `"unknown"`.
pub fn fields(m: &Machine) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: String| out.push((k.to_string(), v));
    let c = &m.cpu;
    let k = &m.kernel;
    let f = &m.frequency;
    let v = &m.virtualization;
    let g = &m.cgroup;
    let s = &m.scheduling;

    add("hostname", m.hostname.clone());
    add("arch", m.arch.clone());
    let num = |n: Option<u32>| opt(n, |n| n.to_string());
    add(
        "cpu",
        format!("{} (family {} model {} stepping {})", c.model_name, num(c.family), num(c.model), num(c.stepping)),
    );
    add("cpu.vendor", c.vendor.clone());
    add("cpu.microcode", c.microcode.clone());
    add("cpu.logical", opt(c.logical_cpus, |n| format!("{n} online")));
    add("cpu.physical_cores", opt(c.physical_cores, |n| n.to_string()));
    add("cpu.smt_active", yes_no(c.smt_active));
    add("caches", format_caches(&c.caches));
    let fl = &c.flags;
    for (name, val) in [
        ("constant_tsc", fl.constant_tsc),
        ("nonstop_tsc", fl.nonstop_tsc),
        ("tsc_known_freq", fl.tsc_known_freq),
        ("invariant_tsc", fl.invariant_tsc),
        ("rdtscp", fl.rdtscp),
        ("rdpid", fl.rdpid),
        ("pku", fl.pku),
        ("ospke", fl.ospke),
        ("hypervisor", fl.hypervisor),
    ] {
        add(&format!("flag.{name}"), yes_no(val));
    }

    add("kernel.release", k.release.clone());
    add("kernel.version", k.version.clone());
    add("kernel.cmdline", k.cmdline.clone());
    add("kernel.preempt", k.preempt_model.clone());
    add("kernel.preempt_dynamic", k.preempt_dynamic.clone());
    add("kernel.clocksource", format!("{} (available: {})", k.clocksource, k.available_clocksources));
    add("kernel.thp", k.transparent_hugepages.clone());
    let int = |n: Option<i32>| opt(n, |n| n.to_string());
    add("kernel.perf_event_paranoid", int(k.perf_event_paranoid));
    add("vm.unprivileged_userfaultfd", int(k.unprivileged_userfaultfd));
    add("kernel.yama.ptrace_scope", int(k.ptrace_scope));
    add("memory.total", opt(k.mem_total_bytes, format_bytes));
    if k.vulnerabilities.is_empty() {
        add("vulnerabilities", UNKNOWN.to_string());
    }
    for (name, text) in &k.vulnerabilities {
        add(&format!("vulnerability.{name}"), text.clone());
    }

    add("freq.governor", f.governor.clone());
    add("freq.driver", f.driver.clone());
    add("freq.min", opt(f.min_khz, format_khz));
    add("freq.max", opt(f.max_khz, format_khz));
    add("freq.cur", opt(f.cur_khz, format_khz));
    add("freq.cpuinfo", opt(f.cpuinfo_mhz, |m| format!("{m:.3} MHz")));

    add("virt.hypervisor", v.hypervisor_vendor.clone());
    add("virt.sys_hypervisor_type", v.sys_hypervisor_type.clone());
    add("virt.dmi_sys_vendor", v.dmi_sys_vendor.clone());
    add("virt.dmi_product_name", v.dmi_product_name.clone());
    add("virtualized", yes_no(v.virtualized));

    add("container", m.container.clone());
    add("cgroup.version", g.version.clone());
    add("cgroup.path", g.path.clone());
    for (ctrl, path) in g.v1_paths.iter().filter(|(_, p)| p.as_str() != "/") {
        add(&format!("cgroup.v1.{ctrl}"), path.clone());
    }
    add("cgroup.cpu_max", format_cpu_max(&g.cpu_max));
    add("cgroup.memory_max", format_memory_max(&g.memory_max));

    add(
        "sched.allowed_cpus",
        if s.allowed_cpus.is_empty() {
            UNKNOWN.to_string()
        } else {
            format!("{} ({} cpus)", format_cpu_list(&s.allowed_cpus), s.allowed_cpus.len())
        },
    );
    add("load_avg.start", format_load(s.load_avg_start));
    add("load_avg.end", format_load(s.load_avg_end));
    out
}

/// The timer a run measures with ([`crate::timer::detect`]), as ordered `(key, value)` pairs
/// for `osprim env`: the clock, its frequency and where it came from, whether it is invariant,
/// its step, the cost of a read, and the overhead subtracted from each sample.
pub fn timer_fields(t: &model::TimerInfo) -> Vec<(String, String)> {
    use model::TimerKind;
    use model::unit::fmt_ns;
    let mhz = |hz: f64| format!("{:.1} MHz", hz / 1e6);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, v: String| out.push((k.to_string(), v));
    add(
        "timer",
        match t.kind {
            TimerKind::Tsc => "tsc (x86-64 time-stamp counter, rdtsc)",
            TimerKind::Cntvct => "cntvct (aarch64 virtual counter)",
            TimerKind::MonotonicRaw => "monotonic_raw (clock_gettime(CLOCK_MONOTONIC_RAW), ns)",
        }
        .to_string(),
    );
    add("timer.frequency", format!("{}: {}", mhz(t.freq_hz), t.freq_source));
    if let Some(hz) = t.calibrated_hz.filter(|hz| (hz - t.freq_hz).abs() > 1e-6 * t.freq_hz) {
        add("timer.calibrated", format!("{} against CLOCK_MONOTONIC_RAW", mhz(hz)));
    }
    if let Some(hz) = t.stated_hz {
        add("timer.stated", format!("{} (the hardware's own)", mhz(hz)));
    }
    let invariant = yes_no(t.invariant);
    add(
        "timer.invariant",
        if t.invariant_source.is_empty() { invariant } else { format!("{invariant} ({})", t.invariant_source) },
    );
    if let Some(why) = &t.fallback_reason {
        add("timer.fallback", why.clone());
    }
    add("timer.step", fmt_ns(t.resolution_ns));
    if let Some(ns) = t.read_cost_ns {
        add("timer.read_cost", fmt_ns(ns));
    }
    let mean = t.overhead_mean_ns.map(|m| format!(", mean {}", fmt_ns(m))).unwrap_or_default();
    add(
        "timer.overhead",
        format!("a start/stop pair: median {}{mean} (a run subtracts it from each sample)", fmt_ns(t.overhead_ns)),
    );
    out
}
