//! IPC transports: how a message gets from one end to the other. Each [`Transport`] opens a
//! pair of [`Endpoint`]s, one for the measuring side and one for the peer (a thread, or a
//! process forked afterwards, which inherits every descriptor).
//!
//! **Messages.** A transport that carries bytes sends `8 + payload` bytes: an 8-byte sequence
//! number, then the payload. An "empty" message is the sequence number alone. `eventfd`,
//! `futex` and `spin` carry no payload: the sequence number is the doorbell's value itself (the
//! eventfd count, the futex or spin word). So every message, of every transport, says which it
//! is, and a lost, duplicated or reordered one is caught.
//!
//! **Buffers.** A [`Msg`] keeps 8 bytes of headroom before the message for transports whose
//! system call wants a prefix (System V's message type), so no transport copies the message.
//!
//! **Shared memory: `shm_ring` sleeps, `spin` never does.** `shm_ring` is a byte ring per
//! direction in a `memfd` ([`sys::ring`]: its descriptor closed once mapped, the mapping
//! inherited by a forked peer and gone with both processes), each sized at open to a power of
//! two of at least one whole message, so a message never meets a ring too small for it (a
//! larger one is not possible by construction; the ring would refuse it). The sender copies
//! the message in and publishes it; the receiver, finding the ring empty, announces that it
//! sleeps and sleeps on a futex word, and the sender wakes it — a system call only when it
//! announced so, with `SeqCst` fences on both sides so that no wake-up is lost. There is no
//! spinning before the sleep: the point of the row is a sleeping receiver (the futex wake path
//! plus a copy). `spin` is the opposite: a polled word, no kernel, never asleep, so it needs
//! two CPUs. A full ring (not met in a ping-pong, where each ring holds one message at a
//! time) makes the sender sleep the same way on a second futex word.
//!
//! **io_uring: a ring per end.** `io_uring` is `pipe`'s pipes with every write and read an
//! `IORING_OP_WRITE`/`IORING_OP_READ` submitted to the end's own ring and waited for in the
//! same `io_uring_enter` ([`sys::uring`]: one operation per enter, the dearest way to use a
//! ring; the call returns only once the kernel is done with the message's buffer). A forked
//! peer drives the ring made for its end before the fork. `io_uring_msg` needs no descriptor
//! but the rings': the sender copies the message into a byte ring of shared memory (as
//! `shm_ring`'s, sized to hold it whole, so the write never waits) and then posts one
//! `IORING_OP_MSG_RING` completion into the other ring, carrying the sequence number as its
//! user data and the length as its result; the receiver waits in `io_uring_enter` for one
//! completion, checks both against the bytes, and takes them (already there). The post names
//! the other ring by a descriptor of this process, and a ring is driven by the process that
//! made it, so `io_uring_msg` is for two threads ([`Transport::threads_only`]). Each end keeps
//! its ring's account ([`Endpoint::ring_counts`]). Both are skipped where io_uring is absent
//! ([`Transport::unavailable`]).
//!
//! Sockets are socket pairs or loopback sockets bound to port 0: no file is created. POSIX
//! queues are unlinked as soon as both ends are open. A System V queue cannot be: it is
//! removed by a janitor process that outlives even a SIGKILL of osprim ([`MsgQueue`]).
//!
//! **Waits that end.** Every receive, and every send that can block, is the transport's plain
//! blocking call (or, for `futex`, `shm_ring` and `spin`, a wait that looks around every
//! `POLL_EVERY` / `SPINS_PER_LOOK` spins): nothing is added to the timed path. A wait is
//! ended from outside by a signal whose handler is installed without `SA_RESTART`
//! (`pingpong`'s watchdog sends it), so every call returns `EINTR`: `read` and `write` on
//! pipes and stream sockets, `recv`/`send` on datagram sockets, `mq_receive`/`mq_send`,
//! `msgrcv`/`msgsnd`, `read` on an eventfd, `FUTEX_WAIT` (`futex`; `shm_ring`, which takes
//! or publishes a message whole, so a signal never leaves half of one), `io_uring_enter` (the
//! io_uring transports: the operation in flight is cancelled and reaped first, and a wait
//! also ends at `POLL_EVERY`, a retry like a futex wait's). A signal before the
//! first byte of a message is an [`is_retry`] error, so the caller looks at why it was woken; a signal in
//! the middle of a message on a byte stream goes on with the message, unless the shared
//! give-up word is set (the session is being abandoned), and then fails with
//! `ErrorKind::ConnectionAborted`. This is why the byte streams use their own
//! `read_exact` and `write_all` (std's `write_all` retries after `EINTR` and would never
//! return while the other end is stopped); they make the same system calls as std's.

use nix::mqueue::{MQ_OFlag, MqAttr, MqdT, mq_close, mq_open, mq_receive, mq_send, mq_unlink};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use nix::sys::stat::Mode;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
pub use sys::ring::SleepCounts;
use sys::{futex, msg::MsgQueue, ring, shm::SharedMem};

/// Sequence numbers start at 1 (an eventfd cannot carry 0); this one tells the peer to stop.
pub const STOP: u32 = u32::MAX;

/// Bytes of the sequence number at the head of a payload-carrying message.
pub const HEADER_BYTES: usize = 8;

