//! Written snapshots read back, through the manifest loader and the
//! snapshot reader, as the cluster they were written from.

use std::collections::BTreeMap;
use std::sync::Arc;

use karpsim_catalog::BundledCatalog;
use serde_json::Value;

use super::*;
use crate::cloud::{Catalog, Price};
use crate::cluster::{ClaimLifecycle, DriftedCondition, Node};
use crate::karpenter::disruption::drift::nodepool_hash;
use crate::kube::labels::Labels;
use crate::nodepools::load_str;
use crate::time::SimDuration;

/// Three NodePools covering every field the model keeps: template labels
/// and annotations, requirements with minValues and every operator kind,
/// taints and startup taints, expiry and grace period, each consolidation
/// policy, budgets with schedules, durations and reasons, limits
/// (`nodes` among them), weight; and one left to every default.
const POOLS: &str = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata:
      labels: {team: web}
      annotations: {example.com/owner: web-team}
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand], minValues: 2}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 2}
      - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
      - {key: karpenter.k8s.aws/instance-generation, operator: NotIn, values: ["1", "2"]}
      - {key: kubernetes.io/arch, operator: Exists}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: example.com/dedicated, value: web, effect: NoSchedule}]
      startupTaints: [{key: example.com/booting, effect: NoExecute}]
      expireAfter: 168h
      terminationGracePeriod: 1h30m
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 5m
    budgets:
    - {nodes: "20%", reasons: [Empty, Drifted]}
    - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h30m, reasons: [Underutilized]}
    - {nodes: "3", schedule: "@daily", duration: 10m}
  limits: {cpu: 1000, memory: 4000Gi, nodes: "50"}
  weight: 10
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: batch}
spec:
  template:
    spec:
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
      - {key: karpenter.k8s.aws/instance-memory, operator: Gte, values: ["2048"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: bottle}
      expireAfter: Never
  disruption:
    consolidationPolicy: Balanced
    consolidateAfter: Never
    budgets: []
  limits: {cpu: 1500m, nvidia.com/gpu: 4}
  weight: 100
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: plain}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"#;

/// EC2NodeClasses: an alias alone, every kubelet setting with a root
/// volume and RAID0, a custom AMI with an absolute eviction threshold on
/// its family's root device, and a Windows alias.
const CLASSES: &str = r#"
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: bottle}
spec:
  amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]
  kubelet:
    maxPods: 110
    podsPerCore: 4
    kubeReserved: {cpu: 200m, memory: 1Gi, ephemeral-storage: 2Gi}
    systemReserved: {cpu: 100m}
    evictionHard: {memory.available: 5%, nodefs.available: "7.5%"}
  blockDeviceMappings:
  - {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 100Gi}}
  instanceStorePolicy: RAID0
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: custom}
spec:
  amiFamily: Custom
  amiSelectorTerms: [{id: ami-0123456789abcdef0}]
  kubelet:
    evictionHard: {memory.available: 500Mi}
  blockDeviceMappings:
  - {deviceName: /dev/xvda, ebs: {volumeSize: 40Gi}}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: windows}
spec:
  amiSelectorTerms: [{alias: windows2022@latest}]
"#;

