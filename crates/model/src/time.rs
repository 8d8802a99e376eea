//! Simulated time: instants ([`SimTime`]) and spans ([`SimDuration`]) in
//! whole milliseconds, and a parser for the duration strings found in
//! scenarios and Kubernetes objects (`500ms`, `30s`, `1h30m`, `7d`).
//!
//! Time is an integer so that event ordering and cost integration are exact
//! and identical on every platform. Arithmetic saturates instead of wrapping
//! or panicking: overflow needs ~584 million simulated years and only arises
//! from "never"-like sentinels, where saturation is the useful answer. This
//! matches `std::time::Instant`, whose difference also saturates at zero.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use std::str::FromStr;

pub mod duration;

use self::duration::{DurationSyntaxError, DurationUnits, Overflow, SubTick, parse_ticks};

/// An instant of simulated time, in milliseconds since the start of the run.
/// Instants before the start are negative: a run that begins from a cluster
/// snapshot keeps the ages of the nodes and pods it starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(i64);

/// A span of simulated time, in milliseconds. Never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimDuration(u64);

const MS_PER_SECOND: u64 = 1_000;
const MS_PER_MINUTE: u64 = 60 * MS_PER_SECOND;
const MS_PER_HOUR: u64 = 60 * MS_PER_MINUTE;
const MS_PER_DAY: u64 = 24 * MS_PER_HOUR;

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);
    /// The latest representable instant; a natural "never" sentinel.
    pub const MAX: SimTime = SimTime(i64::MAX);
    /// The earliest representable instant.
    pub const MIN: SimTime = SimTime(i64::MIN);

    /// The instant `ms` milliseconds after the start (saturating).
    pub const fn from_millis(ms: u64) -> SimTime {
        if ms > i64::MAX as u64 {
            SimTime::MAX
        } else {
            SimTime(ms as i64)
        }
    }

    /// The instant `ms` milliseconds after (or, negative, before) the start.
    pub const fn from_signed_millis(ms: i64) -> SimTime {
        SimTime(ms)
    }

    /// The instant `secs` seconds after the start (saturating).
    pub const fn from_secs(secs: u64) -> SimTime {
        SimTime::from_millis(secs.saturating_mul(MS_PER_SECOND))
    }

    /// Milliseconds since the start; zero for instants before it.
    pub const fn as_millis(self) -> u64 {
        if self.0 < 0 { 0 } else { self.0 as u64 }
    }

    /// Milliseconds since the start, negative before it.
    pub const fn signed_millis(self) -> i64 {
        self.0
    }

    /// Time elapsed since the start, as a duration (zero before it).
    pub const fn since_start(self) -> SimDuration {
        SimDuration(self.as_millis())
    }

    /// `self - earlier`, or `None` if `earlier` is later than `self`.
    pub const fn checked_duration_since(self, earlier: SimTime) -> Option<SimDuration> {
        if self.0 < earlier.0 {
            None
        } else {
            Some(SimDuration(self.0.abs_diff(earlier.0)))
        }
    }

    /// `self - earlier`, or zero if `earlier` is later than `self`.
    pub const fn saturating_duration_since(self, earlier: SimTime) -> SimDuration {
        match self.checked_duration_since(earlier) {
            Some(d) => d,
            None => SimDuration::ZERO,
        }
    }

    /// `self + d`, or `None` on overflow.
    pub const fn checked_add(self, d: SimDuration) -> Option<SimTime> {
        if d.0 > i64::MAX as u64 {
            return None;
        }
        match self.0.checked_add(d.0 as i64) {
            Some(ms) => Some(SimTime(ms)),
            None => None,
        }
    }
}

