//! Kubernetes resource quantities (`100m`, `1.5`, `1e3`, `129M`, `123Mi`, `500n`, …).
//!
//! A quantity is parsed exactly into an integer count of nano-units, so no
//! floating point ever touches a resource value. Conversions to the integer
//! units karpsim schedules with round *up*, as Kubernetes does: a CPU of
//! `0.0001` is one millicore, a memory of `1.5` is two bytes.

use std::fmt;

/// Why a quantity string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {reason}")]
pub struct QuantityError {
    /// The text as it was written.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// An exact Kubernetes quantity, held as a signed count of nano-units (10⁻⁹).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    nanos: i128,
}

/// The largest magnitude accepted: Kubernetes caps quantities at what an
/// int64 of units can hold at nano scale; anything larger is surely a typo.
const MAX_NANOS: i128 = (i64::MAX as i128) * 1_000_000_000;

impl Quantity {
    /// A quantity of `units` whole units.
    pub const fn from_units(units: i64) -> Self {
        Quantity {
            nanos: units as i128 * 1_000_000_000,
        }
    }

    /// A quantity of `millis` thousandths of a unit.
    pub const fn from_millis(millis: i64) -> Self {
        Quantity {
            nanos: millis as i128 * 1_000_000,
        }
    }

    /// Parses any form Kubernetes accepts: an optional sign, a decimal number,
    /// then either a decimal SI suffix (`n u m k M G T P E`), a binary suffix
    /// (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-2`).
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let err = |reason| QuantityError {
            text: text.to_string(),
            reason,
        };
        let s = text.trim();
        if s.is_empty() {
            return Err(err("empty"));
        }
        let (negative, s) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let number_len = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(number_len);
        let (whole, fraction) = match number.split_once('.') {
            Some((w, f)) => (w, f),
            None => (number, ""),
        };
        if whole.is_empty() && fraction.is_empty() {
            return Err(err("no digits"));
        }
        if fraction.contains('.') {
            return Err(err("more than one decimal point"));
        }
        // Binary suffixes multiply by 2^(10k); decimal ones shift the exponent.
        let (binary_shift, decimal_exponent): (u32, i32) = match suffix {
            "" => (0, 0),
            "n" => (0, -9),
            "u" => (0, -6),
            "m" => (0, -3),
            "k" => (0, 3),
            "M" => (0, 6),
            "G" => (0, 9),
            "T" => (0, 12),
            "P" => (0, 15),
            "E" => (0, 18),
            "Ki" => (10, 0),
            "Mi" => (20, 0),
            "Gi" => (30, 0),
            "Ti" => (40, 0),
            "Pi" => (50, 0),
            "Ei" => (60, 0),
            _ if suffix.starts_with(['e', 'E']) => {
                let exp = &suffix[1..];
                let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err("unknown suffix"));
                }
                let value: i32 = exp.parse().map_err(|_| err("exponent out of range"))?;
                if !(-30..=30).contains(&value) {
                    return Err(err("exponent out of range"));
                }
                (0, value)
            }
            _ => return Err(err("unknown suffix")),
        };
        // Exact mantissa: digits of whole and fraction, scale = -len(fraction).
        let mut mantissa: i128 = 0;
        for b in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(b - b'0')))
                .filter(|m| *m <= MAX_NANOS)
                .ok_or_else(|| err("too large"))?;
        }
        let exponent = decimal_exponent + 9 - fraction.len() as i32;
        let mut nanos = mantissa;
        if exponent >= 0 {
            for _ in 0..exponent {
                nanos = nanos.checked_mul(10).ok_or_else(|| err("too large"))?;
            }
        } else {
            // Below nano precision Kubernetes rounds up (away from zero).
            let divisor = 10i128
                .checked_pow(exponent.unsigned_abs())
                .ok_or_else(|| err("too small"))?;
            nanos = (nanos + divisor - 1) / divisor;
        }
        nanos = nanos
            .checked_shl(binary_shift)
            .filter(|n| *n >> binary_shift == nanos)
            .ok_or_else(|| err("too large"))?;
        if nanos > MAX_NANOS {
            return Err(err("too large"));
        }
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    /// The value in thousandths, rounded up (CPU millicores).
    pub fn millis_ceil(self) -> i64 {
        ceil_div(self.nanos, 1_000_000)
    }

    /// The value in whole units, rounded up (bytes, pods, GPUs).
    pub fn units_ceil(self) -> i64 {
        ceil_div(self.nanos, 1_000_000_000)
    }

    /// The exact value in nano-units.
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(self) -> bool {
        self.nanos < 0
    }
}

