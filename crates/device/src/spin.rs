//! Polling instead of sleeping, while the machine has a CPU to spare.
//!
//! A network thread that sleeps in `epoll_wait` has to be woken when its client's next
//! command arrives, and on a virtual machine that wake-up (an interrupt to another virtual
//! CPU) costs ~100 us, more than the command. So for a short window after each command (and
//! after each write of replies: a lone client's next command comes a round trip after its
//! reply) a network thread keeps polling its sockets (a task that yields, so the loop checks for
//! readiness without blocking), and a command arriving meanwhile is read at once. Polling
//! takes a CPU, so it happens only while nobody else wants one: while threads ready to run
//! waited for a CPU less than 30 % of the time, as the kernel's pressure accounting
//! (`/proc/pressure/cpu`) counts it every 5 ms, and never by more threads of the process than
//! one fewer than the machine's CPUs. (A client and a server handing commands to each other
//! on two idle CPUs already show ~10 %: the woken thread waits a moment for the waker's CPU;
//! 16 busy clients on two CPUs show 60-100 %.) With many busy clients on few cores nobody
//! polls, and the clients keep their CPU. (The count of runnable threads does not tell:
//! clients waiting for their replies are not runnable, yet they need a CPU the moment a reply
//! comes.)

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;

/// How often the pressure is read again.
const CHECK_EVERY: Duration = Duration::from_millis(5);
/// Threads waited for a CPU at most this share of the time: a CPU is spare.
const SPARE_BELOW: f64 = 0.30;
/// After a check finds threads waiting, nobody polls for this long: pollers of several
/// devices (or any bursty neighbour) must not take turns flooding the CPUs every few ms.
const QUIET_FOR: Duration = Duration::from_millis(250);

/// The poller of one network thread.
#[derive(Default)]
struct Local {
    /// Commands seen on this thread.
    activity: AtomicU64,
    sleeping: AtomicBool,
    wake: Notify,
}

thread_local! {
    static LOCAL: Arc<Local> = Arc::default();
}

/// Called for every command a network thread reads and every write of its replies: polling
/// goes on for another window.
pub fn touch() {
    LOCAL.with(|l| {
        l.activity.fetch_add(1, Relaxed);
        if l.sleeping.load(Relaxed) {
            l.wake.notify_one();
        }
    });
}

/// Whether a CPU is spare: threads ready to run hardly waited for one since the last check,
/// 5 ms ago.
pub struct SpareCpu {
    start: quanta::Instant,
    /// Nanoseconds after `start` of the last check, and its answer.
    checked_at: AtomicU64,
    /// Nanoseconds after `start` until which nobody polls.
    quiet_until: AtomicU64,
    spare: AtomicBool,
    /// Microseconds some thread waited for a CPU, in total, at the last check.
    stalled_us: AtomicU64,
    /// An answer fixed for tests.
    fixed: Option<bool>,
}

impl SpareCpu {
    pub fn new() -> Arc<SpareCpu> {
        Arc::new(SpareCpu {
            start: quanta::Instant::now(),
            checked_at: AtomicU64::new(0),
            quiet_until: AtomicU64::new(0),
            spare: AtomicBool::new(false),
            stalled_us: AtomicU64::new(read_stalled_us().unwrap_or(0)),
            fixed: None,
        })
    }

    #[cfg(test)]
    fn fixed(spare: bool) -> Arc<SpareCpu> {
        Arc::new(SpareCpu {
            start: quanta::Instant::now(),
            checked_at: AtomicU64::new(0),
            quiet_until: AtomicU64::new(0),
            spare: AtomicBool::new(spare),
            stalled_us: AtomicU64::new(0),
            fixed: Some(spare),
        })
    }

    fn refresh(&self, now: u64) {
        if now < self.quiet_until.load(Relaxed) {
            // The next check measures the whole quiet spell.
            self.spare.store(false, Relaxed);
            return;
        }
        let since = now.saturating_sub(self.checked_at.swap(now, Relaxed));
        // Where the pressure cannot be read, nobody polls.
        let spare = match read_stalled_us() {
            Some(total) => {
                let stalled = total.saturating_sub(self.stalled_us.swap(total, Relaxed));
                (stalled as f64) < SPARE_BELOW * (since as f64 / 1e3)
            }
            None => false,
        };
        if !spare {
            self.quiet_until
                .store(now + QUIET_FOR.as_nanos() as u64, Relaxed);
        }
        self.spare.store(spare, Relaxed);
    }

