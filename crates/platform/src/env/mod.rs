//! Description of the machine a measurement ran on: CPU, kernel, frequency
//! policy, virtualisation, container and scheduling context.
//!
//! [`capture`] never fails and never panics: whatever cannot be read is
//! `"unknown"` (strings), `None` (numbers and flags) or empty (lists and
//! maps). Parsing of each `/proc` and `/sys` format lives in [`parse`] as
//! pure functions; reading goes through a root directory so tests can run
//! against a fake tree ([`capture_from_root`]).

mod cgroup;
mod cpuid;
pub mod display;
pub mod fsinfo;
pub mod parse;
mod read;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use parse::parse_cpu_list;

pub use model::machine::{
    Cache, Cgroup, Cpu, CpuFlags, Frequency, Kernel, Machine, Scheduling, UNKNOWN, Virtualization,
};

/// Captures the description of this machine (reads `/`, and CPUID on x86).
pub fn capture() -> Machine {
    read::capture_with(Path::new("/"), cpuid::probe())
}

/// Captures from the files under `root` only, as if `root` were `/`, without
/// executing CPUID. For tests and for inspecting a copied `/proc`+`/sys` tree.
pub fn capture_from_root(root: &Path) -> Machine {
    read::capture_with(root, None)
}

/// Current 1, 5 and 15 minute load averages from `/proc/loadavg`.
pub fn load_average() -> Option<[f64; 3]> {
    read::Fs::new(Path::new("/")).load_average()
}

/// CPUs this process may run on (`Cpus_allowed_list` of `/proc/self/status`);
/// empty if unreadable.
pub fn allowed_cpus() -> Vec<usize> {
    read::Fs::new(Path::new("/")).allowed_cpus()
}
