//! Placement, NodePool choice, limits, DaemonSets, relaxation and instance
//! selection (core: pkg/controllers/provisioning/scheduling/suite_test.go,
//! instance_selection_test.go; pkg/controllers/provisioning/suite_test.go).

use karpsim_catalog::BundledCatalog;
use std::sync::Arc;

use super::*;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::{CapacityType, Price};
use crate::karpenter::provisioning::queue::MergedRuns;
use crate::karpenter::provisioning::{
    PresortedQueue, PriceToBeat, QueueRun, SchedulingPolicies, StopEarly,
    presorted_queue_starts_with, queue_starts_with,
};
use crate::kube::labels::{LABEL_ARCH, LABEL_CAPACITY_TYPE, LABEL_NODEPOOL};
use crate::kube::pod::WeightedNodeSelectorTerm;
use crate::kube::resources::GIB;
use crate::kube::taints::{Taint, TaintEffect, Toleration};

/// instance_selection_test.go "should schedule on one of the cheapest
/// instances": a 1.5 CPU pod needs 1.5 CPU allocatable; fake-it-1 (2 vCPU,
/// 1900m allocatable) is the cheapest type with room, and options are
/// ordered by price.
#[test]
fn selects_the_cheapest_instance_type_that_fits() {
    let mut world = World::fake(default_pool(), 10);
    let p = world.add_pending(pod(1500, 512));
    let result = world.solve();
    let claim = claim_of(&result, p);
    let catalog = &world.pools[0].1;
    assert_eq!(cheapest(catalog, claim), "fake-it-1");
    assert_eq!(
        claim.instance_types.len(),
        9,
        "every type but the 1-vCPU one fits"
    );
    let prices: Vec<_> = claim
        .instance_types
        .iter()
        .map(|&i| catalog.instance_types()[i].on_demand_price)
        .collect();
    assert!(prices.windows(2).all(|w| w[0] <= w[1]), "cheapest first");
    assert!(
        claim.requirements.get(LABEL_HOSTNAME).is_none(),
        "placeholder hostname dropped"
    );
    assert_eq!(claim.requests.cpu_millis(), 1500);
    assert_eq!(claim.requests.pods(), 1);
}

/// instance_selection_test.go "should not schedule if no instance type
/// matches selector (pod arch = arm)": the error names what excluded all
/// types.
#[test]
fn unsatisfiable_arch_fails_with_a_readable_reason() {
    let mut world = World::fake(default_pool(), 5);
    let mut spec = pod(100, 100);
    spec.node_selector.insert(LABEL_ARCH.into(), "arm64".into());
    let p = world.add_pending(spec);
    let result = world.solve();
    assert!(result.new_nodeclaims.is_empty());
    assert_eq!(
        error_of(&result, p),
        "NodePool default: no instance type satisfies kubernetes.io/arch In [arm64]"
    );
}

/// instance_selection_test.go "should schedule on one of the cheapest
/// instances (pod arch = arm64)", on the bundled us-east-1 catalog: every
/// option is arm64, and the first is the cheapest arm64 type whose
/// allocatable has room.
#[test]
fn arm64_selector_on_the_real_catalog() {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
    let mut world = World::new(vec![(default_pool(), catalog)]);
    let mut spec = pod(1000, 1024);
    spec.node_selector.insert(LABEL_ARCH.into(), "arm64".into());
    let p = world.add_pending(spec.clone());
    let result = world.solve();
    let claim = claim_of(&result, p);
    let catalog = &world.pools[0].1;
    assert!(claim.instance_types.len() <= MAX_INSTANCE_TYPES);
    for &i in &claim.instance_types {
        assert_eq!(catalog.instance_types()[i].label(LABEL_ARCH), Some("arm64"));
    }
    let cheapest_fit = catalog
        .instance_types()
        .iter()
        .filter(|it| it.label(LABEL_ARCH) == Some("arm64") && spec.requests.fits(&it.allocatable))
        .filter_map(|it| {
            it.offerings
                .iter()
                .filter(|o| o.available)
                .map(|o| o.price)
                .min()
        })
        .min()
        .unwrap();
    let first = &catalog.instance_types()[claim.instance_types[0]];
    let first_price = first.offerings.iter().map(|o| o.price).min().unwrap();
    assert_eq!(first_price, cheapest_fit);
}

/// scheduling/suite_test.go weighted NodePools ("should schedule to the
/// NodePool with the highest priority always"): the heavier pool wins even
/// when the lighter one would do; equal weights fall to name descending.
#[test]
fn respects_nodepool_weight_then_name() {
    let heavy = pool("heavy", "  weight: 50\n", "").0;
    let light = pool("light", "  weight: 10\n", "").0;
    let mut world = World::new(vec![
        (light, crate::cloud::fake::instance_types(4)),
        (heavy, crate::cloud::fake::instance_types(4)),
    ]);
    let p = world.add_pending(pod(100, 100));
    let result = world.solve();
    let claim = claim_of(&result, p);
    assert_eq!(claim.nodepool, 1);
    assert!(claim.requirements.get(LABEL_NODEPOOL).unwrap().has("heavy"));

    let mut tie = World::new(vec![
        (
            pool("alpha", "", "").0,
            crate::cloud::fake::instance_types(4),
        ),
        (
            pool("beta", "", "").0,
            crate::cloud::fake::instance_types(4),
        ),
    ]);
    let q = tie.add_pending(pod(100, 100));
    assert_eq!(
        claim_of(&tie.solve(), q).nodepool,
        1,
        "beta > alpha by name"
    );
}

