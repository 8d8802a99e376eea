//! Reserved capacity within one solve (core: scheduling/
//! reservationmanager.go, nodeclaim.go `offeringsToReserve`): how many
//! instances each reservation has left for the NodeClaims this solve
//! opens. A NodeClaim reserves, pessimistically, one instance of every
//! compatible reserved offering of its options (it could launch into any
//! of them), releases those a later pod's requirements rule out, and keeps
//! them until the solve ends; the launch is then pinned to them.

use std::collections::BTreeMap;

use super::template::{OfferingFilter, Template};
use crate::kube::requirements::Requirements;

/// Why a pod cannot join a NodeClaim without losing reserved capacity it
/// would otherwise get (upstream `ReservedOfferingError`): its decision is
/// deferred, never relaxed, and no lower-weight NodePool is tried.
pub(super) const NONE_LEFT: &str = "one or more instance types with compatible reserved offerings are available, but could not be reserved";
/// See [`NONE_LEFT`].
pub(super) const WOULD_REMOVE: &str = "satisfying updated nodeclaim constraints would remove all compatible reserved offering options";

/// Instances left per reservation id, for the NodeClaims of one solve.
#[derive(Debug, Clone, Default)]
pub(super) struct ReservationManager {
    capacity: BTreeMap<&'static str, u32>,
}

impl ReservationManager {
    /// What the templates' catalogs say each reservation has left (the
    /// smallest where catalogs disagree, as upstream takes it); `None`
    /// when no catalog has a reserved offering.
    pub fn new(templates: &[Template<'_>]) -> Option<ReservationManager> {
        let mut capacity: BTreeMap<&'static str, u32> = BTreeMap::new();
        for template in templates {
            let catalog = template.catalog;
            for &(t, o) in catalog.reserved_offerings() {
                let Some(r) = catalog.instance_types()[t].offerings[o].reservation else {
                    continue;
                };
                capacity
                    .entry(r.id)
                    .and_modify(|c| *c = (*c).min(r.capacity))
                    .or_insert(r.capacity);
            }
        }
        (!capacity.is_empty()).then_some(ReservationManager { capacity })
    }

    /// The reservations a NodeClaim holding `held` should hold with
    /// `options` (sorted catalog indices) under `requirements`: every
    /// available compatible reserved offering of an option that it holds
    /// already or that has an instance left. In strict mode, losing every
    /// reservation it could have had is an error.
    pub fn to_reserve(
        &self,
        template: &Template<'_>,
        options: &[u32],
        requirements: &Requirements,
        held: &[&'static str],
        fallback: bool,
    ) -> Result<Vec<&'static str>, &'static str> {
        let catalog = template.catalog;
        let filter = OfferingFilter::new(requirements);
        let mut compatible = false;
        let mut reserved: Vec<&'static str> = Vec::new();
        for &(t, o) in catalog.reserved_offerings() {
            if options.binary_search(&(t as u32)).is_err() {
                continue;
            }
            let offering = &catalog.instance_types()[t].offerings[o];
            let Some(r) = offering.reservation else {
                continue;
            };
            if !filter.allows(offering) {
                continue;
            }
            compatible = true;
            if held.contains(&r.id) || self.capacity.get(r.id).is_some_and(|&c| c > 0) {
                reserved.push(r.id);
            }
        }
        reserved.sort_unstable();
        reserved.dedup();
        if !fallback {
            if compatible && reserved.is_empty() {
                return Err(NONE_LEFT);
            }
            if !held.is_empty() && reserved.is_empty() {
                return Err(WOULD_REMOVE);
            }
        }
        Ok(reserved)
    }

    /// A NodeClaim that held `held` now holds `reserved`: takes one
    /// instance of each new reservation and gives back the dropped ones.
    pub fn update(&mut self, held: &[&'static str], reserved: &[&'static str]) {
        for id in reserved.iter().filter(|id| !held.contains(id)) {
            if let Some(c) = self.capacity.get_mut(id) {
                *c = c.saturating_sub(1);
            }
        }
        for id in held.iter().filter(|id| !reserved.contains(id)) {
            if let Some(c) = self.capacity.get_mut(id) {
                *c += 1;
            }
        }
    }
}
