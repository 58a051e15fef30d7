//! A connection driven by its callers' own threads, for [`crate::BlockingClient`] over plain
//! TCP: a call writes its frame with one system call and reads completions itself, so a
//! thread alone on its connection pays a write and a read per command, with no task or
//! thread in between.
//!
//! Several threads may share the connection; `relay` says which of them reads.

use crate::error::{Error, Result};
use crate::inflight::Shared;
use crate::relay::{completed, read_more, Ready, Relay, Slot, READ_CHUNK, READ_SLICE};
use bytes::BytesMut;
use cerberus_proto::{split_frame, Response};
use parking_lot::Mutex;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(crate) struct Direct {
    stream: TcpStream,
    writing: Mutex<()>,
    /// Held by the leader: the bytes read and not yet split into frames.
    reading: Relay<ReadState>,
    request_timeout: Option<Duration>,
}

struct ReadState {
    buf: BytesMut,
    chunk: Vec<u8>,
}

impl Direct {
    pub(crate) fn new(stream: TcpStream, request_timeout: Option<Duration>) -> Result<Direct> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(READ_SLICE))?;
        Ok(Direct {
            stream,
            writing: Mutex::new(()),
            reading: Relay::new(ReadState {
                buf: BytesMut::new(),
                chunk: vec![0; READ_CHUNK],
            }),
            request_timeout,
        })
    }

    pub(crate) fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        let _w = self.writing.lock();
        (&self.stream).write_all(frame)
    }

    /// Waits for the completion `slot` is for, leading the reads when nobody else does.
    pub(crate) fn wait(&self, shared: &Shared, slot: &mut Slot) -> Result<Response> {
        let deadline = self.request_timeout.map(|t| Instant::now() + t);
        self.reading
            .drive(deadline, &mut || completed(slot), |state, ready| {
                self.lead(shared, state, ready, deadline)
            })
    }

    fn lead(
        &self,
        shared: &Shared,
        state: &mut ReadState,
        ready: &mut Ready<'_, Response>,
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
            if let Some(r) = ready() {
                return r;
            }
            if handed {
                self.reading.bump();
            }
            read_more(&self.stream, chunk, buf, shared, deadline, "frame")?;
        }
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}
