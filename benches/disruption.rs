//! Disruption pass benchmark: one `next_command` over a 500-node,
//! 10,000-pod cluster on the real us-east-1 catalog (a mix of on-demand and
//! spot m5 / c6a / r6i nodes, 20 pods each).
//!
//! - `underutilized`: pods fill about a third of each node, so multi-node
//!   consolidation finds a command (a handful of solves in its binary
//!   search).
//! - `packed`: pods fill 95% of each node; no node can simply go, and the
//!   multi-node search ends with a replace of the most expensive nodes by
//!   one large (metal) type, as upstream would. `packed_limited` sets
//!   `single_node_candidate_limit` (which only matters when multi-node
//!   finds nothing and single-node walks its candidates).

use karpsim_catalog::BundledCatalog;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use karpsim_deciders::karpenter::disruption::{
    ControllerScales, Disruption, DisruptionInput, DisruptionOptions, PassOutcome,
};
use karpsim_deciders::karpenter::provisioning::{NodePoolContext, Provisioner};
use karpsim_deciders::scheduler::{Cluster, Node, OwnerKind, OwnerRef, Pod, PodPhase};
use karpsim_input::nodepools::load_str;
use karpsim_model::cloud::nodeclass::NodeClassSettings;
use karpsim_model::cloud::{CapacityType, Catalog};
use karpsim_model::cluster::{ClaimLifecycle, NodeClaimInfo, PodLifecycle};
use karpsim_model::kube::labels::{
    LABEL_CAPACITY_TYPE, LABEL_HOSTNAME, LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE,
    Labels,
};
use karpsim_model::kube::pod::PodSpec;
use karpsim_model::kube::resources::{MIB, ResourceKind, Resources};
use karpsim_model::nodepool::NodePool;
use karpsim_sim::SimTime;

const NODES: usize = 500;
const PODS_PER_NODE: usize = 20;
const TYPES: [&str; 6] = [
    "m5.2xlarge",
    "m5.4xlarge",
    "c6a.4xlarge",
    "r6i.2xlarge",
    "m6i.2xlarge",
    "c5.4xlarge",
];

fn main() {
    divan::main();
}

struct World {
    cluster: Cluster,
    pool: NodePool,
    catalog: Catalog,
    scales: ControllerScales,
}

fn world(fill_percent: i64) -> World {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).expect("catalog");
    let yaml = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements:\n        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}\n        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [\"4\"]}\n        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}\n";
    let pool = load_str("pool.yaml", yaml)
        .expect("valid NodePool")
        .nodepools
        .remove(0);
    let mut cluster = Cluster::new();
    let mut scales = ControllerScales::default();
    for i in 0..NODES {
        let type_name = TYPES[i % TYPES.len()];
        let it = catalog.get(type_name).expect("type");
        let ct = if i % 3 == 0 {
            CapacityType::Spot
        } else {
            CapacityType::OnDemand
        };
        let offering = it
            .offerings
            .iter()
            .filter(|o| o.capacity_type == ct)
            .nth(i % 3)
            .or_else(|| it.offerings.iter().find(|o| o.capacity_type == ct))
            .expect("offering");
        let name = format!("node-{i:03}");
        let mut labels = Labels::new();
        for (key, value) in &it.labels {
            labels.insert(*key, value.clone());
        }
        labels.insert(LABEL_NODEPOOL, "default");
        labels.insert(LABEL_CAPACITY_TYPE, ct.label());
        labels.insert(LABEL_TOPOLOGY_ZONE, offering.zone);
        labels.insert(LABEL_INSTANCE_TYPE, type_name);
        labels.insert(LABEL_HOSTNAME, name.clone());
        let node = cluster.add_node(Node {
            name,
            labels,
            taints: Vec::new(),
            capacity: it.capacity,
            allocatable: it.allocatable,
            requested: Resources::ZERO,
            pods: Vec::new(),
            registered: true,
            initialized: true,
            marked_for_deletion: false,
            claim: Some(NodeClaimInfo {
                nodepool: "default".into(),
                instance_type: type_name.into(),
                capacity_type: ct,
                zone: offering.zone.to_string(),
                price: offering.price,
                startup_taints: Vec::new(),
                lifecycle: ClaimLifecycle {
                    initialized_at: Some(SimTime::ZERO),
                    ..ClaimLifecycle::default()
                },
            }),
            created_at: SimTime::ZERO,
        });
        // Pods sized to fill `fill_percent` of the node's CPU and memory.
        let cpu = it.allocatable.cpu_millis() * fill_percent / 100 / PODS_PER_NODE as i64;
        let mem = it.allocatable.memory_bytes() * fill_percent / 100 / PODS_PER_NODE as i64;
        for j in 0..PODS_PER_NODE {
            let app = format!("app-{}", (i * PODS_PER_NODE + j) % 50);
            let spec = PodSpec {
                labels: [("app".to_string(), app.clone())].into(),
                requests: Resources::cpu_mem(cpu, mem / MIB * MIB).with(ResourceKind::Pods, 1),
                ..PodSpec::default()
            };
            cluster.add_pod(Pod {
                name: format!("pod-{i}-{j}"),
                uid: 0,
                spec: Arc::new(spec),
                owner: Some(OwnerRef {
                    kind: OwnerKind::ReplicaSet,
                    name: app.clone(),
                }),
                node: Some(node),
                phase: PodPhase::Running,
                created_at: SimTime::ZERO,
                unschedulable: false,
                lifecycle: PodLifecycle {
                    started_at: Some(SimTime::ZERO),
                    deleting_since: None,
                },
            });
            scales.insert("default", OwnerKind::ReplicaSet, &app, 200);
        }
    }
    World {
        cluster,
        pool,
        catalog,
        scales,
    }
}

fn pass(world: &World, options: DisruptionOptions) -> PassOutcome {
    let contexts = [NodePoolContext {
        pool: &world.pool,
        catalog: &world.catalog,
    }];
    let in_flight = BTreeSet::new();
    let input = DisruptionInput {
        cluster: &world.cluster,
        nodepools: &contexts,
        daemonsets: &[],
        scales: &world.scales,
        pending: &[],
        in_flight: &in_flight,
        node_count_resource: None,
        now: SimTime::from_secs(3600),
        consolidation_state: None,
    };
    Disruption::new(options).pass(&input, &Provisioner::new())
}

fn report(name: &str, world: &World, options: DisruptionOptions) {
    let start = Instant::now();
    let outcome = pass(world, options);
    let elapsed = start.elapsed();
    let summary = outcome.command.as_ref().map_or_else(
        || "no command".to_string(),
        |c| format!("{:?}: {}", c.method, c.explanation),
    );
    println!(
        "{name}: one pass {:.0} ms, {summary}; {} nodes noted",
        elapsed.as_secs_f64() * 1000.0,
        outcome.unconsolidatable.len()
    );
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn underutilized(bencher: divan::Bencher) {
    let world = world(30);
    report("underutilized", &world, DisruptionOptions::default());
    bencher.bench(|| pass(&world, DisruptionOptions::default()));
}

#[divan::bench(sample_count = 2, sample_size = 1)]
fn packed(bencher: divan::Bencher) {
    let world = world(95);
    report("packed", &world, DisruptionOptions::default());
    bencher.bench(|| pass(&world, DisruptionOptions::default()));
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn packed_limited(bencher: divan::Bencher) {
    let world = world(95);
    let options = DisruptionOptions {
        single_node_candidate_limit: Some(50),
        ..DisruptionOptions::default()
    };
    report("packed_limited", &world, options);
    bencher.bench(|| pass(&world, options));
}
