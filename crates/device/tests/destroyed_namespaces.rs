//! Destroyed namespaces: nothing of theirs outlives the destroy, and the destroy breaks no
//! other tenant. Each test destroys namespaces (often many times) while clients still hold them,
//! then checks what the device keeps of them: metrics series, the shares' book, the dedup
//! index, open iterators, and the engine's own check.

mod common;

use cerberus_engine::IoShares;
use cerberus_host::ScanOptions;
use std::time::{Duration, Instant};

/// The namespaces named in `text`'s series (`nsid="N"`), among `ids`.
fn series_of(text: &str, ids: &[u32]) -> Vec<u32> {
    ids.iter()
        .copied()
        .filter(|n| text.contains(&format!("nsid=\"{n}\"")))
        .collect()
}

/// Waits (at most 30 s) for `cond`; the checks come after, so no timing is asserted.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "waited too long: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

both_wires!(
    destroyed_namespaces_leave_no_shares_series,
    iterators_across_a_destroy_are_freed
);

fn weight(w: u32) -> IoShares {
    IoShares {
        weight: w,
        ..IoShares::default()
    }
}

/// A tenant keeps using a namespace after its destroy, on a core that also serves another
/// tenant whose namespace has shares of its own (so the gate weighs contended commands by
/// the tags). The destroyed namespace's tags were forgotten at the destroy; its commands
/// must not bring them back (as series in the metrics, and as entries in the book that
/// nothing removes any more).
fn destroyed_namespaces_leave_no_shares_series() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.network_threads = 1);
    let admin = common::admin(&dev);
    // A neighbour with shares other than the defaults: contended commands go by the tags.
    let (neighbour, other, _) = common::tenant(&dev, "neighbour");
    dev.set_shares(other, weight(4)).unwrap();
    let other = neighbour.namespace(other);
    let tenant = common::connect(&dev);
    let mut destroyed = Vec::new();
    for i in 0..20 {
        let (nsid, secret) = admin.create_namespace("cycled").unwrap();
        let ns = tenant.open_namespace(nsid, &secret).unwrap();
        ns.put("k", format!("v{i}")).unwrap();
        admin.destroy_namespace(nsid).unwrap();
        other.put("n", "x").unwrap();
        // The tenant's connection still holds its proof: answered as a namespace gone.
        assert!(
            ns.get("k").is_err(),
            "cycle {i}: a destroyed namespace answered"
        );
        other.put("n", "y").unwrap();
        destroyed.push(nsid);
    }
    let text = dev.metrics_text();
    let left = series_of(&text, &destroyed);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            left.first()
                .is_some_and(|n| l.contains(&format!("nsid=\"{n}\"")))
        })
        .collect();
    assert!(
        left.is_empty(),
        "series of destroyed namespaces: {left:?}: {lines:#?}"
    );
}

/// An iterator open across its namespace's destroy: the next page is an error or the
/// snapshot's own entries (never another namespace's), a close frees its slot, and after
/// many cycles nothing is left open and the engine is clean. A re-created namespace of the
/// same name does not see the old iterator nor its keys.
fn iterators_across_a_destroy_are_freed() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let tenant = common::connect(&dev);
    let gauge = || common::metric(&dev, "cerberus_iterators_open");
    let base = gauge();
    for i in 0..30 {
        let (nsid, secret) = admin.create_namespace("iterated").unwrap();
        let ns = tenant.open_namespace(nsid, &secret).unwrap();
        for k in 0..20 {
            ns.put(format!("k{k:02}"), format!("c{i}-{k}")).unwrap();
        }
        let opts = ScanOptions::default();
        let it = ns.iter_open(&opts).unwrap();
        let (first, _) = ns.iter_next(it, 5, 1 << 20).unwrap();
        assert_eq!(first.len(), 5);
        let kept = if i % 2 == 0 {
            Some(ns.iter_open(&opts).unwrap())
        } else {
            None
        };
        admin.destroy_namespace(nsid).unwrap();
        // Its next page: an error, or the snapshot's entries.
        if let Ok((rest, _)) = ns.iter_next(it, 100, 1 << 20) {
            for (k, v) in rest {
                let k = String::from_utf8_lossy(&k).to_string();
                let want = format!("c{i}-{}", k[1..].parse::<u32>().unwrap());
                assert_eq!(&v[..], want.as_bytes(), "cycle {i}: another value");
            }
        }
        let _ = ns.iter_close(it);
        if let Some(k) = kept {
            // Not closed by the client: the device must let it go on its own, or at least
            // not serve it any more once the namespace is gone.
            let _ = ns.iter_next(k, 1, 1 << 20);
        }
        // The same name again: no old key, no old iterator.
        let (nsid2, secret2) = admin.create_namespace("iterated").unwrap();
        assert_ne!(nsid2, nsid);
        let ns2 = tenant.open_namespace(nsid2, &secret2).unwrap();
        assert!(
            ns2.iter_next(it, 10, 1 << 20).is_err(),
            "an old id on the new namespace"
        );
        assert_eq!(ns2.get("k00").unwrap(), None);
        admin.destroy_namespace(nsid2).unwrap();
    }
    drop(tenant);
    wait_until("the tenant's iterators are closed", || gauge() == base);
    let report = dev.engine().verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}

