//! A snapshot's Nodes and Karpenter NodeClaims: read strictly, then
//! matched (a NodeClaim names its node in `status.nodeName`), priced from
//! the catalog and turned into the nodes a run begins with.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node as K8sNode;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::SnapshotError;
use crate::autoscaler::scale_down::SCALE_DOWN_DISABLED_ANNOTATION as ANNOTATION_SCALE_DOWN_DISABLED;
use crate::cloud::{CapacityType, Catalog, Price};
use crate::cluster::{ClaimLifecycle, DriftedCondition, NodeClaimInfo};
use crate::karpenter::disruption::drift::{NODEPOOL_HASH_VERSION, nodepool_hash};
use crate::kube::labels::{
    LABEL_BETA_INSTANCE_TYPE, LABEL_BETA_REGION, LABEL_BETA_ZONE, LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE, LABEL_NODE_INITIALIZED, LABEL_NODEPOOL, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, Labels,
};
use crate::kube::quantity::Quantity;
use crate::kube::resources::{ResourceNames, Resources};
use crate::kube::taints::{Taint, TaintEffect};
use crate::manifest::{Document, ManifestError, Position};
use crate::nodepool::NodePool;
use crate::scheduler::Node;
use crate::sim::engine::{InitialNode, NodeOwner};
use crate::time::SimTime;
use crate::time::duration::parse_go_duration;

/// EKS managed node groups' label.
pub const LABEL_EKS_NODEGROUP: &str = "eks.amazonaws.com/nodegroup";
/// eksctl's node group label.
pub const LABEL_EKSCTL_NODEGROUP: &str = "alpha.eksctl.io/nodegroup-name";
/// EKS managed node groups' capacity type (`ON_DEMAND`, `SPOT`).
pub const LABEL_EKS_CAPACITY_TYPE: &str = "eks.amazonaws.com/capacityType";
/// The taint the node lifecycle controller puts on a cordoned node.
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Karpenter's template-hash annotations.
const ANNOTATION_NODEPOOL_HASH: &str = "karpenter.sh/nodepool-hash";
const ANNOTATION_NODEPOOL_HASH_VERSION: &str = "karpenter.sh/nodepool-hash-version";
const ANNOTATION_DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";

fn annotation_true(annotations: &BTreeMap<String, String>, key: &str) -> bool {
    annotations.get(key).map(String::as_str) == Some("true")
}

/// A Node item as read.
#[derive(Debug, Clone)]
pub(super) struct RawNode {
    pub at: Position,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub capacity: Option<Resources>,
    pub allocatable: Option<Resources>,
    pub created: Option<i64>,
    pub region: Option<String>,
    pub deleting: bool,
}

/// A NodeClaim item as read.
#[derive(Debug, Clone)]
pub(super) struct RawNodeClaim {
    pub at: Position,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub node_name: Option<String>,
    pub created: Option<i64>,
    pub startup_taints: Vec<Taint>,
    pub expire_after: Option<std::time::Duration>,
    pub termination_grace_period: Option<std::time::Duration>,
    pub allocatable: Option<Resources>,
    pub capacity: Option<Resources>,
    pub launched: bool,
    pub initialized_at: Option<i64>,
    pub drifted: Option<(String, i64)>,
    pub instance_terminating: bool,
    pub last_pod_event: Option<i64>,
}

/// A node whose `status.allocatable` differs from what Karpenter estimates
/// for its instance type (the AWS provider's overhead formula with default
/// EC2NodeClass settings). karpsim uses the reported value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatableDifference {
    /// Node.
    pub node: String,
    /// Its instance type.
    pub instance_type: String,
    /// Reported CPU (millicores) and memory (bytes).
    pub reported: (i64, i64),
    /// Karpenter's estimate.
    pub estimated: (i64, i64),
}

fn millis(t: &Time) -> i64 {
    t.0.as_millisecond()
}

