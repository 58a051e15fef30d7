use super::*;
use crate::index::entry_payload;
use crate::key::{self, Kind};
use crate::memtable::MemValue;
use crate::storage::{MemStorage, StorageRef};
use crate::{Db, Filter, FindOptions, Options, Readable};
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// An index entry's key in key format 1: the number's `f64` bits alone, made to sort.
fn old_key(x: f64, pk: &[u8]) -> Vec<u8> {
    let bits = x.to_bits();
    let sortable = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    [&[0x04][..], &sortable.to_be_bytes(), pk].concat()
}

/// What a version before issue 60 left: an index of key format 1, ready, its entries
/// keyed by `f64` (2^53 and 2^53 + 1 on one key). After an open it answers exactly.
#[test]
fn an_index_of_the_old_key_format_is_rebuilt_at_open() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let ids = [9007199254740992u64, 9007199254740993, 5];
    let old_id = {
        let db = Db::builder(Options::default())
            .open_storage(storage.clone())
            .unwrap();
        let ns = db.create_namespace("n").unwrap();
        for (i, id) in ids.iter().enumerate() {
            let v = format!("{{\"id\": {id}}}");
            ns.put(format!("k{i}").as_bytes(), v.as_bytes()).unwrap();
        }
        let inner = &db.inner;
        let w = inner.writes.writer.lock();
        let mut vs = inner.versions.lock();
        let id = vs.namespaces.next;
        let seq = inner.writes.visible_seq.load(Ordering::Acquire);
        let mem = inner.versions.super_version().mem.clone();
        for (i, v) in ids.iter().enumerate() {
            let mut user = id.to_be_bytes().to_vec();
            user.extend_from_slice(&old_key(*v as f64, format!("k{i}").as_bytes()));
            let payload = entry_payload(IndexKind::Classic, key::ValueAddr::NONE, seq);
            let value = MemValue {
                kind: Kind::Put,
                value: Bytes::from(payload),
                addr: key::ValueAddr::NONE,
            };
            mem.insert(&user, seq, value);
        }
        let def = IndexDef {
            id,
            ns: ns.id(),
            attr: "id".into(),
            kind: IndexKind::Classic,
            ready: None,
            keys: 1,
        };
        let edit = VersionEdit {
            created_index: vec![def],
            ready_index: vec![(id, seq)],
            next_nsid: Some(id + 1),
            ..VersionEdit::default()
        };
        inner.versions.log_edit(&mut vs, edit).unwrap();
        inner.index_admin().reload(&vs);
        drop((vs, w));
        db.flush().unwrap();
        id
    };
    let db = Db::builder(Options::default())
        .open_storage(storage)
        .unwrap();
    let ns_id = db
        .inner
        .versions
        .lock()
        .namespaces
        .live
        .iter()
        .find(|(_, n)| *n == "n")
        .map(|(id, _)| *id)
        .unwrap();
    let ns = db.namespace(ns_id).unwrap();
    let f = Filter::parse_str(r#"{"id": 9007199254740993}"#).unwrap();
    let found = ns.find(&f, &FindOptions::default()).unwrap();
    let pks: Vec<&[u8]> = found.value.iter().map(|r| &r.pk[..]).collect();
    assert_eq!(pks, [b"k1"]);
    assert_eq!(found.stats.plan, "classic index on id");
    let defs: Vec<IndexDef> = db
        .inner
        .versions
        .lock()
        .namespaces
        .indexes_of(ns_id)
        .cloned()
        .collect();
    assert_eq!(defs.len(), 1, "{defs:?}");
    assert!(defs[0].id != old_id && defs[0].keys == KEY_FORMAT && defs[0].ready.is_some());
}

/// A flush finds the tombstones for the index entries newer versions supersede, then puts
/// them into the memtable it writes. An index dropped in between, and forgotten once none of
/// its entries was left, got them all the same: a table held entries of an id no tree owned,
/// kept by every flush and compaction. Tombstones now go in only for indexes still in the
/// set, checked under its lock, and an id stays unforgotten while the set holds it.
#[test]
fn a_flush_gives_no_tombstones_to_an_index_dropped_while_it_ran() {
    use super::super::supersede::supersede_index_entries;
    use crate::options::BackgroundRunner;
    use crate::IndexKind;

    // No background run (backfills run in the call): every flush below is the test's.
    let opts = Options {
        background_runner: Some(BackgroundRunner(Arc::new(|| {}))),
        background_threads: 1,
        ..Options::default()
    };
    let db = Db::builder(opts.clone())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let inner = &db.inner;
    let freeze = || {
        let mut w = inner.writes.writer.lock();
        inner.versions.freeze(&mut w, &opts);
    };
    let ns = db.create_namespace("a").unwrap();
    ns.create_index("n", IndexKind::Classic).unwrap();
    ns.put(b"k", br#"{"n":1}"#).unwrap();
    freeze();
    inner.flusher().flush_oldest().unwrap();
    db.compact_all().unwrap();
    // A new version without `n`: no entry of the index in the memtable.
    ns.put(b"k", br#"{"m":2}"#).unwrap();
    freeze();
    let frozen = inner.versions.super_version().imm.last().cloned().unwrap();
    // The flush's first half: the entry of n = 1 is superseded.
    let tombstones = supersede_index_entries(
        &frozen.mem,
        &inner.versions.super_version().version,
        &inner.indexes.read().clone(),
        &inner.vlog_reader,
        &inner.counters,
    )
    .unwrap();
    assert_eq!(tombstones.len(), 1);
    // The drop, whole, and the background's look for ids to forget, meanwhile.
    ns.drop_index("n").unwrap();
    inner.namespace_admin().forget_destroyed().unwrap();
    assert!(
        inner.namespaces.read().destroyed.is_empty(),
        "the index is forgotten"
    );
    // The flush's second half.
    inner.flusher().insert_tombstones(&frozen.mem, &tombstones);
    inner.flusher().flush_oldest().unwrap();
    let report = db.verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}
