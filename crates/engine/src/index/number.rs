//! JSON numbers compared exactly: an integer JSON gives exactly (any `i64` or `u64`) keeps
//! every digit, a decimal is its `f64`, and the two compare by value (`2 == 2.0`,
//! `9007199254740993 > 9007199254740992.0`).
//!
//! A number's exact value `v` is split in two: `head`, the `f64` nearest to it (`-0.0` made
//! `0.0`), and `offset = v - head`, an exact integer. Rounding to nearest is monotone, so `v`
//! orders as `(head, offset)` does lexicographically: the heads first, and where two values
//! round to one head (integers past 2^53) their offsets. A decimal's offset is 0; an
//! integer's is at most half a unit in the last place of its head, 2^10 below 2^64, so it
//! fits an `i16`. The index key (`Scalar::encode`) is these two parts, each made to sort as
//! unsigned big-endian bytes.

use serde_json::Value;
use std::cmp::Ordering;

/// Bytes of an encoded number (after its tag): the head's 8, the offset's 2.
pub(super) const ENCODED_LEN: usize = 10;

/// A JSON number, exact as JSON gives it.
#[derive(Clone, Copy, Debug)]
pub enum Number {
    /// An integer that fits an `i64`.
    Int(i64),
    /// An integer above `i64::MAX` that fits a `u64`.
    UInt(u64),
    /// Any other number (a decimal, an exponent, an integer past `u64`): its `f64`.
    Float(f64),
}

impl Number {
    /// The number `n` holds, exact when it is an `i64` or `u64`.
    pub fn from_json(n: &serde_json::Number) -> Option<Number> {
        if let Some(i) = n.as_i64() {
            Some(Number::Int(i))
        } else if let Some(u) = n.as_u64() {
            Some(Number::UInt(u))
        } else {
            n.as_f64().filter(|x| x.is_finite()).map(Number::Float)
        }
    }

    /// The integer, if the number is one `i128` holds exactly (decimals too when integral).
    pub fn as_i128(self) -> Option<i128> {
        match self {
            Number::Int(i) => Some(i128::from(i)),
            Number::UInt(u) => Some(i128::from(u)),
            // Within ±2^100 an integral f64 converts exactly.
            Number::Float(x) if x.fract() == 0.0 && x.abs() < 1e30 => Some(x as i128),
            Number::Float(_) => None,
        }
    }

    /// The nearest `f64` (what sums and means of decimals use).
    pub fn as_f64(self) -> f64 {
        self.parts().0
    }

    /// The value's nearest `f64` and the exact rest (see the module's comment).
    fn parts(self) -> (f64, i16) {
        let (head, exact) = match self {
            Number::Int(i) => (i as f64, i128::from(i)),
            Number::UInt(u) => (u as f64, i128::from(u)),
            Number::Float(x) => return (if x == 0.0 { 0.0 } else { x }, 0),
        };
        // `head` is integral and within ±2^64: the conversion back is exact, and the
        // offset is at most 2^10 (half the spacing of f64s just below 2^64).
        let offset = exact - head as i128;
        (head, offset as i16)
    }

    /// The number as JSON: an integer where it is one that fits `i64` or `u64` (whether
    /// written `2` or `2.0`), else the `f64`. Equal numbers print the same.
    pub fn to_json(self) -> Value {
        let int = self.as_i128();
        if let Some(v) = int.and_then(|i| i64::try_from(i).ok()) {
            return Value::from(v);
        }
        if let Some(v) = int.and_then(|i| u64::try_from(i).ok()) {
            return Value::from(v);
        }
        serde_json::Number::from_f64(self.as_f64()).map_or(Value::Null, Value::Number)
    }

    /// Appends the order-preserving encoding ([`ENCODED_LEN`] bytes).
    pub(super) fn encode(self, out: &mut Vec<u8>) {
        let (head, offset) = self.parts();
        out.extend_from_slice(&sortable_bits(head).to_be_bytes());
        out.extend_from_slice(&((offset as u16) ^ 0x8000).to_be_bytes());
    }

