//! The vendor command pair (`docs/protocol.md`, "Over NVMe/TCP: vendor commands"): Submit
//! carries one native request frame, which runs through the same dispatch as the native
//! port's; its encoded response is kept for the queue, under the native command id, until
//! a Fetch naming that id sends it back. Everything
//! the KV command set lacks (long keys, indexes, queries, iterators, stats, namespaces)
//! reaches the device this way, in the native encoding, so there is one encoding to keep.
//!
//! Tenancy: the queue's native session (`Authenticate` inside the tunnel) is checked as on
//! the native port, and on top of it a namespace must be granted to the host NQN, and the
//! admin credential is taken only from a host NQN in `nvme.admin_hosts`.

use super::answer::{invalid_field, invalid_namespace, Answer};
use super::conn::{sgl_len, Conn};
use super::vendor_state::{frame_len_ok, keep, MAX_KEPT};
use crate::connection::session::UNNAMED;
use crate::iterators::ConnIterators;
use crate::workers::answer;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    NvmeStatus, Sqe, SC_COMMAND_SEQUENCE_ERROR, SC_DATA_SGL_LENGTH_INVALID, VENDOR_FETCH,
    VENDOR_SUBMIT,
};
use cerberus_proto::{split_frame, Command, Reply, Request, Response, Status, DEVICE_NSID};
use std::sync::Arc;
use std::time::Duration;

impl Conn {
    /// Starts a vendor command (its answer comes back through `flight`, holding `cost`
    /// bytes); false for any other opcode.
    pub(super) fn vendor(&mut self, sqe: &Sqe, data: &Bytes, cost: usize) -> bool {
        match sqe.opcode {
            VENDOR_SUBMIT => {
                if let Some(answer) = self.submit(sqe, data, cost) {
                    self.flight.finish_now(*sqe, answer, cost);
                }
            }
            VENDOR_FETCH => {
                let answer = self.fetch(sqe);
                self.flight.finish_now(*sqe, answer, cost);
            }
            _ => return false,
        }
        true
    }

    /// A Submit: checked and admitted here, in arrival order (an Authenticate counts for
    /// the commands after it), then run on a worker; `Some` when answered at once.
    fn submit(&mut self, sqe: &Sqe, data: &Bytes, cost: usize) -> Option<Answer> {
        let cap = self.target.config.max_queue_bytes as usize;
        {
            let mut kept = self.vendor.kept.lock();
            kept.expire();
            if kept.responses.len() + kept.running >= MAX_KEPT || kept.bytes >= cap {
                // Fetch what is kept first: else a host that never fetches grows this.
                return Some(Answer::status(NvmeStatus::error(
                    0,
                    SC_COMMAND_SEQUENCE_ERROR,
                )));
            }
        }
        let max_body = self.target.shared.config.max_frame_body();
        let len = sqe.cdw(10);
        if !frame_len_ok(len, max_body) || data.len() != len as usize {
            return Some(Answer::status(invalid_field()));
        }
        let mut buf = BytesMut::from(&data[..]);
        let frame = match split_frame(&mut buf, max_body) {
            Ok(Some(f)) if buf.is_empty() && f.header.nsid == sqe.nsid => f,
            // A short, long or foreign frame, or another version: nothing to answer in.
            _ => return Some(Answer::status(invalid_field())),
        };
        let response = match Command::decode(&frame) {
            Ok(cmd) => match self.admit(&cmd) {
                Err(status) => return Some(Answer::status(status)),
                Ok(Some(refused)) => refused,
                Ok(None) => {
                    self.carry_out(*sqe, cmd, cost);
                    return None;
                }
            },
            Err(e) => {
                self.target.shared.metrics.protocol_errors.inc();
                let h = frame.header;
                Response::error(h.cid, h.nsid, h.opcode, e.status(), e.to_string())
            }
        };
        Some(keep(
            &self.vendor.kept,
            frame.header.cid,
            &response,
            false,
            cap,
        ))
    }

    /// Checks a decoded command against the host's grants (an NVMe status when it names a
    /// namespace the host may not use) and the tunnel's session (a native refusal).
    fn admit(&mut self, cmd: &Command) -> Result<Option<Response>, NvmeStatus> {
        let admin_host = self.admin_host();
        let admin = self.vendor.session.is_admin() && admin_host;
        let opcode = cmd.request.opcode() as u8;
        let denied = |target: &Self, msg: String| {
            target.target.shared.metrics.record_refused(opcode);
            Response::error(cmd.cid, cmd.nsid, opcode, Status::AccessDenied, msg)
        };
        if let Request::AuthenticateByName { name, secret } = &cmd.request {
            // The grant is checked on the id the name has. An unknown name, an ungranted
            // one and a wrong secret do the same work (a grant lookup, a credential check
            // that fails and is counted) and get one answer, so names cannot be probed.
            let shared = self.target.shared.clone();
            let ns = shared.namespace_named(name).unwrap_or(UNNAMED);
            let granted = admin || self.may_use(ns);
            let checked = if granted { ns } else { UNNAMED };
            if !self.vendor.session.authenticate(checked, secret, &shared) {
                return Ok(Some(denied(
                    self,
                    format!(
                        "namespace {name:?}: unknown, not granted to this host NQN (the \
                         device's [nvme.hosts]), or a wrong credential"
                    ),
                )));
            }
            shared.record(ns, opcode, true, Duration::ZERO);
            let mut answer = ok(cmd, Reply::Empty);
            answer.nsid = ns;
            return Ok(Some(answer));
        }
        if cmd.nsid != DEVICE_NSID && !admin && !self.may_use(cmd.nsid) {
            return Err(invalid_namespace());
        }
        match &cmd.request {
            Request::Authenticate { .. } if cmd.nsid == DEVICE_NSID && !admin_host => {
                Ok(Some(denied(
                    self,
                    "this host NQN may not prove the admin credential: it is not in the \
                     device's nvme.admin_hosts"
                        .into(),
                )))
            }
            Request::Authenticate { secret } => {
                let shared = &self.target.shared;
                if !self.vendor.session.authenticate(cmd.nsid, secret, shared) {
                    return Ok(Some(denied(
                        self,
                        "unknown namespace or wrong credential".into(),
                    )));
                }
                // Answered here, with no worker: no latency worth a clock read.
                shared.record(cmd.nsid, opcode, true, Duration::ZERO);
                Ok(Some(ok(cmd, Reply::Empty)))
            }
            Request::Identify => {
                let shared = &self.target.shared;
                shared.record(DEVICE_NSID, opcode, true, Duration::ZERO);
                Ok(Some(ok(cmd, Reply::Identify(shared.identify))))
            }
            _ if !self.vendor.session.allows(cmd, &self.target.shared.creds) => Ok(Some(denied(
                self,
                "this queue has not authenticated for that namespace".into(),
            ))),
            _ => Ok(None),
        }
    }

