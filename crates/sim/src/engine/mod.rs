//! The discrete-event run of one variant: a cluster whose pods come from
//! owner controllers (Deployments, ReplicaSets, StatefulSets, Jobs,
//! DaemonSets, bare Pods) driven by the scenario's workload steps, bound by
//! the kube-scheduler model, and whose nodes Karpenter provisions.
//!
//! The engine is a clock, an event queue and controllers that each own
//! their state (workload owners, kube-scheduler, Karpenter or the Cluster
//! Autoscaler, termination, spot); decisions come from the deciders
//! ([`crate::scheduler::kube_scheduler::KubeScheduler`],
//! [`crate::karpenter::provisioning::solve`] and
//! [`crate::karpenter::provisioning::choose_offering`]), which never see the
//! clock or a random generator. Time is integer milliseconds; events due at
//! the same millisecond run in the order they were scheduled, so a run is
//! deterministic. Randomness (launch latency) comes from its own seeded
//! stream.
//!
//! Controller cadence (reference: Karpenter core
//! pkg/controllers/provisioning/batcher.go, controller.go):
//! - kube-scheduler runs, at the same instant, whenever pods are pending and
//!   something changed (pod created, node registered, capacity freed);
//! - pods it cannot place are marked Unschedulable and trigger Karpenter's
//!   batcher: the window closes 1 s after the last new pod or 10 s after the
//!   first; then `solve` runs over every provisionable pending pod;
//! - pods still pending re-trigger every 10 s, but only if the cluster
//!   changed since the last solve (an unchanged cluster would get the same
//!   answer, so the requeue sleeps until something changes);
//! - a NodeClaim's node appears at once (unregistered, billed from launch),
//!   registers, and initializes after a latency drawn from the
//!   launch-latency stream, of which the run's initialization delay is the
//!   last part; a node not registered 15 minutes after launch is deleted
//!   and its pods provisioned again (see [`lifecycle`]);
//! - a launch is one CreateFleet request over the decision's overrides:
//!   every override EC2 has no capacity for is marked unavailable for 3
//!   minutes (the ICE cache), the first one with capacity launches, and a
//!   request with none fails once and re-provisions its pods.
//!
//! - Karpenter's disruption controller runs a pass every 10 s, and again at
//!   once after a pass that started a command (see [`disruption`]); its
//!   commands, NodeClaim expiry and NodePool changes delete nodes through
//!   the termination controller's drain (see [`termination`]).
//! - Spot price changes, interruption signals and storm outages come from
//!   the run's spot inputs; Karpenter deletes an interrupted NodeClaim at
//!   the notice and EC2 reclaims the instance 2 minutes later (see
//!   [`spot`], and [`spot_metrics`] for what is measured).
//!
//! - A variant with `cluster_autoscaler` runs Cluster Autoscaler instead of
//!   Karpenter: its loop every 10 s scan interval, node groups as ASGs,
//!   scale-down through the same drain (see [`ca`] and [`ca_spot`]).
//!
//! Simplifications: a node turns Ready and loses its startup taints at the
//! same instant (its initialization); a Job's `activeDeadlineSeconds`
//! serves as its pods' run time when no `karpsim.dev/duration` is given (the
//! Job is not failed at the deadline); re-applying an existing object
//! replaces its spec without rolling its pods.

mod ca;
mod ca_spot;
mod checks;
mod disruption;
mod event_log;
mod export;
mod initial;
mod karpenter;
mod lifecycle;
mod names;
mod node_repair;
mod owners;
mod plan;
mod profile;
mod record;
mod recorders;
mod reservations;
mod run;
mod source;
mod spot;
mod spot_metrics;
mod static_capacity;
mod termination;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ca;
#[cfg(test)]
mod tests_disruption;
#[cfg(test)]
mod tests_lifecycle;
#[cfg(test)]
mod tests_properties;
#[cfg(test)]
mod tests_repair;
#[cfg(test)]
mod tests_spot;
#[cfg(test)]
mod tests_static;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::chunked::ChunkedVec;
use crate::cloud::{CapacityType, Catalog};
use crate::fast_hash::FastMap;
use crate::karpenter::disruption::controller::{
    Command, Disruption, DisruptionInput, DisruptionOptions, PassOutcome,
};
use crate::karpenter::node_repair::{ConditionStatus, NodeCondition};
use crate::karpenter::provisioning::{
    self, LaunchDecision, LaunchError, NewNodeClaim, NodePoolContext, Provisioner,
    ProvisioningInput, SchedulingPolicies, SchedulingResult,
};
use crate::kube::pod::PodSpec;
use crate::kube::provisioning_request::ProvisioningRequest;
use crate::kube::resources::{ResourceKind, Resources};
use crate::kube::workload::{PodDisruptionBudget, Workload, WorkloadKind};
use crate::nodepool::NodePool;
use crate::scheduler::kube_scheduler::{Decision, KubeScheduler, SchedulerConfig};
use crate::scheduler::{Cluster, NodeId, PodId};
use crate::spot::{InterruptionModel, InterruptionSettings, PriceChange, Trigger};

use super::latency::LaunchLatency;
use super::ledger::{BillingId, CostLedger, LedgerError};
use super::lower_bound::{self, BoundTracker};
use super::queue::{EventQueue, ScheduleError};
use super::rng::{RngStreams, SimRng, Stream};
use super::time::{SimDuration, SimTime};

