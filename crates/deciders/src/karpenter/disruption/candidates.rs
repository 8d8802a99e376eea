//! Disruption candidates (core: disruption/types.go `NewCandidate`,
//! state/statenode.go `ValidateNodeDisruptable` / `ValidatePodsDisruptable`,
//! the methods' `ShouldDisrupt` filters, and
//! nodeclaim/disruption/consolidation.go for `Consolidatable`).
//!
//! A rejection is a [`Rejection`] (see [`super::reasons`]), whose
//! sentence is the one upstream publishes as a `DisruptionBlocked` /
//! `Unconsolidatable` event, so users recognise it; so are the filters'
//! reasons.
//!
//! What a candidate reads of its node's labels and pods (which are active,
//! which need a new home, what evicting them costs) depends only on the
//! node and its pods, so a [`CandidateCache`] keeps it from pass to pass
//! for nodes whose revision did not change; what depends on time, PDBs or
//! budgets is evaluated every pass.

use std::collections::BTreeSet;
use std::sync::Arc;

use rayon::prelude::*;

pub use super::cache::CandidateCache;
use super::cache::NodeFacts;
use super::kept_pass::Horizon;
pub use super::reasons::Rejection;
use super::reasons::Unconsolidatable;
pub use super::types::{Candidate, DisruptionClass, PER_NODE_BASE_DISRUPTION_COST};
use super::types::{NodePoolsByName, PoolLookup, pool_lookup};
use crate::cluster::{Cluster, Node, NodeClaimInfo, NodeId, PodId};
use crate::nodepool::{ConsolidationPolicy, NodePool};
use crate::pdb::{EvictionBlock, PdbLimits};
use crate::pods::{do_not_disrupt_ends, is_disruptable, pod_key};
use crate::time::{SimDuration, SimTime};

/// What candidate selection reads.
#[derive(Debug, Clone, Copy)]
pub struct CandidateInputs<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// NodePools by name.
    pub pools: &'a NodePoolsByName<'a>,
    /// PDBs with their allowed disruptions.
    pub pdbs: &'a PdbLimits,
    /// Nodes already in the orchestration queue.
    pub in_flight: &'a BTreeSet<NodeId>,
    /// The decision instant.
    pub now: SimTime,
    /// Node facts kept from earlier passes, if the caller keeps them.
    pub cache: Option<&'a CandidateCache>,
    /// Where judgements that read `now` say when they would next change,
    /// if the caller keeps the pass.
    pub horizon: Option<&'a Horizon>,
}

impl CandidateInputs<'_> {
    /// A judgement read now may turn at `at`.
    fn turns_at(&self, at: SimTime) {
        if let Some(horizon) = self.horizon {
            horizon.turns_after(self.now, at);
        }
    }
}

/// `clamp((expireAfter − age) / expireAfter, 0, 1)`; 1 without expiry.
pub fn lifetime_remaining(node: &Node, claim: &NodeClaimInfo, now: SimTime) -> f64 {
    match claim.lifecycle.expire_after {
        Some(total) if !total.is_zero() => {
            let age = now.saturating_duration_since(node.created_at).as_millis() as f64;
            let total = total.as_millis() as f64;
            ((total - age) / total).clamp(0.0, 1.0)
        }
        // A zero lifetime is already over.
        Some(_) => 0.0,
        None => 1.0,
    }
}

/// The NodeClaim's `Consolidatable` condition: consolidation enabled, the
/// node initialized, and `consolidateAfter` elapsed since the last pod
/// event (or since initialization). Without a recorded initialization time
/// the node's creation time stands in.
pub fn is_consolidatable(
    node: &Node,
    claim: &NodeClaimInfo,
    pool: &NodePool,
    now: SimTime,
) -> bool {
    let Some(after) = pool.disruption.consolidate_after else {
        return false;
    };
    if !node.initialized {
        return false;
    }
    now.saturating_duration_since(consolidate_after_since(node, claim))
        >= SimDuration::from_std(after)
}

/// When `consolidateAfter` starts counting: the last pod event, else
/// initialization, else the node's creation.
pub(super) fn consolidate_after_since(node: &Node, claim: &NodeClaimInfo) -> SimTime {
    claim
        .lifecycle
        .last_pod_event_at
        .or(claim.lifecycle.initialized_at)
        .unwrap_or(node.created_at)
}

/// The instant from which [`is_consolidatable`] holds, if it may come to
/// hold with time alone.
fn consolidatable_from(node: &Node, claim: &NodeClaimInfo, pool: &NodePool) -> Option<SimTime> {
    let after = SimDuration::from_std(pool.disruption.consolidate_after?);
    node.initialized
        .then(|| consolidate_after_since(node, claim) + after)
}

