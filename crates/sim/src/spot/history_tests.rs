//! Tests for price-history reading, on the real `DescribeSpotPriceHistory`
//! fixture and small hand-written files.

use super::*;
use crate::time::SimDuration;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/spot/ec2_describe_spot_price_history_m5.large_us-east-1.json"
);

fn fixture() -> PriceHistory {
    let text = std::fs::read_to_string(FIXTURE).expect("fixture");
    PriceHistory::parse(&text, FIXTURE).expect("fixture parses")
}

fn dollars(text: &str) -> Price {
    Price::parse_dollars(text).unwrap()
}

fn timestamp(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn at(d: SimDuration) -> SimTime {
    SimTime::ZERO + d
}

#[test]
fn fixture_json_parses_into_250_points() {
    let history = fixture();
    assert_eq!(history.points.len(), 250);
    assert_eq!(history.other_products, 0);
    // The first item of the file.
    let first = &history.points[0];
    assert_eq!(first.instance_type, "m5.large");
    assert_eq!(first.zone, "us-east-1f");
    assert_eq!(first.price, Price::from_micros(43_700));
    assert_eq!(
        first.time,
        RowTime::Absolute(timestamp("2021-02-09T01:40:10Z"))
    );
    assert_eq!(first.row, RowRef::Item(0));
    assert_eq!(
        history.earliest_timestamp(),
        Some(timestamp("2021-01-08T01:06:24Z"))
    );
}

/// Expected counts derived independently with a short script over the
/// fixture: per zone, sort by time, carry the latest row before the start
/// to time 0, and count the rows whose price differs from the one before.
#[test]
fn fixture_changes_from_its_first_timestamp() {
    let history = fixture();
    let changes = history.changes(FIXTURE, None).unwrap();
    assert_eq!(changes.len(), 159);
    // Only us-east-1d has a row at the earliest timestamp.
    let at_start: Vec<(&str, Price)> = changes
        .iter()
        .filter(|c| c.at == SimTime::ZERO)
        .map(|c| (c.zone.as_str(), c.price))
        .collect();
    assert_eq!(at_start, vec![("us-east-1d", dollars("0.042500"))]);
    assert!(changes.windows(2).all(|w| {
        (w[0].at, &w[0].instance_type, &w[0].zone) <= (w[1].at, &w[1].instance_type, &w[1].zone)
    }));
    // The last change is the file's latest row, 2021-02-09T01:40:10Z.
    let last = changes.last().unwrap();
    let span = timestamp("2021-02-09T01:40:10Z")
        .duration_since(timestamp("2021-01-08T01:06:24Z"))
        .unwrap();
    assert_eq!((last.at, last.zone.as_str()), (at(span), "us-east-1f"));
    assert_eq!(last.row, RowRef::Item(0));
}

#[test]
fn fixture_changes_from_a_later_start_carry_the_price_in_force() {
    let history = fixture();
    let start = timestamp("2021-01-20T00:00:00Z");
    let changes = history.changes(FIXTURE, Some(start)).unwrap();
    assert_eq!(changes.len(), 114);
    let at_start: Vec<(&str, Price)> = changes
        .iter()
        .filter(|c| c.at == SimTime::ZERO)
        .map(|c| (c.zone.as_str(), c.price))
        .collect();
    assert_eq!(
        at_start,
        vec![
            ("us-east-1a", dollars("0.041400")),
            ("us-east-1b", dollars("0.037900")),
            ("us-east-1c", dollars("0.037800")),
            ("us-east-1d", dollars("0.042700")),
            ("us-east-1f", dollars("0.040300")),
        ]
    );
}

#[test]
fn csv_history_with_relative_times() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/spot/prices.csv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let history = PriceHistory::parse(&text, path).unwrap();
    assert_eq!(history.points.len(), 6);
    assert_eq!(history.points[0].row, RowRef::Line(3));
    let changes = history.changes(path, None).unwrap();
    let shown: Vec<(SimTime, &str, &str, Price)> = changes
        .iter()
        .map(|c| (c.at, c.instance_type.as_str(), c.zone.as_str(), c.price))
        .collect();
    // The 2h row for us-east-1b repeats its price and is dropped.
    assert_eq!(
        shown,
        vec![
            (SimTime::ZERO, "m5.large", "us-east-1a", dollars("0.04")),
            (SimTime::ZERO, "m5.large", "us-east-1b", dollars("0.038")),
            (
                at(SimDuration::from_hours(1)),
                "c6a.xlarge",
                "us-east-1a",
                dollars("0.061")
            ),
            (
                at(SimDuration::from_hours(2)),
                "m5.large",
                "us-east-1a",
                dollars("0.045")
            ),
            (
                at(SimDuration::from_mins(390)),
                "m5.large",
                "us-east-1a",
                dollars("0.041")
            ),
        ]
    );
}

