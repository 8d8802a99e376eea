//! Side-by-side comparison of report variants, read back from their
//! `summary.json` files: one row per measure, one value per variant, and
//! for every variant after the first its difference from the first
//! (absolute, and in percent when the first is not zero).
//!
//! Deltas are computed from the same numbers the values show, so a delta is
//! always the difference of the two summaries' fields.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::schema::Summary;
use super::schema::summary::round;
use super::table::{Align, write_table};

/// What a row measures, which decides how its numbers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// US dollars.
    Usd,
    /// A whole count.
    Count,
    /// Hours.
    Hours,
    /// Seconds.
    Seconds,
    /// A ratio 0..=1, shown in percent; deltas are in percentage points.
    Ratio,
}

impl Unit {
    /// The unit's name in `compare -o json`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Usd => "usd",
            Unit::Count => "count",
            Unit::Hours => "hours",
            Unit::Seconds => "seconds",
            Unit::Ratio => "ratio",
        }
    }
}

/// One variant's difference from the first variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// This variant's number minus the first variant's.
    pub absolute: f64,
    /// `absolute` over the first variant's number, in percent; `None` when
    /// that number is zero.
    pub percent: Option<f64>,
    /// Both, written for people: `+$1.23 (+4.5%)`, `-3 (-10.0%)`.
    pub text: String,
}

/// One measure across the variants.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    /// What is measured; sub-rows start with two spaces.
    pub label: String,
    /// Where the number is in `summary.json`, as a dotted path
    /// (`churn.evictions_by_reason.drift`).
    pub key: String,
    /// How the numbers are written.
    pub unit: Unit,
    /// Each variant's number, in input order (`None`: not in its summary).
    pub numbers: Vec<Option<f64>>,
    /// Each variant's number as text (`-` when absent).
    pub values: Vec<String>,
    /// For each variant after the first, its difference from the first
    /// (`None` when either number is absent).
    pub deltas: Vec<Option<Delta>>,
}

/// The comparison rows of `variants`, the first being the base of the
/// deltas. Rows for keys some summaries lack (cost lower bound, cost
/// efficiency) appear only when at least one summary has them.
pub fn comparison_rows(variants: &[Summary]) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    let mut push =
        |label: &str, key: &str, unit: Unit, number: &dyn Fn(&Summary) -> Option<f64>| {
            let numbers: Vec<Option<f64>> = variants.iter().map(number).collect();
            rows.push(row(label, key, unit, numbers));
        };
    push("total cost", "total_cost_usd", Unit::Usd, &|v| {
        Some(v.total_cost_usd)
    });
    for capacity_type in union_keys(variants, |v| &v.cost_by_capacity_type) {
        push(
            &format!("  {capacity_type}"),
            &format!("cost_by_capacity_type.{capacity_type}"),
            Unit::Usd,
            &|v| Some(value_of(&v.cost_by_capacity_type, &capacity_type)),
        );
    }
    push(
        "spot share of node-hours",
        "spot.spot_share_of_node_hours",
        Unit::Ratio,
        &|v| Some(v.spot.spot_share_of_node_hours),
    );
    push("node-hours", "node_hours", Unit::Hours, &|v| {
        Some(v.node_hours)
    });
    push("peak nodes", "peak_nodes", Unit::Count, &|v| {
        Some(v.peak_nodes as f64)
    });
    push("evictions", "churn.evictions", Unit::Count, &|v| {
        Some(v.churn.evictions as f64)
    });
    for reason in union_keys(variants, |v| &v.churn.evictions_by_reason) {
        push(
            &format!("  {reason}"),
            &format!("churn.evictions_by_reason.{reason}"),
            Unit::Count,
            &|v| Some(count_of(&v.churn.evictions_by_reason, &reason)),
        );
    }
    push(
        "nodeclaims launched",
        "nodeclaims_launched",
        Unit::Count,
        &|v| Some(v.nodeclaims_launched as f64),
    );
    push(
        "nodeclaims terminated",
        "churn.nodeclaims_terminated",
        Unit::Count,
        &|v| Some(v.nodeclaims_terminated() as f64),
    );
    push("pending p95", "pending_seconds_p95", Unit::Seconds, &|v| {
        v.pending_seconds_p95
    });
    push("cpu allocation", "cpu_allocation", Unit::Ratio, &|v| {
        Some(v.cpu_allocation)
    });
    push(
        "memory allocation",
        "memory_allocation",
        Unit::Ratio,
        &|v| Some(v.memory_allocation),
    );
    if variants.iter().any(|v| v.cost_lower_bound_usd.is_some()) {
        push(
            "cost lower bound",
            "cost_lower_bound_usd",
            Unit::Usd,
            &|v| v.cost_lower_bound_usd,
        );
    }
    if variants.iter().any(|v| v.cost_efficiency.is_some()) {
        push("cost efficiency", "cost_efficiency", Unit::Ratio, &|v| {
            v.cost_efficiency
        });
    }
    rows
}

