//! The index against a reference recomputed from the stored values, after random writes,
//! overwrites, deletes, a clean stop and a crash.

use super::index::put_u32;
use super::*;
use cerberus_engine::Options;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// Runs queued tasks one at a time, as a core would, until none is left; the backlog never
/// passes its bound by more than a scan page of each of two namespaces.
fn drain(dedup: &Dedup, db: &Db, queue: &mut VecDeque<DedupWork>) {
    let most = dedup.max_backlog + 2 * (SCAN_PAGE as u64 + 1);
    while let Some(w) = queue.pop_front() {
        let mut more = Vec::new();
        dedup.run(db, w, &mut |m| more.push(m)).unwrap();
        for m in more {
            dedup.queued();
            queue.push_back(m);
        }
        assert!(dedup.backlog() <= most, "backlog {}", dedup.backlog());
    }
    assert_eq!(dedup.backlog(), 0);
}

fn submit(dedup: &Dedup, queue: &mut VecDeque<DedupWork>, w: DedupWork) {
    dedup.queued();
    queue.push_back(w);
}

/// Chunk reference counts and byte totals of what `ns` stores now.
fn reference(db: &Db, ns: u32, chunker: Chunker) -> (HashMap<[u8; 20], u32>, u64, u64) {
    let mut refs: HashMap<[u8; 20], u32> = HashMap::new();
    let mut lens = HashMap::new();
    let mut logical = 0;
    for e in db
        .namespace(ns)
        .unwrap()
        .iter(ReadOptions::default())
        .unwrap()
    {
        let (_, v) = e.unwrap();
        chunker.chunks(&v, |d, n| {
            *refs.entry(d).or_default() += 1;
            lens.insert(d, u64::from(n));
            logical += u64::from(n);
        });
    }
    let unique = lens.values().sum();
    (refs, logical, unique)
}

fn check(dedup: &Dedup, db: &Db, ns: u32) {
    let (refs, logical, unique) = reference(db, ns, dedup.chunker());
    let (stats, got) = dedup.snapshot(ns).unwrap_or_default();
    assert_eq!(got, refs, "reference counts of namespace {ns}");
    assert_eq!((stats.logical_bytes, stats.unique_bytes), (logical, unique));
    let keys = db
        .namespace(ns)
        .unwrap()
        .iter(ReadOptions::default())
        .unwrap()
        .count();
    assert_eq!(stats.keys as usize, keys);
}

/// Values built from a small pool of 128-byte blocks, so chunks repeat within and across
/// values, with a random tail so not every chunk does.
fn value(rng: &mut SmallRng) -> Vec<u8> {
    let blocks = rng.gen_range(0..12);
    let mut v = Vec::new();
    for _ in 0..blocks {
        let b: u8 = rng.gen_range(0..6);
        v.extend_from_slice(&[b; 128]);
    }
    let tail = rng.gen_range(0..200);
    v.extend((0..tail).map(|_| rng.gen::<u8>()));
    v
}

/// 600 random writes, each queuing its task as the device does (unless the backlog is full),
/// the tasks run every 37 writes.
fn random_writes(db: &Db, dedup: &Dedup, queue: &mut VecDeque<DedupWork>, ns: &[u32], seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in 0..600 {
        let n = ns[rng.gen_range(0..ns.len())];
        let h = db.namespace(n).unwrap();
        let key = format!("k{:03}", rng.gen_range(0..150)).into_bytes();
        if rng.gen_bool(0.2) {
            h.delete(&key).unwrap();
        } else {
            h.put(&key, &value(&mut rng)).unwrap();
        }
        let w = DedupWork::Key {
            ns: n,
            key: key.into(),
        };
        // As the device submits a write's task.
        if dedup.admit(&w) {
            submit(dedup, queue, w);
        } else {
            for w in dedup.rescans_due() {
                submit(dedup, queue, w);
            }
        }
        // Tasks run late and in bunches, as they do behind a busy core.
        if i % 37 == 0 {
            drain(dedup, db, queue);
        }
    }
}

fn options() -> Options {
    let mut o = Options::default();
    o.memtable_bytes = 64 << 10;
    o
}

