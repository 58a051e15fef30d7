//! Milliseconds since the database opened, read from the kernel's coarse monotonic clock.
//! Every commit group stamps the time of the last write (the idleness of the database and
//! of each namespace, judged over `idle_settle_ms`); a precise clock read there was a
//! percent of a small put's time, and a few milliseconds of resolution are plenty.

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
        // which only delays idle work.
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
}