pub use ca::{CaSetup, SCAN_INTERVAL, StartupFailure, StartupFailureKind, UnremovableRecord};
pub use disruption::REPLACEMENT_TIMEOUT;
pub use event_log::EventSink;
pub use export::ClusterExport;
pub use initial::{
    InitialNode, InitialPod, InitialState, InitialWorkload, NodeOwner, UNMANAGED_POOL,
};
pub use lifecycle::{
    DEFAULT_NODE_INITIALIZATION, NodePoolStartupFailure, REGISTRATION_TIMEOUT,
    REGISTRATION_TIMEOUT_REASON,
};
pub use plan::{
    MAX_PLANNED_COMMANDS, NodeVerdict, Plan, PlannedCommand, PlannedNodeClaim, PlannedReplacement,
    plan,
};
pub use profile::{Component, Profile};
pub use record::{
    Churn, DisruptionNote, EventRecord, EventType, MissingTarget, NodeClaimRecord, ReasonCount,
    RunOutput, RunSummary, Sample,
};
pub use run::{
    ClusterExportAndPlan, plan_during, run, run_checked, run_profiled, run_to_sink, run_with,
};
pub use source::{ListSource, SharedSource, SourceError, SourceFactory, StepSource};
pub use spot::{INTERRUPTED, VICTIM_STREAM, source_name};
pub use spot_metrics::SpotSummary;
pub use static_capacity::{OVERPROVISIONED, STATIC_LIMIT_REQUEUE, STATIC_REQUEUE};
pub use termination::{
    DRAIN_REQUEUE, EVICTION_BACKOFF_BASE, EVICTION_BACKOFF_MAX, MIN_DRAIN_TIME, is_critical,
};

/// Karpenter's default batch idle window (`--batch-idle-duration`).
pub const BATCH_IDLE: SimDuration = SimDuration::from_secs(1);
/// Karpenter's default batch maximum window (`--batch-max-duration`).
pub const BATCH_MAX: SimDuration = SimDuration::from_secs(10);

/// The Karpenter operator settings a run uses (core
/// pkg/operator/options/options.go), with upstream's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KarpenterOptions {
    /// `BATCH_IDLE_DURATION`: the batch window closes this long after the
    /// last new pending pod.
    pub batch_idle_duration: SimDuration,
    /// `BATCH_MAX_DURATION`: the batch window never lasts longer.
    pub batch_max_duration: SimDuration,
    /// The `StaticCapacity` gate: the static NodePool controllers run
    /// (off, static NodePools get no NodeClaims).
    pub static_capacity: bool,
    /// The `NodeRepair` gate: the node health controller deletes nodes
    /// unhealthy past their repair policy's toleration.
    pub node_repair: bool,
    /// `minValuesPolicy` and `preferencePolicy`: the scheduler's policies,
    /// for provisioning and the disruption simulations (the run hands them
    /// to the disruption controller in place of `disruption.scheduling`).
    pub scheduling: SchedulingPolicies,
    /// Options the disruption controller decides with (the
    /// `SpotToSpotConsolidation` gate).
    pub disruption: DisruptionOptions,
}

impl Default for KarpenterOptions {
    fn default() -> KarpenterOptions {
        KarpenterOptions {
            batch_idle_duration: BATCH_IDLE,
            batch_max_duration: BATCH_MAX,
            static_capacity: false,
            node_repair: false,
            scheduling: SchedulingPolicies::default(),
            disruption: DisruptionOptions::default(),
        }
    }
}
/// How often a still-provisionable pod re-triggers provisioning.
pub const PROVISIONING_REQUEUE: SimDuration = SimDuration::from_secs(10);
/// How long an offering stays in the ICE cache after a failed launch
/// (aws: pkg/cache `UnavailableOfferingsTTL`).
pub const UNAVAILABLE_OFFERING_TTL: SimDuration = SimDuration::from_mins(3);
/// Interval of the time-series samples.
pub const SAMPLE_INTERVAL: SimDuration = SimDuration::from_mins(1);

/// Everything one variant's run needs; built by
/// [`crate::scenario::prepare`] from a scenario's files.
#[derive(Debug, Clone)]
pub struct RunInput {
    /// Variant name (for messages).
    pub variant: String,
    /// Scenario seed; every random stream derives from it.
    pub seed: u64,
    /// Run length.
    pub duration: SimDuration,
    /// Zones nodes may launch in; offerings elsewhere are unavailable.
    /// Empty = every zone of the catalogs.
    pub zones: Vec<String>,
    /// Launch-to-ready (initialized) latency.
    pub launch_latency: LaunchLatency,
    /// The last part of each launch latency: from the node registering to
    /// it being initialized (Ready, startup taints gone). Zero: both at
    /// one instant.
    pub node_initialization: SimDuration,
    /// Karpenter launches that hang (never register, or never turn
    /// Ready), by NodePool and time.
    pub startup_failures: Vec<NodePoolStartupFailure>,
    /// Workload steps in time order.
    pub steps: Vec<Step>,
    /// Generators and trace importers whose steps are pulled as the clock
    /// reaches them, merged with `steps` (see [`StepSource`]).
    pub sources: Vec<SharedSource>,
    /// NodePools with their catalogs (shaped by their EC2NodeClass, with
    /// a `reserved` offering per capacity reservation it selects).
    pub nodepools: Vec<PoolSetup>,
    /// The capacity reservations the variant's EC2NodeClasses select: each
    /// is charged for from the start of the run until it ends, used or not.
    pub reservations: Vec<crate::cloud::CapacityReservation>,
    /// Offerings the cloud has no capacity for: a launch that picks one
    /// fails with insufficient capacity (tests and what-if runs).
    pub capacity_shortages: BTreeSet<OfferingKey>,
    /// kube-scheduler settings.
    pub scheduler: SchedulerConfig,
    /// Karpenter's operator settings (unused under Cluster Autoscaler).
    pub karpenter: KarpenterOptions,
    /// The resource slot a NodePool `limits.nodes` was read into, if any.
    pub node_count_resource: Option<ResourceKind>,
    /// Spot interruptions: advisor hazard, rebalance lead, storms, trace.
    pub interruptions: InterruptionSettings,
    /// Spot price changes (from a price history), by time.
    pub spot_price_changes: Vec<PriceChange>,
    /// Cluster Autoscaler in place of Karpenter (then `nodepools` is
    /// empty).
    pub cluster_autoscaler: Option<CaSetup>,
    /// The cluster the run begins from (a snapshot); `None` = empty.
    pub initial: Option<Arc<InitialState>>,
    /// Export the cluster at this instant (`run --snapshot-at`).
    pub snapshot_at: Option<SimTime>,
}

