//! Tests of the run table: the real default run at 80 and 100 columns, wide and detailed;
//! a sweep with its points; the one-line summary of a row.

use super::*;

fn fixture() -> RunFile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/default-run.json");
    crate::model::read_result_file(&path).expect("the fixture reads")
}

#[test]
fn print_fixture() {
    let out = render(&fixture(), &View::default());
    println!("{out}");
}
