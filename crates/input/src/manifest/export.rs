//! The reverse of [`super::convert`]: writes karpsim's scheduling form of a
//! pod back as k8s-openapi objects, so that a simulated cluster can be saved
//! as a kubectl-shaped snapshot that karpsim (and kubectl) read again.
//!
//! The written pod is the smallest one that reads back as the same
//! [`PodSpec`]: one pause container carrying the effective requests, and
//! every scheduling constraint the model keeps.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::convert::overcommit_allowed;
use crate::kube::pod::{
    self, DoNotDisrupt, HostPort, InclusionPolicy, NodeSelectorExpression, PodAffinity,
    PodAffinityTerm, PodSpec, TopologySpreadConstraint, WhenUnsatisfiable,
};
use crate::kube::resources::{ResourceKind, ResourceNames, Resources};
use crate::kube::selector::{LabelSelector, SelectorOperator};
use crate::kube::taints::{Toleration, TolerationOperator};
use crate::time::duration::parse_go_duration;

/// Name of the one container of an exported pod.
pub const CONTAINER_NAME: &str = "main";
/// Image of the one container of an exported pod: it only has to exist.
pub const CONTAINER_IMAGE: &str = "registry.k8s.io/pause:3.9";

/// The pod metadata (labels, annotations) and k8s-openapi PodSpec that read
/// back, through `convert::pod_spec`, as `spec`.
///
/// The metadata carries the namespace but no name; callers name the object
/// it goes into. Extended resources in spare slots are named from `names`
/// (a slot `names` does not name is left out). Not written, because a pod
/// cannot state them: a `pods` request other than the implicit 1,
/// `node_affinity.uses_match_fields` (the fields themselves are not kept),
/// and the sub-second part of the termination grace period.
pub fn pod_template(spec: &PodSpec, names: &ResourceNames) -> (meta::ObjectMeta, core::PodSpec) {
    let metadata = meta::ObjectMeta {
        namespace: Some(spec.namespace.clone()),
        labels: non_empty_map(spec.labels.clone()),
        annotations: non_empty_map(annotations(spec)),
        ..meta::ObjectMeta::default()
    };
    let container = core::Container {
        name: CONTAINER_NAME.to_string(),
        image: Some(CONTAINER_IMAGE.to_string()),
        resources: resources(&spec.requests, names),
        ports: non_empty(spec.host_ports.iter().map(container_port).collect()),
        ..core::Container::default()
    };
    let grace = i64::try_from(spec.termination_grace.as_secs()).unwrap_or(i64::MAX);
    let out = core::PodSpec {
        containers: vec![container],
        // Written even when it is 0: the value then reads back the same
        // whatever PriorityClasses (or global default) the reader knows.
        priority: Some(spec.priority),
        priority_class_name: spec.priority_class_name.clone(),
        termination_grace_period_seconds: Some(grace),
        node_selector: non_empty_map(spec.node_selector.clone()),
        affinity: affinity(spec),
        tolerations: non_empty(spec.tolerations.iter().map(toleration).collect()),
        topology_spread_constraints: non_empty(spec.topology_spread.iter().map(spread).collect()),
        volumes: non_empty(
            spec.local_storage_volumes
                .iter()
                .map(|name| core::Volume {
                    name: name.clone(),
                    empty_dir: Some(core::EmptyDirVolumeSource::default()),
                    ..core::Volume::default()
                })
                .collect(),
        ),
        ..core::PodSpec::default()
    };
    (metadata, out)
}

/// Serializes a k8s-openapi object (or any serde value) as YAML text.
pub fn to_yaml<T: serde::Serialize>(value: &T) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(value)
}

/// Formats a duration so that Go's `time.ParseDuration` (and
/// [`parse_go_duration`]) reads back exactly the same value: `1h30m`,
/// `2s500ms`, `0s`.
pub fn go_duration(d: Duration) -> String {
    const UNITS: [(&str, u128); 6] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let mut rest = d.as_nanos();
    if rest == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    for (unit, size) in UNITS {
        let count = rest / size;
        if count > 0 {
            out.push_str(&format!("{count}{unit}"));
            rest %= size;
        }
    }
    out
}

