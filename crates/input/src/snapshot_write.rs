//! Writing a simulated cluster as a kubectl cluster snapshot: the
//! `kind: List` that `kubectl get nodes,pods,pdb,deployments,replicasets,
//! statefulsets,daemonsets,jobs,nodeclaims,nodepools,ec2nodeclasses -A -o
//! yaml` prints, which kubectl and [`crate::cluster_snapshot`] read again.
//!
//! Items come in a fixed order (NodePools, EC2NodeClasses, Nodes,
//! NodeClaims, workloads with each Deployment's ReplicaSet right after it,
//! PodDisruptionBudgets, Pods), and everything that is not in the model
//! (UIDs, provider IDs, ReplicaSet names) is derived from object names by
//! a fixed hash, so the same input always gives the same bytes.
//!
//! Shapes the reader relies on:
//! - a Deployment `d` owns one ReplicaSet `d-<10 hex>` (ownerReferences kind
//!   Deployment, `controller: true`) whose template, selector and labels add
//!   `pod-template-hash: <10 hex>`; the Deployment's pods carry that label
//!   too and are owned by the ReplicaSet;
//! - every other pod is owned (`controller: true`) by its workload; a bare
//!   pod has no ownerReferences;
//! - a NodeClaim is named after its node and names it in `status.nodeName`
//!   once registered; a node that has not registered has a NodeClaim and no
//!   Node;
//! - NodeClaim conditions `Launched`, `Registered`, `Initialized`, `Ready`,
//!   `Drifted` (reason kept) and `InstanceTerminating`, each `True` with its
//!   `lastTransitionTime`; a pod kube-scheduler could not place has
//!   `PodScheduled=False` with reason `Unschedulable`;
//! - annotations `karpenter.sh/nodepool-hash` with
//!   `karpenter.sh/nodepool-hash-version: karpsim-v1`, and
//!   `karpenter.sh/do-not-disrupt: "true"` on the Node (on the NodeClaim
//!   when there is no Node);
//! - the latest time written is every Node's Ready heartbeat, `now`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::cloud::CapacityType;
use crate::cloud::nodeclass::{
    AmiFamily, InstanceStorePolicy, KubeletSettings, NodeClassSettings, Reserved, Threshold,
};
use crate::cluster::NodeClaimInfo;
use crate::karpenter::disruption::drift::NODEPOOL_HASH_VERSION;
use crate::kube::labels::{
    LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_NODE_INITIALIZED, LABEL_NODE_REGISTERED,
    LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE,
};
use crate::kube::pod::{DO_NOT_DISRUPT_ANNOTATION, DURATION_ANNOTATION, PodSpec};
use crate::kube::resources::{ResourceKind, ResourceNames, Resources};
use crate::kube::taints::{NOT_READY_TAINT_KEY, Taint, TaintEffect};
use crate::kube::workload::{
    IntOrPercent, PodDisruptionBudget, UnhealthyPodEvictionPolicy, Workload, WorkloadKind,
};
use crate::manifest::export::{go_duration, pod_template, quantity_text, selector, to_yaml};
use crate::nodepool::{
    Budget, BudgetNodes, ConsolidationPolicy, DisruptionReason, NodeClassRef, NodePool,
};
use crate::nodepools::ec2nodeclass::root_device;
use crate::sim::engine::{InitialNode, InitialPod, InitialState, InitialWorkload, NodeOwner};
use crate::sim::spot::timestamp::Timestamp;
use crate::time::SimTime;

/// The label EKS managed node groups put on their nodes.
pub const LABEL_EKS_NODEGROUP: &str = "eks.amazonaws.com/nodegroup";
/// EKS managed node groups' capacity type label (`ON_DEMAND`, `SPOT`).
pub const LABEL_EKS_CAPACITY_TYPE: &str = "eks.amazonaws.com/capacityType";
/// The label the Deployment controller adds to its ReplicaSets' pods.
pub const LABEL_POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// Karpenter's annotation of the NodePool template hash on a NodeClaim.
pub const ANNOTATION_NODEPOOL_HASH: &str = "karpenter.sh/nodepool-hash";
/// The hash scheme version beside [`ANNOTATION_NODEPOOL_HASH`].
pub const ANNOTATION_NODEPOOL_HASH_VERSION: &str = "karpenter.sh/nodepool-hash-version";
/// The taint of a cordoned node.
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The node IAM role written into every EC2NodeClass: the CRD requires
/// one, and karpsim does not model it.
pub const PLACEHOLDER_ROLE: &str = "KarpenterNodeRole-karpsim";
/// The tag of the subnet and security group selectors (and a custom AMI's
/// selector) written into every EC2NodeClass, which the CRD also requires.
pub const PLACEHOLDER_DISCOVERY_TAG: (&str, &str) = ("karpenter.sh/discovery", "karpsim");

/// What a snapshot is written from.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotParts<'a> {
    /// Nodes (with their NodeClaims), workloads with their pods, PDBs.
    pub state: &'a InitialState,
    /// NodePools, written first.
    pub nodepools: &'a [NodePool],
    /// EC2NodeClasses by name (may be empty).
    pub nodeclasses: &'a [(String, NodeClassSettings)],
    /// Names of the extended resources in spare slots.
    pub names: &'a ResourceNames,
    /// The wall-clock instant of `SimTime::ZERO`, in Unix milliseconds.
    pub epoch_unix_millis: i64,
    /// The instant written: every Node's last heartbeat.
    pub now: SimTime,
}

