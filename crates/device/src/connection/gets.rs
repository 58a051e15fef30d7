//! Gets held back to run together: consecutive retrieves of one namespace read from one
//! connection's buffer wait until a frame that is not one of them, the end of what was read,
//! or [`BATCH_GETS`] of them, then run as one engine `get_many` (`Shared::retrieve_many`),
//! each reply sent in its command's order. Any other command (a write above all: a put
//! between two gets of one key must be seen by the second) runs the batch first, so each get
//! answers as it would alone. Each get has passed the shares gate on its own before it was
//! held, and holds its in-flight permit: the batch runs before the reader waits for anything.

use super::held_gets::HeldGet;
use super::Reader;
use crate::dispatch::Shared;
use crate::held::Reserved;
use cerberus_proto::{Command, Opcode, Response, Status};
use tokio::sync::OwnedSemaphorePermit;

/// Most gets run as one batch: each waits for the batch's last (as the puts of a piece do,
/// `put_batch::PIECE_PUTS`), and a pipeline of this many fills a batch.
pub const BATCH_GETS: usize = 64;

impl Reader {
    /// Holds `cmd`, a get [`Shared::batches_get`](crate::dispatch::Shared::batches_get) took
    /// and the session allows, running the batch first if it is of another namespace or full.
    pub(super) fn hold_get(
        &mut self,
        cmd: Command,
        permit: OwnedSemaphorePermit,
        arrived: quanta::Instant,
    ) {
        let other_ns = self
            .gets
            .gets
            .first()
            .is_some_and(|g| g.cmd.nsid != cmd.nsid);
        let n = self.gets.gets.len();
        if other_ns || n >= BATCH_GETS || (n > 0 && !self.fits_one_more(n)) {
            self.run_gets();
        }
        if self.gets.gets.is_empty() {
            // The batch comes after the puts of its namespace read before it (which
            // `handle` leaves to `carry_out`, off the loop, under write pressure).
            self.puts.store_for(&self.shared, cmd.nsid);
        }
        self.gets.gets.push(HeldGet {
            cmd,
            permit,
            arrived,
        });
    }

    /// Whether the device's held bytes have room for the answers of `n` held gets and one
    /// more, each at its largest, in this network thread's share of the room: else the
    /// batch runs first, its answers are counted, and the next frame sees them (a batch's
    /// answers are not counted until it runs, and every thread may be forming one at the
    /// same moment). A plain load per get after the first of a batch.
    fn fits_one_more(&self, n: usize) -> bool {
        let largest = self.shared.config.max_value_len as usize;
        let threads = self.shared.config.network_threads.max(1);
        self.shared
            .held
            .fits((n + 1).saturating_mul(largest).saturating_mul(threads))
    }

    /// Whether gets are held.
    pub(super) fn holds_gets(&self) -> bool {
        !self.gets.gets.is_empty()
    }

    /// Runs the held gets as one engine read, here if gets run on the network thread, else
    /// as one job on the workers; each reply goes to the writer with its permit.
    pub(super) fn run_gets(&mut self) {
        let Some(first) = self.gets.gets.first() else {
            return;
        };
        let (ns, inline) = (first.cmd.nsid, self.shared.runs_inline(&first.cmd));
        let n = self.gets.gets.len();
        if n > 1 {
            self.shared.metrics.get_batches.inc();
            self.shared.metrics.batched_gets.inc_by(n as u64);
        }
        if inline {
            // Answered on this task: each reply is encoded straight into the writer's buffer,
            // without waking the writer, which is polled right after this reader. The held
            // gets' vector keeps its room for the next batch.
            let (shared, tx, held) = (&*self.shared, &self.tx, &mut self.gets.gets);
            shared.scheduler.busy(true, || {
                answer_gets(shared, ns, held.drain(..), |resp, permit| {
                    let _ = tx.send_here(&resp, permit);
                })
            });
            return;
        }
        let held = std::mem::take(&mut self.gets.gets);
        let cids: Vec<u32> = held.iter().map(|g| g.cmd.cid).collect();
        // Their answers' room in the device's held bytes until each is counted by the writer:
        // the next frame's check sees it, where answers made later would not be.
        let value = self.shared.config.max_frame_body() as usize;
        let mut room = Reserved::take(&self.shared.held, n.saturating_mul(value));
        let (shared, tx) = (self.shared.clone(), self.tx.clone());
        let run = move || {
            answer_gets(&shared, ns, held.into_iter(), |resp, permit| {
                let _ = tx.send((resp, Some(permit)));
                // Its answer is counted by the writer now (if large): its room goes back.
                room.release(value);
            });
        };
        // The background work the batch makes belongs to the core that read it.
        let core = crate::scheduler::current_core();
        let submitted = self.workers.submit(Box::new(move || {
            crate::scheduler::on_behalf_of(core, run);
        }));
        if !submitted {
            // The job was dropped unrun, and its permits with it: answered as any command the
            // stopping workers no longer take.
            let opcode = Opcode::Retrieve as u8;
            for cid in cids {
                self.shared.metrics.record_refused(opcode);
                let msg = "device is stopping".to_string();
                let resp = Response::error(cid, ns, opcode, Status::ShuttingDown, msg);
                let _ = self.tx.send((resp, None));
            }
        }
    }
}

/// Runs `held` (gets of namespace `ns`) as one engine read and hands each reply, in their
/// order, to `reply` with its permit.
fn answer_gets(
    shared: &Shared,
    ns: u32,
    mut held: impl ExactSizeIterator<Item = HeldGet>,
    mut reply: impl FnMut(Response, OwnedSemaphorePermit),
) {
    let opcode = Opcode::Retrieve as u8;
    let mut answered = |resp: Response, permit, arrived: quanta::Instant| {
        let ok = resp.status.is_success();
        shared.record(ns, opcode, ok, arrived.elapsed());
        reply(resp, permit);
    };
    if held.len() == 1 {
        // A get alone (every get of an unpipelined client): no vectors to build.
        if let Some(g) = held.next() {
            answered(shared.retrieve_one(ns, &g.cmd), g.permit, g.arrived);
        }
        return;
    }
    let (cmds, rest): (Vec<Command>, Vec<_>) = held.map(|g| (g.cmd, (g.permit, g.arrived))).unzip();
    for (resp, (permit, arrived)) in shared.retrieve_many(ns, &cmds).into_iter().zip(rest) {
        answered(resp, permit, arrived);
    }
}
