//! A client's connection over NVMe/TCP: each native command frame goes to the device as the
//! vendor pair (Submit, then Fetch) on one I/O queue, several commands in flight, and the
//! response frame Fetch brings back completes the caller as a native completion would. The
//! in-flight bookkeeping is the native connection's; only the bytes' route differs.

use crate::connection::CloseOnExit;
use crate::error::{Error, Result};
use crate::inflight::Shared;
use crate::nvme::{NvmeError, NvmeHost, NvmeTarget, VendorReply};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{Digests, NvmeStatus, Pdu};
use cerberus_proto::{split_frame, Header, Response, Status, HEADER_LEN};
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

/// Commands sent and not yet completed on the queue at most: well within the queue's 32
/// entries, and the target's backlog behind a Submit waiting for its R2T data.
const DEPTH: usize = 8;

/// A command on its way: its Submit sent, then its Fetch once the Submit completed.
struct Flight {
    header: Header,
    frame: Bytes,
    submit: u16,
    /// The Fetch's command id, once sent.
    fetch: Option<u16>,
    buffer: u32,
    max: u32,
    submitted: Option<cerberus_proto::nvme::Cqe>,
    data: BytesMut,
}

/// Sends the queued frames as pairs, up to `DEPTH` commands ahead of their completions,
/// matching the target's completions by command id (in order or not), until the connection
/// closes (the last client gone: this task is aborted and the queues' sockets close with
/// it, which ends the controller at the device) or the queue fails.
pub(crate) async fn run(
    mut host: NvmeHost,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) {
    let _close = CloseOnExit(shared.clone());
    let mut flights: Vec<Flight> = Vec::with_capacity(DEPTH);
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
    flights: &mut Vec<Flight>,
) -> std::result::Result<(), String> {
    let Some(header) = frame.get(..HEADER_LEN).and_then(|h| h.try_into().ok()) else {
        return Ok(()); // the connection encoded it: never short
    };
    let header = Header::decode(header);
    let max = shared.max_response_body.load(Ordering::Relaxed);
    let submit = host
        .io
        .send_submit(header.nsid, &frame, host.in_capsule)
        .await
        .map_err(|e| e.to_string())?;
    flights.push(Flight {
        header,
        frame,
        submit,
        fetch: None,
        buffer: max.saturating_add(HEADER_LEN as u32),
        max,
        submitted: None,
        data: BytesMut::new(),
    });
    Ok(())
}

/// One PDU from the target: an R2T for a Submit's frame, a Fetch's data, or a completion.
async fn receive(
    host: &mut NvmeHost,
    pdu: Pdu,
    shared: &Shared,
    flights: &mut Vec<Flight>,
) -> std::result::Result<(), String> {
    let cid = match &pdu {
        Pdu::R2T { cccid, .. } | Pdu::C2HData { cccid, .. } => *cccid,
        Pdu::CapsuleResp { cqe } => cqe.cid,
        other => return Err(format!("unexpected PDU {:?}", other.pdu_type())),
    };
    let Some(at) = flights
        .iter()
        .position(|f| f.submit == cid || f.fetch == Some(cid))
    else {
        return Err(format!("a PDU for command {cid}, not in flight"));
    };
    let f = &mut flights[at];
    match pdu {
        Pdu::R2T {
            cccid,
            ttag,
            r2to,
            r2tl,
        } if f.fetch.is_none() => host
            .io
            .write_data(&f.frame, cccid, ttag, r2to, r2tl)
            .await
            .map_err(|e| e.to_string()),
        Pdu::C2HData { datao, data, .. }
            if f.fetch.is_some()
                && datao as usize == f.data.len()
                && f.data.len() + data.len() <= f.buffer as usize =>
        {
            f.data.extend_from_slice(&data);
            Ok(())
        }
        Pdu::CapsuleResp { cqe } if f.fetch.is_none() && cqe.status.is_success() => {
            f.submitted = Some(cqe);
            let (nsid, native) = (f.header.nsid, f.header.cid);
            let fetch = host.io.send_fetch(nsid, native, f.buffer).await;
            f.fetch = Some(fetch.map_err(|e| e.to_string())?);
            Ok(())
        }
        Pdu::CapsuleResp { cqe } => {
            let f = flights.swap_remove(at);
            let reply = match f.submitted {
                Some(submit) => VendorReply {
                    submit,
                    fetch: Some(cqe),
                    data: f.data.freeze(),
                },
                None => VendorReply {
                    submit: cqe,
                    fetch: None,
                    data: Bytes::new(),
                },
            };
            complete(shared, &f.header, reply, f.max)
        }
        other => Err(format!("unexpected PDU {:?}", other.pdu_type())),
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
    let fetched = reply.fetch.map(|c| c.status);
    let failed = [Some(reply.submit.status), fetched]
        .into_iter()
        .flatten()
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
