//! Node groups as CA sees them (target size, registered and upcoming
//! nodes, min/max), the node template CA plans with, and the ASG's own
//! choice of instance type, zone and purchase option for a launch.
//!
//! Template (`processors/nodeinfosprovider/mixed_nodeinfos_processor.go`):
//! a group member that has been Ready for at least a minute is cloned
//! (its allocatable, labels, taints and DaemonSet/mirror pods, new hostname);
//! otherwise the AWS cloud template is built as the AWS provider's
//! `buildNodeFromTemplate` (`cloudprovider/aws/aws_manager.go`) does: the
//! first instance type of the group, capacity `pods=110`, `cpu=vCPU`,
//! `memory=MiB·2^20`, **allocatable = capacity**, labels arch/os/instance
//! type/region/zone (first zone)/hostname plus the group's labels, the
//! group's taints; DaemonSet pods that would run there are added
//! (`simulator.TemplateNodeInfoFromNodeGroupTemplate`). karpsim adds the
//! root-volume ephemeral storage and accelerators from the catalog.
//!
//! ASG launch model (documented approximation of EC2 Auto Scaling): per new
//! instance, (1) purchase option from `OnDemandBaseCapacity` and
//! `OnDemandPercentageAboveBaseCapacity` (on-demand share above base rounded
//! up, in favour of on-demand, as AWS documents); (2) zone: the group's zone
//! with the fewest instances (AZ balance; ties in declared order) that has
//! an available offering; (3) type: on-demand takes the first override in
//! order (`prioritized`); spot `lowest-price` and `price-capacity-optimized`
//! take the cheapest available spot offering in that zone,
//! `capacity-optimized` the lowest interruption band (then override order).
//! No offering anywhere ⇒ the launch fails (insufficient capacity).

use std::collections::BTreeMap;

use super::config::{
    CapacitySplit, NodeGroupSpec, OnDemandAllocationStrategy, SpotAllocationStrategy,
};
use crate::cloud::{Arch, CapacityType, Catalog, Price};
use crate::cluster::{Cluster, Node, NodeId, Pod, PodPhase};
use crate::kube::labels::{
    LABEL_ARCH, LABEL_HOSTNAME, LABEL_INSTANCE_TYPE, LABEL_OS, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, Labels,
};
use crate::kube::pod::PodSpec;
use crate::kube::resources::{MIB, ResourceKind, Resources};
use crate::scheduler::filter::{node_affinity_matches, untolerated_taint};
use crate::time::{SimDuration, SimTime};

/// CA's hard-coded pod capacity of AWS templates ("TODO: get a real value").
pub const AWS_TEMPLATE_MAX_PODS: i64 = 110;
/// A node must have been Ready this long before CA clones it as the
/// template (`stabilizationDelay`).
pub const TEMPLATE_STABILIZATION_DELAY: SimDuration = SimDuration::from_mins(1);
/// Annotation marking a static (mirror) pod.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// One instance of an ASG, as `DescribeAutoScalingGroups` lists it, with
/// the Kubernetes node it runs (unregistered until it is Ready).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    /// The node in the cluster.
    pub node: NodeId,
    /// Launched instance type.
    pub instance_type: String,
    /// Launched zone.
    pub zone: String,
    /// Launched purchase option.
    pub capacity_type: CapacityType,
    /// Since when the node is Ready (the template needs ≥ 1 min).
    pub ready_since: Option<SimTime>,
    /// Node annotation `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`.
    pub scale_down_disabled: bool,
    /// The node registered but is not Ready (its kubelet joined, the node
    /// never became Ready): since when. Such a node takes no pods.
    pub not_ready_since: Option<SimTime>,
}

/// How long a registered node may stay not Ready and still count as
/// starting (`--max-node-startup-time`, clusterstate `MaxNodeStartupTime`).
pub const MAX_NODE_STARTUP_TIME: SimDuration = SimDuration::from_mins(15);

/// A member's readiness as clusterstate `updateReadinessStats` sorts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Readiness {
    /// Registered and Ready.
    Ready,
    /// Registered, not Ready, within the startup time: still upcoming.
    NotStarted,
    /// Registered and not Ready past the startup time.
    Unready,
    /// No Node object yet, within `maxNodeProvisionTime` of its launch.
    Unregistered,
    /// No Node object `maxNodeProvisionTime` after its launch.
    LongUnregistered,
}

