//! One NVMe/TCP connection (one queue): the ICReq/ICResp exchange within its deadline, then
//! command capsules answered in order, Store data fetched through R2T/H2CData, and any PDU
//! that breaks the transport's rules answered with a C2HTermReq before this connection (and
//! no other) closes.

use super::controllers::Controller;
use super::{Answer, Target};
use crate::iterators::ConnIterators;
use crate::stop::stopped;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    split_pdu, Cqe, Digests, NvmeStatus, NvmeTcpError, Pdu, PduLimits, Sqe, PFV_1_0,
};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Fatal error statuses of a C2HTermReq this module raises itself.
const FES_SEQUENCE: u16 = 0x02;
const FES_OUT_OF_RANGE: u16 = 0x04;
const FES_UNSUPPORTED: u16 = 0x06;

/// Why a connection ends.
pub(super) enum End {
    /// The host closed, went quiet past a deadline, or the device stops.
    Quiet,
    /// The host broke the transport's rules: answered with a C2HTermReq, then closed.
    Term(u16, u32),
}

/// The queue a Connect opened on this connection.
pub(super) struct Queue {
    pub qid: u16,
    pub cntlid: u16,
    pub ctrl: Arc<Mutex<Controller>>,
    /// The namespaces its host may use, found again when a command names another.
    pub visible: Vec<u32>,
    pub sqsize: u16,
    pub sqhd: u16,
}

/// A Store whose value comes through R2T and H2CData.
struct Pending {
    sqe: Sqe,
    ttag: u16,
    size: usize,
    value: BytesMut,
}

pub(super) struct Conn {
    sock: TcpStream,
    buf: BytesMut,
    digests: Digests,
    limits: PduLimits,
    pub target: Arc<Target>,
    pub queue: Option<Queue>,
    pub iters: Arc<ConnIterators>,
    pub vendor: super::vendor::VendorState,
    pending: Option<Pending>,
    /// Capsules that arrived while a Store waited for its data.
    backlog: VecDeque<(Sqe, Bytes)>,
    next_ttag: u16,
    stop: watch::Receiver<bool>,
}

/// Serves one accepted connection until it ends.
pub(super) async fn serve(sock: TcpStream, target: Arc<Target>, stop: watch::Receiver<bool>) {
    let idle = Duration::from_secs(target.shared.config.iterator_idle_secs.into());
    let mut c = Conn {
        sock,
        buf: BytesMut::with_capacity(8192),
        digests: Digests::default(),
        limits: PduLimits { max_data: 0 },
        iters: Arc::new(ConnIterators::new(1, idle)),
        target,
        queue: None,
        vendor: Default::default(),
        pending: None,
        backlog: VecDeque::new(),
        next_ttag: 0,
        stop,
    };
    let end = match c.handshake().await {
        Ok(()) => c.run().await.err(),
        Err(e) => Some(e),
    };
    if let Some(End::Term(fes, fei)) = end {
        c.target.shared.metrics.protocol_errors.inc();
        tracing::debug!(fes, fei, "NVMe/TCP: terminating a connection");
        let term = Pdu::C2HTermReq {
            fes,
            fei,
            data: Bytes::new(),
        };
        let _ = c.send(&[term]).await;
    }
    let _ = c.sock.shutdown().await;
    if let Some(q) = &c.queue {
        if q.qid == 0 {
            c.target.controllers.remove(q.cntlid);
        }
    }
}

impl Conn {
    /// Reads the next PDU, waiting at most `wait` for its first bytes and `frame_timeout_ms`
    /// for each of the rest (a slow sender does not hold its connection open).
    async fn next_pdu(&mut self, idle: Duration) -> Result<Pdu, End> {
        let piece = Duration::from_millis(self.target.shared.config.frame_timeout_ms);
        loop {
            let wait = if self.buf.is_empty() {
                idle
            } else {
                idle.min(piece)
            };
            match split_pdu(&mut self.buf, self.digests, self.limits) {
                Ok(Some(p)) => return Ok(p),
                Ok(None) => {}
                Err(e) => return Err(term(&e)),
            }
            self.buf.reserve(16 << 10);
            let read = tokio::time::timeout(wait, self.sock.read_buf(&mut self.buf));
            let n = tokio::select! {
                r = read => r,
                _ = stopped(&mut self.stop) => return Err(End::Quiet),
            };
            match n {
                Ok(Ok(0)) | Ok(Err(_)) => return Err(End::Quiet),
                Ok(Ok(_)) => {}
                Err(_) => {
                    self.target.shared.metrics.idle_timeouts.inc();
                    return Err(End::Quiet);
                }
            }
        }
    }

