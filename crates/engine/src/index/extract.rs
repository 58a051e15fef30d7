//! The secondary keys of a JSON document at a few attribute paths, in one pass over its bytes
//! without building the document: every other value is checked and skipped as it is read. The
//! write path runs this for every put of an indexed namespace, where building a
//! `serde_json::Value` of a 1 KiB document (a map, a string per field) cost more than the put
//! itself, and where serde's general-purpose skipping still cost 2 us.
//!
//! Semantics are those of `AttrPath::scalar` on the document as `serde_json` parses it: the
//! scalar at the path, or nothing (a missing name, an array or object there, a step that is not
//! an object); with a name twice in one object, the last one counts. A value `serde_json`
//! refuses (not UTF-8, a control character or a lone surrogate in a string, a number out of
//! range, nesting 128 deep, anything after the value) yields nothing at any path. Numbers the
//! paths name are converted by `serde_json` itself, so both sides of a comparison agree.

use super::number::Number;
use super::scalar::{AttrPath, Scalar};
use std::borrow::Cow;

/// What a document holds at a path: a scalar, or an array or object.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// A scalar (`null` included).
    Scalar(Scalar),
    /// An array or an object (its content is skipped, not built).
    Composite,
}

impl AttrValue {
    /// The scalar, if it is one.
    pub fn scalar(&self) -> Option<&Scalar> {
        match self {
            AttrValue::Scalar(s) => Some(s),
            AttrValue::Composite => None,
        }
    }
}

/// Paths split into their names once, for the scans of many documents.
#[derive(Clone, Debug)]
pub struct PathSet {
    paths: Vec<AttrPath>,
    names: Vec<Vec<String>>,
}

impl PathSet {
    /// The names of each of `paths`.
    pub fn new(paths: &[&AttrPath]) -> PathSet {
        PathSet {
            paths: paths.iter().map(|&p| p.clone()).collect(),
            names: paths
                .iter()
                .map(|p| p.as_str().split('.').map(str::to_string).collect())
                .collect(),
        }
    }

    /// What a document already parsed holds at each path: what [`attrs`](Self::attrs)
    /// reads off its bytes.
    pub fn attrs_of(&self, doc: &serde_json::Value) -> Vec<Option<AttrValue>> {
        self.paths
            .iter()
            .map(|p| {
                p.lookup(doc).map(|v| match Scalar::from_json(v) {
                    Some(s) => AttrValue::Scalar(s),
                    None => AttrValue::Composite,
                })
            })
            .collect()
    }

    /// Paths in the set.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// What `doc` holds at each path (`None`: missing, or a step that is not an object), in
    /// one pass that builds no other value; `None` if `doc` is not JSON. The same as
    /// `AttrPath::lookup` on the document `serde_json` parses, told as [`AttrValue`].
    pub fn attrs(&self, doc: &[u8]) -> Option<Vec<Option<AttrValue>>> {
        let hits = scan(doc, &self.names, false)?;
        Some(
            hits.into_iter()
                .map(|h| match h {
                    Some(Hit::Scalar(s)) => Some(AttrValue::Scalar(s)),
                    Some(Hit::Composite) => Some(AttrValue::Composite),
                    _ => None,
                })
                .collect(),
        )
    }
}

/// The scalars of `doc` at `paths` (one per path); all `None` if `doc` is not JSON.
pub fn extract(doc: &[u8], paths: &[&AttrPath]) -> Vec<Option<Scalar>> {
    match PathSet::new(paths).attrs(doc) {
        Some(hits) => hits
            .into_iter()
            .map(|h| match h {
                Some(AttrValue::Scalar(s)) => Some(s),
                _ => None,
            })
            .collect(),
        None => vec![None; paths.len()],
    }
}

/// Where the values at `paths` lie in `doc` (any JSON value: a scalar, an array, an object),
/// one per path; `None` if `doc` is not JSON. Each span parses alone as the value the parsed
/// document holds there.
pub fn locate(doc: &[u8], paths: &[&AttrPath]) -> Option<Vec<Option<std::ops::Range<usize>>>> {
    let split: Vec<Vec<&str>> = paths
        .iter()
        .map(|p| p.as_str().split('.').collect())
        .collect();
    let hits = scan(doc, &split, true)?;
    Some(
        hits.into_iter()
            .map(|h| match h {
                Some(Hit::Span(a, b)) => Some(a..b),
                _ => None,
            })
            .collect(),
    )
}

