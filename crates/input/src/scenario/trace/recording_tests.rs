//! The recording formats (audit log, SimKube, kubereplay): the fixtures
//! and the bundled SimKube traces replayed through `TraceSource` (times
//! through `start`, `timeScale` and `at`), what is passed over and why,
//! malformed records (an error naming file and line or event, or skipped
//! and counted), and the format guess.

use std::path::PathBuf;

use super::*;
use crate::kube::workload::IntOrPercent;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(path)
}

fn spec(path: &str, format: TraceFormat) -> TraceSpec {
    TraceSpec {
        file: repo(path),
        format,
        start: 0.0,
        end: None,
        time_scale: 1.0,
        sample: 1.0,
        at: SimTime::ZERO,
        stream: "trace/0".into(),
        skip_bad_rows: false,
        exclude_namespaces: DEFAULT_EXCLUDED_NAMESPACES.map(str::to_string).to_vec(),
    }
}

fn steps(spec: &TraceSpec) -> Vec<Step> {
    let mut source = open(spec, 1).unwrap();
    let mut out = Vec::new();
    while let Some(step) = source.next_step().unwrap() {
        out.push(step);
    }
    out
}

/// One step as `(ms, what)`: `apply Deployment shop/web 2`, `scale
/// shop/web 5`, `delete pod shop/migrate`, `pdb shop/web`.
fn summary(step: &Step) -> (u64, String) {
    let what = match &step.action {
        StepAction::Apply { workloads, pdbs } => {
            let mut parts: Vec<String> = workloads
                .iter()
                .map(|w| {
                    let count = w.desired_pods().map_or("-".to_string(), |n| n.to_string());
                    let kind = objects::target_of(w).kind.resource();
                    format!("apply {kind} {}/{} {count}", w.namespace, w.name)
                })
                .collect();
            parts.extend(
                pdbs.iter()
                    .map(|p| format!("pdb {}/{}", p.namespace, p.name)),
            );
            parts.join(" + ")
        }
        StepAction::Scale { target, replicas } => {
            format!("scale {}/{} {replicas}", target.namespace, target.name)
        }
        StepAction::Delete { target } => format!(
            "delete {} {}/{}",
            target.kind.resource(),
            target.namespace,
            target.name
        ),
        StepAction::NodePools { .. } => "nodepools".to_string(),
        StepAction::ProvisioningRequests { .. } => "provisioningrequests".to_string(),
        StepAction::NodeCondition { node, .. } => format!("node condition {node}"),
    };
    ((step.at - SimTime::ZERO).as_millis(), what)
}

fn run_time(step: &Step) -> Option<std::time::Duration> {
    match &step.action {
        StepAction::Apply { workloads, .. } => workloads.first().and_then(|w| match &w.kind {
            WorkloadKind::Job(job) => job.duration,
            _ => w.template.run_duration,
        }),
        _ => None,
    }
}

