//! Reads a report folder written by `karpsim run` back into typed rows:
//! the variants (sub-folders holding a `summary.json`), and each one's
//! `events.csv`, `nodeclaims.csv` / `nodes.csv` and `disruption.csv` /
//! `scaledown.csv`. Times are kept as exact milliseconds.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::compare::{CompareError, VariantSummary};

/// Why a report folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A CSV file is malformed.
    #[error("{path}: {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: csv::Error,
    },
    /// A time column is not seconds with up to three decimals.
    #[error("{path}: bad time {value:?}")]
    Time {
        /// The file.
        path: PathBuf,
        /// The text found.
        value: String,
    },
    /// A `summary.json` is unreadable.
    #[error(transparent)]
    Summary(#[from] CompareError),
    /// The folder holds no variant.
    #[error("{0}: no report here (no <variant>/summary.json)")]
    NoVariants(PathBuf),
}

/// Which autoscaler a variant ran, told by the files it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autoscaler {
    /// Karpenter: `nodeclaims.csv` and `disruption.csv`.
    Karpenter,
    /// Cluster Autoscaler: `nodes.csv` and `scaledown.csv`.
    ClusterAutoscaler,
}

impl Autoscaler {
    /// The component name events of this autoscaler come from.
    pub fn component(self) -> &'static str {
        match self {
            Autoscaler::Karpenter => "karpenter",
            Autoscaler::ClusterAutoscaler => "cluster-autoscaler",
        }
    }
}

/// One row of `events.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// Simulated time, milliseconds from the start.
    pub time_ms: u64,
    /// `Normal` or `Warning`.
    pub kind: String,
    /// The event reason (`Launched`, `Scheduled`, ...).
    pub reason: String,
    /// `pod/ns/name`, `nodeclaim/name`, `node/name`, `deployment/ns/name`...
    pub object: String,
    /// The event message.
    pub message: String,
}

/// One row of `nodeclaims.csv` (or `nodes.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeClaimRow {
    /// NodeClaim (or node) name.
    pub name: String,
    /// NodePool (or node group).
    pub nodepool: String,
    /// Instance type.
    pub instance_type: String,
    /// `on-demand`, `spot`, ...
    pub capacity_type: String,
    /// Zone.
    pub zone: String,
    /// Price, USD per hour.
    pub price_usd_per_hour: f64,
    /// Launch time, ms.
    pub launched_at_ms: u64,
    /// Ready time, ms.
    pub ready_at_ms: Option<u64>,
    /// Deletion time, ms.
    pub deleted_at_ms: Option<u64>,
    /// Why it was deleted (empty when it ran to the end).
    pub reason_deleted: String,
    /// What it cost, USD.
    pub cost_usd: f64,
    /// Why it was launched.
    pub reason_launched: String,
}

/// One row of `disruption.csv` or `scaledown.csv`: a reason a node was
/// kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptNodeRow {
    /// The node.
    pub node: String,
    /// When the reason was given, ms.
    pub time_ms: u64,
    /// The reason.
    pub reason: String,
}

/// Everything one variant folder holds.
#[derive(Debug, Clone)]
pub struct VariantReport {
    /// The folder name (the variant name).
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// Which autoscaler ran.
    pub autoscaler: Autoscaler,
    /// `summary.json`.
    pub summary: VariantSummary,
    /// `events.csv`, in file (time) order.
    pub events: Vec<EventRow>,
    /// `nodeclaims.csv` or `nodes.csv`.
    pub nodeclaims: Vec<NodeClaimRow>,
    /// `disruption.csv` or `scaledown.csv`.
    pub kept_nodes: Vec<KeptNodeRow>,
}

/// The variant folders of a report, by name.
pub fn variant_dirs(report_dir: &Path) -> Result<Vec<(String, PathBuf)>, ReadError> {
    let io_error = |source| ReadError::Io {
        path: report_dir.to_path_buf(),
        source,
    };
    let mut variants = Vec::new();
    for entry in fs::read_dir(report_dir).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Hidden folders are the atomic writer's temporaries.
        if name.starts_with('.') || !entry.path().join("summary.json").is_file() {
            continue;
        }
        variants.push((name, entry.path()));
    }
    if variants.is_empty() {
        return Err(ReadError::NoVariants(report_dir.to_path_buf()));
    }
    variants.sort();
    Ok(variants)
}

/// Reads every variant of a report, by name.
pub fn read_report(report_dir: &Path) -> Result<Vec<VariantReport>, ReadError> {
    variant_dirs(report_dir)?
        .into_iter()
        .map(|(name, dir)| read_variant(&name, &dir))
        .collect()
}

