//! The files of a sweep folder, each defined once for the writer and the
//! readers (`sweep merge` reads shards back through them): `runs.csv`, one
//! [`SweepRunRow`] per run, and `sweep.json`, a [`SweepDocument`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::rows::{Row, field_names};
use super::summary::Summary;
use super::values::Decimal;

/// `runs.csv`: one row per run.
pub const RUNS_FILE: &str = "runs.csv";
/// `sweep.json`: the sweep, its configurations and their statistics.
pub const SWEEP_FILE: &str = "sweep.json";
/// The folder of the runs' full reports (`--keep-reports`), one
/// `runs/<run id>` report folder each.
pub const RUNS_DIR: &str = "runs";

/// A run's status in `runs.csv`.
pub const STATUS_OK: &str = "ok";
/// A run that could not be prepared or simulated.
pub const STATUS_FAILED: &str = "failed";

/// One row of `runs.csv`: the run, its configuration and seed, and every
/// scalar number of its `summary.json` (the breakdowns by reason, pool or
/// owner are in the run's own report, `--keep-reports`). A failed run has
/// its `error` and no numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRunRow {
    /// The run's place in the enumeration, from 0.
    pub run: u64,
    /// `c03-s7`.
    pub id: String,
    /// The configuration's id, `c03`.
    pub configuration: String,
    /// The configuration on one line.
    pub label: String,
    /// The seed.
    pub seed: u64,
    /// `ok` or `failed`.
    pub status: String,
    /// Why the run failed (empty when it did not).
    pub error: String,
    /// `total_cost_usd`.
    pub total_cost_usd: Option<Decimal>,
    /// `cost_by_capacity_type.on-demand`.
    pub cost_on_demand_usd: Option<Decimal>,
    /// `cost_by_capacity_type.spot`.
    pub cost_spot_usd: Option<Decimal>,
    /// `cost_by_capacity_type.reserved`.
    pub cost_reserved_usd: Option<Decimal>,
    /// `cost_lower_bound_usd`.
    pub cost_lower_bound_usd: Option<Decimal>,
    /// `cost_efficiency` (empty when nothing was paid).
    pub cost_efficiency: Option<Decimal>,
    /// `node_hours`.
    pub node_hours: Option<Decimal>,
    /// `peak_nodes`.
    pub peak_nodes: Option<u64>,
    /// `nodeclaims_launched`.
    pub nodeclaims_launched: Option<u64>,
    /// `launch_failures`.
    pub launch_failures: Option<u64>,
    /// `jobs_failed`.
    pub jobs_failed: Option<u64>,
    /// `cpu_allocation`.
    pub cpu_allocation: Option<Decimal>,
    /// `memory_allocation`.
    pub memory_allocation: Option<Decimal>,
    /// `pods_created`.
    pub pods_created: Option<u64>,
    /// `pods_scheduled`.
    pub pods_scheduled: Option<u64>,
    /// `pods_unschedulable`.
    pub pods_unschedulable: Option<u64>,
    /// `pending_seconds_p50`.
    pub pending_seconds_p50: Option<Decimal>,
    /// `pending_seconds_p95`.
    pub pending_seconds_p95: Option<Decimal>,
    /// `pending_seconds_max`.
    pub pending_seconds_max: Option<Decimal>,
    /// `events`.
    pub events: Option<u64>,
    /// `churn.evictions`.
    pub evictions: Option<u64>,
    /// `churn.nodeclaims_terminated`.
    pub nodeclaims_terminated: Option<u64>,
    /// `churn.pdb_blocked_evictions`.
    pub pdb_blocked_evictions: Option<u64>,
    /// `churn.forced_pod_deletions`.
    pub forced_pod_deletions: Option<u64>,
    /// `churn.bare_pods_lost`.
    pub bare_pods_lost: Option<u64>,
    /// `churn.disruption_commands_failed`.
    pub disruption_commands_failed: Option<u64>,
    /// `churn.consolidation_savings_usd_per_hour`.
    pub consolidation_savings_usd_per_hour: Option<Decimal>,
    /// `churn.consolidation_savings_usd`.
    pub consolidation_savings_usd: Option<Decimal>,
    /// `churn.consolidation_evictions`.
    pub consolidation_evictions: Option<u64>,
    /// `churn.consolidation_savings_usd_per_eviction`.
    pub consolidation_savings_usd_per_eviction: Option<Decimal>,
    /// `spot.interruptions`.
    pub spot_interruptions: Option<u64>,
    /// `spot.rebalance_recommendations`.
    pub spot_rebalance_recommendations: Option<u64>,
    /// `spot.pods_disrupted`.
    pub spot_pods_disrupted: Option<u64>,
    /// `spot.pods_killed_at_reclaim`.
    pub spot_pods_killed_at_reclaim: Option<u64>,
    /// `spot.pod_seconds_without_replica`.
    pub spot_pod_seconds_without_replica: Option<Decimal>,
    /// `spot.replacement_latency_seconds_p50`.
    pub spot_replacement_latency_seconds_p50: Option<Decimal>,
    /// `spot.replacement_latency_seconds_p95`.
    pub spot_replacement_latency_seconds_p95: Option<Decimal>,
    /// `spot.replacements_not_running`.
    pub spot_replacements_not_running: Option<u64>,
    /// `spot.overlap_cost_usd`.
    pub spot_overlap_cost_usd: Option<Decimal>,
    /// `spot.spot_node_hours`.
    pub spot_node_hours: Option<Decimal>,
    /// `spot.spot_share_of_node_hours`.
    pub spot_share_of_node_hours: Option<Decimal>,
    /// `spot.savings_vs_on_demand_usd`.
    pub spot_savings_vs_on_demand_usd: Option<Decimal>,
    /// `spot.price_changes`.
    pub spot_price_changes: Option<u64>,
    /// `spot.outage_launch_failures`.
    pub spot_outage_launch_failures: Option<u64>,
    /// `trace_rows_skipped`.
    pub trace_rows_skipped: Option<u64>,
    /// `steps_missing_target`.
    pub steps_missing_target: Option<u64>,
}

