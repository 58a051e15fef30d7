//! What a decoder refuses, and the status a device answers it with.

use crate::header::{Header, VERSION};
use crate::status::Status;

/// Why bytes are not a valid frame or body.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtoError {
    #[error("unsupported protocol version {} (this build speaks {VERSION})", .header.version)]
    /// The frame's version is not [`VERSION`].
    UnsupportedVersion {
        /// The frame's header.
        header: Header,
    },
    #[error("frame body of {} bytes is over the limit of {max}", .header.body_len)]
    /// The frame's body is longer than the receiver takes.
    FrameTooLarge {
        /// The frame's header.
        header: Header,
        /// The receiver's limit, in bytes.
        max: u32,
    },
    #[error("unknown opcode 0x{0:02x}")]
    /// No command has this opcode.
    UnknownOpcode(u8),
    #[error("truncated {0}")]
    /// The body ends inside the named field.
    Truncated(&'static str),
    #[error("invalid field: {0}")]
    /// The named field holds a value the command does not take.
    InvalidField(&'static str),
}

impl ProtoError {
    /// The status a device answers this error with.
    pub fn status(&self) -> Status {
        match self {
            ProtoError::UnsupportedVersion { .. } => Status::UnsupportedVersion,
            ProtoError::FrameTooLarge { .. } => Status::InvalidField,
            ProtoError::UnknownOpcode(_) => Status::InvalidOpcode,
            ProtoError::Truncated(_) | ProtoError::InvalidField(_) => Status::InvalidField,
        }
    }
}
