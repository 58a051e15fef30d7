//! The live secondary indexes of each namespace, and the entries the write path derives
//! for them.

use crate::index::{entry_key, entry_payload, extract, AttrPath, IndexDef, IndexKind, KEY_FORMAT};
use crate::key::{self, Kind, Nsid, SeqNo};
use crate::memtable::{MemValue, Memtable};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;

/// An index as the write path and queries use it.
pub(super) struct LiveIndex {
    pub(super) def: IndexDef,
    pub(super) attr: AttrPath,
}

/// Every live index, by the namespace it indexes.
#[derive(Default)]
pub(super) struct IndexSet {
    by_ns: HashMap<Nsid, Vec<Arc<LiveIndex>>>,
    /// Indexes taken out of the set whose drop has not ended: the registry still lists them
    /// until their trees are dropped, and a rebuild of the set from it (another namespace's
    /// destroy) must not bring them back, to be read while their tables go.
    dropping: Vec<Nsid>,
}

impl IndexSet {
    /// The set of `defs` but those `dropping`; `ready` marks indexes ready in memory whose
    /// ready edit waits for a flush (see `backfill::IndexFlushes`).
    pub(super) fn from_defs<'a>(
        defs: impl Iterator<Item = &'a IndexDef>,
        ready: &[(Nsid, SeqNo)],
        dropping: Vec<Nsid>,
    ) -> Self {
        let mut by_ns: HashMap<Nsid, Vec<Arc<LiveIndex>>> = HashMap::new();
        // An index of an older key format is left out: nothing derives or reads its
        // entries, whose keys this code would misread, until open rebuilds it.
        let current = defs.filter(|d| d.keys == KEY_FORMAT && !dropping.contains(&d.id));
        for d in current {
            // Only attributes that parsed are ever logged.
            if let Ok(attr) = AttrPath::parse(&d.attr) {
                let mut def = d.clone();
                if let Some((_, from)) = ready.iter().find(|(id, _)| *id == d.id) {
                    def.ready = def.ready.or(Some(*from));
                }
                by_ns
                    .entry(d.ns)
                    .or_default()
                    .push(Arc::new(LiveIndex { def, attr }));
            }
        }
        IndexSet { by_ns, dropping }
    }

    pub(super) fn of(&self, ns: Nsid) -> &[Arc<LiveIndex>] {
        self.by_ns.get(&ns).map_or(&[], Vec::as_slice)
    }

    /// Whether index `id` is in the set (one whose drop began is not).
    pub(super) fn contains(&self, id: Nsid) -> bool {
        self.by_ns.values().flatten().any(|i| i.def.id == id)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_ns.is_empty()
    }

    /// The same set without index `id`, whose drop begins.
    pub(super) fn without(&self, id: Nsid) -> IndexSet {
        let by_ns = self
            .by_ns
            .iter()
            .map(|(ns, v)| (*ns, v.iter().filter(|i| i.def.id != id).cloned().collect()))
            .filter(|(_, v): &(Nsid, Vec<Arc<LiveIndex>>)| !v.is_empty())
            .collect();
        let mut dropping = self.dropping.clone();
        dropping.push(id);
        IndexSet { by_ns, dropping }
    }

    /// The indexes whose drop has begun and not ended, but `ended`.
    pub(super) fn dropping_but(&self, ended: Option<Nsid>) -> Vec<Nsid> {
        let mut ids = self.dropping.clone();
        ids.retain(|id| Some(*id) != ended);
        ids
    }

    /// Each namespace that has indexes, with them.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Nsid, &[Arc<LiveIndex>])> {
        self.by_ns.iter().map(|(ns, v)| (*ns, v.as_slice()))
    }
}

/// The index set as a query reads it: once before it loads its super version and once after.
/// An index ready in the first read had every backfilled entry in the memtables and tables
/// that super version holds (a backfill's later entries may go to a memtable made after an
/// earlier super version); one still in the second had not begun to lose its trees (an index
/// leaves the set before they go). A query reads an index only where both hold.
pub(super) struct QueryIndexes {
    pub(super) before: Arc<IndexSet>,
    pub(super) after: Arc<IndexSet>,
}