/// The live state of one node group (the cloud provider's view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroupState {
    /// Group name (matches a [`NodeGroupSpec`]).
    pub name: String,
    /// Desired capacity.
    pub target_size: u32,
    /// Instances, in launch order.
    pub members: Vec<GroupMember>,
}

impl NodeGroupState {
    /// Members whose node is registered (a Node object CA can list).
    pub fn registered(&self, cluster: &Cluster) -> u32 {
        self.members
            .iter()
            .filter(|m| cluster.node(m.node).is_some_and(|n| n.registered))
            .count() as u32
    }

    /// Requested nodes not yet there: `target − (ready + unready + long
    /// unregistered)` (clusterstate `calculateUpcomingNodesInNodeGroup`):
    /// not-started and unregistered members count, as do instances not
    /// launched yet. `provision_time` is the group's
    /// `maxNodeProvisionTime`.
    pub fn upcoming(
        &self,
        cluster: &Cluster,
        now: SimTime,
        provision_time: SimDuration,
        unregistered_since: &BTreeMap<NodeId, SimTime>,
    ) -> u32 {
        let there = self
            .members
            .iter()
            .filter(|m| {
                matches!(
                    m.readiness(cluster, now, provision_time, unregistered_since),
                    Readiness::Ready | Readiness::Unready | Readiness::LongUnregistered
                )
            })
            .count() as u32;
        self.target_size.saturating_sub(there)
    }

    /// The member running `node`, if any.
    pub fn member(&self, node: NodeId) -> Option<&GroupMember> {
        self.members.iter().find(|m| m.node == node)
    }
}

impl GroupMember {
    /// The member's readiness at `now`; `provision_time` is the group's
    /// `maxNodeProvisionTime`, `unregistered_since` when CA first saw each
    /// instance without a Node object. A member whose node is gone counts
    /// as unregistered (it leaves the group in the caller's next refresh).
    pub fn readiness(
        &self,
        cluster: &Cluster,
        now: SimTime,
        provision_time: SimDuration,
        unregistered_since: &BTreeMap<NodeId, SimTime>,
    ) -> Readiness {
        let Some(node) = cluster.node(self.node) else {
            return Readiness::Unregistered;
        };
        if node.registered {
            return Readiness::Ready;
        }
        match self.not_ready_since {
            Some(since) if since + MAX_NODE_STARTUP_TIME > now => Readiness::NotStarted,
            Some(_) => Readiness::Unready,
            None if unregistered_since
                .get(&self.node)
                .is_some_and(|&since| since + provision_time < now) =>
            {
                Readiness::LongUnregistered
            }
            None => Readiness::Unregistered,
        }
    }
}

/// What CA thinks a new node of a group looks like.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTemplate {
    /// The node (no pods; `requested` zero).
    pub node: Node,
    /// DaemonSet and mirror pods the node starts with (unbound copies).
    pub daemon_pods: Vec<Pod>,
    /// The instance type CA believes it gets.
    pub instance_type: String,
    /// Cloned from a real node (else built from the cloud template).
    pub from_real_node: bool,
}

impl NodeTemplate {
    /// Requests of the daemon pods.
    pub fn daemon_requests(&self) -> Resources {
        self.daemon_pods.iter().map(|p| p.spec.requests).sum()
    }
}

/// Whether a pod is a mirror (static) pod.
pub fn is_mirror(pod: &Pod) -> bool {
    pod.spec.annotations.contains_key(MIRROR_POD_ANNOTATION)
}

fn unbound_copy(pod: &Pod) -> Pod {
    Pod {
        node: None,
        phase: PodPhase::Pending,
        unschedulable: false,
        ..pod.clone()
    }
}