/// The hand-written audit log: every workload event at its
/// `requestReceivedTimestamp` (trace time from the first line,
/// 10:00:00.000100, milliseconds kept), doubled by `timeScale: 2` and
/// shifted by `at`; the DaemonSet received before the StatefulSet line
/// above it comes first; the scale subresource, the `spec.replicas` patch,
/// the pod's `Succeeded` status and the Job's `Complete` condition become
/// scale and delete steps (kubereplay's parser, tools/kubereplay/pkg/parser/audit.go).
#[test]
fn audit_log_replays_creates_scales_and_deletes_at_their_times() {
    let mut spec = spec("tests/fixtures/traces/audit.jsonl", TraceFormat::AuditLog);
    spec.time_scale = 2.0;
    spec.at = SimTime::ZERO + SimDuration::from_secs(60);
    let got: Vec<(u64, String)> = steps(&spec).iter().map(summary).collect();
    let at = |trace_ms: u64| 60_000 + 2 * trace_ms;
    let want = [
        (at(5_123), "apply deployment shop/web 2"),
        (at(6_000), "pdb shop/web"),
        (at(58_000), "apply daemonset shop/log-agent -"),
        (at(60_000), "apply statefulset shop/db 1"),
        (at(300_000), "scale shop/web 5"),
        (at(900_000), "scale shop/web 3"),
        (at(1_200_000), "apply pod shop/migrate 1"),
        (at(1_230_500), "apply job shop/report 2"),
        (at(1_500_000), "delete pod shop/migrate"),
        (at(1_800_000), "delete job shop/report"),
        (at(2_400_000), "delete deployment shop/web"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|(t, s)| (*t, s.to_string())).collect();
    assert_eq!(got, want);
}

/// `start` passes over what comes before it and places the first event
/// after it at `at`.
#[test]
fn audit_log_window_starts_at_start() {
    let mut spec = spec("tests/fixtures/traces/audit.jsonl", TraceFormat::AuditLog);
    spec.start = 600.0;
    spec.end = Some(1_500.0);
    let got: Vec<(u64, String)> = steps(&spec).iter().map(summary).collect();
    assert_eq!(
        got,
        [
            (300_000, "scale shop/web 3".to_string()),
            (600_000, "apply pod shop/migrate 1".to_string()),
            (630_500, "apply job shop/report 2".to_string()),
        ]
    );
}

/// What the log holds besides workload events is counted by reason, as
/// kubereplay skips it (stage, failed request, namespace, owned objects,
/// other resources and subresources), never an error.
#[test]
fn audit_log_inspection_counts_what_is_passed_over() {
    let path = repo("tests/fixtures/traces/audit.jsonl");
    let exclude = DEFAULT_EXCLUDED_NAMESPACES.map(str::to_string);
    let report = inspect::inspect(&path, TraceFormat::AuditLog, false, &exclude).unwrap();
    let ignored: Vec<(&str, u64)> = report
        .ignored
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        ignored,
        [
            ("deletes of objects not replayed", 1),
            ("failed requests (responseStatus.code not 2xx)", 1),
            ("namespace kube-node-lease (excluded)", 1),
            ("non-resource requests", 1),
            ("not a workload: configmaps", 1),
            ("pods with ownerReferences (their controller's)", 1),
            ("reads (get, list, watch)", 1),
            ("replicasets with ownerReferences (their controller's)", 1),
            ("stage RequestReceived (only ResponseComplete counts)", 1),
            ("subresource deployments/status", 1),
            ("subresource pods/binding", 1),
            ("updates that change nothing karpsim models", 1),
        ]
    );
    assert_eq!(report.events, 11);
    let verbs: Vec<(&str, u64)> = report
        .events_by_verb
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(verbs, [("create", 6), ("delete", 3), ("scale", 2)]);
    let kinds: Vec<(&str, u64)> = report
        .objects_by_kind
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        kinds,
        [
            ("DaemonSet", 1),
            ("Deployment", 1),
            ("Job", 1),
            ("Pod", 1),
            ("StatefulSet", 1)
        ]
    );
    // web 3 + db 1 + the bare pod + the Job's 2 pods, when the Job starts.
    assert_eq!(
        (report.peak_desired_pods, report.peak_at_s),
        (7, Some(1_230.5))
    );
    assert_eq!(
        (report.first_event_s, report.last_event_s),
        (Some(5.123), Some(2_400.0))
    );
}

/// kube-system and the other default namespaces are excluded; a list
/// replaces the default.
#[test]
fn exclude_namespaces_replaces_the_default() {
    let mut spec = spec("tests/fixtures/traces/audit.jsonl", TraceFormat::AuditLog);
    spec.exclude_namespaces = vec!["shop".to_string()];
    assert!(steps(&spec).is_empty());
    let path = repo("tests/fixtures/traces/audit.jsonl");
    let report =
        inspect::inspect(&path, TraceFormat::AuditLog, false, &["shop".to_string()]).unwrap();
    assert_eq!(report.ignored.get("namespace shop (excluded)"), Some(&18));
    assert_eq!(
        report.ignored.get("namespace kube-node-lease (excluded)"),
        None
    );
}

fn audit_text(lines: &[&str], skip: bool) -> Result<(Vec<TraceEvent>, u64), TraceError> {
    let text = lines.join("\n");
    let mut reader = audit::AuditReader::new("audit.jsonl", text.as_bytes(), skip, &[]);
    let mut events = Vec::new();
    while let Some(event) = reader.next_event()? {
        events.push(event);
    }
    Ok((events, reader.skipped()))
}

const GOOD: &str = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete","requestURI":"/apis/apps/v1/namespaces/shop/deployments","verb":"create","user":{"username":"u"},"objectRef":{"resource":"deployments","namespace":"shop","name":"web","apiGroup":"apps","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"responseObject":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"x"}]}}}},"requestReceivedTimestamp":"2026-03-02T10:00:00.000000Z","stageTimestamp":"2026-03-02T10:00:00.010000Z"}"#;

