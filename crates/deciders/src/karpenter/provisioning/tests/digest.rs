//! Decision digests: a canonical text of every `solve` result (new
//! NodeClaims with their pods, options, requirements and requests;
//! existing-node placements; error reasons), hashed, for seeded diverse pod
//! mixes. Speed work on the solve must keep these byte-for-byte.
//!
//! The expected digests were produced by the solve as it stood before any
//! performance work (the straightforward implementation: claims re-sorted
//! per pod, every error message formatted eagerly, instance types
//! re-filtered on every attempt), and are not derived by hand; a change to
//! any of them means a decision or a message changed.

use std::fmt::Write;

use super::super::{ProvisioningInput, SchedulingResult};
use super::{World, affinity_term, default_pool, labeled, pod, pool, selector};
use crate::kube::labels::{
    LABEL_CAPACITY_TYPE, LABEL_HOSTNAME, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE,
};
use crate::kube::pod::{
    HostPort, InclusionPolicy, PodSpec, TopologySpreadConstraint, WeightedNodeSelectorTerm,
    WeightedPodAffinityTerm, WhenUnsatisfiable,
};
use crate::kube::requirements::Operator;
use crate::kube::resources::{MIB, ResourceKind, Resources};
use crate::kube::taints::{TaintEffect, Toleration};

/// A xorshift generator, so the mixes are reproducible without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let n = self.next();
        &items[(n % items.len() as u64) as usize]
    }
}

/// The canonical text of a result.
fn canonical(result: &SchedulingResult) -> String {
    let mut text = String::new();
    for claim in &result.new_nodeclaims {
        let _ = writeln!(
            text,
            "claim pool={} requirements={} types={:?} pods={:?} requests={:?}",
            claim.nodepool, claim.requirements, claim.instance_types, claim.pods, claim.requests
        );
    }
    for (pod, node) in &result.existing {
        let _ = writeln!(text, "existing {pod:?} {node:?}");
    }
    for (pod, reason) in &result.errors {
        let _ = writeln!(text, "error {pod:?} {reason}");
    }
    text
}

/// FNV-1a, 64 bits, as 16 hex digits.
fn digest(result: &SchedulingResult) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical(result).bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn base(rng: &mut Rng, key: &str) -> PodSpec {
    let cpu = *rng.pick(&[100, 250, 500, 1000, 1500]);
    let mem = *rng.pick(&[100, 256, 512, 1024, 2048, 4096]);
    let value = *rng.pick(&["a", "b", "c", "d", "e", "f", "g"]);
    labeled(pod(cpu, mem), key, value)
}

fn spread_on(key: &str, rng: &mut Rng, when: WhenUnsatisfiable) -> TopologySpreadConstraint {
    let value = *rng.pick(&["a", "b", "c", "d", "e", "f", "g"]);
    TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.to_string(),
        when_unsatisfiable: when,
        selector: Some(selector("my-label", value)),
        min_domains: None,
        node_affinity_policy: InclusionPolicy::Honor,
        node_taints_policy: InclusionPolicy::Ignore,
        match_label_keys: Vec::new(),
    }
}

/// The benchmark's mix: fifths of generic, zonal spread, hostname spread,
/// zonal self-affinity and hostname anti-affinity pods.
fn bench_mix(world: &mut World, count: usize, seed: u64) {
    let mut rng = Rng(seed);
    let fifth = count / 5;
    for _ in 0..fifth {
        let spec = base(&mut rng, "my-label");
        world.add_pending(spec);
    }
    for key in [LABEL_TOPOLOGY_ZONE, LABEL_HOSTNAME] {
        for _ in 0..fifth {
            let mut spec = base(&mut rng, "my-label");
            spec.topology_spread
                .push(spread_on(key, &mut rng, WhenUnsatisfiable::DoNotSchedule));
            world.add_pending(spec);
        }
    }
    for _ in 0..fifth {
        let mut spec = base(&mut rng, "my-affinity");
        let value = spec.labels["my-affinity"].clone();
        let mut term = affinity_term(LABEL_TOPOLOGY_ZONE, "");
        term.selector = Some(selector("my-affinity", &value));
        spec.pod_affinity.required.push(term);
        world.add_pending(spec);
    }
    for _ in 0..fifth {
        let mut spec = labeled(base(&mut rng, "my-label"), "app", "nginx");
        spec.pod_anti_affinity
            .required
            .push(affinity_term(LABEL_HOSTNAME, "nginx"));
        world.add_pending(spec);
    }
    while world.pending.len() < count {
        let spec = base(&mut rng, "my-label");
        world.add_pending(spec);
    }
}