/// Ceiling division clamped into `i64` (quantities are bounded, so clamping
/// only matters for values Kubernetes itself would reject).
fn ceil_div(value: i128, divisor: i128) -> i64 {
    let q = value.div_euclid(divisor) + i128::from(value.rem_euclid(divisor) != 0);
    q.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl fmt::Display for Quantity {
    /// Canonical-ish rendering: whole units when exact, else millis, else nanos.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos % 1_000_000_000 == 0 {
            write!(f, "{}", self.nanos / 1_000_000_000)
        } else if self.nanos % 1_000_000 == 0 {
            write!(f, "{}m", self.nanos / 1_000_000)
        } else {
            write!(f, "{}n", self.nanos)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Forms and values from the Kubernetes quantity documentation and
    /// apimachinery's quantity_test.go.
    #[test]
    fn parses_every_documented_form() {
        let cases: &[(&str, i64, i64)] = &[
            // text, millis (ceil), units (ceil)
            ("100m", 100, 1),
            ("0.5", 500, 1),
            ("1", 1000, 1),
            ("1e3", 1_000_000, 1000),
            ("1E3", 1_000_000, 1000),
            ("128974848", 128_974_848_000, 128_974_848),
            ("129e6", 129_000_000_000, 129_000_000),
            ("129M", 129_000_000_000, 129_000_000),
            ("123Mi", 128_974_848_000, 128_974_848),
            ("1Gi", 1_073_741_824_000, 1_073_741_824),
            ("2Ti", 2_199_023_255_552_000, 2_199_023_255_552),
            ("1Ki", 1_024_000, 1024),
            ("1k", 1_000_000, 1000),
            ("500n", 1, 1),
            ("250u", 1, 1),
            ("0.0001", 1, 1),
            ("1.5", 1500, 2),
            ("1.5Gi", 1_610_612_736_000, 1_610_612_736),
            ("+3", 3000, 3),
            ("-2", -2000, -2),
            ("0", 0, 0),
            (".5", 500, 1),
            ("5.", 5000, 5),
            ("1e-3", 1, 1),
            ("12E+2", 1_200_000, 1200),
        ];
        for (text, millis, units) in cases {
            let v = q(text);
            assert_eq!(v.millis_ceil(), *millis, "millis of {text}");
            assert_eq!(v.units_ceil(), *units, "units of {text}");
        }
    }

    #[test]
    fn cpu_rounds_up_to_whole_millicores() {
        assert_eq!(q("1001u").millis_ceil(), 2);
        assert_eq!(q("0.0015").millis_ceil(), 2);
        assert_eq!(q("999n").millis_ceil(), 1);
        assert_eq!(q("1000000n").millis_ceil(), 1);
    }

    #[test]
    fn bad_quantities_are_errors_that_quote_the_text() {
        for bad in [
            "",
            "m",
            "1.2.3",
            "1Gb",
            "1 Gi",
            "abc",
            "1e",
            "1e+",
            "Gi",
            "1ii",
            "0x10",
            "1e99",
            "--1",
            "99999999999999999999Ei",
        ] {
            let e = Quantity::parse(bad).expect_err(bad);
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["3", "250m", "5n"] {
            assert_eq!(q(s).to_string(), s);
        }
    }
}
