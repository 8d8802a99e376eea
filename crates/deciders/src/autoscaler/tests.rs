//! Conformance tests of the scale-up side: estimator, expanders, backoff,
//! ASG launch choice, templates and whole loops.

use karpsim_catalog::BundledCatalog;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::estimator::{estimate, order_decreasing};
use super::expander::{ScaleUpOption, choose};
use super::groups::{asg_launch, desired_on_demand, node_for_launch, template_for};
use super::scale_up::balance;
use super::*;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::{CapacityType, Catalog};
use crate::cluster::{OwnerKind, OwnerRef, Pod};
use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE};
use crate::kube::resources::{GIB, MIB, ResourceKind, Resources};
use crate::scheduler::testing::{PodBuilder, node};
use crate::time::SimDuration;

pub(super) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap())
}

pub(super) fn group(name: &str, types: &[&str], min: u32, max: u32) -> NodeGroupSpec {
    NodeGroupSpec {
        name: name.to_string(),
        instance_types: types.iter().map(|t| t.to_string()).collect(),
        capacity: CapacitySplit::OnDemand,
        spot_allocation_strategy: SpotAllocationStrategy::default(),
        on_demand_allocation_strategy: Default::default(),
        zones: vec!["us-east-1a".into(), "us-east-1b".into()],
        min_size: min,
        max_size: max,
        labels: BTreeMap::new(),
        taints: Vec::new(),
        autoscaling_options: Default::default(),
    }
}

pub(super) fn owned(mut pod: Pod, owner: &str) -> Pod {
    pod.owner = Some(OwnerRef {
        kind: OwnerKind::Deployment,
        name: owner.to_string(),
    });
    pod.unschedulable = true;
    pod
}

fn estimatee(cpu: i64, mem_bytes: i64) -> PodBuilder {
    PodBuilder::new("estimatee")
        .namespace("universe")
        .label("app", "estimatee")
        .requests(cpu, mem_bytes)
}

fn template_node(cpu: i64, mem_mib: i64, pods: i64) -> NodeTemplate {
    NodeTemplate {
        node: node("template")
            .cpu_mem(cpu, mem_mib * MIB)
            .resource(ResourceKind::Pods, pods)
            .zone("zone-mars")
            .build(),
        daemon_pods: Vec::new(),
        instance_type: "test".into(),
        from_real_node: false,
    }
}

/// Runs the estimator the way upstream's `TestBinpackingEstimate` does:
/// an old node (100m, 100Mi, 10 pods) in zone-jupiter, a template with 10
/// pods in zone-mars, `groups` of identical pods, limit 0 = unlimited.
fn run_estimate(template: (i64, i64), groups: &[(PodBuilder, usize)], max: u32) -> (u32, Vec<i64>) {
    let mut cluster = Cluster::new();
    cluster.add_node(
        node("oldnode")
            .cpu_mem(100, 100 * MIB)
            .resource(ResourceKind::Pods, 10)
            .zone("zone-jupiter")
            .build(),
    );
    let mut ids = Vec::new();
    for (builder, count) in groups {
        ids.push(
            (0..*count)
                .map(|_| cluster.add_pod(builder.clone().build()))
                .collect::<Vec<_>>(),
        );
    }
    let template = template_node(template.0, template.1, 10);
    let mut snapshot = snapshot::Snapshot::new(&cluster);
    order_decreasing(&snapshot, &template, &mut ids);
    let limit = if max == 0 { u32::MAX } else { max };
    let est = estimate(&mut snapshot, &template, &ids, limit);
    let cpus = est
        .pods
        .iter()
        .map(|&p| cluster.pod(p).unwrap().spec.requests.cpu_millis())
        .collect();
    (est.node_count, cpus)
}

