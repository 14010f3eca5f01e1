//! Container detection and the process's cgroup (path, version, CPU and
//! memory limits), read through a root-relative [`Fs`].

use std::collections::BTreeMap;

use super::parse::{self, CgroupEntry};
use super::read::{Fs, or_unknown};
use super::{Cgroup, UNKNOWN};

/// Evidence of a container, gathered from the filesystem.
#[derive(Debug, Default)]
pub(super) struct ContainerSignals<'a> {
    /// `/.dockerenv` exists.
    pub dockerenv: bool,
    /// `/run/.containerenv` exists (podman).
    pub containerenv: bool,
    /// Contents of `/run/systemd/container`.
    pub systemd_container: Option<&'a str>,
    /// Readable `/proc/1/cgroup` and `/proc/self/cgroup` texts.
    pub cgroups: Vec<&'a str>,
}

/// Names the container runtime, `"none"` when the cgroup files were readable
/// and show nothing, `"unknown"` when there was nothing to look at.
pub(super) fn detect_container(sig: &ContainerSignals<'_>) -> String {
    let from_cgroup: Vec<&str> = sig.cgroups.iter().filter_map(|t| parse::container_from_cgroup(t)).collect();
    let systemd = sig.systemd_container.map(str::trim).filter(|s| !s.is_empty());
    let name = if from_cgroup.contains(&"kubernetes") {
        Some("kubernetes")
    } else if sig.containerenv {
        Some("podman")
    } else if sig.dockerenv {
        Some("docker")
    } else {
        systemd.or_else(|| from_cgroup.first().copied())
    };
    match name {
        Some(n) => n.to_string(),
        None if sig.cgroups.is_empty() => UNKNOWN.to_string(),
        None => "none".to_string(),
    }
}

pub(super) fn read_container(fs: &Fs, self_cgroup: Option<&str>) -> String {
    let pid1 = fs.read("proc/1/cgroup");
    let systemd = fs.read("run/systemd/container");
    let sig = ContainerSignals {
        dockerenv: fs.exists(".dockerenv"),
        containerenv: fs.exists("run/.containerenv"),
        systemd_container: systemd.as_deref(),
        cgroups: [pid1.as_deref(), self_cgroup].into_iter().flatten().collect(),
    };
    detect_container(&sig)
}

pub(super) fn read_cgroup(fs: &Fs, self_cgroup: Option<&str>) -> Cgroup {
    let entries = self_cgroup.map(parse::parse_cgroup).unwrap_or_default();
    let unified = entries.iter().find(|e| e.is_unified()).map(|e| e.path.clone());
    let v1_paths: BTreeMap<String, String> =
        entries.iter().filter(|e| !e.is_unified()).map(|e| (e.controllers.join(","), e.path.clone())).collect();

    let v2_file = |file: &str| -> Option<String> {
        let p = unified.as_deref()?;
        ["sys/fs/cgroup", "sys/fs/cgroup/unified"].iter().find_map(|mnt| first_in_cgroup(fs, mnt, p, file))
    };
    let cpu_max = v2_file("cpu.max").or_else(|| {
        let (mnt, p) = v1_mount(&entries, "cpu")?;
        let quota = first_in_cgroup(fs, &mnt, &p, "cpu.cfs_quota_us")?;
        let period = first_in_cgroup(fs, &mnt, &p, "cpu.cfs_period_us")?;
        parse::cpu_max_from_v1(&quota, &period)
    });
    let memory_max = v2_file("memory.max").or_else(|| {
        let (mnt, p) = v1_mount(&entries, "memory")?;
        parse::memory_max_from_v1(&first_in_cgroup(fs, &mnt, &p, "memory.limit_in_bytes")?)
    });
    Cgroup {
        version: parse::cgroup_version(&entries).to_string(),
        path: or_unknown(unified.as_deref()),
        v1_paths,
        cpu_max: or_unknown(cpu_max.as_deref()),
        memory_max: or_unknown(memory_max.as_deref()),
    }
}

/// The v1 mount directory (`sys/fs/cgroup/cpu,cpuacct`) and path of the
/// hierarchy carrying `controller`.
fn v1_mount(entries: &[CgroupEntry], controller: &str) -> Option<(String, String)> {
    let e = entries.iter().find(|e| e.controllers.iter().any(|c| c == controller))?;
    Some((format!("sys/fs/cgroup/{}", e.controllers.join(",")), e.path.clone()))
}

/// Reads `file` of cgroup `path` under mount `mnt`. If that cgroup directory
/// is not visible (a container whose cgroup mount is its own subtree), falls
/// back to the mount's top level, which then is the process's own cgroup.
fn first_in_cgroup(fs: &Fs, mnt: &str, path: &str, file: &str) -> Option<String> {
    let path = path.trim_matches('/');
    if path.split('/').any(|c| c == "..") {
        return None;
    }
    let at = |p: &str| {
        let rel = if p.is_empty() { format!("{mnt}/{file}") } else { format!("{mnt}/{p}/{file}") };
        fs.read(&rel).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    };
    at(path).or_else(|| if path.is_empty() { None } else { at("") })
}
