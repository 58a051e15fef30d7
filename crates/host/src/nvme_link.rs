//! A client's connection over NVMe/TCP: each native command frame goes to the device as the
//! vendor pair (Submit, then Fetch) on one I/O queue, several pairs in flight, and the
//! response frame Fetch brings back completes the caller as a native completion would. The in-flight bookkeeping is the
//! native connection's; only the bytes' route differs.

use crate::connection::CloseOnExit;
use crate::error::{Error, Result};
use crate::inflight::Shared;
use crate::nvme::{NvmeError, NvmeHost, NvmeTarget, VendorReply};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{Digests, NvmeStatus, Pdu};
use cerberus_proto::{split_frame, Header, Response, Status, HEADER_LEN};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The wire a client speaks to the device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// The device's own framing (`docs/protocol.md`) on its native port.
    #[default]
    Native,
    /// NVMe/TCP on the device's NVMe port: native commands through the vendor pair.
    Nvme {
        /// The subsystem's NQN.
        subnqn: String,
        /// This host's NQN, as the device's `[nvme.hosts]` grants name it.
        hostnqn: String,
    },
}

/// Connects a controller (admin and I/O queue) at `addr`.
pub(crate) async fn connect(addr: &str, subnqn: &str, hostnqn: &str) -> Result<NvmeHost> {
    let target = NvmeTarget {
        addr: addr.to_string(),
        subnqn: subnqn.to_string(),
        hostnqn: hostnqn.to_string(),
        digests: Digests::default(),
    };
    NvmeHost::connect(&target).await.map_err(|e| match e {
        NvmeError::Io(e) => Error::Io(e),
        e => Error::Protocol(format!("NVMe/TCP connect: {e}")),
    })
}

/// Pairs sent and not yet completed on the queue at most: few enough that the target's
/// backlog behind a Submit waiting for its R2T data (the queue's 32 entries) never overflows.
const DEPTH: usize = 8;

/// A pair on its way.
struct Flight {
    header: Header,
    frame: Bytes,
    submit: u16,
    fetch: u16,
    buffer: u32,
    max: u32,
    submitted: Option<cerberus_proto::nvme::Cqe>,
    data: BytesMut,
}

