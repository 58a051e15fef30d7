//! The commands in flight on a client's NVMe/TCP I/O queue, without I/O: a native command in,
//! the PDU to write out; a PDU from the target in, the PDUs it calls for (the H2CData an R2T
//! asks for, the Fetch once a Submit completed, a KV command sent again as the pair) and the
//! native completion frames to hand to the callers. Both drivers of the queue use it: the
//! task on the runtime (`nvme_link::run`, for `Client`) and the callers' own threads
//! (`nvme_direct`, for `BlockingClient`).
//!
//! Each native command frame goes as the vendor pair (Submit, then Fetch), the response
//! frame Fetch brings back completing the caller as a native completion would; or, a point
//! command the KV command set says as well (a Retrieve, Exist or Delete, or a Store without
//! sync whose value fits in the capsule, of a key of at most 16 bytes, on a namespace this
//! connection authenticated for), as that one KV command: one exchange instead of two, its
//! completion made into the native response.

use crate::nvme::{data_pointer, kv_capsule, QUEUE_ENTRIES};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    Cqe, Digests, KvCommand, KvKey, KvOpcode, NvmeStatus, Pdu, Sqe, STORE_ONLY_IF_ABSENT,
    STORE_ONLY_IF_PRESENT, VENDOR_FETCH, VENDOR_SUBMIT,
};
use cerberus_proto::{
    split_frame, whole_frame, Command, Frame, Header, Opcode, Request, Response, Status, StoreMode,
    HEADER_LEN, VERSION,
};
pub(crate) use native::{encode_point, Native};
use std::collections::{HashSet, VecDeque};

/// Why the queue can no longer be trusted (the connection is then closed).
pub(crate) type Broken = String;

/// Vendor pairs sent and not yet completed on the queue at most: the responses the target
/// keeps unfetched per queue, and its backlog behind a Submit waiting for its R2T data.
const DEPTH: usize = 8;

/// Commands in flight at most, KV commands included: the queue's entries less one.
const MAX_FLIGHTS: usize = QUEUE_ENTRIES as usize - 1;

/// The buffer a KV Retrieve offers. The target charges each Retrieve its buffer against the
/// queue's byte budget until it completes (`max_queue_bytes`, 4 MiB by default): offering
/// the largest value the device takes (2 MiB) let one Retrieve at a time through, so a
/// pipeline's gets ran one by one, never as one engine read. A larger value comes whole
/// through the vendor pair after the Retrieve said its size (two exchanges, for values past
/// this only).
const RETRIEVE_BUFFER: u32 = 64 << 10;

/// A command on its way: its Submit sent, then its Fetch once the Submit completed.
struct Flight {
    header: Header,
    native: Native,
    submit: u16,
    /// The Fetch's command id, once sent.
    fetch: Option<u16>,
    buffer: u32,
    max: u32,
    submitted: Option<Cqe>,
    data: Gathered,
    /// Sent as this KV command (one exchange) instead of the vendor pair.
    kv: Option<KvOpcode>,
}

/// One I/O queue's commands in flight.
pub(crate) struct Flights {
    flights: Vec<Flight>,
    /// KV commands to send again as the pair (`Again`), once the target has room for
    /// another pair: it keeps at most `DEPTH` pairs' answers per queue.
    again: VecDeque<Flight>,
    /// The namespaces an Authenticate succeeded for on this connection: only their point
    /// commands take the KV route (the vendor pair says "not authenticated" for the others,
    /// as the native port does).
    authed: HashSet<u32>,
    /// Pairs sent and not completed (the flights without `kv`), counted as they come and go.
    pairs: usize,
    next_cid: u16,
    digests: Digests,
    maxh2cdata: u32,
    in_capsule: u32,
}

impl Flights {
    /// A queue with `digests`, the target's MAXH2CDATA and its in-capsule size.
    pub(crate) fn new(digests: Digests, maxh2cdata: u32, in_capsule: u32) -> Flights {
        Flights {
            flights: Vec::with_capacity(MAX_FLIGHTS),
            again: VecDeque::new(),
            authed: HashSet::new(),
            pairs: 0,
            next_cid: 0,
            digests,
            // The target says at least 4,096 (checked at ICResp); never 0, which would loop.
            maxh2cdata: maxh2cdata.max(1),
            in_capsule,
        }
    }

