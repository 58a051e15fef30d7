//! Iterators: at a snapshot (implicit or given) they yield exactly the reference state, in
//! order, within their bounds, whatever writes, flushes, compactions and GC happen while they
//! are open; and an open iterator holds little beyond its blocks.

use crate::common;

use bytes::Bytes;
use cerberus_engine::storage::MemStorage;
use cerberus_engine::Readable;
use cerberus_engine::{Db, Error, Iter, Layout, Namespace, Options, ReadOptions, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const KEYS: u32 = 400;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn options(layout: Layout) -> Options {
    let mut o = common::small_options();
    o.layout = layout;
    o.vlog_gc_dead_ratio = 0.0;
    o.prefetch_threads = 3;
    o
}

fn collect(it: Iter) -> Vec<(Bytes, Bytes)> {
    it.map(|r| r.unwrap()).collect()
}

/// What an iterator with `opts` must yield from `start` on.
fn expected(model: &Model, opts: &ReadOptions, start: &[u8]) -> Vec<(Bytes, Bytes)> {
    let lo = match &opts.prefix {
        Some(p) if start < p.as_slice() => p.clone(),
        _ => start.to_vec(),
    };
    model
        .range::<Vec<u8>, _>((Bound::Included(lo), Bound::Unbounded))
        .take_while(|(k, _)| {
            opts.upper_bound.as_ref().is_none_or(|b| *k < b)
                && opts.prefix.as_ref().is_none_or(|p| k.starts_with(p))
        })
        .map(|(k, v)| {
            let v = if opts.keys_only {
                Vec::new()
            } else {
                v.clone()
            };
            (Bytes::from(k.clone()), Bytes::from(v))
        })
        .collect()
}

fn random_options(rng: &mut SmallRng) -> ReadOptions {
    let mut o = ReadOptions {
        keys_only: rng.gen_bool(0.2),
        prefetch_degree: [0, 1, 4, 16][rng.gen_range(0..4)],
        index_prefetch: rng.gen_bool(0.5),
        fill_cache: rng.gen_bool(0.5),
        ..ReadOptions::default()
    };
    match rng.gen_range(0..4) {
        0 => o.upper_bound = Some(key(rng.gen_range(0..KEYS + 10))),
        // "key001" covers 10 keys, "key00" 100.
        1 => o.prefix = Some(key(rng.gen_range(0..KEYS))[..rng.gen_range(5..8)].to_vec()),
        _ => {}
    }
    o
}

fn check_iter(
    ns: &Namespace,
    snap: Option<&cerberus_engine::Snapshot>,
    model: &Model,
    rng: &mut SmallRng,
    what: &str,
) {
    let opts = random_options(rng);
    let open = || match snap {
        Some(s) => s.iter(opts.clone()).unwrap(),
        None => ns.iter(opts.clone()).unwrap(),
    };
    assert_eq!(
        collect(open()),
        expected(model, &opts, b""),
        "{what}: {opts:?}"
    );
    // Seek somewhere, read a few, seek again.
    let mut it = open();
    let start = key(rng.gen_range(0..KEYS));
    it.seek(&start).unwrap();
    let want = expected(model, &opts, &start);
    let got: Vec<_> = it.by_ref().take(5).map(|r| r.unwrap()).collect();
    assert_eq!(
        got,
        want.iter().take(5).cloned().collect::<Vec<_>>(),
        "{what}: seek {start:?} {opts:?}"
    );
    it.seek(b"").unwrap();
    assert_eq!(
        collect(it),
        expected(model, &opts, b""),
        "{what}: seek back {opts:?}"
    );
    // The same from `start` in batches of any size, fewer than asked only at the end.
    let mut it = open();
    it.seek(&start).unwrap();
    let mut got = Vec::new();
    loop {
        let max = rng.gen_range(0..40);
        let before = got.len();
        let n = it.next_batch(max, &mut got).unwrap();
        assert!(
            n <= max && got.len() == before + n,
            "{what}: batch of {max}"
        );
        if n < max {
            break;
        }
    }
    assert_eq!(got, want, "{what}: batches from {start:?} {opts:?}");
    assert_eq!(
        it.next_batch(3, &mut got).unwrap(),
        0,
        "{what}: past the end"
    );
}

fn model_run(layout: Layout, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let db = Db::builder(options(layout))
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let spaces = [
        db.create_namespace("a").unwrap(),
        db.create_namespace("b").unwrap(),
    ];
    let mut models = [Model::new(), Model::new()];
    let mut snaps = Vec::new();
    // Iterators left open across everything below, with what they must still yield.
    let mut open: Vec<(Iter, Vec<(Bytes, Bytes)>)> = Vec::new();
    let mut version = 0u64;
    for step in 0..5_000 {
        let i = rng.gen_range(0..spaces.len());
        let ns = &spaces[i];
        let k = rng.gen_range(0..KEYS);
        match rng.gen_range(0..1000) {
            0..=549 => {
                version += 1;
                // Values above and below the inline threshold.
                let v = common::value_for(k, version, rng.gen_range(1..300));
                ns.put(&key(k), &v).unwrap();
                models[i].insert(key(k), v);
            }
            550..=699 => {
                ns.delete(&key(k)).unwrap();
                models[i].remove(&key(k));
            }
            700..=739 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.gen_range(1..6) {
                    let k = rng.gen_range(0..KEYS);
                    version += 1;
                    let v = common::value_for(k, version, 100);
                    b.put(key(k), v.clone());
                    models[i].insert(key(k), v);
                }
                ns.write(b).unwrap();
            }
            740..=769 => {
                if snaps.len() < 4 {
                    snaps.push((i, ns.snapshot(), models[i].clone()));
                } else {
                    snaps.remove(rng.gen_range(0..snaps.len()));
                }
            }
            770..=799 => {
                if open.len() < 4 {
                    let opts = random_options(&mut rng);
                    let want = expected(&models[i], &opts, b"");
                    open.push((ns.iter(opts).unwrap(), want));
                } else {
                    let (it, want) = open.remove(rng.gen_range(0..open.len()));
                    assert_eq!(
                        collect(it),
                        want,
                        "seed {seed} step {step}: iterator left open"
                    );
                }
            }
            800..=849 => db.flush().unwrap(),
            850..=879 => db.compact_all().unwrap(),
            880..=909 => {
                db.gc_value_log().unwrap();
            }
            910..=959 => check_iter(
                ns,
                None,
                &models[i],
                &mut rng,
                &format!("seed {seed} step {step} now"),
            ),
            _ => {
                if let Some((j, snap, model)) = snaps.first() {
                    check_iter(
                        &spaces[*j],
                        Some(snap),
                        model,
                        &mut rng,
                        &format!("seed {seed} step {step} snapshot"),
                    );
                }
            }
        }
    }
    for (it, want) in open {
        assert_eq!(
            collect(it),
            want,
            "seed {seed}: iterator left open to the end"
        );
    }
    for (j, snap, model) in &snaps {
        check_iter(
            &spaces[*j],
            Some(snap),
            model,
            &mut rng,
            &format!("seed {seed} final snapshot"),
        );
    }
    let _ = &version;
}

