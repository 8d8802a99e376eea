//! Karpenter provisioning: the `solve` that packs pending pods onto existing
//! nodes, in-flight NodeClaims and new NodeClaims (reference §1), and the
//! launch decision that turns a NodeClaim into one concrete offering (§2).
//! Pure functions of a cluster view: no clock, no randomness, no I/O.
//!
//! Submodules: `pod` (a pod's requirements and relaxation), `topology`
//! (spread / affinity / anti-affinity domains), `template` (templates,
//! DaemonSet overhead groups, the instance-type filter), `claim` (NodeClaims
//! of a solve), `columns` (instance-type requirements by key, for that
//! filter), `existing` (existing nodes), `prepared` (the setup many solves
//! share), `scheduler` (the loop) and `launch` (the offering choice).
//!
//! Reserved capacity (`reservations`, core scheduling/reservationmanager.go):
//! a NodeClaim reserves one instance of every compatible reserved offering
//! of its options, so one solve never plans more NodeClaims into a
//! reservation than it has instances left.
//!
//! Both operator policies are modelled ([`SchedulingPolicies`]).
//! Simplifications against upstream, all deliberate: no volume
//! topology or DRA; a namespace selector on an affinity
//! term matches every namespace; ties upstream leaves to map order (which
//! zone a spread constraint picks among equal counts) go to the smallest
//! name; the `nodes` limit is charged one per NodeClaim during the solve
//! (upstream charges it only when the NodeClaim is created, which refuses
//! the excess then).

mod claim;
mod columns;
mod existing;
mod fit;
mod launch;
mod node_requirements;
mod pod;
mod prepared;
mod provisioner;
mod queue;
mod reservations;
mod scheduler;
mod template;
mod topology;
mod view_changes;

#[cfg(test)]
mod tests;

pub use existing::{Closure, ExistingNodes};
pub use launch::MAX_LAUNCH_INSTANCE_TYPES;
pub use prepared::{LaunchRoom, OfferingKeys, Prepared};
pub use provisioner::{PREPARED_NODE_REMOVALS, Provisioner};
pub use queue::{PresortedQueue, QueueRun};
pub use scheduler::{MAX_INSTANCE_TYPES, presorted_queue_starts_with, queue_starts_with};
pub use view_changes::{OpenViews, ViewChanges};

use std::sync::Arc;

use crate::cloud::{CapacityType, Catalog, Price};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::Requirements;
use crate::kube::resources::{ResourceKind, Resources};
use crate::nodepool::NodePool;
use crate::scheduler::{Cluster, NodeId, PodId};

/// A NodePool with the catalog of its EC2NodeClass (allocatable shaped by
/// the node class; offering availability as the ICE cache currently says).
#[derive(Debug, Clone, Copy)]
pub struct NodePoolContext<'a> {
    /// The NodePool.
    pub pool: &'a NodePool,
    /// Its instance types.
    pub catalog: &'a Catalog,
}

/// `MIN_VALUES_POLICY` (core pkg/operator/options): what a NodeClaim
/// whose options miss a requirement's `minValues` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MinValuesPolicy {
    /// The NodeClaim (or template) is refused (the default).
    #[default]
    Strict,
    /// `minValues` is lowered to what the options reach (v1.6).
    BestEffort,
}

/// `PREFERENCE_POLICY` (core pkg/operator/options): how Karpenter's
/// scheduler treats preferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PreferencePolicy {
    /// Preferences are required until relaxed one at a time (the default).
    #[default]
    Respect,
    /// Preferred affinities and `ScheduleAnyway` spreads are dropped (v1.4).
    Ignore,
}

/// The operator options Karpenter's scheduler is built with (core:
/// scheduling/scheduler.go `MinValuesPolicy`, `IgnorePreferences`), for
/// provisioning and the disruption simulations alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SchedulingPolicies {
    /// `minValuesPolicy`.
    pub min_values: MinValuesPolicy,
    /// `preferencePolicy`.
    pub preference: PreferencePolicy,
}