    /// Whether another frame may be taken: it may go as a pair, so only while another pair
    /// fits.
    pub(crate) fn room(&self) -> bool {
        self.flights.len() + self.again.len() < MAX_FLIGHTS
            && self.pairs() + self.again.len() < DEPTH
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.flights.is_empty() && self.again.is_empty()
    }

    /// Pairs sent and not completed.
    fn pairs(&self) -> usize {
        debug_assert_eq!(
            self.pairs,
            self.flights.iter().filter(|f| f.kv.is_none()).count()
        );
        self.pairs
    }

    /// Sends the commands waiting to go again as the pair, as far as the target has room.
    fn send_again(&mut self, out: &mut BytesMut) -> Result<(), Broken> {
        while self.pairs() < DEPTH {
            let Some(f) = self.again.pop_front() else {
                break;
            };
            let frame = f.native.into_frame().map_err(|e| e.to_string())?;
            self.send_pair(f.header, frame, f.max, out)?;
        }
        Ok(())
    }

    /// Takes a caller's command and writes its first PDU to `out`; `max`: the most bytes of
    /// a response body the caller takes. Only when [`Flights::room`].
    pub(crate) fn send(
        &mut self,
        native: Native,
        max: u32,
        out: &mut BytesMut,
    ) -> Result<(), Broken> {
        let header = match &native {
            Native::Frame(frame) => match frame.get(..HEADER_LEN).and_then(|h| h.try_into().ok()) {
                Some(header) => Header::decode(header),
                None => return Err("a native frame shorter than its header".into()),
            },
            Native::Point(header, _) => *header,
        };
        if self.authed.contains(&header.nsid) {
            let kv = match &native {
                Native::Point(_, request) => as_kv(request, max, self.in_capsule),
                Native::Frame(frame) => {
                    decode(&header, frame).and_then(|c| as_kv(&c.request, max, self.in_capsule))
                }
            };
            if let Some((cmd, value)) = kv {
                let cid = self.take_cid();
                kv_capsule(header.nsid, cid, &cmd, value).encode(self.digests, out);
                self.flights.push(Flight {
                    header,
                    native,
                    submit: cid,
                    fetch: None,
                    buffer: cmd.size,
                    max,
                    submitted: None,
                    data: Gathered::default(),
                    kv: Some(cmd.opcode),
                });
                return Ok(());
            }
        }
        let frame = native.into_frame().map_err(|e| e.to_string())?;
        self.send_pair(header, frame, max, out)
    }

    /// Sends native `frame` as the vendor pair's Submit, in the capsule if it fits (else
    /// through the target's R2T); its Fetch follows its completion.
    fn send_pair(
        &mut self,
        header: Header,
        frame: Bytes,
        max: u32,
        out: &mut BytesMut,
    ) -> Result<(), Broken> {
        let len = u32::try_from(frame.len()).map_err(|_| "a frame over 4 GiB".to_string())?;
        let inline = len <= self.in_capsule;
        let submit = self.take_cid();
        let mut sqe = Sqe {
            opcode: VENDOR_SUBMIT,
            nsid: header.nsid,
            cid: submit,
            dptr: data_pointer(len, inline),
            ..Sqe::default()
        };
        sqe.cdw[0] = len;
        let data = if inline { frame.clone() } else { Bytes::new() };
        Pdu::CapsuleCmd { sqe, data }.encode(self.digests, out);
        self.pairs += 1;
        self.flights.push(Flight {
            header,
            native: Native::Frame(frame),
            submit,
            fetch: None,
            buffer: max.saturating_add(HEADER_LEN as u32),
            max,
            submitted: None,
            data: Gathered::default(),
            kv: None,
        });
        Ok(())
    }

    /// A command id none of the flights uses (their Submits' and Fetches').
    fn take_cid(&mut self) -> u16 {
        loop {
            let cid = self.next_cid;
            self.next_cid = self.next_cid.wrapping_add(1);
            if !self
                .flights
                .iter()
                .any(|f| f.submit == cid || f.fetch == Some(cid))
            {
                return cid;
            }
        }
    }

