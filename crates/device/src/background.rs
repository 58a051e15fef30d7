//! The device's background services on the scheduler: what a write queues, what a core runs,
//! what a stop saves and what the stats show.

use crate::dedup::{self, DedupWork};
use crate::dispatch::Shared;
use crate::metrics::Snapshot;
use crate::scheduler::{Priority, Work};
use bytes::Bytes;

impl Shared {
    /// Key `key` of `ns` was written or deleted: its dedup task is queued.
    pub fn written(&self, ns: u32, key: &[u8]) {
        if self.dedup.is_some() {
            // A copy: the request's key shares its frame, value included.
            self.submit_dedup(DedupWork::Key {
                ns,
                key: Bytes::copy_from_slice(key),
            });
        }
    }

    /// Queues a write's (or a destroy's) task, unless the backlog is full.
    pub fn submit_dedup(&self, w: DedupWork) {
        let Some(d) = &self.dedup else { return };
        if d.admit(&w) {
            self.queue_dedup(w);
            return;
        }
        for w in d.rescans_due() {
            self.queue_dedup(w);
        }
    }

    /// Queues a task the service made itself (a scan's pages and keys), past the bound: a
    /// page's keys are few, and the next page waits behind them.
    pub(crate) fn queue_dedup(&self, w: DedupWork) {
        let Some(d) = &self.dedup else { return };
        d.queued();
        let priority = match w {
            DedupWork::Key { .. } => Priority::Low,
            // The first page at once, the next ones behind the keys of the one before.
            DedupWork::Scan { after: None, .. } => Priority::Normal,
            DedupWork::Scan { after: Some(_), .. } => Priority::Low,
            // Frees a destroyed namespace's index: cheap, and memory back at once.
            DedupWork::Forget { .. } => Priority::High,
        };
        if !self.scheduler.submit(Work::Dedup(w), priority) {
            d.dropped();
        }
    }

    /// Runs a background task on the calling core. A failure is logged: the task's key is
    /// indexed again by its next write, or by the rebuild of the next start.
    pub fn run_work(&self, work: Work) {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match work {
            Work::Dedup(w) => {
                if let Some(d) = &self.dedup {
                    let r = d.run(&self.db, w, &mut |more| self.queue_dedup(more));
                    if let Err(e) = r {
                        tracing::warn!(error = %e, "dedup task failed");
                    }
                }
            }
            #[cfg(feature = "fault-injection")]
            Work::Hold(d) => std::thread::sleep(d),
        }));
        if let Err(p) = outcome {
            tracing::error!(
                panic = crate::panics::panic_message(p.as_ref()),
                "a background task panicked"
            );
        }
    }

    /// At a stop, once no command runs: the dedup index and its queued tasks are saved.
    pub fn save_background(&self) {
        // Without fault injection every work item is a dedup task, and clippy would have
        // this be a `map`.
        #[allow(clippy::unnecessary_filter_map)]
        let mut pending: Vec<DedupWork> = self
            .scheduler
            .take_all()
            .into_iter()
            .filter_map(|w| match w {
                Work::Dedup(w) => Some(w),
                #[cfg(feature = "fault-injection")]
                Work::Hold(_) => None,
            })
            .collect();
        if let Some(d) = &self.dedup {
            for _ in &pending {
                d.dropped();
            }
            // Rescans still owed run first at the next start.
            pending.splice(0..0, d.take_rescans());
            let path = dedup::index_path(&self.config.data_dir);
            if let Err(e) = d.save(&path, &pending) {
                tracing::error!(error = %e, "dedup index not saved: the next start rebuilds it");
            }
        }
    }

    /// The Prometheus text: the commands' and connections' series, and the engine's, the
    /// scheduler's and the dedup service's as they are now.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(Snapshot {
            db: self.db.stats(),
            scheduler: self.scheduler.stats(),
            dedup: self.dedup.as_ref().map(|d| d.stats()),
            shares: self.shares.reports(),
            held_bytes: self.held.used() as u64,
        })
    }

    /// The engine's stats with the scheduler's and the dedup service's.
    pub fn device_stats(&self) -> serde_json::Value {
        let mut doc = serde_json::to_value(self.db.stats()).unwrap_or_default();
        if let Some(obj) = doc.as_object_mut() {
            obj.insert(
                "scheduler".into(),
                serde_json::to_value(self.scheduler.stats()).unwrap_or_default(),
            );
            obj.insert(
                "dedup".into(),
                match &self.dedup {
                    Some(d) => serde_json::to_value(d.stats()).unwrap_or_default(),
                    None => serde_json::Value::Null,
                },
            );
        }
        doc
    }
}
