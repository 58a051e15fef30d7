//! The library's typed errors and the kit's `kvs_result` code each one returns.

use crate::ffi_types::KvsResult;
use cerberus_host::Error as HostError;

/// `kvs_result` values (`include/kvs_result.h`).
pub mod code {
    use crate::ffi_types::KvsResult;
    pub const SUCCESS: KvsResult = 0;
    pub const BUFFER_SMALL: KvsResult = 0x001;
    pub const DEV_NOT_EXIST: KvsResult = 0x003;
    pub const KS_CAPACITY: KvsResult = 0x004;
    pub const KS_EXIST: KvsResult = 0x005;
    pub const KS_INDEX: KvsResult = 0x006;
    pub const KS_NAME: KvsResult = 0x007;
    pub const KS_NOT_EXIST: KvsResult = 0x008;
    pub const KS_NOT_OPEN: KvsResult = 0x009;
    pub const KS_OPEN: KvsResult = 0x00A;
    pub const ITERATOR_FILTER_INVALID: KvsResult = 0x00B;
    pub const ITERATOR_MAX: KvsResult = 0x00C;
    pub const ITERATOR_NOT_EXIST: KvsResult = 0x00D;
    pub const KEY_LENGTH_INVALID: KvsResult = 0x00F;
    pub const KEY_NOT_EXIST: KvsResult = 0x010;
    pub const OPTION_INVALID: KvsResult = 0x011;
    pub const PARAM_INVALID: KvsResult = 0x012;
    pub const SYS_IO: KvsResult = 0x013;
    pub const VALUE_LENGTH_INVALID: KvsResult = 0x014;
    pub const VALUE_OFFSET_INVALID: KvsResult = 0x015;
    pub const VALUE_OFFSET_MISALIGNED: KvsResult = 0x016;
    pub const VALUE_UPDATE_NOT_ALLOWED: KvsResult = 0x017;
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum KvsError {
    /// A null pointer or a malformed argument.
    #[error("invalid parameter: {0}")]
    Param(&'static str),
    /// The handle names no open device.
    #[error("no such device handle")]
    NoDevice,
    /// The URI could not be read.
    #[error("bad device URI: {0}")]
    Uri(String),
    /// A credential file could not be read, or a secret not kept.
    #[error("credentials: {0}")]
    Credentials(String),
    /// The handle names no open key space.
    #[error("key space not open")]
    KeySpaceNotOpen,
    /// No key space of that name (or not one this handle may see).
    #[error("no such key space")]
    KeySpaceNotExist,
    /// A key space of that name exists already.
    #[error("key space exists")]
    KeySpaceExists,
    /// The key space is open already on this device handle.
    #[error("key space open already")]
    KeySpaceOpen,
    /// The name cannot be a key space's.
    #[error("bad key space name")]
    KeySpaceName,
    /// The list index is out of range.
    #[error("key space index out of range")]
    KeySpaceIndex,
    /// The key's length is outside the device's range.
    #[error("key length out of range")]
    KeyLength,
    /// The value's length is outside the device's range.
    #[error("value length out of range")]
    ValueLength,
    /// The key does not exist.
    #[error("key does not exist")]
    KeyNotExist,
    /// A no-overwrite store found the key.
    #[error("key exists, update not allowed")]
    UpdateNotAllowed,
    /// The retrieve offset is past the value's end.
    #[error("value offset out of range")]
    OffsetInvalid,
    /// The retrieve offset is not a multiple of the alignment unit.
    #[error("value offset misaligned")]
    OffsetMisaligned,
    /// The output buffer is too small (what fits was copied).
    #[error("buffer too small")]
    BufferSmall,
    /// An option this library does not support.
    #[error("option not supported: {0}")]
    Option(&'static str),
    /// All iterator slots are in use.
    #[error("too many iterators")]
    IteratorMax,
    /// No such iterator.
    #[error("no such iterator")]
    IteratorNotExist,
    /// The async queue is full: retry once completions drain it.
    #[error("async queue full")]
    QueueFull,
    /// The device or the connection failed.
    #[error("device: {0}")]
    Host(HostError),
}

impl KvsError {
    /// The kit's code for this error.
    pub fn code(&self) -> KvsResult {
        match self {
            KvsError::Param(_) => code::PARAM_INVALID,
            KvsError::NoDevice => code::DEV_NOT_EXIST,
            KvsError::Uri(_) => code::DEV_NOT_EXIST,
            KvsError::Credentials(_) => code::SYS_IO,
            KvsError::KeySpaceNotOpen => code::KS_NOT_OPEN,
            KvsError::KeySpaceNotExist => code::KS_NOT_EXIST,
            KvsError::KeySpaceExists => code::KS_EXIST,
            KvsError::KeySpaceOpen => code::KS_OPEN,
            KvsError::KeySpaceName => code::KS_NAME,
            KvsError::KeySpaceIndex => code::KS_INDEX,
            KvsError::KeyLength => code::KEY_LENGTH_INVALID,
            KvsError::ValueLength => code::VALUE_LENGTH_INVALID,
            KvsError::KeyNotExist => code::KEY_NOT_EXIST,
            KvsError::UpdateNotAllowed => code::VALUE_UPDATE_NOT_ALLOWED,
            KvsError::OffsetInvalid => code::VALUE_OFFSET_INVALID,
            KvsError::OffsetMisaligned => code::VALUE_OFFSET_MISALIGNED,
            KvsError::BufferSmall => code::BUFFER_SMALL,
            KvsError::Option(_) => code::OPTION_INVALID,
            KvsError::IteratorMax => code::ITERATOR_MAX,
            KvsError::IteratorNotExist => code::ITERATOR_NOT_EXIST,
            // The kit has no "busy" code; its I/O error is what a caller retries.
            KvsError::QueueFull => code::SYS_IO,
            KvsError::Host(e) => host_code(e),
        }
    }
}

/// The device's answers, as the kit names them.
fn host_code(e: &HostError) -> KvsResult {
    match e {
        HostError::KeyNotExist => code::KEY_NOT_EXIST,
        HostError::KeyExists => code::VALUE_UPDATE_NOT_ALLOWED,
        HostError::InvalidKeySize(_) => code::KEY_LENGTH_INVALID,
        HostError::InvalidValueSize(_) => code::VALUE_LENGTH_INVALID,
        HostError::CapacityExceeded(_) => code::KS_CAPACITY,
        // A namespace gone, or one this credential may not touch: the kit has one answer.
        HostError::InvalidNamespace(_) | HostError::AccessDenied(_) => code::KS_NOT_EXIST,
        HostError::NamespaceExists(_) => code::KS_EXIST,
        HostError::IteratorNotFound(_) => code::ITERATOR_NOT_EXIST,
        HostError::IteratorLimit(_) => code::ITERATOR_MAX,
        _ => code::SYS_IO,
    }
}

impl From<HostError> for KvsError {
    fn from(e: HostError) -> KvsError {
        KvsError::Host(e)
    }
}

/// `Result` with [`KvsError`].
pub type KvsOutcome<T> = Result<T, KvsError>;

/// The code of an outcome: `KVS_SUCCESS` or the error's.
pub fn code_of(outcome: KvsOutcome<()>) -> KvsResult {
    match outcome {
        Ok(()) => code::SUCCESS,
        Err(e) => e.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_answers_map_to_the_kits_codes() {
        assert_eq!(KvsError::from(HostError::KeyNotExist).code(), 0x010);
        assert_eq!(KvsError::from(HostError::KeyExists).code(), 0x017);
        let long = HostError::InvalidKeySize(String::new());
        assert_eq!(KvsError::from(long).code(), 0x00F);
        let big = HostError::InvalidValueSize(String::new());
        assert_eq!(KvsError::from(big).code(), 0x014);
        let denied = HostError::AccessDenied(String::new());
        assert_eq!(KvsError::from(denied).code(), code::KS_NOT_EXIST);
        assert_eq!(KvsError::from(HostError::ConnectionClosed).code(), 0x013);
    }

    #[test]
    fn library_errors_map_to_the_kits_codes() {
        assert_eq!(KvsError::Param("x").code(), 0x012);
        assert_eq!(KvsError::BufferSmall.code(), 0x001);
        assert_eq!(KvsError::OffsetMisaligned.code(), 0x016);
        assert_eq!(code_of(Ok(())), 0);
        assert_eq!(code_of(Err(KvsError::IteratorMax)), 0x00C);
    }
}