/// Why a snapshot could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotWriteError {
    /// Part of the state has no form in a Kubernetes object.
    #[error("{object}: {message}")]
    Unrepresentable {
        /// `NodePool default`, `Pod shop/web-00001`, …
        object: String,
        /// What cannot be written.
        message: String,
    },
    /// The objects could not be serialized.
    #[error("cannot serialize the snapshot: {0}")]
    Serialize(String),
}

/// Writes the cluster as a kubectl `kind: List` YAML text.
pub fn write_snapshot(parts: &SnapshotParts<'_>) -> Result<String, SnapshotWriteError> {
    let list = snapshot_value(parts)?;
    to_yaml(&list).map_err(|e| SnapshotWriteError::Serialize(e.to_string()))
}

/// The `kind: List` object of [`write_snapshot`], before serialization.
pub fn snapshot_value(parts: &SnapshotParts<'_>) -> Result<Value, SnapshotWriteError> {
    let w = Writer { parts };
    let state = parts.state;
    let mut items = Vec::new();
    for pool in parts.nodepools {
        items.push(nodepool(pool, parts.names)?);
    }
    for (name, settings) in parts.nodeclasses {
        items.push(nodeclass(name, settings));
    }
    for initial in &state.nodes {
        if initial.node.registered {
            items.push(w.node(initial)?);
        } else if initial.node.claim.is_none() {
            return Err(unrepresentable(
                &format!("Node {}", initial.node.name),
                "has not registered and has no NodeClaim, so no object states it",
            ));
        }
    }
    for initial in &state.nodes {
        if let Some(claim) = &initial.node.claim {
            items.push(w.nodeclaim(initial, claim)?);
        }
    }
    for workload in &state.workloads {
        items.extend(w.workload(workload)?);
    }
    for pdb in &state.pdbs {
        items.push(pdb_value(pdb)?);
    }
    for workload in &state.workloads {
        for pod in &workload.pods {
            items.push(w.pod(workload, pod)?);
        }
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": items,
        "metadata": {"resourceVersion": ""},
    }))
}

