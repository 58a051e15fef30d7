//! The jobs a network thread hands the workers that must keep an order: a piece of held
//! puts stored off the loop while the engine holds writes up, a write a native connection
//! hands the workers, and each command read after them that must see them (a client that
//! pipelines a put and then a get of the key sees its put; two puts of one key land in the
//! order sent).
//!
//! A connection's jobs of one namespace run one at a time, in the order it sent them. A
//! piece of held puts holds puts of any connection: it runs after every job of its
//! namespace before it, and every job of the namespace after it waits for it. Anything else
//! runs side by side: another connection's jobs (their synchronous writes share a log
//! sync), and above all another namespace's, so a tenant whose writes the engine holds up
//! holds up no other tenant. The device's namespace is one more namespace here: its
//! commands (administration) keep the order of one connection's, and wait for no data.

use crate::panics::panic_message;
use crate::workers::{Job, Workers};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// A new id for a connection (or an NVMe/TCP queue): whose order its jobs keep.
pub fn connection_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Counters of jobs by namespace, hashed: the lock-free check every command makes.
const SLOTS: usize = 64;

pub struct OrderedJobs {
    workers: Arc<Workers>,
    /// Jobs queued or running, by `ns % SLOTS`: a command of a namespace with none takes
    /// no lock, whatever other tenants have on the workers.
    pending: [AtomicU32; SLOTS],
    queues: Mutex<Queues>,
    /// Told whenever a job ends: readers waiting for their namespace's jobs look again.
    done: tokio::sync::Notify,
}

#[derive(Default)]
struct Queues {
    namespaces: FxHashMap<u32, NsQueue>,
    next_seq: u64,
}

/// One namespace's jobs, each queue in the order its jobs came.
#[derive(Default)]
struct NsQueue {
    pieces: VecDeque<Entry>,
    by_connection: FxHashMap<u64, VecDeque<Entry>>,
}

struct Entry {
    seq: u64,
    /// `None` once handed to the workers.
    job: Option<Job>,
}

/// Where a job waits: its namespace and, for a connection's job, the connection (`None`:
/// a piece of held puts).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Place {
    ns: u32,
    from: Option<u64>,
}

/// A job that may start: where it waits, its sequence number, and the job.
type Ready = (Place, u64, Job);

/// What [`OrderedJobs::push`] did with a job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pushed {
    /// Handed to the workers at once.
    Started,
    /// Waiting for jobs before it.
    Queued,
    /// The workers refused it (the device is stopping): dropped.
    Refused,
}

impl OrderedJobs {
    pub fn new(workers: Arc<Workers>) -> Arc<OrderedJobs> {
        Arc::new(OrderedJobs {
            workers,
            pending: std::array::from_fn(|_| AtomicU32::new(0)),
            queues: Mutex::new(Queues::default()),
            done: tokio::sync::Notify::new(),
        })
    }

    fn slot(&self, ns: u32) -> &AtomicU32 {
        &self.pending[ns as usize % SLOTS]
    }

    /// Whether nothing is queued or running.
    pub fn is_empty(&self) -> bool {
        self.pending.iter().all(|p| p.load(Ordering::Acquire) == 0)
    }

    /// Whether a command of namespace `ns` from connection `from` (`None`: a piece of held
    /// puts) must come after a job queued or running here.
    pub fn holds(&self, ns: u32, from: Option<u64>) -> bool {
        if self.slot(ns).load(Ordering::Acquire) == 0 {
            return false;
        }
        let q = self.queues.lock();
        let Some(nq) = q.namespaces.get(&ns) else {
            return false;
        };
        match from {
            None => true,
            Some(c) => !nq.pieces.is_empty() || nq.by_connection.contains_key(&c),
        }
    }

    /// Whether held puts of namespace `ns` sent by connections `froms` must come after a
    /// job queued or running here: a piece of the namespace, or a job of one of them.
    pub fn holds_any_of(&self, ns: u32, mut froms: impl Iterator<Item = u64>) -> bool {
        if self.slot(ns).load(Ordering::Acquire) == 0 {
            return false;
        }
        let q = self.queues.lock();
        let Some(nq) = q.namespaces.get(&ns) else {
            return false;
        };
        !nq.pieces.is_empty() || froms.any(|c| nq.by_connection.contains_key(&c))
    }

