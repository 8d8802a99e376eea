//! How long a node takes from launch to ready: either a fixed delay or a
//! lognormal distribution described by its median and 90th percentile, the
//! two numbers people actually know about their node start-up times.
//!
//! For a lognormal, `ln X ~ Normal(μ, σ)`, so the median is `e^μ` and the
//! 90th percentile is `e^(μ + z₀.₉ σ)` with `z₀.₉ = 1.2815515655446004`, the
//! standard normal's 0.9 quantile. Hence `μ = ln(median)` and
//! `σ = ln(p90 / median) / z₀.₉`. Draws come from the caller's generator,
//! which should be the dedicated [`Stream::LaunchLatency`] stream.
//!
//! Floats are used only to draw; the result is rounded to whole milliseconds.
//! (The final `exp` comes from the platform's maths library, which may differ
//! in the last bit between platforms; that can change a rounded millisecond
//! only for a draw within ~1e-13 ms of a half-millisecond boundary.)
//!
//! [`Stream::LaunchLatency`]: super::rng::Stream::LaunchLatency

use rand::Rng;
use rand_distr::{Distribution, LogNormal};

use super::time::SimDuration;

/// The standard normal distribution's 0.9 quantile.
const Z_P90: f64 = 1.281_551_565_544_600_4;

/// An invalid latency description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LatencyError {
    /// The median must be positive.
    #[error("launch latency median must be greater than zero, got {median}")]
    NonPositiveMedian {
        /// The median given.
        median: SimDuration,
    },
    /// The 90th percentile must not be below the median.
    #[error("launch latency p90 ({p90}) must be at least the median ({median})")]
    P90BelowMedian {
        /// The median given.
        median: SimDuration,
        /// The p90 given.
        p90: SimDuration,
    },
}

/// Node launch-to-ready latency model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LaunchLatency {
    /// Always the same delay; draws nothing from the generator.
    Fixed(SimDuration),
    /// Lognormal with the given median and p90.
    LogNormal(LogNormalLatency),
}

impl LaunchLatency {
    /// A fixed delay.
    pub const fn fixed(delay: SimDuration) -> Self {
        LaunchLatency::Fixed(delay)
    }

    /// A lognormal delay from its median and 90th percentile.
    pub fn lognormal(median: SimDuration, p90: SimDuration) -> Result<Self, LatencyError> {
        LogNormalLatency::new(median, p90).map(LaunchLatency::LogNormal)
    }

    /// Draws one latency.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        match self {
            LaunchLatency::Fixed(delay) => *delay,
            LaunchLatency::LogNormal(model) => model.sample(rng),
        }
    }
}

/// A lognormal latency, parameterised by median and p90.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormalLatency {
    median: SimDuration,
    p90: SimDuration,
    distribution: LogNormal<f64>,
}

impl LogNormalLatency {
    /// Checks `p90 ≥ median > 0` and derives μ and σ (in log-milliseconds).
    pub fn new(median: SimDuration, p90: SimDuration) -> Result<Self, LatencyError> {
        if median.is_zero() {
            return Err(LatencyError::NonPositiveMedian { median });
        }
        if p90 < median {
            return Err(LatencyError::P90BelowMedian { median, p90 });
        }
        let median_ms = median.as_millis() as f64;
        let p90_ms = p90.as_millis() as f64;
        let mu = median_ms.ln();
        let sigma = (p90_ms / median_ms).ln() / Z_P90;
        // Both are finite here (median ≥ 1 ms, p90 ≥ median), which is all
        // rand_distr checks; the fallback only guards a future API change.
        let distribution =
            LogNormal::new(mu, sigma).map_err(|_| LatencyError::P90BelowMedian { median, p90 })?;
        Ok(LogNormalLatency {
            median,
            p90,
            distribution,
        })
    }

    /// The median given.
    pub fn median(&self) -> SimDuration {
        self.median
    }

    /// The 90th percentile given.
    pub fn p90(&self) -> SimDuration {
        self.p90
    }