#[test]
fn iterators_match_the_model_per_namespace() {
    model_run(Layout::PerNamespace, common::seed(41));
}

#[test]
fn iterators_match_the_model_shared() {
    model_run(Layout::Shared, common::seed(42));
}

/// A writer commits whole generations as batches while flushes, compactions and GC run; every
/// iteration (with and without prefetch) finds exactly one generation.
#[test]
fn concurrent_iterations_see_one_generation() {
    const N: u32 = 200;
    fn value(k: u32, g: u64) -> Vec<u8> {
        common::value_for(k, g, 10 + (k as usize % 4) * 60)
    }
    fn deleted(k: u32, g: u64) -> bool {
        u64::from(k % 7) == g % 7 && k != 0
    }
    fn write_gen(ns: &Namespace, g: u64) {
        let mut b = WriteBatch::new();
        for k in 0..N {
            if deleted(k, g) {
                b.delete(key(k));
            } else {
                b.put(key(k), value(k, g));
            }
        }
        ns.write(b).unwrap();
    }
    let db = Arc::new(
        Db::builder(options(Layout::PerNamespace))
            .open_storage(Arc::new(MemStorage::new()))
            .unwrap(),
    );
    let ns = db.create_namespace("t").unwrap();
    write_gen(&ns, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (ns, stop) = (ns.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut g = 2;
            while !stop.load(Ordering::Relaxed) {
                write_gen(&ns, g);
                g += 1;
            }
        })
    };
    let background = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
                db.compact_all().unwrap();
                db.gc_value_log().unwrap();
            }
        })
    };
    let mut generations = std::collections::BTreeSet::new();
    // At least 60 rounds, and on until the writer got in (a loaded machine may not run it
    // during the first 60), within a minute.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for round in 0.. {
        if round >= 60 && (generations.len() > 1 || std::time::Instant::now() > deadline) {
            break;
        }
        let opts = ReadOptions {
            prefetch_degree: [0, 8][round % 2],
            index_prefetch: round % 3 != 0,
            ..ReadOptions::default()
        };
        let got = collect(ns.iter(opts).unwrap());
        let first = std::str::from_utf8(&got[0].1).unwrap().to_string();
        let g: u64 = first.split(':').nth(1).unwrap().parse().unwrap();
        let want: Vec<(Bytes, Bytes)> = (0..N)
            .filter(|&k| !deleted(k, g))
            .map(|k| (Bytes::from(key(k)), Bytes::from(value(k, g))))
            .collect();
        assert_eq!(got, want, "round {round}: generation {g}");
        generations.insert(g);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    background.join().unwrap();
    assert!(
        generations.len() > 1,
        "the writer never got in: {generations:?}"
    );
    assert_eq!(db.stats().snapshots, 0);
}

