use std::path::Path;

/// Why the device could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("engine: {0}")]
    Engine(#[from] cerberus_engine::Error),
    #[error("TLS: {0}")]
    Tls(String),
}

impl DeviceError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> DeviceError {
        DeviceError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
