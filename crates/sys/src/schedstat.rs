//! The kernel's account of one thread's time: `/proc/thread-self/schedstat` — the time it has
//! run on a CPU, the time it has waited runnable on a run queue (its run delay) and how many
//! times it was given a CPU (proc(5); Documentation/scheduler/sched-stats.rst). Read with one
//! `pread` into a buffer on the stack, allocating nothing, so a spinning thread can read it
//! between two stamps of its loop (`sched.preempt`: did a third task run while it waited?).
//!
//! The figures are the scheduler's as of its last event for the thread: a thread reading its
//! own right after it resumed finds its run time up to its last switch away and its run delay
//! including the wait that just ended (the scheduler updates both when it switches the thread
//! out and in; the run time is also brought up to date by the tick while it runs).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// One reading of a thread's schedstat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Time spent running on a CPU, ns (`se.sum_exec_runtime`).
    pub run_ns: u64,
    /// Time spent runnable but waiting on a run queue, ns (`sched_info.run_delay`).
    pub wait_ns: u64,
    /// Times the thread was given a CPU (`sched_info.pcount`).
    pub slices: u64,
}

/// The calling thread's schedstat file, open: it keeps referring to the thread that opened it.
#[derive(Debug)]
pub struct ThreadSchedstat {
    file: File,
}

impl ThreadSchedstat {
    /// Opens `/proc/thread-self/schedstat` of the calling thread.
    pub fn open() -> io::Result<ThreadSchedstat> {
        File::open("/proc/thread-self/schedstat").map(|file| ThreadSchedstat { file })
    }

    /// The thread's account now, or `None` if the file cannot be read or parsed.
    #[inline]
    pub fn read(&self) -> Option<Account> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        parse(&buf[..n])
    }
}

/// Parses schedstat's line: three decimal numbers separated by spaces.
pub fn parse(bytes: &[u8]) -> Option<Account> {
    let mut fields = bytes.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty());
    let mut next = || -> Option<u64> {
        let f = fields.next()?;
        f.iter().try_fold(0u64, |acc, &b| {
            b.is_ascii_digit().then_some(())?;
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        })
    };
    Some(Account { run_ns: next()?, wait_ns: next()?, slices: next()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_line_and_refuses_anything_else() {
        assert_eq!(parse(b"123 456 7\n"), Some(Account { run_ns: 123, wait_ns: 456, slices: 7 }));
        assert_eq!(parse(b"1 2"), None);
        assert_eq!(parse(b"1 x 3\n"), None);
        assert_eq!(parse(b"99999999999999999999 1 1"), None, "overflow");
    }

    #[test]
    fn a_spinning_thread_sees_its_run_time_grow() {
        let stat = ThreadSchedstat::open().expect("open schedstat");
        let first = stat.read().expect("read");
        // Give the CPU up a few times: each switch away brings the run time up to date.
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box((0..1000).sum::<u64>());
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        let second = stat.read().expect("read again");
        assert!(second.run_ns > first.run_ns, "{first:?} then {second:?}");
        assert!(second.slices > first.slices, "{first:?} then {second:?}");
    }
}
