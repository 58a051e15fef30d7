//! What a session and the device it runs against agree on: the hosts the device knows and
//! their secrets, the subsystems to connect to, and the opening an input's first byte picks.

use super::nvme_wire::SUBNQN;
use cerberus_proto::nvme::{DhchapSecret, HashId, Pdu};
use std::time::Duration;

/// The host taken at its word (`require_host_auth = false`), granted every namespace.
pub(super) const OPEN_HOST: &str = "nqn.2014-08.org.example:fuzz-open";
/// The host that must authenticate (a DH-HMAC-CHAP secret, and a controller secret so that
/// bidirectional authentication is exercised too), granted every namespace.
pub(super) const AUTH_HOST: &str = "nqn.2014-08.org.example:fuzz-auth";
/// A host the device does not know.
const STRANGER: &str = "nqn.2014-08.org.example:stranger";

pub(super) fn host_secret() -> String {
    DhchapSecret::encode(Some(HashId::Sha256), &[0x5a; 32])
}

pub(super) fn ctrl_secret() -> String {
    DhchapSecret::encode(None, &[0xc3; 32])
}

/// How long a session waits for the answer to a command it sent.
pub(super) const ANSWER_WAIT: Duration = Duration::from_millis(10);

/// The ICReq digests, the queue and the host an input's first byte chooses; the rest are ops.
pub(super) struct Opening {
    pub host: &'static str,
    pub digests: cerberus_proto::nvme::Digests,
    /// A legitimate admin queue of `OPEN_HOST` first, so that the session's queue can be an
    /// I/O queue of its controller.
    pub io: bool,
}

impl Opening {
    pub fn of(b: u8) -> Opening {
        Opening {
            host: [OPEN_HOST, AUTH_HOST, OPEN_HOST, STRANGER][usize::from(b & 3)],
            digests: cerberus_proto::nvme::Digests {
                header: b & 4 != 0,
                data: b & 8 != 0,
            },
            io: b & 0x10 != 0,
        }
    }
}

/// Whether `pdu` says the device ended the connection.
pub(super) fn is_term(pdu: &Pdu) -> bool {
    matches!(pdu, Pdu::C2HTermReq { .. })
}

/// The subsystem NQN sessions connect to, or another the input picks.
pub(super) fn subnqn(b: u8) -> &'static str {
    match b % 8 {
        0 => cerberus_proto::nvme::DISCOVERY_NQN,
        1 => "nqn.2026-11.dev.cerberus:other",
        _ => SUBNQN,
    }
}
