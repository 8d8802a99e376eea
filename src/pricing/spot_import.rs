//! `karpsim pricing import-spot`: the latest spot price per (instance type,
//! zone) of an `aws ec2 describe-spot-price-history` output, merged into a
//! snapshot's per-zone spot prices. Pure: takes text, returns values.
//!
//! The file is read by the spot price-history reader
//! ([`PriceHistory`]), with its rules: Linux rows only, the `(Amazon VPC)`
//! row preferred at equal times, conflicting rows refused. The price kept
//! for each (type, zone) is the one in force at the file's latest
//! timestamp, as Karpenter keeps the latest price per type and zone
//! (aws: pkg/providers/pricing/pricing.go `UpdateSpotPricing`). Rows need
//! wall-clock times: a CSV with times relative to a run start has no date.

use std::collections::BTreeMap;

use karpsim_catalog::snapshot::{self, PriceSnapshot, SpotSnapshot};
use karpsim_model::cloud::Price;
use karpsim_sim::spot::{PriceHistory, RowRef, RowTime, SpotFileError, Timestamp};

/// The latest spot prices of one history file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpotImport {
    /// The region all its zones belong to.
    pub region: &'static str,
    /// Instance type → zone name → latest price.
    pub prices: BTreeMap<String, BTreeMap<String, Price>>,
    /// The latest timestamp in the file.
    pub latest: Timestamp,
    /// Linux rows read.
    pub rows: usize,
    /// Rows of other products (Windows, SUSE, ...) skipped.
    pub other_products: usize,
}

/// Why a history file cannot be imported; one line each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The file is not a readable price history.
    #[error(transparent)]
    History(#[from] SpotFileError),
    /// No Linux row.
    #[error("{file}: no Linux/UNIX spot price in the file ({other} rows of other products)")]
    Empty {
        /// The file.
        file: String,
        /// Rows of other products.
        other: usize,
    },
    /// A row's time is relative to a run start.
    #[error("{file}: {row}: the time is relative to a run start; importing needs wall-clock times")]
    RelativeTime {
        /// The file.
        file: String,
        /// The row.
        row: RowRef,
    },
    /// A zone no bundled region has.
    #[error("{file}: {row}: {zone:?} is not a zone of any known region")]
    UnknownZone {
        /// The file.
        file: String,
        /// The row.
        row: RowRef,
        /// The zone.
        zone: String,
    },
    /// Zones of two regions in one file.
    #[error(
        "{file}: {row}: zone {zone} is in {region}, but earlier rows are in {first}; import one region at a time"
    )]
    MixedRegions {
        /// The file.
        file: String,
        /// The row.
        row: RowRef,
        /// The zone.
        zone: String,
        /// Its region.
        region: String,
        /// The region of the first row.
        first: String,
    },
    /// The file's region is not the snapshot's.
    #[error("{file} holds spot prices for {region}, but the snapshot is for {snapshot_region}")]
    RegionMismatch {
        /// The file.
        file: String,
        /// The file's region.
        region: String,
        /// The snapshot's region.
        snapshot_region: String,
    },
}

/// The bundled region that has a zone named `zone`.
pub fn region_of_zone(zone: &str) -> Option<&'static str> {
    snapshot::ZONES
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split(',');
            Some((fields.next()?, fields.next()?))
        })
        .find(|(_, name)| *name == zone)
        .map(|(region, _)| region)
}

