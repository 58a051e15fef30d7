//! The secondary keys of a JSON document at a few attribute paths, in one pass over its bytes
//! without building the document: every other value is skipped as it is read. The write path
//! runs this for every put of an indexed namespace, where building a `serde_json::Value` of a
//! 1 KiB document (a map, a string per field) cost more than the put itself.
//!
//! Semantics are those of `AttrPath::scalar` on the parsed document: the scalar at the path,
//! or nothing (a missing name, an array or object there, a step that is not an object); with a
//! name twice in one object, the last one counts. A value that is not JSON yields nothing.

use super::{AttrPath, Scalar};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The scalars of `doc` at `paths` (one per path); all `None` if `doc` is not JSON.
pub fn extract(doc: &[u8], paths: &[&AttrPath]) -> Vec<Option<Scalar>> {
    let mut out = vec![None; paths.len()];
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| p.as_str().split('.').collect())
        .collect();
    let wanted: Vec<(usize, &[&str])> =
        split.iter().enumerate().map(|(i, s)| (i, &s[..])).collect();
    let mut de = serde_json::Deserializer::from_slice(doc);
    let node = Node {
        wanted: &wanted,
        out: &mut out,
    };
    if node.deserialize(&mut de).is_err() || de.end().is_err() {
        return vec![None; paths.len()];
    }
    out
}

/// A value in the document and the paths that continue into it (`(index, names left)`; an
/// empty list of names: the path ends here, at a scalar).
struct Node<'w, 'p, 'o> {
    wanted: &'w [(usize, &'p [&'p str])],
    out: &'o mut Vec<Option<Scalar>>,
}

impl Node<'_, '_, '_> {
    fn set(&mut self, s: Scalar) {
        for (i, rest) in self.wanted {
            if rest.is_empty() {
                self.out[*i] = Some(s.clone());
            }
        }
    }

    /// Not a scalar: paths ending here have none.
    fn clear(&mut self) {
        for (i, rest) in self.wanted {
            if rest.is_empty() {
                self.out[*i] = None;
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(mut self) -> Result<(), E> {
        self.set(Scalar::Null);
        Ok(())
    }

    fn visit_bool<E>(mut self, v: bool) -> Result<(), E> {
        self.set(Scalar::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<(), E> {
        self.set(Scalar::Number(v as f64));
        Ok(())
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<(), E> {
        self.set(Scalar::Number(v as f64));
        Ok(())
    }

    fn visit_f64<E>(mut self, v: f64) -> Result<(), E> {
        self.set(Scalar::Number(v));
        Ok(())
    }

    fn visit_str<E>(mut self, v: &str) -> Result<(), E> {
        self.set(Scalar::String(v.to_string()));
        Ok(())
    }

    fn visit_string<E>(mut self, v: String) -> Result<(), E> {
        self.set(Scalar::String(v));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.clear();
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.clear();
        while let Some(key) = map.next_key_seed(Key)? {
            let next: Vec<(usize, &[&str])> = self
                .wanted
                .iter()
                .filter(|(_, rest)| rest.first() == Some(&key.as_ref()))
                .map(|(i, rest)| (*i, &rest[1..]))
                .collect();
            if next.is_empty() {
                map.next_value::<IgnoredAny>()?;
            } else {
                map.next_value_seed(Node {
                    wanted: &next,
                    out: self.out,
                })?;
            }
        }
        Ok(())
    }
}

/// An object's key, borrowed from the document when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn paths(p: &[&str]) -> Vec<AttrPath> {
        p.iter().map(|p| AttrPath::parse(p).unwrap()).collect()
    }

    /// What the parsed document says.
    fn reference(doc: &[u8], paths: &[AttrPath]) -> Vec<Option<Scalar>> {
        match serde_json::from_slice::<Value>(doc) {
            Ok(v) => paths.iter().map(|p| p.scalar(&v)).collect(),
            Err(_) => vec![None; paths.len()],
        }
    }

    #[test]
    fn agrees_with_the_parsed_document() {
        let ps = paths(&["a", "b.c", "b", "d", "e.f.g", "s\"q", "x.y"]);
        let refs: Vec<&AttrPath> = ps.iter().collect();
        for doc in [
            json!({"a": 1, "b": {"c": "x", "z": [1, {"c": 2}]}, "d": null, "e": {"f": {"g": true}}}),
            json!({"a": [1], "b": "flat", "x": 3, "s\"q": 2.5}),
            json!({"a": {"b": 1}, "b": {"c": {"d": 1}}}),
            json!([1, 2]),
            json!("text"),
            json!({}),
        ] {
            let bytes = serde_json::to_vec(&doc).unwrap();
            assert_eq!(extract(&bytes, &refs), reference(&bytes, &ps), "{doc}");
        }
        for bad in [&b"not json"[..], b"{\"a\": 1", b"{\"a\": 1} trailing", b""] {
            assert_eq!(extract(bad, &refs), vec![None; ps.len()]);
        }
        // The last of a repeated name counts, as in the parsed document.
        let dup = br#"{"a": 1, "a": "two"}"#;
        assert_eq!(extract(dup, &refs)[0], Some(Scalar::String("two".into())));
        assert_eq!(extract(dup, &refs), reference(dup, &ps));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-c\"\\\\]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn extraction_is_the_parsed_documents_scalar(doc in json_value()) {
            let ps = paths(&["a", "b", "a.b", "a.c", "b.a.c", "ab"]);
            let refs: Vec<&AttrPath> = ps.iter().collect();
            let bytes = serde_json::to_vec(&doc).unwrap();
            prop_assert_eq!(extract(&bytes, &refs), reference(&bytes, &ps));
        }
    }
}
