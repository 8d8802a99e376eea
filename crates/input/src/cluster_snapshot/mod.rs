//! Reading a cluster snapshot: the output of `kubectl get nodes,pods,pdb,
//! deployments,replicasets,statefulsets,daemonsets,jobs,nodeclaims,
//! nodepools,ec2nodeclasses -A -o yaml` (or `-o json`), one file or a folder
//! of files, into the cluster a run or a `plan` begins from.
//!
//! Objects are read as the API server wrote them: `status`, `managedFields`,
//! `ownerReferences` and the other server fields are accepted; a field a
//! kind does not define is still an error (kubectl's strict validation).
//! Kinds karpsim does not model are skipped and counted.
//!
//! Ownership follows the objects: a node is Karpenter's when it has the
//! `karpenter.sh/nodepool` label and a NodeClaim names it; a node group's
//! when it has `eks.amazonaws.com/nodegroup` (or eksctl's label); otherwise
//! it is unmanaged. Pods go to their controller (a ReplicaSet owned by a
//! Deployment to the Deployment). kubectl records no capture time, so the
//! snapshot's instant is the latest timestamp in it (a node's heartbeat,
//! usually); every time in the snapshot becomes simulated time relative to
//! it.

mod nodes;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cloud::Catalog;
use crate::kube::resources::ResourceNames;
use crate::kube::workload::{Workload, WorkloadKind};
use crate::manifest::{
    CoreReader, Document, ManifestError, Position, Value, Warnings, is_core_kind,
    split_documents_with,
};
use crate::nodepool::NodePool;
use crate::nodepools::ec2nodeclass::{Ec2NodeClass, read_ec2nodeclass};
use crate::nodepools::nodepool::{NodePoolSource, read_nodepool};
use crate::sim::engine::{InitialPod, InitialState, InitialWorkload};
use crate::time::SimTime;

pub use self::nodes::AllocatableDifference;

/// A snapshot read and resolved against a catalog.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The cluster a run begins from.
    pub state: InitialState,
    /// NodePools in the snapshot, in document order.
    pub nodepools: Vec<NodePool>,
    /// Where each NodePool is written.
    pub nodepool_sources: Vec<NodePoolSource>,
    /// EC2NodeClasses in the snapshot.
    pub nodeclasses: Vec<Ec2NodeClass>,
    /// `karpenter.sh/v1alpha1` NodeOverlays in the snapshot.
    pub nodeoverlays: Vec<crate::nodepools::nodeoverlay::ReadOverlay>,
    /// Extended resource names seen.
    pub resource_names: ResourceNames,
    /// The snapshot's instant, milliseconds since the Unix epoch.
    pub time_unix_millis: i64,
    /// Objects skipped, by `apiVersion kind`, with their count.
    pub skipped: BTreeMap<String, usize>,
    /// Nodes whose reported allocatable differs from Karpenter's estimate
    /// for their instance type.
    pub allocatable_differences: Vec<AllocatableDifference>,
    /// Warnings, one line each.
    pub warnings: Vec<String>,
}

/// Why a snapshot could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// A file or folder could not be read.
    #[error("cannot read {file}: {reason}")]
    Read {
        /// The file.
        file: String,
        /// The OS error.
        reason: String,
    },
    /// A file is not UTF-8 text.
    #[error("{file}:{}: {error}", error.position)]
    NotUtf8 {
        /// The file.
        file: String,
        /// Where its first invalid byte is.
        error: crate::yaml::NotUtf8,
    },
    /// An object is malformed (as a manifest).
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// An object is well formed but does not fit the rest of the snapshot.
    #[error("{at}: {object}: {message}")]
    Object {
        /// Where the object (or the offending field) is.
        at: Position,
        /// `Pod shop/web-1`, `Node ip-10-0-1-5`, …
        object: String,
        /// What is wrong.
        message: String,
    },
    /// The snapshot has no nodes.
    #[error(
        "{file}: the snapshot has no v1 Node objects (take it with `kubectl get nodes,pods,… -A -o yaml`)"
    )]
    NoNodes {
        /// The file or folder.
        file: String,
    },
}

