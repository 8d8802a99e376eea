//! The scale-down planner (`core/scaledown/planner/planner.go`,
//! `eligibility/eligibility.go`, `unneeded/nodes.go`, `simulator/cluster.go`,
//! `simulator/drainability/rules/**`, `simulator/utilization/info.go`,
//! `core/scaledown/budgets/budgets.go`).
//!
//! 1. Eligibility, per registered node: being deleted → CurrentlyBeingDeleted;
//!    in no group → NotAutoscaled; `scale-down-disabled` annotation →
//!    ScaleDownDisabledAnnotation; utilization `max(cpu, mem)` of requests
//!    (DaemonSet and mirror pods included unless ignored) over allocatable
//!    above the threshold → NotUnderutilized.
//! 2. Removal simulation, empty candidates first, then the previously
//!    unneeded, then node order: the drainability rules decide which pods
//!    must move and which block (first rule with an opinion wins, in
//!    upstream's order); the PDB budget left must cover the node's pods;
//!    the node is cordoned and each pod must pass the filters on another
//!    registered, uncordoned node (first fit) — else NoPlaceToMovePods.
//!    A successful simulation is committed: later candidates see the moved
//!    pods, the cordon and the spent PDB budget.
//! 3. Unneeded nodes keep their first-seen time; one is removable once
//!    unneeded for longer than `scaleDownUnneededTime` (a registered node
//!    that is not Ready past its startup time: `scaleDownUnreadyTime`) and
//!    its group stays above min size counting deletions in progress.
//! 4. Budgets: at most `maxScaleDownParallelism` deletions in flight, of
//!    which `maxDrainParallelism` non-empty; empty nodes first.

use std::collections::{BTreeMap, BTreeSet};

use super::config::{CaConfig, GroupOptions};
use super::groups::{NodeGroupState, Readiness, is_mirror};
use super::snapshot::Snapshot;
use super::state::{CaState, DeletionKind};
use crate::cluster::{Cluster, NodeId, Pod, PodId};
use crate::kube::resources::ResourceKind;
use crate::pdb::PdbLimits;
use crate::time::SimTime;

/// Node annotation that keeps a node from scale-down
/// (`ScaleDownDisabledAnnotation`).
pub const SCALE_DOWN_DISABLED_ANNOTATION: &str =
    "cluster-autoscaler.kubernetes.io/scale-down-disabled";
/// Pod annotation overriding the drain rules.
pub const SAFE_TO_EVICT_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// Pod annotation listing local volumes that may be lost.
pub const SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION: &str =
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";
/// The namespace of system pods.
pub const KUBE_SYSTEM: &str = "kube-system";

/// Why a pod keeps its node (`simulator/drain.go` `BlockingPodReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BlockingRule {
    /// No controller owns the pod.
    NotReplicated,
    /// Non-memory `emptyDir` or `hostPath` not listed as safe to lose.
    LocalStorageRequested,
    /// `safe-to-evict: "false"` (or `"on-completion"` while running).
    NotSafeToEvictAnnotation,
    /// A `kube-system` pod without a PDB, younger than the timeout.
    UnmovableKubeSystemPod,
    /// A matching PDB allows no (more) disruption.
    NotEnoughPdb,
}

/// Why a node is not removed (`simulator/cluster.go` `UnremovableReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnremovableReason {
    /// Already being deleted.
    CurrentlyBeingDeleted,
    /// In no node group.
    NotAutoscaled,
    /// Node annotation `scale-down-disabled: "true"`.
    ScaleDownDisabledAnnotation,
    /// Utilization above the threshold.
    NotUnderutilized,
    /// A pod blocks the drain.
    BlockedByPod {
        /// The pod.
        pod: PodId,
        /// The rule.
        rule: BlockingRule,
    },
    /// Some pod fits no other node.
    NoPlaceToMovePods,
    /// Unneeded, but not for long enough yet.
    NotUnneededLongEnough,
    /// Unready and unneeded, but not for `scaleDownUnreadyTime` yet.
    NotUnreadyLongEnough,
    /// The group would go below its min size.
    NodeGroupMinSizeReached,
}

/// What one pod means for draining its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodDrain {
    /// Not moved (DaemonSet, mirror, terminal, terminating).
    Skip,
    /// Must be re-scheduled elsewhere.
    Move,
    /// Blocks the node.
    Block(BlockingRule),
}

