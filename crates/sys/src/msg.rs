//! System V message queues (`msgget`, `msgsnd`, `msgrcv`, `msgctl`), which neither std nor
//! nix wraps. A queue is private (`IPC_PRIVATE`, reachable only by its id) and removed
//! (`IPC_RMID`) by a **janitor** process when the queue is dropped *or* osprim dies, even by
//! `SIGKILL`.
//!
//! **Why a janitor.** A System V queue belongs to no process: unlike a file descriptor, it
//! outlives its creator, and unlike a shared memory segment it cannot be marked for removal
//! while in use — `IPC_RMID` destroys a queue at once (waiters get `EIDRM`), so it can only be
//! removed after both ends are done. Nothing in osprim can run after a `SIGKILL`, and a peer
//! process dies with osprim (`PR_SET_PDEATHSIG`), so the remover must be a process that
//! survives osprim: right after `msgget`, osprim forks a janitor that blocks every signal and
//! waits on a pipe whose write end only osprim holds (the janitor closes its copy). The pipe
//! reads end-of-file when osprim closes that end — when the [`MsgQueue`] is dropped, or when
//! the kernel closes every descriptor of a dying osprim — and the janitor then removes the
//! queue and exits. Only the janitor removes the queue, so an id is never removed twice
//! (ids are reused); on a normal drop osprim waits for it (up to [`JANITOR_WAIT`], in case a
//! process forked meanwhile still holds the pipe, after which osprim kills it and removes
//! the queue itself). What is left: a `SIGKILL` in the microseconds between `msgget` and the
//! fork.
//!
//! A message buffer is laid out as the kernel expects: an 8-byte `long` message type, then
//! the text.
//!
//! # Safety
//! Every call passes a buffer the caller owns together with its true length minus the 8-byte
//! type prefix, which is the size the kernel reads or writes. The forked janitor makes only
//! async-signal-safe system calls (`pthread_sigmask`, `close`, `read`, `msgctl`, `_exit`) and
//! touches no memory another thread of the parent could have held locked.
#![allow(unsafe_code)]

use std::time::Duration;

/// How long dropping a queue waits for its janitor to remove it.
pub const JANITOR_WAIT: Duration = Duration::from_secs(2);

/// Bytes before the text in a message buffer (the `long mtype`).
pub const TYPE_BYTES: usize = std::mem::size_of::<libc::c_long>();

/// A private System V message queue, removed by its janitor.
#[derive(Debug)]
pub struct MsgQueue {
    id: libc::c_int,
    janitor: Janitor,
}

/// The process that removes a queue (see the module doc).
#[derive(Debug)]
struct Janitor {
    child: super::process::Child,
    /// The pipe's write end; closing it tells the janitor to remove the queue.
    tell: Option<std::os::fd::OwnedFd>,
}

