//! The node lifecycle keys: `nodeLaunchLatency.initialization` and a
//! Karpenter variant's `startupFailures` (the NodeClaim lifecycle's
//! registration and liveness, core pkg/controllers/nodeclaim/lifecycle),
//! read, checked against the variant's NodePools and handed to the run.

use std::path::Path;

use super::*;
use crate::sim::SimDuration;
use crate::sim::engine::{DEFAULT_NODE_INITIALIZATION, StartupFailureKind};

const REGIONS: &[(&str, &[&str])] = &[("us-east-1", &["us-east-1a", "us-east-1b"])];
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, Path::new(INLINE), REGIONS)
}

/// A scenario over the fixture NodePool `default` whose Karpenter variant
/// has `karpenter_extra` under its `karpenter:` block.
fn with_karpenter(karpenter_extra: &str) -> String {
    format!(
        "duration: 1h\nworkloads: [{{manifests: workloads/base.yaml}}]\nvariants:\n  - name: k\n    karpenter:\n      nodePools: nodepools/default.yaml\n{karpenter_extra}"
    )
}

fn error_of(result: Result<impl std::fmt::Debug, impl std::fmt::Display>) -> String {
    let e = result.expect_err("must fail").to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    // The scenario's file is shown as given or relative to the working
    // directory; what follows its name is the same either way.
    let (_, after) = e
        .split_once("inline.yaml:")
        .expect("names the scenario file");
    after.to_string()
}

/// The initialization part of the launch latency: 10 s unless written,
/// with either latency form.
#[test]
fn initialization_defaults_and_is_read() {
    let s = parse(&with_karpenter("")).unwrap();
    assert_eq!(s.node_initialization, DEFAULT_NODE_INITIALIZATION);
    assert_eq!(DEFAULT_NODE_INITIALIZATION, SimDuration::from_secs(10));
    let text = with_karpenter("").replace(
        "duration: 1h\n",
        "duration: 1h\nnodeLaunchLatency: {median: 40s, p90: 70s, initialization: 15s}\n",
    );
    let s = parse(&text).unwrap();
    assert_eq!(s.node_initialization, SimDuration::from_secs(15));
    let text = with_karpenter("").replace(
        "duration: 1h\n",
        "duration: 1h\nnodeLaunchLatency: {fixed: 30s, initialization: 0s}\n",
    );
    let s = parse(&text).unwrap();
    assert_eq!(s.node_initialization, SimDuration::ZERO);
    let text = with_karpenter("").replace(
        "duration: 1h\n",
        "duration: 1h\nnodeLaunchLatency: {fixed: 30s, initialization: soon}\n",
    );
    let e = error_of(parse(&text));
    assert!(
        e.starts_with("2:49: nodeLaunchLatency.initialization: invalid duration \"soon\""),
        "{e}"
    );
}

/// `startupFailures`: each entry's window, state and NodePool (optional,
/// every NodePool when left out); wrong keys and windows are errors with
/// their place.
#[test]
fn startup_failures_are_read() {
    let s = parse(&with_karpenter(
        "      startupFailures:\n        - {nodePool: default, from: 1h, until: 2h, node: Unregistered}\n        - {node: NotReady}\n",
    ))
    .unwrap();
    let Provisioner::Karpenter(config) = &s.variants[0].provisioner else {
        panic!("karpenter variant");
    };
    let [first, second] = config.startup_failures.as_slice() else {
        panic!("{:?}", config.startup_failures);
    };
    assert_eq!(
        first
            .node_pool
            .as_ref()
            .map(|w| (w.name.as_str(), w.field.as_str())),
        Some((
            "default",
            "variants[0].karpenter.startupFailures[0].nodePool"
        ))
    );
    assert_eq!(
        first.failure.from,
        SimTime::ZERO + SimDuration::from_hours(1)
    );
    assert_eq!(
        first.failure.until,
        Some(SimTime::ZERO + SimDuration::from_hours(2))
    );
    assert_eq!(first.failure.kind, StartupFailureKind::Unregistered);
    assert_eq!(second.node_pool, None);
    assert_eq!(
        (second.failure.from, second.failure.until),
        (SimTime::ZERO, None)
    );
    assert_eq!(second.failure.kind, StartupFailureKind::NotReady);

    let e = error_of(parse(&with_karpenter(
        "      startupFailures: [{node: NotReady, nodepool: default}]\n",
    )));
    assert!(
        e.contains("variants[0].karpenter.startupFailures[0]: unknown key \"nodepool\" (valid keys: nodePool, from, until, node)"),
        "{e}"
    );
    let e = error_of(parse(&with_karpenter(
        "      startupFailures: [{from: 2h, until: 1h, node: NotReady}]\n",
    )));
    assert!(
        e.contains("startupFailures[0].until: until (1h) must be after from (2h)"),
        "{e}"
    );
    let e = error_of(parse(&with_karpenter(
        "      startupFailures: [{node: Broken}]\n",
    )));
    assert!(e.contains("startupFailures[0].node"), "{e}");
    let e = error_of(parse(&with_karpenter(
        "      startupFailures: {node: NotReady}\n",
    )));
    assert!(
        e.contains("startupFailures: expected a list of startup failures"),
        "{e}"
    );
}

/// A `nodePool` the variant's NodePools do not define is an error naming
/// its line and the NodePools there are; a known one reaches the run with
/// the scenario's initialization delay.
#[test]
fn startup_failures_name_nodepools_of_the_variant() {
    let s = parse(&with_karpenter(
        "      startupFailures: [{nodePool: gpu, node: Unregistered}]\n",
    ))
    .unwrap();
    let e = error_of(prepare(&s, None));
    assert!(
        e.starts_with("7:36: variants[0].karpenter.startupFailures[0].nodePool: no NodePool \"gpu\" in the variant's NodePools (NodePools: default)"),
        "{e}"
    );
    let s = parse(&with_karpenter(
        "      startupFailures: [{nodePool: default, from: 30m, node: Unregistered}]\n",
    ))
    .unwrap();
    let prepared = prepare(&s, None).unwrap();
    let run = &prepared.runs[0];
    assert_eq!(run.node_initialization, DEFAULT_NODE_INITIALIZATION);
    assert_eq!(run.startup_failures.len(), 1);
    assert_eq!(run.startup_failures[0].nodepool.as_deref(), Some("default"));
    assert_eq!(
        run.startup_failures[0].failure.from,
        SimTime::ZERO + SimDuration::from_mins(30)
    );
}