/// A snapshot's objects, read but not yet priced: [`RawSnapshot::region`]
/// says which catalog [`RawSnapshot::resolve`] needs.
#[derive(Debug)]
pub struct RawSnapshot {
    source: String,
    nodes: Vec<nodes::RawNode>,
    nodeclaims: Vec<nodes::RawNodeClaim>,
    pods: Vec<RawPod>,
    /// ReplicaSet (namespace, name) → owning Deployment name.
    replicaset_owners: BTreeMap<(String, String), String>,
    workloads: Vec<Workload>,
    job_succeeded: BTreeMap<(String, String), u32>,
    pdbs: Vec<crate::kube::workload::PodDisruptionBudget>,
    nodepools: Vec<NodePool>,
    nodepool_sources: Vec<NodePoolSource>,
    nodeclasses: Vec<Ec2NodeClass>,
    nodeoverlays: Vec<crate::nodepools::nodeoverlay::ReadOverlay>,
    resource_names: ResourceNames,
    skipped: BTreeMap<String, usize>,
    warnings: Vec<String>,
    latest: Option<i64>,
}

/// What a Pod item says beyond its spec.
#[derive(Debug, Clone)]
struct RawPod {
    at: Position,
    namespace: String,
    name: String,
    controller: Option<(String, String)>,
    node_name: Option<String>,
    phase: String,
    created: Option<i64>,
    started: Option<i64>,
    deleting: bool,
    unschedulable: bool,
}

/// Reads a snapshot file, or every `.yaml`, `.yml` and `.json` file of a
/// folder (in name order).
pub fn read(path: &Path) -> Result<RawSnapshot, SnapshotError> {
    let shown = path.display().to_string();
    let files = snapshot_files(path)?;
    let mut texts = Vec::new();
    for file in &files {
        let name = file.display().to_string();
        let bytes = std::fs::read(file).map_err(|e| SnapshotError::Read {
            file: name.clone(),
            reason: e.to_string(),
        })?;
        let text = crate::yaml::utf8_text(&bytes)
            .map_err(|error| SnapshotError::NotUtf8 {
                file: name.clone(),
                error,
            })?
            .to_string();
        texts.push((name, text));
    }
    let sources: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    read_texts(&shown, &sources)
}

fn snapshot_files(path: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let error = |e: std::io::Error| SnapshotError::Read {
        file: path.display().to_string(),
        reason: e.to_string(),
    };
    if !path.is_dir() {
        std::fs::metadata(path).map_err(error)?;
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(error)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(SnapshotError::Read {
            file: path.display().to_string(),
            reason: "the folder holds no .yaml, .yml or .json file".to_string(),
        });
    }
    Ok(files)
}

