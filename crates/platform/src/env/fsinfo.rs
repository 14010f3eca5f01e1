//! Which file system a path lives on (for the transaction and cold-fault rows): the kind (`statfs` `f_type`, and the type name from
//! `/proc/self/mountinfo`), the device, and whether it is tmpfs (whose `fdatasync` writes
//! nothing to a disk).

use nix::sys::statfs::statfs;
use std::path::Path;

/// The file system holding a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filesystem {
    /// The type name, e.g. `ext4`, `xfs`, `btrfs`, `tmpfs`; `unknown` when neither source
    /// could tell.
    pub kind: String,
    /// The mount's source (e.g. `/dev/vda`), if known.
    pub device: Option<String>,
    /// The mount point, if known.
    pub mount_point: Option<String>,
    /// `statfs` `f_type` magic, if `statfs` answered.
    pub magic: Option<u64>,
}

impl Filesystem {
    /// Whether it is memory-backed (tmpfs or ramfs): a sync there reaches no device.
    pub fn in_memory(&self) -> bool {
        matches!(self.kind.as_str(), "tmpfs" | "ramfs") || matches!(self.magic, Some(TMPFS_MAGIC | RAMFS_MAGIC))
    }
}

const TMPFS_MAGIC: u64 = 0x0102_1994;
const RAMFS_MAGIC: u64 = 0x8584_58f6;

/// Names of common `f_type` magics (`<linux/magic.h>`), for when mountinfo cannot be read.
fn magic_name(magic: u64) -> Option<&'static str> {
    Some(match magic {
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        TMPFS_MAGIC => "tmpfs",
        RAMFS_MAGIC => "ramfs",
        0x794C_7630 => "overlay",
        0x6969 => "nfs",
        0xF2F5_2010 => "f2fs",
        0x2FC1_2FC1 => "zfs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        _ => return None,
    })
}

/// The file system holding `path` (which must exist). Never fails: what cannot be learnt is
/// left out.
pub fn filesystem_of(path: &Path) -> Filesystem {
    let magic = statfs(path).ok().map(|s| s.filesystem_type().0 as u64);
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mount = std::fs::read_to_string("/proc/self/mountinfo").ok().and_then(|m| mount_of(&m, &canonical));
    let kind = match (&mount, magic.and_then(magic_name)) {
        (Some(m), _) => m.kind.clone(),
        (None, Some(name)) => name.to_string(),
        (None, None) => "unknown".to_string(),
    };
    Filesystem { kind, device: mount.as_ref().map(|m| m.source.clone()), mount_point: mount.map(|m| m.point), magic }
}

struct Mount {
    point: String,
    kind: String,
    source: String,
}

/// The mountinfo line whose mount point is the longest prefix of `path` (the last such line
/// wins, as later mounts cover earlier ones).
fn mount_of(mountinfo: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for line in mountinfo.lines() {
        // id parent major:minor root mount-point options [optional…] - type source super-options
        let Some((point, kind, source)) = parse_line(line) else { continue };
        if path.starts_with(&point) && best.as_ref().is_none_or(|b| point.len() >= b.point.len()) {
            best = Some(Mount { point, kind, source });
        }
    }
    best
}

/// (mount point, type, source) of one mountinfo line.
fn parse_line(line: &str) -> Option<(String, String, String)> {
    let (left, right) = line.split_once(" - ")?;
    let point = unescape(left.split(' ').nth(4)?);
    let mut r = right.split(' ');
    Some((point, r.next()?.to_string(), unescape(r.next()?)))
}

/// Undoes mountinfo's octal escapes (`\040` for a space, …).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |acc, c| acc.wrapping_mul(8).wrapping_add(c - b'0')));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /dev/shm rw,nosuid - tmpfs tmpfs rw
31 22 0:27 / /mnt/my\\040disk rw - xfs /dev/sdb1 rw
";

    #[test]
    fn unescape_decodes_octal_only() {
        assert_eq!(unescape("a\\040b\\011c"), "a b\tc");
        assert_eq!(unescape("\\x\\04"), "\\x\\04");
    }

    #[test]
    fn longest_mount_point_wins() {
        let m = mount_of(MOUNTINFO, Path::new("/dev/shm/x")).expect("found");
        assert_eq!((m.kind.as_str(), m.point.as_str()), ("tmpfs", "/dev/shm"));
        let m = mount_of(MOUNTINFO, Path::new("/work/x")).expect("found");
        assert_eq!((m.kind.as_str(), m.source.as_str()), ("ext4", "/dev/vda"));
        let m = mount_of(MOUNTINFO, Path::new("/mnt/my disk/f")).expect("found");
        assert_eq!(m.kind, "xfs");
    }

    #[test]
    fn this_machines_temp_dir_has_a_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = filesystem_of(dir.path());
        assert_ne!(fs.kind, "unknown");
        assert!(fs.magic.is_some());
    }

    #[test]
    fn tmpfs_is_in_memory() {
        let fs = Filesystem { kind: "tmpfs".into(), device: None, mount_point: None, magic: None };
        assert!(fs.in_memory());
    }
}