impl SimDuration {
    /// No time at all.
    pub const ZERO: SimDuration = SimDuration(0);
    /// The longest representable span.
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    /// A span of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> SimDuration {
        SimDuration(ms)
    }

    /// A span of `secs` seconds (saturating).
    pub const fn from_secs(secs: u64) -> SimDuration {
        SimDuration(secs.saturating_mul(MS_PER_SECOND))
    }

    /// A span of `mins` minutes (saturating).
    pub const fn from_mins(mins: u64) -> SimDuration {
        SimDuration(mins.saturating_mul(MS_PER_MINUTE))
    }

    /// A span of `hours` hours (saturating).
    pub const fn from_hours(hours: u64) -> SimDuration {
        SimDuration(hours.saturating_mul(MS_PER_HOUR))
    }

    /// A span of `days` days of 24 hours (saturating).
    pub const fn from_days(days: u64) -> SimDuration {
        SimDuration(days.saturating_mul(MS_PER_DAY))
    }

    /// A `std` duration in whole milliseconds (the rest dropped),
    /// saturating at [`SimDuration::MAX`].
    pub fn from_std(d: std::time::Duration) -> SimDuration {
        SimDuration(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Whole milliseconds.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Seconds as a float, for reports and statistics only (never for ordering).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MS_PER_SECOND as f64
    }

    /// True for the empty span.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` on overflow.
    pub const fn checked_add(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_add(other.0) {
            Some(ms) => Some(SimDuration(ms)),
            None => None,
        }
    }

    /// `self - other`, or `None` if `other` is longer.
    pub const fn checked_sub(self, other: SimDuration) -> Option<SimDuration> {
        match self.0.checked_sub(other.0) {
            Some(ms) => Some(SimDuration(ms)),
            None => None,
        }
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    /// Saturates at [`SimTime::MAX`].
    fn add(self, d: SimDuration) -> SimTime {
        self.checked_add(d).unwrap_or(SimTime::MAX)
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        *self = *self + d;
    }
}

impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    /// Goes before the start (negative); saturates at [`SimTime::MIN`].
    fn sub(self, d: SimDuration) -> SimTime {
        SimTime(
            self.0
                .saturating_sub(i64::try_from(d.0).unwrap_or(i64::MAX)),
        )
    }
}

impl SubAssign<SimDuration> for SimTime {
    fn sub_assign(&mut self, d: SimDuration) {
        *self = *self - d;
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    /// Saturates at zero, like `std::time::Instant`.
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.saturating_duration_since(earlier)
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    /// Saturates at [`SimDuration::MAX`].
    fn add(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(other.0))
    }
}

impl AddAssign for SimDuration {
    fn add_assign(&mut self, other: SimDuration) {
        *self = *self + other;
    }
}

impl Sub for SimDuration {
    type Output = SimDuration;
    /// Saturates at zero.
    fn sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
}

impl SubAssign for SimDuration {
    fn sub_assign(&mut self, other: SimDuration) {
        *self = *self - other;
    }
}

impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    /// Saturates at [`SimDuration::MAX`].
    fn mul(self, factor: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(factor))
    }
}

impl Div<u64> for SimDuration {
    type Output = SimDuration;
    /// Integer division, rounding down; dividing by zero gives [`SimDuration::MAX`].
    fn div(self, divisor: u64) -> SimDuration {
        match self.0.checked_div(divisor) {
            Some(ms) => SimDuration(ms),
            None => SimDuration::MAX,
        }
    }
}

/// Formats like Go's `time.Duration`: the largest non-zero unit among h, m, s
/// and every smaller one (`1h0m5s`, `2m30s`, `45s`), with three decimals on the
/// seconds when there are milliseconds (`1m0.250s`, `0.500s`). Hours are not
/// folded into days, so the output is also a valid Kubernetes duration.
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hours = self.0 / MS_PER_HOUR;
        let minutes = self.0 % MS_PER_HOUR / MS_PER_MINUTE;
        let seconds = self.0 % MS_PER_MINUTE / MS_PER_SECOND;
        let millis = self.0 % MS_PER_SECOND;
        if hours > 0 {
            write!(f, "{hours}h{minutes}m")?;
        } else if minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        if millis > 0 {
            write!(f, "{seconds}.{millis:03}s")
        } else {
            write!(f, "{seconds}s")
        }
    }
}

/// Formats the time since the start of the run, like [`SimDuration`]
/// (`-1h0m0s` for an hour before it).
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 0 {
            write!(f, "-{}", SimDuration(self.0.unsigned_abs()))
        } else {
            self.since_start().fmt(f)
        }
    }
}

/// A duration string that could not be parsed; the message quotes the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason}")]
pub struct DurationParseError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The scenario units on the simulator's millisecond clock.
const SCENARIO_UNITS: DurationUnits = DurationUnits {
    units: &[
        ("ms", 1),
        ("s", MS_PER_SECOND),
        ("m", MS_PER_MINUTE),
        ("h", MS_PER_HOUR),
        ("d", MS_PER_DAY),
    ],
    unit_char: |c| c.is_ascii_alphabetic(),
    sub_tick: SubTick::Reject,
    overflow: Overflow::AtEachPart,
};