/// Reads a `DescribeSpotPriceHistory` JSON (or a CSV with wall-clock times)
/// and keeps the latest price per (type, zone); `file` names it in errors.
pub fn read_spot_history(text: &str, file: &str) -> Result<SpotImport, ImportError> {
    let history = PriceHistory::parse(text, file)?;
    let mut region: Option<(&'static str, String)> = None;
    for point in &history.points {
        if let RowTime::Relative(_) = point.time {
            return Err(ImportError::RelativeTime {
                file: file.to_string(),
                row: point.row,
            });
        }
        let zone_region = region_of_zone(&point.zone).ok_or_else(|| ImportError::UnknownZone {
            file: file.to_string(),
            row: point.row,
            zone: point.zone.clone(),
        })?;
        match &region {
            None => region = Some((zone_region, point.zone.clone())),
            Some((first, _)) if *first != zone_region => {
                return Err(ImportError::MixedRegions {
                    file: file.to_string(),
                    row: point.row,
                    zone: point.zone.clone(),
                    region: zone_region.to_string(),
                    first: first.to_string(),
                });
            }
            Some(_) => {}
        }
    }
    let Some((region, _)) = region else {
        return Err(ImportError::Empty {
            file: file.to_string(),
            other: history.other_products,
        });
    };
    let latest = history
        .points
        .iter()
        .filter_map(|p| match p.time {
            RowTime::Absolute(t) => Some(t),
            RowTime::Relative(_) => None,
        })
        .max();
    let Some(latest) = latest else {
        return Err(ImportError::RelativeTime {
            file: file.to_string(),
            row: history.points[0].row,
        });
    };
    // Anchored at the latest instant, every row is at or before the start:
    // the changes are then exactly the prices in force at that instant.
    let changes = history.changes(file, Some(latest))?;
    let mut prices: BTreeMap<String, BTreeMap<String, Price>> = BTreeMap::new();
    for change in changes {
        prices
            .entry(change.instance_type)
            .or_default()
            .insert(change.zone, change.price);
    }
    Ok(SpotImport {
        region,
        prices,
        latest,
        rows: history.points.len(),
        other_products: history.other_products,
    })
}

/// What a merge changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeCounts {
    /// Per-zone prices taken from the import.
    pub imported: usize,
    /// Earlier per-zone prices of the snapshot kept (not in the import).
    pub kept: usize,
    /// Imported instance types without an On-Demand price in the snapshot
    /// (a run ignores them: such a type is not in the catalog).
    pub without_on_demand: usize,
}

