//! io_uring: a small safe API over the `io-uring` crate for what osprim measures — batches of
//! `IORING_OP_NOP`, reads and writes on a descriptor, and `IORING_OP_MSG_RING` posts from one
//! ring to another.
//!
//! **Absence.** [`unavailable`] says why io_uring cannot be used here, or `None`: the
//! `kernel.io_uring_disabled` sysctl (2: disabled for everyone; 1: only for privileged
//! processes and `kernel.io_uring_group`), `io_uring_setup` failing with `ENOSYS` (a kernel
//! built without it) or `EPERM` (a seccomp filter — container runtimes' default profiles block
//! io_uring — or a security module), or a ring without `IORING_FEAT_EXT_ARG` (Linux 5.11: a
//! wait with a deadline). [`Ring::new`] returns the same reason as [`SetupError::Unavailable`],
//! which a benchmark turns into a skip. [`msg_ring_unavailable`] also asks the kernel's opcode
//! probe for `IORING_OP_MSG_RING` (Linux 5.18).
//!
//! **Every operation is over when its call returns.** [`Ring::read`] and [`Ring::write`]
//! submit one operation that points into the caller's buffer and return only once its
//! completion has been reaped, so the buffer's borrow covers the kernel's whole use of it. A
//! wait that ends first (its deadline, or a signal: no restart, so a caller's watchdog can
//! interrupt it) cancels the operation (`IORING_OP_ASYNC_CANCEL`) and waits for both
//! completions before returning: the operation either completed after all (its result is
//! returned) or was cancelled, having moved nothing (`TimedOut` or `Interrupted`). A kernel
//! that neither completes nor cancels an operation within [`CANCEL_GRACE`] would leave the
//! buffer in its hands: the process aborts rather than return it (never seen; a pipe read
//! waiting for data is cancelled at once).
//!
//! **The ring's own account** ([`Counts`]): the submissions the kernel says it consumed (the
//! sum of `io_uring_enter`'s return values), the completions of this ring's own operations
//! reaped from the completion queue, the completions another ring posted here (`MSG_RING`),
//! and the kernel's completion-queue overflow and dropped-submission counters, read from the
//! ring's shared memory. A ring that lost nothing has `completed == submitted` (and, when
//! messages were posted to it, `received` equal to what the other ring posted).
//!
//! **Forked processes.** A ring made before `fork` is shared by both processes (the queues are
//! a shared mapping, the descriptor inherited): a ring is driven by one process only — the
//! pipe transport opens one ring per end, and a forked peer drives its own. Rings are made
//! without `IORING_SETUP_SINGLE_ISSUER` for that reason (it would tie a ring to the task that
//! made it).
//!
//! # Safety
//! The `unsafe` here is the crate's: pushing a submission entry, whose buffers must stay valid
//! until the operation completes (NOPs and cancellations point at nothing; a read or write
//! points into a buffer borrowed for the whole call, which returns only after the completion,
//! see above; a `MSG_RING` names a descriptor and carries two integers); and borrowing the
//! ring's descriptor, valid while the ring lives.
#![allow(unsafe_code)]

use io_uring::{IoUring, opcode, squeue, types};
use std::collections::VecDeque;
use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a cancelled operation may take to report before the process aborts (see the
/// module doc).
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The user data of this ring's own operations carry this bit; a message posted by another
/// ring must not (its user data is the sender's, e.g. a sequence number).
const OWN: u64 = 1 << 63;
/// This ring's read, write or post in flight.
const OP_TAG: u64 = OWN | 1;
/// Its cancellation.
const CANCEL_TAG: u64 = OWN | 2;

/// Messages posted to a ring that can wait here before one is taken.
const STASH: usize = 64;

/// Why a ring could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// io_uring cannot be used on this machine or in this process (the reason, for a skip).
    #[error("{0}")]
    Unavailable(String),
    /// `io_uring_setup` failed for another reason.
    #[error("io_uring_setup with {entries} entries: {source}")]
    Setup {
        /// The entries asked for.
        entries: u32,
        /// The error.
        source: io::Error,
    },
}

impl From<SetupError> for io::Error {
    fn from(e: SetupError) -> io::Error {
        match e {
            SetupError::Unavailable(why) => io::Error::new(ErrorKind::Unsupported, why),
            SetupError::Setup { source, .. } => source,
        }
    }
}