/// A NodePool and the catalog of its EC2NodeClass.
#[derive(Debug, Clone)]
pub struct PoolSetup {
    /// The NodePool.
    pub pool: NodePool,
    /// Its catalog.
    pub catalog: Catalog,
}

/// One timed workload action.
#[derive(Debug, Clone)]
pub struct Step {
    /// When.
    pub at: SimTime,
    /// What.
    pub action: StepAction,
}

/// What a workload step does.
#[derive(Debug, Clone)]
pub enum StepAction {
    /// Create (or replace) these objects.
    Apply {
        /// Pod-creating objects.
        workloads: Vec<Workload>,
        /// PodDisruptionBudgets.
        pdbs: Vec<PodDisruptionBudget>,
    },
    /// Set a replica count.
    Scale {
        /// The Deployment, ReplicaSet or StatefulSet.
        target: Target,
        /// New replica count.
        replicas: u32,
    },
    /// Delete an object and its pods.
    Delete {
        /// The object.
        target: Target,
    },
    /// Create these ProvisioningRequests (read by Cluster Autoscaler
    /// variants that enable them; Karpenter does not read them).
    ProvisioningRequests {
        /// The requests, their pod sets resolved.
        requests: Vec<Arc<ProvisioningRequest>>,
    },
    /// Set a status condition of a node, by name (kubelet or the node
    /// monitoring agent reporting it).
    NodeCondition {
        /// The node's name.
        node: String,
        /// Condition type (`Ready`, …; see
        /// [`crate::karpenter::node_repair::CONDITION_TYPES`]).
        condition_type: String,
        /// Its new status.
        status: ConditionStatus,
    },
    /// Replace the NodePools (a NodePool change: nodes it no longer matches
    /// drift; NodeClaims of NodePools that are gone are deleted).
    NodePools {
        /// The new NodePools with their catalogs.
        nodepools: Vec<PoolSetup>,
        /// The resource slot their `limits.nodes` was read into, if any.
        node_count_resource: Option<ResourceKind>,
    },
}

/// The kind of object a step names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetKind {
    /// Deployment.
    Deployment,
    /// ReplicaSet.
    ReplicaSet,
    /// StatefulSet.
    StatefulSet,
    /// DaemonSet.
    DaemonSet,
    /// Job.
    Job,
    /// Pod.
    Pod,
    /// Node (not namespaced).
    Node,
}

impl TargetKind {
    /// The Kubernetes kind, lower case, as in `kubectl get` object names.
    pub fn resource(self) -> &'static str {
        match self {
            TargetKind::Deployment => "deployment",
            TargetKind::ReplicaSet => "replicaset",
            TargetKind::StatefulSet => "statefulset",
            TargetKind::DaemonSet => "daemonset",
            TargetKind::Job => "job",
            TargetKind::Pod => "pod",
            TargetKind::Node => "node",
        }
    }
}

/// The most pods one run creates (bare pods, Jobs' and controllers' pods,
/// replacements included): every pod ever created keeps its record to the
/// end of the run, so this bounds the run's memory (a few GB at most). A
/// run that would pass it stops with [`EngineError::TooManyPods`].
pub const MAX_PODS_CREATED: usize = 1_000_000;

/// A namespaced object named by a step.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    /// Kind.
    pub kind: TargetKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// One offering: instance type × zone × capacity type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OfferingKey {
    /// Instance type name.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Capacity type.
    pub capacity_type: CapacityType,
}

/// An engine failure: these come from engine bugs, not from input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The cost ledger refused an operation.
    #[error("variant {variant}: cost ledger: {source}")]
    Ledger {
        /// Variant.
        variant: String,
        /// Cause.
        source: LedgerError,
    },
    /// A generator or trace could not produce its next step.
    #[error("variant {variant}: {message}")]
    Source {
        /// Variant.
        variant: String,
        /// What went wrong, naming the file, row and column.
        message: String,
    },
    /// The run would create more pods than one run simulates.
    #[error(
        "variant {variant}: the run would create more than {limit} pods, the most one run simulates (see Limits in scenarios/README.md)"
    )]
    TooManyPods {
        /// Variant.
        variant: String,
        /// [`MAX_PODS_CREATED`].
        limit: usize,
    },
    /// An event was scheduled in the past.
    #[error("variant {variant}: event queue: {source}")]
    Queue {
        /// Variant.
        variant: String,
        /// Cause.
        source: ScheduleError,
    },
}