fn resources(
    doc: &Document,
    names: &mut ResourceNames,
    list: Option<&BTreeMap<String, K8sQuantity>>,
    path: &str,
) -> Result<Option<Resources>, ManifestError> {
    let Some(list) = list else {
        return Ok(None);
    };
    let mut out = Resources::ZERO;
    for (name, quantity) in list {
        let field = |message: String| {
            let node = doc.node.at_path(path).unwrap_or(&doc.node);
            ManifestError::field(
                &doc.file,
                node,
                doc.path(&format!("{path}.{name}")),
                message,
            )
        };
        let parsed = Quantity::parse(&quantity.0).map_err(|e| field(e.to_string()))?;
        let kind = names.kind_for(name).map_err(|e| field(e.to_string()))?;
        out.set(kind, kind.amount(parsed));
    }
    Ok(Some(out))
}

fn taints(
    doc: &Document,
    list: &[k8s_openapi::api::core::v1::Taint],
    path: &str,
) -> Result<Vec<Taint>, ManifestError> {
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
                let node = doc.node.at_path(path).unwrap_or(&doc.node);
                ManifestError::field(
                    &doc.file,
                    node,
                    doc.path(&format!("{path}[{i}].effect")),
                    format!(
                        "unknown taint effect {:?} (expected NoSchedule, PreferNoSchedule, NoExecute)",
                        t.effect
                    ),
                )
            })?;
            Ok(Taint::new(
                t.key.clone(),
                t.value.clone().unwrap_or_default(),
                effect,
            ))
        })
        .collect()
}

/// Reads a `v1 Node`.
pub(super) fn read_node(
    doc: &Document,
    names: &mut ResourceNames,
) -> Result<RawNode, SnapshotError> {
    let node: K8sNode = doc.deserialize_strict()?;
    let meta = node.metadata;
    let name = meta.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(super::object_error(doc, "a Node needs metadata.name"));
    }
    let labels = meta.labels.clone().unwrap_or_default();
    let spec = node.spec.unwrap_or_default();
    let mut node_taints = taints(
        doc,
        spec.taints.as_deref().unwrap_or_default(),
        "spec.taints",
    )?;
    if spec.unschedulable == Some(true) && !node_taints.iter().any(|t| t.key == TAINT_UNSCHEDULABLE)
    {
        // Cordoned: the node lifecycle controller taints it so.
        node_taints.push(Taint::new(TAINT_UNSCHEDULABLE, "", TaintEffect::NoSchedule));
    }
    let status = node.status.unwrap_or_default();
    Ok(RawNode {
        at: doc.position(),
        region: labels
            .get(LABEL_TOPOLOGY_REGION)
            .or_else(|| labels.get(LABEL_BETA_REGION))
            .cloned(),
        name,
        annotations: meta.annotations.clone().unwrap_or_default(),
        labels,
        taints: node_taints,
        capacity: resources(doc, names, status.capacity.as_ref(), "status.capacity")?,
        allocatable: resources(
            doc,
            names,
            status.allocatable.as_ref(),
            "status.allocatable",
        )?,
        created: meta.creation_timestamp.as_ref().map(millis),
        deleting: meta.deletion_timestamp.is_some(),
    })
}

