//! The types every part of the disruption controller shares (core:
//! disruption/types.go): what a pass reads ([`DisruptionInput`]), a
//! candidate, a command and the method that made it, and a pass's
//! outcome. Depends on nothing of the disruption controller but the
//! reasons and the caller's caches, which depend on nothing of it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::cache::{CandidateCache, NodeFacts};
use super::kept_pass::Horizon;
use super::reasons::Unconsolidatable;
use crate::cloud::Price;
use crate::karpenter::provisioning::{
    NewNodeClaim, NodePoolContext, Prepared, QueueRun, SchedulingPolicies,
};
use crate::kube::pod::PodSpec;
use crate::kube::resources::{ResourceKind, Resources};
use crate::nodepool::{DisruptionReason, NodePool};
use crate::pdb::ControllerScales;
use crate::scheduler::{Cluster, NodeId, PodId};
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

/// CPU, memory and pod-slot amounts of some requests (what the no-op
/// bound reads).
pub(crate) type Amounts = [i64; 3];

/// `resources`' CPU, memory and pod-slot amounts.
pub(crate) fn amounts(resources: &Resources) -> Amounts {
    [ResourceKind::Cpu, ResourceKind::Memory, ResourceKind::Pods].map(|kind| resources.get(kind))
}

/// The NodePools of a pass by name (borrowed from its input).
pub type NodePoolsByName<'a> = BTreeMap<&'a str, &'a NodePool>;

/// Looks NodePools up by name with `find`, remembering the last name
/// looked up (by address): nodes of one pool come in runs and share one
/// copy of its name.
pub(crate) struct PoolLookup<'p, F> {
    find: F,
    last: Option<(Arc<str>, Option<&'p NodePool>)>,
}

impl<'p, F: Fn(&str) -> Option<&'p NodePool>> PoolLookup<'p, F> {
    pub(crate) fn new(find: F) -> Self {
        PoolLookup { find, last: None }
    }

    /// The NodePool named `name`.
    pub(crate) fn get(&mut self, name: &Arc<str>) -> Option<&'p NodePool> {
        match &self.last {
            Some((last, pool)) if Arc::ptr_eq(last, name) => *pool,
            _ => {
                let pool = (self.find)(name);
                self.last = Some((name.clone(), pool));
                pool
            }
        }
    }
}

/// A [`PoolLookup`] over a pass's NodePools by name.
pub(crate) fn pool_lookup<'p>(
    pools: &'p NodePoolsByName<'p>,
) -> PoolLookup<'p, impl Fn(&str) -> Option<&'p NodePool>> {
    PoolLookup::new(move |name| pools.get(name).copied())
}

/// A node considered for disruption, with the values methods sort and
/// budget by.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The node.
    pub node: NodeId,
    /// What it reads of the node and its pods (name, NodePool, the pods
    /// that need a new home), shared with the cache it came from.
    facts: Arc<NodeFacts>,
    /// Price of its offering.
    pub price: Price,
    /// How many pods are bound to it (finished ones included).
    pub pod_count: usize,
    /// The first of the capacity-type and zone labels the node lacks
    /// (consolidation needs both).
    pub missing_label: Option<&'static str>,
    /// `1 + Σ max(0, EvictionCost)` over the reschedulable pods.
    pub reschedule_disruption_cost: f64,
    /// Pre-v1.14 `DisruptionCost`: `Σ EvictionCost(all pods) × LifetimeRemaining`.
    pub disruption_cost: f64,
    /// The NodeClaim's `Consolidatable` condition.
    pub consolidatable: bool,
    /// The NodeClaim was launched with a `terminationGracePeriod`.
    pub has_termination_grace_period: bool,
    /// The node's place in name order ([`Cluster::name_order`]): orders
    /// that go "then by name" compare this instead of the names.
    pub name_order: u64,
}

