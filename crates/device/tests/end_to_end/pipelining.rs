//! One connection, many commands in flight: the device completes them by command id, and
//! every caller gets its own answer.

use crate::common;

use cerberus_host::Client;

#[test]
fn a_thousand_commands_in_flight_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_inflight = 64);
    let (_, ns, secret) = common::tenant(&dev, "pipe");
    let addr = dev.local_addr().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let c = Client::connect(&addr).await.unwrap();
        assert_eq!(c.device_info().unwrap().max_inflight, 64);
        c.open_namespace(ns, &secret).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..1000u32 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let k = format!("k{i:04}");
                c.namespace(ns)
                    .put(k.clone(), format!("v{i}"))
                    .await
                    .unwrap();
                let got = c.namespace(ns).get(k).await.unwrap().unwrap();
                assert_eq!(got, format!("v{i}").as_bytes());
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let keys = c.namespace(ns).list_all("", 1000).await.unwrap();
        assert_eq!(keys.len(), 1000);
    });
    dev.shutdown().unwrap();
}

/// Puts sent together are stored together (one engine write per batch read), each answered:
/// two namespaces interleaved on one connection, an invalid put among them, all read back.
#[test]
fn pipelined_puts_are_stored_in_batches_and_each_answered() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let (a, sa) = admin.create_namespace("a").unwrap();
    let (b, sb) = admin.create_namespace("b").unwrap();
    let addr = dev.local_addr().to_string();
    let value = |i: usize| bytes::Bytes::from(format!("{i}-{}", "v".repeat(i % 3000)));
    let key = |i: usize| bytes::Bytes::from(format!("key{i:05}"));
    let ns_of = |i: usize| if i.is_multiple_of(2) { a } else { b };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let c = Client::connect(&addr).await.unwrap();
        let ns_a = c.open_namespace(a, &sa).await.unwrap();
        let ns_b = c.open_namespace(b, &sb).await.unwrap();
        for round in 0..4 {
            let (even, odd): (Vec<_>, Vec<_>) = (round * 500..(round + 1) * 500)
                .map(|i| (key(i), value(i)))
                .partition(|(k, _)| k[7].is_multiple_of(2));
            // Both pipelines at once: their frames interleave on the connection.
            let (x, y) = tokio::join!(ns_a.put_many(even), ns_b.put_many(odd));
            x.unwrap();
            y.unwrap();
        }
        // An empty key fails alone; the puts around it are stored.
        let err = c
            .namespace(a)
            .put_many(vec![
                (key(90_000), value(1)),
                (bytes::Bytes::new(), value(2)),
                (key(90_001), value(3)),
            ])
            .await
            .unwrap_err();
        assert!(
            matches!(err, cerberus_host::Error::InvalidKeySize(_)),
            "{err:?}"
        );
        for i in 0..2000 {
            assert_eq!(
                c.namespace(ns_of(i)).get(key(i)).await.unwrap(),
                Some(value(i)),
                "key {i}"
            );
            assert_eq!(
                c.namespace(ns_of(i + 1)).get(key(i)).await.unwrap(),
                None,
                "key {i}"
            );
        }
        assert_eq!(
            c.namespace(a).get(key(90_000)).await.unwrap(),
            Some(value(1))
        );
        assert_eq!(
            c.namespace(a).get(key(90_001)).await.unwrap(),
            Some(value(3))
        );
    });
}

/// One blocking thread pipelines far more commands than `max_inflight` in one call.
#[test]
fn a_blocking_client_pipelines_past_the_in_flight_limit() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_inflight = 32);
    let (c, ns, _) = common::tenant(&dev, "many");
    let keys: Vec<bytes::Bytes> = (0..1000).map(|i| format!("k{i:04}").into()).collect();
    let pairs = keys.iter().map(|k| (k.clone(), k.clone())).collect();
    c.namespace(ns).put_many(pairs).unwrap();
    let got = c.namespace(ns).get_many(keys.clone()).unwrap();
    assert!(keys.iter().zip(&got).all(|(k, v)| v.as_ref() == Some(k)));
}

/// Pipelined puts while the engine is behind (memtables of 64 KiB: flushes and L0 pile up,
/// so writes are slowed down or wait and leave the network thread for the workers), each put
/// followed by a get of its key and a neighbour reading its own keys on another connection:
/// every put is answered, every get sees its put, and nothing is lost.
#[test]
fn puts_under_write_pressure_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.max_inflight = 64;
        c.engine.memtable_bytes = 64 << 10;
    });
    let (_, ns, secret) = common::tenant(&dev, "writer");
    let (reader, rns, _) = common::tenant(&dev, "reader");
    reader.namespace(rns).put(&b"r"[..], &b"mine"[..]).unwrap();
    let addr = dev.local_addr().to_string();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let value = |i: u32| format!("{i}-{}", "v".repeat(1000));
    rt.block_on(async move {
        let c = Client::connect(&addr).await.unwrap();
        c.open_namespace(ns, &secret).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..3000u32 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let k = format!("k{:04}", i % 1500);
                c.namespace(ns).put(k.clone(), value(i)).await.unwrap();
                let got = c.namespace(ns).get(k).await.unwrap().unwrap();
                // This key's two puts may complete in either order (both in flight).
                let other = if i < 1500 { i + 1500 } else { i - 1500 };
                assert!(got == value(i).as_bytes() || got == value(other).as_bytes());
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            c.namespace(ns).list_all("", 2000).await.unwrap().len(),
            1500
        );
    });
    assert_eq!(
        reader.namespace(rns).get(&b"r"[..]).unwrap().as_deref(),
        Some(&b"mine"[..])
    );
    let text = dev.metrics_text();
    let off: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("cerberus_writes_off_loop_total "))
        .and_then(|n| n.trim().parse().ok())
        .expect("the writes_off_loop counter");
    // Measured: 1,444-1,940 of the 3,000 puts (the engine is behind most of the run).
    eprintln!("writes off the loop: {off}");
    assert!(
        off > 0,
        "no write left the loop: the test did not put the engine behind"
    );
    dev.shutdown().unwrap();
}
