//! A connection's place on one of the network threads' cores (`scheduler`): native
//! connections and NVMe/TCP queues alike hold one while they live.

use crate::dispatch::Shared;
use std::sync::Arc;

/// A connection's place on its core, given back however the connection ends.
pub(crate) struct Placed(pub(crate) Arc<Shared>, pub(crate) usize);

impl Placed {
    /// Gives the place back while the connection goes on: it no longer counts toward its
    /// core's connections (an NVMe/TCP admin queue, which carries no I/O: counted, every I/O
    /// queue of hosts that connect admin queue, I/O queue, admin queue, ... in turn would be
    /// placed on the same core).
    pub(crate) fn release(&mut self) {
        self.0.scheduler.leave(self.1);
        // No core has this number: the drop's `leave` does nothing.
        self.1 = usize::MAX;
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        self.0.scheduler.leave(self.1);
    }
}