/// Headroom kept before the message in a [`Msg`] (System V's `long` message type).
const HEADROOM: usize = sys::msg::TYPE_BYTES;

/// Largest UDP payload over IPv4.
const UDP_MAX: usize = 65_507;

/// How long a futex or spin wait goes before returning to let its caller look around.
pub const POLL_EVERY: Duration = Duration::from_millis(50);

/// Spins between looks around while spinning.
const SPINS_PER_LOOK: u32 = 1 << 16;

/// Defines [`Transport`] and everything named after a transport from one table: each entry
/// gives the variant, the name used in ids, what a message goes through, and the one-line
/// descriptions of its `ipc.<name>` and `xfer.<name>` benchmarks. The ids `ipc.<name>`,
/// `xfer.<name>` and `rpc.<name>` are spelt out from the name here, and `registry.rs`
/// registers one benchmark of each kind per entry: a transport is added in one place.
macro_rules! transports {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $name:literal {
            what: $what:literal,
            ipc: $ipc:literal,
            xfer: $xfer:literal $(,)?
        }
    )*) => {
        /// The IPC mechanisms osprim measures.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Transport {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Transport {
            /// How many transports there are.
            pub const COUNT: usize = [$(stringify!($variant)),*].len();

            /// Every transport, in the order benchmarks are listed.
            pub const ALL: [Transport; Transport::COUNT] = [$(Transport::$variant),*];

            /// The name used in benchmark ids.
            pub const fn name(self) -> &'static str {
                match self { $(Transport::$variant => $name,)* }
            }

            /// One line on what a message goes through.
            pub const fn what(self) -> &'static str {
                match self { $(Transport::$variant => $what,)* }
            }

            /// `ipc.<name>`.
            pub const fn ipc_id(self) -> &'static str {
                match self { $(Transport::$variant => concat!("ipc.", $name),)* }
            }

            /// `rpc.<name>`.
            pub const fn rpc_id(self) -> &'static str {
                match self { $(Transport::$variant => concat!("rpc.", $name),)* }
            }

            /// `xfer.<name>`.
            pub const fn xfer_id(self) -> &'static str {
                match self { $(Transport::$variant => concat!("xfer.", $name),)* }
            }

            /// The `osprim list` line of `ipc.<name>`.
            pub const fn ipc_about(self) -> &'static str {
                match self { $(Transport::$variant => $ipc,)* }
            }

            /// The `osprim list` line of `xfer.<name>`.
            pub const fn xfer_about(self) -> &'static str {
                match self { $(Transport::$variant => $xfer,)* }
            }
        }
    };
}

transports! {
    /// `pipe(2)`, one per direction.
    Pipe = "pipe" {
        what: "a pipe per direction (write/read)",
        ipc: "one-way message through a pipe (half a ping-pong)",
        xfer: "one-way transfer through a pipe: sender's stamp to receiver's stamp",
    }
    /// `AF_UNIX` `SOCK_STREAM` socket pair.
    UnixStream = "unix_stream" {
        what: "a Unix stream socket pair",
        ipc: "one-way message through a Unix stream socket pair (half a ping-pong)",
        xfer: "one-way transfer through a Unix stream socket: stamp to stamp",
    }
    /// `AF_UNIX` `SOCK_DGRAM` socket pair.
    UnixDgram = "unix_dgram" {
        what: "a Unix datagram socket pair",
        ipc: "one-way message through a Unix datagram socket pair (half a ping-pong)",
        xfer: "one-way transfer through a Unix datagram socket: stamp to stamp",
    }
    /// `AF_UNIX` `SOCK_SEQPACKET` socket pair.
    UnixSeqpacket = "unix_seqpacket" {
        what: "a Unix seqpacket socket pair",
        ipc: "one-way message through a Unix seqpacket socket pair (half a ping-pong)",
        xfer: "one-way transfer through a Unix seqpacket socket: stamp to stamp",
    }
    /// `eventfd(2)`, one per direction; no payload.
    Eventfd = "eventfd" {
        what: "an eventfd per direction (no payload)",
        ipc: "one-way eventfd notification, no payload (half a ping-pong)",
        xfer: "one-way eventfd notification: stamp to stamp",
    }
    /// A futex word in shared memory per direction; no payload.
    Futex = "futex" {
        what: "a futex word per direction in shared memory (no payload)",
        ipc: "one-way futex wake of a waiter, no payload (half a ping-pong)",
        xfer: "one-way futex wake: stamp to stamp",
    }
    /// A word in shared memory per direction, polled; no kernel; no payload.
    Spin = "spin" {
        what: "a polled word in shared memory, no kernel (no payload; two CPUs only)",
        ipc: "one-way store seen by a spinning reader on another CPU, no kernel (half a ping-pong)",
        xfer: "one-way store to a spinning reader on another CPU: stamp to stamp",
    }
    /// A byte ring per direction in shared memory (a memfd), whose reader sleeps on a futex
    /// when it finds the ring empty ([`sys::ring`]).
    ShmRing = "shm_ring" {
        what: "a shared-memory byte ring per direction, the reader asleep on a futex when it is empty",
        ipc: "one-way message through a shared-memory ring to a reader asleep on a futex (half a ping-pong)",
        xfer: "one-way transfer through a shared-memory ring to a sleeping reader: stamp to stamp",
    }
    /// POSIX message queues (`mq_send`/`mq_receive`), one per direction.
    PosixMq = "posix_mq" {
        what: "a POSIX message queue per direction",
        ipc: "one-way message through a POSIX message queue (half a ping-pong)",
        xfer: "one-way transfer through a POSIX message queue: stamp to stamp",
    }
    /// One System V message queue, a message type per direction.
    SysvMsg = "sysv_msg" {
        what: "a System V message queue",
        ipc: "one-way message through a System V message queue (half a ping-pong)",
        xfer: "one-way transfer through a System V message queue: stamp to stamp",
    }
    /// TCP over loopback, `TCP_NODELAY`.
    Tcp = "tcp" {
        what: "TCP over loopback (TCP_NODELAY)",
        ipc: "one-way message over loopback TCP (half a ping-pong)",
        xfer: "one-way transfer over loopback TCP: stamp to stamp",
    }
    /// UDP over loopback.
    Udp = "udp" {
        what: "UDP over loopback",
        ipc: "one-way datagram over loopback UDP (half a ping-pong)",
        xfer: "one-way transfer over loopback UDP: stamp to stamp",
    }
    /// A pipe per direction driven by io_uring reads and writes, a ring per end, each
    /// operation submitted and waited for ([`sys::uring`]).
    IoUring = "io_uring" {
        what: "a pipe per direction driven by io_uring reads and writes (a ring per end, one operation per io_uring_enter)",
        ipc: "one-way message through a pipe by io_uring write and read, one operation per io_uring_enter (half a ping-pong)",
        xfer: "one-way transfer through a pipe by io_uring write and read: stamp to stamp",
    }
    /// Two rings: a message is an `IORING_OP_MSG_RING` post to the other ring (user data the
    /// sequence number, result the length), its bytes in a shared-memory ring; threads only.
    IoUringMsg = "io_uring_msg" {
        what: "two io_uring rings, a message an IORING_OP_MSG_RING post to the other (its bytes in shared memory; threads only)",
        ipc: "one-way IORING_OP_MSG_RING post from one ring to another's waiting thread, bytes in shared memory (half a ping-pong)",
        xfer: "one-way IORING_OP_MSG_RING post to another ring's waiting thread: stamp to stamp",
    }
}

