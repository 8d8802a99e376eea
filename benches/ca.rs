//! Cluster Autoscaler benchmarks.
//!
//! - `cluster_autoscaler_run` / `karpenter_run`: the two variants of
//!   `scenarios/karpenter-vs-ca.yaml` through the engine, the CA one with
//!   its loop every 10 s (scale-up estimates, scale-down simulation over the
//!   node groups). The CA loop's share of such a run is the
//!   `cluster-autoscaler` row of `karpsim run --profile`.
//! - `ca_loop`: one CA loop ([`run_once`]) on a built cluster of 200 or
//!   1,000 registered nodes in three on-demand ASGs of real us-east-1 types:
//!   half the nodes in `general` (m5.xlarge, web pods), a quarter each in
//!   `compute` (c5.2xlarge) and `memory` (r5.xlarge), both labelled for
//!   batch pods; one DaemonSet pod per node. Web nodes are
//!   filled to five levels from nearly empty to 90 %, so three in five are
//!   below the 50 % utilization threshold and get a removal simulation
//!   (PDBs of `maxUnavailable: 20%` per web app, statuses from
//!   `PdbLimits::from_cluster`, which run out part-way through the
//!   candidates); batch nodes are 60–90 % used. 300 pending batch pods
//!   (2.5 CPU, selecting the batch nodes, where none fits) make both batch
//!   groups run the binpacking estimator and the expander pick one; 50
//!   pending web pods fit existing nodes (filter-out-schedulable). The
//!   `CaState` is the one a loop 15 minutes earlier left: the underutilized
//!   nodes have been unneeded for longer than `scaleDownUnneededTime`, so
//!   the removability checks run too (no deletion starts: CA deletes
//!   nothing in a loop that scaled up). Outside the timed part the bench
//!   checks that the loop scales up for every pending batch pod and finds
//!   both unneeded and unremovable underutilized nodes.

use karpsim_catalog::BundledCatalog;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use karpsim_deciders::autoscaler::groups::{asg_launch, node_for_launch};
use karpsim_deciders::autoscaler::{
    Action, Actions, CaConfig, CaInput, CaState, CapacitySplit, GroupMember, NodeGroupSpec,
    NodeGroupState, SpotAllocationStrategy, UnremovableReason, ValidCaConfig, run_once,
};
use karpsim_deciders::karpenter::disruption::{ControllerScales, PdbLimits};
use karpsim_deciders::scheduler::{Cluster, NodeId, OwnerKind, OwnerRef, Pod, PodPhase};
use karpsim_input::scenario::{BundledRegions, Scenario, prepare};
use karpsim_model::cloud::Catalog;
use karpsim_model::cloud::nodeclass::NodeClassSettings;
use karpsim_model::cluster::PodLifecycle;
use karpsim_model::kube::pod::PodSpec;
use karpsim_model::kube::resources::{MIB, ResourceKind, Resources};
use karpsim_model::kube::selector::LabelSelector;
use karpsim_model::kube::workload::{IntOrPercent, PodDisruptionBudget};
use karpsim_model::time::{SimDuration, SimTime};
use karpsim_sim::engine::{self, RunInput};

fn main() {
    divan::main();
}

fn variant(name: &str) -> RunInput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/karpenter-vs-ca.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).expect("karpenter-vs-ca loads");
    prepare(&scenario, Some(name))
        .expect("karpenter-vs-ca prepares")
        .runs
        .remove(0)
}

/// The whole CA variant run (every loop of the scenario's duration).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cluster_autoscaler_run(bencher: divan::Bencher) {
    let input = variant("cluster-autoscaler");
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}

/// The Karpenter variant of the same workload, for comparison.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn karpenter_run(bencher: divan::Bencher) {
    let input = variant("karpenter");
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}

/// Web apps (one ReplicaSet and one PDB each).
const WEB_APPS: usize = 20;
/// Batch apps running on the batch groups.
const BATCH_APPS: usize = 10;
/// Pending pods no existing node can take (2.5 CPU, batch nodes only).
const PENDING_BATCH: usize = 300;
/// Pending web pods that fit existing nodes.
const PENDING_WEB: usize = 50;
/// Web pods per `general` node by its index in the group, modulo 5:
/// 250m each on an m5.xlarge (≈3.9 CPU allocatable) ≈ 6 %, 25 %, 38 %,
/// 70 %, 89 % of its CPU.
const WEB_FILL: [usize; 5] = [1, 4, 6, 11, 14];

/// The loop's "now": two hours in, every node Ready since the start.
const NOW: SimTime = SimTime::from_secs(2 * 3600);

