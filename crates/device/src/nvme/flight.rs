//! Commands in flight on one I/O queue: up to the queue's size at once and a bound on the
//! bytes they may hold (Store values, Retrieve and List buffers). A command past the bound
//! waits, in arrival order, until earlier ones complete; a Store's R2T is sent only once
//! its value fits, so Stores waiting for data never hold more than the bound. Completions
//! come back from the workers in any order, named by their command id.

use super::answer::Answer;
use crate::held::HeldBytes;
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::Sqe;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;

/// A command's answer, back from a worker (or refused at once).
pub(super) struct Done {
    pub sqe: Sqe,
    pub answer: Answer,
    /// Bytes of the budget it held.
    pub cost: usize,
    /// Back from a worker (`Completer`): the worker's hold on its bytes.
    pub away: Option<Away>,
}

/// A worker's hold on its command's bytes, carried back with the answer. The queue takes it
/// when it reads the answer; an answer never read (the queue closed with it in its channel,
/// or had gone already) gives the bytes back to the device itself when dropped. Before, a
/// queue that closed while answers waited in its channel (a host that stopped reading, its
/// queue stuck writing until the write deadline) lost their bytes from the device's bound
/// for good (review, third round, H1).
pub(super) struct Away {
    held: Arc<HeldBytes>,
    cost: usize,
}

impl Away {
    /// The bytes, now the queue's again.
    pub fn returned(mut self) -> usize {
        std::mem::take(&mut self.cost)
    }
}

impl Drop for Away {
    fn drop(&mut self) {
        self.held.give(self.cost);
    }
}

/// Where a worker sends its command's answer: the queue's completions. If the queue closed
/// meanwhile, the answer's `Away` gives the command's bytes back to the device's bound: the
/// closing queue gave back only what no worker held (before issue 61's third round it gave
/// back everything, so a host that closed with values at busy workers, and reconnected, held
/// more than the bound).
pub(super) struct Completer {
    done: Option<(mpsc::UnboundedSender<Done>, usize)>,
    held: Arc<HeldBytes>,
}

impl Completer {
    pub fn send(mut self, sqe: Sqe, answer: Answer) {
        if let Some((tx, cost)) = self.done.take() {
            let away = Away {
                held: self.held.clone(),
                cost,
            };
            let done = Done {
                sqe,
                answer,
                cost,
                away: Some(away),
            };
            // Refused by a closed queue: dropped here, and its `Away` gives the bytes back.
            let _ = tx.send(done);
        }
    }
}

impl Drop for Completer {
    /// A job dropped unanswered (never queued, or its worker panicked): its bytes go back.
    fn drop(&mut self) {
        if let Some((_, cost)) = self.done.take() {
            self.held.give(cost);
        }
    }
}

/// A command received and not started yet.
pub(super) struct Queued {
    pub sqe: Sqe,
    pub data: Bytes,
    /// Bytes of the budget it takes.
    pub cost: usize,
    /// Its namespace's tags were charged for it already (it passed the core's gate with a
    /// turn, `gate.rs`): its ceiling is not booked again when it starts.
    pub charged: bool,
}

/// A Store whose value comes through R2T and H2CData.
pub(super) struct Pending {
    pub sqe: Sqe,
    pub size: usize,
    pub cost: usize,
    pub value: BytesMut,
    /// When its R2T went or its last data came: the rest is owed from then.
    pub since: tokio::time::Instant,
}

pub(super) struct Flight {
    /// Commands received and not yet completed (waiting, fetching data, or running).
    pub count: usize,
    /// Bytes held by started commands.
    pub bytes: usize,
    /// The part of `bytes` that commands at workers hold (`Completer`).
    away: usize,
    /// Most bytes started commands may hold (one larger command runs alone).
    pub budget: usize,
    /// Commands that did not fit the budget yet, in arrival order, with their cost.
    pub waiting: VecDeque<Queued>,
    /// Stores receiving their data, by transfer tag.
    pub pending: HashMap<u16, Pending>,
    next_ttag: u16,
    pub done_tx: mpsc::UnboundedSender<Done>,
    /// Answers made on the connection's own task, to send (`finish_now`).
    pub ready: VecDeque<Done>,
    /// Started commands held until their namespace's limit lets them run (`ceiling.rs`),
    /// with when: at most the queue's entries, their bytes within the budget.
    pub delayed: Vec<(tokio::time::Instant, Sqe, Bytes, usize)>,
    /// The bytes all queues hold: `bytes` is this queue's part of it, with `credit`.
    pub held: Arc<HeldBytes>,
    /// Bytes taken from `held` and not used yet: commands take from it first, so most
    /// commands of a busy queue touch no counter the network threads share.
    credit: usize,
}

/// Bytes a queue takes from the device's bound at once; it keeps at most twice this unused
/// while it has commands in flight, none once it has none.
const CREDIT_CHUNK: usize = 64 << 10;