    async fn send(&mut self, pdus: &[Pdu]) -> std::io::Result<()> {
        let mut out = BytesMut::new();
        for p in pdus {
            p.encode(self.digests, &mut out);
        }
        let write = self.sock.write_all(&out);
        let limit = Duration::from_millis(self.target.shared.config.write_timeout_ms);
        match tokio::time::timeout(limit, write).await {
            Ok(r) => r,
            Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
        }
    }

    /// ICReq within the deadline, answered with the digests the host asked for.
    async fn handshake(&mut self) -> Result<(), End> {
        let cfg = &self.target.config;
        let wait = Duration::from_millis(cfg.icreq_timeout_ms);
        let maxh2cdata = cfg.max_h2c_data;
        let max_data = cfg.max_pdu_data();
        let deadline = tokio::time::Instant::now() + wait;
        let pdu = tokio::time::timeout_at(deadline, self.next_pdu(wait))
            .await
            .map_err(|_| End::Quiet)??;
        let Pdu::IcReq { pfv, digests, .. } = pdu else {
            return Err(End::Term(FES_SEQUENCE, 0));
        };
        if pfv != PFV_1_0 {
            return Err(End::Term(FES_UNSUPPORTED, 8));
        }
        let resp = Pdu::IcResp {
            pfv: PFV_1_0,
            cpda: 0,
            digests,
            maxh2cdata,
        };
        self.send(&[resp]).await.map_err(|_| End::Quiet)?;
        self.digests = digests;
        self.limits = PduLimits { max_data };
        Ok(())
    }

    async fn run(&mut self) -> Result<(), End> {
        let idle = match self.target.config.idle_timeout_secs {
            0 => Duration::from_secs(u64::from(u32::MAX)),
            s => Duration::from_secs(s),
        };
        loop {
            let pdu = self.next_pdu(idle).await?;
            match pdu {
                Pdu::CapsuleCmd { sqe, data } => {
                    if self.pending.is_some() {
                        // No more outstanding than the queue holds: else a host that
                        // never sends a Store's data could grow this without end.
                        let depth = self.queue.as_ref().map_or(1, |q| q.sqsize);
                        if self.backlog.len() >= usize::from(depth) {
                            return Err(End::Term(FES_SEQUENCE, 0));
                        }
                        self.backlog.push_back((sqe, data));
                    } else {
                        self.capsule(sqe, data).await?;
                    }
                }
                Pdu::H2CData {
                    cccid,
                    ttag,
                    datao,
                    last,
                    data,
                } => self.h2c_data(cccid, ttag, datao, last, data).await?,
                Pdu::H2CTermReq { .. } => return Err(End::Quiet),
                _ => return Err(End::Term(FES_SEQUENCE, 0)),
            }
        }
    }

    /// Carries out one command capsule and answers it (a Store without its data asks for it).
    async fn capsule(&mut self, sqe: Sqe, data: Bytes) -> Result<(), End> {
        if self.wants_data(&sqe, &data) {
            let size = sqe.cdw(10) as usize;
            let ttag = self.next_ttag;
            self.next_ttag = self.next_ttag.wrapping_add(1);
            self.pending = Some(Pending {
                sqe,
                ttag,
                size,
                value: BytesMut::with_capacity(size),
            });
            let r2t = Pdu::R2T {
                cccid: sqe.cid,
                ttag,
                r2to: 0,
                r2tl: size as u32,
            };
            return self.send(&[r2t]).await.map_err(|_| End::Quiet);
        }
        let answer = self.command(sqe, data).await;
        self.answer(&sqe, answer).await
    }

