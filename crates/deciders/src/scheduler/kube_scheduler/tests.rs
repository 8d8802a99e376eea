//! `schedule` tests: queue order, scoring, binds within one call, messages.

use super::*;
use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE};
use crate::kube::requirements::Operator;
use crate::kube::resources::GIB;
use crate::kube::taints::{Taint, TaintEffect, Toleration};
use crate::scheduler::testing::{PodBuilder, expression, node};

const LEAST: SchedulerConfig = SchedulerConfig {
    scoring: ScoringStrategy::LeastAllocated,
};
const MOST: SchedulerConfig = SchedulerConfig {
    scoring: ScoringStrategy::MostAllocated,
};

fn add_pods(cluster: &mut Cluster, n: usize, pod: impl Fn(usize) -> PodBuilder) -> Vec<PodId> {
    (0..n).map(|i| cluster.add_pod(pod(i).build())).collect()
}

/// Node name per decision ("-" plus the message when unschedulable).
fn placed(cluster: &Cluster, decisions: &[Decision]) -> Vec<String> {
    decisions
        .iter()
        .map(|d| match d {
            Decision::Bind(_, n) => cluster.node(*n).unwrap().name.clone(),
            Decision::Unschedulable(_, msg) => format!("- {msg}"),
        })
        .collect()
}

fn cpu_pod(cpu: i64) -> impl Fn(usize) -> PodBuilder {
    move |i| PodBuilder::new(&format!("p{i}")).requests(cpu, GIB)
}

/// NodeResourcesFit LeastAllocated (default) spreads: each pod goes to the
/// emptier node, so four equal pods alternate over two equal nodes (ties
/// to the first name).
#[test]
fn least_allocated_spreads() {
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").build());
    cluster.add_node(node("b").build());
    let pods = add_pods(&mut cluster, 4, cpu_pod(500));
    let decisions = schedule(&cluster, &pods, &LEAST);
    assert_eq!(placed(&cluster, &decisions), ["a", "b", "a", "b"]);
}

/// NodeResourcesFit MostAllocated packs: after the first bind the fuller
/// node wins, so all pods share one node while they fit.
#[test]
fn most_allocated_packs() {
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").cpu_mem(2000, 16 * GIB).build());
    cluster.add_node(node("b").cpu_mem(2000, 16 * GIB).build());
    let pods = add_pods(&mut cluster, 5, cpu_pod(500));
    let decisions = schedule(&cluster, &pods, &MOST);
    assert_eq!(placed(&cluster, &decisions), ["a", "a", "a", "a", "b"]);
}

/// PrioritySort: higher priority first, then creation order; with room for
/// one pod the later, higher-priority pod wins. Decisions come in queue
/// order.
#[test]
fn queue_order_is_priority_then_creation() {
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").cpu_mem(1000, 16 * GIB).build());
    let low = cluster.add_pod(PodBuilder::new("low").requests(600, 0).build());
    let high = cluster.add_pod(
        PodBuilder::new("high")
            .requests(600, 0)
            .priority(1000)
            .build(),
    );
    let decisions = schedule(&cluster, &[low, high], &LEAST);
    assert_eq!(decisions[0], Decision::Bind(high, NodeId(0)));
    assert_eq!(
        decisions[1],
        Decision::Unschedulable(low, "0/1 nodes are available: 1 Insufficient cpu.".into())
    );
}

/// FitError format: `0/N nodes are available: ` + "<count> <reason>"
/// entries sorted as strings, comma-separated, then a period. Unregistered
/// NodeClaims are not nodes to kube-scheduler and are not counted; a node
/// short of two resources counts under both.
#[test]
fn unschedulable_message_counts_reasons() {
    let mut cluster = Cluster::new();
    for i in 0..3 {
        cluster.add_node(node(&format!("small-{i}")).cpu_mem(500, 16 * GIB).build());
    }
    for i in 0..2 {
        let gpu = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
        cluster.add_node(node(&format!("gpu-{i}")).taint(gpu).build());
    }
    cluster.add_node(node("launching").unregistered().build());
    let pod = cluster.add_pod(PodBuilder::new("p").requests(1000, GIB).build());
    let decisions = schedule(&cluster, &[pod], &LEAST);
    assert_eq!(
        placed(&cluster, &decisions),
        [
            "- 0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient cpu."
        ]
    );

    let mut cluster = Cluster::new();
    cluster.add_node(node("tiny").cpu_mem(500, GIB).build());
    cluster.add_node(node("gone").deleting().build());
    let pod = cluster.add_pod(PodBuilder::new("p").requests(1000, 2 * GIB).build());
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &[pod], &LEAST)),
        [
            "- 0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable."
        ]
    );

    let mut empty = Cluster::new();
    let pod = empty.add_pod(PodBuilder::new("p").build());
    assert_eq!(
        schedule(&empty, &[pod], &LEAST),
        [Decision::Unschedulable(pod, NO_NODES_MESSAGE.into())]
    );
}