/// The template of a group: a clone of its first member Ready for ≥ 1 min,
/// else the AWS cloud template. `None` if the group's first instance type
/// is not in the catalog.
pub fn template_for(
    spec: &NodeGroupSpec,
    state: Option<&NodeGroupState>,
    cluster: &Cluster,
    catalog: &Catalog,
    now: SimTime,
) -> Option<NodeTemplate> {
    let stable = state.into_iter().flat_map(|s| &s.members).find_map(|m| {
        let node = cluster.node(m.node)?;
        let ready = m.ready_since?;
        (node.registered
            && !node.marked_for_deletion
            && ready + TEMPLATE_STABILIZATION_DELAY <= now)
            .then_some((m, node))
    });
    let hostname = format!("template-node-for-{}", spec.name);
    if let Some((member, node)) = stable {
        let mut copy = node.clone();
        copy.name = hostname.clone();
        copy.labels.insert(LABEL_HOSTNAME, hostname);
        copy.requested = Resources::ZERO;
        copy.pods = Vec::new();
        copy.claim = None;
        let daemon_pods = node
            .pods
            .iter()
            .filter_map(|&id| cluster.pod(id))
            .filter(|p| !p.phase.is_terminal() && (p.is_daemonset() || is_mirror(p)))
            .map(unbound_copy)
            .collect();
        return Some(NodeTemplate {
            node: copy,
            daemon_pods,
            instance_type: member.instance_type.clone(),
            from_real_node: true,
        });
    }
    let type_name = spec.instance_types.first()?;
    let it = catalog.get(type_name)?;
    let zone = spec.zones.first()?;
    let mut capacity = it.capacity;
    capacity.set(ResourceKind::Cpu, i64::from(it.vcpu()) * 1000);
    capacity.set(ResourceKind::Memory, it.memory_mib() as i64 * MIB);
    capacity.set(ResourceKind::Pods, AWS_TEMPLATE_MAX_PODS);
    let mut labels = Labels::new();
    for (k, v) in &spec.labels {
        labels.insert(k.clone(), v.clone());
    }
    let arch = match it.arch() {
        Arch::Arm64 => "arm64",
        _ => "amd64",
    };
    labels.insert(LABEL_ARCH, arch);
    labels.insert(LABEL_OS, "linux");
    labels.insert(LABEL_INSTANCE_TYPE, type_name.clone());
    labels.insert(LABEL_TOPOLOGY_REGION, catalog.region());
    labels.insert(LABEL_TOPOLOGY_ZONE, zone.clone());
    labels.insert(LABEL_HOSTNAME, hostname.clone());
    let node = Node {
        name: hostname,
        labels,
        taints: spec.taints.clone(),
        capacity,
        // "TODO: use proper allocatable!!" upstream: kube-reserved and
        // eviction thresholds are not subtracted.
        allocatable: capacity,
        requested: Resources::ZERO,
        pods: Vec::new(),
        registered: true,
        initialized: true,
        marked_for_deletion: false,
        claim: None,
        created_at: now,
    };
    let daemon_pods = daemonset_pods_for(cluster, &node);
    Some(NodeTemplate {
        node,
        daemon_pods,
        instance_type: type_name.clone(),
        from_real_node: false,
    })
}

/// One pod per DaemonSet seen in the cluster (its first pod's spec) whose
/// taints and node affinity admit `node`.
fn daemonset_pods_for(cluster: &Cluster, node: &Node) -> Vec<Pod> {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for (_, pod) in cluster.pods() {
        let Some(owner) = pod.owner.as_ref().filter(|_| pod.is_daemonset()) else {
            continue;
        };
        let key = (pod.spec.namespace.clone(), owner.name.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let spec: &PodSpec = &pod.spec;
        if untolerated_taint(&node.taints, &spec.tolerations).is_none()
            && node_affinity_matches(spec, &node.labels)
        {
            out.push(unbound_copy(pod));
        }
    }
    out
}

/// What the ASG launches for one new instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchChoice {
    /// Instance type.
    pub instance_type: String,
    /// Zone.
    pub zone: String,
    /// Purchase option.
    pub capacity_type: CapacityType,
    /// Hourly price of the offering.
    pub price: Price,
}

/// Why the ASG could not launch an instance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchFailure {
    /// No available offering of the group's types in its zones.
    #[error("{group}: no {capacity_type} capacity for {types} in {zones}")]
    InsufficientCapacity {
        /// Group name.
        group: String,
        /// Purchase option asked for.
        capacity_type: CapacityType,
        /// The group's types, comma-separated.
        types: String,
        /// The group's zones, comma-separated.
        zones: String,
    },
}

/// On-demand instances the distribution wants among `total` instances.
pub fn desired_on_demand(split: CapacitySplit, total: u32) -> u32 {
    match split {
        CapacitySplit::OnDemand => total,
        CapacitySplit::Spot => 0,
        CapacitySplit::Mixed {
            on_demand_base_capacity: base,
            on_demand_percentage_above_base: pct,
        } => {
            let above = total.saturating_sub(base);
            base.min(total) + (u64::from(above) * u64::from(pct.min(100))).div_ceil(100) as u32
        }
    }
}

