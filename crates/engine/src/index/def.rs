//! What an index is (its attribute and kind) and the entries a record's write derives for it.
//!
//! An index lives in a namespace of its own (an id from the namespace registry, hidden from
//! the list of namespaces), so its entries go through the engine's memtable, tables and
//! compaction like any others and from L1 down form a tree of their own. An entry's key is
//! `encoded sk ++ pk`; its value is kept in the table only (no value-log record: it is derived
//! from the primary record, and recovery derives it again when it replays that record).

use super::{AttrPath, Scalar};
use serde_json::Value;

/// A document's secondary keys, parsed once for all the indexes of its namespace.
pub struct Document(Option<Value>);

impl Document {
    /// `value` as JSON; a value that is not JSON has no secondary keys.
    pub fn parse(value: &[u8]) -> Document {
        Document(serde_json::from_slice(value).ok())
    }

    /// The secondary key at `attr`: a scalar there, or nothing (missing attribute, an object
    /// or an array, or no JSON at all).
    pub fn key(&self, attr: &AttrPath) -> Option<Scalar> {
        self.0.as_ref().and_then(|doc| attr.scalar(doc))
    }
}

/// An index entry's key: the encoded secondary key, then the pk.
pub fn entry_key(sk: &Scalar, pk: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + pk.len());
    sk.encode(&mut k);
    k.extend_from_slice(pk);
    k
}

/// Splits an index entry's key into its secondary key and pk; `None` if it is malformed.
pub fn split_entry_key(key: &[u8]) -> Option<(Scalar, &[u8])> {
    let (sk, used) = Scalar::decode(key)?;
    Some((sk, &key[used..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_give_scalars_only() {
        let doc = Document::parse(br#"{"a": 3, "b": {"c": "x"}, "d": [1], "e": {"f": 1}}"#);
        let path = |p: &str| AttrPath::parse(p).unwrap();
        assert_eq!(
            doc.key(&path("a")),
            Some(Scalar::from_json(&3.into()).unwrap())
        );
        assert_eq!(doc.key(&path("b.c")), Some(Scalar::String("x".into())));
        assert_eq!(doc.key(&path("d")), None);
        assert_eq!(doc.key(&path("e")), None);
        assert_eq!(doc.key(&path("missing")), None);
        assert_eq!(Document::parse(b"not json").key(&path("a")), None);
    }

    #[test]
    fn entry_keys_split_back() {
        let sk = Scalar::String("ab\0c".into());
        let k = entry_key(&sk, b"pk\0\xff");
        let (back, pk) = split_entry_key(&k).unwrap();
        assert_eq!(back, sk);
        assert_eq!(pk, b"pk\0\xff");
        assert!(split_entry_key(b"\xff").is_none());
    }
}