/// provisioning/suite_test.go "should not schedule if limits would be
/// exceeded": a 500m CPU limit excludes every type (the smallest has one
/// vCPU).
#[test]
fn cpu_limit_prevents_launch() {
    let (pool, _) = pool("default", "  limits: {cpu: 500m}\n", "");
    let mut world = World::fake(pool, 5);
    let p = world.add_pending(pod(1500, 100));
    let result = world.solve();
    assert!(result.new_nodeclaims.is_empty());
    assert_eq!(
        error_of(&result, p),
        "NodePool default: cpu limit 500m reached"
    );
}

/// provisioning/suite_test.go "should not schedule if limits would be
/// exceeded (node)": with `limits.nodes: 2`, two hostname-anti-affine pods
/// get a node each and the third fails.
#[test]
fn node_count_limit_stops_the_third_node() {
    let (pool, names) = pool("default", "  limits: {nodes: \"2\"}\n", "");
    let mut world = World::fake(pool, 5);
    world.node_count_resource = names.lookup("nodes");
    let mut spec = labeled(pod(100, 100), "app", "foo");
    spec.pod_anti_affinity
        .required
        .push(affinity_term(LABEL_HOSTNAME, "foo"));
    let pods = world.add_pendings(3, spec);
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 2);
    assert_eq!(result.errors.len(), 1);
    assert_eq!(
        error_of(&result, pods[2]),
        "NodePool default: nodes limit 2 reached"
    );
}

/// provisioning/suite_test.go "should not schedule to a nodepool after a
/// scheduling round if limits would be exceeded": capacity of the pool's
/// existing nodes counts against its limits.
#[test]
fn existing_capacity_counts_against_limits() {
    let (pool, _) = pool("default", "  limits: {cpu: \"5\"}\n", "");
    let mut world = World::fake(pool, 5);
    let full = Resources::cpu_mem(5000, 8 * GIB).with(ResourceKind::Pods, 40);
    let node = world.add_node("n1", &[(LABEL_NODEPOOL, "default")], full, true);
    world.add_running(pod(4900, 100), node);
    let p = world.add_pending(pod(1500, 100));
    let result = world.solve();
    assert_eq!(
        error_of(&result, p),
        "NodePool default: cpu limit 5 reached"
    );
}

/// scheduling/suite_test.go "should schedule a pod to an existing node
/// unowned by Karpenter" / "should launch a second node if a pod won't fit
/// on the existingNodes node": the pod that fits reuses the node, the one
/// that does not gets a new NodeClaim.
#[test]
fn existing_node_is_reused_when_it_fits() {
    let mut world = World::fake(default_pool(), 8);
    let room = Resources::cpu_mem(2000, 4 * GIB).with(ResourceKind::Pods, 10);
    let node = world.add_node("existing", &[], room, true);
    let small = world.add_pending(pod(1500, 100));
    let big = world.add_pending(pod(1000, 100));
    let result = world.solve();
    assert_eq!(
        result.existing,
        vec![(small, node)],
        "larger CPU first, then no room"
    );
    assert_eq!(claim_of(&result, big).pods, vec![big]);
}

/// scheduling/suite_test.go "should not launch a second node if there is an
/// in-flight node that can support the pod": a launched but unregistered
/// NodeClaim of the pool takes the pod.
#[test]
fn in_flight_nodeclaim_is_reused() {
    let mut world = World::fake(default_pool(), 8);
    let room = Resources::cpu_mem(4000, 8 * GIB).with(ResourceKind::Pods, 40);
    let inflight = world.add_node("inflight", &[(LABEL_NODEPOOL, "default")], room, false);
    let p = world.add_pending(pod(1000, 100));
    let result = world.solve();
    assert_eq!(result.existing, vec![(p, inflight)]);
    assert!(result.new_nodeclaims.is_empty());
}

/// scheduling/suite_test.go "should assume pod will schedule to a node with
/// ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is
/// uninitialized" and "should not assume pod will schedule to a tainted
/// node".
#[test]
fn ephemeral_taints_ignored_only_while_uninitialized() {
    let room = Resources::cpu_mem(4000, 8 * GIB).with(ResourceKind::Pods, 40);
    for initialized in [false, true] {
        let mut world = World::fake(default_pool(), 8);
        let node = world.add_node("n", &[(LABEL_NODEPOOL, "default")], room, true);
        let n = world.cluster.node_mut(node).unwrap();
        n.initialized = initialized;
        n.taints.push(Taint::new(
            "node.kubernetes.io/not-ready",
            "",
            TaintEffect::NoExecute,
        ));
        let p = world.add_pending(pod(1000, 100));
        let result = world.solve();
        assert_eq!(
            result.existing.is_empty(),
            initialized,
            "initialized={initialized}"
        );
        assert_eq!(result.new_nodeclaims.is_empty(), !initialized);
        let _ = p;
    }
}

