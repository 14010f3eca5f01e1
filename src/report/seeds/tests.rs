//! Tests of the seed view on the real fixture (`tests/fixtures/default-run.json`).
