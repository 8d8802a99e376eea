//! The cron dialect of disruption budget schedules: what Karpenter accepts
//! through `cron.ParseStandard("TZ=UTC " + schedule)` of robfig/cron v3 —
//! five fields (minute, hour, day of month, month, day of week) with `*`,
//! `?`, lists, ranges, steps and month / weekday names, or one of the
//! descriptors `@yearly @annually @monthly @weekly @daily @midnight @hourly`
//! (and robfig's `@every <duration>`). Times are UTC milliseconds since the
//! Unix epoch; nothing here reads a clock.

use thiserror::Error;

use crate::time::duration::parse_go_duration;

/// Why a schedule does not parse (robfig's wording).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CronError {
    /// Not five whitespace-separated fields.
    #[error("expected exactly 5 fields, found {found}: {spec:?}")]
    FieldCount {
        /// Fields found.
        found: usize,
        /// The schedule.
        spec: String,
    },
    /// A `@` word that is not a known descriptor.
    #[error("unrecognized descriptor: {0}")]
    UnknownDescriptor(String),
    /// A malformed or out-of-range field.
    #[error("{0}")]
    Field(String),
}

const MS_PER_MINUTE: i64 = 60_000;
const MINUTES_PER_DAY: i64 = 24 * 60;
/// Set on a field written `*` or `?` (robfig's star bit): it changes how
/// day-of-month and day-of-week combine.
const STAR: u64 = 1 << 63;
/// robfig gives up looking for the next hit after this many years.
const SEARCH_YEARS: i64 = 5;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
    first_name: u32,
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
    first_name: 0,
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
    first_name: 0,
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
    first_name: 0,
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
    first_name: 1,
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
    first_name: 0,
};

/// A parsed schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// A field schedule: one bit per allowed value, plus [`STAR`].
    Fields {
        /// Minutes 0–59.
        minute: u64,
        /// Hours 0–23.
        hour: u64,
        /// Days of month 1–31.
        day_of_month: u64,
        /// Months 1–12.
        month: u64,
        /// Days of week 0–6 (Sunday = 0).
        day_of_week: u64,
    },
    /// `@every <duration>`: fires every `period_ms` (whole seconds, ≥ 1 s).
    Every {
        /// The period in milliseconds.
        period_ms: i64,
    },
}

fn all(bounds: &Bounds) -> u64 {
    bits(bounds.min, bounds.max, 1) | STAR
}

fn bits(start: u32, end: u32, step: u32) -> u64 {
    (start..=end)
        .step_by(step as usize)
        .fold(0, |acc, v| acc | (1u64 << v))
}

/// Go's `strconv.Atoi` on a non-negative value (a leading `+` is allowed).
fn parse_number(text: &str, expr: &str) -> Result<u32, CronError> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CronError::Field(format!(
            "failed to parse int from {text}: invalid syntax ({expr})"
        )));
    }
    digits.parse().map_err(|_| {
        CronError::Field(format!(
            "failed to parse int from {text}: value out of range"
        ))
    })
}

fn number_or_name(text: &str, bounds: &Bounds, expr: &str) -> Result<u32, CronError> {
    let lower = text.to_ascii_lowercase();
    match bounds.names.iter().position(|n| *n == lower) {
        Some(i) => Ok(bounds.first_name + i as u32),
        None => parse_number(text, expr),
    }
}

/// One comma-separated part: `*`, `?`, `N`, `N-M`, each optionally `/step`.
fn range_bits(expr: &str, bounds: &Bounds) -> Result<u64, CronError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        // robfig ignores anything after a star's hyphen.
        (start, end, extra) = (bounds.min, bounds.max, STAR);
    } else {
        start = number_or_name(low_and_high[0], bounds, expr)?;
        end = match low_and_high.len() {
            1 => start,
            2 => number_or_name(low_and_high[1], bounds, expr)?,
            _ => return Err(CronError::Field(format!("too many hyphens: {expr}"))),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_number(range_and_step[1], expr)?;
            // "N/step" means "N-max/step".
            if single {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(CronError::Field(format!("too many slashes: {expr}"))),
    };
    if start < bounds.min {
        return Err(CronError::Field(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        )));
    }
    if end > bounds.max {
        return Err(CronError::Field(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        )));
    }
    if start > end {
        return Err(CronError::Field(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        )));
    }
    if step == 0 {
        return Err(CronError::Field(format!(
            "step of range should be a positive number: {expr}"
        )));
    }
    Ok(bits(start, end, step) | extra)
}

