//! Where modeled time meets the host's clock: a thread waits for the modeled completion of its
//! request, or, inside [`deferred`], is handed that completion to wait for later.
//!
//! A real device works through its read queue on its own dies: the host submits a read and
//! later finds it done. Reads issued ahead (an iterator's prefetch) are modeled the same way:
//! they are booked on the dies at once and their bytes copied, and the [`Completion`] says when
//! the device would have finished. Only the reader who needs the bytes waits. Without this,
//! every read issued ahead would need a host thread sleeping through its modeled time, and on
//! a host with fewer cores than reads in flight the model would measure the host's scheduler
//! (wake-ups late by hundreds of microseconds) rather than the device.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// Below this much remaining time we do not trust `thread::sleep` (timer slack and scheduler
/// granularity make short sleeps overshoot by tens of microseconds) and only spin.
const SLEEP_THRESHOLD: Duration = Duration::from_micros(30);
/// How early a sleep is cut short so that the final stretch is spun precisely.
const SLEEP_MARGIN: Duration = Duration::from_micros(15);
/// A thread that waits alone spins through waits up to this long: a sleeping thread on a
/// virtual machine wakes late by hundreds of microseconds in one wait of a thousand, and a
/// scan's tail latency would measure that instead of the device. Longer waits sleep until
/// [`LONG_SLEEP_MARGIN`] before the deadline.
const SPIN_ALONE: Duration = Duration::from_millis(2);
const LONG_SLEEP_MARGIN: Duration = Duration::from_micros(500);

/// Threads inside [`wait_until`] now.
static WAITERS: AtomicUsize = AtomicUsize::new(0);

/// How many waiting threads may spin at once: half the cores, so that spinning never takes
/// the cores the host's other threads (and the waiters beyond these) need.
fn spinners_allowed() -> usize {
    static ALLOWED: OnceLock<usize> = OnceLock::new();
    *ALLOWED.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get() / 2))
}

struct Waiting;

impl Waiting {
    /// Counts this thread as waiting; true when it may spin.
    fn enter() -> (Self, bool) {
        let before = WAITERS.fetch_add(1, Ordering::Relaxed);
        (Waiting, before < spinners_allowed())
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITERS.fetch_sub(1, Ordering::Relaxed);
    }
}

thread_local! {
    static PRECISE_TIMERS: Cell<bool> = const { Cell::new(false) };
    /// Inside [`deferred`]: `Some(latest completion so far)`, or `Some(None)` before the first
    /// read of the scope.
    static SCOPE: Cell<Option<Option<Instant>>> = const { Cell::new(None) };
}

/// Asks Linux to wake this thread's sleeps on time: the default 50 us timer slack would make
/// every modeled wait tens of microseconds late, and spinning instead starves the other
/// threads when more of them wait than there are cores.
fn precise_timers() {
    PRECISE_TIMERS.with(|done| {
        if !done.get() {
            #[cfg(target_os = "linux")]
            // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no memory.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            }
            done.set(true);
        }
    });
}

/// Blocks the calling thread until `deadline`, accurate to a few microseconds. A thread that
/// waits alone (fewer waiters than half the cores) spins; otherwise it sleeps until just before
/// and spins only the last few microseconds.
pub(crate) fn wait_until(deadline: Instant) {
    let Some(remaining) = deadline.checked_duration_since(Instant::now()) else {
        return;
    };
    let (_waiting, may_spin) = Waiting::enter();
    if may_spin {
        if remaining > SPIN_ALONE {
            precise_timers();
            thread::sleep(remaining - LONG_SLEEP_MARGIN);
        }
    } else if remaining > SLEEP_THRESHOLD {
        precise_timers();
        thread::sleep(remaining - SLEEP_MARGIN);
    }
    while Instant::now() < deadline {
        std::hint::spin_loop();
    }
}

/// When a deferred request completes on the modeled device; `None`: at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion(Option<Instant>);

impl Completion {
    /// Waits until the device would have completed the request.
    pub fn wait(self) {
        if let Some(at) = self.0 {
            wait_until(at);
        }
    }
}

/// Runs `f` with the modeled reads it makes not waited for, and returns when the last of them
/// completes. The reads of one scope are taken as a chain (an index read, then the block it
/// points to): each is issued when the one before it completes.
pub(crate) fn deferred<T>(f: impl FnOnce() -> T) -> (T, Completion) {
    let outer = SCOPE.with(|s| s.replace(Some(None)));
    let value = f();
    let done = SCOPE.with(|s| s.replace(outer)).flatten();
    // A scope inside another extends the outer chain.
    if let (Some(at), Some(chain)) = (done, outer) {
        let latest = chain.map_or(at, |c| c.max(at));
        SCOPE.with(|s| s.set(Some(Some(latest))));
    }
    (value, Completion(done))
}

/// When a read issued now starts on the device: now, or inside [`deferred`] once the scope's
/// reads before it complete.
pub(super) fn issue_time() -> Instant {
    let now = Instant::now();
    match SCOPE.with(Cell::get) {
        Some(Some(chain)) => chain.max(now),
        _ => now,
    }
}

/// Ends a read that completes at `done`: waits for it, or inside [`deferred`] adds it to the
/// scope's chain.
pub(super) fn complete(done: Instant) {
    let deferred = SCOPE.with(|s| match s.get() {
        Some(chain) => {
            s.set(Some(Some(chain.map_or(done, |c| c.max(done)))));
            true
        }
        None => false,
    });
    if !deferred {
        wait_until(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn wait_until_is_precise() {
        for us in [0u64, 50, 300, 2000] {
            let start = Instant::now();
            let deadline = start + Duration::from_micros(us);
            wait_until(deadline);
            let now = Instant::now();
            assert!(now >= deadline);
            // Loose: a loaded machine may deschedule us for a few milliseconds.
            assert!(now - deadline < 30 * MS, "overshoot {:?}", now - deadline);
        }
    }

    #[test]
    fn a_deferred_scope_chains_its_reads_and_waits_for_none() {
        let start = Instant::now();
        let ((), c) = deferred(|| {
            let first = issue_time();
            complete(first + 50 * MS);
            // The second read of the chain starts when the first completes.
            let second = issue_time();
            assert!(second >= first + 50 * MS);
            complete(second + 50 * MS);
        });
        assert!(start.elapsed() < 50 * MS, "a deferred read was waited for");
        c.wait();
        assert!(start.elapsed() >= 100 * MS);
        // Outside a scope nothing is deferred.
        assert_eq!(deferred(|| ()).1, Completion::default());
        let t = Instant::now();
        complete(t + 5 * MS);
        assert!(t.elapsed() >= 5 * MS);
    }

    #[test]
    fn an_inner_scope_extends_the_outer_chain() {
        let start = Instant::now();
        let (inner, outer) = deferred(|| {
            let ((), inner) = deferred(|| complete(issue_time() + 40 * MS));
            // The outer scope's next read waits for the inner one.
            assert!(issue_time() >= start + 40 * MS);
            inner
        });
        assert!(start.elapsed() < 40 * MS);
        assert_eq!(inner, outer);
    }
}
