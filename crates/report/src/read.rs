//! Reads a report folder written by `karpsim run` back into typed rows
//! (see [`crate::schema`]): the variants (sub-folders holding a
//! `summary.json`), and each one's `events.csv`, `nodeclaims.csv` /
//! `nodes.csv` and `disruption.csv` / `scaledown.csv`. Times are kept as
//! exact milliseconds.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::schema::{
    CsvError, DISRUPTION_FILE, DisruptionRow, EVENTS_FILE, EventRow, NODECLAIMS_FILE, NODES_FILE,
    NodeClaimRow, Row, RowReader, SCALEDOWN_FILE, SUMMARY_FILE, ScaleDownRow, Summary,
    SummaryError, read_rows,
};

/// Why a report folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A CSV file is unreadable or malformed.
    #[error(transparent)]
    Csv(#[from] CsvError),
    /// A `summary.json` is unreadable.
    #[error(transparent)]
    Summary(#[from] SummaryError),
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
    pub summary: Summary,
    /// `events.csv`, in file (time) order.
    pub events: Vec<EventRow>,
    /// `nodeclaims.csv` or `nodes.csv`.
    pub nodeclaims: Vec<NodeClaimRow>,
    /// `disruption.csv`, or `scaledown.csv` read as disruption rows: the
    /// reasons nodes were kept.
    pub kept_nodes: Vec<DisruptionRow>,
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
        if name.starts_with('.') || !entry.path().join(SUMMARY_FILE).is_file() {
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
    read_variant_with(name, dir, |path| read_events_filtered(path, keep))
}

/// Reads one variant folder like [`read_variant`] but for `events.csv`,
/// whose rows the caller already has (as it wrote them): `events`.
pub fn read_variant_with_events(
    name: &str,
    dir: &Path,
    events: Vec<EventRow>,
) -> Result<VariantReport, ReadError> {
    read_variant_with(name, dir, |_| Ok(events))
}

/// Reads one variant folder, its events from `events` given the path of
/// its `events.csv`.
fn read_variant_with(
    name: &str,
    dir: &Path,
    events: impl FnOnce(&Path) -> Result<Vec<EventRow>, ReadError>,
) -> Result<VariantReport, ReadError> {
    let summary = Summary::read(&dir.join(SUMMARY_FILE))?;
    let autoscaler = if dir.join(NODES_FILE).is_file() || dir.join(SCALEDOWN_FILE).is_file() {
        Autoscaler::ClusterAutoscaler
    } else {
        Autoscaler::Karpenter
    };
    let (nodeclaims, kept_nodes) = match autoscaler {
        Autoscaler::Karpenter => (
            rows_if_present::<NodeClaimRow>(&dir.join(NODECLAIMS_FILE))?,
            rows_if_present::<DisruptionRow>(&dir.join(DISRUPTION_FILE))?,
        ),
        Autoscaler::ClusterAutoscaler => (
            rows_if_present::<NodeClaimRow>(&dir.join(NODES_FILE))?,
            rows_if_present::<ScaleDownRow>(&dir.join(SCALEDOWN_FILE))?
                .into_iter()
                .map(DisruptionRow::from)
                .collect(),
        ),
    };
    Ok(VariantReport {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        autoscaler,
        summary,
        events: events(&dir.join(EVENTS_FILE))?,
        nodeclaims,
        kept_nodes,
    })
}

/// The rows of `path`, none when the file is missing.
fn rows_if_present<R: Row + DeserializeOwned>(path: &Path) -> Result<Vec<R>, CsvError> {
    if path.is_file() {
        read_rows(path)
    } else {
        Ok(Vec::new())
    }
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
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let mut reader = RowReader::open::<EventRow>(path)?;
    let mut kept = Vec::new();
    while let Some((_, row)) = reader.next::<EventRow>()? {
        kept.extend(keep(row));
    }
    Ok(kept)
}

/// Reads `nodeclaims.csv` or `nodes.csv` (a missing file reads as no
/// rows).
pub fn read_nodeclaims(path: &Path) -> Result<Vec<NodeClaimRow>, ReadError> {
    Ok(rows_if_present(path)?)
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