/// Nodes without the pod's cpu, memory or pod slots free are skipped while
/// feasible nodes are sought, but when none is found the message still
/// counts each under its first failing plugin (here taint, cordon and
/// node affinity come before NodeResourcesFit), as kube-scheduler's
/// FitError does; and a node with room for exactly two pods takes both.
#[test]
fn nodes_short_of_room_are_counted_by_their_first_failing_plugin() {
    let mut cluster = Cluster::new();
    let gpu = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
    cluster.add_node(node("tainted").cpu_mem(500, GIB).taint(gpu).build());
    cluster.add_node(node("cordoned").cpu_mem(500, GIB).deleting().build());
    cluster.add_node(node("elsewhere").cpu_mem(500, GIB).zone("b").build());
    cluster.add_node(node("small").cpu_mem(500, GIB).zone("a").build());
    let pod = cluster.add_pod(
        PodBuilder::new("p")
            .requests(1000, GIB)
            .node_selector(LABEL_TOPOLOGY_ZONE, "a")
            .build(),
    );
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &[pod], &LEAST)),
        [
            "- 0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable."
        ]
    );

    let mut cluster = Cluster::new();
    cluster.add_node(node("pair").cpu_mem(1000, 2 * GIB).build());
    let pods = add_pods(&mut cluster, 3, |i| {
        PodBuilder::new(&format!("half-{i}")).requests(500, GIB)
    });
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &pods, &MOST)),
        [
            "pair",
            "pair",
            "- 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
        ]
    );
}

/// Binds within one call count for later pods: resources, host ports,
/// hostname anti-affinity and zone spread all see earlier decisions.
#[test]
fn binds_within_a_call_update_later_decisions() {
    // Resources: the second 600m pod no longer fits the 1000m node.
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").cpu_mem(1000, 16 * GIB).build());
    let pods = add_pods(&mut cluster, 2, cpu_pod(600));
    let d = schedule(&cluster, &pods, &MOST);
    assert_eq!(
        placed(&cluster, &d),
        ["a", "- 0/1 nodes are available: 1 Insufficient cpu."]
    );

    // Host ports: one exporter per node even under MostAllocated.
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").build());
    cluster.add_node(node("b").build());
    let pods = add_pods(&mut cluster, 2, |i| {
        PodBuilder::new(&format!("exporter-{i}")).host_port(9100)
    });
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &pods, &MOST)),
        ["a", "b"]
    );

    // Anti-affinity on hostname: two nodes, three replicas.
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").build());
    cluster.add_node(node("b").build());
    let pods = add_pods(&mut cluster, 3, |i| {
        PodBuilder::new(&format!("web-{i}"))
            .label("app", "web")
            .anti_affinity(LABEL_HOSTNAME, &[("app", "web")])
    });
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &pods, &MOST)),
        [
            "a",
            "b",
            "- 0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
        ]
    );

    // Zone spread, maxSkew 1 over three zones with two nodes each: six
    // replicas land two per zone even when MostAllocated would pack.
    let mut cluster = Cluster::new();
    for z in ["z1", "z2", "z3"] {
        for n in 0..2 {
            cluster.add_node(node(&format!("{z}-{n}")).zone(z).build());
        }
    }
    let pods = add_pods(&mut cluster, 6, |i| {
        PodBuilder::new(&format!("web-{i}"))
            .label("app", "web")
            .requests(100, GIB)
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
    });
    let names = placed(&cluster, &schedule(&cluster, &pods, &MOST));
    let zone_of = |name: &String| name[..2].to_string();
    let mut per_zone = std::collections::BTreeMap::new();
    for n in &names {
        *per_zone.entry(zone_of(n)).or_insert(0) += 1;
    }
    assert_eq!(per_zone.into_values().collect::<Vec<_>>(), [2, 2, 2]);
    // MostAllocated still packs within each zone.
    assert!(names.iter().all(|n| n.ends_with("-0")), "{names:?}");
}

