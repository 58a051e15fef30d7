//! NVMe/TCP controller ids (issue 61): an I/O queue's Connect names its controller by id.
//! Ids are random, and a Connect naming an id that is not its host's (another host's, or
//! its host's NQN without the secret) is answered exactly as a made-up id is, and never
//! joins the controller: its reads do not count as the controller's activity (what keeps
//! a silent admin queue from its idle deadline). A queue joins only once its host has
//! proven itself, which `cerberus_nvme_io_queues_joined` counts.

mod common;

use bytes::Bytes;
use cerberus_device::DeviceHandle;
use cerberus_host::nvme::{NvmeHost, NvmeQueue, NvmeTarget};
use cerberus_host::proto::nvme::{connect_data, fabrics_command as fabrics, property};
use common::SUBNQN;

const VICTIM: &str = "nqn.2014-08.org.example:victim";
const ATTACKER: &str = "nqn.2014-08.org.example:attacker";
/// The host identifier this crate's initiator sends: not a secret.
const HOSTID: [u8; 16] = [7; 16];
const JOINED: &str = "cerberus_nvme_io_queues_joined_total";

fn device(dir: &std::path::Path) -> (DeviceHandle, u32) {
    let dev = common::start(dir, |c| {
        c.nvme_listen = Some("127.0.0.1:0".into());
        for (host, ns) in [(VICTIM, "victim"), (ATTACKER, "attacker")] {
            c.nvme.hosts.insert(host.into(), vec![ns.into()]);
            c.nvme
                .host_secrets
                .insert(host.into(), common::test_secret());
        }
    });
    let admin = common::admin(&dev);
    let (ns, _) = admin.create_namespace("victim").unwrap();
    admin.create_namespace("attacker").unwrap();
    (dev, ns)
}

/// A stranger's I/O queue Connect as `hostnqn` naming `cntlid`, without authenticating,
/// then a Property Get of CSTS on it: both answers (status, dw0 without the echoed id).
async fn unproven_connect(t: &NvmeTarget, hostnqn: &str, cntlid: u16) -> Vec<String> {
    let mut q = NvmeQueue::open(&t.addr, t.digests).await.unwrap();
    let data = connect_data(HOSTID, cntlid, SUBNQN, hostnqn);
    let (cqe, _) = q
        .command(fabrics(0x01, 1 << 16, 31, 0), Bytes::from(data), true, 0)
        .await
        .unwrap();
    let connect = format!("{:?} {:#x}", cqe.status, cqe.dw0 & !0xFFFF);
    let (cqe, _) = q
        .command(fabrics(0x04, 0, property::CSTS, 0), Bytes::new(), true, 0)
        .await
        .unwrap();
    vec![connect, format!("{:?} {:#x}", cqe.status, cqe.dw0)]
}

#[test]
fn a_connect_naming_another_hosts_controller_is_answered_as_a_made_up_id_and_joins_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, ns) = device(dir.path());
    common::rt().block_on(async {
        let victim_t = common::nvme_target(&dev, VICTIM);
        let mut victim = NvmeHost::connect(&victim_t).await.unwrap();
        let id = victim.cntlid;
        let joined = common::metric(&dev, JOINED);
        assert_eq!(joined, 1, "the victim's I/O queue joined once proven");
        let made_up = id % 0xFFEF + 1;

        // The victim's NQN (public) and host id, without its secret.
        let named = unproven_connect(&victim_t, VICTIM, id).await;
        let invented = unproven_connect(&victim_t, VICTIM, made_up).await;
        assert_eq!(
            named, invented,
            "a live id answered apart from a made-up one"
        );

        // Another host, proving its own secret, naming the victim's id.
        let attacker_t = common::nvme_target(&dev, ATTACKER);
        let named = NvmeHost::connect_io_queue(&attacker_t, 1, id).await;
        let invented = NvmeHost::connect_io_queue(&attacker_t, 1, made_up).await;
        let (named, invented) = (named.err(), invented.err());
        assert!(
            named.is_some(),
            "another host's queue joined the victim's controller"
        );
        assert_eq!(
            named.map(|e| e.to_string()),
            invented.map(|e| e.to_string())
        );

        // None of them joined the victim's controller (nor touched its activity).
        assert_eq!(common::metric(&dev, JOINED), joined);
        // The victim's own next queue joins and serves.
        let mut q2 = NvmeHost::connect_io_queue(&victim_t, 2, id).await.unwrap();
        assert_eq!(common::metric(&dev, JOINED), joined + 1);
        victim.store(ns, b"k", b"v", 0).await.unwrap();
        std::mem::swap(&mut victim.io, &mut q2);
        let got = victim.retrieve(ns, b"k", 64).await.unwrap();
        assert_eq!(got.map(|v| v.0.to_vec()), Some(b"v".to_vec()));
    });
    dev.shutdown().unwrap();
}