impl Row for SweepRunRow {
    fn columns() -> &'static [&'static str] {
        field_names::<SweepRunRow>()
    }
}

/// Which run a row is: its index, id, configuration and seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIdentity {
    /// From 0.
    pub run: u64,
    /// `c03-s7`.
    pub id: String,
    /// `c03`.
    pub configuration: String,
    /// The configuration on one line.
    pub label: String,
    /// The seed.
    pub seed: u64,
}

impl SweepRunRow {
    /// The row of a run that finished, from its summary.
    pub fn of_summary(run: RunIdentity, s: &Summary) -> SweepRunRow {
        let d = |v: f64| Some(Decimal(v));
        let cost = |capacity: &str| {
            d(s.cost_by_capacity_type
                .get(capacity)
                .copied()
                .unwrap_or(0.0))
        };
        let mut row = SweepRunRow::failed(run, String::new());
        row.status = STATUS_OK.to_string();
        row.total_cost_usd = d(s.total_cost_usd);
        row.cost_on_demand_usd = cost("on-demand");
        row.cost_spot_usd = cost("spot");
        row.cost_reserved_usd = cost("reserved");
        row.cost_lower_bound_usd = s.cost_lower_bound_usd.map(Decimal);
        row.cost_efficiency = s.cost_efficiency.map(Decimal);
        row.node_hours = d(s.node_hours);
        row.peak_nodes = Some(s.peak_nodes);
        row.nodeclaims_launched = Some(s.nodeclaims_launched);
        row.launch_failures = Some(s.launch_failures);
        row.jobs_failed = Some(s.jobs_failed);
        row.cpu_allocation = d(s.cpu_allocation);
        row.memory_allocation = d(s.memory_allocation);
        row.pods_created = Some(s.pods_created);
        row.pods_scheduled = Some(s.pods_scheduled);
        row.pods_unschedulable = Some(s.pods_unschedulable);
        row.pending_seconds_p50 = s.pending_seconds_p50.map(Decimal);
        row.pending_seconds_p95 = s.pending_seconds_p95.map(Decimal);
        row.pending_seconds_max = s.pending_seconds_max.map(Decimal);
        row.events = Some(s.events);
        let churn = &s.churn;
        row.evictions = Some(churn.evictions);
        row.nodeclaims_terminated = Some(churn.nodeclaims_terminated);
        row.pdb_blocked_evictions = Some(churn.pdb_blocked_evictions);
        row.forced_pod_deletions = Some(churn.forced_pod_deletions);
        row.bare_pods_lost = Some(churn.bare_pods_lost);
        row.disruption_commands_failed = Some(churn.disruption_commands_failed);
        row.consolidation_savings_usd_per_hour = d(churn.consolidation_savings_usd_per_hour);
        row.consolidation_savings_usd = d(churn.consolidation_savings_usd);
        row.consolidation_evictions = Some(churn.consolidation_evictions);
        row.consolidation_savings_usd_per_eviction =
            churn.consolidation_savings_usd_per_eviction.map(Decimal);
        let spot = &s.spot;
        row.spot_interruptions = Some(spot.interruptions);
        row.spot_rebalance_recommendations = Some(spot.rebalance_recommendations);
        row.spot_pods_disrupted = Some(spot.pods_disrupted);
        row.spot_pods_killed_at_reclaim = Some(spot.pods_killed_at_reclaim);
        row.spot_pod_seconds_without_replica = d(spot.pod_seconds_without_replica);
        row.spot_replacement_latency_seconds_p50 =
            spot.replacement_latency_seconds_p50.map(Decimal);
        row.spot_replacement_latency_seconds_p95 =
            spot.replacement_latency_seconds_p95.map(Decimal);
        row.spot_replacements_not_running = Some(spot.replacements_not_running);
        row.spot_overlap_cost_usd = d(spot.overlap_cost_usd);
        row.spot_node_hours = d(spot.spot_node_hours);
        row.spot_share_of_node_hours = d(spot.spot_share_of_node_hours);
        row.spot_savings_vs_on_demand_usd = d(spot.savings_vs_on_demand_usd);
        row.spot_price_changes = Some(spot.price_changes);
        row.spot_outage_launch_failures = Some(spot.outage_launch_failures);
        row.trace_rows_skipped = Some(s.trace_rows_skipped);
        row.steps_missing_target = Some(s.steps_missing_target);
        row
    }