/// The decision functions a run calls. [`Deciders::default`] is the real
/// kube-scheduler model and Karpenter provisioner; tests substitute simple
/// stand-ins to exercise the engine alone.
#[derive(Debug, Clone, Copy)]
pub struct Deciders {
    /// kube-scheduler.
    pub schedule: fn(&mut KubeScheduler, &Cluster, &[PodId]) -> Vec<Decision>,
    /// Karpenter's solve.
    pub solve: fn(&Provisioner, &ProvisioningInput<'_>) -> SchedulingResult,
    /// Karpenter's launch decision.
    pub choose_offering: fn(&NewNodeClaim, &Catalog) -> Result<LaunchDecision, LaunchError>,
    /// One pass of Karpenter's disruption controller.
    pub next_command: fn(&Disruption, &DisruptionInput<'_>, &Provisioner) -> PassOutcome,
    /// The re-check of a command after the validation delay.
    pub validate:
        fn(&Disruption, &DisruptionInput<'_>, &Provisioner, &Command) -> Result<(), String>,
}

impl Default for Deciders {
    fn default() -> Self {
        Deciders {
            schedule: KubeScheduler::schedule,
            solve: Provisioner::solve,
            choose_offering: provisioning::choose_offering,
            next_command: Disruption::pass,
            validate: Disruption::validate,
        }
    }
}

/// Something that happens at an instant.
#[derive(Debug, Clone)]
enum Event {
    /// Apply workload step `n`.
    Step(usize),
    /// Apply the ready step of source `n` and pull its next.
    SourceStep(usize),
    /// Run kube-scheduler over pending pods.
    SchedulerRun,
    /// Close Karpenter's batch window if it is due.
    BatchCheck,
    /// Karpenter's 10 s pod requeue.
    Requeue,
    /// A launched node registers and initializes at one instant.
    NodeReady(NodeId),
    /// A launched node registers (NotReady).
    NodeRegistered(NodeId),
    /// A registered node initializes (Ready, startup taints gone).
    NodeInitialized(NodeId),
    /// Karpenter's liveness check of a NodeClaim that may not have
    /// registered.
    RegistrationTimeout(NodeId),
    /// A pod finishes its run.
    PodDone(PodId),
    /// Workload `n`, a Job, reaches its `activeDeadlineSeconds`.
    JobDeadline(usize),
    /// An offering leaves the ICE cache.
    IceExpired(OfferingKey),
    /// One pass of the disruption controller (if still due).
    DisruptionPass,
    /// The validation delay of the waiting command is over.
    ValidateCommand,
    /// A command's replacements had their time to initialize.
    CommandTimeout(u64),
    /// A NodeClaim reaches its `expireAfter`.
    Expire(NodeId),
    /// The termination controller looks at a deleting node (if still due).
    DrainTick(NodeId),
    /// The eviction queue tries to evict a pod.
    Evict(PodId),
    /// A terminating pod's grace period is over: it is gone.
    PodGone(PodId),
    /// Spot price changes due now, from this index of the input's list.
    SpotPrices(usize),
    /// A storm or trace row comes due.
    SpotTrigger(Trigger),
    /// EC2 signals a spot instance.
    Spot(spot::SpotSignal),
    /// EC2 reclaims an interrupted spot instance.
    SpotReclaim(NodeId),
    /// Capacity reservation `n` (of the input's list) begins expiring.
    ReservationExpiring(usize),
    /// Capacity reservation `n` ends.
    ReservationEnd(usize),
    /// The node health controller looks at a node (if still due).
    RepairCheck(NodeId),
    /// A reconcile of the static NodePool controllers (if still due).
    StaticReconcile,
    /// A Cluster Autoscaler loop.
    CaLoop,
    /// Export the cluster (`run --snapshot-at`).
    Export,
}

/// Engine-side facts about a pod (indexed like the cluster's pod arena).
/// One is kept for every pod a run creates, so it holds only what the
/// reports and the owners need to the end; the namespace is its
/// workload's, and the facts of scheduling attempts live in
/// [`Engine::attempts`] while the pod may still be scheduled.
#[derive(Debug, Clone)]
struct PodMeta {
    /// Index of the owning workload in `owners.workloads`.
    workload: usize,
    /// Its name, unless that is its workload's (a bare pod's), which is
    /// then not kept twice (see [`Engine::pod_name`]).
    name: Option<Box<str>>,
    ordinal: Option<u32>,
    created_at: SimTime,
    first_bound: Option<SimTime>,
    daemonset: bool,
    removed: bool,
    /// Evicted (or deleted) with no owner to re-create it.
    lost: bool,
    /// Bound in the snapshot the run began from: its pending time is not
    /// the run's.
    bound_before_run: bool,
}

/// What the engine remembers of a pod's failed scheduling attempts and
/// nominations: kept for pods that had any, until the pod finishes or is
/// deleted (neither is scheduled again).
#[derive(Debug, Clone, Default)]
struct Attempts {
    /// The latest reason it could not be placed (its `PodScheduled`
    /// condition's message).
    last_reason: Option<Arc<str>>,
    /// When kube-scheduler's `FailedScheduling` event series for it was
    /// last observed.
    failed_scheduling_observed: Option<SimTime>,
    /// When Karpenter last published a `FailedScheduling` and a
    /// `Nominated` event for it.
    karpenter_failed_published: Option<SimTime>,
    nominated_published: Option<SimTime>,
}

/// Engine-side facts about a node (indexed like the cluster's node arena).
#[derive(Debug, Clone)]
struct NodeMeta {
    billing: BillingId,
    instance_type: String,
    zone: String,
    ready_at: Option<SimTime>,
    deleted_at: Option<SimTime>,
    reason_deleted: String,
    /// Why it was launched (`provisioning`, or the disruption reason whose
    /// command it replaces).
    launch_reason: String,
    /// Set once its NodeClaim is deleted: it drains, then terminates.
    deleting: Option<termination::Deleting>,
    /// The capacity reservation it runs on (index into the run's list).
    reservation: Option<usize>,
    /// Status conditions set by scenario steps and by the kubelet while
    /// the node starts (none: healthy).
    conditions: Vec<NodeCondition>,
    /// How its launch hangs, if it does (a scenario's startup failure).
    hangs: Option<StartupFailureKind>,
}

/// The kind of object a workload of `kind` is.
fn target_kind(kind: &WorkloadKind) -> TargetKind {
    match kind {
        WorkloadKind::Deployment { .. } => TargetKind::Deployment,
        WorkloadKind::ReplicaSet { .. } => TargetKind::ReplicaSet,
        WorkloadKind::StatefulSet { .. } => TargetKind::StatefulSet,
        WorkloadKind::Job(_) => TargetKind::Job,
        WorkloadKind::DaemonSet => TargetKind::DaemonSet,
        WorkloadKind::Pod => TargetKind::Pod,
    }
}

impl WorkloadState {
    fn kind(&self) -> TargetKind {
        target_kind(&self.workload.kind)
    }

    fn namespace(&self) -> &str {
        &self.workload.namespace
    }

    fn name(&self) -> &str {
        &self.workload.name
    }

    /// Whether it is the object `target` names.
    fn is(&self, target: &Target) -> bool {
        self.kind() == target.kind
            && self.workload.namespace == target.namespace
            && self.workload.name == target.name
    }

    /// Its object name in events (`deployment/default/web`).
    fn object(&self) -> String {
        owners::object_name(self.kind(), self.namespace(), self.name())
    }
}

impl Engine<'_> {
    /// Starts billing a node launched now, adds it to the cluster and counts
    /// the launch (shared by Karpenter NodeClaims and Cluster Autoscaler
    /// instances).
    fn add_launched_node(
        &mut self,
        node: crate::scheduler::Node,
        pool: &str,
        (capacity_type, price): (CapacityType, crate::cloud::Price),
        (instance_type, zone): (&str, &str),
        reason: &str,
    ) -> Result<NodeId, EngineError> {
        let billing = self
            .ledger
            .launch(crate::ledger::NodeLaunch {
                node_name: node.name.clone(),
                pool: pool.to_string(),
                capacity_type,
                launched_at: self.now(),
                price,
            })
            .map_err(|e| self.ledger_error(e))?;
        let (cpu, memory) = (
            node.allocatable.cpu_millis(),
            node.allocatable.memory_bytes(),
        );
        let node_id = self.cluster.add_node(node);
        // A reserved node is paid for by its reservation's fixed charge:
        // the bound counts it as that reservation's supply instead.
        if capacity_type != CapacityType::Reserved {
            self.record.bound.node_added(node_id, cpu, memory, price);
        }
        debug_assert_eq!(node_id.0 as usize, self.node_meta.len());
        self.node_meta.push(NodeMeta {
            billing,
            instance_type: instance_type.to_string(),
            zone: zone.to_string(),
            ready_at: None,
            deleted_at: None,
            reason_deleted: String::new(),
            launch_reason: reason.to_string(),
            deleting: None,
            reservation: None,
            conditions: Vec::new(),
            hangs: None,
        });
        self.record.launched += 1;
        *self
            .record
            .churn
            .nodeclaims_launched_by_reason
            .entry(reason.to_string())
            .or_default() += 1;
        self.record.peak_nodes = self.record.peak_nodes.max(self.cluster.node_count());
        Ok(node_id)
    }
}

impl Engine<'_> {
    /// A node left the cluster: the provisioner's kept setup hears of it.
    fn node_removed_from_caches(&mut self) {
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.provisioner.node_removed();
        }
    }
}

