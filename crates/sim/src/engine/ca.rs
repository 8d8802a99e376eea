//! Cluster Autoscaler as the run's node provisioner: the CA loop
//! ([`crate::autoscaler::run_once`]) on its scan interval, its actions
//! applied to the simulated ASGs, and CA's records.
//!
//! Cadence (reference: cluster-autoscaler `main.go` `--scan-interval`
//! 10 s, and `core/static_autoscaler.go`): a loop every 10 s; after a loop
//! that scaled up or deleted a node, the next one runs at once (CA's
//! frequent loops); new unschedulable pods also wake the loop at once.
//!
//! Actions: `ScaleUp` asks the ASG for `delta` instances, each placed by
//! the ASG's own type and zone choice ([`asg_launch`]); a launched node is
//! unregistered until the launch latency elapses and billed from launch; a
//! launch the cloud has no capacity for is reported back as a failed
//! scale-up (backoff). `DecreaseTargetSize` drops the group's target.
//! `RemoveNode` taints the node and drains it through the termination
//! path (an empty node drains at once), then terminates the instance.
//!
//! ProvisioningRequests applied by a step are kept here with the
//! conditions CA sets on them (each change, and each attempt's outcome, is
//! an event of the request); Karpenter runs ignore them.
//!
//! A group's `startupFailure` makes its launches in a window hang: an
//! `Unregistered` instance never gets a Node object (billed until CA
//! deletes it as long unregistered), a `NotReady` one registers after the
//! launch latency but never turns Ready (no pod binds; CA sees it as not
//! started, then unready, and removes it after `scaleDownUnreadyTime`).
//!
//! Simplified: the ASG does not replace instances below its desired
//! capacity on its own (outside capacity-rebalance).

use std::sync::Arc;

use crate::autoscaler::provisioning::{Condition, ConditionUpdate, RequestState};
use crate::autoscaler::{
    Action, CaView, ClusterAutoscaler, GroupMember, NodeGroupState, UnremovableReason,
    ValidCaConfig, groups,
};
use crate::cloud::Catalog;
use crate::kube::provisioning_request::ProvisioningRequest;

use super::{InitialNode, NodeOwner};
use crate::pdb::PdbLimits;
use crate::scheduler::{NodeId, PodId};
use crate::time::{SimDuration, SimTime};

use super::{Engine, EngineError, Event, EventType};

/// CA's `--scan-interval` default.
pub const SCAN_INTERVAL: SimDuration = SimDuration::from_secs(10);
/// Pods younger than this wait for a later loop
/// (`unschedulablePodTimeBuffer`).
const NEW_POD_BUFFER: SimDuration = SimDuration::from_secs(2);
/// Launch reason recorded for CA's nodes.
const LAUNCH_REASON: &str = "scale-up";

/// A Cluster Autoscaler variant's inputs.
#[derive(Debug, Clone)]
pub struct CaSetup {
    /// The validated configuration (node groups and flags).
    pub config: ValidCaConfig,
    /// The region's catalog, restricted to the scenario's zones.
    pub catalog: Catalog,
    /// Groups whose launches hang, by group name.
    pub startup_failures: std::collections::BTreeMap<String, StartupFailure>,
}

/// Launches of a group that never become Ready nodes (a broken launch
/// template, AMI or bootstrap script), from `from` until `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartupFailure {
    /// First launch affected.
    pub from: SimTime,
    /// Launches from here on start normally; `None`: to the end.
    pub until: Option<SimTime>,
    /// How the instance hangs.
    pub kind: StartupFailureKind,
}

/// How a hanging instance looks to Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupFailureKind {
    /// The kubelet never joins: no Node object (CA: unregistered).
    Unregistered,
    /// The Node registers but never turns Ready (CA: not started, then
    /// unready).
    NotReady,
}

impl StartupFailure {
    /// Whether a launch at `at` hangs.
    pub fn covers(&self, at: SimTime) -> bool {
        at >= self.from && self.until.is_none_or(|u| at < u)
    }
}

/// One row of `scaledown.csv`: why a node was not removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnremovableRecord {
    /// When the loop ran.
    pub time: SimTime,
    /// Node name.
    pub node: String,
    /// The reason, as CA words it.
    pub reason: String,
}