/// provisioning/suite_test.go "should pack in-flight nodes before launching
/// new nodes" and the fewest-pods-first order of in-flight NodeClaims: two
/// hostname-anti-affine pods open two claims; the small pods then alternate
/// between them.
#[test]
fn pods_fill_in_flight_claims_fewest_pods_first() {
    let mut world = World::fake(default_pool(), 16);
    let mut anti = labeled(pod(2000, 100), "app", "spread");
    anti.pod_anti_affinity
        .required
        .push(affinity_term(LABEL_HOSTNAME, "spread"));
    let a = world.add_pending(anti.clone());
    let b = world.add_pending(anti);
    let small = world.add_pendings(4, pod(100, 100));
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 2);
    let first = claim_of(&result, a);
    let second = claim_of(&result, b);
    // After s0 → A and s1 → B both hold two pods and the stable re-sort
    // keeps B ahead, so s2 → B, then s3 → A.
    assert_eq!(first.pods, vec![a, small[0], small[3]]);
    assert_eq!(second.pods, vec![b, small[1], small[2]]);
}

/// provisioning/suite_test.go "should account for daemonsets": a 1 CPU
/// DaemonSet pod plus a 1 CPU pod need 2 CPU allocatable — fake-it-2
/// (2900m), not fake-it-1 (1900m); the NodeClaim requests include the
/// overhead.
#[test]
fn daemonset_overhead_is_reserved() {
    let mut world = World::fake(default_pool(), 8);
    world.daemonsets.push(Arc::new(pod(1000, 1024)));
    let p = world.add_pending(pod(1000, 1024));
    let result = world.solve();
    let claim = claim_of(&result, p);
    assert_eq!(cheapest(&world.pools[0].1, claim), "fake-it-2");
    assert_eq!(claim.requests.cpu_millis(), 2000);
    assert_eq!(claim.requests.memory_bytes(), 2 * GIB);
    assert_eq!(claim.requests.pods(), 2);
}

/// provisioning/suite_test.go "should ignore daemonsets without matching
/// tolerations": the pool taint keeps the DaemonSet off, so no overhead.
#[test]
fn daemonset_without_toleration_is_ignored() {
    let (pool, _) = pool(
        "default",
        "",
        "      taints: [{key: dedicated, value: web, effect: NoSchedule}]\n",
    );
    let mut world = World::fake(pool, 8);
    world.daemonsets.push(Arc::new(pod(1000, 1024)));
    let mut spec = pod(1000, 1024);
    spec.tolerations
        .push(Toleration::equal("dedicated", "web", None));
    let p = world.add_pending(spec);
    let result = world.solve();
    let claim = claim_of(&result, p);
    assert_eq!(cheapest(&world.pools[0].1, claim), "fake-it-1");
    assert_eq!(claim.requests.cpu_millis(), 1000);
}

/// provisioning/suite_test.go "should schedule pods that tolerate taints"
/// and its negative: an untolerated pool taint is named in the reason.
#[test]
fn untolerated_pool_taint_is_named() {
    let (gpu, _) = pool(
        "gpu",
        "",
        "      taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n",
    );
    let mut world = World::fake(gpu, 4);
    let p = world.add_pending(pod(100, 100));
    let result = world.solve();
    assert_eq!(
        error_of(&result, p),
        "incompatible with NodePool gpu: did not tolerate taint nvidia.com/gpu=true:NoSchedule"
    );
}

/// provisioning/suite_test.go "should not match NodePool with
/// PreferNoSchedule taint when other NodePool match" and "should tolerate
/// PreferNoSchedule taint only after trying to relax Affinity terms".
#[test]
fn prefer_no_schedule_taint_is_avoided_then_tolerated() {
    let taint = "      taints: [{key: soft, effect: PreferNoSchedule}]\n";
    let preferred = pool("preferred", "  weight: 100\n", taint).0;
    let plain = pool("plain", "", "").0;
    let mut world = World::new(vec![
        (preferred.clone(), crate::cloud::fake::instance_types(4)),
        (plain, crate::cloud::fake::instance_types(4)),
    ]);
    let p = world.add_pending(pod(100, 100));
    assert_eq!(
        claim_of(&world.solve(), p).nodepool,
        1,
        "untainted pool first"
    );

    let mut alone = World::new(vec![(preferred, crate::cloud::fake::instance_types(4))]);
    let q = alone.add_pending(pod(100, 100));
    assert_eq!(
        claim_of(&alone.solve(), q).nodepool,
        0,
        "tolerated as last relaxation"
    );
}

/// scheduling/suite_test.go "should not schedule incompatible preferences
/// and requirements with Operator=In" family: a NodePool pinned to amd64
/// rejects an arm64 pod at the requirements step.
#[test]
fn incompatible_requirements_fail() {
    let (amd, _) = pool(
        "default",
        "",
        "      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n",
    );
    let mut world = World::fake(amd, 4);
    let mut spec = pod(100, 100);
    spec.node_affinity
        .required
        .push(vec![expr(LABEL_ARCH, Operator::In, &["arm64"])]);
    let p = world.add_pending(spec);
    let result = world.solve();
    let reason = error_of(&result, p);
    assert!(
        reason.starts_with("incompatible with NodePool default: key kubernetes.io/arch"),
        "{reason}"
    );
}

