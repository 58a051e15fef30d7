//! One NVMe/TCP queue's connection as a host drives it: the ICReq/ICResp exchange, then
//! commands, one at a time (`command`) or several in flight (`submit`, then `complete`):
//! capsules out, R2Ts answered with H2CData, C2HData gathered by command id, completions
//! back in whatever order the target sends them.

use super::error::{NvmeError, Result};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{split_pdu, Cqe, Digests, Pdu, PduLimits, Sqe, PFV_1_0};
use std::collections::{HashMap, VecDeque};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Entries of each queue this host opens (SQSIZE is one less).
pub const QUEUE_ENTRIES: u16 = 32;

/// Most bytes of data one PDU from the target may carry before this host refuses it.
pub(crate) const MAX_PDU_DATA: u32 = 64 << 20;

/// A queue's connection.
pub struct NvmeQueue {
    sock: TcpStream,
    buf: BytesMut,
    pub(super) digests: Digests,
    maxh2cdata: u32,
    next_cid: u16,
    /// Commands sent and not answered, by command id.
    outstanding: HashMap<u16, Outstanding>,
    /// Completions that arrived while `command` waited for another.
    finished: VecDeque<(Cqe, Bytes)>,
    /// PDUs queued (`queue_kv`) and not yet written: the next `send` or `flush` writes them.
    out: BytesMut,
}

/// A command sent: its data (for the target's R2Ts) and the data the target sent so far.
struct Outstanding {
    data: Bytes,
    got: BytesMut,
    /// Most bytes the target may send for it.
    limit: usize,
}

impl NvmeQueue {
    /// Connects to `addr` and exchanges ICReq/ICResp asking for `digests`.
    pub async fn open(addr: &str, digests: Digests) -> Result<NvmeQueue> {
        let sock = TcpStream::connect(addr).await?;
        sock.set_nodelay(true)?;
        let mut q = NvmeQueue {
            sock,
            buf: BytesMut::with_capacity(8192),
            digests: Digests::default(),
            maxh2cdata: 0,
            next_cid: 0,
            outstanding: HashMap::new(),
            finished: VecDeque::new(),
            out: BytesMut::new(),
        };
        q.send(&Pdu::IcReq {
            pfv: PFV_1_0,
            hpda: 0,
            digests,
            maxr2t: 0,
        })
        .await?;
        match q.recv().await? {
            Pdu::IcResp {
                pfv: PFV_1_0,
                digests: d,
                maxh2cdata,
                ..
            } if d == digests && maxh2cdata >= 4096 => {
                q.digests = digests;
                q.maxh2cdata = maxh2cdata;
                Ok(q)
            }
            other => Err(NvmeError::Unexpected(format!("{:?}", other.pdu_type()))),
        }
    }

    /// The digests the queue negotiated.
    pub fn digests(&self) -> Digests {
        self.digests
    }

    /// Most bytes of data one H2CData PDU may carry on this queue (the target's MAXH2CDATA).
    pub fn maxh2cdata(&self) -> u32 {
        self.maxh2cdata
    }

    /// The queue's socket as a blocking std one (for a driver on the callers' threads),
    /// with the bytes read and not yet taken as PDUs; commands still outstanding are
    /// forgotten.
    pub fn into_std(self) -> Result<(std::net::TcpStream, BytesMut)> {
        let sock = self.sock.into_std()?;
        sock.set_nonblocking(false)?;
        Ok((sock, self.buf))
    }

    /// Sends one PDU as it is, after any queued before it (tests send bad ones through
    /// `send_raw`).
    pub async fn send(&mut self, pdu: &Pdu) -> Result<()> {
        pdu.encode(self.digests, &mut self.out);
        self.flush().await
    }

