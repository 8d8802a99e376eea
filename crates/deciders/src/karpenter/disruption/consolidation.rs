//! The consolidation decision for a set of candidate nodes (core:
//! disruption/consolidation.go `computeConsolidation`,
//! `computeSpotToSpotConsolidation`; multinodeconsolidation.go
//! `filterOutSameInstanceType`; cloudprovider/types.go `WorstLaunchPrice`,
//! `SatisfiesMinValues`; scheduling/nodeclaim.go
//! `RemoveInstanceTypeOptionsByPriceAndMinValues`).
//!
//! Consolidation is always N → 0 (delete) or N → 1 (replace with one
//! cheaper NodeClaim); anything else is a no-op. [`consolidate`] simulates
//! and decides, [`consolidation_command`] makes the command: what the
//! multi- and single-node methods share.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::explain;
use super::reasons::{MinValuesNotMet, SchedulingErrors, Unconsolidatable};
pub use super::reasons::{NO_CHEAPER_NODE, SPOT_TO_SPOT_DISABLED};
use super::simulate::{PodsToPlace, Simulation, SimulationView};
use super::types::{Candidate, Command, Method, PassInput};
use crate::cloud::{CapacityType, Catalog, InstanceType, Price};
use crate::karpenter::provisioning::{Closure, NewNodeClaim, OfferingKeys, Prepared, PriceToBeat};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_TOPOLOGY_ZONE};
use crate::kube::requirements::{IntersectionProbe, Requirement, Requirements};
use crate::nodepool::DisruptionReason;
use crate::pdb::PdbLimits;
use crate::scheduler::{NodeId, PodId};

/// Upstream `MinInstanceTypesForSpotToSpotConsolidation`.
pub const MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT: usize = 15;

/// What consolidating a set of candidates would do.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing; with upstream's `Unconsolidatable` reason when a single
    /// candidate was evaluated.
    NoOp(Option<Unconsolidatable>),
    /// Delete the candidates: their pods fit elsewhere.
    Delete,
    /// Replace the candidates with this one cheaper NodeClaim.
    Replace(NewNodeClaim),
}

/// The consolidation decision for `candidates`, simulated on `view` over
/// `closure` (the view's, or a copy of it). `quiet` when no reason is
/// wanted for a no-op: the simulation then stops once the outcome is sure
/// to be one whatever the rest of the pods do (see
/// [`SimulationView::simulate_on`]), and the no-op carries no reason.
pub(crate) fn consolidate(
    input: &PassInput<'_>,
    pdbs: &PdbLimits,
    view: &SimulationView,
    candidates: &[&Candidate],
    closure: &Closure,
    quiet: bool,
) -> Decision {
    consolidate_traced(input, pdbs, view, candidates, closure, quiet).0
}

/// [`consolidate`], with the pods its simulation placed and where it put
/// them on existing nodes (what a kept verdict rests on).
pub(crate) fn consolidate_traced(
    input: &PassInput<'_>,
    pdbs: &PdbLimits,
    view: &SimulationView,
    candidates: &[&Candidate],
    closure: &Closure,
    quiet: bool,
) -> (Decision, SimulationTrace) {
    let quiet_price = quiet.then(|| price_to_beat(input, candidates));
    let mut simulation = view.simulate_on(input, pdbs, candidates, closure, quiet_price);
    let trace = SimulationTrace {
        pods: std::mem::take(&mut simulation.pods),
        placed_on_existing: std::mem::take(&mut simulation.placed_on_existing),
        stopped_on: simulation.result.stopped_on.take(),
    };
    // A quiet no-op needs no reason: the pods that would not schedule are
    // not named.
    if quiet && !simulation.all_non_pending_scheduled() {
        return (Decision::NoOp(None), trace);
    }
    let decision = match decide_consolidation(input, candidates, simulation) {
        Decision::NoOp(_) if quiet => Decision::NoOp(None),
        decision => decision,
    };
    (decision, trace)
}

