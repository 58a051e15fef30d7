//! One client connection: reads frames, checks access, hands commands to the workers and writes
//! completions back as they finish, in any order.
//!
//! Authentication and Identify are answered here, on the network thread, in the order they
//! arrive, so a command sent after an Authenticate sees its effect. Every other command must
//! pass the access check before it is queued; a refused command never reaches the engine.

use crate::admission::Ticket;
use crate::dispatch::Shared;
use crate::iterators::ConnIterators;
use crate::put_batch::{HeldPut, HeldPuts};
use crate::workers::{answer, Outbox, Workers};
use bytes::BytesMut;
use cerberus_proto::{
    split_frame, Command, Frame, ProtoError, Reply, Request, Response, Status, DEVICE_NSID,
    HEADER_LEN,
};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// What a connection has proved.
#[derive(Default)]
struct Session {
    admin: bool,
    namespaces: HashSet<u32>,
}

impl Session {
    fn allows(&self, cmd: &Command) -> bool {
        match cmd.request {
            Request::Store { .. }
            | Request::Retrieve { .. }
            | Request::List { .. }
            | Request::Delete { .. }
            | Request::Exist { .. }
            | Request::IterOpen { .. }
            | Request::IterNext { .. }
            | Request::IterClose { .. }
            | Request::IndexCreate { .. }
            | Request::IndexDrop { .. }
            | Request::IndexList
            | Request::Query { .. } => self.namespaces.contains(&cmd.nsid),
            Request::Stats => {
                self.admin || (cmd.nsid != DEVICE_NSID && self.namespaces.contains(&cmd.nsid))
            }
            Request::NamespaceCreate { .. }
            | Request::NamespaceDestroy
            | Request::NamespaceList => self.admin,
            Request::Authenticate { .. } | Request::Identify => true,
        }
    }
}

/// Resolves once the device is told to stop.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// Largest frame body read before the connection authenticates: an Authenticate or an
/// Identify fits many times over, and a client that proved nothing holds little memory.
const UNAUTHENTICATED_MAX_BODY: u32 = 4096;

/// Why a connection's deadline closes it.
enum Expired {
    Auth,
    Frame,
    Idle,
}

