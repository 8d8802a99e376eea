//! Reserved capacity in the solve and the launch (core: scheduling/
//! suite_test.go "Reserved Instance Types", reservationmanager.go; aws:
//! instance/filter/filter_test.go reserved filters).

use super::*;
use crate::cloud::reservation::{CapacityReservation, ReservationType};
use crate::cloud::{CapacityType, Price, fake};
use crate::karpenter::provisioning::choose_offering;
use crate::kube::labels::{LABEL_CAPACITY_RESERVATION_ID, LABEL_CAPACITY_TYPE};

/// A reservation of `count` instances of `instance_type` in test-zone-1.
fn reservation(id: &'static str, instance_type: &str, count: u32) -> CapacityReservation {
    CapacityReservation {
        id,
        instance_type: instance_type.to_string(),
        zone: "test-zone-1".to_string(),
        count,
        reservation_type: ReservationType::Default,
        end: None,
        tags: Default::default(),
        owner_id: None,
        price: Price::ZERO,
    }
}

/// The fake catalog (fake-it-i has i + 1 CPUs) with reservations of one
/// instance of fake-it-1 (2 CPUs, "small") and of fake-it-2 (3 CPUs,
/// "medium"), as upstream's suite reserves its small and medium types.
fn reserved_catalog() -> Catalog {
    let mut catalog = fake::instance_types(6);
    catalog.add_reservations(&[
        reservation("cr-small", "fake-it-1", 1),
        reservation("cr-medium", "fake-it-2", 1),
    ]);
    catalog
}

fn reserved_ids(claim: &NewNodeClaim) -> Vec<String> {
    let mut ids: Vec<String> = claim
        .requirements
        .get(LABEL_CAPACITY_RESERVATION_ID)
        .map(|r| r.values().to_vec())
        .unwrap_or_default();
    ids.sort();
    ids
}

/// What the engine does after a launch into `id`: one instance fewer.
fn launched_into(catalog: &mut Catalog, id: &str, left: u32) {
    catalog.set_reservation(id, left, false);
}

/// core scheduling suite "shouldn't fallback to on-demand or spot when
/// compatible reserved offerings are available": three 1800m pods fit the
/// small or the medium type one each. A NodeClaim reserves an instance of
/// both reservations (it could launch as either), so one solve opens one
/// NodeClaim and defers the other pods; it launches into the cheaper
/// reservation. The next solve gets the medium one; once both are used,
/// the last pod falls back to spot or on-demand.
#[test]
fn shouldnt_fallback_to_on_demand_or_spot_when_compatible_reserved_offerings_are_available() {
    let mut world = World::new(vec![(default_pool(), reserved_catalog())]);
    let pods = world.add_pendings(3, pod(1800, 100));

    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 1, "{result:?}");
    let claim = &result.new_nodeclaims[0];
    assert_eq!(claim.pods.len(), 1);
    assert_eq!(reserved_ids(claim), ["cr-medium", "cr-small"]);
    let ct = claim.requirements.get(LABEL_CAPACITY_TYPE).unwrap();
    assert_eq!(ct.values(), ["reserved"]);
    assert_eq!(result.deferred.len(), 2, "{result:?}");
    assert!(
        result
            .errors
            .iter()
            .all(|(_, e)| e.contains("reserved offering"))
    );
    let catalog = &world.pools[0].1;
    let launch = choose_offering(claim, catalog).unwrap();
    assert_eq!(launch.capacity_type, CapacityType::Reserved);
    assert_eq!(launch.reservation, Some("cr-small"));
    assert_eq!(
        catalog.instance_types()[launch.instance_type].name(),
        "fake-it-1"
    );
    assert_eq!(launch.price, Price::ZERO);

    // The small reservation is used: the next solve reserves the medium.
    launched_into(&mut world.pools[0].1, "cr-small", 0);
    world.pending = pods[1..].to_vec();
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 1);
    assert_eq!(reserved_ids(&result.new_nodeclaims[0]), ["cr-medium"]);
    let launch = choose_offering(&result.new_nodeclaims[0], &world.pools[0].1).unwrap();
    assert_eq!(launch.reservation, Some("cr-medium"));
    assert_eq!(
        world.pools[0].1.instance_types()[launch.instance_type].name(),
        "fake-it-2"
    );

    // Both used: the last pod falls back.
    launched_into(&mut world.pools[0].1, "cr-medium", 0);
    world.pending = pods[2..].to_vec();
    let result = world.solve();
    assert!(result.deferred.is_empty());
    assert_eq!(result.new_nodeclaims.len(), 1);
    assert!(reserved_ids(&result.new_nodeclaims[0]).is_empty());
    let launch = choose_offering(&result.new_nodeclaims[0], &world.pools[0].1).unwrap();
    assert_ne!(launch.capacity_type, CapacityType::Reserved);
    assert_eq!(launch.reservation, None);
}

