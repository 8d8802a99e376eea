use karpsim_catalog::BundledCatalog;
use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::engine::{self, RunInput, Step, StepAction};
use crate::latency::LaunchLatency;
use crate::scheduler::kube_scheduler::SchedulerConfig;
use crate::time::{SimDuration, SimTime};
use karpsim_input::nodepools::load_str;

const GIB: i64 = 1 << 30;

fn t(cpu_millis: i64, memory_bytes: i64, price_micros: i64) -> CoverType {
    CoverType {
        cpu_millis,
        memory_bytes,
        price: Price::from_micros(price_micros),
    }
}

/// The LP optimum by brute force over every single type and every pair of
/// types (the definition: an optimal basic solution uses at most two).
fn brute_force(types: &[CoverType], cpu: i64, memory: i64) -> Option<f64> {
    let (c, m) = (cpu as f64, memory as f64);
    let mut best: Option<f64> = None;
    let mut consider = |cost: Option<f64>| {
        if let Some(cost) = cost
            && best.is_none_or(|b| cost < b)
        {
            best = Some(cost);
        }
    };
    for (i, a) in types.iter().enumerate() {
        consider(single_cost(a, c, m));
        for b in &types[i + 1..] {
            consider(pair_cost(a, b, c, m));
        }
    }
    best
}

