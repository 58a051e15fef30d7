//! Many writers and readers at once: commit groups, memtable switches and compactions under
//! load; every write is readable by its writer at once and by everyone after.

use crate::common;

use cerberus_engine::storage::MemStorage;
use cerberus_engine::Readable;
use cerberus_engine::{Db, WriteBatch};
use std::sync::Arc;

#[test]
fn concurrent_writers_and_readers() {
    let mut opts = common::small_options();
    opts.sync = true;
    let db = Arc::new(
        Db::builder(opts.clone())
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap(),
    );
    let threads: Vec<_> = (0..6u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..2_000u32 {
                    let key = format!("t{t}-{i:05}");
                    let value = common::value_for(i, u64::from(t), 40 + (i % 200) as usize);
                    if i % 10 == 0 {
                        let mut b = WriteBatch::new();
                        b.put(key.clone().into_bytes(), value.clone());
                        b.put(format!("{key}-b").into_bytes(), value.clone());
                        db.default_namespace().write(b).unwrap();
                    } else {
                        db.default_namespace().put(key.as_bytes(), &value).unwrap();
                    }
                    assert_eq!(
                        db.default_namespace()
                            .get(key.as_bytes())
                            .unwrap()
                            .as_deref(),
                        Some(&value[..])
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let check = |db: &Db| {
        for t in 0..6u32 {
            for i in 0..2_000u32 {
                let key = format!("t{t}-{i:05}");
                let value = common::value_for(i, u64::from(t), 40 + (i % 200) as usize);
                assert_eq!(
                    db.default_namespace()
                        .get(key.as_bytes())
                        .unwrap()
                        .as_deref(),
                    Some(&value[..]),
                    "{key}"
                );
                if i % 10 == 0 {
                    let b = db
                        .default_namespace()
                        .get(format!("{key}-b").as_bytes())
                        .unwrap();
                    assert_eq!(b.as_deref(), Some(&value[..]));
                }
            }
        }
    };
    check(&db);
    let stats = db.stats();
    assert_eq!(stats.puts, 6 * 2_200);
    assert!(stats.flushes > 0, "{stats:?}");
    let storage = db.storage().clone();
    db.close().unwrap();
    drop(db);
    let db = Db::builder(opts).open_storage(storage).unwrap();
    check(&db);
}

#[test]
fn wait_for_compactions_leaves_a_settled_tree() {
    let opts = common::small_options();
    let db = Db::builder(opts.clone())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    for i in 0..20_000u32 {
        db.default_namespace()
            .put(
                format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).as_bytes(),
                &[1; 100],
            )
            .unwrap();
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(
        s.levels[0].tables < opts.l0_compaction_trigger,
        "L0 still has {} tables",
        s.levels[0].tables
    );
    let mut limit = opts.level1_bytes;
    for (l, level) in s.levels.iter().enumerate().take(s.levels.len() - 1).skip(1) {
        assert!(
            level.target_bytes() < limit,
            "L{l} holds {} of {limit} bytes",
            level.target_bytes()
        );
        limit *= opts.level_size_ratio;
    }
}
