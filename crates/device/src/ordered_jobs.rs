//! The jobs a network thread hands the workers that must keep an order: a piece of held
//! puts stored off the loop while the engine holds writes up, a write a native connection
//! hands the workers, and what must come after them (a client that pipelines a put and then
//! a get of the key sees its put; two puts of one key land in the order sent).
//!
//! Each job names the connections whose order it keeps: a connection's write names that
//! connection, a piece of held puts every connection with a put in it. A job of a namespace
//! starts once no job of that namespace before it names one of its connections. Everything
//! else runs side by side: other connections' jobs (their synchronous writes share a log
//! sync), and other namespaces', so a tenant whose writes wait holds up no other tenant,
//! and a connection's slow write holds up no other connection. A connection with a job
//! queued or running waits in its reader before its next command of the namespace
//! ([`OrderedJobs::wait_for`]).

use crate::panics::panic_message;
use crate::workers::{Job, Workers};
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

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
}

#[derive(Default)]
struct Queues {
    /// Each namespace's jobs, in the order they came.
    namespaces: FxHashMap<u32, VecDeque<Entry>>,
    next_seq: u64,
    /// A reader waiting for its jobs of a namespace (`wait_for`), by namespace and
    /// connection: told when one of them ends, not when anybody's does.
    waiters: FxHashMap<(u32, u64), Arc<Notify>>,
}

struct Entry {
    seq: u64,
    /// The connections whose order it keeps.
    conns: Vec<u64>,
    /// `None` once handed to the workers.
    job: Option<Job>,
}

