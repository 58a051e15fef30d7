//! The foreground worker threads: engine calls run here, never on the network threads, since
//! they block on storage.

use crate::dispatch::Shared;
use crate::iterators::ConnIterators;
use crate::panics::{catch_command, panic_message};
use cerberus_proto::{Command, Response};
use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;

pub type Job = Box<dyn FnOnce() + Send>;

/// Runs a command on the engine and records it. A panic still answers the client, or it
/// would wait for this command forever.
pub(crate) fn answer(
    shared: &Shared,
    cmd: Command,
    iters: &ConnIterators,
    arrived: quanta::Instant,
) -> Response {
    let (cid, nsid) = (cmd.cid, cmd.nsid);
    let opcode = cmd.request.opcode() as u8;
    let resp = match catch_command(nsid, opcode, || shared.execute(cmd, iters)) {
        Ok(resp) => resp,
        Err((status, msg)) => Response::error(cid, nsid, opcode, status, msg),
    };
    let ok = resp.status.is_success();
    shared.record(nsid, opcode, ok, arrived.elapsed());
    resp
}

/// A query answered on the network thread if it needs at most the device's inline work
/// (`Shared::answer_small_query`), recorded as `answer` records a command; `None`: it goes
/// to a worker. And whether it was tried here (answered or not: the time is spent either
/// way, and counts in its connection's turn).
pub(crate) fn answer_small_query(
    shared: &Shared,
    cmd: &Command,
    arrived: quanta::Instant,
) -> (Option<Response>, bool) {
    let (cid, nsid) = (cmd.cid, cmd.nsid);
    let opcode = cmd.request.opcode() as u8;
    let mut tried = false;
    let resp = match catch_command(nsid, opcode, || shared.answer_small_query(cmd, &mut tried)) {
        Ok(Some(resp)) => resp,
        Ok(None) => return (None, tried),
        Err((status, msg)) => Response::error(cid, nsid, opcode, status, msg),
    };
    shared.record(nsid, opcode, resp.status.is_success(), arrived.elapsed());
    (Some(resp), true)
}

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
                            // Jobs answer their own panics (see `connection`); this catch only
                            // keeps the thread, and so the pool, alive if one slips through.
                            if let Err(payload) = catch_unwind(AssertUnwindSafe(job)) {
                                tracing::error!(
                                    panic = panic_message(payload.as_ref()),
                                    "a worker job panicked"
                                );
                            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_panicking_job_leaves_the_pool_at_full_strength() {
        let workers = Workers::start(2).unwrap();
        // More panics than threads: without the catch, no thread would be left.
        for _ in 0..4 {
            assert!(workers.submit(Box::new(|| panic!("job failed"))));
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        // Two jobs that only finish together: both threads must still be running.
        for _ in 0..2 {
            let (tx, barrier) = (tx.clone(), barrier.clone());
            assert!(workers.submit(Box::new(move || {
                barrier.wait();
                let _ = tx.send(());
            })));
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("both workers alive");
        }
        workers.stop();
    }
}