fn unrepresentable(object: &str, message: impl Into<String>) -> SnapshotWriteError {
    SnapshotWriteError::Unrepresentable {
        object: object.to_string(),
        message: message.into(),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, SnapshotWriteError> {
    serde_json::to_value(value).map_err(|e| SnapshotWriteError::Serialize(e.to_string()))
}

/// FNV-1a over the text, then splitmix64's finalizer so that similar
/// names give unrelated digits: a small fixed hash, the same on every
/// platform and in every release, for derived names and IDs.
fn hash(seed: u64, text: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ seed;
    for byte in text.bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A UUID-shaped `metadata.uid` for an object, from its identity.
fn uid(kind: &str, namespace: &str, name: &str) -> String {
    let key = format!("{kind}/{namespace}/{name}");
    let (high, low) = (hash(0, &key), hash(0x5bd1_e995, &key));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// The `pod-template-hash` of a Deployment's one ReplicaSet: 10 hex digits.
pub fn pod_template_hash(deployment: &str) -> String {
    format!("{:010x}", hash(0, deployment) & 0xff_ffff_ffff)
}

/// The name of a Deployment's one ReplicaSet.
pub fn replicaset_name(deployment: &str) -> String {
    format!("{deployment}-{}", pod_template_hash(deployment))
}

/// `aws:///<zone>/i-<16 hex>`, the instance ID derived from the node name.
pub fn provider_id(zone: &str, node: &str) -> String {
    format!("aws:///{zone}/i-{:016x}", hash(0, node))
}

/// A duration in the NodePool CRD's form (whole `h`, `m`, `s`).
fn crd_duration(object: &str, field: &str, d: Duration) -> Result<String, SnapshotWriteError> {
    if d.subsec_nanos() != 0 {
        return Err(unrepresentable(
            object,
            format!("{field} {d:?} is not a whole number of seconds, which the CRD requires"),
        ));
    }
    Ok(go_duration(d))
}

fn never_or(object: &str, field: &str, d: Option<Duration>) -> Result<String, SnapshotWriteError> {
    match d {
        None => Ok("Never".to_string()),
        Some(d) => crd_duration(object, field, d),
    }
}

/// A budget duration: hours and minutes only (`2h`, `1h30m`, `10m`, `0m`).
fn budget_duration(object: &str, d: Duration) -> Result<String, SnapshotWriteError> {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || !secs.is_multiple_of(60) {
        return Err(unrepresentable(
            object,
            format!(
                "budget duration {d:?} is not a whole number of minutes, which the CRD requires"
            ),
        ));
    }
    let (hours, minutes) = (secs / 3600, secs / 60 % 60);
    Ok(match (hours, minutes) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m}m"),
    })
}

fn taint_value(t: &Taint) -> Value {
    let mut out = Map::new();
    out.insert("key".into(), json!(t.key));
    if !t.value.is_empty() {
        out.insert("value".into(), json!(t.value));
    }
    out.insert("effect".into(), json!(t.effect.as_str()));
    Value::Object(out)
}

fn taints_value(taints: &[Taint]) -> Value {
    Value::Array(taints.iter().map(taint_value).collect())
}

fn string_map<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

/// A resource list; spare slots `names` does not name are left out (they
/// cannot be named).
fn resource_list(r: &Resources, names: &ResourceNames) -> Value {
    let mut out = Map::new();
    for (kind, amount) in r.iter() {
        let name = names.name(kind);
        if names.lookup(name) != Some(kind) {
            continue;
        }
        out.insert(name.to_string(), json!(quantity_text(kind, name, amount)));
    }
    Value::Object(out)
}

fn nodepool(pool: &NodePool, names: &ResourceNames) -> Result<Value, SnapshotWriteError> {
    let object = format!("NodePool {}", pool.name);
    let mut template_meta = Map::new();
    if !pool.labels.is_empty() {
        template_meta.insert(
            "labels".into(),
            string_map(pool.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        );
    }
    if !pool.annotations.is_empty() {
        template_meta.insert(
            "annotations".into(),
            string_map(
                pool.annotations
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            ),
        );
    }
    let requirements: Vec<Value> = pool
        .requirements
        .iter()
        .map(|r| {
            let e = &r.expression;
            let mut out = Map::new();
            out.insert("key".into(), json!(e.key));
            out.insert("operator".into(), json!(e.operator.as_str()));
            if !e.values.is_empty() {
                out.insert("values".into(), json!(e.values));
            }
            if let Some(min) = r.min_values {
                out.insert("minValues".into(), json!(min));
            }
            Value::Object(out)
        })
        .collect();
    let mut tspec = Map::new();
    tspec.insert("requirements".into(), Value::Array(requirements));
    tspec.insert("nodeClassRef".into(), node_class_ref(&pool.node_class_ref));
    if !pool.taints.is_empty() {
        tspec.insert("taints".into(), taints_value(&pool.taints));
    }
    if !pool.startup_taints.is_empty() {
        tspec.insert("startupTaints".into(), taints_value(&pool.startup_taints));
    }
    // Written even at its default, so that a default that changes later
    // does not change what this pool meant.
    tspec.insert(
        "expireAfter".into(),
        json!(never_or(&object, "expireAfter", pool.expire_after)?),
    );
    if let Some(d) = pool.termination_grace_period {
        tspec.insert(
            "terminationGracePeriod".into(),
            json!(crd_duration(&object, "terminationGracePeriod", d)?),
        );
    }
    let mut template = Map::new();
    if !template_meta.is_empty() {
        template.insert("metadata".into(), Value::Object(template_meta));
    }
    template.insert("spec".into(), Value::Object(tspec));

    let d = &pool.disruption;
    let budgets = d
        .budgets
        .iter()
        .map(|b| budget(&object, b))
        .collect::<Result<Vec<_>, _>>()?;
    let disruption = json!({
        "consolidationPolicy": match d.consolidation_policy {
            ConsolidationPolicy::WhenEmpty => "WhenEmpty",
            ConsolidationPolicy::WhenEmptyOrUnderutilized => "WhenEmptyOrUnderutilized",
            ConsolidationPolicy::Balanced => "Balanced",
        },
        "consolidateAfter": never_or(&object, "consolidateAfter", d.consolidate_after)?,
        "budgets": budgets,
    });
    let mut spec = Map::new();
    spec.insert("template".into(), Value::Object(template));
    spec.insert("disruption".into(), disruption);
    if !pool.limits.is_empty() {
        let mut limits = Map::new();
        for (&kind, &amount) in &pool.limits {
            let name = names.name(kind);
            if names.lookup(name) != Some(kind) {
                return Err(unrepresentable(
                    &object,
                    format!(
                        "a limit is on an extended resource slot ({kind:?}) the resource names do not name"
                    ),
                ));
            }
            limits.insert(name.to_string(), json!(quantity_text(kind, name, amount)));
        }
        spec.insert("limits".into(), Value::Object(limits));
    }
    if let Some(weight) = pool.weight {
        spec.insert("weight".into(), json!(weight));
    }
    Ok(json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool.name, "uid": uid("NodePool", "", &pool.name)},
        "spec": spec,
    }))
}

fn node_class_ref(r: &NodeClassRef) -> Value {
    json!({"group": r.group, "kind": r.kind, "name": r.name})
}

fn budget(object: &str, b: &Budget) -> Result<Value, SnapshotWriteError> {
    let mut out = Map::new();
    out.insert(
        "nodes".into(),
        json!(match b.nodes {
            BudgetNodes::Count(n) => n.to_string(),
            BudgetNodes::Percent(p) => format!("{p}%"),
        }),
    );
    if let Some(schedule) = &b.schedule {
        out.insert("schedule".into(), json!(schedule));
    }
    if let Some(d) = b.duration {
        out.insert("duration".into(), json!(budget_duration(object, d)?));
    }
    if !b.reasons.is_empty() {
        let reasons: Vec<&str> = b
            .reasons
            .iter()
            .map(|r| match r {
                DisruptionReason::Underutilized => "Underutilized",
                DisruptionReason::Empty => "Empty",
                DisruptionReason::Drifted => "Drifted",
            })
            .collect();
        out.insert("reasons".into(), json!(reasons));
    }
    Ok(Value::Object(out))
}