/// `karpenter.sh/v1` NodeClaim as written: metadata and spec strictly,
/// status leniently (the server writes it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeClaimObject {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    metadata: ObjectMeta,
    spec: NodeClaimSpec,
    #[serde(default)]
    status: Option<NodeClaimStatus>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeClaimSpec {
    #[allow(dead_code)]
    requirements: Option<IgnoredAny>,
    #[allow(dead_code)]
    node_class_ref: Option<IgnoredAny>,
    #[allow(dead_code)]
    resources: Option<IgnoredAny>,
    #[allow(dead_code)]
    taints: Option<IgnoredAny>,
    startup_taints: Option<Vec<k8s_openapi::api::core::v1::Taint>>,
    expire_after: Option<String>,
    termination_grace_period: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct NodeClaimStatus {
    node_name: Option<String>,
    capacity: Option<BTreeMap<String, K8sQuantity>>,
    allocatable: Option<BTreeMap<String, K8sQuantity>>,
    conditions: Option<Vec<Condition>>,
    last_pod_event_time: Option<Time>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    reason: Option<String>,
    last_transition_time: Option<Time>,
}

/// Reads a `karpenter.sh/v1` NodeClaim.
pub(super) fn read_nodeclaim(
    doc: &Document,
    names: &mut ResourceNames,
) -> Result<RawNodeClaim, SnapshotError> {
    let claim: NodeClaimObject = doc.deserialize_strict()?;
    let meta = claim.metadata;
    let name = meta.name.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(super::object_error(doc, "a NodeClaim needs metadata.name"));
    }
    let duration = |value: &Option<String>, path: &str| -> Result<_, SnapshotError> {
        match value.as_deref() {
            None | Some("Never") => Ok(None),
            Some(text) => parse_go_duration(text).map(Some).map_err(|e| {
                let node = doc.node.at_path(path).unwrap_or(&doc.node);
                ManifestError::field(&doc.file, node, doc.path(path), e).into()
            }),
        }
    };
    let status = claim.status.unwrap_or_default();
    let conditions = status.conditions.unwrap_or_default();
    let condition = |kind: &str| {
        conditions
            .iter()
            .find(|c| c.kind == kind && c.status == "True")
    };
    Ok(RawNodeClaim {
        at: doc.position(),
        name,
        labels: meta.labels.clone().unwrap_or_default(),
        annotations: meta.annotations.clone().unwrap_or_default(),
        node_name: status.node_name.filter(|n| !n.is_empty()),
        created: meta.creation_timestamp.as_ref().map(millis),
        startup_taints: taints(
            doc,
            claim.spec.startup_taints.as_deref().unwrap_or_default(),
            "spec.startupTaints",
        )?,
        expire_after: duration(&claim.spec.expire_after, "spec.expireAfter")?,
        termination_grace_period: duration(
            &claim.spec.termination_grace_period,
            "spec.terminationGracePeriod",
        )?,
        allocatable: resources(
            doc,
            names,
            status.allocatable.as_ref(),
            "status.allocatable",
        )?,
        capacity: resources(doc, names, status.capacity.as_ref(), "status.capacity")?,
        launched: condition("Launched").is_some(),
        initialized_at: condition("Initialized")
            .and_then(|c| c.last_transition_time.as_ref())
            .map(millis),
        drifted: condition("Drifted").map(|c| {
            (
                c.reason.clone().unwrap_or_else(|| "Drifted".to_string()),
                c.last_transition_time.as_ref().map_or(0, millis),
            )
        }),
        instance_terminating: condition("InstanceTerminating").is_some(),
        last_pod_event: status.last_pod_event_time.as_ref().map(millis),
    })
}

/// The nodes of a snapshot, resolved.
pub(super) struct ResolvedNodes {
    pub nodes: Vec<InitialNode>,
    pub allocatable_differences: Vec<AllocatableDifference>,
}

/// The capacity type a node's labels give: Karpenter's, then EKS managed
/// node groups'.
fn capacity_type(labels: &BTreeMap<String, String>) -> Option<CapacityType> {
    match labels.get(LABEL_CAPACITY_TYPE).map(String::as_str) {
        Some("spot") => return Some(CapacityType::Spot),
        Some("on-demand") => return Some(CapacityType::OnDemand),
        Some("reserved") => return Some(CapacityType::Reserved),
        _ => {}
    }
    match labels.get(LABEL_EKS_CAPACITY_TYPE).map(String::as_str) {
        Some("SPOT") => Some(CapacityType::Spot),
        Some("ON_DEMAND") => Some(CapacityType::OnDemand),
        Some("CAPACITY_BLOCK") => Some(CapacityType::Reserved),
        _ => None,
    }
}