/// One CA loop's inputs, built once per bench.
struct CaWorld {
    catalog: Catalog,
    config: ValidCaConfig,
    cluster: Cluster,
    groups: Vec<NodeGroupState>,
    pdbs: PdbLimits,
    state: CaState,
}

impl CaWorld {
    fn input(&self, now: SimTime) -> CaInput<'_> {
        CaInput {
            cluster: &self.cluster,
            config: &self.config,
            catalog: &self.catalog,
            groups: &self.groups,
            pdbs: &self.pdbs,
            state: &self.state,
            now,
            random_choice: 0,
            provisioning_requests: &[],
        }
    }
}

fn group_spec(name: &str, instance_type: &str, tier: &str) -> NodeGroupSpec {
    NodeGroupSpec {
        name: name.to_string(),
        instance_types: vec![instance_type.to_string()],
        capacity: CapacitySplit::OnDemand,
        spot_allocation_strategy: SpotAllocationStrategy::default(),
        on_demand_allocation_strategy: Default::default(),
        zones: ["us-east-1a", "us-east-1b", "us-east-1c"]
            .map(String::from)
            .to_vec(),
        min_size: 3,
        max_size: 2000,
        labels: [("tier".to_string(), tier.to_string())].into(),
        taints: Vec::new(),
        autoscaling_options: Default::default(),
    }
}

/// A pod of `owner` in `namespace` with `cpu` millis and `mem_mib` MiB,
/// bound to `node` (Running since the start) or pending and marked
/// unschedulable by kube-scheduler.
fn pod(
    name: String,
    namespace: &str,
    owner: OwnerRef,
    (cpu, mem_mib): (i64, i64),
    node_selector: &[(&str, &str)],
    node: Option<NodeId>,
) -> Pod {
    let spec = PodSpec {
        namespace: namespace.to_string(),
        labels: [("app".to_string(), owner.name.clone())].into(),
        requests: Resources::cpu_mem(cpu, mem_mib * MIB).with(ResourceKind::Pods, 1),
        node_selector: node_selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..PodSpec::default()
    };
    let bound = node.is_some();
    Pod {
        name,
        uid: 0,
        spec: Arc::new(spec),
        owner: Some(owner),
        node,
        phase: if bound {
            PodPhase::Running
        } else {
            PodPhase::Pending
        },
        created_at: if bound {
            SimTime::ZERO
        } else {
            NOW - SimDuration::from_mins(1)
        },
        unschedulable: !bound,
        lifecycle: PodLifecycle {
            started_at: bound.then_some(SimTime::ZERO),
            deleting_since: None,
        },
    }
}

fn owner(kind: OwnerKind, name: &str) -> OwnerRef {
    OwnerRef {
        kind,
        name: name.to_string(),
    }
}