impl Transport {
    /// Whether messages carry a payload (and so take part in size sweeps).
    pub fn carries_payload(self) -> bool {
        !matches!(self, Transport::Eventfd | Transport::Futex | Transport::Spin)
    }

    /// Whether both ends must run on different CPUs (a spinning receiver would keep a lone
    /// CPU from ever running the sender).
    pub fn needs_two_cpus(self) -> bool {
        self == Transport::Spin
    }

    /// Why this transport cannot join a ping-pong whose peer is a forked process, if it
    /// cannot.
    pub fn threads_only(self) -> Option<&'static str> {
        (self == Transport::IoUringMsg).then_some(
            "not applicable between processes: IORING_OP_MSG_RING names the other ring by a descriptor of this \
             process, and a ring is driven by the process that made it (the row is for two threads)",
        )
    }

    /// Why this transport cannot be used on this machine or in this process, if it cannot
    /// (io_uring absent or disabled, or without `IORING_OP_MSG_RING`).
    pub fn unavailable(self) -> Option<String> {
        match self {
            Transport::IoUring => sys::uring::unavailable(),
            Transport::IoUringMsg => sys::uring::msg_ring_unavailable(),
            _ => None,
        }
    }

    /// Bytes on the wire for a payload of `payload` bytes.
    pub fn message_bytes(self, payload: usize) -> usize {
        if self.carries_payload() { HEADER_BYTES + payload } else { 0 }
    }

    /// A size limit known before trying, as the reason the size cannot be measured.
    pub fn size_limit(self, message_bytes: usize) -> Option<String> {
        match self {
            Transport::Udp if message_bytes > UDP_MAX => {
                Some(format!("a UDP datagram carries at most {UDP_MAX} bytes; this message is {message_bytes}"))
            }
            Transport::SysvMsg => {
                let max = read_sysctl("/proc/sys/kernel/msgmax")?;
                (message_bytes > max).then(|| {
                    format!("kernel.msgmax is {max} bytes; this message is {message_bytes} (System V queues refuse it)")
                })
            }
            _ => None,
        }
    }

    /// Opens both ends, sized for messages of `message_bytes`. `shared` provides the words of
    /// `futex` and `spin` (slots `word_slots.0` and `.1`, one per direction) and the give-up
    /// word (slot `give_up`: non-zero, a message half moved when a wait is interrupted is
    /// abandoned).
    pub fn open(
        self,
        message_bytes: usize,
        shared: &Arc<SharedMem>,
        word_slots: (usize, usize),
        give_up: usize,
    ) -> std::io::Result<(Endpoint, Endpoint)> {
        let end = |kind: Kind| Endpoint { kind, shared: shared.clone(), give_up };
        let pair = |a: Kind, b: Kind| (end(a), end(b));
        Ok(match self {
            Transport::Pipe => {
                let ((r1, w1), (r2, w2)) = (pipe_for(message_bytes)?, pipe_for(message_bytes)?);
                pair(Kind::Stream(File::from(r2), File::from(w1)), Kind::Stream(File::from(r1), File::from(w2)))
            }
            Transport::UnixStream => {
                let (a, b) = UnixStream::pair()?;
                let (a2, b2) = (a.try_clone()?, b.try_clone()?);
                pair(Kind::Unix(a, a2), Kind::Unix(b, b2))
            }
            Transport::UnixDgram => {
                let (a, b) = UnixDatagram::pair()?;
                size_socket_buffers(&[&a, &b], message_bytes);
                pair(Kind::Dgram(a), Kind::Dgram(b))
            }
            Transport::UnixSeqpacket => {
                let (a, b) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC)?;
                size_socket_buffers(&[&a, &b], message_bytes);
                pair(Kind::Packet(File::from(a)), Kind::Packet(File::from(b)))
            }
            Transport::Eventfd => {
                let new = || EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC);
                let (to_peer, to_measurer) = (Arc::new(new()?), Arc::new(new()?));
                pair(
                    Kind::Eventfd { rx: to_measurer.clone(), tx: to_peer.clone() },
                    Kind::Eventfd { rx: to_peer, tx: to_measurer },
                )
            }
            Transport::Futex | Transport::Spin => {
                let spin = self == Transport::Spin;
                let (a, b) = word_slots;
                let end = |rx, tx| Kind::Word { shared: shared.clone(), rx, tx, spin, last: 0 };
                pair(end(b, a), end(a, b))
            }
            Transport::ShmRing => {
                // Each ring holds a whole message (so a write never waits on an empty ring).
                let (to_peer, from_measurer) = ring::pair(message_bytes)?;
                let (to_measurer, from_peer) = ring::pair(message_bytes)?;
                pair(Kind::Ring { tx: to_peer, rx: from_peer }, Kind::Ring { tx: to_measurer, rx: from_measurer })
            }
            Transport::PosixMq => {
                let (to_peer, to_measurer) = (open_mq(message_bytes, "a")?, open_mq(message_bytes, "b")?);
                let (to_peer, to_measurer) = (Arc::new(to_peer), Arc::new(to_measurer));
                pair(
                    Kind::Mq { rx: to_measurer.clone(), tx: to_peer.clone() },
                    Kind::Mq { rx: to_peer, tx: to_measurer },
                )
            }
            Transport::SysvMsg => {
                let q = Arc::new(MsgQueue::private()?);
                // Room for one message each way.
                q.reserve(2 * message_bytes.max(1))?;
                pair(Kind::Sysv { q: q.clone(), rx: 2, tx: 1 }, Kind::Sysv { q, rx: 1, tx: 2 })
            }
            Transport::Tcp => {
                let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
                let a = TcpStream::connect(listener.local_addr()?)?;
                let (b, _) = listener.accept()?;
                for s in [&a, &b] {
                    s.set_nodelay(true)?;
                }
                let (a2, b2) = (a.try_clone()?, b.try_clone()?);
                pair(Kind::Tcp(a, a2), Kind::Tcp(b, b2))
            }
            Transport::Udp => {
                let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
                let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
                a.connect(b.local_addr()?)?;
                b.connect(a.local_addr()?)?;
                size_socket_buffers(&[&a, &b], message_bytes);
                pair(Kind::Udp(a), Kind::Udp(b))
            }
            Transport::IoUring => {
                // The pipes as `pipe`'s; a ring per end, made here (before a fork): each end's
                // process drives only its own.
                let ((r1, w1), (r2, w2)) = (pipe_for(message_bytes)?, pipe_for(message_bytes)?);
                let ring = || sys::uring::Ring::new(URING_ENTRIES);
                pair(
                    Kind::UringPipe { ring: Box::new(ring()?), r: r2, w: w1 },
                    Kind::UringPipe { ring: Box::new(ring()?), r: r1, w: w2 },
                )
            }
            Transport::IoUringMsg => {
                if let Some(why) = sys::uring::msg_ring_unavailable() {
                    return Err(std::io::Error::new(ErrorKind::Unsupported, why));
                }
                let (a, b) = (sys::uring::Ring::new(URING_ENTRIES)?, sys::uring::Ring::new(URING_ENTRIES)?);
                let (to_b, to_a) = (b.try_clone_fd()?, a.try_clone_fd()?);
                // Each message's bytes in a ring of its own direction that holds it whole (as
                // `shm_ring`'s), written before the post that announces it.
                let (to_peer, from_measurer) = ring::pair(message_bytes)?;
                let (to_measurer, from_peer) = ring::pair(message_bytes)?;
                pair(
                    Kind::UringMsg { ring: Box::new(a), to: to_b, tx: to_peer, rx: from_peer },
                    Kind::UringMsg { ring: Box::new(b), to: to_a, tx: to_measurer, rx: from_measurer },
                )
            }
        })
    }
}

