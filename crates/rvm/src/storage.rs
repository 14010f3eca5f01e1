//! The one seam through which a segment changes durable state: every file creation, length
//! change, `pwrite`, `fsync`, `fdatasync` and directory `fsync` the crate makes goes through a
//! [`Storage`], so that a test can record them (`powerloss`, the power-loss test) and replay
//! every state a power failure could leave.
//!
//! Outside tests [`Storage`] has one variant, [`Storage::Os`], and each method is the system
//! call itself: no allocation, no indirection (the `match` has one arm). Reads (recovery's read
//! of the log, the mapping) are not durable-state operations and do not go through here.

use crate::{Call, Stage};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Which of a segment's two files an operation concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// The data segment.
    Segment,
    /// Its redo log, `<segment>.log`.
    Log,
}

/// How [`Storage::open`] opens a file (always for reading and writing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The file must exist.
    Existing,
    /// The file must not exist; it is created.
    CreateNew,
    /// Created if missing, else truncated to 0 bytes.
    CreateTruncate,
    /// Created if missing, else kept as it is.
    CreateKeep,
}

/// Where durable-state operations go.
#[derive(Clone, Debug, Default)]
pub(crate) enum Storage {
    /// Straight to the operating system.
    #[default]
    Os,
    /// To the operating system and to a recorder (the power-loss test).
    #[cfg(test)]
    Recorded(std::rc::Rc<std::cell::RefCell<crate::powerloss::Recorder>>),
}

// Outside tests the seam is free: a zero-sized field, each `match` one arm.
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<Storage>() == 0);

impl Storage {
    /// Opens the file at `path` (the segment's `role` file) as `mode` says.
    #[cfg_attr(not(test), allow(unused_variables))] // `role` is for the recorder
    pub(crate) fn open(&self, path: &Path, role: Role, mode: Mode) -> io::Result<File> {
        #[cfg(test)]
        let existed = path.exists();
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        match mode {
            Mode::Existing => o.create(false),
            Mode::CreateNew => o.create_new(true),
            Mode::CreateTruncate => o.create(true).truncate(true),
            Mode::CreateKeep => o.create(true).truncate(false),
        };
        let file = o.open(path)?;
        match self {
            Storage::Os => {}
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().opened(role, mode, existed),
        }
        Ok(file)
    }

    /// `ftruncate(file, len)`.
    #[cfg_attr(not(test), allow(unused_variables))] // `role` is for the recorder
    pub(crate) fn set_len(&self, file: &File, role: Role, len: u64) -> io::Result<()> {
        file.set_len(len)?;
        match self {
            Storage::Os => {}
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().set_len(role, len),
        }
        Ok(())
    }

    /// One `pwrite(file, buf, offset)`: the bytes written (perhaps fewer than `buf.len()`).
    #[cfg_attr(not(test), allow(unused_variables))] // `role` is for the recorder
    pub(crate) fn pwrite(&self, file: &File, role: Role, buf: &[u8], offset: u64) -> io::Result<usize> {
        let n = file.write_at(buf, offset)?;
        match self {
            Storage::Os => {}
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().write(role, offset, &buf[..n]),
        }
        Ok(n)
    }

    /// `fdatasync(file)`: its data, and the metadata needed to read it (its length), are
    /// durable when this returns.
    #[cfg_attr(not(test), allow(unused_variables))] // `role` is for the recorder
    pub(crate) fn fdatasync(&self, file: &File, role: Role) -> io::Result<()> {
        match self {
            Storage::Os => file.sync_data(),
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().sync(file, role, false),
        }
    }

    /// `fsync(file)`: its data and all its metadata are durable when this returns.
    #[cfg_attr(not(test), allow(unused_variables))] // `role` is for the recorder
    pub(crate) fn fsync(&self, file: &File, role: Role) -> io::Result<()> {
        match self {
            Storage::Os => file.sync_all(),
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().sync(file, role, true),
        }
    }

    /// `fsync` of the directory holding `path`, so that the names created in it are durable.
    pub(crate) fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        match self {
            Storage::Os => File::open(dir)?.sync_all(),
            #[cfg(test)]
            Storage::Recorded(r) => r.borrow_mut().sync_dir(dir),
        }
    }

    /// `pwrite`s all of `buf` at `offset`, adding each call made to `calls` (a short write or
    /// an interruption makes another) and calling `probe` right before and right after each
    /// ([`Stage::Enter`], [`Stage::Exit`]).
    pub(crate) fn pwrite_all(
        &self,
        file: &File,
        role: Role,
        mut buf: &[u8],
        mut offset: u64,
        calls: &mut u64,
        probe: &mut impl FnMut(Stage),
    ) -> io::Result<()> {
        while !buf.is_empty() {
            *calls += 1;
            probe(Stage::Enter(Call::Pwrite));
            let written = self.pwrite(file, role, buf, offset);
            probe(Stage::Exit(Call::Pwrite));
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    buf = &buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