/// Go's units finer than the millisecond clock, named as such in errors.
const FINER_THAN_CLOCK: &[&str] = &["us", "ns"];

/// Parses a duration such as `500ms`, `30s`, `10m`, `1h30m`, `1.5h`, `24h`
/// or `7d`, or the bare `0`.
///
/// The grammar is Go's `time.ParseDuration` (used by Kubernetes and
/// Karpenter, see [`crate::time::duration`]) restricted to what a
/// millisecond clock can hold: one or more `<number><unit>` parts, summed;
/// numbers may have a decimal fraction; units are `ms`, `s`, `m`, `h`, plus
/// `d` (24 h) for scenario files. A sign, whitespace, sub-millisecond units
/// (`us`, `ns`) and values that are not a whole number of milliseconds are
/// errors, as is overflow. Keywords such as `Never` are for the caller to
/// handle before calling this.
pub fn parse_duration(text: &str) -> Result<SimDuration, DurationParseError> {
    parse_ticks(text, &SCENARIO_UNITS)
        .map(SimDuration)
        .map_err(|err| DurationParseError {
            text: text.to_string(),
            reason: match err {
                DurationSyntaxError::Empty => "empty string".to_string(),
                DurationSyntaxError::ExpectedNumber { at, found } => {
                    format!("expected a number at byte {at}, found {found:?}")
                }
                DurationSyntaxError::MissingUnit { number, .. } => {
                    format!("missing unit after {number:?}")
                }
                DurationSyntaxError::UnknownUnit { unit }
                    if FINER_THAN_CLOCK.contains(&unit.as_str()) =>
                {
                    format!("unit {unit:?} is finer than the simulator's millisecond clock")
                }
                DurationSyntaxError::UnknownUnit { unit } => {
                    format!("unknown unit {unit:?} (expected ms, s, m, h or d)")
                }
                DurationSyntaxError::FinerThanTick { fraction } => {
                    format!("fraction .{fraction} is finer than a millisecond")
                }
                DurationSyntaxError::TooLarge => "too large".to_string(),
            },
        })
}

