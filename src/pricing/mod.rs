//! Pricing snapshots beyond the bundled one: `karpsim pricing refresh`
//! (On-Demand prices from the AWS Price List API, behind the `aws` cargo
//! feature), `import-spot` (per-zone spot prices from `aws ec2
//! describe-spot-price-history` output) and `show`.
//!
//! The parsing is pure ([`price_list`], [`spot_import`]); only [`fetch`]
//! talks to AWS, and [`write_snapshot`] writes a snapshot file atomically.
//! The file format and how a catalog uses it are described in
//! [`karpsim_catalog::snapshot`].

#[cfg(feature = "aws")]
pub mod fetch;
pub mod price_list;
pub mod spot_import;

use karpsim_catalog::BundledCatalog;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use karpsim_catalog::snapshot::{self, PriceSnapshot, SnapshotIdentity};
use karpsim_model::cloud::catalog::{Catalog, CatalogError};
use karpsim_model::cloud::{CapacityType, nodeclass::NodeClassSettings};

/// Where `refresh` and `import-spot` write a region's snapshot unless told
/// otherwise (relative to the working directory).
pub fn default_snapshot_path(region: &str) -> PathBuf {
    Path::new("pricing-snapshots")
        .join("refreshed")
        .join(format!("{region}.json"))
}

/// A snapshot file holding the bundled On-Demand prices of `region` and no
/// spot prices: the base `import-spot` merges into when the target file
/// does not exist yet.
pub fn bundled_snapshot(region: &str) -> Result<PriceSnapshot, CatalogError> {
    let identity =
        snapshot::bundled_identity(region).ok_or_else(|| CatalogError::UnknownRegion {
            region: region.to_string(),
            valid: Catalog::regions(),
        })?;
    Ok(PriceSnapshot {
        region: identity.region,
        date: identity.date,
        source: identity.source,
        on_demand: karpsim_catalog::bundled_on_demand(region)?,
        spot: None,
    })
}

/// Writes `snapshot` to `path` atomically: into a temporary file beside it,
/// then renamed over it, so a reader never sees half a file. Missing
/// parent directories are created.
pub fn write_snapshot(path: &Path, snapshot: &PriceSnapshot) -> io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot.json".to_string());
    let temp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&temp).and_then(|mut file| {
        file.write_all(snapshot.to_json().as_bytes())?;
        file.sync_all()
    });
    let result = written.and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// What `karpsim pricing show` prints about a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// Which snapshot.
    pub identity: SnapshotIdentity,
    /// Instance types in the region's catalog.
    pub types: usize,
    /// On-Demand prices the snapshot holds (types not in the hardware table
    /// are not in the catalog).
    pub on_demand_prices: usize,
    /// Spot offerings (zone × type) in the catalog.
    pub spot_offerings: usize,
    /// Imported per-zone spot prices in the file (0 for the bundled
    /// snapshot, whose spot prices are derived).
    pub imported_spot_prices: usize,
    /// When the imported spot prices were taken.
    pub spot_date: Option<String>,
}

impl SnapshotSummary {
    /// Summarises `region`'s bundled snapshot, or `file` (named `shown`)
    /// when given.
    pub fn of(
        region: &str,
        file: Option<(&PriceSnapshot, String)>,
    ) -> Result<SnapshotSummary, CatalogError> {
        let settings = NodeClassSettings::default();
        let (catalog, identity, on_demand_prices, imported, spot_date) = match file {
            Some((prices, shown)) => (
                Catalog::load_snapshot(prices, &settings)?,
                prices.identity(Some(shown)),
                prices.on_demand.len(),
                prices.spot_price_count(),
                prices.spot.as_ref().map(|s| s.date.clone()),
            ),
            None => {
                let base = bundled_snapshot(region)?;
                (
                    Catalog::load(region, &settings)?,
                    snapshot::bundled_identity(region).unwrap_or_else(|| base.identity(None)),
                    base.on_demand.len(),
                    0,
                    None,
                )
            }
        };
        let spot_offerings = catalog
            .instance_types()
            .iter()
            .flat_map(|t| &t.offerings)
            .filter(|o| o.capacity_type == CapacityType::Spot)
            .count();
        Ok(SnapshotSummary {
            identity,
            types: catalog.len(),
            on_demand_prices,
            spot_offerings,
            imported_spot_prices: imported,
            spot_date,
        })
    }

