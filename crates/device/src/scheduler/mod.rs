//! The device's scheduler (BTS, "Background Task-aware Scheduling for Key-Value CSDs").
//!
//! The cores are the network threads: each runs one event loop that serves the connections
//! placed on it (the one with the fewest connections gets the next) and, between their
//! commands, the background tasks in its own run queue, one at a time and each to its end,
//! as an SPDK reactor runs its events. A background task made by a command (the dedup task
//! of a put) is placed by the policy:
//!
//! - `inline`: on the core that ran the command (SPDK's behaviour, the paper's Case 2): its
//!   connections wait while the task runs;
//! - `bts`: the monitor samples every core's load every `sample_every` commands; a task goes
//!   to the least-loaded idle core (one serving no connection; an active core, in SPDK's
//!   words, serves at least one), unless the mean load of the active cores is at or above
//!   `load_threshold`, or no core is idle: then it stays where it was made (the paper's
//!   threshold, past which moving tasks costs more than it saves). A core whose connections
//!   are quiet for a moment is not idle: moving work onto it, measured, made the busiest
//!   grids 1.2x slower than `inline`. A core that serves no
//!   connection runs its tasks at the idle scheduling class (SCHED_IDLE): where the cores
//!   outnumber the CPUs, as on a small machine shared with the clients, an idle core is not
//!   an idle CPU, and its background work must only take what the foreground leaves;
//! - `off`: no background service runs (the paper's Case 1).
//!
//! A core's load is the share of wall time its thread spent running commands and tasks
//! (socket reads and writes and polling are not counted).

mod lane_pool;
mod lanes;
pub(crate) mod stats;

use crate::dedup::DedupWork;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use tokio::sync::Notify;

/// Where background tasks and engine jobs run (see the module's description).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// No background service runs (the engine's own jobs still run, as under `Inline`).
    Off,
    /// On the core whose command made the work.
    Inline,
    /// On the least-loaded idle core while the active cores' mean load is below
    /// `load_threshold`; else as `Inline` (the default).
    #[default]
    Bts,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        match s {
            "off" => Ok(Policy::Off),
            "inline" => Ok(Policy::Inline),
            "bts" => Ok(Policy::Bts),
            _ => Err(format!("unknown policy {s:?} (off, inline or bts)")),
        }
    }
}

/// `[scheduler]` in the device's TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Where background work runs (default `bts`).
    pub policy: Policy,
    /// Commands between two samples of the cores' load (the paper's 60).
    pub sample_every: u32,
    /// Mean load (0-1, background included) of the cores serving commands at and above
    /// which background tasks stay on the core that made them.
    pub load_threshold: f64,
    /// Pin core i to the i-th CPU this process may run on (modulo their number).
    pub pin_cores: bool,
    /// The nice value of the cores (network threads), -20 to 19; 0 leaves them at the
    /// process's. Below 0 they win a CPU from the engine's lanes and whatever else runs on
    /// the machine, as a device's serving cores are its own: a get then waits for the
    /// commands ahead of it, not for a CPU. Needs `CAP_SYS_NICE` (root); where refused, the
    /// cores keep the process's value and a warning is logged.
    pub network_nice: i32,
    /// The nice value of the lanes (flushes, compactions, GC, index backfills), -20 to 19;
    /// 0 leaves them at the process's. Above the cores' value, a lane gives way to a core
    /// (and to the clients on the same machine) whenever both want a CPU, so background
    /// work runs on what serving leaves, as the BTS scheduler intends when cores and lanes
    /// share CPUs. Raising it needs no privilege. 0 by default: at 10, pipelined gets right
    /// after a load of 1 M keys ran 15-20 % faster (the GC and compactions that follow it
    /// took a third of the CPU at 0; docs/benchmarks.md), but a lane holds the engine's
    /// writer lock through a GC rewrite's lookups or an index backfill's chunk, and the
    /// network threads' writes wait for it at a tenth of a CPU; and a GC that falls behind
    /// stalls no write (nothing but the space reserve bounds its debt).
    pub background_nice: i32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: Policy::Bts,
            sample_every: 60,
            load_threshold: 0.8,
            pin_cores: false,
            network_nice: 0,
            background_nice: 0,
        }
    }
}

/// Most urgent first: dropping a destroyed namespace's index, then a rebuild's scans, then
/// the tasks of new writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    High,
    Normal,
    Low,
}

/// A background task.
#[derive(Debug)]
pub enum Work {
    Dedup(DedupWork),
    /// Holds its core for the time given (tests: a long task, to show whom it delays).
    #[cfg(feature = "fault-injection")]
    Hold(std::time::Duration),
}

struct Queued {
    priority: Priority,
    seq: u64,
    work: Work,
    queued_at: quanta::Instant,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.priority, self.seq) == (o.priority, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    /// The heap pops the greatest: the most urgent priority, then the oldest.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.priority, o.seq).cmp(&(self.priority, self.seq))
    }
}

