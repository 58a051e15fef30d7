//! A manifest written before usage was tracked is recounted at open.

use crate::stats::Counters;
use crate::storage::{MemStorage, StorageRef};
use crate::table::BlockCache;
use crate::version::{TableCtx, VersionSet};
use crate::{Db, IndexKind, Options};
use std::sync::Arc;

#[test]
fn an_old_manifest_is_recounted_at_open() {
    let storage: StorageRef = Arc::new(MemStorage::new());
    let opts = Options::default();
    let open = || {
        Db::builder(opts.clone())
            .open_storage(storage.clone())
            .unwrap()
    };
    let want = {
        let db = open();
        let ns = db.create_namespace("t").unwrap();
        ns.create_index("g", IndexKind::Classic).unwrap();
        for i in 0..100 {
            let v = format!(r#"{{"g":{i}}}"#);
            ns.put(format!("k{i}").as_bytes(), v.as_bytes()).unwrap();
        }
        db.flush().unwrap();
        ns.check_usage().unwrap().0
    };
    assert!(want.records > 0 && want.index > 0, "{want:?}");
    // The manifest rewritten as an older engine wrote it: no usage.
    let ctx = TableCtx::new(
        storage.clone(),
        Arc::new(BlockCache::new(0)),
        Arc::new(Counters::default()),
        16,
    );
    let mut r = VersionSet::recover(&ctx, opts.num_levels).unwrap().unwrap();
    assert!(r.namespaces.usage_tracked);
    r.namespaces.usage_tracked = false;
    r.namespaces.usage.clear();
    drop(VersionSet::create(ctx.clone(), r).unwrap());
    let r = VersionSet::recover(&ctx, opts.num_levels).unwrap().unwrap();
    assert!(!r.namespaces.usage_tracked && r.namespaces.usage.is_empty());

    let db = open();
    let ns = db.namespace(1).unwrap();
    let (kept, counted) = ns.check_usage().unwrap();
    assert_eq!(kept, want);
    assert_eq!(kept, counted);
}
