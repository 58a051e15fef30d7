//! Why an NVMe/TCP call of the initiator failed, and what the client's callers see of it.

use bytes::Bytes;
use cerberus_proto::nvme::{Cqe, NvmeStatus, NvmeTcpError};

/// `Result` with [`NvmeError`].
pub type Result<T> = std::result::Result<T, NvmeError>;

/// Why an NVMe/TCP call failed.
#[derive(Debug, thiserror::Error)]
pub enum NvmeError {
    /// Connecting, reading or writing the socket failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The target's bytes break the transport's rules.
    #[error("bad PDU from the target: {0}")]
    Pdu(#[from] NvmeTcpError),
    /// The target ended the connection with a C2HTermReq.
    #[error("the target terminated the connection (FES {fes:#x}, FEI {fei})")]
    Terminated {
        /// Fatal error status.
        fes: u16,
        /// Fatal error information.
        fei: u32,
    },
    /// The target closed the connection.
    #[error("connection closed")]
    Closed,
    /// A PDU this host did not expect now.
    #[error("unexpected PDU: {0}")]
    Unexpected(String),
    /// The command completed with a failure status.
    #[error("command failed: status type {}, code {:#x}", .0.sct, .0.sc)]
    Status(NvmeStatus),
    /// The controller did not become ready (or finish its shutdown) in time.
    #[error("controller not ready")]
    NotReady,
    /// In-band authentication (DH-HMAC-CHAP) failed, or the target asked for it and this
    /// host has no secret.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// A key the KV command set does not carry (it carries 1 to 16 bytes; List may start
    /// at none).
    #[error("a key of {0} bytes: the KV command set carries 1 to 16")]
    KeyLength(usize),
}

/// "Connect Invalid Host": the target refuses this host NQN (one that must authenticate
/// and has no secret configured there).
const CONNECT_INVALID_HOST: (u8, u8) = (1, 0x84);

impl From<NvmeError> for crate::error::Error {
    /// A refused secret or host is access denied, as a refused credential is on the native
    /// wire; the socket's failures are I/O errors; the rest break the protocol.
    fn from(e: NvmeError) -> crate::error::Error {
        match e {
            NvmeError::Io(e) => crate::error::Error::Io(e),
            NvmeError::Auth(_) => crate::error::Error::AccessDenied(format!("NVMe/TCP: {e}")),
            NvmeError::Status(s) if (s.sct, s.sc) == CONNECT_INVALID_HOST => {
                crate::error::Error::AccessDenied(format!(
                    "NVMe/TCP: the target refused this host NQN ({e})"
                ))
            }
            NvmeError::KeyLength(_) => {
                crate::error::Error::InvalidKeySize(format!("NVMe/TCP: {e}"))
            }
            e => crate::error::Error::Protocol(format!("NVMe/TCP: {e}")),
        }
    }
}

/// The completion, or its failure status as an error.
pub(super) fn ok(r: (Cqe, Bytes)) -> Result<(Cqe, Bytes)> {
    if r.0.status.is_success() {
        Ok(r)
    } else {
        Err(NvmeError::Status(r.0.status))
    }
}
