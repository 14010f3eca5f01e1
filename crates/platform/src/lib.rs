//! The machine osprim measures on, and how a run holds it: which clock and at what scale
//! ([`timer`]), what the machine is ([`env`]), which CPU a run is pinned to ([`placement`]),
//! whether that CPU was free ([`availability`]), the machine's own level at a moment
//! ([`reference`]), Ctrl-C and the files to remove on it
//! ([`interrupt`]), the run's private scratch directory ([`scratch`]), and the threads a run started, by
//! name ([`tasks`]).

#![forbid(unsafe_code)]

pub mod availability;
pub mod env;
pub mod interrupt;
pub mod memory;
pub mod placement;
pub mod reference;
pub mod scratch;
pub mod tasks;
pub mod timer;
