//! The executor: runs an operation log on a database under one configuration, checks every
//! answer against the model, and records a normalized trace of the answers for the
//! metamorphic comparison between configurations.

use super::checks::{check_indexes, err_name, show, trace, Check};
use super::config::{self, cov, Config, StorageSpec, OPS_RUN};
use super::host::Host;
use super::model::NsModel;
use super::ops::{short, IdxKind, IterSpec, Op, ATTRS};
use super::watchdog;
use cerberus_engine::Readable;
use cerberus_engine::{Db, IndexKind, Iter, Namespace, ReadOptions, Snapshot};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

// ---------------------------------------------------------------------------------------
// The session: namespaces, snapshots and iterators by slot, with their models.

pub enum Slot {
    Empty,
    Live {
        ns: Namespace,
        id: u32,
        m: NsModel,
    },
    /// Destroyed: the old handle must fail.
    Ghost(Namespace),
}

pub struct SnapState {
    pub(crate) snap: Snapshot,
    pub(crate) slot: u8,
    pub(crate) id: u32,
    pub(crate) m: NsModel,
    pub(crate) epoch: u64,
}

pub struct IterState {
    pub(crate) it: Iter,
    pub(crate) slot: u8,
    pub(crate) id: u32,
    pub(crate) epoch: u64,
    /// Entries the iterator may yield (after its bounds), the model at its snapshot.
    pub(crate) entries: Vec<(Vec<u8>, Vec<u8>)>,
    pub(crate) uncertain: Vec<Vec<u8>>,
    pub(crate) spec: IterSpec,
    /// Index of the next entry (None: not positioned; next starts at the beginning).
    pub(crate) pos: Option<usize>,
    pub(crate) dead: bool,
}

/// A find paged across operations.
pub struct Cursor {
    pub(crate) slot: u8,
    pub(crate) id: u32,
    pub(crate) filter: super::ops::FilterSpec,
    pub(crate) projection: Option<Vec<u8>>,
    pub(crate) page_bytes: usize,
    pub(crate) continuation: Option<Vec<u8>>,
    /// Records of the pages so far, and the namespace's write count at the first page.
    pub(crate) seen: Vec<(Vec<u8>, Value)>,
    pub(crate) writes: u64,
    pub(crate) pages: usize,
}

pub struct Session {
    /// Namespace names start with this (threads of a concurrent run keep apart).
    pub(crate) prefix: String,
    /// Slot 0 is the default namespace.
    pub(crate) default_slot0: bool,
    pub slots: Vec<Slot>,
    pub(crate) snaps: Vec<Option<SnapState>>,
    pub(crate) iters: Vec<Option<IterState>>,
    pub(crate) cursors: Vec<Option<Cursor>>,
    pub(crate) created: u64,
    /// A fault is armed, or fired since the last heal: failures are allowed.
    pub faulty: bool,
    /// Writes are not synced and crashes happen: a crash may lose what came after the last
    /// sync point.
    pub unsynced: bool,
    pub trace: Vec<String>,
    /// Whether this session owns the whole database (checks list_namespaces exactly).
    pub exclusive: bool,
    /// `Options::get_many_bytes` of the database, when known: an answer past it is wrong.
    pub get_many_bytes: Option<u64>,
}

impl Session {
    pub fn new(prefix: &str, default_slot0: bool, exclusive: bool, db: &Db) -> Session {
        let mut slots: Vec<Slot> = (0..super::ops::NS_SLOTS).map(|_| Slot::Empty).collect();
        if default_slot0 {
            let ns = db.default_namespace();
            slots[0] = Slot::Live {
                id: ns.id(),
                ns,
                m: NsModel::default(),
            };
        }
        Session {
            prefix: prefix.to_string(),
            default_slot0,
            slots,
            snaps: (0..super::ops::SNAP_SLOTS).map(|_| None).collect(),
            iters: (0..super::ops::ITER_SLOTS).map(|_| None).collect(),
            cursors: (0..super::ops::CURSOR_SLOTS).map(|_| None).collect(),
            created: 0,
            faulty: false,
            trace: Vec::new(),
            exclusive,
            unsynced: false,
            get_many_bytes: None,
        }
    }

