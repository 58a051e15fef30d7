//! An NVMe/TCP I/O queue driven by its callers' own threads, for [`crate::BlockingClient`]
//! over `Wire::Nvme`: the counterpart of `direct` for the native wire. A call turns its
//! native frame into its first PDU (`nvme_flights`) and writes it with one system call (a
//! batch, all of its PDUs in one); then the first thread to find the read side free leads:
//! it reads PDUs, feeds them to the flights, writes what they call for (the H2CData an R2T
//! asks for, the Fetch after a Submit) and hands the native completions to their callers,
//! until its own arrives. The others wait on a condition variable and look again whenever
//! the leader has handed something out or stepped down. No task or channel is in between.
//!
//! The queue takes only so many commands (`Flights::room`): a caller that finds no room
//! writes what it has queued and waits for some, leading the reads if nobody does.
//!
//! The controller was connected (on the runtime) without a keep-alive timeout, so its admin
//! queue needs nothing sent; it is only held open, since the device forgets the controller,
//! and ends its I/O queue, when the admin queue closes.

use crate::error::{Error, Result};
use crate::inflight::Shared;
use crate::nvme::{NvmeHost, MAX_PDU_DATA};
use crate::nvme_flights::{Broken, Flights, Native};
use crate::relay::{completed, read_more, Ready, Relay, Slot, READ_CHUNK, READ_SLICE};
use bytes::BytesMut;
use cerberus_proto::nvme::{split_pdu, Digests, Pdu, PduLimits};
use cerberus_proto::{Frame, Response};
use parking_lot::Mutex;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(crate) struct NvmeDirect {
    stream: TcpStream,
    admin: TcpStream,
    digests: Digests,
    flights: Mutex<Flights>,
    writing: Mutex<()>,
    /// Held by the leader: the bytes read and not yet split into PDUs.
    reading: Relay<ReadState>,
    request_timeout: Option<Duration>,
}

struct ReadState {
    buf: BytesMut,
    chunk: Vec<u8>,
    /// What the PDUs read call for, written before the leader reads again.
    out: BytesMut,
    done: Vec<Frame>,
}

impl NvmeDirect {
    /// Takes over `host`'s queues (connected on a runtime) as blocking sockets.
    pub(crate) fn new(host: NvmeHost, request_timeout: Option<Duration>) -> Result<NvmeDirect> {
        let (digests, maxh2cdata) = (host.io.digests(), host.io.maxh2cdata());
        let flights = Flights::new(digests, maxh2cdata, host.in_capsule);
        let (stream, buf) = host.io.into_std().map_err(Error::from)?;
        let (admin, _) = host.admin.into_std().map_err(Error::from)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(READ_SLICE))?;
        Ok(NvmeDirect {
            stream,
            admin,
            digests,
            flights: Mutex::new(flights),
            writing: Mutex::new(()),
            reading: Relay::new(ReadState {
                buf,
                chunk: vec![0; READ_CHUNK],
                out: BytesMut::new(),
                done: Vec::new(),
            }),
            request_timeout,
        })
    }

    fn deadline(&self) -> Option<Instant> {
        self.request_timeout.map(|t| Instant::now() + t)
    }

    /// Adds `frame`'s first PDU (`request`'s, which it encodes) to `out` once the queue has
    /// room for it. While it has none, writes `out` (the caller's commands queued before
    /// it) and waits for room.
    pub(crate) fn enqueue(
        &self,
        shared: &Shared,
        native: Native,
        out: &mut BytesMut,
    ) -> Result<()> {
        let deadline = self.deadline();
        loop {
            {
                let mut flights = self.flights.lock();
                if flights.room() {
                    let max = shared.max_response_body.load(Ordering::Relaxed);
                    return match flights.send(native, max, out) {
                        Ok(()) => Ok(()),
                        Err(why) => Err(fail(shared, why)),
                    };
                }
            }
            self.write(shared, out)?;
            out.clear();
            self.drive(shared, deadline, &mut || {
                if shared.is_closed() {
                    Some(Err(Error::ConnectionClosed))
                } else {
                    self.flights.lock().room().then_some(Ok(()))
                }
            })?;
        }
    }

    /// Writes PDUs, in one system call when it can.
    pub(crate) fn write(&self, shared: &Shared, pdus: &[u8]) -> Result<()> {
        if pdus.is_empty() {
            return Ok(());
        }
        let _w = self.writing.lock();
        (&self.stream).write_all(pdus).map_err(|e| {
            shared.close(format!("writing to the device: {e}"));
            Error::ConnectionClosed
        })
    }

    /// Waits for the completion `slot` is for, leading the reads when nobody else does.
    pub(crate) fn wait(&self, shared: &Shared, slot: &mut Slot) -> Result<Response> {
        self.drive(shared, self.deadline(), &mut || completed(slot))
    }

    /// Waits until `ready` says something, leading the reads when nobody else does.
    fn drive<T>(
        &self,
        shared: &Shared,
        deadline: Option<Instant>,
        ready: &mut Ready<'_, T>,
    ) -> Result<T> {
        self.reading.drive(deadline, ready, |state, ready| {
            self.lead(shared, state, deadline, ready)
        })
    }

    fn lead<T>(
        &self,
        shared: &Shared,
        state: &mut ReadState,
        deadline: Option<Instant>,
        ready: &mut Ready<'_, T>,
    ) -> Result<T> {
        let ReadState {
            buf,
            chunk,
            out,
            done,
        } = state;
        loop {
            if let Err(why) = self.take_pdus(buf, out, done) {
                return Err(fail(shared, why));
            }
            let written = self.write(shared, out);
            out.clear();
            written?;
            let handed = !done.is_empty();
            for frame in done.drain(..) {
                shared.complete(frame);
            }
            if let Some(r) = ready() {
                return r;
            }
            if handed {
                self.reading.bump();
            }
            read_more(&self.stream, chunk, buf, shared, deadline, "PDU")?;
        }
    }

    /// Feeds the whole PDUs in `buf` to the flights.
    fn take_pdus(
        &self,
        buf: &mut BytesMut,
        out: &mut BytesMut,
        done: &mut Vec<Frame>,
    ) -> std::result::Result<(), Broken> {
        let limits = PduLimits::uniform(MAX_PDU_DATA);
        let mut flights = None;
        loop {
            match split_pdu(buf, self.digests, limits) {
                Ok(Some(Pdu::C2HTermReq { fes, fei, .. })) => {
                    return Err(format!(
                        "the target terminated the connection (FES {fes:#x}, FEI {fei})"
                    ))
                }
                Ok(Some(pdu)) => flights
                    .get_or_insert_with(|| self.flights.lock())
                    .receive(pdu, out, done)?,
                Ok(None) => return Ok(()),
                Err(e) => return Err(format!("bad PDU from the target: {e}")),
            }
        }
    }
}

/// Closes the connection for a queue that can no longer be trusted.
fn fail(shared: &Shared, why: Broken) -> Error {
    shared.close(format!("NVMe/TCP I/O queue: {why}"));
    Error::ConnectionClosed
}

impl Drop for NvmeDirect {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        let _ = self.admin.shutdown(std::net::Shutdown::Both);
    }
}
