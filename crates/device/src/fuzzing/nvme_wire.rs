//! A blocking NVMe/TCP queue for the session fuzzer: PDUs out, PDUs in within a deadline,
//! and the few whole commands its liveness check runs (Connect, properties, KV Store and
//! Retrieve). Written on the proto crate's encoders, apart from the device's target code.

use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    connect_data, fabrics_command, property, split_pdu, Cqe, Digests, KvCommand, KvKey, KvOpcode,
    Pdu, PduLimits, Sqe, PFV_1_0,
};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Most data one PDU from the device may carry before this side gives up on the stream.
const MAX_PDU_DATA: u32 = 16 << 20;

/// One queue's connection.
pub(super) struct Wire {
    sock: TcpStream,
    buf: BytesMut,
    /// The digests the device's ICResp agreed to (none before).
    pub digests: Digests,
    /// The device closed the connection, or the stream broke.
    pub closed: bool,
}

impl Wire {
    pub fn open(addr: SocketAddr) -> std::io::Result<Wire> {
        let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        sock.set_nodelay(true)?;
        sock.set_write_timeout(Some(Duration::from_secs(2)))?;
        Ok(Wire {
            sock,
            buf: BytesMut::with_capacity(8192),
            digests: Digests::default(),
            closed: false,
        })
    }

