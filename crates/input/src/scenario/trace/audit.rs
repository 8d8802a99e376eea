//! Kubernetes audit logs: `audit.k8s.io/v1` `Event` objects, one JSON
//! object per line, as the API server's log backend writes them (and EKS
//! ships them to CloudWatch). The log is read line by line, never whole,
//! so a log of several GB replays in bounded memory.
//!
//! What counts, following Karpenter's kubereplay parser
//! (tools/kubereplay/pkg/parser/audit.go) and the Event type
//! (staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go):
//!
//! - only `stage: ResponseComplete` events of successful requests
//!   (`responseStatus.code` 2xx), outside the excluded namespaces;
//! - the event's time is `requestReceivedTimestamp`;
//! - `create`, `update` and `patch` of deployments, replicasets,
//!   statefulsets, daemonsets (apps), jobs (batch), pods (core) and
//!   poddisruptionbudgets (policy) read the object the API server stored
//!   (`responseObject`; `requestObject` for a create or update logged
//!   without it). An object seen for the first time is created (it existed
//!   before the log began when the verb is an update); a later one whose
//!   only change is `spec.replicas` is a scale; one that changes nothing
//!   karpsim models is passed over;
//! - the `scale` subresource of deployments, replicasets and statefulsets
//!   sets the replica count of an object seen before;
//! - `delete` deletes an object that was replayed;
//! - pods and ReplicaSets with `ownerReferences` are their controller's
//!   business and are not replayed (their Deployment, Job, … is);
//! - a bare pod whose status turns `Succeeded` or `Failed`, and a Job whose
//!   status gains a true `Complete` or `Failed` condition, end: their
//!   recorded end is their run time.
//!
//! Everything else (reads, other resources, other subresources, other
//! stages, failed requests) is passed over and counted by reason, never an
//! error. A line that is not an audit event (bad JSON, an unknown field of
//! the event, an unknown verb, an object that fails validation) is an error
//! naming the file and line, or skipped and counted with `--skip-bad-rows`.
//!
//! The API server writes events when requests complete, so a long request's
//! `requestReceivedTimestamp` can be earlier than the line before it: events
//! are put back in time order within a window of [`REORDER_WINDOW_MS`];
//! one later than that is replayed at the time of the event before it, and
//! counted.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::objects::{self, Change, Object, ObjectReader, Tracker};
use super::{EventReader, TraceAction, TraceError, TraceEvent};
use crate::scenario::limits::MAX_REPLICAS;
use crate::sim::engine::{Target, TargetKind};
use crate::yaml::{Node, Value};

/// How far back in time (milliseconds) an event may be written after a
/// later one and still be replayed in order.
pub const REORDER_WINDOW_MS: i64 = 60_000;

/// The verbs an audit event may carry: the API verbs, and for non-resource
/// requests the lower-cased HTTP methods.
const VERBS: [&str; 13] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "proxy",
    "post",
    "put",
    "head",
    "options",
];

/// The envelope of an audit event: every field of the v1 `Event`, the ones
/// karpsim does not use skipped unread. A field the type does not define is
/// an error.
// Fields karpsim does not use are listed so that any other is refused.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Envelope {
    kind: Option<String>,
    api_version: Option<String>,
    level: Option<IgnoredAny>,
    #[serde(rename = "auditID")]
    audit_id: Option<IgnoredAny>,
    stage: String,
    #[serde(rename = "requestURI")]
    request_uri: Option<IgnoredAny>,
    verb: String,
    user: Option<IgnoredAny>,
    impersonated_user: Option<IgnoredAny>,
    #[serde(rename = "sourceIPs")]
    source_ips: Option<IgnoredAny>,
    user_agent: Option<IgnoredAny>,
    object_ref: Option<ObjectRef>,
    response_status: Option<ResponseStatus>,
    request_object: Option<IgnoredAny>,
    response_object: Option<IgnoredAny>,
    request_received_timestamp: Option<String>,
    stage_timestamp: Option<String>,
    annotations: Option<IgnoredAny>,
}

/// `ObjectReference` of the audit API.
// Fields karpsim does not use are listed so that any other is refused.
#[allow(dead_code)]
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObjectRef {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    uid: Option<IgnoredAny>,
    #[serde(default)]
    api_group: String,
    api_version: Option<IgnoredAny>,
    resource_version: Option<IgnoredAny>,
    #[serde(default)]
    subresource: String,
}

