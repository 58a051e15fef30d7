//! What SPDK's NVMe/TCP initiator sent the target (docs/nvme-tcp.md, "Tried with SPDK"):
//! the admin commands `spdk_nvme_identify` sends after its controller's initialisation, as
//! a capture of a real run listed them, each answered as it should be. The features NVMe
//! Base 2.0 makes mandatory for an I/O controller (arbitration, power management,
//! temperature threshold, error recovery) were "Invalid Field" before.

use crate::common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeError, NvmeHost, NvmeQueue};
use cerberus_host::proto::nvme::{
    connect_data, fabrics_command, property, AdminCommand, NvmeStatus, Sqe, DISCOVERY_NQN,
};

const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:5eed0000-0000-4000-8000-000000000001";

/// A device with its target on a free port, HOST granted namespace "spdk" (made).
fn device(dir: &std::path::Path) -> (DeviceHandle, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["spdk".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
    });
    let (nsid, _) = common::admin(&dev)
        .create_namespace("spdk")
        .expect("namespace");
    (dev, nsid)
}

/// `cmd`'s entry for namespace `nsid` (an Identify names its own).
fn entry(cmd: AdminCommand, nsid: u32) -> Sqe {
    let mut sqe = Sqe {
        nsid,
        ..Sqe::default()
    };
    cmd.encode(&mut sqe);
    sqe
}

/// Get Features `fid` with CDW11 `cdw11`, or Set Features `fid` to `value`.
fn feature(fid: u8, nsid: u32, cdw11: u32, set: Option<u32>) -> Sqe {
    let mut sqe = match set {
        Some(value) => entry(AdminCommand::SetFeatures { fid, value }, nsid),
        None => entry(AdminCommand::GetFeatures { fid }, nsid),
    };
    if set.is_none() {
        sqe.cdw[1] = cdw11;
    }
    sqe
}

fn invalid_field() -> NvmeStatus {
    NvmeStatus::error(0, 0x02)
}

/// An admin command's status, DW0 and the length of its data.
async fn ask(h: &mut NvmeHost, sqe: Sqe, len: u32) -> (NvmeStatus, u32, usize) {
    match h.admin_command(sqe, len).await {
        Ok((cqe, data)) => (cqe.status, cqe.dw0, data.len()),
        Err(NvmeError::Status(s)) => (s, 0, 0),
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn the_admin_commands_spdk_identify_sent_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, nsid) = device(dir.path());
    common::rt().block_on(async {
        let mut h = host(&dev).await;
        // In the order of the capture, after Connect, the properties and CC.EN. The only
        // refusal SPDK saw and should see: CNS 06h for the zoned command set (CSI 2), which
        // the target does not have.
        let identify = |cns: u8, csi: u8, nsid: u32| {
            let cntid = 0;
            entry(
                AdminCommand::Identify {
                    cns,
                    cntid,
                    csi,
                    nsid,
                },
                0,
            )
        };
        let log = |lid: u8, len: u64| {
            entry(
                AdminCommand::GetLogPage {
                    lid,
                    offset: 0,
                    len,
                },
                !0,
            )
        };
        let get = |fid: u8, nsid: u32| feature(fid, nsid, 0, None);
        let set = |fid: u8, value: u32| feature(fid, 0, 0, Some(value));
        let seen: Vec<(&str, Sqe, u32, Option<NvmeStatus>)> = vec![
            ("identify controller", identify(0x01, 0, 0), 4096, None),
            ("async event config", set(0x0B, 0x1F), 0, None),
            ("keep-alive timer", get(0x0F, 0), 0, None),
            ("NVM controller data", identify(0x06, 0, 0), 4096, None),
            (
                "zoned controller data",
                identify(0x06, 2, 0),
                4096,
                Some(invalid_field()),
            ),
            ("KV controller data", identify(0x06, 1, 0), 4096, None),
            ("number of queues", set(0x07, 0x03FF_03FF), 0, None),
            ("active namespaces", identify(0x02, 0, 0), 4096, None),
            ("namespace", identify(0x00, 0, nsid), 4096, None),
            ("descriptors", identify(0x03, 0, nsid), 4096, None),
            ("KV namespace", identify(0x05, 1, nsid), 4096, None),
            ("arbitration", get(0x01, 0), 0, None),
            ("power management", get(0x02, 0), 0, None),
            ("temperature threshold", get(0x04, 0), 0, None),
            ("number of queues", get(0x07, 0), 0, None),
            ("error log", log(0x01, 64), 64, None),
            ("SMART log", log(0x02, 512), 512, None),
            ("firmware log", log(0x03, 512), 512, None),
            ("error recovery", get(0x05, nsid), 0, None),
        ];
        for (what, sqe, len, refused) in seen {
            let (status, _, got) = ask(&mut h, sqe, len).await;
            match refused {
                None => {
                    assert!(status.is_success(), "{what}: {status:?}");
                    assert_eq!(got, len as usize, "{what}: its data");
                }
                Some(s) => assert_eq!(status, s, "{what}"),
            }
        }
        // The KV namespace is what SPDK's KV API found: CSI 1 among the descriptors.
        let desc = h.identify(0x03, nsid, 0).await.unwrap();
        assert_eq!(&desc[20..22], &[0x04, 1], "NIDT CSI, NIDL 1");
        assert_eq!(desc[24], 1, "CSI: Key Value");
    });
}

