//! Spot price histories: the JSON that `aws ec2 describe-spot-price-history`
//! prints and a plain CSV `time,instance_type,zone,price`, turned into the
//! price changes of a run.
//!
//! Each row says "from this time on, spot instances of this type in this
//! zone cost this much", as a `DescribeSpotPriceHistory` item does. A run
//! replays the rows as price-change events: the price in force at every
//! moment is the latest row at or before it, and before a (type, zone)'s
//! first row the catalog's price applies.
//!
//! # Times and the run start
//!
//! JSON rows carry ISO-8601 `Timestamp`s. CSV rows carry either durations
//! since the run start (`0`, `90m`, `1h30m`) or ISO-8601 instants, not both
//! in one file. Wall-clock instants are placed on the run's clock by an
//! anchor, the instant the run starts: the scenario's `start`, or by default
//! the earliest timestamp in the file (so a file replays from its beginning).
//! For each (type, zone) the latest row at or before the anchor gives the
//! price at time 0; earlier rows are superseded and dropped.
//!
//! # Rows kept
//!
//! Only Linux rows are kept: product descriptions `Linux/UNIX` and
//! `Linux/UNIX (Amazon VPC)`, the two Karpenter asks EC2 for (aws:
//! pkg/providers/pricing/pricing.go `UpdateSpotPricing`). When both give a
//! price for the same type, zone and time, the `(Amazon VPC)` one wins, as
//! cluster nodes run in a VPC. The same row given twice is kept once; two
//! different prices under one description for the same type, zone and time
//! are an error naming both rows. A row that does not change the price in
//! force is dropped.

use std::collections::BTreeMap;

use serde_json::Value;

use super::files::{CsvTable, RowRef, SpotFileError};
use super::timestamp::{RowTime, Timestamp};
use crate::cloud::Price;
use crate::time::SimTime;

/// The product descriptions whose rows are kept.
pub const LINUX_PRODUCT_DESCRIPTIONS: [&str; 2] = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"];

/// The columns of the CSV form, all required.
pub const CSV_COLUMNS: &[&str] = &["time", "instance_type", "zone", "price"];

/// One row of a price history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricePoint {
    /// When the price takes effect.
    pub time: RowTime,
    /// e.g. `m5.large`.
    pub instance_type: String,
    /// Zone name, e.g. `us-east-1a`.
    pub zone: String,
    /// Hourly price from `time` on.
    pub price: Price,
    /// From a `Linux/UNIX (Amazon VPC)` row (preferred over `Linux/UNIX` at
    /// the same time).
    pub vpc: bool,
    /// Where it is in the file.
    pub row: RowRef,
}

/// The Linux rows of one price-history file, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PriceHistory {
    /// The kept rows.
    pub points: Vec<PricePoint>,
    /// How many rows of other products (Windows, SUSE, ...) were skipped.
    pub other_products: usize,
}

/// A price change during a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceChange {
    /// When it takes effect (0 for the price in force at the start).
    pub at: SimTime,
    /// e.g. `m5.large`.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// The new hourly spot price.
    pub price: Price,
    /// The row it comes from, for messages.
    pub row: RowRef,
}

impl PriceHistory {
    /// Reads either form: JSON when the text starts with `{`, else CSV.
    pub fn parse(text: &str, file: &str) -> Result<PriceHistory, SpotFileError> {
        if text.trim_start().starts_with('{') {
            Self::parse_json(text, file)
        } else {
            Self::parse_csv(text, file)
        }
    }