/// Bad JSON, an unknown field of the event, an unknown verb and an object
/// that fails the manifest reader's checks are one-line errors naming the
/// file and line (and the field); `--skip-bad-rows` skips and counts them.
#[test]
fn malformed_audit_lines_are_errors_naming_file_and_line() {
    let unknown_field = GOOD.replace("\"level\"", "\"levle\"");
    let unknown_verb = GOOD.replace("\"verb\":\"create\"", "\"verb\":\"frobnicate\"");
    let bad_object = GOOD.replace("\"replicas\":2", "\"replica\":2");
    let cases = [
        (
            "{not json",
            "audit.jsonl:2: not an audit event: key must be a string at line 1 column 2",
        ),
        (
            unknown_field.as_str(),
            "audit.jsonl:2: not an audit event: unknown field `levle`",
        ),
        (
            unknown_verb.as_str(),
            "audit.jsonl:2: verb: unknown verb \"frobnicate\"",
        ),
        (
            bad_object.as_str(),
            "audit.jsonl:2: unknown field \"replica\" in Deployment shop/web spec",
        ),
    ];
    for (line, want) in cases {
        let err = audit_text(&[GOOD, line, GOOD], false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(want), "{err}\n  wanted {want}");
        assert!(!err.contains('\n'), "{err}");
        let (events, skipped) = audit_text(&[GOOD, line, GOOD], true).unwrap();
        // The second good line repeats the first: an unchanged update.
        assert_eq!((events.len(), skipped), (1, 1), "{line}");
    }
}

/// The bundled DeathStarBench trace: the first event creates the 27
/// Deployments at trace time 0, every later apply only changes
/// `spec.replicas` and is a scale at its `ts` (SimKube's own replay applies
/// them at `ts − first ts`).
#[test]
fn simkube_dsb_trace_creates_then_scales_at_event_times() {
    let spec = spec(
        "scenarios/traces/simkube/dsb-scaling.sktrace",
        TraceFormat::SimKube,
    );
    let got: Vec<(u64, String)> = steps(&spec).iter().map(summary).collect();
    assert_eq!(got.len(), 27 + 19);
    assert!(
        got[..27]
            .iter()
            .all(|(t, s)| *t == 0 && s.starts_with("apply deployment dsb/"))
    );
    assert_eq!(
        got[27],
        (423_000, "scale dsb/social-graph-service 3".to_string())
    );
    assert_eq!(
        got[28],
        (548_000, "scale dsb/url-shorten-service 2".to_string())
    );
    assert_eq!(
        got.last().cloned(),
        Some((1_134_000, "scale dsb/compose-post-service 2".to_string()))
    );
    assert!(got[27..].iter().all(|(_, s)| s.starts_with("scale ")));
}

/// Bare pods run for their recorded lifecycle (`Finished: [start, end]`);
/// one still `Running` at the end of the trace has no end. Times shrink
/// with `timeScale`.
#[test]
fn simkube_bare_pods_run_for_their_lifecycles() {
    let mut spec = spec(
        "scenarios/traces/simkube/bare-pods.sktrace",
        TraceFormat::SimKube,
    );
    spec.time_scale = 0.5;
    let steps = steps(&spec);
    let got: Vec<(u64, String, Option<u64>)> = steps
        .iter()
        .map(|s| {
            let (t, what) = summary(s);
            (t, what, run_time(s).map(|d| d.as_millis() as u64))
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                0,
                "apply pod testing/bare-pod-1781282449 1".to_string(),
                Some(6_000)
            ),
            (
                21_000,
                "apply pod testing/bare-pod-1781282509 1".to_string(),
                Some(15_000)
            ),
            (
                51_000,
                "apply pod testing/bare-pod-1781282570 1".to_string(),
                Some(15_000)
            ),
            (
                81_000,
                "apply pod testing/bare-pod-1781282630 1".to_string(),
                None
            ),
        ]
    );
}

/// A CronJob replays as the Jobs its lifecycles record, named as the
/// CronJob controller names them (`<name>-<scheduled minute>`,
/// pkg/controller/cronjob `getJobName`), each running from start to end.
#[test]
fn simkube_cronjob_replays_its_recorded_jobs() {
    let spec = spec(
        "scenarios/traces/simkube/cronjob.sktrace",
        TraceFormat::SimKube,
    );
    let steps = steps(&spec);
    let got: Vec<(u64, String, Option<u64>)> = steps
        .iter()
        .map(|s| {
            let (t, what) = summary(s);
            (t, what, run_time(s).map(|d| d.as_secs()))
        })
        .collect();
    let origin = 1_743_286_823u64;
    let job = |start: u64| {
        (
            (start - origin) * 1000,
            format!("apply job default/hello-simkube-{} 1", start / 60),
            Some(30),
        )
    };
    assert_eq!(
        got,
        [job(1_743_286_861), job(1_743_286_921), job(1_743_286_981)]
    );
}

