//! The `finish` reader on fuzzed bytes (osprim_fuzz::finish; docs/fuzzing.md).
#![no_main]

use libfuzzer_sys::{fuzz_mutator, fuzz_target};

fuzz_target!(|data: &[u8]| {
    osprim_fuzz::finish(data);
});

// Half the mutations are structured (a value of the JSON document changed), half libFuzzer's.
fuzz_mutator!(|data: &mut [u8], size: usize, max_size: usize, seed: u32| {
    if seed % 2 == 0
        && let Some(m) = osprim_fuzz::mutate(&data[..size], u64::from(seed))
        && m.len() <= max_size
    {
        data[..m.len()].copy_from_slice(&m);
        return m.len();
    }
    libfuzzer_sys::fuzzer_mutate(data, size, max_size)
});
