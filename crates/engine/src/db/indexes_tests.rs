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

/// An index's drop takes it out of the set, then drops its trees (and so its registry
/// entry). Another namespace destroyed in between rebuilds the set from the registry: the
/// index must not come back, or queries read it while its tables go (the stress test's index
/// storm saw a top-3 answer nothing through "the ranked walk of the index on n").
#[test]
fn a_destroy_during_an_index_drop_does_not_bring_the_index_back() {
    use crate::TopOptions;
    let db = Db::builder(Options::default())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    const N: u64 = 300;
    for i in 0..N {
        let v = serde_json::json!({ "n": i }).to_string();
        a.put(format!("k{i:05}").as_bytes(), v.as_bytes()).unwrap();
    }
    a.create_index("n", IndexKind::Vas).unwrap();
    db.wait_for_compactions().unwrap();
    let all = Filter::parse(&serde_json::json!({"n": {"$gte": 0}})).unwrap();
    let top = TopOptions {
        by: "n".into(),
        desc: true,
        k: 3,
        projection: None,
    };
    let want: Vec<Bytes> = (N - 3..N)
        .rev()
        .map(|i| Bytes::from(format!("k{i:05}")))
        .collect();
    let top_keys = || -> Vec<Bytes> {
        let got = a.top(&all, &top).unwrap();
        got.value.into_iter().map(|r| r.pk).collect()
    };
    assert_eq!(top_keys(), want);
    // The drop, step by step, with the destroy between its two halves.
    let admin = db.inner.index_admin();
    let id = admin.unlink(&a.entry, "n").unwrap();
    db.destroy_namespace(b.id()).unwrap();
    let dropped = db.inner.namespace_admin().drop_trees(&[id]);
    assert_eq!(
        top_keys(),
        want,
        "between the drop of the trees and its end"
    );
    admin.unlinked(id, dropped).unwrap();
    assert_eq!(top_keys(), want);
    assert!(a.list_indexes().unwrap().is_empty());
}
