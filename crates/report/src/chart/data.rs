//! What the charts show, reduced to plain series: node counts stacked by
//! instance type or capacity type, cumulative cost, allocation ratios and
//! evictions per time bucket. Nothing here draws.
//!
//! A variant's series come from a run just finished
//! ([`VariantSeries::of_run`]) or from its report folder
//! ([`VariantSeries::read_dir`]: `summary.json`, `timeseries.csv`,
//! `nodeclaims.csv` or `nodes.csv`, `events.csv`), both through the rows of
//! [`crate::schema`], so a chart redrawn from the folder is the chart drawn
//! after the run.

use std::collections::BTreeMap;
use std::path::Path;

use super::ChartError;
use crate::schema::{
    EVENTS_FILE, EventRow, NODECLAIMS_FILE, NODES_FILE, NodeClaimRow, RowReader, SUMMARY_FILE,
    Summary, SummaryError, TIMESERIES_FILE, TimeseriesRow, Usd,
};
use crate::sim::engine::RunOutput;

pub use crate::schema::LOWER_BOUND_COLUMN;

/// Milliseconds in an hour.
const HOUR_MS: f64 = 3_600_000.0;

/// One pod eviction, from an `Evicted` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// When (ms).
    pub time_ms: u64,
    /// Why, as the simulator words it (`underutilized`, `interrupted`, ...).
    pub reason: String,
}

impl Eviction {
    /// The eviction an event row records, if it is one.
    pub fn of(event: &EventRow<&str>) -> Option<Eviction> {
        (event.reason == "Evicted").then(|| Eviction {
            time_ms: event.time_ms,
            reason: eviction_reason(event.message).to_string(),
        })
    }
}

/// Everything the charts of one variant need.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSeries {
    /// The variant's name.
    pub name: String,
    /// The scenario's name.
    pub scenario: String,
    /// The simulated duration (ms).
    pub duration_ms: u64,
    /// One sample per simulated minute, in time order.
    pub samples: Vec<TimeseriesRow>,
    /// Whether the samples have the lower-bound column.
    pub has_lower_bound: bool,
    /// Every node launched, in launch (file) order.
    pub nodes: Vec<NodeClaimRow>,
    /// Every eviction, in time order.
    pub evictions: Vec<Eviction>,
}

/// Counts of several groups at each sample, meant to be drawn stacked.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    /// Group names, bottom of the stack first.
    pub labels: Vec<String>,
    /// For each group, its count at each sample (same order as the samples).
    pub counts: Vec<Vec<u32>>,
}

impl Stack {
    /// The sum of all groups at sample `index`.
    pub fn total_at(&self, index: usize) -> u32 {
        self.counts
            .iter()
            .map(|c| c.get(index).copied().unwrap_or(0))
            .sum()
    }
}

/// Evictions counted per reason and time bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionBuckets {
    /// The bucket width (ms).
    pub bucket_ms: u64,
    /// Reasons, most evictions first (ties by name).
    pub reasons: Vec<String>,
    /// For each reason, its count per bucket; every row has the same length.
    pub counts: Vec<Vec<u32>>,
}

/// A series with holes: (hours, value where there is one).
pub type Gappy = Vec<(f64, Option<f64>)>;

/// Label of the group collecting the instance types beyond the top ones.
pub const OTHER: &str = "other";

impl VariantSeries {
    /// The series of a run just finished: `summary` is its
    /// [`Summary::of_run`], `evictions` those its `events.csv` got (see
    /// [`crate::run::EventsCsv::take_evictions`]).
    pub fn of_run(summary: &Summary, run: &RunOutput, evictions: Vec<Eviction>) -> VariantSeries {
        let duration_ms = summary
            .duration_ms()
            .expect("a run's duration is a whole number of milliseconds");
        VariantSeries::assemble(
            summary,
            duration_ms,
            run.timeseries.iter().map(TimeseriesRow::from).collect(),
            true,
            run.nodeclaims.iter().map(NodeClaimRow::from).collect(),
            evictions,
        )
    }