/// Sends the queued frames as pairs, up to `DEPTH` ahead of their completions (the target
/// answers a queue in order), until the connection closes (the last client gone: this task
/// is aborted and the queues' sockets close with it, which ends the controller at the
/// device) or the queue fails.
pub(crate) async fn run(
    mut host: NvmeHost,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) {
    let _close = CloseOnExit(shared.clone());
    let mut flights: VecDeque<Flight> = VecDeque::with_capacity(DEPTH);
    loop {
        let step = tokio::select! {
            frame = frames.recv(), if flights.len() < DEPTH => match frame {
                Some(frame) => send(&mut host, frame, &shared, &mut flights).await,
                None => return,
            },
            pdu = host.io.recv(), if !flights.is_empty() => match pdu {
                Ok(pdu) => receive(&mut host, pdu, &shared, &mut flights).await,
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(why) = step {
            shared.close(format!("NVMe/TCP I/O queue: {why}"));
            return;
        }
    }
}

async fn send(
    host: &mut NvmeHost,
    frame: Bytes,
    shared: &Shared,
    flights: &mut VecDeque<Flight>,
) -> std::result::Result<(), String> {
    let Some(header) = frame.get(..HEADER_LEN).and_then(|h| h.try_into().ok()) else {
        return Ok(()); // the connection encoded it: never short
    };
    let header = Header::decode(header);
    let max = shared.max_response_body.load(Ordering::Relaxed);
    let buffer = max.saturating_add(HEADER_LEN as u32);
    let (submit, fetch) = host
        .io
        .send_pair(header.nsid, &frame, host.in_capsule, buffer)
        .await
        .map_err(|e| e.to_string())?;
    flights.push_back(Flight {
        header,
        frame,
        submit,
        fetch,
        buffer,
        max,
        submitted: None,
        data: BytesMut::new(),
    });
    Ok(())
}

/// One PDU from the target: an R2T for a Submit's frame, a Fetch's data, or a completion
/// (the oldest pair's, in order).
async fn receive(
    host: &mut NvmeHost,
    pdu: Pdu,
    shared: &Shared,
    flights: &mut VecDeque<Flight>,
) -> std::result::Result<(), String> {
    let unexpected = |p: &Pdu| format!("unexpected PDU {:?}", p.pdu_type());
    let Some(f) = flights.front_mut() else {
        return Err(unexpected(&pdu));
    };
    match pdu {
        Pdu::R2T {
            cccid,
            ttag,
            r2to,
            r2tl,
        } if cccid == f.submit => host
            .io
            .write_data(&f.frame, cccid, ttag, r2to, r2tl)
            .await
            .map_err(|e| e.to_string()),
        Pdu::C2HData {
            cccid, datao, data, ..
        } if cccid == f.fetch
            && datao as usize == f.data.len()
            && f.data.len() + data.len() <= f.buffer as usize =>
        {
            f.data.extend_from_slice(&data);
            Ok(())
        }
        Pdu::CapsuleResp { cqe } if cqe.cid == f.submit && f.submitted.is_none() => {
            f.submitted = Some(cqe);
            Ok(())
        }
        Pdu::CapsuleResp { cqe } if cqe.cid == f.fetch && f.submitted.is_some() => {
            let Some(f) = flights.pop_front() else {
                return Ok(());
            };
            let reply = VendorReply {
                submit: f.submitted.unwrap_or(cqe),
                fetch: cqe,
                data: f.data.freeze(),
            };
            complete(shared, &f.header, reply, f.max)
        }
        other => Err(unexpected(&other)),
    }
}

/// Completes the caller of `header`'s command from the pair's outcome; an error if the
/// response cannot be trusted (the queue is then closed).
fn complete(
    shared: &Shared,
    header: &Header,
    reply: VendorReply,
    max: u32,
) -> std::result::Result<(), String> {
    let failed = [reply.submit.status, reply.fetch.status]
        .into_iter()
        .find(|s| !s.is_success());
    let mut data = match failed {
        None => BytesMut::from(&reply.data[..]),
        Some(status) => {
            let (status, msg) = refusal(status, header.nsid);
            let r = Response::error(header.cid, header.nsid, header.opcode, status, msg);
            let mut out = BytesMut::new();
            r.encode(&mut out).map_err(|e| e.to_string())?;
            out
        }
    };
    match split_frame(&mut data, max) {
        Ok(Some(frame)) if data.is_empty() && frame.header.cid == header.cid => {
            shared.complete(frame);
            Ok(())
        }
        _ => Err("NVMe/TCP: Fetch brought no response frame for the command".into()),
    }
}

/// A failure status of the pair as the native status a caller handles.
fn refusal(s: NvmeStatus, nsid: u32) -> (Status, String) {
    match (s.sct, s.sc) {
        (0, 0x0B) => (
            Status::AccessDenied,
            format!("this host NQN was not granted namespace {nsid}"),
        ),
        (0, 0x02) => (Status::InvalidField, "the device refused the frame".into()),
        _ => (
            Status::InternalError,
            format!("NVMe status type {}, code {:#x}", s.sct, s.sc),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ungranted_namespace_reads_as_access_denied() {
        let (s, msg) = refusal(NvmeStatus::error(0, 0x0B), 7);
        assert_eq!(s, Status::AccessDenied);
        assert!(msg.contains('7'));
        assert_eq!(
            refusal(NvmeStatus::error(0, 0x02), 1).0,
            Status::InvalidField
        );
        assert_eq!(
            refusal(NvmeStatus::error(0, 0x06), 1).0,
            Status::InternalError
        );
    }
}
