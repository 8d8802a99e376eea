//! The instance-type catalog of one region: every type with an On-Demand
//! price there, with labels, capacity, overhead, allocatable and offerings,
//! built from the embedded snapshot (or with a pinned snapshot file's
//! prices, see `karpsim_catalog::snapshot`) for one set of EC2NodeClass settings.

use std::fmt;
use std::sync::Arc;

use super::allocatable::Overhead;
use super::offering::{CapacityType, Offering};
use super::price::Price;
use super::reservation::{CapacityReservation, OfferingReservation};
use super::spec::{Arch, InstanceSpec, SnapshotError};
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
    /// Offerings: each zone on-demand, then each zone spot (if spot is
    /// sold), then one per capacity reservation selected for the type.
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
    #[inline]
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
    /// Per type, what its available offerings sum up to (see
    /// [`Catalog::cheapest_price`] and [`Catalog::offered_zones`]).
    summaries: Vec<OfferingSummary>,
    /// Every reserved offering as (type index, offering index), in the
    /// order added.
    reserved: Vec<(usize, usize)>,
}

/// A type's available offerings, summed up for deciders that ask about
/// every type many times.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OfferingSummary {
    /// The price of its cheapest available offering of each capacity type,
    /// in [`capacity_slot`] order.
    cheapest: [Option<Price>; 3],
    /// See [`Catalog::offered_zones`].
    offered: Option<u64>,
}

/// Sums up `instance_type`'s offerings against the catalog's `zones`.
fn summarize(zones: &[Zone], instance_type: &InstanceType) -> OfferingSummary {
    let cheapest = [
        CapacityType::OnDemand,
        CapacityType::Spot,
        CapacityType::Reserved,
    ]
    .map(|ct| instance_type.cheapest(ct).map(|o| o.price));
    let offered = (zones.len() <= MAX_MASKED_ZONES)
        .then(|| {
            let mut mask = 0u64;
            for offering in &instance_type.offerings {
                let zone = zones
                    .iter()
                    .position(|z| z.name == offering.zone && z.id == offering.zone_id)?;
                let bit = offered_zone_bit(zone, offering.capacity_type)?;
                if offering.available {
                    mask |= bit;
                }
            }
            Some(mask)
        })
        .flatten();
    OfferingSummary { cheapest, offered }
}

/// Zones beyond which [`Catalog::offered_zones`] answers `None` (two bits
/// per zone in a `u64`).
pub const MAX_MASKED_ZONES: usize = 32;

/// The bit of [`Catalog::offered_zones`] for zone `zone` (an index into
/// [`Catalog::zones`]) and `capacity_type`; `None` for reserved capacity
/// and for zones past [`MAX_MASKED_ZONES`].
pub fn offered_zone_bit(zone: usize, capacity_type: CapacityType) -> Option<u64> {
    let slot = match capacity_type {
        CapacityType::OnDemand => 0,
        CapacityType::Spot => 1,
        CapacityType::Reserved => return None,
    };
    (zone < MAX_MASKED_ZONES).then(|| 1 << (2 * zone + slot))
}

const fn capacity_slot(capacity_type: CapacityType) -> usize {
    match capacity_type {
        CapacityType::OnDemand => 0,
        CapacityType::Spot => 1,
        CapacityType::Reserved => 2,
    }
}