/// Submission entries of each io_uring transport ring (one operation at a time, and a
/// cancellation).
const URING_ENTRIES: u32 = 8;

/// A pipe for messages of `message_bytes`: larger than the default 64 KiB for big messages
/// (best effort), so they move in fewer wake-ups.
fn pipe_for(message_bytes: usize) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe()?;
    if message_bytes > 65536 {
        let _ = nix::fcntl::fcntl(&w, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    }
    Ok((r, w))
}

fn read_sysctl(path: &str) -> Option<usize> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Asks for socket buffers that hold a message twice over (capped by `net.core.*mem_max`).
fn size_socket_buffers(socks: &[&dyn std::os::fd::AsFd], message_bytes: usize) {
    use nix::sys::socket::{setsockopt, sockopt};
    let want = 2 * message_bytes + 4096;
    for s in socks {
        let _ = setsockopt(s, sockopt::SndBuf, &want);
        let _ = setsockopt(s, sockopt::RcvBuf, &want);
    }
}

/// A POSIX queue holding one message of `message_bytes`, already unlinked.
fn open_mq(message_bytes: usize, tag: &str) -> std::io::Result<Mq> {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!("/osprim-{}-{}-{tag}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let attr = MqAttr::new(0, 1, message_bytes.max(1) as _, 0);
    let flags = MQ_OFlag::O_CREAT | MQ_OFlag::O_EXCL | MQ_OFlag::O_RDWR | MQ_OFlag::O_CLOEXEC;
    let q = mq_open(name.as_str(), flags, Mode::S_IRUSR | Mode::S_IWUSR, Some(&attr))?;
    let _ = mq_unlink(name.as_str());
    Ok(Mq(Some(q)))
}

/// A POSIX queue descriptor, closed on drop.
#[derive(Debug)]
pub struct Mq(Option<MqdT>);

impl Drop for Mq {
    fn drop(&mut self) {
        if let Some(q) = self.0.take() {
            let _ = mq_close(q);
        }
    }
}

impl Mq {
    fn get(&self) -> &MqdT {
        self.0.as_ref().expect("open until dropped")
    }
}

/// A message buffer: headroom, then the message (sequence number, payload).
pub struct Msg {
    buf: Vec<u8>,
}

impl Msg {
    /// A buffer for messages of `message_bytes`, the payload filled with [`pattern_byte`].
    pub fn new(message_bytes: usize) -> Msg {
        let mut buf = vec![0u8; HEADROOM + message_bytes];
        for (i, b) in buf[HEADROOM..].iter_mut().enumerate().skip(HEADER_BYTES) {
            *b = pattern_byte(i - HEADER_BYTES);
        }
        Msg { buf }
    }

    /// The message bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[HEADROOM..]
    }

    fn message_mut(&mut self) -> &mut [u8] {
        &mut self.buf[HEADROOM..]
    }

    #[inline(always)]
    fn set_seq(&mut self, seq: u32) {
        if let Some(h) = self.buf.get_mut(HEADROOM..HEADROOM + HEADER_BYTES) {
            h.copy_from_slice(&u64::from(seq).to_le_bytes());
        }
    }

    #[inline(always)]
    fn seq(&self) -> u32 {
        match self.buf.get(HEADROOM..HEADROOM + HEADER_BYTES) {
            Some(h) => u64::from_le_bytes(h.try_into().expect("8 bytes")) as u32,
            None => 0,
        }
    }

    /// Whether the payload is intact (every byte as [`pattern_byte`] says).
    pub fn payload_intact(&self) -> bool {
        self.bytes().iter().skip(HEADER_BYTES).enumerate().all(|(i, &b)| b == pattern_byte(i))
    }

    /// Damages one payload byte (tests).
    pub fn corrupt(&mut self) {
        if let Some(b) = self.buf.last_mut() {
            *b ^= 0xff;
        }
    }
}

