//! `summary.json`: a run's headline numbers, written from the engine's
//! [`RunSummary`] and read back by `compare`, `chart`, `html` and
//! `explain`. The keys are the fields, in this order. Money is in dollars
//! (micro-dollars divided, not rounded); durations are rounded to three
//! decimals of a second, ratios and hours to four (the cost efficiency and
//! the savings per eviction to six). Keys older versions did not write
//! read as empty or zero.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::sim::engine::{self, Churn, RunSummary};
use crate::sim::ledger::MicroUsd;
use crate::sim::time::SimDuration;
use crate::snapshot::SnapshotIdentity;

/// `summary.json` in a variant folder.
pub const SUMMARY_FILE: &str = "summary.json";

/// Why a `summary.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
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

/// One variant's `summary.json`, one field per key (the file is as wide as
/// the numbers a run reports). Unknown keys are ignored when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// The pricing snapshot the run's catalogs were built from, as its
    /// identity serializes (`region`, `date`, `source`, `file`).
    #[serde(default)]
    pub pricing: Option<serde_json::Value>,
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
    /// The cheapest cost that could have carried the workload, USD.
    #[serde(default)]
    pub cost_lower_bound_usd: Option<f64>,
    /// Lower bound over actual cost, 0..=1 (`null` when nothing was paid).
    #[serde(default)]
    pub cost_efficiency: Option<f64>,
    /// Node-hours run.
    pub node_hours: f64,
    /// Most nodes at once.
    pub peak_nodes: u64,
    /// NodeClaims (or nodes) launched.
    pub nodeclaims_launched: u64,
    /// Launches that failed (insufficient capacity or no offering).
    #[serde(default)]
    pub launch_failures: u64,
    /// Jobs failed because they ran past `activeDeadlineSeconds`.
    #[serde(default)]
    pub jobs_failed: u64,
    /// Requested over allocatable CPU, time-weighted, 0..=1.
    pub cpu_allocation: f64,
    /// Requested over allocatable memory, time-weighted, 0..=1.
    pub memory_allocation: f64,
    /// Workload pods (not DaemonSet) created.
    #[serde(default)]
    pub pods_created: u64,
    /// Workload pods scheduled at least once.
    #[serde(default)]
    pub pods_scheduled: u64,
    /// Workload pods never scheduled.
    #[serde(default)]
    pub pods_unschedulable: u64,
    /// Median pending time, seconds (`null` with no pods scheduled).
    #[serde(default)]
    pub pending_seconds_p50: Option<f64>,
    /// 95th percentile pending time, seconds.
    #[serde(default)]
    pub pending_seconds_p95: Option<f64>,
    /// Longest pending time, seconds.
    #[serde(default)]
    pub pending_seconds_max: Option<f64>,
    /// Why pods were never scheduled, most pods first.
    #[serde(default)]
    pub unschedulable_reasons: Vec<UnschedulableReason>,
    /// Events logged.
    #[serde(default)]
    pub events: u64,
    /// Evictions, launches, terminations and consolidation savings.
    #[serde(default)]
    pub churn: ChurnSummary,
    /// Trace rows skipped as unusable (`--skip-bad-rows`).
    #[serde(default)]
    pub trace_rows_skipped: u64,
    /// Scale and delete steps whose object did not exist.
    #[serde(default)]
    pub steps_missing_target: u64,
    /// Spot usage, interruptions and savings.
    #[serde(default)]
    pub spot: SpotSummary,
}

/// One reason pods were never scheduled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnschedulableReason {
    /// The scheduler's message.
    pub reason: String,
    /// How many pods stayed pending for it.
    pub pods: u64,
    /// One such pod, `<ns>/<name>`.
    #[serde(default)]
    pub example: String,
}

/// The churn block: what disruption cost the workload, and what it saved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChurnSummary {
    /// Voluntary evictions of workload pods, all reasons.
    pub evictions: u64,
    /// Evictions by the reason their node was deleted.
    pub evictions_by_reason: BTreeMap<String, u64>,
    /// NodeClaims (or nodes) launched per reason.
    pub nodeclaims_launched_by_reason: BTreeMap<String, u64>,
    /// The sum of `nodeclaims_terminated_by_reason`.
    pub nodeclaims_terminated: u64,
    /// NodeClaims (or nodes) terminated per reason.
    pub nodeclaims_terminated_by_reason: BTreeMap<String, u64>,
    /// Pods re-created by their owner, per owner.
    pub pod_restarts: BTreeMap<String, u64>,
    /// Eviction attempts a PDB refused (each retry counts).
    pub pdb_blocked_evictions: u64,
    /// Pods deleted at a NodeClaim's terminationGracePeriod deadline.
    pub forced_pod_deletions: u64,
    /// Bare pods (no owner) lost with their node.
    pub bare_pods_lost: u64,
    /// Disruption commands started, by method.
    pub disruption_commands_by_method: BTreeMap<String, u64>,
    /// Commands dropped at validation, aborted or timed out.
    pub disruption_commands_failed: u64,
    /// Hourly savings of the consolidations done.
    pub consolidation_savings_usd_per_hour: f64,
    /// Money saved by consolidation over the run.
    pub consolidation_savings_usd: f64,
    /// Evictions consolidation (Empty and Underutilized) caused.
    pub consolidation_evictions: u64,
    /// `consolidation_savings_usd / consolidation_evictions`, six decimals.
    pub consolidation_savings_usd_per_eviction: Option<f64>,
}

