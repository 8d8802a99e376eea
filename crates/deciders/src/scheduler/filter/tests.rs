//! Filter tests, one group per kube-scheduler plugin. Cases follow the
//! Kubernetes docs and the plugins' own tests (named per test).

use super::*;
use crate::cluster::{Cluster, Pod};
use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE};
use crate::kube::pod::InclusionPolicy;
use crate::kube::resources::{GIB, MIB};
use crate::kube::taints::TaintEffect::{NoExecute, NoSchedule, PreferNoSchedule};
use crate::scheduler::testing::{PodBuilder, expression, node};

/// Runs the full filter for `pod` on every node; returns node name → the
/// failure message (None when it fits).
fn verdicts(cluster: &Cluster, pod: &Pod) -> Vec<(String, Option<String>)> {
    let mut placement = Placement::new(cluster);
    let filter = PodFilter::new(&pod.spec, &mut placement);
    cluster
        .nodes()
        .map(|(id, n)| {
            let verdict = filter.check(&placement, id, n).err().map(|u| u.to_string());
            (n.name.clone(), verdict)
        })
        .collect()
}

/// The names of the nodes `pod` fits.
fn fitting(cluster: &Cluster, pod: &Pod) -> Vec<String> {
    verdicts(cluster, pod)
        .into_iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| n)
        .collect()
}

/// Adds a running pod to `node`.
fn run(cluster: &mut Cluster, node: NodeId, pod: PodBuilder) {
    let id = cluster.add_pod(pod.build());
    cluster.bind(id, node);
}

fn web() -> PodBuilder {
    PodBuilder::new("web").label("app", "web")
}

// --- NodeUnschedulable / node state ---------------------------------------------------------

/// node_unschedulable_test.go: a cordoned node rejects pods unless they
/// tolerate `node.kubernetes.io/unschedulable:NoSchedule`; karpsim cordons
/// nodes marked for deletion and never offers unregistered NodeClaims.
#[test]
fn node_state_rejects_unregistered_and_deleting_nodes() {
    let unregistered = node("a").unregistered().build();
    let deleting = node("b").deleting().build();
    assert_eq!(node_state(&unregistered, &[]), Err(Unfit::NotRegistered));
    assert_eq!(node_state(&deleting, &[]), Err(Unfit::Unschedulable));
    let tolerate = [Toleration::exists(
        UNSCHEDULABLE_TAINT_KEY,
        Some(NoSchedule),
    )];
    assert_eq!(node_state(&deleting, &tolerate), Ok(()));
    assert_eq!(node_state(&node("c").build(), &[]), Ok(()));
    assert_eq!(
        Unfit::Unschedulable.to_string(),
        "node(s) were unschedulable"
    );
}

// --- TaintToleration --------------------------------------------------------------------------

/// taint_toleration_test.go Filter cases: no tolerations vs a NoSchedule
/// taint fails; an Equal toleration on key+value passes; a toleration whose
/// effect differs fails; a PreferNoSchedule taint never blocks; NoExecute
/// blocks like NoSchedule.
#[test]
fn taints_block_unless_tolerated() {
    let dedicated = [Taint::new("dedicated", "user1", NoSchedule)];
    assert_eq!(untolerated_taint(&dedicated, &[]), Some(&dedicated[0]));
    let ok = [Toleration::equal("dedicated", "user1", Some(NoSchedule))];
    assert_eq!(untolerated_taint(&dedicated, &ok), None);
    let wrong_effect = [Toleration::equal("dedicated", "user1", Some(NoExecute))];
    assert_eq!(
        untolerated_taint(&dedicated, &wrong_effect),
        Some(&dedicated[0])
    );
    let prefer = [Taint::new("dedicated", "user1", PreferNoSchedule)];
    assert_eq!(untolerated_taint(&prefer, &[]), None);
    let execute = [Taint::new("evict", "", NoExecute)];
    assert_eq!(untolerated_taint(&execute, &[]), Some(&execute[0]));
}

