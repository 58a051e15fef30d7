//! The ops of one fuzzed NVMe/TCP session: an input's first byte is its `Opening`, then
//! each op is a byte (its kind, `op % 16`) and a parameter byte, some followed by more bytes
//! (keys, sizes, raw data). Past the input's end every byte reads as 0. The session keeps
//! what the device said (the agreed digests and MAXH2CDATA, the last R2T, the challenge of
//! an authentication transaction, the Connect's outcome) so that the next op can answer it.

use super::nvme_hosts::{host_secret, is_term, subnqn, Opening, ANSWER_WAIT, OPEN_HOST};
use super::nvme_wire::{capsule, ic_req, kv_sqe, Wire, CC_ENABLE, HOSTID};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    augmented, auth_command, connect_data, fabrics_command, property, AdminCommand, AuthMessage,
    Challenged, DhGroup, DhchapSecret, HashId, KvKey, KvOpcode, Pdu, Sqe, DH_PRIVATE_LEN,
    FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND, VENDOR_FETCH, VENDOR_SUBMIT,
};
use cerberus_proto::{Command, Request, StoreMode};
use std::net::SocketAddr;
use std::time::Duration;

/// Most ops one input runs.
const MAX_OPS: usize = 48;

/// The op kinds (`op % 16`).
pub(super) mod op {
    pub const IC_REQ: u8 = 0;
    pub const CONNECT: u8 = 1;
    pub const PROPERTY: u8 = 2;
    pub const AUTH_NEGOTIATE: u8 = 3;
    pub const AUTH_RECEIVE: u8 = 4;
    pub const AUTH_REPLY: u8 = 5;
    pub const AUTH_END: u8 = 6;
    pub const STORE: u8 = 7;
    pub const STORE_R2T: u8 = 8;
    pub const H2C_DATA: u8 = 9;
    pub const KV: u8 = 10;
    pub const SUBMIT: u8 = 11;
    pub const FETCH: u8 = 12;
    pub const ADMIN: u8 = 13;
    pub const RAW_CAPSULE: u8 = 14;
    pub const RAW: u8 = 15;
}

/// The input, read a byte at a time.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// The challenge of the transaction in progress.
struct Challenge {
    tid: u16,
    hash: u8,
    dhgroup: u8,
    seqnum: u32,
    c1: Vec<u8>,
    dh: Vec<u8>,
}

struct Session {
    wire: Wire,
    opening: Opening,
    nsid: u32,
    qid: u16,
    /// The controller the session's I/O queue joins (the prelude's).
    cntlid: u16,
    maxh2cdata: u32,
    connect_cid: Option<u16>,
    connected: bool,
    auth_receives: Vec<u16>,
    challenge: Option<Challenge>,
    r2t: Option<(u16, u16, u32, u32)>,
    submitted: u32,
}

/// Runs `data` as one session against the device at `addr`; true when a Connect of the
/// session succeeded.
pub(super) fn run(addr: SocketAddr, nsid: u32, data: &[u8]) -> bool {
    let mut input = Input(data);
    let opening = Opening::of(input.byte());
    // The legitimate admin queue whose controller an I/O queue joins; open until the end.
    let prelude = match opening.io {
        true => prelude(addr),
        false => None,
    };
    let Ok(wire) = Wire::open(addr) else {
        return false;
    };
    let mut s = Session {
        wire,
        qid: u16::from(opening.io),
        cntlid: prelude.as_ref().map_or(0xFFFF, |p| p.1),
        opening,
        nsid,
        maxh2cdata: 4096,
        connect_cid: None,
        connected: false,
        auth_receives: Vec::new(),
        challenge: None,
        r2t: None,
        submitted: 0,
    };
    for _ in 0..MAX_OPS {
        if input.0.is_empty() || s.wire.closed {
            break;
        }
        let expect = s.op(&mut input);
        s.pump(if expect { ANSWER_WAIT } else { Duration::ZERO });
    }
    s.pump(ANSWER_WAIT);
    drop(prelude);
    s.connected
}

fn prelude(addr: SocketAddr) -> Option<(Wire, u16)> {
    let mut w = Wire::open(addr).ok()?;
    w.handshake().ok()?;
    let cntlid = w.connect(0, 0xFFFF, OPEN_HOST).ok()?;
    w.enable().ok()?;
    Some((w, cntlid))
}

impl Session {
    /// Reads what the device sent (waiting up to `wait` for the first PDU) and remembers
    /// what later ops answer.
    fn pump(&mut self, wait: Duration) {
        let mut wait = wait;
        while let Some(p) = self.wire.recv(wait) {
            wait = Duration::ZERO;
            self.observe(p);
        }
    }