/// Everything `solve` reads.
#[derive(Debug, Clone, Copy)]
pub struct ProvisioningInput<'a> {
    /// The cluster (existing nodes, in-flight NodeClaims, bound pods).
    pub cluster: &'a Cluster,
    /// Every NodePool (solve orders them by weight, then name).
    pub nodepools: &'a [NodePoolContext<'a>],
    /// DaemonSet pod templates (their overhead is reserved on new nodes).
    pub daemonsets: &'a [Arc<PodSpec>],
    /// The pods to place: provisionable pending pods, plus pods of deleting
    /// nodes. DaemonSet pods among them are skipped.
    pub pods: &'a [PodId],
    /// The slot a NodePool `limits.nodes` entry was read into (the run's
    /// `ResourceNames::lookup("nodes")`), so it counts one per node.
    pub node_count_resource: Option<ResourceKind>,
    /// The scheduler's policies.
    pub policies: SchedulingPolicies,
}

/// How a solve runs, beyond what it places: the setup built from the
/// input's NodePools and DaemonSets ([`Prepared::new`]) when the caller
/// keeps one (`None` builds it for this solve alone; the result is the
/// same), and when it may stop before every pod is placed (never by
/// default). Only the deciders' own callers pass one: [`Provisioner`] for
/// its kept setup, the disruption controller for its what-ifs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SolveSetup<'a> {
    pub(crate) prepared: Option<&'a Prepared>,
    pub(crate) stop_early: StopEarly<'a>,
    /// Upstream `ReservedOfferingModeFallback` (disruption's what-ifs): a
    /// pod may join a NodeClaim even when that leaves it no reserved
    /// offering. Off (provisioning, `ReservedOfferingModeStrict`), such a
    /// pod's decision is deferred to a later solve instead.
    pub(crate) reserved_fallback: bool,
    /// The input's pods as runs already in queue order and the rest:
    /// together exactly the pods a solve takes of them (checked in debug
    /// builds). Callers that solve over mostly the same pods many times
    /// build the shared runs once; the solve then touches only its own
    /// pods and those it reaches. `None`: the solve orders every pod.
    pub(crate) queue: Option<PresortedQueue<'a>>,
}

/// When a solve may stop placing pods, for callers that only ask whether
/// its new NodeClaims could make a consolidation: the result is then
/// partial (the rest of the pods neither placed nor failed). Ignored when
/// a NodePool has `minValues`, as a claim that misses them is dropped at
/// the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StopEarly<'a> {
    /// Once this many new NodeClaims are open (the result has that many).
    pub at_new_nodeclaims: Option<usize>,
    /// Once the first new NodeClaim can no longer undercut this price:
    /// placing more pods only narrows its options and requirements, so it
    /// never could again.
    pub unless_cheaper_than: Option<PriceToBeat>,
    /// The caller takes an error of a pod already bound to a node (one
    /// being moved off it) as it takes the stops above. A bound pod that
    /// finds no existing node or open NodeClaim, and whose chances only
    /// shrink as pods are placed (nothing to relax, no topology spread or
    /// required pod affinity), then ends the solve with an error when any
    /// NodeClaim it could open would reach a stop: the result says the
    /// same, without the NodeClaim being built.
    pub bound_pods_must_fit: bool,
    /// Pods (sorted) the caller takes a placement of on a node that has
    /// not finished initializing as it takes the stops above: placing one
    /// there ends the solve (the placement is in the result).
    pub not_on_uninitialized: &'a [PodId],
}

/// A price a solve's first new NodeClaim must be able to undercut: some
/// option of it must have an available offering below `price`, of a
/// capacity type its requirements allow (and spot only with `spot`), in any
/// zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriceToBeat {
    /// The price to undercut.
    pub price: Price,
    /// Whether spot offerings count.
    pub spot: bool,
}

/// A NodeClaim the solve wants created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNodeClaim {
    /// Index into `ProvisioningInput::nodepools`.
    pub nodepool: usize,
    /// Its requirements after placing its pods (zone may be narrowed, …).
    pub requirements: Requirements,
    /// Remaining instance-type options: indices into the NodePool's
    /// catalog `instance_types()`, cheapest first, at most 600.
    pub instance_types: Vec<usize>,
    /// The pods it was opened for.
    pub pods: Vec<PodId>,
    /// Pod requests plus the smallest DaemonSet overhead over its options.
    pub requests: Resources,
    /// `karpenter.sh/nodeclaim-min-values-relaxed`, set under
    /// `MinValuesPolicy::BestEffort` only (`None` under Strict): whether
    /// the NodeClaim was opened with a `minValues` lowered. Set, the launch
    /// does not check `minValues` against the types it sends either.
    pub min_values_relaxed: Option<bool>,
}