    /// One PDU from the target: an R2T for a Submit's frame, data, or a completion. What it
    /// calls for goes to `out`, the native completions it makes to `done`.
    pub(crate) fn receive(
        &mut self,
        pdu: Pdu,
        out: &mut BytesMut,
        done: &mut Vec<Frame>,
    ) -> Result<(), Broken> {
        let cid = match &pdu {
            Pdu::R2T { cccid, .. } | Pdu::C2HData { cccid, .. } => *cccid,
            Pdu::CapsuleResp { cqe } => cqe.cid,
            other => return Err(format!("unexpected PDU {:?}", other.pdu_type())),
        };
        let Some(at) = self
            .flights
            .iter()
            .position(|f| f.submit == cid || f.fetch == Some(cid))
        else {
            return Err(format!("a PDU for command {cid}, not in flight"));
        };
        if self.flights[at].kv.is_some() {
            return match self.receive_kv(pdu, at, done)? {
                None => Ok(()),
                // An invalid namespace: the vendor pair brings the native answer (a
                // destroyed namespace, a revoked grant).
                Some(Again::Refused(f)) => {
                    self.authed.remove(&f.header.nsid);
                    self.again.push_back(f);
                    self.send_again(out)
                }
                // A value larger than the Retrieve's buffer: the pair brings it whole.
                Some(Again::Larger(f)) => {
                    self.again.push_back(f);
                    self.send_again(out)
                }
            };
        }
        // A Submit that succeeded: its Fetch goes now, under a command id of its own.
        let succeeded = match &pdu {
            Pdu::CapsuleResp { cqe } => self.flights[at].fetch.is_none() && cqe.status.is_success(),
            _ => false,
        };
        if let (true, Pdu::CapsuleResp { cqe }) = (succeeded, &pdu) {
            let fetch = self.take_cid();
            let f = &mut self.flights[at];
            f.submitted = Some(*cqe);
            f.fetch = Some(fetch);
            let mut sqe = Sqe {
                opcode: VENDOR_FETCH,
                nsid: f.header.nsid,
                cid: fetch,
                dptr: data_pointer(f.buffer, false),
                ..Sqe::default()
            };
            sqe.cdw[0] = f.buffer;
            sqe.cdw[1] = f.header.cid;
            let data = Bytes::new();
            Pdu::CapsuleCmd { sqe, data }.encode(self.digests, out);
            return Ok(());
        }
        let (digests, maxh2cdata) = (self.digests, self.maxh2cdata);
        let f = &mut self.flights[at];
        match pdu {
            Pdu::R2T {
                cccid,
                ttag,
                r2to,
                r2tl,
            } if f.fetch.is_none() => {
                let Native::Frame(frame) = &f.native else {
                    return Err("an R2T for a command not sent as the pair".into());
                };
                write_data(frame, cccid, ttag, r2to, r2tl, maxh2cdata, digests, out)
            }
            Pdu::C2HData { datao, data, .. }
                if f.fetch.is_some()
                    && datao as usize == f.data.len()
                    && f.data.len() + data.len() <= f.buffer as usize =>
            {
                f.data.push(data);
                Ok(())
            }
            Pdu::CapsuleResp { cqe } => {
                let f = self.flights.swap_remove(at);
                self.pairs -= 1;
                let (submit, fetch, data) = match f.submitted {
                    Some(submit) => (submit, Some(cqe), f.data.freeze()),
                    None => (cqe, None, Bytes::new()),
                };
                let frame = complete(&f.header, submit, fetch, data, f.max)?;
                if frame.header.opcode == Opcode::Authenticate as u8
                    && frame.header.word == Status::Success.code()
                {
                    self.authed.insert(frame.header.nsid);
                }
                done.push(frame);
                // A pair's place is free.
                self.send_again(out)
            }
            other => Err(format!("unexpected PDU {:?}", other.pdu_type())),
        }
    }

