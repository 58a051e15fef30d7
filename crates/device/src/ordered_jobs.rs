//! The jobs a network thread hands the workers that must keep an order: a piece of held
//! puts stored off the loop while the engine holds writes up, a write carried out on a
//! worker, and each command read after them that must see them (a client that pipelines a
//! put and then a get of the key sees its put; two puts of one key land in the order sent).
//!
//! A connection's jobs of one namespace run one at a time, in the order it sent them. A
//! piece of held puts holds puts of any connection: it runs after every job of its
//! namespace before it, and every job of the namespace after it waits for it. A job of the
//! device's namespace waits for every job before it. Anything else runs side by side:
//! another connection's (group commit of their synchronous writes), and above all another
//! namespace's, so a tenant whose writes the engine holds up holds up no other tenant.

use crate::panics::panic_message;
use crate::workers::{Job, Workers};
use cerberus_proto::DEVICE_NSID;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A new id for a connection (or an NVMe/TCP queue): whose order its jobs keep.
pub fn connection_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub struct OrderedJobs {
    workers: Arc<Workers>,
    /// Jobs queued or running: the lock-free check every command of the thread makes.
    pending: AtomicUsize,
    queues: Mutex<Queues>,
}

#[derive(Default)]
struct Queues {
    namespaces: FxHashMap<u32, NsQueue>,
    /// Jobs of the device's namespace, in the order they came.
    device: VecDeque<Entry>,
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

impl OrderedJobs {
    pub fn new(workers: Arc<Workers>) -> Arc<OrderedJobs> {
        Arc::new(OrderedJobs {
            workers,
            pending: AtomicUsize::new(0),
            queues: Mutex::new(Queues::default()),
        })
    }

