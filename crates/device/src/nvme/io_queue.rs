//! An I/O queue's commands through its connection: counted against the queue's entries,
//! admitted within the queue's byte bound and the device's (`flight`, `held`), a Store's
//! value asked for by one R2T once it starts and gathered from H2CData PDUs, finished as
//! answers come back (waiting commands started then).

use super::answer::Answer;
use super::conn::{Conn, End, FES_OUT_OF_RANGE, FES_SEQUENCE};
use super::flight::{Done, Pending, Queued};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{KvOpcode, Pdu, Sqe};
use tokio::time::Instant;

impl Conn {
    /// An I/O command: counted against the queue's size, started when its bytes fit the
    /// connection's budget (else it waits behind earlier ones). `charged`: its namespace's
    /// tags were charged for it at the core's gate (`gate.rs`).
    pub(super) fn io_capsule(&mut self, sqe: Sqe, data: Bytes, charged: bool) -> Result<(), End> {
        let Some(q) = self.queue.as_mut() else {
            return Err(End::Term(FES_SEQUENCE, 0));
        };
        // No more outstanding than the queue holds: a host past it broke the rules.
        if self.flight.count >= usize::from(q.sqsize) {
            return Err(End::Term(FES_SEQUENCE, 0));
        }
        self.flight.count += 1;
        q.sqhd = (q.sqhd + 1) % q.sqsize.max(1);
        let cost = self.cost(&sqe, &data);
        let cmd = Queued {
            sqe,
            data,
            cost,
            charged,
        };
        if self.flight.waiting.is_empty() && self.flight.admit(cost) {
            self.start(cmd);
        } else {
            self.flight.waiting.push_back(cmd);
        }
        Ok(())
    }

    /// The bytes of the budget a command holds while it runs: its capsule's data, and for
    /// the commands whose CDW10 is a length (a Store's value, a Retrieve's or List's
    /// buffer, a Submit's frame) that length, at most a value. Others' CDW10 is not a
    /// length: taken as one, a host could hold the device's bytes with Flushes. A Fetch
    /// holds none: the response it sends is counted where it is kept (`vendor.rs`), and
    /// charged again here a Fetch could wait for room only its own response would give back.
    fn cost(&self, sqe: &Sqe, data: &Bytes) -> usize {
        let sized = [KvOpcode::Store, KvOpcode::Retrieve, KvOpcode::List]
            .iter()
            .any(|&o| sqe.opcode == o as u8)
            || sqe.opcode == cerberus_proto::nvme::VENDOR_SUBMIT;
        if !sized {
            return data.len();
        }
        let max = self.target.shared.config.max_value_len;
        data.len().max(sqe.cdw(10).min(max) as usize)
    }

    /// Starts a command that fits: a Store without its data asks for it, the others go
    /// to a worker.
    /// (Its bytes taken: `Flight::admit`.)
    fn start(&mut self, cmd: Queued) {
        let Queued {
            sqe,
            data,
            cost,
            charged,
        } = cmd;
        if let Some(wait) = (!charged).then(|| self.ceiling_wait(&sqe, &data)).flatten() {
            // Past its namespace's limit: held (its bytes counted) until its booked slot.
            let at = Instant::now() + wait;
            self.flight.delayed.push((at, sqe, data, cost));
            return;
        }
        self.go(sqe, data, cost);
    }

    /// Runs a started command: a Store without its data asks for it, the others go to a
    /// worker (or are answered here).
    pub(super) fn go(&mut self, sqe: Sqe, data: Bytes, cost: usize) {
        if !self.wants_data(&sqe, &data) {
            self.io(sqe, data, cost);
            return;
        }
        if !self.may_fetch(sqe.nsid) {
            // Not a byte of data for a namespace this host may not use: refused now, so an
            // ungranted host cannot make the target wait for (and hold) what it announced.
            let refused = Answer::status(super::answer::invalid_namespace());
            self.flight.finish_now(sqe, refused, cost);
            return;
        }
        let size = sqe.cdw(10) as usize;
        let ttag = self.flight.ttag();
        self.flight.pending.insert(
            ttag,
            Pending {
                sqe,
                size,
                cost,
                value: BytesMut::with_capacity(size),
                since: Instant::now(),
            },
        );
        let r2t = Pdu::R2T {
            cccid: sqe.cid,
            ttag,
            r2to: 0,
            r2tl: size as u32,
        };
        self.send(&[r2t]);
    }

    /// A command's answer: sent, its slot and bytes freed, waiting commands started.
    pub(super) fn finished(&mut self, done: Done) {
        self.flight.count = self.flight.count.saturating_sub(1);
        if let Some(away) = done.away {
            self.flight.back(away.returned());
        }
        self.flight.release(done.cost);
        self.answer(&done.sqe, done.answer, false);
        self.start_waiting();
    }

    /// Starts the waiting commands that fit now; whether one did.
    pub(super) fn start_waiting(&mut self) -> bool {
        let mut started = false;
        while let Some(cmd) = self.flight.next_ready() {
            self.start(cmd);
            started = true;
        }
        started
    }

    pub(super) fn h2c_data(
        &mut self,
        cccid: u16,
        ttag: u16,
        datao: u32,
        last: bool,
        data: Bytes,
    ) -> Result<(), End> {
        let Some(p) = self.flight.pending.get_mut(&ttag) else {
            return Err(End::Term(FES_SEQUENCE, 0));
        };
        if p.sqe.cid != cccid {
            return Err(End::Term(FES_SEQUENCE, 0));
        }
        // In order, within what the R2T asked for.
        if datao as usize != p.value.len() || p.value.len() + data.len() > p.size {
            return Err(End::Term(FES_OUT_OF_RANGE, 0));
        }
        p.value.extend_from_slice(&data);
        p.since = Instant::now();
        if p.value.len() < p.size {
            if last {
                return Err(End::Term(FES_OUT_OF_RANGE, 0));
            }
            return Ok(());
        }
        let Some(p) = self.flight.pending.remove(&ttag) else {
            return Ok(());
        };
        self.io(p.sqe, p.value.freeze(), p.cost);
        Ok(())
    }
}