/// The PDB budget left in this pass (`RemainingPdbTracker`).
#[derive(Debug, Clone)]
pub struct PdbTracker<'a> {
    limits: &'a PdbLimits,
    remaining: Vec<i64>,
}

impl<'a> PdbTracker<'a> {
    /// Starts from the published `disruptionsAllowed`.
    pub fn new(limits: &'a PdbLimits) -> Self {
        let remaining = limits
            .limits()
            .iter()
            .map(|l| i64::from(l.disruptions_allowed))
            .collect();
        PdbTracker { limits, remaining }
    }

    fn matching(&self, pod: &Pod) -> impl Iterator<Item = usize> {
        self.limits.matching_indices(pod).into_iter()
    }

    /// Whether any PDB selects the pod.
    pub fn has_pdb(&self, pod: &Pod) -> bool {
        self.matching(pod).next().is_some()
    }

    /// The first pod whose PDBs cannot absorb all of `pods` leaving.
    pub fn first_blocked(&self, pods: &[&Pod]) -> Option<usize> {
        let mut used = vec![0i64; self.remaining.len()];
        for (k, pod) in pods.iter().enumerate() {
            for i in self.matching(pod).collect::<Vec<_>>() {
                used[i] += 1;
                if used[i] > self.remaining[i] {
                    return Some(k);
                }
            }
        }
        None
    }

    /// Spends budget for `pods`.
    pub fn remove(&mut self, pods: &[&Pod]) {
        for pod in pods {
            for i in self.matching(pod).collect::<Vec<_>>() {
                self.remaining[i] -= 1;
            }
        }
    }
}

/// The drainability rules, in upstream order, for one pod.
pub fn classify(pod: &Pod, config: &CaConfig, pdbs: &PdbTracker<'_>, now: SimTime) -> PodDrain {
    let annotation = pod
        .spec
        .annotations
        .get(SAFE_TO_EVICT_ANNOTATION)
        .map(String::as_str);
    if is_mirror(pod) || pod.lifecycle.deleting_since.is_some() || pod.is_daemonset() {
        return PodDrain::Skip;
    }
    if annotation == Some("true") {
        return PodDrain::Move;
    }
    if pod.phase.is_terminal() {
        return PodDrain::Skip;
    }
    if annotation == Some("on-completion") {
        return PodDrain::Block(BlockingRule::NotSafeToEvictAnnotation);
    }
    // Every karpsim owner kind is one CA knows (ReplicaSet, StatefulSet, Job).
    if pod.owner.is_none() {
        return PodDrain::Block(BlockingRule::NotReplicated);
    }
    if config.skip_nodes_with_system_pods
        && pod.spec.namespace == KUBE_SYSTEM
        && !pdbs.has_pdb(pod)
        && pod.created_at + config.blocking_system_pod_disruption_timeout > now
    {
        return PodDrain::Block(BlockingRule::UnmovableKubeSystemPod);
    }
    if annotation == Some("false") {
        return PodDrain::Block(BlockingRule::NotSafeToEvictAnnotation);
    }
    if config.skip_nodes_with_local_storage && !pod.spec.local_storage_volumes.is_empty() {
        let listed: Vec<&str> = pod
            .spec
            .annotations
            .get(SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION)
            .map(|v| v.split(',').map(str::trim).collect())
            .unwrap_or_default();
        if !pod
            .spec
            .local_storage_volumes
            .iter()
            .all(|v| listed.contains(&v.as_str()))
        {
            return PodDrain::Block(BlockingRule::LocalStorageRequested);
        }
    }
    if pdbs
        .matching(pod)
        .any(|i| pdbs.remaining.get(i).is_some_and(|&r| r < 1))
    {
        return PodDrain::Block(BlockingRule::NotEnoughPdb);
    }
    PodDrain::Move
}

