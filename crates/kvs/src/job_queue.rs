//! The bounded queue between the `_async` callers and the completion threads. One thread
//! at a time looks for work (it holds the "looking" turn); the others sleep, and a caller
//! wakes one only when nobody is looking. The looker takes a burst of calls together, and
//! once its batch ran it looks again briefly before it sleeps: a caller waiting for its
//! callbacks usually queues its next calls soon after, and waking a sleeper costs 10-50 us
//! on a VM.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a thread out of jobs looks for more before it sleeps.
const IDLE_SPIN: Duration = Duration::from_micros(50);
/// A burst of calls is over when nothing new came for this long.
const BURST_GAP: Duration = Duration::from_micros(2);

/// Why a job was not queued.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The queue holds its whole depth.
    Full,
    /// The queue is closed (the device handle is closing).
    Closed,
}

struct State<T> {
    jobs: VecDeque<T>,
    closed: bool,
    /// A thread holds the looking turn.
    looking: bool,
    /// The turn was handed to a sleeper (woken for it) that has not taken it yet: the
    /// callers do not wake more meanwhile.
    handed: bool,
    /// Threads asleep on the condition variable.
    sleeping: usize,
}

/// A queue of at most `depth` jobs of type `T`.
pub struct JobQueue<T> {
    state: Mutex<State<T>>,
    wake: Condvar,
    depth: usize,
    /// `jobs.len()`, for the looker to watch without taking the lock from the callers.
    queued: AtomicUsize,
    /// `closed`, likewise.
    shut: AtomicBool,
}

impl<T> JobQueue<T> {
    pub fn new(depth: usize) -> JobQueue<T> {
        JobQueue {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                closed: false,
                looking: false,
                handed: false,
                sleeping: 0,
            }),
            wake: Condvar::new(),
            depth,
            queued: AtomicUsize::new(0),
            shut: AtomicBool::new(false),
        }
    }

    /// Queues `job`; wakes a thread if none is looking.
    pub fn push(&self, job: T) -> Result<(), Refused> {
        let mut st = self.lock();
        if st.closed {
            return Err(Refused::Closed);
        }
        if st.jobs.len() >= self.depth {
            return Err(Refused::Full);
        }
        st.jobs.push_back(job);
        self.queued.store(st.jobs.len(), Ordering::Release);
        self.hand_on(&mut st);
        Ok(())
    }

    /// Jobs wait and nobody looks: hands the turn to a sleeper, and wakes it.
    fn hand_on(&self, st: &mut State<T>) {
        if !st.jobs.is_empty() && !st.looking && st.sleeping > 0 {
            st.looking = true;
            st.handed = true;
            self.wake.notify_one();
        }
    }

    /// Refuses new jobs; the threads end once they took the queued ones.
    pub fn close(&self) {
        self.lock().closed = true;
        self.shut.store(true, Ordering::Release);
        self.wake.notify_all();
    }

    /// The next jobs (1 to `max`), a burst of them together; `None` once the queue is
    /// closed and empty. `warm`: the thread just ran a batch, so it looks for a while
    /// before it sleeps.
    pub fn take(&self, max: usize, warm: bool) -> Option<Vec<T>> {
        let mut st = self.lock();
        loop {
            let mine = if st.handed {
                st.handed = false;
                true
            } else if !st.looking {
                st.looking = true;
                true
            } else {
                false
            };
            if mine {
                drop(st);
                let found = self.look(max, warm);
                st = self.lock();
                st.looking = false;
                if let Some(batch) = found {
                    // More than one batch came: another thread takes the rest.
                    self.hand_on(&mut st);
                    return Some(batch);
                }
                if !st.jobs.is_empty() {
                    // Queued just as the look ended.
                    continue;
                }
            }
            if st.closed && st.jobs.is_empty() {
                // Others asleep end too.
                self.wake.notify_all();
                return None;
            }
            st.sleeping += 1;
            st = match self.wake.wait(st) {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            st.sleeping -= 1;
        }
    }

    /// With the looking turn: waits up to `IDLE_SPIN` (if `warm`) for a first job, then
    /// gathers until the burst pauses for `BURST_GAP` or `max` are taken.
    fn look(&self, max: usize, warm: bool) -> Option<Vec<T>> {
        let start = Instant::now();
        let mut batch = Vec::new();
        let mut last = start;
        loop {
            let (got, closed) = if self.queued.load(Ordering::Acquire) > 0 {
                let mut st = self.lock();
                let n = st.jobs.len().min(max - batch.len());
                batch.extend(st.jobs.drain(..n));
                self.queued.store(st.jobs.len(), Ordering::Release);
                (n > 0, st.closed)
            } else {
                (false, self.shut.load(Ordering::Acquire))
            };
            let now = Instant::now();
            if got {
                last = now;
            }
            if batch.len() >= max {
                return Some(batch);
            }
            if batch.is_empty() {
                if closed || !warm || now - start >= IDLE_SPIN {
                    return None;
                }
                // Polite: another runnable thread gets the core.
                std::thread::yield_now();
            } else if closed || now - last >= BURST_GAP {
                return Some(batch);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        crate::locks::lock(&self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn takes_a_burst_together_and_ends_once_closed_and_drained() {
        let q = JobQueue::new(100);
        for i in 0..10 {
            q.push(i).unwrap();
        }
        assert_eq!(q.take(4, false), Some(vec![0, 1, 2, 3]));
        q.close();
        assert_eq!(q.push(99), Err(Refused::Closed));
        assert_eq!(q.take(100, true), Some((4..10).collect()));
        assert_eq!(q.take(100, true), None);
    }

    #[test]
    fn a_full_queue_refuses() {
        let q = JobQueue::new(2);
        q.push(1).unwrap();
        q.push(2).unwrap();
        assert_eq!(q.push(3), Err(Refused::Full));
    }

    #[test]
    fn a_sleeping_thread_is_woken_for_a_job_and_for_the_close() {
        let q = Arc::new(JobQueue::new(10));
        let taker = {
            let q = q.clone();
            std::thread::spawn(move || (q.take(10, false), q.take(10, false)))
        };
        std::thread::sleep(Duration::from_millis(20));
        q.push(7).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        q.close();
        assert_eq!(taker.join().unwrap(), (Some(vec![7]), None));
    }
}