/// The TaintToleration message names key and value: `{dedicated: gpu}`.
#[test]
fn taint_message_names_key_and_value() {
    let mut cluster = Cluster::new();
    cluster.add_node(
        node("gpu")
            .taint(Taint::new("dedicated", "gpu", NoSchedule))
            .build(),
    );
    cluster.add_node(
        node("soft")
            .taint(Taint::new("spot", "", PreferNoSchedule))
            .build(),
    );
    let v = verdicts(&cluster, &PodBuilder::new("p").build());
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) had untolerated taint {dedicated: gpu}")
    );
    assert_eq!(v[1].1, None, "PreferNoSchedule does not filter");
}

// --- NodeAffinity -----------------------------------------------------------------------------

/// node_affinity_test.go: nodeSelector must match exactly; required terms
/// are OR'ed, expressions AND'ed; NotIn/DoesNotExist hold on a missing
/// label; Gt/Lt compare integers; an empty term matches nothing; the
/// selector and the affinity must both hold.
#[test]
fn node_selector_and_required_affinity() {
    let labels: Labels = [("zone", "a"), ("gen", "5"), (LABEL_HOSTNAME, "n1")]
        .into_iter()
        .collect();
    let matches = |pod: PodBuilder| node_affinity_matches(&pod.build().spec, &labels);
    assert!(matches(PodBuilder::new("p").node_selector("zone", "a")));
    assert!(!matches(PodBuilder::new("p").node_selector("zone", "b")));
    let in_b = vec![expression("zone", Operator::In, &["b"])];
    let in_a = vec![expression("zone", Operator::In, &["a"])];
    assert!(!matches(PodBuilder::new("p").required_term(in_b.clone())));
    assert!(matches(
        PodBuilder::new("p")
            .required_term(in_b.clone())
            .required_term(in_a.clone())
    ));
    assert!(!matches(
        PodBuilder::new("p").required_term(vec![in_a[0].clone(), in_b[0].clone()])
    ));
    assert!(matches(PodBuilder::new("p").required_term(vec![
        expression("disk", Operator::NotIn, &["hdd"]),
        expression("gpu", Operator::DoesNotExist, &[]),
        expression("gen", Operator::Gt, &["4"]),
        expression("gen", Operator::Lt, &["6"]),
    ])));
    assert!(!matches(
        PodBuilder::new("p").required_term(vec![expression("zone", Operator::Gt, &["1"])])
    ));
    assert!(!matches(PodBuilder::new("p").required_term(vec![])));
    assert!(!matches(
        PodBuilder::new("p")
            .node_selector("zone", "b")
            .required_term(in_a)
    ));
}

// --- NodePorts --------------------------------------------------------------------------------

/// node_ports_test.go: same port and protocol conflict; another protocol
/// does not; distinct specific host IPs do not; `0.0.0.0` (or empty)
/// overlaps every IP; port 0 requests nothing.
#[test]
fn host_port_conflicts() {
    let port = |port: i32, protocol: &str, ip: &str| HostPort {
        port,
        protocol: protocol.to_string(),
        host_ip: ip.to_string(),
    };
    let used = [port(8080, "UDP", "127.0.0.1"), port(9090, "TCP", "")];
    let conflicts = |wanted: HostPort| host_ports_conflict(&[wanted], &used);
    assert!(conflicts(port(8080, "UDP", "127.0.0.1")));
    assert!(!conflicts(port(8080, "TCP", "127.0.0.1")));
    assert!(!conflicts(port(8080, "UDP", "127.0.0.2")));
    assert!(conflicts(port(8080, "UDP", "0.0.0.0")));
    assert!(
        conflicts(port(9090, "", "10.0.0.1")),
        "empty protocol is TCP"
    );
    assert!(!conflicts(port(0, "TCP", "")));
}

