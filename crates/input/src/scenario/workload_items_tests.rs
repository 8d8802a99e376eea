//! Reading `generate` and `trace` workload items: what they parse into and
//! the one-line errors for bad ones.

use std::path::Path;

use super::generate::{Arrivals, DurationDist, GeneratorSpec, ReplicaSchedule};
use super::trace::TraceFormat;
use super::*;
use crate::kube::resources::ResourceKind;
use crate::sim::{SimDuration, SimTime};

const REGIONS: &[(&str, &[&str])] = &[("us-east-1", &["us-east-1a", "us-east-1b"])];
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);
const TRACE: &str = "../../../scenarios/traces/alibaba_openb_pod_list_default.csv";

fn parse(workloads: &str) -> Result<Scenario, ScenarioError> {
    let text = format!(
        "duration: 1d\nworkloads:\n{workloads}variants:\n  - name: k\n    karpenter:\n      nodePools: nodepools/default.yaml\n"
    );
    Scenario::parse(&text, Path::new(INLINE), REGIONS)
}

fn error(workloads: &str) -> String {
    match parse(workloads) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e
            .to_string()
            .trim_start_matches(&format!("{INLINE}:"))
            .to_string(),
    }
}

#[test]
fn generate_items_parse_into_generators() {
    let scenario = parse(
        "  - at: 1h\n    generate:\n      pods:\n        name: batch\n        until: 20h\n        arrivals: {diurnal: {period: 24h, peak: 60/h, trough: 5/h, peakAt: 14h}}\n        duration: {lognormal: {median: 5m, p90: 30m}}\n        requests: {cpu: [250m, 500m], memory: {uniform: [1Gi, 2Gi]}, nvidia.com/gpu: 1}\n        tolerations: [\"nvidia.com/gpu:NoSchedule\"]\n        job: {parallelism: 2}\n  - at: 1h\n    generate:\n      deployment:\n        name: web\n        replicas: {hpa: {load: {steps: [{at: 0, load: 100}, {at: 2h, load: 900}]}, targetPerReplica: 100, max: 20}}\n  - at: 2h\n    generate:\n      cronJob: {name: nightly, schedule: \"0 2 * * *\", completions: 3, duration: {fixed: 10m}}\n",
    )
    .unwrap();
    let WorkloadAction::Generate {
        generator: GeneratorSpec::Pods(pods),
        until,
    } = &scenario.workloads[0].action
    else {
        panic!("expected a pods generator");
    };
    assert_eq!(*until, SimTime::ZERO + SimDuration::from_hours(20));
    assert!(matches!(pods.arrivals, Arrivals::Diurnal(c) if c.peak == 60.0 && c.trough == 5.0));
    assert!(matches!(
        pods.duration,
        Some(DurationDist::LogNormal { .. })
    ));
    assert_eq!(pods.shape.requests.len(), 3);
    assert_eq!(pods.shape.requests[2].0, ResourceKind::NvidiaGpu);
    assert_eq!(
        pods.job.map(|j| (j.parallelism, j.completions)),
        Some((2, 2))
    );
    let WorkloadAction::Generate {
        generator: GeneratorSpec::Deployment(web),
        until,
    } = &scenario.workloads[1].action
    else {
        panic!("expected a deployment generator");
    };
    assert_eq!(
        *until,
        SimTime::ZERO + SimDuration::from_hours(24),
        "until defaults to the end"
    );
    assert!(matches!(&web.replicas, ReplicaSchedule::Hpa(h) if h.min == 1 && h.max == 20));
    assert!(
        matches!(&scenario.workloads[2].action, WorkloadAction::Generate { generator: GeneratorSpec::CronJob(c), .. } if c.job.completions == 3)
    );
}