impl ComparisonRow {
    /// Decimals of the row's numbers in `summary.json` (`None`: whole
    /// numbers).
    pub fn json_decimals(&self) -> Option<i32> {
        match self.unit {
            Unit::Count => None,
            Unit::Usd => Some(6),
            Unit::Hours | Unit::Ratio if self.key == "cost_efficiency" => Some(6),
            Unit::Hours | Unit::Ratio => Some(4),
            Unit::Seconds => Some(3),
        }
    }

    /// `number` as `summary.json` writes this row's numbers.
    fn json_number(&self, number: f64) -> serde_json::Value {
        match self.json_decimals() {
            None => serde_json::json!(number.round() as i64),
            Some(decimals) => serde_json::json!(round(number, decimals)),
        }
    }
}

/// The rows as data for `compare -o json|yaml`: per row its
/// `summary.json` key (a dotted path, `cost_by_capacity_type.spot`), unit,
/// each variant's value (`null` when its summary lacks it) and each later
/// variant's `absolute` and `percent` difference from the first, rounded
/// as `summary.json` rounds the key (percent to two places; `null` when the
/// first variant's value is 0).
pub fn comparison_json_rows(variants: &[Summary]) -> Vec<serde_json::Value> {
    comparison_rows(variants)
        .into_iter()
        .map(|row| {
            let values: serde_json::Map<String, serde_json::Value> = variants
                .iter()
                .zip(&row.numbers)
                .map(|(v, number)| {
                    let value = number.map_or(serde_json::Value::Null, |n| row.json_number(n));
                    (v.variant.clone(), value)
                })
                .collect();
            let deltas: serde_json::Map<String, serde_json::Value> = variants
                .iter()
                .skip(1)
                .zip(&row.deltas)
                .map(|(v, delta)| {
                    let value = delta.as_ref().map_or(serde_json::Value::Null, |d| {
                        serde_json::json!({
                            "absolute": row.json_number(d.absolute),
                            "percent": d.percent.map(|p| round(p, 2)),
                        })
                    });
                    (v.variant.clone(), value)
                })
                .collect();
            serde_json::json!({
                "key": row.key,
                "unit": row.unit.name(),
                "values": values,
                "deltas_vs_first": deltas,
            })
        })
        .collect()
}

fn row(label: &str, key: &str, unit: Unit, numbers: Vec<Option<f64>>) -> ComparisonRow {
    let values = numbers
        .iter()
        .map(|n| n.map_or_else(|| "-".to_string(), |n| format_value(unit, n)))
        .collect();
    let base = numbers.first().copied().flatten();
    let deltas = numbers
        .iter()
        .skip(1)
        .map(|n| match (base, *n) {
            (Some(base), Some(n)) => Some(delta(unit, base, n)),
            _ => None,
        })
        .collect();
    ComparisonRow {
        label: label.to_string(),
        key: key.to_string(),
        unit,
        numbers,
        values,
        deltas,
    }
}

