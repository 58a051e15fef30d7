//! Completion status codes: the NVMe key-value command set's, plus vendor codes (0xC0..) for
//! what it lacks.

/// Status of a completed command (16 bits on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The command did what it asked.
    Success,
    /// The opcode is not one this device knows.
    InvalidOpcode,
    /// A field of the command is malformed (truncated body, bad flags, bad name, ...).
    InvalidField,
    /// The device failed for a reason of its own; the message says which.
    InternalError,
    /// The namespace does not exist (never created, or destroyed).
    InvalidNamespace,
    /// The device is out of space.
    CapacityExceeded,
    /// The value is larger than the device accepts.
    InvalidValueSize,
    /// The key is empty or longer than the device accepts.
    InvalidKeySize,
    /// The key does not exist.
    KeyNotExist,
    /// The key exists (a store with only-if-absent).
    KeyExists,
    /// The connection has not authenticated for this namespace (or as admin).
    AccessDenied,
    /// A namespace of that name exists.
    NamespaceExists,
    /// The frame's protocol version is not supported; the connection is closed after this.
    UnsupportedVersion,
    /// Stored data failed its checksum; nothing was returned.
    Corrupted,
    /// The device is shutting down and takes no new commands.
    ShuttingDown,
    /// No open iterator has that id on this connection (never opened, closed, or closed by
    /// the device after sitting idle).
    IteratorNotFound,
    /// The connection has as many iterators open as the device allows.
    IteratorLimit,
    /// The namespace has no index on that attribute (never created, or dropped).
    IndexNotFound,
    /// The namespace has an index on that attribute already.
    IndexExists,
    /// The answer would be larger than the device returns in one reply (its
    /// `max_reply_bytes`, or more records than its `max_query_results`); nothing was
    /// returned. Ask for less (a smaller `k` or `limit`), or page through it with find.
    ReplyTooLarge,
    /// The namespace has as many indexes as the device allows (`max_indexes_per_namespace`):
    /// none was created. Drop one first.
    IndexLimit,
    /// The iterator (or snapshot) lived past the device's `snapshot_max_age_ms`, counted
    /// from its opening: it was released. Open a new one (and seek past the last key read).
    SnapshotExpired,
    /// The namespace is read-only (a cluster move is copying it): nothing was written. Reads
    /// are served; retry the write once the move is over (against the tenant's new place).
    NamespaceReadOnly,
    /// A code this build does not know (from a newer device).
    Unknown(u16),
}

impl Status {
    /// Its 16-bit code on the wire.
    pub fn code(self) -> u16 {
        match self {
            Status::Success => 0x00,
            Status::InvalidOpcode => 0x01,
            Status::InvalidField => 0x02,
            Status::InternalError => 0x06,
            Status::InvalidNamespace => 0x0B,
            Status::CapacityExceeded => 0x81,
            Status::InvalidValueSize => 0x85,
            Status::InvalidKeySize => 0x86,
            Status::KeyNotExist => 0x87,
            Status::KeyExists => 0x89,
            Status::AccessDenied => 0xC0,
            Status::NamespaceExists => 0xC1,
            Status::UnsupportedVersion => 0xC2,
            Status::Corrupted => 0xC3,
            Status::ShuttingDown => 0xC4,
            Status::IteratorNotFound => 0xC5,
            Status::IteratorLimit => 0xC6,
            Status::IndexNotFound => 0xC7,
            Status::IndexExists => 0xC8,
            Status::ReplyTooLarge => 0xC9,
            Status::IndexLimit => 0xCA,
            Status::SnapshotExpired => 0xCB,
            Status::NamespaceReadOnly => 0xCC,
            Status::Unknown(c) => c,
        }
    }

    /// The status of a code (one this build does not know: [`Status::Unknown`]).
    pub fn from_code(code: u16) -> Status {
        match code {
            0x00 => Status::Success,
            0x01 => Status::InvalidOpcode,
            0x02 => Status::InvalidField,
            0x06 => Status::InternalError,
            0x0B => Status::InvalidNamespace,
            0x81 => Status::CapacityExceeded,
            0x85 => Status::InvalidValueSize,
            0x86 => Status::InvalidKeySize,
            0x87 => Status::KeyNotExist,
            0x89 => Status::KeyExists,
            0xC0 => Status::AccessDenied,
            0xC1 => Status::NamespaceExists,
            0xC2 => Status::UnsupportedVersion,
            0xC3 => Status::Corrupted,
            0xC4 => Status::ShuttingDown,
            0xC5 => Status::IteratorNotFound,
            0xC6 => Status::IteratorLimit,
            0xC7 => Status::IndexNotFound,
            0xC8 => Status::IndexExists,
            0xC9 => Status::ReplyTooLarge,
            0xCA => Status::IndexLimit,
            0xCB => Status::SnapshotExpired,
            0xCC => Status::NamespaceReadOnly,
            c => Status::Unknown(c),
        }
    }