    /// Reads one variant folder of a `karpsim run` report.
    pub fn read_dir(dir: &Path) -> Result<VariantSeries, ChartError> {
        let summary_path = dir.join(SUMMARY_FILE);
        let summary = Summary::read(&summary_path).map_err(|error| match error {
            SummaryError::Read { path, source } => ChartError::Io { path, source },
            SummaryError::Parse { path, source } => ChartError::Summary {
                path,
                message: source.to_string(),
            },
        })?;
        let duration_ms = summary.duration_ms().ok_or_else(|| ChartError::Summary {
            path: summary_path.clone(),
            message: format!(
                "duration_s: not a duration in seconds: {}",
                summary.duration_s
            ),
        })?;
        let (samples, has_lower_bound) = read_timeseries(&dir.join(TIMESERIES_FILE))?;
        let claims = dir.join(NODECLAIMS_FILE);
        let nodes_file = if claims.exists() {
            claims
        } else {
            dir.join(NODES_FILE)
        };
        if !nodes_file.exists() {
            return Err(ChartError::MissingNodes {
                dir: dir.to_path_buf(),
            });
        }
        let nodes = read_nodes(&nodes_file)?;
        let evictions = read_evictions(&dir.join(EVENTS_FILE))?;
        Ok(VariantSeries::assemble(
            &summary,
            duration_ms,
            samples,
            has_lower_bound,
            nodes,
            evictions,
        ))
    }

    /// The series of the summary and rows of one variant; the duration
    /// covers the last sample.
    fn assemble(
        summary: &Summary,
        duration_ms: u64,
        samples: Vec<TimeseriesRow>,
        has_lower_bound: bool,
        nodes: Vec<NodeClaimRow>,
        mut evictions: Vec<Eviction>,
    ) -> VariantSeries {
        evictions.sort_by_key(|e| e.time_ms);
        let last_sample = samples.last().map_or(0, |s| s.time_ms);
        VariantSeries {
            name: summary.variant.clone(),
            scenario: summary.scenario.clone(),
            duration_ms: duration_ms.max(last_sample),
            samples,
            has_lower_bound,
            nodes,
            evictions,
        }
    }

    /// Sample times in hours.
    pub fn hours(&self) -> Vec<f64> {
        self.samples
            .iter()
            .map(|s| s.time_ms as f64 / HOUR_MS)
            .collect()
    }

    /// The simulated duration in hours.
    pub fn duration_hours(&self) -> f64 {
        self.duration_ms as f64 / HOUR_MS
    }

    /// Node-hours per instance type over the run.
    pub fn node_hours_by_type(&self) -> BTreeMap<&str, f64> {
        let mut hours = BTreeMap::new();
        for node in &self.nodes {
            let end = node.deleted_at_ms.unwrap_or(self.duration_ms);
            let life = end.saturating_sub(node.launched_at_ms) as f64 / HOUR_MS;
            *hours.entry(node.instance_type.as_str()).or_insert(0.0) += life;
        }
        hours
    }

    /// Nodes at each sample stacked by instance type: the `top` types with
    /// the most node-hours (ties by name), then [`OTHER`] for the rest if
    /// any. The biggest type is at the bottom.
    pub fn nodes_by_instance_type(&self, top: usize) -> Stack {
        let mut ranked: Vec<(&str, f64)> = self.node_hours_by_type().into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let kept: Vec<&str> = if ranked.len() > top {
            ranked[..top].iter().map(|r| r.0).collect()
        } else {
            ranked.iter().map(|r| r.0).collect()
        };
        let mut labels: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        if ranked.len() > kept.len() {
            labels.push(OTHER.to_string());
        }
        let group = |node: &NodeClaimRow| {
            kept.iter()
                .position(|k| *k == node.instance_type)
                .unwrap_or(kept.len())
        };
        self.stack(labels, group)
    }

    /// Nodes at each sample stacked by capacity type: `on-demand` first,
    /// then `spot`, then any other type by name; only types that occur.
    pub fn nodes_by_capacity_type(&self) -> Stack {
        let mut labels: Vec<String> = Vec::new();
        for known in ["on-demand", "spot"] {
            if self.nodes.iter().any(|n| n.capacity_type == known) {
                labels.push(known.to_string());
            }
        }
        let others: std::collections::BTreeSet<&str> = self
            .nodes
            .iter()
            .map(|n| n.capacity_type.as_str())
            .filter(|c| *c != "on-demand" && *c != "spot")
            .collect();
        labels.extend(others.into_iter().map(str::to_string));
        let order = labels.clone();
        self.stack(labels, move |node: &NodeClaimRow| {
            order
                .iter()
                .position(|l| *l == node.capacity_type)
                .unwrap_or(0)
        })
    }

