//! Topology spread, pod affinity and anti-affinity (core:
//! pkg/controllers/provisioning/scheduling/topology_test.go).

use std::collections::BTreeMap;

use super::*;
use crate::kube::resources::GIB;

fn zone_counts(result: &SchedulingResult) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for claim in &result.new_nodeclaims {
        *counts
            .entry(zone_of(claim).unwrap_or_default())
            .or_insert(0) += claim.pods.len();
    }
    counts
}

/// topology_test.go "should balance pods across zones (match labels)":
/// six pods with maxSkew 1 over three zones land two per zone.
#[test]
fn spread_across_zones() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.topology_spread
        .push(spread(LABEL_TOPOLOGY_ZONE, "web", None));
    world.add_pendings(6, spec);
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let expected: BTreeMap<String, usize> = ["test-zone-1", "test-zone-2", "test-zone-3"]
        .into_iter()
        .map(|z| (z.to_string(), 2))
        .collect();
    assert_eq!(zone_counts(&result), expected);
}

/// topology_test.go "should balance pods across zones with in-flight
/// nodes": a running matching pod in zone 1 counts, so the first new pods
/// go to zones 2 and 3.
#[test]
fn spread_counts_running_pods() {
    let mut world = World::fake(default_pool(), 8);
    let full = Resources::cpu_mem(100, GIB).with(ResourceKind::Pods, 1);
    let node = world.add_node("n1", &[(LABEL_TOPOLOGY_ZONE, "test-zone-1")], full, true);
    world.add_running(labeled(pod(100, 100), "app", "web"), node);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.topology_spread
        .push(spread(LABEL_TOPOLOGY_ZONE, "web", None));
    world.add_pendings(2, spec);
    let result = world.solve();
    let counts = zone_counts(&result);
    assert_eq!(counts.get("test-zone-1"), None);
    assert_eq!(counts.get("test-zone-2"), Some(&1));
    assert_eq!(counts.get("test-zone-3"), Some(&1));
}

/// topology_test.go "should respect minDomains constraints": minDomains 5
/// with three zones keeps the global minimum at 0, so maxSkew 1 allows one
/// pod per zone and the fourth pod fails.
#[test]
fn min_domains_caps_each_zone() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.topology_spread
        .push(spread(LABEL_TOPOLOGY_ZONE, "web", Some(5)));
    let pods = world.add_pendings(4, spec);
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 3);
    assert!(error_of(&result, pods[3]).contains("topology spread"));
}

/// topology_test.go "should limit spread options by nodeSelector": a pod
/// pinned to zones 1–2 spreads over those two only.
#[test]
fn spread_limited_by_node_selector() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.topology_spread
        .push(spread(LABEL_TOPOLOGY_ZONE, "web", None));
    spec.node_affinity.required.push(vec![expr(
        LABEL_TOPOLOGY_ZONE,
        Operator::In,
        &["test-zone-1", "test-zone-2"],
    )]);
    world.add_pendings(4, spec);
    let result = world.solve();
    let counts = zone_counts(&result);
    assert_eq!(counts.get("test-zone-1"), Some(&2));
    assert_eq!(counts.get("test-zone-2"), Some(&2));
    assert_eq!(counts.get("test-zone-3"), None);
}

/// topology_test.go hostname spread: maxSkew 1 on hostname gives one pod
/// per node.
#[test]
fn hostname_spread_one_per_node() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.topology_spread
        .push(spread(LABEL_HOSTNAME, "web", None));
    world.add_pendings(3, spec);
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 3);
    assert!(result.new_nodeclaims.iter().all(|c| c.pods.len() == 1));
}

/// topology_test.go "should separate nodes using simple pod anti-affinity
/// on hostname".
#[test]
fn hostname_anti_affinity_one_pod_per_node() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "db");
    spec.pod_anti_affinity
        .required
        .push(affinity_term(LABEL_HOSTNAME, "db"));
    world.add_pendings(4, spec);
    let result = world.solve();
    assert_eq!(result.new_nodeclaims.len(), 4);
    assert!(result.new_nodeclaims.iter().all(|c| c.pods.len() == 1));
}