/// What a consolidation simulation placed, and where on existing nodes.
#[derive(Debug, Clone, Default)]
pub(crate) struct SimulationTrace {
    /// The pods given to the solve, in order, and the candidates' own.
    pub pods: Arc<PodsToPlace>,
    /// Pods the solve put on existing nodes.
    pub placed_on_existing: Vec<(PodId, NodeId)>,
    /// The pods the solve took from its queue before a stop ended it, if
    /// one did (see `SchedulingResult::stopped_on`).
    pub stopped_on: Option<Vec<PodId>>,
}

/// A consolidation decision turned into `method`'s command (no-ops give
/// `None`).
pub(crate) fn consolidation_command(
    input: &PassInput<'_>,
    method: Method,
    candidates: &[&Candidate],
    decision: Decision,
) -> Option<Command> {
    let replacements = match decision {
        Decision::NoOp(_) => return None,
        Decision::Delete => Vec::new(),
        Decision::Replace(claim) => vec![claim],
    };
    let savings = estimated_savings(candidates, &replacements, input);
    Some(Command {
        method,
        reason: DisruptionReason::Underutilized,
        candidates: candidates.iter().map(|c| c.node).collect(),
        explanation: explain::consolidation(input, candidates, &replacements, savings),
        replacements,
        estimated_savings: savings,
        needs_validation: true,
    })
}

/// Whether a requirement set lets a capacity type through (a missing key
/// allows everything).
pub fn allows_capacity_type(requirements: &Requirements, ct: CapacityType) -> bool {
    requirements
        .get(LABEL_CAPACITY_TYPE)
        .is_none_or(|r| r.has(ct.label()))
}

/// The price a launch of `it` under `requirements` could cost at worst:
/// the most expensive available compatible offering of the capacity type
/// that would be launched (reserved before spot before on-demand).
pub fn worst_launch_price(it: &InstanceType, requirements: &Requirements) -> Option<Price> {
    worst_price_under(it, &OfferingKeys::new(requirements))
}

fn worst_price_under(it: &InstanceType, keys: &OfferingKeys<'_>) -> Option<Price> {
    [
        CapacityType::Reserved,
        CapacityType::Spot,
        CapacityType::OnDemand,
    ]
    .into_iter()
    .find_map(|ct| {
        it.offerings
            .iter()
            .filter(|o| o.available && o.capacity_type == ct && keys.allows(o))
            .map(|o| o.price)
            .max()
    })
}

/// The cheapest available offering of `it` allowed by `requirements`.
pub fn cheapest_launch_price(it: &InstanceType, requirements: &Requirements) -> Option<Price> {
    it.offerings
        .iter()
        .filter(|o| o.available && o.is_compatible(requirements))
        .map(|o| o.price)
        .min()
}

/// Upstream `SatisfiesMinValues` over options in order: how many of the
/// first options it takes to meet every `minValues` (0 without any), or the
/// keys still short after all of them.
pub fn min_values_needed(
    options: &[usize],
    catalog: &Catalog,
    requirements: &Requirements,
) -> Result<usize, Vec<String>> {
    let keyed: Vec<(&str, usize)> = requirements
        .iter()
        .filter_map(|r| r.min_values().map(|m| (r.key(), m as usize)))
        .collect();
    if keyed.is_empty() {
        return Ok(0);
    }
    let mut values: Vec<BTreeSet<String>> = vec![BTreeSet::new(); keyed.len()];
    for (i, &index) in options.iter().enumerate() {
        let Some(type_requirements) = catalog.type_requirements().get(index) else {
            continue;
        };
        for ((key, _), seen) in keyed.iter().zip(values.iter_mut()) {
            if let Some(r) = type_requirements.get(key)
                && !r.is_complement()
            {
                seen.extend(r.values().iter().cloned());
            }
        }
        if keyed
            .iter()
            .zip(&values)
            .all(|((_, min), v)| v.len() >= *min)
        {
            return Ok(i + 1);
        }
    }
    Err(keyed
        .iter()
        .zip(&values)
        .filter(|((_, min), v)| v.len() < *min)
        .map(|((key, _), _)| key.to_string())
        .collect())
}