    /// Waits until [`holds`](Self::holds) says no for a command of `ns` from `from`.
    pub async fn wait_for(&self, ns: u32, from: u64) {
        loop {
            let done = self.done.notified();
            let mut done = std::pin::pin!(done);
            // Registered before the check: a job ending between the two still wakes it.
            done.as_mut().enable();
            if !self.holds(ns, Some(from)) {
                return;
            }
            done.await;
        }
    }

    /// Runs `job` on a worker once the jobs before it that it must follow are done (see
    /// the module): a job of namespace `ns` from connection `from` (`None`: a piece of held
    /// puts). Refused: dropped, with whatever was queued.
    pub fn push(self: &Arc<Self>, ns: u32, from: Option<u64>, job: Job) -> Pushed {
        let place = Place { ns, from };
        let (ready, seq) = {
            let mut q = self.queues.lock();
            let seq = q.next_seq;
            q.next_seq += 1;
            self.slot(ns).fetch_add(1, Ordering::AcqRel);
            q.queue_of(place).push_back(Entry {
                seq,
                job: Some(job),
            });
            (q.ready(ns), seq)
        };
        let started = ready.iter().any(|(p, s, _)| *p == place && *s == seq);
        match (self.start(ready), started) {
            (false, _) => Pushed::Refused,
            (true, true) => Pushed::Started,
            (true, false) => Pushed::Queued,
        }
    }

    /// Hands `ready` to the workers, each to end its entry when done.
    fn start(self: &Arc<Self>, ready: Vec<Ready>) -> bool {
        let mut ready = ready.into_iter();
        while let Some((place, seq, job)) = ready.next() {
            let jobs = self.clone();
            let submitted = self.workers.submit(Box::new(move || {
                // Its entry must end even if it panics, or its namespace would wait forever.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(job)) {
                    tracing::error!(
                        panic = panic_message(payload.as_ref()),
                        "an ordered job panicked"
                    );
                }
                jobs.finish(place, seq);
            }));
            if !submitted {
                // Their entries go with the jobs, or they would be waited for forever.
                self.finish_unstarted(place, seq);
                for (place, seq, _) in ready {
                    self.finish_unstarted(place, seq);
                }
                self.abandon();
                return false;
            }
        }
        true
    }

    /// Ends the job `seq` of `place` and starts what waited for it.
    fn finish(self: &Arc<Self>, place: Place, seq: u64) {
        let ready = {
            let mut q = self.queues.lock();
            if q.remove(place, seq) {
                self.slot(place.ns).fetch_sub(1, Ordering::AcqRel);
            }
            q.ready(place.ns)
        };
        self.done.notify_waiters();
        self.start(ready);
    }

    /// Ends the job `seq` of `place` that never ran.
    fn finish_unstarted(&self, place: Place, seq: u64) {
        if self.queues.lock().remove(place, seq) {
            self.slot(place.ns).fetch_sub(1, Ordering::AcqRel);
        }
        self.done.notify_waiters();
    }

    /// The workers are stopped: the jobs not started are dropped (their answers with
    /// them); those running end as usual.
    fn abandon(&self) {
        let mut dropped = Vec::new();
        let mut q = self.queues.lock();
        for (&ns, nq) in q.namespaces.iter_mut() {
            let queues = std::iter::once(&mut nq.pieces).chain(nq.by_connection.values_mut());
            for queue in queues {
                let before = queue.len();
                queue.retain_mut(|e| match e.job.take() {
                    Some(job) => {
                        dropped.push(job);
                        false
                    }
                    None => true,
                });
                let gone = (before - queue.len()) as u32;
                self.slot(ns).fetch_sub(gone, Ordering::AcqRel);
            }
            nq.by_connection.retain(|_, queue| !queue.is_empty());
        }
        q.namespaces
            .retain(|_, nq| !nq.pieces.is_empty() || !nq.by_connection.is_empty());
        drop(q);
        drop(dropped);
        self.done.notify_waiters();
    }

    /// Waits until every job queued here has run (the device stopping: its workers run
    /// them before they stop), at most `limit`. Whether they all ran.
    pub fn drain(&self, limit: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + limit;
        while !self.is_empty() {
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }
}

