//! A native connection whose turn ends with frames read and not taken (complete
//! ones, and a partial one behind them) must have them handled without another byte
//! arriving, in order (a get after a put of the same key sees it), whatever
//! `network_frames_per_turn` is (0: no turns; 1: a turn per frame).

use crate::common;

use bytes::{Bytes, BytesMut};
use cerberus_proto::{split_frame, Command, Reply, Request, Response, Status, StoreMode};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Reads replies until `want` command ids are answered; panics if the connection closes
/// or nothing comes for 20 s (a connection that left frames unhandled).
pub(crate) fn read_replies(
    rd: &mut TcpStream,
    buf: &mut BytesMut,
    got: &mut HashMap<u32, Response>,
    want: usize,
) {
    rd.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        while let Some(frame) = split_frame(buf, u32::MAX).unwrap() {
            let r = Response::decode(&frame).unwrap();
            assert!(got.insert(r.cid, r).is_none(), "two replies");
        }
        if got.len() >= want {
            return;
        }
        let n = rd
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("{} of {want} replies, then: {e}", got.len()));
        assert!(n > 0, "closed with {} of {want} replies", got.len());
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Appends the frame of command `cid` to `frames`.
pub(crate) fn encode(frames: &mut BytesMut, cid: u32, nsid: u32, request: Request) {
    Command { cid, nsid, request }.encode(frames).unwrap();
}

/// A plain put of `key`.
pub(crate) fn store(key: Bytes, value: Bytes) -> Request {
    Request::Store {
        key,
        value,
        mode: StoreMode::Always,
        sync: false,
    }
}

fn puts_and_gets_across_turns(per_turn: usize) {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 1;
        c.network_frames_per_turn = per_turn;
    });
    let (_client, ns, secret) = common::tenant(&dev, "t");
    let mut frames = BytesMut::new();
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    encode(&mut frames, 0, ns, auth);
    // 100 pairs: a put of key k, then a get of it (of the value just put).
    let mut cid = 1u32;
    for i in 0..100u32 {
        let key = Bytes::from(format!("k{}", i % 7));
        let value = Bytes::from(format!("v{i}"));
        let put = store(key.clone(), value);
        encode(&mut frames, cid, ns, put);
        encode(&mut frames, cid + 1, ns, Request::Retrieve { key });
        cid += 2;
    }
    // A last get, of which only the first half is sent with the rest.
    let mut last = BytesMut::new();
    let key = Bytes::from_static(b"k0");
    encode(&mut last, cid, ns, Request::Retrieve { key });
    let half = last.len() / 2;
    frames.extend_from_slice(&last[..half]);
    let mut s = TcpStream::connect(dev.local_addr()).unwrap();
    s.write_all(&frames).unwrap();
    let mut rd = s.try_clone().unwrap();
    let (mut buf, mut got) = (BytesMut::new(), HashMap::new());
    // Every whole frame answered, nothing more sent.
    read_replies(&mut rd, &mut buf, &mut got, cid as usize);
    assert_eq!(got[&0].status, Status::Success, "authenticate");
    for i in 0..100u32 {
        let get = &got[&(2 + 2 * i)];
        assert_eq!(got[&(1 + 2 * i)].status, Status::Success);
        match &get.reply {
            Reply::Value(v) => assert_eq!(&v[..], format!("v{i}").as_bytes(), "get {i}"),
            other => panic!("get {i}: {:?} {other:?}", get.status),
        }
    }
    // The rest of the partial frame: answered too.
    s.write_all(&last[half..]).unwrap();
    read_replies(&mut rd, &mut buf, &mut got, cid as usize + 1);
    match &got[&cid].reply {
        Reply::Value(v) => assert_eq!(&v[..], b"v98"),
        other => panic!("last get: {other:?}"),
    }
    dev.shutdown().unwrap();
}

#[test]
fn puts_and_gets_across_turns_of_one_frame() {
    puts_and_gets_across_turns(1);
}

#[test]
fn puts_and_gets_across_turns_of_three_frames() {
    puts_and_gets_across_turns(3);
}

#[test]
fn puts_and_gets_across_turns_of_the_default() {
    puts_and_gets_across_turns(32);
}

#[test]
fn puts_and_gets_without_turns() {
    puts_and_gets_across_turns(0);
}

/// A connection at its in-flight limit when the device stops: every frame its client sent
/// before the stop is answered (its commands' replies, the rest `ShuttingDown`) before it
/// closes. `read_first`: authenticated alone first, so that the reader then reads the whole
/// pipeline at once; else sent with it, the reader's first read (512 bytes, before it
/// authenticates) leaving most of it unread in the socket when the stop comes. Before,
/// such a connection closed with the input unread, which reset it: the client lost the
/// replies written already (3 of 105 came in one run).
fn all_answered_across_a_stop(read_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.network_threads = 1;
        c.max_inflight = 4;
    });
    let (client, ns, secret) = common::tenant(&dev, "t");
    // Large values: their replies fill the socket, the client reading nothing yet, and hold
    // the connection's in-flight permits.
    client
        .namespace(ns)
        .put(&b"big"[..], vec![7u8; 2 << 20])
        .unwrap();
    let mut s = TcpStream::connect(dev.local_addr()).unwrap();
    let mut rd = s.try_clone().unwrap();
    let (mut buf, mut got) = (BytesMut::new(), HashMap::<u32, Response>::new());
    let mut frames = BytesMut::new();
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    encode(&mut frames, 0, ns, auth);
    if read_first {
        s.write_all(&frames).unwrap();
        read_replies(&mut rd, &mut buf, &mut got, 1);
        frames.clear();
    }
    let mut cid = 1u32;
    for _ in 0..4 {
        let get = Request::Retrieve {
            key: Bytes::from_static(b"big"),
        };
        encode(&mut frames, cid, ns, get);
        cid += 1;
    }
    for i in 0..100u32 {
        let put = store(Bytes::from(format!("p{i}")), Bytes::from_static(b"v"));
        encode(&mut frames, cid, ns, put);
        cid += 1;
    }
    s.write_all(&frames).unwrap();
    // The reader waits for a permit; then the device stops.
    std::thread::sleep(Duration::from_millis(500));
    dev.stop();
    std::thread::sleep(Duration::from_millis(500));
    rd.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut chunk = vec![0u8; 1 << 20];
    let end = loop {
        while let Some(frame) = split_frame(&mut buf, u32::MAX).unwrap() {
            let r = Response::decode(&frame).unwrap();
            got.insert(r.cid, r);
        }
        match rd.read(&mut chunk) {
            Ok(0) => break "closed".to_string(),
            Err(e) => break e.to_string(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let refused = got
        .values()
        .filter(|r| r.status == Status::ShuttingDown)
        .count();
    let unanswered: Vec<u32> = (0..cid).filter(|c| !got.contains_key(c)).collect();
    assert!(
        unanswered.is_empty(),
        "{} of {cid} frames never answered ({refused} refused ShuttingDown), the first {:?}; \
         the connection ended: {end}",
        unanswered.len(),
        unanswered.first()
    );
    drop(client);
    dev.wait().unwrap();
}

/// A turn's early return after `network_frames_per_turn` refusals would end the read loop
/// there: the frames behind them would get no answer.
#[test]
fn frames_read_before_a_stop_are_all_answered() {
    all_answered_across_a_stop(true);
}

#[test]
fn frames_sent_before_a_stop_and_not_read_yet_are_answered() {
    all_answered_across_a_stop(false);
}
