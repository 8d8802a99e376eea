//! SimKube trace files (acrlabs/simkube, `docs/ref/trace-files.md`), format
//! version 2: a msgpack map `{version, config, events, index,
//! pod_lifecycles}`. Each event is `{ts, applied_objs, deleted_objs}` with
//! `ts` in Unix seconds and full Kubernetes objects as the tracer saw them
//! (server fields included). `pod_lifecycles` maps `(owner GVK, owner
//! namespace/name)` to the recorded lifecycles of the owner's pods
//! (`{"Finished": [start, end]}` or `{"Running": start}`).
//!
//! The file is small and read whole; its events become steps one at a time
//! as the run reaches them. Replay:
//!
//! - an applied object seen for the first time is created; applied again,
//!   it is a scale when only `spec.replicas` changed, a spec change
//!   otherwise ([`super::objects::Tracker`]); a deleted object is deleted;
//! - a Job or bare pod with a finished lifecycle runs from its start to
//!   its end (the first lifecycle recorded for it); other pods run until
//!   their owner changes;
//! - a CronJob is replayed as the Jobs its lifecycles record: one Job per
//!   finished lifecycle, named as the CronJob controller names them
//!   (`<cronjob>-<scheduled minute since the epoch>`), made from the
//!   CronJob's `jobTemplate` at the recorded start, running until the
//!   recorded end;
//! - owned pods (with `ownerReferences`) and objects in excluded
//!   namespaces are passed over and counted.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use super::objects::{self, Change, Object, ObjectReader, Tracker};
use super::{EventReader, TraceAction, TraceError, TraceEvent};
use crate::kube::workload::{Workload, WorkloadKind};
use crate::yaml::{Node, Position, Value};

/// The one trace format version read.
pub const VERSION: i128 = 2;

const TOP_KEYS: [&str; 5] = ["version", "config", "events", "index", "pod_lifecycles"];
const EVENT_KEYS: [&str; 3] = ["ts", "applied_objs", "deleted_objs"];

/// A recorded pod lifecycle: start and (when finished) end, Unix seconds.
type Lifecycle = (i64, Option<i64>);

/// Reads a SimKube trace.
pub struct SimKubeReader {
    file: String,
    events: std::vec::IntoIter<Node>,
    /// Index of the next event, for messages.
    index: usize,
    /// The current event's objects still to read: (place, applied, node).
    objects: std::collections::VecDeque<(String, bool, Node)>,
    /// The current event's time, Unix seconds.
    ts: i64,
    origin: Option<i64>,
    lifecycles: BTreeMap<(String, String), Vec<Lifecycle>>,
    /// Jobs made from CronJob lifecycles, by (start, sequence).
    cron_jobs: BTreeMap<(i64, u64), (String, Node, Duration)>,
    cron_sequence: u64,
    skip_bad_rows: bool,
    skipped: u64,
    exclude: Vec<String>,
    ignored: BTreeMap<String, u64>,
    reader: ObjectReader,
    tracker: Tracker,
}