fn field_bits(field: &str, bounds: &Bounds) -> Result<u64, CronError> {
    // Empty list items are skipped, as Go's strings.FieldsFunc does.
    field
        .split(',')
        .filter(|part| !part.is_empty())
        .try_fold(0, |acc, part| Ok(acc | range_bits(part, bounds)?))
}

impl Schedule {
    /// Parses a budget schedule as Karpenter does (UTC, surrounding
    /// whitespace ignored).
    pub fn parse(spec: &str) -> Result<Schedule, CronError> {
        let spec = spec.trim();
        if spec.starts_with('@') {
            return descriptor(spec);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(CronError::FieldCount {
                found: fields.len(),
                spec: spec.to_string(),
            });
        }
        Ok(Schedule::Fields {
            minute: field_bits(fields[0], &MINUTES)?,
            hour: field_bits(fields[1], &HOURS)?,
            day_of_month: field_bits(fields[2], &DAYS_OF_MONTH)?,
            month: field_bits(fields[3], &MONTHS)?,
            day_of_week: field_bits(fields[4], &DAYS_OF_WEEK)?,
        })
    }

    /// The first firing strictly after `after` (Unix ms, UTC), or `None`
    /// when there is none within robfig's five-year search horizon.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match *self {
            Schedule::Every { period_ms } => {
                // robfig drops the sub-second part of the reference time.
                Some(after_ms - after_ms.rem_euclid(1000) + period_ms)
            }
            Schedule::Fields {
                minute,
                hour,
                day_of_month,
                month,
                day_of_week,
            } => {
                let first_minute = after_ms.div_euclid(MS_PER_MINUTE) + 1;
                let first_day = first_minute.div_euclid(MINUTES_PER_DAY);
                let first_minute_of_day = first_minute.rem_euclid(MINUTES_PER_DAY);
                let (first_year, _, _) = civil_from_days(first_day);
                let stars = day_of_month & STAR != 0 || day_of_week & STAR != 0;
                let mut day = first_day;
                loop {
                    let (y, m, d) = civil_from_days(day);
                    if y > first_year + SEARCH_YEARS {
                        return None;
                    }
                    let weekday = (day + 4).rem_euclid(7); // 1970-01-01 was a Thursday.
                    let dom_match = day_of_month & (1 << d) != 0;
                    let dow_match = day_of_week & (1 << weekday) != 0;
                    let day_match = if stars {
                        dom_match && dow_match
                    } else {
                        dom_match || dow_match
                    };
                    if month & (1 << m) != 0 && day_match {
                        let from = if day == first_day {
                            first_minute_of_day
                        } else {
                            0
                        };
                        if let Some(found) = (from..MINUTES_PER_DAY)
                            .find(|t| hour & (1 << (t / 60)) != 0 && minute & (1 << (t % 60)) != 0)
                        {
                            return Some((day * MINUTES_PER_DAY + found) * MS_PER_MINUTE);
                        }
                    }
                    day += 1;
                }
            }
        }
    }
}