    fn observe(&mut self, p: Pdu) {
        match p {
            Pdu::IcResp {
                digests,
                maxh2cdata,
                ..
            } => {
                self.wire.digests = digests;
                self.maxh2cdata = maxh2cdata.max(1);
            }
            Pdu::CapsuleResp { cqe } if Some(cqe.cid) == self.connect_cid => {
                self.connected |= cqe.status.is_success();
            }
            Pdu::R2T {
                cccid,
                ttag,
                r2to,
                r2tl,
            } => self.r2t = Some((cccid, ttag, r2to, r2tl)),
            Pdu::C2HData { cccid, data, .. } if self.auth_receives.contains(&cccid) => {
                if let Ok(AuthMessage::Challenge {
                    tid,
                    hash,
                    dhgroup,
                    seqnum,
                    challenge,
                    dh_value,
                }) = AuthMessage::decode(&data)
                {
                    self.challenge = Some(Challenge {
                        tid,
                        hash,
                        dhgroup,
                        seqnum,
                        c1: challenge,
                        dh: dh_value,
                    });
                }
            }
            p if is_term(&p) => self.wire.closed = true,
            _ => {}
        }
    }

    fn send(&mut self, pdu: Pdu) -> bool {
        self.wire.send(&pdu);
        true
    }

    /// Runs the next op; whether an answer is due.
    fn op(&mut self, input: &mut Input) -> bool {
        let kind = input.byte() % 16;
        let b = input.byte();
        match kind {
            op::IC_REQ => {
                let mut pdu = ic_req(self.opening.digests);
                if let Pdu::IcReq { pfv, hpda, .. } = &mut pdu {
                    // Now and then a version or alignment the device does not take.
                    *pfv = u16::from(b & 0x80 != 0);
                    *hpda = if b & 0x40 != 0 { b & 0x3f } else { 0 };
                }
                self.send(pdu)
            }
            op::CONNECT => self.connect(b, input),
            op::PROPERTY => self.property(b, input),
            op::AUTH_NEGOTIATE => {
                let tid = if b & 0x80 != 0 { input.u16() } else { self.qid };
                let hashes = pick(b, &[1, 2, 3]);
                let dhgroups = pick(input.byte(), &[0, 1, 2, 3, 4, 5]);
                let msg = AuthMessage::Negotiate {
                    tid,
                    sc_c: 0,
                    hashes,
                    dhgroups,
                };
                self.auth_send(msg.encode())
            }
            op::AUTH_RECEIVE => {
                let len = [4096, 4096, 16, 0][usize::from(b & 3)];
                let pdu = capsule(auth_command(FCTYPE_AUTH_RECEIVE, len), Bytes::new(), len);
                if let Pdu::CapsuleCmd { sqe, .. } = &pdu {
                    self.auth_receives.push(sqe.cid);
                }
                self.send(pdu)
            }
            op::AUTH_REPLY => self.auth_reply(b, input),
            op::AUTH_END => {
                let tid = self.challenge.as_ref().map_or(self.qid, |c| c.tid);
                let msg = match b & 1 {
                    0 => AuthMessage::Success2 { tid },
                    _ => AuthMessage::Failure {
                        tid,
                        from_host: true,
                        explanation: input.byte(),
                    },
                };
                self.auth_send(msg.encode())
            }
            op::STORE | op::STORE_R2T | op::KV => self.kv(kind, b, input),
            op::H2C_DATA => self.h2c_data(b, input),
            op::SUBMIT => self.submit(b, input),
            op::FETCH => {
                let buffer = [4096, 65536, 8, 0][usize::from(b & 3)];
                let cid = if b & 4 != 0 {
                    self.submitted
                } else {
                    input.u16().into()
                };
                let mut sqe = Sqe {
                    opcode: VENDOR_FETCH,
                    nsid: self.nsid,
                    ..Sqe::default()
                };
                sqe.cdw[0] = buffer;
                sqe.cdw[1] = cid;
                self.send(capsule(sqe, Bytes::new(), buffer))
            }
            op::ADMIN => self.admin(b, input),
            op::RAW_CAPSULE => {
                let entry = input.bytes(64);
                let data = input.bytes(usize::from(b));
                match Sqe::decode(&entry) {
                    Some(sqe) => self.send(Pdu::CapsuleCmd {
                        sqe,
                        data: data.into(),
                    }),
                    None => false,
                }
            }
            _ => {
                let raw = input.bytes(usize::from(b));
                self.wire.send_raw(&raw);
                false
            }
        }
    }