    /// The number [`encode`](Self::encode) wrote at the start of `buf`; `None` if malformed
    /// (too short, not finite, or an offset no number has).
    pub(super) fn decode(buf: &[u8]) -> Option<Number> {
        let bits = u64::from_be_bytes(buf.get(..8)?.try_into().ok()?);
        let offset = (u16::from_be_bytes(buf.get(8..10)?.try_into().ok()?) ^ 0x8000) as i16;
        let head = f64_from_sortable(bits);
        if !head.is_finite() {
            return None;
        }
        let n = match Number::Float(head).as_i128() {
            Some(i) => {
                let v = i + i128::from(offset);
                match (i64::try_from(v), u64::try_from(v)) {
                    (Ok(i), _) => Number::Int(i),
                    (_, Ok(u)) => Number::UInt(u),
                    _ if offset == 0 => Number::Float(head),
                    _ => return None,
                }
            }
            None if offset == 0 => Number::Float(head),
            None => return None,
        };
        // Only the parts the number has are its encoding (a decimal has offset 0, and an
        // integer the one its rounding leaves).
        (n.parts() == (head, offset)).then_some(n)
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Self) -> Ordering {
        let ((a, x), (b, y)) = (self.parts(), other.parts());
        sortable_bits(a).cmp(&sortable_bits(b)).then(x.cmp(&y))
    }
}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Number {}

impl From<f64> for Number {
    fn from(x: f64) -> Number {
        Number::Float(x)
    }
}

impl From<i64> for Number {
    fn from(i: i64) -> Number {
        Number::Int(i)
    }
}

impl From<u64> for Number {
    fn from(u: u64) -> Number {
        match i64::try_from(u) {
            Ok(i) => Number::Int(i),
            Err(_) => Number::UInt(u),
        }
    }
}

