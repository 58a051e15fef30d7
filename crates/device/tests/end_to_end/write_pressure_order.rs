//! Under write pressure a piece of held puts is stored on a worker; a get of its namespace
//! read meanwhile (a client that pipelines a put, then a get of the same key) must still see
//! the put. Before, the get found nothing held, ran on the loop ahead of the piece, and
//! answered the key's older value.

use crate::common;
use crate::turn_boundaries::{encode, read_replies, store};

use bytes::{Bytes, BytesMut};
use cerberus_proto::{Reply, Request, Status};
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;

/// Rounds each connection sends, and put-then-get pairs in each.
const ROUNDS: u32 = 12;
const PAIRS: u32 = 48;

/// One connection of namespace `ns`: rounds of pipelined pairs (a put of one of its own
/// keys, then a get of it), each get checked against the put just before it.
fn pipeline_pairs(addr: std::net::SocketAddr, ns: u32, secret: &str, conn: u32) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut rd = s.try_clone().unwrap();
    let (mut buf, mut got) = (BytesMut::new(), HashMap::new());
    let mut frames = BytesMut::new();
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    encode(&mut frames, 0, ns, auth);
    s.write_all(&frames).unwrap();
    read_replies(&mut rd, &mut buf, &mut got, 1);
    assert_eq!(got[&0].status, Status::Success, "authenticate");
    let mut cid = 1u32;
    for round in 0..ROUNDS {
        frames.clear();
        let first = cid;
        for i in 0..PAIRS {
            let key = Bytes::from(format!("c{conn}-k{}", i % 5));
            let value = Bytes::from(format!("{round}-{i}-{}", "v".repeat(2000)));
            encode(&mut frames, cid, ns, store(key.clone(), value));
            encode(&mut frames, cid + 1, ns, Request::Retrieve { key });
            cid += 2;
        }
        s.write_all(&frames).unwrap();
        read_replies(&mut rd, &mut buf, &mut got, cid as usize);
        for i in 0..PAIRS {
            let (put, get) = (&got[&(first + 2 * i)], &got[&(first + 2 * i + 1)]);
            assert_eq!(put.status, Status::Success, "put {round}/{i}");
            let want = format!("{round}-{i}-");
            match &get.reply {
                Reply::Value(v) => assert!(
                    v.starts_with(want.as_bytes()),
                    "connection {conn}, round {round}, get {i} saw {:?}, not its put",
                    String::from_utf8_lossy(&v[..v.len().min(12)])
                ),
                other => panic!("get {round}/{i}: {:?} {other:?}", get.status),
            }
        }
    }
    // Each key holds the last put sent to it: puts of one key landed in the order sent.
    frames.clear();
    for k in 0..5u32 {
        let key = Bytes::from(format!("c{conn}-k{k}"));
        encode(&mut frames, cid + k, ns, Request::Retrieve { key });
    }
    s.write_all(&frames).unwrap();
    read_replies(&mut rd, &mut buf, &mut got, cid as usize + 5);
    for k in 0..5u32 {
        let last = (0..PAIRS).filter(|i| i % 5 == k).max().unwrap();
        match &got[&(cid + k)].reply {
            Reply::Value(v) => assert!(v.starts_with(format!("{}-{last}-", ROUNDS - 1).as_bytes())),
            other => panic!("last get of key {k}: {other:?}"),
        }
    }
}

/// Four connections of two tenants on one network thread, memtables of 64 KiB so the engine
/// falls behind and pieces leave the loop: every get sees the put sent just before it.
#[test]
fn a_get_behind_its_put_sees_it_while_puts_leave_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 1;
        c.engine.memtable_bytes = 64 << 10;
    });
    let (_a, a, a_secret) = common::tenant(&dev, "a");
    let (_b, b, b_secret) = common::tenant(&dev, "b");
    let addr = dev.local_addr();
    std::thread::scope(|scope| {
        for conn in 0..4u32 {
            let (ns, secret) = if conn % 2 == 0 {
                (a, &a_secret)
            } else {
                (b, &b_secret)
            };
            scope.spawn(move || pipeline_pairs(addr, ns, secret, conn));
        }
    });
    let off = common::metric(&dev, "cerberus_writes_off_loop_total");
    eprintln!("writes off the loop: {off}");
    assert!(
        off > 0,
        "no write left the loop: the engine was never behind"
    );
    dev.shutdown().unwrap();
}