    fn connect(&mut self, b: u8, input: &mut Input) -> bool {
        let qid = match b & 3 {
            0 | 1 => self.qid,
            2 => 1 - self.qid.min(1),
            _ => input.u16(),
        };
        let cntlid = if qid == 0 { 0xFFFF } else { self.cntlid };
        let host = if b & 4 != 0 {
            OPEN_HOST
        } else {
            self.opening.host
        };
        let sqsize = if b & 8 != 0 {
            u32::from(input.byte())
        } else {
            31
        };
        let kato = if b & 0x10 != 0 {
            100 * u32::from(input.byte())
        } else {
            0
        };
        let sqe = fabrics_command(0x01, u32::from(qid) << 16, sqsize, kato);
        let data = connect_data(HOSTID, cntlid, subnqn(input.byte()), host);
        let pdu = capsule(sqe, data.into(), 0);
        if let Pdu::CapsuleCmd { sqe, .. } = &pdu {
            self.connect_cid = Some(sqe.cid);
        }
        self.send(pdu)
    }

    fn property(&mut self, b: u8, input: &mut Input) -> bool {
        let sqe = match b & 3 {
            0 => fabrics_command(0x00, 0, property::CC, CC_ENABLE),
            // A shutdown notification, or any value.
            1 => fabrics_command(0x00, 0, property::CC, 1 << 14),
            2 => fabrics_command(0x00, 0, u32::from(input.byte()), input.u16().into()),
            _ => {
                let offset = [property::CAP, property::VS, property::CC, property::CSTS];
                let at = offset[usize::from(b >> 2 & 3)];
                fabrics_command(0x04, u32::from(at == property::CAP), at, 0)
            }
        };
        self.send(capsule(sqe, Bytes::new(), 0))
    }

    fn auth_send(&mut self, data: Vec<u8>) -> bool {
        let sqe = auth_command(FCTYPE_AUTH_SEND, data.len() as u32);
        self.send(capsule(sqe, data.into(), 0))
    }

    /// The Reply to the challenge received, right (from the host's secret) unless the input
    /// says to spoil it; bidirectional when it says so; made up when there is no challenge.
    fn auth_reply(&mut self, b: u8, input: &mut Input) -> bool {
        let Some(c) = self.challenge.take() else {
            let msg = AuthMessage::Reply {
                tid: self.qid,
                seqnum: input.u16().into(),
                response: input.bytes(32),
                challenge: None,
                dh_value: input.bytes(usize::from(b)),
            };
            return self.auth_send(msg.encode());
        };
        let Some(hash) = HashId::from_id(c.hash) else {
            return false;
        };
        let (z, dh_value) = match DhGroup::from_id(c.dhgroup) {
            None => (None, Vec::new()),
            Some(g) => {
                // No randomness needed: the device's side is what is under test.
                let mine = g.key_pair(&[b | 1; DH_PRIVATE_LEN]);
                (mine.shared(&c.dh).ok(), mine.public)
            }
        };
        let ca = augmented(hash, z.as_deref(), &c.c1);
        let at = Challenged {
            hash,
            challenge: &ca,
            seqnum: c.seqnum,
            tid: c.tid,
            sc_c: 0,
        };
        let host = self.opening.host;
        let Ok(secret) = DhchapSecret::parse(&host_secret()) else {
            return false;
        };
        let mut response = at.host_response(&secret.transformed(host), host, subnqn(2));
        if b & 0x80 != 0 {
            let at = usize::from(b) % response.len().max(1);
            response[at] ^= 1;
        }
        let c2 = (b & 0x40 != 0).then(|| vec![b; hash.output_len()]);
        let msg = AuthMessage::Reply {
            tid: c.tid,
            seqnum: if c2.is_some() { 7 } else { 0 },
            response,
            challenge: c2,
            dh_value,
        };
        self.auth_send(msg.encode())
    }

    fn nsid(&self, b: u8) -> u32 {
        match b >> 5 {
            0 => 0,
            1 => u32::MAX,
            2 => self.nsid + 1,
            _ => self.nsid,
        }
    }

    fn kv(&mut self, kind: u8, b: u8, input: &mut Input) -> bool {
        let key = input.bytes(1 + usize::from(b & 15));
        let key = KvKey::new(&key).unwrap_or_default();
        let nsid = self.nsid(b);
        let n = u32::from(input.byte());
        let (opcode, size, data, buffer) = match kind {
            op::STORE => (KvOpcode::Store, 8 * n, vec![b; 8 * n as usize], 0),
            op::STORE_R2T => (KvOpcode::Store, 1 + (n << 10), Vec::new(), 1 + (n << 10)),
            _ => {
                let opcode = [
                    KvOpcode::Retrieve,
                    KvOpcode::Exist,
                    KvOpcode::Delete,
                    KvOpcode::List,
                ][(n & 3) as usize];
                let buffer = [4096, 0, 1, 1 << 20][(n >> 2 & 3) as usize];
                (opcode, buffer, Vec::new(), buffer)
            }
        };
        let mut sqe = kv_sqe(nsid, opcode, key, size);
        if b & 0x10 != 0 {
            // Options the command set may not take.
            sqe.cdw[1] |= u32::from(input.byte()) << 8;
        }
        self.send(capsule(sqe, data.into(), buffer))
    }

