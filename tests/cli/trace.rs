//! `karpsim trace inspect` on the bundled SimKube traces and the
//! hand-written fixtures (tests/fixtures/traces/README.md), and runs that
//! replay an audit log, with its errors.

use crate::util::{karpsim, karpsim_in, single_error_line, stderr, stdout};

fn inspect_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["trace", "inspect", "-o", "json", "-q"];
    all.extend_from_slice(args);
    let output = karpsim(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("one JSON document")
}

/// The DeathStarBench trace: 27 Deployments created at its first event and
/// 19 scales over 18 min 54 s; its peak is every Deployment's replicas at
/// their largest at once.
#[test]
fn inspect_a_simkube_trace() {
    let report = inspect_json(&["scenarios/traces/simkube/dsb-scaling.sktrace"]);
    assert_eq!(report["format"], "simkube");
    assert_eq!(report["objects_by_kind"]["Deployment"], 27);
    assert_eq!(report["events_by_verb"]["create"], 27);
    assert_eq!(report["events_by_verb"]["scale"], 19);
    assert_eq!(report["first_event_s"], 0.0);
    assert_eq!(report["last_event_s"], 1134.0);
    let table = stdout(&karpsim(&[
        "trace",
        "inspect",
        "scenarios/traces/simkube/dsb-scaling.sktrace",
    ]));
    assert!(
        table.starts_with("trace scenarios/traces/simkube/dsb-scaling.sktrace (simkube)\n"),
        "{table}"
    );
    assert!(table.contains("  Deployment  "), "{table}");
}

/// The audit log's format is guessed from its content; what is passed over
/// is listed by reason.
#[test]
fn inspect_an_audit_log_and_a_kubereplay_capture() {
    let report = inspect_json(&["tests/fixtures/traces/audit.jsonl"]);
    assert_eq!(report["format"], "audit-log");
    assert_eq!(report["peak_desired_pods"], 7);
    assert_eq!(report["ignored"]["not a workload: configmaps"], 1);
    assert_eq!(report["events"], 11);
    let report = inspect_json(&["tests/fixtures/traces/replay.json"]);
    assert_eq!(report["format"], "kubereplay");
    assert_eq!(report["events_by_verb"]["create"], 2);
    // Deployment 6 after its scale, then the Job's 3 pods.
    assert_eq!(report["peak_desired_pods"], 9);
}

#[test]
fn inspect_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("audit.jsonl");
    let good =
        std::fs::read_to_string(crate::util::repo().join("tests/fixtures/traces/audit.jsonl"))
            .unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[2] = "{\"kind\":\"Event\",";
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let output = karpsim_in(
        dir.path(),
        &["trace", "inspect", "audit.jsonl", "--format", "audit-log"],
    );
    let error = single_error_line(&output);
    assert!(
        error.starts_with("error: audit.jsonl:3: not an audit event: EOF while parsing"),
        "{error}"
    );
    let output = karpsim_in(
        dir.path(),
        &[
            "trace",
            "inspect",
            "audit.jsonl",
            "--format",
            "audit-log",
            "--skip-bad-rows",
            "-o",
            "json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["rows_skipped"], 1);
    let output = karpsim(&["trace", "inspect", "scenarios/quickstart.yaml"]);
    let error = single_error_line(&output);
    assert!(
        error.contains("cannot tell the format of this file; give --format"),
        "{error}"
    );
    let output = karpsim(&[
        "trace",
        "inspect",
        "scenarios/quickstart.yaml",
        "--format",
        "csv",
    ]);
    let error = single_error_line(&output);
    assert!(
        error.starts_with("error: --format \"csv\": expected one of generic"),
        "{error}"
    );
}

/// A scenario replaying the audit log runs it: one Deployment at 3 then 5
/// then 3 replicas, a StatefulSet, a DaemonSet, a bare pod and a Job with
/// two pods, all scheduled; the trace's scales all name replayed objects.
#[test]
fn a_scenario_replays_an_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::util::repo();
    std::fs::copy(
        root.join("tests/fixtures/traces/audit.jsonl"),
        dir.path().join("audit.jsonl"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("nodepools")).unwrap();
    std::fs::copy(
        root.join("scenarios/nodepools/on-demand.yaml"),
        dir.path().join("nodepools/on-demand.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("replay.yaml"),
        "name: audit-replay\nseed: 1\nduration: 1h\nregion: us-east-1\nworkloads:\n  - trace: audit.jsonl\n    format: audit-log\nvariants:\n  - name: on-demand\n    karpenter:\n      nodePools: nodepools/on-demand.yaml\n",
    )
    .unwrap();
    let output = karpsim_in(
        dir.path(),
        &["run", "replay.yaml", "--out", "out", "-o", "json", "-q"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let summaries: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let summary = &summaries["variants"][0];
    let text = summary.to_string();
    assert_eq!(summary["steps_missing_target"], 0, "{text}");
    assert_eq!(summary["pods_unschedulable"], 0, "{text}");
    // web 2, +3 at its scale to 5, db 1, log-agent (a DaemonSet: not a
    // workload pod), migrate 1, report 2, and one more per evicted pod
    // (its controller re-creates it).
    let evicted = summary["churn"]["evictions"].as_u64().unwrap();
    assert_eq!(
        summary["pods_created"],
        2 + 3 + 1 + 1 + 2 + evicted,
        "{text}"
    );
}

/// A scenario item's `excludeNamespaces` must be a list, and only object
/// formats have namespaces to exclude.
#[test]
fn exclude_namespaces_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), "time,event,kind,name\n").unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "name: s\nduration: 1h\nregion: us-east-1\nworkloads:\n  - trace: t.csv\n    format: generic\n    excludeNamespaces: [a]\nvariants:\n  - name: v\n    karpenter: {nodePools: []}\n",
    )
    .unwrap();
    let output = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out"]);
    let error = single_error_line(&output);
    assert!(error.contains("excludeNamespaces"), "{error}");
}