    pub(crate) fn live(&mut self, slot: u8) -> Option<(&Namespace, &mut NsModel)> {
        match &mut self.slots[slot as usize] {
            Slot::Live { ns, m, .. } => Some((ns, m)),
            _ => None,
        }
    }

    /// Handles again after a reopen; snapshots and iterators of the old instance stay, and
    /// must fail.
    pub fn rebind(&mut self, db: &Db) -> Result<(), String> {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Slot::Live { ns, id, .. } = s {
                cov("Db::namespace");
                *ns = db
                    .namespace(*id)
                    .map_err(|e| format!("namespace slot {i} (id {id}) lost by reopen: {e}"))?;
            }
        }
        Ok(())
    }

    /// Reads every namespace whole (gets and a scan) and compares it with the model.
    pub fn verify_all(&mut self, db: &Db) -> Result<(), String> {
        let names: Vec<_> = db.list_namespaces();
        cov("Db::list_namespaces");
        for (i, s) in self.slots.iter().enumerate() {
            let Slot::Live { ns, id, m } = s else {
                continue;
            };
            if !names.iter().any(|n| n.nsid == *id) {
                return Err(format!("slot {i}: namespace {id} not in list_namespaces"));
            }
            cov("Namespace::iter");
            let it = ns
                .iter(ReadOptions::default())
                .map_err(|e| format!("slot {i}: iter: {e}"))?;
            let mut got = BTreeMap::new();
            for r in it {
                cov("Iter::next");
                let (k, v) = r.map_err(|e| format!("slot {i}: scan: {e}"))?;
                got.insert(k.to_vec(), v.to_vec());
            }
            let keys: std::collections::BTreeSet<&Vec<u8>> =
                got.keys().chain(m.data.keys()).collect();
            for k in keys {
                if m.uncertain.contains_key(k) {
                    continue;
                }
                let (g, w) = (got.get(k), m.data.get(k));
                if g != w {
                    return Err(format!(
                        "slot {i} key {}: scan has {}, expected {}",
                        short(k),
                        show(&g),
                        show(&w)
                    ));
                }
                cov("Namespace::get");
                let g = ns.get(k).map_err(|e| format!("slot {i}: get: {e}"))?;
                if g.as_deref() != w.map(|v| v.as_slice()) {
                    return Err(format!(
                        "slot {i} key {}: get has {}, expected {}",
                        short(k),
                        show(&g),
                        show(&w)
                    ));
                }
            }
            if !m.indexes_uncertain {
                cov("Namespace::list_indexes");
                let got = ns.list_indexes().map_err(|e| e.to_string())?;
                check_indexes(&got, m)?;
            }
            // Alone on the database: the usage the flushes kept equals a recount (which
            // flushes first), and its records the model's own bytes. Only an injected
            // fault may make the recount fail.
            if self.exclusive {
                cov("Namespace::check_usage");
                match ns.check_usage() {
                    Ok((kept, counted)) => {
                        if kept != counted {
                            return Err(format!(
                                "slot {i}: usage kept {kept:?} != recount {counted:?}"
                            ));
                        }
                        let want = super::checks::model_bytes(m);
                        if m.uncertain.is_empty() && kept.records != want {
                            return Err(format!(
                                "slot {i}: usage kept {kept:?}, the model's records {want}"
                            ));
                        }
                    }
                    Err(_) if self.faulty => {}
                    Err(e) => return Err(format!("slot {i}: check_usage: {e}")),
                }
            }
        }
        if self.exclusive {
            let mut want: Vec<u32> = self
                .slots
                .iter()
                .filter_map(|s| match s {
                    Slot::Live { id, .. } => Some(*id),
                    _ => None,
                })
                .collect();
            if !self.default_slot0 || !matches!(self.slots[0], Slot::Live { .. }) {
                want.push(0);
            }
            want.sort();
            want.dedup();
            let got: Vec<u32> = names.iter().map(|n| n.nsid).collect();
            if got != want {
                return Err(format!("list_namespaces: ids {got:?}, expected {want:?}"));
            }
        }
        Ok(())
    }

    /// After a heal: uncertain keys and indexes take what the database says, if it is one
    /// of the candidates.
    pub fn settle(&mut self) -> Result<(), String> {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Slot::Live { ns, m, .. } = s else {
                continue;
            };
            for (k, cands) in std::mem::take(&mut m.uncertain) {
                let got = ns
                    .get(&k)
                    .map_err(|e| format!("slot {i}: get after heal: {e}"))?;
                let got = got.map(|v| v.to_vec());
                if !cands.contains(&got) {
                    return Err(format!(
                        "slot {i} key {}: after a failed write and a heal it holds {}, which is \
                         neither the old nor the new value ({} candidates)",
                        short(&k),
                        show(&got),
                        cands.len()
                    ));
                }
                m.write(&k, got);
            }
            if m.indexes_uncertain {
                let got = ns.list_indexes().map_err(|e| e.to_string())?;
                m.indexes.clear();
                for info in got {
                    let a = ATTRS
                        .iter()
                        .position(|x| *x == info.attr)
                        .ok_or("unknown attribute in list_indexes")?;
                    let k = match info.kind {
                        IndexKind::Classic => IdxKind::Classic,
                        _ => IdxKind::Vas,
                    };
                    m.indexes.insert(a as u8, k);
                }
                m.indexes_uncertain = false;
            }
        }
        Ok(())
    }

    /// Runs one operation. `host` is `None` in the threads of a concurrent run (no reopen).
    pub fn exec(&mut self, db_host: &mut DbRef<'_>, op: &Op) -> Check {
        OPS_RUN.fetch_add(1, Ordering::Relaxed);
        let r = self.exec_inner(db_host, op);
        let r = r.and_then(|t| self.check_space_after(op, &t).map(|()| t));
        if let Ok(t) = &r {
            self.trace.push(t.clone());
        }
        r
    }

    fn exec_inner(&mut self, host: &mut DbRef<'_>, op: &Op) -> Check {
        match op {
            Op::Get { .. }
            | Op::Contains { .. }
            | Op::GetMany { .. }
            | Op::ListIndexes { .. }
            | Op::Query { .. }
            | Op::SnapOpen { .. }
            | Op::SnapClose { .. }
            | Op::SnapGet { .. }
            | Op::SnapContains { .. }
            | Op::SnapQuery { .. }
            | Op::PageOpen { .. }
            | Op::PageNext { .. }
            | Op::IterOpen { .. }
            | Op::IterClose { .. }
            | Op::IterSeek { .. }
            | Op::IterNext { .. } => self.exec_read(host, op),
            Op::Put { .. }
            | Op::Delete { .. }
            | Op::Batch { .. }
            | Op::DeleteRange { .. }
            | Op::DeletePrefix { .. }
            | Op::CreateNs { .. }
            | Op::DestroyNs { .. }
            | Op::CreateIndex { .. }
            | Op::DropIndex { .. }
            | Op::Flush
            | Op::WaitForCompactions
            | Op::CompactRange { .. }
            | Op::CompactAll
            | Op::Gc
            | Op::SyncLog
            | Op::Stats
            | Op::Configure { .. }
            | Op::ReadOnly { .. }
            | Op::Reopen
            | Op::Checkpoint
            | Op::Crash
            | Op::Heal
            | Op::Inject { .. } => self.exec_write(host, op),
        }
    }

    /// Everything acknowledged so far is durable.
    pub(crate) fn sync_point(&mut self) {
        for s in &mut self.slots {
            if let Slot::Live { m, .. } = s {
                m.since_sync.clear();
                m.since_sync_order.clear();
            }
        }
    }

    /// Whether the namespace a snapshot or iterator reads was destroyed since.
    pub(crate) fn gone(&self, slot: u8, id: u32) -> bool {
        !matches!(&self.slots[slot as usize], Slot::Live { id: now, .. } if *now == id)
    }

    pub(crate) fn ghost_write(
        &self,
        slot: u8,
        f: impl FnOnce(&Namespace) -> cerberus_engine::Result<()>,
    ) -> Check {
        self.ghost_read(slot, f)
    }

    /// An operation on a destroyed namespace's old handle: it must fail.
    pub(crate) fn ghost_read(
        &self,
        slot: u8,
        f: impl FnOnce(&Namespace) -> cerberus_engine::Result<()>,
    ) -> Check {
        match &self.slots[slot as usize] {
            Slot::Ghost(h) => match f(h) {
                Err(e) => Ok(format!("Err({})", err_name(&e))),
                Ok(()) => Err("an operation on a destroyed namespace's handle succeeded".into()),
            },
            _ => Ok("skip".into()),
        }
    }
}