/// The dedup service's tasks of a namespace destroyed while they run or wait: its index is
/// dropped (`Forget`) and must stay dropped; a clean stop and restart bring back no index
/// of a destroyed namespace and the engine is clean. Values large enough that a task's
/// chunking takes a while, destroyed at varying points after their puts, on two cores.
#[test]
fn destroyed_namespaces_leave_no_dedup_index() {
    let dir = tempfile::tempdir().unwrap();
    let tweak = |c: &mut cerberus_device::DeviceConfig| {
        c.network_threads = 2;
        c.dedup.enabled = true;
        c.scheduler.policy = cerberus_device::Policy::Bts;
    };
    let dev = common::start(dir.path(), tweak);
    let admin = common::admin(&dev);
    let tenant = common::connect(&dev);
    let (keeper, kept, _) = common::tenant(&dev, "kept");
    let kept_ns = keeper.namespace(kept);
    let mut destroyed = Vec::new();
    for i in 0..40u32 {
        let (nsid, secret) = admin.create_namespace("deduped").unwrap();
        let ns = tenant.open_namespace(nsid, &secret).unwrap();
        for k in 0..4u32 {
            let v: Vec<u8> = (0..(1u32 << 20))
                .map(|b| (b / 4096 + k + i) as u8)
                .collect();
            ns.put(format!("k{k}"), v).unwrap();
        }
        kept_ns
            .put(format!("k{i}"), vec![i as u8; 64 << 10])
            .unwrap();
        for _ in 0..(i % 4) {
            let _ = kept_ns.get(format!("k{i}")).unwrap();
        }
        admin.destroy_namespace(nsid).unwrap();
        destroyed.push(nsid);
    }
    wait_until("dedup backlog drained", || {
        dev.dedup_stats().is_some_and(|d| d.backlog == 0)
    });
    let stats = dev.dedup_stats().unwrap();
    let left: Vec<u32> = destroyed
        .iter()
        .copied()
        .filter(|n| stats.namespaces.contains_key(n))
        .collect();
    assert!(
        left.is_empty(),
        "dedup indexes of destroyed namespaces: {left:?}"
    );
    let series = series_of(&dev.metrics_text(), &destroyed);
    assert!(
        series.is_empty(),
        "series of destroyed namespaces: {series:?}"
    );
    drop((tenant, keeper, admin));
    dev.shutdown().unwrap();
    let dev = common::start(dir.path(), tweak);
    wait_until("dedup backlog drained", || {
        dev.dedup_stats().is_some_and(|d| d.backlog == 0)
    });
    let stats = dev.dedup_stats().unwrap();
    assert_eq!(
        stats.namespaces.keys().copied().collect::<Vec<_>>(),
        vec![kept]
    );
    let report = dev.engine().verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}

/// Reads `n` replies from `s`.
fn replies(s: &mut std::net::TcpStream, n: usize) -> Vec<cerberus_proto::Response> {
    use std::io::Read;
    let mut got = bytes::BytesMut::new();
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    while out.len() < n {
        while let Some(frame) = cerberus_proto::split_frame(&mut got, u32::MAX).expect("frame") {
            out.push(cerberus_proto::Response::decode(&frame).expect("response"));
        }
        if out.len() >= n {
            break;
        }
        let r = s.read(&mut chunk).expect("read");
        assert!(r > 0, "the device closed the connection");
        got.extend_from_slice(&chunk[..r]);
    }
    out
}