impl Catalog {
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
        let summaries = types.iter().map(|t| summarize(&zones, t)).collect();
        Catalog {
            region,
            zones,
            types,
            by_price,
            type_requirements,
            summaries,
            reserved: Vec::new(),
        }
    }

    /// Every reserved offering, as (index into [`Catalog::instance_types`],
    /// index into that type's offerings), in the order added: empty unless
    /// capacity reservations were added.
    pub fn reserved_offerings(&self) -> &[(usize, usize)] {
        &self.reserved
    }

    /// The price of the cheapest available offering of the type at `index`
    /// (into [`Catalog::instance_types`]) with `capacity_type`, in any
    /// zone; kept in step with availability and price changes, so a caller
    /// can bound a type's price without walking its offerings.
    pub fn cheapest_price(&self, index: usize, capacity_type: CapacityType) -> Option<Price> {
        self.summaries
            .get(index)
            .and_then(|summary| summary.cheapest[capacity_slot(capacity_type)])
    }

    /// Where the type at `index` has an available offering, as a bit set:
    /// bit `2·z` for On-Demand and `2·z + 1` for Spot in zone `z` of
    /// [`Catalog::zones`]. Kept in step with availability, so a decider can
    /// test a type's offerings against allowed zones and capacity types
    /// with one `and`. `None` when the bits cannot say it all: the type has
    /// reserved offerings (whose reservation must be checked too), an
    /// offering outside the catalog's zones, or the catalog has more than
    /// [`MAX_MASKED_ZONES`] zones.
    pub fn offered_zones(&self, index: usize) -> Option<u64> {
        self.summaries
            .get(index)
            .and_then(|summary| summary.offered)
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
        let requirements = Arc::make_mut(&mut self.type_requirements);
        requirements[index] =
            self.types[index].requirements_after_availability_change(&requirements[index]);
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
                requirements[index] =
                    instance_type.requirements_after_availability_change(&requirements[index]);
                self.summaries[index] = summarize(&self.zones, instance_type);
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
            self.summaries[index] = summarize(&self.zones, &self.types[index]);
        }
        found.then_some(index)
    }

    /// Adds one `reserved` offering per reservation to its instance type,
    /// priced 0 (see [`super::reservation`]), with the reservation's whole
    /// count left; available when the count is above zero and the zone is
    /// one of the catalog's. Reservations for types or zones the catalog
    /// lacks are skipped (callers check them where they are written).
    pub fn add_reservations<'r>(
        &mut self,
        reservations: impl IntoIterator<Item = &'r CapacityReservation>,
    ) {
        let requirements = Arc::make_mut(&mut self.type_requirements);
        for reservation in reservations {
            let Ok(index) = self
                .types
                .binary_search_by(|t| t.spec.name.as_str().cmp(&reservation.instance_type))
            else {
                continue;
            };
            let Some(zone) = self.zones.iter().find(|z| z.name == reservation.zone) else {
                continue;
            };
            let instance_type = &mut self.types[index];
            instance_type.offerings.push(Offering {
                zone: zone.name,
                zone_id: zone.id,
                capacity_type: CapacityType::Reserved,
                price: Price::ZERO,
                available: reservation.count > 0,
                interruption_band: None,
                reservation: Some(OfferingReservation {
                    id: reservation.id,
                    reservation_type: reservation.reservation_type,
                    capacity: reservation.count,
                    rank: instance_type.on_demand_price,
                }),
            });
            self.reserved
                .push((index, instance_type.offerings.len() - 1));
            requirements[index] = instance_type.requirements();
            self.summaries[index] = summarize(&self.zones, instance_type);
        }
    }

    /// Sets what reservation `id` has left and whether it is expiring: its
    /// offerings are available while it has instances left and is not
    /// expiring. Returns whether any offering changed.
    pub fn set_reservation(&mut self, id: &str, capacity: u32, expiring: bool) -> bool {
        let available = capacity > 0 && !expiring;
        let mut changed = false;
        for &(index, o) in &self.reserved {
            let instance_type = &mut self.types[index];
            let offering = &mut instance_type.offerings[o];
            let Some(reservation) = offering.reservation.as_mut() else {
                continue;
            };
            if reservation.id == id
                && (reservation.capacity != capacity || offering.available != available)
            {
                reservation.capacity = capacity;
                offering.available = available;
                changed = true;
                let requirements = Arc::make_mut(&mut self.type_requirements);
                requirements[index] =
                    instance_type.requirements_after_availability_change(&requirements[index]);
                self.summaries[index] = summarize(&self.zones, instance_type);
            }
        }
        changed
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::fake;

    /// The bits of `offered_zones`, read back as (zone, capacity type).
    fn offered(catalog: &Catalog, index: usize) -> Option<Vec<(&'static str, CapacityType)>> {
        let mask = catalog.offered_zones(index)?;
        let mut pairs = Vec::new();
        for (z, zone) in catalog.zones().iter().enumerate() {
            for capacity_type in [CapacityType::OnDemand, CapacityType::Spot] {
                if mask & offered_zone_bit(z, capacity_type).unwrap() != 0 {
                    pairs.push((zone.name, capacity_type));
                }
            }
        }
        Some(pairs)
    }

    /// Every type's available offerings, in the same order.
    fn available(catalog: &Catalog, index: usize) -> Vec<(&'static str, CapacityType)> {
        let mut pairs = Vec::new();
        for zone in catalog.zones() {
            for capacity_type in [CapacityType::OnDemand, CapacityType::Spot] {
                if catalog.instance_types()[index]
                    .offerings
                    .iter()
                    .any(|o| o.available && o.zone == zone.name && o.capacity_type == capacity_type)
                {
                    pairs.push((zone.name, capacity_type));
                }
            }
        }
        pairs
    }

    /// The offered-zone bits follow availability through every change
    /// (an insufficient-capacity mark, a zone restriction), and say
    /// nothing for a type with a reserved offering.
    #[test]
    fn offered_zones_follow_availability() {
        let mut catalog = fake::instance_types(4);
        for index in 0..catalog.len() {
            assert_eq!(offered(&catalog, index), Some(available(&catalog, index)));
        }
        // Upstream's fake offerings: on-demand in zones 1-3, spot in 1-2.
        assert_eq!(available(&catalog, 0).len(), 5);
        assert!(catalog.mark_unavailable("fake-it-1", "test-zone-2", CapacityType::Spot));
        catalog.restrict_to_zones(&["test-zone-1".to_string(), "test-zone-2".to_string()]);
        for index in 0..catalog.len() {
            assert_eq!(offered(&catalog, index), Some(available(&catalog, index)));
        }
        assert_eq!(
            available(&catalog, 1),
            [
                ("test-zone-1", CapacityType::OnDemand),
                ("test-zone-1", CapacityType::Spot),
                ("test-zone-2", CapacityType::OnDemand),
            ]
        );
        catalog.add_reservations(&[crate::cloud::reservation::CapacityReservation {
            id: "cr-1",
            instance_type: "fake-it-2".to_string(),
            zone: "test-zone-1".to_string(),
            count: 1,
            reservation_type: crate::cloud::reservation::ReservationType::Default,
            end: None,
            tags: Default::default(),
            owner_id: None,
            price: Price::ZERO,
        }]);
        assert_eq!(offered(&catalog, 2), None);
        assert_eq!(offered(&catalog, 3), Some(available(&catalog, 3)));
    }
}
