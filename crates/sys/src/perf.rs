//! Hardware performance counters of the calling thread through `perf_event_open(2)`: one
//! group of up to [`EVENTS`] counters (cycles, retired instructions, last-level-cache read
//! misses, dTLB read misses, branch misses), user and kernel counted (the hypervisor
//! excluded), read together with the group's `time_enabled`/`time_running` so that a reader
//! can tell when the kernel multiplexed the group (ran it for part of the time only) and scale.
//!
//! The group follows the thread that opened it (`pid = 0, cpu = -1`) on whatever CPU it runs,
//! and only that thread: a peer thread or process is not counted. It is enabled once, when
//! opened, and read with `read(2)`, so a count between two reads includes the end of the first
//! read and the start of the second (a reader calibrates that as an overhead, as the timer's).
//!
//! An event the PMU does not have (or that a VM without a virtual PMU does not expose) fails
//! alone: the group keeps the others, and [`Group::missing`] says why each one is missing.
//! When none opens, [`Group::open`] fails with the reason, [`diagnose`]d from the error, the
//! event-source devices in sysfs and `perf_event_paranoid`.
//!
//! # Safety
//! `perf_event_open` reads a `perf_event_attr` this module owns, for the duration of the call;
//! `read`/`ioctl`/`close` get descriptors this module opened and owns, and a buffer of the size
//! passed.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The events osprim counts, in group order.
pub const EVENTS: usize = 5;

/// One hardware event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// CPU cycles (core clock, not the TSC's reference cycles).
    Cycles,
    /// Retired instructions.
    Instructions,
    /// Last-level-cache read misses (the generic `LL` cache event, read, miss).
    LlcMisses,
    /// Data-TLB read misses (the generic `dTLB` cache event, read, miss).
    DtlbMisses,
    /// Mispredicted branches.
    BranchMisses,
}

impl Event {
    /// Every event, in group order.
    pub const ALL: [Event; EVENTS] =
        [Event::Cycles, Event::Instructions, Event::LlcMisses, Event::DtlbMisses, Event::BranchMisses];

    /// The name osprim writes (`cycles`, `instructions`, `llc_misses`, `dtlb_misses`,
    /// `branch_misses`).
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::LlcMisses => "llc_misses",
            Event::DtlbMisses => "dtlb_misses",
            Event::BranchMisses => "branch_misses",
        }
    }

    /// `(type, config)` of `perf_event_attr`.
    fn type_config(self) -> (u32, u64) {
        // include/uapi/linux/perf_event.h
        const HARDWARE: u32 = 0;
        const HW_CACHE: u32 = 3;
        const CPU_CYCLES: u64 = 0;
        const INSTRUCTIONS: u64 = 1;
        const BRANCH_MISSES: u64 = 5;
        const CACHE_LL: u64 = 2;
        const CACHE_DTLB: u64 = 3;
        const OP_READ: u64 = 0;
        const RESULT_MISS: u64 = 1;
        let cache = |id: u64| id | (OP_READ << 8) | (RESULT_MISS << 16);
        match self {
            Event::Cycles => (HARDWARE, CPU_CYCLES),
            Event::Instructions => (HARDWARE, INSTRUCTIONS),
            Event::LlcMisses => (HW_CACHE, cache(CACHE_LL)),
            Event::DtlbMisses => (HW_CACHE, cache(CACHE_DTLB)),
            Event::BranchMisses => (HARDWARE, BRANCH_MISSES),
        }
    }
}

/// `struct perf_event_attr` up to `config2` (`PERF_ATTR_SIZE_VER1`, 72 bytes): every kernel
/// since 2.6.39 reads it, and the fields after it stay 0.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bit field: `disabled` bit 0, `exclude_hv` bit 6.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
}

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const FORMAT_GROUP: u64 = 1 << 3;
const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `_IO('$', 0)`, `_IO('$', 3)`.
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_RESET: libc::c_ulong = 0x2403;
const IOC_FLAG_GROUP: libc::c_ulong = 1;

/// One `perf_event_open` for the calling thread: `Err(errno)` when refused.
fn open(event: Event, leader: Option<&OwnedFd>) -> Result<OwnedFd, i32> {
    let (kind, config) = event.type_config();
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        read_format: FORMAT_GROUP | FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
        flags: FLAG_EXCLUDE_HV | if leader.is_none() { FLAG_DISABLED } else { 0 },
        ..Attr::default()
    };
    let group_fd = leader.map_or(-1, |l| l.as_raw_fd());
    // SAFETY: `attr` is a valid perf_event_attr of the size it states, alive during the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            group_fd,
            FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    // SAFETY: a descriptor just returned by the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// One read of the group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Each event's count since the group was enabled, by [`Event::ALL`]'s order; `None` for an
    /// event not in the group.
    pub counts: [Option<u64>; EVENTS],
    /// Nanoseconds the group has been enabled.
    pub time_enabled: u64,
    /// Nanoseconds it has actually counted (less than enabled when multiplexed).
    pub time_running: u64,
}

/// An open, enabled group of counters on the calling thread.
pub struct Group {
    leader: OwnedFd,
    _members: Vec<OwnedFd>,
    /// Group position → event index in [`Event::ALL`].
    order: Vec<usize>,
    missing: Vec<(Event, String)>,
}

