//! The cost floor (`karpsim_sim::lower_bound`) over every bundled scenario
//! as shipped: at every sample the bound's rate is at most the fleet's
//! billed rate, the total at most the cost paid.

use crate::sim::MicroUsd;

/// Bundled scenarios checked by [`bound_holds_for`], one test each so
/// they run in parallel.
const BUNDLED: [&str; 11] = [
    "alibaba-replay",
    "consolidation-day",
    "karpenter-vs-ca",
    "large-week",
    "provisioning-request",
    "quickstart",
    "realistic-day",
    "savings-plan",
    "simkube-replay",
    "snapshot-day",
    "spot-storm",
];

fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios")).to_path_buf()
}

/// Runs every variant of a bundled scenario as shipped (its own duration
/// and seed) and checks the contract: at every sample the bound's rate is
/// at most the fleet's billed rate (the running nodes are a feasible
/// covering), the total is at most the cost paid, and the efficiency lies
/// in (0, 1].
fn bound_holds_for(name: &str) {
    bound_holds_within(name, None);
}

/// [`bound_holds_for`], with the run cut to `duration` when given.
fn bound_holds_within(name: &str, duration: Option<crate::time::SimDuration>) {
    use crate::scenario::{BundledRegions, Scenario, prepare};
    let path = scenarios_dir().join(format!("{name}.yaml"));
    let mut scenario = Scenario::load(&path, &BundledRegions).unwrap();
    if let Some(duration) = duration {
        scenario.duration = duration;
    }
    let prepared = prepare(&scenario, None).unwrap();
    for input in &prepared.runs {
        let out = crate::sim::engine::run(input, &mut |_| {}).unwrap();
        let s = &out.summary;
        for sample in &out.timeseries {
            assert!(
                sample.lower_bound_rate <= sample.hourly_rate,
                "{name}/{}: at {} bound rate {} above billed {}",
                s.variant,
                sample.time,
                sample.lower_bound_rate.micros(),
                sample.hourly_rate.micros()
            );
        }
        assert!(
            s.cost_lower_bound <= s.total_cost,
            "{name}/{}: bound {} above cost {}",
            s.variant,
            s.cost_lower_bound,
            s.total_cost
        );
        assert!(s.total_cost > MicroUsd(0), "{name}/{}", s.variant);
        let efficiency = s.cost_efficiency.unwrap();
        assert!(
            efficiency > 0.0 && efficiency <= 1.0,
            "{name}/{}: efficiency {efficiency}",
            s.variant
        );
    }
}

/// Every scenario in `scenarios/` is one of [`BUNDLED`], so none escapes
/// the checks below.
#[test]
fn every_bundled_scenario_is_checked() {
    let mut found: Vec<String> = std::fs::read_dir(scenarios_dir())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".yaml").map(str::to_string)
        })
        .collect();
    found.sort();
    assert_eq!(found, BUNDLED);
}

#[test]
fn bound_holds_for_alibaba_replay() {
    bound_holds_for(BUNDLED[0]);
}

#[test]
fn bound_holds_for_consolidation_day() {
    bound_holds_for(BUNDLED[1]);
}

#[test]
fn bound_holds_for_karpenter_vs_ca() {
    bound_holds_for(BUNDLED[2]);
}

/// The week-long scale scenario is checked over its first minutes (its
/// ramp to a few hundred nodes): the whole week is a benchmark, not a test.
#[test]
fn bound_holds_for_large_week_start() {
    bound_holds_within(BUNDLED[3], Some(crate::time::SimDuration::from_mins(4)));
}

#[test]
fn bound_holds_for_quickstart() {
    bound_holds_for(BUNDLED[5]);
}

#[test]
fn bound_holds_for_realistic_day() {
    bound_holds_for(BUNDLED[6]);
}

#[test]
fn bound_holds_for_provisioning_request() {
    bound_holds_for(BUNDLED[4]);
}