/// NodeAffinity Score (weight 2, normalised) outweighs LeastAllocated
/// differences: the preferred node wins although it is busier.
#[test]
fn preferred_node_affinity_steers() {
    let mut cluster = Cluster::new();
    let ssd = cluster.add_node(node("ssd").label("disk", "ssd").build());
    cluster.add_node(node("hdd").label("disk", "hdd").build());
    let busy = cluster.add_pod(PodBuilder::new("busy").requests(2000, 8 * GIB).build());
    cluster.bind(busy, ssd);
    let pod = cluster.add_pod(
        PodBuilder::new("p")
            .requests(100, GIB)
            .preferred_term(50, vec![expression("disk", Operator::In, &["ssd"])])
            .build(),
    );
    // ssd: fit (47 + 43)/2 = 45, affinity 100·2 → 245 + taints 300.
    // hdd: fit (97 + 93)/2 = 95, affinity 0 → 95 + 300.
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &[pod], &LEAST)),
        ["ssd"]
    );
}

/// TaintToleration Score: an untolerated PreferNoSchedule taint costs the
/// node (weight 3) but does not filter it; tolerating it removes the cost.
#[test]
fn prefer_no_schedule_penalises_without_blocking() {
    let mut cluster = Cluster::new();
    let soft = Taint::new("spot", "true", TaintEffect::PreferNoSchedule);
    cluster.add_node(node("a-spot").taint(soft).build());
    cluster.add_node(node("b-plain").cpu_mem(1000, GIB).build());
    let pods = add_pods(&mut cluster, 1, cpu_pod(100));
    // a-spot: fit (97 + 93)/2 = 95, taints 0; b-plain: fit (90 + 0)/2 = 45,
    // taints 100·3: the emptier spot node loses.
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &pods, &LEAST)),
        ["b-plain"]
    );
    // With b-plain full, the spot node still takes pods.
    let big = add_pods(&mut cluster, 1, cpu_pod(2000));
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &big, &MOST)),
        ["a-spot"]
    );
    let tolerant = cluster.add_pod(
        PodBuilder::new("t")
            .requests(100, 0)
            .toleration(Toleration::equal("spot", "true", None))
            .build(),
    );
    // Tolerated: both score 300 on taints; LeastAllocated prefers the big node.
    assert_eq!(
        placed(&cluster, &schedule(&cluster, &[tolerant], &LEAST)),
        ["a-spot"]
    );
}

/// Equal scores go to the node whose name sorts first, whatever the node
/// order (kube-scheduler would pick at random).
#[test]
fn ties_go_to_the_first_name() {
    let mut cluster = Cluster::new();
    cluster.add_node(node("b").build());
    cluster.add_node(node("a").build());
    let pods = add_pods(&mut cluster, 1, cpu_pod(100));
    assert_eq!(placed(&cluster, &schedule(&cluster, &pods, &LEAST)), ["a"]);
}

/// Pods already bound, finished, unknown or listed twice get no (second)
/// decision.
#[test]
fn only_pending_pods_are_decided_once() {
    let mut cluster = Cluster::new();
    let a = cluster.add_node(node("a").build());
    let bound = cluster.add_pod(PodBuilder::new("bound").build());
    cluster.bind(bound, a);
    let pending = cluster.add_pod(PodBuilder::new("p").build());
    let decisions = schedule(&cluster, &[bound, pending, pending, PodId(99)], &LEAST);
    assert_eq!(decisions, [Decision::Bind(pending, a)]);
}

/// InterPodAffinity within a call: the first pod of a self-affine group
/// may go anywhere; the next ones follow it into its zone although
/// LeastAllocated alone would spread them.
#[test]
fn self_affine_group_follows_its_first_pod() {
    let mut cluster = Cluster::new();
    for z in ["z1", "z2"] {
        cluster.add_node(node(&format!("{z}-a")).zone(z).build());
    }
    let pods = add_pods(&mut cluster, 3, |i| {
        PodBuilder::new(&format!("cache-{i}"))
            .label("app", "cache")
            .requests(500, GIB)
            .affinity(LABEL_TOPOLOGY_ZONE, &[("app", "cache")])
    });
    let names = placed(&cluster, &schedule(&cluster, &pods, &LEAST));
    assert_eq!(names, ["z1-a", "z1-a", "z1-a"]);
}