    /// The row of a run that failed with `error`.
    pub fn failed(run: RunIdentity, error: String) -> SweepRunRow {
        SweepRunRow {
            run: run.run,
            id: run.id,
            configuration: run.configuration,
            label: run.label,
            seed: run.seed,
            status: STATUS_FAILED.to_string(),
            error,
            total_cost_usd: None,
            cost_on_demand_usd: None,
            cost_spot_usd: None,
            cost_reserved_usd: None,
            cost_lower_bound_usd: None,
            cost_efficiency: None,
            node_hours: None,
            peak_nodes: None,
            nodeclaims_launched: None,
            launch_failures: None,
            jobs_failed: None,
            cpu_allocation: None,
            memory_allocation: None,
            pods_created: None,
            pods_scheduled: None,
            pods_unschedulable: None,
            pending_seconds_p50: None,
            pending_seconds_p95: None,
            pending_seconds_max: None,
            events: None,
            evictions: None,
            nodeclaims_terminated: None,
            pdb_blocked_evictions: None,
            forced_pod_deletions: None,
            bare_pods_lost: None,
            disruption_commands_failed: None,
            consolidation_savings_usd_per_hour: None,
            consolidation_savings_usd: None,
            consolidation_evictions: None,
            consolidation_savings_usd_per_eviction: None,
            spot_interruptions: None,
            spot_rebalance_recommendations: None,
            spot_pods_disrupted: None,
            spot_pods_killed_at_reclaim: None,
            spot_pod_seconds_without_replica: None,
            spot_replacement_latency_seconds_p50: None,
            spot_replacement_latency_seconds_p95: None,
            spot_replacements_not_running: None,
            spot_overlap_cost_usd: None,
            spot_node_hours: None,
            spot_share_of_node_hours: None,
            spot_savings_vs_on_demand_usd: None,
            spot_price_changes: None,
            spot_outage_launch_failures: None,
            trace_rows_skipped: None,
            steps_missing_target: None,
        }
    }

