//! A command that panics on a worker answers its client with an internal error, and the
//! device keeps serving at full strength: later commands on the same connection and on
//! others succeed. Panics are armed through the `fault-injection` feature, which the crate's
//! dev-dependency on itself turns on for its tests.

#![cfg(feature = "fault-injection")]

mod common;

use cerberus_host::{BlockingClient, ClientConfig, Error, Status};
use std::time::{Duration, Instant};

/// The key whose store arms the next N panics (N: the decimal value).
const PANIC_NEXT_KEY: &[u8] = b"\0fault-injection:panic-next";

/// Bounds every call, so a lost completion fails the test instead of hanging it.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

fn connect(addr: &str, nsid: u32, secret: &str) -> BlockingClient {
    let c =
        BlockingClient::connect_with(ClientConfig::new(addr).with_request_timeout(CALL_TIMEOUT))
            .expect("connect");
    c.open_namespace(nsid, secret).expect("auth");
    c
}

fn arm(c: &BlockingClient, nsid: u32, n: u32) {
    c.namespace(nsid)
        .put(PANIC_NEXT_KEY, n.to_string())
        .expect("arming store");
}

fn assert_internal_error(r: Result<impl std::fmt::Debug, Error>) {
    match r {
        Err(Error::Device { status, message }) => {
            assert_eq!(status, Status::InternalError);
            assert!(message.contains("panicked"), "message: {message}");
        }
        other => panic!("expected an internal error, got {other:?}"),
    }
}

#[test]
fn a_panicking_command_fails_alone_and_the_workers_keep_serving() {
    // The injected panics are expected: keep them out of the test output.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let injected = info
            .payload()
            .downcast_ref::<&str>()
            .is_some_and(|m| m.starts_with("injected fault"));
        if !injected {
            default_hook(info);
        }
    }));

    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| c.workers = 2);
    let addr = dev.local_addr().to_string();
    let (nsid, secret) = common::admin(&dev).create_namespace("faulty").unwrap();
    let a = connect(&addr, nsid, &secret);
    a.namespace(nsid).put("k", "v").unwrap();

    arm(&a, nsid, 1);
    let t = Instant::now();
    assert_internal_error(a.namespace(nsid).get("k"));
    assert!(
        t.elapsed() < CALL_TIMEOUT / 2,
        "answered after {:?}",
        t.elapsed()
    );
    assert_eq!(
        a.namespace(nsid).get("k").unwrap().as_deref(),
        Some(&b"v"[..])
    );

    // More panics than workers: each is answered, and no worker is lost to them.
    arm(&a, nsid, 5);
    for i in 0..5 {
        assert_internal_error(a.namespace(nsid).put(format!("lost{i}"), "x"));
    }
    for i in 0..5 {
        assert!(!a.namespace(nsid).contains(format!("lost{i}")).unwrap());
    }

    // Both connections, from several threads at once, are served.
    let b = connect(&addr, nsid, &secret);
    std::thread::scope(|s| {
        for (t, c) in [&a, &b, &a, &b].into_iter().enumerate() {
            s.spawn(move || {
                for i in 0..200 {
                    c.namespace(nsid).put(format!("t{t}-{i:03}"), "y").unwrap();
                }
            });
        }
    });
    let keys = b.namespace(nsid).list_all("t", 1000).unwrap();
    assert_eq!(keys.len(), 800);
    assert_eq!(
        b.namespace(nsid).get("k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    dev.shutdown().unwrap();
}