/// Karpenter's open batch window.
#[derive(Debug, Clone)]
struct Batch {
    opened: SimTime,
    last_new: SimTime,
    members: BTreeSet<PodId>,
    /// `batchIdleDuration` of the run.
    idle: SimDuration,
    /// `batchMaxDuration` of the run.
    max: SimDuration,
}

impl Batch {
    fn deadline(&self) -> SimTime {
        (self.last_new + self.idle).min(self.opened + self.max)
    }
}

/// A pod-creating object and its controller's state. Its kind, namespace
/// and name are the workload's (not kept twice: a long run has one per
/// bare pod it ever created).
#[derive(Debug, Clone)]
struct WorkloadState {
    workload: Workload,
    desired: u32,
    pods: Vec<PodId>,
    /// Of `pods`, how many are neither finished nor gone: not terminating
    /// and terminating (what the controller counts before it acts), kept
    /// in step by every change to them (see `Engine::recount`).
    active_pods: usize,
    terminating_pods: usize,
    next_suffix: u64,
    succeeded: u32,
    complete: bool,
    deleted: bool,
}

/// One variant's run: the clock and event queue, the cluster and the cloud,
/// and the controllers that act on them, each owning its state.
struct Engine<'a> {
    input: &'a RunInput,
    deciders: Deciders,
    queue: EventQueue<Event>,
    cluster: Cluster,
    ledger: CostLedger,
    latency_rng: SimRng,
    /// Offerings in the insufficient-capacity cache, with their expiry.
    ice: BTreeMap<OfferingKey, SimTime>,
    /// Per pod and per node (by id), what the engine knows beyond the
    /// cluster model.
    pod_meta: ChunkedVec<PodMeta>,
    node_meta: Vec<NodeMeta>,
    /// Scheduling attempts of the pods that had any and may still be
    /// scheduled (looked up by id only, never walked).
    attempts: FastMap<PodId, Attempts>,
    /// The specs lately given to finished bare pods, most recent first
    /// (see [`Engine::retire_bare_pod`]).
    retired_specs: Vec<Arc<PodSpec>>,
    /// Bumped on every cluster change; compared by the requeue.
    version: u64,
    /// The workload controllers (Deployments, Jobs, ...) and the sources
    /// that feed them.
    owners: OwnerControllers,
    /// kube-scheduler's queue flag and memo.
    scheduler: SchedulerState,
    /// Karpenter's provisioner and disruption controller, or the Cluster
    /// Autoscaler.
    autoscaler: Autoscaler,
    /// Pods in the eviction queue, with their failed attempts so far.
    evicting: BTreeMap<PodId, u32>,
    /// Spot prices, interruptions and their measures.
    spot: spot::SpotState,
    /// What the run reports: events, samples, counters, the cost floor.
    record: Recorder<'a>,
}

/// The autoscaler a variant runs.
enum Autoscaler {
    Karpenter(Box<KarpenterState>),
    ClusterAutoscaler(Box<ca::CaRun>),
}

impl Autoscaler {
    fn karpenter(&self) -> Option<&KarpenterState> {
        match self {
            Autoscaler::Karpenter(state) => Some(state),
            Autoscaler::ClusterAutoscaler(_) => None,
        }
    }

    fn karpenter_mut(&mut self) -> Option<&mut KarpenterState> {
        match self {
            Autoscaler::Karpenter(state) => Some(state),
            Autoscaler::ClusterAutoscaler(_) => None,
        }
    }

    /// Karpenter's state, in code only a Karpenter variant reaches: its
    /// events (batch, requeue, ICE expiry, disruption passes) are only
    /// scheduled there, and shared paths use [`Autoscaler::karpenter`].
    fn kp(&self) -> &KarpenterState {
        self.karpenter()
            .expect("Karpenter state used in a Cluster Autoscaler run")
    }

