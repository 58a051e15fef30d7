//! A change from one version to the next, as logged in the manifest.
//!
//! Encoding: a sequence of tagged fields, each `tag (u8) ++ fields`.

use crate::coding::{put_bytes, put_varint, Cursor};
use crate::index_def::IndexDef;
use crate::index_kind::IndexKind;
use crate::key::Nsid;
use crate::namespace_options::{IoShares, NamespaceOptions};
use crate::table::TableProps;

const TAG_LOG_START: u8 = 1;
const TAG_NEXT_FILE: u8 = 2;
const TAG_LAST_SEQ: u8 = 3;
const TAG_ADD_TABLE: u8 = 4;
const TAG_DELETE_TABLE: u8 = 5;
const TAG_CREATE_NAMESPACE: u8 = 6;
const TAG_DESTROY_NAMESPACE: u8 = 7;
const TAG_NEXT_NSID: u8 = 8;
const TAG_VLOG_DEAD: u8 = 9;
const TAG_CREATE_INDEX: u8 = 10;
const TAG_INDEX_READY: u8 = 11;
const TAG_NS_OPTIONS: u8 = 12;
const TAG_USAGE_DELTA: u8 = 13;
const TAG_USAGE_BASE: u8 = 14;
const TAG_NS_GARBAGE: u8 = 15;
/// The key format of the index created just before (absent: format 1).
const TAG_INDEX_KEYS: u8 = 16;
/// A namespace made read-only (1) or writable again (0); absent: writable.
const TAG_NS_READ_ONLY: u8 = 17;
/// After a table's `TAG_ADD_TABLE`: the bytes of its file that hold no entries.
const TAG_TABLE_AUX: u8 = 18;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Value-log position from which recovery must replay.
    pub log_start: Option<(u64, u64)>,
    pub next_file: Option<u64>,
    /// Largest seqno written to tables.
    pub last_seq: Option<u64>,
    pub added: Vec<(usize, TableProps)>,
    pub deleted: Vec<(usize, u64)>,
    /// Namespaces created: id and name.
    pub created_ns: Vec<(Nsid, String)>,
    pub destroyed_ns: Vec<Nsid>,
    /// Next namespace id to hand out; ids are never reused.
    pub next_nsid: Option<Nsid>,
    /// Value-log bytes that became dead with this edit, per segment (`segment, bytes`):
    /// versions a flush or compaction dropped, tables of a destroyed namespace. Summed over
    /// the manifest they tell GC, after a restart too, which segments are worth collecting.
    pub vlog_dead: Vec<(u64, u64)>,
    /// Indexes created (an index is dropped as its id is destroyed, like a namespace).
    pub created_index: Vec<IndexDef>,
    /// Indexes whose backfill completed.
    /// Indexes whose backfill completed, and the seqno from which snapshots can use them.
    pub ready_index: Vec<(Nsid, u64)>,
    /// Settings given to namespaces (at create, or changed later): the latest wins.
    pub ns_options: Vec<(Nsid, NamespaceOptions)>,
    /// Namespaces made read-only (`true`) or writable again (`false`): the latest wins.
    pub ns_read_only: Vec<(Nsid, bool)>,
    /// Change of live bytes per namespace or index id (a flush's, in the edit that installs
    /// its table, so the figure and the tables move together).
    pub usage_delta: Vec<(Nsid, i64)>,
    /// Live bytes per id, replacing every figure before (a snapshot edit, or a recount);
    /// `Some` also says the manifest tracks usage (an old one does not: it is recounted).
    pub usage_base: Option<Vec<(Nsid, u64)>>,
    /// Value-log bytes that became garbage, per namespace and segment.
    pub ns_garbage: Vec<(Nsid, u64, u64)>,
}

fn put_options(out: &mut Vec<u8>, ns: Nsid, o: &NamespaceOptions) {
    put_varint(out, u64::from(ns));
    // A capacity is at least 1 byte: 0 says none.
    put_varint(out, o.capacity.unwrap_or(0));
    let s = &o.shares;
    for v in [
        s.reservation_ops,
        s.reservation_bytes,
        u64::from(s.weight),
        s.limit_ops,
        s.limit_bytes,
    ] {
        put_varint(out, v);
    }
}

