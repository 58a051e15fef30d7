//! The library threads the `_async` calls run on: a bounded queue of jobs, served by a few
//! threads per device handle that run each call and then its completion callback. A full
//! queue refuses the call (the caller retries) rather than growing; closing waits for every
//! job queued before it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};

/// Jobs a device handle queues before it refuses more.
pub const QUEUE_DEPTH: usize = 4096;
/// Threads per device handle unless `CERBERUS_KVS_THREADS` says otherwise.
const DEFAULT_THREADS: usize = 4;
const MAX_THREADS: usize = 64;

/// A queued call: runs the operation and its callback.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why a job was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds `QUEUE_DEPTH` jobs.
    Full,
    /// The pool is closed (the device handle is closing).
    Closed,
}

/// The threads and their queue.
pub struct CompletionPool {
    queue: Mutex<Option<SyncSender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    ids: Vec<ThreadId>,
}

impl CompletionPool {
    /// `threads` threads (1 to 64) serving a queue of `QUEUE_DEPTH`.
    pub fn start(threads: usize) -> std::io::Result<CompletionPool> {
        let (tx, rx) = sync_channel::<Job>(QUEUE_DEPTH);
        // One receiver, taken in turn: a thread holds the lock only to take a job.
        let rx = Arc::new(Mutex::new(rx));
        let mut handles = Vec::new();
        for i in 0..threads.clamp(1, MAX_THREADS) {
            let rx = rx.clone();
            let h = std::thread::Builder::new()
                .name(format!("kvs-completion-{i}"))
                .spawn(move || serve(rx))?;
            handles.push(h);
        }
        let ids = handles.iter().map(|h| h.thread().id()).collect();
        Ok(CompletionPool {
            queue: Mutex::new(Some(tx)),
            threads: Mutex::new(handles),
            ids,
        })
    }

    /// The thread count `CERBERUS_KVS_THREADS` asks for, or the default.
    pub fn threads_from_env(env: crate::credentials::Env) -> usize {
        env("CERBERUS_KVS_THREADS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_THREADS)
    }

    /// Queues `job`.
    pub fn submit(&self, job: Job) -> Result<(), Refused> {
        let queue = lock(&self.queue);
        let Some(tx) = queue.as_ref() else {
            return Err(Refused::Closed);
        };
        tx.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => Refused::Full,
            TrySendError::Disconnected(_) => Refused::Closed,
        })
    }

    /// Refuses new jobs, and waits until the threads ran every queued one. From one of the
    /// pool's own threads (a callback closing its device) it cannot wait for itself: the
    /// threads then end once they drained the queue.
    pub fn close(&self) {
        drop(lock(&self.queue).take());
        if self.ids.contains(&std::thread::current().id()) {
            return;
        }
        let threads: Vec<_> = lock(&self.threads).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for CompletionPool {
    fn drop(&mut self) {
        self.close();
    }
}

fn serve(rx: Arc<Mutex<Receiver<Job>>>) {
    loop {
        let next = lock(&rx).recv();
        let Ok(job) = next else { return };
        // A job catches its own panics to report them; this keeps the thread alive if one
        // escapes anyway.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn close_waits_for_every_queued_job() {
        let pool = CompletionPool::start(2).unwrap();
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
        assert_eq!(pool.submit(Box::new(|| {})), Err(Refused::Closed));
    }

    #[test]
    fn a_full_queue_refuses() {
        let pool = CompletionPool::start(1).unwrap();
        let (hold_tx, hold_rx) = std::sync::mpsc::sync_channel::<()>(0);
        pool.submit(Box::new(move || {
            let _ = hold_rx.recv();
        }))
        .unwrap();
        let mut refused = false;
        for _ in 0..QUEUE_DEPTH + 2 {
            if pool.submit(Box::new(|| {})) == Err(Refused::Full) {
                refused = true;
                break;
            }
        }
        assert!(refused);
        drop(hold_tx);
        pool.close();
    }

    #[test]
    fn a_panicking_job_does_not_kill_its_thread() {
        let pool = CompletionPool::start(1).unwrap();
        pool.submit(Box::new(|| panic!("boom"))).unwrap();
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