    fn kp_mut(&mut self) -> &mut KarpenterState {
        self.karpenter_mut()
            .expect("Karpenter state used in a Cluster Autoscaler run")
    }

    fn ca(&self) -> Option<&ca::CaRun> {
        match self {
            Autoscaler::ClusterAutoscaler(run) => Some(run),
            Autoscaler::Karpenter(_) => None,
        }
    }

    fn ca_mut(&mut self) -> Option<&mut ca::CaRun> {
        match self {
            Autoscaler::ClusterAutoscaler(run) => Some(run),
            Autoscaler::Karpenter(_) => None,
        }
    }
}

/// Karpenter's state: the NodePools in force with their catalogs, the kept
/// solve setup, the batch window and requeue, and the disruption controller.
struct KarpenterState {
    /// The NodePools in force (a `NodePools` step replaces them).
    pools: Vec<PoolSetup>,
    /// One shared copy of each NodePool name its NodeClaims carry.
    pool_names: BTreeMap<String, Arc<str>>,
    /// The slot of `limits.nodes` of the NodePools in force.
    node_count_resource: Option<ResourceKind>,
    /// Catalogs with out-of-scenario zones marked unavailable.
    base_catalogs: Vec<Catalog>,
    /// `base_catalogs` minus the ICE cache.
    catalogs: Vec<Catalog>,
    /// `catalogs` still has offerings that left the ICE cache marked: they
    /// are rebuilt before the next event that is not another expiry, so
    /// offerings expiring together cost one rebuild.
    catalogs_stale: bool,
    /// The provisioner, with the solve setup for `pools`, `catalogs` and
    /// the DaemonSets it keeps (told whenever `catalogs` change).
    provisioner: Provisioner,
    /// NodeClaims named so far per NodePool name (names are never reused).
    nodes_per_pool: BTreeMap<String, u64>,
    batch: Option<Batch>,
    requeue: Requeue,
    /// The disruption controller and its orchestration queue.
    disruption: disruption::DisruptionState,
    /// The capacity reservations and their use.
    reservations: reservations::Reservations,
    /// The static NodePool controllers' next reconcile, if scheduled.
    static_next: Option<SimTime>,
    /// The token bucket Karpenter's `Nominated` events share.
    nomination_events: recorders::NominationRateLimiter,
}

impl KarpenterState {
    /// Each NodePool in force with its catalog, as the deciders take them.
    fn contexts(&self) -> Vec<NodePoolContext<'_>> {
        self.pools
            .iter()
            .zip(&self.catalogs)
            .map(|(setup, catalog)| NodePoolContext {
                pool: &setup.pool,
                catalog,
            })
            .collect()
    }
}

/// The provisioner's requeue: solve again while pods stay pending.
#[derive(Default)]
struct Requeue {
    last_solve_version: Option<u64>,
    last_solve_at: SimTime,
    armed: bool,
    waiting: bool,
}

/// The workload controllers' state.
#[derive(Default)]
struct OwnerControllers {
    /// Every workload ever applied (each generated bare pod is one).
    workloads: ChunkedVec<WorkloadState>,
    /// Indices into `workloads` of the Deployments, ReplicaSets and
    /// StatefulSets (what PDB percentages count; a run may create far more
    /// bare pods and Jobs).
    scalable_workloads: Vec<usize>,
    /// Indices into `workloads` of the DaemonSets.
    daemonset_workloads: Vec<usize>,
    /// Workloads by kind, namespace and name.
    workload_index: names::NameIndex,
    /// Pods by namespace and name.
    pod_names: names::NameIndex,
    /// Scale and delete steps whose object did not exist, by verb and
    /// object: (first time, steps).
    missing_targets: BTreeMap<(&'static str, Target), (SimTime, u64)>,
    /// Jobs failed at their `activeDeadlineSeconds`.
    jobs_failed: u64,
    /// Generators and trace importers of the run.
    sources: source::OpenSources,
}

/// kube-scheduler and its queue flag.
struct SchedulerState {
    queued: bool,
    kube_scheduler: KubeScheduler,
}

/// What a run records for its reports.
struct Recorder<'a> {
    events: event_log::EventLog<'a>,
    samples: Vec<Sample>,
    next_sample: SimTime,
    usage: UsageIntegrals,
    peak_nodes: usize,
    launched: u64,
    launch_failures: u64,
    last_progress: SimTime,
    /// Churn counters for the summary.
    churn: Churn,
    /// The cost lower bound, kept up to date with nodes and prices.
    bound: BoundTracker,
    /// Invariant violations, when checking (see [`run_checked`]).
    violations: Option<Vec<String>>,
    /// Wall time per component, when profiling.
    profile: Option<Profile>,
    /// The cluster at `snapshot_at`, once taken.
    export: Option<ClusterExport>,
}

/// ∫ requested / allocatable over time, in (milli-cores | bytes) × ms.
#[derive(Default)]
struct UsageIntegrals {
    integrated_until: SimTime,
    cpu_requested_ms: i128,
    cpu_allocatable_ms: i128,
    memory_requested_ms: i128,
    memory_allocatable_ms: i128,
}