/// CA's live state in the engine.
#[derive(Debug, Clone)]
pub(super) struct CaRun {
    /// The autoscaler and what it remembers between loops.
    controller: ClusterAutoscaler,
    pub(super) groups: Vec<NodeGroupState>,
    /// The pending loop, if one is scheduled.
    next_loop: Option<SimTime>,
    /// Last reasons recorded per node (rows are written on change).
    last_reason: std::collections::BTreeMap<NodeId, String>,
    /// `scaledown.csv` rows.
    pub(super) unremovable: Vec<UnremovableRecord>,
    /// Instances launched per group (names are never reused).
    launched_per_group: std::collections::BTreeMap<String, u64>,
    /// The ProvisioningRequests created so far, in creation order, with
    /// the conditions CA set.
    pub(super) requests: Vec<RequestState>,
    /// Pods already told they consume a request (the event is written
    /// once per pod; upstream repeats it every loop).
    consuming_told: std::collections::BTreeSet<PodId>,
    /// Launched instances that hang, with how.
    hanging: std::collections::BTreeMap<NodeId, StartupFailureKind>,
    /// The last loop found the cluster unhealthy (logged on change).
    unhealthy: bool,
}

impl CaRun {
    pub(super) fn new(setup: &CaSetup) -> CaRun {
        CaRun {
            controller: ClusterAutoscaler::new(setup.config.clone()),
            groups: setup
                .config
                .config()
                .node_groups
                .iter()
                .map(|g| NodeGroupState {
                    name: g.name.clone(),
                    target_size: 0,
                    members: Vec::new(),
                })
                .collect(),
            next_loop: None,
            last_reason: Default::default(),
            unremovable: Vec::new(),
            launched_per_group: Default::default(),
            requests: Vec::new(),
            consuming_told: Default::default(),
            hanging: Default::default(),
            unhealthy: false,
        }
    }
}