/// One node's facts the catalog and labels give.
struct Facts {
    instance_type: String,
    zone: String,
    capacity_type: CapacityType,
    price: Price,
}

fn facts(
    name: &str,
    labels: &BTreeMap<String, String>,
    catalog: &Catalog,
    warnings: &mut Vec<String>,
    missing: &mut BTreeSet<String>,
    no_capacity_type: &mut Vec<String>,
) -> Facts {
    let instance_type = labels
        .get(LABEL_INSTANCE_TYPE)
        .or_else(|| labels.get(LABEL_BETA_INSTANCE_TYPE))
        .cloned()
        .unwrap_or_default();
    let zone = labels
        .get(LABEL_TOPOLOGY_ZONE)
        .or_else(|| labels.get(LABEL_BETA_ZONE))
        .cloned()
        .unwrap_or_default();
    let capacity_type = capacity_type(labels).unwrap_or_else(|| {
        no_capacity_type.push(name.to_string());
        CapacityType::OnDemand
    });
    let price = match catalog.get(&instance_type) {
        Some(t) => t
            .offerings
            .iter()
            .find(|o| o.zone == zone && o.capacity_type == capacity_type)
            .map(|o| o.price)
            .or_else(|| t.cheapest(capacity_type).map(|o| o.price))
            .unwrap_or(t.on_demand_price),
        None => {
            if missing.insert(instance_type.clone()) {
                warnings.push(format!(
                    "node {name}: instance type {instance_type:?} is not in the catalog; it is kept at $0/h with the allocatable it reports"
                ));
            }
            Price::ZERO
        }
    };
    Facts {
        instance_type,
        zone,
        capacity_type,
        price,
    }
}

