//! Tests of the combined loader over realistic fixtures and bad inputs.

use std::time::Duration;

use super::{Manifests, load, load_str};
use crate::cloud::nodeclass::{AmiFamily, InstanceStorePolicy, Threshold};
use crate::kube::pod::DoNotDisrupt;
use crate::kube::requirements::Operator;
use crate::kube::resources::{GIB, MIB, ResourceKind};
use crate::kube::workload::{IntOrPercent, WorkloadKind};
use crate::nodepool::{BudgetNodes, ConsolidationPolicy, DisruptionReason};

const WORKLOADS: &str = include_str!("../../../../tests/fixtures/manifests/workloads.yaml");
const NODEPOOLS: &str = include_str!("../../../../tests/fixtures/manifests/nodepools.yaml");
const GENERAL: &str =
    include_str!("../../../../tests/fixtures/manifests/nodepool-general-purpose.yaml");

fn ok(file: &str, text: &str) -> Manifests {
    load_str(file, text).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    load_str("bad.yaml", text)
        .expect_err("must fail")
        .to_string()
}

fn workload<'a>(m: &'a Manifests, name: &str) -> &'a crate::kube::workload::Workload {
    m.core
        .workloads
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// Init max rule + sidecar rule (Kubernetes docs, KEP-753) and limits-only
/// defaulting, worked by hand for the `web` Deployment:
/// steady = app 500m/512Mi + cache (limits→requests) 200m/128Mi + sidecar
/// 100m/64Mi = 800m/704Mi; init `migrate` runs before the sidecar: 1000m/256Mi.
#[test]
fn deployment_effective_requests() {
    let m = ok("workloads.yaml", WORKLOADS);
    let web = workload(&m, "web");
    assert_eq!(web.kind, WorkloadKind::Deployment { replicas: 3 });
    assert_eq!(web.namespace, "shop");
    let r = web.template.requests;
    assert_eq!(
        (r.cpu_millis(), r.memory_bytes(), r.pods()),
        (1000, 704 * MIB, 1)
    );
    assert_eq!(
        web.template.priority, 10_000,
        "PriorityClass defined later in the file"
    );
    assert_eq!(web.template.deletion_cost, -100);
    assert_eq!(
        web.template.labels.get("tier").map(String::as_str),
        Some("front")
    );
}

/// Kubernetes docs "Pod Overhead": the RuntimeClass overhead is added.
#[test]
fn runtime_class_overhead_is_added() {
    let m = ok("workloads.yaml", WORKLOADS);
    let pod = workload(&m, "sandboxed");
    assert_eq!(pod.kind, WorkloadKind::Pod);
    assert_eq!(pod.template.requests.cpu_millis(), 500);
    assert_eq!(pod.template.requests.memory_bytes(), 220 * MIB);
    assert_eq!(pod.template.do_not_disrupt, Some(DoNotDisrupt::Always));
    assert_eq!(pod.template.termination_grace, Duration::from_secs(120));
}

#[test]
fn job_daemonset_statefulset_and_pdb() {
    let m = ok("workloads.yaml", WORKLOADS);
    let WorkloadKind::Job(job) = &workload(&m, "nightly-report").kind else {
        panic!("not a job");
    };
    assert_eq!((job.parallelism, job.completions), (4, Some(10)));
    assert_eq!(job.active_deadline, Some(Duration::from_secs(7200)));
    assert_eq!(job.duration, Some(Duration::from_secs(45 * 60)));
    let job_pod = &workload(&m, "nightly-report").template;
    assert_eq!(job_pod.tolerations.len(), 1);
    assert_eq!(
        job_pod
            .node_selector
            .get("karpenter.sh/capacity-type")
            .map(String::as_str),
        Some("spot")
    );

    let agent = workload(&m, "node-agent");
    assert_eq!(agent.kind, WorkloadKind::DaemonSet);
    assert_eq!(agent.template.priority, 2_000_001_000);
    // hostNetwork: the container port becomes a host port.
    assert_eq!(
        agent
            .template
            .host_ports
            .iter()
            .map(|p| p.port)
            .collect::<Vec<_>>(),
        [9100]
    );

    let db = workload(&m, "db");
    assert_eq!(db.kind, WorkloadKind::StatefulSet { replicas: 2 });
    assert_eq!(db.template.requests.ephemeral_bytes(), GIB);

    let pdb = &m.core.pdbs[0];
    assert_eq!(pdb.max_unavailable, Some(IntOrPercent::Percent(25)));
    let selector = pdb.selector.as_ref().expect("selector");
    assert!(selector.matches(&web_labels()));
}

