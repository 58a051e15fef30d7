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

use super::conn::{sgl_len, Conn};
use super::{invalid_field, invalid_namespace, Answer};
use crate::connection::session::{Session, UNNAMED};
use crate::held::HeldBytes;
use crate::iterators::ConnIterators;
use crate::workers::answer;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{
    NvmeStatus, Sqe, SC_COMMAND_SEQUENCE_ERROR, SC_DATA_SGL_LENGTH_INVALID, VENDOR_FETCH,
    VENDOR_SUBMIT,
};
use cerberus_proto::{
    split_frame, Command, Reply, Request, Response, Status, DEVICE_NSID, HEADER_LEN,
};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a queue's vendor commands keep between commands.
pub(super) struct VendorState {
    /// The credentials proved inside the tunnel, as a native connection's.
    session: Session,
    /// Responses waiting for their Fetch, and Submits still running (a worker adds its
    /// response here before it completes the Submit).
    kept: Arc<Mutex<Kept>>,
    /// The queue's native iterators, made on first use.
    iters: Option<Arc<ConnIterators>>,
}

struct Kept {
    /// By native command id, oldest first, with when each was kept; with `running`, at
    /// most `MAX_KEPT`.
    responses: VecDeque<(u32, Bytes, Instant)>,
    running: usize,
    /// Bytes of `responses`: past the queue's byte budget, a response is replaced by a
    /// refusal (`keep`).
    bytes: usize,
    /// The bytes all queues hold, `counted` among them.
    held: Arc<HeldBytes>,
    /// The part of `bytes` counted in `held` (`counted`).
    held_here: usize,
    /// How long a response waits for its Fetch.
    kept_for: Duration,
}

/// Responses from this size on count in the device's bound; smaller ones (a write's, a small
/// read's) are bounded by `MAX_KEPT` per queue, and would make every command touch a counter
/// the network threads share (the native port's threshold too).
use crate::held::COUNTED_FROM;

fn counted(len: usize) -> usize {
    if len >= COUNTED_FROM {
        len
    } else {
        0
    }
}

impl VendorState {
    pub(super) fn new(held: Arc<HeldBytes>, kept_for: Duration) -> VendorState {
        VendorState {
            session: Session::default(),
            kept: Arc::new(Mutex::new(Kept::new(held, kept_for))),
            iters: None,
        }
    }

    /// When the oldest unfetched response expires, if any is kept: the queue's loop drops
    /// it then ([`VendorState::expire`]), so a host that never fetches and sends nothing
    /// more holds nothing past the timeout.
    pub(super) fn expires_at(&self) -> Option<tokio::time::Instant> {
        let k = self.kept.lock();
        let (_, _, at) = k.responses.front()?;
        Some(tokio::time::Instant::from_std(*at + k.kept_for))
    }

    /// Drops the responses kept past the timeout.
    pub(super) fn expire(&self) {
        self.kept.lock().expire();
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.held.give(self.held_here);
    }
}

impl Kept {
    fn new(held: Arc<HeldBytes>, kept_for: Duration) -> Kept {
        Kept {
            responses: VecDeque::new(),
            running: 0,
            bytes: 0,
            held,
            held_here: 0,
            kept_for,
        }
    }

    /// Keeps `response` under `cid` (replacing one the host did not fetch: it reused its id).
    fn keep(&mut self, cid: u32, response: Bytes) {
        self.forget(|c, _| c == cid);
        self.bytes += response.len();
        self.held_here += counted(response.len());
        self.held.take(counted(response.len()));
        self.responses.push_back((cid, response, Instant::now()));
    }

    /// Drops the responses `gone` says, their bytes with them.
    fn forget(&mut self, mut gone: impl FnMut(u32, Instant) -> bool) {
        let (mut freed, mut uncounted) = (0, 0);
        self.responses.retain(|(c, r, at)| {
            let drop = gone(*c, *at);
            if drop {
                freed += r.len();
                uncounted += counted(r.len());
            }
            !drop
        });
        self.bytes -= freed;
        self.held_here -= uncounted;
        self.held.give(uncounted);
    }

    /// Drops responses kept longer than `kept_for`: a host that never fetches holds
    /// nothing for long.
    fn expire(&mut self) {
        let now = Instant::now();
        let kept_for = self.kept_for;
        self.forget(|_, at| now.duration_since(at) >= kept_for);
    }

