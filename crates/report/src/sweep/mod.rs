//! Sweep outputs: `runs.csv` and `sweep.json` (see
//! [`crate::schema::sweep`]), built from the runs' rows in run order and
//! the sweep's description ([`SweepMeta`]); the charts
//! ([`crate::chart::sweep`]) and `report.html` ([`crate::html::sweep`]);
//! and the merge of shard folders into the folder the unsharded sweep
//! writes. Everything a sweep folder shows is computed from its rows, so
//! shards merged give the same bytes as one unsharded run.

pub mod stats;

use std::io;
use std::path::{Path, PathBuf};

use crate::chart::ChartError;
use crate::html::HtmlError;
use crate::schema::sweep::{
    ConfigurationEntry, FailedRunEntry, MetricStatistics, RUNS_FILE, SWEEP_FILE, SettingEntry,
    ShardEntry, Statistics, StatisticsMethod, SweepDocument, SweepFileError, SweepRunRow,
};
use crate::schema::{CsvError, read_rows, write_rows};

/// The files a sweep folder holds beside `runs/` (what a report folder
/// being replaced may contain).
pub const SWEEP_ENTRIES: [&str; 16] = [
    RUNS_FILE,
    SWEEP_FILE,
    crate::html::REPORT_HTML,
    crate::schema::sweep::RUNS_DIR,
    "cost-vs-churn.svg",
    "cost-vs-churn.png",
    "box-cost.svg",
    "box-cost.png",
    "box-evictions.svg",
    "box-evictions.png",
    "box-pending-p95.svg",
    "box-pending-p95.png",
    "box-node-hours.svg",
    "box-node-hours.png",
    "box-cost-efficiency.svg",
    "box-cost-efficiency.png",
];

/// The metrics a configuration is summarized by, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Total cost.
    Cost,
    /// Voluntary evictions.
    Evictions,
    /// 95th percentile pending time.
    PendingP95,
    /// Node-hours.
    NodeHours,
    /// Lower bound over actual cost.
    CostEfficiency,
}

impl Metric {
    /// Every metric, in display order.
    pub const ALL: [Metric; 5] = [
        Metric::Cost,
        Metric::Evictions,
        Metric::PendingP95,
        Metric::NodeHours,
        Metric::CostEfficiency,
    ];

    /// Its key in `sweep.json`.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Cost => "cost_usd",
            Metric::Evictions => "evictions",
            Metric::PendingP95 => "pending_p95_s",
            Metric::NodeHours => "node_hours",
            Metric::CostEfficiency => "cost_efficiency",
        }
    }

    /// What it is, for titles and headers.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Cost => "cost (USD)",
            Metric::Evictions => "evictions",
            Metric::PendingP95 => "pending p95 (s)",
            Metric::NodeHours => "node-hours",
            Metric::CostEfficiency => "cost efficiency",
        }
    }

    /// The stem of its box-plot chart.
    pub fn chart_name(self) -> &'static str {
        match self {
            Metric::Cost => "box-cost",
            Metric::Evictions => "box-evictions",
            Metric::PendingP95 => "box-pending-p95",
            Metric::NodeHours => "box-node-hours",
            Metric::CostEfficiency => "box-cost-efficiency",
        }
    }

    /// The run's value (none for a failed run, or a run without one).
    pub fn value(self, row: &SweepRunRow) -> Option<f64> {
        match self {
            Metric::Cost => row.total_cost_usd.map(|d| d.0),
            Metric::Evictions => row.evictions.map(|n| n as f64),
            Metric::PendingP95 => row.pending_seconds_p95.map(|d| d.0),
            Metric::NodeHours => row.node_hours.map(|d| d.0),
            Metric::CostEfficiency => row.cost_efficiency.map(|d| d.0),
        }
    }

    /// Its statistics in a configuration's entry.
    pub fn of(self, metrics: &MetricStatistics) -> Option<&Statistics> {
        match self {
            Metric::Cost => metrics.cost_usd.as_ref(),
            Metric::Evictions => metrics.evictions.as_ref(),
            Metric::PendingP95 => metrics.pending_p95_s.as_ref(),
            Metric::NodeHours => metrics.node_hours.as_ref(),
            Metric::CostEfficiency => metrics.cost_efficiency.as_ref(),
        }
    }
}

