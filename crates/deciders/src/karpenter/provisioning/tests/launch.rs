//! The launch decision (aws: pkg/providers/instance/suite_test.go,
//! filter/filter_test.go; core: pkg/cloudprovider/fake cheapest offering).

use super::*;
use crate::cloud::fake::{self, DEFAULT_OFFERINGS, instance_type};
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::{Arch, CapacityType, Price};
use crate::karpenter::provisioning::{LaunchError, choose_offering};
use crate::kube::labels::LABEL_CAPACITY_TYPE;
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::GIB;
use karpsim_catalog::BundledCatalog;

fn claim(
    instance_types: Vec<usize>,
    requirements: Requirements,
    requests: Resources,
) -> NewNodeClaim {
    NewNodeClaim {
        nodepool: 0,
        requirements,
        instance_types,
        pods: Vec::new(),
        requests,
        min_values_relaxed: None,
    }
}

/// aws instance suite "should launch spot capacity if flexible to both spot
/// and on-demand": spot is chosen, then the cheapest type and zone (fake
/// prices are equal across a type's offerings, so the first zone by name).
/// fake-it-0 costs 0.1 + 0.1 × 2^31/1e9 = $0.314748/h.
#[test]
fn spot_preferred_when_allowed() {
    let catalog = fake::instance_types(4);
    let all: Vec<usize> = (0..catalog.len()).collect();
    let decision = choose_offering(
        &claim(all, Requirements::new(), pod(100, 100).requests),
        &catalog,
    )
    .unwrap();
    assert_eq!(decision.capacity_type, CapacityType::Spot);
    assert_eq!(
        catalog.instance_types()[decision.instance_type].name(),
        "fake-it-0"
    );
    assert_eq!(decision.zone, "test-zone-1");
    // Every other type's spot offerings cost more than fake-it-0's
    // on-demand offering, so the spot-offering filter drops them.
    assert_eq!(decision.compatible_offerings, 2);
    assert_eq!(
        decision.explanation,
        "cheapest of 2 compatible offerings: fake-it-0 spot test-zone-1 $0.314748/h"
    );
}

/// aws instance suite "should launch on-demand capacity if flexible to both
/// spot and on-demand, but spot is unavailable".
#[test]
fn on_demand_when_spot_excluded_or_unavailable() {
    let mut catalog = fake::instance_types(2);
    let all: Vec<usize> = (0..catalog.len()).collect();
    let od_only: Requirements = [Requirement::in_values(LABEL_CAPACITY_TYPE, ["on-demand"])]
        .into_iter()
        .collect();
    let decision =
        choose_offering(&claim(all.clone(), od_only, Resources::ZERO), &catalog).unwrap();
    assert_eq!(decision.capacity_type, CapacityType::OnDemand);
    for name in ["fake-it-0", "fake-it-1"] {
        for zone in ["test-zone-1", "test-zone-2"] {
            catalog.mark_unavailable(name, zone, CapacityType::Spot);
        }
    }
    let decision =
        choose_offering(&claim(all, Requirements::new(), Resources::ZERO), &catalog).unwrap();
    assert_eq!(decision.capacity_type, CapacityType::OnDemand);
}

/// aws filter_test "spot offering filter": a spot offering pricier than the
/// cheapest on-demand offering is dropped, so the cheap on-demand type wins.
#[test]
fn pricey_spot_offerings_are_dropped() {
    let small = Resources::cpu_mem(2000, 4 * GIB).with(ResourceKind::Pods, 10);
    let mut spiky = instance_type("spiky", Arch::Amd64, small, &DEFAULT_OFFERINGS);
    for o in &mut spiky.offerings {
        o.price = match o.capacity_type {
            CapacityType::Spot => Price::from_micros(500_000),
            _ => Price::from_micros(600_000),
        };
    }
    let mut steady = instance_type("steady", Arch::Amd64, small, &[(0, CapacityType::OnDemand)]);
    steady.offerings[0].price = Price::from_micros(300_000);
    let catalog = fake::catalog(vec![spiky, steady]);
    let decision = choose_offering(
        &claim(vec![0, 1], Requirements::new(), Resources::ZERO),
        &catalog,
    )
    .unwrap();
    assert_eq!(decision.capacity_type, CapacityType::OnDemand);
    assert_eq!(
        catalog.instance_types()[decision.instance_type].name(),
        "steady"
    );
    assert_eq!(decision.price, Price::from_micros(300_000));
}

