//! Durability that tells the truth on NVMe/TCP (issue 61, point 5): Identify reports the
//! volatile write cache a completed Store sits in (the value log, unsynced), Flush syncs it,
//! and `nvme.sync_stores` makes every Store durable before it completes (then no volatile
//! cache is reported).

use crate::common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::NvmeHost;
use cerberus_host::proto::nvme::Sqe;

const HOST: &str = "nqn.2014-08.org.example:durable";

fn device(dir: &std::path::Path, sync_stores: bool) -> (DeviceHandle, u32, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes this host at its word.
        c.nvme.require_host_auth = false;
        c.nvme.sync_stores = sync_stores;
    });
    let admin = common::admin(&dev);
    let kv = admin.create_namespace("kv").expect("kv").0;
    let other = admin.create_namespace("other").expect("other").0;
    (dev, kv, other)
}

fn flush(nsid: u32) -> Sqe {
    Sqe {
        opcode: 0x00,
        nsid,
        ..Sqe::default()
    }
}

#[test]
fn flush_syncs_and_identify_reports_the_write_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, other) = device(dir.path(), false);
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        let id = h.identify(1, 0, 0).await.unwrap();
        assert_eq!(id[525] & 1, 1, "VWC: a volatile write cache is present");
        assert_eq!(
            id[525] >> 1 & 3,
            0b10,
            "VWC: a Flush of nsid FFFFFFFFh is not supported"
        );
        h.store(kv, b"k", b"v", 0).await.unwrap();
        // Was "Invalid Opcode" before issue 61.
        let (cqe, _) =
            h.io.command(flush(kv), Bytes::new(), true, 0)
                .await
                .unwrap();
        assert!(cqe.status.is_success(), "{:?}", cqe.status);
        // All namespaces: no namespace's gate would weigh it, so any host could sync the
        // device's log past its limit (review, third round, M3). Was served before.
        let (cqe, _) =
            h.io.command(flush(u32::MAX), Bytes::new(), true, 0)
                .await
                .unwrap();
        assert_eq!((cqe.status.sct, cqe.status.sc), (0, 0x0B), "all namespaces");
        // Not a namespace this host may use.
        let (cqe, _) =
            h.io.command(flush(other), Bytes::new(), true, 0)
                .await
                .unwrap();
        assert_eq!((cqe.status.sct, cqe.status.sc), (0, 0x0B));
    });
    dev.shutdown().unwrap();
}

#[test]
fn sync_stores_reports_no_volatile_cache() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, kv, _) = device(dir.path(), true);
    common::rt().block_on(async {
        let mut h = NvmeHost::connect(&common::nvme_target(&dev, HOST))
            .await
            .unwrap();
        let id = h.identify(1, 0, 0).await.unwrap();
        assert_eq!(id[525] & 1, 0, "every Store is durable at its completion");
        for i in 0..20u8 {
            h.store(kv, &[b'k', i], b"v", 0).await.unwrap();
        }
        assert!(h.exist(kv, &[b'k', 19]).await.unwrap());
    });
    dev.shutdown().unwrap();
}
