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

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rayon::prelude::*;

use super::ordering::LastOrder;
pub use super::reasons::Rejection;
use super::reasons::Unconsolidatable;
use crate::cloud::Price;
use crate::cluster::{Cluster, Node, NodeClaimInfo, NodeId, PodId};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE};
use crate::nodepool::{ConsolidationPolicy, NodePool};
use crate::pdb::{EvictionBlock, PdbLimits};
use crate::pods::{eviction_cost, is_active, is_disruptable, is_reschedulable, pod_key};
use crate::time::{SimDuration, SimTime};

/// The base cost of draining any node (upstream `PerNodeBaseDisruptionCost`).
pub const PER_NODE_BASE_DISRUPTION_COST: f64 = 1.0;

/// How a method treats pods that block eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisruptionClass {
    /// Emptiness and consolidation: do-not-disrupt pods and PDBs always block.
    Graceful,
    /// Drift: a NodeClaim with `terminationGracePeriod` is disrupted anyway
    /// (the grace period bounds the drain).
    Eventual,
}

/// A node considered for disruption, with the values methods sort and
/// budget by.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// Node name.
    pub name: Arc<str>,
    /// Owning NodePool.
    pub nodepool: Arc<str>,
    /// Price of its offering.
    pub price: Price,
    /// How many pods are bound to it (finished ones included).
    pub pod_count: usize,
    /// The first of the capacity-type and zone labels the node lacks
    /// (consolidation needs both).
    pub missing_label: Option<&'static str>,
    /// The pods that need a new home if it goes.
    pub reschedulable_pods: Arc<[PodId]>,
    /// `1 + Σ max(0, EvictionCost)` over the reschedulable pods.
    pub reschedule_disruption_cost: f64,
    /// Pre-v1.14 `DisruptionCost`: `Σ EvictionCost(all pods) × LifetimeRemaining`.
    pub disruption_cost: f64,
    /// The NodeClaim's `Consolidatable` condition.
    pub consolidatable: bool,
    /// The NodeClaim was launched with a `terminationGracePeriod`.
    pub has_termination_grace_period: bool,
}

impl Candidate {
    /// Price per unit of disruption (higher = better to disrupt).
    pub fn savings_ratio(&self) -> f64 {
        self.price.dollars() / self.reschedule_disruption_cost
    }

    /// No pod adds reschedule cost (v1.14: pods whose eviction cost clamps
    /// to ≤ 0 count as nothing).
    pub fn is_empty(&self) -> bool {
        self.reschedule_disruption_cost <= PER_NODE_BASE_DISRUPTION_COST
    }
}

/// What candidate selection reads.
#[derive(Debug, Clone, Copy)]
pub struct CandidateInputs<'a> {
    /// The cluster.
    pub cluster: &'a Cluster,
    /// NodePools by name.
    pub pools: &'a BTreeMap<String, NodePool>,
    /// PDBs with their allowed disruptions.
    pub pdbs: &'a PdbLimits,
    /// Nodes already in the orchestration queue.
    pub in_flight: &'a BTreeSet<NodeId>,
    /// The decision instant.
    pub now: SimTime,
    /// Node facts kept from earlier passes, if the caller keeps them.
    pub cache: Option<&'a CandidateCache>,
}

/// What a candidate reads of its node's labels and of the pods bound to
/// it: a function of the node and its pods alone.
#[derive(Debug)]
pub struct NodeFacts {
    /// The NodePool named by the `karpenter.sh/nodepool` label, else by
    /// the NodeClaim (empty when neither names one).
    nodepool: Arc<str>,
    /// The first of the capacity-type and zone labels the node lacks.
    missing_label: Option<&'static str>,
    /// Active pods in node order: the only pods that can block a
    /// disruption (do-not-disrupt and PDBs apply to active pods only).
    active: Vec<PodId>,
    /// The active pods with a do-not-disrupt annotation, in node order
    /// (the only ones whose protection can be on).
    protected: Vec<PodId>,
    /// The pods that need a new home if the node goes, in node order.
    reschedulable: Arc<[PodId]>,
    /// The node's name.
    name: Arc<str>,
    /// `Σ max(0, EvictionCost)` over `reschedulable`, in order.
    reschedule_cost: f64,
    /// `Σ EvictionCost` over every bound pod, in order.
    all_pods_cost: f64,
    /// Every bound pod, finished ones included.
    pod_count: usize,
}

impl NodeFacts {
    fn of(cluster: &Cluster, node: &Node) -> NodeFacts {
        let pods = || {
            node.pods
                .iter()
                .filter_map(|id| cluster.pod(*id).map(|p| (*id, p)))
        };
        let active: Vec<PodId> = pods()
            .filter(|(_, p)| is_active(p))
            .map(|(id, _)| id)
            .collect();
        let protected = active
            .iter()
            .copied()
            .filter(|id| {
                cluster
                    .pod(*id)
                    .is_some_and(|p| p.spec.do_not_disrupt.is_some())
            })
            .collect();
        let reschedulable: Arc<[PodId]> = pods()
            .filter(|(_, p)| is_reschedulable(p))
            .map(|(id, _)| id)
            .collect();
        let reschedule_cost = reschedulable
            .iter()
            .filter_map(|id| cluster.pod(*id))
            .map(|p| eviction_cost(p).max(0.0))
            .sum::<f64>();
        let all_pods_cost = pods().map(|(_, p)| eviction_cost(p)).sum::<f64>();
        let nodepool = node
            .labels
            .get(LABEL_NODEPOOL)
            .or(node.claim.as_ref().map(|c| &*c.nodepool))
            .unwrap_or_default();
        NodeFacts {
            nodepool: Arc::from(nodepool),
            name: Arc::from(node.name.as_str()),
            missing_label: [LABEL_CAPACITY_TYPE, LABEL_TOPOLOGY_ZONE]
                .into_iter()
                .find(|label| !node.labels.contains_key(label)),
            active,
            protected,
            reschedulable,
            reschedule_cost,
            all_pods_cost,
            pod_count: node.pods.len(),
        }
    }
}

