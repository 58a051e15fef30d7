//! NVMe/TCP PDUs: an 8-byte common header (type, flags, header length HLEN, data offset PDO,
//! total length PLEN), the type's own header fields, an optional header digest (CRC32C of
//! the header), then, at PDO, the data and an optional data digest (CRC32C of the data).
//! [`split_pdu`] takes one whole PDU off a connection's buffer, checking every length against
//! its type and the connection's limits before anything is allocated from it: a PDU past the
//! limits is an error that names its field, which the target answers with a C2HTermReq and
//! the closing of that connection alone.

use super::queue_entry::{Cqe, Sqe, SQE_LEN};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Bytes of the common header.
pub const CH_LEN: usize = 8;
/// The PDU format version this codec speaks (NVMe/TCP 1.0).
pub const PFV_1_0: u16 = 0;
const DIGEST_LEN: usize = 4;

const F_HDGST: u8 = 0x01;
const F_DDGST: u8 = 0x02;
const F_LAST_PDU: u8 = 0x04;
const F_SUCCESS: u8 = 0x08;

/// A PDU's type (common header byte 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PduType {
    /// Initialize Connection Request (host).
    IcReq = 0x00,
    /// Initialize Connection Response (controller).
    IcResp = 0x01,
    /// Terminate Connection Request from the host.
    H2CTermReq = 0x02,
    /// Terminate Connection Request from the controller.
    C2HTermReq = 0x03,
    /// A command capsule: a submission queue entry and in-capsule data.
    CapsuleCmd = 0x04,
    /// A response capsule: a completion queue entry.
    CapsuleResp = 0x05,
    /// Data of a write, sent when the controller asked for it (R2T).
    H2CData = 0x06,
    /// Data of a read.
    C2HData = 0x07,
    /// Ready to Transfer: the controller asks for a write's data.
    R2T = 0x09,
}

impl PduType {
    fn from_u8(b: u8) -> Option<PduType> {
        Some(match b {
            0x00 => PduType::IcReq,
            0x01 => PduType::IcResp,
            0x02 => PduType::H2CTermReq,
            0x03 => PduType::C2HTermReq,
            0x04 => PduType::CapsuleCmd,
            0x05 => PduType::CapsuleResp,
            0x06 => PduType::H2CData,
            0x07 => PduType::C2HData,
            0x09 => PduType::R2T,
            _ => return None,
        })
    }

    /// The header length the type has (HLEN).
    fn hlen(self) -> usize {
        match self {
            PduType::IcReq | PduType::IcResp => 128,
            PduType::CapsuleCmd => CH_LEN + SQE_LEN,
            _ => 24,
        }
    }

    /// Whether the type may carry a header digest (not the connection's set-up and
    /// tear-down PDUs).
    fn digested(self) -> bool {
        !matches!(
            self,
            PduType::IcReq | PduType::IcResp | PduType::H2CTermReq | PduType::C2HTermReq
        )
    }

    /// Whether the type carries data (with a data digest where enabled).
    fn carries_data(self) -> bool {
        matches!(
            self,
            PduType::CapsuleCmd | PduType::H2CData | PduType::C2HData
        )
    }
}

/// The digests a connection negotiated in its ICReq / ICResp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digests {
    /// CRC32C of each PDU header.
    pub header: bool,
    /// CRC32C of each PDU's data.
    pub data: bool,
}

impl Digests {
    fn from_byte(b: u8) -> Digests {
        Digests {
            header: b & 0x01 != 0,
            data: b & 0x02 != 0,
        }
    }

    fn byte(self) -> u8 {
        u8::from(self.header) | (u8::from(self.data) << 1)
    }
}

/// What a connection accepts: the largest data part of one PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PduLimits {
    /// Bytes of data one PDU other than a command capsule may carry (one H2CData).
    pub max_data: u32,
    /// Bytes of data one command capsule may carry (in-capsule data): a target's IOCCSZ,
    /// usually far below `max_data`, since every command waiting to start keeps its capsule.
    pub max_capsule_data: u32,
}

impl PduLimits {
    /// The same limit for every PDU (an initiator reading what its target sends).
    pub const fn uniform(max_data: u32) -> PduLimits {
        PduLimits {
            max_data,
            max_capsule_data: max_data,
        }
    }

    /// The limit for a PDU of type `ty`.
    fn of(self, ty: PduType) -> u32 {
        match ty {
            PduType::CapsuleCmd => self.max_capsule_data,
            _ => self.max_data,
        }
    }
}

