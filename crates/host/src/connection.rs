//! One connection to the device, shared by every clone of a `Client`.
//!
//! Callers encode their command, register a completion slot under a fresh command id and
//! hand the frame to the writer task; the reader task splits completions off the stream and
//! fills the slot with the same id, so any number of commands can be in flight and complete
//! in any order. When either task sees the stream end or fail, the connection is closed once
//! for everyone: the slots are dropped (waiting callers get `ConnectionClosed`) and later
//! calls are refused.

use crate::direct::Direct;
use crate::error::{Error, Result};
use crate::inflight::{CloseOnExit, Shared};
use crate::nvme::QUEUE_ENTRIES;
use crate::nvme_direct::NvmeDirect;
use crate::nvme_flights::{encode_point, Native};
use crate::relay::Slot;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme;
use cerberus_proto::{split_frame, Command, Header, Identify, Request, Response, HEADER_LEN};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, oneshot};

const READ_CHUNK: usize = 64 << 10;
const WRITE_BUFFER: usize = 64 << 10;

/// The caller's side of a connection.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    link: Link,
}

/// How frames reach the stream and completions come back.
enum Link {
    /// A reader and a writer task on the runtime.
    Tasks(mpsc::UnboundedSender<Bytes>),
    /// The callers' threads themselves (blocking, plain TCP).
    Direct(Direct),
    /// The callers' threads themselves (blocking, NVMe/TCP).
    NvmeDirect(NvmeDirect),
}