/// Pods of one template that find no node get the message a pod of that
/// spec gets alone, and a bind in between is seen by the next one (its
/// message then names the cpu the bind took, too).
#[test]
fn pods_sharing_a_spec_fail_alike_until_a_bind() {
    let mut cluster = Cluster::new();
    cluster.add_node(node("a").cpu_mem(2000, 4 * GIB).build());
    let big = PodBuilder::new("big-0").requests(1500, 8 * GIB).build();
    let copy = |name: &str| {
        let mut pod = big.clone();
        pod.name = name.to_string();
        pod
    };
    let big0 = cluster.add_pod(copy("big-0"));
    let big1 = cluster.add_pod(copy("big-1"));
    let small = cluster.add_pod(PodBuilder::new("small").requests(1000, GIB).build());
    let big2 = cluster.add_pod(copy("big-2"));
    let decisions = schedule(&cluster, &[big0, big1, small, big2], &LEAST);
    let alone = |cluster: &Cluster, pod: PodId| placed(cluster, &schedule(cluster, &[pod], &LEAST));
    let before = alone(&cluster, big0);
    assert_eq!(
        before,
        ["- 0/1 nodes are available: 1 Insufficient memory."]
    );
    let mut after_small = cluster.clone();
    after_small.bind(small, NodeId(0));
    let after = alone(&after_small, big2);
    assert_eq!(
        after,
        ["- 0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."]
    );
    let got = placed(&cluster, &decisions);
    assert_eq!(got, [&before[0], &before[0], "a", &after[0]]);
}

/// A scan over many nodes is split over the current rayon pool's threads:
/// the decisions, messages included, are those of one thread. 600 nodes of
/// five kinds (small, tainted, zoned, roomy, unschedulable) in a mixed
/// order; pods that bind, spread over zones and fail.
#[test]
fn split_node_scans_decide_as_one_thread() {
    let mut cluster = Cluster::new();
    for i in 0..600 {
        let name = format!("n{:03}", (i * 7) % 600);
        let builder = match i % 5 {
            0 => node(&name).cpu_mem(500, 16 * GIB),
            1 => node(&name).taint(Taint::new("dedicated", "gpu", TaintEffect::NoSchedule)),
            2 => node(&name).zone(["a", "b", "c"][i % 3]),
            3 => node(&name).cpu_mem(4000 + 100 * (i as i64 % 7), 32 * GIB),
            _ => node(&name).deleting(),
        };
        cluster.add_node(builder.build());
    }
    let mut pods = add_pods(&mut cluster, 40, cpu_pod(900));
    pods.extend(add_pods(&mut cluster, 10, |i| {
        PodBuilder::new(&format!("spread-{i}"))
            .label("app", "spread")
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "spread")])
    }));
    pods.extend(add_pods(&mut cluster, 3, |i| {
        PodBuilder::new(&format!("huge-{i}")).requests(64_000, GIB)
    }));
    let on_threads = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| placed(&cluster, &schedule(&cluster, &pods, &LEAST)))
    };
    let one = on_threads(1);
    assert!(
        one.iter().any(|p| p.starts_with("- 0/600 nodes")),
        "{one:?}"
    );
    assert!(one.iter().filter(|p| !p.starts_with('-')).count() >= 40);
    assert_eq!(on_threads(4), one);
}

