//! The launch decision of the AWS provider (aws: pkg/providers/instance/
//! instance.go, filter/filter.go): filter a NodeClaim's options (with the
//! reserved-capacity filters when `reserved` is allowed: one reservation
//! type, one capacity block, one reserved offering per zone), pick the
//! capacity type, then the cheapest (type, zone) offering of it — what the
//! AWS KWOK fake EC2 fleet does for both `lowest-price` (on-demand) and, as
//! an offline stand-in, `price-capacity-optimized` (spot). The decision
//! carries the whole CreateFleet request (its overrides in priority order),
//! so the engine can model EC2 answering for all of them at once.

use super::fit::{format_resources, min_values_shortfall};
use super::template::OfferingFilter;
use super::{FleetOverride, LaunchDecision, LaunchError, NewNodeClaim};
use crate::cloud::{CapacityType, Catalog, InstanceType, Offering, Price, ReservationType};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_INSTANCE_SIZE};
use crate::kube::requirements::{IntersectionProbe, Requirements};
use crate::kube::resources::ResourceKind;

/// The AWS provider's cap on types sent to CreateFleet.
pub const MAX_LAUNCH_INSTANCE_TYPES: usize = 60;

/// A candidate type with the offerings still allowed for it.
struct Candidate<'c> {
    index: usize,
    instance_type: &'c InstanceType,
    offerings: Vec<&'c Offering>,
}

impl Candidate<'_> {
    fn cheapest_price(&self) -> Option<Price> {
        self.offerings.iter().map(|o| o.price).min()
    }
}

/// One offering of the chosen capacity type, with what orders the
/// CreateFleet overrides: price, then a reserved offering's rank, then
/// the type's name (a catalog's types are in name order, so its index),
/// then the zone.
struct Choice<'c> {
    price: Price,
    rank: Option<Price>,
    type_index: usize,
    zone: &'static str,
    offering: &'c Offering,
    instance_type: &'c InstanceType,
}

pub(super) fn choose_offering(
    claim: &NewNodeClaim,
    catalog: &Catalog,
) -> Result<LaunchDecision, LaunchError> {
    let requirements = &claim.requirements;
    let allowed = OfferingFilter::new(requirements);
    let mut compatible = IntersectionProbe::new(requirements);
    // Compatible and available, with room for the requests.
    let mut candidates: Vec<Candidate<'_>> = claim
        .instance_types
        .iter()
        .filter_map(|&index| {
            let instance_type = catalog.instance_types().get(index)?;
            if !compatible.intersects(&catalog.type_requirements()[index])
                || !claim.requests.fits(&instance_type.allocatable)
            {
                return None;
            }
            let offerings: Vec<&Offering> = instance_type
                .offerings
                .iter()
                .filter(|o| allowed.allows(o))
                .collect();
            (!offerings.is_empty()).then_some(Candidate {
                index,
                instance_type,
                offerings,
            })
        })
        .collect();
    if candidates.is_empty() {
        return Err(LaunchError::InsufficientCapacity(format!(
            "none of {} instance types has an available offering and room for {}",
            claim.instance_types.len(),
            format_resources(&claim.requests)
        )));
    }
    if requirements
        .get(LABEL_CAPACITY_TYPE)
        .is_none_or(|r| r.has(CapacityType::Reserved.label()))
    {
        keep_one_reservation_type(&mut candidates);
        keep_one_reserved_offering_per_zone(&mut candidates);
    }
    let min_values = requirements.has_min_values();
    if !min_values {
        drop_exotic(&mut candidates);
        drop_pricey_spot(&mut candidates, requirements);
    }
    // A catalog's types are in name order, so their indices order them by
    // name (upstream's tie-break) without comparing the names.
    candidates.sort_by_cached_key(|c| (c.cheapest_price(), c.index));
    candidates.truncate(MAX_LAUNCH_INSTANCE_TYPES);
    // The provider's `Truncate` checks minValues under Strict only.
    if min_values && claim.min_values_relaxed.is_none() {
        let type_requirements = catalog.type_requirements();
        let kept: Vec<u32> = candidates.iter().map(|c| c.index as u32).collect();
        if let Some(shortfall) = min_values_shortfall(&kept, requirements, type_requirements) {
            return Err(LaunchError::InsufficientCapacity(format!(
                "minValues not met by the {MAX_LAUNCH_INSTANCE_TYPES} cheapest instance types: {shortfall}"
            )));
        }
    }
    let capacity_allowed = |ct: CapacityType| {
        requirements
            .get(LABEL_CAPACITY_TYPE)
            .is_none_or(|r| r.has(ct.label()))
    };
    let offered = |ct: CapacityType| {
        candidates
            .iter()
            .any(|c| c.offerings.iter().any(|o| o.capacity_type == ct))
    };
    let capacity_type = [CapacityType::Reserved, CapacityType::Spot]
        .into_iter()
        .find(|&ct| capacity_allowed(ct) && offered(ct))
        .unwrap_or(CapacityType::OnDemand);
    let mut choices: Vec<Choice<'_>> = candidates
        .iter()
        .flat_map(|c| {
            c.offerings.iter().map(move |o| Choice {
                price: o.price,
                rank: rank(o),
                type_index: c.index,
                zone: o.zone,
                offering: o,
                instance_type: c.instance_type,
            })
        })
        .filter(|choice| choice.offering.capacity_type == capacity_type)
        .collect();
    choices.sort_by(|a, b| {
        (a.price, a.rank, a.type_index, a.zone).cmp(&(b.price, b.rank, b.type_index, b.zone))
    });
    let Some(first) = choices.first() else {
        return Err(LaunchError::InsufficientCapacity(format!(
            "no available {capacity_type} offering among {} instance types",
            candidates.len()
        )));
    };
    let (offering, instance_type, type_index) =
        (first.offering, first.instance_type, first.type_index);
    let overrides = choices
        .iter()
        .map(|c| FleetOverride {
            instance_type: c.type_index,
            zone: c.zone,
            price: c.price,
            reservation: c.offering.reservation.map(|r| r.id),
        })
        .collect();
    Ok(LaunchDecision {
        overrides,
        instance_type: type_index,
        zone: offering.zone,
        capacity_type,
        price: offering.price,
        reservation: offering.reservation.map(|r| r.id),
        compatible_offerings: choices.len(),
        explanation: format!(
            "cheapest of {} compatible offerings: {} {} {} {}/h",
            choices.len(),
            instance_type.name(),
            capacity_type,
            offering.zone,
            offering.price
        ),
    })
}