impl Connection {
    /// Starts the reader and writer tasks over the two halves of a stream.
    pub(crate) fn start<R, W>(read: R, write: W) -> Connection
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::new());
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_loop(read, shared.clone()));
        shared.add_task(reader.abort_handle());
        let writer = tokio::spawn(write_loop(write, rx, shared.clone()));
        shared.add_task(writer.abort_handle());
        Connection {
            shared,
            link: Link::Tasks(tx),
        }
    }

    /// Sends the commands over NVMe/TCP through `host`'s I/O queue (see `nvme_link`).
    pub(crate) fn start_nvme(host: crate::nvme::NvmeHost) -> Connection {
        let shared = Arc::new(Shared::new());
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(crate::nvme_link::run(host, rx, shared.clone()));
        shared.add_task(task.abort_handle());
        Connection {
            shared,
            link: Link::Tasks(tx),
        }
    }

    /// A connection its callers drive from their own threads (see `direct`): calls on it
    /// block their thread, so only [`crate::BlockingClient`] makes one.
    pub(crate) fn direct(
        stream: std::net::TcpStream,
        request_timeout: Option<std::time::Duration>,
    ) -> Result<Connection> {
        Ok(Connection {
            shared: Arc::new(Shared::new()),
            link: Link::Direct(Direct::new(stream, request_timeout)?),
        })
    }

    /// An NVMe/TCP connection its callers drive from their own threads (see `nvme_direct`):
    /// `host` was connected on a runtime; from now on only the callers' threads use it.
    pub(crate) fn nvme_direct(
        host: crate::nvme::NvmeHost,
        request_timeout: Option<std::time::Duration>,
    ) -> Result<Connection> {
        Ok(Connection {
            shared: Arc::new(Shared::new()),
            link: Link::NvmeDirect(NvmeDirect::new(host, request_timeout)?),
        })
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Applies the device's limits: its `max_inflight`; requests over its `max_frame_body`
    /// refused locally; completions as large as its values and list pages accepted.
    pub(crate) fn apply_identify(&self, id: &Identify) {
        self.shared.set_max_inflight(id.max_inflight);
        self.shared.set_device(*id);
        let list_page = u64::from(id.max_list_keys) * (2 + u64::from(id.max_key_len)) + 5;
        // A batch stops at its byte budget, or holds one entry of any size.
        let entry = 6 + u64::from(id.max_key_len) + u64::from(id.max_value_len);
        let iter_batch = u64::from(id.max_iter_batch_bytes) + entry + 5;
        let largest = u64::from(id.max_value_len)
            .max(list_page)
            .max(iter_batch)
            .max(u64::from(crate::inflight::MAX_RESPONSE_BODY))
            .min(u64::from(u32::MAX)) as u32;
        self.shared
            .max_response_body
            .store(largest, Ordering::Relaxed);
    }

    /// Sends a command and waits for its completion. The command's `cid` is ignored: the
    /// connection picks an id not in flight.
    pub(crate) async fn call(&self, command: &Command) -> Result<Response> {
        let (encoded, mut wait) = self.register(command).await?;
        let Some(d) = self.driven() else {
            return match wait.await {
                Ok(result) => result,
                Err(_) => Err(Error::ConnectionClosed),
            };
        };
        let mut out = BytesMut::new();
        d.queue(&self.shared, encoded, &mut out)?;
        d.write(&self.shared, &out)?;
        d.wait(&self.shared, &mut wait)
    }

    /// Sends commands together and waits for all their completions (on a connection its
    /// callers drive, one write for all of them, as far as the link has room).
    pub(crate) async fn call_many(&self, commands: &[Command]) -> Vec<Result<Response>> {
        let Some(d) = self.driven() else {
            return futures_util::future::join_all(commands.iter().map(|c| self.call(c))).await;
        };
        let closed = || {
            commands
                .iter()
                .map(|_| Err(Error::ConnectionClosed))
                .collect()
        };
        let mut out = d.out_for(commands);
        let mut waiting = std::collections::VecDeque::with_capacity(commands.len());
        let mut done = Vec::with_capacity(commands.len());
        let mut take_oldest = |waiting: &mut std::collections::VecDeque<Result<_>>| {
            if let Some(w) = waiting.pop_front() {
                done.push(w.and_then(|mut w| d.wait(&self.shared, &mut w)));
            }
        };
        for c in commands {
            // Out of in-flight slots: send what is registered and take the oldest completion,
            // which gives a slot back (nobody else may be reading for this thread).
            while !waiting.is_empty() && self.shared.at_limit() {
                if d.write(&self.shared, &out).is_err() {
                    return closed();
                }
                out.clear();
                take_oldest(&mut waiting);
            }
            let queued = match self.register(c).await {
                Ok((encoded, wait)) => d.queue(&self.shared, encoded, &mut out).map(|()| wait),
                Err(e) => Err(e),
            };
            waiting.push_back(queued);
        }
        if d.write(&self.shared, &out).is_err() {
            return closed();
        }
        while !waiting.is_empty() {
            take_oldest(&mut waiting);
        }
        done
    }

    /// The link, if the callers' threads drive it.
    fn driven(&self) -> Option<Driven<'_>> {
        match &self.link {
            Link::Tasks(_) => None,
            Link::Direct(d) => Some(Driven::Native(d)),
            Link::NvmeDirect(d) => Some(Driven::Nvme(d)),
        }
    }

    /// Checks and encodes a command, takes an in-flight slot and a command id, and registers
    /// the caller; on a connection with tasks, queues the frame too. A point command for an
    /// NVMe/TCP queue its callers drive is not encoded: it goes as a KV command if it can.
    async fn register(&self, command: &Command) -> Result<(Encoded, Slot)> {
        if let Some(key) = command.request.key().or(match &command.request {
            Request::List { start, .. } => Some(start),
            _ => None,
        }) {
            if key.len() > usize::from(u16::MAX) {
                return Err(Error::InvalidKeySize(format!(
                    "a key of {} bytes is longer than the protocol carries ({})",
                    key.len(),
                    u16::MAX
                )));
            }
        }
        let point = command.point_header();
        let (mut encoded, body) = match point {
            Some(header) if matches!(self.link, Link::NvmeDirect(_)) => (
                Encoded::Point(header, command.request.clone()),
                header.body_len as usize,
            ),
            _ => {
                // Sized for a point command's frame: no reallocation as it is written.
                let size = point.map_or(0, |h| HEADER_LEN + h.body_len as usize);
                let mut frame = BytesMut::with_capacity(size);
                command.encode(&mut frame)?;
                let body = frame.len() - HEADER_LEN;
                (Encoded::Frame(frame), body)
            }
        };
        if let Some(max) = self.shared.max_request_body() {
            if body > max as usize {
                let msg =
                    format!("a request body of {body} bytes is over the device's limit of {max}");
                return Err(match &command.request {
                    // Said in the device's words when its limits are known: the value (or
                    // key) is what is too large, not the frame the client would build.
                    Request::Store { key, value, .. } => self
                        .shared
                        .store_refusal(key, value)
                        .unwrap_or(Error::InvalidValueSize(msg)),
                    _ => Error::Protocol(msg),
                });
            }
        }
        let permit = self.shared.permit().await?;
        let (slot, wait) = oneshot::channel();
        // Registering and queueing the frame happen under one lock with no await, so a
        // caller dropped while waiting never leaves a slot for a command never sent.
        self.shared
            .register(slot, permit, |cid| match &mut encoded {
                Encoded::Frame(frame) => {
                    frame[4..8].copy_from_slice(&cid.to_le_bytes());
                    match &self.link {
                        Link::Tasks(frames) => frames.send(frame.split().freeze()).is_ok(),
                        Link::Direct(_) | Link::NvmeDirect(_) => true,
                    }
                }
                // Only for `Link::NvmeDirect` (above): its caller queues it.
                Encoded::Point(header, _) => {
                    header.cid = cid;
                    true
                }
            })?;
        Ok((encoded, wait))
    }
}

/// What [`Connection::register`] made of a command for its link.
enum Encoded {
    /// The native frame.
    Frame(BytesMut),
    /// A point command not encoded: its frame's header (with its command id) and request.
    Point(Header, Request),
}