/// The spot block (definitions: the engine's `spot_metrics` module).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpotSummary {
    /// Interruption notices, all sources.
    pub interruptions: u64,
    /// Interruption notices by source.
    pub interruptions_by_source: BTreeMap<String, u64>,
    /// Rebalance recommendations given.
    pub rebalance_recommendations: u64,
    /// Workload pods on nodes at their notice.
    pub pods_disrupted: u64,
    /// Workload pods still running at the reclaim.
    pub pods_killed_at_reclaim: u64,
    /// Seconds without a running replica, over all owners.
    pub pod_seconds_without_replica: f64,
    /// Seconds without a running replica, per owner.
    pub pod_seconds_without_replica_by_owner: BTreeMap<String, f64>,
    /// Notice → replacement bound, seconds: median.
    pub replacement_latency_seconds_p50: Option<f64>,
    /// 95th percentile.
    pub replacement_latency_seconds_p95: Option<f64>,
    /// Disrupted pods whose replacement had not run by the end.
    pub replacements_not_running: u64,
    /// Bills of interrupted nodes while their replacements ran, USD.
    pub overlap_cost_usd: f64,
    /// Node-hours on spot capacity.
    pub spot_node_hours: f64,
    /// Spot node-hours over all node-hours, 0..=1.
    pub spot_share_of_node_hours: f64,
    /// What spot nodes would have cost on demand minus what they cost.
    pub savings_vs_on_demand_usd: f64,
    /// Spot price changes applied.
    pub price_changes: u64,
    /// Launches refused by a storm outage.
    pub outage_launch_failures: u64,
    /// Trace rows that found no node to interrupt.
    pub trace_rows_skipped: u64,
}

/// Rounds to `decimals` places: keeps the file short and stable.
pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Micro-dollars as dollars.
fn usd(amount: MicroUsd) -> f64 {
    amount.0 as f64 / 1e6
}

/// Milliseconds as seconds, three decimals.
fn secs(ms: u64) -> f64 {
    round(ms as f64 / 1000.0, 3)
}

fn optional_secs(d: Option<SimDuration>) -> Option<f64> {
    d.map(|d| secs(d.as_millis()))
}

impl Summary {
    /// The summary of a run of `scenario` on the `pricing` snapshot.
    pub fn of_run(scenario: &str, pricing: &SnapshotIdentity, s: &RunSummary) -> Summary {
        Summary {
            scenario: scenario.to_string(),
            variant: s.variant.clone(),
            pricing: Some(
                serde_json::to_value(pricing).expect("a snapshot identity is a JSON object"),
            ),
            duration_s: secs(s.duration.as_millis()),
            total_cost_usd: usd(s.total_cost),
            cost_by_capacity_type: s
                .cost_by_capacity_type
                .iter()
                .map(|(ct, cost)| (ct.label().to_string(), usd(*cost)))
                .collect(),
            cost_by_nodepool: s
                .cost_by_nodepool
                .iter()
                .map(|(pool, cost)| (pool.clone(), usd(*cost)))
                .collect(),
            cost_lower_bound_usd: Some(usd(s.cost_lower_bound)),
            cost_efficiency: s.cost_efficiency.map(|e| round(e, 6)),
            node_hours: round(s.node_hours(), 4),
            peak_nodes: s.peak_nodes as u64,
            nodeclaims_launched: s.nodeclaims_launched,
            launch_failures: s.launch_failures,
            jobs_failed: s.jobs_failed,
            cpu_allocation: round(s.cpu_allocation, 4),
            memory_allocation: round(s.memory_allocation, 4),
            pods_created: s.pods_created as u64,
            pods_scheduled: s.pods_scheduled as u64,
            pods_unschedulable: s.pods_unschedulable as u64,
            pending_seconds_p50: optional_secs(s.pending_p50),
            pending_seconds_p95: optional_secs(s.pending_p95),
            pending_seconds_max: optional_secs(s.pending_max),
            unschedulable_reasons: s
                .unschedulable_reasons
                .iter()
                .map(|r| UnschedulableReason {
                    reason: r.reason.clone(),
                    pods: r.pods as u64,
                    example: r.example.clone(),
                })
                .collect(),
            events: s.events as u64,
            churn: ChurnSummary::of(&s.churn),
            trace_rows_skipped: s.trace_rows_skipped,
            steps_missing_target: s.steps_missing_target(),
            spot: SpotSummary::of(s),
        }
    }

