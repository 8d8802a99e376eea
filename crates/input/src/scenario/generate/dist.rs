//! The random ingredients of generators: arrival processes, run-time
//! distributions and request amounts. Pure functions of a seeded generator;
//! nothing here knows about pods.

use std::f64::consts::TAU;

use rand::RngExt;
use rand_distr::{Distribution, Exp};

use crate::sim::rng::SimRng;
use crate::sim::{LaunchLatency, SimDuration, SimTime};

const MS_PER_HOUR: f64 = 3_600_000.0;

/// A rate of events, stored per hour.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate {
    /// Events per hour; finite and ≥ 0.
    pub per_hour: f64,
}

impl Rate {
    /// Events per millisecond.
    fn per_ms(self) -> f64 {
        self.per_hour / MS_PER_HOUR
    }
}

/// A cosine day curve between a trough and a peak: the value is `peak` at
/// `peak_at` (modulo `period`) and `trough` half a period later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiurnalCurve {
    /// Length of one cycle; greater than zero.
    pub period: SimDuration,
    /// Highest value.
    pub peak: f64,
    /// Lowest value (≤ `peak`).
    pub trough: f64,
    /// Offset from the generator's start of the first peak.
    pub peak_at: SimDuration,
}

impl DiurnalCurve {
    /// The curve's value `elapsed` after the generator's start.
    pub fn at(&self, elapsed: SimDuration) -> f64 {
        let period = self.period.as_millis().max(1) as f64;
        let phase = (elapsed.as_millis() as f64 - self.peak_at.as_millis() as f64) / period;
        let weight = (1.0 + (TAU * phase).cos()) / 2.0;
        self.trough + (self.peak - self.trough) * weight
    }

    /// The mean over whole periods.
    pub fn mean(&self) -> f64 {
        (self.peak + self.trough) / 2.0
    }
}

/// When things arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// A homogeneous Poisson process.
    Poisson(Rate),
    /// A Poisson process whose rate (per hour) follows a day curve.
    Diurnal(DiurnalCurve),
    /// `size` arrivals every `every`, the first at the start, spread
    /// uniformly over `spread` after each burst instant (all at once when
    /// `spread` is 0).
    Bursts {
        /// Time between bursts; greater than zero.
        every: SimDuration,
        /// Arrivals per burst; at least one.
        size: u32,
        /// Window each burst is spread over.
        spread: SimDuration,
    },
}

/// The state of one arrival process: produces arrival instants in
/// non-decreasing order.
#[derive(Debug, Clone)]
pub struct ArrivalClock {
    arrivals: Arrivals,
    start: SimTime,
    /// Time of the last Poisson candidate (also used by thinning).
    cursor: SimTime,
    /// The arrivals of the current burst not handed out yet, latest first.
    burst: Vec<SimTime>,
    next_burst: SimTime,
}

impl ArrivalClock {
    /// A process starting at `start`.
    pub fn new(arrivals: Arrivals, start: SimTime) -> ArrivalClock {
        ArrivalClock {
            arrivals,
            start,
            cursor: start,
            burst: Vec::new(),
            next_burst: start,
        }
    }

    /// The next arrival, or `None` when the rate is zero for good.
    pub fn next(&mut self, rng: &mut SimRng) -> Option<SimTime> {
        match self.arrivals.clone() {
            Arrivals::Poisson(rate) => {
                let gap = exponential_ms(rate.per_ms(), rng)?;
                self.cursor = advance(self.cursor, gap);
                Some(self.cursor)
            }
            Arrivals::Diurnal(curve) => {
                // Lewis–Shedler thinning: candidates at the peak rate, each
                // kept with probability rate(t) / peak.
                let max = curve.peak.max(curve.trough);
                let max_per_ms = max / MS_PER_HOUR;
                loop {
                    let gap = exponential_ms(max_per_ms, rng)?;
                    self.cursor = advance(self.cursor, gap);
                    let elapsed = self.cursor.saturating_duration_since(self.start);
                    let keep = curve.at(elapsed) / max;
                    if rng.random::<f64>() < keep {
                        return Some(self.cursor);
                    }
                }
            }
            Arrivals::Bursts {
                every,
                size,
                spread,
            } => {
                if self.burst.is_empty() {
                    let at = self.next_burst;
                    self.next_burst = at + every;
                    let spread_ms = spread.as_millis() as f64;
                    self.burst = (0..size)
                        .map(|_| {
                            at + SimDuration::from_millis((rng.random::<f64>() * spread_ms) as u64)
                        })
                        .collect();
                    // Latest first, so `pop` hands out the earliest.
                    self.burst.sort_unstable_by(|a, b| b.cmp(a));
                }
                self.burst.pop()
            }
        }
    }
}

/// An exponential gap in (fractional) milliseconds for a rate per ms;
/// `None` for a zero rate.
fn exponential_ms(per_ms: f64, rng: &mut SimRng) -> Option<f64> {
    let exp = Exp::new(per_ms).ok().filter(|_| per_ms > 0.0)?;
    Some(exp.sample(rng))
}

/// `from` plus `gap_ms`, rounded to the nearest millisecond (saturating).
fn advance(from: SimTime, gap_ms: f64) -> SimTime {
    from + SimDuration::from_millis(gap_ms.round().min(u64::MAX as f64) as u64)
}

/// How long something runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DurationDist {
    /// Always the same.
    Fixed(SimDuration),
    /// Exponential with this mean.
    Exponential(SimDuration),
    /// Lognormal with this median and 90th percentile.
    LogNormal {
        /// Median (> 0).
        median: SimDuration,
        /// 90th percentile (≥ median).
        p90: SimDuration,
    },
}

impl DurationDist {
    /// Draws one duration. A fixed duration draws nothing.
    pub fn sample(&self, rng: &mut SimRng) -> SimDuration {
        match *self {
            DurationDist::Fixed(d) => d,
            DurationDist::Exponential(mean) => {
                let per_ms = 1.0 / (mean.as_millis().max(1) as f64);
                let ms = exponential_ms(per_ms, rng).unwrap_or(0.0);
                SimDuration::from_millis(ms.round() as u64)
            }
            DurationDist::LogNormal { median, p90 } => LaunchLatency::lognormal(median, p90)
                .map(|model| model.sample(rng))
                .unwrap_or(median),
        }
    }
}

/// An amount of one resource, in its integer unit (millicores, bytes,
/// whole devices).
#[derive(Debug, Clone, PartialEq)]
pub enum AmountDist {
    /// Always this amount.
    Fixed(i64),
    /// One of these, equally likely.
    Choice(Vec<i64>),
    /// Uniform between the bounds, inclusive.
    Uniform {
        /// Lower bound.
        low: i64,
        /// Upper bound (≥ `low`).
        high: i64,
    },
}

impl AmountDist {
    /// Draws one amount. A fixed amount draws nothing.
    pub fn sample(&self, rng: &mut SimRng) -> i64 {
        match self {
            AmountDist::Fixed(v) => *v,
            AmountDist::Choice(values) if values.is_empty() => 0,
            AmountDist::Choice(values) => values[rng.random_range(0..values.len())],
            AmountDist::Uniform { low, high } if high <= low => *low,
            AmountDist::Uniform { low, high } => rng.random_range(*low..=*high),
        }
    }
}
