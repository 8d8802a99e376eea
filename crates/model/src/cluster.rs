//! The cluster as decision code sees it: nodes (registered Nodes and
//! launched-but-unregistered NodeClaims), pods and what owns them, and
//! PodDisruptionBudgets.
//!
//! `Cluster` is plain data. The simulation engine owns one and mutates it
//! through the methods here (which keep per-node request totals in step);
//! the kube-scheduler model, the Karpenter provisioner and later the
//! disruption and Cluster Autoscaler deciders only ever read it (`&Cluster`).
//! Nodes and pods live in arenas addressed by [`NodeId`] / [`PodId`]; a
//! removed slot is never reused within a run, so ids stay unambiguous in
//! events and reports.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::chunked::ChunkedVec;
use crate::index_set::IndexSet;
use crate::name_order::NameOrder;
use crate::node_store::NodeStore;

use crate::cloud::{CapacityType, Price};
use crate::kube::labels::Labels;
use crate::kube::pod::PodSpec;
use crate::kube::resources::{ResourceNames, Resources};
use crate::kube::taints::Taint;
use crate::kube::workload::PodDisruptionBudget;
use crate::time::{SimDuration, SimTime};

/// Index of a node in [`Cluster`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// Index of a pod in [`Cluster`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodId(pub u32);

/// What Karpenter knows about the NodeClaim behind a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeClaimInfo {
    /// Owning NodePool (one shared copy per NodePool where the engine
    /// launches: sums over a pool's nodes then know it by address).
    pub nodepool: Arc<str>,
    /// Launched instance type.
    pub instance_type: String,
    /// Launched capacity type.
    pub capacity_type: CapacityType,
    /// Launched zone.
    pub zone: String,
    /// Price of the launched offering.
    pub price: Price,
    /// NodePool startup taints (ignored while the node is uninitialized).
    pub startup_taints: Vec<Taint>,
    /// Lifecycle facts the disruption controller reads (kept by the engine).
    pub lifecycle: ClaimLifecycle,
}

/// The NodeClaim's `Drifted` status condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftedCondition {
    /// Upstream's condition reason (`NodePoolDrifted`, `RequirementsDrifted`, ...).
    pub reason: String,
    /// When the condition became true (drift candidates are taken oldest first).
    pub since: SimTime,
}

/// What Karpenter's disruption logic reads from a NodeClaim besides its
/// offering: timestamps, the NodePool template it was launched from, and
/// annotations. Everything defaults to "unknown / not set".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClaimLifecycle {
    /// When the `Initialized` condition became true.
    pub initialized_at: Option<SimTime>,
    /// `status.lastPodEventTime`: last bind / termination of a non-DaemonSet
    /// pod here (restarts the `consolidateAfter` clock).
    pub last_pod_event_at: Option<SimTime>,
    /// The node is the target of pending pods until this instant (upstream
    /// nominates for `max(2 × batch max duration, 10s)` = 20 s).
    pub nominated_until: Option<SimTime>,
    /// The NodePool template hash stamped at launch
    /// (`karpenter.sh/nodepool-hash`); `None` = unknown, never drifts.
    pub nodepool_hash: Option<String>,
    /// The `Drifted` condition, once set.
    pub drifted: Option<DriftedCondition>,
    /// `spec.expireAfter` copied from the NodePool at launch; `None` = Never.
    pub expire_after: Option<SimDuration>,
    /// `spec.terminationGracePeriod` copied from the NodePool at launch.
    pub termination_grace_period: Option<SimDuration>,
    /// Node annotation `karpenter.sh/do-not-disrupt: "true"`.
    pub do_not_disrupt: bool,
    /// The `InstanceTerminating` condition: the instance is being deleted.
    pub instance_terminating: bool,
}

