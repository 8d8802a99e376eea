//! Exact percentiles of integer samples (pending times, launch latencies),
//! for the p50/p95/max columns of reports.
//!
//! Definition (nearest rank): for `n` sorted samples and a percentile `p` in
//! (0, 100], the result is the sample at 1-based rank `ceil(p/100 × n)`: the
//! smallest sample such that at least `p` % of all samples are ≤ it. `p = 0`
//! gives the minimum and `p = 100` the maximum. The result is always one of
//! the samples (no interpolation), and the rank is computed in integers, so
//! `p95` of 20 samples is exactly rank 19 on every platform.

/// A percentile in basis points (hundredths of a percent), 0 to 10 000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Percentile(u32);

impl Percentile {
    /// The minimum.
    pub const MIN: Percentile = Percentile(0);
    /// The median.
    pub const P50: Percentile = Percentile(5_000);
    /// The 90th percentile.
    pub const P90: Percentile = Percentile(9_000);
    /// The 95th percentile.
    pub const P95: Percentile = Percentile(9_500);
    /// The 99th percentile.
    pub const P99: Percentile = Percentile(9_900);
    /// The maximum.
    pub const MAX: Percentile = Percentile(10_000);

    /// The `percent`-th percentile, or `None` above 100.
    pub const fn from_percent(percent: u32) -> Option<Percentile> {
        if percent <= 100 {
            Some(Percentile(percent * 100))
        } else {
            None
        }
    }

    /// A percentile in basis points (`9_990` is p99.9), or `None` above 10 000.
    pub const fn from_basis_points(basis_points: u32) -> Option<Percentile> {
        if basis_points <= 10_000 {
            Some(Percentile(basis_points))
        } else {
            None
        }
    }

    /// The percentile in basis points.
    pub const fn basis_points(self) -> u32 {
        self.0
    }

    /// The 0-based index into `n` sorted samples (`n > 0`).
    fn index(self, n: usize) -> usize {
        // ceil(bp × n / 10 000) in u128: exact, cannot overflow.
        let n_wide = n as u128;
        let rank = (u128::from(self.0) * n_wide).div_ceil(10_000);
        // Rank 0 (only for p = 0) means the minimum.
        (rank.max(1) - 1) as usize
    }
}

/// Samples sorted once, then queried for any number of percentiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedSamples<T> {
    sorted: Vec<T>,
}

/// The usual summary of a sample set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary<T> {
    /// Number of samples.
    pub count: usize,
    /// Smallest sample.
    pub min: T,
    /// Median (nearest rank).
    pub p50: T,
    /// 90th percentile (nearest rank).
    pub p90: T,
    /// 95th percentile (nearest rank).
    pub p95: T,
    /// 99th percentile (nearest rank).
    pub p99: T,
    /// Largest sample.
    pub max: T,
}

impl<T: Ord + Copy> SortedSamples<T> {
    /// Sorts `samples` (in any order) for querying.
    pub fn new(mut samples: Vec<T>) -> Self {
        samples.sort_unstable();
        SortedSamples { sorted: samples }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The samples in ascending order.
    pub fn as_slice(&self) -> &[T] {
        &self.sorted
    }

    /// The nearest-rank percentile, or `None` when there are no samples.
    pub fn percentile(&self, p: Percentile) -> Option<T> {
        if self.sorted.is_empty() {
            return None;
        }
        Some(self.sorted[p.index(self.sorted.len())])
    }

    /// Count, min, p50, p90, p95, p99 and max; `None` when there are no samples.
    pub fn summary(&self) -> Option<Summary<T>> {
        let at = |p| self.percentile(p);
        Some(Summary {
            count: self.sorted.len(),
            min: at(Percentile::MIN)?,
            p50: at(Percentile::P50)?,
            p90: at(Percentile::P90)?,
            p95: at(Percentile::P95)?,
            p99: at(Percentile::P99)?,
            max: at(Percentile::MAX)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(p: u32) -> Percentile {
        Percentile::from_percent(p).unwrap()
    }

    /// Worked example of the nearest-rank method (Wikipedia "Percentile",
    /// first example): samples 15, 20, 35, 40, 50.
    #[test]
    fn nearest_rank_five_samples() {
        let samples = SortedSamples::new(vec![50u64, 15, 40, 20, 35]);
        // p5: ceil(0.25) = rank 1; p30: ceil(1.5) = 2; p40: ceil(2.0) = 2;
        // p50: ceil(2.5) = 3; p100: rank 5.
        assert_eq!(samples.percentile(pct(5)), Some(15));
        assert_eq!(samples.percentile(pct(30)), Some(20));
        assert_eq!(samples.percentile(pct(40)), Some(20));
        assert_eq!(samples.percentile(pct(50)), Some(35));
        assert_eq!(samples.percentile(pct(100)), Some(50));
    }

    /// Second worked example: 3, 6, 7, 8, 8, 10, 13, 15, 16, 20.
    #[test]
    fn nearest_rank_ten_samples() {
        let samples = SortedSamples::new(vec![20u64, 3, 16, 6, 15, 7, 13, 8, 10, 8]);
        // p25: ceil(2.5) = rank 3; p50: rank 5; p75: ceil(7.5) = 8; p100: 10.
        assert_eq!(samples.percentile(pct(25)), Some(7));
        assert_eq!(samples.percentile(pct(50)), Some(8));
        assert_eq!(samples.percentile(pct(75)), Some(15));
        assert_eq!(samples.percentile(pct(100)), Some(20));
    }

    #[test]
    fn integer_rank_has_no_float_error() {
        // p7 of 1..=100: 7 × 100 / 100 = 7 exactly, so rank 7 → value 7. The
        // float route, 7.0 / 100.0 * 100.0 = 7.000000000000001, would ceil to 8.
        let samples = SortedSamples::new((1u64..=100).collect());
        assert_eq!(samples.percentile(pct(7)), Some(7));
        // p28 of 1..=25: 28 × 25 / 100 = 7 exactly (float: 7.000000000000001).
        let samples = SortedSamples::new((1u64..=25).collect());
        assert_eq!(samples.percentile(pct(28)), Some(7));
        // p99.9 of 1..=1000: ceil(999) = 999.
        let samples = SortedSamples::new((1u64..=1_000).collect());
        let p999 = Percentile::from_basis_points(9_990).unwrap();
        assert_eq!(samples.percentile(p999), Some(999));
    }

    #[test]
    fn edges_min_max_single_and_empty() {
        let samples = SortedSamples::new(vec![9i64, -4, 7]);
        assert_eq!(samples.percentile(Percentile::MIN), Some(-4));
        assert_eq!(samples.percentile(Percentile::MAX), Some(9));
        let one = SortedSamples::new(vec![42u64]);
        for p in [
            Percentile::MIN,
            Percentile::P50,
            Percentile::P99,
            Percentile::MAX,
        ] {
            assert_eq!(one.percentile(p), Some(42));
        }
        let none = SortedSamples::<u64>::new(vec![]);
        assert_eq!(none.percentile(Percentile::P50), None);
        assert_eq!(none.summary(), None);
        assert_eq!(Percentile::from_percent(101), None);
        assert_eq!(Percentile::from_basis_points(10_001), None);
    }

    #[test]
    fn summary_of_one_to_hundred() {
        // For 1..=100, the p-th percentile is rank p, i.e. the value p.
        let summary = SortedSamples::new((1u64..=100).rev().collect())
            .summary()
            .unwrap();
        assert_eq!(
            summary,
            Summary {
                count: 100,
                min: 1,
                p50: 50,
                p90: 90,
                p95: 95,
                p99: 99,
                max: 100
            }
        );
    }
}