/// A memo kept across calls changes no decision: after each change to the
/// cluster (a node cordoned, tainted, added, removed), a pod that still
/// finds no node gets the message a fresh call gives, counted from every
/// node; a node that took a pod earlier in the same call is judged as it
/// is now (here a host port the earlier pod took, which NodePorts reports
/// before NodeResourcesFit); a node that now has room is found; and a
/// template is forgotten after a call that scans none of its pods.
#[test]
fn remembered_failures_follow_every_change() {
    let mut cluster = Cluster::new();
    let small: Vec<NodeId> = (0..4)
        .map(|i| cluster.add_node(node(&format!("small-{i}")).cpu_mem(800, 4 * GIB).build()))
        .collect();
    let wide = PodBuilder::new("wide").requests(1000, GIB).host_port(8080);
    let pod = cluster.add_pod(wide.build());
    let mut memo = FailureMemo::default();
    let mut same_as_fresh = |cluster: &Cluster, pending: &[PodId]| {
        let remembered = schedule_remembering(
            cluster,
            pending,
            &LEAST,
            &mut memo,
            &mut NodeSums::default(),
            &mut MessageCache::default(),
        );
        assert_eq!(remembered, schedule(cluster, pending, &LEAST));
        (placed(cluster, &remembered), memo.len())
    };
    let (first, _) = same_as_fresh(&cluster, &[pod]);
    assert_eq!(first, ["- 0/4 nodes are available: 4 Insufficient cpu."]);

    cluster.node_mut(small[0]).unwrap().marked_for_deletion = true;
    let gpu = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
    cluster.node_mut(small[1]).unwrap().taints.push(gpu);
    let (changed, kept) = same_as_fresh(&cluster, &[pod]);
    assert_eq!(
        changed,
        [
            "- 0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable, 2 Insufficient cpu."
        ]
    );
    assert_eq!(kept, 1);

    cluster.remove_node(small[3]);
    let busy = cluster.add_node(node("busy").cpu_mem(800, 4 * GIB).build());
    let (changed, _) = same_as_fresh(&cluster, &[pod]);
    assert_eq!(
        changed,
        [
            "- 0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable, 2 Insufficient cpu."
        ]
    );

    // A pod that goes first takes the port on a node the memo has unchanged.
    let first_in_queue = cluster.add_pod(
        PodBuilder::new("port")
            .requests(100, GIB)
            .host_port(8080)
            .priority(10)
            .build(),
    );
    let (decided, _) = same_as_fresh(&cluster, &[first_in_queue, pod]);
    assert_eq!(decided[0], "busy");
    assert!(
        decided[1].contains("1 node(s) didn't have free ports for the requested pod ports"),
        "{decided:?}"
    );
    cluster.bind(first_in_queue, busy);

    // Room at last: the template's pod binds (its scan is kept for the
    // next pod of the template) ...
    cluster.node_mut(small[2]).unwrap().allocatable =
        Resources::cpu_mem(4000, 16 * GIB).with(crate::kube::resources::ResourceKind::Pods, 110);
    let (bound, kept) = same_as_fresh(&cluster, &[pod]);
    assert_eq!(bound, ["small-2"]);
    assert_eq!(kept, 1);
    cluster.bind(pod, small[2]);

    // ... and is forgotten once a call scans none of its pods.
    let other = cluster.add_pod(PodBuilder::new("other").requests(100, GIB).build());
    let (other_bound, kept) = same_as_fresh(&cluster, &[other]);
    assert_eq!(other_bound.len(), 1);
    assert!(!other_bound[0].starts_with('-'), "{other_bound:?}");
    assert_eq!(kept, 0);
}

/// Scoring sums kept across calls change no decision (NodeResourcesFit's
/// LeastAllocated scoring, upstream `least_allocated_test.go`, reads the
/// pods bound to each node): a call whose binds the caller does not apply
/// leaves the kept sums as the cluster has them, so the next call decides
/// the same; binds applied, a pod finished and a pod removed each show in
/// the next call. Pods that request nothing weigh at scoring's defaults.
#[test]
fn kept_scoring_sums_follow_every_change() {
    let mut cluster = Cluster::new();
    let [a, b] =
        ["a", "b"].map(|name| cluster.add_node(node(name).cpu_mem(4000, 16 * GIB).build()));
    let bound_early = cluster.add_pod(PodBuilder::new("early").requests(1500, GIB).build());
    cluster.bind(bound_early, a);
    let mut scheduler = KubeScheduler::new(LEAST);
    let same_as_fresh = |scheduler: &mut KubeScheduler, cluster: &Cluster, pending: &[PodId]| {
        let kept = scheduler.schedule(cluster, pending);
        assert_eq!(kept, schedule(cluster, pending, &LEAST));
        placed(cluster, &kept)
    };
    let pending: Vec<PodId> = (0..2)
        .map(|i| {
            cluster.add_pod(
                PodBuilder::new(&format!("web-{i}"))
                    .requests(1000, GIB)
                    .build(),
            )
        })
        .collect();
    let first = same_as_fresh(&mut scheduler, &cluster, &pending);
    assert_eq!(first, ["b", "b"]);
    // Not applied: b still has nothing on it.
    assert_eq!(same_as_fresh(&mut scheduler, &cluster, &pending), first);

    cluster.bind(pending[0], b);
    cluster.bind(pending[1], b);
    let next = cluster.add_pod(PodBuilder::new("next").requests(1000, GIB).build());
    assert_eq!(same_as_fresh(&mut scheduler, &cluster, &[next]), ["a"]);

    cluster.finish_pod(bound_early, PodPhase::Succeeded);
    let light = cluster.add_pod(PodBuilder::new("light").requests(100, GIB).build());
    assert_eq!(same_as_fresh(&mut scheduler, &cluster, &[light]), ["a"]);

    let no_requests: Vec<PodId> = (0..3)
        .map(|i| cluster.add_pod(PodBuilder::new(&format!("bare-{i}")).build()))
        .collect();
    for &pod in &no_requests {
        cluster.bind(pod, a);
    }
    cluster.remove_pod(pending[0]);
    cluster.remove_pod(pending[1]);
    assert_eq!(same_as_fresh(&mut scheduler, &cluster, &[light]), ["b"]);
}