/// Open iterators share the version's table lists: what one holds beyond its blocks does not
/// grow with the number of tables, and stays under 1 KiB.
#[test]
fn open_iterators_hold_little_beyond_their_blocks() {
    let db = Db::builder({
        let mut o = options(Layout::PerNamespace);
        o.target_table_bytes = 1 << 10;
        o
    })
    .open_storage(Arc::new(MemStorage::new()))
    .unwrap();
    let ns = db.create_namespace("t").unwrap();
    let mut held = Vec::new();
    for round in 0..2 {
        for k in 0..(round * 2 + 1) * 4_000 {
            ns.put(&key(k), &common::value_for(k, 1, 40)).unwrap();
        }
        db.compact_all().unwrap();
        // Work the compaction leaves due (a consolidation) would change the tree under the
        // iterators being opened, giving some of them one more source than the others.
        db.wait_for_compactions().unwrap();
        let tables: usize = db.stats().levels.iter().map(|l| l.tables).sum();
        let iters: Vec<Iter> = (0..1_000)
            .map(|i| {
                let mut it = ns.iter(ReadOptions::default()).unwrap();
                it.seek(&key(i * 7 % 4_000)).unwrap();
                assert!(it.next().is_some());
                it
            })
            .collect();
        let per: Vec<_> = iters.iter().map(|it| it.memory()).collect();
        let state = per.iter().map(|m| m.state).max().unwrap();
        let buffers = per.iter().map(|m| m.buffers).max().unwrap();
        eprintln!("{tables} tables: {state} bytes of state, {buffers} of buffers per iterator");
        assert!(
            state < 1024,
            "{tables} tables: {state} bytes of state per iterator"
        );
        held.push((tables, state));
    }
    assert!(held[1].0 > held[0].0 * 3 / 2, "{held:?}");
    assert!(
        held[1].1 <= held[0].1 + 64,
        "state grew with the tables: {held:?}"
    );
}

#[test]
fn iterators_fail_clearly() {
    let db = Db::builder(common::small_options())
        .open_storage(Arc::new(MemStorage::new()))
        .unwrap();
    let a = db.create_namespace("a").unwrap();
    a.put(b"k", b"v").unwrap();
    let mut it = a.iter(ReadOptions::default()).unwrap();
    db.destroy_namespace(a.id()).unwrap();
    // An open iterator reads its snapshot to the end; new ones are refused.
    assert_eq!(it.next().unwrap().unwrap().0, Bytes::from_static(b"k"));
    assert!(matches!(
        a.iter(ReadOptions::default()),
        Err(Error::UnknownNamespace(_))
    ));
    let b = db.create_namespace("b").unwrap();
    b.put(b"k", b"v").unwrap();
    let mut it = b.iter(ReadOptions::default()).unwrap();
    db.close().unwrap();
    assert!(matches!(it.next(), Some(Err(Error::Closed))));
    assert!(it.next().is_none());
    assert!(matches!(b.iter(ReadOptions::default()), Err(Error::Closed)));
}

/// Index prefetch reads the blocks a scan needs ahead of it, each once: a full scan reads as
/// many data blocks with it as without.
#[test]
fn index_prefetch_reads_each_block_once() {
    use cerberus_engine::storage::IoPurpose;
    let db = Db::builder({
        let mut o = options(Layout::PerNamespace);
        o.target_table_bytes = 4 << 10;
        o
    })
    .open_storage(Arc::new(MemStorage::new()))
    .unwrap();
    let ns = db.create_namespace("t").unwrap();
    for k in 0..3_000 {
        ns.put(&key(k), &common::value_for(k, 1, 30)).unwrap();
    }
    db.compact_all().unwrap();
    let data_reads = || ns.stats().unwrap().listings.reads[IoPurpose::Data as usize];
    let mut results = Vec::new();
    for index_prefetch in [false, true] {
        let before = data_reads();
        // Blocks the first scan read would be cached for the second one.
        let opts = ReadOptions {
            index_prefetch,
            fill_cache: false,
            ..ReadOptions::default()
        };
        results.push((collect(ns.iter(opts).unwrap()), data_reads() - before));
    }
    assert_eq!(results[0].0.len(), 3_000);
    assert_eq!(results[0].0, results[1].0);
    assert!(results[0].1 > 20, "{} data blocks", results[0].1);
    assert_eq!(
        results[0].1, results[1].1,
        "data blocks read without and with prefetch"
    );
}