impl Queues {
    fn queue_of(&mut self, place: Place) -> &mut VecDeque<Entry> {
        let nq = self.namespaces.entry(place.ns).or_default();
        match place.from {
            None => &mut nq.pieces,
            Some(c) => nq.by_connection.entry(c).or_default(),
        }
    }

    /// Removes job `seq` of `place`, and the queues it leaves empty. Whether it was there.
    fn remove(&mut self, place: Place, seq: u64) -> bool {
        let take = |queue: &mut VecDeque<Entry>| match queue.iter().position(|e| e.seq == seq) {
            Some(i) => queue.remove(i).is_some(),
            None => false,
        };
        let Some(nq) = self.namespaces.get_mut(&place.ns) else {
            return false;
        };
        let removed = match place.from {
            None => take(&mut nq.pieces),
            Some(c) => {
                let Some(queue) = nq.by_connection.get_mut(&c) else {
                    return false;
                };
                let removed = take(queue);
                if queue.is_empty() {
                    nq.by_connection.remove(&c);
                }
                removed
            }
        };
        if nq.pieces.is_empty() && nq.by_connection.is_empty() {
            self.namespaces.remove(&place.ns);
        }
        removed
    }

    /// Takes the jobs of namespace `ns` that may start now.
    fn ready(&mut self, ns: u32) -> Vec<Ready> {
        let mut out = Vec::new();
        if let Some(nq) = self.namespaces.get_mut(&ns) {
            nq.ready(ns, &mut out);
        }
        out
    }
}

