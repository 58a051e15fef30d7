//! One frame read by a connection: decoded, answered here (Authenticate, Identify),
//! refused, held back in the batch of puts or of gets, run inline, or handed to the workers.

use super::{refuse, Reader};
use crate::held::Reserved;
use crate::put_batch::{HeldPut, PutReply};
use crate::workers::{answer, answer_small_query};
use cerberus_proto::{Command, Frame, Status};
use tokio::sync::OwnedSemaphorePermit;

impl Reader {
    pub(super) fn handle(&mut self, frame: Frame, permit: OwnedSemaphorePermit) {
        // The TSC clock: two reads per command, at a third of the system clock's cost.
        let arrived = quanta::Instant::now();
        crate::spin::touch();
        let cmd = match Command::decode(&frame) {
            Ok(c)
                if self.shared.batches_get(&c)
                    && self.session.allows(&c, &self.shared.creds)
                    && !self.puts.must_follow(&self.shared, c.nsid, self.order_id) =>
            {
                self.hold_get(c, permit, arrived);
                return;
            }
            decoded => {
                // Whatever comes next is answered after the gets held before it.
                self.run_gets();
                decoded
            }
        };
        let cmd = match cmd {
            Ok(c) => c,
            Err(e) => {
                self.shared.metrics.protocol_errors.inc();
                let msg = e.to_string();
                refuse(
                    &self.shared,
                    &self.tx,
                    &frame,
                    e.status(),
                    &msg,
                    Some(permit),
                );
                return;
            }
        };
        let here = self
            .session
            .answer_here(&cmd, &mut self.ticket, &self.shared, arrived);
        if let Some(resp) = here {
            let _ = self.tx.send((resp, Some(permit)));
            return;
        }
        if !self.session.allows(&cmd, &self.shared.creds) {
            refuse(
                &self.shared,
                &self.tx,
                &frame,
                Status::AccessDenied,
                "this connection has not authenticated for that namespace",
                Some(permit),
            );
            return;
        }
        self.carry_out(cmd, &frame, permit, arrived);
    }

    /// Runs an allowed command: held back with the puts around it, here on the network
    /// thread, or on the workers.
    fn carry_out(
        &mut self,
        cmd: Command,
        frame: &Frame,
        permit: OwnedSemaphorePermit,
        arrived: quanta::Instant,
    ) {
        let shared = &self.shared;
        if shared.batchable(&cmd) {
            let held = HeldPut {
                cmd,
                arrived,
                reply: PutReply::Native(self.tx.clone(), permit),
                iters: self.iters.clone(),
                from: self.order_id,
            };
            self.puts.hold(held, shared);
            return;
        }
        // Anything else comes after the puts of its namespace read before it and the writes
        // this connection sent before it: here, or on a worker after them when the engine
        // would hold the store up or some of them are on a worker already.
        let store_first = self.puts.must_follow(shared, cmd.nsid, self.order_id);
        if store_first {
            shared.metrics.writes_off_loop.inc();
        } else {
            self.puts.store_for(shared, cmd.nsid);
            if shared.runs_inline(&cmd) {
                // Cannot block for long: answered here, without two hand-offs between threads.
                let resp = answer(shared, cmd, &self.iters, arrived);
                let _ = self.tx.send((resp, Some(permit)));
                return;
            }
            let (small, tried) = answer_small_query(shared, &cmd, arrived);
            if tried {
                // Its turn ends sooner: a query tried here (answered or not) may take
                // hundreds of microseconds.
                self.turn.inline_query();
            }
            if let Some(resp) = small {
                let _ = self.tx.send((resp, Some(permit)));
                return;
            }
        }
        // Its answer's room in the device's held bytes, from now until the answer is counted
        // by the writer: the next frame's check sees it, so a connection hands the workers
        // no more than the budget can answer.
        let room = Reserved::take(&shared.held, shared.answer_room(&cmd));
        let job_shared = shared.clone();
        let job_tx = self.tx.clone();
        let job_iters = self.iters.clone();
        // The background work the command makes belongs to the core that read it.
        let core = crate::scheduler::current_core();
        let (nsid, writes) = (cmd.nsid, cmd.request.writes());
        let job = Box::new(move || {
            let resp = crate::scheduler::on_behalf_of(core, || {
                answer(&job_shared, cmd, &job_iters, arrived)
            });
            let _ = job_tx.send((resp, Some(permit)));
            drop(room);
        });
        // A write keeps its place: what the connection sends after it sees it.
        let submitted = if store_first || writes {
            self.puts.follow(shared, nsid, self.order_id, job)
        } else {
            self.workers.submit(job)
        };
        if !submitted {
            let stopping = Status::ShuttingDown;
            refuse(
                shared,
                &self.tx,
                frame,
                stopping,
                "device is stopping",
                None,
            );
        }
    }
}
