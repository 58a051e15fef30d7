//! The memtable's and its walk's tests.

use super::*;
use crate::key::{Kind, ValueAddr};
use bytes::Bytes;

fn val(v: &'static [u8]) -> MemValue {
    MemValue {
        kind: Kind::Put,
        value: Bytes::from_static(v),
        addr: ValueAddr {
            segment: 0,
            offset: 0,
            len: 0,
        },
    }
}

#[test]
fn newest_visible_version_wins() {
    let m = Memtable::new(1 << 20);
    m.insert(b"a", 1, val(b"1"));
    m.insert(b"a", 3, val(b"3"));
    m.insert(b"ab", 2, val(b"x"));
    assert_eq!(m.get(b"a", 10).unwrap().0, 3);
    assert_eq!(m.get(b"a", 2).unwrap().0, 1);
    assert!(m.get(b"a", 0).is_none());
    assert!(m.get(b"b", 10).is_none());
    let order: Vec<_> = m.iter().map(|e| (e.user, e.seq)).collect();
    assert_eq!(order, [(&b"a"[..], 3), (b"a", 1), (b"ab", 2)]);
}

#[test]
fn mem_iter_walks_from_a_start_key() {
    let m = Arc::new(Memtable::new(1 << 20));
    for i in 0..200u64 {
        let k = format!("k{i:03}");
        m.insert(k.as_bytes(), 2 * i + 1, val(b"old"));
        m.insert(k.as_bytes(), 2 * i + 2, val(b"new"));
    }
    let all: Vec<(Vec<u8>, SeqNo)> = m.iter().map(|e| (e.user.to_vec(), e.seq)).collect();
    let mut it = MemIter::new(m.clone());
    assert!(!it.valid());
    for (user, seq, want) in [
        (&b"k050"[..], SeqNo::MAX, 100),
        (b"k050", 101, 101),
        (b"k050", 100, 102),
        (b"k0505", SeqNo::MAX, 102),
        (b"", SeqNo::MAX, 0),
    ] {
        it.seek(user, seq);
        let mut n = want;
        while let Some((user, seq, _)) = it.entry() {
            assert_eq!((user, seq), (&all[n].0[..], all[n].1));
            let mut ikey = user.to_vec();
            crate::key::push_trailer(&mut ikey, seq, Kind::Put);
            assert_eq!(it.ikey(), ikey.as_slice());
            n += 1;
            it.advance();
        }
        assert_eq!(n, all.len());
        assert!(it.ikey().is_empty());
    }
    it.seek(b"k9", 0);
    assert!(!it.valid());
}

#[test]
fn node_keys_order_as_user_key_then_newest_seqno() {
    // (user key, seqno), in no order.
    let keys = super::test_keys::awkward_keys();
    let order = super::test_keys::order;
    // The list keeps that order (its search tree compares heads, then lengths or whole
    // keys), each key and seqno once.
    let m = Memtable::new(1 << 20);
    for (user, seq) in &keys {
        m.insert(user, *seq, val(b"v"));
    }
    let mut want = keys.clone();
    want.sort_by(order);
    want.dedup();
    let got: Vec<(Vec<u8>, SeqNo)> = m.iter().map(|e| (e.user.to_vec(), e.seq)).collect();
    assert_eq!(got, want);
}

#[test]
fn a_memtable_following_another_sizes_its_filter_for_the_entries_that_held() {
    let budget = 4 << 20;
    let first = Memtable::new(budget);
    let value = Bytes::from(vec![7u8; 1024]);
    let mut seq: SeqNo = 0;
    while first.approximate_bytes() < budget / 2 {
        seq += 1;
        let v = MemValue {
            value: value.clone(),
            ..val(b"")
        };
        first.insert(&seq.to_be_bytes(), seq, v);
    }
    let next = Memtable::following(budget, 0, &first);
    // About 4,000 entries of 1 KiB fill it: 12 bits each, not the worst case's 1/64.
    assert!(next.filter.bytes() < first.filter.bytes() / 8);
    // Bounded at 500 entries, it is sized for those only.
    let bounded = Memtable::following(budget, 500, &first);
    assert!(bounded.filter.bytes() < next.filter.bytes());
    assert_eq!(
        Memtable::following(budget, 0, &Memtable::new(budget))
            .filter
            .bytes(),
        first.filter.bytes()
    );
    for i in 1..=seq {
        next.insert(&i.to_be_bytes(), i, val(b"v"));
    }
    assert!((1..=seq).all(|i| next.get(&i.to_be_bytes(), i).is_some()));
}

