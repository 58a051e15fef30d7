//! A small pool of reader threads for reads issued ahead of their use: the value reads of
//! an iterator's next entries, its next data block, its level's next table. Reads on the
//! pool overlap each other and the caller's work (on the NAND model, on different dies; on
//! files, in the kernel's queue).

use crossbeam_channel::{Receiver, Sender};

type Job = Box<dyn FnOnce() + Send>;

/// The reader threads, started on the first read submitted (so an iterator that never
/// reads ahead costs no thread start). They stop once the pool is dropped and their queue
/// is empty.
pub struct ReadPool {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    threads: usize,
    started: std::sync::Once,
    /// Threads that did start; with none, reads run on the caller.
    running: std::sync::atomic::AtomicUsize,
}

impl ReadPool {
    pub fn new(threads: usize) -> ReadPool {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        ReadPool {
            jobs,
            queue,
            threads: threads.max(1),
            started: std::sync::Once::new(),
            running: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn start(&self) {
        for i in 0..self.threads {
            let queue = self.queue.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cerberus-prefetch-{i}"))
                .spawn(move || {
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                });
            match spawned {
                Ok(_) => {
                    self.running
                        .fetch_add(1, std::sync::atomic::Ordering::Release);
                }
                // Fewer readers: reads overlap less, nothing else changes.
                Err(e) => tracing::warn!(error = %e, "could not start a prefetch thread"),
            }
        }
    }

    /// Runs `read` on the pool; its result arrives on the receiver. Without a reader
    /// thread it runs here and now.
    pub fn submit<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Receiver<T> {
        self.started.call_once(|| self.start());
        let (tx, rx) = crossbeam_channel::bounded(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(read());
        });
        if self.running.load(std::sync::atomic::Ordering::Acquire) == 0 {
            job();
        } else if let Err(e) = self.jobs.send(job) {
            (e.into_inner())();
        }
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_to_whoever_asked() {
        let pool = ReadPool::new(3);
        let rx: Vec<_> = (0..50u64).map(|i| pool.submit(move || i * i)).collect();
        let got: Vec<u64> = rx.into_iter().map(|r| r.recv().unwrap()).collect();
        assert_eq!(got, (0..50u64).map(|i| i * i).collect::<Vec<_>>());
    }
}