    /// Counts the running nodes of each group at every sample: each node
    /// adds one from the first sample at or after its launch up to (not
    /// including) the first at or after its deletion, since a sample counts
    /// every event up to and including its instant.
    fn stack(&self, labels: Vec<String>, group: impl Fn(&NodeClaimRow) -> usize) -> Stack {
        let samples = self.samples.len();
        let first_at_or_after =
            |time_ms: u64| self.samples.partition_point(|s| s.time_ms < time_ms);
        let mut steps = vec![vec![0i64; samples + 1]; labels.len()];
        for node in &self.nodes {
            let Some(row) = steps.get_mut(group(node)) else {
                continue;
            };
            let start = first_at_or_after(node.launched_at_ms);
            let end = node.deleted_at_ms.map_or(samples, first_at_or_after);
            if start < end {
                row[start] += 1;
                row[end] -= 1;
            }
        }
        let counts = steps
            .into_iter()
            .map(|row| {
                let mut running = 0i64;
                row[..samples]
                    .iter()
                    .map(|step| {
                        running += step;
                        u32::try_from(running).unwrap_or(0)
                    })
                    .collect()
            })
            .collect();
        Stack { labels, counts }
    }

    /// Cumulative cost ($) against time (hours), exact at every point: each
    /// node's `cost_usd` spread evenly over its life (a node without one
    /// costs its amount at launch). Points are the start, every launch and
    /// deletion, and the end; the curve is straight between them.
    pub fn cumulative_cost(&self) -> Vec<(f64, f64)> {
        // Per instant: the change of the spending rate ($/ms) and one-off
        // amounts.
        let mut changes: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        changes.insert(0, (0.0, 0.0));
        changes.insert(self.duration_ms, (0.0, 0.0));
        for node in &self.nodes {
            let end = node.deleted_at_ms.unwrap_or(self.duration_ms);
            let start = node.launched_at_ms.min(self.duration_ms);
            let cost_usd = node.cost_usd.dollars();
            if end > node.launched_at_ms {
                let rate = cost_usd / (end - node.launched_at_ms) as f64;
                changes.entry(start).or_default().0 += rate;
                changes.entry(end.min(self.duration_ms)).or_default().0 -= rate;
            } else {
                changes.entry(start).or_default().1 += cost_usd;
            }
        }
        let mut points = Vec::with_capacity(changes.len());
        let (mut total, mut rate, mut previous) = (0.0, 0.0, 0u64);
        for (time_ms, (rate_change, one_off)) in changes {
            total += rate * (time_ms - previous) as f64 + one_off;
            rate += rate_change;
            previous = time_ms;
            points.push((time_ms as f64 / HOUR_MS, total));
        }
        points
    }

    /// $/h at each sample, against hours.
    pub fn cost_rate(&self) -> Vec<(f64, f64)> {
        self.samples
            .iter()
            .map(|s| (s.time_ms as f64 / HOUR_MS, s.cost_usd_per_hour.dollars()))
            .collect()
    }

    /// The lower bound $/h at each sample (`None` where the row has none),
    /// or `None` when the file has no such column.
    pub fn lower_bound_rate(&self) -> Option<Gappy> {
        self.has_lower_bound.then(|| {
            self.samples
                .iter()
                .map(|s| {
                    (
                        s.time_ms as f64 / HOUR_MS,
                        s.lower_bound_usd_per_hour.map(Usd::dollars),
                    )
                })
                .collect()
        })
    }

    /// The running integral ($) of the lower bound, each sample's rate held
    /// until the next sample (rows without a value add nothing), or `None`
    /// when the file has no such column.
    pub fn cumulative_lower_bound(&self) -> Option<Vec<(f64, f64)>> {
        if !self.has_lower_bound {
            return None;
        }
        let mut total = 0.0;
        let mut points = Vec::with_capacity(self.samples.len());
        for (index, sample) in self.samples.iter().enumerate() {
            if index > 0 {
                let previous = &self.samples[index - 1];
                let hours = (sample.time_ms - previous.time_ms) as f64 / HOUR_MS;
                total += previous.lower_bound_usd_per_hour.map_or(0.0, Usd::dollars) * hours;
            }
            points.push((sample.time_ms as f64 / HOUR_MS, total));
        }
        Some(points)
    }

