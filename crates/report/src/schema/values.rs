//! The exact decimals of the CSV files: times in seconds with three
//! decimals ([`seconds`], [`optional_seconds`]), money in dollars with six
//! ([`Usd`]), CPU cores and GiB with three ([`Thousandths`]). Each is
//! written from an integer and read back into the same integer, so a file
//! read back holds the numbers it was written from.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::sim::ledger::MicroUsd;

/// `digits[.decimals]`, at most `places` decimals, as an integer in units
/// of `10^-places` (`"1.5"` with three places is 1500); `None` for
/// anything else.
fn parse_fixed(text: &str, places: u32) -> Option<i64> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if whole.is_empty()
        || fraction.len() > places as usize
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut units = whole.parse::<i64>().ok()?.checked_mul(10i64.pow(places))?;
    if !fraction.is_empty() {
        let padding = 10i64.pow(places - fraction.len() as u32);
        units = units.checked_add(fraction.parse::<i64>().ok()? * padding)?;
    }
    Some(if negative { -units } else { units })
}

/// Writes `units` (of `10^-places`) with exactly `places` decimals.
fn write_fixed(f: &mut fmt::Formatter<'_>, units: i64, places: u32) -> fmt::Result {
    let sign = if units < 0 { "-" } else { "" };
    let scale = 10u64.pow(places);
    let abs = units.unsigned_abs();
    write!(
        f,
        "{sign}{}.{:0width$}",
        abs / scale,
        abs % scale,
        width = places as usize
    )
}

/// Reads one text field with `parse`, naming what was expected.
fn deserialize_text<'de, D, T>(
    deserializer: D,
    expected: &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    struct Text<T> {
        expected: &'static str,
        parse: fn(&str) -> Option<T>,
    }
    impl<T> Visitor<'_> for Text<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.expected)
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
            (self.parse)(text).ok_or_else(|| E::custom(format!("not {}: {text:?}", self.expected)))
        }
    }
    deserializer.deserialize_str(Text { expected, parse })
}

/// `"90.500"` as 90 500 ms; `None` for anything but seconds with up to
/// three decimals.
pub fn parse_time_ms(text: &str) -> Option<u64> {
    if text.starts_with('-') {
        return None;
    }
    parse_fixed(text, 3).and_then(|ms| u64::try_from(ms).ok())
}

/// Milliseconds as seconds with three decimals, `90.500`.
struct Seconds(u64);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

const TIME_EXPECTED: &str = "a time in seconds with up to three decimals";

/// A time column (`u64` milliseconds, written as seconds: `90.500`).
pub mod seconds {
    use super::*;

    /// Writes `ms` as seconds with three decimals.
    pub fn serialize<S: Serializer>(ms: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&Seconds(*ms))
    }

    /// Reads seconds with up to three decimals as milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        deserialize_text(deserializer, TIME_EXPECTED, parse_time_ms)
    }
}

/// A time column that may be empty (`Option<u64>` milliseconds).
pub mod optional_seconds {
    use super::*;

    /// Writes `ms` as seconds with three decimals, `None` as nothing.
    pub fn serialize<S: Serializer>(ms: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match ms {
            Some(ms) => serializer.collect_str(&Seconds(*ms)),
            None => serializer.serialize_str(""),
        }
    }

    /// Reads seconds with up to three decimals, an empty field as `None`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        deserialize_text(deserializer, TIME_EXPECTED, |text| {
            if text.is_empty() {
                Some(None)
            } else {
                parse_time_ms(text).map(Some)
            }
        })
    }
}

/// Money: micro-dollars, written as dollars with six decimals
/// (`12.345678`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Usd(pub i64);

