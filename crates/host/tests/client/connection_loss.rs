//! A broken connection fails every waiting and every later call with an error; nothing
//! hangs. Every wait in these tests is under a tokio timeout to prove it.

use crate::common;

use cerberus_host::{Client, ClientConfig, Error};
use common::{opts, wait_until, FakeDevice, FakeOptions, Mode, NS};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

fn closed(r: Result<impl std::fmt::Debug, Error>) {
    match r {
        Err(Error::ConnectionClosed) => {}
        other => panic!("expected ConnectionClosed, got {other:?}"),
    }
}

/// Commands held by the device when it drops the connection (in band, on a `!close` key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_closing_fails_pending_and_later_calls() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..20 {
        let c = client.clone();
        pending.push(tokio::spawn(
            async move { c.namespace(NS).get("!hold").await },
        ));
    }
    // Identify at connect, then the 20 held gets.
    wait_until(|| dev.stats.commands.load(Ordering::SeqCst) >= 21).await;
    closed(
        timeout(LIMIT, client.namespace(NS).put("!close", ""))
            .await
            .unwrap(),
    );
    for t in pending {
        closed(timeout(LIMIT, t).await.unwrap().unwrap());
    }
    closed(timeout(LIMIT, client.namespace(NS).get("k")).await.unwrap());
    closed(
        timeout(LIMIT, client.namespace(NS).put("k", "v"))
            .await
            .unwrap(),
    );
    assert!(client.is_closed());
    let reason = client.close_reason().unwrap();
    assert!(reason.contains("closed the connection"), "{reason}");
}

/// The device dies while callers also wait for an in-flight slot (max_inflight 2): those
/// fail too instead of waiting for slots that will never free up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connection_fails_callers_waiting_for_a_slot() {
    let mut o = opts(Mode::PerRead);
    o.identify.max_inflight = 2;
    let dev = FakeDevice::start(o).await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..10 {
        let c = client.clone();
        pending.push(tokio::spawn(
            async move { c.namespace(NS).get("!hold").await },
        ));
    }
    wait_until(|| dev.stats.commands.load(Ordering::SeqCst) >= 3).await;
    dev.kill_connections();
    for t in pending {
        closed(timeout(LIMIT, t).await.unwrap().unwrap());
    }
    closed(
        timeout(LIMIT, client.namespace(NS).contains("k"))
            .await
            .unwrap(),
    );
}

/// The device sends half a completion and goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_lost_mid_frame() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    let waiting = {
        let c = client.clone();
        tokio::spawn(async move { c.namespace(NS).get("!hold").await })
    };
    closed(
        timeout(LIMIT, client.namespace(NS).get("!half"))
            .await
            .unwrap(),
    );
    closed(timeout(LIMIT, waiting).await.unwrap().unwrap());
    closed(timeout(LIMIT, client.identify()).await.unwrap());
    let reason = client.close_reason().unwrap();
    assert!(reason.contains("middle of a frame"), "{reason}");
}

/// A command the device never answers times out; the connection stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_timeout() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let config = ClientConfig::new(dev.addr()).with_request_timeout(Duration::from_millis(200));
    let client = Client::connect_with(config).await.unwrap();
    let err = timeout(LIMIT, client.namespace(NS).get("!hold"))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Timeout), "{err:?}");
    client.namespace(NS).put("k", "v").await.unwrap();
    assert_eq!(client.namespace(NS).get("k").await.unwrap().unwrap(), "v");
}

#[tokio::test]
async fn connect_refused_is_io() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let err = timeout(LIMIT, Client::connect(&addr))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
}

/// A peer that accepts but never answers Identify: connect gives up after its timeout.
#[tokio::test]
async fn connect_timeout_covers_identify() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let silent = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(sock);
    });
    let mut config = ClientConfig::new(addr);
    config.connect_timeout = Duration::from_millis(200);
    let err = timeout(LIMIT, Client::connect_with(config))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Timeout), "{err:?}");
    silent.abort();
}

/// A peer that closes right after accepting: connect fails instead of hanging.
#[tokio::test]
async fn peer_closing_during_connect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        drop(sock);
    });
    let err = timeout(LIMIT, Client::connect(&addr))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionClosed), "{err:?}");
}

/// Dropping the last clone closes the connection (the device sees it end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_closes_the_connection() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    let clone = client.clone();
    client.namespace(NS).put("k", "v").await.unwrap();
    drop(client);
    clone.namespace(NS).put("k", "v2").await.unwrap();
    assert_eq!(dev.stats.connections_ended.load(Ordering::SeqCst), 0);
    drop(clone);
    wait_until(|| dev.stats.connections_ended.load(Ordering::SeqCst) == 1).await;
}

/// A completion whose body does not decode fails that call only; a frame that breaks the
/// framing (unknown version) closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_completions() {
    use bytes::{BufMut, BytesMut};
    use cerberus_host::InflightLimit;
    use cerberus_proto::{Header, HEADER_LEN};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        for version in [1u8, 9] {
            let mut head = [0u8; HEADER_LEN];
            sock.read_exact(&mut head).await.unwrap();
            let h = Header::decode(&head);
            let mut body = vec![0u8; h.body_len as usize];
            sock.read_exact(&mut body).await.unwrap();
            // A list completion (opcode 0x06) too short to hold its count.
            let mut out = BytesMut::new();
            Header {
                version,
                opcode: 0x06,
                word: 0,
                cid: h.cid,
                nsid: h.nsid,
                body_len: 2,
            }
            .encode(&mut out);
            out.put_slice(b"xx");
            sock.write_all(&out).await.unwrap();
        }
        // Hold the socket open: the client must close on its own.
        let mut rest = Vec::new();
        let _ = sock.read_to_end(&mut rest).await;
    });
    let config = ClientConfig::new(addr).with_max_inflight(InflightLimit::Fixed(0));
    let client = Client::connect_with(config).await.unwrap();
    let err = timeout(LIMIT, client.namespace(NS).list("", false, 10))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Protocol(_)), "{err:?}");
    assert!(!client.is_closed());
    closed(
        timeout(LIMIT, client.namespace(NS).list("", false, 10))
            .await
            .unwrap(),
    );
    let reason = client.close_reason().unwrap();
    assert!(reason.contains("unsupported protocol version"), "{reason}");
    drop(client);
    timeout(LIMIT, peer).await.unwrap().unwrap();
}