/// estimator/binpacking_estimator_test.go `TestBinpackingEstimate`, the
/// resource, pod-count, host-port, limiter and ordering cases.
#[test]
fn binpacking_estimator_upstream_cases() {
    // "simple resource-based binpacking": 2 × 350m per 1000m node.
    let (n, pods) = run_estimate((350 * 3 - 50, 2000), &[(estimatee(350, 1000), 10)], 0);
    assert_eq!((n, pods.len()), (5, 10));
    // "pods-per-node bound binpacking": 10 pods per node.
    let (n, pods) = run_estimate((10000, 20000), &[(estimatee(10, 100), 20)], 0);
    assert_eq!((n, pods.len()), (2, 20));
    // "hostport conflict forces pod-per-node".
    let (n, pods) = run_estimate(
        (1000, 5000),
        &[(estimatee(200, 1000).host_port(5555), 8)],
        0,
    );
    assert_eq!((n, pods.len()), (8, 8));
    // "limiter cuts binpacking": 5 nodes × 2 pods.
    let (n, pods) = run_estimate((1000, 5000), &[(estimatee(500, 1000), 20)], 5);
    assert_eq!((n, pods.len()), (5, 10));
    // "decreasing ordered pods are processed first": the 500m group fills
    // the 5 allowed nodes; none of the 50m pods is placed.
    let (n, pods) = run_estimate(
        (1000, 5000),
        &[(estimatee(50, 1000), 10), (estimatee(500, 1000), 10)],
        5,
    );
    assert_eq!((n, pods.len()), (5, 10));
    assert!(pods.iter().all(|&c| c == 500));
}

fn spread(builder: PodBuilder, key: &str, skew: i32, min_domains: i32) -> PodBuilder {
    builder
        .spread(key, skew, &[("app", "estimatee")])
        .with_spec(|s| s.topology_spread[0].min_domains = Some(min_domains))
}

/// estimator/binpacking_estimator_test.go `TestBinpackingEstimate`, the
/// topology spread cases (hostname maxSkew 2 → 2 pods/node; zonal maxSkew
/// 2 against an empty zone → 2 pods; hostname maxSkew 1 with minDomains 3
/// → 12 pods on 3 nodes, the old node among them via the spread fallback).
#[test]
fn binpacking_estimator_topology_spread_cases() {
    let (n, pods) = run_estimate(
        (1000, 5000),
        &[(spread(estimatee(200, 200), LABEL_HOSTNAME, 2, 1), 8)],
        0,
    );
    assert_eq!((n, pods.len()), (4, 8));
    let (n, pods) = run_estimate(
        (1000, 5000),
        &[(spread(estimatee(20, 100), LABEL_TOPOLOGY_ZONE, 2, 1), 8)],
        0,
    );
    assert_eq!((n, pods.len()), (1, 2));
    let (n, pods) = run_estimate(
        (1000, 5000),
        &[(spread(estimatee(20, 100), LABEL_HOSTNAME, 1, 3), 12)],
        0,
    );
    assert_eq!((n, pods.len()), (3, 12));
}

fn option(group: &str, nodes: u32, pods: usize, cap: (i64, i64), req: (i64, i64)) -> ScaleUpOption {
    ScaleUpOption {
        group: group.to_string(),
        node_count: nodes,
        pods: (0..pods as u32).map(PodId).collect(),
        pod_requests: Resources::cpu_mem(req.0, req.1),
        template_capacity: Resources::cpu_mem(cap.0, cap.1),
    }
}

fn tiers(p: &[(i32, &[&str])]) -> config::PriorityTiers {
    let map = p
        .iter()
        .map(|(k, v)| (*k, v.iter().map(|s| s.to_string()).collect()))
        .collect();
    config::PriorityTiers::compile(&map).unwrap()
}

/// expander/waste/waste_test.go `TestLeastWaste`-style: the option whose
/// template capacity is used most (CPU + memory share) wins; most-pods and
/// least-nodes keep the maxima/minima (mostpods_test.go, leastnodes_test.go).
#[test]
fn single_expanders_pick_upstream_winners() {
    let none = tiers(&[]);
    // 1 CPU / 1 GiB of pods: a 2 CPU/2 GiB node wastes 1.0, a 4/4 one 1.5.
    let small = option("small", 1, 1, (2000, 2 * GIB), (1000, GIB));
    let big = option("big", 1, 1, (4000, 4 * GIB), (1000, GIB));
    let opts = vec![big.clone(), small.clone()];
    assert_eq!(
        choose(&[ExpanderKind::LeastWaste], &none, &opts, 0),
        Some(1)
    );
    let opts = vec![
        option("a", 2, 3, (1, 1), (1, 1)),
        option("b", 3, 5, (1, 1), (1, 1)),
    ];
    assert_eq!(choose(&[ExpanderKind::MostPods], &none, &opts, 0), Some(1));
    assert_eq!(
        choose(&[ExpanderKind::LeastNodes], &none, &opts, 0),
        Some(0)
    );
    // random: the supplied pick, modulo the options.
    assert_eq!(choose(&[ExpanderKind::Random], &none, &opts, 7), Some(1));
    assert_eq!(choose(&[ExpanderKind::Random], &none, &opts, 4), Some(0));
}

