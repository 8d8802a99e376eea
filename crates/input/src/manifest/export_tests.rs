//! Exported pods read back, through the manifest reader, as the pods they
//! were made from.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::nodepools::{Manifests, load_str};

/// A RuntimeClass (overhead, node selector), a PriorityClass, and pods that
/// use every field the model keeps: requests from several containers, init
/// containers and a sidecar, limits-only and extended resources, every
/// affinity kind, spread, tolerations, host ports, annotations and volumes.
const RICH: &str = r#"
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead:
  podFixed: {cpu: 50m, memory: 64Mi}
scheduling:
  nodeSelector: {sandbox: gvisor}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web, tier: front}
      annotations:
        karpenter.sh/do-not-disrupt: 30m
        controller.kubernetes.io/pod-deletion-cost: "-5"
        karpsim.dev/duration: 1.5h
        team: payments
    spec:
      priorityClassName: high
      runtimeClassName: gvisor
      terminationGracePeriodSeconds: 45
      nodeSelector: {kubernetes.io/os: linux}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}
              - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
            - matchExpressions:
              - {key: node.kubernetes.io/instance-type, operator: Exists}
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 40
            preference:
              matchExpressions:
              - {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: cache}
            topologyKey: topology.kubernetes.io/zone
            namespaces: [shop, infra]
            matchLabelKeys: [tier]
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 10
            podAffinityTerm:
              labelSelector:
                matchExpressions:
                - {key: app, operator: In, values: [db]}
              topologyKey: kubernetes.io/hostname
              namespaceSelector: {}
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels: {app: web}
            topologyKey: kubernetes.io/hostname
            mismatchLabelKeys: [tier]
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchExpressions:
                - {key: tier, operator: DoesNotExist}
              topologyKey: topology.kubernetes.io/zone
      tolerations:
      - {operator: Exists}
      - {key: dedicated, operator: Equal, value: web, effect: NoSchedule}
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: web}
        minDomains: 3
        nodeAffinityPolicy: Ignore
        nodeTaintsPolicy: Honor
        matchLabelKeys: [pod-template-hash]
      - maxSkew: 2
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
        labelSelector: {}
      initContainers:
      - name: migrate
        image: migrate:1
        resources:
          requests: {cpu: "2", memory: 256Mi}
      - name: proxy
        image: envoy:1
        restartPolicy: Always
        resources:
          requests: {cpu: 100m, memory: 128Mi}
        ports:
        - {containerPort: 15000, hostPort: 15000}
      containers:
      - name: web
        image: web:1
        resources:
          requests: {cpu: 250m, memory: 1.5Gi, example.com/fpga: "2", ephemeral-storage: 2Gi}
          limits: {example.com/fpga: "2", nvidia.com/gpu: "1"}
        ports:
        - {containerPort: 8080, hostPort: 8080, protocol: TCP}
        - {containerPort: 9090, hostPort: 9091, protocol: UDP, hostIP: 127.0.0.1}
      - name: logs
        image: logs:1
        resources:
          requests: {cpu: "0.1", memory: 129M}
      volumes:
      - name: scratch
        emptyDir: {}
      - name: host
        hostPath: {path: /var/log}
      - name: shm
        emptyDir: {medium: Memory}
      - name: config
        configMap: {name: web}
---
apiVersion: v1
kind: Pod
metadata:
  name: solo
  labels: {app: solo}
  annotations: {karpenter.sh/do-not-disrupt: "true"}
spec:
  hostNetwork: true
  priority: 7
  containers:
  - name: dns
    image: dns:1
    ports:
    - {containerPort: 53, protocol: UDP}
    resources:
      requests: {cpu: 500m, hugepages-2Mi: 512Mi}
      limits: {cpu: "1", memory: 1Gi, hugepages-2Mi: 512Mi}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: jobs}
spec:
  template:
    metadata:
      annotations:
        karpsim.dev/duration: 10m
        controller.kubernetes.io/pod-deletion-cost: " 12"
        karpenter.sh/do-not-disrupt: "false"
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: work:1
"#;

fn load(text: &str) -> Manifests {
    match load_str("m.yaml", text) {
        Ok(m) => m,
        Err(e) => panic!("{e}\nin:\n{text}"),
    }
}