/// Why io_uring cannot be used here, or `None` when it can (probed once per process: a ring
/// of two entries made and dropped).
pub fn unavailable() -> Option<String> {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    PROBE.get_or_init(|| Ring::new(2).err().map(|e| e.to_string())).clone()
}

/// Why `IORING_OP_MSG_RING` cannot be used here, or `None` when it can (the kernel's opcode
/// probe, once per process).
pub fn msg_ring_unavailable() -> Option<String> {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if let Some(why) = unavailable() {
                return Some(why);
            }
            let ring = match Ring::new(2) {
                Ok(r) => r,
                Err(e) => return Some(e.to_string()),
            };
            let mut probe = io_uring::Probe::new();
            if let Err(e) = ring.ring.submitter().register_probe(&mut probe) {
                return Some(format!("the kernel's io_uring opcode probe failed: {e}"));
            }
            (!probe.is_supported(opcode::MsgRingData::CODE))
                .then(|| "this kernel's io_uring lacks IORING_OP_MSG_RING (Linux 5.18)".to_string())
        })
        .clone()
}

/// The reason for a failed `io_uring_setup`, when it means io_uring is absent.
fn absence(e: &io::Error, disabled: Option<u32>) -> Option<String> {
    match (e.raw_os_error(), disabled) {
        (_, Some(2)) => Some("kernel.io_uring_disabled is 2: io_uring is disabled for every process".into()),
        (Some(libc::EPERM), Some(1)) => Some(
            "kernel.io_uring_disabled is 1: io_uring only for privileged processes and kernel.io_uring_group \
             members, which this one is not"
                .into(),
        ),
        (Some(libc::ENOSYS), _) => Some("io_uring_setup returned ENOSYS: this kernel is built without io_uring".into()),
        (Some(libc::EPERM), _) => Some(
            "io_uring_setup returned EPERM: a seccomp filter (container runtimes' default profiles block io_uring) \
             or a security module forbids it"
                .into(),
        ),
        _ => None,
    }
}

fn disabled_sysctl() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok()?.trim().parse().ok()
}

/// What a ring did, by its own account and the kernel's (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Submission entries the kernel consumed (`io_uring_enter`'s return values, summed).
    pub submitted: u64,
    /// Completions of this ring's own operations, reaped.
    pub completed: u64,
    /// Completions posted to this ring by another ring (`MSG_RING`), reaped.
    pub received: u64,
    /// The kernel's completion-queue overflow counter (completions it had no room for).
    pub cq_overflow: u32,
    /// The kernel's count of invalid submission entries it dropped.
    pub sq_dropped: u32,
}

/// One batch of NOPs ([`Ring::nop_batch`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Completions reaped.
    pub completed: u32,
    /// Completions whose result was not 0, or whose user data was not the one pushed in that
    /// position.
    pub wrong: u32,
}

/// A completion another ring posted here with `MSG_RING`: the sender's user data and value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The user data the sender gave.
    pub user_data: u64,
    /// The 32-bit value the sender gave (the completion's `res`).
    pub value: i32,
}

/// An io_uring instance: its submission and completion queues, and its account.
pub struct Ring {
    ring: IoUring,
    counts: Counts,
    /// Messages reaped while waiting for something else, oldest first (never more than
    /// [`STASH`]: no allocation after [`Ring::new`]).
    stash: VecDeque<Message>,
    /// The completion of the operation in flight, once reaped.
    op_result: Option<i32>,
    /// Whether the cancellation's completion has been reaped.
    cancel_done: bool,
}

impl AsFd for Ring {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the ring's descriptor stays open while the ring lives, and the borrow cannot
        // outlive `self`.
        unsafe { BorrowedFd::borrow_raw(self.ring.as_raw_fd()) }
    }
}

impl Ring {
    /// A ring with `entries` submission entries (a power of two up to 32768; the completion
    /// queue twice that). A reason for a skip when io_uring is absent ([`SetupError::Unavailable`]).
    pub fn new(entries: u32) -> Result<Ring, SetupError> {
        let ring = IoUring::builder().build(entries).map_err(|source| match absence(&source, disabled_sysctl()) {
            Some(why) => SetupError::Unavailable(why),
            None => SetupError::Setup { entries, source },
        })?;
        if !ring.params().is_feature_ext_arg() {
            return Err(SetupError::Unavailable(
                "this kernel's io_uring lacks IORING_FEAT_EXT_ARG (Linux 5.11): no wait with a deadline".into(),
            ));
        }
        Ok(Ring {
            ring,
            counts: Counts::default(),
            stash: VecDeque::with_capacity(STASH),
            op_result: None,
            cancel_done: false,
        })
    }

