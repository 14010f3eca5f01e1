//! A single-producer single-consumer byte ring in shared memory whose consumer *sleeps* when
//! it finds the ring empty (and whose producer sleeps when it finds it full): the design of
//! low-latency shared-memory middleware, a futex doorbell beside a ring of bytes.
//!
//! **Memory.** One `memfd` per ring (`memfd_create` with `MFD_CLOEXEC`, `ftruncate`, `mmap`
//! with `MAP_SHARED`), its descriptor closed as soon as it is mapped: nothing is named, no
//! descriptor is left open, a process forked afterwards inherits the mapping, and the memory
//! goes when the last process that maps it unmaps it or dies (`kill -9` included). The first
//! page holds four words, each on a cache-line pair of its own (128 bytes apart, so two words
//! written by different CPUs never share a line or an adjacent-line prefetch): the producer's
//! count of bytes published (`head`), the consumer's count of bytes taken (`tail`), and two
//! futex words, `data_wait` (the consumer sleeps, or is about to) and `space_wait` (the
//! producer does). The bytes follow from the second page on: [`capacity`](Producer::capacity)
//! bytes, a power of two, so a position is a count masked.
//!
//! **A message is written whole.** [`Producer::write`] waits until the whole of its bytes fit,
//! copies them (in two pieces where they wrap) and only then publishes the new `head`; so a
//! consumer never sees part of a write. [`Consumer::read`] waits until `buf.len()` bytes are
//! there and takes exactly those. A write or read larger than the ring is refused
//! (`InvalidInput`) rather than waiting for ever; a ring sized from the message at open (as
//! `bench`'s `shm_ring` transport sizes it) never meets that refusal.
//!
//! **Sleeping without losing a wake-up** (Dekker's pattern, with `SeqCst` fences on both
//! sides). The consumer, finding too few bytes, stores 1 in `data_wait`, issues a fence,
//! loads `head` again, and only if the bytes are still missing calls `FUTEX_WAIT(data_wait,
//! 1)`, which the kernel refuses to sleep in unless the word still holds 1. The producer
//! stores `head`, issues a fence, and loads `data_wait`; if it is 1 it swaps it to 0 and calls
//! `FUTEX_WAKE`. The two fences order each side's store before its load, so at least one side
//! sees the other's store: either the consumer's second look finds the bytes, or the producer
//! sees the flag. And the producer changes the word *before* waking, so a consumer that has
//! not yet reached `FUTEX_WAIT` finds the word 0 and does not sleep. No wake-up is lost, and
//! the producer makes a system call only when the consumer announced it sleeps (a load of a
//! line nobody writes, otherwise). The full ring is the same pattern the other way round:
//! `space_wait`, `tail`, the consumer waking the producer.
//!
//! **Waits end.** Every `FUTEX_WAIT` has the caller's timeout and returns `TimedOut` when it
//! expires, or `Interrupted` when a signal arrives (no restart), having taken or published
//! nothing, so its caller can look around and call again. Each end counts the waits it began,
//! the waits that ended by their timeout, and the wake-ups it made ([`SleepCounts`]): a lost
//! wake-up shows as a wait ended by its timeout while the bytes were there.
//!
//! # Safety
//! The mapping is page-aligned, zero-filled by the kernel, `HEADER + capacity` bytes long, and
//! lives until the last [`Producer`] or [`Consumer`] of the ring drops it. The four words are
//! only accessed through atomics, valid for any bit pattern and for access from other threads
//! and processes. The data bytes are accessed by plain copies, without a data race: the
//! producer writes only bytes in `[head, tail + capacity)`, the consumer reads only bytes in
//! `[tail, head)`, and each side learns the other's count with `Acquire` after it was stored
//! with `Release` following the copies it covers. There is one producer and one consumer per
//! ring: [`pair`] makes one of each, neither is `Clone`, and both need `&mut self`.
#![allow(unsafe_code)]

