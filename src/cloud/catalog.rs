//! The instance-type catalog of one region: every type with an On-Demand
//! price there, with labels, capacity, overhead, allocatable and offerings,
//! built from the embedded snapshot (or with a pinned snapshot file's
//! prices, see [`super::snapshot`]) for one set of EC2NodeClass settings.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::allocatable::{CapacityOptions, Overhead, node_resources};
use super::labels::instance_labels;
use super::nodeclass::NodeClassSettings;
use super::offering::{CapacityType, InterruptionBand, Offering, SpotAdvice, spot_prices};
use super::price::Price;
use super::snapshot::{self, PriceSnapshot, RegionFiles};
use super::spec::{Arch, CsvRows, InstanceSpec, SnapshotError, UsageClasses};
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;

/// An availability zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Zone {
    /// Zone name, e.g. `eu-west-1a`.
    pub name: &'static str,
    /// Zone id, e.g. `euw1-az1`.
    pub id: &'static str,
}

/// Why a catalog could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The region is not in the bundled snapshot.
    #[error("unknown region {region:?}; valid regions: {}", valid.join(", "))]
    UnknownRegion {
        /// The region asked for.
        region: String,
        /// Every bundled region.
        valid: Vec<&'static str>,
    },
    /// A bundled file is malformed (a packaging bug).
    #[error("bundled pricing snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

/// An instance type as a node of the catalog's region and node class.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceType {
    /// Hardware facts.
    pub spec: InstanceSpec,
    /// Karpenter's single-valued labels, sorted by key.
    pub labels: Vec<(&'static str, String)>,
    /// Node capacity.
    pub capacity: Resources,
    /// kube-reserved, system-reserved and eviction thresholds.
    pub overhead: Overhead,
    /// What pods can use.
    pub allocatable: Resources,
    /// The On-Demand price in this region.
    pub on_demand_price: Price,
    /// Offerings: each zone on-demand, then each zone spot (if spot is sold).
    pub offerings: Vec<Offering>,
}

impl InstanceType {
    /// e.g. `m5.large`.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// e.g. `m`.
    pub fn category(&self) -> &str {
        &self.spec.category
    }
    /// e.g. `m5`.
    pub fn family(&self) -> &str {
        &self.spec.family
    }
    /// e.g. 5.
    pub fn generation(&self) -> u32 {
        self.spec.generation
    }
    /// e.g. `large`.
    pub fn size(&self) -> &str {
        &self.spec.size
    }
    /// Default vCPUs.
    pub fn vcpu(&self) -> u32 {
        self.spec.vcpu
    }
    /// Memory in MiB as EC2 reports it.
    pub fn memory_mib(&self) -> u64 {
        self.spec.memory_mib
    }
    /// Architecture.
    pub fn arch(&self) -> Arch {
        self.spec.arch
    }
    /// The value of a label, if the type has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| (*k).cmp(key))
            .ok()
            .map(|i| self.labels[i].1.as_str())
    }
    /// The cheapest available offering of a capacity type (ties: zone order).
    pub fn cheapest(&self, capacity_type: CapacityType) -> Option<&Offering> {
        self.offerings
            .iter()
            .filter(|o| o.available && o.capacity_type == capacity_type)
            .min_by_key(|o| o.price)
    }
}

/// The catalog of one region.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    region: &'static str,
    zones: Vec<Zone>,
    types: Vec<InstanceType>,
    by_price: Vec<usize>,
    type_requirements: Arc<Vec<Requirements>>,
    /// Per type, the price of its cheapest available offering of each
    /// capacity type (see [`Catalog::cheapest_price`]).
    cheapest: Vec<[Option<Price>; 3]>,
}

/// The prices of a type's cheapest available offering of each capacity
/// type, in [`capacity_slot`] order.
fn cheapest_prices(instance_type: &InstanceType) -> [Option<Price>; 3] {
    [
        CapacityType::OnDemand,
        CapacityType::Spot,
        CapacityType::Reserved,
    ]
    .map(|ct| instance_type.cheapest(ct).map(|o| o.price))
}