impl Candidate {
    /// A candidate of the node `facts` describe, priced `price`: its
    /// disruption cost at a whole lifetime remaining, consolidatable, and
    /// without a termination grace period until the caller says otherwise;
    /// `name_order` is the node's [`Cluster::name_order`].
    pub(super) fn new(
        node: NodeId,
        facts: Arc<NodeFacts>,
        price: Price,
        name_order: u64,
    ) -> Candidate {
        Candidate {
            node,
            name_order,
            price,
            pod_count: facts.pod_count,
            missing_label: facts.missing_label,
            reschedule_disruption_cost: PER_NODE_BASE_DISRUPTION_COST + facts.reschedule_cost,
            disruption_cost: facts.all_pods_cost,
            consolidatable: true,
            has_termination_grace_period: false,
            facts,
        }
    }

    /// Node name.
    pub fn name(&self) -> &str {
        &self.facts.name
    }

    /// Owning NodePool.
    pub fn nodepool(&self) -> &str {
        &self.facts.nodepool
    }

    /// Owning NodePool, as the copy of its name the node's facts share.
    pub(crate) fn shared_nodepool(&self) -> &Arc<str> {
        &self.facts.nodepool
    }

    /// The pods that need a new home if it goes.
    pub fn reschedulable_pods(&self) -> &Arc<[PodId]> {
        &self.facts.reschedulable
    }

    /// [`Self::reschedulable_pods`] in the solve's queue order, when `own`
    /// (the pods a what-if moves off the node) is exactly them.
    pub(crate) fn reschedulable_run(&self, cluster: &Cluster, own: &[PodId]) -> Option<&QueueRun> {
        let facts = &self.facts;
        (*facts.reschedulable == *own).then(|| {
            facts
                .reschedulable_run
                .get_or_init(|| QueueRun::new(cluster, &facts.reschedulable))
        })
    }

    /// When no pod on the node carries a do-not-disrupt annotation: the
    /// CPU, memory and pod-slot requests of [`Self::reschedulable_pods`],
    /// in order, which the no-op bound then reads without looking the pods
    /// up (see `PassContext::rules_out`).
    pub(crate) fn unprotected_requests(&self) -> Option<&Arc<[Amounts]>> {
        self.facts
            .protected
            .is_empty()
            .then_some(&self.facts.reschedulable_requests)
    }

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

/// Feature gates and options that change disruption decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DisruptionOptions {
    /// Feature gate `SpotToSpotConsolidation` (default off).
    pub spot_to_spot_consolidation: bool,
    /// At most this many single-node consolidation simulations per pass
    /// (`None` = all candidates). Stands in for upstream's 3-minute
    /// single-node timeout, which bounds the same work by wall-clock time.
    pub single_node_candidate_limit: Option<usize>,
    /// The scheduler's policies its simulations use (upstream's
    /// `SimulateScheduling` passes the operator's, as provisioning does).
    pub scheduling: SchedulingPolicies,
}

/// What a disruption pass looks at: the cluster and the Karpenter objects
/// in force at `now`. Whatever the controller keeps between passes lives
/// in [`super::controller::Disruption`], not here.
#[derive(Debug, Clone, Copy)]
pub struct DisruptionInput<'a> {
    /// The cluster (PDBs are in `cluster.pdbs`).
    pub cluster: &'a Cluster,
    /// Every NodePool with its catalog (as provisioning sees them).
    pub nodepools: &'a [NodePoolContext<'a>],
    /// DaemonSet pod templates.
    pub daemonsets: &'a [Arc<PodSpec>],
    /// Desired replicas of pod owners (for PDB percentages).
    pub scales: &'a ControllerScales,
    /// Pods pending right now (they join every consolidation simulation).
    pub pending: &'a [PodId],
    /// Nodes already in the orchestration queue (being disrupted).
    pub in_flight: &'a BTreeSet<NodeId>,
    /// Spare resource slot that holds `limits.nodes`, if any.
    pub node_count_resource: Option<ResourceKind>,
    /// The decision instant.
    pub now: SimTime,
    /// The cluster's consolidation state, if the caller tracks it
    /// (upstream `Cluster.ConsolidationState`): when the cluster last
    /// changed in a way that may let a node be consolidated, renewed to
    /// the current instant once it is [`CONSOLIDATION_STATE_RESET`] old.
    /// A consolidation method that found nothing at this state skips the
    /// pass (upstream `IsConsolidated`). `None`: every method computes.
    ///
    /// [`CONSOLIDATION_STATE_RESET`]: super::CONSOLIDATION_STATE_RESET
    pub consolidation_state: Option<SimTime>,
}

