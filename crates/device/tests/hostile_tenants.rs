//! One tenant sends every command with extreme fields while another tenant's puts, gets and
//! deletes are checked against a model: the other tenant is served throughout, the device
//! never dies, and every reply to the hostile tenant is an error status or a bounded answer
//! (its body within the device's `max_reply_bytes`). The hostile tenant's fields: counts
//! (`k`, `limit`, `page_bytes`, `max_keys`, `max_entries`, `max_bytes`) at 0, 1, huge and
//! u64::MAX; keys and values at and one past the limits, and frames past the frame limit;
//! filter documents 10,000 levels deep and near the frame limit in size; wrong JSON types;
//! iterators opened and abandoned past the per-connection limit; index create/drop storms;
//! get_by_secondary with no limit over many matches; top with k = 10^15.
//!
//! Also here: a find paged through the device reads each page at the namespace as it is then
//! (`docs/queries.md`, Paging): a record not modified between pages comes exactly once.

mod common;

both_wires!(
    a_hostile_tenant_cannot_hurt_another_or_the_device,
    a_paged_find_returns_each_unmodified_record_once,
);

use bytes::{Bytes, BytesMut};
use cerberus_device::DeviceHandle;
use cerberus_host::{BlockingClient, ClientConfig, Error, IndexKind};
use cerberus_proto::{Command, Request, Response, Status, StoreMode, HEADER_LEN};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_KEY: usize = 64;
const MAX_VALUE: usize = 64 << 10;
const BATCH_BYTES: u32 = 16 << 10;
const MAX_RESULTS: u32 = 100;
/// The device's reply bound for this test: tight, so the hostile answers meet it.
const REPLY_BOUND: u32 = 256 << 10;
/// Records of the hostile tenant (more than `MAX_RESULTS` match most of its queries).
const RECORDS: usize = 600;

fn start(dir: &std::path::Path) -> DeviceHandle {
    common::start(dir, |c| {
        c.max_key_len = MAX_KEY as u32;
        c.max_value_len = MAX_VALUE as u32;
        c.max_iter_batch_bytes = BATCH_BYTES;
        c.max_query_results = MAX_RESULTS;
        c.max_reply_bytes = Some(REPLY_BOUND);
        c.max_iterators = 8;
    })
}

/// A connection of the hostile tenant, reopened when the device closes it (as it does after
/// a frame past its limit). Checks every reply it gets.
struct Hostile {
    /// The native port (frames past the limit go there, on a socket of their own).
    addr: String,
    /// How its client connects (the test's wire).
    config: ClientConfig,
    ns: u32,
    secret: String,
    client: BlockingClient,
    replies: u64,
    refused: u64,
}

impl Hostile {
    fn new(dev: &DeviceHandle, ns: u32, secret: &str) -> Hostile {
        let addr = dev.local_addr().to_string();
        let config = common::config(dev);
        let client = Self::connect(&config, ns, secret);
        Hostile {
            addr,
            config,
            ns,
            secret: secret.to_string(),
            client,
            replies: 0,
            refused: 0,
        }
    }

    fn connect(config: &ClientConfig, ns: u32, secret: &str) -> BlockingClient {
        let c = BlockingClient::connect_with(config.clone()).expect("the device takes connections");
        c.open_namespace(ns, secret).expect("auth");
        c
    }

    /// Sends `request`; the reply is an error status or a bounded answer. `None` if the
    /// device closed the connection (allowed only when `may_close`).
    fn send(&mut self, request: Request, may_close: bool) -> Option<Response> {
        let what = format!("{:?}", request.opcode());
        match self.client.call(self.ns, request) {
            Ok(resp) => {
                self.replies += 1;
                if resp.status.is_success() {
                    let mut buf = BytesMut::new();
                    resp.encode(&mut buf).expect("a reply re-encodes");
                    let body = buf.len() - HEADER_LEN;
                    assert!(
                        body <= REPLY_BOUND as usize,
                        "{what}: a reply of {body} bytes, over the bound {REPLY_BOUND}"
                    );
                } else {
                    self.refused += 1;
                }
                Some(resp)
            }
            Err(Error::ConnectionClosed | Error::Io(_)) if may_close => {
                self.client = Self::connect(&self.config, self.ns, &self.secret);
                None
            }
            Err(e) => panic!("{what}: the hostile tenant got {e} (not a status)"),
        }
    }