impl NsQueue {
    /// Takes the jobs of namespace `ns` that may start: each connection's first if no piece
    /// came before it, and the first piece once no connection's job came before it.
    fn ready(&mut self, ns: u32, out: &mut Vec<Ready>) {
        let piece = self.pieces.front().map_or(u64::MAX, |e| e.seq);
        let mut oldest_connection_job = u64::MAX;
        for (&c, queue) in self.by_connection.iter_mut() {
            let Some(front) = queue.front_mut() else {
                continue;
            };
            oldest_connection_job = oldest_connection_job.min(front.seq);
            if front.seq < piece {
                if let Some(job) = front.job.take() {
                    out.push((Place { ns, from: Some(c) }, front.seq, job));
                }
            }
        }
        if let Some(front) = self.pieces.front_mut() {
            if front.seq < oldest_connection_job {
                if let Some(job) = front.job.take() {
                    out.push((Place { ns, from: None }, front.seq, job));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A job that says `name` when it starts, then waits for `go`.
    fn gated(said: &mpsc::Sender<&'static str>, name: &'static str) -> (Job, mpsc::Sender<()>) {
        let (go, wait) = mpsc::channel::<()>();
        let said = said.clone();
        let job: Job = Box::new(move || {
            let _ = said.send(name);
            let _ = wait.recv_timeout(Duration::from_secs(30));
        });
        (job, go)
    }

    /// The `n` jobs that start next (waiting as long as a loaded machine may take), sorted;
    /// then that no other starts within a moment.
    fn started(heard: &mpsc::Receiver<&'static str>, n: usize) -> Vec<&'static str> {
        let mut all: Vec<_> = (0..n)
            .map(|_| {
                heard
                    .recv_timeout(Duration::from_secs(30))
                    .expect("a job started")
            })
            .collect();
        all.sort();
        let more = heard.recv_timeout(Duration::from_millis(200));
        assert!(more.is_err(), "{more:?} started too, after {all:?}");
        all
    }

    fn jobs(workers: usize) -> Arc<OrderedJobs> {
        OrderedJobs::new(Arc::new(Workers::start(workers).unwrap()))
    }

    fn drained(jobs: &OrderedJobs) {
        assert!(jobs.drain(Duration::from_secs(30)), "jobs left");
        assert!(!jobs.holds(1, Some(10)) && !jobs.holds(1, None));
    }

    #[test]
    fn a_connection_in_order_others_beside_it() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (a1, go_a1) = gated(&said, "a1");
        let (a2, go_a2) = gated(&said, "a2");
        let (other_conn, go_c) = gated(&said, "c");
        let (other_ns, go_b) = gated(&said, "b");
        assert_eq!(jobs.push(1, Some(10), a1), Pushed::Started);
        assert_eq!(jobs.push(1, Some(10), a2), Pushed::Queued);
        assert_eq!(jobs.push(1, Some(11), other_conn), Pushed::Started);
        assert_eq!(jobs.push(2, Some(10), other_ns), Pushed::Started);
        // Another connection's job and another namespace's do not wait for a1; a2 does.
        assert_eq!(started(&heard, 3), ["a1", "b", "c"]);
        assert!(jobs.holds(1, Some(10)) && !jobs.holds(1, Some(12)) && jobs.holds(1, None));
        assert!(!jobs.holds(3, Some(10)) && !jobs.holds(3, None));
        go_a1.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["a2"]);
        for go in [go_a2, go_b, go_c] {
            go.send(()).unwrap();
        }
        drained(&jobs);
    }

    #[test]
    fn a_piece_waits_for_its_namespace_and_holds_it_back() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (before, go_before) = gated(&said, "before");
        let (piece, go_piece) = gated(&said, "piece");
        let (after, go_after) = gated(&said, "after");
        let (elsewhere, go_elsewhere) = gated(&said, "elsewhere");
        assert_eq!(jobs.push(1, Some(10), before), Pushed::Started);
        assert_eq!(jobs.push(1, None, piece), Pushed::Queued);
        assert_eq!(jobs.push(1, Some(11), after), Pushed::Queued);
        assert_eq!(jobs.push(2, None, elsewhere), Pushed::Started);
        assert_eq!(started(&heard, 2), ["before", "elsewhere"]);
        // Any connection's command of the namespace must follow the piece.
        assert!(jobs.holds(1, Some(12)));
        go_before.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["piece"]);
        go_piece.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["after"]);
        go_after.send(()).unwrap();
        go_elsewhere.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn namespaces_sharing_a_counter_do_not_wait_for_each_other() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        let (a, go_a) = gated(&said, "a");
        let (b, go_b) = gated(&said, "b");
        let twin = 1 + SLOTS as u32;
        assert_eq!(jobs.push(1, None, a), Pushed::Started);
        // The same counter, another namespace: the lock says no.
        assert!(!jobs.holds(twin, Some(10)) && !jobs.holds(twin, None));
        assert_eq!(jobs.push(twin, None, b), Pushed::Started);
        assert_eq!(started(&heard, 2), ["a", "b"]);
        go_a.send(()).unwrap();
        go_b.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn a_panicking_job_does_not_stop_its_namespace() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        assert_ne!(
            jobs.push(1, None, Box::new(|| panic!("a job's bug"))),
            Pushed::Refused
        );
        let (after, go) = gated(&said, "after");
        assert_ne!(jobs.push(1, None, after), Pushed::Refused);
        assert_eq!(started(&heard, 1), ["after"]);
        go.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn stopped_workers_refuse_and_leave_nothing_pending() {
        let workers = Arc::new(Workers::start(1).unwrap());
        workers.stop();
        let jobs = OrderedJobs::new(workers);
        assert_eq!(jobs.push(1, Some(10), Box::new(|| {})), Pushed::Refused);
        assert!(jobs.is_empty() && !jobs.holds(1, Some(10)));
    }

    #[test]
    fn a_stop_drops_what_waits_and_lets_what_runs_end() {
        let workers = Arc::new(Workers::start(2).unwrap());
        let jobs = OrderedJobs::new(workers.clone());
        let (said, heard) = mpsc::channel();
        let (running, go) = gated(&said, "running");
        assert_eq!(jobs.push(1, Some(10), running), Pushed::Started);
        assert_eq!(started(&heard, 1), ["running"]);
        let (waiting, _) = gated(&said, "waiting");
        assert_eq!(jobs.push(1, Some(10), waiting), Pushed::Queued);
        // Stopping waits for the running job: it is let go from another thread.
        let stopper = std::thread::spawn(move || workers.stop());
        let refused = (0..30_000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            jobs.push(2, None, Box::new(|| {})) == Pushed::Refused
        });
        assert!(refused, "the stopped workers took a job");
        // What waited is gone; what runs still counts until it ends.
        assert!(jobs.holds(1, Some(10)));
        go.send(()).unwrap();
        stopper.join().unwrap();
        drained(&jobs);
        assert!(heard.try_recv().is_err(), "the waiting job ran");
    }
}