fn union_keys<V>(
    variants: &[Summary],
    map: impl Fn(&Summary) -> &BTreeMap<String, V>,
) -> Vec<String> {
    let mut keys: Vec<String> = variants
        .iter()
        .flat_map(|v| map(v).keys().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn value_of(map: &BTreeMap<String, f64>, key: &str) -> f64 {
    map.get(key).copied().unwrap_or_default()
}

fn count_of(map: &BTreeMap<String, u64>, key: &str) -> f64 {
    map.get(key).copied().unwrap_or_default() as f64
}

/// Decimals for money: cents from a dollar up (and for nothing at all),
/// else four places so small runs still show their size.
fn usd_decimals(amount: f64) -> usize {
    if amount.abs() >= 1.0 || amount == 0.0 {
        2
    } else {
        4
    }
}

/// One number as the comparison writes it.
pub fn format_value(unit: Unit, value: f64) -> String {
    match unit {
        Unit::Usd => {
            let sign = if value < 0.0 { "-" } else { "" };
            format!("{sign}${:.*}", usd_decimals(value), value.abs())
        }
        Unit::Count => format!("{value:.0}"),
        Unit::Hours => format!("{value:.2}"),
        Unit::Seconds => format!("{value:.1}s"),
        Unit::Ratio => format!("{:.1}%", value * 100.0),
    }
}

fn delta(unit: Unit, base: f64, value: f64) -> Delta {
    let absolute = value - base;
    let percent = (base != 0.0).then(|| absolute / base.abs() * 100.0);
    let magnitude = absolute.abs();
    let shown = match unit {
        Unit::Usd => format!("${:.*}", usd_decimals(magnitude), magnitude),
        Unit::Count => format!("{magnitude:.0}"),
        Unit::Hours => format!("{magnitude:.2}"),
        Unit::Seconds => format!("{magnitude:.1}s"),
        Unit::Ratio => format!("{:.1}pp", magnitude * 100.0),
    };
    let text = if is_zero_text(&shown) {
        // No visible change: a bare zero reads better than `+0.0`.
        match unit {
            Unit::Usd => "$0".to_string(),
            Unit::Seconds => "0s".to_string(),
            Unit::Ratio => "0pp".to_string(),
            Unit::Count | Unit::Hours => "0".to_string(),
        }
    } else {
        let sign = if absolute < 0.0 { "-" } else { "+" };
        match percent {
            Some(p) => format!("{sign}{shown} ({})", signed_percent(p)),
            None => format!("{sign}{shown}"),
        }
    };
    Delta {
        absolute,
        percent,
        text,
    }
}

fn is_zero_text(text: &str) -> bool {
    text.chars()
        .filter(|c| c.is_ascii_digit())
        .all(|c| c == '0')
}

fn signed_percent(percent: f64) -> String {
    let text = format!("{percent:+.1}%");
    if is_zero_text(&text) {
        "0.0%".to_string()
    } else {
        text
    }
}

/// Writes the comparison as an aligned text table: the first variant's
/// column, then for each other variant its column and its delta column
/// (`Δ name`).
pub fn write_comparison_table(variants: &[Summary], out: &mut impl Write) -> io::Result<()> {
    let delta_headers: Vec<String> = variants
        .iter()
        .skip(1)
        .map(|v| format!("Δ {}", v.variant))
        .collect();
    let mut header: Vec<(&str, Align)> = vec![("", Align::Left)];
    for (index, variant) in variants.iter().enumerate() {
        header.push((variant.variant.as_str(), Align::Right));
        if index > 0 {
            header.push((delta_headers[index - 1].as_str(), Align::Right));
        }
    }
    let rows: Vec<Vec<String>> = comparison_rows(variants)
        .into_iter()
        .map(|row| {
            let mut cells = vec![row.label];
            for (index, value) in row.values.into_iter().enumerate() {
                cells.push(value);
                if index > 0 {
                    cells.push(
                        row.deltas[index - 1]
                            .as_ref()
                            .map_or_else(|| "-".to_string(), |d| d.text.clone()),
                    );
                }
            }
            cells
        })
        .collect();
    write_table(out, &header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(variant: &str, cost: f64, peak: u64) -> Summary {
        let text = format!(
            r#"{{"scenario":"s","variant":"{variant}","duration_s":3600.0,
            "total_cost_usd":{cost},"cost_by_capacity_type":{{"spot":{cost}}},
            "node_hours":2.5,"peak_nodes":{peak},"nodeclaims_launched":3,
            "cpu_allocation":0.5,"memory_allocation":0.25,
            "pending_seconds_p95":null,"future_key":{{"x":1}}}}"#
        );
        Summary::parse(&text).unwrap()
    }

    fn find<'a>(rows: &'a [ComparisonRow], label: &str) -> &'a ComparisonRow {
        rows.iter().find(|r| r.label == label).unwrap()
    }

    /// $10 → $11: +$1.00, +10%; 4 → 2 peak nodes: -2, -50%.
    #[test]
    fn deltas_are_signed_differences_with_percent() {
        let rows = comparison_rows(&[summary("a", 10.0, 4), summary("b", 11.0, 2)]);
        let cost = find(&rows, "total cost");
        assert_eq!(cost.values, ["$10.00", "$11.00"]);
        let d = cost.deltas[0].as_ref().unwrap();
        assert_eq!(d.text, "+$1.00 (+10.0%)");
        assert_eq!(d.absolute, 1.0);
        let peak = find(&rows, "peak nodes");
        assert_eq!(peak.deltas[0].as_ref().unwrap().text, "-2 (-50.0%)");
        let hours = find(&rows, "node-hours");
        assert_eq!(hours.deltas[0].as_ref().unwrap().text, "0");
    }

    #[test]
    fn no_percent_when_the_base_is_zero() {
        let rows = comparison_rows(&[summary("a", 0.0, 0), summary("b", 0.5, 3)]);
        assert_eq!(
            find(&rows, "total cost").deltas[0].as_ref().unwrap().text,
            "+$0.5000"
        );
        let peak = find(&rows, "peak nodes").deltas[0].clone().unwrap();
        assert_eq!(peak.text, "+3");
        assert_eq!(peak.percent, None);
    }

    #[test]
    fn absent_numbers_show_a_dash_and_no_delta() {
        let mut b = summary("b", 2.0, 1);
        b.cost_efficiency = Some(0.8);
        b.pending_seconds_p95 = Some(12.0);
        let rows = comparison_rows(&[summary("a", 1.0, 1), b]);
        let efficiency = find(&rows, "cost efficiency");
        assert_eq!(efficiency.values, ["-", "80.0%"]);
        assert_eq!(efficiency.deltas, [None]);
        assert!(!rows.iter().any(|r| r.label == "cost lower bound"));
        assert_eq!(find(&rows, "pending p95").deltas, [None]);
    }

    #[test]
    fn ratio_deltas_are_percentage_points() {
        let mut b = summary("b", 1.0, 1);
        b.cpu_allocation = 0.6;
        let rows = comparison_rows(&[summary("a", 1.0, 1), b]);
        assert_eq!(
            find(&rows, "cpu allocation").deltas[0]
                .as_ref()
                .unwrap()
                .text,
            "+10.0pp (+20.0%)"
        );
    }

    #[test]
    fn sub_rows_cover_the_union_of_keys() {
        let mut a = summary("a", 1.0, 1);
        a.churn.evictions_by_reason.insert("drift".into(), 2);
        let mut b = summary("b", 1.0, 1);
        b.churn
            .evictions_by_reason
            .insert("underutilized".into(), 5);
        b.cost_by_capacity_type.insert("on-demand".into(), 0.25);
        let rows = comparison_rows(&[a, b]);
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert!(labels.contains(&"  drift") && labels.contains(&"  underutilized"));
        assert_eq!(find(&rows, "  underutilized").values, ["0", "5"]);
        assert_eq!(find(&rows, "  on-demand").values, ["$0.00", "$0.2500"]);
    }

    #[test]
    fn table_interleaves_values_and_deltas() {
        let mut out = Vec::new();
        write_comparison_table(&[summary("a", 10.0, 4), summary("b", 11.0, 2)], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.contains("a") && header.contains("Δ b"), "{header}");
        let cost = text.lines().find(|l| l.starts_with("total cost")).unwrap();
        assert!(cost.ends_with("+$1.00 (+10.0%)"), "{cost}");
    }

    #[test]
    fn one_variant_has_no_deltas() {
        let rows = comparison_rows(&[summary("a", 1.0, 1)]);
        assert!(
            rows.iter()
                .all(|r| r.deltas.is_empty() && r.values.len() == 1)
        );
    }
}