/// scheduling/suite_test.go "should relax to use lighter weights": the
/// heaviest preference (an unknown zone) is dropped, the next one (zone 2)
/// is honoured.
#[test]
fn preferred_node_affinity_relaxed_to_lighter_weight() {
    let mut world = World::fake(default_pool(), 4);
    let mut spec = pod(100, 100);
    spec.node_affinity.preferred = vec![
        WeightedNodeSelectorTerm {
            weight: 10,
            expressions: vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["test-zone-2"])],
        },
        WeightedNodeSelectorTerm {
            weight: 100,
            expressions: vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["nowhere"])],
        },
    ];
    let p = world.add_pending(spec);
    let result = world.solve();
    assert_eq!(
        zone_of(claim_of(&result, p)).as_deref(),
        Some("test-zone-2")
    );
}

/// scheduling/suite_test.go "should relax multiple terms" / "should not
/// relax the final term": OR'ed required terms are tried in order; the last
/// one is never dropped.
#[test]
fn required_node_affinity_terms_are_tried_in_order() {
    let mut world = World::fake(default_pool(), 4);
    let mut spec = pod(100, 100);
    spec.node_affinity.required = vec![
        vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["nowhere"])],
        vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["test-zone-3"])],
    ];
    let p = world.add_pending(spec);
    let mut last_only = pod(100, 100);
    last_only.node_affinity.required =
        vec![vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["nowhere"])]];
    let q = world.add_pending(last_only);
    let result = world.solve();
    assert_eq!(
        zone_of(claim_of(&result, p)).as_deref(),
        Some("test-zone-3")
    );
    assert!(error_of(&result, q).contains("topology.kubernetes.io/zone In [nowhere]"));
}

/// instance_selection_test.go "should schedule respecting the minValues
/// from instance-type requirements" and its failing variant: minValues 3 on
/// the instance type is met by the many types a small pod fits, not by the
/// two a 6-vCPU pod fits.
#[test]
fn min_values_strict() {
    let spec = "      requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 3}]\n";
    let mut world = World::fake(pool("default", "", spec).0, 8);
    let small = world.add_pending(pod(100, 100));
    let result = world.solve();
    assert!(claim_of(&result, small).instance_types.len() >= 3);

    let mut world = World::fake(pool("default", "", spec).0, 8);
    let big = world.add_pending(pod(6000, 100));
    let result = world.solve();
    assert!(
        error_of(&result, big).contains("minValues not met"),
        "{:?}",
        result.errors
    );
}

/// provisioning/suite_test.go, "with MinValuesPolicy set to BestEffort":
/// "should schedule even when minValues requirement is not met". The
/// 6-vCPU pod that Strict leaves pending (above) gets a NodeClaim whose
/// instance-type minValues is lowered to the types it fits, annotated
/// `karpenter.sh/nodeclaim-min-values-relaxed: "true"`; a small pod whose
/// options meet minValues is annotated "false"; under Strict there is no
/// annotation.
#[test]
fn min_values_best_effort_relaxes_to_what_the_options_reach() {
    use crate::karpenter::provisioning::MinValuesPolicy;
    use crate::kube::labels::LABEL_INSTANCE_TYPE;
    let spec = "      requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 3}]\n";
    let mut world = World::fake(pool("default", "", spec).0, 8);
    world.policies.min_values = MinValuesPolicy::BestEffort;
    let big = world.add_pending(pod(6000, 100));
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let claim = claim_of(&result, big);
    assert_eq!(claim.min_values_relaxed, Some(true));
    assert!(claim.instance_types.len() < 3);
    let relaxed = claim.requirements.get(LABEL_INSTANCE_TYPE).unwrap();
    assert_eq!(
        relaxed.min_values(),
        Some(claim.instance_types.len() as u32)
    );

    let mut world = World::fake(pool("default", "", spec).0, 8);
    world.policies.min_values = MinValuesPolicy::BestEffort;
    let small = world.add_pending(pod(100, 100));
    let result = world.solve();
    let claim = claim_of(&result, small);
    assert_eq!(claim.min_values_relaxed, Some(false));
    let kept = claim.requirements.get(LABEL_INSTANCE_TYPE).unwrap();
    assert_eq!(kept.min_values(), Some(3));

    let mut world = World::fake(pool("default", "", spec).0, 8);
    let small = world.add_pending(pod(100, 100));
    assert_eq!(claim_of(&world.solve(), small).min_values_relaxed, None);
}

/// provisioning/suite_test.go "should schedule even when zone minValues
/// requirement is not met": a NodePool asking for 4 zones of a catalog
/// with 3 has no type under Strict (its pre-filter drops the template);
/// under BestEffort its NodeClaims keep every zone, minValues 3.
#[test]
fn min_values_best_effort_keeps_a_template_short_of_zones() {
    use crate::karpenter::provisioning::MinValuesPolicy;
    let spec = "      requirements: [{key: topology.kubernetes.io/zone, operator: Exists, minValues: 4}]\n";
    let mut world = World::fake(pool("default", "", spec).0, 4);
    let p = world.add_pending(pod(100, 100));
    let result = world.solve();
    assert!(
        error_of(&result, p).contains("minValues"),
        "{:?}",
        result.errors
    );

    world.policies.min_values = MinValuesPolicy::BestEffort;
    let result = world.solve();
    let claim = claim_of(&result, p);
    assert_eq!(claim.min_values_relaxed, Some(true));
    let zones = claim.requirements.get(LABEL_TOPOLOGY_ZONE).unwrap();
    assert_eq!(zones.min_values(), Some(3));
}

