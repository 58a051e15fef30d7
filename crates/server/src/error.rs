//! What can stop a device from starting or make it stop.

use cerberus_device::DeviceError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration, a start or a stop of the device.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// An address the device was told to listen on is held by another program.
    #[error(
        "cannot listen on {addr}: {error}: another program holds it (a device already \
         running?): stop it, or give another address with {flag}"
    )]
    AddressInUse {
        addr: String,
        error: std::io::Error,
        flag: &'static str,
    },
    #[error("reading the admin secret from {path}: {error}")]
    AdminSecretFile {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} holds no admin secret (its first line is empty)")]
    EmptyAdminSecret { path: PathBuf },
    #[error(
        "RUST_LOG={spec:?}: {reason} (expected a level or target=level pairs, as \
         \"info,cerberus_device=debug\")"
    )]
    LogFilter { spec: String, reason: String },
    /// Writing the lines that say where the device listens.
    #[error("writing to stdout: {0}")]
    Stdout(std::io::Error),
}
