//! One client connection: reads frames, checks access, hands commands to the workers and writes
//! completions back as they finish, in any order.
//!
//! Authentication and Identify are answered here, on the network thread, in the order they
//! arrive, so a command sent after an Authenticate sees its effect. Every other command must
//! pass the access check before it is queued; a refused command never reaches the engine.

use crate::dispatch::Shared;
use crate::iterators::ConnIterators;
use crate::workers::{panic_message, Workers};
use bytes::BytesMut;
use cerberus_proto::{
    split_frame, Command, Frame, ProtoError, Reply, Request, Response, Status, DEVICE_NSID,
};
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};

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

pub async fn serve<S>(
    stream: S,
    shared: Arc<Shared>,
    workers: Arc<Workers>,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(stream);
    let (tx, rx) = mpsc::unbounded_channel::<Response>();
    let writer = tokio::spawn(write_loop(wr, rx));
    let inflight = Arc::new(Semaphore::new(shared.config.max_inflight as usize));
    let max_body = shared.config.max_frame_body();
    let mut session = Session::default();
    let idle = Duration::from_secs(u64::from(shared.config.iterator_idle_secs));
    let iters = Arc::new(ConnIterators::new(shared.config.max_iterators, idle));
    // Idle iterators are closed even while the client sends nothing.
    let mut sweep = tokio::time::interval((idle / 4).max(Duration::from_millis(100)));
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut buf = BytesMut::with_capacity(64 << 10);
    let mut stopping = false;
    'conn: loop {
        loop {
            match split_frame(&mut buf, max_body) {
                Ok(Some(frame)) => {
                    if stopping {
                        refuse(
                            &shared,
                            &tx,
                            &frame,
                            Status::ShuttingDown,
                            "device is stopping",
                        );
                        continue;
                    }
                    // Backpressure: at the in-flight limit, stop reading this connection.
                    let permit = tokio::select! {
                        p = inflight.clone().acquire_owned() => match p {
                            Ok(p) => p,
                            Err(_) => break 'conn,
                        },
                        _ = stopped(&mut stop) => {
                            stopping = true;
                            refuse(&shared, &tx, &frame, Status::ShuttingDown, "device is stopping");
                            continue;
                        }
                    };
                    handle(frame, &mut session, permit, &shared, &workers, &tx, &iters);
                }
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
                    if let Some(h) = h {
                        shared.metrics.record_refused(h.opcode);
                        let _ = tx.send(Response::error(
                            h.cid,
                            h.nsid,
                            h.opcode,
                            e.status(),
                            e.to_string(),
                        ));
                    }
                    tracing::debug!(error = %e, "closing connection after a bad frame");
                    break 'conn;
                }
            }
        }
        if stopping {
            break;
        }
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => {
                    if !buf.is_empty() {
                        tracing::debug!(bytes = buf.len(), "client left mid-frame");
                    }
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "read failed");
                    break;
                }
            },
            _ = stopped(&mut stop) => stopping = true,
            _ = sweep.tick() => {
                let closed = iters.sweep();
                if closed > 0 {
                    tracing::debug!(closed, "closed idle iterators");
                }
            }
        }
    }
    // In-flight jobs hold senders: the writer ends once the last of them has answered.
    drop(tx);
    let _ = writer.await;
}

fn refuse(
    shared: &Shared,
    tx: &mpsc::UnboundedSender<Response>,
    frame: &Frame,
    status: Status,
    msg: &str,
) {
    let h = &frame.header;
    shared.metrics.record_refused(h.opcode);
    let _ = tx.send(Response::error(
        h.cid,
        h.nsid,
        h.opcode,
        status,
        msg.to_string(),
    ));
}

fn handle(
    frame: Frame,
    session: &mut Session,
    permit: OwnedSemaphorePermit,
    shared: &Arc<Shared>,
    workers: &Workers,
    tx: &mpsc::UnboundedSender<Response>,
    iters: &Arc<ConnIterators>,
) {
    let arrived = Instant::now();
    let cmd = match Command::decode(&frame) {
        Ok(c) => c,
        Err(e) => {
            shared
                .metrics
                .protocol_errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            refuse(shared, tx, &frame, e.status(), &e.to_string());
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
            let _ = tx.send(resp);
            return;
        }
        Request::Identify => {
            shared
                .metrics
                .record(DEVICE_NSID, opcode, true, arrived.elapsed());
            let _ = tx.send(Response {
                cid: cmd.cid,
                nsid: cmd.nsid,
                opcode,
                status: Status::Success,
                reply: Reply::Identify(shared.identify),
            });
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
        );
        return;
    }
    let job_shared = shared.clone();
    let job_tx = tx.clone();
    let job_iters = iters.clone();
    let submitted = workers.submit(Box::new(move || {
        let (cid, nsid) = (cmd.cid, cmd.nsid);
        // A panic must still answer the client, or it would wait for this command forever.
        let resp = match catch_unwind(AssertUnwindSafe(|| job_shared.execute(cmd, &job_iters))) {
            Ok(resp) => resp,
            Err(payload) => {
                let msg = panic_message(payload.as_ref());
                tracing::error!(nsid, opcode, panic = msg, "command panicked");
                Response::error(
                    cid,
                    nsid,
                    opcode,
                    Status::InternalError,
                    format!(
                        "the command panicked in the device ({msg}); the device is still serving"
                    ),
                )
            }
        };
        let ok = resp.status.is_success();
        job_shared
            .metrics
            .record(nsid, opcode, ok, arrived.elapsed());
        let _ = job_tx.send(resp);
        drop(permit);
    }));
    if !submitted {
        refuse(
            shared,
            tx,
            &frame,
            Status::ShuttingDown,
            "device is stopping",
        );
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut wr: W, mut rx: mpsc::UnboundedReceiver<Response>) {
    let mut out = BytesMut::with_capacity(64 << 10);
    while let Some(r) = rx.recv().await {
        encode(&r, &mut out);
        // Batch what is ready into one write.
        while out.len() < (1 << 20) {
            match rx.try_recv() {
                Ok(r) => encode(&r, &mut out),
                Err(_) => break,
            }
        }
        if wr.write_all(&out).await.is_err() || wr.flush().await.is_err() {
            return;
        }
        out.clear();
    }
    let _ = wr.shutdown().await;
}

fn encode(r: &Response, out: &mut BytesMut) {
    let mark = out.len();
    if let Err(e) = r.encode(out) {
        out.truncate(mark);
        let fallback = Response::error(
            r.cid,
            r.nsid,
            r.opcode,
            Status::InternalError,
            format!("completion could not be encoded: {e}"),
        );
        // A short error message always encodes.
        let _ = fallback.encode(out);
    }
}
