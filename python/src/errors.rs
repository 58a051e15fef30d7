//! Exceptions: one class per device status under `CerberusError`, so that a Python caller
//! catches the same class whether an embedded database or a device refused the call.

use cerberus_engine::{Error as EngineError, ErrorKind};
use cerberus_host::{Error as HostError, Status};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _cerberus,
    CerberusError,
    PyException,
    "Every error Cerberus raises."
);
create_exception!(
    _cerberus,
    InvalidOpcode,
    CerberusError,
    "The device does not know the command."
);
create_exception!(
    _cerberus,
    InvalidField,
    CerberusError,
    "An argument or query is not valid."
);
create_exception!(
    _cerberus,
    InternalError,
    CerberusError,
    "The engine or device failed."
);
create_exception!(
    _cerberus,
    InvalidNamespace,
    CerberusError,
    "No such namespace."
);
create_exception!(
    _cerberus,
    CapacityExceeded,
    CerberusError,
    "Out of space or over a limit."
);
create_exception!(
    _cerberus,
    InvalidValueSize,
    CerberusError,
    "The value is too large."
);
create_exception!(
    _cerberus,
    InvalidKeySize,
    CerberusError,
    "The key is empty or too large."
);
create_exception!(
    _cerberus,
    KeyNotFound,
    CerberusError,
    "The key does not exist."
);
create_exception!(_cerberus, KeyExists, CerberusError, "The key exists.");
create_exception!(
    _cerberus,
    AccessDenied,
    CerberusError,
    "Not authenticated for this."
);
create_exception!(
    _cerberus,
    NamespaceExists,
    CerberusError,
    "A namespace has that name."
);
create_exception!(
    _cerberus,
    UnsupportedVersion,
    CerberusError,
    "Protocol version refused."
);
create_exception!(
    _cerberus,
    Corrupted,
    CerberusError,
    "Stored data failed its checksum."
);
create_exception!(
    _cerberus,
    ShuttingDown,
    CerberusError,
    "The database or device is closed."
);
create_exception!(
    _cerberus,
    IteratorNotFound,
    CerberusError,
    "The scan or snapshot expired (past its maximum age) or closed."
);
create_exception!(
    _cerberus,
    IteratorLimit,
    CerberusError,
    "Too many scans open."
);
create_exception!(
    _cerberus,
    IndexLimit,
    CerberusError,
    "The namespace has as many indexes as it may."
);
create_exception!(
    _cerberus,
    IndexNotFound,
    CerberusError,
    "No index on that attribute."
);
create_exception!(
    _cerberus,
    IndexExists,
    CerberusError,
    "That attribute is indexed already."
);
create_exception!(
    _cerberus,
    ReplyTooLarge,
    CerberusError,
    "The answer is larger than the device returns at once: ask for less, or page with find."
);
create_exception!(
    _cerberus,
    NamespaceReadOnly,
    CerberusError,
    "The namespace is read-only (a cluster move is copying it): nothing was written."
);
create_exception!(
    _cerberus,
    ConnectionError,
    CerberusError,
    "The connection failed or closed."
);
create_exception!(
    _cerberus,
    StorageError,
    CerberusError,
    "The storage failed (I/O)."
);

/// Adds every exception class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    macro_rules! add {
        ($($t:ident),*) => { $( m.add(stringify!($t), py.get_type::<$t>())?; )* };
    }
    add!(
        CerberusError,
        InvalidOpcode,
        InvalidField,
        InternalError,
        InvalidNamespace,
        CapacityExceeded,
        InvalidValueSize,
        InvalidKeySize,
        KeyNotFound,
        KeyExists,
        AccessDenied,
        NamespaceExists,
        UnsupportedVersion,
        Corrupted,
        ShuttingDown,
        IteratorNotFound,
        IteratorLimit,
        IndexLimit,
        IndexNotFound,
        IndexExists,
        ReplyTooLarge,
        NamespaceReadOnly,
        ConnectionError,
        StorageError
    );
    Ok(())
}

fn by_status(status: Status, msg: String) -> PyErr {
    match status {
        Status::InvalidOpcode => InvalidOpcode::new_err(msg),
        Status::InvalidField => InvalidField::new_err(msg),
        Status::InvalidNamespace => InvalidNamespace::new_err(msg),
        Status::CapacityExceeded => CapacityExceeded::new_err(msg),
        Status::InvalidValueSize => InvalidValueSize::new_err(msg),
        Status::InvalidKeySize => InvalidKeySize::new_err(msg),
        Status::KeyNotExist => KeyNotFound::new_err(msg),
        Status::KeyExists => KeyExists::new_err(msg),
        Status::AccessDenied => AccessDenied::new_err(msg),
        Status::NamespaceExists => NamespaceExists::new_err(msg),
        Status::UnsupportedVersion => UnsupportedVersion::new_err(msg),
        Status::Corrupted => Corrupted::new_err(msg),
        Status::ShuttingDown => ShuttingDown::new_err(msg),
        Status::IteratorNotFound => IteratorNotFound::new_err(msg),
        Status::IteratorLimit => IteratorLimit::new_err(msg),
        Status::SnapshotExpired => IteratorNotFound::new_err(msg),
        Status::IndexLimit => IndexLimit::new_err(msg),
        Status::IndexNotFound => IndexNotFound::new_err(msg),
        Status::IndexExists => IndexExists::new_err(msg),
        Status::ReplyTooLarge => ReplyTooLarge::new_err(msg),
        Status::NamespaceReadOnly => NamespaceReadOnly::new_err(msg),
        _ => InternalError::new_err(msg),
    }
}

/// The exception for an engine error: the class the device would answer with (the device's
/// own mapping, `engine_status!`), except that failed storage I/O, an internal error on the
/// wire, has a class of its own here.
pub fn engine(e: EngineError) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Io => StorageError::new_err(msg),
        kind => by_status(cerberus_host::proto::engine_status!(kind), msg),
    }
}

/// The exception for a client error.
pub fn host(e: HostError) -> PyErr {
    let msg = e.to_string();
    match e {
        HostError::Io(_) | HostError::Tls(_) | HostError::ConnectionClosed | HostError::Timeout => {
            ConnectionError::new_err(msg)
        }
        HostError::Protocol(_) => InternalError::new_err(msg),
        HostError::AccessDenied(_) => AccessDenied::new_err(msg),
        HostError::KeyExists => KeyExists::new_err(msg),
        HostError::KeyNotExist => KeyNotFound::new_err(msg),
        HostError::InvalidKeySize(_) => InvalidKeySize::new_err(msg),
        HostError::InvalidValueSize(_) => InvalidValueSize::new_err(msg),
        HostError::CapacityExceeded(_) => CapacityExceeded::new_err(msg),
        HostError::InvalidNamespace(_) => InvalidNamespace::new_err(msg),
        HostError::NamespaceExists(_) => NamespaceExists::new_err(msg),
        HostError::IteratorNotFound(_) => IteratorNotFound::new_err(msg),
        HostError::IteratorLimit(_) => IteratorLimit::new_err(msg),
        HostError::IndexNotFound(_) => IndexNotFound::new_err(msg),
        HostError::IndexExists(_) => IndexExists::new_err(msg),
        HostError::ReplyTooLarge(_) => ReplyTooLarge::new_err(msg),
        HostError::Device { status, message } => by_status(status, message),
    }
}
