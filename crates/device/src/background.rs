//! The device's background services on the scheduler: what a write queues, what a core runs,
//! what a stop saves and what the stats show.

use crate::config::DeviceConfig;
use crate::dedup::{self, Dedup, DedupWork};
use crate::dispatch::Shared;
use crate::scheduler::{Policy, Priority, Work};
use bytes::Bytes;
use cerberus_engine::Db;

/// The dedup service the configuration asks for, with the tasks to queue first: those a
/// clean stop saved, or a scan of every namespace (a rebuild) when nothing was saved. A
/// device started without the service forgets a saved index: it would miss the writes made
/// meanwhile.
pub fn open_dedup(db: &Db, config: &DeviceConfig) -> (Option<Dedup>, Vec<DedupWork>) {
    let path = dedup::index_path(&config.data_dir);
    if !config.dedup.enabled || config.scheduler.policy == Policy::Off {
        dedup::remove_file(&path);
        return (None, Vec::new());
    }
    let chunker = config.dedup.chunker();
    if let Some((d, pending)) = Dedup::load(&path, chunker) {
        tracing::info!(queued = pending.len(), "dedup index loaded");
        return (Some(d), pending);
    }
    let scans = db
        .list_namespaces()
        .into_iter()
        .filter(|n| n.nsid != 0)
        .map(|n| DedupWork::Scan {
            ns: n.nsid,
            after: None,
        })
        .collect();
    (Some(Dedup::new(chunker)), scans)
}

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

    pub fn submit_dedup(&self, w: DedupWork) {
        let Some(d) = &self.dedup else { return };
        d.queued();
        let priority = match w {
            DedupWork::Key { .. } => Priority::Low,
            DedupWork::Scan { .. } => Priority::Normal,
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
                    let r = d.run(&self.db, w, &mut |more| self.submit_dedup(more));
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
                panic = crate::workers::panic_message(p.as_ref()),
                "a background task panicked"
            );
        }
    }

    /// At a stop, once no command runs: the dedup index and its queued tasks are saved.
    pub fn save_background(&self) {
        let pending: Vec<DedupWork> = self
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
            let path = dedup::index_path(&self.config.data_dir);
            if let Err(e) = d.save(&path, &pending) {
                tracing::error!(error = %e, "dedup index not saved: the next start rebuilds it");
            }
        }
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
