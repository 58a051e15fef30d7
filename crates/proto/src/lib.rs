//! The Cerberus key-value command set: opcodes, status codes, and the binary framing of
//! commands and completions (`docs/protocol.md`). No I/O: the device and the host client move
//! the bytes; this crate turns them into typed commands and back.

#![deny(missing_docs)]

mod command;
mod error;
mod fields;
mod frame;
#[doc(hidden)]
pub mod fuzzing;
mod header;
mod limits;
pub mod nvme;
mod response;
mod status;

pub use command::{
    prefix_end, BatchWrite, Command, NamespaceSettings, Opcode, Request, StoreMode, AUTH_BY_NAME,
    BATCH_DELETE, BATCH_PUT, DEVICE_NSID, ITER_KEYS_ONLY, LIST_START_EXCLUSIVE,
    MAX_BACKUP_PATH_LEN, MAX_BATCH_WRITES, MAX_SECRET_LEN, NS_CONFIGURE_KEEP_SETTINGS,
    NS_CONFIGURE_READ_ONLY, NS_CONFIGURE_WRITABLE, NS_CREATE_SETTINGS, SETTINGS_LEN,
    STORE_ONLY_IF_ABSENT, STORE_ONLY_IF_PRESENT, STORE_SYNC,
};
pub use error::ProtoError;
pub use fields::MAX_NAME_LEN;
pub use frame::{split_frame, whole_frame, Frame};
pub use header::{Header, HEADER_LEN, VERSION};
pub use limits::{key_size_refusal, value_size_refusal};
pub use response::{Identify, NamespaceEntry, Reply, Response};
pub use status::Status;