impl<'a> Engine<'a> {
    fn new(input: &'a RunInput, deciders: Deciders) -> Engine<'a> {
        let base_catalogs: Vec<Catalog> = input
            .nodepools
            .iter()
            .map(|setup| restrict_zones(&setup.catalog, &input.zones))
            .collect();
        let bound = BoundTracker::new(match &input.cluster_autoscaler {
            Some(setup) => lower_bound::node_group_types(setup),
            None => lower_bound::nodepool_types(&input.nodepools, &base_catalogs),
        });
        let autoscaler = match &input.cluster_autoscaler {
            Some(setup) => Autoscaler::ClusterAutoscaler(Box::new(ca::CaRun::new(setup))),
            None => Autoscaler::Karpenter(Box::new(KarpenterState {
                pools: input.nodepools.clone(),
                pool_names: BTreeMap::new(),
                node_count_resource: input.node_count_resource,
                catalogs: base_catalogs.clone(),
                base_catalogs,
                catalogs_stale: false,
                provisioner: Provisioner::new(),
                nodes_per_pool: BTreeMap::new(),
                batch: None,
                requeue: Requeue::default(),
                disruption: disruption::DisruptionState::new(DisruptionOptions {
                    scheduling: input.karpenter.scheduling,
                    ..input.karpenter.disruption
                }),
                reservations: reservations::Reservations::new(&input.reservations),
                static_next: None,
                nomination_events: recorders::NominationRateLimiter::new(),
            })),
        };
        Engine {
            input,
            deciders,
            queue: EventQueue::new(),
            cluster: Cluster::new(),
            ledger: CostLedger::new(),
            latency_rng: RngStreams::new(input.seed).get(Stream::LaunchLatency),
            ice: BTreeMap::new(),
            pod_meta: ChunkedVec::new(),
            attempts: FastMap::default(),
            retired_specs: Vec::new(),
            node_meta: Vec::new(),
            version: 0,
            owners: OwnerControllers::default(),
            scheduler: SchedulerState {
                queued: false,
                kube_scheduler: KubeScheduler::new(input.scheduler),
            },
            autoscaler,
            evicting: BTreeMap::new(),
            spot: spot::SpotState::new(
                InterruptionModel::new(input.interruptions.clone()),
                input.seed,
            ),
            record: Recorder {
                events: event_log::EventLog::in_memory(),
                samples: Vec::new(),
                next_sample: SimTime::ZERO,
                usage: UsageIntegrals::default(),
                peak_nodes: 0,
                launched: 0,
                launch_failures: 0,
                last_progress: SimTime::ZERO,
                churn: Churn::default(),
                bound,
                violations: None,
                profile: None,
                export: None,
            },
        }
    }

    fn now(&self) -> SimTime {
        self.queue.now()
    }

    fn schedule(&mut self, at: SimTime, event: Event) -> Result<(), EngineError> {
        self.queue
            .schedule(at, event)
            .map(|_| ())
            .map_err(|source| EngineError::Queue {
                variant: self.input.variant.clone(),
                source,
            })
    }

    fn ledger_error(&self, source: LedgerError) -> EngineError {
        EngineError::Ledger {
            variant: self.input.variant.clone(),
            source,
        }
    }

    fn handle(&mut self, event: Event) -> Result<(), EngineError> {
        if self
            .autoscaler
            .karpenter()
            .is_some_and(|k| k.catalogs_stale)
            && !matches!(event, Event::IceExpired(_))
        {
            self.rebuild_catalogs();
        }
        match event {
            Event::Step(index) => self.apply_step(index),
            Event::SourceStep(index) => self.apply_source_step(index),
            Event::SchedulerRun => self.run_scheduler(),
            Event::BatchCheck => self.check_batch(),
            Event::Requeue => self.requeue(),
            Event::NodeReady(node) => self.node_ready(node),
            Event::NodeRegistered(node) => self.node_registered(node),
            Event::NodeInitialized(node) => self.node_initialized(node),
            Event::RegistrationTimeout(node) => self.registration_timeout(node),
            Event::PodDone(pod) => self.pod_done(pod),
            Event::JobDeadline(w) => self.job_deadline(w),
            Event::IceExpired(key) => self.ice_expired(key),
            Event::DisruptionPass => self.disruption_pass(),
            Event::ValidateCommand => self.validate_command(),
            Event::CommandTimeout(id) => self.command_timeout(id),
            Event::Expire(node) => self.expire(node),
            Event::DrainTick(node) => self.drain_tick(node),
            Event::Evict(pod) => self.try_evict(pod),
            Event::PodGone(pod) => self.pod_gone(pod),
            Event::SpotPrices(first) => self.apply_spot_prices(first),
            Event::SpotTrigger(trigger) => self.spot_trigger(trigger),
            Event::Spot(signal) => self.spot_signal(signal),
            Event::SpotReclaim(node) => self.spot_reclaim(node),
            Event::ReservationExpiring(index) => self.reservation_expiring(index),
            Event::ReservationEnd(index) => self.reservation_end(index),
            Event::StaticReconcile => self.static_reconcile(),
            Event::RepairCheck(node) => self.repair_check(node),
            Event::CaLoop => self.ca_loop(),
            Event::Export => {
                self.record.export = Some(self.export());
                Ok(())
            }
        }
    }

    /// Something in the cluster changed: the requeue may act again.
    fn touch(&mut self) -> Result<(), EngineError> {
        self.version += 1;
        let now = self.now();
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            let requeue = &mut karpenter.requeue;
            if requeue.waiting && !requeue.armed {
                requeue.waiting = false;
                requeue.armed = true;
                let at = (requeue.last_solve_at + PROVISIONING_REQUEUE).max(now);
                self.schedule(at, Event::Requeue)?;
            }
        }
        Ok(())
    }

    /// Queues a kube-scheduler pass at the current instant (once).
    fn wake_scheduler(&mut self) -> Result<(), EngineError> {
        if !self.scheduler.queued {
            self.scheduler.queued = true;
            let now = self.now();
            self.schedule(now, Event::SchedulerRun)?;
        }
        Ok(())
    }

    fn log(&mut self, kind: EventType, reason: &str, object: String, message: String) {
        self.record.events.record(EventRecord {
            time: self.now(),
            kind,
            reason: reason.to_string(),
            object,
            message,
        });
    }

    fn pod_object(&self, pod: PodId) -> String {
        self.pod_path("pod/", pod)
    }

    /// `namespace/name` of a pod.
    fn pod_key(&self, pod: PodId) -> String {
        self.pod_path("", pod)
    }

    /// `prefix` then `namespace/name` of a pod, built in one allocation
    /// (events name pods by the hundred thousand).
    fn pod_path(&self, prefix: &str, pod: PodId) -> String {
        let (namespace, name) = (self.pod_namespace(pod), self.pod_name(pod));
        let mut path = String::with_capacity(prefix.len() + namespace.len() + 1 + name.len());
        path.push_str(prefix);
        path.push_str(namespace);
        path.push('/');
        path.push_str(name);
        path
    }

