//! What the charts show, read back from one variant's report folder
//! (`summary.json`, `timeseries.csv`, `nodeclaims.csv` or `nodes.csv`,
//! `events.csv`) and reduced to plain series: node counts stacked by
//! instance type or capacity type, cumulative cost, allocation ratios and
//! evictions per time bucket. Nothing here draws.
//!
//! Columns are found by their header name, so files with extra columns (such
//! as the optional `lower_bound_usd_per_hour`) still read.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::ChartError;

/// The column of `timeseries.csv` holding the cheapest possible $/h for the
/// requests of that minute; optional.
pub const LOWER_BOUND_COLUMN: &str = "lower_bound_usd_per_hour";

/// Milliseconds in an hour.
const HOUR_MS: f64 = 3_600_000.0;

/// One row of `timeseries.csv` (one simulated minute).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The instant, in milliseconds since the start.
    pub time_ms: u64,
    /// Nodes launched and not yet deleted.
    pub nodes: u32,
    /// Nodes registered.
    pub nodes_ready: u32,
    /// The fleet's price per hour.
    pub cost_usd_per_hour: f64,
    /// Requested CPU (cores).
    pub cpu_requested: f64,
    /// Allocatable CPU (cores).
    pub cpu_allocatable: f64,
    /// Requested memory (GiB).
    pub memory_requested_gib: f64,
    /// Allocatable memory (GiB).
    pub memory_allocatable_gib: f64,
    /// Pods waiting for a node.
    pub pending_pods: u32,
    /// The cheapest $/h covering the requests, when the file has that column
    /// and the row a value.
    pub lower_bound_usd_per_hour: Option<f64>,
}

/// One node's life, from `nodeclaims.csv` (or `nodes.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpan {
    /// The node (claim) name.
    pub name: String,
    /// Its instance type.
    pub instance_type: String,
    /// `spot` or `on-demand`.
    pub capacity_type: String,
    /// When it was launched (ms).
    pub launched_ms: u64,
    /// When it was deleted (ms), if it was.
    pub deleted_ms: Option<u64>,
    /// What it cost over the run.
    pub cost_usd: f64,
}

/// One pod eviction, from the `Evicted` rows of `events.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// When (ms).
    pub time_ms: u64,
    /// Why, as the simulator words it (`underutilized`, `interrupted`, ...).
    pub reason: String,
}

