//! Framing: every message is a 16-byte header followed by `body_len` bytes of body. All
//! integers are little-endian (as NVMe's).
//!
//! ```text
//! request:  version u8 | opcode u8 | flags u8  | reserved u8 | cid u32 | nsid u32 | body_len u32
//! response: version u8 | opcode u8 | status u16              | cid u32 | nsid u32 | body_len u32
//! ```
//!
//! [`split_frame`] takes one whole frame off the front of a receive buffer. It checks the
//! version and the body length against the receiver's limit from the header alone, so a frame
//! claiming a huge length is refused before any of it is buffered.

use crate::error::ProtoError;
use crate::header::{Header, HEADER_LEN, VERSION};
use bytes::{Buf, Bytes, BytesMut};

/// A whole frame: its header and its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Its header.
    pub header: Header,
    /// Its body, `header.body_len` bytes.
    pub body: Bytes,
}

/// Takes the first whole frame off `buf`, or `None` if `buf` does not hold one yet. Fails,
/// leaving `buf` as it was, on a version other than [`VERSION`] or a body longer than
/// `max_body`; the stream cannot be resynchronised after either, so the connection should be
/// answered (the header is in the error) and closed.
pub fn split_frame(buf: &mut BytesMut, max_body: u32) -> Result<Option<Frame>, ProtoError> {
    let Some(header) = checked_header(buf, max_body)? else {
        return Ok(None);
    };
    let total = HEADER_LEN + header.body_len as usize;
    if buf.len() < total {
        // Room for the rest, bounded by max_body through the check above.
        buf.reserve(total - buf.len());
        return Ok(None);
    }
    let mut frame = buf.split_to(total);
    frame.advance(HEADER_LEN);
    Ok(Some(Frame {
        header,
        body: frame.freeze(),
    }))
}

/// The frame that is exactly `bytes` (one carried whole in another transport's data, as an
/// NVMe/TCP Fetch brings it): no copy. `None` if `bytes` is not one whole frame; the same
/// errors as [`split_frame`].
pub fn whole_frame(bytes: Bytes, max_body: u32) -> Result<Option<Frame>, ProtoError> {
    match checked_header(&bytes, max_body)? {
        Some(header) if bytes.len() == HEADER_LEN + header.body_len as usize => Ok(Some(Frame {
            header,
            body: bytes.slice(HEADER_LEN..),
        })),
        _ => Ok(None),
    }
}

/// The header at the start of `buf` (`None` if shorter than one), checked: this version, a
/// body of at most `max_body` bytes.
fn checked_header(buf: &[u8], max_body: u32) -> Result<Option<Header>, ProtoError> {
    let Some(head) = buf.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(head);
    let header = Header::decode(&h);
    if header.version != VERSION {
        return Err(ProtoError::UnsupportedVersion { header });
    }
    if header.body_len > max_body {
        return Err(ProtoError::FrameTooLarge {
            header,
            max: max_body,
        });
    }
    Ok(Some(header))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    fn header(body_len: u32) -> Header {
        Header {
            version: VERSION,
            opcode: 2,
            word: 0,
            cid: 7,
            nsid: 3,
            body_len,
        }
    }

    #[test]
    fn splits_frames_as_they_complete() {
        let mut wire = BytesMut::new();
        header(3).encode(&mut wire);
        wire.put_slice(b"abc");
        header(0).encode(&mut wire);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for b in wire.iter() {
            buf.put_u8(*b);
            while let Some(f) = split_frame(&mut buf, 16).unwrap() {
                frames.push(f);
            }
        }
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].header, header(3));
        assert_eq!(&frames[0].body[..], b"abc");
        assert_eq!(frames[1].body.len(), 0);
        assert!(buf.is_empty());
    }

    #[test]
    fn refuses_huge_length_before_buffering() {
        let mut buf = BytesMut::new();
        header(u32::MAX).encode(&mut buf);
        let err = split_frame(&mut buf, 1 << 20).unwrap_err();
        assert!(matches!(err, ProtoError::FrameTooLarge { .. }));
        assert!(buf.capacity() < 1 << 20);
    }

    #[test]
    fn refuses_other_versions() {
        let mut buf = BytesMut::new();
        let mut h = header(0);
        h.version = 9;
        h.encode(&mut buf);
        assert!(matches!(
            split_frame(&mut buf, 16),
            Err(ProtoError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn a_whole_frame_is_taken_as_it_is_and_nothing_else_is() {
        let mut buf = BytesMut::new();
        header(3).encode(&mut buf);
        buf.extend_from_slice(b"abc");
        let bytes = buf.freeze();
        let f = whole_frame(bytes.clone(), 16).unwrap().unwrap();
        assert_eq!((f.header, &f.body[..]), (header(3), &b"abc"[..]));
        // The body is the given bytes, not a copy.
        assert_eq!(f.body.as_ptr(), bytes[HEADER_LEN..].as_ptr());
        // Short, long, or a header alone of a frame with a body: not a frame.
        for cut in [
            bytes.slice(..HEADER_LEN + 2),
            bytes.slice(..5),
            Bytes::new(),
        ] {
            assert_eq!(whole_frame(cut, 16).unwrap(), None);
        }
        let mut long = BytesMut::from(&bytes[..]);
        long.extend_from_slice(b"d");
        assert_eq!(whole_frame(long.freeze(), 16).unwrap(), None);
        assert!(matches!(
            whole_frame(bytes, 2),
            Err(ProtoError::FrameTooLarge { .. })
        ));
    }
}
