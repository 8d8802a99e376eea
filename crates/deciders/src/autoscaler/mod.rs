//! The Cluster Autoscaler (CA) decision model: node groups (ASGs), node
//! templates, filter-out-schedulable, the binpacking estimator, expanders,
//! balancing of similar groups, backoff and the scale-down planner, as one
//! pure function [`run_once`] of a read-only cluster view, CA's remembered
//! [`CaState`] and `now`. Facts and constants come from
//! kubernetes/autoscaler `cluster-autoscaler/` at f7bb0c3623 (now
//! kubernetes-sigs/cluster-autoscaler `pkg/`) and the AWS provider.
//!
//! One loop ([`run_once`], after `core/static_autoscaler.go` `RunOnce`):
//! open scale-ups are checked (no node upcoming ⇒ closed and backoff
//! reset; past `maxNodeProvisionTime` ⇒ backoff, and
//! [`Action::DecreaseTargetSize`] when the AWS provider allows it: not
//! below the instances the group has); instances without a Node object
//! `maxNodeProvisionTime` after CA first saw them are deleted
//! ([`Action::DeleteUnregistered`], down to min size); too many unready
//! nodes (`okTotalUnreadyCount`, `maxTotalUnreadyPercentage`) stop the loop
//! there; stale backoffs are dropped; a snapshot gets one template node
//! per upcoming node; [`scale_up`] plans at most one expander choice
//! (+ balancing); [`scale_down`] updates the unneeded timers and, unless in
//! cooldown or a scale-up happened this loop, picks deletions.
//! [`next_state`] folds the loop's outcome into the next [`CaState`];
//! [`ClusterAutoscaler`] keeps that state and the loop count from loop to
//! loop and takes launch failures ([`ClusterAutoscaler::scale_up_failed`]).
//!
//! Biases reproduced on purpose: feasibility is kube-scheduler filters
//! only, first fit (no scoring); the cloud template has allocatable =
//! capacity and 110 pods; a group is planned with its first instance type
//! whatever the ASG then launches ([`groups::asg_launch`]).
//!
//! Simplified versus upstream (see also each submodule):
//! - no `fixNodeGroupSize`, no per-group health (`IsNodeGroupHealthy`), no
//!   resource quotas (`--cores-total`, `--memory-total`), no DRA
//!   utilization, no fast-path binpacking;
//! - a node is Ready once registered unless the scenario makes its launch
//!   hang (then CA's not-started / unready / unregistered rules apply);
//!   `maxNodeStartupTime` is the default 15 min;
//! - pods of nodes being drained are not re-injected as pending
//!   (CurrentlyDrainedNodes): they count once evicted and re-created;
//! - terminating pods never block or move; the replica-count rule
//!   (owner object missing) and unknown owner kinds do not occur;
//! - unremovable nodes are re-checked every loop (no 5 min recheck cache),
//!   and the simulation has no time budget or candidate-pool cap;
//! - the random expander's pick is an input (`random_choice`).

pub mod config;
pub mod controller;
pub mod estimator;
pub mod expander;
pub mod groups;
pub mod provisioning;
pub mod scale_down;
pub mod scale_up;
pub mod snapshot;
pub mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_provisioning;
#[cfg(test)]
mod tests_scale_down;
#[cfg(test)]
mod tests_unready;

use std::collections::BTreeMap;

pub use config::{
    CaConfig, CaConfigError, CapacitySplit, ExpanderKind, NodeGroupSpec,
    OnDemandAllocationStrategy, SpotAllocationStrategy, TerminationHandler, ValidCaConfig,
};
pub use controller::{CaView, ClusterAutoscaler};
pub use groups::{
    GroupMember, LaunchChoice, LaunchFailure, NodeGroupState, NodeTemplate, Readiness,
};
pub use provisioning::{Condition, ConditionType, RequestStatus};
pub use scale_down::{BlockingRule, UnremovableReason};
pub use state::{CaState, DeletionKind, ScaleUpFailure};

use crate::cloud::Catalog;
use crate::cluster::{Cluster, NodeId, PodId};
use crate::kube::provisioning_request::ProvisioningClass;
use crate::pdb::PdbLimits;
use crate::time::SimDuration;
use crate::time::SimTime;
use provisioning::{AtomicOutcome, ConditionUpdate, RequestState, Requests};
use scale_down::{ScaleDownInput, plan_scale_down};
use scale_up::{GroupSkip, ScaleUpInput, ScaleUpMode, ScaleUpPlan, plan_scale_up_for};
use snapshot::Snapshot;