impl Group {
    /// Opens every event it can on the calling thread and enables the group; an event that
    /// fails is listed in [`Group::missing`]. Fails, with the [`diagnose`]d reason, when none
    /// opens.
    pub fn open() -> Result<Group, String> {
        let mut leader: Option<OwnedFd> = None;
        let mut members = Vec::new();
        let mut order = Vec::new();
        let mut missing = Vec::new();
        let mut first_errno = None;
        for (i, &e) in Event::ALL.iter().enumerate() {
            match open(e, leader.as_ref()) {
                Ok(fd) => {
                    order.push(i);
                    if leader.is_none() {
                        leader = Some(fd);
                    } else {
                        members.push(fd);
                    }
                }
                Err(errno) => {
                    first_errno.get_or_insert(errno);
                    missing.push((e, errno_text(errno)));
                }
            }
        }
        let Some(leader) = leader else {
            return Err(diagnose(first_errno.unwrap_or(0), &event_sources(), paranoid()));
        };
        // SAFETY: ioctls on the group leader this function opened.
        let ok = unsafe {
            libc::ioctl(leader.as_raw_fd(), IOC_RESET as _, IOC_FLAG_GROUP) >= 0
                && libc::ioctl(leader.as_raw_fd(), IOC_ENABLE as _, IOC_FLAG_GROUP) >= 0
        };
        if !ok {
            return Err(format!("perf_event_open: cannot enable the group: {}", std::io::Error::last_os_error()));
        }
        Ok(Group { leader, _members: members, order, missing })
    }

    /// The events not counted, with why.
    pub fn missing(&self) -> &[(Event, String)] {
        &self.missing
    }

    /// Reads every counter of the group at once (one `read(2)`).
    pub fn read(&self) -> std::io::Result<Reading> {
        let mut buf = [0u64; 3 + EVENTS];
        let bytes = (3 + self.order.len()) * 8;
        // SAFETY: the buffer holds at least `bytes` bytes; the descriptor is the group leader.
        let got = unsafe { libc::read(self.leader.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if got as usize != bytes || buf[0] as usize != self.order.len() {
            return Err(std::io::Error::other(format!("short group read: {got} bytes, {} counters", buf[0])));
        }
        let mut r = Reading { time_enabled: buf[1], time_running: buf[2], ..Reading::default() };
        for (pos, &i) in self.order.iter().enumerate() {
            r.counts[i] = Some(buf[3 + pos]);
        }
        Ok(r)
    }
}

/// `strerror`-like text with the errno's name.
fn errno_text(errno: i32) -> String {
    format!("perf_event_open: {}", std::io::Error::from_raw_os_error(errno))
}

/// The event-source devices (PMUs) the kernel lists in `/sys/bus/event_source/devices`, sorted.
pub fn event_sources() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// Event sources that are not a hardware PMU: software events, tracepoints, probes, the
/// breakpoint and MSR pseudo-PMUs, power/energy meters.
const NOT_HARDWARE: [&str; 8] =
    ["breakpoint", "kprobe", "msr", "power", "software", "tracepoint", "uprobe", "cstate_core"];

/// Why no counter opened: from the error of the first `perf_event_open`, the event sources
/// listed and `perf_event_paranoid`.
pub fn diagnose(errno: i32, sources: &[String], paranoid: Option<i32>) -> String {
    let hardware: Vec<&String> = sources.iter().filter(|s| !NOT_HARDWARE.contains(&s.as_str())).collect();
    if errno == libc::EACCES || errno == libc::EPERM {
        let level = paranoid.map_or("unknown".to_string(), |p| p.to_string());
        return format!(
            "perf_event_paranoid = {level} forbids counting the kernel for an unprivileged process \
             (osprim counts user and kernel): allow it with `sysctl kernel.perf_event_paranoid=1` \
             (or lower), or give osprim CAP_PERFMON (`setcap cap_perfmon+ep osprim`)"
        );
    }
    if hardware.is_empty() {
        return format!(
            "no PMU exposed to this machine (a VM without a virtual PMU?): only software/tracepoint \
             PMUs in /sys/bus/event_source/devices ({}); perf_event_open: {}",
            sources.join(" "),
            std::io::Error::from_raw_os_error(errno)
        );
    }
    format!(
        "no hardware counter opened ({}), though /sys/bus/event_source/devices lists {}",
        std::io::Error::from_raw_os_error(errno),
        hardware.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_is_the_kernels_first_extended_size() {
        assert_eq!(std::mem::size_of::<Attr>(), 72);
    }

    #[test]
    fn a_refusal_names_the_paranoid_level_and_how_to_allow_it() {
        let s = diagnose(libc::EACCES, &["cpu".into(), "software".into()], Some(3));
        assert!(s.contains("perf_event_paranoid = 3"), "{s}");
        assert!(s.contains("sysctl kernel.perf_event_paranoid=") && s.contains("CAP_PERFMON"), "{s}");
    }

    #[test]
    fn no_hardware_pmu_lists_what_there_is() {
        let here: Vec<String> =
            ["breakpoint", "msr", "software", "tracepoint", "uprobe"].iter().map(|s| s.to_string()).collect();
        let s = diagnose(libc::ENOENT, &here, Some(2));
        assert!(s.starts_with("no PMU exposed"), "{s}");
        assert!(s.contains("breakpoint msr software tracepoint uprobe"), "{s}");
        let s = diagnose(libc::ENOENT, &["cpu".into(), "software".into()], Some(2));
        assert!(s.contains("lists cpu"), "{s}");
    }

    /// Opens the group where the machine has a PMU; says why not where it has none.
    #[test]
    fn the_group_counts_where_a_pmu_exists() {
        match Group::open() {
            Err(why) => eprintln!("skipped: {why}"),
            Ok(g) => {
                let a = g.read().unwrap();
                let mut x = 0u64;
                for i in 0..100_000u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                let b = g.read().unwrap();
                assert!(b.time_enabled >= a.time_enabled);
                if let (Some(i0), Some(i1)) = (a.counts[1], b.counts[1]) {
                    assert!(i1 - i0 >= 100_000, "{} instructions for 100,000 additions", i1 - i0);
                }
            }
        }
    }
}