    /// A PDU for a command sent as a KV command: its data (a Retrieve's value) or its
    /// completion, which completes the caller with the native response it stands for; or
    /// the flight to send again as the vendor pair.
    fn receive_kv(
        &mut self,
        pdu: Pdu,
        at: usize,
        done: &mut Vec<Frame>,
    ) -> Result<Option<Again>, Broken> {
        let f = &mut self.flights[at];
        match pdu {
            Pdu::C2HData { datao, data, .. }
                if datao as usize == f.data.len()
                    && f.data.len() + data.len() <= f.buffer as usize =>
            {
                f.data.push(data);
                Ok(None)
            }
            // "Invalid namespace": not carried out; whether the namespace is gone or this
            // host lost its grant, the pair's native answer says.
            Pdu::CapsuleResp { cqe } if (cqe.status.sct, cqe.status.sc) == (0, 0x0B) => {
                Ok(Some(Again::Refused(self.flights.swap_remove(at))))
            }
            // The value is larger than the buffer (and than its part that came), and the
            // caller takes one that large: asked again for all of it.
            Pdu::CapsuleResp { cqe }
                if cqe.status.is_success()
                    && f.kv == Some(KvOpcode::Retrieve)
                    && cqe.dw0 > f.buffer
                    && f.data.len() == f.buffer as usize
                    && cqe.dw0 <= f.max =>
            {
                Ok(Some(Again::Larger(self.flights.swap_remove(at))))
            }
            Pdu::CapsuleResp { cqe } => {
                let f = self.flights.swap_remove(at);
                done.push(kv_response(f, cqe)?);
                Ok(None)
            }
            other => Err(format!(
                "unexpected PDU {:?} for a KV command",
                other.pdu_type()
            )),
        }
    }
}

/// A command sent as a KV command, to send again as the vendor pair.
enum Again {
    /// Refused as an invalid namespace (the pair's native answer says why).
    Refused(Flight),
    /// A Retrieve whose value is larger than its buffer.
    Larger(Flight),
}

/// Answers an R2T: the bytes of `data` it asks for, in H2CData PDUs of at most `maxh2cdata`.
#[allow(clippy::too_many_arguments)]
fn write_data(
    data: &Bytes,
    cccid: u16,
    ttag: u16,
    r2to: u32,
    r2tl: u32,
    maxh2cdata: u32,
    digests: Digests,
    out: &mut BytesMut,
) -> Result<(), Broken> {
    let start = r2to as usize;
    let end = start.saturating_add(r2tl as usize);
    if end > data.len() {
        return Err("an R2T past the frame's bytes".into());
    }
    let mut at = start;
    while at < end {
        let n = (end - at).min(maxh2cdata as usize);
        let piece = Pdu::H2CData {
            cccid,
            ttag,
            datao: at as u32,
            last: at + n == end,
            data: data.slice(at..at + n),
        };
        piece.encode(digests, out);
        at += n;
    }
    Ok(())
}

/// The native completion frame a KV command's completion stands for.
fn kv_response(f: Flight, cqe: Cqe) -> Result<Frame, Broken> {
    let h = f.header;
    // Made as the native response frame is (a status in the word, then the value, or the
    // message of a failure), without encoding one to read it back: the value not copied.
    let frame = |status: Status, body: Bytes| Frame {
        header: Header {
            version: VERSION,
            opcode: h.opcode,
            word: status.code(),
            cid: h.cid,
            nsid: h.nsid,
            body_len: body.len() as u32,
        },
        body,
    };
    match (cqe.status.is_success(), f.kv) {
        (true, Some(KvOpcode::Retrieve)) if cqe.dw0 as usize == f.data.len() => {
            // Within the buffer the Retrieve offered, `max` (checked as its data came).
            Ok(frame(Status::Success, f.data.freeze()))
        }
        (true, Some(KvOpcode::Retrieve)) => Err(format!(
            "a Retrieve brought {} of the value's {} bytes",
            f.data.len(),
            cqe.dw0
        )),
        (true, _) => Ok(frame(Status::Success, Bytes::new())),
        (false, _) => {
            let (status, msg) = kv_refusal(cqe.status, h.nsid);
            let mut msg = Bytes::from(msg);
            // Never a body past what the caller takes (our messages are short ASCII).
            msg.truncate(f.max as usize);
            Ok(frame(status, msg))
        }
    }
}