/// The ASG's choices for `count` new instances, given its current members,
/// one at a time (each launch counts for the next one's balance).
pub fn asg_launch(
    spec: &NodeGroupSpec,
    catalog: &Catalog,
    members: &[GroupMember],
    count: u32,
) -> Vec<Result<LaunchChoice, LaunchFailure>> {
    let mut zone_counts: Vec<u32> = spec
        .zones
        .iter()
        .map(|z| members.iter().filter(|m| &m.zone == z).count() as u32)
        .collect();
    let mut total = members.len() as u32;
    let mut on_demand = members
        .iter()
        .filter(|m| m.capacity_type == CapacityType::OnDemand)
        .count() as u32;
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let capacity_type = if on_demand < desired_on_demand(spec.capacity, total + 1) {
            CapacityType::OnDemand
        } else {
            CapacityType::Spot
        };
        let mut zone_order: Vec<usize> = (0..spec.zones.len()).collect();
        zone_order.sort_by_key(|&i| (zone_counts[i], i));
        let choice = zone_order.into_iter().find_map(|zi| {
            pick_in_zone(spec, catalog, &spec.zones[zi], capacity_type).map(|c| (zi, c))
        });
        match choice {
            Some((zi, c)) => {
                zone_counts[zi] += 1;
                total += 1;
                if capacity_type == CapacityType::OnDemand {
                    on_demand += 1;
                }
                out.push(Ok(c));
            }
            None => out.push(Err(LaunchFailure::InsufficientCapacity {
                group: spec.name.clone(),
                capacity_type,
                types: spec.instance_types.join(","),
                zones: spec.zones.join(","),
            })),
        }
    }
    out
}

fn pick_in_zone(
    spec: &NodeGroupSpec,
    catalog: &Catalog,
    zone: &str,
    capacity_type: CapacityType,
) -> Option<LaunchChoice> {
    // (override index, offering) for every available offering here.
    let candidates = spec.instance_types.iter().enumerate().filter_map(|(i, t)| {
        let it = catalog.get(t)?;
        let o = it
            .offerings
            .iter()
            .find(|o| o.available && o.zone == zone && o.capacity_type == capacity_type)?;
        Some((i, t, *o))
    });
    let best = match (capacity_type, spec.spot_allocation_strategy) {
        (CapacityType::Spot, SpotAllocationStrategy::CapacityOptimized) => {
            candidates.min_by_key(|(i, _, o)| (o.interruption_band.map_or(5, |b| b.index()), *i))
        }
        (CapacityType::Spot, _) => candidates.min_by_key(|(i, _, o)| (o.price, *i)),
        _ if spec.on_demand_allocation_strategy == OnDemandAllocationStrategy::LowestPrice => {
            candidates.min_by_key(|(i, _, o)| (o.price, *i))
        }
        _ => candidates.min_by_key(|(i, _, _)| *i),
    }?;
    Some(LaunchChoice {
        instance_type: best.1.clone(),
        zone: zone.to_string(),
        capacity_type,
        price: best.2.price,
    })
}

/// The Node a launched instance registers as: the group's labels and
/// taints, the catalog's real allocatable (kubelet reservations
/// subtracted, unlike the cloud template), unregistered until Ready.
pub fn node_for_launch(
    spec: &NodeGroupSpec,
    catalog: &Catalog,
    choice: &LaunchChoice,
    name: &str,
    now: SimTime,
) -> Option<Node> {
    let it = catalog.get(&choice.instance_type)?;
    let mut labels = Labels::new();
    for (k, v) in &spec.labels {
        labels.insert(k.clone(), v.clone());
    }
    labels.insert(
        LABEL_ARCH,
        if it.arch() == Arch::Arm64 {
            "arm64"
        } else {
            "amd64"
        },
    );
    labels.insert(LABEL_OS, "linux");
    labels.insert(LABEL_INSTANCE_TYPE, choice.instance_type.clone());
    labels.insert(LABEL_TOPOLOGY_REGION, catalog.region());
    labels.insert(LABEL_TOPOLOGY_ZONE, choice.zone.clone());
    labels.insert(LABEL_HOSTNAME, name);
    Some(Node {
        name: name.to_string(),
        labels,
        taints: spec.taints.clone(),
        capacity: it.capacity,
        allocatable: it.allocatable,
        requested: Resources::ZERO,
        pods: Vec::new(),
        registered: false,
        initialized: false,
        marked_for_deletion: false,
        claim: None,
        created_at: now,
    })
}
