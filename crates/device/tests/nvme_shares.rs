//! A namespace's limit holds on the NVMe/TCP wire too (issue 61, point 4): KV Retrieves and
//! Stores and the vendor pair's commands book their slots in the same tags as the native
//! port's (`Shares::ceiling_wait`). Before, a namespace made with `--limit-ops 20` took 100
//! KV Retrieves in 0.01 s. Rates are bounded from above (the limit), as `tests/shares.rs`
//! bounds the native wire's.

mod common;

use cerberus_engine::IoShares;
use cerberus_host::nvme::NvmeHost;
use cerberus_host::{BlockingClient, ClientConfig};
use common::{SUBNQN, TEST_HOSTNQN};
use std::time::{Duration, Instant};

const LIMIT: u64 = 100;

fn within_limit(what: &str, done: u64, secs: f64) {
    println!("{what}: {done} in {secs:.2} s (limit {LIMIT}/s)");
    assert!(
        done as f64 <= 1.1 * LIMIT as f64 * secs + 5.0,
        "{what}: {done} in {secs:.2} s past a limit of {LIMIT}/s"
    );
    assert!(
        done as f64 > 0.3 * LIMIT as f64 * secs,
        "{what}: {done} in {secs:.2} s"
    );
}

#[test]
fn a_limit_holds_over_kv_commands_and_the_vendor_pair() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(TEST_HOSTNQN.into(), vec!["*".into()]);
        c.nvme
            .host_secrets
            .insert(TEST_HOSTNQN.into(), common::test_secret());
    });
    let (ns, secret) = common::admin(&dev).create_namespace("limited").unwrap();
    dev.set_shares(
        ns,
        IoShares {
            limit_ops: LIMIT,
            ..IoShares::default()
        },
    )
    .unwrap();
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, TEST_HOSTNQN))
            .await
            .unwrap();
        h.store(ns, b"k", b"v", 0).await.unwrap();
        let mut gets = 0;
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(1) {
            assert!(h.retrieve(ns, b"k", 64).await.unwrap().is_some());
            gets += 1;
        }
        within_limit("KV Retrieve", gets, t.elapsed().as_secs_f64());
        let mut stores = 0u32;
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(1) {
            h.store(ns, &stores.to_be_bytes(), b"v", 0).await.unwrap();
            stores += 1;
        }
        within_limit("KV Store", u64::from(stores), t.elapsed().as_secs_f64());
    });
    // The vendor pair (a BlockingClient over NVMe/TCP), as the native test does it.
    let addr = dev.nvme_addr().unwrap().to_string();
    let config = ClientConfig::new(addr)
        .with_nvme(SUBNQN, TEST_HOSTNQN)
        .with_nvme_secret(common::test_secret());
    let c = BlockingClient::connect_with(config).unwrap();
    c.open_namespace(ns, &secret).unwrap();
    let t = Instant::now();
    let mut done = 0u64;
    while t.elapsed() < Duration::from_secs(1) {
        c.namespace(ns)
            .get(bytes::Bytes::from_static(b"k"))
            .unwrap();
        done += 1;
    }
    within_limit("vendor get", done, t.elapsed().as_secs_f64());
    drop(c);
    dev.shutdown().unwrap();
}
