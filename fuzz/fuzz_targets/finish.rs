//! The `finish` reader on fuzzed bytes (osprim_fuzz::finish; docs/fuzzing.md).
#![no_main]

osprim_fuzz::fuzz_reader!(osprim_fuzz::finish);
