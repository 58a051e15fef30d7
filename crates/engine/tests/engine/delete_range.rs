//! Deleting by key range and by prefix (issue 65): exactly the keys of the range go, in
//! bounded steps that resume where they stopped; index entries and usage follow the deletes;
//! another namespace's keys stay; a read-only namespace refuses.

use crate::common;

use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{
    Db, ErrorKind, Filter, FindOptions, IndexKind, Namespace, Readable, DELETE_RANGE_BATCH,
};
use std::sync::Arc;

fn open() -> Db {
    let storage: StorageRef = Arc::new(MemStorage::new());
    Db::builder(common::small_options())
        .open_storage(storage)
        .expect("open")
}

fn keys(ns: &Namespace) -> Vec<Vec<u8>> {
    ns.iter(Default::default())
        .unwrap()
        .map(|r| r.unwrap().0.to_vec())
        .collect()
}

fn fill(ns: &Namespace, prefix: &str, n: u32) {
    for i in 0..n {
        let v = format!(r#"{{"city": "{prefix}", "i": {i}}}"#);
        ns.put(format!("{prefix}{i:05}").as_bytes(), v.as_bytes())
            .unwrap();
    }
}

#[test]
fn a_range_deletes_exactly_its_keys_end_exclusive() {
    let db = open();
    let ns = db.create_namespace("a").unwrap();
    fill(&ns, "k", 50);
    assert_eq!(ns.delete_range(b"k00010", b"k00020").unwrap(), 10);
    let left = keys(&ns);
    assert_eq!(left.len(), 40);
    assert!(left.contains(&b"k00009".to_vec()) && left.contains(&b"k00020".to_vec()));
    assert!(!left.contains(&b"k00010".to_vec()) && !left.contains(&b"k00019".to_vec()));
    // Nothing left there; an inverted range is empty; an empty end is no bound.
    assert_eq!(ns.delete_range(b"k00010", b"k00020").unwrap(), 0);
    assert_eq!(ns.delete_range(b"k00040", b"k00030").unwrap(), 0);
    assert_eq!(ns.delete_range(b"k00045", b"").unwrap(), 5);
    assert_eq!(keys(&ns).len(), 35);
}

#[test]
fn a_prefix_deletes_its_keys_only_across_batches_and_other_namespaces_keep_theirs() {
    let db = open();
    let a = db.create_namespace("a").unwrap();
    let b = db.create_namespace("b").unwrap();
    let n = DELETE_RANGE_BATCH as u32 * 2 + 7;
    fill(&a, "user:", n);
    fill(&a, "users", 3);
    fill(&a, "item:", 5);
    fill(&b, "user:", 20);
    db.flush().unwrap();
    assert_eq!(a.delete_prefix(b"user:").unwrap(), u64::from(n));
    let left = keys(&a);
    assert_eq!(left.len(), 8, "users* and item:* remain");
    assert!(left.iter().all(|k| !k.starts_with(b"user:")));
    assert_eq!(keys(&b).len(), 20, "the other namespace keeps its keys");
    assert_eq!(
        a.delete_prefix(b"").unwrap(),
        8,
        "an empty prefix is every key"
    );
    assert!(keys(&a).is_empty());
}

#[test]
fn a_bounded_delete_stops_at_its_limit_and_resumes_where_it_stopped() {
    let db = open();
    let ns = db.create_namespace("a").unwrap();
    fill(&ns, "k", 25);
    let first = ns.delete_range_limit(b"k", b"l", 10).unwrap();
    assert_eq!(first.deleted, 10);
    assert_eq!(first.next_start.as_deref(), Some(&b"k00010"[..]));
    let second = ns
        .delete_range_limit(first.next_start.as_deref().unwrap(), b"l", 10)
        .unwrap();
    assert_eq!(second.deleted, 10);
    let third = ns
        .delete_range_limit(second.next_start.as_deref().unwrap(), b"l", 10)
        .unwrap();
    assert_eq!((third.deleted, third.next_start), (5, None));
    assert!(keys(&ns).is_empty());
}

#[test]
fn a_query_after_delete_prefix_finds_no_deleted_record_and_usage_drops() {
    let db = open();
    let ns = db.create_namespace("a").unwrap();
    ns.create_index("city", IndexKind::Vas).unwrap();
    fill(&ns, "oslo:", 300);
    fill(&ns, "lima:", 100);
    db.flush().unwrap();
    let before = ns.stats().unwrap().space;
    assert_eq!(ns.delete_prefix(b"oslo:").unwrap(), 300);
    db.flush().unwrap();
    let oslo = Filter::parse_str(r#"{"city": "oslo:"}"#).unwrap();
    let found = ns.find(&oslo, &FindOptions::default()).unwrap();
    assert!(
        found.value.is_empty(),
        "deleted records found: {}",
        found.value.len()
    );
    let lima = Filter::parse_str(r#"{"city": "lima:"}"#).unwrap();
    assert_eq!(
        ns.find(&lima, &FindOptions::default()).unwrap().value.len(),
        100
    );
    let after = ns.stats().unwrap().space;
    assert!(
        after.used_bytes < before.used_bytes / 2 && after.index_bytes < before.index_bytes / 2,
        "usage {} -> {}, index {} -> {}",
        before.used_bytes,
        after.used_bytes,
        before.index_bytes,
        after.index_bytes
    );
    let (kept, counted) = ns.check_usage().unwrap();
    assert_eq!(kept, counted, "usage kept equals a recount");
}

#[test]
fn a_read_only_namespace_refuses_a_range_delete_and_keeps_its_keys() {
    let db = open();
    let ns = db.create_namespace("a").unwrap();
    fill(&ns, "k", 5);
    ns.set_read_only(true).unwrap();
    let err = ns.delete_prefix(b"k").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NamespaceReadOnly);
    assert_eq!(keys(&ns).len(), 5);
}
