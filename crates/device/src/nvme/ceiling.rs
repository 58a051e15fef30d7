//! Namespaces' limits on the NVMe/TCP target (issue 61, point 4): a KV command or vendor
//! Submit of a namespace with a ceiling (`--limit-ops`, `--limit-bytes`) books its slot in
//! the same tags as the native port's commands (`Shares::ceiling_wait`) and, past the
//! limit, is held on its queue until then; the queue goes on reading and serving other
//! commands meanwhile. Before, KV commands passed no gate at all.

use super::conn::Conn;
use bytes::Bytes;
use cerberus_proto::nvme::{KvOpcode, Sqe};
use tokio::time::Instant;

impl Conn {
    /// How long `sqe` waits for its namespace's ceiling; None for the device's own nsid, a
    /// namespace this host may not use (refused, and not charged), or within the limit.
    pub(super) fn ceiling_wait(&mut self, sqe: &Sqe, data: &Bytes) -> Option<std::time::Duration> {
        let ns = sqe.nsid;
        if !self.target.shared.shares.any_ceiling()
            || ns == cerberus_proto::DEVICE_NSID
            || !self.may_use(ns)
        {
            return None;
        }
        // The bytes it carries, as the native port counts a frame's body.
        let bytes = match sqe.opcode == KvOpcode::Store as u8 {
            true => u64::from(sqe.cdw(10)),
            false => data.len() as u64,
        };
        self.target.shared.shares.ceiling_wait(ns, bytes)
    }

    /// Runs the held commands that are due; whether any was.
    pub(super) fn release_due(&mut self) -> bool {
        if self.flight.delayed.is_empty() {
            return false;
        }
        let now = Instant::now();
        let mut any = false;
        while let Some(i) = self.flight.delayed.iter().position(|d| d.0 <= now) {
            let (_, sqe, data, cost) = self.flight.delayed.swap_remove(i);
            self.go(sqe, data, cost);
            any = true;
        }
        any
    }
}