/// Gets held back and pipelined (held gets) on a namespace destroyed while they are read:
/// each answers its own value or an error, never another namespace's value; every held
/// byte comes back; the connection goes on serving another namespace it proved; the same
/// name re-created is not readable with the old proof.
#[test]
fn held_gets_across_a_destroy() {
    use bytes::{Bytes, BytesMut};
    use cerberus_proto::{Command, Reply, Request, Status};
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |_| {});
    let admin = common::admin(&dev);
    let (other_client, other, other_secret) = common::tenant(&dev, "other");
    other_client
        .namespace(other)
        .put("o", vec![9u8; 8 << 10])
        .unwrap();
    for i in 0..15u32 {
        let (nsid, secret) = admin.create_namespace("held").unwrap();
        let owner = common::connect(&dev);
        let ns = owner.open_namespace(nsid, &secret).unwrap();
        for k in 0..4u32 {
            ns.put(format!("k{k}"), vec![(i * 4 + k) as u8; 16 << 10])
                .unwrap();
        }
        let mut s = std::net::TcpStream::connect(dev.local_addr()).unwrap();
        let mut frames = BytesMut::new();
        let auth = |secret: &str| Request::Authenticate {
            secret: Bytes::copy_from_slice(secret.as_bytes()),
        };
        Command {
            cid: 1,
            nsid,
            request: auth(&secret),
        }
        .encode(&mut frames)
        .unwrap();
        Command {
            cid: 2,
            nsid: other,
            request: auth(&other_secret),
        }
        .encode(&mut frames)
        .unwrap();
        s.write_all(&frames).unwrap();
        assert!(replies(&mut s, 2)
            .iter()
            .all(|r| r.status == Status::Success));
        let gets = 400u32;
        let mut frames = BytesMut::new();
        for cid in 0..gets {
            let request = Request::Retrieve {
                key: Bytes::from(format!("k{}", cid % 4)),
            };
            Command {
                cid: 10 + cid,
                nsid,
                request,
            }
            .encode(&mut frames)
            .unwrap();
        }
        let (half, rest) = frames.split_at(frames.len() / 2);
        s.write_all(half).unwrap();
        admin.destroy_namespace(nsid).unwrap();
        s.write_all(rest).unwrap();
        for r in replies(&mut s, gets as usize) {
            let k = (r.cid - 10) % 4;
            match (&r.status, &r.reply) {
                (Status::Success, Reply::Value(v)) => {
                    assert_eq!(v.len(), 16 << 10);
                    assert!(
                        v.iter().all(|b| *b == (i * 4 + k) as u8),
                        "cycle {i}: another value"
                    );
                }
                (Status::Success, other) => panic!("cycle {i}: {other:?}"),
                _ => {}
            }
        }
        // The connection goes on with the other namespace it proved.
        let mut frames = BytesMut::new();
        let request = Request::Retrieve {
            key: Bytes::from_static(b"o"),
        };
        Command {
            cid: 5000,
            nsid: other,
            request,
        }
        .encode(&mut frames)
        .unwrap();
        s.write_all(&frames).unwrap();
        let r = replies(&mut s, 1).remove(0);
        assert_eq!(r.status, Status::Success, "cycle {i}: {:?}", r.reply);
        // The same name again: the old proof does not open it.
        let (nsid2, _) = admin.create_namespace("held").unwrap();
        let mut frames = BytesMut::new();
        for (cid, n) in [(6000, nsid), (6001, nsid2)] {
            let request = Request::Retrieve {
                key: Bytes::from_static(b"k0"),
            };
            Command {
                cid,
                nsid: n,
                request,
            }
            .encode(&mut frames)
            .unwrap();
        }
        s.write_all(&frames).unwrap();
        for r in replies(&mut s, 2) {
            assert_ne!(r.status, Status::Success, "cycle {i}: {r:?}");
        }
        admin.destroy_namespace(nsid2).unwrap();
    }
    wait_until("held bytes back", || {
        common::metric(&dev, "cerberus_held_bytes") == 0
    });
    let report = dev.engine().verify().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
}