/// Everything one CA loop reads.
#[derive(Debug, Clone, Copy)]
pub struct CaInput<'a> {
    /// The cluster (nodes, pods, PDBs).
    pub cluster: &'a Cluster,
    /// The validated configuration.
    pub config: &'a ValidCaConfig,
    /// Instance types and offerings of the region.
    pub catalog: &'a Catalog,
    /// Live state of every group (the cloud provider's view).
    pub groups: &'a [NodeGroupState],
    /// PDB statuses (`disruptionsAllowed`).
    pub pdbs: &'a PdbLimits,
    /// CA's memory from the previous loop.
    pub state: &'a CaState,
    /// Now.
    pub now: SimTime,
    /// The random expander's pick (reduced modulo the options left).
    pub random_choice: u64,
    /// The ProvisioningRequests in the cluster, in creation order.
    pub provisioning_requests: &'a [RequestState],
}

/// One thing CA asks the cloud provider to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `IncreaseSize(delta)` of an ASG.
    ScaleUp {
        /// Group.
        group: String,
        /// Nodes added to the desired capacity.
        delta: u32,
    },
    /// `DecreaseTargetSize`: a scale-up timed out; the unregistered
    /// instances are given up.
    DecreaseTargetSize {
        /// Group.
        group: String,
        /// Nodes removed from the desired capacity.
        delta: u32,
    },
    /// Terminate an instance that never registered
    /// (`removeOldUnregisteredNodes`), decrementing the desired capacity.
    DeleteUnregistered {
        /// The node (an instance without a Node object).
        node: NodeId,
    },
    /// Drain (unless empty) and terminate the node, decrementing the
    /// group's desired capacity.
    RemoveNode {
        /// The node.
        node: NodeId,
        /// No pod needs to move.
        empty: bool,
    },
}

/// The outcome of one loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Actions {
    /// Actions, in order: target decreases, scale-ups, removals.
    pub actions: Vec<Action>,
    /// Groups whose open scale-up completed (all nodes registered).
    pub completed_scale_ups: Vec<String>,
    /// Groups whose open scale-up timed out.
    pub timed_out_scale_ups: Vec<String>,
    /// Unneeded nodes with their first-seen time.
    pub unneeded: BTreeMap<NodeId, SimTime>,
    /// Why each examined node is not removed.
    pub unremovable: Vec<(NodeId, UnremovableReason)>,
    /// Pending pods that fit existing or upcoming capacity.
    pub pods_fit_existing: Vec<PodId>,
    /// Pending pods the chosen scale-up is for.
    pub pods_triggering_scale_up: Vec<PodId>,
    /// Pending pods no scale-up helps this loop.
    pub pods_not_helped: Vec<PodId>,
    /// Groups that offered no option, with why.
    pub skipped_groups: Vec<(String, GroupSkip)>,
    /// The expander's choice (group, new nodes), before balancing.
    pub expander_choice: Option<(String, u32)>,
    /// Pending pods left out of the regular scale-up because they consume
    /// a ProvisioningRequest.
    pub pods_consuming_requests: Vec<PodId>,
    /// Conditions set on ProvisioningRequests, in order.
    pub provisioning_request_updates: Vec<ConditionUpdate>,
    /// The requests' retry waits after this loop.
    pub provisioning_request_backoff: BTreeMap<String, SimDuration>,
    /// Whether the next loop with both kinds of pods serves a request.
    pub provisioning_request_scale_up_mode: bool,
    /// A check-capacity request found its capacity (a successful
    /// scale-up without nodes).
    pub provisioning_request_capacity_found: bool,
    /// Too many nodes are unready (`IsClusterHealthy`): the loop stopped
    /// after removing long-unregistered instances.
    pub cluster_unhealthy: bool,
    /// When CA first saw each instance that has no Node object yet.
    pub unregistered_since: BTreeMap<NodeId, SimTime>,
}