    /// Whether it is [`Status::Success`].
    pub fn is_success(self) -> bool {
        self == Status::Success
    }

    /// A short description, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::InvalidOpcode => "invalid opcode",
            Status::InvalidField => "invalid field",
            Status::InternalError => "internal error",
            Status::InvalidNamespace => "namespace does not exist",
            Status::CapacityExceeded => "capacity exceeded",
            Status::InvalidValueSize => "invalid value size",
            Status::InvalidKeySize => "invalid key size",
            Status::KeyNotExist => "key does not exist",
            Status::KeyExists => "key exists",
            Status::AccessDenied => "access denied",
            Status::NamespaceExists => "namespace exists",
            Status::UnsupportedVersion => "unsupported protocol version",
            Status::Corrupted => "stored data is corrupted",
            Status::ShuttingDown => "device is shutting down",
            Status::IteratorNotFound => "no such iterator",
            Status::IteratorLimit => "too many open iterators",
            Status::IndexNotFound => "no such index",
            Status::IndexExists => "index exists",
            Status::ReplyTooLarge => "reply too large",
            Status::IndexLimit => "too many indexes",
            Status::SnapshotExpired => "snapshot or iterator expired",
            Status::NamespaceReadOnly => "namespace is read-only",
            Status::Unknown(_) => "unknown status",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (0x{:02x})", self.describe(), self.code())
    }
}

/// The status for a `cerberus_engine::ErrorKind`: the one mapping from engine errors to wire
/// statuses, which the device answers with and the Python bindings raise by (an embedded
/// database and a device refuse a call with the same class).
///
/// A macro rather than a function because no crate both users share sees both types without
/// a bad dependency: this crate stays free of the engine (the host client builds without
/// it), and the engine knows nothing of the wire. It expands where both are in scope; the
/// crate that expands it must depend on `cerberus-engine`. Kinds unknown to this mapping
/// (the enum is non-exhaustive) are internal errors.
#[macro_export]
macro_rules! engine_status {
    ($kind:expr) => {{
        use cerberus_engine::ErrorKind as K;
        use $crate::Status as S;
        match $kind {
            K::UnknownNamespace => S::InvalidNamespace,
            // A full disk, a namespace at its capacity, the device-wide reserve reached.
            K::NoSpace | K::CapacityExceeded => S::CapacityExceeded,
            K::Corruption => S::Corrupted,
            K::KeyTooLarge => S::InvalidKeySize,
            K::ValueTooLarge => S::InvalidValueSize,
            K::NamespaceExists => S::NamespaceExists,
            K::InvalidArgument | K::InvalidQuery => S::InvalidField,
            K::UnknownIndex => S::IndexNotFound,
            K::IndexExists => S::IndexExists,
            K::TooManyIndexes => S::IndexLimit,
            K::SnapshotExpired => S::SnapshotExpired,
            K::NamespaceReadOnly => S::NamespaceReadOnly,
            K::Closed => S::ShuttingDown,
            // Io and Background: the device failed for a reason of its own.
            _ => S::InternalError,
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in 0..=u16::MAX {
            assert_eq!(Status::from_code(code).code(), code);
        }
        assert_eq!(Status::KeyExists.code(), 0x89);
        assert_eq!(Status::KeyNotExist.code(), 0x87);
        assert_eq!(Status::InvalidValueSize.code(), 0x85);
        assert_eq!(Status::InvalidKeySize.code(), 0x86);
        assert_eq!(Status::CapacityExceeded.code(), 0x81);
        assert_eq!(Status::from_code(0xC9), Status::ReplyTooLarge);
        assert_eq!(Status::from_code(0xCA), Status::IndexLimit);
        assert_eq!(Status::from_code(0xCB), Status::SnapshotExpired);
        assert_eq!(Status::from_code(0xCC), Status::NamespaceReadOnly);
    }
}
