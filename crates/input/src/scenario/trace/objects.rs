//! Kubernetes objects recorded in a trace (an audit log's request or
//! response object, a SimKube event's object, a kubereplay Deployment or
//! Job), read through the manifest reader with its strictness: the
//! k8s-openapi types, kubectl's strict field validation, the API server's
//! name, label and selector rules. Server-written fields (`status`,
//! `managedFields`, `resourceVersion`, …) are accepted as in a `kubectl get
//! -o yaml` snapshot.
//!
//! Recordings are JSON or msgpack, not YAML, so objects arrive as trees
//! built here ([`from_json`]) or by the msgpack decoder; every node of an
//! object carries the line it was recorded on (column 1), since neither
//! format gives finer places.

use std::collections::BTreeMap;

use crate::kube::resources::ResourceNames;
use crate::kube::workload::{PodDisruptionBudget, Workload, WorkloadKind};
use crate::manifest::{CoreReader, Document, ManifestError, Warnings, is_core_kind};
use crate::sim::engine::{Target, TargetKind};
use crate::yaml::{Node, Position, Value};

/// What one recorded object is, once read.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A pod-creating object.
    Workload(Box<Workload>),
    /// A PodDisruptionBudget.
    Pdb(PodDisruptionBudget),
}

/// Reads objects one at a time, sharing the warnings (each said once) and
/// the extended-resource table of one trace.
#[derive(Debug, Default)]
pub struct ObjectReader {
    names: ResourceNames,
    warnings: Warnings,
}

impl ObjectReader {
    /// Reads `node`, an object recorded in `file` (`base` is its path in the
    /// record, such as `responseObject`, for field paths in errors). `Ok(None)`
    /// for kinds karpsim does not model. Errors are one line without the
    /// file and place (the caller names them), naming the field.
    pub fn read(&mut self, file: &str, base: &str, node: Node) -> Result<Option<Object>, String> {
        let text = |field: &str| node.get_str(field).unwrap_or_default().to_string();
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version.is_empty() || kind.is_empty() {
            let missing = if api_version.is_empty() {
                "apiVersion"
            } else {
                "kind"
            };
            return Err(format!("{}: missing {missing}", join(base, missing)));
        }
        if !is_core_kind(&api_version, &kind) || kind == "CronJob" {
            return Ok(None);
        }
        let name = node
            .get("metadata")
            .and_then(|m| m.get_str("name"))
            .unwrap_or_default()
            .to_string();
        let doc = Document {
            file: file.to_string(),
            base_path: base.to_string(),
            api_version,
            kind,
            name,
            node,
        };
        // One reader per object: a trace records one object many times,
        // which a manifest file may not.
        let mut core = CoreReader::new();
        let read = core
            .add(doc, &mut self.names, &mut self.warnings)
            .and_then(|()| core.finish(&mut self.names, &mut self.warnings));
        let mut read = read.map_err(|e| without_place(&e))?;
        Ok(match (read.workloads.pop(), read.pdbs.pop()) {
            (Some(workload), _) => Some(Object::Workload(Box::new(workload))),
            (None, Some(pdb)) => Some(Object::Pdb(pdb)),
            (None, None) => None,
        })
    }

    /// The warnings so far, each once, without the per-Job duration warning
    /// (a trace's pod run times come from the trace, not the annotation).
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .list()
            .iter()
            .filter(|w| !w.message.contains(crate::kube::pod::DURATION_ANNOTATION))
            .map(|w| format!("{}: {}", w.path, w.message))
            .collect()
    }
}

fn join(base: &str, field: &str) -> String {
    if base.is_empty() {
        field.to_string()
    } else {
        format!("{base}.{field}")
    }
}

/// A manifest error's text after its `file:line:column: ` prefix.
fn without_place(error: &ManifestError) -> String {
    let text = error.to_string();
    let prefix = format!("{}: ", error.position());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

/// Whether an object has owner references (the owner's controller made it).
pub fn has_owner(node: &Node) -> bool {
    matches!(
        node.at_path("metadata.ownerReferences").map(|n| &n.value),
        Some(Value::Seq(refs)) if !refs.is_empty()
    )
}

/// A JSON value as a located tree, every node at `line`.
pub fn from_json(value: &serde_json::Value, line: u64) -> Node {
    let position = Position { line, column: 1 };
    let value = match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i128::from(i)),
            (None, Some(u)) => Value::Int(i128::from(u)),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(items) => {
            Value::Seq(items.iter().map(|v| from_json(v, line)).collect())
        }
        serde_json::Value::Object(entries) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = Node {
                        value: Value::Str(k.clone()),
                        position,
                        bytes: None,
                    };
                    (key, from_json(v, line))
                })
                .collect(),
        ),
    };
    Node {
        value,
        position,
        bytes: None,
    }
}