/// What one core counts; written by its own thread (own cache line), read by the monitor.
#[derive(Default)]
#[repr(align(128))]
struct Counters {
    fg_commands: AtomicU64,
    fg_busy_ns: AtomicU64,
    bg_tasks: AtomicU64,
    bg_busy_ns: AtomicU64,
    bg_wait_ns: AtomicU64,
    /// Background time on this core while it served connections: time their commands could
    /// not be served.
    bg_in_the_way_ns: AtomicU64,
    /// Tasks made here and sent to another core, and tasks received from another.
    migrated_out: AtomicU64,
    migrated_in: AtomicU64,
    connections: AtomicUsize,
    /// Load at the last sample (f64 bits): foreground, and foreground plus background.
    fg_load: AtomicU64,
    load: AtomicU64,
    /// Ran a command since the sample before (an active core, in SPDK's words).
    active: AtomicBool,
}

struct Core {
    queue: Mutex<BinaryHeap<Queued>>,
    wake: Notify,
    c: Counters,
}

struct Sample {
    at_ns: u64,
    fg: Vec<u64>,
    bg: Vec<u64>,
    commands: Vec<u64>,
}

pub struct Scheduler {
    config: SchedulerConfig,
    cores: Vec<Core>,
    lanes: lane_pool::Lanes,
    start: quanta::Instant,
    seq: AtomicU64,
    last: Mutex<Sample>,
    samples: AtomicU64,
}

/// What a thread knows of the scheduler.
struct Local {
    /// The core this thread is, if it is one (or runs a command on one's behalf).
    core: Cell<Option<usize>>,
    /// Nesting of `busy` regions: only the outermost is counted.
    depth: Cell<u32>,
    /// Commands this thread ran (which of them is timed).
    tick: Cell<u32>,
    /// The connection that took frames last on this thread, and how many times in a row.
    last_reader: Cell<u64>,
    reads_in_a_row: Cell<u32>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            core: Cell::new(None),
            depth: Cell::new(0),
            tick: Cell::new(0),
            last_reader: Cell::new(u64::MAX),
            reads_in_a_row: Cell::new(0),
        }
    };
}

/// One command in this many is timed for the cores' loads.
#[cfg(not(test))]
const TIME_EVERY: u32 = 4;
#[cfg(test)]
const TIME_EVERY: u32 = 1;

/// Marks this thread as core `i` for its life.
pub fn enter_core(i: usize) {
    LOCAL.with(|l| l.core.set(Some(i)));
}

pub fn current_core() -> Option<usize> {
    LOCAL.with(|l| l.core.get())
}

/// Runs `f` as work of core `core` (a worker thread running a command read on that core).
pub fn on_behalf_of<T>(core: Option<usize>, f: impl FnOnce() -> T) -> T {
    let before = LOCAL.with(|l| l.core.replace(core));
    let out = f();
    LOCAL.with(|l| l.core.set(before));
    out
}

/// Beyond this, a sample is too short to say anything.
const MIN_SAMPLE_NS: u64 = 1_000_000;

impl Scheduler {
    /// `cores` cores; at most `engine_jobs` engine jobs at once on their lanes.
    pub fn new(cores: usize, config: SchedulerConfig, engine_jobs: usize) -> Scheduler {
        let n = cores.max(1);
        Scheduler {
            config,
            lanes: lane_pool::Lanes::new(n, engine_jobs),
            cores: (0..n)
                .map(|_| Core {
                    queue: Mutex::new(BinaryHeap::new()),
                    wake: Notify::new(),
                    c: Counters::default(),
                })
                .collect(),
            start: quanta::Instant::now(),
            seq: AtomicU64::new(0),
            last: Mutex::new(Sample {
                at_ns: 0,
                fg: vec![0; n],
                bg: vec![0; n],
                commands: vec![0; n],
            }),
            samples: AtomicU64::new(0),
        }
    }

    /// The core for a new connection: the one with the fewest (the lowest first), so that
    /// with few clients some cores serve none. [`Scheduler::leave`] counts it off.
    pub fn place_connection(&self) -> usize {
        let i = (0..self.cores.len())
            .min_by_key(|&i| self.cores[i].c.connections.load(Relaxed))
            .unwrap_or(0);
        self.cores[i].c.connections.fetch_add(1, Relaxed);
        i
    }