/// The `f64`'s bits made to sort as an unsigned integer sorts (sign bit flipped for
/// positives, all bits flipped for negatives); `-0.0` is `0.0`.
fn sortable_bits(x: f64) -> u64 {
    let x = if x == 0.0 { 0.0 } else { x };
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

fn f64_from_sortable(bits: u64) -> f64 {
    f64::from_bits(if bits >> 63 == 1 {
        bits ^ (1 << 63)
    } else {
        !bits
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P53: i64 = 1 << 53;

    fn enc(n: Number) -> Vec<u8> {
        let mut out = Vec::new();
        n.encode(&mut out);
        out
    }

    /// Exact values in increasing order, ints and floats interleaved at and past 2^53 and
    /// at the ends of i64 and u64: both the order and the keys must say so.
    #[test]
    fn order_is_exact_across_ints_and_floats() {
        use Number::*;
        let v = [
            Float(-1e300),
            Int(i64::MIN),
            Int(i64::MIN + 1),
            Float(-9_007_199_254_740_994.0),
            Int(-P53 - 1),
            Int(-P53),
            Float(-2.5),
            Int(-2),
            Float(-1e-300),
            Int(0),
            Float(1e-300),
            Int(2),
            Float(2.5),
            Int(3),
            Int(P53 - 1),
            Float(9_007_199_254_740_992.0),
            Int(P53 + 1),
            Int(P53 + 2),
            Float(9_007_199_254_740_996.0),
            Int(1_234_567_890_123_456_788),
            Int(1_234_567_890_123_456_789),
            Int(i64::MAX - 1),
            Int(i64::MAX),
            Float(9_223_372_036_854_775_808.0),
            UInt(9_223_372_036_854_775_809),
            UInt(u64::MAX - 1),
            UInt(u64::MAX),
            Float(18_446_744_073_709_551_616.0),
            Float(1e300),
        ];
        for w in v.windows(2) {
            assert!(w[0] < w[1], "{:?} {:?}", w[0], w[1]);
            assert!(enc(w[0]) < enc(w[1]), "{:?} {:?}", w[0], w[1]);
        }
        for n in v {
            assert_eq!(Number::decode(&enc(n)), Some(n), "{n:?}");
            assert_eq!(enc(n).len(), ENCODED_LEN);
        }
    }

    #[test]
    fn equal_values_are_equal_whatever_their_form() {
        use Number::*;
        assert_eq!(Int(2), Float(2.0));
        assert_eq!(enc(Int(2)), enc(Float(2.0)));
        assert_eq!(Float(0.0), Float(-0.0));
        assert_eq!(enc(Float(-0.0)), enc(Int(0)));
        assert_eq!(Int(P53), Float(9_007_199_254_740_992.0));
        assert_ne!(Int(P53 + 1), Float(9_007_199_254_740_992.0));
        assert_eq!(UInt(1 << 63), Float(9_223_372_036_854_775_808.0));
        assert_eq!(Float(-0.0).to_json(), serde_json::json!(0));
        assert_eq!(Float(2.0).to_json(), serde_json::json!(2));
        assert_eq!(UInt(u64::MAX).to_json(), serde_json::json!(u64::MAX));
        assert_eq!(Int(i64::MIN).to_json(), serde_json::json!(i64::MIN));
        assert_eq!(Float(2.5).to_json(), serde_json::json!(2.5));
    }

    #[test]
    fn json_numbers_keep_their_digits() {
        let n = |t: &str| Number::from_json(&serde_json::from_str(t).unwrap()).unwrap();
        assert!(n("9007199254740993") > n("9007199254740992"));
        assert!(n("1234567890123456789") > n("1234567890123456788"));
        assert_eq!(n("18446744073709551615"), Number::UInt(u64::MAX));
        assert_eq!(n("-9223372036854775808"), Number::Int(i64::MIN));
        assert_eq!(n("2.0"), n("2"));
        assert_eq!(n("-0"), n("0"));
        assert_eq!(n("-0.0"), n("0"));
    }

    #[test]
    fn malformed_encodings_are_refused() {
        let mut bad = enc(Number::Float(2.5));
        bad[9] ^= 1; // a decimal with an offset
        assert_eq!(Number::decode(&bad), None);
        let mut off = enc(Number::Int(3));
        off[9] ^= 4; // an offset past the rounding of 3
        assert_eq!(Number::decode(&off), None);
        assert_eq!(Number::decode(&enc(Number::Int(3))[..9]), None);
        let inf = [
            sortable_bits(f64::INFINITY).to_be_bytes().to_vec(),
            vec![0x80, 0],
        ];
        assert_eq!(Number::decode(&inf.concat()), None);
    }

    fn number() -> impl Strategy<Value = Number> {
        prop_oneof![
            any::<i64>().prop_map(Number::Int),
            any::<u64>().prop_map(Number::from),
            (-3i64..3).prop_map(|d| Number::Int(P53 + d)),
            (-3i64..3).prop_map(|d| Number::Int(-P53 + d)),
            any::<f64>()
                .prop_filter("finite", |x| x.is_finite())
                .prop_map(Number::Float),
            (-4i64..4).prop_map(|d| Number::Float((P53 + 2 * d) as f64)),
            (0u64..4).prop_map(|d| Number::UInt(u64::MAX - d)),
        ]
    }

    /// The reference: both values as exact rationals (`i128` for integers; an f64 is
    /// integral past 2^53, so those compare as integers too).
    fn exact_cmp(a: Number, b: Number) -> Ordering {
        match (a.as_i128(), b.as_i128()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                // At least one is a non-integral or huge float: its f64 order is exact
                // against the other's nearest f64 unless they tie, which an integer and a
                // non-integral float cannot.
                let (x, y) = (a.as_f64(), b.as_f64());
                x.partial_cmp(&y).unwrap()
            }
        }
    }

    proptest! {
        #[test]
        fn keys_order_as_values_do(a in number(), b in number()) {
            prop_assert_eq!(a.cmp(&b), exact_cmp(a, b));
            prop_assert_eq!(enc(a).cmp(&enc(b)), exact_cmp(a, b));
            prop_assert_eq!(Number::decode(&enc(a)), Some(a));
        }
    }
}