    pub fn spare(&self) -> bool {
        if let Some(s) = self.fixed {
            return s;
        }
        let now = self.start.elapsed().as_nanos() as u64;
        if now.saturating_sub(self.checked_at.load(Relaxed)) >= CHECK_EVERY.as_nanos() as u64 {
            self.refresh(now);
        }
        self.spare.load(Relaxed)
    }
}

fn read_stalled_us() -> Option<u64> {
    stalled_us_of(&std::fs::read_to_string("/proc/pressure/cpu").ok()?)
}

/// The `some ... total=US` of `/proc/pressure/cpu`: microseconds during which at least one
/// thread waited for a CPU.
fn stalled_us_of(pressure: &str) -> Option<u64> {
    let some = pressure.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Threads of this process polling now, of every device in it.
static POLLERS: AtomicUsize = AtomicUsize::new(0);

/// At most one CPU fewer than the machine has polls, whatever the pressure says between
/// two checks: pollers never take every CPU, even for the few ms before a check.
fn max_pollers() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.saturating_sub(1).max(1)
    })
}

/// A poller's place among [`max_pollers`], given back when it sleeps or ends.
struct Place(bool);

impl Place {
    fn take(&mut self) -> bool {
        if !self.0 {
            self.0 = POLLERS.fetch_add(1, Relaxed) < max_pollers();
            if !self.0 {
                POLLERS.fetch_sub(1, Relaxed);
            }
        }
        self.0
    }

    fn give_back(&mut self) {
        if std::mem::take(&mut self.0) {
            POLLERS.fetch_sub(1, Relaxed);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Runs on a network thread for its life: polls while commands came within `window` and a
/// CPU is spare, else waits for the next command.
pub async fn poll(window: Duration, cpu: Arc<SpareCpu>) {
    let local = LOCAL.with(Arc::clone);
    let mut seen = local.activity.load(Relaxed);
    let mut active_at = quanta::Instant::now();
    let mut place = Place(false);
    loop {
        let now = quanta::Instant::now();
        let a = local.activity.load(Relaxed);
        if a != seen {
            (seen, active_at) = (a, now);
        }
        if now.duration_since(active_at) > window || !cpu.spare() || !place.take() {
            place.give_back();
            local.sleeping.store(true, Relaxed);
            if local.activity.load(Relaxed) == seen {
                local.wake.notified().await;
            }
            local.sleeping.store(false, Relaxed);
            seen = local.activity.load(Relaxed);
            active_at = quanta::Instant::now();
            continue;
        }
        // Back to the loop, which checks the sockets without blocking before running it again.
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_pressure() {
        let p = "some avg10=7.89 avg60=24.05 avg300=14.51 total=7648866597\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(stalled_us_of(p), Some(7648866597));
        assert_eq!(stalled_us_of("garbage"), None);
        assert_eq!(stalled_us_of("some total=x"), None);
        assert_eq!(stalled_us_of(""), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn polls_after_a_command_then_sleeps_until_the_next() {
        let cpu = SpareCpu::fixed(true);
        let task = tokio::spawn(poll(Duration::from_millis(20), cpu));
        let local = LOCAL.with(Arc::clone);
        touch();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The window has passed: asleep, until a command comes.
        assert!(local.sleeping.load(Relaxed));
        touch();
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert!(!local.sleeping.load(Relaxed));
        task.abort();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn never_polls_without_a_spare_cpu() {
        let task = tokio::spawn(poll(Duration::from_secs(60), SpareCpu::fixed(false)));
        let local = LOCAL.with(Arc::clone);
        touch();
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        assert!(local.sleeping.load(Relaxed));
        task.abort();
    }

    #[test]
    fn without_pressure_accounting_nobody_polls() {
        let cpu = SpareCpu::new();
        std::thread::sleep(CHECK_EVERY * 2);
        let spare = cpu.spare();
        if read_stalled_us().is_none() {
            assert!(!spare);
        }
    }
}
