//! The foreground worker threads: engine calls run here, never on the network threads, since
//! they block on storage.

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::thread::JoinHandle;

pub type Job = Box<dyn FnOnce() + Send>;

pub struct Workers {
    tx: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    pub fn start(n: usize) -> std::io::Result<Workers> {
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let mut threads = Vec::with_capacity(n);
        for i in 0..n.max(1) {
            let rx: Receiver<Job> = rx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("cerberus-worker-{i}"))
                    .spawn(move || {
                        while let Ok(job) = rx.recv() {
                            job();
                        }
                    })?,
            );
        }
        Ok(Workers {
            tx: Mutex::new(Some(tx)),
            threads: Mutex::new(threads),
        })
    }

    /// Queues a job; false once the pool is stopped.
    pub fn submit(&self, job: Job) -> bool {
        match &*self.tx.lock() {
            Some(tx) => tx.send(job).is_ok(),
            None => false,
        }
    }

    /// Runs what is queued, then stops the threads.
    pub fn stop(&self) {
        self.tx.lock().take();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}
