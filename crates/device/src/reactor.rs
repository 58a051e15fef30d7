//! The network threads: one single-threaded event loop per thread, each serving the
//! connections handed to it for their whole life. A connection's reader and writer run on the
//! same thread, and no loop wakes another to share its work (a work-stealing runtime does, and
//! on a small machine the wake-ups cost more than the commands).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

struct Reactor {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

pub struct Reactors {
    reactors: Vec<Reactor>,
    next: AtomicUsize,
}

impl Reactors {
    pub fn start(n: usize) -> std::io::Result<Reactors> {
        let mut reactors = Vec::with_capacity(n.max(1));
        for i in 0..n.max(1) {
            let rt = Builder::new_current_thread().enable_all().build()?;
            let handle = rt.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("cerberus-net-{i}"))
                .spawn(move || {
                    // Runs the connections' tasks until told to stop.
                    let _ = rt.block_on(stopped);
                    rt.shutdown_timeout(std::time::Duration::from_secs(1));
                })?;
            reactors.push(Reactor {
                handle,
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        Ok(Reactors {
            reactors,
            next: AtomicUsize::new(0),
        })
    }

    /// The loop the next connection goes to, in turn.
    pub fn next(&self) -> &Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.reactors.len();
        &self.reactors[i].handle
    }

    /// Stops the loops (their remaining tasks are dropped) and waits for their threads.
    pub fn stop(&mut self) {
        for r in &mut self.reactors {
            if let Some(s) = r.stop.take() {
                let _ = s.send(());
            }
        }
        for r in &mut self.reactors {
            if let Some(t) = r.thread.take() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Reactors {
    fn drop(&mut self) {
        self.stop();
    }
}
