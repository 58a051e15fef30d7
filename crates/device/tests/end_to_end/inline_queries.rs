//! Queries answered on the network thread: one within `inline_query_work` is answered there
//! (no hand-off to a worker), one past it runs whole on a worker; both answer exactly as a
//! device that sends every query to its workers.

use crate::common;

use cerberus_host::{BlockingNamespace, Client, IndexKind, WriteBatch};
use serde_json::{json, Value};

fn counter(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}_total ")))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} counter"))
}

fn load(c: &BlockingNamespace) {
    c.create_index("color", IndexKind::Vas).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..6_000u32 {
        let color = if i % 600 == 1 { "red" } else { "blue" };
        let v = json!({"n": i, "color": color});
        b.put(format!("k{i:05}").into_bytes(), v.to_string().into_bytes());
    }
    c.write(b).unwrap();
}

/// The queries of the test: small (10 red records) and large (5,990 blue ones).
fn queries() -> Vec<Value> {
    let mut out = Vec::new();
    for color in ["red", "blue"] {
        let f = json!({"color": color});
        out.push(json!({"op": "find", "filter": f, "keys_only": true}));
        out.push(json!({"op": "find", "filter": f}));
        out.push(json!({"op": "aggregate", "filter": f, "fn": "count"}));
        out.push(json!({"op": "top", "filter": f, "by": "n", "desc": true, "k": 3}));
    }
    out
}

fn answers(c: &BlockingNamespace) -> Vec<(Vec<(bytes::Bytes, bytes::Bytes)>, Value)> {
    queries()
        .iter()
        .map(|q| {
            let r = c.query(q).unwrap();
            let mut summary = r.summary.clone();
            // The statistics say how the query ran; the answer is the rest.
            summary.as_object_mut().unwrap().remove("stats");
            (r.records, summary)
        })
        .collect()
}

#[test]
fn small_queries_are_answered_on_the_network_thread_and_large_ones_on_workers() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(&dir.path().join("a"), |_| {});
    let (client, ns, _) = common::tenant(&dev, "t");
    let c = client.namespace(ns);
    load(&c);
    let before = dev.metrics_text();
    let (inline0, off0) = (
        counter(&before, "cerberus_queries_inline"),
        counter(&before, "cerberus_queries_off_loop"),
    );
    let got = answers(&c);
    let text = dev.metrics_text();
    let inline = counter(&text, "cerberus_queries_inline") - inline0;
    let off = counter(&text, "cerberus_queries_off_loop") - off0;
    // The 4 red queries read 10 entries and records; the blue finds and count read 5,990
    // entries, past the default 4,096 units (the blue top-3 may walk its index within it).
    assert!(inline >= 4, "{inline} inline, {off} off the loop");
    assert!(off >= 3, "{inline} inline, {off} off the loop");
    assert_eq!(inline + off, 8);
    assert_eq!(got[2].1["value"], json!(10));
    assert_eq!(got[6].1["value"], json!(5_990));
    assert_eq!(got[4].0.len(), 5_990);

    // The blue keys-only find overflowed, and the red one has its shape (only the value the
    // filter compares with differs): the next 8 go straight to a worker, the 9th is tried
    // on the network thread again, and every answer is the same.
    let red = &queries()[0];
    let (skipped0, inline0) = (
        counter(&text, "cerberus_queries_skipped_inline"),
        counter(&text, "cerberus_queries_inline"),
    );
    for _ in 0..9 {
        assert_eq!(c.query(red).unwrap().records, got[0].0);
    }
    let after = dev.metrics_text();
    assert_eq!(
        counter(&after, "cerberus_queries_skipped_inline") - skipped0,
        8
    );
    assert_eq!(counter(&after, "cerberus_queries_inline") - inline0, 1);

    // The same answers from a device that runs every query on a worker.
    let other = common::start(&dir.path().join("b"), |c| c.inline_query_work = 0);
    let (oclient, ons, _) = common::tenant(&other, "t");
    let oc = oclient.namespace(ons);
    load(&oc);
    assert_eq!(answers(&oc), got);
    let text = other.metrics_text();
    assert_eq!(counter(&text, "cerberus_queries_inline"), 0);
    assert_eq!(counter(&text, "cerberus_queries_off_loop"), 0);
    dev.shutdown().unwrap();
    other.shutdown().unwrap();
}