/// A job that may start: its namespace, its sequence number, and the job.
type Ready = (u32, u64, Job);

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
        })
    }

    fn slot(&self, ns: u32) -> &AtomicU32 {
        &self.pending[ns as usize % SLOTS]
    }

    /// Whether nothing is queued or running.
    pub fn is_empty(&self) -> bool {
        self.pending.iter().all(|p| p.load(Ordering::Acquire) == 0)
    }

    /// Whether a job of namespace `ns` (or of one sharing its counter) may be queued or
    /// running: one plain load; false means none is.
    pub fn touches(&self, ns: u32) -> bool {
        self.slot(ns).load(Ordering::Acquire) != 0
    }

    /// Whether a job of namespace `ns` that names connection `from` is queued or running.
    pub fn holds(&self, ns: u32, from: u64) -> bool {
        self.holds_any_of(ns, &[from])
    }

    /// Whether a job of namespace `ns` that names one of `froms` is queued or running.
    pub fn holds_any_of(&self, ns: u32, froms: &[u64]) -> bool {
        if !self.touches(ns) {
            return false;
        }
        let q = self.queues.lock();
        let Some(queue) = q.namespaces.get(&ns) else {
            return false;
        };
        queue
            .iter()
            .any(|e| e.conns.iter().any(|c| froms.contains(c)))
    }

    /// Waits until no job of namespace `ns` naming connection `from` is queued or running.
    /// Only the connection's own jobs and the pieces holding its puts: bounded, since it
    /// sends nothing more of the namespace meanwhile.
    pub async fn wait_for(&self, ns: u32, from: u64) {
        let notify = self
            .queues
            .lock()
            .waiters
            .entry((ns, from))
            .or_default()
            .clone();
        loop {
            let ended = notify.notified();
            let mut ended = std::pin::pin!(ended);
            // Registered before the check: a job ending between the two still wakes it.
            ended.as_mut().enable();
            if !self.holds(ns, from) {
                break;
            }
            ended.await;
        }
        self.queues.lock().waiters.remove(&(ns, from));
    }

    /// Runs `job`, of namespace `ns`, on a worker once no job of `ns` before it names one
    /// of `conns` (the connections whose order it keeps). Refused: dropped, with whatever
    /// was queued.
    pub fn push(self: &Arc<Self>, ns: u32, mut conns: Vec<u64>, job: Job) -> Pushed {
        conns.sort_unstable();
        conns.dedup();
        let (ready, seq) = {
            let mut q = self.queues.lock();
            let seq = q.next_seq;
            q.next_seq += 1;
            self.slot(ns).fetch_add(1, Ordering::AcqRel);
            q.namespaces.entry(ns).or_default().push_back(Entry {
                seq,
                conns,
                job: Some(job),
            });
            (q.ready(ns), seq)
        };
        let started = ready.iter().any(|(_, s, _)| *s == seq);
        match (self.start(ready), started) {
            (false, _) => Pushed::Refused,
            (true, true) => Pushed::Started,
            (true, false) => Pushed::Queued,
        }
    }

    /// Hands `ready` to the workers, each to end its entry when done.
    fn start(self: &Arc<Self>, ready: Vec<Ready>) -> bool {
        let mut ready = ready.into_iter();
        while let Some((ns, seq, job)) = ready.next() {
            let jobs = self.clone();
            let submitted = self.workers.submit(Box::new(move || {
                // Its entry must end even if it panics, or its connections would wait forever.
                if let Err(payload) = catch_unwind(AssertUnwindSafe(job)) {
                    tracing::error!(
                        panic = panic_message(payload.as_ref()),
                        "an ordered job panicked"
                    );
                }
                jobs.finish(ns, seq);
            }));
            if !submitted {
                // Their entries go with the jobs, or they would be waited for forever.
                self.end(ns, seq);
                for (ns, seq, _) in ready {
                    self.end(ns, seq);
                }
                self.abandon();
                return false;
            }
        }
        true
    }

    /// Ends job `seq` of `ns` and starts what waited for it.
    fn finish(self: &Arc<Self>, ns: u32, seq: u64) {
        let ready = self.end(ns, seq);
        self.start(ready);
    }

    /// Removes job `seq` of `ns`, tells the readers waiting for it, and takes the jobs of
    /// `ns` that may start now.
    fn end(&self, ns: u32, seq: u64) -> Vec<Ready> {
        let mut q = self.queues.lock();
        let Some(entry) = q.remove(ns, seq) else {
            return Vec::new();
        };
        self.slot(ns).fetch_sub(1, Ordering::AcqRel);
        for c in &entry.conns {
            if let Some(waiter) = q.waiters.get(&(ns, *c)) {
                waiter.notify_waiters();
            }
        }
        q.ready(ns)
    }

    /// The workers are stopped: the jobs not started are dropped (their answers with
    /// them); those running end as usual.
    fn abandon(&self) {
        let mut dropped = Vec::new();
        let mut q = self.queues.lock();
        for (&ns, queue) in q.namespaces.iter_mut() {
            let before = queue.len();
            queue.retain_mut(|e| match e.job.take() {
                Some(job) => {
                    dropped.push(job);
                    false
                }
                None => true,
            });
            self.slot(ns)
                .fetch_sub((before - queue.len()) as u32, Ordering::AcqRel);
        }
        q.namespaces.retain(|_, queue| !queue.is_empty());
        for waiter in q.waiters.values() {
            waiter.notify_waiters();
        }
        drop(q);
        drop(dropped);
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
    /// Removes job `seq` of `ns`, and the namespace's queue if it leaves it empty.
    fn remove(&mut self, ns: u32, seq: u64) -> Option<Entry> {
        let queue = self.namespaces.get_mut(&ns)?;
        let i = queue.iter().position(|e| e.seq == seq)?;
        let entry = queue.remove(i);
        if queue.is_empty() {
            self.namespaces.remove(&ns);
        }
        entry
    }

    /// Takes the jobs of namespace `ns` that may start: those no job before them names a
    /// connection of.
    fn ready(&mut self, ns: u32) -> Vec<Ready> {
        let mut out = Vec::new();
        let Some(queue) = self.namespaces.get_mut(&ns) else {
            return out;
        };
        let mut seen: FxHashSet<u64> = FxHashSet::default();
        for e in queue.iter_mut() {
            let free = !e.conns.iter().any(|c| seen.contains(c));
            if free {
                if let Some(job) = e.job.take() {
                    out.push((ns, e.seq, job));
                }
            }
            seen.extend(e.conns.iter().copied());
        }
        out
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
        assert!(!jobs.holds(1, 10) && !jobs.touches(1));
    }

    #[test]
    fn a_connection_in_order_others_beside_it() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (a1, go_a1) = gated(&said, "a1");
        let (a2, go_a2) = gated(&said, "a2");
        let (other_conn, go_c) = gated(&said, "c");
        let (other_ns, go_b) = gated(&said, "b");
        assert_eq!(jobs.push(1, vec![10], a1), Pushed::Started);
        assert_eq!(jobs.push(1, vec![10], a2), Pushed::Queued);
        assert_eq!(jobs.push(1, vec![11], other_conn), Pushed::Started);
        assert_eq!(jobs.push(2, vec![10], other_ns), Pushed::Started);
        // Another connection's job and another namespace's do not wait for a1; a2 does.
        assert_eq!(started(&heard, 3), ["a1", "b", "c"]);
        assert!(jobs.holds(1, 10) && jobs.holds(1, 11) && !jobs.holds(1, 12));
        assert!(!jobs.holds(3, 10) && jobs.holds_any_of(1, &[12, 11]));
        go_a1.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["a2"]);
        for go in [go_a2, go_b, go_c] {
            go.send(()).unwrap();
        }
        drained(&jobs);
    }

    #[test]
    fn a_piece_waits_for_the_jobs_of_its_connections_only() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (before, go_before) = gated(&said, "before");
        let (piece, go_piece) = gated(&said, "piece");
        let (after, go_after) = gated(&said, "after");
        let (stranger, go_stranger) = gated(&said, "stranger");
        assert_eq!(jobs.push(1, vec![10], before), Pushed::Started);
        // Puts of connections 10 and 11: after 10's job.
        assert_eq!(jobs.push(1, vec![11, 10], piece), Pushed::Queued);
        // Connection 11's next job comes after the piece with its put; 12 owes nothing.
        assert_eq!(jobs.push(1, vec![11], after), Pushed::Queued);
        assert_eq!(jobs.push(1, vec![12], stranger), Pushed::Started);
        assert_eq!(started(&heard, 2), ["before", "stranger"]);
        assert!(jobs.holds(1, 11) && jobs.holds(1, 12) && !jobs.holds(1, 13));
        go_before.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["piece"]);
        go_piece.send(()).unwrap();
        assert_eq!(started(&heard, 1), ["after"]);
        go_after.send(()).unwrap();
        go_stranger.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn a_reader_waits_for_its_own_jobs_only() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        let (mine, go_mine) = gated(&said, "mine");
        let (theirs, _go_theirs) = gated(&said, "theirs");
        assert_eq!(jobs.push(1, vec![10], mine), Pushed::Started);
        assert_eq!(jobs.push(1, vec![11], theirs), Pushed::Started);
        assert_eq!(started(&heard, 2), ["mine", "theirs"]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Connection 12 has nothing here: no wait at all.
        rt.block_on(jobs.wait_for(1, 12));
        let waiter = {
            let jobs = jobs.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(jobs.wait_for(1, 10));
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished(), "the reader did not wait for its job");
        // Its own job ends: it goes on, while the other connection's still runs.
        go_mine.send(()).unwrap();
        waiter.join().unwrap();
        assert!(jobs.holds(1, 11));
    }

    #[test]
    fn namespaces_sharing_a_counter_do_not_wait_for_each_other() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        let (a, go_a) = gated(&said, "a");
        let (b, go_b) = gated(&said, "b");
        let twin = 1 + SLOTS as u32;
        assert_eq!(jobs.push(1, vec![10], a), Pushed::Started);
        // The same counter, another namespace: the lock says no.
        assert!(jobs.touches(twin) && !jobs.holds(twin, 10));
        assert_eq!(jobs.push(twin, vec![10], b), Pushed::Started);
        assert_eq!(started(&heard, 2), ["a", "b"]);
        go_a.send(()).unwrap();
        go_b.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn a_panicking_job_does_not_stop_its_namespace() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        let bug: Job = Box::new(|| panic!("a job's bug"));
        assert_ne!(jobs.push(1, vec![10], bug), Pushed::Refused);
        let (after, go) = gated(&said, "after");
        assert_ne!(jobs.push(1, vec![10], after), Pushed::Refused);
        assert_eq!(started(&heard, 1), ["after"]);
        go.send(()).unwrap();
        drained(&jobs);
    }

    #[test]
    fn stopped_workers_refuse_and_leave_nothing_pending() {
        let workers = Arc::new(Workers::start(1).unwrap());
        workers.stop();
        let jobs = OrderedJobs::new(workers);
        assert_eq!(jobs.push(1, vec![10], Box::new(|| {})), Pushed::Refused);
        assert!(jobs.is_empty() && !jobs.holds(1, 10));
    }

    #[test]
    fn a_stop_drops_what_waits_and_lets_what_runs_end() {
        let workers = Arc::new(Workers::start(2).unwrap());
        let jobs = OrderedJobs::new(workers.clone());
        let (said, heard) = mpsc::channel();
        let (running, go) = gated(&said, "running");
        assert_eq!(jobs.push(1, vec![10], running), Pushed::Started);
        assert_eq!(started(&heard, 1), ["running"]);
        let (waiting, _) = gated(&said, "waiting");
        assert_eq!(jobs.push(1, vec![10], waiting), Pushed::Queued);
        // Stopping waits for the running job: it is let go from another thread.
        let stopper = std::thread::spawn(move || workers.stop());
        let refused = (0..30_000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            jobs.push(2, vec![11], Box::new(|| {})) == Pushed::Refused
        });
        assert!(refused, "the stopped workers took a job");
        // What waited is gone; what runs still counts until it ends.
        assert!(jobs.holds(1, 10));
        go.send(()).unwrap();
        stopper.join().unwrap();
        drained(&jobs);
        assert!(heard.try_recv().is_err(), "the waiting job ran");
    }
}