/// The payload's byte `i`: a pattern that changes every byte and repeats only every 251 bytes.
pub fn pattern_byte(i: usize) -> u8 {
    ((i % 251) as u8).wrapping_mul(7).wrapping_add(13)
}

/// One end of a transport.
pub struct Endpoint {
    kind: Kind,
    /// Holds the give-up word.
    shared: Arc<SharedMem>,
    /// The give-up word's slot.
    give_up: usize,
}

enum Kind {
    Stream(File, File),
    Unix(UnixStream, UnixStream),
    Tcp(TcpStream, TcpStream),
    Dgram(UnixDatagram),
    Packet(File),
    Udp(UdpSocket),
    Eventfd { rx: Arc<EventFd>, tx: Arc<EventFd> },
    Word { shared: Arc<SharedMem>, rx: usize, tx: usize, spin: bool, last: u32 },
    Ring { tx: ring::Producer, rx: ring::Consumer },
    Mq { rx: Arc<Mq>, tx: Arc<Mq> },
    Sysv { q: Arc<MsgQueue>, rx: libc::c_long, tx: libc::c_long },
    UringPipe { ring: Box<sys::uring::Ring>, r: OwnedFd, w: OwnedFd },
    UringMsg { ring: Box<sys::uring::Ring>, to: OwnedFd, tx: ring::Producer, rx: ring::Consumer },
}

/// A wait that returned without a message (`Interrupted` by a signal, or a futex/spin wait
/// that looked around): the caller decides whether to wait again.
pub fn is_retry(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::TimedOut)
}

