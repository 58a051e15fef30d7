//! NVMe over TCP, as the NVMe/TCP transport specification frames it (written from the NVMe
//! Base 2.x, NVMe over Fabrics and NVMe/TCP transport specifications): the PDUs a host and a
//! controller exchange on a queue's connection (`pdu`), and the 64-byte submission and
//! 16-byte completion queue entries they carry (`queue_entry`). No I/O, as the rest of this
//! crate: the device's NVMe/TCP target and the host's initiator move the bytes.

mod pdu;
mod queue_entry;

pub use pdu::{split_pdu, Digests, NvmeTcpError, Pdu, PduLimits, PduType, CH_LEN, PFV_1_0};
pub use queue_entry::{Cqe, NvmeStatus, Sqe, CQE_LEN, SQE_LEN};