/// `max(cpu, memory)` requested share of allocatable (`utilization/info.go`).
pub fn utilization(cluster: &Cluster, node: NodeId, ignore_daemonsets: bool) -> f64 {
    let Some(n) = cluster.node(node) else {
        return 0.0;
    };
    let mut requested = n.requested;
    let mut allocatable = n.allocatable;
    if ignore_daemonsets {
        for p in n.pods.iter().filter_map(|&id| cluster.pod(id)) {
            if p.is_daemonset() && !p.phase.is_terminal() {
                requested -= p.spec.requests;
                allocatable -= p.spec.requests;
            }
        }
    }
    let share = |req: i64, alloc: i64| {
        if alloc > 0 {
            req as f64 / alloc as f64
        } else {
            0.0
        }
    };
    share(requested.cpu_millis(), allocatable.cpu_millis())
        .max(share(requested.memory_bytes(), allocatable.memory_bytes()))
}

/// The share of its GPUs (`nvidia.com/gpu`, the AWS provider's GPU
/// resource) a node's pods request, DaemonSet pods left out when
/// `ignore_daemonsets`; `None` for a node without GPUs.
pub fn gpu_utilization(cluster: &Cluster, node: NodeId, ignore_daemonsets: bool) -> Option<f64> {
    let n = cluster.node(node)?;
    let allocatable = n.allocatable.get(ResourceKind::NvidiaGpu);
    if allocatable <= 0 {
        return None;
    }
    let mut requested = n.requested.get(ResourceKind::NvidiaGpu);
    if ignore_daemonsets {
        for p in n.pods.iter().filter_map(|&id| cluster.pod(id)) {
            if p.is_daemonset() && !p.phase.is_terminal() {
                requested -= p.spec.requests.get(ResourceKind::NvidiaGpu);
            }
        }
    }
    Some(requested as f64 / allocatable as f64)
}

/// Whether a node is underutilized under its group's options
/// (eligibility.go `isNodeBelowUtilizationThreshold` with
/// utilization/info.go `Calculate`): a node with GPUs by its GPUs against
/// the GPU threshold, any other by max(cpu, memory) against the threshold.
fn underutilized(cluster: &Cluster, node: NodeId, options: &GroupOptions) -> bool {
    let ignore = options.ignore_daemonsets_utilization;
    match gpu_utilization(cluster, node, ignore) {
        Some(gpu) => gpu <= options.scale_down_gpu_utilization_threshold,
        None => utilization(cluster, node, ignore) <= options.scale_down_utilization_threshold,
    }
}

/// Everything the planner reads.
pub struct ScaleDownInput<'a> {
    /// The real cluster.
    pub cluster: &'a Cluster,
    /// Configuration.
    pub config: &'a CaConfig,
    /// Group states.
    pub groups: &'a [NodeGroupState],
    /// PDB statuses.
    pub pdbs: &'a PdbLimits,
    /// CA's memory.
    pub state: &'a CaState,
    /// Now.
    pub now: SimTime,
    /// Whether deletions may start this loop (no cooldown, no scale-up).
    pub may_delete: bool,
}

/// The planner's output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScaleDownPlan {
    /// Unneeded nodes with their first-seen time (the next state's timers).
    pub unneeded: BTreeMap<NodeId, SimTime>,
    /// Nodes to delete now, with whether they are empty.
    pub removals: Vec<(NodeId, bool)>,
    /// Why the other nodes stay.
    pub unremovable: Vec<(NodeId, UnremovableReason)>,
}

fn active_pods(cluster: &Cluster, node: NodeId) -> Vec<(PodId, &Pod)> {
    cluster.node(node).map_or_else(Vec::new, |n| {
        n.pods
            .iter()
            .filter_map(|&id| cluster.pod(id).map(|p| (id, p)))
            .collect()
    })
}

