//! YCSB's request distributions, written from their published definitions (Gray et al.,
//! "Quickly generating billion-record synthetic databases", and the YCSB paper): a zipfian over
//! ranks whose zeta grows as records are inserted, the scrambled zipfian that spreads its hot
//! ranks over the key space, the latest (a zipfian over the distance from the newest record),
//! and the uniform.

use rand::rngs::SmallRng;
use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// FNV-1a, 64 bits, of the eight little-endian bytes of `n`: YCSB's hash of record numbers
/// (key names) and of zipfian ranks.
pub fn fnv_hash64(n: u64) -> u64 {
    n.to_le_bytes().iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Ranks `0..n` drawn with probability proportional to `1 / (rank + 1)^theta`. `n` may grow
/// between draws: zeta(n) is extended by the new terms only, so inserts cost what they add.
#[derive(Clone, Debug)]
pub struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    /// zeta(count) = sum of 1/i^theta for i in 1..=count.
    zeta: f64,
    count: u64,
    eta: f64,
}

impl Zipfian {
    pub fn new(n: u64, theta: f64) -> Zipfian {
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: 1.0 + 0.5f64.powf(theta),
            zeta: 0.0,
            count: 0,
            eta: 0.0,
        };
        z.grow(n.max(1));
        z
    }

    /// Extends zeta to `n` items (never shrinks: YCSB does the same for a growing space).
    fn grow(&mut self, n: u64) {
        if n <= self.count {
            return;
        }
        for i in self.count + 1..=n {
            self.zeta += 1.0 / (i as f64).powf(self.theta);
        }
        self.count = n;
        self.eta = (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zeta);
    }

    /// A rank in `0..n` (rank 0 the most popular).
    pub fn next(&mut self, rng: &mut SmallRng, n: u64) -> u64 {
        self.grow(n.max(1));
        let u: f64 = rng.gen();
        let uz = u * self.zeta;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.count - 1);
        }
        let r = (self.count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.count - 1)
    }
}

/// The request distribution of a workload, over record numbers `0..n`.
#[derive(Clone, Debug)]
pub enum Chooser {
    Uniform,
    /// Zipfian ranks hashed over the records, so that hot records are spread, not the first.
    Zipfian(Zipfian),
    /// Zipfian over the distance back from the newest record.
    Latest(Zipfian),
}

impl Chooser {
    pub fn uniform() -> Chooser {
        Chooser::Uniform
    }

    pub fn zipfian(n: u64) -> Chooser {
        Chooser::Zipfian(Zipfian::new(n, ZIPFIAN_CONSTANT))
    }

    pub fn latest(n: u64) -> Chooser {
        Chooser::Latest(Zipfian::new(n, ZIPFIAN_CONSTANT))
    }

    /// A record number in `0..n`, where `n` records exist (the newest is `n - 1`).
    pub fn next(&mut self, rng: &mut SmallRng, n: u64) -> u64 {
        let n = n.max(1);
        match self {
            Chooser::Uniform => rng.gen_range(0..n),
            Chooser::Zipfian(z) => fnv_hash64(z.next(rng, n)) % n,
            // A zipfian made for more records than `n` may rank past it.
            Chooser::Latest(z) => n - 1 - z.next(rng, n).min(n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const N: u64 = 10_000;
    const DRAWS: usize = 200_000;

    fn draws(mut c: Chooser, n: u64) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(7);
        (0..DRAWS).map(|_| c.next(&mut rng, n)).collect()
    }

    fn counts(xs: &[u64], n: u64) -> Vec<u64> {
        let mut c = vec![0u64; n as usize];
        for &x in xs {
            c[x as usize] += 1;
        }
        c
    }

    /// Share of the draws taken by the most drawn `fraction` of the items.
    fn top_share(xs: &[u64], n: u64, fraction: f64) -> f64 {
        let mut c = counts(xs, n);
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top = ((n as f64 * fraction) as usize).max(1);
        c[..top].iter().sum::<u64>() as f64 / xs.len() as f64
    }

    #[test]
    fn every_chooser_stays_in_bounds() {
        for c in [Chooser::uniform(), Chooser::zipfian(N), Chooser::latest(N)] {
            for n in [1, 2, 3, N] {
                assert!(draws(c.clone(), n).iter().all(|&x| x < n));
            }
        }
    }

    #[test]
    fn zipfian_top_percent_draws_a_large_share() {
        let mut z = Zipfian::new(N, ZIPFIAN_CONSTANT);
        let mut rng = SmallRng::seed_from_u64(1);
        let ranks: Vec<u64> = (0..DRAWS).map(|_| z.next(&mut rng, N)).collect();
        // Rank 0 is the most drawn, and the top 1% of ranks take over half the draws at 0.99.
        let c = counts(&ranks, N);
        assert_eq!(c.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0, 0);
        assert!(
            top_share(&ranks, N, 0.01) > 0.5,
            "{}",
            top_share(&ranks, N, 0.01)
        );
        // Scrambled: as skewed, but the hot records are not the first ones.
        let xs = draws(Chooser::zipfian(N), N);
        assert!(top_share(&xs, N, 0.01) > 0.5);
        let first: u64 = counts(&xs, N)[..100].iter().sum();
        assert!((first as f64) < 0.1 * DRAWS as f64, "{first}");
    }

    #[test]
    fn zipfian_grown_matches_one_made_at_the_size() {
        let mut grown = Zipfian::new(100, ZIPFIAN_CONSTANT);
        grown.grow(N);
        let made = Zipfian::new(N, ZIPFIAN_CONSTANT);
        assert!((grown.zeta - made.zeta).abs() < 1e-9);
        assert!((grown.eta - made.eta).abs() < 1e-12);
    }

    #[test]
    fn latest_favours_the_newest_records() {
        let xs = draws(Chooser::latest(N), N);
        let newest: usize = xs.iter().filter(|&&x| x >= N - N / 100).count();
        assert!(newest as f64 > 0.5 * DRAWS as f64, "{newest}");
        assert!(top_share(&xs, N, 0.01) > 0.5);
    }

    #[test]
    fn uniform_is_flat() {
        let xs = draws(Chooser::uniform(), 100);
        let c = counts(&xs, 100);
        let want = DRAWS as f64 / 100.0;
        assert!(
            c.iter().all(|&c| (c as f64 - want).abs() < 0.15 * want),
            "{c:?}"
        );
    }

    #[test]
    fn fnv_spreads_consecutive_numbers() {
        assert_ne!(fnv_hash64(0), fnv_hash64(1));
        assert_ne!(fnv_hash64(1) % 1000, fnv_hash64(2) % 1000);
    }
}