    /// Sends `request` in a frame past the device's frame limit, on a socket of its own (the
    /// client refuses to): the device answers with an error status or closes the connection.
    fn past_frame_limit(&mut self, request: Request) {
        use std::io::{Read, Write};
        let mut frames = BytesMut::new();
        let auth = Request::Authenticate {
            secret: Bytes::copy_from_slice(self.secret.as_bytes()),
        };
        for (cid, request) in [(1, auth), (2, request)] {
            let nsid = self.ns;
            Command { cid, nsid, request }.encode(&mut frames).unwrap();
        }
        let mut s = std::net::TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The device may close before taking it all.
        let _ = s.write_all(&frames);
        let mut got = BytesMut::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        while let Ok(Some(frame)) = cerberus_proto::split_frame(&mut got, u32::MAX) {
            let resp = Response::decode(&frame).expect("a reply of the protocol");
            if resp.cid == 2 {
                assert!(!resp.status.is_success(), "{:?}", resp.status);
            }
        }
    }

    fn query(&mut self, doc: &Value) -> Response {
        self.query_raw(doc.to_string().into_bytes())
    }

    fn query_raw(&mut self, body: Vec<u8>) -> Response {
        let request = Request::Query {
            query: Bytes::from(body),
        };
        self.send(request, false)
            .expect("a query within the frame limit is answered")
    }
}

fn summary(r: &Response) -> Value {
    match &r.reply {
        cerberus_proto::Reply::Found { summary, .. } => serde_json::from_slice(summary).unwrap(),
        other => panic!("not a query answer: {other:?}"),
    }
}

fn records(r: &Response) -> usize {
    match &r.reply {
        cerberus_proto::Reply::Found { records, .. } => records.len(),
        _ => 0,
    }
}

/// The hostile tenant's data: `RECORDS` records with `g` = 1, `n`, a string `s`; every 20th
/// holds a string near the value limit.
fn fill(h: &mut Hostile) {
    for i in 0..RECORDS {
        let s = if i % 20 == 0 {
            "x".repeat(MAX_VALUE - 100)
        } else {
            format!("s{i}")
        };
        let v = json!({"g": 1, "n": i, "s": s}).to_string();
        let r = h.send(
            Request::Store {
                key: Bytes::from(format!("h{i:05}")),
                value: Bytes::from(v),
                mode: StoreMode::Always,
                sync: false,
            },
            false,
        );
        assert!(r.unwrap().status.is_success());
    }
}

const HUGE: [u64; 5] = [0, 1, 1 << 40, 1_000_000_000_000_000, u64::MAX];

