//! An NVMe/TCP initiator for the device's NVMe/TCP target (`docs/nvme-tcp.md`): an admin
//! queue and one I/O queue, each on its own connection, the controller enabled as a host
//! driver does (Connect, in-band authentication when the target asks for it: `auth`, CAP/VS,
//! CC.EN, CSTS.RDY), Identify, and the KV command set's
//! Store, Retrieve, Exist, Delete and List, one at a time or pipelined (`pipeline`); the
//! discovery controller's log (`discover`); keep-alives; and the device's vendor pair (one
//! native command through Submit and Fetch). A queue is opened and its controller brought up
//! in `connect`; `target` says who connects where, `error` why a call failed.

mod auth;
mod connect;
mod discover;
mod error;
mod queue;
mod target;
mod vendor;

pub use discover::{discover, DiscoveryEntry};
pub use error::{NvmeError, Result};
pub(crate) use queue::{data_pointer, kv_capsule, MAX_PDU_DATA};
pub use queue::{NvmeQueue, QUEUE_ENTRIES};
pub use target::NvmeTarget;
pub use vendor::VendorReply;

use bytes::Bytes;
use cerberus_proto::nvme::{kv_status, property, Cqe, KvCommand, KvKey, KvOpcode, Sqe};
use connect::{connect_queue, enable, property_get, property_set, wait_csts};
use error::ok;

const IDENTIFY: u8 = 0x06;
const KEEP_ALIVE: u8 = 0x18;

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
        NvmeHost::connect_with_kato(t, 0).await
    }

    /// As [`NvmeHost::connect`], asking for a keep-alive timeout of `kato_ms` (0: none):
    /// the target drops the controller and its queues if the admin queue hears nothing
    /// that long (call [`NvmeHost::keep_alive`] more often).
    pub async fn connect_with_kato(t: &NvmeTarget, kato_ms: u32) -> Result<NvmeHost> {
        let (mut admin, cntlid) = connect_queue(t, &t.subnqn, 0, 0xFFFF, kato_ms).await?;
        enable(&mut admin).await?;
        let ctrl = identify(&mut admin, 0x01, 0, 0).await?;
        let ioccsz = u32::from_le_bytes([ctrl[1792], ctrl[1793], ctrl[1794], ctrl[1795]]);
        let (io, _) = connect_queue(t, &t.subnqn, 1, cntlid, 0).await?;
        Ok(NvmeHost {
            admin,
            io,
            cntlid,
            in_capsule: ioccsz.saturating_mul(16).saturating_sub(64),
        })
    }

    /// Connects one more I/O queue, `qid`, of controller `cntlid` of this host (and
    /// authenticates it when the target asks).
    pub async fn connect_io_queue(t: &NvmeTarget, qid: u16, cntlid: u16) -> Result<NvmeQueue> {
        Ok(connect_queue(t, &t.subnqn, qid, cntlid, 0).await?.0)
    }

    /// Sends a Keep Alive on the admin queue.
    pub async fn keep_alive(&mut self) -> Result<()> {
        let sqe = Sqe {
            opcode: KEEP_ALIVE,
            ..Sqe::default()
        };
        self.admin_command(sqe, 0).await.map(|_| ())
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

    /// A KV command's entry, its buffer size and whether `value` goes in the capsule.
    fn kv_sqe(&self, nsid: u32, cmd: &KvCommand, value: &Bytes) -> (Sqe, u32, bool) {
        let mut sqe = Sqe {
            nsid,
            ..Sqe::default()
        };
        cmd.encode(&mut sqe);
        (sqe, cmd.size, value.len() <= self.in_capsule as usize)
    }

    async fn kv(&mut self, nsid: u32, cmd: KvCommand, value: Bytes) -> Result<(Cqe, Bytes)> {
        let (sqe, buffer, in_capsule) = self.kv_sqe(nsid, &cmd, &value);
        ok(self.io.command(sqe, value, in_capsule, buffer).await?)
    }

    /// Runs KV commands (each with its value, empty but for Stores) with up to `depth` in
    /// flight on the I/O queue (at most the queue's entries less one); their completions
    /// and data in the order of `cmds`, however the target ordered them.
    pub async fn pipeline(
        &mut self,
        nsid: u32,
        cmds: Vec<(KvCommand, Bytes)>,
        depth: usize,
    ) -> Result<Vec<(Cqe, Bytes)>> {
        let depth = depth.clamp(1, usize::from(QUEUE_ENTRIES - 1));
        let n = cmds.len();
        let mut slots: Vec<Option<(Cqe, Bytes)>> = vec![None; n];
        let mut by_cid = std::collections::HashMap::new();
        let mut cmds = cmds.into_iter().enumerate();
        let mut in_flight = 0;
        loop {
            while in_flight < depth {
                let Some((i, (cmd, value))) = cmds.next() else {
                    break;
                };
                let (sqe, buffer, in_capsule) = self.kv_sqe(nsid, &cmd, &value);
                let cid = self.io.submit(sqe, value, in_capsule, buffer).await?;
                by_cid.insert(cid, i);
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            let (cqe, data) = self.io.complete().await?;
            in_flight -= 1;
            match by_cid.remove(&cqe.cid) {
                Some(i) => slots[i] = Some((cqe, data)),
                None => return Err(NvmeError::Unexpected("completion of no command".into())),
            }
        }
        slots
            .into_iter()
            .map(|s| s.ok_or_else(|| NvmeError::Unexpected("a command went unanswered".into())))
            .collect()
    }

    /// Stores `value` under `key` (`options`: 0, or the only-if flags).
    pub async fn store(&mut self, nsid: u32, key: &[u8], value: &[u8], options: u8) -> Result<()> {
        let cmd = KvCommand {
            opcode: KvOpcode::Store,
            key: kv_key(key)?,
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
            key: kv_key(key)?,
            size: buffer,
            options: 0,
        };
        absent_is_none(self.kv(nsid, cmd, Bytes::new()).await).map(|r| r.map(|(c, d)| (d, c.dw0)))
    }

    /// Whether `key` exists.
    pub async fn exist(&mut self, nsid: u32, key: &[u8]) -> Result<bool> {
        let cmd = key_only(KvOpcode::Exist, key)?;
        Ok(absent_is_none(self.kv(nsid, cmd, Bytes::new()).await)?.is_some())
    }

    /// Deletes `key`; false if it did not exist.
    pub async fn delete(&mut self, nsid: u32, key: &[u8]) -> Result<bool> {
        let cmd = key_only(KvOpcode::Delete, key)?;
        Ok(absent_is_none(self.kv(nsid, cmd, Bytes::new()).await)?.is_some())
    }

    /// Keys from `start` on, as many as fit in `buffer` bytes of the List format.
    pub async fn list(&mut self, nsid: u32, start: &[u8], buffer: u32) -> Result<Vec<Vec<u8>>> {
        let cmd = KvCommand {
            opcode: KvOpcode::List,
            key: KvKey::new(start).ok_or(NvmeError::KeyLength(start.len()))?,
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

fn key_only(opcode: KvOpcode, key: &[u8]) -> Result<KvCommand> {
    Ok(KvCommand {
        opcode,
        key: kv_key(key)?,
        size: 0,
        options: 0,
    })
}

/// `key` as a KV command carries it: 1 to 16 bytes, never cut.
fn kv_key(key: &[u8]) -> Result<KvKey> {
    KvKey::new(key)
        .filter(|k| !k.is_empty())
        .ok_or(NvmeError::KeyLength(key.len()))
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