fn alias_family(family: AmiFamily) -> Option<&'static str> {
    Some(match family {
        AmiFamily::Al2 => "al2",
        AmiFamily::Al2023 => "al2023",
        AmiFamily::Bottlerocket => "bottlerocket",
        AmiFamily::Windows2019 => "windows2019",
        AmiFamily::Windows2022 => "windows2022",
        AmiFamily::Windows2025 => "windows2025",
        AmiFamily::Custom => return None,
    })
}

fn bytes_text(bytes: i64) -> String {
    quantity_text(ResourceKind::Memory, "memory", bytes)
}

fn reserved_value(r: &Reserved) -> Option<Value> {
    let mut out = Map::new();
    if let Some(cpu) = r.cpu_millis {
        out.insert(
            "cpu".into(),
            json!(quantity_text(ResourceKind::Cpu, "cpu", cpu)),
        );
    }
    if let Some(memory) = r.memory_bytes {
        out.insert("memory".into(), json!(bytes_text(memory)));
    }
    if let Some(ephemeral) = r.ephemeral_bytes {
        out.insert("ephemeral-storage".into(), json!(bytes_text(ephemeral)));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn threshold_text(t: Threshold) -> Option<String> {
    match t {
        Threshold::Default => None,
        Threshold::Absolute(bytes) => Some(bytes_text(bytes)),
        // f64's Display is the shortest text that parses back exactly.
        Threshold::Percent(p) => Some(format!("{p}%")),
    }
}

fn kubelet_value(k: &KubeletSettings) -> Option<Value> {
    let mut out = Map::new();
    if let Some(n) = k.max_pods {
        out.insert("maxPods".into(), json!(n));
    }
    if let Some(n) = k.pods_per_core {
        out.insert("podsPerCore".into(), json!(n));
    }
    if let Some(r) = reserved_value(&k.kube_reserved) {
        out.insert("kubeReserved".into(), r);
    }
    if let Some(r) = reserved_value(&k.system_reserved) {
        out.insert("systemReserved".into(), r);
    }
    let mut eviction = Map::new();
    for (signal, t) in [
        ("memory.available", k.eviction_memory_available),
        ("nodefs.available", k.eviction_nodefs_available),
    ] {
        if let Some(text) = threshold_text(t) {
            eviction.insert(signal.to_string(), json!(text));
        }
    }
    if !eviction.is_empty() {
        out.insert("evictionHard".into(), Value::Object(eviction));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// An EC2NodeClass that reads back as `settings`. The CRD also requires a
/// role and subnet and security group selectors, which karpsim does not
/// model: stand-ins are written.
fn nodeclass(name: &str, settings: &NodeClassSettings) -> Value {
    let mut spec = Map::new();
    match alias_family(settings.ami_family) {
        Some(family) => {
            spec.insert(
                "amiSelectorTerms".into(),
                json!([{"alias": format!("{family}@latest")}]),
            );
        }
        None => {
            // A custom AMI is chosen by ID, name or tags; the family alone
            // decides overhead.
            spec.insert("amiFamily".into(), json!("Custom"));
            spec.insert(
                "amiSelectorTerms".into(),
                json!([{"tags": {PLACEHOLDER_DISCOVERY_TAG.0: PLACEHOLDER_DISCOVERY_TAG.1}}]),
            );
        }
    }
    spec.insert("role".into(), json!(PLACEHOLDER_ROLE));
    let discovery = json!([{"tags": {PLACEHOLDER_DISCOVERY_TAG.0: PLACEHOLDER_DISCOVERY_TAG.1}}]);
    spec.insert("subnetSelectorTerms".into(), discovery.clone());
    spec.insert("securityGroupSelectorTerms".into(), discovery);
    if let Some(kubelet) = kubelet_value(&settings.kubelet) {
        spec.insert("kubelet".into(), kubelet);
    }
    if let Some(bytes) = settings.root_volume_bytes {
        spec.insert(
            "blockDeviceMappings".into(),
            json!([{
                "deviceName": root_device(settings.ami_family),
                "rootVolume": true,
                "ebs": {"volumeSize": bytes_text(bytes)},
            }]),
        );
    }
    if settings.instance_store_policy == InstanceStorePolicy::Raid0 {
        spec.insert("instanceStorePolicy".into(), json!("RAID0"));
    }
    json!({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "uid": uid("EC2NodeClass", "", name)},
        "spec": spec,
    })
}

fn intstr(v: IntOrPercent) -> Value {
    match v {
        IntOrPercent::Int(n) => json!(n),
        IntOrPercent::Percent(p) => json!(format!("{p}%")),
    }
}

fn pdb_value(p: &PodDisruptionBudget) -> Result<Value, SnapshotWriteError> {
    let mut spec = Map::new();
    if let Some(v) = p.min_available {
        spec.insert("minAvailable".into(), intstr(v));
    }
    if let Some(v) = p.max_unavailable {
        spec.insert("maxUnavailable".into(), intstr(v));
    }
    if let Some(s) = &p.selector {
        spec.insert("selector".into(), to_value(&selector(s))?);
    }
    if p.unhealthy_pod_eviction_policy == UnhealthyPodEvictionPolicy::AlwaysAllow {
        spec.insert("unhealthyPodEvictionPolicy".into(), json!("AlwaysAllow"));
    }
    Ok(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": p.name,
            "namespace": p.namespace,
            "uid": uid("PodDisruptionBudget", &p.namespace, &p.name),
        },
        "spec": spec,
    }))
}