/// Every query kind with extreme fields and wrong types.
fn query_storm(h: &mut Hostile) {
    // The cases, with the answers the bounds give.
    let r = h.query(&json!({"op": "top", "by": "n", "k": 1_000_000_000_000_000u64}));
    assert_eq!(r.status, Status::ReplyTooLarge, "{:?}", r.status);
    let r = h.query(&json!({"op": "get_by_secondary", "attr": "g", "value": 1}));
    assert_eq!(r.status, Status::ReplyTooLarge, "{:?}", r.status);
    let r = h.query(&json!({"op": "find", "page_bytes": 1u64 << 40}));
    assert!(r.status.is_success(), "{:?}", r.status);
    assert!(summary(&r)["continuation"].is_string());
    // Within the bound on records, but not on bytes (projections of the large strings).
    let r = h.query(&json!({"op": "top", "by": "n", "k": MAX_RESULTS, "project": ["s"]}));
    assert_eq!(r.status, Status::ReplyTooLarge, "{:?}", r.status);
    let r = h.query(&json!({"op": "top", "by": "n", "desc": true, "k": 3}));
    assert!(r.status.is_success() && records(&r) == 3, "{:?}", r.status);
    for n in HUGE {
        for project in [None, Some(json!(["s", "n", "s.x", "g"]))] {
            let mut top = json!({"op": "top", "by": "n", "k": n});
            let mut find = json!({"op": "find", "page_bytes": n, "limit": n});
            let mut gbs = json!({"op": "get_by_secondary", "attr": "g", "value": 1, "limit": n});
            if let Some(p) = &project {
                top["project"] = p.clone();
                find["project"] = p.clone();
                gbs["project"] = p.clone();
            }
            for doc in [top, gbs] {
                h.query(&doc);
            }
            // Follow a few continuations.
            let mut doc = find;
            for _ in 0..4 {
                let r = h.query(&doc);
                let Some(c) = r
                    .status
                    .is_success()
                    .then(|| summary(&r)["continuation"].clone())
                else {
                    break;
                };
                if !c.is_string() {
                    break;
                }
                doc["continuation"] = c;
            }
        }
    }
    // Wrong types, unknown fields, negative and fractional counts, junk continuations.
    let wrong = [
        json!({"op": "top", "by": "n", "k": -1}),
        json!({"op": "top", "by": "n", "k": 1.5}),
        json!({"op": "top", "by": "n", "k": "ten"}),
        json!({"op": "top", "by": 7, "k": 1}),
        json!({"op": "top", "by": "", "k": 1}),
        json!({"op": "find", "page_bytes": -5}),
        json!({"op": "find", "limit": 1e300}),
        json!({"op": "find", "continuation": "zz"}),
        json!({"op": "find", "continuation": "00".repeat(40)}),
        json!({"op": "find", "filter": [1, 2]}),
        json!({"op": "find", "filter": {"n": {"$gt": {"$lt": 1}}}}),
        json!({"op": "find", "project": "s"}),
        json!({"op": "get_by_secondary", "attr": "g", "value": [1]}),
        json!({"op": "get_by_secondary", "attr": "nope", "value": 1}),
        json!({"op": "get_by_secondary", "attr": "g", "value": 1, "limit": null}),
        json!({"op": "aggregate", "fn": "median", "attr": "n"}),
        json!({"op": "aggregate", "fn": "sum"}),
        json!({"op": "aggregate", "fn": 3}),
        json!({"op": 5}),
        json!({"op": "drop_everything"}),
        json!("find"),
        json!(null),
        json!([]),
    ];
    for doc in &wrong {
        let r = h.query(doc);
        // `limit: null` is no limit: refused for its size; the rest are malformed.
        assert!(!r.status.is_success(), "{doc}: {:?}", r.status);
    }
    for body in [
        Vec::new(),
        vec![0xff, 0xfe, 0x00],
        b"{\"op\": \"find\"".to_vec(),
    ] {
        assert!(!h.query_raw(body).status.is_success());
    }
    // Aggregates over every record: small answers.
    for f in ["count", "min", "max", "sum", "avg"] {
        let r = h.query(&json!({"op": "aggregate", "fn": f, "attr": "n"}));
        assert!(r.status.is_success(), "{f}: {r:?}");
    }
    // Filters 10,000 levels deep, and near the frame limit in size.
    let deep_array = format!(
        "{{\"op\":\"find\",\"filter\":{{\"n\":{{\"$in\":{}1{}}}}}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let deep_and = format!(
        "{{\"op\":\"find\",\"filter\":{}{{}}{}}}",
        "{\"$and\":[".repeat(5_000),
        "]}".repeat(5_000)
    );
    for body in [deep_array, deep_and] {
        assert!(body.len() < MAX_VALUE);
        let r = h.query_raw(body.into_bytes());
        assert!(!r.status.is_success(), "{:?}", r.status);
    }
    let many: Vec<u64> = (0..9_000).collect();
    let wide = json!({"op": "find", "filter": {"n": {"$in": many}}, "limit": 5});
    assert!(wide.to_string().len() < MAX_VALUE);
    h.query(&wide);
    let conds: serde_json::Map<String, Value> = (0..3_000)
        .map(|i| (format!("a{i}"), json!({"$gte": i})))
        .collect();
    h.query(&json!({"op": "aggregate", "fn": "count", "filter": conds}));
    // A query past the frame limit: refused, the connection closed.
    let past = format!(
        "{{\"op\":\"find\",\"filter\":{{\"s\":\"{}\"}}}}",
        "y".repeat(MAX_VALUE + MAX_KEY)
    );
    h.past_frame_limit(Request::Query { query: past.into() });
}