/// A PDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pdu {
    /// The host opens the connection.
    IcReq {
        /// PDU format version.
        pfv: u16,
        /// Host PDU data alignment (dwords - 1).
        hpda: u8,
        /// Digests the host asks for.
        digests: Digests,
        /// Most outstanding R2Ts per command the host takes (0-based).
        maxr2t: u32,
    },
    /// The controller's answer.
    IcResp {
        /// PDU format version.
        pfv: u16,
        /// Controller PDU data alignment (dwords - 1).
        cpda: u8,
        /// Digests the connection uses.
        digests: Digests,
        /// Most data bytes in one H2CData PDU.
        maxh2cdata: u32,
    },
    /// The host ends the connection after a fatal error.
    H2CTermReq {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information (for a bad header field: its byte offset).
        fei: u32,
        /// The offending PDU's header, as much as fits.
        data: Bytes,
    },
    /// The controller ends the connection after a fatal error.
    C2HTermReq {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information.
        fei: u32,
        /// The offending PDU's header, as much as fits.
        data: Bytes,
    },
    /// A command and its in-capsule data.
    CapsuleCmd {
        /// The command.
        sqe: Sqe,
        /// In-capsule data (a write's value, up to the queue's capsule size).
        data: Bytes,
    },
    /// A completion.
    CapsuleResp {
        /// The completion.
        cqe: Cqe,
    },
    /// A piece of a write's data, asked for by an R2T.
    H2CData {
        /// The command's identifier.
        cccid: u16,
        /// The R2T's transfer tag.
        ttag: u16,
        /// Offset of `data` in the command's data.
        datao: u32,
        /// The last piece of the R2T's range.
        last: bool,
        /// The bytes.
        data: Bytes,
    },
    /// A piece of a read's data.
    C2HData {
        /// The command's identifier.
        cccid: u16,
        /// Offset of `data` in the command's data.
        datao: u32,
        /// The last piece.
        last: bool,
        /// The command succeeded and no CapsuleResp follows.
        success: bool,
        /// The bytes.
        data: Bytes,
    },
    /// The controller asks for `r2tl` bytes of a write's data from offset `r2to`.
    R2T {
        /// The command's identifier.
        cccid: u16,
        /// Tag the H2CData PDUs answer with.
        ttag: u16,
        /// Offset.
        r2to: u32,
        /// Length.
        r2tl: u32,
    },
}

/// Why bytes are not a PDU this connection takes: the fatal error status (FES) and its
/// information (FEI) a C2HTermReq carries.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvmeTcpError {
    /// A header field is invalid; `fei` is its byte offset.
    #[error("invalid PDU header field at byte {fei}")]
    InvalidHeader {
        /// Byte offset of the field in the PDU.
        fei: u32,
    },
    /// The header digest does not match.
    #[error("PDU header digest mismatch")]
    HeaderDigest,
    /// The data digest does not match.
    #[error("PDU data digest mismatch")]
    DataDigest,
    /// The PDU carries more data than the connection takes.
    #[error("PDU of {plen} bytes is over the connection's data limit")]
    DataLimitExceeded {
        /// Its PLEN.
        plen: u32,
    },
}

impl NvmeTcpError {
    /// Fatal error status and information for the C2HTermReq that answers it.
    pub fn fes_fei(&self) -> (u16, u32) {
        match self {
            NvmeTcpError::InvalidHeader { fei } => (0x01, *fei),
            NvmeTcpError::HeaderDigest => (0x03, 0),
            // A data digest error is reported on the command, not fatal in the spec; a
            // target may still end the connection (this one does, as for any bad PDU).
            NvmeTcpError::DataDigest => (0x03, 0),
            NvmeTcpError::DataLimitExceeded { .. } => (0x05, 0),
        }
    }
}

fn bad(fei: u32) -> NvmeTcpError {
    NvmeTcpError::InvalidHeader { fei }
}

