//! Typed errors of the engine.

use std::io;

/// Errors returned by the engine. Corruption always names the file it was found in.
///
/// Callers outside the engine branch on [`Error::kind`], not on the variants: the enum is
/// `#[non_exhaustive]` so that a new variant (or new context on one) breaks no caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Storage I/O failed (not a full disk: that is [`Error::NoSpace`]).
    #[error("I/O error on {file}: {source}")]
    Io {
        /// The file, as the storage names it.
        file: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Stored data failed a check: a checksum, a length, a format.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// The file the bad data is in.
        file: String,
        /// Byte offset of the bad record or block in that file.
        offset: u64,
        /// What check failed.
        reason: String,
    },
    /// The storage is full; nothing was lost, and the write may succeed once space returns.
    #[error("out of space writing {file}: {source}")]
    NoSpace {
        /// The file being written.
        file: String,
        /// The underlying error (`ENOSPC`).
        #[source]
        source: io::Error,
    },
    /// A key is longer than `Options::max_key_size`.
    #[error("key is {len} bytes; this database accepts keys of 1 to {limit} bytes (max_key_size)")]
    KeyTooLarge {
        /// The key's length, in bytes.
        len: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A value is longer than `Options::max_value_size`.
    #[error(
        "value is {len} bytes; this database accepts values up to {limit} bytes (max_value_size)"
    )]
    ValueTooLarge {
        /// The value's length, in bytes.
        len: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An argument is not valid (the message says which and why).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A batched read asked for more keys than one call takes.
    #[error("{count} keys asked in one call; a batched get takes at most {limit}")]
    TooManyKeys {
        /// The keys asked.
        count: usize,
        /// The most one call takes.
        limit: usize,
    },
    /// The values a batched read found add up to more bytes than one call answers with: ask
    /// for fewer keys at a time (nothing was read from the value log).
    #[error("the values of one batched get take {bytes} bytes; one call answers at most {limit}")]
    TooManyBytes {
        /// The bytes the values found take (values in memory, and the value-log records of
        /// the others).
        bytes: u64,
        /// The most one call answers with.
        limit: u64,
    },
    /// No namespace has this id, or it was destroyed.
    #[error("unknown or destroyed namespace {0}")]
    UnknownNamespace(u32),
    /// A namespace of this name exists already.
    #[error("a namespace named {0:?} exists")]
    NamespaceExists(String),
    /// The namespace has an index on the attribute already.
    #[error("the namespace has a {kind} index on {attr:?} already")]
    IndexExists {
        /// The attribute's path, as given.
        attr: String,
        /// The kind of the index that exists.
        kind: crate::index_kind::IndexKind,
    },
    /// The namespace has no index on this attribute.
    #[error("no index on {0:?}")]
    UnknownIndex(String),
    /// A query or filter is not valid (the message says why).
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// A write would take namespace `ns` past its capacity (nothing of it was written;
    /// deletes are never refused).
    #[error(
        "namespace {ns} is at its capacity: {used} bytes used, {pending} not yet flushed, \
         {write} more asked, capacity {capacity}"
    )]
    CapacityExceeded {
        /// The namespace.
        ns: u32,
        /// Live bytes (records and index entries) as of the last flush.
        used: u64,
        /// Bytes written since the last flush (counted as new: an upper bound).
        pending: u64,
        /// Bytes this write would add.
        write: u64,
        /// The namespace's capacity.
        capacity: u64,
    },
    /// The storage's free space is below the device-wide reserve: writes are refused (not
    /// deletes) so background work keeps the room it needs to give space back.
    #[error("storage has {free} bytes free, below the reserve of {reserve} bytes (reserve_bytes)")]
    ReserveReached {
        /// Free bytes the storage reported.
        free: u64,
        /// The reserve.
        reserve: u64,
    },
    /// A query run under a work limit ([`Namespace::with_query_work_limit`](crate::Namespace::with_query_work_limit))
    /// needed more work than that: nothing was returned, and the same query without the
    /// limit answers it whole.
    #[error("the query needs more than {limit} units of work, its limit")]
    WorkLimit {
        /// The limit it ran under.
        limit: u64,
    },
    /// Namespace `ns` has as many secondary indexes as `Options::max_indexes_per_namespace`
    /// allows: no index was created.
    #[error(
        "namespace {ns} has {limit} indexes, the most it may have (max_indexes_per_namespace)"
    )]
    TooManyIndexes {
        /// The namespace.
        ns: u32,
        /// The limit.
        limit: usize,
    },
    /// A snapshot or iterator lived past `Options::snapshot_max_age` (counted from its
    /// opening): it was released, and reads through it fail. Open a new one.
    #[error("snapshot or iterator expired: older than {max_age_ms} ms (snapshot_max_age)")]
    SnapshotExpired {
        /// The maximum age, in milliseconds.
        max_age_ms: u64,
    },
    /// Namespace `ns` is read-only ([`Namespace::set_read_only`](crate::Namespace::set_read_only):
    /// a cluster move is copying it): nothing of the write was written. Reads go on.
    #[error("namespace {0} is read-only (a cluster move is copying it): nothing written")]
    NamespaceReadOnly(u32),
    /// The database is closed.
    #[error("database is closed")]
    Closed,
    /// A background job failed and the database turned read-only (the message is the job's
    /// error), or a prefetch reader an iterator or a compaction relied on stopped.
    #[error("database is read-only after a background error: {0}")]
    Background(String),
}

