//! The version set and the super version on top of it: the manifest's edits, the current
//! tree, and the swap that publishes a new super version to readers.

use super::index_flushes::IndexFlushes;
use super::super_version::{used_of, Frozen, SuperVersion};
use super::write_queue::WriterState;
use crate::error::Result;
use crate::key::Nsid;
use crate::memtable::Memtable;
use crate::options::Options;
use crate::version::{Version, VersionEdit, VersionSet};
use arc_swap::ArcSwap;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The versions part: the manifest (behind its lock) and the super version readers load.
pub(super) struct Versions {
    set: Mutex<VersionSet>,
    /// The current super version: read on every get without a lock or a shared reference
    /// count (an `ArcSwap` load touches only the reading thread's slots), replaced under
    /// `swap`.
    current: ArcSwap<SuperVersion>,
    swap: Mutex<()>,
    /// The last manifest write failed: its edit may or may not be on disk.
    manifest_in_doubt: AtomicBool,
}

impl Versions {
    pub(super) fn new(set: VersionSet, first: SuperVersion) -> Versions {
        Versions {
            set: Mutex::new(set),
            current: ArcSwap::from_pointee(first),
            swap: Mutex::new(()),
            manifest_in_doubt: AtomicBool::new(false),
        }
    }

    /// The version set, under the manifest's lock.
    pub(super) fn lock(&self) -> MutexGuard<'_, VersionSet> {
        self.set.lock()
    }

    pub(super) fn super_version(&self) -> Arc<SuperVersion> {
        self.current.load_full()
    }

    /// The current super version for the length of one lookup: no shared counter is touched
    /// (a guard holds it; a guard kept long or many at once fall back to a reference count).
    #[inline]
    pub(super) fn super_version_brief(&self) -> arc_swap::Guard<Arc<SuperVersion>> {
        self.current.load()
    }

    pub(super) fn new_file_number(&self) -> u64 {
        self.set.lock().new_file_number()
    }

    /// Swaps in the super version `next` makes of the current one, one swap at a time;
    /// `None` leaves it. Whether it swapped.
    /// Turns the memtable into a frozen one (ending at the writer's position in the log) and
    /// starts a new one of `opts`' sizes, its filter sized for the entries the frozen one's
    /// would have held in that many bytes (at most its entry bound); false if the memtable
    /// is empty.
    pub(super) fn freeze(&self, w: &mut WriterState, opts: &Options) -> bool {
        self.swap(|sv| {
            if sv.mem.is_empty() {
                return None;
            }
            let frozen = Frozen {
                mem: sv.mem.clone(),
                log_end: w.vlog.position(),
                log_sync: w.vlog.sync_handle(),
            };
            let mut imm = vec![Arc::new(frozen)];
            imm.extend(sv.imm.iter().cloned());
            Some(SuperVersion {
                mem: Arc::new(Memtable::following(
                    opts.memtable_bytes,
                    opts.memtable_max_entries,
                    &sv.mem,
                )),
                imm,
                version: sv.version.clone(),
                used: sv.used.clone(),
            })
        })
    }

    pub(super) fn swap(&self, next: impl FnOnce(&SuperVersion) -> Option<SuperVersion>) -> bool {
        let _update = self.swap.lock();
        let sv = self.current.load();
        match next(&sv) {
            Some(new) => {
                self.current.store(Arc::new(new));
                true
            }
            None => false,
        }
    }

    /// Logs `edit` in the manifest, noting whether the manifest is left in doubt.
    pub(super) fn log_edit(&self, vs: &mut VersionSet, edit: VersionEdit) -> Result<Arc<Version>> {
        let result = vs.log_and_apply(edit);
        self.manifest_in_doubt
            .store(result.is_err(), Ordering::Release);
        result
    }

    /// After a failed manifest write, an edit (a namespace created or destroyed) may or may
    /// not be on disk. A write acknowledged now would take one side of that doubt without
    /// saying so (a put into a namespace whose destruction a crash then brings back), so the
    /// doubt is settled first: a new manifest holding the state in memory.
    pub(super) fn settle_manifest(&self) -> Result<()> {
        if !self.manifest_in_doubt.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut vs = self.set.lock();
        if vs.in_doubt() {
            self.log_edit(&mut vs, VersionEdit::default())?;
        } else {
            self.manifest_in_doubt.store(false, Ordering::Release);
        }
        Ok(())
    }

    /// Logs `edit` and installs its version; `flushed` is the memtable it made durable. The
    /// indexes `index_flush` waits on that memtable for are logged ready with it, and
    /// `flush_epoch` moves before the swap (see `credit_holds`); `before_swap` is a test's
    /// pause point.
    pub(super) fn install(
        &self,
        mut edit: VersionEdit,
        flushed: Option<&Arc<Frozen>>,
        index_flush: &IndexFlushes,
        flush_epoch: &AtomicU64,
        before_swap: impl FnOnce(),
    ) -> Result<()> {
        let mut vs = self.set.lock();
        let usage_moved = !edit.usage_delta.is_empty() || !edit.destroyed_ns.is_empty();
        // Indexes whose backfilled entries this flush makes durable: ready in the manifest
        // with it (under its lock: a backfill registers under it too).
        let ready = match flushed {
            Some(f) => index_flush.logged_by(&f.mem),
            None => Vec::new(),
        };
        let ready_ids: Vec<Nsid> = ready.iter().map(|(id, _)| *id).collect();
        let registered = |(id, _): &(Nsid, u64)| vs.namespaces.indexes.contains_key(id);
        edit.ready_index
            .extend(ready.iter().filter(|r| registered(r)).copied());
        let version = self.log_edit(&mut vs, edit)?;
        index_flush.forget(&ready_ids);
        self.swap(|sv| {
            // The new figures go in the same swap that takes the flushed memtable out.
            let used = match usage_moved {
                true => Arc::new(used_of(&vs.namespaces)),
                false => sv.used.clone(),
            };
            if flushed.is_some() {
                // Before the swap: see `credit_holds`.
                flush_epoch.fetch_add(1, Ordering::AcqRel);
            }
            before_swap();
            let imm = sv
                .imm
                .iter()
                .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
                .cloned()
                .collect();
            Some(SuperVersion {
                mem: sv.mem.clone(),
                imm,
                version,
                used,
            })
        });
        Ok(())
    }
}
