//! One client connection: reads frames, checks access, hands commands to the workers and writes
//! completions back as they finish, in any order.
//!
//! Authentication and Identify are answered here, on the network thread, in the order they
//! arrive, so a command sent after an Authenticate sees its effect. Every other command must
//! pass the access check before it is queued; a refused command never reaches the engine.

//!
//! `serve` runs the read side (`Reader`); `session` holds what the connection proved,
//! `commands` what becomes of each frame, and `crate::outbox` the write side; `crate::deadlines`
//! says when the connection is closed for silence (both ports share it).

mod commands;
mod gets;
mod held_gets;
pub(crate) mod session;
mod waits;

use crate::admission::Ticket;
use crate::deadlines::{Deadlines, Expired};
use crate::dispatch::Shared;
use crate::held::COUNTED_FROM;
use crate::iterators::ConnIterators;
use crate::outbox::{outbox, write_loop, Outbox};
use crate::put_batch::HeldPuts;
use crate::shares::gate::{pass_if, Turn};
use crate::stop::stopped;
use crate::turns::TurnCount;
use crate::workers::Workers;
use bytes::BytesMut;
use cerberus_proto::{split_frame, Frame, ProtoError, Response, Status};
use session::Session;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use waits::{Waits, Woke};

/// Largest frame body read before the connection authenticates: an Authenticate or an
/// Identify fits many times over, and a client that proved nothing holds little memory.
const UNAUTHENTICATED_MAX_BODY: u32 = 4096;

/// Bytes a stopping connection reads at most to answer what its client sent before the stop
/// (`Reader::read_what_came`): a client that keeps sending does not hold the stop up.
const STOP_READ_BYTES: usize = 256 << 10;

pub async fn serve<S>(
    stream: S,
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    mut stop: watch::Receiver<bool>,
    ticket: Ticket,
    puts: Arc<HeldPuts>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(stream);
    let (tx, rx) = outbox(shared.config.reply_bytes_bound(), shared.held.clone());
    let write_timeout = Duration::from_millis(shared.config.write_timeout_ms);
    let writer = write_loop(wr, rx, write_timeout, shared.clone());
    let mut reader = Reader::new(shared, workers, ticket, puts, tx);
    let read = async move {
        reader.run(&mut rd, &mut stop).await;
        // In-flight jobs hold senders: the writer ends once the last of them has answered.
        drop(reader);
    };
    read_then_write(read, writer).await;
}