    /// Reads a `DescribeSpotPriceHistory` response: an object whose
    /// `SpotPriceHistory` array holds items with `AvailabilityZone`,
    /// `InstanceType`, `ProductDescription`, `SpotPrice` (a decimal string)
    /// and `Timestamp` (ISO-8601). Other keys are ignored.
    pub fn parse_json(text: &str, file: &str) -> Result<PriceHistory, SpotFileError> {
        let root: Value = serde_json::from_str(text).map_err(|err| SpotFileError::Syntax {
            // serde_json's message ends with its own " at line L column C";
            // the place goes first, as in every other message.
            file: format!("{file}:{}:{}", err.line(), err.column()),
            message: format!("invalid JSON: {}", json_reason(&err)),
        })?;
        let items = root
            .get("SpotPriceHistory")
            .and_then(Value::as_array)
            .ok_or_else(|| SpotFileError::File {
                file: file.to_string(),
                reason: "expected a DescribeSpotPriceHistory response: an object with a \
                         \"SpotPriceHistory\" array"
                    .to_string(),
            })?;
        let mut history = PriceHistory::default();
        for (index, item) in items.iter().enumerate() {
            let row = RowRef::Item(index);
            let field_error = |field: &str, reason: String| SpotFileError::Field {
                file: file.to_string(),
                row,
                field: field.to_string(),
                reason,
            };
            let text_of = |field: &'static str| -> Result<&str, SpotFileError> {
                match item.get(field) {
                    Some(Value::String(s)) if !s.is_empty() => Ok(s),
                    Some(Value::String(_)) => Err(field_error(field, "must not be empty".into())),
                    Some(other) => Err(field_error(
                        field,
                        format!("expected a string, found {other}"),
                    )),
                    None => Err(field_error(field, "missing".into())),
                }
            };
            if !item.is_object() {
                return Err(SpotFileError::Row {
                    file: file.to_string(),
                    row,
                    reason: format!("expected an object, found {item}"),
                });
            }
            let product = text_of("ProductDescription")?;
            if !LINUX_PRODUCT_DESCRIPTIONS.contains(&product) {
                history.other_products += 1;
                continue;
            }
            let timestamp = text_of("Timestamp")?;
            let time = Timestamp::parse(timestamp)
                .map_err(|err| field_error("Timestamp", err.to_string()))?;
            let price_text = text_of("SpotPrice")?;
            let price =
                parse_price(price_text).map_err(|reason| field_error("SpotPrice", reason))?;
            history.points.push(PricePoint {
                time: RowTime::Absolute(time),
                instance_type: text_of("InstanceType")?.to_string(),
                zone: text_of("AvailabilityZone")?.to_string(),
                price,
                vpc: product == LINUX_PRODUCT_DESCRIPTIONS[1],
                row,
            });
        }
        Ok(history)
    }

    /// Reads the CSV form: header `time,instance_type,zone,price` (any
    /// order), `#` comment lines allowed; `time` is a duration since the run
    /// start or an ISO-8601 instant, `price` a decimal number of dollars per
    /// hour. Every row counts as Linux.
    pub fn parse_csv(text: &str, file: &str) -> Result<PriceHistory, SpotFileError> {
        let table = CsvTable::read(text, file, CSV_COLUMNS, &[])?;
        let mut history = PriceHistory::default();
        for (line, record) in &table.rows {
            let row = RowRef::Line(*line);
            let field = |wanted: usize| {
                let name = CSV_COLUMNS[wanted];
                table
                    .field(record, wanted)
                    .ok_or_else(|| SpotFileError::Field {
                        file: file.to_string(),
                        row,
                        field: name.to_string(),
                        reason: "must not be empty".to_string(),
                    })
            };
            let field_error = |wanted: usize, reason: String| SpotFileError::Field {
                file: file.to_string(),
                row,
                field: CSV_COLUMNS[wanted].to_string(),
                reason,
            };
            let time = RowTime::parse(field(0)?).map_err(|reason| field_error(0, reason))?;
            let price = parse_price(field(3)?).map_err(|reason| field_error(3, reason))?;
            history.points.push(PricePoint {
                time,
                instance_type: field(1)?.to_string(),
                zone: field(2)?.to_string(),
                price,
                vpc: false,
                row,
            });
        }
        Ok(history)
    }

    /// The earliest wall-clock time in the file, if any row has one.
    pub fn earliest_timestamp(&self) -> Option<Timestamp> {
        self.points
            .iter()
            .filter_map(|p| match p.time {
                RowTime::Absolute(t) => Some(t),
                RowTime::Relative(_) => None,
            })
            .min()
    }

    /// The price changes of a run whose start is the wall-clock instant
    /// `start` (default: [`earliest_timestamp`](Self::earliest_timestamp)),
    /// sorted by time, then instance type, then zone. See the module
    /// documentation for the rules.
    pub fn changes(
        &self,
        file: &str,
        start: Option<Timestamp>,
    ) -> Result<Vec<PriceChange>, SpotFileError> {
        self.check_one_kind_of_time(file)?;
        let anchor = start.or_else(|| self.earliest_timestamp());
        let mut series: BTreeMap<(&str, &str), Vec<TimedPoint<'_>>> = BTreeMap::new();
        for point in &self.points {
            let since_start = match (point.time, anchor) {
                (RowTime::Relative(offset), _) => i128::from(offset.as_millis()),
                (RowTime::Absolute(t), Some(anchor)) => {
                    i128::from(t.unix_millis()) - i128::from(anchor.unix_millis())
                }
                // Unreachable: an absolute row makes the anchor default exist.
                (RowTime::Absolute(_), None) => continue,
            };
            series
                .entry((&point.instance_type, &point.zone))
                .or_default()
                .push((since_start, point.vpc, point));
        }
        let mut changes = Vec::new();
        for ((instance_type, zone), mut points) in series {
            // VPC rows first at equal times, then file order (the sort is stable).
            points.sort_by_key(|(t, vpc, _)| (*t, !*vpc));
            let mut kept: Vec<(i128, &PricePoint)> = Vec::with_capacity(points.len());
            for (i, (t, vpc, point)) in points.iter().enumerate() {
                let same_slot = i
                    .checked_sub(1)
                    .map(|j| points[j])
                    .filter(|(earlier_t, _, _)| earlier_t == t);
                match same_slot {
                    // A plain row at the time of a VPC row: the VPC row wins.
                    Some((_, earlier_vpc, _)) if earlier_vpc != *vpc => continue,
                    Some((_, _, earlier)) if earlier.price == point.price => continue,
                    Some((_, _, earlier)) => {
                        return Err(SpotFileError::Row {
                            file: file.to_string(),
                            row: point.row,
                            reason: format!(
                                "price {} for {instance_type} in {zone} conflicts with {} ({}) at \
                                 the same time",
                                point.price, earlier.row, earlier.price
                            ),
                        });
                    }
                    None => kept.push((*t, point)),
                }
            }
            // Rows before the start: only the latest one matters, at time 0.
            let first_in_run = kept.iter().position(|(t, _)| *t >= 0).unwrap_or(kept.len());
            let at_start = first_in_run.checked_sub(1).map(|i| (0, kept[i].1));
            let mut in_force: Option<Price> = None;
            for (t, point) in at_start
                .into_iter()
                .chain(kept[first_in_run..].iter().copied())
            {
                if in_force == Some(point.price) {
                    continue;
                }
                in_force = Some(point.price);
                let at = u64::try_from(t).map_or(SimTime::ZERO, SimTime::from_millis);
                match changes.last_mut() {
                    // A row at 0 replaces the carried-over price before the start.
                    Some(PriceChange {
                        at: last_at,
                        instance_type: last_type,
                        zone: last_zone,
                        price,
                        row,
                    }) if *last_at == at && last_type == instance_type && last_zone == zone => {
                        *price = point.price;
                        *row = point.row;
                    }
                    _ => changes.push(PriceChange {
                        at,
                        instance_type: instance_type.to_string(),
                        zone: zone.to_string(),
                        price: point.price,
                        row: point.row,
                    }),
                }
            }
        }
        changes.sort_by(|a, b| {
            (a.at, &a.instance_type, &a.zone).cmp(&(b.at, &b.instance_type, &b.zone))
        });
        Ok(changes)
    }

    /// All rows relative, or all absolute.
    fn check_one_kind_of_time(&self, file: &str) -> Result<(), SpotFileError> {
        let Some(first) = self.points.first() else {
            return Ok(());
        };
        let relative = |p: &PricePoint| matches!(p.time, RowTime::Relative(_));
        match self.points.iter().find(|p| relative(p) != relative(first)) {
            None => Ok(()),
            Some(other) => Err(SpotFileError::Field {
                file: file.to_string(),
                row: other.row,
                field: "time".to_string(),
                reason: format!(
                    "mixes a {} time with the {} times from {} on; use one kind per file",
                    if relative(other) {
                        "relative"
                    } else {
                        "wall-clock"
                    },
                    if relative(first) {
                        "relative"
                    } else {
                        "wall-clock"
                    },
                    first.row
                ),
            }),
        }
    }
}