/// Reads one variant folder. The CSV files are optional (a missing file
/// reads as no rows); `summary.json` is not.
pub fn read_variant(name: &str, dir: &Path) -> Result<VariantReport, ReadError> {
    read_variant_filtered(name, dir, Some)
}

/// Reads one variant folder like [`read_variant`], but passes every
/// `events.csv` row to `keep` as it is read and holds only the rows it
/// returns: a long run's event log need not fit in memory.
pub fn read_variant_filtered(
    name: &str,
    dir: &Path,
    keep: impl FnMut(EventRow) -> Option<EventRow>,
) -> Result<VariantReport, ReadError> {
    let summary = VariantSummary::read(&dir.join("summary.json"))?;
    let autoscaler = if dir.join("nodes.csv").is_file() || dir.join("scaledown.csv").is_file() {
        Autoscaler::ClusterAutoscaler
    } else {
        Autoscaler::Karpenter
    };
    let (claims_file, kept_file) = match autoscaler {
        Autoscaler::Karpenter => ("nodeclaims.csv", "disruption.csv"),
        Autoscaler::ClusterAutoscaler => ("nodes.csv", "scaledown.csv"),
    };
    Ok(VariantReport {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        autoscaler,
        summary,
        events: read_events_filtered(&dir.join("events.csv"), keep)?,
        nodeclaims: read_nodeclaims(&dir.join(claims_file))?,
        kept_nodes: read_kept_nodes(&dir.join(kept_file))?,
    })
}

/// `"90.500"` as 90 500 ms; `None` for anything else.
pub fn parse_time_ms(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || fraction.len() > 3
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let millis = format!("{fraction:0<3}").parse::<u64>().ok()?;
    whole
        .parse::<u64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(millis)
}

fn csv_error(path: &Path, source: csv::Error) -> ReadError {
    ReadError::Csv {
        path: path.to_path_buf(),
        source,
    }
}

/// A reader of `path`, `None` when the file is missing (no rows).
fn open_csv(path: &Path) -> Result<Option<csv::Reader<std::fs::File>>, ReadError> {
    if !path.is_file() {
        return Ok(None);
    }
    csv::Reader::from_path(path)
        .map(Some)
        .map_err(|source| csv_error(path, source))
}

fn rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, ReadError> {
    let Some(mut reader) = open_csv(path)? else {
        return Ok(Vec::new());
    };
    reader
        .deserialize()
        .collect::<Result<Vec<T>, _>>()
        .map_err(|source| csv_error(path, source))
}

fn time(path: &Path, value: &str) -> Result<u64, ReadError> {
    parse_time_ms(value).ok_or_else(|| ReadError::Time {
        path: path.to_path_buf(),
        value: value.to_string(),
    })
}

fn optional_time(path: &Path, value: &str) -> Result<Option<u64>, ReadError> {
    if value.is_empty() {
        Ok(None)
    } else {
        time(path, value).map(Some)
    }
}

#[derive(Deserialize)]
struct RawEvent {
    time_s: String,
    #[serde(rename = "type")]
    kind: String,
    reason: String,
    object: String,
    message: String,
}

/// Reads `events.csv`.
pub fn read_events(path: &Path) -> Result<Vec<EventRow>, ReadError> {
    read_events_filtered(path, Some)
}

/// Reads `events.csv` row by row, keeping the rows `keep` returns (a
/// missing file reads as no rows).
pub fn read_events_filtered(
    path: &Path,
    mut keep: impl FnMut(EventRow) -> Option<EventRow>,
) -> Result<Vec<EventRow>, ReadError> {
    let Some(mut reader) = open_csv(path)? else {
        return Ok(Vec::new());
    };
    let mut kept = Vec::new();
    for raw in reader.deserialize::<RawEvent>() {
        let raw = raw.map_err(|source| csv_error(path, source))?;
        let row = EventRow {
            time_ms: time(path, &raw.time_s)?,
            kind: raw.kind,
            reason: raw.reason,
            object: raw.object,
            message: raw.message,
        };
        kept.extend(keep(row));
    }
    Ok(kept)
}

#[derive(Deserialize)]
struct RawNodeClaim {
    name: String,
    nodepool: String,
    instance_type: String,
    capacity_type: String,
    zone: String,
    price_usd_per_hour: f64,
    launched_at_s: String,
    ready_at_s: String,
    deleted_at_s: String,
    reason_deleted: String,
    cost_usd: f64,
    #[serde(default)]
    reason_launched: String,
}