/// Reads a snapshot from `(file name, text)` sources; `source` names the
/// whole (a file or folder) in messages.
pub fn read_texts(source: &str, sources: &[(&str, &str)]) -> Result<RawSnapshot, SnapshotError> {
    let mut raw = RawSnapshot {
        source: source.to_string(),
        nodes: Vec::new(),
        nodeclaims: Vec::new(),
        pods: Vec::new(),
        replicaset_owners: BTreeMap::new(),
        workloads: Vec::new(),
        job_succeeded: BTreeMap::new(),
        pdbs: Vec::new(),
        nodepools: Vec::new(),
        nodepool_sources: Vec::new(),
        nodeclasses: Vec::new(),
        nodeoverlays: Vec::new(),
        resource_names: ResourceNames::default(),
        skipped: BTreeMap::new(),
        warnings: Vec::new(),
        latest: None,
    };
    let mut warnings = Warnings::default();
    let mut core = CoreReader::for_snapshot();
    for (file, text) in sources {
        for doc in split_documents_with(file, text, crate::manifest::tree::SNAPSHOT_YAML)? {
            raw.note_times(&doc.node);
            match (doc.api_version.as_str(), doc.kind.as_str()) {
                ("v1", "Node") => raw
                    .nodes
                    .push(nodes::read_node(&doc, &mut raw.resource_names)?),
                ("karpenter.sh/v1", "NodeClaim") => raw
                    .nodeclaims
                    .push(nodes::read_nodeclaim(&doc, &mut raw.resource_names)?),
                ("karpenter.sh/v1", "NodePool") => {
                    let (pool, at) = read_nodepool(&doc, &mut raw.resource_names, &mut warnings)?;
                    if raw.nodepools.iter().any(|p| p.name == pool.name) {
                        return Err(object_error(&doc, "defined twice in the snapshot"));
                    }
                    raw.nodepools.push(pool);
                    raw.nodepool_sources.push(at);
                }
                ("karpenter.k8s.aws/v1", "EC2NodeClass") => {
                    let class = read_ec2nodeclass(&doc, &mut warnings)?;
                    if raw.nodeclasses.iter().any(|c| c.name == class.name) {
                        return Err(object_error(&doc, "defined twice in the snapshot"));
                    }
                    raw.nodeclasses.push(class);
                }
                ("karpenter.sh/v1alpha1", "NodeOverlay") => {
                    let read = crate::nodepools::nodeoverlay::read_nodeoverlay(&doc)?;
                    if raw
                        .nodeoverlays
                        .iter()
                        .any(|o| o.overlay.name == read.overlay.name)
                    {
                        return Err(object_error(&doc, "defined twice in the snapshot"));
                    }
                    raw.nodeoverlays.push(read);
                }
                ("v1", "Pod") => {
                    let pod = read_pod(&doc)?;
                    let terminal = matches!(pod.phase.as_str(), "Succeeded" | "Failed");
                    if terminal || pod.deleting {
                        // Finished pods hold nothing; terminating ones are
                        // gone within their grace period.
                        let what = if terminal { "finished" } else { "terminating" };
                        *raw.skipped.entry(format!("v1 Pod ({what})")).or_default() += 1;
                        continue;
                    }
                    raw.pods.push(pod);
                    core.add(doc, &mut raw.resource_names, &mut warnings)?;
                }
                ("apps/v1", "ReplicaSet") => {
                    if let Some((kind, owner)) = controller_of(&doc.node)
                        && kind == "Deployment"
                    {
                        let namespace = namespace_of(&doc.node);
                        raw.replicaset_owners
                            .insert((namespace, doc.name.clone()), owner);
                        // Checked like any object; its Deployment runs it.
                        let mut scratch = CoreReader::for_snapshot();
                        scratch.add(doc, &mut raw.resource_names, &mut warnings)?;
                        scratch.finish(&mut raw.resource_names, &mut warnings)?;
                        continue;
                    }
                    core.add(doc, &mut raw.resource_names, &mut warnings)?;
                }
                ("batch/v1", "Job") => {
                    let succeeded = doc
                        .node
                        .at_path("status.succeeded")
                        .and_then(|n| match n.value {
                            Value::Int(n) => u32::try_from(n).ok(),
                            _ => None,
                        })
                        .unwrap_or(0);
                    raw.job_succeeded
                        .insert((namespace_of(&doc.node), doc.name.clone()), succeeded);
                    core.add(doc, &mut raw.resource_names, &mut warnings)?;
                }
                (api, kind) if is_core_kind(api, kind) => {
                    core.add(doc, &mut raw.resource_names, &mut warnings)?
                }
                (api, kind) => {
                    *raw.skipped.entry(format!("{api} {kind}")).or_default() += 1;
                }
            }
        }
    }
    let core = core.finish(&mut raw.resource_names, &mut warnings)?;
    raw.workloads = core.workloads;
    raw.pdbs = core.pdbs;
    raw.warnings = warnings
        .into_vec()
        .into_iter()
        .map(|w| w.to_string())
        .collect();
    if raw.nodes.is_empty() && raw.nodeclaims.is_empty() {
        return Err(SnapshotError::NoNodes {
            file: raw.source.clone(),
        });
    }
    Ok(raw)
}

impl RawSnapshot {
    /// The region the nodes' `topology.kubernetes.io/region` labels name
    /// (the first one; [`RawSnapshot::resolve`] checks they agree).
    pub fn region(&self) -> Option<&str> {
        self.nodes.iter().find_map(|n| n.region.as_deref())
    }