/// The as-written annotations, with the ones the model also keeps as fields
/// made to agree with those fields: an annotation that reads back as its
/// field is kept as written, any other is rewritten from the field (or
/// dropped when the field is unset).
fn annotations(spec: &PodSpec) -> BTreeMap<String, String> {
    let mut out = spec.annotations.clone();
    reconcile(
        &mut out,
        pod::DO_NOT_DISRUPT_ANNOTATION,
        spec.do_not_disrupt.map(|d| match d {
            DoNotDisrupt::Always => "true".to_string(),
            DoNotDisrupt::For(d) => go_duration(d),
        }),
        |v| read_do_not_disrupt(v) == spec.do_not_disrupt,
    );
    reconcile(
        &mut out,
        pod::POD_DELETION_COST_ANNOTATION,
        (spec.deletion_cost != 0).then(|| spec.deletion_cost.to_string()),
        |v| v.trim().parse::<i32>() == Ok(spec.deletion_cost),
    );
    reconcile(
        &mut out,
        pod::DURATION_ANNOTATION,
        spec.run_duration.map(go_duration),
        |v| parse_go_duration(v).ok() == spec.run_duration,
    );
    out
}

fn reconcile(
    annotations: &mut BTreeMap<String, String>,
    key: &str,
    canonical: Option<String>,
    reads_back: impl Fn(&str) -> bool,
) {
    if annotations.get(key).is_some_and(|v| reads_back(v)) {
        return;
    }
    match canonical {
        Some(value) => annotations.insert(key.to_string(), value),
        None => annotations.remove(key),
    };
}

/// `karpenter.sh/do-not-disrupt` as the reader takes it: `"true"`, a
/// duration, or ignored.
fn read_do_not_disrupt(value: &str) -> Option<DoNotDisrupt> {
    if value == "true" {
        Some(DoNotDisrupt::Always)
    } else {
        parse_go_duration(value).ok().map(DoNotDisrupt::For)
    }
}

/// Requests, without the implicit `pods: 1` the reader adds. Resources that
/// cannot be overcommitted must have a limit equal to their request.
fn resources(requests: &Resources, names: &ResourceNames) -> Option<core::ResourceRequirements> {
    let mut written = BTreeMap::new();
    let mut limits = BTreeMap::new();
    for (kind, amount) in requests.iter() {
        if kind == ResourceKind::Pods {
            continue;
        }
        let name = names.name(kind);
        // A spare slot the table does not name cannot be written.
        if names.lookup(name) != Some(kind) {
            continue;
        }
        let quantity = K8sQuantity(quantity_text(kind, name, amount));
        if !overcommit_allowed(name) {
            limits.insert(name.to_string(), quantity.clone());
        }
        written.insert(name.to_string(), quantity);
    }
    if written.is_empty() {
        return None;
    }
    Some(core::ResourceRequirements {
        requests: Some(written),
        limits: non_empty_map(limits),
        ..core::ResourceRequirements::default()
    })
}

/// A quantity that parses back to exactly `amount` of `kind`'s unit: CPU in
/// cores or millicores, byte sizes with the largest exact binary suffix,
/// counts as integers.
pub(crate) fn quantity_text(kind: ResourceKind, name: &str, amount: i64) -> String {
    match kind {
        ResourceKind::Cpu if amount % 1000 == 0 => (amount / 1000).to_string(),
        ResourceKind::Cpu => format!("{amount}m"),
        ResourceKind::Memory | ResourceKind::EphemeralStorage => binary_size(amount),
        _ if name.starts_with("hugepages-") => binary_size(amount),
        _ => amount.to_string(),
    }
}

fn binary_size(bytes: i64) -> String {
    const SUFFIXES: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    if bytes != 0 {
        for (suffix, shift) in SUFFIXES {
            let unit = 1i64 << shift;
            if bytes % unit == 0 {
                return format!("{}{suffix}", bytes / unit);
            }
        }
    }
    bytes.to_string()
}

fn container_port(p: &HostPort) -> core::ContainerPort {
    core::ContainerPort {
        container_port: p.port,
        host_port: Some(p.port),
        protocol: Some(p.protocol.clone()),
        host_ip: (!p.host_ip.is_empty()).then(|| p.host_ip.clone()),
        ..core::ContainerPort::default()
    }
}

fn toleration(t: &Toleration) -> core::Toleration {
    core::Toleration {
        key: (!t.key.is_empty()).then(|| t.key.clone()),
        operator: Some(
            match t.operator {
                TolerationOperator::Equal => "Equal",
                TolerationOperator::Exists => "Exists",
            }
            .to_string(),
        ),
        value: (!t.value.is_empty()).then(|| t.value.clone()),
        effect: t.effect.map(|e| e.as_str().to_string()),
        toleration_seconds: t.toleration_seconds,
    }
}