/// Reads `nodeclaims.csv` or `nodes.csv`.
pub fn read_nodeclaims(path: &Path) -> Result<Vec<NodeClaimRow>, ReadError> {
    rows::<RawNodeClaim>(path)?
        .into_iter()
        .map(|raw| {
            Ok(NodeClaimRow {
                launched_at_ms: time(path, &raw.launched_at_s)?,
                ready_at_ms: optional_time(path, &raw.ready_at_s)?,
                deleted_at_ms: optional_time(path, &raw.deleted_at_s)?,
                name: raw.name,
                nodepool: raw.nodepool,
                instance_type: raw.instance_type,
                capacity_type: raw.capacity_type,
                zone: raw.zone,
                price_usd_per_hour: raw.price_usd_per_hour,
                reason_deleted: raw.reason_deleted,
                cost_usd: raw.cost_usd,
                reason_launched: raw.reason_launched,
            })
        })
        .collect()
}

#[derive(Deserialize)]
struct RawKeptNode {
    node: String,
    time_s: String,
    reason: String,
}

/// Reads `disruption.csv` or `scaledown.csv` (same columns, any order).
pub fn read_kept_nodes(path: &Path) -> Result<Vec<KeptNodeRow>, ReadError> {
    rows::<RawKeptNode>(path)?
        .into_iter()
        .map(|raw| {
            Ok(KeptNodeRow {
                time_ms: time(path, &raw.time_s)?,
                node: raw.node,
                reason: raw.reason,
            })
        })
        .collect()
}

/// `1h02m03s`, `2m05s`, `30.240s`: simulated time the way `kubectl` writes
/// ages, with milliseconds only when there are some.
pub fn sim_time(ms: u64) -> String {
    let (hours, minutes) = (ms / 3_600_000, ms / 60_000 % 60);
    let whole = ms / 1000 % 60;
    let millis = match ms % 1000 {
        0 => String::new(),
        millis => format!(".{millis:03}"),
    };
    if hours > 0 {
        format!("{hours}h{minutes:02}m{whole:02}{millis}s")
    } else if minutes > 0 {
        format!("{minutes}m{whole:02}{millis}s")
    } else {
        format!("{whole}{millis}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times_exactly() {
        assert_eq!(parse_time_ms("90.500"), Some(90_500));
        assert_eq!(parse_time_ms("3"), Some(3000));
        assert_eq!(parse_time_ms("0.05"), Some(50));
        assert_eq!(parse_time_ms("-1.000"), None);
        assert_eq!(parse_time_ms("1.2345"), None);
        assert_eq!(parse_time_ms(""), None);
    }

    #[test]
    fn formats_sim_time_like_kubectl_ages() {
        assert_eq!(sim_time(3_723_000), "1h02m03s");
        assert_eq!(sim_time(125_000), "2m05s");
        assert_eq!(sim_time(30_240), "30.240s");
        assert_eq!(sim_time(3_605_500), "1h00m05.500s");
        assert_eq!(sim_time(0), "0s");
    }

    #[test]
    fn reads_a_variant_folder() {
        let dir = tempfile::tempdir().unwrap();
        let v = dir.path().join("ca");
        fs::create_dir(&v).unwrap();
        fs::write(
            v.join("summary.json"),
            r#"{"scenario":"s","variant":"ca","duration_s":1.0,"total_cost_usd":1.0,
            "node_hours":1.0,"peak_nodes":1,"nodeclaims_launched":1,
            "cpu_allocation":0.5,"memory_allocation":0.5}"#,
        )
        .unwrap();
        fs::write(
            v.join("nodes.csv"),
            "name,nodepool,instance_type,capacity_type,zone,price_usd_per_hour,launched_at_s,ready_at_s,deleted_at_s,reason_deleted,cost_usd,reason_launched\n\
             g-1,g,m5.large,spot,z,0.050000,10.000,40.000,,,0.100000,scale-up\n",
        )
        .unwrap();
        fs::write(
            v.join("scaledown.csv"),
            "time_s,node,reason\n40.000,g-1,NotUnderutilized\n",
        )
        .unwrap();
        fs::write(
            v.join("events.csv"),
            "time_s,type,reason,object,message\n1.500,Normal,Launched,node/g-1,\"a, b\"\n",
        )
        .unwrap();
        fs::create_dir(dir.path().join(".ca.tmp-1")).unwrap();
        let report = read_report(dir.path()).unwrap();
        assert_eq!(report.len(), 1);
        let ca = &report[0];
        assert_eq!(ca.autoscaler, Autoscaler::ClusterAutoscaler);
        assert_eq!(ca.nodeclaims[0].ready_at_ms, Some(40_000));
        assert_eq!(ca.nodeclaims[0].deleted_at_ms, None);
        assert_eq!(ca.kept_nodes[0].node, "g-1");
        assert_eq!(ca.events[0].time_ms, 1500);
        assert_eq!(ca.events[0].message, "a, b");
    }

    #[test]
    fn a_folder_without_variants_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_report(dir.path()),
            Err(ReadError::NoVariants(_))
        ));
    }
}
