//! The `result_file` reader on fuzzed bytes (osprim_fuzz::result_file; docs/fuzzing.md).
#![no_main]

osprim_fuzz::fuzz_reader!(osprim_fuzz::result_file);
