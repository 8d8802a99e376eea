//! Benchmarks of `plan` on a cluster of 1,000 nodes and 20,000 pods: a
//! kubectl-shaped snapshot (YAML, as `kubectl get … -o yaml` prints it,
//! without managedFields, which kubectl hides by default) generated in
//! memory: 1,000 Karpenter m5.2xlarge nodes with their NodeClaims, 50
//! Deployments of 400 pods (through their ReplicaSets, 20 pods per node)
//! with a PDB each, and one NodePool. Timed: reading the text, and the
//! decisions on it.

use std::fmt::Write;
use std::sync::Arc;

use karpsim_catalog::BundledCatalog;
use karpsim_input::cluster_snapshot::{self, Snapshot};
use karpsim_model::cloud::Catalog;
use karpsim_sim::engine::{PoolSetup, RunInput, plan};

const NODES: usize = 1_000;
const DEPLOYMENTS: usize = 50;
const PODS_PER_NODE: usize = 20;

fn main() {
    divan::main();
}

/// The snapshot text (about 40 MB).
pub fn snapshot_text() -> String {
    let mut out =
        String::from("apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n");
    out.push_str(NODEPOOL);
    for n in 0..NODES {
        let zone = ["us-east-1a", "us-east-1b", "us-east-1c"][n % 3];
        let _ = write!(
            out,
            "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: ip-10-1-{a}-{b}.ec2.internal\n    uid: n-{n}\n    resourceVersion: \"{n}\"\n    creationTimestamp: \"2026-11-30T08:00:00Z\"\n    labels:\n      karpenter.sh/nodepool: default\n      karpenter.sh/capacity-type: on-demand\n      karpenter.sh/initialized: \"true\"\n      karpenter.sh/registered: \"true\"\n      karpenter.k8s.aws/ec2nodeclass: default\n      kubernetes.io/arch: amd64\n      kubernetes.io/os: linux\n      kubernetes.io/hostname: ip-10-1-{a}-{b}.ec2.internal\n      node.kubernetes.io/instance-type: m5.2xlarge\n      topology.kubernetes.io/region: us-east-1\n      topology.kubernetes.io/zone: {zone}\n  spec:\n    providerID: aws:///{zone}/i-{n:017x}\n  status:\n    allocatable: {{cpu: 7910m, memory: 29579604Ki, pods: \"58\", ephemeral-storage: \"18242267924\"}}\n    capacity: {{cpu: \"8\", memory: 32408812Ki, pods: \"58\", ephemeral-storage: 20959212Ki}}\n    conditions:\n    - {{type: Ready, status: \"True\", lastHeartbeatTime: \"2026-11-30T12:00:00Z\", lastTransitionTime: \"2026-11-30T08:01:00Z\", reason: KubeletReady, message: kubelet is posting ready status}}\n    nodeInfo: {{architecture: amd64, kubeletVersion: v1.31.2, operatingSystem: linux, osImage: Amazon Linux 2023, containerRuntimeVersion: containerd://1.7.22, kernelVersion: 6.1.112, kubeProxyVersion: v1.31.2, machineID: m, systemUUID: s, bootID: b}}\n- apiVersion: karpenter.sh/v1\n  kind: NodeClaim\n  metadata:\n    name: default-{n:05}\n    creationTimestamp: \"2026-11-30T08:00:00Z\"\n    labels: {{karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: m5.2xlarge, topology.kubernetes.io/zone: {zone}, karpenter.sh/capacity-type: on-demand}}\n    annotations: {{karpenter.sh/nodepool-hash: \"1\", karpenter.sh/nodepool-hash-version: v3}}\n  spec:\n    expireAfter: 720h\n    nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n    requirements: [{{key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}}]\n  status:\n    nodeName: ip-10-1-{a}-{b}.ec2.internal\n    lastPodEventTime: \"2026-11-30T09:00:00Z\"\n    conditions:\n    - {{type: Launched, status: \"True\", lastTransitionTime: \"2026-11-30T08:00:10Z\", reason: Launched, message: \"\"}}\n    - {{type: Initialized, status: \"True\", lastTransitionTime: \"2026-11-30T08:01:00Z\", reason: Initialized, message: \"\"}}\n",
            a = n / 250,
            b = n % 250,
        );
    }
    for d in 0..DEPLOYMENTS {
        let pods = NODES * PODS_PER_NODE / DEPLOYMENTS;
        let _ = write!(
            out,
            "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {{name: app-{d}, namespace: apps, creationTimestamp: \"2026-11-30T08:00:00Z\"}}\n  spec:\n    replicas: {pods}\n    selector: {{matchLabels: {{app: app-{d}}}}}\n    template:\n      metadata: {{labels: {{app: app-{d}}}}}\n      spec:\n        containers: [{{name: main, image: \"app:1\", resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}}}]\n- apiVersion: apps/v1\n  kind: ReplicaSet\n  metadata:\n    name: app-{d}-6f7d8\n    namespace: apps\n    ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: app-{d}, uid: d-{d}, controller: true, blockOwnerDeletion: true}}]\n  spec:\n    replicas: {pods}\n    selector: {{matchLabels: {{app: app-{d}, pod-template-hash: 6f7d8}}}}\n    template:\n      metadata: {{labels: {{app: app-{d}, pod-template-hash: 6f7d8}}}}\n      spec:\n        containers: [{{name: main, image: \"app:1\", resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}}}]\n- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata: {{name: app-{d}, namespace: apps}}\n  spec: {{maxUnavailable: 10%, selector: {{matchLabels: {{app: app-{d}}}}}}}\n"
        );
    }
    for p in 0..NODES * PODS_PER_NODE {
        let d = p % DEPLOYMENTS;
        let n = p % NODES;
        let _ = write!(
            out,
            "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: app-{d}-6f7d8-{p:05}\n    namespace: apps\n    uid: p-{p}\n    creationTimestamp: \"2026-11-30T08:02:00Z\"\n    labels: {{app: app-{d}, pod-template-hash: 6f7d8}}\n    ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: app-{d}-6f7d8, uid: rs-{d}, controller: true, blockOwnerDeletion: true}}]\n  spec:\n    nodeName: ip-10-1-{a}-{b}.ec2.internal\n    containers:\n    - name: main\n      image: \"app:1\"\n      imagePullPolicy: IfNotPresent\n      resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}\n      terminationMessagePath: /dev/termination-log\n      terminationMessagePolicy: File\n    dnsPolicy: ClusterFirst\n    restartPolicy: Always\n    schedulerName: default-scheduler\n    terminationGracePeriodSeconds: 30\n    tolerations:\n    - {{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}}\n  status:\n    phase: Running\n    startTime: \"2026-11-30T08:02:05Z\"\n    conditions:\n    - {{type: PodScheduled, status: \"True\", lastTransitionTime: \"2026-11-30T08:02:01Z\"}}\n    - {{type: Ready, status: \"True\", lastTransitionTime: \"2026-11-30T08:02:09Z\"}}\n    containerStatuses: [{{name: main, ready: true, restartCount: 0, started: true, image: \"app:1\", imageID: \"app@sha256:1\", containerID: \"containerd://{p:x}\", state: {{running: {{startedAt: \"2026-11-30T08:02:08Z\"}}}}}}]\n",
            a = n / 250,
            b = n % 250,
        );
    }
    out
}

