//! Karpenter's kubereplay captures (`replay.json`, written by `kubereplay
//! capture` from an EKS audit log; tools/kubereplay/pkg/format/log.go in
//! aws/karpenter-provider-aws): `{cluster, captured, events: [{type, kind,
//! key, deployment | job, replicas, duration, timestamp}]}` with `type`
//! `create`, `scale` or `delete`, `kind` `Deployment` or `Job`, `key` the
//! object's `namespace/name` and `timestamp` RFC 3339.
//!
//! Replayed as `kubereplay replay` does (pkg/replay/engine.go): events in
//! timestamp order (the capture appends scales and deletes after every
//! create, so file order is not time order), the first event at trace time
//! 0; a created Deployment gets the PodDisruptionBudget `pdb-<name>` with
//! `maxUnavailable: 50%` over its selector; a scale or delete names the
//! Deployment by `key`. A Job's pods run for `duration` when the event has
//! one (Go's `time.Duration`: integer nanoseconds); kubereplay's Jobs run
//! pause containers, so without it they run until the end of the run.
//!
//! The file is one JSON document, read whole (captures are small); its
//! objects are read, through the manifest reader, as the run reaches them.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use serde::Deserialize;

use super::objects::{self, Change, Object, ObjectReader, Tracker};
use super::{EventReader, TraceAction, TraceError, TraceEvent};
use crate::scenario::limits::MAX_REPLICAS;
use crate::sim::engine::{Target, TargetKind};
use crate::yaml::{Node, Position, Value};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Capture {
    #[allow(dead_code)]
    cluster: Option<String>,
    #[allow(dead_code)]
    captured: Option<String>,
    events: Vec<RawEvent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    #[serde(rename = "type")]
    verb: String,
    kind: String,
    key: String,
    deployment: Option<serde_json::Value>,
    job: Option<serde_json::Value>,
    replicas: Option<i64>,
    duration: Option<i64>,
    timestamp: String,
}

/// Reads a kubereplay capture.
pub struct KubeReplayReader {
    file: String,
    /// Events by (time ms, file index), taken in order.
    events: std::collections::btree_map::IntoIter<(i64, usize), RawEvent>,
    origin: i64,
    skip_bad_rows: bool,
    skipped: u64,
    exclude: Vec<String>,
    ignored: BTreeMap<String, u64>,
    reader: ObjectReader,
    tracker: Tracker,
}

impl KubeReplayReader {
    /// Reads `input` (named `file` in messages) and orders its events.
    pub fn new(
        file: &str,
        mut input: impl Read,
        skip_bad_rows: bool,
        exclude: &[String],
    ) -> Result<KubeReplayReader, TraceError> {
        let mut text = String::new();
        input
            .read_to_string(&mut text)
            .map_err(|e| TraceError::Io {
                file: file.to_string(),
                reason: e.to_string(),
            })?;
        let capture: Capture = serde_json::from_str(&text).map_err(|e| TraceError::Format {
            file: file.to_string(),
            message: format!("not a kubereplay capture: {e}"),
        })?;
        let mut events = BTreeMap::new();
        let mut skipped = 0;
        for (index, event) in capture.events.into_iter().enumerate() {
            match super::audit::timestamp_millis(&event.timestamp) {
                Some(at) => {
                    events.insert((at, index), event);
                }
                None if skip_bad_rows => skipped += 1,
                None => {
                    return Err(TraceError::Event {
                        file: file.to_string(),
                        place: format!("events[{index}]"),
                        message: format!(
                            "timestamp: {:?} is not an RFC 3339 time",
                            event.timestamp
                        ),
                    });
                }
            }
        }
        let origin = events.keys().next().map_or(0, |&(at, _)| at);
        Ok(KubeReplayReader {
            file: file.to_string(),
            events: events.into_iter(),
            origin,
            skip_bad_rows,
            skipped,
            exclude: exclude.to_vec(),
            ignored: BTreeMap::new(),
            reader: ObjectReader::default(),
            tracker: Tracker::default(),
        })
    }

    fn ignore(&mut self, reason: impl Into<String>) {
        *self.ignored.entry(reason.into()).or_default() += 1;
    }