/// A wider mix on two NodePools (a tainted, limited, heavier one and a
/// general one), a DaemonSet with a host port and two existing nodes:
/// node selectors, preferences that need relaxing, `ScheduleAnyway`
/// spreads, host ports, tolerations, preferred anti-affinity, and pods no
/// NodePool can take.
fn rich_world(count: usize, seed: u64) -> World {
    let dedicated = pool(
        "dedicated",
        "  weight: 50\n  limits: {cpu: \"100\"}\n",
        "      taints: [{key: dedicated, value: web, effect: NoSchedule}]\n",
    )
    .0;
    let general = pool(
        "general",
        "  weight: 10\n",
        "      requirements:\n      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}\n",
    )
    .0;
    let mut world = World::new(vec![
        (dedicated, crate::cloud::fake::instance_types(60)),
        (general, crate::cloud::fake::instance_types(60)),
    ]);
    let mut daemon = pod(100, 128);
    daemon.host_ports.push(HostPort {
        port: 9100,
        protocol: String::new(),
        host_ip: String::new(),
    });
    world.daemonsets.push(std::sync::Arc::new(daemon));
    let node = world.add_node(
        "existing-1",
        &[
            (LABEL_TOPOLOGY_ZONE, "test-zone-1"),
            (LABEL_NODEPOOL, "general"),
        ],
        Resources::cpu_mem(8000, 16384 * MIB).with(ResourceKind::Pods, 40),
        true,
    );
    let mut running = labeled(pod(500, 512), "app", "nginx");
    running
        .pod_anti_affinity
        .required
        .push(affinity_term(LABEL_HOSTNAME, "nginx"));
    world.add_running(running, node);
    world.add_node(
        "existing-2",
        &[(LABEL_TOPOLOGY_ZONE, "test-zone-2")],
        Resources::cpu_mem(4000, 8192 * MIB).with(ResourceKind::Pods, 20),
        false,
    );

    let mut rng = Rng(seed);
    for _ in 0..count {
        let mut spec = base(&mut rng, "my-label");
        match rng.next() % 14 {
            0 | 1 => {}
            2 => spec.topology_spread.push(spread_on(
                LABEL_TOPOLOGY_ZONE,
                &mut rng,
                WhenUnsatisfiable::DoNotSchedule,
            )),
            3 => spec.topology_spread.push(spread_on(
                LABEL_HOSTNAME,
                &mut rng,
                WhenUnsatisfiable::ScheduleAnyway,
            )),
            4 => {
                let app = *rng.pick(&["nginx", "redis"]);
                spec.labels.insert("app".into(), app.into());
                spec.pod_anti_affinity
                    .required
                    .push(affinity_term(LABEL_HOSTNAME, app));
            }
            5 => {
                let app = *rng.pick(&["web", "cache"]);
                spec.labels.insert("app".into(), app.into());
                spec.pod_affinity
                    .required
                    .push(affinity_term(LABEL_TOPOLOGY_ZONE, app));
            }
            6 => {
                let zone = *rng.pick(&["test-zone-1", "test-zone-2", "test-zone-3"]);
                spec.node_selector
                    .insert(LABEL_TOPOLOGY_ZONE.into(), zone.into());
            }
            7 => spec.node_affinity.preferred.push(WeightedNodeSelectorTerm {
                weight: 10,
                expressions: vec![super::expr(
                    LABEL_TOPOLOGY_ZONE,
                    Operator::In,
                    &["no-such-zone"],
                )],
            }),
            8 => {
                spec.tolerations.push(Toleration::equal(
                    "dedicated",
                    "web",
                    Some(TaintEffect::NoSchedule),
                ));
                if rng.next().is_multiple_of(2) {
                    spec.node_selector
                        .insert(LABEL_NODEPOOL.into(), "dedicated".into());
                    spec.labels.insert("app".into(), "solo".into());
                    spec.pod_anti_affinity
                        .required
                        .push(affinity_term(LABEL_HOSTNAME, "solo"));
                }
            }
            9 => spec.host_ports.push(HostPort {
                port: *rng.pick(&[8080, 9100]),
                protocol: String::new(),
                host_ip: String::new(),
            }),
            10 => {
                spec.labels.insert("app".into(), "batch".into());
                spec.pod_anti_affinity
                    .preferred
                    .push(WeightedPodAffinityTerm {
                        weight: 50,
                        term: affinity_term(LABEL_HOSTNAME, "batch"),
                    });
            }
            11 => {
                spec.node_selector
                    .insert(LABEL_CAPACITY_TYPE.into(), "spot".into());
                spec.topology_spread.push(spread_on(
                    LABEL_TOPOLOGY_ZONE,
                    &mut rng,
                    WhenUnsatisfiable::ScheduleAnyway,
                ));
            }
            12 => {
                if rng.next().is_multiple_of(8) {
                    spec.requests =
                        Resources::cpu_mem(500_000, 512 * MIB).with(ResourceKind::Pods, 1);
                }
            }
            _ => {
                if rng.next().is_multiple_of(4) {
                    spec.node_selector.insert("team".into(), "none".into());
                }
            }
        }
        world.add_pending(spec);
    }
    world
}

