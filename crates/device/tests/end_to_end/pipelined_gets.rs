//! Pipelined gets run as batches (one engine `get_many` per run of consecutive gets of one
//! connection): mixed with puts, deletes and exists of the same keys in one pipeline, every
//! reply equals what the commands one at a time would answer; each get is counted.

use crate::common;

use bytes::{Bytes, BytesMut};
use cerberus_proto::{split_frame, Command, Reply, Request, Response, Status, StoreMode};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;

/// What one command answers: its status and, for a get, the value.
type Answer = (Status, Option<Bytes>);

/// Sends `requests` for `nsid` in one write after an Authenticate and returns the answers
/// by position (replies may come in any order: matched by command id).
fn pipeline(addr: &str, nsid: u32, secret: &str, requests: Vec<Request>) -> Vec<Answer> {
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    let n = requests.len();
    let mut frames = BytesMut::new();
    for (cid, request) in (0u32..).zip(std::iter::once(auth).chain(requests)) {
        Command { cid, nsid, request }.encode(&mut frames).unwrap();
    }
    let mut s = TcpStream::connect(addr).unwrap();
    let mut rd = s.try_clone().unwrap();
    // Written from a thread: the device stops reading at its in-flight limit until its
    // replies are read.
    let writer = std::thread::spawn(move || s.write_all(&frames).map(|_| s));
    let mut got: HashMap<u32, Answer> = HashMap::new();
    let mut buf = BytesMut::new();
    let mut chunk = vec![0u8; 64 << 10];
    while got.len() < n + 1 {
        while let Some(frame) = split_frame(&mut buf, u32::MAX).unwrap() {
            let r = Response::decode(&frame).unwrap();
            let value = match r.reply {
                Reply::Value(v) => Some(v),
                _ => None,
            };
            assert!(
                got.insert(r.cid, (r.status, value)).is_none(),
                "two replies"
            );
        }
        if got.len() == n + 1 {
            break;
        }
        let read = rd.read(&mut chunk).unwrap();
        assert!(
            read > 0,
            "connection closed with {} of {} replies",
            got.len(),
            n + 1
        );
        buf.extend_from_slice(&chunk[..read]);
    }
    let _s = writer.join().unwrap().unwrap();
    assert_eq!(got[&0].0, Status::Success, "authenticate");
    (1..=n as u32)
        .map(|cid| got.remove(&cid).unwrap())
        .collect()
}

/// A pipeline of gets in runs (some of keys never written, some repeated) with puts, deletes
/// and exists of the same few keys between them, and its answers one command at a time.
/// Its keys start with `prefix`.
fn random_pipeline(rng: &mut SmallRng, len: usize, prefix: &str) -> (Vec<Request>, Vec<Answer>) {
    let mut model: BTreeMap<Bytes, Bytes> = BTreeMap::new();
    let (mut requests, mut answers) = (Vec::new(), Vec::new());
    let key = |k: u32| Bytes::from(format!("{prefix}key{k:03}"));
    let status = |found: bool| match found {
        true => Status::Success,
        false => Status::KeyNotExist,
    };
    while requests.len() < len {
        let k = key(rng.gen_range(0..24));
        match rng.gen_range(0..10) {
            0..=2 => {
                let v =
                    Bytes::from(format!("{k:?}@{}", requests.len()).repeat(rng.gen_range(1..40)));
                model.insert(k.clone(), v.clone());
                requests.push(Request::Store {
                    key: k,
                    value: v,
                    mode: StoreMode::Always,
                    sync: false,
                });
                answers.push((Status::Success, None));
            }
            3 => {
                answers.push((status(model.remove(&k).is_some()), None));
                requests.push(Request::Delete { key: k });
            }
            4 => {
                answers.push((status(model.contains_key(&k)), None));
                requests.push(Request::Exist { key: k });
            }
            _ => {
                // A run of gets, the batch the device makes.
                for _ in 0..rng.gen_range(1..20) {
                    let k = key(rng.gen_range(0..30));
                    let v = model.get(&k).cloned();
                    answers.push((status(v.is_some()), v));
                    requests.push(Request::Retrieve { key: k });
                }
            }
        }
    }
    (requests, answers)
}

use common::metric;