/// Upstream `RemoveInstanceTypeOptionsByPriceAndMinValues`: keeps options
/// whose worst launch price is below `max_price`, then re-checks minValues
/// (`Err` with the keys when they no longer hold). The prices
/// come from `prepared`'s table when there is one.
pub fn remove_options_by_price(
    claim: &mut NewNodeClaim,
    catalog: &Catalog,
    max_price: Price,
    prepared: Option<&Prepared>,
) -> Result<(), MinValuesNotMet> {
    let keys = OfferingKeys::new(&claim.requirements);
    let walk = |i: usize| {
        catalog
            .instance_types()
            .get(i)
            .and_then(|it| worst_price_under(it, &keys))
    };
    let table = prepared.map(|prepared| {
        prepared.worst_launch_prices(claim.nodepool, keys.as_array(), || {
            (0..catalog.len()).map(walk).collect()
        })
    });
    claim.instance_types.retain(|&i| {
        let worst = match &table {
            Some(table) => table.get(i).copied().flatten(),
            None => walk(i),
        };
        worst.is_some_and(|p| p < max_price)
    });
    min_values_needed(&claim.instance_types, catalog, &claim.requirements)
        .map(|_| ())
        .map_err(MinValuesNotMet)
}

/// Σ candidate prices − the cheapest available offering of the first
/// (cheapest) option of each replacement (all candidate prices for a
/// delete).
pub(crate) fn estimated_savings(
    candidates: &[&Candidate],
    replacements: &[NewNodeClaim],
    input: &PassInput<'_>,
) -> Price {
    let source = candidates.iter().fold(Price::ZERO, |sum, c| sum + c.price);
    let destination = replacements.iter().fold(Price::ZERO, |sum, claim| {
        let catalog = input.nodepools.get(claim.nodepool).map(|c| c.catalog);
        let price = claim
            .instance_types
            .first()
            .and_then(|&i| catalog?.instance_types().get(i))
            .and_then(|it| cheapest_launch_price(it, &claim.requirements))
            .unwrap_or(Price::ZERO);
        sum + price
    });
    Price::from_micros(source.micros() - destination.micros())
}

fn total_price(candidates: &[&Candidate]) -> Price {
    candidates.iter().fold(Price::ZERO, |sum, c| sum + c.price)
}

/// Whether every candidate is a spot node.
fn all_spot(input: &PassInput<'_>, candidates: &[&Candidate]) -> bool {
    candidates.iter().all(|c| {
        input
            .cluster
            .node(c.node)
            .and_then(|n| n.claim.as_ref())
            .is_some_and(|claim| claim.capacity_type == CapacityType::Spot)
    })
}

/// What the one NodeClaim replacing `candidates` must undercut for
/// [`decide_consolidation`] to replace them: their total price, by an
/// offering of a capacity type the claim allows; spot ones do not count
/// when every candidate is spot and spot-to-spot consolidation is off (a
/// claim that allows spot is then refused). A claim that cannot is a no-op.
pub(crate) fn price_to_beat(input: &PassInput<'_>, candidates: &[&Candidate]) -> PriceToBeat {
    PriceToBeat {
        price: total_price(candidates),
        spot: input.options.spot_to_spot_consolidation || !all_spot(input, candidates),
    }
}

