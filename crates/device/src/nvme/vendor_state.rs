//! What a queue's vendor commands keep between commands (`vendor`): the tunnel's native
//! session and iterators, and the responses kept for their Fetch, bounded per queue, by the
//! device's held bytes and in time.

use super::answer::Answer;
use crate::connection::session::Session;
use crate::held::{HeldBytes, COUNTED_FROM};
use crate::iterators::ConnIterators;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{NvmeStatus, Sqe, VENDOR_SUBMIT};
use cerberus_proto::{Response, Status, HEADER_LEN};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a queue's vendor commands keep between commands.
pub(super) struct VendorState {
    /// The credentials proved inside the tunnel, as a native connection's.
    pub(super) session: Session,
    /// Responses waiting for their Fetch, and Submits still running (a worker adds its
    /// response here before it completes the Submit).
    pub(super) kept: Arc<Mutex<Kept>>,
    /// The queue's native iterators, made on first use.
    pub(super) iters: Option<Arc<ConnIterators>>,
}

pub(super) struct Kept {
    /// By native command id, oldest first, with when each was kept; with `running`, at
    /// most `MAX_KEPT`.
    pub(super) responses: VecDeque<(u32, Bytes, Instant)>,
    pub(super) running: usize,
    /// Bytes of `responses`: past the queue's byte budget, a response is replaced by a
    /// refusal (`keep`).
    pub(super) bytes: usize,
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
    pub(super) fn expire(&mut self) {
        let now = Instant::now();
        let kept_for = self.kept_for;
        self.forget(|_, at| now.duration_since(at) >= kept_for);
    }

    pub(super) fn take(&mut self, at: usize) -> Bytes {
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
pub(super) const MAX_KEPT: usize = 8;

/// How long the unit tests keep an unfetched response.
#[cfg(test)]
const KEPT_FOR: Duration = Duration::from_secs(60);

/// Whether a Submit's frame must be fetched through R2T: not in its capsule, and of a
/// length the device reads. A longer one is refused without a byte of it read.
pub(super) fn wants_data(sqe: &Sqe, max_frame_body: u32) -> bool {
    sqe.opcode == VENDOR_SUBMIT && frame_len_ok(sqe.cdw(10), max_frame_body)
}

pub(super) fn frame_len_ok(len: u32, max_frame_body: u32) -> bool {
    let len = u64::from(len);
    len >= HEADER_LEN as u64 && len <= HEADER_LEN as u64 + u64::from(max_frame_body)
}

/// Keeps the encoded `response` for its Fetch (`ran`: a Submit that was running ends, in the
/// same step, so the bound never counts it twice or not at all); the Submit's answer (DW0:
/// the response's length). Past `cap` bytes kept, a response (a large read's: a write's is
/// a few bytes) is replaced by a `ReplyTooLarge` refusal, so a queue keeps at most `cap`
/// plus one response.
pub(super) fn keep(
    kept: &Mutex<Kept>,
    cid: u32,
    response: &Response,
    ran: bool,
    cap: usize,
) -> Answer {
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

#[cfg(test)]
mod tests {
    use super::*;
    use cerberus_proto::nvme::VENDOR_FETCH;
    use cerberus_proto::Reply;

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
