//! Side-by-side comparison of report variants, read back from their
//! `summary.json` files: one row per measure, one value per variant, and
//! for every variant after the first its difference from the first
//! (absolute, and in percent when the first is not zero).
//!
//! Deltas are computed from the same numbers the values show, so a delta is
//! always the difference of the two summaries' fields.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::table::{Align, write_table};

/// Why a summary could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a summary this version understands.
    #[error("{path}: not a karpsim summary: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

/// One reason pods were never scheduled, as `summary.json` lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UnschedulableReason {
    /// The scheduler's message.
    pub reason: String,
    /// How many pods stayed pending for it.
    pub pods: u64,
    /// One such pod.
    #[serde(default)]
    pub example: String,
}

/// The churn block of `summary.json` (the fields the comparison uses).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ChurnSummary {
    /// Pods evicted, all reasons.
    pub evictions: u64,
    /// Pods evicted per reason.
    pub evictions_by_reason: BTreeMap<String, u64>,
    /// NodeClaims (or nodes) launched per reason.
    pub nodeclaims_launched_by_reason: BTreeMap<String, u64>,
    /// NodeClaims (or nodes) terminated per reason.
    pub nodeclaims_terminated_by_reason: BTreeMap<String, u64>,
    /// Hourly savings of the consolidations done.
    pub consolidation_savings_usd_per_hour: f64,
    /// Money saved by consolidation over the run.
    pub consolidation_savings_usd: f64,
}

/// The spot block of `summary.json` (the fields the comparison uses).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SpotSummary {
    /// Spot interruptions, all sources.
    pub interruptions: u64,
    /// Node-hours on spot capacity.
    pub spot_node_hours: f64,
    /// Spot node-hours over all node-hours, 0..=1.
    pub spot_share_of_node_hours: f64,
    /// What the spot nodes would have cost more on demand.
    pub savings_vs_on_demand_usd: f64,
}

/// One variant's `summary.json`. Unknown keys are ignored; keys newer
/// versions add are optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VariantSummary {
    /// Scenario name.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Total cost of the run, USD.
    pub total_cost_usd: f64,
    /// Cost per capacity type (`on-demand`, `spot`, ...).
    #[serde(default)]
    pub cost_by_capacity_type: BTreeMap<String, f64>,
    /// Cost per NodePool (node group for Cluster Autoscaler).
    #[serde(default)]
    pub cost_by_nodepool: BTreeMap<String, f64>,
    /// Node-hours run.
    pub node_hours: f64,
    /// Most nodes at once.
    pub peak_nodes: u64,
    /// NodeClaims (or nodes) launched.
    pub nodeclaims_launched: u64,
    /// Launches that failed.
    #[serde(default)]
    pub launch_failures: u64,
    /// Requested over allocatable CPU, time-weighted, 0..=1.
    pub cpu_allocation: f64,
    /// Requested over allocatable memory, time-weighted, 0..=1.
    pub memory_allocation: f64,
    /// Pods created.
    #[serde(default)]
    pub pods_created: u64,
    /// Pods scheduled at least once.
    #[serde(default)]
    pub pods_scheduled: u64,
    /// Pods never scheduled.
    #[serde(default)]
    pub pods_unschedulable: u64,
    /// Median pending time, seconds (absent with no pods).
    #[serde(default)]
    pub pending_seconds_p50: Option<f64>,
    /// 95th percentile pending time, seconds.
    #[serde(default)]
    pub pending_seconds_p95: Option<f64>,
    /// Longest pending time, seconds.
    #[serde(default)]
    pub pending_seconds_max: Option<f64>,
    /// Why pods were never scheduled.
    #[serde(default)]
    pub unschedulable_reasons: Vec<UnschedulableReason>,
    /// Evictions, launches and terminations.
    #[serde(default)]
    pub churn: ChurnSummary,
    /// Spot usage and interruptions.
    #[serde(default)]
    pub spot: SpotSummary,
    /// The cheapest cost that could have carried the workload, USD.
    #[serde(default)]
    pub cost_lower_bound_usd: Option<f64>,
    /// Lower bound over actual cost, 0..=1.
    #[serde(default)]
    pub cost_efficiency: Option<f64>,
    /// The pricing the run used, kept as written.
    #[serde(default)]
    pub pricing: Option<serde_json::Value>,
    /// Scale and delete steps whose object did not exist.
    #[serde(default)]
    pub steps_missing_target: u64,
}