/// The outcome of one solve.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchedulingResult {
    /// NodeClaims to create.
    pub new_nodeclaims: Vec<NewNodeClaim>,
    /// Pods that fit on existing nodes or in-flight NodeClaims.
    pub existing: Vec<(PodId, NodeId)>,
    /// Pods that fit nowhere, with a reason a user can read.
    pub errors: Vec<(PodId, String)>,
    /// Pods among `errors` whose decision was deferred because compatible
    /// reserved capacity was all reserved by other NodeClaims of this
    /// solve (upstream `ReservedOfferingError`): a later solve, once those
    /// launched, places them without relaxing anything.
    pub deferred: Vec<PodId>,
    /// When one of [`StopEarly`]'s stops ended the solve before any pod
    /// went back to the queue: the pods it took from the queue, in order,
    /// the last being the one it stopped at. Pods queued after them played
    /// no part in the result (what a kept consolidation verdict may rely
    /// on: see [`queue_starts_with`]).
    pub stopped_on: Option<Vec<PodId>>,
}

/// Places `input.pods` as Karpenter's scheduler does (reference §1.2–1.7):
/// existing nodes first, then NodeClaims opened earlier in this solve
/// (fewest pods first), then a new NodeClaim from the heaviest NodePool
/// that accepts, relaxing one preference at a time; unplaced pods are
/// retried until a full pass makes no progress. Each new NodeClaim keeps
/// its 600 cheapest options.
pub fn solve(input: &ProvisioningInput<'_>) -> SchedulingResult {
    scheduler::solve(input, SolveSetup::default())
}

/// [`solve`] over the placement views of `existing`, built once by
/// [`ExistingNodes::new`] from this very cluster instead of for this solve
/// alone, with the nodes of `closed` taken as marked for deletion too: the
/// same result as [`solve`] on the cluster with those nodes marked, for a
/// fraction of its setup when many solves share one cluster (the what-ifs
/// of a disruption pass).
pub fn solve_with_existing(
    input: &ProvisioningInput<'_>,
    existing: &ExistingNodes,
    closed: &[NodeId],
) -> SchedulingResult {
    scheduler::solve_with_closure(input, SolveSetup::default(), existing, None, closed)
}

/// [`solve_with_existing`] with the nodes of `closure` (made by
/// [`ExistingNodes::closure`] from the same views) closed as well as
/// `closed`: what-ifs that all close the same many nodes search past them
/// for free.
pub(crate) fn solve_with_closure(
    input: &ProvisioningInput<'_>,
    setup: SolveSetup<'_>,
    existing: &ExistingNodes,
    closure: &Closure,
    closed: &[NodeId],
) -> SchedulingResult {
    scheduler::solve_with_closure(input, setup, existing, Some(closure), closed)
}

/// The concrete offering a NodeClaim launches as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchDecision {
    /// Index into the NodePool's catalog `instance_types()`.
    pub instance_type: usize,
    /// Zone.
    pub zone: &'static str,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// Price of the offering.
    pub price: Price,
    /// The capacity reservation of a `reserved` launch.
    pub reservation: Option<&'static str>,
    /// How many offerings were compatible (for the explanation).
    pub compatible_offerings: usize,
    /// Why this one (`cheapest of 143 compatible offerings: c6a.xlarge spot us-east-1a $0.0612/h`).
    pub explanation: String,
    /// The one CreateFleet request's overrides: every available offering of
    /// the chosen capacity type among the (at most 60) instance types sent,
    /// in the provider's order (priority = price, then type name, then
    /// zone). The decision above is the first; EC2 launches the first one
    /// it has capacity for and reports the others it lacks.
    pub overrides: Vec<FleetOverride>,
}

/// One override of a CreateFleet request (an instance type in a zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetOverride {
    /// Index into the NodePool's catalog `instance_types()`.
    pub instance_type: usize,
    /// Zone.
    pub zone: &'static str,
    /// Price of the offering (its priority).
    pub price: Price,
    /// The capacity reservation of a reserved offering.
    pub reservation: Option<&'static str>,
}

/// Why a launch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// No available offering satisfies the NodeClaim.
    #[error("insufficient capacity: {0}")]
    InsufficientCapacity(String),
}

/// Picks the offering a NodeClaim launches as (reference §2.2, the AWS
/// provider's filters, then the cheapest offering of the chosen capacity
/// type, as the AWS KWOK fake EC2 fleet does).
pub fn choose_offering(
    claim: &NewNodeClaim,
    catalog: &Catalog,
) -> Result<LaunchDecision, LaunchError> {
    launch::choose_offering(claim, catalog)
}