/// `metav1.Status` as the audit event's `responseStatus`.
// Fields karpsim does not use are listed so that any other is refused.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ResponseStatus {
    kind: Option<IgnoredAny>,
    api_version: Option<IgnoredAny>,
    metadata: Option<IgnoredAny>,
    status: Option<IgnoredAny>,
    message: Option<IgnoredAny>,
    reason: Option<IgnoredAny>,
    details: Option<IgnoredAny>,
    code: Option<i64>,
}

/// The objects of an event, read only when the event is about a workload.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Objects {
    request_object: Option<serde_json::Value>,
    response_object: Option<serde_json::Value>,
}

/// The workload resources read, with their API group and kind.
fn resource_kind(resource: &str, group: &str) -> Option<TargetKind> {
    Some(match (resource, group) {
        ("deployments", "apps") => TargetKind::Deployment,
        ("replicasets", "apps") => TargetKind::ReplicaSet,
        ("statefulsets", "apps") => TargetKind::StatefulSet,
        ("daemonsets", "apps") => TargetKind::DaemonSet,
        ("jobs", "batch") => TargetKind::Job,
        ("pods", "") => TargetKind::Pod,
        _ => return None,
    })
}

/// Streams an audit log as trace events.
pub struct AuditReader<R: BufRead> {
    file: String,
    input: R,
    buffer: String,
    line: u64,
    skip_bad_rows: bool,
    skipped: u64,
    exclude: Vec<String>,
    /// Unix milliseconds of the first event: trace time 0.
    origin: Option<i64>,
    ignored: BTreeMap<String, u64>,
    objects: ObjectReader,
    tracker: Tracker,
    /// Events read but not yet handed out, by (trace ms, arrival).
    pending: BTreeMap<(i64, u64), TraceAction>,
    arrivals: u64,
    /// The latest time read, and the time of the last event handed out.
    newest: i64,
    released: i64,
    at_end: bool,
}

impl<R: BufRead> AuditReader<R> {
    /// A reader of `input` (named `file` in messages).
    pub fn new(file: &str, input: R, skip_bad_rows: bool, exclude: &[String]) -> AuditReader<R> {
        AuditReader {
            file: file.to_string(),
            input,
            buffer: String::new(),
            line: 0,
            skip_bad_rows,
            skipped: 0,
            exclude: exclude.to_vec(),
            origin: None,
            ignored: BTreeMap::new(),
            objects: ObjectReader::default(),
            tracker: Tracker::default(),
            pending: BTreeMap::new(),
            arrivals: 0,
            newest: i64::MIN,
            released: i64::MIN,
            at_end: false,
        }
    }

    fn ignore(&mut self, reason: impl Into<String>) {
        *self.ignored.entry(reason.into()).or_default() += 1;
    }