pub async fn serve<S>(
    stream: S,
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    mut stop: watch::Receiver<bool>,
    mut ticket: Ticket,
    puts: Arc<HeldPuts>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(stream);
    let (tx, rx) = mpsc::unbounded_channel();
    let write_timeout = Duration::from_millis(shared.config.write_timeout_ms);
    let writer = tokio::spawn(write_loop(wr, rx, write_timeout, shared.clone()));
    let max_inflight = shared.config.max_inflight as usize;
    let inflight = Arc::new(Semaphore::new(max_inflight));
    let max_body = shared.config.max_frame_body();
    let auth_deadline = Instant::now() + Duration::from_millis(shared.config.auth_timeout_ms);
    let frame_timeout = Duration::from_millis(shared.config.frame_timeout_ms);
    let idle_timeout = Duration::from_secs(shared.config.idle_timeout_secs);
    // When the partial frame in `buf` began; when the idle check is due, and whether the
    // client sent anything since the last one (no clock read per command).
    let mut frame_began: Option<Instant> = None;
    let mut idle_at: Option<Instant> = None;
    let mut heard = false;
    // The futures pinned here borrow `tx`, which must go before the writer is awaited.
    {
        // One timer, moved only when the earliest deadline changes.
        let far = || Instant::now() + Duration::from_secs(3600);
        let mut armed = auth_deadline;
        let timer = tokio::time::sleep_until(armed);
        tokio::pin!(timer);
        // The writer gave up on a client that does not read its replies.
        let writer_gone = tx.closed();
        tokio::pin!(writer_gone);
        let mut shutdown_rx = stop.clone();
        let shutdown = stopped(&mut shutdown_rx);
        tokio::pin!(shutdown);
        let mut session = Session::default();
        let idle = Duration::from_secs(u64::from(shared.config.iterator_idle_secs));
        let iters = Arc::new(ConnIterators::new(shared.config.max_iterators, idle));
        // Idle iterators are closed even while the client sends nothing.
        let mut sweep = tokio::time::interval((idle / 4).max(Duration::from_millis(100)));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut buf = BytesMut::new();
        let mut stopping = false;
        'conn: loop {
            let mut framed = false;
            loop {
                let limit = match ticket.is_authenticated() {
                    true => max_body,
                    false => UNAUTHENTICATED_MAX_BODY,
                };
                match split_frame(&mut buf, limit) {
                    Ok(Some(frame)) => {
                        framed = true;
                        if stopping {
                            refuse(
                                &shared,
                                &tx,
                                &frame,
                                Status::ShuttingDown,
                                "device is stopping",
                                None,
                            );
                            continue;
                        }
                        // Backpressure: at the in-flight limit, stop reading this connection
                        // (after storing the puts held back, which hold slots themselves).
                        let free = inflight.clone().try_acquire_owned();
                        if free.is_err() {
                            shared.scheduler.busy(false, || puts.store(&shared));
                        }
                        let permit = if let Ok(p) = free {
                            p
                        } else {
                            tokio::select! {
                                p = inflight.clone().acquire_owned() => match p {
                                    Ok(p) => p,
                                    Err(_) => break 'conn,
                                },
                                _ = stopped(&mut stop) => {
                                    stopping = true;
                                    refuse(&shared, &tx, &frame, Status::ShuttingDown, "device is stopping", None);
                                    continue;
                                }
                            }
                        };
                        shared.scheduler.busy(true, || {
                            handle(
                                frame,
                                &mut session,
                                &mut ticket,
                                permit,
                                &shared,
                                &workers,
                                &tx,
                                &iters,
                                &puts,
                            )
                        });
                    }
                    // Everything read is handled; the puts held back are stored once the
                    // other connections of this thread have had their turn.
                    Ok(None) => break,
                    Err(e) => {
                        // The stream cannot be trusted past a bad header: answer and close.
                        shared
                            .metrics
                            .protocol_errors
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let h = match &e {
                            ProtoError::UnsupportedVersion { header }
                            | ProtoError::FrameTooLarge { header, .. } => Some(*header),
                            _ => None,
                        };
                        if let (Some(h), Ok(permit)) = (h, inflight.clone().try_acquire_owned()) {
                            shared.metrics.record_refused(h.opcode);
                            let resp =
                                Response::error(h.cid, h.nsid, h.opcode, e.status(), e.to_string());
                            let _ = tx.send((resp, Some(permit)));
                        }
                        tracing::debug!(error = %e, "closing connection after a bad frame");
                        break 'conn;
                    }
                }
            }
            if stopping {
                break;
            }
            if buf.is_empty() {
                frame_began = None;
            } else if framed || frame_began.is_none() {
                // What is left began after the frames just taken.
                frame_began = Some(Instant::now());
            }
            let authenticated = ticket.is_authenticated();
            if authenticated && idle_at.is_none() && !idle_timeout.is_zero() {
                idle_at = Some(Instant::now() + idle_timeout);
            }
            let deadlines = [
                (!authenticated).then_some((auth_deadline, Expired::Auth)),
                frame_began.map(|b| (b + frame_timeout, Expired::Frame)),
                idle_at.map(|at| (at, Expired::Idle)),
            ];
            // Without a deadline, a wake-up now and then that changes nothing.
            let (deadline, why) = match deadlines.into_iter().flatten().min_by_key(|(at, _)| *at) {
                Some((at, why)) => (at, Some(why)),
                None => (far(), None),
            };
            if deadline != armed {
                armed = deadline;
                timer.as_mut().reset(deadline);
            }
            buf.reserve(if authenticated { 64 << 10 } else { 512 });
            tokio::select! {
                r = rd.read_buf(&mut buf) => match r {
                    Ok(0) => {
                        if !buf.is_empty() {
                            tracing::debug!(bytes = buf.len(), "client left mid-frame");
                        }
                        break;
                    }
                    Ok(_) => heard = true,
                    Err(e) => {
                        tracing::debug!(error = %e, "read failed");
                        break;
                    }
                },
                _ = &mut timer => {
                    let Some(why) = why else {
                        armed = far();
                        timer.as_mut().reset(armed);
                        continue;
                    };
                    let counter = match why {
                        Expired::Auth => &shared.metrics.auth_timeouts,
                        Expired::Frame => &shared.metrics.frame_timeouts,
                        // Heard from since the last check, or waiting for its own commands: not
                        // idle. Checked again a whole timeout later.
                        Expired::Idle if heard || inflight.available_permits() < max_inflight => {
                            heard = false;
                            idle_at = Some(Instant::now() + idle_timeout);
                            continue;
                        }
                        Expired::Idle => &shared.metrics.idle_timeouts,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(reason = why.as_str(), "closing connection at its deadline");
                    break;
                }
                _ = ticket.evicted(), if !authenticated => {
                    tracing::debug!("evicted to make room for another connection");
                    break;
                }
                _ = &mut writer_gone => break,
                _ = &mut shutdown => stopping = true,
                _ = sweep.tick() => {
                    let closed = iters.sweep();
                    if closed > 0 {
                        tracing::debug!(closed, "closed idle iterators");
                    }
                }
            }
        }
        shared.scheduler.busy(false, || puts.store(&shared));
    }
    // In-flight jobs hold senders: the writer ends once the last of them has answered.
    drop(tx);
    let _ = writer.await;
}