/// A solve given its pods as presorted runs (a disruption pass's pending
/// pods and deleting nodes' pods, built once, plus a candidate's) takes
/// them in the same order as one given the list, so it places, fails and
/// stops the same, full or stopped, wherever the runs are cut.
#[test]
fn presorted_runs_solve_as_the_pod_list() {
    let mut world = World::fake(pool("default", "", "").0, 8);
    let room = Resources::cpu_mem(4000, 8 * GIB);
    let node = world.add_node("n1", &[(LABEL_NODEPOOL, "default")], room, true);
    let mut pods = Vec::new();
    for (i, (cpu, mem)) in [
        (1500, 512),
        (250, 2048),
        (1500, 256),
        (3000, 64),
        (750, 1024),
    ]
    .into_iter()
    .cycle()
    .take(12)
    .enumerate()
    {
        pods.push(match i % 3 {
            0 => world.add_running(pod(cpu, mem), node),
            _ => world.add_pending(pod(cpu, mem)),
        });
    }
    let stops = [
        StopEarly::default(),
        StopEarly {
            at_new_nodeclaims: Some(2),
            ..StopEarly::default()
        },
        StopEarly {
            at_new_nodeclaims: Some(1),
            bound_pods_must_fit: true,
            ..StopEarly::default()
        },
    ];
    let full = world.solve_stopping(&pods, stops[0]);
    assert!(full.new_nodeclaims.len() >= 2, "{full:?}");
    assert!(full.stopped_on.is_none());
    assert!(world.solve_stopping(&pods, stops[1]).stopped_on.is_some());
    assert!(world.solve_stopping(&pods, stops[2]).stopped_on.is_some());
    for stop in stops {
        let listed = world.solve_stopping(&pods, stop);
        for (a, b) in [(0, 0), (4, 9), (0, 12), (7, 7), (12, 12)] {
            let presorted =
                world.solve_stopping_presorted(&[&pods[..a], &pods[b..]], &pods[a..b], stop);
            assert_eq!(presorted, listed, "runs cut at {a}..{b}, {stop:?}");
        }
    }
}

/// A solve asked to stop at two new NodeClaims (consolidation asking only
/// whether fewer would do) stops when the second opens; with `minValues`
/// on a NodePool it runs on, since a claim short of them would be dropped
/// at the end and the count could fall back.
#[test]
fn solve_stops_at_the_asked_number_of_new_nodeclaims() {
    let count_claims = |template_extra: &str, stop_at: Option<usize>| {
        let mut world = World::fake(pool("default", "", template_extra).0, 8);
        for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
            let mut spec = pod(100, 100);
            spec.node_selector
                .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
            world.add_pending(spec);
        }
        let result = world.solve_stopping(
            &world.pending,
            StopEarly {
                at_new_nodeclaims: stop_at,
                ..StopEarly::default()
            },
        );
        result.new_nodeclaims.len()
    };
    assert_eq!(count_claims("", None), 3);
    assert_eq!(count_claims("", Some(2)), 2);
    let min_values = "      requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 2}]\n";
    assert_eq!(count_claims(min_values, Some(2)), 3);
}

/// A solve asked to stop once its first new NodeClaim cannot undercut a
/// price (consolidation asking only whether one cheaper NodeClaim would do)
/// stops right after opening it when none of its options has a cheap
/// enough offering, and runs on otherwise. Three 6-CPU pods pinned to three
/// zones open a claim each; only fake-it-6 and -7 fit one, on-demand at
/// 7 × and 8 × $0.3147 ($2.20, $2.52), spot here at half that ($1.10,
/// $1.26).
#[test]
fn solve_stops_once_the_first_claim_cannot_undercut_a_price() {
    let count_claims = |template_extra: &str, first_on_demand: bool, price: i64, spot: bool| {
        let mut world = World::new(vec![(
            pool("default", "", template_extra).0,
            half_price_spot_catalog(),
        )]);
        for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
            let mut spec = pod(6000, 100);
            spec.node_selector
                .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
            if first_on_demand && zone == "test-zone-1" {
                spec.node_selector
                    .insert(LABEL_CAPACITY_TYPE.into(), "on-demand".into());
            }
            world.add_pending(spec);
        }
        let stop = StopEarly {
            unless_cheaper_than: Some(PriceToBeat {
                price: Price::from_micros(price),
                spot,
            }),
            ..StopEarly::default()
        };
        let result = world.solve_stopping(&world.pending, stop);
        result.new_nodeclaims.len()
    };
    // Some option undercuts: on-demand $2.20 < $3, spot $1.10 < $2.
    assert_eq!(count_claims("", false, 3_000_000, false), 3);
    assert_eq!(count_claims("", false, 2_000_000, true), 3);
    // None does: spot not counted, or not allowed by the first pod, or
    // nothing below $1.
    assert_eq!(count_claims("", false, 2_000_000, false), 1);
    assert_eq!(count_claims("", true, 2_000_000, true), 1);
    assert_eq!(count_claims("", false, 1_000_000, true), 1);
    // minValues: the solve runs on.
    let min_values = "      requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 2}]\n";
    assert_eq!(count_claims(min_values, false, 1_000_000, true), 3);
}

