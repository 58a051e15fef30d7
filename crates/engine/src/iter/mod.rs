//! Ordered reads over one namespace: a merge of the memtables and tables of one super version
//! seen at one snapshot seqno, yielding the newest visible version of each user key.
//!
//! Keys only: the kind comes from the internal key's trailer, so nothing here reads the value
//! log (or even decodes index values).

use crate::compaction::{LevelSource, MergingIter, Source};
use crate::error::{Error, Result};
use crate::key::{self, IndexValue, Kind, Nsid, SeqNo, NSID_LEN};
use crate::memtable::{MemIter, Memtable};
use crate::stats::Counters;
use crate::table::IterConfig;
use crate::version::Version;
use bytes::Bytes;
use std::sync::Arc;

/// A memtable looks like a table whose values are all inline.
impl Source for MemIter {
    fn valid(&self) -> bool {
        MemIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        self.ikey()
    }
    fn value(&self) -> Bytes {
        let mut out = Vec::new();
        if let Some(v) = Source::index_value(self) {
            v.encode(&mut out);
        }
        Bytes::from(out)
    }
    fn index_value(&self) -> Option<IndexValue> {
        self.entry().map(|(_, _, v)| match v.kind {
            Kind::Put if v.addr.is_none() => IndexValue::Table(v.value.clone()),
            Kind::Put => IndexValue::Addr {
                addr: v.addr,
                inline: Some(v.value.clone()),
            },
            Kind::Delete => IndexValue::Tombstone,
        })
    }
    fn table_payload(&self) -> Option<&[u8]> {
        self.entry()
            .filter(|(_, _, v)| v.kind == Kind::Put && v.addr.is_none())
            .map(|(_, _, v)| &v.value[..])
    }
    fn advance(&mut self) -> Result<()> {
        MemIter::advance(self);
        Ok(())
    }
    fn memory(&self) -> (usize, usize) {
        (std::mem::size_of::<MemIter>(), self.buffer_bytes())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let (user, seq, _) = key::split_ikey(target)
            .ok_or_else(|| Error::InvalidArgument("seek target is no internal key".into()))?;
        MemIter::seek(self, user, seq);
        // Memtable order ignores the kind; a same-seqno entry with a higher kind sorts
        // before the target in internal-key order.
        while self.valid() && key::cmp_ikey(self.ikey(), target).is_lt() {
            MemIter::advance(self);
        }
        Ok(())
    }
}

/// The user keys of one namespace at one snapshot, in order, each once with the kind of its
/// newest visible version (tombstones included: callers decide what a delete means).
pub struct SnapshotScan {
    merged: MergingIter,
    ns: Nsid,
    snapshot: SeqNo,
    /// `nsid ++ user key` of the current key.
    user: Vec<u8>,
    /// The buffer of the key before, reused for the next one (no allocation per step).
    spare: Vec<u8>,
    kind: Kind,
    seq: SeqNo,
    valid: bool,
    /// Keeps the tables it reads alive (and their files undeleted) while the scan reads them.
    _version: Arc<Version>,
}

impl SnapshotScan {
    /// A scan over `mems` (newest first) and `version`, seeing seqnos up to `snapshot`;
    /// table reads are counted in `counters`. Unpositioned until `seek`.
    pub fn new(
        mems: &[Arc<Memtable>],
        version: Arc<Version>,
        ns: Nsid,
        snapshot: SeqNo,
        counters: &Arc<Counters>,
        config: &IterConfig,
    ) -> Result<SnapshotScan> {
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        for m in mems {
            sources.push(Box::new(MemIter::new(m.clone())));
        }
        // L0 tables and runs overlap each other: each is a source of its own.
        let overlapping = version.levels[0]
            .iter()
            .filter(|t| t.may_hold_namespace(ns))
            .chain(version.runs_of(ns));
        for t in overlapping {
            sources.push(Box::new(t.reader()?.iter_with(counters.clone(), config)?));
        }
        for level in 1..version.levels.len() {
            if let Some(l) =
                LevelSource::for_namespace(&version, level, ns, counters.clone(), config)
            {
                sources.push(Box::new(l));
            }
        }
        Ok(SnapshotScan {
            merged: MergingIter::new(sources),
            ns,
            snapshot,
            user: Vec::new(),
            spare: Vec::new(),
            kind: Kind::Put,
            seq: 0,
            valid: false,
            _version: version,
        })
    }

    /// Positions at the first user key `>= key` that has a visible version.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        let mut target = key::user_part(self.ns, key);
        key::push_trailer(&mut target, self.snapshot, Kind::Put);
        self.merged.seek(&target)?;
        self.settle(None)
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The index value (address or inline value, or tombstone) of the current key's newest
    /// visible version, `None` if malformed; only while `valid()`. Memtable entries come
    /// without an encoding round trip.
    pub fn index_value(&self) -> Option<IndexValue> {
        self.merged.index_value()
    }

    /// The visible version's secondary index payload, borrowed (see
    /// [`Source::table_payload`]); only while `valid()`.
    pub fn table_payload(&self) -> Option<&[u8]> {
        self.merged.table_payload()
    }

    /// Bytes this scan holds: `(its own state and its sources', their buffered blocks and
    /// entries)`. The version it reads is shared, not counted.
    pub fn memory(&self) -> (usize, usize) {
        let (sources, buffers) = self.merged.memory();
        let own = std::mem::size_of::<SnapshotScan>()
            + self.user.capacity()
            + self.spare.capacity()
            + sources;
        (own, buffers)
    }

    /// The current user key (namespace stripped); only while `valid()`.
    pub fn key(&self) -> &[u8] {
        self.user.get(NSID_LEN..).unwrap_or_default()
    }

    /// Kind of the current key's newest visible version.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Seqno of the current key's newest visible version.
    pub fn seq(&self) -> SeqNo {
        self.seq
    }

    /// Moves to the next user key, past the older versions of this one.
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let mut current = std::mem::replace(&mut self.user, std::mem::take(&mut self.spare));
        // The merge stands at the current key's visible version: step past it here rather
        // than have `settle` take it apart again to find it is the key to skip.
        let settled = match self.merged.advance() {
            Ok(()) => self.settle(Some(&current)),
            Err(e) => {
                self.valid = false;
                Err(e)
            }
        };
        current.clear();
        self.spare = current;
        settled
    }

    /// From the merge's position, stops at the newest visible version of the first user key
    /// other than `skip`, or becomes invalid at the end of the namespace.
    fn settle(&mut self, skip: Option<&[u8]>) -> Result<()> {
        self.valid = false;
        while self.merged.valid() {
            let (user, seq, kind) = key::split_ikey(self.merged.key())
                .ok_or_else(|| Error::corruption("index", 0, "malformed internal key"))?;
            if key::ikey_nsid(user) != self.ns {
                // Namespaces are contiguous in key order: nothing of `ns` follows.
                return Ok(());
            }
            if seq > self.snapshot || skip.is_some_and(|s| key::bytes_eq(s, user)) {
                self.merged.advance()?;
                continue;
            }
            self.kind = Kind::from_u8(kind)
                .ok_or_else(|| Error::corruption("index", 0, "bad entry kind"))?;
            self.seq = seq;
            self.user.clear();
            self.user.extend_from_slice(user);
            self.valid = true;
            return Ok(());
        }
        Ok(())
    }
}