/// Takes one whole PDU off the front of `buf`: `Ok(None)` until it has all arrived. Its
/// lengths are checked against its type, `digests` (once negotiated; before, the IC PDUs
/// carry none) and `limits` as soon as the common header is in, so a PDU that claims more
/// than the connection takes is refused before its bytes are waited for.
pub fn split_pdu(
    buf: &mut BytesMut,
    digests: Digests,
    limits: PduLimits,
) -> Result<Option<Pdu>, NvmeTcpError> {
    if buf.len() < CH_LEN {
        return Ok(None);
    }
    let ty = PduType::from_u8(buf[0]).ok_or(bad(0))?;
    let (flags, hlen, pdo) = (buf[1], usize::from(buf[2]), usize::from(buf[3]));
    let plen = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if hlen != ty.hlen() {
        return Err(bad(2));
    }
    let hd = ty.digested() && digests.header;
    let dd = ty.carries_data() && digests.data;
    if (flags & F_HDGST != 0) != hd || (flags & F_DDGST != 0 && !dd) {
        return Err(bad(1));
    }
    let header_end = hlen + if hd { DIGEST_LEN } else { 0 };
    let max_plen = header_end as u64
        + 256 // the largest data alignment pad a host may ask for
        + u64::from(limits.of(ty))
        + if dd { DIGEST_LEN as u64 } else { 0 };
    let data_len = if ty.carries_data() && pdo != 0 {
        // Data digests negotiated: every PDU with data carries one.
        if dd && flags & F_DDGST == 0 {
            return Err(bad(1));
        }
        let tail = if flags & F_DDGST != 0 { DIGEST_LEN } else { 0 };
        if pdo < header_end || pdo as u64 + tail as u64 > u64::from(plen) {
            return Err(bad(3));
        }
        plen as usize - pdo - tail
    } else {
        if pdo != 0 {
            return Err(bad(3));
        }
        // Terminate requests carry the offending header after theirs (at most 128 bytes).
        let extra = match ty {
            PduType::H2CTermReq | PduType::C2HTermReq => 128,
            _ => 0,
        };
        if plen as usize > header_end + extra || (plen as usize) < header_end {
            return Err(bad(4));
        }
        plen as usize - header_end
    };
    if u64::from(plen) > max_plen || data_len > limits.of(ty) as usize {
        return Err(NvmeTcpError::DataLimitExceeded { plen });
    }
    if buf.len() < plen as usize {
        return Ok(None);
    }
    if hd {
        let d = &buf[hlen..hlen + DIGEST_LEN];
        let want = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
        if crc32c::crc32c(&buf[..hlen]) != want {
            return Err(NvmeTcpError::HeaderDigest);
        }
    }
    // The header is read in place (copied out, 128 bytes at most) and only the data is
    // split off as shared bytes: a PDU without data (a completion, an R2T) takes no share
    // of the buffer, whose count every share and drop touches.
    let mut header = [0u8; 128];
    header[..hlen].copy_from_slice(&buf[..hlen]);
    let data = if ty.carries_data() && pdo != 0 {
        buf.advance(pdo);
        let data = buf.split_to(data_len).freeze();
        if flags & F_DDGST != 0 {
            let want = buf.get_u32_le();
            if crc32c::crc32c(&data) != want {
                return Err(NvmeTcpError::DataDigest);
            }
        }
        data
    } else {
        buf.advance(header_end);
        match plen as usize - header_end {
            0 => Bytes::new(),
            rest => buf.split_to(rest).freeze(),
        }
    };
    decode_body(ty, flags, &header[CH_LEN..hlen], data).map(Some)
}

/// The type's own header fields (`h`: the header after the common header).
fn decode_body(ty: PduType, flags: u8, mut h: &[u8], data: Bytes) -> Result<Pdu, NvmeTcpError> {
    Ok(match ty {
        PduType::IcReq => {
            let pfv = h.get_u16_le();
            let hpda = h.get_u8();
            let digests = Digests::from_byte(h.get_u8());
            let maxr2t = h.get_u32_le();
            if hpda > 31 {
                return Err(bad(10));
            }
            Pdu::IcReq {
                pfv,
                hpda,
                digests,
                maxr2t,
            }
        }
        PduType::IcResp => {
            let pfv = h.get_u16_le();
            let cpda = h.get_u8();
            let digests = Digests::from_byte(h.get_u8());
            let maxh2cdata = h.get_u32_le();
            Pdu::IcResp {
                pfv,
                cpda,
                digests,
                maxh2cdata,
            }
        }
        PduType::H2CTermReq | PduType::C2HTermReq => {
            let fes = h.get_u16_le();
            let fei = h.get_u32_le();
            match ty {
                PduType::H2CTermReq => Pdu::H2CTermReq { fes, fei, data },
                _ => Pdu::C2HTermReq { fes, fei, data },
            }
        }
        PduType::CapsuleCmd => Pdu::CapsuleCmd {
            sqe: Sqe::decode(h).ok_or(bad(8))?,
            data,
        },
        PduType::CapsuleResp => Pdu::CapsuleResp {
            cqe: Cqe::decode(h).ok_or(bad(8))?,
        },
        PduType::H2CData | PduType::C2HData | PduType::R2T => {
            let cccid = h.get_u16_le();
            let ttag = h.get_u16_le();
            let offset = h.get_u32_le();
            let length = h.get_u32_le();
            let last = flags & F_LAST_PDU != 0;
            match ty {
                PduType::R2T => Pdu::R2T {
                    cccid,
                    ttag,
                    r2to: offset,
                    r2tl: length,
                },
                _ if length as usize != data.len() => return Err(bad(16)),
                PduType::H2CData => Pdu::H2CData {
                    cccid,
                    ttag,
                    datao: offset,
                    last,
                    data,
                },
                _ => Pdu::C2HData {
                    cccid,
                    datao: offset,
                    last,
                    success: flags & F_SUCCESS != 0,
                    data,
                },
            }
        }
    })
}

