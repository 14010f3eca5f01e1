//! The `history_import` reader on fuzzed bytes (osprim_fuzz::history_import; docs/fuzzing.md).
#![no_main]

osprim_fuzz::fuzz_reader!(osprim_fuzz::history_import);
