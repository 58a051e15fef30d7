//! The engine under I/O errors: the error sweep (`sweep.rs`) and one test per rule
//! (`rules.rs`, see docs/faults.md).

mod checkpoint;
#[path = "../common/mod.rs"]
mod common;
mod moves;
mod rules;
mod sweep;

use cerberus_engine::Readable;
use cerberus_engine::{Db, Options};
use std::collections::BTreeMap;

/// Small sizes so that a short workload flushes, rolls segments and compacts; every write
/// synced, so a power cut after the fault keeps every acknowledged write.
pub fn options() -> Options {
    let mut o = common::small_options();
    o.sync = true;
    o.memtable_bytes = 4 << 10;
    o.vlog_segment_bytes = 8 << 10;
    o.target_table_bytes = 2 << 10;
    o.level1_bytes = 8 << 10;
    o.cache_bytes = 0;
    o.auto_compaction = false;
    o.vlog_gc_dead_ratio = 0.0;
    o.idle_settle_ms = 0;
    o.background_threads = 1;
    o
}

/// The table files on `fs`, sorted.
pub fn tables(fs: &cerberus_engine::storage::FaultStorage) -> Vec<String> {
    use cerberus_engine::storage::Storage;
    let mut t: Vec<String> = fs
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    t.sort();
    t
}

/// What one namespace may hold: per key, every state the writes allow (one after an
/// acknowledged write; more while failed writes are in doubt).
#[derive(Default)]
pub struct NsModel {
    keys: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    /// Its creation failed: it may not exist.
    pub maybe_absent: bool,
    /// Its destruction failed: it may be gone.
    pub maybe_gone: bool,
}

impl NsModel {
    pub fn acked(&mut self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) {
        for (k, v) in ops {
            self.keys.insert(k.clone(), vec![v.clone()]);
        }
    }

    pub fn in_doubt(&mut self, ops: &[(Vec<u8>, Option<Vec<u8>>)]) {
        for (k, v) in ops {
            let states = self.keys.entry(k.clone()).or_insert_with(|| vec![None]);
            if !states.contains(v) {
                states.push(v.clone());
            }
        }
    }

    pub fn allows(&self, k: &[u8], got: Option<&[u8]>) -> bool {
        let got = got.map(<[u8]>::to_vec);
        match self.keys.get(k) {
            Some(states) => states.contains(&got),
            None => got.is_none(),
        }
    }
}

/// Namespaces by name.
#[derive(Default)]
pub struct Model {
    pub ns: BTreeMap<String, NsModel>,
}

/// Every modelled namespace and key (and no other namespace) holds a state its writes allow.
pub fn check_model(db: &Db, model: &Model) -> Result<(), String> {
    let live: BTreeMap<String, u32> = db
        .list_namespaces()
        .into_iter()
        .map(|i| (i.name, i.nsid))
        .collect();
    for (name, nsid) in &live {
        if *nsid != 0 && !model.ns.contains_key(name) {
            return Err(format!("namespace {name} exists but should not"));
        }
    }
    for (name, m) in &model.ns {
        let Some(&ns) = live.get(name) else {
            if m.maybe_absent || m.maybe_gone {
                continue;
            }
            return Err(format!("namespace {name} is missing"));
        };
        let mut keys: Vec<Vec<u8>> = m.keys.keys().cloned().collect();
        keys.extend((0..40).map(|i| format!("key{i:03}").into_bytes()));
        for k in keys {
            let got = db.namespace(ns).unwrap().get(&k).map_err(|e| {
                format!(
                    "get {name}/{} after reopen: {e}",
                    String::from_utf8_lossy(&k)
                )
            })?;
            if !m.allows(&k, got.as_deref()) {
                return Err(format!(
                    "{name}/{}: got {:?}, allowed {:?}",
                    String::from_utf8_lossy(&k),
                    got.map(|v| String::from_utf8_lossy(&v).into_owned()),
                    m.keys.get(&k).map(|s| s
                        .iter()
                        .map(|v| v.as_ref().map(|v| String::from_utf8_lossy(v).into_owned()))
                        .collect::<Vec<_>>())
                ));
            }
        }
    }
    Ok(())
}