    /// Submission entries.
    pub fn entries(&self) -> u32 {
        self.ring.params().sq_entries()
    }

    /// The ring's account, with the kernel's overflow and dropped counters read now.
    pub fn counts(&mut self) -> Counts {
        let cq_overflow = self.ring.completion().overflow();
        let sq_dropped = self.ring.submission().dropped();
        Counts { cq_overflow, sq_dropped, ..self.counts }
    }

    /// A second descriptor of this ring (what another ring's `MSG_RING` names; it keeps the
    /// ring alive for the holder).
    pub fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.as_fd().try_clone_to_owned()
    }

    /// Pushes `n` NOPs, the `i`-th with user data `first + i`, submits them and waits for `n`
    /// completions (`io_uring_enter(n, n, GETEVENTS)`: a NOP completes as it is submitted, so
    /// the wait finds them there), then reaps every completion, checking each one's result
    /// (0) and user data. `first + n` must stay below 2^63.
    #[inline]
    pub fn nop_batch(&mut self, n: u32, first: u64) -> io::Result<Batch> {
        if n as usize > self.ring.params().sq_entries() as usize || (first + u64::from(n)) & OWN != 0 {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!("a batch of {n} NOPs from user data {first} does not fit a ring of {}", self.entries()),
            ));
        }
        {
            let mut sq = self.ring.submission();
            for i in 0..u64::from(n) {
                let e = opcode::Nop::new().build().user_data(first + i);
                // SAFETY: a NOP points at no memory (module doc).
                if unsafe { sq.push(&e) }.is_err() {
                    return Err(io::Error::new(ErrorKind::WouldBlock, "the submission queue is full"));
                }
            }
        }
        let submitted = self.ring.submit_and_wait(n as usize)?;
        self.counts.submitted += submitted as u64;
        let mut out = Batch::default();
        for (i, cqe) in self.ring.completion().enumerate() {
            out.completed += 1;
            out.wrong += u32::from(cqe.result() != 0 || cqe.user_data() != first + i as u64);
        }
        self.counts.completed += u64::from(out.completed);
        Ok(out)
    }

    /// Reads up to `buf.len()` bytes from `fd` at its current position, as `read(2)` does,
    /// through one `IORING_OP_READ`; returns the bytes read. A wait longer than `timeout`, or
    /// a signal, cancels the read: `TimedOut` or `Interrupted` with nothing read, unless it
    /// completed after all. Returns only once the kernel is done with `buf` (module doc).
    #[inline]
    pub fn read(&mut self, fd: BorrowedFd<'_>, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let e = opcode::Read::new(types::Fd(fd.as_raw_fd()), buf.as_mut_ptr(), len).offset(u64::MAX).build();
        // SAFETY: `buf` is borrowed for this whole call, which returns only once the read's
        // completion has been reaped (module doc).
        let res = unsafe { self.run_one(e, timeout) }?;
        Ok(res as usize)
    }

    /// Writes up to `buf.len()` bytes to `fd` at its current position, as `write(2)` does,
    /// through one `IORING_OP_WRITE`; returns the bytes written. Deadline, signals and the
    /// buffer's borrow as for [`Ring::read`].
    #[inline]
    pub fn write(&mut self, fd: BorrowedFd<'_>, buf: &[u8], timeout: Duration) -> io::Result<usize> {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let e = opcode::Write::new(types::Fd(fd.as_raw_fd()), buf.as_ptr(), len).offset(u64::MAX).build();
        // SAFETY: as in `read`.
        let res = unsafe { self.run_one(e, timeout) }?;
        Ok(res as usize)
    }

    /// Posts a completion to the ring behind `target` (`IORING_OP_MSG_RING`) carrying
    /// `user_data` (below 2^63) and `value`, and waits for this ring's own completion of the
    /// post (at most `timeout`; a post does not wait for the other side, so it completes as it
    /// is submitted).
    #[inline]
    pub fn post(&mut self, target: BorrowedFd<'_>, user_data: u64, value: i32, timeout: Duration) -> io::Result<()> {
        if user_data & OWN != 0 {
            return Err(io::Error::new(ErrorKind::InvalidInput, "a posted message's user data must be below 2^63"));
        }
        let e = opcode::MsgRingData::new(types::Fd(target.as_raw_fd()), value, user_data, None).build();
        // SAFETY: a post names a descriptor and carries two integers; it points at no memory.
        unsafe { self.run_one(e, timeout) }.map(drop)
    }

    /// Waits at most `timeout` for a completion another ring posted here and returns it
    /// (the oldest first). `TimedOut` when none came, `Interrupted` on a signal.
    #[inline]
    pub fn wait_message(&mut self, timeout: Duration) -> io::Result<Message> {
        loop {
            self.reap();
            if let Some(m) = self.stash.pop_front() {
                return Ok(m);
            }
            let ts = types::Timespec::from(timeout);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(n) => self.counts.submitted += n as u64,
                Err(e) => {
                    self.reap();
                    return match self.stash.pop_front() {
                        Some(m) => Ok(m),
                        None => Err(wait_error(e)),
                    };
                }
            }
        }
    }

    /// Submits `entry` (tagged as this ring's operation) and waits for its completion; a wait
    /// that ends first cancels it and waits for both completions. Returns the operation's
    /// result (`res`, an error when negative).
    ///
    /// # Safety
    /// Whatever memory `entry` points at must stay valid until this returns.
    #[inline]
    unsafe fn run_one(&mut self, entry: squeue::Entry, timeout: Duration) -> io::Result<i32> {
        let entry = entry.user_data(OP_TAG);
        self.op_result = None;
        // SAFETY: the caller keeps the entry's memory valid until this returns, and this
        // returns only after the operation's completion (below, or in `cancel`).
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            return Err(io::Error::new(ErrorKind::WouldBlock, "the submission queue is full"));
        }
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        // A wait that returns with the operation still in flight is tried once more: when
        // it submitted, `io_uring_enter` returns the count even if its wait was cut short, and
        // only the second call says why (its deadline, or a signal).
        let mut ended = None;
        for _ in 0..2 {
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(n) => self.counts.submitted += n as u64,
                Err(e) => ended = Some(wait_error(e)),
            }
            self.reap();
            if let Some(res) = self.op_result.take() {
                return result(res);
            }
            if ended.is_some() {
                break;
            }
        }
        let why = ended.unwrap_or_else(|| ErrorKind::Interrupted.into());
        self.cancel(why)
    }

    /// Cancels the operation in flight and waits for its completion and the cancellation's:
    /// the operation's result if it completed after all, else `why`.
    #[cold]
    fn cancel(&mut self, why: io::Error) -> io::Result<i32> {
        self.cancel_done = false;
        let e = opcode::AsyncCancel::new(OP_TAG).build().user_data(CANCEL_TAG);
        // SAFETY: a cancellation points at no memory.
        let pushed = unsafe { self.ring.submission().push(&e) }.is_ok();
        let deadline = Instant::now() + CANCEL_GRACE;
        let ts = types::Timespec::from(Duration::from_millis(100));
        let args = types::SubmitArgs::new().timespec(&ts);
        let mut result_seen = None;
        loop {
            // Signals and short deadlines only make this look again, until the grace is over.
            if let Ok(n) = self.ring.submitter().submit_with_args(1, &args) {
                self.counts.submitted += n as u64;
            }
            self.reap();
            if let Some(r) = self.op_result.take() {
                result_seen = Some(r);
            }
            if let Some(r) = result_seen
                && (self.cancel_done || !pushed)
            {
                return match r {
                    r if r == -libc::ECANCELED || r == -libc::EINTR => Err(why),
                    r => result(r),
                };
            }
            if Instant::now() > deadline {
                abort_in_flight();
            }
        }
    }

    /// Reaps every completion there: this ring's own (the operation in flight, its
    /// cancellation) and messages posted by another ring (stashed).
    #[inline]
    fn reap(&mut self) {
        let Ring { ring, counts, stash, op_result, cancel_done } = self;
        for cqe in ring.completion() {
            match cqe.user_data() {
                OP_TAG => {
                    counts.completed += 1;
                    *op_result = Some(cqe.result());
                }
                CANCEL_TAG => {
                    counts.completed += 1;
                    *cancel_done = true;
                }
                u if u & OWN != 0 => counts.completed += 1,
                user_data => {
                    counts.received += 1;
                    if stash.len() < STASH {
                        stash.push_back(Message { user_data, value: cqe.result() });
                    }
                }
            }
        }
    }
}

