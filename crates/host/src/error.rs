//! Errors of the client: transport failures, and the device's failure statuses as typed
//! variants (carrying the device's message where it sends one).

use cerberus_proto::{ProtoError, Status};

/// `Result` with the client's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Why a call failed: the connection, or the device's answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connecting, reading or writing the socket failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// TLS setup or handshake failed (bad PEM, untrusted certificate, name mismatch, ...).
    #[error("TLS error: {0}")]
    Tls(String),
    /// Bytes from the device that do not follow the protocol, or a request the protocol
    /// cannot carry.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The connection is gone (closed by either side, or broken); `Client::close_reason`
    /// says why. Every later call fails with this too: connect again.
    #[error("connection to the device is closed")]
    ConnectionClosed,
    /// The connect or request timeout of the `ClientConfig` ran out.
    #[error("timed out")]
    Timeout,
    /// The connection has not proved the credential the command needs; the device's message.
    #[error("access denied{}", suffix(.0))]
    AccessDenied(String),
    /// An only-if-absent store found the key.
    #[error("key exists")]
    KeyExists,
    /// The key does not exist (an only-if-present store; the typed getters turn it into
    /// `None` / `false` instead).
    #[error("key does not exist")]
    KeyNotExist,
    /// The key is empty or longer than the device takes; the device's message.
    #[error("invalid key size{}", suffix(.0))]
    InvalidKeySize(String),
    /// The value is longer than the device takes; the device's message.
    #[error("invalid value size{}", suffix(.0))]
    InvalidValueSize(String),
    /// The device has no room for the write; the device's message.
    #[error("capacity exceeded{}", suffix(.0))]
    CapacityExceeded(String),
    /// No namespace with that id; the device's message.
    #[error("invalid namespace{}", suffix(.0))]
    InvalidNamespace(String),
    /// A namespace of that name exists; the device's message.
    #[error("namespace exists{}", suffix(.0))]
    NamespaceExists(String),
    /// No open iterator with that id (closed, or closed by the device after sitting idle).
    #[error("no such iterator{}", suffix(.0))]
    IteratorNotFound(String),
    /// The connection has as many iterators open as the device allows.
    #[error("too many open iterators{}", suffix(.0))]
    IteratorLimit(String),
    /// The namespace has no index on that attribute.
    #[error("no such index{}", suffix(.0))]
    IndexNotFound(String),
    /// The namespace has an index on that attribute already.
    #[error("index exists{}", suffix(.0))]
    IndexExists(String),
    /// The answer would exceed what the device returns in one reply (its `max_reply_bytes`
    /// or `max_query_results`): ask for less, or page with find.
    #[error("reply too large{}", suffix(.0))]
    ReplyTooLarge(String),
    /// Any other failure status (internal error, corrupted, shutting down, codes this build
    /// does not know, ...).
    #[error("device error: {status}{}", suffix(.message))]
    Device {
        /// The status the device answered.
        status: Status,
        /// Its message (may be empty).
        message: String,
    },
}

fn suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

impl Error {
    /// The error for a completion with a failure `status` and the device's `message`.
    pub fn from_status(status: Status, message: String) -> Error {
        match status {
            Status::AccessDenied => Error::AccessDenied(message),
            Status::KeyExists => Error::KeyExists,
            Status::KeyNotExist => Error::KeyNotExist,
            Status::InvalidKeySize => Error::InvalidKeySize(message),
            Status::InvalidValueSize => Error::InvalidValueSize(message),
            Status::CapacityExceeded => Error::CapacityExceeded(message),
            Status::InvalidNamespace => Error::InvalidNamespace(message),
            Status::NamespaceExists => Error::NamespaceExists(message),
            Status::IteratorNotFound => Error::IteratorNotFound(message),
            Status::IteratorLimit => Error::IteratorLimit(message),
            Status::IndexNotFound => Error::IndexNotFound(message),
            Status::IndexExists => Error::IndexExists(message),
            Status::ReplyTooLarge => Error::ReplyTooLarge(message),
            status => Error::Device { status, message },
        }
    }

    /// The device's status behind this error; `None` for errors of the connection itself.
    pub fn status(&self) -> Option<Status> {
        match self {
            Error::Io(_)
            | Error::Tls(_)
            | Error::Protocol(_)
            | Error::ConnectionClosed
            | Error::Timeout => None,
            Error::AccessDenied(_) => Some(Status::AccessDenied),
            Error::KeyExists => Some(Status::KeyExists),
            Error::KeyNotExist => Some(Status::KeyNotExist),
            Error::InvalidKeySize(_) => Some(Status::InvalidKeySize),
            Error::InvalidValueSize(_) => Some(Status::InvalidValueSize),
            Error::CapacityExceeded(_) => Some(Status::CapacityExceeded),
            Error::InvalidNamespace(_) => Some(Status::InvalidNamespace),
            Error::NamespaceExists(_) => Some(Status::NamespaceExists),
            Error::IteratorNotFound(_) => Some(Status::IteratorNotFound),
            Error::IteratorLimit(_) => Some(Status::IteratorLimit),
            Error::IndexNotFound(_) => Some(Status::IndexNotFound),
            Error::IndexExists(_) => Some(Status::IndexExists),
            Error::ReplyTooLarge(_) => Some(Status::ReplyTooLarge),
            Error::Device { status, .. } => Some(*status),
        }
    }
}

impl From<ProtoError> for Error {
    fn from(e: ProtoError) -> Error {
        Error::Protocol(e.to_string())
    }
}