impl Endpoint {
    /// Sends message `seq` (its header is stamped into `msg`).
    #[inline(always)]
    pub fn send(&mut self, seq: u32, msg: &mut Msg) -> std::io::Result<()> {
        msg.set_seq(seq);
        let give_up = self.shared.u64(self.give_up);
        match &mut self.kind {
            Kind::Stream(_, w) => write_all(w, msg.bytes(), give_up),
            Kind::Unix(_, w) => write_all(w, msg.bytes(), give_up),
            Kind::Tcp(_, w) => write_all(w, msg.bytes(), give_up),
            Kind::Dgram(s) => whole(s.send(msg.bytes())?, msg),
            Kind::Packet(f) => whole(f.write(msg.bytes())?, msg),
            Kind::Udp(s) => whole(s.send(msg.bytes())?, msg),
            Kind::Eventfd { tx, .. } => tx.write(u64::from(seq)).map(drop).map_err(Into::into),
            Kind::Word { shared, tx, spin, .. } => {
                let w = shared.u32(*tx);
                w.store(seq, Ordering::Release);
                if !*spin {
                    futex::wake(w, 1)?;
                }
                Ok(())
            }
            Kind::Ring { tx, .. } => loop {
                // A full ring (never, in a ping-pong: each ring holds one message) waits again
                // after each look; a signal ends the wait with nothing written.
                match tx.write(msg.bytes(), &futex::timeout(POLL_EVERY)) {
                    Err(e) if e.kind() == ErrorKind::TimedOut => continue,
                    r => return r,
                }
            },
            Kind::Mq { tx, .. } => mq_send(tx.get(), msg.bytes(), 0).map_err(Into::into),
            Kind::Sysv { q, tx, .. } => q.send(&mut msg.buf, *tx),
            Kind::UringPipe { ring, w, .. } => uring_write_all(ring, w.as_fd(), msg.bytes(), give_up),
            Kind::UringMsg { ring, to, tx, .. } => {
                // The bytes first (a ring that holds the message whole: never full in a
                // ping-pong), then the post that announces them.
                loop {
                    match tx.write(msg.bytes(), &futex::timeout(POLL_EVERY)) {
                        Err(e) if e.kind() == ErrorKind::TimedOut => continue,
                        r => break r?,
                    }
                }
                let len = i32::try_from(msg.bytes().len()).map_err(|_| ErrorKind::InvalidInput)?;
                // A post cut short by a signal did not happen (its bytes are already in the
                // ring): it is made again, unless the session is being abandoned.
                loop {
                    match ring.post(to.as_fd(), u64::from(seq), len, POLL_EVERY) {
                        Err(e) if is_retry(&e) => abandon_if(give_up, 0, msg.bytes().len())?,
                        r => return r,
                    }
                }
            }
        }
    }

    /// Receives one message into `msg`; returns its sequence number. An error of kind
    /// `Interrupted` or `TimedOut` ([`is_retry`]) means no message yet.
    #[inline(always)]
    pub fn recv(&mut self, msg: &mut Msg) -> std::io::Result<u32> {
        let len = msg.bytes().len();
        let give_up = self.shared.u64(self.give_up);
        let got = match &mut self.kind {
            Kind::Stream(r, _) => read_exact(r, msg.message_mut(), give_up)?,
            Kind::Unix(r, _) => read_exact(r, msg.message_mut(), give_up)?,
            Kind::Tcp(r, _) => read_exact(r, msg.message_mut(), give_up)?,
            Kind::Dgram(s) => s.recv(msg.message_mut())?,
            Kind::Packet(f) => f.read(msg.message_mut())?,
            Kind::Udp(s) => s.recv(msg.message_mut())?,
            Kind::Eventfd { rx, .. } => return Ok(rx.read()? as u32),
            Kind::Word { shared, rx, spin, last, .. } => return wait_word(shared.u32(*rx), last, *spin),
            Kind::Ring { rx, .. } => {
                rx.read(msg.message_mut(), &futex::timeout(POLL_EVERY))?;
                len
            }
            Kind::Mq { rx, .. } => mq_receive(rx.get(), msg.message_mut(), &mut 0)?,
            Kind::Sysv { q, rx, .. } => q.recv(&mut msg.buf, *rx)?,
            Kind::UringPipe { ring, r, .. } => uring_read_exact(ring, r.as_fd(), msg.message_mut(), give_up)?,
            Kind::UringMsg { ring, rx, .. } => {
                let m = ring.wait_message(POLL_EVERY)?;
                if m.value != len as i32 {
                    return Err(std::io::Error::new(
                        ErrorKind::InvalidData,
                        format!("a post announced {} bytes where a {len}-byte message was sent", m.value),
                    ));
                }
                // Written before the post: there, so the read does not wait.
                rx.read(msg.message_mut(), &futex::timeout(POLL_EVERY)).map_err(|e| {
                    std::io::Error::new(ErrorKind::InvalidData, format!("a post arrived without its bytes: {e}"))
                })?;
                if m.user_data != u64::from(msg.seq()) {
                    return Err(std::io::Error::new(
                        ErrorKind::InvalidData,
                        format!("post {} carried the bytes of message {}", m.user_data, msg.seq()),
                    ));
                }
                len
            }
        };
        if got != len {
            return Err(std::io::Error::new(
                ErrorKind::InvalidData,
                format!("received {got} bytes where a {len}-byte message was sent"),
            ));
        }
        Ok(msg.seq())
    }