/// The kind, apiVersion and name of the object that owns a workload's pods.
fn pod_owner(w: &Workload) -> Option<(&'static str, &'static str, String)> {
    Some(match w.kind {
        WorkloadKind::Deployment { .. } => ("apps/v1", "ReplicaSet", replicaset_name(&w.name)),
        WorkloadKind::ReplicaSet { .. } => ("apps/v1", "ReplicaSet", w.name.clone()),
        WorkloadKind::StatefulSet { .. } => ("apps/v1", "StatefulSet", w.name.clone()),
        WorkloadKind::DaemonSet => ("apps/v1", "DaemonSet", w.name.clone()),
        WorkloadKind::Job(_) => ("batch/v1", "Job", w.name.clone()),
        WorkloadKind::Pod => return None,
    })
}

fn owner_reference(api_version: &str, kind: &str, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid(kind, namespace, name),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Labels added to a workload's template and pods: an apps/v1 selector
/// must select something, so a template without labels gets `app: <name>`.
fn template_labels(w: &Workload) -> Vec<(String, String)> {
    let selected = !matches!(w.kind, WorkloadKind::Job(_) | WorkloadKind::Pod);
    if selected && w.template.labels.is_empty() {
        vec![("app".to_string(), w.name.clone())]
    } else {
        Vec::new()
    }
}

/// [`template_labels`], and for a Deployment the `pod-template-hash` its
/// ReplicaSet selects its pods by.
fn pod_labels(w: &Workload) -> Vec<(String, String)> {
    let mut out = template_labels(w);
    if matches!(w.kind, WorkloadKind::Deployment { .. }) {
        out.push((
            LABEL_POD_TEMPLATE_HASH.to_string(),
            pod_template_hash(&w.name),
        ));
    }
    out
}

/// A PodTemplateSpec; empty metadata is left out.
fn template_value(meta: &Map<String, Value>, spec: Value) -> Value {
    let mut out = Map::new();
    if !meta.is_empty() {
        out.insert("metadata".into(), Value::Object(meta.clone()));
    }
    out.insert("spec".into(), spec);
    Value::Object(out)
}

struct Writer<'a> {
    parts: &'a SnapshotParts<'a>,
}