    /// Writes the PDUs queued so far.
    pub async fn flush(&mut self) -> Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let written = self.sock.write_all(&self.out).await;
        self.out.clear();
        Ok(written?)
    }

    /// Sends bytes as they are.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.sock.write_all(bytes).await?;
        Ok(())
    }

    /// The next PDU from the target; a C2HTermReq is an error naming its FES.
    pub async fn recv(&mut self) -> Result<Pdu> {
        let limits = PduLimits::uniform(MAX_PDU_DATA);
        loop {
            if let Some(p) = split_pdu(&mut self.buf, self.digests, limits)? {
                if let Pdu::C2HTermReq { fes, fei, .. } = p {
                    return Err(NvmeError::Terminated { fes, fei });
                }
                return Ok(p);
            }
            if self.sock.read_buf(&mut self.buf).await? == 0 {
                return Err(NvmeError::Closed);
            }
        }
    }

    /// Runs one command: `data` in the capsule when `in_capsule`, else through the target's
    /// R2Ts; returns its completion and the data the target sent. Completions of commands
    /// submitted earlier that arrive meanwhile are kept for [`NvmeQueue::complete`].
    pub async fn command(
        &mut self,
        sqe: Sqe,
        data: Bytes,
        in_capsule: bool,
        buffer: u32,
    ) -> Result<(Cqe, Bytes)> {
        let cid = self.submit(sqe, data, in_capsule, buffer).await?;
        loop {
            if let Some(i) = self.finished.iter().position(|(c, _)| c.cid == cid) {
                if let Some(done) = self.finished.remove(i) {
                    return Ok(done);
                }
            }
            let done = self.next_completion().await?;
            self.finished.push_back(done);
        }
    }

    /// Sends one command without waiting for it (`cid` chosen here, unique among those
    /// outstanding); its answer comes from [`NvmeQueue::complete`], in any order.
    pub async fn submit(
        &mut self,
        mut sqe: Sqe,
        data: Bytes,
        in_capsule: bool,
        buffer: u32,
    ) -> Result<u16> {
        if self.outstanding.len() >= usize::from(u16::MAX) {
            return Err(NvmeError::Unexpected("every command id is taken".into()));
        }
        sqe.cid = self.take_cid();
        let len = if data.is_empty() {
            buffer
        } else {
            data.len() as u32
        };
        sqe.dptr = data_pointer(len, in_capsule && !data.is_empty());
        let capsule = if in_capsule {
            data.clone()
        } else {
            Bytes::new()
        };
        self.send(&Pdu::CapsuleCmd { sqe, data: capsule }).await?;
        let out = Outstanding {
            data,
            got: BytesMut::new(),
            limit: buffer.max(len) as usize,
        };
        self.outstanding.insert(sqe.cid, out);
        Ok(sqe.cid)
    }

    /// The next completion of any submitted command (those [`NvmeQueue::command`] kept
    /// first), answering R2Ts and gathering C2HData on the way.
    pub async fn complete(&mut self) -> Result<(Cqe, Bytes)> {
        if let Some(done) = self.finished.pop_front() {
            return Ok(done);
        }
        self.next_completion().await
    }

    /// Commands submitted and not yet answered.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len() + self.finished.len()
    }

    async fn next_completion(&mut self) -> Result<(Cqe, Bytes)> {
        loop {
            match self.recv().await? {
                Pdu::R2T {
                    cccid,
                    ttag,
                    r2to,
                    r2tl,
                } => {
                    let data = match self.outstanding.get(&cccid) {
                        Some(o) => o.data.clone(),
                        None => return Err(NvmeError::Unexpected("R2T of no command".into())),
                    };
                    self.write_data(&data, cccid, ttag, r2to, r2tl).await?
                }
                Pdu::C2HData {
                    cccid, datao, data, ..
                } => {
                    let o = self.outstanding.get_mut(&cccid);
                    // In order, within the buffer the command gave.
                    match o {
                        Some(o)
                            if datao as usize == o.got.len()
                                && o.got.len() + data.len() <= o.limit =>
                        {
                            o.got.extend_from_slice(&data)
                        }
                        _ => return Err(NvmeError::Unexpected("stray C2HData".into())),
                    }
                }
                Pdu::CapsuleResp { cqe } => match self.outstanding.remove(&cqe.cid) {
                    Some(o) => return Ok((cqe, o.got.freeze())),
                    None => return Err(NvmeError::Unexpected("completion of no command".into())),
                },
                other => return Err(NvmeError::Unexpected(format!("{:?}", other.pdu_type()))),
            }
        }
    }

    /// A command id for the next command, none of those outstanding.
    pub(super) fn take_cid(&mut self) -> u16 {
        while self.outstanding.contains_key(&self.next_cid) {
            self.next_cid = self.next_cid.wrapping_add(1);
        }
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        cid
    }

    /// Queues a KV command, its value (a Store's) in the capsule, for the next `send` or
    /// `flush` to write: the caller sends only values of at most the queue's in-capsule
    /// size, and gathers the command's PDUs itself. Its command id.
    pub fn queue_kv(
        &mut self,
        nsid: u32,
        cmd: &cerberus_proto::nvme::KvCommand,
        value: Bytes,
    ) -> u16 {
        let cid = self.take_cid();
        kv_capsule(nsid, cid, cmd, value).encode(self.digests, &mut self.out);
        cid
    }

    /// Answers an R2T: the bytes it asks for, in H2CData PDUs of at most MAXH2CDATA.
    pub async fn write_data(
        &mut self,
        data: &Bytes,
        cccid: u16,
        ttag: u16,
        r2to: u32,
        r2tl: u32,
    ) -> Result<()> {
        let (start, end) = (r2to as usize, r2to as usize + r2tl as usize);
        if end > data.len() {
            return Err(NvmeError::Unexpected("R2T past the data".into()));
        }
        let mut at = start;
        while at < end {
            let n = (end - at).min(self.maxh2cdata as usize);
            self.send(&Pdu::H2CData {
                cccid,
                ttag,
                datao: at as u32,
                last: at + n == end,
                data: data.slice(at..at + n),
            })
            .await?;
            at += n;
        }
        Ok(())
    }
}

/// A transport SGL data block of `len` bytes: the length at bytes 8-11, type 5, subtype 0xA
/// (in-capsule data: a data block with offset, type 0, subtype 1).
/// The capsule of KV command `cmd` with command id `cid`: its value (a Store's) in the
/// capsule, else a buffer of the command's size for the target to send into.
pub(crate) fn kv_capsule(
    nsid: u32,
    cid: u16,
    cmd: &cerberus_proto::nvme::KvCommand,
    value: Bytes,
) -> Pdu {
    let mut sqe = Sqe {
        nsid,
        cid,
        ..Sqe::default()
    };
    cmd.encode(&mut sqe);
    let len = match value.is_empty() {
        true => cmd.size,
        false => value.len() as u32,
    };
    sqe.dptr = data_pointer(len, !value.is_empty());
    Pdu::CapsuleCmd { sqe, data: value }
}

pub(crate) fn data_pointer(len: u32, in_capsule: bool) -> [u8; 16] {
    let mut d = [0; 16];
    d[8..12].copy_from_slice(&len.to_le_bytes());
    d[15] = if in_capsule { 0x01 } else { 0x5A };
    d
}