#[test]
fn csv_with_wall_clock_times_and_a_start() {
    let text = "time,instance_type,zone,price\n\
                2021-01-01T00:00:00Z,m5.large,us-east-1a,0.05\n\
                2021-01-01T10:00:00Z,m5.large,us-east-1a,0.04\n\
                2021-01-01T12:30:00Z,m5.large,us-east-1a,0.06\n\
                2021-01-01T12:00:00Z,m5.large,us-east-1a,0.07\n";
    let history = PriceHistory::parse_csv(text, "p.csv").unwrap();
    let start = timestamp("2021-01-01T11:00:00Z");
    let changes = history.changes("p.csv", Some(start)).unwrap();
    let shown: Vec<(SimTime, Price, RowRef)> =
        changes.iter().map(|c| (c.at, c.price, c.row)).collect();
    // The 10:00 row is in force at 11:00; rows are ordered by time, not line.
    assert_eq!(
        shown,
        vec![
            (SimTime::ZERO, dollars("0.04"), RowRef::Line(3)),
            (
                at(SimDuration::from_hours(1)),
                dollars("0.07"),
                RowRef::Line(5)
            ),
            (
                at(SimDuration::from_mins(90)),
                dollars("0.06"),
                RowRef::Line(4)
            ),
        ]
    );
    // A row exactly at the start replaces the carried-over one.
    let changes = history
        .changes("p.csv", Some(timestamp("2021-01-01T12:00:00Z")))
        .unwrap();
    assert_eq!(changes[0].at, SimTime::ZERO);
    assert_eq!(changes[0].price, dollars("0.07"));
    assert_eq!(changes.len(), 2);
}

#[test]
fn json_keeps_linux_rows_and_prefers_vpc_at_equal_times() {
    let text = r#"{"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "m5.large",
         "ProductDescription": "Linux/UNIX", "SpotPrice": "0.040000",
         "Timestamp": "2021-01-08T00:00:00.000Z"},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "m5.large",
         "ProductDescription": "Linux/UNIX (Amazon VPC)", "SpotPrice": "0.041000",
         "Timestamp": "2021-01-08T00:00:00+00:00"},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "m5.large",
         "ProductDescription": "Windows", "SpotPrice": "0.200000",
         "Timestamp": "2021-01-08T00:00:00Z"},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "m5.large",
         "ProductDescription": "Linux/UNIX", "SpotPrice": "0.040000",
         "Timestamp": "2021-01-08T00:00:00Z"}
    ]}"#;
    let history = PriceHistory::parse(text, "p.json").unwrap();
    assert_eq!(history.points.len(), 3);
    assert_eq!(history.other_products, 1);
    let changes = history.changes("p.json", None).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].price, dollars("0.041"));
    assert_eq!(changes[0].row, RowRef::Item(1));
}

#[test]
fn conflicting_prices_for_one_slot_name_both_rows() {
    let text =
        "time,instance_type,zone,price\n0,m5.large,us-east-1a,0.04\n0,m5.large,us-east-1a,0.05\n";
    let history = PriceHistory::parse_csv(text, "p.csv").unwrap();
    let err = history.changes("p.csv", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "p.csv:3: price $0.05 for m5.large in us-east-1a conflicts with line 2 ($0.04) at the same time"
    );
}