use crate::futex;
use std::io::{Error, ErrorKind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

/// Bytes between two of the header's words.
const LINE: usize = 128;
/// The producer's count of bytes published (`u64`).
const HEAD: usize = 0;
/// The consumer's count of bytes taken (`u64`).
const TAIL: usize = LINE;
/// 1 while the consumer sleeps on it or is about to (`u32`, a futex word).
const DATA_WAIT: usize = 2 * LINE;
/// 1 while the producer sleeps on it or is about to (`u32`, a futex word).
const SPACE_WAIT: usize = 3 * LINE;
/// Where the data bytes begin: one page in.
const HEADER: usize = 4096;

/// The smallest ring [`pair`] makes, bytes (one page).
pub const MIN_CAPACITY: usize = 4096;

/// What one end of a ring did about sleeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SleepCounts {
    /// `FUTEX_WAIT` calls begun (the ring was empty, or full, after the announcement).
    pub waits: u64,
    /// Of those, the ones that ended by their timeout.
    pub timeouts: u64,
    /// `FUTEX_WAKE` calls made (the other end had announced it sleeps).
    pub wakes: u64,
}

impl SleepCounts {
    /// The sum of two ends' counts.
    pub fn plus(self, other: SleepCounts) -> SleepCounts {
        SleepCounts {
            waits: self.waits + other.waits,
            timeouts: self.timeouts + other.timeouts,
            wakes: self.wakes + other.wakes,
        }
    }
}

/// The ring's shared mapping, unmapped when the last end drops it.
struct Mapping {
    base: NonNull<u8>,
    capacity: usize,
}

// SAFETY: the words are atomics and the bytes are copied without a data race (module doc).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(capacity: usize) -> std::io::Result<Mapping> {
        let len = HEADER + capacity;
        // SAFETY: the name is a NUL-terminated literal; the call creates a new file.
        let fd = unsafe { libc::memfd_create(c"osprim-ring".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os_error());
        }
        // SAFETY: `fd` was just returned to us and is owned by this guard alone.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        let size = libc::off_t::try_from(len).map_err(|_| Error::from(ErrorKind::InvalidInput))?;
        // SAFETY: sizes the file we own; no memory is touched.
        if unsafe { libc::ftruncate(raw, size) } != 0 {
            return Err(Error::last_os_error());
        }
        // SAFETY: a fresh shared mapping of the whole file; no existing memory is touched.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, raw, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os_error());
        }
        // The mapping keeps the memory; the descriptor goes now (dropping `fd` closes it).
        drop(fd);
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| Error::other("mmap returned null"))?;
        Ok(Mapping { base, capacity })
    }

    fn u64(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is one of the header's 128-byte-aligned offsets, inside the live
        // mapping; atomics accept any bits.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU64>() }
    }

    fn u32(&self, at: usize) -> &AtomicU32 {
        // SAFETY: as for `u64`.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU32>() }
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: `HEADER` is inside the mapping, which is `HEADER + capacity` bytes.
        unsafe { self.base.as_ptr().add(HEADER) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; no reference outlives `self`.
        unsafe { libc::munmap(self.base.as_ptr().cast(), HEADER + self.capacity) };
    }
}

/// The writing end of a ring.
pub struct Producer {
    map: Arc<Mapping>,
    /// Bytes published (this end alone stores `head`).
    head: u64,
    /// The consumer's `tail` as last loaded.
    tail_seen: u64,
    counts: SleepCounts,
}

/// The reading end of a ring.
pub struct Consumer {
    map: Arc<Mapping>,
    /// Bytes taken (this end alone stores `tail`).
    tail: u64,
    /// The producer's `head` as last loaded.
    head_seen: u64,
    counts: SleepCounts,
}

