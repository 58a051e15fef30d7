//! Seed inputs for the fuzz targets, made with the engine's own encoders: what the stable
//! corpus test (`tests/fuzz_corpus.rs`) runs and what `FUZZ_WRITE_SEEDS=1` commits to
//! `fuzz/corpus/<target>`. A few of each, valid, so that mutations reach past the checksums.

use crate::key::{push_trailer, user_part, Kind};
use crate::namespace_options::NamespaceOptions;
use crate::storage::{IoPurpose, MemStorage};
use crate::table::{table_name, TableBuilder};
use crate::version::{append_record, VersionEdit};
use crate::vlog::{encode_record, Record};

fn record(seq: u64, kind: Kind, batch_end: bool, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record(
        &mut out,
        &Record {
            seq,
            nsid: 1,
            kind,
            batch_end,
            key,
            value,
        },
    );
    out
}

/// Value-log records (the segment's body after its header): one put, a batch of a put and a
/// delete, and a larger value.
pub fn vlog_segment() -> Vec<Vec<u8>> {
    let one = record(1, Kind::Put, true, b"user:1", br#"{"a": {"b": 1}}"#);
    let batch = [
        record(2, Kind::Put, false, b"k1", b"v1"),
        record(3, Kind::Delete, true, b"k2", b""),
    ]
    .concat();
    let big = record(4, Kind::Put, true, b"big", &[0xab; 600]);
    vec![one.clone(), batch.clone(), [one, batch, big].concat()]
}

/// Whole table files: a few entries in one block, more over several small blocks, and a
/// table of value-log addresses (which gets a point index).
pub fn table_file() -> Vec<Vec<u8>> {
    [
        (4usize, 4096usize, false),
        (40, 256, false),
        (30, 256, true),
    ]
    .into_iter()
    .filter_map(|(n, block, addrs)| table(n, block, addrs))
    .collect()
}

fn table(entries: usize, block_size: usize, addrs: bool) -> Option<Vec<u8>> {
    let storage = MemStorage::new();
    let mut b = TableBuilder::new(&storage, 1, block_size, 10).ok()?;
    for i in 0..entries {
        let key = format!("key{i:04}");
        let kind = if i % 7 == 3 { Kind::Delete } else { Kind::Put };
        let mut ikey = user_part(1, key.as_bytes());
        push_trailer(&mut ikey, 100 + i as u64, kind);
        let mut value = Vec::new();
        match (addrs, kind) {
            (false, _) => value.extend_from_slice(format!("value {i}").as_bytes()),
            (true, Kind::Delete) => crate::key::IndexValue::Tombstone.encode(&mut value),
            (true, Kind::Put) => crate::key::IndexValue::Addr {
                addr: crate::key::ValueAddr {
                    segment: 3,
                    offset: 64 * i as u64,
                    len: 40,
                },
                inline: None,
            }
            .encode(&mut value),
        }
        b.add(&ikey, &value).ok()?;
    }
    b.finish().ok()?;
    crate::storage::read_all(&storage, &table_name(1), IoPurpose::Other).ok()
}

/// Manifest records (after the header): a new database's first edit, and that edit followed
/// by one that creates a namespace with settings and destroys another.
pub fn manifest() -> Vec<Vec<u8>> {
    let first = VersionEdit {
        log_start: Some((1, 16)),
        next_file: Some(2),
        last_seq: Some(0),
        next_nsid: Some(2),
        created_ns: vec![(1, "default".into())],
        usage_base: Some(vec![(1, 0)]),
        ..VersionEdit::default()
    };
    let mut options = NamespaceOptions {
        capacity: Some(1 << 20),
        ..NamespaceOptions::default()
    };
    options.shares.limit_ops = 20;
    let second = VersionEdit {
        last_seq: Some(9),
        next_nsid: Some(4),
        created_ns: vec![(2, "tenant-a".into()), (3, "tenant-b".into())],
        destroyed_ns: vec![3],
        ns_options: vec![(2, options)],
        usage_delta: vec![(2, 120)],
        vlog_dead: vec![(1, 64)],
        ns_garbage: vec![(2, 1, 64)],
        ..VersionEdit::default()
    };
    let mut one = Vec::new();
    let mut two = Vec::new();
    let framed = append_record(&mut one, &first.encode(), "seed")
        .and_then(|_| append_record(&mut two, &first.encode(), "seed"))
        .and_then(|_| append_record(&mut two, &second.encode(), "seed"));
    match framed {
        Ok(()) => vec![one, two, second.encode()],
        Err(_) => Vec::new(),
    }
}

/// JSON documents a client stores: nested attributes, arrays, escapes, numbers at the edges.
pub fn index_extract() -> Vec<Vec<u8>> {
    [
        &br#"{"a": {"b": 1}, "b": "x"}"#[..],
        br#"{"a": 1.5e300, "b": [1, 2, {"a": 3}]}"#,
        br#"{"a": "caf\u00e9 \"q\"", "b": true, "c": null}"#,
        br#"{"a": {"b": -9223372036854775808}, "a": 2}"#,
        br#"[{"a": 1}]"#,
        b"{\"a\": \"\xff\"}",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect()
}

/// Filter documents: comparisons, ranges, sets, prefixes, nested paths.
pub fn query_filter() -> Vec<Vec<u8>> {
    [
        &br#"{"a": 1}"#[..],
        br#"{"a": {"$gt": 1, "$lt": 9}, "b": {"$in": [1, "x"]}}"#,
        br#"{"a.b": {"$gte": "m", "$lte": "z"}}"#,
        br#"{"a": {"$prefix": "ab"}}"#,
        br#"{"a": {"$ne": null}, "c": {"$exists": true}}"#,
        br#"{"a": {"$bogus": 1}}"#,
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect()
}
