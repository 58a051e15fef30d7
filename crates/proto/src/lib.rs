//! The Cerberus key-value command set: opcodes, status codes, and the binary framing of
//! commands and completions (`docs/protocol.md`). No I/O: the device and the host client move
//! the bytes; this crate turns them into typed commands and back.

mod command;
mod frame;
mod limits;
mod response;
mod status;

pub use command::{
    Command, Opcode, Request, StoreMode, DEVICE_NSID, ITER_KEYS_ONLY, LIST_START_EXCLUSIVE,
    MAX_NAME_LEN, MAX_SECRET_LEN, STORE_ONLY_IF_ABSENT, STORE_ONLY_IF_PRESENT, STORE_SYNC,
};
pub use frame::{split_frame, Frame, Header, HEADER_LEN, VERSION};
pub use limits::{key_size_refusal, value_size_refusal};
pub use response::{Identify, NamespaceEntry, Reply, Response};
pub use status::Status;

/// Why bytes are not a valid frame or body.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtoError {
    #[error("unsupported protocol version {} (this build speaks {VERSION})", .header.version)]
    UnsupportedVersion { header: Header },
    #[error("frame body of {} bytes is over the limit of {max}", .header.body_len)]
    FrameTooLarge { header: Header, max: u32 },
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    #[error("truncated {0}")]
    Truncated(&'static str),
    #[error("invalid field: {0}")]
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