/// Merges `import` into `snapshot`'s spot prices: the imported prices
/// replace those of the same (type, zone), others are kept, as Karpenter
/// merges new prices over old ones. `name` describes the file in the
/// snapshot's spot source.
pub fn merge_spot(
    snapshot: &mut PriceSnapshot,
    import: &SpotImport,
    name: &str,
) -> Result<MergeCounts, ImportError> {
    if snapshot.region != import.region {
        return Err(ImportError::RegionMismatch {
            file: name.to_string(),
            region: import.region.to_string(),
            snapshot_region: snapshot.region.clone(),
        });
    }
    let mut prices = snapshot
        .spot
        .take()
        .map(|spot| spot.prices)
        .unwrap_or_default();
    let before: usize = prices.values().map(BTreeMap::len).sum();
    let mut imported = 0;
    let mut replaced = 0;
    for (instance_type, zones) in &import.prices {
        let entry = prices.entry(instance_type.clone()).or_default();
        for (zone, price) in zones {
            imported += 1;
            if entry.insert(zone.clone(), *price).is_some() {
                replaced += 1;
            }
        }
    }
    let kept = before - replaced;
    let without_on_demand = import
        .prices
        .keys()
        .filter(|t| !snapshot.on_demand.contains_key(*t))
        .count();
    let mut source = format!(
        "describe-spot-price-history {name} ({imported} zone prices of {} types, Linux/UNIX)",
        import.prices.len()
    );
    if kept > 0 {
        source.push_str(&format!(" over {kept} earlier zone prices"));
    }
    snapshot.spot = Some(SpotSnapshot {
        date: import.latest.to_string(),
        source,
        prices,
    });
    Ok(MergeCounts {
        imported,
        kept,
        without_on_demand,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const M5_HISTORY: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/spot/ec2_describe_spot_price_history_m5.large_us-east-1.json"
    ));

    /// The real history: 250 m5.large rows in us-east-1a, b, c, d, f; the
    /// latest row is us-east-1f at 2021-02-09T01:40:10Z, 0.0437. The other
    /// zones' latest prices were read off the file by hand.
    #[test]
    fn keeps_the_latest_price_per_zone_of_the_real_history() {
        let import = read_spot_history(M5_HISTORY, "m5.json").unwrap();
        assert_eq!(import.region, "us-east-1");
        assert_eq!(import.rows, 250);
        assert_eq!(import.latest.to_string(), "2021-02-09T01:40:10Z");
        let zones = &import.prices["m5.large"];
        let zone_names: Vec<&str> = zones.keys().map(String::as_str).collect();
        assert_eq!(
            zone_names,
            [
                "us-east-1a",
                "us-east-1b",
                "us-east-1c",
                "us-east-1d",
                "us-east-1f"
            ]
        );
        assert_eq!(zones["us-east-1f"], Price::from_micros(43_700));
        assert_eq!(zones["us-east-1a"], Price::from_micros(42_300));
    }

    #[test]
    fn merge_replaces_same_zone_and_keeps_others() {
        let import = read_spot_history(M5_HISTORY, "m5.json").unwrap();
        let mut snapshot = PriceSnapshot {
            region: "us-east-1".into(),
            date: "2026-07-20".into(),
            source: "test".into(),
            on_demand: BTreeMap::from([("m5.large".to_string(), Price::from_micros(96_000))]),
            spot: Some(SpotSnapshot {
                date: "2020-01-01T00:00:00Z".into(),
                source: "old".into(),
                prices: BTreeMap::from([(
                    "m5.large".to_string(),
                    BTreeMap::from([
                        ("us-east-1a".to_string(), Price::from_micros(1)),
                        ("us-east-1e".to_string(), Price::from_micros(2)),
                    ]),
                )]),
            }),
        };
        let counts = merge_spot(&mut snapshot, &import, "m5.json").unwrap();
        assert_eq!(counts.imported, 5);
        assert_eq!(counts.kept, 1);
        assert_eq!(counts.without_on_demand, 0);
        let spot = snapshot.spot.unwrap();
        assert_eq!(spot.prices["m5.large"].len(), 6);
        assert_eq!(
            spot.prices["m5.large"]["us-east-1a"],
            Price::from_micros(42_300)
        );
        assert_eq!(spot.prices["m5.large"]["us-east-1e"], Price::from_micros(2));
        assert_eq!(spot.date, "2021-02-09T01:40:10Z");
    }

    #[test]
    fn refuses_mixed_regions_unknown_zones_and_relative_times() {
        let item = |zone: &str| {
            format!(
                r#"{{"AvailabilityZone":"{zone}","InstanceType":"m5.large","ProductDescription":"Linux/UNIX","SpotPrice":"0.04","Timestamp":"2021-02-09T01:40:10Z"}}"#
            )
        };
        let two = format!(
            r#"{{"SpotPriceHistory":[{},{}]}}"#,
            item("us-east-1a"),
            item("eu-west-1a")
        );
        let err = read_spot_history(&two, "h.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "h.json: SpotPriceHistory[1]: zone eu-west-1a is in eu-west-1, but earlier rows are in \
             us-east-1; import one region at a time"
        );
        let mars = format!(r#"{{"SpotPriceHistory":[{}]}}"#, item("mars-1a"));
        assert!(matches!(
            read_spot_history(&mars, "h.json").unwrap_err(),
            ImportError::UnknownZone { .. }
        ));
        let relative = "time,instance_type,zone,price\n0,m5.large,us-east-1a,0.04\n";
        assert!(matches!(
            read_spot_history(relative, "p.csv").unwrap_err(),
            ImportError::RelativeTime { .. }
        ));
        let other = r#"{"SpotPriceHistory":[{"AvailabilityZone":"us-east-1a","InstanceType":"m5.large","ProductDescription":"Windows","SpotPrice":"0.04","Timestamp":"2021-02-09T01:40:10Z"}]}"#;
        assert!(matches!(
            read_spot_history(other, "w.json").unwrap_err(),
            ImportError::Empty { other: 1, .. }
        ));
    }
}
