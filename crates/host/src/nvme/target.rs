//! Who connects to an NVMe/TCP target, and where.

use cerberus_proto::nvme::Digests;

/// Who connects, and where.
#[derive(Clone, Debug)]
pub struct NvmeTarget {
    /// `host:port` of the target.
    pub addr: String,
    /// The subsystem's NQN.
    pub subnqn: String,
    /// This host's NQN (what the device's grants name).
    pub hostnqn: String,
    /// Header and data digests to ask for.
    pub digests: Digests,
    /// This host's DH-HMAC-CHAP secret (`DHHC-1:<hh>:<base64>:`): each queue authenticates
    /// with it when the target's Connect response asks (None: a target that asks refuses).
    pub host_secret: Option<String>,
    /// The controller secret this host asks the target to prove itself with (bidirectional
    /// authentication; None: the host does not ask).
    pub ctrl_secret: Option<String>,
}