/// expander/priority/priority_test.go: the highest matching tier wins,
/// unanchored regexes, unmatched groups are dropped, and with no match at
/// all every option passes; expander/factory/chain_test.go: a chain stops
/// at one survivor and ties go to random.
#[test]
fn priority_expander_and_chains() {
    let t = tiers(&[(10, &[".*spot.*"]), (1, &[".*"])]);
    let opts = vec![
        option("general-od", 1, 1, (4000, 4 * GIB), (1000, GIB)),
        option("general-spot", 1, 1, (4000, 4 * GIB), (1000, GIB)),
        option("big-spot", 1, 1, (8000, 8 * GIB), (1000, GIB)),
    ];
    // priority alone: two spot groups tie → random pick among them.
    assert_eq!(choose(&[ExpanderKind::Priority], &t, &opts, 0), Some(1));
    assert_eq!(choose(&[ExpanderKind::Priority], &t, &opts, 1), Some(2));
    // priority,least-waste: general-spot wastes 2 × 3/4, big-spot 2 × 7/8.
    let chain = [ExpanderKind::Priority, ExpanderKind::LeastWaste];
    assert_eq!(choose(&chain, &t, &opts, 1), Some(1));
    // Nothing matches → all pass; unmatched groups are otherwise dropped.
    let only_gpu = tiers(&[(5, &["gpu"])]);
    assert_eq!(
        choose(
            &[ExpanderKind::Priority, ExpanderKind::LeastNodes],
            &only_gpu,
            &opts,
            0
        ),
        Some(0)
    );
    let od_only = tiers(&[(5, &["-od$"])]);
    assert_eq!(
        choose(&[ExpanderKind::Priority], &od_only, &opts, 9),
        Some(0)
    );
}

/// FAQ "What are Expanders?" (price: GCE/GKE/Equinix only) and
/// aws_cloud_provider.go `Pricing` returning ErrNotImplemented: `price`
/// is refused; `random` must end a chain.
#[test]
fn price_expander_is_a_clear_error_on_aws() {
    let cfg = CaConfig {
        expander: vec![ExpanderKind::Price],
        ..CaConfig::default()
    };
    let err = cfg.validate(catalog()).unwrap_err();
    assert_eq!(err, CaConfigError::PriceExpanderOnAws);
    assert!(err.to_string().contains("priority"));
    let cfg = CaConfig {
        expander: vec![ExpanderKind::Random, ExpanderKind::LeastWaste],
        ..CaConfig::default()
    };
    assert!(matches!(
        cfg.validate(catalog()),
        Err(CaConfigError::RandomNotLast { .. })
    ));
    assert_eq!(
        ExpanderKind::parse("least-waste"),
        Some(ExpanderKind::LeastWaste)
    );
    assert_eq!(CaConfig::default().expander, vec![ExpanderKind::LeastWaste]);
}

/// utils/backoff/exponential_backoff_test.go: 5 m, doubled after expiry
/// (10, 20, capped at 30), unchanged while still backed off, forgotten
/// after 3 h without failures.
#[test]
fn backoff_grows_caps_and_resets() {
    let cfg = CaConfig::default();
    let t0 = SimTime::from_secs(1000);
    let f = ScaleUpFailure::OutOfResources;
    let s = CaState::default().with_failed_scale_up("g", f, t0, &cfg);
    assert_eq!(s.backoff["g"].duration, SimDuration::from_mins(5));
    assert!(s.is_backed_off("g", t0 + SimDuration::from_mins(5)));
    assert!(!s.is_backed_off(
        "g",
        t0 + SimDuration::from_mins(5) + SimDuration::from_millis(1)
    ));
    // While backed off: same duration.
    let s2 = s.with_failed_scale_up("g", f, t0 + SimDuration::from_mins(1), &cfg);
    assert_eq!(s2.backoff["g"].duration, SimDuration::from_mins(5));
    let mut s = s;
    let mut t = t0;
    for expected in [10, 20, 30, 30] {
        t = s.backoff["g"].until + SimDuration::from_secs(1);
        s = s.with_failed_scale_up("g", f, t, &cfg);
        assert_eq!(s.backoff["g"].duration, SimDuration::from_mins(expected));
    }
    let later = s.without_stale_backoff(
        t + SimDuration::from_hours(3) + SimDuration::from_secs(1),
        &cfg,
    );
    assert!(later.backoff.is_empty());
    assert_eq!(s.with_scale_up_completed("g").backoff.len(), 0);
}

