//! Internal keys and what an index entry points at.
//!
//! An internal key is `nsid (u32 big-endian) ++ user key ++ trailer (u64 big-endian)`, with
//! `trailer = seqno << 8 | kind`. Keys sort by `(nsid, user key)` ascending, then by seqno
//! descending, so the newest version of a key comes first.

use crate::coding::{put_varint, Cursor};
use bytes::Bytes;
use std::cmp::Ordering;

/// A namespace's id: the first 4 bytes (big-endian) of each of its internal keys.
pub type Nsid = u32;
pub type SeqNo = u64;

/// The namespace every operation uses until namespaces are created explicitly.
pub const DEFAULT_NS: Nsid = 0;
/// Largest sequence number (56 bits, the trailer keeps 8 bits for the kind).
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;
pub const TRAILER_LEN: usize = 8;
pub const NSID_LEN: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Delete = 0,
    Put = 1,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        match v {
            0 => Some(Kind::Delete),
            1 => Some(Kind::Put),
            _ => None,
        }
    }
}

/// `nsid ++ user key`: the part of an internal key that names a record.
pub fn user_part(ns: Nsid, key: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(NSID_LEN + key.len() + TRAILER_LEN);
    put_user_part(&mut v, ns, key);
    v
}

/// [`user_part`] into `out`, in place of what it held (a buffer kept for many keys).
pub fn put_user_part(out: &mut Vec<u8>, ns: Nsid, key: &[u8]) {
    out.clear();
    out.extend_from_slice(&ns.to_be_bytes());
    out.extend_from_slice(key);
}

/// Appends the trailer that turns a user part into an internal key. With `Kind::Put` and a
/// snapshot seqno it makes the key that sorts first among the versions visible at it.
#[inline]
pub fn push_trailer(out: &mut Vec<u8>, seq: SeqNo, kind: Kind) {
    out.extend_from_slice(&trailer(seq, kind));
}

/// The trailer of an internal key: seqno and kind, big-endian.
pub fn trailer(seq: SeqNo, kind: Kind) -> [u8; TRAILER_LEN] {
    ((seq << 8) | kind as u64).to_be_bytes()
}

/// Builds the internal key for `(ns, key, seq, kind)`.
#[cfg(test)]
pub fn make_ikey(ns: Nsid, key: &[u8], seq: SeqNo, kind: Kind) -> Vec<u8> {
    let mut v = user_part(ns, key);
    push_trailer(&mut v, seq, kind);
    v
}

/// Splits an internal key; `None` if it is too short to be one.
#[inline]
pub fn split_ikey(ikey: &[u8]) -> Option<(&[u8], SeqNo, u8)> {
    if ikey.len() < NSID_LEN + TRAILER_LEN {
        return None;
    }
    let (user, trailer) = ikey.split_at(ikey.len() - TRAILER_LEN);
    let t = u64::from_be_bytes(trailer.try_into().ok()?);
    Some((user, t >> 8, t as u8))
}

/// The `nsid ++ user key` part of a well-formed internal key.
#[inline]
pub fn ikey_user(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The namespace of a well-formed internal key (or of a user part).
#[inline]
pub fn ikey_nsid(ikey: &[u8]) -> Nsid {
    match ikey.get(..NSID_LEN) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Orders internal keys: user part ascending, then trailer descending.
#[inline]
pub fn cmp_ikey(a: &[u8], b: &[u8]) -> Ordering {
    let (au, at) = a.split_at(a.len().saturating_sub(TRAILER_LEN));
    let (bu, bt) = b.split_at(b.len().saturating_sub(TRAILER_LEN));
    cmp_bytes(au, bu).then_with(|| cmp_bytes(bt, at))
}

/// The byte order of `a` and `b` (as `<[u8]>::cmp`), eight bytes at a time. Keys are short,
/// and a call to `memcmp` per comparison cost more than the comparison itself: an index
/// walk spent a quarter of its time in it.
#[inline]
pub fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut x, mut y) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (p, q) in (&mut x).zip(&mut y) {
        let (p, q) = (word(p), word(q));
        if p != q {
            return p.cmp(&q);
        }
    }
    for (p, q) in x.remainder().iter().zip(y.remainder()) {
        if p != q {
            return p.cmp(q);
        }
    }
    a.len().cmp(&b.len())
}

/// Whether `a` and `b` hold the same bytes ([`cmp_bytes`]'s way).
#[inline]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && cmp_bytes(a, b) == Ordering::Equal
}

/// Eight bytes as a big-endian word (`c` holds eight: a `chunks_exact(8)` chunk).
#[inline]
fn word(c: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(c);
    u64::from_be_bytes(w)
}

/// Where a record sits in the value log: the whole record, header included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueAddr {
    pub segment: u64,
    pub offset: u64,
    pub len: u32,
}

impl ValueAddr {
    /// The address of an entry that has no value-log record (a secondary index's entry,
    /// derived from its primary record): nothing to read, nothing to mark dead.
    pub const NONE: ValueAddr = ValueAddr {
        segment: u64::MAX,
        offset: 0,
        len: 0,
    };

    pub fn is_none(&self) -> bool {
        self.segment == u64::MAX
    }
}

/// What an index entry holds for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexValue {
    /// A deletion.
    Tombstone,
    /// A value in the value log, optionally also copied inline.
    Addr {
        addr: ValueAddr,
        inline: Option<Bytes>,
    },
    /// A value kept in the table only, with no value-log record: a secondary index's entry.
    /// It references no value-log record, so dropping it marks nothing dead.
    Table(Bytes),
}

