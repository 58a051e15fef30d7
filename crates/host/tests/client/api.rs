//! The typed methods against the fake device: listing and paging, namespaces, stats,
//! identify.

use crate::common;

use bytes::Bytes;
use cerberus_host::{Client, Error};
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
    send_sync::<cerberus_host::Namespace>();
    send_sync::<cerberus_host::BlockingNamespace>();
    send_sync::<Error>();
    fn send<T: Send>(_: &T) {}
    let c: Option<Client> = None;
    if let Some(c) = c {
        send(&c.namespace(NS).list_all("", 1));
        send(&c.namespace(NS).stats());
        send(&c.create_namespace("x"));
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
    let ns = c.open_namespace(NS, NS_SECRET).await.unwrap();
    assert_eq!(ns.nsid(), NS);
    let keys: Vec<Bytes> = (0..10).map(|i| Bytes::from(format!("k{i:02}"))).collect();
    for k in &keys {
        ns.put(k.clone(), "v").await.unwrap();
    }
    // The device returns at most max_list_keys (4) whatever is asked.
    let (page, more) = ns.list("", false, 100).await.unwrap();
    assert_eq!(page, keys[..4]);
    assert!(more);
    let (page, more) = ns.list("k03", true, 3).await.unwrap();
    assert_eq!(page, keys[4..7]);
    assert!(more);
    let (page, more) = ns.list("k08", false, 3).await.unwrap();
    assert_eq!(page, keys[8..]);
    assert!(!more);

    assert_eq!(ns.list_all("", 3).await.unwrap(), keys);
    assert_eq!(ns.list_all("", 100).await.unwrap(), keys);
    assert_eq!(ns.list_all("k05", 2).await.unwrap(), keys[5..]);
    assert!(ns.list_all("z", 2).await.unwrap().is_empty());
}

#[tokio::test]
async fn namespaces_and_stats() {
    let (_dev, c) = device().await;
    c.authenticate_admin(ADMIN_SECRET).await.unwrap();
    let (a, secret_a) = c.create_namespace("a").await.unwrap();
    let (b, _) = c.create_namespace("b").await.unwrap();
    assert_ne!(a, b);
    let names: Vec<_> = c
        .list_namespaces()
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
        c.namespace(a).put("k", "v").await.unwrap_err(),
        Error::AccessDenied(_)
    ));
    let ns_a = c.open_namespace(a, &secret_a).await.unwrap();
    ns_a.put("k1", "v").await.unwrap();
    ns_a.put("k2", "v").await.unwrap();
    let stats = ns_a.stats().await.unwrap();
    assert_eq!(stats["nsid"], a);
    assert_eq!(stats["keys"], 2);
    let device = c.stats().await.unwrap();
    assert_eq!(device["namespaces"], 3);

    c.destroy_namespace(b).await.unwrap();
    assert_eq!(c.list_namespaces().await.unwrap().len(), 2);
}
