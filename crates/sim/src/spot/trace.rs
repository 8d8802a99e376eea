//! Interruption traces: a CSV of spot interruption notices to replay,
//! `time,instance_type,zone[,node]`.
//!
//! `time` is a duration since the run start (`30m`) or an ISO-8601 instant,
//! one kind per file; instants need the scenario's `start` anchor (a trace
//! has no natural start of its own, unlike a price history) and must not be
//! before it. `node` is optional: when given, the notice targets that node
//! by name (it must then be a running spot node of the row's type and zone,
//! else the row is skipped with a reason); otherwise one running spot node
//! of the type and zone is chosen at random (see [`super::interruptions`]). Rows are returned in time
//! order, rows at equal times in file order.

use super::files::{CsvTable, RowRef, SpotFileError};
use super::timestamp::{RowTime, Timestamp};
use crate::time::SimTime;

/// The required columns.
pub const TRACE_COLUMNS: &[&str] = &["time", "instance_type", "zone"];
/// The optional columns.
pub const TRACE_OPTIONAL_COLUMNS: &[&str] = &["node"];

/// One interruption notice of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceNotice {
    /// When the 2-minute notice is given.
    pub at: SimTime,
    /// Instance type of the node to interrupt.
    pub instance_type: String,
    /// Zone of the node to interrupt.
    pub zone: String,
    /// A node name, to target one node; `None` picks one.
    pub node: Option<String>,
    /// The row, for messages.
    pub row: RowRef,
}

/// Reads a trace; `start` is the wall-clock instant of the run start, needed
/// only when the file holds ISO-8601 times.
pub fn parse_trace(
    text: &str,
    file: &str,
    start: Option<Timestamp>,
) -> Result<Vec<TraceNotice>, SpotFileError> {
    let table = CsvTable::read(text, file, TRACE_COLUMNS, TRACE_OPTIONAL_COLUMNS)?;
    let mut notices = Vec::with_capacity(table.rows.len());
    let mut first_kind: Option<(bool, RowRef)> = None;
    for (line, record) in &table.rows {
        let row = RowRef::Line(*line);
        let field_error = |name: &str, reason: String| SpotFileError::Field {
            file: file.to_string(),
            row,
            field: name.to_string(),
            reason,
        };
        let required = |wanted: usize| {
            table
                .field(record, wanted)
                .ok_or_else(|| field_error(TRACE_COLUMNS[wanted], "must not be empty".into()))
        };
        let time = RowTime::parse(required(0)?).map_err(|reason| field_error("time", reason))?;
        let relative = matches!(time, RowTime::Relative(_));
        match first_kind {
            None => first_kind = Some((relative, row)),
            Some((kind, first_row)) if kind != relative => {
                return Err(field_error(
                    "time",
                    format!(
                        "mixes a {} time with the {} times from {first_row} on; use one kind \
                         per file",
                        if relative { "relative" } else { "wall-clock" },
                        if kind { "relative" } else { "wall-clock" },
                    ),
                ));
            }
            Some(_) => {}
        }
        let offset = match (time, start) {
            (RowTime::Absolute(_), None) => {
                return Err(field_error(
                    "time",
                    "a wall-clock time needs the run's start instant (give the trace as \
                     {file: ..., start: <ISO-8601 time>} in the scenario)"
                        .to_string(),
                ));
            }
            (RowTime::Absolute(instant), Some(anchor)) => time.offset(start).ok_or_else(|| {
                field_error(
                    "time",
                    format!("{instant} is before the run start {anchor}"),
                )
            })?,
            (RowTime::Relative(offset), _) => offset,
        };
        notices.push(TraceNotice {
            at: SimTime::ZERO + offset,
            instance_type: required(1)?.to_string(),
            zone: required(2)?.to_string(),
            node: table.field(record, 3).map(str::to_string),
            row,
        });
    }
    notices.sort_by_key(|notice| notice.at);
    Ok(notices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    fn at_mins(m: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_mins(m)
    }

    #[test]
    fn fixture_trace_in_time_order() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/spot/interruptions.csv"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let notices = parse_trace(&text, path, None).unwrap();
        let shown: Vec<(SimTime, &str, &str, Option<&str>, RowRef)> = notices
            .iter()
            .map(|n| {
                let node = n.node.as_deref();
                (n.at, n.instance_type.as_str(), n.zone.as_str(), node, n.row)
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                (at_mins(30), "m5.large", "us-east-1a", None, RowRef::Line(3)),
                (
                    at_mins(120),
                    "c6a.xlarge",
                    "us-east-1b",
                    Some("ip-10-0-1-17.ec2.internal"),
                    RowRef::Line(4)
                ),
                (
                    at_mins(120),
                    "m5.large",
                    "us-east-1a",
                    None,
                    RowRef::Line(5)
                ),
            ]
        );
    }

    #[test]
    fn unsorted_rows_are_sorted_stably() {
        let text = "time,instance_type,zone\n2h,a.large,z1\n1h,b.large,z1\n2h,c.large,z1\n";
        let notices = parse_trace(text, "t.csv", None).unwrap();
        let types: Vec<&str> = notices.iter().map(|n| n.instance_type.as_str()).collect();
        assert_eq!(types, vec!["b.large", "a.large", "c.large"]);
    }

    #[test]
    fn wall_clock_times_need_a_start_and_must_follow_it() {
        let text = "time,instance_type,zone\n2021-01-01T01:00:00Z,m5.large,us-east-1a\n";
        let err = parse_trace(text, "t.csv", None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("t.csv:2: time: a wall-clock time needs the run's start instant"),
            "{err}"
        );
        let start = Timestamp::parse("2021-01-01T00:00:00Z").unwrap();
        let notices = parse_trace(text, "t.csv", Some(start)).unwrap();
        assert_eq!(notices[0].at, at_mins(60));
        let late = Timestamp::parse("2021-01-01T02:00:00Z").unwrap();
        let err = parse_trace(text, "t.csv", Some(late)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: time: 2021-01-01T01:00:00Z is before the run start 2021-01-01T02:00:00Z"
        );
    }

    #[test]
    fn malformed_rows_name_the_row() {
        let cases = [
            (
                "time,instance_type,zone\n5m,m5.large,us-east-1a\n-1h,m5.large,us-east-1a\n",
                "t.csv:3: time: \"-1h\" is negative; times count from the start of the run",
            ),
            (
                "time,instance_type,zone\n5x,m5.large,us-east-1a\n",
                "t.csv:2: time: invalid duration \"5x\": unknown unit \"x\" (expected ms, s, m, h \
                 or d) (expected a duration such as 90m or an ISO-8601 time)",
            ),
            (
                "time,instance_type,zone\n5m,m5.large,\n",
                "t.csv:2: zone: must not be empty",
            ),
            (
                "time,zone,instance_type,node,extra\n",
                "t.csv:1: unknown column \"extra\" (valid columns: time, instance_type, zone, node)",
            ),
            (
                "time,instance_type,zone\n5m,m5.large,us-east-1a\n2021-01-01T00:00:00Z,m5.large,us-east-1a\n",
                "t.csv:3: time: mixes a wall-clock time with the relative times from line 2 on; \
                 use one kind per file",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_trace(text, "t.csv", None).unwrap_err().to_string(),
                expected
            );
        }
    }
}