/// A reserved offering's place among equally priced reserved offerings:
/// its type's On-Demand price, as upstream's `price / 10⁷` orders them.
fn rank(o: &Offering) -> Option<Price> {
    o.reservation.map(|r| r.rank)
}

/// The cheapest (price, rank) of a candidate's reserved offerings of
/// `reservation_type`.
fn cheapest_reserved(
    c: &Candidate<'_>,
    reservation_type: ReservationType,
) -> Option<(Price, Price)> {
    c.offerings
        .iter()
        .filter_map(|o| {
            let r = o.reservation?;
            (r.reservation_type == reservation_type).then_some((o.price, r.rank))
        })
        .min()
}

/// Upstream `CapacityReservationTypeFilter` and `CapacityBlockFilter`:
/// CreateFleet takes one market type, so only the reservation type whose
/// cheapest offering is cheapest (ties: ODCRs before capacity blocks) is
/// kept, each of its types with only those reserved offerings; the types
/// without one are dropped. A capacity block goes alone: the one type with
/// the cheapest capacity-block offering, with that offering only. Nothing
/// changes when no candidate has a reserved offering.
fn keep_one_reservation_type(candidates: &mut Vec<Candidate<'_>>) {
    let best = [ReservationType::Default, ReservationType::CapacityBlock]
        .into_iter()
        .filter_map(|t| {
            let cheapest = candidates
                .iter()
                .filter_map(|c| cheapest_reserved(c, t))
                .min()?;
            Some((cheapest, t.priority(), t))
        })
        .min();
    let Some((_, _, chosen)) = best else {
        return;
    };
    candidates.retain_mut(|c| {
        c.offerings
            .retain(|o| o.reservation.is_some_and(|r| r.reservation_type == chosen));
        !c.offerings.is_empty()
    });
    if chosen == ReservationType::CapacityBlock {
        let keep = candidates
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| cheapest_reserved(c, chosen))
            .map(|(i, _)| i);
        if let Some(keep) = keep {
            let mut kept = candidates.swap_remove(keep);
            let offering = kept
                .offerings
                .iter()
                .copied()
                .min_by_key(|o| (o.price, rank(o)));
            kept.offerings = offering.into_iter().collect();
            candidates.clear();
            candidates.push(kept);
        }
    }
}

/// Upstream `ReservedOfferingFilter`: CreateFleet takes one offering per
/// (type, zone) pool, so of a type's reserved offerings in one zone only
/// the one with the most instances left stays.
fn keep_one_reserved_offering_per_zone(candidates: &mut [Candidate<'_>]) {
    for c in candidates.iter_mut() {
        let mut best: Vec<&Offering> = Vec::new();
        for &o in &c.offerings {
            let Some(r) = o.reservation else {
                best.push(o);
                continue;
            };
            match best
                .iter_mut()
                .find(|b| b.reservation.is_some() && b.zone == o.zone)
            {
                Some(current) => {
                    if current.reservation.is_some_and(|k| r.capacity > k.capacity) {
                        *current = o;
                    }
                }
                None => best.push(o),
            }
        }
        c.offerings = best;
    }
}

/// Drops bare-metal and accelerator types while a generic type remains.
fn drop_exotic(candidates: &mut Vec<Candidate<'_>>) {
    let exotic = |it: &InstanceType| {
        it.label(LABEL_INSTANCE_SIZE)
            .is_some_and(|s| s.contains("metal"))
            || [
                ResourceKind::AwsNeuron,
                ResourceKind::AwsNeuronCore,
                ResourceKind::AmdGpu,
                ResourceKind::NvidiaGpu,
                ResourceKind::HabanaGaudi,
            ]
            .iter()
            .any(|&k| it.capacity.get(k) != 0)
    };
    if candidates.iter().any(|c| !exotic(c.instance_type)) {
        candidates.retain(|c| !exotic(c.instance_type));
    }
}

/// When both spot and on-demand are allowed and offered, drops spot
/// offerings pricier than the cheapest on-demand one.
fn drop_pricey_spot(candidates: &mut Vec<Candidate<'_>>, requirements: &Requirements) {
    if let Some(ct) = requirements.get(LABEL_CAPACITY_TYPE)
        && !(ct.has(CapacityType::Spot.label()) && ct.has(CapacityType::OnDemand.label()))
    {
        return;
    }
    let all = || candidates.iter().flat_map(|c| c.offerings.iter());
    let has_spot = all().any(|o| o.capacity_type == CapacityType::Spot);
    let Some(cheapest_on_demand) = all()
        .filter(|o| o.capacity_type == CapacityType::OnDemand)
        .map(|o| o.price)
        .min()
    else {
        return;
    };
    if !has_spot {
        return;
    }
    for c in candidates.iter_mut() {
        c.offerings
            .retain(|o| o.capacity_type != CapacityType::Spot || o.price <= cheapest_on_demand);
    }
    candidates.retain(|c| !c.offerings.is_empty());
}
