//! Many commands in flight on one connection, completed out of order.

use crate::common;

use bytes::Bytes;
use cerberus_host::{Client, ClientConfig, InflightLimit};
use common::{opts, FakeDevice, FakeOptions, Mode, NS};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(60);

fn value(i: usize, round: u32) -> Bytes {
    Bytes::from(format!("value-{i}-{round}-{}", "x".repeat(i % 50)))
}

/// The fake answers data commands in batches of 100, each in reverse order of arrival, so
/// no completion comes back in the order its command went out; each of 1,000 concurrent
/// callers (per round) must still get its own answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_concurrent_calls_complete_out_of_order() {
    let dev = FakeDevice::start(opts(Mode::Batch(100))).await;
    let client = Client::connect(&dev.addr()).await.unwrap();

    // Round 1: 1,000 puts at once.
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            c.namespace(NS)
                .put(format!("key-{i:04}"), value(i, 1))
                .await
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap().unwrap();
    }

    // Round 2: 500 gets of those keys and 500 puts of new ones, interleaved.
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let got = c.namespace(NS).get(format!("key-{i:04}")).await.unwrap();
                assert_eq!(got, Some(value(i, 1)), "get of key-{i:04}");
            } else {
                c.namespace(NS)
                    .put(format!("new-{i:04}"), value(i, 2))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap();
    }

    // Round 3: 1,000 gets, mixing hits and misses.
    let mut tasks = Vec::new();
    for i in 0..1000 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            let got = c.namespace(NS).get(format!("new-{i:04}")).await.unwrap();
            let want = (i % 2 == 1).then(|| value(i, 2));
            assert_eq!(got, want, "get of new-{i:04}");
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap();
    }
    assert!(!client.is_closed());
}

/// The client learns `max_inflight` from Identify at connect and never has more commands
/// outstanding at the device, however many callers there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inflight_bound_learned_from_identify() {
    let mut o = opts(Mode::PerRead);
    o.identify.max_inflight = 8;
    let dev = FakeDevice::start(o).await;
    let client = Client::connect(&dev.addr()).await.unwrap();
    assert_eq!(client.device_info().unwrap().max_inflight, 8);

    let mut tasks = Vec::new();
    for i in 0..500 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            c.namespace(NS)
                .put(format!("k{i}"), format!("v{i}"))
                .await
                .unwrap();
            assert_eq!(
                c.namespace(NS).get(format!("k{i}")).await.unwrap().unwrap(),
                format!("v{i}")
            );
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap();
    }
    let peak = dev.stats.peak_outstanding.load(Ordering::SeqCst);
    assert!(peak <= 8, "device saw {peak} commands in flight");
}

/// A fixed limit from the config applies without asking the device.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_inflight_bound() {
    let dev = FakeDevice::start(FakeOptions::default()).await;
    let config = ClientConfig::new(dev.addr()).with_max_inflight(InflightLimit::Fixed(3));
    let client = Client::connect_with(config).await.unwrap();
    assert!(client.device_info().is_none());
    let mut tasks = Vec::new();
    for i in 0..200 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            c.namespace(NS).put(format!("k{i}"), "v").await.unwrap();
        }));
    }
    for t in tasks {
        timeout(LIMIT, t).await.unwrap().unwrap();
    }
    let peak = dev.stats.peak_outstanding.load(Ordering::SeqCst);
    assert!(peak <= 3, "device saw {peak} commands in flight");
}
