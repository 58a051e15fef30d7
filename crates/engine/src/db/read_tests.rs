use super::super::database::Db;
use super::super::readable::Readable;
use crate::options::Options;
use crate::storage::MemStorage;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A get loads the super version, then the memtable is frozen and the key written again
/// in the new memtable, which that super version does not have; then the get reads the
/// visible seqno (the new write's). The get may answer the old value (it began before the
/// write), but must not cache it as current at that seqno: the next get, begun after the
/// write was acknowledged, answered the old value from the row cache.
#[test]
fn a_get_racing_a_memtable_switch_never_caches_the_value_it_replaced() {
    let opts = Options {
        row_cache_bytes: 1 << 20,
        ..Options::default()
    };
    let db = Db::builder(opts)
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let ns = db.create_namespace("t").unwrap();
    ns.put(b"k", b"old").unwrap();
    // The key's first miss: not cached (the doorkeeper), so the racing get below, its
    // second, is the one that fills the cache.
    assert_eq!(ns.get(b"k").unwrap().as_deref(), Some(&b"old"[..]));
    let (writer, once) = (ns.clone(), AtomicBool::new(false));
    *db.inner.hooks.after_super_version.lock() = Some(Box::new(move |inner| {
        if !once.swap(true, Ordering::SeqCst) {
            inner.flusher().flush().unwrap();
            writer.put(b"k", b"new").unwrap();
        }
    }));
    let first = ns.get(b"k").unwrap();
    *db.inner.hooks.after_super_version.lock() = None;
    assert!(
        matches!(first.as_deref(), Some(b"old") | Some(b"new")),
        "{first:?}"
    );
    assert_eq!(ns.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
}