/// The cluster of `nodes` registered nodes described in the module doc.
fn ca_world(nodes: usize) -> CaWorld {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).expect("catalog");
    let specs = vec![
        group_spec("general", "m5.xlarge", "web"),
        group_spec("compute", "c5.2xlarge", "batch"),
        group_spec("memory", "r5.xlarge", "batch"),
    ];
    let config = CaConfig {
        node_groups: specs.clone(),
        ..CaConfig::default()
    }
    .validate(&catalog)
    .expect("valid CA config");
    let mut groups: Vec<NodeGroupState> = specs
        .iter()
        .map(|s| NodeGroupState {
            name: s.name.clone(),
            target_size: 0,
            members: Vec::new(),
        })
        .collect();
    let mut cluster = Cluster::new();
    let mut replicas: BTreeMap<String, u32> = BTreeMap::new();
    for i in 0..nodes {
        // Half the nodes are web nodes, a quarter each batch group.
        let gi = match i % 4 {
            0 | 1 => 0,
            2 => 1,
            _ => 2,
        };
        let index_in_group = if gi == 0 { i / 4 * 2 + i % 4 } else { i / 4 };
        let spec = &specs[gi];
        let group = &mut groups[gi];
        let choice = asg_launch(spec, &catalog, &group.members, 1)
            .remove(0)
            .expect("on-demand capacity");
        let name = format!("{}-{:05}", spec.name, group.members.len() + 1);
        let mut node = node_for_launch(spec, &catalog, &choice, &name, SimTime::ZERO)
            .expect("type in catalog");
        node.registered = true;
        node.initialized = true;
        let id = cluster.add_node(node);
        group.target_size += 1;
        group.members.push(GroupMember {
            node: id,
            instance_type: choice.instance_type,
            zone: choice.zone,
            capacity_type: choice.capacity_type,
            ready_since: Some(SimTime::ZERO),
            scale_down_disabled: false,
            not_ready_since: None,
        });
        cluster.add_pod(pod(
            format!("kube-proxy-{i}"),
            "kube-system",
            owner(OwnerKind::DaemonSet, "kube-proxy"),
            (100, 128),
            &[],
            Some(id),
        ));
        // (pods, app prefix, app count, requests) of this node.
        let (count, prefix, apps, requests) = match gi {
            0 => (WEB_FILL[index_in_group % 5], "web", WEB_APPS, (250, 768)),
            // c5.2xlarge: 6–7 × 1 CPU ≈ 77–90 % of its CPU.
            1 => (6 + index_in_group % 2, "batch", BATCH_APPS, (1000, 2048)),
            // r5.xlarge: 3–4 × 0.5 CPU / 6 GiB ≈ 60–80 % of its memory.
            _ => (3 + index_in_group % 2, "cache", BATCH_APPS, (500, 6144)),
        };
        for j in 0..count {
            let app = format!("{prefix}-{}", (i * 7 + j) % apps);
            *replicas.entry(app.clone()).or_default() += 1;
            cluster.add_pod(pod(
                format!("{app}-{i}-{j}"),
                "default",
                owner(OwnerKind::ReplicaSet, &app),
                requests,
                &[],
                Some(id),
            ));
        }
    }
    // Pending replicas of two Deployments: (name, count, requests, labels).
    let pending = [
        (
            "ingest",
            PENDING_BATCH,
            (2500, 4096),
            &[("tier", "batch")][..],
        ),
        ("web-new", PENDING_WEB, (250, 768), &[][..]),
    ];
    for (deployment, count, requests, labels) in pending {
        for k in 0..count {
            cluster.add_pod(pod(
                format!("{deployment}-{k}"),
                "default",
                owner(OwnerKind::Deployment, deployment),
                requests,
                labels,
                None,
            ));
        }
    }
    let mut scales = ControllerScales::default();
    for (app, count) in &replicas {
        scales.insert("default", OwnerKind::ReplicaSet, app, *count);
    }
    for a in 0..WEB_APPS {
        let app = format!("web-{a}");
        cluster.pdbs.push(PodDisruptionBudget {
            name: app.clone(),
            namespace: "default".to_string(),
            selector: Some(LabelSelector {
                match_labels: [("app".to_string(), app)].into(),
                match_expressions: Vec::new(),
            }),
            min_available: None,
            max_unavailable: Some(IntOrPercent::Percent(20)),
            unhealthy_pod_eviction_policy: Default::default(),
        });
    }
    let pdbs = PdbLimits::from_cluster(&cluster, &scales);
    let mut world = CaWorld {
        catalog,
        config,
        cluster,
        groups,
        pdbs,
        state: CaState::default(),
    };
    // The loop 15 minutes earlier found the underutilized nodes unneeded.
    let earlier = run_once(&world.input(NOW - SimDuration::from_mins(15)));
    world.state = CaState {
        unneeded_since: earlier.unneeded,
        ..CaState::default()
    };
    world
}

/// Checks that the loop did the work the bench means to time.
fn check_loop(nodes: usize, actions: &Actions) {
    let scale_ups: Vec<(&str, u32)> = actions
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ScaleUp { group, delta } => Some((group.as_str(), *delta)),
            _ => None,
        })
        .collect();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (_, reason) in &actions.unremovable {
        let name = match reason {
            UnremovableReason::BlockedByPod { rule, .. } => format!("{rule:?}"),
            other => format!("{other:?}"),
        };
        *reasons.entry(name).or_default() += 1;
    }
    let not_underutilized = reasons.get("NotUnderutilized").copied().unwrap_or(0);
    let underutilized_kept = actions.unremovable.len() - not_underutilized;
    println!(
        "ca_loop {nodes} nodes: scale-ups {scale_ups:?}, {} pods fit existing, {} unneeded, \
         unremovable {reasons:?}",
        actions.pods_fit_existing.len(),
        actions.unneeded.len(),
    );
    assert!(!scale_ups.is_empty(), "the loop scales up");
    assert_eq!(actions.pods_triggering_scale_up.len(), PENDING_BATCH);
    assert_eq!(actions.pods_fit_existing.len(), PENDING_WEB);
    assert!(
        !actions.unneeded.is_empty() && underutilized_kept > 0,
        "scale-down found unneeded and unremovable underutilized nodes"
    );
}

/// One CA loop ([`run_once`]) over `nodes` registered nodes, 350 pending
/// pods and PDBs.
#[divan::bench(args = [200, 1000], sample_count = 30, sample_size = 1)]
fn ca_loop(bencher: divan::Bencher, nodes: usize) {
    let world = ca_world(nodes);
    check_loop(nodes, &run_once(&world.input(NOW)));
    bencher.bench(|| run_once(&world.input(NOW)));
}