impl SimKubeReader {
    /// Reads `input` (named `file` in messages): the version, the events and
    /// the lifecycles are checked now, the objects as the run reaches them.
    pub fn new(
        file: &str,
        mut input: impl Read,
        skip_bad_rows: bool,
        exclude: &[String],
    ) -> Result<SimKubeReader, TraceError> {
        let format = |message: String| TraceError::Format {
            file: file.to_string(),
            message,
        };
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes).map_err(|e| TraceError::Io {
            file: file.to_string(),
            reason: e.to_string(),
        })?;
        let root = super::msgpack::decode(&bytes)
            .map_err(|e| format(format!("not a SimKube trace: {e}")))?;
        let Value::Map(entries) = root.value else {
            return Err(format(format!(
                "not a SimKube trace: the file holds {}, not a map",
                root.type_name()
            )));
        };
        let mut version = None;
        let mut events = None;
        let mut lifecycles = BTreeMap::new();
        for (key, value) in entries {
            let name = key.key_text().unwrap_or_default().to_string();
            match name.as_str() {
                "version" => version = Some(value),
                "events" => events = Some(value),
                "pod_lifecycles" => lifecycles = read_lifecycles(&value).map_err(format)?,
                "config" | "index" => {}
                other => {
                    return Err(format(format!(
                        "unknown key {other:?} (keys: {})",
                        TOP_KEYS.join(", ")
                    )));
                }
            }
        }
        match version.as_ref().map(|v| &v.value) {
            Some(Value::Int(VERSION)) => {}
            Some(other) => {
                let shown = Node {
                    value: other.clone(),
                    position: Position::START,
                    bytes: None,
                };
                return Err(format(format!(
                    "SimKube trace version {}: karpsim reads version {VERSION}",
                    shown
                        .scalar_text()
                        .unwrap_or_else(|| shown.type_name().to_string())
                )));
            }
            None => {
                return Err(format(format!(
                    "no version: a SimKube trace from before version {VERSION} (karpsim reads version {VERSION})"
                )));
            }
        }
        let events = match events.map(|e| e.value) {
            Some(Value::Seq(events)) => events,
            Some(_) => return Err(format("events: expected a sequence".to_string())),
            None => return Err(format("no events".to_string())),
        };
        Ok(SimKubeReader {
            file: file.to_string(),
            events: events.into_iter(),
            index: 0,
            objects: std::collections::VecDeque::new(),
            ts: i64::MIN,
            origin: None,
            lifecycles,
            cron_jobs: BTreeMap::new(),
            cron_sequence: 0,
            skip_bad_rows,
            skipped: 0,
            exclude: exclude.to_vec(),
            ignored: BTreeMap::new(),
            reader: ObjectReader::default(),
            tracker: Tracker::default(),
        })
    }

    fn ignore(&mut self, reason: impl Into<String>) {
        *self.ignored.entry(reason.into()).or_default() += 1;
    }

    fn problem(&mut self, place: String, message: String) -> Result<(), TraceError> {
        if self.skip_bad_rows {
            self.skipped += 1;
            return Ok(());
        }
        Err(TraceError::Event {
            file: self.file.clone(),
            place,
            message,
        })
    }

    /// Moves to the next event; false at the end.
    fn next_record(&mut self) -> Result<bool, TraceError> {
        loop {
            let Some(event) = self.events.next() else {
                return Ok(false);
            };
            let place = format!("events[{}]", self.index);
            self.index += 1;
            match self.read_event(event, &place) {
                Ok(()) => return Ok(true),
                Err(message) => self.problem(place, message)?,
            }
        }
    }

    fn read_event(&mut self, event: Node, place: &str) -> Result<(), String> {
        let Value::Map(entries) = event.value else {
            return Err(format!("expected a map, found {}", event.type_name()));
        };
        let mut ts = None;
        let mut lists = Vec::new();
        for (key, value) in entries {
            let name = key.key_text().unwrap_or_default().to_string();
            match name.as_str() {
                "ts" => match value.value {
                    Value::Int(t) => ts = i64::try_from(t).ok(),
                    _ => {
                        return Err(format!(
                            "ts: expected Unix seconds, found {}",
                            value.type_name()
                        ));
                    }
                },
                "applied_objs" | "deleted_objs" => match value.value {
                    Value::Seq(items) => {
                        lists.push((name.clone(), items));
                    }
                    _ => return Err(format!("{name}: expected a sequence")),
                },
                other => {
                    return Err(format!(
                        "unknown key {other:?} (keys: {})",
                        EVENT_KEYS.join(", ")
                    ));
                }
            }
        }
        let ts = ts.ok_or("missing ts")?;
        if ts < self.ts {
            return Err(format!(
                "ts {ts} is earlier than the event before ({}); events must be in time order",
                self.ts
            ));
        }
        self.ts = ts;
        self.origin.get_or_insert(ts);
        // Deletions first within an event: an object deleted and applied
        // at one instant is replaced.
        lists.sort_by_key(|(name, _)| name != "deleted_objs");
        for (name, items) in lists {
            let applied = name == "applied_objs";
            for (i, node) in items.into_iter().enumerate() {
                self.objects
                    .push_back((format!("{place}.{name}[{i}]"), applied, node));
            }
        }
        Ok(())
    }

    fn time(&self, ts: i64) -> f64 {
        (ts - self.origin.unwrap_or(ts)) as f64
    }

    /// What one recorded object does, if anything.
    fn object(&mut self, applied: bool, node: Node) -> Result<Option<TraceAction>, String> {
        let (namespace, name) = objects::key_of(&node);
        if self.exclude.contains(&namespace) {
            self.ignore(format!("namespace {namespace} (excluded)"));
            return Ok(None);
        }
        let api_version = node.get_str("apiVersion").unwrap_or_default().to_string();
        let kind = node.get_str("kind").unwrap_or_default().to_string();
        if kind == "Pod" && objects::has_owner(&node) {
            self.ignore("pods with ownerReferences (their controller's)");
            return Ok(None);
        }
        if (api_version.as_str(), kind.as_str()) == ("batch/v1", "CronJob") {
            self.cron_job(applied, &namespace, &name, &node);
            return Ok(None);
        }
        let Some(read) = self.reader.read(&self.file, "", node)? else {
            self.ignore(format!("{api_version} {kind} (not modelled)"));
            return Ok(None);
        };
        let mut workload = match read {
            Object::Workload(workload) => workload,
            Object::Pdb(pdb) => {
                return Ok(applied.then(|| TraceAction::Apply {
                    workloads: Vec::new(),
                    pdbs: vec![pdb],
                    update: false,
                }));
            }
        };
        let target = objects::target_of(&workload);
        if !applied {
            if self.tracker.deleted(&target) {
                return Ok(Some(TraceAction::Delete { target }));
            }
            self.ignore("deletes of objects not replayed");
            return Ok(None);
        }
        let gvk = format!("{api_version}.{kind}");
        self.lifetime(&gvk, &mut workload);
        Ok(match self.tracker.applied(&workload) {
            Change::Apply { update } => Some(TraceAction::Apply {
                workloads: vec![*workload],
                pdbs: Vec::new(),
                update,
            }),
            Change::Scale(replicas) => Some(TraceAction::Scale { target, replicas }),
            Change::Unchanged => {
                self.ignore("applies that change nothing karpsim models");
                None
            }
            Change::Immutable => {
                self.ignore("updates of running Jobs and Pods (immutable)");
                None
            }
        })
    }

    /// A Job's or bare pod's run time from its first finished lifecycle.
    fn lifetime(&self, gvk: &str, workload: &mut Workload) {
        let key = (
            gvk.to_string(),
            format!("{}/{}", workload.namespace, workload.name),
        );
        let Some(&(start, Some(end))) = self.lifecycles.get(&key).and_then(|l| l.first()) else {
            return;
        };
        let run = Duration::from_secs(end.saturating_sub(start).max(0) as u64);
        match &mut workload.kind {
            WorkloadKind::Job(job) if job.duration.is_none() => job.duration = Some(run),
            WorkloadKind::Pod if workload.template.run_duration.is_none() => {
                std::sync::Arc::make_mut(&mut workload.template).run_duration = Some(run);
            }
            _ => {}
        }
    }

    /// Schedules the Jobs a CronJob's lifecycles record (from now on), or
    /// drops those still to come when it is deleted.
    fn cron_job(&mut self, applied: bool, namespace: &str, name: &str, node: &Node) {
        let owner = format!("{namespace}/{name}");
        self.cron_jobs.retain(|_, (o, _, _)| *o != owner);
        if !applied {
            return;
        }
        let Some(template) = node.at_path("spec.jobTemplate") else {
            self.ignore("CronJobs without a jobTemplate");
            return;
        };
        let key = ("batch/v1.CronJob".to_string(), owner.clone());
        let runs: Vec<Lifecycle> = self.lifecycles.get(&key).cloned().unwrap_or_default();
        if runs.is_empty() {
            self.ignore("CronJobs without recorded lifecycles (no Jobs to replay)");
        }
        for (start, end) in runs {
            let Some(end) = end else { continue };
            if start < self.ts {
                continue;
            }
            let job = job_from_template(template, namespace, &format!("{name}-{}", start / 60));
            let run = Duration::from_secs(end.saturating_sub(start).max(0) as u64);
            self.cron_jobs
                .insert((start, self.cron_sequence), (owner.clone(), job, run));
            self.cron_sequence += 1;
        }
    }

    /// The next Job made from a CronJob's lifecycle, if it starts before the
    /// next recorded event (or no event is left).
    fn next_cron_job(&mut self, before: Option<i64>) -> Result<Option<TraceEvent>, TraceError> {
        while let Some((&(start, _), _)) = self.cron_jobs.first_key_value() {
            if before.is_some_and(|ts| ts < start) {
                return Ok(None);
            }
            let ((start, _), (owner, node, run)) = self.cron_jobs.pop_first().expect("not empty");
            match self.reader.read(&self.file, "", node) {
                Ok(Some(Object::Workload(mut workload))) => {
                    if let WorkloadKind::Job(job) = &mut workload.kind {
                        job.duration = Some(run);
                    }
                    self.tracker.applied(&workload);
                    return Ok(Some(TraceEvent {
                        time: self.time(start),
                        action: TraceAction::Apply {
                            workloads: vec![*workload],
                            pdbs: Vec::new(),
                            update: false,
                        },
                    }));
                }
                Ok(_) => self.ignore("CronJob templates karpsim cannot read"),
                Err(message) => self.problem(format!("CronJob {owner} jobTemplate"), message)?,
            }
        }
        Ok(None)
    }
}

