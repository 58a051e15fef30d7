//! The network threads: one single-threaded event loop per thread, each serving the
//! connections handed to it for their whole life. A connection's reader and writer run on the
//! same thread, and no loop wakes another to share its work (a work-stealing runtime does, and
//! on a small machine the wake-ups cost more than the commands).

use crate::dispatch::Shared;
use crate::put_batch::HeldPuts;
use crate::workers::Workers;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

struct Reactor {
    handle: Handle,
    /// The puts its connections hold back (see `put_batch`).
    puts: Arc<HeldPuts>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

pub struct Reactors {
    reactors: Vec<Reactor>,
    shared: Arc<Shared>,
}

impl Reactors {
    /// Starts `network_threads` loops, each with the task that stores its held puts (on
    /// `workers` when the engine would hold them up).
    pub fn start(shared: &Arc<Shared>, workers: &Arc<Workers>) -> std::io::Result<Reactors> {
        let n = shared.config.network_threads;
        let mut reactors = Vec::with_capacity(n.max(1));
        let spin = std::time::Duration::from_micros(shared.config.network_spin_us);
        let cpu = crate::spin::SpareCpu::new();
        for i in 0..n.max(1) {
            let rt = Builder::new_current_thread().enable_all().build()?;
            let handle = rt.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let pin = shared.config.scheduler.pin_cores;
            let nice = shared.config.scheduler.network_nice;
            let thread = std::thread::Builder::new()
                .name(format!("cerberus-net-{i}"))
                .spawn(move || {
                    // This thread is core i of the scheduler.
                    crate::scheduler::enter_core(i);
                    if pin && !crate::scheduler::pin_to(i) {
                        tracing::warn!(core = i, "could not pin the core to a CPU");
                    }
                    if nice != 0 && !crate::scheduler::set_thread_nice(nice) {
                        tracing::warn!(core = i, nice, "could not set the core's nice value");
                    }
                    // Runs the connections' tasks until told to stop.
                    let _ = rt.block_on(stopped);
                    rt.shutdown_timeout(std::time::Duration::from_secs(1));
                })?;
            let puts = Arc::new(HeldPuts::new(workers.clone()));
            handle.spawn(puts.clone().run(shared.clone()));
            // The core's background tasks, between its connections' commands.
            let bg = shared.clone();
            handle.spawn(async move {
                let s = bg.clone();
                bg.scheduler.run_core(i, |w| s.run_work(w)).await
            });
            if !spin.is_zero() {
                handle.spawn(crate::spin::poll(spin, cpu.clone()));
            }
            reactors.push(Reactor {
                handle,
                puts,
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        Ok(Reactors {
            reactors,
            shared: shared.clone(),
        })
    }

    /// The loop the next connection goes to (the core with the fewest connections), its
    /// held puts, and the core's number, to give back with `Scheduler::leave` at the end.
    pub fn next(&self) -> (&Handle, Arc<HeldPuts>, usize) {
        let i = self.shared.scheduler.place_connection() % self.reactors.len();
        let r = &self.reactors[i];
        (&r.handle, r.puts.clone(), i)
    }

    /// Stops the loops (their remaining tasks are dropped) and waits for their threads.
    /// Puts still held (of connections cut off at the stop) are stored first.
    pub fn stop(&mut self) {
        for r in &self.reactors {
            r.puts.store(&self.shared);
            // What is stored off the loop ends before the workers stop (they would refuse
            // what waits behind it).
            if !r.puts.drain(std::time::Duration::from_secs(30)) {
                tracing::warn!("held puts still being stored off the loop after 30 s");
            }
        }
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