/// The node-level checks (`ValidateNodeDisruptable`).
fn validate_node<'a, 'p>(
    inputs: &CandidateInputs<'_>,
    pools: &mut PoolLookup<'p, impl Fn(&str) -> Option<&'p NodePool>>,
    id: NodeId,
    node: &'a Node,
    facts: &NodeFacts,
) -> Result<(&'a NodeClaimInfo, &'p NodePool), Rejection> {
    if inputs.in_flight.contains(&id) {
        return Err(Rejection::AlreadyDisrupting);
    }
    let claim = node.claim.as_ref().ok_or(Rejection::NotManaged)?;
    if !node.registered && !node.initialized {
        return Err(Rejection::NoNode);
    }
    if !node.initialized {
        return Err(Rejection::NotInitialized);
    }
    if node.marked_for_deletion || claim.lifecycle.instance_terminating {
        return Err(Rejection::Deleting);
    }
    if let Some(until) = claim.lifecycle.nominated_until {
        inputs.turns_at(until);
        if until > inputs.now {
            return Err(Rejection::Nominated);
        }
    }
    if claim.lifecycle.do_not_disrupt {
        return Err(Rejection::NodeDoNotDisrupt);
    }
    let pool_name = &*facts.nodepool;
    if pool_name.is_empty() {
        return Err(Rejection::MissingNodePoolLabel);
    }
    let pool = pools
        .get(&facts.nodepool)
        .ok_or_else(|| Rejection::NodePoolNotFound(pool_name.to_string()))?;
    Ok((claim, pool))
}

/// The pod-level checks (`ValidatePodsDisruptable`): do-not-disrupt first
/// over all pods, then PDBs.
fn validate_pods(inputs: &CandidateInputs<'_>, facts: &NodeFacts) -> Result<(), Rejection> {
    let pod = |id: &PodId| inputs.cluster.pod(*id);
    // Only annotated pods can be protected; the first protected one in
    // node order is the first of all active pods.
    // A pod's protection, which also takes it out of its PDBs' reach, may
    // end with time.
    for pod in facts.protected.iter().filter_map(pod) {
        if let Some(ends) = do_not_disrupt_ends(pod) {
            inputs.turns_at(ends);
        }
        if !is_disruptable(pod, inputs.now) {
            return Err(Rejection::PodDoNotDisrupt(pod_key(pod)));
        }
    }
    let pods = facts.active.iter().filter_map(pod);
    inputs
        .pdbs
        .can_evict_all(pods, inputs.now)
        .map_err(|(_, block)| match block {
            EvictionBlock::Pdb(key) => Rejection::PdbBlocks(key),
            EvictionBlock::MultiplePdbs(keys) => Rejection::MultiplePdbs(keys),
        })
}

/// Builds the candidate for one node, or says why it is not one.
pub fn new_candidate(
    inputs: &CandidateInputs<'_>,
    id: NodeId,
    class: DisruptionClass,
) -> Result<Candidate, Rejection> {
    let node = inputs.cluster.node(id).ok_or(Rejection::NotManaged)?;
    candidate_with(
        inputs,
        &mut pool_lookup(inputs.pools),
        id,
        node,
        class,
        Arc::new(NodeFacts::of(inputs.cluster, node)),
    )
}

/// [`new_candidate`] with the node's facts.
fn candidate_with<'p>(
    inputs: &CandidateInputs<'_>,
    pools: &mut PoolLookup<'p, impl Fn(&str) -> Option<&'p NodePool>>,
    id: NodeId,
    node: &Node,
    class: DisruptionClass,
    facts: Arc<NodeFacts>,
) -> Result<Candidate, Rejection> {
    let (claim, pool) = validate_node(inputs, pools, id, node, &facts)?;
    if let Err(rejection) = validate_pods(inputs, &facts) {
        let eventual = class == DisruptionClass::Eventual
            && claim.lifecycle.termination_grace_period.is_some();
        if !(eventual && rejection.is_pod_block()) {
            return Err(rejection);
        }
    }
    // The disruption cost orders no method (only the pre-v1.14
    // `sort_by_disruption_cost`), so the time it reads reports no horizon.
    let disruption_cost = facts.all_pods_cost * lifetime_remaining(node, claim, inputs.now);
    let mut candidate = Candidate::new(id, facts, claim.price, inputs.cluster.name_order(id));
    candidate.disruption_cost = disruption_cost;
    candidate.consolidatable = is_consolidatable(node, claim, pool, inputs.now);
    if let Some(from) = consolidatable_from(node, claim, pool) {
        inputs.turns_at(from);
    }
    candidate.has_termination_grace_period = claim.lifecycle.termination_grace_period.is_some();
    Ok(candidate)
}