fn get_options(c: &mut Cursor) -> Option<(Nsid, NamespaceOptions)> {
    let ns = Nsid::try_from(c.varint()?).ok()?;
    let capacity = Some(c.varint()?).filter(|&b| b > 0);
    let shares = IoShares {
        reservation_ops: c.varint()?,
        reservation_bytes: c.varint()?,
        weight: u32::try_from(c.varint()?).ok()?,
        limit_ops: c.varint()?,
        limit_bytes: c.varint()?,
    };
    Some((ns, NamespaceOptions { capacity, shares }))
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

impl VersionEdit {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some((seg, off)) = self.log_start {
            out.push(TAG_LOG_START);
            put_varint(&mut out, seg);
            put_varint(&mut out, off);
        }
        if let Some(n) = self.next_file {
            out.push(TAG_NEXT_FILE);
            put_varint(&mut out, n);
        }
        if let Some(s) = self.last_seq {
            out.push(TAG_LAST_SEQ);
            put_varint(&mut out, s);
        }
        for (ns, name) in &self.created_ns {
            out.push(TAG_CREATE_NAMESPACE);
            put_varint(&mut out, u64::from(*ns));
            put_bytes(&mut out, name.as_bytes());
        }
        for ns in &self.destroyed_ns {
            out.push(TAG_DESTROY_NAMESPACE);
            put_varint(&mut out, u64::from(*ns));
        }
        if let Some(n) = self.next_nsid {
            out.push(TAG_NEXT_NSID);
            put_varint(&mut out, u64::from(n));
        }
        for d in &self.created_index {
            out.push(TAG_CREATE_INDEX);
            put_varint(&mut out, u64::from(d.id));
            put_varint(&mut out, u64::from(d.ns));
            out.push(d.kind.to_u8());
            put_bytes(&mut out, d.attr.as_bytes());
            if d.keys != 1 {
                out.push(TAG_INDEX_KEYS);
                out.push(d.keys);
            }
        }
        for &(id, seq) in &self.ready_index {
            out.push(TAG_INDEX_READY);
            put_varint(&mut out, u64::from(id));
            put_varint(&mut out, seq);
        }
        for (ns, o) in &self.ns_options {
            out.push(TAG_NS_OPTIONS);
            put_options(&mut out, *ns, o);
        }
        for &(ns, read_only) in &self.ns_read_only {
            out.push(TAG_NS_READ_ONLY);
            put_varint(&mut out, u64::from(ns));
            out.push(u8::from(read_only));
        }
        if let Some(base) = &self.usage_base {
            out.push(TAG_USAGE_BASE);
            put_varint(&mut out, base.len() as u64);
            for &(ns, bytes) in base {
                put_varint(&mut out, u64::from(ns));
                put_varint(&mut out, bytes);
            }
        }
        for &(ns, d) in &self.usage_delta {
            out.push(TAG_USAGE_DELTA);
            put_varint(&mut out, u64::from(ns));
            put_varint(&mut out, zigzag(d));
        }
        for &(ns, seg, bytes) in &self.ns_garbage {
            out.push(TAG_NS_GARBAGE);
            put_varint(&mut out, u64::from(ns));
            put_varint(&mut out, seg);
            put_varint(&mut out, bytes);
        }
        for &(seg, bytes) in &self.vlog_dead {
            out.push(TAG_VLOG_DEAD);
            put_varint(&mut out, seg);
            put_varint(&mut out, bytes);
        }
        for &(level, id) in &self.deleted {
            out.push(TAG_DELETE_TABLE);
            put_varint(&mut out, level as u64);
            put_varint(&mut out, id);
        }
        for (level, p) in &self.added {
            out.push(TAG_ADD_TABLE);
            put_varint(&mut out, *level as u64);
            put_varint(&mut out, p.id);
            put_varint(&mut out, p.size);
            put_varint(&mut out, p.entries);
            put_varint(&mut out, p.min_seq);
            put_varint(&mut out, p.max_seq);
            put_bytes(&mut out, &p.smallest);
            put_bytes(&mut out, &p.largest);
            // Only when there are any: tables without keep the record as it was.
            if p.aux_bytes > 0 {
                out.push(TAG_TABLE_AUX);
                put_varint(&mut out, p.aux_bytes);
            }
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Option<VersionEdit> {
        let mut c = Cursor::new(buf);
        let mut e = VersionEdit::default();
        while !c.is_empty() {
            match c.u8()? {
                TAG_LOG_START => e.log_start = Some((c.varint()?, c.varint()?)),
                TAG_NEXT_FILE => e.next_file = Some(c.varint()?),
                TAG_LAST_SEQ => e.last_seq = Some(c.varint()?),
                TAG_DELETE_TABLE => e.deleted.push((c.varint_usize()?, c.varint()?)),
                TAG_ADD_TABLE => {
                    let level = c.varint_usize()?;
                    let props = TableProps {
                        id: c.varint()?,
                        size: c.varint()?,
                        entries: c.varint()?,
                        min_seq: c.varint()?,
                        max_seq: c.varint()?,
                        smallest: c.bytes()?.to_vec(),
                        largest: c.bytes()?.to_vec(),
                        aux_bytes: 0,
                    };
                    e.added.push((level, props));
                }
                TAG_CREATE_NAMESPACE => {
                    let ns = Nsid::try_from(c.varint()?).ok()?;
                    let name = String::from_utf8(c.bytes()?.to_vec()).ok()?;
                    e.created_ns.push((ns, name));
                }
                TAG_DESTROY_NAMESPACE => e.destroyed_ns.push(Nsid::try_from(c.varint()?).ok()?),
                TAG_NEXT_NSID => e.next_nsid = Some(Nsid::try_from(c.varint()?).ok()?),
                TAG_VLOG_DEAD => e.vlog_dead.push((c.varint()?, c.varint()?)),
                TAG_CREATE_INDEX => {
                    let id = Nsid::try_from(c.varint()?).ok()?;
                    let ns = Nsid::try_from(c.varint()?).ok()?;
                    let kind = IndexKind::from_u8(c.u8()?)?;
                    let attr = String::from_utf8(c.bytes()?.to_vec()).ok()?;
                    e.created_index.push(IndexDef {
                        id,
                        ns,
                        attr,
                        kind,
                        ready: None,
                        keys: 1,
                    });
                }
                TAG_INDEX_KEYS => e.created_index.last_mut()?.keys = c.u8()?,
                TAG_TABLE_AUX => e.added.last_mut()?.1.aux_bytes = c.varint()?,
                TAG_INDEX_READY => e
                    .ready_index
                    .push((Nsid::try_from(c.varint()?).ok()?, c.varint()?)),
                TAG_NS_OPTIONS => e.ns_options.push(get_options(&mut c)?),
                TAG_NS_READ_ONLY => {
                    let ns = Nsid::try_from(c.varint()?).ok()?;
                    let flag = match c.u8()? {
                        0 => false,
                        1 => true,
                        _ => return None,
                    };
                    e.ns_read_only.push((ns, flag));
                }
                TAG_USAGE_BASE => {
                    let n = c.varint()?;
                    let mut base = Vec::new();
                    for _ in 0..n {
                        base.push((Nsid::try_from(c.varint()?).ok()?, c.varint()?));
                    }
                    e.usage_base = Some(base);
                }
                TAG_USAGE_DELTA => e
                    .usage_delta
                    .push((Nsid::try_from(c.varint()?).ok()?, unzigzag(c.varint()?))),
                TAG_NS_GARBAGE => {
                    e.ns_garbage
                        .push((Nsid::try_from(c.varint()?).ok()?, c.varint()?, c.varint()?))
                }
                _ => return None,
            }
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let e = VersionEdit {
            log_start: Some((3, 16)),
            next_file: Some(9),
            last_seq: Some(100),
            added: vec![(
                1,
                TableProps {
                    id: 7,
                    size: 1000,
                    entries: 10,
                    smallest: b"a".to_vec(),
                    largest: b"z".to_vec(),
                    min_seq: 1,
                    max_seq: 99,
                    aux_bytes: 40,
                },
            )],
            deleted: vec![(0, 5)],
            created_ns: vec![(3, "tenant".into())],
            destroyed_ns: vec![2],
            next_nsid: Some(4),
            vlog_dead: vec![(5, 4096), (7, 1)],
            created_index: vec![IndexDef {
                id: 5,
                ns: 3,
                attr: "user.id".into(),
                kind: IndexKind::Classic,
                ready: None,
                keys: 2,
            }],
            ready_index: vec![(5, 77)],
            ns_options: vec![(
                3,
                NamespaceOptions {
                    capacity: Some(1 << 30),
                    shares: IoShares {
                        reservation_ops: 100,
                        reservation_bytes: 0,
                        weight: 3,
                        limit_ops: 1000,
                        limit_bytes: 1 << 20,
                    },
                },
            )],
            ns_read_only: vec![(3, true), (4, false)],
            usage_delta: vec![(3, -42), (5, i64::MAX), (6, i64::MIN)],
            usage_base: Some(vec![(3, 1000), (5, 0)]),
            ns_garbage: vec![(3, 9, 4096)],
        };
        assert_eq!(VersionEdit::decode(&e.encode()), Some(e.clone()));
        assert_eq!(VersionEdit::decode(&[99]), None);
        // An index of key format 1 is written as before issue 60 (no tag 16), and a manifest
        // from before reads as format 1.
        let mut old = e.clone();
        old.created_index[0].keys = 1;
        let bytes = old.encode();
        assert_eq!(bytes.len() + 2, e.encode().len());
        assert_eq!(VersionEdit::decode(&bytes), Some(old));
        // A tag 16 with no index before it is corruption.
        assert_eq!(VersionEdit::decode(&[TAG_INDEX_KEYS, 2]), None);
        // A read-only flag is 0 or 1; an edit without tag 17 (every manifest before it)
        // leaves every namespace writable.
        assert_eq!(VersionEdit::decode(&[TAG_NS_READ_ONLY, 3, 2]), None);
        let mut writable = e.clone();
        writable.ns_read_only.clear();
        assert_eq!(e.encode().len(), writable.encode().len() + 6);
        assert_eq!(VersionEdit::decode(&writable.encode()), Some(writable));
    }

    proptest::proptest! {
        #[test]
        fn decode_survives_garbage(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = VersionEdit::decode(&data);
        }
    }
}
