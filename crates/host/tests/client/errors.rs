//! Completion statuses map to typed errors (with the device's message), absent keys to
//! `None` / `false`, and requests the device could not take are refused before sending.

use crate::common;

use bytes::Bytes;
use cerberus_host::{Client, Error, Reply, Request, Status, StoreMode, WriteOptions, DEVICE_NSID};
use common::{FakeDevice, FakeOptions, ADMIN_SECRET, NS, NS_SECRET};

async fn device(require_auth: bool) -> (FakeDevice, Client) {
    let dev = FakeDevice::start(FakeOptions {
        require_auth,
        ..FakeOptions::default()
    })
    .await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    (dev, client)
}

#[tokio::test]
async fn absent_keys_are_none_and_false() {
    let (_dev, c) = device(false).await;
    assert_eq!(c.namespace(NS).get("missing").await.unwrap(), None);
    assert!(!c.namespace(NS).delete("missing").await.unwrap());
    assert!(!c.namespace(NS).contains("missing").await.unwrap());
    c.namespace(NS).put("k", "v").await.unwrap();
    assert!(c.namespace(NS).contains("k").await.unwrap());
    assert!(c.namespace(NS).delete("k").await.unwrap());
    assert!(!c.namespace(NS).contains("k").await.unwrap());
}

#[tokio::test]
async fn conditional_stores() {
    let (_dev, c) = device(false).await;
    let err = c
        .namespace(NS)
        .store("k", "v", StoreMode::OnlyIfPresent)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::KeyNotExist), "{err:?}");
    assert_eq!(err.status(), Some(Status::KeyNotExist));
    c.namespace(NS)
        .with_write_options(WriteOptions { sync: true })
        .store("k", "v1", StoreMode::OnlyIfAbsent)
        .await
        .unwrap();
    let err = c
        .namespace(NS)
        .store("k", "v2", StoreMode::OnlyIfAbsent)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::KeyExists), "{err:?}");
    assert_eq!(err.status(), Some(Status::KeyExists));
    c.namespace(NS)
        .store("k", "v3", StoreMode::OnlyIfPresent)
        .await
        .unwrap();
    assert_eq!(c.namespace(NS).get("k").await.unwrap().unwrap(), "v3");
}

#[tokio::test]
async fn key_and_value_sizes() {
    let (_dev, c) = device(false).await;
    // Device limits: keys 1..=64 bytes, values up to 4096 (0x86 / 0x85).
    for key in [Bytes::new(), Bytes::from(vec![b'k'; 65])] {
        let err = c.namespace(NS).put(key.clone(), "v").await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidKeySize(m) if m.contains("key of")),
            "{err:?}"
        );
        assert_eq!(err.status(), Some(Status::InvalidKeySize));
        let err = c.namespace(NS).get(key).await.unwrap_err();
        assert!(matches!(err, Error::InvalidKeySize(_)), "{err:?}");
    }
    let err = c.namespace(NS).put("k", vec![0u8; 4097]).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValueSize(m) if m == "value of 4097 bytes"),
        "{err:?}"
    );
    assert_eq!(err.status(), Some(Status::InvalidValueSize));
    assert!(!c.is_closed());
}

/// Requests the device would answer by closing the connection (a body over its
/// `max_frame_body`), or that the protocol cannot carry, fail locally and leave the
/// connection (and every other caller on it) alone.
#[tokio::test]
async fn oversized_requests_are_refused_locally() {
    let (dev, c) = device(false).await;
    let before = dev.stats.commands.load(std::sync::atomic::Ordering::SeqCst);
    let err = c.namespace(NS).put("k", vec![0u8; 9000]).await.unwrap_err();
    // In the device's words: the value is over its limit (not "a request body of ...").
    assert!(
        matches!(&err, Error::InvalidValueSize(m) if m ==
            "value is 9000 bytes; this device accepts values up to 4096 bytes (max_value_len)"),
        "{err:?}"
    );
    let err = c.namespace(NS).get(vec![b'k'; 70_000]).await.unwrap_err();
    assert!(matches!(err, Error::InvalidKeySize(_)), "{err:?}");
    let err = c.open_namespace(NS, &"s".repeat(300)).await.unwrap_err();
    assert!(matches!(err, Error::Protocol(_)), "{err:?}");
    let after = dev.stats.commands.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(before, after, "nothing was sent");
    c.namespace(NS).put("k", "v").await.unwrap();
    assert!(!c.is_closed());
}

