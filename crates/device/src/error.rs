use std::path::Path;

/// Why the device could not start or stop cleanly. Each message says its cause once: an
/// I/O error is part of the message, not also a `source` that would print it again.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("data directory {0}")]
    DataDir(String),
    #[error("cannot listen on {addr}: {error}")]
    Listen { addr: String, error: std::io::Error },
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("engine: {0}")]
    Engine(#[from] cerberus_engine::Error),
    #[error("TLS: {0}")]
    Tls(String),
}

impl DeviceError {
    pub fn io(path: impl AsRef<Path>, error: std::io::Error) -> DeviceError {
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