impl Drop for Flight {
    fn drop(&mut self) {
        // What workers hold, they give back themselves.
        self.held
            .give(self.bytes - self.away.min(self.bytes) + self.credit);
    }
}

impl Flight {
    pub fn new(budget: usize, held: Arc<HeldBytes>) -> (Flight, mpsc::UnboundedReceiver<Done>) {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let f = Flight {
            count: 0,
            bytes: 0,
            away: 0,
            budget,
            waiting: VecDeque::new(),
            pending: HashMap::new(),
            next_ttag: 0,
            done_tx,
            ready: VecDeque::new(),
            delayed: Vec::new(),
            held,
            credit: 0,
        };
        (f, done_rx)
    }

    /// Whether a command holding `cost` bytes fits the queue's own bound.
    pub fn fits(&self, cost: usize) -> bool {
        self.bytes == 0 || self.bytes + cost <= self.budget
    }

    /// Takes `cost` bytes for a command if they fit the queue's bound and the device's.
    pub fn admit(&mut self, cost: usize) -> bool {
        if !self.fits(cost) {
            return false;
        }
        if self.credit < cost {
            let short = cost - self.credit;
            // A chunk if the device has room for it, else just what this command needs.
            let took = [short.max(CREDIT_CHUNK), short]
                .into_iter()
                .find(|&n| self.held.try_take(n));
            match took {
                Some(n) => self.credit += n,
                None => return false,
            }
        }
        self.credit -= cost;
        self.bytes += cost;
        true
    }

    /// Where a worker sends the answer of a command holding `cost` bytes.
    pub fn completer(&mut self, cost: usize) -> Completer {
        self.away += cost;
        Completer {
            done: Some((self.done_tx.clone(), cost)),
            held: self.held.clone(),
        }
    }

    /// A command is back from its worker (`Done::away`): its bytes are the queue's again.
    pub fn back(&mut self, cost: usize) {
        self.away = self.away.saturating_sub(cost);
    }

    /// A job the workers did not take: its completer gave its `cost` bytes back already.
    pub fn not_queued(&mut self, cost: usize) {
        self.away = self.away.saturating_sub(cost);
        self.bytes = self.bytes.saturating_sub(cost);
    }

    /// Gives back a completed command's bytes: to the queue's credit, and past what it
    /// keeps, to the device.
    pub fn release(&mut self, cost: usize) {
        let cost = cost.min(self.bytes);
        self.bytes -= cost;
        self.credit += cost;
        let keep = if self.bytes == 0 { 0 } else { CREDIT_CHUNK };
        if self.bytes == 0 || self.credit > 2 * CREDIT_CHUNK {
            self.held.give(self.credit - keep.min(self.credit));
            self.credit = keep.min(self.credit);
        }
    }

    /// The bytes of the first waiting command when only the device's bound holds it: what
    /// the queue waits for room for (no completion of its own would wake it).
    pub fn starved(&self) -> Option<usize> {
        let cost = self.waiting.front()?.cost;
        let short = cost.saturating_sub(self.credit);
        (self.fits(cost) && !self.held.has_room(short)).then_some(short)
    }

    /// A transfer tag no pending Store uses (at most the queue's size are pending).
    pub fn ttag(&mut self) -> u16 {
        loop {
            let t = self.next_ttag;
            self.next_ttag = self.next_ttag.wrapping_add(1);
            if !self.pending.contains_key(&t) {
                return t;
            }
        }
    }

    /// Answers a command at once: its answer is sent before the connection waits again,
    /// with the workers' (which come through `done_tx`). Kept here, not sent through the
    /// channel: a pipeline's answers made on the loop cost a channel's send, pop and wake
    /// each.
    pub fn finish_now(&mut self, sqe: Sqe, answer: Answer, cost: usize) {
        self.ready.push_back(Done {
            sqe,
            answer,
            cost,
            away: None,
        });
    }

    /// Since when data is owed: the earliest of the Stores receiving their data.
    pub fn owed_since(&self) -> Option<tokio::time::Instant> {
        self.pending.values().map(|p| p.since).min()
    }

    /// When the first held command is due.
    pub fn next_delayed(&self) -> Option<tokio::time::Instant> {
        self.delayed.iter().map(|d| d.0).min()
    }

