//! How the target answers a command: a completion (with data for the host first) or none
//! yet, and the generic error statuses its commands share.

use bytes::Bytes;
use cerberus_proto::nvme::NvmeStatus;

/// How a command is answered.
pub(super) enum Answer {
    /// A completion, with data for the host first.
    Done {
        status: NvmeStatus,
        dw0: u32,
        /// Property Get of an 8-byte register: its upper half.
        dw1: u32,
        data: Option<Bytes>,
    },
    /// Not now (an Async Event Request: completed by no event this target raises).
    Hold,
}

impl Answer {
    pub(super) fn status(status: NvmeStatus) -> Answer {
        Answer::Done {
            status,
            dw0: 0,
            dw1: 0,
            data: None,
        }
    }

    pub(super) fn ok(dw0: u32) -> Answer {
        Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0,
            dw1: 0,
            data: None,
        }
    }

    pub(super) fn data(data: Vec<u8>) -> Answer {
        Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0: 0,
            dw1: 0,
            data: Some(Bytes::from(data)),
        }
    }
}

/// Generic status "Invalid Field in Command".
pub(super) fn invalid_field() -> NvmeStatus {
    NvmeStatus::error(0, 0x02)
}

/// Generic status "Invalid Namespace or Format".
pub(super) fn invalid_namespace() -> NvmeStatus {
    NvmeStatus::error(0, 0x0B)
}