/// One spec per template, shared by its replicas as a workload's pods
/// share theirs; a template with a spread constraint (on hostname) and
/// one with a host port among them.
fn templates() -> Vec<crate::cluster::Pod> {
    let soft = Toleration::exists("spot", Some(TaintEffect::PreferNoSchedule));
    vec![
        PodBuilder::new("fast")
            .requests(500, GIB)
            .preferred_term(10, vec![expression("tier", Operator::In, &["fast"])])
            .build(),
        PodBuilder::new("ported")
            .requests(1000, GIB)
            .host_port(8080)
            .build(),
        PodBuilder::new("small")
            .requests(250, GIB / 2)
            .toleration(soft)
            .build(),
        PodBuilder::new("spread")
            .requests(300, GIB)
            .label("app", "spread")
            .spread(LABEL_HOSTNAME, 1, &[("app", "spread")])
            .build(),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Pods placed in one call land where pods placed one call at a time
    /// land, each bind applied to the cluster before the next call, with
    /// the same messages: whatever a call keeps from one pod's scan to the
    /// next (a template's feasible nodes after a bind, its failure) decides
    /// as scanning every node afresh does.
    #[test]
    fn one_call_decides_as_one_call_per_pod(
        nodes in proptest::collection::vec((0..3usize, proptest::bool::ANY, proptest::bool::ANY), 1..6),
        pods in proptest::collection::vec(0..4usize, 0..16),
        most in proptest::bool::ANY,
    ) {
        let config = if most { MOST } else { LEAST };
        let mut cluster = Cluster::new();
        for (i, &(size, fast, spot)) in nodes.iter().enumerate() {
            let mut builder = node(&format!("n{i}")).cpu_mem([1000, 2000, 4000][size], 8 * GIB);
            if fast {
                builder = builder.label("tier", "fast");
            }
            if spot {
                builder = builder.taint(Taint::new("spot", "true", TaintEffect::PreferNoSchedule));
            }
            cluster.add_node(builder.build());
        }
        let templates = templates();
        let pending: Vec<PodId> = pods
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let mut pod = templates[t].clone();
                pod.name = format!("{}-{i}", pod.name);
                cluster.add_pod(pod)
            })
            .collect();
        let together = schedule(&cluster, &pending, &config);
        let mut one_by_one = Vec::new();
        let mut applied = cluster.clone();
        for decision in &together {
            let pod = match decision {
                Decision::Bind(pod, _) | Decision::Unschedulable(pod, _) => *pod,
            };
            let [alone] = &schedule(&applied, &[pod], &config)[..] else {
                panic!("one decision per pod");
            };
            if let Decision::Bind(pod, node) = alone {
                applied.bind(*pod, *node);
            }
            one_by_one.push(alone.clone());
        }
        proptest::prop_assert_eq!(together, one_by_one);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// A kept scheduler decides as a fresh call does, call after call on an
    /// evolving cluster: pods of a few templates arrive, some of the
    /// decisions are applied, nodes come, are cordoned, tainted (with one
    /// of three taints), unregistered or go, and bound pods finish, with
    /// calls in between that change nothing (whatever a kept scheduler
    /// remembers of failed scans and scoring sums stands only while what
    /// it read does).
    #[test]
    fn a_kept_scheduler_decides_as_a_fresh_call_after_every_change(
        steps in proptest::collection::vec((0..9u8, 0..4usize, 0..3usize), 1..24),
    ) {
        let mut cluster = Cluster::new();
        let mut kept = KubeScheduler::new(LEAST);
        let templates = templates();
        let mut nodes: Vec<NodeId> = Vec::new();
        let mut bound: Vec<PodId> = Vec::new();
        for (i, &(step, template, size)) in steps.iter().enumerate() {
            match step {
                0 | 1 => {
                    let mut pod = templates[template].clone();
                    pod.name = format!("{}-{i}", pod.name);
                    cluster.add_pod(pod);
                }
                2 => nodes.push(cluster.add_node(
                    node(&format!("n{i}")).cpu_mem([1000, 2000, 4000][size], 8 * GIB).build(),
                )),
                3 => {
                    if let Some(&n) = nodes.get(template) {
                        let node = cluster.node_mut(n).unwrap();
                        node.marked_for_deletion = !node.marked_for_deletion;
                    }
                }
                4 => {
                    if let Some(&pod) = bound.get(template) {
                        cluster.finish_pod(pod, PodPhase::Succeeded);
                        bound.retain(|&p| p != pod);
                    }
                }
                5 => {
                    if let Some(&n) = nodes.get(template) {
                        let node = cluster.node_mut(n).unwrap();
                        // Neighbouring nodes may fail on different taints.
                        if node.taints.is_empty() {
                            let value = ["gpu", "infra", "batch"][size];
                            node.taints.push(Taint::new("dedicated", value, TaintEffect::NoSchedule));
                        } else {
                            node.taints.clear();
                        }
                    }
                }
                6 => {
                    if let Some(&n) = nodes.get(template) {
                        let node = cluster.node_mut(n).unwrap();
                        node.registered = !node.registered;
                    }
                }
                7 if template < nodes.len() => {
                    let n = nodes.remove(template);
                    for pod in cluster.node(n).unwrap().pods.clone() {
                        bound.retain(|&p| p != pod);
                    }
                    cluster.remove_node(n);
                }
                _ => {}
            }
            let pending: Vec<PodId> = cluster.pending_pods().map(|(id, _)| id).collect();
            let decisions = kept.schedule(&cluster, &pending);
            proptest::prop_assert_eq!(&decisions, &schedule(&cluster, &pending, &LEAST));
            // Every other call's binds are applied.
            if i % 2 == 0 {
                for decision in decisions {
                    if let Decision::Bind(pod, node) = decision {
                        cluster.bind(pod, node);
                        bound.push(pod);
                    }
                }
            }
        }
    }
}

