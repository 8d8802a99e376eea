//! The scenario's capacity reservations made ready for runs: each checked
//! against the region's catalog (the instance type exists and is sold in
//! the reservation's zone) and priced (its `price`, else the type's
//! On-Demand price, what an ODCR is billed per reserved instance-hour);
//! then, per variant, added as `reserved` offerings to the catalogs of the
//! NodePools whose EC2NodeClass selects them.

use std::collections::BTreeSet;

use super::prepare::PrepareError;
use super::{Position, Problem, Scenario, ScenarioError};
use crate::cloud::reservation::{CapacityReservation, ReservationSelectorTerm, select};
use crate::cloud::{CapacityType, Catalog};
use crate::sim::engine::PoolSetup;

/// Every `capacityReservations` entry, checked and priced from `catalog`
/// (the region's, default EC2NodeClass settings: names, zones and prices
/// do not depend on them).
pub(super) fn resolve(
    scenario: &Scenario,
    catalog: &Catalog,
) -> Result<Vec<CapacityReservation>, PrepareError> {
    let file = || {
        let source = &scenario.source;
        std::env::current_dir()
            .ok()
            .and_then(|cwd| source.strip_prefix(cwd).ok().map(|p| p.to_path_buf()))
            .unwrap_or_else(|| source.clone())
            .display()
            .to_string()
    };
    let invalid = |position: Position, field: &str, problem: Problem| {
        PrepareError::Reservation(ScenarioError::Invalid {
            file: file(),
            position,
            field: field.to_string(),
            problem: Box::new(problem),
        })
    };
    let mut out = Vec::with_capacity(scenario.capacity_reservations.len());
    for spec in &scenario.capacity_reservations {
        let written = &spec.instance_type;
        let Some(instance_type) = catalog.get(&written.name) else {
            let names = catalog.instance_types().iter().map(|t| t.name());
            let hint = crate::suggest::closest(&written.name, names)
                .map(|near| format!(" (did you mean {near:?}?)"))
                .unwrap_or_default();
            let problem = Problem::UnknownInstanceType {
                name: written.name.clone(),
                region: scenario.region.clone(),
                hint,
            };
            return Err(invalid(written.position, &written.field, problem));
        };
        let sold_in_zone = instance_type
            .offerings
            .iter()
            .any(|o| o.capacity_type == CapacityType::OnDemand && o.zone == spec.zone);
        if !sold_in_zone {
            let problem = Problem::NotSoldInZone {
                name: written.name.clone(),
                zone: spec.zone.clone(),
            };
            return Err(invalid(written.position, &written.field, problem));
        }
        out.push(CapacityReservation {
            id: spec.id,
            instance_type: written.name.clone(),
            zone: spec.zone.clone(),
            count: spec.count,
            reservation_type: spec.reservation_type,
            end: spec.end,
            tags: spec.tags.clone(),
            owner_id: spec.owner_id.clone(),
            price: spec.price.unwrap_or(instance_type.on_demand_price),
        });
    }
    Ok(out)
}

/// Adds to each pool's catalog the reservations its EC2NodeClass's terms
/// (`terms`, per pool) select; returns the ids of those selected.
pub(super) fn add_to_pools(
    pools: &mut [PoolSetup],
    terms: &[Vec<ReservationSelectorTerm>],
    reservations: &[CapacityReservation],
) -> BTreeSet<&'static str> {
    let mut used = BTreeSet::new();
    for (setup, terms) in pools.iter_mut().zip(terms) {
        let selected = select(terms, reservations);
        used.extend(selected.iter().map(|r| r.id));
        setup.catalog.add_reservations(selected);
    }
    used
}
