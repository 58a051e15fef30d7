//! Secondary keys: the JSON scalars a document holds at an attribute, and their
//! order-preserving encoding, so that an index sorted by encoded bytes is sorted by value and
//! a range of values is a range of keys.
//!
//! Order across types (as MongoDB brackets them): null < false < true < numbers < strings.
//! Numbers compare exactly by value ([`Number`]: every `i64` and `u64` keeps its digits, and
//! `2 == 2.0`). Strings compare by their UTF-8 bytes, which is code point order.
//!
//! Encoding: one tag byte, then
//! - numbers: the nearest `f64`'s bits made to sort as unsigned big-endian integers (`-0.0`
//!   is `0.0`), then the exact integer rest past it, biased to sort, 2 bytes (`number.rs`);
//!   10 bytes;
//! - strings: the bytes with `0x00` written `0x00 0xFF`, ended by `0x00 0x01`.
//!
//! The number encoding is the second one ([`KEY_FORMAT`]): the first was the `f64` bits
//! alone, 8 bytes, and gave integers past 2^53 one key by the hundred.
//!
//! Every encoding ends where it says it does, so an index key `encode(sk) ++ pk` splits back
//! into both, and no encoding is a prefix of another.

use super::number::{Number, ENCODED_LEN};
use serde_json::Value;
use std::cmp::Ordering;

/// The index key format this code writes and reads: 2, exact numbers. An index whose
/// manifest record says less is rebuilt at open (`db/indexes.rs`).
pub const KEY_FORMAT: u8 = 2;

const TAG_NULL: u8 = 0x01;
const TAG_FALSE: u8 = 0x02;
const TAG_TRUE: u8 = 0x03;
const TAG_NUMBER: u8 = 0x04;
const TAG_STRING: u8 = 0x05;
/// One past the last tag: the end of the key space of secondary keys.
const TAG_END: u8 = 0x06;

/// A JSON scalar: what a secondary key is.
#[derive(Clone, Debug)]
pub enum Scalar {
    /// JSON `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exact as JSON gives it.
    Number(Number),
    /// A string.
    String(String),
}

/// The JSON types secondary keys fall into, in their order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScalarType {
    /// `null`.
    Null,
    /// Booleans.
    Bool,
    /// Numbers.
    Number,
    /// Strings.
    String,
}

impl Scalar {
    /// The scalar `v` is, if it is one (an array or object is not).
    pub fn from_json(v: &Value) -> Option<Scalar> {
        Some(match v {
            Value::Null => Scalar::Null,
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Number(n) => Scalar::Number(Number::from_json(n)?),
            Value::String(s) => Scalar::String(s.clone()),
            Value::Array(_) | Value::Object(_) => return None,
        })
    }

