//! A client's connection over NVMe/TCP: each native command frame goes to the device as the
//! vendor pair (Submit, then Fetch) on one I/O queue, several commands in flight, and the
//! response frame Fetch brings back completes the caller as a native completion would. A
//! point command the KV command set says as well (a Retrieve, Exist or Delete, or a Store
//! without sync whose value fits in the capsule, of a key of at most 16 bytes, on a
//! namespace this connection authenticated for) goes as that one KV command instead: one
//! exchange instead of two, its completion made into the native response. The in-flight
//! bookkeeping is the native connection's; only the bytes' route differs.

use crate::connection::CloseOnExit;
use crate::error::{Error, Result};
use crate::inflight::Shared;
use crate::nvme::{NvmeError, NvmeHost, NvmeTarget, VendorReply};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    Digests, KvCommand, KvOpcode, NvmeStatus, Pdu, MAX_KV_KEY, STORE_ONLY_IF_ABSENT,
    STORE_ONLY_IF_PRESENT,
};
use cerberus_proto::{
    split_frame, Command, Frame, Header, Opcode, Reply, Request, Response, Status, StoreMode,
    HEADER_LEN,
};
use std::collections::HashSet;
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

/// Vendor pairs sent and not yet completed on the queue at most: the responses the target
/// keeps unfetched per queue, and its backlog behind a Submit waiting for its R2T data.
const DEPTH: usize = 8;

/// Commands in flight at most, KV commands included: the queue's entries less one.
const MAX_FLIGHTS: usize = crate::nvme::QUEUE_ENTRIES as usize - 1;

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
    /// Sent as this KV command (one exchange) instead of the vendor pair.
    kv: Option<KvOpcode>,
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
    let mut flights: Vec<Flight> = Vec::with_capacity(MAX_FLIGHTS);
    // The namespaces an Authenticate succeeded for on this connection: only their point
    // commands take the KV route (the vendor pair says "not authenticated" for the others,
    // as the native port does).
    let mut authed = HashSet::new();
    loop {
        let step = tokio::select! {
            frame = frames.recv(), if room(&flights) => match frame {
                Some(frame) => {
                    let mut step = send(&mut host, frame, &shared, &mut flights, &authed).await;
                    // Frames queued behind it go out with it, in one write.
                    while step.is_ok() && room(&flights) {
                        let Ok(frame) = frames.try_recv() else { break };
                        step = send(&mut host, frame, &shared, &mut flights, &authed).await;
                    }
                    step.and(host.io.flush().await.map_err(|e| e.to_string()))
                }
                None => return,
            },
            pdu = host.io.recv(), if !flights.is_empty() => match pdu {
                Ok(pdu) => receive(&mut host, pdu, &shared, &mut flights, &mut authed).await,
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(why) = step {
            shared.close(format!("NVMe/TCP I/O queue: {why}"));
            return;
        }
    }
}

/// Whether another frame may be taken: it may go as a pair, so only while another pair fits.
fn room(flights: &[Flight]) -> bool {
    flights.len() < MAX_FLIGHTS && flights.iter().filter(|f| f.kv.is_none()).count() < DEPTH
}

async fn send(
    host: &mut NvmeHost,
    frame: Bytes,
    shared: &Shared,
    flights: &mut Vec<Flight>,
    authed: &HashSet<u32>,
) -> std::result::Result<(), String> {
    let Some(header) = frame.get(..HEADER_LEN).and_then(|h| h.try_into().ok()) else {
        return Ok(()); // the connection encoded it: never short
    };
    let header = Header::decode(header);
    let max = shared.max_response_body.load(Ordering::Relaxed);
    if authed.contains(&header.nsid) {
        if let Some((cmd, value)) = as_kv(&header, &frame, max, host.in_capsule) {
            let cid = host.io.queue_kv(header.nsid, &cmd, value);
            flights.push(Flight {
                header,
                frame,
                submit: cid,
                fetch: None,
                buffer: cmd.size,
                max,
                submitted: None,
                data: BytesMut::new(),
                kv: Some(cmd.opcode),
            });
            return Ok(());
        }
    }
    send_pair(host, header, frame, max, flights).await
}

/// Sends native `frame` as the vendor pair's Submit (its Fetch follows its completion).
async fn send_pair(
    host: &mut NvmeHost,
    header: Header,
    frame: Bytes,
    max: u32,
    flights: &mut Vec<Flight>,
) -> std::result::Result<(), String> {
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
        kv: None,
    });
    Ok(())
}