/// Cost of the mix `amounts`, if it covers the demand.
fn mix_cost(types: &[CoverType], amounts: &[f64], cpu: i64, memory: i64) -> Option<f64> {
    let cpu_got: f64 = types
        .iter()
        .zip(amounts)
        .map(|(t, x)| x * t.cpu_millis as f64)
        .sum();
    let memory_got: f64 = types
        .iter()
        .zip(amounts)
        .map(|(t, x)| x * t.memory_bytes as f64)
        .sum();
    (cpu_got >= cpu as f64 && memory_got >= memory as f64).then(|| {
        types
            .iter()
            .zip(amounts)
            .map(|(t, x)| x * t.price.micros() as f64)
            .sum()
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// A single type: the covering buys `max(C/cpu, M/mem)` of it
/// (definition of the rate with one type).
#[test]
fn one_type_buys_the_binding_resource() {
    let covering = Covering::new([t(2000, 8 * GIB, 100_000)]);
    // CPU binds: 3000/2000 = 1.5 > 4/8.
    assert_eq!(covering.rate(3000, 4 * GIB), Some(150_000.0));
    // Memory binds: 16/8 = 2 > 1000/2000.
    assert_eq!(covering.rate(1000, 16 * GIB), Some(200_000.0));
    assert_eq!(covering.rate(0, 0), Some(0.0));
}

/// Two complementary types: the optimum mixes them so that both
/// constraints are tight. cpu-heavy (4000m, 1 GiB, 10) and memory-heavy
/// (1000m, 8 GiB, 10); demand 4000m, 8 GiB: x_a·4000 + x_b·1000 = 4000,
/// x_a + 8·x_b = 8 ⇒ x_b = 28/31, x_a = 24/31, cost 520/31.
#[test]
fn complementary_types_are_mixed() {
    let a = t(4000, GIB, 10);
    let b = t(1000, 8 * GIB, 10);
    let covering = Covering::new([a, b]);
    let rate = covering.rate(4000, 8 * GIB).unwrap();
    assert!(close(rate, 520.0 / 31.0), "{rate}");
    // Each alone costs 80 (a: 8 units for memory; b: 4 units for CPU).
    assert!(rate < 80.0);
}

/// Domination: a type giving no more CPU and no more memory per dollar
/// than another is dropped; one on the segment between two hull vertices
/// is dropped too (a mix of those does as well).
#[test]
fn dominated_and_interior_types_are_dropped() {
    let a = t(4000, GIB, 10);
    let b = t(1000, 8 * GIB, 10);
    let dominated = t(1000, GIB / 2, 10);
    // Exactly halfway per dollar between a and b: (2500, 4.5 GiB) per 10.
    let on_segment = t(2500, 9 * GIB / 2, 10);
    let covering = Covering::new([dominated, a, on_segment, b]);
    assert_eq!(covering.candidates(), &[a, b]);
    // Same per-dollar point, different scale: one kept.
    let covering = Covering::new([t(2000, 2 * GIB, 20), t(1000, GIB, 10)]);
    assert_eq!(covering.candidates().len(), 1);
}

/// A zero-price type makes its resources free.
#[test]
fn free_resources_cost_nothing() {
    let covering = Covering::new([t(1000, 0, 0), t(1000, 4 * GIB, 100)]);
    // CPU is free; memory 8 GiB needs 2 units of the priced type.
    assert_eq!(covering.rate(50_000, 8 * GIB), Some(200.0));
    assert_eq!(Covering::new([t(1000, GIB, 0)]).rate(5000, GIB), Some(0.0));
}

/// Demand no type can cover: no rate.
#[test]
fn uncoverable_demand_has_no_rate() {
    let covering = Covering::new([t(1000, 0, 10)]);
    assert_eq!(covering.rate(1000, 1), None);
    assert_eq!(Covering::new([]).rate(1, 0), None);
    assert_eq!(floor_rate(None), 0);
}

/// The tracker integrates a piecewise-constant rate exactly: 30 min at
/// 1.5 units of a $0.1/h type then 30 min at 1 unit is 0.075 + 0.05 USD.
#[test]
fn tracker_integrates_piecewise_constant_rates() {
    let mut tracker = BoundTracker::new(vec![LaunchableType {
        name: "x".to_string(),
        cpu_millis: 2000,
        memory_bytes: 8 * GIB,
        offerings: vec![(
            "z".to_string(),
            CapacityType::OnDemand,
            Price::from_micros(100_000),
        )],
    }]);
    tracker.integrate(1_800_000, 3000, GIB);
    tracker.integrate(1_800_000, 2000, GIB);
    // Rates are shaved by 1e-9 and rounded down: 149 999 and 99 999 µ$/h.
    assert_eq!(tracker.total(), MicroUsd((149_999 + 99_999) / 2));
    // A cheaper spot price lowers the rate from then on.
    tracker.spot_price_changed("x", "z", Price::from_micros(1));
    assert_eq!(tracker.rate(2000, GIB), 99_999);
    tracker.set_launchable(vec![LaunchableType {
        name: "x".to_string(),
        cpu_millis: 2000,
        memory_bytes: 8 * GIB,
        offerings: vec![
            (
                "z".to_string(),
                CapacityType::OnDemand,
                Price::from_micros(100_000),
            ),
            (
                "z".to_string(),
                CapacityType::Spot,
                Price::from_micros(40_000),
            ),
        ],
    }]);
    assert_eq!(tracker.rate(2000, GIB), 39_999);
    tracker.spot_price_changed("x", "z", Price::from_micros(20_000));
    assert_eq!(tracker.rate(2000, GIB), 19_999);
    // A running node of a type no longer launchable still counts.
    tracker.set_launchable(Vec::new());
    assert_eq!(tracker.rate(2000, GIB), 0);
    tracker.node_added(NodeId(0), 4000, 16 * GIB, Price::from_micros(300_000));
    assert_eq!(tracker.rate(2000, GIB), 149_999);
    tracker.node_price_changed(NodeId(0), Price::from_micros(200_000));
    assert_eq!(tracker.rate(2000, GIB), 99_999);
    tracker.node_removed(NodeId(0));
    assert_eq!(tracker.rate(2000, GIB), 0);
    // Two nodes of the same type and price: one leaving keeps the other.
    tracker.node_added(NodeId(1), 4000, 16 * GIB, Price::from_micros(300_000));
    tracker.node_added(NodeId(2), 4000, 16 * GIB, Price::from_micros(300_000));
    tracker.node_removed(NodeId(1));
    assert_eq!(tracker.rate(2000, GIB), 149_999);
    tracker.node_price_changed(NodeId(2), Price::from_micros(100_000));
    assert_eq!(tracker.rate(2000, GIB), 49_999);
    tracker.node_removed(NodeId(2));
    assert_eq!(tracker.rate(2000, GIB), 0);
}

fn cover_type() -> impl Strategy<Value = CoverType> {
    (0i64..64_000, 0i64..256, 1i64..2_000_000)
        .prop_map(|(cpu, gib_eighths, price)| t(cpu, gib_eighths * GIB / 8, price))
}

proptest! {
    /// The hull scan finds the same optimum as enumerating every single
    /// type and every pair (the LP with two constraints has an optimal
    /// basic solution with at most two types).
    #[test]
    fn solver_matches_all_singles_and_pairs(
        types in prop::collection::vec(cover_type(), 1..9),
        cpu in 0i64..200_000,
        memory in 0i64..(512 * GIB),
    ) {
        let covering = Covering::new(types.iter().copied());
        let fast = covering.rate(cpu, memory);
        let slow = brute_force(&types, cpu, memory);
        match (fast, slow) {
            (Some(f), Some(s)) => prop_assert!(close(f, s), "{f} vs {s}"),
            (None, None) => {}
            other => prop_assert!(false, "{other:?}"),
        }
    }

    /// No mix on a grid of amounts (0 to 4 units of each of up to three
    /// types, step 1/4) covers the demand more cheaply than the solver's
    /// optimum (the bound is a minimum over every fractional mix).
    #[test]
    fn no_grid_mix_is_cheaper(
        types in prop::collection::vec(cover_type(), 1..4),
        cpu in 0i64..100_000,
        memory in 0i64..(256 * GIB),
    ) {
        let covering = Covering::new(types.iter().copied());
        let steps: Vec<f64> = (0..=16).map(|s| f64::from(s) / 4.0).collect();
        let n = types.len();
        let mut amounts = vec![0.0; n];
        let total = steps.len().pow(n as u32);
        for code in 0..total {
            let mut rest = code;
            for amount in amounts.iter_mut() {
                *amount = steps[rest % steps.len()];
                rest /= steps.len();
            }
            if let Some(cost) = mix_cost(&types, &amounts, cpu, memory) {
                let best = covering.rate(cpu, memory);
                prop_assert!(best.is_some(), "a grid mix covers but the solver found none");
                let best = best.unwrap_or_default();
                prop_assert!(best <= cost * (1.0 + 1e-9) + 1e-9, "{best} > {cost} for {amounts:?}");
            }
        }
    }
}

fn catalog() -> Catalog {
    Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap()
}

/// A NodePool admitting only `instance_type`, on-demand.
fn one_type_pool(instance_type: &str) -> crate::nodepool::NodePool {
    let text = format!(
        "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{instance_type}]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
"
    );
    load_str("pool.yaml", &text).unwrap().nodepools[0].clone()
}

/// A one-pod Job requesting `cpu` and 1 GiB that runs for `run_time`.
fn job_manifest(cpu: &str, run_time: &str) -> String {
    format!(
        "
apiVersion: batch/v1
kind: Job
metadata:
  name: one
  annotations: {{karpsim.dev/duration: {run_time}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {{requests: {{cpu: '{cpu}', memory: 1Gi}}}}
"
    )
}

/// A run in us-east-1a of `manifests` under [`one_type_pool`].
fn one_type_input(instance_type: &str, manifests: &str, duration: SimDuration) -> RunInput {
    let loaded = load_str("workloads.yaml", manifests).unwrap();
    RunInput {
        variant: "test".to_string(),
        seed: 1,
        duration,
        zones: vec!["us-east-1a".to_string()],
        launch_latency: LaunchLatency::fixed(SimDuration::from_secs(30)),
        node_initialization: SimDuration::ZERO,
        startup_failures: Vec::new(),
        steps: vec![Step {
            at: SimTime::ZERO,
            action: StepAction::Apply {
                workloads: loaded.core.workloads,
                pdbs: loaded.core.pdbs,
            },
        }],
        sources: Vec::new(),
        nodepools: vec![engine::PoolSetup {
            pool: one_type_pool(instance_type),
            catalog: catalog(),
        }],
        reservations: Vec::new(),
        capacity_shortages: BTreeSet::new(),
        initial: None,
        snapshot_at: None,
        scheduler: SchedulerConfig::default(),
        karpenter: crate::engine::KarpenterOptions::default(),
        node_count_resource: None,
        interruptions: Default::default(),
        spot_price_changes: Vec::new(),
        cluster_autoscaler: None,
    }
}

/// A running node counts at its billed price after a NodePool change: a
/// 1800m pod fills most of an m5.large ($0.096/h, 1930m); at 10 min the
/// NodePool switches to r5.large only ($0.126/h, 1930m), which alone would
/// put the rate at 126 000 × 1800 / 1930 ≈ 117 513 µ$/h, above the billed
/// 96 000 until drift replaces the node. With the running m5.large counted
/// the rate stays at 96 000 × 1800 / 1930 ≈ 89 533 µ$/h; the engine's
/// invariant check compares the rate with the billed rate after every
/// event.
#[test]
fn running_nodes_keep_the_bound_a_floor_after_a_nodepool_change() {
    let catalog = catalog();
    assert_eq!(
        catalog.get("r5.large").unwrap().on_demand_price,
        Price::from_micros(126_000)
    );
    assert_eq!(
        catalog.get("r5.large").unwrap().allocatable.cpu_millis(),
        1930
    );
    let mut input = one_type_input(
        "m5.large",
        &job_manifest("1800m", "2h"),
        SimDuration::from_hours(1),
    );
    input.steps.push(Step {
        at: SimTime::from_secs(600),
        action: StepAction::NodePools {
            nodepools: vec![engine::PoolSetup {
                pool: one_type_pool("r5.large"),
                catalog,
            }],
            node_count_resource: None,
        },
    });
    let (out, violations) = engine::run_checked(&input, engine::Deciders::default()).unwrap();
    assert_eq!(violations, Vec::<String>::new());
    // The node was replaced by drift (so there was a window to catch).
    assert!(out.nodeclaims.iter().any(|c| c.instance_type == "r5.large"));
    assert!(out.summary.cost_lower_bound <= out.summary.total_cost);
}

/// A hand-computed run: a NodePool allowing only m5.large on-demand, one
/// Job pod requesting 1 CPU and 1 GiB that runs exactly 1 h, a 2 h run.
///
/// m5.large in the bundled catalog: 2 vCPU, 8 GiB, 3 ENIs × 10 IPv4 ⇒ 29
/// pods. Allocatable CPU = 2000 − (60 + 10) kube-reserved = 1930m.
/// Allocatable memory = 8192 MiB − ⌈8192 × 7.5 %⌉ = 615 MiB VM overhead −
/// (11 × 29 + 255) = 574 MiB kube-reserved − 100 MiB eviction = 6903 MiB.
/// On-demand price in us-east-1: $0.096/h. The pod needs
/// max(1000/1930, 1024/6903) = 0.51813 of a node, so the rate is
/// 96 000 × 1000 / 1930 = 49 740.93 µ$/h, rounded down to 49 740 µ$/h; the
/// pod is bound for exactly 1 h and nothing else is, so the bound is
/// $0.049740 (the checks below recompute these numbers from the catalog).
#[test]
fn one_pod_on_m5_large_for_one_hour() {
    let catalog = catalog();
    let m5 = catalog.get("m5.large").unwrap();
    assert_eq!(m5.allocatable.cpu_millis(), 1930);
    assert_eq!(m5.allocatable.memory_bytes(), 6903 << 20);
    assert_eq!(m5.on_demand_price, Price::from_micros(96_000));
    let input = one_type_input(
        "m5.large",
        &job_manifest("1", "1h"),
        SimDuration::from_hours(2),
    );
    let out = engine::run(&input, &mut |_| {}).unwrap();
    assert_eq!(out.summary.pods_scheduled, 1);
    let expected_rate = (96_000.0 * 1000.0 / 1930.0_f64).floor() as i64;
    assert_eq!(expected_rate, 49_740);
    assert_eq!(out.summary.cost_lower_bound, MicroUsd(expected_rate));
    let efficiency = out.summary.cost_efficiency.unwrap();
    assert!(efficiency > 0.0 && efficiency <= 1.0, "{efficiency}");
    // While the pod runs, the sampled rate is the bound's rate.
    assert!(
        out.timeseries
            .iter()
            .any(|s| s.lower_bound_rate == Price::from_micros(expected_rate))
    );
}

/// Karpenter's types: only what the NodePool admits (m5.large, on-demand),
/// only in the scenario's zones (restricted catalog), each offering at its
/// catalog price.
#[test]
fn nodepool_types_follow_the_pool_and_zones() {
    let pool = load_str(
        "pool.yaml",
        "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
",
    )
    .unwrap();
    let zones = vec!["us-east-1b".to_string()];
    let catalog = engine::restrict_zones(&catalog(), &zones);
    let setup = engine::PoolSetup {
        pool: pool.nodepools[0].clone(),
        catalog: catalog.clone(),
    };
    let types = nodepool_types(&[setup], std::slice::from_ref(&catalog));
    let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["c5.large", "m5.large"]);
    for t in &types {
        let it = catalog.get(&t.name).unwrap();
        assert_eq!(t.cpu_millis, it.allocatable.cpu_millis());
        assert_eq!(t.memory_bytes, it.allocatable.memory_bytes());
        assert_eq!(
            t.offerings,
            [(
                "us-east-1b".to_string(),
                CapacityType::OnDemand,
                it.on_demand_price
            )]
        );
    }
}

/// Cluster Autoscaler's types: each group's types in its zones, in the
/// capacity types its split can buy (on-demand only; spot only; a mixed
/// split with 0 % on-demand above a base of 0 buys spot only).
#[test]
fn node_group_types_follow_zones_and_capacity_split() {
    use crate::autoscaler::{CaConfig, NodeGroupSpec, SpotAllocationStrategy};
    let zones = vec!["us-east-1a".to_string(), "us-east-1b".to_string()];
    let catalog = engine::restrict_zones(&catalog(), &zones);
    let group = |name: &str, capacity: CapacitySplit, zones: &[&str]| NodeGroupSpec {
        name: name.to_string(),
        instance_types: vec!["m5.large".to_string()],
        capacity,
        spot_allocation_strategy: SpotAllocationStrategy::default(),
        on_demand_allocation_strategy: Default::default(),
        zones: zones.iter().map(|z| z.to_string()).collect(),
        min_size: 0,
        max_size: 10,
        labels: Default::default(),
        taints: Vec::new(),
        autoscaling_options: Default::default(),
    };
    let config = CaConfig {
        node_groups: vec![
            group("od", CapacitySplit::OnDemand, &["us-east-1a"]),
            group("spot", CapacitySplit::Spot, &["us-east-1a", "us-east-1b"]),
            group(
                "mixed",
                CapacitySplit::Mixed {
                    on_demand_base_capacity: 0,
                    on_demand_percentage_above_base: 0,
                },
                &["us-east-1b"],
            ),
        ],
        ..CaConfig::default()
    };
    let setup = engine::CaSetup {
        config: config.validate(&catalog).unwrap(),
        catalog: catalog.clone(),
        startup_failures: Default::default(),
    };
    let types = node_group_types(&setup);
    let offerings = |i: usize| -> Vec<(&str, CapacityType)> {
        types[i]
            .offerings
            .iter()
            .map(|o| (o.0.as_str(), o.1))
            .collect()
    };
    assert_eq!(types.len(), 3);
    assert_eq!(offerings(0), [("us-east-1a", CapacityType::OnDemand)]);
    assert_eq!(
        offerings(1),
        [
            ("us-east-1a", CapacityType::Spot),
            ("us-east-1b", CapacityType::Spot)
        ]
    );
    assert_eq!(offerings(2), [("us-east-1b", CapacityType::Spot)]);
}

/// A capacity reservation is a bounded free supply (module doc): the rate
/// is the fixed charge plus the covering of what the reservation leaves;
/// expiring, only its running nodes count.
#[test]
fn reservations_are_a_bounded_free_supply_plus_their_fixed_charge() {
    let mut tracker = BoundTracker::new(vec![LaunchableType {
        name: "m6i.xlarge".to_string(),
        cpu_millis: 4_000,
        memory_bytes: 16 * GIB,
        offerings: vec![(
            "us-east-1a".to_string(),
            CapacityType::OnDemand,
            Price::from_micros(192_000),
        )],
    }]);
    tracker.set_reservations([("cr-1", 2)]);
    tracker.set_fixed_rate(Price::from_micros(384_000));
    // Not launchable by any NodePool yet: no supply, the charge still paid.
    assert_eq!(tracker.rate(10_000, 8 * GIB), 479_999 + 384_000);
    tracker.set_reservable(&[("cr-1", (4_000, 16 * GIB))].into_iter().collect());
    // 10 CPUs, 8 reserved for free: 2 CPUs at $0.048/CPU-h, rounded down.
    assert_eq!(tracker.rate(10_000, 8 * GIB), 95_999 + 384_000);
    // A reserved node (price 0) is supply, not a covering type.
    tracker.reserved_node_added(NodeId(7), "cr-1", 4_000, 16 * GIB);
    assert_eq!(tracker.rate(10_000, 8 * GIB), 95_999 + 384_000);
    tracker.reservation_expiring("cr-1");
    assert_eq!(tracker.rate(10_000, 8 * GIB), 287_999 + 384_000);
    tracker.node_removed(NodeId(7));
    assert_eq!(tracker.rate(10_000, 8 * GIB), 479_999 + 384_000);
}
