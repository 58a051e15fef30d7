//! The keep-alive timeout of an NVMe/TCP controller: the KATO from the admin Connect;
//! a controller whose admin queue hears nothing for it (plus a grace) goes, with its I/O
//! queues; a host that keeps alive stays.

mod common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeQueue, NvmeTarget};
use cerberus_host::proto::nvme::{connect_data, connect_invalid_parameters, Sqe, FABRICS_OPCODE};
use std::time::Duration;

use common::SUBNQN;
const HOST: &str = "nqn.2014-08.org.example:host1";

fn device(dir: &std::path::Path) -> (DeviceHandle, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
    });
    let (ns, _) = common::admin(&dev).create_namespace("kv").expect("kv");
    (dev, ns)
}

fn target(dev: &DeviceHandle) -> NvmeTarget {
    common::nvme_target(dev, HOST)
}

/// Not a timing assertion: a bound so that a target that never expires the controller
/// fails the test instead of hanging it.
const AT_MOST: Duration = Duration::from_secs(60);

#[test]
fn a_silent_host_loses_its_controller_and_io_queues() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path());
    common::rt().block_on(async {
        let mut h = NvmeHost::connect_with_kato(&target(&dev), 1000)
            .await
            .unwrap();
        h.store(ns, b"k", b"v", 0).await.unwrap();
        // Nothing on the admin queue: both queues close (I/O traffic does not keep the
        // controller alive; this target does not offer traffic-based keep-alive).
        let closed =
            |r: Result<_, NvmeError>| matches!(r, Err(NvmeError::Closed | NvmeError::Io(_)));
        let io = tokio::time::timeout(AT_MOST, h.io.recv())
            .await
            .expect("I/O queue closed");
        assert!(closed(io));
        let admin = tokio::time::timeout(AT_MOST, h.admin.recv())
            .await
            .expect("admin closed");
        assert!(closed(admin));
        // The controller is gone: a new I/O queue cannot join it.
        let t = target(&dev);
        let mut q = NvmeQueue::open(&t.addr, t.digests).await.unwrap();
        let data = connect_data([7; 16], h.cntlid, SUBNQN, HOST);
        let mut sqe = Sqe {
            opcode: FABRICS_OPCODE,
            nsid: 0x01,
            ..Sqe::default()
        };
        sqe.cdw[0] = 1 << 16;
        sqe.cdw[1] = 31;
        let (cqe, _) = q.command(sqe, Bytes::from(data), true, 0).await.unwrap();
        assert_eq!(cqe.status, connect_invalid_parameters());
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_host_that_keeps_alive_stays() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path());
    common::rt().block_on(async {
        let mut h = NvmeHost::connect_with_kato(&target(&dev), 1000)
            .await
            .unwrap();
        // Three seconds, past the KATO and its grace, keeping alive every 200 ms.
        for i in 0..15u8 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            h.keep_alive().await.expect("keep alive");
            h.store(ns, &[i], b"v", 0).await.expect("store");
        }
        assert_eq!(h.list(ns, b"", 4096).await.unwrap().len(), 15);
        // Set Features Keep Alive Timer reads back the KATO.
        let mut get = cerberus_host::proto::nvme::Sqe {
            opcode: 0x0A,
            ..Default::default()
        };
        get.cdw[0] = 0x0F;
        let (cqe, _) = h.admin_command(get, 0).await.unwrap();
        assert_eq!(cqe.dw0, 1000);
    });
    dev.shutdown().unwrap();
}

#[test]
fn set_features_arms_the_keep_alive_timer_of_a_controller_connected_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path());
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&target(&dev)).await.unwrap();
        // Keep Alive Timer (0Fh) = 1,000 ms; then silence on the admin queue.
        let mut set = Sqe {
            opcode: 0x09,
            ..Sqe::default()
        };
        set.cdw[0] = 0x0F;
        set.cdw[1] = 1000;
        h.admin_command(set, 0).await.expect("set KATO");
        h.store(ns, b"k", b"v", 0).await.unwrap();
        let io = tokio::time::timeout(AT_MOST, h.io.recv())
            .await
            .expect("I/O queue closed");
        assert!(matches!(io, Err(NvmeError::Closed | NvmeError::Io(_))));
    });
    dev.shutdown().unwrap();
}

/// A host connected without a keep-alive timeout (this crate's blocking client) sends
/// nothing on its admin queue after the set-up. While its I/O queue is busy, the admin
/// queue outlives the idle deadline: closing it would end the controller and the busy queue.
#[test]
fn a_busy_io_queue_keeps_its_silent_admin_queue_past_the_idle_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let dev = common::start(dir.path(), |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
        c.nvme.idle_timeout_secs = 1;
    });
    let (ns, secret) = common::admin(&dev).create_namespace("kv").expect("kv");
    let addr = dev
        .nvme_addr()
        .expect("the NVMe/TCP target is on")
        .to_string();
    let config = cerberus_host::ClientConfig::new(addr).with_nvme(SUBNQN, HOST);
    let client = cerberus_host::BlockingClient::connect_with(config).expect("connect");
    client.open_namespace(ns, &secret).expect("auth");
    let kv = client.namespace(ns);
    // Calls for three idle deadlines, each a few milliseconds after the last.
    let until = std::time::Instant::now() + Duration::from_secs(3);
    let mut i = 0u32;
    while std::time::Instant::now() < until {
        let key = format!("k{}", i % 50);
        kv.put(key.clone(), format!("v{i}"))
            .expect("put while busy");
        let got = kv.get(key).expect("get while busy");
        assert_eq!(got.as_deref(), Some(format!("v{i}").as_bytes()));
        std::thread::sleep(Duration::from_millis(20));
        i += 1;
    }
    // Silent past the deadline (nothing sent, not even a probe): the queues go, and the
    // client says so at its next call.
    let gone_by = std::time::Instant::now() + AT_MOST;
    let open = || -> usize {
        dev.scheduler_stats()
            .cores
            .iter()
            .map(|c| c.connections)
            .sum()
    };
    while open() != 0 {
        assert!(
            std::time::Instant::now() < gone_by,
            "an idle controller is closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(kv.get("k0").is_err());
}
