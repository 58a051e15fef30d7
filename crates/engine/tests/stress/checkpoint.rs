//! The `Checkpoint` operation: a checkpoint into memory (no disk, so it stays cheap), opened
//! and compared with the model as it is now: every namespace's contents and the indexes it
//! has (attribute and kind; a backfill the copy redoes may leave one not ready yet).

use super::checks::{kind_of, Check};
use super::config::cov;
use super::ops::ATTRS;
use super::run::{DbRef, Session, Slot};
use cerberus_engine::storage::{MemStorage, StorageRef};
use cerberus_engine::{Db, IndexInfo, ReadOptions, Readable};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn defs(list: &[IndexInfo]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|i| (i.attr.clone(), i.kind.to_string()))
        .collect()
}

impl Session {
    pub(crate) fn checkpoint(&mut self, host: &mut DbRef<'_>) -> Check {
        let DbRef::Host(h) = host else {
            return Ok("skip".into());
        };
        let target: StorageRef = Arc::new(MemStorage::new());
        cov("Db::checkpoint_to");
        match h.db().checkpoint_to(&target) {
            Ok(_) => {}
            Err(e) if self.faulty && !e.is_corruption() => return Ok("Err".into()),
            Err(e) => return Err(format!("checkpoint: {e}")),
        }
        let mut opts = h.cfg.opts.clone();
        opts.background_runner = None;
        let copy = Db::builder(opts)
            .open_storage(target)
            .map_err(|e| format!("opening a checkpoint: {e}"))?;
        for (i, s) in self.slots.iter().enumerate() {
            let Slot::Live { id, m, .. } = s else {
                continue;
            };
            let c = copy
                .namespace(*id)
                .map_err(|e| format!("slot {i}: namespace {id} not in the checkpoint: {e}"))?;
            let mut got = BTreeMap::new();
            for r in c.iter(ReadOptions::default()).map_err(|e| e.to_string())? {
                let (k, v) = r.map_err(|e| format!("slot {i}: checkpoint scan: {e}"))?;
                got.insert(k.to_vec(), v.to_vec());
            }
            let keys: BTreeSet<&Vec<u8>> = got.keys().chain(m.data.keys()).collect();
            for k in keys.into_iter().filter(|k| !m.uncertain.contains_key(*k)) {
                if got.get(k) != m.data.get(k) {
                    return Err(format!(
                        "slot {i}: the checkpoint disagrees with the model on key {k:?}"
                    ));
                }
            }
            if !m.indexes_uncertain {
                let want: BTreeSet<(String, String)> = m
                    .indexes
                    .iter()
                    .map(|(a, k)| (ATTRS[*a as usize].to_string(), kind_of(*k).to_string()))
                    .collect();
                let have = defs(&c.list_indexes().map_err(|e| e.to_string())?);
                if have != want {
                    return Err(format!(
                        "slot {i}: checkpoint indexes {have:?}, model {want:?}"
                    ));
                }
            }
        }
        copy.close()
            .map_err(|e| format!("closing a checkpoint: {e}"))?;
        Ok("ok".into())
    }
}