/// The database an operation runs on: a host that can reopen it, or a shared one.
pub enum DbRef<'a> {
    Host(&'a mut Host),
    /// A database shared by threads, and its epoch.
    Shared(&'a Db, u64),
}

impl DbRef<'_> {
    pub(crate) fn db(&self) -> &Db {
        match self {
            DbRef::Host(h) => h.db(),
            DbRef::Shared(d, _) => d,
        }
    }

    pub(crate) fn epoch(&self) -> u64 {
        match self {
            DbRef::Host(h) => h.epoch,
            DbRef::Shared(_, e) => *e,
        }
    }

    pub(crate) fn host(&mut self) -> Option<&mut Host> {
        match self {
            DbRef::Host(h) => Some(h),
            DbRef::Shared(..) => None,
        }
    }
}

/// A failed run: where, why, and the answers up to there.
#[derive(Debug, Clone)]
pub struct Failure {
    pub config: String,
    pub op: usize,
    pub msg: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] op {}: {}", self.config, self.op, self.msg)
    }
}

/// Runs `ops` under `cfg` from an empty database, then reopens and checks everything;
/// returns the trace of answers.
pub fn run_log(cfg: &Config, ops: &[Op]) -> Result<Vec<String>, Failure> {
    let fail = |op: usize, msg: String| Failure {
        config: cfg.name.to_string(),
        op,
        msg,
    };
    let mut host = Host::new(cfg).map_err(|e| fail(0, e))?;
    let mut s = Session::new("", true, true, host.db());
    s.unsynced = cfg.storage == StorageSpec::Fault && !cfg.opts.sync;
    s.get_many_bytes = Some(cfg.opts.get_many_bytes);
    for (i, op) in ops.iter().enumerate() {
        let mut r = DbRef::Host(&mut host);
        trace(|| format!("{} op {i}: {op}", cfg.name));
        let _busy = watchdog::busy(format_args!("[{}] op {i}: {op}", cfg.name));
        if let Err(msg) = s.exec(&mut r, op) {
            return Err(fail(i, format!("{op}: {msg}")));
        }
    }
    // The end: heal any fault, reopen, and everything must be there.
    let n = ops.len();
    let _busy = watchdog::busy(format_args!(
        "[{}] the final heal, reopen and close",
        cfg.name
    ));
    let mut r = DbRef::Host(&mut host);
    s.exec(&mut r, &Op::Heal)
        .map_err(|m| fail(n, format!("final heal: {m}")))?;
    s.exec(&mut r, &Op::Reopen)
        .map_err(|m| fail(n, format!("final reopen: {m}")))?;
    // Snapshots and iterators go before the database.
    drop(s.snaps.drain(..).collect::<Vec<_>>());
    drop(s.iters.drain(..).collect::<Vec<_>>());
    let trace = std::mem::take(&mut s.trace);
    drop(s);
    if let Some(db) = host.db.take() {
        config::count_gc(&db);
        let r = db.close();
        drop(db);
        host.join_runner();
        r.map_err(|e| fail(n, format!("final close: {e}")))?;
    }
    Ok(trace)
}