    /// CPU and memory allocation (requested / allocatable, in %) at each
    /// sample; `None` where nothing is allocatable.
    pub fn allocation_percent(&self) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
        let ratio = |requested: f64, allocatable: f64| {
            (allocatable > 0.0).then(|| 100.0 * requested / allocatable)
        };
        self.samples
            .iter()
            .map(|s| {
                (
                    ratio(s.cpu_requested.value(), s.cpu_allocatable.value()),
                    ratio(
                        s.memory_requested_gib.value(),
                        s.memory_allocatable_gib.value(),
                    ),
                )
            })
            .unzip()
    }

    /// CPU and memory allocation (%) over the whole run: everything
    /// requested over everything allocatable, summed over the samples;
    /// `None` when nothing was ever allocatable.
    pub fn overall_allocation_percent(&self) -> (Option<f64>, Option<f64>) {
        let sum = |f: fn(&TimeseriesRow) -> f64| self.samples.iter().map(f).sum::<f64>();
        let ratio = |requested: f64, allocatable: f64| {
            (allocatable > 0.0).then(|| 100.0 * requested / allocatable)
        };
        (
            ratio(
                sum(|s| s.cpu_requested.value()),
                sum(|s| s.cpu_allocatable.value()),
            ),
            ratio(
                sum(|s| s.memory_requested_gib.value()),
                sum(|s| s.memory_allocatable_gib.value()),
            ),
        )
    }

    /// Evictions per reason per bucket; the bucket width follows the
    /// duration (see [`bucket_width_ms`]).
    pub fn evictions_by_bucket(&self) -> EvictionBuckets {
        let bucket_ms = bucket_width_ms(self.duration_ms);
        let buckets = usize::try_from(self.duration_ms.div_ceil(bucket_ms))
            .unwrap_or(1)
            .max(1);
        let mut by_reason: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for eviction in &self.evictions {
            let index = usize::try_from(eviction.time_ms / bucket_ms)
                .unwrap_or(usize::MAX)
                .min(buckets - 1);
            by_reason
                .entry(eviction.reason.as_str())
                .or_insert_with(|| vec![0; buckets])[index] += 1;
        }
        let mut rows: Vec<(&str, Vec<u32>)> = by_reason.into_iter().collect();
        rows.sort_by_key(|(reason, counts)| {
            (std::cmp::Reverse(counts.iter().sum::<u32>()), *reason)
        });
        EvictionBuckets {
            bucket_ms,
            reasons: rows.iter().map(|r| r.0.to_string()).collect(),
            counts: rows.into_iter().map(|r| r.1).collect(),
        }
    }
}

/// The eviction bucket width for a run of `duration_ms`: the shortest of
/// 5, 10, 15 or 30 minutes, 1, 2, 3, 6 or 12 hours, or a day, that keeps the
/// timeline to at most 96 bars.
pub fn bucket_width_ms(duration_ms: u64) -> u64 {
    const MINUTE: u64 = 60_000;
    const WIDTHS: [u64; 10] = [5, 10, 15, 30, 60, 120, 180, 360, 720, 1440];
    WIDTHS
        .iter()
        .map(|m| m * MINUTE)
        .find(|w| duration_ms.div_ceil(*w) <= 96)
        .unwrap_or_else(|| duration_ms.div_ceil(96).max(MINUTE))
}

fn read_timeseries(path: &Path) -> Result<(Vec<TimeseriesRow>, bool), ChartError> {
    let mut reader = RowReader::open::<TimeseriesRow>(path)?;
    let has_lower_bound = reader.has_column(LOWER_BOUND_COLUMN);
    let mut samples: Vec<TimeseriesRow> = Vec::new();
    while let Some((line, sample)) = reader.next::<TimeseriesRow>()? {
        if samples.last().is_some_and(|p| p.time_ms >= sample.time_ms) {
            return Err(reader
                .invalid(line, "time_s", "time does not increase")
                .into());
        }
        samples.push(sample);
    }
    Ok((samples, has_lower_bound))
}

fn read_nodes(path: &Path) -> Result<Vec<NodeClaimRow>, ChartError> {
    let mut reader = RowReader::open::<NodeClaimRow>(path)?;
    let mut nodes = Vec::new();
    while let Some((line, node)) = reader.next::<NodeClaimRow>()? {
        if node.deleted_at_ms.is_some_and(|d| d < node.launched_at_ms) {
            return Err(reader
                .invalid(line, "deleted_at_s", "deleted before launched")
                .into());
        }
        nodes.push(node);
    }
    Ok(nodes)
}

/// The reason an `Evicted` event's message gives: the text after the node
/// name in `Evicted pod from node NODE: REASON`.
pub fn eviction_reason(message: &str) -> &str {
    message
        .strip_prefix("Evicted pod from node ")
        .and_then(|rest| rest.split_once(": "))
        .map(|(_, reason)| reason.trim())
        .filter(|reason| !reason.is_empty())
        .unwrap_or("unspecified")
}

/// The `Evicted` rows of `events.csv`, read row by row: the file can be
/// far too long to hold.
fn read_evictions(path: &Path) -> Result<Vec<Eviction>, ChartError> {
    let mut reader = RowReader::open::<EventRow>(path)?;
    let mut evictions = Vec::new();
    while let Some((_, event)) = reader.next::<EventRow<&str>>()? {
        evictions.extend(Eviction::of(&event));
    }
    Ok(evictions)
}
