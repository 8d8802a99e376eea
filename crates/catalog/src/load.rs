//! Catalog loading: a region's catalog built from the embedded snapshot
//! tables, or with a pinned snapshot file's prices in place of the bundled
//! ones (see [`crate::snapshot`]).

use std::collections::BTreeMap;

use crate::cloud::allocatable::{CapacityOptions, node_resources};
use crate::cloud::catalog::{Catalog, CatalogError, InstanceType, Zone};
use crate::cloud::labels::instance_labels;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::offering::{CapacityType, InterruptionBand, Offering, SpotAdvice, spot_prices};
use crate::cloud::price::Price;
use crate::cloud::spec::{SnapshotError, UsageClasses};
use crate::snapshot::{self, PriceSnapshot, RegionFiles};
use crate::table::{CsvRow, CsvRows, parse_instance_table};

/// Catalogs built from the bundled snapshot: `Catalog::load(region, ..)`
/// wherever this trait is in scope.
pub trait BundledCatalog: Sized {
    /// Every bundled region, sorted.
    fn regions() -> Vec<&'static str>;
    /// Loads `region` with Karpenter's default operator options.
    fn load(region: &str, settings: &NodeClassSettings) -> Result<Self, CatalogError>;
    /// Loads `region` with explicit operator/network-interface options.
    fn load_with(
        region: &str,
        settings: &NodeClassSettings,
        options: &CapacityOptions,
    ) -> Result<Self, CatalogError>;
    /// Loads the region of a snapshot file with its prices in place of the
    /// bundled ones (see [`snapshot`] for the rules), with Karpenter's
    /// default operator options.
    fn load_snapshot(
        prices: &PriceSnapshot,
        settings: &NodeClassSettings,
    ) -> Result<Self, CatalogError>;
    /// Loads `region` from the bundled snapshot, or from `pinned` (a
    /// snapshot file of the same region) when given.
    fn load_pinned(
        region: &str,
        settings: &NodeClassSettings,
        pinned: Option<&PriceSnapshot>,
    ) -> Result<Self, CatalogError>;
}

impl BundledCatalog for Catalog {
    fn regions() -> Vec<&'static str> {
        snapshot::REGION_FILES.iter().map(|f| f.region).collect()
    }

    fn load(region: &str, settings: &NodeClassSettings) -> Result<Catalog, CatalogError> {
        Self::load_with(region, settings, &CapacityOptions::default())
    }

    fn load_with(
        region: &str,
        settings: &NodeClassSettings,
        options: &CapacityOptions,
    ) -> Result<Catalog, CatalogError> {
        build(region, settings, options, None)
    }

    fn load_snapshot(
        prices: &PriceSnapshot,
        settings: &NodeClassSettings,
    ) -> Result<Catalog, CatalogError> {
        build(
            &prices.region,
            settings,
            &CapacityOptions::default(),
            Some(prices),
        )
    }

    fn load_pinned(
        region: &str,
        settings: &NodeClassSettings,
        pinned: Option<&PriceSnapshot>,
    ) -> Result<Catalog, CatalogError> {
        build(region, settings, &CapacityOptions::default(), pinned)
    }
}

fn build(
    region: &str,
    settings: &NodeClassSettings,
    options: &CapacityOptions,
    pinned: Option<&PriceSnapshot>,
) -> Result<Catalog, CatalogError> {
    let files = snapshot::region_files(region).ok_or_else(|| CatalogError::UnknownRegion {
        region: region.to_string(),
        valid: Catalog::regions(),
    })?;
    let zones = zones_of(files.region)?;
    let zone_ids: Vec<&str> = zones.iter().map(|z| z.id).collect();
    let on_demand = match pinned {
        Some(prices) => prices.on_demand.clone(),
        None => read_on_demand(files)?,
    };
    let imported_spot = pinned.and_then(|p| p.spot.as_ref()).map(|s| &s.prices);
    let advice = read_spot_advice(files)?;
    let samples = read_spot_samples(files)?;
    let no_samples = BTreeMap::new();

    let specs = parse_instance_table("instance_types.csv", snapshot::INSTANCE_TYPES)?;
    let mut types = Vec::with_capacity(on_demand.len());
    for spec in specs {
        let Some(&od_price) = on_demand.get(spec.name.as_str()) else {
            continue;
        };
        let Some(labels) = instance_labels(&spec, files.region, settings.ami_family) else {
            continue;
        };
        let resources = node_resources(&spec, settings, options);
        let mut offerings: Vec<Offering> = zones
            .iter()
            .map(|zone| Offering {
                zone: zone.name,
                zone_id: zone.id,
                capacity_type: CapacityType::OnDemand,
                price: od_price,
                available: true,
                interruption_band: None,
                reservation: None,
            })
            .collect();
        let spot_sold = match spec.usage_classes {
            UsageClasses::Known { spot } => spot,
            UsageClasses::Unknown => spec.spot_advisor_regions > 0,
        };
        let type_advice = advice.get(spec.name.as_str()).copied();
        if let Some(by_zone) = imported_spot.and_then(|s| s.get(spec.name.as_str())) {
            // Imported prices: spot is sold exactly where they name a price.
            offerings.extend(zones.iter().filter_map(|zone| {
                by_zone.get(zone.name).map(|&price| Offering {
                    zone: zone.name,
                    zone_id: zone.id,
                    capacity_type: CapacityType::Spot,
                    price,
                    available: true,
                    interruption_band: type_advice.map(|a| a.band),
                    reservation: None,
                })
            }));
        } else if let (true, Some(advice)) = (spot_sold, type_advice) {
            let type_samples = samples.get(spec.name.as_str()).unwrap_or(&no_samples);
            let prices = spot_prices(od_price, advice, type_samples, &zone_ids);
            offerings.extend(zones.iter().zip(prices).map(|(zone, price)| Offering {
                zone: zone.name,
                zone_id: zone.id,
                capacity_type: CapacityType::Spot,
                price,
                available: true,
                interruption_band: Some(advice.band),
                reservation: None,
            }));
        }
        types.push(InstanceType {
            spec,
            labels,
            capacity: resources.capacity,
            overhead: resources.overhead,
            allocatable: resources.allocatable,
            on_demand_price: od_price,
            offerings,
        });
    }
    Ok(Catalog::from_parts(files.region, zones, types))
}