#[test]
fn index_matches_the_stored_values_after_writes_a_clean_stop_and_a_crash() {
    for chunker in [
        Chunker::default(),
        Chunker {
            chunking: Chunking::Cdc,
            hash: ChunkHash::Xxh3,
            chunk_bytes: 64,
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("dedup.index");
        let db = Db::open(dir.path().join("db"), options()).unwrap();
        let a = db.create_namespace("a").unwrap().id();
        let b = db.create_namespace("b").unwrap().id();
        let dedup = Dedup::new(chunker);
        let mut q = VecDeque::new();
        random_writes(&db, &dedup, &mut q, &[a, b], 1);
        drain(&dedup, &db, &mut q);
        check(&dedup, &db, a);
        check(&dedup, &db, b);
        assert!(dedup.stats().total.dedup_ratio > 1.5);

        // A clean stop with tasks still queued: saved, loaded, the tasks run after.
        random_writes(&db, &dedup, &mut q, &[a], 2);
        submit(
            &dedup,
            &mut q,
            DedupWork::Key {
                ns: a,
                key: Bytes::from_static(b"k001"),
            },
        );
        let pending: Vec<DedupWork> = q.drain(..).collect();
        dedup.save(&file, &pending).unwrap();
        drop(dedup);
        db.close().unwrap();
        drop(db);
        let db = Db::open(dir.path().join("db"), options()).unwrap();
        let (dedup, pending) = Dedup::load(&file, chunker).expect("a clean stop's index");
        assert!(!file.exists(), "loaded once: a crash from now on rebuilds");
        assert!(!pending.is_empty());
        for w in pending {
            submit(&dedup, &mut q, w);
        }
        drain(&dedup, &db, &mut q);
        check(&dedup, &db, a);
        check(&dedup, &db, b);

        // More writes, some indexed and some not, then a crash: no file, a rebuild.
        random_writes(&db, &dedup, &mut q, &[a, b], 3);
        drop(q.drain(..));
        drop(dedup);
        drop(db);
        let db = Db::open(dir.path().join("db"), options()).unwrap();
        assert!(Dedup::load(&file, chunker).is_none());
        let dedup = Dedup::new(chunker);
        for ns in [a, b] {
            submit(&dedup, &mut q, DedupWork::Scan { ns, after: None });
        }
        drain(&dedup, &db, &mut q);
        check(&dedup, &db, a);
        check(&dedup, &db, b);

        // A destroyed namespace's index goes.
        db.destroy_namespace(b).unwrap();
        submit(&dedup, &mut q, DedupWork::Forget { ns: b });
        drain(&dedup, &db, &mut q);
        assert!(!dedup.stats().namespaces.contains_key(&b));
    }
}

#[test]
fn a_damaged_or_foreign_file_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dedup.index");
    let db = Db::open(dir.path().join("db"), options()).unwrap();
    let a = db.create_namespace("a").unwrap().id();
    let dedup = Dedup::new(Chunker::default());
    let mut q = VecDeque::new();
    random_writes(&db, &dedup, &mut q, &[a], 4);
    drain(&dedup, &db, &mut q);
    dedup.save(&file, &[]).unwrap();
    let good = std::fs::read(&file).unwrap();
    // Another chunker: rebuilt.
    let other = Chunker {
        chunk_bytes: 256,
        ..Chunker::default()
    };
    assert!(Dedup::load(&file, other).is_none());
    // One flipped bit anywhere: rebuilt.
    for at in [3, 12, 18, 40, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&file, &bad).unwrap();
        assert!(
            Dedup::load(&file, Chunker::default()).is_none(),
            "flip at {at}"
        );
    }
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    assert!(Dedup::load(&file, Chunker::default()).is_none());
    std::fs::write(&file, &good).unwrap();
    assert!(Dedup::load(&file, Chunker::default()).is_some());
}