/// Matches NodeClaims to nodes, prices them and builds the run's nodes.
pub(super) fn resolve_nodes(
    raw_nodes: &[RawNode],
    claims: &[RawNodeClaim],
    pools: &[NodePool],
    catalog: &Catalog,
    time: i64,
    warnings: &mut Vec<String>,
) -> Result<ResolvedNodes, SnapshotError> {
    let at = |t: Option<i64>| SimTime::from_signed_millis(t.unwrap_or(time) - time);
    let node_names: BTreeSet<&str> = raw_nodes.iter().map(|n| n.name.as_str()).collect();
    let mut claim_of: BTreeMap<&str, &RawNodeClaim> = BTreeMap::new();
    for claim in claims {
        if let Some(node) = &claim.node_name {
            if !node_names.contains(node.as_str()) {
                return Err(SnapshotError::Object {
                    at: claim.at.clone(),
                    object: format!("NodeClaim {}", claim.name),
                    message: format!(
                        "status.nodeName {node:?} is not a node in the snapshot (take nodes and nodeclaims in one kubectl get)"
                    ),
                });
            }
            claim_of.insert(node.as_str(), claim);
        }
    }
    let mut missing_types = BTreeSet::new();
    let mut no_capacity_type = Vec::new();
    let mut without_claim = Vec::new();
    let mut out = ResolvedNodes {
        nodes: Vec::new(),
        allocatable_differences: Vec::new(),
    };
    let pool_hash = |name: &str| pools.iter().find(|p| p.name == name).map(nodepool_hash);
    for raw in raw_nodes {
        let facts = facts(
            &raw.name,
            &raw.labels,
            catalog,
            warnings,
            &mut missing_types,
            &mut no_capacity_type,
        );
        let estimate = catalog.get(&facts.instance_type);
        let allocatable = match (raw.allocatable, estimate) {
            (Some(reported), Some(t)) => {
                let estimated = t.allocatable;
                if reported.cpu_millis() != estimated.cpu_millis()
                    || reported.memory_bytes() != estimated.memory_bytes()
                {
                    out.allocatable_differences.push(AllocatableDifference {
                        node: raw.name.clone(),
                        instance_type: facts.instance_type.clone(),
                        reported: (reported.cpu_millis(), reported.memory_bytes()),
                        estimated: (estimated.cpu_millis(), estimated.memory_bytes()),
                    });
                }
                reported
            }
            (Some(reported), None) => reported,
            (None, Some(t)) => {
                warnings.push(format!(
                    "node {}: no status.allocatable; Karpenter's estimate for {} is used",
                    raw.name, facts.instance_type
                ));
                t.allocatable
            }
            (None, None) => {
                return Err(SnapshotError::Object {
                    at: raw.at.clone(),
                    object: format!("Node {}", raw.name),
                    message: format!(
                        "has no status.allocatable and its instance type {:?} is not in the catalog, so its size is unknown",
                        facts.instance_type
                    ),
                });
            }
        };
        let capacity = raw
            .capacity
            .or(estimate.map(|t| t.capacity))
            .unwrap_or(allocatable);
        if raw.deleting {
            warnings.push(format!(
                "node {}: being deleted in the snapshot (metadata.deletionTimestamp); karpsim keeps it as a live node",
                raw.name
            ));
        }
        let pool_label = raw.labels.get(LABEL_NODEPOOL);
        let claim = claim_of.get(raw.name.as_str()).copied();
        let group = raw
            .labels
            .get(LABEL_EKS_NODEGROUP)
            .or_else(|| raw.labels.get(LABEL_EKSCTL_NODEGROUP));
        let (owner, claim_info) = match (pool_label, claim) {
            (Some(pool), Some(claim)) => {
                let info = claim_info(claim, pool, &facts, &raw.annotations, pool_hash(pool), &at);
                (NodeOwner::Karpenter, Some(info))
            }
            (Some(_), None) => {
                without_claim.push(raw.name.clone());
                (NodeOwner::Unmanaged, None)
            }
            (None, _) => match group {
                Some(group) => (NodeOwner::NodeGroup(group.clone()), None),
                None => (NodeOwner::Unmanaged, None),
            },
        };
        let initialized = match &claim_info {
            Some(_) => {
                raw.labels.get(LABEL_NODE_INITIALIZED).map(String::as_str) == Some("true")
                    || claim.is_some_and(|c| c.initialized_at.is_some())
            }
            None => true,
        };
        let labels: Labels = raw
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        out.nodes.push(InitialNode {
            node: Node {
                name: raw.name.clone(),
                labels,
                taints: raw.taints.clone(),
                capacity,
                allocatable,
                requested: Resources::ZERO,
                pods: Vec::new(),
                registered: true,
                initialized,
                marked_for_deletion: false,
                claim: claim_info,
                created_at: at(raw.created),
            },
            owner,
            instance_type: facts.instance_type,
            zone: facts.zone,
            capacity_type: facts.capacity_type,
            price: facts.price,
            scale_down_disabled: annotation_true(&raw.annotations, ANNOTATION_SCALE_DOWN_DISABLED),
        });
    }
    // NodeClaims still launching: their instance exists (and is billed)
    // but has not registered a node yet.
    let mut not_launched = 0;
    for claim in claims.iter().filter(|c| c.node_name.is_none()) {
        let Some(pool) = claim.labels.get(LABEL_NODEPOOL) else {
            not_launched += 1;
            continue;
        };
        if !claim.launched || !claim.labels.contains_key(LABEL_INSTANCE_TYPE) {
            not_launched += 1;
            continue;
        }
        let facts = facts(
            &claim.name,
            &claim.labels,
            catalog,
            warnings,
            &mut missing_types,
            &mut no_capacity_type,
        );
        let estimate = catalog.get(&facts.instance_type);
        let Some(allocatable) = claim.allocatable.or(estimate.map(|t| t.allocatable)) else {
            not_launched += 1;
            continue;
        };
        let info = claim_info(
            claim,
            pool,
            &facts,
            &claim.annotations,
            pool_hash(pool),
            &at,
        );
        let labels: Labels = claim
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut node_taints = pools
            .iter()
            .find(|p| &p.name == pool)
            .map(|p| p.taints.clone())
            .unwrap_or_default();
        node_taints.extend(info.startup_taints.iter().cloned());
        out.nodes.push(InitialNode {
            node: Node {
                name: claim.name.clone(),
                labels,
                taints: node_taints,
                capacity: claim.capacity.unwrap_or(allocatable),
                allocatable,
                requested: Resources::ZERO,
                pods: Vec::new(),
                registered: false,
                initialized: false,
                marked_for_deletion: false,
                claim: Some(info),
                created_at: at(claim.created),
            },
            owner: NodeOwner::Karpenter,
            instance_type: facts.instance_type,
            zone: facts.zone,
            capacity_type: facts.capacity_type,
            price: facts.price,
            scale_down_disabled: false,
        });
    }
    if not_launched > 0 {
        warnings.push(format!(
            "{not_launched} NodeClaim(s) have not launched an instance yet (no Launched condition, instance type or node); skipped"
        ));
    }
    if !without_claim.is_empty() {
        warnings.push(format!(
            "{} node(s) carry {LABEL_NODEPOOL} but no NodeClaim names them ({}{}); they are unmanaged here (include nodeclaims in the kubectl get)",
            without_claim.len(),
            without_claim.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            if without_claim.len() > 3 { ", …" } else { "" }
        ));
    }
    if !no_capacity_type.is_empty() {
        warnings.push(format!(
            "{} node(s) have neither {LABEL_CAPACITY_TYPE} nor {LABEL_EKS_CAPACITY_TYPE} ({}{}); priced as on-demand",
            no_capacity_type.len(),
            no_capacity_type.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            if no_capacity_type.len() > 3 { ", …" } else { "" }
        ));
    }
    Ok(out)
}