/// A completion's result as a count or an error.
#[inline]
fn result(res: i32) -> io::Result<i32> {
    if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res) }
}

/// `ETIME` (the wait's deadline) as `TimedOut`; anything else as it is (`EINTR`: `Interrupted`).
fn wait_error(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ETIME) { ErrorKind::TimedOut.into() } else { e }
}

/// The kernel holds a buffer this process is about to give back: stop here.
#[cold]
fn abort_in_flight() -> ! {
    const MSG: &[u8] = b"osprim: an io_uring operation neither completed nor was cancelled within 5 s; aborting rather than free a buffer the kernel may still use\n";
    // SAFETY: writes a static buffer to the standard error descriptor.
    unsafe { libc::write(2, MSG.as_ptr().cast(), MSG.len()) };
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    const WAIT: Duration = Duration::from_secs(5);

    /// A ring, or `None` where io_uring is absent (the reason printed, the test passes).
    fn ring(entries: u32) -> Option<Ring> {
        match Ring::new(entries) {
            Ok(r) => Some(r),
            Err(SetupError::Unavailable(why)) => {
                eprintln!("io_uring absent: {why}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn absence_is_recognised_from_the_error_and_the_sysctl() {
        let eperm = io::Error::from_raw_os_error(libc::EPERM);
        let enosys = io::Error::from_raw_os_error(libc::ENOSYS);
        let einval = io::Error::from_raw_os_error(libc::EINVAL);
        assert!(absence(&eperm, Some(2)).unwrap().contains("io_uring_disabled is 2"));
        assert!(absence(&eperm, Some(1)).unwrap().contains("io_uring_group"));
        assert!(absence(&eperm, Some(0)).unwrap().contains("seccomp"));
        assert!(absence(&enosys, None).unwrap().contains("ENOSYS"));
        assert_eq!(absence(&einval, Some(0)), None, "a bad argument is an error, not an absence");
        let skip = io::Error::from(SetupError::Unavailable("x".into()));
        assert_eq!(skip.kind(), ErrorKind::Unsupported);
    }

    #[test]
    fn nop_batches_complete_every_nop_with_its_user_data() {
        let Some(mut r) = ring(128) else { return };
        let mut first = 1;
        for n in [1, 8, 32, 128] {
            let b = r.nop_batch(n, first).unwrap();
            assert_eq!(b, Batch { completed: n, wrong: 0 });
            first += u64::from(n);
        }
        let c = r.counts();
        assert_eq!((c.submitted, c.completed, c.received, c.cq_overflow, c.sq_dropped), (169, 169, 0, 0, 0));
        assert!(r.nop_batch(129, 1).is_err(), "more than the ring holds");
        assert!(r.nop_batch(1, OWN).is_err(), "user data with the ring's own bit");
    }

    #[test]
    fn reads_and_writes_on_a_pipe_move_the_bytes_and_count_their_completions() {
        let Some(mut r) = ring(8) else { return };
        let (rd, wr) = nix::unistd::pipe().unwrap();
        assert_eq!(r.write(wr.as_fd(), b"hello, ring", WAIT).unwrap(), 11);
        let mut buf = [0u8; 64];
        let n = r.read(rd.as_fd(), &mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"hello, ring");
        let c = r.counts();
        assert_eq!((c.submitted, c.completed), (2, 2));
        // A file, at its position, as read(2) and write(2).
        let mut f = tempfile::tempfile().unwrap();
        assert_eq!(r.write(f.as_fd(), b"abcdef", WAIT).unwrap(), 6);
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(2)).unwrap();
        let n = r.read(f.as_fd(), &mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"cdef");
        let bad = r.read(write_only_end().as_fd(), &mut buf, WAIT);
        assert!(bad.is_err(), "a read of a write-only end fails: {bad:?}");
    }

    /// A write-only pipe end (reading it is `EBADF`).
    fn write_only_end() -> OwnedFd {
        let (_rd, wr) = nix::unistd::pipe().unwrap();
        wr
    }

    #[test]
    fn a_read_with_nothing_to_read_ends_at_its_deadline_and_is_cancelled() {
        let Some(mut r) = ring(8) else { return };
        let (rd, wr) = nix::unistd::pipe().unwrap();
        let mut buf = [0u8; 16];
        let t0 = Instant::now();
        let e = r.read(rd.as_fd(), &mut buf, Duration::from_millis(30)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
        assert!(t0.elapsed() < CANCEL_GRACE);
        // The read and its cancellation both completed: nothing is left in flight, and a
        // later write is read by the next read, not by the cancelled one.
        let c = r.counts();
        assert_eq!(c.completed, c.submitted, "{c:?}");
        r.write(wr.as_fd(), b"late", WAIT).unwrap();
        let n = r.read(rd.as_fd(), &mut buf, WAIT).unwrap();
        assert_eq!(&buf[..n], b"late");
    }

    #[test]
    fn a_read_waits_for_a_writer_on_another_thread() {
        let Some(mut r) = ring(8) else { return };
        let (rd, wr) = nix::unistd::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            nix::unistd::write(&wr, b"x").unwrap();
        });
        let mut buf = [0u8; 1];
        assert_eq!(r.read(rd.as_fd(), &mut buf, WAIT).unwrap(), 1);
        writer.join().unwrap();
    }

    #[test]
    fn msg_ring_posts_arrive_in_order_on_the_other_ring() {
        if let Some(why) = msg_ring_unavailable() {
            eprintln!("MSG_RING absent: {why}");
            return;
        }
        let (Some(mut a), Some(mut b)) = (ring(8), ring(8)) else { return };
        let to_b = b.try_clone_fd().unwrap();
        let receiver = std::thread::spawn(move || {
            let mut got = Vec::new();
            for _ in 0..100 {
                got.push(b.wait_message(WAIT).unwrap());
            }
            (got, b.counts())
        });
        for seq in 1..=100u64 {
            a.post(to_b.as_fd(), seq, seq as i32 * 3, WAIT).unwrap();
        }
        let (got, cb) = receiver.join().unwrap();
        let want: Vec<Message> = (1..=100).map(|s| Message { user_data: s, value: s as i32 * 3 }).collect();
        assert_eq!(got, want);
        let ca = a.counts();
        assert_eq!((ca.submitted, ca.completed, ca.received), (100, 100, 0));
        assert_eq!((cb.submitted, cb.completed, cb.received, cb.cq_overflow), (0, 0, 100, 0));
        assert!(a.post(to_b.as_fd(), OWN, 0, WAIT).is_err(), "user data with the ring's own bit");
    }

    #[test]
    fn a_wait_for_a_message_ends_at_its_deadline() {
        let Some(mut r) = ring(8) else { return };
        let e = r.wait_message(Duration::from_millis(20)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    }

    /// In a forked child, a seccomp filter that answers `io_uring_setup` with `EPERM` (as
    /// container runtimes' default profiles do) makes the ring's creation an absence with a
    /// reason, not an error.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_seccomp_filter_that_refuses_io_uring_is_an_absence() {
        let _serial = crate::testing::serial();
        let mut child = crate::process::fork_peer(|| {
            if refuse_io_uring_setup().is_err() {
                return 2;
            }
            match Ring::new(2) {
                Err(SetupError::Unavailable(why)) if why.contains("EPERM") || why.contains("io_uring_disabled") => 0,
                _ => 1,
            }
        })
        .unwrap();
        assert_eq!(child.finish(WAIT), crate::reap::Reaped::Exited(0));
    }

    /// Installs a seccomp filter on this process that fails `io_uring_setup` with `EPERM`
    /// and allows every other call (on x86_64; another architecture's calls are all allowed).
    #[cfg(target_arch = "x86_64")]
    fn refuse_io_uring_setup() -> io::Result<()> {
        const RET_ALLOW: u32 = 0x7fff_0000;
        const RET_ERRNO: u32 = 0x0005_0000;
        let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
        let jump = |k: u32, jt: u8, jf: u8| libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        };
        let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
        let ret = libc::BPF_RET | libc::BPF_K;
        let mut prog = [
            stmt(load, 4),           // seccomp_data.arch
            jump(0xc000_003e, 0, 3), // AUDIT_ARCH_X86_64, else allow
            stmt(load, 0),           // seccomp_data.nr
            jump(libc::SYS_io_uring_setup as u32, 0, 1),
            stmt(ret, RET_ERRNO | libc::EPERM as u32),
            stmt(ret, RET_ALLOW),
        ];
        let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_mut_ptr() };
        // SAFETY: prctl with integer arguments, then with a pointer to a filter program on this
        // frame, which the kernel copies before returning.
        let rc = unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog)
        };
        if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }

    #[test]
    fn the_probe_answers() {
        // On this machine's kernel io_uring may or may not be there; the probe agrees with a
        // ring's own creation either way.
        assert_eq!(unavailable().is_none(), Ring::new(2).is_ok());
    }
}