/// NodePorts through the full filter: a bound pod's host port blocks its
/// node only.
#[test]
fn host_port_filter_uses_bound_pods() {
    let mut cluster = Cluster::new();
    let a = cluster.add_node(node("a").build());
    cluster.add_node(node("b").build());
    run(&mut cluster, a, PodBuilder::new("exporter").host_port(9100));
    let pod = PodBuilder::new("exporter-2").host_port(9100).build();
    let v = verdicts(&cluster, &pod);
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) didn't have free ports for the requested pod ports")
    );
    assert_eq!(v[1].1, None);
}

// --- NodeResourcesFit -------------------------------------------------------------------------

/// fit_test.go: every short resource is reported ("Insufficient cpu",
/// "Insufficient memory"); the pod count reads "Too many pods"; extended
/// resources are named from the cluster's table. Requests already include
/// init and sidecar containers (kube::pod::effective_requests).
#[test]
fn resources_report_each_shortfall() {
    let mut cluster = Cluster::new();
    let fpga = cluster.resource_names.kind_for("example.com/fpga").unwrap();
    let n = node("a")
        .cpu_mem(1000, GIB)
        .resource(ResourceKind::Pods, 1)
        .build();
    let a = cluster.add_node(n);
    run(
        &mut cluster,
        a,
        PodBuilder::new("x").requests(500, 512 * MIB),
    );
    let big = PodBuilder::new("p")
        .requests(600, 600 * MIB)
        .request(fpga, 1)
        .build();
    let node = cluster.node(a).unwrap();
    let Err(Unfit::Resources(short)) = fits_node(&cluster, &big.spec, node) else {
        panic!("expected a resource shortfall");
    };
    assert_eq!(
        Unfit::Resources(short).messages(&cluster.resource_names),
        vec![
            "Insufficient cpu",
            "Insufficient memory",
            "Too many pods",
            "Insufficient example.com/fpga"
        ]
    );
    let small = PodBuilder::new("q").requests(500, 512 * MIB).build();
    let free_slot = node.allocatable.with(ResourceKind::Pods, 2);
    assert!(resource_shortfall(&small.spec.requests, &free_slot, &node.requested).is_empty());
    // A resource over-committed but not requested does not block.
    let overcommitted = Resources::cpu_mem(1500, 0).with(ResourceKind::Pods, 1);
    assert!(resource_shortfall(&Resources::cpu_mem(0, MIB), &free_slot, &overcommitted).is_empty());
}

// --- PodTopologySpread ------------------------------------------------------------------------

fn three_zones() -> (Cluster, [NodeId; 3]) {
    let mut cluster = Cluster::new();
    let ids = ["z1", "z2", "z3"].map(|z| cluster.add_node(node(&format!("n-{z}")).zone(z).build()));
    (cluster, ids)
}

/// Kubernetes docs "Pod Topology Spread Constraints" (maxSkew 1 over
/// zones): with 2/1/1 matching pods, the zone holding 2 would reach skew
/// 2; the other zones pass. A node without the zone label fails with the
/// "missing required label" reason.
#[test]
fn spread_max_skew_one_over_three_zones() {
    let (mut cluster, [z1, z2, z3]) = three_zones();
    for n in [z1, z1, z2, z3] {
        run(&mut cluster, n, web());
    }
    cluster.add_node(node("no-zone").build());
    let pod = web()
        .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
        .build();
    let v = verdicts(&cluster, &pod);
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) didn't match pod topology spread constraints")
    );
    assert_eq!((v[1].1.as_deref(), v[2].1.as_deref()), (None, None));
    assert_eq!(
        v[3].1.as_deref(),
        Some("node(s) didn't match pod topology spread constraints (missing required label)")
    );
    // A pod that does not match its own selector adds no skew: 2 + 0 − 1 ≤ 1.
    let other = PodBuilder::new("o")
        .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
        .build();
    assert_eq!(fitting(&cluster, &other), ["n-z1", "n-z2", "n-z3"]);
}

