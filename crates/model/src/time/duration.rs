//! Duration text as Kubernetes, Karpenter and scenario files write it
//! (`720h`, `30m`, `1h30m`, `1.5h`, `90s`): the grammar of Go's
//! `time.ParseDuration`, one or more `<number><unit>` parts summed, with the
//! unit set and the clock's resolution as parameters ([`DurationUnits`]).
//!
//! [`parse_go_duration`] reads Go's units into a `std::time::Duration`;
//! the simulator's scenario units (`ms` to `d`, whole milliseconds) are read
//! by `crate::sim::parse_duration` over the same grammar.
//! [`is_integer_duration`] checks the stricter integer-only forms the
//! Karpenter CRDs allow.

use std::time::Duration;

/// A unit set and the clock it counts in.
#[derive(Debug, Clone, Copy)]
pub struct DurationUnits {
    /// `(unit, length in clock ticks)`.
    pub units: &'static [(&'static str, u64)],
    /// Which characters a unit is made of: a unit is the longest run of
    /// them after a number.
    pub unit_char: fn(char) -> bool,
    /// What a fraction finer than one tick does.
    pub sub_tick: SubTick,
    /// When a sum past 64 bits of ticks is reported.
    pub overflow: Overflow,
}

/// What to do with a fraction finer than the clock (`1.5ns`, `0.5ms` on a
/// millisecond clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubTick {
    /// Drop it, digit by digit, as Go does.
    Truncate,
    /// Refuse it: the text must be a whole number of ticks.
    Reject,
}

/// When a duration too large for 64 bits of ticks is reported, which
/// decides the message for text that is both too large and malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// At the first part that takes the sum past 64 bits.
    AtEachPart,
    /// After the whole text is read (Go sums in wider integers), so a later
    /// syntax problem is reported instead.
    AtEnd,
}

/// Go's units on a nanosecond clock.
pub const GO_UNITS: DurationUnits = DurationUnits {
    units: &[
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("μs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ],
    // Go reads everything up to the next digit or `.` as the unit.
    unit_char: |c| !(c.is_ascii_digit() || c == '.'),
    sub_tick: SubTick::Truncate,
    overflow: Overflow::AtEnd,
};

/// Why duration text does not follow the grammar, for each caller to word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationSyntaxError {
    /// The text is empty.
    Empty,
    /// A part does not start with a number (`h`, `+5s`, ` 5s`).
    ExpectedNumber {
        /// Byte offset of the part.
        at: usize,
        /// The character found there.
        found: char,
    },
    /// A number without a unit (`10`, `1.`).
    MissingUnit {
        /// Byte offset of the part.
        at: usize,
        /// The number as written.
        number: String,
    },
    /// A unit outside the unit set.
    UnknownUnit {
        /// The unit as written.
        unit: String,
    },
    /// A fraction finer than the clock, with [`SubTick::Reject`].
    FinerThanTick {
        /// The fraction's digits as written.
        fraction: String,
    },
    /// More ticks than fit in 64 bits.
    TooLarge,
}

/// One `<number><unit>` part as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Part<'t> {
    whole: &'t str,
    /// The digits after a `.`, when there is one.
    fraction: Option<&'t str>,
    unit: &'t str,
}

/// Reads `text` part by part: a number (digits, optionally `.` and more
/// digits, at least one digit in all) then a unit (the longest run of
/// characters `unit_char` admits). Unit names are not checked here.
struct Parts<'t> {
    text: &'t str,
    pos: usize,
    unit_char: fn(char) -> bool,
}

impl<'t> Parts<'t> {
    fn new(text: &'t str, unit_char: fn(char) -> bool) -> Self {
        Parts {
            text,
            pos: 0,
            unit_char,
        }
    }

    /// The end of the run of characters `keep` admits from `from`.
    fn end_of(&self, from: usize, keep: impl Fn(char) -> bool) -> usize {
        self.text[from..]
            .char_indices()
            .find(|&(_, c)| !keep(c))
            .map_or(self.text.len(), |(i, _)| from + i)
    }

