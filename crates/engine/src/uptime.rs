//! Milliseconds since the database opened, read from the kernel's coarse monotonic clock.
//! Every commit group stamps the time of the last write (the idleness of the database and
//! of each namespace, judged over `idle_settle_ms`); a precise clock read there was a
//! percent of a small put's time, and a few milliseconds of resolution are plenty.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// See the module's comment.
pub(crate) struct Uptime {
    start_ms: u64,
}

impl Uptime {
    pub(crate) fn new() -> Uptime {
        Uptime {
            start_ms: coarse_ms(),
        }
    }

    /// Milliseconds since `new`, to within the coarse clock's tick.
    pub(crate) fn ms(&self) -> u64 {
        coarse_ms().saturating_sub(self.start_ms)
    }
}

/// A moment checked often (a snapshot's expiry, at every step of its cursor): well before
/// it, a check reads the coarse clock alone; within [`MARGIN_MS`] and a tick of it, the
/// precise one too. A precise clock read per step was 6 % of a short scan out of the
/// memtable. Never passed before its moment; after it, late only if the coarse clock trails
/// the precise one by more than the margin (a virtual machine's late tick), which is why a
/// snapshot's sweep marks it expired before it lets the pin go, whatever its own clock says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    at: Instant,
    /// Coarse milliseconds at or before `at`.
    coarse_at: u64,
}

impl Deadline {
    /// `after` from now; `None` past the clock's range.
    pub(crate) fn after(after: Duration) -> Option<Deadline> {
        Instant::now().checked_add(after).map(Deadline::new)
    }

    pub(crate) fn new(at: Instant) -> Deadline {
        // The coarse clock trails the precise one: read first, it is at or before now.
        let coarse_now = coarse_ms();
        let ahead = at.saturating_duration_since(Instant::now()).as_millis();
        Deadline {
            at,
            coarse_at: coarse_now.saturating_add(u64::try_from(ahead).unwrap_or(u64::MAX)),
        }
    }

    pub(crate) fn at(&self) -> Instant {
        self.at
    }

    /// Whether it has come.
    pub(crate) fn passed(&self) -> bool {
        // The precise clock is a tick past the coarse one at most, but for a late tick: more
        // than that before the coarse deadline, the precise clock is before `at`.
        if coarse_ms().saturating_add(coarse_tick_ms() + MARGIN_MS) < self.coarse_at {
            return false;
        }
        Instant::now() >= self.at
    }
}

/// Milliseconds before a deadline from which [`Deadline::passed`] reads the precise clock
/// too, beyond the coarse clock's tick: room for a tick that comes late.
const MARGIN_MS: u64 = 20;

/// The coarse clock's resolution in whole milliseconds, rounded up, and one more.
fn coarse_tick_ms() -> u64 {
    static TICK: OnceLock<u64> = OnceLock::new();
    *TICK.get_or_init(|| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; the clock id is a constant.
        let ok = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0;
        match ok {
            true => (ts.tv_sec as u64 * 1_000 + (ts.tv_nsec as u64).div_ceil(1_000_000)) + 1,
            // Unknown: no fast path, every check reads the precise clock.
            false => u64::MAX,
        }
    })
}

/// Milliseconds of the kernel's coarse monotonic clock: the precise monotonic clock (std's
/// `Instant`) as of the last tick.
fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant the kernel knows.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0;
    match ok {
        true => ts.tv_sec as u64 * 1_000 + ts.tv_nsec as u64 / 1_000_000,
        // Never fails for this clock on Linux; were it to, time would seem to stand still,
        // which only delays idle work (and sends every deadline check to the precise clock).
        false => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_follows_the_wall_clock_to_within_its_tick() {
        let u = Uptime::new();
        let t = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let ms = u.ms();
        let real = t.elapsed().as_millis() as u64;
        assert!(
            ms + 10 >= real && ms <= real + 10,
            "uptime {ms} ms, real {real} ms"
        );
    }

    #[test]
    fn a_deadline_passes_at_its_moment_never_before() {
        let d = Deadline::after(Duration::from_millis(60)).expect("in range");
        loop {
            let passed = d.passed();
            let after = Instant::now();
            assert!(!passed || after >= d.at(), "passed before its moment");
            if passed {
                break;
            }
            // Late only by a tick that comes late (`MARGIN_MS`): a second is a hung clock.
            assert!(after < d.at() + Duration::from_secs(1), "never passed");
            std::hint::spin_loop();
        }
        assert!(Deadline::after(Duration::ZERO).expect("in range").passed());
    }
}