/// A Job object from a CronJob's `jobTemplate`.
fn job_from_template(template: &Node, namespace: &str, name: &str) -> Node {
    let text = |s: &str| Node {
        value: Value::Str(s.to_string()),
        position: Position::START,
        bytes: None,
    };
    let map = |entries: Vec<(Node, Node)>| Node {
        value: Value::Map(entries),
        position: Position::START,
        bytes: None,
    };
    let mut metadata = vec![
        (text("name"), text(name)),
        (text("namespace"), text(namespace)),
    ];
    if let Some(Value::Map(labels)) = template.at_path("metadata.labels").map(|n| &n.value) {
        metadata.push((text("labels"), map(labels.clone())));
    }
    let spec = template
        .get("spec")
        .cloned()
        .unwrap_or_else(|| map(Vec::new()));
    map(vec![
        (text("apiVersion"), text("batch/v1")),
        (text("kind"), text("Job")),
        (text("metadata"), map(metadata)),
        (text("spec"), spec),
    ])
}

/// `pod_lifecycles`: `{[gvk, ns/name]: {pod hash: [lifecycle, ...]}}`.
fn read_lifecycles(node: &Node) -> Result<BTreeMap<(String, String), Vec<Lifecycle>>, String> {
    let bad = |what: &str| format!("pod_lifecycles: {what}");
    let Value::Map(owners) = &node.value else {
        return Err(bad("expected a map"));
    };
    let mut out = BTreeMap::new();
    for (key, pods) in owners {
        let owner = match &key.value {
            Value::Seq(parts) => match parts.as_slice() {
                [gvk, name] => match (&gvk.value, &name.value) {
                    (Value::Str(g), Value::Str(n)) => (g.clone(), n.clone()),
                    _ => return Err(bad("keys must be [GVK, namespace/name] strings")),
                },
                _ => return Err(bad("keys must be two-element arrays [GVK, namespace/name]")),
            },
            _ => return Err(bad("keys must be two-element arrays [GVK, namespace/name]")),
        };
        let Value::Map(by_hash) = &pods.value else {
            return Err(bad("expected a map of pod hashes to lifecycles"));
        };
        let mut runs = Vec::new();
        for (_, list) in by_hash {
            let Value::Seq(items) = &list.value else {
                return Err(bad("expected a list of lifecycles"));
            };
            for item in items {
                runs.push(lifecycle(item).ok_or_else(|| {
                    bad("a lifecycle is {\"Finished\": [start, end]}, {\"Running\": start} or \"Empty\"")
                })?);
            }
        }
        runs.retain(|r: &Option<Lifecycle>| r.is_some());
        let mut runs: Vec<Lifecycle> = runs.into_iter().flatten().collect();
        runs.sort();
        out.insert(owner, runs);
    }
    Ok(out)
}

