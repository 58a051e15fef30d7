//! Value prefetch: a small pool of threads that read value-log records for iterators, so
//! the reads of the next entries overlap each other and the caller's work (on the NAND
//! model, on different dies; on files, in the kernel's queue).

use super::*;
use crossbeam_channel::{Receiver, Sender};

/// A value on its way to an iterator.
pub(super) enum Fetch {
    Ready(Bytes),
    /// Not asked for yet: read when its key is yielded.
    Later(key::ValueAddr),
    /// Being read by the pool.
    Pending(Receiver<Result<Bytes>>),
}

impl Fetch {
    /// Bytes held for this value now.
    pub(super) fn bytes(&self) -> usize {
        match self {
            Fetch::Ready(v) => v.len(),
            Fetch::Later(_) | Fetch::Pending(_) => 0,
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The reader threads. They stop once the pool is dropped (with the database's state) and
/// their queue is empty.
pub(super) struct Prefetcher {
    jobs: Sender<Job>,
}

impl Prefetcher {
    pub(super) fn new(threads: usize) -> Prefetcher {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        for i in 0..threads.max(1) {
            let queue = queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cerberus-prefetch-{i}"))
                .spawn(move || {
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                });
            if let Err(e) = spawned {
                // Fewer readers: prefetch overlaps less, nothing else changes.
                tracing::warn!(error = %e, "could not start a prefetch thread");
            }
        }
        Prefetcher { jobs }
    }

    /// Starts reading the value of `(ns, key)` at `addr`; the read is counted in `c`.
    pub(super) fn read(
        &self,
        inner: Arc<Inner>,
        addr: key::ValueAddr,
        ns: Nsid,
        key: Bytes,
        c: Arc<Counters>,
    ) -> Fetch {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(inner.vlog_reader.read_value(addr, ns, &key, &c));
        });
        match self.jobs.send(job) {
            Ok(()) => Fetch::Pending(rx),
            // No reader thread at all: the value is read when its key is yielded.
            Err(_) => Fetch::Later(addr),
        }
    }
}
