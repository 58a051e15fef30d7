//! One NVMe/TCP connection (one queue): the ICReq/ICResp exchange within its deadline, then
//! command capsules: admin ones answered in order, I/O ones run several at once (`flight`:
//! on this network thread where the native port would, else on workers) and answered as
//! they complete (the answers to what is at hand written together), Store data fetched
//! through R2T/H2CData; the admin queue's keep-alive timer; any PDU that breaks the
//! transport's rules answered with a C2HTermReq before this connection (and no other)
//! closes.

use super::answer::Answer;
use super::controllers::Controller;
use super::flight::{Done, Flight};
use super::target::Target;
use super::waiting::{went, Waiting};
use crate::admission::Ticket;
use crate::deadlines::Deadlines;
use crate::iterators::ConnIterators;
use crate::placed::Placed;
use crate::put_batch::HeldPuts;
use crate::stop::stopped;
use crate::turns::TurnCount;
use bytes::{Bytes, BytesMut};
use cerberus_engine::WritePressure;
use cerberus_proto::nvme::{
    split_pdu, Cqe, Digests, NvmeStatus, NvmeTcpError, Pdu, PduLimits, Sqe, PFV_1_0,
};
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Bytes of queued PDUs past which they are written at once.
const FLUSH_AT: usize = 256 << 10;

/// Fatal error statuses of a C2HTermReq this module raises itself.
pub(super) const FES_SEQUENCE: u16 = 0x02;
pub(super) const FES_OUT_OF_RANGE: u16 = 0x04;
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
    /// Its host's authentication (`auth.rs`): commands wait for it.
    pub auth: super::queue_auth::QueueAuth,
    /// Its controller's I/O activity: an I/O queue marks it, the admin queue reads it.
    pub activity: Arc<super::controllers::Activity>,
    /// Its controller's traffic, for the SMART page.
    pub traffic: Arc<super::controllers::Traffic>,
    /// It holds the controller its Connect named: at once for a host with nothing to
    /// prove, once proven for one that must authenticate (`join_proven`). Until then
    /// `ctrl`, `activity` and `traffic` are a detached controller's.
    pub joined: bool,
}

pub(super) struct Conn {
    sock: TcpStream,
    buf: BytesMut,
    /// PDUs encoded and not yet written: the answers to what was at hand, written together
    /// before the connection waits (`flush`).
    out: BytesMut,
    /// `out`, counted in the device's held bytes.
    out_count: crate::held::CountedBuf,
    digests: Digests,
    limits: PduLimits,
    pub target: Arc<Target>,
    pub queue: Option<Queue>,
    pub iters: Arc<ConnIterators>,
    /// I/O commands in flight (pending data, waiting for budget, running).
    pub flight: Flight,
    /// The vendor commands' session and kept responses.
    pub vendor: super::vendor_state::VendorState,
    /// Retrieves held to be carried out together once nothing more is at hand (`io.rs`).
    pub held: super::held_retrieves::Held,
    /// Its network thread's held puts, which its unconditional Stores join (`put_batch`);
    /// its commands on the workers keep the order of `order_id` (`ordered_jobs`).
    pub puts: Arc<HeldPuts>,
    pub order_id: u64,
    /// An I/O queue's controller going (its admin queue closed or expired).
    gone: Option<watch::Receiver<bool>>,
    stop: watch::Receiver<bool>,
    /// Connected (ICReq, then Fabrics Connect) within `icreq_timeout_ms`, as a native
    /// connection must authenticate within `auth_timeout_ms`; a PDU once begun whole within
    /// `frame_timeout_ms`, however slowly its bytes come; the keep-alive; idleness.
    pub(super) deadlines: Deadlines,
    /// Its connection slot: told to go when the target is full and it is the oldest that
    /// has not connected (and authenticated) a queue; it stops being first to go once it
    /// has.
    ticket: Ticket,
    /// The connection's place on its network thread's core; an admin queue gives it back
    /// at its Connect (`Placed::release`), so I/O queues alone spread over the cores.
    pub placed: Placed,
    /// What its turn on the thread used since it last let the others run (`turns.rs`).
    pub(super) turn_count: TurnCount,
}

