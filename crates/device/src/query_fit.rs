//! Which queries are worth trying on the network thread. A query tried there under the
//! inline work limit that needs more stops and runs whole on a worker: the try was wasted
//! (up to the limit's work, ~50 us, and more on a thread that slept). Queries of one shape
//! (the same operation, attributes and bounds, whatever values the filter compares with)
//! mostly cost alike, so a shape that overflowed goes straight to a worker for its next
//! [`SKIP_AFTER_OVERFLOW`] queries and is tried again after. The memory is a table of a fixed
//! number of slots, whatever the clients send; shapes that share a slot only share a guess.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Slots of the table (a byte each).
const SLOTS: usize = 4096;
/// Queries of a shape sent straight to a worker after one of them overflowed.
pub const SKIP_AFTER_OVERFLOW: u8 = 8;

/// The slot a query's shape maps to, from [`QueryFit::consult`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(usize);

pub struct QueryFit {
    /// Per slot, the queries still to send straight to a worker.
    skip: Box<[AtomicU8]>,
}

impl Default for QueryFit {
    fn default() -> Self {
        QueryFit {
            skip: (0..SLOTS).map(|_| AtomicU8::new(0)).collect(),
        }
    }
}

impl QueryFit {
    /// The slot of the shape of query `body` in namespace `nsid`, and whether to try it
    /// on the network thread.
    pub fn consult(&self, nsid: u32, body: &[u8]) -> (Slot, bool) {
        let slot = (shape_hash(nsid, body) % SLOTS as u64) as usize;
        let left = &self.skip[slot];
        // Two threads racing here may both skip or both try: a guess either way.
        match left.load(Relaxed) {
            0 => (Slot(slot), true),
            n => {
                left.store(n - 1, Relaxed);
                (Slot(slot), false)
            }
        }
    }

    /// A query of `slot`'s shape needed more than the inline work.
    pub fn overflowed(&self, slot: Slot) {
        self.skip[slot.0].store(SKIP_AFTER_OVERFLOW, Relaxed);
    }
}

/// FNV-1a over the query's skeleton: its bytes, except that each scalar inside the value of
/// the top-level `"filter"` is a tag of its kind (the values compared with are parameters;
/// `k`, `by`, `op` and the operators are not). Never fails: bytes that are not JSON hash
/// as they come.
fn shape_hash(nsid: u32, body: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.mix(&nsid.to_le_bytes());
    let (mut i, mut depth, mut filter_at) = (0usize, 0usize, None::<usize>);
    // The last top-level key was "filter": its value is the filter.
    let mut filter_next = false;
    while i < body.len() {
        let c = body[i];
        let in_filter = filter_at.is_some_and(|d| depth > d);
        match c {
            b'"' => {
                let end = string_end(body, i + 1);
                let text = &body[(i + 1).min(end)..end];
                i = end + 1;
                let mut j = i;
                while j < body.len() && body[j].is_ascii_whitespace() {
                    j += 1;
                }
                let key = body.get(j) == Some(&b':');
                if key && depth == 1 {
                    filter_next = text == b"filter";
                }
                if key || !in_filter {
                    h.mix(if key { b"k" } else { b"s" });
                    h.mix(text);
                } else {
                    h.mix(b"S");
                }
            }
            b'-' | b'0'..=b'9' if in_filter => {
                while i < body.len()
                    && matches!(body[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                h.mix(b"N");
            }
            _ if c.is_ascii_whitespace() => i += 1,
            _ => {
                match c {
                    b'{' | b'[' => {
                        if filter_next && depth == 1 {
                            filter_at = Some(depth);
                        }
                        filter_next = false;
                        depth += 1;
                    }
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if filter_at.is_some_and(|d| depth <= d) {
                            filter_at = None;
                        }
                    }
                    b',' if depth == 1 => filter_next = false,
                    _ => {}
                }
                h.mix(&[c]);
                i += 1;
            }
        }
    }
    h.0
}

/// The index of the quote that ends the string starting at `from` (escapes skipped), or the
/// body's length if it never ends.
fn string_end(body: &[u8], mut from: usize) -> usize {
    while from < body.len() {
        match body[from] {
            b'\\' => from += 2,
            b'"' => return from,
            _ => from += 1,
        }
    }
    body.len()
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn mix(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so that "ab" + "c" and "a" + "bc" differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(q: &str) -> u64 {
        shape_hash(7, q.as_bytes())
    }

    #[test]
    fn the_values_a_filter_compares_with_are_not_the_shape() {
        let a = r#"{"op": "top", "filter": {"origin": "LGA"}, "by": "dep_delay", "k": 50}"#;
        let b = r#"{"op":"top","filter":{"origin":"JFK"},"by":"dep_delay","k":50}"#;
        assert_eq!(shape(a), shape(b));
        let r1 = r#"{"op": "find", "filter": {"d": {"$gte": 60, "$lt": 120}}}"#;
        let r2 = r#"{"op": "find", "filter": {"d": {"$gte": -3.5e2, "$lt": 7}}}"#;
        assert_eq!(shape(r1), shape(r2));
    }

    #[test]
    fn operations_attributes_bounds_and_namespaces_are() {
        let base = r#"{"op": "top", "filter": {"origin": "LGA"}, "by": "dep_delay", "k": 50}"#;
        for other in [
            r#"{"op": "find", "filter": {"origin": "LGA"}, "by": "dep_delay", "k": 50}"#,
            r#"{"op": "top", "filter": {"dest": "LGA"}, "by": "dep_delay", "k": 50}"#,
            r#"{"op": "top", "filter": {"origin": "LGA"}, "by": "arr_delay", "k": 50}"#,
            r#"{"op": "top", "filter": {"origin": "LGA"}, "by": "dep_delay", "k": 5000}"#,
            r#"{"op": "top", "filter": {"origin": {"$gte": "LGA"}}, "by": "dep_delay", "k": 50}"#,
        ] {
            assert_ne!(shape(base), shape(other), "{other}");
        }
        assert_ne!(
            shape_hash(1, base.as_bytes()),
            shape_hash(2, base.as_bytes())
        );
    }

    #[test]
    fn an_overflow_sends_the_next_queries_of_its_shape_to_a_worker_then_tries_again() {
        let fit = QueryFit::default();
        let q = br#"{"op": "aggregate", "filter": {"carrier": "DL"}, "fn": "count"}"#;
        let (slot, try_it) = fit.consult(3, q);
        assert!(try_it);
        fit.overflowed(slot);
        for _ in 0..SKIP_AFTER_OVERFLOW {
            assert_eq!(fit.consult(3, q), (slot, false));
        }
        assert_eq!(fit.consult(3, q), (slot, true));
    }

    #[test]
    fn any_bytes_hash_without_a_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let alphabet = b"{}[]\":,\\ -0aef";
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            shape_hash(0, &bytes);
        }
        shape_hash(0, br#"{"filter": "#);
        shape_hash(0, br#"}}}]]"filter"{"#);
    }
}