    /// Records that connection `conn` took frames on the calling network thread; whether it
    /// is alone there in effect: the thread's only connection, or the only one that took
    /// frames since its own last frames (the others idle, as a client's pool of connections
    /// mostly is). No neighbour's puts could then share a log append with its own: with
    /// two busy connections their reads take turns, and neither is alone.
    pub fn reads_alone(&self, conn: u64) -> bool {
        let in_a_row = LOCAL.with(|l| {
            let n = match l.last_reader.replace(conn) == conn {
                true => l.reads_in_a_row.get().saturating_add(1),
                false => 1,
            };
            l.reads_in_a_row.set(n);
            n
        });
        in_a_row >= 2
            || current_core()
                .and_then(|i| self.cores.get(i))
                .is_some_and(|c| c.c.connections.load(Relaxed) == 1)
    }

    pub fn leave(&self, core: usize) {
        if let Some(c) = self.cores.get(core) {
            c.c.connections.fetch_sub(1, Relaxed);
        }
    }

    /// Runs `f`, a foreground command or a piece of one, and counts its time as the busy time
    /// of this thread's core (nested calls count once). Commands are timed one in
    /// `TIME_EVERY`, that one counting for all: two clock reads per command were a visible
    /// share of a pipelined get. Only the core's own thread calls this, so its counters are
    /// bumped without locked instructions.
    pub fn busy<T>(&self, command: bool, f: impl FnOnce() -> T) -> T {
        let (core, depth, tick) = LOCAL.with(|l| {
            let depth = l.depth.get();
            l.depth.set(depth + 1);
            let tick = l.tick.get().wrapping_add(u32::from(command));
            l.tick.set(tick);
            (l.core.get(), depth, tick)
        });
        let timed = depth == 0 && (!command || tick.is_multiple_of(TIME_EVERY));
        let t = timed.then(quanta::Instant::now);
        let out = f();
        LOCAL.with(|l| l.depth.set(depth));
        let Some(c) = core.and_then(|i| self.cores.get(i)).map(|c| &c.c) else {
            return out;
        };
        if let Some(t) = t {
            let scale = if command { u64::from(TIME_EVERY) } else { 1 };
            let ns = t.elapsed().as_nanos() as u64 * scale;
            c.fg_busy_ns
                .store(c.fg_busy_ns.load(Relaxed).wrapping_add(ns), Relaxed);
        }
        if command {
            let n = c.fg_commands.load(Relaxed) + 1;
            c.fg_commands.store(n, Relaxed);
            if n.is_multiple_of(u64::from(self.config.sample_every.max(1))) {
                self.sample();
            }
        }
        out
    }

    /// Queues `work`; false if the policy runs no background work.
    pub fn submit(&self, work: Work, priority: Priority) -> bool {
        let origin = current_core().filter(|&c| c < self.cores.len());
        let target = match self.config.policy {
            Policy::Off => return false,
            Policy::Inline => origin.unwrap_or(0),
            Policy::Bts => self.bts_target(origin),
        };
        if let Some(o) = origin.filter(|&o| o != target) {
            self.cores[o].c.migrated_out.fetch_add(1, Relaxed);
            self.cores[target].c.migrated_in.fetch_add(1, Relaxed);
        }
        let core = &self.cores[target];
        core.queue.lock().push(Queued {
            priority,
            seq: self.seq.fetch_add(1, Relaxed),
            work,
            queued_at: quanta::Instant::now(),
        });
        core.wake.notify_one();
        true
    }

    /// Queues `work` on core `core`, whatever the policy (tests).
    #[cfg(feature = "fault-injection")]
    pub fn submit_to(&self, core: usize, work: Work) {
        let core = &self.cores[core.min(self.cores.len() - 1)];
        core.queue.lock().push(Queued {
            priority: Priority::High,
            seq: self.seq.fetch_add(1, Relaxed),
            work,
            queued_at: quanta::Instant::now(),
        });
        core.wake.notify_one();
    }

    pub(crate) fn bts_target(&self, origin: Option<usize>) -> usize {
        let now = self.now_ns();
        if now.saturating_sub(self.last.lock().at_ns) > 5 * MIN_SAMPLE_NS {
            // No commands lately: the loads are stale.
            self.sample();
        }
        let get = |a: &AtomicU64| f64::from_bits(a.load(Relaxed));
        let conns = |i: usize| self.cores[i].c.connections.load(Relaxed);
        let n = self.cores.len();
        // Mean load of the active cores, without an allocation per task.
        let (sum, active) = (0..n)
            .filter(|&i| conns(i) > 0)
            .fold((0.0, 0usize), |(s, k), i| {
                (s + get(&self.cores[i].c.load), k + 1)
            });
        let mean_active = sum / active.max(1) as f64;
        // The idle core with the least load (background work it already has).
        let idle = (0..n)
            .filter(|&i| conns(i) == 0)
            .min_by(|&a, &b| get(&self.cores[a].c.load).total_cmp(&get(&self.cores[b].c.load)));
        match (origin, idle) {
            (Some(o), _) if mean_active >= self.config.load_threshold => o,
            (Some(o), Some(i)) if conns(o) > 0 => i,
            (Some(o), _) => o,
            (None, Some(i)) => i,
            (None, None) => 0,
        }
    }