    /// A pod's name.
    fn pod_name(&self, pod: PodId) -> &str {
        let meta = &self.pod_meta[pod.0 as usize];
        match &meta.name {
            Some(name) => name,
            None => self.owners.workloads[meta.workload].name(),
        }
    }

    /// What [`PodMeta::name`] keeps of a name given to a pod of workload
    /// `w`.
    fn kept_pod_name(&self, w: usize, name: &str) -> Option<Box<str>> {
        (self.owners.workloads[w].name() != name).then(|| name.into())
    }

    /// A pod's namespace (its workload's).
    fn pod_namespace(&self, pod: PodId) -> &str {
        let meta = &self.pod_meta[pod.0 as usize];
        self.owners.workloads[meta.workload].namespace()
    }

    /// A pod will not be scheduled again (it finished or was deleted):
    /// its scheduling attempts are forgotten.
    fn forget_attempts(&mut self, pod: PodId) {
        self.attempts.remove(&pod);
    }

    /// A bare pod that finished and left its node, or was deleted, is
    /// never created, scheduled or placed again, and its workload (the pod
    /// itself) never reads its template again. Both then hold a spec
    /// without the pod's own requests and run time, shared by the other
    /// such pods of the same shape: a generated pod's spec is its own (its
    /// requests are drawn), and a long run creates hundreds of thousands.
    /// What is still read of a finished pod (namespace, labels and the
    /// other fields, for listings and PodDisruptionBudget status) is kept.
    fn retire_bare_pod(&mut self, pod: PodId) {
        let w = self.pod_meta[pod.0 as usize].workload;
        if self.owners.workloads[w].kind() != TargetKind::Pod {
            return;
        }
        let in_cluster = self.cluster.pod(pod);
        if in_cluster.is_some_and(|p| !p.phase.is_terminal() || p.node.is_some()) {
            return;
        }
        let (spec, in_cluster) = match in_cluster {
            Some(p) => (p.spec.clone(), true),
            None => (self.owners.workloads[w].workload.template.clone(), false),
        };
        let retired = self.retired_spec(&spec);
        if in_cluster {
            self.cluster.replace_finished_spec(pod, retired.clone());
        }
        self.owners.workloads[w].workload.template = retired;
    }

    /// `spec` without requests and run time, shared with the pods retired
    /// lately whose specs are otherwise the same.
    fn retired_spec(&mut self, spec: &PodSpec) -> Arc<PodSpec> {
        /// Shapes remembered (generators of bare pods in one run are few).
        const KEPT: usize = 8;
        let mut retired = spec.clone();
        retired.requests = Resources::ZERO;
        retired.run_duration = None;
        if let Some(found) = self.retired_specs.iter().position(|s| **s == retired) {
            let shared = self.retired_specs.remove(found);
            self.retired_specs.insert(0, shared.clone());
            return shared;
        }
        let shared = Arc::new(retired);
        self.retired_specs.insert(0, shared.clone());
        self.retired_specs.truncate(KEPT);
        shared
    }

    fn node_name(&self, node: NodeId) -> String {
        self.cluster
            .node(node)
            .map_or_else(|| format!("node#{}", node.0), |n| n.name.clone())
    }

    /// Moves time forward to `to`: integrates allocation, takes the
    /// per-minute samples due before `to`, reports progress.
    fn advance_to(&mut self, to: SimTime, progress: &mut dyn FnMut(SimTime)) {
        while self.record.next_sample < to {
            let at = self.record.next_sample;
            self.integrate_until(at);
            self.sample_at(at);
            self.record.next_sample = at + SAMPLE_INTERVAL;
        }
        self.integrate_until(to);
        if to >= self.record.last_progress + SAMPLE_INTERVAL {
            self.record.last_progress = to;
            progress(to);
        }
    }

    fn sample_at(&mut self, at: SimTime) {
        if self.record.samples.last().is_some_and(|s| s.time == at) {
            return;
        }
        let mut sample = Sample {
            time: at,
            hourly_rate: self.ledger.current_hourly_rate(),
            ..Sample::default()
        };
        for (_, node) in self.cluster.nodes() {
            sample.nodes += 1;
            if node.registered && node.initialized {
                sample.nodes_ready += 1;
            }
            sample.cpu_requested_millis += node.requested.cpu_millis();
            sample.cpu_allocatable_millis += node.allocatable.cpu_millis();
            sample.memory_requested_bytes += node.requested.memory_bytes();
            sample.memory_allocatable_bytes += node.allocatable.memory_bytes();
        }
        sample.pending_pods = self.cluster.pending_pods().count();
        sample.lower_bound_rate = crate::cloud::Price::from_micros(
            self.record
                .bound
                .rate(sample.cpu_requested_millis, sample.memory_requested_bytes),
        );
        self.record.samples.push(sample);
    }
}

/// A copy of `catalog` whose offerings outside `zones` are unavailable
/// (every zone is kept when `zones` is empty).
pub fn restrict_zones(catalog: &Catalog, zones: &[String]) -> Catalog {
    let mut restricted = catalog.clone();
    if !zones.is_empty() {
        restricted.restrict_to_zones(zones);
    }
    restricted
}

impl Engine<'_> {
    /// Indices into `workloads` of the live DaemonSets, in creation order.
    fn live_daemonsets(&self) -> impl Iterator<Item = usize> + '_ {
        self.owners
            .daemonset_workloads
            .iter()
            .copied()
            .filter(|&w| {
                !self.owners.workloads[w].deleted
                    && self.owners.workloads[w].kind() == TargetKind::DaemonSet
            })
    }

    /// Shared pod template handles of the live DaemonSets (their overhead).
    fn daemonset_templates(&self) -> Vec<Arc<PodSpec>> {
        self.live_daemonsets()
            .map(|w| self.owners.workloads[w].workload.template.clone())
            .collect()
    }
}