impl MsgQueue {
    /// Creates a private queue readable and writable by this user only, and its janitor.
    pub fn private() -> std::io::Result<MsgQueue> {
        // SAFETY: no pointer arguments.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(std::io::Error::last_os_error());
        }
        match Janitor::start(id) {
            Ok(janitor) => Ok(MsgQueue { id, janitor }),
            Err(e) => {
                remove(id);
                Err(e)
            }
        }
    }

    /// The janitor's pid.
    pub fn janitor_pid(&self) -> i32 {
        self.janitor.child.pid()
    }

    /// The queue's identifier (as listed in `/proc/sysvipc/msg`).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Raises the queue's capacity (`msg_qbytes`) to at least `bytes`.
    pub fn reserve(&self, bytes: usize) -> std::io::Result<()> {
        // SAFETY: `ds` is a plain C struct the kernel fills (IPC_STAT) and reads (IPC_SET).
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::msgctl(self.id, libc::IPC_STAT, &mut ds) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if (ds.msg_qbytes as usize) >= bytes {
            return Ok(());
        }
        ds.msg_qbytes = bytes as _;
        // SAFETY: as above.
        if unsafe { libc::msgctl(self.id, libc::IPC_SET, &mut ds) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends `buf` (type prefix then text) with message type `mtype` (> 0).
    #[inline(always)]
    pub fn send(&self, buf: &mut [u8], mtype: libc::c_long) -> std::io::Result<()> {
        assert!(buf.len() >= TYPE_BYTES);
        buf[..TYPE_BYTES].copy_from_slice(&mtype.to_ne_bytes());
        // SAFETY: `buf` holds the type and `len - TYPE_BYTES` bytes of text.
        let rc = unsafe { libc::msgsnd(self.id, buf.as_ptr().cast(), buf.len() - TYPE_BYTES, 0) };
        if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Receives the next message of type `mtype` into `buf`; returns the text's length.
    #[inline(always)]
    pub fn recv(&self, buf: &mut [u8], mtype: libc::c_long) -> std::io::Result<usize> {
        assert!(buf.len() >= TYPE_BYTES);
        // SAFETY: the kernel writes the type and at most `len - TYPE_BYTES` bytes of text.
        let rc = unsafe { libc::msgrcv(self.id, buf.as_mut_ptr().cast(), buf.len() - TYPE_BYTES, mtype, 0) };
        if rc < 0 { Err(std::io::Error::last_os_error()) } else { Ok(rc as usize) }
    }
}

/// Removes queue `id`.
fn remove(id: libc::c_int) {
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
}

impl Janitor {
    /// Forks the janitor of queue `id`.
    fn start(id: libc::c_int) -> std::io::Result<Janitor> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two fresh descriptors, each owned once from here on.
        let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let (r, w) = (read_end.as_raw_fd(), write_end.as_raw_fd());
        // SAFETY: the child runs `janitor`, which makes async-signal-safe calls only, and `_exit`s.
        let child = unsafe { super::process::fork_survivor(move || janitor(id, r, w)) }?;
        drop(read_end);
        Ok(Janitor { child, tell: Some(write_end) })
    }
}

/// The janitor's life: ignore every signal it can, wait for end-of-file, remove, exit.
fn janitor(id: libc::c_int, read_end: libc::c_int, write_end: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls on a stack-allocated set and this process's descriptors.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        libc::close(write_end);
        let mut byte = 0u8;
        loop {
            let n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                break;
            }
        }
        remove(id);
        libc::_exit(0)
    }
}

impl Drop for MsgQueue {
    fn drop(&mut self) {
        // Closing the pipe tells the janitor to remove the queue; wait until it has. Should it
        // not end in time (a process forked meanwhile holds the pipe open), it is killed — it
        // blocks every signal, so only that kill can end it so — and the queue removed here.
        self.janitor.tell = None;
        if let crate::reap::Reaped::Signaled { .. } | crate::reap::Reaped::Lost(_) =
            self.janitor.child.finish(JANITOR_WAIT)
        {
            remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_goes_through_and_the_queue_is_removed() {
        let q = MsgQueue::private().unwrap();
        let id = q.id();
        let mut out = vec![0u8; TYPE_BYTES + 5];
        out[TYPE_BYTES..].copy_from_slice(b"hello");
        q.send(&mut out, 2).unwrap();
        let mut inb = vec![0u8; TYPE_BYTES + 5];
        assert_eq!(q.recv(&mut inb, 2).unwrap(), 5);
        assert_eq!(&inb[TYPE_BYTES..], b"hello");
        drop(q);
        assert!(!listed(id));
    }

    fn listed(id: i32) -> bool {
        let text = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
        text.lines().skip(1).any(|l| l.split_whitespace().nth(1) == Some(&id.to_string()))
    }

    #[test]
    fn the_janitor_removes_the_queue_when_its_owner_dies_without_dropping_it() {
        let _serial = crate::testing::serial();
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child makes a queue (no allocation: msgget, pipe2, fork), writes its id
        // with `write` and leaves with `_exit`, dropping nothing, as a killed osprim would.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            let id = MsgQueue::private().map(|q| {
                let id = q.id();
                std::mem::forget(q);
                id
            });
            let id = id.unwrap_or(-1);
            // SAFETY: writes 4 bytes from the stack, then exits.
            unsafe {
                libc::write(fds[1], (&id as *const i32).cast(), 4);
                libc::_exit(0);
            }
        }
        let mut id = -1i32;
        // SAFETY: closes our copy of the write end; reads 4 bytes into the stack.
        unsafe {
            libc::close(fds[1]);
            libc::read(fds[0], (&mut id as *mut i32).cast(), 4);
            libc::close(fds[0]);
        }
        crate::reap::reap_by(child, std::time::Instant::now() + Duration::from_secs(30));
        assert!(id >= 0, "the child made a queue");
        let began = std::time::Instant::now();
        while listed(id) && began.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!listed(id), "the janitor removed queue {id}");
    }
}
