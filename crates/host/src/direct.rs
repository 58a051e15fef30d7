//! A connection driven by its callers' own threads, for [`crate::BlockingClient`] over plain
//! TCP: a call writes its frame with one system call and reads completions itself, so a
//! thread alone on its connection pays a write and a read per command, with no task or
//! thread in between.
//!
//! Several threads may share the connection. The first to find the read side free leads: it
//! reads completions and hands each to its caller, until its own arrives; the others wait on
//! a condition variable and look again whenever the leader has handed something out or
//! stepped down.

use crate::error::{Error, Result};
use crate::inflight::Shared;
use bytes::BytesMut;
use cerberus_proto::{split_frame, Response};
use parking_lot::{Condvar, Mutex};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

const READ_CHUNK: usize = 64 << 10;

/// How long a leader blocks in one read before it looks at its deadline again.
const READ_SLICE: Duration = Duration::from_millis(200);

pub(crate) struct Direct {
    stream: TcpStream,
    writing: Mutex<()>,
    /// Held by the leader: the bytes read and not yet split into frames.
    reading: Mutex<ReadState>,
    /// Bumped whenever followers should look again.
    turn: Mutex<u64>,
    changed: Condvar,
    request_timeout: Option<Duration>,
}

struct ReadState {
    buf: BytesMut,
    chunk: Vec<u8>,
}

type Slot = oneshot::Receiver<Result<Response>>;

impl Direct {
    pub(crate) fn new(stream: TcpStream, request_timeout: Option<Duration>) -> Result<Direct> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(READ_SLICE))?;
        Ok(Direct {
            stream,
            writing: Mutex::new(()),
            reading: Mutex::new(ReadState {
                buf: BytesMut::new(),
                chunk: vec![0; READ_CHUNK],
            }),
            turn: Mutex::new(0),
            changed: Condvar::new(),
            request_timeout,
        })
    }

    pub(crate) fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        let _w = self.writing.lock();
        (&self.stream).write_all(frame)
    }

    fn bump(&self) {
        *self.turn.lock() += 1;
        self.changed.notify_all();
    }

    /// Waits for the completion `slot` is for, leading the reads when nobody else does.
    pub(crate) fn wait(&self, shared: &Shared, slot: &mut Slot) -> Result<Response> {
        let deadline = self.request_timeout.map(|t| Instant::now() + t);
        loop {
            let seen = *self.turn.lock();
            match slot.try_recv() {
                Ok(r) => return r,
                Err(oneshot::error::TryRecvError::Closed) => return Err(Error::ConnectionClosed),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if let Some(mut state) = self.reading.try_lock() {
                let r = self.lead(shared, &mut state, slot, deadline);
                drop(state);
                // Somebody else may have to read now.
                self.bump();
                return r;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::Timeout);
            }
            let mut turn = self.turn.lock();
            if *turn == seen {
                self.changed.wait_for(&mut turn, READ_SLICE);
            }
        }
    }

    fn lead(
        &self,
        shared: &Shared,
        state: &mut ReadState,
        slot: &mut Slot,
        deadline: Option<Instant>,
    ) -> Result<Response> {
        let ReadState { buf, chunk } = state;
        loop {
            let mut handed = false;
            loop {
                let max = shared.max_response_body.load(Ordering::Relaxed);
                match split_frame(buf, max) {
                    Ok(Some(frame)) => {
                        shared.complete(frame);
                        handed = true;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        shared.close(format!("unreadable frame from the device: {e}"));
                        return Err(Error::ConnectionClosed);
                    }
                }
            }
            match slot.try_recv() {
                Ok(r) => return r,
                Err(oneshot::error::TryRecvError::Closed) => return Err(Error::ConnectionClosed),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if handed {
                self.bump();
            }
            match (&self.stream).read(chunk) {
                Ok(0) => {
                    let why = if buf.is_empty() {
                        "the device closed the connection"
                    } else {
                        "the device closed the connection in the middle of a frame"
                    };
                    shared.close(why);
                    return Err(Error::ConnectionClosed);
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::Timeout);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    shared.close(format!("reading from the device: {e}"));
                    return Err(Error::ConnectionClosed);
                }
            }
        }
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