    fn part(&mut self) -> Result<Part<'t>, DurationSyntaxError> {
        let text = self.text;
        let start = self.pos;
        let mut pos = self.end_of(start, |c| c.is_ascii_digit());
        let whole = &text[start..pos];
        let mut fraction = None;
        if text[pos..].starts_with('.') {
            let from = pos + 1;
            pos = self.end_of(from, |c| c.is_ascii_digit());
            fraction = Some(&text[from..pos]);
        }
        if whole.is_empty() && fraction.is_none_or(str::is_empty) {
            let found = text[start..].chars().next().unwrap_or(' ');
            return Err(DurationSyntaxError::ExpectedNumber { at: start, found });
        }
        let unit_start = pos;
        pos = self.end_of(pos, self.unit_char);
        let unit = &text[unit_start..pos];
        if unit.is_empty() {
            return Err(DurationSyntaxError::MissingUnit {
                at: start,
                number: text[start..pos].to_string(),
            });
        }
        self.pos = pos;
        Ok(Part {
            whole,
            fraction,
            unit,
        })
    }
}

impl<'t> Iterator for Parts<'t> {
    type Item = Result<Part<'t>, DurationSyntaxError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.text.len() {
            return None;
        }
        let part = self.part();
        if part.is_err() {
            // Nothing is read after the first problem.
            self.pos = self.text.len();
        }
        Some(part)
    }
}

/// Parses `text` (the bare `0`, or one or more parts) into clock ticks of
/// `units`, reporting the first problem from the left. A sign is not part
/// of the grammar; callers that allow one strip it first.
pub fn parse_ticks(text: &str, units: &DurationUnits) -> Result<u64, DurationSyntaxError> {
    if text.is_empty() {
        return Err(DurationSyntaxError::Empty);
    }
    if text == "0" {
        return Ok(0);
    }
    // Sums run in 128 bits; `bound` is where a sum stops at once.
    let bound = match units.overflow {
        Overflow::AtEachPart => u128::from(u64::MAX),
        Overflow::AtEnd => u128::MAX,
    };
    let within = |value: Option<u128>| value.filter(|v| *v <= bound);
    let mut total: u128 = 0;
    for part in Parts::new(text, units.unit_char) {
        let part = part?;
        let Some(&(_, size)) = units.units.iter().find(|(name, _)| *name == part.unit) else {
            return Err(DurationSyntaxError::UnknownUnit {
                unit: part.unit.to_string(),
            });
        };
        let whole: u128 = if part.whole.is_empty() {
            0
        } else {
            part.whole
                .parse()
                .map_err(|_| DurationSyntaxError::TooLarge)?
        };
        let mut ticks =
            within(whole.checked_mul(u128::from(size))).ok_or(DurationSyntaxError::TooLarge)?;
        let fraction = part.fraction.unwrap_or("");
        // Below one `size`: adding it cannot pass u128::MAX.
        ticks += match units.sub_tick {
            SubTick::Truncate => truncated_fraction(fraction, size),
            SubTick::Reject => exact_fraction(fraction, size)?,
        };
        total = within(total.checked_add(ticks)).ok_or(DurationSyntaxError::TooLarge)?;
    }
    u64::try_from(total).map_err(|_| DurationSyntaxError::TooLarge)
}

/// `0.<digits> × size`, each digit scaled by a tenth of the previous one
/// and the remainder dropped (Go truncates to whole nanoseconds).
fn truncated_fraction(digits: &str, size: u64) -> u128 {
    let mut value: u128 = 0;
    let mut scale = u128::from(size);
    for digit in digits.bytes() {
        scale /= 10;
        value += u128::from(digit - b'0') * scale;
    }
    value
}