    /// Data for the last R2T: as asked (in pieces of MAXH2CDATA), or with the offset,
    /// length or transfer tag the input says.
    fn h2c_data(&mut self, b: u8, input: &mut Input) -> bool {
        let Some((cccid, mut ttag, mut r2to, mut r2tl)) = self.r2t.take() else {
            return false;
        };
        if b & 0x80 != 0 {
            ttag ^= u16::from(b & 1);
            r2to = r2to.wrapping_add(u32::from(input.byte()));
            r2tl = r2tl.saturating_sub(u32::from(input.byte())).max(1);
        }
        let (end, mut at) = (r2to.saturating_add(r2tl.min(4 << 20)), r2to);
        while at < end && !self.wire.closed {
            let n = (end - at).min(self.maxh2cdata);
            self.wire.send(&Pdu::H2CData {
                cccid,
                ttag,
                datao: at,
                last: at + n == end,
                data: Bytes::from(vec![b; n as usize]),
            });
            at += n;
        }
        true
    }

    /// A native request frame through the vendor Submit.
    fn submit(&mut self, b: u8, input: &mut Input) -> bool {
        let key = Bytes::from(input.bytes(1 + usize::from(b & 7)));
        let request = match input.byte() % 12 {
            0 => Request::Retrieve { key },
            1 => Request::Store {
                key,
                value: Bytes::from(vec![b; usize::from(b) * 16]),
                mode: StoreMode::Always,
                sync: b & 1 != 0,
            },
            2 => Request::Delete { key },
            3 => Request::List {
                start: key,
                start_exclusive: false,
                max_keys: u32::from(b),
            },
            4 => Request::Authenticate {
                secret: Bytes::from(input.bytes(32)),
            },
            5 => Request::IterOpen {
                start: key,
                upper_bound: Bytes::new(),
                prefix: Bytes::new(),
                keys_only: b & 1 != 0,
            },
            6 => Request::IterNext {
                iter: u32::from(b & 3),
                max_entries: 16,
                max_bytes: 4096,
            },
            7 => Request::Stats,
            8 => Request::NamespaceList,
            9 => Request::AuthenticateByName {
                name: String::from_utf8_lossy(&key).into_owned(),
                secret: Bytes::from(input.bytes(32)),
            },
            10 => Request::NamespaceRekey,
            _ => Request::Exist { key },
        };
        self.submitted = u32::from(input.byte());
        let cmd = Command {
            cid: self.submitted,
            nsid: if b & 0x80 != 0 { u32::MAX } else { self.nsid },
            request,
        };
        let mut frame = BytesMut::new();
        if cmd.encode(&mut frame).is_err() {
            return false;
        }
        if b & 0x40 != 0 {
            frame.truncate(usize::from(input.byte()));
        }
        let mut sqe = Sqe {
            opcode: VENDOR_SUBMIT,
            nsid: self.nsid,
            ..Sqe::default()
        };
        sqe.cdw[0] = frame.len() as u32;
        self.send(capsule(sqe, frame.freeze(), 0))
    }

    fn admin(&mut self, b: u8, input: &mut Input) -> bool {
        let cmd = match b & 7 {
            0 => AdminCommand::Identify {
                cns: input.byte() % 8,
                cntid: 0,
                csi: [0, 1, 2, 0xff][usize::from(b >> 3 & 3)],
                nsid: self.nsid(b),
            },
            1 => AdminCommand::GetLogPage {
                lid: input.byte() % 8,
                offset: 4 * u64::from(input.byte()),
                len: 4 * (1 + u64::from(input.u16())),
            },
            2 => AdminCommand::SetFeatures {
                fid: input.byte(),
                value: input.u16().into(),
            },
            3 => AdminCommand::GetFeatures { fid: input.byte() },
            4 => AdminCommand::AsyncEventRequest,
            5 => {
                // Flush: the device's log, synced.
                let sqe = Sqe {
                    opcode: 0x00,
                    nsid: self.nsid(b),
                    ..Sqe::default()
                };
                return self.send(capsule(sqe, Bytes::new(), 0));
            }
            _ => AdminCommand::KeepAlive,
        };
        let mut sqe = Sqe::default();
        cmd.encode(&mut sqe);
        self.send(capsule(sqe, Bytes::new(), 4096))
    }
}

/// The ids of `ids` whose bits are set in `mask` (all of them when none is).
fn pick(mask: u8, ids: &[u8]) -> Vec<u8> {
    let chosen: Vec<u8> = ids
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, &id)| id)
        .collect();
    if chosen.is_empty() {
        ids.to_vec()
    } else {
        chosen
    }
}