/// Sends `queries` pipelined on one new connection to `dev`'s namespace `ns` (over the
/// test's wire); the number of records of each answer, in order.
fn pipelined(
    dev: &cerberus_device::DeviceHandle,
    ns: u32,
    secret: &str,
    queries: Vec<Value>,
) -> Vec<usize> {
    let (config, secret) = (common::config(dev), secret.to_string());
    common::rt().block_on(async move {
        let c = Client::connect_with(config).await.unwrap();
        c.open_namespace(ns, &secret).await.unwrap();
        let tasks: Vec<_> = queries
            .into_iter()
            .map(|q| {
                let c = c.clone();
                tokio::spawn(async move { c.namespace(ns).query(&q).await })
            })
            .collect();
        let mut got = Vec::new();
        for t in tasks {
            got.push(t.await.unwrap().unwrap().records.len());
        }
        got
    })
}

/// A connection pipelining queries answered on its network thread gives the thread to the
/// others after each 4 of them (one counts as 8 of a turn's 32 frames), on either wire: a
/// host keeping its NVMe/TCP queue full of them held the thread for as long as it sent.
fn pipelined_small_queries_give_the_thread_away() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let (client, ns, secret) = common::tenant(&dev, "t");
    load(&client.namespace(ns));
    let red = queries()[0].clone();
    let turns0 = common::metric(&dev, "cerberus_turns_given_total");
    let inline0 = common::metric(&dev, "cerberus_queries_inline_total");
    let got = pipelined(&dev, ns, &secret, vec![red; 64]);
    assert_eq!(got, vec![10; 64]);
    let inline = common::metric(&dev, "cerberus_queries_inline_total") - inline0;
    let turns = common::metric(&dev, "cerberus_turns_given_total") - turns0;
    assert_eq!(inline, 64);
    // 64 queries of 8 frames each: at least 512 frames, 16 turns of 32 (more on NVMe/TCP,
    // where a query is a Submit and a Fetch).
    assert!(turns >= 16, "{turns} turns given");
    dev.shutdown().unwrap();
}

both_wires!(pipelined_small_queries_give_the_thread_away);

/// A query tried on the network thread that overflows `inline_query_work` spent
/// up to the whole inline work there before it went to a worker, as much as one answered
/// inline; it must count as `INLINE_QUERY_FRAMES` in its connection's turn too. Each query
/// here has its own shape (its `limit`, outside the filter, is part of the shape), so
/// `query_fit` never skips the try: a host sending such queries held the thread for 32
/// tries per turn, not 4.
fn pipelined_overflowing_queries_give_the_thread_away() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let (client, ns, secret) = common::tenant(&dev, "t");
    load(&client.namespace(ns));
    let turns0 = common::metric(&dev, "cerberus_turns_given_total");
    let off0 = common::metric(&dev, "cerberus_queries_off_loop_total");
    let blue = (0..64u32)
        .map(|i| {
            let blue = json!({"color": "blue"});
            json!({"op": "find", "filter": blue, "keys_only": true, "limit": 5_000 + i})
        })
        .collect();
    let got = pipelined(&dev, ns, &secret, blue);
    assert!(got.iter().all(|&n| n > 0), "{got:?}");
    let off = common::metric(&dev, "cerberus_queries_off_loop_total") - off0;
    let turns = common::metric(&dev, "cerberus_turns_given_total") - turns0;
    // Most of the 64 overflowed (a few may share a slot of `query_fit` and be skipped).
    assert!(off >= 48, "{off} queries overflowed the inline work");
    assert!(
        turns * 32 >= off * 8,
        "{off} queries tried inline and overflowed, each up to inline_query_work on the \
         network thread, but only {turns} turns given"
    );
    dev.shutdown().unwrap();
}

both_wires!(pipelined_overflowing_queries_give_the_thread_away);