#[test]
fn a_walk_reads_the_entry_it_took_though_its_key_is_replaced() {
    let m = Arc::new(Memtable::new(1 << 20));
    m.insert(b"k", 5, val(b"first"));
    let mut it = MemIter::new(m.clone());
    it.seek(b"k", SeqNo::MAX);
    // The same key and seqno again (an index entry's put and tombstone at one seqno): the
    // memtable answers with the second; the walk's entry, the first, is still there whole.
    m.insert(b"k", 5, val(b"second"));
    assert_eq!(
        m.get(b"k", 5).unwrap().1.value,
        Bytes::from_static(b"second")
    );
    assert_eq!(it.entry().unwrap().2.value, Bytes::from_static(b"first"));
    // A walk from now on sees only the second; so does a flush.
    let mut fresh = MemIter::new(m.clone());
    fresh.seek(b"", SeqNo::MAX);
    assert_eq!(
        fresh.entry().unwrap().2.value,
        Bytes::from_static(b"second")
    );
    fresh.advance();
    assert!(!fresh.valid());
    let all: Vec<_> = m.iter().map(|e| e.value.value.clone()).collect();
    assert_eq!(all, [Bytes::from_static(b"second")]);
    drop(fresh);
    drop(m);
    assert_eq!(it.entry().unwrap().2.value, Bytes::from_static(b"first"));
    it.advance();
    assert!(!it.valid());
}

#[test]
fn walks_read_whole_entries_while_a_writer_inserts() {
    let m = Arc::new(Memtable::new(64 << 20));
    let writer = {
        let m = m.clone();
        std::thread::spawn(move || {
            for i in 0..20_000u64 {
                let k = format!("k{:08}", (i * 7919) % 20_000);
                m.insert(k.as_bytes(), i + 1, val(b"v"));
            }
        })
    };
    let mut walks = 0;
    while !writer.is_finished() || walks < 3 {
        let mut it = MemIter::new(m.clone());
        it.seek(b"", SeqNo::MAX);
        let mut last: Option<Vec<u8>> = None;
        while let Some((user, seq, v)) = it.entry() {
            assert!((1..=20_000).contains(&seq));
            assert_eq!(v.value, Bytes::from_static(b"v"));
            assert!(last.as_deref().is_none_or(|l| l < user), "out of order");
            last = Some(user.to_vec());
            it.advance();
        }
        walks += 1;
    }
    writer.join().unwrap();
}

/// What the list alone answers (the memtable's get before its point index).
fn by_seek(m: &Memtable, user: &[u8], snapshot: SeqNo) -> Option<SeqNo> {
    let e = m.list.seek(&Probe::new(user, snapshot))?;
    (e.user() == user).then(|| e.seq())
}

/// Inserts versions of 300 keys at rising seqnos (some keys twice at one seqno, some
/// versions out of seqno order), then checks every key at many snapshots against the list.
fn gets_agree_with_the_list(m: &Memtable) {
    let mut seq = 1;
    for round in 0..8u64 {
        for k in 0..300u64 {
            if (k * 7 + round) % 5 == 0 {
                continue;
            }
            let key = format!("key{k:04}");
            m.insert(key.as_bytes(), seq, val(b"v"));
            if k % 11 == 0 {
                // A second insert at the same seqno holds over the first.
                m.insert(key.as_bytes(), seq, val(b"w"));
            }
            if k % 13 == 0 && seq > 3 {
                // An older version arriving late.
                m.insert(key.as_bytes(), seq - 3, val(b"old"));
            }
            seq += 1;
        }
    }
    for k in 0..320u64 {
        let key = format!("key{k:04}");
        for snapshot in (0..seq + 2).step_by(37).chain([SeqNo::MAX]) {
            let got = m.get(key.as_bytes(), snapshot);
            assert_eq!(
                got.as_ref().map(|g| g.0),
                by_seek(m, key.as_bytes(), snapshot)
            );
            if let Some((s, v)) = got {
                let e = m.list.seek(&Probe::new(key.as_bytes(), snapshot)).unwrap();
                assert_eq!(
                    (e.seq(), &e.value().value),
                    (s, &v.value),
                    "{key} at {snapshot}"
                );
            }
        }
    }
}

#[test]
fn the_point_index_answers_as_the_list_does() {
    let m = Memtable::new(1 << 20);
    gets_agree_with_the_list(&m);
    assert!(m
        .index
        .get(xxhash_rust::xxh3::xxh3_64(b"key0001"), b"key0001")
        .is_newest());
}

#[test]
fn a_full_point_index_sends_gets_to_the_list() {
    // A 4 KiB budget: an index of 32 slots for 300 keys.
    let m = Memtable::new(4 << 10);
    assert_eq!(m.index.bytes(), 256);
    gets_agree_with_the_list(&m);
    assert!(!m.index.get(0, b"never inserted").is_absent());
}

