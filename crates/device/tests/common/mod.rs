#![allow(dead_code)]

use cerberus_device::{Device, DeviceConfig, DeviceHandle};
use cerberus_host::{BlockingClient, ClientConfig};
use std::cell::Cell;
use std::path::Path;

/// The wire the helpers below connect over: suites that run over both set it per test
/// (see `both_wires!`); the native wire unless set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Native,
    Nvme,
}

thread_local! {
    static WIRE: Cell<Wire> = const { Cell::new(Wire::Native) };
}

/// The subsystem NQN of the device's NVMe/TCP target (its default).
pub const SUBNQN: &str = "nqn.2026-11.dev.cerberus:kv";
/// The host NQN the NVMe-wire clients connect as: granted every namespace, and an admin
/// host.
pub const TEST_HOSTNQN: &str = "nqn.2014-08.org.example:e2e";

/// TEST_HOSTNQN's DH-HMAC-CHAP secret: the NVMe-wire clients authenticate as the device
/// requires by default.
pub fn test_secret() -> String {
    cerberus_host::proto::nvme::DhchapSecret::encode(
        Some(cerberus_host::proto::nvme::HashId::Sha256),
        &[0x5a; 32],
    )
}

/// The NVMe/TCP target of `dev` (its target must be on) as host `hostnqn`, no digests.
pub fn nvme_target(dev: &DeviceHandle, hostnqn: &str) -> cerberus_host::nvme::NvmeTarget {
    cerberus_host::nvme::NvmeTarget {
        addr: dev.nvme_addr().expect("nvme on").to_string(),
        subnqn: SUBNQN.into(),
        hostnqn: hostnqn.into(),
        digests: Default::default(),
        // Used only if the target asks (a host with a secret there).
        host_secret: Some(test_secret()),
        ctrl_secret: None,
    }
}

/// A runtime on the test's thread, for the async NVMe/TCP initiator.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs `test` with the helpers connecting over `wire`.
pub fn over(wire: Wire, test: impl FnOnce()) {
    WIRE.with(|w| w.set(wire));
    test();
}

pub fn wire() -> Wire {
    WIRE.with(|w| w.get())
}

/// Runs each named test fn over both wires: `<name>::native` and `<name>::nvme`.
#[macro_export]
macro_rules! both_wires {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn native() {
                super::common::over(super::common::Wire::Native, super::$name)
            }
            #[test]
            fn nvme() {
                super::common::over(super::common::Wire::Nvme, super::$name)
            }
        }
    )*};
}

/// A device on a free loopback port over `dir`, with small test-friendly settings; on the
/// NVMe wire, its NVMe/TCP target on a free port too, with `TEST_HOSTNQN` granted all.
pub fn start(dir: &Path, tweak: impl FnOnce(&mut DeviceConfig)) -> DeviceHandle {
    let mut c = DeviceConfig {
        data_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        workers: 4,
        ..DeviceConfig::default()
    };
    c.engine.memtable_bytes = 4 << 20;
    c.engine.cache_bytes = 8 << 20;
    if wire() == Wire::Nvme {
        c.nvme_listen = Some("127.0.0.1:0".into());
        c.nvme.hosts.insert(TEST_HOSTNQN.into(), vec!["*".into()]);
        c.nvme.admin_hosts.push(TEST_HOSTNQN.into());
        c.nvme
            .host_secrets
            .insert(TEST_HOSTNQN.into(), test_secret());
    }
    tweak(&mut c);
    Device::start(c).expect("device starts")
}

/// A new client of `dev` over the test's wire (not authenticated).
pub fn connect(dev: &DeviceHandle) -> BlockingClient {
    BlockingClient::connect_with(config(dev)).expect("connect")
}

/// The client settings for `dev` over the test's wire.
pub fn config(dev: &DeviceHandle) -> ClientConfig {
    match wire() {
        Wire::Native => ClientConfig::new(dev.local_addr().to_string()),
        Wire::Nvme => {
            let addr = dev.nvme_addr().expect("the NVMe/TCP target is on");
            ClientConfig::new(addr.to_string())
                .with_nvme(SUBNQN, TEST_HOSTNQN)
                .with_nvme_secret(test_secret())
        }
    }
}

pub fn admin(dev: &DeviceHandle) -> BlockingClient {
    let c = connect(dev);
    c.authenticate_admin(dev.admin_secret())
        .expect("admin auth");
    c
}

/// Creates a namespace and returns a client authenticated for it, with its id and secret.
pub fn tenant(dev: &DeviceHandle, name: &str) -> (BlockingClient, u32, String) {
    let (nsid, secret) = admin(dev).create_namespace(name).expect("ns create");
    let c = connect(dev);
    c.open_namespace(nsid, &secret).expect("auth");
    (c, nsid, secret)
}

/// A KV command's entry with command id `cid`, its data named by a transport SGL of
/// `size` bytes (0x5A: the target fetches or sends it; 0x01: in the capsule).
pub fn kv_sqe(
    ns: u32,
    cid: u16,
    opcode: cerberus_host::proto::nvme::KvOpcode,
    key: &[u8],
    size: u32,
    in_capsule: bool,
) -> cerberus_host::proto::nvme::Sqe {
    use cerberus_host::proto::nvme::{KvCommand, KvKey, Sqe};
    let mut sqe = Sqe {
        nsid: ns,
        ..Sqe::default()
    };
    KvCommand {
        opcode,
        key: KvKey::new(key).expect("a test key of at most 16 bytes"),
        size,
        options: 0,
    }
    .encode(&mut sqe);
    sqe.cid = cid;
    sqe.dptr[8..12].copy_from_slice(&size.to_le_bytes());
    sqe.dptr[15] = if in_capsule { 0x01 } else { 0x5A };
    sqe
}

/// One test of a file at a time, for the files whose tests measure the process's memory
/// (another test's device would grow it) or share the two CPUs with a storm.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process's resident memory.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The value of metric `name` (a counter's `_total` or a gauge) in `dev`'s exposition.
pub fn metric(dev: &DeviceHandle, name: &str) -> u64 {
    dev.metrics_text()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no metric {name}"))
}

/// A connection to `addr` that sends 4 KiB of garbage (from the xorshift state `rng`).
pub fn garbage_socket(addr: &str, rng: &mut u64) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let junk: Vec<u8> = (0..4096)
        .map(|_| {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            *rng as u8
        })
        .collect();
    let _ = s.write_all(&junk);
    s
}

/// Reads PDUs from `q` until `completions` commands have completed: the data each got
/// (C2HData, by command id) and each completion.
pub async fn gather(
    q: &mut cerberus_host::nvme::NvmeQueue,
    completions: usize,
) -> (
    std::collections::HashMap<u16, bytes::Bytes>,
    std::collections::HashMap<u16, cerberus_host::proto::nvme::Cqe>,
) {
    use cerberus_host::proto::nvme::Pdu;
    let (mut data, mut done) = (
        std::collections::HashMap::new(),
        std::collections::HashMap::new(),
    );
    while done.len() < completions {
        match q.recv().await.expect("a PDU") {
            Pdu::C2HData { cccid, data: d, .. } => {
                data.insert(cccid, d);
            }
            Pdu::CapsuleResp { cqe } => {
                done.insert(cqe.cid, cqe);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    (data, done)
}
