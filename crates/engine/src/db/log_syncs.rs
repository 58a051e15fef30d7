//! Syncs of the value log asked for on their own (`Db::sync_log`: a host's Flush, the
//! device's `sync`), coalesced: each holds the log writer's lock, so every tenant's writes
//! wait for it, and a storm of them (many hosts' Flushes at once) would sync the log once
//! each. A sync covers every call that arrived before it started; a call waits for the sync
//! in progress, then returns at once if a sync that started after it arrived has completed.

use crate::error::Result;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) struct LogSyncs {
    /// Calls so far: each one's ticket is its number.
    asked: AtomicU64,
    /// The highest ticket a completed sync covers; held while a sync runs, one at a time.
    covered: Mutex<u64>,
}

impl LogSyncs {
    pub(super) fn new() -> LogSyncs {
        LogSyncs {
            asked: AtomicU64::new(0),
            covered: Mutex::new(0),
        }
    }

    /// Runs `sync` unless a sync that started after this call arrived has completed
    /// meanwhile (then what was written before the call is durable already); whether it ran.
    pub(super) fn coalesce(&self, sync: impl FnOnce() -> Result<()>) -> Result<bool> {
        let ticket = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        let mut covered = self.covered.lock();
        if *covered >= ticket {
            return Ok(false);
        }
        // Every call numbered up to here arrived before this sync starts.
        let upto = self.asked.load(Ordering::SeqCst);
        sync()?;
        *covered = upto;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// One call syncs; three that arrive while it runs share one more sync (not three).
    #[test]
    fn calls_during_a_sync_share_the_next_one() {
        let syncs = Arc::new(LogSyncs::new());
        let ran = Arc::new(AtomicUsize::new(0));
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let first = {
            let (syncs, ran) = (syncs.clone(), ran.clone());
            std::thread::spawn(move || {
                syncs.coalesce(|| {
                    started_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
            })
        };
        started_rx.recv().unwrap();
        let late: Vec<_> = (0..3)
            .map(|_| {
                let (syncs, ran) = (syncs.clone(), ran.clone());
                std::thread::spawn(move || {
                    syncs.coalesce(|| {
                        ran.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                })
            })
            .collect();
        // All three have their tickets before the first sync completes.
        while syncs.asked.load(Ordering::SeqCst) < 4 {
            std::thread::yield_now();
        }
        go_tx.send(()).unwrap();
        assert!(first.join().unwrap().unwrap(), "the first call syncs");
        let late_ran = late
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .filter(|&ran| ran)
            .count();
        assert_eq!(late_ran, 1, "the calls during the first sync share one");
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        // A call after them all syncs again: nothing covers it.
        assert!(syncs.coalesce(|| Ok(())).unwrap());
    }

    #[test]
    fn a_failed_sync_covers_nothing() {
        let syncs = LogSyncs::new();
        let failed = syncs.coalesce(|| Err(crate::error::Error::Closed));
        assert!(failed.is_err());
        assert!(
            syncs.coalesce(|| Ok(())).unwrap(),
            "the next call syncs itself"
        );
    }
}