/// A node: a registered Node, or a NodeClaim whose instance is still
/// starting (`registered == false`; pods cannot bind yet, but Karpenter
/// counts its capacity as in-flight).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Node (or NodeClaim) name.
    pub name: String,
    /// Labels (hostname, zone, instance type, capacity type, NodePool, …).
    pub labels: Labels,
    /// Taints.
    pub taints: Vec<Taint>,
    /// Capacity.
    pub capacity: Resources,
    /// Allocatable.
    pub allocatable: Resources,
    /// Sum of the requests of the non-terminal pods bound here (kept by
    /// [`Cluster::bind`] / [`Cluster::unbind`]).
    pub requested: Resources,
    /// Pods bound here, in bind order.
    pub pods: Vec<PodId>,
    /// A Node object exists: kube-scheduler may bind to it (while it is
    /// not initialized, only pods that tolerate its not-ready and startup
    /// taints).
    pub registered: bool,
    /// Karpenter's `karpenter.sh/initialized`: Ready, startup taints gone.
    pub initialized: bool,
    /// Being deleted (drained): no new pods; its pods are demand elsewhere.
    pub marked_for_deletion: bool,
    /// The NodeClaim, for Karpenter-managed nodes.
    pub claim: Option<NodeClaimInfo>,
    /// When it was launched (or added).
    pub created_at: SimTime,
}

impl Node {
    /// Allocatable not yet requested by bound pods (never negative).
    pub fn available(&self) -> Resources {
        self.allocatable.saturating_sub(&self.requested)
    }

    /// The NodePool that owns the node, if managed.
    pub fn nodepool(&self) -> Option<&str> {
        self.claim.as_ref().map(|c| &*c.nodepool)
    }
}

/// Who created a pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OwnerKind {
    /// A Deployment (through its ReplicaSet).
    Deployment,
    /// A ReplicaSet.
    ReplicaSet,
    /// A StatefulSet.
    StatefulSet,
    /// A Job.
    Job,
    /// A DaemonSet.
    DaemonSet,
    /// A ProvisioningRequest: the in-memory pods the Cluster Autoscaler
    /// makes from its pod sets (never real pods).
    ProvisioningRequest,
}

/// A pod's owner.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerRef {
    /// Owner kind.
    pub kind: OwnerKind,
    /// Owner name (in the pod's namespace).
    pub name: String,
}

/// A pod's lifecycle phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// Not bound yet.
    Pending,
    /// Bound and running.
    Running,
    /// Finished successfully (Jobs).
    Succeeded,
    /// Failed or killed (e.g. a Job's deadline).
    Failed,
}

impl PodPhase {
    /// Whether the pod has finished.
    pub fn is_terminal(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// A pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// Pod name.
    pub name: String,
    /// Creation sequence number: the UID tie-breaker of pod ordering.
    pub uid: u64,
    /// Scheduling-relevant spec (namespace, labels, requests, constraints).
    pub spec: Arc<PodSpec>,
    /// Owner, if any (bare pods have none).
    pub owner: Option<OwnerRef>,
    /// Bound node.
    pub node: Option<NodeId>,
    /// Phase.
    pub phase: PodPhase,
    /// Creation time.
    pub created_at: SimTime,
    /// kube-scheduler marked it `PodScheduled=False, reason Unschedulable`:
    /// what makes Karpenter consider it.
    pub unschedulable: bool,
    /// Status timestamps disruption decisions read (kept by the engine).
    pub lifecycle: PodLifecycle,
}

/// Pod status timestamps; everything defaults to "not set".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PodLifecycle {
    /// `status.startTime`: when the kubelet accepted the pod (a
    /// do-not-disrupt duration counts from here; unknown = still active).
    pub started_at: Option<SimTime>,
    /// `metadata.deletionTimestamp`: the pod is terminating.
    pub deleting_since: Option<SimTime>,
}

impl Pod {
    /// Whether a DaemonSet owns the pod.
    pub fn is_daemonset(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|o| o.kind == OwnerKind::DaemonSet)
    }
}

