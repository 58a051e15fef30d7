//! A queue's Retrieves held to be carried out together as one engine read (`io`), as the
//! native port batches a connection's pipelined gets.

use cerberus_proto::nvme::Sqe;
use cerberus_proto::Command;

/// Retrieves held to be carried out together (`Conn::run_held`): their commands, and what
/// answering each takes, side by side.
#[derive(Default)]
pub(super) struct Held {
    pub(super) cmds: Vec<Command>,
    pub(super) answering: Vec<Answering>,
}

impl Held {
    pub(super) fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }
}

/// What answering a held Retrieve takes.
pub(super) struct Answering {
    pub(super) sqe: Sqe,
    pub(super) buffer: usize,
    pub(super) cost: usize,
    pub(super) arrived: quanta::Instant,
}
