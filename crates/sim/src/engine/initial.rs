//! Runs that begin from an existing cluster (a kubectl snapshot): the
//! state a run starts with, and how the engine takes it over at t = 0.
//!
//! Nodes keep their ages (creation, initialization and last pod event are
//! instants before the start, negative in simulated time) and are billed
//! from t = 0. Pods keep their nodes; the workloads that own them adopt
//! them (a Deployment with three replicas and three running pods creates
//! nothing). Only Karpenter's nodes carry a NodeClaim. A Cluster
//! Autoscaler run takes the nodes of its node groups as the groups'
//! members (see [`Engine::ca_group_of_snapshot_node`]), so its scale-down
//! may remove them; other nodes (other node groups, unmanaged nodes, and
//! every non-Karpenter node of a Karpenter run) host pods and count for
//! topology, and no autoscaler of the run removes them.

use std::sync::Arc;

use super::{
    Engine, EngineError, Event, EventType, NodeMeta, PodMeta, TargetKind, WorkloadState,
    karpenter::shared_name,
};
use crate::cloud::{CapacityType, Price};
use crate::karpenter::disruption::drift::expiration_time;
use crate::kube::pod::PodSpec;
use crate::kube::workload::{PodDisruptionBudget, Workload};
use crate::scheduler::{Node, NodeId, Pod, PodPhase};
use crate::time::SimTime;

/// The cluster a run begins from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InitialState {
    /// Where it was read from (for messages).
    pub source: String,
    /// The wall-clock instant t = 0 stands for (RFC 3339), if known.
    pub time: Option<String>,
    /// Nodes, in the snapshot's order.
    pub nodes: Vec<InitialNode>,
    /// Pod-creating objects with the pods they own (a bare pod is a
    /// workload of kind Pod owning itself).
    pub workloads: Vec<InitialWorkload>,
    /// PodDisruptionBudgets.
    pub pdbs: Vec<PodDisruptionBudget>,
}

/// Who manages a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeOwner {
    /// A Karpenter NodeClaim (the node's `claim` is set).
    Karpenter,
    /// A node group (EKS managed node group or Auto Scaling group), named.
    NodeGroup(String),
    /// Neither: no autoscaler touches it.
    Unmanaged,
}

impl NodeOwner {
    /// `karpenter`, `nodegroup` or `none`, as `plan` reports it.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeOwner::Karpenter => "karpenter",
            NodeOwner::NodeGroup(_) => "nodegroup",
            NodeOwner::Unmanaged => "none",
        }
    }
}

/// One node of the starting cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialNode {
    /// The node as the deciders see it: registered, with `claim` set for a
    /// Karpenter node; `requested` and `pods` empty (pods are bound when
    /// the state is loaded).
    pub node: Node,
    /// Who manages it.
    pub owner: NodeOwner,
    /// Instance type (`node.kubernetes.io/instance-type`).
    pub instance_type: String,
    /// Zone (`topology.kubernetes.io/zone`).
    pub zone: String,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// Hourly price it is billed at ($0 when the catalog lacks its type).
    pub price: Price,
    /// Node annotation
    /// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`.
    pub scale_down_disabled: bool,
}

impl InitialNode {
    /// The name the ledger books its cost under: its NodePool, node group,
    /// or `unmanaged`.
    pub fn billing_pool(&self) -> String {
        match &self.owner {
            NodeOwner::Karpenter => self.node.nodepool().unwrap_or("unmanaged").to_string(),
            NodeOwner::NodeGroup(group) => group.clone(),
            NodeOwner::Unmanaged => "unmanaged".to_string(),
        }
    }
}

/// One pod of the starting cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialPod {
    /// Pod name.
    pub name: String,
    /// Its own spec (during a rollout it may differ from its owner's
    /// template).
    pub spec: Arc<PodSpec>,
    /// Index into [`InitialState::nodes`] of the node it is bound to;
    /// `None` while pending.
    pub node: Option<usize>,
    /// `metadata.creationTimestamp`.
    pub created_at: SimTime,
    /// `status.startTime`.
    pub started_at: Option<SimTime>,
    /// `PodScheduled=False` with reason `Unschedulable`.
    pub unschedulable: bool,
    /// A StatefulSet pod's ordinal.
    pub ordinal: Option<u32>,
}

/// A workload of the starting cluster and the pods it owns.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialWorkload {
    /// The object.
    pub workload: Workload,
    /// Its live (pending or running) pods.
    pub pods: Vec<InitialPod>,
    /// A Job's `status.succeeded`.
    pub succeeded: u32,
}