    /// The lines `show` prints.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let id = &self.identity;
        match &id.file {
            Some(file) => writeln!(out, "snapshot:        {file}")?,
            None => writeln!(out, "snapshot:        bundled (embedded in karpsim)")?,
        }
        writeln!(out, "region:          {}", id.region)?;
        writeln!(out, "date:            {}", id.date)?;
        writeln!(out, "source:          {}", id.source)?;
        writeln!(
            out,
            "instance types:  {} in the catalog ({} On-Demand prices in the snapshot)",
            self.types, self.on_demand_prices
        )?;
        match &self.spot_date {
            Some(date) => writeln!(
                out,
                "spot prices:     {} spot offerings; {} imported zone prices as of {date}, \
                 the bundled rule for other types",
                self.spot_offerings, self.imported_spot_prices
            ),
            None => writeln!(
                out,
                "spot prices:     {} spot offerings, derived by the bundled rule \
                 (Spot Advisor savings and 2022 zone samples)",
                self.spot_offerings
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use karpsim_model::cloud::Price;
    use std::collections::BTreeMap;

    #[test]
    fn bundled_snapshot_carries_the_provenance_identity() {
        let base = bundled_snapshot("eu-west-1").unwrap();
        assert_eq!(base.date, "2025-04-04");
        assert!(base.source.contains("ec2.shop"), "{}", base.source);
        assert!(base.on_demand.contains_key("m5.large"));
        assert!(bundled_snapshot("mars-1").is_err());
        let us = snapshot::bundled_identity("us-east-1").unwrap();
        assert_eq!(us.date, "2026-07-20");
        assert!(us.source.contains("Karpenter"), "{}", us.source);
    }

    /// A written snapshot reads back equal, and the catalog built from it
    /// uses its prices: On-Demand replaced, imported spot zones exactly.
    #[test]
    fn written_snapshot_round_trips_and_drives_the_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("us-east-1.json");
        let snapshot = PriceSnapshot {
            region: "us-east-1".into(),
            date: "2026-11-30T02:00:00Z".into(),
            source: "test pages".into(),
            on_demand: BTreeMap::from([
                ("m5.large".to_string(), Price::from_micros(123_456)),
                ("m5.xlarge".to_string(), Price::from_micros(200_000)),
            ]),
            spot: Some(karpsim_catalog::snapshot::SpotSnapshot {
                date: "2021-02-09T01:40:10Z".into(),
                source: "m5.json".into(),
                prices: BTreeMap::from([(
                    "m5.large".to_string(),
                    BTreeMap::from([("us-east-1b".to_string(), Price::from_micros(40_000))]),
                )]),
            }),
        };
        write_snapshot(&path, &snapshot).unwrap();
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("us-east-1.json")]);
        let read = karpsim_input::price_snapshot::read_price_snapshot(&path).unwrap();
        assert_eq!(read, snapshot);

        let catalog = Catalog::load_snapshot(&read, &NodeClassSettings::default()).unwrap();
        assert_eq!(catalog.len(), 2);
        let large = catalog.get("m5.large").unwrap();
        assert_eq!(large.on_demand_price, Price::from_micros(123_456));
        let spot: Vec<(&str, Price)> = large
            .offerings
            .iter()
            .filter(|o| o.capacity_type == CapacityType::Spot)
            .map(|o| (o.zone, o.price))
            .collect();
        assert_eq!(spot, vec![("us-east-1b", Price::from_micros(40_000))]);
        // m5.xlarge has no imported prices: the bundled rule, one per zone.
        let xlarge = catalog.get("m5.xlarge").unwrap();
        let spot_zones = xlarge
            .offerings
            .iter()
            .filter(|o| o.capacity_type == CapacityType::Spot)
            .count();
        assert_eq!(spot_zones, catalog.zones().len());

        let summary = SnapshotSummary::of("us-east-1", Some((&read, "s.json".into()))).unwrap();
        assert_eq!(summary.types, 2);
        assert_eq!(summary.imported_spot_prices, 1);
        assert_eq!(summary.spot_offerings, 1 + catalog.zones().len());
    }

    #[test]
    fn malformed_snapshot_files_name_the_field() {
        let err = PriceSnapshot::parse(
            r#"{"format":"karpsim-pricing-snapshot/1","region":"us-east-1","date":"d","source":"s","onDemand":{"m5.large":"free"}}"#,
            "s.json",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "pricing snapshot s.json: onDemand.m5.large: not a positive price: \"free\""
        );
        let err = PriceSnapshot::parse(
            r#"{"format":"karpsim-pricing-snapshot/1","region":"us-east-1","date":"d","source":"s","onDemand":{},"spot":{"date":"d","source":"s","prices":{"m5.large":{"eu-west-1a":"0.1"}}}}"#,
            "s.json",
        )
        .unwrap_err();
        assert!(
            err.reason
                .starts_with("spot.prices.m5.large.eu-west-1a: not a zone"),
            "{err}"
        );
        let err = PriceSnapshot::parse(r#"{"format":"other"}"#, "s.json").unwrap_err();
        assert!(err.reason.starts_with("invalid JSON"), "{err}");
    }
}