/// A new ring of at least `min_capacity` bytes (rounded up to a power of two, and to at least
/// [`MIN_CAPACITY`]), as its two ends. A process forked afterwards shares it.
pub fn pair(min_capacity: usize) -> std::io::Result<(Producer, Consumer)> {
    let capacity = min_capacity
        .max(MIN_CAPACITY)
        .checked_next_power_of_two()
        .ok_or_else(|| Error::new(ErrorKind::InvalidInput, format!("no ring of {min_capacity} bytes")))?;
    let map = Arc::new(Mapping::new(capacity)?);
    let producer = Producer { map: map.clone(), head: 0, tail_seen: 0, counts: SleepCounts::default() };
    let consumer = Consumer { map, tail: 0, head_seen: 0, counts: SleepCounts::default() };
    Ok((producer, consumer))
}

fn too_big(len: usize, capacity: usize) -> Error {
    Error::new(ErrorKind::InvalidInput, format!("a {len}-byte message does not fit a {capacity}-byte ring"))
}

/// Announces on `flag` that this end sleeps, looks once more with `ready`, and sleeps on the
/// flag if still not ready. `Ok(())` means look again; the flag is 0 whenever this returns
/// (this end no longer sleeps), unless the other end has already cleared it.
#[inline(always)]
fn sleep_unless(
    flag: &AtomicU32,
    counts: &mut SleepCounts,
    timeout: &libc::timespec,
    ready: impl FnOnce() -> bool,
) -> std::io::Result<()> {
    flag.store(1, Ordering::Relaxed);
    // Orders the flag's store before the second look (Dekker; the other end's fence sits
    // between its publication and its load of the flag).
    fence(Ordering::SeqCst);
    if ready() {
        flag.store(0, Ordering::Relaxed);
        return Ok(());
    }
    counts.waits += 1;
    let r = futex::wait(flag, 1, timeout);
    flag.store(0, Ordering::Relaxed);
    match r {
        Err(e) if e.kind() == ErrorKind::TimedOut => {
            counts.timeouts += 1;
            Err(e)
        }
        r => r,
    }
}

/// Wakes the other end if it announced on `flag` that it sleeps; after a `SeqCst` fence that
/// orders this end's publication before the load of the flag.
#[inline(always)]
fn wake_if_asleep(flag: &AtomicU32, counts: &mut SleepCounts) -> std::io::Result<()> {
    fence(Ordering::SeqCst);
    if flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::SeqCst) != 0 {
        counts.wakes += 1;
        futex::wake(flag, 1)?;
    }
    Ok(())
}

impl Producer {
    /// The ring's size in bytes.
    pub fn capacity(&self) -> usize {
        self.map.capacity
    }

    /// What this end did about sleeping so far.
    pub fn counts(&self) -> SleepCounts {
        self.counts
    }

    /// Writes all of `bytes` as one publication, waiting while the ring lacks room (each wait
    /// at most `timeout`), then wakes the consumer if it sleeps. `TimedOut` or `Interrupted`:
    /// nothing was written, call again. `InvalidInput`: larger than the ring.
    #[inline(always)]
    pub fn write(&mut self, bytes: &[u8], timeout: &libc::timespec) -> std::io::Result<()> {
        self.write_and(bytes, timeout, true)
    }

    #[inline(always)]
    fn write_and(&mut self, bytes: &[u8], timeout: &libc::timespec, wake: bool) -> std::io::Result<()> {
        let cap = self.map.capacity;
        let len = bytes.len();
        if len > cap {
            return Err(too_big(len, cap));
        }
        let map = &*self.map;
        let fits = |tail: u64, head: u64| (cap as u64 - (head - tail)) >= len as u64;
        while !fits(self.tail_seen, self.head) {
            self.tail_seen = map.u64(TAIL).load(Ordering::Acquire);
            if fits(self.tail_seen, self.head) {
                break;
            }
            let (tail_seen, head) = (&mut self.tail_seen, self.head);
            sleep_unless(map.u32(SPACE_WAIT), &mut self.counts, timeout, || {
                *tail_seen = map.u64(TAIL).load(Ordering::Acquire);
                fits(*tail_seen, head)
            })?;
        }
        let mask = cap - 1;
        let at = self.head as usize & mask;
        let first = len.min(cap - at);
        // SAFETY: `[at, at + first)` and `[0, len - first)` lie inside the data area and
        // within `[head, tail + capacity)`, which the consumer does not read (module doc);
        // `bytes` is a separate buffer of `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.data().add(at), first);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), map.data(), len - first);
        }
        self.head += len as u64;
        map.u64(HEAD).store(self.head, Ordering::Release);
        if wake { wake_if_asleep(map.u32(DATA_WAIT), &mut self.counts) } else { Ok(()) }
    }
}