#[test]
fn concurrent_inserts_keep_the_newest_version_indexed() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let m = Arc::new(Memtable::new(1 << 22));
    let next = Arc::new(AtomicU64::new(1));
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (m, next) = (m.clone(), next.clone());
            std::thread::spawn(move || {
                for i in 0..5_000u64 {
                    let key = format!("k{}", (i * 31 + t) % 700);
                    m.insert(
                        key.as_bytes(),
                        next.fetch_add(1, Ordering::Relaxed),
                        val(b"v"),
                    );
                }
            })
        })
        .collect();
    let reader = {
        let (m, done) = (m.clone(), done.clone());
        std::thread::spawn(move || {
            // A key's newest seqno seen never goes back.
            let mut seen = vec![0; 700];
            while !done.load(Ordering::Relaxed) {
                for (k, last) in seen.iter_mut().enumerate() {
                    if let Some((s, _)) = m.get(format!("k{k}").as_bytes(), SeqNo::MAX) {
                        assert!(s >= *last, "k{k}: {s} after {last}");
                        *last = s;
                    }
                }
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    for k in 0..700 {
        let key = format!("k{k}");
        let got = m.get(key.as_bytes(), SeqNo::MAX).map(|g| g.0);
        assert_eq!(got, by_seek(&m, key.as_bytes(), SeqNo::MAX), "{key}");
    }
}

#[test]
fn a_point_index_is_at_most_half_full_with_the_entries_foreseen_within_its_share() {
    let slots =
        |expected, most_bytes| point_index::PointIndex::new(expected, most_bytes).bytes() / 8;
    assert_eq!(slots(1000, 1 << 20), 2048);
    assert_eq!(slots(1025, 1 << 20), 4096);
    // Never past its share of the budget, rounded down to a power of two; never under 16.
    assert_eq!(slots(1 << 20, 100_000), 8192);
    assert_eq!(slots(0, 0), 16);
    assert_eq!(slots(usize::MAX, 1 << 20), 1 << 17);
}

#[test]
fn the_filter_and_the_index_count_in_the_budget_from_the_start() {
    let budget = 64 << 20;
    let m = Memtable::new(budget);
    let fixed = m.index.bytes() + m.filter.bytes();
    // At most 1/16 for the index and 1/64 for the filter.
    assert!(fixed > 0 && fixed <= budget / 16 + budget / 64, "{fixed}");
    // And the list's first nodes: its head and the search tree's first leaf.
    let start = m.approximate_bytes();
    assert!(start > fixed && start - fixed < 4096, "{start}");
    let fixed = start;
    m.insert(b"\0\0\0\x01k", 1, val(b"v"));
    assert_eq!(m.approximate_bytes(), fixed + entry::footprint(5) + 1);
    // The smallest budget still leaves room for entries (its first leaf takes 1.5 KiB).
    let small = Memtable::new(4096);
    assert!(
        small.approximate_bytes() < 4096 / 2,
        "{}",
        small.approximate_bytes()
    );
}

#[test]
fn a_namespace_found_too_large_for_a_map_is_walked_again_only_at_twice_the_checks() {
    let m = Memtable::new(1 << 20);
    let user = |ns: u32, i: u32| {
        let mut k = ns.to_be_bytes().to_vec();
        k.extend_from_slice(format!("k{i:03}").as_bytes());
        k
    };
    for i in 0..50 {
        m.insert(&user(1, i), u64::from(i) + 1, val(b"v"));
    }
    m.insert(&user(2, 0), 100, val(b"v"));
    assert!(m.key_hashes(1, 100, 10).is_none());
    assert_eq!(m.key_hashes.lock().more_than.get(&1), Some(&10));
    // 15 checks in all: under twice what the walk found, no walk.
    assert!(m.key_hashes(1, 100, 5).is_none());
    assert_eq!(m.key_hashes.lock().more_than.get(&1), Some(&10));
    // 79 checks: walked for, and the 50 entries fit.
    let map = m
        .key_hashes(1, 100, 64)
        .expect("50 entries fit the checks made");
    let seq = |i: u32| {
        map.get(crate::key_hashes::key_hash(&user(1, i)[4..]))
            .map(|e| e.0)
    };
    assert_eq!(seq(7), Some(8));
    assert_eq!(m.key_hashes.lock().credit.get(&1), None, "the checks paid");
    // Another namespace is not refused by the first one's size.
    assert!(m.key_hashes(2, 100, 1).is_some());
}

#[test]
fn the_checks_of_many_small_queries_add_up_to_a_map() {
    let m = Memtable::new(1 << 20);
    for i in 0..500u32 {
        let mut k = 1u32.to_be_bytes().to_vec();
        k.extend_from_slice(format!("k{i:04}").as_bytes());
        m.insert(&k, u64::from(i) + 1, val(b"v"));
    }
    // Queries of 100 checks each, none of them worth a walk of 500 entries alone.
    let mut walks = 0;
    let mut asks = 0;
    while m.key_hashes(1, 1000, 100).is_none() {
        asks += 1;
        let known = m.key_hashes.lock().more_than.get(&1).copied();
        if known == Some(asks * 100) {
            walks += 1;
        }
        assert!(asks < 20, "no map after {asks} queries");
    }
    // Walks at 100, 200 and 400 checks were thrown away; at 800 the map came.
    assert_eq!((asks, walks), (7, 3));
    assert!(m.cached_key_hashes(1, 1000).is_some());
}
