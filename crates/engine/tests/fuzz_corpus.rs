//! The fuzz targets of `fuzz/` on stable: each target's committed seed corpus
//! (`fuzz/corpus/<target>`), the seeds `cerberus_engine::fuzzing::seeds` makes with the
//! engine's own encoders, and a few thousand deterministic mutations of them, through exactly
//! the function the target calls. Each run must see inputs taken and inputs refused, so that
//! it cannot pass by reaching no decoder. `FUZZ_WRITE_SEEDS=1` rewrites the committed seeds.

use cerberus_engine::fuzzing::{self, seeds};
use cerberus_proto::fuzzing::Tally;
use std::path::PathBuf;

const MUTATIONS: usize = 3000;

fn check(target: &str, seeds: Vec<Vec<u8>>, entry: impl Fn(&[u8]) -> bool) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/corpus/{target}"));
    assert!(!seeds.is_empty(), "{target}: no seeds made");
    let t = Tally::run(&dir, seeds, MUTATIONS, entry);
    eprintln!("{target}: {t:?}");
}

#[test]
fn vlog_segment_corpus() {
    check("vlog_segment", seeds::vlog_segment(), fuzzing::vlog_segment);
}

#[test]
fn table_file_corpus() {
    check("table_file", seeds::table_file(), fuzzing::table_file);
}

#[test]
fn manifest_corpus() {
    check("manifest", seeds::manifest(), fuzzing::manifest);
}

#[test]
fn index_extract_corpus() {
    check(
        "index_extract",
        seeds::index_extract(),
        fuzzing::index_extract,
    );
}

#[test]
fn query_filter_corpus() {
    check("query_filter", seeds::query_filter(), fuzzing::query_filter);
}