impl Writer<'_> {
    fn registered_nodes(&self) -> usize {
        self.parts
            .state
            .nodes
            .iter()
            .filter(|n| n.node.registered)
            .count()
    }

    /// An instant as RFC 3339 UTC (`2026-01-01T06:00:00Z`, `.250Z` with
    /// milliseconds); years outside 0000–9999 have no such form.
    fn time(&self, object: &str, t: SimTime) -> Result<String, SnapshotWriteError> {
        const FIRST: i64 = -62_167_219_200_000; // 0000-01-01T00:00:00Z
        const LAST: i64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
        let ms = self
            .parts
            .epoch_unix_millis
            .checked_add(t.signed_millis())
            .filter(|ms| (FIRST..=LAST).contains(ms))
            .ok_or_else(|| {
                unrepresentable(
                    object,
                    format!(
                        "instant {} ms after the epoch is outside years 0000–9999",
                        t.signed_millis()
                    ),
                )
            })?;
        Ok(Timestamp::from_unix_millis(ms).to_string())
    }

    /// A node's labels, with the well-known ones the reader needs added
    /// from the node's facts when missing.
    fn node_labels(&self, initial: &InitialNode) -> BTreeMap<String, String> {
        let node = &initial.node;
        let mut labels = node.labels.as_map().clone();
        let mut ensure = |key: &str, value: &str| {
            if !value.is_empty() {
                labels
                    .entry(key.to_string())
                    .or_insert_with(|| value.to_string());
            }
        };
        ensure(LABEL_INSTANCE_TYPE, &initial.instance_type);
        ensure(LABEL_TOPOLOGY_ZONE, &initial.zone);
        if let Some(claim) = &node.claim {
            // Karpenter labels its nodes so once they register and
            // initialize; the reader takes initialization from the label.
            if node.registered {
                ensure(LABEL_NODE_REGISTERED, "true");
            }
            if node.initialized {
                ensure(LABEL_NODE_INITIALIZED, "true");
            }
            ensure(LABEL_NODEPOOL, &claim.nodepool);
            ensure(LABEL_CAPACITY_TYPE, claim.capacity_type.label());
            ensure(LABEL_INSTANCE_TYPE, &claim.instance_type);
            ensure(LABEL_TOPOLOGY_ZONE, &claim.zone);
        }
        if let NodeOwner::NodeGroup(group) = &initial.owner {
            ensure(LABEL_EKS_NODEGROUP, group);
            if !labels.contains_key(LABEL_CAPACITY_TYPE) {
                let eks = match initial.capacity_type {
                    CapacityType::OnDemand => "ON_DEMAND",
                    CapacityType::Spot => "SPOT",
                    CapacityType::Reserved => "CAPACITY_BLOCK",
                };
                labels
                    .entry(LABEL_EKS_CAPACITY_TYPE.to_string())
                    .or_insert_with(|| eks.to_string());
            }
        }
        labels
    }

    fn zone(initial: &InitialNode) -> &str {
        match &initial.node.claim {
            Some(claim) if initial.zone.is_empty() => &claim.zone,
            _ => &initial.zone,
        }
    }

    fn node(&self, initial: &InitialNode) -> Result<Value, SnapshotWriteError> {
        let node = &initial.node;
        let object = format!("Node {}", node.name);
        let names = self.parts.names;
        let created = self.time(&object, node.created_at)?;
        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(node.name));
        metadata.insert("uid".into(), json!(uid("Node", "", &node.name)));
        metadata.insert("creationTimestamp".into(), json!(created));
        let labels = self.node_labels(initial);
        metadata.insert(
            "labels".into(),
            string_map(labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        );
        let mut annotations = Map::new();
        if node
            .claim
            .as_ref()
            .is_some_and(|c| c.lifecycle.do_not_disrupt)
        {
            annotations.insert(DO_NOT_DISRUPT_ANNOTATION.into(), json!("true"));
        }
        if initial.scale_down_disabled {
            annotations.insert(
                crate::autoscaler::scale_down::SCALE_DOWN_DISABLED_ANNOTATION.into(),
                json!("true"),
            );
        }
        if !annotations.is_empty() {
            metadata.insert("annotations".into(), Value::Object(annotations));
        }
        let mut spec = Map::new();
        spec.insert(
            "providerID".into(),
            json!(provider_id(Self::zone(initial), &node.name)),
        );
        if !node.taints.is_empty() {
            spec.insert("taints".into(), taints_value(&node.taints));
        }
        // Cordoned: kubectl shows both the flag and the taint it implies.
        if node
            .taints
            .iter()
            .any(|t| t.key == TAINT_UNSCHEDULABLE && t.effect == TaintEffect::NoSchedule)
        {
            spec.insert("unschedulable".into(), json!(true));
        }
        // The node lifecycle controller's taint says the node is NotReady
        // (still starting, or set so by a step).
        let ready = !node.taints.iter().any(|t| t.key == NOT_READY_TAINT_KEY);
        let (status, reason, message) = if ready {
            ("True", "KubeletReady", "kubelet is posting ready status")
        } else {
            (
                "False",
                "KubeletNotReady",
                "container runtime network not ready",
            )
        };
        let status = json!({
            "capacity": resource_list(&node.capacity, names),
            "allocatable": resource_list(&node.allocatable, names),
            "conditions": [{
                "type": "Ready",
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": self.time(&object, self.parts.now)?,
                "lastTransitionTime": created,
            }],
        });
        Ok(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }))
    }

    fn nodeclaim(
        &self,
        initial: &InitialNode,
        claim: &NodeClaimInfo,
    ) -> Result<Value, SnapshotWriteError> {
        let node = &initial.node;
        let object = format!("NodeClaim {}", node.name);
        let names = self.parts.names;
        let lifecycle = &claim.lifecycle;
        let pool = self
            .parts
            .nodepools
            .iter()
            .find(|p| p.name == *claim.nodepool);
        let created = self.time(&object, node.created_at)?;

        let mut metadata = Map::new();
        metadata.insert("name".into(), json!(node.name));
        metadata.insert("uid".into(), json!(uid("NodeClaim", "", &node.name)));
        metadata.insert("creationTimestamp".into(), json!(created));
        let labels = self.node_labels(initial);
        metadata.insert(
            "labels".into(),
            string_map(labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        );
        let mut annotations = Map::new();
        if let Some(hash) = &lifecycle.nodepool_hash {
            annotations.insert(ANNOTATION_NODEPOOL_HASH.into(), json!(hash));
            annotations.insert(
                ANNOTATION_NODEPOOL_HASH_VERSION.into(),
                json!(NODEPOOL_HASH_VERSION),
            );
        }
        // Without a Node object the claim is the only place to keep it.
        if lifecycle.do_not_disrupt && !node.registered {
            annotations.insert(DO_NOT_DISRUPT_ANNOTATION.into(), json!("true"));
        }
        if !annotations.is_empty() {
            metadata.insert("annotations".into(), Value::Object(annotations));
        }
        metadata.insert(
            "ownerReferences".into(),
            json!([{
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "name": &*claim.nodepool,
                "uid": uid("NodePool", "", &claim.nodepool),
                "blockOwnerDeletion": true,
            }]),
        );

        let requirement =
            |key: &str, value: &str| json!({"key": key, "operator": "In", "values": [value]});
        let mut spec = Map::new();
        spec.insert(
            "requirements".into(),
            json!([
                requirement(LABEL_NODEPOOL, &claim.nodepool),
                requirement(LABEL_INSTANCE_TYPE, &claim.instance_type),
                requirement(LABEL_TOPOLOGY_ZONE, &claim.zone),
                requirement(LABEL_CAPACITY_TYPE, claim.capacity_type.label()),
            ]),
        );
        let class_ref = match pool {
            Some(p) => node_class_ref(&p.node_class_ref),
            None => {
                return Err(unrepresentable(
                    &object,
                    format!(
                        "its NodePool {:?} is not among the NodePools written, so its nodeClassRef is unknown",
                        claim.nodepool
                    ),
                ));
            }
        };
        spec.insert("nodeClassRef".into(), class_ref);
        if let Some(p) = pool
            && !p.taints.is_empty()
        {
            spec.insert("taints".into(), taints_value(&p.taints));
        }
        if !claim.startup_taints.is_empty() {
            spec.insert("startupTaints".into(), taints_value(&claim.startup_taints));
        }
        let sim_duration =
            |d: crate::time::SimDuration| go_duration(Duration::from_millis(d.as_millis()));
        spec.insert(
            "expireAfter".into(),
            json!(
                lifecycle
                    .expire_after
                    .map_or_else(|| "Never".to_string(), sim_duration)
            ),
        );
        if let Some(d) = lifecycle.termination_grace_period {
            spec.insert("terminationGracePeriod".into(), json!(sim_duration(d)));
        }

        let condition = |kind: &str, reason: &str, at: String| {
            json!({
                "type": kind,
                "status": "True",
                "reason": reason,
                "message": "",
                "lastTransitionTime": at,
            })
        };
        let mut conditions = vec![condition("Launched", "Launched", created.clone())];
        if node.registered {
            conditions.push(condition("Registered", "Registered", created.clone()));
        }
        if let Some(at) = lifecycle.initialized_at {
            let at = self.time(&object, at)?;
            conditions.push(condition("Initialized", "Initialized", at.clone()));
            if node.registered {
                conditions.push(condition("Ready", "Ready", at));
            }
        }
        if let Some(drifted) = &lifecycle.drifted {
            conditions.push(condition(
                "Drifted",
                &drifted.reason,
                self.time(&object, drifted.since)?,
            ));
        }
        if lifecycle.instance_terminating {
            // When it began is not kept; the snapshot's instant is the
            // latest it can be.
            conditions.push(condition(
                "InstanceTerminating",
                "InstanceTerminating",
                self.time(&object, self.parts.now)?,
            ));
        }
        let mut status = Map::new();
        if node.registered {
            status.insert("nodeName".into(), json!(node.name));
        }
        status.insert(
            "providerID".into(),
            json!(provider_id(Self::zone(initial), &node.name)),
        );
        status.insert("capacity".into(), resource_list(&node.capacity, names));
        status.insert(
            "allocatable".into(),
            resource_list(&node.allocatable, names),
        );
        status.insert("conditions".into(), Value::Array(conditions));
        if let Some(at) = lifecycle.last_pod_event_at {
            status.insert("lastPodEventTime".into(), json!(self.time(&object, at)?));
        }
        Ok(json!({
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": metadata,
            "spec": spec,
            "status": status,
        }))
    }

    /// A pod template (`metadata` without namespace, and `spec`) with extra
    /// labels.
    fn template(
        &self,
        spec: &PodSpec,
        extra: &[(String, String)],
        job: bool,
    ) -> Result<(Map<String, Value>, Value), SnapshotWriteError> {
        let (mut meta, mut pod_spec) = pod_template(spec, self.parts.names);
        meta.namespace = None;
        let labels = meta.labels.get_or_insert_with(BTreeMap::new);
        for (k, v) in extra {
            labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if labels.is_empty() {
            meta.labels = None;
        }
        if job {
            // The Job API refuses the default `Always`.
            pod_spec.restart_policy = Some("Never".to_string());
        }
        let Value::Object(meta) = to_value(&meta)? else {
            return Err(SnapshotWriteError::Serialize(
                "pod metadata is not an object".to_string(),
            ));
        };
        Ok((meta, to_value(&pod_spec)?))
    }

    /// A workload's objects: the Deployment and its ReplicaSet, or the one
    /// controller; nothing for a bare pod (its Pod item is it).
    fn workload(&self, initial: &InitialWorkload) -> Result<Vec<Value>, SnapshotWriteError> {
        let (w, succeeded) = (&initial.workload, initial.succeeded);
        let job = matches!(w.kind, WorkloadKind::Job(_));
        let (meta, spec) = self.template(&w.template, &template_labels(w), job)?;
        let labels = meta.get("labels").cloned().unwrap_or_else(|| json!({}));
        let template = template_value(&meta, spec);
        let metadata = |kind: &str| {
            json!({
                "name": w.name,
                "namespace": w.namespace,
                "uid": uid(kind, &w.namespace, &w.name),
            })
        };
        let controller = |api: &str, kind: &str, replicas: Option<u32>| {
            let mut spec = Map::new();
            if let Some(n) = replicas {
                spec.insert("replicas".into(), json!(n));
            }
            spec.insert("selector".into(), json!({"matchLabels": labels}));
            spec.insert("template".into(), template.clone());
            json!({
                "apiVersion": api,
                "kind": kind,
                "metadata": metadata(kind),
                "spec": spec,
            })
        };
        Ok(match &w.kind {
            WorkloadKind::Deployment { replicas } => {
                let deployment = controller("apps/v1", "Deployment", Some(*replicas));
                let name = replicaset_name(&w.name);
                let (meta, spec) = self.template(&w.template, &pod_labels(w), false)?;
                let labels = meta.get("labels").cloned().unwrap_or_else(|| json!({}));
                let template = template_value(&meta, spec);
                let rs_meta = json!({
                    "name": name,
                    "namespace": w.namespace,
                    "uid": uid("ReplicaSet", &w.namespace, &name),
                    "labels": labels,
                    "ownerReferences": [owner_reference("apps/v1", "Deployment", &w.namespace, &w.name)],
                });
                let replicaset = json!({
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": rs_meta,
                    "spec": {
                        "replicas": replicas,
                        "selector": {"matchLabels": labels},
                        "template": template,
                    },
                });
                vec![deployment, replicaset]
            }
            WorkloadKind::ReplicaSet { replicas } => {
                vec![controller("apps/v1", "ReplicaSet", Some(*replicas))]
            }
            WorkloadKind::StatefulSet { replicas } => {
                let mut set = controller("apps/v1", "StatefulSet", Some(*replicas));
                // Required by API servers before 1.31; the headless
                // Service itself is not part of the snapshot.
                if let Some(spec) = set.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("serviceName".into(), json!(w.name));
                }
                vec![set]
            }
            WorkloadKind::DaemonSet => vec![controller("apps/v1", "DaemonSet", None)],
            WorkloadKind::Job(job) => {
                let object = format!("Job {}/{}", w.namespace, w.name);
                let mut metadata = metadata("Job");
                if let Some(d) = job.duration
                    && let Value::Object(m) = &mut metadata
                {
                    m.insert(
                        "annotations".into(),
                        json!({DURATION_ANNOTATION: go_duration(d)}),
                    );
                }
                let mut spec = Map::new();
                spec.insert("parallelism".into(), json!(job.parallelism));
                if let Some(c) = job.completions {
                    spec.insert("completions".into(), json!(c));
                }
                if let Some(d) = job.active_deadline {
                    if d.subsec_nanos() != 0 || d.is_zero() {
                        return Err(unrepresentable(
                            &object,
                            format!(
                                "activeDeadlineSeconds must be a positive whole number of seconds, not {d:?}"
                            ),
                        ));
                    }
                    spec.insert("activeDeadlineSeconds".into(), json!(d.as_secs()));
                }
                spec.insert("template".into(), template);
                let mut item = json!({
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": metadata,
                    "spec": spec,
                });
                // Completed pods are gone; the count says how far it got.
                if succeeded > 0
                    && let Value::Object(m) = &mut item
                {
                    m.insert("status".into(), json!({"succeeded": succeeded}));
                }
                vec![item]
            }
            WorkloadKind::Pod => Vec::new(),
        })
    }

    fn pod(
        &self,
        workload: &InitialWorkload,
        pod: &InitialPod,
    ) -> Result<Value, SnapshotWriteError> {
        let w = &workload.workload;
        let namespace = &pod.spec.namespace;
        let object = format!("Pod {namespace}/{}", pod.name);
        let node = match pod.node {
            None => None,
            Some(index) => {
                let Some(initial) = self.parts.state.nodes.get(index) else {
                    return Err(unrepresentable(
                        &object,
                        format!("is bound to node #{index}, which the state does not have"),
                    ));
                };
                if !initial.node.registered {
                    return Err(unrepresentable(
                        &object,
                        format!(
                            "is bound to {}, which has not registered (no Node object names it)",
                            initial.node.name
                        ),
                    ));
                }
                Some(initial.node.name.as_str())
            }
        };
        let job = matches!(w.kind, WorkloadKind::Job(_));
        let (mut metadata, mut spec) = self.template(&pod.spec, &pod_labels(w), job)?;
        let created = self.time(&object, pod.created_at)?;
        let mut head = Map::new();
        head.insert("name".into(), json!(pod.name));
        head.insert("namespace".into(), json!(namespace));
        head.insert("uid".into(), json!(uid("Pod", namespace, &pod.name)));
        head.insert("creationTimestamp".into(), json!(created));
        head.append(&mut metadata);
        if let Some((api, kind, name)) = pod_owner(w) {
            head.insert(
                "ownerReferences".into(),
                json!([owner_reference(api, kind, namespace, &name)]),
            );
        }
        if let (Some(node), Value::Object(spec)) = (node, &mut spec) {
            spec.insert("nodeName".into(), json!(node));
        }
        let mut status = Map::new();
        status.insert(
            "phase".into(),
            json!(if node.is_some() { "Running" } else { "Pending" }),
        );
        let started = pod.started_at.map(|t| self.time(&object, t)).transpose()?;
        let mut conditions = Vec::new();
        if node.is_some() {
            let at = started.clone().unwrap_or_else(|| created.clone());
            conditions
                .push(json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": at}));
            conditions.push(json!({"type": "Ready", "status": "True", "lastTransitionTime": at}));
        } else if pod.unschedulable {
            conditions.push(json!({
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": format!("0/{} nodes are available", self.registered_nodes()),
                "lastTransitionTime": created,
            }));
        }
        if !conditions.is_empty() {
            status.insert("conditions".into(), Value::Array(conditions));
        }
        if let Some(started) = started {
            status.insert("startTime".into(), json!(started));
        }
        Ok(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": head,
            "spec": spec,
            "status": status,
        }))
    }
}

#[cfg(test)]
#[path = "snapshot_write_tests.rs"]
mod tests;
