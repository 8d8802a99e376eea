//! Inputs refused or read exactly since the validation round of issue 22:
//! values past the limits of one run (named in the message), `@every`
//! intervals, the exponent form of decimals, and messages that used to be
//! cut off.

use std::path::Path;

use super::*;

const REGIONS: &[(&str, &[&str])] = &[("us-east-1", &["us-east-1a", "us-east-1b"])];
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);
const VARIANTS: &str =
    "variants:\n  - name: k\n    karpenter:\n      nodePools: nodepools/default.yaml\n";

/// A scenario of `duration` with `workloads` (list items) and `extra`
/// top-level keys.
fn parse_with(duration: &str, workloads: &str, extra: &str) -> Result<Scenario, ScenarioError> {
    let text = format!("duration: {duration}\nworkloads:\n{workloads}{VARIANTS}{extra}");
    Scenario::parse(&text, Path::new(INLINE), REGIONS)
}

fn parse(workloads: &str) -> Result<Scenario, ScenarioError> {
    parse_with("1d", workloads, "")
}

/// The one-line message, without the file name.
fn error(duration: &str, workloads: &str) -> String {
    match parse_with(duration, workloads, "") {
        Ok(s) => panic!("expected an error for {workloads:?}, got {s:?}"),
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "{message}");
            message
                .strip_prefix(&format!("{INLINE}:"))
                .unwrap_or(&message)
                .to_string()
        }
    }
}

const BASE: &str = "  - manifests: workloads/base.yaml\n";

#[test]
fn values_past_one_run_are_refused_with_the_limit() {
    let cases = [
        // Accepted by the schema before, then a failed allocation of the
        // per-minute series.
        (
            "106751d",
            BASE.to_string(),
            "1:11: duration: 106751d is over the limit of 366d per run (see Limits in \
             scenarios/README.md)",
        ),
        (
            "1d",
            format!("{BASE}  - at: 1h\n    scale: {{deployment: web, replicas: 2147483647}}\n"),
            "5:40: workloads[1].scale.replicas: 2147483647 replicas is over the limit of 100000 \
             replicas per workload (see Limits in scenarios/README.md)",
        ),
        // Ran without end before.
        (
            "1d",
            "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 1000000000/s}}}}\n"
                .to_string(),
            "3:59: workloads[0].generate.pods.arrivals.poisson.rate: rate 1000000000/s is over \
             the limit of 100/s per generator (see Limits in scenarios/README.md)",
        ),
        // 50/s for a day: 4 320 000 pods expected.
        (
            "1d",
            "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 50/s}}}}\n".to_string(),
            "3:22: workloads[0].generate.pods: about 4320000 pods from this generator is over \
             the limit of 1000000 pods per run (see Limits in scenarios/README.md)",
        ),
        // A Job of 1000 pods every minute for a day: 1 440 000 pods.
        (
            "1d",
            "  - generate: {cronJob: {name: c, schedule: \"* * * * *\", completions: 1000}}\n"
                .to_string(),
            "3:25: workloads[0].generate.cronJob: about 1440000 pods from this generator is \
             over the limit of 1000000 pods per run (see Limits in scenarios/README.md)",
        ),
        // 10 000 pods every minute.
        (
            "1d",
            "  - generate: {pods: {name: b, arrivals: {bursts: {every: 1m, size: 10000}}}}\n"
                .to_string(),
            "3:22: workloads[0].generate.pods: about 14400000 pods from this generator is over \
             the limit of 1000000 pods per run (see Limits in scenarios/README.md)",
        ),
        (
            "1d",
            "  - generate: {pods: {name: b, arrivals: {bursts: {every: 1h, size: 2147483647}}}}\n"
                .to_string(),
            "3:69: workloads[0].generate.pods.arrivals.bursts.size: 2147483647 replicas is over \
             the limit of 100000 replicas per workload (see Limits in scenarios/README.md)",
        ),
        (
            "1d",
            "  - generate: {deployment: {name: w, replicas: {diurnal: {period: 1h, min: 1, max: 5, every: 500ms}}}}\n"
                .to_string(),
            "3:94: workloads[0].generate.deployment.replicas.diurnal.every: must be at least 1s, \
             found 500ms",
        ),
    ];
    for (duration, workloads, expected) in cases {
        assert_eq!(error(duration, &workloads), expected, "{workloads}");
    }
    // The largest values allowed are accepted.
    parse_with(
        "366d",
        &format!("{BASE}  - at: 1h\n    scale: {{deployment: web, replicas: 100000}}\n"),
        "",
    )
    .unwrap();
    parse("  - generate: {pods: {name: a, arrivals: {poisson: {rate: 10/s}}}}\n").unwrap();
}

