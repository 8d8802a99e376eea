//! Builders of small clusters, pods, NodePools and PDBs for tests of the
//! rules over them (here and in the deciders).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cloud::{CapacityType, Price};
use crate::cluster::{
    ClaimLifecycle, Cluster, Node, NodeClaimInfo, NodeId, OwnerKind, OwnerRef, Pod, PodLifecycle,
    PodPhase,
};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE, Labels};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::kube::selector::LabelSelector;
use crate::kube::workload::{IntOrPercent, PodDisruptionBudget, UnhealthyPodEvictionPolicy};
use crate::nodepool::{Disruption, NodeClassRef, NodePool};
use crate::time::SimTime;

/// A copy of a shared pod spec with one change.
pub trait WithSpec {
    /// Applies `change` to a copy.
    fn with(&self, change: impl FnOnce(&mut PodSpec)) -> Arc<PodSpec>;
}

impl WithSpec for Arc<PodSpec> {
    fn with(&self, change: impl FnOnce(&mut PodSpec)) -> Arc<PodSpec> {
        let mut spec = (**self).clone();
        change(&mut spec);
        Arc::new(spec)
    }
}

/// A NodePool with defaults (10% budget, consolidateAfter 0s, 720h expiry).
pub fn pool(name: &str) -> NodePool {
    NodePool {
        name: name.to_string(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        requirements: Vec::new(),
        requirement_set: Requirements::new(),
        taints: Vec::new(),
        startup_taints: Vec::new(),
        expire_after: Some(crate::nodepool::DEFAULT_EXPIRE_AFTER),
        termination_grace_period: None,
        node_class_ref: NodeClassRef {
            group: "karpenter.k8s.aws".into(),
            kind: "EC2NodeClass".into(),
            name: "default".into(),
        },
        disruption: Disruption::default(),
        limits: BTreeMap::new(),
        weight: None,
        replicas: None,
    }
}

/// A managed, registered, initialized node of `pool` ($0.10/h, on-demand,
/// us-east-1a), created at time 0.
pub fn node(name: &str, pool: &str) -> Node {
    let mut labels = Labels::new();
    labels.insert(LABEL_NODEPOOL, pool);
    labels.insert(LABEL_CAPACITY_TYPE, "on-demand");
    labels.insert(LABEL_TOPOLOGY_ZONE, "us-east-1a");
    Node {
        name: name.to_string(),
        labels,
        taints: Vec::new(),
        capacity: Resources::cpu_mem(4000, 16 << 30),
        allocatable: Resources::cpu_mem(3900, 15 << 30),
        requested: Resources::ZERO,
        pods: Vec::new(),
        registered: true,
        initialized: true,
        marked_for_deletion: false,
        claim: Some(NodeClaimInfo {
            nodepool: pool.into(),
            instance_type: "m5.xlarge".into(),
            capacity_type: CapacityType::OnDemand,
            zone: "us-east-1a".into(),
            price: Price::from_micros(100_000),
            startup_taints: Vec::new(),
            lifecycle: ClaimLifecycle {
                initialized_at: Some(SimTime::ZERO),
                ..ClaimLifecycle::default()
            },
        }),
        created_at: SimTime::ZERO,
    }
}

/// A cluster with `n` nodes `<pool>-0..` of one pool.
pub fn cluster_with_pool_nodes(pool: &str, n: usize) -> Cluster {
    let mut cluster = Cluster::new();
    for i in 0..n {
        cluster.add_node(node(&format!("{pool}-{i}"), pool));
    }
    cluster
}

/// A running, unbound Deployment pod `name` in `default` with label app=web.
pub fn running_pod(name: &str) -> Pod {
    let mut pod = pod_of(name, "web", OwnerKind::Deployment, "web");
    pod.node = None;
    pod
}

/// A pod of `owner`, labelled `app=<app>`, in `default`, to be bound to
/// node 0 when added.
pub fn pod_of(name: &str, app: &str, kind: OwnerKind, owner: &str) -> Pod {
    let spec = PodSpec {
        labels: [("app".to_string(), app.to_string())].into(),
        requests: Resources::cpu_mem(100, 1 << 28),
        ..PodSpec::default()
    };
    Pod {
        name: name.to_string(),
        uid: 0,
        spec: Arc::new(spec),
        owner: Some(OwnerRef {
            kind,
            name: owner.to_string(),
        }),
        node: Some(NodeId(0)),
        phase: PodPhase::Running,
        created_at: SimTime::ZERO,
        unschedulable: false,
        lifecycle: PodLifecycle {
            started_at: Some(SimTime::ZERO),
            deleting_since: None,
        },
    }
}

/// A PDB `default/<name>` selecting app=<app>.
pub fn pdb(
    name: &str,
    app: &str,
    min: Option<IntOrPercent>,
    max: Option<IntOrPercent>,
) -> PodDisruptionBudget {
    PodDisruptionBudget {
        name: name.to_string(),
        namespace: "default".into(),
        selector: Some(LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            match_expressions: Vec::new(),
        }),
        min_available: min,
        max_unavailable: max,
        unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy::default(),
    }
}