impl Pdu {
    /// Its type.
    pub fn pdu_type(&self) -> PduType {
        match self {
            Pdu::IcReq { .. } => PduType::IcReq,
            Pdu::IcResp { .. } => PduType::IcResp,
            Pdu::H2CTermReq { .. } => PduType::H2CTermReq,
            Pdu::C2HTermReq { .. } => PduType::C2HTermReq,
            Pdu::CapsuleCmd { .. } => PduType::CapsuleCmd,
            Pdu::CapsuleResp { .. } => PduType::CapsuleResp,
            Pdu::H2CData { .. } => PduType::H2CData,
            Pdu::C2HData { .. } => PduType::C2HData,
            Pdu::R2T { .. } => PduType::R2T,
        }
    }

    /// Appends the PDU to `out`, with the digests the connection uses (data right after
    /// the header: no alignment pad).
    pub fn encode(&self, digests: Digests, out: &mut BytesMut) {
        let ty = self.pdu_type();
        let hlen = ty.hlen();
        let hd = ty.digested() && digests.header;
        // The header is built in place (128 bytes at most, ICReq's), not on the heap: every
        // command and answer encodes one.
        let mut header = [0u8; 128];
        let mut h: &mut [u8] = &mut header[CH_LEN..hlen];
        let mut flags = 0u8;
        let mut data: &[u8] = &[];
        match self {
            Pdu::IcReq {
                pfv,
                hpda,
                digests: d,
                maxr2t,
            } => {
                h.put_u16_le(*pfv);
                h.put_u8(*hpda);
                h.put_u8(d.byte());
                h.put_u32_le(*maxr2t);
            }
            Pdu::IcResp {
                pfv,
                cpda,
                digests: d,
                maxh2cdata,
            } => {
                h.put_u16_le(*pfv);
                h.put_u8(*cpda);
                h.put_u8(d.byte());
                h.put_u32_le(*maxh2cdata);
            }
            Pdu::H2CTermReq { fes, fei, data: d } | Pdu::C2HTermReq { fes, fei, data: d } => {
                h.put_u16_le(*fes);
                h.put_u32_le(*fei);
                data = &d[..d.len().min(128)];
            }
            Pdu::CapsuleCmd { sqe, data: d } => {
                sqe.encode(&mut h);
                data = d;
            }
            Pdu::CapsuleResp { cqe } => cqe.encode(&mut h),
            Pdu::H2CData {
                cccid,
                ttag,
                datao,
                last,
                data: d,
            } => {
                put_data_header(&mut h, *cccid, *ttag, *datao, d.len());
                flags |= if *last { F_LAST_PDU } else { 0 };
                data = d;
            }
            Pdu::C2HData {
                cccid,
                datao,
                last,
                success,
                data: d,
            } => {
                put_data_header(&mut h, *cccid, 0, *datao, d.len());
                flags |= if *last { F_LAST_PDU } else { 0 };
                flags |= if *success { F_SUCCESS } else { 0 };
                data = d;
            }
            Pdu::R2T {
                cccid,
                ttag,
                r2to,
                r2tl,
            } => {
                h.put_u16_le(*cccid);
                h.put_u16_le(*ttag);
                h.put_u32_le(*r2to);
                h.put_u32_le(*r2tl);
            }
        }
        let h = &mut header[..hlen];
        let dd = ty.carries_data() && digests.data && !data.is_empty();
        let header_end = hlen + if hd { DIGEST_LEN } else { 0 };
        let pdo = if ty.carries_data() && !data.is_empty() {
            header_end
        } else {
            0
        };
        let plen = header_end + data.len() + if dd { DIGEST_LEN } else { 0 };
        flags |= if hd { F_HDGST } else { 0 } | if dd { F_DDGST } else { 0 };
        h[0] = ty as u8;
        h[1] = flags;
        h[2] = hlen as u8;
        h[3] = pdo as u8;
        h[4..8].copy_from_slice(&(plen as u32).to_le_bytes());
        out.put_slice(h);
        if hd {
            out.put_u32_le(crc32c::crc32c(h));
        }
        out.put_slice(data);
        if dd {
            out.put_u32_le(crc32c::crc32c(data));
        }
    }
}

fn put_data_header(h: &mut impl BufMut, cccid: u16, ttag: u16, datao: u32, len: usize) {
    h.put_u16_le(cccid);
    h.put_u16_le(ttag);
    h.put_u32_le(datao);
    h.put_u32_le(len as u32);
}

#[cfg(test)]
mod tests;