/// Every node's candidate or rejection, in node order (rejections of
/// unmanaged nodes included; upstream only publishes events for managed).
pub fn evaluate_nodes(
    inputs: &CandidateInputs<'_>,
    class: DisruptionClass,
) -> Vec<(NodeId, Result<Candidate, Rejection>)> {
    let Some(cache) = inputs.cache else {
        return inputs
            .cluster
            .nodes()
            .map(|(id, _)| (id, new_candidate(inputs, id, class)))
            .collect();
    };
    let facts = cache.facts_of_every_node(inputs.cluster);
    let nodes: Vec<_> = inputs.cluster.nodes().zip(facts).collect();
    // Each node is judged on its own: side by side on the current rayon
    // pool's threads, collected in node order.
    nodes
        .into_par_iter()
        .with_min_len(NODES_PER_TASK)
        .map_init(
            || pool_lookup(inputs.pools),
            |pools, ((id, node), facts)| {
                (id, candidate_with(inputs, pools, id, node, class, facts))
            },
        )
        .collect()
}

/// Nodes one thread judges at a time (about 50 µs of work).
const NODES_PER_TASK: usize = 64;

/// The candidates among all nodes, in node order.
pub fn candidates(inputs: &CandidateInputs<'_>, class: DisruptionClass) -> Vec<Candidate> {
    evaluate_nodes(inputs, class)
        .into_iter()
        .filter_map(|(_, c)| c.ok())
        .collect()
}

/// A method's verdict on a candidate: `Ok` keeps it; `Err(Some(reason))`
/// drops it with an `Unconsolidatable` event; `Err(None)` drops it quietly.
pub type FilterVerdict = Result<(), Option<Unconsolidatable>>;

/// Emptiness `ShouldDisrupt`: consolidation enabled, empty, consolidatable.
/// Static NodePools are skipped silently (core: emptiness.go).
pub fn emptiness_filter(candidate: &Candidate, pool: &NodePool) -> FilterVerdict {
    if pool.is_static() {
        return Err(None);
    }
    if pool.disruption.consolidate_after.is_none() {
        return Err(Some(Unconsolidatable::ConsolidationDisabled(
            pool.name.clone(),
        )));
    }
    if candidate.is_empty() && candidate.consolidatable {
        Ok(())
    } else {
        Err(None)
    }
}

/// Consolidation `ShouldDisrupt` (multi- and single-node): a priced
/// instance type with capacity-type and zone labels, consolidation enabled,
/// not empty (Emptiness handles those), a policy other than WhenEmpty,
/// consolidatable.
/// Static NodePools are skipped silently (core: consolidation.go).
pub fn consolidation_filter(candidate: &Candidate, node: &Node, pool: &NodePool) -> FilterVerdict {
    if pool.is_static() {
        return Err(None);
    }
    let instance_type = node.claim.as_ref().map_or("", |c| c.instance_type.as_str());
    if instance_type.is_empty() {
        return Err(Some(Unconsolidatable::InstanceTypeNotFound(
            instance_type.to_string(),
        )));
    }
    if let Some(label) = candidate.missing_label {
        return Err(Some(Unconsolidatable::MissingLabel(label)));
    }
    if pool.disruption.consolidate_after.is_none() {
        return Err(Some(Unconsolidatable::ConsolidationDisabled(
            pool.name.clone(),
        )));
    }
    if candidate.is_empty() {
        return Err(None);
    }
    if pool.disruption.consolidation_policy == ConsolidationPolicy::WhenEmpty {
        return Err(Some(Unconsolidatable::WhenEmptyButNotEmpty(
            pool.name.clone(),
        )));
    }
    if candidate.consolidatable {
        Ok(())
    } else {
        Err(None)
    }
}

/// Drift `ShouldDisrupt`: the NodeClaim carries the `Drifted` condition.
pub fn drift_filter(node: &Node) -> FilterVerdict {
    match node
        .claim
        .as_ref()
        .and_then(|c| c.lifecycle.drifted.as_ref())
    {
        Some(_) => Ok(()),
        None => Err(None),
    }
}

#[cfg(test)]
#[path = "candidates_tests.rs"]
mod tests;