impl FromStr for SimDuration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> u64 {
        parse_duration(text).unwrap().as_millis()
    }

    /// A `std` duration keeps its whole milliseconds and saturates.
    #[test]
    fn std_durations_become_whole_milliseconds() {
        use std::time::Duration;
        assert_eq!(
            SimDuration::from_std(Duration::from_micros(1_999)).as_millis(),
            1
        );
        assert_eq!(
            SimDuration::from_std(Duration::from_secs(90)),
            SimDuration::from_secs(90)
        );
        assert_eq!(SimDuration::from_std(Duration::MAX), SimDuration::MAX);
    }

    #[test]
    fn parses_scenario_and_kubernetes_forms() {
        assert_eq!(ms("500ms"), 500);
        assert_eq!(ms("30s"), 30_000);
        assert_eq!(ms("10m"), 600_000);
        // 1 h 30 m = 3 600 000 + 1 800 000 ms.
        assert_eq!(ms("1h30m"), 5_400_000);
        assert_eq!(ms("24h"), 86_400_000);
        // 7 × 86 400 000 ms.
        assert_eq!(ms("7d"), 604_800_000);
        // Karpenter's default expireAfter.
        assert_eq!(ms("720h"), 2_592_000_000);
        assert_eq!(ms("0"), 0);
        assert_eq!(ms("0s"), 0);
        // Go allows any order and repeats, summing the parts.
        assert_eq!(ms("30m1h"), 5_400_000);
        assert_eq!(ms("1m1m"), 120_000);
        assert_eq!(ms("1h0m5s"), 3_605_000);
    }

    #[test]
    fn parses_exact_fractions() {
        // 1.5 h = 90 min = 5 400 000 ms.
        assert_eq!(ms("1.5h"), 5_400_000);
        assert_eq!(ms("0.25s"), 250);
        assert_eq!(ms(".5s"), 500);
        assert_eq!(ms("2.s"), 2_000);
        assert_eq!(ms("1.500000000000000000000000s"), 1_500);
        // 0.001 h = 3.6 s.
        assert_eq!(ms("0.001h"), 3_600);
    }

    #[test]
    fn rejects_bad_text_and_quotes_it() {
        for bad in [
            "", "Never", "10", "-5s", "+5s", "5 s", " 5s", "5x", "5sec", "1.0005s", "0.5ms",
            "10us", "ns", ".s", "h",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert_eq!(err.text, bad);
            assert!(
                err.to_string().contains(&format!("{bad:?}")),
                "message {err} should quote {bad:?}"
            );
        }
        assert!(
            parse_duration("5x")
                .unwrap_err()
                .reason
                .contains("unknown unit")
        );
        assert!(
            parse_duration("10")
                .unwrap_err()
                .reason
                .contains("missing unit")
        );
    }

    #[test]
    fn rejects_overflow() {
        // u64::MAX ms ≈ 5.8e8 years; 1e17 h is far beyond it.
        assert!(parse_duration("100000000000000000h").is_err());
        assert!(parse_duration("99999999999999999999999s").is_err());
        // Each part fits, the sum does not: 2 × (u64::MAX / 2 + 1) ms.
        let half = u64::MAX / 2 + 1;
        assert!(parse_duration(&format!("{half}ms{half}ms")).is_err());
    }

    #[test]
    fn displays_like_go_with_millisecond_seconds() {
        let show = |ms: u64| SimDuration::from_millis(ms).to_string();
        assert_eq!(show(0), "0s");
        assert_eq!(show(500), "0.500s");
        assert_eq!(show(45_000), "45s");
        assert_eq!(show(150_000), "2m30s");
        // 3 723 000 ms = 1 h + 2 min + 3 s.
        assert_eq!(show(3_723_000), "1h2m3s");
        assert_eq!(show(3_723_250), "1h2m3.250s");
        assert_eq!(show(3_600_000), "1h0m0s");
        assert_eq!(show(60_007), "1m0.007s");
        // 7 days stay in hours: 168 h.
        assert_eq!(SimDuration::from_days(7).to_string(), "168h0m0s");
        assert_eq!(SimTime::from_secs(61).to_string(), "1m1s");
    }

    #[test]
    fn display_round_trips_through_parser() {
        for ms in [
            0,
            1,
            999,
            1_000,
            59_999,
            60_000,
            3_723_250,
            604_800_000,
            12_345_678_901,
        ] {
            let d = SimDuration::from_millis(ms);
            assert_eq!(parse_duration(&d.to_string()), Ok(d), "{d}");
        }
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let t = SimTime::from_secs(10);
        assert_eq!(t + SimDuration::from_secs(5), SimTime::from_millis(15_000));
        assert_eq!(t - SimDuration::from_secs(4), SimTime::from_millis(6_000));
        assert_eq!(
            t - SimDuration::from_secs(11),
            SimTime::from_signed_millis(-1_000)
        );
        assert_eq!((t - SimDuration::from_secs(11)).to_string(), "-1s");
        assert_eq!(
            t.checked_duration_since(SimTime::from_signed_millis(-5_000)),
            Some(SimDuration::from_secs(15))
        );
        assert_eq!(SimTime::from_signed_millis(-5).as_millis(), 0);
        assert_eq!(SimTime::from_secs(3) - t, SimDuration::ZERO);
        assert_eq!(t - SimTime::from_secs(3), SimDuration::from_secs(7));
        assert_eq!(SimTime::from_secs(3).checked_duration_since(t), None);
        assert_eq!(SimTime::MAX + SimDuration::from_millis(1), SimTime::MAX);
        assert_eq!(SimTime::MAX.checked_add(SimDuration::from_millis(1)), None);
        assert_eq!(SimDuration::from_mins(2) * 3, SimDuration::from_mins(6));
        assert_eq!(
            SimDuration::from_secs(10) / 4,
            SimDuration::from_millis(2_500)
        );
        assert_eq!(SimDuration::from_secs(1) / 0, SimDuration::MAX);
        assert_eq!(SimDuration::MAX * 2, SimDuration::MAX);
        assert_eq!(
            SimDuration::from_secs(1).checked_sub(SimDuration::from_secs(2)),
            None
        );
        assert_eq!(SimDuration::from_millis(1_500).as_secs_f64(), 1.5);
    }
}