/// Workloads of every kind with PDBs.
const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web, tier: front}
      annotations: {karpenter.sh/do-not-disrupt: "true", team: "7"}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 500m, memory: 512Mi}}
      tolerations: [{key: example.com/dedicated, operator: Equal, value: web, effect: NoSchedule}]
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: web}}
        matchLabelKeys: [pod-template-hash]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists}]
      containers:
      - name: agent
        image: agent
        resources: {requests: {cpu: 100m, memory: 128Mi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {karpenter.sh/capacity-type: on-demand}
      containers:
      - name: db
        image: postgres
        resources: {requests: {cpu: "1", memory: 2Gi}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: batch
  namespace: jobs
  annotations: {karpsim.dev/duration: 10m}
spec:
  parallelism: 2
  completions: 4
  activeDeadlineSeconds: 3600
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: work
        resources: {requests: {cpu: 250m, memory: 256Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: default, labels: {run: debug}}
spec:
  containers:
  - name: sh
    image: busybox
    resources: {requests: {cpu: 50m}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: shop}
spec:
  minAvailable: 50%
  selector: {matchLabels: {app: db}}
  unhealthyPodEvictionPolicy: AlwaysAllow
"#;

/// 2026-01-01T06:00:00Z.
const EPOCH: i64 = 1_767_247_200_000;

fn at(seconds: i64) -> SimTime {
    SimTime::from_signed_millis(seconds * 1000)
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().copied().collect()
}

fn gib(n: i64) -> i64 {
    n << 30
}

fn size(cpu: i64, memory: i64, pods: i64) -> Resources {
    Resources::cpu_mem(cpu, memory).with(ResourceKind::Pods, pods)
}

/// A cluster: a Karpenter node (drifted, do-not-disrupt, every lifecycle
/// time), a Karpenter NodeClaim still launching, a cordoned node group
/// node without its group's labels, and an unmanaged node with an
/// extended resource; a Deployment, DaemonSet, StatefulSet (its pod
/// unschedulable), Job and bare pod; two PDBs.
struct Fixture {
    pools: Vec<NodePool>,
    classes: Vec<(String, NodeClassSettings)>,
    names: ResourceNames,
    state: InitialState,
}

fn fixture() -> Fixture {
    // One load, so that one table names the extended resources of all.
    let manifests = crate::nodepools::load(&[
        ("pools.yaml", POOLS),
        ("classes.yaml", CLASSES),
        ("workloads.yaml", WORKLOADS),
    ])
    .expect("manifests read");
    let mut names = manifests.resource_names.clone();
    let fpga = names.kind_for("example.com/fpga").expect("a spare slot");
    let pool = &manifests.nodepools[0];

    let karpenter_labels = |name: &str, zone: &str| {
        labels(&[
            ("karpenter.sh/nodepool", "default"),
            ("karpenter.sh/capacity-type", "spot"),
            ("karpenter.sh/initialized", "true"),
            ("karpenter.sh/registered", "true"),
            ("kubernetes.io/hostname", name),
            ("node.kubernetes.io/instance-type", "m5.xlarge"),
            ("topology.kubernetes.io/region", "us-east-1"),
            ("topology.kubernetes.io/zone", zone),
            ("team", "web"),
        ])
    };
    let claim = |zone: &str, lifecycle: ClaimLifecycle| NodeClaimInfo {
        nodepool: Arc::from("default"),
        instance_type: "m5.xlarge".to_string(),
        capacity_type: CapacityType::Spot,
        zone: zone.to_string(),
        price: Price::from_micros(80_000),
        startup_taints: pool.startup_taints.clone(),
        lifecycle,
    };
    let node = |name: &str, labels: Labels, taints: Vec<Taint>| Node {
        name: name.to_string(),
        labels,
        taints,
        capacity: size(4000, gib(16), 58),
        allocatable: size(3920, gib(14), 58),
        requested: Resources::ZERO,
        pods: Vec::new(),
        registered: true,
        initialized: true,
        marked_for_deletion: false,
        claim: None,
        created_at: at(-4 * 3600),
    };
    let initial = |node: Node, owner: NodeOwner, zone: &str| InitialNode {
        node,
        owner,
        instance_type: "m5.xlarge".to_string(),
        zone: zone.to_string(),
        capacity_type: CapacityType::Spot,
        price: Price::from_micros(80_000),
        scale_down_disabled: false,
    };

    let mut running = node(
        "ip-10-0-1-10.ec2.internal",
        karpenter_labels("ip-10-0-1-10.ec2.internal", "us-east-1a"),
        pool.taints.clone(),
    );
    running.claim = Some(claim(
        "us-east-1a",
        ClaimLifecycle {
            initialized_at: Some(at(-4 * 3600 + 90)),
            last_pod_event_at: Some(at(-3600)),
            nominated_until: None,
            nodepool_hash: Some("1234567890".to_string()),
            drifted: Some(DriftedCondition {
                reason: "NodePoolDrifted".to_string(),
                since: at(-600),
            }),
            expire_after: Some(SimDuration::from_hours(168)),
            termination_grace_period: Some(SimDuration::from_mins(90)),
            do_not_disrupt: true,
            instance_terminating: false,
        },
    ));
    let mut launching_labels = karpenter_labels("default-x2kq9", "us-east-1b");
    launching_labels.remove("karpenter.sh/initialized");
    launching_labels.remove("karpenter.sh/registered");
    let mut launching_taints = pool.taints.clone();
    launching_taints.extend(pool.startup_taints.iter().cloned());
    let mut launching = node("default-x2kq9", launching_labels, launching_taints);
    launching.registered = false;
    launching.initialized = false;
    // Sub-second instants are kept (as RFC 3339 fractions).
    launching.created_at = SimTime::from_signed_millis(-61_500);
    launching.claim = Some(claim(
        "us-east-1b",
        ClaimLifecycle {
            expire_after: Some(SimDuration::from_hours(168)),
            instance_terminating: true,
            do_not_disrupt: true,
            ..ClaimLifecycle::default()
        },
    ));
    let mut group = node(
        "ip-10-0-2-20.ec2.internal",
        labels(&[
            ("kubernetes.io/hostname", "ip-10-0-2-20.ec2.internal"),
            ("node.kubernetes.io/instance-type", "m5.xlarge"),
            ("topology.kubernetes.io/zone", "us-east-1b"),
        ]),
        vec![Taint::new(TAINT_UNSCHEDULABLE, "", TaintEffect::NoSchedule)],
    );
    group.created_at = at(-30 * 86_400);
    let mut unmanaged = node(
        "ip-10-0-3-30.ec2.internal",
        labels(&[
            ("kubernetes.io/hostname", "ip-10-0-3-30.ec2.internal"),
            ("karpenter.sh/capacity-type", "on-demand"),
            ("node.kubernetes.io/instance-type", "m5.xlarge"),
            ("topology.kubernetes.io/zone", "us-east-1c"),
        ]),
        Vec::new(),
    );
    unmanaged.capacity = unmanaged.capacity.with(fpga, 2);
    unmanaged.allocatable = unmanaged.allocatable.with(fpga, 2);

    let mut unmanaged = initial(unmanaged, NodeOwner::Unmanaged, "us-east-1c");
    unmanaged.capacity_type = CapacityType::OnDemand;
    let nodes = vec![
        initial(running, NodeOwner::Karpenter, "us-east-1a"),
        initial(launching, NodeOwner::Karpenter, "us-east-1b"),
        initial(
            group,
            NodeOwner::NodeGroup("system".to_string()),
            "us-east-1b",
        ),
        unmanaged,
    ];

    let workload = |name: &str| {
        manifests
            .core
            .workloads
            .iter()
            .find(|w| w.name == name)
            .cloned()
            .expect("workload")
    };
    let pod = |name: &str, spec: &Arc<PodSpec>, node: Option<usize>| InitialPod {
        name: name.to_string(),
        spec: spec.clone(),
        node,
        created_at: at(-3 * 3600),
        started_at: node.map(|_| at(-3 * 3600 + 5)),
        unschedulable: false,
        ordinal: None,
    };
    let web = workload("web");
    let agent = workload("agent");
    let db = workload("db");
    let batch = workload("batch");
    let debug = workload("debug");
    let with_hash = |spec: &Arc<PodSpec>| {
        let mut spec = (**spec).clone();
        spec.labels
            .insert("pod-template-hash".to_string(), pod_template_hash("web"));
        Arc::new(spec)
    };
    let web_spec = with_hash(&web.template);
    let mut db_pod = pod("db-0", &db.template, None);
    db_pod.unschedulable = true;
    db_pod.ordinal = Some(0);
    db_pod.created_at = SimTime::from_signed_millis(-1_500);
    let workloads = vec![
        InitialWorkload {
            pods: vec![
                pod("web-00001", &web_spec, Some(0)),
                pod("web-00002", &web_spec, Some(0)),
            ],
            workload: web,
            succeeded: 0,
        },
        InitialWorkload {
            pods: vec![
                pod("agent-00001", &agent.template, Some(0)),
                pod("agent-00002", &agent.template, Some(2)),
                pod("agent-00003", &agent.template, Some(3)),
            ],
            workload: agent,
            succeeded: 0,
        },
        InitialWorkload {
            pods: vec![db_pod],
            workload: db,
            succeeded: 0,
        },
        InitialWorkload {
            pods: vec![
                pod("batch-00003", &batch.template, Some(3)),
                pod("batch-00004", &batch.template, None),
            ],
            workload: batch,
            succeeded: 2,
        },
        InitialWorkload {
            pods: vec![pod("debug", &debug.template, Some(2))],
            workload: debug,
            succeeded: 0,
        },
    ];
    Fixture {
        pools: manifests.nodepools.clone(),
        classes: manifests
            .nodeclasses
            .iter()
            .cloned()
            .map(|c| (c.name, c.settings))
            .collect(),
        names,
        state: InitialState {
            source: "test".to_string(),
            time: None,
            nodes,
            workloads,
            pdbs: manifests.core.pdbs,
        },
    }
}

impl Fixture {
    fn parts(&self, now: SimTime) -> SnapshotParts<'_> {
        SnapshotParts {
            state: &self.state,
            nodepools: &self.pools,
            nodeclasses: &self.classes,
            names: &self.names,
            epoch_unix_millis: EPOCH,
            now,
        }
    }

    fn write(&self) -> String {
        write_snapshot(&self.parts(SimTime::ZERO)).expect("writes")
    }
}

fn empty_state() -> InitialState {
    InitialState::default()
}

#[test]
fn nodepools_read_back_equal() {
    let read = load_str("pools.yaml", POOLS).expect("pools read");
    let state = empty_state();
    let text = write_snapshot(&SnapshotParts {
        state: &state,
        nodepools: &read.nodepools,
        nodeclasses: &[],
        names: &read.resource_names,
        epoch_unix_millis: EPOCH,
        now: SimTime::ZERO,
    })
    .expect("writes");
    let again = load_str("snapshot.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.nodepools.len(), 3);
    assert_eq!(again.nodepools, read.nodepools, "{text}");
    assert_eq!(again.resource_names, read.resource_names);
    // Nothing the reader warns about: every field is one it models.
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn ec2nodeclasses_read_back_equal() {
    let read = load_str("classes.yaml", CLASSES).expect("classes read");
    let classes: Vec<(String, NodeClassSettings)> = read
        .nodeclasses
        .iter()
        .map(|c| (c.name.clone(), c.settings))
        .collect();
    // The fixture does set what the writer must reproduce.
    assert_eq!(classes[1].1.ami_family, AmiFamily::Bottlerocket);
    assert_eq!(classes[1].1.kubelet.max_pods, Some(110));
    assert_eq!(classes[2].1.ami_family, AmiFamily::Custom);
    let state = empty_state();
    let text = write_snapshot(&SnapshotParts {
        state: &state,
        nodepools: &[],
        nodeclasses: &classes,
        names: &ResourceNames::default(),
        epoch_unix_millis: EPOCH,
        now: SimTime::ZERO,
    })
    .expect("writes");
    let again = load_str("snapshot.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let back: Vec<(String, NodeClassSettings)> = again
        .nodeclasses
        .into_iter()
        .map(|c| (c.name, c.settings))
        .collect();
    assert_eq!(back, classes, "{text}");
}

#[test]
fn values_the_crds_cannot_state_are_errors() {
    let mut pools = load_str("pools.yaml", POOLS).expect("pools read").nodepools;
    let state = empty_state();
    let names = ResourceNames::default();
    let write = |pools: &[NodePool]| {
        write_snapshot(&SnapshotParts {
            state: &state,
            nodepools: pools,
            nodeclasses: &[],
            names: &names,
            epoch_unix_millis: EPOCH,
            now: SimTime::ZERO,
        })
    };
    pools.truncate(1);
    pools[0].limits.clear();
    assert!(write(&pools).is_ok());
    pools[0].disruption.budgets[1].duration = Some(Duration::from_secs(90));
    let err = write(&pools).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("NodePool default: budget duration 90s"),
        "{err}"
    );
    pools[0].disruption.budgets[1].duration = Some(Duration::from_secs(3600));
    pools[0].termination_grace_period = Some(Duration::from_millis(1500));
    let err = write(&pools).unwrap_err();
    assert!(err.to_string().contains("terminationGracePeriod"), "{err}");
}

/// The snapshot read back by the snapshot reader is the state written:
/// nodes with their owners, NodeClaims and lifecycle times; workloads with
/// their pods, bound where they were; PDBs.
#[test]
fn the_snapshot_reader_reads_back_the_state() {
    let f = fixture();
    let text = f.write();
    let raw = crate::cluster_snapshot::read_texts("snapshot.yaml", &[("snapshot.yaml", &text)])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let catalog = Catalog::load("us-east-1", &Default::default()).expect("bundled region");
    let snapshot = raw.resolve(&catalog).expect("resolves");
    assert_eq!(snapshot.time_unix_millis, EPOCH);
    assert_eq!(snapshot.nodepools, f.pools);
    let classes: Vec<(String, NodeClassSettings)> = snapshot
        .nodeclasses
        .iter()
        .map(|c| (c.name.clone(), c.settings))
        .collect();
    assert_eq!(classes, f.classes);
    let state = &snapshot.state;

    // Nodes: the reader prices them from the catalog; everything else
    // comes back, with the labels the reader needs added where missing.
    assert_eq!(state.nodes.len(), 4);
    let order: Vec<&str> = state.nodes.iter().map(|n| n.node.name.as_str()).collect();
    // Registered nodes first, then NodeClaims still launching.
    assert_eq!(
        order,
        [
            "ip-10-0-1-10.ec2.internal",
            "ip-10-0-2-20.ec2.internal",
            "ip-10-0-3-30.ec2.internal",
            "default-x2kq9",
        ]
    );
    let index_of = |name: &str| order.iter().position(|n| *n == name).expect("node");
    for original in &f.state.nodes {
        let back = &state.nodes[index_of(&original.node.name)];
        let mut expected = original.node.clone();
        if let NodeOwner::NodeGroup(_) = original.owner {
            expected.labels.insert(LABEL_EKS_NODEGROUP, "system");
            expected.labels.insert(LABEL_EKS_CAPACITY_TYPE, "SPOT");
        }
        let mut node = back.node.clone();
        if let (Some(claim), Some(want)) = (node.claim.as_mut(), expected.claim.as_mut()) {
            claim.price = want.price;
            if want.lifecycle.nodepool_hash.is_none() {
                // Unstamped: the reader takes the NodePool's current hash.
                want.lifecycle.nodepool_hash = Some(nodepool_hash(&f.pools[0]));
            }
        }
        assert_eq!(node, expected, "{}", original.node.name);
        assert_eq!(back.owner, original.owner);
        assert_eq!(back.instance_type, original.instance_type);
        assert_eq!(back.zone, original.zone);
        assert_eq!(back.capacity_type, original.capacity_type);
    }
    // The pools' `nodes` limit and the node's FPGAs keep their names.
    assert_eq!(snapshot.resource_names, f.names);
    assert_eq!(f.names.lookup("nodes"), Some(ResourceKind::Extra(0)));
    assert_eq!(
        f.names.lookup("example.com/fpga"),
        Some(ResourceKind::Extra(1))
    );

    // Workloads and pods, with node indices mapped to the reader's order.
    assert_eq!(state.workloads.len(), f.state.workloads.len());
    for (back, original) in state.workloads.iter().zip(&f.state.workloads) {
        assert_eq!(back.workload, original.workload);
        assert_eq!(
            back.succeeded, original.succeeded,
            "{}",
            original.workload.name
        );
        assert_eq!(back.pods.len(), original.pods.len());
        for (p, o) in back.pods.iter().zip(&original.pods) {
            assert_eq!(p.name, o.name);
            assert_eq!(p.spec, o.spec, "{}", o.name);
            assert_eq!(
                p.node,
                o.node.map(|i| index_of(&f.state.nodes[i].node.name)),
                "{}",
                o.name
            );
            assert_eq!(p.created_at, o.created_at, "{}", o.name);
            assert_eq!(p.started_at, o.started_at, "{}", o.name);
            assert_eq!(p.unschedulable, o.unschedulable, "{}", o.name);
            assert_eq!(p.ordinal, o.ordinal, "{}", o.name);
        }
    }
    assert_eq!(state.pdbs, f.state.pdbs);
}

/// Times are relative to the snapshot's instant, the Nodes' heartbeat:
/// written at `now`, they read back shifted by it.
#[test]
fn times_read_back_relative_to_now() {
    let f = fixture();
    let now = at(2 * 3600);
    let text = write_snapshot(&f.parts(now)).expect("writes");
    let raw = crate::cluster_snapshot::read_texts("s.yaml", &[("s.yaml", &text)]).expect("reads");
    let catalog = Catalog::load("us-east-1", &Default::default()).expect("bundled region");
    let snapshot = raw.resolve(&catalog).expect("resolves");
    assert_eq!(snapshot.time_unix_millis, EPOCH + 2 * 3_600_000);
    assert_eq!(snapshot.state.nodes[0].node.created_at, at(-6 * 3600));
    let claim = snapshot.state.nodes[0].node.claim.as_ref().expect("claim");
    assert_eq!(claim.lifecycle.last_pod_event_at, Some(at(-3 * 3600)));
}

/// Through the manifest loader (which reads core kinds and skips Nodes and
/// NodeClaims): the workloads and PDBs are the ones written, the
/// Deployment's ReplicaSet adds `pod-template-hash`, and every Pod item is
/// a valid pod with the spec written.
#[test]
fn the_manifest_loader_reads_back_workloads_pdbs_and_pods() {
    let f = fixture();
    let text = f.write();
    let back = load_str("snapshot.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.core.pdbs, f.state.pdbs);
    let (pods, controllers): (Vec<&Workload>, Vec<&Workload>) = back
        .core
        .workloads
        .iter()
        .partition(|w| w.kind == WorkloadKind::Pod);
    let (replicasets, controllers): (Vec<&Workload>, Vec<&Workload>) = controllers
        .into_iter()
        .partition(|w| w.name == replicaset_name("web"));
    let originals: Vec<&Workload> = f
        .state
        .workloads
        .iter()
        .map(|w| &w.workload)
        .filter(|w| w.kind != WorkloadKind::Pod)
        .collect();
    assert_eq!(controllers, originals);
    let web = &f.state.workloads[0].workload;
    assert_eq!(replicasets.len(), 1);
    assert_eq!(
        replicasets[0].kind,
        WorkloadKind::ReplicaSet { replicas: 2 }
    );
    assert_eq!(replicasets[0].template, f.state.workloads[0].pods[0].spec);
    assert_ne!(replicasets[0].template, web.template);
    let originals: Vec<(&str, &Arc<PodSpec>)> = f
        .state
        .workloads
        .iter()
        .flat_map(|w| &w.pods)
        .map(|p| (p.name.as_str(), &p.spec))
        .collect();
    let read: Vec<(&str, &Arc<PodSpec>)> = pods
        .iter()
        .map(|w| (w.name.as_str(), &w.template))
        .collect();
    assert_eq!(read, originals);
    let messages: std::collections::BTreeSet<&str> =
        back.warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "v1 Node is not read by karpsim; skipped",
            "karpenter.sh/v1 NodeClaim is not read by karpsim; skipped",
            "a preset nodeName is not modelled; the pod is scheduled like any other",
            "not modelled by karpsim (no effect on capacity or price); ignored",
            "AMI selection by this field is not modelled; the AMI family decides overhead",
        ]
        .into(),
        "{messages:?}"
    );
}

#[test]
fn the_same_state_writes_the_same_bytes() {
    let f = fixture();
    let first = f.write();
    // A deep copy: nothing depends on addresses or on a previous call.
    let copy = Fixture {
        pools: f.pools.clone(),
        classes: f.classes.clone(),
        names: f.names.clone(),
        state: InitialState {
            workloads: f
                .state
                .workloads
                .iter()
                .map(|w| InitialWorkload {
                    pods: w
                        .pods
                        .iter()
                        .map(|p| InitialPod {
                            spec: Arc::new((*p.spec).clone()),
                            ..p.clone()
                        })
                        .collect(),
                    ..w.clone()
                })
                .collect(),
            ..f.state.clone()
        },
    };
    assert_eq!(copy.write(), first);
    assert_eq!(f.write(), first);
    // And the output does depend on the state.
    let mut moved = copy;
    moved.state.nodes[0].node.created_at = at(-5 * 3600);
    assert_ne!(moved.write(), first);
}

fn kinds(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            format!(
                "{} {}",
                i["kind"].as_str().unwrap_or("?"),
                i["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

fn item<'a>(list: &'a Value, kind: &str, name: &str) -> &'a Value {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// The text is a YAML `kind: List` with the items in the documented order
/// and the shapes kubectl prints.
#[test]
fn the_text_is_a_kubectl_list_in_order() {
    let f = fixture();
    let text = f.write();
    let list: Value = serde_saphyr::from_str(&text).expect("YAML");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["metadata"], serde_json::json!({"resourceVersion": ""}));
    let rs = replicaset_name("web");
    assert!(
        rs.strip_prefix("web-")
            .is_some_and(|h| h.len() == 10 && h.bytes().all(|b| b.is_ascii_hexdigit())),
        "{rs}"
    );
    let expected: Vec<String> = [
        "NodePool default",
        "NodePool batch",
        "NodePool plain",
        "EC2NodeClass default",
        "EC2NodeClass bottle",
        "EC2NodeClass custom",
        "EC2NodeClass windows",
        "Node ip-10-0-1-10.ec2.internal",
        "Node ip-10-0-2-20.ec2.internal",
        "Node ip-10-0-3-30.ec2.internal",
        "NodeClaim ip-10-0-1-10.ec2.internal",
        "NodeClaim default-x2kq9",
        "Deployment web",
        &format!("ReplicaSet {rs}"),
        "DaemonSet agent",
        "StatefulSet db",
        "Job batch",
        "PodDisruptionBudget web",
        "PodDisruptionBudget db",
        "Pod web-00001",
        "Pod web-00002",
        "Pod agent-00001",
        "Pod agent-00002",
        "Pod agent-00003",
        "Pod db-0",
        "Pod batch-00003",
        "Pod batch-00004",
        "Pod debug",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(kinds(&list), expected);

    let node = item(&list, "Node", "ip-10-0-1-10.ec2.internal");
    assert_eq!(
        node["metadata"]["creationTimestamp"],
        "2026-01-01T02:00:00Z"
    );
    assert_eq!(
        node["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true"
    );
    let id = node["spec"]["providerID"].as_str().expect("providerID");
    let instance = id.strip_prefix("aws:///us-east-1a/i-").expect(id);
    assert!(instance.len() == 16 && instance.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(node["status"]["capacity"]["cpu"], "4");
    assert_eq!(node["status"]["allocatable"]["memory"], "14Gi");
    assert_eq!(node["status"]["allocatable"]["pods"], "58");
    let ready = &node["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready");
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["lastHeartbeatTime"], "2026-01-01T06:00:00Z");
    assert_eq!(ready["lastTransitionTime"], "2026-01-01T02:00:00Z");

    let cordoned = item(&list, "Node", "ip-10-0-2-20.ec2.internal");
    assert_eq!(cordoned["spec"]["unschedulable"], true);
    assert_eq!(
        cordoned["spec"]["taints"],
        serde_json::json!([{"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}])
    );
    let fpga = &item(&list, "Node", "ip-10-0-3-30.ec2.internal")["status"]["capacity"];
    assert_eq!(fpga["example.com/fpga"], "2");

    let claim = item(&list, "NodeClaim", "ip-10-0-1-10.ec2.internal");
    assert_eq!(claim["status"]["nodeName"], "ip-10-0-1-10.ec2.internal");
    assert_eq!(claim["status"]["providerID"], id);
    assert_eq!(
        claim["metadata"]["annotations"],
        serde_json::json!({
            "karpenter.sh/nodepool-hash": "1234567890",
            "karpenter.sh/nodepool-hash-version": "karpsim-v1",
        })
    );
    assert_eq!(claim["metadata"]["ownerReferences"][0]["kind"], "NodePool");
    assert_eq!(claim["spec"]["expireAfter"], "168h");
    assert_eq!(claim["spec"]["terminationGracePeriod"], "1h30m");
    let conditions: Vec<(&str, &str, &str)> = claim["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or(""),
                c["lastTransitionTime"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("Launched", "Launched", "2026-01-01T02:00:00Z"),
            ("Registered", "Registered", "2026-01-01T02:00:00Z"),
            ("Initialized", "Initialized", "2026-01-01T02:01:30Z"),
            ("Ready", "Ready", "2026-01-01T02:01:30Z"),
            ("Drifted", "NodePoolDrifted", "2026-01-01T05:50:00Z"),
        ]
    );
    assert_eq!(claim["status"]["lastPodEventTime"], "2026-01-01T05:00:00Z");

    let launching = item(&list, "NodeClaim", "default-x2kq9");
    assert!(launching["status"].get("nodeName").is_none());
    assert_eq!(
        launching["metadata"]["creationTimestamp"],
        "2026-01-01T05:58:58.500Z"
    );
    assert_eq!(
        launching["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"],
        "true"
    );
    assert!(
        launching["metadata"]["annotations"]
            .get("karpenter.sh/nodepool-hash")
            .is_none()
    );
    let types: Vec<&str> = launching["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["Launched", "InstanceTerminating"]);
    assert_eq!(
        launching["spec"]["startupTaints"],
        serde_json::json!([{"key": "example.com/booting", "effect": "NoExecute"}])
    );

    let replicaset = item(&list, "ReplicaSet", &rs);
    let owner = &replicaset["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Deployment");
    assert_eq!(owner["name"], "web");
    assert_eq!(owner["controller"], true);
    let deployment = item(&list, "Deployment", "web");
    assert_eq!(owner["uid"], deployment["metadata"]["uid"]);
    let hash = rs.strip_prefix("web-").expect("hash");
    assert_eq!(
        replicaset["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash
    );
    assert!(
        deployment["spec"]["template"]["metadata"]["labels"]
            .get("pod-template-hash")
            .is_none()
    );

    let web = item(&list, "Pod", "web-00001");
    assert_eq!(web["metadata"]["labels"]["pod-template-hash"], hash);
    assert_eq!(web["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    assert_eq!(web["metadata"]["ownerReferences"][0]["name"], rs.as_str());
    assert_eq!(
        web["metadata"]["ownerReferences"][0]["uid"],
        replicaset["metadata"]["uid"]
    );
    assert_eq!(web["spec"]["nodeName"], "ip-10-0-1-10.ec2.internal");
    assert_eq!(web["status"]["phase"], "Running");
    assert_eq!(web["status"]["startTime"], "2026-01-01T03:00:05Z");
    let db = item(&list, "Pod", "db-0");
    assert_eq!(db["status"]["phase"], "Pending");
    assert!(db["spec"].get("nodeName").is_none());
    assert_eq!(db["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(db["status"]["conditions"][0]["status"], "False");
    assert_eq!(db["status"]["conditions"][0]["reason"], "Unschedulable");
    assert_eq!(db["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    let pending = item(&list, "Pod", "batch-00004");
    assert!(pending["status"].get("conditions").is_none());
    assert_eq!(pending["spec"]["restartPolicy"], "Never");
    assert!(
        item(&list, "Pod", "debug")["metadata"]
            .get("ownerReferences")
            .is_none()
    );
    let job = item(&list, "Job", "batch");
    assert_eq!(
        job["metadata"]["annotations"]["karpsim.dev/duration"],
        "10m"
    );
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 3600);
    assert_eq!(job["status"]["succeeded"], 2);
}

/// A Karpenter node's labels are completed from its state: registered
/// and initialized, its NodePool, capacity type, instance type and zone.
#[test]
fn karpenter_labels_are_added_from_the_node_state() {
    let mut f = fixture();
    let node = &mut f.state.nodes[0].node;
    for key in [
        "karpenter.sh/initialized",
        "karpenter.sh/registered",
        "karpenter.sh/nodepool",
        "karpenter.sh/capacity-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
    ] {
        assert!(node.labels.remove(key).is_some(), "{key}");
    }
    if let Some(claim) = node.claim.as_mut() {
        claim.lifecycle.initialized_at = None;
    }
    let text = f.write();
    let list: Value = serde_saphyr::from_str(&text).expect("YAML");
    let want = serde_json::json!({
        "karpenter.sh/capacity-type": "spot",
        "karpenter.sh/initialized": "true",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/registered": "true",
        "kubernetes.io/hostname": "ip-10-0-1-10.ec2.internal",
        "node.kubernetes.io/instance-type": "m5.xlarge",
        "team": "web",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
    });
    for kind in ["Node", "NodeClaim"] {
        let labels = &item(&list, kind, "ip-10-0-1-10.ec2.internal")["metadata"]["labels"];
        assert_eq!(labels, &want, "{kind}");
    }
    let raw = crate::cluster_snapshot::read_texts("s.yaml", &[("s.yaml", &text)]).expect("reads");
    let catalog = Catalog::load("us-east-1", &Default::default()).expect("bundled region");
    let snapshot = raw.resolve(&catalog).expect("resolves");
    let back = &snapshot.state.nodes[0];
    assert_eq!(back.owner, NodeOwner::Karpenter);
    assert!(back.node.initialized);
}

/// An apps/v1 selector must select something: a template without labels
/// gets `app: <name>` in the template, selector and pods.
#[test]
fn a_template_without_labels_gets_an_app_label() {
    let mut f = fixture();
    let agent = &mut f.state.workloads[1];
    let mut spec = (*agent.workload.template).clone();
    spec.labels.clear();
    let spec = Arc::new(spec);
    agent.workload.template = spec.clone();
    for pod in &mut agent.pods {
        pod.spec = spec.clone();
    }
    let text = f.write();
    let list: Value = serde_saphyr::from_str(&text).expect("YAML");
    let set = item(&list, "DaemonSet", "agent");
    let app = serde_json::json!({"app": "agent"});
    assert_eq!(set["spec"]["selector"]["matchLabels"], app);
    assert_eq!(set["spec"]["template"]["metadata"]["labels"], app);
    assert_eq!(item(&list, "Pod", "agent-00001")["metadata"]["labels"], app);
    load_str("snapshot.yaml", &text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn states_no_object_can_hold_are_errors() {
    let mut f = fixture();
    // A pod bound to a node that has not registered.
    f.state.workloads[0].pods[0].node = Some(1);
    let err = write_snapshot(&f.parts(SimTime::ZERO)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Pod shop/web-00001: is bound to default-x2kq9, which has not registered (no Node object names it)"
    );
    let mut f = fixture();
    // A NodeClaim whose NodePool is not written.
    f.pools.remove(0);
    let err = write_snapshot(&f.parts(SimTime::ZERO)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("NodeClaim ip-10-0-1-10.ec2.internal: its NodePool \"default\""),
        "{err}"
    );
    let mut f = fixture();
    f.state.nodes[0].node.created_at = SimTime::MIN;
    let err = write_snapshot(&f.parts(SimTime::ZERO)).unwrap_err();
    assert!(err.to_string().contains("outside years 0000–9999"), "{err}");
}

/// Guards the fixture: the node-group node lacks the labels the writer
/// adds (so the read-back test sees them added), and the epoch is the
/// instant the expected texts assume.
#[test]
fn the_fixture_is_as_the_tests_assume() {
    let f = fixture();
    let group: &BTreeMap<String, String> = f.state.nodes[2].node.labels.as_map();
    assert!(!group.contains_key(LABEL_EKS_NODEGROUP));
    assert_eq!(
        Timestamp::from_unix_millis(EPOCH).to_string(),
        "2026-01-01T06:00:00Z"
    );
}

/// A node still starting (registered, not initialized: the node lifecycle
/// controller's `node.kubernetes.io/not-ready` taint on it) is written
/// with `Ready` `False`, as kubectl shows a NotReady node; the others are
/// Ready.
#[test]
fn a_not_ready_node_is_written_not_ready() {
    let mut f = fixture();
    let starting = &mut f.state.nodes[0].node;
    starting.initialized = false;
    starting.taints.push(Taint::new(
        crate::kube::taints::NOT_READY_TAINT_KEY,
        "",
        TaintEffect::NoSchedule,
    ));
    let name = starting.name.clone();
    let list: Value = serde_saphyr::from_str(&f.write()).expect("YAML");
    let ready = |node: &str| item(&list, "Node", node)["status"]["conditions"][0].clone();
    assert_eq!(ready(&name)["type"], "Ready");
    assert_eq!(ready(&name)["status"], "False");
    assert_eq!(ready(&name)["reason"], "KubeletNotReady");
    assert_eq!(ready("ip-10-0-2-20.ec2.internal")["status"], "True");
}