/// Runs a connection's reader and writer in one task, the writer polled right after the
/// reader: a reply the reader answered (a get run inline) is written in the same poll. As a
/// task of its own, the writer waited for its turn behind every other task ready on the
/// core (measured, debug build: half of a reader's 1.1 ms median beside 7 writers).
async fn read_then_write(read: impl Future<Output = ()>, write: impl Future<Output = ()>) {
    let (mut read, mut write) = (std::pin::pin!(read), std::pin::pin!(write));
    let (mut read_done, mut write_done) = (false, false);
    std::future::poll_fn(|cx| {
        if !read_done {
            read_done = read.as_mut().poll(cx).is_ready();
        }
        if !write_done && write.as_mut().poll(cx).is_ready() {
            write_done = true;
            // The writer gave up (its outbox closed): the reader sees it now.
            if !read_done {
                read_done = read.as_mut().poll(cx).is_ready();
            }
        }
        match read_done && write_done {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await
}

/// The read side of a connection and what it keeps between frames.
struct Reader {
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    ticket: Ticket,
    puts: Arc<HeldPuts>,
    /// Whose order its commands on the workers keep (`ordered_jobs`).
    order_id: u64,
    tx: Outbox,
    /// Commands in flight, up to `max_inflight`: a permit goes back once the reply is written.
    inflight: Arc<Semaphore>,
    max_inflight: usize,
    max_body: u32,
    /// What answers not counted yet may add to the device's held bytes: a get held (or a
    /// command running) on each network thread, up to a value each (see `wait_for_budget`).
    held_margin: usize,
    session: Session,
    iters: Arc<ConnIterators>,
    /// Bytes read and not yet taken as frames.
    buf: BytesMut,
    stopping: bool,
    /// Bytes read after the stop began (`read_what_came`).
    read_at_stop: usize,
    deadlines: Deadlines,
    /// Gets read and held to run together (see `gets`).
    gets: held_gets::HeldGets,
    /// What its turn on the thread has used since it last let the others run.
    turn: TurnCount,
}

/// Whether a frame may be handled: with its in-flight permit, refused, or not at all.
enum Admission {
    Permit(OwnedSemaphorePermit),
    Refused,
    Close,
}

impl Reader {
    fn new(
        shared: Arc<Shared>,
        workers: Arc<Workers>,
        ticket: Ticket,
        puts: Arc<HeldPuts>,
        tx: Outbox,
    ) -> Reader {
        let max_inflight = shared.config.max_inflight as usize;
        let idle = Duration::from_secs(u64::from(shared.config.iterator_idle_secs));
        Reader {
            workers,
            ticket,
            puts,
            order_id: crate::ordered_jobs::connection_id(),
            tx,
            inflight: Arc::new(Semaphore::new(max_inflight)),
            max_inflight,
            max_body: shared.config.max_frame_body(),
            held_margin: (shared.config.max_frame_body() as usize)
                .saturating_mul(shared.config.network_threads.max(1)),
            session: Session::default(),
            iters: Arc::new(ConnIterators::new(shared.config.max_iterators, idle)),
            buf: BytesMut::new(),
            stopping: false,
            read_at_stop: 0,
            deadlines: Deadlines::new(&shared.config),
            gets: held_gets::HeldGets::default(),
            turn: TurnCount::default(),
            shared,
        }
    }

    /// Reads and handles frames until the client leaves, a deadline passes, the writer gives
    /// up, or the device stops; then stores the puts held back.
    async fn run<R: AsyncRead + Unpin>(&mut self, rd: &mut R, stop: &mut watch::Receiver<bool>) {
        // The writer gave up on a client that does not read its replies.
        let tx = self.tx.clone();
        let writer_gone = tx.closed();
        tokio::pin!(writer_gone);
        let mut shutdown_rx = stop.clone();
        let shutdown = stopped(&mut shutdown_rx);
        tokio::pin!(shutdown);
        // Idle iterators are closed even while the client sends nothing.
        let idle = Duration::from_secs(u64::from(self.shared.config.iterator_idle_secs));
        let sweep_every = (idle / 4).max(Duration::from_millis(100));
        // The socket and the rare ends (`waits`): one deadline timer, moved only when the
        // earliest deadline changes.
        let mut waits = Waits::new(sweep_every, writer_gone, tx.clone(), shutdown, stop.clone());
        // Frames taken from this read in turns before the last (see below).
        let mut framed_before = false;
        loop {
            let Some(framed) = self.take_frames(stop).await else {
                break;
            };
            let framed = framed || std::mem::take(&mut framed_before);
            if self.stopping {
                if self.read_what_came(rd).await {
                    // Refused in turn, each answered `ShuttingDown`.
                    continue;
                }
                break;
            }
            if self.take_turns().await && !self.buf.is_empty() {
                // Its turn ended with frames read and not taken yet: they come next, after
                // the thread's other connections ran, not after the next read.
                framed_before = framed;
                continue;
            }
            let authenticated = self.ticket.is_authenticated();
            let partial = !self.buf.is_empty();
            self.deadlines.after_frames(framed, partial, authenticated);
            waits.arm(&self.deadlines, authenticated);
            self.make_room(authenticated);
            let read = rd.read_buf(&mut self.buf);
            match waits.next(read, self.ticket.evicted(), authenticated).await {
                Woke::Read(Ok(0)) => {
                    if !self.buf.is_empty() {
                        tracing::debug!(bytes = self.buf.len(), "client left mid-frame");
                    }
                    break;
                }
                Woke::Read(Ok(_)) => self.deadlines.heard = true,
                Woke::Read(Err(e)) => {
                    tracing::debug!(error = %e, "read failed");
                    break;
                }
                Woke::Deadline(None) => waits.rearm_far(),
                Woke::Deadline(Some(why)) => {
                    if self.expired(why) {
                        break;
                    }
                }
                Woke::Evicted => {
                    tracing::debug!("evicted to make room for another connection");
                    break;
                }
                Woke::WriterGone => break,
                Woke::Stop => self.stopping = true,
                Woke::Sweep => {
                    waits.swept();
                    let closed = self.iters.sweep();
                    if closed > 0 {
                        tracing::debug!(closed, "closed idle iterators");
                    }
                }
            }
        }
        self.store_own_puts();
    }

    /// Room in the buffer for the next read. A put's frame keeps its piece of the buffer
    /// until the put is stored, so the buffer cannot be reused in place while one is held: a
    /// reserve at every read took a new buffer (64 KiB) at every put, and each held put kept
    /// one alive. A new buffer is taken once the room left falls under a quarter of it.
    fn make_room(&mut self, authenticated: bool) {
        let room = if authenticated { 64 << 10 } else { 512 };
        if self.buf.capacity() - self.buf.len() < room / 4 {
            self.buf.reserve(room);
        }
    }

    /// A client that keeps the socket full would be read on and on within one poll of its
    /// task (until tokio's budget of 128 reads, thousands of frames): a reader on the same
    /// thread with one get waited behind it for milliseconds. Once its turn is over
    /// (`turns.rs`) the task yields, and the loop polls the sockets before it comes back.
    /// Whether it yielded.
    async fn take_turns(&mut self) -> bool {
        if !self.turn.over(self.shared.config.network_frames_per_turn) {
            return false;
        }
        self.turn.give(&self.shared.metrics).await;
        true
    }

    /// Stores the held puts of the namespaces this connection proved (its own among them):
    /// not the other namespaces', which the loop stores a piece at a time.
    fn store_own_puts(&self) {
        let shared = &self.shared;
        shared.scheduler.busy(false, || {
            for ns in self.session.namespaces() {
                self.puts.store_for(shared, ns);
            }
        });
    }

    /// Deadline `why` has passed: whether it closes the connection (counted if so).
    fn expired(&mut self, why: Expired) -> bool {
        let busy = self.inflight.available_permits() < self.max_inflight;
        if !self.deadlines.closes(&why, busy) {
            return false;
        }
        why.count(&self.shared.metrics);
        tracing::debug!(reason = why.as_str(), "closing connection at its deadline");
        true
    }

    /// Handles every whole frame in the buffer. Whether there was one; `None` once the
    /// connection is to close. The gets held back run before it returns.
    async fn take_frames(&mut self, stop: &mut watch::Receiver<bool>) -> Option<bool> {
        let framed = self.take_frames_holding(stop).await;
        self.run_gets();
        if framed == Some(true) {
            self.store_puts_if_alone();
        }
        framed
    }

    /// A connection alone on its network thread (in effect: see `Scheduler::reads_alone`)
    /// has no neighbour to share a log append with: the puts it read are stored now, their
    /// answers written in this same turn, not after a trip through the loop (the held
    /// puts' task, then this one again).
    fn store_puts_if_alone(&self) {
        let shared = &self.shared;
        if !shared.scheduler.reads_alone(self.order_id)
            || !self.puts.any()
            // A neighbour's puts (a pipeline read before, an NVMe/TCP queue's) are stored
            // by the held puts' task, a piece at a time.
            || !self.puts.only_from(self.order_id)
            || !self.puts.may_store_here(shared)
        {
            return;
        }
        shared.scheduler.busy(false, || self.puts.store(shared));
    }

    /// [`Reader::take_frames`], gets of the last frames possibly still held. Held gets run
    /// before anything the reader waits for: they hold in-flight permits.
    async fn take_frames_holding(&mut self, stop: &mut watch::Receiver<bool>) -> Option<bool> {
        let mut framed = false;
        let shared = self.shared.clone();
        // The core's turn, kept for the next frames read while its quantum lasts.
        let mut turn: Option<Turn<'_>> = None;
        let per_turn = shared.config.network_frames_per_turn;
        loop {
            if self.turn.over_mid_read(per_turn) && !self.stopping {
                // Queries ran on the thread: the rest of the buffer waits for the next turn
                // (not while stopping: every frame read is answered before the connection
                // closes).
                return Some(framed);
            }
            // The device's held bytes: one plain load a frame while they are within
            // `max_held_bytes`. Before the frame is split, so a large one waiting in the
            // buffer is not given its room (or read further) meanwhile.
            if self.shared.held.over(self.held_margin) && self.holds_anything() {
                turn = None;
                self.wait_for_budget(stop).await;
            }
            let limit = match self.ticket.is_authenticated() {
                true => self.max_body,
                false => UNAUTHENTICATED_MAX_BODY,
            };
            let mut frame = match split_frame(&mut self.buf, limit) {
                Ok(Some(frame)) => frame,
                // Everything read is handled; the puts held back are stored once the other
                // connections of this thread have had their turn.
                Ok(None) => return Some(framed),
                Err(e) => {
                    self.bad_frame(e);
                    return None;
                }
            };
            framed = true;
            self.turn.frame();
            if frame.body.len() >= COUNTED_FROM {
                // Counted while its command holds its body (small frames are bounded by the
                // buffer and `max_inflight`).
                frame.body = crate::held::counted(frame.body, &self.shared.held);
            }
            if self.stopping {
                let stopping = Status::ShuttingDown;
                refuse(
                    &self.shared,
                    &self.tx,
                    &frame,
                    stopping,
                    "device is stopping",
                    None,
                );
                continue;
            }
            if self.inflight.available_permits() == 0 {
                // About to wait for its replies: not while holding the core's turn.
                turn = None;
                self.run_gets();
            }
            let permit = match self.admit(&frame, stop).await {
                Admission::Permit(p) => p,
                Admission::Refused => continue,
                Admission::Close => return None,
            };
            let ns = frame.header.nsid;
            if self.puts.must_wait(ns, self.order_id) {
                // A write it sent before, or a piece of held puts of the namespace, is on a
                // worker: this command waits for it, here (see `HeldPuts::must_wait`).
                turn = None;
                self.run_gets();
                self.puts.wait_for(ns, self.order_id).await;
            }
            // The namespace's shares: its turn on this core, or its limit (see `shares`).
            let bytes = frame.body.len() as u64;
            if !turn.as_mut().is_some_and(|t| t.extend(ns, bytes)) {
                // Its turn ends before it asks for the next, and the gets it let in run
                // within it.
                if turn.is_some() {
                    self.run_gets();
                }
                drop(turn.take());
                turn = if self.holds_gets() {
                    // Held gets run before the gate makes this frame wait, not after.
                    let own = self.session.holds(ns);
                    let mut pass = std::pin::pin!(pass_if(&shared.shares, ns, bytes, move || own));
                    match std::future::poll_fn(|cx| Poll::Ready(pass.as_mut().poll(cx))).await {
                        Poll::Ready(t) => t,
                        Poll::Pending => {
                            self.run_gets();
                            pass.await
                        }
                    }
                } else {
                    let session = &self.session;
                    pass_if(&shared.shares, ns, bytes, || session.holds(ns)).await
                };
            }
            shared.scheduler.busy(true, || self.handle(frame, permit));
        }
    }

    /// While stopping: reads what the client sent and the device has not read yet, without
    /// waiting for more (up to `STOP_READ_BYTES` in all), so that every frame it sent before
    /// the stop is answered, if only `ShuttingDown`. A socket closed with input unread is
    /// reset, and the replies written on it are lost with it. Whether bytes came.
    async fn read_what_came<R: AsyncRead + Unpin>(&mut self, rd: &mut R) -> bool {
        if self.read_at_stop >= STOP_READ_BYTES {
            return false;
        }
        self.buf.reserve(64 << 10);
        let before = self.buf.len();
        // A zero timeout polls the read once: what the socket holds, or nothing.
        match tokio::time::timeout(Duration::ZERO, rd.read_buf(&mut self.buf)).await {
            Ok(Ok(n)) if n > 0 => {
                self.read_at_stop += self.buf.len() - before;
                true
            }
            _ => false,
        }
    }

    /// Backpressure: at the in-flight limit, stop reading this connection (after storing the
    /// puts held back, which hold slots themselves) until a command finishes.
    async fn admit(&mut self, frame: &Frame, stop: &mut watch::Receiver<bool>) -> Admission {
        let free = self.inflight.clone().try_acquire_owned();
        if let Ok(p) = free {
            return Admission::Permit(p);
        }
        self.store_own_puts();
        tokio::select! {
            p = self.inflight.clone().acquire_owned() => match p {
                Ok(p) => Admission::Permit(p),
                Err(_) => Admission::Close,
            },
            _ = stopped(stop) => {
                self.stopping = true;
                let stopping = Status::ShuttingDown;
                refuse(&self.shared, &self.tx, frame, stopping, "device is stopping", None);
                Admission::Refused
            }
        }
    }

    /// Whether the connection has a command in flight or a reply not yet written (held gets
    /// and puts hold permits too).
    fn holds_anything(&self) -> bool {
        self.inflight.available_permits() < self.max_inflight
    }

    /// Past the device's `max_held_bytes` (less `held_margin`), with something of its own
    /// held: stop reading until the device has room again or this connection holds nothing
    /// (then it runs one command alone: what others hold never stops it for good). Its held
    /// gets and puts go first: they hold permits.
    ///
    /// The margin: a get's answer is counted once made, after the check that let it in, and
    /// each network thread may have let one in (the rest of a run of gets is checked as it
    /// forms, `gets::fits_one_more`); leaving room for one per thread keeps what is made
    /// while the device is not over within `max_held_bytes`.
    async fn wait_for_budget(&mut self, stop: &mut watch::Receiver<bool>) {
        self.run_gets();
        self.store_own_puts();
        self.shared.metrics.budget_waits.inc();
        let (held, inflight) = (self.shared.held.clone(), self.inflight.clone());
        let all = u32::try_from(self.max_inflight).unwrap_or(u32::MAX);
        let stopping = tokio::select! {
            _ = held.room(self.held_margin) => false,
            // Every permit back: nothing of its own in flight or unwritten.
            _ = inflight.acquire_many(all) => false,
            _ = stopped(stop) => true,
        };
        self.stopping |= stopping;
    }

    /// The stream cannot be trusted past a bad header: answer (if the header says to whom)
    /// and close.
    fn bad_frame(&self, e: ProtoError) {
        self.shared.metrics.protocol_errors.inc();
        let h = match &e {
            ProtoError::UnsupportedVersion { header }
            | ProtoError::FrameTooLarge { header, .. } => Some(*header),
            _ => None,
        };
        if let (Some(h), Ok(permit)) = (h, self.inflight.clone().try_acquire_owned()) {
            self.shared.metrics.record_refused(h.opcode);
            let resp = Response::error(h.cid, h.nsid, h.opcode, e.status(), e.to_string());
            let _ = self.tx.send((resp, Some(permit)));
        }
        tracing::debug!(error = %e, "closing connection after a bad frame");
    }
}

/// Answers a frame with an error; the reply holds `permit` until it is written (without one,
/// while stopping, what is read after the stop, `STOP_READ_BYTES` at most, bounds the replies).
fn refuse(
    shared: &Shared,
    tx: &Outbox,
    frame: &Frame,
    status: Status,
    msg: &str,
    permit: Option<OwnedSemaphorePermit>,
) {
    let h = &frame.header;
    shared.metrics.record_refused(h.opcode);
    let resp = Response::error(h.cid, h.nsid, h.opcode, status, msg.to_string());
    let _ = tx.send((resp, permit));
}
