//! The NVMe/TCP target's discovery controller: Connect to the well-known discovery NQN,
//! its Identify data, the discovery log (content, paging by offset and length, per host),
//! and no I/O queues for it.

use crate::common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{discover, NvmeHost, NvmeQueue, NvmeTarget};
use cerberus_host::proto::nvme::{
    connect_data, connect_invalid_parameters, property, Cqe, NvmeStatus, Sqe, DISCOVERY_NQN,
};

use common::SUBNQN;
const HOST: &str = "nqn.2014-08.org.example:host1";
const STRANGER: &str = "nqn.2014-08.org.example:nobody";

fn device(dir: &std::path::Path) -> DeviceHandle {
    common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(HOST.into(), vec!["kv".into()]);
        // Not about authentication: the admin takes these hosts at their word.
        c.nvme.require_host_auth = false;
    })
}

fn target(dev: &DeviceHandle, hostnqn: &str) -> NvmeTarget {
    common::nvme_target(dev, hostnqn)
}

use cerberus_host::proto::nvme::fabrics_command as fabrics;

/// Connects queue `qid` of `subnqn` as `hostnqn` (controller `cntlid`): its completion.
async fn connect(t: &NvmeTarget, subnqn: &str, qid: u16, cntlid: u16) -> (NvmeQueue, Cqe) {
    let mut q = NvmeQueue::open(&t.addr, t.digests).await.unwrap();
    let data = connect_data([7; 16], cntlid, subnqn, &t.hostnqn);
    let sqe = fabrics(0x01, u32::from(qid) << 16, 31, 0);
    let (cqe, _) = q.command(sqe, Bytes::from(data), true, 0).await.unwrap();
    (q, cqe)
}

/// An enabled discovery controller's admin queue, and its id.
async fn discovery_controller(t: &NvmeTarget) -> (NvmeQueue, u16) {
    let (mut q, cqe) = connect(t, DISCOVERY_NQN, 0, 0xFFFF).await;
    assert!(cqe.status.is_success());
    let cc = fabrics(0x00, 0, property::CC, 1 | 6 << 16 | 4 << 20);
    assert!(q
        .command(cc, Bytes::new(), true, 0)
        .await
        .unwrap()
        .0
        .status
        .is_success());
    (q, cqe.dw0 as u16)
}

/// Get Log Page 70h: `len` bytes from `offset`.
async fn log(q: &mut NvmeQueue, offset: u64, len: u32) -> (NvmeStatus, Bytes) {
    let numd = len / 4 - 1;
    let mut sqe = Sqe {
        opcode: 0x02,
        ..Sqe::default()
    };
    sqe.cdw[0] = 0x70 | (numd & 0xFFFF) << 16;
    sqe.cdw[1] = numd >> 16;
    sqe.cdw[2] = offset as u32;
    sqe.cdw[3] = (offset >> 32) as u32;
    let (cqe, data) = q.command(sqe, Bytes::new(), true, len).await.unwrap();
    (cqe.status, data)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn discover_lists_the_subsystem_at_the_address_reached() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    let addr = dev.nvme_addr().unwrap();
    common::rt().block_on(async {
        let entries = discover(&target(&dev, HOST)).await.expect("discover");
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!((e.trtype, e.adrfam, e.subtype), (3, 1, 2), "TCP, IPv4, NVM");
        assert_eq!((e.portid, e.cntlid, e.asqsz), (1, 0xFFFF, 128));
        assert_eq!(e.trsvcid, addr.port().to_string());
        assert_eq!(e.traddr, "127.0.0.1");
        assert_eq!(e.subnqn, SUBNQN);
        // A host the settings grant nothing finds no subsystem.
        assert!(discover(&target(&dev, STRANGER)).await.unwrap().is_empty());
    });
    dev.shutdown().unwrap();
}

#[test]
fn the_discovery_log_pages_by_offset_and_length() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    common::rt().block_on(async {
        let (mut q, _) = discovery_controller(&target(&dev, HOST)).await;
        let (status, header) = log(&mut q, 0, 16).await;
        assert!(status.is_success());
        assert_eq!(header.len(), 16);
        let generation = u64_at(&header, 0);
        assert_eq!(u64_at(&header, 8), 1, "NUMREC");
        // The whole log: header and one record.
        let (_, whole) = log(&mut q, 0, 2048).await;
        assert_eq!(u64_at(&whole, 0), generation);
        assert_eq!(&whole[1024..1027], &[3, 1, 2]);
        // A window inside the record: its SUBNQN's first bytes.
        let (_, nqn) = log(&mut q, 1024 + 256, 8).await;
        assert_eq!(&nqn[..], &SUBNQN.as_bytes()[..8]);
        // Past the end of the page: zeros; past it altogether: refused.
        let (_, tail) = log(&mut q, 2040, 16).await;
        assert_eq!(&tail[..8], &whole[2040..]);
        assert!(tail[8..].iter().all(|&b| b == 0));
        let (status, _) = log(&mut q, 4096, 4).await;
        assert_eq!(status, NvmeStatus::error(0, 0x02));
        // Another log page is not a discovery controller's.
        let mut smart = Sqe {
            opcode: 0x02,
            ..Sqe::default()
        };
        smart.cdw[0] = 0x02 | 127 << 16;
        let (cqe, _) = q.command(smart, Bytes::new(), true, 512).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(1, 0x09));
    });
    dev.shutdown().unwrap();
}

#[test]
fn a_discovery_controller_identifies_as_one_and_takes_no_io_queue() {
    let dir = tempfile::tempdir().unwrap();
    let dev = device(dir.path());
    common::rt().block_on(async {
        let t = target(&dev, HOST);
        let (mut q, cntlid) = discovery_controller(&t).await;
        let mut id = Sqe {
            opcode: 0x06,
            ..Sqe::default()
        };
        id.cdw[0] = 0x01;
        let (cqe, c) = q.command(id, Bytes::new(), true, 4096).await.unwrap();
        assert!(cqe.status.is_success());
        assert_eq!(c[111], 2, "CNTRLTYPE: discovery");
        assert_eq!(u16::from_le_bytes([c[78], c[79]]), cntlid);
        assert!(c[768..].starts_with(DISCOVERY_NQN.as_bytes()));
        assert_eq!(
            u32::from_le_bytes([c[516], c[517], c[518], c[519]]),
            0,
            "NN"
        );
        // Namespaces are not a discovery controller's business.
        id.cdw[0] = 0x02;
        let (cqe, _) = q.command(id, Bytes::new(), true, 4096).await.unwrap();
        assert_eq!(cqe.status, NvmeStatus::error(0, 0x02));
        // An I/O queue of the discovery controller, or under the discovery NQN: refused.
        let (_, cqe) = connect(&t, SUBNQN, 1, cntlid).await;
        assert_eq!(cqe.status, connect_invalid_parameters());
        let h = NvmeHost::connect(&t).await.unwrap();
        let (_, cqe) = connect(&t, DISCOVERY_NQN, 1, h.cntlid).await;
        assert_eq!(cqe.status, connect_invalid_parameters());
        // Keep Alive is answered.
        let ka = Sqe {
            opcode: 0x18,
            ..Sqe::default()
        };
        let (cqe, _) = q.command(ka, Bytes::new(), true, 0).await.unwrap();
        assert!(cqe.status.is_success());
    });
    dev.shutdown().unwrap();
}
