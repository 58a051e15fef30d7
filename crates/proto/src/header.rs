//! The 16-byte header every frame starts with (layout in `frame.rs` and `docs/protocol.md`).

use bytes::{Buf, BufMut};

/// Protocol version this crate speaks.
pub const VERSION: u8 = 1;
/// Bytes of a frame header (requests and responses alike).
pub const HEADER_LEN: usize = 16;

/// A frame header, request or response: `word` is the request's `flags` (low byte) or the
/// response's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Protocol version.
    pub version: u8,
    /// The command's opcode (a response echoes it).
    pub opcode: u8,
    /// Request flags (low byte) or response status.
    pub word: u16,
    /// Command id.
    pub cid: u32,
    /// Namespace id.
    pub nsid: u32,
    /// Bytes of body after the header.
    pub body_len: u32,
}

impl Header {
    /// Writes the header's 16 bytes to `out`.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u8(self.version);
        out.put_u8(self.opcode);
        out.put_u16_le(self.word);
        out.put_u32_le(self.cid);
        out.put_u32_le(self.nsid);
        out.put_u32_le(self.body_len);
    }

    /// Parses a header; does not look at the version or the length.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Header {
        let mut b = &b[..];
        Header {
            version: b.get_u8(),
            opcode: b.get_u8(),
            word: b.get_u16_le(),
            cid: b.get_u32_le(),
            nsid: b.get_u32_le(),
            body_len: b.get_u32_le(),
        }
    }
}
