//! The `journal` reader on fuzzed bytes (osprim_fuzz::journal; docs/fuzzing.md).
#![no_main]

osprim_fuzz::fuzz_reader!(osprim_fuzz::journal);
