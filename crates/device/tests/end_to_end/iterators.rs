//! Device iterators: open / next / close over a snapshot, batches bounded by count and bytes,
//! per-connection limits, idle iterators closed, and clear errors for closed ones.

use crate::common;

both_wires!(
    scans_read_a_snapshot_in_order_within_their_bounds,
    finished_scans_give_their_iterator_back,
    batches_are_bounded_by_count_and_bytes,
    limits_idle_closing_and_other_namespaces,
);

use bytes::Bytes;
use cerberus_host::{Error, ScanOptions};

fn value(i: u32) -> Bytes {
    Bytes::from(format!("value-{i}-{}", "v".repeat((i % 7) as usize * 100)))
}

fn key(i: u32) -> Bytes {
    Bytes::from(format!("k{i:04}"))
}

fn scans_read_a_snapshot_in_order_within_their_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (c, ns, _) = common::tenant(&dev, "scan");
    for i in 0..500 {
        c.namespace(ns).put(key(i), value(i)).unwrap();
    }
    let small = ScanOptions {
        batch_entries: 7,
        batch_bytes: 2000,
        ..ScanOptions::default()
    };
    let scan = c.namespace(ns).scan(small.clone()).unwrap();
    // Written after the scan opened: not in it.
    c.namespace(ns).put("k0000", "changed").unwrap();
    c.namespace(ns).put("k9999", "new").unwrap();
    c.namespace(ns).delete(key(3)).unwrap();
    let got: Vec<(Bytes, Bytes)> = scan.map(|r| r.unwrap()).collect();
    let want: Vec<(Bytes, Bytes)> = (0..500).map(|i| (key(i), value(i))).collect();
    assert_eq!(got, want);

    // A new scan sees the writes; bounds, prefix and keys only.
    let keys = |opts: ScanOptions| -> Vec<Bytes> {
        c.namespace(ns)
            .scan(opts)
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect()
    };
    let all = keys(ScanOptions::default());
    assert_eq!(all.len(), 500);
    assert_eq!(all.last().unwrap(), &Bytes::from("k9999"));
    let bounded = keys(ScanOptions {
        start: key(10),
        upper_bound: Some(key(20)),
        ..small.clone()
    });
    assert_eq!(bounded, (10..20).map(key).collect::<Vec<_>>());
    let prefixed = keys(ScanOptions {
        prefix: Some(Bytes::from("k012")),
        ..small.clone()
    });
    assert_eq!(prefixed, (120..130).map(key).collect::<Vec<_>>());
    let only: Vec<(Bytes, Bytes)> = c
        .namespace(ns)
        .scan(ScanOptions {
            keys_only: true,
            upper_bound: Some(key(5)),
            ..ScanOptions::default()
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(only.len(), 4, "k0000..k0004 without the deleted k0003");
    assert!(only.iter().all(|(_, v)| v.is_empty()));
}

fn finished_scans_give_their_iterator_back() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_iterators = 4);
    let (c, ns, _) = common::tenant(&dev, "many");
    c.namespace(ns).put("k", "v").unwrap();
    // More full scans on one connection than it may hold iterators.
    for _ in 0..10 {
        assert_eq!(
            c.namespace(ns)
                .scan(ScanOptions::default())
                .unwrap()
                .count(),
            1
        );
    }
    let stats = common::admin(&dev).stats().unwrap();
    assert_eq!(stats["snapshots"], 0, "{stats}");
}

fn batches_are_bounded_by_count_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_iter_batch_bytes = 10_000);
    let (c, ns, _) = common::tenant(&dev, "batches");
    for i in 0..100 {
        c.namespace(ns).put(key(i), vec![b'x'; 3000]).unwrap();
    }
    let it = c.namespace(ns).iter_open(&ScanOptions::default()).unwrap();
    let (batch, done) = c.namespace(ns).iter_next(it, 5, u32::MAX).unwrap();
    // 5 entries of 3 KB are over the device's 10,000-byte cap: 3 fit.
    assert_eq!((batch.len(), done), (3, false));
    let (batch, _) = c.namespace(ns).iter_next(it, 2, u32::MAX).unwrap();
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0].0, key(3));
    // A budget below one entry still returns one.
    let (batch, _) = c.namespace(ns).iter_next(it, 100, 1).unwrap();
    assert_eq!(batch.len(), 1);
    assert_eq!(batch[0].0, key(5));
    let mut seen = 6;
    loop {
        let (batch, done) = c.namespace(ns).iter_next(it, 1000, 1 << 20).unwrap();
        seen += batch.len();
        if done {
            break;
        }
    }
    assert_eq!(seen, 100);
    c.namespace(ns).iter_close(it).unwrap();
    assert!(matches!(
        c.namespace(ns).iter_next(it, 1, 1),
        Err(Error::IteratorNotFound(_))
    ));
    assert!(matches!(
        c.namespace(ns).iter_close(it),
        Err(Error::IteratorNotFound(_))
    ));
}

fn limits_idle_closing_and_other_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.max_iterators = 3;
        c.iterator_idle_secs = 1;
    });
    let (c, ns, _) = common::tenant(&dev, "limits");
    c.namespace(ns).put("a", "1").unwrap();
    assert_eq!(c.identify().unwrap().max_iterators, 3);
    let open: Vec<u32> = (0..3)
        .map(|_| c.namespace(ns).iter_open(&ScanOptions::default()).unwrap())
        .collect();
    assert!(matches!(
        c.namespace(ns).iter_open(&ScanOptions::default()),
        Err(Error::IteratorLimit(_))
    ));
    c.namespace(ns).iter_close(open[0]).unwrap();
    let again = c.namespace(ns).iter_open(&ScanOptions::default()).unwrap();

    // Another connection has its own iterators: these ids mean nothing there.
    let (other, other_ns, _) = common::tenant(&dev, "other");
    assert!(matches!(
        other.namespace(other_ns).iter_next(again, 1, 100),
        Err(Error::IteratorNotFound(_))
    ));
    // Nor does an id of one namespace work for another on the same connection.
    let secret = common::admin(&dev).create_namespace("third").unwrap();
    c.open_namespace(secret.0, &secret.1).unwrap();
    assert!(matches!(
        c.namespace(secret.0).iter_next(again, 1, 100),
        Err(Error::IteratorNotFound(_))
    ));

    // Unused for longer than iterator_idle_secs: closed by the device, snapshot released.
    std::thread::sleep(std::time::Duration::from_millis(1600));
    for id in [open[1], open[2], again] {
        assert!(matches!(
            c.namespace(ns).iter_next(id, 1, 100),
            Err(Error::IteratorNotFound(_))
        ));
    }
    let stats = common::admin(&dev).stats().unwrap();
    assert_eq!(stats["snapshots"], 0, "{stats}");
    // Room again for new ones.
    let fresh = c.namespace(ns).iter_open(&ScanOptions::default()).unwrap();
    let (batch, done) = c.namespace(ns).iter_next(fresh, 10, 100).unwrap();
    assert_eq!((batch.len(), done), (1, true));
}