/// core scheduling suite "should correctly track reservations shared
/// across nodepools" (reservationmanager.go keeps one count per
/// reservation id): two NodePools over one reservation of a single
/// instance open one reserved NodeClaim between them, not one each.
#[test]
fn should_correctly_track_reservations_shared_across_nodepools() {
    let mut catalog = fake::instance_types(6);
    catalog.add_reservations(&[reservation("cr-small", "fake-it-1", 1)]);
    let only_small = "      requirements:\n        - {key: node.kubernetes.io/instance-type, operator: In, values: [fake-it-1]}\n";
    let np1 = pool("np-1", "", only_small).0;
    let np2 = pool("np-2", "", only_small).0;
    let mut world = World::new(vec![(np1, catalog.clone()), (np2, catalog)]);
    world.add_pendings(2, pod(1800, 100));
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 1, "{result:?}");
    assert_eq!(reserved_ids(&result.new_nodeclaims[0]), ["cr-small"]);
    assert_eq!(result.deferred.len(), 1);
}

/// core scheduling suite "shouldn't fallback to a lower weight NodePool if
/// a reserved offering is available": the heavier NodePool has the
/// reservation; once its instance is reserved in this solve, the next pod
/// waits for it instead of opening a NodeClaim of the lighter one.
#[test]
fn shouldnt_fallback_to_a_lower_weight_nodepool_if_a_reserved_offering_is_available() {
    let mut reserved = fake::instance_types(6);
    reserved.add_reservations(&[reservation("cr-small", "fake-it-1", 1)]);
    let heavy = pool(
        "heavy",
        "  weight: 100\n",
        "      requirements:\n        - {key: node.kubernetes.io/instance-type, operator: In, values: [fake-it-1]}\n",
    )
    .0;
    let light = pool("light", "  weight: 10\n", "").0;
    let mut world = World::new(vec![(heavy, reserved), (light, fake::instance_types(6))]);
    let pods = world.add_pendings(2, pod(1800, 100));
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 1, "{result:?}");
    assert_eq!(result.new_nodeclaims[0].nodepool, 0);
    assert_eq!(result.deferred, [pods[1]]);
}

/// core scheduling suite "shouldn't relax preferences when a pod fails to
/// schedule due to a reserved offering error" (scheduler.go trySchedule):
/// the pod's first node-affinity term wants the reserved type, its second
/// another type; short of reserved capacity it is deferred with its first
/// term intact, not relaxed onto the second.
#[test]
fn shouldnt_relax_preferences_when_a_pod_fails_to_schedule_due_to_a_reserved_offering_error() {
    let mut catalog = fake::instance_types(6);
    catalog.add_reservations(&[reservation("cr-small", "fake-it-1", 1)]);
    let mut world = World::new(vec![(default_pool(), catalog)]);
    let mut spec = pod(1800, 100);
    for name in ["fake-it-1", "fake-it-3"] {
        spec.node_affinity.required.push(vec![expr(
            "node.kubernetes.io/instance-type",
            Operator::In,
            &[name],
        )]);
    }
    let pods = world.add_pendings(2, spec);
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 1, "{result:?}");
    assert_eq!(reserved_ids(&result.new_nodeclaims[0]), ["cr-small"]);
    assert_eq!(result.deferred, [pods[1]]);
}

/// Upstream's `ReservedOfferingModeFallback` (scheduler.go), which the
/// disruption controller's simulations use: the second pod, which a strict
/// solve defers, joins the first NodeClaim although the two no longer fit
/// the reserved type; the NodeClaim gives its reservation back (nodeclaim.go
/// `releaseReservedOfferings`) and launches unreserved.
#[test]
fn fallback_mode_joins_pods_and_releases_the_reservation() {
    let mut catalog = fake::instance_types(6);
    catalog.add_reservations(&[reservation("cr-small", "fake-it-1", 1)]);
    let mut world = World::new(vec![(default_pool(), catalog)]);
    world.add_pendings(2, pod(1800, 100));
    let strict = world.solve();
    assert_eq!(strict.deferred.len(), 1, "{strict:?}");
    let result = world.solve_fallback();
    assert!(
        result.deferred.is_empty() && result.errors.is_empty(),
        "{result:?}"
    );
    assert_eq!(result.new_nodeclaims.len(), 1);
    assert_eq!(result.new_nodeclaims[0].pods.len(), 2);
    assert!(reserved_ids(&result.new_nodeclaims[0]).is_empty());
}