#[tokio::test]
async fn access_denied_keeps_the_message() {
    let (_dev, c) = device(true).await;
    let err = c.namespace(NS).get("k").await.unwrap_err();
    assert!(
        matches!(&err, Error::AccessDenied(m) if m == "not authenticated for this namespace"),
        "{err:?}"
    );
    assert_eq!(err.status(), Some(Status::AccessDenied));
    assert!(err.to_string().contains("not authenticated"), "{err}");
    let err = c.open_namespace(NS, "wrong").await.unwrap_err();
    assert!(matches!(&err, Error::AccessDenied(m) if m == "wrong secret"));
    let err = c.create_namespace("tenant").await.unwrap_err();
    assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");
    let err = c.stats().await.unwrap_err();
    assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");

    c.open_namespace(NS, NS_SECRET).await.unwrap();
    c.namespace(NS).put("k", "v").await.unwrap();
    // Authentication belongs to the connection: clones share it.
    assert_eq!(
        c.clone().namespace(NS).get("k").await.unwrap().unwrap(),
        "v"
    );
    // Not another namespace's.
    assert!(matches!(
        c.namespace(NS + 1).get("k").await.unwrap_err(),
        Error::AccessDenied(_)
    ));
}

#[tokio::test]
async fn namespace_errors() {
    let (_dev, c) = device(true).await;
    c.authenticate_admin(ADMIN_SECRET).await.unwrap();
    let err = c.create_namespace("default").await.unwrap_err();
    assert!(
        matches!(&err, Error::NamespaceExists(m) if m == "default exists"),
        "{err:?}"
    );
    assert_eq!(err.status(), Some(Status::NamespaceExists));
    let err = c.destroy_namespace(999).await.unwrap_err();
    assert!(matches!(&err, Error::InvalidNamespace(m) if m == "no namespace 999"));
    assert_eq!(err.status(), Some(Status::InvalidNamespace));
}

/// Every status code, forced by the fake, maps to its variant; the rest are
/// `Device { status, message }` with the message kept.
#[tokio::test]
async fn every_status_maps_to_its_error() {
    let (_dev, c) = device(false).await;
    let codes: [(u16, Status); 15] = [
        (0x01, Status::InvalidOpcode),
        (0x02, Status::InvalidField),
        (0x06, Status::InternalError),
        (0x0B, Status::InvalidNamespace),
        (0x81, Status::CapacityExceeded),
        (0x85, Status::InvalidValueSize),
        (0x86, Status::InvalidKeySize),
        (0x87, Status::KeyNotExist),
        (0x89, Status::KeyExists),
        (0xC0, Status::AccessDenied),
        (0xC1, Status::NamespaceExists),
        (0xC2, Status::UnsupportedVersion),
        (0xC3, Status::Corrupted),
        (0xC4, Status::ShuttingDown),
        (0x99, Status::Unknown(0x99)),
    ];
    for (code, status) in codes {
        let hex = format!("{code:02X}");
        let key = format!("!status:{hex}");
        let err = c.namespace(NS).put(key.clone(), "v").await.unwrap_err();
        let msg = format!("forced {hex}");
        assert_eq!(err.status(), Some(status), "{err:?}");
        let typed = match &err {
            Error::AccessDenied(m)
            | Error::InvalidKeySize(m)
            | Error::InvalidValueSize(m)
            | Error::CapacityExceeded(m)
            | Error::InvalidNamespace(m)
            | Error::NamespaceExists(m) => {
                assert_eq!(m, &msg);
                true
            }
            Error::KeyExists | Error::KeyNotExist => true,
            Error::Device { status: s, message } => {
                assert_eq!(*s, status);
                assert_eq!(message, &msg);
                false
            }
            other => panic!("0x{hex}: {other:?}"),
        };
        let expect_typed = matches!(
            status,
            Status::AccessDenied
                | Status::InvalidKeySize
                | Status::InvalidValueSize
                | Status::CapacityExceeded
                | Status::InvalidNamespace
                | Status::NamespaceExists
                | Status::KeyExists
                | Status::KeyNotExist
        );
        assert_eq!(typed, expect_typed, "0x{hex}: {err:?}");
        // KeyNotExist on a get is an answer, not an error.
        let got = c.namespace(NS).get(key).await;
        if status == Status::KeyNotExist {
            assert_eq!(got.unwrap(), None);
        } else {
            assert_eq!(got.unwrap_err().status(), Some(status));
        }
    }
    assert!(!c.is_closed());
}

/// `call` hands back failure completions as they are.
#[tokio::test]
async fn raw_call_returns_failures_as_responses() {
    let (_dev, c) = device(true).await;
    let r = c
        .call(NS, Request::Retrieve { key: "k".into() })
        .await
        .unwrap();
    assert_eq!(r.status, Status::AccessDenied);
    assert_eq!(r.nsid, NS);
    assert_eq!(
        r.reply,
        Reply::Error("not authenticated for this namespace".into())
    );
    let r = c.call(DEVICE_NSID, Request::Identify).await.unwrap();
    assert!(r.status.is_success());
    assert!(matches!(r.reply, Reply::Identify(_)));
}
