//! From samples to what a run says: a benchmark's samples become a result row ([`analyse`]),
//! rows combine into derived rows ([`derive`]), and two runs are set side by side
//! ([`compare`]), or measured side by side and paired ([`ab`]). Statistics come from `stats`;
//! nothing here measures or prints.

#![forbid(unsafe_code)]

pub mod ab;
pub mod analyse;
pub mod cold;
pub mod compare;
pub mod derive;
pub mod history;
pub mod stability;