    /// The scalar as a JSON value (integral numbers within `i64`/`u64` as integers).
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(*b),
            Scalar::Number(n) => n.to_json(),
            Scalar::String(s) => Value::String(s.clone()),
        }
    }

    /// The JSON type, which orders scalars of different types.
    pub(crate) fn scalar_type(&self) -> ScalarType {
        match self {
            Scalar::Null => ScalarType::Null,
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::Number(_) => ScalarType::Number,
            Scalar::String(_) => ScalarType::String,
        }
    }

    /// Appends the order-preserving encoding.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Scalar::Null => out.push(TAG_NULL),
            Scalar::Bool(false) => out.push(TAG_FALSE),
            Scalar::Bool(true) => out.push(TAG_TRUE),
            Scalar::Number(n) => {
                out.push(TAG_NUMBER);
                n.encode(out);
            }
            Scalar::String(s) => {
                out.push(TAG_STRING);
                for &b in s.as_bytes() {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0x00, 0x01]);
            }
        }
    }

    /// The order-preserving encoding, in a vector of its own.
    pub(crate) fn encoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// The length of the encoded scalar at the start of `buf`, read without building it;
    /// `None` if it is malformed.
    pub(crate) fn encoded_len(buf: &[u8]) -> Option<usize> {
        match *buf.first()? {
            TAG_NULL | TAG_FALSE | TAG_TRUE => Some(1),
            TAG_NUMBER => (buf.len() > ENCODED_LEN).then_some(1 + ENCODED_LEN),
            TAG_STRING => {
                let mut i = 1;
                loop {
                    let at = i + buf.get(i..)?.iter().position(|&b| b == 0)?;
                    match *buf.get(at + 1)? {
                        0xFF => i = at + 2,
                        0x01 => return Some(at + 2),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }

    /// Decodes the scalar at the start of `buf` and says how many bytes it took; `None` if
    /// `buf` does not start with an encoded scalar. A query the index answers alone reads its
    /// secondary keys back this way (`-0.0` comes back as `0.0`, which compares equal).
    pub(crate) fn decode(buf: &[u8]) -> Option<(Scalar, usize)> {
        match *buf.first()? {
            TAG_NULL => Some((Scalar::Null, 1)),
            TAG_FALSE => Some((Scalar::Bool(false), 1)),
            TAG_TRUE => Some((Scalar::Bool(true), 1)),
            TAG_NUMBER => Some((Scalar::Number(Number::decode(&buf[1..])?), 1 + ENCODED_LEN)),
            TAG_STRING => {
                let mut s = Vec::new();
                let mut i = 1;
                loop {
                    match *buf.get(i)? {
                        0 => match *buf.get(i + 1)? {
                            0xFF => s.push(0),
                            0x01 => break,
                            _ => return None,
                        },
                        b => {
                            s.push(b);
                            i += 1;
                            continue;
                        }
                    }
                    i += 2;
                }
                Some((Scalar::String(String::from_utf8(s).ok()?), i + 2))
            }
            _ => None,
        }
    }
}

/// Same order as the encoding.
impl Ord for Scalar {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Scalar::Bool(a), Scalar::Bool(b)) => a.cmp(b),
            (Scalar::Number(a), Scalar::Number(b)) => a.cmp(b),
            (Scalar::String(a), Scalar::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.scalar_type().cmp(&other.scalar_type()),
        }
    }
}

impl PartialOrd for Scalar {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scalar {}

/// Where in the encoded key space the secondary keys of `t` lie: `[start, end)`.
pub fn type_range(t: ScalarType) -> (Vec<u8>, Vec<u8>) {
    let (start, end) = match t {
        ScalarType::Null => (TAG_NULL, TAG_FALSE),
        ScalarType::Bool => (TAG_FALSE, TAG_NUMBER),
        ScalarType::Number => (TAG_NUMBER, TAG_STRING),
        ScalarType::String => (TAG_STRING, TAG_END),
    };
    (vec![start], vec![end])
}

/// The smallest byte string above every string that starts with `prefix`; `None` if there is
/// none (the prefix is all `0xFF`).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// The encoded prefix every string starting with `prefix` has: the tag and the escaped bytes,
/// without the terminator.
pub fn string_prefix(prefix: &str) -> Vec<u8> {
    let mut out = Scalar::String(prefix.to_string()).encoded();
    out.truncate(out.len() - 2);
    out
}

/// The longest attribute path, in bytes (the device's protocol takes no longer one): it is
/// kept in the manifest and in every index entry's definition.
pub const MAX_ATTR_PATH_LEN: usize = 1024;

/// An attribute path: a top-level name or dotted names into embedded objects
/// (`user.id`), of at most [`MAX_ATTR_PATH_LEN`] bytes. A name cannot be empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrPath {
    text: String,
}

impl AttrPath {
    /// The path `text` names; the error says why it names none (empty, an empty name
    /// between dots, or too long).
    pub fn parse(text: &str) -> Result<AttrPath, String> {
        if text.len() > MAX_ATTR_PATH_LEN {
            return Err(format!(
                "attribute of {} bytes: at most {MAX_ATTR_PATH_LEN}",
                text.len()
            ));
        }
        if text.is_empty() || text.split('.').any(str::is_empty) {
            return Err(format!(
                "attribute {text:?}: names separated by dots, none of them empty"
            ));
        }
        Ok(AttrPath {
            text: text.to_string(),
        })
    }

    /// The path as written (`user.id`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this path in `doc`, if every step is an object holding the next name.
    pub fn lookup<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        self.text
            .split('.')
            .try_fold(doc, |v, name| v.as_object()?.get(name))
    }

    /// The secondary key of `doc` at this path: the scalar there, if it is one.
    pub fn scalar(&self, doc: &Value) -> Option<Scalar> {
        Scalar::from_json(self.lookup(doc)?)
    }
}