fn web_labels() -> std::collections::BTreeMap<String, String> {
    [("app", "web"), ("tier", "front")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn affinity_and_spread_constraints() {
    let m = ok("workloads.yaml", WORKLOADS);
    let api = &workload(&m, "api-0").template;
    let gpu = m.resource_names.lookup("nvidia.com/gpu").expect("gpu");
    assert_eq!(api.requests.get(gpu), 1);
    let na = &api.node_affinity;
    assert_eq!(na.required.len(), 2);
    assert_eq!(na.required[0][1].operator, Operator::Gt);
    assert_eq!(na.preferred[0].weight, 50);
    assert!(!na.uses_match_fields);
    let first = crate::kube::pod::term_requirements(&na.required[0]).expect("valid");
    assert_eq!(first.len(), 2);
    assert_eq!(
        api.pod_anti_affinity.required[0].match_label_keys,
        ["version"]
    );
    assert_eq!(api.pod_anti_affinity.preferred[0].weight, 10);
    assert_eq!(api.pod_affinity.required[0].namespaces, ["shop", "cache"]);
    let tsc = &api.topology_spread;
    assert_eq!(tsc.len(), 2);
    assert_eq!(tsc[0].min_domains, Some(3));
    assert_eq!(
        tsc[0].node_taints_policy,
        crate::kube::pod::InclusionPolicy::Honor
    );
    assert_eq!(
        tsc[1].node_affinity_policy,
        crate::kube::pod::InclusionPolicy::Honor
    );
    assert_eq!(
        tsc[1].when_unsatisfiable,
        crate::kube::pod::WhenUnsatisfiable::ScheduleAnyway
    );
}

#[test]
fn core_warnings_once_per_field() {
    let m = ok("workloads.yaml", WORKLOADS);
    let pvc: Vec<_> = m
        .warnings
        .iter()
        .filter(|w| w.message.contains("persistent volumes"))
        .collect();
    assert_eq!(pvc.len(), 1);
    assert_eq!(pvc[0].path, "spec.volumeClaimTemplates");
}

#[test]
fn nodepool_fields() {
    let m = ok("nodepools.yaml", NODEPOOLS);
    let pool = &m.nodepools[0];
    assert_eq!(pool.name, "batch");
    assert_eq!(pool.weight, Some(20));
    assert_eq!(pool.requirements[0].min_values, Some(3));
    assert_eq!(pool.requirements[2].expression.operator, Operator::Lte);
    assert_eq!(pool.requirement_set.len(), 4);
    assert!(pool.requirement_set.has_min_values());
    assert_eq!(pool.taints.len(), 1);
    assert_eq!(pool.startup_taints[0].key, "example.com/agent-not-ready");
    assert_eq!(pool.expire_after, Some(Duration::from_secs(168 * 3600)));
    assert_eq!(
        pool.termination_grace_period,
        Some(Duration::from_secs(5400))
    );
    assert_eq!(
        pool.disruption.consolidation_policy,
        ConsolidationPolicy::WhenEmpty
    );
    assert_eq!(
        pool.disruption.consolidate_after,
        Some(Duration::from_secs(300))
    );
    let b = &pool.disruption.budgets;
    assert_eq!(b[0].nodes, BudgetNodes::Percent(20));
    assert_eq!(
        b[0].reasons,
        [DisruptionReason::Empty, DisruptionReason::Drifted]
    );
    assert_eq!(b[1].duration, Some(Duration::from_secs(8 * 3600)));
    assert_eq!(b[2].nodes, BudgetNodes::Count(3));
    assert_eq!(pool.limits.get(&ResourceKind::Cpu), Some(&1_000_000));
    assert_eq!(pool.limits.get(&ResourceKind::Memory), Some(&(4000 * GIB)));
    assert_eq!(pool.limits.get(&ResourceKind::NvidiaGpu), Some(&8));
}

#[test]
fn ec2nodeclass_settings_and_unmodelled_warnings() {
    let m = ok("nodepools.yaml", NODEPOOLS);
    let class = &m.nodeclasses[0];
    let s = &class.settings;
    assert_eq!(s.ami_family, AmiFamily::Bottlerocket);
    assert_eq!(s.kubelet.max_pods, Some(58));
    assert_eq!(s.kubelet.kube_reserved.cpu_millis, Some(200));
    assert_eq!(s.kubelet.system_reserved.memory_bytes, Some(256 * MIB));
    assert_eq!(s.kubelet.eviction_memory_available, Threshold::Percent(5.0));
    assert_eq!(
        s.root_volume_bytes,
        Some(200 * GIB),
        "rootVolume: true wins over the device name"
    );
    assert_eq!(s.instance_store_policy, InstanceStorePolicy::Raid0);
    let paths: Vec<_> = m.warnings.iter().map(|w| w.path.as_str()).collect();
    for field in [
        "spec.role",
        "spec.subnetSelectorTerms",
        "spec.securityGroupSelectorTerms",
        "spec.kubelet.clusterDNS",
    ] {
        assert_eq!(
            paths.iter().filter(|p| **p == field).count(),
            1,
            "{field} in {paths:?}"
        );
    }
}

/// The widely copied example uses pre-v1 spellings: it must load, with a
/// warning naming what karpenter.sh/v1 expects for each.
#[test]
fn shared_example_loads_with_its_two_warnings() {
    let m = ok("nodepool-general-purpose.yaml", GENERAL);
    let pool = &m.nodepools[0];
    assert_eq!(
        pool.disruption.consolidation_policy,
        ConsolidationPolicy::WhenEmptyOrUnderutilized
    );
    assert_eq!(pool.expire_after, Some(Duration::from_secs(720 * 3600)));
    assert_eq!(m.nodeclasses[0].settings.ami_family, AmiFamily::Al2023);
    let text: Vec<String> = m.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        text.iter().any(|w| w.starts_with(
            "nodepool-general-purpose.yaml:22:26: spec.disruption.consolidationPolicy:"
        ) && w.contains("WhenEmptyOrUnderutilized")),
        "{text:#?}"
    );
    assert!(
        text.iter().any(|w| w
            .starts_with("nodepool-general-purpose.yaml:23:18: spec.disruption.expireAfter:")
            && w.contains("spec.template.spec.expireAfter")),
        "{text:#?}"
    );
}

#[test]
fn several_files_share_classes_and_unknown_kinds_warn() {
    let rc = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\noverhead: {podFixed: {cpu: 100m}}\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  runtimeClassName: gvisor\n  containers: [{name: c, resources: {requests: {cpu: 1}}}]\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n";
    let m = load(&[("pod.yaml", pod), ("rc.yaml", rc)]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.core.workloads[0].template.requests.cpu_millis(), 1100);
    assert_eq!(m.warnings.len(), 1);
    assert_eq!(
        m.warnings[0].to_string(),
        "pod.yaml:8:1: kind: v1 Service is not read by karpsim; skipped"
    );
}

const POOL_HEAD: &str = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n";

#[test]
fn bad_inputs_give_one_clear_line() {
    let pool = |body: &str| format!("{POOL_HEAD}{body}");
    let template = "  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n";
    let cases: Vec<(String, &str)> = vec![
        (
            pool("  template:\n    spec:\n      nodeClassRef: {group: g, kind: k, name: d}\n      requirements:\n      - key: kubernetes.io/arch\n        operator: Inn\n        values: [amd64]\n"),
            "bad.yaml:10:19: spec.template.spec.requirements[0].operator: unknown operator \"Inn\" (expected In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)",
        ),
        (
            pool(&format!("{template}  weight: 101\n")),
            "bad.yaml:8:11: spec.weight: weight 101 out of range 1..100",
        ),
        (
            pool(&format!("{template}  disruption:\n    consolidateAfter: 1d\n")),
            "bad.yaml:9:23: spec.disruption.consolidateAfter: invalid duration \"1d\" (expected whole numbers with units s, m, h, like \"720h\" or \"1h30m\")",
        ),
        (
            pool(&format!("{template}  disruption:\n    budgets:\n    - nodes: \"10%\"\n      schedule: \"@daily\"\n")),
            "bad.yaml:10:7: spec.disruption.budgets[0]: 'schedule' must be set with 'duration'",
        ),
        (
            pool(&format!("{template}  disruption:\n    budgets:\n    - nodes: ten\n")),
            "bad.yaml:10:14: spec.disruption.budgets[0].nodes: invalid nodes \"ten\" (expected a count like \"5\" or a percentage like \"10%\")",
        ),
        (
            pool(&format!("{template}  limits:\n    cpu: 10x\n")),
            "bad.yaml:9:10: spec.limits.cpu: invalid quantity \"10x\": unknown suffix",
        ),
        (
            pool(&format!("{template}  replicas: -1\n")),
            "bad.yaml:8:13: spec.replicas: replicas must not be negative, got -1",
        ),
        (
            pool(&format!("{template}  replicas: 2\n  limits:\n    nodes: \"4\"\n    cpu: \"8\"\n")),
            "bad.yaml:11:10: spec.limits.cpu: only 'limits.nodes' is supported on static NodePools (spec.replicas is set)",
        ),
        (
            pool(&format!("{template}  replicas: 2\n  weight: 10\n")),
            "bad.yaml:9:11: spec.weight: 'weight' is not supported on static NodePools (spec.replicas is set)",
        ),
        (
            pool(&format!("{template}  templat: {{}}\n")),
            "bad.yaml:8:3: spec.templat: unknown field `templat`, expected one of `template`, `disruption`, `limits`, `weight`, `replicas`",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: -2\n  selector: {}\n  template:\n    spec:\n      containers: [{name: c}]\n".to_string(),
            "bad.yaml:5:13: spec.replicas: replicas must not be negative, got -2",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        cpu: 2 cores\n".to_string(),
            "bad.yaml:9:14: spec.containers[0].resources.requests.cpu: invalid quantity \"2 cores\": unknown suffix",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: {name: c}\n".to_string(),
            "bad.yaml:5:15: spec.containers: invalid type: map, expected a sequence",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c\n".to_string(),
            "",
        ),
    ];
    for (text, expected) in cases {
        let got = err(&text);
        if expected.is_empty() {
            assert!(
                got.starts_with("bad.yaml:") && got.contains("malformed YAML"),
                "{got}"
            );
            assert_eq!(got.lines().count(), 1, "{got}");
        } else {
            assert_eq!(got, expected);
        }
    }
}
