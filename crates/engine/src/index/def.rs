//! What an index is (its attribute and kind) and the entries a record's write derives for it.
//!
//! An index lives in a namespace of its own (an id from the namespace registry, hidden from
//! the list of namespaces), so its entries go through the engine's memtable, tables and
//! compaction like any others and from L1 down form a tree of their own. An entry's key is
//! `encoded sk ++ pk`; its value is kept in the table only (no value-log record: it is derived
//! from the primary record, and recovery derives it again when it replays that record).

use super::scalar::Scalar;
use crate::coding::{put_varint, Cursor};
use crate::index_kind::IndexKind;
use crate::key::{SeqNo, ValueAddr};

/// An index entry's key: the encoded secondary key, then the pk.
pub fn entry_key(sk: &Scalar, pk: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + pk.len());
    sk.encode(&mut k);
    k.extend_from_slice(pk);
    k
}

/// Splits an index entry's key into its encoded secondary key and pk, building neither;
/// `None` if it is malformed.
pub fn split_entry_key(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let used = Scalar::encoded_len(key)?;
    Some(key.split_at(used))
}

/// An index entry's value: the seqno of the record it stands for (a newer version of the pk
/// supersedes it), and for a VAS index the record's value-log address first.
pub fn entry_payload(kind: IndexKind, addr: ValueAddr, seq: SeqNo) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    if kind == IndexKind::Vas {
        put_varint(&mut out, addr.segment);
        put_varint(&mut out, addr.offset);
        put_varint(&mut out, u64::from(addr.len));
    }
    put_varint(&mut out, seq);
    out
}

/// The address (VAS only) and seqno of an entry's value; `None` if malformed.
pub fn decode_payload(kind: IndexKind, buf: &[u8]) -> Option<(Option<ValueAddr>, SeqNo)> {
    let mut c = Cursor::new(buf);
    let addr = match kind {
        IndexKind::Classic => None,
        IndexKind::Vas => Some(ValueAddr {
            segment: c.varint()?,
            offset: c.varint()?,
            len: u32::try_from(c.varint()?).ok()?,
        }),
    };
    let seq = c.varint()?;
    c.is_empty().then_some((addr, seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let a = ValueAddr {
            segment: 7,
            offset: 1 << 40,
            len: 300,
        };
        let vas = entry_payload(IndexKind::Vas, a, 99);
        assert_eq!(decode_payload(IndexKind::Vas, &vas), Some((Some(a), 99)));
        let classic = entry_payload(IndexKind::Classic, a, 99);
        assert_eq!(
            decode_payload(IndexKind::Classic, &classic),
            Some((None, 99))
        );
        assert_eq!(decode_payload(IndexKind::Vas, &classic), None);
        let mut long = vas.clone();
        long.push(0);
        assert_eq!(decode_payload(IndexKind::Vas, &long), None);
    }

    #[test]
    fn entry_keys_split_back() {
        let sk = Scalar::String("ab\0c".into());
        let k = entry_key(&sk, b"pk\0\xff");
        let (back, pk) = split_entry_key(&k).unwrap();
        assert_eq!(Scalar::decode(back), Some((sk, back.len())));
        assert_eq!(pk, b"pk\0\xff");
        assert!(split_entry_key(b"\xff").is_none());
    }
}