/// One configuration as the sweep describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigurationMeta {
    /// `c03`.
    pub id: String,
    /// The base configuration's name.
    pub base: String,
    /// The base's NodePool file as written in the sweep file.
    pub node_pools: Option<String>,
    /// The `vary` settings, in order.
    pub settings: Vec<SettingEntry>,
    /// The base and the settings on one line.
    pub label: String,
}

/// What `sweep.json` says about the sweep itself (everything but the
/// statistics): the same in every shard.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepMeta {
    /// The sweep's name.
    pub sweep: String,
    /// The scenario's name.
    pub scenario: String,
    /// Simulated time of each run, seconds.
    pub duration_s: f64,
    /// The pricing snapshot, as `summary.json` names it.
    pub pricing: Option<serde_json::Value>,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// The `vary` fields, in order.
    pub vary: Vec<String>,
    /// Runs of the whole sweep.
    pub runs_total: u64,
    /// The configurations, in enumeration order.
    pub configurations: Vec<ConfigurationMeta>,
}

/// The definitions written into every `sweep.json`.
fn method() -> StatisticsMethod {
    StatisticsMethod {
        sd: "sample standard deviation (n - 1)".to_string(),
        ci95: "mean ± t(0.975, n - 1) × sd / √n (Student's t interval of the mean)".to_string(),
        quartiles: "linear interpolation between order statistics at (n - 1) × p (type 7)"
            .to_string(),
    }
}

impl SweepMeta {
    /// The sweep as one `sweep.json` describes it.
    pub fn of_document(document: &SweepDocument) -> SweepMeta {
        SweepMeta {
            sweep: document.sweep.clone(),
            scenario: document.scenario.clone(),
            duration_s: document.duration_s,
            pricing: document.pricing.clone(),
            seeds: document.seeds.clone(),
            vary: document.vary.clone(),
            runs_total: document.runs_total,
            configurations: document
                .configurations
                .iter()
                .map(|c| ConfigurationMeta {
                    id: c.id.clone(),
                    base: c.base.clone(),
                    node_pools: c.node_pools.clone(),
                    settings: c.settings.clone(),
                    label: c.label.clone(),
                })
                .collect(),
        }
    }

    /// `sweep.json` for `rows` (in run order): per configuration, its runs'
    /// statistics and whether it is on the Pareto frontier.
    pub fn document(&self, shard: Option<ShardEntry>, rows: &[SweepRunRow]) -> SweepDocument {
        let mut configurations: Vec<ConfigurationEntry> = self
            .configurations
            .iter()
            .map(|c| {
                let mine: Vec<&SweepRunRow> =
                    rows.iter().filter(|r| r.configuration == c.id).collect();
                let of = |metric: Metric| {
                    let values: Vec<f64> = mine.iter().filter_map(|r| metric.value(r)).collect();
                    stats::statistics(&values)
                };
                ConfigurationEntry {
                    id: c.id.clone(),
                    base: c.base.clone(),
                    node_pools: c.node_pools.clone(),
                    settings: c.settings.clone(),
                    label: c.label.clone(),
                    runs: mine.iter().filter(|r| r.is_ok()).count() as u64,
                    failed: mine.iter().filter(|r| !r.is_ok()).count() as u64,
                    pareto: false,
                    metrics: MetricStatistics {
                        cost_usd: of(Metric::Cost),
                        evictions: of(Metric::Evictions),
                        pending_p95_s: of(Metric::PendingP95),
                        node_hours: of(Metric::NodeHours),
                        cost_efficiency: of(Metric::CostEfficiency),
                    },
                }
            })
            .collect();
        let frontier = pareto_frontier(&configurations);
        for (configuration, on) in configurations.iter_mut().zip(frontier) {
            configuration.pareto = on;
        }
        let failed_runs: Vec<FailedRunEntry> = rows
            .iter()
            .filter(|r| !r.is_ok())
            .map(|r| FailedRunEntry {
                id: r.id.clone(),
                error: r.error.clone(),
            })
            .collect();
        SweepDocument {
            sweep: self.sweep.clone(),
            scenario: self.scenario.clone(),
            duration_s: self.duration_s,
            pricing: self.pricing.clone(),
            seeds: self.seeds.clone(),
            vary: self.vary.clone(),
            runs_total: self.runs_total,
            shard,
            runs: rows.len() as u64,
            runs_failed: failed_runs.len() as u64,
            statistics: method(),
            configurations,
            failed_runs,
        }
    }
}