    /// Reads the next line into the pending events; false at the end.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        loop {
            self.buffer.clear();
            let read = self
                .input
                .read_line(&mut self.buffer)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::InvalidData => TraceError::Line {
                        file: self.file.clone(),
                        line: self.line + 1,
                        message: "not UTF-8 text".to_string(),
                    },
                    _ => TraceError::Io {
                        file: self.file.clone(),
                        reason: e.to_string(),
                    },
                })?;
            if read == 0 {
                return Ok(false);
            }
            self.line += 1;
            if self.buffer.trim().is_empty() {
                continue;
            }
            let line = std::mem::take(&mut self.buffer);
            let result = self.event(line.trim());
            self.buffer = line;
            match result {
                Ok(()) => return Ok(true),
                Err(_) if self.skip_bad_rows => {
                    self.skipped += 1;
                    return Ok(true);
                }
                Err(message) => {
                    return Err(TraceError::Line {
                        file: self.file.clone(),
                        line: self.line,
                        message,
                    });
                }
            }
        }
    }

    fn push(&mut self, at: i64, action: TraceAction) {
        self.pending.insert((at, self.arrivals), action);
        self.arrivals += 1;
    }

    /// Reads one event line.
    fn event(&mut self, text: &str) -> Result<(), String> {
        let event: Envelope =
            serde_json::from_str(text).map_err(|e| format!("not an audit event: {e}"))?;
        match (event.api_version.as_deref(), event.kind.as_deref()) {
            (Some("audit.k8s.io/v1") | None, Some("Event") | None) => {}
            (api, kind) => {
                return Err(format!(
                    "apiVersion {:?}, kind {:?}: only audit.k8s.io/v1 Event objects are read",
                    api.unwrap_or_default(),
                    kind.unwrap_or_default()
                ));
            }
        }
        if !VERBS.contains(&event.verb.as_str()) {
            return Err(format!(
                "verb: unknown verb {:?} (verbs: {})",
                event.verb,
                VERBS.join(", ")
            ));
        }
        let stamp = event
            .request_received_timestamp
            .as_deref()
            .ok_or("requestReceivedTimestamp: missing")?;
        let millis = timestamp_millis(stamp).ok_or_else(|| {
            format!("requestReceivedTimestamp: {stamp:?} is not an RFC 3339 time")
        })?;
        if let Some(stage) = event.stage_timestamp.as_deref()
            && timestamp_millis(stage).is_none()
        {
            return Err(format!("stageTimestamp: {stage:?} is not an RFC 3339 time"));
        }
        let origin = *self.origin.get_or_insert(millis);
        // A request received before the first line's was still running
        // when that line was written: it starts the trace too.
        let at = (millis - origin).max(0);
        self.newest = self.newest.max(at);
        if event.stage != "ResponseComplete" {
            self.ignore(format!(
                "stage {} (only ResponseComplete counts)",
                event.stage
            ));
            return Ok(());
        }
        if let Some(code) = event.response_status.as_ref().and_then(|s| s.code)
            && !(200..300).contains(&code)
        {
            self.ignore("failed requests (responseStatus.code not 2xx)");
            return Ok(());
        }
        let Some(object_ref) = event.object_ref else {
            self.ignore("non-resource requests");
            return Ok(());
        };
        if matches!(event.verb.as_str(), "get" | "list" | "watch") {
            self.ignore("reads (get, list, watch)");
            return Ok(());
        }
        if self.exclude.contains(&object_ref.namespace) {
            self.ignore(format!("namespace {} (excluded)", object_ref.namespace));
            return Ok(());
        }
        let resource = object_ref.resource.as_str();
        let is_pdb = resource == "poddisruptionbudgets" && object_ref.api_group == "policy";
        let Some(kind) = resource_kind(resource, &object_ref.api_group) else {
            if !is_pdb {
                let name = match object_ref.api_group.as_str() {
                    "" => resource.to_string(),
                    group => format!("{resource}.{group}"),
                };
                self.ignore(format!("not a workload: {name}"));
                return Ok(());
            }
            return self.pdb_event(&event.verb, &object_ref, text, at);
        };
        let namespace = match object_ref.namespace.as_str() {
            "" => crate::scenario::DEFAULT_NAMESPACE.to_string(),
            ns => ns.to_string(),
        };
        let target = Target {
            kind,
            namespace: namespace.clone(),
            name: object_ref.name.clone(),
        };
        match (event.verb.as_str(), object_ref.subresource.as_str()) {
            ("delete", "") => {
                if self.tracker.deleted(&target) {
                    self.push(at, TraceAction::Delete { target });
                } else {
                    self.ignore("deletes of objects not replayed");
                }
                Ok(())
            }
            ("deletecollection", _) => {
                self.ignore("deletecollection (objects not named)");
                Ok(())
            }
            ("create" | "update" | "patch", "") => {
                let Some((node, base)) = self.object(&event.verb, text, &namespace)? else {
                    return Ok(());
                };
                if matches!(kind, TargetKind::Pod | TargetKind::ReplicaSet)
                    && objects::has_owner(&node)
                {
                    self.ignore(format!(
                        "{resource} with ownerReferences (their controller's)"
                    ));
                    return Ok(());
                }
                self.workload_event(node, base, kind, at)
            }
            ("update" | "patch", "scale")
                if matches!(
                    kind,
                    TargetKind::Deployment | TargetKind::ReplicaSet | TargetKind::StatefulSet
                ) =>
            {
                let Some((node, base)) = self.object(&event.verb, text, &namespace)? else {
                    return Ok(());
                };
                let replicas = scale_replicas(&node, base)?;
                match self.tracker.scaled(&target, replicas) {
                    None => self.ignore("scales of objects not seen created"),
                    Some(false) => self.ignore("updates that change nothing karpsim models"),
                    Some(true) => self.push(at, TraceAction::Scale { target, replicas }),
                }
                Ok(())
            }
            ("update" | "patch", "status")
                if matches!(kind, TargetKind::Pod | TargetKind::Job)
                    && self.tracker.is_live(&target) =>
            {
                let Some((node, _)) = self.object(&event.verb, text, &namespace)? else {
                    return Ok(());
                };
                if finished(&node, kind) {
                    self.tracker.deleted(&target);
                    self.push(at, TraceAction::Delete { target });
                } else {
                    self.ignore(format!("subresource {resource}/status"));
                }
                Ok(())
            }
            (_, "") => {
                self.ignore(format!("verb {} on {resource}", event.verb));
                Ok(())
            }
            (_, sub) => {
                self.ignore(format!("subresource {resource}/{sub}"));
                Ok(())
            }
        }
    }

    /// The object an event stored: its response object, else (for a create
    /// or update) its request object. `None` (counted) when the audit level
    /// recorded neither.
    fn object(
        &mut self,
        verb: &str,
        text: &str,
        namespace: &str,
    ) -> Result<Option<(Node, &'static str)>, String> {
        let objects: Objects =
            serde_json::from_str(text).map_err(|e| format!("not an audit event: {e}"))?;
        let (value, base) = match (objects.response_object, objects.request_object) {
            (Some(response), _) if is_object(&response) => (response, "responseObject"),
            (_, Some(request)) if verb != "patch" && is_object(&request) => {
                (request, "requestObject")
            }
            _ => {
                self.ignore(format!(
                    "{verb} without the stored object (audit level below RequestResponse)"
                ));
                return Ok(None);
            }
        };
        let mut node = objects::from_json(&value, self.line);
        with_namespace(&mut node, namespace);
        Ok(Some((node, base)))
    }

    fn workload_event(
        &mut self,
        node: Node,
        base: &str,
        kind: TargetKind,
        at: i64,
    ) -> Result<(), String> {
        let read = self
            .objects
            .read(&self.file, base, node)
            .map_err(|e| e.to_string())?;
        let Some(Object::Workload(workload)) = read else {
            self.ignore("objects of kinds karpsim does not model");
            return Ok(());
        };
        let target = objects::target_of(&workload);
        if target.kind != kind {
            return Err(format!(
                "{base}: a {:?} where objectRef names {}",
                target.kind,
                kind.resource()
            ));
        }
        match self.tracker.applied(&workload) {
            Change::Apply { update } => self.push(
                at,
                TraceAction::Apply {
                    workloads: vec![*workload],
                    pdbs: Vec::new(),
                    update,
                },
            ),
            Change::Scale(replicas) => self.push(at, TraceAction::Scale { target, replicas }),
            Change::Unchanged => self.ignore("updates that change nothing karpsim models"),
            Change::Immutable => self.ignore("updates of running Jobs and Pods (immutable)"),
        }
        Ok(())
    }

    fn pdb_event(
        &mut self,
        verb: &str,
        object_ref: &ObjectRef,
        text: &str,
        at: i64,
    ) -> Result<(), String> {
        match (verb, object_ref.subresource.as_str()) {
            ("create" | "update" | "patch", "") => {
                let namespace = match object_ref.namespace.as_str() {
                    "" => crate::scenario::DEFAULT_NAMESPACE,
                    ns => ns,
                };
                let Some((node, base)) = self.object(verb, text, namespace)? else {
                    return Ok(());
                };
                match self.objects.read(&self.file, base, node)? {
                    Some(Object::Pdb(pdb)) => self.push(
                        at,
                        TraceAction::Apply {
                            workloads: Vec::new(),
                            pdbs: vec![pdb],
                            update: verb != "create",
                        },
                    ),
                    _ => return Err(format!("{base}: not a PodDisruptionBudget")),
                }
            }
            ("delete", "") => self.ignore("PodDisruptionBudget deletes (not modelled)"),
            (_, "") => self.ignore(format!("verb {verb} on poddisruptionbudgets")),
            (_, sub) => self.ignore(format!("subresource poddisruptionbudgets/{sub}")),
        }
        Ok(())
    }
}