    /// Runs an admitted command on a worker with the queue's native iterators; the worker
    /// keeps its response, then completes the Submit.
    fn carry_out(&mut self, sqe: Sqe, cmd: Command, cost: usize) {
        let config = &self.target.shared.config;
        let idle = Duration::from_secs(config.iterator_idle_secs.into());
        let max = config.max_iterators;
        let iters = self
            .vendor
            .iters
            .get_or_insert_with(|| sweeping(ConnIterators::new(max, idle), idle))
            .clone();
        let (shared, kept) = (self.target.shared.clone(), self.vendor.kept.clone());
        let arrived = quanta::Instant::now();
        let cid = cmd.cid;
        // After the puts of its namespace held on this thread (this queue's KV Stores
        // among them): here, or with it on a worker when the engine would hold them up.
        let store_first = self.store_first(&cmd);
        if !store_first {
            self.puts.store_for(&shared, cmd.nsid);
        }
        // What the native port runs on its network thread runs here too (point commands on
        // files; small queries within the inline work): two hand-offs between threads cost
        // more than the command.
        let here = match shared.runs_inline(&cmd) {
            _ if store_first => None,
            true => Some(answer(&shared, cmd.clone(), &iters, arrived)),
            false => {
                let (small, tried) = crate::workers::answer_small_query(&shared, &cmd, arrived);
                if tried {
                    // Its queue's turn ends sooner, as a native connection's.
                    self.turn_count.inline_query();
                }
                small
            }
        };
        let cap = self.target.config.max_queue_bytes as usize;
        if let Some(response) = here {
            let answer = keep(&kept, cid, &response, false, cap);
            self.flight.finish_now(sqe, answer, cost);
            return;
        }
        let done = self.flight.completer(cost);
        kept.lock().running += 1;
        let nsid = cmd.nsid;
        let job = {
            let (kept, shared) = (kept.clone(), shared.clone());
            Box::new(move || {
                let response = answer(&shared, cmd, &iters, arrived);
                let answer = keep(&kept, cid, &response, true, cap);
                done.send(sqe, answer);
            })
        };
        // After the held puts it must follow. Other commands of a queue keep no order
        // (NVMe's rule: a host that needs one waits for the completion).
        let queued = if store_first {
            shared.metrics.writes_off_loop.inc();
            self.puts.follow(&shared, nsid, self.order_id, job)
        } else {
            self.target.workers.submit(job)
        };
        if !queued {
            let mut k = kept.lock();
            k.running = k.running.saturating_sub(1);
            drop(k);
            self.not_queued(sqe, cost);
        }
    }

    fn fetch(&mut self, sqe: &Sqe) -> Answer {
        let cid = sqe.cdw(11);
        let mut kept = self.vendor.kept.lock();
        kept.expire();
        let Some(at) = kept.responses.iter().position(|(c, _, _)| *c == cid) else {
            return Answer::status(NvmeStatus::error(0, SC_COMMAND_SEQUENCE_ERROR));
        };
        let len = kept.responses[at].1.len();
        let dw0 = u32::try_from(len).unwrap_or(u32::MAX);
        if len > sgl_len(sqe) || len > sqe.cdw(10) as usize {
            // Kept for a Fetch with a buffer that holds it; DW0 says how large.
            return Answer::Done {
                status: NvmeStatus::error(0, SC_DATA_SGL_LENGTH_INVALID),
                dw0,
                dw1: 0,
                data: None,
            };
        }
        let kept = kept.take(at);
        Answer::Done {
            status: NvmeStatus::SUCCESS,
            dw0,
            dw1: 0,
            data: Some(kept),
        }
    }
}

/// `iters`, with a task that closes its idle iterators (as the native connection's loop
/// does) for as long as the queue keeps them.
fn sweeping(iters: ConnIterators, idle: Duration) -> Arc<ConnIterators> {
    let iters = Arc::new(iters);
    let weak = Arc::downgrade(&iters);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval((idle / 4).max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(iters) = weak.upgrade() else {
                return;
            };
            iters.sweep();
        }
    });
    iters
}

fn ok(cmd: &Command, reply: Reply) -> Response {
    Response {
        cid: cmd.cid,
        nsid: cmd.nsid,
        opcode: cmd.request.opcode() as u8,
        status: Status::Success,
        reply,
    }
}
