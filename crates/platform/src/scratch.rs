//! The run's scratch directory (files benchmarks need: a cached file, a library to load, a
//! transaction log…): `$TMPDIR/osprim-<pid>-<random>`, removed when the run ends, also at a
//! first or second signal (`interrupt::create_removable`).
//!
//! Nothing Rust runs can remove it after SIGKILL or a crash, so every run first removes the
//! scratch directories that runs now dead left behind, and nothing else. A directory is removed
//! only when all of these hold:
//! - it is a directory (not a symbolic link, never followed) owned by this user, named
//!   `osprim-<pid>-<random>`;
//! - it holds osprim's marker [`MARKER`], a regular file (not a link) owned by this user, that
//!   names the same pid, this boot (`/proc/sys/kernel/random/boot_id`) and this process's PID
//!   namespace (`/proc/self/ns/pid`), with the start time of the process that made it
//!   (`/proc/<pid>/stat`, field 22) and a random token;
//! - that process is provably gone: no process has that pid here, or the one that has it
//!   started at another time (the pid was reused).
//!
//! A directory without a marker (a user's `osprim-2026-notes`), of another user, of another
//! boot or of another PID namespace (a run in a container sharing `/tmp`, whose pids mean
//! nothing here) is never touched. Nor is anything swept when this process's `/proc` is not
//! its own PID namespace's (the pids it shows would be another namespace's).
//!
//! The worker processes that measure the rounds (`execution`) use the run's directory, whose
//! name carries the run's process id, never the worker's; a worker makes no directory of its
//! own and sweeps none (only [`create`] sweeps, and only the run calls it).

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Prefix of every scratch directory's name.
const PREFIX: &str = "osprim-";

/// The marker file in every scratch directory osprim makes (module doc).
pub const MARKER: &str = ".osprim-scratch";

/// The first line of a marker (its format).
const MARKER_FORMAT: &str = "osprim scratch 1";

/// Creates this run's scratch directory, marked as osprim's, after removing those dead runs left.
pub fn create() -> std::io::Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    remove_stale(&tmp);
    let dir = tempfile::Builder::new().prefix(&format!("{PREFIX}{}-", std::process::id())).tempdir_in(tmp)?;
    let me = Owner::current().ok_or_else(|| std::io::Error::other("cannot read this process's /proc entries"))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(dir.path().join(MARKER))
        .and_then(|mut f| std::io::Write::write_all(&mut f, me.marker(&token()).as_bytes()))?;
    Ok(dir)
}

/// Whether the scratch directory `dir` is still there with its marker (a run checks at its end
/// that nothing else removed it while it measured).
pub fn intact(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// The process that made a scratch directory, as its marker names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: u32,
    /// Field 22 of `/proc/<pid>/stat`: clock ticks after boot.
    start: u64,
    boot: String,
    pid_ns: String,
}

impl Owner {
    /// This process, if its `/proc` entries can be read and `/proc` is its own PID namespace's.
    fn current() -> Option<Owner> {
        let pid = std::process::id();
        let shown: u32 = std::fs::read_link("/proc/self").ok()?.to_str()?.parse().ok()?;
        if shown != pid {
            return None;
        }
        Some(Owner { pid, start: start_time(pid)?, boot: boot_id()?, pid_ns: pid_namespace()? })
    }

    fn marker(&self, token: &str) -> String {
        format!(
            "{MARKER_FORMAT}\ntoken {token}\nboot {}\npid {}\nstart {}\npidns {}\n",
            self.boot, self.pid, self.start, self.pid_ns
        )
    }

    fn parse(text: &str) -> Option<Owner> {
        let mut lines = text.lines();
        if lines.next()? != MARKER_FORMAT {
            return None;
        }
        let mut field = |key: &str| -> Option<String> {
            let (k, v) = lines.next()?.split_once(' ')?;
            (k == key && !v.is_empty()).then(|| v.to_string())
        };
        let token = field("token")?;
        if token.len() < 16 {
            return None;
        }
        let boot = field("boot")?;
        let pid = field("pid")?.parse().ok()?;
        let start = field("start")?.parse().ok()?;
        let pid_ns = field("pidns")?;
        Some(Owner { pid, start, boot, pid_ns })
    }
}

/// A random token (hex), from the kernel's generator.
fn token() -> String {
    let mut bytes = [0u8; 16];
    let _ = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    let mut s: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    if bytes == [0; 16] {
        // No generator: unique enough from the pid and the time.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        s = format!("{:016x}{t:x}", std::process::id());
    }
    s
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

fn pid_namespace() -> Option<String> {
    Some(std::fs::read_link("/proc/self/ns/pid").ok()?.to_str()?.to_string())
}

/// Field 22 of `/proc/<pid>/stat` (after the command name, which may hold anything).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `owner` names is provably gone (this boot and PID namespace assumed):
/// nothing has its pid, or what has it started at another time.
fn gone(owner: &Owner) -> bool {
    match std::fs::symlink_metadata(format!("/proc/{}", owner.pid)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(_) => false,
        Ok(_) => start_time(owner.pid).is_some_and(|s| s != owner.start),
    }
}

/// The owner a scratch directory's marker names, if `dir` holds a marker of this user's
/// (a regular file, not followed through a link, of sane size).
fn read_marker(dir: &Path, uid: u32) -> Option<Owner> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(dir.join(MARKER))
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != uid || meta.len() > 4096 {
        return None;
    }
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    Owner::parse(&text)
}

/// This process's user id (the owner of its `/proc` entries).
fn this_user() -> u32 {
    std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX)
}

/// Removes the scratch directories in `tmp` whose run is provably dead (module doc).
fn remove_stale(tmp: &Path) {
    let Some(me) = Owner::current() else { return };
    let uid = this_user();
    sweep(tmp, &me, uid);
}