/// Everything the charts of one variant need.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantSeries {
    /// The variant's name (from `summary.json`, else the folder name).
    pub name: String,
    /// The scenario's name (from `summary.json`; empty when absent).
    pub scenario: String,
    /// The simulated duration (ms).
    pub duration_ms: u64,
    /// One sample per simulated minute, in time order.
    pub samples: Vec<Sample>,
    /// Whether `timeseries.csv` has the lower-bound column.
    pub has_lower_bound: bool,
    /// Every node launched, in file order.
    pub nodes: Vec<NodeSpan>,
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
    /// Reads one variant folder of a `karpsim run` report.
    pub fn read_dir(dir: &Path) -> Result<VariantSeries, ChartError> {
        let folder_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let summary = read_summary(&dir.join("summary.json"))?;
        let (samples, has_lower_bound) = read_timeseries(&dir.join("timeseries.csv"))?;
        let claims = dir.join("nodeclaims.csv");
        let nodes_file = if claims.exists() {
            claims
        } else {
            dir.join("nodes.csv")
        };
        if !nodes_file.exists() {
            return Err(ChartError::MissingNodes {
                dir: dir.to_path_buf(),
            });
        }
        let nodes = read_nodes(&nodes_file)?;
        let mut evictions = read_evictions(&dir.join("events.csv"))?;
        evictions.sort_by_key(|e| e.time_ms);
        let last_sample = samples.last().map_or(0, |s| s.time_ms);
        Ok(VariantSeries {
            name: summary.variant.unwrap_or(folder_name),
            scenario: summary.scenario.unwrap_or_default(),
            duration_ms: summary.duration_ms.unwrap_or(last_sample).max(last_sample),
            samples,
            has_lower_bound,
            nodes,
            evictions,
        })
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
            let end = node.deleted_ms.unwrap_or(self.duration_ms);
            let life = end.saturating_sub(node.launched_ms) as f64 / HOUR_MS;
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
        let group = |node: &NodeSpan| {
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
        self.stack(labels, move |node: &NodeSpan| {
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
    fn stack(&self, labels: Vec<String>, group: impl Fn(&NodeSpan) -> usize) -> Stack {
        let samples = self.samples.len();
        let first_at_or_after =
            |time_ms: u64| self.samples.partition_point(|s| s.time_ms < time_ms);
        let mut steps = vec![vec![0i64; samples + 1]; labels.len()];
        for node in &self.nodes {
            let Some(row) = steps.get_mut(group(node)) else {
                continue;
            };
            let start = first_at_or_after(node.launched_ms);
            let end = node.deleted_ms.map_or(samples, first_at_or_after);
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
            let end = node.deleted_ms.unwrap_or(self.duration_ms);
            let start = node.launched_ms.min(self.duration_ms);
            if end > node.launched_ms {
                let rate = node.cost_usd / (end - node.launched_ms) as f64;
                changes.entry(start).or_default().0 += rate;
                changes.entry(end.min(self.duration_ms)).or_default().0 -= rate;
            } else {
                changes.entry(start).or_default().1 += node.cost_usd;
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
            .map(|s| (s.time_ms as f64 / HOUR_MS, s.cost_usd_per_hour))
            .collect()
    }

    /// The lower bound $/h at each sample (`None` where the row has none),
    /// or `None` when the file has no such column.
    pub fn lower_bound_rate(&self) -> Option<Gappy> {
        self.has_lower_bound.then(|| {
            self.samples
                .iter()
                .map(|s| (s.time_ms as f64 / HOUR_MS, s.lower_bound_usd_per_hour))
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
                total += previous.lower_bound_usd_per_hour.unwrap_or(0.0) * hours;
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
                    ratio(s.cpu_requested, s.cpu_allocatable),
                    ratio(s.memory_requested_gib, s.memory_allocatable_gib),
                )
            })
            .unzip()
    }

    /// CPU and memory allocation (%) over the whole run: everything
    /// requested over everything allocatable, summed over the samples;
    /// `None` when nothing was ever allocatable.
    pub fn overall_allocation_percent(&self) -> (Option<f64>, Option<f64>) {
        let sum = |f: fn(&Sample) -> f64| self.samples.iter().map(f).sum::<f64>();
        let ratio = |requested: f64, allocatable: f64| {
            (allocatable > 0.0).then(|| 100.0 * requested / allocatable)
        };
        (
            ratio(sum(|s| s.cpu_requested), sum(|s| s.cpu_allocatable)),
            ratio(
                sum(|s| s.memory_requested_gib),
                sum(|s| s.memory_allocatable_gib),
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

/// The fields of `summary.json` the charts use.
struct Summary {
    variant: Option<String>,
    scenario: Option<String>,
    duration_ms: Option<u64>,
}

fn read_summary(path: &Path) -> Result<Summary, ChartError> {
    let text = fs::read_to_string(path).map_err(|source| ChartError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| ChartError::Summary {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let text_field = |key: &str| json.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let duration_ms = match json.get("duration_s") {
        None => None,
        Some(value) => {
            Some(
                value
                    .as_f64()
                    .and_then(seconds_to_ms)
                    .ok_or_else(|| ChartError::Summary {
                        path: path.to_path_buf(),
                        message: format!("duration_s: not a duration in seconds: {value}"),
                    })?,
            )
        }
    };
    Ok(Summary {
        variant: text_field("variant"),
        scenario: text_field("scenario"),
        duration_ms,
    })
}

/// Seconds (finite, not negative) as whole milliseconds.
fn seconds_to_ms(seconds: f64) -> Option<u64> {
    (0.0..1e15)
        .contains(&seconds)
        .then(|| (seconds * 1000.0).round() as u64)
}

/// A CSV file read whole, with its header.
type CsvReader = csv::Reader<std::io::BufReader<fs::File>>;

fn csv_error(path: &Path, e: &csv::Error) -> ChartError {
    ChartError::Csv {
        path: path.to_path_buf(),
        line: e.position().map_or(0, |p| p.line()),
        message: e.to_string(),
    }
}

struct CsvFile {
    path: PathBuf,
    headers: csv::StringRecord,
    /// Each data row with its line number.
    rows: Vec<(u64, csv::StringRecord)>,
}

impl CsvFile {
    fn read(path: &Path) -> Result<CsvFile, ChartError> {
        let (mut file, mut reader) = CsvFile::open(path)?;
        let mut rows = Vec::new();
        let mut record = csv::StringRecord::new();
        while let Some(line) = file.next_row(&mut reader, &mut record)? {
            rows.push((line, record.clone()));
        }
        file.rows = rows;
        Ok(file)
    }

    /// The file's header, with no rows: the rows are read one at a time
    /// from the returned reader with [`CsvFile::next_row`] (for files too
    /// long to hold).
    fn open(path: &Path) -> Result<(CsvFile, CsvReader), ChartError> {
        let file = fs::File::open(path).map_err(|source| ChartError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = csv::Reader::from_reader(std::io::BufReader::new(file));
        let headers = reader.headers().map_err(|e| csv_error(path, &e))?.clone();
        let file = CsvFile {
            path: path.to_path_buf(),
            headers,
            rows: Vec::new(),
        };
        Ok((file, reader))
    }

    /// Reads the next data row into `record`; its line number, or `None` at
    /// the end.
    fn next_row(
        &self,
        reader: &mut CsvReader,
        record: &mut csv::StringRecord,
    ) -> Result<Option<u64>, ChartError> {
        if reader
            .read_record(record)
            .map_err(|e| csv_error(&self.path, &e))?
        {
            Ok(Some(record.position().map_or(0, |p| p.line())))
        } else {
            Ok(None)
        }
    }

    /// The index of column `name`.
    fn column(&self, name: &str) -> Result<usize, ChartError> {
        self.optional_column(name)
            .ok_or_else(|| ChartError::MissingColumn {
                path: self.path.clone(),
                column: name.to_string(),
            })
    }

    fn optional_column(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name)
    }

    /// The error for a bad value at `line`, column `column`.
    fn bad(&self, line: u64, column: usize, message: String) -> ChartError {
        ChartError::Field {
            path: self.path.clone(),
            line,
            column: self.headers.get(column).unwrap_or_default().to_string(),
            message,
        }
    }

    fn text<'r>(
        &self,
        line: u64,
        row: &'r csv::StringRecord,
        column: usize,
    ) -> Result<&'r str, ChartError> {
        row.get(column)
            .ok_or_else(|| self.bad(line, column, "missing value".to_string()))
    }

    fn number(&self, line: u64, row: &csv::StringRecord, column: usize) -> Result<f64, ChartError> {
        let text = self.text(line, row, column)?;
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(line, column, format!("not a number: {text:?}")))
    }

    fn count(&self, line: u64, row: &csv::StringRecord, column: usize) -> Result<u32, ChartError> {
        let text = self.text(line, row, column)?;
        text.trim()
            .parse::<u32>()
            .map_err(|_| self.bad(line, column, format!("not a count: {text:?}")))
    }

    fn time_ms(
        &self,
        line: u64,
        row: &csv::StringRecord,
        column: usize,
    ) -> Result<u64, ChartError> {
        let text = self.text(line, row, column)?;
        text.trim()
            .parse::<f64>()
            .ok()
            .and_then(seconds_to_ms)
            .ok_or_else(|| self.bad(line, column, format!("not a time in seconds: {text:?}")))
    }

    fn optional_time_ms(
        &self,
        line: u64,
        row: &csv::StringRecord,
        column: usize,
    ) -> Result<Option<u64>, ChartError> {
        if self.text(line, row, column)?.trim().is_empty() {
            Ok(None)
        } else {
            self.time_ms(line, row, column).map(Some)
        }
    }
}

fn read_timeseries(path: &Path) -> Result<(Vec<Sample>, bool), ChartError> {
    let file = CsvFile::read(path)?;
    let time = file.column("time_s")?;
    let nodes = file.column("nodes")?;
    let nodes_ready = file.column("nodes_ready")?;
    let cost = file.column("cost_usd_per_hour")?;
    let cpu_requested = file.column("cpu_requested")?;
    let cpu_allocatable = file.column("cpu_allocatable")?;
    let memory_requested = file.column("memory_requested_gib")?;
    let memory_allocatable = file.column("memory_allocatable_gib")?;
    let pending = file.column("pending_pods")?;
    let lower_bound = file.optional_column(LOWER_BOUND_COLUMN);
    let mut samples: Vec<Sample> = Vec::with_capacity(file.rows.len());
    for (line, row) in &file.rows {
        let line = *line;
        let lower_bound_usd_per_hour = match lower_bound {
            Some(column) if !file.text(line, row, column)?.trim().is_empty() => {
                Some(file.number(line, row, column)?)
            }
            _ => None,
        };
        let sample = Sample {
            time_ms: file.time_ms(line, row, time)?,
            nodes: file.count(line, row, nodes)?,
            nodes_ready: file.count(line, row, nodes_ready)?,
            cost_usd_per_hour: file.number(line, row, cost)?,
            cpu_requested: file.number(line, row, cpu_requested)?,
            cpu_allocatable: file.number(line, row, cpu_allocatable)?,
            memory_requested_gib: file.number(line, row, memory_requested)?,
            memory_allocatable_gib: file.number(line, row, memory_allocatable)?,
            pending_pods: file.count(line, row, pending)?,
            lower_bound_usd_per_hour,
        };
        if samples.last().is_some_and(|p| p.time_ms >= sample.time_ms) {
            return Err(file.bad(line, time, "time does not increase".to_string()));
        }
        samples.push(sample);
    }
    Ok((samples, lower_bound.is_some()))
}

fn read_nodes(path: &Path) -> Result<Vec<NodeSpan>, ChartError> {
    let file = CsvFile::read(path)?;
    let name = file.column("name")?;
    let instance_type = file.column("instance_type")?;
    let capacity_type = file.column("capacity_type")?;
    let launched = file.column("launched_at_s")?;
    let deleted = file.column("deleted_at_s")?;
    let cost = file.column("cost_usd")?;
    let mut nodes = Vec::with_capacity(file.rows.len());
    for (line, row) in &file.rows {
        let line = *line;
        let launched_ms = file.time_ms(line, row, launched)?;
        let deleted_ms = file.optional_time_ms(line, row, deleted)?;
        if deleted_ms.is_some_and(|d| d < launched_ms) {
            return Err(file.bad(line, deleted, "deleted before launched".to_string()));
        }
        nodes.push(NodeSpan {
            name: file.text(line, row, name)?.to_string(),
            instance_type: file.text(line, row, instance_type)?.to_string(),
            capacity_type: file.text(line, row, capacity_type)?.to_string(),
            launched_ms,
            deleted_ms,
            cost_usd: file.number(line, row, cost)?,
        });
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
    let (file, mut reader) = CsvFile::open(path)?;
    let time = file.column("time_s")?;
    let reason = file.column("reason")?;
    let message = file.column("message")?;
    let mut evictions = Vec::new();
    let mut row = csv::StringRecord::new();
    while let Some(line) = file.next_row(&mut reader, &mut row)? {
        if file.text(line, &row, reason)? != "Evicted" {
            continue;
        }
        evictions.push(Eviction {
            time_ms: file.time_ms(line, &row, time)?,
            reason: eviction_reason(file.text(line, &row, message)?).to_string(),
        });
    }
    Ok(evictions)
}
