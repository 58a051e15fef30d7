//! Asking a target's discovery controller (the well-known discovery NQN) which subsystems
//! this host may reach, and where: the discovery log page (70h), read in 1,024-byte
//! records and checked against its generation counter.

use super::connect::{connect_queue, enable};
use super::error::{ok, NvmeError, Result};
use super::queue::NvmeQueue;
use super::target::NvmeTarget;
use bytes::Bytes;
use cerberus_proto::nvme::{Sqe, DISCOVERY_NQN};

const GET_LOG_PAGE: u8 = 0x02;
const LOG_DISCOVERY: u8 = 0x70;
/// Bytes of the log's header and of each record.
const RECORD: u32 = 1024;
/// Most records read: a target saying more is refused rather than followed.
const MAX_RECORDS: u64 = 1024;
/// Reads of the whole log before giving up on a generation counter that keeps moving.
const ATTEMPTS: usize = 3;

/// One discovery log entry: a subsystem's port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryEntry {
    /// Transport type (3: TCP).
    pub trtype: u8,
    /// Address family (1: IPv4, 2: IPv6).
    pub adrfam: u8,
    /// Subsystem type (2: NVM subsystem).
    pub subtype: u8,
    /// Transport requirements.
    pub treq: u8,
    /// Port id.
    pub portid: u16,
    /// Controller id (0xFFFF: the dynamic model, any controller).
    pub cntlid: u16,
    /// Admin queue entries the subsystem takes.
    pub asqsz: u16,
    /// The port, as ASCII text.
    pub trsvcid: String,
    /// The subsystem's NQN.
    pub subnqn: String,
    /// The address, as ASCII text.
    pub traddr: String,
}

/// The subsystems `t.addr`'s discovery controller lists for `t.hostnqn` (`t.subnqn` is
/// not used: the discovery controller has its own).
pub async fn discover(t: &NvmeTarget) -> Result<Vec<DiscoveryEntry>> {
    let (mut admin, _) = connect_queue(t, DISCOVERY_NQN, 0, 0xFFFF, 0).await?;
    enable(&mut admin).await?;
    for _ in 0..ATTEMPTS {
        let header = log(&mut admin, 0, RECORD).await?;
        let generation = u64_at(&header, 0);
        let records = u64_at(&header, 8);
        if records > MAX_RECORDS {
            return Err(NvmeError::Unexpected(format!(
                "{records} discovery records"
            )));
        }
        let mut entries = Vec::with_capacity(records as usize);
        for i in 0..records {
            let e = log(&mut admin, (i + 1) * u64::from(RECORD), RECORD).await?;
            entries.push(entry(&e));
        }
        // Unchanged while we read: the records belong together.
        if u64_at(&log(&mut admin, 0, 16).await?, 0) == generation {
            return Ok(entries);
        }
    }
    Err(NvmeError::Unexpected(
        "the discovery log kept changing".into(),
    ))
}

/// `len` bytes (a multiple of 4) of the discovery log from byte `offset`.
async fn log(q: &mut NvmeQueue, offset: u64, len: u32) -> Result<Bytes> {
    let numd = len / 4 - 1;
    let mut sqe = Sqe {
        opcode: GET_LOG_PAGE,
        ..Sqe::default()
    };
    sqe.cdw[0] = u32::from(LOG_DISCOVERY) | (numd & 0xFFFF) << 16;
    sqe.cdw[1] = numd >> 16;
    sqe.cdw[2] = offset as u32;
    sqe.cdw[3] = (offset >> 32) as u32;
    let (_, data) = ok(q.command(sqe, Bytes::new(), true, len).await?)?;
    if data.len() != len as usize {
        return Err(NvmeError::Unexpected("short discovery log data".into()));
    }
    Ok(data)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// A text field: up to its first NUL, trailing spaces dropped.
fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim_end().to_string()
}

/// One 1,024-byte record.
fn entry(e: &[u8]) -> DiscoveryEntry {
    DiscoveryEntry {
        trtype: e[0],
        adrfam: e[1],
        subtype: e[2],
        treq: e[3],
        portid: u16_at(e, 4),
        cntlid: u16_at(e, 6),
        asqsz: u16_at(e, 8),
        trsvcid: text(&e[32..64]),
        subnqn: text(&e[256..512]),
        traddr: text(&e[512..768]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_its_fields() {
        let mut e = vec![0u8; 1024];
        e[..4].copy_from_slice(&[3, 1, 2, 2]);
        e[4..10].copy_from_slice(&[1, 0, 0xFF, 0xFF, 0x80, 0]);
        e[32..64].fill(b' ');
        e[32..36].copy_from_slice(b"4420");
        e[256..260].copy_from_slice(b"nqn.");
        e[512..768].fill(b' ');
        e[512..521].copy_from_slice(b"127.0.0.1");
        let d = entry(&e);
        assert_eq!((d.trtype, d.adrfam, d.subtype, d.treq), (3, 1, 2, 2));
        assert_eq!((d.portid, d.cntlid, d.asqsz), (1, 0xFFFF, 128));
        assert_eq!((d.trsvcid.as_str(), d.subnqn.as_str()), ("4420", "nqn."));
        assert_eq!(d.traddr, "127.0.0.1");
    }
}
