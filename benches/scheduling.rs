//! Provisioning solve benchmark mirroring upstream Karpenter's
//! `scheduling_benchmark_test.go`: one NodePool, 400 fake instance types,
//! the "diverse" pod mix (1/5 generic, 1/5 zonal spread, 1/5 hostname
//! spread, 1/5 zonal self-affinity, 1/5 hostname anti-affinity, remainder
//! generic), one solve per iteration. Prints pods/sec once per size.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use karpsim_deciders::karpenter::provisioning::{NodePoolContext, ProvisioningInput, solve};
use karpsim_deciders::scheduler::{Cluster, OwnerKind, OwnerRef, Pod, PodId, PodPhase};
use karpsim_input::nodepools::load_str;
use karpsim_model::cloud::fake;
use karpsim_model::kube::pod::{
    InclusionPolicy, PodAffinityTerm, PodSpec, TopologySpreadConstraint, WhenUnsatisfiable,
};
use karpsim_model::kube::resources::{MIB, ResourceKind, Resources};
use karpsim_model::kube::selector::LabelSelector;
use karpsim_sim::SimTime;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// The allocator the `karpsim` binary runs every solve with: the solve is
/// timed as the product does it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// A small deterministic generator (upstream seeds math/rand with 42; the
/// exact draws differ, the distribution does not).
struct Rng(u64);

impl Rng {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        &items[(self.0 % items.len() as u64) as usize]
    }
}

fn labels(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_string(), value.to_string())])
}

fn base(rng: &mut Rng, labels: BTreeMap<String, String>) -> PodSpec {
    let cpu = *rng.pick(&[100, 250, 500, 1000, 1500]);
    let mem = *rng.pick(&[100, 256, 512, 1024, 2048, 4096]);
    PodSpec {
        labels,
        requests: Resources::cpu_mem(cpu, mem * MIB).with(ResourceKind::Pods, 1),
        ..PodSpec::default()
    }
}

fn random_label(rng: &mut Rng, key: &str) -> BTreeMap<String, String> {
    let value: &str = rng.pick::<&str>(&["a", "b", "c", "d", "e", "f", "g"]);
    labels(key, value)
}

fn term(key: &str, selector: BTreeMap<String, String>) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: Some(LabelSelector {
            match_labels: selector,
            match_expressions: Vec::new(),
        }),
        topology_key: key.to_string(),
        namespaces: Vec::new(),
        namespace_selector: None,
        match_label_keys: Vec::new(),
        mismatch_label_keys: Vec::new(),
    }
}

fn diverse_pods(count: usize) -> Vec<PodSpec> {
    let mut rng = Rng(42);
    let fifth = count / 5;
    let mut pods = Vec::with_capacity(count);
    for _ in 0..fifth {
        let l = random_label(&mut rng, "my-label");
        pods.push(base(&mut rng, l));
    }
    for key in [ZONE, HOSTNAME] {
        for _ in 0..fifth {
            let l = random_label(&mut rng, "my-label");
            let mut spec = base(&mut rng, l);
            let selector = random_label(&mut rng, "my-label");
            spec.topology_spread.push(TopologySpreadConstraint {
                max_skew: 1,
                topology_key: key.to_string(),
                when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
                selector: Some(LabelSelector {
                    match_labels: selector,
                    match_expressions: Vec::new(),
                }),
                min_domains: None,
                node_affinity_policy: InclusionPolicy::Honor,
                node_taints_policy: InclusionPolicy::Ignore,
                match_label_keys: Vec::new(),
            });
            pods.push(spec);
        }
    }
    for _ in 0..fifth {
        let l = random_label(&mut rng, "my-affininity");
        let mut spec = base(&mut rng, l.clone());
        spec.pod_affinity.required.push(term(ZONE, l));
        pods.push(spec);
    }
    for _ in 0..fifth {
        let l = labels("app", "nginx");
        let mut spec = base(&mut rng, l.clone());
        spec.pod_anti_affinity.required.push(term(HOSTNAME, l));
        pods.push(spec);
    }
    while pods.len() < count {
        let l = random_label(&mut rng, "my-label");
        pods.push(base(&mut rng, l));
    }
    pods
}

struct Setup {
    cluster: Cluster,
    pending: Vec<PodId>,
    pool: karpsim_model::nodepool::NodePool,
    catalog: karpsim_model::cloud::Catalog,
}

fn setup(count: usize) -> Setup {
    let yaml = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  limits: {cpu: \"10000000\", memory: 10000000Gi}\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n";
    let mut manifests = load_str("pool.yaml", yaml).expect("valid NodePool");
    let mut cluster = Cluster::new();
    let pending = diverse_pods(count)
        .into_iter()
        .map(|spec| {
            cluster.add_pod(Pod {
                lifecycle: Default::default(),
                name: String::new(),
                uid: 0,
                spec: Arc::new(spec),
                owner: Some(OwnerRef {
                    kind: OwnerKind::Deployment,
                    name: "bench".into(),
                }),
                node: None,
                phase: PodPhase::Pending,
                created_at: SimTime::ZERO,
                unschedulable: true,
            })
        })
        .collect();
    Setup {
        cluster,
        pending,
        pool: manifests.nodepools.remove(0),
        catalog: fake::instance_types(400),
    }
}

fn run(setup: &Setup) -> usize {
    let contexts = [NodePoolContext {
        pool: &setup.pool,
        catalog: &setup.catalog,
    }];
    let result = solve(&ProvisioningInput {
        cluster: &setup.cluster,
        nodepools: &contexts,
        daemonsets: &[],
        pods: &setup.pending,
        node_count_resource: None,
        policies: Default::default(),
    });
    assert!(
        result.errors.is_empty(),
        "unschedulable: {:?}",
        &result.errors[..1]
    );
    result.new_nodeclaims.len()
}

#[divan::bench(args = [1, 100, 1000, 5000, 10000], sample_count = 3, sample_size = 1)]
fn scheduling(bencher: divan::Bencher, pods: usize) {
    let setup = setup(pods);
    let start = Instant::now();
    let nodes = run(&setup);
    let seconds = start.elapsed().as_secs_f64();
    eprintln!(
        "{pods} pods → {nodes} nodes in {:.3}s ({:.0} pods/sec)",
        seconds,
        pods as f64 / seconds
    );
    bencher.bench(|| run(&setup));
}