/// `@every` needs a positive whole number of seconds: robfig/cron would
/// run `@every 0s` every second and round `@every 1500ms` down.
#[test]
fn every_intervals_must_be_whole_positive_seconds() {
    let cron = |schedule: &str| {
        format!("  - generate: {{cronJob: {{name: c, schedule: \"{schedule}\"}}}}\n")
    };
    for (schedule, reason) in [
        ("@every 0s", "the interval must be at least 1s"),
        ("@every 0", "the interval must be at least 1s"),
        ("@every -5s", "the interval must be positive"),
        ("@every 500ms", "the interval must be at least 1s"),
        (
            "@every 1500ms",
            "the interval must be a whole number of seconds",
        ),
        ("@every 5x", "unknown unit \"x\""),
    ] {
        let message = error("1d", &cron(schedule));
        let interval = schedule.trim_start_matches("@every ");
        assert!(
            message.starts_with(&format!(
                "3:45: workloads[0].generate.cronJob.schedule: invalid schedule: @every {interval}: {reason}"
            )),
            "{schedule}: {message}"
        );
    }
    parse(&cron("@every 90m")).unwrap();
    parse(&cron("@every 1s")).unwrap();
}

/// A reversed range shows the whole list (it was cut off after `found [`).
#[test]
fn reversed_uniform_range_shows_the_whole_value() {
    let message = error(
        "1d",
        "  - generate: {pods: {name: a, arrivals: {poisson: {rate: 1/h}}, requests: {memory: {uniform: [2Gi, 1Gi]}}}}\n",
    );
    assert!(
        message.ends_with(
            "workloads[0].generate.pods.requests.memory.uniform: expected [low, high] with low ≤ \
             high, found [2Gi, 1Gi]"
        ),
        "{message}"
    );
}

/// Wherever a decimal is read, its exponent form is read too, exactly.
#[test]
fn exponent_floats_are_read_where_decimals_are() {
    let trace = "../../../scenarios/traces/alibaba_openb_pod_list_default.csv";
    let scenario = parse_with(
        "1d",
        &format!(
            "  - trace: {trace}\n    format: alibaba\n    timeScale: 1e-3\n    sample: 5e-1\n  - generate: {{pods: {{name: a, arrivals: {{poisson: {{rate: 1e-3/s}}}}, requests: {{cpu: 1e-1}}}}}}\n"
        ),
        "interruptions:\n  events: [{at: 1h, fraction: 1e-3}, {at: 2h, fraction: 2.5E-1}]\n",
    )
    .unwrap();
    let WorkloadAction::Trace(spec) = &scenario.workloads[0].action else {
        panic!("expected a trace");
    };
    assert_eq!((spec.time_scale, spec.sample), (0.001, 0.5));
    let WorkloadAction::Generate {
        generator: generate::GeneratorSpec::Pods(pods),
        ..
    } = &scenario.workloads[1].action
    else {
        panic!("expected a pods generator");
    };
    assert!(matches!(pods.arrivals, generate::Arrivals::Poisson(r) if r.per_hour == 3.6));
    assert_eq!(
        pods.shape.requests[0].1,
        generate::AmountDist::Fixed(100),
        "1e-1 cores is 100m"
    );
    let storms = &scenario.spot.interruptions.as_ref().unwrap().storms;
    let fractions: Vec<u32> = storms.iter().map(|s| s.fraction.millionths()).collect();
    assert_eq!(fractions, vec![1_000, 250_000]);
}

#[test]
fn time_scale_is_bounded() {
    let trace = "../../../scenarios/traces/alibaba_openb_pod_list_default.csv";
    for scale in ["1e9", "0.0000001", "0"] {
        let message = error(
            "1d",
            &format!("  - trace: {trace}\n    format: alibaba\n    timeScale: {scale}\n"),
        );
        assert!(
            message.contains(
                "workloads[0].timeScale: must be from 0.000001 to 1000000 (see Limits in \
                 scenarios/README.md)"
            ),
            "{scale}: {message}"
        );
    }
}

/// A manifest asking for more replicas than one workload may have is
/// refused when the manifests are read, naming the file and object.
#[test]
fn manifest_replicas_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("big.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: shop}\nspec:\n  replicas: 2147483647\n  selector: {matchLabels: {app: big}}\n  template:\n    metadata: {labels: {app: big}}\n    spec:\n      containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n",
    )
    .unwrap();
    let pools = std::path::absolute(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/scenarios/nodepools/default.yaml"
    ))
    .unwrap();
    let text = format!(
        "duration: 1h\nworkloads:\n  - manifests: big.yaml\nvariants:\n  - name: k\n    karpenter: {{nodePools: {:?}}}\n",
        pools.display().to_string()
    );
    let scenario = Scenario::parse(&text, &dir.path().join("s.yaml"), &BundledRegions).unwrap();
    let err = prepare(&scenario, None).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "big.yaml: Deployment shop/big: replicas 2147483647 is over the limit of 100000 \
             replicas per workload (see Limits in scenarios/README.md)"
        ),
        "{err}"
    );
}