/// A kept scan counts neighbouring nodes that failed on different taints
/// apart, and on equal taints (of separate nodes) together, call after
/// call, whether the next call looks only at the changed nodes or at
/// every node (after a node came): each message is a fresh call's.
#[test]
fn kept_scans_count_each_taint_apart() {
    let mut cluster = Cluster::new();
    let taint = |value: &str| Taint::new("dedicated", value, TaintEffect::NoSchedule);
    for (name, value) in [
        ("a", "gpu"),
        ("b", "gpu"),
        ("c", "infra"),
        ("d", "gpu"),
        ("e", "infra"),
    ] {
        cluster.add_node(
            node(name)
                .cpu_mem(4000, 8 * GIB)
                .taint(taint(value))
                .build(),
        );
    }
    let pods = add_pods(&mut cluster, 2, cpu_pod(500));
    let mut kept = KubeScheduler::new(LEAST);
    let expected = "- 0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: infra}, 3 node(s) had untolerated taint {dedicated: gpu}.";
    for call in 0..3 {
        let decisions = kept.schedule(&cluster, &pods);
        assert_eq!(decisions, schedule(&cluster, &pods, &LEAST), "call {call}");
        assert_eq!(
            placed(&cluster, &decisions),
            [expected, expected],
            "call {call}"
        );
    }
    cluster.add_node(node("f").cpu_mem(100, GIB).build());
    for call in 0..2 {
        let decisions = kept.schedule(&cluster, &pods);
        assert_eq!(
            decisions,
            schedule(&cluster, &pods, &LEAST),
            "after a node came, call {call}"
        );
    }
}

/// Nodes that came since a template's kept scan join its list in node id
/// order, between the kept ones or after them.
#[test]
fn nodes_that_came_join_the_kept_scan_in_id_order() {
    let kept = |ids: &[u32]| -> Vec<KeptNode> {
        ids.iter()
            .map(|&id| KeptNode {
                id: NodeId(id),
                revision: u64::from(id),
                reason: None,
            })
            .collect()
    };
    let ids = |nodes: &[KeptNode]| nodes.iter().map(|n| n.id.0).collect::<Vec<_>>();
    let mut nodes = kept(&[1, 4, 7]);
    merge_by_id(&mut nodes, kept(&[0, 5, 9]));
    assert_eq!(ids(&nodes), [0, 1, 4, 5, 7, 9]);
    merge_by_id(&mut nodes, kept(&[10, 12]));
    assert_eq!(ids(&nodes), [0, 1, 4, 5, 7, 9, 10, 12]);
    merge_by_id(&mut nodes, Vec::new());
    assert_eq!(nodes.len(), 8);
}