impl Engine<'_> {
    /// Schedules a CA loop at `at` unless one is due no later.
    pub(super) fn wake_ca(&mut self, at: SimTime) -> Result<(), EngineError> {
        let Some(ca) = self.autoscaler.ca_mut() else {
            return Ok(());
        };
        if ca.next_loop.is_some_and(|t| t <= at) {
            return Ok(());
        }
        ca.next_loop = Some(at);
        self.schedule(at, Event::CaLoop)
    }

    /// One CA loop and its actions.
    pub(super) fn ca_loop(&mut self) -> Result<(), EngineError> {
        let now = self.now();
        let Some(setup) = self.input.cluster_autoscaler.as_ref() else {
            return Ok(());
        };
        let pdbs = PdbLimits::from_cluster(&self.cluster, &self.controller_scales());
        let Some(ca) = self.autoscaler.ca_mut() else {
            return Ok(());
        };
        if ca.next_loop != Some(now) {
            return Ok(());
        }
        ca.next_loop = None;
        // Members whose node is gone leave their group.
        for g in &mut ca.groups {
            let before = g.members.len() as u32;
            g.members.retain(|m| self.cluster.node(m.node).is_some());
            let gone = before - g.members.len() as u32;
            g.target_size = g.target_size.saturating_sub(gone);
            for m in &mut g.members {
                m.ready_since = self
                    .node_meta
                    .get(m.node.0 as usize)
                    .and_then(|n| n.ready_at);
            }
        }
        let actions = ca.controller.run_once(&CaView {
            cluster: &self.cluster,
            catalog: &setup.catalog,
            groups: &ca.groups,
            pdbs: &pdbs,
            now,
            provisioning_requests: &ca.requests,
        });
        let mut acted = false;
        for group in &actions.timed_out_scale_ups {
            let wait = setup
                .config
                .config()
                .options_for(group)
                .max_node_provision_time;
            self.log(
                EventType::Warning,
                "ScaleUpTimedOut",
                format!("nodegroup/{group}"),
                format!("Nodes added to group {group} failed to register within {wait}; the group is backed off"),
            );
        }
        let was_unhealthy = self
            .autoscaler
            .ca_mut()
            .map(|ca| std::mem::replace(&mut ca.unhealthy, actions.cluster_unhealthy))
            .unwrap_or(false);
        if actions.cluster_unhealthy && !was_unhealthy {
            self.log(
                EventType::Warning,
                "ClusterUnhealthy",
                "cluster-autoscaler".to_string(),
                "Cluster is unhealthy: too many unready nodes; Cluster Autoscaler halts scale-up and scale-down".to_string(),
            );
        }
        self.ca_request_outcomes(
            &actions.provisioning_request_updates,
            &actions.pods_consuming_requests,
        );
        // Reasons, on change, for scaledown.csv and events.
        let texts: Vec<(NodeId, String)> = actions
            .unremovable
            .iter()
            .map(|(node, reason)| (*node, reason_text(self, reason)))
            .collect();
        let mut notes = Vec::new();
        if let Some(ca) = self.autoscaler.ca_mut() {
            for (node, text) in texts {
                if ca.last_reason.get(&node) != Some(&text) {
                    ca.last_reason.insert(node, text.clone());
                    notes.push((node, text));
                }
            }
        }
        for (node, text) in notes {
            let name = self.node_name(node);
            self.log(
                EventType::Normal,
                "Unremovable",
                format!("node/{name}"),
                format!("node cannot be removed by scale-down: {text}"),
            );
            if let Some(ca) = self.autoscaler.ca_mut() {
                ca.unremovable.push(UnremovableRecord {
                    time: now,
                    node: name,
                    reason: text,
                });
            }
        }
        // Pods younger than CA's 2 s buffer are not reported as not helped.
        let settled = actions.pods_not_helped.iter().any(|p| {
            self.cluster
                .pod(*p)
                .is_some_and(|pod| pod.created_at + NEW_POD_BUFFER <= now)
        });
        if settled && actions.actions.is_empty() {
            let pods: Vec<String> = actions
                .pods_not_helped
                .iter()
                .take(3)
                .map(|p| self.pod_object(*p))
                .collect();
            let skipped: Vec<String> = actions
                .skipped_groups
                .iter()
                .map(|(g, why)| format!("{g}: {why:?}"))
                .collect();
            self.log(
                EventType::Normal,
                "NotTriggerScaleUp",
                pods.first().cloned().unwrap_or_default(),
                format!(
                    "pod didn't trigger scale-up ({} pod(s), e.g. {}): {}",
                    actions.pods_not_helped.len(),
                    pods.join(", "),
                    if skipped.is_empty() {
                        "no node group fits".to_string()
                    } else {
                        skipped.join("; ")
                    }
                ),
            );
        }
        for action in &actions.actions {
            match action {
                Action::ScaleUp { group, delta } => {
                    acted = true;
                    let failed = self.ca_launch(setup, group, *delta, LAUNCH_REASON)?;
                    if failed > 0
                        && let Some(ca) = self.autoscaler.ca_mut()
                    {
                        ca.controller.scale_up_failed(group, now);
                    }
                }
                Action::DecreaseTargetSize { group, delta } => {
                    if let Some(g) = self.ca_group_mut(group) {
                        g.target_size = g.target_size.saturating_sub(*delta);
                    }
                    self.log(
                        EventType::Warning,
                        "ScaleUpTimedOut",
                        format!("nodegroup/{group}"),
                        format!("Nodes did not register within maxNodeProvisionTime; target size decreased by {delta}"),
                    );
                }
                Action::DeleteUnregistered { node } => {
                    let name = self.node_name(*node);
                    self.log(
                        EventType::Normal,
                        "DeleteUnregistered",
                        format!("node/{name}"),
                        format!("Removed unregistered node {name}"),
                    );
                    if let Some(ca) = self.autoscaler.ca_mut()
                        && let Some(g) = ca
                            .groups
                            .iter_mut()
                            .find(|g| g.members.iter().any(|m| m.node == *node))
                    {
                        g.target_size = g.target_size.saturating_sub(1);
                        g.members.retain(|m| m.node != *node);
                    }
                    self.start_termination(*node, "cluster-autoscaler unregistered node")?;
                }
                Action::RemoveNode { node, empty } => {
                    acted = true;
                    let name = self.node_name(*node);
                    let kind = if *empty { "empty" } else { "underutilized" };
                    self.log(
                        EventType::Normal,
                        "ScaleDown",
                        format!("node/{name}"),
                        format!(
                            "marked the node as toBeDeleted/unschedulable ({kind}); removing node"
                        ),
                    );
                    if let Some(ca) = self.autoscaler.ca_mut()
                        && let Some(g) = ca
                            .groups
                            .iter_mut()
                            .find(|g| g.members.iter().any(|m| m.node == *node))
                    {
                        g.target_size = g.target_size.saturating_sub(1);
                        g.members.retain(|m| m.node != *node);
                    }
                    self.start_termination(
                        *node,
                        &format!("cluster-autoscaler scale-down ({kind})"),
                    )?;
                }
            }
        }
        let next = if acted { now } else { now + SCAN_INTERVAL };
        // A loop at the same instant would see the same cluster only when
        // nothing changed; `acted` always changed it.
        self.wake_ca(next)
    }

    /// A hanging instance's Node registered: with
    /// [`StartupFailureKind::NotReady`] it stays NotReady (no pods bind)
    /// and CA sees it as registered from now; returns whether it hangs.
    pub(super) fn ca_registers_not_ready(&mut self, node: NodeId) -> bool {
        let now = self.now();
        let Some(ca) = self.autoscaler.ca_mut() else {
            return false;
        };
        if ca.hanging.get(&node) != Some(&StartupFailureKind::NotReady) {
            return false;
        }
        for m in ca.groups.iter_mut().flat_map(|g| g.members.iter_mut()) {
            if m.node == node {
                m.not_ready_since = Some(now);
            }
        }
        self.log_never_ready(node);
        true
    }

    /// The node group of a snapshot node in a Cluster Autoscaler run: the
    /// group named by its node-group label (`eks.amazonaws.com/nodegroup`,
    /// `alpha.eksctl.io/nodegroup-name`), else the first group that
    /// declares labels, all carried by the node, and lists its instance
    /// type and zone (CA on AWS knows membership from the ASG; a snapshot
    /// has only the node). Karpenter's nodes belong to none.
    pub(super) fn ca_group_of_snapshot_node(&self, initial: &InitialNode) -> Option<String> {
        let setup = self.input.cluster_autoscaler.as_ref()?;
        if initial.node.claim.is_some() || initial.owner == NodeOwner::Karpenter {
            return None;
        }
        let groups = &setup.config.config().node_groups;
        if let NodeOwner::NodeGroup(name) = &initial.owner
            && groups.iter().any(|g| &g.name == name)
        {
            return Some(name.clone());
        }
        groups
            .iter()
            .find(|g| {
                !g.labels.is_empty()
                    && g.labels
                        .iter()
                        .all(|(k, v)| initial.node.labels.get(k) == Some(v.as_str()))
                    && g.instance_types.contains(&initial.instance_type)
                    && g.zones.contains(&initial.zone)
            })
            .map(|g| g.name.clone())
    }

    /// Makes a snapshot node a member of `group`: it counts in the group's
    /// size, may serve as its template, and scale-down may remove it
    /// (unless annotated `scale-down-disabled`).
    pub(super) fn ca_adopt_snapshot_node(
        &mut self,
        node: NodeId,
        group: &str,
        initial: &InitialNode,
    ) {
        let ready_since = initial.node.registered.then_some(initial.node.created_at);
        let Some(g) = self.ca_group_mut(group) else {
            return;
        };
        g.target_size += 1;
        g.members.push(GroupMember {
            node,
            instance_type: initial.instance_type.clone(),
            zone: initial.zone.clone(),
            capacity_type: initial.capacity_type,
            ready_since,
            scale_down_disabled: initial.scale_down_disabled,
            not_ready_since: None,
        });
    }

    /// ProvisioningRequests applied by a step: a Cluster Autoscaler run
    /// keeps them for its loops (a request already there keeps its spec,
    /// which the API server makes immutable); Karpenter ignores them.
    pub(super) fn add_provisioning_requests(&mut self, requests: &[Arc<ProvisioningRequest>]) {
        let now = self.now();
        let Some(ca) = self.autoscaler.ca_mut() else {
            return;
        };
        for request in requests {
            let exists = ca.requests.iter().any(|r| {
                r.request.namespace == request.namespace && r.request.name == request.name
            });
            if !exists {
                ca.requests.push(RequestState {
                    request: request.clone(),
                    created_at: now,
                    status: Default::default(),
                });
            }
        }
    }

    /// Writes the conditions a loop set on ProvisioningRequests back to
    /// them, logging each change of status or reason, and tells pods that
    /// consume a request why they triggered no scale-up.
    fn ca_request_outcomes(&mut self, updates: &[ConditionUpdate], consuming: &[PodId]) {
        let now = self.now();
        let mut notes = Vec::new();
        if let Some(ca) = self.autoscaler.ca_mut() {
            for update in updates {
                let Some(state) = ca.requests.get_mut(update.request) else {
                    continue;
                };
                let before = state.status.get(update.kind);
                state.status.set(
                    update.kind,
                    Condition {
                        status: update.status,
                        reason: update.reason,
                        since: now,
                    },
                );
                // Every attempt's outcome is logged; other conditions
                // when they change.
                let changed =
                    before.is_none_or(|c| c.status != update.status || c.reason != update.reason);
                if changed || update.kind == crate::autoscaler::ConditionType::Provisioned {
                    notes.push((state.key(), update.clone()));
                }
            }
        }
        for (key, update) in notes {
            let failed = update.kind == crate::autoscaler::ConditionType::Failed
                || (update.kind == crate::autoscaler::ConditionType::Provisioned && !update.status);
            self.log(
                if failed {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                update.kind.name(),
                format!("provisioningrequest/{key}"),
                format!(
                    "Status condition transitioned, Type: {}, Status: {}, Reason: {}: {}",
                    update.kind.name(),
                    if update.status { "True" } else { "False" },
                    update.reason,
                    update.message
                ),
            );
        }
        let mut new_pods = Vec::new();
        if let Some(ca) = self.autoscaler.ca_mut() {
            for &pod in consuming {
                if ca.consuming_told.insert(pod) {
                    new_pods.push(pod);
                }
            }
        }
        for pod in new_pods {
            let Some(name) = self
                .cluster
                .pod(pod)
                .and_then(|p| crate::kube::provisioning_request::consumed_request(&p.spec))
                .map(str::to_string)
            else {
                continue;
            };
            let namespace = self.pod_namespace(pod).to_string();
            self.log(
                EventType::Normal,
                "NotTriggerScaleUp",
                self.pod_object(pod),
                format!(
                    "Unschedulable pod didn't trigger scale-up, because it's consuming ProvisioningRequest {namespace}/{name}"
                ),
            );
        }
    }

    fn ca_group_mut(&mut self, group: &str) -> Option<&mut NodeGroupState> {
        self.autoscaler
            .ca_mut()?
            .groups
            .iter_mut()
            .find(|g| g.name == group)
    }

    /// Launches `delta` instances of `group` for `reason`; returns how
    /// many failed.
    pub(super) fn ca_launch(
        &mut self,
        setup: &CaSetup,
        group: &str,
        delta: u32,
        reason: &str,
    ) -> Result<u32, EngineError> {
        let now = self.now();
        let Some(spec) = setup.config.group(group) else {
            return Ok(0);
        };
        let members = self
            .autoscaler
            .ca()
            .and_then(|ca| ca.groups.iter().find(|g| g.name == group))
            .map(|g| g.members.clone())
            .unwrap_or_default();
        let mut catalog = setup.catalog.clone();
        for key in self.ice.keys() {
            catalog.mark_unavailable(&key.instance_type, &key.zone, key.capacity_type);
        }
        // The group's members, then the instances launched here.
        let mut placed = members;
        let existing = placed.len();
        let mut failed = 0;
        for _ in 0..delta {
            // The ASG launches one instance at a time over all its pools;
            // a pool short of capacity is left for the next (the fleet
            // tries its other overrides), so the instance fails only when
            // every pool of its capacity type has.
            let choice = loop {
                let choice = groups::asg_launch(spec, &catalog, &placed, 1).remove(0);
                let Ok(choice) = choice else {
                    break choice;
                };
                let key = super::OfferingKey {
                    instance_type: choice.instance_type.clone(),
                    zone: choice.zone.clone(),
                    capacity_type: choice.capacity_type,
                };
                match self.capacity_short(&key) {
                    None => break Ok(choice),
                    Some(true) => self.spot.counts.outage_launch_failures += 1,
                    Some(false) => {}
                }
                self.log(
                    EventType::Warning,
                    "FailedToLaunchInstance",
                    format!("nodegroup/{group}"),
                    format!(
                        "InsufficientInstanceCapacity for {} {} in {}; the ASG tries its other pools",
                        key.instance_type, key.capacity_type, key.zone
                    ),
                );
                catalog.mark_unavailable(&key.instance_type, &key.zone, key.capacity_type);
            };
            let choice = match choice {
                Ok(choice) => choice,
                Err(err) => {
                    failed += 1;
                    self.record.launch_failures += 1;
                    self.log(
                        EventType::Warning,
                        "FailedToScaleUpGroup",
                        format!("nodegroup/{group}"),
                        format!("Scale-up failed: {err}"),
                    );
                    continue;
                }
            };
            let counter = self
                .autoscaler
                .ca_mut()
                .map(|ca| {
                    let c = ca.launched_per_group.entry(group.to_string()).or_default();
                    *c += 1;
                    *c
                })
                .unwrap_or(0);
            let name = format!("{group}-{counter:05}");
            let Some(node) = groups::node_for_launch(spec, &catalog, &choice, &name, now) else {
                continue;
            };
            let node_id = self.add_launched_node(
                node,
                group,
                (choice.capacity_type, choice.price),
                (&choice.instance_type, &choice.zone),
                reason,
            )?;
            let latency = self.input.launch_latency.sample(&mut self.latency_rng);
            let hang = setup
                .startup_failures
                .get(group)
                .filter(|f| f.covers(now))
                .map(|f| f.kind);
            if let Some(kind) = hang
                && let Some(ca) = self.autoscaler.ca_mut()
            {
                ca.hanging.insert(node_id, kind);
            }
            // An instance whose kubelet never joins has no registration.
            if hang != Some(StartupFailureKind::Unregistered) {
                self.schedule(now + latency, Event::NodeReady(node_id))?;
            }
            self.ca_track_spot(
                node_id,
                &choice.instance_type,
                &choice.zone,
                choice.capacity_type,
            )?;
            placed.push(GroupMember {
                node: node_id,
                instance_type: choice.instance_type.clone(),
                zone: choice.zone.clone(),
                capacity_type: choice.capacity_type,
                ready_since: None,
                scale_down_disabled: false,
                not_ready_since: None,
            });
            self.log(
                EventType::Normal,
                "Launched",
                format!("node/{name}"),
                format!(
                    "ASG {group} launched {} {} in {} at ${}/h",
                    choice.instance_type,
                    choice.capacity_type,
                    choice.zone,
                    choice.price.decimal()
                ),
            );
        }
        let launched = placed.split_off(existing);
        let count = launched.len() as u32;
        if let Some(g) = self.ca_group_mut(group) {
            g.target_size += count;
            g.members.extend(launched);
        }
        if reason == LAUNCH_REASON {
            self.log(
                EventType::Normal,
                "TriggeredScaleUp",
                format!("nodegroup/{group}"),
                format!("pod triggered scale-up: [{{{group} {delta}}}]; launched {count}"),
            );
        }
        self.touch()?;
        Ok(failed)
    }
}

/// CA's wording of a reason (`simulator/unremovable_reasons.go` names);
/// a blocking pod is named with its rule.
fn reason_text(engine: &Engine<'_>, reason: &UnremovableReason) -> String {
    match reason {
        UnremovableReason::BlockedByPod { pod, rule } => {
            format!("BlockedByPod {} ({rule:?})", engine.pod_object(*pod))
        }
        other => format!("{other:?}"),
    }
}