/// A topology spread constraint counts the pods of the pod's own
/// namespace only (Kubernetes' `TopologySpreadConstraint`): pods with the
/// same labels in another namespace, placed first (larger), neither count
/// in the hostname spread nor keep its pods off their claim; the spread's
/// own two pods, at maxSkew 1, take one claim each.
#[test]
fn spread_counts_its_own_namespace_only() {
    let mut world = World::fake(default_pool(), 8);
    let mut own = labeled(pod(100, 100), "app", "db");
    own.topology_spread.push(spread(LABEL_HOSTNAME, "db", None));
    // Spreads of pods nobody runs, which never hold a pod back: enough
    // groups for a solve to look up which groups select a pod.
    for app in ["cache", "queue", "search"] {
        own.topology_spread.push(spread(LABEL_HOSTNAME, app, None));
    }
    let mut other = labeled(pod(200, 100), "app", "db");
    other.namespace = format!("{}-other", own.namespace);
    world.add_pendings(2, other);
    world.add_pendings(2, own.clone());
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let namespaces: Vec<Vec<&str>> = result
        .new_nodeclaims
        .iter()
        .map(|claim| {
            claim
                .pods
                .iter()
                .filter_map(|&p| world.cluster.pod(p).map(|p| p.spec.namespace.as_str()))
                .collect()
        })
        .collect();
    let other = format!("{}-other", own.namespace);
    let own = own.namespace.as_str();
    assert_eq!(
        namespaces,
        vec![vec![other.as_str(), other.as_str(), own], vec![own]],
        "the other namespace's pods and one spread pod share the first claim"
    );
}

/// topology_test.go "should not violate pod anti-affinity on zone": three
/// zone-pinned 2-CPU pods labelled `security=s2` go first (larger), one per
/// zone; the pod that refuses `security=s2` in its zone has nowhere left.
#[test]
fn zone_anti_affinity_after_zone_pinned_pods() {
    let mut world = World::fake(default_pool(), 8);
    let mut pinned = Vec::new();
    for zone in ["test-zone-1", "test-zone-2", "test-zone-3"] {
        let mut spec = labeled(pod(2000, 100), "security", "s2");
        spec.node_selector
            .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
        pinned.push(world.add_pending(spec));
    }
    let mut anti = pod(100, 100);
    let mut term = affinity_term(LABEL_TOPOLOGY_ZONE, "unused");
    term.selector = Some(selector("security", "s2"));
    anti.pod_anti_affinity.required.push(term);
    let refused = world.add_pending(anti);
    let result = world.solve();
    for p in pinned {
        claim_of(&result, p);
    }
    assert!(error_of(&result, refused).contains("pod anti-affinity"));
}

/// topology_test.go inverse anti-affinity ("should not violate pod
/// anti-affinity on zone (other schedules first)"): a running pod that
/// refuses `app=web` in its zone keeps new web pods out of zone 1.
#[test]
fn inverse_anti_affinity_blocks_the_running_pods_zone() {
    let mut world = World::fake(default_pool(), 8);
    let room = Resources::cpu_mem(8000, 16 * GIB).with(ResourceKind::Pods, 50);
    let node = world.add_node("n1", &[(LABEL_TOPOLOGY_ZONE, "test-zone-1")], room, true);
    let mut guard = pod(100, 100);
    guard
        .pod_anti_affinity
        .required
        .push(affinity_term(LABEL_TOPOLOGY_ZONE, "web"));
    world.add_running(guard, node);
    let mut web = labeled(pod(100, 100), "app", "web");
    web.node_selector
        .insert(LABEL_TOPOLOGY_ZONE.into(), "test-zone-1".into());
    let blocked = world.add_pending(web);
    let free = world.add_pending(labeled(pod(100, 100), "app", "web"));
    let result = world.solve();
    assert!(result.existing.is_empty(), "the zone-1 node is off limits");
    assert!(error_of(&result, blocked).contains("pod anti-affinity"));
    let zones = claim_of(&result, free)
        .requirements
        .get(LABEL_TOPOLOGY_ZONE)
        .unwrap();
    assert!(!zones.has("test-zone-1") && zones.has("test-zone-2"));
}