/// The KV command native `frame` is, with the value it carries, if the KV command set says
/// the same thing (see the module's comment); `max`: the most bytes of a response body, the
/// buffer a Retrieve offers.
fn as_kv(header: &Header, frame: &Bytes, max: u32, in_capsule: u32) -> Option<(KvCommand, Bytes)> {
    let point = [
        Opcode::Store,
        Opcode::Retrieve,
        Opcode::Exist,
        Opcode::Delete,
    ];
    if !point.iter().any(|o| *o as u8 == header.opcode) {
        return None;
    }
    let frame = Frame {
        header: *header,
        body: frame.slice(HEADER_LEN..),
    };
    let cmd = Command::decode(&frame).ok()?;
    let short = |key: &Bytes| !key.is_empty() && key.len() <= MAX_KV_KEY;
    let kv = |opcode, key: &Bytes, size, options| KvCommand {
        opcode,
        key: key.to_vec(),
        size,
        options,
    };
    Some(match cmd.request {
        Request::Retrieve { key } if short(&key) => {
            (kv(KvOpcode::Retrieve, &key, max, 0), Bytes::new())
        }
        Request::Exist { key } if short(&key) => (kv(KvOpcode::Exist, &key, 0, 0), Bytes::new()),
        Request::Delete { key } if short(&key) => (kv(KvOpcode::Delete, &key, 0, 0), Bytes::new()),
        Request::Store {
            key,
            value,
            mode,
            sync: false,
        } if short(&key) && !value.is_empty() && value.len() <= in_capsule as usize => {
            let options = match mode {
                StoreMode::Always => 0,
                StoreMode::OnlyIfAbsent => STORE_ONLY_IF_ABSENT,
                StoreMode::OnlyIfPresent => STORE_ONLY_IF_PRESENT,
            };
            let size = value.len() as u32;
            (kv(KvOpcode::Store, &key, size, options), value)
        }
        _ => return None,
    })
}

/// One PDU from the target: an R2T for a Submit's frame, a Fetch's data, or a completion.
async fn receive(
    host: &mut NvmeHost,
    pdu: Pdu,
    shared: &Shared,
    flights: &mut Vec<Flight>,
    authed: &mut HashSet<u32>,
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
    if flights[at].kv.is_some() {
        return match receive_kv(pdu, shared, flights, at)? {
            None => Ok(()),
            // An invalid namespace: the vendor pair brings the native answer (a destroyed
            // namespace, a revoked grant).
            Some(f) => {
                authed.remove(&f.header.nsid);
                send_pair(host, f.header, f.frame, f.max, flights).await
            }
        };
    }
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
            let frame = complete(&f.header, reply, f.max)?;
            if frame.header.opcode == Opcode::Authenticate as u8
                && frame.header.word == Status::Success.code()
            {
                authed.insert(frame.header.nsid);
            }
            shared.complete(frame);
            Ok(())
        }
        other => Err(format!("unexpected PDU {:?}", other.pdu_type())),
    }
}

/// A PDU for a command sent as a KV command: its data (a Retrieve's value) or its
/// completion, which completes the caller with the native response it stands for; or,
/// refused as an invalid namespace, the flight to send again as the vendor pair.
fn receive_kv(
    pdu: Pdu,
    shared: &Shared,
    flights: &mut Vec<Flight>,
    at: usize,
) -> std::result::Result<Option<Flight>, String> {
    let f = &mut flights[at];
    match pdu {
        Pdu::C2HData { datao, data, .. }
            if datao as usize == f.data.len() && f.data.len() + data.len() <= f.buffer as usize =>
        {
            f.data.extend_from_slice(&data);
            Ok(None)
        }
        // "Invalid namespace": not carried out; whether the namespace is gone or this host
        // lost its grant, the pair's native answer says.
        Pdu::CapsuleResp { cqe } if (cqe.status.sct, cqe.status.sc) == (0, 0x0B) => {
            Ok(Some(flights.swap_remove(at)))
        }
        Pdu::CapsuleResp { cqe } => {
            let f = flights.swap_remove(at);
            let h = f.header;
            let response = match (cqe.status.is_success(), f.kv) {
                (true, Some(KvOpcode::Retrieve)) if cqe.dw0 as usize == f.data.len() => Response {
                    cid: h.cid,
                    nsid: h.nsid,
                    opcode: h.opcode,
                    status: Status::Success,
                    reply: Reply::Value(f.data.freeze()),
                },
                (true, Some(KvOpcode::Retrieve)) => {
                    return Err(format!(
                        "a Retrieve brought {} of the value's {} bytes",
                        f.data.len(),
                        cqe.dw0
                    ))
                }
                (true, _) => Response {
                    cid: h.cid,
                    nsid: h.nsid,
                    opcode: h.opcode,
                    status: Status::Success,
                    reply: Reply::Empty,
                },
                (false, _) => {
                    let (status, msg) = kv_refusal(cqe.status, h.nsid);
                    Response::error(h.cid, h.nsid, h.opcode, status, msg)
                }
            };
            let mut out = BytesMut::new();
            response.encode(&mut out).map_err(|e| e.to_string())?;
            match split_frame(&mut out, f.max) {
                Ok(Some(frame)) if out.is_empty() => {
                    shared.complete(frame);
                    Ok(None)
                }
                _ => Err("a KV completion made no response frame".into()),
            }
        }
        other => Err(format!(
            "unexpected PDU {:?} for a KV command",
            other.pdu_type()
        )),
    }
}

