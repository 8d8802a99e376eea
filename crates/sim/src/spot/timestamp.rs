//! Wall-clock instants for spot input files: an exact ISO-8601 reader for
//! the forms AWS prints (`2021-01-08T21:51:23+00:00`, `...Z`, fractional
//! seconds such as `2014-01-06T07:10:55.000Z`) and the time column of
//! karpsim's CSV files, which holds either a duration since the run start
//! (`90m`) or such an instant.
//!
//! The reader is written here rather than taken from a date crate because
//! the forms are few and fixed, and an exact integer conversion keeps every
//! run identical on every platform.

use std::fmt;

use crate::time::{SimDuration, parse_duration};

/// An instant of real time: whole milliseconds since 1970-01-01T00:00:00Z
/// (leap seconds ignored, as in Unix time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

const MS_PER_SECOND: i64 = 1_000;
const MS_PER_DAY: i64 = 86_400 * MS_PER_SECOND;

impl Timestamp {
    /// The instant `ms` milliseconds after the Unix epoch.
    pub const fn from_unix_millis(ms: i64) -> Timestamp {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// `self − earlier` as a simulated duration, or `None` when `earlier`
    /// is later than `self`.
    pub fn duration_since(self, earlier: Timestamp) -> Option<SimDuration> {
        let ms = self.0.checked_sub(earlier.0)?;
        u64::try_from(ms).ok().map(SimDuration::from_millis)
    }

    /// Parses `YYYY-MM-DDThh:mm:ss[.fff]` followed by `Z` or an offset
    /// `±hh:mm`. Fractions finer than a millisecond must be zeros (the
    /// simulator's clock counts milliseconds); leap seconds (`:60`) are
    /// rejected.
    pub fn parse(text: &str) -> Result<Timestamp, TimestampError> {
        let error = |reason: &str| TimestampError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let bytes = text.as_bytes();
        let fixed = |at: usize, want: u8| bytes.get(at) == Some(&want);
        if bytes.len() < 20
            || !fixed(4, b'-')
            || !fixed(7, b'-')
            || !fixed(10, b'T')
            || !fixed(13, b':')
            || !fixed(16, b':')
        {
            return Err(error(
                "expected YYYY-MM-DDThh:mm:ss followed by Z or an offset such as +00:00",
            ));
        }
        let number = |from: usize, to: usize, what: &str| -> Result<i64, TimestampError> {
            let part = &bytes[from..to];
            if !part.iter().all(u8::is_ascii_digit) {
                return Err(error(&format!("the {what} is not a number")));
            }
            Ok(part.iter().fold(0, |acc, d| acc * 10 + i64::from(d - b'0')))
        };
        let year = number(0, 4, "year")?;
        let month = number(5, 7, "month")?;
        let day = number(8, 10, "day")?;
        let hour = number(11, 13, "hour")?;
        let minute = number(14, 16, "minute")?;
        let second = number(17, 19, "second")?;
        if !(1..=12).contains(&month) {
            return Err(error("the month is not 01-12"));
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err(error("the day does not exist in that month"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(error("the time of day is out of range"));
        }
        let mut rest = &bytes[19..];
        let mut millis = 0;
        if let Some(fraction) = rest.strip_prefix(b".") {
            let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return Err(error("a decimal point needs digits after it"));
            }
            let (shown, finer) = fraction[..digits].split_at(digits.min(3));
            if finer.iter().any(|&d| d != b'0') {
                return Err(error(
                    "fractions finer than a millisecond are not supported",
                ));
            }
            let mut scale = 100;
            for &digit in shown {
                millis += i64::from(digit - b'0') * scale;
                scale /= 10;
            }
            rest = &fraction[digits..];
        }
        let offset_minutes = match rest {
            b"Z" => 0,
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let digits = [*h1, *h2, *m1, *m2];
                if !digits.iter().all(u8::is_ascii_digit) {
                    return Err(error("the offset is not ±hh:mm"));
                }
                let hours = i64::from(h1 - b'0') * 10 + i64::from(h2 - b'0');
                let minutes = i64::from(m1 - b'0') * 10 + i64::from(m2 - b'0');
                if hours > 23 || minutes > 59 {
                    return Err(error("the offset is out of range"));
                }
                let total = hours * 60 + minutes;
                if *sign == b'-' { -total } else { total }
            }
            _ => {
                return Err(error(
                    "expected Z or an offset such as +00:00 after the time",
                ));
            }
        };
        let days = days_from_civil(year, month, day);
        let seconds_of_day = hour * 3_600 + minute * 60 + second - offset_minutes * 60;
        Ok(Timestamp(
            days * MS_PER_DAY + seconds_of_day * MS_PER_SECOND + millis,
        ))
    }
}

/// Formats as `YYYY-MM-DDThh:mm:ssZ`, with `.fff` when there are
/// milliseconds.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(MS_PER_DAY);
        let ms_of_day = self.0.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        let seconds = ms_of_day / MS_PER_SECOND;
        let millis = ms_of_day % MS_PER_SECOND;
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            seconds / 3_600,
            seconds / 60 % 60,
            seconds % 60
        )?;
        if millis > 0 {
            write!(f, ".{millis:03}")?;
        }
        f.write_str("Z")
    }
}

