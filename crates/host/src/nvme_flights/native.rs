//! A caller's command as the NVMe/TCP queue takes it: its native frame, or a point command
//! encoded only if it goes as the vendor pair.

use bytes::{Bytes, BytesMut};
use cerberus_proto::{Command, Header, ProtoError, Request, HEADER_LEN};

/// A caller's command as the queue takes it.
pub(crate) enum Native {
    /// Its native frame.
    Frame(Bytes),
    /// A point command not encoded (its frame's header, with its command id, and what it
    /// asks): it may go as a KV command, which needs no native frame; it is encoded only if
    /// it goes as the pair.
    Point(Header, Request),
}

impl Native {
    /// Its native frame, encoded now if it was not (an error breaks the queue).
    pub(super) fn into_frame(self) -> Result<Bytes, ProtoError> {
        match self {
            Native::Frame(frame) => Ok(frame),
            Native::Point(header, request) => encode_point(&header, request).map(BytesMut::freeze),
        }
    }
}

/// The native frame of a point command not encoded yet (`header`: its frame's, as
/// `Command::point_header` gave it, with its command id).
pub(crate) fn encode_point(header: &Header, request: Request) -> Result<BytesMut, ProtoError> {
    let command = Command {
        cid: header.cid,
        nsid: header.nsid,
        request,
    };
    let mut frame = BytesMut::with_capacity(HEADER_LEN + header.body_len as usize);
    command.encode(&mut frame)?;
    Ok(frame)
}
