//! The `render` reader on fuzzed bytes (osprim_fuzz::render; docs/fuzzing.md).
#![no_main]

osprim_fuzz::fuzz_reader!(osprim_fuzz::render);