impl std::fmt::Display for AttrPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn num(x: f64) -> Scalar {
        Scalar::Number(Number::Float(x))
    }

    fn from(v: Value) -> Scalar {
        Scalar::from_json(&v).unwrap()
    }

    /// Issue 60's examples: integers past 2^53 that share an `f64` keep distinct keys, in
    /// order, and equal values of either form share one.
    #[test]
    fn integers_past_2_53_keep_their_keys_apart() {
        let (a, b) = (
            from(json!(9007199254740992u64)),
            from(json!(9007199254740993u64)),
        );
        assert_ne!(a, b);
        assert!(a.encoded() < b.encoded());
        let (c, d) = (
            from(json!(1234567890123456788i64)),
            from(json!(1234567890123456789i64)),
        );
        assert!(c < d && c.encoded() < d.encoded());
        let v = [
            from(json!(i64::MIN)),
            from(json!(-9007199254740993i64)),
            from(json!(-9007199254740992.0)),
            from(json!(-0.0)),
            from(json!(9007199254740992.0)),
            from(json!(9007199254740993u64)),
            from(json!(i64::MAX)),
            from(json!(9223372036854775808u64)),
            from(json!(u64::MAX)),
            from(json!(1e20)),
        ];
        for w in v.windows(2) {
            assert!(w[0] < w[1] && w[0].encoded() < w[1].encoded(), "{w:?}");
        }
        assert_eq!(from(json!(-0.0)).encoded(), from(json!(0)).encoded());
        assert_eq!(from(json!(2.0)).encoded(), from(json!(2)).encoded());
        assert_eq!(from(json!(2.0)), from(json!(2)));
        // Keys read back are the values written.
        for s in &v {
            assert_eq!(
                Scalar::decode(&s.encoded()).map(|d| d.0.to_json()),
                Some(s.to_json())
            );
        }
    }

    fn scalar() -> impl Strategy<Value = Scalar> {
        prop_oneof![
            Just(Scalar::Null),
            any::<bool>().prop_map(Scalar::Bool),
            any::<f64>()
                .prop_filter("JSON has no NaN or infinities", |x| x.is_finite())
                .prop_map(num),
            prop_oneof![-1e6f64..1e6, -10.0f64..10.0].prop_map(num),
            any::<i64>().prop_map(|i| Scalar::Number(Number::from(i))),
            any::<u64>().prop_map(|u| Scalar::Number(Number::from(u))),
            (-4i64..4).prop_map(|d| Scalar::Number(Number::from((1i64 << 53) + d))),
            ".{0,12}".prop_map(Scalar::String),
            proptest::collection::vec(prop_oneof![Just('\0'), Just('a'), Just('\u{ff}')], 0..6)
                .prop_map(|c| Scalar::String(c.into_iter().collect())),
        ]
    }

    proptest! {
        #[test]
        fn encoding_keeps_order_and_round_trips(a in scalar(), b in scalar(),
                                                 pa in proptest::collection::vec(any::<u8>(), 0..4),
                                                 pb in proptest::collection::vec(any::<u8>(), 0..4)) {
            let (ea, eb) = (a.encoded(), b.encoded());
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
            // With a pk behind each: ordered by scalar first, and both split back.
            let (ka, kb) = ([ea.clone(), pa.clone()].concat(), [eb.clone(), pb.clone()].concat());
            if a != b {
                prop_assert_eq!(a.cmp(&b), ka.cmp(&kb));
            }
            let (da, n) = Scalar::decode(&ka).unwrap();
            prop_assert_eq!(&da, &a);
            prop_assert_eq!(&ka[n..], &pa[..]);
            prop_assert_eq!(n, ea.len());
            prop_assert_eq!(Scalar::encoded_len(&ka), Some(n));
            // Cut short, neither reads past the end.
            prop_assert_eq!(Scalar::encoded_len(&ea[..n - 1]), None);
            prop_assert!(Scalar::decode(&ea[..n - 1]).is_none());
        }

        #[test]
        fn string_prefixes_bound_their_strings(p in ".{0,4}", s in ".{0,6}") {
            let enc = Scalar::String(s.clone()).encoded();
            let lo = string_prefix(&p);
            let inside = enc >= lo && prefix_successor(&lo).is_none_or(|hi| enc < hi);
            prop_assert_eq!(inside, s.starts_with(&p));
        }
    }

    #[test]
    fn types_sort_in_bracket_order() {
        let v = [
            Scalar::Null,
            Scalar::Bool(false),
            Scalar::Bool(true),
            num(f64::MIN),
            num(-1.5),
            num(-0.0),
            num(1e-300),
            num(2.0),
            Scalar::String(String::new()),
            Scalar::String("\0".into()),
            Scalar::String("a".into()),
            Scalar::String("a\0".into()),
            Scalar::String("ab".into()),
        ];
        for w in v.windows(2) {
            assert!(w[0].encoded() < w[1].encoded(), "{:?} {:?}", w[0], w[1]);
            assert!(w[0] < w[1]);
        }
        assert_eq!(num(0.0), num(-0.0));
        for t in [
            ScalarType::Null,
            ScalarType::Bool,
            ScalarType::Number,
            ScalarType::String,
        ] {
            let (lo, hi) = type_range(t);
            for s in &v {
                let e = s.encoded();
                assert_eq!(e >= lo && e < hi, s.scalar_type() == t, "{s:?} {t:?}");
            }
        }
    }

    #[test]
    fn bad_encodings_are_refused() {
        for bad in [
            &[][..],
            &[0x00],
            &[0x07],
            &[TAG_NUMBER, 1, 2],
            &[TAG_STRING, b'a'],
            &[TAG_STRING, 0, 7],
            &[TAG_STRING, 0xC3, 0, 1],
        ] {
            assert!(Scalar::decode(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn paths_reach_into_embedded_objects() {
        let doc = json!({"a": 1, "user": {"id": 2517, "tags": [1]}, "s": "x"});
        let p = |t| AttrPath::parse(t).unwrap();
        assert_eq!(p("a").scalar(&doc), Some(num(1.0)));
        assert_eq!(p("user.id").scalar(&doc), Some(num(2517.0)));
        assert_eq!(p("user.tags").scalar(&doc), None);
        assert_eq!(p("user").scalar(&doc), None);
        assert_eq!(p("user.id.x").scalar(&doc), None);
        assert_eq!(p("missing").scalar(&doc), None);
        assert_eq!(p("s").scalar(&json!([1])), None);
        for bad in ["", ".a", "a.", "a..b"] {
            assert!(AttrPath::parse(bad).is_err(), "{bad}");
        }
        // Bounded: a path is kept in the manifest (a 16 MiB one was taken before).
        let long = "a.".repeat(MAX_ATTR_PATH_LEN / 2);
        assert!(AttrPath::parse(&long[..MAX_ATTR_PATH_LEN - 1]).is_ok());
        assert!(AttrPath::parse(&format!("{long}b")).is_err());
    }
}