/// A link the callers' threads drive: a call queues its frame's bytes, writes them, and
/// waits for its completion, reading for others meanwhile.
enum Driven<'a> {
    Native(&'a Direct),
    Nvme(&'a NvmeDirect),
}

impl Driven<'_> {
    /// Adds what a registered command goes as to `out`; on NVMe/TCP, once the queue has room
    /// (if the caller gives up first, the command is forgotten: it was never sent).
    fn queue(&self, shared: &Shared, encoded: Encoded, out: &mut BytesMut) -> Result<()> {
        match self {
            Driven::Native(_) => {
                let frame = match encoded {
                    Encoded::Frame(frame) => frame,
                    // Never made for the native wire (see `register`).
                    Encoded::Point(header, request) => encode_point(&header, request)?,
                };
                // A call alone takes the frame as it is: no copy.
                if out.is_empty() {
                    *out = frame;
                } else {
                    out.extend_from_slice(&frame);
                }
                Ok(())
            }
            Driven::Nvme(d) => {
                let (cid, native) = match encoded {
                    Encoded::Frame(frame) => {
                        let cid = frame.get(4..8).and_then(|b| b.try_into().ok());
                        (cid.map(u32::from_le_bytes), Native::Frame(frame.freeze()))
                    }
                    Encoded::Point(header, request) => {
                        (Some(header.cid), Native::Point(header, request))
                    }
                };
                let queued = d.enqueue(shared, native, out);
                if let (Err(_), Some(cid)) = (&queued, cid) {
                    shared.abandon(cid);
                }
                queued
            }
        }
    }

    /// Most bytes of a Store's value a batch's buffer is sized for (the device's in-capsule
    /// size by default; a target may take more or less).
    const IN_CAPSULE: usize = 8 << 10;

    /// A buffer for `commands`' bytes: on NVMe/TCP room for as many capsules and the
    /// values that go in them (a batch would grow it five times over); natively the first
    /// frame becomes it.
    fn out_for(&self, commands: &[Command]) -> BytesMut {
        match self {
            Driven::Native(_) => BytesMut::new(),
            Driven::Nvme(_) => {
                let capsule = nvme::CH_LEN + nvme::SQE_LEN;
                let bytes = (commands.iter().take(usize::from(QUEUE_ENTRIES)))
                    .map(|c| match &c.request {
                        // In the capsule when it fits the target's in-capsule size; a larger
                        // one goes through R2T, and is not reserved for.
                        Request::Store { value, .. } => capsule + value.len().min(Self::IN_CAPSULE),
                        _ => capsule,
                    })
                    .sum();
                BytesMut::with_capacity(bytes)
            }
        }
    }

    fn write(&self, shared: &Shared, out: &[u8]) -> Result<()> {
        match self {
            Driven::Native(d) => {
                if out.is_empty() {
                    return Ok(());
                }
                d.send(out).map_err(|e| {
                    shared.close(format!("writing to the device: {e}"));
                    Error::ConnectionClosed
                })
            }
            Driven::Nvme(d) => d.write(shared, out),
        }
    }

    fn wait(&self, shared: &Shared, slot: &mut Slot) -> Result<Response> {
        match self {
            Driven::Native(d) => d.wait(shared, slot),
            Driven::Nvme(d) => d.wait(shared, slot),
        }
    }
}

impl Drop for Connection {
    /// The last `Client` is gone: stop the tasks (which closes the stream).
    fn drop(&mut self) {
        self.shared.close("the client was dropped");
    }
}

async fn read_loop<R: AsyncRead + Unpin>(mut read: R, shared: Arc<Shared>) {
    let _close = CloseOnExit(shared.clone());
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        loop {
            let max = shared.max_response_body.load(Ordering::Relaxed);
            match split_frame(&mut buf, max) {
                Ok(Some(frame)) => shared.complete(frame),
                Ok(None) => break,
                Err(e) => {
                    // Framing is lost: nothing after this can be trusted.
                    shared.close(format!("unreadable frame from the device: {e}"));
                    return;
                }
            }
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        match read.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => {
                shared.close("the device closed the connection");
                return;
            }
            Ok(0) => {
                shared.close("the device closed the connection in the middle of a frame");
                return;
            }
            Ok(_) => {}
            Err(e) => {
                shared.close(format!("reading from the device: {e}"));
                return;
            }
        }
    }
}

/// Writes frames as they come, through a buffer flushed whenever the queue is momentarily
/// empty: many small frames from concurrent callers leave in few writes.
async fn write_loop<W: AsyncWrite + Unpin>(
    write: W,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) {
    let _close = CloseOnExit(shared.clone());
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, write);
    while let Some(frame) = frames.recv().await {
        if let Err(e) = write_batch(&mut out, frame, &mut frames).await {
            shared.close(format!("writing to the device: {e}"));
            return;
        }
    }
    // Every client handle is gone.
    let _ = out.shutdown().await;
}

async fn write_batch<W: AsyncWrite + Unpin>(
    out: &mut BufWriter<W>,
    first: Bytes,
    frames: &mut mpsc::UnboundedReceiver<Bytes>,
) -> std::io::Result<()> {
    out.write_all(&first).await?;
    while let Ok(frame) = frames.try_recv() {
        out.write_all(&frame).await?;
    }
    out.flush().await
}
