//! Where a result file goes: a path checked before anything is measured, so that a run never
//! replaces what the path names unless it is a regular file (or nothing), and never measures
//! for a minute only to find it cannot save.
//!
//! - The target must be absent or a regular file: a device node, a FIFO, a socket, a
//!   directory or a symbolic link is refused with one line (writing goes through a new file in
//!   the same directory and a rename, which would replace whatever the name points at).
//! - A name ending in `/` names a directory; a file name over 255 bytes cannot be created,
//!   and a run's result file needs 8 bytes more for its journal (`<name>.journal`).
//! - A name ending in `.journal` is a run's journal: never a target (a live run's journal
//!   replaced would lose its measurements).
//! - Nothing osprim reads or keeps in the same command is a target ([`check_not_input`]): the
//!   result files a report or a comparison reads, a run's baseline, the history database. Paths
//!   are compared by identity: the same device and inode when the file exists (a link or
//!   another spelling of the same file is the same file), else the canonical directory and the
//!   name.
//! - An existing regular file must be writable (its permissions, and attributes such as
//!   immutable or append-only, are what `open(O_WRONLY)` reports); the directory must take a
//!   new file.
//! - Default names are unique: UTC time to the millisecond plus a random suffix, reserved with
//!   `O_CREAT | O_EXCL`, so runs started in the same second never share a file.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The longest file name Linux file systems take (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// The suffix of a run's journal (`store::journal::path_for`).
const JOURNAL_SUFFIX: &str = ".journal";

/// Why a result file cannot go where asked.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path ends in `/`.
    #[error("cannot write results to {0}: the name ends in '/', which names a directory")]
    TrailingSlash(PathBuf),
    /// The file name is longer than the file system allows.
    #[error("cannot write results to {0}: the file name is longer than {NAME_MAX} bytes")]
    NameTooLong(PathBuf),
    /// Something other than a regular file is there.
    #[error("cannot write results to {path}: it is {what}; osprim replaces only regular files")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is ("a directory", "a FIFO", …).
        what: &'static str,
    },
    /// The file name leaves no room for its journal's name (`.journal` added).
    #[error(
        "cannot write results to {0}: the file name is longer than {max} bytes (its journal adds '.journal', and a \
         name takes at most {NAME_MAX})",
        max = NAME_MAX - JOURNAL_SUFFIX.len()
    )]
    NoRoomForJournal(PathBuf),
    /// The name is a journal's.
    #[error("cannot write results to {0}: a name ending in '.journal' is a run's journal, never a result")]
    JournalName(PathBuf),
    /// The target is a file this command reads or keeps.
    #[error("cannot write results to {path}: it is {what}, which this command reads; osprim never overwrites it")]
    IsInput {
        /// The path.
        path: PathBuf,
        /// What it is ("the baseline", "the history database", …).
        what: String,
    },
    /// The existing file cannot be written, or the directory takes no new file.
    #[error("cannot write results to {path}: {error}")]
    NotWritable {
        /// The path.
        path: PathBuf,
        /// What the kernel said.
        /// (Said in the message, so not a `source`: a chain would say it twice.)
        error: std::io::Error,
    },
}

/// What is at `path`, if it is not a regular file: "a directory", "a FIFO", …
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Checks that results can be written to `path` without destroying anything (module doc).
pub fn check_target(path: &Path) -> Result<(), OutputError> {
    let text = path.as_os_str().as_encoded_bytes();
    if text.ends_with(b"/") {
        return Err(OutputError::TrailingSlash(path.into()));
    }
    if path.file_name().is_some_and(|n| n.len() > NAME_MAX) {
        return Err(OutputError::NameTooLong(path.into()));
    }
    if text.ends_with(JOURNAL_SUFFIX.as_bytes()) {
        return Err(OutputError::JournalName(path.into()));
    }
    let writable = |error| OutputError::NotWritable { path: path.into(), error };
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if let Some(what) = not_regular(&meta) {
                return Err(OutputError::NotRegular { path: path.into(), what });
            }
            // Opening for writing (no truncation, no creation) is the kernel's own answer on
            // permissions and on immutable or append-only files.
            OpenOptions::new().write(true).open(path).map(drop).map_err(writable)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(writable(e)),
    }
    let dir = parent(path);
    tempfile::Builder::new().prefix(".osprim-").tempfile_in(dir).map(drop).map_err(writable)
}

/// [`check_target`] for a run's result file, which has its journal beside it: the name must
/// leave room for `.journal`.
pub fn check_result_target(path: &Path) -> Result<(), OutputError> {
    check_target(path)?;
    if path.file_name().is_some_and(|n| n.len() + JOURNAL_SUFFIX.len() > NAME_MAX) {
        return Err(OutputError::NoRoomForJournal(path.into()));
    }
    Ok(())
}

/// What a path is, for comparing two paths: the same device and inode when it exists, else its
/// directory (canonical) and name.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Name(PathBuf),
}

fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Some(Identity::Inode(m.dev(), m.ino())),
        Err(_) => {
            let dir = std::fs::canonicalize(parent(path)).ok()?;
            Some(Identity::Name(dir.join(path.file_name()?)))
        }
    }
}

/// Whether `a` and `b` name the same file (module doc); paths that cannot be resolved are
/// compared as written.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Refuses `target` when it is one of `inputs` (each a path and what it is to the command:
/// "the baseline", "the history database", …), by identity (module doc).
pub fn check_not_input(target: &Path, inputs: &[(&Path, &str)]) -> Result<(), OutputError> {
    match inputs.iter().find(|(p, _)| same_file(target, p)) {
        Some((_, what)) => Err(OutputError::IsInput { path: target.into(), what: (*what).to_string() }),
        None => Ok(()),
    }
}

/// The files of the SQLite database at `db` (the database and its write-ahead log, shared
/// memory and rollback journal): what a result file must never replace.
pub fn database_files(db: &Path) -> Vec<PathBuf> {
    let mut files = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_os_string();
        name.push(suffix);
        files.push(name.into());
    }
    files
}

/// The directory a result file goes in.
pub fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// A new, unique default result file in `dir` (created empty, so no other run takes the name):
/// `<UTC time to the millisecond>-<4 hex digits>.json`.
pub fn reserve_default(dir: &Path, started: std::time::SystemTime) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let stamp = humantime::format_rfc3339_millis(started).to_string().replace(':', "-");
    let mut last = None;
    for attempt in 0u64..64 {
        let suffix = (started.duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0) as u64)
            .wrapping_mul(0x9E37_79B9)
            .wrapping_add(u64::from(std::process::id()) * 7919 + attempt * 104_729)
            & 0xffff;
        let path = dir.join(format!("{stamp}-{suffix:04x}.json"));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => {
                drop::<File>(file);
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free result file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_and_absent_names_are_fine() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        check_target(&p).expect("absent");
        std::fs::write(&p, "old").unwrap();
        check_target(&p).expect("a regular file");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old", "checking writes nothing");
    }

    #[test]
    fn devices_fifos_directories_and_symlinks_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        for (p, what) in [
            (Path::new("/dev/null").to_path_buf(), "a character device"),
            (fifo, "a FIFO"),
            (d.path().to_path_buf(), "a directory"),
            (link, "a symbolic link"),
        ] {
            let e = check_target(&p).expect_err("refused");
            assert!(e.to_string().contains(what), "{e}");
        }
    }

    #[test]
    fn trailing_slash_and_long_names_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let slash = PathBuf::from(format!("{}/newdir/", d.path().display()));
        assert!(matches!(check_target(&slash), Err(OutputError::TrailingSlash(_))));
        let long = d.path().join("x".repeat(300));
        assert!(matches!(check_target(&long), Err(OutputError::NameTooLong(_))));
        let missing_dir = d.path().join("no/such/dir/r.json");
        assert!(matches!(check_target(&missing_dir), Err(OutputError::NotWritable { .. })));
    }

    #[test]
    fn journal_names_and_names_without_room_for_a_journal_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let journal = d.path().join("x.json.journal");
        assert!(matches!(check_target(&journal), Err(OutputError::JournalName(_))));
        let name = "x".repeat(NAME_MAX - 3);
        let p = d.path().join(&name);
        check_target(&p).expect("fits alone");
        assert!(matches!(check_result_target(&p), Err(OutputError::NoRoomForJournal(_))), "no room for .journal");
        check_result_target(&d.path().join("x".repeat(NAME_MAX - JOURNAL_SUFFIX.len()))).expect("just fits");
    }

    #[test]
    fn inputs_are_refused_by_identity() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("base.json");
        std::fs::write(&base, "{}").unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&base, &link).unwrap();
        let hard = d.path().join("hard.json");
        std::fs::hard_link(&base, &hard).unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let dotted = sub.join("../base.json");
        let inputs = [(base.as_path(), "the baseline")];
        for p in [&base, &link, &hard, &dotted] {
            let e = check_not_input(p, &inputs).expect_err("the same file");
            assert!(e.to_string().contains("it is the baseline"), "{e}");
        }
        check_not_input(&d.path().join("new.json"), &inputs).expect("another file");
        // Absent files compare by directory and name.
        let db = d.path().join("history.db");
        let files = database_files(&db);
        let inputs: Vec<(&Path, &str)> = files.iter().map(|p| (p.as_path(), "the history database")).collect();
        assert!(check_not_input(&sub.join("../history.db"), &inputs).is_err());
        assert!(check_not_input(&d.path().join("history.db-wal"), &inputs).is_err());
        check_not_input(&sub.join("history.db"), &inputs).expect("another directory");
    }

    #[test]
    fn default_names_are_unique_even_in_the_same_instant() {
        let d = tempfile::tempdir().unwrap();
        let t = std::time::SystemTime::now();
        let names: Vec<PathBuf> = (0..20).map(|_| reserve_default(d.path(), t).unwrap()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 20);
        assert!(names.iter().all(|p| p.exists() && p.extension().is_some_and(|e| e == "json")));
    }
}
