//! Commands and their completions: typed forms of frame bodies, with their encoders and
//! decoders. The byte layouts are in `docs/protocol.md`.

mod backup;
mod batch;
mod decode;
mod delete_range;
mod encode;
mod request;
mod settings;

pub use backup::MAX_BACKUP_PATH_LEN;
pub use batch::{BatchWrite, BATCH_DELETE, BATCH_PUT, MAX_BATCH_WRITES};
pub use delete_range::prefix_end;
pub use request::{
    Command, Opcode, Request, StoreMode, AUTH_BY_NAME, DEVICE_NSID, ITER_KEYS_ONLY,
    LIST_START_EXCLUSIVE, MAX_SECRET_LEN, NS_CREATE_SETTINGS, STORE_ONLY_IF_ABSENT,
    STORE_ONLY_IF_PRESENT, STORE_SYNC,
};
pub use settings::{
    NamespaceSettings, NS_CONFIGURE_KEEP_SETTINGS, NS_CONFIGURE_READ_ONLY, NS_CONFIGURE_WRITABLE,
    SETTINGS_LEN,
};