/// One CA loop.
pub fn run_once(input: &CaInput<'_>) -> Actions {
    let cfg = input.config.config();
    let mut out = Actions::default();
    // Groups as this loop sees them: a timed-out scale-up gives up its
    // unregistered instances at once.
    let mut groups: Vec<NodeGroupState> = input.groups.to_vec();

    let mut state = input.state.without_stale_backoff(input.now, cfg);
    // When each instance without a Node object was first seen: by a loop
    // after its launch (the cloud lists a new instance after the scale-up
    // that asked for it, so it is seen later than the request was made).
    let mut seen = BTreeMap::new();
    for m in groups.iter().flat_map(|g| &g.members) {
        let Some(node) = input.cluster.node(m.node) else {
            continue;
        };
        if node.registered || m.not_ready_since.is_some() {
            continue;
        }
        match state.unregistered_since.get(&m.node) {
            Some(&since) => {
                seen.insert(m.node, since);
            }
            None if node.created_at < input.now => {
                seen.insert(m.node, input.now);
            }
            None => {}
        }
    }
    state.unregistered_since = seen.clone();
    out.unregistered_since = seen.clone();
    // Open scale-ups: completed or timed out (clusterstate
    // `updateScaleRequests`).
    for (group, request) in &input.state.scale_up_requests {
        let Some(g) = groups.iter_mut().find(|g| &g.name == group) else {
            continue;
        };
        let provision_time = cfg.options_for(group).max_node_provision_time;
        let upcoming = g.upcoming(input.cluster, input.now, provision_time, &seen);
        if upcoming == 0 {
            out.completed_scale_ups.push(group.clone());
            state = state.with_scale_up_completed(group);
        } else if input.now > request.expected_add_time {
            out.timed_out_scale_ups.push(group.clone());
            // The revert (`DecreaseTargetSize` by the request's increase)
            // is refused by the AWS provider when it would go below the
            // instances the group has: those are removed as long
            // unregistered instead.
            let delta = request.increase.min(g.target_size);
            if g.target_size - delta >= g.members.len() as u32 && delta > 0 {
                out.actions.push(Action::DecreaseTargetSize {
                    group: group.clone(),
                    delta,
                });
                g.target_size -= delta;
            }
            state = state.with_failed_scale_up(group, ScaleUpFailure::Timeout, input.now, cfg);
        }
    }
    // `removeOldUnregisteredNodes`: instances without a Node object
    // `maxNodeProvisionTime` after their launch are deleted, down to the
    // group's min size.
    for spec in &cfg.node_groups {
        let Some(g) = groups.iter_mut().find(|g| g.name == spec.name) else {
            continue;
        };
        let provision_time = cfg.options_for(&spec.name).max_node_provision_time;
        let old: Vec<NodeId> = g
            .members
            .iter()
            .filter(|m| {
                !input.state.deletions_in_progress.contains_key(&m.node)
                    && input
                        .cluster
                        .node(m.node)
                        .is_some_and(|n| !n.marked_for_deletion)
                    && m.readiness(input.cluster, input.now, provision_time, &seen)
                        == Readiness::LongUnregistered
            })
            .map(|m| m.node)
            .collect();
        let room = g.target_size.saturating_sub(spec.min_size) as usize;
        for node in old.into_iter().take(room) {
            out.actions.push(Action::DeleteUnregistered { node });
            g.target_size -= 1;
            g.members.retain(|m| m.node != node);
        }
    }
    // `IsClusterHealthy`: too many unready nodes stop the loop, and the
    // unneeded timers are forgotten.
    let seen_ref = &seen;
    let unready = groups
        .iter()
        .flat_map(|g| {
            let provision_time = cfg.options_for(&g.name).max_node_provision_time;
            g.members.iter().filter(move |m| {
                m.readiness(input.cluster, input.now, provision_time, seen_ref)
                    == Readiness::Unready
            })
        })
        .count() as u32;
    let registered = input.cluster.nodes().filter(|(_, n)| n.registered).count() as u32
        + groups
            .iter()
            .flat_map(|g| &g.members)
            .filter(|m| m.not_ready_since.is_some())
            .count() as u32;
    if unready > cfg.ok_total_unready_count
        && f64::from(unready) > cfg.max_total_unready_percentage / 100.0 * f64::from(registered)
    {
        out.cluster_unhealthy = true;
        out.provisioning_request_backoff = state.provisioning_request_backoff.clone();
        out.provisioning_request_scale_up_mode = state.provisioning_request_scale_up_mode;
        return out;
    }

    let by_name: BTreeMap<String, &NodeGroupState> =
        groups.iter().map(|g| (g.name.clone(), g)).collect();
    let templates: BTreeMap<String, NodeTemplate> = cfg
        .node_groups
        .iter()
        .filter_map(|spec| {
            groups::template_for(
                spec,
                by_name.get(&spec.name).copied(),
                input.cluster,
                input.catalog,
                input.now,
            )
            .map(|t| (spec.name.clone(), t))
        })
        .collect();
    let mut snapshot = Snapshot::new(input.cluster);
    scale_up::inject_upcoming(
        &mut snapshot,
        input.cluster,
        input.config,
        &groups,
        &templates,
        &state,
        input.now,
    );

    let up_input = ScaleUpInput {
        cluster: input.cluster,
        config: input.config,
        groups: &by_name,
        templates: &templates,
        state: &state,
        now: input.now,
        random_choice: input.random_choice,
    };
    let pending = scale_up::unschedulable_pods(input.cluster, input.config, input.now);
    let (placed, mut left) = scale_up::filter_out_schedulable(&mut snapshot, &pending);
    out.pods_fit_existing = placed;
    let mut requests = provisioning::Requests::new(input.provisioning_requests, input.now);
    let mut injected: Option<(usize, Vec<PodId>)> = None;
    let mut request_success = false;
    out.provisioning_request_backoff = state.provisioning_request_backoff.clone();
    out.provisioning_request_scale_up_mode = state.provisioning_request_scale_up_mode;
    if cfg.enable_provisioning_requests {
        requests.refresh();
        let (consuming, regular) = provisioning::split_consuming(input.cluster, &left);
        out.pods_consuming_requests = consuming;
        left = regular;
        injected = requests
            .next_to_inject(
                &mut out.provisioning_request_backoff,
                cfg.provisioning_request_initial_backoff,
                cfg.provisioning_request_max_backoff,
            )
            .map(|i| {
                let pods = provisioning::add_request_pods(
                    &mut snapshot,
                    requests.request(i),
                    input.provisioning_requests[i].created_at,
                );
                (i, pods)
            });
        requests.book(&mut snapshot);
    }
    // `shouldScaleUp` looks at both kinds of pods; a request's pods force
    // the scale-up (`ProvisioningRequestScaleUpEnforcer`).
    let forced = injected.is_some();
    let all_new = {
        let all: Vec<PodId> = left
            .iter()
            .copied()
            .chain(injected.iter().flat_map(|(_, p)| p.iter().copied()))
            .collect();
        !all.is_empty()
            && all.iter().all(|&id| {
                snapshot.cluster().pod(id).is_some_and(|p| {
                    p.created_at + scale_up::UNSCHEDULABLE_POD_TIME_BUFFER > input.now
                })
            })
    };
    let forced_mode = ScaleUpMode {
        forced,
        ..ScaleUpMode::default()
    };
    // `WrapperOrchestrator`: a request's pods and regular pods take turns.
    let serve_request = match &injected {
        None => false,
        Some(_) if left.is_empty() => true,
        Some(_) => state.provisioning_request_scale_up_mode,
    };
    let has_request = injected.is_some();
    let up = match injected.filter(|_| serve_request) {
        Some((index, pods)) => {
            out.provisioning_request_scale_up_mode = !serve_request;
            let (plan, success) =
                provision_request(&mut snapshot, &up_input, &mut requests, index, &pods);
            request_success = success;
            plan
        }
        None => {
            // `ScaleUp` runs (and the turn passes) unless every pod is new.
            if has_request || (!left.is_empty() && !all_new) {
                out.provisioning_request_scale_up_mode = !serve_request;
            }
            plan_scale_up_for(&mut snapshot, &up_input, &left, forced_mode)
        }
    };
    let up = ScaleUpPlan {
        all_pods_new: up.all_pods_new || (forced && all_new),
        ..up
    };
    out.provisioning_request_capacity_found = request_success;
    out.provisioning_request_updates = std::mem::take(&mut requests.updates);
    out.skipped_groups = up.skipped.clone();
    if let Some(best) = up.chosen.and_then(|i| up.options.get(i)) {
        out.expander_choice = Some((best.group.clone(), best.node_count));
        if !serve_request {
            out.pods_triggering_scale_up = best.pods.clone();
        }
    }
    if !serve_request {
        out.pods_not_helped = up
            .remaining
            .iter()
            .copied()
            .filter(|p| !out.pods_triggering_scale_up.contains(p))
            .collect();
    }
    for (group, delta) in &up.increases {
        out.actions.push(Action::ScaleUp {
            group: group.clone(),
            delta: *delta,
        });
    }

    // A check-capacity request provisioned counts as a successful
    // scale-up (`ScaleUpSuccessful`): no deletions this loop.
    let scaled_up = !up.increases.is_empty() || request_success;
    let may_delete = cfg.scale_down_enabled
        && !scaled_up
        && !up.all_pods_new
        && !state.scale_down_in_cooldown(input.now, cfg);
    let down = plan_scale_down(
        &mut snapshot,
        &ScaleDownInput {
            cluster: input.cluster,
            config: cfg,
            groups: &groups,
            pdbs: input.pdbs,
            state: &state,
            now: input.now,
            may_delete,
        },
    );
    for &(node, empty) in &down.removals {
        out.actions.push(Action::RemoveNode { node, empty });
    }
    out.unneeded = down.unneeded;
    out.unremovable = down.unremovable;
    if cfg.enforce_node_group_min_size {
        for (group, delta) in scale_up_to_min_size(cfg, &groups, &up.increases, &state, input.now) {
            out.actions.push(Action::ScaleUp { group, delta });
        }
    }
    out
}

