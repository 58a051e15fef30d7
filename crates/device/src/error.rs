//! The device's error type, and binding a listener with the address in its error.

use std::path::Path;

/// Why the device could not start or stop cleanly. Each message says its cause once: an
/// I/O error is part of the message, not also a `source` that would print it again.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// A setting is out of range or contradicts another, the TOML file cannot be read or
    /// parsed, or a file the device keeps (credentials, admin secret) is malformed; the
    /// message says which. Also a device thread that panicked, found when it is joined.
    #[error("configuration: {0}")]
    Config(String),
    /// The data directory, or one of its ancestors, is a file, not a directory.
    #[error("data directory {0}")]
    DataDir(String),
    /// Binding a listening socket failed (address in use, no permission, bad address).
    #[error("cannot listen on {addr}: {error}")]
    Listen {
        /// The address as configured.
        addr: String,
        /// The bind's error.
        error: std::io::Error,
    },
    /// A file, directory or thread could not be made, read or written.
    #[error("{path}: {error}")]
    Io {
        /// The path, or what was being made when it is not a file (`runtime`, `workers`).
        path: String,
        /// The underlying error.
        error: std::io::Error,
    },
    /// The engine failed to open or to close.
    #[error("engine: {0}")]
    Engine(#[from] cerberus_engine::Error),
    /// The TLS certificate or key cannot be read or used.
    #[error("TLS: {0}")]
    Tls(String),
}

impl DeviceError {
    /// A [`DeviceError::Io`] naming `path`.
    pub(crate) fn io(path: impl AsRef<Path>, error: std::io::Error) -> DeviceError {
        DeviceError::Io {
            path: path.as_ref().display().to_string(),
            error,
        }
    }

    fn listen(addr: &str, error: std::io::Error) -> DeviceError {
        DeviceError::Listen {
            addr: addr.to_string(),
            error,
        }
    }
}

/// Binds `addr` for the device, naming the address in the error.
pub(crate) async fn bind(addr: &str) -> Result<tokio::net::TcpListener, DeviceError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| DeviceError::listen(addr, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_said_once() {
        let e = DeviceError::io("afile", std::io::Error::other("File exists"));
        assert_eq!(e.to_string(), "afile: File exists");
        assert!(std::error::Error::source(&e).is_none());
    }
}