/// AWS docs "Instances distribution": on-demand share above base rounds
/// up in favour of on-demand; the ASG balances zones and takes the
/// cheapest spot pool (karpsim's documented approximation).
#[test]
fn asg_launch_distribution_and_zone_balance() {
    let split = CapacitySplit::Mixed {
        on_demand_base_capacity: 1,
        on_demand_percentage_above_base: 25,
    };
    assert_eq!(desired_on_demand(split, 1), 1);
    assert_eq!(desired_on_demand(split, 2), 2); // ceil(1 × 25%) = 1
    assert_eq!(desired_on_demand(split, 5), 2);
    assert_eq!(desired_on_demand(split, 6), 3);
    let mut spec = group("mixed", &["m5.xlarge", "m5a.xlarge", "m6i.xlarge"], 0, 10);
    spec.capacity = split;
    let launches: Vec<LaunchChoice> = asg_launch(&spec, catalog(), &[], 4)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let types: Vec<CapacityType> = launches.iter().map(|l| l.capacity_type).collect();
    assert_eq!(
        types,
        [
            CapacityType::OnDemand,
            CapacityType::OnDemand,
            CapacityType::Spot,
            CapacityType::Spot
        ]
    );
    assert_eq!(
        launches[0].instance_type, "m5.xlarge",
        "on-demand: override order"
    );
    let zones: Vec<&str> = launches.iter().map(|l| l.zone.as_str()).collect();
    assert_eq!(
        zones,
        ["us-east-1a", "us-east-1b", "us-east-1a", "us-east-1b"]
    );
    let cheapest_spot = spec
        .instance_types
        .iter()
        .filter_map(|t| {
            let it = catalog().get(t)?;
            it.offerings
                .iter()
                .find(|o| o.zone == "us-east-1a" && o.capacity_type == CapacityType::Spot)
                .map(|o| o.price)
        })
        .min()
        .unwrap();
    assert_eq!(launches[2].price, cheapest_spot);
    // Every offering gone: the launch fails.
    let mut cat = catalog().clone();
    for z in &spec.zones {
        cat.mark_unavailable("m5.xlarge", z, CapacityType::OnDemand);
    }
    let mut od = group("od", &["m5.xlarge"], 0, 10);
    od.capacity = CapacitySplit::OnDemand;
    assert!(matches!(
        asg_launch(&od, &cat, &[], 1)[0],
        Err(LaunchFailure::InsufficientCapacity { .. })
    ));
}

/// aws_manager.go `buildNodeFromTemplate`: pods=110, cpu=vCPU,
/// memory=MiB·2^20, allocatable = capacity, first zone, group labels and
/// taints; a real m5.xlarge has less allocatable (kubelet reservations).
#[test]
fn cloud_template_has_allocatable_equal_to_capacity() {
    let mut spec = group("g", &["m5.xlarge"], 0, 10);
    spec.labels.insert("team".into(), "web".into());
    let t = template_for(&spec, None, &Cluster::new(), catalog(), SimTime::ZERO).unwrap();
    assert!(!t.from_real_node);
    assert_eq!(t.node.allocatable, t.node.capacity);
    assert_eq!(t.node.capacity.cpu_millis(), 4000);
    assert_eq!(t.node.capacity.memory_bytes(), 16384 * MIB);
    assert_eq!(t.node.capacity.pods(), 110);
    assert_eq!(t.node.labels.get(LABEL_TOPOLOGY_ZONE), Some("us-east-1a"));
    assert_eq!(t.node.labels.get("team"), Some("web"));
    let real = catalog().get("m5.xlarge").unwrap();
    assert!(real.allocatable.cpu_millis() < 4000 && real.allocatable.pods() < 110);
}

pub(super) struct World {
    pub cluster: Cluster,
    pub config: ValidCaConfig,
    pub groups: Vec<NodeGroupState>,
    pub pdbs: PdbLimits,
    pub state: CaState,
    pub launched: u32,
    pub requests: Vec<super::provisioning::RequestState>,
}

impl World {
    pub fn new(config: CaConfig) -> World {
        let groups = config
            .node_groups
            .iter()
            .map(|g| NodeGroupState {
                name: g.name.clone(),
                target_size: 0,
                members: Vec::new(),
            })
            .collect();
        World {
            cluster: Cluster::new(),
            config: config.validate(catalog()).unwrap(),
            groups,
            pdbs: PdbLimits::default(),
            state: CaState::default(),
            launched: 0,
            requests: Vec::new(),
        }
    }