impl Expired {
    fn as_str(&self) -> &'static str {
        match self {
            Expired::Auth => "not authenticated in time",
            Expired::Frame => "frame not finished in time",
            Expired::Idle => "idle",
        }
    }
}

/// Answers a frame with an error; the reply holds `permit` until it is written (without one,
/// while stopping, the buffer already read bounds the replies).
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

#[allow(clippy::too_many_arguments)]
fn handle(
    frame: Frame,
    session: &mut Session,
    ticket: &mut Ticket,
    permit: OwnedSemaphorePermit,
    shared: &Arc<Shared>,
    workers: &Workers,
    tx: &Outbox,
    iters: &Arc<ConnIterators>,
    puts: &HeldPuts,
) {
    // The TSC clock: two reads per command, at a third of the system clock's cost.
    let arrived = quanta::Instant::now();
    crate::spin::touch();
    let cmd = match Command::decode(&frame) {
        Ok(c) => c,
        Err(e) => {
            shared
                .metrics
                .protocol_errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            refuse(shared, tx, &frame, e.status(), &e.to_string(), Some(permit));
            return;
        }
    };
    let opcode = cmd.request.opcode() as u8;
    match &cmd.request {
        Request::Authenticate { secret } => {
            let ok = if cmd.nsid == DEVICE_NSID {
                shared.creds.verify_admin(secret)
            } else {
                shared.creds.verify(cmd.nsid, secret)
            };
            let resp = if ok {
                if cmd.nsid == DEVICE_NSID {
                    session.admin = true;
                } else {
                    session.namespaces.insert(cmd.nsid);
                }
                ticket.authenticated();
                shared
                    .metrics
                    .record(cmd.nsid, opcode, true, arrived.elapsed());
                Response {
                    cid: cmd.cid,
                    nsid: cmd.nsid,
                    opcode,
                    status: Status::Success,
                    reply: Reply::Empty,
                }
            } else {
                shared.metrics.record_refused(opcode);
                // One answer for both, so a client cannot find out which namespaces exist.
                Response::error(
                    cmd.cid,
                    cmd.nsid,
                    opcode,
                    Status::AccessDenied,
                    "unknown namespace or wrong credential".into(),
                )
            };
            let _ = tx.send((resp, Some(permit)));
            return;
        }
        Request::Identify => {
            shared
                .metrics
                .record(DEVICE_NSID, opcode, true, arrived.elapsed());
            let resp = Response {
                cid: cmd.cid,
                nsid: cmd.nsid,
                opcode,
                status: Status::Success,
                reply: Reply::Identify(shared.identify),
            };
            let _ = tx.send((resp, Some(permit)));
            return;
        }
        _ => {}
    }
    if !session.allows(&cmd) {
        refuse(
            shared,
            tx,
            &frame,
            Status::AccessDenied,
            "this connection has not authenticated for that namespace",
            Some(permit),
        );
        return;
    }
    if shared.batchable(&cmd) {
        puts.hold(
            HeldPut {
                cmd,
                permit,
                arrived,
                reply: tx.clone(),
                iters: iters.clone(),
            },
            shared,
        );
        return;
    }
    // Anything else comes after the puts read before it.
    puts.store(shared);
    if shared.runs_inline(&cmd) {
        // Cannot block for long: answered here, without two hand-offs between threads.
        let resp = answer(shared, cmd, iters, arrived);
        let _ = tx.send((resp, Some(permit)));
        return;
    }
    let job_shared = shared.clone();
    let job_tx = tx.clone();
    let job_iters = iters.clone();
    // The background work the command makes belongs to the core that read it.
    let core = crate::scheduler::current_core();
    let submitted = workers.submit(Box::new(move || {
        let resp =
            crate::scheduler::on_behalf_of(core, || answer(&job_shared, cmd, &job_iters, arrived));
        let _ = job_tx.send((resp, Some(permit)));
    }));
    if !submitted {
        refuse(
            shared,
            tx,
            &frame,
            Status::ShuttingDown,
            "device is stopping",
            None,
        );
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<(Response, Option<OwnedSemaphorePermit>)>,
    timeout: Duration,
    shared: Arc<Shared>,
) {
    let mut out = BytesMut::new();
    let mut written = Vec::new();
    let max_body = shared.config.reply_bytes_bound();
    while let Some((r, permit)) = rx.recv().await {
        encode(&r, &mut out, max_body);
        written.push(permit);
        // Batch what is ready into one write.
        while out.len() < (1 << 20) {
            match rx.try_recv() {
                Ok((r, permit)) => {
                    encode(&r, &mut out, max_body);
                    written.push(permit);
                }
                Err(_) => break,
            }
        }
        let write = async {
            wr.write_all(&out).await?;
            wr.flush().await
        };
        match tokio::time::timeout(timeout, write).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                shared
                    .metrics
                    .write_timeouts
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!("closing a connection that does not take its replies");
                return;
            }
        }
        // Written: the commands' permits go back, the reading side may take more.
        written.clear();
        out.clear();
        if out.capacity() > 4 << 20 {
            // One large reply does not keep its buffer for the life of the connection.
            out = BytesMut::new();
        }
    }
    let _ = wr.shutdown().await;
}

/// Appends `r`'s frame to `out`; a reply whose body would exceed `max_body` (the device's
/// `max_reply_bytes`: a last guard, every command bounds its answer before building it) is
/// replaced by a `ReplyTooLarge` error.
fn encode(r: &Response, out: &mut BytesMut, max_body: u32) {
    let mark = out.len();
    let failure = match r.encode(out) {
        Ok(()) if out.len() - mark - HEADER_LEN <= max_body as usize => None,
        Ok(()) => Some((
            Status::ReplyTooLarge,
            format!(
                "the reply is {} bytes; this device replies with at most {max_body} bytes \
                 (max_reply_bytes)",
                out.len() - mark - HEADER_LEN
            ),
        )),
        Err(e) => Some((
            Status::InternalError,
            format!("completion could not be encoded: {e}"),
        )),
    };
    if let Some((status, message)) = failure {
        out.truncate(mark);
        let fallback = Response::error(r.cid, r.nsid, r.opcode, status, message);
        // A short error message always encodes.
        let _ = fallback.encode(out);
    }
}