/// The engine's result: its errors are [`Error`]s.
pub type Result<T> = std::result::Result<T, Error>;

/// What kind of failure an [`Error`] is, without its context (file, sizes, names): what a
/// caller decides on (a wire status, an exception class, a retry).
///
/// `#[non_exhaustive]`: a match outside the engine keeps a catch-all arm, so a new kind
/// reaches it as an internal error instead of breaking its build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Storage I/O failed (not a full disk).
    Io,
    /// Stored data failed a check: a checksum, a length, a format.
    Corruption,
    /// The storage is full; nothing was lost, and the write may succeed once space returns.
    NoSpace,
    /// A key is longer than the engine's limit.
    KeyTooLarge,
    /// A value is longer than the engine's limit.
    ValueTooLarge,
    /// An argument is not valid.
    InvalidArgument,
    /// A query or filter is not valid.
    InvalidQuery,
    /// The namespace does not exist or was destroyed.
    UnknownNamespace,
    /// A namespace of that name exists.
    NamespaceExists,
    /// The namespace has an index on that attribute already.
    IndexExists,
    /// The namespace has no index on that attribute.
    UnknownIndex,
    /// A namespace's capacity, or the device-wide reserve, refuses the write.
    CapacityExceeded,
    /// A query run under a work limit needed more.
    WorkLimit,
    /// A namespace has as many indexes as it may have.
    TooManyIndexes,
    /// A snapshot or iterator lived past its maximum age.
    SnapshotExpired,
    /// The namespace is read-only: the write was refused whole.
    NamespaceReadOnly,
    /// The database is closed.
    Closed,
    /// The database turned read-only after a background error.
    Background,
}