/// The cluster state.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// The live nodes, inline in id order.
    nodes: NodeStore,
    /// One slot per pod ever added (finished pods stay listed).
    pods: ChunkedVec<Option<Pod>>,
    /// PodDisruptionBudgets.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// Names of the extended resources in spare resource slots (for
    /// messages such as `Insufficient example.com/fpga`).
    pub resource_names: ResourceNames,
    next_uid: u64,
    /// Per node slot, the revision (from [`REVISION_CLOCK`]) at which
    /// anything a decision could read about the node (its fields, or a pod
    /// bound to it) last changed.
    node_revisions: Vec<u64>,
    /// The latest revision given to any node (see [`Cluster::revision`]).
    revision: u64,
    /// Pods that may be pending, a superset of them in id order (pods
    /// leave it when bound, finished or removed).
    maybe_pending: IndexSet,
    /// How many pods with required pod anti-affinity were ever added.
    anti_affinity_pods_added: usize,
    /// [`NodeTotals`] of the live nodes, except those in `unsettled`.
    totals: NodeTotals,
    /// Nodes that may have changed since the totals were last read: their
    /// share was taken out of `totals` before the change and is added back
    /// at the next read, so a read costs what changed, not every node.
    unsettled: Vec<NodeId>,
    /// Per node slot, whether it is in `unsettled`.
    is_unsettled: Vec<bool>,
    /// The live nodes' name order (see [`Cluster::name_order`]).
    name_order: NameOrder,
}

/// CPU and memory requested and allocatable, summed over the live nodes
/// (what the usage integrals read after every event).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeTotals {
    /// Requested CPU, millicores.
    pub cpu_requested_millis: i64,
    /// Requested memory, bytes.
    pub memory_requested_bytes: i64,
    /// Allocatable CPU, millicores.
    pub cpu_allocatable_millis: i64,
    /// Allocatable memory, bytes.
    pub memory_allocatable_bytes: i64,
}

impl NodeTotals {
    fn add(&mut self, node: &Node, sign: i64) {
        self.cpu_requested_millis += sign * node.requested.cpu_millis();
        self.memory_requested_bytes += sign * node.requested.memory_bytes();
        self.cpu_allocatable_millis += sign * node.allocatable.cpu_millis();
        self.memory_allocatable_bytes += sign * node.allocatable.memory_bytes();
    }
}