/// The facts of the nodes of the last pass, with the node revisions they
/// were made at (see [`Cluster::node_revision`]), and the order
/// consolidation tried its candidates in.
#[derive(Debug, Default)]
pub struct CandidateCache {
    kept: Mutex<Vec<(NodeId, u64, Arc<NodeFacts>)>>,
    consolidation_order: Mutex<LastOrder>,
}

impl CandidateCache {
    /// Consolidation's savings-ratio order of the last pass that sorted.
    pub(super) fn consolidation_order(&self) -> MutexGuard<'_, LastOrder> {
        self.consolidation_order
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Facts of every node of `cluster` in id order: kept ones where the
    /// node's revision is unchanged, new ones otherwise; the cache then
    /// holds exactly these.
    fn facts_of_every_node(&self, cluster: &Cluster) -> Vec<Arc<NodeFacts>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let old = std::mem::take(&mut *kept);
        let mut old = old.into_iter().peekable();
        let mut all = Vec::with_capacity(cluster.node_count());
        for (id, node) in cluster.nodes() {
            while old.next_if(|(kept_id, _, _)| *kept_id < id).is_some() {}
            let revision = cluster.node_revision(id);
            let facts = match old.next_if(|(kept_id, _, _)| *kept_id == id) {
                Some((_, kept_revision, facts)) if kept_revision == revision => facts,
                _ => Arc::new(NodeFacts::of(cluster, node)),
            };
            kept.push((id, revision, facts.clone()));
            all.push(facts);
        }
        all
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
    let since = claim
        .lifecycle
        .last_pod_event_at
        .or(claim.lifecycle.initialized_at)
        .unwrap_or(node.created_at);
    let after = SimDuration::from_millis(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
    now.saturating_duration_since(since) >= after
}

/// The node-level checks (`ValidateNodeDisruptable`).
fn validate_node<'a>(
    inputs: &CandidateInputs<'a>,
    id: NodeId,
    node: &'a Node,
    facts: &NodeFacts,
) -> Result<(&'a NodeClaimInfo, &'a NodePool), Rejection> {
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
    if claim
        .lifecycle
        .nominated_until
        .is_some_and(|t| t > inputs.now)
    {
        return Err(Rejection::Nominated);
    }
    if claim.lifecycle.do_not_disrupt {
        return Err(Rejection::NodeDoNotDisrupt);
    }
    let pool_name = &*facts.nodepool;
    if pool_name.is_empty() {
        return Err(Rejection::MissingNodePoolLabel);
    }
    let pool = inputs
        .pools
        .get(pool_name)
        .ok_or_else(|| Rejection::NodePoolNotFound(pool_name.to_string()))?;
    Ok((claim, pool))
}

/// The pod-level checks (`ValidatePodsDisruptable`): do-not-disrupt first
/// over all pods, then PDBs.
fn validate_pods(inputs: &CandidateInputs<'_>, facts: &NodeFacts) -> Result<(), Rejection> {
    let pod = |id: &PodId| inputs.cluster.pod(*id);
    // Only annotated pods can be protected; the first protected one in
    // node order is the first of all active pods.
    for pod in facts.protected.iter().filter_map(pod) {
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
    candidate_with(inputs, id, node, class, || {
        NodeFacts::of(inputs.cluster, node)
    })
}

/// [`new_candidate`] with the node's facts made on demand.
fn candidate_with<F: Borrow<NodeFacts>>(
    inputs: &CandidateInputs<'_>,
    id: NodeId,
    node: &Node,
    class: DisruptionClass,
    facts: impl FnOnce() -> F,
) -> Result<Candidate, Rejection> {
    let facts = facts();
    let facts: &NodeFacts = facts.borrow();
    let (claim, pool) = validate_node(inputs, id, node, facts)?;
    if let Err(rejection) = validate_pods(inputs, facts) {
        let eventual = class == DisruptionClass::Eventual
            && claim.lifecycle.termination_grace_period.is_some();
        if !(eventual && rejection.is_pod_block()) {
            return Err(rejection);
        }
    }
    Ok(Candidate {
        node: id,
        name: facts.name.clone(),
        nodepool: facts.nodepool.clone(),
        price: claim.price,
        pod_count: facts.pod_count,
        missing_label: facts.missing_label,
        reschedulable_pods: facts.reschedulable.clone(),
        reschedule_disruption_cost: PER_NODE_BASE_DISRUPTION_COST + facts.reschedule_cost,
        disruption_cost: facts.all_pods_cost * lifetime_remaining(node, claim, inputs.now),
        consolidatable: is_consolidatable(node, claim, pool, inputs.now),
        has_termination_grace_period: claim.lifecycle.termination_grace_period.is_some(),
    })
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
        .map(|((id, node), facts)| (id, candidate_with(inputs, id, node, class, || facts)))
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
pub fn emptiness_filter(candidate: &Candidate, pool: &NodePool) -> FilterVerdict {
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
pub fn consolidation_filter(candidate: &Candidate, node: &Node, pool: &NodePool) -> FilterVerdict {
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