fn lifecycle(node: &Node) -> Option<Option<Lifecycle>> {
    let int = |n: &Node| match n.value {
        Value::Int(v) => i64::try_from(v).ok(),
        _ => None,
    };
    match &node.value {
        Value::Str(s) if s == "Empty" => Some(None),
        Value::Map(entries) if entries.len() == 1 => {
            let (variant, value) = &entries[0];
            match (variant.key_text()?.as_ref(), &value.value) {
                ("Finished", Value::Seq(pair)) if pair.len() == 2 => {
                    Some(Some((int(&pair[0])?, Some(int(&pair[1])?))))
                }
                ("Running", _) => Some(Some((int(value)?, None))),
                _ => None,
            }
        }
        _ => None,
    }
}

impl EventReader for SimKubeReader {
    fn next_event(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        loop {
            if let Some((place, applied, node)) = self.objects.pop_front() {
                let time = self.time(self.ts);
                match self.object(applied, node) {
                    Ok(Some(action)) => return Ok(Some(TraceEvent { time, action })),
                    Ok(None) => {}
                    Err(message) => self.problem(place, message)?,
                }
                continue;
            }
            // The current event is done: a CronJob's Job that starts no later
            // than the next event comes first.
            let next_ts =
                self.events
                    .as_slice()
                    .first()
                    .and_then(|e| match e.get("ts").map(|t| &t.value) {
                        Some(Value::Int(t)) => i64::try_from(*t).ok(),
                        _ => None,
                    });
            if let Some(job) = self.next_cron_job(next_ts)? {
                return Ok(Some(job));
            }
            if !self.next_record()? {
                return self.next_cron_job(None);
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
        self.reader.warnings()
    }
}