    /// Sets each core's load as a sample would (tests): placement is checked against loads
    /// given, not measured, so a loaded test machine cannot change the answer. The sample is
    /// dated far ahead, so that no later call finds it stale and measures again.
    #[cfg(test)]
    fn set_loads(&self, loads: &[f64]) {
        for (core, &l) in self.cores.iter().zip(loads) {
            core.c.fg_load.store(l.to_bits(), Relaxed);
            core.c.load.store(l.to_bits(), Relaxed);
        }
        self.last.lock().at_ns = u64::MAX / 2;
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// The monitor: every core's load since the last sample. Skipped while another runs it,
    /// or if the last one is too recent to measure anything.
    pub fn sample(&self) {
        let Some(mut last) = self.last.try_lock() else {
            return;
        };
        let now = self.now_ns();
        let dt = now.saturating_sub(last.at_ns);
        if dt < MIN_SAMPLE_NS {
            return;
        }
        for (i, core) in self.cores.iter().enumerate() {
            let fg = core.c.fg_busy_ns.load(Relaxed);
            let bg = core.c.bg_busy_ns.load(Relaxed);
            let f = fg.saturating_sub(last.fg[i]) as f64 / dt as f64;
            let b = bg.saturating_sub(last.bg[i]) as f64 / dt as f64;
            core.c.fg_load.store(f.min(1.0).to_bits(), Relaxed);
            core.c.load.store((f + b).min(1.0).to_bits(), Relaxed);
            let cmds = core.c.fg_commands.load(Relaxed);
            core.c.active.store(cmds > last.commands[i], Relaxed);
            (last.fg[i], last.bg[i], last.commands[i]) = (fg, bg, cmds);
        }
        last.at_ns = now;
        self.samples.fetch_add(1, Relaxed);
    }

    /// The most urgent task of core `i`, with the time it waited.
    fn pop(&self, i: usize) -> Option<(Work, u64)> {
        let q = self.cores[i].queue.lock().pop()?;
        Some((q.work, q.queued_at.elapsed().as_nanos() as u64))
    }

    /// Takes every queued task (at a stop, to be saved).
    pub fn take_all(&self) -> Vec<Work> {
        let mut out = Vec::new();
        for core in &self.cores {
            let mut q = std::mem::take(&mut *core.queue.lock()).into_vec();
            q.sort_by(|a, b| b.cmp(a));
            out.extend(q.into_iter().map(|q| q.work));
        }
        out
    }

    /// Runs core `i`'s background tasks on its event loop for ever, one at a time, letting the
    /// loop serve its connections between two tasks.
    pub async fn run_core(&self, i: usize, mut run: impl FnMut(Work)) {
        let Some(core) = self.cores.get(i) else {
            return;
        };
        loop {
            let Some((work, waited)) = self.pop(i) else {
                core.wake.notified().await;
                continue;
            };
            let t = quanta::Instant::now();
            // Background work of a core without connections takes only CPU time nobody else
            // wants (see the module's notes).
            let serving = core.c.connections.load(Relaxed) > 0;
            let demote = self.config.policy == Policy::Bts && !serving;
            if demote {
                set_idle_class(true);
            }
            run(work);
            if demote {
                set_idle_class(false);
            }
            let ns = t.elapsed().as_nanos() as u64;
            core.c.bg_busy_ns.fetch_add(ns, Relaxed);
            if serving {
                core.c.bg_in_the_way_ns.fetch_add(ns, Relaxed);
            }
            core.c.bg_wait_ns.fetch_add(waited, Relaxed);
            core.c.bg_tasks.fetch_add(1, Relaxed);
            tokio::task::yield_now().await;
        }
    }
}

/// Moves this thread to the idle scheduling class, or back to the normal one.
fn set_idle_class(idle: bool) {
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    // SAFETY: a plain struct for the call; 0 names this thread.
    let r = unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, policy, &p)
    };
    if r != 0 {
        tracing::debug!("scheduling class not changed");
    }
}

/// Sets this thread's nice value (`nice`, clamped to -20..=19); false where refused.
pub fn set_thread_nice(nice: i32) -> bool {
    // SAFETY: plain system calls on this thread's id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice.clamp(-20, 19)) == 0
    }
}

/// Pins this thread to the `i`-th CPU it may run on (modulo their number); false where the
/// machine does not allow it.
pub fn pin_to(i: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; the calls get its size and a pointer to it.
    unsafe {
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return false;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &allowed))
            .collect();
        if cpus.is_empty() {
            return false;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[i % cpus.len()], &mut one);
        libc::sched_setaffinity(0, size, &one) == 0
    }
}

#[cfg(test)]
mod tests;
