//! Where results live: the result file ([`write_result_file`]), the journal a run keeps as it
//! goes ([`journal`]), the output files checked before a run ([`output`]), and the history
//! database of every run ([`history`]).
//!
//! A result file is saved whole, atomically (a temporary file in the same directory, synced,
//! then a rename), with the temporary file removed should a second Ctrl-C end the process
//! mid-write. The format itself is `model`'s.

#![forbid(unsafe_code)]

pub mod history;
pub mod journal;
pub mod output;

use model::RunFile;
use std::path::Path;

/// Writes `run` to `path` atomically: a temporary file in the same directory, then a rename.
/// A file replaced keeps its permission bits.
///
/// The rename replaces only a regular file (or nothing): should the name have come to point at
/// anything else since the run checked it, the write fails instead.
pub fn write_result_file(path: &Path, run: &RunFile) -> std::io::Result<()> {
    write_atomically(path, |file| Ok(serde_json::to_writer(std::io::BufWriter::new(file), run)?))
}

/// Writes `bytes` to `path` the same way: only a regular file (or nothing) is replaced.
pub fn write_new_or_regular(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, |file| std::io::Write::write_all(file, bytes))
}

fn write_atomically(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    let existing = std::fs::symlink_metadata(path).ok();
    if existing.as_ref().is_some_and(|meta| !meta.file_type().is_file()) {
        return Err(std::io::Error::other("it is no longer a regular file; osprim replaces only regular files"));
    }
    let dir = crate::output::parent(path);
    let mut tmp = platform::interrupt::create_removable(
        || tempfile::Builder::new().prefix(".osprim-").suffix(".tmp").tempfile_in(dir),
        |t| t.path().to_path_buf(),
    )?;
    let tmp_path = tmp.path().to_path_buf();
    // A file replaced keeps its permissions (a 0644 result stays 0644), set-id bits aside.
    let kept_mode = existing.map(|meta| {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(meta.permissions().mode() & 0o777))
    });
    let filled =
        kept_mode.unwrap_or(Ok(())).and_then(|()| fill(tmp.as_file_mut())).and_then(|()| tmp.as_file().sync_data());
    // Renamed into place (or removed, should anything fail) and forgotten in one step.
    platform::interrupt::settle(&tmp_path, move || {
        filled?;
        tmp.persist(path).map(drop).map_err(|e| e.error)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_replaced_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o600] {
            let p = d.path().join(format!("r{mode:o}.json"));
            std::fs::write(&p, "old").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            super::write_new_or_regular(&p, b"new").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777, mode);
        }
    }
}
