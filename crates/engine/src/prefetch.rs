//! Reads issued ahead of their use: the value reads of an iterator's next entries, its next
//! data block, its level's next table. On files a small pool of reader threads makes them
//! overlap each other and the caller's work (in the kernel's queue). On the NAND model they
//! are submitted to the modeled device at once, on the caller's thread, and overlap on its
//! dies: only the reader who takes the result waits for its completion.

use crate::storage::{deferred, Completion};
use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

type Job = Box<dyn FnOnce() + Send>;

/// Where reads issued ahead run.
pub struct ReadPool {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    threads: usize,
    /// The storage models its latency: reads are deferred rather than put on threads.
    modeled: bool,
    /// The reader threads start on the first read submitted (so an iterator that never reads
    /// ahead costs no thread start). They stop once the pool is dropped and their queue is
    /// empty.
    started: Once,
    /// Threads that did start; with none, reads run on the caller.
    running: AtomicUsize,
    /// The threads' name, and their nice value (background reads yield to clients' threads).
    name: &'static str,
    nice: i32,
}

/// A read issued ahead; [`Pending::wait`] gives its result once it is complete. Dropped
/// unread, it still waits for a reader thread's read to finish: the read counts its pages
/// into its iterator's counters, which must be final once the iterator is gone.
pub struct Pending<T>(Option<Issued<T>>);

enum Issued<T> {
    Thread(Receiver<T>),
    /// Boxed, so that a read pending in an iterator's state costs a pointer.
    Modeled(Box<(T, Completion)>),
}

impl<T> Pending<T> {
    /// The read's result, waiting for it if it is not complete; `None` if the reader thread
    /// stopped without one.
    pub fn wait(mut self) -> Option<T> {
        match self.0.take()? {
            Issued::Thread(rx) => rx.recv().ok(),
            Issued::Modeled(issued) => {
                let (value, done) = *issued;
                done.wait();
                Some(value)
            }
        }
    }
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        if let Some(Issued::Thread(rx)) = self.0.take() {
            // Ends with the read, or at once if its job was dropped unrun.
            let _ = rx.recv();
        }
    }
}

impl ReadPool {
    /// A pool of `threads` readers; `modeled`: the storage has a timing model, whose reads
    /// are deferred instead.
    pub fn new(threads: usize, modeled: bool) -> ReadPool {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        ReadPool {
            jobs,
            queue,
            threads: threads.max(1),
            modeled,
            started: Once::new(),
            running: AtomicUsize::new(0),
            name: "cerberus-prefetch",
            nice: 0,
        }
    }

    /// A pool for background work's reads (a flush's lookups), its threads named `name` at
    /// nice value `nice` (`Options::background_nice`).
    pub fn for_background(mut self, name: &'static str, nice: i32) -> ReadPool {
        (self.name, self.nice) = (name, nice);
        self
    }

    fn start(&self) {
        for i in 0..self.threads {
            let (queue, nice) = (self.queue.clone(), self.nice);
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", self.name))
                .spawn(move || {
                    crate::priority::lower_priority(nice);
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                });
            match spawned {
                Ok(_) => {
                    self.running.fetch_add(1, Ordering::Release);
                }
                // Fewer readers: reads overlap less, nothing else changes.
                Err(e) => tracing::warn!(error = %e, "could not start a prefetch thread"),
            }
        }
    }

    /// Runs `job` on a reader thread, or here and now without one; its caller learns of its
    /// end through the job itself (a query's piece walked on another core).
    pub fn run(&self, job: impl FnOnce() + Send + 'static) {
        self.started.call_once(|| self.start());
        let job: Job = Box::new(job);
        if self.running.load(Ordering::Acquire) == 0 {
            job();
        } else if let Err(e) = self.jobs.send(job) {
            (e.into_inner())();
        }
    }

    /// Issues `read` ahead of its use. Without a reader thread it runs here and now.
    pub fn submit<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Pending<T> {
        if self.modeled {
            return Pending(Some(Issued::Modeled(Box::new(deferred(read)))));
        }
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.run(move || {
            let _ = tx.send(read());
        });
        Pending(Some(Issued::Thread(rx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{IoPurpose, MemStorage, NandConfig, NandStorage, Storage};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn results_come_back_to_whoever_asked() {
        let pool = ReadPool::new(3, false);
        let rx: Vec<_> = (0..50u64).map(|i| pool.submit(move || i * i)).collect();
        let got: Vec<u64> = rx.into_iter().map(|r| r.wait().unwrap()).collect();
        assert_eq!(got, (0..50u64).map(|i| i * i).collect::<Vec<_>>());
    }

    #[test]
    fn modeled_reads_overlap_without_threads() {
        let t_read = Duration::from_millis(20);
        let config = NandConfig {
            t_read,
            ..NandConfig::default()
        };
        let nand = NandStorage::new(Arc::new(MemStorage::new()), config.clone());
        let f = nand.create("f").unwrap();
        let pages = 4;
        f.append(&vec![7u8; pages * config.page_size], IoPurpose::Log)
            .unwrap();
        f.sync().unwrap();
        let file = nand.open("f").unwrap();
        let pool = ReadPool::new(1, true);
        let start = Instant::now();
        // Consecutive pages sit on different dies: four reads in flight at once.
        let pending: Vec<_> = (0..pages)
            .map(|p| {
                let file = file.clone();
                let at = (p * config.page_size) as u64;
                pool.submit(move || file.read_at(at, 100, IoPurpose::Value))
            })
            .collect();
        assert!(
            start.elapsed() < t_read,
            "a modeled read was waited for at submit"
        );
        for p in pending {
            assert_eq!(p.wait().unwrap().unwrap(), vec![7u8; 100]);
        }
        let took = start.elapsed();
        assert!(took >= t_read, "completed before the modeled tR: {took:?}");
        assert!(took < 3 * t_read, "the reads did not overlap: {took:?}");
        assert_eq!(pool.running.load(Ordering::Acquire), 0);
    }
}