    /// Draws one latency, rounded to the nearest millisecond.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        let ms = self.distribution.sample(rng).round();
        // `as` saturates (and maps NaN to 0); a draw beyond u64::MAX ms would
        // need σ far outside any realistic description.
        SimDuration::from_millis(ms as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::percentile::{Percentile, SortedSamples};
    use crate::rng::{RngStreams, Stream};

    fn secs(s: u64) -> SimDuration {
        SimDuration::from_secs(s)
    }

    fn within(actual: SimDuration, expected: SimDuration, tolerance: f64) -> bool {
        let ratio = actual.as_millis() as f64 / expected.as_millis() as f64;
        (ratio - 1.0).abs() <= tolerance
    }

    /// Sample median and p90 over 20 000 draws land within ±3 % of the
    /// parameters, for several seeds and shapes.
    ///
    /// Tolerance: the standard error of a sample quantile q_p is
    /// sqrt(p(1−p)/n) / f(q_p). On the log scale, for n = 20 000, it is
    /// σ·sqrt(p(1−p)/n)/φ(z_p): for the median σ·0.00354/0.399 = 0.0089σ, for
    /// p90 σ·0.00212/0.1755 = 0.0121σ. With the widest shape here (median
    /// 30 s, p90 60 s: σ = ln 2 / 1.2816 = 0.541) that is 0.48 % and 0.65 %,
    /// so ±3 % is over 4.6 standard errors for every seed and shape.
    #[test]
    fn sample_median_and_p90_match_parameters() {
        for (median, p90) in [
            (secs(60), secs(90)),
            (secs(45), secs(75)),
            (secs(30), secs(60)),
        ] {
            let model = LaunchLatency::lognormal(median, p90).unwrap();
            for seed in [1, 2, 3, 42, 2026] {
                let mut rng = RngStreams::new(seed).get(Stream::LaunchLatency);
                let draws: Vec<SimDuration> = (0..20_000).map(|_| model.sample(&mut rng)).collect();
                let samples = SortedSamples::new(draws);
                let got_median = samples.percentile(Percentile::P50).unwrap();
                let got_p90 = samples.percentile(Percentile::P90).unwrap();
                assert!(
                    within(got_median, median, 0.03),
                    "seed {seed}: median {got_median} vs {median}"
                );
                assert!(
                    within(got_p90, p90, 0.03),
                    "seed {seed}: p90 {got_p90} vs {p90}"
                );
            }
        }
    }

    #[test]
    fn same_stream_same_latencies() {
        let model = LaunchLatency::lognormal(secs(60), secs(90)).unwrap();
        let run = || {
            let mut rng = RngStreams::new(9).get(Stream::LaunchLatency);
            (0..50).map(|_| model.sample(&mut rng)).collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(first, run());
        assert!(first.windows(2).any(|w| w[0] != w[1]), "draws must vary");
    }

    #[test]
    fn equal_median_and_p90_is_a_point_mass() {
        // σ = ln(1) / z = 0, so every draw is e^μ = the median.
        let model = LaunchLatency::lognormal(secs(45), secs(45)).unwrap();
        let mut rng = RngStreams::new(1).get(Stream::LaunchLatency);
        for _ in 0..100 {
            assert_eq!(model.sample(&mut rng), secs(45));
        }
    }

    #[test]
    fn fixed_latency_is_constant_and_draws_nothing() {
        let model = LaunchLatency::fixed(SimDuration::from_millis(61_500));
        let mut used = RngStreams::new(5).get(Stream::LaunchLatency);
        for _ in 0..10 {
            assert_eq!(model.sample(&mut used), SimDuration::from_millis(61_500));
        }
        let mut fresh = RngStreams::new(5).get(Stream::LaunchLatency);
        assert_eq!(used.next_u64(), fresh.next_u64());
    }

    #[test]
    fn invalid_descriptions_are_errors() {
        assert_eq!(
            LaunchLatency::lognormal(SimDuration::ZERO, secs(10)),
            Err(LatencyError::NonPositiveMedian {
                median: SimDuration::ZERO
            })
        );
        let err = LaunchLatency::lognormal(secs(60), secs(59)).unwrap_err();
        assert_eq!(
            err,
            LatencyError::P90BelowMedian {
                median: secs(60),
                p90: secs(59)
            }
        );
        assert_eq!(
            err.to_string(),
            "launch latency p90 (59s) must be at least the median (1m0s)"
        );
    }
}