/// A timestamp that could not be read; the message quotes the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {text:?}: {reason}")]
pub struct TimestampError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`, valid for every year here).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The time of one row of a spot input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowTime {
    /// A duration since the start of the run (`0`, `90s`, `1h30m`).
    Relative(SimDuration),
    /// A wall-clock instant, placed on the run's clock by an anchor.
    Absolute(Timestamp),
}

impl RowTime {
    /// Reads a duration in scenario syntax or an ISO-8601 instant (text with
    /// a `T` after a date). A leading `-` is rejected: nothing happens before
    /// the run starts.
    pub fn parse(text: &str) -> Result<RowTime, String> {
        if text.starts_with('-') {
            return Err(format!(
                "{text:?} is negative; times count from the start of the run"
            ));
        }
        if text.len() > 10 && text.as_bytes().get(10) == Some(&b'T') {
            return Timestamp::parse(text)
                .map(RowTime::Absolute)
                .map_err(|err| err.to_string());
        }
        parse_duration(text)
            .map(RowTime::Relative)
            .map_err(|err| format!("{err} (expected a duration such as 90m or an ISO-8601 time)"))
    }

    /// The offset from the run start, given the wall-clock instant of the
    /// start: `None` for an absolute time before the anchor, or for an
    /// absolute time with no anchor.
    pub fn offset(self, anchor: Option<Timestamp>) -> Option<SimDuration> {
        match self {
            RowTime::Relative(offset) => Some(offset),
            RowTime::Absolute(instant) => instant.duration_since(anchor?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        Timestamp::parse(text).unwrap().unix_millis()
    }

    /// Values checked with `date -u -d <text> +%s`.
    #[test]
    fn parses_the_forms_aws_prints() {
        assert_eq!(ms("1970-01-01T00:00:00Z"), 0);
        assert_eq!(ms("2021-01-08T21:51:23+00:00"), 1_610_142_683_000);
        assert_eq!(ms("2021-01-08T21:51:23Z"), 1_610_142_683_000);
        assert_eq!(ms("2014-01-06T07:10:55.000Z"), 1_388_992_255_000);
        assert_eq!(ms("2014-01-06T07:10:55.5Z"), 1_388_992_255_500);
        assert_eq!(ms("2014-01-06T07:10:55.123000+00:00"), 1_388_992_255_123);
        // 2024 is a leap year: Feb 29 exists; 2000 too, 1900 not.
        assert_eq!(ms("2024-02-29T00:00:00Z"), 1_709_164_800_000);
        assert_eq!(ms("2000-03-01T00:00:00Z"), 951_868_800_000);
        // An offset is subtracted: 02:00+02:00 is midnight UTC.
        assert_eq!(ms("2021-01-09T02:00:00+02:00"), ms("2021-01-09T00:00:00Z"));
        assert_eq!(ms("2021-01-08T19:30:00-04:30"), ms("2021-01-09T00:00:00Z"));
        // Before the epoch.
        assert_eq!(ms("1969-12-31T23:59:59Z"), -1_000);
    }

    #[test]
    fn rejects_malformed_or_impossible_instants() {
        for bad in [
            "",
            "2021-01-08",
            "2021-01-08 21:51:23Z",
            "2021-01-08T21:51:23",
            "2021-13-01T00:00:00Z",
            "2021-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2021-01-08T24:00:00Z",
            "2021-01-08T23:59:60Z",
            "2021-01-08T21:51:23.Z",
            "2021-01-08T21:51:23.0001Z",
            "2021-01-08T21:51:23+0000",
            "2021-01-08T21:51:23+24:00",
            "2021-01-08T21:51:23Zjunk",
            "2021-0a-08T21:51:23Z",
        ] {
            let err = Timestamp::parse(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2021-01-08T21:51:23Z",
            "2024-02-29T12:00:00.250Z",
            "1969-12-31T23:59:59Z",
            "2400-12-31T23:59:59.999Z",
        ] {
            let parsed = Timestamp::parse(text).unwrap();
            assert_eq!(parsed.to_string(), text);
        }
    }

    #[test]
    fn row_times_are_durations_or_instants() {
        assert_eq!(
            RowTime::parse("90m"),
            Ok(RowTime::Relative(SimDuration::from_mins(90)))
        );
        assert_eq!(
            RowTime::parse("0"),
            Ok(RowTime::Relative(SimDuration::ZERO))
        );
        let instant = RowTime::parse("2021-01-08T21:51:23Z").unwrap();
        assert_eq!(
            instant,
            RowTime::Absolute(Timestamp::from_unix_millis(1_610_142_683_000))
        );
        assert!(RowTime::parse("-5m").unwrap_err().contains("negative"));
        assert!(RowTime::parse("5 min").is_err());
        // Offsets from an anchor.
        let anchor = Timestamp::from_unix_millis(1_610_142_680_000);
        assert_eq!(
            instant.offset(Some(anchor)),
            Some(SimDuration::from_secs(3))
        );
        assert_eq!(instant.offset(None), None);
        let later = Timestamp::from_unix_millis(1_610_142_690_000);
        assert_eq!(instant.offset(Some(later)), None);
    }
}
