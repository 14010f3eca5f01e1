//! osprim from the outside, in one test binary: its commands, files and processes as a user and
//! a script see them (one module per concern). One binary links osprim's crates once instead of
//! once per concern.
//!
//! Apart, each in a binary of its own, are the tests that must have their process to
//! themselves:
//! - `executions.rs`: makes its process a child subreaper and waits until the process has no
//!   child left at all, which the runs of other tests in the same process would never allow;
//! - `interrupt_random.rs` and `ipc_cleanup.rs`: likewise a subreaper, and they require that
//!   no System V object and no child of the process outlives a run, counting every object and
//!   child the process has, which the other tests' runs would add to;
//! - `ebpf_cleanup.rs`: likewise a subreaper; it kills a run of `interpose.ebpf` with SIGKILL
//!   while its BPF program is attached and requires that no program or link of it remains;
//! - `slowdown.rs`: measures for real a slowdown of known size, which other tests running
//!   beside it in the same process would blur.
//!
//! Tests here that make this process a child subreaper (`hang`) watch only the processes of
//! their own run, so they may share it.

#[path = "../common/mod.rs"]
mod common;

mod ab;
mod architecture;
mod cli;
mod compare;
mod crosscheck;
mod crosscheck_peers;
mod defects;
mod docs;
mod escapes;
mod exports;
mod fleet;
mod hang;
mod history;
mod history_guard;
mod journal;
mod latex;
mod limits;
mod output;
mod report_html;
mod rvm_crash;
mod schema;
mod seed_suite;
mod shell;
mod tail;
mod terminal;
