//! The gets a connection holds back to run together (`gets`).

use cerberus_proto::Command;
use tokio::sync::OwnedSemaphorePermit;

/// A held get and what its answer needs.
pub(super) struct HeldGet {
    pub(super) cmd: Command,
    pub(super) permit: OwnedSemaphorePermit,
    pub(super) arrived: quanta::Instant,
}

/// The gets a connection holds (all of one namespace).
#[derive(Default)]
pub(super) struct HeldGets {
    pub(super) gets: Vec<HeldGet>,
}