/// Keys and values at and one past the limits; lists, iterators and stats with extreme fields.
fn data_storm(h: &mut Hostile) {
    let store = |key: Vec<u8>, len: usize| Request::Store {
        key: Bytes::from(key),
        value: Bytes::from(vec![b'v'; len]),
        mode: StoreMode::Always,
        sync: false,
    };
    let ok = |r: Option<Response>| r.is_some_and(|r| r.status.is_success());
    assert!(ok(h.send(store(vec![b'k'; MAX_KEY], 1), false)));
    let r = h.send(store(vec![b'k'; MAX_KEY + 1], 1), false).unwrap();
    assert_eq!(r.status, Status::InvalidKeySize);
    let r = h.send(store(Vec::new(), 1), false).unwrap();
    assert_eq!(r.status, Status::InvalidKeySize);
    assert!(ok(h.send(store(b"big".to_vec(), MAX_VALUE), false)));
    let r = h
        .send(store(b"big".to_vec(), MAX_VALUE + 1), false)
        .unwrap();
    assert_eq!(r.status, Status::InvalidValueSize);
    // Past the frame limit: the device refuses the frame and closes the connection.
    h.past_frame_limit(store(b"big".to_vec(), 2 * MAX_VALUE));
    for key in [vec![b'k'; MAX_KEY + 1], Vec::new(), vec![b'q'; MAX_KEY]] {
        h.send(
            Request::Retrieve {
                key: key.clone().into(),
            },
            false,
        );
        h.send(Request::Delete { key: key.into() }, false);
    }
    for max_keys in [0, 1, u32::MAX] {
        h.send(
            Request::List {
                start: Bytes::new(),
                start_exclusive: false,
                max_keys,
            },
            false,
        );
    }
    // Iterators: past the per-connection limit, abandoned open, and read with extreme sizes.
    let mut open = Vec::new();
    for _ in 0..20 {
        let r = h
            .send(
                Request::IterOpen {
                    start: Bytes::new(),
                    upper_bound: Bytes::new(),
                    prefix: Bytes::new(),
                    keys_only: false,
                },
                false,
            )
            .unwrap();
        if let cerberus_proto::Reply::Iter(id) = r.reply {
            open.push(id);
        } else {
            assert_eq!(r.status, Status::IteratorLimit);
        }
    }
    assert_eq!(open.len(), 8);
    for (&iter, (max_entries, max_bytes)) in open.iter().zip([
        (0, 0),
        (1, 1),
        (u32::MAX, u32::MAX),
        (u32::MAX, 0),
        (0, u32::MAX),
    ]) {
        h.send(
            Request::IterNext {
                iter,
                max_entries,
                max_bytes,
            },
            false,
        );
    }
    for iter in [u32::MAX, 12345] {
        let r = h
            .send(
                Request::IterNext {
                    iter,
                    max_entries: u32::MAX,
                    max_bytes: u32::MAX,
                },
                false,
            )
            .unwrap();
        assert_eq!(r.status, Status::IteratorNotFound);
    }
    h.send(Request::Stats, false);
    h.send(Request::IndexList, false);
    // Abandoned: the connection goes away with its iterators open.
    h.client = Hostile::connect(&h.config, h.ns, &h.secret);
}

/// Creates and drops indexes of both kinds, over and over, with names at and past the limit.
fn index_storm(h: &mut Hostile, rounds: usize) {
    for round in 0..rounds {
        for (attr, vas) in [("n", round % 2 == 0), ("s", true), ("g2", false)] {
            let r = h
                .send(
                    Request::IndexCreate {
                        attr: attr.into(),
                        vas,
                    },
                    false,
                )
                .unwrap();
            assert!(
                r.status.is_success() || r.status == Status::IndexExists,
                "{:?}",
                r.status
            );
            let r = h.send(Request::IndexDrop { attr: attr.into() }, false);
            assert!(r.is_some());
        }
        for attr in ["a..b", "x."] {
            let r = h.send(
                Request::IndexCreate {
                    attr: attr.into(),
                    vas: false,
                },
                false,
            );
            assert!(r.is_some_and(|r| !r.status.is_success()), "{attr:?}");
        }
    }
}

/// The other tenant: puts, gets and deletes of its own keys, each checked against a model,
/// until `stop`. Returns the operations done and the longest wait for one.
fn checked_tenant(c: BlockingClient, ns: u32, stop: Arc<AtomicBool>) -> (u64, Duration) {
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut ops, mut longest) = (0u64, Duration::ZERO);
    while !stop.load(Ordering::Relaxed) || ops < 300 {
        let key = format!("m{:03}", next() % 200).into_bytes();
        let began = Instant::now();
        match next() % 10 {
            0..=4 => {
                let value = vec![b'a' + (next() % 26) as u8; (next() % 2000) as usize + 1];
                c.namespace(ns)
                    .put(key.clone(), value.clone())
                    .expect("the checked tenant's put is served");
                model.insert(key, value);
            }
            5..=7 => {
                let got = c.namespace(ns).get(key.clone()).expect("get is served");
                assert_eq!(got.as_deref(), model.get(&key).map(Vec::as_slice));
            }
            _ => {
                let existed = c
                    .namespace(ns)
                    .delete(key.clone())
                    .expect("delete is served");
                assert_eq!(existed, model.remove(&key).is_some());
            }
        }
        longest = longest.max(began.elapsed());
        ops += 1;
    }
    // Everything the model holds, and nothing else.
    let keys = c
        .namespace(ns)
        .list_all(Vec::new(), 1000)
        .expect("list is served");
    let listed: Vec<Vec<u8>> = keys.into_iter().map(|k| k.to_vec()).collect();
    assert_eq!(listed, model.keys().cloned().collect::<Vec<_>>());
    for (k, v) in &model {
        assert_eq!(
            c.namespace(ns).get(k.clone()).unwrap().as_deref(),
            Some(v.as_slice())
        );
    }
    (ops, longest)
}

