//! Exact hourly prices: an integer count of micro-dollars, so prices add,
//! compare and sort deterministically with no floating point.

use std::fmt;
use std::ops::{Add, AddAssign};

/// A price in micro-USD (10⁻⁶ US dollars) per instance-hour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Price(i64);

/// Micro-dollars in one dollar.
const MICROS_PER_DOLLAR: i64 = 1_000_000;

impl Price {
    /// Zero dollars.
    pub const ZERO: Price = Price(0);

    /// A price of `micros` micro-dollars per hour.
    pub const fn from_micros(micros: i64) -> Price {
        Price(micros)
    }

    /// The price in micro-dollars per hour.
    pub const fn micros(self) -> i64 {
        self.0
    }

    /// The price in dollars per hour, for display and reporting only.
    pub fn dollars(self) -> f64 {
        self.0 as f64 / MICROS_PER_DOLLAR as f64
    }

    /// Parses a non-negative decimal dollar amount (`"0.096"`, `"12"`,
    /// `"9.6e-2"`). Digits beyond the sixth decimal are rounded half up.
    pub fn parse_dollars(text: &str) -> Option<Price> {
        let expanded = plain_decimal(text)?;
        let text = expanded.as_str();
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        if !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let whole: i64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let mut micros = whole.checked_mul(MICROS_PER_DOLLAR)?;
        let digits = fraction.as_bytes();
        let mut scale = MICROS_PER_DOLLAR / 10;
        for &digit in digits.iter().take(6) {
            micros += i64::from(digit - b'0') * scale;
            scale /= 10;
        }
        if digits.get(6).is_some_and(|&d| d >= b'5') {
            micros += 1;
        }
        Some(Price(micros))
    }

    /// `self × numerator / denominator`, rounded to the nearest micro-dollar
    /// (halves away from zero). `None` when `denominator` is zero.
    pub fn scale(self, numerator: i128, denominator: i128) -> Option<Price> {
        if denominator == 0 {
            return None;
        }
        let product = i128::from(self.0) * numerator;
        let half = denominator.abs() / 2;
        let rounded = if (product >= 0) == (denominator > 0) {
            (product.abs() + half) / denominator.abs()
        } else {
            -((product.abs() + half) / denominator.abs())
        };
        i64::try_from(rounded).ok().map(Price)
    }
}

impl Add for Price {
    type Output = Price;
    fn add(self, rhs: Price) -> Price {
        Price(self.0 + rhs.0)
    }
}

impl AddAssign for Price {
    fn add_assign(&mut self, rhs: Price) {
        self.0 += rhs.0;
    }
}

impl Price {
    /// The amount in dollars without a currency sign (`0.096`), for CSV and
    /// JSON.
    pub fn decimal(self) -> String {
        let text = self.to_string();
        text.replacen('$', "", 1)
    }
}

/// The most an exponent may shift a decimal point: far past any price or
/// fraction, and it keeps the expanded text short.
const MAX_EXPONENT: i32 = 64;

/// `text` with a decimal exponent written out (`1.5e-3` → `0.0015`,
/// `2E2` → `200`), exactly, so readers of plain decimals accept the
/// exponent form too; text without an exponent is returned as it is.
/// `None` for an exponent that is not a whole number or shifts by more
/// than 64 places.
pub fn plain_decimal(text: &str) -> Option<String> {
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else {
        return Some(text.to_string());
    };
    let exponent: i32 = exponent
        .strip_prefix('+')
        .unwrap_or(exponent)
        .parse()
        .ok()
        .filter(|e: &i32| e.abs() <= MAX_EXPONENT)?;
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    // Position of the decimal point within `digits` after the shift.
    let point = whole.len() as i64 + i64::from(exponent);
    Some(if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (head, tail) = digits.split_at(point as usize);
        format!("{head}.{tail}")
    })
}

impl fmt::Display for Price {
    /// Dollars with at least two and at most six decimals: `$0.096`, `$1.00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let whole = abs / MICROS_PER_DOLLAR as u64;
        let fraction = format!("{:06}", abs % MICROS_PER_DOLLAR as u64);
        let trimmed = fraction.trim_end_matches('0');
        let shown = if trimmed.len() < 2 {
            &fraction[..2]
        } else {
            trimmed
        };
        write!(f, "{sign}${whole}.{shown}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_dollars_exactly() {
        assert_eq!(Price::parse_dollars("0.096"), Some(Price(96_000)));
        assert_eq!(Price::parse_dollars("12"), Some(Price(12_000_000)));
        assert_eq!(Price::parse_dollars("0.0000005"), Some(Price(1)));
        assert_eq!(Price::parse_dollars("0.0000004"), Some(Price(0)));
        assert_eq!(Price::parse_dollars(".5"), Some(Price(500_000)));
        assert_eq!(Price::parse_dollars(""), None);
        assert_eq!(Price::parse_dollars("1.2.3"), None);
        assert_eq!(Price::parse_dollars("-1"), None);
    }

    /// The exponent form reads exactly as its plain decimal.
    #[test]
    fn parses_exponents_exactly() {
        assert_eq!(Price::parse_dollars("9.6e-2"), Some(Price(96_000)));
        assert_eq!(Price::parse_dollars("1E1"), Some(Price(10_000_000)));
        assert_eq!(Price::parse_dollars("1e+0"), Some(Price(1_000_000)));
        assert_eq!(plain_decimal("1.5e-3").as_deref(), Some("0.0015"));
        assert_eq!(plain_decimal("15e-1").as_deref(), Some("1.5"));
        assert_eq!(plain_decimal("2.5e2").as_deref(), Some("250"));
        assert_eq!(plain_decimal("0.001").as_deref(), Some("0.001"));
        for bad in ["1e", "e3", "1e1.5", "1e-999999999", "-1e2", "1.2.3e1"] {
            assert_eq!(plain_decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn displays_dollars() {
        assert_eq!(Price(96_000).to_string(), "$0.096");
        assert_eq!(Price(96_000).decimal(), "0.096");
        assert_eq!(Price(-1_500_000).decimal(), "-1.50");
        assert_eq!(Price(1_000_000).to_string(), "$1.00");
        assert_eq!(Price(4_200).to_string(), "$0.0042");
        assert_eq!(Price(98_320_000).to_string(), "$98.32");
        assert_eq!(Price(-500_000).to_string(), "-$0.50");
    }

    #[test]
    fn scales_with_rounding() {
        // 0.096 × 35 / 100 = 0.0336 exactly.
        assert_eq!(Price(96_000).scale(35, 100), Some(Price(33_600)));
        // 1 µ$ × 1 / 2 rounds half away from zero.
        assert_eq!(Price(1).scale(1, 2), Some(Price(1)));
        assert_eq!(Price(1).scale(1, 3), Some(Price(0)));
        assert_eq!(Price(1).scale(1, 0), None);
    }
}