    /// Whether nothing is queued or running.
    pub fn is_empty(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Whether a command of namespace `ns` from connection `from` (`None`: a piece of held
    /// puts) must come after a job queued or running here.
    pub fn holds(&self, ns: u32, from: Option<u64>) -> bool {
        if self.is_empty() {
            return false;
        }
        if ns == DEVICE_NSID {
            return true;
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

    /// Runs `job` on a worker once the jobs before it that it must follow are done (see
    /// the module): a job of namespace `ns` from connection `from` (`None`: a piece of held
    /// puts). False if the workers refused a job (the device is stopping); then it is
    /// dropped, with whatever was queued.
    pub fn push(self: &Arc<Self>, ns: u32, from: Option<u64>, job: Job) -> bool {
        let place = Place { ns, from };
        let ready = {
            let mut q = self.queues.lock();
            let seq = q.next_seq;
            q.next_seq += 1;
            self.pending.fetch_add(1, Ordering::AcqRel);
            q.queue_of(place).push_back(Entry {
                seq,
                job: Some(job),
            });
            q.ready(ns)
        };
        self.start(ready)
    }

    /// Hands `ready` to the workers, each to end its entry when done.
    fn start(self: &Arc<Self>, ready: Vec<Ready>) -> bool {
        for (place, seq, job) in ready {
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
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
            q.ready(place.ns)
        };
        self.start(ready);
    }

    /// The workers are stopped: what is queued is dropped (its answers with it).
    fn abandon(&self) {
        let dropped = {
            let mut q = self.queues.lock();
            self.pending.store(0, Ordering::Release);
            std::mem::take(&mut *q)
        };
        drop(dropped);
    }
}

impl Queues {
    fn queue_of(&mut self, place: Place) -> &mut VecDeque<Entry> {
        if place.ns == DEVICE_NSID {
            return &mut self.device;
        }
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
        if place.ns == DEVICE_NSID {
            return take(&mut self.device);
        }
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

    /// Takes the jobs that may start now, of namespace `ns` and of the device's.
    fn ready(&mut self, ns: u32) -> Vec<Ready> {
        let mut out = Vec::new();
        if let Some(nq) = self.namespaces.get_mut(&ns) {
            nq.ready(ns, &mut out);
        }
        self.device_ready(&mut out);
        out
    }

    /// The device's first job, once no job of a namespace came before it.
    fn device_ready(&mut self, out: &mut Vec<Ready>) {
        let Some(front) = self.device.front_mut() else {
            return;
        };
        let earlier = self.namespaces.values().any(|nq| nq.oldest() < front.seq);
        if earlier {
            return;
        }
        if let Some(job) = front.job.take() {
            let place = Place {
                ns: DEVICE_NSID,
                from: None,
            };
            out.push((place, front.seq, job));
        }
    }
}

impl NsQueue {
    /// The sequence number of its oldest job (each queue's first is its oldest).
    fn oldest(&self) -> u64 {
        let pieces = self.pieces.front().map(|e| e.seq);
        let conns = self
            .by_connection
            .values()
            .filter_map(|q| q.front().map(|e| e.seq));
        pieces.into_iter().chain(conns).min().unwrap_or(u64::MAX)
    }

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
            let _ = wait.recv_timeout(Duration::from_secs(10));
        });
        (job, go)
    }

    fn next(said: &mpsc::Receiver<&'static str>) -> Option<&'static str> {
        said.recv_timeout(Duration::from_millis(300)).ok()
    }

    /// What started within a moment, in sorted order.
    fn started(heard: &mpsc::Receiver<&'static str>) -> Vec<&'static str> {
        let mut all: Vec<_> = std::iter::from_fn(|| next(heard)).collect();
        all.sort();
        all
    }

    fn jobs(workers: usize) -> Arc<OrderedJobs> {
        OrderedJobs::new(Arc::new(Workers::start(workers).unwrap()))
    }

    #[test]
    fn a_connection_in_order_others_beside_it() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (a1, go_a1) = gated(&said, "a1");
        let (a2, go_a2) = gated(&said, "a2");
        let (other_conn, go_c) = gated(&said, "c");
        let (other_ns, go_b) = gated(&said, "b");
        assert!(jobs.push(1, Some(10), a1) && jobs.push(1, Some(10), a2));
        assert!(jobs.push(1, Some(11), other_conn) && jobs.push(2, Some(10), other_ns));
        // Another connection's job and another namespace's do not wait for a1; a2 does.
        assert_eq!(started(&heard), ["a1", "b", "c"]);
        assert!(jobs.holds(1, Some(10)) && !jobs.holds(1, Some(12)) && jobs.holds(1, None));
        assert!(!jobs.holds(3, Some(10)) && jobs.holds(DEVICE_NSID, None));
        go_a1.send(()).unwrap();
        assert_eq!(next(&heard), Some("a2"));
        for go in [go_a2, go_b, go_c] {
            go.send(()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(jobs.is_empty() && !jobs.holds(1, Some(10)) && !jobs.holds(DEVICE_NSID, None));
    }

    #[test]
    fn a_piece_waits_for_its_namespace_and_holds_it_back() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (before, go_before) = gated(&said, "before");
        let (piece, go_piece) = gated(&said, "piece");
        let (after, go_after) = gated(&said, "after");
        let (elsewhere, go_elsewhere) = gated(&said, "elsewhere");
        assert!(jobs.push(1, Some(10), before) && jobs.push(1, None, piece));
        assert!(jobs.push(1, Some(11), after) && jobs.push(2, None, elsewhere));
        assert_eq!(started(&heard), ["before", "elsewhere"]);
        // Any connection's command of the namespace must follow the piece.
        assert!(jobs.holds(1, Some(12)));
        go_before.send(()).unwrap();
        assert_eq!(started(&heard), ["piece"]);
        go_piece.send(()).unwrap();
        assert_eq!(started(&heard), ["after"]);
        go_after.send(()).unwrap();
        go_elsewhere.send(()).unwrap();
    }

    #[test]
    fn the_device_namespace_waits_for_every_job_before_it() {
        let jobs = jobs(4);
        let (said, heard) = mpsc::channel();
        let (a, go_a) = gated(&said, "a");
        let (d, go_d) = gated(&said, "device");
        let (b, go_b) = gated(&said, "b");
        assert!(jobs.push(1, Some(10), a) && jobs.push(DEVICE_NSID, Some(10), d));
        assert!(jobs.push(2, Some(10), b));
        assert_eq!(started(&heard), ["a", "b"]);
        go_a.send(()).unwrap();
        assert_eq!(started(&heard), ["device"]);
        go_d.send(()).unwrap();
        go_b.send(()).unwrap();
    }

    #[test]
    fn a_panicking_job_does_not_stop_its_namespace() {
        let jobs = jobs(2);
        let (said, heard) = mpsc::channel();
        assert!(jobs.push(1, None, Box::new(|| panic!("a job's bug"))));
        let (after, go) = gated(&said, "after");
        assert!(jobs.push(1, None, after));
        assert_eq!(next(&heard), Some("after"));
        go.send(()).unwrap();
    }

    #[test]
    fn stopped_workers_refuse_and_leave_nothing_pending() {
        let workers = Arc::new(Workers::start(1).unwrap());
        workers.stop();
        let jobs = OrderedJobs::new(workers);
        assert!(!jobs.push(1, Some(10), Box::new(|| {})));
        assert!(jobs.is_empty() && !jobs.holds(1, Some(10)));
    }
}