const NODEPOOL: &str = "- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: default}\n  spec:\n    disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m, budgets: [{nodes: 10%}]}\n    template:\n      spec:\n        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n        expireAfter: 720h\n        requirements:\n        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5, r5]}\n";

fn catalog() -> Catalog {
    Catalog::load("us-east-1", &Default::default()).expect("bundled region")
}

fn read(text: &str) -> Snapshot {
    cluster_snapshot::read_texts("bench.yaml", &[("bench.yaml", text)])
        .expect("reads")
        .resolve(&catalog())
        .expect("resolves")
}

fn run_input(snapshot: &Snapshot) -> RunInput {
    let catalog = catalog();
    RunInput {
        variant: "plan".to_string(),
        seed: 0,
        duration: karpsim_model::time::SimDuration::from_hours(1),
        zones: Vec::new(),
        launch_latency: karpsim_sim::LaunchLatency::fixed(
            karpsim_model::time::SimDuration::from_secs(30),
        ),
        node_initialization: karpsim_model::time::SimDuration::ZERO,
        startup_failures: Vec::new(),
        steps: Vec::new(),
        sources: Vec::new(),
        nodepools: snapshot
            .nodepools
            .iter()
            .map(|pool| PoolSetup {
                pool: pool.clone(),
                catalog: catalog.clone(),
            })
            .collect(),
        reservations: Vec::new(),
        capacity_shortages: Default::default(),
        initial: Some(Arc::new(snapshot.state.clone())),
        snapshot_at: None,
        scheduler: Default::default(),
        karpenter: Default::default(),
        node_count_resource: None,
        interruptions: Default::default(),
        spot_price_changes: Vec::new(),
        cluster_autoscaler: None,
    }
}

/// Reading and resolving the snapshot text.
#[divan::bench(sample_count = 3)]
fn read_snapshot(bencher: divan::Bencher) {
    let text = snapshot_text();
    bencher.bench(|| read(divan::black_box(&text)));
}

/// The decisions on the read snapshot (kube-scheduler, provisioning, the
/// disruption passes).
#[divan::bench(sample_count = 3)]
fn plan_snapshot(bencher: divan::Bencher) {
    let snapshot = read(&snapshot_text());
    let input = run_input(&snapshot);
    bencher.bench(|| plan(divan::black_box(&input), None).expect("plans"));
}