/// The scale-up of a loop that serves the ProvisioningRequest at `index`
/// (`provReqOrchestrator.ScaleUp`: its class's `Provision` in a fork of
/// the snapshot, reverted after). Returns the plan and whether a
/// check-capacity request found its capacity.
fn provision_request(
    snapshot: &mut Snapshot,
    input: &ScaleUpInput<'_>,
    requests: &mut Requests<'_>,
    index: usize,
    pods: &[PodId],
) -> (ScaleUpPlan, bool) {
    let mark = snapshot.fork();
    let result = match provisioning::class_of(requests, index) {
        ProvisioningClass::CheckCapacity => {
            let found = requests.check_capacity(index, snapshot, pods);
            (ScaleUpPlan::default(), found)
        }
        ProvisioningClass::BestEffortAtomicScaleUp => {
            let (_, rest) = scale_up::filter_out_schedulable(snapshot, pods);
            if rest.is_empty() {
                requests.atomic_outcome(index, AtomicOutcome::Fits);
                (ScaleUpPlan::default(), false)
            } else {
                let mode = ScaleUpMode {
                    all_or_nothing: true,
                    forced: true,
                };
                let plan = plan_scale_up_for(snapshot, input, &rest, mode);
                let outcome = if plan.increases.is_empty() {
                    AtomicOutcome::NoScaleUp
                } else {
                    AtomicOutcome::ScaledUp
                };
                requests.atomic_outcome(index, outcome);
                (plan, false)
            }
        }
    };
    snapshot.revert(mark);
    result
}