impl Consumer {
    /// The ring's size in bytes.
    pub fn capacity(&self) -> usize {
        self.map.capacity
    }

    /// What this end did about sleeping so far.
    pub fn counts(&self) -> SleepCounts {
        self.counts
    }

    /// Reads exactly `buf.len()` bytes, sleeping while fewer are there (each wait at most
    /// `timeout`), then wakes the producer if it sleeps for room. `TimedOut` or `Interrupted`:
    /// nothing was taken, call again. `InvalidInput`: larger than the ring.
    #[inline(always)]
    pub fn read(&mut self, buf: &mut [u8], timeout: &libc::timespec) -> std::io::Result<()> {
        let cap = self.map.capacity;
        let len = buf.len();
        if len > cap {
            return Err(too_big(len, cap));
        }
        let map = &*self.map;
        let enough = |head: u64, tail: u64| head - tail >= len as u64;
        while !enough(self.head_seen, self.tail) {
            self.head_seen = map.u64(HEAD).load(Ordering::Acquire);
            if enough(self.head_seen, self.tail) {
                break;
            }
            let (head_seen, tail) = (&mut self.head_seen, self.tail);
            sleep_unless(map.u32(DATA_WAIT), &mut self.counts, timeout, || {
                *head_seen = map.u64(HEAD).load(Ordering::Acquire);
                enough(*head_seen, tail)
            })?;
        }
        let mask = cap - 1;
        let at = self.tail as usize & mask;
        let first = len.min(cap - at);
        // SAFETY: `[at, at + first)` and `[0, len - first)` lie inside the data area and
        // within `[tail, head)`, published by the producer (Acquire above) and not written
        // again until `tail` moves past them; `buf` is a separate buffer of `len` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(map.data().add(at), buf.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(map.data(), buf.as_mut_ptr().add(first), len - first);
        }
        self.tail += len as u64;
        map.u64(TAIL).store(self.tail, Ordering::Release);
        wake_if_asleep(map.u32(SPACE_WAIT), &mut self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A wait long enough that, in these tests, only a lost wake-up ends one by its timeout.
    fn long() -> libc::timespec {
        futex::timeout(Duration::from_secs(20))
    }

    /// Writes message `seq` of `len` payload bytes: its number and length, then the payload.
    fn message(seq: u32, len: usize, scratch: &mut Vec<u8>) -> &[u8] {
        scratch.clear();
        scratch.extend_from_slice(&seq.to_le_bytes());
        scratch.extend_from_slice(&(len as u32).to_le_bytes());
        scratch.extend((0..len).map(|i| byte(seq, i)));
        scratch
    }

    fn byte(seq: u32, i: usize) -> u8 {
        (seq as usize).wrapping_mul(31).wrapping_add(i % 251) as u8
    }

    fn retrying<T>(mut f: impl FnMut() -> std::io::Result<T>) -> T {
        loop {
            match f() {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                r => return r.unwrap(),
            }
        }
    }

    /// Streams `lens` through a ring of `capacity` bytes from one thread to another; every
    /// message must arrive once, in order, intact. Returns both ends' counts.
    fn stream(
        capacity: usize,
        lens: impl Fn(u32) -> usize + Send + Copy + 'static,
        count: u32,
    ) -> (SleepCounts, SleepCounts) {
        let (mut tx, mut rx) = pair(capacity).unwrap();
        let producer = std::thread::spawn(move || {
            let mut scratch = Vec::new();
            let t = long();
            for seq in 0..count {
                let m = message(seq, lens(seq), &mut scratch);
                retrying(|| tx.write(m, &t));
            }
            tx.counts()
        });
        let t = long();
        let mut body = vec![0u8; capacity];
        for seq in 0..count {
            let mut head = [0u8; 8];
            retrying(|| rx.read(&mut head, &t));
            let got = u32::from_le_bytes(head[..4].try_into().unwrap());
            let len = u32::from_le_bytes(head[4..].try_into().unwrap()) as usize;
            assert_eq!(got, seq, "message {seq} expected");
            assert_eq!(len, lens(seq), "message {seq}'s length");
            retrying(|| rx.read(&mut body[..len], &t));
            assert!(body[..len].iter().enumerate().all(|(i, &b)| b == byte(seq, i)), "message {seq} damaged");
        }
        (producer.join().unwrap(), rx.counts())
    }

    #[test]
    fn a_million_small_messages_and_large_ones_arrive_once_in_order_intact() {
        // Small ones of 8–64 bytes, every 1,000th as large as the ring allows (so the ring
        // is often full, writes wrap, and the producer sleeps for room).
        let cap = 4096;
        let lens = move |seq: u32| if seq % 1000 == 999 { cap - 8 } else { (seq % 57) as usize };
        let (tx, rx) = stream(cap, lens, 1_000_000);
        assert_eq!((tx.timeouts, rx.timeouts), (0, 0), "a wait ended by its timeout: a lost wake-up ({tx:?}, {rx:?})");
        // The consumer starts before the producer's thread runs: it slept at least once.
        assert!(rx.waits > 0, "{rx:?}");
        // Large messages through a large ring, of sizes that do not divide it.
        let cap = 1 << 20;
        let lens = move |seq: u32| cap / 3 + seq as usize * 4093 % (cap / 2);
        let (tx, rx) = stream(cap, lens, 300);
        assert_eq!((tx.timeouts, rx.timeouts), (0, 0), "{tx:?}, {rx:?}");
    }

    #[test]
    fn in_a_ping_pong_every_wait_ends_by_a_wake_up_not_its_timeout() {
        // Each reply is read right after the request is written, before the peer can have
        // answered: the reader sleeps on almost every round trip, and the writer must wake
        // it. A lost wake-up would leave a reader asleep until its 20 s timeout.
        let (mut to_peer, mut from_me) = pair(64).unwrap();
        let (mut to_me, mut from_peer) = pair(64).unwrap();
        let rounds = 20_000u32;
        let peer = std::thread::spawn(move || {
            let t = long();
            let mut m = [0u8; 8];
            for _ in 0..rounds {
                retrying(|| from_me.read(&mut m, &t));
                retrying(|| to_me.write(&m, &t));
            }
            from_me.counts().plus(to_me.counts())
        });
        let t = long();
        let mut m = [0u8; 8];
        for seq in 0..rounds {
            retrying(|| to_peer.write(&u64::from(seq).to_le_bytes(), &t));
            retrying(|| from_peer.read(&mut m, &t));
            assert_eq!(u64::from_le_bytes(m), u64::from(seq));
        }
        let theirs = peer.join().unwrap();
        let mine = to_peer.counts().plus(from_peer.counts());
        let all = mine.plus(theirs);
        assert!(all.waits > 0, "the readers slept: {all:?}");
        assert_eq!(all.timeouts, 0, "every wait was ended by a wake-up: {all:?}");
        assert!(all.wakes > 0 && all.wakes <= all.waits + 2 * u64::from(rounds), "{all:?}");
    }

    #[test]
    fn a_skipped_wake_up_is_counted_as_a_wait_ended_by_its_timeout() {
        // The negative control of the test above: a producer that publishes without looking
        // at the flag leaves the sleeping consumer to its timeout, and the count shows it.
        let (mut tx, mut rx) = pair(64).unwrap();
        let map = tx.map.clone();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            tid_tx.send(crate::process::gettid()).unwrap();
            let t = futex::timeout(Duration::from_millis(300));
            let mut m = [0u8; 8];
            let first = loop {
                match rx.read(&mut m, &t) {
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    r => break r.map_err(|e| e.kind()),
                }
            };
            let counts = rx.counts();
            retrying(|| rx.read(&mut m, &t));
            (first, counts, u64::from_le_bytes(m))
        });
        // Until the reader has announced it sleeps and is asleep; then publish without
        // waking it.
        let tid = tid_rx.recv().unwrap();
        let stat = format!("/proc/self/task/{tid}/stat");
        while map.u32(DATA_WAIT).load(Ordering::SeqCst) == 0
            || crate::process::stat_state(&std::fs::read_to_string(&stat).unwrap_or_default()) != Some('S')
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        tx.write_and(&7u64.to_le_bytes(), &long(), false).unwrap();
        let (first, counts, got) = reader.join().unwrap();
        assert_eq!(first, Err(ErrorKind::TimedOut), "the reader was left asleep: {counts:?}");
        assert_eq!((counts.waits, counts.timeouts), (1, 1), "{counts:?}");
        assert_eq!(got, 7, "the message was there all along");
    }

    #[test]
    fn sizes_are_powers_of_two_and_a_message_larger_than_the_ring_is_refused() {
        let (mut tx, mut rx) = pair(5000).unwrap();
        assert_eq!(tx.capacity(), 8192);
        assert_eq!(pair(1).unwrap().0.capacity(), MIN_CAPACITY);
        let t = long();
        let e = tx.write(&vec![0u8; 8193], &t).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("does not fit a 8192-byte ring"), "{e}");
        assert_eq!(rx.read(&mut vec![0u8; 8193], &t).unwrap_err().kind(), ErrorKind::InvalidInput);
        // A whole-ring message fits an empty ring, wrapped or not.
        for _ in 0..3 {
            tx.write(&[1u8; 3000], &t).unwrap();
            rx.read(&mut [0u8; 3000], &t).unwrap();
            let whole = vec![9u8; 8192];
            tx.write(&whole, &t).unwrap();
            let mut back = vec![0u8; 8192];
            rx.read(&mut back, &t).unwrap();
            assert_eq!(back, whole);
        }
        // An empty ring's read waits, then says so.
        let e = rx.read(&mut [0u8; 1], &futex::timeout(Duration::from_millis(5))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        assert_eq!(rx.counts().timeouts, 1);
    }

    #[test]
    fn no_descriptor_is_left_open() {
        let fds =
            || std::fs::read_dir("/proc/self/fd").unwrap().filter_map(|e| std::fs::read_link(e.ok()?.path()).ok());
        let _ring = pair(4096).unwrap();
        assert!(fds().all(|p| !p.to_string_lossy().contains("osprim-ring")), "the memfd was closed once mapped");
    }

    #[test]
    fn a_forked_process_shares_the_ring() {
        let _serial = crate::testing::serial();
        let (mut to_child, mut from_parent) = pair(4096).unwrap();
        let (mut to_parent, mut from_child) = pair(4096).unwrap();
        let mut child = crate::process::fork_peer(move || {
            let t = futex::timeout(Duration::from_secs(5));
            let mut m = [0u8; 100];
            for _ in 0..100 {
                if from_parent.read(&mut m, &t).is_err() || to_parent.write(&m, &t).is_err() {
                    return 1;
                }
            }
            0
        })
        .unwrap();
        let t = long();
        for k in 0..100u8 {
            retrying(|| to_child.write(&[k; 100], &t));
            let mut back = [0u8; 100];
            retrying(|| from_child.read(&mut back, &t));
            assert_eq!(back, [k; 100]);
        }
        assert_eq!(child.finish(Duration::from_secs(10)), crate::reap::Reaped::Exited(0));
    }
}