/// Serves one accepted connection until it ends.
pub(super) async fn serve(
    sock: TcpStream,
    target: Arc<Target>,
    stop: watch::Receiver<bool>,
    placed: Placed,
    puts: Arc<HeldPuts>,
    ticket: Ticket,
) {
    let idle = Duration::from_secs(target.shared.config.iterator_idle_secs.into());
    let (flight, done_rx) =
        Flight::new(target.config.max_queue_bytes as usize, target.held.clone());
    let cfg = &target.config;
    let deadlines = Deadlines::with(
        Instant::now() + Duration::from_millis(cfg.icreq_timeout_ms),
        Duration::from_millis(target.shared.config.frame_timeout_ms),
        Duration::from_secs(cfg.idle_timeout_secs),
    );
    let kept_for = Duration::from_millis(target.config.unfetched_timeout_ms);
    let vendor = super::vendor_state::VendorState::new(target.held.clone(), kept_for);
    let mut c = Conn {
        sock,
        buf: BytesMut::with_capacity(8192),
        out: BytesMut::new(),
        out_count: crate::held::CountedBuf::new(target.held.clone()),
        digests: Digests::default(),
        limits: PduLimits::uniform(0),
        iters: Arc::new(ConnIterators::new(1, idle)),
        target,
        queue: None,
        flight,
        vendor,
        held: Default::default(),
        puts,
        order_id: crate::ordered_jobs::connection_id(),
        gone: None,
        stop,
        deadlines,
        placed,
        ticket,
        turn_count: TurnCount::default(),
    };
    let end = match c.handshake().await {
        Ok(()) => c.run(done_rx).await.err(),
        Err(e) => Some(e),
    };
    c.store_own_puts();
    if let Some(End::Term(fes, fei)) = end {
        c.target.shared.metrics.protocol_errors.inc();
        tracing::debug!(fes, fei, "NVMe/TCP: terminating a connection");
        let term = Pdu::C2HTermReq {
            fes,
            fei,
            data: Bytes::new(),
        };
        c.send(&[term]);
        let _ = c.flush().await;
    }
    let _ = c.sock.shutdown().await;
    if let Some(q) = &c.queue {
        if q.qid == 0 {
            c.target.controllers.remove(q.cntlid);
        }
    }
}

impl Conn {
    /// The next whole PDU in `buf`, if any.
    fn split(&mut self) -> Result<Option<Pdu>, End> {
        match split_pdu(&mut self.buf, self.digests, self.limits) {
            Ok(Some(p)) => {
                self.deadlines.frame_taken();
                Ok(Some(p))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(term(&e)),
        }
    }

    /// The first PDU (the ICReq), read before `until`.
    async fn first_pdu(&mut self, until: Instant) -> Result<Pdu, End> {
        loop {
            if let Some(p) = self.split()? {
                return Ok(p);
            }
            self.buf.reserve(512);
            let read = tokio::time::timeout_at(until, self.sock.read_buf(&mut self.buf));
            let n = tokio::select! {
                r = read => r,
                _ = stopped(&mut self.stop) => return Err(End::Quiet),
                _ = self.ticket.evicted() => return Err(End::Quiet),
            };
            match n {
                Ok(Ok(n)) if n > 0 => {}
                Ok(_) => return Err(End::Quiet),
                Err(_) => {
                    self.target.shared.metrics.auth_timeouts.inc();
                    return Err(End::Quiet);
                }
            }
        }
    }

    /// The address the host reached this connection on.
    pub(super) fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.sock.local_addr().ok()
    }

    /// Queues `pdus` for the socket: written by the next `flush` (the loop's, before it
    /// waits or once 256 KiB are queued). Not async: the steps that answer commands need
    /// no future of their own each, moved at every `.await`.
    pub(super) fn send(&mut self, pdus: &[Pdu]) {
        for p in pdus {
            p.encode(self.digests, &mut self.out);
        }
        self.out_count.grew_to(self.out.len());
    }