/// What a path found: its scalar, an array or object, or (locating) where its value lies.
#[derive(Clone)]
enum Hit {
    Scalar(Scalar),
    Composite,
    Span(usize, usize),
}

fn scan<S: AsRef<str>>(doc: &[u8], split: &[Vec<S>], spans: bool) -> Option<Vec<Option<Hit>>> {
    let mut out = vec![None; split.len()];
    let mut near: [(usize, &[S]); NEAR] = [(0, &[]); NEAR];
    let far: Vec<(usize, &[S])>;
    let wanted = match split.len() <= NEAR {
        true => {
            for (i, s) in split.iter().enumerate() {
                near[i] = (i, &s[..]);
            }
            &near[..split.len()]
        }
        false => {
            far = split.iter().enumerate().map(|(i, s)| (i, &s[..])).collect();
            &far[..]
        }
    };
    let mut s = Scanner {
        buf: doc,
        pos: 0,
        depth: 0,
        spans,
    };
    // JSON text is UTF-8: checked once here, so strings are slices of it.
    std::str::from_utf8(doc).ok()?;
    s.ws();
    s.value(wanted, &mut out)?;
    s.ws();
    (s.pos == doc.len()).then_some(out)
}

/// Where the digits from `p` end.
#[inline]
fn digits(buf: &[u8], mut p: usize) -> usize {
    while let Some(b'0'..=b'9') = buf.get(p) {
        p += 1;
    }
    p
}

/// Where the digits from `p` end, if there is one.
#[inline]
fn some_digits(buf: &[u8], p: usize) -> Option<usize> {
    let end = digits(buf, p);
    (end > p).then_some(end)
}

/// Where the string bytes from `p` that need no look (not a quote, a backslash or a control
/// character) end, read eight at a time.
#[inline]
fn skip_plain(buf: &[u8], mut p: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The lowest flagged byte of each is exact (borrows only flag bytes above it).
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    while let Some(chunk) = buf.get(p..p + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let special = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGHS);
        if special != 0 {
            return p + special.trailing_zeros() as usize / 8;
        }
        p += 8;
    }
    p
}

/// The name a path's rest continues with (`None`: it ends here).
fn first_name<S: AsRef<str>>(rest: &[S]) -> Option<&[u8]> {
    rest.first().map(|x| x.as_ref().as_bytes())
}

/// Whether two member names are the same bytes: names are short, so a byte loop after the
/// length and first byte, with no call.
#[inline]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.first() == b.first() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Paths continuing into one member that are kept on the stack (more go to the heap).
const NEAR: usize = 4;

/// Arrays and objects nested this deep are refused, as `serde_json` refuses them.
const MAX_DEPTH: usize = 128;

/// A number this long may overflow an f64 without an exponent; such numbers, and those
/// with one, are converted to learn whether `serde_json` takes them.
const LONG_NUMBER: usize = 300;

struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    depth: usize,
    /// Locating: paths get where their values lie, and no scalar is built.
    spans: bool,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.buf[self.pos..]
            .starts_with(w)
            .then(|| self.pos += w.len())
    }

    /// One value; `wanted` holds the paths that continue into it (with no names left: the
    /// paths that end here, at whatever it is).
    fn value<S: AsRef<str>>(
        &mut self,
        wanted: &[(usize, &[S])],
        out: &mut [Option<Hit>],
    ) -> Option<()> {
        let start = self.pos;
        let ends_here = !self.spans && wanted.iter().any(|(_, rest)| rest.is_empty());
        let scalar = match self.peek()? {
            b'{' => {
                self.object(wanted, out)?;
                Some(Hit::Composite)
            }
            b'[' => {
                self.container(b']', |s| s.skip())?;
                Some(Hit::Composite)
            }
            b'"' => {
                let raw = self.raw_string()?;
                match ends_here {
                    true => Some(Hit::Scalar(Scalar::String(self.text(raw)?.into_owned()))),
                    false => None,
                }
            }
            b't' => {
                self.word(b"true")?;
                Some(Hit::Scalar(Scalar::Bool(true)))
            }
            b'f' => {
                self.word(b"false")?;
                Some(Hit::Scalar(Scalar::Bool(false)))
            }
            b'n' => {
                self.word(b"null")?;
                Some(Hit::Scalar(Scalar::Null))
            }
            b'-' | b'0'..=b'9' => {
                let (start, check) = self.number()?;
                if ends_here || check {
                    Some(Hit::Scalar(Scalar::Number(self.parsed_number(start)?)))
                } else {
                    None
                }
            }
            _ => return None,
        };
        for (i, rest) in wanted {
            if rest.is_empty() {
                out[*i] = match self.spans {
                    true => Some(Hit::Span(start, self.pos)),
                    false => scalar.clone(),
                };
            }
        }
        Some(())
    }

    /// An array or object (at its opening bracket) up to `close`: `item` reads each element
    /// or member, the walk the commas between them.
    fn container(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.depth += 1;
        self.pos += 1;
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.ws();
        if self.peek()? != close {
            loop {
                self.ws();
                item(self)?;
                self.ws();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b if b == close => break,
                    _ => return None,
                }
            }
        }
        self.pos += 1;
        self.depth -= 1;
        Some(())
    }

    fn object<S: AsRef<str>>(
        &mut self,
        wanted: &[(usize, &[S])],
        out: &mut [Option<Hit>],
    ) -> Option<()> {
        if wanted.is_empty() {
            return self.skip();
        }
        // The name each path continues with (`None`: the path ends at this object), taken
        // once an object and not once a member: this runs for every member of every record
        // a query reads.
        let mut near_names: [Option<&[u8]>; NEAR] = [None; NEAR];
        let far_names: Vec<Option<&[u8]>>;
        let names: &[Option<&[u8]>] = match wanted.len() <= NEAR {
            true => {
                for (n, (_, rest)) in near_names.iter_mut().zip(wanted) {
                    *n = first_name(rest);
                }
                &near_names[..wanted.len()]
            }
            false => {
                far_names = wanted.iter().map(|(_, rest)| first_name(rest)).collect();
                &far_names
            }
        };
        self.container(b'}', |s| {
            let raw = s.member_name()?;
            // Names are compared as they lie unless they hold escapes.
            let buf = s.buf;
            let unescaped: String;
            let name: &[u8] = match raw.2 {
                false => &buf[raw.0..raw.1],
                true => {
                    unescaped = s.text(raw)?.into_owned();
                    unescaped.as_bytes()
                }
            };
            let into = |n: &Option<&[u8]>| n.is_some_and(|n| same_name(n, name));
            // Most members of a record are wanted by no path: skipped with no bookkeeping.
            if !names.iter().any(into) {
                return s.skip();
            }
            // The paths continuing into this member: a few at most, kept on the stack.
            let mut near: [(usize, &[S]); NEAR] = [(0, &[]); NEAR];
            let mut far: Vec<(usize, &[S])> = Vec::new();
            let mut n = 0;
            for ((i, rest), _) in wanted.iter().zip(names).filter(|(_, m)| into(m)) {
                match n < NEAR {
                    true => near[n] = (*i, &rest[1..]),
                    false => far.push((*i, &rest[1..])),
                }
                n += 1;
            }
            let next = match n <= NEAR {
                true => &near[..n],
                false => {
                    far.splice(0..0, near);
                    &far[..]
                }
            };
            // A repeated name replaces the earlier value whole.
            for (i, _) in next {
                out[*i] = None;
            }
            s.value(next, out)
        })
    }

    /// One value no path continues into: checked as [`Scanner::value`] checks it, nothing
    /// kept. Most members of the records a query reads are this, so it carries none of the
    /// paths' bookkeeping. Strings and numbers are read in place; the rest in a call.
    #[inline(always)]
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(drop),
            b'-' | b'0'..=b'9' => {
                let (start, check) = self.number()?;
                if check {
                    self.parsed_number(start)?;
                }
                Some(())
            }
            _ => self.skip_other(),
        }
    }

    /// [`Scanner::skip`] of a value that is not a string or a number.
    #[inline(never)]
    fn skip_other(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.container(b'}', |s| {
                s.member_name()?;
                s.skip()
            }),
            b'[' => self.container(b']', |s| s.skip()),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => None,
        }
    }

    /// A member's name (at its opening quote) and the colon after it, up to its value:
    /// where the name lies, and whether it holds escapes.
    #[inline(always)]
    fn member_name(&mut self) -> Option<(usize, usize, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let raw = self.raw_string()?;
        self.ws();
        if self.peek()? != b':' {
            return None;
        }
        self.pos += 1;
        self.ws();
        Some(raw)
    }

    /// The number `number` read from `start`, parsed as the document's parser parses it
    /// (`None` where it refuses it), so an i64 or u64 keeps every digit and both sides of a
    /// comparison agree to the bit.
    fn parsed_number(&self, start: usize) -> Option<Number> {
        let n: serde_json::Number = serde_json::from_slice(&self.buf[start..self.pos]).ok()?;
        Number::from_json(&n)
    }

    /// A number's start, and whether it needs converting to be known valid (in range).
    #[inline(always)]
    fn number(&mut self) -> Option<(usize, bool)> {
        let buf = self.buf;
        let start = self.pos;
        let mut p = start;
        if buf.get(p) == Some(&b'-') {
            p += 1;
        }
        match buf.get(p)? {
            b'0' => p += 1,
            b'1'..=b'9' => p = digits(buf, p + 1),
            _ => return None,
        }
        if buf.get(p) == Some(&b'.') {
            p = some_digits(buf, p + 1)?;
        }
        let mut check = false;
        if let Some(b'e' | b'E') = buf.get(p) {
            p += 1;
            if let Some(b'+' | b'-') = buf.get(p) {
                p += 1;
            }
            p = some_digits(buf, p)?;
            check = true;
        }
        self.pos = p;
        Some((start, check || p - start > LONG_NUMBER))
    }

    /// A string (at its opening quote), checked: where its content lies, and whether it
    /// holds escapes.
    #[inline(always)]
    fn raw_string(&mut self) -> Option<(usize, usize, bool)> {
        let buf = self.buf;
        let start = self.pos + 1;
        let mut p = start;
        let mut escaped = false;
        loop {
            p = skip_plain(buf, p);
            match *buf.get(p)? {
                b'"' => {
                    self.pos = p + 1;
                    return Some((start, p, escaped));
                }
                b'\\' => {
                    self.pos = p + 1;
                    self.escape()?;
                    p = self.pos;
                    escaped = true;
                }
                0..=0x1F => return None,
                _ => p += 1,
            }
        }
    }

    /// The text of a string `raw_string` checked.
    fn text(&self, (start, end, escaped): (usize, usize, bool)) -> Option<Cow<'a, str>> {
        let raw = std::str::from_utf8(&self.buf[start..end]).ok()?;
        if !escaped {
            return Some(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let mut s = Scanner {
            buf: self.buf,
            pos: start,
            depth: 0,
            spans: false,
        };
        while s.pos < end {
            match s.buf[s.pos] {
                b'\\' => {
                    s.pos += 1;
                    out.push(s.escape()?);
                }
                _ => {
                    let at = s.pos;
                    while s.pos < end && s.buf[s.pos] != b'\\' {
                        s.pos += 1;
                    }
                    out.push_str(std::str::from_utf8(&s.buf[at..s.pos]).ok()?);
                }
            }
        }
        Some(Cow::Owned(out))
    }

    /// The character of an escape (after its backslash).
    fn escape(&mut self) -> Option<char> {
        let b = self.peek()?;
        self.pos += 1;
        Some(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let n = self.hex4()?;
                match n {
                    // A lone low surrogate.
                    0xDC00..=0xDFFF => return None,
                    0xD800..=0xDBFF => {
                        self.word(b"\\u")?;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        char::from_u32(0x10000 + ((n - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    n => char::from_u32(n)?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.buf.get(self.pos..self.pos + 4)?;
        let mut n = 0u32;
        for &c in h {
            n = n * 16 + (c as char).to_digit(16)?;
        }
        self.pos += 4;
        Some(n)
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
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-3i64..3).prop_map(|d| Value::from((1i64 << 53) + d)),
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

    /// Where the scanner must refuse (or take) exactly what `serde_json` does.
    #[test]
    fn agrees_at_the_edges_of_json() {
        let ps = paths(&["a", "a.b", "k\"ey", "\u{e9}", "n"]);
        let refs: Vec<&AttrPath> = ps.iter().collect();
        let mut docs: Vec<Vec<u8>> = [
            r#"{"a": "\u00e9\ud83d\ude00\n\/\b\f\t\r\\\""}"#,
            r#"{"a": "\ud83d"}"#,
            r#"{"a": "\ude00"}"#,
            r#"{"a": "\ud83d\u0041"}"#,
            r#"{"a": "\ud83dx"}"#,
            r#"{"x": "\ud83d", "a": 1}"#,
            r#"{"a": "\x"}"#,
            r#"{"a": "\u12"}"#,
            "{\"a\": \"tab\there\"}",
            r#"{"k\"ey": 1, "\u00e9": 2, "\u00E9": 3}"#,
            r#"{"a": 1e400}"#,
            r#"{"x": 1e400, "a": 1}"#,
            r#"{"x": -1e-400, "a": 1}"#,
            r#"{"a": -0, "n": 1E+2}"#,
            r#"{"a": 01}"#,
            r#"{"a": 1.}"#,
            r#"{"a": .5}"#,
            r#"{"a": -}"#,
            r#"{"a": 1e}"#,
            r#"{"a": +1}"#,
            r#"{"a": 18446744073709551616, "n": -9223372036854775809}"#,
            r#"{"a": 9007199254740993, "n": 18446744073709551615}"#,
            r#"{"a": -9223372036854775808, "n": -0.0}"#,
            r#"{"a": 999999999999999999, "n": -999999999999999999}"#,
            r#"{"a": 1000000000000000000, "n": -1000000000000000000}"#,
            r#"{"a": 0, "n": -7}"#,
            r#"{"a": [1, ], "n": 1}"#,
            r#"{"a": 1, }"#,
            r#"{"a" 1}"#,
            r#"{a: 1}"#,
            r#"{"a": {"b": 1}, "a": {"c": 2}}"#,
            r#"{"a": {"b": 1}, "a": 7}"#,
            r#"{"a": 7, "a": {"b": 1}}"#,
            r#"{"a": tru}"#,
            r#"{"a": nul, "n": null}"#,
            " \n {\"a\" : [ ] , \"n\" :{ } } \t",
            "{\"a\": 1}\u{feff}",
            "\u{feff}{\"a\": 1}",
            "[]",
            "",
            "  ",
        ]
        .iter()
        .map(|d| d.as_bytes().to_vec())
        .collect();
        docs.push(format!("{{\"a\": 1{}}}", "0".repeat(400)).into_bytes());
        docs.push(format!("{{\"n\": 1, \"x\": 1{}}}", "0".repeat(400)).into_bytes());
        docs.push(b"{\"a\": \"\xff\"}".to_vec());
        docs.push(b"{\"x\": \"\xc3\", \"a\": 1}".to_vec());
        for depth in [120, 126, 127, 128, 129, 200] {
            let nested = format!(
                "{{\"a\": 1, \"x\": {}{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            docs.push(nested.into_bytes());
            let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
            docs.push(objects.into_bytes());
        }
        let mut valid = 0;
        for doc in &docs {
            let r = reference(doc, &ps);
            valid += usize::from(r.iter().any(Option::is_some));
            // Debug too: equal numbers of other kinds (`0` and `-0.0`) must not pass.
            let got = extract(doc, &refs);
            assert_eq!(got, r, "{}", String::from_utf8_lossy(doc));
            assert_eq!(format!("{got:?}"), format!("{r:?}"));
        }
        // Both sides of each edge are there.
        assert!(
            valid >= 8 && valid < docs.len() - 15,
            "{valid} of {}",
            docs.len()
        );
        let deep = |d: usize| format!("{{\"a\": 1, \"x\": {}{}}}", "[".repeat(d), "]".repeat(d));
        assert!(extract(deep(126).as_bytes(), &refs)[0].is_some());
        assert!(extract(deep(129).as_bytes(), &refs)[0].is_none());
    }

    proptest! {
        #[test]
        fn extraction_is_the_parsed_documents_scalar(doc in json_value()) {
            let ps = paths(&["a", "b", "a.b", "a.c", "b.a.c", "ab"]);
            let refs: Vec<&AttrPath> = ps.iter().collect();
            let bytes = serde_json::to_vec(&doc).unwrap();
            let got = extract(&bytes, &refs);
            prop_assert_eq!(&got, &reference(&bytes, &ps));
            // The keys a write derives are the query side's to the bit (an i64 or u64 past
            // 2^53 included).
            let keys = |v: &[Option<Scalar>]| -> Vec<Option<Vec<u8>>> {
                v.iter().map(|s| s.as_ref().map(Scalar::encoded)).collect()
            };
            prop_assert_eq!(keys(&got), keys(&reference(&bytes, &ps)));
        }

        /// Each located value, parsed alone, is the value the parsed document holds there.
        #[test]
        fn located_values_are_the_parsed_documents(doc in json_value()) {
            let ps = paths(&["a", "b", "a.b", "a.c", "b.a.c", "ab"]);
            let refs: Vec<&AttrPath> = ps.iter().collect();
            let bytes = serde_json::to_vec_pretty(&doc).unwrap();
            // Against the document as parsed from these bytes (a float's text need not
            // parse back to the very number that was printed).
            let parsed: Value = serde_json::from_slice(&bytes).unwrap();
            let spans = locate(&bytes, &refs).unwrap();
            for (p, span) in ps.iter().zip(spans) {
                let got = span.map(|r| serde_json::from_slice::<Value>(&bytes[r]).unwrap());
                prop_assert_eq!(got.as_ref(), p.lookup(&parsed));
            }
        }

        /// The lazy read of any paths (scalars, arrays and objects, missing) is what the
        /// document `serde_json` builds holds there; not JSON to one, not JSON to the other.
        #[test]
        fn attrs_are_the_parsed_documents(doc in json_value(),
                                          names in proptest::collection::vec(
                                              proptest::collection::vec("[a-c]{1,2}", 1..4), 1..6),
                                          damage in proptest::option::of((any::<usize>(), any::<u8>()))) {
            let ps: Vec<AttrPath> = names
                .iter()
                .map(|n| AttrPath::parse(&n.join(".")).unwrap())
                .collect();
            let refs: Vec<&AttrPath> = ps.iter().collect();
            let set = PathSet::new(&refs);
            let mut bytes = serde_json::to_vec(&doc).unwrap();
            if let Some((at, byte)) = damage {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let want = serde_json::from_slice::<Value>(&bytes).ok().map(|v| set.attrs_of(&v));
            prop_assert_eq!(set.attrs(&bytes), want);
        }

        /// A document with a byte changed, cut or inserted: valid or not, the same answer.
        #[test]
        fn damaged_documents_agree_too(doc in json_value(), at in any::<usize>(),
                                       byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b'{'),
                                           Just(b'}'), Just(b','), Just(b':'), Just(b'1'),
                                           Just(b'e'), Just(b' '), Just(0x01u8), any::<u8>()],
                                       how in 0..3u8) {
            let ps = paths(&["a", "b", "a.b", "a.c", "b.a.c", "ab"]);
            let refs: Vec<&AttrPath> = ps.iter().collect();
            let mut bytes = serde_json::to_vec(&doc).unwrap();
            let at = at % (bytes.len() + 1);
            match how {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.truncate(at),
                _ => bytes.insert(at, byte),
            }
            prop_assert_eq!(extract(&bytes, &refs), reference(&bytes, &ps));
            let parsed = serde_json::from_slice::<Value>(&bytes).ok();
            prop_assert_eq!(locate(&bytes, &refs).is_some(), parsed.is_some());
        }
    }
}