    /// What this end did about sleeping (its futex waits, those that timed out, its wakes),
    /// for a transport that counts them (`shm_ring`): both of its rings' counts, the one it
    /// reads and the one it writes.
    pub fn sleep_counts(&self) -> Option<SleepCounts> {
        match &self.kind {
            Kind::Ring { tx, rx } => Some(tx.counts().plus(rx.counts())),
            _ => None,
        }
    }

    /// The measuring end's ring's own account (its submissions, completions, completions
    /// posted to it, the kernel's overflow counters), for the io_uring transports.
    pub fn ring_counts(&mut self) -> Option<sys::uring::Counts> {
        match &mut self.kind {
            Kind::UringPipe { ring, .. } | Kind::UringMsg { ring, .. } => Some(ring.counts()),
            _ => None,
        }
    }
}

/// [`read_exact`] through io_uring reads: a wait that ends with nothing read (its deadline, a
/// signal) is a retry before the first byte; after it the read goes on unless `give_up` is set.
#[inline(always)]
fn uring_read_exact(
    ring: &mut sys::uring::Ring,
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    give_up: &AtomicU64,
) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match ring.read(fd, &mut buf[done..], POLL_EVERY) {
            Ok(0) => return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the other end closed")),
            Ok(n) => done += n,
            Err(e) if is_retry(&e) && done > 0 => abandon_if(give_up, done, buf.len())?,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// [`write_all`] through io_uring writes: a write that waited past its deadline with nothing
/// written is made again; a signal before the first byte is a retry, after it the write goes
/// on unless `give_up` is set.
#[inline(always)]
fn uring_write_all(
    ring: &mut sys::uring::Ring,
    fd: BorrowedFd<'_>,
    buf: &[u8],
    give_up: &AtomicU64,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match ring.write(fd, &buf[done..], POLL_EVERY) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::TimedOut && done == 0 => continue,
            Err(e) if is_retry(&e) && done > 0 => abandon_if(give_up, done, buf.len())?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes; a signal before the first byte is a retry, after it the
/// read goes on (the message is half in) unless `give_up` is set.
#[inline(always)]
fn read_exact(r: &mut impl Read, buf: &mut [u8], give_up: &AtomicU64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the other end closed")),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted && done > 0 => abandon_if(give_up, done, buf.len())?,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `buf`; a signal before the first byte is a retry (nothing was sent), after
/// it the write goes on unless `give_up` is set. The same `write` calls as std's `write_all`,
/// which would retry after every signal.
#[inline(always)]
fn write_all(w: &mut impl Write, buf: &[u8], give_up: &AtomicU64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match w.write(&buf[done..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted && done > 0 => abandon_if(give_up, done, buf.len())?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A half-moved message is abandoned when the give-up word is set.
#[cold]
fn abandon_if(give_up: &AtomicU64, done: usize, len: usize) -> std::io::Result<()> {
    if give_up.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    Err(std::io::Error::new(ErrorKind::ConnectionAborted, format!("abandoned after {done} of {len} bytes")))
}

fn whole(sent: usize, msg: &Msg) -> std::io::Result<()> {
    if sent == msg.bytes().len() {
        Ok(())
    } else {
        Err(std::io::Error::new(ErrorKind::WriteZero, format!("sent {sent} of {} bytes", msg.bytes().len())))
    }
}

/// Waits until `word` moves past `last`; sleeps in the kernel (futex) or spins.
#[inline(always)]
fn wait_word(word: &AtomicU32, last: &mut u32, spin: bool) -> std::io::Result<u32> {
    let timeout = futex::timeout(POLL_EVERY);
    let mut spins = 0u32;
    loop {
        let v = word.load(Ordering::Acquire);
        if v != *last {
            *last = v;
            return Ok(v);
        }
        if spin {
            std::hint::spin_loop();
            spins += 1;
            if spins == SPINS_PER_LOOK {
                return Err(ErrorKind::TimedOut.into());
            }
        } else {
            futex::wait(word, v, &timeout)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(t: Transport, payload: usize) {
        let shared = Arc::new(SharedMem::new(3).unwrap());
        let bytes = t.message_bytes(payload);
        let (mut a, mut b) = t.open(bytes, &shared, (0, 1), 2).unwrap();
        let peer = std::thread::spawn(move || {
            let mut m = Msg::new(bytes);
            loop {
                let seq = match b.recv(&mut m) {
                    Ok(s) => s,
                    Err(e) if is_retry(&e) => continue,
                    Err(e) => panic!("{e}"),
                };
                if seq == STOP {
                    return;
                }
                b.send(seq, &mut m).unwrap();
            }
        });
        let (mut out, mut inb) = (Msg::new(bytes), Msg::new(bytes));
        for seq in 1..=20 {
            a.send(seq, &mut out).unwrap();
            let got = loop {
                match a.recv(&mut inb) {
                    Err(e) if is_retry(&e) => continue,
                    r => break r.unwrap(),
                }
            };
            assert_eq!(got, seq, "{t:?}");
            assert!(inb.payload_intact(), "{t:?}");
        }
        a.send(STOP, &mut out).unwrap();
        peer.join().unwrap();
    }

    #[test]
    fn every_transport_carries_numbered_messages_both_ways() {
        // The System V queue forks its janitor: serialised with the tests that count faults.
        let _serial = crate::testing::serial();
        for t in Transport::ALL {
            if let Some(why) = t.unavailable() {
                eprintln!("{}: {why}", t.name());
                continue;
            }
            let payload = if t.carries_payload() { 300 } else { 0 };
            round_trip(t, payload);
        }
    }

    #[test]
    fn large_stream_messages_arrive_whole() {
        round_trip(Transport::Pipe, 200_000);
        round_trip(Transport::UnixStream, 200_000);
        round_trip(Transport::Tcp, 200_000);
        round_trip(Transport::ShmRing, 200_000);
        for t in [Transport::IoUring, Transport::IoUringMsg] {
            if t.unavailable().is_none() {
                round_trip(t, 200_000);
            }
        }
    }

    #[test]
    fn io_uring_ends_count_their_operations_and_msg_ring_is_for_threads() {
        assert!(Transport::IoUring.carries_payload() && Transport::IoUringMsg.carries_payload());
        assert_eq!(Transport::IoUring.threads_only(), None);
        assert!(Transport::IoUringMsg.threads_only().is_some_and(|why| why.contains("not applicable")));
        crate::testing::with_ctx(0.01, |ctx| {
            let p = |peer: &str| crate::Params::from([("peer".to_string(), serde_json::json!(peer))]);
            let why = crate::ipc::Setup::read(Transport::IoUringMsg, ctx, &p("process")).err();
            assert!(
                matches!(&why, Some(crate::NotMeasured::Skipped(w)) if w.contains("not applicable between processes")),
                "{why:?}"
            );
            let thread = crate::ipc::Setup::read(Transport::IoUringMsg, ctx, &p("thread"));
            assert_eq!(thread.is_ok(), Transport::IoUringMsg.unavailable().is_none());
        });
        let shared = Arc::new(SharedMem::new(3).unwrap());
        let (mut a, _) = Transport::Pipe.open(8, &shared, (0, 1), 2).unwrap();
        assert_eq!(a.ring_counts(), None);
        for t in [Transport::IoUring, Transport::IoUringMsg] {
            if t.unavailable().is_some() {
                continue;
            }
            let bytes = t.message_bytes(100);
            let (mut a, mut b) = t.open(bytes, &shared, (0, 1), 2).unwrap();
            let (mut out, mut inb) = (Msg::new(bytes), Msg::new(bytes));
            for seq in 1..=10 {
                a.send(seq, &mut out).unwrap();
                assert_eq!(b.recv(&mut inb).unwrap(), seq, "{t:?}");
                assert!(inb.payload_intact());
            }
            // Nothing waiting: the receive ends at its deadline, a retry, with no operation left.
            let e = b.recv(&mut inb).unwrap_err();
            assert!(is_retry(&e), "{t:?}: {e}");
            let (ca, cb) = (a.ring_counts().unwrap(), b.ring_counts().unwrap());
            assert_eq!(ca.completed, ca.submitted, "{t:?}: {ca:?}");
            assert_eq!(cb.completed, cb.submitted, "{t:?}: {cb:?}");
            assert!(ca.submitted >= 10, "{t:?}: {ca:?}");
            if t == Transport::IoUringMsg {
                assert_eq!((ca.received, cb.received), (0, 10), "posts arrive on the other ring");
            }
        }
    }

    #[test]
    fn shm_ring_sizes_its_rings_from_the_message_and_counts_its_sleeps() {
        let shared = Arc::new(SharedMem::new(3).unwrap());
        for bytes in [8, 4097, 1 << 20] {
            let (a, b) = Transport::ShmRing.open(bytes, &shared, (0, 1), 2).unwrap();
            for end in [&a, &b] {
                let Kind::Ring { tx, rx } = &end.kind else { panic!("a ring") };
                for cap in [tx.capacity(), rx.capacity()] {
                    assert!(cap.is_power_of_two() && cap >= bytes, "{cap} for {bytes}-byte messages");
                }
            }
            assert_eq!(a.sleep_counts(), Some(SleepCounts::default()));
        }
        assert_eq!(Transport::ShmRing.message_bytes(64), 72, "the sequence number, then the payload");
        assert!(Transport::ShmRing.carries_payload() && !Transport::ShmRing.needs_two_cpus());
        let (a, _) = Transport::Pipe.open(8, &shared, (0, 1), 2).unwrap();
        assert_eq!(a.sleep_counts(), None);
    }

    #[test]
    fn payload_checks_catch_damage() {
        let mut m = Msg::new(64);
        assert!(m.payload_intact());
        m.corrupt();
        assert!(!m.payload_intact());
        assert!(Transport::Udp.size_limit(70_000).is_some());
        assert_eq!(Transport::Pipe.size_limit(1 << 30), None);
        assert_eq!(Transport::Futex.message_bytes(64), 0);
    }

    #[test]
    fn ids_are_snake_case() {
        for t in Transport::ALL {
            assert!(t.name().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
    }
}