/// Runs the planner on `snapshot` (the cluster with this loop's pending
/// pods placed by filter-out-schedulable, upcoming nodes included).
pub fn plan_scale_down(snapshot: &mut Snapshot, input: &ScaleDownInput<'_>) -> ScaleDownPlan {
    let cfg = input.config;
    let mut plan = ScaleDownPlan::default();
    let group_of = |node: NodeId| input.groups.iter().find(|g| g.member(node).is_some());
    let destinations: Vec<NodeId> = input
        .cluster
        .nodes()
        .filter(|(_, n)| n.registered && !n.marked_for_deletion)
        .map(|(id, _)| id)
        .collect();
    let mut pdbs = PdbTracker::new(input.pdbs);
    let mut candidates: Vec<(bool, bool, NodeId)> = Vec::new();
    for (id, node) in input.cluster.nodes().filter(|(_, n)| n.registered) {
        let reason = if node.marked_for_deletion {
            Some(UnremovableReason::CurrentlyBeingDeleted)
        } else if let Some(g) = group_of(id) {
            if g.member(id).is_some_and(|m| m.scale_down_disabled) {
                Some(UnremovableReason::ScaleDownDisabledAnnotation)
            } else if !underutilized(snapshot.cluster(), id, &cfg.options_for(&g.name)) {
                Some(UnremovableReason::NotUnderutilized)
            } else {
                None
            }
        } else {
            Some(UnremovableReason::NotAutoscaled)
        };
        if let Some(reason) = reason {
            plan.unremovable.push((id, reason));
            continue;
        }
        let empty = active_pods(snapshot.cluster(), id)
            .iter()
            .all(|(_, p)| classify(p, cfg, &pdbs, input.now) == PodDrain::Skip);
        let previously = input.state.unneeded_since.contains_key(&id);
        candidates.push((!empty, !previously, id));
    }
    candidates.sort();
    let mut needs_drain: BTreeMap<NodeId, bool> = BTreeMap::new();
    // Registered nodes that are not Ready past their startup time: the
    // kube-scheduler gave them no pods, so nothing moves; they are unneeded
    // unless an eligibility rule keeps them (clusterstate `Unready`).
    let mut unready = BTreeSet::new();
    for g in input.groups {
        let options = cfg.options_for(&g.name);
        for m in &g.members {
            let Some(node) = input.cluster.node(m.node) else {
                continue;
            };
            if m.readiness(
                input.cluster,
                input.now,
                options.max_node_provision_time,
                &input.state.unregistered_since,
            ) != Readiness::Unready
            {
                continue;
            }
            let reason = if node.marked_for_deletion {
                Some(UnremovableReason::CurrentlyBeingDeleted)
            } else if m.scale_down_disabled {
                Some(UnremovableReason::ScaleDownDisabledAnnotation)
            } else if !underutilized(input.cluster, m.node, &options) {
                Some(UnremovableReason::NotUnderutilized)
            } else {
                None
            };
            match reason {
                Some(reason) => plan.unremovable.push((m.node, reason)),
                None => {
                    let since = input
                        .state
                        .unneeded_since
                        .get(&m.node)
                        .copied()
                        .unwrap_or(input.now);
                    plan.unneeded.insert(m.node, since);
                    needs_drain.insert(m.node, false);
                    unready.insert(m.node);
                }
            }
        }
    }
    for (_, _, id) in candidates {
        match simulate_removal(snapshot, input, &mut pdbs, id, &destinations) {
            Ok(moved) => {
                let since = input
                    .state
                    .unneeded_since
                    .get(&id)
                    .copied()
                    .unwrap_or(input.now);
                plan.unneeded.insert(id, since);
                needs_drain.insert(id, moved > 0);
            }
            Err(reason) => plan.unremovable.push((id, reason)),
        }
    }
    select_removals(&mut plan, input, &needs_drain, &unready);
    plan.unremovable.sort();
    plan
}

/// Simulates removing `id`; returns how many pods moved.
fn simulate_removal(
    snapshot: &mut Snapshot,
    input: &ScaleDownInput<'_>,
    pdbs: &mut PdbTracker<'_>,
    id: NodeId,
    destinations: &[NodeId],
) -> Result<usize, UnremovableReason> {
    let mut to_move: Vec<PodId> = Vec::new();
    for (pid, pod) in active_pods(snapshot.cluster(), id) {
        match classify(pod, input.config, pdbs, input.now) {
            PodDrain::Skip => {}
            PodDrain::Move => to_move.push(pid),
            // A booked request's pod (snapshot only) has no name to give.
            PodDrain::Block(_) if input.cluster.pod(pid).is_none() => {
                return Err(UnremovableReason::NoPlaceToMovePods);
            }
            PodDrain::Block(rule) => {
                return Err(UnremovableReason::BlockedByPod { pod: pid, rule });
            }
        }
    }
    // PDB accounting reads the real pods (same ids as in the snapshot;
    // the pods of a booked ProvisioningRequest exist in the snapshot only).
    let real_ids: Vec<PodId> = to_move
        .iter()
        .copied()
        .filter(|&p| input.cluster.pod(p).is_some())
        .collect();
    let real: Vec<&Pod> = real_ids
        .iter()
        .filter_map(|&p| input.cluster.pod(p))
        .collect();
    if let Some(k) = pdbs.first_blocked(&real) {
        return Err(UnremovableReason::BlockedByPod {
            pod: real_ids[k],
            rule: BlockingRule::NotEnoughPdb,
        });
    }
    let mark = snapshot.fork();
    snapshot.cordon(id);
    for &pod in &to_move {
        snapshot.unbind(pod);
        let targets = destinations.iter().copied().filter(|&d| d != id);
        if snapshot.place_first_fit(pod, targets).is_none() {
            snapshot.revert(mark);
            return Err(UnremovableReason::NoPlaceToMovePods);
        }
    }
    pdbs.remove(&real);
    Ok(to_move.len())
}

