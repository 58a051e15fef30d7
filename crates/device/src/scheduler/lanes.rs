//! The engine's background jobs (flushes, L0 splits, compactions, value-log GC, index
//! backfills) on the cores.
//!
//! A foreground write may wait for a flush or a compaction (its memtable full, L0 at its stop
//! trigger): were the job queued behind that write on the same event loop, neither would ever
//! run. So each core has a lane beside its event loop, a thread of its own (pinned with the
//! core), and the engine's jobs run there, placed by the policy as the services' tasks are:
//! `inline` (and `off`, which turns off services, not the engine's own upkeep) on the lane
//! of the core whose command made the work due, `bts` on an idle core's lane below the
//! threshold. The engine picks which job comes first (a flush, then L0, then the trees, then
//! a backfill or GC, never both at once); at most `background_threads` run at once, as with
//! the engine's own threads.

use super::lane_pool::RunJob;
use super::{current_core, Policy, Scheduler};
use cerberus_engine::{BackgroundStep, JobKind};
use crossbeam_channel::Receiver;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::Duration;

impl Scheduler {
    /// What the engine calls when background work may be due: a run is queued on the lane
    /// the policy picks, unless `background_threads` runs are queued or running already.
    pub fn engine_runner(self: &Arc<Self>) -> cerberus_engine::BackgroundRunner {
        let weak: Weak<Scheduler> = Arc::downgrade(self);
        cerberus_engine::BackgroundRunner(Arc::new(move || {
            if let Some(s) = weak.upgrade() {
                s.wake_lanes();
            }
        }))
    }

    fn wake_lanes(&self) {
        if self.take_lane_slot() {
            self.queue_lane_run();
            return;
        }
        // Every run is taken: the first to end looks again. Then one more try, in case it
        // ended between the two lines.
        self.lanes.dirty.store(true, Relaxed);
        if self.take_lane_slot() {
            self.queue_lane_run();
        }
    }

    fn take_lane_slot(&self) -> bool {
        let lanes = &self.lanes;
        let mut n = lanes.outstanding.load(Relaxed);
        loop {
            if n >= lanes.limit {
                return false;
            }
            match lanes
                .outstanding
                .compare_exchange_weak(n, n + 1, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(x) => n = x,
            }
        }
    }

    fn queue_lane_run(&self) {
        let origin = current_core().filter(|&c| c < self.cores.len());
        let target = match self.config.policy {
            Policy::Bts => self.bts_target(origin),
            Policy::Inline | Policy::Off => origin.unwrap_or(0),
        };
        // The target's lane if free, else the next free one (there is one: runs are at
        // most as many as lanes).
        let n = self.lanes.busy.len();
        let lane = (0..n).map(|k| (target + k) % n).find(|&l| {
            self.lanes.busy[l]
                .compare_exchange(false, true, Relaxed, Relaxed)
                .is_ok()
        });
        let Some(lane) = lane else {
            self.lanes.outstanding.fetch_sub(1, Relaxed);
            return;
        };
        let core = lane % self.cores.len();
        if let Some(o) = origin.filter(|&o| o != core) {
            self.cores[o].c.migrated_out.fetch_add(1, Relaxed);
            self.cores[core].c.migrated_in.fetch_add(1, Relaxed);
        }
        let sent = self
            .lanes
            .senders
            .lock()
            .get(lane)
            .map(|tx| tx.send(()).is_ok());
        if sent != Some(true) {
            // Lanes not started yet (the engine opening) or stopped: the next wake retries.
            self.lanes.busy[lane].store(false, Relaxed);
            self.lanes.outstanding.fetch_sub(1, Relaxed);
        }
    }

    /// Starts the lanes (one per core, pinned with it), each running engine jobs with `run`.
    pub fn start_lanes(self: &Arc<Self>, run: RunJob) -> std::io::Result<()> {
        let mut senders = Vec::new();
        let mut threads = Vec::new();
        for i in 0..self.lanes.busy.len() {
            let (tx, rx) = crossbeam_channel::unbounded::<()>();
            let sched = self.clone();
            let run = run.clone();
            let (pin, nice) = (self.config.pin_cores, self.config.background_nice);
            let cores = self.cores.len();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("cerberus-lane-{i}"))
                    .spawn(move || {
                        if pin && !super::pin_to(i % cores) {
                            tracing::warn!(lane = i, "could not pin the lane to a CPU");
                        }
                        if nice != 0 && !super::set_thread_nice(nice) {
                            tracing::warn!(lane = i, nice, "could not set the lane's nice value");
                        }
                        sched.lane_loop(i, rx, run)
                    })?,
            );
            senders.push(tx);
        }
        *self.lanes.senders.lock() = senders;
        *self.lanes.threads.lock() = threads;
        // Work the engine found while the lanes were not there.
        self.wake_lanes();
        Ok(())
    }

    fn lane_loop(&self, i: usize, rx: Receiver<()>, run: RunJob) {
        let lanes = &self.lanes;
        loop {
            // Lane 0 also looks now and then, for work no write announces (the tree to
            // settle once writes stop, a retry after a full disk).
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(()) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    if i == 0 {
                        self.wake_lanes();
                    }
                    continue;
                }
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            }
            let c = &lanes.counters[i];
            let t = quanta::Instant::now();
            let step = run();
            c.busy_ns.fetch_add(t.elapsed().as_nanos() as u64, Relaxed);
            lanes.busy[i].store(false, Relaxed);
            match step {
                BackgroundStep::Ran(kind) => {
                    let n = match kind {
                        JobKind::Flush => &c.flushes,
                        JobKind::Compaction => &c.compactions,
                        JobKind::Gc => &c.gcs,
                        JobKind::Backfill => &c.backfills,
                    };
                    n.fetch_add(1, Relaxed);
                    // There may be more: placed again, by the loads of now.
                    self.queue_lane_run();
                }
                BackgroundStep::Idle(_) | BackgroundStep::Stopped => {
                    lanes.outstanding.fetch_sub(1, Relaxed);
                    // A wake that found every run taken left this flag for us.
                    if step != BackgroundStep::Stopped && lanes.dirty.swap(false, Relaxed) {
                        self.wake_lanes();
                    }
                }
            }
        }
    }

    /// Stops the lanes once the engine is closed (a flush at the stop needs them).
    pub fn stop_lanes(&self) {
        self.lanes.senders.lock().clear();
        for t in self.lanes.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}