/// The native point command `frame` holds (Store, Retrieve, Exist, Delete), read from it.
fn decode(header: &Header, frame: &Bytes) -> Option<Command> {
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
        body: frame.get(HEADER_LEN..).map(|_| frame.slice(HEADER_LEN..))?,
    };
    Command::decode(&frame).ok()
}

/// The KV command `request` is, with the value it carries, if the KV command set says the
/// same thing (see the module's comment); `max`: the most bytes of a response body, the
/// buffer a Retrieve offers.
fn as_kv(request: &Request, max: u32, in_capsule: u32) -> Option<(KvCommand, Bytes)> {
    let key = |key: &Bytes| KvKey::new(key).filter(|k| !k.is_empty());
    let kv = |opcode, key, size, options| KvCommand {
        opcode,
        key,
        size,
        options,
    };
    Some(match request {
        Request::Retrieve { key: k } => (
            kv(KvOpcode::Retrieve, key(k)?, max.min(RETRIEVE_BUFFER), 0),
            Bytes::new(),
        ),
        Request::Exist { key: k } => (kv(KvOpcode::Exist, key(k)?, 0, 0), Bytes::new()),
        Request::Delete { key: k } => (kv(KvOpcode::Delete, key(k)?, 0, 0), Bytes::new()),
        Request::Store {
            key: k,
            value,
            mode,
            sync: false,
        } if !value.is_empty() && value.len() <= in_capsule as usize => {
            let options = match mode {
                StoreMode::Always => 0,
                StoreMode::OnlyIfAbsent => STORE_ONLY_IF_ABSENT,
                StoreMode::OnlyIfPresent => STORE_ONLY_IF_PRESENT,
            };
            let size = value.len() as u32;
            (kv(KvOpcode::Store, key(k)?, size, options), value.clone())
        }
        _ => return None,
    })
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
/// completions (`fetch`: none when the Submit failed) and the data Fetch brought; an error
/// if the response cannot be trusted (the queue is then closed).
fn complete(
    header: &Header,
    submit: Cqe,
    fetch: Option<Cqe>,
    data: Bytes,
    max: u32,
) -> Result<Frame, Broken> {
    let failed = [Some(submit.status), fetch.map(|c| c.status)]
        .into_iter()
        .flatten()
        .find(|s| !s.is_success());
    let mut data = match failed {
        // The frame Fetch brought, taken as it is.
        None => match whole_frame(data, max) {
            Ok(Some(frame)) if frame.header.cid == header.cid => return Ok(frame),
            _ => return Err("NVMe/TCP: Fetch brought no response frame for the command".into()),
        },
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
            format!(
                "this host NQN was not granted namespace {nsid} (the device's [nvme.hosts] \
                 lists the namespaces each host NQN may use)"
            ),
        ),
        (0, 0x02) => (Status::InvalidField, "the device refused the frame".into()),
        // Namespace is Write Protected: a cluster move's fence, nothing written.
        (0, 0x20) => (
            Status::NamespaceReadOnly,
            format!("namespace {nsid} is read-only (a cluster move is copying it)"),
        ),
        _ => (
            Status::InternalError,
            format!("NVMe status type {}, code {:#x}", s.sct, s.sc),
        ),
    }
}

mod native;
#[cfg(test)]
mod tests;

/// The data a target sends for one command: one piece (the common case) kept as it came,
/// more than one gathered into one buffer.
#[derive(Default)]
struct Gathered {
    first: Bytes,
    /// Every piece, the first included, once a second came.
    all: BytesMut,
}

impl Gathered {
    fn len(&self) -> usize {
        if self.all.is_empty() {
            self.first.len()
        } else {
            self.all.len()
        }
    }

    fn push(&mut self, piece: Bytes) {
        if self.len() == 0 {
            self.first = piece;
            return;
        }
        if self.all.is_empty() {
            self.all.extend_from_slice(&std::mem::take(&mut self.first));
        }
        self.all.extend_from_slice(&piece);
    }

    fn freeze(self) -> Bytes {
        if self.all.is_empty() {
            self.first
        } else {
            self.all.freeze()
        }
    }
}
