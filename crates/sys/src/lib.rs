//! Small safe wrappers around the system interfaces that nix does not cover the way a timed
//! loop needs: no allocation, no error formatting, a plain return value to check.
//!
//! Each risky mechanism has one home here: the raw system-call instruction (`raw`), signal
//! dispositions (`disposition`), the process-wide SIGSEGV handler (`segv`), the userfaultfd
//! binding (`uffd`), forking children (`process`), reaping them with a deadline (`reap`),
//! helper programs started with `exec` and killed with their parent (`spawn`), a mount in a
//! private mount namespace (`mountns`), the hand-written stack switches (`stack_switch`), and
//! counting a closure's system calls by syscall user dispatch (`sud`), and the shared-memory byte
//! ring whose ends sleep on futexes (`ring`), and io_uring submissions whose buffers the kernel is done
//! with before each call returns (`uring`).
//!
//! Every file here that uses `unsafe` opens with `#![allow(unsafe_code)]` and a `# Safety`
//! section, so `grep -l allow\(unsafe_code\) src -r` lists them all.

pub mod altstack;
pub mod async_owner;
pub mod clock;
pub mod cpu;
pub mod disposition;
pub mod dl;
pub mod fault;
pub mod futex;
pub mod futex_private;
pub mod lifecycle;
pub mod mountns;
pub mod msg;
pub mod mutex;
pub mod perf;
pub mod process;
pub mod raw;
pub mod raw_errno;
pub mod reap;
pub mod reserve;
pub mod ring;
pub mod sandbox;
pub mod sched;
pub mod schedstat;
pub mod seccomp;
pub mod segv;
pub mod shm;
pub mod sighook;
pub mod spawn;
pub mod stack_switch;
pub mod stamp_signal;
pub mod sud;
pub mod switches;
pub mod testing;
pub mod thread;
pub mod timer;
pub mod tracefs;
pub mod tracer;
pub mod tsc;
pub mod ucontext;
pub mod uffd;
pub mod uring;
pub mod worker;
pub mod wprotect;