/// Docs "minDomains": with fewer eligible domains than minDomains the
/// global minimum counts as 0, so 1 + 1 − 0 > 1 everywhere.
#[test]
fn spread_min_domains_forces_zero_minimum() {
    let (mut cluster, [z1, z2, _]) = three_zones();
    let z3_node = cluster.nodes().nth(2).map(|(id, _)| id).unwrap();
    cluster.remove_node(z3_node);
    run(&mut cluster, z1, web());
    run(&mut cluster, z2, web());
    let pod = |min: i32| {
        web()
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
            .with_spec(|s| s.topology_spread[0].min_domains = Some(min))
            .build()
    };
    assert!(fitting(&cluster, &pod(3)).is_empty());
    assert_eq!(fitting(&cluster, &pod(2)), ["n-z1", "n-z2"]);
}

/// Docs "Node inclusion policies": with nodeAffinityPolicy Honor (default)
/// domains the pod's node selector excludes do not count toward the
/// minimum; with Ignore they do. nodeTaintsPolicy Honor likewise drops
/// domains whose nodes carry untolerated taints.
#[test]
fn spread_inclusion_policies() {
    let (mut cluster, [_, z2, z3]) = three_zones();
    for n in [z2, z2, z3, z3] {
        run(&mut cluster, n, web());
    }
    let selective = |policy: InclusionPolicy| {
        web()
            .required_term(vec![expression(
                LABEL_TOPOLOGY_ZONE,
                Operator::In,
                &["z2", "z3"],
            )])
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
            .with_spec(|s| s.topology_spread[0].node_affinity_policy = policy)
            .build()
    };
    assert_eq!(
        fitting(&cluster, &selective(InclusionPolicy::Honor)),
        ["n-z2", "n-z3"]
    );
    assert!(fitting(&cluster, &selective(InclusionPolicy::Ignore)).is_empty());

    // Taint z1's node: Ignore (default) still counts z1 (min 0); Honor drops it.
    let z1 = cluster.nodes().next().map(|(id, _)| id).unwrap();
    cluster
        .node_mut(z1)
        .unwrap()
        .taints
        .push(Taint::new("dedicated", "x", NoSchedule));
    let tainted = |policy: InclusionPolicy| {
        web()
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
            .with_spec(|s| s.topology_spread[0].node_taints_policy = policy)
            .build()
    };
    assert!(fitting(&cluster, &tainted(InclusionPolicy::Ignore)).is_empty());
    assert_eq!(
        fitting(&cluster, &tainted(InclusionPolicy::Honor)),
        ["n-z2", "n-z3"]
    );
}

/// PodTopologySpread `matchLabelKeys` (docs: rolling updates): pods of the
/// previous revision do not count, so the new revision spreads on its own.
#[test]
fn spread_match_label_keys_ignore_old_revision() {
    let (mut cluster, [z1, _, _]) = three_zones();
    run(&mut cluster, z1, web().label("rev", "old"));
    run(&mut cluster, z1, web().label("rev", "old"));
    let pod = |keys: Vec<String>| {
        web()
            .label("rev", "new")
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
            .with_spec(|s| s.topology_spread[0].match_label_keys = keys)
            .build()
    };
    assert_eq!(fitting(&cluster, &pod(vec![])), ["n-z2", "n-z3"]);
    assert_eq!(
        fitting(&cluster, &pod(vec!["rev".into()])),
        ["n-z1", "n-z2", "n-z3"]
    );
}

// --- InterPodAffinity -------------------------------------------------------------------------

/// Docs "never co-located in the same node" (anti-affinity on hostname):
/// the node already running a matching pod fails; others pass.
#[test]
fn anti_affinity_one_per_node() {
    let mut cluster = Cluster::new();
    let a = cluster.add_node(node("a").build());
    cluster.add_node(node("b").build());
    run(&mut cluster, a, web());
    let pod = web()
        .anti_affinity(LABEL_HOSTNAME, &[("app", "web")])
        .build();
    let v = verdicts(&cluster, &pod);
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) didn't match pod anti-affinity rules")
    );
    assert_eq!(v[1].1, None);
}