/// serde_json's explanation without its position suffix.
fn json_reason(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// A row of one (type, zone) series: signed milliseconds since the run
/// start, whether it is a VPC row, and the row.
type TimedPoint<'p> = (i128, bool, &'p PricePoint);

/// A positive decimal number of dollars. Prices are kept in whole
/// micro-dollars per hour, so a positive price that rounds to none is
/// refused with that limit rather than read as free.
fn parse_price(text: &str) -> Result<Price, String> {
    let positive = crate::cloud::price::plain_decimal(text)
        .is_some_and(|plain| plain.bytes().any(|b| (b'1'..=b'9').contains(&b)));
    match Price::parse_dollars(text) {
        Some(price) if price > Price::ZERO => Ok(price),
        Some(_) if positive => Err(format!(
            "price {text:?} is below $0.000001 per hour, the smallest price karpsim keeps \
             (prices are whole micro-dollars per hour)"
        )),
        Some(_) => Err(format!("price {text:?} must be greater than zero")),
        None if positive && !text.starts_with('-') && text.parse::<f64>().is_ok() => Err(format!(
            "price {text:?} is too large (at most $9223372036854 per hour)"
        )),
        None => Err(format!(
            "invalid price {text:?}: expected a decimal number of dollars such as 0.0384"
        )),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