/// Eight fake types (fake-it-i: i + 1 CPUs, on-demand at (i + 1) ×
/// $0.3147) with spot at half the on-demand price in zones 1 and 2.
fn half_price_spot_catalog() -> Catalog {
    let mut catalog = crate::cloud::fake::instance_types(8);
    let types: Vec<(String, Price)> = catalog
        .instance_types()
        .iter()
        .map(|t| (t.name().to_string(), t.on_demand_price))
        .collect();
    for (name, od) in types {
        for zone in ["test-zone-1", "test-zone-2"] {
            let half = Price::from_micros(od.micros() / 2);
            assert!(catalog.set_offering_price(&name, zone, CapacityType::Spot, half));
        }
    }
    catalog
}

/// With `bound_pods_must_fit`, a pod moved off a node (bound) that finds no
/// existing node or open claim ends the solve with its error, without a
/// claim being built, when any claim it could open would reach a stop:
/// a 6-CPU pod (only fake-it-6 and -7 fit it: spot $1.10 and $1.26) under
/// a $1 price to beat, or the pod that would open the second claim under
/// `at_new_nodeclaims: 2`. A pod whose chances can grow (here a preferred
/// node affinity left to relax), an unbound (pending) pod, or a price an
/// option with room undercuts opens the claim as before.
#[test]
fn bound_pods_that_can_only_reach_a_stop_end_the_solve() {
    // (claims, erroring pods) of a solve placing pods of `specs` moved off
    // a deleted node (or pending) under the given stops.
    let solve_moved = |specs: Vec<PodSpec>, bound: bool, stop: StopEarly| {
        let mut world = World::new(vec![(default_pool(), half_price_spot_catalog())]);
        let room = Resources::cpu_mem(16_000, 32 * GIB).with(ResourceKind::Pods, 50);
        let old = world.add_node("old", &[(LABEL_NODEPOOL, "default")], room, true);
        let pods: Vec<PodId> = specs
            .into_iter()
            .map(|spec| {
                if bound {
                    world.add_running(spec, old)
                } else {
                    world.add_pending(spec)
                }
            })
            .collect();
        world.cluster.node_mut(old).unwrap().marked_for_deletion = true;
        let result = world.solve_stopping(&pods, stop);
        (result.new_nodeclaims.len(), result.errors.len())
    };
    let under = |price: i64| StopEarly {
        at_new_nodeclaims: Some(2),
        unless_cheaper_than: Some(PriceToBeat {
            price: Price::from_micros(price),
            spot: true,
        }),
        bound_pods_must_fit: true,
        not_on_uninitialized: &[],
    };
    let big = || pod(6000, 100);
    assert_eq!(solve_moved(vec![big()], true, under(1_000_000)), (0, 1));
    let without = StopEarly {
        bound_pods_must_fit: false,
        ..under(1_000_000)
    };
    assert_eq!(solve_moved(vec![big()], true, without), (1, 0));
    assert_eq!(solve_moved(vec![big()], false, under(1_000_000)), (1, 0));
    assert_eq!(solve_moved(vec![big()], true, under(2_000_000)), (1, 0));
    let mut relaxable = big();
    relaxable.node_affinity.preferred = vec![WeightedNodeSelectorTerm {
        weight: 10,
        expressions: vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["test-zone-2"])],
    }];
    assert_eq!(solve_moved(vec![relaxable], true, under(1_000_000)), (1, 0));
    // Two pods that cannot share a node: the second would open a second
    // claim (each undercuts $10).
    let apart = |zone: &str| {
        let mut spec = big();
        spec.node_selector
            .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
        spec
    };
    let two = || vec![apart("test-zone-1"), apart("test-zone-2")];
    assert_eq!(solve_moved(two(), true, under(10_000_000)), (1, 1));
    assert_eq!(solve_moved(two(), false, under(10_000_000)), (2, 0));
}

/// A pod listed in `not_on_uninitialized` placed on a node that has not
/// finished initializing ends the solve with that placement: of three
/// 1-CPU pods (queue order: the 1.5-CPU one first) moved off a deleted node
/// while an uninitialized node has room, the solve stops after the first
/// listed pod lands there; unlisted pods land there and the solve goes on.
#[test]
fn a_listed_pod_on_an_uninitialized_node_ends_the_solve() {
    let placed = |listed: &[usize]| {
        let mut world = World::fake(default_pool(), 8);
        let room = Resources::cpu_mem(16_000, 32 * GIB).with(ResourceKind::Pods, 50);
        let old = world.add_node("old", &[(LABEL_NODEPOOL, "default")], room, true);
        let fresh = world.add_node("fresh", &[(LABEL_NODEPOOL, "default")], room, true);
        world.cluster.node_mut(fresh).unwrap().initialized = false;
        let pods: Vec<PodId> = [1500, 1000, 1000]
            .into_iter()
            .map(|cpu| world.add_running(pod(cpu, 100), old))
            .collect();
        world.cluster.node_mut(old).unwrap().marked_for_deletion = true;
        let mut listed: Vec<PodId> = listed.iter().map(|&i| pods[i]).collect();
        listed.sort();
        let result = world.solve_stopping(
            &pods,
            StopEarly {
                not_on_uninitialized: &listed,
                ..StopEarly::default()
            },
        );
        assert!(result.existing.iter().all(|&(_, node)| node == fresh));
        let on_fresh: Vec<usize> = result
            .existing
            .iter()
            .map(|(p, _)| pods.iter().position(|q| q == p).unwrap())
            .collect();
        on_fresh
    };
    assert_eq!(placed(&[]), [0, 1, 2]);
    assert_eq!(placed(&[1]), [0, 1]);
    assert_eq!(placed(&[0, 2]), [0]);
}