/// Every workload's pod template written as a Pod, one YAML stream.
fn export_all(m: &Manifests) -> String {
    let mut out = String::new();
    for (i, w) in m.core.workloads.iter().enumerate() {
        let (mut metadata, spec) = pod_template(&w.template, &m.resource_names);
        metadata.name = Some(format!("pod-{i}"));
        let pod = Pod {
            metadata,
            spec: Some(spec),
            status: None,
        };
        out.push_str("---\n");
        out.push_str(&to_yaml(&pod).expect("a Pod serializes"));
    }
    out
}

fn container_resources(
    spec: &PodSpec,
    names: &ResourceNames,
) -> k8s_openapi::api::core::v1::ResourceRequirements {
    let (_, pod) = pod_template(spec, names);
    assert_eq!(pod.containers.len(), 1);
    pod.containers[0].resources.clone().unwrap_or_default()
}

fn texts(list: Option<&BTreeMap<String, K8sQuantity>>) -> Vec<(&str, &str)> {
    list.into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect()
}

#[test]
fn exported_pods_read_back_as_the_same_pod_specs() {
    let original = load(RICH);
    assert_eq!(original.core.workloads.len(), 3);
    let yaml = export_all(&original);
    let back = load(&yaml);
    // Nothing new to warn about (the ignored do-not-disrupt value warns again).
    let messages =
        |m: &Manifests| -> Vec<String> { m.warnings.iter().map(|w| w.message.clone()).collect() };
    assert_eq!(messages(&back), messages(&original), "in:\n{yaml}");
    assert_eq!(back.resource_names, original.resource_names);
    assert_eq!(back.core.workloads.len(), original.core.workloads.len());
    for (b, o) in back.core.workloads.iter().zip(&original.core.workloads) {
        assert_eq!(b.namespace, o.namespace);
        assert_eq!(*b.template, *o.template, "in:\n{yaml}");
    }
    // The fixture exercises what it claims to: RuntimeClass, init and
    // sidecar totals, defaulted host ports, every annotation-backed field.
    let web = &original.core.workloads[0].template;
    assert_eq!(web.requests.cpu_millis(), 2050);
    assert_eq!(
        web.node_selector.get("sandbox").map(String::as_str),
        Some("gvisor")
    );
    assert_eq!(web.priority, 1000);
    assert_eq!(
        web.do_not_disrupt,
        Some(DoNotDisrupt::For(Duration::from_secs(1800)))
    );
    assert_eq!(web.deletion_cost, -5);
    assert_eq!(web.run_duration, Some(Duration::from_secs(5400)));
    assert_eq!(web.host_ports.len(), 3);
    assert_eq!(web.local_storage_volumes, ["scratch", "host"]);
    let solo = &original.core.workloads[1].template;
    assert_eq!(solo.do_not_disrupt, Some(DoNotDisrupt::Always));
    assert_eq!(solo.host_ports[0].port, 53);
    let batch = &original.core.workloads[2].template;
    assert_eq!(batch.deletion_cost, 12);
    assert_eq!(batch.do_not_disrupt, None);
}

/// Exporting is a fixed point: the snapshot of a snapshot is the same text.
#[test]
fn exporting_a_read_back_snapshot_gives_the_same_text() {
    let once = export_all(&load(RICH));
    let twice = export_all(&load(&once));
    assert_eq!(once, twice);
}

#[test]
fn requests_are_exact_and_never_include_pods() {
    let m = load(RICH);
    let web = &m.core.workloads[0].template;
    assert_eq!(web.requests.pods(), 1);
    let r = container_resources(web, &m.resource_names);
    // 1.5Gi + 129M + 128Mi + 64Mi is no whole number of KiB: plain bytes.
    assert_eq!(
        texts(r.requests.as_ref()),
        [
            ("cpu", "2050m"),
            ("ephemeral-storage", "2Gi"),
            ("example.com/fpga", "2"),
            ("memory", "1940939328"),
            ("nvidia.com/gpu", "1"),
        ]
    );
    // Extended resources cannot be overcommitted: limit = request.
    assert_eq!(
        texts(r.limits.as_ref()),
        [("example.com/fpga", "2"), ("nvidia.com/gpu", "1")]
    );
    let solo = &m.core.workloads[1].template;
    let r = container_resources(solo, &m.resource_names);
    assert_eq!(
        texts(r.requests.as_ref()),
        [
            ("cpu", "500m"),
            ("hugepages-2Mi", "512Mi"),
            ("memory", "1Gi")
        ]
    );
    assert_eq!(texts(r.limits.as_ref()), [("hugepages-2Mi", "512Mi")]);
    // A pod requesting nothing but its implicit pod slot writes no resources.
    let batch = &m.core.workloads[2].template;
    let (_, pod) = pod_template(batch, &m.resource_names);
    assert_eq!(pod.containers[0].resources, None);
}

