//! System V message queues (`msgget`, `msgsnd`, `msgrcv`, `msgctl`), which neither std nor
//! nix wraps. A queue is private (`IPC_PRIVATE`) and removed (`IPC_RMID`) when dropped.
//!
//! A message buffer is laid out as the kernel expects: an 8-byte `long` message type, then
//! the text.
//!
//! # Safety
//! Every call passes a buffer the caller owns together with its true length minus the 8-byte
//! type prefix, which is the size the kernel reads or writes.
#![allow(unsafe_code)]

/// Bytes before the text in a message buffer (the `long mtype`).
pub const TYPE_BYTES: usize = std::mem::size_of::<libc::c_long>();

/// A private System V message queue.
#[derive(Debug)]
pub struct MsgQueue {
    id: libc::c_int,
}

impl MsgQueue {
    /// Creates a private queue readable and writable by this user only.
    pub fn private() -> std::io::Result<MsgQueue> {
        // SAFETY: no pointer arguments.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 { Err(std::io::Error::last_os_error()) } else { Ok(MsgQueue { id }) }
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

impl Drop for MsgQueue {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::msgctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
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
        let listed = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
        assert!(!listed.lines().skip(1).any(|l| l.split_whitespace().nth(1) == Some(&id.to_string())));
    }
}