/// Get Features `fid` (CDW11 `cdw11`), or Set Features `fid` to `set`: status and DW0.
async fn feat(
    h: &mut NvmeHost,
    fid: u8,
    nsid: u32,
    cdw11: u32,
    set: Option<u32>,
) -> (NvmeStatus, u32) {
    let (status, dw0, _) = ask(h, feature(fid, nsid, cdw11, set), 0).await;
    (status, dw0)
}

/// A controller of HOST on `dev`.
async fn host(dev: &DeviceHandle) -> NvmeHost {
    NvmeHost::connect(&common::nvme_target(dev, HOST))
        .await
        .expect("connect")
}

#[test]
fn an_io_controller_answers_the_mandatory_features() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, nsid) = device(dir.path());
    common::rt().block_on(async {
        let mut h = host(&dev).await;
        let ok = NvmeStatus::SUCCESS;
        let bad = invalid_field();
        // Arbitration: 0 (a burst of one command) until set; kept as set.
        assert_eq!(feat(&mut h, 0x01, 0, 0, None).await, (ok, 0));
        assert_eq!(feat(&mut h, 0x01, 0, 0, Some(0x0102_0303)).await.0, ok);
        assert_eq!(feat(&mut h, 0x01, 0, 0, None).await, (ok, 0x0102_0303));
        // Power management: power state 0, the only one; another is refused.
        assert_eq!(feat(&mut h, 0x02, 0, 0, None).await, (ok, 0));
        assert_eq!(feat(&mut h, 0x02, 0, 0, Some(1)).await.0, bad);
        assert_eq!(feat(&mut h, 0x02, 0, 0, Some(0x20)).await.0, ok, "WH kept");
        assert_eq!(feat(&mut h, 0x02, 0, 0, None).await, (ok, 0x20));
        // Temperature threshold: the composite sensor's over (343 K) and under (0 K)
        // thresholds; sensors 1-8 do not exist; not settable.
        assert_eq!(feat(&mut h, 0x04, 0, 0, None).await, (ok, 343));
        assert_eq!(feat(&mut h, 0x04, 0, 1 << 20, None).await, (ok, 0));
        assert_eq!(feat(&mut h, 0x04, 0, 1 << 16, None).await.0, bad);
        assert_eq!(feat(&mut h, 0x04, 0, 2 << 20, None).await.0, bad);
        assert_eq!(feat(&mut h, 0x04, 0, 0, Some(300)).await.0, bad);
        // Error recovery: no time limit, no deallocated-block error.
        assert_eq!(feat(&mut h, 0x05, nsid, 0, None).await, (ok, 0));
        assert_eq!(feat(&mut h, 0x05, nsid, 0, Some(10)).await.0, bad);
        // A feature this target does not have is still refused.
        assert_eq!(feat(&mut h, 0x06, 0, 0, None).await.0, bad);
    });
}

#[test]
fn a_discovery_controller_has_no_io_controller_features() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, _) = device(dir.path());
    let t = common::nvme_target(&dev, HOST);
    common::rt().block_on(async {
        let mut q = NvmeQueue::open(&t.addr, t.digests).await.unwrap();
        let data = connect_data([7; 16], 0xFFFF, DISCOVERY_NQN, HOST);
        let connect = fabrics_command(0x01, 0, 31, 0);
        let (cqe, _) = q
            .command(connect, Bytes::from(data), true, 0)
            .await
            .unwrap();
        assert!(cqe.status.is_success());
        let cc = fabrics_command(0x00, 0, property::CC, 1 | 6 << 16 | 4 << 20);
        let (cqe, _) = q.command(cc, Bytes::new(), true, 0).await.unwrap();
        assert!(cqe.status.is_success());
        for fid in [0x01, 0x02, 0x04, 0x05] {
            let get = feature(fid, 0, 0, None);
            let (cqe, _) = q.command(get, Bytes::new(), true, 0).await.unwrap();
            assert_eq!(cqe.status, invalid_field(), "feature {fid:#x}");
        }
        let keep_alive = feature(0x0F, 0, 0, None);
        let (cqe, _) = q.command(keep_alive, Bytes::new(), true, 0).await.unwrap();
        assert!(cqe.status.is_success(), "keep-alive timer, as before");
    });
}