const fn capacity_slot(capacity_type: CapacityType) -> usize {
    match capacity_type {
        CapacityType::OnDemand => 0,
        CapacityType::Spot => 1,
        CapacityType::Reserved => 2,
    }
}

impl Catalog {
    /// Every bundled region, sorted.
    pub fn regions() -> Vec<&'static str> {
        snapshot::REGION_FILES.iter().map(|f| f.region).collect()
    }

    /// Loads `region` with Karpenter's default operator options.
    pub fn load(region: &str, settings: &NodeClassSettings) -> Result<Catalog, CatalogError> {
        Self::load_with(region, settings, &CapacityOptions::default())
    }

    /// Loads `region` with explicit operator/network-interface options.
    pub fn load_with(
        region: &str,
        settings: &NodeClassSettings,
        options: &CapacityOptions,
    ) -> Result<Catalog, CatalogError> {
        Self::build(region, settings, options, None)
    }

    /// Loads the region of a snapshot file with its prices in place of the
    /// bundled ones (see [`snapshot`] for the rules), with Karpenter's
    /// default operator options.
    pub fn load_snapshot(
        prices: &PriceSnapshot,
        settings: &NodeClassSettings,
    ) -> Result<Catalog, CatalogError> {
        Self::build(
            &prices.region,
            settings,
            &CapacityOptions::default(),
            Some(prices),
        )
    }

    /// Loads `region` from the bundled snapshot, or from `pinned` (a
    /// snapshot file of the same region) when given.
    pub fn load_pinned(
        region: &str,
        settings: &NodeClassSettings,
        pinned: Option<&PriceSnapshot>,
    ) -> Result<Catalog, CatalogError> {
        Self::build(region, settings, &CapacityOptions::default(), pinned)
    }

    fn build(
        region: &str,
        settings: &NodeClassSettings,
        options: &CapacityOptions,
        pinned: Option<&PriceSnapshot>,
    ) -> Result<Catalog, CatalogError> {
        let files = snapshot::region_files(region).ok_or_else(|| CatalogError::UnknownRegion {
            region: region.to_string(),
            valid: Self::regions(),
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

        let specs = InstanceSpec::parse_table("instance_types.csv", snapshot::INSTANCE_TYPES)?;
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
        Ok(Self::from_parts(files.region, zones, types))
    }

    /// A catalog from ready-made parts (synthetic catalogs for tests and
    /// benchmarks, see [`crate::cloud::fake`]). Types are sorted by name, as
    /// [`Catalog::load`] sorts them, so indices mean the same thing.
    pub fn from_parts(
        region: &'static str,
        zones: Vec<Zone>,
        mut types: Vec<InstanceType>,
    ) -> Catalog {
        types.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let mut by_price: Vec<usize> = (0..types.len()).collect();
        by_price.sort_by(|&a, &b| {
            (types[a].on_demand_price, &types[a].spec.name)
                .cmp(&(types[b].on_demand_price, &types[b].spec.name))
        });
        let type_requirements = Arc::new(types.iter().map(InstanceType::requirements).collect());
        let cheapest = types.iter().map(cheapest_prices).collect();
        Catalog {
            region,
            zones,
            types,
            by_price,
            type_requirements,
            cheapest,
        }
    }

    /// The price of the cheapest available offering of the type at `index`
    /// (into [`Catalog::instance_types`]) with `capacity_type`, in any
    /// zone; kept in step with availability and price changes, so a caller
    /// can bound a type's price without walking its offerings.
    pub fn cheapest_price(&self, index: usize, capacity_type: CapacityType) -> Option<Price> {
        self.cheapest
            .get(index)
            .and_then(|prices| prices[capacity_slot(capacity_type)])
    }

    /// Every type's requirements (`InstanceType::requirements`), in
    /// `instance_types()` order, computed once and kept in step with
    /// offering availability: deciders compare against them many times per
    /// decision, and building them is the costly part.
    pub fn type_requirements(&self) -> &Arc<Vec<Requirements>> {
        &self.type_requirements
    }

    /// The region code.
    pub fn region(&self) -> &'static str {
        self.region
    }

    /// The region's zones, sorted by name.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// Every instance type, sorted by name.
    pub fn instance_types(&self) -> &[InstanceType] {
        &self.types
    }

    /// Every instance type, cheapest On-Demand price first; ties by name.
    pub fn by_on_demand_price(&self) -> impl ExactSizeIterator<Item = &InstanceType> + '_ {
        self.by_price.iter().map(|&i| &self.types[i])
    }

    /// The instance type with this name.
    pub fn get(&self, name: &str) -> Option<&InstanceType> {
        self.types
            .binary_search_by(|t| t.spec.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.types[i])
    }

    /// Marks the offering of `instance_type` in `zone` with `capacity_type`
    /// unavailable, as an insufficient-capacity error does; returns whether
    /// such an offering exists.
    pub fn mark_unavailable(
        &mut self,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
    ) -> bool {
        let Some(index) =
            self.update_offerings(instance_type, zone, capacity_type, |o| o.available = false)
        else {
            return false;
        };
        Arc::make_mut(&mut self.type_requirements)[index] = self.types[index].requirements();
        true
    }

    /// Marks every offering outside `zones` unavailable, rebuilding each
    /// changed type's requirements once (a whole-catalog
    /// [`Catalog::mark_unavailable`]).
    pub fn restrict_to_zones(&mut self, zones: &[String]) {
        let requirements = Arc::make_mut(&mut self.type_requirements);
        for (index, instance_type) in self.types.iter_mut().enumerate() {
            let mut changed = false;
            for offering in &mut instance_type.offerings {
                if offering.available && !zones.iter().any(|z| z == offering.zone) {
                    offering.available = false;
                    changed = true;
                }
            }
            if changed {
                requirements[index] = instance_type.requirements();
                self.cheapest[index] = cheapest_prices(instance_type);
            }
        }
    }

    /// Sets the price of the offering of `instance_type` in `zone` with
    /// `capacity_type` (a spot price change); returns whether such an
    /// offering exists. Requirements do not depend on prices, so
    /// [`Catalog::type_requirements`] stays as it is; the on-demand price
    /// order ([`Catalog::by_on_demand_price`]) is not affected either, since
    /// only the offering changes, not `on_demand_price`.
    pub fn set_offering_price(
        &mut self,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
        price: Price,
    ) -> bool {
        self.update_offerings(instance_type, zone, capacity_type, |o| o.price = price)
            .is_some()
    }

    /// Applies `update` to the offerings of `instance_type` in `zone` with
    /// `capacity_type`; the type's index when there was at least one.
    fn update_offerings(
        &mut self,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
        mut update: impl FnMut(&mut Offering),
    ) -> Option<usize> {
        let index = self
            .types
            .binary_search_by(|t| t.spec.name.as_str().cmp(instance_type))
            .ok()?;
        let mut found = false;
        for offering in &mut self.types[index].offerings {
            if offering.zone == zone && offering.capacity_type == capacity_type {
                update(offering);
                found = true;
            }
        }
        if found {
            self.cheapest[index] = cheapest_prices(&self.types[index]);
        }
        found.then_some(index)
    }

    /// Number of instance types.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the catalog has no types.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
}

impl fmt::Display for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} instance types in {} zones",
            self.region,
            self.types.len(),
            self.zones.len()
        )
    }
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

fn price(row: &super::spec::CsvRow<'_>, column: &str) -> Result<Price, SnapshotError> {
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
#[path = "catalog_tests.rs"]
mod tests;
