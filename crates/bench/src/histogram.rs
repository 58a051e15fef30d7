//! Latencies in nanoseconds: an HDR histogram (3 significant digits) for the percentiles, with
//! the exact sum, min and max beside it so that means and extremes are the recorded ones.

#[derive(Clone, Debug)]
pub struct Histogram {
    hdr: hdrhistogram::Histogram<u64>,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// Sized up front for latencies up to a minute (about 220 KiB of counts), every page of
    /// it written once here: growing it while a timed loop records (64 client threads, each
    /// resizing its counts) spent a tenth of a device run's CPU zeroing fresh pages.
    /// Longer latencies still fit: the histogram grows past its bound.
    pub fn new() -> Self {
        let mut hdr = hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 3)
            .expect("1 ns to a minute at 3 significant digits are valid bounds");
        hdr.auto(true);
        // Writes every count: the pages are touched now, not in the first timed records.
        hdr.reset();
        Histogram {
            hdr,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, nanos: u64) {
        // Auto-resizing makes every value fit: saturate is only the fallback.
        if self.hdr.record(nanos).is_err() {
            self.hdr.saturating_record(nanos);
        }
        self.sum += u128::from(nanos);
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    pub fn merge(&mut self, other: &Histogram) {
        self.hdr
            .add(&other.hdr)
            .expect("auto-resizing histograms of one precision add");
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.hdr.len()
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact mean in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.sum as f64 / n as f64,
        }
    }

    /// The value at percentile `p` (0..=100) in nanoseconds: the middle of its HDR bucket,
    /// clamped to the recorded min and max; p100 is the max (0 when empty).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        if p >= 100.0 {
            return self.max as f64;
        }
        let v = self.hdr.value_at_quantile(p / 100.0);
        (self.hdr.median_equivalent(v) as f64).clamp(self.min as f64, self.max as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_relative_error_and_merge_adds_up() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in 1..=1_000_000u64 {
            a.record(v * 10);
        }
        for (p, want) in [
            (50.0, 5_000_000.0),
            (99.0, 9_900_000.0),
            (99.9, 9_990_000.0),
        ] {
            let got = a.percentile(p);
            assert!(((got - want) / want).abs() < 0.01, "p{p}: {got} vs {want}");
        }
        assert!((a.mean() - 5_000_005.0).abs() < 1e-3);
        assert_eq!(a.percentile(100.0), 10_000_000.0);
        b.record(20_000);
        assert_eq!(b.percentile(50.0), 20_000.0);
        a.merge(&b);
        assert_eq!((a.count(), a.max()), (1_000_001, 10_000_000));
        assert_eq!(a.percentile(0.0), 10.0);
        let empty = Histogram::new();
        assert_eq!((empty.percentile(99.0), empty.mean()), (0.0, 0.0));
    }
}
