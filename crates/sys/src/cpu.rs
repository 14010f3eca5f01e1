//! Which CPU a thread runs on and may run on.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// CPUs this thread may run on (its affinity mask; a container's cpuset shows here).
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => (0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect(),
        Err(_) => Vec::new(),
    }
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> nix::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// Sets the calling thread's affinity to a set of CPUs.
pub fn set_affinity(cpus: &[usize]) -> nix::Result<()> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    sched_setaffinity(Pid::from_raw(0), &set)
}

/// The CPU the caller runs on now (`sched_getcpu`, through the vDSO or `rdpid`/`rdtscp`).
#[inline(always)]
pub fn current_cpu() -> Option<usize> {
    nix::sched::sched_getcpu().ok()
}