/// Another SimKube version is a one-line error naming the file and the
/// version; a file that is not msgpack names the byte.
#[test]
fn simkube_other_versions_are_refused() {
    // {"version": 3, "events": []}
    let mut bytes = vec![0x82, 0xa7];
    bytes.extend_from_slice(b"version");
    bytes.push(0x03);
    bytes.push(0xa6);
    bytes.extend_from_slice(b"events");
    bytes.push(0x90);
    let err = simkube::SimKubeReader::new("old.sktrace", bytes.as_slice(), false, &[])
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "old.sktrace: SimKube trace version 3: karpsim reads version 2"
    );
    let err = simkube::SimKubeReader::new("x.sktrace", &b"\xc1"[..], false, &[])
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        "x.sktrace: not a SimKube trace: msgpack: the unused type byte 0xc1 at byte 0"
    );
}

/// An object in a SimKube event that fails validation names the event and
/// object index; skipping counts it.
#[test]
fn simkube_bad_objects_name_the_event() {
    let bytes = std::fs::read(repo("scenarios/traces/simkube/bare-pods.sktrace")).unwrap();
    // The first pod's `restartPolicy` misspelt `restartPolicx`.
    let at = bytes
        .windows(13)
        .position(|w| w == b"restartPolicy")
        .expect("a restartPolicy");
    let mut bad = bytes.clone();
    bad[at + 12] = b'x';
    let mut reader =
        simkube::SimKubeReader::new("bad.sktrace", bad.as_slice(), false, &[]).unwrap();
    let err = reader.next_event().unwrap_err().to_string();
    assert!(
        err.starts_with(
            "bad.sktrace: events[0].applied_objs[0]: unknown field \"restartPolicx\" in Pod testing/bare-pod-1781282449 spec"
        ),
        "{err}"
    );
    let mut reader = simkube::SimKubeReader::new("bad.sktrace", bad.as_slice(), true, &[]).unwrap();
    let mut count = 0;
    while reader.next_event().unwrap().is_some() {
        count += 1;
    }
    assert_eq!((count, reader.skipped()), (3, 1));
}

/// The kubereplay capture, in timestamp order as `kubereplay replay` sorts
/// it (pkg/replay/engine.go `RunTimed`): the Deployment with the 50 %
/// PodDisruptionBudget replay adds, its scale, the Job with its duration,
/// the delete.
#[test]
fn kubereplay_capture_replays_in_timestamp_order() {
    let spec = spec("tests/fixtures/traces/replay.json", TraceFormat::KubeReplay);
    let steps = steps(&spec);
    let got: Vec<(u64, String)> = steps.iter().map(summary).collect();
    assert_eq!(
        got,
        [
            (
                0,
                "apply deployment kubereplay/deployment-0 2 + pdb kubereplay/pdb-deployment-0"
                    .to_string()
            ),
            (300_000, "scale kubereplay/deployment-0 6".to_string()),
            (600_000, "apply job kubereplay/job-0 3".to_string()),
            (
                3_000_000,
                "delete deployment kubereplay/deployment-0".to_string()
            ),
        ]
    );
    let StepAction::Apply { pdbs, .. } = &steps[0].action else {
        panic!("an apply")
    };
    assert_eq!(pdbs[0].max_unavailable, Some(IntOrPercent::Percent(50)));
    assert_eq!(
        run_time(&steps[2]),
        Some(std::time::Duration::from_secs(600))
    );
}

#[test]
fn kubereplay_bad_events_name_the_event_index() {
    let text = std::fs::read_to_string(repo("tests/fixtures/traces/replay.json")).unwrap();
    let bad = text.replacen("\"type\": \"scale\"", "\"type\": \"resize\"", 1);
    let mut reader =
        kubereplay::KubeReplayReader::new("replay.json", bad.as_bytes(), false, &[]).unwrap();
    let first = reader.next_event().unwrap();
    assert!(first.is_some());
    let err = reader.next_event().unwrap_err().to_string();
    assert_eq!(
        err,
        "replay.json: events[2]: type: unknown event type \"resize\" (types: create, scale, delete)"
    );
    let unknown = text.replacen("\"cluster\"", "\"clutser\"", 1);
    let err = kubereplay::KubeReplayReader::new("replay.json", unknown.as_bytes(), false, &[])
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("replay.json: not a kubereplay capture: unknown field `clutser`"),
        "{err}"
    );
}

#[test]
fn formats_are_guessed_from_name_and_content() {
    let cases = [
        (
            "tests/fixtures/traces/audit.jsonl",
            Some(TraceFormat::AuditLog),
        ),
        (
            "tests/fixtures/traces/replay.json",
            Some(TraceFormat::KubeReplay),
        ),
        (
            "scenarios/traces/simkube/cronjob.sktrace",
            Some(TraceFormat::SimKube),
        ),
        (
            "scenarios/traces/alibaba_openb_pod_list_default.csv",
            Some(TraceFormat::Alibaba),
        ),
        ("scenarios/quickstart.yaml", None),
    ];
    for (path, want) in cases {
        assert_eq!(guess_format(&repo(path)).unwrap(), want, "{path}");
    }
}