    /// Sends `pdu` with the digests agreed so far; false once the connection is gone.
    pub fn send(&mut self, pdu: &Pdu) -> bool {
        let mut out = BytesMut::new();
        pdu.encode(self.digests, &mut out);
        self.send_raw(&out)
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> bool {
        // `recv` may have left the socket non-blocking.
        let blocking = self.sock.set_nonblocking(false);
        if !self.closed && (blocking.is_err() || self.sock.write_all(bytes).is_err()) {
            self.closed = true;
        }
        !self.closed
    }

    /// The next PDU from the device, waiting at most `wait` (zero: only what has arrived).
    pub fn recv(&mut self, wait: Duration) -> Option<Pdu> {
        let until = Instant::now() + wait;
        let mut chunk = [0u8; 16 << 10];
        loop {
            match split_pdu(
                &mut self.buf,
                self.digests,
                PduLimits::uniform(MAX_PDU_DATA),
            ) {
                Ok(Some(p)) => return Some(p),
                Ok(None) => {}
                Err(_) => {
                    self.closed = true;
                    return None;
                }
            }
            if self.closed {
                return None;
            }
            let left = until.saturating_duration_since(Instant::now());
            // Nothing to wait for: a non-blocking read (a read timeout rounds up to a tick
            // of the kernel's clock, milliseconds).
            let _ = match left.is_zero() {
                true => self.sock.set_nonblocking(true),
                false => self
                    .sock
                    .set_nonblocking(false)
                    .and_then(|_| self.sock.set_read_timeout(Some(left))),
            };
            match self.sock.read(&mut chunk) {
                Ok(0) => self.closed = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if Instant::now() >= until {
                        return None;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => self.closed = true,
            }
        }
    }

    /// ICReq/ICResp, no digests.
    pub fn handshake(&mut self) -> Result<(), String> {
        self.send(&ic_req(Digests::default()));
        match self.recv(PATIENCE) {
            Some(Pdu::IcResp { pfv: PFV_1_0, .. }) => Ok(()),
            other => Err(format!("no ICResp: {other:?}")),
        }
    }

    /// Sends one command and gathers its data and completion (R2Ts are not answered: the
    /// check sends Store data in the capsule).
    pub fn command(&mut self, sqe: Sqe, data: Bytes, buffer: u32) -> Result<(Cqe, Bytes), String> {
        let capsule = capsule(sqe, data, buffer);
        let cid = match &capsule {
            Pdu::CapsuleCmd { sqe, .. } => sqe.cid,
            _ => 0,
        };
        if !self.send(&capsule) {
            return Err("the device closed the connection".into());
        }
        let mut got = BytesMut::new();
        loop {
            match self.recv(PATIENCE) {
                Some(Pdu::C2HData { cccid, data, .. }) if cccid == cid => {
                    got.extend_from_slice(&data)
                }
                Some(Pdu::CapsuleResp { cqe }) if cqe.cid == cid => return Ok((cqe, got.freeze())),
                Some(other) => return Err(format!("unexpected {other:?}")),
                None => return Err(format!("no answer (closed: {})", self.closed)),
            }
        }
    }

    /// Connects this queue (`qid` 0: a new controller) as `hostnqn`; the controller id.
    pub fn connect(&mut self, qid: u16, cntlid: u16, hostnqn: &str) -> Result<u16, String> {
        let sqe = fabrics_command(0x01, u32::from(qid) << 16, 31, 0);
        let data = Bytes::from(connect_data(HOSTID, cntlid, SUBNQN, hostnqn));
        let (cqe, _) = ok(self.command(sqe, data, 0))?;
        Ok(cqe.dw0 as u16)
    }

    /// Enables the controller behind this admin queue and waits for CSTS.RDY.
    pub fn enable(&mut self) -> Result<(), String> {
        ok(self.command(
            fabrics_command(0x00, 0, property::CC, CC_ENABLE),
            Bytes::new(),
            0,
        ))?;
        for _ in 0..100 {
            let get = fabrics_command(0x04, 0, property::CSTS, 0);
            if ok(self.command(get, Bytes::new(), 0))?.0.dw0 & 1 == 1 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("CSTS.RDY never set".into())
    }

    /// Stores `value` under `key` in `nsid` (in the capsule) and reads it back.
    pub fn store_and_retrieve(
        &mut self,
        nsid: u32,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), String> {
        let key = KvKey::new(key).ok_or("a check key of at most 16 bytes")?;
        let len = value.len() as u32;
        let store = kv_sqe(nsid, KvOpcode::Store, key, len);
        ok(self.command(store, Bytes::copy_from_slice(value), 0))?;
        let retrieve = kv_sqe(nsid, KvOpcode::Retrieve, key, len);
        let (_, got) = ok(self.command(retrieve, Bytes::new(), len))?;
        match &got[..] == value {
            true => Ok(()),
            false => Err(format!(
                "read back {} bytes, not the value stored",
                got.len()
            )),
        }
    }
}

/// The host identifier every connection of the fuzzer gives (an I/O queue must give its
/// controller's).
pub(super) const HOSTID: [u8; 16] = [7; 16];

/// How long the liveness check waits for each answer.
const PATIENCE: Duration = Duration::from_secs(5);

/// The subsystem NQN the fuzzed device serves (its default).
pub(super) const SUBNQN: &str = cerberus_proto::nvme::DEFAULT_SUBNQN;

/// CC: EN, every I/O command set, IOSQES 6, IOCQES 4 (what a host driver writes).
pub(super) const CC_ENABLE: u32 = 1 | 0b110 << 4 | 6 << 16 | 4 << 20;

pub(super) fn ic_req(digests: Digests) -> Pdu {
    Pdu::IcReq {
        pfv: PFV_1_0,
        hpda: 0,
        digests,
        maxr2t: 0,
    }
}

/// A command capsule: `data` in it when there is some, else a buffer of `buffer` bytes for
/// the device to send into or fetch from (a transport SGL data block); command id from
/// `sqe.cid` unless 0, which picks one from a counter.
pub(super) fn capsule(mut sqe: Sqe, data: Bytes, buffer: u32) -> Pdu {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(1);
    if sqe.cid == 0 {
        sqe.cid = NEXT
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .max(1);
    }
    let in_capsule = !data.is_empty();
    let len = if in_capsule {
        data.len() as u32
    } else {
        buffer
    };
    sqe.dptr = [0; 16];
    sqe.dptr[8..12].copy_from_slice(&len.to_le_bytes());
    sqe.dptr[15] = if in_capsule { 0x01 } else { 0x5A };
    Pdu::CapsuleCmd { sqe, data }
}

pub(super) fn kv_sqe(nsid: u32, opcode: KvOpcode, key: KvKey, size: u32) -> Sqe {
    let mut sqe = Sqe {
        nsid,
        ..Sqe::default()
    };
    KvCommand {
        opcode,
        key,
        size,
        options: 0,
    }
    .encode(&mut sqe);
    sqe
}

fn ok(r: Result<(Cqe, Bytes), String>) -> Result<(Cqe, Bytes), String> {
    let (cqe, data) = r?;
    match cqe.status.is_success() {
        true => Ok((cqe, data)),
        false => Err(format!("status {:?}", cqe.status)),
    }
}