    fn action(&mut self, event: RawEvent) -> Result<Option<TraceAction>, String> {
        let (namespace, name) = match event.key.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() => (ns, name),
            _ => {
                return Err(format!(
                    "key: expected namespace/name, found {:?}",
                    event.key
                ));
            }
        };
        if self.exclude.iter().any(|e| e == namespace) {
            self.ignore(format!("namespace {namespace} (excluded)"));
            return Ok(None);
        }
        let kind = match event.kind.as_str() {
            "Deployment" => TargetKind::Deployment,
            "Job" => TargetKind::Job,
            other => {
                return Err(format!(
                    "kind: unknown kind {other:?} (kinds: Deployment, Job)"
                ));
            }
        };
        let target = Target {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        match event.verb.as_str() {
            "create" => {
                let (field, object) = match kind {
                    TargetKind::Deployment => ("deployment", event.deployment),
                    _ => ("job", event.job),
                };
                let mut object = object.ok_or_else(|| format!("{field}: missing for a create"))?;
                // Go leaves out an empty TypeMeta: the event's kind says it.
                if let Some(map) = object.as_object_mut() {
                    let api = if kind == TargetKind::Job {
                        "batch/v1"
                    } else {
                        "apps/v1"
                    };
                    map.entry("apiVersion").or_insert_with(|| api.into());
                    map.entry("kind")
                        .or_insert_with(|| event.kind.clone().into());
                }
                let node = objects::from_json(&object, 1);
                let selector = node.at_path("spec.selector").cloned();
                let read = self
                    .reader
                    .read(&self.file, field, node)
                    .map_err(|e| e.to_string())?;
                let Some(Object::Workload(mut workload)) = read else {
                    return Err(format!("{field}: not a {}", event.kind));
                };
                if objects::target_of(&workload).kind != kind {
                    return Err(format!("{field}: not a {}", event.kind));
                }
                if let Some(ns) = event.duration {
                    let ns = u64::try_from(ns)
                        .map_err(|_| format!("duration: must not be negative, found {ns}"))?;
                    if let crate::kube::workload::WorkloadKind::Job(job) = &mut workload.kind {
                        job.duration = Some(Duration::from_nanos(ns));
                    }
                }
                let mut pdbs = Vec::new();
                if kind == TargetKind::Deployment {
                    let pdb = pdb_for(&workload.namespace, &workload.name, selector);
                    match self.reader.read(&self.file, field, pdb) {
                        Ok(Some(Object::Pdb(pdb))) => pdbs.push(pdb),
                        Ok(_) => {}
                        Err(e) => {
                            return Err(format!("the PodDisruptionBudget kubereplay adds: {e}"));
                        }
                    }
                }
                Ok(match self.tracker.applied(&workload) {
                    Change::Apply { update } => Some(TraceAction::Apply {
                        workloads: vec![*workload],
                        pdbs,
                        update,
                    }),
                    // kubereplay's create of an existing object is a no-op
                    // (AlreadyExists is ignored).
                    _ => {
                        self.ignore("creates of objects that exist (AlreadyExists)");
                        None
                    }
                })
            }
            "scale" => {
                let replicas = event
                    .replicas
                    .ok_or_else(|| format!("replicas: missing for a scale of {}", event.key))?;
                let replicas = u32::try_from(replicas)
                    .ok()
                    .filter(|r| u64::from(*r) <= MAX_REPLICAS)
                    .ok_or_else(|| {
                        format!("replicas: expected 0 to {MAX_REPLICAS}, found {replicas}")
                    })?;
                if kind != TargetKind::Deployment {
                    return Err(format!("kind: cannot scale a {}", event.kind));
                }
                match self.tracker.scaled(&target, replicas) {
                    // kubereplay fails a scale "without prior create".
                    None => {
                        self.ignore("scales of objects not created");
                        Ok(None)
                    }
                    Some(_) => Ok(Some(TraceAction::Scale { target, replicas })),
                }
            }
            "delete" => {
                if self.tracker.deleted(&target) {
                    Ok(Some(TraceAction::Delete { target }))
                } else {
                    self.ignore("deletes of objects not created");
                    Ok(None)
                }
            }
            other => Err(format!(
                "type: unknown event type {other:?} (types: create, scale, delete)"
            )),
        }
    }
}

/// The PodDisruptionBudget kubereplay creates beside each Deployment
/// (`createPDBForDeployment`).
fn pdb_for(namespace: &str, name: &str, selector: Option<Node>) -> Node {
    let node = |value: Value| Node {
        value,
        position: Position::START,
        bytes: None,
    };
    let text = |s: &str| node(Value::Str(s.to_string()));
    let mut spec = vec![(text("maxUnavailable"), text("50%"))];
    if let Some(selector) = selector {
        spec.push((text("selector"), selector));
    }
    node(Value::Map(vec![
        (text("apiVersion"), text("policy/v1")),
        (text("kind"), text("PodDisruptionBudget")),
        (
            text("metadata"),
            node(Value::Map(vec![
                (text("name"), text(&format!("pdb-{name}"))),
                (text("namespace"), text(namespace)),
            ])),
        ),
        (text("spec"), node(Value::Map(spec))),
    ]))
}

impl EventReader for KubeReplayReader {
    fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        while let Some(((at, index), event)) = self.events.next() {
            match self.action(event) {
                Ok(Some(action)) => {
                    return Ok(Some(TraceEvent {
                        time: (at - self.origin) as f64 / 1000.0,
                        action,
                    }));
                }
                Ok(None) => {}
                Err(_) if self.skip_bad_rows => self.skipped += 1,
                Err(message) => {
                    return Err(TraceError::Event {
                        file: self.file.clone(),
                        place: format!("events[{index}]"),
                        message,
                    });
                }
            }
        }
        Ok(None)
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn ignored(&self) -> BTreeMap<String, u64> {
        self.ignored.clone()
    }

    fn warnings(&self) -> Vec<String> {
        self.reader.warnings()
    }
}
