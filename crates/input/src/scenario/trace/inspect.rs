//! What a recording holds, read before replaying it (`karpsim trace
//! inspect`): its time span, the objects by kind, the events by verb, the
//! peak of desired pods and the records passed over, with why. The file is
//! read by the same reader a run uses, so what inspect accepts a run
//! accepts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{TraceAction, TraceError, TraceFormat, open_reader, shown};
use crate::kube::workload::WorkloadKind;
use crate::sim::engine::{Target, TargetKind};

/// The summary of one recording. Times are trace seconds (since the
/// recording's first record).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// The file as given.
    pub file: String,
    /// Its format (`audit-log`, `simkube`, …).
    pub format: &'static str,
    /// Events that would be replayed.
    pub events: u64,
    /// Time of the first and the last of them.
    pub first_event_s: Option<f64>,
    /// See `first_event_s`.
    pub last_event_s: Option<f64>,
    /// Distinct objects created, by kind.
    pub objects_by_kind: BTreeMap<String, u64>,
    /// Replayed events by verb (`create`, `update`, `scale`, `delete`).
    pub events_by_verb: BTreeMap<String, u64>,
    /// The most pods the recorded objects wanted at once (DaemonSets, whose
    /// count depends on the nodes, left out), and when.
    pub peak_desired_pods: u64,
    /// See `peak_desired_pods`.
    pub peak_at_s: Option<f64>,
    /// Records passed over, by reason.
    pub ignored: BTreeMap<String, u64>,
    /// Unusable records skipped (with `--skip-bad-rows`).
    pub rows_skipped: u64,
    /// What karpsim does not model in the recording's objects.
    pub warnings: Vec<String>,
}

/// Reads `path` as `format` from start to end.
pub fn inspect(
    path: &Path,
    format: TraceFormat,
    skip_bad_rows: bool,
    exclude: &[String],
) -> Result<Inspection, TraceError> {
    let mut reader = open_reader(path, format, skip_bad_rows, exclude)?;
    let mut out = Inspection {
        file: shown(path),
        format: format.as_str(),
        events: 0,
        first_event_s: None,
        last_event_s: None,
        objects_by_kind: BTreeMap::new(),
        events_by_verb: BTreeMap::new(),
        peak_desired_pods: 0,
        peak_at_s: None,
        ignored: BTreeMap::new(),
        rows_skipped: 0,
        warnings: Vec::new(),
    };
    let mut desired = Desired::default();
    let mut seen = BTreeSet::new();
    while let Some(event) = reader.next_event()? {
        let time = event.time;
        out.events += 1;
        out.first_event_s.get_or_insert(time);
        out.last_event_s = Some(time);
        desired.expire(time);
        let verb = match event.action {
            TraceAction::Create {
                target,
                replicas,
                duration,
                ..
            } => {
                let pods = match target.kind {
                    TargetKind::DaemonSet => 0,
                    TargetKind::Pod => 1,
                    _ => u64::from(replicas),
                };
                count_object(&mut out, &mut seen, &target);
                desired.set(target, pods, duration.map(|d| time + d));
                "create"
            }
            TraceAction::Apply {
                workloads, update, ..
            } => {
                for workload in &workloads {
                    let target = super::objects::target_of(workload);
                    count_object(&mut out, &mut seen, &target);
                    let run = match &workload.kind {
                        WorkloadKind::Job(job) => job.duration,
                        _ => workload.template.run_duration,
                    };
                    let pods = u64::from(workload.desired_pods().unwrap_or(0));
                    desired.set(target, pods, run.map(|d| time + d.as_secs_f64()));
                }
                if update { "update" } else { "create" }
            }
            TraceAction::Scale { target, replicas } => {
                desired.scale(&target, u64::from(replicas));
                "scale"
            }
            TraceAction::Delete { target } => {
                desired.remove(&target);
                "delete"
            }
        };
        *out.events_by_verb.entry(verb.to_string()).or_default() += 1;
        if desired.total > out.peak_desired_pods {
            out.peak_desired_pods = desired.total;
            out.peak_at_s = Some(time);
        }
    }
    out.ignored = reader.ignored();
    out.rows_skipped = reader.skipped();
    out.warnings = reader.warnings();
    Ok(out)
}

fn count_object(out: &mut Inspection, seen: &mut BTreeSet<Target>, target: &Target) {
    if seen.insert(target.clone()) {
        let kind = match target.kind {
            TargetKind::Deployment => "Deployment",
            TargetKind::ReplicaSet => "ReplicaSet",
            TargetKind::StatefulSet => "StatefulSet",
            TargetKind::DaemonSet => "DaemonSet",
            TargetKind::Job => "Job",
            TargetKind::Pod => "Pod",
            TargetKind::Node => "Node",
        };
        *out.objects_by_kind.entry(kind.to_string()).or_default() += 1;
    }
}

/// Desired pods per live object, and when objects with a run time end.
#[derive(Debug, Default)]
struct Desired {
    pods: BTreeMap<Target, u64>,
    ends: BTreeMap<(u64, Target), ()>,
    total: u64,
}

impl Desired {
    fn set(&mut self, target: Target, pods: u64, end: Option<f64>) {
        self.remove(&target);
        self.total += pods;
        if let Some(end) = end {
            self.ends
                .insert(((end * 1000.0) as u64, target.clone()), ());
        }
        self.pods.insert(target, pods);
    }

    fn scale(&mut self, target: &Target, pods: u64) {
        if let Some(count) = self.pods.get_mut(target) {
            self.total = self.total - *count + pods;
            *count = pods;
        }
    }

    fn remove(&mut self, target: &Target) {
        if let Some(count) = self.pods.remove(target) {
            self.total -= count;
        }
    }

    /// Ends the objects whose run time is over at `time`.
    fn expire(&mut self, time: f64) {
        let now = (time * 1000.0) as u64;
        while let Some((&(end, _), _)) = self.ends.first_key_value() {
            if end > now {
                break;
            }
            let ((_, target), ()) = self.ends.pop_first().expect("not empty");
            self.remove(&target);
        }
    }
}