#[test]
fn whole_cores_and_binary_sizes_are_written_compactly() {
    let names = ResourceNames::default();
    let spec = PodSpec {
        requests: Resources::cpu_mem(3000, 3 << 30)
            .with(ResourceKind::EphemeralStorage, 1536)
            .with(ResourceKind::Pods, 1),
        ..PodSpec::default()
    };
    let r = container_resources(&spec, &names);
    assert_eq!(
        texts(r.requests.as_ref()),
        [
            ("cpu", "3"),
            ("ephemeral-storage", "1536"),
            ("memory", "3Gi")
        ]
    );
    assert_eq!(r.limits, None);
}

#[test]
fn a_spare_slot_without_a_name_is_left_out() {
    let spec = PodSpec {
        requests: Resources::cpu_mem(100, 0).with(ResourceKind::Extra(2), 1),
        ..PodSpec::default()
    };
    let r = container_resources(&spec, &ResourceNames::default());
    assert_eq!(texts(r.requests.as_ref()), [("cpu", "100m")]);
}

/// Annotations that read back as their fields stay as written; others are
/// rewritten from the fields, or dropped when the field is unset.
#[test]
fn annotations_agree_with_the_fields_they_back() {
    let m = load(RICH);
    let mut spec = (*m.core.workloads[0].template).clone();
    let (meta, _) = pod_template(&spec, &m.resource_names);
    assert_eq!(meta.annotations.as_ref(), Some(&spec.annotations));

    spec.do_not_disrupt = Some(DoNotDisrupt::For(Duration::from_millis(90_500)));
    spec.deletion_cost = 0;
    spec.run_duration = None;
    let (meta, _) = pod_template(&spec, &m.resource_names);
    let written = meta.annotations.unwrap_or_default();
    let get = |key: &str| written.get(key).map(String::as_str);
    assert_eq!(get(pod::DO_NOT_DISRUPT_ANNOTATION), Some("1m30s500ms"));
    assert_eq!(get(pod::POD_DELETION_COST_ANNOTATION), None);
    assert_eq!(get(pod::DURATION_ANNOTATION), None);
    assert_eq!(get("team"), Some("payments"));

    // Fields set on a pod whose annotations never held them.
    let spec = PodSpec {
        do_not_disrupt: Some(DoNotDisrupt::Always),
        deletion_cost: 7,
        run_duration: Some(Duration::from_secs(600)),
        ..PodSpec::default()
    };
    let (meta, _) = pod_template(&spec, &ResourceNames::default());
    let written = meta.annotations.unwrap_or_default();
    let pairs: Vec<_> = written
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            (pod::POD_DELETION_COST_ANNOTATION, "7"),
            (pod::DO_NOT_DISRUPT_ANNOTATION, "true"),
            (pod::DURATION_ANNOTATION, "10m"),
        ]
    );
}

#[test]
fn go_durations_read_back_exactly() {
    let cases = [
        (Duration::ZERO, "0s"),
        (Duration::from_nanos(1), "1ns"),
        (Duration::from_micros(1_500), "1ms500us"),
        (Duration::from_secs(5_400), "1h30m"),
        (Duration::new(3_601, 7), "1h1s7ns"),
        (Duration::from_secs(100 * 3_600), "100h"),
    ];
    for (d, text) in cases {
        assert_eq!(go_duration(d), text);
        assert_eq!(parse_go_duration(text), Ok(d), "{text}");
    }
}

/// Fields absent from the model are absent from the written pod, so that
/// a plain pod exports as a plain pod.
#[test]
fn a_default_pod_exports_only_its_fixed_fields() {
    let (meta, spec) = pod_template(&PodSpec::default(), &ResourceNames::default());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!((meta.labels, meta.annotations), (None, None));
    assert_eq!(spec.priority, Some(0));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(spec.affinity, None);
    assert_eq!(spec.tolerations, None);
    assert_eq!(spec.topology_spread_constraints, None);
    assert_eq!(spec.volumes, None);
    assert_eq!(spec.containers[0].name, CONTAINER_NAME);
    assert_eq!(spec.containers[0].image.as_deref(), Some(CONTAINER_IMAGE));
    assert_eq!(spec.containers[0].ports, None);
}