    /// Writes the file: pretty JSON and a newline.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(io::Error::other)?;
        writeln!(out)
    }

    /// The document as a JSON value, keys in file order.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a summary is a JSON object")
    }

    /// Reads and parses one `summary.json`.
    pub fn read(path: &Path) -> Result<Summary, SummaryError> {
        let text = std::fs::read_to_string(path).map_err(|source| SummaryError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Summary::parse(&text).map_err(|source| SummaryError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Parses the text of a `summary.json`.
    pub fn parse(text: &str) -> Result<Summary, serde_json::Error> {
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

    /// The simulated duration in whole milliseconds; `None` when
    /// `duration_s` is negative or not finite.
    pub fn duration_ms(&self) -> Option<u64> {
        (0.0..1e15)
            .contains(&self.duration_s)
            .then(|| (self.duration_s * 1000.0).round() as u64)
    }
}

impl ChurnSummary {
    fn of(churn: &Churn) -> ChurnSummary {
        let evictions = churn.consolidation_evictions();
        let saved = usd(churn.consolidation_savings);
        ChurnSummary {
            evictions: churn.evictions(),
            evictions_by_reason: churn.evictions_by_reason.clone(),
            nodeclaims_launched_by_reason: churn.nodeclaims_launched_by_reason.clone(),
            nodeclaims_terminated: churn.nodeclaims_terminated_by_reason.values().sum(),
            nodeclaims_terminated_by_reason: churn.nodeclaims_terminated_by_reason.clone(),
            pod_restarts: churn.pod_restarts.clone(),
            pdb_blocked_evictions: churn.pdb_blocked_evictions,
            forced_pod_deletions: churn.forced_pod_deletions,
            bare_pods_lost: churn.bare_pods_lost,
            disruption_commands_by_method: churn.commands_by_method.clone(),
            disruption_commands_failed: churn.commands_failed,
            consolidation_savings_usd_per_hour: usd(MicroUsd(
                churn.consolidation_savings_per_hour.micros(),
            )),
            consolidation_savings_usd: saved,
            consolidation_evictions: evictions,
            consolidation_savings_usd_per_eviction: (evictions > 0)
                .then(|| round(saved / evictions as f64, 6)),
        }
    }
}

impl SpotSummary {
    fn of(summary: &RunSummary) -> SpotSummary {
        let spot: &engine::SpotSummary = &summary.spot;
        SpotSummary {
            interruptions: spot.interruptions(),
            interruptions_by_source: spot.interruptions_by_source.clone(),
            rebalance_recommendations: spot.rebalance_recommendations,
            pods_disrupted: spot.pods_disrupted,
            pods_killed_at_reclaim: spot.pods_killed_at_reclaim,
            pod_seconds_without_replica: secs(spot.pod_millis_without_replica_total()),
            pod_seconds_without_replica_by_owner: spot
                .pod_millis_without_replica
                .iter()
                .map(|(owner, ms)| (owner.clone(), secs(*ms)))
                .collect(),
            replacement_latency_seconds_p50: optional_secs(spot.replacement_latency_p50),
            replacement_latency_seconds_p95: optional_secs(spot.replacement_latency_p95),
            replacements_not_running: spot.replacements_not_running,
            overlap_cost_usd: usd(spot.overlap_cost),
            spot_node_hours: round(spot.spot_node_millis as f64 / 3_600_000.0, 4),
            spot_share_of_node_hours: round(summary.spot_share(), 4),
            savings_vs_on_demand_usd: usd(spot.savings_vs_on_demand),
            price_changes: spot.price_changes,
            outage_launch_failures: spot.outage_launch_failures,
            trace_rows_skipped: spot.trace_rows_skipped,
        }
    }
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
        let error = Summary::read(&path).unwrap_err();
        assert!(matches!(error, SummaryError::Parse { .. }));
        assert!(error.to_string().contains("summary.json"), "{error}");
        let missing = Summary::read(&dir.path().join("nope.json")).unwrap_err();
        assert!(matches!(missing, SummaryError::Read { .. }));
    }
}