/// `0.<digits> × size` exactly, or an error when it is not a whole number
/// of ticks.
fn exact_fraction(digits: &str, size: u64) -> Result<u128, DurationSyntaxError> {
    let finer = || DurationSyntaxError::FinerThanTick {
        fraction: digits.to_string(),
    };
    // Trailing zeros carry no value; dropping them keeps the power of ten
    // small (`1.500000000000000000000s` is fine).
    let significant = digits.trim_end_matches('0');
    if significant.is_empty() {
        return Ok(0);
    }
    let scale = u32::try_from(significant.len())
        .ok()
        .and_then(|n| 10u128.checked_pow(n))
        .ok_or_else(finer)?;
    let value: u128 = significant.parse().map_err(|_| finer())?;
    let scaled = value.checked_mul(u128::from(size)).ok_or_else(finer)?;
    if scaled % scale != 0 {
        return Err(finer());
    }
    Ok(scaled / scale)
}

/// Parses a Go duration (`300ms`, `1.5h`, `2h45m`). Negative durations are
/// rejected: nothing karpsim reads may be negative.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("invalid duration {text:?}: {why}");
    let s = text.strip_prefix('+').unwrap_or(text);
    if s.starts_with('-') {
        return Err(bad("negative"));
    }
    parse_ticks(s, &GO_UNITS)
        .map(Duration::from_nanos)
        .map_err(|e| {
            bad(match e {
                DurationSyntaxError::Empty => "empty",
                DurationSyntaxError::ExpectedNumber { at, .. }
                | DurationSyntaxError::MissingUnit { at, .. } => go_number_problem(&s[at..]),
                DurationSyntaxError::UnknownUnit { .. } => "unknown unit",
                DurationSyntaxError::FinerThanTick { .. } => "malformed number",
                DurationSyntaxError::TooLarge => "too large",
            })
        })
}

/// What is wrong with a part whose number is missing or malformed, in
/// Go's order: Go takes every digit and `.` as the number and looks at the
/// unit after them first, so only a known unit makes it a number problem.
fn go_number_problem(part: &str) -> &'static str {
    let after_number = part.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let unit_end = after_number
        .find(|c: char| !(GO_UNITS.unit_char)(c))
        .unwrap_or(after_number.len());
    match &after_number[..unit_end] {
        "" => "missing unit",
        unit if GO_UNITS.units.iter().any(|(name, _)| *name == unit) => "malformed number",
        _ => "unknown unit",
    }
}