fn is_object(value: &serde_json::Value) -> bool {
    // A delete or a failed call answers with a Status, not the object.
    value.get("kind").and_then(|k| k.as_str()) != Some("Status") && value.is_object()
}

/// Puts `namespace` (the objectRef's) into an object recorded without one.
fn with_namespace(node: &mut Node, namespace: &str) {
    let position = node.position;
    let text = |text: &str| Node {
        value: Value::Str(text.to_string()),
        position,
        bytes: None,
    };
    let Value::Map(entries) = &mut node.value else {
        return;
    };
    let is = |k: &Node, name: &str| matches!(&k.value, Value::Str(s) if s == name);
    if !entries.iter().any(|(k, _)| is(k, "metadata")) {
        let empty = Node {
            value: Value::Map(Vec::new()),
            position,
            bytes: None,
        };
        entries.push((text("metadata"), empty));
    }
    let Some((_, metadata)) = entries.iter_mut().find(|(k, _)| is(k, "metadata")) else {
        return;
    };
    if let Value::Map(meta) = &mut metadata.value
        && !meta.iter().any(|(k, _)| is(k, "namespace"))
    {
        meta.push((text("namespace"), text(namespace)));
    }
}

/// `spec.replicas` of an `autoscaling/v1` Scale.
fn scale_replicas(node: &Node, base: &str) -> Result<u32, String> {
    let scale: k8s_openapi::api::autoscaling::v1::Scale =
        crate::manifest::tree::deserialize_strict(node, "", base, || "Scale".to_string()).map_err(
            |e| {
                let text = e.to_string();
                let prefix = format!("{}: ", e.position());
                text.strip_prefix(&prefix).unwrap_or(&text).to_string()
            },
        )?;
    let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
    u32::try_from(replicas)
        .ok()
        .filter(|r| u64::from(*r) <= MAX_REPLICAS)
        .ok_or_else(|| {
            format!(
                "{base}.spec.replicas: expected 0 to {MAX_REPLICAS} (the most replicas per workload, see Limits in scenarios/README.md), found {replicas}"
            )
        })
}