/// `namespace/name` of an object tree (namespace `default` when absent).
pub fn key_of(node: &Node) -> (String, String) {
    let meta = node.get("metadata");
    let text = |field: &str| {
        meta.and_then(|m| m.get_str(field))
            .unwrap_or_default()
            .to_string()
    };
    let namespace = match text("namespace") {
        ns if ns.is_empty() => crate::scenario::DEFAULT_NAMESPACE.to_string(),
        ns => ns,
    };
    (namespace, text("name"))
}

/// The step target naming a workload.
pub fn target_of(workload: &Workload) -> Target {
    let kind = match workload.kind {
        WorkloadKind::Deployment { .. } => TargetKind::Deployment,
        WorkloadKind::ReplicaSet { .. } => TargetKind::ReplicaSet,
        WorkloadKind::StatefulSet { .. } => TargetKind::StatefulSet,
        WorkloadKind::DaemonSet => TargetKind::DaemonSet,
        WorkloadKind::Job(_) => TargetKind::Job,
        WorkloadKind::Pod => TargetKind::Pod,
    };
    Target {
        kind,
        namespace: workload.namespace.clone(),
        name: workload.name.clone(),
    }
}

/// The replica count of a scalable workload.
pub fn replicas_of(workload: &Workload) -> Option<u32> {
    match workload.kind {
        WorkloadKind::Deployment { replicas }
        | WorkloadKind::ReplicaSet { replicas }
        | WorkloadKind::StatefulSet { replicas } => Some(replicas),
        _ => None,
    }
}

fn set_replicas(workload: &mut Workload, to: u32) {
    if let WorkloadKind::Deployment { replicas }
    | WorkloadKind::ReplicaSet { replicas }
    | WorkloadKind::StatefulSet { replicas } = &mut workload.kind
    {
        *replicas = to;
    }
}

/// What a recorded object means for the replay, given what was replayed
/// of it before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Apply the object: new, or its spec changed (`update`).
    Apply {
        /// Whether the object was live already.
        update: bool,
    },
    /// Only the replica count changed.
    Scale(u32),
    /// Nothing karpsim models changed.
    Unchanged,
    /// An update of a Job or Pod already running: their specs are
    /// immutable in the engine.
    Immutable,
}

/// The recorded objects replayed so far and still live, with their last
/// state: what tells an update from a create, and a scale from a spec
/// change, as kubereplay's parser does (`deploymentEmitted`,
/// `deploymentReplicas` in tools/kubereplay/pkg/parser/audit.go). Its size
/// is the number of live objects, not of events.
#[derive(Debug, Default)]
pub struct Tracker {
    live: BTreeMap<Target, Workload>,
}

impl Tracker {
    /// Records `workload` as recorded now and says what changes.
    pub fn applied(&mut self, workload: &Workload) -> Change {
        let target = target_of(workload);
        let Some(before) = self.live.get_mut(&target) else {
            self.live.insert(target, workload.clone());
            return Change::Apply { update: false };
        };
        if matches!(target.kind, TargetKind::Job | TargetKind::Pod) {
            return Change::Immutable;
        }
        let mut same_but_replicas = workload.clone();
        if let Some(r) = replicas_of(before) {
            set_replicas(&mut same_but_replicas, r);
        }
        let change = if same_but_replicas == *before {
            match replicas_of(workload) {
                Some(r) if Some(r) != replicas_of(before) => Change::Scale(r),
                _ => Change::Unchanged,
            }
        } else {
            Change::Apply { update: true }
        };
        *before = workload.clone();
        change
    }

    /// Records a new replica count (a `scale` subresource): `None` when the
    /// object is not live, `Some(false)` when the count is unchanged.
    pub fn scaled(&mut self, target: &Target, replicas: u32) -> Option<bool> {
        let workload = self.live.get_mut(target)?;
        if replicas_of(workload) == Some(replicas) {
            return Some(false);
        }
        set_replicas(workload, replicas);
        Some(true)
    }

    /// Forgets a deleted object; whether it was live.
    pub fn deleted(&mut self, target: &Target) -> bool {
        self.live.remove(target).is_some()
    }

    /// Whether `target` is live.
    pub fn is_live(&self, target: &Target) -> bool {
        self.live.contains_key(target)
    }
}
