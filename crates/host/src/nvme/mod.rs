//! An NVMe/TCP initiator for the device's NVMe/TCP target (`docs/nvme-tcp.md`): an admin
//! queue and one I/O queue, each on its own connection, the controller enabled as a host
//! driver does (Connect, CAP/VS, CC.EN, CSTS.RDY), Identify, and the KV command set's
//! Store, Retrieve, Exist, Delete and List, and the device's vendor pair (one native
//! command through Submit and Fetch). One command at a time per queue.

mod queue;
mod vendor;

pub use queue::NvmeQueue;
pub use vendor::VendorReply;

use bytes::Bytes;
use cerberus_proto::nvme::{
    connect_data, kv_status, property, Cqe, Digests, KvCommand, KvOpcode, NvmeStatus, NvmeTcpError,
    Sqe, FABRICS_OPCODE,
};

/// `Result` with [`NvmeError`].
pub type Result<T> = std::result::Result<T, NvmeError>;

/// Why an NVMe/TCP call failed.
#[derive(Debug, thiserror::Error)]
pub enum NvmeError {
    /// Connecting, reading or writing the socket failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The target's bytes break the transport's rules.
    #[error("bad PDU from the target: {0}")]
    Pdu(#[from] NvmeTcpError),
    /// The target ended the connection with a C2HTermReq.
    #[error("the target terminated the connection (FES {fes:#x}, FEI {fei})")]
    Terminated {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information.
        fei: u32,
    },
    /// The target closed the connection.
    #[error("connection closed")]
    Closed,
    /// A PDU this host did not expect now.
    #[error("unexpected PDU: {0}")]
    Unexpected(String),
    /// The command completed with a failure status.
    #[error("command failed: status type {}, code {:#x}", .0.sct, .0.sc)]
    Status(NvmeStatus),
    /// The controller did not become ready (or finish its shutdown) in time.
    #[error("controller not ready")]
    NotReady,
}

/// Who connects, and where.
#[derive(Clone, Debug)]
pub struct NvmeTarget {
    /// `host:port` of the target.
    pub addr: String,
    /// The subsystem's NQN.
    pub subnqn: String,
    /// This host's NQN (what the device's grants name).
    pub hostnqn: String,
    /// Header and data digests to ask for.
    pub digests: Digests,
}

const IDENTIFY: u8 = 0x06;

/// A connected controller: its admin queue and one I/O queue.
pub struct NvmeHost {
    /// The admin queue.
    pub admin: NvmeQueue,
    /// The I/O queue (qid 1).
    pub io: NvmeQueue,
    /// The controller id the admin Connect returned.
    pub cntlid: u16,
    /// Bytes of data a command capsule may carry on I/O queues (from IOCCSZ).
    pub in_capsule: u32,
}

fn fabrics(fctype: u8, cdw10: u32, cdw11: u32, cdw12: u32) -> Sqe {
    let mut sqe = Sqe {
        opcode: FABRICS_OPCODE,
        nsid: u32::from(fctype),
        ..Sqe::default()
    };
    sqe.cdw[0] = cdw10;
    sqe.cdw[1] = cdw11;
    sqe.cdw[2] = cdw12;
    sqe
}

/// The completion, or its failure status as an error.
fn ok(r: (Cqe, Bytes)) -> Result<(Cqe, Bytes)> {
    if r.0.status.is_success() {
        Ok(r)
    } else {
        Err(NvmeError::Status(r.0.status))
    }
}

/// Opens a queue of `target` and connects it (`qid` 0: a new controller).
async fn connect_queue(t: &NvmeTarget, qid: u16, cntlid: u16) -> Result<(NvmeQueue, u16)> {
    let mut q = NvmeQueue::open(&t.addr, t.digests).await?;
    let data = connect_data([7; 16], cntlid, &t.subnqn, &t.hostnqn);
    // SQSIZE 31 (32 entries), KATO 0.
    let sqe = fabrics(0x01, u32::from(qid) << 16, 31, 0);
    let (cqe, _) = ok(q.command(sqe, Bytes::from(data), true, 0).await?)?;
    Ok((q, cqe.dw0 as u16))
}

/// Reads a controller register (CAP, VS, CC, CSTS) on an admin queue.
async fn property_get(q: &mut NvmeQueue, offset: u32) -> Result<u64> {
    let eight = u32::from(offset == property::CAP);
    let sqe = fabrics(0x04, eight, offset, 0);
    let (cqe, _) = ok(q.command(sqe, Bytes::new(), true, 0).await?)?;
    Ok(u64::from(cqe.dw0) | u64::from(cqe.dw1) << 32)
}

/// Writes a 4-byte controller register on an admin queue.
async fn property_set(q: &mut NvmeQueue, offset: u32, value: u32) -> Result<()> {
    let sqe = fabrics(0x00, 0, offset, value);
    ok(q.command(sqe, Bytes::new(), true, 0).await?)?;
    Ok(())
}

/// Waits (up to a second) for CSTS & `mask` == `want`.
async fn wait_csts(q: &mut NvmeQueue, mask: u64, want: u64) -> Result<()> {
    for _ in 0..100 {
        if property_get(q, property::CSTS).await? & mask == want {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Err(NvmeError::NotReady)
}

/// Identify with `cns` for `nsid` (and `csi` where the CNS takes one): 4,096 bytes.
async fn identify(q: &mut NvmeQueue, cns: u8, nsid: u32, csi: u8) -> Result<Bytes> {
    let mut sqe = Sqe {
        opcode: IDENTIFY,
        nsid,
        ..Sqe::default()
    };
    sqe.cdw[0] = u32::from(cns);
    sqe.cdw[1] = u32::from(csi) << 24;
    Ok(ok(q.command(sqe, Bytes::new(), true, 4096).await?)?.1)
}

impl NvmeHost {
    /// Connects the admin queue, enables the controller, reads its Identify data and
    /// connects the I/O queue.
    pub async fn connect(t: &NvmeTarget) -> Result<NvmeHost> {
        let (mut admin, cntlid) = connect_queue(t, 0, 0xFFFF).await?;
        property_get(&mut admin, property::VS).await?;
        property_get(&mut admin, property::CAP).await?;
        // EN, CSS 110b (all I/O command sets), IOSQES 6, IOCQES 4.
        property_set(&mut admin, property::CC, 1 | 0b110 << 4 | 6 << 16 | 4 << 20).await?;
        wait_csts(&mut admin, 0x1, 0x1).await?;
        let ctrl = identify(&mut admin, 0x01, 0, 0).await?;
        let ioccsz = u32::from_le_bytes([ctrl[1792], ctrl[1793], ctrl[1794], ctrl[1795]]);
        let (io, _) = connect_queue(t, 1, cntlid).await?;
        Ok(NvmeHost {
            admin,
            io,
            cntlid,
            in_capsule: ioccsz.saturating_mul(16).saturating_sub(64),
        })
    }

    /// Reads a controller register (CAP, VS, CC, CSTS).
    pub async fn property_get(&mut self, offset: u32) -> Result<u64> {
        property_get(&mut self.admin, offset).await
    }

    /// Writes a 4-byte controller register.
    pub async fn property_set(&mut self, offset: u32, value: u32) -> Result<()> {
        property_set(&mut self.admin, offset, value).await
    }

    /// An admin command as given; its completion and data.
    pub async fn admin_command(&mut self, sqe: Sqe, buffer: u32) -> Result<(Cqe, Bytes)> {
        ok(self.admin.command(sqe, Bytes::new(), true, buffer).await?)
    }

    /// Identify with `cns` for `nsid` (and `csi` where the CNS takes one): 4,096 bytes.
    pub async fn identify(&mut self, cns: u8, nsid: u32, csi: u8) -> Result<Bytes> {
        identify(&mut self.admin, cns, nsid, csi).await
    }

    /// The namespaces this host may use.
    pub async fn active_namespaces(&mut self) -> Result<Vec<u32>> {
        let list = self.identify(0x02, 0, 0).await?;
        Ok(list
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .take_while(|&n| n != 0)
            .collect())
    }

    async fn kv(&mut self, nsid: u32, cmd: KvCommand, value: Bytes) -> Result<(Cqe, Bytes)> {
        let mut sqe = Sqe {
            nsid,
            ..Sqe::default()
        };
        let buffer = cmd.size;
        cmd.encode(&mut sqe);
        let in_capsule = value.len() <= self.in_capsule as usize;
        ok(self.io.command(sqe, value, in_capsule, buffer).await?)
    }

    /// Stores `value` under `key` (`options`: 0, or the only-if flags).
    pub async fn store(&mut self, nsid: u32, key: &[u8], value: &[u8], options: u8) -> Result<()> {
        let cmd = KvCommand {
            opcode: KvOpcode::Store,
            key: key.to_vec(),
            size: value.len() as u32,
            options,
        };
        self.kv(nsid, cmd, Bytes::copy_from_slice(value)).await?;
        Ok(())
    }

    /// The value of `key` (its first `buffer` bytes) and its whole size; None if absent.
    pub async fn retrieve(
        &mut self,
        nsid: u32,
        key: &[u8],
        buffer: u32,
    ) -> Result<Option<(Bytes, u32)>> {
        let cmd = KvCommand {
            opcode: KvOpcode::Retrieve,
            key: key.to_vec(),
            size: buffer,
            options: 0,
        };
        absent_is_none(self.kv(nsid, cmd, Bytes::new()).await).map(|r| r.map(|(c, d)| (d, c.dw0)))
    }

    /// Whether `key` exists.
    pub async fn exist(&mut self, nsid: u32, key: &[u8]) -> Result<bool> {
        let cmd = key_only(KvOpcode::Exist, key);
        Ok(absent_is_none(self.kv(nsid, cmd, Bytes::new()).await)?.is_some())
    }

    /// Deletes `key`; false if it did not exist.
    pub async fn delete(&mut self, nsid: u32, key: &[u8]) -> Result<bool> {
        let cmd = key_only(KvOpcode::Delete, key);
        Ok(absent_is_none(self.kv(nsid, cmd, Bytes::new()).await)?.is_some())
    }

    /// Keys from `start` on, as many as fit in `buffer` bytes of the List format.
    pub async fn list(&mut self, nsid: u32, start: &[u8], buffer: u32) -> Result<Vec<Vec<u8>>> {
        let cmd = KvCommand {
            opcode: KvOpcode::List,
            key: start.to_vec(),
            size: buffer,
            options: 0,
        };
        let (_, data) = self.kv(nsid, cmd, Bytes::new()).await?;
        parse_list(&data)
    }

    /// Shuts the controller down (CC.SHN normal) and waits for CSTS.SHST complete.
    pub async fn shutdown(&mut self) -> Result<()> {
        let cc = self.property_get(property::CC).await? as u32;
        self.property_set(property::CC, cc | 0b01 << 14).await?;
        wait_csts(&mut self.admin, 0b11 << 2, 0b10 << 2).await
    }
}

fn key_only(opcode: KvOpcode, key: &[u8]) -> KvCommand {
    KvCommand {
        opcode,
        key: key.to_vec(),
        size: 0,
        options: 0,
    }
}

/// "Key does not exist" as None.
fn absent_is_none<T>(r: Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(NvmeError::Status(s)) if s == kv_status::key_does_not_exist() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The KV List data: a count, then (length, key) entries padded to 4 bytes.
fn parse_list(d: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = || NvmeError::Unexpected("malformed List data".into());
    let n = u32::from_le_bytes(d.get(..4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let (mut at, mut keys) = (4usize, Vec::new());
    for _ in 0..n {
        let l = d.get(at..at + 2).ok_or_else(bad)?;
        let len = usize::from(u16::from_le_bytes([l[0], l[1]]));
        keys.push(d.get(at + 2..at + 2 + len).ok_or_else(bad)?.to_vec());
        at += (2 + len).next_multiple_of(4);
    }
    Ok(keys)
}
