//! The bundled pricing snapshot (`pricing-snapshots/`), embedded in the
//! binary so the catalog works offline from any directory, and snapshot
//! files written by `karpsim pricing` that a scenario can pin in its place.
//! Per-region data lives in separate files so loading one region parses
//! only that region.
//!
//! Every catalog's prices come from one snapshot, and every report names it
//! by its [`SnapshotIdentity`]: region, date and source (and the file, for a
//! pinned one). The bundled snapshot's date and source are those of its
//! On-Demand table (`pricing-snapshots/README.md`, "Provenance").
//!
//! # Snapshot files
//!
//! A snapshot file holds one region's prices as JSON (see
//! [`PriceSnapshot::to_json`]); prices are decimal strings, read exactly:
//!
//! ```json
//! {
//!   "format": "karpsim-pricing-snapshot/1",
//!   "region": "us-east-1",
//!   "date": "2026-11-30T02:00:00Z",
//!   "source": "AWS Price List API GetProducts ...",
//!   "onDemand": { "m5.large": "0.096" },
//!   "spot": {
//!     "date": "2021-02-09T01:40:10Z",
//!     "source": "describe-spot-price-history m5.json ...",
//!     "prices": { "m5.large": { "us-east-1a": "0.0423" } }
//!   }
//! }
//! ```
//!
//! `onDemand` replaces the bundled On-Demand table of the region (a type is
//! in the catalog only if it has a price there). `spot` (optional) gives
//! per-zone spot prices: a type listed there has spot offerings in exactly
//! those zones at exactly those prices, as Karpenter offers spot only where
//! the spot price history has a price; every other type keeps the bundled
//! spot rule, applied to the snapshot's On-Demand price.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::cloud::price::Price;

/// The instance-type table (hardware facts, all regions).
pub const INSTANCE_TYPES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../pricing-snapshots/instance_types.csv"
));

/// Region code, price-list location name and On-Demand price source.
pub const REGIONS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../pricing-snapshots/regions.csv"
));

/// Zone names and zone ids of every region.
pub const ZONES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../pricing-snapshots/zones.csv"
));

/// The embedded files of one region.
#[derive(Debug, Clone, Copy)]
pub struct RegionFiles {
    /// Region code, e.g. `us-east-1`.
    pub region: &'static str,
    /// `instance_type,usd_per_hour`: On-Demand Linux prices.
    pub on_demand: &'static str,
    /// `instance_type,band_index,savings_pct`: Spot Advisor Linux rows.
    pub spot_advisor: &'static str,
    /// `instance_type,zone_id,usd_per_hour`: 2022-05-31 spot price samples.
    pub spot_samples: &'static str,
}

macro_rules! region_files {
    ($($region:literal),* $(,)?) => {
        &[$(RegionFiles {
            region: $region,
            on_demand: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/../../pricing-snapshots/on-demand/", $region, ".csv"
            )),
            spot_advisor: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/../../pricing-snapshots/spot-advisor/", $region, ".csv"
            )),
            spot_samples: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/../../pricing-snapshots/spot-samples-2022/", $region, ".csv"
            )),
        }),*]
    };
}

/// Every bundled region, sorted by code.
pub const REGION_FILES: &[RegionFiles] = region_files!(
    "af-south-1",
    "ap-east-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "mx-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-gov-east-1",
    "us-gov-west-1",
    "us-west-1",
    "us-west-2",
);

/// The files of `region`, if bundled.
pub fn region_files(region: &str) -> Option<&'static RegionFiles> {
    REGION_FILES.iter().find(|files| files.region == region)
}

/// The format tag of snapshot files this version reads and writes.
pub const FILE_FORMAT: &str = "karpsim-pricing-snapshot/1";

/// Which prices a run used: recorded in every report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotIdentity {
    /// Region code.
    pub region: String,
    /// When the prices were taken (a date or an RFC 3339 instant).
    pub date: String,
    /// Where they come from, on one line.
    pub source: String,
    /// The snapshot file, as the scenario names it; `None` for the bundled
    /// snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl fmt::Display for SnapshotIdentity {
    /// `bundled snapshot (us-east-1, 2026-07-20): <source>`, or the file in
    /// place of `bundled snapshot`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.file.as_deref().unwrap_or("bundled snapshot");
        write!(
            f,
            "{name} ({}, {}): {}",
            self.region, self.date, self.source
        )
    }
}

/// The date and source of each bundled On-Demand table, keyed by the
/// `on_demand_source` column of `regions.csv` (see the provenance table of
/// `pricing-snapshots/README.md`).
const BUNDLED_SOURCES: &[(&str, &str, &str)] = &[
    (
        "karpenter-2026-07",
        "2026-07-20",
        "Karpenter's fallback On-Demand table (aws/karpenter-provider-aws \
         zz_generated.pricing_aws*.go, generated 2026-07-20)",
    ),
    (
        "ec2shop-2025-04",
        "2025-04-04",
        "AWS public On-Demand price list as of 2025-04-04 (via yeo/ec2.shop)",
    ),
];

/// The identity of the bundled snapshot of `region`, if it is bundled.
pub fn bundled_identity(region: &str) -> Option<SnapshotIdentity> {
    let files = region_files(region)?;
    let table = REGIONS
        .lines()
        .skip(1)
        .find(|line| line.split(',').next() == Some(files.region))
        .and_then(|line| line.rsplit(',').next())?;
    let (_, date, source) = BUNDLED_SOURCES.iter().find(|(key, _, _)| *key == table)?;
    Some(SnapshotIdentity {
        region: files.region.to_string(),
        date: (*date).to_string(),
        source: (*source).to_string(),
        file: None,
    })
}