/// A KV command's failure status as the native status its command would have had: the
/// device answers the native codes 0x85-0x89 as the KV command set's (type 1), the others as
/// the vendor pair's.
fn kv_refusal(s: NvmeStatus, nsid: u32) -> (Status, String) {
    if s.sct != 1 {
        return refusal(s, nsid);
    }
    match Status::from_code(u16::from(s.sc)) {
        Status::KeyNotExist => (Status::KeyNotExist, String::new()),
        status @ (Status::InvalidValueSize | Status::InvalidKeySize | Status::KeyExists) => (
            status,
            format!("refused by the KV command set ({status:?})"),
        ),
        _ => refusal(s, nsid),
    }
}

/// The response frame that completes the caller of `header`'s command, from the pair's
/// outcome; an error if the response cannot be trusted (the queue is then closed).
fn complete(header: &Header, reply: VendorReply, max: u32) -> std::result::Result<Frame, String> {
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
        Ok(Some(frame)) if data.is_empty() && frame.header.cid == header.cid => Ok(frame),
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

    fn frame(request: Request) -> (Header, Bytes) {
        let cmd = Command {
            cid: 9,
            nsid: 3,
            request,
        };
        let mut out = BytesMut::new();
        cmd.encode(&mut out).unwrap();
        let out = out.freeze();
        let header = Header::decode(out[..HEADER_LEN].try_into().unwrap());
        (header, out)
    }

    fn kv_of(request: Request) -> Option<(KvCommand, Bytes)> {
        let (header, bytes) = frame(request);
        as_kv(&header, &bytes, 1 << 20, 8192)
    }

    #[test]
    fn point_commands_on_short_keys_go_as_kv_commands_and_the_rest_as_the_pair() {
        let key = |n: usize| Bytes::from(vec![b'k'; n]);
        let (get, none) = kv_of(Request::Retrieve { key: key(16) }).unwrap();
        assert_eq!(
            (get.opcode, get.key.len(), get.size),
            (KvOpcode::Retrieve, 16, 1 << 20)
        );
        assert!(none.is_empty());
        let put = Request::Store {
            key: key(4),
            value: Bytes::from_static(b"value"),
            mode: StoreMode::OnlyIfAbsent,
            sync: false,
        };
        let (store, value) = kv_of(put).unwrap();
        assert_eq!(
            (store.opcode, store.size, store.options, &value[..]),
            (KvOpcode::Store, 5, STORE_ONLY_IF_ABSENT, &b"value"[..])
        );
        assert_eq!(
            kv_of(Request::Exist { key: key(1) }).unwrap().0.opcode,
            KvOpcode::Exist
        );
        assert_eq!(
            kv_of(Request::Delete { key: key(2) }).unwrap().0.opcode,
            KvOpcode::Delete
        );
        // A key past 16 bytes, a synced store, a value past the capsule, or any other
        // command: the vendor pair.
        assert!(kv_of(Request::Retrieve { key: key(17) }).is_none());
        let store = |value: usize, sync| Request::Store {
            key: key(4),
            value: Bytes::from(vec![1; value]),
            mode: StoreMode::Always,
            sync,
        };
        assert!(kv_of(store(5, true)).is_none());
        assert!(kv_of(store(8193, false)).is_none());
        assert!(kv_of(store(8192, false)).is_some());
        assert!(kv_of(Request::Stats).is_none());
    }

    #[test]
    fn kv_statuses_read_as_the_native_ones() {
        let s = |sc| kv_refusal(NvmeStatus::error(1, sc), 3).0;
        assert_eq!(s(0x87), Status::KeyNotExist);
        assert_eq!(s(0x89), Status::KeyExists);
        assert_eq!(s(0x85), Status::InvalidValueSize);
        assert_eq!(s(0x86), Status::InvalidKeySize);
        assert_eq!(s(0x10), Status::InternalError);
        let generic = kv_refusal(NvmeStatus::error(0, 0x06), 3).0;
        assert_eq!(generic, Status::InternalError);
    }

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