/// Whether `text` is a sequence of `<digits><unit>` groups using only
/// `units` (the Karpenter CRD patterns, e.g. `^([0-9]+(s|m|h))+$`).
pub fn is_integer_duration(text: &str, units: &[char]) -> bool {
    !text.is_empty()
        && Parts::new(text, |c| c.is_ascii_alphabetic()).all(|part| {
            part.is_ok_and(|part| {
                let mut unit = part.unit.chars();
                part.fraction.is_none()
                    && unit.next().is_some_and(|u| units.contains(&u))
                    && unit.next().is_none()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forms from Go's time.ParseDuration documentation and tests.
    #[test]
    fn go_forms_parse() {
        let secs = |s: &str| parse_go_duration(s).map(|d| d.as_secs_f64());
        assert_eq!(secs("720h"), Ok(2_592_000.0));
        assert_eq!(secs("1h30m"), Ok(5_400.0));
        assert_eq!(secs("1.5h"), Ok(5_400.0));
        assert_eq!(secs("300ms"), Ok(0.3));
        assert_eq!(secs("2h45m30s"), Ok(9_930.0));
        assert_eq!(secs("0"), Ok(0.0));
        assert_eq!(secs(".5s"), Ok(0.5));
    }

    #[test]
    fn bad_forms_are_rejected() {
        for text in ["", "5", "5d", "-1h", "1..5h", "h", "1h 30m"] {
            assert!(parse_go_duration(text).is_err(), "{text:?} accepted");
        }
    }

    /// Karpenter CRD patterns: `^([0-9]+(s|m|h))+$` and, for budget
    /// durations, hours and minutes only.
    #[test]
    fn integer_duration_pattern() {
        assert!(is_integer_duration("720h", &['s', 'm', 'h']));
        assert!(is_integer_duration("1h30m", &['s', 'm', 'h']));
        assert!(!is_integer_duration("1.5h", &['s', 'm', 'h']));
        assert!(!is_integer_duration("30s", &['m', 'h']));
        assert!(!is_integer_duration("h", &['h']));
        assert!(!is_integer_duration("10", &['h']));
    }

    /// Go's wording for malformed parts: the unit after the number is
    /// looked at first, and overflow is reported only after the whole text.
    #[test]
    fn go_errors_name_the_first_problem_in_go_order() {
        let reason = |s: &str| parse_go_duration(s).unwrap_err();
        assert_eq!(reason(".s"), "invalid duration \".s\": malformed number");
        assert_eq!(
            reason("1..5h"),
            "invalid duration \"1..5h\": malformed number"
        );
        assert_eq!(reason("x"), "invalid duration \"x\": unknown unit");
        assert_eq!(
            reason("1h 30m"),
            "invalid duration \"1h 30m\": unknown unit"
        );
        assert_eq!(reason("5"), "invalid duration \"5\": missing unit");
        assert_eq!(
            reason("99999999999999999999h5x"),
            "invalid duration \"99999999999999999999h5x\": unknown unit"
        );
        assert_eq!(
            reason("99999999999999999999h"),
            "invalid duration \"99999999999999999999h\": too large"
        );
        // 1 µs and its spellings; a fraction of a nanosecond is dropped.
        assert_eq!(parse_go_duration("1µs"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_go_duration("1μs"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_go_duration("1.9ns"), Ok(Duration::from_nanos(1)));
    }

    /// The grammar's parameters: unit set and characters, sub-tick
    /// fractions, and when overflow stops the reading.
    #[test]
    fn grammar_parameters_change_only_what_they_name() {
        const TENTHS: DurationUnits = DurationUnits {
            units: &[("t", 1), ("u", 10)],
            unit_char: |c| c.is_ascii_lowercase(),
            sub_tick: SubTick::Reject,
            overflow: Overflow::AtEachPart,
        };
        let truncating = DurationUnits {
            sub_tick: SubTick::Truncate,
            ..TENTHS
        };
        assert_eq!(parse_ticks("2u3t", &TENTHS), Ok(23));
        assert_eq!(parse_ticks("0.5u", &TENTHS), Ok(5));
        assert_eq!(
            parse_ticks("0.55u", &TENTHS),
            Err(DurationSyntaxError::FinerThanTick {
                fraction: "55".into()
            })
        );
        assert_eq!(parse_ticks("0.55u", &truncating), Ok(5));
        assert_eq!(
            parse_ticks("2v", &TENTHS),
            Err(DurationSyntaxError::UnknownUnit { unit: "v".into() })
        );
        assert_eq!(
            parse_ticks("2T", &TENTHS),
            Err(DurationSyntaxError::MissingUnit {
                at: 0,
                number: "2".into()
            })
        );
        assert_eq!(
            parse_ticks("2t+", &TENTHS),
            Err(DurationSyntaxError::ExpectedNumber { at: 2, found: '+' })
        );
        // 2^64 ticks, then a bad unit: which problem is named first.
        let too_large_then_bad = "18446744073709551616t1v";
        let at_end = DurationUnits {
            overflow: Overflow::AtEnd,
            ..TENTHS
        };
        assert_eq!(
            parse_ticks("18446744073709551616t", &at_end),
            Err(DurationSyntaxError::TooLarge)
        );
        assert_eq!(
            parse_ticks(too_large_then_bad, &TENTHS),
            Err(DurationSyntaxError::TooLarge)
        );
        assert_eq!(
            parse_ticks(too_large_then_bad, &at_end),
            Err(DurationSyntaxError::UnknownUnit { unit: "v".into() })
        );
    }
}
