//! Checkpoints taken while a writer goes on: the copy opens to a prefix of the writes (at
//! least every write acknowledged before the call, batches whole), with its namespaces,
//! settings, indexes and index entries; the source keeps working.

use crate::common;

use cerberus_engine::{
    Db, Filter, FindOptions, IndexKind, NamespaceOptions, Options, Readable, StorageKind,
    WriteBatch,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    // Past the inline threshold: the values live in the value log.
    format!(
        r#"{{"n": {}, "i": {i}, "pad": "{}"}}"#,
        i % 10,
        "p".repeat(40)
    )
    .into_bytes()
}

fn options() -> Options {
    let mut o = common::small_options();
    o.vlog_gc_dead_ratio = 0.3;
    o
}

/// Keys `i` of namespace `app` in `db`, checked against their values.
fn keys_of(db: &Db, nsid: u32) -> BTreeSet<u64> {
    let ns = db.namespace(nsid).unwrap();
    ns.iter(Default::default())
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            let i: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(v.as_ref(), value(i).as_slice(), "value of key {i}");
            i
        })
        .collect()
}

/// Keys found by `{"n": n}` (through the index), all pages.
fn found(db: &Db, nsid: u32, n: u64) -> BTreeSet<u64> {
    let ns = db.namespace(nsid).unwrap();
    let filter = Filter::parse_str(&format!(r#"{{"n": {n}}}"#)).unwrap();
    let mut opts = FindOptions::default();
    let mut keys = BTreeSet::new();
    loop {
        let page = ns.find(&filter, &opts).unwrap();
        for f in &page.value {
            keys.insert(std::str::from_utf8(&f.pk[1..]).unwrap().parse().unwrap());
        }
        match page.continuation {
            Some(c) => opts.continuation = Some(c),
            None => return keys,
        }
    }
}

/// Writes key i = value i in order (keys 10m..10m+2 as one batch) until `stop`; `acked`
/// counts the keys acknowledged. A second namespace overwrites a few keys, for GC.
fn writer(db: &Db, app: u32, churn: u32, stop: &AtomicBool, acked: &AtomicU64) {
    let (app, churn) = (db.namespace(app).unwrap(), db.namespace(churn).unwrap());
    let mut i = 0u64;
    while !stop.load(Ordering::Acquire) && i < 20_000 {
        if i.is_multiple_of(10) {
            let mut b = WriteBatch::new();
            for j in i..i + 3 {
                b.put(key(j), value(j));
            }
            app.write(b).unwrap();
            i += 3;
        } else {
            app.put(&key(i), &value(i)).unwrap();
            i += 1;
        }
        churn.put(&key(i % 50), &value(i)).unwrap();
        acked.store(i, Ordering::Release);
    }
}

#[test]
fn a_checkpoint_under_writes_opens_to_a_prefix_with_whole_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(tmp.path().join("src"), options()).unwrap());
    let settings = NamespaceOptions {
        capacity: Some(1 << 30),
        ..NamespaceOptions::default()
    };
    let app = db.create_namespace_with("app", settings).unwrap();
    app.create_index("n", IndexKind::Vas).unwrap();
    let churn = db.create_namespace("churn").unwrap().id();
    let app = app.id();
    let (stop, acked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let w = {
        let (db, stop, acked) = (db.clone(), stop.clone(), acked.clone());
        std::thread::spawn(move || writer(&db, app, churn, &stop, &acked))
    };
    while acked.load(Ordering::Acquire) < 1500 {
        std::thread::yield_now();
    }
    let before = acked.load(Ordering::Acquire);
    let dir = tmp.path().join("copy");
    let info = db.checkpoint(&dir).unwrap();
    // The writer goes on past the point before it stops.
    let after = acked.load(Ordering::Acquire);
    while acked.load(Ordering::Acquire) < after + 200 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Release);
    w.join().unwrap();
    assert!(info.files_linked > 0, "tables are linked: {info:?}");
    assert!(info.namespaces.contains(&app) && info.namespaces.contains(&churn));
    assert!(!tmp.path().join(".copy.checkpoint-tmp").exists());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    // A second checkpoint to the same directory is refused.
    let e = db.checkpoint(&dir).unwrap_err().to_string();
    assert!(e.contains("exists"), "{e}");

    let copy = Db::open(&dir, options()).unwrap();
    let keys = keys_of(&copy, app);
    let n = keys.len() as u64;
    assert_eq!(keys, (0..n).collect(), "a prefix of the writes");
    assert!(
        n >= before,
        "{n} keys, {before} acknowledged before the call"
    );
    assert!(n % 10 != 1 && n % 10 != 2, "a batch cut: {n} keys");
    let h = copy.namespace(app).unwrap();
    assert_eq!(h.options().capacity, Some(1 << 30));
    assert_eq!(h.list_indexes().unwrap().len(), 1);
    assert!(h.space().unwrap().used_bytes > 0);
    for m in [0, 3, 7] {
        let want: BTreeSet<u64> = (0..n).filter(|i| i % 10 == m).collect();
        assert_eq!(found(&copy, app, m), want, "find n = {m}");
    }
    // The copy is a database of its own; the source keeps working.
    copy.namespace(app).unwrap().put(b"x", b"y").unwrap();
    let total = acked.load(Ordering::Acquire);
    assert_eq!(keys_of(&db, app), (0..total).collect());
    assert_eq!(
        found(&db, app, 3).len() as u64,
        (0..total).filter(|i| i % 10 == 3).count() as u64
    );
}

#[test]
fn a_checkpoint_of_the_nand_model_opens_on_real_files() {
    let tmp = tempfile::tempdir().unwrap();
    let nand = cerberus_engine::storage::NandConfig {
        t_read: std::time::Duration::ZERO,
        t_prog: std::time::Duration::ZERO,
        channel_bytes_per_sec: 0,
        ..Default::default()
    };
    let db = Db::builder(options())
        .storage(StorageKind::Nand(nand))
        .open(tmp.path().join("src"))
        .unwrap();
    let ns = db.create_namespace("app").unwrap();
    for i in 0..500 {
        ns.put(&key(i), &value(i)).unwrap();
    }
    let info = db.checkpoint(tmp.path().join("copy")).unwrap();
    assert!(info.sequence >= 500, "{info:?}");
    let copy = Db::open(tmp.path().join("copy"), options()).unwrap();
    assert_eq!(keys_of(&copy, ns.id()), (0..500).collect());
}