/// The stand-in name of the billing pool of nodes no autoscaler manages.
pub const UNMANAGED_POOL: &str = "unmanaged";

impl Engine<'_> {
    /// Takes over the starting cluster at t = 0, before any event.
    pub(super) fn load_initial(&mut self, state: &InitialState) -> Result<(), EngineError> {
        let mut node_ids = Vec::with_capacity(state.nodes.len());
        for initial in &state.nodes {
            node_ids.push(self.add_existing_node(initial)?);
        }
        for pdb in &state.pdbs {
            self.cluster.pdbs.push(pdb.clone());
        }
        let mut unschedulable = Vec::new();
        for initial in &state.workloads {
            let w = self.adopt_workload(&initial.workload, initial.succeeded);
            for pod in &initial.pods {
                let node = pod.node.map(|index| node_ids[index]);
                let id = self.adopt_pod(w, pod, node)?;
                if pod.unschedulable && node.is_none() {
                    unschedulable.push(id);
                }
            }
        }
        // Controllers catch up with their specs: missing replicas are
        // created, DaemonSet pods placed where one is missing.
        for w in 0..self.owners.workloads.len() {
            if self.owners.workloads[w].kind() == TargetKind::DaemonSet {
                for &node in &node_ids {
                    let has_pod = self.owners.workloads[w]
                        .pods
                        .iter()
                        .any(|&p| self.cluster.pod(p).is_some_and(|p| p.node == Some(node)));
                    if !has_pod {
                        self.place_daemon_pod(w, node)?;
                    }
                }
            } else {
                self.reconcile(w)?;
            }
        }
        if self.cluster.pending_pods().next().is_some() {
            self.wake_scheduler()?;
        }
        // Karpenter batches the pods kube-scheduler already marked
        // (Cluster Autoscaler wakes for them at its first loop).
        if self.autoscaler.karpenter().is_some() {
            self.trigger_batch(&unschedulable)?;
        }
        self.touch()
    }

    /// Adds a node that exists before the run: billed from t = 0, not
    /// counted as a launch.
    fn add_existing_node(&mut self, initial: &InitialNode) -> Result<NodeId, EngineError> {
        let mut node = initial.node.clone();
        node.requested = Default::default();
        node.pods = Vec::new();
        if let (Some(claim), Some(karpenter)) =
            (node.claim.as_mut(), self.autoscaler.karpenter_mut())
        {
            let pool = claim.nodepool.to_string();
            claim.nodepool = shared_name(&mut karpenter.pool_names, &pool);
            // New NodeClaims are named after the ones already there.
            if let Some(number) = node
                .name
                .strip_prefix(&format!("{pool}-"))
                .and_then(|n| n.parse::<u64>().ok())
            {
                let counter = karpenter.nodes_per_pool.entry(pool).or_default();
                *counter = (*counter).max(number);
            }
        }
        // A Cluster Autoscaler run takes the nodes of its node groups as
        // their members (billed under the group).
        let adopted = self.ca_group_of_snapshot_node(initial);
        let billing = self
            .ledger
            .launch(crate::ledger::NodeLaunch {
                node_name: node.name.clone(),
                pool: adopted.clone().unwrap_or_else(|| initial.billing_pool()),
                capacity_type: initial.capacity_type,
                launched_at: SimTime::ZERO,
                price: initial.price,
            })
            .map_err(|e| self.ledger_error(e))?;
        let (cpu, memory) = (
            node.allocatable.cpu_millis(),
            node.allocatable.memory_bytes(),
        );
        let ready = node.registered;
        let name = node.name.clone();
        let node_id = self.cluster.add_node(node);
        self.record
            .bound
            .node_added(node_id, cpu, memory, initial.price);
        self.node_meta.push(NodeMeta {
            billing,
            instance_type: initial.instance_type.clone(),
            zone: initial.zone.clone(),
            ready_at: ready.then_some(SimTime::ZERO),
            deleted_at: None,
            reason_deleted: String::new(),
            launch_reason: "snapshot".to_string(),
            deleting: None,
            reservation: None,
            conditions: Vec::new(),
            hangs: None,
        });
        self.record.peak_nodes = self.record.peak_nodes.max(self.cluster.node_count());
        if !ready && self.autoscaler.karpenter().is_some() {
            // A NodeClaim still starting starts again from t = 0 (its
            // liveness counts from its creation).
            let created_at = self
                .cluster
                .node(node_id)
                .map_or(SimTime::ZERO, |n| n.created_at);
            self.schedule_node_startup(node_id, SimTime::ZERO, created_at)?;
        }
        if let Some(at) = self.cluster.node(node_id).and_then(expiration_time) {
            self.schedule(at.max(SimTime::ZERO), Event::Expire(node_id))?;
        }
        self.log(
            EventType::Normal,
            "Adopted",
            format!("node/{name}"),
            format!(
                "from the snapshot: {} {} in {} at ${}/h, managed by {}",
                initial.instance_type,
                initial.capacity_type,
                initial.zone,
                initial.price.decimal(),
                match (&adopted, &initial.owner) {
                    (Some(group), _) => format!("node group {group} (Cluster Autoscaler)"),
                    (None, NodeOwner::Karpenter) => "karpenter".to_string(),
                    (None, NodeOwner::NodeGroup(group)) => format!("node group {group}"),
                    (None, NodeOwner::Unmanaged) => "nothing (unmanaged)".to_string(),
                }
            ),
        );
        if let Some(group) = adopted {
            self.ca_adopt_snapshot_node(node_id, &group, initial);
        }
        Ok(node_id)
    }

    /// Registers a workload of the starting cluster without creating pods.
    fn adopt_workload(&mut self, workload: &Workload, succeeded: u32) -> usize {
        let kind = super::target_kind(&workload.kind);
        let target = super::Target {
            kind,
            namespace: workload.namespace.clone(),
            name: workload.name.clone(),
        };
        let w = self.owners.workloads.len();
        self.owners.workloads.push(WorkloadState {
            workload: workload.clone(),
            desired: workload.desired_pods().unwrap_or(0),
            pods: Vec::new(),
            active_pods: 0,
            terminating_pods: 0,
            next_suffix: 1,
            succeeded,
            complete: false,
            deleted: false,
        });
        self.owners.workload_index.insert(&target, w);
        match kind {
            TargetKind::Deployment | TargetKind::ReplicaSet | TargetKind::StatefulSet => {
                self.owners.scalable_workloads.push(w);
            }
            TargetKind::DaemonSet => self.owners.daemonset_workloads.push(w),
            _ => {}
        }
        w
    }

    /// Adds a pod of the starting cluster to workload `w`, bound to `node`.
    fn adopt_pod(
        &mut self,
        w: usize,
        initial: &InitialPod,
        node: Option<NodeId>,
    ) -> Result<super::PodId, EngineError> {
        self.room_for_pods(1)?;
        let state = &mut self.owners.workloads[w];
        let namespace = state.namespace().to_string();
        // Names the engine gives later never repeat one already taken.
        if let Some(number) = initial
            .name
            .strip_prefix(&format!("{}-", state.name()))
            .filter(|n| n.len() == 5)
            .and_then(|n| n.parse::<u64>().ok())
        {
            state.next_suffix = state.next_suffix.max(number + 1);
        }
        let daemonset = state.kind() == TargetKind::DaemonSet;
        let pod = Pod {
            lifecycle: Default::default(),
            name: initial.name.clone(),
            uid: 0,
            spec: initial.spec.clone(),
            owner: self.owner_ref(w),
            node: None,
            phase: PodPhase::Pending,
            created_at: initial.created_at,
            unschedulable: initial.unschedulable,
        };
        let id = self.cluster.add_pod(pod);
        let kept_name = self.kept_pod_name(w, &initial.name);
        self.pod_meta.push(PodMeta {
            workload: w,
            name: kept_name,
            ordinal: initial.ordinal,
            daemonset,
            created_at: initial.created_at,
            first_bound: None,
            removed: false,
            lost: false,
            bound_before_run: node.is_some(),
        });
        self.owners
            .pod_names
            .insert(&(namespace.as_str(), initial.name.as_str()), id.0 as usize);
        self.owners.workloads[w].pods.push(id);
        self.recount(id, None);
        if !daemonset {
            self.spot_pod_created(id, w);
        }
        if let Some(node) = node {
            self.cluster.bind(id, node);
            self.spot_pod_bound(id, node);
            let started = initial.started_at.unwrap_or(initial.created_at);
            if let Some(p) = self.cluster.pod_mut(id) {
                p.lifecycle.started_at = Some(started);
            }
            self.pod_meta[id.0 as usize].first_bound = Some(started.max(initial.created_at));
            if let Some(run_time) = self.run_time(id) {
                self.schedule((started + run_time).max(SimTime::ZERO), Event::PodDone(id))?;
            }
        }
        Ok(id)
    }
}