/// The mean cost and mean evictions of a configuration, when it has both.
pub fn cost_and_churn(configuration: &ConfigurationEntry) -> Option<(f64, f64)> {
    let cost = configuration.metrics.cost_usd.as_ref()?;
    let evictions = configuration.metrics.evictions.as_ref()?;
    Some((cost.mean, evictions.mean))
}

/// Per configuration, whether no other has a mean cost and mean evictions
/// both lower or equal, one of them lower (both to be minimized).
pub fn pareto_frontier(configurations: &[ConfigurationEntry]) -> Vec<bool> {
    let points: Vec<Option<(f64, f64)>> = configurations.iter().map(cost_and_churn).collect();
    points
        .iter()
        .map(|point| {
            let Some((cost, churn)) = point else {
                return false;
            };
            !points.iter().flatten().any(|(other_cost, other_churn)| {
                other_cost <= cost
                    && other_churn <= churn
                    && (other_cost < cost || other_churn < churn)
            })
        })
        .collect()
}

/// Why a sweep folder could not be written, read or merged.
#[derive(Debug, thiserror::Error)]
pub enum SweepOutputError {
    /// A file could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// `runs.csv` could not be read.
    #[error(transparent)]
    Csv(#[from] CsvError),
    /// `sweep.json` could not be read.
    #[error(transparent)]
    Document(#[from] SweepFileError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// The page could not be written.
    #[error(transparent)]
    Html(#[from] HtmlError),
    /// The shard folders do not make one sweep.
    #[error("{0}")]
    Merge(String),
}

/// Writes a sweep's files into `dir` (which must exist): `runs.csv`,
/// `sweep.json`, the charts and `report.html`, from `rows` in run order.
/// `kept_reports` lists the run ids whose report folders are in
/// `dir/runs/` (linked from the page). Returns the document written.
pub fn write_sweep_files(
    dir: &Path,
    meta: &SweepMeta,
    shard: Option<ShardEntry>,
    rows: &[SweepRunRow],
    kept_reports: &[String],
) -> Result<SweepDocument, SweepOutputError> {
    let document = meta.document(shard, rows);
    let io_at = |path: PathBuf| move |source| SweepOutputError::Io { path, source };
    let path = dir.join(RUNS_FILE);
    let file = std::fs::File::create(&path).map_err(io_at(path.clone()))?;
    write_rows(io::BufWriter::new(file), rows.iter().cloned()).map_err(io_at(path))?;
    let path = dir.join(SWEEP_FILE);
    std::fs::write(&path, document.to_text()).map_err(io_at(path))?;
    let charts = crate::chart::sweep::write_sweep_charts(&document, dir)?;
    crate::html::sweep::write_sweep_html(dir, &document, &charts, kept_reports)?;
    Ok(document)
}

/// A shard folder read back: its `sweep.json` and `runs.csv`.
#[derive(Debug, Clone)]
pub struct ShardFolder {
    /// The folder.
    pub dir: PathBuf,
    /// Its `sweep.json`.
    pub document: SweepDocument,
    /// Its `runs.csv`, in file order.
    pub rows: Vec<SweepRunRow>,
}

impl ShardFolder {
    /// Reads `dir/sweep.json` and `dir/runs.csv`.
    pub fn read(dir: &Path) -> Result<ShardFolder, SweepOutputError> {
        let document = SweepDocument::read(&dir.join(SWEEP_FILE))?;
        let rows = read_rows::<SweepRunRow>(&dir.join(RUNS_FILE))?;
        Ok(ShardFolder {
            dir: dir.to_path_buf(),
            document,
            rows,
        })
    }
}

/// Puts shard folders together: checks that they are every shard of one
/// sweep, once each, and that together they hold each run once, and
/// returns the sweep and its rows in run order.
pub fn merge(shards: &[ShardFolder]) -> Result<(SweepMeta, Vec<SweepRunRow>), SweepOutputError> {
    let fail = |text: String| Err(SweepOutputError::Merge(text));
    let Some(first) = shards.first() else {
        return fail("no shard folders to merge".to_string());
    };
    let meta = SweepMeta::of_document(&first.document);
    let mut seen_shards: Vec<Option<&Path>> = Vec::new();
    for shard in shards {
        let shown = shard.dir.display();
        let Some(entry) = shard.document.shard else {
            return fail(format!(
                "{shown}: not a shard (its sweep.json has no shard; it is a whole sweep already)"
            ));
        };
        if SweepMeta::of_document(&shard.document) != meta {
            return fail(format!(
                "{shown}: a shard of another sweep than {} (its sweep, scenario, seeds, pricing or configurations differ)",
                first.dir.display()
            ));
        }
        let count = usize::try_from(entry.count).unwrap_or(usize::MAX);
        if seen_shards.is_empty() {
            seen_shards = vec![None; count];
        }
        if count != seen_shards.len() {
            return fail(format!(
                "{shown}: shard {}/{} of a sweep split {} ways in {}",
                entry.index,
                entry.count,
                seen_shards.len(),
                first.dir.display()
            ));
        }
        let index = usize::try_from(entry.index).unwrap_or(usize::MAX);
        match seen_shards.get(index) {
            Some(Some(other)) => {
                return fail(format!(
                    "{shown}: shard {}/{} is also in {}",
                    entry.index,
                    entry.count,
                    other.display()
                ));
            }
            Some(None) => seen_shards[index] = Some(&shard.dir),
            None => {
                return fail(format!(
                    "{shown}: shard index {} is not below its count {}",
                    entry.index, entry.count
                ));
            }
        }
    }
    let missing: Vec<String> = seen_shards
        .iter()
        .enumerate()
        .filter(|(_, dir)| dir.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return fail(format!(
            "shard(s) {} of {} missing: give every shard folder of the sweep",
            missing.join(", "),
            seen_shards.len()
        ));
    }
    let total = usize::try_from(meta.runs_total).unwrap_or(usize::MAX);
    let mut slots: Vec<Option<SweepRunRow>> = vec![None; total];
    for shard in shards {
        let entry = shard
            .document
            .shard
            .unwrap_or(ShardEntry { index: 0, count: 1 });
        for row in &shard.rows {
            let shown = shard.dir.display();
            let index = usize::try_from(row.run).unwrap_or(usize::MAX);
            if index >= total || row.run % entry.count != entry.index {
                return fail(format!(
                    "{shown}: runs.csv has run {} ({}), which shard {}/{} does not hold",
                    row.run, row.id, entry.index, entry.count
                ));
            }
            if slots[index].is_some() {
                return fail(format!(
                    "{shown}: run {} ({}) is listed twice",
                    row.run, row.id
                ));
            }
            slots[index] = Some(row.clone());
        }
    }
    let mut rows = Vec::with_capacity(total);
    for (index, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(row) => rows.push(row),
            None => {
                return fail(format!(
                    "run {index} is in no shard's runs.csv (was a shard cut short?)"
                ));
            }
        }
    }
    Ok((meta, rows))
}

/// The terminal table of a sweep: per configuration its runs, the means
/// with the half-width of their 95 % interval, and the Pareto mark.
pub fn write_sweep_table(document: &SweepDocument, out: &mut impl io::Write) -> io::Result<()> {
    use crate::table::{Align, write_table};
    let with_interval = |s: Option<&Statistics>, decimals: usize, unit: &str| match s {
        None => "-".to_string(),
        Some(s) => {
            let mut text = format!("{:.decimals$}{unit}", s.mean);
            if let (Some(low), Some(high)) = (s.ci95_low, s.ci95_high) {
                text.push_str(&format!(" ± {:.decimals$}", (high - low) / 2.0));
            }
            text
        }
    };
    let rows: Vec<Vec<String>> = document
        .configurations
        .iter()
        .map(|c| {
            let m = &c.metrics;
            vec![
                c.id.clone(),
                c.label.clone(),
                if c.failed > 0 {
                    format!("{} (+{} failed)", c.runs, c.failed)
                } else {
                    c.runs.to_string()
                },
                with_interval(m.cost_usd.as_ref(), 4, ""),
                with_interval(m.evictions.as_ref(), 1, ""),
                with_interval(m.pending_p95_s.as_ref(), 1, "s"),
                with_interval(m.node_hours.as_ref(), 2, ""),
                m.cost_efficiency
                    .as_ref()
                    .map_or("-".to_string(), |s| format!("{:.1}%", s.mean * 100.0)),
                if c.pareto { "*" } else { "" }.to_string(),
            ]
        })
        .collect();
    write_table(
        out,
        &[
            ("id", Align::Left),
            ("configuration", Align::Left),
            ("runs", Align::Right),
            ("cost $ (± 95%)", Align::Right),
            ("evictions", Align::Right),
            ("pending p95", Align::Right),
            ("node-hours", Align::Right),
            ("efficiency", Align::Right),
            ("pareto", Align::Left),
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests;