/// Capacity-type requirement keeps only matching offerings (instance
/// selection "should schedule on one of the cheapest instances (pod ct =
/// spot)").
#[test]
fn capacity_type_selector_narrows_the_claim() {
    let mut world = World::fake(default_pool(), 4);
    let mut spec = pod(100, 100);
    spec.node_selector
        .insert(LABEL_CAPACITY_TYPE.into(), "spot".into());
    let p = world.add_pending(spec);
    let result = world.solve();
    let claim = claim_of(&result, p);
    let ct = claim.requirements.get(LABEL_CAPACITY_TYPE).unwrap();
    assert!(ct.has("spot") && !ct.has("on-demand"));
}

/// The same input gives the same result (no map order reaches output).
#[test]
fn solve_is_deterministic() {
    let mut world = World::fake(default_pool(), 20);
    for i in 0..30 {
        let mut spec = labeled(
            pod(100 * (i % 5 + 1), 256),
            "app",
            if i % 2 == 0 { "a" } else { "b" },
        );
        spec.topology_spread
            .push(spread(LABEL_TOPOLOGY_ZONE, "a", None));
        world.add_pending(spec);
    }
    assert_eq!(world.solve(), world.solve());
}

/// Views built once and shared: a solve that closes a node gives what a
/// fresh solve gives with that node marked for deletion, and a solve's
/// placements never leak into the shared views (the next solve still sees
/// every node's room).
#[test]
fn shared_existing_views_match_fresh_solves() {
    use crate::karpenter::provisioning::{ExistingNodes, ProvisioningInput, solve_with_existing};
    let mut world = World::fake(default_pool(), 8);
    let room = Resources::cpu_mem(2000, 4 * GIB).with(ResourceKind::Pods, 10);
    let nodes: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| world.add_node(name, &[(LABEL_NODEPOOL, "default")], room, true))
        .collect();
    world.add_running(pod(500, 100), nodes[1]);
    world.add_pendings(4, pod(1200, 100));
    let prepared = world.prepare();
    let shared = ExistingNodes::new(&world.cluster, &world.daemonsets, &prepared);
    let mut placed_on_existing = 0;
    for marked in [None, Some(nodes[0]), Some(nodes[1]), None] {
        let closed: Vec<_> = marked.into_iter().collect();
        let on_shared = |world: &World, closed: &[_]| {
            let input = ProvisioningInput {
                cluster: &world.cluster,
                nodepools: &world.contexts(),
                daemonsets: &world.daemonsets,
                pods: &world.pending,
                node_count_resource: world.node_count_resource,
                policies: world.policies,
            };
            solve_with_existing(&input, &shared, closed)
        };
        let by_closing = on_shared(&world, &closed);
        for &id in &closed {
            world.cluster.node_mut(id).unwrap().marked_for_deletion = true;
        }
        let fresh = world.solve_with(Some(&prepared));
        for &id in &closed {
            world.cluster.node_mut(id).unwrap().marked_for_deletion = false;
        }
        assert_eq!(by_closing, fresh, "closed {marked:?}");
        assert!(
            fresh
                .existing
                .iter()
                .all(|&(_, node)| !closed.contains(&node))
        );
        placed_on_existing += fresh.existing.len();
    }
    // 3 nodes each take one 1.2-CPU pod when all are open, 2 otherwise.
    assert_eq!(placed_on_existing, 3 + 2 + 2 + 3);
}