/// A kept scheduler's free room per node follows the cluster: a node whose
/// pods finished is offered its freed room in the next call (there it
/// scores best), and a node a call picked for a pod whose bind was not
/// applied is offered its whole room again.
#[test]
fn kept_free_room_follows_finished_pods_and_unapplied_binds() {
    let pod = |cluster: &mut Cluster, name: &str, cpu: i64| {
        cluster.add_pod(PodBuilder::new(name).requests(cpu, GIB / 4).build())
    };
    // `a` full but for 500m, `b` empty: a 1000m pod goes to `b`; once
    // `a`'s pod finished, the next 1000m pod goes to the emptier `a`.
    let mut cluster = Cluster::new();
    let a = cluster.add_node(node("a").cpu_mem(4000, 8 * GIB).build());
    let b = cluster.add_node(node("b").cpu_mem(2000, 8 * GIB).build());
    let filler = pod(&mut cluster, "filler", 3500);
    cluster.bind(filler, a);
    let mut kept = KubeScheduler::new(LEAST);
    let first = pod(&mut cluster, "first", 1000);
    assert_eq!(
        kept.schedule(&cluster, &[first]),
        [Decision::Bind(first, b)]
    );
    cluster.bind(first, b);
    cluster.finish_pod(filler, PodPhase::Succeeded);
    let second = pod(&mut cluster, "second", 1000);
    assert_eq!(
        kept.schedule(&cluster, &[second]),
        [Decision::Bind(second, a)]
    );

    // `c` (2000m) scores above half-used `d` (4000m) for a 1500m pod; the
    // call's bind is not applied, so the next call picks `c` again.
    let mut cluster = Cluster::new();
    let c = cluster.add_node(node("c").cpu_mem(2000, 8 * GIB).build());
    let d = cluster.add_node(node("d").cpu_mem(4000, 8 * GIB).build());
    let half = pod(&mut cluster, "half", 2000);
    cluster.bind(half, d);
    let mut kept = KubeScheduler::new(LEAST);
    let wanted = pod(&mut cluster, "wanted", 1500);
    for _ in 0..2 {
        assert_eq!(
            kept.schedule(&cluster, &[wanted]),
            [Decision::Bind(wanted, c)]
        );
    }
}

/// A kept message is handed back only for the same node count and the
/// same tally: other counts, another reason or another taint's value build
/// a new one, and the one built is what `unschedulable_message` says.
#[test]
fn kept_messages_answer_only_the_same_tally() {
    let cluster = Cluster::new();
    let gpu = Taint::new("dedicated", "gpu", TaintEffect::NoSchedule);
    let infra = Taint::new("dedicated", "infra", TaintEffect::NoSchedule);
    let mut cache = MessageCache::default();
    let mut built = 0;
    let mut message = |cache: &mut MessageCache, nodes: usize, failures: &[(Unfit<'_>, usize)]| {
        cache.get(nodes, failures, || {
            built += 1;
            unschedulable_message(&cluster, nodes, failures)
        })
    };
    let tainted = [
        (Unfit::UntoleratedTaint(&gpu), 2),
        (Unfit::Unschedulable, 1),
    ];
    let first = message(&mut cache, 3, &tainted);
    assert_eq!(
        &*first,
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint {dedicated: gpu}."
    );
    let again = message(
        &mut cache,
        3,
        &[
            (Unfit::UntoleratedTaint(&gpu.clone()), 2),
            (Unfit::Unschedulable, 1),
        ],
    );
    assert!(
        Arc::ptr_eq(&first, &again),
        "the same tally, another borrow"
    );
    for (nodes, failures) in [
        (
            4,
            vec![
                (Unfit::UntoleratedTaint(&gpu), 2),
                (Unfit::Unschedulable, 1),
            ],
        ),
        (
            3,
            vec![
                (Unfit::UntoleratedTaint(&gpu), 1),
                (Unfit::Unschedulable, 2),
            ],
        ),
        (
            3,
            vec![
                (Unfit::UntoleratedTaint(&infra), 2),
                (Unfit::Unschedulable, 1),
            ],
        ),
        (
            3,
            vec![(Unfit::UntoleratedTaint(&gpu), 2), (Unfit::NodeAffinity, 1)],
        ),
    ] {
        let other = message(&mut cache, nodes, &failures);
        assert_eq!(&*other, unschedulable_message(&cluster, nodes, &failures));
        assert_ne!(other, first);
    }
    assert_eq!(built, 5);
}
