//! A log-linear latency histogram: exact below 128 ns, then 64 buckets per power of two, so
//! any recorded value is reported within 1/128 (0.8 %) of what was recorded. Fixed size
//! (about 30 KB), no allocation when recording, mergeable across threads.

/// Sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this get a bucket each.
const EXACT: u64 = 2 * SUB;
/// Buckets needed for every u64.
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Latencies in nanoseconds.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max())
            .field("mean", &self.mean())
            .finish()
    }
}

fn index(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) - SUB;
    ((shift as u64 + 1) * SUB + sub) as usize
}

/// Lowest and highest value of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let low = (SUB + i % SUB) << shift;
    (low, low + ((1u64 << shift) - 1))
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, nanos: u64) {
        self.counts[index(nanos)] += 1;
        self.count += 1;
        self.sum += nanos as u128;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact mean in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at percentile `p` (0..=100) in nanoseconds: the middle of the bucket that
    /// holds the sample of rank ceil(p/100 * count), clamped to the recorded min and max.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let rank = rank.min(self.count);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, high) = bounds(i);
                let mid = low as f64 + (high - low) as f64 / 2.0;
                return mid.clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_their_values() {
        let mut expected = 0usize;
        let mut v = 0u64;
        while v < 1 << 20 {
            let i = index(v);
            assert!(i == expected || i == expected + 1, "v={v} i={i}");
            expected = i;
            let (low, high) = bounds(i);
            assert!(low <= v && v <= high, "v={v} bucket {i} = {low}..={high}");
            v += 1;
        }
        assert!(index(u64::MAX) < BUCKETS);
        assert_eq!(bounds(index(u64::MAX)).1, u64::MAX);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.percentile(50.0), 50.0);
        assert_eq!(h.percentile(99.0), 99.0);
        assert_eq!(h.percentile(100.0), 100.0);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn percentiles_within_relative_error() {
        let mut h = Histogram::new();
        for v in 1..=1_000_000u64 {
            h.record(v * 10);
        }
        for (p, want) in [
            (50.0, 5_000_000.0),
            (99.0, 9_900_000.0),
            (99.9, 9_990_000.0),
        ] {
            let got = h.percentile(p);
            assert!(
                ((got - want) / want).abs() < 0.01,
                "p{p}: got {got}, want {want}"
            );
        }
        assert!((h.mean() - 5_000_005.0).abs() < 1e-3);
        assert_eq!(h.percentile(100.0), 10_000_000.0);
    }

    #[test]
    fn merge_adds_up() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for _ in 0..990 {
            a.record(1_000);
        }
        for _ in 0..10 {
            b.record(1_000_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 1000);
        assert!((a.percentile(50.0) - 1_000.0).abs() / 1_000.0 < 0.01);
        assert!((a.percentile(99.0) - 1_000.0).abs() / 1_000.0 < 0.01);
        assert!((a.percentile(99.9) - 1_000_000.0).abs() / 1_000_000.0 < 0.01);
        assert_eq!(a.max(), 1_000_000);
        assert_eq!(a.min(), 1_000);
    }

    #[test]
    fn empty_is_zero() {
        let h = Histogram::new();
        assert_eq!(h.percentile(99.0), 0.0);
        assert_eq!(h.mean(), 0.0);
        assert_eq!(h.min(), 0);
    }
}