    /// Writes what `send` queued, within the write deadline.
    pub(super) async fn flush(&mut self) -> std::io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let write = self.sock.write_all(&self.out);
        let limit = Duration::from_millis(self.target.shared.config.write_timeout_ms);
        let written = match tokio::time::timeout(limit, write).await {
            Ok(r) => r,
            Err(_) => {
                self.target.shared.metrics.write_timeouts.inc();
                Err(std::io::ErrorKind::TimedOut.into())
            }
        };
        self.out.clear();
        self.out_count.emptied();
        // As on the native port: polling goes on from the reply, the host's next command
        // comes a round trip after it.
        crate::spin::touch();
        written
    }

    /// ICReq within the deadline, answered with the digests the host asked for.
    async fn handshake(&mut self) -> Result<(), End> {
        let cfg = &self.target.config;
        let wait = Duration::from_millis(cfg.icreq_timeout_ms);
        let maxh2cdata = cfg.max_h2c_data;
        let pdu = self.first_pdu(Instant::now() + wait).await?;
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
        self.send(&[resp]);
        self.flush().await.map_err(|_| End::Quiet)?;
        self.digests = digests;
        // A capsule carries at most `in_capsule_bytes` (IOCCSZ), whatever MAXH2CDATA is:
        // each command waiting for the queue's budget keeps its capsule's data.
        self.limits = PduLimits {
            max_data: self.target.config.max_h2c_data,
            max_capsule_data: self.target.config.in_capsule_bytes,
        };
        Ok(())
    }

    async fn run(&mut self, mut done_rx: mpsc::UnboundedReceiver<Done>) -> Result<(), End> {
        let mut w = Waiting::new(&self.stop);
        // The core's turn (`gate.rs`), held while this queue's commands of one namespace are
        // taken in and their held Retrieves run; given back before any write or wait.
        let target = self.target.clone();
        let shares = &target.shared.shares;
        let mut turn = None;
        loop {
            if self.out.len() >= FLUSH_AT {
                if turn.take().is_some() {
                    self.run_held();
                }
                self.flush().await.map_err(|_| End::Quiet)?;
            }
            // What is at hand first (answers made here or come back, PDUs read already),
            // their replies gathered into one write; the socket is written before the
            // connection waits.
            if let Some(done) = self.flight.ready.pop_front() {
                self.finished(done);
                continue;
            }
            if let Ok(done) = done_rx.try_recv() {
                self.finished(done);
                continue;
            }
            if let Some(p) = self.split()? {
                let charged = match self.gated(&p) {
                    Some((ns, bytes)) => self.pass_gate(&mut turn, shares, ns, bytes).await?,
                    None => false,
                };
                self.pdu(p, charged)?;
                self.turn_count.frame();
                if self.turn_count.over_mid_read(self.per_turn()) {
                    // Queries ran on the thread: what it holds runs (with the core's turn or
                    // without), its answers made so far are written (they wait in
                    // `flight.ready` otherwise), and the thread's other connections run
                    // before the PDUs it has read already.
                    turn = None;
                    self.run_held();
                    while let Some(done) = self.flight.ready.pop_front() {
                        self.finished(done);
                    }
                    self.flush().await.map_err(|_| End::Quiet)?;
                    self.turn_count.give(&target.shared.metrics).await;
                }
                continue;
            }
            if !self.held.is_empty() {
                // Their answers are at hand on the next turn (`flight.ready`).
                self.run_held();
                continue;
            }
            if self.release_due() || self.start_waiting() {
                continue;
            }
            let calm = self.target.shared.db.write_pressure() == WritePressure::None;
            if !self.flight.waiting.is_empty() && calm {
                // Commands wait for budget that held Stores hold: stored now, not once the
                // thread's other connections have had their turn (as a native connection
                // at its in-flight limit). Under write pressure the loop's task stores
                // them, off the loop.
                self.store_own_puts();
            }
            // Its held Retrieves ran above, within it.
            turn = None;
            self.flush().await.map_err(|_| End::Quiet)?;
            if self.turn_count.over(self.per_turn()) {
                // A host keeping its queue full would be served on and on: the thread's
                // other connections run before this one reads on.
                self.turn_count.give(&target.shared.metrics).await;
            }
            if let Some(done) = self.wait(&mut w, &mut done_rx).await? {
                self.finished(done);
            }
        }
    }

    fn per_turn(&self) -> usize {
        self.target.shared.config.network_frames_per_turn
    }

    /// Waits for an answer to come back, bytes to read, a deadline, the controller to go or
    /// the device to stop; bytes read are left in `buf`.
    async fn wait(
        &mut self,
        w: &mut Waiting,
        done_rx: &mut mpsc::UnboundedReceiver<Done>,
    ) -> Result<Option<Done>, End> {
        if w.gone.is_none() {
            w.gone = self.gone.clone().map(|mut rx| {
                // A dropped sender: the controller is gone too.
                Box::pin(async move {
                    let _ = rx.wait_for(|g| *g).await;
                }) as Pin<Box<dyn Future<Output = ()> + Send>>
            });
        }
        // Connected, and authenticated if its host must be, in time.
        let proven = self.queue.as_ref().is_some_and(|q| !q.auth.unproven());
        if proven && !self.ticket.is_authenticated() {
            self.ticket.authenticated();
        }
        let evictable = !self.ticket.is_authenticated();
        // Data an R2T asked for is owed as the rest of a PDU is: each Store's must keep
        // coming within the frame deadline, counted from its R2T or its last data (not from
        // the host's last PDU of any kind), so a host cannot hold the device's bytes with
        // Stores whose data never comes.
        self.deadlines
            .after_frames(false, !self.buf.is_empty(), true);
        self.deadlines.owed_since = self.flight.owed_since();
        let why = w.timer.arm(self.deadlines.earliest(proven));
        let delayed = self.flight.next_delayed();
        let unfetched = self.vendor.expires_at();
        // Its next command waits for room only the other queues can give back.
        let starved = self
            .flight
            .starved()
            .map(|cost| (self.flight.held.clone(), cost));
        self.buf.reserve(16 << 10);
        tokio::select! {
            // Answers first: they free the queue's slots and budget.
            biased;
            Some(done) = done_rx.recv() => return Ok(Some(done)),
            _ = &mut w.timer.sleep => self.expired(w, why)?,
            _ = went(&mut w.gone) => return Err(End::Quiet),
            _ = &mut w.stop => return Err(End::Quiet),
            // A command held for its namespace's limit is due.
            // (An async block: select! builds even a disabled branch's future, and a Sleep
            // made per wait would read the clock on every command's turn.)
            _ = async {
                match delayed {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            }, if delayed.is_some() => {}
            // The oldest unfetched vendor response is due to go.
            _ = async {
                match unfetched {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            }, if unfetched.is_some() => self.vendor.expire(),
            _ = async {
                match &starved {
                    Some((held, cost)) => held.room(*cost).await,
                    None => std::future::pending().await,
                }
            }, if starved.is_some() => {}
            _ = self.ticket.evicted(), if evictable => {
                tracing::debug!("NVMe/TCP: evicted to make room for another connection");
                return Err(End::Quiet);
            }
            r = self.sock.read_buf(&mut self.buf) => match r {
                Ok(0) | Err(_) => return Err(End::Quiet),
                Ok(_) => {
                    if !self.deadlines.heard {
                        // Once an idle period: what the admin queue's idle check reads.
                        if let Some(q) = self.queue.as_ref().filter(|q| q.qid != 0) {
                            q.activity.touch();
                        }
                        self.deadlines.heard = true;
                    }
                }
            },
        }
        Ok(None)
    }

    /// Handles a PDU; `charged`: an I/O command's namespace was charged at the core's gate.
    fn pdu(&mut self, pdu: Pdu, charged: bool) -> Result<(), End> {
        match pdu {
            Pdu::CapsuleCmd { sqe, data } => {
                // A command: this network thread polls for the next one a while (`spin`).
                crate::spin::touch();
                if self.is_io_command(&sqe) {
                    return self.io_capsule(sqe, data, charged);
                }
                let answer = self.command(sqe, data);
                self.restart_keep_alive();
                self.answer(&sqe, answer, true);
                Ok(())
            }
            Pdu::H2CData {
                cccid,
                ttag,
                datao,
                last,
                data,
            } => self.h2c_data(cccid, ttag, datao, last, data),
            Pdu::H2CTermReq { .. } => Err(End::Quiet),
            _ => Err(End::Term(FES_SEQUENCE, 0)),
        }
    }

    /// The peer this connection counts as (`admission::peer_group`).
    pub(super) fn peer(&self) -> std::net::IpAddr {
        self.ticket.peer()
    }

    /// Whether `sqe` is an I/O command: not a Fabrics one, on an I/O queue whose host may
    /// use it (connected, and authenticated if it must be).
    pub(super) fn is_io_command(&self, sqe: &Sqe) -> bool {
        let io = self
            .queue
            .as_ref()
            .is_some_and(|q| q.qid != 0 && q.auth.usable());
        io && sqe.opcode != cerberus_proto::nvme::FABRICS_OPCODE
    }

    /// Routes a capsule: Fabrics commands, then the admin or I/O queue's.
    fn command(&mut self, sqe: Sqe, data: Bytes) -> Answer {
        if sqe.opcode == cerberus_proto::nvme::FABRICS_OPCODE {
            let answer = self.fabrics(&sqe, &data);
            self.watch_controller();
            return answer;
        }
        match &self.queue {
            Some(q) if q.qid == 0 || !q.auth.usable() => self.admin(&sqe, &data),
            // Nothing but a Connect before the queue is open (I/O commands go elsewhere).
            _ => Answer::status(NvmeStatus::error(0, 0x0C)),
        }
    }

    /// Once an I/O queue connected: it closes when its controller goes.
    fn watch_controller(&mut self) {
        if self.gone.is_none() {
            if let Some(q) = self.queue.as_ref().filter(|q| q.qid != 0 && q.joined) {
                self.gone = Some(q.ctrl.lock().gone());
            }
        }
    }

    /// Sends an answer: data first (cut to the host's buffer), then the completion.
    /// `advance`: the command's entry leaves the queue now (I/O commands left it when
    /// they arrived).
    pub(super) fn answer(&mut self, sqe: &Sqe, answer: Answer, advance: bool) {
        let Answer::Done {
            status,
            dw0,
            dw1,
            data,
        } = answer
        else {
            return; // held (an Async Event Request)
        };
        let data = data.map(|mut d| {
            d.truncate(sgl_len(sqe));
            d
        });
        let data = data.filter(|d| status.is_success() && !d.is_empty());
        let (sqid, sqhd) = match self.queue.as_mut() {
            Some(q) => {
                if q.qid != 0 && status.is_success() {
                    count_traffic(&q.traffic, sqe, data.as_ref().map_or(0, |d| d.len()));
                }
                if advance {
                    q.sqhd = (q.sqhd + 1) % q.sqsize.max(1);
                }
                (q.qid, q.sqhd)
            }
            None => (0, 0),
        };
        let resp = Pdu::CapsuleResp {
            cqe: Cqe {
                dw0,
                dw1,
                sqhd,
                sqid,
                cid: sqe.cid,
                status,
            },
        };
        match data {
            Some(data) => {
                let data = Pdu::C2HData {
                    cccid: sqe.cid,
                    datao: 0,
                    last: true,
                    success: false,
                    data,
                };
                self.send(&[data, resp]);
            }
            None => self.send(&[resp]),
        }
    }
}

/// A KV command completed on an I/O queue, in its controller's SMART figures: Stores and
/// Deletes are writes (a Store's value is its buffer), Retrieves, Lists and Exists reads
/// (of the data sent back). Vendor-pair commands carry frames, not user data: not counted.
fn count_traffic(t: &super::controllers::Traffic, sqe: &Sqe, sent: usize) {
    use cerberus_proto::nvme::KvOpcode;
    match sqe.opcode {
        o if o == KvOpcode::Store as u8 => t.wrote(sgl_len(sqe) as u64),
        o if o == KvOpcode::Delete as u8 => t.wrote(0),
        o if o == KvOpcode::Retrieve as u8
            || o == KvOpcode::List as u8
            || o == KvOpcode::Exist as u8 =>
        {
            t.read(sent as u64)
        }
        _ => {}
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