fn bench_digest(count: usize) -> String {
    let mut world = World::fake(default_pool(), 400);
    bench_mix(&mut world, count, 42);
    let result = world.solve();
    assert!(result.errors.is_empty(), "{:?}", result.errors.first());
    digest(&result)
}

fn rich_digest(count: usize, seed: u64) -> (String, SchedulingResult) {
    let world = rich_world(count, seed);
    let result = world.solve();
    (digest(&result), result)
}

/// The benchmark mix at 50, 500 and 2,000 pods on 400 fake types.
#[test]
fn bench_mix_decisions_unchanged() {
    let digests: Vec<String> = [50, 500, 2000].into_iter().map(bench_digest).collect();
    assert_eq!(
        digests,
        ["e06119925fb174ca", "02186af1aa5168f3", "bd6a4a3405ec3b41"]
    );
}

/// The wider mix at 50, 500 and 2,000 pods; it exercises existing nodes,
/// both NodePools and errors (unknown label, host port, no room, NodePool
/// limits), so a digest here covers every result field.
#[test]
fn rich_mix_decisions_unchanged() {
    let mut digests = Vec::new();
    for (count, seed) in [(50, 7), (500, 11), (2000, 13)] {
        let (digest, result) = rich_digest(count, seed);
        assert!(!result.errors.is_empty(), "{count}: some pods fit nowhere");
        assert!(!result.existing.is_empty(), "{count}: existing nodes used");
        let pools: std::collections::BTreeSet<usize> =
            result.new_nodeclaims.iter().map(|c| c.nodepool).collect();
        assert!(!pools.is_empty(), "{count}: new NodeClaims opened");
        digests.push(digest);
    }
    assert_eq!(
        digests,
        ["a08095b420aae8b6", "3a976e58bc56db25", "6b169148b75b3c05"]
    );
}

/// A kept `Provisioner` answers as a one-shot solve: across batches, after
/// it is told a catalog changed, and after enough node removals to drop its
/// setup's per-node caches.
#[test]
fn a_kept_provisioner_decides_as_a_fresh_solve() {
    use crate::karpenter::provisioning::{PREPARED_NODE_REMOVALS, Provisioner};
    let mut world = rich_world(300, 5);
    let all = world.pending.clone();
    let mut provisioner = Provisioner::new();
    for (step, count) in [300, 40, 300, 7].into_iter().enumerate() {
        world.pending = all[..count].to_vec();
        let input = ProvisioningInput {
            cluster: &world.cluster,
            nodepools: &world.contexts(),
            daemonsets: &world.daemonsets,
            pods: &world.pending,
            node_count_resource: world.node_count_resource,
            policies: world.policies,
        };
        assert_eq!(
            digest(&provisioner.solve(&input)),
            digest(&crate::karpenter::provisioning::solve(&input)),
            "step {step}, {count} pods"
        );
        match step {
            1 => provisioner.catalogs_changed(),
            2 => (0..PREPARED_NODE_REMOVALS).for_each(|_| provisioner.node_removed()),
            _ => {}
        }
    }
}

/// One prepared setup reused across solves of different batches over the
/// same NodePools (its caches fill in on the way) answers exactly as a
/// solve that builds its own, for the rich mix and the benchmark mix.
#[test]
fn prepared_setup_reused_across_solves_changes_nothing() {
    let mut world = rich_world(500, 11);
    let all = world.pending.clone();
    let prepared = world.prepare();
    for count in [500, 40, 250, 500, 7] {
        world.pending = all[..count].to_vec();
        let fresh = world.solve_with(None);
        let reused = world.solve_with(Some(&prepared));
        assert_eq!(digest(&reused), digest(&fresh), "rich, {count} pods");
        assert!(!fresh.new_nodeclaims.is_empty() || !fresh.existing.is_empty());
    }
    let mut world = World::fake(default_pool(), 400);
    bench_mix(&mut world, 300, 42);
    let all = world.pending.clone();
    let prepared = world.prepare();
    for count in [300, 120, 300] {
        world.pending = all[..count].to_vec();
        assert_eq!(
            digest(&world.solve_with(Some(&prepared))),
            digest(&world.solve_with(None)),
            "bench, {count} pods"
        );
    }
}