impl Usd {
    /// Dollars as a float (the number the text reads as).
    pub fn dollars(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl From<MicroUsd> for Usd {
    fn from(amount: MicroUsd) -> Usd {
        Usd(amount.0)
    }
}

impl From<crate::cloud::Price> for Usd {
    fn from(price: crate::cloud::Price) -> Usd {
        Usd(price.micros())
    }
}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fixed(f, self.0, 6)
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Usd, D::Error> {
        deserialize_text(
            deserializer,
            "an amount in dollars with up to six decimals",
            |text| parse_fixed(text, 6).map(Usd),
        )
    }
}

/// A quantity in thousandths, written with three decimals: CPU cores from
/// millicores (`1.500`), GiB from bytes (`0.062`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Thousandths(pub i64);

impl Thousandths {
    /// The quantity as a float (the number the text reads as).
    pub fn value(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// `bytes` in GiB, rounded to three decimals the way `{:.3}` rounds
    /// the float (half to even).
    pub fn gib(bytes: i64) -> Thousandths {
        let text = format!("{:.3}", bytes as f64 / (1u64 << 30) as f64);
        Thousandths(parse_fixed(&text, 3).expect("three decimals"))
    }
}

impl fmt::Display for Thousandths {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fixed(f, self.0, 3)
    }
}

impl Serialize for Thousandths {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Thousandths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Thousandths, D::Error> {
        deserialize_text(deserializer, "a number with up to three decimals", |text| {
            parse_fixed(text, 3).map(Thousandths)
        })
    }
}

/// A number `summary.json` holds as a float (already rounded there),
/// written as the shortest decimal that reads back as the same float
/// (`24.98418`, `0.5`, `3`; never an exponent), so a file read back holds
/// exactly the numbers it was written from.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Decimal(pub f64);

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `-0` would read back as a different float than it shows.
        if self.0 == 0.0 {
            f.write_str("0")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Decimal, D::Error> {
        deserialize_text(deserializer, "a decimal number", |text| {
            let plain = !text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-'));
            plain
                .then(|| text.parse::<f64>().ok())
                .flatten()
                .filter(|v| v.is_finite())
                .map(Decimal)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times_exactly() {
        assert_eq!(parse_time_ms("90.500"), Some(90_500));
        assert_eq!(parse_time_ms("3"), Some(3000));
        assert_eq!(parse_time_ms("0.05"), Some(50));
        assert_eq!(parse_time_ms("-1.000"), None);
        assert_eq!(parse_time_ms("1.2345"), None);
        assert_eq!(parse_time_ms(""), None);
        assert_eq!(Seconds(90_500).to_string(), "90.500");
    }

    #[test]
    fn money_is_exact_both_ways() {
        assert_eq!(Usd(96_000).to_string(), "0.096000");
        assert_eq!(Usd(12_345_678).to_string(), "12.345678");
        assert_eq!(Usd(-1).to_string(), "-0.000001");
        assert_eq!(parse_fixed("0.1", 6).map(Usd), Some(Usd(100_000)));
        assert_eq!(parse_fixed("-0.000001", 6), Some(-1));
        assert_eq!(parse_fixed("1.0000001", 6), None);
        assert_eq!(parse_fixed("1e3", 6), None);
        // The float of the integer is the float of the text.
        for micros in [0, 1, 96_000, 12_345_678, 987_654_321_123] {
            let text = Usd(micros).to_string();
            assert_eq!(
                Usd(micros).dollars(),
                text.parse::<f64>().unwrap(),
                "{text}"
            );
        }
    }

    #[test]
    fn decimals_read_back_as_the_same_float() {
        for value in [
            0.0,
            -0.0,
            0.5,
            3.0,
            24.98418,
            1e-7,
            123_456.789_012,
            0.1 + 0.2,
        ] {
            let text = Decimal(value).to_string();
            assert!(!text.contains('e'), "{text}");
            let back: f64 = text.parse().unwrap();
            assert_eq!(back, value, "{text}");
        }
        assert_eq!(Decimal(3.0).to_string(), "3");
        assert_eq!(Decimal(1e-7).to_string(), "0.0000001");
    }

    /// GiB are rounded as `{:.3}` rounds, ties (64 MiB × odd) to even.
    #[test]
    fn gib_round_like_the_float_formatting() {
        let mib = 1i64 << 20;
        for bytes in [
            0,
            1,
            mib,
            64 * mib,
            3 * 64 * mib,
            5 * 64 * mib,
            7 * 1024 * mib + 12_345,
        ] {
            let text = format!("{:.3}", bytes as f64 / (1u64 << 30) as f64);
            assert_eq!(Thousandths::gib(bytes).to_string(), text, "{bytes}");
            assert_eq!(
                Thousandths::gib(bytes).value(),
                text.parse::<f64>().unwrap()
            );
        }
        assert_eq!(Thousandths::gib(64 * mib), Thousandths(62));
        assert_eq!(Thousandths::gib(3 * 64 * mib), Thousandths(188));
    }
}
