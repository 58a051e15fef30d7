//! Namespaces' shares on the NVMe/TCP target (issue 61, point 4): the same gate as the
//! native port's commands (`shares::decide`), for KV commands and vendor Submits alike.
//!
//! - At a contended core, a command waits for the core's turn before it is taken in, as a
//!   native frame does: its namespace's floor (reservation), weight and ceiling choose it
//!   among the core's waiting commands of every wire. The turn covers the queue's next
//!   commands of the same namespace (`Turn::extend`) and the held Retrieves they let in,
//!   and is given back before the queue writes or waits (a host that stops reading must
//!   not hold the core's turn).
//! - At an uncontended core, a namespace with a ceiling (`--limit-ops`, `--limit-bytes`)
//!   books its slot (`Shares::ceiling_wait`) when the command starts; past the limit the
//!   command is held on its queue until then, and the queue goes on reading and serving
//!   other commands meanwhile.
//!
//! Before, KV commands passed no gate at all, and then only the ceiling.

use super::conn::{Conn, End};
use crate::shares::gate::{decide, take_turn, Pass, Turn};
use crate::shares::Shares;
use bytes::Bytes;
use cerberus_proto::nvme::{KvOpcode, Pdu, Sqe, VENDOR_FETCH, VENDOR_SUBMIT};
use tokio::time::Instant;

impl Conn {
    /// The namespace and request bytes the gate weighs `pdu` by, if it is an I/O command
    /// of a namespace (a KV command or a vendor Submit on an open I/O queue).
    pub(super) fn gated(&self, pdu: &Pdu) -> Option<(u32, u64)> {
        let Pdu::CapsuleCmd { sqe, data } = pdu else {
            return None;
        };
        if !self.is_io_command(sqe) {
            return None;
        }
        request_bytes(sqe, data).map(|bytes| (sqe.nsid, bytes))
    }

    /// Passes the core's gate for a command of `ns` carrying `bytes`, within `turn` if it
    /// covers it; whether the namespace's tags were charged for it (a turn: its ceiling is
    /// not booked again when it starts).
    pub(super) async fn pass_gate<'s>(
        &mut self,
        turn: &mut Option<Turn<'s>>,
        shares: &'s Shares,
        ns: u32,
        bytes: u64,
    ) -> Result<bool, End> {
        if turn.as_mut().is_some_and(|t| t.extend(ns, bytes)) {
            return Ok(true);
        }
        if turn.is_some() {
            // The Retrieves its turn let in run within it.
            self.run_held();
            *turn = None;
        }
        let own = self.may_use(ns);
        if decide(shares, ns, || own) != Pass::Turn {
            return Ok(false);
        }
        // The answers at hand go out before it waits (no turn held while writing).
        self.flush().await.map_err(|_| End::Quiet)?;
        *turn = Some(take_turn(shares, ns, bytes).await);
        Ok(true)
    }

    /// How long `sqe` waits for its namespace's ceiling; None for the device's own nsid, a
    /// namespace this host may not use (refused, and not charged), or within the limit.
    pub(super) fn ceiling_wait(&mut self, sqe: &Sqe, data: &Bytes) -> Option<std::time::Duration> {
        let ns = sqe.nsid;
        if !self.target.shared.shares.any_ceiling() || !self.may_use(ns) {
            return None;
        }
        let bytes = request_bytes(sqe, data)?;
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

/// The bytes a command carries, as the native port counts a frame's body: a Store's value
/// or a Submit's frame (fetched after it starts, so CDW10 says how long), else the
/// capsule's data. None for what the gate does not weigh: the device's own nsid, and a
/// Fetch (the second half of a vendor command whose Submit passed the gate: counted
/// again, a limited namespace would get half its operations through the vendor pair).
fn request_bytes(sqe: &Sqe, data: &Bytes) -> Option<u64> {
    if sqe.nsid == cerberus_proto::DEVICE_NSID || sqe.opcode == VENDOR_FETCH {
        return None;
    }
    Some(match sqe.opcode {
        o if o == KvOpcode::Store as u8 || o == VENDOR_SUBMIT => u64::from(sqe.cdw(10)),
        _ => data.len() as u64,
    })
}