/// aws filter_test "exotic instance filter": metal and GPU types are
/// dropped while a generic type fits, even if they are cheaper.
#[test]
fn exotic_types_dropped_when_generic_remain() {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
    let index = |name: &str| {
        catalog
            .instance_types()
            .iter()
            .position(|it| it.name() == name)
            .unwrap()
    };
    let od: Requirements = [Requirement::in_values(LABEL_CAPACITY_TYPE, ["on-demand"])]
        .into_iter()
        .collect();
    let options = vec![
        index("g4dn.xlarge"),
        index("m5.metal"),
        index("m5.24xlarge"),
    ];
    let decision =
        choose_offering(&claim(options, od, pod(1000, 1024).requests), &catalog).unwrap();
    assert_eq!(
        catalog.instance_types()[decision.instance_type].name(),
        "m5.24xlarge"
    );
}

/// core fake cloud provider: a NodeClaim pinned to a zone launches there;
/// nothing fits → insufficient capacity.
#[test]
fn zone_pin_and_insufficient_capacity() {
    let catalog = fake::instance_types(3);
    let zone2: Requirements = [Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["test-zone-2"])]
        .into_iter()
        .collect();
    let decision =
        choose_offering(&claim(vec![0, 1, 2], zone2, Resources::ZERO), &catalog).unwrap();
    assert_eq!(decision.zone, "test-zone-2");
    let huge = Resources::cpu_mem(64_000, GIB);
    assert!(matches!(
        choose_offering(&claim(vec![0, 1, 2], Requirements::new(), huge), &catalog),
        Err(LaunchError::InsufficientCapacity(_))
    ));
}

/// The solve and the launch agree: the launched type is one of the claim's
/// options and has room for its requests.
#[test]
fn solve_then_launch() {
    let mut world = World::fake(default_pool(), 10);
    let p = world.add_pending(pod(2500, 2048));
    let result = world.solve();
    let claim = claim_of(&result, p);
    let catalog = &world.pools[0].1;
    let decision = choose_offering(claim, catalog).unwrap();
    assert!(claim.instance_types.contains(&decision.instance_type));
    assert!(
        claim
            .requests
            .fits(&catalog.instance_types()[decision.instance_type].allocatable)
    );
    assert_eq!(
        catalog.instance_types()[decision.instance_type].name(),
        "fake-it-2"
    );
}

/// core cloudprovider/types.go `Truncate`: the provider's truncation to its
/// 60 cheapest types checks minValues under Strict only. 70 types with
/// minValues 65 on the instance type fail under Strict and launch the
/// cheapest under BestEffort.
#[test]
fn truncation_checks_min_values_under_strict_only() {
    use crate::kube::labels::LABEL_INSTANCE_TYPE;
    let catalog = fake::instance_types(70);
    let all: Vec<usize> = (0..catalog.len()).collect();
    let mut requirements = Requirements::new();
    let mut types = Requirement::exists(LABEL_INSTANCE_TYPE);
    types.set_min_values(Some(65));
    requirements.add(types);
    let mut strict = claim(all, requirements, pod(100, 100).requests);
    let e = choose_offering(&strict, &catalog).unwrap_err();
    assert!(
        e.to_string()
            .contains("minValues not met by the 60 cheapest instance types"),
        "{e}"
    );
    strict.min_values_relaxed = Some(false);
    let decision = choose_offering(&strict, &catalog).unwrap();
    assert_eq!(
        catalog.instance_types()[decision.instance_type].name(),
        "fake-it-0"
    );
}