/// The bundled zones of a region, sorted by name (empty for an unknown one).
pub fn zones_of(region: &str) -> Result<Vec<Zone>, SnapshotError> {
    let mut zones = Vec::new();
    for (number, line) in snapshot::ZONES.lines().enumerate().skip(1) {
        let mut fields = line.split(',');
        let (Some(zone_region), Some(name), Some(id)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(SnapshotError {
                file: "zones.csv".into(),
                line: number as u64 + 1,
                reason: "expected region,zone,zone_id".into(),
            });
        };
        if zone_region == region {
            zones.push(Zone { name, id });
        }
    }
    zones.sort();
    Ok(zones)
}

/// The bundled On-Demand prices of `region` (every row of its table,
/// including types the catalog leaves out).
pub fn bundled_on_demand(region: &str) -> Result<BTreeMap<String, Price>, CatalogError> {
    let files = snapshot::region_files(region).ok_or_else(|| CatalogError::UnknownRegion {
        region: region.to_string(),
        valid: Catalog::regions(),
    })?;
    Ok(read_on_demand(files)?)
}

fn price(row: &CsvRow<'_>, column: &str) -> Result<Price, SnapshotError> {
    let text = row.text(column);
    Price::parse_dollars(text)
        .filter(|p| p.micros() > 0)
        .ok_or_else(|| row.error(format!("{column}: not a positive price: {text:?}")))
}

fn read_on_demand(files: &RegionFiles) -> Result<BTreeMap<String, Price>, SnapshotError> {
    let mut out = BTreeMap::new();
    let file = format!("on-demand/{}.csv", files.region);
    CsvRows::new(&file, files.on_demand)?.for_each(|row| {
        out.insert(
            row.text("instance_type").to_string(),
            price(row, "usd_per_hour")?,
        );
        Ok(())
    })?;
    Ok(out)
}

fn read_spot_advice(files: &RegionFiles) -> Result<BTreeMap<String, SpotAdvice>, SnapshotError> {
    let mut out = BTreeMap::new();
    let file = format!("spot-advisor/{}.csv", files.region);
    CsvRows::new(&file, files.spot_advisor)?.for_each(|row| {
        let index: u8 = row.number("band_index")?;
        let band = InterruptionBand::new(index)
            .ok_or_else(|| row.error(format!("band_index out of range: {index}")))?;
        let savings_percent = row.number("savings_pct")?;
        out.insert(
            row.text("instance_type").to_string(),
            SpotAdvice {
                band,
                savings_percent,
            },
        );
        Ok(())
    })?;
    Ok(out)
}

type ZoneSamples = BTreeMap<&'static str, Price>;

fn read_spot_samples(files: &RegionFiles) -> Result<BTreeMap<String, ZoneSamples>, SnapshotError> {
    let mut out: BTreeMap<String, ZoneSamples> = BTreeMap::new();
    let file = format!("spot-samples-2022/{}.csv", files.region);
    let zones = zones_of(files.region)?;
    CsvRows::new(&file, files.spot_samples)?.for_each(|row| {
        let zone_id = row.text("zone_id");
        let zone = zones
            .iter()
            .find(|z| z.id == zone_id)
            .ok_or_else(|| row.error(format!("zone id {zone_id:?} not in zones.csv")))?;
        out.entry(row.text("instance_type").to_string())
            .or_default()
            .insert(zone.id, price(row, "usd_per_hour")?);
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