/// interpod_affinity filtering_test.go "existing pod's anti-affinity":
/// a placed pod whose required anti-affinity matches the incoming pod
/// repels it from its whole topology domain (zone here).
#[test]
fn existing_pods_anti_affinity_is_symmetric() {
    let (mut cluster, [z1, _, _]) = three_zones();
    run(
        &mut cluster,
        z1,
        PodBuilder::new("loner").anti_affinity(LABEL_TOPOLOGY_ZONE, &[("app", "web")]),
    );
    let v = verdicts(&cluster, &web().build());
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) didn't satisfy existing pods anti-affinity rules")
    );
    assert_eq!(fitting(&cluster, &web().build()), ["n-z2", "n-z3"]);
    // Other namespaces are not repelled (the term defaults to its own).
    let elsewhere = web().namespace("other").build();
    assert_eq!(fitting(&cluster, &elsewhere).len(), 3);
}

/// Docs pod affinity example: affinity to `security=S1` on zone puts the
/// pod in the zone of an existing S1 pod; pods in another namespace do not
/// count.
#[test]
fn affinity_follows_an_existing_pods_zone() {
    let (mut cluster, [_, z2, z3]) = three_zones();
    run(
        &mut cluster,
        z2,
        PodBuilder::new("s1").label("security", "S1"),
    );
    run(
        &mut cluster,
        z3,
        PodBuilder::new("s1-other")
            .namespace("other")
            .label("security", "S1"),
    );
    let pod = PodBuilder::new("p")
        .affinity(LABEL_TOPOLOGY_ZONE, &[("security", "S1")])
        .build();
    let v = verdicts(&cluster, &pod);
    assert_eq!(
        v[0].1.as_deref(),
        Some("node(s) didn't match pod affinity rules")
    );
    assert_eq!(fitting(&cluster, &pod), ["n-z2"]);
}

/// interpod_affinity filtering_test.go "first pod of a self-affine group":
/// when no pod matches yet and the pod matches its own term, any node with
/// the topology label will do; once a match exists, only its domain.
#[test]
fn self_affine_first_pod_may_schedule() {
    let (mut cluster, [_, z2, _]) = three_zones();
    cluster.add_node(node("no-zone").build());
    let pod = web()
        .affinity(LABEL_TOPOLOGY_ZONE, &[("app", "web")])
        .build();
    assert_eq!(fitting(&cluster, &pod), ["n-z1", "n-z2", "n-z3"]);
    let stranger = PodBuilder::new("s")
        .affinity(LABEL_TOPOLOGY_ZONE, &[("app", "web")])
        .build();
    assert!(
        fitting(&cluster, &stranger).is_empty(),
        "does not match itself"
    );
    run(&mut cluster, z2, web());
    assert_eq!(fitting(&cluster, &pod), ["n-z2"]);
}

/// A required affinity term without a selector matches no pod, so the pod
/// fits nowhere; an anti-affinity term without one repels nothing.
#[test]
fn terms_without_selectors() {
    let (cluster, _) = three_zones();
    let pod = PodBuilder::new("p")
        .affinity(LABEL_TOPOLOGY_ZONE, &[])
        .with_spec(|s| s.pod_affinity.required[0].selector = None)
        .build();
    assert!(fitting(&cluster, &pod).is_empty());
    let pod = PodBuilder::new("p")
        .anti_affinity(LABEL_TOPOLOGY_ZONE, &[])
        .with_spec(|s| s.pod_anti_affinity.required[0].selector = None)
        .build();
    assert_eq!(fitting(&cluster, &pod).len(), 3);
}

/// kube-scheduler runs the plugins in order and reports the first failure:
/// a tainted node that is also too small reports the taint.
#[test]
fn first_failing_plugin_is_reported() {
    let mut cluster = Cluster::new();
    cluster.add_node(
        node("a")
            .cpu_mem(100, GIB)
            .taint(Taint::new("dedicated", "gpu", NoSchedule))
            .build(),
    );
    let pod = PodBuilder::new("p").requests(500, 0).build();
    assert_eq!(
        verdicts(&cluster, &pod)[0].1.as_deref(),
        Some("node(s) had untolerated taint {dedicated: gpu}")
    );
}