/// Where the value of a found entry is: the one place that tells an inline value (memtable,
/// inline copy, table-only value) from one still in the value log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueAt {
    /// At hand: nothing to read.
    Here(Bytes),
    /// In the value log, at this record.
    Log(ValueAddr),
}

impl ValueAt {
    /// The value an entry holds at hand if any, else its record's address; `None` when it
    /// holds neither.
    #[inline]
    pub fn of(value: Option<Bytes>, addr: Option<ValueAddr>) -> Option<ValueAt> {
        match (value, addr) {
            (Some(v), _) => Some(ValueAt::Here(v)),
            (None, Some(a)) => Some(ValueAt::Log(a)),
            (None, None) => None,
        }
    }
}

const TAG_TOMBSTONE: u8 = 0;
const TAG_ADDR: u8 = 1;
const TAG_ADDR_INLINE: u8 = 2;
const TAG_TABLE: u8 = 3;

impl IndexValue {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            IndexValue::Tombstone => out.push(TAG_TOMBSTONE),
            IndexValue::Addr { addr, inline } => {
                out.push(if inline.is_some() {
                    TAG_ADDR_INLINE
                } else {
                    TAG_ADDR
                });
                put_varint(out, addr.segment);
                put_varint(out, addr.offset);
                put_varint(out, u64::from(addr.len));
                if let Some(v) = inline {
                    out.extend_from_slice(v);
                }
            }
            IndexValue::Table(v) => {
                out.push(TAG_TABLE);
                out.extend_from_slice(v);
            }
        }
    }

    /// The record's address and the value at hand it holds (neither for a tombstone).
    #[inline]
    pub fn into_parts(self) -> (Option<ValueAddr>, Option<Bytes>) {
        match self {
            IndexValue::Tombstone => (None, None),
            IndexValue::Addr { addr, inline } => (Some(addr), inline),
            IndexValue::Table(v) => (None, Some(v)),
        }
    }

    /// Where a reader finds the value it holds; `None` for a tombstone.
    #[inline]
    pub fn value_at(self) -> Option<ValueAt> {
        let (addr, value) = self.into_parts();
        ValueAt::of(value, addr)
    }

    /// The payload of an encoded [`IndexValue::Table`], borrowed; `None` for any other value.
    pub fn table_payload(buf: &[u8]) -> Option<&[u8]> {
        match buf.split_first() {
            Some((&TAG_TABLE, payload)) => Some(payload),
            _ => None,
        }
    }

    /// The value-log address an encoded [`IndexValue::Addr`] without an inline copy holds,
    /// borrowed from `buf`; `None` for any other value.
    pub fn log_addr_only(buf: &[u8]) -> Option<ValueAddr> {
        let mut c = Cursor::new(buf);
        if c.u8()? != TAG_ADDR {
            return None;
        }
        let addr = ValueAddr {
            segment: c.varint()?,
            offset: c.varint()?,
            len: u32::try_from(c.varint()?).ok()?,
        };
        c.is_empty().then_some(addr)
    }

    /// Decodes an entry; `inline` bytes are sliced out of `buf` without a copy.
    pub fn decode(buf: &Bytes) -> Option<IndexValue> {
        let mut c = Cursor::new(buf);
        match c.u8()? {
            TAG_TOMBSTONE => Some(IndexValue::Tombstone),
            tag @ (TAG_ADDR | TAG_ADDR_INLINE) => {
                let addr = ValueAddr {
                    segment: c.varint()?,
                    offset: c.varint()?,
                    len: u32::try_from(c.varint()?).ok()?,
                };
                let inline = if tag == TAG_ADDR_INLINE {
                    Some(buf.slice(c.pos()..))
                } else if !c.is_empty() {
                    return None;
                } else {
                    None
                };
                Some(IndexValue::Addr { addr, inline })
            }
            TAG_TABLE => Some(IndexValue::Table(buf.slice(c.pos()..))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering() {
        let a1 = make_ikey(0, b"a", 5, Kind::Put);
        let a2 = make_ikey(0, b"a", 9, Kind::Put);
        let ab = make_ikey(0, b"ab", 1, Kind::Put);
        let b = make_ikey(0, b"b", 1, Kind::Delete);
        let ns1 = make_ikey(1, b"", 1, Kind::Put);
        let mut v = vec![b.clone(), ab.clone(), a1.clone(), ns1.clone(), a2.clone()];
        v.sort_by(|x, y| cmp_ikey(x, y));
        assert_eq!(v, vec![a2, a1, ab, b, ns1]);
    }

    proptest::proptest! {
        #[test]
        fn cmp_bytes_is_the_slice_order(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
            shared in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
        ) {
            // A common prefix of any length, then bytes from a small alphabet: equal words,
            // equal prefixes of unequal length and differences at every position.
            let (a, b) = ([&shared[..], &a].concat(), [&shared[..], &b].concat());
            proptest::prop_assert_eq!(cmp_bytes(&a, &b), a.cmp(&b));
            proptest::prop_assert_eq!(bytes_eq(&a, &b), a == b);
            proptest::prop_assert_eq!(cmp_bytes(&a, &a), std::cmp::Ordering::Equal);
        }
    }

    #[test]
    fn index_value_roundtrip() {
        let addr = ValueAddr {
            segment: 7,
            offset: 1 << 40,
            len: 1000,
        };
        for v in [
            IndexValue::Tombstone,
            IndexValue::Addr { addr, inline: None },
            IndexValue::Addr {
                addr,
                inline: Some(Bytes::from_static(b"hello")),
            },
        ] {
            let mut b = Vec::new();
            v.encode(&mut b);
            assert_eq!(IndexValue::decode(&Bytes::from(b)), Some(v));
        }
        assert_eq!(IndexValue::decode(&Bytes::from_static(&[9])), None);
    }
}