    /// Prices the nodes from `catalog` (the region's, default EC2NodeClass
    /// settings) and links pods to nodes and owners.
    pub fn resolve(self, catalog: &Catalog) -> Result<Snapshot, SnapshotError> {
        let time = self.latest.unwrap_or(0);
        let mut warnings = self.warnings;
        let region = self.nodes.iter().find_map(|n| n.region.clone());
        let elsewhere = self.nodes.iter().find(|n| {
            n.region
                .as_ref()
                .is_some_and(|r| Some(r) != region.as_ref())
        });
        if let (Some(region), Some(other)) = (&region, elsewhere) {
            return Err(SnapshotError::Object {
                at: other.at.clone(),
                object: format!("Node {}", other.name),
                message: format!(
                    "is in region {}, but other nodes are in {region}: a snapshot is one cluster in one region",
                    other.region.as_deref().unwrap_or_default()
                ),
            });
        }
        let resolved = nodes::resolve_nodes(
            &self.nodes,
            &self.nodeclaims,
            &self.nodepools,
            catalog,
            time,
            &mut warnings,
        )?;
        let node_index: BTreeMap<&str, usize> = resolved
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node.name.as_str(), i))
            .collect();
        // Owners: workload (kind, namespace, name) → index.
        let mut owners: BTreeMap<(&'static str, String, String), usize> = BTreeMap::new();
        let mut workloads: Vec<InitialWorkload> = Vec::new();
        let mut bare: BTreeMap<(String, String), Workload> = BTreeMap::new();
        for workload in self.workloads {
            let kind = match workload.kind {
                WorkloadKind::Deployment { .. } => "Deployment",
                WorkloadKind::ReplicaSet { .. } => "ReplicaSet",
                WorkloadKind::StatefulSet { .. } => "StatefulSet",
                WorkloadKind::DaemonSet => "DaemonSet",
                WorkloadKind::Job(_) => "Job",
                WorkloadKind::Pod => {
                    bare.insert(
                        (workload.namespace.clone(), workload.name.clone()),
                        workload,
                    );
                    continue;
                }
            };
            let key = (workload.namespace.clone(), workload.name.clone());
            owners.insert((kind, key.0.clone(), key.1.clone()), workloads.len());
            let succeeded = self.job_succeeded.get(&key).copied().unwrap_or(0);
            workloads.push(InitialWorkload {
                workload,
                pods: Vec::new(),
                succeeded,
            });
        }
        let mut orphans = 0usize;
        for pod in &self.pods {
            let Some(spec) = bare.remove(&(pod.namespace.clone(), pod.name.clone())) else {
                continue;
            };
            let node = match &pod.node_name {
                None => None,
                Some(name) => match node_index.get(name.as_str()) {
                    Some(&index) => Some(index),
                    None => {
                        return Err(SnapshotError::Object {
                            at: pod.at.clone(),
                            object: format!("Pod {}/{}", pod.namespace, pod.name),
                            message: format!(
                                "spec.nodeName {name:?} is not a node in the snapshot"
                            ),
                        });
                    }
                },
            };
            let at = |t: Option<i64>| t.map(|t| SimTime::from_signed_millis(t - time));
            let ordinal = pod
                .name
                .rsplit_once('-')
                .and_then(|(_, n)| n.parse::<u32>().ok());
            let initial = InitialPod {
                name: pod.name.clone(),
                spec: spec.template.clone(),
                node,
                created_at: at(pod.created).unwrap_or(SimTime::ZERO),
                started_at: at(pod.started),
                unschedulable: pod.unschedulable,
                ordinal: None,
            };
            let owner = pod.controller.as_ref().and_then(|(kind, name)| {
                let ns = pod.namespace.clone();
                match kind.as_str() {
                    "ReplicaSet" => match self.replicaset_owners.get(&(ns.clone(), name.clone())) {
                        Some(deployment) => owners.get(&("Deployment", ns, deployment.clone())),
                        None => owners.get(&("ReplicaSet", ns, name.clone())),
                    },
                    "StatefulSet" => owners.get(&("StatefulSet", ns, name.clone())),
                    "DaemonSet" => owners.get(&("DaemonSet", ns, name.clone())),
                    "Job" => owners.get(&("Job", ns, name.clone())),
                    _ => None,
                }
            });
            match owner {
                Some(&w) => {
                    let stateful =
                        matches!(workloads[w].workload.kind, WorkloadKind::StatefulSet { .. });
                    workloads[w].pods.push(InitialPod {
                        ordinal: if stateful { ordinal } else { None },
                        ..initial
                    });
                }
                None => {
                    if pod.controller.is_some() {
                        orphans += 1;
                    }
                    workloads.push(InitialWorkload {
                        workload: spec,
                        pods: vec![initial],
                        succeeded: 0,
                    });
                }
            }
        }
        if orphans > 0 {
            warnings.push(format!(
                "{}: {orphans} pod(s) are owned by objects not in the snapshot (or of kinds karpsim does not run, such as a ReplicationController or a custom controller); they are kept as bare pods that are not re-created",
                self.source
            ));
        }
        let skipped_total: usize = self.skipped.values().sum();
        if skipped_total > 0 {
            let kinds: Vec<String> = self
                .skipped
                .iter()
                .map(|(kind, n)| format!("{kind} ×{n}"))
                .collect();
            warnings.push(format!(
                "{}: {skipped_total} object(s) skipped: {}",
                self.source,
                kinds.join(", ")
            ));
        }
        Ok(Snapshot {
            state: InitialState {
                source: self.source,
                time: Some(
                    crate::sim::spot::timestamp::Timestamp::from_unix_millis(time).to_string(),
                ),
                nodes: resolved.nodes,
                workloads,
                pdbs: self.pdbs,
            },
            nodepools: self.nodepools,
            nodepool_sources: self.nodepool_sources,
            nodeclasses: self.nodeclasses,
            nodeoverlays: self.nodeoverlays,
            resource_names: self.resource_names,
            time_unix_millis: time,
            skipped: self.skipped,
            allocatable_differences: resolved.allocatable_differences,
            warnings,
        })
    }

    /// Keeps the latest server timestamp seen (the snapshot's instant).
    fn note_times(&mut self, node: &crate::manifest::Node) {
        let mut latest = self.latest;
        let mut see = |text: &str| {
            if let Some(t) = parse_time(text) {
                latest = Some(latest.map_or(t, |l: i64| l.max(t)));
            }
        };
        if let Some(t) = node.at_path("metadata.creationTimestamp").and_then(str_of) {
            see(t);
        }
        if let Some(Value::Seq(conditions)) = node.at_path("status.conditions").map(|n| &n.value) {
            for condition in conditions {
                for key in ["lastHeartbeatTime", "lastTransitionTime"] {
                    if let Some(t) = condition.get_str(key) {
                        see(t);
                    }
                }
            }
        }
        for path in ["status.lastPodEventTime", "status.startTime"] {
            if let Some(t) = node.at_path(path).and_then(str_of) {
                see(t);
            }
        }
        self.latest = latest;
    }
}

