//! The library threads the `_async` calls run on: a bounded queue of jobs (`job_queue`),
//! served by a few threads per device handle. A thread takes the jobs waiting in the queue
//! together (up to [`MAX_BATCH`]), so that the runner can send them to the device together.
//! A full queue refuses the call (the caller retries) rather than growing; closing waits for
//! every job queued before it.

use crate::job_queue::{JobQueue, Refused};
use crate::locks::lock;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

/// Jobs a device handle queues before it refuses more.
pub const QUEUE_DEPTH: usize = 4096;
/// Jobs a thread takes at once.
pub const MAX_BATCH: usize = 64;
/// Threads per device handle unless `CERBERUS_KVS_THREADS` says otherwise.
const DEFAULT_THREADS: usize = 4;
const MAX_THREADS: usize = 64;

/// The threads and their queue of `T`s.
pub struct CompletionPool<T> {
    queue: Arc<JobQueue<T>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    ids: Vec<ThreadId>,
}

impl<T: Send + 'static> CompletionPool<T> {
    /// `threads` threads (1 to 64) serving a queue of `QUEUE_DEPTH`, each handing the jobs
    /// it took to `run`.
    pub fn start(threads: usize, run: fn(Vec<T>)) -> std::io::Result<CompletionPool<T>> {
        let queue = Arc::new(JobQueue::new(QUEUE_DEPTH));
        let mut handles = Vec::new();
        for i in 0..threads.clamp(1, MAX_THREADS) {
            let mine = queue.clone();
            let h = std::thread::Builder::new()
                .name(format!("kvs-completion-{i}"))
                .spawn(move || serve(&mine, run));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The threads started end once they see the queue closed.
                    queue.close();
                    return Err(e);
                }
            }
        }
        let ids = handles.iter().map(|h| h.thread().id()).collect();
        Ok(CompletionPool {
            queue,
            threads: Mutex::new(handles),
            ids,
        })
    }

    /// Queues `job`.
    pub fn submit(&self, job: T) -> Result<(), Refused> {
        self.queue.push(job)
    }
}

impl<T> CompletionPool<T> {
    /// The thread count `CERBERUS_KVS_THREADS` asks for, or the default.
    pub fn threads_from_env(env: crate::credentials::Env) -> usize {
        env("CERBERUS_KVS_THREADS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_THREADS)
    }

    /// Refuses new jobs, and waits until the threads ran every queued one. From one of the
    /// pool's own threads (a callback closing its device) it cannot wait for itself: the
    /// threads then end once they drained the queue.
    pub fn close(&self) {
        self.queue.close();
        if self.ids.contains(&std::thread::current().id()) {
            return;
        }
        let threads: Vec<_> = lock(&self.threads).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl<T> Drop for CompletionPool<T> {
    fn drop(&mut self) {
        self.close();
    }
}

fn serve<T>(queue: &JobQueue<T>, run: fn(Vec<T>)) {
    let mut warm = false;
    while let Some(batch) = queue.take(MAX_BATCH, warm) {
        // The runner reports its own failures; this keeps the thread alive if a panic
        // escapes anyway.
        let _ = catch_unwind(AssertUnwindSafe(|| run(batch)));
        warm = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    type Job = Box<dyn FnOnce() + Send>;

    fn run_each(jobs: Vec<Job>) {
        for j in jobs {
            j();
        }
    }

    #[test]
    fn close_waits_for_every_queued_job() {
        let pool = CompletionPool::<Job>::start(2, run_each).unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let done = done.clone();
            pool.submit(Box::new(move || {
                done.fetch_add(1, Ordering::SeqCst);
            }))
            .unwrap();
        }
        pool.close();
        assert_eq!(done.load(Ordering::SeqCst), 100);
        assert_eq!(pool.submit(Box::new(|| {})).err(), Some(Refused::Closed));
    }

    #[test]
    fn a_full_queue_refuses() {
        let pool = CompletionPool::<Job>::start(1, run_each).unwrap();
        let (hold_tx, hold_rx) = std::sync::mpsc::sync_channel::<()>(0);
        pool.submit(Box::new(move || {
            let _ = hold_rx.recv();
        }))
        .unwrap();
        let mut refused = false;
        for _ in 0..QUEUE_DEPTH + MAX_BATCH + 2 {
            if pool.submit(Box::new(|| {})).err() == Some(Refused::Full) {
                refused = true;
                break;
            }
        }
        assert!(refused);
        drop(hold_tx);
        pool.close();
    }

    #[test]
    fn queued_jobs_are_taken_together() {
        static LARGEST: AtomicUsize = AtomicUsize::new(0);
        fn note(jobs: Vec<usize>) {
            LARGEST.fetch_max(jobs.len(), Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let pool = CompletionPool::<usize>::start(1, note).unwrap();
        for i in 0..200 {
            pool.submit(i).unwrap();
        }
        pool.close();
        let largest = LARGEST.load(Ordering::SeqCst);
        assert!(largest > 1 && largest <= MAX_BATCH, "{largest}");
    }

    #[test]
    fn submitters_racing_a_close_see_each_accepted_job_run_once() {
        let pool = Arc::new(CompletionPool::<Job>::start(3, run_each).unwrap());
        let (accepted, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let submitters: Vec<_> = (0..8)
            .map(|_| {
                let (pool, accepted, ran) = (pool.clone(), accepted.clone(), ran.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let ran = ran.clone();
                        match pool.submit(Box::new(move || {
                            ran.fetch_add(1, Ordering::SeqCst);
                        })) {
                            Ok(()) => {
                                accepted.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(Refused::Full) => std::thread::yield_now(),
                            Err(Refused::Closed) => return,
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(2));
        pool.close();
        let after_close = ran.load(Ordering::SeqCst);
        for s in submitters {
            s.join().unwrap();
        }
        assert_eq!(after_close, accepted.load(Ordering::SeqCst));
        assert_eq!(ran.load(Ordering::SeqCst), accepted.load(Ordering::SeqCst));
    }

    #[test]
    fn a_panicking_runner_does_not_kill_its_thread() {
        let pool = CompletionPool::<Job>::start(1, run_each).unwrap();
        pool.submit(Box::new(|| panic!("boom"))).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        pool.submit(Box::new(move || {
            d.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
        pool.close();
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }
}