fn sweep(tmp: &Path, me: &Owner, uid: u32) {
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else { continue };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        let Some(owner) = read_marker(&path, uid) else { continue };
        let ours = owner.pid == pid && owner.boot == me.boot && owner.pid_ns == me.pid_ns && owner.pid != me.pid;
        if ours && gone(&owner) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// The process id in a scratch directory's name, `osprim-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_pid() {
        assert_eq!(owner_pid("osprim-1234-aB9x"), Some(1234));
        assert_eq!(owner_pid("osprim-1234-"), None);
        assert_eq!(owner_pid("osprim-x1-ab"), None);
        assert_eq!(owner_pid("osprim-results"), None);
        assert_eq!(owner_pid("other-12-ab"), None);
    }

    #[test]
    fn markers_round_trip() {
        let me = Owner::current().expect("this process");
        assert_eq!(Owner::parse(&me.marker(&token())), Some(me.clone()));
        assert_eq!(Owner::parse(&me.marker("short")), None);
        assert_eq!(Owner::parse("hello"), None);
        assert_eq!(start_time(me.pid), Some(me.start));
    }

    /// A directory `name` in `tmp` with a file in it, and a marker naming `owner` (if any).
    fn dir(tmp: &Path, name: &str, owner: Option<&Owner>) -> std::path::PathBuf {
        let d = tmp.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "x").unwrap();
        if let Some(o) = owner {
            std::fs::write(d.join(MARKER), o.marker(&token())).unwrap();
        }
        d
    }

    #[test]
    fn only_provably_dead_runs_directories_of_this_boot_and_namespace_go() {
        let tmp = tempfile::tempdir().unwrap();
        let me = Owner::current().expect("this process");
        let uid = this_user();
        // A pid above the kernel's limit is never alive.
        let dead_pid = 4_194_999;
        let dead = Owner { pid: dead_pid, ..me.clone() };
        let gone_dir = dir(tmp.path(), &format!("osprim-{dead_pid}-abc"), Some(&dead));
        // The pid of a live process, but it started at another time: reused, so gone.
        let parent = std::os::unix::process::parent_id();
        let reused = Owner { pid: parent, start: start_time(parent).unwrap() + 1, ..me.clone() };
        let reused_dir = dir(tmp.path(), &format!("osprim-{parent}-abc"), Some(&reused));
        // Kept: a live run (this process); a user's own directories; a run in another PID
        // namespace or another boot; a marker naming another pid than the name; no marker.
        let live_dir = dir(tmp.path(), &format!("osprim-{}-abc", me.pid), Some(&me));
        let live_parent = Owner { pid: parent, start: start_time(parent).unwrap(), ..me.clone() };
        let live_parent_dir = dir(tmp.path(), &format!("osprim-{parent}-def"), Some(&live_parent));
        let notes = dir(tmp.path(), "osprim-2026-notes", None);
        let unmarked = dir(tmp.path(), &format!("osprim-{dead_pid}-unmarked"), None);
        let other_ns = Owner { pid_ns: "pid:[1]".into(), ..dead.clone() };
        let other_ns_dir = dir(tmp.path(), &format!("osprim-{dead_pid}-otherns"), Some(&other_ns));
        let other_boot = Owner { boot: "00000000-0000-0000-0000-000000000000".into(), ..dead.clone() };
        let other_boot_dir = dir(tmp.path(), &format!("osprim-{dead_pid}-otherboot"), Some(&other_boot));
        let mismatched = dir(tmp.path(), "osprim-4194998-abc", Some(&dead));
        let results = dir(tmp.path(), "osprim-results", None);
        let file = tmp.path().join("osprim-4194997-file");
        std::fs::write(&file, "x").unwrap();
        // A symbolic link to a dead run's directory elsewhere is neither followed nor removed.
        let elsewhere = tempfile::tempdir().unwrap();
        let target = dir(elsewhere.path(), &format!("osprim-{dead_pid}-target"), Some(&dead));
        let link = tmp.path().join(format!("osprim-{dead_pid}-link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // A marker that is a link to a good marker is not read.
        let linked_marker = tmp.path().join(format!("osprim-{dead_pid}-linkedmarker"));
        std::fs::create_dir(&linked_marker).unwrap();
        std::os::unix::fs::symlink(gone_dir.join(MARKER), linked_marker.join(MARKER)).unwrap();

        sweep(tmp.path(), &me, uid);
        assert!(!gone_dir.exists(), "a dead run's directory goes");
        assert!(!reused_dir.exists(), "a directory whose pid was reused goes");
        for kept in [
            &live_dir,
            &live_parent_dir,
            &notes,
            &unmarked,
            &other_ns_dir,
            &other_boot_dir,
            &mismatched,
            &results,
            &target,
            &linked_marker,
        ] {
            assert!(kept.join("f").exists() || kept == &linked_marker, "{} was removed", kept.display());
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        assert!(file.exists() && std::fs::symlink_metadata(&link).is_ok());
        // Another user's directory is never touched.
        let other_user = dir(tmp.path(), &format!("osprim-{dead_pid}-otheruser"), Some(&dead));
        sweep(tmp.path(), &me, uid.wrapping_add(1));
        assert!(other_user.exists());
    }

    #[test]
    fn a_scratch_directory_is_marked_and_outlives_other_runs_sweeps() {
        let dir = create().expect("a scratch directory");
        assert!(intact(dir.path()));
        let text = std::fs::read_to_string(dir.path().join(MARKER)).unwrap();
        assert_eq!(Owner::parse(&text), Owner::current());
        remove_stale(dir.path().parent().unwrap());
        assert!(intact(dir.path()));
    }
}