    /// Adds a registered, Ready node of `group` as the ASG would launch it.
    pub fn launch(&mut self, group: &str, registered: bool, now: SimTime) -> NodeId {
        let spec = self.config.group(group).unwrap().clone();
        let gi = self.groups.iter().position(|g| g.name == group).unwrap();
        let choice = asg_launch(&spec, catalog(), &self.groups[gi].members, 1)
            .remove(0)
            .unwrap();
        self.launched += 1;
        let mut n = node_for_launch(
            &spec,
            catalog(),
            &choice,
            &format!("n{}", self.launched),
            now,
        )
        .unwrap();
        n.registered = registered;
        n.initialized = registered;
        let id = self.cluster.add_node(n);
        let g = &mut self.groups[gi];
        g.target_size = g.target_size.max(g.members.len() as u32 + 1);
        g.members.push(GroupMember {
            node: id,
            instance_type: choice.instance_type,
            zone: choice.zone,
            capacity_type: choice.capacity_type,
            ready_since: registered.then_some(now),
            scale_down_disabled: false,
            not_ready_since: None,
        });
        id
    }

    pub fn run(&mut self, now: SimTime, random_choice: u64) -> Actions {
        let actions = run_once(&CaInput {
            cluster: &self.cluster,
            config: &self.config,
            catalog: catalog(),
            groups: &self.groups,
            pdbs: &self.pdbs,
            state: &self.state,
            now,
            random_choice,
            provisioning_requests: &self.requests,
        });
        self.state = next_state(&self.state, &actions, now, self.config.config());
        for u in &actions.provisioning_request_updates {
            self.requests[u.request].status.set(
                u.kind,
                super::provisioning::Condition {
                    status: u.status,
                    reason: u.reason,
                    since: now,
                },
            );
        }
        for a in &actions.actions {
            match a {
                Action::ScaleUp { group, delta } => {
                    let g = self.groups.iter_mut().find(|g| &g.name == group).unwrap();
                    g.target_size += delta;
                }
                Action::DecreaseTargetSize { group, delta } => {
                    let g = self.groups.iter_mut().find(|g| &g.name == group).unwrap();
                    g.target_size -= delta;
                }
                Action::DeleteUnregistered { node } => {
                    for g in &mut self.groups {
                        if g.member(*node).is_some() {
                            g.target_size -= 1;
                            g.members.retain(|m| m.node != *node);
                        }
                    }
                    self.cluster.remove_node(*node);
                }
                Action::RemoveNode { .. } => {}
            }
        }
        actions
    }

    pub fn pending(&mut self, name: &str, owner: &str, cpu: i64, mem: i64, at: SimTime) -> PodId {
        let mut p = owned(PodBuilder::new(name).requests(cpu, mem).build(), owner);
        p.created_at = at;
        self.cluster.add_pod(p)
    }
}

fn scale_ups(actions: &Actions) -> Vec<(String, u32)> {
    actions
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ScaleUp { group, delta } => Some((group.clone(), *delta)),
            _ => None,
        })
        .collect()
}