    /// Whether the run finished.
    pub fn is_ok(&self) -> bool {
        self.status == STATUS_OK
    }
}

/// One field set to one value in a configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingEntry {
    /// The NodePool field, as written in `vary`.
    pub field: String,
    /// The value, as written.
    pub value: String,
}

/// Which part of a sharded sweep a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
    /// From 0.
    pub index: u64,
    /// How many shards the sweep was split into.
    pub count: u64,
}

/// The statistics of one metric over a configuration's runs (see
/// scenarios/README.md for the definitions); six decimals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statistics {
    /// Runs with a value.
    pub n: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); `null` for one run.
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest value.
    pub max: f64,
    /// Lower end of the 95 % interval of the mean; `null` for one run.
    pub ci95_low: Option<f64>,
    /// Upper end of the 95 % interval of the mean.
    pub ci95_high: Option<f64>,
}

/// The metrics a configuration is summarized by; `null` where no run has
/// the number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricStatistics {
    /// `total_cost_usd`.
    pub cost_usd: Option<Statistics>,
    /// `churn.evictions`.
    pub evictions: Option<Statistics>,
    /// `pending_seconds_p95`.
    pub pending_p95_s: Option<Statistics>,
    /// `node_hours`.
    pub node_hours: Option<Statistics>,
    /// `cost_efficiency`.
    pub cost_efficiency: Option<Statistics>,
}

/// One configuration in `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigurationEntry {
    /// `c03`.
    pub id: String,
    /// The base configuration's name.
    pub base: String,
    /// The NodePool file of the base, as written in the sweep file (`null`
    /// for a scenario variant).
    pub node_pools: Option<String>,
    /// The `vary` settings, in order.
    pub settings: Vec<SettingEntry>,
    /// The base and the settings on one line.
    pub label: String,
    /// Runs in this file that finished.
    pub runs: u64,
    /// Runs in this file that failed.
    pub failed: u64,
    /// On the cost-vs-evictions Pareto frontier of the means: no other
    /// configuration has a lower or equal mean cost and mean evictions,
    /// one of them lower.
    pub pareto: bool,
    /// The statistics of its runs.
    pub metrics: MetricStatistics,
}

/// A run that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedRunEntry {
    /// `c03-s7`.
    pub id: String,
    /// Why.
    pub error: String,
}

/// `sweep.json`. A shard's file has `shard` and statistics of its own
/// runs only; the merged (or unsharded) file has no `shard`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepDocument {
    /// The sweep's name.
    pub sweep: String,
    /// The scenario's name.
    pub scenario: String,
    /// Simulated time of each run, seconds.
    pub duration_s: f64,
    /// The pricing snapshot every run used, as `summary.json` names it.
    pub pricing: Option<serde_json::Value>,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// The `vary` fields, in order.
    pub vary: Vec<String>,
    /// Runs of the whole sweep.
    pub runs_total: u64,
    /// Which shard this file holds (absent for the whole sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardEntry>,
    /// Runs in this file.
    pub runs: u64,
    /// Of which failed.
    pub runs_failed: u64,
    /// How the statistics are computed, in words.
    pub statistics: StatisticsMethod,
    /// The configurations, in enumeration order.
    pub configurations: Vec<ConfigurationEntry>,
    /// The failed runs, in run order.
    pub failed_runs: Vec<FailedRunEntry>,
}

/// The definitions behind [`Statistics`], written into the file so that it
/// explains itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatisticsMethod {
    /// The standard deviation.
    pub sd: String,
    /// The 95 % interval.
    pub ci95: String,
    /// The quartiles.
    pub quartiles: String,
}

/// Why a sweep folder's file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SweepFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a `sweep.json` this version writes.
    #[error("{}: not a karpsim sweep.json: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
}

impl SweepDocument {
    /// Writes the file: pretty JSON and a newline.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(io::Error::other)?;
        writeln!(out)
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// Reads one `sweep.json`.
    pub fn read(path: &Path) -> Result<SweepDocument, SweepFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| SweepFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| SweepFileError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }
}