impl Error {
    /// The kind of this error: what to decide on, whatever its context.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::NoSpace { .. } => ErrorKind::NoSpace,
            Error::KeyTooLarge { .. } => ErrorKind::KeyTooLarge,
            Error::ValueTooLarge { .. } => ErrorKind::ValueTooLarge,
            Error::InvalidArgument(_) | Error::TooManyKeys { .. } | Error::TooManyBytes { .. } => {
                ErrorKind::InvalidArgument
            }
            Error::InvalidQuery(_) => ErrorKind::InvalidQuery,
            Error::UnknownNamespace(_) => ErrorKind::UnknownNamespace,
            Error::NamespaceExists(_) => ErrorKind::NamespaceExists,
            Error::IndexExists { .. } => ErrorKind::IndexExists,
            Error::UnknownIndex(_) => ErrorKind::UnknownIndex,
            Error::CapacityExceeded { .. } | Error::ReserveReached { .. } => {
                ErrorKind::CapacityExceeded
            }
            Error::WorkLimit { .. } => ErrorKind::WorkLimit,
            Error::TooManyIndexes { .. } => ErrorKind::TooManyIndexes,
            Error::SnapshotExpired { .. } => ErrorKind::SnapshotExpired,
            Error::NamespaceReadOnly(_) => ErrorKind::NamespaceReadOnly,
            Error::Closed => ErrorKind::Closed,
            Error::Background(_) => ErrorKind::Background,
        }
    }

    /// Wraps an I/O error with the file it happened on; a full disk becomes [`Error::NoSpace`].
    pub fn io(file: impl Into<String>, source: io::Error) -> Error {
        let file = file.into();
        if source.kind() == io::ErrorKind::StorageFull
            || source.raw_os_error() == Some(28 /* ENOSPC */)
        {
            Error::NoSpace { file, source }
        } else {
            Error::Io { file, source }
        }
    }

    /// A [`Error::Corruption`] found in `file` at byte `offset`.
    pub fn corruption(file: impl Into<String>, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// Stored data failed a check ([`ErrorKind::Corruption`]).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// The same error for another caller: every member of a failed commit group gets the
    /// leader's error with its kind (a full disk stays [`Error::NoSpace`]).
    pub fn duplicate(&self) -> Error {
        let io = |e: &io::Error| match e.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(e.kind(), e.to_string()),
        };
        match self {
            Error::Io { file, source } => Error::Io {
                file: file.clone(),
                source: io(source),
            },
            Error::NoSpace { file, source } => Error::NoSpace {
                file: file.clone(),
                source: io(source),
            },
            Error::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                reason: reason.clone(),
            },
            Error::KeyTooLarge { len, limit } => Error::KeyTooLarge {
                len: *len,
                limit: *limit,
            },
            Error::ValueTooLarge { len, limit } => Error::ValueTooLarge {
                len: *len,
                limit: *limit,
            },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::TooManyKeys { count, limit } => Error::TooManyKeys {
                count: *count,
                limit: *limit,
            },
            Error::TooManyBytes { bytes, limit } => Error::TooManyBytes {
                bytes: *bytes,
                limit: *limit,
            },
            Error::UnknownNamespace(ns) => Error::UnknownNamespace(*ns),
            Error::NamespaceExists(n) => Error::NamespaceExists(n.clone()),
            Error::IndexExists { attr, kind } => Error::IndexExists {
                attr: attr.clone(),
                kind: *kind,
            },
            Error::UnknownIndex(a) => Error::UnknownIndex(a.clone()),
            Error::InvalidQuery(m) => Error::InvalidQuery(m.clone()),
            Error::WorkLimit { limit } => Error::WorkLimit { limit: *limit },
            Error::CapacityExceeded {
                ns,
                used,
                pending,
                write,
                capacity,
            } => Error::CapacityExceeded {
                ns: *ns,
                used: *used,
                pending: *pending,
                write: *write,
                capacity: *capacity,
            },
            Error::ReserveReached { free, reserve } => Error::ReserveReached {
                free: *free,
                reserve: *reserve,
            },
            Error::TooManyIndexes { ns, limit } => Error::TooManyIndexes {
                ns: *ns,
                limit: *limit,
            },
            Error::SnapshotExpired { max_age_ms } => Error::SnapshotExpired {
                max_age_ms: *max_age_ms,
            },
            Error::NamespaceReadOnly(ns) => Error::NamespaceReadOnly(*ns),
            Error::Closed => Error::Closed,
            Error::Background(m) => Error::Background(m.clone()),
        }
    }

    /// A full disk: the write failed, nothing is lost, and it may succeed once space returns.
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::NoSpace { .. })
    }
}

/// Adds the file name to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn ctx(self, file: &str) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx(self, file: &str) -> Result<T> {
        self.map_err(|e| Error::io(file, e))
    }
}

#[cfg(test)]
mod kind_tests {
    use super::{Error, ErrorKind};
    use std::io;

    #[test]
    fn every_error_has_its_kind_and_a_duplicate_keeps_it() {
        let enospc = || io::Error::from_raw_os_error(28);
        for (e, kind) in [
            (Error::io("f", io::Error::other("x")), ErrorKind::Io),
            (Error::io("f", enospc()), ErrorKind::NoSpace),
            (Error::corruption("f", 0, "bad"), ErrorKind::Corruption),
            (
                Error::KeyTooLarge { len: 2, limit: 1 },
                ErrorKind::KeyTooLarge,
            ),
            (
                Error::ValueTooLarge { len: 2, limit: 1 },
                ErrorKind::ValueTooLarge,
            ),
            (
                Error::InvalidArgument("a".into()),
                ErrorKind::InvalidArgument,
            ),
            (Error::InvalidQuery("q".into()), ErrorKind::InvalidQuery),
            (Error::UnknownNamespace(1), ErrorKind::UnknownNamespace),
            (
                Error::NamespaceExists("n".into()),
                ErrorKind::NamespaceExists,
            ),
            (Error::UnknownIndex("a".into()), ErrorKind::UnknownIndex),
            (
                Error::IndexExists {
                    attr: "a".into(),
                    kind: crate::index_kind::IndexKind::Classic,
                },
                ErrorKind::IndexExists,
            ),
            (Error::WorkLimit { limit: 5 }, ErrorKind::WorkLimit),
            (Error::NamespaceReadOnly(3), ErrorKind::NamespaceReadOnly),
            (Error::Closed, ErrorKind::Closed),
            (Error::Background("b".into()), ErrorKind::Background),
        ] {
            assert_eq!(e.kind(), kind, "{e}");
            assert_eq!(e.duplicate().kind(), kind, "{e}");
        }
    }
}