/// Whether a pod's or Job's recorded status says it has finished.
fn finished(node: &Node, kind: TargetKind) -> bool {
    match kind {
        TargetKind::Pod => matches!(
            node.at_path("status.phase").map(|n| &n.value),
            Some(Value::Str(phase)) if phase == "Succeeded" || phase == "Failed"
        ),
        _ => match node.at_path("status.conditions").map(|n| &n.value) {
            Some(Value::Seq(conditions)) => conditions.iter().any(|c| {
                matches!(c.get_str("type"), Some("Complete" | "Failed"))
                    && c.get_str("status") == Some("True")
            }),
            _ => false,
        },
    }
}

/// An RFC 3339 time (`metav1.MicroTime`: microseconds) as Unix
/// milliseconds; digits below the millisecond are dropped (the run's clock
/// counts milliseconds).
pub fn timestamp_millis(text: &str) -> Option<i64> {
    let trimmed = match text.find('.') {
        Some(dot) => {
            let digits = text[dot + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let keep = digits.min(3);
            format!("{}{}", &text[..dot + 1 + keep], &text[dot + 1 + digits..])
        }
        None => text.to_string(),
    };
    let trimmed = trimmed.replace(".Z", "Z");
    crate::sim::spot::timestamp::Timestamp::parse(&trimmed)
        .ok()
        .map(|t| t.unix_millis())
}

impl<R: BufRead> EventReader for AuditReader<R> {
    fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        loop {
            let ready = self.pending.first_key_value().is_some_and(|(&(at, _), _)| {
                self.at_end || self.newest.saturating_sub(at) >= REORDER_WINDOW_MS
            });
            if ready || (self.at_end && !self.pending.is_empty()) {
                let ((at, _), action) = self.pending.pop_first().expect("not empty");
                let at = if at < self.released {
                    self.ignore(format!(
                        "events more than {} s out of order (replayed at the time of the event before)",
                        REORDER_WINDOW_MS / 1000
                    ));
                    self.released
                } else {
                    at
                };
                self.released = at;
                return Ok(Some(TraceEvent {
                    time: at as f64 / 1000.0,
                    action,
                }));
            }
            if self.at_end {
                return Ok(None);
            }
            if !self.read_line()? {
                self.at_end = true;
            }
        }
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn ignored(&self) -> BTreeMap<String, u64> {
        self.ignored.clone()
    }

    fn warnings(&self) -> Vec<String> {
        self.objects.warnings()
    }
}