/// What Karpenter knows about a NodeClaim. The template hash: karpsim's
/// own (`karpsim-v1`) is kept; another version's (upstream's) cannot be
/// compared, and Karpenter re-stamps a NodeClaim whose hash version
/// changed without drifting it, so it gets the hash of its NodePool as the
/// snapshot has it.
fn claim_info(
    claim: &RawNodeClaim,
    pool: &str,
    facts: &Facts,
    node_annotations: &BTreeMap<String, String>,
    current_hash: Option<String>,
    at: &dyn Fn(Option<i64>) -> SimTime,
) -> NodeClaimInfo {
    let stamped = claim
        .annotations
        .get(ANNOTATION_NODEPOOL_HASH_VERSION)
        .filter(|v| v.as_str() == NODEPOOL_HASH_VERSION)
        .and_then(|_| claim.annotations.get(ANNOTATION_NODEPOOL_HASH))
        .cloned();
    let do_not_disrupt = [node_annotations, &claim.annotations]
        .iter()
        .any(|a| a.get(ANNOTATION_DO_NOT_DISRUPT).map(String::as_str) == Some("true"));
    let sim = crate::time::SimDuration::from_std;
    NodeClaimInfo {
        nodepool: Arc::from(pool),
        instance_type: facts.instance_type.clone(),
        capacity_type: facts.capacity_type,
        zone: facts.zone.clone(),
        price: facts.price,
        startup_taints: claim.startup_taints.clone(),
        lifecycle: ClaimLifecycle {
            initialized_at: claim.initialized_at.map(|t| at(Some(t))),
            last_pod_event_at: claim.last_pod_event.map(|t| at(Some(t))),
            nominated_until: None,
            nodepool_hash: stamped.or(current_hash),
            drifted: claim
                .drifted
                .as_ref()
                .map(|(reason, since)| DriftedCondition {
                    reason: reason.clone(),
                    since: at(Some(*since)),
                }),
            expire_after: claim.expire_after.map(sim),
            termination_grace_period: claim.termination_grace_period.map(sim),
            do_not_disrupt,
            instance_terminating: claim.instance_terminating,
        },
    }
}
