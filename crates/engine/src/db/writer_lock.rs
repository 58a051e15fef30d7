//! The writer lock: a mutex for a few writers on few CPUs, where the one holding the lock
//! keeps it busy most of the time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// std's mutex, with a poll for the only writer waiting. Not parking_lot's: a writer that
/// finds that one held yields its CPU a few times before it sleeps, and with more writers
/// than CPUs each yield runs another writer that finds the lock held too (4 writers of
/// 100-byte puts on 2 CPUs switched context 0.4-0.8 times a put, and put 0.7 times as fast as
/// one writer). std's spins a moment, then sleeps until woken, while the writer that holds a
/// CPU takes the lock again (0.015 switches a put, as fast as one writer). But with two
/// writers on two CPUs a sleeper is woken too late (the holder has taken the lock again) and
/// costs the holder a wake-up each time (put 0.8 times as fast as with parking_lot's): so
/// the only writer waiting polls for up to `SPIN` first, and takes the lock as it comes
/// free, while any more sleep. A poisoned lock is taken as it is: parking_lot's, which this
/// replaces, has no poisoning, and the write path never relied on it.
pub(crate) struct WriterLock<T> {
    mutex: Mutex<T>,
    /// Writers waiting for the lock.
    waiting: AtomicUsize,
}

/// How long the only writer waiting polls before it sleeps.
const SPIN: Duration = Duration::from_micros(50);

impl<T> WriterLock<T> {
    pub(crate) fn new(value: T) -> WriterLock<T> {
        WriterLock {
            mutex: Mutex::new(value),
            waiting: AtomicUsize::new(0),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        if let Some(g) = self.try_lock() {
            return g;
        }
        // The only writer waiting polls for the lock a while: with two writers on two CPUs
        // it takes the lock as the other lets go, where a sleeper would be woken too late
        // (the holder has taken it again) and only cost the holder a wake-up.
        let alone = self.waiting.fetch_add(1, Ordering::Relaxed) == 0;
        let g = match alone {
            true => self.poll().unwrap_or_else(|| self.lock_blocking()),
            false => self.lock_blocking(),
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        g
    }

    /// The lock, if it comes free within `SPIN` of polling.
    fn poll(&self) -> Option<MutexGuard<'_, T>> {
        let start = Instant::now();
        for round in 0u32.. {
            // Fewer tries as the wait grows: each try takes the lock's line from its holder.
            for _ in 0..1u32 << round.min(6) {
                std::hint::spin_loop();
            }
            if let Some(g) = self.try_lock() {
                return Some(g);
            }
            if round >= 6 && start.elapsed() > SPIN {
                break;
            }
        }
        None
    }

    fn lock_blocking(&self) -> MutexGuard<'_, T> {
        self.mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.mutex.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The lock if it comes free within `wait`, asked for every 50 us (std's has no timed
    /// wait; only a background job of a single runner waits this way).
    pub(crate) fn try_lock_for(&self, wait: Duration) -> Option<MutexGuard<'_, T>> {
        let until = Instant::now() + wait;
        loop {
            if let Some(g) = self.try_lock() {
                return Some(g);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn writers_more_than_cpus_each_hold_it_alone() {
        let lock = Arc::new(WriterLock::new((0u64, false)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = lock.lock();
                        assert!(!g.1, "two holders at once");
                        g.1 = true;
                        g.0 += 1;
                        std::hint::black_box(&mut *g);
                        g.1 = false;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(lock.lock().0, 8 * 20_000);
        assert_eq!(lock.waiting.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_waiter_polls_then_sleeps_until_the_holder_lets_go() {
        let lock = Arc::new(WriterLock::new(0u32));
        let g = lock.lock();
        let waiter = {
            let lock = lock.clone();
            std::thread::spawn(move || *lock.lock() += 1)
        };
        // Held well past the poll: the waiter sleeps, and is woken.
        std::thread::sleep(SPIN * 20);
        assert!(lock.try_lock_for(Duration::from_millis(1)).is_none());
        drop(g);
        waiter.join().unwrap();
        assert_eq!(*lock.lock(), 1);
        assert!(lock.try_lock_for(Duration::from_millis(1)).is_some());
    }

    #[test]
    fn a_lock_a_holder_panicked_under_is_taken_as_it_is() {
        let lock = Arc::new(WriterLock::new(7u32));
        let l = lock.clone();
        let _ = std::thread::spawn(move || {
            let _g = l.lock();
            panic!("under the lock");
        })
        .join();
        assert_eq!(*lock.lock(), 7);
        assert_eq!(lock.try_lock().map(|g| *g), Some(7));
    }
}