/// The consolidation decision for `candidates` given the simulation of
/// removing them (consolidation simulations close the nodes inside their
/// `consolidateAfter` window).
pub(crate) fn decide_consolidation(
    input: &PassInput<'_>,
    candidates: &[&Candidate],
    simulation: Simulation,
) -> Decision {
    let single = candidates.len() == 1;
    let note = |reason: Unconsolidatable| Decision::NoOp(single.then_some(reason));
    if !simulation.all_non_pending_scheduled() {
        return note(Unconsolidatable::PodsWouldNotSchedule(
            SchedulingErrors::new(input.cluster, &simulation.non_pending_errors),
        ));
    }
    let mut claims = simulation.result.new_nodeclaims;
    match claims.len() {
        0 => return Decision::Delete,
        1 => {}
        n => return note(Unconsolidatable::WouldCreate(n)),
    }
    let mut claim = claims.remove(0);
    let Some(catalog) = input.nodepools.get(claim.nodepool).map(|c| c.catalog) else {
        return Decision::NoOp(None);
    };
    let candidate_price = candidates.iter().fold(Price::ZERO, |sum, c| sum + c.price);
    let all_spot = candidates.iter().all(|c| {
        input
            .cluster
            .node(c.node)
            .and_then(|n| n.claim.as_ref())
            .is_some_and(|claim| claim.capacity_type == CapacityType::Spot)
    });
    if all_spot && allows_capacity_type(&claim.requirements, CapacityType::Spot) {
        return spot_to_spot(input, catalog, claim, candidate_price, single);
    }
    if let Err(e) = remove_options_by_price(&mut claim, catalog, candidate_price, input.prepared) {
        return note(Unconsolidatable::FilteringByPrice(e));
    }
    if claim.instance_types.is_empty() {
        return note(Unconsolidatable::NoCheaperNode);
    }
    // An on-demand → spot move must not fall back to a pricier on-demand
    // launch.
    if allows_capacity_type(&claim.requirements, CapacityType::Spot)
        && allows_capacity_type(&claim.requirements, CapacityType::OnDemand)
    {
        pin_to_spot(&mut claim);
    }
    Decision::Replace(claim)
}

fn pin_to_spot(claim: &mut NewNodeClaim) {
    claim.requirements.add(Requirement::in_values(
        LABEL_CAPACITY_TYPE,
        [CapacityType::Spot.label()],
    ));
}

/// Spot candidates replaced by a spot NodeClaim: gated, and for a single
/// node only with enough cheaper spot types to keep the replacement from
/// chasing the cheapest (most interrupted) pools.
fn spot_to_spot(
    input: &PassInput<'_>,
    catalog: &Catalog,
    mut claim: NewNodeClaim,
    candidate_price: Price,
    single: bool,
) -> Decision {
    let note = |reason: Unconsolidatable| Decision::NoOp(single.then_some(reason));
    if !input.options.spot_to_spot_consolidation {
        return note(Unconsolidatable::SpotToSpotDisabled);
    }
    pin_to_spot(&mut claim);
    let requirements = &claim.requirements;
    let mut compatible_with = IntersectionProbe::new(requirements);
    claim.instance_types.retain(|&i| {
        catalog.instance_types().get(i).is_some_and(|it| {
            compatible_with.intersects(&catalog.type_requirements()[i])
                && it
                    .offerings
                    .iter()
                    .any(|o| o.available && o.is_compatible(requirements))
        })
    });
    if let Err(e) = remove_options_by_price(&mut claim, catalog, candidate_price, input.prepared) {
        return note(Unconsolidatable::FilteringByPrice(e));
    }
    if claim.instance_types.is_empty() {
        return note(Unconsolidatable::NoCheaperNode);
    }
    if !single {
        return Decision::Replace(claim);
    }
    let cheaper = claim.instance_types.len();
    if cheaper < MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT {
        return note(Unconsolidatable::SpotToSpotTooFewOptions {
            needed: MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT,
            got: cheaper,
        });
    }
    let needed =
        min_values_needed(&claim.instance_types, catalog, &claim.requirements).unwrap_or(cheaper);
    claim
        .instance_types
        .truncate(MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT.max(needed));
    Decision::Replace(claim)
}