impl QueryIndexes {
    /// The indexes of `ns` a query at snapshot `seq` may read: ready at or before it when
    /// the super version was loaded, and not dropped then.
    pub(super) fn usable(&self, ns: Nsid, seq: SeqNo) -> impl Iterator<Item = &Arc<LiveIndex>> {
        let after = self.after.of(ns);
        self.before.of(ns).iter().filter(move |i| {
            i.def.ready.is_some_and(|from| from <= seq)
                && after.iter().any(|a| a.def.id == i.def.id)
        })
    }
}

/// What [`Namespace::list_indexes`](super::handle::Namespace::list_indexes) reports of one index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IndexInfo {
    /// The attribute indexed (dotted path).
    pub attr: String,
    /// How the index stores its entries.
    pub kind: IndexKind,
    /// Backfill done: queries use it.
    pub ready: bool,
}

/// The entries (user key with the index's id, payload) `indexes` derive from the put of
/// `value` at `pk`, stored at `addr`, at `seq`.
pub(super) fn entries_of(
    indexes: &[Arc<LiveIndex>],
    pk: &[u8],
    value: &[u8],
    addr: key::ValueAddr,
    seq: SeqNo,
) -> Vec<(Bytes, Bytes)> {
    if indexes.is_empty() {
        return Vec::new();
    }
    let attrs: Vec<&AttrPath> = indexes.iter().map(|i| &i.attr).collect();
    let mut out = Vec::new();
    for (idx, sk) in indexes.iter().zip(extract(value, &attrs)) {
        if let Some(sk) = sk {
            let mut user = idx.def.id.to_be_bytes().to_vec();
            user.extend_from_slice(&entry_key(&sk, pk));
            out.push((
                Bytes::from(user),
                Bytes::from(entry_payload(idx.def.kind, addr, seq)),
            ));
        }
    }
    out
}

/// Bytes an entry counts for (key without the index's id, and payload).
pub(super) fn entry_bytes((user, payload): &(Bytes, Bytes)) -> u64 {
    (user.len() - key::NSID_LEN + payload.len()) as u64
}

/// Inserts `entries` into `mem` at `seq`; returns their bytes.
pub(super) fn insert_entries(mem: &Memtable, entries: Vec<(Bytes, Bytes)>, seq: SeqNo) -> u64 {
    let mut bytes = 0;
    for e in entries {
        bytes += entry_bytes(&e);
        let (user, value) = e;
        let v = MemValue {
            kind: Kind::Put,
            value,
            addr: key::ValueAddr::NONE,
        };
        mem.insert(&user, seq, v);
    }
    bytes
}

/// Inserts into `mem` the entries `indexes` derive from the put of `value` at `pk`, stored
/// at `addr`, at `seq`; returns their bytes (keys and payloads).
pub(super) fn derive_entries(
    mem: &Memtable,
    indexes: &[Arc<LiveIndex>],
    pk: &[u8],
    value: &[u8],
    addr: key::ValueAddr,
    seq: SeqNo,
) -> u64 {
    insert_entries(mem, entries_of(indexes, pk, value, addr, seq), seq)
}

/// The most bytes the entries `indexes` derive from a put of `value` at `pk` can take, before
/// the put has a seqno and an address: each payload counted with `seq` and an address at
/// `offset` in the largest segment number (a few bytes more than it will take).
pub(super) fn derived_bound(
    indexes: &[Arc<LiveIndex>],
    pk: &[u8],
    value: &[u8],
    seq: SeqNo,
    offset: u64,
) -> u64 {
    let addr = key::ValueAddr {
        segment: u64::from(u32::MAX),
        offset,
        len: u32::MAX,
    };
    let entries = entries_of(indexes, pk, value, addr, seq);
    entries.iter().map(entry_bytes).sum()
}