impl VariantSummary {
    /// Reads and parses one `summary.json`.
    pub fn read(path: &Path) -> Result<Self, CompareError> {
        let text = std::fs::read_to_string(path).map_err(|source| CompareError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|source| CompareError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Parses the text of a `summary.json`.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The pricing snapshot on one line, `file (region, date; source)` or
    /// `bundled (region, date; source)`, when the summary names one.
    pub fn pricing_text(&self) -> Option<String> {
        let pricing = self.pricing.as_ref()?.as_object()?;
        let field = |key: &str| pricing.get(key).and_then(serde_json::Value::as_str);
        let details: Vec<&str> = [field("region"), field("date")]
            .into_iter()
            .flatten()
            .collect();
        let mut text = format!(
            "{} ({}",
            field("file").unwrap_or("bundled"),
            details.join(", ")
        );
        if let Some(source) = field("source") {
            text.push_str(&format!("; {source}"));
        }
        text.push(')');
        Some(text)
    }

    /// NodeClaims (or nodes) terminated, all reasons.
    pub fn nodeclaims_terminated(&self) -> u64 {
        self.churn.nodeclaims_terminated_by_reason.values().sum()
    }
}

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
pub fn comparison_rows(variants: &[VariantSummary]) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    let mut push =
        |label: &str, key: &str, unit: Unit, number: &dyn Fn(&VariantSummary) -> Option<f64>| {
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

/// Rounds to `decimals` places, as `summary.json` does.
fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// The rows as data for `compare -o json|yaml`: per row its
/// `summary.json` key (a dotted path, `cost_by_capacity_type.spot`), unit,
/// each variant's value (`null` when its summary lacks it) and each later
/// variant's `absolute` and `percent` difference from the first, rounded
/// as `summary.json` rounds the key (percent to two places; `null` when the
/// first variant's value is 0).
pub fn comparison_json_rows(variants: &[VariantSummary]) -> Vec<serde_json::Value> {
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
    variants: &[VariantSummary],
    map: impl Fn(&VariantSummary) -> &BTreeMap<String, V>,
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
pub fn write_comparison_table(variants: &[VariantSummary], out: &mut impl Write) -> io::Result<()> {
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

    fn summary(variant: &str, cost: f64, peak: u64) -> VariantSummary {
        let text = format!(
            r#"{{"scenario":"s","variant":"{variant}","duration_s":3600.0,
            "total_cost_usd":{cost},"cost_by_capacity_type":{{"spot":{cost}}},
            "node_hours":2.5,"peak_nodes":{peak},"nodeclaims_launched":3,
            "cpu_allocation":0.5,"memory_allocation":0.25,
            "pending_seconds_p95":null,"future_key":{{"x":1}}}}"#
        );
        VariantSummary::parse(&text).unwrap()
    }

    fn find<'a>(rows: &'a [ComparisonRow], label: &str) -> &'a ComparisonRow {
        rows.iter().find(|r| r.label == label).unwrap()
    }

    #[test]
    fn extra_keys_are_ignored_and_missing_optional_keys_are_none() {
        let s = summary("a", 1.5, 2);
        assert_eq!(s.cost_efficiency, None);
        assert_eq!(s.cost_lower_bound_usd, None);
        assert_eq!(s.pending_seconds_p95, None);
        assert_eq!(s.churn, ChurnSummary::default());
    }

    #[test]
    fn pricing_is_shown_on_one_line_when_present() {
        let mut s = summary("a", 1.0, 1);
        assert_eq!(s.pricing_text(), None);
        s.pricing = Some(serde_json::json!({
            "region": "us-east-1", "date": "2025-06-01", "source": "AWS price list"
        }));
        assert_eq!(
            s.pricing_text().unwrap(),
            "bundled (us-east-1, 2025-06-01; AWS price list)"
        );
        s.pricing = Some(serde_json::json!({"region": "eu-west-1", "date": "d", "file": "p.json"}));
        assert_eq!(s.pricing_text().unwrap(), "p.json (eu-west-1, d)");
    }

    #[test]
    fn missing_required_key_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        std::fs::write(&path, r#"{"scenario":"s","variant":"v"}"#).unwrap();
        let error = VariantSummary::read(&path).unwrap_err();
        assert!(matches!(error, CompareError::Parse { .. }));
        assert!(error.to_string().contains("summary.json"), "{error}");
        let missing = VariantSummary::read(&dir.path().join("nope.json")).unwrap_err();
        assert!(matches!(missing, CompareError::Read { .. }));
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