/// `ScaleUpToNodeGroupMinSize` (core/scaleup/orchestrator), run after
/// scale-down in the same loop: every group whose target size (this loop's
/// scale-up included) is below its minimum and that is not backed off grows
/// to it, capped by `maxNodesTotal` as upstream caps it: against the
/// group's own target size.
fn scale_up_to_min_size(
    cfg: &CaConfig,
    groups: &[NodeGroupState],
    increases: &[(String, u32)],
    state: &CaState,
    now: SimTime,
) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for spec in &cfg.node_groups {
        let Some(g) = groups.iter().find(|g| g.name == spec.name) else {
            continue;
        };
        let added: u32 = increases
            .iter()
            .filter(|(name, _)| *name == spec.name)
            .map(|(_, d)| d)
            .sum();
        let target = g.target_size + added;
        if target >= spec.min_size || state.is_backed_off(&spec.name, now) {
            continue;
        }
        let mut delta = spec.min_size - target;
        if cfg.max_nodes_total > 0 && delta + target > cfg.max_nodes_total {
            delta = cfg.max_nodes_total.saturating_sub(target);
        }
        if delta >= 1 {
            out.push((spec.name.clone(), delta));
        }
    }
    out
}

/// The state after a loop: closed and timed-out scale-ups, new scale-up
/// requests, unneeded timers, and the last deletion time.
pub fn next_state(state: &CaState, actions: &Actions, now: SimTime, config: &CaConfig) -> CaState {
    let mut next = state.without_stale_backoff(now, config);
    for group in &actions.completed_scale_ups {
        next = next.with_scale_up_completed(group);
    }
    for group in &actions.timed_out_scale_ups {
        next = next.with_failed_scale_up(group, ScaleUpFailure::Timeout, now, config);
    }
    for action in &actions.actions {
        match action {
            Action::ScaleUp { group, delta } => {
                next = next.with_scale_up(group, *delta, now, config)
            }
            Action::RemoveNode { node, empty } => {
                next.last_scale_down_delete = Some(now);
                let kind = if *empty {
                    DeletionKind::Empty
                } else {
                    DeletionKind::Drain
                };
                next.deletions_in_progress.insert(*node, kind);
            }
            Action::DecreaseTargetSize { .. } | Action::DeleteUnregistered { .. } => {}
        }
    }
    if actions.provisioning_request_capacity_found {
        next.last_scale_up = Some(now);
    }
    next.provisioning_request_backoff = actions.provisioning_request_backoff.clone();
    next.unregistered_since = actions.unregistered_since.clone();
    next.provisioning_request_scale_up_mode = actions.provisioning_request_scale_up_mode;
    next.unneeded_since = actions.unneeded.clone();
    for action in &actions.actions {
        if let Action::RemoveNode { node, .. } = action {
            next.unneeded_since.remove(node);
        }
    }
    next
}