fn affinity(spec: &PodSpec) -> Option<core::Affinity> {
    let na = &spec.node_affinity;
    let node_affinity =
        (!na.required.is_empty() || !na.preferred.is_empty()).then(|| core::NodeAffinity {
            required_during_scheduling_ignored_during_execution: (!na.required.is_empty()).then(
                || core::NodeSelector {
                    node_selector_terms: na.required.iter().map(|t| node_term(t)).collect(),
                },
            ),
            preferred_during_scheduling_ignored_during_execution: non_empty(
                na.preferred
                    .iter()
                    .map(|p| core::PreferredSchedulingTerm {
                        weight: p.weight,
                        preference: node_term(&p.expressions),
                    })
                    .collect(),
            ),
        });
    let pod_affinity = (!spec.pod_affinity.is_empty()).then(|| {
        let (required, preferred) = affinity_terms(&spec.pod_affinity);
        core::PodAffinity {
            required_during_scheduling_ignored_during_execution: required,
            preferred_during_scheduling_ignored_during_execution: preferred,
        }
    });
    let pod_anti_affinity = (!spec.pod_anti_affinity.is_empty()).then(|| {
        let (required, preferred) = affinity_terms(&spec.pod_anti_affinity);
        core::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: required,
            preferred_during_scheduling_ignored_during_execution: preferred,
        }
    });
    if node_affinity.is_none() && pod_affinity.is_none() && pod_anti_affinity.is_none() {
        return None;
    }
    Some(core::Affinity {
        node_affinity,
        pod_affinity,
        pod_anti_affinity,
    })
}

fn node_term(expressions: &[NodeSelectorExpression]) -> core::NodeSelectorTerm {
    core::NodeSelectorTerm {
        match_expressions: non_empty(
            expressions
                .iter()
                .map(|e| core::NodeSelectorRequirement {
                    key: e.key.clone(),
                    operator: e.operator.as_str().to_string(),
                    values: non_empty(e.values.clone()),
                })
                .collect(),
        ),
        match_fields: None,
    }
}

type AffinityTerms = (
    Option<Vec<core::PodAffinityTerm>>,
    Option<Vec<core::WeightedPodAffinityTerm>>,
);

fn affinity_terms(a: &PodAffinity) -> AffinityTerms {
    let required = non_empty(a.required.iter().map(affinity_term).collect());
    let preferred = non_empty(
        a.preferred
            .iter()
            .map(|w| core::WeightedPodAffinityTerm {
                weight: w.weight,
                pod_affinity_term: affinity_term(&w.term),
            })
            .collect(),
    );
    (required, preferred)
}

fn affinity_term(t: &PodAffinityTerm) -> core::PodAffinityTerm {
    core::PodAffinityTerm {
        label_selector: t.selector.as_ref().map(selector),
        topology_key: t.topology_key.clone(),
        namespaces: non_empty(t.namespaces.clone()),
        namespace_selector: t.namespace_selector.as_ref().map(selector),
        match_label_keys: non_empty(t.match_label_keys.clone()),
        mismatch_label_keys: non_empty(t.mismatch_label_keys.clone()),
    }
}

/// A label selector; an empty one stays present (`{}` matches everything,
/// absence matches nothing).
pub(crate) fn selector(s: &LabelSelector) -> meta::LabelSelector {
    meta::LabelSelector {
        match_labels: non_empty_map(s.match_labels.clone()),
        match_expressions: non_empty(
            s.match_expressions
                .iter()
                .map(|e| meta::LabelSelectorRequirement {
                    key: e.key.clone(),
                    operator: match e.operator {
                        SelectorOperator::In => "In",
                        SelectorOperator::NotIn => "NotIn",
                        SelectorOperator::Exists => "Exists",
                        SelectorOperator::DoesNotExist => "DoesNotExist",
                    }
                    .to_string(),
                    values: non_empty(e.values.clone()),
                })
                .collect(),
        ),
    }
}

fn spread(c: &TopologySpreadConstraint) -> core::TopologySpreadConstraint {
    // Policies are written only when they differ from the API's defaults,
    // which are also the reader's.
    let policy = |p: InclusionPolicy, default: InclusionPolicy| {
        (p != default).then(|| {
            match p {
                InclusionPolicy::Honor => "Honor",
                InclusionPolicy::Ignore => "Ignore",
            }
            .to_string()
        })
    };
    core::TopologySpreadConstraint {
        max_skew: c.max_skew,
        topology_key: c.topology_key.clone(),
        when_unsatisfiable: match c.when_unsatisfiable {
            WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
            WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
        }
        .to_string(),
        label_selector: c.selector.as_ref().map(selector),
        min_domains: c.min_domains,
        node_affinity_policy: policy(c.node_affinity_policy, InclusionPolicy::Honor),
        node_taints_policy: policy(c.node_taints_policy, InclusionPolicy::Ignore),
        match_label_keys: non_empty(c.match_label_keys.clone()),
    }
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

fn non_empty_map<K, V>(map: BTreeMap<K, V>) -> Option<BTreeMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