#[test]
fn mixed_time_kinds_are_an_error() {
    let text = "time,instance_type,zone,price\n0,m5.large,us-east-1a,0.04\n2021-01-01T00:00:00Z,m5.large,us-east-1a,0.05\n";
    let history = PriceHistory::parse_csv(text, "p.csv").unwrap();
    let err = history.changes("p.csv", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "p.csv:3: time: mixes a wall-clock time with the relative times from line 2 on; use one \
         kind per file"
    );
}

#[test]
fn malformed_rows_name_file_row_and_field() {
    let csv_cases = [
        (
            "time,instance_type,zone,price\n-5m,m5.large,us-east-1a,0.04\n",
            "p.csv:2: time: \"-5m\" is negative; times count from the start of the run",
        ),
        (
            "time,instance_type,zone,price\n5m,m5.large,us-east-1a,abc\n",
            "p.csv:2: price: invalid price \"abc\": expected a decimal number of dollars such as \
             0.0384",
        ),
        (
            "time,instance_type,zone,price\n5m,m5.large,us-east-1a,0\n",
            "p.csv:2: price: price \"0\" must be greater than zero",
        ),
        (
            "time,instance_type,zone,price\n5m,m5.large,us-east-1a,0.000000001\n",
            "p.csv:2: price: price \"0.000000001\" is below $0.000001 per hour, the smallest \
             price karpsim keeps (prices are whole micro-dollars per hour)",
        ),
        (
            "time,instance_type,zone,price\n5m,m5.large,us-east-1a,1e30\n",
            "p.csv:2: price: price \"1e30\" is too large (at most $9223372036854 per hour)",
        ),
        (
            "time,instance_type,zone,price\n5m,,us-east-1a,0.1\n",
            "p.csv:2: instance_type: must not be empty",
        ),
        (
            "time,instance_type,price\n",
            "p.csv:1: missing column \"zone\" (the header must name time, instance_type, zone, \
             price)",
        ),
    ];
    for (text, expected) in csv_cases {
        let err = PriceHistory::parse(text, "p.csv").unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
    let item = |fields: &str| format!("{{\"SpotPriceHistory\": [{{}}, {{{fields}}}]}}");
    let json_cases = [
        (
            item(
                r#""AvailabilityZone": "us-east-1a", "InstanceType": "m5.large", "ProductDescription": "Linux/UNIX", "SpotPrice": "0.04", "Timestamp": "2021-01-08T25:00:00Z""#,
            ),
            "p.json: SpotPriceHistory[1].Timestamp: invalid timestamp \"2021-01-08T25:00:00Z\": \
             the time of day is out of range",
        ),
        (
            item(
                r#""AvailabilityZone": "us-east-1a", "InstanceType": "m5.large", "ProductDescription": "Linux/UNIX", "SpotPrice": 0.04, "Timestamp": "2021-01-08T00:00:00Z""#,
            ),
            "p.json: SpotPriceHistory[1].SpotPrice: expected a string, found 0.04",
        ),
        (
            item(
                r#""InstanceType": "m5.large", "ProductDescription": "Linux/UNIX", "SpotPrice": "0.04", "Timestamp": "2021-01-08T00:00:00Z""#,
            ),
            "p.json: SpotPriceHistory[1].AvailabilityZone: missing",
        ),
    ];
    for (text, expected) in json_cases {
        // Item 0 is an empty object: its missing ProductDescription comes first.
        let err = PriceHistory::parse(&text, "p.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "p.json: SpotPriceHistory[0].ProductDescription: missing"
        );
        let text = text.replacen("{}, ", "", 1);
        let err = PriceHistory::parse(&text, "p.json").unwrap_err();
        assert_eq!(err.to_string(), expected.replace("[1]", "[0]"));
    }
    let err = PriceHistory::parse("{\"Prices\": []}", "p.json").unwrap_err();
    assert!(
        err.to_string().contains("\"SpotPriceHistory\" array"),
        "{err}"
    );
    let err = PriceHistory::parse("{\"SpotPriceHistory\": [", "p.json").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("p.json:1:22: invalid JSON: EOF while parsing"),
        "{err}"
    );
    assert!(!err.to_string().contains("at line"), "{err}");
}
