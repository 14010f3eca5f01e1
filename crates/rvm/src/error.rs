//! The errors of [`crate`], each with the file it concerns.

use super::{CrashPoint, Detection};
use std::io;
use std::path::PathBuf;
use sys::wprotect::WpError;

/// What went wrong in a segment operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The segment (or its log) could not be created.
    #[error("cannot create segment {path}: {source}")]
    Create {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The segment or its log could not be opened or read.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The segment file's length is not a positive multiple of the page size.
    #[error("segment {path} is {len} bytes, not a positive multiple of the page size ({page} bytes)")]
    BadSize {
        /// The segment file.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The page size.
        page: usize,
    },
    /// Mapping the segment or setting up write detection failed.
    #[error("cannot map segment {path} ({detection} write detection): {source}")]
    Map {
        /// The segment file.
        path: PathBuf,
        /// The mode asked for.
        detection: Detection,
        /// The cause.
        #[source]
        source: WpError,
    },
    /// The write-detection mode cannot work for this segment here.
    #[error("{detection} write detection is unavailable for {path}: {reason}")]
    Unavailable {
        /// The segment file.
        path: PathBuf,
        /// The mode asked for.
        detection: Detection,
        /// Why.
        reason: String,
    },
    /// Replaying the log into the segment at open failed.
    #[error("cannot recover {path} from its log: {source}")]
    Recover {
        /// The file being written or synced.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// `begin` could not write-protect the segment, or (read tracking) a commit or abort could
    /// not re-protect the pages touched.
    #[error("cannot protect segment {path}: {source}")]
    Protect {
        /// The segment file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: WpError,
    },
    /// Write detection broke down during the transaction (uffd handler failure).
    #[error("write detection failed on segment {path}; writes were not all tracked")]
    Detection {
        /// The segment file.
        path: PathBuf,
    },
    /// A commit's log write, sync, apply or trim failed. Whether the transaction is durable is
    /// decided by the log: reopen the segment to find out.
    #[error("commit failed at {step} of {path}: {source}")]
    Commit {
        /// What the commit was doing.
        step: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// An earlier commit failed; the segment must be reopened (which recovers it).
    #[error("segment {path} must be reopened: an earlier commit failed ({reason})")]
    Poisoned {
        /// The segment file.
        path: PathBuf,
        /// The earlier failure.
        reason: String,
    },
    /// A write outside the segment.
    #[error("{len} bytes at offset {offset} do not fit in the {size}-byte segment")]
    OutOfBounds {
        /// Offset asked for.
        offset: usize,
        /// Length asked for.
        len: usize,
        /// The segment's size.
        size: usize,
    },
    /// The commit stopped at a crash point set with [`super::Segment::inject_crash`] (tests).
    #[error("crash injected at {point:?} ({log_bytes}-byte log write)")]
    CrashInjected {
        /// Where it stopped.
        point: CrashPoint,
        /// Bytes of the log write the commit would have made in full.
        log_bytes: usize,
    },
}