/// `RemovableAt` plus the budgets.
fn select_removals(
    plan: &mut ScaleDownPlan,
    input: &ScaleDownInput<'_>,
    needs_drain: &BTreeMap<NodeId, bool>,
    unready: &BTreeSet<NodeId>,
) {
    let cfg = input.config;
    let cluster = input.cluster;
    let mut group_size: BTreeMap<&str, i64> = BTreeMap::new();
    // Deletions this autoscaler started count until their node is gone
    // (budgets.go counts the deletion tracker's empty and drained nodes).
    let tracked: BTreeMap<NodeId, DeletionKind> = input
        .state
        .deletions_in_progress
        .iter()
        .filter(|(n, _)| cluster.node(**n).is_some())
        .map(|(&n, &k)| (n, k))
        .collect();
    let mut in_flight = tracked.len() as u32;
    let mut drains_in_flight = tracked
        .values()
        .filter(|&&k| k == DeletionKind::Drain)
        .count() as u32;
    for g in input.groups {
        let deleting: Vec<NodeId> = g
            .members
            .iter()
            .map(|m| m.node)
            .filter(|&n| cluster.node(n).is_some_and(|n| n.marked_for_deletion))
            .collect();
        // Members being deleted by someone else (a snapshot's own
        // deletions) count too, drained when they still hold pods.
        let untracked = deleting.iter().filter(|n| !tracked.contains_key(n));
        in_flight += untracked.clone().count() as u32;
        drains_in_flight += untracked
            .filter(|&&n| {
                active_pods(cluster, n)
                    .iter()
                    .any(|(_, p)| !p.is_daemonset() && !is_mirror(p) && !p.phase.is_terminal())
            })
            .count() as u32;
        group_size.insert(
            g.name.as_str(),
            i64::from(g.target_size) - deleting.len() as i64,
        );
    }
    let mut empty_left = cfg.max_scale_down_parallelism.saturating_sub(in_flight);
    let mut drain_left = cfg
        .max_drain_parallelism
        .saturating_sub(drains_in_flight)
        .min(empty_left);
    for drain in [false, true] {
        for (&id, &since) in &plan.unneeded {
            if needs_drain.get(&id).copied().unwrap_or(false) != drain {
                continue;
            }
            let Some(g) = input.groups.iter().find(|g| g.member(id).is_some()) else {
                continue;
            };
            // `RemovableAt`: a Ready node waits the unneeded time, an
            // unready one the unready time.
            let options = cfg.options_for(&g.name);
            let (wait, not_yet) = if unready.contains(&id) {
                (
                    options.scale_down_unready_time,
                    UnremovableReason::NotUnreadyLongEnough,
                )
            } else {
                (
                    options.scale_down_unneeded_time,
                    UnremovableReason::NotUnneededLongEnough,
                )
            };
            if since + wait >= input.now {
                plan.unremovable.push((id, not_yet));
                continue;
            }
            let min = cfg
                .node_groups
                .iter()
                .find(|s| s.name == g.name)
                .map_or(0, |s| i64::from(s.min_size));
            let size = group_size.entry(g.name.as_str()).or_insert(0);
            if *size <= min {
                plan.unremovable
                    .push((id, UnremovableReason::NodeGroupMinSizeReached));
                continue;
            }
            let budget = if drain { drain_left } else { empty_left };
            if !input.may_delete || budget == 0 {
                continue;
            }
            *size -= 1;
            empty_left -= 1;
            if drain {
                drain_left -= 1;
            } else {
                drain_left = drain_left.min(empty_left);
            }
            plan.removals.push((id, !drain));
        }
    }
}