/// aws filter_test.go `ReservedOfferingFilter`: of two reservations of
/// one type in one zone, the launch takes the one with more instances
/// left; and `CapacityReservationTypeFilter`: equally priced ODCRs win
/// over capacity blocks.
#[test]
fn reserved_offering_filter_takes_the_reservation_with_most_left() {
    let mut catalog = fake::instance_types(3);
    let mut block = reservation("cr-block", "fake-it-1", 9);
    block.reservation_type = ReservationType::CapacityBlock;
    catalog.add_reservations(&[
        reservation("cr-two", "fake-it-1", 2),
        reservation("cr-five", "fake-it-1", 5),
        block,
    ]);
    let index = catalog
        .instance_types()
        .iter()
        .position(|t| t.name() == "fake-it-1")
        .unwrap();
    let mut requirements = crate::kube::requirements::Requirements::new();
    requirements.add(crate::kube::requirements::Requirement::in_values(
        LABEL_CAPACITY_TYPE,
        ["reserved"],
    ));
    let claim = NewNodeClaim {
        nodepool: 0,
        requirements,
        instance_types: vec![index],
        pods: Vec::new(),
        requests: pod(100, 100).requests,
        min_values_relaxed: None,
    };
    let launch = choose_offering(&claim, &catalog).unwrap();
    assert_eq!(launch.reservation, Some("cr-five"));
    assert_eq!(launch.overrides.len(), 1);
}

/// The offering filter's one-`and` answer per type (the catalog's offered
/// zones against the filter's allowed zones and capacity types) equals
/// asking every offering, for zone, zone-id, capacity-type and
/// reservation requirements, with a type marked unavailable in a zone and
/// with reserved offerings (answered offering by offering).
#[test]
fn offering_masks_answer_as_offerings_do() {
    use crate::karpenter::provisioning::template::OfferingFilter;
    use crate::kube::labels::LABEL_TOPOLOGY_ZONE_ID;
    use crate::kube::requirements::{Requirement, Requirements};

    let mut catalog = reserved_catalog();
    assert!(catalog.mark_unavailable("fake-it-3", "test-zone-1", CapacityType::OnDemand));
    assert!(catalog.mark_unavailable("fake-it-3", "test-zone-2", CapacityType::OnDemand));
    let cases: Vec<Vec<Requirement>> = vec![
        vec![],
        vec![Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["test-zone-1"])],
        vec![Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["test-zone-3"])],
        vec![Requirement::not_in(LABEL_TOPOLOGY_ZONE, ["test-zone-3"])],
        vec![Requirement::in_values(LABEL_TOPOLOGY_ZONE_ID, ["tz2"])],
        vec![Requirement::in_values(LABEL_CAPACITY_TYPE, ["spot"])],
        vec![
            Requirement::in_values(LABEL_CAPACITY_TYPE, ["on-demand"]),
            Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["test-zone-1", "test-zone-2"]),
        ],
        vec![Requirement::in_values(LABEL_CAPACITY_TYPE, ["reserved"])],
        vec![Requirement::in_values(
            LABEL_CAPACITY_RESERVATION_ID,
            ["cr-small"],
        )],
        vec![Requirement::in_values(LABEL_TOPOLOGY_ZONE, ["elsewhere"])],
    ];
    let mut answers = [0, 0];
    for case in cases {
        let requirements = Requirements::from_iter(case);
        let filter = OfferingFilter::new(&requirements);
        let mask = filter.zone_mask(catalog.zones());
        for (index, instance_type) in catalog.instance_types().iter().enumerate() {
            let expected = instance_type.offerings.iter().any(|o| filter.allows(o));
            assert_eq!(
                filter.allows_any(&catalog, index as u32, mask),
                expected,
                "{} under {requirements}",
                instance_type.name()
            );
            answers[usize::from(expected)] += 1;
        }
    }
    // Both answers occur, and the reserved types take the slow path.
    assert!(answers[0] > 0 && answers[1] > 0, "{answers:?}");
    assert_eq!(catalog.offered_zones(1), None);
    assert!(catalog.offered_zones(3).is_some());
}