/// Everything a pass reads inside the controller: the input, the options,
/// and the controller's caches and event memory (absent for a one-shot
/// pass; decisions are the same either way).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PassInput<'a> {
    /// The cluster (PDBs are in `cluster.pdbs`).
    pub cluster: &'a Cluster,
    /// Every NodePool with its catalog (as provisioning sees them).
    pub nodepools: &'a [NodePoolContext<'a>],
    /// DaemonSet pod templates.
    pub daemonsets: &'a [Arc<PodSpec>],
    /// Desired replicas of pod owners (for PDB percentages).
    pub scales: &'a ControllerScales,
    /// Pods pending right now (they join every consolidation simulation).
    pub pending: &'a [PodId],
    /// Nodes already in the orchestration queue (being disrupted).
    pub in_flight: &'a BTreeSet<NodeId>,
    /// Spare resource slot that holds `limits.nodes`, if any.
    pub node_count_resource: Option<ResourceKind>,
    /// Options.
    pub options: DisruptionOptions,
    /// The decision instant.
    pub now: SimTime,
    /// The solve setup for `nodepools` and `daemonsets`, when the caller
    /// keeps one ([`Prepared::new`]); `None` has each pass build its own,
    /// once, for all of its simulations.
    pub prepared: Option<&'a Prepared>,
    /// Candidates' node facts kept from earlier passes over this cluster,
    /// when the caller keeps them; `None` makes them every time.
    pub candidate_cache: Option<&'a CandidateCache>,
    /// Per consolidation method, the consolidation state it last found
    /// nothing at, with the current state: a method whose entry equals
    /// it skips (none skips without both).
    pub consolidated: Option<(&'a BTreeMap<Method, SimTime>, SimTime)>,
    /// The caller's event dedupe, if it says: a node whose
    /// `Unconsolidatable` message it would drop now is quiet, and its
    /// single-node simulations stop as soon as the outcome is sure to be a
    /// no-op, which then carries no message, nor does its rejection as a
    /// candidate. Decisions are the same either way.
    pub message_dedupe: Option<MessageDedupe<'a>>,
    /// Where the pass's judgements that read the instant say when their
    /// answer would next change, when the caller keeps the pass.
    pub horizon: Option<&'a Horizon>,
}

/// When each node's last message was published, and how long that drops
/// the next ones (upstream's event recorder cache).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageDedupe<'a> {
    /// Per node, when its last message was published.
    pub published: &'a BTreeMap<NodeId, SimTime>,
    /// How long a published message drops the next ones.
    pub window: SimDuration,
}

impl MessageDedupe<'_> {
    /// Whether a message about `node` at `now` would be dropped: one was
    /// published no longer than the window before.
    pub fn drops(&self, node: NodeId, now: SimTime) -> bool {
        self.published
            .get(&node)
            .is_some_and(|&at| crate::karpenter::events::dedupe_drops(at, self.window, now))
    }

    /// The first instant a message about a node whose last one was
    /// published `at` is no longer dropped.
    pub fn drops_until(&self, at: SimTime) -> SimTime {
        at + self.window + SimDuration::from_millis(1)
    }
}

impl<'a> PassInput<'a> {
    /// A pass over `input` with `options` and nothing kept.
    pub(crate) fn one_shot(input: &DisruptionInput<'a>, options: DisruptionOptions) -> Self {
        PassInput {
            cluster: input.cluster,
            nodepools: input.nodepools,
            daemonsets: input.daemonsets,
            scales: input.scales,
            pending: input.pending,
            in_flight: input.in_flight,
            node_count_resource: input.node_count_resource,
            options,
            now: input.now,
            prepared: None,
            candidate_cache: None,
            consolidated: None,
            message_dedupe: None,
            horizon: None,
        }
    }