    /// A KV Store of a value that fits the device, or a vendor Submit of a frame it reads,
    /// whose data is not in its capsule.
    fn wants_data(&self, sqe: &Sqe, data: &Bytes) -> bool {
        let io = self.queue.as_ref().is_some_and(|q| q.qid != 0);
        let size = sqe.cdw(10);
        let max_body = self.target.shared.config.max_frame_body();
        if io && data.is_empty() && super::vendor::wants_data(sqe, max_body) {
            return true;
        }
        io && sqe.opcode == cerberus_proto::nvme::KvOpcode::Store as u8
            && data.is_empty()
            && size > 0
            && size <= self.target.shared.config.max_value_len
    }

    async fn h2c_data(
        &mut self,
        cccid: u16,
        ttag: u16,
        datao: u32,
        last: bool,
        data: Bytes,
    ) -> Result<(), End> {
        let Some(p) = self.pending.as_mut() else {
            return Err(End::Term(FES_SEQUENCE, 0));
        };
        if p.sqe.cid != cccid || p.ttag != ttag {
            return Err(End::Term(FES_SEQUENCE, 0));
        }
        // In order, within what the R2T asked for.
        if datao as usize != p.value.len() || p.value.len() + data.len() > p.size {
            return Err(End::Term(FES_OUT_OF_RANGE, 0));
        }
        p.value.extend_from_slice(&data);
        if p.value.len() < p.size {
            if last {
                return Err(End::Term(FES_OUT_OF_RANGE, 0));
            }
            return Ok(());
        }
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let answer = self.command(p.sqe, p.value.freeze()).await;
        self.answer(&p.sqe, answer).await?;
        while self.pending.is_none() {
            let Some((sqe, data)) = self.backlog.pop_front() else {
                break;
            };
            Box::pin(self.capsule(sqe, data)).await?;
        }
        Ok(())
    }

    /// Routes a capsule: Fabrics commands, then the admin or I/O queue's.
    async fn command(&mut self, sqe: Sqe, data: Bytes) -> Answer {
        if sqe.opcode == cerberus_proto::nvme::FABRICS_OPCODE {
            return self.fabrics(&sqe, &data);
        }
        match &self.queue {
            // Nothing but a Connect before the queue is open.
            None => Answer::status(NvmeStatus::error(0, 0x0C)),
            Some(q) if q.qid == 0 => self.admin(&sqe, &data),
            Some(_) => self.io(&sqe, data).await,
        }
    }

    /// Sends an answer: data first (cut to the host's buffer), then the completion.
    async fn answer(&mut self, sqe: &Sqe, answer: Answer) -> Result<(), End> {
        let Answer::Done {
            status,
            dw0,
            dw1,
            data,
        } = answer
        else {
            return Ok(()); // held (an Async Event Request)
        };
        let mut pdus = Vec::with_capacity(2);
        if let Some(mut d) = data {
            d.truncate(sgl_len(sqe));
            if status.is_success() && !d.is_empty() {
                pdus.push(Pdu::C2HData {
                    cccid: sqe.cid,
                    datao: 0,
                    last: true,
                    success: false,
                    data: Bytes::from(d),
                });
            }
        }
        let (sqid, sqhd) = match self.queue.as_mut() {
            Some(q) => {
                q.sqhd = (q.sqhd + 1) % q.sqsize.max(1);
                (q.qid, q.sqhd)
            }
            None => (0, 0),
        };
        pdus.push(Pdu::CapsuleResp {
            cqe: Cqe {
                dw0,
                dw1,
                sqhd,
                sqid,
                cid: sqe.cid,
                status,
            },
        });
        self.send(&pdus).await.map_err(|_| End::Quiet)
    }
}

/// The length of the host's buffer its data pointer names (an SGL descriptor: length in
/// bytes 8-11).
pub(super) fn sgl_len(sqe: &Sqe) -> usize {
    let d = &sqe.dptr;
    u32::from_le_bytes([d[8], d[9], d[10], d[11]]) as usize
}

fn term(e: &NvmeTcpError) -> End {
    let (fes, fei) = e.fes_fei();
    End::Term(fes, fei)
}