#[test]
fn trace_items_parse_with_their_options() {
    let err = parse(&format!(
        "  - at: 10m\n    trace: {TRACE}\n    format: alibaba\n    start: 12810000\n    end: 12h\n    timeScale: 0.25\n    sample: 0.5\n"
    ))
    .unwrap_err();
    // `end` (12 h = 43 200 s) is before `start`.
    assert!(
        err.to_string()
            .contains("workloads[0].end: end must be after start"),
        "{err}"
    );
    let mut ok = parse(&format!(
        "  - at: 10m\n    trace: {TRACE}\n    format: alibaba\n    start: 1d\n    timeScale: 0.25\n    sample: 0.5\n"
    ))
    .unwrap();
    ok.set_skip_bad_rows(true);
    let WorkloadAction::Trace(spec) = &ok.workloads[0].action else {
        panic!("expected a trace");
    };
    assert_eq!(spec.format, TraceFormat::Alibaba);
    assert_eq!(
        (spec.start, spec.end, spec.time_scale, spec.sample),
        (86_400.0, None, 0.25, 0.5)
    );
    assert_eq!(spec.at, SimTime::ZERO + SimDuration::from_mins(10));
    assert!(spec.skip_bad_rows);
}

/// The recording formats read `excludeNamespaces`: the default is
/// kubereplay's three system namespaces, a list replaces it, and a
/// namespace that is not a DNS label is an error naming the item.
#[test]
fn exclude_namespaces_default_and_list() {
    const SIMKUBE: &str = "../../../scenarios/traces/simkube/dsb-scaling.sktrace";
    let excluded = |text: &str| {
        let scenario = parse(text).unwrap();
        let WorkloadAction::Trace(spec) = &scenario.workloads[0].action else {
            panic!("expected a trace");
        };
        spec.exclude_namespaces.clone()
    };
    assert_eq!(
        excluded(&format!("  - trace: {SIMKUBE}\n    format: simkube\n")),
        ["kube-system", "kube-public", "kube-node-lease"]
    );
    assert_eq!(
        excluded(&format!(
            "  - trace: {SIMKUBE}\n    format: simkube\n    excludeNamespaces: [monitoring]\n"
        )),
        ["monitoring"]
    );
    assert!(
        excluded(&format!(
            "  - trace: {SIMKUBE}\n    format: simkube\n    excludeNamespaces: []\n"
        ))
        .is_empty()
    );
    let err = parse(&format!(
        "  - trace: {SIMKUBE}\n    format: simkube\n    excludeNamespaces: [Bad_NS]\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(err.contains("workloads[0].excludeNamespaces[0]"), "{err}");
}

#[test]
fn bad_workload_items_give_one_line_errors() {
    let cases = [
        (
            "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 30}}}}\n",
            "workloads[0].generate.pods.arrivals.poisson.rate: invalid rate \"30\"",
        ),
        (
            "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 1/h}}}}\n  - generate: {pods: {name: a, arrivals: {poisson: {rate: 1/h}}}}\n",
            "generator name \"a\" is already used",
        ),
        (
            "  - generate: {cronJob: {name: c, schedule: \"61 * * * *\"}}\n",
            "workloads[0].generate.cronJob.schedule: invalid schedule",
        ),
        (
            "  - at: 2h\n    generate: {pods: {name: a, until: 1h, arrivals: {poisson: {rate: 1/h}}}}\n",
            "until (1h) must be after the item's at",
        ),
        (
            "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 1/h}}, duration: {lognormal: {median: 5m, p90: 1m}}}}\n",
            "p90 must be at least the median",
        ),
        (
            &format!("  - trace: {TRACE}\n    format: parquet\n"),
            "workloads[0].format: expected generic, alibaba, audit-log, simkube or kubereplay",
        ),
        (
            &format!("  - trace: {TRACE}\n    format: generic\n    sample: 0\n"),
            "workloads[0].sample: must be greater than 0 and at most 1",
        ),
        (
            "  - generate: {deployment: {name: w, replicas: {steps: [{at: 1h, replicas: 2}, {at: 1h, replicas: 3}]}}}\n",
            "entries must be in increasing time order",
        ),
    ];
    for (workloads, expected) in cases {
        let message = error(workloads);
        assert!(message.contains(expected), "{workloads:?}: {message}");
        assert!(!message.contains('\n'));
    }
}