    /// Whether `method` found nothing at the current consolidation state
    /// (upstream `IsConsolidated`): nothing it reads changed since.
    pub fn is_consolidated(&self, method: Method) -> bool {
        self.consolidated
            .is_some_and(|(found_nothing, state)| found_nothing.get(&method) == Some(&state))
    }

    /// Whether the controller's recorder would drop a message about `node`
    /// now.
    pub fn is_quiet(&self, node: NodeId) -> bool {
        let Some(dedupe) = self.message_dedupe else {
            return false;
        };
        let Some(&at) = dedupe.published.get(&node) else {
            return false;
        };
        self.turns_at(dedupe.drops_until(at));
        crate::karpenter::events::dedupe_drops(at, dedupe.window, self.now)
    }

    /// A judgement read now may turn at `at` (see [`Self::horizon`]).
    pub fn turns_at(&self, at: SimTime) {
        if let Some(horizon) = self.horizon {
            horizon.turns_after(self.now, at);
        }
    }
}

/// Which method produced a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// Emptiness.
    Emptiness,
    /// Drift.
    Drift,
    /// Drift of static NodePools' NodeClaims.
    StaticDrift,
    /// Multi-node consolidation.
    MultiNodeConsolidation,
    /// Single-node consolidation.
    SingleNodeConsolidation,
}

impl Method {
    /// The spelling reports use (`emptiness`, `drift`, `static-drift`,
    /// `multi-node-consolidation`, `single-node-consolidation`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Emptiness => "emptiness",
            Method::Drift => "drift",
            Method::StaticDrift => "static-drift",
            Method::MultiNodeConsolidation => "multi-node-consolidation",
            Method::SingleNodeConsolidation => "single-node-consolidation",
        }
    }
}

/// A decided disruption: delete `candidates`, after launching
/// `replacements` (empty = pure delete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The method that produced it.
    pub method: Method,
    /// The disruption reason (budgets and reports use it).
    pub reason: DisruptionReason,
    /// Nodes to disrupt.
    pub candidates: Vec<NodeId>,
    /// Replacement NodeClaims to launch first (launch with
    /// `provisioning::choose_offering`).
    pub replacements: Vec<NewNodeClaim>,
    /// Σ candidate prices − cheapest replacement price (0 for drift).
    pub estimated_savings: Price,
    /// Whether the command waits [`super::COMMAND_VALIDATION_DELAY`] and
    /// must pass [`validate`] before executing (Emptiness and
    /// consolidation; not Drift).
    ///
    /// [`validate`]: super::controller::validate
    pub needs_validation: bool,
    /// What a user reads, e.g. `replace 3 × m5.2xlarge with 1 × c6a.4xlarge:
    /// underutilized, saves $0.41/h`.
    pub explanation: String,
}

/// The outcome of one pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassOutcome {
    /// The command to start, if any method acted.
    pub command: Option<Command>,
    /// Why nodes were not disrupted this pass, in upstream's words
    /// (`Unconsolidatable` events): at most one per node.
    pub unconsolidatable: Vec<(NodeId, Unconsolidatable)>,
    /// The consolidation methods that computed, found nothing and were
    /// not held back by a budget: they skip until the consolidation state
    /// changes (upstream `markConsolidated`; see
    /// [`super::controller::Disruption::mark_consolidated`]).
    pub consolidated: Vec<Method>,
}

/// For tests that make candidates without a cluster: a name order for
/// names of at most 8 bytes (their bytes, big-endian, so numbers compare
/// as the names do).
#[cfg(test)]
pub(crate) fn name_order_of(name: &str) -> u64 {
    assert!(
        name.len() <= 8,
        "test node names have at most 8 bytes: {name}"
    );
    let mut bytes = [0u8; 8];
    bytes[..name.len()].copy_from_slice(name.as_bytes());
    u64::from_be_bytes(bytes)
}