/// The queue check a kept consolidation verdict relies on follows the
/// solve's queue order (cpu descending, memory descending, then creation):
/// only pods queued before the last of `first` matter, and DaemonSet pods
/// are never queued.
#[test]
fn queue_starts_with_follows_the_solve_queue_order() {
    let mut cluster = Cluster::new();
    let mut add = |name: &str, cpu: i64, mem_mib: i64, kind: OwnerKind| {
        let mut pod = karpsim_model::testing::pod_of(name, "web", kind, "web");
        pod.node = None;
        pod.phase = PodPhase::Pending;
        Arc::make_mut(&mut pod.spec).requests = Resources::cpu_mem(cpu, mem_mib * MIB);
        cluster.add_pod(pod)
    };
    let big = add("big", 2000, 512, OwnerKind::Deployment);
    let mid = add("mid", 1000, 512, OwnerKind::Deployment);
    let small = add("small", 500, 512, OwnerKind::Deployment);
    let daemon = add("daemon", 4000, 512, OwnerKind::DaemonSet);
    let between = add("between", 1500, 512, OwnerKind::Deployment);
    let mid_more_memory = add("mid-more-memory", 1000, 1024, OwnerKind::Deployment);
    let mid_later = add("mid-later", 1000, 512, OwnerKind::Deployment);
    let policies = SchedulingPolicies::default();
    let starts =
        |pods: &[PodId], first: &[PodId]| queue_starts_with(&cluster, pods, policies, first);

    assert!(starts(&[small, mid, big], &[big, mid]));
    assert!(starts(&[small, mid, big], &[]));
    assert!(
        !starts(&[small, mid, big], &[mid, big]),
        "not in queue order"
    );
    assert!(
        !starts(&[small, mid], &[big, mid]),
        "a pod taken then is gone"
    );
    assert!(
        starts(&[small, mid, big, daemon], &[big, mid]),
        "DaemonSet pods never queue"
    );
    assert!(
        !starts(&[small, mid, big, between], &[big, mid]),
        "more cpu queues first"
    );
    assert!(
        !starts(&[mid_more_memory, mid, big], &[big, mid]),
        "then more memory"
    );
    assert!(
        starts(&[mid_later, mid, big], &[big, mid]),
        "then the older pod"
    );
    assert!(starts(&[small, big, mid], &[big, mid, small]));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// The queue check over presorted runs (what a pass's kept verdicts
    /// ask) answers as the check over all the solve's pods does: with
    /// pods in two shared runs and the solve's own, some of them DaemonSet
    /// pods or with invalid node affinity (never taken), and `first` the
    /// true start of the queue, or that start cut, reordered or lengthened
    /// by a pod queued later.
    #[test]
    fn the_presorted_queue_check_agrees_with_the_check_over_every_pod(
        pods in proptest::collection::vec((0..4usize, 0..2usize, 0..8u8, 0..3usize), 0..12),
        taken in 0..14usize,
        change in 0..4u8,
    ) {
        let mut cluster = Cluster::new();
        let mut runs: [Vec<PodId>; 3] = Default::default();
        // Pods of one shape share their spec, as a workload's replicas do.
        let mut shapes: BTreeMap<(usize, usize, u8), Pod> = BTreeMap::new();
        for (i, &(cpu, mem, kind, run)) in pods.iter().enumerate() {
            let shape = shapes.entry((cpu, mem, kind)).or_insert_with(|| {
                let owner = if kind == 0 { OwnerKind::DaemonSet } else { OwnerKind::Deployment };
                let mut pod = karpsim_model::testing::pod_of("shape", "web", owner, "web");
                pod.node = None;
                pod.phase = PodPhase::Pending;
                let spec = Arc::make_mut(&mut pod.spec);
                spec.requests =
                    Resources::cpu_mem([250, 500, 1000, 2000][cpu], [256, 512][mem] * MIB);
                if kind == 1 {
                    spec.node_affinity.required =
                        vec![vec![expr("example.com/size", Operator::Gt, &["large"])]];
                }
                pod
            });
            let mut pod = shape.clone();
            pod.name = format!("p{i}");
            runs[run].push(cluster.add_pod(pod));
        }
        let shared_runs = [QueueRun::new(&cluster, &runs[0]), QueueRun::new(&cluster, &runs[1])];
        let shared: Vec<&QueueRun> = shared_runs.iter().collect();
        let queue = PresortedQueue { shared: &shared, own: &runs[2] };
        let invalid = |id: &PodId| !cluster.pod(*id).unwrap().spec.node_affinity.required.is_empty();
        let order: Vec<PodId> = MergedRuns::new(&cluster, queue).filter(|id| !invalid(id)).collect();
        let mut first: Vec<PodId> = order.iter().copied().take(taken).collect();
        match change {
            1 if first.len() >= 2 => first.swap(0, 1),
            2 if !first.is_empty() => { first.remove(0); }
            3 => first.extend(order.get(taken + 1).copied()),
            _ => {}
        }
        let all: Vec<PodId> = runs.concat();
        let policies = SchedulingPolicies::default();
        let expected = queue_starts_with(&cluster, &all, policies, &first);
        proptest::prop_assert_eq!(
            presorted_queue_starts_with(&cluster, queue, policies, &first),
            expected
        );
        if change == 0 {
            proptest::prop_assert!(expected, "the true start is found");
        }
    }
}

/// A pod whose required node affinity is invalid (`Gt` takes one integer)
/// is never queued: it gets the error naming its term, and the pods around
/// it are placed as if it were not there. Checked with pods made ready as
/// the queue reaches them, and with a spread pod in the batch, which makes
/// every pod ready first.
#[test]
fn a_pod_with_invalid_node_affinity_gets_its_error_and_the_rest_are_placed() {
    for with_spread in [false, true] {
        let mut world = World::fake(default_pool(), 10);
        let big = world.add_pending(pod(1500, 512));
        let mut invalid = pod(3000, 512);
        invalid.node_affinity.required =
            vec![vec![expr("example.com/size", Operator::Gt, &["large"])]];
        let invalid = world.add_pending(invalid);
        let small = world.add_pending(pod(500, 512));
        if with_spread {
            let mut spec = labeled(pod(100, 64), "app", "spread");
            spec.topology_spread = vec![spread(LABEL_TOPOLOGY_ZONE, "spread", None)];
            world.add_pending(spec);
        }
        let result = world.solve();
        assert!(
            error_of(&result, invalid).starts_with("invalid required node affinity:"),
            "{}",
            error_of(&result, invalid)
        );
        claim_of(&result, big);
        claim_of(&result, small);
        assert_eq!(
            result.errors.len(),
            1,
            "only the invalid pod fails: {:?}",
            result.errors
        );
    }
}