fn str_of(node: &crate::manifest::Node) -> Option<&str> {
    match &node.value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// An RFC 3339 server timestamp as Unix milliseconds.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    crate::sim::spot::timestamp::Timestamp::parse(text)
        .ok()
        .map(|t| t.unix_millis())
}

fn object_error(doc: &Document, message: &str) -> SnapshotError {
    SnapshotError::Object {
        at: doc.position(),
        object: doc.object_label(),
        message: message.to_string(),
    }
}

fn namespace_of(node: &crate::manifest::Node) -> String {
    node.at_path("metadata.namespace")
        .and_then(str_of)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// The `ownerReferences` entry with `controller: true`: (kind, name).
fn controller_of(node: &crate::manifest::Node) -> Option<(String, String)> {
    let Value::Seq(refs) = &node.at_path("metadata.ownerReferences")?.value else {
        return None;
    };
    refs.iter()
        .find(|r| {
            matches!(
                r.get("controller").map(|c| &c.value),
                Some(Value::Bool(true))
            )
        })
        .and_then(|r| {
            Some((
                r.get_str("kind")?.to_string(),
                r.get_str("name")?.to_string(),
            ))
        })
}

fn read_pod(doc: &Document) -> Result<RawPod, SnapshotError> {
    let node = &doc.node;
    let time = |path: &str| -> Result<Option<i64>, SnapshotError> {
        match node.at_path(path).and_then(str_of) {
            None => Ok(None),
            Some(text) => parse_time(text)
                .map(Some)
                .ok_or_else(|| SnapshotError::Object {
                    at: Position::of(&doc.file, node.at_path(path).unwrap_or(node)),
                    object: doc.object_label(),
                    message: format!("{path}: {text:?} is not an RFC 3339 time"),
                }),
        }
    };
    let unschedulable = match node.at_path("status.conditions").map(|n| &n.value) {
        Some(Value::Seq(conditions)) => conditions.iter().any(|c| {
            c.get_str("type") == Some("PodScheduled")
                && c.get_str("status") == Some("False")
                && c.get_str("reason") == Some("Unschedulable")
        }),
        _ => false,
    };
    Ok(RawPod {
        at: doc.position(),
        namespace: namespace_of(node),
        name: doc.name.clone(),
        controller: controller_of(node),
        node_name: node
            .at_path("spec.nodeName")
            .and_then(str_of)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        phase: node
            .at_path("status.phase")
            .and_then(str_of)
            .unwrap_or("Pending")
            .to_string(),
        created: time("metadata.creationTimestamp")?,
        started: time("status.startTime")?,
        deleting: node
            .at_path("metadata.deletionTimestamp")
            .is_some_and(|n| !matches!(n.value, Value::Null)),
        unschedulable,
    })
}
