//! Hostile and broken clients: random bytes, truncated frames, a frame claiming a huge body,
//! unknown opcodes, a client leaving mid-frame. Each gets an error or a closed connection, and
//! a well-behaved client on another connection keeps being served throughout.

use crate::common;

use bytes::{BufMut, BytesMut};
use cerberus_proto::{split_frame, Command, Header, Opcode, Request, Response, Status, VERSION};
use rand::{Rng, SeedableRng};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn raw(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads completions until the device closes the connection (or `n` arrived).
fn read_responses(s: &mut TcpStream, n: usize) -> (Vec<Response>, bool) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(f) = split_frame(&mut buf, 1 << 24).unwrap() {
            out.push(Response::decode(&f).unwrap());
            if out.len() == n {
                return (out, false);
            }
        }
        match s.read(&mut chunk) {
            Ok(0) => return (out, true),
            Ok(k) => buf.put_slice(&chunk[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(e) => panic!("device neither answered nor closed: {e}"),
        }
    }
}

fn header(opcode: u8, body_len: u32) -> Header {
    Header {
        version: VERSION,
        opcode,
        word: 0,
        cid: 77,
        nsid: 1,
        body_len,
    }
}

#[test]
fn bad_clients_get_errors_and_others_keep_being_served() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_value_len = 4096);
    let addr = dev.local_addr().to_string();
    let (good, ns, _) = common::tenant(&dev, "good");
    let mut served = 0u32;
    let mut check_good = |round: u32| {
        let k = format!("k{round}").into_bytes();
        good.namespace(ns).put(k.clone(), b"v".to_vec()).unwrap();
        assert_eq!(good.namespace(ns).get(k).unwrap().unwrap(), "v".as_bytes());
        served += 1;
    };

    // An unknown opcode: answered with InvalidOpcode, and the connection stays usable.
    let mut s = raw(&addr);
    let mut w = BytesMut::new();
    header(0x7e, 0).encode(&mut w);
    Command {
        cid: 78,
        nsid: cerberus_proto::DEVICE_NSID,
        request: Request::Identify,
    }
    .encode(&mut w)
    .unwrap();
    s.write_all(&w).unwrap();
    let (resps, closed) = read_responses(&mut s, 2);
    assert!(!closed);
    assert_eq!(resps[0].cid, 77);
    assert_eq!(resps[0].status, Status::InvalidOpcode);
    assert_eq!(resps[1].status, Status::Success);
    check_good(0);

    // A malformed body (a key length past the end): InvalidField, connection stays.
    let mut s = raw(&addr);
    let mut w = BytesMut::new();
    header(Opcode::Retrieve as u8, 2).encode(&mut w);
    w.put_u16_le(500);
    s.write_all(&w).unwrap();
    let (resps, _) = read_responses(&mut s, 1);
    assert_eq!(resps[0].status, Status::InvalidField);
    check_good(1);

    // A frame claiming a 4 GiB body: refused from the header, then closed.
    let mut s = raw(&addr);
    let mut w = BytesMut::new();
    header(Opcode::Store as u8, u32::MAX).encode(&mut w);
    s.write_all(&w).unwrap();
    let (resps, closed) = read_responses(&mut s, usize::MAX);
    assert!(closed);
    assert_eq!(resps.len(), 1);
    assert_eq!(resps[0].status, Status::InvalidField);
    check_good(2);

    // Another protocol version: UnsupportedVersion, then closed.
    let mut s = raw(&addr);
    let mut w = BytesMut::new();
    let mut h = header(Opcode::Retrieve as u8, 0);
    h.version = 2;
    h.encode(&mut w);
    s.write_all(&w).unwrap();
    let (resps, closed) = read_responses(&mut s, usize::MAX);
    assert!(closed);
    assert_eq!(resps[0].status, Status::UnsupportedVersion);
    check_good(3);

    // A client that leaves in the middle of a frame.
    for cut in [3usize, 16, 20] {
        let mut s = raw(&addr);
        let mut w = BytesMut::new();
        Command {
            cid: 1,
            nsid: ns,
            request: Request::Store {
                key: "abc".into(),
                value: vec![1u8; 100].into(),
                mode: cerberus_proto::StoreMode::Always,
                sync: false,
            },
        }
        .encode(&mut w)
        .unwrap();
        s.write_all(&w[..cut]).unwrap();
        drop(s);
        check_good(4);
    }

    // Random garbage and truncated/mutated valid frames, from several connections at once.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut sockets = Vec::new();
    for i in 0..40 {
        let mut s = raw(&addr);
        let bytes: Vec<u8> = if i % 2 == 0 {
            (0..rng.gen_range(1..2000)).map(|_| rng.gen()).collect()
        } else {
            let mut w = BytesMut::new();
            Command {
                cid: i,
                nsid: ns,
                request: Request::Retrieve { key: "k0".into() },
            }
            .encode(&mut w)
            .unwrap();
            let mut v = w.to_vec();
            let at = rng.gen_range(0..v.len());
            v[at] ^= rng.gen_range(1..=255u8);
            v.truncate(rng.gen_range(1..=v.len()));
            v
        };
        let _ = s.write_all(&bytes);
        sockets.push(s);
        if i % 10 == 0 {
            check_good(5 + i);
        }
    }
    // The device answers or closes each; none may hang it.
    drop(sockets);
    check_good(100);
    assert!(served >= 10);
    dev.shutdown().unwrap();
}

#[test]
fn connection_limit_closes_extra_connections_only() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.max_connections = 2);
    let addr = dev.local_addr().to_string();
    let (good, ns, _) = common::tenant(&dev, "t");
    // `good` holds one slot (the admin connection used to create the namespace is gone).
    std::thread::sleep(Duration::from_millis(100));
    let _second = raw(&addr);
    std::thread::sleep(Duration::from_millis(100));
    let mut third = raw(&addr);
    let mut b = [0u8; 1];
    assert!(matches!(third.read(&mut b), Ok(0) | Err(_)));
    good.namespace(ns)
        .put(b"k".to_vec(), b"v".to_vec())
        .unwrap();
    dev.shutdown().unwrap();
}