/// The bundled ProvisioningRequest scenario (besteffortatomic
/// provisioning_class.go): the node group's maxSize of 6 cannot hold the
/// training Job's 8 one-node pods, so with ProvisioningRequests CA asks
/// for no node at all and the Job waits whole; without them (CA's default)
/// the same pods scale the group to its maximum and run 5 then 3; Karpenter
/// ignores the request.
#[test]
fn provisioning_request_scenario_is_all_or_nothing() {
    use crate::scenario::{BundledRegions, Scenario, prepare};
    let path = scenarios_dir().join("provisioning-request.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    let mut seen = Vec::new();
    for input in &prepared.runs {
        let out = crate::sim::engine::run(input, &mut |_| {}).unwrap();
        let s = &out.summary;
        seen.push((s.variant.clone(), s.peak_nodes, s.pods_unschedulable));
    }
    assert_eq!(
        seen,
        vec![
            ("karpenter".to_string(), 2, 0),
            ("ca-provisioning-requests".to_string(), 1, 8),
            ("ca-without-provisioning-requests".to_string(), 6, 0),
        ]
    );
}

#[test]
fn bound_holds_for_savings_plan() {
    bound_holds_for(BUNDLED[7]);
}

/// Design node-overlay.md, "Price Adjustment" (the Savings Plan use case):
/// with the NodeOverlay gate on, every NodeClaim is launched on a covered
/// family and billed at 70 % of its list price; without the overlay, the
/// same NodePool pays list prices and picks other families. Costs follow.
#[test]
fn savings_plan_overlay_moves_launches_and_bills() {
    use crate::scenario::{BundledRegions, Scenario, prepare};
    let path = scenarios_dir().join("savings-plan.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    use karpsim_catalog::BundledCatalog;
    let list = crate::cloud::Catalog::load("us-east-1", &Default::default()).unwrap();
    let mut costs = Vec::new();
    for input in &prepared.runs {
        let out = crate::sim::engine::run(input, &mut |_| {}).unwrap();
        assert!(!out.nodeclaims.is_empty());
        for claim in &out.nodeclaims {
            let family = claim.instance_type.split('.').next().unwrap();
            let list_price = list.get(&claim.instance_type).unwrap().on_demand_price;
            if input.variant == "savings-plan-30" {
                assert!(["m6i", "m7i"].contains(&family), "{}", claim.instance_type);
                assert_eq!(claim.price, list_price.scale(70, 100).unwrap());
            } else if input.variant == "reserved-10-m6i-xlarge" {
                // The workload never outgrows the reservation, and nothing
                // undercuts a reserved node's price 0, so consolidation
                // never moves it to on-demand (core consolidation.go
                // filterByPrice, cloudprovider WorstLaunchPrice).
                assert_eq!(claim.capacity_type, crate::cloud::CapacityType::Reserved);
                // Paid by the reservation's fixed charge.
                assert_eq!(input.variant, "reserved-10-m6i-xlarge");
                assert_eq!(claim.instance_type, "m6i.xlarge");
                assert_eq!(claim.price, crate::cloud::Price::ZERO);
            } else {
                assert_eq!(claim.price, list_price);
            }
        }
        costs.push(out.summary.total_cost);
    }
    assert!(costs[1] < costs[0], "{costs:?}");
    // The ODCR is charged whether used or not: 10 × $0.192/h × 12 h, and
    // this workload never outgrows it, so nothing more is billed.
    assert_eq!(
        costs[2],
        crate::sim::ledger::MicroUsd(23_040_000),
        "{costs:?}"
    );
}

#[test]
fn bound_holds_for_simkube_replay() {
    bound_holds_for(BUNDLED[8]);
}

/// The SimKube replay's pods are the trace's: the 27 Deployments' first
/// replicas, then every scale-up the trace records (27 more pods: +2, +1,
/// +3 +2, +1, +1, +2 +2, +1 +2 +4 +2, +2 +2 over the eight Deployments
/// that scale in `dsb-scaling.sktrace`), and one for each pod evicted (its
/// Deployment re-creates it); every scale names a Deployment the trace
/// created, and every pod is scheduled.
#[test]
fn simkube_replay_runs_the_trace_pods() {
    use crate::scenario::{BundledRegions, Scenario, prepare};
    let path = scenarios_dir().join("simkube-replay.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    for input in &prepared.runs {
        let out = crate::sim::engine::run(input, &mut |_| {}).unwrap();
        let s = &out.summary;
        assert_eq!(s.steps_missing_target(), 0, "{}", s.variant);
        let evicted: u64 = s.churn.evictions_by_reason.values().sum();
        assert_eq!(s.pods_created as u64, 27 + 27 + evicted, "{}", s.variant);
        assert_eq!(s.pods_unschedulable, 0, "{}", s.variant);
    }
}

#[test]
fn bound_holds_for_snapshot_day() {
    bound_holds_for(BUNDLED[9]);
}

#[test]
fn bound_holds_for_spot_storm() {
    bound_holds_for(BUNDLED[10]);
}
