//! NVMe over TCP, as the NVMe/TCP transport specification frames it (written from the NVMe
//! Base 2.x, NVMe over Fabrics and NVMe/TCP transport specifications): the PDUs a host and a
//! controller exchange on a queue's connection (`pdu`), the 64-byte submission and
//! 16-byte completion queue entries they carry (`queue_entry`), the Fabrics commands that
//! open a queue and reach the controller's registers (`fabrics`), in-band authentication
//! (`auth`: DH-HMAC-CHAP, `dh`: its Diffie-Hellman groups), the admin commands a
//! target answers (`admin`), and the Key Value command set's commands in those entries
//! (`kv`). No I/O, as the rest of this
//! crate: the device's NVMe/TCP target and the host's initiator move the bytes.

mod admin;
mod auth;
mod dh;
mod fabrics;
mod fuzz;
mod kv;
mod pdu;
mod queue_entry;
mod vendor;

pub use admin::AdminCommand;
pub use auth::{
    authentication_required, failure, AuthMessage, Challenged, DhchapSecret, HashId, CONNECT_ATR,
    DHGROUP_NULL, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND, SECP_DHCHAP, SPSP_DHCHAP,
};
pub use dh::{augmented, DhGroup, DhKey, DH_PRIVATE_LEN};
pub use fabrics::{
    auth_command, connect_data, connect_invalid_parameters, fabrics_command, property,
    FabricsCommand, CONNECT_DATA_LEN, DEFAULT_SUBNQN, DISCOVERY_NQN, FABRICS_OPCODE, NQN_FIELD_LEN,
};
pub use fuzz::check_command_decoders;
pub use kv::{
    kv_status, KvCommand, KvKey, KvOpcode, MAX_KV_KEY, STORE_ONLY_IF_ABSENT, STORE_ONLY_IF_PRESENT,
};
pub use pdu::{split_pdu, Digests, NvmeTcpError, Pdu, PduLimits, PduType, CH_LEN, PFV_1_0};
pub use queue_entry::{Cqe, NvmeStatus, Sqe, CQE_LEN, SQE_LEN};
pub use vendor::{
    SC_COMMAND_SEQUENCE_ERROR, SC_DATA_SGL_LENGTH_INVALID, VENDOR_FETCH, VENDOR_SUBMIT,
};
