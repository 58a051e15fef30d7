//! Entry points for the fuzz targets in `crates/engine/fuzz`: each feeds arbitrary bytes to a
//! decoder of bytes that come from storage, and says whether the bytes got past it (something
//! decoded), so that the stable corpus test (`tests/fuzz_corpus.rs`) can tell it reached the
//! decoder. Not part of the stable API.

pub mod seeds;

use crate::storage::{IoPurpose, MemStorage, Storage};
use std::sync::Arc;

/// Value-log record decoding and replay of a segment made of `data`: true when a record
/// decoded or replayed.
pub fn vlog_segment(data: &[u8]) -> bool {
    let mut decoded = crate::vlog::decode_record(data).is_ok();
    let storage = MemStorage::new();
    if let Ok(f) = storage.create(&crate::vlog::segment_name(1)) {
        let mut seg = b"CBRSVLOG\x01\0\0\0\0\0\0\0".to_vec();
        seg.extend_from_slice(data);
        let _ = f.append(&seg, IoPurpose::Log);
        let _ = crate::vlog::replay_segment(&storage, 1, 0, true, |_| {
            decoded = true;
            Ok(())
        });
    }
    decoded
}

/// Table decoding: `data` as a whole table file, read through footer, index and blocks:
/// true when the table opened.
pub fn table_file(data: &[u8]) -> bool {
    let storage = MemStorage::new();
    let Ok(f) = storage.create(&crate::table::table_name(1)) else {
        return false;
    };
    let _ = f.append(data, IoPurpose::Other);
    let cache = Arc::new(crate::table::BlockCache::new(1 << 20));
    let counters = Arc::default();
    if let Ok(r) = crate::table::TableReader::open(&storage, 1, cache, counters) {
        let r = Arc::new(r);
        r.prefetch_probe(7);
        let _ = r.may_contain(7, &Default::default());
        if let Some(p) = r.point_index(&Default::default()) {
            let _ = p.probe(7);
            // A key of the seeds' tables (`seeds::table_file`): its fingerprint is there.
            let user = crate::key::user_part(1, b"key0001");
            let _ = p.probe(crate::table::filter::filter_hash(&user));
        }
        let _ = r.get(
            b"\0\0\0\0key",
            b"\0\0\0\0key\0\0\0\0\0\0\x01\x01",
            &Default::default(),
        );
        if let Ok(mut it) = r.iter() {
            if it.seek_to_first().is_ok() {
                while it.valid() && it.advance().is_ok() {}
            }
        }
        return true;
    }
    false
}

/// Manifest decoding: `data` as the records of the live manifest: true when an edit decoded
/// or the manifest recovered.
pub fn manifest(data: &[u8]) -> bool {
    let decoded = crate::version::VersionEdit::decode(data).is_some();
    let storage: crate::storage::StorageRef = Arc::new(MemStorage::new());
    let mut m = b"CBRSMANI\x01\0\0\0\0\0\0\0".to_vec();
    m.extend_from_slice(data);
    let ok = storage
        .create("MANIFEST-000001")
        .and_then(|f| f.append(&m, IoPurpose::Log))
        .and_then(|_| storage.create("CURRENT"))
        .and_then(|f| f.append(b"MANIFEST-000001\n", IoPurpose::Log));
    if ok.is_ok() {
        let ctx = crate::version::TableCtx::new(
            storage,
            Arc::new(crate::table::BlockCache::new(0)),
            Arc::default(),
            16,
        );
        return crate::version::VersionSet::recover(&ctx, 7).is_ok() || decoded;
    }
    decoded
}

/// Attribute extraction from a value a client wrote: it must agree with `serde_json`'s
/// reading of the same bytes (a document it refuses yields nothing). True when it extracted
/// an attribute.
pub fn index_extract(data: &[u8]) -> bool {
    let paths: Vec<crate::index::AttrPath> = ["a", "a.b", "b"]
        .iter()
        .filter_map(|p| crate::index::AttrPath::parse(p).ok())
        .collect();
    let refs: Vec<&crate::index::AttrPath> = paths.iter().collect();
    let got = crate::index::extract(data, &refs);
    let want: Vec<_> = match serde_json::from_slice::<serde_json::Value>(data) {
        Ok(v) => paths.iter().map(|p| p.scalar(&v)).collect(),
        Err(_) => vec![None; paths.len()],
    };
    assert_eq!(got, want, "extraction disagrees with serde_json");
    got.iter().any(Option::is_some)
}

/// A filter document from a client: parsed, planned into key ranges, and checked against
/// itself as a document. True when it parsed as a filter.
pub fn query_filter(data: &[u8]) -> bool {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return false;
    };
    let Ok(f) = crate::query::Filter::parse(&doc) else {
        return false;
    };
    for (path, _) in &f.conditions {
        let _ = crate::query::index_ranges(&f, path);
    }
    let _ = f.matches(&doc);
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_points_take_garbage() {
        for data in [&b""[..], b"\x01\x02\x03", &[0xff; 200], &[0; 64]] {
            let _ = super::vlog_segment(data);
            let _ = super::table_file(data);
            let _ = super::manifest(data);
        }
    }

    /// The query targets on a few seeds (the fuzzer runs them on many more).
    #[test]
    fn query_targets_hold_on_seeds() {
        for seed in [
            &br#"{"a": {"b": 1}, "b": "x"}"#[..],
            br#"{"a": {"$gt": 1, "$lt": 9}, "b": {"$in": [1, "x"]}}"#,
            br#"{"a": {"$prefix": "ab"}}"#,
            br#"{"a": "\ud800"}"#,
            b"[1, 2",
            b"\xff",
        ] {
            let _ = super::index_extract(seed);
            let _ = super::query_filter(seed);
        }
    }
}
