//! Writes handed to the workers keep their connection's order, and hold up nobody else. A
//! write is made slow on demand: the `fault-injection` sleep key, stored with sync (so it
//! runs on a worker, as a write the engine holds up would), takes its value's milliseconds.

#![cfg(feature = "fault-injection")]

mod common;

use bytes::{Bytes, BytesMut};
use cerberus_host::WriteOptions;
use cerberus_proto::{split_frame, Command, Reply, Request, Response, Status, StoreMode};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The key whose store sleeps for its value's milliseconds on the thread that runs it.
const SLEEP_KEY: &[u8] = b"\0fault-injection:sleep-ms";

/// While tenant A's write takes 3 s on a worker, A's other connection and tenant B, on the
/// same network thread, are answered at once. Before session 95's review, the task that
/// stores held puts waited for a piece queued behind A's write, so B's put waited the 3 s;
/// and A's other connection's put was queued behind it.
#[test]
fn a_slow_write_holds_up_no_other_connection() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let (a1, a, a_secret) = common::tenant(&dev, "a");
    let (b1, b, _) = common::tenant(&dev, "b");
    std::thread::scope(|s| {
        let slow = s.spawn(|| {
            a1.namespace(a)
                .with_write_options(WriteOptions { sync: true })
                .put(SLEEP_KEY, "3000")
                .expect("the slow write");
        });
        std::thread::sleep(Duration::from_millis(300));
        // A's other connection pipelines a put and a get of its key: held, then stored on
        // the loop (no job of its own is out), and the get sees it.
        let mut raw = TcpStream::connect(dev.local_addr()).unwrap();
        let mut frames = BytesMut::new();
        let commands = [
            Request::Authenticate {
                secret: Bytes::copy_from_slice(a_secret.as_bytes()),
            },
            store(b"k", b"a", false),
            Request::Retrieve {
                key: Bytes::from_static(b"k"),
            },
        ];
        encode(&mut frames, a, commands);
        raw.write_all(&frames).unwrap();
        let got = replies(&mut raw, 3);
        assert!(got.iter().all(|r| r.status == Status::Success), "{got:?}");
        assert!(matches!(&got[2].reply, Reply::Value(v) if &v[..] == b"a"));
        b1.namespace(b).put(&b"k"[..], &b"b"[..]).expect("B's put");
        assert!(
            !slow.is_finished(),
            "the other puts were answered only after A's slow write"
        );
        slow.join().unwrap();
    });
    dev.shutdown().unwrap();
}

fn store(key: &[u8], value: &[u8], sync: bool) -> Request {
    Request::Store {
        key: Bytes::copy_from_slice(key),
        value: Bytes::copy_from_slice(value),
        mode: StoreMode::Always,
        sync,
    }
}

/// Appends `requests` to `frames` as commands of namespace `ns`, numbered from 0.
fn encode(frames: &mut BytesMut, ns: u32, requests: impl IntoIterator<Item = Request>) {
    for (cid, request) in requests.into_iter().enumerate() {
        let cmd = Command {
            cid: cid as u32,
            nsid: ns,
            request,
        };
        cmd.encode(frames).unwrap();
    }
}

/// Reads replies off `s` until `n` came; in the order they came.
fn replies(s: &mut TcpStream, n: usize) -> Vec<Response> {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (mut buf, mut got, mut chunk) = (BytesMut::new(), Vec::new(), vec![0u8; 4096]);
    while got.len() < n {
        while let Some(frame) = split_frame(&mut buf, u32::MAX).unwrap() {
            got.push(Response::decode(&frame).unwrap());
        }
        if got.len() >= n {
            break;
        }
        let read = s.read(&mut chunk).expect("a reply");
        assert!(read > 0, "closed after {} replies", got.len());
        buf.extend_from_slice(&chunk[..read]);
    }
    got
}

/// A connection that pipelines a slow write, a put and a get of the put's key: the put
/// lands after the slow write and the get sees the put, so their answers come in that order.
#[test]
fn a_connection_s_commands_come_after_its_slow_write() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let (c, ns, secret) = common::tenant(&dev, "a");
    c.namespace(ns).put(&b"k"[..], &b"old"[..]).unwrap();
    let mut frames = BytesMut::new();
    let auth = Request::Authenticate {
        secret: Bytes::copy_from_slice(secret.as_bytes()),
    };
    let commands = [
        auth,
        store(SLEEP_KEY, b"1000", true),
        store(b"k", b"new", false),
        Request::Retrieve {
            key: Bytes::from_static(b"k"),
        },
    ];
    encode(&mut frames, ns, commands);
    let mut s = TcpStream::connect(dev.local_addr()).unwrap();
    s.write_all(&frames).unwrap();
    let got = replies(&mut s, 4);
    let order: Vec<u32> = got.iter().map(|r| r.cid).collect();
    assert_eq!(order, [0, 1, 2, 3], "answered out of the order sent");
    assert!(got.iter().all(|r| r.status == Status::Success), "{got:?}");
    match &got[3].reply {
        Reply::Value(v) => assert_eq!(&v[..], b"new"),
        other => panic!("the get answered {other:?}"),
    }
    dev.shutdown().unwrap();
}