/// Revisions are drawn from one process-wide clock, so that two copies of
/// a cluster that change after the copy never give one node the same
/// revision for different states.
static REVISION_CLOCK: AtomicU64 = AtomicU64::new(1);

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Cluster {
        Cluster::default()
    }

    /// Adds a node; returns its id.
    pub fn add_node(&mut self, node: Node) -> NodeId {
        let id = self.nodes.next_id();
        self.name_order.insert(id.0, &node.name);
        self.nodes.add(node);
        // Not yet counted: the next read of the totals adds it.
        self.mark_unsettled(id);
        self.touch(id);
        id
    }

    /// Takes a live node's share out of the totals before it may change
    /// (see [`Cluster::node_totals`]).
    #[inline]
    fn unsettle(&mut self, id: NodeId) {
        if self
            .is_unsettled
            .get(id.0 as usize)
            .copied()
            .unwrap_or(false)
        {
            return;
        }
        let Some(node) = self.nodes.get(id) else {
            return;
        };
        self.totals.add(node, -1);
        self.mark_unsettled(id);
    }

    fn mark_unsettled(&mut self, id: NodeId) {
        let slot = id.0 as usize;
        if self.is_unsettled.len() <= slot {
            self.is_unsettled.resize(slot + 1, false);
        }
        self.is_unsettled[slot] = true;
        self.unsettled.push(id);
    }

    /// CPU and memory requested and allocatable over the live nodes. Kept
    /// as nodes change; a read adds back the nodes changed since the last
    /// one (hence `&mut`).
    pub fn node_totals(&mut self) -> NodeTotals {
        let mut unsettled = std::mem::take(&mut self.unsettled);
        for &id in &unsettled {
            self.is_unsettled[id.0 as usize] = false;
            if let Some(node) = self.nodes.get(id) {
                self.totals.add(node, 1);
            }
        }
        unsettled.clear();
        self.unsettled = unsettled;
        self.totals
    }

    /// Records that something about `id` changed.
    fn touch(&mut self, id: NodeId) {
        let slot = id.0 as usize;
        if self.node_revisions.len() <= slot {
            self.node_revisions.resize(slot + 1, 0);
        }
        self.revision = REVISION_CLOCK.fetch_add(1, Ordering::Relaxed);
        self.node_revisions[slot] = self.revision;
    }

    /// The cluster's node revision: it differs between two reads exactly
    /// when some node, or a pod bound to one, may have changed in between
    /// (the latest of [`Cluster::node_revision`], removed nodes included).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The node's revision: it differs between two reads of the same
    /// cluster exactly when the node, or a pod bound to it, may have
    /// changed in between (every mutable access counts as a change).
    /// Revisions are unique, so equal revisions of one id mean an unchanged
    /// node (also between copies of a cluster).
    pub fn node_revision(&self, id: NodeId) -> u64 {
        self.node_revisions.get(id.0 as usize).copied().unwrap_or(0)
    }

    /// Removes a node, unbinding (not deleting) its pods; returns it.
    pub fn remove_node(&mut self, id: NodeId) -> Option<Node> {
        self.unsettle(id);
        let pods = self.node(id)?.pods.clone();
        for pod in pods {
            self.unbind(pod);
        }
        self.touch(id);
        let node = self.nodes.remove(id)?;
        self.name_order.remove(id.0, &node.name);
        Some(node)
    }

    /// Adds a pod (its `uid` is assigned here, in creation order).
    pub fn add_pod(&mut self, mut pod: Pod) -> PodId {
        pod.uid = self.next_uid;
        self.next_uid += 1;
        let bound_to = pod.node.take();
        if !pod.spec.pod_anti_affinity.required.is_empty() {
            self.anti_affinity_pods_added += 1;
        }
        let pending = pod.phase == PodPhase::Pending;
        self.pods.push(Some(pod));
        let id = PodId((self.pods.len() - 1) as u32);
        if pending {
            self.maybe_pending.insert(id.0);
        }
        if let Some(node) = bound_to {
            self.bind(id, node);
        }
        id
    }

    /// Removes a pod, unbinding it first; returns it.
    pub fn remove_pod(&mut self, id: PodId) -> Option<Pod> {
        self.unbind(id);
        self.maybe_pending.remove(id.0);
        self.pods.get_mut(id.0 as usize)?.take()
    }

    /// Binds a pending pod to a node: it becomes Running there.
    pub fn bind(&mut self, pod_id: PodId, node_id: NodeId) {
        self.unbind(pod_id);
        let Some(pod) = self
            .pods
            .get_mut(pod_id.0 as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        let requests = pod.spec.requests;
        pod.node = Some(node_id);
        pod.phase = PodPhase::Running;
        pod.unschedulable = false;
        self.maybe_pending.remove(pod_id.0);
        self.unsettle(node_id);
        if let Some(node) = self.nodes.get_mut(node_id) {
            node.requested += requests;
            node.pods.push(pod_id);
        }
        self.touch(node_id);
    }

    /// Unbinds a pod from its node (if any); its phase is left to the caller.
    pub fn unbind(&mut self, pod_id: PodId) {
        let Some(pod) = self
            .pods
            .get_mut(pod_id.0 as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        let Some(node_id) = pod.node.take() else {
            return;
        };
        // A finished pod stays finished when its node goes: it does not
        // join the pending candidates (a caller that revives it does so
        // through `pod_mut`, which adds it).
        if !pod.phase.is_terminal() {
            self.maybe_pending.insert(pod_id.0);
        }
        let requests = pod.spec.requests;
        let was_counted = !pod.phase.is_terminal();
        self.unsettle(node_id);
        if let Some(node) = self.nodes.get_mut(node_id) {
            if was_counted {
                node.requested -= requests;
            }
            node.pods.retain(|p| *p != pod_id);
        }
        self.touch(node_id);
    }

    /// Marks a bound pod finished; it stays listed on its node (as
    /// Kubernetes keeps completed pods) but no longer counts as requested.
    pub fn finish_pod(&mut self, pod_id: PodId, phase: PodPhase) {
        debug_assert!(phase.is_terminal());
        let Some(pod) = self
            .pods
            .get_mut(pod_id.0 as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        if pod.phase.is_terminal() {
            return;
        }
        pod.phase = phase;
        self.maybe_pending.remove(pod_id.0);
        if let Some(node_id) = pod.node {
            let requests = pod.spec.requests;
            self.unsettle(node_id);
            if let Some(node) = self.nodes.get_mut(node_id) {
                node.requested -= requests;
            }
            self.touch(node_id);
        }
    }

    /// Gives a finished pod that is bound to no node another spec (one
    /// shared by many such pods); returns whether it did. Such a pod is
    /// never scheduled, counted on a node or placed again: only what
    /// listings and PodDisruptionBudget status read of it is still used.
    /// Anything else (a running, pending or bound pod) is left alone.
    pub fn replace_finished_spec(&mut self, id: PodId, spec: Arc<PodSpec>) -> bool {
        match self.pods.get_mut(id.0 as usize).and_then(Option::as_mut) {
            Some(pod) if pod.phase.is_terminal() && pod.node.is_none() => {
                pod.spec = spec;
                true
            }
            _ => false,
        }
    }

    /// A node by id (`None` once removed).
    #[inline]
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// A node by id, mutably.
    #[inline]
    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.unsettle(id);
        self.touch(id);
        self.nodes.get_mut(id)
    }

    /// A pod by id (`None` once removed).
    #[inline]
    pub fn pod(&self, id: PodId) -> Option<&Pod> {
        self.pods.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// A pod by id, mutably (do not change `node`, `spec.requests` or
    /// `spec.pod_anti_affinity` directly: use [`Cluster::bind`], or add a
    /// new pod).
    #[inline]
    pub fn pod_mut(&mut self, id: PodId) -> Option<&mut Pod> {
        if let Some(node) = self.pod(id).and_then(|p| p.node) {
            self.touch(node);
        }
        // The caller may change its phase; a bound pod joins the pending
        // candidates only when unbound (`unbind` adds it then).
        if self.pod(id).is_some_and(|p| p.node.is_none()) {
            self.maybe_pending.insert(id.0);
        }
        self.pods.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// Every live node, in id (creation) order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes.iter()
    }

    /// Every live pod, in id (creation) order.
    pub fn pods(&self) -> impl Iterator<Item = (PodId, &Pod)> + '_ {
        self.pods
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (PodId(i as u32), p)))
    }

    /// Pending pods (not bound, not finished), in creation order.
    pub fn pending_pods(&self) -> impl Iterator<Item = (PodId, &Pod)> + '_ {
        self.maybe_pending
            .iter()
            .filter_map(|index| self.pod(PodId(index)).map(|p| (PodId(index), p)))
            .filter(|(_, p)| p.node.is_none() && p.phase == PodPhase::Pending)
    }

    /// Whether some pod ever added has required pod anti-affinity (when
    /// not, no running pod has).
    pub fn may_have_anti_affinity_pods(&self) -> bool {
        self.anti_affinity_pods_added > 0
    }

    /// A number whose order among the live nodes is their name order (ties
    /// of equal names by id): "then by name" in a sort key, compared
    /// without reading the names. Node names never change once added.
    #[inline]
    pub fn name_order(&self, id: NodeId) -> u64 {
        self.name_order.label(id.0)
    }

    /// Number of live nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::resources::Resources;

    fn node(name: &str) -> Node {
        Node {
            name: name.to_string(),
            labels: Labels::new(),
            taints: Vec::new(),
            capacity: Resources::cpu_mem(2000, 8 << 30),
            allocatable: Resources::cpu_mem(1930, 7 << 30),
            requested: Resources::ZERO,
            pods: Vec::new(),
            registered: true,
            initialized: true,
            marked_for_deletion: false,
            claim: None,
            created_at: SimTime::ZERO,
        }
    }

    fn pod(cpu: i64) -> Pod {
        let spec = PodSpec {
            requests: Resources::cpu_mem(cpu, 1 << 30),
            ..PodSpec::default()
        };
        Pod {
            name: format!("p{cpu}"),
            uid: 0,
            spec: Arc::new(spec),
            owner: None,
            node: None,
            phase: PodPhase::Pending,
            created_at: SimTime::ZERO,
            unschedulable: false,
            lifecycle: PodLifecycle::default(),
        }
    }

    #[test]
    fn bind_unbind_and_finish_keep_requests_in_step() {
        let mut cluster = Cluster::new();
        let n = cluster.add_node(node("a"));
        let p = cluster.add_pod(pod(500));
        let q = cluster.add_pod(pod(300));
        assert_eq!(cluster.pod(q).unwrap().uid, 1, "uids follow creation");
        assert_eq!(cluster.pending_pods().count(), 2);
        cluster.bind(p, n);
        cluster.bind(q, n);
        assert_eq!(cluster.node(n).unwrap().requested.cpu_millis(), 800);
        assert_eq!(cluster.node(n).unwrap().available().cpu_millis(), 1130);
        cluster.finish_pod(q, PodPhase::Succeeded);
        cluster.finish_pod(q, PodPhase::Succeeded);
        assert_eq!(cluster.node(n).unwrap().requested.cpu_millis(), 500);
        cluster.unbind(q);
        assert_eq!(cluster.node(n).unwrap().requested.cpu_millis(), 500);
        assert_eq!(cluster.node(n).unwrap().pods, vec![p]);
        let removed = cluster.remove_node(n).unwrap();
        assert_eq!(removed.requested.cpu_millis(), 0);
        assert!(cluster.pod(p).unwrap().node.is_none());
        assert!(cluster.node(n).is_none());
        let m = cluster.add_node(node("b"));
        assert_ne!(m, n, "ids are never reused");
    }

    /// Every change to a node or to a pod bound to it gives the node a new
    /// revision; reads do not; other nodes keep theirs; two copies of a
    /// cluster that change after the copy never share a new revision.
    #[test]
    fn revisions_follow_every_change() {
        let mut cluster = Cluster::new();
        let a = cluster.add_node(node("a"));
        let b = cluster.add_node(node("b"));
        let p = cluster.add_pod(pod(500));
        let mut last = cluster.node_revision(a);
        let b_before = cluster.node_revision(b);
        let changed = |cluster: &Cluster, last: &mut u64, what: &str| {
            let now = cluster.node_revision(a);
            assert_ne!(now, *last, "{what} changes the revision");
            assert_eq!(
                cluster.revision(),
                now,
                "{what}: the cluster's is the latest"
            );
            *last = now;
        };
        cluster.bind(p, a);
        changed(&cluster, &mut last, "bind");
        let _ = cluster.node(a).unwrap().available();
        let _ = cluster.pending_pods().count();
        let unbound = cluster.add_pod(pod(250));
        assert_eq!(cluster.node_revision(a), last, "reads keep it");
        assert_eq!(cluster.revision(), last, "so does a pod on no node");
        cluster.pod_mut(p).unwrap().unschedulable = true;
        changed(&cluster, &mut last, "a bound pod's mutable access");
        cluster.finish_pod(p, PodPhase::Succeeded);
        changed(&cluster, &mut last, "finish");
        cluster.unbind(p);
        changed(&cluster, &mut last, "unbind");
        cluster.node_mut(a).unwrap().initialized = false;
        changed(&cluster, &mut last, "node_mut");
        assert_eq!(
            cluster.node_revision(b),
            b_before,
            "other nodes keep theirs"
        );

        let before_removal = cluster.revision();
        cluster.bind(unbound, b);
        cluster.remove_node(b);
        assert!(
            cluster.revision() > before_removal,
            "removing a node changes it"
        );

        let mut copy = cluster.clone();
        assert_eq!(copy.node_revision(a), cluster.node_revision(a));
        copy.node_mut(a).unwrap().initialized = true;
        cluster.node_mut(a).unwrap().initialized = true;
        assert_ne!(copy.node_revision(a), cluster.node_revision(a));
    }

    /// Only a finished pod bound to no node takes another spec.
    #[test]
    fn replace_finished_spec_only_for_unbound_finished_pods() {
        let mut cluster = Cluster::new();
        let n = cluster.add_node(node("a"));
        let pending = cluster.add_pod(pod(100));
        let running = cluster.add_pod(pod(200));
        let done = cluster.add_pod(pod(300));
        cluster.bind(running, n);
        cluster.bind(done, n);
        cluster.finish_pod(done, PodPhase::Succeeded);
        let shared = Arc::new(PodSpec::default());
        for id in [pending, running, done] {
            assert!(!cluster.replace_finished_spec(id, shared.clone()));
        }
        cluster.remove_node(n);
        assert!(!cluster.replace_finished_spec(running, shared.clone()));
        assert!(cluster.replace_finished_spec(done, shared.clone()));
        assert!(Arc::ptr_eq(&cluster.pod(done).unwrap().spec, &shared));
        assert_eq!(
            cluster.pod(running).unwrap().spec.requests.cpu_millis(),
            200
        );
        assert!(!cluster.replace_finished_spec(PodId(99), shared));
    }

    /// Listings name exactly the live nodes, in id order, however many
    /// ids were given out and removed.
    #[test]
    fn node_listing_follows_adds_and_removals() {
        let mut cluster = Cluster::new();
        let ids: Vec<NodeId> = (0..10)
            .map(|i| cluster.add_node(node(&format!("n{i}"))))
            .collect();
        for &i in &[0, 4, 5, 9] {
            cluster.remove_node(ids[i]);
        }
        let late = cluster.add_node(node("late"));
        let listed: Vec<NodeId> = cluster.nodes().map(|(id, _)| id).collect();
        let expected: Vec<NodeId> = [1, 2, 3, 6, 7, 8]
            .iter()
            .map(|&i| ids[i])
            .chain([late])
            .collect();
        assert_eq!(listed, expected);
        assert_eq!(cluster.node_count(), 7);
        assert!(
            cluster
                .nodes()
                .all(|(id, n)| cluster.node(id).is_some_and(|m| m.name == n.name))
        );
    }

    /// The live nodes' name order sorts them as (name, id) does, through
    /// removals and nodes that come back under a removed node's name, and
    /// holds only the live nodes.
    #[test]
    fn name_order_sorts_live_nodes_by_name() {
        let mut cluster = Cluster::new();
        let names = ["b-07", "a-10", "b-02", "c-01", "a-03", "b-07", "a-99"];
        let ids: Vec<NodeId> = names.iter().map(|n| cluster.add_node(node(n))).collect();
        cluster.remove_node(ids[2]);
        cluster.remove_node(ids[4]);
        cluster.add_node(node("b-02"));
        cluster.add_node(node("a-00"));
        let mut by_order: Vec<(NodeId, &str)> = cluster
            .nodes()
            .map(|(id, n)| (id, n.name.as_str()))
            .collect();
        by_order.sort_by_key(|(id, _)| cluster.name_order(*id));
        let mut by_name = by_order.clone();
        by_name.sort_by_key(|(id, name)| (*name, *id));
        assert_eq!(by_order, by_name);
        assert_eq!(by_order.len(), 7);
        assert_eq!(
            cluster.name_order.live(),
            7,
            "removed nodes leave the order"
        );
    }

    /// The pending index gives exactly the pods a full scan finds, in id
    /// order, through binds, unbinds, phase changes, finishes and removals,
    /// and collects neither the finished pods of removed nodes nor bound
    /// pods that were changed.
    #[test]
    fn pending_index_matches_a_full_scan() {
        let scan = |cluster: &Cluster| -> Vec<PodId> {
            cluster
                .pods()
                .filter(|(_, p)| p.node.is_none() && p.phase == PodPhase::Pending)
                .map(|(id, _)| id)
                .collect()
        };
        let indexed = |cluster: &Cluster| -> Vec<PodId> {
            cluster.pending_pods().map(|(id, _)| id).collect()
        };
        let mut cluster = Cluster::new();
        let n = cluster.add_node(node("a"));
        let pods: Vec<PodId> = (0..6).map(|i| cluster.add_pod(pod(100 + i))).collect();
        let mut bound = pod(50);
        bound.node = Some(n);
        bound.phase = PodPhase::Running;
        cluster.add_pod(bound);
        assert_eq!(indexed(&cluster), scan(&cluster));
        assert_eq!(indexed(&cluster), pods);
        cluster.bind(pods[1], n);
        cluster.bind(pods[2], n);
        assert_eq!(indexed(&cluster), scan(&cluster));
        // Changing a bound pod does not make it a pending candidate.
        cluster.pod_mut(pods[2]).unwrap().unschedulable = false;
        assert!(!cluster.maybe_pending.contains(pods[2].0));
        cluster.unbind(pods[1]);
        cluster.pod_mut(pods[1]).unwrap().phase = PodPhase::Pending;
        cluster.finish_pod(pods[3], PodPhase::Failed);
        cluster.pod_mut(pods[4]).unwrap().phase = PodPhase::Failed;
        cluster.remove_pod(pods[5]);
        assert_eq!(indexed(&cluster), scan(&cluster));
        assert_eq!(indexed(&cluster), vec![pods[0], pods[1]]);
        let done = cluster.add_pod(pod(60));
        cluster.bind(done, n);
        cluster.finish_pod(done, PodPhase::Succeeded);
        cluster.remove_node(n);
        assert_eq!(indexed(&cluster), scan(&cluster));
        // A finished pod whose node went is not kept as a candidate: the
        // index stays the size of the pods that may still be pending.
        assert!(!cluster.maybe_pending.contains(done.0));
        // Unbound by the removal; pending once its owner says so.
        cluster.pod_mut(pods[2]).unwrap().phase = PodPhase::Pending;
        assert_eq!(indexed(&cluster), scan(&cluster));
        assert_eq!(indexed(&cluster), vec![pods[0], pods[1], pods[2]]);
    }

    /// The kept totals equal a recount over the live nodes after every
    /// step of a fixed pseudo-random run of adds, binds, unbinds, finished
    /// pods, direct node edits and removals, read at random moments (so
    /// some nodes change several times, or go, between two reads).
    #[test]
    fn kept_node_totals_follow_every_change() {
        fn recount(cluster: &Cluster) -> NodeTotals {
            let mut totals = NodeTotals::default();
            for (_, node) in cluster.nodes() {
                totals.add(node, 1);
            }
            totals
        }
        let mut cluster = Cluster::new();
        let mut state = 0x9e37_79b9_u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let (mut nodes, mut pods) = (Vec::new(), Vec::new());
        let mut reads = 0;
        for step in 0..3000 {
            match next(7) {
                0 => nodes.push(cluster.add_node(node(&format!("n{step}")))),
                1 if !nodes.is_empty() => {
                    let id = nodes.swap_remove(next(nodes.len() as u64) as usize);
                    cluster.remove_node(id);
                }
                2 if !nodes.is_empty() => {
                    let id = nodes[next(nodes.len() as u64) as usize];
                    let n = cluster.node_mut(id).unwrap();
                    n.allocatable = Resources::cpu_mem(1000 + 10 * next(100) as i64, 1 << 30);
                }
                3 if !pods.is_empty() => {
                    let p = pods[next(pods.len() as u64) as usize];
                    cluster.unbind(p);
                }
                4 if !pods.is_empty() => {
                    let p = pods[next(pods.len() as u64) as usize];
                    cluster.finish_pod(p, PodPhase::Succeeded);
                }
                _ if !nodes.is_empty() => {
                    let p = cluster.add_pod(pod(100 + next(900) as i64));
                    pods.push(p);
                    cluster.bind(p, nodes[next(nodes.len() as u64) as usize]);
                }
                _ => {}
            }
            if next(3) == 0 {
                reads += 1;
                assert_eq!(cluster.node_totals(), recount(&cluster), "step {step}");
            }
        }
        assert!(reads > 500);
        assert_eq!(cluster.node_totals(), recount(&cluster));
        assert!(cluster.node_totals().cpu_requested_millis > 0);
    }
}
