//! Errors of the cluster operations: each names the device, tenant or file it is about, since
//! a cluster has many of each and "connection refused" alone does not say which.

use std::path::PathBuf;

/// Why a cluster operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Reading or writing a file of the cluster (the description, a credential, a CA).
    #[error("{what} ({}): {source}", path.display())]
    File {
        /// What the file is ("cluster description", "credential of device d1", ...).
        what: String,
        /// Its path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The description file is not valid TOML of the expected shape.
    #[error("cluster description {}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, as the parser says it.
        message: String,
    },
    /// The description breaks a rule (unknown device, parts that do not match, ...); the
    /// message names the tenant or device.
    #[error("invalid cluster description: {0}")]
    Invalid(String),
    /// A request that does not fit the description (unknown tenant, a tenant that exists,
    /// a move already under way, ...); the message names the tenant or device.
    #[error("{0}")]
    Refused(String),
    /// A save found the description changed since it was read (another admin command saved
    /// meanwhile): nothing was written; run the command again.
    #[error(
        "cluster description {} changed since read (revision {read}, now {now}): nothing \
         written, retry the command",
        path.display()
    )]
    Changed {
        /// The file.
        path: PathBuf,
        /// The revision it had when read.
        read: u64,
        /// The revision it has now.
        now: u64,
    },
    /// The device entry gives no usable admin credential.
    #[error("device {device}: {message}")]
    Credential {
        /// The device's name.
        device: String,
        /// What is missing.
        message: String,
    },
    /// The device could not be reached (down, wrong address, TLS refused, ...).
    #[error("device {device} at {address} unreachable: {source}")]
    Unreachable {
        /// The device's name.
        device: String,
        /// Its address.
        address: String,
        /// The client's error.
        source: crate::error::Error,
    },
    /// A call to a device failed.
    #[error("device {device}: {action}: {source}")]
    Device {
        /// The device's name.
        device: String,
        /// What was being done ("creating namespace t1", ...).
        action: String,
        /// The client's error.
        source: crate::error::Error,
    },
    /// The records copied by a move do not match the records of the old placement.
    #[error("tenant {tenant}: move not verified: {message}")]
    Verify {
        /// The tenant.
        tenant: String,
        /// Which counts or digests differ.
        message: String,
    },
    /// An operation failed and undoing what it had done failed too: the leftovers are named,
    /// to be removed by hand.
    #[error("{error}; undoing it left behind: {}", leftovers.join(", "))]
    Leftovers {
        /// The failure that started the undo.
        error: Box<ClusterError>,
        /// What could not be undone.
        leftovers: Vec<String>,
    },
}

impl ClusterError {
    pub(crate) fn file(
        what: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> ClusterError {
        let (what, path) = (what.into(), path.into());
        move |source| ClusterError::File { what, path, source }
    }

    pub(crate) fn device(
        device: &str,
        action: impl Into<String>,
    ) -> impl FnOnce(crate::error::Error) -> ClusterError {
        let (device, action) = (device.to_string(), action.into());
        move |source| ClusterError::Device {
            device,
            action,
            source,
        }
    }

    /// `self`, or `self` with the `leftovers` an undo could not remove.
    pub(crate) fn with_leftovers(self, leftovers: Vec<String>) -> ClusterError {
        if leftovers.is_empty() {
            self
        } else {
            ClusterError::Leftovers {
                error: Box::new(self),
                leftovers,
            }
        }
    }
}