fn retrieves_counted(dev: &cerberus_device::DeviceHandle, nsid: u32) -> u64 {
    let text = dev.metrics_text();
    let prefix = format!("cerberus_commands_total{{nsid=\"{nsid}\",opcode=\"retrieve\"");
    text.lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn pipelined_gets_among_writes_answer_as_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_inflight = 48);
    let (nsid, secret) = common::admin(&dev).create_namespace("gets").unwrap();
    let addr = dev.local_addr().to_string();
    let mut rng = SmallRng::seed_from_u64(33);
    let mut gets = 0;
    for round in 0..4 {
        // Each round starts from an empty namespace: its keys are the round's own.
        let (requests, want) = random_pipeline(&mut rng, 1500, &format!("{round}/"));
        gets += requests
            .iter()
            .filter(|r| matches!(r, Request::Retrieve { .. }))
            .count() as u64;
        let got = pipeline(&addr, nsid, &secret, requests);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "round {round}, command {i}");
        }
    }
    // Every get of every batch is recorded as one command; most ran in batches.
    assert_eq!(retrieves_counted(&dev, nsid), gets);
    let batched = metric(&dev, "cerberus_batched_gets_total");
    assert!(batched > gets / 2, "{batched} of {gets} gets batched");
    assert!(metric(&dev, "cerberus_get_batches_total") < batched);
    dev.shutdown().unwrap();
}

/// On the workers' path (commands not run on the network thread), a pipeline of gets after
/// its puts were answered is answered in batches too, each get with its own value.
#[test]
fn pipelined_gets_on_the_workers_are_each_answered() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.inline_commands = false);
    let (c, nsid, secret) = common::tenant(&dev, "workers");
    let key = |i: u32| Bytes::from(format!("w{i:04}"));
    let pairs = (0..300)
        .filter(|i| i % 3 != 0)
        .map(|i| (key(i), key(i * 7)))
        .collect();
    c.namespace(nsid).put_many(pairs).unwrap();
    let requests: Vec<Request> = (0..600)
        .map(|i| Request::Retrieve { key: key(i % 300) })
        .collect();
    let got = pipeline(&dev.local_addr().to_string(), nsid, &secret, requests);
    for (i, g) in (0..600u32).zip(&got) {
        let k = i % 300;
        let want = match k % 3 {
            0 => (Status::KeyNotExist, None),
            _ => (Status::Success, Some(key(k * 7))),
        };
        assert_eq!(g, &want, "get {i}");
    }
    assert_eq!(retrieves_counted(&dev, nsid), 600);
    assert!(metric(&dev, "cerberus_batched_gets_total") > 300);
    dev.shutdown().unwrap();
}

/// The host client's `get_many` sends its gets in one write: the device answers them in
/// batches, each value in the caller's order.
#[test]
fn host_get_many_is_answered_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (c, nsid, _) = common::tenant(&dev, "host");
    let key = |i: u32| Bytes::from(format!("h{i:04}"));
    let pairs = (0..200).map(|i| (key(i), key(i + 10_000))).collect();
    c.namespace(nsid).put_many(pairs).unwrap();
    // Descending, and past the keys written.
    let keys: Vec<Bytes> = (0..300).rev().map(key).collect();
    let got = c.namespace(nsid).get_many(keys).unwrap();
    for (i, g) in (0..300).rev().zip(&got) {
        let want = (i < 200).then(|| key(i + 10_000));
        assert_eq!(g, &want, "key {i}");
    }
    assert!(metric(&dev, "cerberus_batched_gets_total") > 0);
}

/// A batch is bounded by the bytes of its values (`get_many` answers at most 64 MiB); the
/// device gathers gets by count (up to 64), so a pipeline of large values used to fail a
/// batch whole: of 200 gets of one 2 MiB value, the 21st was the first answered "too many
/// bytes". Past the bound a batch's gets are answered one at a time, each with its value.
#[test]
fn pipelined_gets_past_the_batch_byte_bound_are_each_answered() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let (c, nsid, secret) = common::tenant(&dev, "large");
    let value = Bytes::from(vec![b'v'; 2 << 20]);
    c.namespace(nsid)
        .put(Bytes::from_static(b"big"), value.clone())
        .unwrap();
    let requests: Vec<Request> = (0..200)
        .map(|_| Request::Retrieve {
            key: Bytes::from_static(b"big"),
        })
        .collect();
    let got = pipeline(&dev.local_addr().to_string(), nsid, &secret, requests);
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.0, Status::Success, "get {i}");
        assert!(g.1.as_ref() == Some(&value), "get {i}: not the value");
    }
    dev.shutdown().unwrap();
}