fn descriptor(spec: &str) -> Result<Schedule, CronError> {
    let at = |minute: u64, hour: u64, day_of_month: u64, month: u64, day_of_week: u64| {
        Ok(Schedule::Fields {
            minute,
            hour,
            day_of_month,
            month,
            day_of_week,
        })
    };
    match spec {
        "@yearly" | "@annually" => at(1, 1, 1 << 1, 1 << 1, all(&DAYS_OF_WEEK)),
        "@monthly" => at(1, 1, 1 << 1, all(&MONTHS), all(&DAYS_OF_WEEK)),
        "@weekly" => at(1, 1, all(&DAYS_OF_MONTH), all(&MONTHS), 1),
        "@daily" | "@midnight" => at(1, 1, all(&DAYS_OF_MONTH), all(&MONTHS), all(&DAYS_OF_WEEK)),
        "@hourly" => at(
            1,
            all(&HOURS),
            all(&DAYS_OF_MONTH),
            all(&MONTHS),
            all(&DAYS_OF_WEEK),
        ),
        _ => match spec.strip_prefix("@every ") {
            Some(text) => {
                let period = parse_go_duration(text).map_err(|e| {
                    CronError::Field(format!("failed to parse duration {spec}: {e}"))
                })?;
                // Whole seconds, at least one (robfig's Every).
                let secs = i64::try_from(period.as_secs())
                    .unwrap_or(i64::MAX / 1000)
                    .max(1);
                Ok(Schedule::Every {
                    period_ms: secs.saturating_mul(1000),
                })
            }
            None => Err(CronError::UnknownDescriptor(spec.to_string())),
        },
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = i64::from(month);
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date (year, month 1–12, day 1–31) of a day number since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix ms of a UTC date-time.
    fn utc(y: i64, mo: u32, d: u32, h: i64, mi: i64) -> i64 {
        (days_from_civil(y, mo, d) * MINUTES_PER_DAY + h * 60 + mi) * MS_PER_MINUTE
    }

    fn next(spec: &str, after: i64) -> Option<i64> {
        Schedule::parse(spec).unwrap().next_after(after)
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        // 2026-01-05 is 20458 days after the epoch (1767571200 s / 86400).
        assert_eq!(days_from_civil(2026, 1, 5), 20_458);
        for day in [-800_000, -1, 0, 59, 11_016, 20_458, 2_932_896] {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
        assert_eq!(civil_from_days(days_from_civil(2028, 2, 29)), (2028, 2, 29));
    }

    /// robfig/cron v3 spec_test.go "TestNext": next hits are strictly after
    /// the reference time, at whole minutes.
    #[test]
    fn next_is_strictly_after() {
        let noon = utc(2026, 3, 2, 12, 0);
        assert_eq!(next("0 12 * * *", noon), Some(utc(2026, 3, 3, 12, 0)));
        assert_eq!(next("0 12 * * *", noon - 1), Some(noon));
        assert_eq!(
            next("*/15 * * * *", noon + 1),
            Some(utc(2026, 3, 2, 12, 15))
        );
        // Ranges with steps and lists; wrap into the next day.
        assert_eq!(
            next("5,10-20/5 23 * * *", utc(2026, 3, 2, 23, 15)),
            Some(utc(2026, 3, 2, 23, 20))
        );
        assert_eq!(
            next("5,10-20/5 23 * * *", utc(2026, 3, 2, 23, 20)),
            Some(utc(2026, 3, 3, 23, 5))
        );
        // "N/step" means N..max by step.
        assert_eq!(
            next("50/5 * * * *", utc(2026, 3, 2, 12, 56)),
            Some(utc(2026, 3, 2, 13, 50))
        );
        // Month and weekday names, any case; 2026-01-05 is a Monday.
        assert_eq!(
            next("0 9 * * MON-fri", utc(2026, 1, 9, 10, 0)),
            Some(utc(2026, 1, 12, 9, 0))
        );
        assert_eq!(
            next("0 0 1 Feb,JUN *", utc(2026, 2, 1, 0, 0)),
            Some(utc(2026, 6, 1, 0, 0))
        );
        // Year wrap.
        assert_eq!(
            next("0 0 1 1 *", utc(2026, 6, 1, 0, 0)),
            Some(utc(2027, 1, 1, 0, 0))
        );
    }

    /// robfig/cron v3 spec.go `dayMatches`: with neither day field starred a
    /// day matches either; with one starred both must match; `*/2` clears
    /// the star (spec_test.go "TestNext" dom/dow cases).
    #[test]
    fn day_of_month_and_week_combine_like_robfig() {
        // 13th or any Friday: after Mon 2026-01-05 the first is Fri 01-09.
        assert_eq!(
            next("0 0 13 * 5", utc(2026, 1, 5, 0, 0)),
            Some(utc(2026, 1, 9, 0, 0))
        );
        // Starred dom: only Fridays.
        assert_eq!(
            next("0 0 * * 5", utc(2026, 1, 9, 0, 0)),
            Some(utc(2026, 1, 16, 0, 0))
        );
        // "*/2" dom is not a star: odd days OR Fridays. 01-06 is even (Tue),
        // 01-07 odd → 01-07.
        assert_eq!(
            next("0 0 */2 * 5", utc(2026, 1, 6, 0, 0)),
            Some(utc(2026, 1, 7, 0, 0))
        );
        // "*/1" keeps the star: every day AND Friday = Fridays.
        assert_eq!(
            next("0 0 */1 * 5", utc(2026, 1, 6, 0, 0)),
            Some(utc(2026, 1, 9, 0, 0))
        );
    }

    /// robfig/cron v3 parser.go `parseDescriptor`.
    #[test]
    fn descriptors() {
        let t = utc(2026, 1, 7, 13, 30); // a Wednesday
        assert_eq!(next("@hourly", t), Some(utc(2026, 1, 7, 14, 0)));
        assert_eq!(next("@daily", t), Some(utc(2026, 1, 8, 0, 0)));
        assert_eq!(next("@midnight", t), next("@daily", t));
        assert_eq!(next("@weekly", t), Some(utc(2026, 1, 11, 0, 0)), "Sunday");
        assert_eq!(next("@monthly", t), Some(utc(2026, 2, 1, 0, 0)));
        assert_eq!(next("@yearly", t), Some(utc(2027, 1, 1, 0, 0)));
        assert_eq!(next("@annually", t), next("@yearly", t));
        assert_eq!(next("@every 90m", t + 500), Some(t + 90 * MS_PER_MINUTE));
        assert_eq!(
            Schedule::parse("@fortnightly"),
            Err(CronError::UnknownDescriptor("@fortnightly".into()))
        );
    }

    /// robfig/cron v3 parser_test.go "TestParseScheduleErrors" / "TestRange"
    /// error cases.
    #[test]
    fn parse_errors() {
        let err = |spec: &str| Schedule::parse(spec).unwrap_err().to_string();
        assert!(err("* * * *").contains("expected exactly 5 fields, found 4"));
        assert!(err("0 0 * * * *").contains("found 6"));
        assert!(err("").contains("found 0"));
        assert!(err("60 * * * *").contains("above maximum (59)"));
        assert!(err("* 24 * * *").contains("above maximum (23)"));
        assert!(err("* * 0 * *").contains("below minimum (1)"));
        assert!(err("* * * 13 *").contains("above maximum (12)"));
        assert!(
            err("* * * * 7").contains("above maximum (6)"),
            "Sunday is only 0"
        );
        assert!(err("5-1 * * * *").contains("beyond end of range"));
        assert!(err("*/0 * * * *").contains("step of range should be a positive number"));
        assert!(err("1-2-3 * * * *").contains("too many hyphens"));
        assert!(err("1/2/3 * * * *").contains("too many slashes"));
        assert!(err("a * * * *").contains("failed to parse int from a"));
        assert!(err("* * * * funday").contains("failed to parse int"));
        assert!(err("* * * * 1-").contains("failed to parse int"));
    }

    /// robfig quirks kept on purpose: `?` is a star, empty list items are
    /// skipped, a leading `+` is a number, and a never-firing schedule has
    /// no next hit.
    #[test]
    fn robfig_quirks() {
        let t = utc(2026, 1, 7, 0, 0);
        assert_eq!(next("0 0 ? * ?", t), next("0 0 * * *", t));
        assert_eq!(next("0,,30 * * * *", t), Some(t + 30 * MS_PER_MINUTE));
        assert_eq!(next("+5 * * * *", t), Some(t + 5 * MS_PER_MINUTE));
        assert_eq!(next("0 0 30 2 *", t), None, "February 30th never comes");
        // Leap day: found within the horizon.
        assert_eq!(next("0 0 29 2 *", t), Some(utc(2028, 2, 29, 0, 0)));
    }
}