/// topology_test.go "should respect self pod affinity (zone)": the first pod
/// bootstraps a zone, the rest follow it.
#[test]
fn self_affinity_zone_keeps_pods_together() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(1500, 100), "app", "cache");
    spec.pod_affinity
        .required
        .push(affinity_term(LABEL_TOPOLOGY_ZONE, "cache"));
    world.add_pendings(5, spec);
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let zones = zone_counts(&result);
    assert_eq!(zones.len(), 1, "{zones:?}");
    assert_eq!(zones.values().sum::<usize>(), 5);
}

/// topology_test.go "should allow violation of preferred pod anti-affinity":
/// a preferred zonal anti-affinity is dropped once zones run out.
#[test]
fn preferred_anti_affinity_is_relaxed() {
    let mut world = World::fake(default_pool(), 8);
    let mut spec = labeled(pod(100, 100), "app", "web");
    spec.pod_anti_affinity
        .preferred
        .push(crate::kube::pod::WeightedPodAffinityTerm {
            weight: 10,
            term: affinity_term(LABEL_TOPOLOGY_ZONE, "web"),
        });
    world.add_pendings(5, spec);
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(
        result
            .new_nodeclaims
            .iter()
            .map(|c| c.pods.len())
            .sum::<usize>(),
        5
    );
}

/// provisioning/suite_test.go, "Ignore Preferences": "should ignore
/// topologySpreadConstraint preferences" (hostname): three pods with a
/// ScheduleAnyway hostname spread take three NodeClaims under Respect
/// (the spread is required until relaxed, and it is satisfiable) and share
/// one under Ignore.
#[test]
fn ignore_preferences_drops_schedule_anyway_spreads() {
    use crate::karpenter::provisioning::PreferencePolicy;
    use crate::kube::pod::WhenUnsatisfiable;
    let mut spec = labeled(pod(100, 100), "app", "web");
    let mut soft = spread(LABEL_HOSTNAME, "web", None);
    soft.when_unsatisfiable = WhenUnsatisfiable::ScheduleAnyway;
    spec.topology_spread.push(soft);
    for (policy, claims) in [
        (PreferencePolicy::Respect, 3),
        (PreferencePolicy::Ignore, 1),
    ] {
        let mut world = World::fake(default_pool(), 8);
        world.policies.preference = policy;
        world.add_pendings(3, spec.clone());
        let result = world.solve();
        assert!(result.errors.is_empty(), "{:?}", result.errors);
        assert_eq!(result.new_nodeclaims.len(), claims, "{policy:?}");
    }
}

/// provisioning/suite_test.go, "Ignore Preferences": "should ignore node
/// affinity preferences". A 2-vCPU pod pinned to zone 1, two 3-vCPU pods
/// pinned to zone 2 (one NodeClaim each), then a 1-vCPU pod preferring zone
/// 2: under Respect it joins a zone-2 NodeClaim; under Ignore it joins the
/// NodeClaim with the fewest pods, zone 1's.
#[test]
fn ignore_preferences_drops_preferred_node_affinity() {
    use crate::karpenter::provisioning::PreferencePolicy;
    use crate::kube::pod::WeightedNodeSelectorTerm;
    let pinned = |cpu, zone: &str| {
        let mut spec = pod(cpu, 100);
        spec.node_selector
            .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
        spec
    };
    let mut prefers = pod(1000, 100);
    prefers.node_affinity.preferred = vec![WeightedNodeSelectorTerm {
        weight: 1,
        expressions: vec![expr(LABEL_TOPOLOGY_ZONE, Operator::In, &["test-zone-2"])],
    }];
    for (policy, zone) in [
        (PreferencePolicy::Respect, "test-zone-2"),
        (PreferencePolicy::Ignore, "test-zone-1"),
    ] {
        let mut world = World::fake(default_pool(), 4);
        world.policies.preference = policy;
        world.add_pending(pinned(2000, "test-zone-1"));
        world.add_pending(pinned(3000, "test-zone-2"));
        world.add_pending(pinned(3000, "test-zone-2"));
        let p = world.add_pending(prefers.clone());
        let result = world.solve();
        assert!(result.errors.is_empty(), "{:?}", result.errors);
        assert_eq!(
            zone_of(claim_of(&result, p)).as_deref(),
            Some(zone),
            "{policy:?}"
        );
    }
}