/// Per-zone spot prices of a snapshot file, with their own date and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpotSnapshot {
    /// The latest price time of the imported history.
    pub date: String,
    /// Where the prices come from.
    pub source: String,
    /// Instance type → zone name → price.
    pub prices: BTreeMap<String, BTreeMap<String, Price>>,
}

/// One region's prices from a snapshot file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceSnapshot {
    /// Region code (a bundled region: zones and hardware facts come from
    /// the bundled snapshot).
    pub region: String,
    /// When the On-Demand prices were taken.
    pub date: String,
    /// Where the On-Demand prices come from.
    pub source: String,
    /// Instance type → On-Demand price per hour.
    pub on_demand: BTreeMap<String, Price>,
    /// Imported per-zone spot prices, if any.
    pub spot: Option<SpotSnapshot>,
}

/// Why a snapshot file is unusable; names the file and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pricing snapshot {file}: {reason}")]
pub struct SnapshotFileError {
    /// The file, as given.
    pub file: String,
    /// What is wrong, with the field path.
    pub reason: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SnapshotJson {
    format: String,
    region: String,
    date: String,
    source: String,
    on_demand: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spot: Option<SpotJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpotJson {
    date: String,
    source: String,
    prices: BTreeMap<String, BTreeMap<String, String>>,
}

impl PriceSnapshot {
    /// Reads a snapshot file's text; `file` names it in errors. The region
    /// must be bundled and spot zones must be zones of it.
    pub fn parse(text: &str, file: &str) -> Result<PriceSnapshot, SnapshotFileError> {
        let error = |reason: String| SnapshotFileError {
            file: file.to_string(),
            reason,
        };
        let json: SnapshotJson =
            serde_json::from_str(text).map_err(|err| error(format!("invalid JSON: {err}")))?;
        if json.format != FILE_FORMAT {
            return Err(error(format!(
                "format: expected {FILE_FORMAT:?}, found {:?}",
                json.format
            )));
        }
        let files = region_files(&json.region).ok_or_else(|| {
            error(format!(
                "region: {:?} is not a bundled region (its zones are unknown)",
                json.region
            ))
        })?;
        let zones = crate::zones_of(files.region).map_err(|err| error(err.to_string()))?;
        let price = |field: String, text: &str| {
            Price::parse_dollars(text)
                .filter(|p| p.micros() > 0)
                .ok_or_else(|| error(format!("{field}: not a positive price: {text:?}")))
        };
        let mut on_demand = BTreeMap::new();
        for (name, text) in &json.on_demand {
            on_demand.insert(name.clone(), price(format!("onDemand.{name}"), text)?);
        }
        let spot = match json.spot {
            None => None,
            Some(spot) => {
                let mut prices: BTreeMap<String, BTreeMap<String, Price>> = BTreeMap::new();
                for (name, by_zone) in &spot.prices {
                    for (zone, text) in by_zone {
                        if !zones.iter().any(|z| z.name == zone) {
                            return Err(error(format!(
                                "spot.prices.{name}.{zone}: not a zone of {}",
                                json.region
                            )));
                        }
                        let value = price(format!("spot.prices.{name}.{zone}"), text)?;
                        prices
                            .entry(name.clone())
                            .or_default()
                            .insert(zone.clone(), value);
                    }
                }
                Some(SpotSnapshot {
                    date: spot.date,
                    source: spot.source,
                    prices,
                })
            }
        };
        Ok(PriceSnapshot {
            region: json.region,
            date: json.date,
            source: json.source,
            on_demand,
            spot,
        })
    }

    /// The file's text: pretty JSON, keys sorted, one price a line, so the
    /// same prices always give the same bytes.
    pub fn to_json(&self) -> String {
        let decimal = |p: &Price| p.decimal();
        let json = SnapshotJson {
            format: FILE_FORMAT.to_string(),
            region: self.region.clone(),
            date: self.date.clone(),
            source: self.source.clone(),
            on_demand: self
                .on_demand
                .iter()
                .map(|(name, p)| (name.clone(), decimal(p)))
                .collect(),
            spot: self.spot.as_ref().map(|spot| SpotJson {
                date: spot.date.clone(),
                source: spot.source.clone(),
                prices: spot
                    .prices
                    .iter()
                    .map(|(name, zones)| {
                        let zones = zones.iter().map(|(z, p)| (z.clone(), decimal(p))).collect();
                        (name.clone(), zones)
                    })
                    .collect(),
            }),
        };
        // Serializing plain maps of strings cannot fail.
        let mut text = serde_json::to_string_pretty(&json).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The identity of this snapshot read from `file` (as the user names
    /// it): its On-Demand date and source, and the spot source when it has
    /// imported spot prices.
    pub fn identity(&self, file: Option<String>) -> SnapshotIdentity {
        let source = match &self.spot {
            None => self.source.clone(),
            Some(spot) => format!(
                "{}; spot prices: {} (as of {})",
                self.source, spot.source, spot.date
            ),
        };
        SnapshotIdentity {
            region: self.region.clone(),
            date: self.date.clone(),
            source,
            file,
        }
    }

    /// Number of per-zone spot prices.
    pub fn spot_price_count(&self) -> usize {
        self.spot
            .as_ref()
            .map_or(0, |s| s.prices.values().map(BTreeMap::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded list must match `regions.csv`, which the regeneration
    /// script writes: a region added there needs a line here.
    #[test]
    fn embedded_regions_match_regions_csv() {
        let listed: Vec<&str> = REGIONS
            .lines()
            .skip(1)
            .filter_map(|line| line.split(',').next())
            .collect();
        let embedded: Vec<&str> = REGION_FILES.iter().map(|f| f.region).collect();
        assert_eq!(listed, embedded);
        assert_eq!(embedded.len(), 34);
    }
}