#[test]
fn a_full_backlog_sheds_tasks_and_rescans_to_the_same_index() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dedup.index");
    let db = Db::open(dir.path().join("db"), options()).unwrap();
    let a = db.create_namespace("a").unwrap().id();
    let b = db.create_namespace("b").unwrap().id();
    // 37 writes between runs overflow a bound of 16.
    let dedup = Dedup::new(Chunker::default()).with_max_backlog(16);
    let mut q = VecDeque::new();
    random_writes(&db, &dedup, &mut q, &[a, b], 5);
    drain(&dedup, &db, &mut q);
    let s = dedup.stats();
    assert!(s.shed_tasks > 0 && s.rescans > 0, "{s:?}");
    assert_eq!(s.rescans_pending, 0);
    check(&dedup, &db, a);
    check(&dedup, &db, b);

    // Overflow again, deletes included, and stop before the rescan: it is saved as owed.
    let h = db.namespace(a).unwrap();
    for i in 0..40 {
        let key = format!("k{:03}", i * 3);
        let w = DedupWork::Key {
            ns: a,
            key: Bytes::from(key.clone()),
        };
        match i % 4 {
            0 => h.delete(key.as_bytes()).unwrap(),
            _ => h.put(key.as_bytes(), &[i as u8; 300]).unwrap(),
        }
        if dedup.admit(&w) {
            submit(&dedup, &mut q, w);
        }
    }
    assert_eq!(dedup.backlog(), 16);
    let mut pending = dedup.take_rescans();
    assert_eq!(pending, vec![DedupWork::Scan { ns: a, after: None }]);
    pending.extend(q.drain(..));
    for _ in 0..dedup.backlog() {
        dedup.dropped();
    }
    dedup.save(&file, &pending).unwrap();
    drop((dedup, h));
    db.close().unwrap();
    drop(db);

    let db = Db::open(dir.path().join("db"), options()).unwrap();
    let (dedup, pending) = Dedup::load(&file, Chunker::default()).unwrap();
    let dedup = dedup.with_max_backlog(16);
    for w in pending {
        submit(&dedup, &mut q, w);
    }
    drain(&dedup, &db, &mut q);
    check(&dedup, &db, a);
    check(&dedup, &db, b);
}

#[test]
fn a_digest_saved_with_two_lengths_keeps_the_counts_whole() {
    // Table: the same digest twice, 1,000 and 1 bytes; key "k" holds both entries.
    let mut body = Vec::new();
    put_u32(&mut body, 1); // namespaces
    put_u32(&mut body, 7);
    put_u32(&mut body, 2); // chunks
    for len in [1000u32, 1] {
        body.extend_from_slice(&[0xab; 20]);
        put_u32(&mut body, len);
    }
    put_u32(&mut body, 1); // keys
    put_u32(&mut body, 1);
    body.push(b'k');
    put_u32(&mut body, 2);
    put_u32(&mut body, 0);
    put_u32(&mut body, 1);
    put_u32(&mut body, 0); // pending
    assert!(crate::fuzzing::dedup_index(&body));
}

proptest::proptest! {
    /// Garbage after a valid header: a refusal or an index that holds together, never a panic.
    #[test]
    fn decoding_garbage_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let _ = crate::fuzzing::dedup_index(&data);
    }

    /// A real index's body, cut short or with bytes changed (past the checksum, as a file
    /// written by a faulty or hostile writer would be).
    #[test]
    fn decoding_a_damaged_index_never_panics(
        seed in 0u64..1_000,
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        flips in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), 1u8..=255), 0..4),
    ) {
        let mut ix = NsIndex::default();
        let mut rng = SmallRng::seed_from_u64(seed);
        for k in 0..rng.gen_range(1..6u8) {
            let chunks: Vec<([u8; 20], u32)> =
                (0..rng.gen_range(0..5)).map(|_| ([rng.gen_range(0..4u8); 20], rng.gen_range(1..200))).collect();
            ix.set(&[k], Some(&chunks));
        }
        let dedup = Dedup::new(Chunker::default());
        dedup.indexes.lock().insert(3, ix);
        let pending = [
            DedupWork::Key { ns: 3, key: Bytes::from_static(b"k") },
            DedupWork::Scan { ns: 3, after: None },
            DedupWork::Forget { ns: 4 },
        ];
        // The body as `save` writes it, past the chunker the fuzz entry puts in front.
        let mut body = persist::encode(dedup.chunker, &dedup.indexes, &pending)[6..].to_vec();
        proptest::prop_assert!(crate::fuzzing::dedup_index(&body));
        for (at, x) in flips {
            let i = at.index(body.len());
            body[i] ^= x;
        }
        body.truncate(cut.index(body.len() + 1));
        let _ = crate::fuzzing::dedup_index(&body);
    }
}
