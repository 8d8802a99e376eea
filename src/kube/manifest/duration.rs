//! Durations as Kubernetes and Karpenter write them (`720h`, `30m`, `1h30m`,
//! `1.5h`, `90s`), i.e. Go's `time.ParseDuration`, plus the stricter
//! integer-only forms the Karpenter CRDs allow.

use std::time::Duration;

/// Parses a Go duration (`300ms`, `1.5h`, `2h45m`). Negative durations are
/// rejected: nothing karpsim reads may be negative.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("invalid duration {text:?}: {why}");
    let s = text.strip_prefix('+').unwrap_or(text);
    if s.starts_with('-') {
        return Err(bad("negative"));
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(bad("empty"));
    }
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(bad("missing unit")),
            _ => return Err(bad("unknown unit")),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(bad("malformed number"));
        }
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad("too large"))?
        };
        let mut value = whole
            .checked_mul(unit_nanos)
            .ok_or_else(|| bad("too large"))?;
        // Fractions are truncated to whole nanoseconds, as Go does.
        let mut scale = unit_nanos;
        for digit in fraction.bytes() {
            scale /= 10;
            value += u128::from(digit - b'0') * scale;
        }
        total = total.checked_add(value).ok_or_else(|| bad("too large"))?;
        rest = after;
    }
    let nanos = u64::try_from(total).map_err(|_| bad("too large"))?;
    Ok(Duration::from_nanos(nanos))
}

/// Whether `text` is a sequence of `<digits><unit>` groups using only
/// `units` (the Karpenter CRD patterns, e.g. `^([0-9]+(s|m|h))+$`).
pub fn is_integer_duration(text: &str, units: &[char]) -> bool {
    let mut saw_group = false;
    let mut digits = 0;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits += 1;
        } else if units.contains(&c) && digits > 0 {
            digits = 0;
            saw_group = true;
        } else {
            return false;
        }
    }
    saw_group && digits == 0
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
}