fn a_hostile_tenant_cannot_hurt_another_or_the_device() {
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let dev = start(dir.path());
    let (_, hns, hsecret) = common::tenant(&dev, "hostile");
    let (good, gns, _) = common::tenant(&dev, "good");
    let mut h = Hostile::new(&dev, hns, &hsecret);
    fill(&mut h);
    h.send(
        Request::IndexCreate {
            attr: "g".into(),
            vas: false,
        },
        false,
    );

    let stop = Arc::new(AtomicBool::new(false));
    let checked = {
        let stop = stop.clone();
        std::thread::spawn(move || checked_tenant(good, gns, stop))
    };
    let storm = {
        let mut h2 = Hostile::new(&dev, hns, &hsecret);
        std::thread::spawn(move || {
            index_storm(&mut h2, 20);
            (h2.replies, h2.refused)
        })
    };
    for _ in 0..2 {
        query_storm(&mut h);
        data_storm(&mut h);
    }
    let (storm_replies, storm_refused) = storm.join().expect("the index storm holds");
    stop.store(true, Ordering::Relaxed);
    let (ops, longest) = checked.join().expect("the checked tenant is served");

    // The device is still up and answers both tenants.
    let late = Hostile::connect(&common::config(&dev), hns, &hsecret);
    assert!(late.identify().is_ok());
    assert!(late.namespace(hns).stats().is_ok());
    eprintln!(
        "hostile: {} replies ({} refused) + index storm {storm_replies} ({storm_refused}); \
         checked tenant: {ops} ops, longest {longest:?}; {:?} in all",
        h.replies,
        h.refused,
        began.elapsed()
    );
    assert!(
        longest < Duration::from_secs(20),
        "the checked tenant waited {longest:?}"
    );
    dev.shutdown().unwrap();
}

/// Pages of a find through the device, with writes between them: every record not modified
/// between pages comes exactly once; a record whose indexed attribute moved may come twice
/// or not at all (`docs/queries.md`, Paging), and a deleted one not after its deletion.
fn a_paged_find_returns_each_unmodified_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let dev = start(dir.path());
    let (c, ns, _) = common::tenant(&dev, "pages");
    let put = |i: usize, n: usize| {
        let v = json!({"n": n, "pad": "p".repeat(200)}).to_string();
        c.namespace(ns)
            .put(format!("r{i:04}").into_bytes(), v.into_bytes())
            .unwrap();
    };
    for i in 0..300 {
        put(i, i);
    }
    for indexed in [false, true] {
        if indexed {
            c.namespace(ns)
                .create_index("n", IndexKind::Classic)
                .unwrap();
        }
        let mut doc = json!({"op": "find", "filter": {"n": {"$gte": 0}}, "page_bytes": 2000});
        let (mut seen, mut moved) = (Vec::new(), BTreeSet::new());
        let mut page = 0;
        loop {
            let r = c.namespace(ns).query(&doc).unwrap();
            seen.extend(r.records.iter().map(|(pk, _)| pk.clone()));
            let Some(cont) = r.continuation() else { break };
            doc["continuation"] = json!(cont);
            // Between pages: move a record from ahead to behind and one from behind to
            // ahead (by `n`, the index's order), and delete one ahead.
            page += 1;
            let (a, b, d) = (299 - page, page, 200 + page);
            put(a, 0);
            put(b, 1000 + page);
            c.namespace(ns)
                .delete(format!("r{d:04}").into_bytes())
                .unwrap();
            moved.extend([a, b, d].map(|i| Bytes::from(format!("r{i:04}"))));
        }
        assert!(page > 10, "pages: {page}");
        let mut counts: BTreeMap<Bytes, usize> = BTreeMap::new();
        for pk in seen {
            *counts.entry(pk).or_default() += 1;
        }
        for i in 0..300 {
            let pk = Bytes::from(format!("r{i:04}"));
            if !moved.contains(&pk) {
                assert_eq!(counts.get(&pk), Some(&1), "{pk:?} (indexed: {indexed})");
            }
        }
        // Restore for the next round.
        for i in 0..300 {
            put(i, i);
        }
    }
    dev.shutdown().unwrap();
}