/// Multi-node's `filterOutSameInstanceType`: when an option is the
/// instance type of one of the candidates, drop every option that costs at
/// least the cheapest such candidate's offering (deleting one of the nodes
/// would then be the better move). `Err` when minValues no longer hold.
pub(crate) fn filter_out_same_instance_type(
    input: &PassInput<'_>,
    claim: &mut NewNodeClaim,
    candidates: &[&Candidate],
) -> Result<(), MinValuesNotMet> {
    let Some(catalog) = input.nodepools.get(claim.nodepool).map(|c| c.catalog) else {
        return Ok(());
    };
    // Cheapest offering of each candidate's type in its own zone and
    // capacity type (upstream leaves types without one at price 0).
    let mut existing: BTreeMap<String, Option<Price>> = BTreeMap::new();
    for candidate in candidates {
        let Some(node) = input.cluster.node(candidate.node) else {
            continue;
        };
        let Some(node_claim) = &node.claim else {
            continue;
        };
        let own_catalog = input
            .nodepools
            .iter()
            .find(|c| *c.pool.name == *node_claim.nodepool)
            .map(|c| c.catalog);
        let mut labels = Requirements::new();
        for key in [LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE] {
            if let Some(value) = node.labels.get(key) {
                labels.add(Requirement::in_values(key, [value]));
            }
        }
        let price = own_catalog
            .and_then(|c| c.get(&node_claim.instance_type))
            .and_then(|it| {
                it.offerings
                    .iter()
                    .filter(|o| o.is_compatible(&labels))
                    .map(|o| o.price)
                    .min()
            });
        let entry = existing
            .entry(node_claim.instance_type.clone())
            .or_insert(None);
        if let Some(p) = price {
            *entry = Some(entry.map_or(p, |e| e.min(p)));
        }
    }
    let max_price = claim
        .instance_types
        .iter()
        .filter_map(|&i| catalog.instance_types().get(i))
        .filter_map(|it| existing.get(it.name()))
        .map(|p| p.unwrap_or(Price::ZERO))
        .min();
    match max_price {
        Some(max_price) => remove_options_by_price(claim, catalog, max_price, input.prepared),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::nodeclass::NodeClassSettings;
    use crate::karpenter::provisioning::NodePoolContext;
    use crate::kube::resources::Resources;
    use crate::testing::pool;

    /// Filtering by price reads the same worst launch prices from a kept
    /// setup's table as from the offerings (us-east-1, spot and on-demand,
    /// with and without a zone, at $0.10 and $0.50), and asks the table of
    /// each set of offering requirements once.
    #[test]
    fn price_filter_reads_the_kept_table_like_the_offerings() {
        use karpsim_catalog::BundledCatalog;
        let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
        let pool = pool("default");
        let contexts = [NodePoolContext {
            pool: &pool,
            catalog: &catalog,
        }];
        let prepared = Prepared::new(&contexts, &[]);
        let both = Requirement::in_values(LABEL_CAPACITY_TYPE, ["spot", "on-demand"]);
        let on_demand = Requirement::in_values(LABEL_CAPACITY_TYPE, ["on-demand"]);
        let zone = Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["us-east-1b"]);
        for extra in [vec![both.clone()], vec![on_demand], vec![both, zone]] {
            let mut requirements = Requirements::new();
            for r in extra {
                requirements.add(r);
            }
            let claim = NewNodeClaim {
                nodepool: 0,
                requirements,
                instance_types: (0..catalog.len()).collect(),
                pods: Vec::new(),
                requests: Resources::ZERO,
                min_values_relaxed: None,
            };
            for max in [100_000, 500_000] {
                let max = Price::from_micros(max);
                let (mut kept, mut walked) = (claim.clone(), claim.clone());
                remove_options_by_price(&mut kept, &catalog, max, Some(&prepared)).unwrap();
                remove_options_by_price(&mut walked, &catalog, max, None).unwrap();
                assert_eq!(kept.instance_types, walked.instance_types);
                assert!(!kept.instance_types.is_empty());
                assert!(kept.instance_types.len() < catalog.len());
            }
            let keys = OfferingKeys::new(&claim.requirements).as_array();
            let first = prepared.worst_launch_prices(0, keys, || unreachable!("kept"));
            assert_eq!(first.len(), catalog.len());
        }
    }
}