    fn take(&mut self, at: usize) -> Bytes {
        let r = self
            .responses
            .remove(at)
            .map(|(_, b, _)| b)
            .unwrap_or_default();
        self.bytes -= r.len();
        self.held_here -= counted(r.len());
        self.held.give(counted(r.len()));
        r
    }
}

/// Responses a queue keeps unfetched or running at most (each within the reply bound): the
/// host's client keeps 8 commands in flight.
const MAX_KEPT: usize = 8;

/// How long the unit tests keep an unfetched response.
#[cfg(test)]
const KEPT_FOR: Duration = Duration::from_secs(60);

/// Whether a Submit's frame must be fetched through R2T: not in its capsule, and of a
/// length the device reads. A longer one is refused without a byte of it read.
pub(super) fn wants_data(sqe: &Sqe, max_frame_body: u32) -> bool {
    sqe.opcode == VENDOR_SUBMIT && frame_len_ok(sqe.cdw(10), max_frame_body)
}

fn frame_len_ok(len: u32, max_frame_body: u32) -> bool {
    let len = u64::from(len);
    len >= HEADER_LEN as u64 && len <= HEADER_LEN as u64 + u64::from(max_frame_body)
}

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
            shared.metrics.record(ns, opcode, true, Duration::ZERO);
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
                shared
                    .metrics
                    .record(cmd.nsid, opcode, true, Duration::ZERO);
                Ok(Some(ok(cmd, Reply::Empty)))
            }
            Request::Identify => {
                let shared = &self.target.shared;
                shared
                    .metrics
                    .record(DEVICE_NSID, opcode, true, Duration::ZERO);
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
            false => crate::workers::answer_small_query(&shared, &cmd, arrived),
        };
        let cap = self.target.config.max_queue_bytes as usize;
        if let Some(response) = here {
            let answer = keep(&kept, cid, &response, false, cap);
            self.flight.finish_now(sqe, answer, cost);
            return;
        }
        let done = self.flight.completer(cost);
        kept.lock().running += 1;
        let puts = self.puts.clone();
        let job = {
            let kept = kept.clone();
            Box::new(move || {
                if store_first {
                    shared.metrics.writes_off_loop.inc();
                    puts.store_for(&shared, cmd.nsid);
                }
                let response = answer(&shared, cmd, &iters, arrived);
                let answer = keep(&kept, cid, &response, true, cap);
                done.send(sqe, answer);
            })
        };
        if !self.target.workers.submit(job) {
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

/// Keeps the encoded `response` for its Fetch (`ran`: a Submit that was running ends, in the
/// same step, so the bound never counts it twice or not at all); the Submit's answer (DW0:
/// the response's length). Past `cap` bytes kept, a response (a large read's: a write's is
/// a few bytes) is replaced by a `ReplyTooLarge` refusal, so a queue keeps at most `cap`
/// plus one response.
fn keep(kept: &Mutex<Kept>, cid: u32, response: &Response, ran: bool, cap: usize) -> Answer {
    let mut out = BytesMut::new();
    let encoded = response.encode(&mut out);
    let mut kept = kept.lock();
    if ran {
        kept.running = kept.running.saturating_sub(1);
    }
    if encoded.is_err() {
        return Answer::status(NvmeStatus::error(0, 0x06));
    }
    // The queue's bound (one response whatever its size), then the device's.
    let over_device = counted(out.len()) > 0 && !kept.held.has_room(out.len());
    if (kept.bytes > 0 && kept.bytes + out.len() > cap) || over_device {
        let refused = Response::error(
            response.cid,
            response.nsid,
            response.opcode,
            Status::ReplyTooLarge,
            "the queue keeps more unfetched responses than its byte budget: fetch them first"
                .into(),
        );
        out.clear();
        if refused.encode(&mut out).is_err() {
            return Answer::status(NvmeStatus::error(0, 0x06));
        }
    }
    let dw0 = u32::try_from(out.len()).unwrap_or(u32::MAX);
    kept.keep(cid, out.freeze());
    Answer::ok(dw0)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn value(cid: u32, len: usize) -> Response {
        Response {
            cid,
            nsid: 1,
            opcode: cerberus_proto::Opcode::Retrieve as u8,
            status: Status::Success,
            reply: Reply::Value(Bytes::from(vec![7u8; len])),
        }
    }

    fn unbounded() -> Arc<HeldBytes> {
        Arc::new(HeldBytes::new(usize::MAX))
    }

    #[test]
    fn the_devices_bound_refuses_what_no_queue_would() {
        let held = Arc::new(HeldBytes::new(3 << 20));
        let (a, b) = (
            Mutex::new(Kept::new(held.clone(), KEPT_FOR)),
            Mutex::new(Kept::new(held.clone(), KEPT_FOR)),
        );
        let big = |cid| value(cid, 2 << 20);
        keep(&a, 1, &big(1), false, 4 << 20);
        // Within b's own bound (nothing kept there), past the device's.
        keep(&b, 1, &big(1), false, 4 << 20);
        assert!(b.lock().bytes < 1024, "replaced by a refusal");
        drop(a);
        // a's bytes given back with it; b's refusal is under COUNTED_FROM.
        assert_eq!(held.used(), 0);
        keep(&b, 2, &big(2), false, 4 << 20);
        assert!(b.lock().bytes > 2 << 20);
    }

    #[test]
    fn unfetched_responses_hold_at_most_the_budget_and_one_more() {
        // The attack: eight 2 MiB Retrieves submitted and never fetched, a 4 MiB budget.
        let kept = Mutex::new(Kept::new(unbounded(), KEPT_FOR));
        let cap = 4 << 20;
        for cid in 0..8 {
            let answer = keep(&kept, cid, &value(cid, 2 << 20), false, cap);
            assert!(matches!(answer, Answer::Done { status, .. } if status.is_success()));
        }
        let k = kept.lock();
        assert!(k.bytes <= cap, "{} bytes kept", k.bytes);
        let sizes: Vec<usize> = k.responses.iter().map(|(_, r, _)| r.len()).collect();
        // The first kept whole (the second would pass the budget by its 16-byte header)...
        assert!(sizes[0] > 2 << 20, "{sizes:?}");
        // ... the rest are refusals the host can read (ReplyTooLarge), a few bytes each.
        assert!(sizes[1..].iter().all(|&n| n < 1024), "{sizes:?}");
        drop(k);
        // Fetching frees the budget.
        let first = kept.lock().take(0);
        assert!(first.len() > 2 << 20);
        assert!(kept.lock().bytes < cap);
    }

    #[test]
    fn unfetched_responses_expire() {
        let kept = Mutex::new(Kept::new(unbounded(), KEPT_FOR));
        keep(&kept, 1, &value(1, 100), false, 1 << 20);
        keep(&kept, 2, &value(2, 100), false, 1 << 20);
        let mut k = kept.lock();
        // The first kept long ago.
        let long_ago = Instant::now() - KEPT_FOR - Duration::from_secs(1);
        k.responses[0].2 = long_ago;
        let before = k.bytes;
        k.expire();
        assert_eq!(k.responses.len(), 1);
        assert_eq!(k.responses[0].0, 2);
        assert!(k.bytes < before && k.bytes > 0);
        // A reused command id replaces the old response, bytes included.
        let len = k.responses[0].1.len();
        k.keep(2, Bytes::from_static(b"x"));
        assert_eq!((k.responses.len(), k.bytes), (1, 1));
        assert!(len > 1);
    }

    #[test]
    fn a_submit_is_fetched_only_at_a_length_the_device_reads() {
        let mut sqe = Sqe {
            opcode: VENDOR_SUBMIT,
            ..Sqe::default()
        };
        sqe.cdw[0] = HEADER_LEN as u32 + 100;
        assert!(wants_data(&sqe, 100));
        assert!(!wants_data(&sqe, 99));
        sqe.cdw[0] = HEADER_LEN as u32 - 1;
        assert!(!wants_data(&sqe, 100));
        sqe.cdw[0] = u32::MAX;
        assert!(!wants_data(&sqe, 1 << 20));
        sqe.opcode = VENDOR_FETCH;
        sqe.cdw[0] = HEADER_LEN as u32;
        assert!(!wants_data(&sqe, 100));
    }
}