/// FAQ "How does scale-up work?": pending pods → one option per loop; the
/// requested nodes count as upcoming next loop, so the same pods do not
/// trigger a second scale-up (static_autoscaler_test.go upcoming nodes).
/// Pods younger than 2 s wait (`unschedulablePodTimeBuffer`).
#[test]
fn scale_up_from_zero_then_upcoming_nodes_absorb_pods() {
    let cfg = CaConfig {
        node_groups: vec![group("general", &["m5.xlarge"], 0, 10)],
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let t = SimTime::from_secs(100);
    for i in 0..6 {
        w.pending(&format!("web-{i}"), "web", 1000, GIB, t);
    }
    let young = w.run(t + SimDuration::from_secs(1), 0);
    assert!(scale_ups(&young).is_empty(), "pods younger than 2 s wait");
    let first = w.run(t + SimDuration::from_secs(10), 0);
    // 4000m template, 1000m pods: 4 per node → 2 nodes.
    assert_eq!(scale_ups(&first), vec![("general".to_string(), 2)]);
    assert_eq!(first.pods_triggering_scale_up.len(), 6);
    let second = w.run(t + SimDuration::from_secs(20), 0);
    assert!(scale_ups(&second).is_empty());
    assert_eq!(
        second.pods_fit_existing.len(),
        6,
        "upcoming template nodes take them"
    );
    assert!(w.state.scale_up_requests.contains_key("general"));
}

/// [`ClusterAutoscaler`] is `run_once` then `next_state`, with its loop
/// count as the random expander's pick and launch failures folded in as
/// [`CaState::with_failed_scale_up`] does: over loops that wait, scale up,
/// see upcoming nodes and fail a launch, its actions and what it remembers
/// are the pure functions'.
#[test]
fn the_controller_object_decides_as_the_pure_loop() {
    let cfg = CaConfig {
        node_groups: vec![group("general", &["m5.xlarge"], 0, 10)],
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let mut ca = ClusterAutoscaler::new(w.config.clone());
    let t = SimTime::from_secs(100);
    for i in 0..6 {
        w.pending(&format!("web-{i}"), "web", 1000, GIB, t);
    }
    for (index, secs) in [1, 10, 20, 40].into_iter().enumerate() {
        let now = t + SimDuration::from_secs(secs);
        let view = CaView {
            cluster: &w.cluster,
            catalog: catalog(),
            groups: &w.groups,
            pdbs: &w.pdbs,
            now,
            provisioning_requests: &[],
        };
        let from_object = ca.run_once(&view);
        let pure = w.run(now, index as u64 + 1);
        assert_eq!(from_object, pure, "loop {index}");
        if index == 2 {
            ca.scale_up_failed("general", now);
            w.state = w.state.with_failed_scale_up(
                "general",
                ScaleUpFailure::OutOfResources,
                now,
                w.config.config(),
            );
        }
        assert_eq!(ca.state(), &w.state, "loop {index}");
    }
    assert!(
        ca.state()
            .is_backed_off("general", t + SimDuration::from_secs(40))
    );
}

/// CA README "Common Notes and Gotchas" + FAQ on priority expander with
/// backoff: a spot group that times out (maxNodeProvisionTime) has its
/// target decreased and is backed off; the next loop falls back to the
/// on-demand group.
#[test]
fn provision_timeout_backs_off_and_priority_falls_back() {
    let mut spot = group("general-spot", &["m5.xlarge"], 0, 10);
    spot.capacity = CapacitySplit::Spot;
    let cfg = CaConfig {
        node_groups: vec![spot, group("general-od", &["m5.xlarge"], 0, 10)],
        expander: vec![ExpanderKind::Priority],
        priorities: [
            (10, vec![".*spot.*".to_string()]),
            (1, vec![".*".to_string()]),
        ]
        .into(),
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let t = SimTime::from_secs(100);
    w.pending("web-0", "web", 1000, GIB, t);
    let a = w.run(t + SimDuration::from_secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("general-spot".to_string(), 1)]);
    // 15 min later nothing registered: timeout.
    let late =
        t + SimDuration::from_secs(10) + SimDuration::from_mins(15) + SimDuration::from_secs(1);
    let b = w.run(late, 0);
    assert!(b.actions.contains(&Action::DecreaseTargetSize {
        group: "general-spot".into(),
        delta: 1
    }));
    assert_eq!(scale_ups(&b), vec![("general-od".to_string(), 1)]);
    assert!(w.state.is_backed_off("general-spot", late));
    assert_eq!(
        w.state.backoff["general-spot"].reason,
        ScaleUpFailure::Timeout
    );
}

/// balancing_processor_test.go `TestBalanceHittingMaxSize`-style and
/// FAQ "balance-similar-node-groups": similar groups (same shape, zone
/// labels ignored) share the scale-up, smallest first.
#[test]
fn balancing_similar_groups_water_fills() {
    let mut rows = vec![
        ("a".to_string(), 1, 10),
        ("b".to_string(), 3, 10),
        ("c".to_string(), 0, 1),
    ];
    // c gets its one node of room, a catches up with b, then they alternate.
    assert_eq!(
        balance(&mut rows, 6),
        vec![
            ("a".to_string(), 4),
            ("b".to_string(), 1),
            ("c".to_string(), 1)
        ]
    );
    let zone = |name: &str, z: &str| {
        let mut g = group(name, &["m5.xlarge"], 0, 10);
        g.zones = vec![z.to_string()];
        g
    };
    let cfg = CaConfig {
        node_groups: vec![
            zone("g-a", "us-east-1a"),
            zone("g-b", "us-east-1b"),
            zone("g-c", "us-east-1c"),
        ],
        balance_similar_node_groups: true,
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let t = SimTime::from_secs(100);
    for i in 0..12 {
        w.pending(&format!("web-{i}"), "web", 1000, GIB, t);
    }
    let a = w.run(t + SimDuration::from_secs(10), 0);
    let ups = scale_ups(&a);
    assert_eq!(ups.len(), 3, "{ups:?}");
    assert!(
        ups.iter().all(|(_, d)| *d == 1),
        "3 nodes over 3 groups: {ups:?}"
    );
}

/// CA AWS README: instance types of one ASG must match ("fundamental to
/// CA's scaling calculations"). A spot group whose first (template) type
/// is m5.2xlarge but whose cheapest spot pool is m5.large: CA plans 2 big
/// nodes for 10 × 1 CPU pods, the ASG launches 2 × m5.large, which take 1
/// pod each — 8 pods stay pending and need further loops (each again
/// planned with the big template), so capacity trickles in.
#[test]
fn mixed_group_template_larger_than_launched_type_underestimates() {
    let mut spec = group("mixed-spot", &["m5.2xlarge", "m5.large"], 0, 50);
    spec.capacity = CapacitySplit::Spot;
    spec.spot_allocation_strategy = SpotAllocationStrategy::PriceCapacityOptimized;
    let cfg = CaConfig {
        node_groups: vec![spec.clone()],
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let t = SimTime::from_secs(100);
    let pods: Vec<PodId> = (0..10)
        .map(|i| w.pending(&format!("job-{i}"), "job", 1000, GIB, t))
        .collect();
    let a = w.run(t + SimDuration::from_secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("mixed-spot".to_string(), 2)]);
    // The ASG's own choice for those 2 instances.
    let launched: Vec<String> = asg_launch(&spec, catalog(), &[], 2)
        .into_iter()
        .map(|l| l.unwrap().instance_type)
        .collect();
    assert_eq!(launched, ["m5.large", "m5.large"]);
    // Register them and let kube-scheduler place what fits.
    w.groups[0].target_size = 0;
    let now = t + SimDuration::from_mins(3);
    let nodes: Vec<NodeId> = (0..2).map(|_| w.launch("mixed-spot", true, now)).collect();
    let mut placed = 0;
    for &p in &pods {
        for &n in &nodes {
            let fits = {
                let node = w.cluster.node(n).unwrap();
                crate::scheduler::filter::fits_node(
                    &w.cluster,
                    &w.cluster.pod(p).unwrap().spec,
                    node,
                )
                .is_ok()
            };
            if fits {
                w.cluster.bind(p, n);
                placed += 1;
                break;
            }
        }
    }
    assert_eq!(
        placed, 2,
        "an m5.large (≈1.9 CPU allocatable) takes one 1-CPU pod"
    );
    // Next loop: the template is now a real m5.large (Ready ≥ 1 min), so CA
    // finally plans with the launched shape: 8 more nodes.
    let b = w.run(now + SimDuration::from_mins(2), 0);
    assert_eq!(scale_ups(&b), vec![("mixed-spot".to_string(), 8)]);
}

/// FAQ / users.md: with allocatable = capacity, a pod that needs almost a
/// whole m5.xlarge fits the cloud template but no real m5.xlarge: CA
/// scales up, then the pod stays pending on the new node.
#[test]
fn allocatable_equals_capacity_bias_from_zero() {
    let cfg = CaConfig {
        node_groups: vec![group("general", &["m5.xlarge"], 0, 10)],
        ..CaConfig::default()
    };
    let mut w = World::new(cfg);
    let t = SimTime::from_secs(100);
    let p = w.pending("big", "big", 3990, 15 * GIB, t);
    let a = w.run(t + SimDuration::from_secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("general".to_string(), 1)]);
    let n = w.launch("general", true, t + SimDuration::from_mins(1));
    let node = w.cluster.node(n).unwrap();
    let spec = Arc::clone(&w.cluster.pod(p).unwrap().spec);
    assert!(crate::scheduler::filter::fits_node(&w.cluster, &spec, node).is_err());
}

/// core/scaleup/orchestrator `TestScaleUpToMeetNodeGroupMinSize` with
/// `--enforce-node-group-min-size`: ng1 (one node, min size 3) grows by 2,
/// ng2 (one node, min size 1) does not; without the flag nothing happens
/// (CA's default).
#[test]
fn scale_up_to_meet_node_group_min_size() {
    let config = |enforce| CaConfig {
        node_groups: vec![
            group("ng1", &["m5.xlarge"], 3, 10),
            group("ng2", &["m5.xlarge"], 1, 10),
        ],
        enforce_node_group_min_size: enforce,
        ..CaConfig::default()
    };
    let now = SimTime::from_secs(600);
    let mut w = World::new(config(true));
    w.launch("ng1", true, SimTime::ZERO);
    w.launch("ng2", true, SimTime::ZERO);
    assert_eq!(scale_ups(&w.run(now, 0)), vec![("ng1".to_string(), 2)]);
    // The request is open: the next loop sees the target size at 3.
    assert_eq!(w.groups[0].target_size, 3);
    assert_eq!(
        scale_ups(&w.run(now + SimDuration::from_secs(10), 0)),
        vec![]
    );
    let mut off = World::new(config(false));
    off.launch("ng1", true, SimTime::ZERO);
    off.launch("ng2", true, SimTime::ZERO);
    assert_eq!(scale_ups(&off.run(now, 0)), vec![]);
}

/// `ScaleUpToNodeGroupMinSize` caps the increase with `maxNodesTotal`
/// measured against the group's own target size (`GetCappedNewNodeCount
/// (newNodeCount, targetSize)`), and skips a group in backoff
/// (`IsNodeGroupReadyToScaleUp`).
#[test]
fn min_size_scale_up_is_capped_and_waits_out_backoff() {
    let now = SimTime::from_secs(600);
    let mut w = World::new(CaConfig {
        node_groups: vec![group("ng1", &["m5.xlarge"], 3, 10)],
        enforce_node_group_min_size: true,
        max_nodes_total: 2,
        ..CaConfig::default()
    });
    w.launch("ng1", true, SimTime::ZERO);
    assert_eq!(scale_ups(&w.run(now, 0)), vec![("ng1".to_string(), 1)]);
    let mut backed_off = World::new(CaConfig {
        node_groups: vec![group("ng1", &["m5.xlarge"], 3, 10)],
        enforce_node_group_min_size: true,
        ..CaConfig::default()
    });
    backed_off.state = backed_off.state.with_failed_scale_up(
        "ng1",
        ScaleUpFailure::OutOfResources,
        now,
        backed_off.config.config(),
    );
    assert_eq!(
        scale_ups(&backed_off.run(now + SimDuration::from_secs(10), 0)),
        vec![]
    );
    let later = now + SimDuration::from_mins(6);
    assert_eq!(
        scale_ups(&backed_off.run(later, 0)),
        vec![("ng1".to_string(), 3)]
    );
}

/// core/utils `TestIsExpendablePod` / `FilterOutExpendablePods`: a pod
/// whose priority is below `--expendable-pods-priority-cutoff` (−10) is
/// expendable and triggers no scale-up; one at the cutoff does.
#[test]
fn expendable_pods_trigger_no_scale_up() {
    let with_priority = |priority: i32| {
        let mut w = World::new(CaConfig {
            node_groups: vec![group("general", &["m5.xlarge"], 0, 10)],
            ..CaConfig::default()
        });
        let t = SimTime::from_secs(100);
        let id = w.pending("batch-0", "batch", 1000, GIB, t);
        let pod = w.cluster.pod_mut(id).unwrap();
        let mut spec = (*pod.spec).clone();
        spec.priority = priority;
        pod.spec = std::sync::Arc::new(spec);
        scale_ups(&w.run(t + SimDuration::from_secs(10), 0))
    };
    assert_eq!(with_priority(-11), vec![]);
    assert_eq!(with_priority(-10), vec![("general".to_string(), 1)]);
}

/// The AWS provider's mixed instances policy
/// (`OnDemandAllocationStrategy`): `prioritized` takes the overrides in
/// written order, `lowest-price` the cheapest on-demand override in the
/// zone (the catalog's prices decide which).
#[test]
fn on_demand_allocation_strategy_prioritized_or_lowest_price() {
    let types = ["m6i.xlarge", "m5.xlarge", "m5a.xlarge"];
    let mut spec = group("od", &types, 0, 10);
    let first = asg_launch(&spec, catalog(), &[], 1).remove(0).unwrap();
    assert_eq!(first.instance_type, "m6i.xlarge");
    spec.on_demand_allocation_strategy = OnDemandAllocationStrategy::LowestPrice;
    let cheap = asg_launch(&spec, catalog(), &[], 1).remove(0).unwrap();
    let cheapest = types
        .iter()
        .map(|t| {
            let o = catalog()
                .get(t)
                .unwrap()
                .offerings
                .iter()
                .find(|o| o.zone == cheap.zone && o.capacity_type == CapacityType::OnDemand)
                .unwrap()
                .price;
            (o, *t)
        })
        .min()
        .unwrap();
    assert_eq!(cheap.instance_type, cheapest.1);
    assert_eq!(cheap.price, cheapest.0);
    assert_ne!(
        cheap.instance_type, "m6i.xlarge",
        "m6i is not the cheapest of the three"
    );
}
