//! The run's scratch directory (files benchmarks need: a cached file, a library to load, a
//! transaction log…): `$TMPDIR/osprim-<pid>-<random>`, removed when the run ends, also at a
//! first or second signal (`interrupt::create_removable`).
//!
//! Nothing Rust runs can remove it after SIGKILL or a crash, so every run first removes the
//! scratch directories that runs now dead left behind: those of the same user whose process
//! id is no longer an `osprim` process.
//!
//! The worker processes that measure the rounds (`execution`) use the run's directory, whose
//! name carries the run's process id, never the worker's; a worker makes no directory of its
//! own and sweeps none (only [`create`] sweeps, and only the run calls it).

use std::path::Path;

/// Prefix of every scratch directory's name.
const PREFIX: &str = "osprim-";

/// Creates this run's scratch directory, after removing those dead runs left.
pub fn create() -> std::io::Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    remove_stale(&tmp);
    tempfile::Builder::new().prefix(&format!("{PREFIX}{}-", std::process::id())).tempdir_in(tmp)
}

/// Removes the scratch directories in `tmp` whose run is dead (module doc).
fn remove_stale(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else { return };
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else { continue };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else { continue };
        if meta.is_dir() && meta.uid() == me && !is_live_osprim(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
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

/// Whether `pid` is a live osprim process (a test binary running osprim's code counts too).
fn is_live_osprim(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) => comm.starts_with("osprim"),
        Err(_) => false,
    }
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
    fn only_dead_runs_directories_go() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid above the kernel's limit is never alive.
        let dead = tmp.path().join("osprim-4294967-abc");
        let live = tmp.path().join(format!("osprim-{}-abc", std::process::id()));
        let other = tmp.path().join("osprim-results");
        let file = tmp.path().join("osprim-4294968-file");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("x"), "x").unwrap();
        }
        std::fs::write(&file, "x").unwrap();
        remove_stale(tmp.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists() && file.exists());
    }
}
