//! The typed methods against the fake device: listing and paging, namespaces, stats,
//! identify.

mod common;

use bytes::Bytes;
use cerberus_host::{Client, Error, DEVICE_NSID};
use common::{FakeDevice, FakeOptions, ADMIN_SECRET, NS, NS_SECRET};

async fn device() -> (FakeDevice, Client) {
    let dev = FakeDevice::start(FakeOptions {
        require_auth: true,
        ..FakeOptions::default()
    })
    .await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    (dev, client)
}

/// Handles go anywhere: across threads and into spawned tasks.
#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<Client>();
    send_sync::<cerberus_host::BlockingClient>();
    send_sync::<Error>();
    fn send<T: Send>(_: &T) {}
    let c: Option<Client> = None;
    if let Some(c) = c {
        send(&c.list_all(NS, "", 1));
        send(&c.stats(NS));
        send(&c.ns_create("x"));
    }
}

#[tokio::test]
async fn identify_matches_the_device() {
    let (_dev, c) = device().await;
    let id = c.identify().await.unwrap();
    assert_eq!(id, FakeOptions::default().identify);
    assert_eq!(c.device_info(), Some(id));
}

#[tokio::test]
async fn list_pages_and_list_all() {
    let (_dev, c) = device().await;
    c.authenticate(NS, NS_SECRET).await.unwrap();
    let keys: Vec<Bytes> = (0..10).map(|i| Bytes::from(format!("k{i:02}"))).collect();
    for k in &keys {
        c.put(NS, k.clone(), "v").await.unwrap();
    }
    // The device returns at most max_list_keys (4) whatever is asked.
    let (page, more) = c.list(NS, "", false, 100).await.unwrap();
    assert_eq!(page, keys[..4]);
    assert!(more);
    let (page, more) = c.list(NS, "k03", true, 3).await.unwrap();
    assert_eq!(page, keys[4..7]);
    assert!(more);
    let (page, more) = c.list(NS, "k08", false, 3).await.unwrap();
    assert_eq!(page, keys[8..]);
    assert!(!more);

    assert_eq!(c.list_all(NS, "", 3).await.unwrap(), keys);
    assert_eq!(c.list_all(NS, "", 100).await.unwrap(), keys);
    assert_eq!(c.list_all(NS, "k05", 2).await.unwrap(), keys[5..]);
    assert!(c.list_all(NS, "z", 2).await.unwrap().is_empty());
}

#[tokio::test]
async fn namespaces_and_stats() {
    let (_dev, c) = device().await;
    c.authenticate_admin(ADMIN_SECRET).await.unwrap();
    let (a, secret_a) = c.ns_create("a").await.unwrap();
    let (b, _) = c.ns_create("b").await.unwrap();
    assert_ne!(a, b);
    let names: Vec<_> = c
        .ns_list()
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.nsid, e.name))
        .collect();
    assert_eq!(
        names,
        vec![(NS, "default".into()), (a, "a".into()), (b, "b".into())]
    );

    // Admin does not grant data access.
    assert!(matches!(
        c.put(a, "k", "v").await.unwrap_err(),
        Error::AccessDenied(_)
    ));
    c.authenticate(a, &secret_a).await.unwrap();
    c.put(a, "k1", "v").await.unwrap();
    c.put(a, "k2", "v").await.unwrap();
    let stats = c.stats(a).await.unwrap();
    assert_eq!(stats["nsid"], a);
    assert_eq!(stats["keys"], 2);
    let device = c.stats(DEVICE_NSID).await.unwrap();
    assert_eq!(device["namespaces"], 3);

    c.ns_destroy(b).await.unwrap();
    assert_eq!(c.ns_list().await.unwrap().len(), 2);
}