    /// The next waiting command if it fits now, its bytes taken.
    pub fn next_ready(&mut self) -> Option<Queued> {
        let cost = self.waiting.front()?.cost;
        if self.admit(cost) {
            self.waiting.pop_front()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(cost: usize) -> Queued {
        Queued {
            sqe: Sqe::default(),
            data: Bytes::new(),
            cost,
            charged: false,
        }
    }

    fn unbounded() -> Arc<HeldBytes> {
        Arc::new(HeldBytes::new(usize::MAX))
    }

    #[test]
    fn the_budget_admits_one_large_command_alone() {
        let (mut f, _rx) = Flight::new(100, unbounded());
        assert!(f.fits(1000), "nothing held: any size starts");
        assert!(f.admit(60));
        assert!(f.fits(40));
        assert!(!f.fits(41));
        f.waiting.push_back(queued(50));
        assert!(f.next_ready().is_none());
        f.release(10);
        assert!(f.next_ready().is_some());
        assert_eq!(f.bytes, 100);
    }

    #[test]
    fn queues_share_the_devices_bound_and_give_back_when_they_go() {
        let held = Arc::new(HeldBytes::new(100));
        let (mut a, _ra) = Flight::new(80, held.clone());
        let (mut b, _rb) = Flight::new(80, held.clone());
        assert!(a.admit(70));
        // Within b's own bound, past the device's.
        assert!(!b.admit(40));
        b.waiting.push_back(queued(40));
        assert_eq!(b.starved(), Some(40));
        assert!(b.next_ready().is_none());
        drop(a);
        assert_eq!(held.used(), 0, "a closed queue gives its bytes back");
        assert!(b.next_ready().is_some());
        assert_eq!(b.starved(), None);
        drop(b);
        assert_eq!(held.used(), 0);
    }

    #[test]
    fn a_busy_queue_serves_small_commands_from_its_credit() {
        let held = Arc::new(HeldBytes::new(1 << 30));
        let (mut f, _rx) = Flight::new(4 << 20, held.clone());
        assert!(f.admit(1000));
        assert_eq!(held.used(), CREDIT_CHUNK, "a chunk taken at once");
        for _ in 0..50 {
            assert!(f.admit(1000));
            f.release(1000);
        }
        assert_eq!(held.used(), CREDIT_CHUNK, "served from the credit");
        assert!(held.used() >= f.bytes);
        // Idle: everything goes back.
        f.release(1000);
        assert_eq!((f.bytes, held.used()), (0, 0));
        // Near the device's bound, only what is needed is taken.
        let tight = Arc::new(HeldBytes::new(100_000));
        let (mut a, _ra) = Flight::new(4 << 20, tight.clone());
        let (mut b, _rb) = Flight::new(4 << 20, tight.clone());
        assert!(a.admit(50_000));
        assert_eq!(tight.used(), CREDIT_CHUNK);
        assert!(
            b.admit(30_000),
            "the exact bytes fit where a chunk does not"
        );
        assert_eq!(tight.used(), CREDIT_CHUNK + 30_000);
        assert!(!b.admit(10_000));
    }

    #[test]
    fn bytes_at_workers_go_back_when_the_workers_are_done_with_them() {
        let held = Arc::new(HeldBytes::new(1000));
        let (mut f, rx) = Flight::new(1000, held.clone());
        assert!(f.admit(300) && f.admit(200));
        let at_worker = f.completer(300);
        // The queue closes while a worker holds one command's value.
        drop(rx);
        drop(f);
        assert_eq!(held.used(), 300, "the worker's bytes stay counted");
        at_worker.send(Sqe::default(), Answer::ok(0));
        assert_eq!(held.used(), 0);
        // A job dropped unanswered (a worker's panic) gives its bytes back too, and a
        // completed one through its queue, once.
        let (mut f, mut rx) = Flight::new(1000, held.clone());
        assert!(f.admit(100) && f.admit(50));
        drop(f.completer(100));
        let c = f.completer(50);
        c.send(Sqe::default(), Answer::ok(0));
        let done = rx.try_recv().unwrap();
        f.back(done.away.expect("from a worker").returned());
        f.release(done.cost);
        drop(f);
        assert_eq!(held.used(), 0);
    }

    /// Review, third round, H1: answers back from the workers but not read when the queue
    /// closes (its loop stuck writing to a host that does not read) held their bytes for good.
    #[test]
    fn answers_left_unread_in_a_closing_queue_give_their_bytes_back() {
        let held = Arc::new(HeldBytes::new(1000));
        let (mut f, rx) = Flight::new(1000, held.clone());
        assert!(f.admit(300) && f.admit(200));
        // Sent, so the worker gave nothing back; the queue never reads it.
        f.completer(300).send(Sqe::default(), Answer::ok(0));
        drop(rx);
        drop(f);
        assert_eq!(held.used(), 0, "bytes lost from the device's bound");
    }

    #[test]
    fn transfer_tags_skip_pending_ones() {
        let (mut f, _rx) = Flight::new(1, unbounded());
        let pending = |f: &mut Flight, t| {
            f.pending.insert(
                t,
                Pending {
                    sqe: Sqe::default(),
                    size: 0,
                    cost: 0,
                    value: BytesMut::new(),
                    since: tokio::time::Instant::now(),
                },
            )
        };
        pending(&mut f, 0);
        pending(&mut f, 1);
        assert_eq!(f.ttag(), 2);
    }
}
